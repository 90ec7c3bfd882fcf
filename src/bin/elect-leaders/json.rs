//! `decode` (frames to JSON lines) and `encode` (JSON to frames), in the field names and
//! order of the contract in docs/JSON.md.
//!
//! Decoding walks the library's parsed views and writes the JSON by hand, in the contract's
//! order; serde_json only escapes strings. Encoding reads each object as a
//! `serde_json::Value`, checks it field by field, and hands borrowed data to the library's
//! writer, which decides what a version can carry.

use std::io::{IsTerminal, Read, Write};

use kafka_elect_leaders::{
    is_known_request, parse_request, parse_response, peek_request, ElectLeadersRequest,
    ElectLeadersRequestData, ElectLeadersResponse, ElectLeadersResponseData, ElectionType,
    EncodeError, EncodeRequest, EncodeResponse, ErrorCode, PartitionResultData,
    ReplicaElectionResultData, TaggedFieldData, TaggedFields, TopicPartitionsData, API_KEY,
};
use serde_json::{Map, Value};

use crate::capture::Capture;
use crate::fail::{frame_failure, malformed, not_a_request_hint, Failure};
use crate::input::{from_hex, to_hex, FrameReader, Kind, Opened, ReadFailure, Source};
use crate::traffic::{self, Item, What};
use crate::Options;

// ---------------------------------------------------------------------------------------
// decode

/// `decode`: one JSON object per frame, one per line.
pub fn decode(options: &Options, out: &mut dyn Write) -> Result<(), Failure> {
    let source = Source::from_args_or_stdin(&options.files);
    let kind = options.kind_of(&source);
    let name = source.name();
    match source.open_any("decode", options.hex)? {
        Opened::Capture(mut capture) => decode_capture(options, &name, &mut capture, out),
        Opened::Stream(reader) => decode_stream(options, &name, kind, reader, out),
    }
}

/// Frames back to back. A stream of requests may hold frames of any API (a recorded
/// connection): those are passed over, or listed with `--all`. When the first frame is of
/// another API the input is a connection, and every object says where its frame was
/// (`"source"`); a file of ElectLeaders frames prints exactly the frames' objects.
fn decode_stream(
    options: &Options,
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
                    || options.all
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
                    if options.all {
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
                _ => parse_request(&frame.bytes).map(|r| write_request(&mut line, &r)),
            },
            Kind::Response(version) => {
                parse_response(&frame.bytes, version).map(|r| write_response(&mut line, &r))
            }
        };
        if let Err(error) = parsed {
            let mut message = frame_failure(name, index, frame.offset, frame.bytes.len(), &error);
            if kind == Kind::Request {
                message.push_str(not_a_request_hint(&frame.bytes));
            }
            return Err(Failure::Input(message));
        }
        if line.is_empty() {
            continue;
        }
        if connection {
            line.pop();
            line.push_str(&format!(
                ",\"source\":{{\"frame\":{index},\"offset\":{}}}}}",
                frame.offset
            ));
        }
        line.push('\n');
        out.write_all(line.as_bytes())?;
    }
}

/// A pcap or pcapng capture: every connection's ElectLeaders frames, responses parsed with
/// their requests' versions, each with its `"source"`. What cannot be decoded is reported on
/// stderr as it is met, the rest is still decoded, and the exit status says the output is
/// partial.
fn decode_capture<R: std::io::Read>(
    options: &Options,
    name: &str,
    capture: &mut Capture<R>,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    let mut line = String::new();
    let mut bad_frames = 0u64;
    let summary = traffic::walk(name, capture, options.port, &mut |item| {
        let found = match item {
            Item::Note(note) => return Ok(traffic::report(out, name, &note)?),
            Item::Frame(found) => found,
            Item::Closed(_) => return Ok(()),
        };
        line.clear();
        let parsed = match found.what {
            What::ElectRequest => parse_request(&found.frame).map(|r| write_request(&mut line, &r)),
            What::ElectResponse { version } => {
                parse_response(&found.frame, version).map(|r| write_response(&mut line, &r))
            }
            What::Other {
                role,
                api_key,
                api_version,
                correlation_id,
            } => {
                if options.all {
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
                if options.all {
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
    o.push_str(&format!("{{\"kind\":\"{kind}\""));
    match api {
        Some((api_key, api_version)) => {
            push_field(o, "api_key", api_key);
            o.push_str(&format!(
                ",\"api_name\":\"{}\"",
                traffic::api_label(api_key)
            ));
            push_field(o, "api_version", api_version);
        }
        None => o.push_str(",\"api_key\":null,\"api_name\":null"),
    }
    push_field(o, "correlation_id", correlation_id);
    push_field(o, "bytes", size);
    o.push('}');
}

/// A request as one JSON object (no newline).
pub fn write_request(o: &mut String, r: &ElectLeadersRequest<'_>) {
    let header = r.header();
    o.push_str("{\"kind\":\"request\"");
    push_field(o, "api_key", header.api_key());
    push_field(o, "api_version", r.version());
    push_field(o, "correlation_id", r.correlation_id());
    o.push_str(",\"client_id\":");
    push_bytes(o, header.client_id());
    push_tagged(o, "header_tagged_fields", header.tagged_fields());
    if r.version() >= 1 {
        push_field(o, "election_type", r.election_type().0);
    }
    o.push_str(",\"topic_partitions\":");
    match r.topic_partitions() {
        None => o.push_str("null"),
        Some(topics) => {
            o.push('[');
            for (i, entry) in topics.iter().enumerate() {
                if i > 0 {
                    o.push(',');
                }
                o.push_str("{\"topic\":");
                push_bytes(o, Some(entry.topic()));
                o.push_str(",\"partitions\":[");
                for (j, p) in entry.partitions().iter().enumerate() {
                    if j > 0 {
                        o.push(',');
                    }
                    o.push_str(&p.to_string());
                }
                o.push(']');
                push_tagged(o, "tagged_fields", entry.tagged_fields());
                o.push('}');
            }
            o.push(']');
        }
    }
    push_field(o, "timeout_ms", r.timeout_ms());
    push_tagged(o, "tagged_fields", r.tagged_fields());
    o.push('}');
}

/// A response as one JSON object (no newline). `api_version` tells `encode` the version.
pub fn write_response(o: &mut String, r: &ElectLeadersResponse<'_>) {
    o.push_str("{\"kind\":\"response\"");
    push_field(o, "api_version", r.version());
    push_field(o, "correlation_id", r.correlation_id());
    push_tagged(o, "header_tagged_fields", r.header().tagged_fields());
    push_field(o, "throttle_time_ms", r.throttle_time_ms());
    if r.version() >= 1 {
        push_field(o, "error_code", r.error_code().0);
    }
    o.push_str(",\"replica_election_results\":[");
    for (i, result) in r.replica_election_results().iter().enumerate() {
        if i > 0 {
            o.push(',');
        }
        o.push_str("{\"topic\":");
        push_bytes(o, Some(result.topic()));
        o.push_str(",\"partition_result\":[");
        for (j, p) in result.partition_result().iter().enumerate() {
            if j > 0 {
                o.push(',');
            }
            o.push('{');
            o.push_str(&format!("\"partition_id\":{}", p.partition_id()));
            push_field(o, "error_code", p.error_code().0);
            o.push_str(",\"error_message\":");
            push_bytes(o, p.error_message());
            push_tagged(o, "tagged_fields", p.tagged_fields());
            o.push('}');
        }
        o.push(']');
        push_tagged(o, "tagged_fields", result.tagged_fields());
        o.push('}');
    }
    o.push(']');
    push_tagged(o, "tagged_fields", r.tagged_fields());
    o.push('}');
}

/// `,"key":value` for a number.
fn push_field(o: &mut String, key: &str, value: impl std::fmt::Display) {
    o.push_str(&format!(",\"{key}\":{value}"));
}

/// A byte string: a JSON string when it is UTF-8, `{"hex":"..."}` when not, `null` for null.
fn push_bytes(o: &mut String, bytes: Option<&[u8]>) {
    let Some(bytes) = bytes else {
        o.push_str("null");
        return;
    };
    match std::str::from_utf8(bytes).map(serde_json::to_string) {
        Ok(Ok(quoted)) => o.push_str(&quoted),
        _ => {
            o.push_str("{\"hex\":\"");
            o.push_str(&to_hex(bytes));
            o.push_str("\"}");
        }
    }
}

/// `,"key":[{"tag":N,"data":"<hex>"},…]`, only when there are tagged fields.
fn push_tagged(o: &mut String, key: &str, fields: TaggedFields<'_>) {
    if fields.is_empty() {
        return;
    }
    o.push_str(&format!(",\"{key}\":["));
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            o.push(',');
        }
        o.push_str(&format!(
            "{{\"tag\":{},\"data\":\"{}\"}}",
            field.tag(),
            to_hex(field.data())
        ));
    }
    o.push(']');
}

// ---------------------------------------------------------------------------------------
// encode

/// `encode`: JSON objects to frames. The objects may be one per line, spread over several
/// lines or back to back (`jq` without `-c`): they are read as a stream of JSON values,
/// and each error still names its line.
pub fn encode(options: &Options, out: &mut dyn Write) -> Result<(), Failure> {
    if !options.hex && std::io::stdout().is_terminal() {
        return Err(Failure::usage(
            "encode",
            "refusing to write binary frames to a terminal: use --hex for hex text, or \
             redirect standard output to a file or a pipe",
        ));
    }
    let source = Source::from_args_or_stdin(&options.files);
    let name = source.name();
    let mut values = JsonStream::new(source.open("encode", false)?);
    loop {
        let (value, lines) = match values.next() {
            Ok(None) => return Ok(()),
            Ok(Some(next)) => next,
            Err(e) => return Err(Failure::Input(format!("{name}: {e}"))),
        };
        let frame = encode_value(&value).map_err(|e| {
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
    chunk: Vec<u8>,
    /// The line of `text[start]` (from 1) and how many bytes precede it on that line.
    line: usize,
    column: usize,
}

const JSON_WINDOW: usize = 64 * 1024;

/// The first and last line of a value.
type Lines = (usize, usize);

impl<R: Read> JsonStream<R> {
    fn new(inner: R) -> Self {
        JsonStream {
            inner,
            text: String::new(),
            start: 0,
            pending: Vec::new(),
            invalid: false,
            eof: false,
            chunk: vec![0; JSON_WINDOW],
            line: 1,
            column: 0,
        }
    }

    /// The next value and its first and last lines; `None` at the end of the input. The
    /// error says where the text stops being JSON (line and column).
    fn next(&mut self) -> Result<Option<(Value, Lines)>, String> {
        loop {
            let text = &self.text[self.start..];
            // Whether more text can come: not past the end of the input, nor past bytes
            // that are not UTF-8.
            let can_grow = !self.eof && !self.invalid;
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
                        return Ok(Some((value, (first_line, last_line))));
                    }
                }
                Some(Err(e)) if e.is_eof() && can_grow => {}
                Some(Err(e)) if e.is_eof() && self.invalid => return Err(self.not_utf8()),
                Some(Err(e)) => {
                    let line = self.line + e.line() - 1;
                    let column = e.column() + if e.line() == 1 { self.column } else { 0 };
                    let text = e.to_string();
                    let suffix = format!(" at line {} column {}", e.line(), e.column());
                    let what = text.strip_suffix(&suffix).unwrap_or(&text);
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
        if self.chunk.len() < want {
            self.chunk.resize(want, 0);
        }
        let n = loop {
            match self.inner.read(&mut self.chunk[..want]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.to_string()),
            }
        };
        if n == 0 {
            self.eof = true;
            // A character cut by the end of the input.
            self.invalid = !self.pending.is_empty();
            return Ok(());
        }
        self.pending.extend_from_slice(&self.chunk[..n]);
        let ok = match std::str::from_utf8(&self.pending) {
            Ok(_) => self.pending.len(),
            Err(e) => {
                // A character cut by the end of this read is completed by the next one.
                self.invalid = e.error_len().is_some();
                e.valid_up_to()
            }
        };
        let valid = std::str::from_utf8(&self.pending[..ok]).expect("checked above");
        self.text.push_str(valid);
        self.pending.drain(..ok);
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
        Some(Value::String(kind)) if kind == "request" => encode_request(value),
        Some(Value::String(kind)) if kind == "response" => encode_response(value),
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

fn encode_request(value: &Value) -> Result<Vec<u8>, String> {
    let obj = Obj::new(value, String::new(), REQUEST_KEYS)?;
    let version = obj.version()?;
    if let Some(api_key) = obj.int::<i16>("api_key", "an int16")? {
        if api_key != API_KEY {
            return Err(format!(
                "api_key: expected 43 (ElectLeaders), got {api_key}"
            ));
        }
    }
    let defaults = ElectLeadersRequestData::default();
    let client_id = obj.bytes("client_id", true)?;
    let header_tags = obj.tagged("header_tagged_fields")?;
    let election_type = obj.int_or_name("election_type", "an int8", "PREFERRED, UNCLEAN", |n| {
        ElectionType::from_name(n).map(|e| e.0)
    })?;
    let topics = match obj.array("topic_partitions", true)? {
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
                topics.push(TopicJson {
                    topic: entry.bytes("topic", false)?.flatten().unwrap_or_default(),
                    partitions,
                    tags: entry.tagged("tagged_fields")?,
                });
            }
            Some(topics)
        }
    };
    let timeout_ms = obj.int::<i32>("timeout_ms", "an int32")?;
    let body_tags = obj.tagged("tagged_fields")?;

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

fn encode_response(value: &Value) -> Result<Vec<u8>, String> {
    let obj = Obj::new(value, String::new(), RESPONSE_KEYS)?;
    let version = obj.version()?;
    let header_tags = obj.tagged("header_tagged_fields")?;
    let mut results = Vec::new();
    if let Some(Some((items, path))) = obj.array("replica_election_results", false)? {
        for (i, item) in items.iter().enumerate() {
            let entry = Obj::new(item, format!("{path}[{i}]"), RESULT_KEYS)?;
            let mut partitions = Vec::new();
            if let Some(Some((items, path))) = entry.array("partition_result", false)? {
                for (j, item) in items.iter().enumerate() {
                    let p = Obj::new(item, format!("{path}[{j}]"), PARTITION_KEYS)?;
                    partitions.push(PartitionJson {
                        partition_id: p.int("partition_id", "an int32")?.unwrap_or(0),
                        error_code: p.error_code()?.unwrap_or(0),
                        error_message: p.bytes("error_message", true)?.flatten(),
                        tags: p.tagged("tagged_fields")?,
                    });
                }
            }
            results.push(ResultJson {
                topic: entry.bytes("topic", false)?.flatten().unwrap_or_default(),
                partitions,
                tags: entry.tagged("tagged_fields")?,
            });
        }
    }
    let body_tags = obj.tagged("tagged_fields")?;

    // Borrowed data for the writer, built level by level from the owned values.
    let header_tag_data = tag_data(&header_tags);
    let body_tag_data = tag_data(&body_tags);
    let partition_tag_data: Vec<Vec<Vec<TaggedFieldData<'_>>>> = results
        .iter()
        .map(|r| r.partitions.iter().map(|p| tag_data(&p.tags)).collect())
        .collect();
    let partition_data: Vec<Vec<PartitionResultData<'_>>> = results
        .iter()
        .zip(&partition_tag_data)
        .map(|(r, tags)| {
            r.partitions
                .iter()
                .zip(tags)
                .map(|(p, tags)| PartitionResultData {
                    partition_id: p.partition_id,
                    error_code: ErrorCode(p.error_code),
                    error_message: p.error_message.as_deref(),
                    tagged_fields: tags,
                })
                .collect()
        })
        .collect();
    let result_tag_data: Vec<Vec<TaggedFieldData<'_>>> =
        results.iter().map(|r| tag_data(&r.tags)).collect();
    let result_data: Vec<ReplicaElectionResultData<'_>> = results
        .iter()
        .zip(&partition_data)
        .zip(&result_tag_data)
        .map(|((r, partitions), tags)| ReplicaElectionResultData {
            topic: &r.topic,
            partition_result: partitions,
            tagged_fields: tags,
        })
        .collect();
    let data = ElectLeadersResponseData {
        correlation_id: obj.int("correlation_id", "an int32")?.unwrap_or(0),
        header_tagged_fields: &header_tag_data,
        throttle_time_ms: obj.int("throttle_time_ms", "an int32")?.unwrap_or(0),
        error_code: ErrorCode(obj.error_code()?.unwrap_or(0)),
        replica_election_results: &result_data,
        tagged_fields: &body_tag_data,
    };
    let len = data.encoded_len(version).map_err(refusal)?;
    let mut frame = vec![0u8; len];
    data.encode(version, &mut frame).map_err(refusal)?;
    Ok(frame)
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

#[cfg(test)]
mod tests {
    use super::{JsonStream, Lines, Value};
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
                Ok(Some(value)) => values.push(value),
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
        let (value, lines) = stream.next().unwrap().unwrap();
        assert_eq!(value["s"].as_str().unwrap().len(), 300 * 1024);
        assert_eq!(lines, (1, 1));
        assert_eq!(stream.next().unwrap().unwrap().1, (2, 2));
        assert_eq!(stream.next(), Ok(None));
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
}
