//! Generated messages for fuzzing (feature `arbitrary`); documented on
//! `ArbitraryRequest`.

use std::vec::Vec;

use arbitrary::{Arbitrary, Result, Unstructured};

use crate::election_type::ElectionType;
use crate::error_code::ErrorCode;
use crate::request::{ElectLeadersRequest, TopicPartitions};
use crate::response::{ElectLeadersResponse, PartitionResult, ReplicaElectionResult};
use crate::version::{MAX_VERSION, MIN_VERSION};
use crate::wire::MAX_STRING_LEN;
use crate::write::{
    tags, ElectLeadersRequestData, ElectLeadersResponseData, EncodePartitionResult,
    EncodeReplicaElectionResult, EncodeRequest, EncodeResponse, EncodeTopicPartitions,
    PartitionResultData, ReplicaElectionResultData, TaggedFieldData, TopicPartitionsData,
};

/// What a generator may produce: only what the version carries, or also what the writer
/// must refuse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reach {
    Carryable,
    Any,
}

/// A generated message that may not be encodable at its version (or its version may not
/// exist): for testing the writer's refusals, and peers' handling of odd values.
///
/// `AnyVersion<ArbitraryRequest>` and `AnyVersion<ArbitraryResponse>` are `Arbitrary`; the
/// message is `.0`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnyVersion<T>(pub T);

/// Chooses a version every ElectLeaders peer knows: 0, 1 or 2.
pub fn arbitrary_version(u: &mut Unstructured<'_>) -> Result<i16> {
    u.int_in_range(MIN_VERSION..=MAX_VERSION)
}

/// Chooses a version, mostly 0-2, sometimes one that does not exist (-1, 3, `i16::MAX`,
/// `i16::MIN`, or any other).
pub fn arbitrary_any_version(u: &mut Unstructured<'_>) -> Result<i16> {
    Ok(match u.int_in_range(0u8..=15)? {
        0 => -1,
        1 => MAX_VERSION + 1,
        2 => i16::MAX,
        3 => i16::MIN,
        4 => i16::arbitrary(u)?,
        _ => arbitrary_version(u)?,
    })
}

/// Boundary values Kafka's int32 fields care about.
const INT32_EDGES: [i32; 8] = [0, -1, 1, i32::MAX, i32::MIN, 32767, 32768, 65535];

/// An int32, often at an edge.
fn edgy_i32(u: &mut Unstructured<'_>) -> Result<i32> {
    if u.ratio(1u8, 4u8)? {
        Ok(*u.choose(&INT32_EDGES)?)
    } else {
        i32::arbitrary(u)
    }
}

/// A byte string borrowed from the input, at most `max` bytes long.
fn bytes<'a>(u: &mut Unstructured<'a>, max: usize) -> Result<&'a [u8]> {
    let len = u.arbitrary_len::<u8>()?.min(max);
    u.bytes(len)
}

/// A string: at most 32767 bytes when carryable, else now and then longer (if the input
/// has the bytes).
fn string<'a>(u: &mut Unstructured<'a>, reach: Reach) -> Result<&'a [u8]> {
    let max = match reach {
        Reach::Any if u.ratio(1u8, 8u8)? => usize::MAX,
        _ => MAX_STRING_LEN,
    };
    bytes(u, max)
}

/// Whether to add one more element to a list: costs one input byte, so lists are bounded by
/// the input; false once the input is spent.
fn more(u: &mut Unstructured<'_>) -> Result<bool> {
    if u.is_empty() {
        return Ok(false);
    }
    u.ratio(3u8, 4u8)
}

/// Tagged fields: none where the version has none (when carryable), tags strictly
/// ascending (when carryable).
fn tagged_fields<'a>(
    u: &mut Unstructured<'a>,
    flexible: bool,
    reach: Reach,
) -> Result<Vec<TaggedFieldData<'a>>> {
    let mut fields = Vec::new();
    let allowed = flexible || (reach == Reach::Any && u.ratio(1u8, 16u8)?);
    if !allowed || !u.ratio(1u8, 3u8)? {
        return Ok(fields);
    }
    let mut next: u32 = 0;
    while more(u)? {
        let tag = if reach == Reach::Any && u.ratio(1u8, 8u8)? {
            u32::arbitrary(u)? // anywhere: out of order or repeated, on purpose
        } else {
            let step = u32::from(u8::arbitrary(u)? % 8);
            match next.checked_add(step) {
                Some(tag) => tag,
                None => break,
            }
        };
        let data = bytes(u, usize::MAX)?;
        fields.push(TaggedFieldData::new(tag, data));
        match tag.checked_add(1) {
            Some(n) => next = next.max(n),
            None => break,
        }
    }
    Ok(fields)
}

impl<'a> Arbitrary<'a> for TaggedFieldData<'a> {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let tag = u32::arbitrary(u)?;
        Ok(TaggedFieldData::new(tag, bytes(u, usize::MAX)?))
    }
}

impl<'a> Arbitrary<'a> for ElectionType {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(match u.int_in_range(0u8..=7)? {
            0 => ElectionType(i8::arbitrary(u)?),
            1..=3 => ElectionType::UNCLEAN,
            _ => ElectionType::PREFERRED,
        })
    }
}

/// Error codes an ElectLeaders response carries in practice, and edges.
const ERROR_CODES: [i16; 12] = [0, 0, 0, -1, 3, 5, 7, 31, 41, 80, 83, 84];

impl<'a> Arbitrary<'a> for ErrorCode {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        if u.ratio(1u8, 8u8)? {
            Ok(ErrorCode(i16::arbitrary(u)?))
        } else {
            Ok(ErrorCode(*u.choose(&ERROR_CODES)?))
        }
    }
}

// ---------------------------------------------------------------------------------------
// Requests.

/// One generated `TopicPartitions` entry: its lists owned, its bytes borrowed.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ArbitraryTopicPartitions<'a> {
    /// `Topic`.
    pub topic: &'a [u8],
    /// `Partitions`.
    pub partitions: Vec<i32>,
    /// Unknown tagged fields.
    pub tagged_fields: Vec<TaggedFieldData<'a>>,
}

impl<'a> ArbitraryTopicPartitions<'a> {
    /// As plain borrowed data.
    pub fn data(&self) -> TopicPartitionsData<'_> {
        TopicPartitionsData {
            topic: self.topic,
            partitions: &self.partitions,
            tagged_fields: &self.tagged_fields,
        }
    }

    /// A copy of a parsed entry (the topic and tag data still borrow the frame).
    pub fn from_view(entry: &TopicPartitions<'a>) -> Self {
        ArbitraryTopicPartitions {
            topic: entry.topic(),
            partitions: entry.partitions().iter().collect(),
            tagged_fields: view_tags(entry.tagged_fields()),
        }
    }

    fn generate(u: &mut Unstructured<'a>, flexible: bool, reach: Reach) -> Result<Self> {
        let topic = string(u, reach)?;
        let mut partitions = Vec::new();
        while more(u)? {
            partitions.push(if u.ratio(1u8, 2u8)? {
                i32::from(u8::arbitrary(u)?)
            } else {
                edgy_i32(u)?
            });
        }
        Ok(ArbitraryTopicPartitions {
            topic,
            partitions,
            tagged_fields: tagged_fields(u, flexible, reach)?,
        })
    }
}

fn view_tags<'a>(tags: crate::TaggedFields<'a>) -> Vec<TaggedFieldData<'a>> {
    tags.iter()
        .map(|f| TaggedFieldData::new(f.tag(), f.data()))
        .collect()
}

/// A generated ElectLeaders request and the version to write it at: its lists owned, every
/// byte string borrowed from the fuzzer's input (or, made by
/// [`from_view`](Self::from_view), from a parsed frame).
///
/// `Arbitrary` gives a message its [`version`](Self::version) can carry, so encoding it at
/// that version never fails (for one that may, use [`AnyVersion`]). It encodes directly
/// ([`EncodeRequest`]); [`with_data`](Self::with_data) lends it as an
/// [`ElectLeadersRequestData`].
///
/// # Generated messages
///
/// The borrowed sources of the writer ([`ElectLeadersRequestData`] and friends) hold slices
/// of slices (`&'a [TopicPartitionsData<'a>]`), which cannot be borrowed from a fuzzer's
/// input. The generated messages here own their lists (`Vec`s) but borrow every byte
/// string (topic names, client ids, error messages, tagged-field data) straight from the
/// input given to [`Unstructured`]; they encode directly ([`EncodeRequest`],
/// [`EncodeResponse`]) and lend themselves as plain `*Data` with `with_data`.
///
/// - [`ArbitraryRequest`] and [`ArbitraryResponse`] carry a version (0-2) and only what that
///   version can carry: they always encode.
/// - [`AnyVersion<ArbitraryRequest>`](AnyVersion) and `AnyVersion<ArbitraryResponse>` also
///   generate what the writer must refuse: versions outside 0-2, an unclean election or a
///   top-level error code at version 0, tagged fields before version 2, tags out of order or
///   repeated, strings longer than 32767 bytes (when the input is that long).
/// - [`TaggedFieldData`], [`ElectionType`] and [`ErrorCode`] are `Arbitrary` themselves.
///
/// Sizes are bounded by the input: every list element costs at least one input byte, every
/// partition id four, and byte strings are borrowed, so a generator never allocates more
/// than a small multiple of the input's length.
///
/// ```
/// use arbitrary::{Arbitrary, Unstructured};
/// use kafka_elect_leaders::{parse_request, ArbitraryRequest, EncodeRequest};
///
/// let input = [7u8; 64]; // a fuzzer's bytes
/// let mut u = Unstructured::new(&input);
/// let request = ArbitraryRequest::arbitrary(&mut u).unwrap();
/// let mut buf = vec![0u8; request.encoded_len(request.version).unwrap()];
/// request.encode(request.version, &mut buf).unwrap();
/// assert_eq!(parse_request(&buf).unwrap().version(), request.version);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArbitraryRequest<'a> {
    /// The version to write the request at (the header's `RequestApiVersion`).
    pub version: i16,
    /// The header's `CorrelationId`.
    pub correlation_id: i32,
    /// The header's `ClientId`.
    pub client_id: Option<&'a [u8]>,
    /// The header's unknown tagged fields.
    pub header_tagged_fields: Vec<TaggedFieldData<'a>>,
    /// `ElectionType`.
    pub election_type: ElectionType,
    /// `TopicPartitions` (`None`: null).
    pub topic_partitions: Option<Vec<ArbitraryTopicPartitions<'a>>>,
    /// `TimeoutMs`.
    pub timeout_ms: i32,
    /// The body's unknown tagged fields.
    pub tagged_fields: Vec<TaggedFieldData<'a>>,
}

impl<'a> ArbitraryRequest<'a> {
    /// A copy of a parsed request, at its version; byte strings still borrow the frame.
    pub fn from_view(request: &ElectLeadersRequest<'a>) -> Self {
        ArbitraryRequest {
            version: request.version(),
            correlation_id: request.correlation_id(),
            client_id: request.header().client_id(),
            header_tagged_fields: view_tags(request.header().tagged_fields()),
            election_type: request.election_type(),
            topic_partitions: request.topic_partitions().map(|list| {
                list.iter()
                    .map(|e| ArbitraryTopicPartitions::from_view(&e))
                    .collect()
            }),
            timeout_ms: request.timeout_ms(),
            tagged_fields: view_tags(request.tagged_fields()),
        }
    }

    /// Calls `f` with the request as plain borrowed data (one small `Vec` for the entries).
    pub fn with_data<R>(&self, f: impl FnOnce(&ElectLeadersRequestData<'_>) -> R) -> R {
        let topics: Option<Vec<TopicPartitionsData<'_>>> = self
            .topic_partitions
            .as_ref()
            .map(|t| t.iter().map(ArbitraryTopicPartitions::data).collect());
        f(&ElectLeadersRequestData {
            correlation_id: self.correlation_id,
            client_id: self.client_id,
            header_tagged_fields: &self.header_tagged_fields,
            election_type: self.election_type,
            topic_partitions: topics.as_deref(),
            timeout_ms: self.timeout_ms,
            tagged_fields: &self.tagged_fields,
        })
    }

    /// Drops what `version` cannot carry (an unclean election type, tagged fields) and sets
    /// the version, so the request encodes there (strings over 32767 bytes excepted).
    pub fn fit_to_version(&mut self, version: i16) {
        self.version = version;
        if version < 1 {
            self.election_type = ElectionType::PREFERRED;
        }
        if version < 2 {
            self.header_tagged_fields.clear();
            self.tagged_fields.clear();
            for t in self.topic_partitions.iter_mut().flatten() {
                t.tagged_fields.clear();
            }
        }
    }

    fn generate(u: &mut Unstructured<'a>, version: i16, reach: Reach) -> Result<Self> {
        let flexible = version >= 2;
        let correlation_id = edgy_i32(u)?;
        let client_id = match u.int_in_range(0u8..=7)? {
            0 => None,
            _ => Some(string(u, reach)?),
        };
        let header_tagged_fields = tagged_fields(u, flexible, reach)?;
        let mut election_type = ElectionType::arbitrary(u)?;
        if version < 1 && reach == Reach::Carryable {
            election_type = ElectionType::PREFERRED;
        }
        let topic_partitions = if u.ratio(1u8, 10u8)? {
            None
        } else {
            let mut topics = Vec::new();
            while more(u)? {
                topics.push(ArbitraryTopicPartitions::generate(u, flexible, reach)?);
            }
            Some(topics)
        };
        let timeout_ms = if u.ratio(1u8, 2u8)? {
            crate::DEFAULT_TIMEOUT_MS
        } else {
            edgy_i32(u)?
        };
        Ok(ArbitraryRequest {
            version,
            correlation_id,
            client_id,
            header_tagged_fields,
            election_type,
            topic_partitions,
            timeout_ms,
            tagged_fields: tagged_fields(u, flexible, reach)?,
        })
    }
}

impl<'a> Arbitrary<'a> for ArbitraryRequest<'a> {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let version = arbitrary_version(u)?;
        Self::generate(u, version, Reach::Carryable)
    }
}

impl<'a> Arbitrary<'a> for AnyVersion<ArbitraryRequest<'a>> {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let version = arbitrary_any_version(u)?;
        ArbitraryRequest::generate(u, version, Reach::Any).map(AnyVersion)
    }
}

impl EncodeRequest for ArbitraryRequest<'_> {
    fn correlation_id(&self) -> i32 {
        self.correlation_id
    }
    fn client_id(&self) -> Option<&[u8]> {
        self.client_id
    }
    fn header_tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags(&self.header_tagged_fields)
    }
    fn election_type(&self) -> ElectionType {
        self.election_type
    }
    fn topic_partitions(
        &self,
    ) -> Option<impl Iterator<Item = impl EncodeTopicPartitions + '_> + '_> {
        self.topic_partitions.as_ref().map(|t| t.iter())
    }
    fn timeout_ms(&self) -> i32 {
        self.timeout_ms
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags(&self.tagged_fields)
    }
}

impl EncodeTopicPartitions for &ArbitraryTopicPartitions<'_> {
    fn topic(&self) -> &[u8] {
        self.topic
    }
    fn partitions(&self) -> impl Iterator<Item = i32> + '_ {
        self.partitions.iter().copied()
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags(&self.tagged_fields)
    }
}

// ---------------------------------------------------------------------------------------
// Responses.

/// One generated `PartitionResult` entry.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ArbitraryPartitionResult<'a> {
    /// `PartitionId`.
    pub partition_id: i32,
    /// `ErrorCode`.
    pub error_code: ErrorCode,
    /// `ErrorMessage` (`None`: null).
    pub error_message: Option<&'a [u8]>,
    /// Unknown tagged fields.
    pub tagged_fields: Vec<TaggedFieldData<'a>>,
}

impl<'a> ArbitraryPartitionResult<'a> {
    /// As plain borrowed data.
    pub fn data(&self) -> PartitionResultData<'_> {
        PartitionResultData {
            partition_id: self.partition_id,
            error_code: self.error_code,
            error_message: self.error_message,
            tagged_fields: &self.tagged_fields,
        }
    }

    /// A copy of a parsed entry.
    pub fn from_view(p: &PartitionResult<'a>) -> Self {
        ArbitraryPartitionResult {
            partition_id: p.partition_id(),
            error_code: p.error_code(),
            error_message: p.error_message(),
            tagged_fields: view_tags(p.tagged_fields()),
        }
    }

    fn generate(u: &mut Unstructured<'a>, flexible: bool, reach: Reach) -> Result<Self> {
        let partition_id = if u.ratio(1u8, 2u8)? {
            i32::from(u8::arbitrary(u)?)
        } else {
            edgy_i32(u)?
        };
        let error_code = ErrorCode::arbitrary(u)?;
        let error_message = if u.ratio(1u8, 2u8)? {
            None
        } else {
            Some(string(u, reach)?)
        };
        Ok(ArbitraryPartitionResult {
            partition_id,
            error_code,
            error_message,
            tagged_fields: tagged_fields(u, flexible, reach)?,
        })
    }
}

/// One generated `ReplicaElectionResults` entry.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ArbitraryReplicaElectionResult<'a> {
    /// `Topic`.
    pub topic: &'a [u8],
    /// `PartitionResult`.
    pub partition_result: Vec<ArbitraryPartitionResult<'a>>,
    /// Unknown tagged fields.
    pub tagged_fields: Vec<TaggedFieldData<'a>>,
}

impl<'a> ArbitraryReplicaElectionResult<'a> {
    /// A copy of a parsed entry.
    pub fn from_view(r: &ReplicaElectionResult<'a>) -> Self {
        ArbitraryReplicaElectionResult {
            topic: r.topic(),
            partition_result: r
                .partition_result()
                .iter()
                .map(|p| ArbitraryPartitionResult::from_view(&p))
                .collect(),
            tagged_fields: view_tags(r.tagged_fields()),
        }
    }

    fn generate(u: &mut Unstructured<'a>, flexible: bool, reach: Reach) -> Result<Self> {
        let topic = string(u, reach)?;
        let mut partition_result = Vec::new();
        while more(u)? {
            partition_result.push(ArbitraryPartitionResult::generate(u, flexible, reach)?);
        }
        Ok(ArbitraryReplicaElectionResult {
            topic,
            partition_result,
            tagged_fields: tagged_fields(u, flexible, reach)?,
        })
    }
}

/// A generated ElectLeaders response and the version to write it at; see
/// [`ArbitraryRequest`], of which it is the counterpart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArbitraryResponse<'a> {
    /// The version to write (and parse) the response at.
    pub version: i16,
    /// The header's `CorrelationId`.
    pub correlation_id: i32,
    /// The header's unknown tagged fields.
    pub header_tagged_fields: Vec<TaggedFieldData<'a>>,
    /// `ThrottleTimeMs`.
    pub throttle_time_ms: i32,
    /// The top-level `ErrorCode`.
    pub error_code: ErrorCode,
    /// `ReplicaElectionResults`.
    pub replica_election_results: Vec<ArbitraryReplicaElectionResult<'a>>,
    /// The body's unknown tagged fields.
    pub tagged_fields: Vec<TaggedFieldData<'a>>,
}

impl<'a> ArbitraryResponse<'a> {
    /// A copy of a parsed response, at its version.
    pub fn from_view(response: &ElectLeadersResponse<'a>) -> Self {
        ArbitraryResponse {
            version: response.version(),
            correlation_id: response.correlation_id(),
            header_tagged_fields: view_tags(response.header().tagged_fields()),
            throttle_time_ms: response.throttle_time_ms(),
            error_code: response.error_code(),
            replica_election_results: response
                .replica_election_results()
                .iter()
                .map(|r| ArbitraryReplicaElectionResult::from_view(&r))
                .collect(),
            tagged_fields: view_tags(response.tagged_fields()),
        }
    }

    /// Calls `f` with the response as plain borrowed data (small `Vec`s for the entries).
    pub fn with_data<R>(&self, f: impl FnOnce(&ElectLeadersResponseData<'_>) -> R) -> R {
        let partitions: Vec<Vec<PartitionResultData<'_>>> = self
            .replica_election_results
            .iter()
            .map(|r| r.partition_result.iter().map(|p| p.data()).collect())
            .collect();
        let results: Vec<ReplicaElectionResultData<'_>> = self
            .replica_election_results
            .iter()
            .zip(&partitions)
            .map(|(r, p)| ReplicaElectionResultData {
                topic: r.topic,
                partition_result: p,
                tagged_fields: &r.tagged_fields,
            })
            .collect();
        f(&ElectLeadersResponseData {
            correlation_id: self.correlation_id,
            header_tagged_fields: &self.header_tagged_fields,
            throttle_time_ms: self.throttle_time_ms,
            error_code: self.error_code,
            replica_election_results: &results,
            tagged_fields: &self.tagged_fields,
        })
    }

    /// Drops what `version` cannot carry (a top-level error code, tagged fields) and sets
    /// the version.
    pub fn fit_to_version(&mut self, version: i16) {
        self.version = version;
        if version < 1 {
            self.error_code = ErrorCode::NONE;
        }
        if version < 2 {
            self.header_tagged_fields.clear();
            self.tagged_fields.clear();
            for r in &mut self.replica_election_results {
                r.tagged_fields.clear();
                for p in &mut r.partition_result {
                    p.tagged_fields.clear();
                }
            }
        }
    }

    fn generate(u: &mut Unstructured<'a>, version: i16, reach: Reach) -> Result<Self> {
        let flexible = version >= 2;
        let correlation_id = edgy_i32(u)?;
        let header_tagged_fields = tagged_fields(u, flexible, reach)?;
        let throttle_time_ms = if u.ratio(1u8, 2u8)? { 0 } else { edgy_i32(u)? };
        let mut error_code = ErrorCode::arbitrary(u)?;
        if version < 1 && reach == Reach::Carryable {
            error_code = ErrorCode::NONE;
        }
        let mut replica_election_results = Vec::new();
        while more(u)? {
            replica_election_results.push(ArbitraryReplicaElectionResult::generate(
                u, flexible, reach,
            )?);
        }
        Ok(ArbitraryResponse {
            version,
            correlation_id,
            header_tagged_fields,
            throttle_time_ms,
            error_code,
            replica_election_results,
            tagged_fields: tagged_fields(u, flexible, reach)?,
        })
    }
}

impl<'a> Arbitrary<'a> for ArbitraryResponse<'a> {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let version = arbitrary_version(u)?;
        Self::generate(u, version, Reach::Carryable)
    }
}

impl<'a> Arbitrary<'a> for AnyVersion<ArbitraryResponse<'a>> {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let version = arbitrary_any_version(u)?;
        ArbitraryResponse::generate(u, version, Reach::Any).map(AnyVersion)
    }
}

impl EncodeResponse for ArbitraryResponse<'_> {
    fn correlation_id(&self) -> i32 {
        self.correlation_id
    }
    fn header_tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags(&self.header_tagged_fields)
    }
    fn throttle_time_ms(&self) -> i32 {
        self.throttle_time_ms
    }
    fn error_code(&self) -> ErrorCode {
        self.error_code
    }
    fn replica_election_results(
        &self,
    ) -> impl Iterator<Item = impl EncodeReplicaElectionResult + '_> + '_ {
        self.replica_election_results.iter()
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags(&self.tagged_fields)
    }
}

impl EncodeReplicaElectionResult for &ArbitraryReplicaElectionResult<'_> {
    fn topic(&self) -> &[u8] {
        self.topic
    }
    fn partition_result(&self) -> impl Iterator<Item = impl EncodePartitionResult + '_> + '_ {
        self.partition_result.iter()
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags(&self.tagged_fields)
    }
}

impl EncodePartitionResult for &ArbitraryPartitionResult<'_> {
    fn partition_id(&self) -> i32 {
        self.partition_id
    }
    fn error_code(&self) -> ErrorCode {
        self.error_code
    }
    fn error_message(&self) -> Option<&[u8]> {
        self.error_message
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags(&self.tagged_fields)
    }
}
