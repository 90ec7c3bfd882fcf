//! Known answers: the two reference frames byte for byte, then every corpus frame with every
//! field asserted. Expected values are transcribed from the annotated hex sources in
//! `corpus/src/` and from `shared/reference/ElectLeaders.txt`, never from the parser.

mod common;

use common::{hex, hex_source, load, load_corpus, walk_request, walk_response, Kind};
use kafka_elect_leaders::{
    parse_request, parse_response, request_header_version, response_header_version,
    ElectLeadersRequest, ElectLeadersResponse, ElectionType, ErrorCode, TaggedFields, API_KEY,
};

/// The 29-byte reference request (ElectLeadersRequest v2, request header v2).
const REQUEST_V2_MIN: &str =
    "00000019 002b 0002 00000000 0000 00 | 00 02 01 02 00000000 00 00000000 00";
/// The 28-byte reference response (ElectLeadersResponse v2, response header v1).
const RESPONSE_V2_MIN: &str =
    "00000018 00000000 00 | 00000000 0000 02 01 02 00000000 0000 01 00 00 00";

// ---------------------------------------------------------------------------------------
// The reference frames

#[test]
fn reference_request_v2_byte_for_byte() {
    let frame = hex(REQUEST_V2_MIN);
    assert_eq!(frame.len(), 29);
    assert_eq!(load("request-v2-min.bin"), frame);

    let request = parse_request(&frame).expect("reference request parses");
    assert_eq!(request.frame(), &frame[..]);
    assert_eq!(request.size(), 25);

    let header = request.header();
    assert_eq!(header.api_key(), 43);
    assert_eq!(header.api_version(), 2);
    assert_eq!(header.header_version(), 2);
    assert_eq!(header.correlation_id(), 0);
    assert_eq!(header.client_id(), Some(&b""[..]));
    assert_eq!(header.client_id_str(), Ok(Some("")));
    assert!(header.tagged_fields().is_empty());
    assert_eq!(header.tagged_fields().range(), 14..15);
    assert_eq!(header.range(), 4..15);
    assert_eq!(request.version(), 2);
    assert_eq!(request.correlation_id(), 0);

    assert_eq!(request.body_range(), 15..29);
    assert_eq!(request.election_type(), ElectionType::PREFERRED);
    let topics = request.topic_partitions().expect("not null");
    assert_eq!(topics.len(), 1);
    assert_eq!(topics.range(), 16..24);
    let entry = topics.first().expect("one entry");
    assert_eq!(entry.range(), 17..24);
    assert_eq!(entry.topic(), b"");
    assert_eq!(entry.topic_str(), Ok(""));
    let partitions = entry.partitions();
    assert_eq!(partitions.range(), 18..23);
    assert_eq!(partitions.len(), 1);
    assert_eq!(partitions.get(0), Some(0));
    assert_eq!(partitions.get(1), None);
    assert_eq!(partitions.as_bytes(), &[0, 0, 0, 0]);
    assert!(entry.tagged_fields().is_empty());
    assert_eq!(entry.tagged_fields().range(), 23..24);
    assert_eq!(topics.iter().count(), 1);

    assert_eq!(request.timeout_ms(), 0);
    assert!(request.tagged_fields().is_empty());
    assert_eq!(request.tagged_fields().range(), 28..29);
}

#[test]
fn reference_response_v2_byte_for_byte() {
    let frame = hex(RESPONSE_V2_MIN);
    assert_eq!(frame.len(), 28);
    assert_eq!(load("response-v2-min.bin"), frame);

    let response = parse_response(&frame, 2).expect("reference response parses");
    assert_eq!(response.frame(), &frame[..]);
    assert_eq!(response.size(), 24);
    assert_eq!(response.version(), 2);

    let header = response.header();
    assert_eq!(header.correlation_id(), 0);
    assert_eq!(header.range(), 4..9);
    assert!(header.tagged_fields().is_empty());
    assert_eq!(header.tagged_fields().range(), 8..9);
    assert_eq!(response.correlation_id(), 0);

    assert_eq!(response.body_range(), 9..28);
    assert_eq!(response.throttle_time_ms(), 0);
    assert_eq!(response.error_code(), ErrorCode::NONE);
    let results = response.replica_election_results();
    assert_eq!(results.len(), 1);
    assert_eq!(results.range(), 15..27);
    let result = results.first().expect("one result");
    assert_eq!(result.range(), 16..27);
    assert_eq!(result.topic(), b"");
    let partitions = result.partition_result();
    assert_eq!(partitions.len(), 1);
    assert_eq!(partitions.range(), 17..26);
    let partition = partitions.first().expect("one partition result");
    assert_eq!(partition.range(), 18..26);
    assert_eq!(partition.partition_id(), 0);
    assert_eq!(partition.error_code(), ErrorCode::NONE);
    assert_eq!(partition.error_code().name(), Some("NONE"));
    // Empty, not null: compact length 1.
    assert_eq!(partition.error_message(), Some(&b""[..]));
    assert_eq!(partition.error_message_str(), Ok(Some("")));
    assert!(partition.tagged_fields().is_empty());
    assert_eq!(partition.tagged_fields().range(), 25..26);
    assert!(result.tagged_fields().is_empty());
    assert_eq!(result.tagged_fields().range(), 26..27);
    assert!(response.tagged_fields().is_empty());
    assert_eq!(response.tagged_fields().range(), 27..28);
}

#[test]
fn corpus_binaries_equal_their_annotated_sources() {
    // The expectations below are read from corpus/src/*.hex; make sure the .bin files are
    // exactly those sources, so the expectations are about the bytes under test.
    let corpus = load_corpus();
    for frame in &corpus {
        let stem = frame.name.strip_suffix(".bin").expect(".bin");
        let path = common::corpus_dir().join("src").join(format!("{stem}.hex"));
        let source = std::fs::read_to_string(&path).expect("every .bin has a .hex source");
        assert_eq!(hex_source(&source), frame.bytes, "{}", frame.name);
    }
}

#[test]
fn corpus_names_say_what_each_file_is() {
    let corpus = load_corpus();
    let names: Vec<&str> = corpus.iter().map(|f| f.name.as_str()).collect();
    for expected in [
        "request-v0-null-topics.bin",
        "request-v0.bin",
        "request-v1-empty-topics.bin",
        "request-v1-unclean.bin",
        "request-v2-empty-topics.bin",
        "request-v2-min.bin",
        "request-v2-multi.bin",
        "request-v2-non-ascii.bin",
        "request-v2-null-topics.bin",
        "request-v2-tagged.bin",
        "response-v0-errors.bin",
        "response-v0.bin",
        "response-v1-errors.bin",
        "response-v1.bin",
        "response-v2-empty-results.bin",
        "response-v2-min.bin",
        "response-v2-multi.bin",
        "response-v2-tagged.bin",
    ] {
        assert!(names.contains(&expected), "corpus lacks {expected}");
    }
    assert_eq!(
        common::kind_of("response-v1-errors.bin"),
        Kind::Response { version: 1 }
    );
    assert_eq!(common::kind_of("request-v2-min.bin"), Kind::Request);
    assert_eq!(common::response_version("request-v2-min.bin"), None);
}

// ---------------------------------------------------------------------------------------
// Expectations, as tables

type Tags = &'static [(u32, &'static [u8])];

struct Req {
    version: i16,
    correlation_id: i32,
    client_id: Option<&'static str>,
    header_tags: Tags,
    election_type: i8,
    topics: Option<&'static [Topic]>,
    timeout_ms: i32,
    body_tags: Tags,
}

struct Topic {
    name: &'static str,
    partitions: &'static [i32],
    tags: Tags,
}

struct Resp {
    version: i16,
    correlation_id: i32,
    header_tags: Tags,
    throttle_time_ms: i32,
    error_code: (i16, &'static str),
    results: &'static [Res],
    body_tags: Tags,
}

struct Res {
    topic: &'static str,
    partitions: &'static [Part],
    tags: Tags,
}

struct Part {
    id: i32,
    error: (i16, &'static str),
    message: Option<&'static str>,
    tags: Tags,
}

#[track_caller]
fn assert_tags(what: &str, got: TaggedFields<'_>, expected: Tags) {
    let got: Vec<(u32, &[u8])> = got.iter().map(|f| (f.tag(), f.data())).collect();
    assert_eq!(got, expected, "{what}: tagged fields");
}

#[track_caller]
fn check_request<'a>(file: &str, frame: &'a [u8], want: &Req) -> ElectLeadersRequest<'a> {
    let request = parse_request(frame).unwrap_or_else(|e| panic!("{file}: {e}"));
    assert_eq!(request.size(), frame.len() - 4, "{file}");
    let header = request.header();
    assert_eq!(header.api_key(), API_KEY, "{file}");
    assert_eq!(header.api_version(), want.version, "{file}");
    assert_eq!(request.version(), want.version, "{file}");
    let header_version = if want.version >= 2 { 2 } else { 1 };
    assert_eq!(header.header_version(), header_version, "{file}");
    assert_eq!(request_header_version(want.version), header_version);
    assert_eq!(header.correlation_id(), want.correlation_id, "{file}");
    assert_eq!(request.correlation_id(), want.correlation_id, "{file}");
    assert_eq!(
        header.client_id(),
        want.client_id.map(str::as_bytes),
        "{file}: client id"
    );
    assert_eq!(header.client_id_str(), Ok(want.client_id), "{file}");
    assert_tags(file, header.tagged_fields(), want.header_tags);
    assert_eq!(
        request.election_type(),
        ElectionType(want.election_type),
        "{file}"
    );
    match (request.topic_partitions(), want.topics) {
        (None, None) => {}
        (Some(list), Some(topics)) => {
            assert_eq!(list.len(), topics.len(), "{file}: topic count");
            assert_eq!(list.is_empty(), topics.is_empty(), "{file}");
            assert_eq!(list.iter().count(), topics.len(), "{file}");
            for (i, (entry, topic)) in list.iter().zip(topics).enumerate() {
                assert_eq!(entry.topic(), topic.name.as_bytes(), "{file}: topic {i}");
                assert_eq!(entry.topic_str(), Ok(topic.name), "{file}: topic {i}");
                let partitions = entry.partitions();
                assert_eq!(partitions.len(), topic.partitions.len(), "{file}: {i}");
                assert_eq!(
                    partitions.iter().collect::<Vec<_>>(),
                    topic.partitions,
                    "{file}: partitions of topic {i}"
                );
                let mut backwards = topic.partitions.to_vec();
                backwards.reverse();
                assert_eq!(partitions.iter().rev().collect::<Vec<_>>(), backwards);
                for (j, &p) in topic.partitions.iter().enumerate() {
                    assert_eq!(partitions.get(j), Some(p), "{file}: topic {i} get({j})");
                }
                assert_eq!(partitions.get(topic.partitions.len()), None);
                assert_tags(file, entry.tagged_fields(), topic.tags);
            }
        }
        (got, want) => panic!(
            "{file}: topic list null-ness: got null={}, want null={}",
            got.is_none(),
            want.is_none()
        ),
    }
    assert_eq!(request.timeout_ms(), want.timeout_ms, "{file}");
    assert_tags(file, request.tagged_fields(), want.body_tags);
    walk_request(&request);
    request
}

#[track_caller]
fn check_response<'a>(file: &str, frame: &'a [u8], want: &Resp) -> ElectLeadersResponse<'a> {
    let response = parse_response(frame, want.version).unwrap_or_else(|e| panic!("{file}: {e}"));
    assert_eq!(response.size(), frame.len() - 4, "{file}");
    assert_eq!(response.version(), want.version, "{file}");
    assert_eq!(
        response_header_version(want.version),
        if want.version >= 2 { 1 } else { 0 }
    );
    assert_eq!(response.header().correlation_id(), want.correlation_id);
    assert_eq!(response.correlation_id(), want.correlation_id, "{file}");
    assert_tags(file, response.header().tagged_fields(), want.header_tags);
    assert_eq!(response.throttle_time_ms(), want.throttle_time_ms, "{file}");
    let (code, name) = want.error_code;
    assert_eq!(response.error_code(), ErrorCode(code), "{file}");
    assert_eq!(response.error_code().name(), Some(name), "{file}");
    let results = response.replica_election_results();
    assert_eq!(results.len(), want.results.len(), "{file}: result count");
    assert_eq!(results.iter().count(), want.results.len(), "{file}");
    for (i, (result, res)) in results.iter().zip(want.results).enumerate() {
        assert_eq!(result.topic(), res.topic.as_bytes(), "{file}: result {i}");
        assert_eq!(result.topic_str(), Ok(res.topic), "{file}: result {i}");
        let partitions = result.partition_result();
        assert_eq!(partitions.len(), res.partitions.len(), "{file}: result {i}");
        assert_eq!(partitions.iter().count(), res.partitions.len());
        for (j, (p, part)) in partitions.iter().zip(res.partitions).enumerate() {
            let at = format!("{file}: result {i} partition {j}");
            assert_eq!(p.partition_id(), part.id, "{at}");
            let (code, name) = part.error;
            assert_eq!(p.error_code(), ErrorCode(code), "{at}");
            assert_eq!(p.error_code().0, code, "{at}");
            assert_eq!(p.error_code().name(), Some(name), "{at}");
            assert_eq!(p.error_message(), part.message.map(str::as_bytes), "{at}");
            assert_eq!(p.error_message_str(), Ok(part.message), "{at}");
            assert_tags(&at, p.tagged_fields(), part.tags);
        }
        assert_tags(file, result.tagged_fields(), res.tags);
    }
    assert_tags(file, response.tagged_fields(), want.body_tags);
    walk_response(&response);
    response
}

const NONE: (i16, &str) = (0, "NONE");

// ---------------------------------------------------------------------------------------
// Requests

#[test]
fn request_v2_min_fields() {
    let bytes = load("request-v2-min.bin");
    check_request(
        "request-v2-min.bin",
        &bytes,
        &Req {
            version: 2,
            correlation_id: 0,
            client_id: Some(""),
            header_tags: &[],
            election_type: 0,
            topics: Some(&[Topic {
                name: "",
                partitions: &[0],
                tags: &[],
            }]),
            timeout_ms: 0,
            body_tags: &[],
        },
    );
}

#[test]
fn request_v0() {
    let bytes = load("request-v0.bin");
    let r = check_request(
        "request-v0.bin",
        &bytes,
        &Req {
            version: 0,
            correlation_id: 7,
            client_id: Some("adminclient-1"),
            header_tags: &[],
            election_type: 0, // v0 cannot carry it: PREFERRED
            topics: Some(&[
                Topic {
                    name: "orders",
                    partitions: &[0, 1, 2],
                    tags: &[],
                },
                Topic {
                    name: "payments",
                    partitions: &[5],
                    tags: &[],
                },
            ]),
            timeout_ms: 60000,
            body_tags: &[],
        },
    );
    // Classic layout: no election type, i16 lengths, i32 counts, no tagged fields.
    assert_eq!(r.header().range(), 4..27);
    assert_eq!(r.body_range(), 27..77);
    let topics = r.topic_partitions().unwrap();
    assert_eq!(topics.range(), 27..73);
    let ranges: Vec<_> = topics
        .iter()
        .map(|t| (t.range(), t.partitions().range()))
        .collect();
    assert_eq!(ranges, [(31..55, 39..55), (55..73, 65..73)]);
    assert!(r.header().tagged_fields().range().is_empty());
    assert!(r.tagged_fields().range().is_empty());
}

#[test]
fn request_v0_null_topics() {
    let bytes = load("request-v0-null-topics.bin");
    let r = check_request(
        "request-v0-null-topics.bin",
        &bytes,
        &Req {
            version: 0,
            correlation_id: 8,
            client_id: None,
            header_tags: &[],
            election_type: 0,
            topics: None,
            timeout_ms: 30000,
            body_tags: &[],
        },
    );
    assert_eq!(r.header().range(), 4..14);
    assert_eq!(r.body_range(), 14..22);
}

#[test]
fn request_v1_unclean() {
    let bytes = load("request-v1-unclean.bin");
    let r = check_request(
        "request-v1-unclean.bin",
        &bytes,
        &Req {
            version: 1,
            correlation_id: i32::MAX,
            client_id: Some("admin"),
            header_tags: &[],
            election_type: 1,
            topics: Some(&[Topic {
                name: "events",
                partitions: &[3, 4],
                tags: &[],
            }]),
            timeout_ms: 10000,
            body_tags: &[],
        },
    );
    assert_eq!(r.election_type(), ElectionType::UNCLEAN);
    assert_eq!(r.election_type().name(), Some("UNCLEAN"));
}

#[test]
fn request_v1_empty_topics() {
    let bytes = load("request-v1-empty-topics.bin");
    let r = check_request(
        "request-v1-empty-topics.bin",
        &bytes,
        &Req {
            version: 1,
            correlation_id: 9,
            client_id: Some(""), // empty, not null
            header_tags: &[],
            election_type: 0,
            topics: Some(&[]), // empty, not null
            timeout_ms: 60000,
            body_tags: &[],
        },
    );
    assert_eq!(r.election_type().name(), Some("PREFERRED"));
    let topics = r.topic_partitions().unwrap();
    assert!(topics.is_empty());
    assert_eq!(topics.range(), 15..19);
    assert_eq!(topics.first(), None);
}

#[test]
fn request_v2_multi() {
    const LONG: &str = concat!(
        "this-topic-name-",
        "is-127-bytes-lon",
        "g-so-its-compact",
        "-length-prefix-l",
        "en-plus-one-128-",
        "needs-a-two-byte",
        "-uvarint-80-01.x",
        "xxxxxxxxxxxxxxx",
    );
    assert_eq!(LONG.len(), 127);
    let bytes = load("request-v2-multi.bin");
    let r = check_request(
        "request-v2-multi.bin",
        &bytes,
        &Req {
            version: 2,
            correlation_id: 16,
            client_id: Some("adminclient-1"),
            header_tags: &[],
            election_type: 0,
            topics: Some(&[
                Topic {
                    name: "orders",
                    partitions: &[0, 1, 2, 3],
                    tags: &[],
                },
                Topic {
                    name: "empty-topic",
                    partitions: &[],
                    tags: &[],
                },
                Topic {
                    name: "odd-ids",
                    partitions: &[-1, i32::MIN, 7],
                    tags: &[],
                },
                Topic {
                    name: "payments",
                    partitions: &[5],
                    tags: &[],
                },
                Topic {
                    name: LONG,
                    partitions: &[0],
                    tags: &[],
                },
            ]),
            timeout_ms: 60000,
            body_tags: &[],
        },
    );
    assert_eq!(r.header().range(), 4..28);
    assert_eq!(r.body_range(), 28..246);
    let topics = r.topic_partitions().unwrap();
    assert_eq!(topics.range(), 29..241);
    let ranges: Vec<_> = topics
        .iter()
        .map(|t| (t.range(), t.partitions().range()))
        .collect();
    assert_eq!(
        ranges,
        [
            (30..55, 37..54),
            (55..69, 67..68),
            (69..91, 77..90),
            (91..106, 100..105),
            // Two-byte compact length 80 01 at 106..108, the name at 108..235.
            (106..241, 235..240),
        ]
    );
    let empty = topics.iter().nth(1).unwrap().partitions();
    assert!(empty.is_empty());
    assert_eq!(empty.iter().next(), None);
    assert_eq!(empty.iter().next_back(), None);
    assert_eq!(empty.get(0), None);
    assert_eq!(r.tagged_fields().range(), 245..246);
}

#[test]
fn request_v2_null_topics() {
    let bytes = load("request-v2-null-topics.bin");
    let r = check_request(
        "request-v2-null-topics.bin",
        &bytes,
        &Req {
            version: 2,
            correlation_id: 18,
            client_id: None, // i16 -1 even in header v2
            header_tags: &[],
            election_type: 0,
            topics: None,
            timeout_ms: 60000,
            body_tags: &[],
        },
    );
    assert_eq!(r.header().range(), 4..15);
}

#[test]
fn request_v2_empty_topics() {
    let bytes = load("request-v2-empty-topics.bin");
    let r = check_request(
        "request-v2-empty-topics.bin",
        &bytes,
        &Req {
            version: 2,
            correlation_id: 17,
            client_id: Some("admin"),
            header_tags: &[],
            election_type: 1,
            topics: Some(&[]),
            timeout_ms: 5000,
            body_tags: &[],
        },
    );
    assert_eq!(r.topic_partitions().unwrap().range(), 21..22);
}

#[test]
fn request_v2_non_ascii() {
    let bytes = load("request-v2-non-ascii.bin");
    let r = check_request(
        "request-v2-non-ascii.bin",
        &bytes,
        &Req {
            version: 2,
            correlation_id: 19,
            client_id: Some("管理客户端"),
            header_tags: &[],
            election_type: 0,
            topics: Some(&[
                Topic {
                    name: "trädgård",
                    partitions: &[0],
                    tags: &[],
                },
                Topic {
                    name: "主题",
                    partitions: &[1, 2],
                    tags: &[],
                },
                Topic {
                    name: "🚀",
                    partitions: &[3],
                    tags: &[],
                },
            ]),
            timeout_ms: 60000,
            body_tags: &[],
        },
    );
    // Lengths count bytes, not characters.
    assert_eq!(r.header().client_id().unwrap().len(), 15);
    let lens: Vec<usize> = r
        .topic_partitions()
        .unwrap()
        .iter()
        .map(|t| t.topic().len())
        .collect();
    assert_eq!(lens, [10, 6, 4]);
    let first = r.topic_partitions().unwrap().first().unwrap();
    assert_eq!(first.topic(), b"tr\xc3\xa4dg\xc3\xa5rd");
}

#[test]
fn request_v2_tagged() {
    let bytes = load("request-v2-tagged.bin");
    let r = check_request(
        "request-v2-tagged.bin",
        &bytes,
        &Req {
            version: 2,
            correlation_id: 20,
            client_id: Some("admin"),
            header_tags: &[(0, &[0xaa, 0xbb, 0xcc]), (7, &[])],
            election_type: 0,
            topics: Some(&[
                Topic {
                    name: "orders",
                    partitions: &[0],
                    tags: &[(2, &[0xde, 0xad, 0xbe, 0xef])],
                },
                Topic {
                    name: "payments",
                    partitions: &[5],
                    tags: &[],
                },
            ]),
            timeout_ms: 60000,
            body_tags: &[(1, &[0xca, 0xfe]), (300, &[0xff])],
        },
    );
    let header_tags = r.header().tagged_fields();
    assert_eq!(r.header().range(), 4..27);
    assert_eq!(header_tags.range(), 19..27);
    let ranges: Vec<_> = header_tags.iter().map(|f| f.range()).collect();
    assert_eq!(ranges, [20..25, 25..27]);
    let topics = r.topic_partitions().unwrap();
    assert_eq!(topics.range(), 28..63);
    let first = topics.first().unwrap();
    assert_eq!(first.range(), 29..48);
    assert_eq!(first.partitions().range(), 36..41);
    assert_eq!(first.tagged_fields().range(), 41..48);
    assert_eq!(first.tagged_fields().first().unwrap().range(), 42..48);
    assert_eq!(topics.iter().nth(1).unwrap().range(), 48..63);
    let body_tags = r.tagged_fields();
    assert_eq!(body_tags.range(), 67..76);
    let ranges: Vec<_> = body_tags.iter().map(|f| f.range()).collect();
    // Tag 300 is the two-byte uvarint ac 02.
    assert_eq!(ranges, [68..72, 72..76]);
    assert_eq!(body_tags.as_bytes(), &hex("01 02 cafe ac02 01 ff")[..]);
}

// ---------------------------------------------------------------------------------------
// Responses

#[test]
fn response_v2_min_fields() {
    let bytes = load("response-v2-min.bin");
    check_response(
        "response-v2-min.bin",
        &bytes,
        &Resp {
            version: 2,
            correlation_id: 0,
            header_tags: &[],
            throttle_time_ms: 0,
            error_code: NONE,
            results: &[Res {
                topic: "",
                partitions: &[Part {
                    id: 0,
                    error: NONE,
                    message: Some(""),
                    tags: &[],
                }],
                tags: &[],
            }],
            body_tags: &[],
        },
    );
}

/// A partition elected without error: code 0, null message.
const fn null_ok(id: i32) -> Part {
    Part {
        id,
        error: NONE,
        message: None,
        tags: &[],
    }
}

#[test]
fn response_v0() {
    const ORDERS: &[Part] = &[null_ok(0), null_ok(1), null_ok(2)];
    const PAYMENTS: &[Part] = &[null_ok(5)];
    let bytes = load("response-v0.bin");
    let r = check_response(
        "response-v0.bin",
        &bytes,
        &Resp {
            version: 0,
            correlation_id: 7,
            header_tags: &[],
            throttle_time_ms: 0,
            error_code: NONE, // v0 cannot carry it
            results: &[
                Res {
                    topic: "orders",
                    partitions: ORDERS,
                    tags: &[],
                },
                Res {
                    topic: "payments",
                    partitions: PAYMENTS,
                    tags: &[],
                },
            ],
            body_tags: &[],
        },
    );
    assert_eq!(r.header().range(), 4..8);
    assert_eq!(r.body_range(), 8..74);
    let results = r.replica_election_results();
    assert_eq!(results.range(), 12..74);
    let orders = results.first().unwrap();
    assert_eq!(orders.range(), 16..52);
    assert_eq!(orders.partition_result().range(), 24..52);
    let ranges: Vec<_> = orders
        .partition_result()
        .iter()
        .map(|p| p.range())
        .collect();
    assert_eq!(ranges, [28..36, 36..44, 44..52]);
    assert_eq!(results.iter().nth(1).unwrap().range(), 52..74);
}

#[test]
fn response_v0_errors() {
    let bytes = load("response-v0-errors.bin");
    let r = check_response(
        "response-v0-errors.bin",
        &bytes,
        &Resp {
            version: 0,
            correlation_id: 8,
            header_tags: &[],
            throttle_time_ms: 100,
            error_code: NONE,
            results: &[
                Res {
                    topic: "ghost",
                    partitions: &[Part {
                        id: 0,
                        error: (3, "UNKNOWN_TOPIC_OR_PARTITION"),
                        message: Some("Unknown topic"),
                        tags: &[],
                    }],
                    tags: &[],
                },
                Res {
                    topic: "orders",
                    partitions: &[
                        Part {
                            id: 1,
                            error: (84, "ELECTION_NOT_NEEDED"),
                            message: None,
                            tags: &[],
                        },
                        Part {
                            id: 2,
                            error: (80, "PREFERRED_LEADER_NOT_AVAILABLE"),
                            message: Some("Preferred replica 3 is not alive"),
                            tags: &[],
                        },
                    ],
                    tags: &[],
                },
            ],
            body_tags: &[],
        },
    );
    let codes: Vec<ErrorCode> = r
        .replica_election_results()
        .iter()
        .flat_map(|t| t.partition_result())
        .map(|p| p.error_code())
        .collect();
    assert_eq!(
        codes,
        [
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            ErrorCode::ELECTION_NOT_NEEDED,
            ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE
        ]
    );
}

#[test]
fn response_v1() {
    let bytes = load("response-v1.bin");
    check_response(
        "response-v1.bin",
        &bytes,
        &Resp {
            version: 1,
            correlation_id: i32::MAX,
            header_tags: &[],
            throttle_time_ms: 500,
            error_code: NONE,
            results: &[Res {
                topic: "events",
                partitions: &[
                    Part {
                        id: 3,
                        error: NONE,
                        message: None,
                        tags: &[],
                    },
                    Part {
                        id: 4,
                        error: (83, "ELIGIBLE_LEADERS_NOT_AVAILABLE"),
                        message: Some("No eligible leader for events-4"),
                        tags: &[],
                    },
                ],
                tags: &[],
            }],
            body_tags: &[],
        },
    );
}

#[test]
fn response_v1_errors() {
    let bytes = load("response-v1-errors.bin");
    let r = check_response(
        "response-v1-errors.bin",
        &bytes,
        &Resp {
            version: 1,
            correlation_id: 9,
            header_tags: &[],
            throttle_time_ms: 0,
            error_code: (31, "CLUSTER_AUTHORIZATION_FAILED"),
            results: &[],
            body_tags: &[],
        },
    );
    assert_eq!(r.error_code(), ErrorCode::CLUSTER_AUTHORIZATION_FAILED);
    assert_eq!(r.replica_election_results().range(), 14..18);
}

#[test]
fn response_v2_empty_results() {
    let bytes = load("response-v2-empty-results.bin");
    check_response(
        "response-v2-empty-results.bin",
        &bytes,
        &Resp {
            version: 2,
            correlation_id: 17,
            header_tags: &[],
            throttle_time_ms: 0,
            error_code: NONE,
            results: &[],
            body_tags: &[],
        },
    );
}

#[test]
fn response_v2_multi() {
    let bytes = load("response-v2-multi.bin");
    let r = check_response(
        "response-v2-multi.bin",
        &bytes,
        &Resp {
            version: 2,
            correlation_id: 16,
            header_tags: &[],
            throttle_time_ms: 10,
            error_code: NONE,
            results: &[
                Res {
                    topic: "orders",
                    partitions: &[
                        Part {
                            id: 0,
                            error: NONE,
                            message: None,
                            tags: &[],
                        },
                        Part {
                            id: 1,
                            error: (84, "ELECTION_NOT_NEEDED"),
                            message: None,
                            tags: &[],
                        },
                        Part {
                            id: 2,
                            error: NONE,
                            message: Some(""), // empty, not null
                            tags: &[],
                        },
                    ],
                    tags: &[],
                },
                Res {
                    topic: "trädgård",
                    partitions: &[Part {
                        id: 0,
                        error: (80, "PREFERRED_LEADER_NOT_AVAILABLE"),
                        message: Some("Ledaren är inte tillgänglig"),
                        tags: &[],
                    }],
                    tags: &[],
                },
                Res {
                    topic: "odd-ids",
                    partitions: &[Part {
                        id: -1,
                        error: (3, "UNKNOWN_TOPIC_OR_PARTITION"),
                        message: Some("Unknown topic or partition"),
                        tags: &[],
                    }],
                    tags: &[],
                },
                Res {
                    topic: "empty-topic",
                    partitions: &[],
                    tags: &[],
                },
            ],
            body_tags: &[],
        },
    );
    // The README's example: three partition results carry an error.
    let errors = r
        .replica_election_results()
        .iter()
        .flat_map(|t| t.partition_result())
        .filter(|p| p.error_code() != ErrorCode::NONE)
        .count();
    assert_eq!(errors, 3);
    let message = r
        .replica_election_results()
        .iter()
        .nth(1)
        .unwrap()
        .partition_result()
        .first()
        .unwrap()
        .error_message()
        .unwrap();
    assert_eq!(message.len(), 29, "bytes, not characters");
}

#[test]
fn response_v2_tagged() {
    let bytes = load("response-v2-tagged.bin");
    let r = check_response(
        "response-v2-tagged.bin",
        &bytes,
        &Resp {
            version: 2,
            correlation_id: 20,
            header_tags: &[(3, &[0x2a])],
            throttle_time_ms: 0,
            error_code: NONE,
            results: &[Res {
                topic: "orders",
                partitions: &[
                    Part {
                        id: 0,
                        error: NONE,
                        message: None,
                        tags: &[(5, &[1, 2, 3])],
                    },
                    Part {
                        id: 1,
                        error: NONE,
                        message: None,
                        tags: &[],
                    },
                ],
                tags: &[(4, &[0xbe, 0xef])],
            }],
            body_tags: &[(0, &[]), (9, &[0xff])],
        },
    );
    assert_eq!(r.header().range(), 4..12);
    assert_eq!(r.header().tagged_fields().range(), 8..12);
    assert_eq!(r.header().tagged_fields().first().unwrap().range(), 9..12);
    let results = r.replica_election_results();
    assert_eq!(results.range(), 18..53);
    let result = results.first().unwrap();
    assert_eq!(result.range(), 19..53);
    assert_eq!(result.partition_result().range(), 26..48);
    let ranges: Vec<_> = result
        .partition_result()
        .iter()
        .map(|p| p.range())
        .collect();
    assert_eq!(ranges, [27..40, 40..48]);
    let p0 = result.partition_result().first().unwrap();
    assert_eq!(p0.tagged_fields().range(), 34..40);
    assert_eq!(p0.tagged_fields().first().unwrap().range(), 35..40);
    assert_eq!(result.tagged_fields().range(), 48..53);
    assert_eq!(result.tagged_fields().first().unwrap().range(), 49..53);
    assert_eq!(r.tagged_fields().range(), 53..59);
    let ranges: Vec<_> = r.tagged_fields().iter().map(|f| f.range()).collect();
    assert_eq!(ranges, [54..56, 56..59]);
}

#[test]
fn pairs_share_correlation_ids() {
    // The README pairs each response with the request it answers.
    for (request_file, response_file, version) in [
        ("request-v0.bin", "response-v0.bin", 0),
        ("request-v0-null-topics.bin", "response-v0-errors.bin", 0),
        ("request-v1-empty-topics.bin", "response-v1-errors.bin", 1),
        ("request-v1-unclean.bin", "response-v1.bin", 1),
        (
            "request-v2-empty-topics.bin",
            "response-v2-empty-results.bin",
            2,
        ),
        ("request-v2-tagged.bin", "response-v2-tagged.bin", 2),
        ("request-v2-min.bin", "response-v2-min.bin", 2),
    ] {
        let request_bytes = load(request_file);
        let response_bytes = load(response_file);
        let request = parse_request(&request_bytes).unwrap();
        let response = parse_response(&response_bytes, request.version()).unwrap();
        assert_eq!(request.version(), version, "{request_file}");
        assert_eq!(request.correlation_id(), response.correlation_id());
    }
}

// ---------------------------------------------------------------------------------------
// Open newtypes: unknown values pass through

#[test]
fn unknown_election_types_pass_through() {
    for (byte, value) in [(0x02, 2), (0xff, -1), (0x7f, 127), (0x80, -128)] {
        // v1: header v1, null client id, ElectionType, empty topics, TimeoutMs 30000.
        let frame = hex(&format!(
            "00000013 002b 0001 00000001 ffff | {byte:02x} 00000000 00007530"
        ));
        let request = parse_request(&frame).unwrap();
        assert_eq!(request.election_type(), ElectionType(value));
        assert_eq!(i8::from(request.election_type()), value);
        assert_eq!(request.election_type().name(), None);
        assert_eq!(request.topic_partitions().map(|t| t.len()), Some(0));
        assert_eq!(request.timeout_ms(), 30000);
        // v2 as well.
        let frame = hex(&format!(
            "00000012 002b 0002 00000001 ffff 00 | {byte:02x} 01 00007530 00"
        ));
        let request = parse_request(&frame).unwrap();
        assert_eq!(request.election_type(), ElectionType(value));
    }
}

/// A partition result's code, the code's name, and the message.
type Outcome<'a> = (i16, Option<&'a str>, Option<&'a [u8]>);

#[test]
fn unknown_error_codes_pass_through() {
    // v1: top-level 999, one topic "t" with one partition result carrying -32768 and 999.
    let frame = hex(concat!(
        "00000027 00000005 | 00000000 03e7 00000001",
        " 0001 74 00000002",
        "   00000000 8000 ffff",
        "   00000001 03e7 0002 6869",
    ));
    let response = parse_response(&frame, 1).unwrap();
    assert_eq!(response.error_code(), ErrorCode(999));
    assert_eq!(response.error_code().name(), None);
    let codes: Vec<Outcome<'_>> = response
        .replica_election_results()
        .first()
        .unwrap()
        .partition_result()
        .iter()
        .map(|p| (p.error_code().0, p.error_code().name(), p.error_message()))
        .collect();
    assert_eq!(codes, [(-32768, None, None), (999, None, Some(&b"hi"[..]))]);
    // v2, the same in compact form.
    let frame = hex("00000019 00000005 00 | 00000000 03e7 02 02 74 02 00000000 03e7 00 00 00 00");
    let response = parse_response(&frame, 2).unwrap();
    assert_eq!(response.error_code(), ErrorCode(999));
    let p = response
        .replica_election_results()
        .first()
        .unwrap()
        .partition_result()
        .first()
        .unwrap();
    assert_eq!(
        (p.error_code(), p.error_code().name()),
        (ErrorCode(999), None)
    );
}

// ---------------------------------------------------------------------------------------
// The walkers see everything

#[test]
fn walkers_tell_every_corpus_frame_apart() {
    let corpus = load_corpus();
    let mut sums = Vec::new();
    for frame in &corpus {
        let sum = match frame.kind() {
            Kind::Request => walk_request(&parse_request(&frame.bytes).unwrap()),
            Kind::Response { version } => {
                walk_response(&parse_response(&frame.bytes, version).unwrap())
            }
        };
        assert!(!sums.contains(&sum), "{}: checksum collides", frame.name);
        sums.push(sum);
    }
    // And a one-byte change in a partition id changes the sum.
    let a = load("request-v0.bin");
    let b = common::patch(&a, 54, &[9]);
    assert_ne!(
        walk_request(&parse_request(&a).unwrap()),
        walk_request(&parse_request(&b).unwrap())
    );
}
