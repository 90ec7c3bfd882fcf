//! Bounded work in the scanner: finding frames in arbitrary bytes costs work linear in the
//! input, even when thousands of candidate headers overlap and share one large body.
//!
//! Work is counted in operations (the bytes of the frames handed to the parser, which walks
//! each at most once), not in wall-clock time: the input doubled, the work at most doubles
//! plus a constant. Each input is also scanned the simple way (every candidate parsed) to
//! show that what the scanner remembers never changes what it finds.
#![cfg(feature = "scan")]

use std::ops::Range;

use kafka_elect_leaders::MAX_VERSION;
use kafka_elect_leaders::{parse_request, scan_requests, split_frame};
use kafka_elect_leaders_testkit::traps::chain_of_meeting_walks;

/// An unsigned varint.
fn uvarint(mut n: usize, out: &mut Vec<u8>) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// The body of a version-2 request with `topics` one-letter topics and no partitions:
/// four bytes a topic, and the parser walks every one of them.
fn large_body(topics: usize) -> Vec<u8> {
    let mut body = vec![0]; // ElectionType
    uvarint(topics + 1, &mut body);
    for _ in 0..topics {
        body.extend_from_slice(&[2, b'a', 1, 0]); // "a", no partitions, no tags
    }
    body.extend_from_slice(&60_000i32.to_be_bytes()); // TimeoutMs
    body.push(0); // tagged fields
    body
}

/// `headers` version-2 request headers, each one's client id holding all the headers after
/// it, so that every client id ends where the last one does; then one shared tag byte (the
/// headers' tagged fields, none) and `body`. `end(k, body)` says where the frame of header
/// `k` (0 the outermost) ends, given where the body lies; the input holds the body and as
/// many bytes after it as the frames claim.
fn nested(headers: usize, body: &[u8], end: impl Fn(usize, Range<usize>) -> usize) -> Vec<u8> {
    const PREFIX: usize = 14; // size, api key, version, correlation id, client id length
    let body_start = headers * PREFIX + 1;
    let body_range = body_start..body_start + body.len();
    let len = (0..headers)
        .map(|k| end(k, body_range.clone()))
        .max()
        .unwrap_or(0)
        .max(body_range.end);
    let mut input = Vec::with_capacity(len);
    for k in 0..headers {
        let start = k * PREFIX;
        let size = i32::try_from(end(k, body_range.clone()) - start - 4).unwrap();
        input.extend_from_slice(&size.to_be_bytes());
        input.extend_from_slice(&[0, 43, 0, 2]);
        input.extend_from_slice(&(k as i32).to_be_bytes());
        let client_id_len = i16::try_from((headers - 1 - k) * PREFIX).unwrap();
        input.extend_from_slice(&client_id_len.to_be_bytes());
    }
    input.push(0);
    input.extend_from_slice(body);
    input.resize(len, 0);
    input
}

/// The scanner's findings and the bytes it handed to the parser.
fn scan(input: &[u8]) -> (Vec<(usize, i32)>, u64) {
    let mut scanner = scan_requests(input);
    let found = scanner
        .by_ref()
        .map(|(at, r)| (at, r.correlation_id()))
        .collect();
    (found, scanner.stats().parsed_bytes)
}

/// What the scanner must find: every candidate parsed, in order, skipping those inside a
/// frame already found.
fn scan_every_candidate(input: &[u8]) -> Vec<(usize, i32)> {
    let mut found = Vec::new();
    let mut resume = 0;
    for at in 4..input.len().saturating_sub(3) {
        let start = at - 4;
        if input[at..at + 3] != [0, 43, 0]
            || i16::from(input[at + 3]) > MAX_VERSION
            || start < resume
        {
            continue;
        }
        let Ok((frame, _)) = split_frame(&input[start..]) else {
            continue;
        };
        if let Ok(request) = parse_request(frame) {
            resume = start + frame.len();
            found.push((start, request.correlation_id()));
        }
    }
    found
}

/// Scans the input built at `scale` and at twice that scale: the work at most doubles
/// (plus a constant), and both find what parsing every candidate finds.
fn assert_linear(build: impl Fn(usize) -> Vec<u8>, scale: usize) -> (Vec<(usize, i32)>, u64) {
    let small = build(scale);
    let large = build(2 * scale);
    assert!(large.len() >= 2 * small.len() - 64, "the input doubles");
    let (found_small, work_small) = scan(&small);
    let (found_large, work_large) = scan(&large);
    assert_eq!(found_small, scan_every_candidate(&small));
    assert_eq!(found_large, scan_every_candidate(&large));
    assert!(work_small > 0, "the body was parsed at least once");
    assert!(
        work_large <= 2 * work_small + 4096,
        "work {work_small} for {} bytes, {work_large} for {} bytes: more than doubled",
        small.len(),
        large.len()
    );
    (found_large, work_large)
}

#[test]
fn nested_headers_sharing_one_body_and_one_end_cost_one_parse() {
    // Every frame claims one byte more than the body: each walk stops a byte early.
    let (found, work) = assert_linear(
        |n| nested(n, &large_body(20 * n), |_, body| body.end + 1),
        100,
    );
    assert!(found.is_empty());
    // About one walk of the body, not one per header.
    let large_input = 200 * 14 + 1 + large_body(20 * 200).len() + 1;
    assert!(work < 2 * large_input as u64, "work {work}");
}

#[test]
fn nested_headers_with_frames_ending_past_the_body_cost_one_parse() {
    // Header k's frame ends k + 1 bytes past the body: each walk stops early, by a
    // different count.
    let (found, _) = assert_linear(
        |n| nested(n, &large_body(20 * n), |k, body| body.end + k + 1),
        100,
    );
    assert!(found.is_empty());
}

#[test]
fn nested_headers_with_frames_ending_inside_the_body_cost_one_parse() {
    // The last topic's name is long, and header k's frame ends inside it, k + 1 bytes in:
    // each walk runs out of bytes there, having walked every topic before it.
    let build = |n: usize| {
        let topics = 20 * n;
        let mut body = vec![0];
        uvarint(topics + 1, &mut body);
        for _ in 1..topics {
            body.extend_from_slice(&[2, b'a', 1, 0]);
        }
        uvarint(2 * n + 1, &mut body);
        let name_start = body.len();
        body.extend(std::iter::repeat(b'x').take(2 * n));
        body.extend_from_slice(&[1, 0]);
        body.extend_from_slice(&60_000i32.to_be_bytes());
        body.push(0);
        nested(n, &body, |k, body| body.start + name_start + k + 1)
    };
    let (found, _) = assert_linear(build, 100);
    assert!(found.is_empty());
}

#[test]
fn a_frame_among_the_nested_headers_is_still_found() {
    // The innermost header's frame ends exactly at the body's end: it parses, and the
    // outer ones, ending one byte later, do not. A valid frame after them is found too.
    let valid = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/corpus/request-v2-min.bin"
    ))
    .unwrap();
    let build = |n: usize| {
        let mut input = nested(n, &large_body(20 * n), |k, body| {
            body.end + usize::from(k + 1 != n)
        });
        input.extend_from_slice(&valid);
        input
    };
    let (found, _) = assert_linear(build, 100);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found[0], ((200 - 1) * 14, 200 - 1));
}

#[test]
fn a_work_limit_bounds_walks_that_meet_and_says_where_it_stopped() {
    let valid = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/corpus/request-v0.bin"
    ))
    .unwrap();
    let walked = |input: &[u8]| {
        let mut scanner = scan_requests(input);
        let found: Vec<usize> = scanner.by_ref().map(|(at, _)| at).collect();
        (found, scanner.stats().walked_bytes)
    };

    // Without a limit this input is the scanner's worst case: the input doubled, the work
    // about four times. (That it is, is what makes the rest of the test mean something.)
    let small = chain_of_meeting_walks(1000, &valid);
    let large = chain_of_meeting_walks(2000, &valid);
    let (found_small, work_small) = walked(&small);
    let (found_large, work_large) = walked(&large);
    eprintln!(
        "no limit: {} bytes walked {work_small}, {} bytes walked {work_large}",
        small.len(),
        large.len()
    );
    assert!(
        work_large > 3 * work_small && work_small > 100 * small.len() as u64,
        "work {work_small} for {} bytes, {work_large} for {}",
        small.len(),
        large.len()
    );
    assert_eq!(found_large, [0, large.len() - valid.len()]);
    assert_eq!(
        found_small,
        scan_every_candidate(&small)
            .iter()
            .map(|f| f.0)
            .collect::<Vec<_>>()
    );

    // With a limit of eight times the input, the work is at most that and one frame more,
    // the scan says where it stopped, and what it found before is what the full scan found.
    for input in [&small, &large] {
        let limit = 8 * input.len() as u64;
        let mut scanner = scan_requests(input).work_limit(limit);
        let found: Vec<usize> = scanner.by_ref().map(|(at, _)| at).collect();
        let work = scanner.stats().walked_bytes;
        assert!(
            work <= limit + input.len() as u64,
            "work {work}, limit {limit}"
        );
        let stopped = scanner.stopped_at().expect("the limit is reached");
        assert!(stopped > valid.len() && stopped < input.len() - valid.len());
        assert_eq!(found, [0], "found before {stopped}");
        assert!(scanner.next().is_none(), "nothing more after the stop");
    }

    // A limit the work does not reach changes nothing.
    let mut scanner = scan_requests(&small).work_limit(work_small);
    let found: Vec<usize> = scanner.by_ref().map(|(at, _)| at).collect();
    assert_eq!((found, scanner.stopped_at()), (found_small, None));
}

#[test]
fn a_response_scan_stops_at_its_work_limit() {
    let frame = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/corpus/response-v2-multi.bin"
    ))
    .unwrap();
    let id = kafka_elect_leaders::parse_response(&frame, 2)
        .unwrap()
        .correlation_id();
    let input = [&frame[..], b"other", &frame[..]].concat();
    let all: Vec<usize> = kafka_elect_leaders::scan_responses(&input, id, 2)
        .map(|(at, _)| at)
        .collect();
    assert_eq!(all, [0, frame.len() + 5]);
    let mut scanner = kafka_elect_leaders::scan_responses(&input, id, 2).work_limit(1);
    assert_eq!(scanner.next().map(|(at, _)| at), Some(0));
    assert!(scanner.next().is_none());
    assert_eq!(scanner.stopped_at(), Some(frame.len() + 5));
    assert_eq!(scanner.stats().walked_bytes, frame.len() as u64);
}
