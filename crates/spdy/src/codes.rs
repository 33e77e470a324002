//! Wire codes as open newtypes: unknown values survive a decode/encode round trip.

use std::fmt;

macro_rules! open_code {
    ($(#[$doc:meta])* $name:ident($ty:ty) { $($(#[$cdoc:meta])* $konst:ident = $val:expr),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub $ty);
        impl $name {
            $($(#[$cdoc])* pub const $konst: $name = $name($val);)*
            /// The spec name of this code, if it is a known one.
            pub fn name(self) -> Option<&'static str> {
                match self.0 { $($val => Some(stringify!($konst)),)* _ => None }
            }
        }
        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.name() { Some(n) => f.write_str(n), None => write!(f, "{}({})", stringify!($name), self.0) }
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { fmt::Debug::fmt(self, f) }
        }
    };
}

open_code! {
    /// RST_STREAM status codes (digest §2.3). Codes 8-11 exist only in SPDY/3 and later.
    RstStatus(u32) {
        /// Generic protocol violation.
        PROTOCOL_ERROR = 1,
        /// A frame for a stream that is not active.
        INVALID_STREAM = 2,
        /// Rejected before any processing; safe to retry.
        REFUSED_STREAM = 3,
        /// SYN_STREAM with a version the receiver does not speak.
        UNSUPPORTED_VERSION = 4,
        /// The creator no longer wants the stream (also: a client refusing a push).
        CANCEL = 5,
        /// Local failure.
        INTERNAL_ERROR = 6,
        /// The peer violated flow control.
        FLOW_CONTROL_ERROR = 7,
        /// Duplicate SYN_REPLY.
        STREAM_IN_USE = 8,
        /// DATA or SYN_REPLY after the sender's FIN.
        STREAM_ALREADY_CLOSED = 9,
        /// CREDENTIAL mismatch (SPDY/3 only).
        INVALID_CREDENTIALS = 10,
        /// A frame exceeded a local size limit.
        FRAME_TOO_LARGE = 11,
    }
}

open_code! {
    /// GOAWAY status codes (digest §2.6; SPDY/3 and later, SPDY/2 GOAWAY has none).
    /// INTERNAL_ERROR is 2 as deployed (not 11 as in the IETF draft).
    GoAwayStatus(u32) {
        /// Normal shutdown.
        OK = 0,
        /// The peer violated the protocol.
        PROTOCOL_ERROR = 1,
        /// Local failure.
        INTERNAL_ERROR = 2,
    }
}

open_code! {
    /// SETTINGS ids (digest §2.4).
    SettingId(u32) {
        /// Upload bandwidth estimate, KB/s.
        UPLOAD_BANDWIDTH = 1,
        /// Download bandwidth estimate, KB/s.
        DOWNLOAD_BANDWIDTH = 2,
        /// Round-trip time, ms.
        ROUND_TRIP_TIME = 3,
        /// Limit on the streams the receiver may open towards the sender.
        MAX_CONCURRENT_STREAMS = 4,
        /// TCP congestion window.
        CURRENT_CWND = 5,
        /// Retransmission rate.
        DOWNLOAD_RETRANS_RATE = 6,
        /// Initial per-stream window (SPDY/3 and later).
        INITIAL_WINDOW_SIZE = 7,
        /// CREDENTIAL vector size (SPDY/3 only).
        CLIENT_CERTIFICATE_VECTOR_SIZE = 8,
    }
}

/// Control frame type numbers (digest §1.4).
pub mod frame_type {
    /// SYN_STREAM.
    pub const SYN_STREAM: u16 = 1;
    /// SYN_REPLY.
    pub const SYN_REPLY: u16 = 2;
    /// RST_STREAM.
    pub const RST_STREAM: u16 = 3;
    /// SETTINGS.
    pub const SETTINGS: u16 = 4;
    /// NOOP (SPDY/2 only).
    pub const NOOP: u16 = 5;
    /// PING.
    pub const PING: u16 = 6;
    /// GOAWAY.
    pub const GOAWAY: u16 = 7;
    /// HEADERS.
    pub const HEADERS: u16 = 8;
    /// WINDOW_UPDATE (SPDY/3 and later).
    pub const WINDOW_UPDATE: u16 = 9;
    /// CREDENTIAL (SPDY/3 only; decoded and ignored).
    pub const CREDENTIAL: u16 = 10;
    /// PRIORITY: speedy's experimental reprioritization extension, not in any SPDY
    /// draft (docs/spdy-priority.md). Peers that do not know it skip it by length, as
    /// every SPDY version requires of unknown control frames (digest §2.11).
    pub const PRIORITY: u16 = 0xF0;
}

/// Frame flag bits (digest §3.1).
pub mod flags {
    /// FLAG_FIN on DATA, SYN_STREAM, SYN_REPLY and HEADERS.
    pub const FIN: u8 = 0x01;
    /// FLAG_UNIDIRECTIONAL on SYN_STREAM.
    pub const UNIDIRECTIONAL: u8 = 0x02;
    /// FLAG_SETTINGS_CLEAR_SETTINGS on SETTINGS.
    pub const CLEAR_SETTINGS: u8 = 0x01;
    /// FLAG_SETTINGS_PERSIST_VALUE on a SETTINGS entry.
    pub const PERSIST_VALUE: u8 = 0x01;
    /// FLAG_SETTINGS_PERSISTED on a SETTINGS entry.
    pub const PERSISTED: u8 = 0x02;
}
