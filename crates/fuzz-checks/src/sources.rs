//! Where a message comes from in the targets below: the input's own bytes (a size-prefixed
//! frame, then the parameters), or the crate's generator (`ArbitraryRequest`,
//! `ArbitraryResponse`), which makes a valid message of any shape from few bytes.

use super::*;

/// A request frame and what is left of the input for the parameters.
pub(crate) fn take_request(data: &[u8], generate: bool) -> Option<(Vec<u8>, Unstructured<'_>)> {
    if generate {
        return generated_request(data);
    }
    let (frame, rest) = split_frame(data).ok()?;
    Some((frame.to_vec(), Unstructured::new(rest)))
}

/// A response frame, its version, and what is left of the input.
pub(crate) fn take_response(
    data: &[u8],
    generate: bool,
    version: i16,
) -> Option<(Vec<u8>, i16, Unstructured<'_>)> {
    if generate {
        return generated_response(data);
    }
    let (frame, rest) = split_frame(data).ok()?;
    Some((frame.to_vec(), version, Unstructured::new(rest)))
}

pub(crate) fn generated_request(data: &[u8]) -> Option<(Vec<u8>, Unstructured<'_>)> {
    use kafka_elect_leaders::{ArbitraryRequest, EncodeRequestExt};
    let mut u = Unstructured::new(data);
    let r = ArbitraryRequest::arbitrary(&mut u).ok()?;
    let frame = r.encode_to_vec(r.version).ok()?;
    Some((frame, u))
}

pub(crate) fn generated_response(data: &[u8]) -> Option<(Vec<u8>, i16, Unstructured<'_>)> {
    use kafka_elect_leaders::{ArbitraryResponse, EncodeResponseExt};
    let mut u = Unstructured::new(data);
    let r = ArbitraryResponse::arbitrary(&mut u).ok()?;
    let frame = r.encode_to_vec(r.version).ok()?;
    Some((frame, r.version, u))
}

/// A keep/drop decision from a seed and a name, the same each time it is asked.
pub(crate) fn keeps(seed: u64, name: &[u8], salt: i64) -> bool {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed;
    for &b in name.iter().chain(&salt.to_le_bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h >> 63 == 0 || seed == 0
}

/// A client id or message: maybe null, maybe just over or at the 32767-byte limit.
pub(crate) fn some_string<'a>(
    u: &mut Unstructured<'a>,
) -> arbitrary::Result<Option<std::borrow::Cow<'a, [u8]>>> {
    use std::borrow::Cow;
    Ok(match u.int_in_range(0u8..=9)? {
        0 => None,
        1 => Some(Cow::Owned(vec![b'k'; 32767])),
        2 => Some(Cow::Owned(vec![b'k'; 32768])),
        _ => Some(Cow::Borrowed(<&[u8]>::arbitrary(u)?)),
    })
}
