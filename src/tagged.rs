//! Tagged fields (flexible versions): kept as they are, never interpreted.
//!
//! ElectLeaders defines no tagged fields of its own, so every one found is unknown. Kafka's
//! reader keeps unknown tags in whatever order they come, repeats included; so does this one.

use core::fmt;
use core::ops::Range;

use nom::{Mode, OutputMode, Parser};

use crate::list::{sealed::Element, List};
use crate::wire::{self, Cx, MResult, Validate, Value};

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

const FIELD: &str = "_tagged_fields";

impl<'a> TaggedField<'a> {
    /// One field: uvarint tag, uvarint size, data. Errors name `name`, the tagged fields of
    /// the struct being read (`TopicPartitions._tagged_fields`).
    #[inline(always)]
    fn process_named<OM: OutputMode>(
        cx: Cx,
        name: &'static str,
        input: &'a [u8],
    ) -> MResult<'a, OM, Self> {
        let (rest, tag) = wire::uvarint(cx, name).value::<OM>(input)?;
        let (rest, size) = wire::uvarint(cx, name).value::<OM>(rest)?;
        let size = size as usize;
        if rest.len() < size {
            let needed = size - rest.len();
            return Err(cx.error(crate::ErrorKind::UnexpectedEnd { needed }, name, rest));
        }
        let (data, rest) = rest.split_at(size);
        let field = OM::Output::bind(|| TaggedField {
            tag,
            data,
            start: cx.offset(input),
            end: cx.offset(rest),
        });
        Ok((rest, field))
    }
}

impl<'a> Element<'a> for TaggedField<'a> {
    fn min_size(_flexible: bool) -> usize {
        2 // a one-byte tag and a zero size
    }

    #[inline(always)]
    fn process<OM: OutputMode>(cx: Cx, input: &'a [u8]) -> MResult<'a, OM, Self> {
        Self::process_named::<OM>(cx, FIELD, input)
    }
}

/// Tagged fields: uvarint count, then per field uvarint tag, uvarint size, data. In a
/// version that is not flexible, an empty list with no bytes.
pub(crate) struct TaggedFieldsParser {
    cx: Cx,
    name: &'static str,
}

/// The tagged fields that end a struct (see [`TaggedFieldsParser`]); `name` is their schema
/// path, such as `TopicPartitions._tagged_fields`.
#[inline(always)]
pub(crate) const fn tagged_fields(cx: Cx, name: &'static str) -> TaggedFieldsParser {
    TaggedFieldsParser { cx, name }
}

impl<'a> Parser<&'a [u8]> for TaggedFieldsParser {
    type Output = TaggedFields<'a>;
    type Error = crate::Error;

    #[inline(always)]
    fn process<OM: OutputMode>(&mut self, input: &'a [u8]) -> MResult<'a, OM, TaggedFields<'a>> {
        let TaggedFieldsParser { cx, name } = *self;
        let start = cx.offset(input);
        if !cx.flexible {
            return Ok((input, OM::Output::bind(|| List::absent(start))));
        }
        // Almost every struct has none: one zero byte, nothing to walk.
        if let Some((&0, rest)) = input.split_first() {
            return Ok((
                rest,
                OM::Output::bind(|| List::checked(cx, start, 0, rest, rest)),
            ));
        }
        // The count is a plain uvarint here, not the compact count + 1 of arrays.
        let (rest, count) = wire::uvarint(cx, name).value::<OM>(input)?;
        if count == 0 {
            return Ok((
                rest,
                OM::Output::bind(|| List::checked(cx, start, 0, rest, rest)),
            ));
        }
        let count = wire::bounded_count(
            cx,
            count as usize,
            TaggedField::min_size(true),
            name,
            input,
            rest,
        )?;
        let elements = rest;
        let mut rest = rest;
        for _ in 0..count {
            rest = TaggedField::process_named::<Validate<OM>>(cx, name, rest)?.0;
        }
        let list = OM::Output::bind(|| List::checked(cx, start, count, elements, rest));
        Ok((rest, list))
    }
}
