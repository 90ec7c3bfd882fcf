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
//!
//! # In a proxy
//!
//! A proxy reads whole connections, every API and not only ElectLeaders. The codec gives it:
//!
//! - [`peek_request`]: API key, version and correlation id of a request of any API;
//!   [`peek_response`]: a response's correlation id. Neither parses the body.
//! - [`ApiKey`] and [`ErrorCode`]: Kafka's API keys (name, latest version, first flexible
//!   version, header versions) and error codes (every one of Kafka 4.4, to 136), each from
//!   one table that `tests/kafka_tables.rs` checks against kafka-clients' `ApiKeys` and
//!   `Errors`. [`read_request_header`] reads the header of a request of any API as that table
//!   lays it out; [`never_answered`] tells a Produce with `acks` 0, which Kafka never answers.
//! - [`set_request_correlation_id`] / [`set_response_correlation_id`]: another correlation id
//!   written in place (4 bytes; nothing parsed or re-encoded), for a proxy that puts several
//!   clients on one broker connection.
//! - [`InFlight`]: pairs each response with its request, whose version the response is parsed
//!   at (a response does not carry its version).
//! - [`RequestEdit`] / [`ResponseEdit`] (`view.edit()`): re-emit a parsed frame with another
//!   correlation id, or with topics and partitions dropped. [`error_response`](ElectLeadersRequest::error_response) builds the
//!   answer that refuses a request, as Kafka's `getErrorResponse` does.
//! - [`OwnedRequest`] / [`OwnedResponse`]: a frame checked once and kept with its bytes (`Bytes`,
//!   `Vec<u8>`, ...). They are `Send + 'static`, so they can be held across an `.await`.
//!   `view()` parses again: O(topics), no allocation, and it cannot fail.
//! - `encode_buf(version, &mut impl BufMut)` (feature `bytes`): any source written into a
//!   `BytesMut`'s spare capacity, measured once, nothing zero-filled. `encode_with_len` takes
//!   a length already known; a wrong length is an error and the `BytesMut` is truncated back.
//!   `encode_to_vec` (`std`) makes a `Vec`.
//! - `KafkaFrameCodec` (feature `tokio`): a tokio-util `Decoder`/`Encoder` for Kafka frames
//!   of every API. It yields whole frames, size prefix kept, has a maximum frame size, and
//!   reserves exactly the bytes still missing.
//!
//! Parse, edit, refuse, and read the answer:
//!
//! ```rust
//! use kafka_elect_leaders::{
//!     parse_request, parse_response, split_frame, EncodeRequest, EncodeResponse, ErrorCode,
//! };
//!
//! // Cut one frame off a byte stream (`Incomplete` means: read more and retry).
//! let stream = std::fs::read("corpus/request-v2-multi.bin").unwrap();
//! let (frame, _rest) = split_frame(&stream).unwrap();
//!
//! let request = parse_request(frame).unwrap();
//! assert_eq!((request.version(), request.correlation_id()), (2, 16));
//! // `None` would mean "all partitions".
//! for entry in request.topic_partitions().unwrap() {
//!     let _name: &[u8] = entry.topic();
//!     let _sum: i64 = entry.partitions().iter().map(i64::from).sum();
//! }
//!
//! // Forward it under another correlation id, without one topic: no copies, no allocation.
//! let edit = request.edit().correlation_id(1).retain_topics(|t| t.topic() != b"payments");
//! let mut out = [0u8; 512];
//! let len = edit.encode(request.version(), &mut out).unwrap();
//! assert_eq!(parse_request(&out[..len]).unwrap().correlation_id(), 1);
//!
//! // Or refuse it: every requested partition answered with one error.
//! let refusal = request.error_response(ErrorCode::NOT_CONTROLLER, None);
//! let len = refusal.encode(request.version(), &mut out).unwrap();
//!
//! // A response does not say its version: use the request's.
//! let response = parse_response(&out[..len], request.version()).unwrap();
//! let refused = response
//!     .replica_election_results()
//!     .iter()
//!     .flat_map(|r| r.partition_result())
//!     .filter(|p| p.error_code() == ErrorCode::NOT_CONTROLLER)
//!     .count();
//! assert_eq!(refused, 9);
//! ```
//!
//! Each struct view can report the byte range it covers in the frame (`range()`).
//!
//! The same steps on a tokio stream:
//!
//! ```rust
//! // Needs the `tokio` feature.
//! #[cfg(feature = "tokio")]
//! {
//!     use bytes::BytesMut;
//!     use futures_util::StreamExt;
//!     use kafka_elect_leaders::{
//!         peek_request, set_request_correlation_id, EncodeRequestExt, InFlight, KafkaFrameCodec,
//!         OwnedRequest, Pending,
//!     };
//!     use tokio_util::codec::{Encoder, FramedRead};
//!
//!     let client = std::fs::read("corpus/request-v2-multi.bin").unwrap();
//!     let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
//!     runtime.block_on(async {
//!         let mut codec = KafkaFrameCodec::new();
//!         let mut from_client = FramedRead::new(&client[..], codec);
//!         let mut in_flight = InFlight::<64>::new();
//!         let mut upstream = BytesMut::with_capacity(64 * 1024);
//!         let mut upstream_id = 1000;
//!         while let Some(frame) = from_client.next().await {
//!             let mut frame = frame.unwrap();
//!             let peek = peek_request(&frame).unwrap();
//!             upstream_id += 1;
//!             let pending = Pending { correlation_id: upstream_id, ..peek.into() };
//!             in_flight.push(pending).unwrap();
//!             if !peek.is_elect_leaders() {
//!                 // Another API: forwarded as it is, under the proxy's correlation id.
//!                 set_request_correlation_id(&mut frame, upstream_id).unwrap();
//!                 codec.encode(frame, &mut upstream).unwrap();
//!                 continue;
//!             }
//!             let request = OwnedRequest::new(frame.freeze()).unwrap();
//!             tokio::task::yield_now().await; // held across an .await
//!             let view = request.view();
//!             let edit = view
//!                 .edit()
//!                 .correlation_id(upstream_id)
//!                 .retain_topics(|t| t.topic() != b"payments");
//!             edit.encode_buf(view.version(), &mut upstream).unwrap();
//!         }
//!         assert_eq!(peek_request(&upstream).unwrap().correlation_id, 1001);
//!         assert_eq!(in_flight.len(), 1);
//!     });
//! }
//! ```
//!
//! `examples/proxy_pipeline.rs` runs the whole path in both directions over a recorded
//! connection: `cargo run --example proxy_pipeline --features tokio`.
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
