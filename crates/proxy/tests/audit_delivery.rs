//! Issue 45, item 1: the audit log on a sink that acknowledges each line
//! (`AuditTarget::Delivered`), in its three modes, with a fake acknowledging sink whose
//! acknowledgements the test gives or withholds: the faults a real Kafka makes only slowly
//! (a record never acknowledged, one acknowledged late). The real one:
//! `crates/cli/tests/audit_kafka.rs`.
//!
//! Blocking-strict holds an election until its record is acknowledged and refuses it with
//! POLICY_VIOLATION at the deadline, its refusal audited after it; the connection's later
//! requests stay in order behind it; `/readyz` says not ready meanwhile; batch holds
//! nothing; the sink is flushed at stop.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kafka_elect_leaders::{
    parse_response, ElectLeadersRequestData, ElectionType, EncodeRequestExt, ErrorCode,
    TopicPartitionsData,
};
use kafka_elect_leaders_proxy::audit::{
    Acked, Deliver, DeliveryMode, DeliveryStats, DeliveryTarget,
};
use kafka_elect_leaders_proxy::{AuditTarget, Config, Guard, Policy, Route};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// What the fake sink does with each line.
#[derive(Clone, Copy)]
enum Acks {
    /// Acknowledged this long after it is handed over.
    After(Duration),
    /// Never acknowledged (a broker gone).
    Never,
}

/// A fake acknowledging sink: keeps every line, acknowledges as told, counts flushes.
struct FakeAckSink {
    acks: Acks,
    lines: Mutex<Vec<String>>,
    flushed: AtomicUsize,
}

impl FakeAckSink {
    fn new(acks: Acks) -> Arc<FakeAckSink> {
        Arc::new(FakeAckSink {
            acks,
            lines: Mutex::default(),
            flushed: AtomicUsize::new(0),
        })
    }

    /// The decisions' lines delivered (the audit chain's start line left out).
    fn lines(&self) -> Vec<serde_json::Value> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|l| l["event"] != "chain-start")
            .collect()
    }

    /// [`FakeAckSink::lines`] once there are `n` (the writer thread hands a refusal's
    /// second record to the sink after the client has its answer), or after 5 s.
    async fn lines_when(&self, n: usize) -> Vec<serde_json::Value> {
        for _ in 0..100 {
            let lines = self.lines();
            if lines.len() >= n {
                return lines;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.lines()
    }
}

impl Deliver for FakeAckSink {
    fn send(&self, line: &[u8]) -> Result<Acked, String> {
        self.lines
            .lock()
            .unwrap()
            .push(String::from_utf8(line.to_vec()).unwrap());
        Ok(match self.acks {
            Acks::After(delay) => Box::pin(async move {
                tokio::time::sleep(delay).await;
                Ok(())
            }),
            Acks::Never => Box::pin(std::future::pending()),
        })
    }

    fn flush(&self, _: Duration) -> Result<(), String> {
        self.flushed.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn stats(&self) -> DeliveryStats {
        DeliveryStats::default()
    }

    fn max_buffered_bytes(&self) -> usize {
        1 << 20
    }

    fn describe(&self) -> String {
        "a fake acknowledging sink".into()
    }
}

/// A broker that answers each request with its correlation id alone, at once.
async fn broker() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                loop {
                    let mut size = [0u8; 4];
                    if socket.read_exact(&mut size).await.is_err() {
                        return;
                    }
                    let mut request = vec![0u8; i32::from_be_bytes(size) as usize];
                    if socket.read_exact(&mut request).await.is_err() {
                        return;
                    }
                    let mut answer = 4i32.to_be_bytes().to_vec();
                    answer.extend_from_slice(&request[4..8]);
                    if socket.write_all(&answer).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

struct Running {
    listen: SocketAddr,
    metrics: SocketAddr,
    stop: oneshot::Sender<()>,
    run: tokio::task::JoinHandle<()>,
}

async fn guard(sink: Arc<FakeAckSink>, mode: DeliveryMode) -> Running {
    let mut policy = Policy {
        deny_unclean: true,
        ..Policy::default()
    };
    // A leadership rule: configuration changes are read and decided too.
    policy.protected_topics.insert(b"orders"[..].into());
    let mut config = Config {
        policy,
        ..Config::default()
    };
    config.routes.push(Route {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: broker().await,
    });
    config.metrics_listen = Some("127.0.0.1:0".parse().unwrap());
    config.audit = AuditTarget::Delivered(DeliveryTarget {
        sink,
        leadership: mode,
    });
    let guard = Guard::bind(config).await.unwrap();
    let listen = guard.routes()[0].listen;
    let metrics = guard.metrics_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let run = tokio::spawn(guard.run(async {
        let _ = stopped.await;
    }));
    Running {
        listen,
        metrics,
        stop,
        run,
    }
}

fn election(correlation_id: i32, election_type: ElectionType) -> Vec<u8> {
    let topics = [TopicPartitionsData::new(b"payments", &[0, 1])];
    ElectLeadersRequestData {
        correlation_id,
        client_id: Some(b"t"),
        election_type,
        topic_partitions: Some(&topics),
        timeout_ms: 30_000,
        ..Default::default()
    }
    .encode_to_vec(2)
    .unwrap()
}

async fn read_frame(s: &mut TcpStream) -> Vec<u8> {
    let mut size = [0u8; 4];
    s.read_exact(&mut size).await.unwrap();
    let mut frame = size.to_vec();
    frame.resize(4 + i32::from_be_bytes(size) as usize, 0);
    s.read_exact(&mut frame[4..]).await.unwrap();
    frame
}

/// None: the broker's answer (forwarded); else each partition's (code, message).
fn refusal(frame: &[u8], id: i32) -> Option<Vec<(i16, String)>> {
    if frame.len() == 8 {
        assert_eq!(frame[4..8], id.to_be_bytes());
        return None;
    }
    let r = parse_response(frame, 2).unwrap();
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

async fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).await.unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, body.to_owned())
}

/// Never acknowledged: refused at the deadline, the refusal audited after the record
/// that came late; the request pipelined behind it answered after it; not ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_refuses_an_election_whose_record_is_not_acknowledged() {
    let sink = FakeAckSink::new(Acks::Never);
    let deadline = Duration::from_millis(300);
    let g = guard(sink.clone(), DeliveryMode::BlockingStrict { deadline }).await;
    let mut c = TcpStream::connect(g.listen).await.unwrap();
    let asked = Instant::now();
    // Two requests at once: the election, then an unclean one (refused by the rules, so
    // not held): answered in order.
    let mut both = election(1, ElectionType::PREFERRED);
    both.extend(election(2, ElectionType::UNCLEAN));
    c.write_all(&both).await.unwrap();
    let first = refusal(&read_frame(&mut c).await, 1).expect("refused, not forwarded");
    let took = asked.elapsed();
    assert!(took >= deadline && took < deadline * 10, "{took:?}");
    assert_eq!(first.len(), 2);
    for (code, message) in &first {
        assert_eq!(*code, ErrorCode::POLICY_VIOLATION.0);
        assert!(
            message.contains("its audit record was not acknowledged within 300 ms"),
            "{message}"
        );
    }
    assert!(refusal(&read_frame(&mut c).await, 2).is_some());

    let lines = sink.lines_when(3).await;
    let verdicts: Vec<_> = lines
        .iter()
        .map(|l| (l["correlation_id"].as_i64().unwrap(), l["verdict"].clone()))
        .collect();
    assert_eq!(
        verdicts,
        [
            (1, "forwarded".into()),
            (1, "refused".into()),
            (2, "refused".into())
        ],
        "{lines:?}"
    );
    assert!(
        lines[1]["rules"].to_string().contains("audit-log"),
        "{}",
        lines[1]
    );

    let (code, body) = http_get(g.metrics, "/readyz").await;
    assert_eq!(code, 503, "{body}");
    assert!(
        body.contains("not ready: audit sink not acknowledging"),
        "{body}"
    );
    let (_, metrics) = http_get(g.metrics, "/metrics").await;
    assert!(
        metrics.contains("elect_leaders_guard_audit_deadline_missed_total 1\n"),
        "{metrics}"
    );

    let _ = g.stop.send(());
    g.run.await.unwrap();
    assert_eq!(sink.flushed.load(Ordering::SeqCst), 1, "flushed at stop");
}

/// Acknowledged within the deadline: forwarded once acknowledged, not before; ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_forwards_an_election_once_acknowledged() {
    let sink = FakeAckSink::new(Acks::After(Duration::from_millis(200)));
    let g = guard(
        sink.clone(),
        DeliveryMode::BlockingStrict {
            deadline: Duration::from_secs(5),
        },
    )
    .await;
    let mut c = TcpStream::connect(g.listen).await.unwrap();
    let asked = Instant::now();
    c.write_all(&election(7, ElectionType::PREFERRED))
        .await
        .unwrap();
    assert_eq!(refusal(&read_frame(&mut c).await, 7), None, "forwarded");
    assert!(
        asked.elapsed() >= Duration::from_millis(200),
        "held for its ack"
    );
    assert_eq!(http_get(g.metrics, "/readyz").await.0, 200);
    assert_eq!(sink.lines().len(), 1);
}

/// IncrementalAlterConfigs v1 (flexible) setting `retention.ms` on topic `logs`: a change
/// the leadership rules let through.
fn alter(correlation_id: i32) -> Vec<u8> {
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    use kafka_protocol::messages::{IncrementalAlterConfigsRequest, RequestHeader};
    use kafka_protocol::protocol::{Encodable, StrBytes};
    let body = IncrementalAlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(StrBytes::from_static_str("logs"))
            .with_configs(vec![AlterableConfig::default()
                .with_name(StrBytes::from_static_str("retention.ms"))
                .with_config_operation(0)
                .with_value(Some(StrBytes::from_static_str("1000")))]),
    ]);
    let mut buf = bytes::BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(44)
        .with_request_api_version(1)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str("t")))
        .encode(&mut buf, 2)
        .unwrap();
    body.encode(&mut buf, 1).unwrap();
    let mut frame = (buf.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&buf);
    frame
}

/// A configuration change let through by the rules, its record never acknowledged:
/// refused at the deadline with the API's own refusal, its refusal audited after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_refuses_a_configuration_change_whose_record_is_not_acknowledged() {
    use kafka_protocol::messages::{IncrementalAlterConfigsResponse, ResponseHeader};
    use kafka_protocol::protocol::Decodable;
    let sink = FakeAckSink::new(Acks::Never);
    let deadline = Duration::from_millis(300);
    let g = guard(sink.clone(), DeliveryMode::BlockingStrict { deadline }).await;
    let mut c = TcpStream::connect(g.listen).await.unwrap();
    let asked = Instant::now();
    c.write_all(&alter(3)).await.unwrap();
    let frame = read_frame(&mut c).await;
    assert!(asked.elapsed() >= deadline);
    let mut body = bytes::Bytes::from(frame[4..].to_vec());
    assert_eq!(
        ResponseHeader::decode(&mut body, 1).unwrap().correlation_id,
        3
    );
    let answer = IncrementalAlterConfigsResponse::decode(&mut body, 1).unwrap();
    assert_eq!(
        answer.responses[0].error_code,
        ErrorCode::POLICY_VIOLATION.0
    );
    let message = answer.responses[0]
        .error_message
        .as_deref()
        .unwrap()
        .to_owned();
    assert!(
        message.contains("its audit record was not acknowledged within 300 ms"),
        "{message}"
    );
    let lines = sink.lines_when(2).await;
    let verdicts: Vec<_> = lines.iter().map(|l| l["verdict"].clone()).collect();
    assert_eq!(verdicts, ["forwarded", "refused"], "{lines:?}");
    assert_eq!(lines[1]["api_name"], "IncrementalAlterConfigs");
}

/// Batch: forwarded at once, acknowledged or not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_holds_nothing_back() {
    let sink = FakeAckSink::new(Acks::Never);
    let g = guard(sink.clone(), DeliveryMode::Batch).await;
    let mut c = TcpStream::connect(g.listen).await.unwrap();
    for id in 1..20 {
        c.write_all(&election(id, ElectionType::PREFERRED))
            .await
            .unwrap();
        assert_eq!(refusal(&read_frame(&mut c).await, id), None);
    }
    assert_eq!(http_get(g.metrics, "/readyz").await.0 / 100, 2);
}
