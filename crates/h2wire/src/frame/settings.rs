//! SETTINGS parameters (RFC 9113 §6.5.1, §6.5.2): identifiers, range checks, and the
//! values in force on one side of a connection.

use super::{DEFAULT_MAX_FRAME_SIZE, MAX_MAX_FRAME_SIZE, MAX_WINDOW_SIZE};
use crate::{ErrorCode, FrameError};
use std::fmt;

/// A SETTINGS parameter identifier (RFC 9113 §6.5.2, §11.3). Unknown identifiers are
/// kept; a receiver ignores them.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SettingId(pub u16);

impl SettingId {
    /// 0x1: the largest HPACK dynamic table the sender's decoder allows (initial 4,096).
    pub const HEADER_TABLE_SIZE: SettingId = SettingId(0x1);
    /// 0x2: whether server push is allowed, 0 or 1 (initial 1).
    pub const ENABLE_PUSH: SettingId = SettingId(0x2);
    /// 0x3: the most streams the sender lets its peer open (initial unlimited).
    pub const MAX_CONCURRENT_STREAMS: SettingId = SettingId(0x3);
    /// 0x4: the sender's initial stream window, at most 2^31-1 (initial 65,535).
    pub const INITIAL_WINDOW_SIZE: SettingId = SettingId(0x4);
    /// 0x5: the largest frame payload the sender accepts, 16,384..=16,777,215.
    pub const MAX_FRAME_SIZE: SettingId = SettingId(0x5);
    /// 0x6: advisory limit on the field section size the sender accepts (initial
    /// unlimited), counted as name + value + 32 per field.
    pub const MAX_HEADER_LIST_SIZE: SettingId = SettingId(0x6);
    /// 0x8: extended CONNECT (RFC 8441). Named only; not range-checked here.
    pub const ENABLE_CONNECT_PROTOCOL: SettingId = SettingId(0x8);
    /// 0x9: the sender does not use RFC 7540 priorities (RFC 9218). Named only.
    pub const NO_RFC7540_PRIORITIES: SettingId = SettingId(0x9);

    /// The registered name, or `None` if unknown.
    pub fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            0x1 => "HEADER_TABLE_SIZE",
            0x2 => "ENABLE_PUSH",
            0x3 => "MAX_CONCURRENT_STREAMS",
            0x4 => "INITIAL_WINDOW_SIZE",
            0x5 => "MAX_FRAME_SIZE",
            0x6 => "MAX_HEADER_LIST_SIZE",
            0x8 => "ENABLE_CONNECT_PROTOCOL",
            0x9 => "NO_RFC7540_PRIORITIES",
            _ => return None,
        })
    }
}

impl fmt::Debug for SettingId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "SettingId({:#x})", self.0),
        }
    }
}

/// One SETTINGS parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setting {
    /// Which parameter.
    pub id: SettingId,
    /// Its value.
    pub value: u32,
}

impl Setting {
    /// Length of one parameter on the wire.
    pub const LEN: usize = 6;

    /// Checks the value ranges of RFC 9113 §6.5.2; all failures are connection errors:
    /// ENABLE_PUSH not 0 or 1 → PROTOCOL_ERROR; INITIAL_WINDOW_SIZE over 2^31-1 →
    /// FLOW_CONTROL_ERROR; MAX_FRAME_SIZE outside 16,384..=16,777,215 → PROTOCOL_ERROR.
    pub fn validate(self) -> Result<(), FrameError> {
        match self.id {
            SettingId::ENABLE_PUSH if self.value > 1 => Err(FrameError::conn(
                ErrorCode::PROTOCOL_ERROR,
                "SETTINGS_ENABLE_PUSH not 0 or 1",
            )),
            SettingId::INITIAL_WINDOW_SIZE if self.value > MAX_WINDOW_SIZE => {
                Err(FrameError::conn(
                    ErrorCode::FLOW_CONTROL_ERROR,
                    "SETTINGS_INITIAL_WINDOW_SIZE over 2^31-1",
                ))
            }
            SettingId::MAX_FRAME_SIZE
                if !(DEFAULT_MAX_FRAME_SIZE..=MAX_MAX_FRAME_SIZE).contains(&self.value) =>
            {
                Err(FrameError::conn(
                    ErrorCode::PROTOCOL_ERROR,
                    "SETTINGS_MAX_FRAME_SIZE out of range",
                ))
            }
            _ => Ok(()),
        }
    }

    fn parse(b: &[u8]) -> Setting {
        Setting {
            id: SettingId(u16::from_be_bytes([b[0], b[1]])),
            value: u32::from_be_bytes([b[2], b[3], b[4], b[5]]),
        }
    }
}

/// Iterator over the parameters of a SETTINGS payload, in wire order.
#[derive(Clone, Debug)]
pub struct SettingsIter<'a> {
    chunks: std::slice::ChunksExact<'a, u8>,
}

impl<'a> SettingsIter<'a> {
    pub(crate) fn new(params: &'a [u8]) -> SettingsIter<'a> {
        SettingsIter {
            chunks: params.chunks_exact(Setting::LEN),
        }
    }
}

impl Iterator for SettingsIter<'_> {
    type Item = Setting;

    fn next(&mut self) -> Option<Setting> {
        self.chunks.next().map(Setting::parse)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.chunks.size_hint()
    }
}

impl ExactSizeIterator for SettingsIter<'_> {}

/// The SETTINGS values one endpoint has announced, starting from the initial values of
/// RFC 9113 §6.5.2. `None` means unlimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnSettings {
    /// SETTINGS_HEADER_TABLE_SIZE.
    pub header_table_size: u32,
    /// SETTINGS_ENABLE_PUSH.
    pub enable_push: bool,
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    pub max_concurrent_streams: Option<u32>,
    /// SETTINGS_INITIAL_WINDOW_SIZE.
    pub initial_window_size: u32,
    /// SETTINGS_MAX_FRAME_SIZE.
    pub max_frame_size: u32,
    /// SETTINGS_MAX_HEADER_LIST_SIZE.
    pub max_header_list_size: Option<u32>,
}

impl Default for ConnSettings {
    fn default() -> Self {
        ConnSettings {
            header_table_size: 4_096,
            enable_push: true,
            max_concurrent_streams: None,
            initial_window_size: 65_535,
            max_frame_size: DEFAULT_MAX_FRAME_SIZE,
            max_header_list_size: None,
        }
    }
}

impl ConnSettings {
    /// Applies one parameter (validating it first); unknown identifiers are ignored.
    pub fn apply(&mut self, s: Setting) -> Result<(), FrameError> {
        s.validate()?;
        match s.id {
            SettingId::HEADER_TABLE_SIZE => self.header_table_size = s.value,
            SettingId::ENABLE_PUSH => self.enable_push = s.value == 1,
            SettingId::MAX_CONCURRENT_STREAMS => self.max_concurrent_streams = Some(s.value),
            SettingId::INITIAL_WINDOW_SIZE => self.initial_window_size = s.value,
            SettingId::MAX_FRAME_SIZE => self.max_frame_size = s.value,
            SettingId::MAX_HEADER_LIST_SIZE => self.max_header_list_size = Some(s.value),
            _ => {}
        }
        Ok(())
    }

    /// The parameters that differ from the RFC 9113 initial values, ready for
    /// [`encode_settings`](super::encode_settings).
    pub fn changes(&self) -> Vec<Setting> {
        let d = ConnSettings::default();
        let mut out = Vec::new();
        let mut push = |id, value, differs: bool| {
            if differs {
                out.push(Setting { id, value });
            }
        };
        push(
            SettingId::HEADER_TABLE_SIZE,
            self.header_table_size,
            self.header_table_size != d.header_table_size,
        );
        push(
            SettingId::ENABLE_PUSH,
            u32::from(self.enable_push),
            self.enable_push != d.enable_push,
        );
        if let Some(n) = self.max_concurrent_streams {
            push(SettingId::MAX_CONCURRENT_STREAMS, n, true);
        }
        push(
            SettingId::INITIAL_WINDOW_SIZE,
            self.initial_window_size,
            self.initial_window_size != d.initial_window_size,
        );
        push(
            SettingId::MAX_FRAME_SIZE,
            self.max_frame_size,
            self.max_frame_size != d.max_frame_size,
        );
        if let Some(n) = self.max_header_list_size {
            push(SettingId::MAX_HEADER_LIST_SIZE, n, true);
        }
        out
    }
}
