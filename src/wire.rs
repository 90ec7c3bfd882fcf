//! Wire primitives as nom 8 parsers: integers, unsigned varints, classic and compact strings
//! and arrays, with every length bounded by the bytes that remain.
//!
//! Every parser here runs over a suffix of one frame and knows, through [`Cx`], where that
//! frame ends, so an error can carry the absolute byte offset of the field it was reading.
//! Inside a frame whose bytes are all present, running out of input means malformed, so a
//! short field is a [`ErrorKind::UnexpectedEnd`] failure with the field's name and offset,
//! never nom's `Incomplete`.
//!
//! The primitives are small structs implementing nom's [`Parser`] with an always-inlined
//! `process`, so a caller in nom's `Check` output mode pays for the bounds checks and nothing
//! else. The message parsers use that: a list is validated with its elements parsed in
//! `Check` mode (no view is built), and its iterator parses them again in `Emit` mode.

use nom::error::ParseError;
use nom::{Check, Emit, Err, IResult, Mode, OutputM, OutputMode, Parser, Streaming};

use crate::error::{Error, ErrorKind};

/// Result of a wire parser: the rest of the input and the value, or an [`Error`].
pub type PResult<'a, T> = IResult<&'a [u8], T, Error>;

/// Result of a parser run in output mode `OM`: in `Check` mode the value is `()`.
pub(crate) type MResult<'a, OM, T> = nom::PResult<OM, &'a [u8], T, Error>;

/// The error half of [`MResult`], for a parser run in output mode `OM`.
pub(crate) type MErr<OM> = Err<Error, <<OM as OutputMode>::Error as Mode>::Output<Error>>;

/// A step inside a parser whose error half is `Err<Error, X>` (`X` follows the error mode).
type Step<'a, T, X> = Result<(&'a [u8], T), Err<Error, X>>;

/// Output mode that validates and builds nothing: how lists check their elements.
pub(crate) type Validate<OM> = OutputM<Check, <OM as OutputMode>::Error, Streaming>;

/// Output mode that builds values and errors: how whole messages are parsed.
pub(crate) type Build = OutputM<Emit, Emit, Streaming>;

/// Output mode that builds values, with `OM`'s error mode.
pub(crate) type Values<OM> = OutputM<Emit, <OM as OutputMode>::Error, Streaming>;

/// The longest string Kafka reads or writes (`Short.MAX_VALUE`).
pub const MAX_STRING_LEN: usize = i16::MAX as usize;

impl<'a> ParseError<&'a [u8]> for Error {
    // Only reached if a nom combinator reports an error of its own; the parsers here fail
    // with `Err::Failure` carrying a full `Error`, so this is a fallback that still names
    // "an unexpected end" rather than panicking.
    fn from_error_kind(_input: &'a [u8], _kind: nom::error::ErrorKind) -> Self {
        Error::new(ErrorKind::UnexpectedEnd { needed: 1 }, "", 0)
    }

    fn append(_input: &'a [u8], _kind: nom::error::ErrorKind, other: Self) -> Self {
        other
    }
}

/// Turns a nom error into the public one. `Incomplete` cannot come out of the parsers here
/// (each field fails with `UnexpectedEnd`), but if it did it would mean the input ended at
/// `end`.
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
    #[inline(always)]
    pub fn offset(self, input: &[u8]) -> usize {
        self.end - input.len()
    }

    /// A failure at the start of `input`. Kept out of line: errors are the cold path.
    #[cold]
    #[inline(never)]
    pub fn error<X>(self, kind: ErrorKind, field: &'static str, input: &[u8]) -> Err<Error, X> {
        Err::Failure(Error::new(kind, field, self.offset(input)))
    }

    /// `field` needs `needed` bytes at `input` but fewer are left.
    #[cold]
    #[inline(never)]
    fn short<X>(self, field: &'static str, input: &[u8], needed: usize) -> Err<Error, X> {
        let needed = needed - input.len();
        Err::Failure(Error::new(
            ErrorKind::UnexpectedEnd { needed },
            field,
            self.offset(input),
        ))
    }
}

/// Runs a wire parser for its value inside a parser that runs in output mode `OM`: the
/// value is always built (it is an integer or a slice), the error mode is `OM`'s.
pub(crate) trait Value<'a>: Parser<&'a [u8], Error = Error> + Sized {
    #[inline(always)]
    fn value<OM: OutputMode>(
        mut self,
        input: &'a [u8],
    ) -> Result<(&'a [u8], Self::Output), MErr<OM>> {
        self.process::<Values<OM>>(input)
    }
}

impl<'a, P: Parser<&'a [u8], Error = Error>> Value<'a> for P {}

/// `N` bytes, or `UnexpectedEnd` naming the field.
#[inline(always)]
fn take_array<'a, const N: usize, X>(
    cx: Cx,
    name: &'static str,
    input: &'a [u8],
) -> Step<'a, [u8; N], X> {
    if input.len() < N {
        return Err(cx.short(name, input, N));
    }
    // One length check above; `split_at` and the conversion are then known to succeed.
    let (bytes, rest) = input.split_at(N);
    Ok((rest, bytes.try_into().unwrap_or([0; N])))
}

macro_rules! fixed_int {
    ($(#[$doc:meta])* $parser:ident, $ctor:ident, $ty:ty) => {
        $(#[$doc])*
        pub(crate) struct $parser {
            cx: Cx,
            name: &'static str,
        }

        $(#[$doc])*
        #[inline(always)]
        pub(crate) const fn $ctor(cx: Cx, name: &'static str) -> $parser {
            $parser { cx, name }
        }

        impl<'a> Parser<&'a [u8]> for $parser {
            type Output = $ty;
            type Error = Error;

            #[inline(always)]
            fn process<OM: OutputMode>(&mut self, input: &'a [u8]) -> MResult<'a, OM, $ty> {
                const N: usize = core::mem::size_of::<$ty>();
                let (rest, bytes) = take_array::<N, _>(self.cx, self.name, input)?;
                Ok((rest, OM::Output::bind(|| <$ty>::from_be_bytes(bytes))))
            }
        }
    };
}

fixed_int!(
    /// int8
    Int8, int8, i8
);
fixed_int!(
    /// int16, big-endian
    Int16, int16, i16
);
fixed_int!(
    /// int32, big-endian
    Int32, int32, i32
);

/// Unsigned varint, as Kafka's `ByteUtils.readUnsignedVarint`: 7 bits a byte, low bits
/// first, at most 5 bytes; non-minimal encodings are accepted. Stricter than Kafka in one
/// way: a fifth byte that would carry bits past 32 is an error, not a silent wrap.
pub(crate) struct UVarint {
    cx: Cx,
    name: &'static str,
}

/// Unsigned varint (see [`UVarint`]).
#[inline(always)]
pub(crate) const fn uvarint(cx: Cx, name: &'static str) -> UVarint {
    UVarint { cx, name }
}

impl<'a> Parser<&'a [u8]> for UVarint {
    type Output = u32;
    type Error = Error;

    #[inline(always)]
    fn process<OM: OutputMode>(&mut self, input: &'a [u8]) -> MResult<'a, OM, u32> {
        // One byte covers every count and length below 128: the common case, inlined.
        match input.first() {
            Some(&b) if b < 0x80 => Ok((&input[1..], OM::Output::bind(|| u32::from(b)))),
            _ => {
                let (rest, v) = long_uvarint(self.cx, self.name, input)?;
                Ok((rest, OM::Output::bind(|| v)))
            }
        }
    }
}

/// A varint of two bytes or more, or none at all. Out of line: rare in ElectLeaders.
#[inline(never)]
fn long_uvarint<'a, X>(cx: Cx, name: &'static str, input: &'a [u8]) -> Step<'a, u32, X> {
    let mut value: u32 = 0;
    for (i, &b) in input.iter().take(5).enumerate() {
        if i == 4 {
            if b & 0x80 != 0 {
                return Err(cx.error(ErrorKind::VarintTooLong, name, input));
            }
            if b > 0x0f {
                return Err(cx.error(ErrorKind::VarintOverflow, name, input));
            }
        }
        value |= u32::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok((&input[i + 1..], value));
        }
    }
    Err(cx.error(ErrorKind::UnexpectedEnd { needed: 1 }, name, input))
}

/// A length or count prefix: classic (int16 for strings, int32 for arrays) or compact
/// (uvarint, value + 1). A negative result is null.
#[inline(always)]
fn length_prefix<'a, OM: OutputMode>(
    cx: Cx,
    classic_int32: bool,
    name: &'static str,
    input: &'a [u8],
) -> Result<(&'a [u8], i64), MErr<OM>> {
    if cx.flexible {
        let (rest, n) = uvarint(cx, name).value::<OM>(input)?;
        Ok((rest, i64::from(n) - 1))
    } else if classic_int32 {
        let (rest, n) = int32(cx, name).value::<OM>(input)?;
        Ok((rest, i64::from(n)))
    } else {
        let (rest, n) = int16(cx, name).value::<OM>(input)?;
        Ok((rest, i64::from(n)))
    }
}

#[cold]
#[inline(never)]
fn null_error<X>(cx: Cx, len: i64, name: &'static str, at: &[u8]) -> Err<Error, X> {
    let kind = if len == -1 {
        ErrorKind::UnexpectedNull
    } else {
        ErrorKind::NegativeLength(len as i32)
    };
    Err::Failure(Error::new(kind, name, cx.offset(at)))
}

/// Bytes of a string body, or `None` for null. `nullable` says whether null is allowed.
///
/// classic: int16 length (-1 = null) + bytes; compact: uvarint length+1 (0 = null) + bytes.
#[derive(Clone, Copy)]
pub(crate) struct Str {
    cx: Cx,
    nullable: bool,
    name: &'static str,
}

/// A string (see [`Str`]).
#[inline(always)]
pub(crate) const fn string(cx: Cx, nullable: bool, name: &'static str) -> Str {
    Str { cx, nullable, name }
}

impl<'a> Parser<&'a [u8]> for Str {
    type Output = Option<&'a [u8]>;
    type Error = Error;

    #[inline(always)]
    fn process<OM: OutputMode>(&mut self, input: &'a [u8]) -> MResult<'a, OM, Option<&'a [u8]>> {
        let Str { cx, nullable, name } = *self;
        // A compact length of one byte (every string shorter than 127 bytes): its own
        // path, where the length is known to be small, not merged with the general one.
        if cx.flexible {
            if let Some((&b, rest)) = input.split_first() {
                if b < 0x80 {
                    if b == 0 {
                        return if nullable {
                            Ok((rest, OM::Output::bind(|| None)))
                        } else {
                            Err(null_error(cx, -1, name, input))
                        };
                    }
                    let len = usize::from(b - 1);
                    if rest.len() < len {
                        let needed = len - rest.len();
                        return Err(cx.error(ErrorKind::UnexpectedEnd { needed }, name, input));
                    }
                    let (bytes, rest) = rest.split_at(len);
                    return Ok((rest, OM::Output::bind(|| Some(bytes))));
                }
            }
        }
        let (rest, len) = length_prefix::<OM>(cx, false, name, input)?;
        if len < 0 {
            return if nullable {
                Ok((rest, OM::Output::bind(|| None)))
            } else {
                Err(null_error(cx, len, name, input))
            };
        }
        let len = len as usize;
        // A classic int16 length never is.
        if cx.flexible && len > MAX_STRING_LEN {
            return Err(cx.error(ErrorKind::StringTooLong { len }, name, input));
        }
        if rest.len() < len {
            let needed = len - rest.len();
            return Err(cx.error(ErrorKind::UnexpectedEnd { needed }, name, input));
        }
        let (bytes, rest) = rest.split_at(len);
        Ok((rest, OM::Output::bind(|| Some(bytes))))
    }
}

/// A non-nullable string: its bytes.
pub(crate) struct StrNonNull(Str);

/// A non-nullable string (see [`Str`]).
#[inline(always)]
pub(crate) const fn string_non_null(cx: Cx, name: &'static str) -> StrNonNull {
    StrNonNull(string(cx, false, name))
}

impl<'a> Parser<&'a [u8]> for StrNonNull {
    type Output = &'a [u8];
    type Error = Error;

    #[inline(always)]
    fn process<OM: OutputMode>(&mut self, input: &'a [u8]) -> MResult<'a, OM, &'a [u8]> {
        let (rest, s) = self.0.process::<OM>(input)?;
        // A non-nullable `Str` never yields `None`.
        Ok((rest, OM::Output::map(s, Option::unwrap_or_default)))
    }
}

/// An array's element count, or `None` for null, checked against the bytes that remain:
/// `count * min_size` must fit, so nothing is walked (or sized) from an impossible count.
///
/// classic: int32 count (negative = null); compact: uvarint count+1 (0 = null).
#[derive(Clone, Copy)]
pub(crate) struct ArrayCount {
    cx: Cx,
    nullable: bool,
    min_size: usize,
    name: &'static str,
}

/// An array count (see [`ArrayCount`]).
#[inline(always)]
pub(crate) const fn array_count(
    cx: Cx,
    nullable: bool,
    min_size: usize,
    name: &'static str,
) -> ArrayCount {
    ArrayCount {
        cx,
        nullable,
        min_size,
        name,
    }
}

impl ArrayCount {
    /// The count, always computed: callers walk that many elements.
    #[inline(always)]
    pub(crate) fn count<'a, OM: OutputMode>(
        &self,
        input: &'a [u8],
    ) -> Result<(&'a [u8], Option<usize>), MErr<OM>> {
        let ArrayCount {
            cx,
            nullable,
            min_size,
            name,
        } = *self;
        let (rest, count) = length_prefix::<OM>(cx, true, name, input)?;
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
#[inline(always)]
pub(crate) fn bounded_count<X>(
    cx: Cx,
    count: usize,
    min_size: usize,
    name: &'static str,
    at: &[u8],
    rest: &[u8],
) -> Result<usize, Err<Error, X>> {
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
pub(crate) struct Int32Array(ArrayCount);

/// An `[]int32` (see [`Int32Array`]).
#[inline(always)]
pub(crate) const fn int32_array(cx: Cx, nullable: bool, name: &'static str) -> Int32Array {
    Int32Array(array_count(cx, nullable, 4, name))
}

impl<'a> Parser<&'a [u8]> for Int32Array {
    type Output = Option<&'a [u8]>;
    type Error = Error;

    #[inline(always)]
    fn process<OM: OutputMode>(&mut self, input: &'a [u8]) -> MResult<'a, OM, Option<&'a [u8]>> {
        let (rest, count) = self.0.count::<OM>(input)?;
        match count {
            None => Ok((rest, OM::Output::bind(|| None))),
            Some(n) => {
                // `ArrayCount` checked that `4 * n` bytes remain.
                let (elements, rest) = rest.split_at(n * 4);
                Ok((rest, OM::Output::bind(|| Some(elements))))
            }
        }
    }
}
/// `bytes` as UTF-8: the check and nothing more; the empty string is not looked at.
#[inline(always)]
pub(crate) fn utf8(bytes: &[u8]) -> Result<&str, core::str::Utf8Error> {
    if bytes.is_empty() {
        return Ok("");
    }
    core::str::from_utf8(bytes)
}

/// A nullable string as UTF-8: null and empty cost nothing.
#[inline(always)]
pub(crate) fn utf8_opt(bytes: Option<&[u8]>) -> Result<Option<&str>, core::str::Utf8Error> {
    match bytes {
        None => Ok(None),
        Some(b) => utf8(b).map(Some),
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
