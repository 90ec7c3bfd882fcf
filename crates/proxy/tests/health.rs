//! Issue 45, item 3: ready, live, drained. `/livez` and `/readyz` on the metrics listener;
//! a stop drains (not ready, no new request read, the requests in flight answered, then
//! closed); `max_connection_age` drains a connection as a stop does.
//!
//! The upstream is a fake broker that answers every request with its correlation id alone,
//! each after the delay the test gives it: a fault a real broker does not make on demand
//! (an answer held for seconds while the guard drains).

use std::net::SocketAddr;
use std::time::Duration;

use kafka_elect_leaders_proxy::{AuditTarget, Config, Guard, Route};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// A broker that answers each request with its correlation id alone, `delay` after it
/// came; ApiVersions (the guard's probe) at once.
async fn slow_broker(delay: Duration) -> SocketAddr {
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
                    if request[..2] != 18i16.to_be_bytes() {
                        tokio::time::sleep(delay).await;
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

/// A port nothing listens on.
async fn closed_port() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap()
}

/// A guard in front of `upstream` with `config`'s settings, its metrics served: its
/// listener, its metrics listener, the sender that stops it, and its end.
async fn guard(
    upstream: SocketAddr,
    mut config: Config,
) -> (
    SocketAddr,
    SocketAddr,
    oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
) {
    config.routes.push(Route {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream,
    });
    config.metrics_listen = Some("127.0.0.1:0".parse().unwrap());
    config.audit = AuditTarget::File("/dev/null".into());
    let guard = Guard::bind(config).await.unwrap();
    let listen = guard.routes()[0].listen;
    let metrics = guard.metrics_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let run = tokio::spawn(guard.run(async {
        let _ = stopped.await;
    }));
    (listen, metrics, stop, run)
}

/// GETs `path`: the status code and the body.
async fn get(metrics: SocketAddr, path: &str) -> (u16, String) {
    let mut http = TcpStream::connect(metrics).await.unwrap();
    http.write_all(format!("GET {path} HTTP/1.1\r\nHost: guard\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut text = String::new();
    http.read_to_string(&mut text).await.unwrap();
    let code = text[9..12].parse().unwrap();
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
    (code, body)
}

/// Polls `path` until its code is `want`, for at most 10 s.
async fn get_until(metrics: SocketAddr, path: &str, want: u16) -> String {
    for _ in 0..200 {
        let (code, body) = get(metrics, path).await;
        if code == want {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (code, body) = get(metrics, path).await;
    panic!("{path}: {code}, not {want}:\n{body}");
}

/// A Metadata v0 request (all topics): the broker answers it, after its delay.
fn metadata(correlation_id: i32) -> Vec<u8> {
    let mut f = 14i32.to_be_bytes().to_vec();
    f.extend(3i16.to_be_bytes());
    f.extend(0i16.to_be_bytes());
    f.extend(correlation_id.to_be_bytes());
    f.extend((-1i16).to_be_bytes());
    f.extend(0i32.to_be_bytes());
    f
}

/// Reads one answer: its correlation id, or None at the connection's end.
async fn answer(client: &mut TcpStream) -> Option<i32> {
    let mut size = [0u8; 4];
    let read = tokio::time::timeout(Duration::from_secs(20), client.read_exact(&mut size));
    read.await.expect("an answer or the end within 20 s").ok()?;
    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
    client.read_exact(&mut body).await.ok()?;
    Some(i32::from_be_bytes(body[..4].try_into().unwrap()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_once_a_broker_answers_and_not_while_draining() {
    let upstream = slow_broker(Duration::from_secs(2)).await;
    let config = Config {
        drain_timeout: Duration::from_secs(10),
        ..Config::default()
    };
    let (listen, metrics, stop, run) = guard(upstream, config).await;
    assert_eq!(get(metrics, "/livez").await.0, 200);
    let ready = get_until(metrics, "/readyz", 200).await;
    assert!(
        ready.contains(&format!("ok: broker {upstream} answered")),
        "{ready}"
    );

    // A request in flight (the broker holds it 2 s) when the stop comes.
    let mut client = TcpStream::connect(listen).await.unwrap();
    client.write_all(&metadata(1)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.send(()).unwrap();
    let draining = get_until(metrics, "/readyz", 503).await;
    assert!(draining.contains("not ready: draining"), "{draining}");
    // Still live, and no new connection is taken.
    assert_eq!(get(metrics, "/livez").await.0, 200);
    assert!(
        TcpStream::connect(listen).await.is_err(),
        "a new connection taken"
    );
    // A request sent after the stop is not read; the one in flight is answered, then
    // the connection ends.
    client.write_all(&metadata(2)).await.unwrap();
    assert_eq!(answer(&mut client).await, Some(1));
    assert_eq!(answer(&mut client).await, None);
    tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("the guard ended after the drain")
        .unwrap();
    // With the last connection closed, the metrics listener is gone too.
    assert!(TcpStream::connect(metrics).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_ready_while_no_broker_answers() {
    let upstream = closed_port().await;
    let (_, metrics, _stop, _run) = guard(upstream, Config::default()).await;
    let body = get_until(metrics, "/readyz", 503).await;
    assert!(
        body.contains(&format!(
            "not ready: no broker answered the last probe: {upstream}"
        )),
        "{body}"
    );
    assert_eq!(get(metrics, "/livez").await.0, 200);
}

/// A connection past its maximum age is drained: the request in flight answered, then
/// closed; the client reconnects and is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_past_its_maximum_age_is_drained() {
    let upstream = slow_broker(Duration::from_millis(1500)).await;
    let config = Config {
        max_connection_age: Some(Duration::from_millis(500)),
        drain_timeout: Duration::from_secs(10),
        ..Config::default()
    };
    let (listen, metrics, _stop, _run) = guard(upstream, config).await;
    let mut client = TcpStream::connect(listen).await.unwrap();
    client.write_all(&metadata(1)).await.unwrap();
    // Its age comes while the broker holds the request: answered all the same, then the
    // end.
    assert_eq!(answer(&mut client).await, Some(1));
    assert_eq!(answer(&mut client).await, None);
    let mut again = TcpStream::connect(listen).await.unwrap();
    again.write_all(&metadata(2)).await.unwrap();
    assert_eq!(answer(&mut again).await, Some(2));
    let (_, text) = get(metrics, "/metrics").await;
    let aged: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("elect_leaders_guard_connections_aged_total "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(aged >= 1, "{aged}");
}
