//! Every peer-caused failure, and the one function that decides what to answer
//! (DESIGN rule 6). Citations are to `shared/reference/spdy-spec-digest.md`.

use crate::codes::{GoAwayStatus, RstStatus};
use crate::frame::StreamId;
use crate::Version;

/// A protocol violation by the peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// A fixed-size frame with the wrong length, or a bad SETTINGS count (§3.3).
    MalformedFrame(String),
    /// The shared header decompression context failed (§3.3 "zlib inflate failure").
    Compression(String),
    /// A control frame without a header block larger than we buffer (§3.4).
    ControlFrameTooLarge(u16),
    /// SYN_STREAM with id 0, the wrong parity, or not above the last one (§3.3).
    BadStreamId(StreamId),
    /// SYN_STREAM reusing the id of a stream that is still open (§3.3).
    DuplicateStream(StreamId),
    /// DATA on stream 0 (§1.2).
    DataOnStreamZero,
    /// More DATA than the session window allowed (§5.2).
    SessionFlowControl,
    /// WINDOW_UPDATE pushed the session send window past 2^31-1 (§5.2).
    SessionWindowOverflow,
    /// WINDOW_UPDATE with delta 0 (§2.8).
    ZeroWindowDelta(StreamId),
    /// A push with associated id 0 (§3.3).
    PushWithoutAssociation(StreamId),
    /// A SYN_STREAM beyond our MAX_CONCURRENT_STREAMS (§3.3).
    TooManyStreams(StreamId),
    /// A header block that inflated to an invalid name/value list (§4.1).
    InvalidHeaders(StreamId),
    /// A header block larger than our limit after inflating, or a stream's blocks
    /// (SYN_STREAM/SYN_REPLY and its HEADERS) adding up past it (§3.4).
    HeadersTooLarge(StreamId),
    /// A second SYN_REPLY (§2.2).
    DuplicateReply(StreamId),
    /// SYN_REPLY for a stream we do not know (§2.2).
    ReplyUnknownStream(StreamId),
    /// SYN_REPLY for a stream the peer opened (§2.2).
    ReplyOnPeerStream(StreamId),
    /// DATA on our own stream before its SYN_REPLY (§3.3).
    DataBeforeReply(StreamId),
    /// DATA or HEADERS after the peer's FIN (§3.3).
    AfterFin(StreamId),
    /// DATA for a stream that was never opened (§3.3).
    UnknownStream(StreamId),
    /// More DATA than the stream window allowed (§5.1).
    StreamFlowControl(StreamId),
    /// WINDOW_UPDATE pushed a stream send window past 2^31-1 (§5.1).
    StreamWindowOverflow(StreamId),
    /// A client sent a push-like SYN_STREAM (assoc ≠ 0 or unidirectional) (§2.1).
    PushFromClient(StreamId),
    /// A push whose associated stream is not open (§3.3).
    PushInvalidAssociation(StreamId),
    /// A push without :scheme/:host/:path (SPDY/2: url) (§3.3).
    PushMissingUrl(StreamId),
    /// A push we do not accept (push disabled, or over our stream limit) (§6).
    PushRefused(StreamId),
    /// A SYN_STREAM carrying another SPDY version (§2.11).
    UnsupportedVersion(StreamId),
    /// DATA with the draft-only FLAG_COMPRESS (§1.2).
    CompressedData(StreamId),
}

/// What the session does about a violation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Send GOAWAY with this status and stop (a session error).
    GoAway(GoAwayStatus),
    /// Send RST_STREAM for this stream and go on (a stream error).
    Reset(StreamId, RstStatus),
    /// Drop the frame silently.
    Ignore,
}

impl Violation {
    /// Decides the answer to a violation: the single place where errors map to codes.
    pub fn action(&self, version: Version) -> Action {
        use Violation as V;
        let rst = |id: StreamId, code: RstStatus| {
            // SPDY/2 defines codes 1-7 only; later codes fall back to PROTOCOL_ERROR.
            let code = if version == Version::V2 && code.0 > 7 {
                RstStatus::PROTOCOL_ERROR
            } else {
                code
            };
            Action::Reset(id, code)
        };
        match *self {
            V::MalformedFrame(_)
            | V::Compression(_)
            | V::ControlFrameTooLarge(_)
            | V::BadStreamId(_)
            | V::DataOnStreamZero
            // GOAWAY has no flow-control code: spdylay uses PROTOCOL_ERROR (§5.2).
            | V::SessionFlowControl
            | V::SessionWindowOverflow => Action::GoAway(GoAwayStatus::PROTOCOL_ERROR),
            V::ZeroWindowDelta(id) if id.0 == 0 => Action::GoAway(GoAwayStatus::PROTOCOL_ERROR),
            V::ZeroWindowDelta(id) => rst(id, RstStatus::FLOW_CONTROL_ERROR),
            // SPDY/3: session error; SPDY/2: RST INVALID_STREAM (§3.3).
            V::PushWithoutAssociation(id) if version == Version::V2 => rst(id, RstStatus::INVALID_STREAM),
            V::PushWithoutAssociation(_) => Action::GoAway(GoAwayStatus::PROTOCOL_ERROR),
            V::TooManyStreams(id) | V::PushRefused(id) => rst(id, RstStatus::REFUSED_STREAM),
            V::DuplicateStream(id)
            | V::InvalidHeaders(id)
            | V::ReplyOnPeerStream(id)
            | V::DataBeforeReply(id)
            | V::PushFromClient(id)
            | V::PushMissingUrl(id)
            | V::CompressedData(id) => rst(id, RstStatus::PROTOCOL_ERROR),
            V::HeadersTooLarge(id) => rst(id, RstStatus::FRAME_TOO_LARGE),
            V::DuplicateReply(id) => rst(id, RstStatus::STREAM_IN_USE),
            V::ReplyUnknownStream(id) | V::UnknownStream(id) | V::PushInvalidAssociation(id) => {
                rst(id, RstStatus::INVALID_STREAM)
            }
            V::AfterFin(id) => rst(id, RstStatus::STREAM_ALREADY_CLOSED),
            V::StreamFlowControl(id) | V::StreamWindowOverflow(id) => rst(id, RstStatus::FLOW_CONTROL_ERROR),
            V::UnsupportedVersion(id) => rst(id, RstStatus::UNSUPPORTED_VERSION),
        }
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_late_codes_to_protocol_error_in_spdy2() {
        let id = StreamId(1);
        assert_eq!(
            Violation::DuplicateReply(id).action(Version::V3),
            Action::Reset(id, RstStatus::STREAM_IN_USE)
        );
        assert_eq!(
            Violation::DuplicateReply(id).action(Version::V2),
            Action::Reset(id, RstStatus::PROTOCOL_ERROR)
        );
        assert_eq!(
            Violation::PushWithoutAssociation(StreamId(2)).action(Version::V2),
            Action::Reset(StreamId(2), RstStatus::INVALID_STREAM)
        );
        assert_eq!(
            Violation::PushWithoutAssociation(StreamId(2)).action(Version::V3_1),
            Action::GoAway(GoAwayStatus::PROTOCOL_ERROR)
        );
    }
}
