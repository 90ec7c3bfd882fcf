//! Plain copies of parsed messages: compared field by field, so that a check never rests on
//! the views' own `PartialEq` (which a broken one would pass).

use super::*;

/// A request's `TopicPartitions` entry, copied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlainTopic {
    /// The topic name's bytes.
    pub topic: Vec<u8>,
    /// The partitions, in wire order.
    pub partitions: Vec<i32>,
    /// Unknown tagged fields: tag and data, in wire order.
    pub tags: Vec<(u32, Vec<u8>)>,
}

/// An ElectLeaders request, copied out of its view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlainRequest {
    /// The version.
    pub version: i16,
    /// The header's correlation id.
    pub correlation_id: i32,
    /// The header's client id; `None` is null.
    pub client_id: Option<Vec<u8>>,
    /// The header's unknown tagged fields.
    pub header_tags: Vec<(u32, Vec<u8>)>,
    /// `ElectionType` (0 at v0, which lacks it).
    pub election_type: i8,
    /// `TopicPartitions`; `None` is null, all partitions.
    pub topics: Option<Vec<PlainTopic>>,
    /// `TimeoutMs`.
    pub timeout_ms: i32,
    /// Unknown tagged fields: tag and data, in wire order.
    pub tags: Vec<(u32, Vec<u8>)>,
}

/// A response's `PartitionResult` entry, copied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlainPartition {
    /// `PartitionId`.
    pub partition_id: i32,
    /// `ErrorCode` (the top-level one is 0 at v0, which lacks it).
    pub error_code: i16,
    /// `ErrorMessage`; `None` is null.
    pub error_message: Option<Vec<u8>>,
    /// Unknown tagged fields: tag and data, in wire order.
    pub tags: Vec<(u32, Vec<u8>)>,
}

/// A response's `ReplicaElectionResults` entry, copied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlainResult {
    /// The topic name's bytes.
    pub topic: Vec<u8>,
    /// The partitions, in wire order.
    pub partitions: Vec<PlainPartition>,
    /// Unknown tagged fields: tag and data, in wire order.
    pub tags: Vec<(u32, Vec<u8>)>,
}

/// An ElectLeaders response, copied out of its view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlainResponse {
    /// The version.
    pub version: i16,
    /// The header's correlation id.
    pub correlation_id: i32,
    /// The header's unknown tagged fields.
    pub header_tags: Vec<(u32, Vec<u8>)>,
    /// `ThrottleTimeMs`.
    pub throttle_time_ms: i32,
    /// `ErrorCode` (the top-level one is 0 at v0, which lacks it).
    pub error_code: i16,
    /// `ReplicaElectionResults`.
    pub results: Vec<PlainResult>,
    /// Unknown tagged fields: tag and data, in wire order.
    pub tags: Vec<(u32, Vec<u8>)>,
}

pub(crate) fn plain_tags(tags: TaggedFields<'_>) -> Vec<(u32, Vec<u8>)> {
    tags.iter().map(|f| (f.tag(), f.data().to_vec())).collect()
}

/// A request's every field, copied out of its view.
pub fn plain_request(r: &ElectLeadersRequest<'_>) -> PlainRequest {
    PlainRequest {
        version: r.version(),
        correlation_id: r.correlation_id(),
        client_id: r.header().client_id().map(<[u8]>::to_vec),
        header_tags: plain_tags(r.header().tagged_fields()),
        election_type: r.election_type().0,
        topics: r.topic_partitions().map(|list| {
            list.iter()
                .map(|t| PlainTopic {
                    topic: t.topic().to_vec(),
                    partitions: t.partitions().iter().collect(),
                    tags: plain_tags(t.tagged_fields()),
                })
                .collect()
        }),
        timeout_ms: r.timeout_ms(),
        tags: plain_tags(r.tagged_fields()),
    }
}

/// A response's every field, copied out of its view.
pub fn plain_response(r: &ElectLeadersResponse<'_>) -> PlainResponse {
    PlainResponse {
        version: r.version(),
        correlation_id: r.correlation_id(),
        header_tags: plain_tags(r.header().tagged_fields()),
        throttle_time_ms: r.throttle_time_ms(),
        error_code: r.error_code().0,
        results: r
            .replica_election_results()
            .iter()
            .map(|res| PlainResult {
                topic: res.topic().to_vec(),
                partitions: res
                    .partition_result()
                    .iter()
                    .map(|p| PlainPartition {
                        partition_id: p.partition_id(),
                        error_code: p.error_code().0,
                        error_message: p.error_message().map(<[u8]>::to_vec),
                        tags: plain_tags(p.tagged_fields()),
                    })
                    .collect(),
                tags: plain_tags(res.tagged_fields()),
            })
            .collect(),
        tags: plain_tags(r.tagged_fields()),
    }
}

impl PlainRequest {
    pub(crate) fn all_tags(&self) -> impl Iterator<Item = &Vec<(u32, Vec<u8>)>> {
        std::iter::once(&self.header_tags)
            .chain(self.topics.iter().flatten().map(|t| &t.tags))
            .chain(std::iter::once(&self.tags))
    }
}

impl PlainResponse {
    pub(crate) fn all_tags(&self) -> impl Iterator<Item = &Vec<(u32, Vec<u8>)>> {
        std::iter::once(&self.header_tags)
            .chain(
                self.results.iter().flat_map(|r| {
                    std::iter::once(&r.tags).chain(r.partitions.iter().map(|p| &p.tags))
                }),
            )
            .chain(std::iter::once(&self.tags))
    }
}

pub(crate) fn tags_ascending(tags: &[(u32, Vec<u8>)]) -> bool {
    tags.windows(2).all(|w| w[0].0 < w[1].0)
}

/// Asserts that `got` is one of the refusals `expected` (by kind) and names a field.
pub(crate) fn refused_as(got: &kafka_elect_leaders::EncodeError, expected: &[EncodeErrorKind]) {
    assert!(
        expected.iter().any(|k| same_kind(k, &got.kind)),
        "refused with {got}, expected one of {expected:?}"
    );
    assert!(!got.field.is_empty());
}

/// What the writer must refuse when `request` is written at `version`.
pub(crate) fn request_refusals(request: &PlainRequest, version: i16) -> Vec<EncodeErrorKind> {
    let mut refusals = Vec::new();
    if !is_supported(version) {
        refusals.push(EncodeErrorKind::UnsupportedVersion(version));
    }
    if version == 0 && request.election_type != 0 {
        refusals.push(EncodeErrorKind::NonDefaultValue { version });
    }
    if version < 2 && request.all_tags().any(|t| !t.is_empty()) {
        refusals.push(EncodeErrorKind::TaggedFieldsUnsupported { version });
    }
    if version == 2 && !request.all_tags().all(|t| tags_ascending(t)) {
        refusals.push(EncodeErrorKind::TaggedFieldOrder {
            tag: 0,
            previous: 0,
        });
    }
    let strings = request
        .client_id
        .iter()
        .chain(request.topics.iter().flatten().map(|t| &t.topic));
    if strings.into_iter().any(|s| s.len() > 32767) {
        refusals.push(EncodeErrorKind::StringTooLong { len: 0 });
    }
    refusals
}

pub(crate) fn response_refusals(response: &PlainResponse, version: i16) -> Vec<EncodeErrorKind> {
    let mut refusals = Vec::new();
    if !is_supported(version) {
        refusals.push(EncodeErrorKind::UnsupportedVersion(version));
    }
    if version == 0 && response.error_code != 0 {
        refusals.push(EncodeErrorKind::NonDefaultValue { version });
    }
    if version < 2 && response.all_tags().any(|t| !t.is_empty()) {
        refusals.push(EncodeErrorKind::TaggedFieldsUnsupported { version });
    }
    if version == 2 && !response.all_tags().all(|t| tags_ascending(t)) {
        refusals.push(EncodeErrorKind::TaggedFieldOrder {
            tag: 0,
            previous: 0,
        });
    }
    let long = response.results.iter().any(|r| {
        r.topic.len() > 32767
            || r.partitions
                .iter()
                .any(|p| p.error_message.as_ref().is_some_and(|m| m.len() > 32767))
    });
    if long {
        refusals.push(EncodeErrorKind::StringTooLong { len: 0 });
    }
    refusals
}

/// Encodes a request source at `version` with every writer check on the way: refused exactly
/// when `refusals` says so (with one of them); otherwise `encoded_len` is the length
/// written, a buffer one byte short is refused untouched, and the frame is canonical.
pub(crate) fn encode_request_checked(
    source: &impl EncodeRequest,
    version: i16,
    refusals: &[EncodeErrorKind],
) -> Option<Vec<u8>> {
    let len = match source.encoded_len(version) {
        Err(e) => {
            refused_as(&e, refusals);
            let mut buf = [0x5au8; 64];
            assert_eq!(source.encode(version, &mut buf), Err(e));
            assert!(buf.iter().all(|&b| b == 0x5a));
            return None;
        }
        Ok(len) => {
            assert!(refusals.is_empty(), "accepted, but expected {refusals:?}");
            len
        }
    };
    let mut short = vec![0x5au8; len - 1];
    let e = source.encode(version, &mut short).unwrap_err();
    assert_eq!(e.kind, EncodeErrorKind::BufferTooSmall { needed: len });
    assert!(short.iter().all(|&b| b == 0x5a));
    let mut out = vec![0u8; len];
    assert_eq!(source.encode(version, &mut out), Ok(len));
    assert_eq!(
        canonical_request(&out),
        Some(true),
        "the writer wrote a non-canonical frame"
    );
    Some(out)
}

pub(crate) fn encode_response_checked(
    source: &impl EncodeResponse,
    version: i16,
    refusals: &[EncodeErrorKind],
) -> Option<Vec<u8>> {
    let len = match source.encoded_len(version) {
        Err(e) => {
            refused_as(&e, refusals);
            let mut buf = [0x5au8; 64];
            assert_eq!(source.encode(version, &mut buf), Err(e));
            assert!(buf.iter().all(|&b| b == 0x5a));
            return None;
        }
        Ok(len) => {
            assert!(refusals.is_empty(), "accepted, but expected {refusals:?}");
            len
        }
    };
    let mut short = vec![0x5au8; len - 1];
    let e = source.encode(version, &mut short).unwrap_err();
    assert_eq!(e.kind, EncodeErrorKind::BufferTooSmall { needed: len });
    assert!(short.iter().all(|&b| b == 0x5a));
    let mut out = vec![0u8; len];
    assert_eq!(source.encode(version, &mut out), Ok(len));
    assert_eq!(
        canonical_response(&out, version),
        Some(true),
        "the writer wrote a non-canonical frame"
    );
    Some(out)
}
