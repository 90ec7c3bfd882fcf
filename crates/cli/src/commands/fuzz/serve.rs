//! `fuzz --serve`: a hostile broker for fuzzing clients, over plain blocking `std::net` and
//! one thread per connection (at most [`MAX_CONNECTIONS`] at once).
//!
//! It answers ApiVersions and Metadata with small hand-written frames (it advertises
//! ApiVersions 0-3, Metadata 4 only and ElectLeaders 0-2, names itself node 1 and the
//! controller), and each ElectLeaders request with a response built from the request (its
//! topics and partitions, at its version) and then changed by the library's
//! structure-aware mutator. The `n`th ElectLeaders response (counted over all connections)
//! uses seed `mix(S, n)`: one client sending the same requests gets the same responses.
//! Any other request is recorded and its connection closed. A connection that sends no
//! whole request for `--idle-timeout` (default [`IDLE_TIMEOUT`]) is closed: connections
//! that send nothing cannot hold every slot for the whole campaign. SIGINT or SIGTERM ends
//! it as `--count` and `--duration` do: every connection closed, the listener released,
//! the summary printed (a second signal ends it at once).

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kafka_elect_leaders::{
    mutate_response, parse_request, ArbitraryPartitionResult, ArbitraryReplicaElectionResult,
    ArbitraryResponse, EncodeResponse, ErrorCode, DEFAULT_MAX_FRAME_SIZE,
};
use kafka_elect_leaders_json::hex::{from_hex, to_hex};
use serde_json::json;

use crate::fail::Failure;
use crate::flags::FuzzArgs;

/// Connections served at once; one more is accepted, recorded and closed.
pub const MAX_CONNECTIONS: usize = 64;
/// How long a connection may go without sending a whole request (since it was accepted or
/// last answered) before it is closed, unless `--idle-timeout` says otherwise. Well above
/// the client drivers' hang bound (15 s): a client waiting for the rest of a frame that
/// promises more must be seen to hang, not be let go by the server closing on it.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// ApiVersions' API key.
const API_VERSIONS: i16 = 18;
/// Metadata's API key.
const METADATA: i16 = 3;
/// The newest ApiVersions version answered (and advertised).
const API_VERSIONS_MAX: i16 = 3;
/// The one Metadata version answered (and advertised): not flexible, with a controller.
const METADATA_VERSION: i16 = 4;
/// UNSUPPORTED_VERSION, for an ApiVersions request newer than [`API_VERSIONS_MAX`].
const UNSUPPORTED_VERSION: i16 = 35;
/// The node id the server gives itself (broker and controller).
const NODE_ID: i32 = 1;
/// One in this many ElectLeaders responses is served unmutated (the client's baseline).
const PLAIN_ONE_IN: u64 = 10;
/// The topic answered for a request naming no topics (null: all partitions).
const ALL_TOPIC: &[u8] = b"fuzz-all";

/// What is shared between the connections.
struct Shared {
    seed: u64,
    count: u64,
    replay: Option<Vec<u8>>,
    keep_correlation_id: bool,
    idle_timeout: Duration,
    /// ElectLeaders responses served (and the next one's number).
    served: AtomicU64,
    stop: AtomicBool,
    /// Set by SIGINT or SIGTERM (the first one).
    signalled: Arc<AtomicBool>,
    /// A handle on each open connection's socket, removed by its thread before it closes
    /// it: on a signal, a connection blocked writing to a client that does not read is
    /// shut down rather than waited for.
    open: Mutex<std::collections::HashMap<u64, TcpStream>>,
    active: AtomicUsize,
    record: Mutex<Option<BufWriter<File>>>,
    started: Instant,
    /// Requests answered by closing (unknown API or version), and framing errors.
    closed: AtomicU64,
    /// Connections closed for sending no whole request, or taking no answer, within
    /// `idle_timeout`.
    idle_closed: AtomicU64,
    malformed_served: AtomicU64,
}

impl Shared {
    /// Whether the server stops: its count reached, its record failed, or a signal.
    fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst) || self.signalled.load(Ordering::SeqCst)
    }

    fn record(&self, mut line: serde_json::Value) {
        line["ms"] = json!(self.started.elapsed().as_millis() as u64);
        // The wall clock too: a driver matches it against its client's own stamps.
        let unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        line["unix_ms"] = json!(unix);
        if let Ok(mut guard) = self.record.lock() {
            if let Some(w) = guard.as_mut() {
                // A record that cannot be written stops the server: findings must not be
                // lost silently.
                let ok = serde_json::to_writer(&mut *w, &line).is_ok()
                    && w.write_all(b"\n").is_ok()
                    && w.flush().is_ok();
                if !ok {
                    self.stop.store(true, Ordering::SeqCst);
                }
            }
        }
    }
}

/// SplitMix64 of the campaign seed and the response's number: the response's own seed.
pub fn response_seed(seed: u64, n: u64) -> u64 {
    let mut z = seed ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5e7e;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `fuzz --serve`.
pub fn run(args: &FuzzArgs, listen: SocketAddr, out: &mut dyn Write) -> Result<(), Failure> {
    let replay = match &args.replay {
        Some(hex) => {
            let frame =
                from_hex(hex).map_err(|e| Failure::usage("fuzz", format!("--replay: {e}")))?;
            if frame.is_empty() {
                return Err(Failure::usage("fuzz", "--replay: no bytes"));
            }
            Some(frame)
        }
        None => None,
    };
    let record = match &args.record {
        Some(path) => Some(BufWriter::new(File::create(path).map_err(|e| {
            Failure::usage("fuzz", format!("--record {}: {e}", path.display()))
        })?)),
        None => None,
    };
    // Before the listener: a signal from then on ends the server with its summary.
    let signalled = super::broker::on_signals("fuzz --serve")?;
    let listener = TcpListener::bind(listen)
        .map_err(|e| Failure::usage("fuzz", format!("--serve {listen}: {e}")))?;
    let local = listener.local_addr().map_err(Failure::Output)?;
    listener.set_nonblocking(true).map_err(Failure::Output)?;
    writeln!(out, "fuzz: serving on {local}").map_err(Failure::Output)?;
    out.flush().map_err(Failure::Output)?;
    let shared = Arc::new(Shared {
        seed: args.seed,
        count: args.count,
        replay,
        keep_correlation_id: args.keep_correlation_id,
        idle_timeout: args.idle_timeout.unwrap_or(IDLE_TIMEOUT),
        served: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        signalled: Arc::clone(&signalled),
        open: Mutex::new(std::collections::HashMap::new()),
        active: AtomicUsize::new(0),
        record: Mutex::new(record),
        started: Instant::now(),
        closed: AtomicU64::new(0),
        idle_closed: AtomicU64::new(0),
        malformed_served: AtomicU64::new(0),
    });
    let duration = Duration::from_secs(args.duration);
    let mut threads = Vec::new();
    let mut next_conn = 0u64;
    while !shared.stopping() && shared.started.elapsed() < duration {
        match listener.accept() {
            Ok((stream, peer)) => {
                let conn = next_conn;
                next_conn += 1;
                if shared.active.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
                    shared.record(json!({"conn": conn, "peer": peer.to_string(),
                        "action": "closed: too many connections"}));
                    let _ = stream.shutdown(Shutdown::Both);
                    continue;
                }
                shared.active.fetch_add(1, Ordering::SeqCst);
                let s = Arc::clone(&shared);
                if let (Ok(handle), Ok(mut open)) = (stream.try_clone(), shared.open.lock()) {
                    open.insert(conn, handle);
                }
                threads.push(std::thread::spawn(move || {
                    let _ = serve_connection(&s, stream, conn);
                    if let Ok(mut open) = s.open.lock() {
                        open.remove(&conn);
                    }
                    s.active.fetch_sub(1, Ordering::SeqCst);
                }));
                threads.retain(|t| !t.is_finished());
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(Failure::Input(format!("--serve {local}: accept: {e}"))),
        }
    }
    shared.stop.store(true, Ordering::SeqCst);
    // The port is free again as soon as the server says it stopped.
    drop(listener);
    let signalled = shared.signalled.load(Ordering::SeqCst);
    if signalled {
        if let Ok(open) = shared.open.lock() {
            for stream in open.values() {
                let _ = stream.shutdown(Shutdown::Both);
            }
        }
    }
    for t in threads {
        let _ = t.join();
    }
    let stopped_by_record = !signalled
        && shared.record.lock().map(|g| g.is_some()).unwrap_or(false)
        && shared.served.load(Ordering::SeqCst) < shared.count
        && shared.started.elapsed() < duration;
    writeln!(
        out,
        "fuzz: served {} ElectLeaders responses ({} malformed) on {} connections, {} requests \
         answered by closing, {} connections closed idle, {:.1}s{}",
        shared.served.load(Ordering::SeqCst).min(shared.count),
        shared.malformed_served.load(Ordering::SeqCst),
        next_conn,
        shared.closed.load(Ordering::SeqCst),
        shared.idle_closed.load(Ordering::SeqCst),
        shared.started.elapsed().as_secs_f64(),
        if signalled {
            " (stopped by a signal)"
        } else {
            ""
        }
    )
    .map_err(Failure::Output)?;
    if stopped_by_record {
        return Err(Failure::Input(
            "--record: the record could not be written".into(),
        ));
    }
    Ok(())
}

/// Reads one frame (size prefix included) into `buf`, waking every 100 ms to see whether
/// the server stops. `None`: the peer closed, or the server stops. An error of kind
/// `TimedOut`: no whole frame within the idle timeout (a byte now and then does not
/// extend it).
fn read_frame(s: &Shared, stream: &mut TcpStream) -> io::Result<Option<Vec<u8>>> {
    let deadline = Instant::now() + s.idle_timeout;
    let mut buf = Vec::new();
    let mut want = 4usize;
    let mut chunk = [0u8; 8192];
    loop {
        if buf.len() >= 4 && want == 4 {
            let size = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
            if size < 0 || size as usize > DEFAULT_MAX_FRAME_SIZE {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("size prefix {size}"),
                ));
            }
            want = 4 + size as usize;
        }
        if buf.len() >= want && want > 4 {
            return Ok(Some(buf));
        }
        if s.stopping() {
            return Ok(None);
        }
        if Instant::now() >= deadline {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "idle: no whole request within {} ms ({} bytes of one)",
                    s.idle_timeout.as_millis(),
                    buf.len()
                ),
            ));
        }
        // Never more than the frame still needs: the next request stays in the socket.
        let need = (want - buf.len()).min(chunk.len());
        match stream.read(&mut chunk[..need]) {
            Ok(0) if buf.is_empty() => return Ok(None),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e),
        }
    }
}

fn serve_connection(s: &Shared, mut stream: TcpStream, conn: u64) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_millis(100)))?;
    // A peer that sends requests and never reads the answers must not hold its slot either.
    stream.set_write_timeout(Some(s.idle_timeout))?;
    stream.set_nodelay(true)?;
    let local = stream.local_addr()?;
    loop {
        let frame = match read_frame(s, &mut stream) {
            Ok(Some(f)) => f,
            Ok(None) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                s.idle_closed.fetch_add(1, Ordering::SeqCst);
                s.record(json!({"conn": conn, "action": format!("closed: {e}")}));
                return Ok(());
            }
            Err(e) => {
                s.closed.fetch_add(1, Ordering::SeqCst);
                s.record(json!({"conn": conn, "action": format!("closed: {e}")}));
                return Ok(());
            }
        };
        let head = |at: usize| {
            frame
                .get(at..at + 2)
                .map(|b| i16::from_be_bytes([b[0], b[1]]))
        };
        let (Some(api), Some(version), Some(id)) = (
            head(4),
            head(6),
            frame
                .get(8..12)
                .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]])),
        ) else {
            s.closed.fetch_add(1, Ordering::SeqCst);
            s.record(
                json!({"conn": conn, "action": "closed: request header cut short",
                "request": to_hex(&frame)}),
            );
            return Ok(());
        };
        let answer = match api {
            API_VERSIONS => Some(api_versions(id, version)),
            METADATA if version == METADATA_VERSION => Some(metadata(id, &frame, local)),
            kafka_elect_leaders::API_KEY => {
                if s.stopping() {
                    return Ok(());
                }
                match elect_leaders(s, conn, &frame) {
                    Some(a) => Some(a),
                    None => return Ok(()),
                }
            }
            _ => None,
        };
        let Some(answer) = answer else {
            s.closed.fetch_add(1, Ordering::SeqCst);
            s.record(json!({"conn": conn, "api": api, "request_version": version,
                "correlation_id": id, "action": "closed: not answered (not advertised)"}));
            return Ok(());
        };
        if api != kafka_elect_leaders::API_KEY {
            s.record(json!({"conn": conn, "api": api, "request_version": version,
                "correlation_id": id, "action": "answered"}));
        }
        if let Err(e) = stream.write_all(&answer) {
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ) {
                s.idle_closed.fetch_add(1, Ordering::SeqCst);
                s.record(json!({"conn": conn, "action": format!(
                    "closed: idle: the answer not taken within {} ms",
                    s.idle_timeout.as_millis())}));
            }
            return Ok(());
        }
    }
}

/// The ElectLeaders response to `frame`, recorded; `None` when the request does not parse
/// (recorded, and the connection closed) or the count is reached.
fn elect_leaders(s: &Shared, conn: u64, frame: &[u8]) -> Option<Vec<u8>> {
    let request = match parse_request(frame) {
        Ok(r) => r,
        Err(e) => {
            s.closed.fetch_add(1, Ordering::SeqCst);
            s.record(json!({"conn": conn, "api": kafka_elect_leaders::API_KEY,
                "action": format!("closed: the request does not parse: {e}"),
                "request": to_hex(frame)}));
            return None;
        }
    };
    let n = s.served.fetch_add(1, Ordering::SeqCst);
    if n >= s.count {
        s.stop.store(true, Ordering::SeqCst);
        return None;
    }
    let version = request.version();
    let id = request.correlation_id();
    let seed = response_seed(s.seed, n);
    let (answer, mutation, malformed, response_version) = match &s.replay {
        Some(frame) => {
            let mut f = frame.clone();
            if !s.keep_correlation_id && f.len() >= 8 {
                f[4..8].copy_from_slice(&id.to_be_bytes());
            }
            (f, "replayed".to_string(), true, version)
        }
        None => {
            let base = base_response(&request);
            if seed.is_multiple_of(PLAIN_ONE_IN) {
                (base, "none".to_string(), false, version)
            } else {
                let mut out = vec![0u8; base.len() * 2 + 70_000];
                match mutate_response(&base, version, seed, &mut out) {
                    Ok(m) => {
                        out.truncate(m.len);
                        (out, m.mutation.to_string(), m.mutation.malformed, m.version)
                    }
                    Err(_) => (base, "none".to_string(), false, version),
                }
            }
        }
    };
    if malformed {
        s.malformed_served.fetch_add(1, Ordering::SeqCst);
    }
    s.record(json!({
        "n": n,
        "conn": conn,
        "api": kafka_elect_leaders::API_KEY,
        "correlation_id": id,
        "request_version": version,
        "seed": seed,
        // jq (and JavaScript) read numbers as doubles: a seed above 2^53 comes out rounded.
        "seed_str": seed.to_string(),
        "mutation": mutation,
        "malformed": malformed,
        "response_version": response_version,
        "request": to_hex(frame),
        "response": to_hex(&answer),
    }));
    if n + 1 >= s.count {
        s.stop.store(true, Ordering::SeqCst);
    }
    Some(answer)
}

/// The answer a broker that did every election asked would give: each partition asked for,
/// error NONE; for a request naming none (all partitions), one partition of [`ALL_TOPIC`].
fn base_response(request: &kafka_elect_leaders::ElectLeadersRequest<'_>) -> Vec<u8> {
    let results = match request.topic_partitions() {
        Some(topics) => topics
            .iter()
            .map(|t| ArbitraryReplicaElectionResult {
                topic: t.topic(),
                partition_result: t
                    .partitions()
                    .iter()
                    .map(|p| ArbitraryPartitionResult {
                        partition_id: p,
                        ..Default::default()
                    })
                    .collect(),
                tagged_fields: Vec::new(),
            })
            .collect(),
        None => vec![ArbitraryReplicaElectionResult {
            topic: ALL_TOPIC,
            partition_result: vec![ArbitraryPartitionResult::default()],
            tagged_fields: Vec::new(),
        }],
    };
    let response = ArbitraryResponse {
        version: request.version(),
        correlation_id: request.correlation_id(),
        header_tagged_fields: Vec::new(),
        throttle_time_ms: 0,
        error_code: ErrorCode::NONE,
        replica_election_results: results,
        tagged_fields: Vec::new(),
    };
    let mut buf = vec![0u8; response.encoded_len(response.version).unwrap_or(0)];
    match response.encode(response.version, &mut buf) {
        Ok(len) => {
            buf.truncate(len);
            buf
        }
        // What a parsed request names always fits in a response; should it not, the
        // client gets an empty result list rather than nothing.
        Err(_) => {
            let empty = ArbitraryResponse {
                replica_election_results: Vec::new(),
                ..response
            };
            let mut buf = vec![0u8; empty.encoded_len(empty.version).unwrap_or(64)];
            let len = empty.encode(empty.version, &mut buf).unwrap_or(0);
            buf.truncate(len);
            buf
        }
    }
}

/// A frame: size prefix, then `body`.
fn framed(body: Vec<u8>) -> Vec<u8> {
    let mut f = Vec::with_capacity(body.len() + 4);
    f.extend_from_slice(&(body.len() as i32).to_be_bytes());
    f.extend_from_slice(&body);
    f
}

fn string(buf: &mut Vec<u8>, s: &[u8]) {
    buf.extend_from_slice(&(s.len() as i16).to_be_bytes());
    buf.extend_from_slice(s);
}

/// The APIs advertised: (key, min, max).
const ADVERTISED: [(i16, i16, i16); 3] = [
    (API_VERSIONS, 0, API_VERSIONS_MAX),
    (METADATA, METADATA_VERSION, METADATA_VERSION),
    (
        kafka_elect_leaders::API_KEY,
        kafka_elect_leaders::MIN_VERSION,
        kafka_elect_leaders::MAX_VERSION,
    ),
];

/// ApiVersionsResponse (header v0 at every version). A version newer than
/// [`API_VERSIONS_MAX`] gets UNSUPPORTED_VERSION in the v0 layout, as Kafka answers, and
/// the client asks again at a version listed.
fn api_versions(id: i32, version: i16) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&id.to_be_bytes());
    let flexible = version == API_VERSIONS_MAX;
    if !(0..=API_VERSIONS_MAX).contains(&version) {
        b.extend_from_slice(&UNSUPPORTED_VERSION.to_be_bytes());
    } else {
        b.extend_from_slice(&0i16.to_be_bytes());
    }
    if flexible {
        b.push(ADVERTISED.len() as u8 + 1); // compact array count, one byte
    } else {
        b.extend_from_slice(&(ADVERTISED.len() as i32).to_be_bytes());
    }
    for (key, min, max) in ADVERTISED {
        b.extend_from_slice(&key.to_be_bytes());
        b.extend_from_slice(&min.to_be_bytes());
        b.extend_from_slice(&max.to_be_bytes());
        if flexible {
            b.push(0); // no tagged fields
        }
    }
    if (1..=API_VERSIONS_MAX).contains(&version) {
        b.extend_from_slice(&0i32.to_be_bytes()); // throttle time
    }
    if flexible {
        b.push(0);
    }
    framed(b)
}

/// MetadataResponse v4: this server as the only broker and the controller, and each topic
/// asked for with one partition it leads.
fn metadata(id: i32, frame: &[u8], local: SocketAddr) -> Vec<u8> {
    let topics = metadata_topics(frame);
    let mut b = Vec::new();
    b.extend_from_slice(&id.to_be_bytes());
    b.extend_from_slice(&0i32.to_be_bytes()); // throttle time
    b.extend_from_slice(&1i32.to_be_bytes()); // brokers
    b.extend_from_slice(&NODE_ID.to_be_bytes());
    string(&mut b, local.ip().to_string().as_bytes());
    b.extend_from_slice(&i32::from(local.port()).to_be_bytes());
    b.extend_from_slice(&(-1i16).to_be_bytes()); // rack: null
    string(&mut b, b"elect-leaders-fuzz"); // cluster id
    b.extend_from_slice(&NODE_ID.to_be_bytes()); // controller id
    b.extend_from_slice(&(topics.len() as i32).to_be_bytes());
    for t in &topics {
        b.extend_from_slice(&0i16.to_be_bytes());
        string(&mut b, t);
        b.push(0); // not internal
        b.extend_from_slice(&1i32.to_be_bytes()); // one partition
        b.extend_from_slice(&0i16.to_be_bytes());
        b.extend_from_slice(&0i32.to_be_bytes()); // partition 0
        b.extend_from_slice(&NODE_ID.to_be_bytes()); // leader
        for _ in 0..2 {
            // replicas, then ISR: this node
            b.extend_from_slice(&1i32.to_be_bytes());
            b.extend_from_slice(&NODE_ID.to_be_bytes());
        }
    }
    framed(b)
}

/// The topic names of a MetadataRequest v4 (after the header v1's client id); none when
/// null (all topics: this server has none) or cut short.
fn metadata_topics(frame: &[u8]) -> Vec<Vec<u8>> {
    let i16_at = |at: usize| {
        frame
            .get(at..at + 2)
            .map(|b| i16::from_be_bytes([b[0], b[1]]))
    };
    let Some(client_len) = i16_at(12) else {
        return Vec::new();
    };
    let mut at = 14 + client_len.max(0) as usize;
    let Some(count) = frame
        .get(at..at + 4)
        .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    else {
        return Vec::new();
    };
    at += 4;
    let mut topics = Vec::new();
    // At most as many names as the frame has room for (two bytes each): no allocation
    // sized by the count read.
    for _ in 0..count.max(0) {
        let Some(len) = i16_at(at) else { break };
        let Some(name) = frame.get(at + 2..at + 2 + len.max(0) as usize) else {
            break;
        };
        topics.push(name.to_vec());
        at += 2 + len.max(0) as usize;
    }
    topics
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_versions_lists_what_is_answered() {
        // v3: correlation id, error 0, compact count 4 (3 entries), ...
        let f = api_versions(7, API_VERSIONS_MAX);
        assert_eq!(&f[4..8], &7i32.to_be_bytes());
        assert_eq!(&f[8..10], &[0, 0]);
        assert_eq!(f[10], 4);
        let too_new = api_versions(7, API_VERSIONS_MAX + 1);
        assert_eq!(&too_new[8..10], &UNSUPPORTED_VERSION.to_be_bytes());
        assert_eq!(&too_new[10..14], &3i32.to_be_bytes());
    }

    #[test]
    fn metadata_topics_reads_names_and_stops_at_the_end() {
        let mut f = vec![0u8; 12];
        string(&mut f, b"cid");
        f.extend_from_slice(&5i32.to_be_bytes()); // five promised, two present
        string(&mut f, b"a");
        string(&mut f, b"bc");
        assert_eq!(metadata_topics(&f), vec![b"a".to_vec(), b"bc".to_vec()]);
    }
}
