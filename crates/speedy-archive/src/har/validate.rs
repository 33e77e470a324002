//! A validator that checks a HAR document against the HAR 1.2 schema (required fields,
//! types, timing rules), independent of the typed model: it reports every problem of a
//! document, where the model stops at the first.

use crate::date::is_rfc3339;
use serde_json::Value;

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
    if let Some(v) = c.string(log, "log", "version") {
        if v != "1.2" && v != "1.1" {
            c.errors.push(format!("log.version: {v:?} (want 1.2)"));
        }
    }
    for who in ["creator", "browser"] {
        if who == "browser" && !log.contains_key("browser") {
            continue;
        }
        if let Some(cr) = c.field(log, "log", who).and_then(|x| c.obj(x, who)) {
            c.string(cr, &format!("log.{who}"), "name");
            c.string(cr, &format!("log.{who}"), "version");
        }
    }
    let mut page_ids = std::collections::HashSet::new();
    if log.contains_key("pages") {
        for (i, p) in c.array(log, "log", "pages").iter().enumerate() {
            let path = format!("log.pages[{i}]");
            let Some(p) = c.obj(p, &path) else { continue };
            c.date(p, &path, "startedDateTime");
            if let Some(id) = c.string(p, &path, "id") {
                if !page_ids.insert(id.clone()) {
                    c.errors.push(format!("{path}.id: {id:?} is not unique"));
                }
            }
            c.string(p, &path, "title");
            if let Some(pt) = c
                .field(p, &path, "pageTimings")
                .and_then(|x| c.obj(x, &path))
            {
                let tp = format!("{path}.pageTimings");
                for n in ["onContentLoad", "onLoad"] {
                    if let Some(v) = c.opt_number(pt, &tp, n) {
                        if v < 0.0 && v != -1.0 {
                            c.errors.push(format!("{tp}.{n}: {v} (must be -1 or ≥ 0)"));
                        }
                    }
                }
            }
        }
    }
    for (i, e) in c.array(log, "log", "entries").iter().enumerate() {
        let path = format!("log.entries[{i}]");
        let Some(e) = c.obj(e, &path) else { continue };
        if let Some(pr) = e.get("pageref") {
            match pr.as_str() {
                Some(s) if page_ids.contains(s) => {}
                _ => c.errors.push(format!("{path}.pageref: {pr} names no page")),
            }
        }
        c.date(e, &path, "startedDateTime");
        let time = c.number(e, &path, "time");
        if let Some(rq) = c.field(e, &path, "request").and_then(|x| c.obj(x, &path)) {
            let p = format!("{path}.request");
            c.string(rq, &p, "method");
            c.string(rq, &p, "url");
            c.string(rq, &p, "httpVersion");
            c.name_values(rq, &p, "cookies");
            c.name_values(rq, &p, "headers");
            c.name_values(rq, &p, "queryString");
            c.number(rq, &p, "headersSize");
            c.number(rq, &p, "bodySize");
        }
        if let Some(rs) = c.field(e, &path, "response").and_then(|x| c.obj(x, &path)) {
            let p = format!("{path}.response");
            c.number(rs, &p, "status");
            c.string(rs, &p, "statusText");
            c.string(rs, &p, "httpVersion");
            c.name_values(rs, &p, "cookies");
            c.name_values(rs, &p, "headers");
            if let Some(ct) = c.field(rs, &p, "content").and_then(|x| c.obj(x, &p)) {
                let cp = format!("{p}.content");
                c.number(ct, &cp, "size");
                c.string(ct, &cp, "mimeType");
            }
            c.string(rs, &p, "redirectURL");
            c.number(rs, &p, "headersSize");
            c.number(rs, &p, "bodySize");
        }
        if let Some(ca) = c.field(e, &path, "cache") {
            c.obj(ca, &format!("{path}.cache"));
        }
        if let Some(t) = c.field(e, &path, "timings").and_then(|x| c.obj(x, &path)) {
            let p = format!("{path}.timings");
            let mut sum = 0.0;
            for n in [
                "blocked", "dns", "connect", "send", "wait", "receive", "ssl",
            ] {
                let required = matches!(n, "send" | "wait" | "receive");
                let v = if required {
                    c.number(t, &p, n)
                } else {
                    c.opt_number(t, &p, n)
                };
                if let Some(v) = v {
                    if required && v < 0.0 {
                        c.errors.push(format!("{p}.{n}: {v} (must be ≥ 0)"));
                    } else if v < 0.0 && v != -1.0 {
                        c.errors.push(format!("{p}.{n}: {v} (must be -1 or ≥ 0)"));
                    }
                    if n != "ssl" && v > 0.0 {
                        sum += v;
                    }
                }
            }
            if let (Some(ssl), Some(conn)) =
                (c.opt_number(t, &p, "ssl"), c.opt_number(t, &p, "connect"))
            {
                if ssl > 0.0 && ssl > conn + tolerance_ms {
                    c.errors.push(format!(
                        "{p}: ssl {ssl} > connect {conn} (ssl is part of connect)"
                    ));
                }
            }
            if let Some(time) = time {
                if (time - sum).abs() > tolerance_ms {
                    c.errors
                        .push(format!("{path}.time: {time} ≠ sum of timings {sum}"));
                }
            }
        }
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
