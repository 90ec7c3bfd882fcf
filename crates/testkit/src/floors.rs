//! The floors the speed targets are measured against, shared by `benches/codec.rs` and
//! `examples/profile.rs`, so both measure the same code. Every function is `#[inline]`: a
//! floor must compile into the caller's loop as it did when it was a module of the bench,
//! not stay behind a call into this crate.

/// The read floor: every byte of the body read once, as big-endian 32-bit words.
#[inline]
pub fn read_floor(body: &[u8]) -> i64 {
    let words = body.chunks_exact(4);
    let tail = words.remainder().iter().map(|&b| u64::from(b)).sum::<u64>();
    let sum = words
        .map(|w| u64::from(u32::from_be_bytes([w[0], w[1], w[2], w[3]])))
        .sum::<u64>();
    (sum + tail) as i64
}

/// An unsigned varint at `at`; returns (value, bytes).
#[inline(always)]
fn uvarint(b: &[u8], at: usize) -> (usize, usize) {
    let mut v = 0usize;
    let mut i = 0;
    loop {
        let byte = b[at + i];
        v |= usize::from(byte & 0x7f) << (7 * i);
        i += 1;
        if byte < 0x80 {
            return (v, i);
        }
    }
}

/// A string length or array count at `at`: (value, bytes of the prefix). Compact values
/// are length + 1; classic strings int16, classic arrays int32.
#[inline(always)]
fn prefix(b: &[u8], at: usize, flexible: bool, int32: bool) -> (usize, usize) {
    if flexible {
        let (v, n) = uvarint(b, at);
        (v.wrapping_sub(1), n)
    } else if int32 {
        let v = i32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        (v as usize, 4)
    } else {
        let v = i16::from_be_bytes([b[at], b[at + 1]]);
        (v as isize as usize, 2)
    }
}

/// The chase floor of a request body: the topic count, then per topic only its name's
/// length and its partition count, which say where the next topic starts. Trusts the
/// frame (it was built by the writer); a floor, not a parser.
#[inline]
pub fn chase_request(b: &[u8], version: i16) -> i64 {
    if version >= 2 {
        chase_request_in::<true>(b, version)
    } else {
        chase_request_in::<false>(b, version)
    }
}

#[inline(always)]
fn chase_request_in<const FLEXIBLE: bool>(b: &[u8], version: i16) -> i64 {
    let flexible = FLEXIBLE;
    let mut at = usize::from(version >= 1); // ElectionType
    let (topics, n) = prefix(b, at, flexible, true);
    at += n;
    for _ in 0..topics {
        let (len, n) = prefix(b, at, flexible, false);
        at += n + len;
        let (count, n) = prefix(b, at, flexible, true);
        at += n + 4 * count;
        if flexible {
            at += 1; // no tagged fields
        }
    }
    at as i64
}

/// The chase floor of a response body: per topic its name's length and result count, per
/// result its message length and tagged-field count.
#[inline]
pub fn chase_response(b: &[u8], version: i16) -> i64 {
    if version >= 2 {
        chase_response_in::<true>(b, version)
    } else {
        chase_response_in::<false>(b, version)
    }
}

#[inline(always)]
fn chase_response_in<const FLEXIBLE: bool>(b: &[u8], version: i16) -> i64 {
    let flexible = FLEXIBLE;
    let mut at = 4 + if version >= 1 { 2 } else { 0 };
    let (topics, n) = prefix(b, at, flexible, true);
    at += n;
    for _ in 0..topics {
        let (len, n) = prefix(b, at, flexible, false);
        at += n + len;
        let (count, n) = prefix(b, at, flexible, true);
        at += n;
        for _ in 0..count {
            at += 6;
            let (len, n) = prefix(b, at, flexible, false);
            at += n + if len == usize::MAX { 0 } else { len };
            if flexible {
                let (tags, n) = uvarint(b, at);
                at += n;
                debug_assert_eq!(tags, 0);
            }
        }
        if flexible {
            at += 1;
        }
    }
    at as i64
}
