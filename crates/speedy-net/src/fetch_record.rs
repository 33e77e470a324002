//! What `speedy fetch` writes for other programs: one [`FetchLine`] per response on
//! stdout, and with `--progress FILE` one [`ProgressLine`] per event. `speedy lab sst`
//! reads both back through these types. Fields may be added, never renamed; they are
//! declared in alphabetical order, the order the lines have always had. Each line says
//! its format's `version` ([`LINE_VERSION`]); lines from before the field read as 1.

use serde::{Deserialize, Serialize};
use speedy_records::version::{first, Versioned};

/// The format version of [`FetchLine`] and [`ProgressLine`] this build writes.
pub const LINE_VERSION: u32 = 1;

/// One response (or a request that got none) of `speedy fetch`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
    /// The line's format version ([`LINE_VERSION`]).
    #[serde(default = "first")]
    pub version: u32,
}

impl Default for FetchLine {
    fn default() -> FetchLine {
        FetchLine {
            bytes: None,
            elapsed_ms: None,
            error: None,
            protocol: None,
            pushed: None,
            sha256: None,
            status: None,
            url: String::new(),
            version: LINE_VERSION,
        }
    }
}

impl Versioned for FetchLine {
    const NAME: &'static str = "a fetch line";
    const CURRENT: u32 = LINE_VERSION;
    fn version(&self) -> u32 {
        self.version
    }
}

impl Versioned for ProgressLine {
    const NAME: &'static str = "a progress line";
    const CURRENT: u32 = LINE_VERSION;
    fn version(&self) -> u32 {
        self.version
    }
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
    /// The line's format version ([`LINE_VERSION`]).
    #[serde(default = "first")]
    pub version: u32,
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
            version: LINE_VERSION,
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
            r#"{"bytes":10,"elapsed_ms":1.5,"protocol":"h2","pushed":false,"sha256":"ab","status":200,"url":"http://a/","version":1}"#
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
            version: LINE_VERSION,
        };
        let s = serde_json::to_string(&p).unwrap();
        assert_eq!(
            s,
            r#"{"event":"pong","rtt_ms":100.0,"t":0.5,"url":2,"version":1}"#
        );
        assert_eq!(serde_json::from_str::<ProgressLine>(&s).unwrap(), p);
        // Lines from before the version field still read, as version 1.
        let old = r#"{"bytes":10,"status":200,"url":"http://a/"}"#;
        let o = speedy_records::version::read::<FetchLine>(old).unwrap();
        assert_eq!((o.version, o.bytes), (1, Some(10)));
        let newer = r#"{"url":"http://a/","version":2}"#;
        let e = speedy_records::version::read::<FetchLine>(newer).unwrap_err();
        assert!(e.contains("a fetch line of version 2"), "{e}");
        // A line without a URL is not a fetch line.
        assert!(serde_json::from_str::<FetchLine>(r#"{"listening":"x"}"#).is_err());
    }
}
