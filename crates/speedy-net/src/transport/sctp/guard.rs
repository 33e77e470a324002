//! What one end lets a peer make it hold ([`DataGuard`]): the bounds on received DATA
//! that the SCTP stack's receive-window check leaves open.
//!
//! `sctp-proto` (0.10) drops a DATA chunk once its receive buffer (4 MiB) is full, unless
//! the chunk's TSN is below the highest TSN received: that one is "a missing chunk" and
//! is taken whatever the buffer holds. So a peer that sends one chunk far ahead (TSN +
//! 100,000, while the buffer has room) and then every TSN below it made the stack hold
//! all of them: 56 MB of such chunks, each the start of a message that never ends, took a
//! server from 17 to 90 MB (`speedy/tests/abuse_sctp_mux.rs`), and nothing bounded it.
//! The stack also keeps every chunk above its cumulative TSN until the gap below them
//! fills, outside the buffer it counts; and it counts user data only, so 4 MiB of 1-byte
//! chunks is four million of its chunk records.
//!
//! The guard sees each DATA chunk before the stack does and drops it (as a full buffer
//! would: a peer that keeps to the protocol sends it again) when taking it would go over
//! one of these bounds, each above what a peer that keeps to the receive window reaches:
//!
//! - [`HELD_LIMIT`] bytes of user data taken and not yet delivered to the session (counted
//!   once per TSN; a delivered message gives its bytes back), and [`HELD_MESSAGES`]
//!   message ends among them;
//! - [`AHEAD_LIMIT`] bytes and [`AHEAD_CHUNKS`] chunks above the cumulative TSN we last
//!   acknowledged (what the stack keeps until the gap fills);
//! - a fragment that does not end its message carries at least [`MIN_FRAGMENT`] bytes
//!   (senders cut messages at their path MTU; only a hostile one sends tiny fragments).

use super::packet::{checksum_ok, chunk, seal};
use std::collections::BTreeMap;

/// User-data bytes taken and not yet delivered: the receive window (4 MiB), plus room for
/// chunks the stack itself dropped at the window's edge (counted until they come again).
pub const HELD_LIMIT: usize = super::RECEIVE_BUFFER as usize + (1 << 20);
/// Messages ended (E bit) among them.
pub const HELD_MESSAGES: usize = 16 << 10;
/// User-data bytes above the cumulative TSN acknowledged.
pub const AHEAD_LIMIT: usize = super::RECEIVE_BUFFER as usize + (1 << 20);
/// Chunks above it.
pub const AHEAD_CHUNKS: usize = 64 << 10;
/// The least user data in a fragment that does not end its message.
pub const MIN_FRAGMENT: usize = 256;

/// The common header's length.
const COMMON: usize = 12;
/// The E (ending fragment) bit of a DATA chunk's flags.
const FLAG_E: u8 = 1;

/// An end's account of the peer's DATA (module docs).
#[derive(Debug, Default)]
pub struct DataGuard {
    /// The cumulative TSN acknowledged (before the first SACK: the peer's initial TSN
    /// - 1); `None` until known, when everything passes.
    cum: Option<u32>,
    /// TSNs taken above `cum`, and their user-data bytes.
    above: BTreeMap<u32, usize>,
    above_bytes: usize,
    /// User-data bytes and message ends taken and not yet delivered.
    held: usize,
    held_messages: usize,
}

/// Whether TSN `a` is after `b` (serial number arithmetic, RFC 1982).
fn after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// The Initiate Tag and initial TSN of an INIT or INIT ACK (the packet's first chunk).
pub fn initiation(packet: &[u8]) -> Option<(u32, u32)> {
    let (t, _, v) = super::packet::chunks(packet).next()?;
    if !matches!(t, chunk::INIT | chunk::INIT_ACK) || v.len() < 16 {
        return None;
    }
    let word = |i: usize| u32::from_be_bytes(v[i..i + 4].try_into().expect("4"));
    Some((word(0), word(12)))
}

/// The cumulative TSN a packet's SACK chunk acknowledges, if it has one.
pub fn sack_cum(packet: &[u8]) -> Option<u32> {
    super::packet::chunks(packet)
        .find(|(t, _, v)| *t == chunk::SACK && v.len() >= 4)
        .map(|(_, _, v)| u32::from_be_bytes(v[..4].try_into().expect("4")))
}

impl DataGuard {
    /// The peer's initial TSN (from its INIT or INIT ACK), if not known yet.
    pub fn start(&mut self, initial_tsn: u32) {
        if self.cum.is_none() {
            self.cum = Some(initial_tsn.wrapping_sub(1));
        }
    }

    /// We acknowledged everything up to `cum` (a SACK we sent).
    pub fn acked(&mut self, cum: u32) {
        if self.cum.is_some_and(|c| !after(cum, c)) {
            return;
        }
        self.cum = Some(cum);
        while let Some((&tsn, &n)) = self.above.first_key_value() {
            if after(tsn, cum) {
                break;
            }
            self.above.remove(&tsn);
            self.above_bytes -= n;
        }
    }

    /// A message of `n` bytes went to the session.
    pub fn delivered(&mut self, n: usize) {
        self.held = self.held.saturating_sub(n);
        self.held_messages = self.held_messages.saturating_sub(1);
    }

    /// Whether a new chunk of `n` bytes (ending its message with `end`) fits.
    fn fits(&self, n: usize, end: bool) -> bool {
        (end || n >= MIN_FRAGMENT)
            && self.held + n <= HELD_LIMIT
            && self.held_messages + usize::from(end) <= HELD_MESSAGES
            && self.above_bytes + n <= AHEAD_LIMIT
            && self.above.len() < AHEAD_CHUNKS
    }

    /// `packet` without the DATA chunks that do not fit the bounds (module docs),
    /// resealed; `None` when it goes as it is (nothing dropped, or its checksum is wrong:
    /// the stack drops it).
    pub fn filter(&mut self, packet: &[u8]) -> Option<Vec<u8>> {
        let cum = self.cum?;
        // (start, end) of each chunk, padding included, and whether it stays.
        let mut spans = Vec::new();
        let mut dropped = false;
        let mut at = COMMON;
        let mut checked = None;
        while let Some(head) = packet.get(at..at + 4) {
            let len = usize::from(u16::from_be_bytes([head[2], head[3]])).max(4);
            let end = (at + ((len + 3) & !3)).min(packet.len());
            let mut keep = true;
            if head[0] == chunk::DATA && len >= 16 && at + 8 <= packet.len() {
                let tsn = u32::from_be_bytes(packet[at + 4..at + 8].try_into().expect("4"));
                let (n, ends) = (len - 16, head[1] & FLAG_E != 0);
                // Old TSNs and ones taken already are the stack's duplicates.
                if after(tsn, cum) && !self.above.contains_key(&tsn) {
                    if !self.fits(n, ends) {
                        keep = false;
                    } else if *checked.get_or_insert_with(|| checksum_ok(packet)) {
                        self.above.insert(tsn, n);
                        self.above_bytes += n;
                        self.held += n;
                        self.held_messages += usize::from(ends);
                    }
                }
            }
            dropped |= !keep;
            spans.push((at, end, keep));
            at = end;
        }
        if !dropped || !checked.unwrap_or_else(|| checksum_ok(packet)) {
            return None;
        }
        let mut out = Vec::with_capacity(packet.len());
        out.extend_from_slice(&packet[..COMMON]);
        for (s, e, keep) in spans {
            if keep {
                out.extend_from_slice(&packet[s..e]);
            }
        }
        seal(&mut out);
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::sctp::packet::chunks;

    /// A packet of DATA chunks (TSN, user-data length, flags).
    fn data(tsns: &[(u32, usize, u8)]) -> Vec<u8> {
        let mut p = vec![0x13, 0x88, 0x13, 0x88, 0, 0, 0, 1, 0, 0, 0, 0];
        for &(tsn, n, flags) in tsns {
            let len = 16 + n;
            p.extend_from_slice(&[chunk::DATA, flags, (len >> 8) as u8, len as u8]);
            p.extend_from_slice(&tsn.to_be_bytes());
            p.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 53]);
            p.resize(p.len() + n, 7);
            while p.len() % 4 != 0 {
                p.push(0);
            }
        }
        seal(&mut p);
        p
    }

    fn tsns(p: &[u8]) -> Vec<u32> {
        chunks(p)
            .filter(|(t, _, _)| *t == chunk::DATA)
            .map(|(_, _, v)| u32::from_be_bytes(v[..4].try_into().unwrap()))
            .collect()
    }

    #[test]
    fn data_within_the_bounds_passes_unchanged_and_counts_once() {
        let mut g = DataGuard::default();
        // Unknown start: everything passes.
        assert!(g.filter(&data(&[(5, 1000, 3)])).is_none());
        assert_eq!(g.held, 0);
        g.start(100);
        assert!(g.filter(&data(&[(100, 1400, 2), (101, 1400, 1)])).is_none());
        // Old and repeated TSNs pass and count once.
        assert!(g.filter(&data(&[(50, 1400, 3), (100, 1400, 2)])).is_none());
        assert_eq!((g.held, g.held_messages, g.above_bytes), (2800, 1, 2800));
        g.acked(101);
        assert_eq!((g.held, g.above_bytes), (2800, 0));
        g.acked(90); // an older SACK changes nothing
        assert_eq!(g.cum, Some(101));
        g.delivered(2800);
        assert_eq!((g.held, g.held_messages), (0, 0));
    }

    #[test]
    fn a_peer_filling_in_below_a_far_tsn_is_held_to_the_bounds() {
        let mut g = DataGuard::default();
        g.start(1);
        assert!(g.filter(&data(&[(100_000, 1400, 2)])).is_none());
        // In order from the start, each the beginning of a message that never ends, and
        // acknowledged as it goes (the cumulative TSN follows): the held bytes stop them.
        let mut passed = 0;
        for tsn in 1..40_000u32 {
            let p = data(&[(tsn, 1400, 2)]);
            match g.filter(&p) {
                None => passed += 1,
                Some(q) => {
                    assert!(checksum_ok(&q));
                    assert!(tsns(&q).is_empty());
                }
            }
            g.acked(tsn);
        }
        assert!(g.held <= HELD_LIMIT, "{}", g.held);
        assert_eq!(passed, (HELD_LIMIT - 1400) / 1400);
        // Messages delivered give room back.
        g.delivered(1400 * 100);
        assert!(g.filter(&data(&[(50_000, 1400, 3)])).is_none());
    }

    #[test]
    fn chunks_above_a_gap_and_tiny_ones_are_held_to_the_bounds() {
        // A gap at the start that never fills; complete messages above it, delivered:
        // the chunks above the cumulative TSN are what bounds them.
        let mut g = DataGuard::default();
        g.start(1);
        for tsn in 2..200_000u32 {
            if g.filter(&data(&[(tsn, 1, 3)])).is_none() {
                g.delivered(1);
            }
        }
        assert_eq!(g.above.len(), AHEAD_CHUNKS);
        // Tiny fragments that do not end a message are dropped.
        let mut g = DataGuard::default();
        g.start(1);
        let q = g
            .filter(&data(&[(1, 10, 2), (2, 300, 0)]))
            .expect("one dropped");
        assert_eq!(tsns(&q), [2]);
        // Message ends are held to HELD_MESSAGES while undelivered.
        let mut g = DataGuard::default();
        g.start(1);
        for tsn in 1..=HELD_MESSAGES as u32 + 10 {
            let _ = g.filter(&data(&[(tsn, 8, 3)]));
            g.acked(tsn);
        }
        assert_eq!(g.held_messages, HELD_MESSAGES);
        // A bad checksum is left for the stack.
        let mut p = data(&[(HELD_MESSAGES as u32 + 20, 100, 3)]);
        p[8] ^= 1;
        assert!(g.filter(&p).is_none());
    }
}
