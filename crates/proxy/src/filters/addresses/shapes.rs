//! The answers whose addresses sit behind data the rewrite does not read (Produce, Fetch,
//! ShareFetch, ShareAcknowledge and DescribeQuorum), their shapes version by version, and
//! the scan that checks an answer against its shape and finds its lists of addresses.
//!
//! The scan steps over every field without decoding it and allocates nothing unless it
//! finds a list of addresses (then one entry per list found). It checks what
//! kafka-protocol 0.18 does not: every array's count against the bytes that remain
//! (kafka-protocol reserves a vector of the count read off the wire before it reads an
//! entry), and every tagged field it knows the shape of against the size that field
//! declares (kafka-protocol reads a known tagged field by its shape and ignores its size).
//! An answer the scan accepts is one kafka-protocol reads as the scan did, so that the
//! entries of a list found can be handed to it.
//!
//! Not here: what becomes of the addresses (`endpoints`).

use self::Field::{Addresses, Array, Bytes, Fixed, Struct};
use crate::core::response_due::Reader;

/// Produce's API key.
pub const PRODUCE: i16 = 0;
/// Fetch's API key.
pub const FETCH: i16 = 1;
/// DescribeQuorum's API key.
pub const DESCRIBE_QUORUM: i16 = 55;
/// ShareFetch's API key.
pub const SHARE_FETCH: i16 = 78;
/// ShareAcknowledge's API key.
pub const SHARE_ACKNOWLEDGE: i16 = 79;

/// The first Produce version with node endpoints (KIP-951).
const PRODUCE_ENDPOINTS: i16 = 10;
/// The first Produce version that names a topic by its id rather than its name.
const PRODUCE_TOPIC_ID: i16 = 13;
/// The newest Produce version whose shape is known (kafka-protocol 0.18's).
const PRODUCE_NEWEST: i16 = 13;
/// The first Fetch version with node endpoints (KIP-951).
const FETCH_ENDPOINTS: i16 = 16;
/// The newest Fetch version whose shape is known (kafka-protocol 0.18's).
const FETCH_NEWEST: i16 = 18;
/// The ShareFetch and ShareAcknowledge version whose shape is known (kafka-protocol 0.18's
/// only: the first, v0, was Kafka 4.0's early access to share groups).
const SHARE_KNOWN: i16 = 1;
/// The first DescribeQuorum version with the controllers' listeners (KIP-853).
const QUORUM_NODES: i16 = 2;
/// The newest DescribeQuorum version whose shape is known (kafka-protocol 0.18's).
const QUORUM_NEWEST: i16 = 2;

/// One field of a flexible struct, as the scan steps over it.
#[derive(Clone, Copy, Debug)]
pub(super) enum Field {
    /// `n` bytes: an integer, a UUID.
    Fixed(usize),
    /// A compact (nullable) string or byte string (records): its length plus one as an
    /// unsigned varint (0: null), then its bytes.
    Bytes,
    /// A struct in place.
    Struct(&'static Shape),
    /// A compact (nullable) array of structs: its count plus one (0: null), then each.
    Array(&'static Shape),
    /// An array of entries that carry addresses, which the scan reports ([`Listed`]).
    Addresses(&'static Shape),
}

/// A flexible struct: its fields in order, then its tagged fields, of which those listed
/// in `tagged` have a shape that kafka-protocol reads (the others it keeps as bytes).
#[derive(Debug)]
pub(super) struct Shape {
    fields: &'static [Field],
    tagged: &'static [(u32, Field)],
}

impl Shape {
    /// The fewest bytes a struct of this shape takes: each field at its smallest (an
    /// empty or null string or array), and no tagged field.
    fn min_len(&self) -> usize {
        1 + self
            .fields
            .iter()
            .map(|field| match field {
                Field::Fixed(n) => *n,
                Field::Struct(shape) => shape.min_len(),
                Field::Bytes | Field::Array(_) | Field::Addresses(_) => 1,
            })
            .sum::<usize>()
    }
}

/// A struct of these fields and no known tagged field.
const fn plain(fields: &'static [Field]) -> Shape {
    Shape {
        fields,
        tagged: &[],
    }
}

/// The response header v1 (of every flexible answer here): the correlation id, tagged
/// fields.
static HEADER: Shape = plain(&[Fixed(4)]);

// NodeEndpoint (Produce v10+, Fetch v16+, ShareFetch, ShareAcknowledge):
//   NodeId int32, Host compact string, Port int32, Rack compact nullable string.
static NODE_ENDPOINT: Shape = plain(&[Fixed(4), Bytes, Fixed(4), Bytes]);
// LeaderIdAndEpoch: LeaderId int32, LeaderEpoch int32.
static LEADER: Shape = plain(&[Fixed(4), Fixed(4)]);

// ProduceResponse v10-v13:
//   Responses [TopicProduceResponse], ThrottleTimeMs int32;
//   tagged: 0 NodeEndpoints [NodeEndpoint].
// TopicProduceResponse: Name compact string (v10-v12) or TopicId uuid (v13+),
//   PartitionResponses [PartitionProduceResponse].
// PartitionProduceResponse: Index int32, ErrorCode int16, BaseOffset int64,
//   LogAppendTimeMs int64, LogStartOffset int64, RecordErrors [BatchIndexAndErrorMessage],
//   ErrorMessage compact nullable string; tagged: 0 CurrentLeader LeaderIdAndEpoch.
// BatchIndexAndErrorMessage: BatchIndex int32, BatchIndexErrorMessage compact nullable
//   string.
static RECORD_ERROR: Shape = plain(&[Fixed(4), Bytes]);
static PRODUCE_PARTITION: Shape = Shape {
    fields: &[
        Fixed(4),
        Fixed(2),
        Fixed(8),
        Fixed(8),
        Fixed(8),
        Array(&RECORD_ERROR),
        Bytes,
    ],
    tagged: &[(0, Struct(&LEADER))],
};
static PRODUCE_TOPIC_BY_NAME: Shape = plain(&[Bytes, Array(&PRODUCE_PARTITION)]);
static PRODUCE_TOPIC_BY_ID: Shape = plain(&[Fixed(16), Array(&PRODUCE_PARTITION)]);
static PRODUCE_ANSWER_BY_NAME: Shape = Shape {
    fields: &[Array(&PRODUCE_TOPIC_BY_NAME), Fixed(4)],
    tagged: &[(0, Addresses(&NODE_ENDPOINT))],
};
static PRODUCE_ANSWER_BY_ID: Shape = Shape {
    fields: &[Array(&PRODUCE_TOPIC_BY_ID), Fixed(4)],
    tagged: &[(0, Addresses(&NODE_ENDPOINT))],
};

// FetchResponse v16-v18:
//   ThrottleTimeMs int32, ErrorCode int16, SessionId int32, Responses [FetchableTopicResponse];
//   tagged: 0 NodeEndpoints [NodeEndpoint].
// FetchableTopicResponse: TopicId uuid, Partitions [PartitionData].
// PartitionData: PartitionIndex int32, ErrorCode int16, HighWatermark int64,
//   LastStableOffset int64, LogStartOffset int64, AbortedTransactions [AbortedTransaction]
//   (nullable), PreferredReadReplica int32, Records compact nullable bytes;
//   tagged: 0 DivergingEpoch EpochEndOffset, 1 CurrentLeader LeaderIdAndEpoch,
//   2 SnapshotId SnapshotId.
// AbortedTransaction: ProducerId int64, FirstOffset int64.
// EpochEndOffset: Epoch int32, EndOffset int64. SnapshotId: EndOffset int64, Epoch int32.
static ABORTED_TRANSACTION: Shape = plain(&[Fixed(8), Fixed(8)]);
static EPOCH_END_OFFSET: Shape = plain(&[Fixed(4), Fixed(8)]);
static SNAPSHOT_ID: Shape = plain(&[Fixed(8), Fixed(4)]);
static FETCH_PARTITION: Shape = Shape {
    fields: &[
        Fixed(4),
        Fixed(2),
        Fixed(8),
        Fixed(8),
        Fixed(8),
        Array(&ABORTED_TRANSACTION),
        Fixed(4),
        Bytes,
    ],
    tagged: &[
        (0, Struct(&EPOCH_END_OFFSET)),
        (1, Struct(&LEADER)),
        (2, Struct(&SNAPSHOT_ID)),
    ],
};
static FETCH_TOPIC: Shape = plain(&[Fixed(16), Array(&FETCH_PARTITION)]);
static FETCH_ANSWER: Shape = Shape {
    fields: &[Fixed(4), Fixed(2), Fixed(4), Array(&FETCH_TOPIC)],
    tagged: &[(0, Addresses(&NODE_ENDPOINT))],
};

// ShareFetchResponse v1:
//   ThrottleTimeMs int32, ErrorCode int16, ErrorMessage compact nullable string,
//   AcquisitionLockTimeoutMs int32, Responses [ShareFetchableTopicResponse],
//   NodeEndpoints [NodeEndpoint].
// ShareFetchableTopicResponse: TopicId uuid, Partitions [PartitionData].
// PartitionData: PartitionIndex int32, ErrorCode int16, ErrorMessage compact nullable
//   string, AcknowledgeErrorCode int16, AcknowledgeErrorMessage compact nullable string,
//   CurrentLeader LeaderIdAndEpoch, Records compact nullable bytes,
//   AcquiredRecords [AcquiredRecords].
// AcquiredRecords: FirstOffset int64, LastOffset int64, DeliveryCount int16.
static ACQUIRED_RECORDS: Shape = plain(&[Fixed(8), Fixed(8), Fixed(2)]);
static SHARE_FETCH_PARTITION: Shape = plain(&[
    Fixed(4),
    Fixed(2),
    Bytes,
    Fixed(2),
    Bytes,
    Struct(&LEADER),
    Bytes,
    Array(&ACQUIRED_RECORDS),
]);
static SHARE_FETCH_TOPIC: Shape = plain(&[Fixed(16), Array(&SHARE_FETCH_PARTITION)]);
static SHARE_FETCH_ANSWER: Shape = plain(&[
    Fixed(4),
    Fixed(2),
    Bytes,
    Fixed(4),
    Array(&SHARE_FETCH_TOPIC),
    Addresses(&NODE_ENDPOINT),
]);

// ShareAcknowledgeResponse v1:
//   ThrottleTimeMs int32, ErrorCode int16, ErrorMessage compact nullable string,
//   Responses [ShareAcknowledgeTopicResponse], NodeEndpoints [NodeEndpoint].
// ShareAcknowledgeTopicResponse: TopicId uuid, Partitions [PartitionData].
// PartitionData: PartitionIndex int32, ErrorCode int16, ErrorMessage compact nullable
//   string, CurrentLeader LeaderIdAndEpoch.
static SHARE_ACKNOWLEDGE_PARTITION: Shape = plain(&[Fixed(4), Fixed(2), Bytes, Struct(&LEADER)]);
static SHARE_ACKNOWLEDGE_TOPIC: Shape = plain(&[Fixed(16), Array(&SHARE_ACKNOWLEDGE_PARTITION)]);
static SHARE_ACKNOWLEDGE_ANSWER: Shape = plain(&[
    Fixed(4),
    Fixed(2),
    Bytes,
    Array(&SHARE_ACKNOWLEDGE_TOPIC),
    Addresses(&NODE_ENDPOINT),
]);

// DescribeQuorumResponse v2:
//   ErrorCode int16, ErrorMessage compact nullable string, Topics [TopicData], Nodes [Node].
// TopicData: TopicName compact string, Partitions [PartitionData].
// PartitionData: PartitionIndex int32, ErrorCode int16, ErrorMessage compact nullable
//   string, LeaderId int32, LeaderEpoch int32, HighWatermark int64,
//   CurrentVoters [ReplicaState], Observers [ReplicaState].
// ReplicaState: ReplicaId int32, ReplicaDirectoryId uuid, LogEndOffset int64,
//   LastFetchTimestamp int64, LastCaughtUpTimestamp int64.
// Node: NodeId int32, Listeners [Listener]. Listener: Name compact string, Host compact
//   string, Port uint16.
static REPLICA_STATE: Shape = plain(&[Fixed(4), Fixed(16), Fixed(8), Fixed(8), Fixed(8)]);
static QUORUM_PARTITION: Shape = plain(&[
    Fixed(4),
    Fixed(2),
    Bytes,
    Fixed(4),
    Fixed(4),
    Fixed(8),
    Array(&REPLICA_STATE),
    Array(&REPLICA_STATE),
]);
static QUORUM_TOPIC: Shape = plain(&[Bytes, Array(&QUORUM_PARTITION)]);
static LISTENER: Shape = plain(&[Bytes, Bytes, Fixed(2)]);
static QUORUM_NODE: Shape = plain(&[Fixed(4), Array(&LISTENER)]);
static DESCRIBE_QUORUM_ANSWER: Shape = plain(&[
    Fixed(2),
    Bytes,
    Array(&QUORUM_TOPIC),
    Addresses(&QUORUM_NODE),
]);

/// What an answer to a request of an API key at a version carries, as far as the
/// rewrite here goes. Every version rule of these answers is in [`carried`].
#[derive(Debug)]
pub(super) enum Carried {
    /// No address here (another API, or a version before its addresses): not read.
    Nothing,
    /// Addresses perhaps, in a version newer than the shapes known here: not read.
    Newer,
    /// Addresses, in answers of this shape.
    In(&'static Shape),
}

/// The newest version of `api_key` whose answer's shape is known here, for the answers
/// read here: a newer one would carry its addresses unread.
pub(super) fn newest_shape(api_key: i16) -> Option<i16> {
    match api_key {
        PRODUCE => Some(PRODUCE_NEWEST),
        FETCH => Some(FETCH_NEWEST),
        SHARE_FETCH | SHARE_ACKNOWLEDGE => Some(SHARE_KNOWN),
        DESCRIBE_QUORUM => Some(QUORUM_NEWEST),
        _ => None,
    }
}

/// What an answer of `api_key` at `api_version` carries.
pub(super) fn carried(api_key: i16, api_version: i16) -> Carried {
    let (first, newest) = match api_key {
        PRODUCE => (PRODUCE_ENDPOINTS, PRODUCE_NEWEST),
        FETCH => (FETCH_ENDPOINTS, FETCH_NEWEST),
        SHARE_FETCH | SHARE_ACKNOWLEDGE => (SHARE_KNOWN, SHARE_KNOWN),
        DESCRIBE_QUORUM => (QUORUM_NODES, QUORUM_NEWEST),
        _ => return Carried::Nothing,
    };
    if api_version > newest {
        return Carried::Newer;
    }
    if api_version < first {
        // ShareFetch and ShareAcknowledge v0 (early access) carried node endpoints too,
        // in a shape not known here.
        return match api_key {
            SHARE_FETCH | SHARE_ACKNOWLEDGE if api_version >= 0 => Carried::Newer,
            _ => Carried::Nothing,
        };
    }
    Carried::In(match api_key {
        PRODUCE if api_version >= PRODUCE_TOPIC_ID => &PRODUCE_ANSWER_BY_ID,
        PRODUCE => &PRODUCE_ANSWER_BY_NAME,
        FETCH => &FETCH_ANSWER,
        SHARE_FETCH => &SHARE_FETCH_ANSWER,
        SHARE_ACKNOWLEDGE => &SHARE_ACKNOWLEDGE_ANSWER,
        _ => &DESCRIBE_QUORUM_ANSWER,
    })
}

/// A list of entries that carry addresses, found in a frame (offsets from the frame's
/// start, size prefix included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Listed {
    /// Where the field begins: its tag, for a tagged field, else the list's count.
    pub(super) field_at: usize,
    /// The field's tag, for a tagged field.
    pub(super) tag: Option<u32>,
    /// Where the list's count begins.
    pub(super) count_at: usize,
    /// Where its first entry begins.
    pub(super) entries_at: usize,
    /// Where the field ends.
    pub(super) end: usize,
    /// How many entries it has: at least one.
    pub(super) count: usize,
}

/// The lists of addresses in `frame` (an answer, size prefix included, whose header is
/// v1) of shape `answer`, in the order they come; an error when the answer is not of that
/// shape (cut short, bytes left over, a count its bytes cannot hold, a tagged field of
/// another size than its content). Empty lists are not reported.
pub(super) fn scan(frame: &[u8], answer: &Shape) -> Result<Vec<Listed>, &'static str> {
    let mut scan = Scan {
        read: Reader::new(frame),
        len: frame.len(),
        found: Vec::new(),
    };
    scan.read.skip(4).ok_or(SHORT)?;
    scan.shape(&HEADER)?;
    scan.shape(answer)?;
    if scan.read.remaining() > 0 {
        return Err("bytes left over after the answer");
    }
    Ok(scan.found)
}

const SHORT: &str = "cut short";

/// The scan's place in a frame, and the lists it found.
struct Scan<'a> {
    read: Reader<'a>,
    len: usize,
    found: Vec<Listed>,
}

impl Scan<'_> {
    /// Where the scan is in the frame.
    fn at(&self) -> usize {
        self.len - self.read.remaining()
    }

    /// A struct of `shape`, its tagged fields included.
    fn shape(&mut self, shape: &Shape) -> Result<(), &'static str> {
        for &field in shape.fields {
            self.field(field, None)?;
        }
        let tagged = self.read.uvarint().ok_or(SHORT)?;
        // Each takes two bytes at least (its tag, its size): the loop ends with the bytes.
        for _ in 0..tagged {
            let field_at = self.at();
            let tag = self.read.uvarint().ok_or(SHORT)?;
            let size = self.read.uvarint().ok_or(SHORT)? as usize;
            match shape.tagged.iter().find(|&&(known, _)| known == tag) {
                Some(&(_, field)) => {
                    let start = self.at();
                    self.field(field, Some((field_at, tag)))?;
                    if self.at() - start != size {
                        return Err("a tagged field's size is not that of its content");
                    }
                }
                None => self.read.skip(size).ok_or(SHORT)?,
            }
        }
        Ok(())
    }

    /// One field; `tagged`: where its tag begins, and the tag, for a tagged field.
    fn field(&mut self, field: Field, tagged: Option<(usize, u32)>) -> Result<(), &'static str> {
        match field {
            Fixed(n) => self.read.skip(n).ok_or(SHORT),
            Bytes => match self.read.uvarint().ok_or(SHORT)? {
                0 => Ok(()),
                n => self.read.skip(n as usize - 1).ok_or(SHORT),
            },
            Struct(shape) => self.shape(shape),
            Array(shape) | Addresses(shape) => {
                let count_at = self.at();
                let count = match self.read.uvarint().ok_or(SHORT)? {
                    0 => 0,
                    n => n as usize - 1,
                };
                if count > self.read.remaining() / shape.min_len() {
                    return Err("an array claims more entries than its bytes can hold");
                }
                let entries_at = self.at();
                for _ in 0..count {
                    self.shape(shape)?;
                }
                if matches!(field, Addresses(_)) && count > 0 {
                    self.found.push(Listed {
                        field_at: tagged.map_or(count_at, |(at, _)| at),
                        tag: tagged.map(|(_, tag)| tag),
                        count_at,
                        entries_at,
                        end: self.at(),
                        count,
                    });
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use bytes::{BufMut, Bytes, BytesMut};
    use kafka_protocol::messages::{fetch_response, FetchResponse, ResponseHeader};
    use kafka_protocol::protocol::{Encodable, HeaderVersion, StrBytes};

    use super::*;

    /// An answer frame (correlation id 5, size prefix included) written by kafka-protocol.
    pub(in crate::filters::addresses) fn frame<M: Encodable + HeaderVersion>(
        version: i16,
        body: &M,
    ) -> Bytes {
        let mut frame = BytesMut::new();
        frame.put_i32(0);
        ResponseHeader::default()
            .with_correlation_id(5)
            .encode(&mut frame, M::header_version(version))
            .unwrap();
        body.encode(&mut frame, version).unwrap();
        let size = (frame.len() - 4) as i32;
        frame[..4].copy_from_slice(&size.to_be_bytes());
        frame.freeze()
    }

    /// A Fetch v16 answer of one partition and one node endpoint.
    fn fetch_with_one_endpoint() -> Bytes {
        let body = FetchResponse::default()
            .with_responses(vec![fetch_response::FetchableTopicResponse::default()
                .with_partitions(vec![fetch_response::PartitionData::default()
                    .with_records(Some(Bytes::from_static(b"records")))])])
            .with_node_endpoints(vec![fetch_response::NodeEndpoint::default()
                .with_host(StrBytes::from_static_str("10.0.0.1"))
                .with_port(9092)]);
        frame(16, &body)
    }

    /// The smallest structs kafka-protocol writes are no shorter than the bounds the scan
    /// divides by: no answer that can exist is refused for its counts.
    #[test]
    fn the_smallest_structs_fit_the_bounds() {
        use kafka_protocol::messages::{
            describe_quorum_response as quorum, produce_response as produce,
            share_fetch_response as share,
        };
        let fits = |shape: &Shape, len: usize, what: &str| {
            assert!(
                shape.min_len() <= len,
                "{what}: {} > {len}",
                shape.min_len()
            );
        };
        fits(
            &NODE_ENDPOINT,
            fetch_response::NodeEndpoint::default()
                .compute_size(16)
                .unwrap(),
            "NodeEndpoint",
        );
        fits(
            &FETCH_PARTITION,
            fetch_response::PartitionData::default()
                .compute_size(16)
                .unwrap(),
            "Fetch PartitionData",
        );
        fits(
            &PRODUCE_PARTITION,
            produce::PartitionProduceResponse::default()
                .compute_size(10)
                .unwrap(),
            "PartitionProduceResponse",
        );
        fits(
            &SHARE_FETCH_PARTITION,
            share::PartitionData::default().compute_size(1).unwrap(),
            "ShareFetch PartitionData",
        );
        fits(
            &QUORUM_NODE,
            quorum::Node::default().compute_size(2).unwrap(),
            "DescribeQuorum Node",
        );
        fits(
            &LISTENER,
            quorum::Listener::default().compute_size(2).unwrap(),
            "DescribeQuorum Listener",
        );
        fits(
            &REPLICA_STATE,
            quorum::ReplicaState::default().compute_size(2).unwrap(),
            "ReplicaState",
        );
    }

    /// The list found is where kafka-protocol wrote it: the tagged field at the end of the
    /// answer, its one entry after the count.
    #[test]
    fn the_scan_finds_the_tagged_node_endpoints() {
        let frame = fetch_with_one_endpoint();
        let lists = scan(&frame, &FETCH_ANSWER).unwrap();
        let [list] = lists[..] else {
            panic!("{lists:?}")
        };
        assert_eq!(list.tag, Some(0));
        assert_eq!(list.end, frame.len(), "the answer's last field");
        assert_eq!(list.count, 1);
        assert_eq!(list.entries_at, list.count_at + 1);
        assert_eq!(list.count_at, list.field_at + 2, "after the tag and size");
        assert_eq!(frame[list.field_at], 0, "tag 0");
    }

    /// Answers that are not what their shape says are refused, each with why: cut short,
    /// bytes left over, a count of 4,294,967,294 node endpoints in a few bytes (refused
    /// before one is read), a known tagged field whose size is not its content's.
    #[test]
    fn answers_not_of_their_shape_are_refused() {
        let frame = fetch_with_one_endpoint();
        let list = scan(&frame, &FETCH_ANSWER).unwrap()[0];
        let cut = &frame[..frame.len() - 3];
        assert_eq!(scan(cut, &FETCH_ANSWER), Err(SHORT));
        let mut longer = frame.to_vec();
        longer.push(0);
        assert_eq!(
            scan(&longer, &FETCH_ANSWER),
            Err("bytes left over after the answer")
        );
        let mut huge = frame[..list.count_at].to_vec();
        huge.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        huge.extend_from_slice(&frame[list.entries_at..]);
        assert_eq!(
            scan(&huge, &FETCH_ANSWER),
            Err("an array claims more entries than its bytes can hold")
        );
        let mut resized = frame.to_vec();
        resized[list.field_at + 1] += 1;
        assert_eq!(
            scan(&resized, &FETCH_ANSWER),
            Err("a tagged field's size is not that of its content")
        );
    }

    /// The version rules: node endpoints from Produce v10 and Fetch v16, the controllers'
    /// listeners from DescribeQuorum v2; ShareFetch and ShareAcknowledge at v1 only (v0's
    /// shape is not known); past kafka-protocol's versions, newer; other APIs, nothing.
    #[test]
    fn versions_before_their_addresses_are_not_read() {
        let of = |key, version| match carried(key, version) {
            Carried::Nothing => "nothing",
            Carried::Newer => "newer",
            Carried::In(_) => "read",
        };
        for (key, version, what) in [
            (PRODUCE, 9, "nothing"),
            (PRODUCE, 10, "read"),
            (PRODUCE, 13, "read"),
            (PRODUCE, 14, "newer"),
            (FETCH, 15, "nothing"),
            (FETCH, 16, "read"),
            (FETCH, 18, "read"),
            (FETCH, 19, "newer"),
            (FETCH, -1, "nothing"),
            (SHARE_FETCH, 0, "newer"),
            (SHARE_FETCH, 1, "read"),
            (SHARE_ACKNOWLEDGE, 1, "read"),
            (SHARE_ACKNOWLEDGE, 2, "newer"),
            (DESCRIBE_QUORUM, 1, "nothing"),
            (DESCRIBE_QUORUM, 2, "read"),
            (DESCRIBE_QUORUM, 3, "newer"),
            (3, 12, "nothing"),
        ] {
            assert_eq!(of(key, version), what, "api key {key} v{version}");
        }
    }
}
