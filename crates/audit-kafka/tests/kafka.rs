//! The sink and the reader against a real Apache Kafka (4.4.0, one KRaft node on
//! loopback, on free ports, its classpath resolved by Maven as `tests/e2e/cluster.sh`
//! resolves it): events of each mode read back in order, keyed, with their CloudEvents
//! attributes and their lines byte for byte; then, with the broker stopped, blocking-strict
//! ends at its deadline and batch counts what did not fit, which the next event reports
//! once the broker is back.
//!
//! Needs `java` and `mvn` on PATH (and Maven Central, the first time): without them it
//! prints one line saying it was skipped and passes; `KEL_SKIP_JAVA=1` skips on purpose.
//! `.ci/run` always has them.

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kafka_elect_leaders_audit_kafka::{
    Connection, Error, KafkaAudit, Mode, Outcome, Settings, TopicReader, UNDELIVERED_ATTRIBUTE,
};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::ClientConfig;
use serde_json::Value;

const TOPIC: &str = "elect-leaders-audit";
const PARTITIONS: i32 = 3;
const EVENTS_PER_MODE: usize = 20;

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
        say("audit-kafka/tests/kafka.rs: skipped: KEL_SKIP_JAVA is set");
        return None;
    }
    if !have("java", "-version") || !have("mvn", "-v") {
        say("audit-kafka/tests/kafka.rs: skipped: needs `java` (17+) and `mvn` on PATH to run a Kafka broker");
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
    let topic = NewTopic::new(TOPIC, PARTITIONS, TopicReplication::Fixed(1));
    let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(20)));
    let results = admin.create_topics([&topic], &options).await.unwrap();
    for result in results {
        result.unwrap();
    }
}

fn settings(bootstrap: &str, replica: &str) -> Settings {
    let mut settings = Settings::new(bootstrap, TOPIC, replica);
    settings.delivery_timeout = Duration::from_secs(60);
    settings
}

/// The audit line of decision `n` of `replica`: an ElectLeaders line as the guard writes
/// it, with an escape and a number whose spelling a re-serialisation would change.
fn line(replica: &str, mode: &str, n: usize) -> String {
    format!(
        "{{\"time\":\"2025-06-0{}T10:00:00.{n:03}Z\",\"client\":\"127.0.0.1:40000\",\
         \"client_id\":\"tool\\u202e\",\"version\":2,\"election_type\":\"PREFERRED\",\
         \"partitions\":[{{\"topic\":\"t-{replica}\",\"partitions\":[{n}]}}],\
         \"verdict\":\"allowed\",\"rules\":[],\"mode\":\"{mode}\",\"n\":{n},\"ratio\":1.50}}\n",
        1 + n % 9
    )
}

fn read_all(bootstrap: &str) -> Vec<kafka_elect_leaders_audit_kafka::Record> {
    let connection = Connection {
        bootstrap_servers: bootstrap.to_owned(),
        tls: None,
        sasl: None,
    };
    TopicReader::open(&connection, TOPIC, Duration::from_secs(20))
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_records_reach_kafka_and_come_back() {
    let state = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("audit-kafka");
    let Some(classpath) = classpath(&state) else {
        return;
    };
    let started = Instant::now();
    let mut broker = Broker::start(classpath, state.join("broker"));
    let bootstrap = broker.bootstrap();
    create_topic(&bootstrap).await;

    // Two replicas, every mode.
    let a = KafkaAudit::connect(settings(&bootstrap, "guard-a")).unwrap();
    let b = KafkaAudit::connect(settings(&bootstrap, "guard-b")).unwrap();
    assert_eq!(
        a.check_topic(Duration::from_secs(20)).await.unwrap(),
        PARTITIONS as usize
    );
    let mut sent: Vec<(String, String)> = Vec::new();
    let modes = [
        ("batch", Mode::Batch),
        ("blocking", Mode::Blocking),
        (
            "strict",
            Mode::BlockingStrict {
                deadline: Duration::from_secs(20),
            },
        ),
    ];
    for (name, mode) in modes {
        for n in 0..EVENTS_PER_MODE {
            for audit in [&a, &b] {
                let text = line(audit.replica(), name, n);
                let outcome = audit.record(text.as_bytes(), mode).await.unwrap();
                match (mode, outcome) {
                    (Mode::Batch, Outcome::Queued) => {}
                    (Mode::Batch, other) => panic!("batch: {other:?}"),
                    (_, Outcome::Acknowledged(_)) => {}
                    (_, other) => panic!("{name}: {other:?}"),
                }
                sent.push((audit.replica().to_owned(), text));
            }
        }
    }
    a.flush(Duration::from_secs(20)).await.unwrap();
    b.flush(Duration::from_secs(20)).await.unwrap();
    for audit in [&a, &b] {
        let stats = audit.stats();
        assert_eq!(stats.acknowledged, 3 * EVENTS_PER_MODE as u64, "{stats:?}");
        assert_eq!(stats.undelivered(), 0, "{stats:?}");
    }

    let records = read_all(&bootstrap);
    assert_eq!(records.len(), sent.len());
    for replica in ["guard-a", "guard-b"] {
        let mine: Vec<_> = records
            .iter()
            .filter(|r| r.key.as_deref() == Some(replica.as_bytes()))
            .collect();
        let expected: Vec<&String> = sent
            .iter()
            .filter(|(r, _)| r == replica)
            .map(|(_, l)| l)
            .collect();
        assert_eq!(mine.len(), expected.len(), "{replica}");
        // Keyed by replica: one partition, in the order sent.
        assert!(mine.iter().all(|r| r.partition == mine[0].partition));
        assert!(mine.windows(2).all(|w| w[0].offset < w[1].offset));
        let mut ids = std::collections::BTreeSet::new();
        for (record, text) in mine.iter().zip(expected) {
            let value = record.value.as_deref().unwrap();
            let event: Value = serde_json::from_slice(value).unwrap();
            assert_eq!(event["specversion"], "1.0");
            assert_eq!(
                event["source"],
                format!("urn:elect-leaders:guard:{replica}")
            );
            assert_eq!(event["type"], "io.github.elect-leaders.audit.decision");
            assert_eq!(event["datacontenttype"], "application/json");
            assert_eq!(event["subject"], format!("t-{replica}"));
            let line: Value = serde_json::from_str(text).unwrap();
            assert_eq!(event["time"], line["time"]);
            assert!(event.get(UNDELIVERED_ATTRIBUTE).is_none());
            assert!(ids.insert(event["id"].as_str().unwrap().to_owned()));
            // The line's bytes, as they were: the last member, before the closing brace.
            let data = format!(",\"data\":{}}}", text.trim_end());
            assert!(
                value.ends_with(data.as_bytes()),
                "{}",
                String::from_utf8_lossy(value)
            );
        }
    }

    // A third replica with a small buffer, for batch mode with the broker down.
    let mut small = settings(&bootstrap, "guard-c");
    small.max_buffered_bytes = 8 * 1024;
    let c = KafkaAudit::connect(small).unwrap();
    c.record(line("guard-c", "blocking", 0).as_bytes(), Mode::Blocking)
        .await
        .unwrap();

    broker.stop();

    let deadline = Duration::from_secs(2);
    let asked = Instant::now();
    let answer = a
        .record(
            line("guard-a", "strict", 99).as_bytes(),
            Mode::BlockingStrict { deadline },
        )
        .await;
    let took = asked.elapsed();
    assert_eq!(answer, Err(Error::Deadline(deadline)));
    assert!(
        took >= deadline && took < deadline + Duration::from_secs(10),
        "{took:?}"
    );

    let (mut queued, mut full) = (0u64, 0u64);
    for n in 1..60 {
        match c
            .record(line("guard-c", "batch", n).as_bytes(), Mode::Batch)
            .await
        {
            Ok(Outcome::Queued) => queued += 1,
            Err(Error::Full) => full += 1,
            other => panic!("batch with the broker down: {other:?}"),
        }
    }
    assert!(queued > 0 && full > 0, "queued {queued}, full {full}");
    let stats = c.stats();
    assert_eq!(stats.not_queued, full, "{stats:?}");
    assert_eq!(stats.unreported, full, "{stats:?}");

    broker.launch();
    c.flush(Duration::from_secs(40)).await.unwrap();
    let last = line("guard-c", "blocking", 100);
    c.record(last.as_bytes(), Mode::Blocking).await.unwrap();
    assert_eq!(c.stats().unreported, 0);
    assert_eq!(c.stats().acknowledged, 1 + queued + 1);

    let records = read_all(&bootstrap);
    let of_c: Vec<Value> = records
        .iter()
        .filter(|r| r.key.as_deref() == Some(b"guard-c".as_slice()))
        .map(|r| serde_json::from_slice(r.value.as_deref().unwrap()).unwrap())
        .collect();
    assert_eq!(of_c.len() as u64, 1 + queued + 1);
    let reported: Vec<&Value> = of_c
        .iter()
        .filter(|e| e.get(UNDELIVERED_ATTRIBUTE).is_some())
        .collect();
    assert_eq!(
        reported.len(),
        1,
        "one event reports the records not queued"
    );
    assert_eq!(reported[0][UNDELIVERED_ATTRIBUTE], full);
    assert_eq!(reported[0]["data"]["n"], 100);
    say(&format!(
        "audit-kafka/tests/kafka.rs: {} records read back, strict deadline after {took:?}, \
         {full} not queued and reported; {:?} in all",
        records.len(),
        started.elapsed()
    ));
    drop(broker);
}
