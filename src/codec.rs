//! A tokio-util codec for Kafka frames of every API: the decoder cuts a socket's bytes into
//! whole frames, size prefix kept, so the crate's parsers and peeks take them as they are;
//! the encoder writes whole frames, or encodes any request or response source straight
//! into the write buffer.

use std::io;

use bytes::{Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use crate::error::{Error, ErrorKind};
use crate::frame::{split_frame_with_max, DEFAULT_MAX_FRAME_SIZE, SIZE_PREFIX_LEN};
use crate::write::{
    EncodeError, EncodeRequest, EncodeRequestExt, EncodeResponse, EncodeResponseExt,
};

use crate::field::SIZE as FIELD_SIZE;

/// A tokio-util [`Decoder`] and [`Encoder`] for Kafka frames of every API.
///
/// Decoding yields each whole frame as a `BytesMut`, size prefix included: give it to
/// [`peek_request`](crate::peek_request), [`parse_request`](crate::parse_request) or
/// [`set_request_correlation_id`](crate::set_request_correlation_id) as it is, or
/// `freeze()` it for an [`OwnedRequest`](crate::OwnedRequest). While a frame is partial the
/// decoder reserves exactly the bytes it still lacks (the size prefix first, then the
/// rest of the frame), never more, and never past the maximum frame size: a size prefix
/// over the maximum ([`FrameTooLarge`](ErrorKind::FrameTooLarge)) or negative
/// ([`NegativeLength`](ErrorKind::NegativeLength)) is an error naming the `size` field,
/// before anything is reserved for it. A stream that ends inside a frame is
/// [`UnexpectedEnd`](ErrorKind::UnexpectedEnd). Error offsets count from the frame's first
/// byte.
///
/// A size prefix is only a claim. A server that reads frames from peers it does not trust
/// sets [`with_max_reserve`](KafkaFrameCodec::with_max_reserve): the decoder then reserves
/// at most that many bytes ahead of what has arrived, so a peer that announces a large
/// frame and sends a few bytes costs a few bytes, and memory grows with the bytes received.
///
/// Encoding takes whole frames (`Bytes`, `BytesMut`, `&[u8]`), checked to be exactly one
/// frame each; or a source and a version ([`RequestAt`], [`ResponseAt`]), measured once
/// and written straight into the write buffer. The maximum frame size applies to what is
/// read only: the two directions of a connection have different limits, and a proxy
/// forwards what the other side sent.
///
/// ```
/// use futures_util::StreamExt;
/// use kafka_elect_leaders::{parse_request, KafkaFrameCodec};
/// use tokio_util::codec::FramedRead;
///
/// let stream = [
///     std::fs::read("corpus/request-v0.bin").unwrap(),
///     std::fs::read("corpus/request-v2-min.bin").unwrap(),
/// ]
/// .concat();
/// let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// runtime.block_on(async {
///     let mut frames = FramedRead::new(&stream[..], KafkaFrameCodec::new());
///     let mut versions = Vec::new();
///     while let Some(frame) = frames.next().await {
///         versions.push(parse_request(&frame.unwrap()).unwrap().version());
///     }
///     assert_eq!(versions, [0, 2]);
/// });
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KafkaFrameCodec {
    max_frame_size: usize,
    max_reserve: usize,
}

impl Default for KafkaFrameCodec {
    fn default() -> Self {
        Self::new()
    }
}

impl KafkaFrameCodec {
    /// A codec that reads frames of up to [`DEFAULT_MAX_FRAME_SIZE`] (Kafka's
    /// `socket.request.max.bytes`).
    pub const fn new() -> Self {
        KafkaFrameCodec {
            max_frame_size: DEFAULT_MAX_FRAME_SIZE,
            max_reserve: usize::MAX,
        }
    }

    /// Sets the largest frame read: the size prefix's value, not counting the prefix.
    pub const fn with_max_frame_size(mut self, max_frame_size: usize) -> Self {
        self.max_frame_size = max_frame_size;
        self
    }

    /// The largest frame read: the size prefix's value, not counting the prefix.
    pub const fn max_frame_size(&self) -> usize {
        self.max_frame_size
    }

    /// Sets how many bytes the decoder reserves at most, at a time, for a partial frame
    /// (by default all it lacks). With a step, the buffer grows as the frame's bytes
    /// arrive, never by a size read off the wire alone.
    pub const fn with_max_reserve(mut self, max_reserve: usize) -> Self {
        self.max_reserve = max_reserve;
        self
    }

    /// The length of the whole frame at the front of `buf`, or how many bytes it lacks.
    fn next_frame(&self, buf: &[u8]) -> Result<Result<usize, usize>, Error> {
        match split_frame_with_max(buf, self.max_frame_size) {
            Ok((frame, _)) => Ok(Ok(frame.len())),
            Err(e) => match e.needed() {
                Some(needed) => Ok(Err(needed)),
                None => Err(e),
            },
        }
    }
}

impl Decoder for KafkaFrameCodec {
    type Item = BytesMut;
    type Error = CodecError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<BytesMut>, CodecError> {
        match self.next_frame(src)? {
            Ok(len) => Ok(Some(src.split_to(len))),
            Err(needed) => {
                src.reserve(needed.min(self.max_reserve));
                Ok(None)
            }
        }
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<BytesMut>, CodecError> {
        if src.is_empty() {
            return Ok(None);
        }
        match self.next_frame(src)? {
            Ok(len) => Ok(Some(src.split_to(len))),
            Err(needed) => Err(CodecError::Frame(Error::new(
                ErrorKind::UnexpectedEnd { needed },
                FIELD_SIZE,
                0,
            ))),
        }
    }
}

/// Checks that `frame` is exactly one frame: its size prefix says its length.
fn check_whole_frame(frame: &[u8]) -> Result<(), Error> {
    let Some(actual) = frame.len().checked_sub(SIZE_PREFIX_LEN) else {
        let needed = SIZE_PREFIX_LEN - frame.len();
        return Err(Error::new(
            ErrorKind::UnexpectedEnd { needed },
            FIELD_SIZE,
            0,
        ));
    };
    let declared = match split_frame_with_max(frame, usize::MAX) {
        Ok((whole, _)) => whole.len() - SIZE_PREFIX_LEN,
        Err(e) => match e.needed() {
            Some(needed) => actual + needed,
            None => return Err(e),
        },
    };
    if declared != actual {
        return Err(Error::new(
            ErrorKind::SizeMismatch { declared, actual },
            FIELD_SIZE,
            0,
        ));
    }
    Ok(())
}

fn put_frame(frame: &[u8], dst: &mut BytesMut) -> Result<(), CodecError> {
    check_whole_frame(frame)?;
    dst.extend_from_slice(frame);
    Ok(())
}

/// A whole frame, copied into the write buffer after checking its size prefix.
impl Encoder<Bytes> for KafkaFrameCodec {
    type Error = CodecError;

    fn encode(&mut self, frame: Bytes, dst: &mut BytesMut) -> Result<(), CodecError> {
        put_frame(&frame, dst)
    }
}

/// A whole frame, copied into the write buffer after checking its size prefix.
impl Encoder<BytesMut> for KafkaFrameCodec {
    type Error = CodecError;

    fn encode(&mut self, frame: BytesMut, dst: &mut BytesMut) -> Result<(), CodecError> {
        put_frame(&frame, dst)
    }
}

/// A whole frame, copied into the write buffer after checking its size prefix.
impl Encoder<&[u8]> for KafkaFrameCodec {
    type Error = CodecError;

    fn encode(&mut self, frame: &[u8], dst: &mut BytesMut) -> Result<(), CodecError> {
        put_frame(frame, dst)
    }
}

/// An ElectLeaders request source and the version to encode it at: what
/// [`KafkaFrameCodec`] encodes straight into its write buffer (measured once, exactly the
/// frame's length reserved, no copy through another buffer).
///
/// ```
/// use bytes::BytesMut;
/// use kafka_elect_leaders::{parse_request, KafkaFrameCodec, RequestAt};
/// use tokio_util::codec::Encoder;
///
/// let frame = std::fs::read("corpus/request-v2-multi.bin").unwrap();
/// let request = parse_request(&frame).unwrap();
/// let edit = request.edit().retain_topics(|t| t.topic() != b"payments");
/// let mut out = BytesMut::new();
/// KafkaFrameCodec::new().encode(RequestAt::new(edit, 2), &mut out).unwrap();
/// assert_eq!(out.len(), out.capacity());
/// assert_eq!(parse_request(&out).unwrap().topic_partitions().unwrap().len(), 4);
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
#[derive(Clone, Copy, Debug)]
pub struct RequestAt<R> {
    /// What to encode: data, a parsed view, an edit.
    pub source: R,
    /// The version to encode it at.
    pub version: i16,
}

impl<R> RequestAt<R> {
    /// `source` at `version`.
    pub const fn new(source: R, version: i16) -> Self {
        RequestAt { source, version }
    }
}

/// An ElectLeaders response source and the version to encode it at (the request's); see
/// [`RequestAt`].
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
#[derive(Clone, Copy, Debug)]
pub struct ResponseAt<R> {
    /// What to encode: data, a parsed view, an edit, an error response.
    pub source: R,
    /// The version to encode it at: the request's.
    pub version: i16,
}

impl<R> ResponseAt<R> {
    /// `source` at `version`.
    pub const fn new(source: R, version: i16) -> Self {
        ResponseAt { source, version }
    }
}

/// Measures the request once, reserves exactly its length and writes it; on an error the
/// write buffer is left as it was.
impl<R: EncodeRequest> Encoder<RequestAt<R>> for KafkaFrameCodec {
    type Error = CodecError;

    fn encode(&mut self, item: RequestAt<R>, dst: &mut BytesMut) -> Result<(), CodecError> {
        let len = item.source.encoded_len(item.version)?;
        item.source.encode_with_len(item.version, len, dst)?;
        Ok(())
    }
}

/// Measures the response once, reserves exactly its length and writes it; on an error the
/// write buffer is left as it was.
impl<R: EncodeResponse> Encoder<ResponseAt<R>> for KafkaFrameCodec {
    type Error = CodecError;

    fn encode(&mut self, item: ResponseAt<R>, dst: &mut BytesMut) -> Result<(), CodecError> {
        let len = item.source.encoded_len(item.version)?;
        item.source.encode_with_len(item.version, len, dst)?;
        Ok(())
    }
}

/// What can go wrong reading or writing frames with [`KafkaFrameCodec`].
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
#[derive(Debug)]
#[non_exhaustive]
pub enum CodecError {
    /// Reading or writing the socket failed.
    Io(io::Error),
    /// A frame read is malformed (its size prefix, or a stream that ends inside it), or a
    /// frame given to write is not exactly one frame.
    Frame(Error),
    /// A source given to write cannot be encoded at the version asked for.
    Encode(EncodeError),
}

impl core::fmt::Display for CodecError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CodecError::Io(e) => write!(f, "i/o error: {e}"),
            CodecError::Frame(e) => write!(f, "bad frame: {e}"),
            CodecError::Encode(e) => write!(f, "cannot encode: {e}"),
        }
    }
}

impl std::error::Error for CodecError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CodecError::Io(e) => Some(e),
            CodecError::Frame(e) => Some(e),
            CodecError::Encode(e) => Some(e),
        }
    }
}

impl From<io::Error> for CodecError {
    fn from(e: io::Error) -> Self {
        CodecError::Io(e)
    }
}

impl From<Error> for CodecError {
    fn from(e: Error) -> Self {
        CodecError::Frame(e)
    }
}

impl From<EncodeError> for CodecError {
    fn from(e: EncodeError) -> Self {
        CodecError::Encode(e)
    }
}

/// An I/O error as it was; a frame or encode error as [`io::ErrorKind::InvalidData`].
impl From<CodecError> for io::Error {
    fn from(e: CodecError) -> Self {
        match e {
            CodecError::Io(e) => e,
            other => io::Error::new(io::ErrorKind::InvalidData, other),
        }
    }
}
