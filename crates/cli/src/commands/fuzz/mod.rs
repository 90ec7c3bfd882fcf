//! `fuzz`: campaigns against live Kafka implementations, over plain blocking `std::net`.
//!
//! - [`target`]: generated and mutated ElectLeaders requests to one broker (`--target`);
//! - [`compare`]: the same requests to two brokers, their answers compared (`--compare`);
//! - [`serve`]: a hostile broker for fuzzing clients (`--serve`);
//! - [`broker`]: the broker client `target` and `compare` share (connection, ApiVersions,
//!   pacing, signals).
//!
//! [`run()`] picks the campaign the flags name.

mod broker;
mod compare;
mod run;
mod serve;
mod target;

pub use run::run;
