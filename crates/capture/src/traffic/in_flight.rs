//! The requests in flight: what the pairing table keeps of each request until its response
//! comes ([`Waiting`], and its cost in the in-flight budgets), and the few header fields
//! read off the wire to find frame boundaries. Whether a request is answered at all is the
//! codec's [`never_answered`](kafka_elect_leaders::never_answered).
//!
//! Below the framing (which proves a response boundary by the requests in flight) and the
//! pairing (which keeps the table); it knows neither.

use kafka_elect_leaders::Pending;

use super::item::Asked;

/// What one request waiting for its response costs in the in-flight budgets
/// ([`Limits::in_flight_bytes`](crate::Limits::in_flight_bytes),
/// [`Limits::in_flight_total_bytes`](crate::Limits::in_flight_total_bytes)): the table's
/// room for it. The table of a connection grows by doubling, within its budget, and is
/// given back when it empties.
pub const IN_FLIGHT_ENTRY_BYTES: usize = std::mem::size_of::<Waiting>();

/// A request waiting for its response.
#[derive(Clone, Copy)]
pub(super) struct Waiting {
    pub(super) pending: Pending,
    /// When and where it was seen.
    pub(super) asked: Asked,
    /// Bytes of the requests were lost just before it (requests may have been lost).
    pub(super) after_gap: bool,
}

pub(super) fn be_i32(b: &[u8], at: usize) -> Option<i32> {
    Some(i32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

pub(super) fn be_i16(b: &[u8], at: usize) -> Option<i16> {
    Some(i16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
