//! Encoding ElectLeaders responses: the [`EncodeResponse`] source trait, plain data, the
//! parsed view, edits of it, and the error response that refuses a request.

use super::error::{EncodeError, EncodeErrorKind};
use super::request::{tags, view_tags};
use super::sink::{self, Emit, Sink, Vx};
use super::tagged::TaggedFieldData;
use crate::error_code::ErrorCode;
use crate::request::{ElectLeadersRequest, TopicPartitions};
use crate::response::{ElectLeadersResponse, PartitionResult, ReplicaElectionResult};
use crate::version;

use crate::field::ERROR_CODE as FIELD_ERROR_CODE;
use crate::field::ERROR_MESSAGE as FIELD_ERROR_MESSAGE;
use crate::field::PARTITION_RESULT as FIELD_PARTITION_RESULT;
use crate::field::PARTITION_RESULT_TAGS as FIELD_PARTITION_TAGS;
use crate::field::REPLICA_ELECTION_RESULTS as FIELD_RESULTS;
use crate::field::RESPONSE_HEADER_TAGS as FIELD_HEADER_TAGS;
use crate::field::RESULT_TAGS as FIELD_RESULT_TAGS;
use crate::field::RESULT_TOPIC as FIELD_RESULT_TOPIC;
use crate::field::TAGS as FIELD_TAGS;

/// The contents of an ElectLeaders response, as the writer reads them; `encoded_len` and
/// `encode` come with it.
///
/// Implemented by [`ElectLeadersResponseData`], the parsed [`ElectLeadersResponse`],
/// [`ResponseEdit`] and [`ErrorResponse`]. List methods may be called more than once per
/// encode and must give the same items each time.
pub trait EncodeResponse {
    /// The header's `CorrelationId`.
    fn correlation_id(&self) -> i32;
    /// The header's unknown tagged fields, tags ascending (header v1 only).
    fn header_tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_;
    /// `ThrottleTimeMs`.
    fn throttle_time_ms(&self) -> i32;
    /// The top-level `ErrorCode`; must be [`ErrorCode::NONE`] to encode at version 0.
    fn error_code(&self) -> ErrorCode;
    /// `ReplicaElectionResults`.
    fn replica_election_results(
        &self,
    ) -> impl Iterator<Item = impl EncodeReplicaElectionResult + '_> + '_;
    /// The body's unknown tagged fields, tags ascending (version 2 only).
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_;

    /// The exact length of the frame at `version`, size prefix included; or why the
    /// version cannot carry this message.
    fn encoded_len(&self, version: i16) -> Result<usize, EncodeError>
    where
        Self: Sized,
    {
        sink::frame_len(&ResponseFrame {
            src: self,
            vx: Vx::new(version)?,
        })
    }

    /// Writes the whole frame at `version` into the front of `buf` and returns its length.
    /// If `buf` is too short, writes nothing and returns
    /// [`BufferTooSmall`](EncodeErrorKind::BufferTooSmall).
    fn encode(&self, version: i16, buf: &mut [u8]) -> Result<usize, EncodeError>
    where
        Self: Sized,
    {
        sink::encode_frame(
            &ResponseFrame {
                src: self,
                vx: Vx::new(version)?,
            },
            buf,
        )
    }

    /// Writes the whole frame at `version` into the front of `buf` when its length `len`
    /// (size prefix included) is already known, from [`encoded_len`](Self::encoded_len):
    /// nothing is measured again. Returns `len`.
    ///
    /// If `buf` is shorter than `len`, writes nothing and returns
    /// [`BufferTooSmall`](EncodeErrorKind::BufferTooSmall). If the message is not `len`
    /// bytes long, returns [`LengthMismatch`](EncodeErrorKind::LengthMismatch) (measuring it
    /// then, to say how long it is), and the first `len` bytes of `buf` hold a partial
    /// frame. The same checks as [`encode`](Self::encode) refuse what the version cannot
    /// carry.
    fn encode_exact(&self, version: i16, len: usize, buf: &mut [u8]) -> Result<usize, EncodeError>
    where
        Self: Sized,
    {
        sink::encode_frame_exact(
            &ResponseFrame {
                src: self,
                vx: Vx::new(version)?,
            },
            len,
            buf,
        )
    }
}

/// One `ReplicaElectionResults` entry, as the writer reads it.
pub trait EncodeReplicaElectionResult {
    /// `Topic`.
    fn topic(&self) -> &[u8];
    /// `PartitionResult`.
    fn partition_result(&self) -> impl Iterator<Item = impl EncodePartitionResult + '_> + '_;
    /// Unknown tagged fields, tags ascending (version 2 only).
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_;
}

/// One `PartitionResult` entry, as the writer reads it.
pub trait EncodePartitionResult {
    /// `PartitionId`.
    fn partition_id(&self) -> i32;
    /// `ErrorCode`.
    fn error_code(&self) -> ErrorCode;
    /// `ErrorMessage` (`None`: null).
    fn error_message(&self) -> Option<&[u8]>;
    /// Unknown tagged fields, tags ascending (version 2 only).
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_;
}

pub(crate) struct ResponseFrame<'s, R> {
    pub(crate) src: &'s R,
    pub(crate) vx: Vx,
}

impl<R: EncodeResponse> Emit for ResponseFrame<'_, R> {
    #[inline(always)]
    fn emit<S: Sink>(&self, s: &mut S) -> Result<(), EncodeError> {
        let (src, vx) = (self.src, self.vx);
        let flexible = vx.flexible;
        // Response header v0 or v1.
        s.i32(src.correlation_id());
        sink::tagged_fields(s, vx, || src.header_tagged_fields(), FIELD_HEADER_TAGS)?;
        // Body.
        s.i32(src.throttle_time_ms());
        let error_code = src.error_code();
        if version::has_top_level_error_code(vx.version) {
            s.i16(error_code.0);
        } else if error_code != ErrorCode::NONE {
            return Err(EncodeError::new(
                EncodeErrorKind::NonDefaultValue {
                    version: vx.version,
                },
                FIELD_ERROR_CODE,
            ));
        }
        let results = || Some(src.replica_election_results());
        sink::list(s, flexible, results, FIELD_RESULTS, |s, result| {
            sink::string(s, flexible, Some(result.topic()), FIELD_RESULT_TOPIC)?;
            let partitions = || Some(result.partition_result());
            sink::list(s, flexible, partitions, FIELD_PARTITION_RESULT, |s, p| {
                s.i32(p.partition_id());
                s.i16(p.error_code().0);
                sink::string(s, flexible, p.error_message(), FIELD_ERROR_MESSAGE)?;
                sink::tagged_fields(s, vx, || p.tagged_fields(), FIELD_PARTITION_TAGS)
            })?;
            sink::tagged_fields(s, vx, || result.tagged_fields(), FIELD_RESULT_TAGS)
        })?;
        sink::tagged_fields(s, vx, || src.tagged_fields(), FIELD_TAGS)
    }
}

/// An ElectLeaders response as plain borrowed data, ready to encode. `Default` is an empty
/// successful response.
///
/// ```
/// use kafka_elect_leaders::{
///     parse_response, ElectLeadersResponseData, EncodeResponse, ErrorCode,
///     PartitionResultData, ReplicaElectionResultData,
/// };
///
/// let partitions = [
///     PartitionResultData { partition_id: 0, ..Default::default() },
///     PartitionResultData {
///         partition_id: 1,
///         error_code: ErrorCode::ELECTION_NOT_NEEDED,
///         error_message: Some(b"Leader election not needed for topic partition."),
///         ..Default::default()
///     },
/// ];
/// let results = [ReplicaElectionResultData {
///     topic: b"orders",
///     partition_result: &partitions,
///     ..Default::default()
/// }];
/// let response = ElectLeadersResponseData {
///     correlation_id: 7, // the request's
///     replica_election_results: &results,
///     ..Default::default()
/// };
///
/// // A response is written at its request's version, and read back at it.
/// let mut buf = [0u8; 128];
/// let len = response.encode(1, &mut buf).unwrap();
/// let parsed = parse_response(&buf[..len], 1).unwrap();
/// assert_eq!(parsed.correlation_id(), 7);
/// let result = parsed.replica_election_results().first().unwrap();
/// assert_eq!(result.topic(), b"orders");
/// let second = result.partition_result().iter().nth(1).unwrap();
/// assert_eq!(second.error_code(), ErrorCode::ELECTION_NOT_NEEDED);
///
/// // Version 0 has no top-level ErrorCode: a non-default one cannot be written there.
/// let refused = ElectLeadersResponseData { error_code: ErrorCode::NOT_CONTROLLER, ..response };
/// assert!(refused.encode(0, &mut buf).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ElectLeadersResponseData<'a> {
    /// The header's `CorrelationId`.
    pub correlation_id: i32,
    /// The header's unknown tagged fields (header v1 only).
    pub header_tagged_fields: &'a [TaggedFieldData<'a>],
    /// `ThrottleTimeMs`.
    pub throttle_time_ms: i32,
    /// The top-level `ErrorCode` (v1+; must be `NONE` at v0).
    pub error_code: ErrorCode,
    /// `ReplicaElectionResults`.
    pub replica_election_results: &'a [ReplicaElectionResultData<'a>],
    /// The body's unknown tagged fields (v2 only).
    pub tagged_fields: &'a [TaggedFieldData<'a>],
}

/// One `ReplicaElectionResults` entry as plain borrowed data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ReplicaElectionResultData<'a> {
    /// `Topic`.
    pub topic: &'a [u8],
    /// `PartitionResult`.
    pub partition_result: &'a [PartitionResultData<'a>],
    /// Unknown tagged fields (v2 only).
    pub tagged_fields: &'a [TaggedFieldData<'a>],
}

/// One `PartitionResult` entry as plain borrowed data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PartitionResultData<'a> {
    /// `PartitionId`.
    pub partition_id: i32,
    /// `ErrorCode`.
    pub error_code: ErrorCode,
    /// `ErrorMessage` (`None`: null).
    pub error_message: Option<&'a [u8]>,
    /// Unknown tagged fields (v2 only).
    pub tagged_fields: &'a [TaggedFieldData<'a>],
}

impl EncodeResponse for ElectLeadersResponseData<'_> {
    fn correlation_id(&self) -> i32 {
        self.correlation_id
    }
    fn header_tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags(self.header_tagged_fields)
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
        tags(self.tagged_fields)
    }
}

impl EncodeReplicaElectionResult for &ReplicaElectionResultData<'_> {
    fn topic(&self) -> &[u8] {
        self.topic
    }
    fn partition_result(&self) -> impl Iterator<Item = impl EncodePartitionResult + '_> + '_ {
        self.partition_result.iter()
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags(self.tagged_fields)
    }
}

impl EncodePartitionResult for &PartitionResultData<'_> {
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
        tags(self.tagged_fields)
    }
}

/// Re-emits a parsed response (canonical form at its own version).
impl EncodeResponse for ElectLeadersResponse<'_> {
    fn correlation_id(&self) -> i32 {
        self.header().correlation_id()
    }
    fn header_tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        view_tags(self.header().tagged_fields())
    }
    fn throttle_time_ms(&self) -> i32 {
        ElectLeadersResponse::throttle_time_ms(self)
    }
    fn error_code(&self) -> ErrorCode {
        ElectLeadersResponse::error_code(self)
    }
    fn replica_election_results(
        &self,
    ) -> impl Iterator<Item = impl EncodeReplicaElectionResult + '_> + '_ {
        ElectLeadersResponse::replica_election_results(self).iter()
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        view_tags(ElectLeadersResponse::tagged_fields(self))
    }
}

impl EncodeReplicaElectionResult for ReplicaElectionResult<'_> {
    fn topic(&self) -> &[u8] {
        ReplicaElectionResult::topic(self)
    }
    fn partition_result(&self) -> impl Iterator<Item = impl EncodePartitionResult + '_> + '_ {
        ReplicaElectionResult::partition_result(self).iter()
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        view_tags(ReplicaElectionResult::tagged_fields(self))
    }
}

impl EncodePartitionResult for PartitionResult<'_> {
    fn partition_id(&self) -> i32 {
        PartitionResult::partition_id(self)
    }
    fn error_code(&self) -> ErrorCode {
        PartitionResult::error_code(self)
    }
    fn error_message(&self) -> Option<&[u8]> {
        PartitionResult::error_message(self)
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        view_tags(PartitionResult::tagged_fields(self))
    }
}

/// A parsed response with some values changed or some topics dropped, encoded without
/// copying the rest. Made by [`ElectLeadersResponse::edit`]; a proxy that rewrites
/// correlation ids uses it to answer its own clients.
///
/// ```
/// use kafka_elect_leaders::{parse_response, EncodeResponse, ErrorCode};
///
/// // The broker's answer, to correlation id 16 on the proxy's connection.
/// let frame = std::fs::read("corpus/response-v2-multi.bin").unwrap();
/// let response = parse_response(&frame, 2).unwrap();
/// assert_eq!(response.replica_election_results().len(), 4);
///
/// // Back to the client under its own correlation id, without one topic's results.
/// let edit = response
///     .edit()
///     .correlation_id(3)
///     .throttle_time_ms(0)
///     .retain_topics(|result| result.topic() != b"odd-ids");
/// let mut buf = [0u8; 256];
/// let len = edit.encode(2, &mut buf).unwrap();
/// assert_eq!(len, edit.encoded_len(2).unwrap());
///
/// let answer = parse_response(&buf[..len], 2).unwrap();
/// assert_eq!((answer.correlation_id(), answer.throttle_time_ms()), (3, 0));
/// assert_eq!(answer.error_code(), ErrorCode::NONE);
/// let topics: Vec<&[u8]> = answer.replica_election_results().iter().map(|r| r.topic()).collect();
/// assert_eq!(topics, [&b"orders"[..], "trädgård".as_bytes(), b"empty-topic"]);
/// ```
#[derive(Clone, Copy)]
pub struct ResponseEdit<'a, T> {
    response: ElectLeadersResponse<'a>,
    correlation_id: i32,
    throttle_time_ms: i32,
    error_code: ErrorCode,
    keep_topic: T,
}

/// Keeps every result: the default filter of a response edit.
pub(crate) type KeepAllResults = fn(&ReplicaElectionResult<'_>) -> bool;

impl<'a> ElectLeadersResponse<'a> {
    /// Starts an edit of this response for re-encoding.
    pub fn edit(&self) -> ResponseEdit<'a, KeepAllResults> {
        ResponseEdit {
            response: *self,
            correlation_id: self.correlation_id(),
            throttle_time_ms: self.throttle_time_ms(),
            error_code: self.error_code(),
            keep_topic: |_| true,
        }
    }
}

impl<'a, T: Fn(&ReplicaElectionResult<'a>) -> bool> ResponseEdit<'a, T> {
    /// Sets the header's `CorrelationId`.
    pub fn correlation_id(mut self, correlation_id: i32) -> Self {
        self.correlation_id = correlation_id;
        self
    }

    /// Sets `ThrottleTimeMs`.
    pub fn throttle_time_ms(mut self, throttle_time_ms: i32) -> Self {
        self.throttle_time_ms = throttle_time_ms;
        self
    }

    /// Sets the top-level `ErrorCode`.
    pub fn error_code(mut self, error_code: ErrorCode) -> Self {
        self.error_code = error_code;
        self
    }

    /// Keeps only the topics' results for which `keep` is true.
    pub fn retain_topics<T2>(self, keep: T2) -> ResponseEdit<'a, T2>
    where
        T2: Fn(&ReplicaElectionResult<'a>) -> bool,
    {
        ResponseEdit {
            response: self.response,
            correlation_id: self.correlation_id,
            throttle_time_ms: self.throttle_time_ms,
            error_code: self.error_code,
            keep_topic: keep,
        }
    }
}

impl<'a, T: Fn(&ReplicaElectionResult<'a>) -> bool> EncodeResponse for ResponseEdit<'a, T> {
    fn correlation_id(&self) -> i32 {
        self.correlation_id
    }
    fn header_tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        view_tags(self.response.header().tagged_fields())
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
        self.response
            .replica_election_results()
            .iter()
            .filter(|r| (self.keep_topic)(r))
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        view_tags(self.response.tagged_fields())
    }
}

/// The response that refuses a parsed request: every partition it names answered with one
/// error code and message, as Apache Kafka's `ElectLeadersRequest.getErrorResponse` builds
/// it. Made by [`ElectLeadersRequest::error_response`].
///
/// - A request for all partitions (null `TopicPartitions`) gets an empty result list.
/// - The top-level `ErrorCode` carries the error from version 1 on. At version 0, which has
///   no such field, it is left out, as Kafka's response constructor does. The version is
///   the request's.
///
/// ```
/// use kafka_elect_leaders::{parse_request, parse_response, EncodeResponse, ErrorCode};
///
/// let frame = std::fs::read("corpus/request-v0.bin").unwrap();
/// let request = parse_request(&frame).unwrap();
/// let refusal = request.error_response(ErrorCode::CLUSTER_AUTHORIZATION_FAILED, None);
/// let mut buf = [0u8; 256];
/// let len = refusal.encode(request.version(), &mut buf).unwrap();
/// let response = parse_response(&buf[..len], request.version()).unwrap();
/// assert_eq!(response.correlation_id(), request.correlation_id());
/// let answered: usize = response.replica_election_results().iter()
///     .map(|r| r.partition_result().len()).sum();
/// assert_eq!(answered, 4);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ErrorResponse<'a> {
    request: ElectLeadersRequest<'a>,
    error_code: ErrorCode,
    error_message: Option<&'a [u8]>,
    throttle_time_ms: i32,
}

impl<'a> ElectLeadersRequest<'a> {
    /// The response that refuses this request with `error_code` and `error_message` for
    /// every partition it names. See [`ErrorResponse`].
    pub fn error_response(
        &self,
        error_code: ErrorCode,
        error_message: Option<&'a [u8]>,
    ) -> ErrorResponse<'a> {
        ErrorResponse {
            request: *self,
            error_code,
            error_message,
            throttle_time_ms: 0,
        }
    }
}

impl ErrorResponse<'_> {
    /// Sets `ThrottleTimeMs` (0 by default).
    pub fn throttle_time_ms(mut self, throttle_time_ms: i32) -> Self {
        self.throttle_time_ms = throttle_time_ms;
        self
    }
}

/// A result entry of an [`ErrorResponse`]: one requested topic.
pub struct ErrorReplicaElectionResult<'a> {
    entry: TopicPartitions<'a>,
    error_code: ErrorCode,
    error_message: Option<&'a [u8]>,
}

/// A partition entry of an [`ErrorResponse`]: one requested partition.
pub struct ErrorPartitionResult<'a> {
    partition_id: i32,
    error_code: ErrorCode,
    error_message: Option<&'a [u8]>,
}

impl EncodeResponse for ErrorResponse<'_> {
    fn correlation_id(&self) -> i32 {
        self.request.correlation_id()
    }
    fn header_tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        core::iter::empty()
    }
    fn throttle_time_ms(&self) -> i32 {
        self.throttle_time_ms
    }
    fn error_code(&self) -> ErrorCode {
        if version::has_top_level_error_code(self.request.version()) {
            self.error_code
        } else {
            ErrorCode::NONE
        }
    }
    fn replica_election_results(
        &self,
    ) -> impl Iterator<Item = impl EncodeReplicaElectionResult + '_> + '_ {
        let topics = self.request.topic_partitions();
        topics
            .into_iter()
            .flat_map(|list| list.iter())
            .map(|entry| ErrorReplicaElectionResult {
                entry,
                error_code: self.error_code,
                error_message: self.error_message,
            })
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        core::iter::empty()
    }
}

impl EncodeReplicaElectionResult for ErrorReplicaElectionResult<'_> {
    fn topic(&self) -> &[u8] {
        self.entry.topic()
    }
    fn partition_result(&self) -> impl Iterator<Item = impl EncodePartitionResult + '_> + '_ {
        self.entry
            .partitions()
            .iter()
            .map(|partition_id| ErrorPartitionResult {
                partition_id,
                error_code: self.error_code,
                error_message: self.error_message,
            })
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        core::iter::empty()
    }
}

impl EncodePartitionResult for ErrorPartitionResult<'_> {
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
        core::iter::empty()
    }
}
