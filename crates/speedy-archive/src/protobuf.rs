//! A small Protocol Buffers wire codec (proto2 and proto3 share it), enough to read and
//! write Mahimahi's records without a protobuf dependency.
//!
//! Reading is bounded: every length is checked against the bytes that are left before it
//! is used, nothing is allocated from a length read from the input (length-delimited
//! values are borrowed slices), varints longer than ten bytes and groups nested deeper
//! than [`MAX_GROUP_DEPTH`] are refused, and every error carries the byte offset where the
//! fault is, counted from the start of the outermost message.

/// Wire type 0: a varint.
pub const VARINT: u8 = 0;
/// Wire type 1: 8 bytes, little-endian.
pub const FIXED64: u8 = 1;
/// Wire type 2: a varint length, then that many bytes.
pub const LEN: u8 = 2;
/// Wire type 3: start of a (deprecated) group.
pub const START_GROUP: u8 = 3;
/// Wire type 4: end of a group.
pub const END_GROUP: u8 = 4;
/// Wire type 5: 4 bytes, little-endian.
pub const FIXED32: u8 = 5;

/// Groups nested deeper than this are refused (they are skipped, never read).
pub const MAX_GROUP_DEPTH: usize = 64;

/// The highest field number protobuf allows (2^29 − 1).
pub const MAX_FIELD: u64 = (1 << 29) - 1;

/// What is wrong with the input and where: `truncated varint at byte 812`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireError {
    /// Byte offset of the fault from the start of the outermost message.
    pub offset: usize,
    /// The number of the field whose value is at fault, once its key was read.
    pub field: Option<u32>,
    /// What is wrong.
    pub reason: String,
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at byte {}", self.reason, self.offset)
    }
}

impl std::error::Error for WireError {}

/// A field's value as it is on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1.
    Fixed64(u64),
    /// Wire type 2: the bytes (strings, bytes, embedded messages, packed repeats).
    Len(&'a [u8]),
    /// Wire type 3: a group, already skipped up to and including its end.
    Group,
    /// Wire type 5.
    Fixed32(u32),
}

impl Value<'_> {
    /// The wire type of the value.
    pub fn wire_type(&self) -> u8 {
        match self {
            Value::Varint(_) => VARINT,
            Value::Fixed64(_) => FIXED64,
            Value::Len(_) => LEN,
            Value::Group => START_GROUP,
            Value::Fixed32(_) => FIXED32,
        }
    }
}

/// The name of a wire type, for messages.
pub fn wire_type_name(t: u8) -> &'static str {
    match t {
        VARINT => "varint",
        FIXED64 => "64-bit",
        LEN => "length-delimited",
        START_GROUP => "start-group",
        END_GROUP => "end-group",
        FIXED32 => "32-bit",
        _ => "invalid",
    }
}

/// One field read from a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field<'a> {
    /// The field number.
    pub number: u32,
    /// Offset of the field's key.
    pub offset: usize,
    /// Offset of the value (of the bytes, past the length, for [`Value::Len`]).
    pub value_offset: usize,
    /// The value.
    pub value: Value<'a>,
}

/// Reads the fields of one message in order.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Offset of `buf[0]` in the outermost message (for error offsets).
    base: usize,
}

impl<'a> Reader<'a> {
    /// Reads `buf`, which starts at byte `base` of the outermost message (0 for it).
    pub fn new(buf: &'a [u8], base: usize) -> Reader<'a> {
        Reader { buf, pos: 0, base }
    }

    /// A reader of an embedded message: the bytes of `field` (a [`Value::Len`]).
    pub fn nested(field: &Field<'a>) -> Option<Reader<'a>> {
        match field.value {
            Value::Len(b) => Some(Reader::new(b, field.value_offset)),
            _ => None,
        }
    }

    fn err(&self, at: usize, reason: impl Into<String>) -> WireError {
        WireError {
            offset: self.base + at,
            field: None,
            reason: reason.into(),
        }
    }

    /// Reads a varint at the current position.
    fn varint(&mut self) -> Result<u64, WireError> {
        let start = self.pos;
        let mut v: u64 = 0;
        for i in 0..10 {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(self.err(start, "truncated varint"));
            };
            self.pos += 1;
            if i == 9 && b & 0x80 != 0 {
                return Err(self.err(start, "varint longer than 10 bytes"));
            }
            if i == 9 && b > 1 {
                return Err(self.err(start, "varint overflows 64 bits"));
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        unreachable!("the tenth byte ends the varint or fails")
    }

    /// `n` bytes at the current position, checked against what is left.
    fn take(&mut self, n: u64, what: &str, at: usize) -> Result<&'a [u8], WireError> {
        let left = self.buf.len() - self.pos;
        if n > left as u64 {
            return Err(self.err(
                at,
                format!("truncated field ({what} of {n} bytes, {left} left)"),
            ));
        }
        let s = &self.buf[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(s)
    }

    /// Reads a field key: the field number and the wire type.
    fn key(&mut self) -> Result<(u32, u8, usize), WireError> {
        let at = self.pos;
        let key = self.varint()?;
        let number = key >> 3;
        let wire = (key & 7) as u8;
        if number == 0 || number > MAX_FIELD {
            return Err(self.err(at, format!("invalid field number {number}")));
        }
        Ok((number as u32, wire, at))
    }

    /// The value of wire type `wire` at the current position (groups are skipped).
    fn value(&mut self, number: u32, wire: u8, at: usize) -> Result<Value<'a>, WireError> {
        Ok(match wire {
            VARINT => Value::Varint(self.varint()?),
            FIXED64 => {
                let b = self.take(8, "64-bit value", at)?;
                Value::Fixed64(u64::from_le_bytes(b.try_into().expect("8 bytes")))
            }
            LEN => {
                let len = self.varint()?;
                Value::Len(self.take(len, "length-delimited value", at)?)
            }
            START_GROUP => {
                self.skip_group(number, at)?;
                Value::Group
            }
            FIXED32 => {
                let b = self.take(4, "32-bit value", at)?;
                Value::Fixed32(u32::from_le_bytes(b.try_into().expect("4 bytes")))
            }
            END_GROUP => {
                return Err(self.err(at, format!("end-group of field {number} without a start")))
            }
            t => return Err(self.err(at, format!("invalid wire type {t} (field {number})"))),
        })
    }

    /// Skips the fields of a group started by field `number` up to its end-group key.
    fn skip_group(&mut self, number: u32, at: usize) -> Result<(), WireError> {
        let mut open = vec![number];
        while let Some(&inner) = open.last() {
            if self.pos >= self.buf.len() {
                return Err(self.err(at, format!("truncated field (group {number} does not end)")));
            }
            let (n, wire, kat) = self.key()?;
            match wire {
                START_GROUP if open.len() >= MAX_GROUP_DEPTH => {
                    return Err(
                        self.err(kat, format!("groups nested deeper than {MAX_GROUP_DEPTH}"))
                    );
                }
                START_GROUP => open.push(n),
                END_GROUP if n == inner => {
                    open.pop();
                }
                END_GROUP => {
                    return Err(
                        self.err(kat, format!("end-group of field {n} inside group {inner}"))
                    )
                }
                w => {
                    self.value(n, w, kat)?;
                }
            }
        }
        Ok(())
    }

    /// The next field, or `None` at the end of the message.
    pub fn next_field(&mut self) -> Result<Option<Field<'a>>, WireError> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let (number, wire, at) = self.key()?;
        let value = self.value(number, wire, at).map_err(|e| WireError {
            field: e.field.or(Some(number)),
            ..e
        })?;
        let value_offset = match value {
            Value::Len(b) => self.pos - b.len(),
            _ => at,
        };
        Ok(Some(Field {
            number,
            offset: self.base + at,
            value_offset: self.base + value_offset,
            value,
        }))
    }
}

/// Appends `v` as a varint.
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Writes the fields of one message.
#[derive(Clone, Debug, Default)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    /// An empty message.
    pub fn new() -> Writer {
        Writer::default()
    }

    fn key(&mut self, number: u32, wire: u8) {
        put_varint(&mut self.buf, (u64::from(number) << 3) | u64::from(wire));
    }

    /// A varint field (integers, enums, booleans).
    pub fn varint(&mut self, number: u32, v: u64) -> &mut Writer {
        self.key(number, VARINT);
        put_varint(&mut self.buf, v);
        self
    }

    /// A length-delimited field (strings, bytes, embedded messages).
    pub fn bytes(&mut self, number: u32, b: &[u8]) -> &mut Writer {
        self.key(number, LEN);
        put_varint(&mut self.buf, b.len() as u64);
        self.buf.extend_from_slice(b);
        self
    }

    /// An embedded message.
    pub fn message(&mut self, number: u32, m: &Writer) -> &mut Writer {
        self.bytes(number, &m.buf)
    }

    /// The encoded message.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    /// The encoded message so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(buf: &[u8]) -> Result<Vec<Field<'_>>, WireError> {
        let mut r = Reader::new(buf, 0);
        let mut v = Vec::new();
        while let Some(f) = r.next_field()? {
            v.push(f);
        }
        Ok(v)
    }

    #[test]
    fn writes_and_reads_every_kind() {
        let mut inner = Writer::new();
        inner.bytes(1, b"k").bytes(2, b"v");
        let mut w = Writer::new();
        w.varint(2, 443)
            .varint(3, u64::MAX)
            .message(4, &inner)
            .bytes(5, b"");
        let buf = w.into_bytes();
        let f = all(&buf).unwrap();
        assert_eq!(f.len(), 4);
        assert_eq!(f[0].value, Value::Varint(443));
        assert_eq!(f[1].value, Value::Varint(u64::MAX));
        let mut n = Reader::nested(&f[2]).unwrap();
        let k = n.next_field().unwrap().unwrap();
        assert_eq!((k.number, k.value), (1, Value::Len(b"k")));
        assert_eq!(k.offset, f[2].value_offset);
        assert_eq!(f[3].value, Value::Len(b""));
    }

    #[test]
    fn skips_fixed_and_nested_groups() {
        // field 7 fixed64, field 8 fixed32, group 9 { group 10 { varint 1 } }, then 1: "x".
        let mut buf = vec![(7 << 3) | 1];
        buf.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        buf.push((8 << 3) | 5);
        buf.extend_from_slice(&[1, 2, 3, 4]);
        buf.extend_from_slice(&[
            (9 << 3) | 3,
            (10 << 3) | 3,
            1 << 3,
            5,
            (10 << 3) | 4,
            (9 << 3) | 4,
        ]);
        buf.extend_from_slice(&[(1 << 3) | 2, 1, b'x']);
        let f = all(&buf).unwrap();
        assert_eq!(f.iter().map(|f| f.number).collect::<Vec<_>>(), [7, 8, 9, 1]);
        assert_eq!(f[3].value, Value::Len(b"x"));
    }

    #[test]
    fn bad_input_says_what_and_where() {
        let e = all(&[0x08, 0x80]).unwrap_err();
        assert_eq!(e.to_string(), "truncated varint at byte 1");
        let mut long = vec![0x08];
        long.extend_from_slice(&[0xff; 11]);
        assert_eq!(
            all(&long).unwrap_err().reason,
            "varint longer than 10 bytes"
        );
        let mut over = vec![0x08];
        over.extend_from_slice(&[0xff; 9]);
        over.push(0x02);
        assert_eq!(all(&over).unwrap_err().reason, "varint overflows 64 bits");
        let e = all(&[0x12, 0xff, 0xff, 0xff, 0xff, 0x0f, b'a']).unwrap_err();
        assert_eq!(
            e.to_string(),
            "truncated field (length-delimited value of 4294967295 bytes, 1 left) at byte 0"
        );
        assert_eq!(e.offset, 0);
        assert!(all(&[0x07])
            .unwrap_err()
            .reason
            .contains("invalid field number 0"));
        assert!(all(&[0x0e])
            .unwrap_err()
            .reason
            .contains("invalid wire type 6"));
        assert!(all(&[0x0c]).unwrap_err().reason.contains("without a start"));
        assert!(all(&[0x0b, 0x08, 0x01])
            .unwrap_err()
            .reason
            .contains("does not end"));
        let deep: Vec<u8> = std::iter::repeat_n(0x0b, MAX_GROUP_DEPTH + 1).collect();
        assert!(all(&deep).unwrap_err().reason.contains("nested deeper"));
        let e = all(&[0x09, 1, 2]).unwrap_err();
        assert!(e.reason.starts_with("truncated field"), "{e}");
        // Offsets count from the outermost message.
        let mut r = Reader::new(&[0x08, 0x80], 100);
        assert_eq!(r.next_field().unwrap_err().offset, 101);
    }
}
