//! Filters of an embedder's own placed around one of the guard's: one before the built-in
//! ElectLeaders policy (it reads every election as the client sent it), one after it (it
//! reads what the policy lets through: the request trimmed of the protected topic's
//! partitions). The guard's other built-ins are placed as they are in
//! `Filters::builtin()`.
//!
//! ```text
//! cargo run -p kafka-elect-leaders-proxy --example around_elect
//! ```
//!
//! It runs on its own: a stand-in broker on loopback (`common/`, not Kafka: it elects every
//! partition it is asked to), the guard in front of it protecting topic `payments`, and a
//! client electing the preferred leaders of `orders` and `payments`. It exits 0 when the
//! filter before saw both topics, the one after saw `orders` alone, and the client's
//! answer has both (`payments` refused by the guard), 1 otherwise.

#[path = "common/mod.rs"]
mod common;

use std::sync::{Arc, Mutex};

use kafka_elect_leaders::{
    parse_request, parse_response, ElectLeadersRequestData, ElectionType, EncodeRequestExt,
    TopicPartitionsData,
};
use kafka_elect_leaders_proxy::builtin;
use kafka_elect_leaders_proxy::filter::{OnRequest, Request, Session};
use kafka_elect_leaders_proxy::{ApiKey, Config, Filter, Filters, Policy};
use tokio::net::TcpStream;

/// Records the topics of each ElectLeaders request it reads.
struct Topics {
    name: &'static str,
    seen: Arc<Mutex<Vec<Vec<String>>>>,
}

impl Filter for Topics {
    fn name(&self) -> &'static str {
        self.name
    }

    fn reads_request(&self, api_key: i16) -> bool {
        api_key == ApiKey::ELECT_LEADERS.0
    }

    fn request(&self, _: &Session, request: &mut Request) -> OnRequest {
        let topics = match parse_request(request.frame()) {
            Ok(election) => election
                .topic_partitions()
                .iter()
                .flat_map(|topics| topics.iter())
                .map(|t| String::from_utf8_lossy(t.topic()).into_owned())
                .collect(),
            Err(_) => Vec::new(),
        };
        self.seen.lock().unwrap().push(topics);
        OnRequest::Pass
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let before = Arc::new(Mutex::new(Vec::new()));
    let after = Arc::new(Mutex::new(Vec::new()));
    let filters = Filters::none()
        .with(builtin::Doors)
        .with(builtin::FollowerFetch)
        .with(builtin::Sasl)
        .with(builtin::Leadership)
        .with(Topics {
            name: "before-elect",
            seen: before.clone(),
        })
        .with(builtin::ElectLeaders)
        .with(Topics {
            name: "after-elect",
            seen: after.clone(),
        })
        .with(builtin::ApiVersions)
        .with(builtin::Addresses);
    let mut policy = Policy::default();
    policy
        .protected_topics
        .insert(b"payments".to_vec().into_boxed_slice());
    let config = Config {
        filters,
        policy,
        ..Config::default()
    };
    let (listen, _, stop) = common::guard(config).await;
    let mut client = TcpStream::connect(listen).await.expect("the guard");
    let partitions = [0, 1, 2];
    let topics = [
        TopicPartitionsData::new(b"orders", &partitions),
        TopicPartitionsData::new(b"payments", &partitions),
    ];
    let election = ElectLeadersRequestData {
        correlation_id: 7,
        election_type: ElectionType::PREFERRED,
        topic_partitions: Some(&topics),
        ..Default::default()
    }
    .encode_to_vec(2)
    .expect("an ElectLeaders request");
    let answer = common::round_trip(&mut client, &election).await;
    let _ = stop.send(());
    let answered: Vec<(String, usize, Vec<i16>)> = answer
        .as_deref()
        .and_then(|a| parse_response(a, 2).ok())
        .map(|r| {
            r.replica_election_results()
                .iter()
                .map(|t| {
                    let codes = t
                        .partition_result()
                        .iter()
                        .map(|p| p.error_code().0)
                        .collect();
                    (
                        String::from_utf8_lossy(t.topic()).into_owned(),
                        t.partition_result().len(),
                        codes,
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let before = before.lock().unwrap().clone();
    let after = after.lock().unwrap().clone();
    println!("before the policy: {before:?}");
    println!("after the policy: {after:?}");
    println!("the client's answer: {answered:?}");
    let elected = answered
        .iter()
        .any(|(t, n, codes)| t == "orders" && *n == 3 && codes.iter().all(|&c| c == 0));
    let refused = answered
        .iter()
        .any(|(t, n, codes)| t == "payments" && *n == 3 && codes.iter().all(|&c| c == 44));
    common::verdict(&[
        (
            "the filter before the policy read both topics",
            before == [vec!["orders".to_owned(), "payments".to_owned()]],
        ),
        (
            "the filter after the policy read what it let through",
            after == [vec!["orders".to_owned()]],
        ),
        (
            "orders elected by the broker, payments refused by the guard",
            elected && refused,
        ),
    ])
}
