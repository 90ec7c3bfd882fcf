//! A guard built from the library with a filter of its own: the guard's filters, then one
//! that lets through only the client ids it knows, closing the connection of any other
//! before its request reaches the broker.
//!
//! ```text
//! cargo run -p kafka-elect-leaders-proxy --example filter
//! ```
//!
//! To run on its own, the example stands up a stand-in broker on loopback (a few lines
//! below, not Kafka: it answers each request with its correlation id and nothing else),
//! puts the guard in front of it, and sends one ListGroups request as `billing` (answered)
//! and one as `intruder` (the connection closed, nothing forwarded). It exits 0 when both
//! went as they should, 1 otherwise. In front of a real cluster, the same `Config` goes to
//! [`Guard::bind`] with the brokers' addresses in its routes.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kafka_elect_leaders_proxy::filter::{OnRequest, Request, Session};
use kafka_elect_leaders_proxy::{Config, Filter, Filters, Guard, Route};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Requests only from the client ids it names; every other client's connection is closed
/// at its first request (and the guard's log says why).
struct KnownClients {
    known: HashSet<Vec<u8>>,
}

impl Filter for KnownClients {
    fn name(&self) -> &'static str {
        "known-clients"
    }

    /// Every API: the client id is in every request header.
    fn reads_request(&self, _: i16) -> bool {
        true
    }

    fn request(&self, session: &Session, request: &mut Request) -> OnRequest {
        match client_id(request.frame()) {
            Some(id) if self.known.contains(id) => OnRequest::Pass,
            id => OnRequest::close(format!(
                "client id {:?} from {} is not one this guard knows",
                id.map(String::from_utf8_lossy),
                session.conn().client
            )),
        }
    }
}

/// The client id of any Kafka request (header v1 and later): after the size prefix, the
/// API key, version and correlation id, a string of int16 length; None when null or cut.
fn client_id(frame: &[u8]) -> Option<&[u8]> {
    let len = i16::from_be_bytes(frame.get(12..14)?.try_into().ok()?);
    frame.get(14..14 + usize::try_from(len).ok()?)
}

/// A ListGroups v0 request (API key 16, no body) from `client_id`, size prefix included.
fn list_groups(correlation_id: i32, client_id: &str) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&16i16.to_be_bytes());
    body.extend_from_slice(&0i16.to_be_bytes());
    body.extend_from_slice(&correlation_id.to_be_bytes());
    body.extend_from_slice(&(client_id.len() as i16).to_be_bytes());
    body.extend_from_slice(client_id.as_bytes());
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    frame
}

/// The stand-in broker: answers each request with a frame holding its correlation id
/// alone, and counts the requests that reached it.
async fn stand_in_broker(listener: TcpListener, reached: Arc<AtomicUsize>) {
    loop {
        let Ok((mut socket, _)) = listener.accept().await else {
            return;
        };
        let reached = reached.clone();
        tokio::spawn(async move {
            let mut size = [0u8; 4];
            while socket.read_exact(&mut size).await.is_ok() {
                let mut request = vec![0u8; i32::from_be_bytes(size).clamp(0, 1 << 16) as usize];
                if socket.read_exact(&mut request).await.is_err() {
                    return;
                }
                reached.fetch_add(1, Ordering::Relaxed);
                let mut answer = 4i32.to_be_bytes().to_vec();
                answer.extend_from_slice(request.get(4..8).unwrap_or(&[0; 4]));
                if socket.write_all(&answer).await.is_err() {
                    return;
                }
            }
        });
    }
}

/// Sends one ListGroups request through the guard as `client_id`: the answer's
/// correlation id, or None when the guard closed the connection instead.
async fn ask(guard: SocketAddr, client_id: &str) -> Option<i32> {
    let mut socket = TcpStream::connect(guard).await.ok()?;
    socket.write_all(&list_groups(7, client_id)).await.ok()?;
    let mut answer = [0u8; 8];
    let read = tokio::time::timeout(Duration::from_secs(10), socket.read_exact(&mut answer));
    match read.await {
        Ok(Ok(_)) => Some(i32::from_be_bytes(answer[4..8].try_into().ok()?)),
        _ => None,
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let broker = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let reached = Arc::new(AtomicUsize::new(0));
    let upstream = broker.local_addr().expect("its address");
    tokio::spawn(stand_in_broker(broker, reached.clone()));

    let config = Config {
        routes: vec![Route {
            listen: "127.0.0.1:0".parse().expect("an address"),
            upstream,
        }],
        // The guard's own filters first, then this one.
        filters: Filters::builtin().with(KnownClients {
            known: HashSet::from([b"billing".to_vec()]),
        }),
        ..Config::default()
    };
    let guard = Guard::bind(config).await.expect("the guard starts");
    let listen = guard.routes()[0].listen;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(guard.run(async {
        let _ = stopped.await;
    }));

    let billing = ask(listen, "billing").await;
    let intruder = ask(listen, "intruder").await;
    let _ = stop.send(());
    let _ = running.await;

    let forwarded = reached.load(Ordering::Relaxed);
    println!("billing: answered with correlation id {billing:?}");
    println!(
        "intruder: {}",
        intruder.map_or("connection closed".to_owned(), |id| format!(
            "answered ({id})"
        ))
    );
    println!("requests that reached the broker: {forwarded}");
    if billing == Some(7) && intruder.is_none() && forwarded == 1 {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}
