//! The policy's decisions, rule by rule: unclean and other election types, protected topics, client ids, partition caps, log-only and a principal's own rules.

use super::*;
use kafka_elect_leaders::VERSIONS;
use kafka_elect_leaders::{
    parse_request, ElectLeadersRequestData, EncodeRequestExt, TopicPartitionsData,
};

fn frame(
    version: i16,
    client_id: Option<&[u8]>,
    election_type: ElectionType,
    topics: Option<&[TopicPartitionsData<'_>]>,
) -> Vec<u8> {
    ElectLeadersRequestData {
        correlation_id: 7,
        client_id,
        election_type,
        topic_partitions: topics,
        ..Default::default()
    }
    .encode_to_vec(version)
    .unwrap()
}

/// A 32,500-byte client id in a request of 8,000 partitions, refused whole: the
/// message repeated for every partition shows 64 bytes of it, so the answer stays
/// near the request's size instead of 264 MB (found by the conn fuzz target).
#[test]
fn a_long_client_id_is_not_repeated_in_every_refused_partition() {
    let long_id = vec![b'x'; 32_500];
    let partitions: Vec<i32> = (0..8_000).collect();
    let topics = [TopicPartitionsData::new(b"orders", &partitions)];
    let request = frame(2, Some(&long_id), ElectionType::PREFERRED, Some(&topics));
    let view = parse_request(&request).unwrap();
    let policy = Policy {
        allowed_client_ids: set(&["ops"]),
        ..Default::default()
    };
    let decision = policy.decide(&view);
    let Refusal::Whole { message } = &decision.refusal else {
        panic!("{:?}", decision.refusal)
    };
    assert!(message.len() < 200, "{} bytes: {message}", message.len());
    assert!(message.contains("(32500 bytes)"), "{message}");
    let mut answer = bytes::BytesMut::new();
    crate::filters::elect::encode::encode_refusal(&policy, &decision, &view, None, &mut answer)
        .unwrap();
    assert!(
        answer.len() < 40 * request.len(),
        "a {} byte request answered with {} bytes",
        request.len(),
        answer.len()
    );
    // A short one is shown whole, and a multi-byte character is not cut in two.
    assert_eq!(quoted(b"dev"), "'dev'");
    let accented = "é".repeat(40);
    assert_eq!(
        quoted(accented.as_bytes()),
        format!("'{}...' (80 bytes)", "é".repeat(32))
    );
}

fn set(items: &[&str]) -> HashSet<Box<[u8]>> {
    items.iter().map(|s| s.as_bytes().into()).collect()
}

const TWO_TOPICS: &[TopicPartitionsData<'static>] = &[
    TopicPartitionsData::new(b"orders", &[0, 1]),
    TopicPartitionsData::new(b"payments", &[0, 1, 2]),
];

fn decide(policy: &Policy, frame: &[u8]) -> Decision {
    policy.decide(&parse_request(frame).unwrap())
}

#[test]
fn no_rules_forwards_everything() {
    let policy = Policy::default();
    let f = frame(2, Some(b"x"), ElectionType::UNCLEAN, None);
    let d = decide(&policy, &f);
    assert_eq!(d.verdict, Verdict::Forwarded);
    assert!(d.rules == Rules::default() && d.requested.is_none() && d.refused == 0);
}

#[test]
fn unclean_named_partitions_refused_one_by_one() {
    let policy = Policy {
        deny_unclean: true,
        ..Default::default()
    };
    let f = frame(1, Some(b"x"), ElectionType::UNCLEAN, Some(TWO_TOPICS));
    let d = decide(&policy, &f);
    assert_eq!(d.verdict, Verdict::Refused);
    assert_eq!(d.refusal, Refusal::Partitions { all: true });
    assert_eq!((d.requested, d.refused), (Some(5), 5));
    assert_eq!(d.rules.iter().collect::<Vec<_>>(), [Rule::DenyUnclean]);
    assert!(d.refuses_topic(&policy, b"orders"));
    assert_eq!(d.partition_message(&policy, b"orders"), MESSAGE_UNCLEAN);
    // Preferred elections pass.
    let f = frame(1, Some(b"x"), ElectionType::PREFERRED, Some(TWO_TOPICS));
    assert_eq!(decide(&policy, &f).verdict, Verdict::Forwarded);
}

#[test]
fn unclean_all_partitions_refused_whole() {
    let policy = Policy {
        deny_unclean: true,
        ..Default::default()
    };
    let f = frame(2, Some(b"x"), ElectionType::UNCLEAN, None);
    let d = decide(&policy, &f);
    assert_eq!(d.verdict, Verdict::Refused);
    assert!(
        matches!(&d.refusal, Refusal::Whole { message } if message.contains("only PREFERRED elections are allowed, here an UNCLEAN one for all partitions"))
    );
    assert_eq!((d.requested, d.refused), (None, 0));
}

/// Issue 23, finding 6: under `deny_unclean`, election types other than PREFERRED and
/// UNCLEAN used to be forwarded and audited as "forwarded". What the policy cannot
/// prove allowed is refused, named partitions and all partitions alike.
#[test]
fn deny_unclean_refuses_every_type_but_preferred() {
    let policy = Policy {
        deny_unclean: true,
        protected_topics: set(&["payments"]),
        ..Default::default()
    };
    for raw in [2i8, 3, 127, -1, -128] {
        let election_type = ElectionType(raw);
        for version in VERSIONS.filter(|&v| kafka_elect_leaders::has_election_type(v)) {
            let f = frame(version, Some(b"x"), election_type, Some(TWO_TOPICS));
            let d = decide(&policy, &f);
            assert_eq!(d.verdict, Verdict::Refused, "type {raw} v{version}");
            assert_eq!(d.refusal, Refusal::Partitions { all: true });
            assert_eq!((d.requested, d.refused), (Some(5), 5));
            assert!(d.rules.contains(Rule::DenyUnclean));
            assert_eq!(d.partition_message(&policy, b"orders"), MESSAGE_OTHER_TYPE);
            assert_eq!(
                d.partition_message(&policy, b"payments"),
                MESSAGE_OTHER_TYPE_PROTECTED
            );

            let f = frame(version, Some(b"x"), election_type, None);
            let d = decide(&policy, &f);
            assert_eq!(d.verdict, Verdict::Refused, "type {raw} v{version}, all");
            let Refusal::Whole { message } = &d.refusal else {
                panic!("type {raw}: {:?}", d.refusal);
            };
            assert!(
                message.contains(&format!("unknown type {raw} ")),
                "{message}"
            );
            assert!(!message.contains("--"), "no option named: {message}");
        }
    }
    // Issue 35, finding 9: an empty topic list of any type but PREFERRED was forwarded.
    for raw in [1i8, 2, -1] {
        let f = frame(2, Some(b"x"), ElectionType(raw), Some(&[]));
        let d = decide(&policy, &f);
        assert_eq!(d.verdict, Verdict::Refused, "type {raw}, empty list");
        assert!(
            matches!(&d.refusal, Refusal::Whole { message } if message.contains("an empty topic list"))
        );
    }
    let f = frame(2, Some(b"x"), ElectionType::PREFERRED, Some(&[]));
    assert_eq!(decide(&policy, &f).verdict, Verdict::Forwarded);
    // Log-only still says what it would refuse.
    let log_only = Policy {
        log_only: true,
        ..policy.clone()
    };
    let f = frame(2, Some(b"x"), ElectionType(2), Some(TWO_TOPICS));
    assert_eq!(decide(&log_only, &f).verdict, Verdict::WouldRefuse);
    // PREFERRED passes; v0 carries no type and is a preferred election.
    let f = frame(
        2,
        Some(b"x"),
        ElectionType::PREFERRED,
        Some(&TWO_TOPICS[..1]),
    );
    assert_eq!(decide(&policy, &f).verdict, Verdict::Forwarded);
    let f = frame(
        0,
        Some(b"x"),
        ElectionType::PREFERRED,
        Some(&TWO_TOPICS[..1]),
    );
    assert_eq!(decide(&policy, &f).verdict, Verdict::Forwarded);
}

#[test]
fn protected_topic_trims() {
    let policy = Policy {
        protected_topics: set(&["payments"]),
        ..Default::default()
    };
    let f = frame(2, Some(b"x"), ElectionType::PREFERRED, Some(TWO_TOPICS));
    let d = decide(&policy, &f);
    assert_eq!(d.verdict, Verdict::Trimmed);
    assert_eq!((d.requested, d.refused), (Some(5), 3));
    assert!(d.refuses_topic(&policy, b"payments") && !d.refuses_topic(&policy, b"orders"));
    assert_eq!(d.partition_message(&policy, b"payments"), MESSAGE_PROTECTED);
    // Only protected topics: nothing left to forward.
    let only = [TopicPartitionsData::new(b"payments", &[1])];
    let f = frame(0, Some(b"x"), ElectionType::PREFERRED, Some(&only));
    assert_eq!(decide(&policy, &f).verdict, Verdict::Refused);
    // All partitions would include the protected topic: refused whole, at every version.
    for v in VERSIONS {
        let f = frame(v, Some(b"x"), ElectionType::PREFERRED, None);
        let d = decide(&policy, &f);
        assert!(matches!(d.refusal, Refusal::Whole { .. }), "v{v}");
    }
    // Unclean on a protected topic: both rules named.
    let policy = Policy {
        deny_unclean: true,
        ..policy
    };
    let f = frame(2, Some(b"x"), ElectionType::UNCLEAN, Some(TWO_TOPICS));
    let d = decide(&policy, &f);
    assert_eq!(d.partition_message(&policy, b"payments"), MESSAGE_BOTH);
    assert_eq!(d.rules.iter().count(), 2);
}

#[test]
fn client_ids_and_max_partitions_refuse_whole() {
    let policy = Policy {
        allowed_client_ids: set(&["ops"]),
        max_partitions: Some(4),
        ..Default::default()
    };
    let ok = frame(
        2,
        Some(b"ops"),
        ElectionType::PREFERRED,
        Some(&TWO_TOPICS[..1]),
    );
    assert_eq!(decide(&policy, &ok).verdict, Verdict::Forwarded);
    let other = frame(
        2,
        Some(b"dev"),
        ElectionType::PREFERRED,
        Some(&TWO_TOPICS[..1]),
    );
    let d = decide(&policy, &other);
    assert!(matches!(&d.refusal, Refusal::Whole { message } if message.contains("'dev'")));
    assert_eq!(d.refused, 2);
    let null_id = frame(2, None, ElectionType::PREFERRED, Some(&[]));
    assert_eq!(decide(&policy, &null_id).verdict, Verdict::Refused);
    let many = frame(2, Some(b"ops"), ElectionType::PREFERRED, Some(TWO_TOPICS));
    let d = decide(&policy, &many);
    assert_eq!(d.rules.iter().collect::<Vec<_>>(), [Rule::MaxPartitions]);
    assert!(matches!(&d.refusal, Refusal::Whole { message } if message.contains("5 partitions")));
    let all = frame(2, Some(b"ops"), ElectionType::PREFERRED, None);
    assert_eq!(
        decide(&policy, &all).rules.iter().collect::<Vec<_>>(),
        [Rule::MaxPartitions]
    );
}

#[test]
fn log_only_would_refuse() {
    let policy = Policy {
        protected_topics: set(&["payments"]),
        log_only: true,
        ..Default::default()
    };
    let f = frame(2, Some(b"x"), ElectionType::PREFERRED, Some(TWO_TOPICS));
    let d = decide(&policy, &f);
    assert_eq!(d.verdict, Verdict::WouldRefuse);
    assert_eq!(d.refused, 3);
    let f = frame(
        2,
        Some(b"x"),
        ElectionType::PREFERRED,
        Some(&TWO_TOPICS[..1]),
    );
    assert_eq!(decide(&policy, &f).verdict, Verdict::Forwarded);
}

/// A principal with rules of its own is decided by them, everyone else by the
/// policy's; the allowed principals stay the policy's either way.
#[test]
fn a_principal_with_rules_of_its_own() {
    let ops = Policy {
        deny_unclean: false,
        protected_topics: HashSet::new(),
        ..Default::default()
    };
    let policy = Policy {
        deny_unclean: true,
        protected_topics: set(&["payments"]),
        allowed_principals: ["ops", "alice"].into_iter().map(Into::into).collect(),
        principal_rules: [("ops".into(), ops)].into_iter().collect(),
        ..Default::default()
    };
    let unclean = frame(2, Some(b"x"), ElectionType::UNCLEAN, Some(TWO_TOPICS));
    let view = parse_request(&unclean).unwrap();

    let d = policy.decide_as(&view, Some("ops"));
    assert_eq!(d.verdict, Verdict::Forwarded);
    assert_eq!(d.rules_of(), Some("ops"));
    assert!(!d.refuses_topic(&policy, b"payments"));

    let d = policy.decide_as(&view, Some("alice"));
    assert_eq!(d.verdict, Verdict::Refused);
    assert_eq!(d.rules_of(), None);
    assert!(d.rules.contains(Rule::DenyUnclean) && d.rules.contains(Rule::ProtectTopic));
    assert_eq!(d.partition_message(&policy, b"payments"), MESSAGE_BOTH);
    assert_eq!(d.partition_message(&policy, b"orders"), MESSAGE_UNCLEAN);

    // A preferred election of the protected topic: trimmed for alice, whole for ops.
    let preferred = frame(2, Some(b"x"), ElectionType::PREFERRED, Some(TWO_TOPICS));
    let view = parse_request(&preferred).unwrap();
    assert_eq!(
        policy.decide_as(&view, Some("alice")).verdict,
        Verdict::Trimmed
    );
    assert_eq!(
        policy.decide_as(&view, Some("ops")).verdict,
        Verdict::Forwarded
    );

    // Rules of its own do not allow a principal the policy does not.
    let mut policy = policy;
    policy.allowed_principals.remove("ops");
    let d = policy.decide_as(&view, Some("ops"));
    assert_eq!(d.verdict, Verdict::Refused);
    assert!(d.rules.contains(Rule::AllowPrincipal));
    // And no principal is decided by the policy's rules.
    assert_eq!(policy.decide_as(&view, None).rules_of(), None);
}

/// Issue 43, item 2: the operator's refusal text begins every message of an answer, a
/// request refused whole and one refused partition by partition alike, and the answer's
/// length is measured with it (the budget takes that length before it is written).
#[test]
fn the_operators_refusal_text_begins_every_message() {
    const TEXT: &str = "refused by the Kafka team's guard (ask in #kafka)";
    let topics = [
        TopicPartitionsData::new(b"payments", &[0, 1]),
        TopicPartitionsData::new(b"logs", &[0]),
    ];
    let policy = Policy {
        deny_unclean: true,
        protected_topics: set(&["payments"]),
        allowed_client_ids: set(&["ops"]),
        refusal_text: Some(TEXT.into()),
        ..Default::default()
    };
    for (client_id, election_type) in [
        (b"ops".as_slice(), ElectionType::PREFERRED),
        (b"ops".as_slice(), ElectionType::UNCLEAN),
        (b"dev".as_slice(), ElectionType::PREFERRED),
    ] {
        let request = frame(2, Some(client_id), election_type, Some(&topics));
        let view = parse_request(&request).unwrap();
        let decision = policy.decide(&view);
        let mut answer = bytes::BytesMut::new();
        let written = crate::filters::elect::encode::encode_refusal(
            &policy,
            &decision,
            &view,
            None,
            &mut answer,
        )
        .unwrap();
        let measured =
            crate::filters::elect::encode::refusal_len(&policy, &decision, &view).unwrap();
        assert_eq!(written, answer.len());
        assert_eq!(measured, answer.len(), "{decision:?}");
        let answer = kafka_elect_leaders::parse_response(&answer, 2).unwrap();
        let mut messages = 0;
        for topic in answer.replica_election_results() {
            for partition in topic.partition_result() {
                let message = partition.error_message().unwrap_or_default();
                let message = std::str::from_utf8(message).unwrap();
                assert!(message.starts_with(&format!("{TEXT}: ")), "{message}");
                assert!(!message.contains(DEFAULT_REFUSAL_TEXT), "{message}");
                messages += 1;
            }
        }
        assert!(messages > 0, "{decision:?}");
    }
    // Without one, the default text.
    let request = frame(2, Some(b"dev"), ElectionType::PREFERRED, Some(&topics));
    let decision = Policy::default().decide(&parse_request(&request).unwrap());
    assert_eq!(decision.refusal, Refusal::Nothing);
    assert_eq!(
        Policy::default().refusal_message(MESSAGE_PROTECTED),
        MESSAGE_PROTECTED
    );
}

#[test]
fn a_refusal_text_is_short_printable_and_not_empty() {
    assert!(check_refusal_text("refused by the Kafka team's guard").is_ok());
    assert!(check_refusal_text("").unwrap_err().contains("empty"));
    assert!(check_refusal_text("  ").unwrap_err().contains("empty"));
    assert!(check_refusal_text("a\nb").unwrap_err().contains("control"));
    let long = "x".repeat(MAX_REFUSAL_TEXT + 1);
    assert!(check_refusal_text(&long)
        .unwrap_err()
        .contains("more than 200"));
}
