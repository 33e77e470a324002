//! Intervals on changes: the mean change of a variant against its baseline, the verdict a
//! summary prints, and the change between two runs of an experiment (`speedy lab
//! compare`) with its permutation test.
//!
//! # Definitions
//!
//! * **Mean change interval**: the same two-level bootstrap as the overall speedup's
//!   (pages drawn with replacement, then each drawn page's runs, baseline and variant
//!   independently); each resample's pooled means give `100 × (variant − baseline) /
//!   baseline`, and the interval is the 2.5th and 97.5th percentiles of those.
//! * **Verdict** of an interval on a speedup: faster when its low end is above 1, slower
//!   when its high end is below 1, otherwise *no detectable difference*.
//! * **Run-to-run change** (`compare`): the geometric mean, over the pages both runs
//!   loaded, of `mean(B) / mean(A)` per page, as a percent change of load time (negative:
//!   B is faster); the interval is the two-level bootstrap above. Its p-value comes from
//!   a stratified permutation test: under "no difference", a page's loads in A and in B
//!   are exchangeable, so each permutation shuffles every page's pooled loads between A
//!   and B (keeping each side's count) and recomputes the statistic; the p-value is the
//!   share of [`PERMUTATIONS`] permutations at least as far from no change as the
//!   observed one (two-sided, with the observed one counted, so never 0).

use super::{
    bootstrap, mean, overall_speedup, resampled_mean, seed_for, usable_pairs, Ci, Rng, Speedup,
};

/// One page's two samples of load times (baseline and variant, or A and B), ms.
pub type Pair = (Vec<f64>, Vec<f64>);

/// Permutations of the permutation test.
pub const PERMUTATIONS: usize = 2000;

/// A change in percent with its 95% interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Change {
    /// The change, percent (negative: less load time, faster).
    pub pct: f64,
    /// Its 95% bootstrap interval, percent.
    pub ci: Ci,
}

/// What an interval on a speedup lets one say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The whole interval is above 1.
    Faster,
    /// The whole interval is below 1.
    Slower,
    /// The interval holds 1.
    NoDetectableDifference,
}

impl Verdict {
    /// The verdict of an interval on a speedup (or on any ratio where above 1 is faster).
    pub fn of_speedup(ci: &Ci) -> Verdict {
        if ci.low > 1.0 {
            Verdict::Faster
        } else if ci.high < 1.0 {
            Verdict::Slower
        } else {
            Verdict::NoDetectableDifference
        }
    }

    /// The verdict of an interval on a change of load time in percent (negative: faster).
    pub fn of_change(ci: &Ci) -> Verdict {
        if ci.high < 0.0 {
            Verdict::Faster
        } else if ci.low > 0.0 {
            Verdict::Slower
        } else {
            Verdict::NoDetectableDifference
        }
    }

    /// How the summary spells it.
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoDetectableDifference => "no detectable difference",
        }
    }
}

impl Speedup {
    /// The verdict of this speedup's interval.
    pub fn verdict(&self) -> Verdict {
        Verdict::of_speedup(&self.ci)
    }
}

/// The mean change of the pooled loads of `pairs` (per page: the baseline's load times,
/// the variant's), with its two-level bootstrap interval (see the module documentation).
/// `None` when no page has loads on both sides.
pub fn mean_change(pairs: &[(Vec<f64>, Vec<f64>)], seed: u64) -> Option<Change> {
    let pairs = usable_pairs(pairs);
    if pairs.is_empty() {
        return None;
    }
    let pooled = |side: fn(&Pair) -> &Vec<f64>| -> f64 {
        let all: Vec<f64> = pairs.iter().flat_map(|p| side(p).iter().copied()).collect();
        mean(&all).unwrap_or(f64::NAN)
    };
    let (b, v) = (pooled(|p| &p.0), pooled(|p| &p.1));
    let pct = 100.0 * (v - b) / b;
    let ci = bootstrap(seed, |rng| {
        let (mut sb, mut nb, mut sv, mut nv) = (0.0, 0usize, 0.0, 0usize);
        for _ in 0..pairs.len() {
            let (pb, pv) = pairs[rng.below(pairs.len())];
            sb += resampled_mean(pb, rng) * pb.len() as f64;
            nb += pb.len();
            sv += resampled_mean(pv, rng) * pv.len() as f64;
            nv += pv.len();
        }
        let (mb, mv) = (sb / nb as f64, sv / nv as f64);
        100.0 * (mv - mb) / mb
    });
    Some(Change { pct, ci })
}

/// The change from run A to run B of one network × variant: per page, A's and B's load
/// times of the pages both loaded.
#[derive(Clone, Debug, PartialEq)]
pub struct RunChange {
    /// Geometric-mean change of load time over the pages, percent, with its interval.
    pub change: Change,
    /// Two-sided p-value of the stratified permutation test.
    pub p: f64,
    /// Pages compared.
    pub pages: usize,
}

/// The change from A to B over paired pages (`pairs`: per page, A's and B's load times),
/// with its interval and permutation p-value (see the module documentation). The change
/// and its interval are [`overall_speedup`]'s with A as the baseline, turned into a change
/// of load time (`1 / speedup − 1`). `None` when no page has loads in both.
pub fn run_change(pairs: &[Pair], names: &[&str]) -> Option<RunChange> {
    let mut parts = vec!["compare"];
    parts.extend_from_slice(names);
    let s = overall_speedup(pairs, seed_for(&parts))?;
    let pct = |speedup: f64| 100.0 * (1.0 / speedup - 1.0);
    let pairs = usable_pairs(pairs);
    let observed = -s.speedup.ln();
    parts[0] = "permute";
    let mut rng = Rng::new(seed_for(&parts));
    let mut at_least = 1usize;
    let mut pool = Vec::new();
    for _ in 0..PERMUTATIONS {
        let mut sum = 0.0;
        for (a, b) in &pairs {
            pool.clear();
            pool.extend(a.iter().chain(b.iter()).copied());
            // Fisher-Yates over the first a.len() places: A's share of this permutation.
            for i in 0..a.len() {
                let j = i + rng.below(pool.len() - i);
                pool.swap(i, j);
            }
            let (pa, pb) = pool.split_at(a.len());
            sum += (mean(pb).unwrap_or(f64::NAN) / mean(pa).unwrap_or(f64::NAN)).ln();
        }
        if (sum / pairs.len() as f64).abs() >= observed.abs() - 1e-12 {
            at_least += 1;
        }
    }
    Some(RunChange {
        change: Change {
            pct: pct(s.speedup),
            ci: Ci {
                low: pct(s.ci.high),
                high: pct(s.ci.low),
            },
        },
        p: at_least as f64 / (PERMUTATIONS + 1) as f64,
        pages: s.pages,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(base: f64, spread: f64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| base + spread * (i as f64 - n as f64 / 2.0))
            .collect()
    }

    #[test]
    fn a_clear_change_is_detected_and_an_absent_one_is_not() {
        let same: Vec<_> = (0..6)
            .map(|p| {
                let b = 1000.0 + 200.0 * p as f64;
                (page(b, 20.0, 5), page(b + 5.0, 20.0, 5))
            })
            .collect();
        let r = run_change(&same, &["t", "same"]).unwrap();
        assert!(r.change.ci.contains(0.0), "{r:?}");
        assert!(r.p > 0.05, "{r:?}");
        assert_eq!(
            Verdict::of_change(&r.change.ci),
            Verdict::NoDetectableDifference
        );
        let slower: Vec<_> = (0..6)
            .map(|p| {
                let b = 1000.0 + 200.0 * p as f64;
                (page(b, 20.0, 5), page(b * 1.2, 20.0, 5))
            })
            .collect();
        let r = run_change(&slower, &["t", "slower"]).unwrap();
        assert!((r.change.pct - 20.0).abs() < 0.5, "{r:?}");
        assert!(r.change.ci.low > 10.0, "{r:?}");
        assert!(r.p < 0.01, "{r:?}");
        assert_eq!(Verdict::of_change(&r.change.ci), Verdict::Slower);
    }

    #[test]
    fn the_mean_change_interval_holds_its_estimate_and_follows_the_pooled_means() {
        let pairs = vec![
            (vec![1000.0, 1100.0, 900.0], vec![800.0, 850.0, 750.0]),
            (vec![3000.0, 3300.0, 2700.0], vec![2400.0, 2500.0, 2600.0]),
        ];
        let c = mean_change(&pairs, 7).unwrap();
        // Pooled: baseline 2000, variant 1650.
        assert!((c.pct - -17.5).abs() < 1e-9, "{c:?}");
        assert!(c.ci.low <= c.pct && c.pct <= c.ci.high, "{c:?}");
        assert!(c.ci.high < 0.0, "{c:?}");
        assert_eq!(mean_change(&[(vec![], vec![1.0])], 7), None);
    }

    #[test]
    fn verdicts_read_the_interval_not_the_estimate() {
        let ci = |low, high| Ci { low, high };
        assert_eq!(Verdict::of_speedup(&ci(1.01, 1.2)), Verdict::Faster);
        assert_eq!(Verdict::of_speedup(&ci(0.8, 0.99)), Verdict::Slower);
        assert_eq!(
            Verdict::of_speedup(&ci(0.95, 1.3)),
            Verdict::NoDetectableDifference
        );
        assert_eq!(Verdict::of_change(&ci(-9.0, -1.0)), Verdict::Faster);
        assert_eq!(
            Verdict::of_change(&ci(-1.0, 3.0)).text(),
            "no detectable difference"
        );
    }
}
