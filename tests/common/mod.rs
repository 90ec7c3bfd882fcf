//! Helpers shared by the integration tests: the corpus, hex literals, frame surgery, and
//! walkers that touch every field of a parsed view without allocating.
//!
//! The walkers also check the views' own invariants (iterators agree with `get`, ranges nest
//! and tile their parent, borrowed slices lie inside the frame where their range says), so a
//! walk is a test in itself and not only a way to keep the optimiser busy.

// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

#[allow(unused_imports)]
pub use kafka_elect_leaders_testkit::corpus::*;
#[allow(unused_imports)]
pub use kafka_elect_leaders_testkit::pcap;

use std::ops::Range;

use kafka_elect_leaders::{
    ElectLeadersRequest, ElectLeadersResponse, Error, Int32List, TaggedFields, SIZE_PREFIX_LEN,
};

/// Asserts an error's kind, field and offset, and that its `Display` is one line that names
/// the field and the offset.
#[track_caller]
pub fn assert_error<T: std::fmt::Debug>(
    result: Result<T, Error>,
    kind: kafka_elect_leaders::ErrorKind,
    field: &str,
    offset: usize,
) -> Error {
    let e = match result {
        Ok(value) => panic!("expected {kind:?} on {field} at {offset}, parsed {value:?}"),
        Err(e) => e,
    };
    assert_eq!(
        (e.kind, e.field, e.offset),
        (kind, field, offset),
        "error: {e}"
    );
    assert_display(&e);
    e
}

/// `Display` of an error: one line, naming the field and the offset.
#[track_caller]
pub fn assert_display(e: &Error) {
    let text = e.to_string();
    assert!(!text.contains('\n'), "multi-line Display: {text:?}");
    // The field and the offset, in their place: not merely some digits somewhere.
    assert_eq!(
        text,
        format!("{} at byte {}: {}", e.field, e.offset, e.kind),
        "Display of {e:?}"
    );
    assert!(
        text.len() > e.field.len() + 8,
        "Display too terse: {text:?}"
    );
}

// ---------------------------------------------------------------------------------------
// Walkers: touch every field, check the views' invariants, fold everything into a checksum.
// They must not allocate: the no-allocation test runs them under a counting allocator.

const SEED: u64 = 0xcbf2_9ce4_8422_2325;

#[inline]
fn mix(h: u64, x: u64) -> u64 {
    (h ^ x).wrapping_mul(0x0000_0100_0000_01b3).rotate_left(13)
}

fn mix_bytes(h: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(mix(h, bytes.len() as u64), |h, &b| mix(h, u64::from(b)))
}

fn mix_opt_bytes(h: u64, bytes: Option<&[u8]>) -> u64 {
    match bytes {
        None => mix(h, 0x6e75_6c6c), // "null"
        Some(b) => mix_bytes(mix(h, 1), b),
    }
}

fn mix_range(h: u64, r: &Range<usize>) -> u64 {
    mix(mix(h, r.start as u64), r.end as u64)
}

/// Asserts `inner` lies within `outer`.
#[track_caller]
fn assert_within(inner: &Range<usize>, outer: &Range<usize>) {
    assert!(
        inner.start <= inner.end && outer.start <= inner.start && inner.end <= outer.end,
        "range {inner:?} is not within {outer:?}"
    );
}

/// Where `part` starts in `frame`; asserts that it is a slice of `frame` (zero-copy).
#[track_caller]
fn offset_in(frame: &[u8], part: &[u8]) -> usize {
    let base = frame.as_ptr() as usize;
    let at = part.as_ptr() as usize;
    assert!(
        at >= base && at + part.len() <= base + frame.len(),
        "slice does not borrow from the frame"
    );
    at - base
}

/// Asserts a non-empty borrowed slice lies inside `range` of `frame`; returns its offset.
#[track_caller]
fn assert_slice_in(frame: &[u8], part: &[u8], range: &Range<usize>) -> Option<usize> {
    if part.is_empty() {
        return None;
    }
    let at = offset_in(frame, part);
    assert_within(&(at..at + part.len()), range);
    Some(at)
}

fn walk_tags(mut h: u64, tags: TaggedFields<'_>, frame: &[u8], outer: &Range<usize>) -> u64 {
    let range = tags.range();
    assert_within(&range, outer);
    let bytes = tags.as_bytes();
    assert!(bytes.len() <= range.len());
    let elements_start = range.end - bytes.len();
    if let Some(at) = assert_slice_in(frame, bytes, &range) {
        assert_eq!(at, elements_start);
    }
    assert_eq!(tags.is_empty(), tags.iter().next().is_none());
    h = mix(h, tags.len() as u64);
    h = mix_range(h, &range);
    let mut next = elements_start;
    let mut count = 0;
    for field in tags.iter() {
        let r = field.range();
        assert_within(&r, &range);
        assert_eq!(r.start, next, "tagged fields tile their list");
        next = r.end;
        let data = field.data();
        if let Some(at) = assert_slice_in(frame, data, &r) {
            assert_eq!(at + data.len(), r.end, "data ends its tagged field");
        }
        h = mix(h, u64::from(field.tag()));
        h = mix_bytes(h, data);
        h = mix_range(h, &r);
        count += 1;
    }
    assert_eq!(count, tags.len());
    assert_eq!(next, range.end);
    assert_eq!(tags.iter().len(), tags.len());
    assert_eq!(tags.first().is_some(), !tags.is_empty());
    h
}

fn walk_int32s(mut h: u64, list: Int32List<'_>, frame: &[u8], outer: &Range<usize>) -> u64 {
    let range = list.range();
    assert_within(&range, outer);
    let len = list.len();
    let bytes = list.as_bytes();
    assert_eq!(bytes.len(), 4 * len);
    assert!(
        range.len() > bytes.len(),
        "the count prefix takes a byte at least"
    );
    if let Some(at) = assert_slice_in(frame, bytes, &range) {
        assert_eq!(at + bytes.len(), range.end);
    }
    assert_eq!(list.is_empty(), len == 0);
    h = mix(h, len as u64);
    h = mix_range(h, &range);
    let mut count = 0;
    for (i, v) in list.iter().enumerate() {
        assert_eq!(list.get(i), Some(v), "front iteration vs get({i})");
        h = mix(h, u64::from(v as u32));
        count += 1;
    }
    assert_eq!(count, len);
    let mut count = 0;
    for (i, v) in list.iter().rev().enumerate() {
        assert_eq!(list.get(len - 1 - i), Some(v), "back iteration vs get");
        h = mix(h, u64::from(v as u32) ^ 0x5555);
        count += 1;
    }
    assert_eq!(count, len);
    for i in 0..len {
        let v = list.get(i).expect("index below len");
        let raw = &bytes[4 * i..4 * i + 4];
        assert_eq!(v, i32::from_be_bytes([raw[0], raw[1], raw[2], raw[3]]));
        h = mix(h, u64::from(v as u32) ^ 0xaaaa);
    }
    assert_eq!(list.get(len), None);
    assert_eq!(list.get(usize::MAX), None);
    assert_eq!(list.iter().len(), len);
    h
}

/// The size prefix as written in the frame.
fn size_prefix(frame: &[u8]) -> usize {
    u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize
}

/// Touches every field of a request and folds them into a checksum; checks the invariants
/// on the way.
pub fn walk_request(request: &ElectLeadersRequest<'_>) -> u64 {
    let frame = request.frame();
    let whole = 0..frame.len();
    assert_eq!(request.size(), size_prefix(frame));
    let mut h = mix(SEED, request.size() as u64);

    let header = request.header();
    let header_range = header.range();
    assert_within(&header_range, &whole);
    assert_eq!(header_range.start, SIZE_PREFIX_LEN);
    assert_eq!(request.version(), header.api_version());
    assert_eq!(request.correlation_id(), header.correlation_id());
    h = mix(h, header.api_key() as u64);
    h = mix(h, header.api_version() as u64);
    h = mix(h, header.header_version() as u64);
    h = mix(h, u64::from(header.correlation_id() as u32));
    h = mix_range(h, &header_range);
    let client_id = header.client_id();
    if let Some(id) = client_id {
        assert_slice_in(frame, id, &header_range);
    }
    h = mix_opt_bytes(h, client_id);
    h = mix(h, u64::from(header.client_id_str().is_ok()));
    let header_tags = header.tagged_fields();
    h = walk_tags(h, header_tags, frame, &header_range);
    assert_eq!(header_tags.range().end, header_range.end);

    let body = request.body_range();
    assert_eq!(body.start, header_range.end);
    assert_eq!(body.end, frame.len());
    h = mix_range(h, &body);
    h = mix(h, request.election_type().0 as u64);

    match request.topic_partitions() {
        None => h = mix(h, 0x6e75_6c6c),
        Some(list) => {
            let range = list.range();
            assert_within(&range, &body);
            assert_eq!(
                range.start,
                body.start + usize::from(request.version() >= 1)
            );
            h = mix(h, list.len() as u64);
            h = mix_range(h, &range);
            assert_eq!(list.is_empty(), list.iter().next().is_none());
            let mut next = range.end - list.as_bytes().len();
            let mut count = 0;
            for entry in list.iter() {
                let r = entry.range();
                assert_within(&r, &range);
                assert_eq!(r.start, next, "entries tile their list");
                next = r.end;
                let topic = entry.topic();
                assert_slice_in(frame, topic, &r);
                h = mix_bytes(h, topic);
                h = mix(h, u64::from(entry.topic_str().is_ok()));
                h = walk_int32s(h, entry.partitions(), frame, &r);
                let tags = entry.tagged_fields();
                h = walk_tags(h, tags, frame, &r);
                assert_eq!(tags.range().end, r.end);
                h = mix_range(h, &r);
                count += 1;
            }
            assert_eq!(count, list.len());
            assert_eq!(next, range.end);
            assert_eq!(list.iter().len(), list.len());
            assert_eq!(list.first().is_some(), !list.is_empty());
        }
    }

    h = mix(h, u64::from(request.timeout_ms() as u32));
    let tags = request.tagged_fields();
    h = walk_tags(h, tags, frame, &body);
    assert_eq!(tags.range().end, frame.len());
    h
}

/// Touches every field of a response and folds them into a checksum; checks the invariants
/// on the way.
pub fn walk_response(response: &ElectLeadersResponse<'_>) -> u64 {
    let frame = response.frame();
    let whole = 0..frame.len();
    assert_eq!(response.size(), size_prefix(frame));
    let mut h = mix(SEED ^ 1, response.size() as u64);
    h = mix(h, response.version() as u64);

    let header = response.header();
    let header_range = header.range();
    assert_within(&header_range, &whole);
    assert_eq!(header_range.start, SIZE_PREFIX_LEN);
    assert_eq!(response.correlation_id(), header.correlation_id());
    h = mix(h, u64::from(header.correlation_id() as u32));
    h = mix_range(h, &header_range);
    let header_tags = header.tagged_fields();
    h = walk_tags(h, header_tags, frame, &header_range);
    assert_eq!(header_tags.range().end, header_range.end);

    let body = response.body_range();
    assert_eq!(body.start, header_range.end);
    assert_eq!(body.end, frame.len());
    h = mix_range(h, &body);
    h = mix(h, u64::from(response.throttle_time_ms() as u32));
    h = mix(h, response.error_code().0 as u64);

    let results = response.replica_election_results();
    let range = results.range();
    assert_within(&range, &body);
    h = mix(h, results.len() as u64);
    h = mix_range(h, &range);
    assert_eq!(results.is_empty(), results.iter().next().is_none());
    let mut next = range.end - results.as_bytes().len();
    let mut count = 0;
    for result in results.iter() {
        let r = result.range();
        assert_within(&r, &range);
        assert_eq!(r.start, next, "results tile their list");
        next = r.end;
        let topic = result.topic();
        assert_slice_in(frame, topic, &r);
        h = mix_bytes(h, topic);
        h = mix(h, u64::from(result.topic_str().is_ok()));

        let partitions = result.partition_result();
        let pr = partitions.range();
        assert_within(&pr, &r);
        h = mix(h, partitions.len() as u64);
        h = mix_range(h, &pr);
        let mut next_p = pr.end - partitions.as_bytes().len();
        let mut count_p = 0;
        for partition in partitions.iter() {
            let p = partition.range();
            assert_within(&p, &pr);
            assert_eq!(p.start, next_p, "partition results tile their list");
            next_p = p.end;
            h = mix(h, u64::from(partition.partition_id() as u32));
            h = mix(h, partition.error_code().0 as u64);
            h = mix(h, u64::from(partition.error_code().name().is_some()));
            let message = partition.error_message();
            if let Some(m) = message {
                assert_slice_in(frame, m, &p);
            }
            h = mix_opt_bytes(h, message);
            h = mix(h, u64::from(partition.error_message_str().is_ok()));
            let tags = partition.tagged_fields();
            h = walk_tags(h, tags, frame, &p);
            assert_eq!(tags.range().end, p.end);
            h = mix_range(h, &p);
            count_p += 1;
        }
        assert_eq!(count_p, partitions.len());
        assert_eq!(next_p, pr.end);
        assert_eq!(partitions.iter().len(), partitions.len());

        let tags = result.tagged_fields();
        h = walk_tags(h, tags, frame, &r);
        assert_eq!(tags.range().end, r.end);
        h = mix_range(h, &r);
        count += 1;
    }
    assert_eq!(count, results.len());
    assert_eq!(next, range.end);
    assert_eq!(results.first().is_some(), !results.is_empty());

    let tags = response.tagged_fields();
    h = walk_tags(h, tags, frame, &body);
    assert_eq!(tags.range().end, frame.len());
    h
}
