//! SCTP counters: how a process's associations recovered their losses (`speedy load`
//! writes them into its HAR as `_sctp`, `speedy serve --sctp-counters` into a file; the lab
//! takes their difference around each load).

use serde::{Deserialize, Serialize};

/// SCTP counters (every field counts events since the process started, or between two
/// readings after [`Counters::since`]). Every field is required when read: a counter
/// missing from a file is an error, never a 0.
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

/// How many counters [`Counters`] has.
pub const FIELDS: usize = 6;

impl Counters {
    /// The fields in declaration order.
    pub fn fields(&self) -> [u64; FIELDS] {
        [
            self.associations,
            self.data_chunks_in,
            self.sacks_in,
            self.t3_timeouts,
            self.fast_retransmissions,
            self.delayed_sack_timeouts,
        ]
    }

    /// Counters from their fields in declaration order.
    pub fn from_fields(f: [u64; FIELDS]) -> Counters {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (Counters, Counters) {
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
        (a, b)
    }

    #[test]
    fn differences_and_sums_go_field_by_field_and_never_below_zero() {
        let (a, b) = sample();
        let d = a.since(&b);
        assert_eq!(
            (d.associations, d.data_chunks_in, d.sacks_in, d.t3_timeouts),
            (2, 70, 0, 1)
        );
        assert_eq!((d.fast_retransmissions, d.delayed_sack_timeouts), (0, 7));
        assert_eq!(d.plus(&b).data_chunks_in, 100);
        assert_eq!(a.plus(&b).since(&a), b);
    }

    #[test]
    fn counters_round_trip_and_a_missing_counter_is_an_error() {
        let (a, _) = sample();
        let text = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<Counters>(&text).unwrap(), a);
        let err = serde_json::from_str::<Counters>(r#"{"associations":1}"#).unwrap_err();
        assert!(err.to_string().contains("missing field"), "{err}");
    }
}
