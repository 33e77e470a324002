//! Cellular radio (RRC) state machines shared by both directions of a link:
//! 3G UMTS and LTE, with the defaults of `../shared/reference/lab-facts.md` §2
//! (AT&T ARO / VideoOptimizer; Qian et al. MobiSys 2011, Huang et al. MobiSys 2012).
//!
//! The radio acts as a gate in front of each direction: [`Radio::admit`] tells, for a
//! packet arriving at the radio, when it may go on. Packets are never dropped by the
//! radio; during a promotion they wait. State follows lazily from the last activity, so
//! the radio needs no timer of its own.

use crate::time::{transmission_time, Time};
use crate::Direction;
use std::time::Duration;

/// 3G UMTS parameters.
///
/// ```text
///                 data (any size)                 burst > threshold
///      +------+  idle_to_dch   +-----+   +------+  fach_to_dch  +-----+
///      | IDLE | -------------> | DCH |   | FACH | ------------> | DCH |
///      +------+   (waits)      +-----+   +------+   (waits)     +-----+
///         ^                       |        ^   |  small burst: sent at fach_rate
///         |   fach_tail idle      |        |   +--+
///         +------------------- FACH <------+ dch_tail idle
/// ```
///
/// DCH falls to FACH after `dch_tail` without traffic, FACH to IDLE after `fach_tail`
/// more. In FACH, a direction whose buffered bytes (those not yet sent at `fach_rate`)
/// would exceed its threshold promotes the radio to DCH; smaller bursts go at `fach_rate`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct UmtsParams {
    /// DCH → FACH after this long without traffic (lab-facts: 5 s).
    pub dch_tail: Duration,
    /// FACH → IDLE after this long without traffic (lab-facts: 12 s).
    pub fach_tail: Duration,
    /// IDLE → DCH promotion delay (lab-facts average: 2.0 s).
    pub idle_to_dch: Duration,
    /// FACH → DCH promotion delay (lab-facts average: 1.5 s).
    pub fach_to_dch: Duration,
    /// Uplink RLC buffer threshold in bytes (lab-facts: 543).
    pub fach_threshold_up: usize,
    /// Downlink RLC buffer threshold in bytes (lab-facts: 475).
    pub fach_threshold_down: usize,
    /// FACH channel rate in bit/s. Not in lab-facts; 20 kbit/s is this project's
    /// assumption for "a low rate".
    pub fach_rate: u64,
}

impl Default for UmtsParams {
    fn default() -> Self {
        UmtsParams {
            dch_tail: Duration::from_secs(5),
            fach_tail: Duration::from_secs(12),
            idle_to_dch: Duration::from_millis(2000),
            fach_to_dch: Duration::from_millis(1500),
            fach_threshold_up: 543,
            fach_threshold_down: 475,
            fach_rate: 20_000,
        }
    }
}

/// LTE parameters.
///
/// ```text
///   +----------+  data: promotion (waits)  +------------------------+
///   | RRC_IDLE | ------------------------> | RRC_CONNECTED          |
///   +----------+                           |  continuous reception  |
///        ^                                 |   | inactivity idle    |
///        |                                 |   v                    |
///        |        tail since last data     |  short DRX (cycle 20ms)|
///        +-------------------------------- |   | short_drx_time     |
///                                          |   v                    |
///                                          |  long DRX (cycle 40ms) |
///                                          +------------------------+
/// ```
///
/// Any data returns the radio to continuous reception. In DRX a downlink packet waits for
/// the next on-duration (a multiple of the cycle after the DRX phase began); an uplink
/// packet goes at once. After `tail` without data the radio is IDLE again.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct LteParams {
    /// IDLE → CONNECTED promotion delay (lab-facts: 0.26 s).
    pub promotion: Duration,
    /// Continuous reception lasts this long after the last data (lab-facts: 0.1 s).
    pub inactivity: Duration,
    /// Short DRX cycle (lab-facts: 20 ms).
    pub short_drx_cycle: Duration,
    /// How long short DRX lasts before long DRX. Not in lab-facts; one short cycle
    /// (20 ms) is this project's assumption.
    pub short_drx_time: Duration,
    /// Long DRX cycle (lab-facts: 40 ms).
    pub long_drx_cycle: Duration,
    /// Time from the last data to IDLE (lab-facts: about 10–11.5 s; 11.5 s here).
    pub tail: Duration,
}

impl Default for LteParams {
    fn default() -> Self {
        LteParams {
            promotion: Duration::from_millis(260),
            inactivity: Duration::from_millis(100),
            short_drx_cycle: Duration::from_millis(20),
            short_drx_time: Duration::from_millis(20),
            long_drx_cycle: Duration::from_millis(40),
            tail: Duration::from_millis(11_500),
        }
    }
}

/// Which radio to emulate.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum RadioSpec {
    /// 3G UMTS: IDLE, CELL_FACH, CELL_DCH.
    Umts(UmtsParams),
    /// LTE: RRC_IDLE and RRC_CONNECTED with DRX.
    Lte(LteParams),
}

impl RadioSpec {
    /// Parses `3g`/`umts` or `lte`, the default parameters, optionally followed by
    /// `:NAME=DURATION,...` overrides (durations as `50ms` or `5s`): for 3g `dch_tail`,
    /// `fach_tail`, `idle_to_dch`, `fach_to_dch`; for lte `promotion`, `inactivity`,
    /// `tail`. Scaled timers let a test or a shortened session keep the radio's behaviour
    /// relative to its think time.
    pub fn parse(s: &str) -> Result<RadioSpec, String> {
        let (kind, overrides) = s.split_once(':').unwrap_or((s, ""));
        let mut spec = match kind.to_ascii_lowercase().as_str() {
            "3g" | "umts" => RadioSpec::Umts(UmtsParams::default()),
            "lte" | "4g" => RadioSpec::Lte(LteParams::default()),
            _ => return Err(format!("unknown radio '{s}': use 3g or lte")),
        };
        for kv in overrides.split(',').filter(|kv| !kv.trim().is_empty()) {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("radio '{s}': {kv:?} is not NAME=DURATION"))?;
            let d = parse_duration(v.trim())
                .ok_or_else(|| format!("radio '{s}': {v:?} is not a duration (50ms, 5s)"))?;
            let slot = match (&mut spec, k.trim()) {
                (RadioSpec::Umts(p), "dch_tail") => &mut p.dch_tail,
                (RadioSpec::Umts(p), "fach_tail") => &mut p.fach_tail,
                (RadioSpec::Umts(p), "idle_to_dch") => &mut p.idle_to_dch,
                (RadioSpec::Umts(p), "fach_to_dch") => &mut p.fach_to_dch,
                (RadioSpec::Lte(p), "promotion") => &mut p.promotion,
                (RadioSpec::Lte(p), "inactivity") => &mut p.inactivity,
                (RadioSpec::Lte(p), "tail") => &mut p.tail,
                (_, other) => return Err(format!("radio '{s}': no timer {other:?} for {kind}")),
            };
            *slot = d;
        }
        Ok(spec)
    }
}

/// `50ms`, `1.5s`, `2s`.
fn parse_duration(v: &str) -> Option<Duration> {
    let (num, scale) = if let Some(n) = v.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1.0)
    } else {
        return None;
    };
    let x: f64 = num.trim().parse().ok()?;
    (x.is_finite() && x >= 0.0).then(|| Duration::from_secs_f64(x * scale))
}

/// A radio state, for reports and tests.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RrcState {
    /// Idle (both radios).
    Idle,
    /// A promotion is under way; packets wait.
    Promoting,
    /// UMTS CELL_FACH.
    Fach,
    /// UMTS CELL_DCH.
    Dch,
    /// LTE connected, continuous reception.
    Continuous,
    /// LTE connected, short DRX.
    ShortDrx,
    /// LTE connected, long DRX.
    LongDrx,
}

/// The radio state machine. Starts in IDLE.
#[derive(Clone, Debug)]
pub struct Radio {
    spec: RadioSpec,
    /// Last instant with traffic (a packet released); `None` before any.
    last: Option<Time>,
    /// UMTS: true if the state as of `last` was DCH (else FACH).
    in_dch: bool,
    promo_until: Time,
    /// UMTS: when each direction's FACH transmissions end.
    fach_busy: [Time; 2],
    promotions: u64,
}

impl Radio {
    /// A radio in IDLE.
    pub fn new(spec: RadioSpec) -> Radio {
        Radio {
            spec,
            last: None,
            in_dch: false,
            promo_until: Time::ZERO,
            fach_busy: [Time::ZERO; 2],
            promotions: 0,
        }
    }

    /// Number of promotions so far.
    pub fn promotions(&self) -> u64 {
        self.promotions
    }

    /// The state at `t` (not earlier than the last admitted packet).
    pub fn state(&self, t: Time) -> RrcState {
        if t < self.promo_until {
            return RrcState::Promoting;
        }
        let Some(last) = self.last else {
            return RrcState::Idle;
        };
        let idle = t - last;
        match self.spec {
            RadioSpec::Umts(p) => {
                if self.in_dch {
                    if idle < p.dch_tail {
                        RrcState::Dch
                    } else if idle < p.dch_tail + p.fach_tail {
                        RrcState::Fach
                    } else {
                        RrcState::Idle
                    }
                } else if idle < p.fach_tail {
                    RrcState::Fach
                } else {
                    RrcState::Idle
                }
            }
            RadioSpec::Lte(p) => {
                if idle >= p.tail {
                    RrcState::Idle
                } else if idle < p.inactivity {
                    RrcState::Continuous
                } else if idle < p.inactivity + p.short_drx_time {
                    RrcState::ShortDrx
                } else {
                    RrcState::LongDrx
                }
            }
        }
    }

    fn promote(&mut self, at: Time, delay: Duration) -> Time {
        self.promotions += 1;
        self.promo_until = at + delay;
        self.in_dch = true;
        self.last = Some(self.promo_until);
        self.promo_until
    }

    fn touch(&mut self, t: Time) {
        self.last = Some(self.last.map_or(t, |l| l.max(t)));
    }

    /// A packet of `len` bytes reaches the radio at `at` going `dir`: returns when it may
    /// go on (`at` if the radio is ready).
    pub fn admit(&mut self, dir: Direction, at: Time, len: usize) -> Time {
        if at < self.promo_until {
            return self.promo_until;
        }
        let state = self.state(at);
        match self.spec {
            RadioSpec::Umts(p) => match state {
                RrcState::Idle => self.promote(at, p.idle_to_dch),
                RrcState::Fach => {
                    let d = dir.index();
                    let pending = if self.fach_busy[d] > at {
                        ((self.fach_busy[d] - at).as_secs_f64() * p.fach_rate as f64 / 8.0) as usize
                    } else {
                        0
                    };
                    let threshold = match dir {
                        Direction::Up => p.fach_threshold_up,
                        Direction::Down => p.fach_threshold_down,
                    };
                    if pending + len > threshold {
                        self.promote(at, p.fach_to_dch)
                    } else {
                        let start = at.max(self.fach_busy[d]);
                        let finish = start + transmission_time(len, p.fach_rate);
                        self.fach_busy[d] = finish;
                        self.in_dch = false;
                        self.touch(finish);
                        finish
                    }
                }
                _ => {
                    self.in_dch = true;
                    self.touch(at);
                    at
                }
            },
            RadioSpec::Lte(p) => {
                let release = match state {
                    RrcState::Idle => return self.promote(at, p.promotion),
                    RrcState::ShortDrx | RrcState::LongDrx if dir == Direction::Down => {
                        let last = self.last.expect("connected implies activity");
                        let short_start = last + p.inactivity;
                        let (start, cycle) = if state == RrcState::ShortDrx {
                            (short_start, p.short_drx_cycle)
                        } else {
                            (short_start + p.short_drx_time, p.long_drx_cycle)
                        };
                        let c = cycle.as_nanos().max(1) as u64;
                        let k = (at - start).as_nanos() as u64;
                        start + Duration::from_nanos(k.div_ceil(c) * c)
                    }
                    _ => at,
                };
                self.touch(release);
                release
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Time {
        Time::from_millis(x)
    }

    #[test]
    fn umts_idle_promotion_then_dch_then_tails() {
        let mut r = Radio::new(RadioSpec::Umts(UmtsParams::default()));
        assert_eq!(r.state(ms(0)), RrcState::Idle);
        // First packet waits the IDLE→DCH promotion; a reply during it waits too.
        assert_eq!(r.admit(Direction::Up, ms(100), 60), ms(2100));
        assert_eq!(r.admit(Direction::Down, ms(500), 1500), ms(2100));
        assert_eq!(r.state(ms(1000)), RrcState::Promoting);
        // Active in DCH: no added delay.
        assert_eq!(r.admit(Direction::Up, ms(3000), 1500), ms(3000));
        assert_eq!(r.state(ms(7999)), RrcState::Dch);
        assert_eq!(r.state(ms(8000)), RrcState::Fach);
        assert_eq!(r.state(ms(19_999)), RrcState::Fach);
        assert_eq!(r.state(ms(20_000)), RrcState::Idle);
        assert_eq!(r.admit(Direction::Up, ms(30_000), 60), ms(32_000));
        assert_eq!(r.promotions(), 2);
    }

    #[test]
    fn umts_fach_small_burst_at_low_rate_large_promotes() {
        let p = UmtsParams::default();
        let mut r = Radio::new(RadioSpec::Umts(p));
        r.admit(Direction::Up, ms(0), 60); // promotes, DCH from 2000 ms
        let fach_at = ms(2000 + 5000 + 10);
        assert_eq!(r.state(fach_at), RrcState::Fach);
        // 100 bytes at 20 kbit/s: 40 ms on FACH, no promotion.
        assert_eq!(
            r.admit(Direction::Up, fach_at, 100),
            fach_at + Duration::from_millis(40)
        );
        assert_eq!(r.state(fach_at + Duration::from_millis(41)), RrcState::Fach);
        // A 600-byte uplink packet exceeds the 543-byte buffer: FACH→DCH.
        let t = fach_at + Duration::from_millis(100);
        assert_eq!(r.admit(Direction::Up, t, 600), t + p.fach_to_dch);
        assert_eq!(r.state(t + p.fach_to_dch), RrcState::Dch);
    }

    #[test]
    fn umts_fach_buffer_accumulates_per_direction() {
        let p = UmtsParams::default();
        let mut r = Radio::new(RadioSpec::Umts(p));
        r.admit(Direction::Up, ms(0), 60);
        let t = ms(2000 + 5000 + 10);
        // 4 × 120 bytes down = 480 > 475: the fourth promotes.
        for i in 0..3 {
            let rel = r.admit(Direction::Down, t, 120);
            assert_eq!(rel, t + Duration::from_millis(48 * (i + 1)));
        }
        assert_eq!(r.admit(Direction::Down, t, 120), t + p.fach_to_dch);
    }

    #[test]
    fn lte_promotion_drx_and_tail() {
        let p = LteParams::default();
        let mut r = Radio::new(RadioSpec::Lte(p));
        assert_eq!(r.admit(Direction::Down, ms(0), 100), ms(260));
        // Continuous reception: no delay.
        assert_eq!(r.admit(Direction::Down, ms(300), 100), ms(300));
        assert_eq!(r.state(ms(399)), RrcState::Continuous);
        // Short DRX from 400 ms: downlink waits for the next 20 ms boundary.
        assert_eq!(r.state(ms(405)), RrcState::ShortDrx);
        assert_eq!(r.admit(Direction::Down, ms(405), 100), ms(420));
        // Long DRX: last data at 420, short DRX 520..540, long from 540, cycle 40.
        assert_eq!(r.state(ms(600)), RrcState::LongDrx);
        assert_eq!(r.admit(Direction::Down, ms(600), 100), ms(620));
        // Uplink in DRX goes at once.
        assert_eq!(r.admit(Direction::Up, ms(900), 100), ms(900));
        // Tail: idle 11.5 s after the last data, then promotion again.
        assert_eq!(r.state(ms(900 + 11_499)), RrcState::LongDrx);
        assert_eq!(r.state(ms(900 + 11_500)), RrcState::Idle);
        assert_eq!(r.admit(Direction::Up, ms(20_000), 60), ms(20_260));
    }

    #[test]
    fn parses_names() {
        assert!(matches!(RadioSpec::parse("3G"), Ok(RadioSpec::Umts(_))));
        assert!(matches!(RadioSpec::parse("lte"), Ok(RadioSpec::Lte(_))));
        assert!(RadioSpec::parse("5g").is_err());
        match RadioSpec::parse("3g:dch_tail=50ms,fach_to_dch=1.2s").unwrap() {
            RadioSpec::Umts(p) => {
                assert_eq!(p.dch_tail, Duration::from_millis(50));
                assert_eq!(p.fach_to_dch, Duration::from_millis(1200));
                assert_eq!(p.fach_tail, UmtsParams::default().fach_tail);
            }
            other => panic!("{other:?}"),
        }
        assert!(RadioSpec::parse("lte:tail=2s").is_ok());
        assert!(RadioSpec::parse("lte:dch_tail=2s").is_err());
        assert!(RadioSpec::parse("3g:dch_tail=fast").is_err());
    }
}
