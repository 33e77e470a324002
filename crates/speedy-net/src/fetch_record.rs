//! What `speedy fetch` writes for other programs: one [`FetchLine`] per response on
//! stdout, and with `--progress FILE` one [`ProgressLine`] per event. `speedy lab sst`
//! reads both back through these types. Fields may be added, never renamed; they are
//! declared in alphabetical order, the order the lines have always had.

use serde::{Deserialize, Serialize};

/// One response (or a request that got none) of `speedy fetch`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FetchLine {
    /// Body bytes received (absent when the body failed or never came).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Milliseconds from the request to the body's end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<f64>,
    /// What went wrong, if anything did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The protocol spoken (`http/1.1`, `spdy/3.1`, `h2`, `h3`, ...; absent when no
    /// connection was made).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// The response was pushed by the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pushed: Option<bool>,
    /// SHA-256 of the body, hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// The HTTP status (absent when no response came).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The URL requested.
    pub url: String,
}

impl FetchLine {
    /// A whole response with status 200 and no error.
    pub fn is_ok_200(&self) -> bool {
        self.error.is_none() && self.status == Some(200)
    }
}

/// What a `--progress` line reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProgressEvent {
    /// The URL's priority was changed (`--reprioritize`).
    Reprioritize,
    /// The PING sent after a reprioritization came back.
    Pong,
}

/// One `--progress` line: body bytes so far of a URL, or an event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProgressLine {
    /// Body bytes received so far (lines without an event).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// The event, if the line reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<ProgressEvent>,
    /// The new priority (reprioritize).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u8>,
    /// The PING's round trip, ms (pong).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_ms: Option<f64>,
    /// Seconds since the first connection was up.
    pub t: f64,
    /// The URL's position on the command line, from 1.
    pub url: usize,
}

impl ProgressLine {
    /// A line about URL number `url` (from 1), `t` and the rest unset.
    pub fn at(url: usize) -> ProgressLine {
        ProgressLine {
            bytes: None,
            event: None,
            priority: None,
            rtt_ms: None,
            t: 0.0,
            url,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_in_their_old_spelling() {
        let l = FetchLine {
            bytes: Some(10),
            elapsed_ms: Some(1.5),
            protocol: Some("h2".into()),
            pushed: Some(false),
            sha256: Some("ab".into()),
            status: Some(200),
            url: "http://a/".into(),
            ..Default::default()
        };
        let s = serde_json::to_string(&l).unwrap();
        assert_eq!(
            s,
            r#"{"bytes":10,"elapsed_ms":1.5,"protocol":"h2","pushed":false,"sha256":"ab","status":200,"url":"http://a/"}"#
        );
        assert_eq!(serde_json::from_str::<FetchLine>(&s).unwrap(), l);
        assert!(l.is_ok_200());
        let p = ProgressLine {
            bytes: None,
            event: Some(ProgressEvent::Pong),
            priority: None,
            rtt_ms: Some(100.0),
            t: 0.5,
            url: 2,
        };
        let s = serde_json::to_string(&p).unwrap();
        assert_eq!(s, r#"{"event":"pong","rtt_ms":100.0,"t":0.5,"url":2}"#);
        assert_eq!(serde_json::from_str::<ProgressLine>(&s).unwrap(), p);
        // A line without a URL is not a fetch line.
        assert!(serde_json::from_str::<FetchLine>(r#"{"listening":"x"}"#).is_err());
    }
}
