//! `summary`: what a capture, a recorded connection or a file of frames holds, counted:
//! connections, client ids, APIs, ElectLeaders elections by type, topic and outcome, the
//! partitions that failed, latency percentiles and everything unusual. Text, `--json`, or
//! one self-contained HTML page (`--html FILE`, [`super::summary_html`]).
//!
//! It reads the input as `decode` does (the same `input` and `traffic` paths, the same
//! notes on stderr) and counts exactly the frames `decode --all` would print with the same
//! filters ([`Selection`]); anomalies are counted whatever the filters.
//!
//! Memory: counts per distinct key (client id, API, election type, topic, error code,
//! failed partition and message), per open connection its requests waiting for an answer
//! (those the capture reader keeps, within its in-flight budget), one `i64` per paired ElectLeaders
//! response for the latency percentiles (exact, nearest rank: ElectLeaders is an admin
//! API, its responses are few, and a fixed-bucket histogram would blur the percentiles),
//! and with `--html` one point per topic of each response for the timeline, at most
//! [`TIMELINE_POINTS`](kafka_elect_leaders_capture::summary::TIMELINE_POINTS) (thinned past that).

use std::collections::BTreeMap;
use std::io::Write;

use kafka_elect_leaders::{parse_request, parse_response, ErrorCode, API_KEY};
use kafka_elect_leaders_capture::traffic::{bad_frame, Found, Role, What};
use kafka_elect_leaders_json::hex::to_hex;
use kafka_elect_leaders_json::print::{api_label, epoch_us, latency_us};
use serde_json::{json, Value};

use crate::fail::{frame_failure, malformed, Failure};
use crate::flags::SummaryArgs;
use crate::input::{Expect, Frame, Item, Items, Source, StreamFrame};
use crate::notes::Reporter;
use crate::selection::Selection;

use kafka_elect_leaders_capture::summary::{
    code_name, election_name, shown, FailedKey, Outcome, Slow, Tally,
};

/// `summary [FILE]`.
pub fn run(args: &SummaryArgs, out: &mut dyn Write) -> Result<(), Failure> {
    let mut filter = Selection::new(&args.filter).map_err(|e| Failure::usage("summary", e))?;
    // The page's file is made first: a path that cannot be written is said before a long
    // capture is read.
    let html = match &args.html {
        Some(path) => Some((
            path,
            std::fs::File::create(path).map_err(|e| {
                Failure::cannot_open(format!("summary: cannot create {}: {e}", path.display()))
            })?,
        )),
        None => None,
    };
    let source = Source::from_arg_or_stdin(args.file.as_deref());
    let items = if args.live.interface.is_some() {
        // Live: summarized when the capture ends (Ctrl-C, SIGTERM, --count, --duration).
        Items::live("summary", &args.live, &args.read)
    } else {
        let kind = args.kind.kind_of(&source);
        Items::open("summary", &source, kind, &args.read, Expect::Frames)?
    };
    let name = items.name.clone();
    if items.is_stream() && !filter.shows_conn(None) {
        return Err(crate::selection::not_a_capture("summary", &name));
    }
    let mut tally = Tally::new(&name, args.html.is_some());
    tally.capture = !items.is_stream();
    let mut notes = Reporter::default();
    let read = summarize(&mut filter, &name, &mut tally, &mut notes, items);
    // What was read is summarized even when the input could not be read to its end.
    let fatal = match read {
        Ok(()) => None,
        Err(Failure::Input(message)) => {
            tally.anomalies.error = Some(message.clone());
            Some(Failure::Input(message))
        }
        Err(other) => return Err(other),
    };
    tally.finish();
    if let Some((path, mut file)) = html {
        let page = super::summary_html::page(&tally);
        file.write_all(page.as_bytes())
            .and_then(|()| file.flush())
            .map_err(|e| {
                Failure::Input(format!("summary: cannot write {}: {e}", path.display()))
            })?;
    }
    if args.json {
        let text = serde_json::to_string_pretty(&tally.json()).unwrap_or_default();
        writeln!(out, "{text}")?;
    } else if args.html.is_none() {
        tally.text(out)?;
    }
    if let Some(fatal) = fatal {
        out.flush()?;
        return Err(fatal);
    }
    notes.finish(out, &name, tally.anomalies.partial)
}

/// Every item of an input, counted as `decode` walks it. A capture's (file or live)
/// malformed frames are counted and noted, the rest still read; a stream's malformed frame
/// ends it (its boundaries are lost): it is counted, and its error returned.
fn summarize(
    filter: &mut Selection,
    name: &str,
    tally: &mut Tally,
    notes: &mut Reporter,
    items: Items<'_>,
) -> Result<(), Failure> {
    let mut stderr = std::io::sink();
    let walked = items.walk(&mut |item| match item {
        Item::Note(note) => {
            tally.note(&note);
            Ok(notes.report(&mut stderr, name, &note)?)
        }
        Item::Closed(conn) => {
            filter.closed(conn.0);
            tally.closed(conn.0);
            Ok(())
        }
        Item::Cut(cut) => {
            tally.anomalies.malformed += 1;
            tally.anomalies.partial += 1;
            Err(Failure::Input(malformed(
                name, cut.index, cut.offset, &cut.error,
            )))
        }
        Item::Frame(Frame::Stream(frame)) => stream_frame(filter, name, tally, &frame),
        Item::Frame(Frame::Capture(found)) => {
            capture_frame(filter, name, tally, notes, &mut stderr, &found)
        }
    });
    let walked = walked?;
    if let Some(stats) = walked.stats {
        tally.packets = Some((stats.packets, stats.not_tcp + stats.unsupported_link));
    }
    Ok(())
}

/// A frame of a capture (file or live).
fn capture_frame(
    filter: &mut Selection,
    name: &str,
    tally: &mut Tally,
    notes: &mut Reporter,
    stderr: &mut std::io::Sink,
    found: &Found,
) -> Result<(), Failure> {
    let o = &found.origin;
    let conn = o.conn.0;
    if let Some(timeline) = &mut tally.timeline {
        timeline.saw(epoch_us(o.time));
    }
    // Unanswered requests, whatever the filters: those the reader waits an answer for
    // (not a Produce with acks=0, which Kafka never answers).
    // A request the library refuses is counted as malformed, not as a request nor as
    // unanswered (issue 44, item 6).
    let parsed_request = match found.what {
        What::ElectRequest => Some(parse_request(&found.frame)),
        _ => None,
    };
    tally.anomalies.not_kept += u64::from(found.not_kept);
    match found.what {
        What::ElectRequest if found.waits && matches!(parsed_request, Some(Ok(_))) => {
            tally.asked(conn, o.index, API_KEY)
        }
        What::Other {
            role: Role::Requests,
            api_key,
            ..
        } if found.waits => tally.asked(conn, o.index, api_key),
        What::Unpaired { .. } => tally.anomalies.unpaired += 1,
        _ => {}
    }
    if let Some(asked) = found.request {
        tally.answered(conn, asked.index);
    }
    if !filter.shows_conn(Some(conn)) {
        return Ok(());
    }
    match found.what {
        What::ElectRequest => match parsed_request.unwrap_or_else(|| parse_request(&found.frame)) {
            Ok(r) => {
                if filter.request(&r, found.waits.then_some((conn, o.index))) {
                    tally.counted(conn);
                    tally.elect_request(&r, Some(conn));
                }
            }
            Err(e) => {
                let note = bad_frame(o, &e);
                tally.note(&note);
                notes.report(stderr, name, &note)?;
            }
        },
        What::ElectResponse { version } => match parse_response(&found.frame, version) {
            Ok(r) => {
                let request = found.request.map(|asked| (conn, asked.index));
                if filter.response(&r, request) {
                    tally.counted(conn);
                    let at = epoch_us(o.time);
                    let latency = found.request.map(|a| latency_us(a.time, o.time));
                    tally.elect_response(&r, Some((at, conn)), latency);
                    if let (Some(asked), Some(latency)) = (found.request, latency) {
                        let slow = Slow {
                            latency_us: i64::try_from(latency).unwrap_or(i64::MAX),
                            conn,
                            request_frame: asked.index,
                            packet: o.last_packet,
                            at,
                            partitions: Vec::new(),
                            partitions_total: 0,
                        };
                        tally.round_trip(&r, slow);
                    }
                }
            }
            Err(e) => {
                let note = bad_frame(o, &e);
                tally.note(&note);
                notes.report(stderr, name, &note)?;
            }
        },
        What::Other {
            role,
            api_key,
            api_version,
            ..
        } => {
            if filter.shows_other(Some(api_key), true) {
                tally.counted(conn);
                match role {
                    Role::Requests => {
                        tally.api(api_key).requests += 1;
                        if let Some(client) = client_id_of(&found.frame, api_key, api_version) {
                            tally.client(client, Some(conn));
                        }
                    }
                    Role::Responses => tally.api(api_key).responses += 1,
                }
            }
        }
        What::Unpaired { .. } => {
            if filter.shows_other(None, true) {
                tally.counted(conn);
                tally.frames += 1;
            }
        }
    }
    Ok(())
}

/// A frame of a stream: requests of any API (a recorded connection), or ElectLeaders
/// responses of one version.
fn stream_frame(
    filter: &mut Selection,
    name: &str,
    tally: &mut Tally,
    frame: &StreamFrame,
) -> Result<(), Failure> {
    let failed = match frame.what {
        What::Other {
            api_key,
            api_version,
            ..
        } => {
            if filter.shows_other(Some(api_key), true) {
                tally.api(api_key).requests += 1;
                if let Some(client) = client_id_of(&frame.bytes, api_key, api_version) {
                    tally.client(client, None);
                }
            }
            return Ok(());
        }
        What::ElectRequest => match parse_request(&frame.bytes) {
            Ok(r) => {
                if filter.request(&r, None) {
                    tally.elect_request(&r, None);
                }
                return Ok(());
            }
            Err(e) => e,
        },
        What::ElectResponse { version } => match parse_response(&frame.bytes, version) {
            Ok(r) => {
                if filter.response(&r, None) {
                    tally.elect_response(&r, None, None);
                }
                return Ok(());
            }
            Err(e) => e,
        },
        What::Unpaired { .. } => return Ok(()),
    };
    tally.anomalies.malformed += 1;
    tally.anomalies.partial += 1;
    Err(Failure::Input(frame_failure(
        name,
        frame.index,
        frame.offset,
        frame.bytes.len(),
        &failed,
    )))
}

/// A request header's client id (`Some(None)`: null), read off the frame: after the size
/// prefix, API key, version and correlation id, an int16 length and that many bytes, in
/// every header version but 0 (ControlledShutdown v0 alone), flexible ones included.
/// `None` when it cannot be read (the frame ends first).
fn client_id_of(frame: &[u8], api_key: i16, api_version: i16) -> Option<Option<&[u8]>> {
    const CONTROLLED_SHUTDOWN: i16 = 7;
    if api_key == CONTROLLED_SHUTDOWN && api_version == 0 {
        return None;
    }
    let len = i16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]);
    // Kafka reads any negative length of a nullable string as null.
    if len < 0 {
        return Some(None);
    }
    let len = usize::try_from(len).ok()?;
    frame.get(14..14 + len).map(Some)
}

/// The partitions that failed: answered with an error other than ELECTION_NOT_NEEDED, which
/// is no failure (the preferred replica leads already; Kafka's `kafka-leader-election.sh`
/// reports it apart, "Valid replica already elected"), as the HTML page and its timeline
/// count them.
fn failed(t: &Tally) -> impl Iterator<Item = (&FailedKey, &u64)> {
    t.answered_with(Outcome::Failed)
}

/// The summary's two outputs, written from the capture crate's model.
trait Printed {
    /// The summary as text.
    fn text(&self, out: &mut dyn Write) -> std::io::Result<()>;
    /// The summary as one JSON object (docs/JSON.md).
    fn json(&self) -> Value;
}

impl Printed for Tally {
    /// The summary as text.
    fn text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let kind = if self.capture { "capture" } else { "frames" };
        writeln!(out, "summary of {} ({kind})", self.name)?;
        if let Some((packets, not_tcp)) = self.packets {
            writeln!(out, "packets: {packets} ({not_tcp} not TCP/IP)")?;
        }
        writeln!(out, "frames counted: {}", self.frames)?;
        if self.capture {
            writeln!(out, "connections: {}", self.connections)?;
        }
        writeln!(out, "client ids: {}", self.clients.len())?;
        for (client, c) in &self.clients {
            write!(
                out,
                "  {:<24} {} requests",
                shown(client.as_deref()),
                c.requests
            )?;
            if self.capture {
                write!(out, ", {} connections", c.connections)?;
            }
            writeln!(out)?;
        }
        writeln!(out, "APIs (requests / responses):")?;
        for (key, a) in &self.apis {
            let label = format!("{} ({key})", api_label(*key));
            writeln!(out, "  {label:<24} {} / {}", a.requests, a.responses)?;
        }
        writeln!(
            out,
            "ElectLeaders: {} requests, {} responses",
            self.elect_requests, self.elect_responses
        )?;
        let types: Vec<String> = self
            .by_type
            .iter()
            .map(|(t, n)| format!("{} {n}", election_name(*t)))
            .collect();
        writeln!(out, "  by election type: {}", list(&types))?;
        writeln!(out, "  by topic (requests, partitions asked):")?;
        if self.all_partitions > 0 {
            writeln!(out, "    (every partition)  {}", self.all_partitions)?;
        }
        for (topic, t) in &self.by_topic {
            writeln!(
                out,
                "    {}  {}, {}",
                shown(Some(topic)),
                t.requests,
                t.partitions
            )?;
        }
        let top: Vec<String> = self
            .top_level
            .iter()
            .map(|(c, n)| format!("{} {n}", code_name(*c)))
            .collect();
        writeln!(out, "  responses by top-level error code: {}", list(&top))?;
        let codes: Vec<String> = self
            .outcomes
            .iter()
            .map(|(c, n)| format!("{} {n}", code_name(*c)))
            .collect();
        writeln!(out, "  partitions by error code: {}", list(&codes))?;
        for (topic, codes) in &self.outcomes_by_topic {
            let codes: Vec<String> = codes
                .iter()
                .map(|(c, n)| format!("{} {n}", code_name(*c)))
                .collect();
            writeln!(out, "    {}  {}", shown(Some(topic)), list(&codes))?;
        }
        writeln!(
            out,
            "failed partitions: {} (not counted: {} ELECTION_NOT_NEEDED, the preferred replica \
             leading already)",
            failed(self).map(|(_, n)| n).sum::<u64>(),
            self.outcomes
                .get(&ErrorCode::ELECTION_NOT_NEEDED.0)
                .copied()
                .unwrap_or(0)
        )?;
        for ((topic, partition, code, message), n) in failed(self) {
            writeln!(
                out,
                "  {} partition {partition}  {} ({code})  x{n}  message {}",
                shown(Some(topic)),
                code_name(*code),
                shown(message.as_deref())
            )?;
        }
        match (
            self.percentile(50),
            self.percentile(90),
            self.percentile(99),
            self.latencies.last(),
        ) {
            (Some(p50), Some(p90), Some(p99), Some(max)) => writeln!(
                out,
                "latency (us, {} paired ElectLeaders responses): p50 {p50}, p90 {p90}, p99 \
                 {p99}, max {max}",
                self.latencies.len()
            )?,
            _ => writeln!(out, "latency: no paired ElectLeaders response")?,
        }
        if !self.slowest.is_empty() {
            writeln!(out, "slowest ElectLeaders round trips:")?;
            for slow in &self.slowest {
                let partitions: Vec<String> = slow
                    .partitions
                    .iter()
                    .map(|(topic, p, code)| {
                        format!("{}/{p} {}", shown(Some(topic)), code_name(*code))
                    })
                    .collect();
                let more = slow.partitions_total - slow.partitions.len() as u64;
                writeln!(
                    out,
                    "  {} us  connection {}, request frame {}, answer packet {}: {}{}",
                    slow.latency_us,
                    slow.conn,
                    slow.request_frame,
                    slow.packet,
                    if partitions.is_empty() {
                        "no partition".to_owned()
                    } else {
                        partitions.join(", ")
                    },
                    if more > 0 {
                        format!(" (+{more} more)")
                    } else {
                        String::new()
                    }
                )?;
            }
        }
        if self.latency_across_steps > 0 {
            writeln!(
                out,
                "  left out: {} paired responses timed before their request by more than a \
                 second (the capture's clock stepped back; a note names where)",
                self.latency_across_steps
            )?;
        }
        let a = &self.anomalies;
        writeln!(out, "anomalies:")?;
        let unanswered: Vec<String> = a
            .unanswered
            .iter()
            .map(|(k, n)| format!("{} {n}", api_label(*k)))
            .collect();
        writeln!(
            out,
            "  unanswered requests: {}{}",
            self.unanswered(),
            if unanswered.is_empty() {
                String::new()
            } else {
                format!(" ({})", unanswered.join(", "))
            }
        )?;
        if a.not_kept > 0 {
            writeln!(
                out,
                "  requests not kept for pairing (the in-flight budget was full): {}",
                a.not_kept
            )?;
        }
        writeln!(
            out,
            "  responses whose request was not seen: {}",
            a.unpaired
        )?;
        writeln!(out, "  malformed frames: {}", a.malformed)?;
        writeln!(out, "  gaps: {}", a.gaps)?;
        writeln!(out, "  other notes: {}", a.other_notes)?;
        writeln!(out, "  notes on stderr: {}", a.notes)?;
        if let Some(error) = &a.error {
            writeln!(out, "  reading stopped: {error}")?;
        }
        if a.partial > 0 || a.error.is_some() {
            writeln!(
                out,
                "the summary is partial: some traffic could not be read (see stderr)"
            )?;
        }
        Ok(())
    }

    /// The summary as one JSON value (docs/JSON.md, "summary --json").
    fn json(&self) -> Value {
        let codes = |map: &BTreeMap<i16, u64>, what: &str| -> Value {
            map.iter()
                .map(|(c, n)| json!({"error_code": c, "error_name": ErrorCode(*c).name(), what: n}))
                .collect()
        };
        let a = &self.anomalies;
        let latency = |v: Option<i64>| v.map_or(Value::Null, Value::from);
        json!({
            "input": {
                "name": self.name,
                "format": if self.capture { "capture" } else { "frames" },
            },
            "packets": self.packets.map_or(Value::Null, |(read, not_tcp)| json!({
                "read": read,
                "not_tcp_ip": not_tcp,
            })),
            "frames": self.frames,
            "connections": if self.capture { Value::from(self.connections) } else { Value::Null },
            "client_ids": self.clients.iter().map(|(client, c)| json!({
                "client_id": bytes(client.as_deref()),
                "requests": c.requests,
                "connections": if self.capture { Value::from(c.connections) } else { Value::Null },
            })).collect::<Value>(),
            "apis": self.apis.iter().map(|(key, c)| json!({
                "api_key": key,
                "api_name": kafka_elect_leaders::api_name(*key),
                "requests": c.requests,
                "responses": c.responses,
            })).collect::<Value>(),
            "elect_leaders": {
                "requests": self.elect_requests,
                "responses": self.elect_responses,
                "by_election_type": self.by_type.iter().map(|(t, n)| json!({
                    "election_type": t,
                    "election_name": kafka_elect_leaders::ElectionType(*t).name(),
                    "requests": n,
                })).collect::<Value>(),
                "all_partitions_requests": self.all_partitions,
                "by_topic": self.by_topic.iter().map(|(topic, t)| json!({
                    "topic": bytes(Some(topic)),
                    "requests": t.requests,
                    "partitions": t.partitions,
                })).collect::<Value>(),
                "top_level_errors": codes(&self.top_level, "responses"),
                "outcomes": codes(&self.outcomes, "partitions"),
                "outcomes_by_topic": self.outcomes_by_topic.iter().map(|(topic, c)| json!({
                    "topic": bytes(Some(topic)),
                    "outcomes": codes(c, "partitions"),
                })).collect::<Value>(),
                "failed_partitions": failed(self).map(|((topic, p, code, message), n)| json!({
                    "topic": bytes(Some(topic)),
                    "partition_id": p,
                    "error_code": code,
                    "error_name": ErrorCode(*code).name(),
                    "error_message": bytes(message.as_deref()),
                    "count": n,
                })).collect::<Value>(),
            },
            "latency_us": {
                "paired": self.latencies.len(),
                "p50": latency(self.percentile(50)),
                "p90": latency(self.percentile(90)),
                "p99": latency(self.percentile(99)),
                "max": latency(self.latencies.last().copied()),
                "across_clock_steps": self.latency_across_steps,
            },
            "slowest": self.slowest.iter().map(|slow| json!({
                "latency_us": slow.latency_us,
                "connection": slow.conn,
                "request_frame": slow.request_frame,
                "packet": slow.packet,
                "epoch_us": u64::try_from(slow.at).unwrap_or(u64::MAX),
                "partitions": slow.partitions.iter().map(|(topic, p, code)| json!({
                    "topic": bytes(Some(topic)),
                    "partition": p,
                    "error_code": code,
                    "error_name": ErrorCode(*code).name(),
                })).collect::<Value>(),
                "partitions_total": slow.partitions_total,
            })).collect::<Value>(),
            "anomalies": {
                "unanswered_requests": self.unanswered(),
                "unanswered_by_api": a.unanswered.iter().map(|(k, n)| json!({
                    "api_key": k,
                    "api_name": kafka_elect_leaders::api_name(*k),
                    "requests": n,
                })).collect::<Value>(),
                "unpaired_responses": a.unpaired,
                "not_kept_requests": a.not_kept,
                "malformed_frames": a.malformed,
                "gaps": a.gaps,
                "other_notes": a.other_notes,
                "notes": a.notes,
                "partial": a.partial > 0 || a.error.is_some(),
                "error": a.error,
            },
        })
    }
}

/// A byte string as docs/JSON.md writes it: text, `{"hex":...}` when not UTF-8, or null.
fn bytes(b: Option<&[u8]>) -> Value {
    match b {
        None => Value::Null,
        Some(b) => match std::str::from_utf8(b) {
            Ok(s) => Value::from(s),
            Err(_) => json!({ "hex": to_hex(b) }),
        },
    }
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::{client_id_of, Tally};

    /// A request header up to its client id: size, API key 3 (Metadata) v12, correlation id.
    fn header(client: &[u8]) -> Vec<u8> {
        let mut frame = vec![0, 0, 0, 0, 0, 3, 0, 12, 0, 0, 0, 9];
        frame.extend_from_slice(client);
        frame
    }

    #[test]
    fn client_ids_read_off_request_headers() {
        assert_eq!(
            client_id_of(&header(b"\x00\x03abc"), 3, 12),
            Some(Some(&b"abc"[..]))
        );
        assert_eq!(client_id_of(&header(b"\xff\xff"), 3, 12), Some(None));
        // Any negative length is null, as Kafka reads it.
        assert_eq!(client_id_of(&header(b"\xff\xfe"), 3, 12), Some(None));
        assert_eq!(client_id_of(&header(b"\x00\x05ab"), 3, 12), None);
        assert_eq!(client_id_of(&header(b"\x00"), 3, 12), None);
        // ControlledShutdown v0's header has no client id.
        assert_eq!(client_id_of(&header(b"\x00\x03abc"), 7, 0), None);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut t = Tally::new("t", false);
        assert_eq!(t.percentile(50), None);
        t.latencies = (1..=10).rev().collect();
        t.finish();
        assert_eq!(t.percentile(50), Some(5));
        assert_eq!(t.percentile(90), Some(9));
        assert_eq!(t.percentile(99), Some(10));
        t.latencies = vec![7];
        assert_eq!(t.percentile(1), Some(7));
    }
}
