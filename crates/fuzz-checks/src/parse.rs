//! parse_request / parse_response: arbitrary bytes as a stream of frames.

use super::*;

/// Arbitrary bytes as a stream of request frames: whatever parses must survive a walk, a
/// re-encode and a re-parse with the same values, and re-encoding must be stable.
/// Every version, and one past the last (which must be refused), from a selector's bits:
/// `n` modulo one more than the number of versions.
pub(crate) fn version_or_one_past(n: u8) -> i16 {
    MIN_VERSION + (u16::from(n) % (VERSION_COUNT + 1)) as i16
}

/// The `parse_request` target: the whole input as one request frame; no panic, and a
/// frame that parses is written back to the same bytes.
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

pub(crate) fn check_error(e: &kafka_elect_leaders::Error, len: usize) {
    assert!(
        !e.is_incomplete(),
        "a whole frame cannot be incomplete: {e}"
    );
    assert!(e.offset <= len, "{e} lies past the frame ({len} bytes)");
    let _ = e.to_string();
}

pub(crate) fn walk_tags(tags: TaggedFields<'_>, frame: usize) -> usize {
    let mut n = 0;
    for field in tags {
        assert!(field.range().end <= frame);
        n += field.data().len() + field.tag() as usize % 7;
    }
    assert_eq!(tags.iter().count(), tags.len());
    n
}

/// Touches every field, checks the lazy lists agree with themselves, then re-encodes.
pub(crate) fn request_round_trip(request: &ElectLeadersRequest<'_>) {
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

pub(crate) fn response_round_trip(response: &ElectLeadersResponse<'_>) {
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
