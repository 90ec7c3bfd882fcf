//! `inspect`: the annotated tree of each frame and its bytes, 16 to a row, laid out like
//! the reference page (`shared/reference/ElectLeaders.txt`).
//!
//! The trees come from `fields`, drawn by `tree`; the bytes by `hexdump`. For a malformed
//! frame the library has no partial view, so the tree shows what it can still tell (the
//! size prefix and, for a request, `peek_request`'s header fields), then the error with its
//! field and offset.

use std::io::{self, Write};

use kafka_elect_leaders::{
    is_known_request, parse_request, parse_response, peek_request, request_header_version,
    response_header_version, split_frame_with_max, ElectLeadersRequest, ElectLeadersResponse,
    Error, ErrorKind, API_KEY, SIZE_PREFIX_LEN,
};

use crate::capture::Capture;
use crate::fail::{frame_failure, malformed, not_a_request_hint, Failure};
use crate::fields::{
    frame_node, request_tree, response_tree, ABOUT_API_KEY, ABOUT_API_VERSION,
    ABOUT_REQUEST_CORRELATION_ID, ABOUT_SIZE,
};
use crate::flags::InspectArgs;
use crate::hexdump::hex_layout;
use crate::input::{FrameReader, Kind, Opened, ReadFailure, Source, BUNDLED};
use crate::style::{Palette, Region};
use crate::traffic::{self, Item, What};
use crate::tree::{group, leaf, render, with_region, Node};

/// `inspect`.
pub fn run(options: &InspectArgs, out: &mut dyn Write) -> Result<(), Failure> {
    let palette = Palette::new(options.color);
    let sources: Vec<Source> = if options.files.is_empty() {
        BUNDLED
            .iter()
            .map(|&(name, bytes)| Source::Bundled { name, bytes })
            .collect()
    } else {
        options
            .files
            .iter()
            .map(|arg| Source::from_arg(arg))
            .collect()
    };
    let mut bad_input = false;
    let mut bad_usage = false;
    for source in &sources {
        let name = source.name();
        let kind = options.kind.kind_of(source);
        let reader = match source.open_any("inspect", options.read.hex) {
            Ok(Opened::Stream(reader)) => reader,
            Ok(Opened::Capture(mut capture)) => {
                match inspect_capture(options, &palette, &name, &mut capture, out) {
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
                                if options.others.all {
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
    options: &InspectArgs,
    p: &Palette,
    name: &str,
    capture: &mut Capture<R>,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    let mut bad_frames = 0u64;
    let summary = traffic::walk(name, capture, options.read.port, &mut |item| {
        let found = match item {
            Item::Note(note) => return Ok(traffic::report(out, name, &note)?),
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
                if options.others.all {
                    let role = match role {
                        traffic::Role::Requests => "request",
                        traffic::Role::Responses => "response",
                    };
                    writeln!(
                        out,
                        "== {place}: {} v{api_version} {role}, correlation id {correlation_id}, \
                         {} bytes (passed over) ==\n",
                        traffic::api_label(api_key),
                        found.frame.len()
                    )?;
                }
                return Ok(());
            }
            What::Unpaired { correlation_id } => {
                if options.others.all {
                    writeln!(
                        out,
                        "== {place}: response with correlation id {correlation_id}, whose \
                         request was not seen, {} bytes (passed over) ==\n",
                        found.frame.len()
                    )?;
                }
                return Ok(());
            }
        };
        writeln!(out, "{}== {place} =={}", p.bold(), p.reset())?;
        if let Some(error) = inspect_frame(out, p, kind, &found.frame)? {
            bad_frames += 1;
            traffic::report(out, name, &traffic::bad_frame(o, &error))?;
        }
        Ok(())
    })?;
    traffic::finish(name, summary.partial + bad_frames)
}

/// A line on stderr, after what came before it on stdout.
fn warn(out: &mut dyn Write, message: &str) -> io::Result<()> {
    out.flush()?;
    eprintln!("elect-leaders: {message}");
    Ok(())
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

/// Prints one frame: tree and bytes. For a malformed one, prints what can be shown and
/// returns the library's error.
fn inspect_frame(
    out: &mut dyn Write,
    p: &Palette,
    kind: Kind,
    frame: &[u8],
) -> io::Result<Option<Error>> {
    let error = match kind {
        Kind::Request => match parse_request(frame) {
            Ok(request) => {
                let title = request_title(&request);
                return print_tree(out, p, frame, &title, request_tree(&request)).map(|()| None);
            }
            Err(error) => error,
        },
        Kind::Response(version) => match parse_response(frame, version) {
            Ok(response) => {
                let title = response_title(&response);
                return print_tree(out, p, frame, &title, response_tree(&response)).map(|()| None);
            }
            Err(error) => error,
        },
    };
    print_malformed(out, p, kind, frame, &error)?;
    Ok(Some(error))
}

fn request_title(r: &ElectLeadersRequest<'_>) -> String {
    format!(
        "ElectLeadersRequest v{}, request header v{}, {} bytes on the wire",
        r.version(),
        r.header().header_version(),
        r.frame().len()
    )
}

fn response_title(r: &ElectLeadersResponse<'_>) -> String {
    format!(
        "ElectLeadersResponse v{}, response header v{}, {} bytes on the wire",
        r.version(),
        response_header_version(r.version()),
        r.frame().len()
    )
}

fn print_tree(
    out: &mut dyn Write,
    p: &Palette,
    frame: &[u8],
    title: &str,
    tree: Node<'_>,
) -> io::Result<()> {
    writeln!(out, "{title}\n\nobject tree")?;
    // Drawn as it is made; the regions (one byte per frame byte) are what the hex layout
    // needs of the tree.
    let mut regions = vec![None; frame.len()];
    render(out, p, tree, "", true, true, &mut regions)?;
    writeln!(out)?;
    hex_layout(out, p, frame, &regions, None)?;
    writeln!(out)
}

// ---------------------------------------------------------------------------------------
// Malformed frames

/// The size prefix's value, read by the library (`split_frame` on the prefix alone is
/// `Incomplete` by exactly that many bytes).
fn declared_size(bytes: &[u8]) -> Option<i64> {
    let prefix = bytes.get(..SIZE_PREFIX_LEN)?;
    match split_frame_with_max(prefix, usize::MAX) {
        Ok(_) => Some(0),
        Err(e) => match e.kind {
            ErrorKind::Incomplete { needed } => i64::try_from(needed).ok(),
            ErrorKind::NegativeLength(n) => Some(i64::from(n)),
            _ => None,
        },
    }
}

/// What can still be shown of a frame the library refused: the size prefix, a request's
/// first header fields (`peek_request`), then the error; and the bytes, the failure marked.
fn print_malformed(
    out: &mut dyn Write,
    p: &Palette,
    kind: Kind,
    bytes: &[u8],
    error: &Error,
) -> io::Result<()> {
    let len = bytes.len();
    let peek = match kind {
        Kind::Request => peek_request(bytes).ok(),
        Kind::Response(_) => None,
    };
    let state = match error.kind {
        ErrorKind::Incomplete { needed } if len >= SIZE_PREFIX_LEN => {
            format!("TRUNCATED, {len} of {} bytes", len + needed)
        }
        _ => format!("MALFORMED, {len} bytes read"),
    };
    let (title, root, root_ty) = match (kind, peek) {
        (Kind::Request, Some(peek)) if peek.is_elect_leaders() => (
            format!(
                "ElectLeadersRequest v{}, request header v{}: {state}",
                peek.api_version,
                request_header_version(peek.api_version)
            ),
            "ElectLeadersRequest",
            format!("message v{}", peek.api_version),
        ),
        (Kind::Request, Some(peek)) => (
            format!(
                "not an ElectLeaders request (api key {}, version {}; ElectLeaders is api key \
                 43, versions 0-2), {len} bytes read",
                peek.api_key, peek.api_version
            ),
            "Request",
            "message".to_owned(),
        ),
        (Kind::Request, None) => (
            format!("ElectLeadersRequest: {state}"),
            "ElectLeadersRequest",
            "message".to_owned(),
        ),
        (Kind::Response(v), _) => (
            format!(
                "ElectLeadersResponse v{v}, response header v{}: {state}",
                response_header_version(v)
            ),
            "ElectLeadersResponse",
            format!("message v{v}"),
        ),
    };
    let mut children = Vec::new();
    if let Some(size) = declared_size(bytes) {
        let present = len - SIZE_PREFIX_LEN;
        let about = if usize::try_from(size).ok() == Some(present) {
            ABOUT_SIZE.to_owned()
        } else {
            format!("{ABOUT_SIZE} ({present} present)")
        };
        children.push(frame_node(size, &about));
    }
    if let Some(peek) = peek {
        let api = if peek.api_key == API_KEY {
            format!("{} (ElectLeaders)", peek.api_key)
        } else {
            format!("{} (not ElectLeaders)", peek.api_key)
        };
        children.push(with_region(
            group(
                "RequestHeader",
                "(first fields)",
                None,
                4..12,
                "what peek_request reads of any request header",
                vec![
                    leaf("RequestApiKey", "int16", api, 4..6, ABOUT_API_KEY),
                    leaf(
                        "RequestApiVersion",
                        "int16",
                        peek.api_version,
                        6..8,
                        ABOUT_API_VERSION,
                    ),
                    leaf(
                        "CorrelationId",
                        "int32",
                        peek.correlation_id,
                        8..12,
                        ABOUT_REQUEST_CORRELATION_ID,
                    ),
                ],
            ),
            Region::Header,
        ));
    }
    let mut error_node = leaf(
        format!(
            "ERROR {} at 0x{:04x} (byte {}): {}",
            error.field, error.offset, error.offset, error.kind
        ),
        "",
        "",
        error.offset..error.offset,
        "",
    );
    error_node.error = true;
    children.push(error_node);
    let tree = group(root, &root_ty, None, 0..len, "", children);

    writeln!(out, "{title}\n\nobject tree (up to the failure)")?;
    let mut regions = vec![None; len];
    render(out, p, tree, "", true, true, &mut regions)?;
    writeln!(out)?;
    hex_layout(out, p, bytes, &regions, Some(error))?;
    writeln!(out)
}
