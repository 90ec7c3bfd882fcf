//! Parse errors: small `Copy` values that say what went wrong, in which field, and where.

use core::fmt;

/// What went wrong. Carried by [`Error`] together with the field name and byte offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Streaming only: the buffer ends before the frame does. Not malformed: read at least
    /// `needed` more bytes and try again.
    Incomplete {
        /// How many more bytes are needed at the least.
        needed: usize,
    },
    /// The field runs past the end of the input (a truncated frame, or a size prefix too
    /// small for the body it announces). `needed` is how many bytes were missing.
    UnexpectedEnd {
        /// How many bytes the field still needed.
        needed: usize,
    },
    /// A length, count or size prefix is negative where the schema does not allow null.
    NegativeLength(i32),
    /// A null string or array (length -1, or compact 0) where the schema forbids null.
    UnexpectedNull,
    /// A string longer than 32767 bytes, the most Kafka reads or writes.
    StringTooLong {
        /// The length on the wire.
        len: usize,
    },
    /// An array count whose smallest possible encoding does not fit in the bytes left.
    CountTooLarge {
        /// The element count on the wire.
        count: usize,
        /// The bytes left in the frame after the count.
        remaining: usize,
    },
    /// An unsigned varint whose fifth byte still has its continuation bit set.
    VarintTooLong,
    /// An unsigned varint whose value does not fit in 32 bits.
    VarintOverflow,
    /// The frame's size prefix is larger than the configured maximum.
    FrameTooLarge {
        /// The size on the wire.
        size: usize,
        /// The maximum in force.
        max: usize,
    },
    /// The input is not exactly one frame: its length disagrees with the size prefix.
    SizeMismatch {
        /// Bytes that follow the size prefix, according to the prefix.
        declared: usize,
        /// Bytes that follow the size prefix in the input.
        actual: usize,
    },
    /// The message ended before the frame did: `count` bytes are left over.
    TrailingBytes {
        /// How many bytes are left over.
        count: usize,
    },
    /// The request header names an API other than ElectLeaders (43).
    UnsupportedApiKey(i16),
    /// The version is outside 0–2, the versions ElectLeaders has.
    UnsupportedVersion(i16),
}

/// A parse error: what went wrong, in which field, at which byte offset.
///
/// `offset` counts from the first byte of the input the caller passed in (the first byte of
/// the size prefix when parsing a frame). `field` is a static schema path such as
/// `TopicPartitions.Partitions`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Error {
    /// What went wrong.
    pub kind: ErrorKind,
    /// The field being read, as a schema path (`TopicPartitions.Topic`, `size`, …).
    pub field: &'static str,
    /// Byte offset of the field (or of the offending byte) from the start of the input.
    pub offset: usize,
}

impl Error {
    pub(crate) const fn new(kind: ErrorKind, field: &'static str, offset: usize) -> Self {
        Error {
            kind,
            field,
            offset,
        }
    }

    /// True when the input was cut short in a way that more bytes could fix: a streaming
    /// caller should read more and retry. Everything else is malformed input.
    pub const fn is_incomplete(&self) -> bool {
        matches!(self.kind, ErrorKind::Incomplete { .. })
    }

    /// How many more bytes a streaming caller needs, when [`is_incomplete`](Self::is_incomplete).
    pub const fn needed(&self) -> Option<usize> {
        match self.kind {
            ErrorKind::Incomplete { needed } => Some(needed),
            _ => None,
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ErrorKind::Incomplete { needed } => {
                write!(f, "incomplete frame: need {needed} more byte(s)")
            }
            ErrorKind::UnexpectedEnd { needed } => {
                write!(f, "input ends {needed} byte(s) too early")
            }
            ErrorKind::NegativeLength(n) => write!(f, "negative length {n}"),
            ErrorKind::UnexpectedNull => f.write_str("null, but the field is not nullable"),
            ErrorKind::StringTooLong { len } => {
                write!(f, "string length {len} is over the limit of 32767")
            }
            ErrorKind::CountTooLarge { count, remaining } => write!(
                f,
                "array of {count} element(s) cannot fit in the {remaining} byte(s) left"
            ),
            ErrorKind::VarintTooLong => f.write_str("varint longer than 5 bytes"),
            ErrorKind::VarintOverflow => f.write_str("varint value does not fit in 32 bits"),
            ErrorKind::FrameTooLarge { size, max } => {
                write!(f, "frame size {size} is over the maximum of {max}")
            }
            ErrorKind::SizeMismatch { declared, actual } => write!(
                f,
                "size prefix says {declared} byte(s) follow, the input has {actual}"
            ),
            ErrorKind::TrailingBytes { count } => {
                write!(f, "{count} byte(s) left over after the message")
            }
            ErrorKind::UnsupportedApiKey(k) => {
                write!(f, "api key {k} is not ElectLeaders (43)")
            }
            ErrorKind::UnsupportedVersion(v) => {
                write!(f, "version {v} is not supported (ElectLeaders has 0-2)")
            }
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}: {}", self.field, self.offset, self.kind)
    }
}

#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
impl std::error::Error for Error {}
