//! Issue 35, finding 5 (the audit part): the audit queue was bounded in lines, not bytes,
//! and one client could fill it, so that everyone's elections were refused as unaudited,
//! even under `--log-only`. An ElectLeaders audit line lists every partition of its
//! request: 4096 lines of large requests reached 1.6 GB while the log lagged. Now:
//!
//! - the queue is bounded in bytes (`--audit-queue-bytes`), each line counted by its
//!   allocation;
//! - each connection has a share of it (an eighth, at least 1 MiB): once its own lines
//!   fill it, its next decision waits for them to be written, and other connections'
//!   elections are audited and answered meanwhile;
//! - under `--log-only` a decision that cannot be audited is forwarded, never refused.
//!
//! The audit log is a named pipe: read slowly by a thread of the test (a log that lags but
//! writes), or held open and never read (a stopped log). The upstream is a **fake broker**
//! that answers every request with its correlation id and a marker, so that an answer from
//! the broker cannot be taken for one the guard wrote.

use std::io::Read;
use std::net::SocketAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use kafka_elect_leaders::{
    parse_response, ElectLeadersRequestData, ElectionType, EncodeRequestExt, TopicPartitionsData,
};
use kafka_elect_leaders_proxy::{AuditTarget, Config, Guard, Route};
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::{IncrementalAlterConfigsRequest, RequestHeader};
use kafka_protocol::protocol::{Encodable, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::timeout;

const MARKER: &[u8] = b"from the broker";

/// Answers every frame with its correlation id and [`MARKER`].
async fn answering_broker() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (mut r, mut w) = socket.into_split();
                loop {
                    let mut size = [0u8; 4];
                    if r.read_exact(&mut size).await.is_err() {
                        return;
                    }
                    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
                    if r.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    let mut answer = ((4 + MARKER.len()) as i32).to_be_bytes().to_vec();
                    answer.extend_from_slice(&body[4..8]);
                    answer.extend_from_slice(MARKER);
                    if w.write_all(&answer).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// ElectLeaders v2 (PREFERRED) for `partitions` of `topic`.
fn elect(correlation_id: i32, topic: &[u8], partitions: &[i32]) -> Vec<u8> {
    let topics = [TopicPartitionsData::new(topic, partitions)];
    ElectLeadersRequestData {
        correlation_id,
        client_id: Some(b"audit-queue-test"),
        election_type: ElectionType::PREFERRED,
        topic_partitions: Some(&topics),
        ..Default::default()
    }
    .encode_to_vec(2)
    .unwrap()
}

/// IncrementalAlterConfigs v1 turning unclean election on for `topic`: a leadership change.
fn unclean_on(correlation_id: i32, topic: &str) -> Vec<u8> {
    let body = IncrementalAlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(StrBytes::from_string(topic.into()))
            .with_configs(vec![AlterableConfig::default()
                .with_name(StrBytes::from_static_str("unclean.leader.election.enable"))
                .with_config_operation(0)
                .with_value(Some(StrBytes::from_static_str("true")))]),
    ]);
    let mut buf = BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(44)
        .with_request_api_version(1)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str("audit-queue-test")))
        .encode(&mut buf, 2)
        .unwrap();
    body.encode(&mut buf, 1).unwrap();
    let mut frame = (buf.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&buf);
    frame
}

async fn read_frame(client: &mut TcpStream) -> Vec<u8> {
    let mut size = [0u8; 4];
    timeout(Duration::from_secs(20), client.read_exact(&mut size))
        .await
        .expect("an answer within 20 s")
        .unwrap();
    let mut frame = size.to_vec();
    frame.resize(4 + i32::from_be_bytes(size) as usize, 0);
    client.read_exact(&mut frame[4..]).await.unwrap();
    frame
}

/// Whether `frame`, the answer to correlation id `id`, is the broker's; else the guard's
/// refusal, and why (for an ElectLeaders answer).
fn from_broker(frame: &[u8], id: i32) -> Result<(), String> {
    let mut want = id.to_be_bytes().to_vec();
    want.extend_from_slice(MARKER);
    if frame[4..] == want[..] {
        return Ok(());
    }
    let why = match parse_response(frame, 2) {
        Ok(r) => r
            .replica_election_results()
            .first()
            .and_then(|t| t.partition_result().first())
            .and_then(|p| p.error_message())
            .map(|m| String::from_utf8_lossy(m).into_owned()),
        Err(e) => Some(format!("an answer that does not parse: {e}")),
    };
    Err(why.unwrap_or_else(|| {
        format!(
            "the guard's refusal ({} bytes; no message for so many partitions)",
            frame.len()
        )
    }))
}

/// `GET /metrics` of a guard: the value of `metric` (a series without labels).
async fn scrape(addr: SocketAddr, metric: &str) -> u64 {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").await.unwrap();
    let mut text = String::new();
    timeout(Duration::from_secs(5), s.read_to_string(&mut text))
        .await
        .expect("the metrics within 5 s")
        .unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix(metric)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {metric} in:\n{text}"))
}

/// A named pipe in a directory of its own, removed when dropped, and its reading end
/// (opened first, so that the guard's open for writing does not wait).
struct Fifo {
    dir: PathBuf,
    path: PathBuf,
    reader: Option<std::fs::File>,
}

impl Fifo {
    fn new(name: &str) -> Fifo {
        let dir = std::env::temp_dir().join(format!("kel-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("audit.fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap();
        assert!(made.success(), "mkfifo");
        let reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(0o4000) // O_NONBLOCK: opening does not wait for a writer
            .open(&path)
            .unwrap();
        Fifo {
            dir,
            path,
            reader: Some(reader),
        }
    }

    /// Reads the pipe slowly (16 KiB every 20 ms) on a thread of its own, until `stop`:
    /// a log that lags and writes. Counts the lines read.
    fn read_slowly(&mut self, stop: Arc<AtomicBool>) -> Arc<AtomicUsize> {
        let mut reader = self.reader.take().unwrap();
        let lines = Arc::new(AtomicUsize::new(0));
        let counted = lines.clone();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 16 << 10];
            while !stop.load(Ordering::Relaxed) {
                if let Ok(n) = reader.read(&mut buf) {
                    let n = buf[..n].iter().filter(|&&b| b == b'\n').count();
                    counted.fetch_add(n, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            // Then everything, so that the guard's writer never stays blocked.
            loop {
                match reader.read(&mut buf) {
                    Ok(0) => return,
                    Ok(_) => {}
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        lines
    }
}

impl Drop for Fifo {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A guard on a runtime of its own, auditing to `fifo`, with its metrics served; its
/// listener and metrics addresses. Stopped when the returned sender is dropped.
fn guard(
    fifo: &Path,
    edit: impl FnOnce(&mut Config) + Send + 'static,
    broker: SocketAddr,
) -> (SocketAddr, SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let mut config = Config::default();
    config.routes.push(Route {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: broker,
    });
    config.audit = AuditTarget::File(fifo.to_owned());
    config.metrics_listen = Some("127.0.0.1:0".parse().unwrap());
    edit(&mut config);
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let guard = Guard::bind(config).await.unwrap();
            addr_tx
                .send((guard.routes()[0].listen, guard.metrics_addr().unwrap()))
                .unwrap();
            guard
                .run(async move {
                    let _ = stopped.await;
                })
                .await;
        });
    });
    let (listen, metrics) = addr_rx.recv().unwrap();
    (listen, metrics, stop)
}

/// The queue's bound in these tests: 8 MiB, so that a connection's share is 1 MiB.
const BOUND: usize = 8 << 20;
/// Partitions of each flooding request: 20,000 (an 80 KB request, an audit line of about
/// 130 KB).
const FLOOD_PARTITIONS: i32 = 20_000;
/// Requests each of the flooding client's connections sends, at most: far more lines than
/// the bound holds.
const FLOOD_REQUESTS: i32 = 400;
/// The flooding client's connections: enough to fill the queue were each given a share
/// of its own (as before 2026-12-04).
const FLOODER_CONNECTIONS: usize = 8;

/// One client floods elections of large requests, pipelined over eight connections, while
/// the audit log lags (read slowly): the bytes queued never pass the bound, and another
/// client's election is audited and answered by the broker all along, not refused. Before,
/// the queue held 4096 lines whatever their size (GBs of them), and once the flooder had
/// filled it every client's elections were refused as unaudited; then a share was a
/// connection's, and eight connections of one client filled the queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_flooding_client_neither_passes_the_byte_bound_nor_stalls_the_others() {
    let mut fifo = Fifo::new("audit-queue-flood");
    let broker = answering_broker().await;
    let (listen, metrics, _stop) = guard(&fifo.path, |c| c.audit_queue_bytes = BOUND, broker);
    let reading = Arc::new(AtomicBool::new(false));
    let lines_read = fifo.read_slowly(reading.clone());

    // The flooder: eight connections from one address, requests written as fast as the
    // guard takes them, answers read apart.
    let sent = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..FLOODER_CONNECTIONS {
        let partitions: Vec<i32> = (0..FLOOD_PARTITIONS).collect();
        let flooder = TcpStream::connect(listen).await.unwrap();
        let (mut flood_r, mut flood_w) = flooder.into_split();
        let counted = sent.clone();
        tasks.push(tokio::spawn(async move {
            for id in 0..FLOOD_REQUESTS {
                let frame = elect(id, b"orders", &partitions);
                if flood_w.write_all(&frame).await.is_err() {
                    return;
                }
                counted.fetch_add(1, Ordering::Relaxed);
            }
            // Held open until the test ends.
            std::future::pending::<()>().await;
            drop(flood_w);
        }));
        tasks.push(tokio::spawn(async move {
            let mut buf = vec![0u8; 64 << 10];
            while matches!(flood_r.read(&mut buf).await, Ok(n) if n > 0) {}
        }));
    }

    // The flooder fills its share of the queue first.
    let share = 1 << 20;
    let mut peak = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while peak < share {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the flood never filled a share: {peak} bytes queued at most"
        );
        peak = peak.max(scrape(metrics, "elect_leaders_guard_audit_queue_bytes").await);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    // Meanwhile another client (another address) elects, one request at a time, requests
    // as large as the flooder's (a queue the flooder keeps full has no room for them):
    // each is audited and let through. The queue is watched all along.
    let large: Vec<i32> = (0..FLOOD_PARTITIONS).collect();
    let other = tokio::net::TcpSocket::new_v4().unwrap();
    other.bind("127.0.0.2:0".parse().unwrap()).unwrap();
    let mut other = other.connect(listen).await.unwrap();
    for id in 0..20 {
        let id = 10_000 + id;
        other
            .write_all(&elect(id, b"orders", &large))
            .await
            .unwrap();
        if let Err(why) = from_broker(&read_frame(&mut other).await, id) {
            panic!("another client's election refused while one client floods: {why}");
        }
        for _ in 0..10 {
            let queued = scrape(metrics, "elect_leaders_guard_audit_queue_bytes").await;
            peak = peak.max(queued);
            assert!(
                queued <= BOUND as u64,
                "{queued} bytes of audit lines queued, past the bound of {BOUND}"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    let flooded = sent.load(Ordering::Relaxed);
    println!(
        "peak queued {peak} bytes (bound {BOUND}); the flooder had sent {flooded} requests; \
         {} lines read",
        lines_read.load(Ordering::Relaxed)
    );
    reading.store(true, Ordering::Relaxed);
    for task in tasks {
        task.abort();
    }
}

/// Under `--log-only`, with an audit log nobody reads: every election and every
/// leadership change is forwarded to the broker, none refused, and those that could not
/// be audited are counted. Before, once the queue was full they were refused as unaudited
/// (`the audit log is stalled`), though `--log-only` promises to refuse nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_only_forwards_what_it_cannot_audit() {
    let fifo = Fifo::new("audit-queue-log-only");
    let broker = answering_broker().await;
    let (listen, metrics, _stop) = guard(
        &fifo.path,
        |c| {
            c.audit_queue_bytes = 64 << 10;
            c.policy.log_only = true;
            c.policy.deny_unclean = true;
            c.policy.protected_topics.insert(b"payments"[..].into());
        },
        broker,
    );
    let mut client = TcpStream::connect(listen).await.unwrap();
    // Far more than the pipe (64 KiB) and the queue (64 KiB) hold: the log stalls early.
    let partitions: Vec<i32> = (0..50).collect();
    for id in 0..600 {
        let frame = if id % 3 == 2 {
            unclean_on(id, "payments")
        } else {
            elect(id, b"payments", &partitions)
        };
        client.write_all(&frame).await.unwrap();
        if let Err(why) = from_broker(&read_frame(&mut client).await, id) {
            panic!("request {id} refused under --log-only: {why}");
        }
    }
    let unaudited = scrape(
        metrics,
        "elect_leaders_guard_audit_forwarded_unaudited_total",
    )
    .await;
    assert!(unaudited > 0, "the log never stalled: nothing to prove");
    drop(fifo);
}
