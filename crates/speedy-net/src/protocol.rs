//! The one protocol vocabulary of every speedy command line: `http1`, `http/1.1`,
//! `spdy` (= `spdy/3.1`), `spdy/3.1`, `spdy/3`, `spdy/2`, `h2` (= `http2`), `h3` (= `http3`).
//!
//! [`Protocol::parse`] (also [`std::str::FromStr`], so clap can parse it directly) is the
//! only parser of these names: `load`, `fetch` and `bench` all go through it, and a
//! command that cannot speak one of them says so by name instead of calling it unknown.

use spdy::Version;
use std::fmt;

/// The h2 receive windows Chromium announces (`kSpdyStreamMaxRecvWindowSize` = 6 MB and
/// `kSpdySessionMaxRecvWindowSize` = 15 MB, `net/http/http_network_session.cc`): what
/// speedy's h2 clients (`fetch`, `bench`, the loader) announce too. With the h2 crate's
/// WINDOW_UPDATE at half a window, a 1 MiB stream window held a single loopback
/// download to three quarters of HTTP/1.1's rate.
pub const H2_STREAM_WINDOW: u32 = 6 << 20;
/// See [`H2_STREAM_WINDOW`].
pub const H2_SESSION_WINDOW: u32 = 15 << 20;

/// An application protocol: over one TCP or TLS connection, or (HTTP/3) over QUIC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// SPDY of a version.
    Spdy(Version),
    /// HTTP/1.1.
    Http1,
    /// HTTP/2.
    H2,
    /// HTTP/3, over QUIC (UDP) instead of TCP ([`crate::h3`]).
    H3,
}

/// The names [`Protocol::parse`] accepts, for help texts and error messages.
pub const VOCABULARY: &str =
    "http1 (= http/1.1), spdy (= spdy/3.1), spdy/3.1, spdy/3, spdy/2, h2 (= http2), h3 (= http3)";

/// A protocol name that is not in the [`VOCABULARY`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownProtocol(pub String);

impl fmt::Display for UnknownProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown protocol {:?}: use {VOCABULARY}", self.0)
    }
}

impl std::error::Error for UnknownProtocol {}

impl Protocol {
    /// Parses a protocol name, case-insensitively: `http1`, `http/1.1`, `spdy`,
    /// `spdy/3.1`, `spdy/3`, `spdy/2`, `h2`, `http2`, `h3`, `http3` (and the ALPN ids, which are among
    /// them; older spellings `http1.1`, `http/2`, `spdy3.1`, `3.1`, `3`, `2` still work).
    pub fn parse(s: &str) -> Result<Protocol, UnknownProtocol> {
        let p = match s.trim().to_ascii_lowercase().as_str() {
            "http1" | "http/1.1" | "http1.1" => Protocol::Http1,
            "spdy" | "spdy/3.1" | "spdy3.1" | "3.1" => Protocol::Spdy(Version::V3_1),
            "spdy/3" | "spdy3" | "3" => Protocol::Spdy(Version::V3),
            "spdy/2" | "spdy2" | "2" => Protocol::Spdy(Version::V2),
            "h2" | "http2" | "http/2" => Protocol::H2,
            "h3" | "http3" | "http/3" => Protocol::H3,
            _ => return Err(UnknownProtocol(s.to_string())),
        };
        Ok(p)
    }

    /// Parses a name; `None` when it is unknown (see [`Protocol::parse`]).
    pub fn from_name(s: &str) -> Option<Protocol> {
        Protocol::parse(s).ok()
    }

    /// The ALPN id, which is also the canonical name: `http/1.1`, `spdy/3.1`, `spdy/3`,
    /// `spdy/2`, `h2`, `h3`.
    pub fn alpn(self) -> &'static str {
        match self {
            Protocol::Spdy(v) => v.alpn(),
            Protocol::Http1 => "http/1.1",
            Protocol::H2 => "h2",
            Protocol::H3 => "h3",
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.alpn())
    }
}

impl std::str::FromStr for Protocol {
    type Err = UnknownProtocol;
    fn from_str(s: &str) -> Result<Protocol, UnknownProtocol> {
        Protocol::parse(s)
    }
}

/// What carries a SPDY session: TCP (with TLS over it for https), or SCTP over UDP
/// (RFC 6951 framing; [`crate::transport::sctp`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Carrier {
    /// TCP, and TLS over it for https.
    #[default]
    Tcp,
    /// SCTP over UDP: one SPDY stream per SCTP stream.
    Sctp,
}

impl fmt::Display for Carrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Carrier::Tcp => "tcp",
            Carrier::Sctp => "sctp",
        })
    }
}

impl std::str::FromStr for Carrier {
    type Err = String;
    /// `tcp` or `sctp`.
    fn from_str(s: &str) -> Result<Carrier, String> {
        match s {
            "tcp" => Ok(Carrier::Tcp),
            "sctp" => Ok(Carrier::Sctp),
            _ => Err(format!("{s:?}: tcp or sctp")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_whole_vocabulary() {
        for (name, want) in [
            ("http1", Protocol::Http1),
            ("http/1.1", Protocol::Http1),
            ("HTTP/1.1", Protocol::Http1),
            ("spdy", Protocol::Spdy(Version::V3_1)),
            ("spdy/3.1", Protocol::Spdy(Version::V3_1)),
            ("spdy/3", Protocol::Spdy(Version::V3)),
            ("spdy/2", Protocol::Spdy(Version::V2)),
            ("h2", Protocol::H2),
            ("http2", Protocol::H2),
            ("h3", Protocol::H3),
            ("http3", Protocol::H3),
        ] {
            assert_eq!(Protocol::parse(name), Ok(want), "{name}");
        }
    }

    #[test]
    fn canonical_names_round_trip() {
        for p in [
            Protocol::Http1,
            Protocol::Spdy(Version::V3_1),
            Protocol::Spdy(Version::V3),
            Protocol::Spdy(Version::V2),
            Protocol::H2,
            Protocol::H3,
        ] {
            assert_eq!(Protocol::parse(&p.to_string()), Ok(p));
        }
    }

    #[test]
    fn rejects_unknown_names_listing_the_vocabulary() {
        let e = Protocol::parse("spdy/4").unwrap_err().to_string();
        assert!(
            e.contains("\"spdy/4\"") && e.contains("spdy/3.1") && e.contains("h2"),
            "{e}"
        );
        assert!(Protocol::parse("").is_err());
        assert!(Protocol::parse("h4").is_err());
    }
}
