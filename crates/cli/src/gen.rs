//! `gen` and `mutate`: frames for other fuzzers, deterministic for a seed.
//!
//! `gen` draws each frame's bytes from a seeded SplitMix64 stream and hands them to the
//! library's own generators (`ArbitraryRequest`, `ArbitraryResponse`, feature `arbitrary`),
//! so the tool writes what the fuzz targets generate. `mutate` runs the library's
//! structure-aware mutator (`mutate_request`, `mutate_response`) over the frames it reads.

use std::ffi::OsString;
use std::io::Write;

use arbitrary::{Arbitrary, Unstructured};
use kafka_elect_leaders::{
    mutate_bytes, mutate_request, mutate_response, split_frame, ArbitraryRequest,
    ArbitraryResponse, EncodeRequest, EncodeResponse,
};

use crate::fail::Failure;
use crate::input::{to_hex, Source};

pub const GEN_USAGE: &str = "\
Usage: elect-leaders gen [--seed S] [--count N] [--version V] [--kind request|response]
                         [--hex]

Writes N (default 1) valid random ElectLeaders frames to standard output, the same for the
same seed S (default 0): requests (the default) or responses, at version V (0-2; default:
each frame's own, at random). Frames are binary (size prefix and body), back to back; with
--hex, one frame per line in lowercase hex. A response's version is not on the wire: with
--hex and no --version, a '# response vN' line comes before each response.
";

pub const MUTATE_USAGE: &str = "\
Usage: elect-leaders mutate [--seed S] [--count N] [--kind request|response --version V]
                            [--hex] [FILE|-]

Reads frames (binary, or hex text with --hex) from FILE or standard input and writes N
(default 1) mutants of each, the same for the same seed S (default 0) and input, in the
same form. Each mutant changes one thing at the level of the schema (a value at a boundary,
a string, a list element, a tagged field, a null, the version) and is written back with the
library's writer; some are deliberate malformations (a length that lies, tags out of
order, a size prefix off by one). What is not a whole ElectLeaders frame is mutated byte by
byte. Responses need their version (--kind response --version V); a mutant may be at
another version: with --hex, a '# response vN' line comes before each response mutant.
With --verbose, a '# field: change' line comes before each mutant (--hex only).
";

struct Options {
    seed: u64,
    count: u64,
    version: Option<i16>,
    response: bool,
    hex: bool,
    verbose: bool,
    file: Option<OsString>,
}

fn parse(
    command: &'static str,
    args: impl Iterator<Item = OsString>,
) -> Result<Option<Options>, Failure> {
    let mut options = Options {
        seed: 0,
        count: 1,
        version: None,
        response: false,
        hex: false,
        verbose: false,
        file: None,
    };
    let usage = |message: String| Failure::usage(command, message);
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        let text = arg.to_string_lossy().into_owned();
        let (name, inline) = match text.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_owned(), Some(v.to_owned())),
            _ => (text.clone(), None),
        };
        let mut value = |what: &str| -> Result<String, Failure> {
            match inline
                .clone()
                .or_else(|| args.next().map(|v| v.to_string_lossy().into()))
            {
                Some(v) => Ok(v),
                None => Err(usage(format!("{name} needs a value ({what})"))),
            }
        };
        match name.as_str() {
            "-h" | "--help" => return Ok(None),
            "--hex" => options.hex = true,
            "--verbose" if command == "mutate" => options.verbose = true,
            "--seed" => {
                let v = value("a number")?;
                options.seed = v
                    .parse()
                    .map_err(|_| usage(format!("--seed {v}: not a number")))?;
            }
            "--count" => {
                let v = value("a number")?;
                options.count = v
                    .parse()
                    .map_err(|_| usage(format!("--count {v}: not a number")))?;
            }
            "--version" => {
                let v = value("0, 1 or 2")?;
                match v.parse::<i16>() {
                    Ok(n @ 0..=2) => options.version = Some(n),
                    _ => return Err(usage(format!("--version {v}: ElectLeaders has 0-2"))),
                }
            }
            "--kind" => match value("request or response")?.as_str() {
                "request" => options.response = false,
                "response" => options.response = true,
                other => return Err(usage(format!("--kind {other}: request or response"))),
            },
            _ if command == "mutate" && (text == "-" || !text.starts_with('-')) => {
                if options.file.is_some() {
                    return Err(usage("mutate reads one input".into()));
                }
                options.file = Some(arg);
            }
            _ => return Err(usage(format!("unknown option '{text}'"))),
        }
    }
    if command == "mutate" && options.response && options.version.is_none() {
        return Err(usage("--kind response needs --version V".into()));
    }
    Ok(Some(options))
}

/// `gen` or `mutate`, with the arguments after the command's name.
pub fn run(
    command: &'static str,
    args: impl Iterator<Item = OsString>,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    let Some(options) = parse(command, args)? else {
        let text = if command == "gen" {
            GEN_USAGE
        } else {
            MUTATE_USAGE
        };
        return out.write_all(text.as_bytes()).map_err(Failure::Output);
    };
    if command == "gen" {
        gen(&options, out)
    } else {
        mutate(&options, out)
    }
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

fn gen(options: &Options, out: &mut dyn Write) -> Result<(), Failure> {
    let mut buf = Vec::new();
    for n in 0..options.count {
        let data = seeded_bytes(options.seed, n);
        let mut u = Unstructured::new(&data);
        let encoded = if options.response {
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

fn mutate(options: &Options, out: &mut dyn Write) -> Result<(), Failure> {
    let source = options
        .file
        .as_deref()
        .map_or(Source::Stdin, Source::from_arg);
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
            let (len, comment) = match (is_frame, options.response, options.version) {
                (true, true, Some(v)) => {
                    let m = mutate_response(input, v, seed, &mut buf).expect("buffer");
                    let mut c = format!("response v{}", m.version);
                    if options.verbose {
                        c = format!("{}\n# {c}", m.mutation);
                    }
                    (m.len, Some(c))
                }
                (true, _, _) => {
                    let m = mutate_request(input, seed, &mut buf).expect("buffer");
                    (m.len, options.verbose.then(|| m.mutation.to_string()))
                }
                _ => {
                    let len = mutate_bytes(input, seed, &mut buf);
                    (len, options.verbose.then(|| "bytes: byte-level".to_owned()))
                }
            };
            emit(out, options.hex, comment, &buf[..len])?;
        }
    }
    Ok(())
}
