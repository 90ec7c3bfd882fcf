//! Encoding that appends to a growable output: a `bytes::BufMut` (feature `bytes`) or a new
//! `Vec<u8>` (feature `std`). The bytes are put once, where they go: the output is never
//! zero-filled first, and the message is measured at most once.
//!
//! The [`Appender`] sink writes at most the length it was given and counts every byte the
//! message comes to, written or not; so a frame whose length was given by the caller
//! ([`EncodeRequestExt::encode_with_len`]) is checked at the end, and a wrong length is
//! reported with the right one.

#[cfg(feature = "bytes")]
use bytes::{BufMut, BytesMut};
#[cfg(feature = "std")]
use std::vec::Vec;

use super::error::{EncodeError, EncodeErrorKind};
use super::request::{EncodeRequest, RequestFrame};
use super::response::{EncodeResponse, ResponseFrame};
use super::sink::{self, Emit, Sink, Vx};
use crate::frame::SIZE_PREFIX_LEN;

/// Where an [`Appender`] puts its bytes.
trait Put {
    fn put(&mut self, b: &[u8]);
}

/// Any `BufMut`: `put_slice` copies into its chunks (`chunk_mut` / `advance_mut`), growing a
/// `BytesMut` or a `Vec<u8>` as needed; nothing is zero-filled.
#[cfg(feature = "bytes")]
struct BufOut<'b, B: ?Sized>(&'b mut B);

#[cfg(feature = "bytes")]
impl<B: BufMut + ?Sized> Put for BufOut<'_, B> {
    #[inline(always)]
    fn put(&mut self, b: &[u8]) {
        self.0.put_slice(b);
    }
}

#[cfg(feature = "std")]
impl Put for &mut Vec<u8> {
    #[inline(always)]
    fn put(&mut self, b: &[u8]) {
        self.extend_from_slice(b);
    }
}

/// Int32s are gathered this many at a time on the stack, then put in one call.
const WORDS_PER_PUT: usize = 64;

/// Appends a frame of a known length to an output. Never writes more than that length: a
/// write that would go past it is dropped and recorded, and every byte is still counted, so
/// [`finish`](Appender::finish) can tell the length the message really has.
struct Appender<O> {
    out: O,
    /// Bytes the frame may still take.
    room: usize,
    /// Bytes the message came to so far, written or not.
    total: usize,
    overflow: bool,
}

impl<O: Put> Appender<O> {
    fn new(out: O, len: usize) -> Self {
        Appender {
            out,
            room: len,
            total: 0,
            overflow: false,
        }
    }

    /// True when the message was exactly the length given.
    fn exact(&self) -> bool {
        !self.overflow && self.room == 0
    }
}

impl<O: Put> Sink for Appender<O> {
    #[inline(always)]
    fn bytes(&mut self, b: &[u8]) {
        self.total = self.total.saturating_add(b.len());
        if self.overflow || b.len() > self.room {
            self.overflow = true;
            return;
        }
        self.room -= b.len();
        self.out.put(b);
    }

    /// The values are gathered on the stack and put [`WORDS_PER_PUT`] at a time, so a long
    /// `[]int32` costs one `put` per 64 values, not one per value.
    fn i32s(&mut self, n: usize, mut values: impl Iterator<Item = i32>) -> usize {
        let len = n.saturating_mul(4);
        self.total = self.total.saturating_add(len);
        if self.overflow || len > self.room {
            self.overflow = true;
            return n;
        }
        self.room -= len;
        let mut words = [0u8; WORDS_PER_PUT * 4];
        let mut left = n;
        let mut given = 0;
        while left > 0 {
            let batch = left.min(WORDS_PER_PUT);
            let mut got = 0;
            for (word, v) in words[..batch * 4].chunks_exact_mut(4).zip(values.by_ref()) {
                word.copy_from_slice(&v.to_be_bytes());
                got += 1;
            }
            self.out.put(&words[..got * 4]);
            given += got;
            if got < batch {
                // The source gave fewer than it said; the caller reports it.
                return given;
            }
            left -= batch;
        }
        // More than it said: counted, not written.
        given + values.count()
    }
}

/// Writes `message`, whose whole frame was measured at `len`, after its size prefix.
fn append_measured<O: Put>(message: &impl Emit, len: usize, out: O) -> Result<(), EncodeError> {
    let mut w = Appender::new(out, len);
    // `frame_len` checked that the size fits an int32.
    w.i32((len - SIZE_PREFIX_LEN) as i32);
    message.emit(&mut w)?;
    if !w.exact() {
        return Err(EncodeError::new(
            EncodeErrorKind::InconsistentSource,
            "frame",
        ));
    }
    Ok(())
}

/// Writes `message` with the frame length the caller gave, unmeasured, and checks it at the
/// end. A length no frame can have is refused before anything is written.
#[cfg(feature = "bytes")]
fn append_with_len<O: Put>(message: &impl Emit, len: usize, out: O) -> Result<(), EncodeError> {
    let size = len
        .checked_sub(SIZE_PREFIX_LEN)
        .and_then(|size| i32::try_from(size).ok());
    let Some(size) = size else {
        // Only on this error path is the message measured, to say what its length is (as
        // `encode_exact` does for a slice).
        return Err(sink::length_mismatch(message, len));
    };
    let mut w = Appender::new(out, len);
    w.i32(size);
    message.emit(&mut w)?;
    if !w.exact() {
        return Err(EncodeError::new(
            EncodeErrorKind::LengthMismatch {
                expected: len,
                actual: w.total,
            },
            "frame",
        ));
    }
    Ok(())
}

/// Refuses a `buf` that cannot take `len` more bytes.
#[cfg(feature = "bytes")]
fn check_room<B: BufMut + ?Sized>(buf: &B, len: usize) -> Result<(), EncodeError> {
    if buf.remaining_mut() < len {
        return Err(EncodeError::new(
            EncodeErrorKind::BufferTooSmall { needed: len },
            "frame",
        ));
    }
    Ok(())
}

/// Measures once, checks the room, writes.
#[cfg(feature = "bytes")]
fn encode_buf<B: BufMut + ?Sized>(message: &impl Emit, buf: &mut B) -> Result<usize, EncodeError> {
    let len = sink::frame_len(message)?;
    check_room(buf, len)?;
    append_measured(message, len, BufOut(buf))?;
    Ok(len)
}

/// Reserves `len`, writes without measuring, and takes every byte back on any error.
#[cfg(feature = "bytes")]
fn encode_with_len(
    message: &impl Emit,
    len: usize,
    buf: &mut BytesMut,
) -> Result<usize, EncodeError> {
    let start = buf.len();
    if len >= SIZE_PREFIX_LEN && len - SIZE_PREFIX_LEN <= i32::MAX as usize {
        buf.reserve(len);
    }
    match append_with_len(message, len, BufOut(buf)) {
        Ok(()) => Ok(len),
        Err(e) => {
            buf.truncate(start);
            Err(e)
        }
    }
}

/// Measures once, allocates exactly that, writes.
#[cfg(feature = "std")]
fn encode_to_vec(message: &impl Emit) -> Result<Vec<u8>, EncodeError> {
    let len = sink::frame_len(message)?;
    let mut out = Vec::with_capacity(len);
    append_measured(message, len, &mut out)?;
    Ok(out)
}

/// Encoding an [`EncodeRequest`] into growable outputs: a `bytes::BufMut` (feature `bytes`)
/// or a new `Vec<u8>` (feature `std`). Implemented for every request source; bring it into
/// scope and call it on any of them.
///
/// Each method measures the message at most once and puts every byte once, where it goes:
/// nothing is zero-filled. A message the version cannot carry is refused before anything is
/// written, as by [`encode`](EncodeRequest::encode).
///
/// ```
/// # #[cfg(feature = "bytes")] {
/// use bytes::BytesMut;
/// use kafka_elect_leaders::{parse_request, EncodeRequest, EncodeRequestExt};
///
/// let frame = std::fs::read("corpus/request-v2-multi.bin").unwrap();
/// let request = parse_request(&frame).unwrap();
/// let edit = request.edit().correlation_id(7);
///
/// // Measured once, put into the BytesMut's spare capacity.
/// let mut out = BytesMut::with_capacity(4096);
/// let len = edit.encode_buf(2, &mut out).unwrap();
/// assert_eq!(out.len(), len);
///
/// // The length already known (here: the frame's, as the edit keeps every topic): no
/// // second measuring pass, and the exact length reserved.
/// let mut out = BytesMut::new();
/// edit.encode_with_len(2, frame.len(), &mut out).unwrap();
/// assert_eq!(parse_request(&out).unwrap().correlation_id(), 7);
/// assert_eq!(out.capacity(), frame.len());
/// # }
/// ```
#[cfg_attr(docsrs, doc(cfg(any(feature = "bytes", feature = "std"))))]
pub trait EncodeRequestExt: EncodeRequest + Sized {
    /// Puts the whole frame at `version` into `buf` (a `BytesMut`, a `Vec<u8>`, a
    /// `&mut [u8]`, ...) and returns its length. The message is measured once; if
    /// `buf.remaining_mut()` is less than that, nothing is written and the error is
    /// [`BufferTooSmall`](EncodeErrorKind::BufferTooSmall).
    ///
    /// A `BytesMut` or `Vec<u8>` grows as the bytes are put, so a frame larger than its
    /// spare capacity may reallocate more than once: to grow it exactly once, reserve
    /// [`encoded_len`](EncodeRequest::encoded_len) and use
    /// [`encode_with_len`](Self::encode_with_len), which does not measure again.
    ///
    /// Only a source that breaks its trait's contract (different items on a second call)
    /// can fail once writing has started, with
    /// [`InconsistentSource`](EncodeErrorKind::InconsistentSource); the bytes put until
    /// then, never more than the measured length, stay in `buf`.
    #[cfg(feature = "bytes")]
    #[cfg_attr(docsrs, doc(cfg(feature = "bytes")))]
    fn encode_buf<B: BufMut + ?Sized>(
        &self,
        version: i16,
        buf: &mut B,
    ) -> Result<usize, EncodeError> {
        encode_buf(&request_frame(self, version)?, buf)
    }

    /// Appends the whole frame at `version` to `buf`, taking `len` as its length without
    /// measuring: `len` bytes are reserved, the frame is written, and its length is checked
    /// at the end. Returns `len`.
    ///
    /// On any error `buf` is truncated back to its length before the call: no byte of a
    /// partial or wrong frame is left in it (its spare capacity may have grown). A `len`
    /// that is not the frame's length is
    /// [`LengthMismatch`](EncodeErrorKind::LengthMismatch) with the actual length; at most
    /// `len` bytes were written before that was found.
    ///
    /// Checks that [`encoded_len`](EncodeRequest::encoded_len) would make before writing
    /// (a version that cannot carry a field, a string too long) are made as the frame is
    /// written, with the same errors.
    #[cfg(feature = "bytes")]
    #[cfg_attr(docsrs, doc(cfg(feature = "bytes")))]
    fn encode_with_len(
        &self,
        version: i16,
        len: usize,
        buf: &mut BytesMut,
    ) -> Result<usize, EncodeError> {
        encode_with_len(&request_frame(self, version)?, len, buf)
    }

    /// The whole frame at `version` in a new `Vec`, allocated once at the exact length.
    ///
    /// ```
    /// use kafka_elect_leaders::{ElectLeadersRequestData, EncodeRequest, EncodeRequestExt};
    /// let request = ElectLeadersRequestData::default();
    /// let frame = request.encode_to_vec(2).unwrap();
    /// assert_eq!(frame.len(), request.encoded_len(2).unwrap());
    /// assert_eq!(frame.capacity(), frame.len());
    /// ```
    #[cfg(feature = "std")]
    #[cfg_attr(docsrs, doc(cfg(feature = "std")))]
    fn encode_to_vec(&self, version: i16) -> Result<Vec<u8>, EncodeError> {
        encode_to_vec(&request_frame(self, version)?)
    }
}

impl<R: EncodeRequest> EncodeRequestExt for R {}

/// Encoding an [`EncodeResponse`] into growable outputs: the same methods as
/// [`EncodeRequestExt`], for every response source.
///
/// ```
/// # #[cfg(feature = "bytes")] {
/// use bytes::BytesMut;
/// use kafka_elect_leaders::{parse_request, parse_response, EncodeResponseExt, ErrorCode};
///
/// let frame = std::fs::read("corpus/request-v1-unclean.bin").unwrap();
/// let request = parse_request(&frame).unwrap();
/// let refusal = request.error_response(ErrorCode::POLICY_VIOLATION, None);
/// let mut out = BytesMut::with_capacity(1024);
/// let len = refusal.encode_buf(request.version(), &mut out).unwrap();
/// let response = parse_response(&out[..len], request.version()).unwrap();
/// assert_eq!(response.error_code(), ErrorCode::POLICY_VIOLATION);
/// # }
/// ```
#[cfg_attr(docsrs, doc(cfg(any(feature = "bytes", feature = "std"))))]
pub trait EncodeResponseExt: EncodeResponse + Sized {
    /// Puts the whole frame at `version` into `buf`; see
    /// [`EncodeRequestExt::encode_buf`].
    #[cfg(feature = "bytes")]
    #[cfg_attr(docsrs, doc(cfg(feature = "bytes")))]
    fn encode_buf<B: BufMut + ?Sized>(
        &self,
        version: i16,
        buf: &mut B,
    ) -> Result<usize, EncodeError> {
        encode_buf(&response_frame(self, version)?, buf)
    }

    /// Appends the whole frame at `version` to `buf`, taking `len` as its length without
    /// measuring; see [`EncodeRequestExt::encode_with_len`].
    #[cfg(feature = "bytes")]
    #[cfg_attr(docsrs, doc(cfg(feature = "bytes")))]
    fn encode_with_len(
        &self,
        version: i16,
        len: usize,
        buf: &mut BytesMut,
    ) -> Result<usize, EncodeError> {
        encode_with_len(&response_frame(self, version)?, len, buf)
    }

    /// The whole frame at `version` in a new `Vec`, allocated once at the exact length.
    #[cfg(feature = "std")]
    #[cfg_attr(docsrs, doc(cfg(feature = "std")))]
    fn encode_to_vec(&self, version: i16) -> Result<Vec<u8>, EncodeError> {
        encode_to_vec(&response_frame(self, version)?)
    }
}

impl<R: EncodeResponse> EncodeResponseExt for R {}

fn request_frame<R: EncodeRequest>(
    src: &R,
    version: i16,
) -> Result<RequestFrame<'_, R>, EncodeError> {
    Ok(RequestFrame {
        src,
        vx: Vx::new(version)?,
    })
}

fn response_frame<R: EncodeResponse>(
    src: &R,
    version: i16,
) -> Result<ResponseFrame<'_, R>, EncodeError> {
    Ok(ResponseFrame {
        src,
        vx: Vx::new(version)?,
    })
}
