//! A tiny proxy pipeline, in process: a recorded client connection goes through the steps a
//! Kafka proxy takes with the crate's proxy toolkit, and the broker's answers come back.
//!
//! 1. `KafkaFrameCodec` cuts the client's bytes into frames of every API (`FramedRead`).
//! 2. `peek_request` reads each header; the proxy gives each request its own upstream
//!    correlation id, as a proxy that multiplexes clients onto one broker connection must,
//!    and `InFlight` remembers what is waiting for an answer.
//! 3. Other APIs are forwarded untouched but for the id, rewritten in place
//!    (`set_request_correlation_id`).
//! 4. ElectLeaders requests are kept as `OwnedRequest`s across an `.await` (a policy
//!    check in another task), then re-encoded without one protected topic, straight into
//!    the upstream `BytesMut` (`encode_buf`, the `BufMut` sink).
//! 5. The broker's responses are paired with their requests by `InFlight`, given back
//!    their client's correlation id (`set_response_correlation_id`), and the ElectLeaders
//!    ones parsed at their request's version (`OwnedResponse`).
//!
//! ```sh
//! cargo run --example proxy_pipeline --features tokio
//! ```

use std::collections::HashMap;
use std::error::Error;

use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use kafka_elect_leaders::{
    api_name, parse_request, peek_request, peek_response, set_request_correlation_id,
    set_response_correlation_id, EncodeRequestExt, ErrorCode, Frames, InFlight, KafkaFrameCodec,
    OwnedRequest, OwnedResponse, Pending, ResponseAt,
};
use tokio_util::codec::{Encoder, FramedRead};

/// The topic this proxy never lets a client elect leaders for.
const PROTECTED_TOPIC: &[u8] = b"payments";

fn corpus(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/corpus/{name}", env!("CARGO_MANIFEST_DIR")))
        .unwrap_or_else(|e| panic!("corpus/{name}: {e}"))
}

/// An ApiVersions v3 request (API key 18), as a client sends it first on a connection.
fn api_versions_request(correlation_id: i32) -> Vec<u8> {
    let mut frame = vec![0, 0, 0, 0]; // size prefix, set below
    frame.extend_from_slice(&18i16.to_be_bytes()); // RequestApiKey: ApiVersions
    frame.extend_from_slice(&3i16.to_be_bytes()); // RequestApiVersion
    frame.extend_from_slice(&correlation_id.to_be_bytes());
    frame.extend_from_slice(&[0, 5]); // ClientId: int16 length ...
    frame.extend_from_slice(b"admin"); // ... and bytes
    frame.push(0); // header tagged fields
    frame.extend_from_slice(b"\x04kel"); // ClientSoftwareName: compact string
    frame.extend_from_slice(b"\x040.1"); // ClientSoftwareVersion: compact string
    frame.push(0); // body tagged fields
    set_size(frame)
}

/// The broker's ApiVersions v3 answer (response header v0: just the correlation id).
fn api_versions_response(correlation_id: i32) -> Vec<u8> {
    let mut frame = vec![0, 0, 0, 0];
    frame.extend_from_slice(&correlation_id.to_be_bytes());
    frame.extend_from_slice(&0i16.to_be_bytes()); // ErrorCode
    frame.push(1); // ApiKeys: empty compact array, for brevity
    frame.extend_from_slice(&0i32.to_be_bytes()); // ThrottleTimeMs
    frame.push(0); // tagged fields
    set_size(frame)
}

fn set_size(mut frame: Vec<u8>) -> Vec<u8> {
    let size = i32::try_from(frame.len() - 4).expect("a small frame");
    frame[..4].copy_from_slice(&size.to_be_bytes());
    frame
}

/// A policy decision taken elsewhere (another task, a service): the request is held, owned,
/// across the `.await`s.
async fn check_policy(request: OwnedRequest<Bytes>) -> (OwnedRequest<Bytes>, bool) {
    let handle = tokio::spawn(async move {
        tokio::task::yield_now().await;
        let protected = request
            .view()
            .topic_partitions()
            .is_some_and(|topics| topics.iter().any(|t| t.topic() == PROTECTED_TOPIC));
        (request, protected)
    });
    handle.await.expect("the policy task")
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn Error>> {
    // A recorded client connection: ApiVersions, then three ElectLeaders requests.
    let client_stream = [
        api_versions_request(1),
        corpus("request-v0.bin"),
        corpus("request-v2-multi.bin"),
        corpus("request-v1-unclean.bin"),
    ]
    .concat();

    // Client -> broker.
    let mut codec = KafkaFrameCodec::new();
    let mut from_client = FramedRead::new(&client_stream[..], codec);
    let mut in_flight = InFlight::<64>::new();
    let mut client_ids = HashMap::new();
    let mut upstream = BytesMut::with_capacity(4096);
    let mut next_upstream_id = 1000;
    while let Some(frame) = from_client.next().await {
        let mut frame = frame?;
        let peek = peek_request(&frame)?;
        let upstream_id = next_upstream_id;
        next_upstream_id += 1;
        client_ids.insert(upstream_id, peek.correlation_id);
        in_flight.push(Pending {
            correlation_id: upstream_id,
            ..peek.into()
        })?;
        let name = api_name(peek.api_key).unwrap_or("an unknown API");
        if !peek.is_elect_leaders() {
            set_request_correlation_id(&mut frame, upstream_id)?;
            codec.encode(frame, &mut upstream)?;
            println!(
                "{name} v{}: id {} -> {upstream_id}, forwarded as is",
                peek.api_version, peek.correlation_id
            );
            continue;
        }
        let request = OwnedRequest::new(frame.freeze())?;
        let (request, protected) = check_policy(request).await;
        let view = request.view();
        let edit = view
            .edit()
            .correlation_id(upstream_id)
            .retain_topics(|t| t.topic() != PROTECTED_TOPIC);
        let len = edit.encode_buf(view.version(), &mut upstream)?;
        println!(
            "{name} v{}: id {} -> {upstream_id}, {len} bytes re-encoded{}",
            view.version(),
            view.correlation_id(),
            if protected {
                " without the protected topic"
            } else {
                ""
            }
        );
    }

    // The broker answers every request, in order; each ElectLeaders partition succeeds.
    let mut broker_stream = BytesMut::new();
    for frame in Frames::new(&upstream) {
        let frame = frame?;
        let peek = peek_request(frame)?;
        if peek.is_elect_leaders() {
            let request = parse_request(frame)?;
            assert!(request.topic_partitions().map_or(true, |topics| topics
                .iter()
                .all(|t| t.topic() != PROTECTED_TOPIC)));
            let answer = request.error_response(ErrorCode::NONE, None);
            codec.encode(
                ResponseAt::new(answer, peek.api_version),
                &mut broker_stream,
            )?;
        } else {
            broker_stream.extend_from_slice(&api_versions_response(peek.correlation_id));
        }
    }

    // Broker -> client.
    let mut from_broker = FramedRead::new(&broker_stream[..], codec);
    let mut to_client = BytesMut::new();
    while let Some(frame) = from_broker.next().await {
        let mut frame = frame?;
        let upstream_id = peek_response(&frame)?.correlation_id;
        let answered = in_flight
            .answer(upstream_id)
            .ok_or("an answer to nothing")?;
        let client_id = client_ids.remove(&upstream_id).ok_or("unknown id")?;
        set_response_correlation_id(&mut frame, client_id)?;
        let request = answered.request;
        let name = api_name(request.api_key).unwrap_or("an unknown API");
        if request.is_elect_leaders() {
            let response = OwnedResponse::new(frame.clone().freeze(), request.api_version)?;
            let partitions: usize = response
                .view()
                .replica_election_results()
                .iter()
                .map(|r| r.partition_result().len())
                .sum();
            println!("{name} answer: id {upstream_id} -> {client_id}, {partitions} partitions");
        } else {
            println!("{name} answer: id {upstream_id} -> {client_id}");
        }
        codec.encode(frame, &mut to_client)?;
    }
    assert!(in_flight.is_empty());

    // The client sees its own correlation ids, in its order.
    let ids: Vec<i32> = Frames::new(&to_client)
        .map(|frame| peek_response(frame.unwrap()).unwrap().correlation_id)
        .collect();
    assert_eq!(ids, [1, 7, 16, i32::MAX]);
    println!("{} bytes back to the client", to_client.len());
    Ok(())
}
