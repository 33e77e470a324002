//! A load's TCP, read in the namespaces: each one's TCP MIB (segments sent, retransmitted,
//! retransmission timeouts: the server namespace holds only the replay servers, so its
//! figures are the sender's for every download; the client namespace only the loader),
//! and `ss -ti` samples of each server connection (congestion window, slow-start
//! threshold, RTT, bytes acknowledged).

use serde::{Deserialize, Serialize};

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

/// The last `ss -ti` sample of one server connection.
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

/// Parses `ss -tinH` output: a line with the addresses, then an indented line of
/// `key:value` fields, per socket. Sockets without a `cwnd` are skipped.
pub fn parse_ss(text: &str) -> Vec<ConnSample> {
    let mut out = Vec::new();
    let mut current: Option<ConnSample> = None;
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if !line.starts_with([' ', '\t']) {
            if let Some(c) = current.take().filter(|c| c.cwnd > 0) {
                out.push(c);
            }
            // [State] Recv-Q Send-Q Local Peer [Process]: the two address columns are the
            // ones holding a ':' port after the queues.
            let addrs: Vec<&str> = line
                .split_whitespace()
                .filter(|w| {
                    w.rsplit_once(':')
                        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
                })
                .collect();
            if addrs.len() >= 2 {
                current = Some(ConnSample {
                    local: addrs[0].to_string(),
                    peer: addrs[1].to_string(),
                    ..Default::default()
                });
            }
            continue;
        }
        let Some(c) = current.as_mut() else { continue };
        for w in line.split_whitespace() {
            let Some((k, v)) = w.split_once(':') else {
                if c.cc.is_empty() && matches!(w, "reno" | "cubic" | "bbr" | "bbr2" | "dctcp") {
                    c.cc = w.to_string();
                }
                continue;
            };
            match k {
                "cwnd" => c.cwnd = v.parse().unwrap_or(0),
                "ssthresh" => c.ssthresh = v.parse().ok(),
                "rtt" => {
                    c.rtt_ms = v
                        .split('/')
                        .next()
                        .and_then(|x| x.parse().ok())
                        .unwrap_or(0.0)
                }
                "bytes_acked" => c.bytes_acked = v.parse().unwrap_or(0),
                // `retrans:unacked/total`.
                "retrans" => {
                    c.retrans = v
                        .rsplit('/')
                        .next()
                        .and_then(|x| x.parse().ok())
                        .unwrap_or(0)
                }
                _ => {}
            }
        }
    }
    if let Some(c) = current.filter(|c| c.cwnd > 0) {
        out.push(c);
    }
    out
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
    fn reads_ss_samples() {
        let text = "ESTAB 0 0 10.0.1.1:8443 10.0.0.2:40312\n\t cubic wscale:7,7 rto:308 rtt:104.5/2.1 ato:40 mss:1448 cwnd:7 ssthresh:5 bytes_sent:90210 bytes_retrans:2896 bytes_acked:87315 segs_out:66 retrans:0/2 rcv_space:14480\n\
0 0 10.0.1.2:8443 10.0.0.2:40314\n\t bbr rtt:101/1 mss:1448 cwnd:12 bytes_acked:1 segs_out:2\n\
LISTEN 0 128 0.0.0.0:8443 0.0.0.0:*\n";
        let s = parse_ss(text);
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!(
            s[0],
            ConnSample {
                local: "10.0.1.1:8443".into(),
                peer: "10.0.0.2:40312".into(),
                cwnd: 7,
                ssthresh: Some(5),
                rtt_ms: 104.5,
                bytes_acked: 87315,
                retrans: 2,
                cc: "cubic".into(),
            }
        );
        assert_eq!(
            (s[1].cwnd, s[1].ssthresh, s[1].rtt_ms, s[1].cc.as_str()),
            (12, None, 101.0, "bbr")
        );
    }
}
