//! Unknown tagged fields to write, as a source gives them: below the request and response
//! writers, which both take them.

/// One unknown tagged field to write: its tag and raw data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TaggedFieldData<'a> {
    /// The tag number. Tags must be strictly ascending within one struct.
    pub tag: u32,
    /// The field's data, written as is.
    pub data: &'a [u8],
}

impl<'a> TaggedFieldData<'a> {
    /// A tagged field.
    pub const fn new(tag: u32, data: &'a [u8]) -> Self {
        TaggedFieldData { tag, data }
    }
}
