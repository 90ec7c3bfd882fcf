//! The single-pass visitors (`visit_request`, `visit_response`) against the views, the
//! known-length encoder (`encode_exact`) against `encode`, and the `_str()` accessors.

mod common;

use common::{load_corpus, Kind};
use kafka_elect_leaders::VERSIONS;
use kafka_elect_leaders::{
    parse_request, parse_response, visit_request, visit_response, EncodeErrorKind, EncodeRequest,
    EncodeResponse, PartitionResult, ReplicaElectionResult, RequestVisitor, ResponseVisitor,
    TopicPartitions,
};

/// Records every entry a request walk hands over.
#[derive(Default)]
struct Topics<'a>(Vec<TopicPartitions<'a>>);

impl<'a> RequestVisitor<'a> for Topics<'a> {
    fn topic_partitions(&mut self, entry: TopicPartitions<'a>) {
        self.0.push(entry);
    }
}

/// Records every call a response walk makes, in order.
#[derive(Debug, PartialEq)]
enum Event<'a> {
    Begin(&'a [u8]),
    Partition(PartitionResult<'a>, std::ops::Range<usize>),
    End(ReplicaElectionResult<'a>, std::ops::Range<usize>),
}

#[derive(Default)]
struct Events<'a>(Vec<Event<'a>>);

impl<'a> ResponseVisitor<'a> for Events<'a> {
    fn replica_election_result(&mut self, topic: &'a [u8]) {
        self.0.push(Event::Begin(topic));
    }
    fn partition_result(&mut self, result: PartitionResult<'a>) {
        self.0.push(Event::Partition(result, result.range()));
    }
    fn end_replica_election_result(&mut self, result: ReplicaElectionResult<'a>) {
        self.0.push(Event::End(result, result.range()));
    }
}

/// What the views' iterators give, as the events a visitor should have seen.
fn expected_events<'a>(
    results: kafka_elect_leaders::List<'a, ReplicaElectionResult<'a>>,
) -> Vec<Event<'a>> {
    let mut events = Vec::new();
    for result in results {
        events.push(Event::Begin(result.topic()));
        for p in result.partition_result() {
            events.push(Event::Partition(p, p.range()));
        }
        events.push(Event::End(result, result.range()));
    }
    events
}

#[test]
fn visitors_see_what_the_iterators_give_and_return_the_same_view() {
    let corpus = load_corpus();
    let (mut requests, mut responses, mut partitions) = (0, 0, 0);
    for frame in &corpus {
        match frame.kind() {
            Kind::Request => {
                let view = parse_request(&frame.bytes).unwrap();
                let mut seen = Topics::default();
                let visited = visit_request(&frame.bytes, &mut seen).unwrap();
                assert_eq!(visited, view, "{}", frame.name);
                assert_eq!(visited.body_range(), view.body_range(), "{}", frame.name);
                let listed: Vec<_> = view.topic_partitions().into_iter().flatten().collect();
                assert_eq!(seen.0, listed, "{}", frame.name);
                let ranges =
                    |v: &[TopicPartitions<'_>]| v.iter().map(|t| t.range()).collect::<Vec<_>>();
                assert_eq!(ranges(&seen.0), ranges(&listed), "{}", frame.name);
                requests += 1;
            }
            Kind::Response { version } => {
                let view = parse_response(&frame.bytes, version).unwrap();
                let mut seen = Events::default();
                let visited = visit_response(&frame.bytes, version, &mut seen).unwrap();
                assert_eq!(visited, view, "{}", frame.name);
                let expected = expected_events(view.replica_election_results());
                partitions += expected
                    .iter()
                    .filter(|e| matches!(e, Event::Partition(..)))
                    .count();
                assert_eq!(seen.0, expected, "{}", frame.name);
                responses += 1;
            }
        }
    }
    assert!(requests >= 5 && responses >= 5 && partitions >= 5);
}

/// Every cut and every one-byte change of every sample frame: the visitor's walk fails
/// exactly as the parser does, and succeeds with the same view.
#[test]
fn visitors_fail_exactly_as_the_parsers() {
    let corpus = load_corpus();
    let mut failures = 0;
    for frame in &corpus {
        let mut variants: Vec<Vec<u8>> = (0..frame.bytes.len())
            .map(|n| frame.bytes[..n].to_vec())
            .collect();
        for i in 4..frame.bytes.len() {
            for value in [0x00, 0x01, 0x7f, 0x80, 0xff] {
                let mut v = frame.bytes.clone();
                v[i] = value;
                variants.push(v);
            }
        }
        for bytes in &variants {
            match frame.kind() {
                Kind::Request => {
                    let parsed = parse_request(bytes);
                    let visited = visit_request(bytes, &mut Topics::default());
                    failures += usize::from(parsed.is_err());
                    assert_eq!(visited, parsed, "{}: {bytes:02x?}", frame.name);
                }
                Kind::Response { version } => {
                    let parsed = parse_response(bytes, version);
                    let visited = visit_response(bytes, version, &mut Events::default());
                    failures += usize::from(parsed.is_err());
                    assert_eq!(visited, parsed, "{}: {bytes:02x?}", frame.name);
                }
            }
        }
    }
    assert!(failures > 100, "the variants must include malformed frames");
}

#[test]
fn encode_exact_writes_what_encode_writes_without_measuring_again() {
    let corpus = load_corpus();
    for frame in &corpus {
        let (len, version) = match frame.kind() {
            Kind::Request => {
                let view = parse_request(&frame.bytes).unwrap();
                (view.encoded_len(view.version()).unwrap(), view.version())
            }
            Kind::Response { version } => {
                let view = parse_response(&frame.bytes, version).unwrap();
                (view.encoded_len(version).unwrap(), version)
            }
        };
        let encode = |buf: &mut [u8], exact: Option<usize>| match frame.kind() {
            Kind::Request => {
                let view = parse_request(&frame.bytes).unwrap();
                match exact {
                    Some(len) => view.encode_exact(version, len, buf),
                    None => view.encode(version, buf),
                }
            }
            Kind::Response { .. } => {
                let view = parse_response(&frame.bytes, version).unwrap();
                match exact {
                    Some(len) => view.encode_exact(version, len, buf),
                    None => view.encode(version, buf),
                }
            }
        };
        let mut expected = vec![0xaa; len + 3];
        assert_eq!(encode(&mut expected, None).unwrap(), len);
        let mut out = vec![0xaa; len + 3];
        assert_eq!(encode(&mut out, Some(len)).unwrap(), len, "{}", frame.name);
        assert_eq!(out, expected, "{}", frame.name);
        assert_eq!(
            &out[..len],
            &frame.bytes[..],
            "{}: canonical samples",
            frame.name
        );

        // Too short a buffer: nothing written.
        let mut short = vec![0x55; len - 1];
        let e = encode(&mut short, Some(len)).unwrap_err();
        assert_eq!(e.kind, EncodeErrorKind::BufferTooSmall { needed: len });
        assert!(short.iter().all(|&b| b == 0x55), "{}", frame.name);

        // A wrong length: the error says the real one.
        for wrong in [len - 1, len + 1, 0, 3] {
            let mut buf = vec![0; len + 3];
            let e = encode(&mut buf, Some(wrong)).unwrap_err();
            assert_eq!(
                e.kind,
                EncodeErrorKind::LengthMismatch {
                    expected: wrong,
                    actual: len
                },
                "{}: {wrong}",
                frame.name
            );
        }
    }
}

#[test]
fn str_accessors_check_utf8_and_pass_null_and_empty() {
    let frame = common::load("response-v2-min.bin");
    let response = parse_response(&frame, 2).unwrap();
    let result = response.replica_election_results().first().unwrap();
    assert_eq!(result.topic_str(), Ok(""));
    let partition = result.partition_result().first().unwrap();
    assert_eq!(partition.error_message_str(), Ok(Some("")));

    let frame = common::load("request-v2-non-ascii.bin");
    let request = parse_request(&frame).unwrap();
    for topic in request.topic_partitions().unwrap() {
        assert_eq!(
            topic.topic_str().ok().map(str::as_bytes),
            std::str::from_utf8(topic.topic()).ok().map(str::as_bytes)
        );
    }
    let mut errors = 0;
    for frame in load_corpus() {
        if let Kind::Response { version } = frame.kind() {
            let response = parse_response(&frame.bytes, version).unwrap();
            for r in response.replica_election_results() {
                for p in r.partition_result() {
                    let expected = p.error_message().map(std::str::from_utf8).transpose();
                    assert_eq!(p.error_message_str(), expected);
                    errors += usize::from(p.error_message().is_none());
                }
            }
        }
    }
    assert!(errors > 0, "some sample has a null message");
}

/// The string and tagged-field parsers' fast paths (a one-byte compact length, no tagged
/// fields) and the general paths beside them: strings on both sides of the one-byte length
/// (126 bytes is the longest it holds), tagged fields present, and each fast path's errors
/// at their exact offsets.
#[test]
fn compact_lengths_on_both_sides_of_one_byte() {
    use kafka_elect_leaders::{
        ElectLeadersRequestData, ErrorKind, TaggedFieldData, TopicPartitionsData,
    };

    let names: Vec<Vec<u8>> = [0usize, 1, 125, 126, 127, 300]
        .iter()
        .map(|&n| (0..n).map(|i| b'a' + (i % 26) as u8).collect())
        .collect();
    let tags = [
        TaggedFieldData::new(3, b"xyz"),
        TaggedFieldData::new(9, b""),
    ];
    let partitions = [7, -1, i32::MAX];
    let mut entries: Vec<TopicPartitionsData> = names
        .iter()
        .map(|n| TopicPartitionsData::new(n, &partitions))
        .collect();
    entries[1].tagged_fields = &tags;
    for version in VERSIONS {
        for client_id in [None, Some(&names[0][..]), Some(&names[5][..])] {
            let request = ElectLeadersRequestData {
                client_id,
                topic_partitions: Some(&entries),
                ..Default::default()
            };
            let entries_here: Vec<_> = if version == 2 {
                entries.clone()
            } else {
                entries
                    .iter()
                    .map(|e| TopicPartitionsData::new(e.topic, e.partitions))
                    .collect()
            };
            let request = ElectLeadersRequestData {
                topic_partitions: Some(&entries_here),
                ..request
            };
            let len = request.encoded_len(version).unwrap();
            let mut frame = vec![0; len];
            request.encode(version, &mut frame).unwrap();
            let mut seen = Topics::default();
            let view = visit_request(&frame, &mut seen).unwrap();
            assert_eq!(view, parse_request(&frame).unwrap());
            assert_eq!(view.header().client_id(), client_id);
            let topics = view.topic_partitions().unwrap();
            assert_eq!(topics.len(), names.len());
            for ((topic, visited), name) in topics.iter().zip(&seen.0).zip(&names) {
                assert_eq!(topic, *visited);
                assert_eq!(topic.topic(), &name[..], "v{version}");
                assert!(topic.partitions().iter().eq(partitions));
            }
            let tagged: Vec<_> = topics
                .iter()
                .nth(1)
                .unwrap()
                .tagged_fields()
                .iter()
                .map(|t| (t.tag(), t.data()))
                .collect();
            let want: &[(u32, &[u8])] = if version == 2 {
                &[(3, b"xyz"), (9, b"")]
            } else {
                &[]
            };
            assert_eq!(tagged, want, "v{version}");
        }
    }

    // v2, no client id, one topic "ab" with one partition: the topic's compact length is
    // at offset 17 (size 4, header 2 + 2 + 4 + 2 + 1, election type, topic count), and 13
    // bytes follow it.
    let one = [TopicPartitionsData::new(b"ab", &[1])];
    let request = ElectLeadersRequestData {
        client_id: None,
        topic_partitions: Some(&one),
        ..Default::default()
    };
    let mut frame = vec![0; request.encoded_len(2).unwrap()];
    request.encode(2, &mut frame).unwrap();
    assert_eq!(frame.len(), 31);
    assert_eq!(&frame[17..20], &[3, b'a', b'b']);
    let cases = [
        (0x00, ErrorKind::UnexpectedNull),
        (0x7f, ErrorKind::UnexpectedEnd { needed: 126 - 13 }),
        (0x0f, ErrorKind::UnexpectedEnd { needed: 14 - 13 }),
    ];
    for (byte, kind) in cases {
        let mut bad = frame.clone();
        bad[17] = byte;
        for e in [
            parse_request(&bad).unwrap_err(),
            visit_request(&bad, &mut Topics::default()).unwrap_err(),
        ] {
            assert_eq!(e.kind, kind, "{byte:#04x}");
            assert_eq!((e.field, e.offset), ("TopicPartitions.Topic", 17));
        }
    }
    // A length one short: the topic is "a", and the partition count is then read from 'b'
    // (97 partitions, more than the 10 bytes left can hold).
    let mut bad = frame.clone();
    bad[17] = 2;
    let e = parse_request(&bad).unwrap_err();
    assert_eq!((e.field, e.offset), ("TopicPartitions.Partitions", 19));
    assert!(
        matches!(e.kind, ErrorKind::CountTooLarge { count: 97, .. }),
        "{e:?}"
    );
}
