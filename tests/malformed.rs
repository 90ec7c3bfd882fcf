//! Malformed input, one class at a time. Each case starts from a corpus frame (offsets from
//! its annotated source in `corpus/src/`) or a hex literal, changes one thing, and asserts the
//! exact kind, field and offset of the error.
//!
//! Offsets used below, from the sources:
//!
//! ```text
//! request-v0       size 0..4, header 4..27 (client id length 12, data 14..27),
//!                  TopicPartitions count 27..31, [0] topic length 31..33, "orders" 33..39,
//!                  [0] Partitions count 39..43, ids 43..55, [1] 55..73, TimeoutMs 73..77
//! request-v2-min   header 4..15 (tags count 14), ElectionType 15, TopicPartitions count 16,
//!                  [0] topic 17, Partitions count 18, id 19..23, [0] tags 23, TimeoutMs 24..28,
//!                  body tags 28
//! response-v0      header 4..8, ThrottleTimeMs 8..12, results count 12..16, [0] topic length
//!                  16..18, "orders" 18..24, PartitionResult count 24..28, results 28..52, [1] 52..74
//! response-v2-min  header 4..8 (tags count 8), ThrottleTimeMs 9..13, ErrorCode 13..15,
//!                  results count 15, [0] topic 16, PartitionResult count 17, id 18..22,
//!                  code 22..24, message 24, [0][0] tags 25, [0] tags 26, body tags 27
//! ```

mod common;

use common::{assert_display, assert_error, hex, load, patch, splice, with_size_prefix};
use kafka_elect_leaders::{
    parse_request, parse_response, peek_request, peek_response, split_frame, split_frame_with_max,
    ElectLeadersRequest, ErrorKind, Frames, RequestPeek, ResponsePeek, DEFAULT_MAX_FRAME_SIZE,
    MAX_STRING_LEN, MAX_VERSION,
};

use ErrorKind::*;

const TOPIC: &str = "TopicPartitions.Topic";
const PARTITIONS: &str = "TopicPartitions.Partitions";
const RESULTS: &str = "ReplicaElectionResults";
const RESULT_TOPIC: &str = "ReplicaElectionResults.Topic";
const PARTITION_RESULT: &str = "ReplicaElectionResults.PartitionResult";
const ERROR_MESSAGE: &str = "ReplicaElectionResults.PartitionResult.ErrorMessage";

fn request_v0() -> Vec<u8> {
    load("request-v0.bin")
}

fn request_v2_min() -> Vec<u8> {
    let frame = load("request-v2-min.bin");
    assert_eq!(
        frame,
        hex("00000019 002b 0002 00000000 0000 00 | 00 02 01 02 00000000 00 00000000 00")
    );
    frame
}

fn response_v0() -> Vec<u8> {
    load("response-v0.bin")
}

fn response_v2_min() -> Vec<u8> {
    let frame = load("response-v2-min.bin");
    assert_eq!(
        frame,
        hex("00000018 00000000 00 | 00000000 0000 02 01 02 00000000 0000 01 00 00 00")
    );
    frame
}

// ---------------------------------------------------------------------------------------
// Negative lengths

#[test]
fn negative_length_on_a_non_nullable_string() {
    let frame = patch(&request_v0(), 31, &[0xff, 0xfe]);
    assert_error(parse_request(&frame), NegativeLength(-2), TOPIC, 31);
    let frame = patch(&request_v0(), 31, &[0x80, 0x00]);
    assert_error(parse_request(&frame), NegativeLength(-32768), TOPIC, 31);
    let frame = patch(&response_v0(), 16, &[0xff, 0xfe]);
    assert_error(
        parse_response(&frame, 0),
        NegativeLength(-2),
        RESULT_TOPIC,
        16,
    );
}

#[test]
fn negative_count_on_a_non_nullable_array() {
    let frame = patch(&request_v0(), 39, &[0xff, 0xff, 0xff, 0xfe]);
    assert_error(parse_request(&frame), NegativeLength(-2), PARTITIONS, 39);
    let frame = patch(&response_v0(), 12, &i32::MIN.to_be_bytes());
    assert_error(
        parse_response(&frame, 0),
        NegativeLength(i32::MIN),
        RESULTS,
        12,
    );
    let frame = patch(&response_v0(), 24, &[0xff, 0xff, 0xff, 0xfe]);
    assert_error(
        parse_response(&frame, 0),
        NegativeLength(-2),
        PARTITION_RESULT,
        24,
    );
}

#[test]
fn negative_size_prefix() {
    for size in [-1, -25, i32::MIN] {
        let frame = with_size_prefix(&request_v2_min(), size);
        assert_error(parse_request(&frame), NegativeLength(size), "size", 0);
        assert_error(split_frame(&frame), NegativeLength(size), "size", 0);
        assert_error(peek_request(&frame), NegativeLength(size), "size", 0);
        assert_error(peek_response(&frame), NegativeLength(size), "size", 0);
        let response = with_size_prefix(&response_v2_min(), size);
        assert_error(
            parse_response(&response, 2),
            NegativeLength(size),
            "size",
            0,
        );
        // A negative prefix is malformed even with fewer bytes than a frame needs.
        assert_error(split_frame(&frame[..4]), NegativeLength(size), "size", 0);
    }
    // After a good frame, the iterator reports the bad one at its stream offset and stops.
    let mut stream = request_v2_min();
    stream.extend_from_slice(&with_size_prefix(&request_v0(), -1));
    let mut frames = Frames::new(&stream);
    assert_eq!(frames.next(), Some(Ok(&request_v2_min()[..])));
    let e = frames.next().expect("an error").unwrap_err();
    assert_eq!(
        (e.kind, e.field, e.offset),
        (NegativeLength(-1), "size", 29)
    );
    assert_eq!(frames.next(), None);
    assert_eq!(frames.needed(), None);
    assert_eq!(frames.offset(), 29);
}

// ---------------------------------------------------------------------------------------
// Counts larger than the bytes left

#[test]
fn count_too_large_topic_partitions() {
    // Classic: an entry takes 6 bytes at least; 46 bytes follow the count at 27..31.
    let frame = patch(&request_v0(), 27, &8i32.to_be_bytes());
    assert_error(
        parse_request(&frame),
        CountTooLarge {
            count: 8,
            remaining: 46,
        },
        "TopicPartitions",
        27,
    );
    let frame = patch(&request_v0(), 27, &i32::MAX.to_be_bytes());
    assert_error(
        parse_request(&frame),
        CountTooLarge {
            count: i32::MAX as usize,
            remaining: 46,
        },
        "TopicPartitions",
        27,
    );
    // 7 × 6 = 42 fits: the count passes, and the third entry starts at the TimeoutMs
    // bytes 73..77 (00 00 ea 60): topic "" then a partitions count with 2 bytes left.
    let frame = patch(&request_v0(), 27, &7i32.to_be_bytes());
    assert_error(
        parse_request(&frame),
        UnexpectedEnd { needed: 2 },
        PARTITIONS,
        75,
    );

    // Compact: an entry takes 3 bytes at least; 12 bytes follow the count at 16.
    let frame = patch(&request_v2_min(), 16, &[0x06]); // 5 entries
    assert_error(
        parse_request(&frame),
        CountTooLarge {
            count: 5,
            remaining: 12,
        },
        "TopicPartitions",
        16,
    );
    // The largest uvarint: u32::MAX - 1 entries.
    let frame = splice(&request_v2_min(), 16..17, &[0xff, 0xff, 0xff, 0xff, 0x0f]);
    assert_error(
        parse_request(&frame),
        CountTooLarge {
            count: u32::MAX as usize - 1,
            remaining: 12,
        },
        "TopicPartitions",
        16,
    );
}

#[test]
fn count_too_large_partitions() {
    // 34 bytes follow the count at 39..43; 9 × 4 = 36.
    let frame = patch(&request_v0(), 39, &9i32.to_be_bytes());
    assert_error(
        parse_request(&frame),
        CountTooLarge {
            count: 9,
            remaining: 34,
        },
        PARTITIONS,
        39,
    );
    // 8 × 4 = 32 fits; the next entry starts at 75, on the TimeoutMs bytes ea 60 = -5536.
    let frame = patch(&request_v0(), 39, &8i32.to_be_bytes());
    assert_error(parse_request(&frame), NegativeLength(-5536), TOPIC, 75);
    // Compact: 10 bytes follow the count at 18; 3 × 4 = 12.
    let frame = patch(&request_v2_min(), 18, &[0x04]);
    assert_error(
        parse_request(&frame),
        CountTooLarge {
            count: 3,
            remaining: 10,
        },
        PARTITIONS,
        18,
    );
}

#[test]
fn count_too_large_replica_election_results() {
    // A result takes 6 bytes at least; 58 bytes follow the count at 12..16.
    let frame = patch(&response_v0(), 12, &10i32.to_be_bytes());
    assert_error(
        parse_response(&frame, 0),
        CountTooLarge {
            count: 10,
            remaining: 58,
        },
        RESULTS,
        12,
    );
    // Compact: 12 bytes follow the count at 15; 5 × 3 = 15.
    let frame = patch(&response_v2_min(), 15, &[0x06]);
    assert_error(
        parse_response(&frame, 2),
        CountTooLarge {
            count: 5,
            remaining: 12,
        },
        RESULTS,
        15,
    );
}

#[test]
fn count_too_large_partition_result() {
    // A partition result takes 8 bytes at least; 46 bytes follow the count at 24..28.
    let frame = patch(&response_v0(), 24, &6i32.to_be_bytes());
    assert_error(
        parse_response(&frame, 0),
        CountTooLarge {
            count: 6,
            remaining: 46,
        },
        PARTITION_RESULT,
        24,
    );
    // Compact: 10 bytes follow the count at 17; 2 × 8 = 16.
    let frame = patch(&response_v2_min(), 17, &[0x03]);
    assert_error(
        parse_response(&frame, 2),
        CountTooLarge {
            count: 2,
            remaining: 10,
        },
        PARTITION_RESULT,
        17,
    );
}

#[test]
fn count_too_large_tagged_fields() {
    // A tagged field takes 2 bytes at least. Body: nothing follows the count at 28.
    let frame = patch(&request_v2_min(), 28, &[0x05]);
    assert_error(
        parse_request(&frame),
        CountTooLarge {
            count: 5,
            remaining: 0,
        },
        "_tagged_fields",
        28,
    );
    // Header: 14 bytes follow the count at 14; 8 × 2 = 16.
    let frame = patch(&request_v2_min(), 14, &[0x08]);
    assert_error(
        parse_request(&frame),
        CountTooLarge {
            count: 8,
            remaining: 14,
        },
        "RequestHeader._tagged_fields",
        14,
    );
    // TopicPartitions entry: 5 bytes follow the count at 23.
    let frame = patch(&request_v2_min(), 23, &[0x03]);
    assert_error(
        parse_request(&frame),
        CountTooLarge {
            count: 3,
            remaining: 5,
        },
        "TopicPartitions._tagged_fields",
        23,
    );
    // Response header and PartitionResult.
    let frame = patch(&response_v2_min(), 8, &[0x7f]);
    assert_error(
        parse_response(&frame, 2),
        CountTooLarge {
            count: 127,
            remaining: 19,
        },
        "ResponseHeader._tagged_fields",
        8,
    );
    let frame = patch(&response_v2_min(), 25, &[0x02]);
    assert_error(
        parse_response(&frame, 2),
        CountTooLarge {
            count: 2,
            remaining: 2,
        },
        "ReplicaElectionResults.PartitionResult._tagged_fields",
        25,
    );
}

// ---------------------------------------------------------------------------------------
// Varints

#[test]
fn varint_longer_than_five_bytes() {
    for bad in [
        &[0xff, 0xff, 0xff, 0xff, 0xff][..],
        &[0x80, 0x80, 0x80, 0x80, 0x80, 0x00][..],
    ] {
        let frame = splice(&request_v2_min(), 17..18, bad);
        assert_error(parse_request(&frame), VarintTooLong, TOPIC, 17);
    }
    // In a tag number: body tags count 1, then the tag at 29.
    let frame = splice(
        &request_v2_min(),
        28..29,
        &[0x01, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x00],
    );
    assert_error(parse_request(&frame), VarintTooLong, "_tagged_fields", 29);
}

#[test]
fn varint_over_32_bits() {
    for bad in [
        &[0xff, 0xff, 0xff, 0xff, 0x1f][..],
        &[0x80, 0x80, 0x80, 0x80, 0x10][..], // exactly 2^32
        &[0x80, 0x80, 0x80, 0x80, 0x7f][..],
    ] {
        let frame = splice(&request_v2_min(), 17..18, bad);
        assert_error(parse_request(&frame), VarintOverflow, TOPIC, 17);
    }
    // u32::MAX itself is a varint; as a compact length it is 4294967294 bytes.
    let frame = splice(&request_v2_min(), 17..18, &[0xff, 0xff, 0xff, 0xff, 0x0f]);
    assert_error(
        parse_request(&frame),
        StringTooLong {
            len: u32::MAX as usize - 1,
        },
        TOPIC,
        17,
    );
    // In a tagged field's size: count 1, tag 0 at 29, size at 30.
    let frame = splice(
        &response_v2_min(),
        27..28,
        &[0x01, 0x00, 0x80, 0x80, 0x80, 0x80, 0x10],
    );
    assert_error(
        parse_response(&frame, 2),
        VarintOverflow,
        "_tagged_fields",
        29,
    );
}

#[test]
fn non_minimal_varints_are_accepted() {
    // request-v2-min with every uvarint written long: header tags 80 00, TopicPartitions
    // count 82 00, topic length 81 00, partitions count 82 00, entry tags 80 00, body tags
    // 80 80 80 80 00.
    let long = hex(concat!(
        "00000022 002b 0002 00000000 0000 8000 |",
        " 00 8200 8100 8200 00000000 8000 00000000 8080808000",
    ));
    assert_eq!(long.len(), 38);
    let request = parse_request(&long).expect("non-minimal varints are accepted");
    assert_eq!(request.header().range(), 4..16);
    assert_eq!(request.body_range(), 16..38);
    let topics = request.topic_partitions().unwrap();
    assert_eq!(topics.range(), 17..29);
    assert_eq!(topics.len(), 1);
    let entry = topics.first().unwrap();
    assert_eq!(entry.range(), 19..29);
    assert_eq!(entry.topic(), b"");
    assert_eq!(entry.partitions().range(), 21..27);
    assert_eq!(entry.partitions().iter().collect::<Vec<_>>(), [0]);
    assert!(entry.tagged_fields().is_empty());
    assert_eq!(request.timeout_ms(), 0);
    assert_eq!(request.tagged_fields().range(), 33..38);
    assert!(request.tagged_fields().is_empty());
    // Values, not encodings: equal to the minimal reference frame.
    let reference = request_v2_min();
    assert_eq!(request, parse_request(&reference).unwrap());
    common::walk_request(&request);

    // A tag number and a size written long: tag 81 00 = 1, size 82 00 = 2.
    let frame = splice(&request_v2_min(), 28..29, &hex("01 8100 8200 cafe"));
    let request = parse_request(&frame).unwrap();
    let tags: Vec<(u32, &[u8])> = request
        .tagged_fields()
        .iter()
        .map(|f| (f.tag(), f.data()))
        .collect();
    assert_eq!(tags, [(1, &[0xca, 0xfe][..])]);

    // Response: message length 81 00 = "" (empty), 80 00 = null.
    let frame = splice(&response_v2_min(), 24..25, &[0x81, 0x00]);
    let response = parse_response(&frame, 2).unwrap();
    let p = response.replica_election_results().first().unwrap();
    let p = p.partition_result().first().unwrap();
    assert_eq!(p.error_message(), Some(&b""[..]));
    let frame = splice(&response_v2_min(), 24..25, &[0x80, 0x00]);
    let response = parse_response(&frame, 2).unwrap();
    let p = response.replica_election_results().first().unwrap();
    assert_eq!(p.partition_result().first().unwrap().error_message(), None);
}

// ---------------------------------------------------------------------------------------
// Null where the schema forbids it

#[test]
fn null_where_the_schema_forbids_it() {
    // Topic: classic -1, compact 0.
    let frame = patch(&request_v0(), 31, &[0xff, 0xff]);
    assert_error(parse_request(&frame), UnexpectedNull, TOPIC, 31);
    let frame = patch(&request_v2_min(), 17, &[0x00]);
    assert_error(parse_request(&frame), UnexpectedNull, TOPIC, 17);
    // Partitions: classic -1, compact 0.
    let frame = patch(&request_v0(), 39, &[0xff, 0xff, 0xff, 0xff]);
    assert_error(parse_request(&frame), UnexpectedNull, PARTITIONS, 39);
    let frame = patch(&request_v2_min(), 18, &[0x00]);
    assert_error(parse_request(&frame), UnexpectedNull, PARTITIONS, 18);
    // Results: classic -1, compact 0.
    let frame = patch(&response_v0(), 12, &[0xff, 0xff, 0xff, 0xff]);
    assert_error(parse_response(&frame, 0), UnexpectedNull, RESULTS, 12);
    let frame = patch(&response_v2_min(), 15, &[0x00]);
    assert_error(parse_response(&frame, 2), UnexpectedNull, RESULTS, 15);
    // Result topic and PartitionResult, compact 0.
    let frame = patch(&response_v2_min(), 16, &[0x00]);
    assert_error(parse_response(&frame, 2), UnexpectedNull, RESULT_TOPIC, 16);
    let frame = patch(&response_v2_min(), 17, &[0x00]);
    assert_error(
        parse_response(&frame, 2),
        UnexpectedNull,
        PARTITION_RESULT,
        17,
    );
    let frame = patch(&response_v0(), 24, &[0xff, 0xff, 0xff, 0xff]);
    assert_error(
        parse_response(&frame, 0),
        UnexpectedNull,
        PARTITION_RESULT,
        24,
    );
}

// ---------------------------------------------------------------------------------------
// Strings over 32767 bytes

#[test]
fn string_over_32767_bytes() {
    assert_eq!(MAX_STRING_LEN, 32767);
    // Compact length 32769 (81 80 02) = 32768 bytes, which are there.
    let mut body = vec![0x81, 0x80, 0x02];
    body.resize(3 + 32768, b'a');
    let frame = splice(&request_v2_min(), 17..18, &body);
    assert_error(
        parse_request(&frame),
        StringTooLong { len: 32768 },
        TOPIC,
        17,
    );

    let frame = splice(&response_v2_min(), 24..25, &body);
    assert_error(
        parse_response(&frame, 2),
        StringTooLong { len: 32768 },
        ERROR_MESSAGE,
        24,
    );
    let frame = splice(&response_v2_min(), 16..17, &body);
    assert_error(
        parse_response(&frame, 2),
        StringTooLong { len: 32768 },
        RESULT_TOPIC,
        16,
    );
}

#[test]
fn string_of_exactly_32767_bytes_parses() {
    // Compact length 32768 (80 80 02) = 32767 bytes.
    let mut body = vec![0x80, 0x80, 0x02];
    body.resize(3 + 32767, b'z');
    let frame = splice(&request_v2_min(), 17..18, &body);
    assert_eq!(frame.len(), 29 - 1 + 3 + 32767);
    let request = parse_request(&frame).expect("32767 bytes is the limit, not over it");
    let entry = request.topic_partitions().unwrap().first().unwrap();
    assert_eq!(entry.topic().len(), 32767);
    assert!(entry.topic().iter().all(|&b| b == b'z'));
    assert_eq!(entry.range(), 17..17 + 3 + 32767 + 6);
    assert_eq!(entry.partitions().iter().collect::<Vec<_>>(), [0]);
    assert_eq!(request.timeout_ms(), 0);

    // Classic: int16 length 0x7fff in the client id.
    let mut client = vec![0x7f, 0xff];
    client.resize(2 + 32767, b'c');
    let frame = splice(&request_v0(), 12..27, &client);
    let request = parse_request(&frame).unwrap();
    assert_eq!(request.header().client_id().map(<[u8]>::len), Some(32767));
    assert_eq!(request.correlation_id(), 7);
    assert_eq!(request.timeout_ms(), 60000);
}

// ---------------------------------------------------------------------------------------
// Trailing bytes and size prefixes that disagree

#[test]
fn trailing_bytes_inside_the_frame() {
    for (name, len) in [
        ("request-v2-min.bin", 29),
        ("request-v0.bin", 77),
        ("request-v2-tagged.bin", 76),
    ] {
        let frame = splice(&load(name), len..len, &[0x00]);
        assert_error(
            parse_request(&frame),
            TrailingBytes { count: 1 },
            "ElectLeadersRequest",
            len,
        );
    }
    for (name, version, len) in [
        ("response-v2-min.bin", 2, 28),
        ("response-v0.bin", 0, 74),
        ("response-v1-errors.bin", 1, 18),
    ] {
        let frame = splice(&load(name), len..len, &[0x00]);
        assert_error(
            parse_response(&frame, version),
            TrailingBytes { count: 1 },
            "ElectLeadersResponse",
            len,
        );
    }
    // Three bytes over.
    let frame = splice(&request_v2_min(), 29..29, &[1, 2, 3]);
    assert_error(
        parse_request(&frame),
        TrailingBytes { count: 3 },
        "ElectLeadersRequest",
        29,
    );
}

#[test]
fn input_longer_than_the_size_prefix_says() {
    let mut frame = request_v2_min();
    frame.push(0x00);
    assert_error(
        parse_request(&frame),
        SizeMismatch {
            declared: 25,
            actual: 26,
        },
        "size",
        0,
    );
    let mut frame = response_v2_min();
    frame.extend_from_slice(&[0, 0, 0]);
    assert_error(
        parse_response(&frame, 2),
        SizeMismatch {
            declared: 24,
            actual: 27,
        },
        "size",
        0,
    );
}

#[test]
fn size_prefix_larger_than_the_input_but_the_body_is_whole() {
    // The frame is incomplete by exactly the bytes it lacks, whatever they would hold.
    let frame = with_size_prefix(&request_v2_min(), 26);
    assert_error(parse_request(&frame), Incomplete { needed: 1 }, "size", 0);
    let frame = with_size_prefix(&response_v0(), 1000);
    assert_error(
        parse_response(&frame, 0),
        Incomplete { needed: 930 },
        "size",
        0,
    );
}

#[test]
fn size_prefix_too_small_cuts_the_body() {
    // request-v0-null-topics: size 18, TimeoutMs at 18..22. A prefix of 16 makes the frame
    // end two bytes into TimeoutMs.
    let stream = with_size_prefix(&load("request-v0-null-topics.bin"), 16);
    let (frame, rest) = split_frame(&stream).unwrap();
    assert_eq!((frame.len(), rest.len()), (20, 2));
    assert_error(
        parse_request(frame),
        UnexpectedEnd { needed: 2 },
        "TimeoutMs",
        18,
    );
    // request-v2-min: a prefix of 24 cuts the body tagged-field count at 28.
    let stream = with_size_prefix(&request_v2_min(), 24);
    let (frame, _) = split_frame(&stream).unwrap();
    assert_error(
        parse_request(frame),
        UnexpectedEnd { needed: 1 },
        "_tagged_fields",
        28,
    );
    // response-v0-errors: the last message (length at 74, 32 bytes from 76) loses a byte.
    let stream = with_size_prefix(&load("response-v0-errors.bin"), 103);
    let (frame, _) = split_frame(&stream).unwrap();
    assert_error(
        parse_response(frame, 0),
        UnexpectedEnd { needed: 1 },
        ERROR_MESSAGE,
        74,
    );
    // A frame of size 0: the API key is cut.
    assert_error(
        parse_request(&[0, 0, 0, 0]),
        UnexpectedEnd { needed: 2 },
        "RequestHeader.RequestApiKey",
        4,
    );
    assert_error(
        parse_response(&[0, 0, 0, 0], 1),
        UnexpectedEnd { needed: 4 },
        "ResponseHeader.CorrelationId",
        4,
    );
}

// ---------------------------------------------------------------------------------------
// Frames over the maximum

#[test]
fn frame_over_the_maximum() {
    let frame = request_v2_min(); // size 25
    assert_error(
        split_frame_with_max(&frame, 24),
        FrameTooLarge { size: 25, max: 24 },
        "size",
        0,
    );
    assert_eq!(
        split_frame_with_max(&frame, 25),
        Ok((&frame[..], &[][..])),
        "exactly the maximum is accepted"
    );
    // The maximum is checked on the prefix alone, before the body arrives.
    assert_error(
        split_frame_with_max(&frame[..4], 24),
        FrameTooLarge { size: 25, max: 24 },
        "size",
        0,
    );

    // Default maximum: 100 MiB.
    assert_eq!(DEFAULT_MAX_FRAME_SIZE, 104_857_600);
    let over = (DEFAULT_MAX_FRAME_SIZE as u32 + 1).to_be_bytes();
    assert_error(
        split_frame(&over),
        FrameTooLarge {
            size: DEFAULT_MAX_FRAME_SIZE + 1,
            max: DEFAULT_MAX_FRAME_SIZE,
        },
        "size",
        0,
    );
    let exactly = (DEFAULT_MAX_FRAME_SIZE as u32).to_be_bytes();
    let e = split_frame(&exactly).unwrap_err();
    assert_eq!(
        e.kind,
        Incomplete {
            needed: DEFAULT_MAX_FRAME_SIZE
        }
    );

    // The iterator: v2-min (size 25) passes a maximum of 25, request-v0 (size 73) does not.
    let mut stream = request_v2_min();
    stream.extend_from_slice(&request_v0());
    let mut frames = Frames::new(&stream).with_max_frame_size(25);
    assert_eq!(frames.next(), Some(Ok(&stream[..29])));
    let e = frames.next().expect("an error").unwrap_err();
    assert_eq!(
        (e.kind, e.field, e.offset),
        (FrameTooLarge { size: 73, max: 25 }, "size", 29)
    );
    assert_display(&e);
    assert_eq!(frames.next(), None);
    assert_eq!(frames.remainder(), &stream[29..]);
    let all: Vec<_> = Frames::new(&stream).with_max_frame_size(73).collect();
    assert_eq!(all, [Ok(&stream[..29]), Ok(&stream[29..])]);
}

// ---------------------------------------------------------------------------------------
// API key and version

#[test]
fn wrong_api_key() {
    for key in [42i16, 0, -1, 44, i16::MAX] {
        let frame = patch(&request_v2_min(), 4, &key.to_be_bytes());
        assert_error(
            parse_request(&frame),
            UnsupportedApiKey(key),
            "RequestHeader.RequestApiKey",
            4,
        );
        let peek = peek_request(&frame).unwrap();
        assert_eq!((peek.api_key, peek.api_version), (key, 2));
        assert!(!peek.is_elect_leaders());
    }
}

#[test]
fn unsupported_version() {
    for version in [MAX_VERSION + 1, -1, i16::MIN, i16::MAX] {
        let frame = patch(&request_v2_min(), 6, &version.to_be_bytes());
        assert_error(
            parse_request(&frame),
            UnsupportedVersion(version),
            "RequestHeader.RequestApiVersion",
            6,
        );
        assert!(!peek_request(&frame).unwrap().is_elect_leaders());
        assert_error(
            parse_response(&response_v2_min(), version),
            UnsupportedVersion(version),
            "api_version",
            0,
        );
    }
    // The version is refused before the frame is looked at.
    assert_error(
        parse_response(&[], 3),
        UnsupportedVersion(3),
        "api_version",
        0,
    );
}

// ---------------------------------------------------------------------------------------
// Tagged fields whose size runs past the end

#[test]
fn tagged_field_size_runs_past_the_end() {
    // Body: count 1, tag 0, size 5, then only one byte (at 31).
    let frame = splice(&request_v2_min(), 28..29, &hex("01 00 05 aa"));
    let e = assert_error(
        parse_request(&frame),
        UnexpectedEnd { needed: 4 },
        "_tagged_fields",
        31,
    );
    assert!(e.field.ends_with("_tagged_fields"));
    // TopicPartitions entry: count 1, tag 0, size 9 at 25, data from 26: 5 bytes left.
    let frame = splice(&request_v2_min(), 23..24, &hex("01 00 09"));
    assert_error(
        parse_request(&frame),
        UnexpectedEnd { needed: 4 },
        "TopicPartitions._tagged_fields",
        26,
    );
    // Request header: size 127, data from 17; the frame is 31 bytes.
    let frame = splice(&request_v2_min(), 14..15, &hex("01 00 7f"));
    assert_error(
        parse_request(&frame),
        UnexpectedEnd { needed: 113 },
        "RequestHeader._tagged_fields",
        17,
    );
    // Response header: size 127, data from 11; the frame is 30 bytes.
    let frame = splice(&response_v2_min(), 8..9, &hex("01 00 7f"));
    assert_error(
        parse_response(&frame, 2),
        UnexpectedEnd { needed: 108 },
        "ResponseHeader._tagged_fields",
        11,
    );
    // PartitionResult: size 9, data from 28; two bytes left.
    let frame = splice(&response_v2_min(), 25..26, &hex("01 00 09"));
    assert_error(
        parse_response(&frame, 2),
        UnexpectedEnd { needed: 7 },
        "ReplicaElectionResults.PartitionResult._tagged_fields",
        28,
    );
    // ReplicaElectionResult: size 9, data from 29; one byte left.
    let frame = splice(&response_v2_min(), 26..27, &hex("01 00 09"));
    assert_error(
        parse_response(&frame, 2),
        UnexpectedEnd { needed: 8 },
        "ReplicaElectionResults._tagged_fields",
        29,
    );
}

// ---------------------------------------------------------------------------------------
// What Kafka accepts, so must we

#[test]
fn any_negative_length_on_a_nullable_field_is_null() {
    // client_id -2 (request-v0-null-topics, length at 12).
    let frame = patch(&load("request-v0-null-topics.bin"), 12, &[0xff, 0xfe]);
    let request = parse_request(&frame).unwrap();
    assert_eq!(request.header().client_id(), None);
    // TopicPartitions count -2 (at 14..18): null, all partitions.
    let frame = patch(
        &load("request-v0-null-topics.bin"),
        14,
        &[0xff, 0xff, 0xff, 0xfe],
    );
    let request = parse_request(&frame).unwrap();
    assert!(request.topic_partitions().is_none());
    assert_eq!(request.timeout_ms(), 30000);
    // ErrorMessage -2 (response-v0-errors, [1][0] message length at 66).
    let frame = patch(&load("response-v0-errors.bin"), 66, &[0xff, 0xfe]);
    let response = parse_response(&frame, 0).unwrap();
    let orders = response.replica_election_results().iter().nth(1).unwrap();
    assert_eq!(
        orders.partition_result().first().unwrap().error_message(),
        None
    );
}

#[test]
fn repeated_and_unordered_tags_are_kept_in_wire_order() {
    let frame = splice(&request_v2_min(), 28..29, &hex("03 05 00 01 00 05 01 ff"));
    let request = parse_request(&frame).unwrap();
    let tags: Vec<(u32, &[u8])> = request
        .tagged_fields()
        .iter()
        .map(|f| (f.tag(), f.data()))
        .collect();
    assert_eq!(tags, [(5, &[][..]), (1, &[][..]), (5, &[0xff][..])]);
    // The largest tag number.
    let frame = splice(&request_v2_min(), 28..29, &hex("01 ffffffff0f 00"));
    let request = parse_request(&frame).unwrap();
    assert_eq!(request.tagged_fields().first().unwrap().tag(), u32::MAX);
}

#[test]
fn the_same_topic_twice_is_kept_twice() {
    let frame = splice(
        &request_v2_min(),
        16..24,
        &hex("03 | 02 61 02 00000001 00 | 02 61 02 00000002 00"),
    );
    let request = parse_request(&frame).unwrap();
    let topics: Vec<(&[u8], Vec<i32>)> = request
        .topic_partitions()
        .unwrap()
        .iter()
        .map(|t| (t.topic(), t.partitions().iter().collect()))
        .collect();
    assert_eq!(topics, [(&b"a"[..], vec![1]), (&b"a"[..], vec![2])]);
}

#[test]
fn invalid_utf8_is_kept_as_bytes() {
    // Topic ff fe (v2), client id c3 28 (v0), message 80 (v2).
    let frame = splice(&request_v2_min(), 17..18, &hex("03 fffe"));
    let request = parse_request(&frame).unwrap();
    let entry = request.topic_partitions().unwrap().first().unwrap();
    assert_eq!(entry.topic(), &[0xff, 0xfe]);
    assert!(entry.topic_str().is_err());

    let frame = splice(&request_v0(), 12..27, &hex("0002 c328"));
    let request = parse_request(&frame).unwrap();
    assert_eq!(request.header().client_id(), Some(&[0xc3, 0x28][..]));
    assert!(request.header().client_id_str().is_err());

    let frame = splice(&response_v2_min(), 24..25, &hex("02 80"));
    let response = parse_response(&frame, 2).unwrap();
    let p = response.replica_election_results().first().unwrap();
    let p = p.partition_result().first().unwrap();
    assert_eq!(p.error_message(), Some(&[0x80][..]));
    assert!(p.error_message_str().is_err());
}

// ---------------------------------------------------------------------------------------
// peek_request

#[test]
fn peek_every_corpus_request() {
    for frame in common::load_requests() {
        let peek = peek_request(&frame.bytes).unwrap();
        let request: ElectLeadersRequest<'_> = parse_request(&frame.bytes).unwrap();
        let header = request.header();
        assert_eq!(
            peek,
            RequestPeek {
                size: frame.bytes.len() - 4,
                api_key: header.api_key(),
                api_version: header.api_version(),
                correlation_id: header.correlation_id(),
            },
            "{}",
            frame.name
        );
        assert!(peek.is_elect_leaders());
        // Only the first 12 bytes are needed.
        assert_eq!(peek_request(&frame.bytes[..12]), Ok(peek), "{}", frame.name);
    }
    // Values from the sources.
    let peek = peek_request(&load("request-v1-unclean.bin")).unwrap();
    assert_eq!(
        (
            peek.size,
            peek.api_key,
            peek.api_version,
            peek.correlation_id
        ),
        (44, 43, 1, i32::MAX)
    );
}

#[test]
fn peek_a_request_of_another_api() {
    // Produce v9 (flexible), request header v2: api key 0, version 9, correlation id 42,
    // client id "p", no header tags; body: transactional id null (compact 0), acks -1,
    // timeout 30000, no topics (compact 1), no tags. 12 + 9 = 21 bytes after the prefix.
    let frame = hex("00000015 0000 0009 0000002a 0001 70 00 | 00 ffff 00007530 01 00");
    let peek = peek_request(&frame).unwrap();
    assert_eq!(
        peek,
        RequestPeek {
            size: 21,
            api_key: 0,
            api_version: 9,
            correlation_id: 42,
        }
    );
    assert!(!peek.is_elect_leaders());
    assert_error(
        parse_request(&frame),
        UnsupportedApiKey(0),
        "RequestHeader.RequestApiKey",
        4,
    );
}

#[test]
fn peek_needs_twelve_bytes() {
    let frame = request_v2_min();
    for k in 0..12 {
        let e = peek_request(&frame[..k]).unwrap_err();
        assert!(e.is_incomplete(), "[..{k}]: {e:?}");
        assert_eq!(e.needed(), Some(12 - k), "[..{k}]");
    }
}

#[test]
fn peek_a_size_too_small_for_the_header() {
    // Size 6: the correlation id at 8..12 has only 2 of its bytes inside the frame.
    let frame = with_size_prefix(&request_v2_min(), 6);
    assert_error(
        peek_request(&frame),
        UnexpectedEnd { needed: 2 },
        "RequestHeader.CorrelationId",
        8,
    );
    let frame = with_size_prefix(&request_v2_min(), 0);
    assert_error(
        peek_request(&frame),
        UnexpectedEnd { needed: 2 },
        "RequestHeader.RequestApiKey",
        4,
    );
}

// ---------------------------------------------------------------------------------------
// peek_response

#[test]
fn peek_every_corpus_response() {
    for frame in common::load_corpus() {
        let common::Kind::Response { version } = frame.kind() else {
            continue;
        };
        let peek = peek_response(&frame.bytes).unwrap();
        let response = parse_response(&frame.bytes, version).unwrap();
        assert_eq!(
            peek,
            ResponsePeek {
                size: frame.bytes.len() - 4,
                correlation_id: response.header().correlation_id(),
            },
            "{}",
            frame.name
        );
        assert_eq!(peek_response(&frame.bytes[..8]), Ok(peek), "{}", frame.name);
    }
}

#[test]
fn peek_response_of_another_api() {
    // ApiVersions v3 response (header v0 even though the body is flexible): correlation id
    // 7, error code 35 (UNSUPPORTED_VERSION), no api keys (compact 1), throttle 0, no tags.
    let frame = hex("0000000c 00000007 | 0023 01 00000000 00");
    assert_eq!(
        peek_response(&frame),
        Ok(ResponsePeek {
            size: 12,
            correlation_id: 7,
        })
    );
}

#[test]
fn peek_response_needs_eight_bytes_and_a_size_that_holds_them() {
    let frame = response_v2_min();
    for k in 0..8 {
        let e = peek_response(&frame[..k]).unwrap_err();
        assert!(e.is_incomplete(), "[..{k}]: {e:?}");
        assert_eq!(e.needed(), Some(8 - k), "[..{k}]");
    }
    let frame = with_size_prefix(&response_v2_min(), 3);
    assert_error(
        peek_response(&frame),
        UnexpectedEnd { needed: 1 },
        "ResponseHeader.CorrelationId",
        4,
    );
}

#[test]
fn error_display_is_one_line_with_field_and_offset() {
    let frame = patch(&request_v2_min(), 4, &42i16.to_be_bytes());
    let e = parse_request(&frame).unwrap_err();
    let text = e.to_string();
    assert!(!text.contains('\n'));
    assert!(
        text.starts_with("RequestHeader.RequestApiKey at byte 4: "),
        "{text}"
    );
    assert!(text.contains("api key 42"), "{text}");
    // The kind's own text says what was wrong.
    assert!(!e.kind.to_string().is_empty());
    assert!(!e.kind.to_string().contains('\n'));
    // std::error::Error is implemented (feature "std").
    let boxed: Box<dyn std::error::Error> = Box::new(e);
    assert_eq!(boxed.to_string(), text);
}
