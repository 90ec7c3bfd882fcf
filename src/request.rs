//! The ElectLeaders request, versions 0-2, as a view over its frame.
//!
//! ```text
//! ElectLeadersRequest                         versions 0-2, flexible from 2
//!   ElectionType      int8                    v1+ (v0: PREFERRED)
//!   TopicPartitions   []TopicPartitions       v0+, nullable v0+ (null: all partitions)
//!     Topic           string                  v0+
//!     Partitions      []int32                 v0+
//!     _tagged_fields                          v2+
//!   TimeoutMs         int32                   v0+
//!   _tagged_fields                            v2+
//! ```

use core::fmt;
use core::ops::Range;

use nom::{Mode, OutputMode, Parser};

use crate::election_type::ElectionType;
use crate::error::Error;
use crate::frame::{parse_framed, SIZE_PREFIX_LEN};
use crate::header::RequestHeader;
use crate::list::{sealed::Element, CheckEach, Int32List, List, Step};
use crate::tagged::{tagged_fields, TaggedFields};
use crate::version;
use crate::wire::{self, Build, Cx, MErr, MResult, PResult, Value, Values};

use crate::field::ELECTION_TYPE as FIELD_ELECTION_TYPE;
use crate::field::PARTITIONS as FIELD_PARTITIONS;
use crate::field::REQUEST as FIELD_MESSAGE;
use crate::field::TAGS as FIELD_TAGS;
use crate::field::TIMEOUT_MS as FIELD_TIMEOUT_MS;
use crate::field::TOPIC as FIELD_TOPIC;
use crate::field::TOPIC_PARTITIONS as FIELD_TOPIC_PARTITIONS;
use crate::field::TOPIC_PARTITIONS_TAGS as FIELD_TOPIC_PARTITIONS_TAGS;

/// Parses one ElectLeadersRequest frame: size prefix, request header, body.
///
/// `frame` must be exactly one frame (see [`split_frame`](crate::split_frame) to cut one
/// from a stream). The whole frame is checked here; the returned view's iterators cannot
/// fail. Costs O(topics): partition arrays are bounds-checked, not walked.
///
/// A frame shorter than its size prefix says is [`ErrorKind::Incomplete`](crate::ErrorKind)
/// with the exact number of bytes missing ([`Error::needed`](crate::Error::needed)), never
/// an error about the field the cut happens to land in.
///
/// ```
/// let frame = std::fs::read("corpus/request-v2-min.bin").unwrap();
/// let request = kafka_elect_leaders::parse_request(&frame).unwrap();
/// assert_eq!(request.version(), 2);
/// let topics = request.topic_partitions().unwrap();
/// let first = topics.first().unwrap();
/// assert_eq!((first.topic(), first.partitions().get(0)), (&b""[..], Some(0)));
///
/// // The same frame cut after 20 of its 29 bytes.
/// let e = kafka_elect_leaders::parse_request(&frame[..20]).unwrap_err();
/// assert_eq!((e.is_incomplete(), e.needed()), (true, Some(9)));
/// ```
pub fn parse_request(frame: &[u8]) -> Result<ElectLeadersRequest<'_>, Error> {
    parse_visiting::<(), false>(frame, &mut ())
}

/// What [`visit_request`] hands over while it walks a request. Every method does nothing
/// unless overridden; `()` is the visitor that wants nothing.
///
/// The entries are handed over while the frame is being validated: when the walk ends in
/// an error, the visitor has seen the entries before it (a frame shorter than its size
/// prefix fails before any). Keep what it saw only if the walk succeeds.
pub trait RequestVisitor<'a> {
    /// One `TopicPartitions` entry, as soon as it is validated.
    #[inline(always)]
    fn topic_partitions(&mut self, entry: TopicPartitions<'a>) {
        let _ = entry;
    }
}

/// Wants nothing: [`visit_request`] with `()` is [`parse_request`].
impl RequestVisitor<'_> for () {}

/// Parses a request as [`parse_request`] does, and hands each `TopicPartitions` entry to
/// `visitor` in the same walk that validates it, so the topics are read once. The returned
/// view is [`parse_request`]'s.
///
/// The visitor sees entries before the end of the frame is checked: see [`RequestVisitor`].
///
/// ```
/// use kafka_elect_leaders::{visit_request, RequestVisitor, TopicPartitions};
///
/// /// Adds up the partitions asked for.
/// struct Count(usize);
///
/// impl<'a> RequestVisitor<'a> for Count {
///     fn topic_partitions(&mut self, entry: TopicPartitions<'a>) {
///         self.0 += entry.partitions().len();
///     }
/// }
///
/// let frame = std::fs::read("corpus/request-v2-multi.bin").unwrap();
/// let mut count = Count(0);
/// let request = visit_request(&frame, &mut count).unwrap();
/// let listed: usize = request.topic_partitions().unwrap().iter().map(|t| t.partitions().len()).sum();
/// assert_eq!(count.0, listed);
/// ```
pub fn visit_request<'a, V: RequestVisitor<'a>>(
    frame: &'a [u8],
    visitor: &mut V,
) -> Result<ElectLeadersRequest<'a>, Error> {
    parse_visiting::<V, true>(frame, visitor)
}

/// The request's grammar. With `VISIT` each entry is built and handed to `visitor` as it
/// is validated; without, it is only checked (nom's `Check` mode), as [`parse_request`]
/// needs.
#[inline(always)]
fn parse_visiting<'a, V: RequestVisitor<'a>, const VISIT: bool>(
    frame: &'a [u8],
    visitor: &mut V,
) -> Result<ElectLeadersRequest<'a>, Error> {
    parse_framed(frame, FIELD_MESSAGE, |end, input| {
        let (rest, (header, cx)) = RequestHeader::parse(end, input)?;
        // The body is compiled twice, each with the encoding a constant the compiler folds
        // into every field, rather than a test of it on every field.
        if cx.flexible {
            let cx = Cx {
                flexible: true,
                ..cx
            };
            body::<V, VISIT>(frame, header, cx, rest, visitor)
        } else {
            let cx = Cx {
                flexible: false,
                ..cx
            };
            body::<V, VISIT>(frame, header, cx, rest, visitor)
        }
    })
}

/// The request's body, after its header.
#[inline(always)]
fn body<'a, V: RequestVisitor<'a>, const VISIT: bool>(
    frame: &'a [u8],
    header: RequestHeader<'a>,
    cx: Cx,
    rest: &'a [u8],
    visitor: &mut V,
) -> PResult<'a, ElectLeadersRequest<'a>> {
    let v = header.api_version();
    let body_start = cx.offset(rest);
    let (rest, election_type) = if version::has_election_type(v) {
        wire::int8(cx, FIELD_ELECTION_TYPE)
            .map(ElectionType)
            .parse(rest)?
    } else {
        (rest, ElectionType::PREFERRED)
    };
    let (rest, topic_partitions) = topic_partitions_list::<V, VISIT>(cx, rest, visitor)?;
    let (rest, timeout_ms) = wire::int32(cx, FIELD_TIMEOUT_MS).parse(rest)?;
    let (rest, tagged_fields) = tagged_fields(cx, FIELD_TAGS).parse(rest)?;
    let request = ElectLeadersRequest {
        frame,
        header,
        election_type,
        topic_partitions,
        timeout_ms,
        tagged_fields,
        body_start,
    };
    Ok((rest, request))
}

#[inline(always)]
fn topic_partitions_list<'a, V: RequestVisitor<'a>, const VISIT: bool>(
    cx: Cx,
    input: &'a [u8],
    visitor: &mut V,
) -> PResult<'a, Option<List<'a, TopicPartitions<'a>>>> {
    let min = TopicPartitions::min_size(cx.flexible);
    let (rest, count) =
        wire::array_count(cx, true, min, FIELD_TOPIC_PARTITIONS).count::<Build>(input)?;
    match count {
        None => Ok((rest, None)),
        Some(n) => {
            let at = cx.offset(input);
            let (rest, list) = if VISIT {
                List::process_each::<Build>(cx, at, n, rest, VisitTopics(visitor))?
            } else {
                let check = CheckEach::<TopicPartitions>::new();
                List::process_each::<Build>(cx, at, n, rest, check)?
            };
            Ok((rest, Some(list)))
        }
    }
}

/// Builds each `TopicPartitions` entry and hands it over.
struct VisitTopics<'v, V>(&'v mut V);

impl<'a, OM: OutputMode, V: RequestVisitor<'a>> Step<'a, OM> for VisitTopics<'_, V> {
    #[inline(always)]
    fn step(&mut self, cx: Cx, input: &'a [u8]) -> Result<&'a [u8], MErr<OM>> {
        let (rest, entry) = TopicPartitions::process::<Values<OM>>(cx, input)?;
        self.0.topic_partitions(entry);
        Ok(rest)
    }
}

/// A parsed ElectLeadersRequest: a view over the frame's bytes.
#[derive(Clone, Copy)]
pub struct ElectLeadersRequest<'a> {
    frame: &'a [u8],
    header: RequestHeader<'a>,
    election_type: ElectionType,
    topic_partitions: Option<List<'a, TopicPartitions<'a>>>,
    timeout_ms: i32,
    tagged_fields: TaggedFields<'a>,
    body_start: usize,
}

impl<'a> ElectLeadersRequest<'a> {
    /// The request header.
    pub const fn header(&self) -> &RequestHeader<'a> {
        &self.header
    }

    /// The ElectLeaders version (the header's `RequestApiVersion`), 0 to 2.
    pub const fn version(&self) -> i16 {
        self.header.api_version()
    }

    /// The header's `CorrelationId`.
    pub const fn correlation_id(&self) -> i32 {
        self.header.correlation_id()
    }

    /// `ElectionType` (v1+); [`ElectionType::PREFERRED`] in version 0, which cannot carry it.
    pub const fn election_type(&self) -> ElectionType {
        self.election_type
    }

    /// `TopicPartitions`: the partitions whose leaders to elect. `None` (null on the wire)
    /// means every partition of every topic, which is not the same as an empty list.
    pub const fn topic_partitions(&self) -> Option<List<'a, TopicPartitions<'a>>> {
        self.topic_partitions
    }

    /// `TimeoutMs`: how long the broker may wait for the elections to complete.
    pub const fn timeout_ms(&self) -> i32 {
        self.timeout_ms
    }

    /// Unknown tagged fields at the end of the body (v2); empty before.
    pub const fn tagged_fields(&self) -> TaggedFields<'a> {
        self.tagged_fields
    }

    /// The whole frame, size prefix included.
    pub const fn frame(&self) -> &'a [u8] {
        self.frame
    }

    /// The frame's size prefix: bytes that follow it.
    pub const fn size(&self) -> usize {
        self.frame.len() - SIZE_PREFIX_LEN
    }

    /// Where the body (after the header) lies in the frame.
    pub const fn body_range(&self) -> Range<usize> {
        self.body_start..self.frame.len()
    }

    /// Where `ElectionType` lies in the frame (1 byte, the body's first); `None` in
    /// version 0, which does not carry it.
    pub const fn election_type_range(&self) -> Option<Range<usize>> {
        if version::has_election_type(self.version()) {
            Some(self.body_start..self.body_start + 1)
        } else {
            None
        }
    }

    /// Where `TopicPartitions` lies in the frame, count prefix included: when null, the
    /// count prefix alone (int32 -1 or any negative, or compact 0).
    pub const fn topic_partitions_range(&self) -> Range<usize> {
        match self.topic_partitions {
            Some(list) => list.range(),
            None => {
                let start = match self.election_type_range() {
                    Some(election_type) => election_type.end,
                    None => self.body_start,
                };
                start..self.timeout_ms_range().start
            }
        }
    }

    /// Where `TimeoutMs` lies in the frame (4 bytes, right before the body's tagged fields).
    pub const fn timeout_ms_range(&self) -> Range<usize> {
        let end = self.tagged_fields.range().start;
        end - 4..end
    }
}

/// Compares values, not positions or frames.
impl PartialEq for ElectLeadersRequest<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.header == other.header
            && self.election_type == other.election_type
            && self.topic_partitions == other.topic_partitions
            && self.timeout_ms == other.timeout_ms
            && self.tagged_fields == other.tagged_fields
    }
}

impl fmt::Debug for ElectLeadersRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ElectLeadersRequest")
            .field("header", &self.header)
            .field("election_type", &self.election_type)
            .field("topic_partitions", &self.topic_partitions)
            .field("timeout_ms", &self.timeout_ms)
            .field("tagged_fields", &self.tagged_fields)
            .finish()
    }
}

/// One entry of `TopicPartitions`: a topic and the partitions whose leaders to elect.
#[derive(Clone, Copy)]
pub struct TopicPartitions<'a> {
    topic: &'a [u8],
    partitions: Int32List<'a>,
    tagged_fields: TaggedFields<'a>,
    start: usize,
    end: usize,
}

impl<'a> TopicPartitions<'a> {
    /// `Topic`: the topic's name, as on the wire.
    pub const fn topic(&self) -> &'a [u8] {
        self.topic
    }

    /// `Topic` as UTF-8, checked now: the check is all it costs.
    #[inline]
    pub fn topic_str(&self) -> Result<&'a str, core::str::Utf8Error> {
        wire::utf8(self.topic)
    }

    /// `Partitions`: the partitions of this topic whose leaders to elect.
    pub const fn partitions(&self) -> Int32List<'a> {
        self.partitions
    }

    /// Unknown tagged fields of this entry (v2); empty before.
    pub const fn tagged_fields(&self) -> TaggedFields<'a> {
        self.tagged_fields
    }

    /// Where this entry lies in the frame.
    pub const fn range(&self) -> Range<usize> {
        self.start..self.end
    }

    /// Where `Topic` lies in the frame, its length prefix included.
    pub const fn topic_range(&self) -> Range<usize> {
        self.start..self.partitions.range().start
    }
}

impl<'a> Element<'a> for TopicPartitions<'a> {
    fn min_size(flexible: bool) -> usize {
        if flexible {
            3 // compact topic, compact count, tagged-field count: a byte each
        } else {
            6 // int16 topic length, int32 count
        }
    }

    #[inline(always)]
    fn process<OM: OutputMode>(cx: Cx, input: &'a [u8]) -> MResult<'a, OM, Self> {
        let (rest, topic) = wire::string_non_null(cx, FIELD_TOPIC).value::<OM>(input)?;
        let at_partitions = rest;
        let (rest, partitions) =
            wire::int32_array(cx, false, FIELD_PARTITIONS).value::<OM>(rest)?;
        let after_partitions = rest;
        let (rest, tagged_fields) =
            tagged_fields(cx, FIELD_TOPIC_PARTITIONS_TAGS).process::<OM>(rest)?;
        let entry = OM::Output::map(tagged_fields, |tagged_fields| {
            // Not nullable: `None` cannot come back.
            let partitions = partitions.unwrap_or_default();
            TopicPartitions {
                topic,
                partitions: Int32List::new(
                    partitions,
                    cx.offset(at_partitions),
                    cx.offset(after_partitions) - partitions.len(),
                ),
                tagged_fields,
                start: cx.offset(input),
                end: cx.offset(rest),
            }
        });
        Ok((rest, entry))
    }
}

/// Compares values, not positions.
impl PartialEq for TopicPartitions<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.topic == other.topic
            && self.partitions == other.partitions
            && self.tagged_fields == other.tagged_fields
    }
}

impl fmt::Debug for TopicPartitions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TopicPartitions")
            .field("topic", &crate::debug::Bytes(self.topic))
            .field("partitions", &self.partitions)
            .field("tagged_fields", &self.tagged_fields)
            .finish()
    }
}
