//! The guard under the faults of issue 23, in process and on loopback: a client that closes
//! while an answer is owed, a client that sends nothing, a client that trickles a frame.
//!
//! The upstream here is a **fake broker** (`fake_broker`): it accepts connections, reads
//! what comes and never answers, which a real Kafka broker cannot be made to do on demand
//! (a Produce with acks=0 is the real case of a request that gets no answer). Every wait is
//! bounded; the guard and the fake stop with the test's runtime.

use std::net::SocketAddr;
use std::time::Duration;

use kafka_elect_leaders_proxy::{Config, Guard, Route};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio::time::{timeout, Instant};

/// What the fake broker saw of one connection.
#[derive(Debug)]
enum Seen {
    Opened,
    Bytes(usize),
    Closed,
}

/// A fake broker that never answers: it reports each connection's bytes and its close.
async fn fake_broker() -> (SocketAddr, mpsc::UnboundedReceiver<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let tx = tx.clone();
            tokio::spawn(async move {
                let _ = tx.send(Seen::Opened);
                let mut buf = vec![0u8; 64 << 10];
                loop {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => {
                            let _ = tx.send(Seen::Closed);
                            return;
                        }
                        Ok(n) => {
                            let _ = tx.send(Seen::Bytes(n));
                        }
                    }
                }
            });
        }
    });
    (addr, rx)
}

/// Starts the guard in front of `upstream`; it stops when the returned sender is dropped.
async fn guard(
    upstream: SocketAddr,
    edit: impl FnOnce(&mut Config),
) -> (SocketAddr, oneshot::Sender<()>) {
    let mut config = Config::default();
    config.routes.push(Route {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream,
    });
    edit(&mut config);
    let guard = Guard::bind(config).await.unwrap();
    let listen = guard.routes()[0].listen;
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    tokio::spawn(guard.run(async move {
        let _ = stop_rx.await;
    }));
    (listen, stop_tx)
}

/// A Produce request (API key 0, v3) as a client with acks=0 sends it: the broker never
/// answers it. The guard forwards frames of other APIs without parsing their bodies.
fn produce_acks_0(correlation_id: i32) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&0i16.to_be_bytes()); // api key: Produce
    body.extend_from_slice(&3i16.to_be_bytes()); // version
    body.extend_from_slice(&correlation_id.to_be_bytes());
    body.extend_from_slice(&4i16.to_be_bytes());
    body.extend_from_slice(b"test");
    body.extend_from_slice(&(-1i16).to_be_bytes()); // transactional id: null
    body.extend_from_slice(&0i16.to_be_bytes()); // acks = 0
    body.extend_from_slice(&1000i32.to_be_bytes()); // timeout
    body.extend_from_slice(&0i32.to_be_bytes()); // no topics
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    frame
}

/// The next event of the fake broker within `within`, or `None`.
async fn next_seen(rx: &mut mpsc::UnboundedReceiver<Seen>, within: Duration) -> Option<Seen> {
    timeout(within, rx.recv()).await.ok().flatten()
}

/// Waits until the fake broker reports `want` (skipping others) within `within`.
async fn wait_for(
    rx: &mut mpsc::UnboundedReceiver<Seen>,
    within: Duration,
    want: fn(&Seen) -> bool,
) -> bool {
    let end = Instant::now() + within;
    while let Some(seen) = next_seen(rx, end.saturating_duration_since(Instant::now())).await {
        if want(&seen) {
            return true;
        }
    }
    false
}

/// Whether the guard closes `client` within `within` (a read gives end of stream or an
/// error), reading and dropping whatever comes first.
async fn closed_within(client: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 1024];
    let end = Instant::now() + within;
    loop {
        match timeout(
            end.saturating_duration_since(Instant::now()),
            client.read(&mut buf),
        )
        .await
        {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
        }
    }
}

/// Issue 23, finding 1: a client that sent a request the broker never answers and then
/// closed kept its slot and both sockets until the guard stopped. Now its close releases
/// the broker connection at once, and with `max_connections` 1 the next client is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_close_releases_its_slot_and_its_broker_connection_at_once() {
    let (broker, mut seen) = fake_broker().await;
    let (listen, _stop) = guard(broker, |c| c.max_connections = 1).await;

    let mut client = TcpStream::connect(listen).await.unwrap();
    client.write_all(&produce_acks_0(1)).await.unwrap();
    assert!(
        wait_for(&mut seen, Duration::from_secs(5), |s| matches!(
            s,
            Seen::Bytes(_)
        ))
        .await,
        "the request reached the broker"
    );
    drop(client);
    let closed_at = Instant::now();
    assert!(
        wait_for(&mut seen, Duration::from_secs(3), |s| matches!(
            s,
            Seen::Closed
        ))
        .await,
        "the guard kept the broker connection after its client closed"
    );
    assert!(
        closed_at.elapsed() < Duration::from_secs(1),
        "{:?}",
        closed_at.elapsed()
    );

    // The slot is free: another client gets through (with the slot still held, the guard
    // would refuse it, being at --max-connections 1).
    let mut next = TcpStream::connect(listen).await.unwrap();
    next.write_all(&produce_acks_0(2)).await.unwrap();
    assert!(
        wait_for(&mut seen, Duration::from_secs(5), |s| matches!(
            s,
            Seen::Bytes(_)
        ))
        .await,
        "the next client was not served"
    );
}

/// Issue 23, finding 3: a client that sends nothing held its slot for ever. Now it is
/// closed after the idle timeout, and so is its broker connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_client_is_closed_after_the_idle_timeout() {
    let (broker, mut seen) = fake_broker().await;
    let (listen, _stop) = guard(broker, |c| c.idle_timeout = Duration::from_millis(300)).await;
    let mut client = TcpStream::connect(listen).await.unwrap();
    let start = Instant::now();
    assert!(
        closed_within(&mut client, Duration::from_secs(5)).await,
        "a silent client was not closed"
    );
    let after = start.elapsed();
    assert!(
        after >= Duration::from_millis(250),
        "closed too soon: {after:?}"
    );
    assert!(
        wait_for(&mut seen, Duration::from_secs(3), |s| matches!(
            s,
            Seen::Closed
        ))
        .await,
        "its broker connection stayed open"
    );
}

/// Issue 23, finding 3: a client that trickles bytes (one every 200 ms: the frame would take
/// 7 s) held its slot for as long as it kept trickling. Now the frame must be whole
/// within the frame timeout, however steadily the bytes come.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_trickling_a_frame_is_closed_after_the_frame_timeout() {
    let (broker, _seen) = fake_broker().await;
    let (listen, _stop) = guard(broker, |c| {
        c.frame_timeout = Duration::from_millis(500);
        c.idle_timeout = Duration::from_secs(60);
    })
    .await;
    let client = TcpStream::connect(listen).await.unwrap();
    let (mut read, mut write) = client.into_split();
    let frame = produce_acks_0(1);
    let trickle = tokio::spawn(async move {
        // The first byte comes once the guard is waiting for it (a wait armed for the idle
        // timeout must re-arm for the frame timeout when a frame begins).
        tokio::time::sleep(Duration::from_millis(300)).await;
        for &b in &frame {
            if write.write_all(&[b]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    let start = Instant::now();
    let mut buf = [0u8; 64];
    let closed = timeout(Duration::from_secs(5), read.read(&mut buf)).await;
    assert!(
        matches!(closed, Ok(Ok(0)) | Ok(Err(_))),
        "the trickling client was not closed: {closed:?}"
    );
    let after = start.elapsed();
    assert!(
        after >= Duration::from_millis(700),
        "closed too soon: {after:?}"
    );
    trickle.abort();
}

/// A client that keeps sending whole frames is neither idle nor slow: the timeouts leave it
/// alone, however long it stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_client_outlives_both_timeouts() {
    let (broker, mut seen) = fake_broker().await;
    let (listen, _stop) = guard(broker, |c| {
        c.frame_timeout = Duration::from_millis(300);
        c.idle_timeout = Duration::from_millis(300);
    })
    .await;
    let mut client = TcpStream::connect(listen).await.unwrap();
    for id in 0..10 {
        client.write_all(&produce_acks_0(id)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Past three times both timeouts; the last frame was sent 100 ms ago, within both.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut total = 0;
    while let Ok(seen) = seen.try_recv() {
        match seen {
            Seen::Bytes(n) => total += n,
            Seen::Opened => {}
            Seen::Closed => panic!("the guard closed a busy client's broker connection"),
        }
    }
    assert_eq!(total, 10 * produce_acks_0(0).len(), "every frame forwarded");
}

/// Issue 23, finding 8: the guard waits for its broker connection no longer than the
/// upstream connect timeout, then closes the client. The "broker" here is a listener that
/// never accepts, its backlog filled first, so the guard's connection attempt hangs as it
/// would towards a broker host that drops packets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_that_does_not_answer_the_connect_closes_the_client_at_the_timeout() {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let silent = socket.listen(1).unwrap();
    let broker = silent.local_addr().unwrap();
    // Fill the backlog (never accepted): later connections get no answer to their SYN.
    let mut fillers = Vec::new();
    for _ in 0..8 {
        if let Ok(Ok(s)) = timeout(Duration::from_millis(200), TcpStream::connect(broker)).await {
            fillers.push(s);
        }
    }
    let (listen, _stop) = guard(broker, |c| {
        c.upstream_connect_timeout = Duration::from_millis(500);
    })
    .await;
    let mut client = TcpStream::connect(listen).await.unwrap();
    let start = Instant::now();
    assert!(
        closed_within(&mut client, Duration::from_secs(5)).await,
        "the client was not closed when the broker did not answer"
    );
    let after = start.elapsed();
    assert!(
        after >= Duration::from_millis(400),
        "closed too soon: {after:?}"
    );
    drop((silent, fillers));
}
