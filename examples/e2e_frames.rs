//! The frame checker of the end-to-end tests (`tests/e2e/run.sh`): reads the byte streams a
//! passthrough tap recorded between real Kafka clients and a real Kafka 4.4 cluster, and
//! decodes them with this crate only.
//!
//! ```sh
//! cargo run -q --example e2e_frames -- target/e2e/run/tap
//! ```
//!
//! The directory holds one pair of files per TCP connection: `NAME.c2s` (client to server)
//! and `NAME.s2c` (server to client). For each connection:
//! - the client's stream is split into frames (`Frames`), each request is peeked
//!   (`peek_request`: API key, version, correlation id), whatever its API;
//! - the server's stream is split the same way and each response is paired, by
//!   `peek_response(frame).correlation_id`, with its request on that connection;
//! - ElectLeaders requests are parsed with `parse_request`, their responses with
//!   `parse_response(frame, request_version)`.
//!
//! A frame that does not split, a response with no request, an ElectLeaders frame that does
//! not parse: a line on stderr naming the connection, the direction and the byte offset in
//! that direction's stream, and exit status 1. Otherwise one JSON line per ElectLeaders
//! request and response on stdout, then a summary line:
//! `{"kind":"summary","connections":N,"frames":{"<api_key>":{"requests":N,"responses":N}},...}`.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use kafka_elect_leaders::{
    parse_request, parse_response, peek_request, peek_response, ElectLeadersRequest,
    ElectLeadersResponse, Error, Frames, API_KEY,
};
use serde_json::{json, Value};

/// Bytes that may not be UTF-8: a string when they are, `{"hex": ...}` otherwise.
fn text(bytes: &[u8]) -> Value {
    match std::str::from_utf8(bytes) {
        Ok(s) => Value::String(s.to_owned()),
        Err(_) => json!({ "hex": bytes.iter().map(|b| format!("{b:02x}")).collect::<String>() }),
    }
}

fn request_json(conn: &str, offset: usize, r: &ElectLeadersRequest<'_>) -> Value {
    let topic_partitions = r.topic_partitions().map(|list| {
        list.iter()
            .map(|tp| {
                json!({
                    "topic": text(tp.topic()),
                    "partitions": tp.partitions().iter().collect::<Vec<i32>>(),
                })
            })
            .collect::<Vec<_>>()
    });
    json!({
        "kind": "request",
        "conn": conn,
        "offset": offset,
        "version": r.version(),
        "correlation_id": r.correlation_id(),
        "client_id": r.header().client_id().map(text),
        "election_type": r.election_type().0,
        "timeout_ms": r.timeout_ms(),
        "topic_partitions": topic_partitions,
    })
}

fn response_json(
    conn: &str,
    offset: usize,
    client_id: &Value,
    r: &ElectLeadersResponse<'_>,
) -> Value {
    let results = r
        .replica_election_results()
        .iter()
        .map(|res| {
            let partitions = res
                .partition_result()
                .iter()
                .map(|p| {
                    json!({
                        "partition_id": p.partition_id(),
                        "error_code": p.error_code().0,
                        "error_message": p.error_message().map(text),
                    })
                })
                .collect::<Vec<_>>();
            json!({ "topic": text(res.topic()), "partition_result": partitions })
        })
        .collect::<Vec<_>>();
    let mut v = json!({
        "kind": "response",
        "conn": conn,
        "offset": offset,
        "version": r.version(),
        "correlation_id": r.correlation_id(),
        "client_id": client_id,
        "throttle_time_ms": r.throttle_time_ms(),
        "results": results,
    });
    if r.version() >= 1 {
        v["error_code"] = json!(r.error_code().0);
    }
    v
}

#[derive(Default)]
struct Counts {
    requests: u64,
    responses: u64,
}

struct Checker {
    errors: Vec<String>,
    frames: BTreeMap<i16, Counts>,
    connections: usize,
    unanswered: BTreeMap<i16, u64>,
    lines: Vec<Value>,
}

/// What a request left for its response: API key, version, and for ElectLeaders the
/// client id (to label the response line).
struct Pending {
    api_key: i16,
    version: i16,
    client_id: Value,
}

impl Checker {
    fn fail(&mut self, conn: &str, dir: &str, offset: usize, what: String) {
        self.errors
            .push(format!("{conn} {dir} offset {offset}: {what}"));
    }

    fn frame_error(&mut self, conn: &str, dir: &str, frame_start: usize, e: &Error) {
        self.fail(
            conn,
            dir,
            frame_start + e.offset,
            format!("{e} (frame at offset {frame_start})"),
        );
    }

    /// Splits `stream` into whole frames; anything left over is an error.
    fn split<'a>(&mut self, conn: &str, dir: &str, stream: &'a [u8]) -> Vec<(usize, &'a [u8])> {
        let mut frames = Frames::new(stream);
        let mut out = Vec::new();
        let mut offset = 0;
        for item in frames.by_ref() {
            match item {
                Ok(frame) => {
                    out.push((offset, frame));
                    offset += frame.len();
                }
                Err(e) => {
                    self.fail(conn, dir, e.offset, format!("frame does not split: {e}"));
                    return out;
                }
            }
        }
        if !frames.remainder().is_empty() {
            let needed = frames.needed().unwrap_or(0);
            self.fail(
                conn,
                dir,
                frames.offset(),
                format!(
                    "stream ends inside a frame ({} byte(s) there, {needed} more needed)",
                    frames.remainder().len()
                ),
            );
        }
        out
    }

    fn connection(&mut self, conn: &str, c2s: &[u8], s2c: &[u8]) {
        self.connections += 1;
        let mut pending: HashMap<i32, Pending> = HashMap::new();
        for (offset, frame) in self.split(conn, "c2s", c2s) {
            let peek = match peek_request(frame) {
                Ok(p) => p,
                Err(e) => {
                    self.frame_error(conn, "c2s", offset, &e);
                    continue;
                }
            };
            self.frames.entry(peek.api_key).or_default().requests += 1;
            let mut client_id = Value::Null;
            if peek.api_key == API_KEY {
                match parse_request(frame) {
                    Ok(r) => {
                        let line = request_json(conn, offset, &r);
                        client_id = line["client_id"].clone();
                        self.lines.push(line);
                    }
                    Err(e) => {
                        self.frame_error(conn, "c2s", offset, &e);
                        continue;
                    }
                }
            }
            let previous = pending.insert(
                peek.correlation_id,
                Pending {
                    api_key: peek.api_key,
                    version: peek.api_version,
                    client_id,
                },
            );
            if previous.is_some() {
                self.fail(
                    conn,
                    "c2s",
                    offset,
                    format!(
                        "correlation id {} reused while a request with it is pending",
                        peek.correlation_id
                    ),
                );
            }
        }
        for (offset, frame) in self.split(conn, "s2c", s2c) {
            let peek = match peek_response(frame) {
                Ok(p) => p,
                Err(e) => {
                    self.frame_error(conn, "s2c", offset, &e);
                    continue;
                }
            };
            let Some(request) = pending.remove(&peek.correlation_id) else {
                self.fail(
                    conn,
                    "s2c",
                    offset,
                    format!(
                        "response with correlation id {} pairs with no request",
                        peek.correlation_id
                    ),
                );
                continue;
            };
            self.frames.entry(request.api_key).or_default().responses += 1;
            if request.api_key == API_KEY {
                match parse_response(frame, request.version) {
                    Ok(r) => {
                        let line = response_json(conn, offset, &request.client_id, &r);
                        self.lines.push(line);
                    }
                    Err(e) => self.frame_error(conn, "s2c", offset, &e),
                }
            }
        }
        for p in pending.values() {
            *self.unanswered.entry(p.api_key).or_default() += 1;
        }
    }
}

fn connections(dir: &Path) -> std::io::Result<Vec<(String, PathBuf)>> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "c2s") {
            if let Some(stem) = path.file_stem().and_then(|s| s.to_str()) {
                names.push((stem.to_owned(), path.with_extension("")));
            }
        }
    }
    names.sort();
    Ok(names)
}

fn main() -> ExitCode {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: e2e_frames DIR (a tap's recordings: NAME.c2s and NAME.s2c)");
        return ExitCode::from(2);
    };
    let conns = match connections(&dir) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("e2e_frames: {}: {e}", dir.display());
            return ExitCode::from(2);
        }
    };
    let mut checker = Checker {
        errors: Vec::new(),
        frames: BTreeMap::new(),
        connections: 0,
        unanswered: BTreeMap::new(),
        lines: Vec::new(),
    };
    for (name, base) in &conns {
        let read = |ext: &str| fs::read(base.with_extension(ext));
        match (read("c2s"), read("s2c")) {
            (Ok(c2s), Ok(s2c)) => checker.connection(name, &c2s, &s2c),
            (Err(e), _) | (_, Err(e)) => checker.errors.push(format!("{name}: cannot read: {e}")),
        }
    }
    for line in &checker.lines {
        println!("{line}");
    }
    let frames: serde_json::Map<String, Value> = checker
        .frames
        .iter()
        .map(|(k, c)| {
            (
                k.to_string(),
                json!({ "requests": c.requests, "responses": c.responses }),
            )
        })
        .collect();
    let unanswered: serde_json::Map<String, Value> = checker
        .unanswered
        .iter()
        .map(|(k, n)| (k.to_string(), json!(n)))
        .collect();
    println!(
        "{}",
        json!({
            "kind": "summary",
            "connections": checker.connections,
            "frames": frames,
            "unanswered": unanswered,
            "errors": checker.errors.len(),
        })
    );
    if checker.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        for e in &checker.errors {
            eprintln!("e2e_frames: {e}");
        }
        ExitCode::FAILURE
    }
}
