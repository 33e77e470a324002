//! Protocol versions.

use std::fmt;

/// A SPDY protocol version.
///
/// SPDY/3 and SPDY/3.1 share the wire version number 3; only negotiation (ALPN/NPN)
/// or configuration tells them apart. 3.1 adds the session-level flow-control window
/// (WINDOW_UPDATE on stream 0) and drops CREDENTIAL (digest §1.1, §5.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Version {
    /// SPDY/2: 16-bit name/value lengths, little-endian SETTINGS ids, no flow control.
    V2,
    /// SPDY/3: per-stream flow control, 32-bit name/value lengths.
    V3,
    /// SPDY/3.1: SPDY/3 plus a session flow-control window.
    V3_1,
}

impl Version {
    /// The version number carried in control frame headers (2 or 3).
    pub fn wire(self) -> u16 {
        match self {
            Version::V2 => 2,
            Version::V3 | Version::V3_1 => 3,
        }
    }

    /// The ALPN/NPN protocol id (`spdy/2`, `spdy/3`, `spdy/3.1`).
    pub fn alpn(self) -> &'static str {
        match self {
            Version::V2 => "spdy/2",
            Version::V3 => "spdy/3",
            Version::V3_1 => "spdy/3.1",
        }
    }

    /// Parses an ALPN id or a short name (`spdy/3.1`, `3.1`, `spdy/3`, `3`, `spdy/2`, `2`).
    pub fn from_name(s: &str) -> Option<Version> {
        match s.trim_start_matches("spdy/") {
            "3.1" => Some(Version::V3_1),
            "3" => Some(Version::V3),
            "2" => Some(Version::V2),
            _ => None,
        }
    }

    /// Whether streams are flow-controlled (SPDY/3 and later).
    pub fn has_stream_flow_control(self) -> bool {
        self != Version::V2
    }

    /// Whether the session has its own flow-control window (SPDY/3.1).
    pub fn has_session_flow_control(self) -> bool {
        self == Version::V3_1
    }

    /// The lowest (least urgent) priority value in this version: 3 for SPDY/2, 7 otherwise.
    pub fn lowest_priority(self) -> u8 {
        if self == Version::V2 {
            3
        } else {
            7
        }
    }

    /// The preset zlib dictionary for header blocks (digest §4.3).
    pub fn dictionary(self) -> &'static [u8] {
        match self {
            Version::V2 => crate::compress::SPDY2_DICTIONARY,
            Version::V3 | Version::V3_1 => crate::compress::SPDY3_DICTIONARY,
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.alpn())
    }
}
