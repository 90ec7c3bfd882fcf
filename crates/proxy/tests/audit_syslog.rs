//! Issue 45, item 1: the audit log sent to a syslog receiver (`AuditTarget::Syslog`),
//! RFC 5424 messages framed by octet counting (RFC 6587), over TCP and over TLS (RFC 5425),
//! to a fake syslog receiver: a listener that only reads frames. Each decision one frame,
//! `LEN <PRI>1 TIME HOST APP PID audit - {line}`; a receiver that closes its connection
//! gets the next message on a new one, none lost.

use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, TcpListener as StdListener};
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use kafka_elect_leaders::{ElectLeadersRequestData, ElectionType, EncodeRequestExt};
use kafka_elect_leaders_proxy::audit::{SyslogTarget, SyslogTls};
use kafka_elect_leaders_proxy::{AuditTarget, Config, Guard, Policy, Route};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One octet-counted frame: `LEN SP MESSAGE`; None at the end of the stream.
fn read_frame(r: &mut impl BufRead) -> Option<String> {
    let mut len = Vec::new();
    r.read_until(b' ', &mut len).ok()?;
    if len.is_empty() {
        return None;
    }
    let len: usize = std::str::from_utf8(&len[..len.len() - 1])
        .unwrap()
        .parse()
        .unwrap_or_else(|_| panic!("not an octet count: {len:?}"));
    let mut message = vec![0u8; len];
    r.read_exact(&mut message).ok()?;
    Some(String::from_utf8(message).unwrap())
}

/// A fake syslog receiver: each frame read goes to the channel (the audit chain's start
/// line left out), with the number of the connection it came on. With `close_after_first`, the first connection is closed after
/// its first frame. `tls`: a rustls server configuration.
fn fake_syslog_receiver(
    tls: Option<Arc<rustls::ServerConfig>>,
    close_after_first: bool,
) -> (SocketAddr, mpsc::Receiver<(usize, String)>) {
    let listener = StdListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for (n, conn) in listener.incoming().enumerate() {
            let Ok(conn) = conn else { return };
            let tx = tx.clone();
            let tls = tls.clone();
            std::thread::spawn(move || {
                let reader: Box<dyn Read> = match tls {
                    Some(config) => {
                        let server = rustls::ServerConnection::new(config).unwrap();
                        Box::new(rustls::StreamOwned::new(server, conn))
                    }
                    None => Box::new(conn),
                };
                let mut reader = BufReader::new(reader);
                while let Some(frame) = read_frame(&mut reader) {
                    // The audit chain's start line, before any decision: not one of them.
                    if frame.contains("\"event\":\"chain-start\"") {
                        continue;
                    }
                    let _ = tx.send((n, frame));
                    if close_after_first && n == 0 {
                        return;
                    }
                }
            });
        }
    });
    (addr, rx)
}

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

/// A guard auditing to `target`; its listener.
async fn guard(target: SyslogTarget) -> SocketAddr {
    let mut config = Config {
        policy: Policy {
            deny_unclean: true,
            ..Policy::default()
        },
        ..Config::default()
    };
    config.routes.push(Route {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: broker().await,
    });
    config.audit = AuditTarget::Syslog(target);
    let guard = Guard::bind(config).await.unwrap();
    let listen = guard.routes()[0].listen;
    tokio::spawn(guard.run(std::future::pending()));
    listen
}

/// Sends one election (correlation id `id`) and reads its answer.
async fn elect(c: &mut TcpStream, id: i32, election_type: ElectionType) {
    let topics = [kafka_elect_leaders::TopicPartitionsData::new(
        b"payments",
        &[0],
    )];
    let frame = ElectLeadersRequestData {
        correlation_id: id,
        client_id: Some(b"t"),
        election_type,
        topic_partitions: Some(&topics),
        timeout_ms: 30_000,
        ..Default::default()
    }
    .encode_to_vec(2)
    .unwrap();
    c.write_all(&frame).await.unwrap();
    let mut size = [0u8; 4];
    c.read_exact(&mut size).await.unwrap();
    let mut rest = vec![0u8; i32::from_be_bytes(size) as usize];
    c.read_exact(&mut rest).await.unwrap();
}

/// Checks one RFC 5424 message: its header, and its MSG the decision line of `id`.
fn check(message: &str, id: i64, verdict: &str) {
    let parts: Vec<&str> = message.splitn(8, ' ').collect();
    assert_eq!(parts.len(), 8, "{message}");
    // local3 (19) * 8 + informational (6).
    assert_eq!(parts[0], "<158>1", "{message}");
    assert!(
        parts[1].ends_with('Z') && parts[1].contains('T'),
        "{message}"
    );
    assert!(!parts[2].is_empty());
    assert_eq!(parts[3], "guard-test");
    assert_eq!(parts[4], std::process::id().to_string());
    assert_eq!((parts[5], parts[6]), ("audit", "-"));
    let line: serde_json::Value = serde_json::from_str(parts[7]).unwrap();
    assert_eq!(line["correlation_id"], id, "{message}");
    assert_eq!(line["verdict"], verdict, "{message}");
    assert!(!parts[7].ends_with('\n'));
}

fn target(addr: SocketAddr, tls: Option<SyslogTls>) -> SyslogTarget {
    SyslogTarget {
        address: addr.to_string(),
        tls,
        app_name: "guard-test".into(),
        facility: kafka_elect_leaders_proxy::audit::facility("local3").unwrap(),
    }
}

const WAIT: Duration = Duration::from_secs(10);

/// Over TCP: one frame per decision; the receiver closes its first connection after one
/// frame, and the next message comes on a second connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_lines_reach_a_syslog_receiver_over_tcp_and_it_reconnects() {
    let (addr, frames) = fake_syslog_receiver(None, true);
    let listen = guard(target(addr, None)).await;
    let mut c = TcpStream::connect(listen).await.unwrap();
    elect(&mut c, 1, ElectionType::PREFERRED).await;
    let (conn, first) = frames.recv_timeout(WAIT).unwrap();
    assert_eq!(conn, 0);
    check(&first, 1, "forwarded");
    // Give the close time to arrive before the next message.
    tokio::time::sleep(Duration::from_millis(200)).await;
    elect(&mut c, 2, ElectionType::UNCLEAN).await;
    let (conn, second) = frames.recv_timeout(WAIT).unwrap();
    assert_eq!(conn, 1, "a new connection");
    check(&second, 2, "refused");
}

/// Over TLS, against a CA of the test's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_lines_reach_a_syslog_receiver_over_tls() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("audit-syslog-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "syslog test CA");
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["localhost".into()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    let server = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![CertificateDer::from_pem_slice(cert.pem().as_bytes()).unwrap()],
        PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes()).unwrap(),
    )
    .unwrap();
    let (addr, frames) = fake_syslog_receiver(Some(Arc::new(server)), false);
    let tls = SyslogTls {
        ca: Some(dir.join("ca.pem")),
        server_name: Some("localhost".into()),
    };
    let listen = guard(target(addr, Some(tls))).await;
    let mut c = TcpStream::connect(listen).await.unwrap();
    elect(&mut c, 5, ElectionType::PREFERRED).await;
    let (_, message) = frames.recv_timeout(WAIT).unwrap();
    check(&message, 5, "forwarded");
    elect(&mut c, 6, ElectionType::PREFERRED).await;
    let (conn, message) = frames.recv_timeout(WAIT).unwrap();
    assert_eq!(conn, 0, "one connection");
    check(&message, 6, "forwarded");
}

/// A receiver that is not there: the guard does not start.
#[tokio::test]
async fn a_syslog_receiver_that_cannot_be_reached_stops_the_start() {
    let addr = StdListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut config = Config::default();
    config.routes.push(Route {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: addr,
    });
    config.audit = AuditTarget::Syslog(target(addr, None));
    let error = Guard::bind(config).await.err().expect("no start");
    assert!(error.to_string().contains("syslog 127.0.0.1:"), "{error}");
}
