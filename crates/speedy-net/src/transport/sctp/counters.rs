//! How this process's SCTP associations recovered their losses, summed over all of them
//! and kept live: a program can report the totals while associations are still open
//! (`speedy load` writes them into its HAR as `_sctp`, `speedy serve --sctp-counters` into a
//! file), and the lab takes their difference around each load, as it does with the kernel's
//! TCP counters.

use std::sync::atomic::{AtomicU64, Ordering};

pub use speedy_records::sctp::Counters;
use speedy_records::sctp::FIELDS;

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

/// The process's totals, in [`Counters`]' field order.
static TOTALS: [AtomicU64; FIELDS] = [const { AtomicU64::new(0) }; FIELDS];

/// The totals over every association this process has had, open or ended, on either
/// stack: sctp-proto's summed per association, and usrsctp's own statistics of the
/// process (`usrsctp_get_stat`) when it ran.
pub fn totals() -> Counters {
    let usr = super::usrsctp::counters().fields();
    Counters::from_fields(std::array::from_fn(|i| {
        TOTALS[i].load(Ordering::Relaxed) + usr[i]
    }))
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
        let now = of_association(stats);
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
