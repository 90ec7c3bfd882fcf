//! `decode`: frames in, one JSON object per frame out, one per line (the objects are
//! [`kafka_elect_leaders_json::print`]'s).

use std::io::{IsTerminal, Write};

use kafka_elect_leaders::{is_known_request, parse_request, parse_response, peek_request, API_KEY};
use kafka_elect_leaders_json::print::{Message, OtherFrame, Place};

use crate::fail::{frame_failure, malformed, not_a_request_hint, warn, Failure};
use crate::flags::DecodeArgs;
use crate::input::{Expect, FrameReader, Kind, Opened, ReadFailure, Source};
use crate::output::LineFlushed;
use crate::selection::{not_a_capture, Selection};
use crate::traffic::{self, Item, Role, What};

/// `decode`: one JSON object per frame, one per line. Several inputs are decoded in turn,
/// each object's `"source"` naming its `"file"`; a bad input is reported and the others
/// still decoded, as `inspect` does, the exit status saying so at the end.
pub fn run(args: &DecodeArgs, out: &mut dyn Write) -> Result<(), Failure> {
    let filter = Selection::new(&args.filter).map_err(|e| Failure::usage("decode", e))?;
    if let Some(interface) = &args.live.interface {
        // Live: each object flushed as it is printed.
        let name = crate::live::name(interface);
        let mut out = LineFlushed::new(out);
        return decode_capture(args, filter, &name, None, &mut out, |each| {
            crate::live::walk("decode", &args.live, &args.read, each)
        });
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
    let name = source.name();
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
    match source.open_any("decode", args.read.hex, Expect::Frames)? {
        Opened::Capture(capture) => decode_capture(args, filter, &name, file, out, |each| {
            traffic::walk(&name, *capture, &args.read, each)
        }),
        Opened::Stream(reader) => decode_stream(args, filter, &name, file, kind, reader, out),
    }
}

/// Frames back to back. A stream of requests may hold frames of any API (a recorded
/// connection): those are passed over, or listed with `--all`. When the first frame is of
/// another API the input is a connection, and every object says where its frame was
/// (`"source"`); a file of ElectLeaders frames prints exactly the frames' objects.
fn decode_stream(
    args: &DecodeArgs,
    mut filter: Selection,
    name: &str,
    file: Option<&str>,
    kind: Kind,
    reader: Box<dyn std::io::Read + Send>,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    if !filter.shows_conn(None) {
        return Err(not_a_capture("decode", name));
    }
    let mut frames = FrameReader::new(reader);
    let mut index = 0;
    let mut connection = false;
    let mut passed: Vec<(i16, usize)> = Vec::new();
    loop {
        let frame = match frames.next_frame() {
            Ok(Some(frame)) => frame,
            Ok(None)
                if passed.iter().map(|p| p.1).sum::<usize>() < index
                    || args.others.all
                    || passed.is_empty() =>
            {
                return Ok(())
            }
            Ok(None) => {
                // Frames, none of them ElectLeaders: say what they were, and what to try.
                let apis: Vec<String> = passed
                    .iter()
                    .map(|&(key, n)| format!("{} x{n}", traffic::api_label(key)))
                    .collect();
                return Err(Failure::Input(format!(
                    "{name}: no ElectLeaders request in {index} frame(s), read as requests of \
                     other APIs ({}); if the input holds responses, read it with --response \
                     --version N (--all lists the frames)",
                    apis.join(", ")
                )));
            }
            Err(ReadFailure::Io(e)) => return Err(Failure::Input(format!("{name}: {e}"))),
            Err(ReadFailure::Size { offset, error, .. }) => {
                return Err(Failure::Input(malformed(name, index + 1, offset, &error)));
            }
        };
        index += 1;
        let parsed = match kind {
            Kind::Request => match peek_request(&frame.bytes) {
                Ok(peek)
                    if peek.api_key != API_KEY
                        && is_known_request(peek.api_key, peek.api_version) =>
                {
                    connection |= index == 1;
                    match passed.iter_mut().find(|(key, _)| *key == peek.api_key) {
                        Some((_, n)) => *n += 1,
                        None => passed.push((peek.api_key, 1)),
                    }
                    let shown = filter.shows_other(Some(peek.api_key), args.others.all);
                    Ok(shown.then_some(Message::Other(OtherFrame {
                        kind: "request",
                        api: Some((peek.api_key, peek.api_version)),
                        correlation_id: peek.correlation_id,
                        bytes: frame.bytes.len(),
                    })))
                }
                _ => parse_request(&frame.bytes)
                    .map(|r| filter.request(&r, None).then_some(Message::Request(r))),
            },
            Kind::Response(version) => parse_response(&frame.bytes, version)
                .map(|r| filter.response(&r, None).then_some(Message::Response(r))),
        };
        let message = match parsed {
            Ok(Some(message)) => message,
            Ok(None) => continue,
            Err(error) => {
                let mut message =
                    frame_failure(name, index, frame.offset, frame.bytes.len(), &error);
                if kind == Kind::Request {
                    message.push_str(not_a_request_hint(&frame.bytes));
                }
                return Err(Failure::Input(message));
            }
        };
        let place = (connection || file.is_some()).then_some(Place::Stream {
            frame: index,
            offset: frame.offset,
            file,
        });
        message.line(out, place.as_ref())?;
    }
}

/// A pcap or pcapng capture: every connection's ElectLeaders frames, responses parsed with
/// their requests' versions, each with its `"source"`. What cannot be decoded is reported on
/// stderr as it is met, the rest is still decoded, and the exit status says the output is
/// partial. `walk` hands over the items: of a capture file, or of a live capture.
fn decode_capture(
    args: &DecodeArgs,
    mut filter: Selection,
    name: &str,
    file: Option<&str>,
    out: &mut dyn Write,
    walk: impl FnOnce(&mut dyn FnMut(Item) -> Result<(), Failure>) -> Result<traffic::Summary, Failure>,
) -> Result<(), Failure> {
    let mut bad_frames = 0u64;
    let mut notes = traffic::Reporter::default();
    let summary = walk(&mut |item| {
        let found = match item {
            Item::Note(note) => return Ok(notes.report(out, name, &note)?),
            Item::Frame(found) => found,
            Item::Closed(conn) => {
                filter.closed(conn.0);
                return Ok(());
            }
        };
        let conn = found.origin.conn.0;
        if !filter.shows_conn(Some(conn)) {
            return Ok(());
        }
        let shows_other =
            |api: Option<(i16, i16)>| filter.shows_other(api.map(|a| a.0), args.others.all);
        let other = |kind, api, correlation_id| {
            Ok(shows_other(api).then_some(Message::Other(OtherFrame {
                kind,
                api,
                correlation_id,
                bytes: found.len,
            })))
        };
        let parsed = match found.what {
            What::ElectRequest => parse_request(&found.frame).map(|r| {
                let at = found.waits.then_some((conn, found.origin.index));
                filter.request(&r, at).then_some(Message::Request(r))
            }),
            What::ElectResponse { version } => parse_response(&found.frame, version).map(|r| {
                let request = found.request.map(|asked| (conn, asked.index));
                filter.response(&r, request).then_some(Message::Response(r))
            }),
            What::Other {
                role,
                api_key,
                api_version,
                correlation_id,
            } => {
                let kind = match role {
                    Role::Requests => "request",
                    Role::Responses => "response",
                };
                other(kind, Some((api_key, api_version)), correlation_id)
            }
            What::Unpaired { correlation_id } => other("response", None, correlation_id),
        };
        match parsed {
            Ok(Some(message)) => {
                let place = Place::Capture {
                    origin: &found.origin,
                    request: found.request,
                    file,
                    not_kept: found.not_kept,
                };
                message.line(out, Some(&place))?
            }
            Ok(None) => {}
            Err(error) => {
                bad_frames += 1;
                notes.report(out, name, &traffic::bad_frame(&found.origin, &error))?;
            }
        }
        Ok(())
    })?;
    notes.finish(out, name, summary.partial + bad_frames)
}
