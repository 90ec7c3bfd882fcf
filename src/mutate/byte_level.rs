//! Byte-level mutation ([`mutate_bytes`]), for a frame that does not parse: it knows no
//! schema, only the size prefix.

use std::vec::Vec;

use super::values::{Rng, I16_EDGES, I32_EDGES};

/// Byte-level mutation of `data` into `out`, for what does not parse: a bit flipped, a byte
/// or an int32 set to a boundary, a byte inserted or removed, the size prefix made to agree
/// with the length (or not). Returns the length written (at most `out.len()`).
pub fn mutate_bytes(data: &[u8], seed: u64, out: &mut [u8]) -> usize {
    let mut rng = Rng::new(seed);
    let mut v: Vec<u8> = data.to_vec();
    let rounds = 1 + rng.below(3);
    for _ in 0..rounds {
        let n = v.len();
        match rng.below(6) {
            0 if n > 0 => {
                let i = rng.below(n);
                v[i] ^= 1 << rng.below(8);
            }
            1 if n > 0 => {
                let i = rng.below(n);
                v[i] = rng.pick(&[0u8, 0xff, 0x7f, 0x80, 0x01]);
            }
            2 if n >= 4 => {
                let i = rng.below(n - 3);
                v[i..i + 4].copy_from_slice(&rng.pick(&I32_EDGES).to_be_bytes());
            }
            3 if n > 0 => {
                v.remove(rng.below(n));
            }
            4 if n >= 2 => {
                let i = rng.below(n - 1);
                v[i..i + 2].copy_from_slice(&rng.pick(&I16_EDGES).to_be_bytes());
            }
            _ => {
                let i = rng.below(n + 1);
                v.insert(i, rng.next() as u8);
            }
        }
    }
    let len = v.len().min(out.len());
    if len >= 4 && rng.chance(2) {
        let size = (len - 4) as i32;
        v[..4].copy_from_slice(&size.to_be_bytes());
    }
    out[..len].copy_from_slice(&v[..len]);
    len
}
