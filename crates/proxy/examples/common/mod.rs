//! What the embedder examples share: a stand-in broker (NOT Kafka: it answers an
//! ElectLeaders request with every partition elected, and any other request with its
//! correlation id alone), a guard run in front of it, and a scrape of its `/metrics`.

#![allow(dead_code)]

use std::net::SocketAddr;

use kafka_elect_leaders::{parse_request, EncodeResponse, ErrorCode};
use kafka_elect_leaders_proxy::{Config, Guard, Route};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Starts the stand-in broker on a loopback port.
pub async fn stand_in_broker() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let addr = listener.local_addr().expect("its address");
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut size = [0u8; 4];
                while socket.read_exact(&mut size).await.is_ok() {
                    let len = i32::from_be_bytes(size).clamp(8, 64 << 20) as usize;
                    let mut frame = size.to_vec();
                    frame.resize(4 + len, 0);
                    if socket.read_exact(&mut frame[4..]).await.is_err() {
                        return;
                    }
                    if socket.write_all(&answer(&frame)).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// The stand-in's answer to `frame` (size prefix included).
fn answer(frame: &[u8]) -> Vec<u8> {
    if let Ok(request) = parse_request(frame) {
        let elected = request.error_response(ErrorCode::NONE, None);
        let mut out = vec![0u8; 64 << 10];
        if let Ok(len) = elected.encode(request.version(), &mut out) {
            out.truncate(len);
            return out;
        }
    }
    let mut out = 4i32.to_be_bytes().to_vec();
    out.extend_from_slice(&frame[8..12]);
    out
}

/// A guard for `config` (its routes and metrics listener set here) in front of the
/// stand-in broker: where clients connect, where `/metrics` is, and what stops it.
pub async fn guard(
    mut config: Config,
) -> (SocketAddr, SocketAddr, tokio::sync::oneshot::Sender<()>) {
    config.routes = vec![Route {
        listen: "127.0.0.1:0".parse().expect("an address"),
        upstream: stand_in_broker().await,
    }];
    config.metrics_listen = Some("127.0.0.1:0".parse().expect("an address"));
    let guard = Guard::bind(config).await.expect("the guard starts");
    let listen = guard.routes()[0].listen;
    let metrics = guard.metrics_addr().expect("metrics served");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(guard.run(async {
        let _ = stopped.await;
    }));
    (listen, metrics, stop)
}

/// Sends `frame` on `socket` and reads one answer (size prefix included), or None when
/// the guard closed the connection.
pub async fn round_trip(socket: &mut TcpStream, frame: &[u8]) -> Option<Vec<u8>> {
    socket.write_all(frame).await.ok()?;
    let mut size = [0u8; 4];
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        socket.read_exact(&mut size),
    );
    read.await.ok()?.ok()?;
    let mut answer = size.to_vec();
    answer.resize(4 + i32::from_be_bytes(size).max(0) as usize, 0);
    socket.read_exact(&mut answer[4..]).await.ok()?;
    Some(answer)
}

/// The guard's `/metrics`, as text.
pub async fn scrape(metrics: SocketAddr) -> String {
    let mut socket = TcpStream::connect(metrics)
        .await
        .expect("the metrics listener");
    let get = b"GET /metrics HTTP/1.1\r\nHost: guard\r\nConnection: close\r\n\r\n";
    socket.write_all(get).await.expect("the request written");
    let mut text = String::new();
    let _ = socket.read_to_string(&mut text).await;
    text
}

/// Prints each check and exits 1 unless all held.
pub fn verdict(checks: &[(&str, bool)]) -> std::process::ExitCode {
    for (what, held) in checks {
        println!("{} {what}", if *held { "ok:    " } else { "FAILED:" });
    }
    if checks.iter().all(|(_, held)| *held) {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}
