//! When and at what priority a fetch's requests go out: `--priority-of N=PRIORITY`,
//! `--start N=SECS` and `--reprioritize SECS:N=PRIORITY`, by URL position. The parsers
//! here say what is wrong with a value; the caller names the flag it came from.

use std::collections::HashMap;
use std::time::Duration;

/// Per-URL priorities, delayed starts and reprioritizations, by URL position (from 0).
#[derive(Clone, Debug, Default)]
pub struct Schedule {
    /// The priority of a URL, instead of the fetch's default.
    pub(super) priority: HashMap<usize, u8>,
    /// How long after the connection is up a URL is requested, instead of at once.
    pub(super) start: HashMap<usize, Duration>,
    /// (when, position, priority): ask the server to send a URL at a new priority.
    pub(super) changes: Vec<(Duration, usize, u8)>,
}

impl Schedule {
    /// Adds `N=PRIORITY` (N from 1 to `urls`): that URL is requested at PRIORITY (0-7).
    pub fn add_priority(&mut self, v: &str, urls: usize) -> Result<(), String> {
        let (i, p) = v.split_once('=').ok_or("expected N=PRIORITY")?;
        self.priority.insert(position(i, urls)?, priority(p)?);
        Ok(())
    }

    /// Adds `N=SECS` (N from 1 to `urls`): that URL is requested SECS seconds after the
    /// connection is up.
    pub fn add_start(&mut self, v: &str, urls: usize) -> Result<(), String> {
        let (i, t) = v.split_once('=').ok_or("expected N=SECS")?;
        self.start.insert(position(i, urls)?, seconds(t)?);
        Ok(())
    }

    /// Adds `SECS:N=PRIORITY` (N from 1 to `urls`): SECS seconds after the connection is
    /// up, the server is asked to send that URL at PRIORITY from then on.
    pub fn add_change(&mut self, v: &str, urls: usize) -> Result<(), String> {
        let (t, (i, p)) = v
            .split_once(':')
            .and_then(|(t, r)| Some((t, r.split_once('=')?)))
            .ok_or("expected SECS:N=PRIORITY")?;
        self.changes
            .push((seconds(t)?, position(i, urls)?, priority(p)?));
        Ok(())
    }

    /// Whether it times requests on the connection (starts or changes), which makes
    /// sense for URLs of one origin only.
    pub fn is_timed(&self) -> bool {
        !self.start.is_empty() || !self.changes.is_empty()
    }
}

/// A URL position from 1 to `n`, as an index from 0.
fn position(s: &str, n: usize) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(i) if (1..=n).contains(&i) => Ok(i - 1),
        _ => Err(format!("{s:?} is not a URL position (1 to {n})")),
    }
}

/// A SPDY priority, 0 to 7.
fn priority(s: &str) -> Result<u8, String> {
    match s.trim().parse::<u8>() {
        Ok(p) if p <= 7 => Ok(p),
        _ => Err(format!("{s:?} is not a priority (0 to 7)")),
    }
}

/// Seconds from 0 to a day.
fn seconds(s: &str) -> Result<Duration, String> {
    match s.trim().parse::<f64>() {
        Ok(t) if t.is_finite() && (0.0..=86_400.0).contains(&t) => Ok(Duration::from_secs_f64(t)),
        _ => Err(format!("{s:?} is not seconds (0 to 86400)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_values_and_says_what_is_wrong() {
        let mut s = Schedule::default();
        s.add_priority("2=0", 3).unwrap();
        s.add_start("3=1.5", 3).unwrap();
        s.add_change("10:2=5", 3).unwrap();
        assert_eq!(s.priority[&1], 0);
        assert_eq!(s.start[&2], Duration::from_millis(1500));
        assert_eq!(s.changes, vec![(Duration::from_secs(10), 1, 5)]);
        assert!(s.is_timed());
        assert_eq!(s.add_priority("2", 3).unwrap_err(), "expected N=PRIORITY");
        assert_eq!(
            s.add_priority("4=0", 3).unwrap_err(),
            "\"4\" is not a URL position (1 to 3)"
        );
        assert_eq!(
            s.add_change("x:1=0", 3).unwrap_err(),
            "\"x\" is not seconds (0 to 86400)"
        );
        assert_eq!(
            s.add_start("1=-1", 3).unwrap_err(),
            "\"-1\" is not seconds (0 to 86400)"
        );
        assert_eq!(
            s.add_change("1:1=8", 3).unwrap_err(),
            "\"8\" is not a priority (0 to 7)"
        );
        assert!(!Schedule::default().is_timed());
    }
}
