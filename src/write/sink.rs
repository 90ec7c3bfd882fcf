//! Where encoded bytes go: a [`Counter`] that only measures, or a [`Writer`] into the
//! caller's buffer. Every message is emitted by one generic function over [`Sink`], so the
//! measured length and the written bytes cannot disagree.

use super::error::{EncodeError, EncodeErrorKind};
use crate::frame::SIZE_PREFIX_LEN;
use crate::version;
use crate::wire::MAX_STRING_LEN;

/// The version being written, with its encoding.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Vx {
    pub version: i16,
    pub flexible: bool,
}

impl Vx {
    pub fn new(version: i16) -> Result<Self, EncodeError> {
        version::check(version, "api_version", 0).map_err(|_| {
            EncodeError::new(EncodeErrorKind::UnsupportedVersion(version), "api_version")
        })?;
        Ok(Vx {
            version,
            flexible: version::is_flexible(version),
        })
    }
}

pub(crate) trait Sink {
    fn bytes(&mut self, b: &[u8]);

    fn uvarint(&mut self, v: u32) {
        let (buf, len) = uvarint_bytes(v);
        self.bytes(&buf[..len]);
    }

    fn i8(&mut self, v: i8) {
        self.bytes(&v.to_be_bytes());
    }

    fn i16(&mut self, v: i16) {
        self.bytes(&v.to_be_bytes());
    }

    fn i32(&mut self, v: i32) {
        self.bytes(&v.to_be_bytes());
    }

    /// `n` int32s taken from `values`; returns how many `values` gave (the writer stops at
    /// `n`), so the caller can tell a source that changed between the passes.
    fn i32s(&mut self, n: usize, values: impl Iterator<Item = i32>) -> usize;
}

/// Measures: adds up lengths, writes nothing.
pub(crate) struct Counter {
    pub len: usize,
}

impl Sink for Counter {
    #[inline]
    fn bytes(&mut self, b: &[u8]) {
        self.len = self.len.saturating_add(b.len());
    }

    #[inline]
    fn uvarint(&mut self, v: u32) {
        self.len = self.len.saturating_add(uvarint_len(v));
    }

    /// O(1): the values are not looked at.
    #[inline]
    fn i32s(&mut self, n: usize, _values: impl Iterator<Item = i32>) -> usize {
        self.len = self.len.saturating_add(n.saturating_mul(4));
        n
    }
}

/// The minimal uvarint of `v`: 7 bits a byte, low bits first; the bytes and how many.
#[inline]
fn uvarint_bytes(mut v: u32) -> ([u8; 5], usize) {
    let mut buf = [0u8; 5];
    let mut n = 0;
    while v >= 0x80 {
        buf[n] = (v as u8) | 0x80;
        v >>= 7;
        n += 1;
    }
    buf[n] = v as u8;
    (buf, n + 1)
}

/// Bytes a minimal uvarint of `v` takes.
#[inline]
pub(crate) const fn uvarint_len(v: u32) -> usize {
    match v {
        0..=0x7f => 1,
        0x80..=0x3fff => 2,
        0x4000..=0x1f_ffff => 3,
        0x20_0000..=0x0fff_ffff => 4,
        _ => 5,
    }
}

/// Writes into a buffer that was sized by a [`Counter`]. Never panics: a write that would
/// run past the end (only possible if the source changed between the two passes, or a
/// length given by the caller was wrong) is recorded and reported by the caller.
pub(crate) struct Writer<'b> {
    /// What is left of the buffer: each write takes its bytes off the front.
    rest: &'b mut [u8],
    overflow: bool,
}

impl<'b> Writer<'b> {
    pub fn new(buf: &'b mut [u8]) -> Self {
        Writer {
            rest: buf,
            overflow: false,
        }
    }

    /// The next `n` bytes of the buffer, now counted as written; `None` (and the overflow
    /// recorded) if fewer are left. One comparison: the rest is kept as a slice.
    #[inline(always)]
    fn take(&mut self, n: usize) -> Option<&'b mut [u8]> {
        if n > self.rest.len() {
            self.overflow = true;
            return None;
        }
        let (head, tail) = core::mem::take(&mut self.rest).split_at_mut(n);
        self.rest = tail;
        Some(head)
    }
}

impl Sink for Writer<'_> {
    #[inline(always)]
    fn bytes(&mut self, b: &[u8]) {
        if let Some(dst) = self.take(b.len()) {
            // 8 to 16 bytes (most topic names) as two overlapping 8-byte copies, not a call
            // to `memcpy`: a tenth of the typical request's encode (BENCHMARKS.md).
            let n = b.len();
            if (8..=16).contains(&n) {
                dst[..8].copy_from_slice(&b[..8]);
                dst[n - 8..].copy_from_slice(&b[n - 8..]);
            } else {
                dst.copy_from_slice(b);
            }
        }
    }

    #[inline]
    fn uvarint(&mut self, v: u32) {
        // One byte for every count and length below 128; the loop for the rest.
        if v < 0x80 {
            if let Some(dst) = self.take(1) {
                dst[0] = v as u8;
            }
            return;
        }
        let (buf, len) = uvarint_bytes(v);
        self.bytes(&buf[..len]);
    }

    /// One bounds check for the whole array, then a loop the compiler can vectorize when
    /// `values` is a slice's. When `values` does not say it holds exactly `n` (the source
    /// changed since it was measured), one at a time, counting all it gives.
    #[inline]
    fn i32s(&mut self, n: usize, values: impl Iterator<Item = i32>) -> usize {
        let Some(dst) = n.checked_mul(4).and_then(|len| self.take(len)) else {
            self.overflow = true;
            return n;
        };
        let mut written = 0;
        if values.size_hint() == (n, Some(n)) {
            for (word, v) in dst.chunks_exact_mut(4).zip(values) {
                word.copy_from_slice(&v.to_be_bytes());
                written += 1;
            }
        } else {
            let mut words = dst.chunks_exact_mut(4);
            for v in values {
                if let Some(word) = words.next() {
                    word.copy_from_slice(&v.to_be_bytes());
                }
                written += 1;
            }
        }
        written
    }
}

/// A whole message that can be emitted into any sink: header and body, not the size prefix.
pub(crate) trait Emit {
    fn emit<S: Sink>(&self, s: &mut S) -> Result<(), EncodeError>;
}

/// The exact length of the frame (size prefix included), after every check.
pub(crate) fn frame_len(message: &impl Emit) -> Result<usize, EncodeError> {
    let mut counter = Counter {
        len: SIZE_PREFIX_LEN,
    };
    message.emit(&mut counter)?;
    let size = counter.len - SIZE_PREFIX_LEN;
    if size > i32::MAX as usize {
        return Err(EncodeError::new(
            EncodeErrorKind::FrameTooLarge { size },
            "frame",
        ));
    }
    Ok(counter.len)
}

/// Measures, checks the buffer (writing nothing if it is too short), then writes.
pub(crate) fn encode_frame(message: &impl Emit, buf: &mut [u8]) -> Result<usize, EncodeError> {
    let len = frame_len(message)?;
    let Some(out) = buf.get_mut(..len) else {
        return Err(EncodeError::new(
            EncodeErrorKind::BufferTooSmall { needed: len },
            "frame",
        ));
    };
    // `frame_len` checked that the size fits an int32.
    if !write_frame(message, (len - SIZE_PREFIX_LEN) as i32, out)? {
        return Err(EncodeError::new(
            EncodeErrorKind::InconsistentSource,
            "frame",
        ));
    }
    Ok(len)
}

/// Writes a message whose frame length the caller gives (from [`frame_len`]) without
/// measuring it again: checks the buffer, writes, and checks the length at the end.
pub(crate) fn encode_frame_exact(
    message: &impl Emit,
    len: usize,
    buf: &mut [u8],
) -> Result<usize, EncodeError> {
    let size = len
        .checked_sub(SIZE_PREFIX_LEN)
        .and_then(|size| i32::try_from(size).ok());
    let Some(size) = size else {
        return Err(length_mismatch(message, len));
    };
    let Some(out) = buf.get_mut(..len) else {
        return Err(EncodeError::new(
            EncodeErrorKind::BufferTooSmall { needed: len },
            "frame",
        ));
    };
    if !write_frame(message, size, out)? {
        return Err(length_mismatch(message, len));
    }
    Ok(len)
}

/// Writes the size prefix and the message into `out`; true if they filled it exactly. The
/// one place a message is emitted into a [`Writer`], so that each message's writing code is
/// compiled once, with every field inlined.
fn write_frame(message: &impl Emit, size: i32, out: &mut [u8]) -> Result<bool, EncodeError> {
    let mut w = Writer::new(out);
    w.i32(size);
    message.emit(&mut w)?;
    Ok(!w.overflow && w.rest.is_empty())
}

/// The error for a frame length that is not the message's: measured now, to say what it is.
#[cold]
#[inline(never)]
pub(crate) fn length_mismatch(message: &impl Emit, expected: usize) -> EncodeError {
    match frame_len(message) {
        Ok(actual) => EncodeError::new(
            EncodeErrorKind::LengthMismatch { expected, actual },
            "frame",
        ),
        Err(e) => e,
    }
}

/// The length of an iterator: its `size_hint` when exact, else a count.
#[inline]
pub(crate) fn exact_len<I: Iterator>(it: I) -> usize {
    match it.size_hint() {
        (lo, Some(hi)) if lo == hi => lo,
        _ => it.count(),
    }
}

/// A string: classic int16 length (-1 null) or compact uvarint length + 1 (0 null).
#[inline]
pub(crate) fn string<S: Sink>(
    s: &mut S,
    flexible: bool,
    value: Option<&[u8]>,
    field: &'static str,
) -> Result<(), EncodeError> {
    match value {
        None if flexible => s.uvarint(0),
        None => s.i16(-1),
        Some(b) => {
            if b.len() > MAX_STRING_LEN {
                return Err(EncodeError::new(
                    EncodeErrorKind::StringTooLong { len: b.len() },
                    field,
                ));
            }
            if flexible {
                s.uvarint(b.len() as u32 + 1);
            } else {
                s.i16(b.len() as i16);
            }
            s.bytes(b);
        }
    }
    Ok(())
}

/// An array's count: classic int32 (-1 null) or compact uvarint count + 1 (0 null). Kafka
/// reads either into a Java int, so the count (plus one, when compact) must fit an int32.
#[inline]
pub(crate) fn count<S: Sink>(
    s: &mut S,
    flexible: bool,
    count: Option<usize>,
    field: &'static str,
) -> Result<(), EncodeError> {
    match count {
        None if flexible => s.uvarint(0),
        None => s.i32(-1),
        // Tested first: the one-byte count of almost every array, with no other check.
        Some(n) if flexible && n < 0x7f => s.uvarint(n as u32 + 1),
        Some(n) if flexible && n < i32::MAX as usize => s.uvarint(n as u32 + 1),
        Some(n) if !flexible && n <= i32::MAX as usize => s.i32(n as i32),
        Some(n) => {
            return Err(EncodeError::new(
                EncodeErrorKind::TooManyElements { count: n },
                field,
            ))
        }
    }
    Ok(())
}

/// A list: the count (from `items()`), then each element, checking that as many came as
/// were counted. `items` is called twice; `None` writes null.
#[inline]
pub(crate) fn list<S: Sink, I: Iterator>(
    s: &mut S,
    flexible: bool,
    items: impl Fn() -> Option<I>,
    field: &'static str,
    mut each: impl FnMut(&mut S, I::Item) -> Result<(), EncodeError>,
) -> Result<(), EncodeError> {
    let Some(first_pass) = items() else {
        return count(s, flexible, None, field);
    };
    let n = exact_len(first_pass);
    count(s, flexible, Some(n), field)?;
    let mut written = 0usize;
    if let Some(items) = items() {
        for item in items {
            each(s, item)?;
            written += 1;
        }
    }
    if written != n {
        return Err(EncodeError::new(EncodeErrorKind::InconsistentSource, field));
    }
    Ok(())
}

/// An `[]int32`: the count (from `values()`), then the values. `values` is called twice.
#[inline]
pub(crate) fn int32_array<S: Sink, I: Iterator<Item = i32>>(
    s: &mut S,
    flexible: bool,
    values: impl Fn() -> I,
    field: &'static str,
) -> Result<(), EncodeError> {
    let n = exact_len(values());
    count(s, flexible, Some(n), field)?;
    if s.i32s(n, values()) != n {
        return Err(EncodeError::new(EncodeErrorKind::InconsistentSource, field));
    }
    Ok(())
}

/// An `[]int32` given as its wire bytes (big-endian, 4 bytes each): the count, then one copy.
#[inline]
pub(crate) fn int32_array_wire<S: Sink>(
    s: &mut S,
    flexible: bool,
    wire: &[u8],
    field: &'static str,
) -> Result<(), EncodeError> {
    if wire.len() % 4 != 0 {
        return Err(EncodeError::new(EncodeErrorKind::InconsistentSource, field));
    }
    count(s, flexible, Some(wire.len() / 4), field)?;
    s.bytes(wire);
    Ok(())
}

/// Tagged fields: in a flexible version, the count and each (tag, size, data) with tags
/// strictly ascending; in an older version, refused unless there are none.
#[inline]
pub(crate) fn tagged_fields<'t, S: Sink, I: Iterator<Item = (u32, &'t [u8])>>(
    s: &mut S,
    vx: Vx,
    fields: impl Fn() -> I,
    field: &'static str,
) -> Result<(), EncodeError> {
    if !vx.flexible {
        if fields().next().is_some() {
            return Err(EncodeError::new(
                EncodeErrorKind::TaggedFieldsUnsupported {
                    version: vx.version,
                },
                field,
            ));
        }
        return Ok(());
    }
    let n = exact_len(fields());
    if n == 0 {
        // Almost every struct: the count byte and nothing else (for a slice the compiler
        // knows the second look is empty too).
        s.uvarint(0);
        if fields().next().is_some() {
            return Err(EncodeError::new(EncodeErrorKind::InconsistentSource, field));
        }
        return Ok(());
    }
    if n > u32::MAX as usize {
        return Err(EncodeError::new(
            EncodeErrorKind::TooManyElements { count: n },
            field,
        ));
    }
    s.uvarint(n as u32);
    let mut previous: Option<u32> = None;
    let mut written = 0usize;
    for (tag, data) in fields() {
        if let Some(previous) = previous.filter(|&p| tag <= p) {
            return Err(EncodeError::new(
                EncodeErrorKind::TaggedFieldOrder { tag, previous },
                field,
            ));
        }
        previous = Some(tag);
        s.uvarint(tag);
        // The frame's int32 size check bounds `data.len()` long before this could wrap.
        s.uvarint(u32::try_from(data.len()).unwrap_or(u32::MAX));
        s.bytes(data);
        written += 1;
    }
    if written != n {
        return Err(EncodeError::new(EncodeErrorKind::InconsistentSource, field));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Sink, Writer};

    /// Every length around the two overlapping 8-byte copies (8 to 16 bytes) lands whole,
    /// where it belongs, and touches nothing after it.
    #[test]
    fn bytes_of_every_short_length() {
        let source: [u8; 24] = core::array::from_fn(|i| i as u8 + 1);
        for n in 0..=source.len() {
            let mut buf = [0xeeu8; 32];
            let mut w = Writer::new(&mut buf[..n + 3]);
            w.bytes(&[0xaa, 0xbb]);
            w.bytes(&source[..n]);
            assert!(!w.overflow, "{n} bytes");
            assert_eq!(buf[..2], [0xaa, 0xbb], "{n} bytes");
            assert_eq!(buf[2..2 + n], source[..n], "{n} bytes");
            assert!(buf[2 + n..].iter().all(|&b| b == 0xee), "{n} bytes");
        }
    }

    /// Too little room: nothing is written, and the overflow is recorded.
    #[test]
    fn bytes_that_do_not_fit() {
        for n in [1, 8, 12, 16, 17] {
            let mut buf = [0xeeu8; 20];
            let mut w = Writer::new(&mut buf[..n - 1]);
            w.bytes(&[7u8; 20][..n]);
            assert!(w.overflow, "{n} bytes");
            assert!(buf.iter().all(|&b| b == 0xee), "{n} bytes");
        }
    }
}
