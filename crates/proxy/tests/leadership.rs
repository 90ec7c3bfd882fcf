//! Issue 35, findings 1 and 2, through a running guard: requests other than ElectLeaders
//! that can change partition leadership are decided by the leadership-change policy. A
//! refused one is answered by the guard (POLICY_VIOLATION, each API's own answer) and never
//! reaches the broker; an allowed one does, its answer back in request order; an
//! inter-broker API, a request the guard cannot read and a version it does not know close
//! the connection without reaching the broker. The upstream is a **fake broker** that
//! records the API keys it receives and answers each request with its correlation id and a
//! marker; `tests/e2e/test_leadership.py` proves the same on a real cluster, where the
//! refused changes are checked not to have taken effect.

use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use kafka_elect_leaders_proxy::{AuditTarget, Config, Guard, Route};
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::{
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, RequestHeader, ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{timeout, Duration};

const MARKER: &[u8] = b"from the broker";

/// A fake broker: records each request's API key and answers with the correlation id and
/// [`MARKER`].
async fn broker() -> (std::net::SocketAddr, Arc<Mutex<Vec<i16>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let keys = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let keys = keys.clone();
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
                    keys.lock()
                        .unwrap()
                        .push(i16::from_be_bytes([request[0], request[1]]));
                    let mut answer = ((4 + MARKER.len()) as i32).to_be_bytes().to_vec();
                    answer.extend_from_slice(&request[4..8]);
                    answer.extend_from_slice(MARKER);
                    if socket.write_all(&answer).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, seen)
}

async fn guard(edit: impl FnOnce(&mut Config)) -> (std::net::SocketAddr, Arc<Mutex<Vec<i16>>>) {
    let (listen, seen, _) = guard_with_metrics(edit).await;
    (listen, seen)
}

/// A guard in front of the fake broker, with its metrics listener.
async fn guard_with_metrics(
    edit: impl FnOnce(&mut Config),
) -> (
    std::net::SocketAddr,
    Arc<Mutex<Vec<i16>>>,
    std::net::SocketAddr,
) {
    let (upstream, seen) = broker().await;
    let mut config = Config::default();
    config.routes.push(Route {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream,
    });
    config.metrics_listen = Some("127.0.0.1:0".parse().unwrap());
    edit(&mut config);
    let guard = Guard::bind(config).await.unwrap();
    let listen = guard.routes()[0].listen;
    let metrics = guard.metrics_addr().unwrap();
    tokio::spawn(guard.run(std::future::pending()));
    (listen, seen, metrics)
}

/// `GET /metrics`: the whole text.
async fn scrape(addr: std::net::SocketAddr) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").await.unwrap();
    let mut text = String::new();
    timeout(Duration::from_secs(5), s.read_to_string(&mut text))
        .await
        .expect("the metrics within 5 s")
        .unwrap();
    text
}

/// IncrementalAlterConfigs v1 (flexible) setting `key=value` on topic `topic`.
fn alter(correlation_id: i32, topic: &str, key: &str, value: &str) -> Vec<u8> {
    let body = IncrementalAlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(StrBytes::from_string(topic.into()))
            .with_configs(vec![AlterableConfig::default()
                .with_name(StrBytes::from_string(key.into()))
                .with_config_operation(0)
                .with_value(Some(StrBytes::from_string(value.into())))]),
    ]);
    let mut buf = BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(44)
        .with_request_api_version(1)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str("leadership-test")))
        .encode(&mut buf, 2)
        .unwrap();
    body.encode(&mut buf, 1).unwrap();
    let mut frame = (buf.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&buf);
    frame
}

/// A request frame with this header and a raw body (header v1: no tagged fields).
fn raw(api_key: i16, version: i16, correlation_id: i32, body: &[u8]) -> Vec<u8> {
    let mut request = api_key.to_be_bytes().to_vec();
    request.extend(version.to_be_bytes());
    request.extend(correlation_id.to_be_bytes());
    request.extend((-1i16).to_be_bytes());
    request.extend_from_slice(body);
    let mut frame = (request.len() as i32).to_be_bytes().to_vec();
    frame.extend(request);
    frame
}

async fn read_frame(client: &mut TcpStream) -> Option<Vec<u8>> {
    let mut size = [0u8; 4];
    match timeout(Duration::from_secs(10), client.read_exact(&mut size)).await {
        Ok(Ok(_)) => {}
        Ok(Err(_)) => return None,
        Err(_) => panic!("no answer and no close within 10 s"),
    }
    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
    client.read_exact(&mut body).await.ok()?;
    Some(body)
}

fn protect_payments(config: &mut Config) {
    config.policy.deny_unclean = true;
    config
        .policy
        .protected_topics
        .insert(b"payments"[..].into());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_changes_are_answered_by_the_guard_and_allowed_ones_reach_the_broker_in_order() {
    let dir = std::env::temp_dir().join(format!("kel-leadership-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let audit = dir.join("audit.jsonl");
    let _ = std::fs::remove_file(&audit);
    let path = audit.clone();
    let (listen, seen, metrics) = guard_with_metrics(move |config| {
        protect_payments(config);
        config.audit = AuditTarget::File(path);
    })
    .await;
    let mut client = TcpStream::connect(listen).await.unwrap();
    // Pipelined: refused, allowed, refused.
    let mut frames = alter(1, "logs", "unclean.leader.election.enable", "true");
    frames.extend(alter(2, "logs", "retention.ms", "1000"));
    frames.extend(alter(3, "payments", "min.insync.replicas", "1"));
    client.write_all(&frames).await.unwrap();

    let first = read_frame(&mut client).await.unwrap();
    let mut body = Bytes::from(first);
    assert_eq!(
        ResponseHeader::decode(&mut body, 1).unwrap().correlation_id,
        1
    );
    let answer = IncrementalAlterConfigsResponse::decode(&mut body, 1).unwrap();
    assert_eq!(answer.responses[0].error_code, 44);
    assert_eq!(answer.responses[0].resource_name.as_str(), "logs");

    let second = read_frame(&mut client).await.unwrap();
    assert_eq!(&second[..4], &2i32.to_be_bytes());
    assert_eq!(
        &second[4..],
        MARKER,
        "the allowed change's answer is the broker's"
    );

    let third = read_frame(&mut client).await.unwrap();
    let mut body = Bytes::from(third);
    assert_eq!(
        ResponseHeader::decode(&mut body, 1).unwrap().correlation_id,
        3
    );
    let answer = IncrementalAlterConfigsResponse::decode(&mut body, 1).unwrap();
    assert_eq!(answer.responses[0].error_code, 44);
    assert!(answer.responses[0]
        .error_message
        .as_deref()
        .unwrap()
        .contains("min.insync.replicas"));

    // Only the allowed change reached the broker.
    assert_eq!(*seen.lock().unwrap(), [44]);
    // Each decision has its audit line (the writer thread may lag a moment).
    let mut lines = Vec::new();
    for _ in 0..100 {
        lines = std::fs::read_to_string(&audit)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            // The decisions' lines: not the audit chain's start, which each start writes.
            .filter(|l| l["event"] != "chain-start")
            .collect();
        if lines.len() == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let verdicts: Vec<_> = lines
        .iter()
        .map(|l| {
            (
                l["correlation_id"].as_i64().unwrap(),
                l["verdict"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            (1, "refused".into()),
            (2, "forwarded".into()),
            (3, "refused".into())
        ]
    );
    assert_eq!(lines[0]["api_name"], "IncrementalAlterConfigs");
    assert_eq!(lines[0]["rules"], serde_json::json!(["deny-unclean"]));
    assert_eq!(lines[2]["rules"], serde_json::json!(["protect-topic"]));
    assert_eq!(
        lines[0]["changes"][0]["changes"],
        serde_json::json!(["unclean.leader.election.enable=true"])
    );
    // Counted by API and verdict.
    let text = scrape(metrics).await;
    for (verdict, n) in [("refused", 2), ("forwarded", 1)] {
        let series = format!(
            "elect_leaders_guard_leadership_changes_total{{api=\"IncrementalAlterConfigs\",verdict=\"{verdict}\"}} {n}"
        );
        assert!(text.lines().any(|l| l == series), "no {series} in:\n{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_guard_cannot_read_or_must_not_forward_closes_the_connection() {
    let (listen, seen) = guard(protect_payments).await;
    let cases: Vec<(&str, Vec<u8>)> = vec![
        // AlterPartition (56): a broker's request to its controller.
        ("inter-broker", raw(56, 0, 1, &[0, 0, 0, 1])),
        // DeleteTopics v3 claiming 2^31-1 topic names in a few bytes.
        (
            "huge count",
            raw(20, 3, 2, &[0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0]),
        ),
        // IncrementalAlterConfigs v9: a version the guard does not read.
        ("unknown version", raw(44, 9, 3, &[0, 0])),
        // Cut short.
        ("truncated", raw(37, 0, 4, &[0, 0, 0, 1, 0])),
    ];
    for (what, frame) in cases {
        let mut client = TcpStream::connect(listen).await.unwrap();
        client.write_all(&frame).await.unwrap();
        assert_eq!(
            read_frame(&mut client).await,
            None,
            "{what}: closed, no answer"
        );
    }
    // The guard is still serving (nothing aborted it), and the broker saw none of them.
    let mut client = TcpStream::connect(listen).await.unwrap();
    client
        .write_all(&alter(9, "logs", "retention.ms", "1"))
        .await
        .unwrap();
    let answer = read_frame(&mut client).await.unwrap();
    assert_eq!(&answer[4..], MARKER);
    assert_eq!(*seen.lock().unwrap(), [44]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_leadership_rule_no_change_is_read() {
    let (listen, seen) = guard(|config| config.policy.max_partitions = Some(10)).await;
    let mut client = TcpStream::connect(listen).await.unwrap();
    client
        .write_all(&alter(
            1,
            "payments",
            "unclean.leader.election.enable",
            "true",
        ))
        .await
        .unwrap();
    let answer = read_frame(&mut client).await.unwrap();
    assert_eq!(&answer[4..], MARKER);
    // An API only brokers send is closed under any rule (`crate::apis`), leadership or not.
    client
        .write_all(&raw(56, 0, 2, &[0, 0, 0, 1]))
        .await
        .unwrap();
    assert!(read_frame(&mut client).await.is_none());
    assert_eq!(*seen.lock().unwrap(), [44]);
}

/// `--log-only` never refuses a leadership change (it forwards what it would refuse and
/// audits it), but an inter-broker API still closes the connection, as a malformed
/// request does: Kafka's brokers close those on a client listener too, and no client has a
/// reason to send one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_only_forwards_a_refusable_change_and_still_closes_on_inter_broker_apis() {
    let (listen, seen) = guard(|config| {
        protect_payments(config);
        config.policy.log_only = true;
    })
    .await;
    let mut client = TcpStream::connect(listen).await.unwrap();
    client
        .write_all(&alter(
            1,
            "payments",
            "unclean.leader.election.enable",
            "true",
        ))
        .await
        .unwrap();
    let answer = read_frame(&mut client).await.unwrap();
    assert_eq!(&answer[4..], MARKER, "forwarded under --log-only");
    client
        .write_all(&raw(56, 0, 2, &[0, 0, 0, 1]))
        .await
        .unwrap();
    assert_eq!(read_frame(&mut client).await, None, "closed, no answer");
    assert_eq!(*seen.lock().unwrap(), [44]);
}
