//! Issue 43, item 1: the chain of filters as filter authors expect it. Before, `Forward`
//! ended the chain (a filter after the one that forwarded never saw the request), a splice
//! ended the answer's chain, a filter's close counted as a malformed frame, and a filter
//! could not drop a request or hear of a connection's end.
//!
//! Each test runs a guard in front of a stand-in broker (not Kafka: it answers each
//! request with its correlation id and the request's last byte) with filters written here.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_elect_leaders_proxy::filter::{
    Forward, OnRequest, OnResponse, Request, Respond, Response as Answer, Session,
};
use kafka_elect_leaders_proxy::{AuditTarget, Config, Filter, Filters, Guard, Pending, Route};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// ListGroups: no built-in filter reads it.
const KEY: i16 = 16;

/// Answers each request with its correlation id and the request's last byte.
async fn stand_in_broker() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut size = [0u8; 4];
                while socket.read_exact(&mut size).await.is_ok() {
                    let mut request = vec![0u8; i32::from_be_bytes(size) as usize];
                    if socket.read_exact(&mut request).await.is_err() {
                        return;
                    }
                    let mut answer = 5i32.to_be_bytes().to_vec();
                    answer.extend_from_slice(&request[4..8]);
                    answer.push(*request.last().unwrap());
                    if socket.write_all(&answer).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

async fn guard(filters: Filters) -> SocketAddr {
    let config = Config {
        filters,
        routes: vec![Route {
            listen: "127.0.0.1:0".parse().unwrap(),
            upstream: stand_in_broker().await,
        }],
        audit: AuditTarget::File("/dev/null".into()),
        ..Config::default()
    };
    let guard = Guard::bind(config).await.unwrap();
    let listen = guard.routes()[0].listen;
    tokio::spawn(guard.run(std::future::pending()));
    listen
}

/// A ListGroups v0 request whose last byte is `last`.
fn request(correlation_id: i32, last: u8) -> Vec<u8> {
    let mut body = KEY.to_be_bytes().to_vec();
    body.extend(0i16.to_be_bytes());
    body.extend(correlation_id.to_be_bytes());
    body.extend((-1i16).to_be_bytes());
    body.push(last);
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend(body);
    frame
}

/// One answer's body (correlation id first), or None when the connection closed.
async fn answer(client: &mut TcpStream) -> Option<Vec<u8>> {
    let mut size = [0u8; 4];
    let read = tokio::time::timeout(Duration::from_secs(10), client.read_exact(&mut size));
    read.await.ok()?.ok()?;
    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
    client.read_exact(&mut body).await.ok()?;
    Some(body)
}

/// What the filters saw, in order.
type Seen = Arc<Mutex<Vec<String>>>;

/// Forwards each request with its last byte replaced by `to`, its answer merged: the
/// broker's answer with `to` appended.
struct Rewrite {
    to: u8,
    seen: Seen,
}

impl Filter for Rewrite {
    fn name(&self) -> &'static str {
        "rewrite"
    }
    fn reads_request(&self, api_key: i16) -> bool {
        api_key == KEY
    }
    fn request(&self, _: &Session, request: &mut Request) -> OnRequest {
        let mut frame = request.frame().to_vec();
        self.seen
            .lock()
            .unwrap()
            .push(format!("rewrite saw {}", frame.last().unwrap()));
        *frame.last_mut().unwrap() = self.to;
        let to = self.to;
        let merge = Respond::later(frame.len(), move |broker, out: &mut BytesMut| {
            let broker = broker.unwrap_or_default();
            let size = (broker.len() - 4 + 1) as i32;
            out.extend_from_slice(&size.to_be_bytes());
            out.extend_from_slice(&broker[4..]);
            out.extend_from_slice(&[to]);
            Ok(())
        });
        OnRequest::Forward(Forward::new(Bytes::from(frame)).merged_by(merge))
    }
}

/// Records the last byte of each request it reads, and what it was told to do with it:
/// last byte 1 answered here, 2 dropped, 3 closed, anything else passed on.
struct Record {
    seen: Seen,
}

impl Filter for Record {
    fn name(&self) -> &'static str {
        "record"
    }
    fn reads_request(&self, api_key: i16) -> bool {
        api_key == KEY
    }
    fn reads_response(&self, api_key: i16) -> bool {
        api_key == KEY
    }
    fn request(&self, session: &Session, request: &mut Request) -> OnRequest {
        let last = *request.frame().last().unwrap();
        self.seen.lock().unwrap().push(format!("record saw {last}"));
        let correlation_id = request.peek().correlation_id;
        match last {
            1 => {
                let mut frame = 5i32.to_be_bytes().to_vec();
                frame.extend(correlation_id.to_be_bytes());
                frame.push(b'R');
                OnRequest::Answer(Respond::frame(Bytes::from(frame)))
            }
            2 => OnRequest::Drop,
            3 => {
                session.count(self.name(), "closed", 1);
                OnRequest::close("the last byte is 3")
            }
            _ => OnRequest::Pass,
        }
    }
    fn response(&self, _: &Session, _: Pending, answer: &mut Answer) -> OnResponse {
        let frame = answer.frame();
        self.seen
            .lock()
            .unwrap()
            .push(format!("record read an answer of {} bytes", frame.len()));
        OnResponse::Pass
    }
}

/// A filter after one that forwards another frame reads that frame; the broker's answer
/// goes back through the merge.
#[tokio::test]
async fn a_filter_after_a_forward_reads_the_frame_forwarded() {
    let seen = Seen::default();
    let listen = guard(
        Filters::none()
            .with(Rewrite {
                to: 9,
                seen: seen.clone(),
            })
            .with(Record { seen: seen.clone() }),
    )
    .await;
    let mut client = TcpStream::connect(listen).await.unwrap();
    client.write_all(&request(7, 0)).await.unwrap();
    let got = answer(&mut client).await.expect("answered");
    // The broker saw 9 (rewritten), the merge added 9.
    assert_eq!(got, [0, 0, 0, 7, 9, 9]);
    assert_eq!(
        *seen.lock().unwrap(),
        ["rewrite saw 0", "record saw 9"],
        "the second filter reads what the first forwarded"
    );
}

/// A filter that answers after one that forwarded another frame: the first filter's merge
/// writes the client's answer from the second's, as it would from the broker's.
#[tokio::test]
async fn merges_nest_around_a_later_filters_answer() {
    let seen = Seen::default();
    let listen = guard(
        Filters::none()
            .with(Rewrite {
                to: 1,
                seen: seen.clone(),
            })
            .with(Record { seen: seen.clone() }),
    )
    .await;
    let mut client = TcpStream::connect(listen).await.unwrap();
    client.write_all(&request(7, 0)).await.unwrap();
    let got = answer(&mut client).await.expect("answered");
    assert_eq!(got, [0, 0, 0, 7, b'R', 1]);
}

/// A dropped request is neither forwarded nor answered; the next one is.
#[tokio::test]
async fn a_dropped_request_gets_no_answer_and_the_next_one_does() {
    let seen = Seen::default();
    let listen = guard(Filters::none().with(Record { seen: seen.clone() })).await;
    let mut client = TcpStream::connect(listen).await.unwrap();
    let mut both = request(1, 2);
    both.extend(request(2, 0));
    client.write_all(&both).await.unwrap();
    let got = answer(&mut client).await.expect("answered");
    assert_eq!(got, [0, 0, 0, 2, 0], "the second request's answer alone");
}

/// A filter's close: the connection ends, and the filter's counter and close counter
/// move; the guard counts it as refused, not malformed.
#[tokio::test]
async fn a_filters_close_is_its_own() {
    let seen = Seen::default();
    let broker = stand_in_broker().await;
    let config = Config {
        filters: Filters::none().with(Record { seen }),
        routes: vec![Route {
            listen: "127.0.0.1:0".parse().unwrap(),
            upstream: broker,
        }],
        metrics_listen: Some("127.0.0.1:0".parse().unwrap()),
        audit: AuditTarget::File("/dev/null".into()),
        ..Config::default()
    };
    let guard = Guard::bind(config).await.unwrap();
    let listen = guard.routes()[0].listen;
    let metrics = guard.metrics_addr().unwrap();
    tokio::spawn(guard.run(std::future::pending()));
    let mut client = TcpStream::connect(listen).await.unwrap();
    client.write_all(&request(1, 3)).await.unwrap();
    assert_eq!(answer(&mut client).await, None, "closed");
    let text = scrape(metrics).await;
    for line in [
        "elect_leaders_guard_filter_closes_total{filter=\"record\"} 1",
        "elect_leaders_guard_filter_events_total{filter=\"record\",event=\"closed\"} 1",
        "elect_leaders_guard_connections_closed_total{reason=\"refused\"} 1",
    ] {
        assert!(text.contains(line), "{line} not in\n{text}");
    }
    assert!(
        !text.contains("elect_leaders_guard_connections_closed_total{reason=\"malformed\"} 1"),
        "{text}"
    );
}

/// `/metrics`, once the connection's close is counted.
async fn scrape(metrics: SocketAddr) -> String {
    for _ in 0..100 {
        let mut socket = TcpStream::connect(metrics).await.unwrap();
        socket
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut text = String::new();
        socket.read_to_string(&mut text).await.unwrap();
        if text.contains("connections_closed_total{reason=\"refused\"}") {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the close was never counted");
}

/// Splices the answer: a new head (the correlation id and 'S'), then the broker's answer
/// from its last byte.
struct Splice;

impl Filter for Splice {
    fn name(&self) -> &'static str {
        "splice"
    }
    fn reads_response(&self, api_key: i16) -> bool {
        api_key == KEY
    }
    fn response(&self, _: &Session, _: Pending, answer: &mut Answer) -> OnResponse {
        let frame = answer.frame();
        let mut head = BytesMut::new();
        head.extend_from_slice(&6i32.to_be_bytes());
        head.extend_from_slice(&frame[4..8]);
        head.extend_from_slice(b"S");
        OnResponse::Splice {
            head,
            tail_from: frame.len() - 1,
        }
    }
}

/// A filter after one that splices the answer reads the spliced answer; the client gets it.
#[tokio::test]
async fn a_filter_after_a_splice_reads_the_spliced_answer() {
    let seen = Seen::default();
    let listen = guard(
        Filters::none()
            .with(Splice)
            .with(Record { seen: seen.clone() }),
    )
    .await;
    let mut client = TcpStream::connect(listen).await.unwrap();
    client.write_all(&request(7, 0)).await.unwrap();
    let got = answer(&mut client).await.expect("answered");
    assert_eq!(got, [0, 0, 0, 7, b'S', 0]);
    assert_eq!(
        *seen.lock().unwrap(),
        ["record saw 0", "record read an answer of 10 bytes"]
    );
}

/// Counts the connections it heard of, by id, and their ends.
#[derive(Clone, Default)]
struct Ends {
    opened: Arc<Mutex<Vec<u64>>>,
    closed: Arc<Mutex<Vec<u64>>>,
}

impl Filter for Ends {
    fn name(&self) -> &'static str {
        "ends"
    }
    fn reads_request(&self, api_key: i16) -> bool {
        api_key == KEY
    }
    fn request(&self, session: &Session, _: &mut Request) -> OnRequest {
        self.opened.lock().unwrap().push(session.id());
        OnRequest::Pass
    }
    fn closed(&self, session: &Session) {
        self.closed.lock().unwrap().push(session.id());
    }
}

/// Each connection has an id of its own, and its end is heard once, whoever closed it.
#[tokio::test]
async fn each_connection_has_an_id_and_an_end() {
    let ends = Ends::default();
    let listen = guard(Filters::none().with(ends.clone())).await;
    for _ in 0..3 {
        let mut client = TcpStream::connect(listen).await.unwrap();
        client.write_all(&request(1, 0)).await.unwrap();
        answer(&mut client).await.expect("answered");
    }
    let opened = ends.opened.lock().unwrap().clone();
    assert_eq!(opened.len(), 3);
    assert!(opened[0] != opened[1] && opened[1] != opened[2] && opened[0] != opened[2]);
    for _ in 0..100 {
        if ends.closed.lock().unwrap().len() == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut closed = ends.closed.lock().unwrap().clone();
    closed.sort_unstable();
    let mut opened = opened;
    opened.sort_unstable();
    assert_eq!(closed, opened);
}
