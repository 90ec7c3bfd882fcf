//! The JSON contract of `elect-leaders` (docs/JSON.md), both directions: ElectLeaders
//! frames written as JSON objects, one per frame, in the contract's field names and order
//! ([`print`](mod@print)), and JSON objects read back into frames ([`stream`]).
//!
//! The `elect-leaders` tool prints through here (`decode`, `scan --json`, `compare`,
//! `summary`) and reads `encode`'s input through here; other programs can speak the same
//! JSON with it. Frames are parsed and written by the codec (`kafka-elect-leaders`), and the
//! place a frame was found in a capture is the capture crate's
//! (`kafka-elect-leaders-capture`).
//!
//! Within: the printer ([`print`](mod@print)), and what `encode` reads: a stream of objects
//! ([`stream`]), each read piece by piece, its lists packed as they are read (`packed`),
//! checked and handed to the library's writer (`sources`). Bytes that are not text are hex
//! ([`hex`]); the messages name the versions as [`versions`] writes them.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod hex;
mod packed;
pub mod print;
mod sources;
pub mod stream;
pub mod versions;

// The README's example is compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
