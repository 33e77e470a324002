//! What `speedy proxy` lets its clients reach: the targets of `--allow HOST[:PORT]` and
//! of `--resolve HOST=...`, matched against each request's host and port (CONNECT's
//! target as much as an absolute-form or SPDY request's origin). Pure: no sockets, no
//! lookups.
//!
//! Hosts are compared in one normal form ([`Host`]): names in lower case without a
//! trailing dot, IP addresses as addresses (IPv4-mapped IPv6 as IPv4), so `[::FFFF:
//! 10.0.0.1]` is `10.0.0.1` and `WWW.Example.com.` is `www.example.com`. A host that is
//! neither a plain name nor an address in its usual form (`127.1`, `0x7f.0.0.1`,
//! `2130706433`, which a system resolver reads as addresses, or anything holding `@`,
//! `%` or `/`) is refused outright: it could otherwise name an address that no rule
//! names.
//!
//! Rules ([`Rule`]): `example.com` (that host, any port), `example.com:443` (that port
//! only), `10.0.0.1`, `[::1]:443`, `*.example.com` (every name ending in
//! `.example.com`, not `example.com` itself; never an address), `*` (every host: an
//! open proxy), `*:443` (every host, that port).

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

/// A request's host in the form rules and `--resolve` entries are compared in.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Host {
    /// An address (IPv4-mapped IPv6 addresses as IPv4).
    Ip(IpAddr),
    /// A name: ASCII letters, digits, `-` and `_` in dot-separated labels, lower case,
    /// no trailing dot; its last label does not start with a digit.
    Name(String),
}

impl Host {
    /// Parses a host as a request or a flag names it, without a port: a name, an IPv4
    /// address, an IPv6 address bare or in brackets. The error says why, without the
    /// flag.
    pub fn parse(s: &str) -> Result<Host, String> {
        if let Some(inner) = s.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            return inner
                .parse::<Ipv6Addr>()
                .map(|a| Host::Ip(IpAddr::V6(a).to_canonical()))
                .map_err(|_| format!("{s:?} is not an IPv6 address"));
        }
        if let Ok(ip) = s.parse::<IpAddr>() {
            return Ok(Host::Ip(ip.to_canonical()));
        }
        let name = s.strip_suffix('.').unwrap_or(s).to_ascii_lowercase();
        if name.is_empty() {
            return Err("no host".into());
        }
        let ok = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
        if name.split('.').any(|l| l.is_empty() || !l.chars().all(ok)) {
            return Err(format!(
                "{s:?} is not a host name or an IP address (letters, digits, '-' and '_' \
                 in labels between dots)"
            ));
        }
        let last = name.rsplit('.').next().unwrap_or_default();
        if last.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(format!(
                "{s:?} is not an IP address in its usual form (a.b.c.d, or [IPv6]) nor a \
                 host name"
            ));
        }
        Ok(Host::Name(name))
    }
}

impl fmt::Display for Host {
    /// A name as it is, IPv4 dotted, IPv6 in brackets: as it goes before `:PORT`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Ip(IpAddr::V6(a)) => write!(f, "[{a}]"),
            Host::Ip(a) => write!(f, "{a}"),
            Host::Name(n) => f.write_str(n),
        }
    }
}

/// Splits `HOST[:PORT]` (IPv6 as `[ADDR]:PORT`, or bare without a port) into the host
/// text and the port, if any (1-65535). The error says why, without the flag.
pub fn split_port(s: &str) -> Result<(&str, Option<u16>), String> {
    let s = s.trim();
    if s.parse::<Ipv6Addr>().is_ok() {
        return Ok((s, None));
    }
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        match rest.split_once(']') {
            Some((_, "")) => (s, None),
            Some((a, p)) => match p.strip_prefix(':') {
                Some(p) => (&s[..a.len() + 2], Some(p)),
                None => return Err(format!("{s:?}: expected [IPv6]:PORT")),
            },
            None => return Err(format!("{s:?}: no ']' after '['")),
        }
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    let port = match port {
        None => None,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => Some(n),
            _ => return Err(format!("{s:?}: {p:?} is not a port (1-65535)")),
        },
    };
    Ok((host, port))
}

/// Which hosts a rule names.
#[derive(Clone, Debug, PartialEq)]
enum Hosts {
    /// `*`: every host, names and addresses.
    Every,
    /// `*.SUFFIX`: every name ending in `.SUFFIX` (SUFFIX itself is not included).
    Under(String),
    /// One host.
    Exactly(Host),
}

/// One `--allow HOST[:PORT]` entry (see the module doc for its forms).
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    hosts: Hosts,
    /// `None`: every port.
    port: Option<u16>,
}

impl Rule {
    /// Parses an entry; the error names it as `--allow ENTRY`.
    pub fn parse(s: &str) -> Result<Rule, String> {
        let fail = |why: String| format!("--allow {s:?}: {why}");
        let (host, port) = split_port(s).map_err(fail)?;
        let hosts = if host == "*" {
            Hosts::Every
        } else if let Some(suffix) = host.strip_prefix("*.") {
            match Host::parse(suffix).map_err(fail)? {
                Host::Name(n) => Hosts::Under(n),
                Host::Ip(_) => {
                    return Err(fail(format!(
                        "*.{suffix}: a pattern is for names; name an address whole"
                    )))
                }
            }
        } else if host.contains('*') {
            return Err(fail(
                "'*' alone (every host) or at the start, as in *.example.com".into(),
            ));
        } else {
            Hosts::Exactly(Host::parse(host).map_err(fail)?)
        };
        Ok(Rule { hosts, port })
    }

    /// Whether the rule lets a client reach `host` at `port`.
    pub fn permits(&self, host: &Host, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        match (&self.hosts, host) {
            (Hosts::Every, _) => true,
            (Hosts::Under(suffix), Host::Name(n)) => n
                .strip_suffix(suffix.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            (Hosts::Under(_), Host::Ip(_)) => false,
            (Hosts::Exactly(h), _) => h == host,
        }
    }

    /// Whether the rule is `*`: every host at every port.
    pub fn is_everything(&self) -> bool {
        self.hosts == Hosts::Every && self.port.is_none()
    }
}

/// The `--allow` list: a target is allowed when a rule permits it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Allow {
    rules: Vec<Rule>,
}

impl Allow {
    /// Parses the entries of `--allow`; the error names the first one at fault.
    pub fn parse(entries: &[String]) -> Result<Allow, String> {
        let rules = entries
            .iter()
            .map(|e| Rule::parse(e))
            .collect::<Result<_, _>>()?;
        Ok(Allow { rules })
    }

    /// Whether some rule lets a client reach `host` at `port`.
    pub fn permits(&self, host: &Host, port: u16) -> bool {
        self.rules.iter().any(|r| r.permits(host, port))
    }

    /// Whether the list holds `*` (every host at every port).
    pub fn is_everything(&self) -> bool {
        self.rules.iter().any(Rule::is_everything)
    }

    /// Whether the list has no rule.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}

/// The words of a refusal (the body of the proxy's 403): the target and the flags that
/// would allow it.
pub fn refusal(host: &Host, port: u16) -> String {
    format!(
        "{host}:{port} is not allowed: allow it with --allow {host}:{port} or --resolve \
         {host}=IP[:PORT]"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(s: &str) -> Host {
        Host::parse(s).unwrap()
    }

    #[test]
    fn hosts_have_one_form() {
        assert_eq!(
            host("WWW.Example.COM."),
            Host::Name("www.example.com".into())
        );
        assert_eq!(host("10.0.0.1"), Host::Ip("10.0.0.1".parse().unwrap()));
        assert_eq!(host("[::ffff:10.0.0.1]"), host("10.0.0.1"));
        assert_eq!(host("::1"), host("[::1]"));
        assert_eq!(host("[::1]").to_string(), "[::1]");
        assert_eq!(host("123.example.com").to_string(), "123.example.com");
        // Forms a resolver reads as addresses, and what is no host at all.
        for bad in [
            "127.1",
            "0x7f.0.0.1",
            "2130706433",
            "0x7f000001",
            "010.0.0.1",
            "a.b.1",
            "evil.com@good.example",
            "fe80::1%eth0",
            "[fe80::1%25eth0]",
            "a..b",
            "a/b",
            "",
            "[::1",
        ] {
            assert!(Host::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn ports_split_off() {
        assert_eq!(split_port("a.example:443"), Ok(("a.example", Some(443))));
        assert_eq!(split_port("a.example"), Ok(("a.example", None)));
        assert_eq!(split_port("[::1]:8443"), Ok(("[::1]", Some(8443))));
        assert_eq!(split_port("[::1]"), Ok(("[::1]", None)));
        assert_eq!(split_port("::1"), Ok(("::1", None)));
        assert!(split_port("a.example:0").is_err());
        assert!(split_port("a.example:99999").is_err());
        assert!(split_port("a.example:").is_err());
        assert!(split_port("[::1]x").is_err());
    }

    #[test]
    fn rules_match_hosts_and_ports() {
        let r = |s: &str| Rule::parse(s).unwrap();
        let (a, ip) = (host("a.example"), host("10.0.0.1"));
        assert!(r("a.example").permits(&a, 1));
        assert!(r("A.Example.:443").permits(&a, 443));
        assert!(!r("a.example:443").permits(&a, 80));
        assert!(!r("a.example").permits(&host("b.example"), 80));
        // Suffixes: names under it, not the name itself, not a look-alike, no address.
        let under = r("*.example.com");
        assert!(under.permits(&host("www.example.com"), 443));
        assert!(under.permits(&host("a.b.example.com"), 80));
        assert!(!under.permits(&host("example.com"), 443));
        assert!(!under.permits(&host("badexample.com"), 443));
        assert!(!r("*.example:80").permits(&host("x.example"), 443));
        // Addresses match as addresses, whatever the spelling.
        assert!(r("10.0.0.1:443").permits(&host("[::ffff:10.0.0.1]"), 443));
        assert!(!r("10.0.0.1:443").permits(&ip, 22));
        assert!(!r("a.example").permits(&ip, 80));
        assert!(r("[::1]:443").permits(&host("::1"), 443));
        // Everything, or every host at one port.
        assert!(r("*").permits(&ip, 22) && r("*").is_everything());
        assert!(r("*:443").permits(&a, 443) && !r("*:443").permits(&a, 22));
        assert!(!r("*:443").is_everything());
        for bad in [
            "a.*.com",
            "*a.com",
            "*.10.0.0.1",
            "a.example:x",
            "127.1",
            "",
        ] {
            let e = Rule::parse(bad).unwrap_err();
            assert!(e.starts_with("--allow "), "{bad:?}: {e}");
        }
        let list = Allow::parse(&["a.example:443".into(), "*.b.example".into()]).unwrap();
        assert!(list.permits(&a, 443) && list.permits(&host("x.b.example"), 8080));
        assert!(!list.permits(&a, 80) && !list.is_everything() && !list.is_empty());
        assert!(Allow::default().is_empty());
        assert_eq!(
            refusal(&host("example.org"), 443),
            "example.org:443 is not allowed: allow it with --allow example.org:443 or \
             --resolve example.org=IP[:PORT]"
        );
    }
}
