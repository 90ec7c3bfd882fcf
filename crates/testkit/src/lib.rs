//! Helpers for the tests and benchmarks of the kafka-elect-leaders workspace; not published.
//!
//! - [`corpus`]: the sample frames of `corpus/`, hex literals, and surgery on frames.
//! - [`pcap`]: a small writer of pcap and pcapng captures and hand-built packets (every link
//!   type the capture reader knows, IPv4 and IPv6, TCP), for tests that need a capture with
//!   a given fault.
//! - [`floors`]: the lower bounds the codec's speed is measured against (a read of every
//!   byte, and a chase of only the lengths and counts), for `benches/codec.rs` and
//!   `examples/profile.rs`.
//! - [`modules`]: the check that a crate's modules have no import circle, which every
//!   crate's `tests/modules.rs` runs.
//! - [`kafka_tables`](mod@kafka_tables): Apache Kafka's `ApiKeys`, `Errors` and
//!   `TopicConfig`, read from kafka-clients by `interop/java` (skipped without Java).
//! - [`traps`]: inputs that make a search of arbitrary bytes work as hard as it can.
//!
//! It depends on nothing but std, so every crate of the workspace, the codec included, can
//! take it as a dev-dependency without a cycle.

#![forbid(unsafe_code)]

pub mod corpus;
pub use corpus::*;
pub mod floors;
pub mod kafka_tables;
pub use kafka_tables::kafka_tables;
pub mod modules;
pub mod pcap;
pub mod traps;
