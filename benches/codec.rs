//! Criterion benchmarks: this crate next to `kafka-protocol` 0.18 and a plain copy of the
//! frame, in the same run, on the same bytes.
//!
//! Every case frame is built once, before anything is timed, by this crate's writer from
//! borrowed data; kafka-protocol then decodes each one, and must find exactly the values it
//! was built from and re-encode the very same bytes, so both sides do the same work.
//!
//! Groups (`<operation>/<kind>`), each with one `BenchmarkId` per peer and case, and
//! `Throughput::Bytes` set to the frame (or stream) length:
//!
//! | group | `ours` | `kafka-protocol` | `memcpy` |
//! |---|---|---|---|
//! | `parse/*` | `parse_request` / `parse_response` | header + body `decode` | — |
//! | `parse_walk/*` | parse, then read every value; `ours-visit`: the same in one pass (`visit_*`) | decode, then read every value | copy of the frame |
//! | `encode/*` | `encode` from borrowed data; `ours-exact`: `encode_exact`, length known | `compute_size` + size prefix + `encode` | copy of the frame |
//! | `reemit/*` | `encode` of a parsed view | `encode` of a decoded message | copy of the frame |
//! | `walk_partitions/request` | parse, sum every partition id | — | copy of the frame |
//! | `split/stream` | `Frames` | `Bytes::split_to` loop | copy of the stream |
//! | `scan/stream` | `Frames` + `peek_request` | `split_to` + `RequestHeader` decode | — |
//! | `scan/capture` (feature `scan`) | `scan_requests` over frames with other bytes between | — | copy of the capture |
//!
//! "Read every value" means: sum the integers (ids, codes, timeouts, every partition id) and
//! touch every string (client id, topic names, error messages: length and first byte). Our
//! strings are bytes until asked for `&str`; kafka-protocol checks UTF-8 while decoding, so
//! `parse_walk/*` also has `ours+utf8`, which checks every string too.
//!
//! `parse_walk/*` also has the two floors, on the same body: `read-floor` sums it as
//! big-endian 32-bit words (every byte read once), `chase-floor` reads only the lengths and
//! counts needed to find where each element ends (`examples/profile.rs` has the same code,
//! for callgrind).
//!
//! `benches/ratios.py` turns the results into the table of ratios.

use kafka_elect_leaders::is_supported;
use kafka_elect_leaders_testkit::floors::{chase_request, chase_response, read_floor};

use std::hint::black_box;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use kafka_elect_leaders::{
    parse_request, parse_response, peek_request, ElectLeadersRequest, ElectLeadersRequestData,
    ElectLeadersResponse, ElectLeadersResponseData, ElectionType, EncodeRequest, EncodeResponse,
    ErrorCode, Frames, PartitionResult, PartitionResultData, ReplicaElectionResultData,
    RequestVisitor, ResponseVisitor, TopicPartitions, TopicPartitionsData, API_KEY,
};
use kafka_protocol::messages::elect_leaders_request::TopicPartitions as KpTopicPartitions;
use kafka_protocol::messages::elect_leaders_response::{
    PartitionResult as KpPartitionResult, ReplicaElectionResult as KpReplicaElectionResult,
};
use kafka_protocol::messages::{
    ElectLeadersRequest as KpRequest, ElectLeadersResponse as KpResponse,
    RequestHeader as KpRequestHeader, ResponseHeader as KpResponseHeader, TopicName,
};
use kafka_protocol::protocol::{
    decode_request_header_from_buffer, Decodable, Encodable, HeaderVersion, StrBytes,
};

/// Frames in the stream that `split/*` and `scan/*` cut up.
const STREAM_FRAMES: usize = 10_000;

// ---------------------------------------------------------------------------------------
// Cases, built once

/// One request frame and everything each peer needs to work on it.
struct RequestCase {
    name: &'static str,
    version: i16,
    data: ElectLeadersRequestData<'static>,
    frame: &'static [u8],
    /// The same frame, as kafka-protocol reads it.
    bytes: Bytes,
    /// What kafka-protocol encodes: the same values, in its own types.
    kp: (KpRequestHeader, KpRequest),
}

/// One response frame and everything each peer needs to work on it.
struct ResponseCase {
    name: &'static str,
    version: i16,
    data: ElectLeadersResponseData<'static>,
    frame: &'static [u8],
    bytes: Bytes,
    kp: (KpResponseHeader, KpResponse),
}

/// The cases live for the whole run; leaking them lets views and data borrow for `'static`.
fn leak<T>(v: Vec<T>) -> &'static [T] {
    v.leak()
}

fn topic_name(i: usize) -> &'static [u8] {
    format!("bench.topic-{i:04}").into_bytes().leak()
}

const CLIENT_ID: &[u8] = b"bench-admin-client";

/// A request for `topics` topics of `partitions` partitions each.
fn request_data(topics: usize, partitions: usize) -> ElectLeadersRequestData<'static> {
    let ids = leak((0..partitions as i32).collect());
    let entries = (0..topics)
        .map(|i| TopicPartitionsData::new(topic_name(i), ids))
        .collect();
    ElectLeadersRequestData {
        correlation_id: 42,
        client_id: Some(CLIENT_ID),
        topic_partitions: Some(leak(entries)),
        ..Default::default()
    }
}

/// A response for `topics` topics of `partitions` partitions each; every third partition
/// failed, with an error message.
fn response_data(topics: usize, partitions: usize) -> ElectLeadersResponseData<'static> {
    let results = (0..topics)
        .map(|i| {
            let topic = topic_name(i);
            let partition_result = (0..partitions as i32)
                .map(|p| {
                    if p % 3 == 0 {
                        let message = format!(
                            "Failed to elect leader for partition {}-{p} under strategy \
                             PreferredLeaderElectionStrategy",
                            String::from_utf8_lossy(topic)
                        );
                        PartitionResultData {
                            partition_id: p,
                            error_code: ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE,
                            error_message: Some(message.into_bytes().leak()),
                            tagged_fields: &[],
                        }
                    } else {
                        PartitionResultData {
                            partition_id: p,
                            ..Default::default()
                        }
                    }
                })
                .collect();
            ReplicaElectionResultData {
                topic,
                partition_result: leak(partition_result),
                tagged_fields: &[],
            }
        })
        .collect();
    ElectLeadersResponseData {
        correlation_id: 42,
        replica_election_results: leak(results),
        ..Default::default()
    }
}

fn kp_str(s: &[u8]) -> StrBytes {
    StrBytes::from_string(String::from_utf8(s.to_vec()).expect("bench strings are UTF-8"))
}

/// The same request in kafka-protocol's types, built from the data, not from our bytes.
fn kp_request(data: &ElectLeadersRequestData<'_>, version: i16) -> (KpRequestHeader, KpRequest) {
    let mut header = KpRequestHeader::default();
    header.request_api_key = API_KEY;
    header.request_api_version = version;
    header.correlation_id = data.correlation_id;
    header.client_id = data.client_id.map(kp_str);
    let mut body = KpRequest::default();
    body.election_type = data.election_type.0;
    body.topic_partitions = data.topic_partitions.map(|topics| {
        topics
            .iter()
            .map(|t| {
                let mut entry = KpTopicPartitions::default();
                entry.topic = TopicName(kp_str(t.topic));
                entry.partitions = t.partitions.to_vec();
                entry
            })
            .collect()
    });
    body.timeout_ms = data.timeout_ms;
    (header, body)
}

/// The same response in kafka-protocol's types, built from the data.
fn kp_response(data: &ElectLeadersResponseData<'_>) -> (KpResponseHeader, KpResponse) {
    let mut header = KpResponseHeader::default();
    header.correlation_id = data.correlation_id;
    let mut body = KpResponse::default();
    body.throttle_time_ms = data.throttle_time_ms;
    body.error_code = data.error_code.0;
    body.replica_election_results = data
        .replica_election_results
        .iter()
        .map(|r| {
            let mut result = KpReplicaElectionResult::default();
            result.topic = TopicName(kp_str(r.topic));
            result.partition_result = r
                .partition_result
                .iter()
                .map(|p| {
                    let mut partition = KpPartitionResult::default();
                    partition.partition_id = p.partition_id;
                    partition.error_code = p.error_code.0;
                    partition.error_message = p.error_message.map(kp_str);
                    partition
                })
                .collect();
            result
        })
        .collect();
    (header, body)
}

fn request_case(
    name: &'static str,
    version: i16,
    data: ElectLeadersRequestData<'static>,
) -> RequestCase {
    let mut frame = vec![0; data.encoded_len(version).expect("bench request encodes")];
    data.encode(version, &mut frame)
        .expect("bench request encodes");
    let frame: &'static [u8] = frame.leak();
    let bytes = Bytes::from_static(frame);
    // kafka-protocol reads our bytes as the values they were built from, and writes them
    // back byte for byte.
    let kp = kp_request(&data, version);
    assert_eq!(
        kp_decode_request(&bytes),
        kp,
        "{name}: kafka-protocol disagrees"
    );
    let mut out = BytesMut::new();
    kp_encode_request(&kp, version, &mut out);
    assert_eq!(
        &out[..],
        frame,
        "{name}: kafka-protocol encodes other bytes"
    );
    // Both walks see the same values.
    let parsed = parse_request(frame).expect("bench request parses");
    assert_eq!(walk_request(&parsed), walk_kp_request(&kp), "{name}: walks");
    assert_eq!(
        walk_request_utf8(&parsed),
        walk_kp_request(&kp),
        "{name}: walks"
    );
    RequestCase {
        name,
        version,
        data,
        frame,
        bytes,
        kp,
    }
}

fn response_case(
    name: &'static str,
    version: i16,
    data: ElectLeadersResponseData<'static>,
) -> ResponseCase {
    let mut frame = vec![0; data.encoded_len(version).expect("bench response encodes")];
    data.encode(version, &mut frame)
        .expect("bench response encodes");
    let frame: &'static [u8] = frame.leak();
    let bytes = Bytes::from_static(frame);
    let kp = kp_response(&data);
    assert_eq!(
        kp_decode_response(&bytes, version),
        kp,
        "{name}: kafka-protocol disagrees"
    );
    let mut out = BytesMut::new();
    kp_encode_response(&kp, version, &mut out);
    assert_eq!(
        &out[..],
        frame,
        "{name}: kafka-protocol encodes other bytes"
    );
    let parsed = parse_response(frame, version).expect("bench response parses");
    assert_eq!(
        walk_response(&parsed),
        walk_kp_response(&kp),
        "{name}: walks"
    );
    assert_eq!(
        walk_response_utf8(&parsed),
        walk_kp_response(&kp),
        "{name}: walks"
    );
    ResponseCase {
        name,
        version,
        data,
        frame,
        bytes,
        kp,
    }
}

/// The reference frames (`shared/reference/ElectLeaders.txt`, `corpus/*-v2-min.bin`), a
/// typical request (10 topics × 10 partitions) and a large one (1000 × 100), at versions 0
/// and 2.
fn request_cases() -> Vec<RequestCase> {
    let reference = ElectLeadersRequestData {
        topic_partitions: Some(leak(vec![TopicPartitionsData::new(b"", leak(vec![0]))])),
        timeout_ms: 0,
        ..Default::default()
    };
    let cases = vec![
        request_case("reference-v2", 2, reference),
        request_case("typical-v0", 0, request_data(10, 10)),
        request_case("typical-v2", 2, request_data(10, 10)),
        request_case("large-v0", 0, request_data(1000, 100)),
        request_case(
            "large-v2",
            2,
            ElectLeadersRequestData {
                election_type: ElectionType::UNCLEAN,
                ..request_data(1000, 100)
            },
        ),
    ];
    let corpus: &[u8] = include_bytes!("../corpus/request-v2-min.bin");
    assert_eq!(cases[0].frame, corpus, "the reference request");
    cases
}

/// The same shapes as [`request_cases`], answered.
fn response_cases() -> Vec<ResponseCase> {
    let partition = PartitionResultData {
        error_message: Some(b""),
        ..Default::default()
    };
    let result = ReplicaElectionResultData {
        topic: b"",
        partition_result: leak(vec![partition]),
        tagged_fields: &[],
    };
    let reference = ElectLeadersResponseData {
        replica_election_results: leak(vec![result]),
        ..Default::default()
    };
    let cases = vec![
        response_case("reference-v2", 2, reference),
        response_case("typical-v0", 0, response_data(10, 10)),
        response_case("typical-v2", 2, response_data(10, 10)),
        response_case("large-v0", 0, response_data(1000, 100)),
        response_case("large-v2", 2, response_data(1000, 100)),
    ];
    let corpus: &[u8] = include_bytes!("../corpus/response-v2-min.bin");
    assert_eq!(cases[0].frame, corpus, "the reference response");
    cases
}

/// [`STREAM_FRAMES`] request frames back to back: the reference and typical cases in turn.
fn stream(cases: &[RequestCase]) -> Vec<u8> {
    let small: Vec<&[u8]> = cases
        .iter()
        .filter(|c| !c.name.starts_with("large"))
        .map(|c| c.frame)
        .collect();
    small
        .iter()
        .cycle()
        .take(STREAM_FRAMES)
        .flat_map(|f| f.iter().copied())
        .collect()
}

// ---------------------------------------------------------------------------------------
// The work being timed

/// Touches a string: its length and first byte, so its bytes are really read.
#[inline(always)]
fn touch(s: &[u8]) -> i64 {
    s.len() as i64 + s.first().map_or(0, |&b| i64::from(b))
}

/// Touches a string after checking it is UTF-8, as kafka-protocol's decode does.
#[inline(always)]
fn touch_utf8(s: &[u8]) -> i64 {
    std::str::from_utf8(s).map_or(-1, |s| touch(s.as_bytes()))
}

/// Reads every value of a parsed request, touching each string with `text`.
#[inline(always)]
fn walk_request_with(r: &ElectLeadersRequest<'_>, text: impl Fn(&[u8]) -> i64) -> i64 {
    let header = r.header();
    let mut acc = i64::from(header.correlation_id())
        + i64::from(r.election_type().0)
        + i64::from(r.timeout_ms());
    acc += header.client_id().map_or(0, &text);
    if let Some(topics) = r.topic_partitions() {
        for topic in topics {
            acc += text(topic.topic());
            acc += topic.partitions().iter().map(i64::from).sum::<i64>();
        }
    }
    acc
}

fn walk_request(r: &ElectLeadersRequest<'_>) -> i64 {
    walk_request_with(r, touch)
}

fn walk_request_utf8(r: &ElectLeadersRequest<'_>) -> i64 {
    walk_request_with(r, touch_utf8)
}

/// Reads every value of a decoded kafka-protocol request (its strings are checked UTF-8).
fn walk_kp_request((header, body): &(KpRequestHeader, KpRequest)) -> i64 {
    let mut acc = i64::from(header.correlation_id)
        + i64::from(body.election_type)
        + i64::from(body.timeout_ms);
    acc += header.client_id.as_ref().map_or(0, |c| touch(c.as_bytes()));
    for topic in body.topic_partitions.iter().flatten() {
        acc += touch(topic.topic.as_bytes());
        acc += topic.partitions.iter().map(|&p| i64::from(p)).sum::<i64>();
    }
    acc
}

/// Reads every value of a parsed response, touching each string with `text`.
#[inline(always)]
fn walk_response_with(r: &ElectLeadersResponse<'_>, text: impl Fn(&[u8]) -> i64) -> i64 {
    let mut acc = i64::from(r.correlation_id())
        + i64::from(r.throttle_time_ms())
        + i64::from(r.error_code().0);
    for result in r.replica_election_results() {
        acc += text(result.topic());
        for p in result.partition_result() {
            acc += i64::from(p.partition_id()) + i64::from(p.error_code().0);
            acc += p.error_message().map_or(0, &text);
        }
    }
    acc
}

fn walk_response(r: &ElectLeadersResponse<'_>) -> i64 {
    walk_response_with(r, touch)
}

fn walk_response_utf8(r: &ElectLeadersResponse<'_>) -> i64 {
    walk_response_with(r, touch_utf8)
}

/// Reads every value of a decoded kafka-protocol response.
fn walk_kp_response((header, body): &(KpResponseHeader, KpResponse)) -> i64 {
    let mut acc = i64::from(header.correlation_id)
        + i64::from(body.throttle_time_ms)
        + i64::from(body.error_code);
    for result in &body.replica_election_results {
        acc += touch(result.topic.as_bytes());
        for p in &result.partition_result {
            acc += i64::from(p.partition_id) + i64::from(p.error_code);
            acc += p.error_message.as_ref().map_or(0, |m| touch(m.as_bytes()));
        }
    }
    acc
}

/// kafka-protocol's decode of a whole request frame: the version from the header, then the
/// header and the body after the size prefix.
fn kp_decode_request(frame: &Bytes) -> (KpRequestHeader, KpRequest) {
    let version = i16::from_be_bytes([frame[6], frame[7]]);
    let mut buf = frame.clone();
    buf.advance(4);
    let header = KpRequestHeader::decode(&mut buf, KpRequest::header_version(version))
        .expect("kafka-protocol decodes the header");
    let body = KpRequest::decode(&mut buf, version).expect("kafka-protocol decodes the body");
    (header, body)
}

fn kp_decode_response(frame: &Bytes, version: i16) -> (KpResponseHeader, KpResponse) {
    let mut buf = frame.clone();
    buf.advance(4);
    let header = KpResponseHeader::decode(&mut buf, KpResponse::header_version(version))
        .expect("kafka-protocol decodes the header");
    let body = KpResponse::decode(&mut buf, version).expect("kafka-protocol decodes the body");
    (header, body)
}

/// kafka-protocol's encode of a whole frame into a reused buffer: measure (for the size
/// prefix, as our writer does), then write. No allocation once `out` has grown.
fn kp_encode_request((header, body): &(KpRequestHeader, KpRequest), v: i16, out: &mut BytesMut) {
    out.clear();
    let header_version = KpRequest::header_version(v);
    let size = header.compute_size(header_version).expect("header size")
        + body.compute_size(v).expect("body size");
    out.reserve(4 + size);
    out.put_i32(size as i32);
    header.encode(out, header_version).expect("header encodes");
    body.encode(out, v).expect("body encodes");
}

fn kp_encode_response((header, body): &(KpResponseHeader, KpResponse), v: i16, out: &mut BytesMut) {
    out.clear();
    let header_version = KpResponse::header_version(v);
    let size = header.compute_size(header_version).expect("header size")
        + body.compute_size(v).expect("body size");
    out.reserve(4 + size);
    out.put_i32(size as i32);
    header.encode(out, header_version).expect("header encodes");
    body.encode(out, v).expect("body encodes");
}

/// The floor: one copy of the frame into a buffer that is already there.
fn copy(frame: &[u8], out: &mut [u8]) {
    out[..frame.len()].copy_from_slice(black_box(frame));
    black_box(out);
}

/// The walk of `walk_request` in one pass: each topic handed over as it is validated.
fn visit_request(frame: &[u8]) -> i64 {
    struct Walk(i64);
    impl<'a> RequestVisitor<'a> for Walk {
        #[inline(always)]
        fn topic_partitions(&mut self, topic: TopicPartitions<'a>) {
            self.0 += touch(topic.topic());
            self.0 += topic.partitions().iter().map(i64::from).sum::<i64>();
        }
    }
    let mut walk = Walk(0);
    let r = kafka_elect_leaders::visit_request(frame, &mut walk).unwrap();
    walk.0 + i64::from(r.correlation_id()) + i64::from(r.timeout_ms())
}

/// The walk of `walk_response` in one pass: each value handed over as it is validated.
fn visit_response(frame: &[u8], version: i16) -> i64 {
    struct Walk(i64);
    impl<'a> ResponseVisitor<'a> for Walk {
        #[inline(always)]
        fn replica_election_result(&mut self, topic: &'a [u8]) {
            self.0 += touch(topic);
        }
        #[inline(always)]
        fn partition_result(&mut self, p: PartitionResult<'a>) {
            self.0 += i64::from(p.partition_id()) + i64::from(p.error_code().0);
            self.0 += p.error_message().map_or(0, touch);
        }
    }
    let mut walk = Walk(0);
    let r = kafka_elect_leaders::visit_response(frame, version, &mut walk).unwrap();
    walk.0 + i64::from(r.correlation_id()) + i64::from(r.throttle_time_ms())
}

// ---------------------------------------------------------------------------------------
// Benchmarks

fn bench_parse(c: &mut Criterion) {
    let requests = request_cases();
    let responses = response_cases();

    let mut g = c.benchmark_group("parse/request");
    for case in &requests {
        g.throughput(Throughput::Bytes(case.frame.len() as u64));
        g.bench_with_input(BenchmarkId::new("ours", case.name), case, |b, case| {
            b.iter(|| parse_request(black_box(case.frame)).map(|r| black_box(r).version()))
        });
        g.bench_with_input(
            BenchmarkId::new("kafka-protocol", case.name),
            case,
            |b, case| b.iter(|| kp_decode_request(black_box(&case.bytes))),
        );
    }
    g.finish();

    let mut g = c.benchmark_group("parse/response");
    for case in &responses {
        g.throughput(Throughput::Bytes(case.frame.len() as u64));
        g.bench_with_input(BenchmarkId::new("ours", case.name), case, |b, case| {
            b.iter(|| {
                parse_response(black_box(case.frame), case.version).map(|r| black_box(r).version())
            })
        });
        g.bench_with_input(
            BenchmarkId::new("kafka-protocol", case.name),
            case,
            |b, case| b.iter(|| kp_decode_response(black_box(&case.bytes), case.version)),
        );
    }
    g.finish();

    let mut g = c.benchmark_group("parse_walk/request");
    for case in &requests {
        g.throughput(Throughput::Bytes(case.frame.len() as u64));
        g.bench_with_input(BenchmarkId::new("ours", case.name), case, |b, case| {
            b.iter(|| walk_request(&parse_request(black_box(case.frame)).expect("parses")))
        });
        g.bench_with_input(BenchmarkId::new("ours+utf8", case.name), case, |b, case| {
            b.iter(|| walk_request_utf8(&parse_request(black_box(case.frame)).expect("parses")))
        });
        g.bench_with_input(
            BenchmarkId::new("ours-visit", case.name),
            case,
            |b, case| b.iter(|| visit_request(black_box(case.frame))),
        );
        g.bench_with_input(
            BenchmarkId::new("kafka-protocol", case.name),
            case,
            |b, case| b.iter(|| walk_kp_request(&kp_decode_request(black_box(&case.bytes)))),
        );
        let body = &case.frame[parse_request(case.frame).expect("parses").body_range()];
        g.bench_with_input(
            BenchmarkId::new("read-floor", case.name),
            body,
            |b, body| b.iter(|| read_floor(black_box(body))),
        );
        g.bench_with_input(
            BenchmarkId::new("chase-floor", case.name),
            body,
            |b, body| b.iter(|| chase_request(black_box(body), case.version)),
        );
        let mut out = vec![0u8; case.frame.len()];
        g.bench_with_input(BenchmarkId::new("memcpy", case.name), case, |b, case| {
            b.iter(|| copy(case.frame, &mut out))
        });
    }
    g.finish();

    let mut g = c.benchmark_group("parse_walk/response");
    for case in &responses {
        g.throughput(Throughput::Bytes(case.frame.len() as u64));
        g.bench_with_input(BenchmarkId::new("ours", case.name), case, |b, case| {
            b.iter(|| {
                let r = parse_response(black_box(case.frame), case.version).expect("parses");
                walk_response(&r)
            })
        });
        g.bench_with_input(BenchmarkId::new("ours+utf8", case.name), case, |b, case| {
            b.iter(|| {
                let r = parse_response(black_box(case.frame), case.version).expect("parses");
                walk_response_utf8(&r)
            })
        });
        g.bench_with_input(
            BenchmarkId::new("ours-visit", case.name),
            case,
            |b, case| b.iter(|| visit_response(black_box(case.frame), case.version)),
        );
        g.bench_with_input(
            BenchmarkId::new("kafka-protocol", case.name),
            case,
            |b, case| {
                b.iter(|| {
                    walk_kp_response(&kp_decode_response(black_box(&case.bytes), case.version))
                })
            },
        );
        let parsed = parse_response(case.frame, case.version).expect("parses");
        let body = &case.frame[parsed.body_range()];
        g.bench_with_input(
            BenchmarkId::new("read-floor", case.name),
            body,
            |b, body| b.iter(|| read_floor(black_box(body))),
        );
        g.bench_with_input(
            BenchmarkId::new("chase-floor", case.name),
            body,
            |b, body| b.iter(|| chase_response(black_box(body), case.version)),
        );
        let mut out = vec![0u8; case.frame.len()];
        g.bench_with_input(BenchmarkId::new("memcpy", case.name), case, |b, case| {
            b.iter(|| copy(case.frame, &mut out))
        });
    }
    g.finish();

    // Walking every partition of the large request, against copying it.
    let mut g = c.benchmark_group("walk_partitions/request");
    for case in requests.iter().filter(|c| c.name.starts_with("large")) {
        g.throughput(Throughput::Bytes(case.frame.len() as u64));
        let sum = |r: &ElectLeadersRequest<'_>| -> i64 {
            r.topic_partitions().map_or(0, |topics| {
                topics
                    .iter()
                    .map(|t| t.partitions().iter().map(i64::from).sum::<i64>())
                    .sum()
            })
        };
        g.bench_with_input(BenchmarkId::new("ours", case.name), case, |b, case| {
            b.iter(|| sum(&parse_request(black_box(case.frame)).expect("parses")))
        });
        let parsed = parse_request(case.frame).expect("parses");
        g.bench_with_input(
            BenchmarkId::new("ours-walk-only", case.name),
            &parsed,
            |b, parsed| b.iter(|| sum(black_box(parsed))),
        );
        let mut out = vec![0u8; case.frame.len()];
        g.bench_with_input(BenchmarkId::new("memcpy", case.name), case, |b, case| {
            b.iter(|| copy(case.frame, &mut out))
        });
    }
    g.finish();
}

fn bench_encode(c: &mut Criterion) {
    let requests = request_cases();
    let responses = response_cases();
    let largest = requests
        .iter()
        .map(|c| c.frame.len())
        .chain(responses.iter().map(|c| c.frame.len()))
        .max()
        .unwrap_or(0);
    let mut out = vec![0u8; largest];
    let mut kp_out = BytesMut::with_capacity(largest);

    let mut g = c.benchmark_group("encode/request");
    for case in &requests {
        g.throughput(Throughput::Bytes(case.frame.len() as u64));
        g.bench_with_input(BenchmarkId::new("ours", case.name), case, |b, case| {
            b.iter(|| {
                black_box(&case.data)
                    .encode(case.version, &mut out)
                    .expect("encodes")
            })
        });
        g.bench_with_input(
            BenchmarkId::new("ours-exact", case.name),
            case,
            |b, case| {
                b.iter(|| {
                    black_box(&case.data)
                        .encode_exact(case.version, case.frame.len(), &mut out)
                        .expect("encodes")
                })
            },
        );
        g.bench_with_input(
            BenchmarkId::new("kafka-protocol", case.name),
            case,
            |b, case| b.iter(|| kp_encode_request(black_box(&case.kp), case.version, &mut kp_out)),
        );
        g.bench_with_input(BenchmarkId::new("memcpy", case.name), case, |b, case| {
            b.iter(|| copy(case.frame, &mut out))
        });
    }
    g.finish();

    let mut g = c.benchmark_group("encode/response");
    for case in &responses {
        g.throughput(Throughput::Bytes(case.frame.len() as u64));
        g.bench_with_input(BenchmarkId::new("ours", case.name), case, |b, case| {
            b.iter(|| {
                black_box(&case.data)
                    .encode(case.version, &mut out)
                    .expect("encodes")
            })
        });
        g.bench_with_input(
            BenchmarkId::new("ours-exact", case.name),
            case,
            |b, case| {
                b.iter(|| {
                    black_box(&case.data)
                        .encode_exact(case.version, case.frame.len(), &mut out)
                        .expect("encodes")
                })
            },
        );
        g.bench_with_input(
            BenchmarkId::new("kafka-protocol", case.name),
            case,
            |b, case| b.iter(|| kp_encode_response(black_box(&case.kp), case.version, &mut kp_out)),
        );
        g.bench_with_input(BenchmarkId::new("memcpy", case.name), case, |b, case| {
            b.iter(|| copy(case.frame, &mut out))
        });
    }
    g.finish();

    // Re-emitting a view parsed beforehand, next to kafka-protocol encoding the message it
    // decoded, and to copying the frame (what re-emitting an unchanged frame could cost).
    let mut g = c.benchmark_group("reemit/request");
    for case in &requests {
        g.throughput(Throughput::Bytes(case.frame.len() as u64));
        let parsed = parse_request(case.frame).expect("parses");
        let written = parsed.encode(case.version, &mut out).expect("re-encodes");
        assert_eq!(
            &out[..written],
            case.frame,
            "{}: re-emitted bytes",
            case.name
        );
        g.bench_with_input(BenchmarkId::new("ours", case.name), &parsed, |b, parsed| {
            b.iter(|| {
                black_box(parsed)
                    .encode(case.version, &mut out)
                    .expect("encodes")
            })
        });
        let decoded = kp_decode_request(&case.bytes);
        g.bench_with_input(
            BenchmarkId::new("kafka-protocol", case.name),
            &decoded,
            |b, decoded| {
                b.iter(|| kp_encode_request(black_box(decoded), case.version, &mut kp_out))
            },
        );
        g.bench_with_input(BenchmarkId::new("memcpy", case.name), case, |b, case| {
            b.iter(|| copy(case.frame, &mut out))
        });
    }
    g.finish();

    let mut g = c.benchmark_group("reemit/response");
    for case in &responses {
        g.throughput(Throughput::Bytes(case.frame.len() as u64));
        let parsed = parse_response(case.frame, case.version).expect("parses");
        let written = parsed.encode(case.version, &mut out).expect("re-encodes");
        assert_eq!(
            &out[..written],
            case.frame,
            "{}: re-emitted bytes",
            case.name
        );
        g.bench_with_input(BenchmarkId::new("ours", case.name), &parsed, |b, parsed| {
            b.iter(|| {
                black_box(parsed)
                    .encode(case.version, &mut out)
                    .expect("encodes")
            })
        });
        let decoded = kp_decode_response(&case.bytes, case.version);
        g.bench_with_input(
            BenchmarkId::new("kafka-protocol", case.name),
            &decoded,
            |b, decoded| {
                b.iter(|| kp_encode_response(black_box(decoded), case.version, &mut kp_out))
            },
        );
        g.bench_with_input(BenchmarkId::new("memcpy", case.name), case, |b, case| {
            b.iter(|| copy(case.frame, &mut out))
        });
    }
    g.finish();
}

/// The hand-written splitter a kafka-protocol user writes (kafka-protocol has none): read
/// the size prefix, `split_to` the frame off a `Bytes`.
fn bytes_frames(stream: &Bytes) -> impl Iterator<Item = Bytes> {
    let mut rest = stream.clone();
    std::iter::from_fn(move || {
        let size = i32::from_be_bytes(rest.get(..4)?.try_into().ok()?);
        let total = 4 + usize::try_from(size).ok()?;
        (rest.len() >= total).then(|| rest.split_to(total))
    })
}

fn bench_stream(c: &mut Criterion) {
    let requests = request_cases();
    let stream = stream(&requests);
    let shared = Bytes::from_static(stream.clone().leak());
    let name = format!("{STREAM_FRAMES}-frames");
    assert_eq!(Frames::new(&stream).count(), STREAM_FRAMES);
    assert_eq!(bytes_frames(&shared).count(), STREAM_FRAMES);

    let mut g = c.benchmark_group("split/stream");
    g.throughput(Throughput::Bytes(stream.len() as u64));
    g.bench_function(BenchmarkId::new("ours", &name), |b| {
        b.iter(|| {
            Frames::new(black_box(&stream))
                .map(|f| f.map_or(0, <[u8]>::len))
                .sum::<usize>()
        })
    });
    g.bench_function(BenchmarkId::new("bytes-split_to", &name), |b| {
        b.iter(|| {
            bytes_frames(black_box(&shared))
                .map(|f| f.len())
                .sum::<usize>()
        })
    });
    let mut out = vec![0u8; stream.len()];
    g.bench_function(BenchmarkId::new("memcpy", &name), |b| {
        b.iter(|| copy(&stream, &mut out))
    });
    g.finish();

    // Finding the requests in a stream that starts on a frame boundary: split it and peek at
    // each request's header (API key, version, correlation id).
    let mut g = c.benchmark_group("scan/stream");
    g.throughput(Throughput::Bytes(stream.len() as u64));
    g.bench_function(BenchmarkId::new("ours", &name), |b| {
        b.iter(|| {
            Frames::new(black_box(&stream))
                .filter_map(|f| peek_request(f.ok()?).ok())
                .filter(|p| p.is_elect_leaders())
                .map(|p| i64::from(p.correlation_id))
                .sum::<i64>()
        })
    });
    g.bench_function(BenchmarkId::new("kafka-protocol", &name), |b| {
        b.iter(|| {
            bytes_frames(black_box(&shared))
                .filter_map(|mut f| {
                    f.advance(4);
                    decode_request_header_from_buffer(&mut f).ok()
                })
                .filter(|h| h.request_api_key == API_KEY && is_supported(h.request_api_version))
                .map(|h| i64::from(h.correlation_id))
                .sum::<i64>()
        })
    });
    g.finish();

    #[cfg(feature = "scan")]
    bench_capture(c, &stream);
}

/// Finding the requests in a capture that does not start on a frame boundary and has other
/// bytes between the frames (`scan_requests`, feature `scan`). kafka-protocol has no such
/// search; the floor is a copy of the capture.
#[cfg(feature = "scan")]
fn bench_capture(c: &mut Criterion, stream: &[u8]) {
    let mut capture = Vec::with_capacity(stream.len() * 2);
    for frame in Frames::new(stream) {
        capture.extend_from_slice(b"\x07\x00 other traffic \x00\x2b");
        capture.extend_from_slice(frame.expect("the stream holds whole frames"));
    }
    let name = format!("{STREAM_FRAMES}-frames-unaligned");
    let found = kafka_elect_leaders::scan_requests(&capture).count();
    assert_eq!(found, STREAM_FRAMES);

    let mut g = c.benchmark_group("scan/capture");
    g.throughput(Throughput::Bytes(capture.len() as u64));
    g.bench_function(BenchmarkId::new("ours", &name), |b| {
        b.iter(|| {
            kafka_elect_leaders::scan_requests(black_box(&capture))
                .map(|(_, r)| i64::from(r.correlation_id()))
                .sum::<i64>()
        })
    });
    let mut out = vec![0u8; capture.len()];
    g.bench_function(BenchmarkId::new("memcpy", &name), |b| {
        b.iter(|| copy(&capture, &mut out))
    });
    g.finish();
}

/// Modest times, so the whole run takes a few minutes on two cores; the command line
/// (`--warm-up-time`, `--measurement-time`, `--sample-size`, `--quick`) overrides them.
fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench_parse, bench_encode, bench_stream
}
criterion_main!(benches);
