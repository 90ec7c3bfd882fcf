//! The `conn` checks' own tests, on streams made by hand: each check fails what it must
//! (answers out of order, a refused partition forwarded or answered 0, a refused
//! leadership change forwarded, an unaudited refusal under `--log-only`), and a Produce's
//! acks are read back as written.
//!
//! Whole runs of the guard are in `scripts`.

use std::collections::HashMap;

use bytes::BytesMut;
use kafka_elect_leaders::{
    parse_request, ElectLeadersRequestData, ElectionType, EncodeRequestExt, TopicPartitionsData,
};
use kafka_elect_leaders_proxy::audit::AuditError;
use kafka_elect_leaders_proxy::elect::encode_refusal;
use kafka_elect_leaders_proxy::{Policy, Verdict};

use super::checks::{check_answers, check_forwarded};
use super::driver::{broker_answer, plain_answer};
use super::expected::{classify, unaudited_change_refusals, Sent};
use super::requests::{header, produce_acks, put_string, seal};
use super::script::{Acks, Body, Produce};

fn elect(id: i32, topics: &[TopicPartitionsData<'_>]) -> Vec<u8> {
    ElectLeadersRequestData {
        correlation_id: id,
        election_type: ElectionType::PREFERRED,
        topic_partitions: Some(topics),
        ..Default::default()
    }
    .encode_to_vec(2)
    .unwrap()
}

fn protect_payments() -> Policy {
    Policy {
        protected_topics: ["payments"].iter().map(|n| n.as_bytes().into()).collect(),
        ..Policy::default()
    }
}

fn metadata(id: i32) -> Vec<u8> {
    let mut out = header(3, 1, id, b"c", false);
    out.extend_from_slice(b"body");
    seal(out)
}

/// The answers' order is checked: an answer before that of an earlier request fails.
#[test]
#[should_panic(expected = "out of order")]
fn answers_out_of_order_fail() {
    let policy = Policy::default();
    let stream = [metadata(1), metadata(2)].concat();
    let (sent, growing) = classify(&stream, &policy);
    assert!(growing);
    let by_id: HashMap<i32, &Sent<'_>> = sent.iter().map(|s| (s.id, s)).collect();
    let (one, two) = (plain_answer(1, 3), plain_answer(2, 3));
    let broker = HashMap::from([(1, (&one[..], true)), (2, (&two[..], true))]);
    check_answers(&[&one, &two], &by_id, &broker, false, &policy);
    check_answers(&[&two, &one], &by_id, &broker, false, &policy);
}

/// CreatePartitions v0 adding partitions to `topic`.
fn add_partitions(id: i32, topic: &str) -> Vec<u8> {
    let mut out = header(37, 0, id, b"client", false);
    out.extend_from_slice(&1i32.to_be_bytes());
    put_string(&mut out, Some(topic.as_bytes()));
    out.extend_from_slice(&4i32.to_be_bytes());
    out.extend_from_slice(&(-1i32).to_be_bytes());
    out.extend_from_slice(&1000i32.to_be_bytes());
    out.push(0);
    seal(out)
}

/// Issue 35: a leadership change the policy refuses is answered by the guard and never
/// forwarded; one it allows is forwarded byte for byte; an inter-broker API ends the
/// stream as the guard reads it (it closes the connection).
#[test]
#[should_panic(expected = "a leadership change the policy refuses (API 37) was forwarded")]
fn a_refused_leadership_change_forwarded_fails() {
    let policy = protect_payments();
    let stream = [add_partitions(1, "orders"), add_partitions(2, "payments")].concat();
    let (sent, _) = classify(&stream, &policy);
    assert_eq!(sent.len(), 2);
    assert!(sent[0].change_refused.is_none());
    let refusal = sent[1].change_refused.clone().expect("refused");
    let by_id: HashMap<i32, &Sent<'_>> = sent.iter().map(|s| (s.id, s)).collect();
    // The guard's own answer to the refused one is accepted; the broker's is not.
    let broker_one = plain_answer(1, 3);
    let broker = HashMap::from([(1, (&broker_one[..], true))]);
    check_answers(&[&broker_one, &refusal], &by_id, &broker, false, &policy);
    check_forwarded(&[sent[0].frame], &by_id, &policy);
    let mut inter_broker = header(56, 0, 3, b"client", false);
    inter_broker.extend_from_slice(&[0; 4]);
    let stream = [
        add_partitions(1, "orders"),
        seal(inter_broker),
        add_partitions(4, "x"),
    ]
    .concat();
    assert_eq!(classify(&stream, &policy).0.len(), 1);
    check_forwarded(&[sent[0].frame, sent[1].frame], &by_id, &policy);
}

/// A forwarded request that still names a refused partition fails.
#[test]
#[should_panic(expected = "not the original without exactly the refused topics")]
fn a_refused_partition_forwarded_fails() {
    let policy = protect_payments();
    let topics = [
        TopicPartitionsData::new(b"payments", &[0]),
        TopicPartitionsData::new(b"orders", &[1]),
    ];
    let request = elect(1, &topics);
    let (sent, _) = classify(&request, &policy);
    assert_eq!(sent[0].elect.as_ref().unwrap().1.verdict, Verdict::Trimmed);
    let by_id: HashMap<i32, &Sent<'_>> = sent.iter().map(|s| (s.id, s)).collect();
    let trimmed = elect(1, &topics[1..]);
    check_forwarded(&[&trimmed], &by_id, &policy);
    check_forwarded(&[&request], &by_id, &policy);
}

/// An election refused because it could not be audited is accepted in place of any
/// decision, except under `--log-only`, which never refuses (issue 35, finding 5):
/// there it is a violation, for an election and for a leadership change alike.
#[test]
fn an_unaudited_refusal_is_a_violation_under_log_only() {
    let topics = [TopicPartitionsData::new(b"orders", &[1])];
    let request = elect(1, &topics);
    let unaudited = |policy: &Policy| {
        let view = parse_request(&request).unwrap();
        let decision = policy.refuse_unaudited(&view, AuditError::Stalled.reason());
        let mut answer = BytesMut::new();
        encode_refusal(policy, &decision, &view, None, &mut answer).unwrap();
        answer.to_vec()
    };
    let check = |policy: &Policy| {
        let (sent, _) = classify(&request, policy);
        let by_id: HashMap<i32, &Sent<'_>> = sent.iter().map(|s| (s.id, s)).collect();
        let from_broker = broker_answer(&request, 0);
        let broker = HashMap::from([(1, (&from_broker[..], true))]);
        let answer = unaudited(policy);
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check_answers(&[&answer], &by_id, &broker, false, policy);
        }))
        .is_ok()
    };
    assert!(check(&protect_payments()), "an unaudited refusal rejected");
    let log_only = Policy {
        log_only: true,
        ..protect_payments()
    };
    assert!(
        !check(&log_only),
        "an unaudited refusal accepted under --log-only"
    );

    let change = add_partitions(2, "payments");
    assert!(!unaudited_change_refusals(&change, &protect_payments()).is_empty());
    assert!(unaudited_change_refusals(&change, &log_only).is_empty());
}

/// A refused partition answered with the broker's 0 rather than 44 fails.
#[test]
#[should_panic(expected = "refused ones 44")]
fn a_refused_partition_answered_0_fails() {
    let policy = protect_payments();
    let topics = [
        TopicPartitionsData::new(b"payments", &[0]),
        TopicPartitionsData::new(b"orders", &[1]),
    ];
    let request = elect(1, &topics);
    let (sent, _) = classify(&request, &policy);
    let by_id: HashMap<i32, &Sent<'_>> = sent.iter().map(|s| (s.id, s)).collect();
    // The broker's answer to the whole request, passed on as it is.
    let answer = broker_answer(&request, 0);
    let trimmed_answer = broker_answer(&elect(1, &topics[1..]), 0);
    let broker = HashMap::from([(1, (&trimmed_answer[..], true))]);
    check_answers(&[&answer], &by_id, &broker, false, &policy);
}

/// A Produce with acks=0 is read as such, at both header versions.
#[test]
fn produce_acks_are_read() {
    for version in 0..10 {
        for (acks, want) in [(Acks::None, 0), (Acks::Leader, 1), (Acks::All, -1)] {
            let produce = Produce {
                version,
                acks,
                transactional_id: (version % 2 == 0).then(|| b"tx".to_vec()),
                timeout_ms: 1000,
                body: Body::Filled(1),
            };
            assert_eq!(produce_acks(&produce.frame(5)), Some(want));
        }
    }
    assert_eq!(produce_acks(&metadata(1)), None);
}
