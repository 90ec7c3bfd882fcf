//! A structure-aware mutator for fuzz campaigns (feature `arbitrary`); documented on
//! `mutate_request`.
//!
//! Bottom up: `mutant` (what a mutation made), `values` (the draws), `malform` (lies
//! written over a canonical frame), `byte_level` ([`mutate_bytes`]), then the request and
//! response mutators ([`mutate_request`], [`mutate_response`]).

mod byte_level;
mod malform;
mod mutant;
mod request;
mod response;
mod values;

pub use byte_level::mutate_bytes;
pub use mutant::{Mutant, MutateError, Mutation};
pub use request::mutate_request;
pub use response::mutate_response;
