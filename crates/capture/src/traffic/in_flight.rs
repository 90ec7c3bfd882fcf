//! The requests in flight: what the pairing table keeps of each request until its response
//! comes ([`Waiting`], and its cost in the in-flight budgets), whether a request is answered
//! at all, and the few header fields read off the wire to tell.
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

/// Whether Kafka never answers this request: a Produce with `acks` 0. The header and the
/// body's first fields are read as Kafka's ProduceRequest.json has them: request header v1
/// (v0-v8) or v2 with tagged fields (v9+, flexible); from v3 a nullable `transactional_id`
/// (a compact string from v9) before `acks` (int16). A frame that ends first is taken as
/// answered (the response, if any, is then paired; if none comes, it is unanswered).
pub(super) fn never_answered(frame: &[u8], request: Pending) -> bool {
    const PRODUCE: i16 = 0;
    if request.api_key != PRODUCE {
        return false;
    }
    let version = request.api_version;
    let flexible = version >= 9;
    // Size prefix, api key, version, correlation id, then the client id (int16 length).
    let mut at = 12;
    let Some(len) = be_i16(frame, at) else {
        return false;
    };
    at += 2 + usize::try_from(len).unwrap_or(0);
    if flexible {
        // The header's tagged fields: a count, then tag, size and bytes of each.
        let Some(count) = uvarint(frame, &mut at) else {
            return false;
        };
        for _ in 0..count {
            let (Some(_tag), Some(size)) = (uvarint(frame, &mut at), uvarint(frame, &mut at))
            else {
                return false;
            };
            at = at.saturating_add(size as usize);
            if at > frame.len() {
                return false;
            }
        }
    }
    // Produce's transactional_id, from its version 3 (not an ElectLeaders version).
    const TRANSACTIONAL_ID_SINCE: i16 = 3;
    if version >= TRANSACTIONAL_ID_SINCE {
        if flexible {
            // Compact nullable string: length + 1, 0 for null.
            let Some(n) = uvarint(frame, &mut at) else {
                return false;
            };
            at = at.saturating_add((n as usize).saturating_sub(1));
        } else {
            let Some(n) = be_i16(frame, at) else {
                return false;
            };
            at += 2 + usize::try_from(n).unwrap_or(0);
        }
    }
    be_i16(frame, at) == Some(0)
}

/// An unsigned varint at `*at` (at most 5 bytes: a u32), moving `*at` past it.
pub(super) fn uvarint(b: &[u8], at: &mut usize) -> Option<u32> {
    let mut value = 0u32;
    for i in 0..5 {
        let byte = *b.get(*at)?;
        *at += 1;
        value |= u32::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

pub(super) fn be_i32(b: &[u8], at: usize) -> Option<i32> {
    Some(i32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

pub(super) fn be_i16(b: &[u8], at: usize) -> Option<i16> {
    Some(i16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
