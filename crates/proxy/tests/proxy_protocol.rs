//! Issue 45, item 4: behind a load balancer, the guard saw the balancer's address, so its
//! rules and its audit named the balancer, not the client. Now a listed source's
//! connections begin with a PROXY protocol header (v1 or v2) that names the client.
//!
//! The balancer here is this test writing the header itself, from 127.0.0.1 (listed);
//! 127.0.0.2 is another source (not listed). The upstream is a fake broker that answers
//! each request with its correlation id alone. A real HAProxy in front of real brokers is
//! `tests/e2e`'s.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use kafka_elect_leaders::{
    ElectLeadersRequestData, ElectionType, EncodeRequestExt, TopicPartitionsData,
};
use kafka_elect_leaders_proxy::{parse_source_range, AuditTarget, Config, Guard, Route};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

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

/// A guard taking the PROXY protocol from 127.0.0.1, denying UNCLEAN elections, auditing
/// to a file: its listener and the audit file.
async fn guard(name: &str) -> (SocketAddr, PathBuf) {
    let audit = std::env::temp_dir().join(format!(
        "kel-proxy-protocol-{name}-{}.jsonl",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&audit);
    let mut config = Config::default();
    config.policy.deny_unclean = true;
    config.proxy_protocol_from = vec![parse_source_range("127.0.0.1").unwrap()];
    config.routes.push(Route {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: echo_broker().await,
    });
    config.audit = AuditTarget::File(audit.clone());
    let guard = Guard::bind(config).await.unwrap();
    let listen = guard.routes()[0].listen;
    tokio::spawn(guard.run(std::future::pending()));
    (listen, audit)
}

async fn connect_from(from: &str, listen: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    socket.connect(listen).await.unwrap()
}

fn unclean_election(correlation_id: i32) -> Vec<u8> {
    let topics = [TopicPartitionsData::new(b"orders", &[0])];
    ElectLeadersRequestData {
        correlation_id,
        election_type: ElectionType::UNCLEAN,
        topic_partitions: Some(&topics),
        ..Default::default()
    }
    .encode_to_vec(2)
    .unwrap()
}

/// One answer's correlation id, or None at the connection's end.
async fn answer(client: &mut TcpStream) -> Option<i32> {
    let mut size = [0u8; 4];
    let read = tokio::time::timeout(Duration::from_secs(20), client.read_exact(&mut size));
    read.await.expect("an answer or the end within 20 s").ok()?;
    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
    client.read_exact(&mut body).await.ok()?;
    Some(i32::from_be_bytes(body[..4].try_into().unwrap()))
}

/// The audit lines written so far, once there are `n`.
async fn audit_lines(path: &PathBuf, n: usize) -> Vec<String> {
    for _ in 0..200 {
        let lines: Vec<String> = std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect();
        if lines.len() >= n {
            return lines;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("fewer than {n} audit lines in {}", path.display());
}

fn v2_header(source: [u8; 4], port: u16, listen: SocketAddr) -> Vec<u8> {
    let mut h = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    h.extend([0x21, 0x11, 0, 12]);
    h.extend(source);
    h.extend([127, 0, 0, 1]);
    h.extend(port.to_be_bytes());
    h.extend(listen.port().to_be_bytes());
    h
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_names_the_client_the_header_names() {
    let (listen, audit) = guard("names").await;
    // Version 1, then a refused election.
    let mut v1 = connect_from("127.0.0.1", listen).await;
    let header = format!(
        "PROXY TCP4 203.0.113.9 127.0.0.1 5555 {}\r\n",
        listen.port()
    );
    v1.write_all(header.as_bytes()).await.unwrap();
    v1.write_all(&unclean_election(1)).await.unwrap();
    assert_eq!(answer(&mut v1).await, Some(1));
    // Version 2.
    let mut v2 = connect_from("127.0.0.1", listen).await;
    v2.write_all(&v2_header([198, 51, 100, 4], 6666, listen))
        .await
        .unwrap();
    v2.write_all(&unclean_election(2)).await.unwrap();
    assert_eq!(answer(&mut v2).await, Some(2));
    let lines = audit_lines(&audit, 2).await;
    assert!(
        lines[0].contains("\"client\":\"203.0.113.9:5555\""),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains("\"client\":\"198.51.100.4:6666\""),
        "{}",
        lines[1]
    );
    let _ = std::fs::remove_file(&audit);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listed_source_without_a_header_and_another_with_one_are_closed() {
    let (listen, audit) = guard("closed").await;
    // From the balancer, a Kafka frame where the header must be: closed, unanswered.
    let mut bare = connect_from("127.0.0.1", listen).await;
    bare.write_all(&unclean_election(1)).await.unwrap();
    assert_eq!(answer(&mut bare).await, None);
    // From elsewhere, a header naming an address of its choice: not read as one, closed.
    let mut spoof = connect_from("127.0.0.2", listen).await;
    let header = format!("PROXY TCP4 10.9.9.9 127.0.0.1 5555 {}\r\n", listen.port());
    spoof.write_all(header.as_bytes()).await.unwrap();
    spoof.write_all(&unclean_election(2)).await.unwrap();
    assert_eq!(answer(&mut spoof).await, None);
    // From elsewhere without a header: served, under its own address.
    let mut direct = connect_from("127.0.0.2", listen).await;
    direct.write_all(&unclean_election(3)).await.unwrap();
    assert_eq!(answer(&mut direct).await, Some(3));
    let lines = audit_lines(&audit, 1).await;
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("\"client\":\"127.0.0.2:"), "{}", lines[0]);
    let _ = std::fs::remove_file(&audit);
}
