//! The draws a mutation makes: a seeded [`Rng`] (SplitMix64), the boundaries Kafka cares
//! about, values for int32, int16 and int8 fields, strings mutated or put in another's
//! place, and the list and tagged-field operations, each weighted so that one seed's
//! mutants seldom repeat. Nothing here knows a message.

use std::vec::Vec;

use crate::error_code::ErrorCode;
use crate::version::{nth_version, MIN_VERSION, VERSION_COUNT};
use crate::write::TaggedFieldData;

/// SplitMix64: small, fast, and the same everywhere.
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed ^ 0x6a09_e667_f3bc_c909)
    }
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub(super) fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
    pub(super) fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

/// A version other than `version`, each of the others as likely.
pub(super) fn another_version(version: i16, rng: &mut Rng) -> i16 {
    let others = usize::from(VERSION_COUNT) - 1;
    nth_version((version - MIN_VERSION) as u64 + 1 + rng.below(others) as u64)
}

/// The int32 boundaries Kafka cares about.
pub(super) const I32_EDGES: [i32; 10] = [
    0,
    -1,
    1,
    i32::MAX,
    i32::MIN,
    32767,
    32768,
    -32768,
    65535,
    0x7fff_fffe,
];
pub(super) const I16_EDGES: [i16; 8] = [0, -1, 1, i16::MAX, i16::MIN, 35, 41, 84];
const I8_EDGES: [i8; 6] = [0, 1, 2, -1, i8::MAX, i8::MIN];
const TAG_EDGES: [u32; 8] = [0, 1, 63, 127, 128, 16383, 16384, u32::MAX];
/// The longest string Kafka reads or writes.
static LONGEST: [u8; 32767] = [b'x'; 32767];

/// Picks an index by weight: `weights[i]` chances in the sum of them for `i`.
pub(super) fn weighted(rng: &mut Rng, weights: &[usize]) -> usize {
    let total: usize = weights.iter().sum();
    let mut at = rng.below(total);
    for (i, &w) in weights.iter().enumerate() {
        if at < w {
            return i;
        }
        at -= w;
    }
    weights.len() - 1
}

/// An int32 for a field: a boundary Kafka cares about, a value next to one, a small one, or
/// any. The boundaries are an eighth of the draws: a few values drawn again and again
/// would make most of a seed's mutants repeat one another.
pub(super) fn i32_value(rng: &mut Rng) -> i32 {
    match rng.below(8) {
        0 => rng.pick(&I32_EDGES),
        1 => rng.pick(&I32_EDGES).wrapping_add(rng.below(9) as i32 - 4),
        2 | 3 => rng.below(1 << 16) as i32,
        _ => rng.next() as i32,
    }
}

/// An error code: a boundary, any code Kafka names, a small unnamed one, or any int16.
pub(super) fn i16_value(rng: &mut Rng) -> i16 {
    match rng.below(8) {
        0 => rng.pick(&I16_EDGES),
        1 | 2 => rng.pick(ErrorCode::ALL).0,
        3 | 4 => rng.below(512) as i16,
        _ => rng.next() as i16,
    }
}

/// An election type: a boundary, or any int8.
pub(super) fn i8_value(rng: &mut Rng) -> i8 {
    if rng.chance(6) {
        rng.pick(&I8_EDGES)
    } else {
        rng.next() as i8
    }
}

/// A small mutation of `bytes`, for strings.
pub(super) fn mutated_string(rng: &mut Rng, bytes: &[u8]) -> Vec<u8> {
    // An empty string has little to change: start from a name.
    let bytes = if bytes.is_empty() {
        &b"topic"[..]
    } else {
        bytes
    };
    let mut s = bytes.to_vec();
    // One edit or two, bytes of any value the likeliest: a short name has few bits to flip
    // and fewer places to cut, and a seed's strings should seldom repeat.
    for _ in 0..1 + rng.below(2) {
        match weighted(rng, &[2, 1, 1, 2, 4, 1, 1]) {
            0 if !s.is_empty() => {
                let i = rng.below(s.len());
                s[i] ^= 1 << rng.below(8);
            }
            1 if !s.is_empty() => {
                s.remove(rng.below(s.len()));
            }
            2 => {
                // Not UTF-8: a lone continuation after a lead byte, anywhere.
                let at = rng.below(s.len() + 1);
                s.splice(at..at, [0xc3, 0x28]);
            }
            3 => {
                let any = rng.next() as u8;
                let byte = rng.pick(&[0u8, b'.', b'/', 0xff, b'-', b'_', any]);
                s.insert(rng.below(s.len() + 1), byte);
            }
            5 if !s.is_empty() => s.truncate(rng.below(s.len())),
            6 => {
                for _ in 0..1 + rng.below(8) {
                    s.extend_from_slice(bytes);
                }
            }
            _ => {
                // Bytes of any value, a few to a few dozen.
                let n = 1 + rng.below(48);
                s.extend((0..n).map(|_| rng.next() as u8));
            }
        }
    }
    s
}

/// A string to put in place of another: one of the frame's own, a mutated one, empty, the
/// longest allowed.
pub(super) fn new_string<'a>(rng: &mut Rng, donors: &[&'a [u8]], scratch: &'a [u8]) -> &'a [u8] {
    // The fixed choices are rare: drawn again and again, they would repeat.
    match rng.below(32) {
        0 => b"",
        1 => &LONGEST[..],
        2 => b"__consumer_offsets",
        3 if !donors.is_empty() => rng.pick(donors),
        4..=7 => &LONGEST[..rng.below(LONGEST.len())],
        _ => scratch,
    }
}

pub(super) fn list_op<T: Clone>(
    rng: &mut Rng,
    list: &mut Vec<T>,
    fresh: impl FnOnce() -> T,
) -> &'static str {
    let n = list.len();
    // A new element the likeliest: in a short list, removing, duplicating or swapping one
    // has few outcomes.
    let fresh_weight = if n <= 2 { 12 } else { 4 };
    match weighted(rng, &[1, 1, 1, 1, fresh_weight]) {
        0 if n > 0 => {
            list.remove(rng.below(n));
            "element removed"
        }
        1 if n > 0 => {
            let i = rng.below(n);
            let copy = list[i].clone();
            list.insert(i + 1, copy);
            "element duplicated"
        }
        2 if n > 1 => {
            // Two different places: swapping one with itself would change nothing.
            let i = rng.below(n);
            let j = (i + 1 + rng.below(n - 1)) % n;
            list.swap(i, j);
            "elements swapped"
        }
        3 if n > 0 => {
            let copy = list[rng.below(n)].clone();
            list.insert(rng.below(n + 1), copy);
            "element copied elsewhere"
        }
        _ => {
            let i = rng.below(n + 1);
            list.insert(i, fresh());
            "element inserted"
        }
    }
}

/// Adds or removes a tagged field, keeping tags ascending.
pub(super) fn tags_op<'a>(
    rng: &mut Rng,
    tags: &mut Vec<TaggedFieldData<'a>>,
    data: &'a [u8],
) -> &'static str {
    if !tags.is_empty() && rng.chance(3) {
        tags.remove(rng.below(tags.len()));
        return "tagged field removed";
    }
    let after = tags.last().map(|t| t.tag);
    let candidates: Vec<u32> = TAG_EDGES
        .iter()
        .copied()
        .filter(|&t| after.map_or(true, |a| t > a))
        .collect();
    let tag = if candidates.is_empty() || rng.chance(2) {
        match after {
            None => 0,
            Some(a) => match a.checked_add(1) {
                Some(t) => t,
                None => return "tagged field kept (no tag left)",
            },
        }
    } else {
        rng.pick(&candidates)
    };
    tags.push(TaggedFieldData::new(tag, data));
    "tagged field added"
}
