//! `decode`: frames in, one JSON object per frame out, one per line (the objects are
//! [`kafka_elect_leaders_json::print`]'s).

use std::io::{IsTerminal, Write};

use kafka_elect_leaders::{parse_request, parse_response};
use kafka_elect_leaders_capture::traffic::{bad_frame, Role, What};
use kafka_elect_leaders_json::print::{api_label, Message, OtherFrame, Place};

use crate::fail::{frame_failure, malformed, not_a_request_hint, warn, Failure};
use crate::flags::DecodeArgs;
use crate::input::{Expect, Frame, Item, Items, Source};
use crate::notes::Reporter;
use crate::output::LineFlushed;
use crate::selection::{not_a_capture, Selection};

/// `decode`: one JSON object per frame, one per line. Several inputs are decoded in turn,
/// each object's `"source"` naming its `"file"`; a bad input is reported and the others
/// still decoded, as `inspect` does, the exit status saying so at the end.
pub fn run(args: &DecodeArgs, out: &mut dyn Write) -> Result<(), Failure> {
    let filter = Selection::new(&args.filter).map_err(|e| Failure::usage("decode", e))?;
    if args.live.interface.is_some() {
        // Live: each object flushed as it is printed.
        let mut out = LineFlushed::new(out);
        let items = Items::live("decode", &args.live, &args.read);
        return decode_items(args, filter, None, items, &mut out);
    }
    let sources: Vec<Source> = if args.files.is_empty() {
        if std::io::stdin().is_terminal() {
            // Not a hang: say what it waits for (issue 44, item 9).
            eprintln!(
                "elect-leaders decode: reading frames or a capture from standard input (a \
                 terminal); end it with Ctrl-D, or give a FILE (decode --help)"
            );
        }
        vec![Source::Stdin]
    } else {
        args.files.iter().map(|f| Source::from_arg(f)).collect()
    };
    if let [source] = &sources[..] {
        return decode_one(args, source, None, out);
    }
    let (mut bad_input, mut bad_usage) = (false, false);
    for source in &sources {
        let name = source.name();
        match decode_one(args, source, Some(&name), out) {
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

/// One input; `file` is its name when several are decoded.
fn decode_one(
    args: &DecodeArgs,
    source: &Source,
    file: Option<&str>,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    let kind = args.kind.kind_of(source);
    // Live input (a capture piped in as it is written): each object is flushed as it is
    // printed, so that it shows as soon as its frame is read, not when a buffer fills.
    // Otherwise the writer is not wrapped: the printer writes in small pieces, and a
    // second dynamic call for each cost a tenth of `decode --all`'s instructions.
    let mut flushed;
    let out: &mut dyn Write = if source.is_live() {
        flushed = LineFlushed::new(out);
        &mut flushed
    } else {
        out
    };
    let filter = Selection::new(&args.filter).map_err(|e| Failure::usage("decode", e))?;
    let items = Items::open("decode", source, kind, &args.read, Expect::Frames)?;
    decode_items(args, filter, file, items, out)
}

/// Every item of an input, one JSON object per frame shown.
///
/// A capture (file or live): every connection's ElectLeaders frames, responses parsed with
/// their requests' versions, each with its `"source"`. What cannot be decoded is reported
/// on stderr as it is met, the rest is still decoded, and the exit status says the output
/// is partial.
///
/// Frames back to back: a stream of requests may hold frames of any API (a recorded
/// connection): those are passed over, or listed with `--all`. When the first frame is of
/// another API the input is a connection, and every object says where its frame was
/// (`"source"`); a file of ElectLeaders frames prints exactly the frames' objects. A
/// malformed frame ends the stream (its boundaries are lost).
fn decode_items(
    args: &DecodeArgs,
    mut filter: Selection,
    file: Option<&str>,
    items: Items<'_>,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    let name = items.name.clone();
    let name = name.as_str();
    let stream = items.is_stream();
    if stream && !filter.shows_conn(None) {
        return Err(not_a_capture("decode", name));
    }
    let mut bad_frames = 0u64;
    let mut notes = Reporter::default();
    // A stream's frames, and those of other APIs by API: to say what they were when none
    // is ElectLeaders.
    let mut frames = 0usize;
    let mut connection = false;
    let mut passed: Vec<(i16, usize)> = Vec::new();
    let walked = items.walk(&mut |item| {
        let frame = match item {
            Item::Note(note) => return Ok(notes.report(out, name, &note)?),
            Item::Closed(conn) => {
                filter.closed(conn.0);
                return Ok(());
            }
            Item::Cut(cut) => {
                return Err(Failure::Input(malformed(
                    name, cut.index, cut.offset, &cut.error,
                )))
            }
            Item::Frame(frame) => frame,
        };
        if let Frame::Stream(f) = &frame {
            frames = f.index;
        }
        if !filter.shows_conn(frame.conn()) {
            return Ok(());
        }
        let shows_other =
            |api: Option<(i16, i16)>| filter.shows_other(api.map(|a| a.0), args.others.all);
        let other = |kind, api, correlation_id| {
            Ok(shows_other(api).then_some(Message::Other(OtherFrame {
                kind,
                api,
                correlation_id,
                bytes: frame.len(),
            })))
        };
        let parsed = match frame.what() {
            What::ElectRequest => parse_request(frame.bytes()).map(|r| {
                filter
                    .request(&r, frame.waiting_at())
                    .then_some(Message::Request(r))
            }),
            What::ElectResponse { version } => parse_response(frame.bytes(), version).map(|r| {
                filter
                    .response(&r, frame.answering())
                    .then_some(Message::Response(r))
            }),
            What::Other {
                role,
                api_key,
                api_version,
                correlation_id,
            } => {
                if let Frame::Stream(f) = &frame {
                    connection |= f.index == 1;
                    match passed.iter_mut().find(|(key, _)| *key == api_key) {
                        Some((_, n)) => *n += 1,
                        None => passed.push((api_key, 1)),
                    }
                }
                let kind = match role {
                    Role::Requests => "request",
                    Role::Responses => "response",
                };
                other(kind, Some((api_key, api_version)), correlation_id)
            }
            What::Unpaired { correlation_id } => other("response", None, correlation_id),
        };
        match (parsed, &frame) {
            (Ok(Some(message)), Frame::Stream(f)) => {
                let place = (connection || file.is_some()).then_some(Place::Stream {
                    frame: f.index,
                    offset: f.offset,
                    file,
                });
                message.line(out, place.as_ref())?
            }
            (Ok(Some(message)), Frame::Capture(found)) => {
                let place = Place::Capture {
                    origin: &found.origin,
                    request: found.request,
                    file,
                    not_kept: found.not_kept,
                };
                message.line(out, Some(&place))?
            }
            (Ok(None), _) => {}
            (Err(error), Frame::Stream(f)) => {
                let mut message = frame_failure(name, f.index, f.offset, f.bytes.len(), &error);
                if f.what == What::ElectRequest {
                    message.push_str(not_a_request_hint(&f.bytes));
                }
                return Err(Failure::Input(message));
            }
            (Err(error), Frame::Capture(found)) => {
                bad_frames += 1;
                notes.report(out, name, &bad_frame(&found.origin, &error))?;
            }
        }
        Ok(())
    })?;
    let passed_over = passed.iter().map(|p| p.1).sum::<usize>();
    if stream && passed_over == frames && !args.others.all && !passed.is_empty() {
        // Frames, none of them ElectLeaders: say what they were, and what to try.
        let apis: Vec<String> = passed
            .iter()
            .map(|&(key, n)| format!("{} x{n}", api_label(key)))
            .collect();
        return Err(Failure::Input(format!(
            "{name}: no ElectLeaders request in {frames} frame(s), read as requests of \
             other APIs ({}); if the input holds responses, read it with --response \
             --version N (--all lists the frames)",
            apis.join(", ")
        )));
    }
    notes.finish(out, name, walked.partial + bad_frames)
}
