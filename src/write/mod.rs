//! The writer: exact-size encoding of whole frames into buffers the caller provides.
//!
//! Encoding is two steps over one grammar. `encoded_len(version)` runs the message through a
//! byte counter and checks everything Kafka's own writer checks. `encode(version, buf)`
//! checks that `buf` is large enough before writing anything, then runs the same code with
//! a writer. The output is canonical: minimal varints, and -1 or 0 for null.
//!
//! A message comes from a *source*, meaning any type that implements [`EncodeRequest`] or
//! [`EncodeResponse`]. Sources provided here:
//! - plain borrowed data: [`ElectLeadersRequestData`] and [`ElectLeadersResponseData`];
//! - the parsed views themselves, so a frame can be re-emitted without copies;
//! - [`RequestEdit`] and [`ResponseEdit`], a parsed view with some values changed or some
//!   topics and partitions dropped;
//! - [`ErrorResponse`], the answer that refuses a parsed request.
//!
//! With the `bytes` feature a frame can also be put into a `bytes::BufMut`, and with `std`
//! into a new `Vec` ([`EncodeRequestExt`], [`EncodeResponseExt`]).

#[cfg(any(feature = "bytes", feature = "std"))]
mod append;
mod error;
mod request;
mod response;
mod sink;
mod tagged;

#[cfg(feature = "arbitrary")]
pub(crate) use request::tags;

#[cfg(any(feature = "bytes", feature = "std"))]
pub use append::{EncodeRequestExt, EncodeResponseExt};
pub use error::{EncodeError, EncodeErrorKind};
pub use request::{
    EditedTopicPartitions, ElectLeadersRequestData, EncodeRequest, EncodeTopicPartitions,
    RequestEdit, TopicPartitionsData, DEFAULT_TIMEOUT_MS,
};
pub use response::{
    ElectLeadersResponseData, EncodePartitionResult, EncodeReplicaElectionResult, EncodeResponse,
    ErrorPartitionResult, ErrorReplicaElectionResult, ErrorResponse, PartitionResultData,
    ReplicaElectionResultData, ResponseEdit,
};
pub use tagged::TaggedFieldData;
