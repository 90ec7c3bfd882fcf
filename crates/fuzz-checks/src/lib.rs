//! The checks the fuzz targets run, shared with the stable replay test
//! (`tests/replay.rs`), which runs every seed and every past crash through them. Not
//! published: a crate so that the fuzz targets and the replay compile the same code.
//!
//! Each `check_*` function takes the raw fuzz input and panics on a failed property.

#![allow(dead_code)] // each fuzz target uses one check

use std::collections::BTreeMap;

use arbitrary::{Arbitrary, Unstructured};
use kafka_elect_leaders::{
    is_supported, nth_version, API_KEY, MIN_VERSION, VERSIONS, VERSION_COUNT,
};
use kafka_elect_leaders::{
    parse_request, parse_response, split_frame, ElectLeadersRequest, ElectLeadersRequestData,
    ElectLeadersResponse, ElectLeadersResponseData, ElectionType, EncodeErrorKind, EncodeRequest,
    EncodeResponse, ErrorCode, ErrorKind, Frames, PartitionResultData, ReplicaElectionResultData,
    TaggedFieldData, TaggedFields, TopicPartitionsData,
};

// ---------------------------------------------------------------------------------------
// parse_request / parse_response: arbitrary bytes as a stream of frames.

/// Arbitrary bytes as a stream of request frames: whatever parses must survive a walk, a
/// re-encode and a re-parse with the same values, and re-encoding must be stable.
/// Every version, and one past the last (which must be refused), from a selector's bits:
/// `n` modulo one more than the number of versions.
fn version_or_one_past(n: u8) -> i16 {
    MIN_VERSION + (u16::from(n) % (VERSION_COUNT + 1)) as i16
}

pub fn check_parse_request(data: &[u8]) {
    // The whole input as one frame: any answer but a panic.
    if let Ok(request) = parse_request(data) {
        request_round_trip(&request);
    }
    for frame in Frames::new(data) {
        let Ok(frame) = frame else { break };
        match parse_request(frame) {
            Ok(request) => request_round_trip(&request),
            Err(e) => check_error(&e, frame.len()),
        }
    }
}

/// The first byte picks the version (0-3; 3 must be refused), the rest is a stream of
/// response frames.
pub fn check_parse_response(data: &[u8]) {
    let Some((&selector, stream)) = data.split_first() else {
        return;
    };
    let version = version_or_one_past(selector);
    if let Ok(response) = parse_response(stream, version) {
        response_round_trip(&response);
    }
    for frame in Frames::new(stream) {
        let Ok(frame) = frame else { break };
        match parse_response(frame, version) {
            Ok(response) => {
                assert!(is_supported(version), "version {version} was accepted");
                response_round_trip(&response);
            }
            Err(e) => check_error(&e, frame.len()),
        }
    }
}

fn check_error(e: &kafka_elect_leaders::Error, len: usize) {
    assert!(
        !e.is_incomplete(),
        "a whole frame cannot be incomplete: {e}"
    );
    assert!(e.offset <= len, "{e} lies past the frame ({len} bytes)");
    let _ = e.to_string();
}

fn walk_tags(tags: TaggedFields<'_>, frame: usize) -> usize {
    let mut n = 0;
    for field in tags {
        assert!(field.range().end <= frame);
        n += field.data().len() + field.tag() as usize % 7;
    }
    assert_eq!(tags.iter().count(), tags.len());
    n
}

/// Touches every field, checks the lazy lists agree with themselves, then re-encodes.
fn request_round_trip(request: &ElectLeadersRequest<'_>) {
    let frame = request.frame();
    let end = frame.len();
    let header = request.header();
    assert!(header.range().end <= request.body_range().start);
    let _ = header.client_id_str();
    walk_tags(header.tagged_fields(), end);
    if let Some(topics) = request.topic_partitions() {
        assert_eq!(topics.iter().count(), topics.len());
        let mut previous_end = topics.range().start;
        for entry in topics {
            let range = entry.range();
            assert!(previous_end <= range.start && range.end <= end);
            previous_end = range.end;
            let _ = entry.topic_str();
            let partitions = entry.partitions();
            let forward: Vec<i32> = partitions.iter().collect();
            let mut backward: Vec<i32> = partitions.iter().rev().collect();
            backward.reverse();
            assert_eq!(forward, backward);
            assert_eq!(forward.len(), partitions.len());
            for (i, p) in forward.iter().enumerate() {
                assert_eq!(partitions.get(i), Some(*p));
            }
            assert_eq!(partitions.get(forward.len()), None);
            walk_tags(entry.tagged_fields(), end);
        }
    }
    walk_tags(request.tagged_fields(), end);

    // Re-encode at the same version. A canonical frame (minimal varints, nulls as -1 or 0:
    // what Kafka writes) comes back exactly; any other comes back canonical, shorter or as
    // long, and different. Either way the result parses to the same values and is a fixed
    // point of re-encoding.
    let version = request.version();
    let canonical = canonical_request(frame).expect("the walk reads every frame that parses");
    match request.encoded_len(version) {
        Ok(len) => {
            let mut out = vec![0u8; len];
            assert_eq!(request.encode(version, &mut out), Ok(len));
            if canonical {
                assert_eq!(out, frame, "a canonical frame re-encodes to itself");
            } else {
                assert!(len <= frame.len());
                assert_ne!(out, frame, "a non-canonical frame re-encodes unchanged");
            }
            assert_eq!(canonical_request(&out), Some(true));
            let again = parse_request(&out).expect("re-encoded request parses");
            assert_eq!(plain_request(&again), plain_request(request));
            assert_eq!(&again, request);
            let mut twice = vec![0u8; len];
            assert_eq!(again.encode(version, &mut twice), Ok(len));
            assert_eq!(out, twice);
        }
        // The writer refuses unknown tags out of order or repeated, which the reader keeps.
        Err(e) => {
            assert!(
                matches!(e.kind, EncodeErrorKind::TaggedFieldOrder { .. }),
                "cannot re-encode a parsed request: {e}"
            );
            assert!(!plain_request(request).all_tags().all(|t| tags_ascending(t)));
        }
    }
}

fn response_round_trip(response: &ElectLeadersResponse<'_>) {
    let end = response.frame().len();
    walk_tags(response.header().tagged_fields(), end);
    let results = response.replica_election_results();
    assert_eq!(results.iter().count(), results.len());
    for result in results {
        assert!(result.range().end <= end);
        let _ = result.topic_str();
        let partitions = result.partition_result();
        assert_eq!(partitions.iter().count(), partitions.len());
        for p in partitions {
            assert!(p.range().end <= result.range().end);
            let _ = (
                p.partition_id(),
                p.error_code().name(),
                p.error_message_str(),
            );
            walk_tags(p.tagged_fields(), end);
        }
        walk_tags(result.tagged_fields(), end);
    }
    walk_tags(response.tagged_fields(), end);

    let version = response.version();
    let frame = response.frame();
    let canonical =
        canonical_response(frame, version).expect("the walk reads every frame that parses");
    match response.encoded_len(version) {
        Ok(len) => {
            let mut out = vec![0u8; len];
            assert_eq!(response.encode(version, &mut out), Ok(len));
            if canonical {
                assert_eq!(out, frame, "a canonical frame re-encodes to itself");
            } else {
                assert!(len <= end);
                assert_ne!(out, frame, "a non-canonical frame re-encodes unchanged");
            }
            assert_eq!(canonical_response(&out, version), Some(true));
            let again = parse_response(&out, version).expect("re-encoded response parses");
            assert_eq!(plain_response(&again), plain_response(response));
            assert_eq!(&again, response);
            let mut twice = vec![0u8; len];
            assert_eq!(again.encode(version, &mut twice), Ok(len));
            assert_eq!(out, twice);
        }
        Err(e) => {
            assert!(
                matches!(e.kind, EncodeErrorKind::TaggedFieldOrder { .. }),
                "cannot re-encode a parsed response: {e}"
            );
            assert!(!plain_response(response)
                .all_tags()
                .all(|t| tags_ascending(t)));
        }
    }
}

// ---------------------------------------------------------------------------------------
// Models: arbitrary messages, encoded by the writer, parsed back.

/// Unknown tagged fields; `sorted` makes them valid (ascending, unique) most of the time.
#[derive(Arbitrary, Debug, Clone)]
pub struct TagsModel {
    pub sorted: bool,
    pub fields: Vec<(u32, Vec<u8>)>,
}

impl TagsModel {
    fn fields(&self) -> Vec<(u32, Vec<u8>)> {
        let mut fields = self.fields.clone();
        if self.sorted {
            fields.sort_by_key(|f| f.0);
            fields.dedup_by_key(|f| f.0);
        }
        fields
    }
}

fn tag_data(fields: &[(u32, Vec<u8>)]) -> Vec<TaggedFieldData<'_>> {
    fields
        .iter()
        .map(|(t, d)| TaggedFieldData::new(*t, d))
        .collect()
}

fn tags_in_order(fields: &[(u32, Vec<u8>)]) -> bool {
    fields.windows(2).all(|w| w[0].0 < w[1].0)
}

fn same_tags(parsed: TaggedFields<'_>, model: &[(u32, Vec<u8>)]) {
    let got: Vec<(u32, &[u8])> = parsed.iter().map(|f| (f.tag(), f.data())).collect();
    let want: Vec<(u32, &[u8])> = model.iter().map(|(t, d)| (*t, &d[..])).collect();
    assert_eq!(got, want);
}

#[derive(Arbitrary, Debug)]
pub struct TopicModel {
    pub topic: Vec<u8>,
    pub partitions: Vec<i32>,
    pub tags: TagsModel,
}

#[derive(Arbitrary, Debug)]
pub struct RequestModel {
    pub version: u8,
    pub correlation_id: i32,
    pub client_id: Option<Vec<u8>>,
    pub header_tags: TagsModel,
    pub election_type: i8,
    pub topic_partitions: Option<Vec<TopicModel>>,
    pub timeout_ms: i32,
    pub tags: TagsModel,
}

/// Encodes an arbitrary request model and checks the writer's answer: refused exactly when
/// the version cannot carry it, otherwise parsed back to the same values.
pub fn check_roundtrip_request(data: &[u8]) {
    let Ok(model) = RequestModel::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let _ = encode_request_model(&model);
}

/// Encodes `model` (checking everything on the way) and returns the frame, if the writer
/// accepted it.
pub fn encode_request_model(model: &RequestModel) -> Option<Vec<u8>> {
    let version = version_or_one_past(model.version);
    let header_tags = model.header_tags.fields();
    let body_tags = model.tags.fields();
    let topic_tags: Vec<Vec<(u32, Vec<u8>)>> = model
        .topic_partitions
        .iter()
        .flatten()
        .map(|t| t.tags.fields())
        .collect();
    let topic_tag_data: Vec<Vec<TaggedFieldData<'_>>> =
        topic_tags.iter().map(|t| tag_data(t)).collect();
    let topics: Option<Vec<TopicPartitionsData<'_>>> =
        model.topic_partitions.as_ref().map(|list| {
            list.iter()
                .zip(&topic_tag_data)
                .map(|(t, tags)| TopicPartitionsData {
                    topic: &t.topic,
                    partitions: &t.partitions,
                    tagged_fields: tags,
                })
                .collect()
        });
    let header_tag_data = tag_data(&header_tags);
    let body_tag_data = tag_data(&body_tags);
    let request = ElectLeadersRequestData {
        correlation_id: model.correlation_id,
        client_id: model.client_id.as_deref(),
        header_tagged_fields: &header_tag_data,
        election_type: ElectionType(model.election_type),
        topic_partitions: topics.as_deref(),
        timeout_ms: model.timeout_ms,
        tagged_fields: &body_tag_data,
    };

    // What the writer must refuse, from the model alone.
    let mut refusals = Vec::new();
    if !is_supported(version) {
        refusals.push(EncodeErrorKind::UnsupportedVersion(version));
    }
    if version == 0 && model.election_type != 0 {
        refusals.push(EncodeErrorKind::NonDefaultValue { version });
    }
    let all_tags = || {
        std::iter::once(&header_tags)
            .chain(&topic_tags)
            .chain(std::iter::once(&body_tags))
    };
    if version < 2 && all_tags().any(|t| !t.is_empty()) {
        refusals.push(EncodeErrorKind::TaggedFieldsUnsupported { version });
    }
    if version == 2 && !all_tags().all(|t| tags_in_order(t)) {
        refusals.push(EncodeErrorKind::TaggedFieldOrder {
            tag: 0,
            previous: 0,
        });
    }
    let strings = model
        .client_id
        .iter()
        .chain(model.topic_partitions.iter().flatten().map(|t| &t.topic));
    if strings.clone().any(|s| s.len() > 32767) {
        refusals.push(EncodeErrorKind::StringTooLong { len: 0 });
    }

    let answer = request.encoded_len(version);
    let len = match answer {
        Err(e) => {
            assert!(
                refusals.iter().any(|r| same_kind(r, &e.kind)),
                "refused {e} but expected {refusals:?}"
            );
            return None;
        }
        Ok(len) => {
            assert!(refusals.is_empty(), "accepted, but expected {refusals:?}");
            len
        }
    };
    // Every shorter buffer is refused with the exact length, untouched.
    let mut short = vec![0x5au8; len - 1];
    let e = request.encode(version, &mut short).unwrap_err();
    assert_eq!(e.kind, EncodeErrorKind::BufferTooSmall { needed: len });
    assert!(short.iter().all(|&b| b == 0x5a));

    let mut out = vec![0u8; len];
    assert_eq!(request.encode(version, &mut out), Ok(len));
    assert_eq!(
        canonical_request(&out),
        Some(true),
        "the writer's frame is canonical"
    );
    let parsed = parse_request(&out).expect("a written request parses");
    assert_eq!(parsed.version(), version);
    assert_eq!(parsed.correlation_id(), model.correlation_id);
    assert_eq!(parsed.header().client_id(), model.client_id.as_deref());
    same_tags(parsed.header().tagged_fields(), &header_tags);
    let expected_type = if version == 0 { 0 } else { model.election_type };
    assert_eq!(parsed.election_type(), ElectionType(expected_type));
    match (parsed.topic_partitions(), &model.topic_partitions) {
        (None, None) => {}
        (Some(got), Some(want)) => {
            assert_eq!(got.len(), want.len());
            for ((g, w), tags) in got.iter().zip(want).zip(&topic_tags) {
                assert_eq!(g.topic(), &w.topic[..]);
                assert!(g.partitions().iter().eq(w.partitions.iter().copied()));
                same_tags(g.tagged_fields(), tags);
            }
        }
        (got, want) => panic!("null-ness changed: {got:?} vs {want:?}"),
    }
    assert_eq!(parsed.timeout_ms(), model.timeout_ms);
    same_tags(parsed.tagged_fields(), &body_tags);
    // The parsed view re-encodes to the same bytes.
    let mut again = vec![0u8; len];
    assert_eq!(parsed.encode(version, &mut again), Ok(len));
    assert_eq!(again, out);
    Some(out)
}

fn same_kind(a: &EncodeErrorKind, b: &EncodeErrorKind) -> bool {
    core::mem::discriminant(a) == core::mem::discriminant(b)
}

#[derive(Arbitrary, Debug)]
pub struct PartitionModel {
    pub partition_id: i32,
    pub error_code: i16,
    pub error_message: Option<Vec<u8>>,
    pub tags: TagsModel,
}

#[derive(Arbitrary, Debug)]
pub struct ResultModel {
    pub topic: Vec<u8>,
    pub partitions: Vec<PartitionModel>,
    pub tags: TagsModel,
}

#[derive(Arbitrary, Debug)]
pub struct ResponseModel {
    pub version: u8,
    pub correlation_id: i32,
    pub header_tags: TagsModel,
    pub throttle_time_ms: i32,
    pub error_code: i16,
    pub results: Vec<ResultModel>,
    pub tags: TagsModel,
}

/// The response counterpart of [`check_roundtrip_request`].
pub fn check_roundtrip_response(data: &[u8]) {
    let Ok(model) = ResponseModel::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let version = version_or_one_past(model.version);
    let header_tags = model.header_tags.fields();
    let body_tags = model.tags.fields();
    let result_tags: Vec<_> = model.results.iter().map(|r| r.tags.fields()).collect();
    let partition_tags: Vec<Vec<_>> = model
        .results
        .iter()
        .map(|r| r.partitions.iter().map(|p| p.tags.fields()).collect())
        .collect();
    let result_tag_data: Vec<_> = result_tags.iter().map(|t| tag_data(t)).collect();
    let partition_tag_data: Vec<Vec<_>> = partition_tags
        .iter()
        .map(|ps| ps.iter().map(|t| tag_data(t)).collect())
        .collect();
    let partitions: Vec<Vec<PartitionResultData<'_>>> = model
        .results
        .iter()
        .zip(&partition_tag_data)
        .map(|(r, tags)| {
            r.partitions
                .iter()
                .zip(tags)
                .map(|(p, t)| PartitionResultData {
                    partition_id: p.partition_id,
                    error_code: ErrorCode(p.error_code),
                    error_message: p.error_message.as_deref(),
                    tagged_fields: t,
                })
                .collect()
        })
        .collect();
    let results: Vec<ReplicaElectionResultData<'_>> = model
        .results
        .iter()
        .zip(&partitions)
        .zip(&result_tag_data)
        .map(|((r, ps), t)| ReplicaElectionResultData {
            topic: &r.topic,
            partition_result: ps,
            tagged_fields: t,
        })
        .collect();
    let header_tag_data = tag_data(&header_tags);
    let body_tag_data = tag_data(&body_tags);
    let response = ElectLeadersResponseData {
        correlation_id: model.correlation_id,
        header_tagged_fields: &header_tag_data,
        throttle_time_ms: model.throttle_time_ms,
        error_code: ErrorCode(model.error_code),
        replica_election_results: &results,
        tagged_fields: &body_tag_data,
    };

    let mut refusals = Vec::new();
    if !is_supported(version) {
        refusals.push(EncodeErrorKind::UnsupportedVersion(version));
    }
    if version == 0 && model.error_code != 0 {
        refusals.push(EncodeErrorKind::NonDefaultValue { version });
    }
    let all_tags: Vec<&Vec<(u32, Vec<u8>)>> = std::iter::once(&header_tags)
        .chain(&result_tags)
        .chain(partition_tags.iter().flatten())
        .chain(std::iter::once(&body_tags))
        .collect();
    if version < 2 && all_tags.iter().any(|t| !t.is_empty()) {
        refusals.push(EncodeErrorKind::TaggedFieldsUnsupported { version });
    }
    if version == 2 && !all_tags.iter().all(|t| tags_in_order(t)) {
        refusals.push(EncodeErrorKind::TaggedFieldOrder {
            tag: 0,
            previous: 0,
        });
    }
    let long = model.results.iter().any(|r| {
        r.topic.len() > 32767
            || r.partitions
                .iter()
                .any(|p| p.error_message.as_ref().is_some_and(|m| m.len() > 32767))
    });
    if long {
        refusals.push(EncodeErrorKind::StringTooLong { len: 0 });
    }

    let len = match response.encoded_len(version) {
        Err(e) => {
            assert!(
                refusals.iter().any(|r| same_kind(r, &e.kind)),
                "refused {e} but expected {refusals:?}"
            );
            return;
        }
        Ok(len) => {
            assert!(refusals.is_empty(), "accepted, but expected {refusals:?}");
            len
        }
    };
    let mut short = vec![0x5au8; len - 1];
    let e = response.encode(version, &mut short).unwrap_err();
    assert_eq!(e.kind, EncodeErrorKind::BufferTooSmall { needed: len });
    assert!(short.iter().all(|&b| b == 0x5a));

    let mut out = vec![0u8; len];
    assert_eq!(response.encode(version, &mut out), Ok(len));
    assert_eq!(
        canonical_response(&out, version),
        Some(true),
        "the writer's frame is canonical"
    );
    let parsed = parse_response(&out, version).expect("a written response parses");
    assert_eq!(parsed.correlation_id(), model.correlation_id);
    same_tags(parsed.header().tagged_fields(), &header_tags);
    assert_eq!(parsed.throttle_time_ms(), model.throttle_time_ms);
    let expected_code = if version == 0 { 0 } else { model.error_code };
    assert_eq!(parsed.error_code(), ErrorCode(expected_code));
    let got = parsed.replica_election_results();
    assert_eq!(got.len(), model.results.len());
    for (i, (g, w)) in got.iter().zip(&model.results).enumerate() {
        assert_eq!(g.topic(), &w.topic[..]);
        same_tags(g.tagged_fields(), &result_tags[i]);
        assert_eq!(g.partition_result().len(), w.partitions.len());
        for (j, (gp, wp)) in g.partition_result().iter().zip(&w.partitions).enumerate() {
            assert_eq!(gp.partition_id(), wp.partition_id);
            assert_eq!(gp.error_code(), ErrorCode(wp.error_code));
            assert_eq!(gp.error_message(), wp.error_message.as_deref());
            same_tags(gp.tagged_fields(), &partition_tags[i][j]);
        }
    }
    same_tags(parsed.tagged_fields(), &body_tags);
    let mut again = vec![0u8; len];
    assert_eq!(parsed.encode(version, &mut again), Ok(len));
    assert_eq!(again, out);
}

// ---------------------------------------------------------------------------------------
// split_stream: a stream cut into arbitrary chunks yields the same frames as whole.

#[derive(Arbitrary, Debug)]
pub struct SplitModel {
    pub requests: Vec<RequestModel>,
    pub tail: Vec<u8>,
    pub cuts: Vec<u16>,
    pub max_frame_size: Option<u16>,
}

pub fn check_split_stream(data: &[u8]) {
    let Ok(model) = SplitModel::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let mut stream = Vec::new();
    let mut valid = 0;
    for request in &model.requests {
        if let Some(frame) = encode_request_model(request) {
            stream.extend_from_slice(&frame);
            valid += 1;
        }
    }
    let valid_len = stream.len();
    stream.extend_from_slice(&model.tail);
    let max = model
        .max_frame_size
        .map_or(kafka_elect_leaders::DEFAULT_MAX_FRAME_SIZE, usize::from);

    // Whole: the frames up to the first partial or malformed one.
    let mut whole_iter = Frames::new(&stream).with_max_frame_size(max);
    let mut whole: Vec<&[u8]> = Vec::new();
    let mut whole_error = None;
    for frame in whole_iter.by_ref() {
        match frame {
            Ok(frame) => whole.push(frame),
            Err(e) => whole_error = Some(e),
        }
    }
    if model.max_frame_size.is_none() {
        // Every valid frame the writer made comes out whole, in order.
        let valid_frames: usize = whole.iter().take(valid).map(|f| f.len()).sum();
        assert!(whole.len() >= valid && valid_frames == valid_len);
        for frame in &whole[..valid] {
            parse_request(frame).expect("a written frame parses");
        }
    }

    // Chunked, as a proxy reads a socket: append each chunk, take every whole frame.
    let mut buffer: Vec<u8> = Vec::new();
    let mut chunked: Vec<Vec<u8>> = Vec::new();
    let mut chunked_error = None;
    let mut at = 0;
    let mut consumed = 0;
    let mut cuts = model
        .cuts
        .iter()
        .map(|&c| usize::from(c) % 97 + 1)
        .chain(std::iter::repeat(64));
    'feed: while at < stream.len() {
        let n = cuts.next().unwrap_or(1).min(stream.len() - at);
        buffer.extend_from_slice(&stream[at..at + n]);
        at += n;
        loop {
            match kafka_elect_leaders::split_frame_with_max(&buffer, max) {
                Ok((frame, _)) => {
                    let len = frame.len();
                    chunked.push(frame.to_vec());
                    buffer.drain(..len);
                    consumed += len;
                }
                Err(e) if e.is_incomplete() => {
                    assert!(e.needed().unwrap() > 0);
                    break;
                }
                Err(mut e) => {
                    e.offset += consumed;
                    chunked_error = Some(e);
                    break 'feed;
                }
            }
        }
    }
    assert_eq!(chunked.len(), whole.len());
    for (c, w) in chunked.iter().zip(&whole) {
        assert_eq!(&c[..], *w);
    }
    assert_eq!(chunked_error, whole_error);
    if whole_error.is_none() {
        assert_eq!(whole_iter.remainder(), &buffer[..]);
        assert_eq!(whole_iter.needed().is_some(), !buffer.is_empty());
    }
    if let Some(e) = whole_error {
        assert!(matches!(
            e.kind,
            ErrorKind::FrameTooLarge { .. } | ErrorKind::NegativeLength(_)
        ));
    }
    let _ = split_frame(&stream);
}

// ---------------------------------------------------------------------------------------
// differential: the same bytes through this crate and through kafka-protocol.
//
// Deliberate differences, where Kafka's semantics do not make both accept:
// - Bytes left after the body: kafka-protocol ignores them; we refuse (`TrailingBytes`).
// - A 5-byte varint over 32 bits: kafka-protocol wraps it; we refuse (`VarintOverflow`).
// - Invalid UTF-8 in a string: kafka-protocol refuses (its strings are `str`); we keep the
//   bytes, as an inspector must show them.
// - Repeated or unordered unknown tags: kafka-protocol keeps the last of each tag, sorted
//   (a map); we keep them all, in wire order. Compared here as kafka-protocol sees them.
// - A negative length or count other than -1 on a nullable string or array: Apache Kafka
//   reads it as null, and so do we; kafka-protocol refuses it. Such a frame is checked
//   through our canonical re-encoding of it instead (`refused_by_them`).
// - kafka-protocol sizes its vectors from the wire count before checking it against the
//   bytes left, so frames we refuse are not handed to it: a count of 2^31 would make it
//   try to allocate gigabytes. Only frames we accept are compared.

/// First byte: bit 0 picks request (0) or response (1), the next bits the response
/// version; the rest is one frame.
pub fn check_differential(data: &[u8]) {
    let Some((&selector, frame)) = data.split_first() else {
        return;
    };
    if selector & 1 == 0 {
        differential_request(frame);
    } else {
        differential_response(frame, nth_version(u64::from(selector >> 1)));
    }
}

/// kafka-protocol refused a frame we accept. Its only known reason (see the list above) is
/// a negative length or count other than -1, which Apache Kafka reads as null and
/// kafka-protocol refuses. So the frame must not be canonical, and our canonical re-encoding
/// of it (-1 or 0 for null) must then pass the whole differential check.
fn refused_by_them(
    ours: &impl Canonical,
    frame: &[u8],
    e: &dyn std::fmt::Display,
    check: impl Fn(&[u8]),
) {
    // A message our writer refuses (unknown tags out of order) cannot be made canonical.
    let Some(canonical) = ours.canonical() else {
        return;
    };
    assert_ne!(
        &canonical[..],
        frame,
        "kafka-protocol refused a canonical frame we accept: {e}"
    );
    check(&canonical);
}

/// The frame our writer makes of a parsed message at its own version.
trait Canonical {
    fn canonical(&self) -> Option<Vec<u8>>;
}

impl Canonical for ElectLeadersRequest<'_> {
    fn canonical(&self) -> Option<Vec<u8>> {
        let mut out = vec![0u8; self.encoded_len(self.version()).ok()?];
        self.encode(self.version(), &mut out).ok()?;
        Some(out)
    }
}

impl Canonical for ElectLeadersResponse<'_> {
    fn canonical(&self) -> Option<Vec<u8>> {
        let mut out = vec![0u8; self.encoded_len(self.version()).ok()?];
        self.encode(self.version(), &mut out).ok()?;
        Some(out)
    }
}

fn their_tags(map: &BTreeMap<i32, bytes::Bytes>) -> Vec<(i32, Vec<u8>)> {
    map.iter().map(|(t, d)| (*t, d.to_vec())).collect()
}

/// Our tags as a map keyed by Java int, the last of each tag winning: what Kafka keeps.
fn our_tags(tags: TaggedFields<'_>) -> Vec<(i32, Vec<u8>)> {
    let map: BTreeMap<i32, Vec<u8>> = tags
        .iter()
        .map(|f| (f.tag() as i32, f.data().to_vec()))
        .collect();
    map.into_iter().collect()
}

fn all_utf8<'s>(mut strings: impl Iterator<Item = &'s [u8]>) -> bool {
    strings.all(|s| std::str::from_utf8(s).is_ok())
}

fn differential_request(frame: &[u8]) {
    use kafka_protocol::messages::{ElectLeadersRequest as Theirs, RequestHeader};
    use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion};

    let Ok(ours) = parse_request(frame) else {
        return;
    };
    let version = ours.version();
    let strings = ours.header().client_id().into_iter().chain(
        ours.topic_partitions()
            .into_iter()
            .flatten()
            .map(|t| t.topic()),
    );
    let utf8 = all_utf8(strings);

    let mut buf = bytes::Bytes::copy_from_slice(&frame[4..]);
    let theirs = RequestHeader::decode(&mut buf, Theirs::header_version(version))
        .and_then(|h| Theirs::decode(&mut buf, version).map(|b| (h, b)));
    let (header, body) = match theirs {
        Ok(decoded) => decoded,
        Err(e) if utf8 => return refused_by_them(&ours, frame, &e, differential_request),
        Err(_) => return,
    };
    assert!(utf8, "kafka-protocol accepted invalid UTF-8");
    assert!(buf.is_empty(), "kafka-protocol left bytes we consumed");
    assert_eq!(header.request_api_key, 43);
    assert_eq!(header.request_api_version, version);
    assert_eq!(header.correlation_id, ours.correlation_id());
    assert_eq!(
        header.client_id.as_ref().map(|s| s.as_bytes()),
        ours.header().client_id()
    );
    assert_eq!(
        their_tags(&header.unknown_tagged_fields),
        our_tags(ours.header().tagged_fields())
    );
    assert_eq!(body.election_type, ours.election_type().0);
    assert_eq!(body.timeout_ms, ours.timeout_ms());
    assert_eq!(
        their_tags(&body.unknown_tagged_fields),
        our_tags(ours.tagged_fields())
    );
    match (&body.topic_partitions, ours.topic_partitions()) {
        (None, None) => {}
        (Some(theirs), Some(ours)) => {
            assert_eq!(theirs.len(), ours.len());
            for (t, o) in theirs.iter().zip(ours) {
                assert_eq!(t.topic.as_bytes(), o.topic());
                assert!(t.partitions.iter().copied().eq(o.partitions().iter()));
                assert_eq!(
                    their_tags(&t.unknown_tagged_fields),
                    our_tags(o.tagged_fields())
                );
            }
        }
        (t, o) => panic!("null-ness differs: {t:?} vs {o:?}"),
    }

    // Where our writer takes the tags as they are (ascending, within Java's int range), the
    // two writers must agree to the byte.
    if let Ok(len) = ours.encoded_len(version) {
        let mut mine = vec![0u8; len];
        ours.encode(version, &mut mine).unwrap();
        let in_int_range = |tags: TaggedFields<'_>| tags.iter().all(|f| f.tag() <= i32::MAX as u32);
        let ranged = in_int_range(ours.header().tagged_fields())
            && in_int_range(ours.tagged_fields())
            && ours
                .topic_partitions()
                .into_iter()
                .flatten()
                .all(|t| in_int_range(t.tagged_fields()));
        if ranged {
            let mut out = bytes::BytesMut::new();
            header
                .encode(&mut out, Theirs::header_version(version))
                .unwrap();
            body.encode(&mut out, version).unwrap();
            assert_eq!(&mine[4..], &out[..], "the writers disagree");
        }
    }
}

fn differential_response(frame: &[u8], version: i16) {
    use kafka_protocol::messages::{ElectLeadersResponse as Theirs, ResponseHeader};
    use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion};

    let Ok(ours) = parse_response(frame, version) else {
        return;
    };
    let results = ours.replica_election_results();
    let strings = results.iter().flat_map(|r| {
        std::iter::once(r.topic()).chain(
            r.partition_result()
                .iter()
                .filter_map(|p| p.error_message()),
        )
    });
    let utf8 = all_utf8(strings);

    let mut buf = bytes::Bytes::copy_from_slice(&frame[4..]);
    let theirs = ResponseHeader::decode(&mut buf, Theirs::header_version(version))
        .and_then(|h| Theirs::decode(&mut buf, version).map(|b| (h, b)));
    let (header, body) = match theirs {
        Ok(decoded) => decoded,
        Err(e) if utf8 => {
            let check = |canonical: &[u8]| differential_response(canonical, version);
            return refused_by_them(&ours, frame, &e, check);
        }
        Err(_) => return,
    };
    assert!(utf8, "kafka-protocol accepted invalid UTF-8");
    assert!(buf.is_empty(), "kafka-protocol left bytes we consumed");
    assert_eq!(header.correlation_id, ours.correlation_id());
    assert_eq!(
        their_tags(&header.unknown_tagged_fields),
        our_tags(ours.header().tagged_fields())
    );
    assert_eq!(body.throttle_time_ms, ours.throttle_time_ms());
    assert_eq!(body.error_code, ours.error_code().0);
    assert_eq!(
        their_tags(&body.unknown_tagged_fields),
        our_tags(ours.tagged_fields())
    );
    assert_eq!(body.replica_election_results.len(), results.len());
    for (t, o) in body.replica_election_results.iter().zip(results) {
        assert_eq!(t.topic.as_bytes(), o.topic());
        assert_eq!(
            their_tags(&t.unknown_tagged_fields),
            our_tags(o.tagged_fields())
        );
        assert_eq!(t.partition_result.len(), o.partition_result().len());
        for (tp, op) in t.partition_result.iter().zip(o.partition_result()) {
            assert_eq!(tp.partition_id, op.partition_id());
            assert_eq!(tp.error_code, op.error_code().0);
            assert_eq!(
                tp.error_message.as_ref().map(|s| s.as_bytes()),
                op.error_message()
            );
            assert_eq!(
                their_tags(&tp.unknown_tagged_fields),
                our_tags(op.tagged_fields())
            );
        }
    }
    if let Ok(len) = ours.encoded_len(version) {
        let mut mine = vec![0u8; len];
        ours.encode(version, &mut mine).unwrap();
        let in_int_range = |tags: TaggedFields<'_>| tags.iter().all(|f| f.tag() <= i32::MAX as u32);
        let ranged = in_int_range(ours.header().tagged_fields())
            && in_int_range(ours.tagged_fields())
            && results.iter().all(|r| {
                in_int_range(r.tagged_fields())
                    && r.partition_result()
                        .iter()
                        .all(|p| in_int_range(p.tagged_fields()))
            });
        if ranged {
            let mut out = bytes::BytesMut::new();
            header
                .encode(&mut out, Theirs::header_version(version))
                .unwrap();
            body.encode(&mut out, version).unwrap();
            assert_eq!(&mine[4..], &out[..], "the writers disagree");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Plain copies of parsed messages: compared field by field, so that a check never rests on
// the views' own `PartialEq` (which a broken one would pass).

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlainTopic {
    pub topic: Vec<u8>,
    pub partitions: Vec<i32>,
    pub tags: Vec<(u32, Vec<u8>)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlainRequest {
    pub version: i16,
    pub correlation_id: i32,
    pub client_id: Option<Vec<u8>>,
    pub header_tags: Vec<(u32, Vec<u8>)>,
    pub election_type: i8,
    pub topics: Option<Vec<PlainTopic>>,
    pub timeout_ms: i32,
    pub tags: Vec<(u32, Vec<u8>)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlainPartition {
    pub partition_id: i32,
    pub error_code: i16,
    pub error_message: Option<Vec<u8>>,
    pub tags: Vec<(u32, Vec<u8>)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlainResult {
    pub topic: Vec<u8>,
    pub partitions: Vec<PlainPartition>,
    pub tags: Vec<(u32, Vec<u8>)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlainResponse {
    pub version: i16,
    pub correlation_id: i32,
    pub header_tags: Vec<(u32, Vec<u8>)>,
    pub throttle_time_ms: i32,
    pub error_code: i16,
    pub results: Vec<PlainResult>,
    pub tags: Vec<(u32, Vec<u8>)>,
}

fn plain_tags(tags: TaggedFields<'_>) -> Vec<(u32, Vec<u8>)> {
    tags.iter().map(|f| (f.tag(), f.data().to_vec())).collect()
}

pub fn plain_request(r: &ElectLeadersRequest<'_>) -> PlainRequest {
    PlainRequest {
        version: r.version(),
        correlation_id: r.correlation_id(),
        client_id: r.header().client_id().map(<[u8]>::to_vec),
        header_tags: plain_tags(r.header().tagged_fields()),
        election_type: r.election_type().0,
        topics: r.topic_partitions().map(|list| {
            list.iter()
                .map(|t| PlainTopic {
                    topic: t.topic().to_vec(),
                    partitions: t.partitions().iter().collect(),
                    tags: plain_tags(t.tagged_fields()),
                })
                .collect()
        }),
        timeout_ms: r.timeout_ms(),
        tags: plain_tags(r.tagged_fields()),
    }
}

pub fn plain_response(r: &ElectLeadersResponse<'_>) -> PlainResponse {
    PlainResponse {
        version: r.version(),
        correlation_id: r.correlation_id(),
        header_tags: plain_tags(r.header().tagged_fields()),
        throttle_time_ms: r.throttle_time_ms(),
        error_code: r.error_code().0,
        results: r
            .replica_election_results()
            .iter()
            .map(|res| PlainResult {
                topic: res.topic().to_vec(),
                partitions: res
                    .partition_result()
                    .iter()
                    .map(|p| PlainPartition {
                        partition_id: p.partition_id(),
                        error_code: p.error_code().0,
                        error_message: p.error_message().map(<[u8]>::to_vec),
                        tags: plain_tags(p.tagged_fields()),
                    })
                    .collect(),
                tags: plain_tags(res.tagged_fields()),
            })
            .collect(),
        tags: plain_tags(r.tagged_fields()),
    }
}

impl PlainRequest {
    fn all_tags(&self) -> impl Iterator<Item = &Vec<(u32, Vec<u8>)>> {
        std::iter::once(&self.header_tags)
            .chain(self.topics.iter().flatten().map(|t| &t.tags))
            .chain(std::iter::once(&self.tags))
    }
}

impl PlainResponse {
    fn all_tags(&self) -> impl Iterator<Item = &Vec<(u32, Vec<u8>)>> {
        std::iter::once(&self.header_tags)
            .chain(
                self.results.iter().flat_map(|r| {
                    std::iter::once(&r.tags).chain(r.partitions.iter().map(|p| &p.tags))
                }),
            )
            .chain(std::iter::once(&self.tags))
    }
}

fn tags_ascending(tags: &[(u32, Vec<u8>)]) -> bool {
    tags.windows(2).all(|w| w[0].0 < w[1].0)
}

/// Asserts that `got` is one of the refusals `expected` (by kind) and names a field.
fn refused_as(got: &kafka_elect_leaders::EncodeError, expected: &[EncodeErrorKind]) {
    assert!(
        expected.iter().any(|k| same_kind(k, &got.kind)),
        "refused with {got}, expected one of {expected:?}"
    );
    assert!(!got.field.is_empty());
}

/// What the writer must refuse when `request` is written at `version`.
fn request_refusals(request: &PlainRequest, version: i16) -> Vec<EncodeErrorKind> {
    let mut refusals = Vec::new();
    if !is_supported(version) {
        refusals.push(EncodeErrorKind::UnsupportedVersion(version));
    }
    if version == 0 && request.election_type != 0 {
        refusals.push(EncodeErrorKind::NonDefaultValue { version });
    }
    if version < 2 && request.all_tags().any(|t| !t.is_empty()) {
        refusals.push(EncodeErrorKind::TaggedFieldsUnsupported { version });
    }
    if version == 2 && !request.all_tags().all(|t| tags_ascending(t)) {
        refusals.push(EncodeErrorKind::TaggedFieldOrder {
            tag: 0,
            previous: 0,
        });
    }
    let strings = request
        .client_id
        .iter()
        .chain(request.topics.iter().flatten().map(|t| &t.topic));
    if strings.into_iter().any(|s| s.len() > 32767) {
        refusals.push(EncodeErrorKind::StringTooLong { len: 0 });
    }
    refusals
}

fn response_refusals(response: &PlainResponse, version: i16) -> Vec<EncodeErrorKind> {
    let mut refusals = Vec::new();
    if !is_supported(version) {
        refusals.push(EncodeErrorKind::UnsupportedVersion(version));
    }
    if version == 0 && response.error_code != 0 {
        refusals.push(EncodeErrorKind::NonDefaultValue { version });
    }
    if version < 2 && response.all_tags().any(|t| !t.is_empty()) {
        refusals.push(EncodeErrorKind::TaggedFieldsUnsupported { version });
    }
    if version == 2 && !response.all_tags().all(|t| tags_ascending(t)) {
        refusals.push(EncodeErrorKind::TaggedFieldOrder {
            tag: 0,
            previous: 0,
        });
    }
    let long = response.results.iter().any(|r| {
        r.topic.len() > 32767
            || r.partitions
                .iter()
                .any(|p| p.error_message.as_ref().is_some_and(|m| m.len() > 32767))
    });
    if long {
        refusals.push(EncodeErrorKind::StringTooLong { len: 0 });
    }
    refusals
}

/// Encodes a request source at `version` with every writer check on the way: refused exactly
/// when `refusals` says so (with one of them); otherwise `encoded_len` is the length
/// written, a buffer one byte short is refused untouched, and the frame is canonical.
fn encode_request_checked(
    source: &impl EncodeRequest,
    version: i16,
    refusals: &[EncodeErrorKind],
) -> Option<Vec<u8>> {
    let len = match source.encoded_len(version) {
        Err(e) => {
            refused_as(&e, refusals);
            let mut buf = [0x5au8; 64];
            assert_eq!(source.encode(version, &mut buf), Err(e));
            assert!(buf.iter().all(|&b| b == 0x5a));
            return None;
        }
        Ok(len) => {
            assert!(refusals.is_empty(), "accepted, but expected {refusals:?}");
            len
        }
    };
    let mut short = vec![0x5au8; len - 1];
    let e = source.encode(version, &mut short).unwrap_err();
    assert_eq!(e.kind, EncodeErrorKind::BufferTooSmall { needed: len });
    assert!(short.iter().all(|&b| b == 0x5a));
    let mut out = vec![0u8; len];
    assert_eq!(source.encode(version, &mut out), Ok(len));
    assert_eq!(
        canonical_request(&out),
        Some(true),
        "the writer wrote a non-canonical frame"
    );
    Some(out)
}

fn encode_response_checked(
    source: &impl EncodeResponse,
    version: i16,
    refusals: &[EncodeErrorKind],
) -> Option<Vec<u8>> {
    let len = match source.encoded_len(version) {
        Err(e) => {
            refused_as(&e, refusals);
            let mut buf = [0x5au8; 64];
            assert_eq!(source.encode(version, &mut buf), Err(e));
            assert!(buf.iter().all(|&b| b == 0x5a));
            return None;
        }
        Ok(len) => {
            assert!(refusals.is_empty(), "accepted, but expected {refusals:?}");
            len
        }
    };
    let mut short = vec![0x5au8; len - 1];
    let e = source.encode(version, &mut short).unwrap_err();
    assert_eq!(e.kind, EncodeErrorKind::BufferTooSmall { needed: len });
    assert!(short.iter().all(|&b| b == 0x5a));
    let mut out = vec![0u8; len];
    assert_eq!(source.encode(version, &mut out), Ok(len));
    assert_eq!(
        canonical_response(&out, version),
        Some(true),
        "the writer wrote a non-canonical frame"
    );
    Some(out)
}

// ---------------------------------------------------------------------------------------
// Canonical form, told by a walk of the wire independent of the crate: every uvarint
// minimal, every null written -1 (classic) or 0 (compact). Kafka writes nothing else, and
// neither may our writer; a frame in that form must re-encode to exactly its bytes.

struct Walk<'a> {
    buf: &'a [u8],
    at: usize,
    canonical: bool,
}

impl<'a> Walk<'a> {
    fn new(frame: &'a [u8]) -> Option<Self> {
        Some(Walk {
            buf: frame.get(4..)?,
            at: 0,
            canonical: true,
        })
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let b = self.buf.get(self.at..end)?;
        self.at = end;
        Some(b)
    }

    fn i16(&mut self) -> Option<i16> {
        self.take(2).map(|b| i16::from_be_bytes([b[0], b[1]]))
    }

    fn i32(&mut self) -> Option<i32> {
        self.take(4)
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn uvarint(&mut self) -> Option<u32> {
        let mut value: u64 = 0;
        for i in 0..5 {
            let b = *self.take(1)?.first()?;
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                if i > 0 && b == 0 {
                    self.canonical = false;
                }
                return u32::try_from(value).ok();
            }
        }
        None
    }

    /// A string's length: `None` for null; a non-canonical null is noted.
    fn string_len(&mut self, flexible: bool) -> Option<Option<usize>> {
        if flexible {
            let n = self.uvarint()?;
            return Some(n.checked_sub(1).map(|n| n as usize));
        }
        let n = self.i16()?;
        if n < -1 {
            self.canonical = false;
        }
        Some(usize::try_from(n).ok())
    }

    fn string(&mut self, flexible: bool) -> Option<()> {
        if let Some(n) = self.string_len(flexible)? {
            self.take(n)?;
        }
        Some(())
    }

    fn count(&mut self, flexible: bool) -> Option<Option<usize>> {
        if flexible {
            let n = self.uvarint()?;
            return Some(n.checked_sub(1).map(|n| n as usize));
        }
        let n = self.i32()?;
        if n < -1 {
            self.canonical = false;
        }
        Some(usize::try_from(n).ok())
    }

    fn tags(&mut self, flexible: bool) -> Option<()> {
        if !flexible {
            return Some(());
        }
        let n = self.uvarint()?;
        for _ in 0..n {
            self.uvarint()?;
            let size = self.uvarint()?;
            self.take(size as usize)?;
        }
        Some(())
    }

    fn done(&self) -> Option<bool> {
        (self.at == self.buf.len()).then_some(self.canonical)
    }
}

/// Whether a request frame (one that parses) is in canonical form; `None` if this walk
/// cannot read it.
pub fn canonical_request(frame: &[u8]) -> Option<bool> {
    let mut w = Walk::new(frame)?;
    w.i16()?;
    let version = w.i16()?;
    let flexible = version >= 2;
    w.i32()?;
    w.string(false)?;
    w.tags(flexible)?;
    if version >= 1 {
        w.take(1)?;
    }
    if let Some(n) = w.count(flexible)? {
        for _ in 0..n {
            w.string(flexible)?;
            let partitions = w.count(flexible)?.unwrap_or(0);
            w.take(partitions.checked_mul(4)?)?;
            w.tags(flexible)?;
        }
    }
    w.i32()?;
    w.tags(flexible)?;
    w.done()
}

/// The response counterpart of [`canonical_request`].
pub fn canonical_response(frame: &[u8], version: i16) -> Option<bool> {
    let mut w = Walk::new(frame)?;
    let flexible = version >= 2;
    w.i32()?;
    w.tags(flexible)?;
    w.i32()?;
    if version >= 1 {
        w.i16()?;
    }
    let results = w.count(flexible)?.unwrap_or(0);
    for _ in 0..results {
        w.string(flexible)?;
        let partitions = w.count(flexible)?.unwrap_or(0);
        for _ in 0..partitions {
            w.take(6)?;
            w.string(flexible)?;
            w.tags(flexible)?;
        }
        w.tags(flexible)?;
    }
    w.tags(flexible)?;
    w.done()
}

// ---------------------------------------------------------------------------------------
// Where a message comes from in the targets below: the input's own bytes (a size-prefixed
// frame, then the parameters), or the crate's generator (`ArbitraryRequest`,
// `ArbitraryResponse`), which makes a valid message of any shape from few bytes.

/// A request frame and what is left of the input for the parameters.
fn take_request(data: &[u8], generate: bool) -> Option<(Vec<u8>, Unstructured<'_>)> {
    if generate {
        return generated_request(data);
    }
    let (frame, rest) = split_frame(data).ok()?;
    Some((frame.to_vec(), Unstructured::new(rest)))
}

/// A response frame, its version, and what is left of the input.
fn take_response(
    data: &[u8],
    generate: bool,
    version: i16,
) -> Option<(Vec<u8>, i16, Unstructured<'_>)> {
    if generate {
        return generated_response(data);
    }
    let (frame, rest) = split_frame(data).ok()?;
    Some((frame.to_vec(), version, Unstructured::new(rest)))
}

fn generated_request(data: &[u8]) -> Option<(Vec<u8>, Unstructured<'_>)> {
    use kafka_elect_leaders::{ArbitraryRequest, EncodeRequestExt};
    let mut u = Unstructured::new(data);
    let r = ArbitraryRequest::arbitrary(&mut u).ok()?;
    let frame = r.encode_to_vec(r.version).ok()?;
    Some((frame, u))
}

fn generated_response(data: &[u8]) -> Option<(Vec<u8>, i16, Unstructured<'_>)> {
    use kafka_elect_leaders::{ArbitraryResponse, EncodeResponseExt};
    let mut u = Unstructured::new(data);
    let r = ArbitraryResponse::arbitrary(&mut u).ok()?;
    let frame = r.encode_to_vec(r.version).ok()?;
    Some((frame, r.version, u))
}

/// A keep/drop decision from a seed and a name, the same each time it is asked.
fn keeps(seed: u64, name: &[u8], salt: i64) -> bool {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed;
    for &b in name.iter().chain(&salt.to_le_bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h >> 63 == 0 || seed == 0
}

/// A client id or message: maybe null, maybe just over or at the 32767-byte limit.
fn some_string<'a>(
    u: &mut Unstructured<'a>,
) -> arbitrary::Result<Option<std::borrow::Cow<'a, [u8]>>> {
    use std::borrow::Cow;
    Ok(match u.int_in_range(0u8..=9)? {
        0 => None,
        1 => Some(Cow::Owned(vec![b'k'; 32767])),
        2 => Some(Cow::Owned(vec![b'k'; 32768])),
        _ => Some(Cow::Borrowed(<&[u8]>::arbitrary(u)?)),
    })
}

// ---------------------------------------------------------------------------------------
// edit: RequestEdit / ResponseEdit, the edited frame parses and shows exactly the change.

/// First byte: bit 0 request (0) or response (1), bit 1 generate the message (1) or read a
/// frame from the input (0), bits 2-3 the response version. Then the frame (when read),
/// then the edit's parameters.
pub fn check_edit(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let generate = selector & 2 != 0;
    if selector & 1 == 0 {
        if let Some((frame, mut u)) = take_request(rest, generate) {
            let _ = edit_request(&frame, &mut u);
        }
    } else if let Some((frame, version, mut u)) =
        take_response(rest, generate, nth_version(u64::from(selector >> 2)))
    {
        let _ = edit_response(&frame, version, &mut u);
    }
}

fn edit_request(frame: &[u8], u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let Ok(request) = parse_request(frame) else {
        return Ok(());
    };
    let original = plain_request(&request);
    let version = request.version();
    let correlation_id: Option<i32> = u.arbitrary()?;
    let client_id = if u.arbitrary()? {
        Some(some_string(u)?)
    } else {
        None
    };
    let election_type: Option<i8> = u.arbitrary()?;
    let timeout_ms: Option<i32> = u.arbitrary()?;
    let topic_seed: Option<u64> = u.arbitrary()?;
    let partition_seed: Option<u64> = u.arbitrary()?;

    let mut expected = original.clone();
    let mut edit = request.edit();
    if let Some(id) = correlation_id {
        edit = edit.correlation_id(id);
        expected.correlation_id = id;
    }
    if let Some(id) = &client_id {
        edit = edit.client_id(id.as_deref());
        expected.client_id = id.as_deref().map(<[u8]>::to_vec);
    }
    if let Some(t) = election_type {
        edit = edit.election_type(ElectionType(t));
        expected.election_type = t;
    }
    if let Some(t) = timeout_ms {
        edit = edit.timeout_ms(t);
        expected.timeout_ms = t;
    }
    let topic_seed = topic_seed.unwrap_or(0);
    let partition_seed = partition_seed.unwrap_or(0);
    if let Some(topics) = &mut expected.topics {
        topics.retain(|t| keeps(topic_seed, &t.topic, t.partitions.len() as i64));
        for t in topics.iter_mut() {
            let name = t.topic.clone();
            t.partitions
                .retain(|&p| keeps(partition_seed, &name, i64::from(p)));
        }
    }
    let edit = edit
        .retain_topics(|t| keeps(topic_seed, t.topic(), t.partitions().len() as i64))
        .retain_partitions(|topic, p| keeps(partition_seed, topic, i64::from(p)));

    let refusals = request_refusals(&expected, version);
    let Some(out) = encode_request_checked(&edit, version, &refusals) else {
        return Ok(());
    };
    let parsed = parse_request(&out).expect("an edited request parses");
    assert_eq!(plain_request(&parsed), expected);
    // The views' own equality says "different" exactly when the values are.
    assert_eq!(parsed == request, expected == original, "view equality");
    // An edit that changes nothing is the canonical frame of the original.
    if correlation_id.is_none()
        && client_id.is_none()
        && election_type.is_none()
        && timeout_ms.is_none()
        && topic_seed == 0
        && partition_seed == 0
    {
        assert_eq!(
            out,
            reencoded_request(&request).expect("the same request encodes")
        );
    }
    Ok(())
}

fn edit_response(frame: &[u8], version: i16, u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let Ok(response) = parse_response(frame, version) else {
        return Ok(());
    };
    let original = plain_response(&response);
    let correlation_id: Option<i32> = u.arbitrary()?;
    let throttle_time_ms: Option<i32> = u.arbitrary()?;
    let error_code: Option<i16> = u.arbitrary()?;
    let topic_seed: Option<u64> = u.arbitrary()?;

    let mut expected = original.clone();
    let mut edit = response.edit();
    if let Some(id) = correlation_id {
        edit = edit.correlation_id(id);
        expected.correlation_id = id;
    }
    if let Some(t) = throttle_time_ms {
        edit = edit.throttle_time_ms(t);
        expected.throttle_time_ms = t;
    }
    if let Some(code) = error_code {
        edit = edit.error_code(ErrorCode(code));
        expected.error_code = code;
    }
    let topic_seed = topic_seed.unwrap_or(0);
    expected
        .results
        .retain(|r| keeps(topic_seed, &r.topic, r.partitions.len() as i64));
    let edit =
        edit.retain_topics(|r| keeps(topic_seed, r.topic(), r.partition_result().len() as i64));

    let refusals = response_refusals(&expected, version);
    let Some(out) = encode_response_checked(&edit, version, &refusals) else {
        return Ok(());
    };
    let parsed = parse_response(&out, version).expect("an edited response parses");
    assert_eq!(plain_response(&parsed), expected);
    assert_eq!(parsed == response, expected == original, "view equality");
    Ok(())
}

/// A parsed request re-encoded at its own version, if the writer takes it.
fn reencoded_request(request: &ElectLeadersRequest<'_>) -> Option<Vec<u8>> {
    let mut out = vec![0u8; request.encoded_len(request.version()).ok()?];
    request.encode(request.version(), &mut out).ok()?;
    Some(out)
}

fn reencoded_response(response: &ElectLeadersResponse<'_>) -> Option<Vec<u8>> {
    let mut out = vec![0u8; response.encoded_len(response.version()).ok()?];
    response.encode(response.version(), &mut out).ok()?;
    Some(out)
}

// ---------------------------------------------------------------------------------------
// error_response: every request that parses gets an answer that encodes and parses at its
// version, with every topic and partition it names answered with the code.

/// Most bytes of error message an error response may repeat across its partitions in this
/// check (4 MiB: 128 partitions at the 32767-byte limit).
const MAX_REPEATED_MESSAGE: usize = 4 << 20;

/// First byte: bit 1 generate the request (1) or read a frame (0). Then the frame (when
/// read), then the error code, message and throttle time.
pub fn check_error_response(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Some((frame, mut u)) = take_request(rest, selector & 2 != 0) else {
        return;
    };
    let Ok(request) = parse_request(&frame) else {
        return;
    };
    let Ok(code) = u.arbitrary::<i16>() else {
        return;
    };
    let Ok(message) = some_string(&mut u) else {
        return;
    };
    let throttle: Option<i32> = u.arbitrary().unwrap_or(None);
    let version = request.version();
    let original = plain_request(&request);
    let asked: usize = original
        .topics
        .iter()
        .flatten()
        .map(|t| t.partitions.len())
        .sum();
    // The answer repeats the message once per partition: a 32 KB message for thousands of
    // partitions is a frame of many megabytes that exercises nothing more than a smaller
    // one, and held this campaign to a few hundred executions per second. Such inputs are
    // passed over.
    if asked.saturating_mul(message.as_ref().map_or(0, |m| m.len())) > MAX_REPEATED_MESSAGE {
        return;
    }

    let mut answer = request.error_response(ErrorCode(code), message.as_deref());
    if let Some(t) = throttle {
        answer = answer.throttle_time_ms(t);
    }
    let expected = PlainResponse {
        version,
        correlation_id: original.correlation_id,
        header_tags: Vec::new(),
        throttle_time_ms: throttle.unwrap_or(0),
        error_code: if version == 0 { 0 } else { code },
        results: original
            .topics
            .iter()
            .flatten()
            .map(|t| PlainResult {
                topic: t.topic.clone(),
                partitions: t
                    .partitions
                    .iter()
                    .map(|&p| PlainPartition {
                        partition_id: p,
                        error_code: code,
                        error_message: message.as_deref().map(<[u8]>::to_vec),
                        tags: Vec::new(),
                    })
                    .collect(),
                tags: Vec::new(),
            })
            .collect(),
        tags: Vec::new(),
    };
    let refusals = response_refusals(&expected, version);
    let Some(out) = encode_response_checked(&answer, version, &refusals) else {
        return;
    };
    let parsed = parse_response(&out, version).expect("an error response parses");
    let got = plain_response(&parsed);
    assert_eq!(got, expected);
    let answered: usize = got.results.iter().map(|r| r.partitions.len()).sum();
    assert_eq!(answered, asked);
}

// ---------------------------------------------------------------------------------------
// reencode: a parsed message written at another version. What that version can carry must
// encode and parse back equal; what it cannot must be refused by name. And back again.

/// First byte: bit 0 request (0) or response (1), bits 2-3 the response's version, bits
/// 4-5 the version to write at (3: one that does not exist; bit 6 makes it -1). The rest is
/// one frame.
pub fn check_reencode(data: &[u8]) {
    let Some((&selector, frame)) = data.split_first() else {
        return;
    };
    let mut target = version_or_one_past(selector >> 4);
    if selector & 0x40 != 0 {
        target = -1 - target;
    }
    if selector & 1 == 0 {
        let Ok(request) = parse_request(frame) else {
            return;
        };
        let original = plain_request(&request);
        let refusals = request_refusals(&original, target);
        let Some(out) = encode_request_checked(&request, target, &refusals) else {
            return;
        };
        let parsed = parse_request(&out).expect("a re-encoded request parses");
        let mut expected = original.clone();
        expected.version = target;
        assert_eq!(plain_request(&parsed), expected);
        // And back: the canonical frame of the original.
        if let Some(canonical) = reencoded_request(&request) {
            let mut back = vec![0u8; canonical.len()];
            assert_eq!(
                parsed.encode(request.version(), &mut back),
                Ok(canonical.len())
            );
            assert_eq!(back, canonical);
        }
    } else {
        let version = version_or_one_past(selector >> 2);
        let Ok(response) = parse_response(frame, version) else {
            return;
        };
        let original = plain_response(&response);
        let refusals = response_refusals(&original, target);
        let Some(out) = encode_response_checked(&response, target, &refusals) else {
            return;
        };
        let parsed = parse_response(&out, target).expect("a re-encoded response parses");
        let mut expected = original.clone();
        expected.version = target;
        assert_eq!(plain_response(&parsed), expected);
        if let Some(canonical) = reencoded_response(&response) {
            let mut back = vec![0u8; canonical.len()];
            assert_eq!(parsed.encode(version, &mut back), Ok(canonical.len()));
            assert_eq!(back, canonical);
        }
    }
}

// ---------------------------------------------------------------------------------------
// scan: scan_requests / scan_responses (feature `scan`). Every reported frame is at a real
// offset and parses there; and what is reported is what a plain walk over every offset
// finds (requests: the first frame that parses from each point on, then on after it;
// responses: every offset where one parses with the correlation id asked for).

/// First byte: bit 0 requests (0) or responses (1), bits 2-3 the response version, bit 4
/// take the correlation id from the first candidate (1) or from the next 4 bytes (0), bits
/// 5-7 a work limit (16 bytes walked a step) for a second scan, which must find what the
/// first found up to where it says it stopped. The rest is the capture.
pub fn check_scan(data: &[u8]) {
    use kafka_elect_leaders::{scan_requests, scan_responses};
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    if selector & 1 == 0 {
        let capture = rest;
        let found: Vec<(usize, PlainRequest, usize)> = scan_requests(capture)
            .map(|(at, r)| {
                let frame = r.frame();
                // The view borrows the capture at the offset it reports.
                assert_eq!(frame.as_ptr(), capture[at..].as_ptr(), "offset {at}");
                (at, plain_request(&r), frame.len())
            })
            .collect();
        let mut expected = Vec::new();
        let mut at = 0;
        while at + 8 <= capture.len() {
            if capture[at + 4..at + 6] == [0, 43] {
                if let Ok((frame, _)) = split_frame(&capture[at..]) {
                    if let Ok(r) = parse_request(frame) {
                        expected.push((at, plain_request(&r), frame.len()));
                        at += frame.len();
                        continue;
                    }
                }
            }
            at += 1;
        }
        assert_eq!(found, expected);
        let limit = u64::from(selector >> 5) * 16;
        let mut limited = scan_requests(capture).work_limit(limit);
        let found: Vec<usize> = limited.by_ref().map(|(at, _)| at).collect();
        let all: Vec<usize> = expected.iter().map(|f| f.0).collect();
        let work = limited.stats().walked_bytes;
        check_limited(
            &found,
            &all,
            limited.stopped_at(),
            (work, limit),
            capture.len(),
        );
    } else {
        let version = version_or_one_past(selector >> 2);
        let (correlation_id, capture) = if selector & 0x10 != 0 {
            let id = rest
                .get(4..8)
                .map_or(0, |b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
            (id, rest)
        } else {
            let Some(id) = rest.get(..4) else { return };
            (i32::from_be_bytes([id[0], id[1], id[2], id[3]]), &rest[4..])
        };
        let found: Vec<(usize, PlainResponse)> = scan_responses(capture, correlation_id, version)
            .map(|(at, r)| {
                assert_eq!(r.frame().as_ptr(), capture[at..].as_ptr(), "offset {at}");
                assert_eq!(r.correlation_id(), correlation_id);
                (at, plain_response(&r))
            })
            .collect();
        let needle = correlation_id.to_be_bytes();
        let expected: Vec<(usize, PlainResponse)> = (0..capture.len().saturating_sub(7))
            .filter(|&at| capture[at + 4..at + 8] == needle)
            .filter_map(|at| {
                let (frame, _) = split_frame(&capture[at..]).ok()?;
                let r = parse_response(frame, version).ok()?;
                Some((at, plain_response(&r)))
            })
            .collect();
        assert_eq!(found, expected);
        let limit = u64::from(selector >> 5) * 16;
        let mut limited = scan_responses(capture, correlation_id, version).work_limit(limit);
        let found: Vec<usize> = limited.by_ref().map(|(at, _)| at).collect();
        let all: Vec<usize> = expected.iter().map(|f| f.0).collect();
        let work = limited.stats().walked_bytes;
        check_limited(
            &found,
            &all,
            limited.stopped_at(),
            (work, limit),
            capture.len(),
        );
    }
}

/// A scan with a work limit found `found`, one without found `all`: the same up to where the
/// limited one says it stopped, and all of it if it did not; and its work was at most the
/// limit and one frame (at most the capture) more.
fn check_limited(
    found: &[usize],
    all: &[usize],
    stopped_at: Option<usize>,
    (work, limit): (u64, u64),
    capture_len: usize,
) {
    assert!(
        work <= limit + capture_len as u64,
        "work {work}, limit {limit}"
    );
    match stopped_at {
        None => assert_eq!(found, all),
        Some(stop) => {
            assert_eq!(found, &all[..found.len()], "a prefix of the full scan");
            assert!(
                found.iter().all(|&at| at < stop),
                "found {found:?}, stopped at {stop}"
            );
            if let Some(&next) = all.get(found.len()) {
                assert!(next >= stop, "{next} skipped before the stop at {stop}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// needed: Incomplete { needed } is exactly the number of bytes missing, at every prefix of
// a frame, from every entry point that reads a stream.

/// The input is a stream: its first frame (by its size prefix) is cut at every length.
pub fn check_needed(data: &[u8]) {
    use kafka_elect_leaders::{peek_request, peek_response};
    let Ok((frame, _)) = split_frame(data) else {
        // Fewer than 4 bytes: the size prefix itself is what is missing.
        if data.len() < 4 {
            let e = split_frame(data).unwrap_err();
            assert_eq!(e.needed(), Some(4 - data.len()));
        }
        return;
    };
    let len = frame.len();
    let whole_request = parse_request(frame).map(|r| plain_request(&r));
    for cut in 0..len {
        let prefix = &frame[..cut];
        // Until the size prefix is whole, only its missing bytes are known to be missing.
        let missing = if cut < 4 { 4 - cut } else { len - cut };
        let e = split_frame(prefix).unwrap_err();
        assert_eq!(e.needed(), Some(missing), "split_frame at {cut} of {len}");
        assert!(e.is_incomplete());
        assert_eq!((e.field, e.offset), ("size", 0));
        let e = parse_request(prefix).unwrap_err();
        assert_eq!(e.needed(), Some(missing), "parse_request at {cut} of {len}");
        for version in VERSIONS {
            let e = parse_response(prefix, version).unwrap_err();
            assert_eq!(
                e.needed(),
                Some(missing),
                "parse_response at {cut} of {len}"
            );
        }
        let mut frames = Frames::new(prefix);
        assert!(frames.next().is_none());
        assert_eq!(frames.remainder(), prefix);
        let want = (cut > 0).then_some(missing);
        assert_eq!(frames.needed(), want, "Frames at {cut} of {len}");
        // The peeks need 12 and 8 bytes, whatever the frame's size (which holds them: a
        // prefix that long is a prefix of a longer frame).
        match peek_request(prefix) {
            Ok(p) => {
                assert!(cut >= 12, "peek_request at {cut}");
                assert_eq!(p.size + 4, len);
                assert_eq!(p.api_key, i16::from_be_bytes([frame[4], frame[5]]));
                assert_eq!(p.api_version, i16::from_be_bytes([frame[6], frame[7]]));
            }
            Err(e) => assert_eq!(e.needed(), Some(12 - cut), "peek_request at {cut}: {e}"),
        }
        match peek_response(prefix) {
            Ok(p) => {
                assert!(cut >= 8, "peek_response at {cut}");
                assert_eq!(p.size + 4, len);
                assert_eq!(p.correlation_id.to_be_bytes(), frame[4..8]);
            }
            Err(e) => assert_eq!(e.needed(), Some(8 - cut), "peek_response at {cut}: {e}"),
        }
    }
    // Whole, it is not incomplete, whatever else it is.
    match &whole_request {
        Ok(_) => {}
        Err(e) => assert!(!e.is_incomplete(), "{e}"),
    }
    // In a stream, the frame followed by a part of the next one: the next one's count.
    let mut stream = frame.to_vec();
    stream.extend_from_slice(&frame[..len / 2]);
    let mut frames = Frames::new(&stream);
    assert_eq!(frames.next().map(|f| f.map(<[u8]>::len)), Some(Ok(len)));
    assert!(frames.next().is_none());
    let missing = if len / 2 < 4 {
        4 - len / 2
    } else {
        len - len / 2
    };
    assert_eq!(frames.needed(), (len / 2 > 0).then_some(missing));
    assert_eq!(frames.offset(), len);
}

// ---------------------------------------------------------------------------------------
// pairing: InFlight against a plain model (a queue), fed requests and responses read from
// frames with peek_request / peek_response.

#[derive(Arbitrary, Debug)]
pub enum PairingOp {
    /// A request: the header bytes of a frame for any API.
    Request {
        api_key: i16,
        api_version: i16,
        correlation_id: u8,
    },
    /// A response with this correlation id.
    Response { correlation_id: u8 },
    /// A correlation id far from the small ones.
    ResponseAny { correlation_id: i32 },
    /// The connection closed.
    Clear,
}

pub fn check_pairing(data: &[u8]) {
    let Ok(ops) = Vec::<PairingOp>::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    pairing::<1>(&ops);
    pairing::<5>(&ops);
}

fn pairing<const N: usize>(ops: &[PairingOp]) {
    use kafka_elect_leaders::{peek_request, peek_response, InFlight, InFlightFull, Pending};
    use std::collections::VecDeque;
    let mut tracker = InFlight::<N>::new();
    let mut model: VecDeque<Pending> = VecDeque::new();
    for op in ops {
        match *op {
            PairingOp::Request {
                api_key,
                api_version,
                correlation_id,
            } => {
                let mut frame = 8i32.to_be_bytes().to_vec();
                frame.extend_from_slice(&api_key.to_be_bytes());
                frame.extend_from_slice(&api_version.to_be_bytes());
                frame.extend_from_slice(&i32::from(correlation_id).to_be_bytes());
                let peek = peek_request(&frame).expect("a request header peeks");
                let pending = Pending::from(peek);
                assert_eq!(
                    (pending.api_key, pending.api_version, pending.correlation_id),
                    (api_key, api_version, i32::from(correlation_id))
                );
                assert_eq!(
                    pending.is_elect_leaders(),
                    api_key == API_KEY && is_supported(api_version)
                );
                let got = tracker.push(pending);
                if model.len() == N {
                    assert_eq!(got, Err(InFlightFull { capacity: N }));
                } else {
                    assert_eq!(got, Ok(()));
                    model.push_back(pending);
                }
            }
            PairingOp::Response { correlation_id } => {
                answer(&mut tracker, &mut model, i32::from(correlation_id));
            }
            PairingOp::ResponseAny { correlation_id } => {
                answer(&mut tracker, &mut model, correlation_id);
            }
            PairingOp::Clear => {
                tracker.clear();
                model.clear();
            }
        }
        assert_eq!(tracker.len(), model.len());
        assert_eq!(tracker.is_empty(), model.is_empty());
        assert_eq!(tracker.capacity(), N);
        assert!(tracker.iter().eq(model.iter()));
        assert!(tracker.iter().rev().eq(model.iter().rev()));
        assert_eq!(tracker.iter().len(), model.len());
    }

    fn answer<const N: usize>(
        tracker: &mut InFlight<N>,
        model: &mut VecDeque<Pending>,
        correlation_id: i32,
    ) {
        let mut frame = 4i32.to_be_bytes().to_vec();
        frame.extend_from_slice(&correlation_id.to_be_bytes());
        let peek = peek_response(&frame).expect("a response header peeks");
        assert_eq!(peek.correlation_id, correlation_id);
        let got = tracker.answer(peek.correlation_id);
        let want = model
            .iter()
            .position(|p| p.correlation_id == correlation_id)
            .map(|position| {
                let request = model[position];
                model.drain(..=position);
                kafka_elect_leaders::Answered {
                    request,
                    skipped: position,
                }
            });
        assert_eq!(got, want);
    }
}

// ---------------------------------------------------------------------------------------
// policy: the proxy's ElectLeaders policy (the guard's policy module, included
// as it is) against the rules its documentation states.

use kafka_elect_leaders_proxy::policy;

/// First byte: bit 1 generate the request (1) or read a frame (0). Then the frame (when
/// read), then the policy.
pub fn check_policy(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Some((frame, mut u)) = take_request(rest, selector & 2 != 0) else {
        return;
    };
    let Ok(request) = parse_request(&frame) else {
        return;
    };
    let _ = decide(&request, &mut u);
}

fn decide(request: &ElectLeadersRequest<'_>, u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    use policy::{Policy, Refusal, Rule, Verdict};
    let plain = plain_request(request);
    let topics: Vec<&[u8]> = plain
        .topics
        .iter()
        .flatten()
        .map(|t| &t.topic[..])
        .collect();
    // Names the request uses, picked by index, and names of the fuzzer's own.
    let names = |u: &mut Unstructured<'_>, own: Option<&[u8]>| -> arbitrary::Result<_> {
        let mut set: std::collections::HashSet<Box<[u8]>> = Default::default();
        for _ in 0..u.int_in_range(0u8..=3)? {
            match (u.arbitrary::<u8>()?, own) {
                (0, Some(own)) => {
                    set.insert(own.into());
                }
                (i, _) if !topics.is_empty() && i & 1 == 1 => {
                    set.insert(topics[usize::from(i) % topics.len()].into());
                }
                _ => {
                    set.insert(<&[u8]>::arbitrary(u)?.into());
                }
            }
        }
        Ok(set)
    };
    let protected_topics = names(u, None)?;
    let allowed_client_ids = names(u, plain.client_id.as_deref())?;
    let policy = Policy {
        deny_unclean: u.arbitrary()?,
        protected_topics,
        allowed_client_ids,
        max_partitions: u.arbitrary::<Option<u8>>()?.map(usize::from),
        log_only: u.arbitrary()?,
    };
    let decision = policy.decide(request);

    // The rules, as the module's documentation states them.
    let requested: Option<usize> = plain
        .topics
        .as_ref()
        .map(|list| list.iter().map(|t| t.partitions.len()).sum());
    assert_eq!(decision.requested, requested);
    // Fail closed: under --deny-unclean every type but PREFERRED (0) is refused.
    let unclean = policy.deny_unclean && plain.election_type != 0;
    let protected = |t: &[u8]| policy.protected_topics.contains(t);
    let client_refused = !policy.allowed_client_ids.is_empty()
        && !plain
            .client_id
            .as_ref()
            .is_some_and(|id| policy.allowed_client_ids.contains(&id[..]));
    let too_many = policy
        .max_partitions
        .is_some_and(|max| requested.map_or(true, |n| n > max));
    let all_unclean = plain.topics.is_none() && unclean;
    let all_protected = plain.topics.is_none() && !policy.protected_topics.is_empty();
    let whole = client_refused || too_many || all_unclean || all_protected;
    let refused_entries: Vec<&PlainTopic> = plain
        .topics
        .iter()
        .flatten()
        .filter(|t| unclean || protected(&t.topic))
        .collect();
    let mut rules = Vec::new();
    if client_refused {
        rules.push(Rule::AllowClientId);
    }
    if too_many {
        rules.push(Rule::MaxPartitions);
    }
    if all_unclean || (unclean && !topics.is_empty()) {
        rules.push(Rule::DenyUnclean);
    }
    if all_protected || topics.iter().any(|t| protected(t)) {
        rules.push(Rule::ProtectTopic);
    }
    let got_rules: Vec<Rule> = decision.rules.iter().collect();
    assert_eq!(got_rules, rules);

    let entries = topics.len();
    match &decision.refusal {
        Refusal::Whole { message } => {
            assert!(whole);
            assert_eq!(decision.refused, requested.unwrap_or(0));
            for (refused, option) in [
                (client_refused, "--allow-client-id"),
                (too_many, "--max-partitions"),
                (all_unclean, "--deny-unclean"),
                (all_protected, "--protect-topic"),
            ] {
                assert_eq!(message.contains(option), refused, "{option}: {message}");
            }
        }
        Refusal::Partitions { all } => {
            assert!(!whole && !refused_entries.is_empty());
            assert_eq!(*all, refused_entries.len() == entries);
            let refused: usize = refused_entries.iter().map(|t| t.partitions.len()).sum();
            assert_eq!(decision.refused, refused);
        }
        Refusal::Nothing => {
            assert!(!whole && refused_entries.is_empty());
            assert_eq!(decision.refused, 0);
        }
    }
    if !policy.has_rules() {
        assert_eq!(decision.refusal, Refusal::Nothing);
    }
    let verdict = match (&decision.refusal, policy.log_only) {
        (Refusal::Nothing, _) => Verdict::Forwarded,
        (_, true) => Verdict::WouldRefuse,
        (Refusal::Whole { .. } | Refusal::Partitions { all: true }, false) => Verdict::Refused,
        (Refusal::Partitions { all: false }, false) => Verdict::Trimmed,
    };
    assert_eq!(decision.verdict, verdict);
    for t in &topics {
        let refuses = decision.refuses_topic(&policy, t);
        assert_eq!(refuses, whole || unclean || protected(t), "{t:?}");
        if refuses && !whole {
            let message = decision.partition_message(&policy, t);
            assert_eq!(message.contains("--deny-unclean"), unclean);
            assert_eq!(message.contains("--protect-topic"), protected(t));
            let other_type = unclean && plain.election_type != 1;
            assert_eq!(message.contains("unknown type"), other_type, "{message}");
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// capture: the pcap/pcapng reader (crates/capture) over arbitrary bytes: no panic, work
// bounded by the input, and the event stream keeps its documented order.

use kafka_elect_leaders_capture as capture;

pub fn check_capture(data: &[u8]) {
    use capture::{Capture, ConnId, Endpoint, Event};
    use std::collections::HashMap;

    let Ok(mut reader) = Capture::new(std::io::Cursor::new(data)) else {
        return;
    };
    // Open connections: their two ends. Directions: the next offset of each.
    let mut open: HashMap<ConnId, (Endpoint, Endpoint)> = HashMap::new();
    let mut next: HashMap<(ConnId, Endpoint), u64> = HashMap::new();
    let mut opened = 0u32;
    let mut events = 0usize;
    let direction = |open: &HashMap<ConnId, (Endpoint, Endpoint)>, conn, from, to| {
        let &(a, b) = open.get(&conn).expect("an event of a connection not open");
        assert!((from, to) == (a, b) || (from, to) == (b, a));
        (conn, from)
    };
    while let Some(event) = reader.next_event().expect("no I/O error from memory") {
        events += 1;
        // Every event stands for input bytes (a packet record is 16 bytes or more) or a
        // connection opened by one.
        assert!(
            events <= data.len() + 64,
            "{events} events from {} bytes",
            data.len()
        );
        match event {
            Event::Open { conn, a, b, .. } => {
                opened += 1;
                assert_eq!(conn, ConnId(opened), "connections numbered in order");
                assert!(open.insert(conn, (a, b)).is_none());
            }
            Event::Data {
                conn,
                from,
                to,
                offset,
                bytes,
                ..
            } => {
                assert!(!bytes.is_empty());
                let at = next.entry(direction(&open, conn, from, to)).or_insert(0);
                assert_eq!(offset, *at, "Data continues its direction");
                *at += bytes.len() as u64;
            }
            Event::Gap {
                conn,
                from,
                to,
                offset,
                len,
                ..
            } => {
                assert!(len > 0);
                let at = next.entry(direction(&open, conn, from, to)).or_insert(0);
                assert_eq!(offset, *at, "a Gap continues its direction");
                *at += len;
            }
            Event::Close { conn, reason, .. } => {
                assert!(open.remove(&conn).is_some(), "closed twice or never opened");
                assert!(!reason.is_empty());
            }
            Event::Note { message, .. } => assert!(!message.is_empty()),
        }
    }
    assert!(
        open.is_empty(),
        "the end of the capture closes every connection"
    );
    assert!(reader.next_event().expect("no I/O error").is_none());
    assert_eq!(reader.stats().connections, opened);
}

// ---------------------------------------------------------------------------------------
// generators: the crate's own generators and mutator, fuzzed. Whatever they produce either
// parses and round-trips (re-encoding gives the same bytes), or is refused by name: by the
// writer (`AnyVersion` messages) or, for a deliberate malformation, by the parser.

fn generated_request_round_trips(frame: &[u8]) {
    assert_eq!(canonical_request(frame), Some(true));
    let parsed = parse_request(frame).expect("the writer wrote it");
    let mut again = vec![0u8; frame.len()];
    assert_eq!(parsed.encode(parsed.version(), &mut again), Ok(frame.len()));
    assert_eq!(again, frame);
}

fn generated_response_round_trips(frame: &[u8], version: i16) {
    assert_eq!(canonical_response(frame, version), Some(true));
    let parsed = parse_response(frame, version).expect("the writer wrote it");
    let mut again = vec![0u8; frame.len()];
    assert_eq!(parsed.encode(version, &mut again), Ok(frame.len()));
    assert_eq!(again, frame);
}

/// First byte: bit 0 request (0) or response (1), bit 1 any version (`AnyVersion`, which
/// the writer may refuse) or a carryable one; it also seeds the mutator. The rest feeds
/// the generator.
pub fn check_generators(data: &[u8]) {
    use kafka_elect_leaders::{
        mutate_request, mutate_response, AnyVersion, ArbitraryRequest, ArbitraryResponse,
    };
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let mut u = Unstructured::new(rest);
    let seed = u64::from(selector);
    let mut out = vec![0u8; 70_000 + 2 * rest.len()];
    if selector & 1 == 0 {
        let request = if selector & 2 == 0 {
            ArbitraryRequest::arbitrary(&mut u)
        } else {
            AnyVersion::<ArbitraryRequest>::arbitrary(&mut u).map(|a| a.0)
        };
        let Ok(request) = request else { return };
        let Ok(len) = request.encoded_len(request.version) else {
            assert!(selector & 2 != 0, "a carryable request was refused");
            return;
        };
        let mut frame = vec![0u8; len];
        request.encode(request.version, &mut frame).unwrap();
        generated_request_round_trips(&frame);
        let mutant = mutate_request(&frame, seed, &mut out).unwrap();
        let bytes = &out[..mutant.len];
        if mutant.mutation.malformed {
            if let Err(e) = parse_request(bytes) {
                assert!(!e.field.is_empty() && e.offset <= bytes.len());
            }
        } else {
            generated_request_round_trips(bytes);
        }
    } else {
        let response = if selector & 2 == 0 {
            ArbitraryResponse::arbitrary(&mut u)
        } else {
            AnyVersion::<ArbitraryResponse>::arbitrary(&mut u).map(|a| a.0)
        };
        let Ok(response) = response else { return };
        let Ok(len) = response.encoded_len(response.version) else {
            assert!(selector & 2 != 0, "a carryable response was refused");
            return;
        };
        let mut frame = vec![0u8; len];
        response.encode(response.version, &mut frame).unwrap();
        generated_response_round_trips(&frame, response.version);
        let mutant = mutate_response(&frame, response.version, seed, &mut out).unwrap();
        let bytes = &out[..mutant.len];
        if mutant.mutation.malformed {
            if let Err(e) = parse_response(bytes, mutant.version) {
                assert!(!e.field.is_empty() && e.offset <= bytes.len());
            }
        } else {
            generated_response_round_trips(bytes, mutant.version);
        }
    }
}
