//! Issue 23, finding 2: audit lines were written under a lock on the runtime's workers, so
//! an audit log nobody reads (a pipe, or stderr) stopped the whole guard after about 64 KB:
//! no new connection, no Metadata answered. Now a writer thread of its own takes the lines
//! from a bounded queue; when it is full the guard refuses the elections it cannot audit
//! (POLICY_VIOLATION, failing closed) and every other API keeps flowing; when the log
//! drains, elections go through again.
//!
//! The audit log is a named pipe that this test holds open for reading and does not read.
//! The upstream is a **fake broker** that answers every request with a bare response header
//! (its correlation id): enough for the guard, which forwards the answers of requests it let
//! through without parsing them, and a broker that answers every API the same way is not
//! something a real Kafka can be made into.

use std::io::Read;
use std::net::SocketAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::time::Duration;

use kafka_elect_leaders::{
    parse_response, ElectLeadersRequestData, ElectionType, EncodeRequestExt, ErrorCode,
    TopicPartitionsData,
};
use kafka_elect_leaders_proxy::{AuditTarget, Config, Guard, Route};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{timeout, Instant};

/// Answers every frame with its correlation id alone.
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
                    let mut answer = 4i32.to_be_bytes().to_vec();
                    answer.extend_from_slice(&body[4..8]);
                    if w.write_all(&answer).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

fn elect(correlation_id: i32) -> Vec<u8> {
    let topics = [TopicPartitionsData::new(b"orders", &[0, 1, 2])];
    ElectLeadersRequestData {
        correlation_id,
        client_id: Some(b"audit-stall-test"),
        election_type: ElectionType::PREFERRED,
        topic_partitions: Some(&topics),
        ..Default::default()
    }
    .encode_to_vec(2)
    .unwrap()
}

/// ApiVersions v0: a request of another API, never audited.
fn api_versions(correlation_id: i32) -> Vec<u8> {
    let mut body = vec![0, 18, 0, 0];
    body.extend_from_slice(&correlation_id.to_be_bytes());
    body.extend_from_slice(&[0, 0]);
    let mut out = (body.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(&body);
    out
}

async fn read_frame(client: &mut TcpStream) -> Vec<u8> {
    let mut size = [0u8; 4];
    timeout(Duration::from_secs(10), client.read_exact(&mut size))
        .await
        .expect("an answer within 10 s: the guard is not blocked")
        .unwrap();
    let mut frame = size.to_vec();
    frame.resize(4 + i32::from_be_bytes(size) as usize, 0);
    client.read_exact(&mut frame[4..]).await.unwrap();
    frame
}

/// What came back for an ElectLeaders request: the broker's answer (let through), or the
/// guard's refusal, whose message says why.
fn refused_because(frame: &[u8]) -> Option<String> {
    if frame.len() == 8 {
        return None;
    }
    let response = parse_response(frame, 2).unwrap();
    let result = response.replica_election_results().first().unwrap();
    let partition = result.partition_result().first().unwrap();
    assert_eq!(partition.error_code(), ErrorCode::POLICY_VIOLATION);
    Some(String::from_utf8_lossy(partition.error_message().unwrap()).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_audit_log_refuses_elections_and_lets_other_apis_through() {
    let dir = std::env::temp_dir().join(format!("kel-audit-stall-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo: PathBuf = dir.join("audit.fifo");
    let _ = std::fs::remove_file(&fifo);
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo");
    // The reading end, held open and not read: writes block once the pipe (64 KiB) is full.
    let mut reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(0o4000) // O_NONBLOCK: opening does not wait for a writer
        .open(&fifo)
        .unwrap();

    let broker = answering_broker().await;
    let mut config = Config::default();
    config.routes.push(Route {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: broker,
    });
    config
        .policy
        .protected_topics
        .insert(b"payments"[..].into());
    config.audit = AuditTarget::File(fifo.clone());
    config.audit_queue_bytes = 4096;
    // The guard on a runtime of its own: if it ever blocked its workers again, this test's
    // timeouts would still fire and fail it rather than hang.
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
            addr_tx.send(guard.routes()[0].listen).unwrap();
            guard
                .run(async move {
                    let _ = stopped.await;
                })
                .await;
        });
    });
    let listen = addr_rx.recv().unwrap();

    // Far more elections than the pipe and the queue hold, one at a time.
    let mut client = TcpStream::connect(listen).await.unwrap();
    let mut forwarded = 0;
    let mut refusals = Vec::new();
    // Refused in a row at the end: once the pipe is full, nothing is let through. Before
    // that, a refusal may be followed by an election let through: a writer thread slow to
    // run (a loaded machine) lets the 4 KiB queue fill while the pipe still has room, and
    // once it has written those lines there is room again (seen under parallel tests).
    let mut refused_at_the_end = 0;
    for id in 0..600 {
        client.write_all(&elect(id)).await.unwrap();
        match refused_because(&read_frame(&mut client).await) {
            None => {
                forwarded += 1;
                refused_at_the_end = 0;
            }
            Some(message) => {
                refusals.push(message);
                refused_at_the_end += 1;
            }
        }
    }
    assert!(forwarded > 0, "nothing let through while the log had room");
    assert!(
        !refusals.is_empty(),
        "the log never stalled: {forwarded} forwarded"
    );
    // 600 lines of about 250 bytes are more than twice the pipe's 64 KiB.
    assert!(
        refused_at_the_end >= 100,
        "only the last {refused_at_the_end} of 600 refused: let through with the pipe full"
    );
    assert!(
        refusals[0].contains("audit log is stalled"),
        "{}",
        refusals[0]
    );

    // Other APIs flow, on this connection and on a new one.
    for id in 0..20 {
        client.write_all(&api_versions(1000 + id)).await.unwrap();
        let frame = read_frame(&mut client).await;
        assert_eq!(&frame[4..8], &(1000 + id).to_be_bytes());
    }
    let mut other = TcpStream::connect(listen).await.unwrap();
    other.write_all(&api_versions(7)).await.unwrap();
    assert_eq!(&read_frame(&mut other).await[4..8], &7i32.to_be_bytes());

    // The log drains: elections go through again.
    let drained = std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 << 10];
        let end = std::time::Instant::now() + Duration::from_secs(5);
        let mut lines = 0;
        while std::time::Instant::now() < end {
            match reader.read(&mut buf) {
                Ok(n) => lines += buf[..n].iter().filter(|&&b| b == b'\n').count(),
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        (reader, lines)
    });
    let end = Instant::now() + Duration::from_secs(4);
    let mut recovered = false;
    let mut id = 2000;
    while Instant::now() < end && !recovered {
        client.write_all(&elect(id)).await.unwrap();
        recovered = refused_because(&read_frame(&mut client).await).is_none();
        id += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(recovered, "elections still refused after the log drained");
    let (_reader, lines) = drained.join().unwrap();
    // Every decision let through was audited; refusals for want of a log were not.
    assert!(
        lines >= forwarded,
        "{lines} audit lines for {forwarded} let through"
    );
    drop(stop);
    let _ = std::fs::remove_dir_all(&dir);
}
