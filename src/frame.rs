//! Frames: the int32 size prefix, splitting a byte stream into whole frames, and a cheap
//! peek at any request's header.

use nom::Parser;

use crate::error::{Error, ErrorKind};
use crate::wire::{self, Cx, PResult};

/// Bytes in the size prefix that starts every frame.
pub const SIZE_PREFIX_LEN: usize = 4;

/// The largest frame accepted by default: 100 MiB, Kafka's `socket.request.max.bytes`.
pub const DEFAULT_MAX_FRAME_SIZE: usize = 100 * 1024 * 1024;

use crate::field::SIZE as FIELD_SIZE;

/// Reads the size prefix: the number of bytes that follow it. Streaming: fewer than 4 bytes
/// is [`ErrorKind::Incomplete`].
fn read_size(buf: &[u8], max: usize) -> Result<usize, Error> {
    let Some(prefix) = buf.get(..SIZE_PREFIX_LEN) else {
        let needed = SIZE_PREFIX_LEN - buf.len();
        return Err(Error::new(ErrorKind::Incomplete { needed }, FIELD_SIZE, 0));
    };
    let size = i32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
    let Ok(size) = usize::try_from(size) else {
        return Err(Error::new(ErrorKind::NegativeLength(size), FIELD_SIZE, 0));
    };
    if size > max {
        return Err(Error::new(
            ErrorKind::FrameTooLarge { size, max },
            FIELD_SIZE,
            0,
        ));
    }
    Ok(size)
}

/// Splits one whole frame (size prefix included) off the front of `buf`, which holds a byte
/// stream, and returns it with the rest of the buffer.
///
/// When `buf` holds less than a whole frame the error is [`ErrorKind::Incomplete`] with the
/// number of bytes still missing; a negative size or one over
/// [`DEFAULT_MAX_FRAME_SIZE`] is malformed.
///
/// ```
/// use kafka_elect_leaders::split_frame;
/// let stream = [0, 0, 0, 2, 0xaa, 0xbb, 0, 0, 0];
/// let (frame, rest) = split_frame(&stream).unwrap();
/// assert_eq!((frame, rest), (&stream[..6], &stream[6..]));
/// assert_eq!(split_frame(rest).unwrap_err().needed(), Some(1));
/// ```
pub fn split_frame(buf: &[u8]) -> Result<(&[u8], &[u8]), Error> {
    split_frame_with_max(buf, DEFAULT_MAX_FRAME_SIZE)
}

/// [`split_frame`] with another maximum frame size (the size prefix's value, not counting
/// the prefix itself).
pub fn split_frame_with_max(buf: &[u8], max_frame_size: usize) -> Result<(&[u8], &[u8]), Error> {
    let size = read_size(buf, max_frame_size)?;
    let total = SIZE_PREFIX_LEN + size;
    if buf.len() < total {
        let needed = total - buf.len();
        return Err(Error::new(ErrorKind::Incomplete { needed }, FIELD_SIZE, 0));
    }
    Ok(buf.split_at(total))
}

/// Iterator over the whole frames at the front of a buffer holding a byte stream.
///
/// Yields each whole frame (size prefix included). Stops at a partial frame at the end,
/// which [`remainder`](Frames::remainder) returns so that the caller can keep it for the
/// next read; yields one error and stops at a malformed size prefix. Error offsets count
/// from the start of the buffer.
///
/// A read loop: read what the socket has, take the whole frames, keep the partial one.
///
/// ```
/// use std::io::Read;
/// use kafka_elect_leaders::{parse_request, Frames};
///
/// let stream = [
///     std::fs::read("corpus/request-v0.bin").unwrap(),
///     std::fs::read("corpus/request-v2-multi.bin").unwrap(),
/// ]
/// .concat();
/// let mut socket = &stream[..]; // any `Read`: a TcpStream, a file, ...
///
/// let mut buf = Vec::new();
/// let mut chunk = [0u8; 100]; // a small read buffer, so that frames arrive in pieces
/// let mut correlation_ids = Vec::new();
/// loop {
///     let n = socket.read(&mut chunk).unwrap();
///     if n == 0 {
///         break;
///     }
///     buf.extend_from_slice(&chunk[..n]);
///     let mut frames = Frames::new(&buf);
///     for frame in frames.by_ref() {
///         // An error here is a malformed size prefix: the stream cannot be resynchronised.
///         let frame = frame.unwrap();
///         correlation_ids.push(parse_request(frame).unwrap().correlation_id());
///     }
///     // `frames.needed()` says how many bytes the partial frame at the end still lacks.
///     let used = frames.offset();
///     buf.drain(..used);
/// }
/// assert_eq!(correlation_ids, [7, 16]);
/// assert!(buf.is_empty(), "no partial frame left");
/// ```
///
/// One frame at a time, with [`split_frame`]: a stream that ends too early is an
/// [`Error`] that [`is_incomplete`](Error::is_incomplete), and
/// [`needed`](Error::needed) says by how many bytes.
///
/// ```
/// use kafka_elect_leaders::{parse_request, split_frame, Frames};
///
/// let frame = std::fs::read("corpus/request-v2-min.bin").unwrap();
/// let received = &frame[..20]; // 9 bytes are still on their way
/// let error = split_frame(received).unwrap_err();
/// assert!(error.is_incomplete());
/// assert_eq!(error.needed(), Some(9));
/// // Frames stops there, and says the same.
/// let mut frames = Frames::new(received);
/// assert!(frames.next().is_none());
/// assert_eq!((frames.needed(), frames.remainder().len()), (Some(9), 20));
///
/// // A size prefix that no frame can have is not incomplete: it is malformed.
/// let error = split_frame(&[0xff, 0xff, 0xff, 0xff]).unwrap_err();
/// assert!(!error.is_incomplete());
/// assert_eq!(error.needed(), None);
/// # let (whole, rest) = split_frame(&frame).unwrap();
/// # assert!(rest.is_empty());
/// # parse_request(whole).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct Frames<'a> {
    rest: &'a [u8],
    consumed: usize,
    max_frame_size: usize,
    failed: bool,
}

impl<'a> Frames<'a> {
    /// Frames of `buf`, with the default maximum frame size.
    pub const fn new(buf: &'a [u8]) -> Self {
        Frames {
            rest: buf,
            consumed: 0,
            max_frame_size: DEFAULT_MAX_FRAME_SIZE,
            failed: false,
        }
    }

    /// Sets the maximum frame size (the size prefix's value).
    pub const fn with_max_frame_size(mut self, max_frame_size: usize) -> Self {
        self.max_frame_size = max_frame_size;
        self
    }

    /// The bytes not yet yielded: after iteration ends, the partial frame at the end of the
    /// buffer (or the malformed one).
    pub const fn remainder(&self) -> &'a [u8] {
        self.rest
    }

    /// Offset in the buffer of [`remainder`](Frames::remainder).
    pub const fn offset(&self) -> usize {
        self.consumed
    }

    /// How many more bytes the partial frame at the end needs, if there is one.
    pub fn needed(&self) -> Option<usize> {
        if self.rest.is_empty() {
            return None;
        }
        split_frame_with_max(self.rest, self.max_frame_size)
            .err()
            .and_then(|e| e.needed())
    }
}

impl<'a> Iterator for Frames<'a> {
    type Item = Result<&'a [u8], Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.rest.is_empty() {
            return None;
        }
        match split_frame_with_max(self.rest, self.max_frame_size) {
            Ok((frame, rest)) => {
                self.rest = rest;
                self.consumed += frame.len();
                Some(Ok(frame))
            }
            Err(e) if e.is_incomplete() => None,
            Err(mut e) => {
                self.failed = true;
                e.offset += self.consumed;
                Some(Err(e))
            }
        }
    }
}

impl core::iter::FusedIterator for Frames<'_> {}

/// The first fields of any Kafka request frame, whatever its API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RequestPeek {
    /// The size prefix: bytes that follow it.
    pub size: usize,
    /// `RequestApiKey`: which API the request is for (43 for ElectLeaders).
    pub api_key: i16,
    /// `RequestApiVersion`.
    pub api_version: i16,
    /// `CorrelationId`, echoed by the response.
    pub correlation_id: i32,
}

impl RequestPeek {
    /// True for an ElectLeaders request of a version this crate reads.
    pub const fn is_elect_leaders(&self) -> bool {
        self.api_key == crate::version::API_KEY
            && self.api_version >= crate::version::MIN_VERSION
            && self.api_version <= crate::version::MAX_VERSION
    }

    /// Where `RequestApiKey` lies in the frame peeked at (2 bytes after the size prefix).
    pub const fn api_key_range(&self) -> core::ops::Range<usize> {
        SIZE_PREFIX_LEN..SIZE_PREFIX_LEN + 2
    }

    /// Where `RequestApiVersion` lies in the frame peeked at (2 bytes).
    pub const fn api_version_range(&self) -> core::ops::Range<usize> {
        SIZE_PREFIX_LEN + 2..SIZE_PREFIX_LEN + 4
    }

    /// Where `CorrelationId` lies in the frame peeked at (4 bytes).
    pub const fn correlation_id_range(&self) -> core::ops::Range<usize> {
        SIZE_PREFIX_LEN + 4..SIZE_PREFIX_LEN + 8
    }
}

/// Reads `(api_key, api_version, correlation_id)` from the start of any request frame
/// without parsing the rest: 12 bytes, the frame need not be whole.
///
/// Streaming: fewer than 12 bytes is [`ErrorKind::Incomplete`]. A size prefix that is
/// negative, or too small to hold those fields, is malformed.
///
/// ```
/// use kafka_elect_leaders::{peek_request, API_KEY};
///
/// let frame = std::fs::read("corpus/request-v1-unclean.bin").unwrap();
/// // The first 12 bytes are enough.
/// let peek = peek_request(&frame[..12]).unwrap();
/// assert_eq!((peek.api_key, peek.api_version), (API_KEY, 1));
/// assert_eq!(peek.correlation_id, i32::MAX);
/// assert_eq!(peek.size + 4, frame.len());
/// assert!(peek.is_elect_leaders());
///
/// // Any API: the header of an ApiVersions (18) v3 request, correlation id 5.
/// let api_versions = [0, 0, 0, 8, 0, 18, 0, 3, 0, 0, 0, 5];
/// let peek = peek_request(&api_versions).unwrap();
/// assert_eq!((peek.api_key, peek.api_version, peek.correlation_id), (18, 3, 5));
/// assert!(!peek.is_elect_leaders());
///
/// // Fewer than 12 bytes: read more.
/// assert_eq!(peek_request(&frame[..5]).unwrap_err().needed(), Some(7));
/// ```
pub fn peek_request(buf: &[u8]) -> Result<RequestPeek, Error> {
    let fields = |cx| {
        (
            wire::int16(cx, crate::header::FIELD_API_KEY),
            wire::int16(cx, crate::header::FIELD_API_VERSION),
            wire::int32(cx, crate::header::FIELD_CORRELATION_ID),
        )
    };
    let (size, (api_key, api_version, correlation_id)) = peek(buf, 8, fields)?;
    Ok(RequestPeek {
        size,
        api_key,
        api_version,
        correlation_id,
    })
}

/// The first fields of any Kafka response frame, whatever its API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ResponsePeek {
    /// The size prefix: bytes that follow it.
    pub size: usize,
    /// `CorrelationId`: the request this response answers, on the same connection.
    pub correlation_id: i32,
}

/// Reads the correlation id from the start of any response frame without parsing the rest:
/// 8 bytes, the frame need not be whole.
///
/// A response carries neither its API key nor its version: pair it, by this correlation id,
/// with the request that asked for it on the same connection, and parse it with that
/// request's version.
///
/// Streaming: fewer than 8 bytes is [`ErrorKind::Incomplete`]. A size prefix that is
/// negative, or too small to hold the correlation id, is malformed.
///
/// ```
/// use kafka_elect_leaders::peek_response;
/// let frame = [0, 0, 0, 5, 0, 0, 1, 2, 0];
/// let peek = peek_response(&frame).unwrap();
/// assert_eq!((peek.size, peek.correlation_id), (5, 0x102));
/// assert_eq!(peek_response(&frame[..6]).unwrap_err().needed(), Some(2));
/// ```
pub fn peek_response(buf: &[u8]) -> Result<ResponsePeek, Error> {
    let field = |cx| wire::int32(cx, crate::header::FIELD_RESPONSE_CORRELATION_ID);
    let (size, correlation_id) = peek(buf, 4, field)?;
    Ok(ResponsePeek {
        size,
        correlation_id,
    })
}

/// Reads the `len` bytes after the size prefix with the parser `fields` makes, without the
/// frame being whole: fewer than `SIZE_PREFIX_LEN + len` bytes is `Incomplete` by all that
/// is missing at once (not just the prefix's), and the fields are read as if the frame
/// ended at its size, so a size too small to hold them is an `UnexpectedEnd` that names the
/// field cut off. Returns the size and the fields.
fn peek<'a, P, T>(
    buf: &'a [u8],
    len: usize,
    fields: impl FnOnce(Cx) -> P,
) -> Result<(usize, T), Error>
where
    P: Parser<&'a [u8], Output = T, Error = Error>,
{
    let peek_len = SIZE_PREFIX_LEN + len;
    let size = match read_size(buf, usize::MAX) {
        Ok(size) => size,
        Err(e) if e.is_incomplete() => 0,
        Err(e) => return Err(e),
    };
    if buf.len() < peek_len {
        let needed = peek_len - buf.len();
        return Err(Error::new(ErrorKind::Incomplete { needed }, FIELD_SIZE, 0));
    }
    let end = (SIZE_PREFIX_LEN + size).min(peek_len);
    let cx = Cx {
        end,
        flexible: false,
    };
    let parsed: PResult<'_, T> = fields(cx).parse(&buf[SIZE_PREFIX_LEN..end]);
    match parsed {
        Ok((_, value)) => Ok((size, value)),
        Err(e) => Err(wire::into_error(e, end)),
    }
}

/// Runs `fields` over the bytes after the size prefix of `buf`, which holds the start of a
/// frame or all of it (bytes after the frame's end are not given to `fields`). A field cut
/// by the end of `buf` while the frame goes on is [`ErrorKind::Incomplete`] with the exact
/// number of bytes missing; one that runs past the frame's end is malformed. Offsets count
/// from the start of `buf`.
pub(crate) fn parse_prefix<'a, T>(
    buf: &'a [u8],
    fields: impl FnOnce(usize, &'a [u8]) -> PResult<'a, T>,
) -> Result<T, Error> {
    let size = read_size(buf, usize::MAX)?;
    let frame_end = SIZE_PREFIX_LEN.saturating_add(size);
    let end = frame_end.min(buf.len());
    match fields(end, &buf[SIZE_PREFIX_LEN..end]) {
        Ok((_, value)) => Ok(value),
        Err(e) => {
            let e = wire::into_error(e, end);
            match e.kind {
                // The bytes given stop before the frame does: more of them will come.
                ErrorKind::UnexpectedEnd { needed } if end < frame_end => Err(Error::new(
                    ErrorKind::Incomplete { needed },
                    e.field,
                    e.offset,
                )),
                _ => Err(e),
            }
        }
    }
}

/// Runs `body` over the bytes after the size prefix of `input`, which must be exactly one
/// frame. Fewer bytes than the size prefix promises (or a cut size prefix) is
/// [`ErrorKind::Incomplete`] with the exact number of bytes missing, whatever field they
/// would have held; more is [`ErrorKind::SizeMismatch`]; bytes left after the body are
/// [`ErrorKind::TrailingBytes`]. Offsets count from the start of `input`.
#[inline(always)]
pub(crate) fn parse_framed<'a, T>(
    input: &'a [u8],
    message: &'static str,
    body: impl FnOnce(usize, &'a [u8]) -> PResult<'a, T>,
) -> Result<T, Error> {
    let declared = read_size(input, usize::MAX)?;
    let actual = input.len() - SIZE_PREFIX_LEN;
    if actual < declared {
        let needed = declared - actual;
        return Err(Error::new(ErrorKind::Incomplete { needed }, FIELD_SIZE, 0));
    }
    if actual > declared {
        return Err(Error::new(
            ErrorKind::SizeMismatch { declared, actual },
            FIELD_SIZE,
            0,
        ));
    }
    let end = input.len();
    let (rest, value) =
        body(end, &input[SIZE_PREFIX_LEN..]).map_err(|e| wire::into_error(e, end))?;
    if !rest.is_empty() {
        let count = rest.len();
        return Err(Error::new(
            ErrorKind::TrailingBytes { count },
            message,
            end - count,
        ));
    }
    Ok(value)
}
