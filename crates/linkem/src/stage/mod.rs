//! Pure emulator stages behind one small trait: [`Stage`].
//!
//! A stage takes packets with [`Stage::enqueue`], gives them back with
//! [`Stage::dequeue`] once their departure time has come, and tells the caller with
//! [`Stage::next_wakeup`] when it next has something to do. Stages never read a clock,
//! never sleep and never draw from a global random source: the time is always a parameter,
//! and random stages own a seeded [`crate::rng::Rng`].
//!
//! Departure times are exact: `dequeue(now)` returns `(t, packet)` with `t <= now` the
//! instant the packet left, even if the caller polled late. The next stage is fed with that
//! `t`, so late polling never accumulates into drift.

pub mod delay;
pub mod loss;
pub mod queue;
pub mod radio;
pub mod rate;
pub mod reorder;
pub mod trace;

use crate::packet::Packet;
use crate::time::Time;

/// Why a packet was dropped.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DropCause {
    /// The queue was full and the arriving packet was dropped (drop-tail).
    QueueTail,
    /// The queue was full and its oldest packet was dropped (drop-head).
    QueueHead,
    /// CoDel dropped the packet at dequeue.
    Codel,
    /// The loss model dropped the packet.
    Loss,
    /// Writing the packet to the TUN device failed.
    TunWrite,
}

impl DropCause {
    /// Every cause, in counter order.
    pub const ALL: [DropCause; 5] = [
        DropCause::QueueTail,
        DropCause::QueueHead,
        DropCause::Codel,
        DropCause::Loss,
        DropCause::TunWrite,
    ];
    /// Index into per-cause counter arrays.
    pub fn index(self) -> usize {
        self as usize
    }
    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            DropCause::QueueTail => "queue-tail",
            DropCause::QueueHead => "queue-head",
            DropCause::Codel => "codel",
            DropCause::Loss => "loss",
            DropCause::TunWrite => "tun-write",
        }
    }
}

/// A dropped packet, handed back so the caller can count it and reuse its buffer.
#[derive(Debug)]
pub struct Dropped {
    /// When it was dropped.
    pub at: Time,
    /// Why.
    pub cause: DropCause,
    /// The packet itself.
    pub packet: Packet,
}

/// Where stages put the packets they drop.
pub type Drops = Vec<Dropped>;

/// One step of a link direction.
///
/// Call order: any number of `enqueue(at, ..)` with non-decreasing `at`, interleaved with
/// `dequeue(now, ..)` calls with non-decreasing `now`; `at` is never earlier than the
/// `now` of a previous `dequeue` except for packets that the previous stage releases with
/// their exact departure time. `next_wakeup` is the earliest instant at which `dequeue` may
/// return a packet or change state (`None`: nothing pending).
pub trait Stage: Send {
    /// Offers `packet`, which reached this stage at `at`.
    fn enqueue(&mut self, at: Time, packet: Packet, drops: &mut Drops);
    /// Returns the next packet whose departure time is at or before `now`, with that time.
    fn dequeue(&mut self, now: Time, drops: &mut Drops) -> Option<(Time, Packet)>;
    /// The earliest instant at which `dequeue` may have something to return.
    fn next_wakeup(&self) -> Option<Time>;
}

/// Stages in series: each stage's departures are the next stage's arrivals.
pub struct Pipeline {
    stages: Vec<Box<dyn Stage>>,
}

impl Pipeline {
    /// A pipeline of `stages`, first to last. With no stage it passes packets through.
    pub fn new(mut stages: Vec<Box<dyn Stage>>) -> Pipeline {
        if stages.is_empty() {
            stages.push(Box::new(delay::Delay::fixed(std::time::Duration::ZERO)));
        }
        Pipeline { stages }
    }
    /// Number of stages.
    pub fn len(&self) -> usize {
        self.stages.len()
    }
    /// Always false: an empty pipeline holds one pass-through stage.
    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }
}

impl Stage for Pipeline {
    fn enqueue(&mut self, at: Time, packet: Packet, drops: &mut Drops) {
        self.stages[0].enqueue(at, packet, drops);
    }

    fn dequeue(&mut self, now: Time, drops: &mut Drops) -> Option<(Time, Packet)> {
        let n = self.stages.len();
        for i in 0..n.saturating_sub(1) {
            let (head, tail) = self.stages.split_at_mut(i + 1);
            while let Some((t, p)) = head[i].dequeue(now, drops) {
                tail[0].enqueue(t, p, drops);
            }
        }
        self.stages.last_mut()?.dequeue(now, drops)
    }

    fn next_wakeup(&self) -> Option<Time> {
        self.stages.iter().filter_map(|s| s.next_wakeup()).min()
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    use super::*;

    /// Drains `stage` in virtual time, stepping to each wake-up until `until`.
    pub fn drain(stage: &mut dyn Stage, until: Time, drops: &mut Drops) -> Vec<(Time, Packet)> {
        let mut out = Vec::new();
        let mut now = Time::ZERO;
        loop {
            while let Some(x) = stage.dequeue(now, drops) {
                out.push(x);
            }
            match stage.next_wakeup() {
                Some(t) if t <= until => now = now.max(t),
                _ => break,
            }
        }
        out
    }

    /// A packet of `len` bytes whose first bytes carry `id`.
    pub fn pkt(id: u32, len: usize) -> Packet {
        let mut p = Packet::zeroed(len.max(4));
        p.data[..4].copy_from_slice(&id.to_be_bytes());
        p.data.truncate(len.max(4));
        p
    }

    /// The id written by [`pkt`].
    pub fn id(p: &Packet) -> u32 {
        u32::from_be_bytes(p.data[..4].try_into().unwrap())
    }
}
