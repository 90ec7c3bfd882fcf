//! Issue 42, item 5: the guard wrote the answer to a large refused request on the thread
//! that runs the connection, and every other connection on that thread waited for it
//! (two clients sending large refused requests took another client's Metadata p50 from
//! 0.6 ms to 177-304 ms). Now the filters' decision on a request larger than a small
//! frame, and an answer whose request or whose own bytes are larger than a small frame,
//! run off the connection's thread (on the runtime's blocking pool, a core always left
//! to the others), and the connection's answers still go out in the order of its requests.
//!
//! The upstream is a fake broker that answers every request with its correlation id alone.
//! No assertion here is on time: on which thread an answer was written, and in which order
//! the answers came.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::BytesMut;
use kafka_elect_leaders::{
    ElectLeadersRequestData, ElectionType, EncodeRequestExt, TopicPartitionsData,
};
use kafka_elect_leaders_proxy::filter::{OnRequest, Request, Respond, Session};
use kafka_elect_leaders_proxy::{AuditTarget, Config, Filter, Filters, Guard, Route};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

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

/// A guard for `config` in front of an echo broker, on one connection thread: every
/// connection shares it, as they share the default `threads` a core.
async fn guard(mut config: Config) -> SocketAddr {
    config.routes.push(Route {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: echo_broker().await,
    });
    config.connection_threads = 1;
    config.audit = AuditTarget::File("/dev/null".into());
    let guard = Guard::bind(config).await.unwrap();
    let listen = guard.routes()[0].listen;
    tokio::spawn(guard.run(std::future::pending()));
    listen
}

/// A request of API key `api_key` (version 0, no client id), padded to `len` bytes.
fn request(api_key: i16, correlation_id: i32, len: usize) -> Vec<u8> {
    let mut f = ((len - 4) as i32).to_be_bytes().to_vec();
    f.extend(api_key.to_be_bytes());
    f.extend(0i16.to_be_bytes());
    f.extend(correlation_id.to_be_bytes());
    f.extend((-1i16).to_be_bytes());
    f.resize(len, 0);
    f
}

/// Reads one answer; its correlation id and its length.
async fn answer(client: &mut TcpStream) -> (i32, usize) {
    let mut size = [0u8; 4];
    client.read_exact(&mut size).await.unwrap();
    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
    client.read_exact(&mut body).await.unwrap();
    let id = i32::from_be_bytes(body[..4].try_into().unwrap());
    (id, body.len() + 4)
}

/// API key of the probe's requests: ListGroups, which no built-in filter reads.
const PROBE: i16 = 16;

/// Each answer's correlation id and the name of the thread that wrote it.
type Written = Arc<Mutex<Vec<(i32, Option<String>)>>>;

/// Answers every ListGroups request itself, later, with its correlation id alone, and
/// records on which thread the answer was written.
struct Probe {
    threads: Written,
    decided: Written,
}

impl Filter for Probe {
    fn name(&self) -> &'static str {
        "probe"
    }

    fn reads_request(&self, api_key: i16) -> bool {
        api_key == PROBE
    }

    fn request(&self, _: &Session, request: &mut Request) -> OnRequest {
        let correlation_id = request.peek().correlation_id;
        let thread = std::thread::current().name().map(str::to_owned);
        self.decided.lock().unwrap().push((correlation_id, thread));
        let threads = self.threads.clone();
        OnRequest::Answer(Respond::later(
            request.frame().len(),
            move |_, out: &mut BytesMut| {
                let thread = std::thread::current().name().map(str::to_owned);
                threads.lock().unwrap().push((correlation_id, thread));
                out.extend_from_slice(&4i32.to_be_bytes());
                out.extend_from_slice(&correlation_id.to_be_bytes());
                Ok(())
            },
        ))
    }
}

/// A small request is decided and its answer written on the connection's thread; a 1 MiB
/// one off it; and the three answers (the broker's last) come in
/// the requests' order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heavy_answer_is_written_off_the_connection_thread_in_its_turn() {
    let threads = Arc::new(Mutex::new(Vec::new()));
    let decided = Arc::new(Mutex::new(Vec::new()));
    let listen = guard(Config {
        filters: Filters::none().with(Probe {
            threads: threads.clone(),
            decided: decided.clone(),
        }),
        ..Config::default()
    })
    .await;
    let mut client = TcpStream::connect(listen).await.unwrap();
    let mut pipelined = request(PROBE, 1, 64);
    pipelined.extend(request(PROBE, 2, 1 << 20));
    // ApiVersions, forwarded: the broker answers it.
    pipelined.extend(request(18, 3, 64));
    client.write_all(&pipelined).await.unwrap();
    let mut ids = Vec::new();
    for _ in 0..3 {
        let got = tokio::time::timeout(Duration::from_secs(30), answer(&mut client))
            .await
            .expect("answered");
        ids.push(got.0);
    }
    assert_eq!(ids, [1, 2, 3], "answers out of the requests' order");
    for (what, threads) in [("written", threads), ("decided", decided)] {
        let threads = threads.lock().unwrap().clone();
        let on = |id: i32| {
            threads
                .iter()
                .find(|(cid, _)| *cid == id)
                .and_then(|(_, t)| t.clone())
                .unwrap_or_default()
        };
        assert_eq!(on(1), "guard-conn-0", "{what}: {threads:?}");
        assert!(
            !on(2).is_empty() && on(2) != "guard-conn-0",
            "{what}: {threads:?}"
        );
    }
}

/// The guard's own refusal of a 1 MiB UNCLEAN election, pipelined between two requests the
/// broker answers: the three answers in order, the refusal whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_refusal_keeps_its_turn() {
    let mut config = Config::default();
    config.policy.deny_unclean = true;
    let listen = guard(config).await;
    let ids: Vec<i32> = (0..262_144).collect();
    let topics = [TopicPartitionsData::new(b"orders", &ids)];
    let election = ElectLeadersRequestData {
        correlation_id: 2,
        election_type: ElectionType::UNCLEAN,
        topic_partitions: Some(&topics),
        ..Default::default()
    }
    .encode_to_vec(2)
    .unwrap();
    let mut client = TcpStream::connect(listen).await.unwrap();
    let mut pipelined = request(18, 1, 64);
    pipelined.extend(&election);
    pipelined.extend(request(18, 3, 64));
    client.write_all(&pipelined).await.unwrap();
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(
            tokio::time::timeout(Duration::from_secs(30), answer(&mut client))
                .await
                .expect("answered"),
        );
    }
    let ids: Vec<i32> = got.iter().map(|g| g.0).collect();
    assert_eq!(ids, [1, 2, 3], "answers out of the requests' order");
    assert!(got[1].1 > 2 << 20, "the refusal answers every partition");
}

/// Issue 42, item 5: a request refused whole and larger than 4 MiB is answered with one
/// top-level POLICY_VIOLATION, not with every partition it names (twice its size, most of
/// the CPU a flood of such requests cost the guard); the requests around it keep their
/// turns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_past_four_mib_is_one_top_level_error() {
    let mut config = Config::default();
    config.policy.deny_unclean = true;
    let listen = guard(config).await;
    let ids: Vec<i32> = (0..1_200_000).collect();
    let topics = [TopicPartitionsData::new(b"orders", &ids)];
    let election = ElectLeadersRequestData {
        correlation_id: 2,
        election_type: ElectionType::UNCLEAN,
        topic_partitions: Some(&topics),
        ..Default::default()
    }
    .encode_to_vec(2)
    .unwrap();
    assert!(election.len() > 4 << 20);
    let mut client = TcpStream::connect(listen).await.unwrap();
    let mut pipelined = request(18, 1, 64);
    pipelined.extend(&election);
    pipelined.extend(request(18, 3, 64));
    client.write_all(&pipelined).await.unwrap();
    let mut got = Vec::new();
    for _ in 0..3 {
        let mut size = [0u8; 4];
        let read = tokio::time::timeout(Duration::from_secs(60), client.read_exact(&mut size));
        read.await.expect("answered").unwrap();
        let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
        client.read_exact(&mut body).await.unwrap();
        got.push(body);
    }
    let ids: Vec<i32> = got
        .iter()
        .map(|b| i32::from_be_bytes(b[..4].try_into().unwrap()))
        .collect();
    assert_eq!(ids, [1, 2, 3], "answers out of the requests' order");
    // Response header v1 (correlation id, tags), throttle time, then the error code.
    let refusal = &got[1];
    assert!(refusal.len() < 64, "{} bytes", refusal.len());
    assert_eq!(i16::from_be_bytes([refusal[9], refusal[10]]), 44);
}
