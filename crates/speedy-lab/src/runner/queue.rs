//! The run's loads, one queue per network, shared by every lane. A lane keeps taking
//! loads of the network it is on; when that network has none left it moves to the first
//! network that has, while the other lanes finish the last loads of the one it left. Networks run one after another, as before, but overlap at their ends: a run no
//! longer waits at each network's end for its slowest load with the other lanes idle.

use super::plan::Job;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Per network, the jobs no lane has taken yet.
pub(super) struct Queues {
    /// Per network, its jobs left and whether a lane has taken one yet.
    nets: Mutex<Vec<(VecDeque<Job>, bool)>>,
    /// Set when a lane gave up: the others take no more loads.
    stopped: AtomicBool,
}

impl Queues {
    /// `todo` sorted into `networks` queues, each in `todo`'s order.
    pub fn new(networks: usize, todo: &[Job]) -> Queues {
        let mut nets = vec![(VecDeque::new(), false); networks];
        for j in todo {
            nets[j.network].0.push_back(j.clone());
        }
        Queues {
            nets: Mutex::new(nets),
            stopped: AtomicBool::new(false),
        }
    }

    /// The next job for a lane on network `on` (`None`: a lane not open yet): one of
    /// `on`'s while it has any, else the first of the first network that has one; with
    /// whether it begins its network after another network began (the run's first
    /// network, whichever it is, does not count). `None` when no job is left or the run
    /// was stopped.
    pub fn take(&self, on: Option<usize>) -> Option<(Job, bool)> {
        if self.is_stopped() {
            return None;
        }
        let mut nets = self.nets.lock().expect("lock");
        let n = on
            .filter(|&n| !nets[n].0.is_empty())
            .or_else(|| nets.iter().position(|(q, _)| !q.is_empty()))?;
        let another_began = nets.iter().any(|(_, entered)| *entered);
        let (queue, entered) = &mut nets[n];
        let first = !std::mem::replace(entered, true);
        queue.pop_front().map(|job| (job, first && another_began))
    }

    /// Queues `job` again, after its network's other jobs.
    pub fn push_back(&self, job: Job) {
        let mut nets = self.nets.lock().expect("lock");
        nets[job.network].0.push_back(job);
    }

    /// Whether no job is left to take (or the run was stopped).
    pub fn is_done(&self) -> bool {
        self.is_stopped()
            || self
                .nets
                .lock()
                .expect("lock")
                .iter()
                .all(|(q, _)| q.is_empty())
    }

    /// Stops the run: no lane takes another job.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }

    fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(index: usize, network: usize) -> Job {
        Job {
            index,
            network,
            visits: vec![0],
            variant: 0,
            run: 0,
            retry: false,
        }
    }

    fn taken(q: &Queues, on: Option<usize>) -> Option<(usize, usize)> {
        q.take(on).map(|(j, _)| (j.index, j.network))
    }

    #[test]
    fn a_lane_keeps_its_network_then_moves_to_the_first_with_work() {
        let todo = [job(0, 0), job(1, 0), job(2, 1), job(3, 1), job(4, 2)];
        let q = Queues::new(3, &todo);
        // A lane set up on network 1 takes network 1's jobs first.
        assert_eq!(taken(&q, Some(1)), Some((2, 1)));
        // A lane set up on none takes the first network's.
        assert_eq!(taken(&q, None), Some((0, 0)));
        assert_eq!(taken(&q, Some(1)), Some((3, 1)));
        // Network 1 is empty: its lane moves to network 0, the first with work.
        assert_eq!(taken(&q, Some(1)), Some((1, 0)));
        assert_eq!(taken(&q, Some(0)), Some((4, 2)));
        assert!(q.is_done());
        assert_eq!(taken(&q, Some(2)), None);
    }

    #[test]
    fn a_job_queued_again_goes_to_its_networks_end() {
        let q = Queues::new(2, &[job(0, 0), job(1, 0), job(2, 1)]);
        let (first, _) = q.take(Some(0)).expect("a job");
        q.push_back(Job {
            retry: true,
            ..first
        });
        assert_eq!(taken(&q, Some(0)), Some((1, 0)));
        let (again, _) = q.take(Some(0)).expect("the retry");
        assert_eq!((again.index, again.retry), (0, true));
        assert_eq!(taken(&q, Some(0)), Some((2, 1)));
    }

    #[test]
    fn says_which_job_begins_a_network_after_another() {
        // Network 0 has no job left (a resumed run, or --network): network 1 begins the
        // run, and only network 2's first job begins one after another.
        let q = Queues::new(3, &[job(0, 1), job(1, 1), job(2, 2), job(3, 2)]);
        let firsts: Vec<(usize, bool)> = std::iter::from_fn(|| q.take(None))
            .map(|(j, later)| (j.index, later))
            .collect();
        assert_eq!(firsts, [(0, false), (1, false), (2, true), (3, false)]);
    }

    #[test]
    fn a_stopped_run_hands_out_nothing() {
        let q = Queues::new(1, &[job(0, 0)]);
        assert!(!q.is_done());
        q.stop();
        assert!(q.is_done());
        assert_eq!(taken(&q, Some(0)), None);
    }
}
