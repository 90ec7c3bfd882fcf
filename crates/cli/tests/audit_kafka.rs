//! The guard with its audit log on a Kafka topic (`[audit-kafka]`), against a real Apache
//! Kafka (one KRaft node on loopback, its classpath resolved by Maven as
//! `tests/e2e/cluster.sh` resolves it, as `crates/audit-kafka/tests/kafka.rs` runs it),
//! `elect-leaders proxy` in front of a fake broker: elections through the guard become
//! events on the topic, keyed by the replica, each with its decision line as `data`; with
//! the audit broker stopped, blocking-strict refuses an election with POLICY_VIOLATION
//! within its deadline (and says so in its log, its metrics and `/readyz`), and batch lets
//! elections through and counts the records its buffer had no room for.
//!
//! Needs `java` and `mvn` on PATH: without them it prints one line saying it was skipped
//! and passes; `KEL_SKIP_JAVA=1` skips on purpose. `.ci/run` has both.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use kafka_elect_leaders::{
    parse_response, ElectLeadersRequestData, ElectionType, EncodeRequestExt, ErrorCode,
    TopicPartitionsData,
};
use kafka_elect_leaders_audit_kafka::{Connection, TopicReader};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::ClientConfig;
use serde_json::Value;

const TOPIC: &str = "guard-audit";
const TIMEOUT: Duration = Duration::from_secs(15);

/// One line on the real stderr (libtest captures `eprintln!` of passing tests).
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

fn have(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The Kafka server's classpath, as `tests/e2e/cluster.sh classpath` resolves it; `None`,
/// after one line saying why, without Java or Maven or with `KEL_SKIP_JAVA`.
fn classpath(state: &Path) -> Option<String> {
    if std::env::var_os("KEL_SKIP_JAVA").is_some() {
        say("cli/tests/audit_kafka.rs: skipped: KEL_SKIP_JAVA is set");
        return None;
    }
    if !have("java", "-version") || !have("mvn", "-v") {
        say("cli/tests/audit_kafka.rs: skipped: needs `java` (17+) and `mvn` on PATH to run a Kafka broker");
        return None;
    }
    let out = Command::new("bash")
        .arg(root().join("tests/e2e/cluster.sh"))
        .arg("classpath")
        .env("E2E_DIR", state)
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "resolving the Kafka classpath failed (set KEL_SKIP_JAVA=1 to skip):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).unwrap().trim().to_owned())
}

/// A free loopback port (free when asked: the broker binds it right after).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A cluster id as Kafka writes one: 16 bytes in unpadded base64url, never starting with
/// '-' (StorageTool would take it for an option).
fn cluster_id() -> String {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut bytes = Vec::new();
    for i in 0..2u64 {
        let mut h = RandomState::new().build_hasher();
        h.write_u64(i);
        bytes.extend_from_slice(&h.finish().to_le_bytes());
    }
    bytes[0] &= 0x7f; // the first character is not '-' or '_'
    let mut bits = 0u32;
    let mut count = 0;
    let mut out = String::new();
    for b in bytes {
        bits = (bits << 8) | u32::from(b);
        count += 8;
        while count >= 6 {
            count -= 6;
            out.push(ALPHABET[((bits >> count) & 63) as usize] as char);
        }
    }
    if count > 0 {
        out.push(ALPHABET[((bits << (6 - count)) & 63) as usize] as char);
    }
    out
}

/// One KRaft node (broker and controller) on loopback. Dropped, it is killed by pid.
struct Broker {
    classpath: String,
    dir: PathBuf,
    port: u16,
    child: Option<Child>,
}

impl Broker {
    fn start(classpath: String, dir: PathBuf) -> Broker {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("logs")).unwrap();
        let (port, controller) = (free_port(), free_port());
        let properties = format!(
            "process.roles=broker,controller\n\
             node.id=1\n\
             controller.quorum.voters=1@127.0.0.1:{controller}\n\
             controller.listener.names=CONTROLLER\n\
             listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}\n\
             advertised.listeners=PLAINTEXT://127.0.0.1:{port}\n\
             listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n\
             inter.broker.listener.name=PLAINTEXT\n\
             log.dirs={data}\n\
             num.partitions=1\n\
             default.replication.factor=1\n\
             offsets.topic.replication.factor=1\n\
             offsets.topic.num.partitions=1\n\
             transaction.state.log.replication.factor=1\n\
             transaction.state.log.min.isr=1\n\
             share.coordinator.state.topic.replication.factor=1\n\
             share.coordinator.state.topic.min.isr=1\n\
             group.initial.rebalance.delay.ms=0\n\
             min.insync.replicas=1\n\
             num.network.threads=2\n\
             num.io.threads=2\n\
             background.threads=2\n\
             log.cleaner.enable=false\n\
             controller.quorum.election.timeout.ms=1000\n\
             controller.quorum.fetch.timeout.ms=2000\n",
            data = dir.join("data").display()
        );
        std::fs::write(dir.join("server.properties"), properties).unwrap();
        let format = Command::new("java")
            .args(["-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"])
            .args(Broker::log_args(&dir))
            .args(["-cp", &classpath, "kafka.tools.StorageTool", "format", "-t"])
            .arg(cluster_id())
            .arg("-c")
            .arg(dir.join("server.properties"))
            .output()
            .expect("java runs");
        assert!(
            format.status.success(),
            "formatting the broker's storage failed:\n{}{}",
            String::from_utf8_lossy(&format.stdout),
            String::from_utf8_lossy(&format.stderr)
        );
        let mut broker = Broker {
            classpath,
            dir,
            port,
            child: None,
        };
        broker.launch();
        broker
    }

    fn log_args(dir: &Path) -> Vec<String> {
        vec![
            format!("-Dkafka.logs.dir={}", dir.join("logs").display()),
            format!(
                "-Dlog4j2.configurationFile={}",
                root().join("tests/e2e/server/log4j2.xml").display()
            ),
        ]
    }

    fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Starts the node on its data and ports, and waits until it listens.
    fn launch(&mut self) {
        let log = std::fs::File::create(self.dir.join("logs/stdout.log")).unwrap();
        let child = Command::new("java")
            .args([
                "-Xms64m",
                "-Xmx384m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
            ])
            .args(Broker::log_args(&self.dir))
            .args(["-cp", &self.classpath, "kafka.Kafka"])
            .arg(self.dir.join("server.properties"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("java starts");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let log = std::fs::read_to_string(self.dir.join("logs/server.log")).unwrap_or_default();
            if log.matches("Kafka Server started").count() > self.starts() {
                break;
            }
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!(
                    "the broker exited ({status}) while starting; logs in {}",
                    self.dir.display()
                );
            }
            assert!(
                Instant::now() < deadline,
                "the broker did not start in 90 s; logs in {}",
                self.dir.display()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        std::fs::write(self.dir.join("starts"), (self.starts() + 1).to_string()).unwrap();
    }

    /// How many times the node started before (its log is appended to).
    fn starts(&self) -> usize {
        std::fs::read_to_string(self.dir.join("starts"))
            .ok()
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Stops the node: TERM (a clean shutdown keeps its log for the restart), KILL after
    /// 20 s.
    fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

async fn create_topic(bootstrap: &str) {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    let topic = NewTopic::new(TOPIC, 1, TopicReplication::Fixed(1));
    let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(20)));
    for result in admin.create_topics([&topic], &options).await.unwrap() {
        result.unwrap();
    }
}

// ---------------------------------------------------------------------------------------
// The fake broker behind the guard, the guard, and its clients.

fn read_frame(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut size = [0u8; 4];
    stream.read_exact(&mut size)?;
    let len = i32::from_be_bytes(size);
    let mut frame = vec![0u8; 4 + len.max(0) as usize];
    frame[..4].copy_from_slice(&size);
    stream.read_exact(&mut frame[4..])?;
    Ok(frame)
}

/// "ok" with the request's correlation id.
fn ok(correlation_id: i32) -> Vec<u8> {
    let mut b = 6i32.to_be_bytes().to_vec();
    b.extend_from_slice(&correlation_id.to_be_bytes());
    b.extend_from_slice(b"ok");
    b
}

/// A fake broker answering every request "ok".
fn fake_broker() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            thread::spawn(move || {
                while let Ok(f) = read_frame(&mut conn) {
                    let id = i32::from_be_bytes(f[8..12].try_into().unwrap());
                    if conn.write_all(&ok(id)).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// `elect-leaders proxy --config FILE` in front of `upstream`: its address and its metrics
/// listener's, once printed.
struct Guard {
    child: Child,
    addr: SocketAddr,
    metrics: SocketAddr,
    dir: PathBuf,
}

impl Guard {
    fn start(dir: PathBuf, upstream: SocketAddr, config: &str) -> Guard {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("guard.toml"), config).unwrap();
        let stderr = std::fs::File::create(dir.join("stderr.log")).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_elect-leaders"))
            .arg("proxy")
            .arg("--config")
            .arg(dir.join("guard.toml"))
            .args(["--listen", "127.0.0.1:0", "--upstream"])
            .arg(upstream.to_string())
            .args(["--metrics-listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let (tx, rx) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        let kept = lines.clone();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                kept.lock().unwrap().push(line.clone());
                let _ = tx.send(line);
            }
        });
        let mut addr = None;
        let mut metrics = None;
        while addr.is_none() || metrics.is_none() {
            let Ok(line) = rx.recv_timeout(TIMEOUT) else {
                let _ = child.kill();
                panic!(
                    "the guard did not start: {}",
                    std::fs::read_to_string(dir.join("stderr.log")).unwrap_or_default()
                );
            };
            if let Some(rest) = line.strip_prefix("listening ") {
                addr = rest.split(' ').next().and_then(|a| a.parse().ok());
            }
            if let Some(rest) = line.strip_prefix("metrics ") {
                metrics = rest.trim().parse().ok();
            }
        }
        Guard {
            child,
            addr: addr.unwrap(),
            metrics: metrics.unwrap(),
            dir,
        }
    }

    fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(self.addr).unwrap();
        s.set_read_timeout(Some(TIMEOUT)).unwrap();
        s.set_nodelay(true).unwrap();
        s
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.join("stderr.log")).unwrap_or_default()
    }

    /// One HTTP GET of the metrics listener: status code and body.
    fn get(&self, path: &str) -> (u16, String) {
        let mut s = TcpStream::connect(self.metrics).unwrap();
        s.set_read_timeout(Some(TIMEOUT)).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        let code = head
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        (code, body.to_owned())
    }

    /// The value of the counter `name` (`elect_leaders_guard_` before it) at `/metrics`.
    fn metric(&self, name: &str) -> f64 {
        let (_, body) = self.get("/metrics");
        let full = format!("elect_leaders_guard_{name} ");
        body.lines()
            .find_map(|l| l.strip_prefix(&full))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {full} in:\n{body}"))
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An ElectLeaders v2 request for payments-0 and payments-1.
fn election(correlation_id: i32, election_type: ElectionType) -> Vec<u8> {
    let topics = [TopicPartitionsData::new(b"payments", &[0, 1])];
    ElectLeadersRequestData {
        correlation_id,
        client_id: Some(b"audit-test"),
        election_type,
        topic_partitions: Some(&topics),
        timeout_ms: 30_000,
        ..Default::default()
    }
    .encode_to_vec(2)
    .unwrap()
}

/// Sends an election and reads its answer: None for the fake broker's "ok" (forwarded),
/// else every partition's (error code, message) in the guard's answer.
fn elect(c: &mut TcpStream, id: i32, election_type: ElectionType) -> Option<Vec<(i16, String)>> {
    c.write_all(&election(id, election_type)).unwrap();
    let answer = read_frame(c).unwrap();
    if answer == ok(id) {
        return None;
    }
    let r = parse_response(&answer, 2).expect("an ElectLeaders answer");
    assert_eq!(r.correlation_id(), id);
    let mut out = Vec::new();
    for t in r.replica_election_results() {
        for p in t.partition_result() {
            let message = p
                .error_message_str()
                .unwrap()
                .unwrap_or_default()
                .to_owned();
            out.push((p.error_code().0, message));
        }
    }
    Some(out)
}

/// The topic's records of decisions (each guard's audit chain start left out).
fn read_topic(bootstrap: &str) -> Vec<kafka_elect_leaders_audit_kafka::Record> {
    let connection = Connection {
        bootstrap_servers: bootstrap.to_owned(),
        tls: None,
        sasl: None,
    };
    TopicReader::open(&connection, TOPIC, Duration::from_secs(20))
        .unwrap()
        .map(|r| r.unwrap())
        .filter(|r| {
            let event: Option<Value> = r
                .value
                .as_deref()
                .and_then(|v| serde_json::from_slice(v).ok());
            event.is_none_or(|e| e["data"]["event"] != "chain-start")
        })
        .collect()
}

fn config(bootstrap: &str, replica: &str, kafka: &str) -> String {
    format!(
        "[rules]\ndeny-unclean = true\n\n[audit-kafka]\nbootstrap-servers = \"{bootstrap}\"\n\
         topic = \"{TOPIC}\"\nreplica = \"{replica}\"\n{kafka}"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guard_audits_to_kafka_in_strict_and_batch_modes() {
    let state = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-audit-kafka");
    let Some(classpath) = classpath(&state) else {
        return;
    };
    let mut broker = Broker::start(classpath, state.join("broker"));
    let bootstrap = broker.bootstrap();
    create_topic(&bootstrap).await;
    let upstream = fake_broker();

    // Strict, a 2 s deadline; batch, with the smallest buffer.
    let strict = Guard::start(
        state.join("strict"),
        upstream,
        &config(
            &bootstrap,
            "guard-strict",
            "mode = \"blocking-strict\"\ndeadline = \"2s\"\n",
        ),
    );
    let batch = Guard::start(
        state.join("batch"),
        upstream,
        &config(
            &bootstrap,
            "guard-batch",
            "mode = \"batch\"\nmax-buffered-bytes = \"64KiB\"\n",
        ),
    );

    // Three elections forwarded once acknowledged, one refused by the rules.
    let mut c = strict.connect();
    for id in 1..4 {
        assert_eq!(
            elect(&mut c, id, ElectionType::PREFERRED),
            None,
            "forwarded"
        );
    }
    let refused = elect(&mut c, 4, ElectionType::UNCLEAN).expect("refused by deny-unclean");
    assert!(refused
        .iter()
        .all(|(code, _)| *code == ErrorCode::POLICY_VIOLATION.0));
    assert_eq!(strict.get("/readyz").0, 200, "{}", strict.get("/readyz").1);

    // On the topic: each decision an event keyed by the replica, its line as `data`.
    let deadline = Instant::now() + TIMEOUT;
    let records = loop {
        let records: Vec<_> = read_topic(&bootstrap)
            .into_iter()
            .filter(|r| r.key.as_deref() == Some(&b"guard-strict"[..]))
            .collect();
        if records.len() >= 4 || Instant::now() > deadline {
            break records;
        }
        thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(records.len(), 4, "{records:?}");
    for (n, record) in records.iter().enumerate() {
        let event: Value = serde_json::from_slice(record.value.as_deref().unwrap()).unwrap();
        assert_eq!(event["specversion"], "1.0");
        assert_eq!(event["source"], "urn:elect-leaders:guard:guard-strict");
        assert_eq!(event["subject"], "payments");
        let data = &event["data"];
        assert_eq!(data["correlation_id"], n as i64 + 1, "{event}");
        assert_eq!(data["client_id"], "audit-test");
        let verdict = if n < 3 { "forwarded" } else { "refused" };
        assert_eq!(data["verdict"], verdict, "{event}");
    }
    // The four decisions and the chain's start line.
    assert_eq!(strict.metric("audit_delivered_total"), 5.0);

    // The audit broker stopped: strict refuses within its deadline, and says it.
    broker.stop();
    let asked = Instant::now();
    let answer = elect(&mut c, 5, ElectionType::PREFERRED).expect("refused: not acknowledged");
    let took = asked.elapsed();
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(2 + 3),
        "{took:?}"
    );
    assert_eq!(answer.len(), 2);
    for (code, message) in &answer {
        assert_eq!(*code, ErrorCode::POLICY_VIOLATION.0);
        assert!(
            message.contains("its audit record was not acknowledged within 2000 ms"),
            "{message}"
        );
    }
    // The connection goes on, its requests in order.
    assert!(elect(&mut c, 6, ElectionType::UNCLEAN).is_some());
    let log = strict.stderr();
    assert!(
        log.contains(
            "ElectLeaders request (correlation id 5) refused: its audit record was not \
             acknowledged within 2000 ms"
        ),
        "{log}"
    );
    assert_eq!(strict.metric("audit_deadline_missed_total"), 1.0);
    assert_eq!(strict.metric("audit_unacknowledged_refusals_total"), 1.0);
    let (code, body) = strict.get("/readyz");
    assert_eq!(code, 503, "{body}");
    assert!(
        body.contains("not ready: audit sink not acknowledging"),
        "{body}"
    );

    // Batch: elections go on, and what the buffer has no room for is counted.
    let mut b = batch.connect();
    for id in 1..200 {
        assert_eq!(
            elect(&mut b, id, ElectionType::PREFERRED),
            None,
            "batch forwards"
        );
    }
    let not_queued = batch.metric("audit_not_queued_total");
    assert!(not_queued > 0.0, "nothing counted as not queued");
    assert!(batch.metric("audit_sink_buffered_bytes") <= 65536.0);
    assert_eq!(
        batch.get("/readyz").0,
        200,
        "batch never holds a decision back"
    );
}
