//! What mutation testing found untested in the writer: the words of every refusal, and a
//! parsed topic read as a source through its values (`partitions`) rather than its wire
//! bytes (`partitions_wire`), which the writer's fast path never asks for.

mod common;

use kafka_elect_leaders::VERSIONS;
use kafka_elect_leaders::{
    parse_request, ElectionType, EncodeError, EncodeErrorKind, EncodeRequest,
    EncodeTopicPartitions, TopicPartitions,
};

/// The exact text of each refusal: the field, then what was wrong.
#[test]
fn every_encode_error_says_what_and_where() {
    let cases: [(EncodeErrorKind, &str); 12] = [
        (
            EncodeErrorKind::BufferTooSmall { needed: 29 },
            "buffer too small: the frame needs 29 bytes",
        ),
        (
            EncodeErrorKind::UnsupportedVersion(3),
            "version 3 is not supported (ElectLeaders has 0-2)",
        ),
        (
            EncodeErrorKind::NonDefaultValue { version: 0 },
            "a non-default value cannot be written at version 0, which lacks the field",
        ),
        (
            EncodeErrorKind::TaggedFieldsUnsupported { version: 1 },
            "tagged fields were set, but version 1 has none",
        ),
        (
            EncodeErrorKind::StringTooLong { len: 32768 },
            "string length 32768 is over the limit of 32767",
        ),
        (
            EncodeErrorKind::TooManyElements { count: 2147483648 },
            "2147483648 elements are more than the count can say",
        ),
        (
            EncodeErrorKind::TaggedFieldOrder {
                tag: 5,
                previous: 5,
            },
            "tag 5 is repeated",
        ),
        (
            EncodeErrorKind::TaggedFieldOrder {
                tag: 4,
                previous: 5,
            },
            "tag 4 comes after tag 5",
        ),
        (
            EncodeErrorKind::TaggedFieldOrder {
                tag: 5,
                previous: 4,
            },
            "tag 5 comes after tag 4",
        ),
        (
            EncodeErrorKind::FrameTooLarge { size: 2147483648 },
            "frame of 2147483648 bytes is too large for its size prefix",
        ),
        (
            EncodeErrorKind::LengthMismatch {
                expected: 30,
                actual: 29,
            },
            "the frame is 29 bytes, not the 30 given",
        ),
        (
            EncodeErrorKind::InconsistentSource,
            "the source changed between measuring and writing",
        ),
    ];
    for (kind, text) in cases {
        assert_eq!(kind.to_string(), text, "{kind:?}");
        let error = EncodeError {
            kind,
            field: "TopicPartitions.Topic",
        };
        assert_eq!(
            error.to_string(),
            format!("TopicPartitions.Topic: {text}"),
            "{error:?}"
        );
    }
}

/// A parsed topic that hides its wire bytes, so the writer must go through `partitions`.
struct ByValue<'a>(TopicPartitions<'a>);

impl EncodeTopicPartitions for ByValue<'_> {
    fn topic(&self) -> &[u8] {
        EncodeTopicPartitions::topic(&self.0)
    }
    fn partitions(&self) -> impl Iterator<Item = i32> + '_ {
        EncodeTopicPartitions::partitions(&self.0)
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        EncodeTopicPartitions::tagged_fields(&self.0)
    }
}

/// A parsed request whose topics are read by value.
struct Request<'v, 'a>(&'v kafka_elect_leaders::ElectLeadersRequest<'a>);

impl EncodeRequest for Request<'_, '_> {
    fn correlation_id(&self) -> i32 {
        EncodeRequest::correlation_id(self.0)
    }
    fn client_id(&self) -> Option<&[u8]> {
        EncodeRequest::client_id(self.0)
    }
    fn header_tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        EncodeRequest::header_tagged_fields(self.0)
    }
    fn election_type(&self) -> ElectionType {
        EncodeRequest::election_type(self.0)
    }
    fn topic_partitions(
        &self,
    ) -> Option<impl Iterator<Item = impl EncodeTopicPartitions + '_> + '_> {
        self.0
            .topic_partitions()
            .map(|topics| topics.iter().map(ByValue))
    }
    fn timeout_ms(&self) -> i32 {
        EncodeRequest::timeout_ms(self.0)
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        EncodeRequest::tagged_fields(self.0)
    }
}

#[test]
fn a_parsed_topic_read_by_value_gives_its_partitions_and_encodes_the_same() {
    let mut topics_seen = 0;
    let mut partitions_seen = 0;
    for frame in common::load_requests() {
        let request = parse_request(&frame.bytes).expect(&frame.name);
        let version = request.version();
        for topic in request
            .topic_partitions()
            .into_iter()
            .flat_map(|t| t.iter())
        {
            let by_value: Vec<i32> = EncodeTopicPartitions::partitions(&topic).collect();
            let viewed: Vec<i32> = topic.partitions().iter().collect();
            assert_eq!(by_value, viewed, "{}", frame.name);
            let wire = EncodeTopicPartitions::partitions_wire(&topic).expect("a view has them");
            let from_wire: Vec<i32> = wire
                .chunks_exact(4)
                .map(|w| i32::from_be_bytes([w[0], w[1], w[2], w[3]]))
                .collect();
            assert_eq!(from_wire, viewed, "{}", frame.name);
            topics_seen += 1;
            partitions_seen += viewed.len();
        }
        let by_value = Request(&request);
        let len = by_value.encoded_len(version).expect(&frame.name);
        let mut out = vec![0u8; len];
        by_value.encode(version, &mut out).expect(&frame.name);
        let mut direct = vec![0u8; request.encoded_len(version).expect(&frame.name)];
        request.encode(version, &mut direct).expect(&frame.name);
        assert_eq!(out, direct, "{}", frame.name);
    }
    assert!(
        topics_seen >= 5 && partitions_seen >= 10,
        "{topics_seen} {partitions_seen}"
    );
}

/// Every value of the plain sources reaches the frame: the timeout, and tagged fields in
/// each of the response's four places; ids of a list longer than the appending writers'
/// batch of 64 come out in order through every way of encoding.
#[test]
fn plain_sources_carry_every_value() {
    use kafka_elect_leaders::{
        parse_response, ElectLeadersRequestData, ElectLeadersResponseData, EncodeResponse,
        ErrorCode, PartitionResultData, ReplicaElectionResultData, TaggedFieldData,
        TopicPartitionsData,
    };
    let ids: Vec<i32> = (0..200).map(|i| i * 7 - 3).collect();
    let topics = [TopicPartitionsData::new(b"long-list", &ids)];
    for version in VERSIONS {
        let request = ElectLeadersRequestData {
            topic_partitions: Some(&topics),
            timeout_ms: 1234,
            ..Default::default()
        };
        let mut frame = vec![0u8; request.encoded_len(version).unwrap()];
        request.encode(version, &mut frame).unwrap();
        let parsed = parse_request(&frame).unwrap();
        assert_eq!(parsed.timeout_ms(), 1234, "v{version}");
        let topic = parsed.topic_partitions().unwrap().first().unwrap();
        assert_eq!(
            topic.partitions().iter().collect::<Vec<_>>(),
            ids,
            "v{version}"
        );
        #[cfg(feature = "std")]
        {
            use kafka_elect_leaders::EncodeRequestExt;
            assert_eq!(request.encode_to_vec(version).unwrap(), frame, "v{version}");
        }
        #[cfg(feature = "bytes")]
        {
            use kafka_elect_leaders::EncodeRequestExt;
            let mut buf = bytes::BytesMut::new();
            request.encode_buf(version, &mut buf).unwrap();
            assert_eq!(&buf[..], &frame[..], "v{version}");
            let mut buf = bytes::BytesMut::new();
            request
                .encode_with_len(version, frame.len(), &mut buf)
                .unwrap();
            assert_eq!(&buf[..], &frame[..], "v{version}");
        }
    }

    let tag = |t: u32, data: &'static [u8]| [TaggedFieldData::new(t, data)];
    let (header, body, result, partition) =
        (tag(1, b"h"), tag(2, b"bo"), tag(3, b"res"), tag(4, b"part"));
    let partitions = [PartitionResultData {
        partition_id: 9,
        error_code: ErrorCode(0),
        error_message: None,
        tagged_fields: &partition,
    }];
    let results = [ReplicaElectionResultData {
        topic: b"t",
        partition_result: &partitions,
        tagged_fields: &result,
    }];
    let response = ElectLeadersResponseData {
        correlation_id: 5,
        header_tagged_fields: &header,
        replica_election_results: &results,
        tagged_fields: &body,
        ..Default::default()
    };
    let mut frame = vec![0u8; response.encoded_len(2).unwrap()];
    response.encode(2, &mut frame).unwrap();
    let parsed = parse_response(&frame, 2).unwrap();
    let tags = |fields: kafka_elect_leaders::TaggedFields<'_>| -> Vec<(u32, Vec<u8>)> {
        fields
            .iter()
            .map(|f| (f.tag(), f.data().to_vec()))
            .collect()
    };
    assert_eq!(tags(parsed.header().tagged_fields()), [(1, b"h".to_vec())]);
    assert_eq!(tags(parsed.tagged_fields()), [(2, b"bo".to_vec())]);
    let result = parsed.replica_election_results().first().unwrap();
    assert_eq!(tags(result.tagged_fields()), [(3, b"res".to_vec())]);
    let partition = result.partition_result().first().unwrap();
    assert_eq!(tags(partition.tagged_fields()), [(4, b"part".to_vec())]);
}
