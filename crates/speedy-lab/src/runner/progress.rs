//! What the progress line counts, and its estimate of the time left.
//!
//! The estimate reckons in jobs (a load, or a browsing session of many rows), not rows:
//! the lanes finish their jobs side by side, so the time left is the jobs left times a
//! job's mean wall time, over the lanes taking them. Reckoned in rows, the first session
//! of the `cellular` study to end (20 rows after 8 minutes) promised 17 hours for a run of
//! 49 minutes.

use std::time::Duration;

/// Rows written and jobs finished so far.
#[derive(Debug, Default)]
pub(super) struct Progress {
    /// Rows written.
    pub rows: usize,
    /// Jobs finished (written or failed).
    jobs: usize,
    /// Their wall times, summed.
    job_time: Duration,
}

impl Progress {
    /// Notes a job that ended after `took`.
    pub fn job_done(&mut self, took: Duration) {
        self.jobs += 1;
        self.job_time += took;
    }

    /// The time left for `total_jobs` jobs on `lanes` lanes (`None` before a job ended).
    pub fn eta(&self, total_jobs: usize, lanes: usize) -> Option<Duration> {
        if self.jobs == 0 {
            return None;
        }
        let left = total_jobs.saturating_sub(self.jobs);
        let mean = self.job_time.as_secs_f64() / self.jobs as f64;
        let lanes = lanes.clamp(1, left.max(1));
        // Jobs run in rounds of `lanes`: the last round takes a whole job's time too.
        let rounds = left.div_ceil(lanes);
        Some(Duration::from_secs_f64(mean * rounds as f64))
    }
}

/// `1h05m`, `4m07s`; `?` while unknown.
pub(super) fn fmt_eta(eta: Option<Duration>) -> String {
    let Some(eta) = eta else {
        return "?".into();
    };
    let s = eta.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, s % 3600 / 60)
    } else {
        format!("{}m{:02}s", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reckons_in_jobs_over_the_lanes() {
        let mut p = Progress::default();
        assert_eq!(p.eta(10, 4), None);
        assert_eq!(fmt_eta(p.eta(10, 4)), "?");
        // Sessions of 8 minutes, 27 side by side: the first to end says one more round
        // for the 80 left on 27 lanes is 3 rounds, 24 minutes.
        p.job_done(Duration::from_secs(480));
        assert_eq!(p.eta(81, 27), Some(Duration::from_secs(3 * 480)));
        assert_eq!(fmt_eta(p.eta(81, 27)), "24m00s");
        // Loads of 2 s and 4 s: a mean of 3 s, 10 left on 4 lanes: 3 rounds.
        let mut p = Progress::default();
        p.job_done(Duration::from_secs(2));
        p.job_done(Duration::from_secs(4));
        assert_eq!(p.eta(12, 4), Some(Duration::from_secs(9)));
        // More lanes than jobs left: one round; none left: nothing.
        assert_eq!(p.eta(3, 4), Some(Duration::from_secs(3)));
        assert_eq!(p.eta(2, 4), Some(Duration::ZERO));
        assert_eq!(fmt_eta(Some(Duration::from_secs(3 * 3600 + 65))), "3h01m");
    }
}
