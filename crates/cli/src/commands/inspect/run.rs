//! `inspect`'s walk over its inputs: files, standard input, the bundled samples or a
//! capture's connections, each frame headed by a banner that says where it was found.

use std::io::{self, IsTerminal, Write};

use kafka_elect_leaders_capture::traffic::{bad_frame, Role, What};
use kafka_elect_leaders_json::print::api_label;

use super::frame::{inspect_frame, print_malformed};
use super::style::Palette;
use crate::fail::{frame_failure, malformed, not_a_request_hint, warn, Failure};
use crate::flags::InspectArgs;
use crate::input::{Expect, Frame, Item, Items, Kind, Source, BUNDLED};
use crate::notes::Reporter;
use crate::output::LineFlushed;

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
        let mut flushed;
        let out: &mut dyn Write = if source.is_live() {
            flushed = LineFlushed::new(&mut *out);
            &mut flushed
        } else {
            &mut *out
        };
        let kind = args.kind.kind_of(source);
        let inspected = Items::open("inspect", source, kind, &args.read, Expect::Frames)
            .and_then(|items| inspect_items(args, &palette, items, out));
        match inspected {
            Ok(()) => {}
            Err(Failure::Usage { message, .. }) => {
                warn(out, &message)?;
                bad_usage = true;
            }
            Err(Failure::Input(message)) => {
                warn(out, &message)?;
                bad_input = true;
            }
            Err(Failure::Reported { usage }) => {
                bad_usage |= usage;
                bad_input |= !usage;
            }
            Err(other) => return Err(other),
        }
    }
    if bad_usage || bad_input {
        return Err(Failure::Reported { usage: bad_usage });
    }
    Ok(())
}

/// Every item of one input: the tree of every ElectLeaders frame, headed by where it was
/// found (its number and offset in a stream; packets, connection and stream offset in a
/// capture); frames of other APIs in one line each with `--all`. A malformed frame of a
/// stream is shown as far as it can be, reported, and ends the input (its boundaries are
/// lost); one of a capture is noted, and the rest still read.
fn inspect_items(
    args: &InspectArgs,
    p: &Palette,
    items: Items<'_>,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    let name = items.name.clone();
    let name = name.as_str();
    let stream = items.is_stream();
    let mut frames = 0usize;
    let mut bad_frames = 0u64;
    let mut notes = Reporter::default();
    let walked = items.walk(&mut |item| {
        let frame = match item {
            Item::Note(note) => return Ok(notes.report(out, name, &note)?),
            Item::Closed(_) => return Ok(()),
            Item::Cut(cut) => {
                frames = cut.index;
                banner(out, p, name, cut.index, cut.offset)?;
                print_malformed(out, p, cut.kind, &cut.prefix, &cut.error)?;
                warn(out, &malformed(name, cut.index, cut.offset, &cut.error))?;
                return Err(Failure::Reported { usage: false });
            }
            Item::Frame(frame) => frame,
        };
        let place = match &frame {
            Frame::Stream(f) => {
                frames = f.index;
                format!("{name}: frame {} at input byte {}", f.index, f.offset)
            }
            Frame::Capture(found) => {
                let o = &found.origin;
                let packets = if o.first_packet == o.last_packet {
                    format!("packet {}", o.first_packet)
                } else {
                    format!("packets {}-{}", o.first_packet, o.last_packet)
                };
                format!(
                    "{name}: {packets} at {}, connection {} {} -> {}, stream offset {}, frame {}",
                    o.time, o.conn.0, o.from, o.to, o.offset, o.index
                )
            }
        };
        let kind = match frame.what() {
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
                        Role::Requests => "request",
                        Role::Responses => "response",
                    };
                    writeln!(
                        out,
                        "== {place}: {} v{api_version} {role}, correlation id {correlation_id}, \
                         {} bytes (passed over) ==\n",
                        api_label(api_key),
                        frame.len()
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
                        frame.len()
                    )?;
                }
                return Ok(());
            }
        };
        writeln!(out, "{}== {place} =={}", p.bold(), p.reset())?;
        let Some(error) = inspect_frame(out, p, kind, frame.bytes())? else {
            return Ok(());
        };
        match &frame {
            Frame::Stream(f) => {
                let mut message = frame_failure(name, f.index, f.offset, f.bytes.len(), &error);
                if kind == Kind::Request {
                    message.push_str(not_a_request_hint(&f.bytes));
                }
                warn(out, &message)?;
                Err(Failure::Reported { usage: false })
            }
            Frame::Capture(found) => {
                bad_frames += 1;
                Ok(notes.report(out, name, &bad_frame(&found.origin, &error))?)
            }
        }
    })?;
    if stream && frames == 0 {
        writeln!(out, "== {name}: no frames ==\n")?;
    }
    notes.finish(out, name, walked.partial + bad_frames)
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
