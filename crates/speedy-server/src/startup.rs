//! The start-up line of `speedy serve` and `speedy proxy` ([`ServeStartup`]): the record
//! these servers print once every listener is bound, and the lab (or any program that
//! starts them) reads. Defined here, beside the servers that write it and below the lab.

use serde::{Deserialize, Serialize};
use std::io::Write;
use std::net::{IpAddr, SocketAddr};

/// The format version of [`ServeStartup`] this build writes: 2 added `listeners`.
pub const STARTUP_VERSION: u32 = 2;

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
    /// Every listener, TCP and UDP, and its address, port resolved (version 2; a line
    /// without it reads as version 1 said: [`ServeStartup::listeners_of`]). With
    /// `--sctp-port`, SCTP's port differs from the TCP listeners'.
    #[serde(default)]
    pub listeners: Vec<Listener>,
}

/// What a listener accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ListenerKind {
    /// TCP: SPDY, h2 and HTTP/1.1, plain or in TLS.
    Tcp,
    /// `--sctp`: SPDY over SCTP over UDP.
    Sctp,
    /// `--h3`: HTTP/3 over QUIC over UDP.
    H3,
    /// `--udp-get`: one-datagram GETs over UDP.
    UdpGet,
    /// A kind a later build announces (read, never written).
    #[serde(other)]
    Other,
}

/// One listener of a server: what it accepts and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listener {
    /// What it accepts.
    pub kind: ListenerKind,
    /// Where: the address bound, port resolved.
    pub addr: SocketAddr,
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
    /// protocols are the server's ALPN list; `listeners` is the TCP one at `listening`.
    /// `root`, `archive`, `origins` and further listeners are the caller's to fill.
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
            listeners: vec![Listener {
                kind: ListenerKind::Tcp,
                addr: listening,
            }],
        }
    }

    /// The addresses of the `kind` listeners. A line without `listeners` (version 1)
    /// reads as it was meant: TCP at every origin's address (or `listening`), and SCTP
    /// and h3, when on, at the same addresses and ports.
    pub fn listeners_of(&self, kind: ListenerKind) -> Vec<SocketAddr> {
        if !self.listeners.is_empty() {
            return self
                .listeners
                .iter()
                .filter(|l| l.kind == kind)
                .map(|l| l.addr)
                .collect();
        }
        let on = match kind {
            ListenerKind::Tcp => true,
            ListenerKind::Sctp => self.sctp,
            ListenerKind::H3 => self.h3,
            ListenerKind::UdpGet | ListenerKind::Other => false,
        };
        if !on {
            return Vec::new();
        }
        let mut addrs = vec![self.listening];
        for a in self.origins.iter().map(|o| o.addr) {
            if !addrs.contains(&a) {
                addrs.push(a);
            }
        }
        addrs
    }

    /// The port of the `kind` listener at `ip` (or at the unspecified address, which
    /// takes every IP of its family); `None` when there is none.
    pub fn port_at(&self, kind: ListenerKind, ip: IpAddr) -> Option<u16> {
        let all = self.listeners_of(kind);
        all.iter()
            .find(|a| a.ip() == ip)
            .or_else(|| {
                all.iter()
                    .find(|a| a.ip().is_unspecified() && a.is_ipv4() == ip.is_ipv4())
            })
            .map(|a| a.port())
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

    #[test]
    fn listeners_say_where_each_protocol_is_and_version_1_lines_still_tell() {
        let a: SocketAddr = "10.0.0.1:8443".parse().unwrap();
        let b: SocketAddr = "10.0.0.2:8443".parse().unwrap();
        let mut s = ServeStartup::new(a, true);
        (s.sctp, s.h3) = (true, true);
        for (host, addr) in [("a.example", a), ("b.example", b), ("c.example", a)] {
            s.origins.push(ServedOrigin {
                host: host.into(),
                addr,
            });
        }
        assert_eq!(s.listeners_of(ListenerKind::Tcp), [a]);
        for (kind, addr) in [
            (ListenerKind::Tcp, b),
            (ListenerKind::H3, a),
            (ListenerKind::H3, b),
            (ListenerKind::Sctp, "10.0.0.1:40000".parse().unwrap()),
            (ListenerKind::Sctp, "10.0.0.2:40000".parse().unwrap()),
        ] {
            s.listeners.push(Listener { kind, addr });
        }
        let line = s.to_line();
        assert!(
            line.contains(r#"{"kind":"sctp","addr":"10.0.0.2:40000"}"#),
            "{line}"
        );
        assert!(line.contains(r#""version":2"#), "{line}");
        let back = ServeStartup::parse(&line).unwrap();
        assert_eq!(back, s);
        assert_eq!(back.port_at(ListenerKind::Sctp, b.ip()), Some(40000));
        assert_eq!(back.port_at(ListenerKind::H3, b.ip()), Some(8443));
        assert_eq!(back.port_at(ListenerKind::UdpGet, b.ip()), None);
        assert_eq!(back.listeners_of(ListenerKind::Tcp), [a, b]);
        // A version 1 line (no listeners): SCTP at each origin's address and port.
        let old = r#"{"version":1,"listening":"10.0.0.1:8443","tls":false,"plain":true,
            "protocols":["h2"],"origins":[{"host":"a.example","addr":"10.0.0.1:8443"},
            {"host":"b.example","addr":"10.0.0.2:8443"}],"sctp":true}"#
            .replace('\n', "");
        let o = ServeStartup::parse(&old).expect("a version 1 line reads");
        assert_eq!(o.listeners_of(ListenerKind::Sctp), [a, b]);
        assert_eq!(o.port_at(ListenerKind::Sctp, b.ip()), Some(8443));
        assert!(o.listeners_of(ListenerKind::H3).is_empty());
        // A listener of a kind a later build adds reads as `Other`; a wildcard address
        // serves every IP of its family.
        let later = r#"{"listening":"0.0.0.0:80","tls":false,"plain":true,"protocols":[],
            "listeners":[{"kind":"tcp","addr":"0.0.0.0:80"},{"kind":"webtransport","addr":"0.0.0.0:81"}]}"#
            .replace('\n', "");
        let l = ServeStartup::parse(&later).expect("an unknown kind reads");
        assert_eq!(l.listeners[1].kind, ListenerKind::Other);
        assert_eq!(
            l.port_at(ListenerKind::Tcp, "10.1.2.3".parse().unwrap()),
            Some(80)
        );
    }
}
