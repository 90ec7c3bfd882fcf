//! The JSON output: one object per frame, in the field names and order of the contract in
//! docs/JSON.md, written by hand as the library's parsed views are walked (serde_json only
//! escapes strings), so nothing of a frame's size is held. `decode` and `scan --json`
//! print through here, and this is the one place that writes an object's `"source"`.

use std::fmt::{self, Write as _};
use std::io::Write;

use kafka_elect_leaders::{
    api_name, has_election_type, has_top_level_error_code, ElectLeadersRequest,
    ElectLeadersResponse, ErrorCode, TaggedFields, API_KEY,
};
use kafka_elect_leaders_capture::traffic::{Asked, Origin};
use kafka_elect_leaders_capture::Timestamp;

use crate::hex::to_hex;

/// A frame to print as one JSON object.
pub enum Message<'a> {
    /// An ElectLeaders request, parsed by the codec.
    Request(ElectLeadersRequest<'a>),
    /// An ElectLeaders response, parsed by the codec (its version given to the parser).
    Response(ElectLeadersResponse<'a>),
    /// A frame of another API (or a response whose request was not seen), for `--all`.
    Other(OtherFrame),
}

/// What is said of a frame of another API.
pub struct OtherFrame {
    /// `"request"` or `"response"`.
    pub kind: &'static str,
    /// The API key and version; `None` for a response whose request was not seen.
    pub api: Option<(i16, i16)>,
    /// The correlation id of the frame's header.
    pub correlation_id: i32,
    /// The frame's size, size prefix included.
    pub bytes: usize,
}

/// Where a frame was found: what its object's `"source"` member says.
pub enum Place<'a> {
    /// In a capture's connection: packets, time, connection, addresses, stream offset and
    /// frame number; `file` when several inputs are decoded at once.
    Capture {
        /// The frame's packets, time, connection, addresses, stream offset and number.
        origin: &'a Origin,
        /// A paired response's request: its time and the latency.
        request: Option<Asked>,
        /// The input's name, written first (`"file"`), when several are decoded at once.
        file: Option<&'a str>,
        /// A request the capture reader could not keep for pairing (its in-flight budget
        /// was full): `"not_kept":true`, its response, if any, is unpaired.
        not_kept: bool,
    },
    /// In a recorded connection read as a stream (or any file of frames, when several
    /// inputs are decoded at once): the frame's number and input offset.
    Stream {
        /// The frame's number in the input, from 1, counting the frames of every API.
        frame: usize,
        /// The byte of the input where the frame's size prefix starts.
        offset: u64,
        /// The input's name, written first (`"file"`), when several are decoded at once.
        file: Option<&'a str>,
    },
    /// In a raw file searched by `scan`: the frame's offset.
    Raw {
        /// The byte of the file where the frame's size prefix starts.
        offset: u64,
    },
}

impl Message<'_> {
    /// The whole object, `"source"` last when `place` is given (no newline).
    pub fn write<W: fmt::Write + ?Sized>(
        &self,
        o: &mut W,
        place: Option<&Place<'_>>,
    ) -> fmt::Result {
        match self {
            Message::Request(r) => request_fields(o, r)?,
            Message::Response(r) => response_fields(o, r)?,
            Message::Other(frame) => other_fields(o, frame)?,
        }
        if let Some(place) = place {
            source(o, place)?;
        }
        o.write_char('}')
    }

    /// The object as a string (no newline).
    pub fn text(&self, place: Option<&Place<'_>>) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = self.write(&mut text, place);
        text
    }

    /// The object and a newline, written straight to `out`: the object is never held whole.
    pub fn line(&self, out: &mut dyn Write, place: Option<&Place<'_>>) -> std::io::Result<()> {
        let mut text = IoText::new(out);
        let result = self
            .write(&mut text, place)
            .and_then(|()| text.write_char('\n'));
        text.finish(result)
    }
}

/// `,"source":{…}`: where the frame was found.
fn source<W: fmt::Write + ?Sized>(o: &mut W, place: &Place<'_>) -> fmt::Result {
    o.write_str(",\"source\":{")?;
    let file = match place {
        Place::Capture { file, .. } | Place::Stream { file, .. } => *file,
        Place::Raw { .. } => None,
    };
    if let Some(file) = file {
        o.write_str("\"file\":")?;
        push_bytes(o, Some(file.as_bytes()))?;
        o.write_char(',')?;
    }
    match place {
        Place::Capture {
            origin,
            request,
            not_kept,
            ..
        } => {
            if origin.first_packet == origin.last_packet {
                write!(o, "\"packet\":{}", origin.first_packet)?;
            } else {
                write!(
                    o,
                    "\"packets\":[{},{}]",
                    origin.first_packet, origin.last_packet
                )?;
            }
            write!(
                o,
                ",\"time\":\"{}\",\"connection\":{},\"src\":\"{}\",\"dst\":\"{}\",\
                 \"stream_offset\":{},\"frame\":{},\"epoch_us\":{}",
                origin.time,
                origin.conn.0,
                origin.from,
                origin.to,
                origin.offset,
                origin.index,
                epoch_us(origin.time)
            )?;
            if let Some(asked) = request {
                write!(
                    o,
                    ",\"request_time\":\"{}\",\"request_frame\":{},\"latency_us\":{}",
                    asked.time,
                    asked.index,
                    latency_us(asked.time, origin.time)
                )?;
            }
            if *not_kept {
                o.write_str(",\"not_kept\":true")?;
            }
            o.write_char('}')
        }
        Place::Stream { frame, offset, .. } => {
            write!(o, "\"frame\":{frame},\"offset\":{offset}}}")
        }
        Place::Raw { offset } => write!(o, "\"offset\":{offset}}}"),
    }
}

/// Microseconds since the Unix epoch: exact in the doubles of JSON readers (`jq`) for any
/// date before the year 2255, where nanoseconds would not be.
pub fn epoch_us(t: Timestamp) -> u128 {
    u128::from(t.secs) * 1_000_000 + u128::from(t.nanos / 1_000)
}

/// From `request` to `response`, in whole microseconds (towards zero); negative when the
/// capture timed the response first (packets reordered, or two capture interfaces).
pub fn latency_us(request: Timestamp, response: Timestamp) -> i128 {
    let ns = |t: Timestamp| i128::from(t.secs) * 1_000_000_000 + i128::from(t.nanos);
    (ns(response) - ns(request)) / 1_000
}

/// Kafka's name of an API key, or `"unknown"`.
pub fn api_label(api_key: i16) -> &'static str {
    api_name(api_key).unwrap_or("unknown")
}

/// `,"error_code":N,"error_name":"NAME"` (`null` for a code Kafka does not name).
fn push_error<W: fmt::Write + ?Sized>(o: &mut W, code: ErrorCode) -> fmt::Result {
    push_field(o, "error_code", code.0)?;
    match code.name() {
        Some(name) => write!(o, ",\"error_name\":\"{name}\""),
        None => o.write_str(",\"error_name\":null"),
    }
}

/// A frame of another API, without its closing brace.
fn other_fields<W: fmt::Write + ?Sized>(o: &mut W, frame: &OtherFrame) -> fmt::Result {
    write!(o, "{{\"kind\":\"{}\"", frame.kind)?;
    match frame.api {
        Some((api_key, api_version)) => {
            push_field(o, "api_key", api_key)?;
            write!(o, ",\"api_name\":\"{}\"", api_label(api_key))?;
            push_field(o, "api_version", api_version)?;
        }
        None => o.write_str(",\"api_key\":null,\"api_name\":null")?,
    }
    push_field(o, "correlation_id", frame.correlation_id)?;
    push_field(o, "bytes", frame.bytes)
}

/// A request's JSON object without its closing brace, written as the view is walked.
fn request_fields<W: fmt::Write + ?Sized>(o: &mut W, r: &ElectLeadersRequest<'_>) -> fmt::Result {
    let header = r.header();
    o.write_str("{\"kind\":\"request\"")?;
    push_field(o, "api_key", header.api_key())?;
    write!(o, ",\"api_name\":\"{}\"", api_label(header.api_key()))?;
    push_field(o, "api_version", r.version())?;
    push_field(o, "correlation_id", r.correlation_id())?;
    o.write_str(",\"client_id\":")?;
    push_bytes(o, header.client_id())?;
    push_tagged(o, "header_tagged_fields", header.tagged_fields())?;
    if has_election_type(r.version()) {
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
fn response_fields<W: fmt::Write + ?Sized>(o: &mut W, r: &ElectLeadersResponse<'_>) -> fmt::Result {
    // The wire has no API key in a response: its request's, which it was parsed for.
    o.write_str("{\"kind\":\"response\"")?;
    push_field(o, "api_key", API_KEY)?;
    write!(o, ",\"api_name\":\"{}\"", api_label(API_KEY))?;
    push_field(o, "api_version", r.version())?;
    push_field(o, "correlation_id", r.correlation_id())?;
    push_tagged(o, "header_tagged_fields", r.header().tagged_fields())?;
    push_field(o, "throttle_time_ms", r.throttle_time_ms())?;
    if has_top_level_error_code(r.version()) {
        push_error(o, r.error_code())?;
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
            push_error(o, p.error_code())?;
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
struct IoText<'a> {
    out: &'a mut dyn Write,
    error: Option<std::io::Error>,
}

impl<'a> IoText<'a> {
    fn new(out: &'a mut dyn Write) -> Self {
        IoText { out, error: None }
    }

    /// The I/O error behind a failed write, if there was one.
    fn finish(self, result: fmt::Result) -> std::io::Result<()> {
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
