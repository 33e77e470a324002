//! A validator that checks a HAR document against the HAR 1.2 schema (required fields,
//! types, timing rules), independent of the typed model: it reports every problem of a
//! document, where the model stops at the first.

use crate::date::is_rfc3339;
use serde_json::Value;
use std::collections::HashSet;

struct Check<'a> {
    errors: &'a mut Vec<String>,
}

impl Check<'_> {
    fn obj<'v>(&mut self, v: &'v Value, path: &str) -> Option<&'v serde_json::Map<String, Value>> {
        match v.as_object() {
            Some(o) => Some(o),
            None => {
                self.errors.push(format!("{path}: must be an object"));
                None
            }
        }
    }

    fn field<'v>(
        &mut self,
        o: &'v serde_json::Map<String, Value>,
        path: &str,
        name: &str,
    ) -> Option<&'v Value> {
        let v = o.get(name);
        if v.is_none() {
            self.errors.push(format!("{path}.{name}: required"));
        }
        v
    }

    fn string(
        &mut self,
        o: &serde_json::Map<String, Value>,
        path: &str,
        name: &str,
    ) -> Option<String> {
        let v = self.field(o, path, name)?;
        match v.as_str() {
            Some(s) => Some(s.to_string()),
            None => {
                self.errors.push(format!("{path}.{name}: must be a string"));
                None
            }
        }
    }

    fn number(
        &mut self,
        o: &serde_json::Map<String, Value>,
        path: &str,
        name: &str,
    ) -> Option<f64> {
        let v = self.field(o, path, name)?;
        match v.as_f64() {
            Some(n) => Some(n),
            None => {
                self.errors.push(format!("{path}.{name}: must be a number"));
                None
            }
        }
    }

    fn opt_number(
        &mut self,
        o: &serde_json::Map<String, Value>,
        path: &str,
        name: &str,
    ) -> Option<f64> {
        match o.get(name) {
            None => None,
            Some(v) => match v.as_f64() {
                Some(n) => Some(n),
                None => {
                    self.errors.push(format!("{path}.{name}: must be a number"));
                    None
                }
            },
        }
    }

    fn array<'v>(
        &mut self,
        o: &'v serde_json::Map<String, Value>,
        path: &str,
        name: &str,
    ) -> &'v [Value] {
        match self.field(o, path, name) {
            Some(Value::Array(a)) => a,
            Some(_) => {
                self.errors.push(format!("{path}.{name}: must be an array"));
                &[]
            }
            None => &[],
        }
    }

    fn name_values(&mut self, o: &serde_json::Map<String, Value>, path: &str, name: &str) {
        for (i, nv) in self.array(o, path, name).iter().enumerate() {
            let p = format!("{path}.{name}[{i}]");
            if let Some(nv) = self.obj(nv, &p) {
                self.string(nv, &p, "name");
                self.string(nv, &p, "value");
            }
        }
    }

    fn date(&mut self, o: &serde_json::Map<String, Value>, path: &str, name: &str) {
        if let Some(s) = self.string(o, path, name) {
            if !is_rfc3339(&s) {
                self.errors
                    .push(format!("{path}.{name}: {s:?} is not an ISO 8601 date-time"));
            }
        }
    }
    /// Checks `log.version` and the `creator` (and, when present, `browser`) records.
    fn log_header(&mut self, log: &serde_json::Map<String, Value>) {
        if let Some(v) = self.string(log, "log", "version") {
            if v != "1.2" && v != "1.1" {
                self.errors.push(format!("log.version: {v:?} (want 1.2)"));
            }
        }
        for who in ["creator", "browser"] {
            if who == "browser" && !log.contains_key("browser") {
                continue;
            }
            if let Some(cr) = self.field(log, "log", who).and_then(|x| self.obj(x, who)) {
                self.string(cr, &format!("log.{who}"), "name");
                self.string(cr, &format!("log.{who}"), "version");
            }
        }
    }

    /// Checks `log.pages`, when present; returns the page ids (each must be unique).
    fn pages(&mut self, log: &serde_json::Map<String, Value>) -> HashSet<String> {
        let mut page_ids = HashSet::new();
        if !log.contains_key("pages") {
            return page_ids;
        }
        for (i, p) in self.array(log, "log", "pages").iter().enumerate() {
            let path = format!("log.pages[{i}]");
            let Some(p) = self.obj(p, &path) else {
                continue;
            };
            self.date(p, &path, "startedDateTime");
            if let Some(id) = self.string(p, &path, "id") {
                if !page_ids.insert(id.clone()) {
                    self.errors.push(format!("{path}.id: {id:?} is not unique"));
                }
            }
            self.string(p, &path, "title");
            if let Some(pt) = self
                .field(p, &path, "pageTimings")
                .and_then(|x| self.obj(x, &path))
            {
                let tp = format!("{path}.pageTimings");
                for n in ["onContentLoad", "onLoad"] {
                    if let Some(v) = self.opt_number(pt, &tp, n) {
                        if v < 0.0 && v != -1.0 {
                            self.errors
                                .push(format!("{tp}.{n}: {v} (must be -1 or ≥ 0)"));
                        }
                    }
                }
            }
        }
        page_ids
    }

    /// Checks entry `path`: its `pageref` names one of `page_ids`, its request, response,
    /// cache and timings, and `time` against the timings.
    fn entry(
        &mut self,
        e: &serde_json::Map<String, Value>,
        path: &str,
        page_ids: &HashSet<String>,
        tolerance_ms: f64,
    ) {
        if let Some(pr) = e.get("pageref") {
            match pr.as_str() {
                Some(s) if page_ids.contains(s) => {}
                _ => self
                    .errors
                    .push(format!("{path}.pageref: {pr} names no page")),
            }
        }
        self.date(e, path, "startedDateTime");
        let time = self.number(e, path, "time");
        if let Some(rq) = self
            .field(e, path, "request")
            .and_then(|x| self.obj(x, path))
        {
            self.request(rq, &format!("{path}.request"));
        }
        if let Some(rs) = self
            .field(e, path, "response")
            .and_then(|x| self.obj(x, path))
        {
            self.response(rs, &format!("{path}.response"));
        }
        if let Some(ca) = self.field(e, path, "cache") {
            self.obj(ca, &format!("{path}.cache"));
        }
        if let Some(t) = self
            .field(e, path, "timings")
            .and_then(|x| self.obj(x, path))
        {
            let sum = self.timings(t, &format!("{path}.timings"), tolerance_ms);
            if let Some(time) = time {
                if (time - sum).abs() > tolerance_ms {
                    self.errors
                        .push(format!("{path}.time: {time} ≠ sum of timings {sum}"));
                }
            }
        }
    }

    /// Checks an entry's `request` (at `p`).
    fn request(&mut self, rq: &serde_json::Map<String, Value>, p: &str) {
        self.string(rq, p, "method");
        self.string(rq, p, "url");
        self.string(rq, p, "httpVersion");
        self.name_values(rq, p, "cookies");
        self.name_values(rq, p, "headers");
        self.name_values(rq, p, "queryString");
        self.number(rq, p, "headersSize");
        self.number(rq, p, "bodySize");
    }

    /// Checks an entry's `response` (at `p`), its `content` included.
    fn response(&mut self, rs: &serde_json::Map<String, Value>, p: &str) {
        self.number(rs, p, "status");
        self.string(rs, p, "statusText");
        self.string(rs, p, "httpVersion");
        self.name_values(rs, p, "cookies");
        self.name_values(rs, p, "headers");
        if let Some(ct) = self.field(rs, p, "content").and_then(|x| self.obj(x, p)) {
            let cp = format!("{p}.content");
            self.number(ct, &cp, "size");
            self.string(ct, &cp, "mimeType");
        }
        self.string(rs, p, "redirectURL");
        self.number(rs, p, "headersSize");
        self.number(rs, p, "bodySize");
    }

    /// Checks an entry's `timings` (at `p`): each phase -1 or non-negative (`send`,
    /// `wait`, `receive` required and never -1), `ssl` within `connect`. Returns the sum
    /// of the positive phases other than `ssl`, which `time` must equal.
    fn timings(&mut self, t: &serde_json::Map<String, Value>, p: &str, tolerance_ms: f64) -> f64 {
        let mut sum = 0.0;
        for n in [
            "blocked", "dns", "connect", "send", "wait", "receive", "ssl",
        ] {
            let required = matches!(n, "send" | "wait" | "receive");
            let v = if required {
                self.number(t, p, n)
            } else {
                self.opt_number(t, p, n)
            };
            if let Some(v) = v {
                if required && v < 0.0 {
                    self.errors.push(format!("{p}.{n}: {v} (must be ≥ 0)"));
                } else if v < 0.0 && v != -1.0 {
                    self.errors
                        .push(format!("{p}.{n}: {v} (must be -1 or ≥ 0)"));
                }
                if n != "ssl" && v > 0.0 {
                    sum += v;
                }
            }
        }
        if let (Some(ssl), Some(conn)) = (
            self.opt_number(t, p, "ssl"),
            self.opt_number(t, p, "connect"),
        ) {
            if ssl > 0.0 && ssl > conn + tolerance_ms {
                self.errors.push(format!(
                    "{p}: ssl {ssl} > connect {conn} (ssl is part of connect)"
                ));
            }
        }
        sum
    }
}

/// Checks a HAR document against the HAR 1.2 schema: every required field with its type,
/// ISO 8601 dates, `pageref`s that name a page, timings that are -1 or non-negative
/// (`send`, `wait`, `receive` never -1), and `time` equal to the sum of the phases
/// (within `tolerance_ms`). Returns every problem found.
pub fn validate(har: &Value, tolerance_ms: f64) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    let mut c = Check {
        errors: &mut errors,
    };
    let Some(root) = c.obj(har, "$") else {
        return Err(errors);
    };
    let Some(log) = c.field(root, "$", "log").and_then(|l| c.obj(l, "log")) else {
        return Err(errors);
    };
    c.log_header(log);
    let page_ids = c.pages(log);
    for (i, e) in c.array(log, "log", "entries").iter().enumerate() {
        let path = format!("log.entries[{i}]");
        let Some(e) = c.obj(e, &path) else { continue };
        c.entry(e, &path, &page_ids, tolerance_ms);
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::har::Har;

    fn sample() -> Value {
        serde_json::json!({"log": {
            "version": "1.2",
            "creator": {"name": "speedy", "version": "0.1"},
            "pages": [{"startedDateTime": "2013-05-01T12:00:00.000Z", "id": "page_1",
                       "title": "x", "pageTimings": {"onContentLoad": 10.5, "onLoad": 20}}],
            "entries": [{
                "pageref": "page_1", "startedDateTime": "2013-05-01T12:00:00.000Z", "time": 6.0,
                "request": {"method": "GET", "url": "http://a/", "httpVersion": "HTTP/1.1",
                    "cookies": [], "headers": [{"name": "host", "value": "a"}], "queryString": [],
                    "headersSize": 30, "bodySize": 0},
                "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1",
                    "cookies": [], "headers": [], "content": {"size": 3, "mimeType": "text/html"},
                    "redirectURL": "", "headersSize": 40, "bodySize": 3},
                "cache": {},
                "timings": {"blocked": 1, "dns": -1, "connect": 2, "ssl": 1, "send": 0, "wait": 2, "receive": 1}
            }]
        }})
    }

    #[test]
    fn accepts_a_valid_har() {
        validate(&sample(), 0.001).unwrap();
    }

    #[test]
    fn reports_every_problem() {
        let mut h = sample();
        h["log"]["entries"][0]["time"] = serde_json::json!(7.0);
        h["log"]["entries"][0]["pageref"] = serde_json::json!("nope");
        h["log"]["entries"][0]["timings"]["wait"] = serde_json::json!(-1);
        h["log"]["entries"][0]["request"]
            .as_object_mut()
            .unwrap()
            .remove("headers");
        h["log"]["pages"][0]["startedDateTime"] = serde_json::json!("yesterday");
        let errs = validate(&h, 0.001).unwrap_err();
        let all = errs.join("\n");
        for want in [
            "time: 7",
            "pageref",
            "timings.wait",
            "request.headers: required",
            "pages[0].startedDateTime",
        ] {
            assert!(all.contains(want), "missing {want:?} in\n{all}");
        }
    }

    #[test]
    fn round_trips_through_the_model() {
        let h: Har = serde_json::from_value(sample()).unwrap();
        let back = serde_json::to_value(&h).unwrap();
        validate(&back, 0.001).unwrap();
        assert_eq!(h.log.entries[0].timings.total(), 6.0);
    }
}
