//! Issue 42, item 5: the guard's answer to a refused ElectLeaders request was built outside
//! `--max-buffered-bytes`. A refusal answers every partition named (8 bytes each against 4
//! in the request), and was built as a list of entries of 40 bytes a partition first: 40
//! clients each sending a 16 MiB request refused whole aborted a guard with a 256 MiB
//! budget under a 3 GiB memory limit. Now the answer's exact length is taken from the
//! budget with the request before it is built, or, when the budget has no room for it, the
//! answer is one top-level error.
//!
//! Counted by a global allocator that tracks the bytes live and their peak (`tests/common`,
//! installed as this test binary's own), as in `memory.rs`. The clients' requests are
//! allocated before the counting starts, and they read their answers through a small
//! buffer of their own, so that what is counted is the guard's.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

use kafka_elect_leaders::{
    ElectLeadersRequestData, ElectionType, EncodeRequestExt, TopicPartitionsData,
};
use kafka_elect_leaders_proxy::{AuditTarget, Config, Guard, Route};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

mod common;

use common::{LIVE, PEAK};

#[global_allocator]
static ALLOCATOR: common::Counting = common::Counting;

const MIB: usize = 1 << 20;
const CLIENTS: usize = 16;

/// A broker that reads everything and answers nothing: nothing here reaches it.
async fn sink_broker() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 << 10];
                while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
            });
        }
    });
    addr
}

/// An UNCLEAN election (v2) of one topic's first `partitions` partitions: refused whole,
/// every partition answered POLICY_VIOLATION, under deny-unclean.
fn unclean_election(partitions: i32) -> Vec<u8> {
    let ids: Vec<i32> = (0..partitions).collect();
    let topics = [TopicPartitionsData::new(b"orders", &ids)];
    ElectLeadersRequestData {
        correlation_id: 7,
        election_type: ElectionType::UNCLEAN,
        topic_partitions: Some(&topics),
        ..Default::default()
    }
    .encode_to_vec(2)
    .unwrap()
}

/// Reads one answer through `buf` without keeping it: its length and top-level error code
/// (response header v1 at v2: correlation id, tags; then throttle time, error code).
async fn read_answer(client: &mut TcpStream, buf: &mut [u8]) -> (usize, i16) {
    let mut size = [0u8; 4];
    client.read_exact(&mut size).await.unwrap();
    let size = usize::try_from(i32::from_be_bytes(size)).unwrap();
    let head = 4 + 1 + 4 + 2;
    client.read_exact(&mut buf[..head]).await.unwrap();
    assert_eq!(
        &buf[..4],
        &7i32.to_be_bytes(),
        "the request's correlation id"
    );
    let error_code = i16::from_be_bytes([buf[9], buf[10]]);
    let mut left = size - head;
    while left > 0 {
        let n = left.min(buf.len());
        client.read_exact(&mut buf[..n]).await.unwrap();
        left -= n;
    }
    (size + 4, error_code)
}

/// 16 clients each send a 1 MiB UNCLEAN election (262,144 partitions, its full answer
/// 2 MiB) through a guard with an 8 MiB budget, at once; each reads its answer. Before, the
/// guard built each answer from 10 MiB of entries outside the budget; now the peak stays
/// within the budget and the connections' own
/// buffers. Every client gets a refusal: the whole answer, or the top-level one (most of
/// them here: 16 answers of 2 MiB do not fit in 8 MiB with their requests). Measured:
/// 100,885,114 bytes above the start before, 11,366,472 after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_stay_within_the_budget() {
    let budget = 8 * MIB;
    let request: &'static [u8] = Box::leak(unclean_election(262_144).into_boxed_slice());
    assert!(
        request.len() > MIB && request.len() < MIB + 64,
        "{}",
        request.len()
    );
    let mut config = Config::default();
    config.routes.push(Route {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: sink_broker().await,
    });
    config.policy.deny_unclean = true;
    config.max_buffered_bytes = budget;
    config.max_frame_size = 2 * MIB;
    config.audit = AuditTarget::File("/dev/null".into());
    // An audit line lists the partitions, and is built (up to a connection's share of the
    // audit queue, an eighth of it and at least 1 MiB) before it takes its share of the
    // budget: the smallest queue keeps that apart from what is measured here.
    config.audit_queue_bytes = MIB;
    // All 16 clients are one address: before a frame took the reserve whole or not at all,
    // frames here each held part of the reserve and of the general part, each waiting for
    // more, until their frame timeouts closed them (about one run in three).
    let guard = Guard::bind(config).await.unwrap();
    let listen = guard.routes()[0].listen;
    tokio::spawn(guard.run(std::future::pending()));

    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        let client = TcpStream::connect(listen).await.unwrap();
        clients.push((client, vec![0u8; 64 << 10]));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let runs: Vec<_> = clients
        .into_iter()
        .map(|(mut client, mut buf)| {
            tokio::spawn(async move {
                client.write_all(request).await.unwrap();
                let answer = read_answer(&mut client, &mut buf).await;
                (client, answer)
            })
        })
        .collect();
    let (mut whole, mut short) = (0, 0);
    let mut clients = Vec::new();
    for run in runs {
        let (client, (len, error_code)) = tokio::time::timeout(Duration::from_secs(60), run)
            .await
            .expect("every client is answered")
            .unwrap();
        match (len, error_code) {
            // Every partition answered POLICY_VIOLATION, 8 bytes each (under a top-level
            // POLICY_VIOLATION too when the decision could not be audited: the audit line
            // takes its share of the same budget, and a refusal that cannot be audited is
            // a refusal whole).
            (len, 0 | 44) if len > 2 * MIB => whole += 1,
            // One top-level POLICY_VIOLATION.
            (len, 44) if len < 64 => short += 1,
            other => panic!("an answer of {} bytes, error code {}", other.0, other.1),
        }
        clients.push(client);
    }
    let peak = PEAK.load(Ordering::Relaxed) - before;
    eprintln!("budget {budget}: peak {peak} bytes above the start; {whole} whole answers, {short} top-level ones");
    assert_eq!(whole + short, CLIENTS);
    // The budget, plus each connection's small buffers (16 KiB a side read, 64 KiB of
    // lookahead, the write buffers: 256 KiB, as in memory.rs) and the runtime's own.
    let slack = CLIENTS * (256 << 10) + 2 * MIB;
    assert!(
        peak <= budget + slack,
        "peak {peak} over {}",
        budget + slack
    );
    drop(clients);
}
