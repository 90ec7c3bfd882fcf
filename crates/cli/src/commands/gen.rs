//! `gen` and `mutate`: frames for other fuzzers, deterministic for a seed.
//!
//! `gen` draws each frame's bytes from a seeded SplitMix64 stream and hands them to the
//! library's own generators (`ArbitraryRequest`, `ArbitraryResponse`, feature `arbitrary`),
//! so the tool writes what the fuzz targets generate. `mutate` runs the library's
//! structure-aware mutator (`mutate_request`, `mutate_response`) over the frames it reads.

use std::io::Write;

use arbitrary::{Arbitrary, Unstructured};
use kafka_elect_leaders::{
    mutate_bytes, mutate_request, mutate_response, split_frame, ArbitraryRequest,
    ArbitraryResponse, EncodeRequest, EncodeResponse,
};

use crate::fail::Failure;
use crate::flags::{FrameKind, GenArgs, MutateArgs};
use crate::input::{to_hex, Source};

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

fn emit(
    out: &mut dyn Write,
    hex: bool,
    comment: Option<String>,
    frame: &[u8],
) -> Result<(), Failure> {
    let written = if hex {
        let comment = comment.map(|c| format!("# {c}\n")).unwrap_or_default();
        writeln!(out, "{comment}{}", to_hex(frame))
    } else {
        out.write_all(frame)
    };
    written.map_err(Failure::Output)
}

/// `gen`.
pub fn gen(args: &GenArgs, out: &mut dyn Write) -> Result<(), Failure> {
    let options = &args.frames;
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
        emit(out, options.hex, comment, &buf)?;
    }
    Ok(())
}

/// `mutate`.
pub fn mutate(args: &MutateArgs, out: &mut dyn Write) -> Result<(), Failure> {
    let options = &args.frames;
    let source = Source::from_arg_or_stdin(args.file.as_deref());
    let bytes = source.read_all("mutate", options.hex)?;
    // Whole frames, then whatever is left as one more input (mutated byte by byte).
    let mut inputs: Vec<&[u8]> = Vec::new();
    let mut rest = &bytes[..];
    while !rest.is_empty() {
        match split_frame(rest) {
            Ok((frame, tail)) => {
                inputs.push(frame);
                rest = tail;
            }
            Err(_) => {
                inputs.push(rest);
                break;
            }
        }
    }
    let mut buf = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        // Room for the longest mutant: a string grown to 32767 bytes, or a few bytes more.
        buf.resize(buf.len().max(input.len() * 2 + 70_000), 0);
        for k in 0..options.count {
            let seed = options
                .seed
                .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                .wrapping_add((i as u64) << 32 | k);
            let is_frame = split_frame(input).is_ok_and(|(f, _)| f.len() == input.len());
            let response = options.kind == FrameKind::Response;
            let (len, comment) = match (is_frame, response, options.version) {
                (true, true, Some(v)) => {
                    let m = mutate_response(input, v, seed, &mut buf).expect("buffer");
                    let mut c = format!("response v{}", m.version);
                    if args.verbose {
                        c = format!("{}\n# {c}", m.mutation);
                    }
                    (m.len, Some(c))
                }
                (true, _, _) => {
                    let m = mutate_request(input, seed, &mut buf).expect("buffer");
                    (m.len, args.verbose.then(|| m.mutation.to_string()))
                }
                _ => {
                    let len = mutate_bytes(input, seed, &mut buf);
                    (len, args.verbose.then(|| "bytes: byte-level".to_owned()))
                }
            };
            emit(out, options.hex, comment, &buf[..len])?;
        }
    }
    Ok(())
}
