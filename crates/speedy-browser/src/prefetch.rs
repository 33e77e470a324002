//! Client prefetch: what earlier loads of a page fetched, kept in a small JSON file
//! (`{"pages": {"URL": [{"url": …, "type": …}, …]}}`), so that the next load of the page
//! can request those subresources as soon as its HTML request is sent. A HAR file is
//! accepted as the source too (its entries other than the page's own URL).

use crate::config::{type_from_name, type_name};
use crate::loader::LoadResult;
use serde_json::{json, Value};
use speedy_archive::ObjectType;
use std::path::Path;

/// Reads what was learned for `page` from a store or a HAR (empty if the file is absent).
pub fn learned(path: &Path, page: &str) -> Result<Vec<(String, ObjectType)>, String> {
    let text = match std::fs::read(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let v: Value =
        serde_json::from_slice(&text).map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
    let page_norm = crate::url::Url::parse(page).map(|u| u.to_string());
    if v.get("log").is_some() {
        let har: crate::har::Har = serde_json::from_value(v).map_err(|e| {
            format!(
                "{}: not a HAR 1.2 file as speedy writes it: {e}",
                path.display()
            )
        })?;
        return Ok(har
            .log
            .entries
            .iter()
            .filter_map(|e| {
                let url = e.request.url.as_str();
                let norm = crate::url::Url::parse(url)?.to_string();
                if Some(&norm) == page_norm.as_ref() {
                    return None;
                }
                let kind = e
                    .resource_type
                    .as_deref()
                    .and_then(type_from_name)
                    .unwrap_or_else(|| ObjectType::guess("", url));
                Some((norm, kind))
            })
            .collect());
    }
    if !v.get("pages").is_some_and(Value::is_object) {
        return Err(format!(
            "{}: neither a HAR nor a prefetch store (a JSON object with \"pages\"); \
             not overwritten",
            path.display()
        ));
    }
    let Some(list) = page_norm
        .as_deref()
        .and_then(|p| {
            v.pointer(&format!(
                "/pages/{}",
                p.replace('~', "~0").replace('/', "~1")
            ))
        })
        .and_then(Value::as_array)
    else {
        return Ok(Vec::new());
    };
    Ok(list
        .iter()
        .filter_map(|x| {
            let url = x.get("url")?.as_str()?.to_string();
            let kind = x
                .get("type")
                .and_then(Value::as_str)
                .and_then(type_from_name)
                .unwrap_or(ObjectType::Other);
            Some((url, kind))
        })
        .collect())
}

/// Records what this load fetched (besides the page itself) into the store at `path`.
pub fn remember(path: &Path, res: &LoadResult) -> Result<(), String> {
    let mut v: Value = match std::fs::read(path) {
        Ok(t) => serde_json::from_slice(&t).unwrap_or_else(|_| json!({"pages": {}})),
        Err(_) => json!({"pages": {}}),
    };
    if v.pointer("/log").is_some() || !v.get("pages").is_some_and(Value::is_object) {
        v = json!({"pages": {}});
    }
    let page = crate::url::Url::parse(&res.url)
        .map(|u| u.to_string())
        .unwrap_or_else(|| res.url.clone());
    let list: Vec<Value> = res
        .reqs
        .iter()
        .filter(|r| r.url_s != page && !r.failed())
        .map(|r| json!({"url": r.url_s, "type": type_name(r.kind)}))
        .collect();
    v["pages"][page] = Value::Array(list);
    let out = serde_json::to_vec_pretty(&v).map_err(|e| e.to_string())?;
    std::fs::write(path, out).map_err(|e| format!("{}: {e}", path.display()))
}
