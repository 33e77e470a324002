//! Mahimahi link traces (`../shared/reference/lab-facts.md` §5).
//!
//! A trace is a list of millisecond timestamps, one per line; each line is one
//! opportunity to deliver [`OPPORTUNITY_BYTES`] bytes. The trace repeats with a period equal
//! to its last timestamp. An opportunity that finds no packet waiting is lost, not saved.
//! A packet larger than what remains of an opportunity carries over: it keeps consuming
//! later opportunities and leaves at the one that completes it.
//!
//! Sizes follow the reference implementation, which counts a 4-byte packet-information
//! header on every packet and gives 1504 bytes per opportunity: a 1500-byte IP packet
//! uses exactly one opportunity, so a trace holding only `1` is a 12 Mbit/s link.

use crate::time::Time;
use std::sync::Arc;

/// Bytes one delivery opportunity carries.
pub const OPPORTUNITY_BYTES: usize = 1504;
/// Bytes counted per packet on top of its IP size (the reference's TUN header).
pub const PER_PACKET_OVERHEAD: usize = 4;

/// A parsed Mahimahi trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    stamps: Vec<u64>,
}

impl Trace {
    /// Parses a trace file's text. Blank lines are ignored.
    pub fn parse(text: &str) -> Result<Trace, String> {
        let mut stamps = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let v: u64 = line.parse().map_err(|_| {
                format!(
                    "trace line {}: '{line}' is not a whole number of milliseconds",
                    i + 1
                )
            })?;
            if let Some(&last) = stamps.last() {
                if v < last {
                    return Err(format!(
                        "trace line {}: timestamp {v} is smaller than the previous {last}",
                        i + 1
                    ));
                }
            }
            stamps.push(v);
        }
        match stamps.last() {
            None => Err("trace is empty".into()),
            Some(0) => Err("trace's last timestamp must be greater than 0".into()),
            Some(_) => Ok(Trace { stamps }),
        }
    }

    /// Reads and parses a trace file.
    pub fn load(path: &std::path::Path) -> Result<Trace, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read trace {}: {e}", path.display()))?;
        Trace::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The repeat period in milliseconds (the last timestamp).
    pub fn period_ms(&self) -> u64 {
        *self.stamps.last().expect("non-empty")
    }

    /// Opportunities per period.
    pub fn opportunities(&self) -> usize {
        self.stamps.len()
    }

    /// Mean capacity in bit/s, counting 1500 IP bytes per opportunity.
    pub fn mean_rate_bps(&self) -> f64 {
        self.stamps.len() as f64 * 1500.0 * 8.0 / (self.period_ms() as f64 / 1000.0)
    }
}

/// A pair of traces built into the program (`crates/linkem/traces/README.md`: recorded
/// with Saturator, Winstein et al., NSDI 2013, as distributed with Mahimahi).
pub struct BuiltInTrace {
    /// The name `--trace` and an experiment's `trace` key take.
    pub name: &'static str,
    /// What was recorded.
    pub about: &'static str,
    /// The downlink trace's text.
    pub down: &'static str,
    /// The uplink trace's text.
    pub up: &'static str,
}

/// The built-in cellular traces.
pub const BUILT_IN: &[BuiltInTrace] = &[
    BuiltInTrace {
        name: "tmobile-umts",
        about: "T-Mobile UMTS (3G), driving",
        down: include_str!("../../traces/TMobile-UMTS-driving.down"),
        up: include_str!("../../traces/TMobile-UMTS-driving.up"),
    },
    BuiltInTrace {
        name: "verizon-lte",
        about: "Verizon LTE, stationary",
        down: include_str!("../../traces/Verizon-LTE-short.down"),
        up: include_str!("../../traces/Verizon-LTE-short.up"),
    },
];

/// The downlink and uplink traces `spec` names: a built-in pair ([`BUILT_IN`]), or a
/// path prefix `P` (relative to `base`) with Mahimahi's `P.down` and `P.up` files.
pub fn trace_pair(spec: &str, base: &std::path::Path) -> Result<(Trace, Trace), String> {
    if let Some(b) = BUILT_IN.iter().find(|b| b.name == spec) {
        let parse =
            |text, dir| Trace::parse(text).map_err(|e| format!("built-in trace {spec}.{dir}: {e}"));
        return Ok((parse(b.down, "down")?, parse(b.up, "up")?));
    }
    let prefix = base.join(spec);
    let file = |dir: &str| {
        let mut p = prefix.clone().into_os_string();
        p.push(format!(".{dir}"));
        std::path::PathBuf::from(p)
    };
    let (down, up) = (file("down"), file("up"));
    if !down.exists() && !up.exists() {
        let names: Vec<&str> = BUILT_IN.iter().map(|b| b.name).collect();
        return Err(format!(
            "trace {spec:?}: neither a built-in trace ({}) nor a pair of files {} and {}",
            names.join(", "),
            down.display(),
            up.display()
        ));
    }
    Ok((Trace::load(&down)?, Trace::load(&up)?))
}

/// A position in the endless repetition of a trace.
#[derive(Clone, Debug)]
pub struct TraceCursor {
    trace: Arc<Trace>,
    cycle: u64,
    idx: usize,
}

impl TraceCursor {
    /// The first opportunity of the trace.
    pub fn new(trace: Arc<Trace>) -> TraceCursor {
        TraceCursor {
            trace,
            cycle: 0,
            idx: 0,
        }
    }

    fn time_of(&self, cycle: u64, idx: usize) -> Time {
        Time::from_millis(cycle * self.trace.period_ms() + self.trace.stamps[idx])
    }

    /// When the current opportunity happens.
    pub fn time(&self) -> Time {
        self.time_of(self.cycle, self.idx)
    }

    /// Moves to the next opportunity.
    pub fn step(&mut self) {
        self.idx += 1;
        if self.idx == self.trace.stamps.len() {
            self.idx = 0;
            self.cycle += 1;
        }
    }

    fn locate(&self, t: Time) -> (u64, usize) {
        let ms = t.as_nanos().div_ceil(1_000_000);
        let period = self.trace.period_ms();
        let stamps = &self.trace.stamps;
        // The last stamp equals the period, so the answer may lie in the previous cycle.
        let first = (ms / period).saturating_sub(1);
        for cycle in first..first + 3 {
            let need = ms.saturating_sub(cycle * period);
            let idx = stamps.partition_point(|&s| s < need);
            if idx < stamps.len() {
                return (cycle, idx);
            }
        }
        unreachable!("a later cycle always has an opportunity")
    }

    /// The first opportunity at or after `t` (regardless of the cursor).
    pub fn first_at_or_after(&self, t: Time) -> Time {
        let (c, i) = self.locate(t);
        self.time_of(c, i)
    }

    /// Skips to the first opportunity at or after `t`; earlier ones are lost.
    pub fn seek(&mut self, t: Time) {
        let (c, i) = self.locate(t);
        if (c, i) > (self.cycle, self.idx) {
            self.cycle = c;
            self.idx = i;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stage::queue::QueueSpec;
    use crate::stage::rate::{Bottleneck, Server};
    use crate::stage::testutil::{drain, pkt};
    use crate::stage::Stage;

    #[test]
    fn built_in_traces_parse_and_have_their_documented_means() {
        // The means in traces/README.md, to 0.01 Mbit/s.
        let want = [("tmobile-umts", 2.02, 0.94), ("verizon-lte", 5.03, 5.95)];
        for (name, down, up) in want {
            let (d, u) = trace_pair(name, std::path::Path::new("/nonexistent")).unwrap();
            let mbit = |t: &Trace| (t.mean_rate_bps() / 1e4).round() / 100.0;
            println!("{name}: {} / {} Mbit/s", mbit(&d), mbit(&u));
            assert_eq!((mbit(&d), mbit(&u)), (down, up), "{name}");
        }
        let e = trace_pair("nope", std::path::Path::new("/tmp")).unwrap_err();
        assert!(
            e.contains("tmobile-umts") && e.contains("/tmp/nope.down"),
            "{e}"
        );
    }

    fn link(text: &str) -> Bottleneck {
        Bottleneck::new(
            QueueSpec::Infinite,
            Server::Trace(Arc::new(Trace::parse(text).unwrap())),
        )
    }

    #[test]
    fn parses_and_rejects() {
        let t = Trace::parse("0\n5\n5\n\n10\n").unwrap();
        assert_eq!(t.period_ms(), 10);
        assert_eq!(t.opportunities(), 4);
        assert!(Trace::parse("").unwrap_err().contains("empty"));
        assert!(Trace::parse("0\n").unwrap_err().contains("greater than 0"));
        assert!(Trace::parse("5\n3\n").unwrap_err().contains("line 2"));
        assert!(Trace::parse("1\nx\n").unwrap_err().contains("line 2"));
        assert_eq!(Trace::parse("1").unwrap().mean_rate_bps(), 12_000_000.0);
    }

    #[test]
    fn a_trace_of_one_is_twelve_megabit() {
        let mut b = link("1");
        let mut drops = Vec::new();
        for i in 0..100 {
            b.enqueue(Time::ZERO, pkt(i, 1500), &mut drops);
        }
        let out = drain(&mut b, Time::MAX, &mut drops);
        let ms: Vec<_> = out.iter().map(|(t, _)| t.as_nanos() / 1_000_000).collect();
        assert_eq!(ms, (1..=100).collect::<Vec<_>>());
    }

    #[test]
    fn repeated_timestamps_deliver_several_packets_and_trace_repeats() {
        let mut b = link("2\n2\n2\n4");
        let mut drops = Vec::new();
        for i in 0..8 {
            b.enqueue(Time::ZERO, pkt(i, 1500), &mut drops);
        }
        let out = drain(&mut b, Time::MAX, &mut drops);
        let ms: Vec<_> = out.iter().map(|(t, _)| t.as_nanos() / 1_000_000).collect();
        assert_eq!(ms, vec![2, 2, 2, 4, 6, 6, 6, 8]);
    }

    #[test]
    fn unused_opportunities_are_lost() {
        let mut b = link("1");
        let mut drops = Vec::new();
        // Nothing is queued for 50 ms: those 50 opportunities are not saved up.
        b.enqueue(Time::from_micros(50_500), pkt(0, 1500), &mut drops);
        b.enqueue(Time::from_micros(50_500), pkt(1, 1500), &mut drops);
        let out = drain(&mut b, Time::MAX, &mut drops);
        let ms: Vec<_> = out.iter().map(|(t, _)| t.as_nanos() / 1_000_000).collect();
        assert_eq!(ms, vec![51, 52]);
    }

    #[test]
    fn small_packets_share_and_large_carry_over() {
        let mut b = link("1");
        let mut drops = Vec::new();
        // Three 496-byte packets (500 with overhead) fit one opportunity of 1504 bytes.
        for i in 0..3 {
            b.enqueue(Time::ZERO, pkt(i, 496), &mut drops);
        }
        // A 1000-byte packet after them: 4 bytes left at 1 ms, carries over to 2 ms.
        b.enqueue(Time::ZERO, pkt(3, 1000), &mut drops);
        let out = drain(&mut b, Time::MAX, &mut drops);
        let ms: Vec<_> = out.iter().map(|(t, _)| t.as_nanos() / 1_000_000).collect();
        assert_eq!(ms, vec![1, 1, 1, 2]);
    }

    #[test]
    fn packet_waits_for_next_opportunity_after_arrival() {
        let mut b = link("10\n20");
        let mut drops = Vec::new();
        b.enqueue(Time::from_millis(21), pkt(0, 1500), &mut drops);
        assert_eq!(b.next_wakeup(), Some(Time::from_millis(30)));
        let out = drain(&mut b, Time::MAX, &mut drops);
        assert_eq!(out[0].0, Time::from_millis(30));
    }

    #[test]
    fn mean_rate_of_a_bursty_trace_under_load() {
        let text: String = (1..=1000u64)
            .flat_map(|ms| std::iter::repeat_n(ms, (ms % 3) as usize))
            .map(|ms| format!("{ms}\n"))
            .collect();
        let trace = Trace::parse(&text).unwrap();
        let mean = trace.mean_rate_bps();
        let mut b = link(&text);
        let mut drops = Vec::new();
        for i in 0..5000 {
            b.enqueue(Time::ZERO, pkt(i, 1500), &mut drops);
        }
        let out = drain(&mut b, Time::MAX, &mut drops);
        let secs = out.last().unwrap().0.as_secs_f64();
        let rate = 5000.0 * 1500.0 * 8.0 / secs;
        assert!((rate / mean - 1.0).abs() < 0.01, "{rate} vs {mean}");
    }
}
