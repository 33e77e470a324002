//! How this process's SCTP associations recovered their losses, summed over all of them
//! and kept live: a program can report the totals while associations are still open
//! (`speedy load` writes them into its HAR as `_sctp`, `speedy serve --sctp-counters` into a
//! file), and the lab takes their difference around each load, as it does with the kernel's
//! TCP counters.

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};

/// SCTP counters (every field counts events since the process started, or between two
/// readings after [`Counters::since`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Associations set up (dialled or accepted).
    pub associations: u64,
    /// DATA chunks received.
    pub data_chunks_in: u64,
    /// SACK chunks received.
    pub sacks_in: u64,
    /// Retransmission timeouts (T3-rtx): outstanding DATA sent again after the RTO
    /// (at least RTO.Min, 1 s), with the congestion window cut to one packet.
    pub t3_timeouts: u64,
    /// DATA chunks sent again after three gap reports (fast retransmission).
    pub fast_retransmissions: u64,
    /// Expirations of the delayed-SACK timer (200 ms): a lone packet acknowledged late.
    pub delayed_sack_timeouts: u64,
}

impl Counters {
    /// What happened between `earlier` and this reading (a field that went down, as
    /// when a process restarted between the two, counts 0).
    pub fn since(&self, earlier: &Counters) -> Counters {
        Counters {
            associations: self.associations.saturating_sub(earlier.associations),
            data_chunks_in: self.data_chunks_in.saturating_sub(earlier.data_chunks_in),
            sacks_in: self.sacks_in.saturating_sub(earlier.sacks_in),
            t3_timeouts: self.t3_timeouts.saturating_sub(earlier.t3_timeouts),
            fast_retransmissions: self
                .fast_retransmissions
                .saturating_sub(earlier.fast_retransmissions),
            delayed_sack_timeouts: self
                .delayed_sack_timeouts
                .saturating_sub(earlier.delayed_sack_timeouts),
        }
    }

    /// The two readings added (the counters of several processes).
    pub fn plus(&self, o: &Counters) -> Counters {
        Counters {
            associations: self.associations + o.associations,
            data_chunks_in: self.data_chunks_in + o.data_chunks_in,
            sacks_in: self.sacks_in + o.sacks_in,
            t3_timeouts: self.t3_timeouts + o.t3_timeouts,
            fast_retransmissions: self.fast_retransmissions + o.fast_retransmissions,
            delayed_sack_timeouts: self.delayed_sack_timeouts + o.delayed_sack_timeouts,
        }
    }
}

/// The process's totals, in [`Counters`]' field order.
static TOTALS: [AtomicU64; 6] = [const { AtomicU64::new(0) }; 6];

/// The totals over every association this process has had, open or ended.
pub fn totals() -> Counters {
    let t = |i: usize| TOTALS[i].load(Ordering::Relaxed);
    Counters {
        associations: t(0),
        data_chunks_in: t(1),
        sacks_in: t(2),
        t3_timeouts: t(3),
        fast_retransmissions: t(4),
        delayed_sack_timeouts: t(5),
    }
}

/// One association's share of the totals: it adds what its stack counted since the last
/// [`Tally::update`].
#[derive(Debug)]
pub(super) struct Tally {
    seen: [u64; 5],
}

impl Tally {
    /// Counts one more association.
    pub(super) fn new() -> Tally {
        TOTALS[0].fetch_add(1, Ordering::Relaxed);
        Tally { seen: [0; 5] }
    }

    /// Adds to the totals what the association's counters gained since the last call.
    pub(super) fn update(&mut self, mut st: sctp_proto::AssociationStats) {
        let now = [
            st.get_num_datas(),
            st.get_num_sacks(),
            st.get_num_t3timeouts(),
            st.get_num_fast_retrans(),
            st.get_num_ack_timeouts(),
        ];
        for (i, (n, seen)) in now.iter().zip(self.seen.iter_mut()).enumerate() {
            if *n > *seen {
                TOTALS[i + 1].fetch_add(*n - *seen, Ordering::Relaxed);
                *seen = *n;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_and_sums_go_field_by_field_and_never_below_zero() {
        let a = Counters {
            associations: 3,
            data_chunks_in: 100,
            sacks_in: 40,
            t3_timeouts: 2,
            fast_retransmissions: 5,
            delayed_sack_timeouts: 7,
        };
        let b = Counters {
            associations: 1,
            data_chunks_in: 30,
            sacks_in: 50,
            t3_timeouts: 1,
            fast_retransmissions: 5,
            delayed_sack_timeouts: 0,
        };
        let d = a.since(&b);
        assert_eq!(
            (d.associations, d.data_chunks_in, d.sacks_in, d.t3_timeouts),
            (2, 70, 0, 1)
        );
        assert_eq!((d.fast_retransmissions, d.delayed_sack_timeouts), (0, 7));
        assert_eq!(d.plus(&b).data_chunks_in, 100);
        assert_eq!(a.plus(&b).since(&a), b);
    }
}
