//! `mutate`: the library's structure-aware mutator (`mutate_request`, `mutate_response`)
//! over the frames read, deterministic for a seed.

use std::io::Write;

use kafka_elect_leaders::{mutate_bytes, mutate_request, mutate_response, split_frame};

use crate::fail::Failure;
use crate::flags::{FrameKind, MutateArgs};
use crate::input::Source;
use crate::output::{refuse_binary_to_terminal, write_frame};

/// `mutate`.
pub fn run(args: &MutateArgs, out: &mut dyn Write) -> Result<(), Failure> {
    let options = &args.frames;
    refuse_binary_to_terminal("mutate", options.hex)?;
    let source = Source::from_arg_or_stdin(args.file.as_deref());
    let bytes = source.read_all("mutate", options.hex)?;
    if bytes.is_empty() {
        return Err(Failure::Input(source.empty_message(options.hex)));
    }
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
            write_frame(out, options.hex, comment.as_deref(), &buf[..len])
                .map_err(Failure::Output)?;
        }
    }
    Ok(())
}
