//! The guard's memory, counted by a global allocator that tracks the bytes live and their
//! peak (`tests/common`, installed as this test binary's own): large frames take their whole size from `--max-buffered-bytes`
//! and the peak stays within it; a connection does not keep a large frame's allocation
//! after forwarding it.
//!
//! The upstream is a fake broker that reads and discards (the frames are Produce requests
//! with acks=0, which Kafka never answers). The clients' frames are allocated before the
//! counting starts, so what is counted is the guard's.
//!
//! And the rewrite of broker addresses holds little beyond the broker's answer: the
//! rewritten list, one entry decoded at a time, never the answer decoded whole nor what
//! follows the list copied. The tests take turns: the counts are the process's.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

use kafka_elect_leaders_proxy::{Config, Guard, Route};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

mod common;

use common::{LIVE, PEAK};

#[global_allocator]
static ALLOCATOR: common::Counting = common::Counting;

const MIB: usize = 1 << 20;

/// One test counts at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A broker that reads everything and answers nothing.
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

/// A Produce v3 request with acks=0 of `len` bytes in all.
fn produce_acks_0(len: usize) -> Vec<u8> {
    let mut f = ((len - 4) as i32).to_be_bytes().to_vec();
    f.extend(0i16.to_be_bytes());
    f.extend(3i16.to_be_bytes());
    f.extend(1i32.to_be_bytes());
    f.extend((-1i16).to_be_bytes()); // client id: null
    f.extend((-1i16).to_be_bytes()); // transactional id: null
    f.extend(0i16.to_be_bytes()); // acks
    f.extend(1000i32.to_be_bytes());
    f.resize(len, 0);
    f
}

async fn guard(upstream: SocketAddr, budget: usize) -> SocketAddr {
    let mut config = Config::default();
    config.routes.push(Route {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream,
    });
    config.max_buffered_bytes = budget;
    config.audit = kafka_elect_leaders_proxy::AuditTarget::Stderr;
    let guard = Guard::bind(config).await.unwrap();
    let listen = guard.routes()[0].listen;
    tokio::spawn(guard.run(std::future::pending()));
    listen
}

/// 16 clients each send four 2 MiB frames at once through a guard with `budget`; the
/// peak of bytes live above what was live before, and what stays live after.
async fn run(budget: usize) -> (usize, usize) {
    let frame: &'static [u8] = Box::leak(produce_acks_0(2 * MIB).into_boxed_slice());
    let listen = guard(sink_broker().await, budget).await;
    let mut clients = Vec::new();
    for _ in 0..16 {
        clients.push(TcpStream::connect(listen).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let sends: Vec<_> = clients
        .into_iter()
        .map(|mut c| {
            tokio::spawn(async move {
                for _ in 0..4 {
                    c.write_all(frame).await.unwrap();
                }
                c
            })
        })
        .collect();
    let mut clients = Vec::new();
    for send in sends {
        let client = tokio::time::timeout(Duration::from_secs(60), send)
            .await
            .expect("the frames went through");
        clients.push(client.unwrap());
    }
    // Every frame handed on: the guard is waiting for the next frames, with its buffers.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let peak = PEAK.load(Ordering::Relaxed) - before;
    let after = LIVE.load(Ordering::Relaxed).saturating_sub(before);
    drop(clients);
    (peak, after)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
// The lock orders this test against the other (synchronous) one; no task here contends
// for it.
#[allow(clippy::await_holding_lock)]
async fn large_frames_stay_within_the_budget_and_are_not_kept() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let budget = 8 * MIB;
    let (peak, after) = run(budget).await;
    eprintln!("budget {budget}: peak {peak} bytes above the start, {after} still live after");
    // The budget, plus each connection's small buffers (16 KiB a side read, 64 KiB of
    // lookahead of the next frame, the write buffers) and the runtime's own.
    let slack = 16 * (256 << 10) + 2 * MIB;
    assert!(
        peak <= budget + slack,
        "peak {peak} over {}",
        budget + slack
    );
    // Not a 2 MiB frame's allocation kept per connection.
    assert!(after < 4 * MIB, "{after} bytes still live after the frames");
}

/// The rewrite's memory.
mod rewrite {
    use super::*;
    use bytes::{BufMut, Bytes, BytesMut};
    use kafka_elect_leaders_proxy::addresses::{
        Rewritten, Routes as Addresses, DESCRIBE_CLUSTER, METADATA,
    };
    use kafka_elect_leaders_proxy::audit::ConnInfo;
    use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
    use kafka_protocol::messages::metadata_response::{
        MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
    };
    use kafka_protocol::messages::{
        BrokerId, DescribeClusterResponse, MetadataResponse, ResponseHeader, TopicName,
    };
    use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

    /// The route of the rewrite tests: the guard on 127.0.0.1:19092 for the broker at
    /// 10.0.0.1:9092.
    fn one_route() -> (Addresses, ConnInfo) {
        let upstream: SocketAddr = "10.0.0.1:9092".parse().unwrap();
        let listen: SocketAddr = "127.0.0.1:19092".parse().unwrap();
        let conn = ConnInfo {
            client: "127.0.0.1:50000".parse().unwrap(),
            listener: listen,
            local: listen,
            upstream,
        };
        (Addresses::new([(listen, upstream, None)], None, None), conn)
    }

    /// `body` after a size prefix and a response header (v1, no tags, from the versions here).
    fn answer_frame(body: &[u8]) -> Bytes {
        let mut frame = BytesMut::new();
        frame.put_i32(0);
        ResponseHeader::default()
            .with_correlation_id(7)
            .encode(&mut frame, 1)
            .unwrap();
        frame.put_slice(body);
        let size = (frame.len() - 4) as i32;
        frame[..4].copy_from_slice(&size.to_be_bytes());
        frame.freeze()
    }

    /// Rewrites `frame`; the peak of bytes live above the start while it does, and the
    /// rewritten answer.
    fn rewrite_counted(api_key: i16, version: i16, frame: &Bytes) -> (usize, Rewritten) {
        let (addresses, conn) = one_route();
        let before = LIVE.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        let rewritten = addresses
            .rewrite(frame, api_key, version, &conn)
            .expect("rewritten");
        (PEAK.load(Ordering::Relaxed) - before, rewritten)
    }

    /// A DescribeCluster answer of 200,000 brokers at the route's upstream (3.8 MB, the
    /// list nearly all of it), and a Metadata answer of one such broker and 200,000
    /// partitions (5.2 MB, the brokers a few bytes of it). Decoded whole, as the guard
    /// did before (a copy of the answer, a structure per broker, the answer written
    /// again), the first peaked at 65,000,283 bytes and the second at 20,800,513; now
    /// about 4.3 MB and 207 bytes.
    #[test]
    fn a_rewrite_holds_the_rewritten_list_and_not_the_answer_decoded() {
        let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        const VERSION: i16 = 1;
        let mut cluster = DescribeClusterResponse::default();
        cluster.brokers = (0..200_000)
            .map(|n| {
                DescribeClusterBroker::default()
                    .with_broker_id(BrokerId(n))
                    .with_host(StrBytes::from_static_str("10.0.0.1"))
                    .with_port(9092)
            })
            .collect();
        let mut body = BytesMut::new();
        cluster.encode(&mut body, VERSION).unwrap();
        drop(cluster);
        let frame = answer_frame(&body);
        drop(body);
        let (peak, rewritten) = rewrite_counted(DESCRIBE_CLUSTER, VERSION, &frame);
        eprintln!(
            "DescribeCluster: answer {} bytes, head {} bytes, peak {peak} bytes",
            frame.len(),
            rewritten.head.len()
        );
        // The head (the whole list, rewritten: a byte longer per broker), allocated once with
        // room for addresses longer by an eighth, and one broker decoded at a time.
        let bound = frame.len() + frame.len() / 8 + 64 * 1024;
        assert!(peak <= bound, "peak {peak} over {bound}");

        let mut metadata = MetadataResponse::default();
        metadata.brokers = vec![MetadataResponseBroker::default()
            .with_node_id(BrokerId(1))
            .with_host(StrBytes::from_static_str("10.0.0.1"))
            .with_port(9092)];
        metadata.topics = vec![MetadataResponseTopic::default()
            .with_name(Some(TopicName(StrBytes::from_static_str("orders"))))
            .with_partitions(
                (0..200_000)
                    .map(|i| {
                        MetadataResponsePartition::default()
                            .with_partition_index(i)
                            .with_leader_id(BrokerId(1))
                            .with_replica_nodes(vec![BrokerId(1)])
                            .with_isr_nodes(vec![BrokerId(1)])
                    })
                    .collect(),
            )];
        let mut body = BytesMut::new();
        metadata.encode(&mut body, 12).unwrap();
        drop(metadata);
        let frame = answer_frame(&body);
        drop(body);
        let (peak, rewritten) = rewrite_counted(METADATA, 12, &frame);
        eprintln!(
            "Metadata: answer {} bytes, head {} bytes, peak {peak} bytes",
            frame.len(),
            rewritten.head.len()
        );
        assert!(
            peak <= 64 * 1024,
            "peak {peak} for a {} byte answer",
            frame.len()
        );
        // And the answer the client gets is whole: the head, then the partitions as they came.
        assert!(rewritten.tail_from > 0 && frame.len() - rewritten.tail_from > 5_000_000);
        let whole = rewritten.to_frame(&frame);
        let mut read = whole.clone().freeze().slice(4..);
        assert_eq!(
            i32::from_be_bytes(whole[..4].try_into().unwrap()) as usize,
            whole.len() - 4
        );
        ResponseHeader::decode(&mut read, 1).unwrap();
        let got = MetadataResponse::decode(&mut read, 12).unwrap();
        assert_eq!(got.brokers[0].host.as_str(), "127.0.0.1");
        assert_eq!(got.brokers[0].port, 19092);
        assert_eq!(got.topics[0].partitions.len(), 200_000);
    }
}
