//! The checks the fuzz targets run, shared with the stable replay test
//! (`tests/replay.rs`), which runs every seed and every past crash through them. Not
//! published: a crate so that the fuzz targets and the replay compile the same code.
//!
//! Each `check_*` function takes the raw fuzz input and panics on a failed property. One
//! file per target family (`parse`, `differential`, `edit`, `policy`, `capture`, ...), with
//! the models and plain copies they share in `models`, `plain`, `canonical` and `sources`.

#![allow(dead_code)] // each fuzz target uses one check

use std::collections::BTreeMap;

use arbitrary::{Arbitrary, Unstructured};
use kafka_elect_leaders::{
    is_supported, nth_version, API_KEY, MIN_VERSION, VERSIONS, VERSION_COUNT,
};
use kafka_elect_leaders::{
    parse_request, parse_response, split_frame, ElectLeadersRequest, ElectLeadersRequestData,
    ElectLeadersResponse, ElectLeadersResponseData, ElectionType, EncodeErrorKind, EncodeRequest,
    EncodeResponse, ErrorCode, ErrorKind, Frames, PartitionResultData, ReplicaElectionResultData,
    TaggedFieldData, TaggedFields, TopicPartitionsData,
};

mod addresses;
mod canonical;
mod capture;
mod conn;
mod damage;
mod differential;
mod edit;
mod endpoints;
mod error_response;
mod generators;
mod leadership;
mod models;
mod needed;
mod pairing;
mod parse;
mod plain;
mod policy;
mod reencode;
mod scan;
mod sources;
mod split_stream;

pub use addresses::*;
pub use canonical::*;
pub use capture::*;
pub use conn::*;
pub use differential::*;
pub use edit::*;
pub use error_response::*;
pub use generators::*;
pub use leadership::*;
pub use models::*;
pub use needed::*;
pub use pairing::*;
pub use parse::*;
pub use plain::*;
pub use policy::*;
pub use reencode::*;
pub use scan::*;
use sources::*;
pub use split_stream::*;
