//! `decode` (frames to JSON lines) and `encode` (JSON to frames), in the field names and
//! order of the contract in docs/JSON.md.
//!
//! Decoding walks the library's parsed views and writes the JSON by hand, in the contract's
//! order; serde_json only escapes strings. Encoding reads each object as a
//! `serde_json::Value`, checks it field by field, and hands borrowed data to the library's
//! writer, which decides what a version can carry.

use std::fmt::{self, Write as _};
use std::io::{IsTerminal, Read, Write};

use kafka_elect_leaders::{
    is_known_request, parse_request, parse_response, peek_request, ElectLeadersRequest,
    ElectLeadersRequestData, ElectLeadersResponse, ElectionType, EncodeError,
    EncodePartitionResult, EncodeReplicaElectionResult, EncodeRequest, EncodeResponse, ErrorCode,
    TaggedFieldData, TaggedFields, TopicPartitionsData, API_KEY,
};
use serde_json::{Map, Value};

use crate::capture::Capture;
use crate::fail::{frame_failure, malformed, not_a_request_hint, Failure};
use crate::flags::{DecodeArgs, EncodeArgs};
use crate::input::{from_hex, to_hex, FrameReader, Kind, Opened, ReadFailure, Source};
use crate::traffic::{self, Item, What};

// ---------------------------------------------------------------------------------------
// decode

/// `decode`: one JSON object per frame, one per line.
pub fn decode(options: &DecodeArgs, out: &mut dyn Write) -> Result<(), Failure> {
    let source = Source::from_arg_or_stdin(options.file.as_deref());
    let kind = options.kind.kind_of(&source);
    let name = source.name();
    match source.open_any("decode", options.read.hex)? {
        Opened::Capture(mut capture) => decode_capture(options, &name, &mut capture, out),
        Opened::Stream(reader) => decode_stream(options, &name, kind, reader, out),
    }
}

/// Frames back to back. A stream of requests may hold frames of any API (a recorded
/// connection): those are passed over, or listed with `--all`. When the first frame is of
/// another API the input is a connection, and every object says where its frame was
/// (`"source"`); a file of ElectLeaders frames prints exactly the frames' objects.
fn decode_stream(
    options: &DecodeArgs,
    name: &str,
    kind: Kind,
    reader: Box<dyn std::io::Read + Send>,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    let mut frames = FrameReader::new(reader);
    let mut line = String::new();
    let mut index = 0;
    let mut connection = false;
    let mut passed: Vec<(i16, usize)> = Vec::new();
    loop {
        let frame = match frames.next_frame() {
            Ok(Some(frame)) => frame,
            Ok(None)
                if passed.iter().map(|p| p.1).sum::<usize>() < index
                    || options.others.all
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
        line.clear();
        let mut view = None;
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
                    if options.others.all {
                        write_other(
                            &mut line,
                            "request",
                            Some((peek.api_key, peek.api_version)),
                            peek.correlation_id,
                            frame.bytes.len(),
                        );
                    }
                    Ok(())
                }
                _ => parse_request(&frame.bytes).map(|r| view = Some(View::Request(r))),
            },
            Kind::Response(version) => {
                parse_response(&frame.bytes, version).map(|r| view = Some(View::Response(r)))
            }
        };
        if let Err(error) = parsed {
            let mut message = frame_failure(name, index, frame.offset, frame.bytes.len(), &error);
            if kind == Kind::Request {
                message.push_str(not_a_request_hint(&frame.bytes));
            }
            return Err(Failure::Input(message));
        }
        let source = connection.then(|| {
            format!(
                ",\"source\":{{\"frame\":{index},\"offset\":{}}}",
                frame.offset
            )
        });
        if let Some(view) = view {
            write_view(out, &view, source.as_deref().unwrap_or(""))?;
            continue;
        }
        if line.is_empty() {
            continue;
        }
        if let Some(source) = source {
            line.pop();
            line.push_str(&source);
            line.push('}');
        }
        line.push('\n');
        out.write_all(line.as_bytes())?;
    }
}

/// A frame's parsed view, its JSON written as it is walked.
enum View<'a> {
    Request(ElectLeadersRequest<'a>),
    Response(ElectLeadersResponse<'a>),
}

/// One JSON line for `view`, `extra` (`,"source":{…}` or nothing) before its closing brace,
/// written straight to `out`: the object is never held whole.
fn write_view(out: &mut dyn Write, view: &View<'_>, extra: &str) -> std::io::Result<()> {
    let mut text = IoText::new(out);
    let result = match view {
        View::Request(r) => request_fields(&mut text, r),
        View::Response(r) => response_fields(&mut text, r),
    }
    .and_then(|()| text.write_str(extra))
    .and_then(|()| text.write_str("}\n"));
    text.finish(result)
}

/// A pcap or pcapng capture: every connection's ElectLeaders frames, responses parsed with
/// their requests' versions, each with its `"source"`. What cannot be decoded is reported on
/// stderr as it is met, the rest is still decoded, and the exit status says the output is
/// partial.
fn decode_capture<R: std::io::Read>(
    options: &DecodeArgs,
    name: &str,
    capture: &mut Capture<R>,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    let mut line = String::new();
    let mut bad_frames = 0u64;
    let summary = traffic::walk(name, capture, options.read.port, &mut |item| {
        let found = match item {
            Item::Note(note) => return Ok(traffic::report(out, name, &note)?),
            Item::Frame(found) => found,
            Item::Closed(_) => return Ok(()),
        };
        line.clear();
        let mut view = None;
        let parsed = match found.what {
            What::ElectRequest => {
                parse_request(&found.frame).map(|r| view = Some(View::Request(r)))
            }
            What::ElectResponse { version } => {
                parse_response(&found.frame, version).map(|r| view = Some(View::Response(r)))
            }
            What::Other {
                role,
                api_key,
                api_version,
                correlation_id,
            } => {
                if options.others.all {
                    let kind = match role {
                        traffic::Role::Requests => "request",
                        traffic::Role::Responses => "response",
                    };
                    write_other(
                        &mut line,
                        kind,
                        Some((api_key, api_version)),
                        correlation_id,
                        found.frame.len(),
                    );
                }
                Ok(())
            }
            What::Unpaired { correlation_id } => {
                if options.others.all {
                    write_other(
                        &mut line,
                        "response",
                        None,
                        correlation_id,
                        found.frame.len(),
                    );
                }
                Ok(())
            }
        };
        if let Err(error) = parsed {
            bad_frames += 1;
            traffic::report(out, name, &traffic::bad_frame(&found.origin, &error))?;
            return Ok(());
        }
        if let Some(view) = view {
            write_view(out, &view, &traffic::source_json(&found.origin))?;
            return Ok(());
        }
        if line.is_empty() {
            return Ok(());
        }
        line.pop();
        line.push_str(&traffic::source_json(&found.origin));
        line.push_str("}\n");
        out.write_all(line.as_bytes())?;
        Ok(())
    })?;
    traffic::finish(name, summary.partial + bad_frames)
}

/// A frame of another API (or a response whose request was not seen), for `--all`.
fn write_other(
    o: &mut String,
    kind: &str,
    api: Option<(i16, i16)>,
    correlation_id: i32,
    size: usize,
) {
    // Writing to a String cannot fail.
    o.push_str(&format!("{{\"kind\":\"{kind}\""));
    match api {
        Some((api_key, api_version)) => {
            let _ = push_field(o, "api_key", api_key);
            o.push_str(&format!(
                ",\"api_name\":\"{}\"",
                traffic::api_label(api_key)
            ));
            let _ = push_field(o, "api_version", api_version);
        }
        None => o.push_str(",\"api_key\":null,\"api_name\":null"),
    }
    let _ = push_field(o, "correlation_id", correlation_id);
    let _ = push_field(o, "bytes", size);
    o.push('}');
}

/// A request as one JSON object (no newline).
pub fn write_request(o: &mut String, r: &ElectLeadersRequest<'_>) {
    // Writing to a String cannot fail.
    let _ = request_fields(o, r);
    o.push('}');
}

/// A response as one JSON object (no newline). `api_version` tells `encode` the version.
pub fn write_response(o: &mut String, r: &ElectLeadersResponse<'_>) {
    let _ = response_fields(o, r);
    o.push('}');
}

/// A request's JSON object without its closing brace, written as the view is walked: a
/// caller adds `"source"` or closes it. Nothing of the frame's size is held.
pub fn request_fields<W: fmt::Write + ?Sized>(
    o: &mut W,
    r: &ElectLeadersRequest<'_>,
) -> fmt::Result {
    let header = r.header();
    o.write_str("{\"kind\":\"request\"")?;
    push_field(o, "api_key", header.api_key())?;
    push_field(o, "api_version", r.version())?;
    push_field(o, "correlation_id", r.correlation_id())?;
    o.write_str(",\"client_id\":")?;
    push_bytes(o, header.client_id())?;
    push_tagged(o, "header_tagged_fields", header.tagged_fields())?;
    if r.version() >= 1 {
        push_field(o, "election_type", r.election_type().0)?;
    }
    o.write_str(",\"topic_partitions\":")?;
    match r.topic_partitions() {
        None => o.write_str("null")?,
        Some(topics) => {
            o.write_char('[')?;
            for (i, entry) in topics.iter().enumerate() {
                if i > 0 {
                    o.write_char(',')?;
                }
                o.write_str("{\"topic\":")?;
                push_bytes(o, Some(entry.topic()))?;
                o.write_str(",\"partitions\":[")?;
                for (j, p) in entry.partitions().iter().enumerate() {
                    if j > 0 {
                        o.write_char(',')?;
                    }
                    write!(o, "{p}")?;
                }
                o.write_char(']')?;
                push_tagged(o, "tagged_fields", entry.tagged_fields())?;
                o.write_char('}')?;
            }
            o.write_char(']')?;
        }
    }
    push_field(o, "timeout_ms", r.timeout_ms())?;
    push_tagged(o, "tagged_fields", r.tagged_fields())
}

/// A response's JSON object without its closing brace, written as the view is walked.
pub fn response_fields<W: fmt::Write + ?Sized>(
    o: &mut W,
    r: &ElectLeadersResponse<'_>,
) -> fmt::Result {
    o.write_str("{\"kind\":\"response\"")?;
    push_field(o, "api_version", r.version())?;
    push_field(o, "correlation_id", r.correlation_id())?;
    push_tagged(o, "header_tagged_fields", r.header().tagged_fields())?;
    push_field(o, "throttle_time_ms", r.throttle_time_ms())?;
    if r.version() >= 1 {
        push_field(o, "error_code", r.error_code().0)?;
    }
    o.write_str(",\"replica_election_results\":[")?;
    for (i, result) in r.replica_election_results().iter().enumerate() {
        if i > 0 {
            o.write_char(',')?;
        }
        o.write_str("{\"topic\":")?;
        push_bytes(o, Some(result.topic()))?;
        o.write_str(",\"partition_result\":[")?;
        for (j, p) in result.partition_result().iter().enumerate() {
            if j > 0 {
                o.write_char(',')?;
            }
            write!(o, "{{\"partition_id\":{}", p.partition_id())?;
            push_field(o, "error_code", p.error_code().0)?;
            o.write_str(",\"error_message\":")?;
            push_bytes(o, p.error_message())?;
            push_tagged(o, "tagged_fields", p.tagged_fields())?;
            o.write_char('}')?;
        }
        o.write_char(']')?;
        push_tagged(o, "tagged_fields", result.tagged_fields())?;
        o.write_char('}')?;
    }
    o.write_char(']')?;
    push_tagged(o, "tagged_fields", r.tagged_fields())
}

/// `,"key":value` for a number.
fn push_field<W: fmt::Write + ?Sized>(
    o: &mut W,
    key: &str,
    value: impl std::fmt::Display,
) -> fmt::Result {
    write!(o, ",\"{key}\":{value}")
}

/// A byte string: a JSON string when it is UTF-8, `{"hex":"..."}` when not, `null` for null.
fn push_bytes<W: fmt::Write + ?Sized>(o: &mut W, bytes: Option<&[u8]>) -> fmt::Result {
    let Some(bytes) = bytes else {
        return o.write_str("null");
    };
    match std::str::from_utf8(bytes).map(serde_json::to_string) {
        Ok(Ok(quoted)) => o.write_str(&quoted),
        _ => {
            o.write_str("{\"hex\":\"")?;
            o.write_str(&to_hex(bytes))?;
            o.write_str("\"}")
        }
    }
}

/// `,"key":[{"tag":N,"data":"<hex>"},…]`, only when there are tagged fields.
fn push_tagged<W: fmt::Write + ?Sized>(
    o: &mut W,
    key: &str,
    fields: TaggedFields<'_>,
) -> fmt::Result {
    if fields.is_empty() {
        return Ok(());
    }
    write!(o, ",\"{key}\":[")?;
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            o.write_char(',')?;
        }
        write!(
            o,
            "{{\"tag\":{},\"data\":\"{}\"}}",
            field.tag(),
            to_hex(field.data())
        )?;
    }
    o.write_char(']')
}

/// `fmt::Write` over an `io::Write`: JSON written straight to the output as a view is
/// walked, the first I/O error kept for the caller.
pub struct IoText<'a> {
    out: &'a mut dyn Write,
    pub error: Option<std::io::Error>,
}

impl<'a> IoText<'a> {
    pub fn new(out: &'a mut dyn Write) -> Self {
        IoText { out, error: None }
    }

    /// The I/O error behind a failed write, if there was one.
    pub fn finish(self, result: fmt::Result) -> std::io::Result<()> {
        match (self.error, result) {
            (Some(e), _) => Err(e),
            (None, Ok(())) => Ok(()),
            (None, Err(_)) => Err(std::io::Error::other("formatting failed")),
        }
    }
}

impl fmt::Write for IoText<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.out.write_all(s.as_bytes()).map_err(|e| {
            self.error.get_or_insert(e);
            fmt::Error
        })
    }
}

// ---------------------------------------------------------------------------------------
// encode

/// `encode`: JSON objects to frames. The objects may be one per line, spread over several
/// lines or back to back (`jq` without `-c`): they are read as a stream of JSON values,
/// and each error still names its line.
pub fn encode(options: &EncodeArgs, out: &mut dyn Write) -> Result<(), Failure> {
    if !options.hex && std::io::stdout().is_terminal() {
        return Err(Failure::usage(
            "encode",
            "refusing to write binary frames to a terminal: use --hex for hex text, or \
             redirect standard output to a file or a pipe",
        ));
    }
    let source = Source::from_arg_or_stdin(options.file.as_deref());
    let name = source.name();
    let mut values = JsonStream::new(source.open("encode", false)?);
    loop {
        let (value, lines) = match values.next() {
            Ok(None) => return Ok(()),
            Ok(Some(next)) => next,
            Err(e) => return Err(Failure::Input(format!("{name}: {e}"))),
        };
        let frame = match value {
            Json::Value(value) => encode_value(&value),
            Json::Large(frame) => frame,
        };
        let frame = frame.map_err(|e| {
            let lines = match lines {
                (first, last) if first == last => format!("line {first}"),
                (first, last) => format!("lines {first}-{last}"),
            };
            Failure::Input(format!("{name}: {lines}: {e}"))
        })?;
        if options.hex {
            out.write_all(to_hex(&frame).as_bytes())?;
            out.write_all(b"\n")?;
        } else {
            out.write_all(&frame)?;
        }
    }
}

/// JSON values read one after the other from a byte stream, whatever whitespace is between
/// them (none, newlines, the indentation of a pretty-printer), with the lines each one
/// spans.
///
/// The input is read 64 KiB at a time (more only for a larger value) into a window of text,
/// and each value is parsed from the window with serde_json's `&str` parser, about twice
/// as fast as its byte-at-a-time reader. A value cut by the window's end is parsed again
/// once more text is in. Lines are counted over the text consumed, once.
struct JsonStream<R> {
    inner: R,
    /// The window; `text[start..]` is not read yet.
    text: String,
    start: usize,
    /// Bytes read but not in `text`: a character cut by the end of a read, or (when
    /// `invalid`) bytes that are not UTF-8, where the text stops for good.
    pending: Vec<u8>,
    invalid: bool,
    eof: bool,
    /// The line of `text[start]` (from 1) and how many bytes precede it on that line.
    line: usize,
    column: usize,
    /// Values this long or longer are read piece by piece ([`large`]).
    large_value: usize,
}

const JSON_WINDOW: usize = 64 * 1024;

/// The first and last line of a value.
type Lines = (usize, usize);

/// A value read by [`JsonStream`]: small ones whole, large ones already encoded (or
/// refused) piece by piece.
enum Json {
    Value(Value),
    Large(Result<Vec<u8>, String>),
}

impl<R: Read> JsonStream<R> {
    fn new(inner: R) -> Self {
        JsonStream {
            inner,
            text: String::new(),
            start: 0,
            pending: Vec::new(),
            invalid: false,
            eof: false,
            line: 1,
            column: 0,
            large_value: large::LARGE_VALUE,
        }
    }

    /// The next value and its first and last lines; `None` at the end of the input. The
    /// error says where the text stops being JSON (line and column).
    fn next(&mut self) -> Result<Option<(Json, Lines)>, String> {
        loop {
            let text = &self.text[self.start..];
            // Whether more text can come: not past the end of the input, nor past bytes
            // that are not UTF-8.
            let can_grow = !self.eof && !self.invalid;
            // A large value is found by its delimiters and read piece by piece, never as
            // one `Value`; until its end is in, more is read without parsing it.
            let t = text.as_bytes();
            let first = large::ws(t, 0);
            match large::value_end(t, first) {
                Ok(end) if end - first >= self.large_value => {
                    let delimited = matches!(t[end - 1], b'}' | b']' | b'"');
                    if end < t.len() || delimited || !can_grow {
                        if let Some(frame) = large::encode(&text[..end]) {
                            let first_line = self.line + newlines(&t[..first]);
                            let last_line = first_line + newlines(&t[first..end]);
                            let frame = match frame {
                                Ok(frame) => Ok(frame),
                                Err(large::Refused::Message(e)) => Err(e),
                                Err(large::Refused::Syntax(at, what)) => {
                                    let before = &t[..at];
                                    let (line, column) =
                                        match before.iter().rposition(|&b| b == b'\n') {
                                            Some(nl) => (self.line + newlines(before), at - nl),
                                            None => (self.line, self.column + at + 1),
                                        };
                                    return Err(format!(
                                        "line {line}, column {column}: not JSON: {what}"
                                    ));
                                }
                            };
                            self.consume(end);
                            return Ok(Some((Json::Large(frame), (first_line, last_line))));
                        }
                    }
                }
                Err(_) if t.len() - first >= self.large_value && can_grow => {
                    self.fill()?;
                    continue;
                }
                _ => {}
            }
            let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
            match values.next() {
                None => {
                    // Whitespace only: consumed.
                    let len = text.len();
                    self.consume(len);
                    if !can_grow {
                        return match self.invalid {
                            true => Err(self.not_utf8()),
                            false => Ok(None),
                        };
                    }
                }
                Some(Ok(value)) => {
                    let end = values.byte_offset();
                    // A number (or true, false, null) at the end of the window may go on.
                    let delimited = matches!(text.as_bytes()[end - 1], b'}' | b']' | b'"');
                    if end < text.len() || delimited || !can_grow {
                        let first = text.len() - text.trim_start().len();
                        let first_line = self.line + newlines(&text.as_bytes()[..first]);
                        let last_line = first_line + newlines(&text.as_bytes()[first..end]);
                        self.consume(end);
                        return Ok(Some((Json::Value(value), (first_line, last_line))));
                    }
                }
                Some(Err(e)) if e.is_eof() && can_grow => {}
                Some(Err(e)) if e.is_eof() && self.invalid => return Err(self.not_utf8()),
                Some(Err(e)) => {
                    let line = self.line + e.line() - 1;
                    let column = e.column() + if e.line() == 1 { self.column } else { 0 };
                    let what = what(&e);
                    return Err(format!("line {line}, column {column}: not JSON: {what}"));
                }
            }
            self.fill()?;
        }
    }

    /// Moves past `n` bytes of the window, counting their lines.
    fn consume(&mut self, n: usize) {
        let bytes = &self.text.as_bytes()[self.start..self.start + n];
        match bytes.iter().rposition(|&b| b == b'\n') {
            Some(last) => {
                self.line += newlines(bytes);
                self.column = n - last - 1;
            }
            None => self.column += n,
        }
        self.start += n;
    }

    /// Reads more of the input after the unread text: at least 64 KiB, and as much as is
    /// unread already, so that a large value is parsed again only a few times.
    fn fill(&mut self) -> Result<(), String> {
        self.text.drain(..self.start);
        self.start = 0;
        let want = JSON_WINDOW.max(self.text.len());
        // Read straight after the pending bytes: no other buffer as large as the text.
        let start = self.pending.len();
        self.pending.resize(start + want, 0);
        let n = loop {
            match self.inner.read(&mut self.pending[start..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.pending.truncate(start);
                    return Err(e.to_string());
                }
            }
        };
        self.pending.truncate(start + n);
        if n == 0 {
            self.eof = true;
            // A character cut by the end of the input.
            self.invalid = !self.pending.is_empty();
            return Ok(());
        }
        let ok = match std::str::from_utf8(&self.pending) {
            Ok(_) => self.pending.len(),
            Err(e) => {
                // A character cut by the end of this read is completed by the next one.
                self.invalid = e.error_len().is_some();
                e.valid_up_to()
            }
        };
        let valid = std::str::from_utf8(&self.pending[..ok]).expect("checked above");
        self.text.reserve_exact(ok);
        self.text.push_str(valid);
        self.pending.drain(..ok);
        self.pending.shrink_to(JSON_WINDOW);
        Ok(())
    }

    /// Where the bytes that are not UTF-8 begin: right after the window's text.
    fn not_utf8(&self) -> String {
        let before = &self.text.as_bytes()[self.start..];
        let (line, column) = match before.iter().rposition(|&b| b == b'\n') {
            Some(last) => (self.line + newlines(before), before.len() - last),
            None => (self.line, self.column + before.len() + 1),
        };
        format!("line {line}, column {column}: not JSON: not UTF-8 text")
    }
}

/// serde_json's message without its position (which is given in the input's terms).
fn what(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    text.strip_suffix(&suffix).unwrap_or(&text).to_owned()
}

fn newlines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count()
}

const REQUEST_KEYS: &[&str] = &[
    "kind",
    "api_key",
    "api_version",
    "correlation_id",
    "client_id",
    "header_tagged_fields",
    "election_type",
    "topic_partitions",
    "timeout_ms",
    "tagged_fields",
];
const TOPIC_KEYS: &[&str] = &["topic", "partitions", "tagged_fields"];
const RESPONSE_KEYS: &[&str] = &[
    "kind",
    "api_version",
    "correlation_id",
    "header_tagged_fields",
    "throttle_time_ms",
    "error_code",
    "replica_election_results",
    "tagged_fields",
];
const RESULT_KEYS: &[&str] = &["topic", "partition_result", "tagged_fields"];
const PARTITION_KEYS: &[&str] = &[
    "partition_id",
    "error_code",
    "error_message",
    "tagged_fields",
];

/// One JSON object to one frame.
pub fn encode_value(value: &Value) -> Result<Vec<u8>, String> {
    let Some(map) = value.as_object() else {
        return Err(format!("expected a JSON object, got {}", brief(value)));
    };
    match map.get("kind") {
        Some(Value::String(kind)) if kind == "request" => encode_request(value, None),
        Some(Value::String(kind)) if kind == "response" => encode_response(value, None),
        Some(other) => Err(format!(
            "kind: expected \"request\" or \"response\", got {}",
            brief(other)
        )),
        None => Err("kind: missing (\"request\" or \"response\")".into()),
    }
}

/// An owned tagged field, read from JSON.
type Tag = (u32, Vec<u8>);

fn tag_data(tags: &[Tag]) -> Vec<TaggedFieldData<'_>> {
    tags.iter()
        .map(|(tag, data)| TaggedFieldData::new(*tag, data))
        .collect()
}

struct TopicJson {
    topic: Vec<u8>,
    partitions: Vec<i32>,
    tags: Vec<Tag>,
}

/// `topics`: the `topic_partitions` array already read piece by piece (a large value, see
/// [`large`]), or the error it holds; `None` to read it from `value`.
fn encode_request(value: &Value, topics: Option<TopicsRead>) -> Result<Vec<u8>, String> {
    let obj = Obj::new(value, String::new(), REQUEST_KEYS)?;
    let version = obj.version()?;
    if let Some(api_key) = obj.int::<i16>("api_key", "an int16")? {
        if api_key != API_KEY {
            return Err(format!(
                "api_key: expected 43 (ElectLeaders), got {api_key}"
            ));
        }
    }
    let client_id = obj.bytes("client_id", true)?;
    let header_tags = obj.tagged("header_tagged_fields")?;
    let election_type = obj.int_or_name("election_type", "an int8", "PREFERRED, UNCLEAN", |n| {
        ElectionType::from_name(n).map(|e| e.0)
    })?;
    let topics = match topics {
        Some(read) => read?,
        None => request_topics(&obj)?,
    };
    let timeout_ms = obj.int::<i32>("timeout_ms", "an int32")?;
    let body_tags = obj.tagged("tagged_fields")?;
    encode_request_data(
        &obj,
        version,
        client_id,
        header_tags,
        election_type,
        topics,
        body_tags,
        timeout_ms,
    )
}

/// What `topic_partitions` holds: `None` when null.
type TopicsRead = Result<Option<Vec<TopicJson>>, String>;

fn request_topics(obj: &Obj<'_>) -> TopicsRead {
    Ok(match obj.array("topic_partitions", true)? {
        None => Some(Vec::new()),
        Some(None) => None,
        Some(Some((items, path))) => {
            let mut topics = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let entry = Obj::new(item, format!("{path}[{i}]"), TOPIC_KEYS)?;
                let partitions = match entry.array("partitions", false)? {
                    Some(Some((items, path))) => items
                        .iter()
                        .enumerate()
                        .map(|(j, p)| int_value::<i32>(p, &format!("{path}[{j}]"), "an int32"))
                        .collect::<Result<Vec<_>, _>>()?,
                    _ => Vec::new(),
                };
                topics.push(topic_json(&entry, partitions)?);
            }
            Some(topics)
        }
    })
}

/// A topic of a request, its partitions read.
fn topic_json(entry: &Obj<'_>, partitions: Vec<i32>) -> Result<TopicJson, String> {
    Ok(TopicJson {
        topic: entry.bytes("topic", false)?.flatten().unwrap_or_default(),
        partitions,
        tags: entry.tagged("tagged_fields")?,
    })
}

#[allow(clippy::too_many_arguments)]
fn encode_request_data(
    obj: &Obj<'_>,
    version: i16,
    client_id: Option<Option<Vec<u8>>>,
    header_tags: Vec<Tag>,
    election_type: Option<i8>,
    topics: Option<Vec<TopicJson>>,
    body_tags: Vec<Tag>,
    timeout_ms: Option<i32>,
) -> Result<Vec<u8>, String> {
    let defaults = ElectLeadersRequestData::default();

    let header_tag_data = tag_data(&header_tags);
    let body_tag_data = tag_data(&body_tags);
    let topic_tag_data: Vec<Vec<TaggedFieldData<'_>>> = topics
        .iter()
        .flatten()
        .map(|topic| tag_data(&topic.tags))
        .collect();
    let topic_data: Vec<TopicPartitionsData<'_>> = topics
        .iter()
        .flatten()
        .zip(&topic_tag_data)
        .map(|(topic, tags)| TopicPartitionsData {
            topic: &topic.topic,
            partitions: &topic.partitions,
            tagged_fields: tags,
        })
        .collect();
    let data = ElectLeadersRequestData {
        correlation_id: obj.int::<i32>("correlation_id", "an int32")?.unwrap_or(0),
        client_id: match &client_id {
            None => defaults.client_id,
            Some(id) => id.as_deref(),
        },
        header_tagged_fields: &header_tag_data,
        election_type: election_type.map_or(defaults.election_type, ElectionType),
        topic_partitions: topics.as_ref().map(|_| &topic_data[..]),
        timeout_ms: timeout_ms.unwrap_or(defaults.timeout_ms),
        tagged_fields: &body_tag_data,
    };
    let len = data.encoded_len(version).map_err(refusal)?;
    let mut frame = vec![0u8; len];
    data.encode(version, &mut frame).map_err(refusal)?;
    Ok(frame)
}

struct PartitionJson {
    partition_id: i32,
    error_code: i16,
    error_message: Option<Vec<u8>>,
    tags: Vec<Tag>,
}

struct ResultJson {
    topic: Vec<u8>,
    partitions: Vec<PartitionJson>,
    tags: Vec<Tag>,
}

/// `results`: the `replica_election_results` array already read piece by piece (a large
/// value, see [`large`]), or the error it holds; `None` to read it from `value`.
fn encode_response(
    value: &Value,
    results: Option<Result<Vec<ResultJson>, String>>,
) -> Result<Vec<u8>, String> {
    let obj = Obj::new(value, String::new(), RESPONSE_KEYS)?;
    let version = obj.version()?;
    let header_tags = obj.tagged("header_tagged_fields")?;
    let results = match results {
        Some(read) => read?,
        None => {
            let mut results = Vec::new();
            if let Some(Some((items, path))) = obj.array("replica_election_results", false)? {
                for (i, item) in items.iter().enumerate() {
                    let entry = Obj::new(item, format!("{path}[{i}]"), RESULT_KEYS)?;
                    let mut partitions = Vec::new();
                    if let Some(Some((items, path))) = entry.array("partition_result", false)? {
                        for (j, item) in items.iter().enumerate() {
                            partitions.push(partition_json(item, format!("{path}[{j}]"))?);
                        }
                    }
                    results.push(result_json(&entry, partitions)?);
                }
            }
            results
        }
    };
    let body_tags = obj.tagged("tagged_fields")?;

    // The writer reads the owned values themselves: nothing a partition is built again.
    let data = ResponseSource {
        correlation_id: obj.int("correlation_id", "an int32")?.unwrap_or(0),
        header_tags: &header_tags,
        throttle_time_ms: obj.int("throttle_time_ms", "an int32")?.unwrap_or(0),
        error_code: ErrorCode(obj.error_code()?.unwrap_or(0)),
        results: &results,
        body_tags: &body_tags,
    };
    let len = data.encoded_len(version).map_err(refusal)?;
    let mut frame = vec![0u8; len];
    data.encode(version, &mut frame).map_err(refusal)?;
    Ok(frame)
}

/// A response read from JSON, as the writer reads it.
struct ResponseSource<'a> {
    correlation_id: i32,
    header_tags: &'a [Tag],
    throttle_time_ms: i32,
    error_code: ErrorCode,
    results: &'a [ResultJson],
    body_tags: &'a [Tag],
}

fn tags_of(tags: &[Tag]) -> impl Iterator<Item = (u32, &[u8])> + '_ {
    tags.iter().map(|(tag, data)| (*tag, &data[..]))
}

impl EncodeResponse for ResponseSource<'_> {
    fn correlation_id(&self) -> i32 {
        self.correlation_id
    }
    fn header_tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags_of(self.header_tags)
    }
    fn throttle_time_ms(&self) -> i32 {
        self.throttle_time_ms
    }
    fn error_code(&self) -> ErrorCode {
        self.error_code
    }
    fn replica_election_results(
        &self,
    ) -> impl Iterator<Item = impl EncodeReplicaElectionResult + '_> + '_ {
        self.results.iter()
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags_of(self.body_tags)
    }
}

impl EncodeReplicaElectionResult for &ResultJson {
    fn topic(&self) -> &[u8] {
        &self.topic
    }
    fn partition_result(&self) -> impl Iterator<Item = impl EncodePartitionResult + '_> + '_ {
        self.partitions.iter()
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags_of(&self.tags)
    }
}

impl EncodePartitionResult for &PartitionJson {
    fn partition_id(&self) -> i32 {
        self.partition_id
    }
    fn error_code(&self) -> ErrorCode {
        ErrorCode(self.error_code)
    }
    fn error_message(&self) -> Option<&[u8]> {
        self.error_message.as_deref()
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags_of(&self.tags)
    }
}

/// One partition result of a response.
fn partition_json(item: &Value, path: String) -> Result<PartitionJson, String> {
    let p = Obj::new(item, path, PARTITION_KEYS)?;
    Ok(PartitionJson {
        partition_id: p.int("partition_id", "an int32")?.unwrap_or(0),
        error_code: p.error_code()?.unwrap_or(0),
        error_message: p.bytes("error_message", true)?.flatten(),
        tags: p.tagged("tagged_fields")?,
    })
}

/// A result of a response, its partitions read.
fn result_json(entry: &Obj<'_>, partitions: Vec<PartitionJson>) -> Result<ResultJson, String> {
    Ok(ResultJson {
        topic: entry.bytes("topic", false)?.flatten().unwrap_or_default(),
        partitions,
        tags: entry.tagged("tagged_fields")?,
    })
}

/// The writer's refusal, naming the JSON field and the schema's.
fn refusal(e: EncodeError) -> String {
    let json = match e.field {
        "api_version" => "api_version",
        "RequestHeader.ClientId" => "client_id",
        "RequestHeader._tagged_fields" | "ResponseHeader._tagged_fields" => "header_tagged_fields",
        "ElectionType" => "election_type",
        "TopicPartitions" => "topic_partitions",
        "TopicPartitions.Topic" => "topic_partitions[].topic",
        "TopicPartitions.Partitions" => "topic_partitions[].partitions",
        "TopicPartitions._tagged_fields" => "topic_partitions[].tagged_fields",
        "ErrorCode" => "error_code",
        "ReplicaElectionResults" => "replica_election_results",
        "ReplicaElectionResults.Topic" => "replica_election_results[].topic",
        "ReplicaElectionResults.PartitionResult" => "replica_election_results[].partition_result",
        "ReplicaElectionResults._tagged_fields" => "replica_election_results[].tagged_fields",
        "ReplicaElectionResults.PartitionResult.ErrorMessage" => {
            "replica_election_results[].partition_result[].error_message"
        }
        "ReplicaElectionResults.PartitionResult._tagged_fields" => {
            "replica_election_results[].partition_result[].tagged_fields"
        }
        "_tagged_fields" => "tagged_fields",
        other => other,
    };
    if json == e.field {
        format!("{}: {}", e.field, e.kind)
    } else {
        format!("{json} ({}): {}", e.field, e.kind)
    }
}

/// A JSON object being read, with its path for messages (`topic_partitions[1]`).
struct Obj<'v> {
    map: &'v Map<String, Value>,
    path: String,
}

impl<'v> Obj<'v> {
    /// Checks that `value` is an object whose keys are all in `allowed`: a misspelt key
    /// is an error, not a field silently left at its default.
    fn new(value: &'v Value, path: String, allowed: &[&str]) -> Result<Self, String> {
        let Some(map) = value.as_object() else {
            return Err(format!(
                "{}: expected a JSON object, got {}",
                if path.is_empty() { "message" } else { &path },
                brief(value)
            ));
        };
        if let Some(key) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
            let at = if path.is_empty() {
                String::new()
            } else {
                format!(" in {path}")
            };
            return Err(format!(
                "unknown field \"{key}\"{at} (expected one of: {})",
                allowed.join(", ")
            ));
        }
        Ok(Obj { map, path })
    }

    fn path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    /// `api_version`: required, so `encode` knows the version.
    fn version(&self) -> Result<i16, String> {
        match self.int::<i16>("api_version", "an int16")? {
            Some(version) => Ok(version),
            None => Err("api_version: missing (0, 1 or 2)".into()),
        }
    }

    /// An integer field, `None` when missing.
    fn int<T: TryFrom<i64>>(&self, key: &str, ty: &str) -> Result<Option<T>, String> {
        self.map
            .get(key)
            .map(|v| int_value(v, &self.path(key), ty))
            .transpose()
    }

    /// An integer field that may also be given by name (`"UNCLEAN"`): `from_name` reads
    /// the name; `names` says what names there are, for messages.
    fn int_or_name<T: TryFrom<i64>>(
        &self,
        key: &str,
        ty: &str,
        names: &str,
        from_name: impl Fn(&str) -> Option<T>,
    ) -> Result<Option<T>, String> {
        match self.map.get(key) {
            Some(Value::String(name)) => from_name(name).map(Some).ok_or_else(|| {
                format!(
                    "{}: unknown name \"{name}\" (expected {ty} or one of Kafka's names: \
                     {names})",
                    self.path(key)
                )
            }),
            _ => self.int(key, ty),
        }
    }

    /// `error_code`: an int16 or the name of a Kafka error code (`"NOT_CONTROLLER"`).
    fn error_code(&self) -> Result<Option<i16>, String> {
        self.int_or_name(
            "error_code",
            "an int16",
            "NONE, NOT_CONTROLLER, ELECTION_NOT_NEEDED, ...",
            |n| ErrorCode::from_name(n).map(|c| c.0),
        )
    }

    /// A byte string: `None` missing, `Some(None)` null (when `nullable`), else the bytes
    /// of a JSON string or of `{"hex":"..."}`.
    fn bytes(&self, key: &str, nullable: bool) -> Result<Option<Option<Vec<u8>>>, String> {
        let path = self.path(key);
        let Some(value) = self.map.get(key) else {
            return Ok(None);
        };
        match value {
            Value::Null if nullable => Ok(Some(None)),
            Value::Null => Err(format!("{path}: null, but the field is not nullable")),
            Value::String(s) => Ok(Some(Some(s.as_bytes().to_vec()))),
            Value::Object(map) if map.len() == 1 => match map.get("hex") {
                Some(Value::String(hex)) => from_hex(hex)
                    .map(|b| Some(Some(b)))
                    .map_err(|e| format!("{path}.hex: {e}")),
                _ => Err(format!(
                    "{path}: expected a string or {{\"hex\":\"...\"}}, got {}",
                    brief(value)
                )),
            },
            _ => Err(format!(
                "{path}: expected a string or {{\"hex\":\"...\"}}, got {}",
                brief(value)
            )),
        }
    }

    /// An array: `None` missing, `Some(None)` null (when `nullable`), else the items and
    /// the array's path.
    #[allow(clippy::type_complexity)]
    fn array(
        &self,
        key: &str,
        nullable: bool,
    ) -> Result<Option<Option<(&'v Vec<Value>, String)>>, String> {
        let path = self.path(key);
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::Null) if nullable => Ok(Some(None)),
            Some(Value::Null) => Err(format!("{path}: null, but the field is not nullable")),
            Some(Value::Array(items)) => Ok(Some(Some((items, path)))),
            Some(other) => Err(format!("{path}: expected an array, got {}", brief(other))),
        }
    }

    /// Tagged fields: `[{"tag":N,"data":"<hex>"}, …]`; missing or null is none.
    fn tagged(&self, key: &str) -> Result<Vec<Tag>, String> {
        let Some(Some((items, path))) = self.array(key, true)? else {
            return Ok(Vec::new());
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let field = Obj::new(item, format!("{path}[{i}]"), &["tag", "data"])?;
                let tag = field
                    .int::<u32>("tag", "a uint32")?
                    .ok_or_else(|| format!("{}: missing", field.path("tag")))?;
                let data = match field.map.get("data") {
                    None => Vec::new(),
                    Some(Value::String(hex)) => {
                        from_hex(hex).map_err(|e| format!("{}: {e}", field.path("data")))?
                    }
                    Some(other) => {
                        return Err(format!(
                            "{}: expected a hex string, got {}",
                            field.path("data"),
                            brief(other)
                        ))
                    }
                };
                Ok((tag, data))
            })
            .collect()
    }
}

/// An integer that must fit `T` (`ty` names it in messages: "an int32").
fn int_value<T: TryFrom<i64>>(value: &Value, path: &str, ty: &str) -> Result<T, String> {
    value
        .as_i64()
        .and_then(|n| T::try_from(n).ok())
        .ok_or_else(|| format!("{path}: expected {ty}, got {}", brief(value)))
}

/// A value, shortened for a message.
fn brief(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 40 {
        let short: String = text.chars().take(37).collect();
        format!("{short}...")
    } else {
        text
    }
}

/// Reading a large JSON value piece by piece.
///
/// A `serde_json::Value` costs tens of bytes a number and far more an object: the value of
/// a frame with millions of partitions would need gigabytes. A value whose text is larger
/// than [`LARGE_VALUE`] is therefore walked here a level at a time: its members and the
/// elements of its lists are found by their delimiters, and only the small pieces (a
/// partition, a partition result, a topic's name, any other field) are read as `Value`s,
/// one at a time, and checked by the same code as a small value's. What is kept is the
/// owned data handed to the writer. The syntax is still checked everywhere: the pieces by
/// serde_json, the levels walked here with serde_json's own messages; only where a
/// malformed large value first goes wrong, and so which error is named, may differ.
mod large {
    use std::ops::Range;

    use serde_json::{Map, Value};

    use super::{
        encode_request, encode_response, int_value, partition_json, result_json, topic_json, what,
        Obj, ResultJson, TopicJson, TopicsRead, RESULT_KEYS, TOPIC_KEYS,
    };

    /// A value whose text is at least this long is read piece by piece.
    pub const LARGE_VALUE: usize = 1 << 20;

    /// Why a large value was not encoded: its text is not JSON (at a byte offset of the
    /// text), or it is not a message the writer can encode.
    pub enum Refused {
        Syntax(usize, String),
        Message(String),
    }

    type Syntax<T> = Result<T, (usize, String)>;

    /// One JSON object (the text of a large value, leading whitespace allowed) to one
    /// frame; `None` when the value is not an object, for the caller to read whole.
    pub fn encode(text: &str) -> Option<Result<Vec<u8>, Refused>> {
        let t = text.as_bytes();
        let at = ws(t, 0);
        if t.get(at) != Some(&b'{') {
            return None;
        }
        Some(encode_object(text, at))
    }

    fn encode_object(text: &str, at: usize) -> Result<Vec<u8>, Refused> {
        let syntax = |(at, what)| Refused::Syntax(at, what);
        let members = members(text, at).map_err(syntax)?;
        let kind = members
            .iter()
            .rev()
            .find(|(k, _)| k == "kind")
            .map(|(_, r)| piece(text, r.clone()))
            .transpose()
            .map_err(syntax)?;
        let (list_key, request) = match kind {
            Some(Value::String(kind)) if kind == "request" => ("topic_partitions", true),
            Some(Value::String(kind)) if kind == "response" => ("replica_election_results", false),
            // Not a message of a known kind: read whole, for the same message as a small one.
            _ => {
                let value = piece(text, at..text.len()).map_err(syntax)?;
                return super::encode_value(&value).map_err(Refused::Message);
            }
        };
        let mut map = Map::new();
        let mut list = None;
        for (key, range) in members {
            let first = text.as_bytes()[range.start];
            if key == list_key && (first == b'[' || (first == b'n' && request)) {
                map.remove(&key);
                list = Some(range);
                continue;
            }
            if key == list_key {
                list = None;
            }
            map.insert(key, piece(text, range).map_err(syntax)?);
        }
        let value = Value::Object(map);
        if request {
            let topics = match list {
                None => None,
                Some(range) => Some(request_topics(text, range).map_err(syntax)?),
            };
            encode_request(&value, topics).map_err(Refused::Message)
        } else {
            let results = match list {
                None => None,
                Some(range) => Some(response_results(text, range).map_err(syntax)?),
            };
            encode_response(&value, results).map_err(Refused::Message)
        }
    }

    /// `topic_partitions`, an array or null: the topics, or the first error in them.
    fn request_topics(text: &str, range: Range<usize>) -> Syntax<TopicsRead> {
        if text.as_bytes()[range.start] == b'n' {
            piece(text, range)?;
            return Ok(Ok(None));
        }
        let mut topics = Vec::new();
        let mut refused = None;
        let mut i = 0;
        elements(text, range.start, &mut |item| {
            let path = format!("topic_partitions[{i}]");
            i += 1;
            if refused.is_some() {
                return skip_piece(text, item);
            }
            match topic(text, item, path)? {
                Ok(topic) => topics.push(topic),
                Err(e) => refused = Some(e),
            }
            Ok(())
        })?;
        Ok(match refused {
            Some(e) => Err(e),
            None => Ok(Some(topics)),
        })
    }

    fn topic(text: &str, item: Range<usize>, path: String) -> Syntax<Result<TopicJson, String>> {
        let (entry, partitions) = split_object(text, item, "partitions")?;
        let entry = match Obj::new(&entry, path, TOPIC_KEYS) {
            Ok(entry) => entry,
            Err(e) => {
                // The syntax is checked whole before any field, as for a small value.
                if let Some(range) = partitions {
                    skip_piece(text, range)?;
                }
                return Ok(Err(e));
            }
        };
        let mut values = Vec::new();
        let mut refused = None;
        if partitions.is_none() {
            // Missing, null or not an array: the small value's checks and messages.
            match entry.array("partitions", false) {
                Err(e) => return Ok(Err(e)),
                Ok(Some(Some((items, path)))) => {
                    for (j, p) in items.iter().enumerate() {
                        match int_value::<i32>(p, &format!("{path}[{j}]"), "an int32") {
                            Ok(n) => values.push(n),
                            Err(e) => return Ok(Err(e)),
                        }
                    }
                }
                Ok(_) => {}
            }
        }
        if let Some(range) = partitions {
            let path = entry.path("partitions");
            let mut j = 0;
            elements(text, range.start, &mut |p| {
                let value = piece(text, p)?;
                if refused.is_none() {
                    match int_value::<i32>(&value, &format!("{path}[{j}]"), "an int32") {
                        Ok(n) => values.push(n),
                        Err(e) => refused = Some(e),
                    }
                }
                j += 1;
                Ok(())
            })?;
        }
        if let Some(e) = refused {
            return Ok(Err(e));
        }
        Ok(topic_json(&entry, values))
    }

    /// `replica_election_results`: the results, or the first error in them.
    fn response_results(
        text: &str,
        range: Range<usize>,
    ) -> Syntax<Result<Vec<ResultJson>, String>> {
        let mut results = Vec::new();
        let mut refused = None;
        let mut i = 0;
        elements(text, range.start, &mut |item| {
            let path = format!("replica_election_results[{i}]");
            i += 1;
            if refused.is_some() {
                return skip_piece(text, item);
            }
            let (entry, partitions) = split_object(text, item, "partition_result")?;
            let entry = match Obj::new(&entry, path, RESULT_KEYS) {
                Ok(entry) => entry,
                Err(e) => {
                    refused = Some(e);
                    return partitions.map_or(Ok(()), |range| skip_piece(text, range));
                }
            };
            let mut list = Vec::new();
            let mut failed = None;
            if partitions.is_none() {
                match entry.array("partition_result", false) {
                    Err(e) => failed = Some(e),
                    Ok(Some(Some((items, path)))) => {
                        for (j, item) in items.iter().enumerate() {
                            match partition_json(item, format!("{path}[{j}]")) {
                                Ok(p) => list.push(p),
                                Err(e) => {
                                    failed = Some(e);
                                    break;
                                }
                            }
                        }
                    }
                    Ok(_) => {}
                }
            }
            if let Some(range) = partitions {
                let path = entry.path("partition_result");
                let mut j = 0;
                elements(text, range.start, &mut |p| {
                    let value = piece(text, p)?;
                    if failed.is_none() {
                        match partition_json(&value, format!("{path}[{j}]")) {
                            Ok(p) => list.push(p),
                            Err(e) => failed = Some(e),
                        }
                    }
                    j += 1;
                    Ok(())
                })?;
            }
            match failed.map_or_else(|| result_json(&entry, list), Err) {
                Ok(result) => results.push(result),
                Err(e) => refused = Some(e),
            }
            Ok(())
        })?;
        Ok(match refused {
            Some(e) => Err(e),
            None => Ok(results),
        })
    }

    /// An object's members as a `Value`, except `key` when it holds an array: that one's
    /// range, to be walked. Anything but an object is returned whole, for `Obj::new`'s
    /// message.
    fn split_object(
        text: &str,
        item: Range<usize>,
        key: &str,
    ) -> Syntax<(Value, Option<Range<usize>>)> {
        if text.as_bytes()[item.start] != b'{' {
            return Ok((piece(text, item)?, None));
        }
        let mut map = Map::new();
        let mut list = None;
        for (k, range) in members(text, item.start)? {
            if k == key && text.as_bytes()[range.start] == b'[' {
                map.remove(&k);
                list = Some(range);
                continue;
            }
            if k == key {
                list = None;
            }
            map.insert(k, piece(text, range)?);
        }
        Ok((Value::Object(map), list))
    }

    /// Skips skipped whitespace from `i`.
    pub fn ws(t: &[u8], mut i: usize) -> usize {
        while i < t.len() && matches!(t[i], b' ' | b'\t' | b'\n' | b'\r') {
            i += 1;
        }
        i
    }

    fn eof(t: &[u8], what: &str) -> (usize, String) {
        (
            t.len().saturating_sub(1),
            format!("EOF while parsing {what}"),
        )
    }

    /// Where the value starting at `at` ends, found by its delimiters alone (what is between
    /// them is checked when it is read).
    pub fn value_end(t: &[u8], at: usize) -> Syntax<usize> {
        match t.get(at) {
            None => Err(eof(t, "a value")),
            Some(b'"') => string_end(t, at),
            Some(&open @ (b'{' | b'[')) => {
                let mut depth = 0usize;
                let mut i = at;
                while i < t.len() {
                    match t[i] {
                        b'"' => {
                            i = string_end(t, i)?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                return Ok(i + 1);
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
                Err(eof(t, if open == b'{' { "an object" } else { "a list" }))
            }
            Some(_) => {
                let mut i = at;
                while i < t.len()
                    && !matches!(t[i], b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r')
                {
                    i += 1;
                }
                Ok(i)
            }
        }
    }

    fn string_end(t: &[u8], at: usize) -> Syntax<usize> {
        let mut i = at + 1;
        while i < t.len() {
            match t[i] {
                b'\\' => i += 2,
                b'"' => return Ok(i + 1),
                _ => i += 1,
            }
        }
        Err(eof(t, "a string"))
    }

    /// The members of the object at `at`: each key and the range of its value.
    fn members(text: &str, at: usize) -> Syntax<Vec<(String, Range<usize>)>> {
        let t = text.as_bytes();
        let mut out = Vec::new();
        let mut i = ws(t, at + 1);
        if t.get(i) == Some(&b'}') {
            return Ok(out);
        }
        loop {
            match t.get(i) {
                None => return Err(eof(t, "an object")),
                Some(b'"') => {}
                Some(_) => return Err((i, "key must be a string".into())),
            }
            let key_end = string_end(t, i)?;
            let key = match piece(text, i..key_end)? {
                Value::String(key) => key,
                _ => return Err((i, "key must be a string".into())),
            };
            i = ws(t, key_end);
            match t.get(i) {
                None => return Err(eof(t, "an object")),
                Some(b':') => {}
                Some(_) => return Err((i, "expected `:`".into())),
            }
            i = ws(t, i + 1);
            let end = value_end(t, i)?;
            out.push((key, i..end));
            i = ws(t, end);
            match t.get(i) {
                None => return Err(eof(t, "an object")),
                Some(b',') => {
                    i = ws(t, i + 1);
                    if t.get(i) == Some(&b'}') {
                        return Err((i, "trailing comma".into()));
                    }
                }
                Some(b'}') => return Ok(out),
                Some(_) => return Err((i, "expected `,` or `}`".into())),
            }
        }
    }

    /// Hands `each` the range of every element of the array at `at`, in order.
    fn elements(
        text: &str,
        at: usize,
        each: &mut dyn FnMut(Range<usize>) -> Syntax<()>,
    ) -> Syntax<()> {
        let t = text.as_bytes();
        let mut i = ws(t, at + 1);
        if t.get(i) == Some(&b']') {
            return Ok(());
        }
        loop {
            let end = value_end(t, i)?;
            each(i..end)?;
            i = ws(t, end);
            match t.get(i) {
                None => return Err(eof(t, "a list")),
                Some(b',') => {
                    i = ws(t, i + 1);
                    if t.get(i) == Some(&b']') {
                        return Err((i, "trailing comma".into()));
                    }
                }
                Some(b']') => return Ok(()),
                Some(_) => return Err((i, "expected `,` or `]`".into())),
            }
        }
    }

    /// Checks the syntax of a piece not needed any more (after an error in the message),
    /// level by level, never holding more than a small piece.
    fn skip_piece(text: &str, range: Range<usize>) -> Syntax<()> {
        match text.as_bytes()[range.start] {
            b'{' => {
                for (_, value) in members(text, range.start)? {
                    skip_piece(text, value)?;
                }
                Ok(())
            }
            b'[' => elements(text, range.start, &mut |item| skip_piece(text, item)),
            _ => piece(text, range).map(drop),
        }
    }

    /// A small piece of the text as a `Value`; a syntax error at its offset in the text.
    fn piece(text: &str, range: Range<usize>) -> Syntax<Value> {
        let parsed = serde_json::from_str(&text[range.clone()]);
        // A piece cut short (`tru`) is an error about the byte after it, as in the whole.
        let range = match &parsed {
            Err(e) if e.is_eof() && range.end < text.len() => {
                let next = range.end + text[range.end..].chars().next().map_or(1, char::len_utf8);
                range.start..next
            }
            _ => range,
        };
        let parsed = match parsed {
            Err(e) if e.is_eof() => serde_json::from_str::<Value>(&text[range.clone()]).and(Err(e)),
            other => other,
        };
        parsed.map_err(|e| {
            // serde_json counts lines and columns in the piece: back to an offset.
            let piece = &text.as_bytes()[range.clone()];
            let line_start = piece
                .iter()
                .enumerate()
                .filter(|(_, &b)| b == b'\n')
                .nth(e.line().saturating_sub(2))
                .map_or(0, |(i, _)| if e.line() >= 2 { i + 1 } else { 0 });
            let at = range.start + line_start + e.column().saturating_sub(1);
            (at.min(text.len()), what(&e))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{Json, JsonStream, Lines, Value};
    use std::io::Read;

    /// Hands out its bytes a few at a time (1, 2, 3, 1, ...), so that values, characters
    /// and lines are cut by every read's end.
    struct Trickle<'a> {
        bytes: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.step = self.step % 3 + 1;
            let n = self.step.min(buf.len()).min(self.bytes.len());
            buf[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    fn read_all(input: &[u8]) -> (Vec<(Value, Lines)>, Option<String>) {
        let mut stream = JsonStream::new(Trickle {
            bytes: input,
            step: 0,
        });
        let mut values = Vec::new();
        loop {
            match stream.next() {
                Ok(Some((Json::Value(value), lines))) => values.push((value, lines)),
                Ok(Some((Json::Large(_), _))) => panic!("no value here is large"),
                Ok(None) => return (values, None),
                Err(e) => return (values, Some(e)),
            }
        }
    }

    #[test]
    fn values_with_their_lines_across_reads() {
        let input = "{\"a\":\"trädgård 🚀\"}{\"b\":[1,\n2]}\n\n  {\n \"c\": 12345\n}\n  7 \"x\" ";
        let (values, error) = read_all(input.as_bytes());
        assert_eq!(error, None);
        let lines: Vec<_> = values.iter().map(|(_, lines)| *lines).collect();
        assert_eq!(lines, [(1, 1), (1, 2), (4, 6), (7, 7), (7, 7)]);
        assert_eq!(values[0].0["a"], "trädgård 🚀");
        assert_eq!(values[2].0["c"], 12345);
        // A number cut by a read is read whole.
        assert_eq!(values[3].0, 7);
    }

    #[test]
    fn a_value_larger_than_the_window() {
        let big = format!("{{\"s\":\"{}\"}}\n{{}}", "x".repeat(300 * 1024));
        let mut stream = JsonStream::new(big.as_bytes());
        let Ok(Some((Json::Value(value), lines))) = stream.next() else {
            panic!("a value, read whole");
        };
        assert_eq!(value["s"].as_str().unwrap().len(), 300 * 1024);
        assert_eq!(lines, (1, 1));
        assert_eq!(stream.next().unwrap().unwrap().1, (2, 2));
        assert!(matches!(stream.next(), Ok(None)));
    }

    #[test]
    fn errors_name_line_and_column() {
        let cases: &[(&[u8], usize, &str)] = &[
            (
                b"{}\n{\"a\" 1}",
                1,
                "line 2, column 6: not JSON: expected `:`",
            ),
            (
                b"{}  {\"a\":",
                1,
                "line 1, column 9: not JSON: EOF while parsing",
            ),
            (
                b"{}\n {\"a\":\"\xff\"}",
                1,
                "line 2, column 8: not JSON: not UTF-8 text",
            ),
            (
                b"{}\n\xe2\x82",
                1,
                "line 2, column 1: not JSON: not UTF-8 text",
            ),
            (b"{} x", 1, "line 1, column 4: not JSON: expected value"),
        ];
        for &(input, good, expected) in cases {
            let (values, error) = read_all(input);
            assert_eq!(values.len(), good, "{expected}");
            let error = error.expect("an error");
            assert!(error.starts_with(expected), "{error:?} is not {expected:?}");
        }
    }

    /// Every value of `input` encoded as `encode` does (frames, then the first error),
    /// values of `large_value` bytes or more read piece by piece.
    fn encode_all(input: &[u8], large_value: usize) -> (Vec<Vec<u8>>, Option<String>) {
        let mut stream = JsonStream::new(Trickle {
            bytes: input,
            step: 0,
        });
        stream.large_value = large_value;
        let mut frames = Vec::new();
        loop {
            let (value, (first, last)) = match stream.next() {
                Ok(Some(next)) => next,
                Ok(None) => return (frames, None),
                Err(e) => return (frames, Some(e)),
            };
            let frame = match value {
                Json::Value(value) => super::encode_value(&value),
                Json::Large(frame) => frame,
            };
            match frame {
                Ok(frame) => frames.push(frame),
                Err(e) => return (frames, Some(format!("lines {first}-{last}: {e}"))),
            }
        }
    }

    /// The corpus frames as `decode` prints them, pretty-printed too, so that large values
    /// read piece by piece meet every field, null and tagged field there is.
    fn corpus_json() -> Vec<String> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus");
        let mut lines = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !name.ends_with(".bin") {
                continue;
            }
            let frame = std::fs::read(&path).unwrap();
            let mut line = String::new();
            if name.starts_with("request") {
                super::write_request(&mut line, &super::parse_request(&frame).unwrap());
            } else {
                let version = i16::from(name.as_bytes()["response-v".len()] - b'0');
                let response = super::parse_response(&frame, version).unwrap();
                super::write_response(&mut line, &response);
            }
            let value: Value = serde_json::from_str(&line).unwrap();
            lines.push(serde_json::to_string_pretty(&value).unwrap());
            lines.push(line);
        }
        assert!(lines.len() >= 20);
        lines
    }

    #[test]
    fn large_values_read_piece_by_piece_encode_as_small_ones_do() {
        let all = corpus_json().join("\n");
        let whole = encode_all(all.as_bytes(), usize::MAX);
        let pieces = encode_all(all.as_bytes(), 0);
        assert_eq!(whole.1, None);
        assert_eq!(whole.0.len(), corpus_json().len());
        assert_eq!(pieces, whole);
    }

    #[test]
    fn large_values_refused_as_small_ones_are() {
        let request = r#"{"kind":"request","api_version":2,"topic_partitions":[{"topic":"a","partitions":[1,2]},{"topic":"b","partitions":[3]}]}"#;
        let response = r#"{"kind":"response","api_version":1,"replica_election_results":[{"topic":"a","partition_result":[{"partition_id":1,"error_code":0,"error_message":null}]}]}"#;
        let cases: Vec<String> = vec![
            // What the writer or the checks refuse, at every level.
            request.replace("\"api_version\":2,", ""),
            request.replace("\"api_version\":2", "\"api_version\":7"),
            request.replace("\"kind\":\"request\",", "\"bogus\":1,\"kind\":\"request\","),
            request.replace("[1,2]", "[1,\"x\"]"),
            request.replace("[1,2]", "[1,2147483648]"),
            request.replace("[1,2]", "null"),
            request.replace("[1,2]", "{}"),
            request.replace("[3]", "[3],\"extra\":true"),
            request.replace("{\"topic\":\"b\"", "{\"topic\":null"),
            request.replace("{\"topic\":\"b\",\"partitions\":[3]}", "7"),
            request
                .replace(":[{\"topic\":\"a\"", ":{\"x\":[{\"topic\":\"a\"")
                .replace("]}]}", "]}]}}"),
            request.replace(
                "\"topic_partitions\":[",
                "\"client_id\":5,\"topic_partitions\":[",
            ),
            request.replace("[1,2]", "[1,\"x\"],\"topic\":{\"hex\":\"zz\"}"),
            request.replace("\"kind\":\"request\"", "\"kind\":\"neither\""),
            response.to_owned(),
            response.replace("\"error_code\":0", "\"error_code\":\"NOT_A_CODE\""),
            response.replace("\"error_message\":null", "\"error_message\":null,\"x\":1"),
            response.replace("\"partition_id\":1,", ""),
            response.replace("[{\"partition_id\"", "[7,{\"partition_id\""),
            response.replace(
                "\"partition_result\":[",
                "\"partition_result\":null,\"p\":[",
            ),
            response.replace(
                "\"replica_election_results\":[",
                "\"replica_election_results\":null,\"r\":[",
            ),
            response.replace("\"api_version\":1", "\"api_version\":0,\"error_code\":3"),
            // Not JSON, at the levels walked piece by piece and inside the pieces.
            request.replace("[1,2]", "[1 2]"),
            // Refused, and not JSON further on: the syntax error is named.
            request.replace("[1,2]", "[1 2],\"zz\":1"),
            request
                .replace("[1,2]", "[1,\"x\"]")
                .replace("[3]", "[3 4]"),
            response.replace("\"partition_id\":1", "\"partition_id\":1 2"),
            response
                .replace("\"topic\":\"a\"", "\"topic\":\"a\",\"zz\":0")
                .replace("null}", "nul}"),
            request.replace("[1,2]", "[1,2,]"),
            request.replace("[1,2]", "[1,tru]"),
            request.replace("\"topic\":\"a\"", "\"topic\" \"a\""),
            request.replace("\"topic\":\"a\",", "\"topic\":\"a\" "),
            request.replace("{\"topic\":\"b\"", "{topic:\"b\""),
            request.replace("[3]}]}", "[3]},]}"),
            request.replace("\"a\"", "\"a\\q\""),
            format!("{request}\n  {}", &request[..request.len() - 9]),
            response.replace("\"error_message\":null", "\"error_message\":nul"),
        ];
        for case in &cases {
            for text in [case.clone(), format!("{{}}\n\n  {case}\n")] {
                let whole = encode_all(text.as_bytes(), usize::MAX);
                let pieces = encode_all(text.as_bytes(), 0);
                assert_eq!(pieces, whole, "{text}");
            }
        }
        // The cases are refusals, but for the valid response and the one whose missing
        // partition_id defaults to 0: the comparison above compared errors, not successes.
        let accepted: Vec<&String> = cases
            .iter()
            .filter(|c| encode_all(c.as_bytes(), 0).1.is_none())
            .collect();
        assert_eq!(accepted.len(), 2, "{accepted:#?}");
    }
}
