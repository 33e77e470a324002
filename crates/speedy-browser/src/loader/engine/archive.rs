//! The archive's graph in the engine: which archive objects belong to the page, the
//! children its code requests after a delay (`Discovery::Computed`), and the parsed
//! children the parser missed, fetched at their parent's end (the archive fallback).

use super::*;

impl Engine<'_> {
    /// Indexes the archive's page whose root is `root` (or every object, when no page
    /// has that root): URL → object, and each object's children.
    pub(super) fn index_archive(&mut self, root: &Url) {
        let Some(a) = self.archive else { return };
        let key = root.to_string();
        let page = a.pages.iter().find(|p| {
            a.objects
                .get(p.root)
                .and_then(|o| normalize(&o.url))
                .as_deref()
                == Some(key.as_str())
        });
        let objects: Vec<usize> = match page {
            Some(p) => p.objects.clone(),
            None => (0..a.objects.len()).collect(),
        };
        for &id in &objects {
            let o = &a.objects[id];
            if let Some(k) = normalize(&o.url) {
                self.index.entry(k).or_insert(id);
            }
            if let Some(p) = o.discovery.parent() {
                self.children.entry(p).or_default().push(id);
            }
        }
        self.page_objects = if page.is_some() { objects } else { Vec::new() };
    }

    /// Discovers archive object `child` (by its URL and type), found by `init`.
    pub(super) fn discover_archive_child(&mut self, child: usize, init: Initiator, at: Instant) {
        let Some(ar) = self.archive else { return };
        let o = &ar.objects[child];
        if let Some(u) = Url::parse(&o.url) {
            self.discover(u, o.kind, init, Blocking::None, at);
        }
    }

    /// The archive's children of `parent` that its code requests after a delay (for a
    /// script: from when it ran; otherwise from its end).
    pub(super) fn schedule_computed(&mut self, archive_id: usize, parent: ReqId, from: Instant) {
        let Some(ar) = self.archive else { return };
        for ch in self.children.get(&archive_id).cloned().unwrap_or_default() {
            if let Discovery::Computed { after_ms, .. } = ar.objects[ch].discovery {
                let when = from + Duration::from_millis(after_ms as u64);
                self.push_timer(
                    when,
                    Timer::Computed {
                        child: ch,
                        parent,
                        after_ms,
                    },
                );
            }
        }
    }

    /// Archive children a parser should have found and did not: fetched at the parent's
    /// end (counted as `missed_by_parser`).
    pub(super) fn archive_fallback(
        &mut self,
        archive_id: Option<usize>,
        parent: ReqId,
        at: Instant,
    ) {
        let (Some(a), Some(ar)) = (archive_id, self.archive) else {
            return;
        };
        if !self.cfg.archive_fallback {
            return;
        }
        for ch in self.children.get(&a).cloned().unwrap_or_default() {
            if !matches!(ar.objects[ch].discovery, Discovery::Parsed { .. })
                || self.discovered_archive.contains(&ch)
            {
                continue;
            }
            // A reference held for `<body>` or for the parser is found, not missed.
            if let Some(k) = normalize(&ar.objects[ch].url) {
                let held = self.style_refs.iter().any(|s| s.url.to_string() == k)
                    || self
                        .pending_refs
                        .iter()
                        .flatten()
                        .any(|p| p.url.to_string() == k);
                if held {
                    continue;
                }
                if !self.by_url.contains_key(&k) {
                    self.missed_by_parser.push(k);
                }
            }
            self.discover_archive_child(ch, Initiator::ArchiveFallback { parent }, at);
        }
    }
}
