//! Issue 42, item 5: two clients sending 16 MiB requests that the guard refused, back to
//! back, read 2 GB/s of answers off it, and another client's p99 rose tenfold on two cores.
//! Now a client's refused frames over 64 KiB are paced (`--refused-bytes-per-second`, with
//! all its connections): past a second's worth, its next frame is read only once its
//! refused bytes are back within it, as Kafka stops reading a client over its quota.
//!
//! The attacker connects from 127.0.0.2, the other client from 127.0.0.1: two clients to
//! the guard. The upstream is a fake broker that answers every request with its
//! correlation id alone. The one assertion on time is a lower bound that the pace itself
//! sets (a wait of at least so long); the rest is order and counters.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use kafka_elect_leaders::{
    ElectLeadersRequestData, ElectionType, EncodeRequestExt, TopicPartitionsData,
};
use kafka_elect_leaders_proxy::{AuditTarget, Config, Guard, Route};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

/// A broker that answers each request with its correlation id alone.
async fn echo_broker() -> SocketAddr {
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

/// A guard denying UNCLEAN elections, pacing refusals at `per_second`, in front of an echo
/// broker: its listener and its metrics listener.
async fn guard(per_second: usize) -> (SocketAddr, SocketAddr) {
    let mut config = Config::default();
    config.policy.deny_unclean = true;
    config.refused_bytes_per_second = per_second;
    config.routes.push(Route {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: echo_broker().await,
    });
    config.metrics_listen = Some("127.0.0.1:0".parse().unwrap());
    config.audit = AuditTarget::File("/dev/null".into());
    let guard = Guard::bind(config).await.unwrap();
    let addrs = (guard.routes()[0].listen, guard.metrics_addr().unwrap());
    tokio::spawn(guard.run(std::future::pending()));
    addrs
}

/// A connection to `listen` from `from` (a loopback address of its own: another client).
async fn connect_from(from: &str, listen: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    socket.connect(listen).await.unwrap()
}

/// An UNCLEAN election (v2) naming `partitions` partitions: refused whole.
fn unclean_election(correlation_id: i32, partitions: i32) -> Vec<u8> {
    let ids: Vec<i32> = (0..partitions).collect();
    let topics = [TopicPartitionsData::new(b"orders", &ids)];
    ElectLeadersRequestData {
        correlation_id,
        election_type: ElectionType::UNCLEAN,
        topic_partitions: Some(&topics),
        ..Default::default()
    }
    .encode_to_vec(2)
    .unwrap()
}

/// An ApiVersions v0 request: the broker answers it.
fn api_versions(correlation_id: i32) -> Vec<u8> {
    let mut f = 10i32.to_be_bytes().to_vec();
    f.extend(18i16.to_be_bytes());
    f.extend(0i16.to_be_bytes());
    f.extend(correlation_id.to_be_bytes());
    f.extend((-1i16).to_be_bytes());
    f
}

/// Reads one answer: its correlation id.
async fn answer(client: &mut TcpStream) -> i32 {
    let mut size = [0u8; 4];
    let read = tokio::time::timeout(Duration::from_secs(30), client.read_exact(&mut size));
    read.await.expect("answered in 30 s").unwrap();
    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
    client.read_exact(&mut body).await.unwrap();
    i32::from_be_bytes(body[..4].try_into().unwrap())
}

/// `elect_leaders_guard_refusals_paced_total` from `/metrics`.
async fn paced(metrics: SocketAddr) -> u64 {
    let mut http = TcpStream::connect(metrics).await.unwrap();
    http.write_all(b"GET /metrics HTTP/1.1\r\nHost: guard\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut text = String::new();
    http.read_to_string(&mut text).await.unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("elect_leaders_guard_refusals_paced_total "))
        .unwrap_or_else(|| panic!("no refusals_paced_total in:\n{text}"))
        .trim()
        .parse()
        .unwrap()
}

/// Polls [`paced`] until it is `want` (it is counted just after the answer is queued).
async fn paced_reaches(metrics: SocketAddr, want: u64) {
    for _ in 0..100 {
        if paced(metrics).await == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(paced(metrics).await, want, "refusals paced");
}

/// About 400 KB refused at 128 KiB a second: three seconds' worth, so the attacker's
/// next frame is read two seconds after its answer. Meanwhile the other client is answered,
/// large refusal of its own included (its own account, under a second's worth).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_past_its_pace_waits_and_the_others_do_not() {
    let (listen, metrics) = guard(128 << 10).await;
    let mut attacker = connect_from("127.0.0.2", listen).await;
    let mut pipelined = unclean_election(1, 100_000);
    assert!(pipelined.len() > 390_000);
    pipelined.extend(unclean_election(2, 100_000));
    attacker.write_all(&pipelined).await.unwrap();
    assert_eq!(answer(&mut attacker).await, 1);
    let first = Instant::now();
    let second = tokio::spawn(async move {
        assert_eq!(answer(&mut attacker).await, 2);
        Instant::now()
    });

    let mut other = connect_from("127.0.0.1", listen).await;
    for id in 0..5 {
        other.write_all(&api_versions(id)).await.unwrap();
        assert_eq!(answer(&mut other).await, id);
    }
    // 100 KB refused: under a second's worth of its own account.
    other.write_all(&unclean_election(9, 25_000)).await.unwrap();
    assert_eq!(answer(&mut other).await, 9);
    other.write_all(&api_versions(10)).await.unwrap();
    assert_eq!(answer(&mut other).await, 10);
    let other_done = Instant::now();

    let second = second.await.unwrap();
    assert!(
        other_done < second,
        "the other client waited for the attacker's pace"
    );
    // The pace's own wait: about two seconds; at least one and a half.
    assert!(
        second - first >= Duration::from_millis(1500),
        "the attacker's next frame was read after {:?}",
        second - first
    );
    // The attacker after each of its frames; the other client never.
    paced_reaches(metrics, 2).await;
}

/// `refused-bytes-per-second = 0`: no pace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_pace_when_set_to_zero() {
    let (listen, metrics) = guard(0).await;
    let mut attacker = connect_from("127.0.0.2", listen).await;
    for id in 0..4 {
        attacker
            .write_all(&unclean_election(id, 100_000))
            .await
            .unwrap();
        assert_eq!(answer(&mut attacker).await, id);
    }
    attacker.write_all(&api_versions(4)).await.unwrap();
    assert_eq!(answer(&mut attacker).await, 4);
    assert_eq!(paced(metrics).await, 0);
}
