//! Web Page Replay archives (`.wprgo`, `crate::wpr`) → records → archive.

use super::from_warc::rec_from_http;
use super::recording::import_recording;
use super::urls::is_http;
use super::{invalid, ImportError, Imported};
use crate::model::Recorded;
use crate::warc;
use crate::wpr;
use std::path::Path;

/// Imports a WPR archive's bytes (gzip-compressed JSON, or the JSON); `path` names it in
/// errors. Records whose response is empty (failed when recorded) and URLs that are not
/// http(s) are skipped with a warning; `Certs` are not kept.
pub fn import_wpr(path: &Path, data: &[u8]) -> Result<Imported, ImportError> {
    let w = wpr::read(data).map_err(|e| invalid(path, e.entry, e.reason))?;
    let mut warnings = Vec::new();
    let mut recs = Vec::with_capacity(w.records.len());
    for r in &w.records {
        let here = r.describe();
        if r.response.is_empty() {
            warnings.push(format!(
                "{here}: no response recorded (the request failed); skipped"
            ));
            continue;
        }
        if !is_http(&r.url) {
            warnings.push(format!("{here}: not an http(s) URL; skipped"));
            continue;
        }
        let field = |name: &str| format!("{here}.{name}");
        let resp = warc::parse_http(&r.response)
            .map_err(|e| invalid(path, field("SerializedResponse"), e))?;
        if resp.status == 0 {
            return Err(invalid(
                path,
                field("SerializedResponse"),
                "a request, not a response",
            ));
        }
        let mut rec = rec_from_http(here.clone(), &r.url, &resp, "WPR archive", &mut warnings);
        if r.request.is_empty() {
            warnings.push(format!("{here}: no request recorded; taken as GET"));
        } else {
            let req = warc::parse_http(&r.request)
                .map_err(|e| invalid(path, field("SerializedRequest"), e))?;
            if req.method.is_empty() {
                return Err(invalid(
                    path,
                    field("SerializedRequest"),
                    "a response, not a request",
                ));
            }
            rec.method = req.method.to_ascii_uppercase();
            rec.request_headers = req.headers;
        }
        rec.recorded = w.negotiated.get(&r.host).map(|p| Recorded {
            protocol: Some(p.clone()),
            ..Default::default()
        });
        recs.push(rec);
    }
    let hosts: std::collections::BTreeSet<&str> =
        w.records.iter().map(|r| r.host.as_str()).collect();
    let source = format!(
        "{} (WPR, {} records, {} hosts)",
        path.file_name().map_or_else(
            || path.display().to_string(),
            |f| f.to_string_lossy().into_owned()
        ),
        w.records.len(),
        hosts.len()
    );
    import_recording(path, &source, recs, warnings)
}
