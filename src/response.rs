//! The ElectLeaders response, versions 0-2, as a view over its frame.
//!
//! ```text
//! ElectLeadersResponse                        versions 0-2, flexible from 2
//!   ThrottleTimeMs          int32             v0+
//!   ErrorCode               int16             v1+ (v0: NONE)
//!   ReplicaElectionResults  []ReplicaElectionResult  v0+
//!     Topic                 string            v0+
//!     PartitionResult       []PartitionResult v0+
//!       PartitionId         int32             v0+
//!       ErrorCode           int16             v0+
//!       ErrorMessage        string            v0+, nullable v0+
//!       _tagged_fields                        v2+
//!     _tagged_fields                          v2+
//!   _tagged_fields                            v2+
//! ```
//!
//! A response does not say its version: the caller takes it from the request with the same
//! correlation id.

use core::fmt;
use core::ops::Range;

use nom::{Mode, OutputMode, Parser};

use crate::error::Error;
use crate::error_code::ErrorCode;
use crate::frame::{parse_framed, SIZE_PREFIX_LEN};
use crate::header::ResponseHeader;
use crate::list::{sealed::Element, CheckEach, List, Step};
use crate::tagged::{tagged_fields, TaggedFields};
use crate::version;
use crate::wire::{self, Build, Cx, MErr, MResult, PResult, Value, Values};

use crate::field::API_VERSION as FIELD_VERSION;
use crate::field::ERROR_CODE as FIELD_ERROR_CODE;
use crate::field::ERROR_MESSAGE as FIELD_ERROR_MESSAGE;
use crate::field::PARTITION_ERROR_CODE as FIELD_PARTITION_ERROR_CODE;
use crate::field::PARTITION_ID as FIELD_PARTITION_ID;
use crate::field::PARTITION_RESULT as FIELD_PARTITION_RESULT;
use crate::field::PARTITION_RESULT_TAGS as FIELD_PARTITION_TAGS;
use crate::field::REPLICA_ELECTION_RESULTS as FIELD_RESULTS;
use crate::field::RESPONSE as FIELD_MESSAGE;
use crate::field::RESULT_TAGS as FIELD_RESULT_TAGS;
use crate::field::RESULT_TOPIC as FIELD_RESULT_TOPIC;
use crate::field::TAGS as FIELD_TAGS;
use crate::field::THROTTLE_TIME_MS as FIELD_THROTTLE;

/// Parses one ElectLeadersResponse frame of the given `version`: size prefix, response
/// header, body.
///
/// The wire does not carry the version: take it from the request with the same correlation
/// id. `frame` must be exactly one frame. The returned view's iterators cannot fail. A
/// frame shorter than its size prefix says is [`ErrorKind::Incomplete`](crate::ErrorKind)
/// by exactly the bytes missing.
///
/// ```
/// let frame = std::fs::read("corpus/response-v2-min.bin").unwrap();
/// let response = kafka_elect_leaders::parse_response(&frame, 2).unwrap();
/// let result = response.replica_election_results().first().unwrap();
/// let partition = result.partition_result().first().unwrap();
/// assert_eq!(partition.error_message(), Some(&b""[..]));
/// ```
pub fn parse_response(frame: &[u8], version: i16) -> Result<ElectLeadersResponse<'_>, Error> {
    parse_visiting::<(), false>(frame, version, &mut ())
}

/// What [`visit_response`] hands over while it walks a response, in wire order. Every method
/// does nothing unless overridden; `()` is the visitor that wants nothing.
///
/// The values are handed over while the frame is being validated: when the walk ends in an
/// error, the visitor has seen the entries before it (a frame shorter than its size prefix
/// fails before any). Keep what it saw only if the walk succeeds.
pub trait ResponseVisitor<'a> {
    /// A `ReplicaElectionResults` entry begins, with its `Topic`; its partition results
    /// follow.
    #[inline(always)]
    fn replica_election_result(&mut self, topic: &'a [u8]) {
        let _ = topic;
    }

    /// One `PartitionResult` of the entry that began last.
    #[inline(always)]
    fn partition_result(&mut self, result: PartitionResult<'a>) {
        let _ = result;
    }

    /// The entry that began last ends: its whole view (tagged fields and range included).
    #[inline(always)]
    fn end_replica_election_result(&mut self, result: ReplicaElectionResult<'a>) {
        let _ = result;
    }
}

/// Wants nothing: [`visit_response`] with `()` is [`parse_response`].
impl ResponseVisitor<'_> for () {}

/// Parses a response as [`parse_response`] does, and hands every topic and partition result
/// to `visitor` in the same walk that validates them: each byte is read once. For callers
/// that read everything once (proxies, inspectors); the returned view is the same as
/// [`parse_response`]'s, for the top-level fields or a second look.
///
/// The visitor sees values before the end of the frame is checked: see [`ResponseVisitor`].
///
/// ```
/// use kafka_elect_leaders::{visit_response, PartitionResult, ResponseVisitor};
///
/// /// Counts the failed partitions and the bytes of their messages.
/// #[derive(Default)]
/// struct Failures {
///     partitions: usize,
///     message_bytes: usize,
/// }
///
/// impl<'a> ResponseVisitor<'a> for Failures {
///     fn partition_result(&mut self, result: PartitionResult<'a>) {
///         if result.error_code().is_error() {
///             self.partitions += 1;
///             self.message_bytes += result.error_message().map_or(0, <[u8]>::len);
///         }
///     }
/// }
///
/// let frame = std::fs::read("corpus/response-v2-min.bin").unwrap();
/// let mut failures = Failures::default();
/// let response = visit_response(&frame, 2, &mut failures).unwrap();
/// assert_eq!((failures.partitions, failures.message_bytes), (0, 0));
/// assert_eq!(response.replica_election_results().len(), 1);
/// ```
pub fn visit_response<'a, V: ResponseVisitor<'a>>(
    frame: &'a [u8],
    version: i16,
    visitor: &mut V,
) -> Result<ElectLeadersResponse<'a>, Error> {
    parse_visiting::<V, true>(frame, version, visitor)
}

/// The response's grammar. With `VISIT` the entries are built and handed to `visitor` as
/// they are validated; without, they are only checked (nom's `Check` mode), as
/// [`parse_response`] needs.
#[inline(always)]
fn parse_visiting<'a, V: ResponseVisitor<'a>, const VISIT: bool>(
    frame: &'a [u8],
    version: i16,
    visitor: &mut V,
) -> Result<ElectLeadersResponse<'a>, Error> {
    version::check(version, FIELD_VERSION, 0)?;
    // Compiled once per version, each with the version a constant the compiler folds into
    // every field (flexible or not, top-level error code or not).
    match version {
        0 => parse_framed(frame, FIELD_MESSAGE, |end, input| {
            body::<V, VISIT>(frame, 0, end, input, visitor)
        }),
        1 => parse_framed(frame, FIELD_MESSAGE, |end, input| {
            body::<V, VISIT>(frame, 1, end, input, visitor)
        }),
        _ => parse_framed(frame, FIELD_MESSAGE, |end, input| {
            body::<V, VISIT>(frame, 2, end, input, visitor)
        }),
    }
}

/// The response after its size prefix, at `version`.
#[inline(always)]
fn body<'a, V: ResponseVisitor<'a>, const VISIT: bool>(
    frame: &'a [u8],
    version: i16,
    end: usize,
    input: &'a [u8],
    visitor: &mut V,
) -> PResult<'a, ElectLeadersResponse<'a>> {
    let cx = Cx {
        end,
        flexible: version::is_flexible(version),
    };
    let (rest, header) = ResponseHeader::parse(cx, input)?;
    let body_start = cx.offset(rest);
    let (rest, throttle_time_ms) = wire::int32(cx, FIELD_THROTTLE).parse(rest)?;
    let (rest, error_code) = if version::has_top_level_error_code(version) {
        wire::int16(cx, FIELD_ERROR_CODE)
            .map(ErrorCode)
            .parse(rest)?
    } else {
        (rest, ErrorCode::NONE)
    };
    let at_results = rest;
    let min = ReplicaElectionResult::min_size(cx.flexible);
    let (rest, count) = wire::array_count(cx, false, min, FIELD_RESULTS).count::<Build>(rest)?;
    let count = count.unwrap_or(0); // not nullable: never `None`
    let (rest, replica_election_results) = if VISIT {
        List::process_each::<Build>(
            cx,
            cx.offset(at_results),
            count,
            rest,
            VisitResults(&mut *visitor),
        )?
    } else {
        List::process_each::<Build>(
            cx,
            cx.offset(at_results),
            count,
            rest,
            CheckEach::<ReplicaElectionResult>::new(),
        )?
    };
    let (rest, tagged_fields) = tagged_fields(cx, FIELD_TAGS).parse(rest)?;
    let response = ElectLeadersResponse {
        frame,
        version,
        header,
        throttle_time_ms,
        error_code,
        replica_election_results,
        tagged_fields,
        body_start,
    };
    Ok((rest, response))
}

/// A parsed ElectLeadersResponse: a view over the frame's bytes.
#[derive(Clone, Copy)]
pub struct ElectLeadersResponse<'a> {
    frame: &'a [u8],
    version: i16,
    header: ResponseHeader<'a>,
    throttle_time_ms: i32,
    error_code: ErrorCode,
    replica_election_results: List<'a, ReplicaElectionResult<'a>>,
    tagged_fields: TaggedFields<'a>,
    body_start: usize,
}

impl<'a> ElectLeadersResponse<'a> {
    /// The version the response was parsed at.
    pub const fn version(&self) -> i16 {
        self.version
    }

    /// The response header.
    pub const fn header(&self) -> &ResponseHeader<'a> {
        &self.header
    }

    /// The header's `CorrelationId`.
    pub const fn correlation_id(&self) -> i32 {
        self.header.correlation_id()
    }

    /// `ThrottleTimeMs`: how long the request was throttled for a quota, or zero.
    pub const fn throttle_time_ms(&self) -> i32 {
        self.throttle_time_ms
    }

    /// The top-level `ErrorCode` (v1+); [`ErrorCode::NONE`] in version 0, which cannot carry it.
    pub const fn error_code(&self) -> ErrorCode {
        self.error_code
    }

    /// `ReplicaElectionResults`: per topic, the result of each partition's election.
    pub const fn replica_election_results(&self) -> List<'a, ReplicaElectionResult<'a>> {
        self.replica_election_results
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

    /// Where `ThrottleTimeMs` lies in the frame (4 bytes, the body's first).
    pub const fn throttle_time_ms_range(&self) -> Range<usize> {
        self.body_start..self.body_start + 4
    }

    /// Where the top-level `ErrorCode` lies in the frame (2 bytes); `None` in version 0,
    /// which does not carry it.
    pub const fn error_code_range(&self) -> Option<Range<usize>> {
        if version::has_top_level_error_code(self.version) {
            Some(self.body_start + 4..self.body_start + 6)
        } else {
            None
        }
    }
}

/// Compares values, not positions or frames.
impl PartialEq for ElectLeadersResponse<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.version == other.version
            && self.header == other.header
            && self.throttle_time_ms == other.throttle_time_ms
            && self.error_code == other.error_code
            && self.replica_election_results == other.replica_election_results
            && self.tagged_fields == other.tagged_fields
    }
}

impl fmt::Debug for ElectLeadersResponse<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ElectLeadersResponse")
            .field("version", &self.version)
            .field("header", &self.header)
            .field("throttle_time_ms", &self.throttle_time_ms)
            .field("error_code", &self.error_code)
            .field("replica_election_results", &self.replica_election_results)
            .field("tagged_fields", &self.tagged_fields)
            .finish()
    }
}

/// One entry of `ReplicaElectionResults`: a topic and its partitions' results.
#[derive(Clone, Copy)]
pub struct ReplicaElectionResult<'a> {
    topic: &'a [u8],
    partition_result: List<'a, PartitionResult<'a>>,
    tagged_fields: TaggedFields<'a>,
    start: usize,
    end: usize,
}

impl<'a> ReplicaElectionResult<'a> {
    /// `Topic`: the topic's name, as on the wire.
    pub const fn topic(&self) -> &'a [u8] {
        self.topic
    }

    /// `Topic` as UTF-8, checked now: the check is all it costs.
    #[inline]
    pub fn topic_str(&self) -> Result<&'a str, core::str::Utf8Error> {
        crate::wire::utf8(self.topic)
    }

    /// `PartitionResult`: the result for each partition.
    pub const fn partition_result(&self) -> List<'a, PartitionResult<'a>> {
        self.partition_result
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
        self.start..self.partition_result.range().start
    }
}

impl<'a> Element<'a> for ReplicaElectionResult<'a> {
    fn min_size(flexible: bool) -> usize {
        if flexible {
            3 // compact topic, compact count, tagged-field count: a byte each
        } else {
            6 // int16 topic length, int32 count
        }
    }

    #[inline(always)]
    fn process<OM: OutputMode>(cx: Cx, input: &'a [u8]) -> MResult<'a, OM, Self> {
        Self::process_visit::<OM, (), false>(cx, input, &mut ())
    }
}

impl<'a> ReplicaElectionResult<'a> {
    /// The entry's grammar. With `VISIT`, its topic and each partition result go to
    /// `visitor` as they are validated; without, the partition results are only checked.
    #[inline(always)]
    fn process_visit<OM: OutputMode, V: ResponseVisitor<'a>, const VISIT: bool>(
        cx: Cx,
        input: &'a [u8],
        visitor: &mut V,
    ) -> MResult<'a, OM, Self> {
        let (rest, topic) = wire::string_non_null(cx, FIELD_RESULT_TOPIC).value::<OM>(input)?;
        visitor.replica_election_result(topic);
        let at_results = rest;
        let min = PartitionResult::min_size(cx.flexible);
        let (rest, count) =
            wire::array_count(cx, false, min, FIELD_PARTITION_RESULT).count::<OM>(rest)?;
        let count = count.unwrap_or(0); // not nullable: never `None`
        let at = cx.offset(at_results);
        let (rest, partition_result) = if VISIT {
            List::process_each::<OM>(cx, at, count, rest, VisitPartitions(visitor))?
        } else {
            List::process_each::<OM>(cx, at, count, rest, CheckEach::<PartitionResult>::new())?
        };
        let (rest, tagged_fields) = tagged_fields(cx, FIELD_RESULT_TAGS).process::<OM>(rest)?;
        let entry = OM::Output::combine(partition_result, tagged_fields, |p, t| {
            ReplicaElectionResult {
                topic,
                partition_result: p,
                tagged_fields: t,
                start: cx.offset(input),
                end: cx.offset(rest),
            }
        });
        Ok((rest, entry))
    }
}

/// Builds each `ReplicaElectionResults` entry, handing it and its partition results over.
struct VisitResults<'v, V>(&'v mut V);

impl<'a, OM: OutputMode, V: ResponseVisitor<'a>> Step<'a, OM> for VisitResults<'_, V> {
    #[inline(always)]
    fn step(&mut self, cx: Cx, input: &'a [u8]) -> Result<&'a [u8], MErr<OM>> {
        let (rest, entry) =
            ReplicaElectionResult::process_visit::<Values<OM>, V, true>(cx, input, self.0)?;
        self.0.end_replica_election_result(entry);
        Ok(rest)
    }
}

/// Builds each `PartitionResult` and hands it over.
struct VisitPartitions<'v, V>(&'v mut V);

impl<'a, OM: OutputMode, V: ResponseVisitor<'a>> Step<'a, OM> for VisitPartitions<'_, V> {
    #[inline(always)]
    fn step(&mut self, cx: Cx, input: &'a [u8]) -> Result<&'a [u8], MErr<OM>> {
        let (rest, result) = PartitionResult::process::<Values<OM>>(cx, input)?;
        self.0.partition_result(result);
        Ok(rest)
    }
}

/// Compares values, not positions.
impl PartialEq for ReplicaElectionResult<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.topic == other.topic
            && self.partition_result == other.partition_result
            && self.tagged_fields == other.tagged_fields
    }
}

impl fmt::Debug for ReplicaElectionResult<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplicaElectionResult")
            .field("topic", &crate::debug::Bytes(self.topic))
            .field("partition_result", &self.partition_result)
            .field("tagged_fields", &self.tagged_fields)
            .finish()
    }
}

/// One entry of `PartitionResult`: a partition's election outcome.
#[derive(Clone, Copy)]
pub struct PartitionResult<'a> {
    partition_id: i32,
    error_code: ErrorCode,
    error_message: Option<&'a [u8]>,
    tagged_fields: TaggedFields<'a>,
    start: usize,
    end: usize,
}

impl<'a> PartitionResult<'a> {
    /// `PartitionId`.
    pub const fn partition_id(&self) -> i32 {
        self.partition_id
    }

    /// `ErrorCode`: the election's error, or [`ErrorCode::NONE`].
    pub const fn error_code(&self) -> ErrorCode {
        self.error_code
    }

    /// `ErrorMessage`: the error's text, `None` when null (usually: no error).
    pub const fn error_message(&self) -> Option<&'a [u8]> {
        self.error_message
    }

    /// `ErrorMessage` as UTF-8, checked now; `Ok(None)` when null. The check is all it
    /// costs; a null or empty message costs nothing.
    #[inline]
    pub fn error_message_str(&self) -> Result<Option<&'a str>, core::str::Utf8Error> {
        crate::wire::utf8_opt(self.error_message)
    }

    /// Unknown tagged fields of this entry (v2); empty before.
    pub const fn tagged_fields(&self) -> TaggedFields<'a> {
        self.tagged_fields
    }

    /// Where this entry lies in the frame.
    pub const fn range(&self) -> Range<usize> {
        self.start..self.end
    }

    /// Where `PartitionId` lies in the frame (4 bytes, the entry's first).
    pub const fn partition_id_range(&self) -> Range<usize> {
        self.start..self.start + 4
    }

    /// Where `ErrorCode` lies in the frame (2 bytes).
    pub const fn error_code_range(&self) -> Range<usize> {
        self.start + 4..self.start + 6
    }

    /// Where `ErrorMessage` lies in the frame, its length prefix included.
    pub const fn error_message_range(&self) -> Range<usize> {
        self.start + 6..self.tagged_fields.range().start
    }
}

impl<'a> Element<'a> for PartitionResult<'a> {
    fn min_size(_flexible: bool) -> usize {
        // int32 id, int16 code, then either an int16 message length (classic) or a
        // one-byte compact length and a one-byte tagged-field count (flexible): 8 both ways.
        8
    }

    #[inline(always)]
    fn process<OM: OutputMode>(cx: Cx, input: &'a [u8]) -> MResult<'a, OM, Self> {
        let (rest, partition_id) = wire::int32(cx, FIELD_PARTITION_ID).value::<OM>(input)?;
        let (rest, error_code) = wire::int16(cx, FIELD_PARTITION_ERROR_CODE).value::<OM>(rest)?;
        let (rest, error_message) =
            wire::string(cx, true, FIELD_ERROR_MESSAGE).value::<OM>(rest)?;
        let (rest, tagged_fields) = tagged_fields(cx, FIELD_PARTITION_TAGS).process::<OM>(rest)?;
        let entry = OM::Output::map(tagged_fields, |tagged_fields| PartitionResult {
            partition_id,
            error_code: ErrorCode(error_code),
            error_message,
            tagged_fields,
            start: cx.offset(input),
            end: cx.offset(rest),
        });
        Ok((rest, entry))
    }
}

/// Compares values, not positions.
impl PartialEq for PartitionResult<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.partition_id == other.partition_id
            && self.error_code == other.error_code
            && self.error_message == other.error_message
            && self.tagged_fields == other.tagged_fields
    }
}

impl fmt::Debug for PartitionResult<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PartitionResult")
            .field("partition_id", &self.partition_id)
            .field("error_code", &self.error_code)
            .field("error_message", &crate::debug::OptBytes(self.error_message))
            .field("tagged_fields", &self.tagged_fields)
            .finish()
    }
}
