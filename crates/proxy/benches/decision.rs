//! The cost of one `elect-leaders proxy` decision on a 1,000-partition ElectLeaders request
//! (100 topics of 10 partitions): parse, policy check, and what the proxy then writes.
//!
//! ```sh
//! cargo bench -p kafka-elect-leaders-proxy --bench decision
//! ```
//!
//! The policy and the answers are the guard crate's own, as `elect-leaders proxy` runs them.

use std::collections::HashSet;
use std::hint::black_box;

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use kafka_elect_leaders::{
    parse_request, parse_response, ElectLeadersRequestData, ElectLeadersResponseData, ElectionType,
    EncodeRequestExt, EncodeResponseExt, PartitionResultData, ReplicaElectionResultData,
    TopicPartitionsData,
};

use kafka_elect_leaders_proxy::{elect, Policy, Verdict};

const TOPICS: usize = 100;
const PER_TOPIC: i32 = 10;

fn names() -> Vec<String> {
    (0..TOPICS).map(|t| format!("topic-{t:03}")).collect()
}

/// The 1,000-partition request, version 2; `protected` topics are every tenth.
fn request(election_type: ElectionType) -> Vec<u8> {
    let names = names();
    let partitions: Vec<i32> = (0..PER_TOPIC).collect();
    let topics: Vec<TopicPartitionsData<'_>> = names
        .iter()
        .map(|n| TopicPartitionsData::new(n.as_bytes(), &partitions))
        .collect();
    ElectLeadersRequestData {
        correlation_id: 7,
        client_id: Some(b"adminclient-1"),
        election_type,
        topic_partitions: Some(&topics),
        ..Default::default()
    }
    .encode_to_vec(2)
    .unwrap()
}

fn protecting_every_tenth() -> Policy {
    Policy {
        deny_unclean: true,
        protected_topics: names()
            .iter()
            .step_by(10)
            .map(|n| n.as_bytes().into())
            .collect::<HashSet<Box<[u8]>>>(),
        ..Default::default()
    }
}

/// The broker's answer to the trimmed request: every kept partition elected.
fn broker_answer(trimmed: &[u8]) -> Vec<u8> {
    let request = parse_request(trimmed).unwrap();
    let list = request.topic_partitions().unwrap();
    let parts: Vec<Vec<PartitionResultData<'_>>> = list
        .iter()
        .map(|t| {
            t.partitions()
                .iter()
                .map(|p| PartitionResultData {
                    partition_id: p,
                    ..Default::default()
                })
                .collect()
        })
        .collect();
    let results: Vec<ReplicaElectionResultData<'_>> = list
        .iter()
        .zip(&parts)
        .map(|(t, p)| ReplicaElectionResultData {
            topic: t.topic(),
            partition_result: p,
            ..Default::default()
        })
        .collect();
    ElectLeadersResponseData {
        correlation_id: 7,
        replica_election_results: &results,
        ..Default::default()
    }
    .encode_to_vec(2)
    .unwrap()
}

fn decision(c: &mut Criterion) {
    let mut g = c.benchmark_group("decision-1000-partitions");
    let preferred = request(ElectionType::PREFERRED);
    let unclean = request(ElectionType::UNCLEAN);
    let policy = protecting_every_tenth();
    let no_rules = Policy::default();
    g.throughput(Throughput::Bytes(preferred.len() as u64));

    // Nothing refused: the frame is forwarded as it is (no encode).
    g.bench_function(BenchmarkId::new("parse+decide", "no-rules-forward"), |b| {
        b.iter(|| {
            let view = parse_request(black_box(&preferred)).unwrap();
            let d = no_rules.decide(&view);
            assert_eq!(d.verdict, Verdict::Forwarded);
            black_box(d);
        })
    });
    // 10 of 100 topics protected: parse, decide, re-encode the trimmed request.
    let mut out = BytesMut::with_capacity(preferred.len());
    g.bench_function(
        BenchmarkId::new("parse+decide+trim", "protect-10-topics"),
        |b| {
            b.iter(|| {
                let view = parse_request(black_box(&preferred)).unwrap();
                let d = policy.decide(&view);
                assert_eq!(d.verdict, Verdict::Trimmed);
                out.clear();
                elect::encode_trimmed(&policy, &d, &view, &mut out).unwrap();
                black_box(&out);
            })
        },
    );
    // The answer's side of a trimmed request: parse the broker's answer, merge the 100
    // refusals in, encode.
    let view = parse_request(&preferred).unwrap();
    let d = policy.decide(&view);
    let mut trimmed = BytesMut::new();
    elect::encode_trimmed(&policy, &d, &view, &mut trimmed).unwrap();
    let broker = broker_answer(&trimmed);
    let mut merged = BytesMut::with_capacity(broker.len() * 2);
    g.bench_function(BenchmarkId::new("merge-answer", "protect-10-topics"), |b| {
        b.iter(|| {
            let answer_view = parse_response(black_box(&broker), 2).unwrap();
            merged.clear();
            elect::encode_refusal(&policy, &d, &view, Some(&answer_view), &mut merged).unwrap();
            black_box(&merged);
        })
    });
    // UNCLEAN under --deny-unclean: every partition refused by the proxy, answered locally.
    let mut refusal = BytesMut::with_capacity(64 * 1024);
    g.bench_function(
        BenchmarkId::new("parse+decide+refuse", "deny-unclean"),
        |b| {
            b.iter(|| {
                let view = parse_request(black_box(&unclean)).unwrap();
                let d = policy.decide(&view);
                assert_eq!(d.verdict, Verdict::Refused);
                refusal.clear();
                elect::encode_refusal(&policy, &d, &view, None, &mut refusal).unwrap();
                black_box(&refusal);
            })
        },
    );
    g.finish();
}

criterion_group!(benches, decision);
criterion_main!(benches);
