//! What a mutation made: the [`Mutation`] (which field, how, malformed or not), the
//! [`Mutant`] written into the caller's buffer and [`MutateError`], and the few helpers the
//! request and response mutators share to name and write one. No draws here.

use core::fmt;

use crate::write::EncodeError;

/// What a mutation changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Mutation {
    /// The field changed, as a schema path (`TopicPartitions.Topic`, `size`, ...); `bytes`
    /// for byte-level mutation of a frame that did not parse.
    pub field: &'static str,
    /// How it was changed, in a few words.
    pub change: &'static str,
    /// True for a deliberate malformation (written over the canonical frame, or byte-level):
    /// the frame may be refused by a parser. False: the writer wrote it, it parses.
    pub malformed: bool,
}

impl fmt::Display for Mutation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.change)?;
        if self.malformed {
            f.write_str(" (malformed)")?;
        }
        Ok(())
    }
}

/// A mutant written into the caller's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mutant {
    /// Its length: the mutant is `out[..len]`.
    pub len: usize,
    /// The version to parse it at (for a response; a request says its own), unless
    /// `mutation.malformed`.
    pub version: i16,
    /// What was changed.
    pub mutation: Mutation,
}

/// Why no mutant was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MutateError {
    /// The output buffer is empty.
    EmptyBuffer,
}

impl fmt::Display for MutateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MutateError::EmptyBuffer => f.write_str("the output buffer is empty"),
        }
    }
}

impl std::error::Error for MutateError {}

/// Runs an encode into `out`; `None` if it does not fit or the version refuses the message
/// (the caller tries another mutation).
pub(super) fn write<E>(encode: E, out: &mut [u8]) -> Option<usize>
where
    E: FnOnce(&mut [u8]) -> Result<usize, EncodeError>,
{
    encode(out).ok()
}

pub(super) const ATTEMPTS: usize = 12;

pub(super) const BYTES: Mutation = Mutation {
    field: "bytes",
    change: "byte-level mutation",
    malformed: true,
};

pub(super) fn ok(field: &'static str, change: &'static str) -> Mutation {
    Mutation {
        field,
        change,
        malformed: false,
    }
}

pub(super) fn bad(field: &'static str, change: &'static str) -> Mutation {
    Mutation {
        field,
        change,
        malformed: true,
    }
}
