//! Rewriting a frame's correlation id in place, for a proxy that multiplexes clients onto
//! one upstream connection: four bytes change, nothing is parsed past the header's start
//! and nothing is re-encoded. Works on frames of every API.

use crate::error::Error;
use crate::frame::{peek_request, peek_response, SIZE_PREFIX_LEN};

/// Where a request's `CorrelationId` lies: after the size prefix, the API key and version.
const REQUEST_CORRELATION_ID: usize = SIZE_PREFIX_LEN + 4;
/// Where a response's `CorrelationId` lies: right after the size prefix.
const RESPONSE_CORRELATION_ID: usize = SIZE_PREFIX_LEN;

/// Sets the `CorrelationId` of any request frame, in place, and returns the one it had.
///
/// The frame is checked as [`peek_request`] checks it: its first 12 bytes must be there,
/// and its size prefix must be non-negative and large enough to hold the header's first
/// three fields. Otherwise the error is `peek_request`'s and `frame` is left as it was. The
/// frame need not be whole, so a proxy can rewrite the header of a large frame whose end is
/// still on its way.
///
/// ```
/// use kafka_elect_leaders::{parse_request, set_request_correlation_id};
///
/// let mut frame = std::fs::read("corpus/request-v2-multi.bin").unwrap();
/// let old = set_request_correlation_id(&mut frame, 1_000).unwrap();
/// assert_eq!(old, 16);
/// assert_eq!(parse_request(&frame).unwrap().correlation_id(), 1_000);
///
/// // Too short to hold the header: refused, and nothing written.
/// let mut short = [0, 0, 0, 8, 0, 43, 0];
/// assert_eq!(set_request_correlation_id(&mut short, 1).unwrap_err().needed(), Some(5));
/// assert_eq!(short, [0, 0, 0, 8, 0, 43, 0]);
/// ```
pub fn set_request_correlation_id(frame: &mut [u8], correlation_id: i32) -> Result<i32, Error> {
    let old = peek_request(frame)?.correlation_id;
    write_i32(frame, REQUEST_CORRELATION_ID, correlation_id);
    Ok(old)
}

/// Sets the `CorrelationId` of any response frame, in place, and returns the one it had.
///
/// The frame is checked as [`peek_response`] checks it: its first 8 bytes must be there,
/// and its size prefix must be non-negative and at least 4. Otherwise the error is
/// `peek_response`'s and `frame` is left as it was. The frame need not be whole.
///
/// ```
/// use kafka_elect_leaders::{parse_response, set_response_correlation_id};
///
/// let mut frame = std::fs::read("corpus/response-v2-multi.bin").unwrap();
/// let old = parse_response(&frame, 2).unwrap().correlation_id();
/// assert_eq!(set_response_correlation_id(&mut frame, -7).unwrap(), old);
/// assert_eq!(parse_response(&frame, 2).unwrap().correlation_id(), -7);
/// ```
pub fn set_response_correlation_id(frame: &mut [u8], correlation_id: i32) -> Result<i32, Error> {
    let old = peek_response(frame)?.correlation_id;
    write_i32(frame, RESPONSE_CORRELATION_ID, correlation_id);
    Ok(old)
}

/// Writes a big-endian int32 at `at`; the peek has checked that the frame holds it.
fn write_i32(frame: &mut [u8], at: usize, value: i32) {
    if let Some(field) = frame.get_mut(at..at + 4) {
        field.copy_from_slice(&value.to_be_bytes());
    }
}
