//! The writer against the parser: every corpus frame re-encoded from its parsed view comes
//! out byte for byte; writer-built messages of every version parse back to their values;
//! every short buffer is refused before anything is written.

use kafka_elect_leaders::VERSIONS;
use kafka_elect_leaders::{
    parse_request, parse_response, ElectLeadersRequestData, ElectLeadersResponseData, ElectionType,
    EncodeErrorKind, EncodeRequest, EncodeResponse, ErrorCode, PartitionResultData,
    ReplicaElectionResultData, TaggedFieldData, TopicPartitionsData,
};

fn corpus() -> Vec<(String, Vec<u8>)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/corpus");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "bin"))
        .collect();
    files.sort();
    assert!(files.len() >= 18, "corpus went missing: {files:?}");
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_str().unwrap().to_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect()
}

fn response_version(name: &str) -> i16 {
    name.strip_prefix("response-v").unwrap()[..1]
        .parse()
        .unwrap()
}

#[test]
fn every_corpus_frame_reencodes_byte_for_byte() {
    for (name, frame) in corpus() {
        let mut out = vec![0u8; frame.len() + 16];
        let (len, expected_len) = if name.starts_with("request") {
            let request = parse_request(&frame).unwrap();
            let v = request.version();
            let len = request.encode(v, &mut out).unwrap();
            (len, request.encoded_len(v).unwrap())
        } else {
            let v = response_version(&name);
            let response = parse_response(&frame, v).unwrap();
            let len = response.encode(v, &mut out).unwrap();
            (len, response.encoded_len(v).unwrap())
        };
        assert_eq!(len, expected_len, "{name}");
        assert_eq!(&out[..len], &frame[..], "{name}");
        // Untouched past the frame.
        assert!(out[len..].iter().all(|&b| b == 0), "{name}");
    }
}

#[test]
fn short_buffers_are_refused_before_writing() {
    for (name, frame) in corpus() {
        for short in 0..frame.len() {
            let mut out = vec![0xa5u8; short];
            let err = if name.starts_with("request") {
                let request = parse_request(&frame).unwrap();
                request.encode(request.version(), &mut out).unwrap_err()
            } else {
                let v = response_version(&name);
                parse_response(&frame, v)
                    .unwrap()
                    .encode(v, &mut out)
                    .unwrap_err()
            };
            assert_eq!(
                err.kind,
                EncodeErrorKind::BufferTooSmall {
                    needed: frame.len()
                },
                "{name} into {short} bytes"
            );
            assert!(
                out.iter().all(|&b| b == 0xa5),
                "{name}: wrote into a short buffer"
            );
        }
    }
}

#[test]
fn non_minimal_varints_come_out_minimal() {
    // request-v2-min with the TopicPartitions compact count 02 written as 82 00.
    let mut frame = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/corpus/request-v2-min.bin"
    ))
    .unwrap();
    let canonical = frame.clone();
    frame.splice(16..17, [0x82, 0x00]);
    frame[3] += 1;
    let request = parse_request(&frame).unwrap();
    let mut out = [0u8; 64];
    let len = request.encode(2, &mut out).unwrap();
    assert_eq!(&out[..len], &canonical[..]);
}

#[test]
fn request_data_round_trips_at_every_version() {
    let tags = [
        TaggedFieldData::new(1, b"x"),
        TaggedFieldData::new(300, b""),
    ];
    let long_name = [b'n'; 32767];
    let topics = [
        TopicPartitionsData::new(b"orders", &[0, 1, -1, i32::MIN, i32::MAX]),
        TopicPartitionsData::new(b"", &[]),
        TopicPartitionsData::new(&long_name, &[7]),
    ];
    for version in VERSIONS {
        for topic_partitions in [None, Some(&[][..]), Some(&topics[..])] {
            let flexible = version >= 2;
            let request = ElectLeadersRequestData {
                correlation_id: -5,
                client_id: if version == 1 {
                    None
                } else {
                    Some("clïent".as_bytes())
                },
                header_tagged_fields: if flexible { &tags } else { &[] },
                election_type: if version == 0 {
                    ElectionType::PREFERRED
                } else {
                    ElectionType(-3)
                },
                topic_partitions,
                timeout_ms: -1,
                tagged_fields: if flexible { &tags[1..] } else { &[] },
            };
            let len = request.encoded_len(version).unwrap();
            let mut buf = vec![0u8; len];
            assert_eq!(request.encode(version, &mut buf).unwrap(), len);
            let parsed = parse_request(&buf).unwrap();
            assert_eq!(parsed.version(), version);
            assert_eq!(parsed.correlation_id(), -5);
            assert_eq!(parsed.header().client_id(), request.client_id);
            assert_eq!(parsed.election_type(), request.election_type);
            assert_eq!(parsed.timeout_ms(), -1);
            let got: Option<Vec<(Vec<u8>, Vec<i32>)>> = parsed.topic_partitions().map(|l| {
                l.iter()
                    .map(|t| (t.topic().to_vec(), t.partitions().iter().collect()))
                    .collect()
            });
            let want: Option<Vec<(Vec<u8>, Vec<i32>)>> = topic_partitions.map(|l| {
                l.iter()
                    .map(|t| (t.topic.to_vec(), t.partitions.to_vec()))
                    .collect()
            });
            assert_eq!(got, want, "v{version}");
            let header_tags: Vec<_> = parsed
                .header()
                .tagged_fields()
                .iter()
                .map(|f| (f.tag(), f.data()))
                .collect();
            let want_tags: Vec<_> = request
                .header_tagged_fields
                .iter()
                .map(|f| (f.tag, f.data))
                .collect();
            assert_eq!(header_tags, want_tags);
            let body_tags: Vec<_> = parsed
                .tagged_fields()
                .iter()
                .map(|f| (f.tag(), f.data()))
                .collect();
            let want_tags: Vec<_> = request
                .tagged_fields
                .iter()
                .map(|f| (f.tag, f.data))
                .collect();
            assert_eq!(body_tags, want_tags);
        }
    }
}

/// (topic, [(partition id, error code, error message)])
type TopicResults = (Vec<u8>, Vec<(i32, i16, Option<Vec<u8>>)>);

#[test]
fn response_data_round_trips_at_every_version() {
    let partitions = [
        PartitionResultData {
            partition_id: 0,
            error_code: ErrorCode::NONE,
            error_message: None,
            tagged_fields: &[],
        },
        PartitionResultData {
            partition_id: -1,
            error_code: ErrorCode::ELECTION_NOT_NEEDED,
            error_message: Some(b""),
            tagged_fields: &[],
        },
        PartitionResultData {
            partition_id: 9,
            error_code: ErrorCode(999),
            error_message: Some("nö".as_bytes()),
            tagged_fields: &[],
        },
    ];
    let results = [
        ReplicaElectionResultData {
            topic: b"a",
            partition_result: &partitions,
            tagged_fields: &[],
        },
        ReplicaElectionResultData {
            topic: b"",
            partition_result: &[],
            tagged_fields: &[],
        },
    ];
    for version in VERSIONS {
        let response = ElectLeadersResponseData {
            correlation_id: 12,
            throttle_time_ms: 3,
            error_code: if version == 0 {
                ErrorCode::NONE
            } else {
                ErrorCode::UNKNOWN_SERVER_ERROR
            },
            replica_election_results: &results,
            ..Default::default()
        };
        let len = response.encoded_len(version).unwrap();
        let mut buf = vec![0u8; len];
        assert_eq!(response.encode(version, &mut buf).unwrap(), len);
        let parsed = parse_response(&buf, version).unwrap();
        assert_eq!(
            (parsed.correlation_id(), parsed.throttle_time_ms()),
            (12, 3)
        );
        assert_eq!(parsed.error_code(), response.error_code);
        let got: Vec<TopicResults> = parsed
            .replica_election_results()
            .iter()
            .map(|r| {
                let ps = r
                    .partition_result()
                    .iter()
                    .map(|p| {
                        (
                            p.partition_id(),
                            p.error_code().0,
                            p.error_message().map(<[u8]>::to_vec),
                        )
                    })
                    .collect();
                (r.topic().to_vec(), ps)
            })
            .collect();
        let want: Vec<TopicResults> = results
            .iter()
            .map(|r| {
                let ps = r
                    .partition_result
                    .iter()
                    .map(|p| {
                        (
                            p.partition_id,
                            p.error_code.0,
                            p.error_message.map(<[u8]>::to_vec),
                        )
                    })
                    .collect();
                (r.topic.to_vec(), ps)
            })
            .collect();
        assert_eq!(got, want, "v{version}");
    }
}

#[test]
fn writer_refuses_what_kafka_refuses() {
    let err = |r: &ElectLeadersRequestData, v| r.encoded_len(v).unwrap_err();
    let base = ElectLeadersRequestData::default();

    let unclean = ElectLeadersRequestData {
        election_type: ElectionType::UNCLEAN,
        ..base
    };
    let e = err(&unclean, 0);
    assert_eq!(
        (e.kind, e.field),
        (
            EncodeErrorKind::NonDefaultValue { version: 0 },
            "ElectionType"
        )
    );
    assert!(unclean.encoded_len(1).is_ok());

    let e = err(&base, 3);
    assert_eq!(e.kind, EncodeErrorKind::UnsupportedVersion(3));
    let e = err(&base, -1);
    assert_eq!(e.kind, EncodeErrorKind::UnsupportedVersion(-1));

    let tags = [TaggedFieldData::new(0, b"")];
    for v in 0..=1 {
        let tagged = ElectLeadersRequestData {
            tagged_fields: &tags,
            ..base
        };
        let e = err(&tagged, v);
        assert_eq!(
            (e.kind, e.field),
            (
                EncodeErrorKind::TaggedFieldsUnsupported { version: v },
                "_tagged_fields"
            )
        );
        let tagged = ElectLeadersRequestData {
            header_tagged_fields: &tags,
            ..base
        };
        assert_eq!(err(&tagged, v).field, "RequestHeader._tagged_fields");
    }

    let out_of_order = [TaggedFieldData::new(5, b""), TaggedFieldData::new(3, b"")];
    let e = err(
        &ElectLeadersRequestData {
            tagged_fields: &out_of_order,
            ..base
        },
        2,
    );
    assert_eq!(
        e.kind,
        EncodeErrorKind::TaggedFieldOrder {
            tag: 3,
            previous: 5
        }
    );
    let repeated = [TaggedFieldData::new(4, b""), TaggedFieldData::new(4, b"")];
    let e = err(
        &ElectLeadersRequestData {
            tagged_fields: &repeated,
            ..base
        },
        2,
    );
    assert_eq!(
        e.kind,
        EncodeErrorKind::TaggedFieldOrder {
            tag: 4,
            previous: 4
        }
    );
    let nested = [TopicPartitionsData {
        topic: b"t",
        partitions: &[],
        tagged_fields: &repeated,
    }];
    let e = err(
        &ElectLeadersRequestData {
            topic_partitions: Some(&nested),
            ..base
        },
        2,
    );
    assert_eq!(e.field, "TopicPartitions._tagged_fields");

    let long = vec![b'x'; 32768];
    let topics = [TopicPartitionsData::new(&long, &[])];
    for v in VERSIONS {
        let e = err(
            &ElectLeadersRequestData {
                topic_partitions: Some(&topics),
                ..base
            },
            v,
        );
        assert_eq!(
            (e.kind, e.field),
            (
                EncodeErrorKind::StringTooLong { len: 32768 },
                "TopicPartitions.Topic"
            )
        );
        let e = err(
            &ElectLeadersRequestData {
                client_id: Some(&long),
                ..base
            },
            v,
        );
        assert_eq!(e.field, "RequestHeader.ClientId");
    }

    let response = ElectLeadersResponseData {
        error_code: ErrorCode::NOT_CONTROLLER,
        ..Default::default()
    };
    let e = response.encoded_len(0).unwrap_err();
    assert_eq!(
        (e.kind, e.field),
        (EncodeErrorKind::NonDefaultValue { version: 0 }, "ErrorCode")
    );
    assert!(response.encoded_len(1).is_ok());
}

#[test]
fn error_response_follows_kafka() {
    for (name, frame) in corpus() {
        if !name.starts_with("request") {
            continue;
        }
        let request = parse_request(&frame).unwrap();
        let v = request.version();
        let refusal = request
            .error_response(ErrorCode::NOT_CONTROLLER, Some(b"go away"))
            .throttle_time_ms(5);
        let mut buf = vec![0u8; refusal.encoded_len(v).unwrap()];
        refusal.encode(v, &mut buf).unwrap();
        let response = parse_response(&buf, v).unwrap();
        assert_eq!(
            response.correlation_id(),
            request.correlation_id(),
            "{name}"
        );
        assert_eq!(response.throttle_time_ms(), 5);
        let top = if v == 0 {
            ErrorCode::NONE
        } else {
            ErrorCode::NOT_CONTROLLER
        };
        assert_eq!(response.error_code(), top, "{name}");
        match request.topic_partitions() {
            None => assert!(response.replica_election_results().is_empty(), "{name}"),
            Some(topics) => {
                assert_eq!(response.replica_election_results().len(), topics.len());
                for (result, topic) in response.replica_election_results().iter().zip(topics) {
                    assert_eq!(result.topic(), topic.topic());
                    let ids: Vec<i32> = result
                        .partition_result()
                        .iter()
                        .map(|p| p.partition_id())
                        .collect();
                    assert_eq!(ids, topic.partitions().iter().collect::<Vec<_>>());
                    for p in result.partition_result() {
                        assert_eq!(p.error_code(), ErrorCode::NOT_CONTROLLER);
                        assert_eq!(p.error_message(), Some(&b"go away"[..]));
                    }
                }
            }
        }
    }
}

#[test]
fn edits_change_only_what_they_say() {
    let frame = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/corpus/request-v2-tagged.bin"
    ))
    .unwrap();
    let request = parse_request(&frame).unwrap();
    let edit = request
        .edit()
        .correlation_id(1234)
        .client_id(None)
        .timeout_ms(5);
    let mut buf = vec![0u8; edit.encoded_len(2).unwrap()];
    edit.encode(2, &mut buf).unwrap();
    let out = parse_request(&buf).unwrap();
    assert_eq!(out.correlation_id(), 1234);
    assert_eq!(out.header().client_id(), None);
    assert_eq!(out.timeout_ms(), 5);
    // Everything else, tagged fields included, is as it was.
    assert_eq!(out.topic_partitions(), request.topic_partitions());
    assert_eq!(
        out.header().tagged_fields(),
        request.header().tagged_fields()
    );
    assert_eq!(out.tagged_fields(), request.tagged_fields());
    assert_eq!(out.election_type(), request.election_type());

    // Re-encoding a v2 request with tagged fields at v1 is refused, not silently dropped.
    assert_eq!(
        request.encoded_len(1).unwrap_err().kind,
        EncodeErrorKind::TaggedFieldsUnsupported { version: 1 }
    );

    let frame = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/corpus/response-v2-multi.bin"
    ))
    .unwrap();
    let response = parse_response(&frame, 2).unwrap();
    let edit = response
        .edit()
        .correlation_id(-7)
        .retain_topics(|r| r.topic() != b"orders");
    let mut buf = vec![0u8; edit.encoded_len(2).unwrap()];
    edit.encode(2, &mut buf).unwrap();
    let out = parse_response(&buf, 2).unwrap();
    assert_eq!(out.correlation_id(), -7);
    let kept: Vec<_> = out
        .replica_election_results()
        .iter()
        .map(|r| r.topic().to_vec())
        .collect();
    let want: Vec<_> = response
        .replica_election_results()
        .iter()
        .filter(|r| r.topic() != b"orders")
        .map(|r| r.topic().to_vec())
        .collect();
    assert_eq!(kept, want);
    assert!(kept.len() < response.replica_election_results().len());
}

/// A request source whose one topic's partitions are given by the test, to check what the
/// writer does with sources that lie about their lengths.
struct OneTopic {
    wire: Option<&'static [u8]>,
    values: &'static [i32],
    /// The length the values' iterator claims.
    claimed: usize,
    /// From this call of `partitions()` on, the last value is gone (and not claimed).
    shrink_from_call: usize,
    calls: std::cell::Cell<usize>,
}

impl OneTopic {
    fn new(wire: Option<&'static [u8]>, values: &'static [i32], claimed: usize) -> Self {
        OneTopic {
            wire,
            values,
            claimed,
            shrink_from_call: usize::MAX,
            calls: std::cell::Cell::new(0),
        }
    }
}

/// An iterator whose exact size hint is `claimed`, whatever it yields.
struct Claims<I> {
    inner: I,
    claimed: usize,
}

impl<I: Iterator<Item = i32>> Iterator for Claims<I> {
    type Item = i32;
    fn next(&mut self) -> Option<i32> {
        self.inner.next()
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.claimed, Some(self.claimed))
    }
}

impl kafka_elect_leaders::EncodeTopicPartitions for &OneTopic {
    fn topic(&self) -> &[u8] {
        b"t"
    }
    fn partitions(&self) -> impl Iterator<Item = i32> + '_ {
        let call = self.calls.get();
        self.calls.set(call + 1);
        let (values, claimed) = if call >= self.shrink_from_call {
            (&self.values[..self.values.len() - 1], self.claimed - 1)
        } else {
            (self.values, self.claimed)
        };
        Claims {
            inner: values.iter().copied(),
            claimed,
        }
    }
    fn partitions_wire(&self) -> Option<&[u8]> {
        self.wire
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        std::iter::empty()
    }
}

impl EncodeRequest for OneTopic {
    fn correlation_id(&self) -> i32 {
        1
    }
    fn client_id(&self) -> Option<&[u8]> {
        None
    }
    fn header_tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        std::iter::empty()
    }
    fn election_type(&self) -> ElectionType {
        ElectionType::PREFERRED
    }
    fn topic_partitions(
        &self,
    ) -> Option<impl Iterator<Item = impl kafka_elect_leaders::EncodeTopicPartitions + '_> + '_>
    {
        Some(std::iter::once(self))
    }
    fn timeout_ms(&self) -> i32 {
        5
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        std::iter::empty()
    }
}

#[test]
fn partitions_in_bulk_and_sources_that_lie() {
    let mut buf = [0u8; 64];
    for version in VERSIONS {
        // Wire bytes are copied as they are, and `partitions()` is not consulted.
        let source = OneTopic::new(Some(&[0, 0, 0, 7, 0xff, 0xff, 0xff, 0xfe]), &[1, 2, 3], 3);
        let len = source.encode(version, &mut buf).unwrap();
        assert_eq!(len, source.encoded_len(version).unwrap());
        let parsed = parse_request(&buf[..len]).unwrap();
        let topic = parsed.topic_partitions().unwrap().first().unwrap();
        assert_eq!(topic.partitions().iter().collect::<Vec<_>>(), [7, -2]);

        // Wire bytes that are not whole int32s.
        let ragged = OneTopic::new(Some(&[0, 0, 0, 7, 0]), &[], 0);
        let e = ragged.encode(version, &mut buf).unwrap_err();
        assert_eq!(
            (e.kind, e.field),
            (
                EncodeErrorKind::InconsistentSource,
                "TopicPartitions.Partitions"
            )
        );

        // An iterator that claims more values than it gives.
        let short = OneTopic::new(None, &[1, 2], 3);
        let e = short.encode(version, &mut buf).unwrap_err();
        assert_eq!(e.kind, EncodeErrorKind::InconsistentSource);
        // One that claims fewer: the frame holds the values it claimed, and is whole.
        let long = OneTopic::new(None, &[1, 2, 3], 2);
        let len = long.encode(version, &mut buf).unwrap();
        let parsed = parse_request(&buf[..len]).unwrap();
        let topic = parsed.topic_partitions().unwrap().first().unwrap();
        assert_eq!(topic.partitions().iter().collect::<Vec<_>>(), [1, 2]);
        // A source that loses a value after it was measured: the counts disagree.
        for shrink_from_call in 1..4 {
            let mut shifty = OneTopic::new(None, &[1, 2, 3], 3);
            shifty.shrink_from_call = shrink_from_call;
            let e = shifty.encode(version, &mut buf).unwrap_err();
            assert_eq!(e.kind, EncodeErrorKind::InconsistentSource);
        }
        // An honest one.
        let honest = OneTopic::new(None, &[4, 5, 6], 3);
        let len = honest.encode(version, &mut buf).unwrap();
        let parsed = parse_request(&buf[..len]).unwrap();
        let topic = parsed.topic_partitions().unwrap().first().unwrap();
        assert_eq!(topic.partitions().iter().collect::<Vec<_>>(), [4, 5, 6]);
    }
}
