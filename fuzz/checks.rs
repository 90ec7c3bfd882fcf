//! The checks the fuzz targets run, shared with the stable replay test
//! (`tests/fuzz_replay.rs`), which runs every seed and every past crash through them.
//!
//! Each `check_*` function takes the raw fuzz input and panics on a failed property.

#![allow(dead_code)] // each fuzz target uses one check

use std::collections::BTreeMap;

use arbitrary::{Arbitrary, Unstructured};
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
    let version = i16::from(selector % 4);
    if let Ok(response) = parse_response(stream, version) {
        response_round_trip(&response);
    }
    for frame in Frames::new(stream) {
        let Ok(frame) = frame else { break };
        match parse_response(frame, version) {
            Ok(response) => {
                assert!(version <= 2, "version {version} was accepted");
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

    // Re-encode at the same version: never longer (varints only get shorter), and parsing
    // that gives the same values and re-encodes to the same bytes.
    let version = request.version();
    match request.encoded_len(version) {
        Ok(len) => {
            assert!(len <= frame.len());
            let mut out = vec![0u8; len];
            assert_eq!(request.encode(version, &mut out), Ok(len));
            let again = parse_request(&out).expect("re-encoded request parses");
            assert_eq!(&again, request);
            let mut twice = vec![0u8; len];
            assert_eq!(again.encode(version, &mut twice), Ok(len));
            assert_eq!(out, twice);
        }
        // The writer refuses unknown tags out of order or repeated, which the reader keeps.
        Err(e) => assert!(
            matches!(e.kind, EncodeErrorKind::TaggedFieldOrder { .. }),
            "cannot re-encode a parsed request: {e}"
        ),
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
    match response.encoded_len(version) {
        Ok(len) => {
            assert!(len <= end);
            let mut out = vec![0u8; len];
            assert_eq!(response.encode(version, &mut out), Ok(len));
            let again = parse_response(&out, version).expect("re-encoded response parses");
            assert_eq!(&again, response);
            let mut twice = vec![0u8; len];
            assert_eq!(again.encode(version, &mut twice), Ok(len));
            assert_eq!(out, twice);
        }
        Err(e) => assert!(
            matches!(e.kind, EncodeErrorKind::TaggedFieldOrder { .. }),
            "cannot re-encode a parsed response: {e}"
        ),
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
    let version = i16::from(model.version % 4);
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
    if version > 2 {
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
    let version = i16::from(model.version % 4);
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
    if version > 2 {
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
        differential_response(frame, i16::from((selector >> 1) % 3));
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
