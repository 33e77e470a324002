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
    /// The fields in declaration order.
    fn fields(&self) -> [u64; 6] {
        [
            self.associations,
            self.data_chunks_in,
            self.sacks_in,
            self.t3_timeouts,
            self.fast_retransmissions,
            self.delayed_sack_timeouts,
        ]
    }

    fn from_fields(f: [u64; 6]) -> Counters {
        let [associations, data_chunks_in, sacks_in, t3_timeouts, fast_retransmissions, delayed_sack_timeouts] =
            f;
        Counters {
            associations,
            data_chunks_in,
            sacks_in,
            t3_timeouts,
            fast_retransmissions,
            delayed_sack_timeouts,
        }
    }

    /// Field by field, `op` of this reading's and `o`'s.
    fn zip(&self, o: &Counters, op: impl Fn(u64, u64) -> u64) -> Counters {
        let (a, b) = (self.fields(), o.fields());
        Counters::from_fields(std::array::from_fn(|i| op(a[i], b[i])))
    }

    /// What happened between `earlier` and this reading (a field that went down, as
    /// when a process restarted between the two, counts 0).
    pub fn since(&self, earlier: &Counters) -> Counters {
        self.zip(earlier, u64::saturating_sub)
    }

    /// The two readings added (the counters of several processes).
    pub fn plus(&self, o: &Counters) -> Counters {
        self.zip(o, |a, b| a + b)
    }

    /// One association's counters as its stack keeps them (`associations` is 1).
    pub(super) fn of_association(mut st: sctp_proto::AssociationStats) -> Counters {
        Counters {
            associations: 1,
            data_chunks_in: st.get_num_datas(),
            sacks_in: st.get_num_sacks(),
            t3_timeouts: st.get_num_t3timeouts(),
            fast_retransmissions: st.get_num_fast_retrans(),
            delayed_sack_timeouts: st.get_num_ack_timeouts(),
        }
    }
}

/// The process's totals, in [`Counters`]' field order.
static TOTALS: [AtomicU64; 6] = [const { AtomicU64::new(0) }; 6];

/// The totals over every association this process has had, open or ended.
pub fn totals() -> Counters {
    Counters::from_fields(std::array::from_fn(|i| TOTALS[i].load(Ordering::Relaxed)))
}

/// One association's share of the totals: it adds what its stack counted since the last
/// [`Tally::update`].
#[derive(Debug, Default)]
pub(super) struct Tally {
    seen: Counters,
}

impl Tally {
    /// Adds to the totals what the association's counters gained since the last call
    /// (the association itself on the first).
    pub(super) fn update(&mut self, stats: sctp_proto::AssociationStats) {
        let now = Counters::of_association(stats);
        if now == self.seen {
            return;
        }
        for (total, n) in TOTALS.iter().zip(now.since(&self.seen).fields()) {
            if n > 0 {
                total.fetch_add(n, Ordering::Relaxed);
            }
        }
        self.seen = now;
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
