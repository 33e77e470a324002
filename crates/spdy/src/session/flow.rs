//! Flow-control windows: their arithmetic, their checks and the policy for returning
//! credit, in one place (digest §5). The session decides *which* window a frame touches
//! and whether the negotiated version enforces it; everything about *how* a window moves
//! is here.
//!
//! Four windows per connection end, two types:
//!
//! | | stream (SPDY/3, 3.1) | session (SPDY/3.1) |
//! |---|---|---|
//! | send: our credit | [`Window`], starts at the peer's INITIAL_WINDOW_SIZE | [`Window`], starts at 64 KiB |
//! | receive: the peer's credit | [`RecvWindow`], starts at ours | [`RecvWindow`], starts at 64 KiB |
//!
//! - Sending DATA of n bytes consumes n from the stream and the session send windows
//!   ([`Window::consume`]); the scheduler sends only while both have [`Window::credit`].
//! - WINDOW_UPDATE adds its delta ([`Window::increase`]): a delta of 0 or a window past
//!   2^31-1 is the peer's fault ([`FlowError`]).
//! - A new SETTINGS_INITIAL_WINDOW_SIZE moves every open stream's send window by
//!   new − old ([`initial_window_delta`], [`Window::adjust`]); it may go negative (§5.1,
//!   §10.2 item 16), and the sender waits until WINDOW_UPDATEs make it positive again.
//! - Received DATA is counted against the receive windows ([`RecvWindow::receive`]),
//!   even on streams being ignored (§5.2); going below zero is a FLOW_CONTROL_ERROR.
//! - Credit goes back to the peer once the application has consumed half a window
//!   ([`RecvWindow::release`], the spdylay and netty policy of §5.1).
//!
//! Windows are `i64`, so nothing here can wrap whatever the peer sends.

use super::Violation;
use crate::frame::StreamId;

/// The SPDY default initial window (digest §5.1).
pub const DEFAULT_WINDOW: u32 = 65_536;
/// The largest window (2^31-1).
pub const MAX_WINDOW: i64 = 0x7fff_ffff;

/// What the peer did wrong to a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FlowError {
    /// WINDOW_UPDATE with delta 0 (§2.8).
    ZeroDelta,
    /// A WINDOW_UPDATE or an INITIAL_WINDOW_SIZE change took a send window past
    /// 2^31-1 (§5.1, §5.2).
    Overflow,
    /// The peer sent more DATA than the receive window allowed (§5.1, §5.2).
    Overrun,
}

/// Which window an error is about: it decides between RST_STREAM and GOAWAY.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    /// The session window (SPDY/3.1; stream id 0 in WINDOW_UPDATE).
    Session,
    /// One stream's window.
    Stream(StreamId),
}

impl Scope {
    /// The scope a WINDOW_UPDATE for `id` addresses: id 0 is the session (§2.8).
    pub fn of(id: StreamId) -> Scope {
        if id.0 == 0 {
            Scope::Session
        } else {
            Scope::Stream(id)
        }
    }
}

impl FlowError {
    /// The violation this error is at `scope`; [`Violation::action`] then picks the
    /// answer (RST_STREAM FLOW_CONTROL_ERROR for streams, GOAWAY for the session).
    pub fn at(self, scope: Scope) -> Violation {
        match (self, scope) {
            (FlowError::ZeroDelta, Scope::Session) => Violation::ZeroWindowDelta(StreamId(0)),
            (FlowError::ZeroDelta, Scope::Stream(id)) => Violation::ZeroWindowDelta(id),
            (FlowError::Overflow, Scope::Session) => Violation::SessionWindowOverflow,
            (FlowError::Overflow, Scope::Stream(id)) => Violation::StreamWindowOverflow(id),
            (FlowError::Overrun, Scope::Session) => Violation::SessionFlowControl,
            (FlowError::Overrun, Scope::Stream(id)) => Violation::StreamFlowControl(id),
        }
    }
}

/// Checks a WINDOW_UPDATE's delta before it is applied to anything: 1 ..= 2^31-1 (the
/// frame decoder already masked it to 31 bits), so 0 is the only bad value (§2.8).
pub(crate) fn check_delta(delta: u32) -> Result<(), FlowError> {
    if delta == 0 {
        Err(FlowError::ZeroDelta)
    } else {
        Ok(())
    }
}

/// The change a new SETTINGS_INITIAL_WINDOW_SIZE makes to the windows of open streams
/// (new − old, §5.1), or `None` for a value above 2^31-1: spdylay ignores those, and so
/// do we, in both directions.
pub(crate) fn initial_window_delta(old: u32, new: u32) -> Option<i64> {
    if i64::from(new) > MAX_WINDOW {
        None
    } else {
        Some(i64::from(new) - i64::from(old))
    }
}

/// The release threshold: credit goes back once half of `initial` (at least one byte)
/// has been consumed, so a WINDOW_UPDATE is at most one per half window (§5.1).
fn threshold(initial: u32) -> u32 {
    (initial / 2).max(1)
}

fn as_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A window of credit, in bytes; it may be negative after an INITIAL_WINDOW_SIZE shrink.
/// On its own it is a send window: the credit we have to send DATA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Window(i64);

impl Window {
    /// A window holding `initial` bytes of credit.
    pub fn new(initial: u32) -> Window {
        Window(i64::from(initial))
    }

    /// The credit left (negative when overdrawn by a settings change).
    pub fn get(self) -> i64 {
        self.0
    }

    /// How many bytes may be sent now: 0 while the window is not positive.
    pub fn credit(self) -> usize {
        usize::try_from(self.0.max(0)).unwrap_or(usize::MAX)
    }

    /// Takes `n` bytes of credit for DATA written. The scheduler checks
    /// [`Window::credit`] first; a window that is not enforced (SPDY/2, or the session
    /// window in SPDY/3) is still counted so that it is right if enforcement starts.
    pub fn consume(&mut self, n: usize) {
        self.0 = self.0.saturating_sub(as_i64(n));
    }

    /// Adds a WINDOW_UPDATE's credit. Past 2^31-1 is [`FlowError::Overflow`] and leaves
    /// the window as it was; the stream is reset or the session ends anyway.
    pub fn increase(&mut self, delta: u32) -> Result<(), FlowError> {
        check_delta(delta)?;
        self.adjust(i64::from(delta))
    }

    /// Moves the window by `delta` (an INITIAL_WINDOW_SIZE change, see
    /// [`initial_window_delta`]). Going negative is allowed (§5.1); past 2^31-1 is
    /// [`FlowError::Overflow`] and leaves the window as it was.
    pub fn adjust(&mut self, delta: i64) -> Result<(), FlowError> {
        let next = self.0.saturating_add(delta);
        if next > MAX_WINDOW {
            return Err(FlowError::Overflow);
        }
        self.0 = next;
        Ok(())
    }
}

/// A receive window: the credit the peer has left to send to us, and the bytes the
/// application consumed that have not yet gone back to the peer with WINDOW_UPDATE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RecvWindow {
    window: Window,
    released: u32,
}

impl RecvWindow {
    /// The window we announced (INITIAL_WINDOW_SIZE, or 64 KiB for the session).
    pub fn new(initial: u32) -> RecvWindow {
        RecvWindow {
            window: Window::new(initial),
            released: 0,
        }
    }

    /// The peer's credit as we count it.
    #[cfg(test)]
    pub fn get(&self) -> i64 {
        self.window.get()
    }

    /// Counts `n` received DATA bytes against the window. They are counted even when
    /// this returns [`FlowError::Overrun`] (the peer sent more than its credit), so the
    /// caller decides whether the version enforces this window.
    pub fn receive(&mut self, n: usize) -> Result<(), FlowError> {
        self.window.consume(n);
        if self.window.get() < 0 {
            Err(FlowError::Overrun)
        } else {
            Ok(())
        }
    }

    /// The application consumed `n` bytes: once half of `initial` is waiting and
    /// `may_update` (the window is enforced and the peer may still send), returns the
    /// delta of the WINDOW_UPDATE to send, already added back to the window. Otherwise
    /// the bytes wait for a later release (or for [`RecvWindow::grant`]).
    pub fn release(&mut self, n: usize, initial: u32, may_update: bool) -> Option<u32> {
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        self.released = self.released.saturating_add(n);
        if !may_update || self.released < threshold(initial) {
            return None;
        }
        let delta = std::mem::take(&mut self.released);
        self.window.0 += i64::from(delta);
        Some(delta)
    }

    /// Bytes consumed and not yet returned to the peer.
    pub fn unreturned(&self) -> u32 {
        self.released
    }

    /// We announced a new INITIAL_WINDOW_SIZE, `delta` from the old one. Growth applies
    /// to open streams at once (the peer adds it to its send windows, §5.1); a shrink
    /// does not, so DATA the peer sent before it saw our SETTINGS is still accepted.
    pub fn apply_initial_delta(&mut self, delta: i64) {
        if delta > 0 {
            self.window.0 = self.window.0.saturating_add(delta);
        }
    }

    /// Raises the session window towards `target` when SPDY/3.1 session flow control
    /// starts (at the opening of the session, or on the upgrade from SPDY/3): the peer
    /// starts at 64 KiB (§5.2), so it is granted `target` − 64 KiB plus whatever was
    /// released and not yet returned. Returns the WINDOW_UPDATE delta, if any, kept so
    /// that the window never passes 2^31-1.
    pub fn grant(&mut self, target: u32) -> Option<u32> {
        let want = i64::from(target.saturating_sub(DEFAULT_WINDOW))
            + i64::from(std::mem::take(&mut self.released));
        let room = MAX_WINDOW - self.window.get().clamp(0, MAX_WINDOW);
        let delta = want.min(room);
        if delta <= 0 {
            return None;
        }
        self.window.0 += delta;
        Some(u32::try_from(delta).expect("at most 2^31-1"))
    }
}

/// How strictly the peer's DATA is held to the windows we announced (digest §5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FlowControl {
    /// Every overrun is a FLOW_CONTROL_ERROR (RST_STREAM, or GOAWAY for the session).
    #[default]
    Strict,
    /// A peer that has never shown flow control (no WINDOW_UPDATE, no
    /// INITIAL_WINDOW_SIZE) may overrun our windows, as moby/spdystream does: the bytes
    /// are accepted and counted ([`crate::session::Stats::window_overrun_bytes`]) and
    /// memory stays bounded because the owner stops reading while its buffers are full.
    /// Such a peer is also not waited for: once it overruns, or once our sending has
    /// been stalled on its windows for the owner's stall timeout without a WINDOW_UPDATE,
    /// our send windows stop being enforced. A peer that has sent a WINDOW_UPDATE is
    /// held to strict rules from then on.
    Lenient,
}

impl std::str::FromStr for FlowControl {
    type Err = String;

    /// `strict` or `lenient`.
    fn from_str(s: &str) -> Result<FlowControl, String> {
        match s {
            "strict" => Ok(FlowControl::Strict),
            "lenient" => Ok(FlowControl::Lenient),
            _ => Err(format!("{s:?}: expected strict or lenient")),
        }
    }
}

impl std::fmt::Display for FlowControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FlowControl::Strict => "strict",
            FlowControl::Lenient => "lenient",
        })
    }
}

/// What the session has learnt about the peer's flow control: the decision table of
/// `docs/flow-control.md` in one place.
///
/// | situation | receive side | send side |
/// |---|---|---|
/// | SPDY/3.1 (ALPN, or prior knowledge as a client) | session window granted at once | session window enforced |
/// | plain TCP, first frame version 3, server: undecided | session credit granted once the peer has sent half of its 64 KiB (a 3.1 peer that waits for us would stall at 64 KiB) | the 3.1 session window enforced |
/// | … then a session WINDOW_UPDATE arrives | SPDY/3.1 | SPDY/3.1 |
/// | … then 32 KiB of stream credit but no session WINDOW_UPDATE | SPDY/3: stream windows only | session window no longer enforced |
/// | … or our sending stalled for the stall timeout with no session WINDOW_UPDATE | SPDY/3 | session window no longer enforced |
/// | lenient, peer never sent WINDOW_UPDATE, overruns a window | bytes accepted and counted | send windows not enforced |
/// | lenient, same peer, our sending stalled on its windows for the stall timeout | — | send windows not enforced |
/// | any WINDOW_UPDATE later | strict again | enforced again (windows were counted all along) |
#[derive(Clone, Copy, Debug)]
pub(crate) struct PeerFlow {
    mode: FlowControl,
    /// Plain-TCP server with version-3 framing: 3 or 3.1 not yet known.
    undecided: bool,
    /// The peer sent a WINDOW_UPDATE or an INITIAL_WINDOW_SIZE: it does flow control.
    heard: bool,
    /// The peer does not honour windows (it overran one, or left us stalled).
    ignores: bool,
    /// Stream credit returned while undecided with no session WINDOW_UPDATE.
    stream_credit: u64,
}

impl PeerFlow {
    /// `undecided`: a plain-TCP server whose peer's first frame said version 3.
    pub fn new(mode: FlowControl, undecided: bool) -> PeerFlow {
        PeerFlow {
            mode,
            undecided,
            heard: false,
            ignores: false,
            stream_credit: 0,
        }
    }

    /// Whether 3 vs 3.1 is still open.
    pub fn undecided(&self) -> bool {
        self.undecided
    }

    /// Whether our stream and session send windows hold us back.
    pub fn enforce_send(&self) -> bool {
        !self.ignores
    }

    /// A session WINDOW_UPDATE arrived: the peer speaks 3.1 and does flow control.
    pub fn on_session_update(&mut self) {
        self.undecided = false;
        self.heard = true;
        self.ignores = false;
    }

    /// The peer announced SETTINGS_INITIAL_WINDOW_SIZE: it does flow control.
    pub fn on_window_setting(&mut self) {
        self.heard = true;
        self.ignores = false;
    }

    /// A stream WINDOW_UPDATE arrived. Returns true when it
    /// settles an undecided session as SPDY/3: half of the 64 KiB session window came
    /// back as stream credit and no session credit came with it (a 3.1 peer returning
    /// credit at half a window, as spdylay, Netty and speedy do, would have sent its
    /// session WINDOW_UPDATE by then).
    pub fn on_stream_update(&mut self, delta: u32) -> bool {
        self.on_window_setting();
        if !self.undecided {
            return false;
        }
        self.stream_credit += u64::from(delta);
        if self.stream_credit >= u64::from(DEFAULT_WINDOW / 2) {
            self.undecided = false;
            return true;
        }
        false
    }

    /// The peer overran a receive window: true when that is tolerated (lenient, and
    /// the peer never showed flow control); the peer is then not waited for either.
    pub fn tolerate_overrun(&mut self) -> bool {
        if self.mode == FlowControl::Lenient && !self.heard {
            self.ignores = true;
            true
        } else {
            false
        }
    }

    /// Whether a stall on the peer's windows may end with [`PeerFlow::stall_expired`]:
    /// while 3 vs 3.1 is undecided, or (lenient) while the peer has shown no flow control.
    pub fn stall_may_expire(&self) -> bool {
        self.undecided || (self.mode == FlowControl::Lenient && !self.heard && !self.ignores)
    }

    /// A stall timed out with no WINDOW_UPDATE that would end it. Undecided: the peer
    /// is taken for SPDY/3 (a 3.1 peer returns session credit once it has half of its
    /// 64 KiB; a SPDY/3 peer with large stream windows returns nothing that early).
    /// Otherwise: the peer has no flow control.
    pub fn stall_expired(&mut self) {
        if self.undecided {
            self.undecided = false;
        } else {
            self.ignores = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consumes_credit_and_stalls_at_zero() {
        let mut w = Window::new(10);
        assert_eq!(w.credit(), 10);
        w.consume(4);
        assert_eq!((w.get(), w.credit()), (6, 6));
        w.consume(6);
        assert_eq!((w.get(), w.credit()), (0, 0));
    }

    #[test]
    fn window_update_adds_credit_up_to_the_maximum() {
        let mut w = Window::new(DEFAULT_WINDOW);
        w.increase(1).unwrap();
        assert_eq!(w.get(), 65_537);
        let mut w = Window::new(0);
        w.increase(0x7fff_ffff).unwrap();
        assert_eq!(w.get(), MAX_WINDOW);
    }

    #[test]
    fn rejects_window_update_overflow_and_keeps_the_window() {
        let mut w = Window::new(1);
        assert_eq!(w.increase(0x7fff_ffff), Err(FlowError::Overflow));
        assert_eq!(w.get(), 1);
        let mut w = Window::new(0x7fff_ffff);
        assert_eq!(w.increase(1), Err(FlowError::Overflow));
    }

    #[test]
    fn rejects_a_zero_delta() {
        let mut w = Window::new(5);
        assert_eq!(w.increase(0), Err(FlowError::ZeroDelta));
        assert_eq!(w.get(), 5);
        assert_eq!(check_delta(0), Err(FlowError::ZeroDelta));
        assert_eq!(check_delta(1), Ok(()));
    }

    #[test]
    fn a_settings_shrink_may_leave_a_send_window_negative() {
        let mut w = Window::new(16_384);
        w.consume(16_384);
        let delta = initial_window_delta(16_384, 4_096).unwrap();
        assert_eq!(delta, -12_288);
        w.adjust(delta).unwrap();
        assert_eq!((w.get(), w.credit()), (-12_288, 0));
        w.increase(12_288).unwrap();
        assert_eq!((w.get(), w.credit()), (0, 0));
        w.increase(1).unwrap();
        assert_eq!(w.credit(), 1);
    }

    #[test]
    fn a_settings_growth_past_the_maximum_overflows() {
        let mut w = Window::new(DEFAULT_WINDOW);
        w.increase(0x7ffe_0000).unwrap();
        assert_eq!(w.get(), 0x7fff_0000);
        let delta = initial_window_delta(DEFAULT_WINDOW, 0x7fff_ffff).unwrap();
        assert_eq!(w.adjust(delta), Err(FlowError::Overflow));
    }

    #[test]
    fn ignores_initial_window_settings_above_the_maximum() {
        assert_eq!(initial_window_delta(65_536, 0x8000_0000), None);
        assert_eq!(initial_window_delta(65_536, u32::MAX), None);
        assert_eq!(initial_window_delta(65_536, 0x7fff_ffff), Some(0x7ffe_ffff));
        assert_eq!(initial_window_delta(0x7fff_ffff, 0), Some(-MAX_WINDOW));
    }

    #[test]
    fn counts_received_data_and_detects_an_overrun() {
        let mut r = RecvWindow::new(100);
        assert_eq!(r.receive(60), Ok(()));
        assert_eq!(r.receive(40), Ok(()));
        assert_eq!(r.get(), 0);
        assert_eq!(r.receive(0), Ok(()));
        assert_eq!(r.receive(1), Err(FlowError::Overrun));
        assert_eq!(r.get(), -1, "counted even when over");
    }

    #[test]
    fn returns_credit_once_half_the_window_is_released() {
        let mut r = RecvWindow::new(100);
        r.receive(100).unwrap();
        assert_eq!(r.release(30, 100, true), None);
        assert_eq!(r.release(19, 100, true), None);
        assert_eq!(r.release(1, 100, true), Some(50));
        assert_eq!(r.get(), 50);
        assert_eq!(r.release(50, 100, true), Some(50));
        assert_eq!(r.get(), 100);
    }

    #[test]
    fn keeps_released_credit_while_updates_are_not_allowed() {
        let mut r = RecvWindow::new(100);
        r.receive(80).unwrap();
        assert_eq!(r.release(80, 100, false), None);
        assert_eq!(r.get(), 20);
        // A tiny window still updates (threshold at least one byte).
        let mut r = RecvWindow::new(1);
        r.receive(1).unwrap();
        assert_eq!(r.release(1, 1, true), Some(1));
    }

    #[test]
    fn applies_only_growth_of_our_initial_window() {
        let mut r = RecvWindow::new(100);
        r.apply_initial_delta(-50);
        assert_eq!(r.get(), 100);
        r.apply_initial_delta(50);
        assert_eq!(r.get(), 150);
    }

    #[test]
    fn grants_the_session_window_and_released_credit() {
        let mut r = RecvWindow::new(DEFAULT_WINDOW);
        assert_eq!(r.grant(DEFAULT_WINDOW), None);
        assert_eq!(r.grant(1 << 20), Some((1 << 20) - DEFAULT_WINDOW));
        assert_eq!(r.get(), 1 << 20);

        // The SPDY/3 → 3.1 upgrade: 10 000 received and 4 000 released while unenforced.
        let mut r = RecvWindow::new(DEFAULT_WINDOW);
        r.receive(10_000).unwrap();
        assert_eq!(r.release(4_000, 1 << 20, false), None);
        assert_eq!(r.grant(1 << 20), Some((1 << 20) - DEFAULT_WINDOW + 4_000));
        assert_eq!(r.get(), (1 << 20) - 6_000);
        assert_eq!(
            r.grant(1 << 20),
            Some((1 << 20) - DEFAULT_WINDOW),
            "released cleared"
        );
    }

    #[test]
    fn never_grants_past_the_maximum() {
        let mut r = RecvWindow::new(DEFAULT_WINDOW);
        assert_eq!(r.grant(u32::MAX), Some(0x7fff_ffff - DEFAULT_WINDOW));
        assert_eq!(r.get(), MAX_WINDOW);
        assert_eq!(r.grant(u32::MAX), None);
        // An overdrawn window still gets at most one full window's delta.
        let mut r = RecvWindow::new(0);
        r.receive(10).unwrap_err();
        assert_eq!(r.grant(u32::MAX), Some(0x7fff_ffff));
    }

    #[test]
    fn maps_errors_to_stream_or_session_violations() {
        let id = StreamId(3);
        assert_eq!(
            FlowError::Overflow.at(Scope::Stream(id)),
            Violation::StreamWindowOverflow(id)
        );
        assert_eq!(
            FlowError::Overflow.at(Scope::of(StreamId(0))),
            Violation::SessionWindowOverflow
        );
        assert_eq!(
            FlowError::Overrun.at(Scope::Stream(id)),
            Violation::StreamFlowControl(id)
        );
        assert_eq!(
            FlowError::Overrun.at(Scope::Session),
            Violation::SessionFlowControl
        );
        assert_eq!(
            FlowError::ZeroDelta.at(Scope::of(StreamId(0))),
            Violation::ZeroWindowDelta(StreamId(0))
        );
        assert_eq!(Scope::of(id), Scope::Stream(id));
    }
}
