//! The ApiVersions cap: the versions of the APIs the guard reads ([`cap`]), and the filter
//! that caps the broker's ApiVersions answer to them ([`ApiVersions`]).

pub mod cap;
mod filter;

pub use filter::ApiVersions;
