//! `elect-leaders proxy`, the binary, on loopback: the faults and orderings a real broker
//! cannot be made to produce on demand, against a **fake upstream** (a few lines in this
//! file that accept connections and answer frames as each test scripts it; it is not Kafka
//! and knows nothing of Kafka but the size prefix and the correlation id). The real cluster
//! and real clients are in `tests/e2e/` (`tests/e2e/run.sh`).
//!
//! Every proxy is started on a free port (`--listen 127.0.0.1:0`, its port read from the
//! line it prints) and killed by its pid when the test ends, whatever the outcome.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use kafka_elect_leaders::{
    parse_request, parse_response, ElectLeadersRequestData, ElectLeadersResponseData, ElectionType,
    EncodeRequestExt, EncodeResponseExt, ErrorCode, PartitionResultData, ReplicaElectionResultData,
    TopicPartitionsData,
};
use serde_json::Value;

const TIMEOUT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------------------
// Frames, read and written by hand: only the size prefix and the correlation id.

fn read_frame(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut size = [0u8; 4];
    stream.read_exact(&mut size)?;
    let len = i32::from_be_bytes(size);
    let mut frame = vec![0u8; 4 + len.max(0) as usize];
    frame[..4].copy_from_slice(&size);
    stream.read_exact(&mut frame[4..])?;
    Ok(frame)
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = (body.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

/// A request of any API: header v1 (client id "t"), then `body`.
fn request(api_key: i16, version: i16, correlation_id: i32, body: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&api_key.to_be_bytes());
    b.extend_from_slice(&version.to_be_bytes());
    b.extend_from_slice(&correlation_id.to_be_bytes());
    b.extend_from_slice(&[0, 1, b't']);
    b.extend_from_slice(body);
    frame(&b)
}

/// A response of any API: the correlation id, then `body`.
fn response(correlation_id: i32, body: &[u8]) -> Vec<u8> {
    let mut b = correlation_id.to_be_bytes().to_vec();
    b.extend_from_slice(body);
    frame(&b)
}

fn request_correlation_id(frame: &[u8]) -> i32 {
    i32::from_be_bytes(frame[8..12].try_into().unwrap())
}

fn response_correlation_id(frame: &[u8]) -> i32 {
    i32::from_be_bytes(frame[4..8].try_into().unwrap())
}

fn elect_leaders(
    version: i16,
    correlation_id: i32,
    client_id: &[u8],
    election_type: ElectionType,
    topics: Option<&[TopicPartitionsData<'_>]>,
) -> Vec<u8> {
    ElectLeadersRequestData {
        correlation_id,
        client_id: Some(client_id),
        election_type,
        topic_partitions: topics,
        timeout_ms: 30_000,
        ..Default::default()
    }
    .encode_to_vec(version)
    .unwrap()
}

/// Every (topic, partition, error code, message) of an ElectLeaders response, and its
/// top-level error code.
type Results = Vec<(String, i32, i16, Option<String>)>;

fn results(frame: &[u8], version: i16) -> (Results, i16) {
    let r = parse_response(frame, version).expect("an ElectLeaders response the crate reads");
    let mut out = Vec::new();
    for t in r.replica_election_results() {
        for p in t.partition_result() {
            out.push((
                t.topic_str().unwrap().to_owned(),
                p.partition_id(),
                p.error_code().0,
                p.error_message_str().unwrap().map(str::to_owned),
            ));
        }
    }
    (out, r.error_code().0)
}

// ---------------------------------------------------------------------------------------
// The fake upstream

/// A fake broker: accepts connections and hands each, in a thread of its own, to the
/// test's script, with the connection's number.
struct FakeUpstream {
    addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
}

impl FakeUpstream {
    fn start(script: impl Fn(usize, TcpStream) + Send + Sync + 'static) -> FakeUpstream {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        let script = Arc::new(script);
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let n = count.fetch_add(1, Ordering::SeqCst);
                let script = script.clone();
                thread::spawn(move || script(n, stream));
            }
        });
        FakeUpstream { addr, accepted }
    }

    /// A fake that answers every request at once with `body` under its correlation id,
    /// and reports each request it got.
    fn answering(body: &'static [u8]) -> (FakeUpstream, mpsc::Receiver<Vec<u8>>) {
        let (tx, rx) = mpsc::channel();
        let tx = std::sync::Mutex::new(tx);
        let fake = FakeUpstream::start(move |_, mut s| {
            while let Ok(f) = read_frame(&mut s) {
                let _ = tx.lock().unwrap().send(f.clone());
                if s.write_all(&response(request_correlation_id(&f), body))
                    .is_err()
                {
                    return;
                }
            }
        });
        (fake, rx)
    }
}

impl FakeUpstream {
    /// A fake whose SaslAuthenticate (36) succeeds when the auth bytes hold "right";
    /// every other request is answered "ok".
    fn sasl() -> FakeUpstream {
        FakeUpstream::start(|_, mut s| {
            while let Ok(f) = read_frame(&mut s) {
                let api_key = i16::from_be_bytes([f[4], f[5]]);
                let ok = f.windows(5).any(|w| w == b"right");
                let mut body = Vec::new();
                if api_key == 36 {
                    body.extend(if ok { 0i16 } else { 58i16 }.to_be_bytes());
                    body.extend((-1i16).to_be_bytes());
                    body.extend(0i32.to_be_bytes());
                } else {
                    body.extend(b"ok");
                }
                if s.write_all(&response(request_correlation_id(&f), &body))
                    .is_err()
                {
                    return;
                }
            }
        })
    }
}

/// SaslHandshake v1 for `mechanism`.
fn handshake(id: i32, mechanism: &str) -> Vec<u8> {
    let mut body = (mechanism.len() as i16).to_be_bytes().to_vec();
    body.extend(mechanism.as_bytes());
    request(17, 1, id, &body)
}

/// SaslAuthenticate v1 with these auth bytes.
fn authenticate(id: i32, bytes: &[u8]) -> Vec<u8> {
    let mut body = (bytes.len() as i32).to_be_bytes().to_vec();
    body.extend(bytes);
    request(36, 1, id, &body)
}

/// A connection that has authenticated with SASL PLAIN as `user` (the fake accepts it).
fn plain_login(proxy: &Proxy, user: &str) -> TcpStream {
    let mut c = proxy.connect();
    c.write_all(&handshake(1, "PLAIN")).unwrap();
    read_frame(&mut c).unwrap();
    c.write_all(&authenticate(2, format!("\0{user}\0pw-right").as_bytes()))
        .unwrap();
    read_frame(&mut c).unwrap();
    c
}

/// An ElectLeaders v2 request on `c`, and its answer: the fake's "ok" as no results and
/// error 0 (forwarded), else the guard's results.
fn elect_on(
    c: &mut TcpStream,
    id: i32,
    election_type: ElectionType,
    topics: &[TopicPartitionsData<'_>],
) -> (Results, i16) {
    c.write_all(&elect_leaders(2, id, b"t", election_type, Some(topics)))
        .unwrap();
    let answer = read_frame(c).unwrap();
    if answer == response(id, b"ok") {
        (Vec::new(), 0)
    } else {
        results(&answer, 2)
    }
}

// ---------------------------------------------------------------------------------------
// The proxy under test

static NEXT: AtomicUsize = AtomicUsize::new(0);

struct Proxy {
    child: Child,
    addr: SocketAddr,
    dir: PathBuf,
    lines: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Proxy {
    fn start(upstream: SocketAddr, options: &[&str]) -> Proxy {
        let dir = Proxy::dir();
        let upstream = upstream.to_string();
        let mut args: Vec<std::ffi::OsString> = vec![
            "--listen".into(),
            "127.0.0.1:0".into(),
            "--upstream".into(),
            upstream.into(),
        ];
        args.push("--audit-log".into());
        args.push(dir.join("audit.jsonl").into());
        args.extend(options.iter().map(Into::into));
        Proxy::spawn(dir, &args).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A directory of its own for one proxy: its audit log, its stderr, its files.
    fn dir() -> PathBuf {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "proxy-cli-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// `elect-leaders proxy ARGS`, its stderr in `dir`; once it says where it listens (its
    /// first listener), or its stderr when it exits without saying it.
    fn spawn(dir: PathBuf, args: &[std::ffi::OsString]) -> Result<Proxy, String> {
        let stderr = std::fs::File::create(dir.join("stderr.log")).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_elect-leaders"))
            .arg("proxy")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        // Every line it prints, read by a thread: the first says where it listens.
        let lines = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let (first_tx, first_rx) = mpsc::channel();
        {
            let lines = lines.clone();
            let stdout = child.stdout.take().unwrap();
            thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { return };
                    let _ = first_tx.send(line.clone());
                    lines.lock().unwrap().push(line);
                }
            });
        }
        let line = first_rx.recv_timeout(TIMEOUT).unwrap_or_default();
        let Some(addr) = line
            .strip_prefix("listening ")
            .and_then(|rest| rest.split(' ').next())
            .and_then(|a| a.parse().ok())
        else {
            let _ = child.kill();
            let status = child.wait().unwrap();
            let stderr = std::fs::read_to_string(dir.join("stderr.log")).unwrap_or_default();
            return Err(format!(
                "the proxy did not say where it listens ({status}): {stderr}"
            ));
        };
        Ok(Proxy {
            child,
            addr,
            dir,
            lines,
        })
    }

    /// The first line of its standard output that starts with `prefix`, once printed.
    fn line(&self, prefix: &str) -> String {
        let mut found = None;
        wait_until(&format!("a line '{prefix}...'"), || {
            found = self
                .lines
                .lock()
                .unwrap()
                .iter()
                .find(|l| l.starts_with(prefix))
                .cloned();
            found.is_some()
        });
        found.unwrap()
    }

    fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(self.addr).unwrap();
        s.set_read_timeout(Some(TIMEOUT)).unwrap();
        s.set_nodelay(true).unwrap();
        s
    }

    fn audit(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.join("audit.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("an audit line is JSON"))
            .collect()
    }

    /// The audit lines once there are at least `n` (a thread of the guard's writes them,
    /// after the answers may have gone out), or what there is after the timeout.
    fn audit_at_least(&self, n: usize) -> Vec<Value> {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let lines = self.audit();
            if lines.len() >= n || Instant::now() >= deadline {
                return lines;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.join("stderr.log")).unwrap_or_default()
    }

    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits for the proxy to exit; its status.
    fn wait(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// True when the peer closed `s` (end of stream, or a reset).
fn closed(s: &mut TcpStream) -> bool {
    let mut b = [0u8; 1];
    match s.read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
    }
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + TIMEOUT;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(20));
    }
}

// ---------------------------------------------------------------------------------------
// Tests

#[test]
fn other_apis_are_forwarded_byte_for_byte() {
    let (fake, got) = FakeUpstream::answering(b"\x00\x00any bytes at all \xff\x00");
    let proxy = Proxy::start(
        fake.addr,
        &[
            "--deny-unclean",
            "--protect-topic",
            "payments",
            "--forward-unknown-api",
            "1000",
        ],
    );
    let mut c = proxy.connect();
    let sent = [
        request(18, 3, 1, b"\x00\x04kel\x040.1\x00"), // ApiVersions
        request(3, 12, 2, &[0xde, 0xad, 0xbe, 0xef]), // Metadata, any body
        request(1000, 7, 3, &[1, 2, 3]),              // a key Kafka does not define
        request(0, 9, 4, &vec![0x5a; 200_000]),       // a large Produce
        request(43, 7, 5, b"not an ElectLeaders body"), // ElectLeaders v7: not ours to read
    ];
    // v7 is not a version of ours: parse_request refuses it, so it closes the connection
    // (fail closed). Send the others first.
    for f in &sent[..4] {
        c.write_all(f).unwrap();
    }
    for f in &sent[..4] {
        assert_eq!(
            &got.recv_timeout(TIMEOUT).unwrap(),
            f,
            "the broker got other bytes"
        );
        let r = read_frame(&mut c).unwrap();
        assert_eq!(
            r,
            response(
                request_correlation_id(f),
                b"\x00\x00any bytes at all \xff\x00"
            )
        );
    }
    assert!(proxy.audit().is_empty(), "only ElectLeaders is audited");
}

/// Under a rule, an API only brokers send (WriteTxnMarkers) and a key Kafka 4.4 does not
/// define, unless forwarded by number, close the connection: nothing reaches the broker,
/// each leaves an audit line.
#[test]
fn broker_only_and_unknown_apis_close_the_connection() {
    let (fake, got) = FakeUpstream::answering(b"\x00\x00");
    let proxy = Proxy::start(fake.addr, &["--deny-unclean"]);
    for (i, (key, name)) in [(27, Some("WriteTxnMarkers")), (1000, None)]
        .into_iter()
        .enumerate()
    {
        let mut c = proxy.connect();
        c.write_all(&request(key, 0, 7, &[0; 16])).unwrap();
        assert!(closed(&mut c), "api key {key}: the connection stays open");
        assert!(
            got.recv_timeout(Duration::from_millis(300)).is_err(),
            "api key {key} reached the broker"
        );
        let audit = proxy.audit_at_least(i + 1);
        let line = &audit[i];
        assert_eq!(line["api_key"], key, "{line}");
        assert_eq!(line["verdict"], "closed", "{line}");
        assert_eq!(
            line["api_name"],
            name.map_or(Value::Null, Value::from),
            "{line}"
        );
    }
}

#[test]
fn pipelined_answers_keep_their_order() {
    // The fake holds its answer to correlation id 1 until the test says so.
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let release_rx = std::sync::Mutex::new(release_rx);
    let (seen_tx, seen) = mpsc::channel::<i32>();
    let seen_tx = std::sync::Mutex::new(seen_tx);
    let fake = FakeUpstream::start(move |_, mut s| {
        while let Ok(f) = read_frame(&mut s) {
            let id = request_correlation_id(&f);
            let _ = seen_tx.lock().unwrap().send(id);
            if id == 1 {
                let _ = release_rx.lock().unwrap().recv();
            }
            if s.write_all(&response(id, b"upstream")).is_err() {
                return;
            }
        }
    });
    let proxy = Proxy::start(fake.addr, &["--deny-unclean"]);
    let mut c = proxy.connect();
    let topics = [TopicPartitionsData::new(b"orders", &[0, 1])];
    let unclean = elect_leaders(2, 2, b"admin", ElectionType::UNCLEAN, Some(&topics));
    let unclean_all = elect_leaders(1, 4, b"admin", ElectionType::UNCLEAN, None);
    let preferred = elect_leaders(2, 5, b"admin", ElectionType::PREFERRED, Some(&topics));
    let mut pipelined = request(3, 12, 1, b"held");
    pipelined.extend_from_slice(&unclean);
    pipelined.extend_from_slice(&request(18, 3, 3, b"after"));
    pipelined.extend_from_slice(&unclean_all);
    pipelined.extend_from_slice(&preferred);
    c.write_all(&pipelined).unwrap();

    assert_eq!(seen.recv_timeout(TIMEOUT).unwrap(), 1);
    // The refusals are ready, but correlation id 1 is still at the broker: nothing comes.
    c.set_read_timeout(Some(Duration::from_millis(400)))
        .unwrap();
    let mut b = [0u8; 1];
    let early = c.peek(&mut b);
    assert!(
        matches!(&early, Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)),
        "an answer overtook the one held upstream: {early:?}"
    );
    c.set_read_timeout(Some(TIMEOUT)).unwrap();
    release_tx.send(()).unwrap();

    let answers: Vec<Vec<u8>> = (0..5).map(|_| read_frame(&mut c).unwrap()).collect();
    let ids: Vec<i32> = answers.iter().map(|a| response_correlation_id(a)).collect();
    assert_eq!(ids, [1, 2, 3, 4, 5]);
    assert_eq!(answers[0], response(1, b"upstream"));
    assert_eq!(answers[2], response(3, b"upstream"));
    // Named partitions: refused one by one, no top-level error.
    let (r, top) = results(&answers[1], 2);
    assert_eq!(top, 0);
    assert_eq!(r.len(), 2);
    for (topic, _, code, message) in &r {
        assert_eq!((topic.as_str(), *code), ("orders", 44));
        assert!(message
            .as_deref()
            .unwrap()
            .contains("only PREFERRED elections are allowed"));
    }
    // All partitions: refused whole, with the top-level error (v1).
    let (r, top) = results(&answers[3], 1);
    assert!(r.is_empty());
    assert_eq!(top, 44);
    // The preferred election went to the broker (the fake answers it with junk: forwarded
    // as it came, under its correlation id).
    assert_eq!(answers[4], response(5, b"upstream"));
    // The broker never saw the refused requests.
    let mut ids_seen = vec![1];
    while let Ok(id) = seen.recv_timeout(Duration::from_millis(300)) {
        ids_seen.push(id);
    }
    assert_eq!(ids_seen, [1, 3, 5]);
    let verdicts: Vec<(i64, String)> = proxy
        .audit_at_least(3)
        .iter()
        .map(|a| {
            (
                a["correlation_id"].as_i64().unwrap(),
                a["verdict"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            (2, "refused".into()),
            (4, "refused".into()),
            (5, "forwarded".into())
        ]
    );
}

#[test]
fn trimmed_request_and_merged_answer() {
    let (tx, got) = mpsc::channel::<Vec<u8>>();
    let tx = std::sync::Mutex::new(tx);
    // The fake answers the trimmed request as a broker would: orders-0 elected, orders-1
    // not needed.
    let fake = FakeUpstream::start(move |_, mut s| {
        while let Ok(f) = read_frame(&mut s) {
            let request = parse_request(&f).unwrap();
            let parts = [
                PartitionResultData {
                    partition_id: 0,
                    ..Default::default()
                },
                PartitionResultData {
                    partition_id: 1,
                    error_code: ErrorCode(84),
                    error_message: Some(b"Leader election not needed for topic partition."),
                    ..Default::default()
                },
            ];
            let results = [ReplicaElectionResultData {
                topic: b"orders",
                partition_result: &parts,
                ..Default::default()
            }];
            let answer = ElectLeadersResponseData {
                correlation_id: request.correlation_id(),
                throttle_time_ms: 3,
                replica_election_results: &results,
                ..Default::default()
            }
            .encode_to_vec(request.version())
            .unwrap();
            let _ = tx.lock().unwrap().send(f);
            if s.write_all(&answer).is_err() {
                return;
            }
        }
    });
    let proxy = Proxy::start(fake.addr, &["--protect-topic", "payments"]);
    let mut c = proxy.connect();
    for version in kafka_elect_leaders::VERSIONS {
        let topics = [
            TopicPartitionsData::new(b"payments", &[7]),
            TopicPartitionsData::new(b"orders", &[0, 1]),
            TopicPartitionsData::new(b"payments", &[8]),
        ];
        let sent = elect_leaders(
            version,
            40 + i32::from(version),
            b"admin",
            ElectionType::PREFERRED,
            Some(&topics),
        );
        c.write_all(&sent).unwrap();
        let upstream = got.recv_timeout(TIMEOUT).unwrap();
        let trimmed = parse_request(&upstream).unwrap();
        assert_eq!(trimmed.version(), version);
        assert_eq!(trimmed.correlation_id(), 40 + i32::from(version));
        let names: Vec<&[u8]> = trimmed
            .topic_partitions()
            .unwrap()
            .iter()
            .map(|t| t.topic())
            .collect();
        assert_eq!(
            names,
            [b"orders"],
            "v{version}: the protected topic reached the broker"
        );
        assert_eq!(trimmed.timeout_ms(), 30_000);

        let answer = read_frame(&mut c).unwrap();
        let merged = parse_response(&answer, version).unwrap();
        assert_eq!(merged.correlation_id(), 40 + i32::from(version));
        assert_eq!(merged.throttle_time_ms(), 3);
        let (r, top) = results(&answer, version);
        assert_eq!(top, 0);
        let codes: Vec<(&str, i32, i16)> =
            r.iter().map(|(t, p, c, _)| (t.as_str(), *p, *c)).collect();
        assert_eq!(
            codes,
            [
                ("orders", 0, 0),
                ("orders", 1, 84),
                ("payments", 7, 44),
                ("payments", 8, 44)
            ]
        );
        assert!(r[2]
            .3
            .as_deref()
            .unwrap()
            .contains("the leaders of this topic are protected"));
    }
    let audit = proxy.audit_at_least(3);
    assert_eq!(audit.len(), 3);
    for a in &audit {
        assert_eq!(a["verdict"], "trimmed");
        assert_eq!(a["rules"], serde_json::json!(["protect-topic"]));
        assert_eq!(a["refused"][0]["topic"], "payments");
        assert_eq!(a["partitions"][1]["partitions"], serde_json::json!([0, 1]));
        assert_eq!(a["client_id"], "admin");
        assert!(a["time"].as_str().unwrap().ends_with('Z'));
    }
}

#[test]
fn malformed_frames_close_the_connection_and_are_not_forwarded() {
    let (fake, got) = FakeUpstream::answering(b"ok");
    let proxy = Proxy::start(fake.addr, &["--max-frame-size", "1000"]);
    let cases: [(&str, Vec<u8>); 4] = [
        ("negative size", vec![0xff, 0xff, 0xff, 0xf0, 0, 18, 0, 0]),
        ("over --max-frame-size", request(0, 9, 9, &[0; 1200])),
        ("size too small for a header", frame(&[0, 18])),
        (
            "an ElectLeaders request that does not parse",
            request(43, 2, 9, &[0, 0xff, 0xff, 0xff, 0xff, 0xff]),
        ),
    ];
    for (what, bad) in cases {
        let mut c = proxy.connect();
        // A good frame first: forwarded and answered.
        let good = request(18, 3, 1, b"ok?");
        c.write_all(&good).unwrap();
        assert_eq!(read_frame(&mut c).unwrap(), response(1, b"ok"), "{what}");
        assert_eq!(got.recv_timeout(TIMEOUT).unwrap(), good);
        let _ = c.write_all(&bad);
        assert!(closed(&mut c), "{what}: the connection stays open");
        assert!(
            got.recv_timeout(Duration::from_millis(300)).is_err(),
            "{what}: forwarded"
        );
    }
    wait_until("the closes logged", || {
        proxy.stderr().matches("closing the connection").count() == 4
    });
    let log = proxy.stderr();
    assert!(log.contains("malformed frame from the client"), "{log}");
    assert!(
        log.contains("malformed ElectLeaders request (v2, correlation id 9)"),
        "{log}"
    );
}

#[test]
fn upstream_disconnect_closes_the_client() {
    // The fake reads one request and hangs up without answering.
    let fake = FakeUpstream::start(|_, mut s| {
        let _ = read_frame(&mut s);
        let _ = s.shutdown(Shutdown::Both);
    });
    let proxy = Proxy::start(fake.addr, &[]);
    let mut c = proxy.connect();
    c.write_all(&request(3, 12, 1, b"")).unwrap();
    assert!(closed(&mut c), "the client stays connected to nothing");
    wait_until("the close logged", || {
        proxy.stderr().contains("the broker closed the connection")
    });
    // An upstream that cannot be reached at all: the client is closed at once.
    let nothing = TcpListener::bind("127.0.0.1:0").unwrap();
    let gone = nothing.local_addr().unwrap();
    drop(nothing);
    let proxy = Proxy::start(gone, &[]);
    let mut c = proxy.connect();
    assert!(closed(&mut c));
    wait_until("the failure logged", || {
        proxy.stderr().contains("cannot connect to the upstream")
    });
}

#[test]
fn max_connections() {
    let (fake, _got) = FakeUpstream::answering(b"ok");
    let proxy = Proxy::start(fake.addr, &["--max-connections", "2"]);
    let mut a = proxy.connect();
    let mut b = proxy.connect();
    for (i, s) in [&mut a, &mut b].into_iter().enumerate() {
        s.write_all(&request(18, 3, i as i32, b"")).unwrap();
        assert_eq!(response_correlation_id(&read_frame(s).unwrap()), i as i32);
    }
    let mut third = proxy.connect();
    assert!(closed(&mut third), "a third connection was kept");
    assert_eq!(fake.accepted.load(Ordering::SeqCst), 2);
    drop(a);
    // Once one is gone, a new one is served.
    wait_until("a connection served after one closed", || {
        let mut c = proxy.connect();
        c.write_all(&request(18, 3, 9, b"")).is_ok()
            && read_frame(&mut c).is_ok_and(|r| response_correlation_id(&r) == 9)
    });
    // The guard's diagnostics are written by a thread of their own: wait for the line.
    wait_until("the refusal is logged", || {
        proxy
            .stderr()
            .contains("2 connections already open (max-connections)")
    });
}

#[test]
fn sigterm_and_sigint_stop_cleanly() {
    for signal in ["TERM", "INT"] {
        let (fake, _got) = FakeUpstream::answering(b"ok");
        let mut proxy = Proxy::start(fake.addr, &[]);
        let mut c = proxy.connect();
        c.write_all(&request(18, 3, 1, b"")).unwrap();
        read_frame(&mut c).unwrap();
        proxy.signal(signal);
        let status = proxy.wait(Duration::from_secs(8));
        assert!(
            status.is_some_and(|s| s.success()),
            "SIG{signal}: {status:?}"
        );
        assert!(
            closed(&mut c),
            "SIG{signal}: a connection outlived the proxy"
        );
        assert!(TcpStream::connect(proxy.addr).is_err(), "still accepting");
        assert!(proxy
            .stderr()
            .contains(&format!("SIG{signal}: no more connections accepted")));
    }
}

/// TLS from the command line: a certificate that cannot be loaded stops the start with a
/// message naming the option; SIGHUP reloads the files, and a reload that fails keeps the
/// previous certificate and the guard running. (The handshakes themselves are tested in
/// crates/proxy/tests/tls.rs.)
#[test]
fn tls_files_and_sighup() {
    let (fake, _got) = FakeUpstream::answering(b"ok");
    let out = Command::new(env!("CARGO_BIN_EXE_elect-leaders"))
        .args(["proxy", "--listen", "127.0.0.1:0", "--upstream"])
        .arg(fake.addr.to_string())
        .args([
            "--tls-cert",
            "/nonexistent/cert.pem",
            "--tls-key",
            "/nonexistent/key.pem",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("tls.cert /nonexistent/cert.pem"), "{err}");

    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("proxy-cli-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    std::fs::write(dir.join("cert.pem"), cert.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), key.serialize_pem()).unwrap();
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    let proxy = Proxy::start(
        fake.addr,
        &[
            "--tls-cert",
            cert_path.to_str().unwrap(),
            "--tls-key",
            key_path.to_str().unwrap(),
        ],
    );
    proxy.signal("HUP");
    wait_until("the reload is logged", || {
        proxy.stderr().contains("SIGHUP: certificates reloaded")
    });
    std::fs::write(&key_path, "not a key").unwrap();
    proxy.signal("HUP");
    wait_until("the failed reload is logged", || {
        proxy.stderr().contains("SIGHUP: certificates not reloaded")
    });
    assert!(proxy.stderr().contains("tls.key"), "{}", proxy.stderr());
    // Still serving: a connection is accepted.
    let _c = proxy.connect();
    let _ = std::fs::remove_dir_all(&dir);
}

/// SASL: the user of a PLAIN or SCRAM authentication the broker accepted is the
/// principal; --allow-principal refuses everyone else's elections (and an unknown
/// principal's); the audit names the principal; no password or proof reaches the log or
/// the audit file.
#[test]
fn sasl_principal_and_allow_principal() {
    let fake = FakeUpstream::sasl();
    let proxy = Proxy::start(fake.addr, &["--allow-principal", "alice"]);
    let topics = [TopicPartitionsData::new(b"orders", &[0])];
    let elect = |c: &mut TcpStream, id: i32| -> (Results, i16) {
        c.write_all(&elect_leaders(
            2,
            id,
            b"t",
            ElectionType::PREFERRED,
            Some(&topics),
        ))
        .unwrap();
        let answer = read_frame(c).unwrap();
        if answer == response(id, b"ok") {
            (Vec::new(), 0)
        } else {
            results(&answer, 2)
        }
    };
    let secrets = ["pw-right-alice", "pw-wrong-mallory", "proof-right-scram"];

    // Alice, PLAIN, accepted by the broker: her election is forwarded.
    let mut alice = proxy.connect();
    alice.write_all(&handshake(1, "PLAIN")).unwrap();
    read_frame(&mut alice).unwrap();
    alice
        .write_all(&authenticate(2, b"\0alice\0pw-right-alice"))
        .unwrap();
    read_frame(&mut alice).unwrap();
    assert_eq!(
        elect(&mut alice, 3),
        (Vec::new(), 0),
        "alice's election forwarded"
    );

    // Mallory claims to be alice, with the wrong password: the broker refuses, so does the
    // guard (the principal stays unknown).
    let mut mallory = proxy.connect();
    mallory.write_all(&handshake(1, "PLAIN")).unwrap();
    read_frame(&mut mallory).unwrap();
    mallory
        .write_all(&authenticate(2, b"\0alice\0pw-wrong-mallory"))
        .unwrap();
    read_frame(&mut mallory).unwrap();
    let (_, top) = elect(&mut mallory, 3);
    assert_eq!(top, 44, "an unaccepted claim is no principal");

    // Bob, SCRAM, accepted: not allowed.
    let mut bob = proxy.connect();
    bob.write_all(&handshake(1, "SCRAM-SHA-256")).unwrap();
    read_frame(&mut bob).unwrap();
    bob.write_all(&authenticate(2, b"n,,n=bob,r=right-nonce"))
        .unwrap();
    read_frame(&mut bob).unwrap();
    bob.write_all(&authenticate(
        3,
        b"c=biws,r=right-nonce,p=proof-right-scram",
    ))
    .unwrap();
    read_frame(&mut bob).unwrap();
    let (_, top) = elect(&mut bob, 4);
    assert_eq!(top, 44, "bob is not allowed");

    let audit = proxy.audit_at_least(3);
    let principals: Vec<(Value, Value)> = audit
        .iter()
        .map(|a| (a["principal"].clone(), a["verdict"].clone()))
        .collect();
    assert_eq!(
        principals,
        [
            (Value::from("alice"), Value::from("forwarded")),
            (Value::Null, Value::from("refused")),
            (Value::from("bob"), Value::from("refused")),
        ]
    );
    assert!(audit[2]["message"]
        .as_str()
        .unwrap()
        .contains("principal 'bob' may not elect"));
    let audit_text = std::fs::read_to_string(proxy.dir.join("audit.jsonl")).unwrap();
    for secret in secrets {
        assert!(!audit_text.contains(secret), "{secret} in the audit");
        assert!(!proxy.stderr().contains(secret), "{secret} in the log");
    }
}

/// `--config`: a guard run from a TOML file alone (its route, its audit log at a path
/// relative to the file, its rules and a principal's own rules); an option on the command
/// line overrides the file's; SIGHUP puts an edited file's rules in force on the
/// connections already open, names what waits for a restart, and keeps the rules in force
/// when the new file is broken, with its line and column; a broken file at the start is
/// a usage error naming the place.
#[test]
fn config_file_rules_overrides_and_reload() {
    let fake = FakeUpstream::sasl();
    let dir = Proxy::dir();
    let file = dir.join("guard.toml");
    // `top`: more top-level keys, after the audit log's (and before any table).
    let write_with = |top: &str, rules: &str| {
        std::fs::write(
            &file,
            format!(
                "audit-log = \"audit.jsonl\"\n{top}\n[[route]]\nlisten = \"127.0.0.1:0\"\n\
                 upstream = \"{}\"\n\n{rules}",
                fake.addr
            ),
        )
        .unwrap()
    };
    let write = |rules: &str| write_with("", rules);
    write(
        "[rules]\ndeny-unclean = true\nprotect-topic = [\"payments\"]\n\
         allow-principal = [\"alice\", \"ops\"]\n\n[rules.principal.ops]\n\
         deny-unclean = false\n",
    );
    // SIGHUP alone: the watch has its own test (a_swapped_configmap_is_reloaded_without_a_signal).
    let args: Vec<std::ffi::OsString> = vec![
        "--no-watch-config".into(),
        "--config".into(),
        file.clone().into(),
        "--protect-topic".into(),
        "orders".into(),
    ];
    let proxy = Proxy::spawn(dir.clone(), &args).unwrap();
    let orders = [TopicPartitionsData::new(b"orders", &[0])];
    let payments = [TopicPartitionsData::new(b"payments", &[0])];
    let logs = [TopicPartitionsData::new(b"logs", &[0])];
    let refused = |(results, top): (Results, i16)| {
        top == 0 && !results.is_empty() && results.iter().all(|r| r.2 == 44)
    };
    let forwarded = |(results, top): (Results, i16)| top == 0 && results.is_empty();

    let mut ops = plain_login(&proxy, "ops");
    let mut alice = plain_login(&proxy, "alice");
    let mut bob = plain_login(&proxy, "bob");
    // ops's own rules let its unclean elections through; alice's are refused.
    assert!(forwarded(elect_on(
        &mut ops,
        3,
        ElectionType::UNCLEAN,
        &logs
    )));
    assert!(refused(elect_on(
        &mut alice,
        3,
        ElectionType::UNCLEAN,
        &logs
    )));
    // --protect-topic orders replaced the file's list: payments is not protected, orders
    // is, for ops too.
    assert!(forwarded(elect_on(
        &mut alice,
        4,
        ElectionType::PREFERRED,
        &payments
    )));
    assert!(refused(elect_on(
        &mut alice,
        5,
        ElectionType::PREFERRED,
        &orders
    )));
    assert!(refused(elect_on(
        &mut ops,
        4,
        ElectionType::PREFERRED,
        &orders
    )));
    // bob is not allowed.
    let (_, top) = elect_on(&mut bob, 3, ElectionType::PREFERRED, &logs);
    assert_eq!(top, 44);
    let audit = proxy.audit_at_least(6);
    assert_eq!(audit.len(), 6, "{audit:?}");
    assert_eq!(audit[0]["principal_rules"], "ops");
    assert_eq!(audit[1]["principal_rules"], Value::Null);

    // ops loses its own rules, bob is allowed (weaker rules: the file says it may), and
    // the idle timeout changes: reloaded, on the open connections too; the timeout waits
    // for a restart.
    write_with(
        "idle-timeout = \"1m\"\nallow-weaker-rules = true",
        "[rules]\ndeny-unclean = true\nallow-principal = [\"alice\", \"ops\", \"bob\"]\n",
    );
    proxy.signal("HUP");
    wait_until("the reload is logged", || {
        proxy.stderr().contains("guard.toml reloaded")
    });
    assert!(
        proxy
            .stderr()
            .contains("not applied until a restart: idle-timeout"),
        "{}",
        proxy.stderr()
    );
    assert!(
        proxy.stderr().contains(
            "its rules are weaker than those before, as its allow-weaker-rules = true allows: \
             allow-principal widened to \"bob\""
        ),
        "{}",
        proxy.stderr()
    );
    assert!(refused(elect_on(&mut ops, 5, ElectionType::UNCLEAN, &logs)));
    assert!(forwarded(elect_on(
        &mut bob,
        4,
        ElectionType::PREFERRED,
        &logs
    )));
    // The command line still overrides: orders stays protected.
    assert!(refused(elect_on(
        &mut bob,
        5,
        ElectionType::PREFERRED,
        &orders
    )));

    // A broken file: nothing changes, and the log says where.
    write("[rules]\ndeny-unclean = \"no\"\n");
    proxy.signal("HUP");
    wait_until("the failed reload is logged", || {
        proxy.stderr().contains("not reloaded")
    });
    assert!(
        proxy.stderr().contains("guard.toml:8:16: "),
        "{}",
        proxy.stderr()
    );
    assert!(refused(elect_on(&mut ops, 6, ElectionType::UNCLEAN, &logs)));
    assert!(forwarded(elect_on(
        &mut bob,
        6,
        ElectionType::PREFERRED,
        &logs
    )));
    drop(proxy);

    // The same broken file at the start: exit 2, the place named.
    let out = Command::new(env!("CARGO_BIN_EXE_elect-leaders"))
        .arg("proxy")
        .args(&args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("guard.toml:8:16: invalid type: string \"no\", expected a boolean"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 35, finding 4: SIGHUP with an empty or truncated config file dropped every rule
/// while logging that its rules were in force. Now a file that is empty, cut mid-table, or
/// has a protected topic fewer keeps the rules in force (an election of the protected
/// topic is still refused after each) and the log says why, naming what would be dropped;
/// with `allow-weaker-rules = true` the weaker rules are put in force, and the log says
/// so.
#[test]
fn a_sighup_reload_that_would_weaken_the_rules_keeps_them() {
    let (fake, _got) = FakeUpstream::answering(b"ok");
    // The route on the command line, the rules in the file: an empty file parses.
    let dir = Proxy::dir();
    let file = dir.join("guard.toml");
    let whole = "[rules]\ndeny-unclean = true\nprotect-topic = [\"payments\", \"orders\"]\n";
    std::fs::write(&file, whole).unwrap();
    // SIGHUP alone, each reload counted: the watch has its own test.
    let proxy = Proxy::start(
        fake.addr,
        &["--config", file.to_str().unwrap(), "--no-watch-config"],
    );
    let payments = [TopicPartitionsData::new(b"payments", &[0])];
    let mut c = proxy.connect();
    let mut id = 0;
    let mut refused = |c: &mut TcpStream| {
        id += 1;
        let (results, top) = elect_on(c, id, ElectionType::PREFERRED, &payments);
        top == 0 && results.len() == 1 && results[0].2 == 44
    };
    assert!(refused(&mut c));
    let mut failures = 0;
    let mut reload_refused = |contents: &str, says: &str| {
        std::fs::write(&file, contents).unwrap();
        proxy.signal("HUP");
        failures += 1;
        wait_until("the refused reload is logged", || {
            proxy.stderr().matches("guard.toml not reloaded").count() >= failures
        });
        let log = proxy.stderr();
        let line = log
            .lines()
            .filter(|l| l.contains("guard.toml not reloaded"))
            .nth(failures - 1)
            .unwrap();
        assert!(line.contains(says), "{says:?} not in {line}");
        assert!(!log.contains("guard.toml reloaded"), "{log}");
    };

    reload_refused("", "the file is empty (it sets nothing)");
    assert!(refused(&mut c), "after an empty file");
    // Cut mid-table, in the list of protected topics.
    reload_refused(
        &whole[..whole.len() - 12],
        "guard.toml:3:28: unclosed array",
    );
    assert!(refused(&mut c), "after a truncated file");
    // Cut at a line boundary: it parses, with fewer rules.
    reload_refused(
        &whole[..whole.find("protect-topic").unwrap()],
        "its rules are weaker than those in force, and it does not say allow-weaker-rules = \
         true: protect-topic \"orders\", \"payments\" dropped",
    );
    assert!(refused(&mut c), "after a file cut at a line");
    reload_refused(
        &whole.replace("\"payments\", ", ""),
        "allow-weaker-rules = true: protect-topic \"payments\" dropped",
    );
    assert!(refused(&mut c), "after a file with a protected topic fewer");

    // Said so: put in force, and the log says what it dropped.
    std::fs::write(
        &file,
        format!(
            "allow-weaker-rules = true\n{}",
            whole.replace("\"payments\", ", "")
        ),
    )
    .unwrap();
    proxy.signal("HUP");
    wait_until("the reload is logged", || {
        proxy.stderr().contains("guard.toml reloaded")
    });
    assert!(
        proxy.stderr().contains(
            "its rules are weaker than those before, as its allow-weaker-rules = true allows: \
             protect-topic \"payments\" dropped"
        ),
        "{}",
        proxy.stderr()
    );
    assert!(!refused(&mut c), "payments is no longer protected");
    // Every line of the log is one line: no newline from a file or a name.
    for line in proxy.stderr().lines() {
        assert!(line.starts_with("elect-leaders proxy: "), "{line}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 35, finding 6: the audit file was never opened again; after logrotate moved it,
/// the lines went to the file moved. Moved without a signal, the next line goes to a new
/// file at the path; SIGHUP (logrotate's `postrotate`) opens it again at once.
#[test]
fn the_audit_log_follows_logrotate() {
    let (fake, _got) = FakeUpstream::answering(b"ok");
    let proxy = Proxy::start(fake.addr, &["--protect-topic", "payments"]);
    let (path, rotated) = (
        proxy.dir.join("audit.jsonl"),
        proxy.dir.join("audit.jsonl.1"),
    );
    let orders = [TopicPartitionsData::new(b"orders", &[0])];
    let mut c = proxy.connect();
    assert_eq!(elect_on(&mut c, 1, ElectionType::PREFERRED, &orders).1, 0);
    assert_eq!(proxy.audit_at_least(1).len(), 1);

    // Moved, then SIGHUP: a new file at once, before any line.
    std::fs::rename(&path, &rotated).unwrap();
    proxy.signal("HUP");
    wait_until("the reopen is logged", || {
        proxy
            .stderr()
            .contains("SIGHUP: audit log opened again at its path")
    });
    assert!(path.exists());
    assert_eq!(elect_on(&mut c, 2, ElectionType::PREFERRED, &orders).1, 0);
    let audit = proxy.audit_at_least(1);
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0]["correlation_id"], 2);

    // Moved again, no signal (logrotate without postrotate): the next line still goes to
    // a new file at the path; the file moved keeps the lines before.
    std::fs::rename(&path, &rotated).unwrap();
    assert_eq!(elect_on(&mut c, 3, ElectionType::PREFERRED, &orders).1, 0);
    let audit = proxy.audit_at_least(1);
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0]["correlation_id"], 3);
    let before = std::fs::read_to_string(&rotated).unwrap();
    assert_eq!(before.lines().count(), 1, "{before}");
    assert!(before.contains("\"correlation_id\":2"), "{before}");
}

/// `--check-config FILE`: a valid file is one line on stdout and exit 0, binding nothing
/// and creating nothing; an invalid one (does not parse, is empty, a certificate that
/// cannot be loaded, an audit log in no directory) is exit 2 with the place named.
#[test]
fn check_config() {
    let dir = Proxy::dir();
    let file = dir.join("guard.toml");
    let check = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_elect-leaders"))
            .args(["proxy", "--check-config"])
            .arg(&file)
            .args(extra)
            .output()
            .unwrap()
    };
    // The port is taken: a check binds nothing, so it does not mind.
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let valid = format!(
        "audit-log = \"logs/audit.jsonl\"\n\n[[route]]\nlisten = \"{}\"\n\
         upstream = \"127.0.0.1:9092\"\n\n[rules]\ndeny-unclean = true\n\
         protect-topic = [\"payments\", \"orders\"]\nallow-principal = [\"ops\"]\n\n\
         [rules.principal.ops]\nlog-only = true\n",
        taken.local_addr().unwrap()
    );
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    std::fs::write(&file, &valid).unwrap();
    let out = check(&[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        stdout,
        format!(
            "{}: valid: 1 route(s); rules: deny-unclean, protect-topic (2), allow-principal \
             (1), own rules for 1 principal(s); audit-log {}\n",
            file.display(),
            dir.join("logs/audit.jsonl").display()
        )
    );
    assert!(
        !dir.join("logs/audit.jsonl").exists(),
        "the check created it"
    );
    // The options given count, as at a start.
    let out = check(&[
        "--max-partitions",
        "5",
        "--min-replication",
        "3",
        "--log-only",
    ]);
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("max-partitions 5, min-replication 3, log-only, own rules"),
        "{out:?}"
    );

    let invalid = |contents: &str, extra: &[&str], says: &str| {
        std::fs::write(&file, contents).unwrap();
        let out = check(extra);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{contents}: {err}");
        assert!(err.contains(says), "{says:?} not in {err}");
        assert!(out.stdout.is_empty());
    };
    invalid(
        &valid.replace("deny-unclean = true", "deny-unclean = yes"),
        &[],
        "guard.toml:8:16: ",
    );
    // Cut mid-table, in a name.
    let cut = valid.find("\"orders\"").unwrap() + 3;
    invalid(&valid[..cut], &[], "guard.toml:9:");
    invalid("", &[], "guard.toml: the file is empty");
    invalid(
        &format!("{valid}\n[tls]\ncert = \"missing.pem\"\nkey = \"missing.key\"\n"),
        &[],
        "missing.pem",
    );
    invalid(
        &valid.replace("logs/audit.jsonl", "nowhere/audit.jsonl"),
        &[],
        "cannot open the audit log",
    );
    invalid(&valid, &["--tls-cert", "c.pem"], "--tls-key");
    let out = Command::new(env!("CARGO_BIN_EXE_elect-leaders"))
        .args(["proxy", "--check-config", "a.toml", "--config", "b.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 42, item 6: an audit log that is a FIFO with no reader hung both a start and
/// `--check-config` without a word (opening a FIFO to write waits for a reader). Both now
/// exit at once, saying so; a hang fails the test (the check is killed after
/// [`TIMEOUT`], the start too, by [`Proxy::spawn`]).
#[cfg(unix)]
#[test]
fn an_audit_fifo_with_no_reader_is_an_error_at_once() {
    let dir = Proxy::dir();
    let fifo = dir.join("audit.fifo");
    match Command::new("mkfifo").arg(&fifo).status() {
        Ok(status) if status.success() => {}
        other => {
            eprintln!("skipped: mkfifo made no FIFO: {other:?}");
            return;
        }
    }
    let says = format!(
        "audit log {} is a FIFO with no reader: start its reader first",
        fifo.display()
    );
    let file = dir.join("guard.toml");
    std::fs::write(
        &file,
        "[[route]]\nlisten = \"127.0.0.1:0\"\nupstream = \"127.0.0.1:9092\"\n",
    )
    .unwrap();
    let mut check = Command::new(env!("CARGO_BIN_EXE_elect-leaders"))
        .args(["proxy", "--check-config"])
        .arg(&file)
        .arg("--audit-log")
        .arg(&fifo)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = check.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > TIMEOUT {
            let _ = check.kill();
            let _ = check.wait();
            panic!("--check-config waited for a reader of the FIFO");
        }
        thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    check
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&says), "{says:?} not in {stderr}");

    let upstream = TcpListener::bind("127.0.0.1:0").unwrap();
    let args: Vec<std::ffi::OsString> = vec![
        "--listen".into(),
        "127.0.0.1:0".into(),
        "--upstream".into(),
        upstream.local_addr().unwrap().to_string().into(),
        "--audit-log".into(),
        fifo.clone().into(),
    ];
    let started = Instant::now();
    let Err(e) = Proxy::spawn(dir.clone(), &args) else {
        panic!("the guard started with an audit FIFO no one reads");
    };
    assert!(started.elapsed() < TIMEOUT, "the start waited: {e}");
    assert!(e.contains(&says), "{says:?} not in {e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// One HTTP/1.1 GET of `path` from `addr`: the status code and the body (0 and nothing
/// when the connection is closed or reset without an answer).
fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut answer = String::new();
    if write!(s, "GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").is_err()
        || s.read_to_string(&mut answer).is_err()
    {
        return (0, String::new());
    }
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, body.to_owned())
}

/// `--metrics-listen`: `/metrics` counts what the test did (frames by API, decisions by
/// verdict and rule, refused partitions, connections open, accepted and closed by reason,
/// round trips), `/status` shows it to a person; clients that ask nothing cannot keep a
/// scrape out.
#[test]
fn metrics_and_status() {
    let (fake, _got) = FakeUpstream::answering(b"ok");
    let proxy = Proxy::start(
        fake.addr,
        &["--deny-unclean", "--metrics-listen", "127.0.0.1:0"],
    );
    let metrics: SocketAddr = proxy
        .line("metrics ")
        .trim_start_matches("metrics ")
        .parse()
        .unwrap();
    let mut c = proxy.connect();
    c.write_all(&request(3, 1, 1, &[0xff, 0xff, 0xff, 0xff]))
        .unwrap();
    assert_eq!(read_frame(&mut c).unwrap(), response(1, b"ok"));
    let topics = [TopicPartitionsData::new(b"orders", &[0, 1, 2])];
    let (results, _) = elect_on(&mut c, 2, ElectionType::UNCLEAN, &topics);
    assert_eq!(results.len(), 3);

    let (code, text) = http_get(metrics, "/metrics");
    assert_eq!(code, 200);
    for line in [
        "elect_leaders_guard_frames_total{api=\"Metadata\",direction=\"request\"} 1",
        "elect_leaders_guard_frames_total{api=\"Metadata\",direction=\"response\"} 1",
        "elect_leaders_guard_frames_total{api=\"ElectLeaders\",direction=\"request\"} 1",
        "elect_leaders_guard_elect_leaders_decisions_total{verdict=\"refused\"} 1",
        "elect_leaders_guard_elect_leaders_decision_rules_total{rule=\"deny-unclean\"} 1",
        "elect_leaders_guard_elect_leaders_refused_partitions_total 3",
        "elect_leaders_guard_connections_open 1",
        "elect_leaders_guard_connections_accepted_total 1",
        "elect_leaders_guard_broker_round_trip_seconds_count{api=\"Metadata\"} 1",
        "elect_leaders_guard_audit_queue_lines ",
        "elect_leaders_guard_audit_queue_bytes ",
        "elect_leaders_guard_audit_forwarded_unaudited_total 0",
    ] {
        assert!(text.contains(line), "{line} not in:\n{text}");
    }
    drop(c);
    wait_until("the close is counted", || {
        http_get(metrics, "/metrics")
            .1
            .contains("elect_leaders_guard_connections_closed_total{reason=\"client\"} 1")
    });

    let (code, page) = http_get(metrics, "/status");
    assert_eq!(code, 200);
    assert!(page.contains("<td id=\"refused\">1</td>"), "{page}");
    assert!(
        page.contains("<td id=\"refused-partitions\">3</td>"),
        "{page}"
    );
    assert!(page.contains(&fake.addr.to_string()), "{page}");
    assert_eq!(http_get(metrics, "/nothing").0, 404);

    // 100 clients that ask nothing, more than the listener's places (64): a scrape still
    // takes the place of the oldest and is answered (`crates/proxy/tests/metrics_listener.rs`
    // attacks it harder).
    let silent: Vec<TcpStream> = (0..100)
        .map(|_| TcpStream::connect(metrics).unwrap())
        .collect();
    assert_eq!(http_get(metrics, "/metrics").0, 200);
    drop(silent);

    // A request whose head does not end within 8 KiB is refused, not buffered on. (Exactly
    // 8 KiB: with more, the guard's close could reset the connection over the unread rest
    // before the answer is read here.)
    let mut endless = TcpStream::connect(metrics).unwrap();
    endless.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut head = b"GET /metrics HTTP/1.1\r\nX-Padding: ".to_vec();
    head.resize(8 * 1024, b'a');
    endless.write_all(&head).unwrap();
    let mut answer = String::new();
    let _ = endless.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 400 "), "{answer:?}");
    // Only GET.
    let mut post = TcpStream::connect(metrics).unwrap();
    post.set_read_timeout(Some(TIMEOUT)).unwrap();
    write!(post, "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n").unwrap();
    let mut answer = String::new();
    let _ = post.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 405 "), "{answer:?}");
}

/// The value of the series `name` (its labels written out) in a scrape.
fn series(metrics: &str, name: &str) -> Option<String> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ').map(str::to_owned))
}

/// The hash `policy_info` shows, and the generation, in a scrape.
fn policy(metrics: &str) -> (String, String) {
    let hash = metrics
        .lines()
        .find_map(|l| l.strip_prefix("elect_leaders_guard_policy_info{hash=\""))
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no policy_info in:\n{metrics}"))
        .to_owned();
    let generation = series(metrics, "elect_leaders_guard_policy_generation").unwrap();
    (hash, generation)
}

/// A directory laid out as Kubernetes mounts a ConfigMap: `guard.toml` a symlink to
/// `..data/guard.toml`, `..data` a symlink to a timestamped directory, swapped by a rename.
struct ConfigMap {
    dir: PathBuf,
    swaps: usize,
}

impl ConfigMap {
    fn new(dir: PathBuf, contents: &str) -> ConfigMap {
        std::fs::create_dir_all(&dir).unwrap();
        let mut map = ConfigMap { dir, swaps: 0 };
        let first = map.version(contents);
        std::os::unix::fs::symlink(&first, map.dir.join("..data")).unwrap();
        std::os::unix::fs::symlink("..data/guard.toml", map.dir.join("guard.toml")).unwrap();
        map
    }

    fn file(&self) -> PathBuf {
        self.dir.join("guard.toml")
    }

    /// A new timestamped directory holding `contents`; its name.
    fn version(&mut self, contents: &str) -> String {
        self.swaps += 1;
        let name = format!("..2026_12_08_00_0{}_00.{}", self.swaps, self.swaps);
        std::fs::create_dir(self.dir.join(&name)).unwrap();
        std::fs::write(self.dir.join(&name).join("guard.toml"), contents).unwrap();
        name
    }

    /// What the kubelet does on an update: the new directory, a new symlink to it renamed
    /// over `..data` (one atomic step), the old directory removed.
    fn swap(&mut self, contents: &str) {
        let old = std::fs::read_link(self.dir.join("..data")).unwrap();
        let new = self.version(contents);
        std::os::unix::fs::symlink(&new, self.dir.join("..data_tmp")).unwrap();
        std::fs::rename(self.dir.join("..data_tmp"), self.dir.join("..data")).unwrap();
        std::fs::remove_dir_all(self.dir.join(old)).unwrap();
    }
}

/// Issue 45, item 5: `--config` in a ConfigMap's directory. A swap of `..data` to a file
/// with a rule more is put in force without a signal (the hash changes, the generation
/// is 2, `reloads_total{result="applied"}` 1); a swap to a file that does not parse keeps
/// it (`result="failed"` 1, the same hash and generation). A second guard started from
/// the same rules, written otherwise, shows the same hash.
#[test]
fn a_swapped_configmap_is_reloaded_without_a_signal() {
    let (fake, _got) = FakeUpstream::answering(b"ok");
    let dir = Proxy::dir();
    let first = "[rules]\ndeny-unclean = true\nprotect-topic = [\"payments\"]\n";
    let mut map = ConfigMap::new(dir.join("config"), first);
    let proxy = Proxy::start(
        fake.addr,
        &[
            "--config",
            map.file().to_str().unwrap(),
            "--metrics-listen",
            "127.0.0.1:0",
        ],
    );
    let metrics: SocketAddr = proxy
        .line("metrics ")
        .trim_start_matches("metrics ")
        .parse()
        .unwrap();
    let scrape = || {
        let (code, text) = http_get(metrics, "/metrics");
        assert_eq!(code, 200);
        text
    };
    let reloads = |text: &str, result: &str| {
        series(
            text,
            &format!("elect_leaders_guard_reloads_total{{result=\"{result}\"}}"),
        )
    };
    let start = scrape();
    let (hash_first, generation) = policy(&start);
    assert_eq!(generation, "1");
    assert_eq!(reloads(&start, "applied").as_deref(), Some("0"));
    let orders = [TopicPartitionsData::new(b"orders", &[0])];
    let mut c = proxy.connect();
    let (results, _) = elect_on(&mut c, 1, ElectionType::PREFERRED, &orders);
    assert!(results.is_empty(), "orders is not protected yet");

    // A rule more, swapped in: no signal.
    let second = "[rules]\ndeny-unclean = true\nprotect-topic = [\"payments\", \"orders\"]\n";
    map.swap(second);
    wait_until("the swap is put in force", || {
        reloads(&scrape(), "applied").as_deref() == Some("1")
    });
    let after = scrape();
    let (hash_second, generation) = policy(&after);
    assert_ne!(hash_second, hash_first);
    assert_eq!(generation, "2");
    assert_eq!(
        after.matches("elect_leaders_guard_policy_info{").count(),
        1,
        "{after}"
    );
    let (results, _) = elect_on(&mut c, 2, ElectionType::PREFERRED, &orders);
    assert_eq!(results.len(), 1, "orders is protected now");
    let log = proxy.stderr();
    assert!(
        log.contains(&format!(
            "config file changed: {} reloaded",
            map.file().display()
        )) && log.contains(&format!("policy hash {hash_second}, generation 2")),
        "{log}"
    );
    assert!(!log.contains("SIGHUP:"), "{log}");
    // Every line is the guard's own: none from the watch's crate.
    assert_eq!(log.lines().count(), 3, "{log}");

    // Another file in the directory, written and written again: no reload at all.
    for i in 0..5 {
        std::fs::write(map.dir.join("notes.txt"), format!("{i}")).unwrap();
    }
    thread::sleep(Duration::from_millis(800));
    let quiet = scrape();
    for (result, count) in [("applied", "1"), ("unchanged", "0"), ("failed", "0")] {
        assert_eq!(reloads(&quiet, result).as_deref(), Some(count), "{quiet}");
    }

    // A file that does not parse: the rules in force stay.
    map.swap("[rules\ndeny-unclean = true\n");
    wait_until("the broken swap is refused", || {
        reloads(&scrape(), "failed").as_deref() == Some("1")
    });
    let broken = scrape();
    assert_eq!(policy(&broken), (hash_second.clone(), "2".to_owned()));
    assert_eq!(reloads(&broken, "applied").as_deref(), Some("1"));
    let (results, _) = elect_on(&mut c, 3, ElectionType::PREFERRED, &orders);
    assert_eq!(results.len(), 1, "orders is still protected");
    assert!(
        proxy.stderr().contains(&format!(
            "config file changed: {} not reloaded, the configuration in force stays",
            map.file().display()
        )),
        "{}",
        proxy.stderr()
    );

    // Another replica, its file the same rules written otherwise: the same hash.
    let other_file = dir.join("other.toml");
    std::fs::write(
        &other_file,
        "# the same rules\n[rules]\nprotect-topic = [ \"orders\", \"payments\" ]\n\
         deny-unclean = true # last\n",
    )
    .unwrap();
    let other = Proxy::start(
        fake.addr,
        &[
            "--config",
            other_file.to_str().unwrap(),
            "--metrics-listen",
            "127.0.0.1:0",
        ],
    );
    let other_metrics: SocketAddr = other
        .line("metrics ")
        .trim_start_matches("metrics ")
        .parse()
        .unwrap();
    assert_eq!(
        policy(&http_get(other_metrics, "/metrics").1),
        (hash_second, "1".to_owned())
    );
    drop(other);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A broker that answers and closes at once (Kafka does so on a failed SASL
/// authentication: SaslAuthenticate answered with error 58, then the close): the answer
/// reaches the client before the guard closes it.
#[test]
fn an_answer_written_with_the_brokers_close_reaches_the_client() {
    let fake = FakeUpstream::start(|_, mut s| {
        if let Ok(f) = read_frame(&mut s) {
            let mut body = 58i16.to_be_bytes().to_vec();
            body.extend((-1i16).to_be_bytes());
            body.extend(0i32.to_be_bytes());
            let _ = s.write_all(&response(request_correlation_id(&f), &body));
        }
        // Closed as the thread ends: answer and FIN leave together.
    });
    let proxy = Proxy::start(fake.addr, &[]);
    for round in 0..5 {
        let mut c = proxy.connect();
        c.write_all(&handshake(1, "PLAIN")).unwrap();
        let answer = read_frame(&mut c)
            .unwrap_or_else(|e| panic!("round {round}: no answer before the close: {e}"));
        assert_eq!(response_correlation_id(&answer), 1);
        assert!(closed(&mut c));
    }
}

/// The broker answers, then sends what cannot be read: a frame with a negative size, or
/// the start of a frame and a close. The answer before it reaches the client, then the
/// guard closes the connection.
#[test]
fn an_answer_before_a_broken_frame_from_the_broker_reaches_the_client() {
    for tail in [(-5i32).to_be_bytes().to_vec(), vec![0, 0, 0, 40, 0, 0]] {
        let fake = FakeUpstream::start(move |_, mut s| {
            if let Ok(f) = read_frame(&mut s) {
                let mut bytes = response(request_correlation_id(&f), b"answer");
                bytes.extend_from_slice(&tail);
                // One write: the answer and what follows arrive together.
                let _ = s.write_all(&bytes);
            }
        });
        let proxy = Proxy::start(fake.addr, &[]);
        for round in 0..5 {
            let mut c = proxy.connect();
            c.write_all(&request(3, 1, 7, &[0xff, 0xff, 0xff, 0xff]))
                .unwrap();
            let answer = read_frame(&mut c)
                .unwrap_or_else(|e| panic!("round {round}: the answer was lost: {e}"));
            assert_eq!(answer, response(7, b"answer"));
            assert!(closed(&mut c));
        }
    }
}

#[test]
fn log_only_forwards_and_audits_what_would_be_refused() {
    let (fake, got) = FakeUpstream::answering(b"upstream");
    let proxy = Proxy::start(
        fake.addr,
        &["--log-only", "--deny-unclean", "--allow-client-id", "ops"],
    );
    let mut c = proxy.connect();
    let topics = [TopicPartitionsData::new(b"orders", &[3])];
    let sent = elect_leaders(2, 11, b"dev", ElectionType::UNCLEAN, Some(&topics));
    c.write_all(&sent).unwrap();
    assert_eq!(got.recv_timeout(TIMEOUT).unwrap(), sent);
    assert_eq!(read_frame(&mut c).unwrap(), response(11, b"upstream"));
    let audit = proxy.audit_at_least(1);
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0]["verdict"], "would-refuse");
    assert_eq!(
        audit[0]["rules"],
        serde_json::json!(["allow-client-id", "deny-unclean"])
    );
    assert_eq!(audit[0]["election_type"], "UNCLEAN");
    assert_eq!(audit[0]["whole"], true);
}

#[test]
fn whole_refusals_and_the_audit_record() {
    let (fake, got) = FakeUpstream::answering(b"upstream");
    let proxy = Proxy::start(
        fake.addr,
        &[
            "--allow-client-id",
            "ops",
            "--max-partitions",
            "2",
            "--protect-topic",
            "payments",
        ],
    );
    let mut c = proxy.connect();
    let topics = [TopicPartitionsData::new(b"orders", &[0, 1, 2])];
    // Too many partitions (v2), a client id not allowed (v0), all partitions (v1).
    c.write_all(&elect_leaders(
        2,
        1,
        b"ops",
        ElectionType::PREFERRED,
        Some(&topics),
    ))
    .unwrap();
    c.write_all(&elect_leaders(
        0,
        2,
        b"dev",
        ElectionType::PREFERRED,
        Some(&topics[..]),
    ))
    .unwrap();
    c.write_all(&elect_leaders(1, 3, b"ops", ElectionType::PREFERRED, None))
        .unwrap();
    c.write_all(&elect_leaders(0, 4, b"ops", ElectionType::PREFERRED, None))
        .unwrap();
    let (r, top) = results(&read_frame(&mut c).unwrap(), 2);
    assert_eq!((r.len(), top), (3, 44));
    assert!(r[0]
        .3
        .as_deref()
        .unwrap()
        .contains("3 partitions, more than the guard allows in one request"));
    let (r, top) = results(&read_frame(&mut c).unwrap(), 0);
    assert_eq!((r.len(), top), (3, 0), "v0 has no top-level error code");
    assert!(r.iter().all(|p| p.2 == 44));
    assert!(r[0]
        .3
        .as_deref()
        .unwrap()
        .contains("client id 'dev' may not elect"));
    let (r, top) = results(&read_frame(&mut c).unwrap(), 1);
    assert_eq!((r.len(), top), (0, 44));
    // v0, all partitions: Kafka's getErrorResponse at v0 is an empty answer.
    let (r, top) = results(&read_frame(&mut c).unwrap(), 0);
    assert_eq!((r.len(), top), (0, 0));
    assert!(
        got.recv_timeout(Duration::from_millis(300)).is_err(),
        "a refusal was forwarded"
    );
    let audit = proxy.audit_at_least(4);
    assert_eq!(audit.len(), 4);
    assert!(audit
        .iter()
        .all(|a| a["verdict"] == "refused" && a["whole"] == true));
    assert_eq!(audit[2]["partitions"], Value::Null);
    assert_eq!(
        audit[2]["rules"],
        serde_json::json!(["max-partitions", "protect-topic"])
    );
    assert_eq!(audit[1]["version"], 0);
    assert_eq!(audit[1]["election_type"], "PREFERRED");
    assert!(audit[0]["message"]
        .as_str()
        .unwrap()
        .contains("more than the guard allows in one request"));
    for key in [
        "time",
        "client",
        "client_id",
        "correlation_id",
        "partition_count",
        "upstream",
    ] {
        assert!(audit[0].get(key).is_some(), "no {key} in {}", audit[0]);
    }
}

#[test]
fn usage_errors() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_elect-leaders"))
            .arg("proxy")
            .args(args)
            .output()
            .unwrap()
    };
    let both = ["--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:1"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        both.iter().chain(extra).copied().collect()
    };
    // Each case, and what its message must name.
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec![], "--listen"),
        (vec!["--listen", "127.0.0.1:0"], "--upstream"),
        (
            vec!["--listen", "nowhere", "--upstream", "127.0.0.1:1"],
            "--listen",
        ),
        (with(&["--max-connections", "0"]), "--max-connections"),
        (with(&["--max-frame-size", "7"]), "--max-frame-size"),
        (
            with(&["--max-frame-size", "2147483648"]),
            "--max-frame-size",
        ),
        (with(&["--max-partitions", "-1"]), "--max-partitions"),
        (with(&["--min-replication", "0"]), "--min-replication"),
        (with(&["--min-replication", "40000"]), "--min-replication"),
        (with(&["--idle-timeout", "soon"]), "--idle-timeout"),
        (with(&["--idle-timeout", "0s"]), "--idle-timeout"),
        (with(&["--frame-timeout", "30"]), "--frame-timeout"),
        (
            with(&["--upstream-connect-timeout", "10x"]),
            "--upstream-connect-timeout",
        ),
        (with(&["--request-timeout", "2"]), "--request-timeout"),
        (
            with(&["--max-buffered-bytes", "1000"]),
            "--max-buffered-bytes",
        ),
        (
            with(&["--max-buffered-bytes", "1TB"]),
            "--max-buffered-bytes",
        ),
        (
            with(&["--max-buffered-bytes", "99999999999999999999GiB"]),
            "--max-buffered-bytes",
        ),
        (
            with(&["--audit-queue-bytes", "1000"]),
            "--audit-queue-bytes",
        ),
        (
            with(&["--audit-queue-bytes", "16MB"]),
            "--audit-queue-bytes",
        ),
        // Replaced by --audit-queue-bytes: a count of lines bounded no memory.
        (with(&["--audit-queue", "4096"]), "--audit-queue"),
        (with(&["--tls-cert", "c.pem"]), "--tls-key"),
        (with(&["--tls-client-ca", "ca.pem"]), "--tls-cert"),
        (with(&["--upstream-ca", "ca.pem"]), "--upstream-tls"),
        (
            with(&["--upstream-tls", "--upstream-tls-cert", "c.pem"]),
            "--upstream-tls-key",
        ),
        (with(&["--bogus"]), "--bogus"),
        (with(&["--deny-unclean=yes"]), "--deny-unclean"),
        (with(&["--plain", "--log-only"]), "--plain"),
        (with(&["--plain", "--protect-topic", "t"]), "--plain"),
        (
            vec![
                "--listen",
                "127.0.0.1:9",
                "--upstream",
                "127.0.0.1:1",
                "--listen",
                "127.0.0.1:9",
                "--upstream",
                "127.0.0.1:1",
            ],
            "--listen",
        ),
    ];
    for (args, named) in &cases {
        let out = run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(named),
            "{args:?}: {named:?} not named in {err}"
        );
    }
    let help = run(&["--help"]);
    assert!(help.status.success());
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("--protect-topic NAME"), "{help}");
    for timeout in [
        "--idle-timeout",
        "--frame-timeout",
        "--upstream-connect-timeout",
        "--request-timeout",
        "--max-buffered-bytes",
    ] {
        assert!(help.contains(timeout), "{timeout} not in the help");
    }
}
