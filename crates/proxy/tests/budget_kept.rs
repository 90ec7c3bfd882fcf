//! Issue 35, finding 5: ElectLeaders requests the guard keeps (to answer or to merge with
//! the broker's answer) were held outside `--max-buffered-bytes` when under 64 KiB, up to
//! 128 a connection. Now each takes its share of the budget until answered. The budget
//! here is its smallest (64 KiB); one connection's trimmed election of ~60 KiB, whose answer
//! the **fake broker** holds back, leaves no room for another connection's large frame,
//! which waits until the election is released (its client closes) and then goes through.

use std::sync::{Arc, Mutex};

use kafka_elect_leaders::{
    ElectLeadersRequestData, ElectionType, EncodeRequestExt, TopicPartitionsData,
};
use kafka_elect_leaders_proxy::{Config, Guard, Route};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{sleep, Duration, Instant};

/// A fake broker: records each request's size; never answers ElectLeaders, answers the rest
/// with their correlation id.
async fn broker() -> (std::net::SocketAddr, Arc<Mutex<Vec<(i16, usize)>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let log = log.clone();
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
                    let key = i16::from_be_bytes([request[0], request[1]]);
                    log.lock().unwrap().push((key, request.len()));
                    if key != 43 {
                        let mut answer = 4i32.to_be_bytes().to_vec();
                        answer.extend_from_slice(&request[4..8]);
                        if socket.write_all(&answer).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    (addr, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_election_holds_its_share_of_the_budget() {
    let (upstream, seen) = broker().await;
    let mut config = Config::default();
    config.routes.push(Route {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream,
    });
    config
        .policy
        .protected_topics
        .insert(b"payments"[..].into());
    config.max_buffered_bytes = 64 * 1024;
    let guard = Guard::bind(config).await.unwrap();
    let listen = guard.routes()[0].listen;
    tokio::spawn(guard.run(std::future::pending()));

    // ~60 KiB: under the 64 KiB of a small frame. Trimmed (payments refused, logs
    // forwarded), so kept until the broker answers, which it never does.
    let partitions: Vec<i32> = (0..14_000).collect();
    let topics = [
        TopicPartitionsData::new(b"payments", &partitions),
        TopicPartitionsData::new(b"logs", &[0]),
    ];
    let election = ElectLeadersRequestData {
        correlation_id: 1,
        election_type: ElectionType::PREFERRED,
        topic_partitions: Some(&topics),
        timeout_ms: 600_000,
        ..Default::default()
    }
    .encode_to_vec(2)
    .unwrap();
    assert!(
        election.len() > 50_000 && election.len() < 64 * 1024,
        "{}",
        election.len()
    );
    let mut a = TcpStream::connect(listen).await.unwrap();
    a.write_all(&election).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !seen.lock().unwrap().iter().any(|&(key, _)| key == 43) {
        assert!(
            Instant::now() < deadline,
            "the trimmed election never reached the broker"
        );
        sleep(Duration::from_millis(20)).await;
    }

    // Another client's 70 KiB frame (an ApiVersions v0 with a long client id padding it:
    // any API) needs the whole budget.
    let mut b = TcpStream::connect(listen).await.unwrap();
    let mut body = 18i16.to_be_bytes().to_vec();
    body.extend(0i16.to_be_bytes());
    body.extend(2i32.to_be_bytes());
    body.extend(30_000i16.to_be_bytes());
    body.resize(body.len() + 30_000, b'c');
    body.resize(70 * 1024, 0);
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend(body);
    b.write_all(&frame).await.unwrap();
    sleep(Duration::from_millis(1500)).await;
    let large = |seen: &Mutex<Vec<(i16, usize)>>| {
        seen.lock()
            .unwrap()
            .iter()
            .any(|&(key, len)| key == 18 && len > 64 * 1024)
    };
    assert!(
        !large(&seen),
        "the large frame went through while the kept election held the budget"
    );

    // The election's client goes: its share comes back, the large frame goes through.
    drop(a);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !large(&seen) {
        assert!(
            Instant::now() < deadline,
            "the large frame never went through"
        );
        sleep(Duration::from_millis(20)).await;
    }
}
