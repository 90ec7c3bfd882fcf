//! `gen`: valid random frames for other fuzzers, the same for the same seed.
//!
//! Each frame's bytes are drawn from a seeded SplitMix64 stream and handed to the library's
//! own generators (`ArbitraryRequest`, `ArbitraryResponse`, feature `arbitrary`), so the
//! tool writes what the fuzz targets generate.

use std::io::Write;

use arbitrary::{Arbitrary, Unstructured};
use kafka_elect_leaders::{ArbitraryRequest, ArbitraryResponse, EncodeRequest, EncodeResponse};

use crate::fail::Failure;
use crate::flags::{FrameKind, GenArgs};
use crate::output::{refuse_binary_to_terminal, write_frame};

/// `gen`.
pub fn run(args: &GenArgs, out: &mut dyn Write) -> Result<(), Failure> {
    let options = &args.frames;
    refuse_binary_to_terminal("gen", options.hex)?;
    let mut buf = Vec::new();
    for n in 0..options.count {
        let data = seeded_bytes(options.seed, n);
        let mut u = Unstructured::new(&data);
        let encoded = if options.kind == FrameKind::Response {
            let mut response = ArbitraryResponse::arbitrary(&mut u).expect("never fails");
            if let Some(v) = options.version {
                response.fit_to_version(v);
            }
            buf.resize(
                response.encoded_len(response.version).expect("carryable"),
                0,
            );
            response.encode(response.version, &mut buf).map(|_| {
                (options.version.is_none()).then(|| format!("response v{}", response.version))
            })
        } else {
            let mut request = ArbitraryRequest::arbitrary(&mut u).expect("never fails");
            if let Some(v) = options.version {
                request.fit_to_version(v);
            }
            buf.resize(request.encoded_len(request.version).expect("carryable"), 0);
            request.encode(request.version, &mut buf).map(|_| None)
        };
        let comment = encoded.map_err(|e| Failure::Input(format!("frame {n}: {e}")))?;
        write_frame(out, options.hex, comment.as_deref(), &buf).map_err(Failure::Output)?;
    }
    Ok(())
}

/// SplitMix64 bytes: the `n`th frame's input for seed `seed`.
fn seeded_bytes(seed: u64, n: u64) -> Vec<u8> {
    let mut state = seed ^ n.wrapping_mul(0xd1b5_4a32_d192_ed03);
    let mut next = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    // Mostly small frames, now and then a larger one.
    let len = match next() % 16 {
        0 => 512 + next() % 4096,
        _ => 8 + next() % 256,
    } as usize;
    (0..len).map(|_| next() as u8).collect()
}
