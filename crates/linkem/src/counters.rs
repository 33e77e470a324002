//! Counters: packets and bytes per direction, drops by cause.

use crate::stage::DropCause;
use crate::Direction;
use std::fmt;

/// Counters of one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirCounters {
    /// Reads from the device: packets, or super-packets that each stand for several
    /// (see [`crate::packet::Offload`]).
    pub reads: u64,
    /// Packets that entered the link (a super-packet's segments counted one by one, as
    /// every packet and byte count here).
    pub packets_in: u64,
    /// Bytes that entered the link.
    pub bytes_in: u64,
    /// Packets delivered out of the link.
    pub packets_out: u64,
    /// Bytes delivered out of the link.
    pub bytes_out: u64,
    /// Packets dropped, indexed by [`DropCause::index`].
    pub drops: [u64; DropCause::ALL.len()],
    /// Bytes dropped, indexed by [`DropCause::index`].
    pub drop_bytes: [u64; DropCause::ALL.len()],
    /// Packets of a previous link's traffic, discarded: those waiting at the device when
    /// the link started (sent while no link ran), and, on a link that carries only the
    /// client's new flows ([`crate::LinkConfig::client_flows_only`]), those of
    /// connections from before its start.
    pub stale: u64,
}

impl DirCounters {
    /// Packets dropped for `cause`.
    pub fn dropped(&self, cause: DropCause) -> u64 {
        self.drops[cause.index()]
    }
    /// Packets dropped for any cause.
    pub fn dropped_total(&self) -> u64 {
        self.drops.iter().sum()
    }
}

/// Counters of both directions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Client → server.
    pub up: DirCounters,
    /// Server → client.
    pub down: DirCounters,
    /// Radio promotions.
    pub promotions: u64,
}

impl Counters {
    /// The counters of `dir`.
    pub fn dir(&self, dir: Direction) -> &DirCounters {
        match dir {
            Direction::Up => &self.up,
            Direction::Down => &self.down,
        }
    }
    /// The counters of `dir`, mutably.
    pub fn dir_mut(&mut self, dir: Direction) -> &mut DirCounters {
        match dir {
            Direction::Up => &mut self.up,
            Direction::Down => &mut self.down,
        }
    }
}

impl fmt::Display for Counters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, d) in [("up", &self.up), ("down", &self.down)] {
            write!(
                f,
                "{name:>4}: in {} pkts / {} B, out {} pkts / {} B, dropped",
                d.packets_in, d.bytes_in, d.packets_out, d.bytes_out
            )?;
            for c in DropCause::ALL {
                write!(f, " {}={}", c.name(), d.dropped(c))?;
            }
            writeln!(f)?;
        }
        if self.promotions > 0 {
            writeln!(f, "radio promotions: {}", self.promotions)?;
        }
        Ok(())
    }
}
