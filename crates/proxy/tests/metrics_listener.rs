//! The metrics listener (`--metrics-listen`) under clients that connect and ask nothing, or
//! one byte (issue 35, finding 8): its own limits keep `/metrics` and `/status` answering.
//! Every wait is bounded; nothing is timed.

use std::net::SocketAddr;
use std::time::Duration;

use kafka_elect_leaders_proxy::{Config, Guard};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

/// Far longer than any answer takes: past it, the test fails as blocked.
const BOUNDED: Duration = Duration::from_secs(20);

/// A guard with no route, serving its metrics on loopback (the config edited by `edit`);
/// where.
async fn metrics_guard(edit: impl FnOnce(&mut Config)) -> SocketAddr {
    let mut config = Config {
        metrics_listen: Some("127.0.0.1:0".parse().unwrap()),
        ..Config::default()
    };
    edit(&mut config);
    let guard = Guard::bind(config).await.unwrap();
    let addr = guard.metrics_addr().unwrap();
    tokio::spawn(guard.run(std::future::pending()));
    addr
}

/// `GET path`, and everything the guard answers until it closes.
async fn get(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: guard\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut answer = Vec::new();
    let read = timeout(BOUNDED, s.read_to_end(&mut answer))
        .await
        .unwrap_or_else(|_| panic!("{path}: no answer within {BOUNDED:?}: blocked"));
    // A reset after a whole answer would still show the answer.
    let _ = read;
    String::from_utf8_lossy(&answer).into_owned()
}

/// 100 clients that connect and ask nothing, and 100 that send one byte and stall, all
/// open before a scrape comes: the scrape is answered, on `/metrics` and on `/status`.
/// Before its own limits (16 clients at once, the 17th closed at once, each let go after
/// 5 s), the scrape was closed unanswered, and clients that kept reconnecting kept every
/// scrape out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_clients_cannot_keep_a_scrape_out() {
    let addr = metrics_guard(|_| {}).await;
    let mut silent = Vec::new();
    for i in 0..200 {
        let mut s = TcpStream::connect(addr).await.unwrap();
        if i % 2 == 1 {
            s.write_all(b"G").await.unwrap();
        }
        silent.push(s);
    }
    for path in ["/metrics", "/status"] {
        let answer = get(addr, path).await;
        assert!(
            answer.starts_with("HTTP/1.1 200 OK\r\n"),
            "{path}: {:?}",
            answer.get(..answer.len().min(200))
        );
    }
    // The silent clients were open all along.
    drop(silent);
}

/// A client that sends one byte and stalls is closed at the header timeout
/// (`MetricsLimits::header_timeout`, set short here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_does_not_finish_asking_is_closed_at_the_header_timeout() {
    let addr =
        metrics_guard(|c| c.metrics_limits.header_timeout = Duration::from_millis(300)).await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"G").await.unwrap();
    let mut rest = Vec::new();
    let read = timeout(BOUNDED, s.read_to_end(&mut rest))
        .await
        .expect("the stalled client was not closed");
    assert!(rest.is_empty(), "{rest:?}");
    let _ = read;
    // The listener still answers.
    assert!(get(addr, "/metrics")
        .await
        .starts_with("HTTP/1.1 200 OK\r\n"));
}
