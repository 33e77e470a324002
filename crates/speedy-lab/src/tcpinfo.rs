//! A load's TCP, read in the namespaces: each one's TCP MIB (segments sent, retransmitted,
//! retransmission timeouts: the server namespace holds only the replay servers, so its
//! figures are the sender's for every download; the client namespace only the loader),
//! and samples of each server connection as `ss -ti` prints them (congestion window,
//! slow-start threshold, RTT, bytes acknowledged), read over `sock_diag` netlink.

use serde::{Deserialize, Serialize};
use speedy_net::transport::sock_diag::DiagSocket;
#[cfg(test)]
use speedy_net::transport::sockinfo::TcpInfo;

/// TCP counters of one namespace (its own MIB: only that side's sockets count): in the
/// server namespace the replay servers', the sender's side of every download; in the
/// client namespace the loader's.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TcpMib {
    /// `Tcp: OutSegs`.
    pub out_segs: u64,
    /// `Tcp: RetransSegs`.
    pub retrans_segs: u64,
    /// `TcpExt: TCPTimeouts`.
    pub timeouts: u64,
    /// `Tcp: ActiveOpens`: connections this namespace opened (SYNs sent by `connect`).
    pub active_opens: u64,
}

/// Reads `Tcp: OutSegs RetransSegs ActiveOpens` and `TcpExt: TCPTimeouts` from the text of
/// `/proc/net/snmp` and `/proc/net/netstat` (a header line of names, then a line of values,
/// per group).
pub fn parse_tcp_mib(text: &str) -> Option<TcpMib> {
    let lines: Vec<&str> = text.lines().collect();
    let field = |group: &str, name: &str| -> Option<u64> {
        lines.windows(2).find_map(|w| {
            let (names, values) = (w[0].strip_prefix(group)?, w[1].strip_prefix(group)?);
            if names.split_whitespace().next()?.parse::<u64>().is_ok() {
                return None; // a values line, not a header
            }
            let i = names.split_whitespace().position(|n| n == name)?;
            values.split_whitespace().nth(i)?.parse().ok()
        })
    };
    Some(TcpMib {
        out_segs: field("Tcp:", "OutSegs")?,
        retrans_segs: field("Tcp:", "RetransSegs")?,
        timeouts: field("TcpExt:", "TCPTimeouts").unwrap_or(0),
        active_opens: field("Tcp:", "ActiveOpens")?,
    })
}

/// The last sample of one server connection (the figures `ss -ti` prints).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConnSample {
    /// Local `ip:port` (the server's).
    pub local: String,
    /// Peer `ip:port` (the loader's).
    pub peer: String,
    /// Congestion window, segments.
    pub cwnd: u32,
    /// Slow-start threshold, segments (`None` while still in the first slow start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssthresh: Option<u32>,
    /// Smoothed RTT, ms.
    pub rtt_ms: f64,
    /// Bytes the peer acknowledged.
    pub bytes_acked: u64,
    /// Segments retransmitted over the connection's life.
    pub retrans: u64,
    /// The congestion control the kernel runs on it (`ss` prints its name first).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cc: String,
}

impl ConnSample {
    /// The sample of a socket the kernel listed (`sock_diag`), as `ss -ti` would print
    /// it: `None` without a congestion window (nothing sent yet, or no `TCP_INFO`); the
    /// slow-start threshold only once set (below `ss`'s 0xFFFF).
    pub fn from_diag(d: &DiagSocket) -> Option<ConnSample> {
        let i = d.info.filter(|i| i.snd_cwnd > 0)?;
        Some(ConnSample {
            local: d.local.to_string(),
            peer: d.peer.to_string(),
            cwnd: i.snd_cwnd,
            ssthresh: (i.snd_ssthresh < 0xFFFF).then_some(i.snd_ssthresh),
            rtt_ms: f64::from(i.rtt_us) / 1000.0,
            bytes_acked: i.bytes_acked,
            retrans: u64::from(i.total_retrans),
            cc: d.cc.clone().unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_tcp_mib() {
        let text = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors\n\
Tcp: 1 200 120000 -1 5 12 0 0 0 900 1500 37 0 2 0\n\
TcpExt: SyncookiesSent TCPTimeouts TCPLossProbes\nTcpExt: 0 4 9\n";
        assert_eq!(
            parse_tcp_mib(text),
            Some(TcpMib {
                out_segs: 1500,
                retrans_segs: 37,
                timeouts: 4,
                active_opens: 5
            })
        );
        assert_eq!(parse_tcp_mib("Ip: a\nIp: 1\n"), None);
    }

    #[test]
    fn a_listed_socket_samples_as_ss_prints_it() {
        let info = TcpInfo {
            rtt_us: 104_500,
            snd_cwnd: 7,
            snd_ssthresh: 5,
            total_retrans: 2,
            bytes_acked: 87_315,
            ..Default::default()
        };
        let d = DiagSocket {
            local: "10.0.1.1:8443".parse().unwrap(),
            peer: "10.0.0.2:40312".parse().unwrap(),
            info: Some(info),
            cc: Some("cubic".into()),
        };
        assert_eq!(
            ConnSample::from_diag(&d),
            Some(ConnSample {
                local: "10.0.1.1:8443".into(),
                peer: "10.0.0.2:40312".into(),
                cwnd: 7,
                ssthresh: Some(5),
                rtt_ms: 104.5,
                bytes_acked: 87315,
                retrans: 2,
                cc: "cubic".into(),
            })
        );
        // Still in its first slow start: no threshold; no window: no sample.
        let first = DiagSocket {
            info: Some(TcpInfo {
                snd_ssthresh: 0x7fff_ffff,
                ..info
            }),
            ..d.clone()
        };
        assert_eq!(ConnSample::from_diag(&first).unwrap().ssthresh, None);
        let idle = DiagSocket {
            info: Some(TcpInfo {
                snd_cwnd: 0,
                ..info
            }),
            ..d.clone()
        };
        assert_eq!(ConnSample::from_diag(&idle), None);
        assert_eq!(ConnSample::from_diag(&DiagSocket { info: None, ..d }), None);
    }
}
