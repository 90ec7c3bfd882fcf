//! Wire primitives as nom 8 parsers: integers, unsigned varints, classic and compact strings
//! and arrays, with every length bounded by the bytes that remain.
//!
//! Every parser here runs over a suffix of one frame and knows, through [`Cx`], where that
//! frame ends, so an error can carry the absolute byte offset of the field it was reading.
//! The parsers run in nom's streaming mode: running out of bytes is `Err::Incomplete`, which
//! [`field`] turns into [`ErrorKind::UnexpectedEnd`] with the field's name and offset,
//! because inside a frame whose bytes are all present, running out means malformed.

use nom::error::ParseError;
use nom::{Err, IResult, Needed, Parser};

use crate::error::{Error, ErrorKind};

/// Result of a wire parser: the rest of the input and the value, or an [`Error`].
pub type PResult<'a, T> = IResult<&'a [u8], T, Error>;

/// The longest string Kafka reads or writes (`Short.MAX_VALUE`).
pub const MAX_STRING_LEN: usize = i16::MAX as usize;

impl<'a> ParseError<&'a [u8]> for Error {
    // Only reached if a nom parser runs in complete mode; ours run in streaming mode, so
    // this is a fallback that still names "an unexpected end" rather than panicking.
    fn from_error_kind(_input: &'a [u8], _kind: nom::error::ErrorKind) -> Self {
        Error::new(ErrorKind::UnexpectedEnd { needed: 1 }, "", 0)
    }

    fn append(_input: &'a [u8], _kind: nom::error::ErrorKind, other: Self) -> Self {
        other
    }
}

/// Turns a nom error into the public one. `Incomplete` cannot come out of the parsers here
/// (each field maps it), but if it did it would mean the input ended at `end`.
pub(crate) fn into_error(e: Err<Error>, end: usize) -> Error {
    match e {
        Err::Error(e) | Err::Failure(e) => e,
        Err::Incomplete(_) => Error::new(ErrorKind::UnexpectedEnd { needed: 1 }, "", end),
    }
}

/// Parse context: where the frame ends (to turn positions into offsets) and whether the
/// version is flexible (compact encodings and tagged fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cx {
    /// Length of the input slice the frame is parsed from; every parsed slice is a suffix.
    pub end: usize,
    /// True from version 2 on: compact strings and arrays, tagged fields.
    pub flexible: bool,
}

impl Cx {
    /// Absolute offset of `input`, a suffix of the frame.
    #[inline]
    pub fn offset(self, input: &[u8]) -> usize {
        self.end - input.len()
    }

    /// An error at the start of `input`.
    #[inline]
    pub fn error(self, kind: ErrorKind, field: &'static str, input: &[u8]) -> Err<Error> {
        Err::Failure(Error::new(kind, field, self.offset(input)))
    }
}

/// Runs `p` as the reading of one named field: running out of input becomes
/// [`ErrorKind::UnexpectedEnd`] at the field's offset, and errors that do not name a field
/// yet get this one.
#[inline]
pub(crate) fn field<'a, O, P>(
    cx: Cx,
    name: &'static str,
    mut p: P,
) -> impl Parser<&'a [u8], Output = O, Error = Error>
where
    P: Parser<&'a [u8], Output = O, Error = Error>,
{
    move |input: &'a [u8]| match p.parse(input) {
        Ok(ok) => Ok(ok),
        Err(Err::Incomplete(needed)) => {
            let needed = match needed {
                Needed::Size(n) => n.get(),
                Needed::Unknown => 1,
            };
            Err(cx.error(ErrorKind::UnexpectedEnd { needed }, name, input))
        }
        Err(Err::Error(e) | Err::Failure(e)) => {
            let e = if e.field.is_empty() {
                Error::new(e.kind, name, cx.offset(input))
            } else {
                e
            };
            Err(Err::Failure(e))
        }
    }
}

/// int8
#[inline]
pub(crate) fn int8<'a>(
    cx: Cx,
    name: &'static str,
) -> impl Parser<&'a [u8], Output = i8, Error = Error> {
    field(cx, name, nom::number::streaming::be_i8)
}

/// int16, big-endian
#[inline]
pub(crate) fn int16<'a>(
    cx: Cx,
    name: &'static str,
) -> impl Parser<&'a [u8], Output = i16, Error = Error> {
    field(cx, name, nom::number::streaming::be_i16)
}

/// int32, big-endian
#[inline]
pub(crate) fn int32<'a>(
    cx: Cx,
    name: &'static str,
) -> impl Parser<&'a [u8], Output = i32, Error = Error> {
    field(cx, name, nom::number::streaming::be_i32)
}

/// Unsigned varint, as Kafka's `ByteUtils.readUnsignedVarint`: 7 bits a byte, low bits
/// first, at most 5 bytes; non-minimal encodings are accepted. Stricter than Kafka in one
/// way: a fifth byte that would carry bits past 32 is an error, not a silent wrap.
#[inline]
pub(crate) fn uvarint<'a>(
    cx: Cx,
    name: &'static str,
) -> impl Parser<&'a [u8], Output = u32, Error = Error> {
    field(cx, name, move |input: &'a [u8]| raw_uvarint(cx, input))
}

#[inline]
fn raw_uvarint(cx: Cx, input: &[u8]) -> PResult<'_, u32> {
    // One byte covers every count and length below 128: the common case.
    match input.first() {
        Some(&b) if b < 0x80 => return Ok((&input[1..], u32::from(b))),
        None => return Err(Err::Incomplete(Needed::new(1))),
        Some(_) => {}
    }
    let mut value: u32 = 0;
    for (i, &b) in input.iter().take(5).enumerate() {
        if i == 4 {
            if b & 0x80 != 0 {
                return Err(cx.error(ErrorKind::VarintTooLong, "", input));
            }
            if b > 0x0f {
                return Err(cx.error(ErrorKind::VarintOverflow, "", input));
            }
        }
        value |= u32::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok((&input[i + 1..], value));
        }
    }
    Err(Err::Incomplete(Needed::new(1)))
}

/// Bytes of the string body, or `None` for null. `nullable` says whether null is allowed.
///
/// classic: int16 length (-1 = null) + bytes; compact: uvarint length+1 (0 = null) + bytes.
#[inline]
pub(crate) fn string<'a>(
    cx: Cx,
    nullable: bool,
    name: &'static str,
) -> impl Parser<&'a [u8], Output = Option<&'a [u8]>, Error = Error> {
    move |input: &'a [u8]| {
        let (rest, len) = if cx.flexible {
            let (rest, n) = uvarint(cx, name).parse(input)?;
            (rest, i64::from(n) - 1)
        } else {
            let (rest, n) = int16(cx, name).parse(input)?;
            (rest, i64::from(n))
        };
        if len < 0 {
            return if nullable {
                Ok((rest, None))
            } else {
                Err(null_error(cx, len, name, input))
            };
        }
        let len = len as usize;
        if len > MAX_STRING_LEN {
            return Err(cx.error(ErrorKind::StringTooLong { len }, name, input));
        }
        match rest.get(..len) {
            Some(bytes) => Ok((&rest[len..], Some(bytes))),
            None => Err(cx.error(
                ErrorKind::UnexpectedEnd {
                    needed: len - rest.len(),
                },
                name,
                input,
            )),
        }
    }
}

/// A non-nullable string.
#[inline]
pub(crate) fn string_non_null<'a>(
    cx: Cx,
    name: &'static str,
) -> impl Parser<&'a [u8], Output = &'a [u8], Error = Error> {
    // `string` with `nullable = false` never yields `None`.
    string(cx, false, name).map(|s| s.unwrap_or_default())
}

fn null_error(cx: Cx, len: i64, name: &'static str, at: &[u8]) -> Err<Error> {
    let kind = if len == -1 {
        ErrorKind::UnexpectedNull
    } else {
        ErrorKind::NegativeLength(len as i32)
    };
    cx.error(kind, name, at)
}

/// An array's element count, or `None` for null, checked against the bytes that remain:
/// `count * min_size` must fit, so nothing is walked (or sized) from an impossible count.
///
/// classic: int32 count (negative = null); compact: uvarint count+1 (0 = null).
#[inline]
pub(crate) fn array_count<'a>(
    cx: Cx,
    nullable: bool,
    min_size: usize,
    name: &'static str,
) -> impl Parser<&'a [u8], Output = Option<usize>, Error = Error> {
    move |input: &'a [u8]| {
        let (rest, count) = if cx.flexible {
            let (rest, n) = uvarint(cx, name).parse(input)?;
            (rest, i64::from(n) - 1)
        } else {
            let (rest, n) = int32(cx, name).parse(input)?;
            (rest, i64::from(n))
        };
        if count < 0 {
            return if nullable {
                Ok((rest, None))
            } else {
                Err(null_error(cx, count, name, input))
            };
        }
        let count = bounded_count(cx, count as usize, min_size, name, input, rest)?;
        Ok((rest, Some(count)))
    }
}

/// Refuses a count whose smallest encoding (`count * min_size`) is more than the bytes left
/// after it (`rest`); `at` is where the count starts.
#[inline]
pub(crate) fn bounded_count(
    cx: Cx,
    count: usize,
    min_size: usize,
    name: &'static str,
    at: &[u8],
    rest: &[u8],
) -> Result<usize, Err<Error>> {
    match count.checked_mul(min_size) {
        Some(least) if least <= rest.len() => Ok(count),
        _ => Err(cx.error(
            ErrorKind::CountTooLarge {
                count,
                remaining: rest.len(),
            },
            name,
            at,
        )),
    }
}

/// `[]int32`: the count, then `4 * count` bytes, taken as one slice. Parsing costs a bounds
/// check, not a walk over the elements.
#[inline]
pub(crate) fn int32_array<'a>(
    cx: Cx,
    nullable: bool,
    name: &'static str,
) -> impl Parser<&'a [u8], Output = Option<&'a [u8]>, Error = Error> {
    move |input: &'a [u8]| {
        let (rest, count) = array_count(cx, nullable, 4, name).parse(input)?;
        match count {
            None => Ok((rest, None)),
            // `array_count` checked that `4 * count` bytes remain.
            Some(n) => Ok((&rest[n * 4..], Some(&rest[..n * 4]))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cx(input: &[u8], flexible: bool) -> Cx {
        Cx {
            end: input.len(),
            flexible,
        }
    }

    fn varint(input: &[u8]) -> Result<(usize, u32), Error> {
        let c = cx(input, true);
        match uvarint(c, "v").parse(input) {
            Ok((rest, v)) => Ok((input.len() - rest.len(), v)),
            Err(Err::Failure(e) | Err::Error(e)) => Err(e),
            Err(Err::Incomplete(_)) => unreachable!("field() maps Incomplete"),
        }
    }

    #[test]
    fn uvarint_known_answers() {
        assert_eq!(varint(&[0x00]), Ok((1, 0)));
        assert_eq!(varint(&[0x7f]), Ok((1, 127)));
        assert_eq!(varint(&[0x80, 0x01]), Ok((2, 128)));
        assert_eq!(varint(&[0xac, 0x02]), Ok((2, 300)));
        // Non-minimal, accepted as Kafka does.
        assert_eq!(varint(&[0x82, 0x00]), Ok((2, 2)));
        assert_eq!(varint(&[0x80, 0x80, 0x80, 0x80, 0x00]), Ok((5, 0)));
        assert_eq!(varint(&[0xff, 0xff, 0xff, 0xff, 0x0f]), Ok((5, u32::MAX)));
    }

    #[test]
    fn uvarint_errors() {
        let e = varint(&[0xff, 0xff, 0xff, 0xff, 0x80, 0x00]).unwrap_err();
        assert_eq!(
            (e.kind, e.field, e.offset),
            (ErrorKind::VarintTooLong, "v", 0)
        );
        let e = varint(&[0xff, 0xff, 0xff, 0xff, 0x10]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::VarintOverflow);
        let e = varint(&[0x80, 0x80]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::UnexpectedEnd { needed: 1 });
        let e = varint(&[]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::UnexpectedEnd { needed: 1 });
    }

    #[test]
    fn classic_string_lengths() {
        let input = [0x00, 0x02, b'h', b'i', 0xff];
        let (rest, s) = string(cx(&input, false), true, "s").parse(&input).unwrap();
        assert_eq!((s, rest), (Some(&b"hi"[..]), &[0xff][..]));
        let null = [0xff, 0xff];
        assert_eq!(
            string(cx(&null, false), true, "s").parse(&null).unwrap().1,
            None
        );
        let e = string(cx(&null, false), false, "s")
            .parse(&null)
            .unwrap_err();
        assert_eq!(
            e,
            Err::Failure(Error::new(ErrorKind::UnexpectedNull, "s", 0))
        );
        let neg = [0xff, 0xfe];
        // Any negative length on a nullable string reads as null, as in Kafka.
        assert_eq!(
            string(cx(&neg, false), true, "s").parse(&neg).unwrap().1,
            None
        );
        let e = string(cx(&neg, false), false, "s").parse(&neg).unwrap_err();
        assert_eq!(
            e,
            Err::Failure(Error::new(ErrorKind::NegativeLength(-2), "s", 0))
        );
        let short = [0x00, 0x05, b'a'];
        let e = string(cx(&short, false), false, "s")
            .parse(&short)
            .unwrap_err();
        assert_eq!(
            e,
            Err::Failure(Error::new(ErrorKind::UnexpectedEnd { needed: 4 }, "s", 0))
        );
    }

    #[test]
    fn compact_string_limit() {
        // 32767 + 1 = 0x8000 → varint 80 80 02
        let mut ok = [0u8; 3 + 32767];
        ok[..3].copy_from_slice(&[0x80, 0x80, 0x02]);
        let (rest, s) = string(cx(&ok, true), false, "s").parse(&ok).unwrap();
        assert_eq!((s.map(<[u8]>::len), rest.len()), (Some(32767), 0));
        // 32768 + 1 = 0x8001 → varint 81 80 02
        let mut over = [0u8; 3 + 32768];
        over[..3].copy_from_slice(&[0x81, 0x80, 0x02]);
        let e = string(cx(&over, true), false, "s")
            .parse(&over)
            .unwrap_err();
        assert_eq!(
            e,
            Err::Failure(Error::new(ErrorKind::StringTooLong { len: 32768 }, "s", 0))
        );
    }

    #[test]
    fn array_count_is_bounded_by_remaining_bytes() {
        let input = [0x00, 0x00, 0x00, 0x02, 1, 2, 3, 4, 5, 6, 7];
        let e = int32_array(cx(&input, false), false, "a")
            .parse(&input)
            .unwrap_err();
        let kind = ErrorKind::CountTooLarge {
            count: 2,
            remaining: 7,
        };
        assert_eq!(e, Err::Failure(Error::new(kind, "a", 0)));
        let huge = [0x7f, 0xff, 0xff, 0xff];
        let e = int32_array(cx(&huge, false), false, "a")
            .parse(&huge)
            .unwrap_err();
        let kind = ErrorKind::CountTooLarge {
            count: i32::MAX as usize,
            remaining: 0,
        };
        assert_eq!(e, Err::Failure(Error::new(kind, "a", 0)));
        let null = [0x00];
        assert_eq!(
            int32_array(cx(&null, true), true, "a")
                .parse(&null)
                .unwrap()
                .1,
            None
        );
        let e = int32_array(cx(&null, true), false, "a")
            .parse(&null)
            .unwrap_err();
        assert_eq!(
            e,
            Err::Failure(Error::new(ErrorKind::UnexpectedNull, "a", 0))
        );
    }
}
