//! The engine's model of the page's code: the HTML parser and preload scanner, script
//! execution, style sheets' subresources, and the milestones (rules and their Chromium
//! sources in [`super::super::chromium`]).

use super::*;

impl Engine<'_> {
    /// References found in a document: the preload scanner requests what it can reach at
    /// once; each becomes a step of the document's parser (`<base>` changes the base).
    pub(super) fn on_html_refs(&mut self, parent: ReqId, refs: Vec<HtmlRef>, at: Instant) {
        let mut base = self
            .base_of(parent)
            .unwrap_or_else(|| self.reqs[&parent].url.clone());
        for r in refs {
            let Some(kind) = r.kind else {
                if r.tag == "body" {
                    let p = self.parsers.entry(parent).or_default();
                    p.steps.push((r.end, Step::Body));
                } else if let Some(b) = base.join(&r.url) {
                    base = b.clone();
                    self.bases.insert(parent, b);
                }
                continue;
            };
            let Some(u) = base.join(&r.url) else { continue };
            let init = if r.tag == "style" {
                Initiator::Css {
                    parent,
                    offset: r.end,
                }
            } else {
                Initiator::Parser {
                    parent,
                    offset: r.end,
                    tag: r.tag,
                }
            };
            // Only the parser creates frames: the preload scanner does not fetch them.
            let parser_only = self.chromium && matches!(r.tag, "iframe" | "frame");
            let id = match self.by_url.get(&u.to_string()).copied() {
                // Found again (e.g. hinted or pushed first): the parser still runs it.
                Some(existing) => Some(existing),
                None if parser_only => None,
                None => self.discover(u.clone(), kind, init, r.blocking, at),
            };
            let pending = if id.is_none() {
                self.pending_refs.push(Some(PendingRef {
                    url: u,
                    kind,
                    tag: r.tag,
                    end: r.end,
                }));
                Some(self.pending_refs.len() - 1)
            } else {
                None
            };
            if kind == ObjectType::Image {
                *self.doc_images.entry(parent).or_default() += 1;
            }
            let step = Step::Ref {
                id,
                pending,
                blocking: r.blocking,
            };
            self.parsers
                .entry(parent)
                .or_default()
                .steps
                .push((r.end, step));
        }
    }

    /// Starts running a script: it takes its execution cost, then `Timer::Ran`.
    pub(super) fn run_script(&mut self, script: ReqId) {
        if !self.running.insert(script) {
            return;
        }
        let r = &self.reqs[&script];
        let recorded = r
            .archive_id
            .zip(self.archive)
            .and_then(|(a, ar)| ar.objects[a].exec_ms);
        let cost = if self.chromium {
            chromium::exec_cost(recorded, r.decoded_bytes, self.cfg.script_ms_per_kb)
        } else {
            Duration::ZERO
        };
        let when = self.now + cost;
        self.push_timer(when, Timer::Ran { script });
    }

    /// A timer fired: a script's computed child is found, a script's run ends, or a
    /// pool's backup connect job is due (`engine/pools.rs`).
    pub(super) fn on_timer(&mut self, t: Timer, at: Instant) {
        match t {
            Timer::Computed {
                child,
                parent,
                after_ms,
            } => {
                self.discover_archive_child(child, Initiator::Script { parent, after_ms }, at);
            }
            Timer::Ran { script } => {
                // A parser waiting on it moves on in `advance`.
                self.running.remove(&script);
                let r = self.reqs.get_mut(&script).expect("req");
                r.executed = Some(at);
                if let Some(a) = r.archive_id {
                    self.schedule_computed(a, script, at);
                }
            }
            Timer::Backup { pool } => self.backup_job(&pool),
        }
    }

    /// Moves every document's parser as far as it can go.
    pub(super) fn advance_parsers(&mut self) {
        let docs: Vec<ReqId> = self.parsers.keys().copied().collect();
        for d in docs {
            self.advance(d);
        }
    }

    pub(super) fn advance(&mut self, doc: ReqId) {
        loop {
            let Some(p) = self.parsers.get(&doc) else {
                return;
            };
            if p.finished {
                return;
            }
            if p.pos >= p.steps.len() {
                if p.complete {
                    self.parsers.get_mut(&doc).expect("parser").finished = true;
                    // A document without a `<body>` tag has one implied by its end.
                    self.body_reached(doc);
                }
                return;
            }
            let (off, step) = p.steps[p.pos].clone();
            if off > p.arrived && !p.complete {
                return;
            }
            if let Step::Ref {
                id,
                pending,
                blocking,
            } = step
            {
                let id = match (id, pending) {
                    (Some(id), _) => Some(id),
                    (None, Some(i)) => self.parser_creates(doc, i),
                    (None, None) => None,
                };
                if let (Blocking::SyncScript, Some(id)) = (blocking, id) {
                    if !self.script_passed(doc, id) {
                        return;
                    }
                }
            } else {
                self.body_reached(doc);
            }
            self.parsers.get_mut(&doc).expect("parser").pos += 1;
        }
    }

    /// Whether the parser of `doc` can pass blocking script `id`: it ran (or failed).
    /// Otherwise it starts running once it has arrived and the style sheets before it
    /// have loaded.
    fn script_passed(&mut self, doc: ReqId, id: ReqId) -> bool {
        let r = &self.reqs[&id];
        if r.executed.is_some() || (r.done() && r.failed()) {
            return true;
        }
        let p = &self.parsers[&doc];
        let ready = r.done()
            && !self.running.contains(&id)
            && p.sheets_before(p.pos).iter().all(|s| self.sheet_ready(*s));
        if ready {
            self.run_script(id);
        }
        false
    }

    /// The main frame's parser has reached `<body>`: Blink leaves tight mode, and style
    /// recalc requests the images and fonts the style sheets use.
    fn body_reached(&mut self, doc: ReqId) {
        if doc == self.root && !self.blink.loosened {
            self.blink.loosened = true;
            self.release_style_refs();
        }
    }

    /// The parser reaches a reference the preload scanner left (a frame): it is
    /// requested now.
    pub(super) fn parser_creates(&mut self, doc: ReqId, i: usize) -> Option<ReqId> {
        let pr = self.pending_refs.get_mut(i)?.take()?;
        let key = pr.url.to_string();
        let init = Initiator::Parser {
            parent: doc,
            offset: pr.end,
            tag: pr.tag,
        };
        let id = self
            .discover(pr.url, pr.kind, init, Blocking::None, self.now)
            .or_else(|| self.by_url.get(&key).copied());
        let p = self.parsers.get_mut(&doc).expect("parser");
        if let Some((_, Step::Ref { id: slot, .. })) = p.steps.get_mut(p.pos) {
            *slot = id;
        }
        id
    }

    /// A style sheet has loaded with everything it imports.
    pub(super) fn sheet_ready(&self, id: ReqId) -> bool {
        self.reqs[&id].done()
            && self.kids.get(&id).is_none_or(|k| {
                k.iter()
                    .all(|c| self.reqs[c].kind != ObjectType::Stylesheet || self.sheet_ready(*c))
            })
    }

    /// `<body>` is in: style recalc requests the images and fonts style sheets use.
    pub(super) fn release_style_refs(&mut self) {
        for s in std::mem::take(&mut self.style_refs) {
            let init = Initiator::Css {
                parent: s.parent,
                offset: s.offset,
            };
            self.discover(s.url, s.kind, init, Blocking::None, self.now);
        }
    }

    /// `DOMContentLoaded`: the root's parser is done and its defer scripts have run, in
    /// order. `load`: after that, once nothing that delays it is loading or running.
    pub(super) fn check_milestones(&mut self) {
        if self.dcl.is_none() {
            match self.parsers.get(&self.root) {
                Some(p) if p.finished => {
                    let mut all_ran = true;
                    for d in p.defer_scripts() {
                        let r = &self.reqs[&d];
                        if r.executed.is_some() || (r.done() && r.failed()) {
                            continue;
                        }
                        all_ran = false;
                        if r.done() {
                            self.run_script(d);
                        }
                        break;
                    }
                    if all_ran {
                        self.dcl = Some(self.now);
                    }
                }
                Some(_) => {}
                None => {
                    // Not HTML (or it failed): nothing to parse.
                    if let Some(end) = self.reqs[&self.root].end {
                        self.dcl = Some(end);
                    }
                }
            }
        }
        let Some(dcl) = self.dcl else { return };
        if self.onload.is_some() || !self.running.is_empty() {
            return;
        }
        let busy = self.reqs.values().any(|r| !r.done() && r.delays_load)
            || self.parsers.values().any(|p| !p.finished);
        if busy {
            return;
        }
        let last = self
            .reqs
            .values()
            .filter(|r| r.delays_load)
            .flat_map(|r| [r.end, r.executed])
            .flatten()
            .max()
            .unwrap_or(dcl);
        self.onload = Some(last.max(dcl));
    }
}
