//! The writer's limits, reached cheaply: sources whose iterators say (through `size_hint`,
//! which `ExactSizeIterator::len` reads) that they hold billions of items, without holding
//! them, and frames of 2 GiB measured from a few thousand borrowed 32767-byte strings.
//!
//! Each limit is checked from both sides: one past it is refused with its named error, the
//! field it concerns, and nothing written into the caller's buffer (a slice, a `BytesMut`,
//! or the length-trusting `encode_with_len`); exactly at it, the count is accepted, which
//! shows as the next check in line answering instead (the source did not deliver what it
//! claimed, or the frame is too large for its size prefix) or, for the frame size itself,
//! as an `encoded_len` of exactly 2^31 + 3. A bound moved by one fails one side or the other.
//!
//! 64-bit only: the counts over `u32::MAX` do not exist elsewhere.
#![cfg(target_pointer_width = "64")]

use kafka_elect_leaders::{
    ElectionType, EncodeError, EncodeErrorKind, EncodePartitionResult, EncodeReplicaElectionResult,
    EncodeRequest, EncodeResponse, EncodeTopicPartitions, ErrorCode, MAX_STRING_LEN,
    SIZE_PREFIX_LEN,
};

/// The longest string Kafka writes, borrowed by every big topic name and message.
static LONG: [u8; MAX_STRING_LEN] = [b'x'; MAX_STRING_LEN];

const I32_MAX: usize = i32::MAX as usize;
const U32_MAX: usize = u32::MAX as usize;

// ---------------------------------------------------------------------------------------
// A lying iterator and the sources built from it

/// Says it holds `claimed` items (an exact `size_hint`, so `ExactSizeIterator::len`), but
/// yields `yields` of them (fewer, or more), each made from its index. Nothing is
/// allocated.
#[derive(Clone)]
struct Claim<F> {
    claimed: usize,
    yields: usize,
    next: usize,
    make: F,
}

fn claim<T, F: Fn(usize) -> T>(claimed: usize, yields: usize, make: F) -> Claim<F> {
    Claim {
        claimed,
        yields,
        next: 0,
        make,
    }
}

impl<T, F: Fn(usize) -> T> Iterator for Claim<F> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        if self.next == self.yields {
            return None;
        }
        let item = (self.make)(self.next);
        self.next += 1;
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.claimed.saturating_sub(self.next);
        (left, Some(left))
    }
}

impl<T, F: Fn(usize) -> T> ExactSizeIterator for Claim<F> {}

/// How many of something a source claims, and how many it really gives.
#[derive(Clone, Copy, Debug)]
struct Count {
    claimed: usize,
    yields: usize,
}

impl Count {
    const NONE: Count = Count {
        claimed: 0,
        yields: 0,
    };

    /// Claims `n`, gives one: the writer checks the count before it reads the items.
    const fn claims(n: usize) -> Count {
        Count {
            claimed: n,
            yields: 1,
        }
    }

    /// Honest: `n` claimed and given.
    const fn real(n: usize) -> Count {
        Count {
            claimed: n,
            yields: n,
        }
    }
}

/// Tagged fields: distinct ascending tags with empty data, as many as `count` says.
fn tags<'a>(count: Count) -> impl Iterator<Item = (u32, &'a [u8])> {
    claim(count.claimed, count.yields, |i| (i as u32, &[][..]))
}

/// A request whose lists are as big as it says.
#[derive(Clone, Copy, Debug)]
struct BigRequest {
    client_id_len: usize,
    header_tags: Count,
    /// The topics; every name is 32767 bytes but the last, which is `last_topic_len`.
    topics: Count,
    last_topic_len: usize,
    /// Each topic's partitions (all 0).
    partitions: Count,
    topic_tags: Count,
    tags: Count,
}

impl BigRequest {
    const SMALL: BigRequest = BigRequest {
        client_id_len: 0,
        header_tags: Count::NONE,
        topics: Count::real(1),
        last_topic_len: 1,
        partitions: Count::real(1),
        topic_tags: Count::NONE,
        tags: Count::NONE,
    };
}

struct BigTopic {
    name: &'static [u8],
    partitions: Count,
    tags: Count,
}

impl EncodeTopicPartitions for BigTopic {
    fn topic(&self) -> &[u8] {
        self.name
    }
    fn partitions(&self) -> impl Iterator<Item = i32> + '_ {
        claim(self.partitions.claimed, self.partitions.yields, |_| 0)
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags(self.tags)
    }
}

impl EncodeRequest for BigRequest {
    fn correlation_id(&self) -> i32 {
        1
    }
    fn client_id(&self) -> Option<&[u8]> {
        Some(&LONG[..self.client_id_len])
    }
    fn header_tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags(self.header_tags)
    }
    fn election_type(&self) -> ElectionType {
        ElectionType::PREFERRED
    }
    fn topic_partitions(
        &self,
    ) -> Option<impl Iterator<Item = impl EncodeTopicPartitions + '_> + '_> {
        let last = self.topics.yields.saturating_sub(1);
        Some(claim(self.topics.claimed, self.topics.yields, move |i| {
            BigTopic {
                name: if i == last {
                    &LONG[..self.last_topic_len]
                } else {
                    &LONG[..]
                },
                partitions: self.partitions,
                tags: self.topic_tags,
            }
        }))
    }
    fn timeout_ms(&self) -> i32 {
        1000
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags(self.tags)
    }
}

/// A response whose lists are as big as it says.
#[derive(Clone, Copy, Debug)]
struct BigResponse {
    header_tags: Count,
    /// The results; every topic is 32767 bytes but the last, which is `last_topic_len`.
    results: Count,
    last_topic_len: usize,
    /// Each result's partition results (each with a null message).
    partitions: Count,
    partition_tags: Count,
    result_tags: Count,
    tags: Count,
}

impl BigResponse {
    const SMALL: BigResponse = BigResponse {
        header_tags: Count::NONE,
        results: Count::real(1),
        last_topic_len: 1,
        partitions: Count::real(1),
        partition_tags: Count::NONE,
        result_tags: Count::NONE,
        tags: Count::NONE,
    };
}

struct BigResult {
    topic: &'static [u8],
    partitions: Count,
    partition_tags: Count,
    tags: Count,
}

struct BigPartition {
    tags: Count,
}

impl EncodePartitionResult for BigPartition {
    fn partition_id(&self) -> i32 {
        0
    }
    fn error_code(&self) -> ErrorCode {
        ErrorCode::NONE
    }
    fn error_message(&self) -> Option<&[u8]> {
        None
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags(self.tags)
    }
}

impl EncodeReplicaElectionResult for BigResult {
    fn topic(&self) -> &[u8] {
        self.topic
    }
    fn partition_result(&self) -> impl Iterator<Item = impl EncodePartitionResult + '_> + '_ {
        let tags = self.partition_tags;
        claim(self.partitions.claimed, self.partitions.yields, move |_| {
            BigPartition { tags }
        })
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags(self.tags)
    }
}

impl EncodeResponse for BigResponse {
    fn correlation_id(&self) -> i32 {
        1
    }
    fn header_tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags(self.header_tags)
    }
    fn throttle_time_ms(&self) -> i32 {
        0
    }
    fn error_code(&self) -> ErrorCode {
        ErrorCode::NONE
    }
    fn replica_election_results(
        &self,
    ) -> impl Iterator<Item = impl EncodeReplicaElectionResult + '_> + '_ {
        let last = self.results.yields.saturating_sub(1);
        claim(self.results.claimed, self.results.yields, move |i| {
            BigResult {
                topic: if i == last {
                    &LONG[..self.last_topic_len]
                } else {
                    &LONG[..]
                },
                partitions: self.partitions,
                partition_tags: self.partition_tags,
                tags: self.result_tags,
            }
        })
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags(self.tags)
    }
}

// ---------------------------------------------------------------------------------------
// Checks

/// What every encoding entry point must say about a message refused with `want`: the same
/// error, and not a byte written into any of the caller's buffers.
fn refused_everywhere(
    encoded_len: impl Fn() -> Result<usize, EncodeError>,
    encode: impl Fn(&mut [u8]) -> Result<usize, EncodeError>,
    #[cfg(feature = "bytes")] encode_buf: impl Fn(&mut bytes::BytesMut) -> Result<usize, EncodeError>,
    want: EncodeError,
) {
    assert_eq!(encoded_len(), Err(want));
    let mut buf = [0xa5u8; 256];
    assert_eq!(encode(&mut buf), Err(want));
    assert!(buf.iter().all(|&b| b == 0xa5), "bytes written: {want}");
    #[cfg(feature = "bytes")]
    {
        let mut out = bytes::BytesMut::from(&b"kept"[..]);
        assert_eq!(encode_buf(&mut out), Err(want));
        assert_eq!(&out[..], b"kept", "bytes appended: {want}");
    }
}

fn request_refused(request: BigRequest, version: i16, want: EncodeError) {
    refused_everywhere(
        || request.encoded_len(version),
        |buf| request.encode(version, buf),
        #[cfg(feature = "bytes")]
        |out| kafka_elect_leaders::EncodeRequestExt::encode_buf(&request, version, out),
        want,
    );
}

fn response_refused(response: BigResponse, version: i16, want: EncodeError) {
    refused_everywhere(
        || response.encoded_len(version),
        |buf| response.encode(version, buf),
        #[cfg(feature = "bytes")]
        |out| kafka_elect_leaders::EncodeResponseExt::encode_buf(&response, version, out),
        want,
    );
}

/// A count that the writer refuses before writing it, also through `encode_with_len`, which
/// trusts the length it is given and so meets the count while writing: every byte it put
/// before the refusal must be taken back.
fn too_many_request(request: BigRequest, version: i16, count: usize, field: &'static str) {
    let want = error(EncodeErrorKind::TooManyElements { count }, field);
    request_refused(request, version, want);
    #[cfg(feature = "bytes")]
    {
        use kafka_elect_leaders::EncodeRequestExt;
        let mut out = bytes::BytesMut::from(&b"kept"[..]);
        assert_eq!(request.encode_with_len(version, 64, &mut out), Err(want));
        assert_eq!(&out[..], b"kept");
    }
}

fn too_many_response(response: BigResponse, version: i16, count: usize, field: &'static str) {
    let want = error(EncodeErrorKind::TooManyElements { count }, field);
    response_refused(response, version, want);
    #[cfg(feature = "bytes")]
    {
        use kafka_elect_leaders::EncodeResponseExt;
        let mut out = bytes::BytesMut::from(&b"kept"[..]);
        assert_eq!(response.encode_with_len(version, 64, &mut out), Err(want));
        assert_eq!(&out[..], b"kept");
    }
}

fn error(kind: EncodeErrorKind, field: &'static str) -> EncodeError {
    EncodeError { kind, field }
}

/// The source claimed more than it gave: the count was accepted, and the writer went on to
/// the items.
fn inconsistent(field: &'static str) -> EncodeError {
    error(EncodeErrorKind::InconsistentSource, field)
}

// The schema paths the writer names.
const TOPICS: &str = "TopicPartitions";
const PARTITIONS: &str = "TopicPartitions.Partitions";
const REQUEST_HEADER_TAGS: &str = "RequestHeader._tagged_fields";
const TOPIC_TAGS: &str = "TopicPartitions._tagged_fields";
const BODY_TAGS: &str = "_tagged_fields";
const RESULTS: &str = "ReplicaElectionResults";
const PARTITION_RESULTS: &str = "ReplicaElectionResults.PartitionResult";
const RESPONSE_HEADER_TAGS: &str = "ResponseHeader._tagged_fields";
const RESULT_TAGS: &str = "ReplicaElectionResults._tagged_fields";
const PARTITION_TAGS: &str = "ReplicaElectionResults.PartitionResult._tagged_fields";

/// Sets how many tagged fields a source has in one place.
type SetTags<M> = fn(&mut M, Count);

/// Where a request carries tagged fields, and how to set a [`BigRequest`]'s count there.
const REQUEST_TAG_PLACES: [(SetTags<BigRequest>, &str); 3] = [
    (|r, c| r.header_tags = c, REQUEST_HEADER_TAGS),
    (|r, c| r.topic_tags = c, TOPIC_TAGS),
    (|r, c| r.tags = c, BODY_TAGS),
];

/// The same for a response.
const RESPONSE_TAG_PLACES: [(SetTags<BigResponse>, &str); 4] = [
    (|r, c| r.header_tags = c, RESPONSE_HEADER_TAGS),
    (|r, c| r.partition_tags = c, PARTITION_TAGS),
    (|r, c| r.result_tags = c, RESULT_TAGS),
    (|r, c| r.tags = c, BODY_TAGS),
];

// ---------------------------------------------------------------------------------------
// The sources themselves

/// The sources tell the truth when asked to: small ones encode and parse back, so a refusal
/// below is the limit's and not a broken source's.
#[test]
fn small_sources_encode_and_parse() {
    let request = BigRequest {
        header_tags: Count::real(2),
        topics: Count::real(3),
        last_topic_len: 5,
        partitions: Count::real(4),
        topic_tags: Count::real(1),
        tags: Count::real(3),
        ..BigRequest::SMALL
    };
    let mut buf = vec![0u8; request.encoded_len(2).unwrap()];
    assert_eq!(request.encode(2, &mut buf), Ok(buf.len()));
    let parsed = kafka_elect_leaders::parse_request(&buf).unwrap();
    assert_eq!(parsed.header().tagged_fields().len(), 2);
    let topics = parsed.topic_partitions().unwrap();
    let names: Vec<usize> = topics.iter().map(|t| t.topic().len()).collect();
    assert_eq!(names, [MAX_STRING_LEN, MAX_STRING_LEN, 5]);
    assert!(topics.iter().all(|t| t.partitions().len() == 4));
    assert!(topics.iter().all(|t| t.tagged_fields().len() == 1));
    let body_tags: Vec<u32> = parsed.tagged_fields().iter().map(|f| f.tag()).collect();
    assert_eq!(body_tags, [0, 1, 2]);

    let response = BigResponse {
        header_tags: Count::real(1),
        results: Count::real(2),
        last_topic_len: 0,
        partitions: Count::real(3),
        partition_tags: Count::real(2),
        result_tags: Count::real(1),
        tags: Count::real(4),
    };
    let mut buf = vec![0u8; response.encoded_len(2).unwrap()];
    assert_eq!(response.encode(2, &mut buf), Ok(buf.len()));
    let parsed = kafka_elect_leaders::parse_response(&buf, 2).unwrap();
    assert_eq!(parsed.header().tagged_fields().len(), 1);
    let results = parsed.replica_election_results();
    let topics: Vec<usize> = results.iter().map(|r| r.topic().len()).collect();
    assert_eq!(topics, [MAX_STRING_LEN, 0]);
    for r in results {
        assert_eq!(r.partition_result().len(), 3);
        assert!(r
            .partition_result()
            .iter()
            .all(|p| p.tagged_fields().len() == 2));
        assert_eq!(r.tagged_fields().len(), 1);
    }
    assert_eq!(parsed.tagged_fields().len(), 4);

    // A source that claims more than it gives is caught, not written short.
    let liar = BigRequest {
        partitions: Count {
            claimed: 3,
            yields: 2,
        },
        ..BigRequest::SMALL
    };
    let len = liar.encoded_len(1).unwrap();
    let mut buf = vec![0u8; len];
    assert_eq!(liar.encode(1, &mut buf), Err(inconsistent(PARTITIONS)));
}

// ---------------------------------------------------------------------------------------
// TooManyElements: array counts. Classic (v0, v1) counts are an int32: up to i32::MAX.
// Compact (v2) counts are an uvarint of count + 1, which Kafka reads into a Java int: up
// to i32::MAX - 1.

#[test]
fn topic_count_classic() {
    for version in [0, 1] {
        let over = BigRequest {
            topics: Count::claims(I32_MAX + 1),
            ..BigRequest::SMALL
        };
        too_many_request(over, version, I32_MAX + 1, TOPICS);
        let at = BigRequest {
            topics: Count::claims(I32_MAX),
            ..BigRequest::SMALL
        };
        assert_eq!(at.encoded_len(version), Err(inconsistent(TOPICS)));
    }
}

#[test]
fn topic_count_compact() {
    let over = BigRequest {
        topics: Count::claims(I32_MAX),
        ..BigRequest::SMALL
    };
    too_many_request(over, 2, I32_MAX, TOPICS);
    let at = BigRequest {
        topics: Count::claims(I32_MAX - 1),
        ..BigRequest::SMALL
    };
    assert_eq!(at.encoded_len(2), Err(inconsistent(TOPICS)));
    // Far over, where `count + 1` would wrap a u32.
    let far = BigRequest {
        topics: Count::claims(U32_MAX),
        ..BigRequest::SMALL
    };
    too_many_request(far, 2, U32_MAX, TOPICS);
}

/// `[]int32` counts go through their own path (measured without reading the values). At
/// the limit the count is accepted, and 4 bytes a partition make the frame too large.
#[test]
fn partition_count() {
    for version in [0, 1, 2] {
        let limit = if version == 2 { I32_MAX - 1 } else { I32_MAX };
        let over = BigRequest {
            partitions: Count::claims(limit + 1),
            ..BigRequest::SMALL
        };
        too_many_request(over, version, limit + 1, PARTITIONS);
        let at = BigRequest {
            partitions: Count::claims(limit),
            ..BigRequest::SMALL
        };
        match at.encoded_len(version) {
            Err(EncodeError {
                kind: EncodeErrorKind::FrameTooLarge { size },
                field: "frame",
            }) => assert!(size > limit * 4, "{size}"),
            other => panic!("v{version}: {limit} partitions: {other:?}"),
        }
    }
}

#[test]
fn result_count() {
    for version in [0, 1, 2] {
        let limit = if version == 2 { I32_MAX - 1 } else { I32_MAX };
        let over = BigResponse {
            results: Count::claims(limit + 1),
            ..BigResponse::SMALL
        };
        too_many_response(over, version, limit + 1, RESULTS);
        let at = BigResponse {
            results: Count::claims(limit),
            ..BigResponse::SMALL
        };
        assert_eq!(at.encoded_len(version), Err(inconsistent(RESULTS)));
    }
}

#[test]
fn partition_result_count() {
    for version in [0, 1, 2] {
        let limit = if version == 2 { I32_MAX - 1 } else { I32_MAX };
        let over = BigResponse {
            partitions: Count::claims(limit + 1),
            ..BigResponse::SMALL
        };
        too_many_response(over, version, limit + 1, PARTITION_RESULTS);
        let at = BigResponse {
            partitions: Count::claims(limit),
            ..BigResponse::SMALL
        };
        assert_eq!(
            at.encoded_len(version),
            Err(inconsistent(PARTITION_RESULTS))
        );
    }
}

// ---------------------------------------------------------------------------------------
// The tagged-field count: an uvarint, up to u32::MAX (v2 only).

#[test]
fn tagged_field_count_request() {
    for (set, field) in REQUEST_TAG_PLACES {
        let mut over = BigRequest::SMALL;
        set(&mut over, Count::claims(U32_MAX + 1));
        too_many_request(over, 2, U32_MAX + 1, field);
        let mut at = BigRequest::SMALL;
        set(&mut at, Count::claims(U32_MAX));
        assert_eq!(at.encoded_len(2), Err(inconsistent(field)));
        // Versions without tagged fields refuse any, whatever the count.
        for version in [0, 1] {
            request_refused(
                over,
                version,
                error(EncodeErrorKind::TaggedFieldsUnsupported { version }, field),
            );
        }
    }
}

/// Tagged fields that say there are fewer than they give, none included (the writer's
/// shortcut for an empty set still looks): refused by name, while measuring and writing.
#[test]
fn tagged_fields_that_give_more_than_they_claim() {
    // Measuring, and writing without measuring (`encode_exact`), which meets the tags in
    // the writer itself.
    fn refused_both_ways(
        encoded_len: impl Fn() -> Result<usize, EncodeError>,
        encode_exact: impl Fn(&mut [u8]) -> Result<usize, EncodeError>,
        field: &'static str,
    ) {
        assert_eq!(encoded_len(), Err(inconsistent(field)));
        assert_eq!(encode_exact(&mut [0u8; 64]), Err(inconsistent(field)));
    }
    for (claimed, yields) in [(0, 1), (1, 2)] {
        let lie = Count { claimed, yields };
        for (set, field) in REQUEST_TAG_PLACES {
            let mut request = BigRequest::SMALL;
            set(&mut request, lie);
            refused_both_ways(
                || request.encoded_len(2),
                |buf| request.encode_exact(2, 64, buf),
                field,
            );
        }
        for (set, field) in RESPONSE_TAG_PLACES {
            let mut response = BigResponse::SMALL;
            set(&mut response, lie);
            refused_both_ways(
                || response.encoded_len(2),
                |buf| response.encode_exact(2, 64, buf),
                field,
            );
        }
    }
}

#[test]
fn tagged_field_count_response() {
    for (set, field) in RESPONSE_TAG_PLACES {
        let mut over = BigResponse::SMALL;
        set(&mut over, Count::claims(U32_MAX + 1));
        too_many_response(over, 2, U32_MAX + 1, field);
        let mut at = BigResponse::SMALL;
        set(&mut at, Count::claims(U32_MAX));
        assert_eq!(at.encoded_len(2), Err(inconsistent(field)));
    }
}

// ---------------------------------------------------------------------------------------
// FrameTooLarge: the size prefix is an int32, so the bytes after it are at most i32::MAX.

/// Topics of 32767-byte names, the last one shorter, so that the size is exactly `size`.
/// Request v1: header 2 + 2 + 4 + (2 + 0) bytes, ElectionType 1, topic count 4, each topic
/// 2 + name + 4 (an empty partition list), TimeoutMs 4.
fn request_of_size(size: usize) -> BigRequest {
    let fixed = 2 + 2 + 4 + 2 + 1 + 4 + 4;
    let per_topic = 2 + 4;
    let full = per_topic + MAX_STRING_LEN;
    let full_topics = (size - fixed - per_topic) / full;
    let last_topic_len = size - fixed - per_topic - full_topics * full;
    assert!(last_topic_len <= MAX_STRING_LEN);
    BigRequest {
        topics: Count::real(full_topics + 1),
        last_topic_len,
        partitions: Count::NONE,
        ..BigRequest::SMALL
    }
}

/// Response v0: CorrelationId 4, ThrottleTimeMs 4, result count 4, each result 2 + topic + 4
/// (an empty partition list).
fn response_of_size(size: usize) -> BigResponse {
    let fixed = 4 + 4 + 4;
    let per_result = 2 + 4;
    let full = per_result + MAX_STRING_LEN;
    let full_results = (size - fixed - per_result) / full;
    let last_topic_len = size - fixed - per_result - full_results * full;
    assert!(last_topic_len <= MAX_STRING_LEN);
    BigResponse {
        results: Count::real(full_results + 1),
        last_topic_len,
        partitions: Count::NONE,
        ..BigResponse::SMALL
    }
}

#[test]
fn frame_size_request() {
    // The layout arithmetic is the writer's: checked on a frame small enough to write.
    let small = request_of_size(100_000);
    assert_eq!(small.encoded_len(1), Ok(100_000 + SIZE_PREFIX_LEN));

    let at = request_of_size(I32_MAX);
    let len = I32_MAX + SIZE_PREFIX_LEN;
    assert_eq!(at.encoded_len(1), Ok(len));
    let mut buf = [0xa5u8; 64];
    assert_eq!(
        at.encode(1, &mut buf),
        Err(error(
            EncodeErrorKind::BufferTooSmall { needed: len },
            "frame"
        ))
    );
    assert!(buf.iter().all(|&b| b == 0xa5));

    let over = request_of_size(I32_MAX + 1);
    let want = error(
        EncodeErrorKind::FrameTooLarge { size: I32_MAX + 1 },
        "frame",
    );
    request_refused(over, 1, want);
}

#[test]
fn frame_size_response() {
    let small = response_of_size(100_000);
    assert_eq!(small.encoded_len(0), Ok(100_000 + SIZE_PREFIX_LEN));

    let at = response_of_size(I32_MAX);
    let len = I32_MAX + SIZE_PREFIX_LEN;
    assert_eq!(at.encoded_len(0), Ok(len));
    let mut buf = [0xa5u8; 64];
    assert_eq!(
        at.encode(0, &mut buf),
        Err(error(
            EncodeErrorKind::BufferTooSmall { needed: len },
            "frame"
        ))
    );
    assert!(buf.iter().all(|&b| b == 0xa5));

    let over = response_of_size(I32_MAX + 1);
    let want = error(
        EncodeErrorKind::FrameTooLarge { size: I32_MAX + 1 },
        "frame",
    );
    response_refused(over, 0, want);
}

/// Far over the limit (a sum that would wrap a 32-bit length): still FrameTooLarge, with the
/// size counted right.
#[test]
fn frame_size_far_over() {
    let far = request_of_size(3 * I32_MAX);
    let want = error(
        EncodeErrorKind::FrameTooLarge { size: 3 * I32_MAX },
        "frame",
    );
    request_refused(far, 1, want);
}

// ---------------------------------------------------------------------------------------
// The appending writers gather a source's ids 64 at a time.

/// A source whose ids disagree with their count, across batches of 64 or within one: the
/// appending writers refuse it by name, `encode_buf` leaves no more than the measured
/// length in the buffer, and `encode_with_len` leaves nothing.
#[cfg(feature = "bytes")]
#[test]
fn appended_ids_from_a_source_that_lies() {
    use kafka_elect_leaders::EncodeRequestExt;
    for (claimed, yields) in [(70, 65), (1, 3), (70, 200), (130, 129)] {
        let request = BigRequest {
            partitions: Count { claimed, yields },
            ..BigRequest::SMALL
        };
        let what = format!("claims {claimed}, gives {yields}");
        // Measuring counts the ids the source claims; it does not read them.
        let measured = request.encoded_len(2).expect(&what);
        assert_eq!(
            request.encode_to_vec(2),
            Err(inconsistent(PARTITIONS)),
            "{what}"
        );
        let mut buf = bytes::BytesMut::new();
        assert_eq!(
            request.encode_buf(2, &mut buf),
            Err(inconsistent(PARTITIONS)),
            "{what}"
        );
        assert!(buf.len() <= measured, "{what}: {} > {measured}", buf.len());
        let mut buf = bytes::BytesMut::from(&b"kept"[..]);
        let e = request.encode_with_len(2, measured, &mut buf).unwrap_err();
        assert_eq!(e, inconsistent(PARTITIONS), "{what}");
        assert_eq!(&buf[..], b"kept", "{what}");
    }

    // A length given to `encode_with_len` that ends inside the ids (everything before them
    // fits): the ids are the first write that does not, and the error gives the real length.
    let request = BigRequest {
        partitions: Count::real(100),
        ..BigRequest::SMALL
    };
    let measured = request.encoded_len(2).unwrap();
    // After the ids at v2: the topic's tagged-field count, TimeoutMs, the body's count.
    let short = measured - (1 + 4 + 1) - 4 * 50;
    let mut buf = bytes::BytesMut::from(&b"kept"[..]);
    let e = request.encode_with_len(2, short, &mut buf).unwrap_err();
    assert_eq!(
        e.kind,
        EncodeErrorKind::LengthMismatch {
            expected: short,
            actual: measured
        }
    );
    assert_eq!(&buf[..], b"kept");
}
