//! Whole Kafka connections out of a capture: each TCP direction cut into frames, the broker
//! side told apart from the client side, every request remembered (whatever its API) until
//! its response comes, and every ElectLeaders frame handed on with where it was found.
//!
//! The capture layer (`capture`) delivers reassembled bytes and gaps; this layer knows
//! Kafka: size prefixes, request headers, correlation ids. It does not decode ElectLeaders
//! itself: it hands whole frames to the library's parsers (through the commands).
//!
//! Memory: per open connection, at most one frame per direction (an ElectLeaders frame,
//! or the head of a frame of another API, passed over as it streams by), all of them within
//! [`crate::Limits::held_bytes`], the requests in flight within the in-flight budgets, and the responses waiting for
//! their requests (at most [`HELD_RESPONSES`] and [`HELD_RESPONSE_BYTES`]). The capture
//! layer bounds the open connections ([`crate::Limits`]).
//!
//! In layers of its own, each importing only from those before it: `item` (what is handed
//! on), `in_flight` (the requests waiting, and whether one is answered at all), `framing`
//! (one direction cut into frames, boundaries proven), `pairing` (the table and the held
//! responses), `analyzer` ([`Analyzer`]), and `iter` ([`Traffic`], with the reader). This
//! file is only their index.

mod analyzer;
mod framing;
mod in_flight;
mod item;
mod iter;
mod pairing;

pub use analyzer::{Analyzer, DEFAULT_PORT};
pub use framing::PASS_OVER_HEAD;
pub use in_flight::IN_FLIGHT_ENTRY_BYTES;
pub use item::{bad_frame, Asked, Found, Item, Note, Origin, Role, What};
pub use iter::Traffic;
pub use pairing::{HELD_RESPONSES, HELD_RESPONSE_BYTES};
