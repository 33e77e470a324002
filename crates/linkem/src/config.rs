//! Parsing of command-line values (rates, times, loss) and the named network profiles of
//! `../shared/reference/lab-facts.md` §1.

use crate::stage::loss::LossModel;
use std::time::Duration;

/// Parses a rate in bit/s: a number with an optional unit `bit`, `kbit`, `mbit` or
/// `gbit` (decimal, case-insensitive), e.g. `2mbit`, `375kbit`, `1.5mbit`, `12000000`.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(format!(
            "rate '{s}' is not a number; e.g. 2mbit, 375kbit, 1.5mbit or 12000000"
        ));
    }
    let mult = match unit {
        "" | "bit" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        "bps" | "kbps" | "mbps" | "gbps" => {
            return Err(format!(
                "rate '{s}': '{unit}' is ambiguous (bytes or bits?); write the rate in bits, \
                 e.g. 2mbit, 375kbit, 1.5mbit or 12000000"
            ))
        }
        _ => {
            return Err(format!(
                "rate '{s}': unknown unit '{unit}'; use bit, kbit, mbit or gbit, \
                 e.g. 2mbit, 375kbit, 1.5mbit or 12000000"
            ))
        }
    };
    let v: f64 = num.parse().map_err(|_| {
        format!("rate '{s}': '{num}' is not a number; e.g. 2mbit, 375kbit, 1.5mbit or 12000000")
    })?;
    let bps = (v * mult).round();
    if bps.is_nan() || bps < 1.0 || !bps.is_finite() {
        return Err(format!("rate '{s}' must be at least 1 bit/s"));
    }
    if bps > 1e12 {
        return Err(format!("rate '{s}' is above 1000 gbit"));
    }
    Ok(bps as u64)
}

/// Parses a duration: a number of milliseconds, optionally suffixed `ms`, `us` or `s`
/// (`100`, `2.5ms`, `1s`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim().to_ascii_lowercase();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else {
        (t.as_str(), 1e-3)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("time '{s}': not a number of milliseconds (e.g. 100 or 2.5ms)"))?;
    if v.is_nan() || v < 0.0 || !v.is_finite() || v * scale > 3600.0 {
        return Err(format!("time '{s}' must be between 0 and 3600 s"));
    }
    Ok(Duration::from_secs_f64(v * scale))
}

/// A probability written `0.02` or `2%`.
pub fn parse_probability(s: &str) -> Result<f64, String> {
    parse_prob(s, "probability")
}

fn parse_prob(s: &str, what: &str) -> Result<f64, String> {
    let t = s.trim();
    let v = if let Some(p) = t.strip_suffix('%') {
        p.trim()
            .parse::<f64>()
            .map(|x| x / 100.0)
            .map_err(|_| format!("{what} '{s}' is not a number"))?
    } else {
        let v: f64 = t
            .parse()
            .map_err(|_| format!("{what} '{s}' is not a number"))?;
        if v > 1.0 {
            return Err(format!(
                "{what} '{s}' is above 1; write a fraction (0.01) or a percentage (1%)"
            ));
        }
        v
    };
    if !(0.0..=1.0).contains(&v) {
        return Err(format!(
            "{what} '{s}' must be between 0 and 1 (0% and 100%)"
        ));
    }
    Ok(v)
}

/// Parses a loss model: a probability (`0.01` or `1%`) for Bernoulli loss, or
/// `ge:p=P,r=R[,good=G,bad=B]` for Gilbert-Elliott (loss in BAD defaults to 1, in GOOD
/// to 0).
pub fn parse_loss(s: &str) -> Result<LossModel, String> {
    if let Some(rest) = s.trim().strip_prefix("ge:") {
        let (mut p, mut r, mut good, mut bad) = (None, None, 0.0, 1.0);
        for kv in rest.split(',').filter(|x| !x.is_empty()) {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("loss option '{kv}' is not key=value"))?;
            let v = parse_prob(v, &format!("loss option {k}"))?;
            match k {
                "p" => p = Some(v),
                "r" => r = Some(v),
                "good" => good = v,
                "bad" => bad = v,
                _ => {
                    return Err(format!(
                        "unknown Gilbert-Elliott option '{k}' (p, r, good, bad)"
                    ))
                }
            }
        }
        let (Some(p), Some(r)) = (p, r) else {
            return Err(
                "Gilbert-Elliott loss needs p (good→bad) and r (bad→good): ge:p=0.01,r=0.3".into(),
            );
        };
        return Ok(LossModel::GilbertElliott {
            p,
            r,
            loss_good: good,
            loss_bad: bad,
        });
    }
    let p = parse_prob(s, "loss")?;
    Ok(if p == 0.0 {
        LossModel::None
    } else {
        LossModel::Bernoulli { p }
    })
}

/// A named network condition.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Profile {
    /// Name for `--profile`.
    pub name: &'static str,
    /// Downlink rate, bit/s.
    pub down: u64,
    /// Uplink rate, bit/s.
    pub up: u64,
    /// Round-trip time added, ms (split evenly); `None` where the source gives none.
    pub rtt_ms: Option<u32>,
    /// Loss per direction (fraction).
    pub loss: f64,
    /// `3g` or `lte` for a radio state machine.
    pub radio: Option<&'static str>,
    /// Where the figures come from.
    pub source: &'static str,
    /// What was assumed, if anything.
    pub note: &'static str,
}

const fn p(
    name: &'static str,
    down: u64,
    up: u64,
    rtt_ms: Option<u32>,
    loss: f64,
    source: &'static str,
    note: &'static str,
) -> Profile {
    Profile {
        name,
        down,
        up,
        rtt_ms,
        loss,
        radio: None,
        source,
        note,
    }
}

const WP1: &str = "SPDY whitepaper, Table 1";
const WP2: &str = "SPDY whitepaper, Table 2 (loss sweep over cable)";
const WP3: &str = "SPDY whitepaper, Table 3 (RTT sweep over cable)";
const WPT: &str = "WebPageTest connectivity profile";
const NO_RTT: &str = "RTT not given by the source: none added (add --rtt)";

/// Every named profile (lab-facts §1, plus 3G and LTE with radio, lab-facts §2).
pub const PROFILES: &[Profile] = &[
    p(
        "whitepaper-dsl",
        2_000_000,
        375_000,
        Some(100),
        0.01,
        WP1,
        "RTT not given; 100 ms as in the same team's chart",
    ),
    p(
        "whitepaper-cable",
        4_000_000,
        1_000_000,
        None,
        0.01,
        WP1,
        NO_RTT,
    ),
    p(
        "whitepaper-loss-0",
        4_000_000,
        1_000_000,
        None,
        0.0,
        WP2,
        NO_RTT,
    ),
    p(
        "whitepaper-loss-0.5",
        4_000_000,
        1_000_000,
        None,
        0.005,
        WP2,
        NO_RTT,
    ),
    p(
        "whitepaper-loss-1",
        4_000_000,
        1_000_000,
        None,
        0.01,
        WP2,
        NO_RTT,
    ),
    p(
        "whitepaper-loss-1.5",
        4_000_000,
        1_000_000,
        None,
        0.015,
        WP2,
        NO_RTT,
    ),
    p(
        "whitepaper-loss-2",
        4_000_000,
        1_000_000,
        None,
        0.02,
        WP2,
        NO_RTT,
    ),
    p(
        "whitepaper-loss-2.5",
        4_000_000,
        1_000_000,
        None,
        0.025,
        WP2,
        NO_RTT,
    ),
    p(
        "whitepaper-rtt-20",
        4_000_000,
        1_000_000,
        Some(20),
        0.0,
        WP3,
        "loss held fixed; value not given: none added",
    ),
    p(
        "whitepaper-rtt-40",
        4_000_000,
        1_000_000,
        Some(40),
        0.0,
        WP3,
        "loss held fixed; value not given: none added",
    ),
    p(
        "whitepaper-rtt-60",
        4_000_000,
        1_000_000,
        Some(60),
        0.0,
        WP3,
        "loss held fixed; value not given: none added",
    ),
    p(
        "whitepaper-rtt-80",
        4_000_000,
        1_000_000,
        Some(80),
        0.0,
        WP3,
        "loss held fixed; value not given: none added",
    ),
    p(
        "whitepaper-rtt-120",
        4_000_000,
        1_000_000,
        Some(120),
        0.0,
        WP3,
        "loss held fixed; value not given: none added",
    ),
    p(
        "whitepaper-rtt-160",
        4_000_000,
        1_000_000,
        Some(160),
        0.0,
        WP3,
        "loss held fixed; value not given: none added",
    ),
    p(
        "whitepaper-rtt-200",
        4_000_000,
        1_000_000,
        Some(200),
        0.0,
        WP3,
        "loss held fixed; value not given: none added",
    ),
    p(
        "spdy-chart",
        2_000_000,
        386_000,
        Some(100),
        0.0,
        "\"Visualizing SPDY vs HTTP\" (Alexa top 300, no SSL)",
        "",
    ),
    p(
        "sctp-loss-1",
        5_000_000,
        5_000_000,
        Some(100),
        0.01,
        "\"SPDY-over-SCTP vs SPDY-over-TCP\" note",
        "",
    ),
    p(
        "sctp-loss-2",
        5_000_000,
        5_000_000,
        Some(100),
        0.02,
        "\"SPDY-over-SCTP vs SPDY-over-TCP\" note",
        "",
    ),
    p(
        "home-broadband",
        15_000_000,
        2_000_000,
        None,
        0.0,
        "\"Towards a SPDY-ier mobile web\" (control network)",
        "RTT was measured, not given: none added (add --rtt)",
    ),
    p("wpt-cable", 5_000_000, 1_000_000, Some(28), 0.0, WPT, ""),
    p("wpt-dsl", 1_500_000, 384_000, Some(50), 0.0, WPT, ""),
    p("wpt-fios", 20_000_000, 5_000_000, Some(4), 0.0, WPT, ""),
    p("wpt-dial", 49_000, 30_000, Some(120), 0.0, WPT, ""),
    p("wpt-lte", 12_000_000, 12_000_000, Some(70), 0.0, WPT, ""),
    p("wpt-3g", 1_600_000, 768_000, Some(300), 0.0, WPT, ""),
    p("wpt-3gfast", 1_600_000, 768_000, Some(150), 0.0, WPT, ""),
    p("wpt-3gslow", 780_000, 330_000, Some(200), 0.0, WPT, ""),
    p("wpt-3g-em", 400_000, 400_000, Some(400), 0.0, WPT, ""),
    p("wpt-edge", 240_000, 200_000, Some(840), 0.0, WPT, ""),
    p("wpt-2g", 280_000, 256_000, Some(800), 0.0, WPT, ""),
    p(
        "lighthouse-slow4g",
        1_638_400,
        1_638_400,
        Some(150),
        0.0,
        "Lighthouse default simulated profile (slow 4G)",
        "one throughput given: used both ways",
    ),
    Profile {
        radio: Some("3g"),
        ..p(
            "3g",
            1_600_000,
            768_000,
            Some(300),
            0.0,
            "WebPageTest 3G rates + UMTS radio (ARO defaults, lab-facts §2)",
            "",
        )
    },
    Profile {
        radio: Some("lte"),
        ..p(
            "lte",
            12_000_000,
            12_000_000,
            Some(70),
            0.0,
            "WebPageTest LTE rates + LTE radio (ARO defaults, lab-facts §2)",
            "",
        )
    },
];

/// Finds a profile by name (case-insensitive).
pub fn find_profile(name: &str) -> Result<&'static Profile, String> {
    PROFILES
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case(name))
        .ok_or_else(|| format!("unknown profile '{name}'; `speedy link --profiles` lists them"))
}

/// Formats a rate for people: `2 Mbit/s`, `375 kbit/s`.
pub fn format_rate(bps: u64) -> String {
    if bps >= 1_000_000 && bps.is_multiple_of(1000) {
        format!("{} Mbit/s", bps as f64 / 1e6)
    } else if bps >= 1000 {
        format!("{} kbit/s", bps as f64 / 1e3)
    } else {
        format!("{bps} bit/s")
    }
}

/// The profile table printed by `speedy link --profiles`.
pub fn profiles_table() -> String {
    let mut s = format!(
        "{:<20} {:>13} {:>13} {:>7} {:>6} {:>6}  source\n",
        "name", "down", "up", "RTT ms", "loss", "radio"
    );
    for p in PROFILES {
        let rtt = p.rtt_ms.map_or("-".into(), |r| r.to_string());
        s += &format!(
            "{:<20} {:>13} {:>13} {:>7} {:>5}% {:>6}  {}{}\n",
            p.name,
            format_rate(p.down),
            format_rate(p.up),
            rtt,
            p.loss * 100.0,
            p.radio.unwrap_or("-"),
            p.source,
            if p.note.is_empty() {
                String::new()
            } else {
                format!(" [{}]", p.note)
            }
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("2mbit"), Ok(2_000_000));
        assert_eq!(parse_rate("375kbit"), Ok(375_000));
        assert_eq!(parse_rate("1.5mbit"), Ok(1_500_000));
        assert_eq!(parse_rate("12000000"), Ok(12_000_000));
        assert_eq!(parse_rate("1Gbit"), Ok(1_000_000_000));
        assert_eq!(parse_rate("1638.4kbit"), Ok(1_638_400));
        assert!(parse_rate("2mbps").unwrap_err().contains("ambiguous"));
        assert!(parse_rate("2 furlongs")
            .unwrap_err()
            .contains("unknown unit"));
        assert!(parse_rate("0").unwrap_err().contains("at least"));
        assert!(parse_rate("mbit").unwrap_err().contains("not a number"));
        assert!(parse_rate("").is_err());
    }

    #[test]
    fn durations_and_loss() {
        assert_eq!(parse_duration("100"), Ok(Duration::from_millis(100)));
        assert_eq!(parse_duration("2.5ms"), Ok(Duration::from_micros(2500)));
        assert_eq!(parse_duration("1s"), Ok(Duration::from_secs(1)));
        assert!(parse_duration("-1").is_err());
        assert!(parse_duration("abc").is_err());
        assert_eq!(parse_loss("1%"), Ok(LossModel::Bernoulli { p: 0.01 }));
        assert_eq!(parse_loss("0.02"), Ok(LossModel::Bernoulli { p: 0.02 }));
        assert_eq!(parse_loss("0"), Ok(LossModel::None));
        assert!(parse_loss("5").unwrap_err().contains("percentage"));
        assert!(parse_loss("150%").is_err());
        assert!(matches!(
            parse_loss("ge:p=0.01,r=0.3"),
            Ok(LossModel::GilbertElliott { .. })
        ));
        assert!(parse_loss("ge:p=0.01").is_err());
    }

    #[test]
    fn profiles_cover_lab_facts() {
        for name in [
            "whitepaper-dsl",
            "whitepaper-cable",
            "spdy-chart",
            "sctp-loss-1",
            "wpt-cable",
            "wpt-2g",
            "lighthouse-slow4g",
            "home-broadband",
            "3g",
            "lte",
        ] {
            find_profile(name).unwrap();
        }
        assert_eq!(find_profile("3g").unwrap().radio, Some("3g"));
        let t = profiles_table();
        assert!(t.contains("SPDY whitepaper, Table 1"));
        assert_eq!(t.lines().count(), PROFILES.len() + 1);
        assert!(find_profile("nope").is_err());
    }
}
