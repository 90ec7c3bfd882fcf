//! One frame, inspected: the tree of its fields and its bytes, or, for a malformed frame,
//! what can still be shown of it and the error.

use std::io::{self, Write};

use kafka_elect_leaders::{
    parse_request, parse_response, peek_request, request_header_version, response_header_version,
    split_frame_with_max, ElectLeadersRequest, ElectLeadersResponse, Error, ErrorKind, API_KEY,
    SIZE_PREFIX_LEN,
};

use super::fields::{
    frame_node, request_tree, response_tree, ABOUT_API_KEY, ABOUT_API_VERSION,
    ABOUT_REQUEST_CORRELATION_ID, ABOUT_SIZE,
};
use super::hexdump::hex_layout;
use super::style::{Palette, Region};
use super::tree::{group, leaf, render, with_region, Node};
use crate::input::Kind;
use crate::versions;

/// Prints one frame: tree and bytes. For a malformed one, prints what can be shown and
/// returns the library's error.
pub(super) fn inspect_frame(
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
pub(super) fn print_malformed(
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
                 43, versions {}), {len} bytes read",
                peek.api_key,
                peek.api_version,
                versions::range()
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
                peek.api_key_range().start..peek.correlation_id_range().end,
                "what peek_request reads of any request header",
                vec![
                    leaf(
                        "RequestApiKey",
                        "int16",
                        api,
                        peek.api_key_range(),
                        ABOUT_API_KEY,
                    ),
                    leaf(
                        "RequestApiVersion",
                        "int16",
                        peek.api_version,
                        peek.api_version_range(),
                        ABOUT_API_VERSION,
                    ),
                    leaf(
                        "CorrelationId",
                        "int32",
                        peek.correlation_id,
                        peek.correlation_id_range(),
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
