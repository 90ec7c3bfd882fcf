//! Deliberate malformations written over a canonical frame: a string's length or an array's
//! count that lies, two tagged fields out of order, and whole-frame ones (the size prefix
//! off, the body cut short, bytes left over). Where each field is comes from the parsed
//! frame, in the request and response mutators.

use std::vec::Vec;

use super::mutant::{bad, Mutant};
use super::values::{weighted, Rng};
use crate::field;

/// Adjacent tagged fields: (start of first, start of second, end of second).
pub(super) fn collect_tag_pairs(
    tags: crate::TaggedFields<'_>,
    pairs: &mut Vec<(usize, usize, usize)>,
) {
    let mut previous: Option<core::ops::Range<usize>> = None;
    for field in tags {
        let r = field.range();
        if let Some(p) = previous {
            pairs.push((p.start, r.start, r.end));
        }
        previous = Some(r);
    }
}

pub(super) fn swap_adjacent(frame: &mut [u8], a: usize, b: usize, c: usize) {
    frame[a..c].rotate_left(b - a);
}

/// The width of a minimal unsigned varint.
fn varint_width(mut v: u32) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Writes `value` as an unsigned varint of exactly `width` bytes (padded, or truncated to
/// what fits).
fn put_varint(frame: &mut [u8], at: usize, width: usize, value: u64) {
    let value = value.min((1u64 << (7 * width).min(35)) - 1);
    for i in 0..width {
        let mut byte = ((value >> (7 * i)) & 0x7f) as u8;
        if i + 1 < width {
            byte |= 0x80;
        }
        frame[at + i] = byte;
    }
}

/// A string's length prefix, before its bytes at `at`, changed to lie.
pub(super) fn lie_string_len(
    rng: &mut Rng,
    frame: &mut [u8],
    at: usize,
    len: usize,
    compact: bool,
) {
    if compact {
        let width = varint_width(len as u32 + 1);
        let value = match rng.below(4) {
            // Past the string by any amount.
            0 | 1 => len as u64 + 2 + rng.below(1 << 16) as u64,
            _ => rng.pick(&[0u64, len as u64 + 2, 32769, u64::MAX]),
        };
        put_varint(frame, at - width, width, value);
    } else {
        let value = match rng.below(5) {
            0 => (len as i16).saturating_add(1 + rng.below(32767) as i16),
            1 => -2 - rng.below(32766) as i16,
            _ => rng.pick(&[-2i16, len as i16 + 1, i16::MAX, i16::MIN]),
        };
        frame[at - 2..at].copy_from_slice(&value.to_be_bytes());
    }
}

/// An array's count at `at` changed to lie.
pub(super) fn lie_count(rng: &mut Rng, frame: &mut [u8], at: usize, count: usize, compact: bool) {
    if compact {
        let width = varint_width(count as u32 + 1);
        let value = match rng.below(4) {
            0 | 1 => count as u64 + 2 + rng.below(1 << 20) as u64,
            _ => rng.pick(&[count as u64 + 2, count as u64, u64::MAX]),
        };
        put_varint(frame, at, width, value);
    } else {
        let value = match rng.below(5) {
            0 => (count as i32).saturating_add(1 + rng.below(1 << 20) as i32),
            1 => rng.next() as i32 | i32::MIN,
            _ => rng.pick(&[-2i32, count as i32 + 1, i32::MAX, i32::MIN]),
        };
        frame[at..at + 4].copy_from_slice(&value.to_be_bytes());
    }
}

/// Whole-frame malformations of the canonical frame in `out[..len]`: the size prefix off by
/// one, the body cut short, bytes left over.
pub(super) fn raw_frame(rng: &mut Rng, out: &mut [u8], len: usize, version: i16) -> Option<Mutant> {
    let size = i32::from_be_bytes([out[0], out[1], out[2], out[3]]);
    // A short frame has few places to cut: cutting is drawn less there.
    let cut_weight = 1 + (len / 32).min(3);
    let (len, change) = match weighted(rng, &[4, cut_weight * usize::from(len > 5), 4]) {
        0 => {
            // Off by one, or by a few (up to 64 either way).
            let by = if rng.chance(8) {
                1
            } else {
                1 + rng.below(64) as i32
            };
            let delta = if rng.chance(2) { by } else { -by };
            out[..4].copy_from_slice(&size.wrapping_add(delta).to_be_bytes());
            let change = if by == 1 {
                "size prefix off by one"
            } else {
                "size prefix off by a few"
            };
            (len, change)
        }
        1 if len > 5 => {
            let cut = 4 + rng.below(len - 5) + 1;
            out[..4].copy_from_slice(&((cut - 4) as i32).to_be_bytes());
            (cut, "body cut short, size prefix fixed")
        }
        _ => {
            let extra = 1 + rng.below(16);
            if len + extra > out.len() {
                return None;
            }
            for b in &mut out[len..len + extra] {
                *b = if rng.chance(2) { 0 } else { rng.next() as u8 };
            }
            out[..4].copy_from_slice(&size.wrapping_add(extra as i32).to_be_bytes());
            (len + extra, "bytes left over, size prefix fixed")
        }
    };
    Some(Mutant {
        len,
        version,
        mutation: bad(field::SIZE, change),
    })
}
