//! Encode errors: what the writer refuses, and for which field.

use core::fmt;

/// Why a message could not be encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EncodeErrorKind {
    /// The buffer is shorter than the frame; nothing was written. `needed` is the frame's
    /// whole length, size prefix included.
    BufferTooSmall {
        /// The exact length of the encoded frame.
        needed: usize,
    },
    /// The version is outside 0-2.
    UnsupportedVersion(i16),
    /// A field has a value other than its default, but the version cannot carry the field
    /// (`ElectionType` at version 0, the response's top-level `ErrorCode` at version 0).
    NonDefaultValue {
        /// The version asked for.
        version: i16,
    },
    /// Tagged fields were given, but the version (0 or 1) has none.
    TaggedFieldsUnsupported {
        /// The version asked for.
        version: i16,
    },
    /// A string is longer than 32767 bytes.
    StringTooLong {
        /// The string's length.
        len: usize,
    },
    /// A list has more elements than the wire's count can say.
    TooManyElements {
        /// The list's length.
        count: usize,
    },
    /// Tagged fields are not in strictly ascending tag order (`tag == previous` is a repeat).
    TaggedFieldOrder {
        /// The tag that came too late.
        tag: u32,
        /// The tag before it.
        previous: u32,
    },
    /// The frame would be longer than an int32 size prefix can say.
    FrameTooLarge {
        /// The length after the size prefix.
        size: usize,
    },
    /// The length given to an `encode_with_len` (`EncodeRequestExt`, `EncodeResponseExt`) is
    /// not the frame's length; no bytes of the frame were kept.
    LengthMismatch {
        /// The length given.
        expected: usize,
        /// The frame's actual length, size prefix included.
        actual: usize,
    },
    /// The source gave different data when it was read a second time (or an iterator's
    /// `size_hint` was wrong), so the frame's counts or length would not match its bytes.
    InconsistentSource,
}

/// An encode error: what the writer refused, and for which field (a schema path such as
/// `TopicPartitions.Topic`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EncodeError {
    /// What was refused.
    pub kind: EncodeErrorKind,
    /// The field, as a schema path; `frame` for whole-frame errors.
    pub field: &'static str,
}

impl EncodeError {
    pub(crate) const fn new(kind: EncodeErrorKind, field: &'static str) -> Self {
        EncodeError { kind, field }
    }
}

impl fmt::Display for EncodeErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            EncodeErrorKind::BufferTooSmall { needed } => {
                write!(f, "buffer too small: the frame needs {needed} bytes")
            }
            EncodeErrorKind::UnsupportedVersion(v) => {
                write!(f, "version {v} is not supported (ElectLeaders has 0-2)")
            }
            EncodeErrorKind::NonDefaultValue { version } => write!(
                f,
                "a non-default value cannot be written at version {version}, which lacks the field"
            ),
            EncodeErrorKind::TaggedFieldsUnsupported { version } => {
                write!(f, "tagged fields were set, but version {version} has none")
            }
            EncodeErrorKind::StringTooLong { len } => {
                write!(f, "string length {len} is over the limit of 32767")
            }
            EncodeErrorKind::TooManyElements { count } => {
                write!(f, "{count} elements are more than the count can say")
            }
            EncodeErrorKind::TaggedFieldOrder { tag, previous } if tag == previous => {
                write!(f, "tag {tag} is repeated")
            }
            EncodeErrorKind::TaggedFieldOrder { tag, previous } => {
                write!(f, "tag {tag} comes after tag {previous}")
            }
            EncodeErrorKind::FrameTooLarge { size } => {
                write!(f, "frame of {size} bytes is too large for its size prefix")
            }
            EncodeErrorKind::LengthMismatch { expected, actual } => {
                write!(f, "the frame is {actual} bytes, not the {expected} given")
            }
            EncodeErrorKind::InconsistentSource => {
                f.write_str("the source changed between measuring and writing")
            }
        }
    }
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.kind)
    }
}

#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
impl std::error::Error for EncodeError {}
