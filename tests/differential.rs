//! Differential tests against `kafka-protocol` 0.18, a second, independent codec.
//!
//! For thousands of pseudo-random messages of every version and kind, built from plain
//! owned values:
//! 1. our writer and kafka-protocol's produce the same frame, byte for byte;
//! 2. kafka-protocol decodes our frame to the values we built, consuming every byte;
//! 3. our parser reads kafka-protocol's frame back to the values we built;
//! 4. `encoded_len` is exactly what `encode` writes, and nothing past it is touched.
//!
//! Then every corpus frame goes through both codecs, and a few messages that Kafka's writer
//! refuses are checked to be refused by both.
//!
//! Known, deliberate differences (DESIGN.md) are kept out of the generated inputs: tagged
//! fields are generated unique and ascending (kafka-protocol sorts them into a `BTreeMap`),
//! names are valid UTF-8 (kafka-protocol needs it), tags fit in an `i32` (kafka-protocol's
//! key type). Frames are always exact, so trailing bytes and over-long varints do not arise.
//!
//! The generator is a fixed-seed splitmix64; every assertion names the kind, version, case
//! index and case seed, so a failure reproduces alone.

use std::collections::BTreeMap;

use bytes::{Bytes, BytesMut};
use kafka_elect_leaders::VERSIONS;
use kafka_elect_leaders::{
    parse_request, parse_response, ElectLeadersRequestData, ElectLeadersResponseData, ElectionType,
    EncodeErrorKind, EncodeRequest, EncodeResponse, ErrorCode, TopicPartitionsData, API_KEY,
    MAX_STRING_LEN,
};
use kafka_protocol::messages::elect_leaders_request::TopicPartitions as KpTopicPartitions;
use kafka_protocol::messages::elect_leaders_response::{
    PartitionResult as KpPartitionResult, ReplicaElectionResult as KpReplicaElectionResult,
};
use kafka_protocol::messages::{
    ElectLeadersRequest as KpRequest, ElectLeadersResponse as KpResponse,
    RequestHeader as KpRequestHeader, ResponseHeader as KpResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};

mod gen;

use gen::*;

// ---------------------------------------------------------------------------------------
// kafka-protocol's side

fn kp_tags(tags: &Tags) -> BTreeMap<i32, Bytes> {
    tags.iter()
        .map(|(tag, data)| {
            let tag = i32::try_from(*tag).expect("generated tags fit an i32");
            (tag, Bytes::copy_from_slice(data))
        })
        .collect()
}

fn kp_str(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

fn tags_from_kp(tags: &BTreeMap<i32, Bytes>) -> Tags {
    tags.iter()
        .map(|(tag, data)| (*tag as u32, data.to_vec()))
        .collect()
}

fn kp_request(g: &GenRequest) -> (KpRequestHeader, KpRequest) {
    let mut header = KpRequestHeader::default();
    header.request_api_key = API_KEY;
    header.request_api_version = g.version;
    header.correlation_id = g.correlation_id;
    header.client_id = g.client_id.as_deref().map(kp_str);
    header.unknown_tagged_fields = kp_tags(&g.header_tags);
    let mut body = KpRequest::default();
    body.election_type = g.election_type;
    body.topic_partitions = g.topics.as_ref().map(|topics| {
        topics
            .iter()
            .map(|t| {
                let mut entry = KpTopicPartitions::default();
                entry.topic = TopicName(kp_str(&t.name));
                entry.partitions = t.partitions.clone();
                entry.unknown_tagged_fields = kp_tags(&t.tags);
                entry
            })
            .collect()
    });
    body.timeout_ms = g.timeout_ms;
    body.unknown_tagged_fields = kp_tags(&g.tags);
    (header, body)
}

fn kp_response(g: &GenResponse) -> (KpResponseHeader, KpResponse) {
    let mut header = KpResponseHeader::default();
    header.correlation_id = g.correlation_id;
    header.unknown_tagged_fields = kp_tags(&g.header_tags);
    let mut body = KpResponse::default();
    body.throttle_time_ms = g.throttle_time_ms;
    body.error_code = g.error_code;
    body.replica_election_results = g
        .results
        .iter()
        .map(|r| {
            let mut result = KpReplicaElectionResult::default();
            result.topic = TopicName(kp_str(&r.topic));
            result.partition_result = r
                .partitions
                .iter()
                .map(|p| {
                    let mut partition = KpPartitionResult::default();
                    partition.partition_id = p.partition_id;
                    partition.error_code = p.error_code;
                    partition.error_message = p.error_message.as_deref().map(kp_str);
                    partition.unknown_tagged_fields = kp_tags(&p.tags);
                    partition
                })
                .collect();
            result.unknown_tagged_fields = kp_tags(&r.tags);
            result
        })
        .collect();
    body.unknown_tagged_fields = kp_tags(&g.tags);
    (header, body)
}

fn request_model_from_kp(header: &KpRequestHeader, body: &KpRequest) -> GenRequest {
    GenRequest {
        version: header.request_api_version,
        correlation_id: header.correlation_id,
        client_id: header.client_id.as_ref().map(|c| c.as_str().to_owned()),
        header_tags: tags_from_kp(&header.unknown_tagged_fields),
        election_type: body.election_type,
        topics: body.topic_partitions.as_ref().map(|topics| {
            topics
                .iter()
                .map(|t| GenTopic {
                    name: t.topic.as_str().to_owned(),
                    partitions: t.partitions.clone(),
                    tags: tags_from_kp(&t.unknown_tagged_fields),
                })
                .collect()
        }),
        timeout_ms: body.timeout_ms,
        tags: tags_from_kp(&body.unknown_tagged_fields),
    }
}

fn response_model_from_kp(
    version: i16,
    header: &KpResponseHeader,
    body: &KpResponse,
) -> GenResponse {
    GenResponse {
        version,
        correlation_id: header.correlation_id,
        header_tags: tags_from_kp(&header.unknown_tagged_fields),
        throttle_time_ms: body.throttle_time_ms,
        error_code: body.error_code,
        results: body
            .replica_election_results
            .iter()
            .map(|r| GenResult {
                topic: r.topic.as_str().to_owned(),
                partitions: r
                    .partition_result
                    .iter()
                    .map(|p| GenPartition {
                        partition_id: p.partition_id,
                        error_code: p.error_code,
                        error_message: p.error_message.as_ref().map(|m| m.as_str().to_owned()),
                        tags: tags_from_kp(&p.unknown_tagged_fields),
                    })
                    .collect(),
                tags: tags_from_kp(&r.unknown_tagged_fields),
            })
            .collect(),
        tags: tags_from_kp(&body.unknown_tagged_fields),
    }
}

/// Prefixes `message` (header and body, as kafka-protocol wrote them) with its int32 size.
fn with_size_prefix(message: BytesMut) -> Vec<u8> {
    let size = i32::try_from(message.len()).expect("frame fits an int32");
    let mut frame = Vec::with_capacity(4 + message.len());
    frame.extend_from_slice(&size.to_be_bytes());
    frame.extend_from_slice(&message);
    frame
}

fn kp_request_frame(
    header: &KpRequestHeader,
    body: &KpRequest,
    version: i16,
    ctx: &str,
) -> Vec<u8> {
    let mut buf = BytesMut::new();
    header
        .encode(&mut buf, KpRequest::header_version(version))
        .unwrap_or_else(|e| panic!("{ctx}: kafka-protocol refused the request header: {e}"));
    body.encode(&mut buf, version)
        .unwrap_or_else(|e| panic!("{ctx}: kafka-protocol refused the request body: {e}"));
    with_size_prefix(buf)
}

fn kp_response_frame(
    header: &KpResponseHeader,
    body: &KpResponse,
    version: i16,
    ctx: &str,
) -> Vec<u8> {
    let mut buf = BytesMut::new();
    header
        .encode(&mut buf, KpResponse::header_version(version))
        .unwrap_or_else(|e| panic!("{ctx}: kafka-protocol refused the response header: {e}"));
    body.encode(&mut buf, version)
        .unwrap_or_else(|e| panic!("{ctx}: kafka-protocol refused the response body: {e}"));
    with_size_prefix(buf)
}

/// kafka-protocol's decoding of a request frame (after its size prefix), checking that every
/// byte is consumed.
fn kp_decode_request(frame: &[u8], ctx: &str) -> (KpRequestHeader, KpRequest) {
    assert!(frame.len() >= 8, "{ctx}: frame too short to hold a version");
    let version = i16::from_be_bytes([frame[6], frame[7]]);
    let mut rest = Bytes::copy_from_slice(&frame[4..]);
    let header = KpRequestHeader::decode(&mut rest, KpRequest::header_version(version))
        .unwrap_or_else(|e| panic!("{ctx}: kafka-protocol cannot decode the header: {e}"));
    let body = KpRequest::decode(&mut rest, version)
        .unwrap_or_else(|e| panic!("{ctx}: kafka-protocol cannot decode the body: {e}"));
    assert!(
        rest.is_empty(),
        "{ctx}: kafka-protocol left {} bytes over",
        rest.len()
    );
    (header, body)
}

fn kp_decode_response(frame: &[u8], version: i16, ctx: &str) -> (KpResponseHeader, KpResponse) {
    let mut rest = Bytes::copy_from_slice(&frame[4..]);
    let header = KpResponseHeader::decode(&mut rest, KpResponse::header_version(version))
        .unwrap_or_else(|e| panic!("{ctx}: kafka-protocol cannot decode the header: {e}"));
    let body = KpResponse::decode(&mut rest, version)
        .unwrap_or_else(|e| panic!("{ctx}: kafka-protocol cannot decode the body: {e}"));
    assert!(
        rest.is_empty(),
        "{ctx}: kafka-protocol left {} bytes over",
        rest.len()
    );
    (header, body)
}

// ---------------------------------------------------------------------------------------
// The differential tests

fn check_request(g: &GenRequest, ctx: &str) {
    let v = g.version;
    // 4. (inside) encoded_len == bytes written.
    let ours = encode_ours_request(g, ctx);
    let (kp_header, kp_body) = kp_request(g);
    let theirs = kp_request_frame(&kp_header, &kp_body, v, ctx);
    // 1. The same bytes.
    assert_same_bytes(&ours, &theirs, ctx);
    // 2. kafka-protocol reads our frame to the values we built.
    let (header, body) = kp_decode_request(&ours, ctx);
    assert_eq!(
        header, kp_header,
        "{ctx}: kafka-protocol's header of our frame"
    );
    assert_eq!(body, kp_body, "{ctx}: kafka-protocol's body of our frame");
    // 3. We read kafka-protocol's frame to the values we built.
    let parsed =
        parse_request(&theirs).unwrap_or_else(|e| panic!("{ctx}: we cannot parse theirs: {e}"));
    assert_eq!(parsed.version(), v, "{ctx}: version");
    assert_eq!(parsed.frame().len(), theirs.len(), "{ctx}: frame()");
    assert_eq!(
        &request_model(&parsed, ctx),
        g,
        "{ctx}: our view of their frame"
    );
}

fn check_response(g: &GenResponse, ctx: &str) {
    let v = g.version;
    let ours = encode_ours_response(g, ctx);
    let (kp_header, kp_body) = kp_response(g);
    let theirs = kp_response_frame(&kp_header, &kp_body, v, ctx);
    assert_same_bytes(&ours, &theirs, ctx);
    let (header, body) = kp_decode_response(&ours, v, ctx);
    assert_eq!(
        header, kp_header,
        "{ctx}: kafka-protocol's header of our frame"
    );
    assert_eq!(body, kp_body, "{ctx}: kafka-protocol's body of our frame");
    let parsed =
        parse_response(&theirs, v).unwrap_or_else(|e| panic!("{ctx}: we cannot parse theirs: {e}"));
    assert_eq!(parsed.version(), v, "{ctx}: version");
    assert_eq!(parsed.frame().len(), theirs.len(), "{ctx}: frame()");
    assert_eq!(
        &response_model(&parsed, ctx),
        g,
        "{ctx}: our view of their frame"
    );
}

#[test]
fn random_requests_agree_with_kafka_protocol() {
    for version in VERSIONS {
        let mut coverage = Coverage::default();
        for case in 0..CASES {
            let seed = case_seed(0, version, case);
            let ctx = format!("request v{version} case {case} (seed {seed:#018x})");
            let mut rng = Rng::new(seed);
            let g = gen_request(&mut rng, version, case % HUGE_EVERY == HUGE_AT);
            coverage.request(&g);
            check_request(&g, &ctx);
        }
        // The generator did reach what it is meant to reach (`--nocapture` shows how often).
        let c = &coverage;
        eprintln!("requests v{version}: {CASES} cases, {c:?}");
        assert!(
            c.null_list > 0 && c.empty_list > 0 && c.long_list > 0,
            "v{version}: {c:?}"
        );
        assert!(c.null_string > 0 && c.empty_string > 0, "v{version}: {c:?}");
        assert!(c.non_ascii > 0 && c.max_len_string > 0, "v{version}: {c:?}");
        assert!(c.negative > 0, "v{version}: {c:?}");
        assert_eq!(c.odd_election_type > 0, version >= 1, "v{version}: {c:?}");
        assert_eq!(c.tagged > 0, version >= 2, "v{version}: {c:?}");
    }
}

#[test]
fn random_responses_agree_with_kafka_protocol() {
    for version in VERSIONS {
        let mut coverage = Coverage::default();
        for case in 0..CASES {
            let seed = case_seed(1, version, case);
            let ctx = format!("response v{version} case {case} (seed {seed:#018x})");
            let mut rng = Rng::new(seed);
            let g = gen_response(&mut rng, version, case % HUGE_EVERY == HUGE_AT);
            coverage.response(&g);
            check_response(&g, &ctx);
        }
        let c = &coverage;
        eprintln!("responses v{version}: {CASES} cases, {c:?}");
        assert!(c.empty_list > 0 && c.long_list > 0, "v{version}: {c:?}");
        assert!(c.null_string > 0 && c.empty_string > 0, "v{version}: {c:?}");
        assert!(c.non_ascii > 0 && c.max_len_string > 0, "v{version}: {c:?}");
        assert!(c.negative > 0, "v{version}: {c:?}");
        assert_eq!(c.tagged > 0, version >= 2, "v{version}: {c:?}");
    }
}

// ---------------------------------------------------------------------------------------
// The corpus through both codecs

fn corpus() -> Vec<(String, Vec<u8>)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/corpus");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("corpus/ is readable")
        .map(|e| e.expect("corpus/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "bin"))
        .collect();
    files.sort();
    assert!(files.len() >= 18, "corpus went missing: {files:?}");
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_str().unwrap().to_owned();
            let bytes = std::fs::read(&p).unwrap();
            (name, bytes)
        })
        .collect()
}

/// `response-vN-….bin` -> N.
fn response_version(name: &str) -> i16 {
    let rest = name
        .strip_prefix("response-v")
        .unwrap_or_else(|| panic!("{name}: not a response file name"));
    rest[..1]
        .parse()
        .unwrap_or_else(|e| panic!("{name}: no version in the name: {e}"))
}

#[test]
fn corpus_frames_agree_with_kafka_protocol() {
    for (name, frame) in corpus() {
        let ctx = name.as_str();
        let mut out = vec![0u8; frame.len()];
        if name.starts_with("request") {
            // kafka-protocol decodes every byte, and re-encodes the file exactly.
            let (header, body) = kp_decode_request(&frame, ctx);
            let theirs = kp_request_frame(&header, &body, header.request_api_version, ctx);
            assert_same_bytes(
                &theirs,
                &frame,
                &format!("{ctx}: kafka-protocol re-encoding"),
            );
            // We read the same values, and re-encode the same bytes.
            let parsed = parse_request(&frame).unwrap_or_else(|e| panic!("{ctx}: {e}"));
            assert_eq!(
                request_model(&parsed, ctx),
                request_model_from_kp(&header, &body),
                "{ctx}: values"
            );
            let len = parsed
                .encode(parsed.version(), &mut out)
                .unwrap_or_else(|e| panic!("{ctx}: {e}"));
            assert_same_bytes(&out[..len], &theirs, &format!("{ctx}: our re-encoding"));
        } else {
            let v = response_version(&name);
            let (header, body) = kp_decode_response(&frame, v, ctx);
            let theirs = kp_response_frame(&header, &body, v, ctx);
            assert_same_bytes(
                &theirs,
                &frame,
                &format!("{ctx}: kafka-protocol re-encoding"),
            );
            let parsed = parse_response(&frame, v).unwrap_or_else(|e| panic!("{ctx}: {e}"));
            assert_eq!(
                response_model(&parsed, ctx),
                response_model_from_kp(v, &header, &body),
                "{ctx}: values"
            );
            let len = parsed
                .encode(v, &mut out)
                .unwrap_or_else(|e| panic!("{ctx}: {e}"));
            assert_same_bytes(&out[..len], &theirs, &format!("{ctx}: our re-encoding"));
        }
    }
}

// ---------------------------------------------------------------------------------------
// What the writers refuse

/// Values a version cannot carry, and strings over the limit: refused by our writer, as by
/// Apache Kafka's. kafka-protocol refuses the same, except where noted.
#[test]
fn both_writers_refuse_what_kafka_refuses() {
    // ElectionType other than PREFERRED at v0.
    let request = GenRequest {
        version: 0,
        correlation_id: 1,
        client_id: Some("c".into()),
        header_tags: Tags::new(),
        election_type: 1,
        topics: Some(Vec::new()),
        timeout_ms: 0,
        tags: Tags::new(),
    };
    let data = ElectLeadersRequestData {
        election_type: ElectionType::UNCLEAN,
        ..Default::default()
    };
    assert_eq!(
        data.encoded_len(0).map_err(|e| e.kind),
        Err(EncodeErrorKind::NonDefaultValue { version: 0 })
    );
    let (_, body) = kp_request(&request);
    assert!(body.encode(&mut BytesMut::new(), 0).is_err());
    assert!(data.encoded_len(1).is_ok() && body.encode(&mut BytesMut::new(), 1).is_ok());

    // A top-level response ErrorCode at v0.
    let response = GenResponse {
        version: 0,
        correlation_id: 1,
        header_tags: Tags::new(),
        throttle_time_ms: 0,
        error_code: 31,
        results: Vec::new(),
        tags: Tags::new(),
    };
    let data = ElectLeadersResponseData {
        error_code: ErrorCode(31),
        ..Default::default()
    };
    assert_eq!(
        data.encoded_len(0).map_err(|e| e.kind),
        Err(EncodeErrorKind::NonDefaultValue { version: 0 })
    );
    let (_, body) = kp_response(&response);
    assert!(body.encode(&mut BytesMut::new(), 0).is_err());
    assert!(data.encoded_len(1).is_ok() && body.encode(&mut BytesMut::new(), 1).is_ok());

    // Strings: 32767 bytes is fine everywhere, 32768 is refused by us at every version (as
    // Kafka's Java writer does). kafka-protocol refuses it only in the classic encoding (its
    // compact strings have no such limit), so it is compared at v0 and v1 only.
    for len in [MAX_STRING_LEN, MAX_STRING_LEN + 1] {
        let name = "t".repeat(len);
        for version in VERSIONS {
            let ctx = format!("{len}-byte topic at v{version}");
            let topics = [TopicPartitionsData::new(name.as_bytes(), &[0])];
            let data = ElectLeadersRequestData {
                topic_partitions: Some(&topics),
                ..Default::default()
            };
            let ours = data.encoded_len(version);
            let g = GenRequest {
                version,
                topics: Some(vec![GenTopic {
                    name: name.clone(),
                    partitions: vec![0],
                    tags: Tags::new(),
                }]),
                election_type: 0,
                ..request.clone()
            };
            let (_, body) = kp_request(&g);
            let theirs = body.encode(&mut BytesMut::new(), version);
            if len <= MAX_STRING_LEN {
                assert!(ours.is_ok(), "{ctx}: {ours:?}");
                assert!(theirs.is_ok(), "{ctx}");
            } else {
                assert_eq!(
                    ours.map_err(|e| e.kind),
                    Err(EncodeErrorKind::StringTooLong { len }),
                    "{ctx}"
                );
                if version < 2 {
                    assert!(theirs.is_err(), "{ctx}: kafka-protocol wrote it");
                }
            }
            // The client id keeps its int16 length in every header version.
            let data = ElectLeadersRequestData {
                client_id: Some(name.as_bytes()),
                ..Default::default()
            };
            let mut header = KpRequestHeader::default();
            header.client_id = Some(kp_str(&name));
            let theirs = header.encode(&mut BytesMut::new(), KpRequest::header_version(version));
            assert_eq!(
                data.encoded_len(version).is_ok(),
                len <= MAX_STRING_LEN,
                "{ctx}"
            );
            assert_eq!(theirs.is_ok(), len <= MAX_STRING_LEN, "{ctx}: client id");
        }
    }
}
