//! `inspect`'s walk over its inputs: files, standard input, the bundled samples or a
//! capture's connections, each frame headed by a banner that says where it was found.

use std::io::{self, IsTerminal, Write};

use kafka_elect_leaders::{is_known_request, peek_request, API_KEY};

use super::frame::{inspect_frame, print_malformed};
use super::style::Palette;
use crate::capture::Capture;
use crate::fail::{frame_failure, malformed, not_a_request_hint, warn, Failure};
use crate::flags::InspectArgs;
use crate::input::{Expect, FrameReader, Kind, Opened, ReadFailure, Source, BUNDLED};
use crate::output::LineFlushed;
use crate::traffic::{self, Item, What};

/// `inspect`.
pub fn run(args: &InspectArgs, out: &mut dyn Write) -> Result<(), Failure> {
    let palette = Palette::new(args.color);
    // No FILE: what is piped in, else (on a terminal, where nothing is) the samples.
    let sources: Vec<Source> = if args.files.is_empty() && !io::stdin().is_terminal() {
        vec![Source::Stdin]
    } else if args.files.is_empty() {
        BUNDLED
            .iter()
            .map(|&(name, bytes)| Source::Bundled { name, bytes })
            .collect()
    } else {
        args.files.iter().map(|arg| Source::from_arg(arg)).collect()
    };
    let mut bad_input = false;
    let mut bad_usage = false;
    for source in &sources {
        let name = source.name();
        let mut flushed;
        let out: &mut dyn Write = if source.is_live() {
            flushed = LineFlushed::new(&mut *out);
            &mut flushed
        } else {
            &mut *out
        };
        let kind = args.kind.kind_of(source);
        let reader = match source.open_any("inspect", args.read.hex, Expect::Frames) {
            Ok(Opened::Stream(reader)) => reader,
            Ok(Opened::Capture(capture)) => {
                match inspect_capture(args, &palette, &name, *capture, out) {
                    Ok(()) => {}
                    Err(Failure::Input(message)) => {
                        warn(out, &message)?;
                        bad_input = true;
                    }
                    Err(other) => return Err(other),
                }
                continue;
            }
            Err(Failure::Usage { message, .. }) => {
                warn(out, &message)?;
                bad_usage = true;
                continue;
            }
            Err(Failure::Input(message)) => {
                warn(out, &message)?;
                bad_input = true;
                continue;
            }
            Err(other) => return Err(other),
        };
        let mut frames = FrameReader::new(reader);
        let mut index = 0;
        loop {
            match frames.next_frame() {
                Ok(None) => {
                    if index == 0 {
                        writeln!(out, "== {name}: no frames ==\n")?;
                    }
                    break;
                }
                Ok(Some(frame)) => {
                    index += 1;
                    if kind == Kind::Request {
                        if let Ok(peek) = peek_request(&frame.bytes) {
                            if peek.api_key != API_KEY
                                && is_known_request(peek.api_key, peek.api_version)
                            {
                                if args.others.all {
                                    writeln!(
                                        out,
                                        "== {name}: frame {index} at input byte {}: {} v{} \
                                         request, correlation id {}, {} bytes (passed over) ==\n",
                                        frame.offset,
                                        traffic::api_label(peek.api_key),
                                        peek.api_version,
                                        peek.correlation_id,
                                        frame.bytes.len()
                                    )?;
                                }
                                continue;
                            }
                        }
                    }
                    banner(out, &palette, &name, index, frame.offset)?;
                    if let Some(error) = inspect_frame(out, &palette, kind, &frame.bytes)? {
                        let mut message =
                            frame_failure(&name, index, frame.offset, frame.bytes.len(), &error);
                        if kind == Kind::Request {
                            message.push_str(not_a_request_hint(&frame.bytes));
                        }
                        warn(out, &message)?;
                        bad_input = true;
                        break;
                    }
                }
                Err(ReadFailure::Size {
                    offset,
                    prefix,
                    error,
                }) => {
                    index += 1;
                    banner(out, &palette, &name, index, offset)?;
                    print_malformed(out, &palette, kind, &prefix, &error)?;
                    warn(out, &malformed(&name, index, offset, &error))?;
                    bad_input = true;
                    break;
                }
                Err(ReadFailure::Io(e)) => {
                    warn(out, &format!("{name}: {e}"))?;
                    bad_input = true;
                    break;
                }
            }
        }
    }
    if bad_usage || bad_input {
        return Err(Failure::Reported { usage: bad_usage });
    }
    Ok(())
}

/// A capture: the tree of every ElectLeaders frame of every connection, headed by where it
/// was found; frames of other APIs in one line each with `--all`.
fn inspect_capture<R: io::Read>(
    args: &InspectArgs,
    p: &Palette,
    name: &str,
    capture: Capture<R>,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    let mut bad_frames = 0u64;
    let mut notes = traffic::Reporter::default();
    let summary = traffic::walk(name, capture, &args.read, &mut |item| {
        let found = match item {
            Item::Note(note) => return Ok(notes.report(out, name, &note)?),
            Item::Frame(found) => found,
            Item::Closed(_) => return Ok(()),
        };
        let o = &found.origin;
        let packets = if o.first_packet == o.last_packet {
            format!("packet {}", o.first_packet)
        } else {
            format!("packets {}-{}", o.first_packet, o.last_packet)
        };
        let place = format!(
            "{name}: {packets} at {}, connection {} {} -> {}, stream offset {}, frame {}",
            o.time, o.conn.0, o.from, o.to, o.offset, o.index
        );
        let kind = match found.what {
            What::ElectRequest => Kind::Request,
            What::ElectResponse { version } => Kind::Response(version),
            What::Other {
                role,
                api_key,
                api_version,
                correlation_id,
            } => {
                if args.others.all {
                    let role = match role {
                        traffic::Role::Requests => "request",
                        traffic::Role::Responses => "response",
                    };
                    writeln!(
                        out,
                        "== {place}: {} v{api_version} {role}, correlation id {correlation_id}, \
                         {} bytes (passed over) ==\n",
                        traffic::api_label(api_key),
                        found.len
                    )?;
                }
                return Ok(());
            }
            What::Unpaired { correlation_id } => {
                if args.others.all {
                    writeln!(
                        out,
                        "== {place}: response with correlation id {correlation_id}, whose \
                         request was not seen, {} bytes (passed over) ==\n",
                        found.len
                    )?;
                }
                return Ok(());
            }
        };
        writeln!(out, "{}== {place} =={}", p.bold(), p.reset())?;
        if let Some(error) = inspect_frame(out, p, kind, &found.frame)? {
            bad_frames += 1;
            notes.report(out, name, &traffic::bad_frame(o, &error))?;
        }
        Ok(())
    })?;
    notes.finish(out, name, summary.partial + bad_frames)
}

fn banner(
    out: &mut dyn Write,
    p: &Palette,
    name: &str,
    index: usize,
    offset: u64,
) -> io::Result<()> {
    writeln!(
        out,
        "{}== {name}: frame {index} at input byte {offset} =={}",
        p.bold(),
        p.reset()
    )
}
