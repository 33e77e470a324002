//! RFC 9113 §7 error codes and the errors the frame decoder reports (§5.4).

use crate::frame::StreamId;
use std::fmt;

/// An RFC 9113 §7 error code, as carried by RST_STREAM and GOAWAY.
///
/// An open newtype: the 14 codes of §7 are named constants, and any other 32-bit value
/// (unknown codes "MUST NOT trigger any special behavior", §7) survives a round trip.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ErrorCode(pub u32);

macro_rules! error_codes {
    ($($(#[$doc:meta])* $name:ident = $value:expr,)*) => {
        impl ErrorCode {
            $($(#[$doc])* pub const $name: ErrorCode = ErrorCode($value);)*

            /// The RFC 9113 name of this code (`"PROTOCOL_ERROR"`), or `None` if unknown.
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($value => Some(stringify!($name)),)*
                    _ => None,
                }
            }
        }
    };
}

error_codes! {
    /// 0x0: graceful shutdown, or no error.
    NO_ERROR = 0x0,
    /// 0x1: an unspecific protocol violation.
    PROTOCOL_ERROR = 0x1,
    /// 0x2: the endpoint hit an unexpected internal error.
    INTERNAL_ERROR = 0x2,
    /// 0x3: the peer violated flow control.
    FLOW_CONTROL_ERROR = 0x3,
    /// 0x4: a SETTINGS frame was not acknowledged in time.
    SETTINGS_TIMEOUT = 0x4,
    /// 0x5: a frame arrived after the stream was half-closed.
    STREAM_CLOSED = 0x5,
    /// 0x6: a frame had an invalid size.
    FRAME_SIZE_ERROR = 0x6,
    /// 0x7: the stream was refused before any application processing.
    REFUSED_STREAM = 0x7,
    /// 0x8: the stream is no longer needed.
    CANCEL = 0x8,
    /// 0x9: the field-block compression context (HPACK) cannot be maintained.
    COMPRESSION_ERROR = 0x9,
    /// 0xa: the CONNECT tunnel's connection was reset or abnormally closed.
    CONNECT_ERROR = 0xa,
    /// 0xb: the peer is generating excessive load.
    ENHANCE_YOUR_CALM = 0xb,
    /// 0xc: the transport does not meet minimum security requirements.
    INADEQUATE_SECURITY = 0xc,
    /// 0xd: the request must be retried over HTTP/1.1.
    HTTP_1_1_REQUIRED = 0xd,
}

impl fmt::Debug for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "ErrorCode({:#x})", self.0),
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// A peer-caused failure found while decoding a frame, classified per RFC 9113 §5.4.
///
/// A connection error ends the connection (GOAWAY with `code`); a stream error ends one
/// stream (RST_STREAM with `code`) and the connection goes on after the frame, which is
/// `frame_len` bytes long (header included) and must be skipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// A connection error (§5.4.1): send GOAWAY with `code` and close.
    #[error("connection error {code}: {reason}")]
    Connection {
        /// The error code for GOAWAY.
        code: ErrorCode,
        /// What was wrong, for logs.
        reason: &'static str,
    },
    /// A stream error (§5.4.2): send RST_STREAM with `code` on `stream_id`.
    #[error("stream error {code} on stream {stream_id}: {reason}")]
    Stream {
        /// The stream to reset.
        stream_id: StreamId,
        /// The error code for RST_STREAM.
        code: ErrorCode,
        /// What was wrong, for logs.
        reason: &'static str,
        /// Bytes of the offending frame (9-byte header plus payload), to skip.
        frame_len: usize,
    },
}

impl FrameError {
    /// The RFC 9113 error code to send.
    pub fn code(&self) -> ErrorCode {
        match *self {
            FrameError::Connection { code, .. } | FrameError::Stream { code, .. } => code,
        }
    }

    /// Whether the whole connection must end (GOAWAY) rather than one stream.
    pub fn is_connection_error(&self) -> bool {
        matches!(self, FrameError::Connection { .. })
    }

    pub(crate) fn conn(code: ErrorCode, reason: &'static str) -> FrameError {
        FrameError::Connection { code, reason }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cover_all_fourteen_codes_and_unknown_values_survive() {
        let named = (0..=0xd).filter(|&v| ErrorCode(v).name().is_some()).count();
        assert_eq!(named, 14);
        assert_eq!(ErrorCode(0xe).name(), None);
        assert_eq!(format!("{}", ErrorCode(0x1234)), "ErrorCode(0x1234)");
        assert_eq!(
            format!("{}", ErrorCode::HTTP_1_1_REQUIRED),
            "HTTP_1_1_REQUIRED"
        );
    }
}
