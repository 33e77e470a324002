//! Virtual time: an instant on the link's own clock, in nanoseconds since the link started.
//!
//! Stages never read a clock; the caller passes `now` as a [`Time`]. The IO layer maps a
//! monotonic clock onto it, tests drive it by hand.

use std::ops::{Add, AddAssign, Sub};
use std::time::Duration;

/// An instant on the link's clock: nanoseconds since the link started.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(u64);

impl Time {
    /// The link's start.
    pub const ZERO: Time = Time(0);
    /// Later than any real instant.
    pub const MAX: Time = Time(u64::MAX);

    /// An instant `ns` nanoseconds after the start.
    pub const fn from_nanos(ns: u64) -> Time {
        Time(ns)
    }
    /// An instant `us` microseconds after the start.
    pub const fn from_micros(us: u64) -> Time {
        Time(us * 1_000)
    }
    /// An instant `ms` milliseconds after the start.
    pub const fn from_millis(ms: u64) -> Time {
        Time(ms * 1_000_000)
    }
    /// An instant `s` seconds after the start.
    pub const fn from_secs(s: u64) -> Time {
        Time(s * 1_000_000_000)
    }
    /// Nanoseconds since the start.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Seconds since the start, as a float.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Milliseconds since the start, as a float.
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
    /// The span from `earlier` to `self`, zero if `earlier` is later.
    pub fn since(self, earlier: Time) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl Add<Duration> for Time {
    type Output = Time;
    fn add(self, d: Duration) -> Time {
        Time(
            self.0
                .saturating_add(d.as_nanos().min(u64::MAX as u128) as u64),
        )
    }
}

impl AddAssign<Duration> for Time {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Time> for Time {
    type Output = Duration;
    fn sub(self, earlier: Time) -> Duration {
        self.since(earlier)
    }
}

/// Time to send `bytes` at `bits_per_sec`, rounded to the nearest nanosecond.
pub fn transmission_time(bytes: usize, bits_per_sec: u64) -> Duration {
    if bits_per_sec == 0 {
        return Duration::MAX;
    }
    let num = bytes as u128 * 8 * 1_000_000_000;
    let bps = bits_per_sec as u128;
    Duration::from_nanos(((num + bps / 2) / bps) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_and_measures() {
        let t = Time::from_millis(5);
        assert_eq!((t + Duration::from_micros(250)).as_nanos(), 5_250_000);
        assert_eq!(Time::from_millis(3) - t, Duration::ZERO);
        assert_eq!(t - Time::from_millis(3), Duration::from_millis(2));
        assert_eq!(Time::MAX + Duration::from_secs(1), Time::MAX);
    }

    #[test]
    fn transmission_time_of_a_full_packet() {
        // 1500 bytes at 12 Mbit/s take exactly 1 ms.
        assert_eq!(
            transmission_time(1500, 12_000_000),
            Duration::from_millis(1)
        );
        assert_eq!(transmission_time(1, 3), Duration::from_nanos(2_666_666_667));
    }
}
