//! A per-client counter in the guard's own metrics: the bytes of Produce requests each
//! client address sent, exported at `/metrics` as
//! `elect_leaders_guard_filter_client_events_total{filter="produce-bytes",event="bytes",client=...}`.
//! The filter only counts: every request goes on as it came.
//!
//! ```text
//! cargo run -p kafka-elect-leaders-proxy --example produce_bytes
//! ```
//!
//! It runs on its own: a stand-in broker on loopback (`common/`, not Kafka), the guard in
//! front of it, and a client that sends three Produce requests (acks=1) of known sizes.
//! It exits 0 when each was answered and the counter holds their sum, 1 otherwise.

#[path = "common/mod.rs"]
mod common;

use kafka_elect_leaders_proxy::filter::{OnRequest, Request, Session};
use kafka_elect_leaders_proxy::{ApiKey, Config, Filter, Filters};
use tokio::net::TcpStream;

/// Counts each Produce request's bytes (size prefix included) per client address.
struct ProduceBytes;

impl Filter for ProduceBytes {
    fn name(&self) -> &'static str {
        "produce-bytes"
    }

    fn reads_request(&self, api_key: i16) -> bool {
        api_key == ApiKey::PRODUCE.0
    }

    fn request(&self, session: &Session, request: &mut Request) -> OnRequest {
        let bytes = request.frame().len() as u64;
        session.count_per_client(self.name(), "bytes", bytes);
        OnRequest::Pass
    }
}

/// A Produce v3 request with acks=1 and no topics (the stand-in answers it all the same),
/// made `pad` bytes longer by its client id: the frame's length is what is counted.
fn produce(correlation_id: i32, pad: usize) -> Vec<u8> {
    let mut body = ApiKey::PRODUCE.0.to_be_bytes().to_vec();
    body.extend(3i16.to_be_bytes());
    body.extend(correlation_id.to_be_bytes());
    body.extend((pad as i16).to_be_bytes());
    body.extend(std::iter::repeat_n(b'c', pad));
    body.extend((-1i16).to_be_bytes()); // transactional id: null
    body.extend(1i16.to_be_bytes()); // acks = 1
    body.extend(30_000i32.to_be_bytes()); // timeout
    body.extend(0i32.to_be_bytes()); // no topics
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend(body);
    frame
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let config = Config {
        filters: Filters::builtin().with(ProduceBytes),
        ..Config::default()
    };
    let (listen, metrics, stop) = common::guard(config).await;
    let mut client = TcpStream::connect(listen).await.expect("the guard");
    let mut sent = 0;
    let mut answered = 0;
    for (i, pad) in [10, 1000, 20_000].into_iter().enumerate() {
        let frame = produce(i as i32 + 1, pad);
        sent += frame.len();
        answered += usize::from(common::round_trip(&mut client, &frame).await.is_some());
    }
    let text = common::scrape(metrics).await;
    let _ = stop.send(());
    let series = format!(
        "elect_leaders_guard_filter_client_events_total{{filter=\"produce-bytes\",event=\"bytes\",client=\"127.0.0.1\"}} {sent}"
    );
    println!("{series}");
    common::verdict(&[
        ("each Produce answered through the guard", answered == 3),
        (
            "the client's counter holds the bytes it sent",
            text.contains(&series),
        ),
    ])
}
