//! Every value an edit can change, changed on every corpus frame and read back: the edit's
//! own value where one was set, the parsed frame's everywhere else (tagged fields of the
//! header and the body included). And iterators that know how many elements remain at
//! every step.

mod common;

use common::{load_corpus, Kind};
use kafka_elect_leaders::{
    parse_request, parse_response, ElectionType, EncodeRequest, EncodeResponse, ErrorCode,
};

fn encode_request(source: &impl EncodeRequest, version: i16) -> Vec<u8> {
    let mut out = vec![0; source.encoded_len(version).unwrap()];
    assert_eq!(source.encode(version, &mut out), Ok(out.len()));
    out
}

fn encode_response(source: &impl EncodeResponse, version: i16) -> Vec<u8> {
    let mut out = vec![0; source.encoded_len(version).unwrap()];
    assert_eq!(source.encode(version, &mut out), Ok(out.len()));
    out
}

#[test]
fn request_edits_change_what_they_set_and_keep_the_rest() {
    let mut seen = 0;
    for frame in load_corpus() {
        if frame.kind() != Kind::Request {
            continue;
        }
        let ctx = frame.name.as_str();
        let original = parse_request(&frame.bytes).unwrap();
        let v = original.version();
        // v0 carries PREFERRED only.
        let election = if v == 0 || original.election_type() == ElectionType::UNCLEAN {
            ElectionType::PREFERRED
        } else {
            ElectionType::UNCLEAN
        };
        let client_id: Option<&[u8]> = match original.header().client_id() {
            Some(b"edited") => None,
            _ => Some(b"edited"),
        };
        let edit = original
            .edit()
            .correlation_id(original.correlation_id().wrapping_add(1))
            .client_id(client_id)
            .election_type(election)
            .timeout_ms(original.timeout_ms().wrapping_add(7));
        let bytes = encode_request(&edit, v);
        let edited = parse_request(&bytes).unwrap();
        assert_eq!(
            edited.correlation_id(),
            original.correlation_id().wrapping_add(1),
            "{ctx}"
        );
        assert_eq!(edited.header().client_id(), client_id, "{ctx}");
        assert_ne!(edited.header().client_id(), original.header().client_id());
        assert_eq!(edited.election_type(), election, "{ctx}");
        if v > 0 {
            assert_ne!(edited.election_type(), original.election_type(), "{ctx}");
        }
        assert_eq!(
            edited.timeout_ms(),
            original.timeout_ms().wrapping_add(7),
            "{ctx}"
        );
        // The rest is the original's.
        assert_eq!(
            edited.topic_partitions(),
            original.topic_partitions(),
            "{ctx}"
        );
        assert_eq!(edited.tagged_fields(), original.tagged_fields(), "{ctx}");
        assert_eq!(
            edited.header().tagged_fields(),
            original.header().tagged_fields(),
            "{ctx}"
        );
        // An edit that sets nothing re-emits the frame's values.
        let again = encode_request(&original.edit(), v);
        let same = parse_request(&again).unwrap();
        assert_eq!(same, original, "{ctx}");
        seen += 1;
    }
    assert!(seen >= 9);
}

#[test]
fn response_edits_change_what_they_set_and_keep_the_rest() {
    let mut tagged = 0;
    for frame in load_corpus() {
        let Kind::Response { version } = frame.kind() else {
            continue;
        };
        let ctx = frame.name.as_str();
        let original = parse_response(&frame.bytes, version).unwrap();
        // v0 carries no top-level error code.
        let code = if version == 0 {
            ErrorCode::NONE
        } else if original.error_code() == ErrorCode(31) {
            ErrorCode(41)
        } else {
            ErrorCode(31)
        };
        let edit = original
            .edit()
            .correlation_id(original.correlation_id() ^ 0x55)
            .throttle_time_ms(original.throttle_time_ms().wrapping_add(3))
            .error_code(code);
        let bytes = encode_response(&edit, version);
        let edited = parse_response(&bytes, version).unwrap();
        assert_eq!(
            edited.correlation_id(),
            original.correlation_id() ^ 0x55,
            "{ctx}"
        );
        assert_eq!(
            edited.throttle_time_ms(),
            original.throttle_time_ms().wrapping_add(3),
            "{ctx}"
        );
        assert_eq!(edited.error_code(), code, "{ctx}");
        if version > 0 {
            assert_ne!(edited.error_code(), original.error_code(), "{ctx}");
        }
        assert_eq!(
            edited.replica_election_results(),
            original.replica_election_results(),
            "{ctx}"
        );
        assert_eq!(edited.tagged_fields(), original.tagged_fields(), "{ctx}");
        assert_eq!(
            edited.header().tagged_fields(),
            original.header().tagged_fields(),
            "{ctx}"
        );
        tagged += usize::from(
            !original.tagged_fields().is_empty() || !original.header().tagged_fields().is_empty(),
        );
        let again = encode_response(&original.edit(), version);
        let same = parse_response(&again, version).unwrap();
        assert_eq!(same, original, "{ctx}");
    }
    assert!(
        tagged > 0,
        "no corpus response carries tagged fields to keep"
    );
}

#[test]
fn iterators_know_what_remains_at_every_step() {
    for frame in load_corpus() {
        let ctx = frame.name.as_str();
        match frame.kind() {
            Kind::Request => {
                let request = parse_request(&frame.bytes).unwrap();
                let Some(topics) = request.topic_partitions() else {
                    continue;
                };
                let mut it = topics.iter();
                for left in (0..=topics.len()).rev() {
                    assert_eq!(it.len(), left, "{ctx}");
                    assert_eq!(it.size_hint(), (left, Some(left)), "{ctx}");
                    if let Some(topic) = it.next() {
                        let partitions = topic.partitions();
                        let mut p = partitions.iter();
                        for remaining in (0..=partitions.len()).rev() {
                            assert_eq!(p.len(), remaining, "{ctx}");
                            p.next();
                        }
                    }
                }
                assert!(it.next().is_none());
            }
            Kind::Response { version } => {
                let response = parse_response(&frame.bytes, version).unwrap();
                let results = response.replica_election_results();
                let mut it = results.iter();
                for left in (0..=results.len()).rev() {
                    assert_eq!(it.len(), left, "{ctx}");
                    if let Some(result) = it.next() {
                        let partitions = result.partition_result();
                        let mut p = partitions.iter();
                        for remaining in (0..=partitions.len()).rev() {
                            assert_eq!(p.size_hint(), (remaining, Some(remaining)), "{ctx}");
                            p.next();
                        }
                    }
                }
            }
        }
    }
}
