//! Field spans: every field a view names has a byte range (`*_range()`), the ranges of a
//! struct's fields tile it in wire order, and the bytes each range covers decode to the
//! value the view gives. What `elect-leaders inspect` draws its tree and hex layout from.

mod common;

use std::ops::Range;

use common::{load_corpus, Kind};
use kafka_elect_leaders::{
    parse_request, parse_response, peek_request, ElectLeadersRequest, ElectLeadersResponse,
    Int32List, TaggedFields, SIZE_PREFIX_LEN,
};

/// Asserts that `ranges` follow each other without a gap from `outer.start` to `outer.end`.
#[track_caller]
fn tiles(outer: Range<usize>, ranges: &[Range<usize>], what: &str) {
    let mut at = outer.start;
    for r in ranges {
        assert_eq!(r.start, at, "{what}: {ranges:?} do not tile {outer:?}");
        assert!(r.start <= r.end, "{what}: {r:?}");
        at = r.end;
    }
    assert_eq!(at, outer.end, "{what}: {ranges:?} do not tile {outer:?}");
}

fn i16_at(frame: &[u8], r: Range<usize>) -> i16 {
    i16::from_be_bytes(frame[r].try_into().unwrap())
}

fn i32_at(frame: &[u8], r: Range<usize>) -> i32 {
    i32::from_be_bytes(frame[r].try_into().unwrap())
}

/// A string field's range ends with its bytes, after a length prefix of 1 to 5 bytes.
#[track_caller]
fn ends_with(frame: &[u8], r: Range<usize>, value: Option<&[u8]>, what: &str) {
    let value = value.unwrap_or_default();
    let prefix = (r.end - r.start)
        .checked_sub(value.len())
        .unwrap_or_else(|| panic!("{what}: {r:?} is shorter than the value"));
    assert!(
        (1..=5).contains(&prefix),
        "{what}: length prefix of {prefix} bytes"
    );
    assert_eq!(&frame[r.end - value.len()..r.end], value, "{what}");
}

/// An `[]int32`: count, then each element where its range says.
fn int32_list(frame: &[u8], list: Int32List<'_>, what: &str) {
    let mut ranges = vec![list.count_range()];
    for (j, value) in list.iter().enumerate() {
        let r = list.element_range(j).unwrap();
        assert_eq!(i32_at(frame, r.clone()), value, "{what}[{j}]");
        ranges.push(r);
    }
    assert_eq!(list.element_range(list.len()), None, "{what}");
    tiles(list.range(), &ranges, what);
}

/// Tagged fields: the count, then each field.
fn tagged(fields: TaggedFields<'_>, what: &str) {
    let mut ranges = vec![fields.count_range()];
    ranges.extend(fields.iter().map(|f| f.range()));
    tiles(fields.range(), &ranges, what);
}

fn request(name: &str, frame: &[u8], r: &ElectLeadersRequest<'_>) {
    let h = r.header();
    assert_eq!(i16_at(frame, h.api_key_range()), h.api_key(), "{name}");
    assert_eq!(
        i16_at(frame, h.api_version_range()),
        h.api_version(),
        "{name}"
    );
    assert_eq!(
        i32_at(frame, h.correlation_id_range()),
        h.correlation_id(),
        "{name}"
    );
    ends_with(frame, h.client_id_range(), h.client_id(), name);
    tiles(
        h.range(),
        &[
            h.api_key_range(),
            h.api_version_range(),
            h.correlation_id_range(),
            h.client_id_range(),
            h.tagged_fields().range(),
        ],
        name,
    );
    tagged(h.tagged_fields(), name);
    // The peek of the same frame names the same bytes.
    let peek = peek_request(frame).unwrap();
    assert_eq!(peek.api_key_range(), h.api_key_range(), "{name}");
    assert_eq!(peek.api_version_range(), h.api_version_range(), "{name}");
    assert_eq!(
        peek.correlation_id_range(),
        h.correlation_id_range(),
        "{name}"
    );

    let mut body = Vec::new();
    match r.election_type_range() {
        Some(range) => {
            assert_eq!(frame[range.start] as i8, r.election_type().0, "{name}");
            body.push(range);
        }
        None => assert_eq!(r.version(), 0, "{name}"),
    }
    body.push(r.topic_partitions_range());
    match r.topic_partitions() {
        None => {
            let len = r.topic_partitions_range().len();
            assert!(len == 1 || len == 4, "{name}: a null count of {len} bytes");
        }
        Some(list) => {
            assert_eq!(list.range(), r.topic_partitions_range(), "{name}");
            let mut ranges = vec![list.count_range()];
            for entry in list.iter() {
                ends_with(frame, entry.topic_range(), Some(entry.topic()), name);
                int32_list(frame, entry.partitions(), name);
                tiles(
                    entry.range(),
                    &[
                        entry.topic_range(),
                        entry.partitions().range(),
                        entry.tagged_fields().range(),
                    ],
                    name,
                );
                tagged(entry.tagged_fields(), name);
                ranges.push(entry.range());
            }
            tiles(list.range(), &ranges, name);
        }
    }
    assert_eq!(
        i32_at(frame, r.timeout_ms_range()),
        r.timeout_ms(),
        "{name}"
    );
    body.push(r.timeout_ms_range());
    body.push(r.tagged_fields().range());
    tagged(r.tagged_fields(), name);
    tiles(r.body_range(), &body, name);
    tiles(
        0..frame.len(),
        &[0..SIZE_PREFIX_LEN, h.range(), r.body_range()],
        name,
    );
}

fn response(name: &str, frame: &[u8], r: &ElectLeadersResponse<'_>) {
    let h = r.header();
    assert_eq!(
        i32_at(frame, h.correlation_id_range()),
        h.correlation_id(),
        "{name}"
    );
    tiles(
        h.range(),
        &[h.correlation_id_range(), h.tagged_fields().range()],
        name,
    );
    let mut body = vec![r.throttle_time_ms_range()];
    assert_eq!(
        i32_at(frame, r.throttle_time_ms_range()),
        r.throttle_time_ms(),
        "{name}"
    );
    match r.error_code_range() {
        Some(range) => {
            assert_eq!(i16_at(frame, range.clone()), r.error_code().0, "{name}");
            body.push(range);
        }
        None => assert_eq!(r.version(), 0, "{name}"),
    }
    let results = r.replica_election_results();
    body.push(results.range());
    let mut ranges = vec![results.count_range()];
    for result in results.iter() {
        ends_with(frame, result.topic_range(), Some(result.topic()), name);
        let partitions = result.partition_result();
        let mut p_ranges = vec![partitions.count_range()];
        for p in partitions.iter() {
            assert_eq!(
                i32_at(frame, p.partition_id_range()),
                p.partition_id(),
                "{name}"
            );
            assert_eq!(
                i16_at(frame, p.error_code_range()),
                p.error_code().0,
                "{name}"
            );
            ends_with(frame, p.error_message_range(), p.error_message(), name);
            tiles(
                p.range(),
                &[
                    p.partition_id_range(),
                    p.error_code_range(),
                    p.error_message_range(),
                    p.tagged_fields().range(),
                ],
                name,
            );
            tagged(p.tagged_fields(), name);
            p_ranges.push(p.range());
        }
        tiles(partitions.range(), &p_ranges, name);
        tiles(
            result.range(),
            &[
                result.topic_range(),
                partitions.range(),
                result.tagged_fields().range(),
            ],
            name,
        );
        ranges.push(result.range());
    }
    tiles(results.range(), &ranges, name);
    body.push(r.tagged_fields().range());
    tiles(r.body_range(), &body, name);
}

#[test]
fn field_spans_tile_every_corpus_frame_and_hold_their_values() {
    let corpus = load_corpus();
    let (mut requests, mut responses) = (0, 0);
    for frame in &corpus {
        match frame.kind() {
            Kind::Request => {
                let r = parse_request(&frame.bytes).unwrap();
                request(&frame.name, &frame.bytes, &r);
                requests += 1;
            }
            Kind::Response { version } => {
                let r = parse_response(&frame.bytes, version).unwrap();
                response(&frame.name, &frame.bytes, &r);
                responses += 1;
            }
        }
    }
    assert!(
        requests > 5 && responses > 5,
        "{requests} requests, {responses} responses"
    );
}

/// The corpus has a null `TopicPartitions` (its count alone, between `ElectionType` and
/// `TimeoutMs`), so the test above reads that span too.
#[test]
fn the_corpus_has_a_null_topic_partitions() {
    let null = load_corpus()
        .into_iter()
        .filter(|f| matches!(f.kind(), Kind::Request))
        .filter(|f| {
            parse_request(&f.bytes)
                .unwrap()
                .topic_partitions()
                .is_none()
        })
        .count();
    assert!(
        null > 0,
        "no request with null TopicPartitions in the corpus"
    );
}
