//! The closed doors: every API key of Kafka in one class ([`apis`]: forwarded, policed,
//! rewritten or closed), and the filter that closes the connection of a client that sends
//! a key only brokers send or one the guard decided nothing for ([`Doors`]).

pub mod apis;
mod filter;

pub use filter::Doors;
