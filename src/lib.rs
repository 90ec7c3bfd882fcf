//! Zero-copy, allocation-free parsing of Apache Kafka **ElectLeaders** frames (API key 43),
//! requests and responses, versions 0 to 2.
//!
//! A frame is checked once, in one pass, by nom parsers; what comes back is a view that
//! borrows the frame's bytes and whose lazy iterators cannot fail. Nothing is copied and
//! nothing is allocated: topic names, client ids and error messages are `&[u8]` slices of
//! the frame, partition lists are decoded as they are iterated.
//!
//! - [`split_frame`] / [`Frames`] cut whole frames off a byte stream; [`peek_request`]
//!   reads any request's API key, version and correlation id, [`peek_response`] any
//!   response's correlation id.
//! - [`InFlight`] pairs the responses of a connection with their requests, whatever their
//!   API ([`ApiKey`] names them, from Kafka's table of API keys), so a response is parsed
//!   with its request's version.
//! - [`read_request_header`] reads the header of a request of any API, laid out as Kafka's
//!   table says for its key and version; [`never_answered`] tells a request Kafka never
//!   answers (a Produce with `acks` 0), so that pairing does not wait for it.
//! - [`parse_request`] and [`parse_response`] parse one frame into an
//!   [`ElectLeadersRequest`] or an [`ElectLeadersResponse`].
//! - Errors ([`Error`]) are small `Copy` values naming the field and the byte offset.
//! - For proxies: [`set_request_correlation_id`] and [`set_response_correlation_id`]
//!   rewrite a frame's correlation id in place; [`OwnedRequest`] and [`OwnedResponse`] keep
//!   a validated frame across an `.await`; with the `bytes` feature `encode_buf`
//!   (`EncodeRequestExt`) puts a frame into a `bytes::BufMut`, and with `tokio`
//!   `KafkaFrameCodec` cuts a socket's bytes into frames of every API.
//! - For fuzz campaigns: with `arbitrary`, generated messages and a structure-aware
//!   mutator; with `compare`, [`compare`](mod@compare) tells where two brokers' answers to
//!   one request differ (these two allocate).
//!
//! ```
//! use kafka_elect_leaders::{parse_request, ElectionType};
//!
//! let frame = std::fs::read("corpus/request-v0.bin").unwrap();
//! let request = parse_request(&frame).unwrap();
//! assert_eq!(request.version(), 0);
//! assert_eq!(request.election_type(), ElectionType::PREFERRED);
//! let mut partitions = 0;
//! for topic in request.topic_partitions().unwrap() {
//!     assert!(topic.topic_str().is_ok());
//!     partitions += topic.partitions().len();
//! }
//! assert_eq!(partitions, 4);
//! ```
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(feature = "std")]
extern crate std;

mod any_header;
mod api_key;
#[cfg(feature = "arbitrary")]
mod arbitrary;
#[cfg(feature = "tokio")]
mod codec;
#[cfg(feature = "compare")]
#[cfg_attr(docsrs, doc(cfg(feature = "compare")))]
pub mod compare;
mod conn;
mod debug;
mod election_type;
mod error;
mod error_code;
pub mod field;
mod frame;
mod header;
mod list;
#[cfg(feature = "arbitrary")]
mod mutate;
mod owned;
mod produce;
mod request;
mod response;
mod rewrite;
#[cfg(feature = "scan")]
mod scan;
mod tagged;
mod version;
mod wire;
mod write;

pub use any_header::{read_request_header, AnyRequestHeader};
pub use api_key::ApiKey;
#[cfg(feature = "arbitrary")]
#[cfg_attr(docsrs, doc(cfg(feature = "arbitrary")))]
pub use arbitrary::{
    arbitrary_any_version, arbitrary_version, AnyVersion, ArbitraryPartitionResult,
    ArbitraryReplicaElectionResult, ArbitraryRequest, ArbitraryResponse, ArbitraryTopicPartitions,
};
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub use codec::{CodecError, KafkaFrameCodec, RequestAt, ResponseAt};
pub use conn::{api_name, is_known_request, Answered, InFlight, InFlightFull, Pending};
pub use election_type::ElectionType;
pub use error::{Error, ErrorKind};
pub use error_code::ErrorCode;
pub use frame::{
    peek_request, peek_response, split_frame, split_frame_with_max, Frames, RequestPeek,
    ResponsePeek, DEFAULT_MAX_FRAME_SIZE, SIZE_PREFIX_LEN,
};
pub use header::{RequestHeader, ResponseHeader};
pub use list::{Int32Iter, Int32List, List, ListIter};
#[cfg(feature = "arbitrary")]
#[cfg_attr(docsrs, doc(cfg(feature = "arbitrary")))]
pub use mutate::{mutate_bytes, mutate_request, mutate_response, Mutant, MutateError, Mutation};
pub use owned::{FrameStorage, OwnedParseError, OwnedRequest, OwnedResponse};
pub use produce::{never_answered, peek_produce, ProducePeek};
pub use request::{
    parse_request, visit_request, ElectLeadersRequest, RequestVisitor, TopicPartitions,
};
pub use response::{
    parse_response, visit_response, ElectLeadersResponse, PartitionResult, ReplicaElectionResult,
    ResponseVisitor,
};
pub use rewrite::{set_request_correlation_id, set_response_correlation_id};
#[cfg(feature = "scan")]
#[cfg_attr(docsrs, doc(cfg(feature = "scan")))]
pub use scan::{scan_requests, scan_responses, RequestScanner, ResponseScanner, ScanStats};
pub use tagged::{TaggedField, TaggedFields};
pub use version::{
    has_election_type, has_top_level_error_code, is_flexible, is_supported, nth_version,
    request_header_version, response_header_version, API_KEY, FIRST_FLEXIBLE_VERSION,
    LATEST_VERSION, MAX_VERSION, MIN_VERSION, VERSIONS, VERSION_COUNT,
};
pub use wire::MAX_STRING_LEN;
pub use write::{
    EditedTopicPartitions, ElectLeadersRequestData, ElectLeadersResponseData, EncodeError,
    EncodeErrorKind, EncodePartitionResult, EncodeReplicaElectionResult, EncodeRequest,
    EncodeResponse, EncodeTopicPartitions, ErrorPartitionResult, ErrorReplicaElectionResult,
    ErrorResponse, PartitionResultData, ReplicaElectionResultData, RequestEdit, ResponseEdit,
    TaggedFieldData, TopicPartitionsData, DEFAULT_TIMEOUT_MS,
};
#[cfg(any(feature = "bytes", feature = "std"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "bytes", feature = "std"))))]
pub use write::{EncodeRequestExt, EncodeResponseExt};

// The README's example is compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
