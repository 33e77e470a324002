//! The start-up line of `speedy serve` and `speedy proxy` ([`ServeStartup`]): the record
//! these servers print once every listener is bound, and the lab (or any program that
//! starts them) reads. Defined here, beside the servers that write it and below the lab.

use serde::{Deserialize, Serialize};
use std::io::Write;
use std::net::SocketAddr;

/// The format version of [`ServeStartup`] this build writes.
pub const STARTUP_VERSION: u32 = 1;

fn first_version() -> u32 {
    1
}

/// The machine-readable start-up line of `speedy serve`: one JSON object on one line,
/// printed once after the human lines, when every listener is bound. Consumers ignore
/// fields they do not know (fields may be added, never renamed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServeStartup {
    /// The line's format version ([`STARTUP_VERSION`]; lines written before it had one
    /// read as 1).
    #[serde(default = "first_version")]
    pub version: u32,
    /// The (first) address listened on, port resolved (`--listen` port 0 picks one).
    pub listening: SocketAddr,
    /// TLS is accepted (protocol chosen by ALPN).
    pub tls: bool,
    /// Plain TCP is accepted (protocol told apart by the first bytes). With an archive
    /// of https origins both are on, on the same port.
    pub plain: bool,
    /// The protocols served, as ALPN ids (`spdy/3.1`, `spdy/3`, `spdy/2`, `h2`,
    /// `http/1.1`), in the server's order of preference.
    pub protocols: Vec<String>,
    /// `--root`: the directory served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    /// `--archive`: the archive replayed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive: Option<String>,
    /// `--archive`: every origin of the archive and the address that serves it (empty
    /// with `--root`).
    #[serde(default)]
    pub origins: Vec<ServedOrigin>,
    /// `--sctp`: SPDY over SCTP is accepted on UDP at the same addresses.
    #[serde(default)]
    pub sctp: bool,
    /// `--h3`: HTTP/3 over QUIC is accepted on UDP at the same addresses.
    #[serde(default)]
    pub h3: bool,
}

/// One origin of an archive and where it is served.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServedOrigin {
    /// Host name (with `:port` if the archive's URLs name one).
    pub host: String,
    /// Address serving it.
    pub addr: SocketAddr,
}

impl ServeStartup {
    /// The start-up of a server listening on `listening`, with TLS or not. Plain TCP is
    /// always accepted (the first byte tells a ClientHello from anything else); the
    /// protocols are the server's ALPN list. `root`, `archive` and `origins` are the
    /// caller's to fill.
    pub fn new(listening: SocketAddr, tls: bool) -> ServeStartup {
        ServeStartup {
            version: STARTUP_VERSION,
            listening,
            tls,
            plain: true,
            protocols: speedy_net::tls::SERVER_ALPN.map(String::from).to_vec(),
            root: None,
            archive: None,
            origins: Vec::new(),
            sctp: false,
            h3: false,
        }
    }

    /// The line as `speedy serve` prints it (no newline).
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("ServeStartup serializes")
    }

    /// Writes the start-up block: `human` (the human lines, each ending in a newline),
    /// then the JSON line, in one write so that a reader that stops after the human lines
    /// does not close the pipe between them; then flushes.
    pub fn announce(&self, human: &str, mut out: impl Write) -> std::io::Result<()> {
        let mut block = String::with_capacity(human.len() + 256);
        block.push_str(human);
        block.push_str(&self.to_line());
        block.push('\n');
        out.write_all(block.as_bytes())?;
        out.flush()
    }

    /// Parses a start-up line; `None` if `line` is not one (e.g. a human line).
    pub fn parse(line: &str) -> Option<ServeStartup> {
        let line = line.trim();
        if !line.starts_with('{') {
            return None;
        }
        serde_json::from_str(line).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn startup_line_round_trips_and_has_the_documented_shape() {
        let mut s = ServeStartup::new("10.0.0.2:8443".parse().unwrap(), true);
        s.archive = Some("/tmp/corpus".into());
        for (host, addr) in [
            ("a.example", "10.0.0.2:8443"),
            ("b.example:8080", "[fd00::2]:8443"),
        ] {
            s.origins.push(ServedOrigin {
                host: host.into(),
                addr: addr.parse().unwrap(),
            });
        }
        let line = s.to_line();
        assert!(!line.contains('\n'));
        assert_eq!(ServeStartup::parse(&line), Some(s));
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["listening"], "10.0.0.2:8443");
        assert_eq!(v["origins"][1]["addr"], "[fd00::2]:8443");
        assert_eq!(v["origins"][0]["host"], "a.example");
        assert!(v.get("root").is_none());
    }

    #[test]
    fn parse_ignores_human_lines_and_unknown_fields() {
        assert_eq!(
            ServeStartup::parse("listening on 1.2.3.4:5 (plain; …)"),
            None
        );
        assert_eq!(ServeStartup::parse("origin a.example 1.2.3.4:5"), None);
        let s = ServeStartup::parse(
            r#"{"listening":"127.0.0.1:80","tls":false,"plain":true,"protocols":["http/1.1"],"root":"/srv","later":1}"#,
        )
        .unwrap();
        assert_eq!(s.root.as_deref(), Some("/srv"));
        assert!(s.origins.is_empty());
    }

    #[test]
    fn the_line_round_trips_and_old_lines_still_read() {
        let mut s = ServeStartup::new("10.0.0.1:443".parse().unwrap(), true);
        s.origins.push(ServedOrigin {
            host: "a.example".into(),
            addr: "10.0.0.2:443".parse().unwrap(),
        });
        s.h3 = true;
        assert_eq!(ServeStartup::parse(&s.to_line()), Some(s.clone()));
        // A line of a speedy from before the version field.
        let old = r#"{"listening":"127.0.0.1:1","tls":false,"plain":true,"protocols":["h2"]}"#;
        let o = ServeStartup::parse(old).expect("an old line reads");
        assert_eq!(o.version, 1);
        assert!(o.origins.is_empty() && !o.sctp && !o.h3);
        assert_eq!(ServeStartup::parse("listening on 127.0.0.1:1"), None);
        let mut out = Vec::new();
        s.announce("listening on x\n", &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert_eq!(ServeStartup::parse(text.lines().nth(1).unwrap()), Some(s));
    }
}
