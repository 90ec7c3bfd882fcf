//! Tagged fields (flexible versions): kept as they are, never interpreted.
//!
//! ElectLeaders defines no tagged fields of its own, so every one found is unknown. Kafka's
//! reader keeps unknown tags in whatever order they come, repeats included; so does this one.

use core::fmt;
use core::ops::Range;

use nom::Parser;

use crate::list::{sealed::Element, List};
use crate::wire::{self, Cx, PResult};

/// One tagged field: its tag and its raw data.
#[derive(Clone, Copy)]
pub struct TaggedField<'a> {
    tag: u32,
    data: &'a [u8],
    start: usize,
    end: usize,
}

impl<'a> TaggedField<'a> {
    /// The tag number.
    pub const fn tag(&self) -> u32 {
        self.tag
    }

    /// The field's data, as on the wire.
    pub const fn data(&self) -> &'a [u8] {
        self.data
    }

    /// Where the field (tag, size and data) lies in the frame.
    pub const fn range(&self) -> Range<usize> {
        self.start..self.end
    }
}

/// Compares tag and data, not where they lie.
impl PartialEq for TaggedField<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.tag == other.tag && self.data == other.data
    }
}

impl fmt::Debug for TaggedField<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaggedField")
            .field("tag", &self.tag)
            .field("data", &crate::debug::Hex(self.data))
            .finish()
    }
}

/// The tagged fields that end a struct in a flexible version; empty in older versions.
pub type TaggedFields<'a> = List<'a, TaggedField<'a>>;

// Errors inside a field are renamed after the struct that holds it
// (`TopicPartitions._tagged_fields`) by `tagged_fields`.
const FIELD: &str = "_tagged_fields";

impl<'a> Element<'a> for TaggedField<'a> {
    fn min_size(_flexible: bool) -> usize {
        2 // a one-byte tag and a zero size
    }

    #[inline]
    fn parse(cx: Cx, input: &'a [u8]) -> PResult<'a, Self> {
        let start = cx.offset(input);
        let (rest, tag) = wire::uvarint(cx, FIELD).parse(input)?;
        let (rest, size) = wire::uvarint(cx, FIELD).parse(rest)?;
        let size = size as usize;
        let Some(data) = rest.get(..size) else {
            let needed = size - rest.len();
            return Err(cx.error(crate::ErrorKind::UnexpectedEnd { needed }, FIELD, rest));
        };
        let rest = &rest[size..];
        let end = cx.offset(rest);
        Ok((
            rest,
            TaggedField {
                tag,
                data,
                start,
                end,
            },
        ))
    }
}

/// Tagged fields: uvarint count, then per field uvarint tag, uvarint size, data. In a
/// version that is not flexible, an empty list with no bytes.
#[inline]
pub(crate) fn tagged_fields<'a>(
    cx: Cx,
    name: &'static str,
) -> impl Parser<&'a [u8], Output = TaggedFields<'a>, Error = crate::Error> {
    move |input: &'a [u8]| {
        let start = cx.offset(input);
        if !cx.flexible {
            return Ok((input, List::absent(start)));
        }
        // The count is a plain uvarint here, not the compact count + 1 of arrays.
        let (rest, count) = wire::uvarint(cx, name).parse(input)?;
        let count = wire::bounded_count(
            cx,
            count as usize,
            TaggedField::min_size(true),
            name,
            input,
            rest,
        )?;
        // Errors inside a field keep the struct's name: `TopicPartitions._tagged_fields`.
        List::parse(cx, start, count, rest).map_err(|e| {
            e.map(|mut e| {
                e.field = name;
                e
            })
        })
    }
}
