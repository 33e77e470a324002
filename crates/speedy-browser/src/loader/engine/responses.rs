//! Responses in the engine: a head chooses how the body is examined (HTML scanner,
//! style sheet, the archive's offsets) and carries the root's hints; body pieces feed
//! the scanner; the end finishes parsing, runs scripts, schedules the archive's
//! computed children and follows redirects.

use super::*;

impl Engine<'_> {
    /// A response head: records it, chooses how the body is examined, and requests the
    /// root's `X-Subresources` hints.
    pub(super) fn on_head(
        &mut self,
        id: ReqId,
        first_byte: Instant,
        status: u16,
        headers: Vec<(String, String)>,
        header_bytes: i64,
    ) {
        let keep = self.cfg.keep_bodies;
        let Some(r) = self.reqs.get_mut(&id) else {
            return;
        };
        if r.done() {
            return;
        }
        r.first_byte = Some(first_byte);
        r.status = status;
        r.resp_headers = headers;
        r.resp_header_bytes = header_bytes;
        if keep {
            r.body = Some(BytesMut::new());
        }
        let ct = r.content_type().unwrap_or("").to_ascii_lowercase();
        let enc = r.header("content-encoding").unwrap_or("").to_string();
        let ok = (200..300).contains(&status);
        let html = ct.contains("html") || (ct.is_empty() && r.kind == ObjectType::Document);
        let css = ct.contains("css") || (ct.is_empty() && r.kind == ObjectType::Stylesheet);
        let decoder = Decoder::for_encoding(&enc);
        let is_html = ok && html && decoder.is_some();
        r.parse = match (ok, html, css, decoder) {
            (true, true, _, Some(d)) => Parse::Html(Box::default(), d),
            (true, false, true, Some(d)) => Parse::Css(Vec::new(), d),
            (true, _, _, _) => {
                // Not parseable here: the archive's offsets stand in for a parser.
                let mut offs: Vec<(usize, usize)> = Vec::new();
                if let (Some(a), Some(ar)) = (r.archive_id, self.archive) {
                    for &ch in self.children.get(&a).map(Vec::as_slice).unwrap_or(&[]) {
                        if let Discovery::Parsed { offset, .. } = ar.objects[ch].discovery {
                            offs.push((offset, ch));
                        }
                    }
                }
                offs.sort();
                if offs.is_empty() {
                    Parse::None
                } else {
                    Parse::Offsets(offs, 0)
                }
            }
            _ => Parse::None,
        };
        if is_html {
            self.parsers.entry(id).or_default();
        }
        if self.cfg.hint && id == self.root {
            let hinted: Vec<(String, Option<String>)> = r
                .resp_headers
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case("x-subresources"))
                .flat_map(|(_, v)| parse_hint(v))
                .collect();
            let base = r.url.clone();
            for (h, ty) in hinted {
                if let Some(u) = base.join(&h) {
                    let kind = ObjectType::guess(ty.as_deref().unwrap_or(""), &u.to_string());
                    self.discover(
                        u,
                        kind,
                        Initiator::Hint { parent: id },
                        Blocking::None,
                        first_byte,
                    );
                }
            }
        }
    }

    /// A piece of a body: counted, kept if asked, and fed to its scanner (HTML, style
    /// sheet, or the archive's offsets).
    pub(super) fn on_data(&mut self, id: ReqId, at: Instant, data: Bytes) {
        let Some(r) = self.reqs.get_mut(&id) else {
            return;
        };
        if r.done() {
            return;
        }
        r.body_bytes += data.len() as u64;
        if let Some(b) = &mut r.body {
            b.extend_from_slice(&data);
        }
        let mut found: Vec<HtmlRef> = Vec::new();
        let mut offsets: Vec<(usize, usize)> = Vec::new();
        let mut html = false;
        match &mut r.parse {
            Parse::None => r.decoded_bytes += data.len() as u64,
            Parse::Html(scanner, dec) => {
                let plain = match dec {
                    Some(d) => Bytes::from(d.push(&data)),
                    None => data,
                };
                r.decoded_bytes += plain.len() as u64;
                found = scanner.feed(&plain);
                html = true;
            }
            Parse::Css(buf, dec) => {
                match dec {
                    Some(d) => buf.extend_from_slice(&d.push(&data)),
                    None => buf.extend_from_slice(&data),
                }
                r.decoded_bytes = buf.len() as u64;
                if buf.len() > MAX_CSS_BYTES {
                    // Past any real style sheet: stop holding it (its references are
                    // not looked for), keep counting it.
                    r.parse = Parse::None;
                }
            }
            Parse::Offsets(list, next) => {
                r.decoded_bytes += data.len() as u64;
                while *next < list.len() && list[*next].0 <= r.body_bytes as usize {
                    offsets.push(list[*next]);
                    *next += 1;
                }
            }
        }
        let decoded = r.decoded_bytes as usize;
        if !found.is_empty() {
            self.on_html_refs(id, found, at);
        }
        if html {
            self.parsers.entry(id).or_default().arrived = decoded;
        }
        for (offset, child) in offsets {
            self.discover_archive_child(child, Initiator::ArchiveOffset { parent: id, offset }, at);
        }
    }

    /// A response is complete: parsing finishes, a script runs, the archive's children
    /// are scheduled or fall back, a redirect is followed.
    pub(super) fn on_end(&mut self, id: ReqId, at: Instant) {
        let Some(r) = self.reqs.get_mut(&id) else {
            return;
        };
        if r.done() {
            return;
        }
        r.end = Some(at);
        self.outstanding -= 1;
        if let Some(c) = r.conn {
            let c = &mut self.conns[c as usize];
            c.inflight = c.inflight.saturating_sub(1);
        }
        self.blink.finish(id);
        self.net.finish(id);
        let r = self.reqs.get_mut(&id).expect("req");
        let parse = std::mem::replace(&mut r.parse, Parse::None);
        let (status, base, archive_id, kind) = (r.status, r.url.clone(), r.archive_id, r.kind);
        let decoded = r.decoded_bytes as usize;
        let location = r.header("location").map(str::to_string);
        let main_frame = r.main_frame;
        match parse {
            Parse::Html(mut scanner, mut dec) => {
                let mut refs = Vec::new();
                if let Some(d) = &mut dec {
                    let rest = d.push(&[]);
                    refs.extend(scanner.feed(&rest));
                }
                refs.extend(scanner.finish());
                if !refs.is_empty() {
                    self.on_html_refs(id, refs, at);
                }
                let p = self.parsers.entry(id).or_default();
                p.arrived = decoded.max(p.arrived);
                p.complete = true;
            }
            Parse::Css(buf, _) => {
                for c in scan_css(&buf) {
                    let Some(u) = base.join(&c.url) else { continue };
                    let wait = self.chromium
                        && main_frame
                        && !self.blink.loosened // `<body>` not yet reached
                        && c.kind != ObjectType::Stylesheet;
                    if wait {
                        self.style_refs.push(StyleRef {
                            url: u,
                            kind: c.kind,
                            parent: id,
                            offset: c.end,
                        });
                        continue;
                    }
                    let init = Initiator::Css {
                        parent: id,
                        offset: c.end,
                    };
                    self.discover(u, c.kind, init, Blocking::None, at);
                }
            }
            Parse::Offsets(list, next) => {
                for &(offset, child) in &list[next..] {
                    let init = Initiator::ArchiveOffset { parent: id, offset };
                    self.discover_archive_child(child, init, at);
                }
            }
            Parse::None => {}
        }
        if (200..300).contains(&status) {
            if kind == ObjectType::Script {
                // A script the parser does not run (async, inserted, pushed) runs now.
                let parser_runs = self.parsers.values().any(|p| p.runs_script(id));
                if !parser_runs {
                    self.run_script(id);
                }
            } else if let Some(a) = archive_id {
                self.schedule_computed(a, id, at);
            }
            self.archive_fallback(archive_id, id, at);
        } else if (300..400).contains(&status) {
            if let Some(u) = location.and_then(|l| base.join(&l)) {
                let init = Initiator::Redirect { parent: id };
                self.discover(u, kind, init, Blocking::None, at);
            }
        }
    }
}
