//! The readers and refusals against `kafka-protocol` (requests it writes, answers it reads, at
//! every version), and the decisions.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::alter_configs_request::{AlterConfigsResource, AlterableConfig};
use kafka_protocol::messages::alter_partition_reassignments_request::{
    ReassignablePartition, ReassignableTopic,
};
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::incremental_alter_configs_request as iac;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};

use super::*;
use crate::filters::elect::policy::{Policy, Rule, Verdict};

/// Config resources: (type, name, [(config, operation, value)]).
type Resources<'a> = &'a [(i8, &'a str, &'a [(&'a str, i8, Option<&'a str>)])];
/// (policy, resource type, name, config, operation, value, verdict).
type Case<'a> = (
    &'a Policy,
    i8,
    &'a str,
    &'a str,
    i8,
    Option<&'a str>,
    Verdict,
);

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_owned())
}

fn topic(name: &str) -> TopicName {
    TopicName(s(name))
}

/// A whole request frame: size prefix, header, body, as Kafka's client writes them.
fn frame<M: Encodable + HeaderVersion>(api: Api, version: i16, body: &M) -> Vec<u8> {
    let header = RequestHeader::default()
        .with_request_api_key(api.key())
        .with_request_api_version(version)
        .with_correlation_id(7)
        .with_client_id(Some(s("admin-1")));
    let mut buf = BytesMut::new();
    header.encode(&mut buf, M::header_version(version)).unwrap();
    body.encode(&mut buf, version).unwrap();
    let mut out = (buf.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(&buf);
    out
}

/// The body of an answer frame written by the guard, decoded by `kafka-protocol`, after its
/// size prefix and header are checked.
fn answer<M: Decodable + HeaderVersion>(reply: &[u8], version: i16) -> M {
    let size = i32::from_be_bytes(reply[..4].try_into().unwrap());
    assert_eq!(size as usize, reply.len() - 4, "size prefix");
    let mut buf = Bytes::copy_from_slice(&reply[4..]);
    let header = ResponseHeader::decode(&mut buf, M::header_version(version)).unwrap();
    assert_eq!(header.correlation_id, 7);
    let body = M::decode(&mut buf, version).unwrap();
    assert!(buf.is_empty(), "{} bytes left after the answer", buf.len());
    body
}

fn protect(topics: &[&str]) -> Policy {
    let mut policy = Policy::default();
    for t in topics {
        policy.protected_topics.insert(t.as_bytes().into());
    }
    policy
}

fn deny_unclean() -> Policy {
    Policy {
        deny_unclean: true,
        ..Policy::default()
    }
}

fn refusal(request: &ChangeRequest<'_>, decision: &ChangeDecision) -> Vec<u8> {
    let mut out = BytesMut::new();
    encode_refusal(request, decision, &mut out);
    out.to_vec()
}

fn incremental(resources: Resources<'_>) -> IncrementalAlterConfigsRequest {
    IncrementalAlterConfigsRequest::default().with_resources(
        resources
            .iter()
            .map(|(t, name, configs)| {
                iac::AlterConfigsResource::default()
                    .with_resource_type(*t)
                    .with_resource_name(s(name))
                    .with_configs(
                        configs
                            .iter()
                            .map(|(k, op, v)| {
                                iac::AlterableConfig::default()
                                    .with_name(s(k))
                                    .with_config_operation(*op)
                                    .with_value(v.map(s))
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}

#[test]
fn incremental_alter_configs_at_every_version() {
    let body = incremental(&[
        (
            RESOURCE_TOPIC,
            "payments",
            &[
                ("retention.ms", 0, Some("1000")),
                ("unclean.leader.election.enable", 0, Some("true")),
            ],
        ),
        (RESOURCE_BROKER, "", &[("min.insync.replicas", 1, None)]),
    ]);
    for version in 0..=Api::IncrementalAlterConfigs.max_version() {
        let bytes = frame(Api::IncrementalAlterConfigs, version, &body);
        let request = read_request(Api::IncrementalAlterConfigs, version, &bytes).unwrap();
        assert_eq!(request.correlation_id, 7);
        assert_eq!(request.client_id, Some(&b"admin-1"[..]));
        assert_eq!(request.entries.len(), 2);
        assert_eq!(request.entries[0].name, Some(&b"payments"[..]));
        // The configs the table refuses on a protected topic are kept, by their line.
        let retention = topic_configs::topic_config(b"retention.ms").unwrap();
        let unclean = topic_configs::topic_config(b"unclean.leader.election.enable").unwrap();
        assert_eq!(
            request.entries[0].changes,
            [
                ConfigChange {
                    name: b"retention.ms",
                    key: Key::Topic(retention),
                    op: Op::Set(Some(b"1000"))
                },
                ConfigChange {
                    name: b"unclean.leader.election.enable",
                    key: Key::Topic(unclean),
                    op: Op::Set(Some(b"true"))
                }
            ]
        );
        assert!(request.entries[0].changes[1].key.is_unclean());
        assert_eq!(request.entries[1].resource_type, RESOURCE_BROKER);
        let isr = topic_configs::broker_synonym(b"min.insync.replicas").unwrap();
        assert_eq!(
            request.entries[1].changes,
            [ConfigChange {
                name: b"min.insync.replicas",
                key: Key::Broker(isr),
                op: Op::Delete
            }]
        );

        let policy = deny_unclean();
        let decision = policy.decide_change(&request, None);
        assert_eq!(decision.verdict, Verdict::Refused);
        assert_eq!(decision.refused.len(), 1);
        let reply = refusal(&request, &decision);
        let answer: IncrementalAlterConfigsResponse = answer(&reply, version);
        assert_eq!(answer.responses.len(), 2);
        for (r, name) in answer.responses.iter().zip(["payments", ""]) {
            assert_eq!(r.error_code, POLICY_VIOLATION);
            assert_eq!(r.resource_name.as_str(), name);
        }
        assert!(answer.responses[0]
            .error_message
            .as_deref()
            .unwrap()
            .contains("unclean.leader.election.enable"));
        assert!(answer.responses[1]
            .error_message
            .as_deref()
            .unwrap()
            .contains("with the rest"));
    }
}

#[test]
fn alter_configs_replaces_the_whole_set() {
    let body = |configs: &[(&str, &str)]| {
        AlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default()
            .with_resource_type(RESOURCE_TOPIC)
            .with_resource_name(s("orders"))
            .with_configs(
                configs
                    .iter()
                    .map(|(k, v)| {
                        AlterableConfig::default()
                            .with_name(s(k))
                            .with_value(Some(s(v)))
                    })
                    .collect(),
            )])
    };
    for version in 0..=Api::AlterConfigs.max_version() {
        // Without the unclean setting, the replacing set resets it: refused.
        let bytes = frame(Api::AlterConfigs, version, &body(&[("retention.ms", "1")]));
        let request = read_request(Api::AlterConfigs, version, &bytes).unwrap();
        let decision = deny_unclean().decide_change(&request, None);
        assert_eq!(decision.verdict, Verdict::Refused, "v{version}");
        let reply = refusal(&request, &decision);
        let answer: AlterConfigsResponse = answer(&reply, version);
        assert_eq!(answer.responses[0].error_code, POLICY_VIOLATION);
        assert_eq!(answer.responses[0].resource_type, RESOURCE_TOPIC);
        assert_eq!(answer.responses[0].resource_name.as_str(), "orders");

        // Saying false (in any case, with spaces, as Kafka reads it): allowed.
        let bytes = frame(
            Api::AlterConfigs,
            version,
            &body(&[("unclean.leader.election.enable", " FALSE ")]),
        );
        let request = read_request(Api::AlterConfigs, version, &bytes).unwrap();
        let decision = deny_unclean().decide_change(&request, None);
        assert_eq!(decision.verdict, Verdict::Forwarded, "v{version}");
        // A protected topic: never through AlterConfigs (it resets min.insync.replicas).
        let decision = protect(&["orders"]).decide_change(&request, None);
        assert_eq!(decision.verdict, Verdict::Refused, "v{version}");
    }
}

#[test]
fn config_rules() {
    let decide = |policy: &Policy, resources: Resources<'_>| {
        let bytes = frame(Api::IncrementalAlterConfigs, 1, &incremental(resources));
        let request = read_request(Api::IncrementalAlterConfigs, 1, &bytes).unwrap();
        policy.decide_change(&request, None).verdict
    };
    let unclean = "unclean.leader.election.enable";
    let isr = "min.insync.replicas";
    let both = Policy {
        deny_unclean: true,
        ..protect(&["payments"])
    };
    let deny = deny_unclean();
    use Verdict::{Forwarded, Refused};
    let cases: &[Case<'_>] = &[
        // deny-unclean: any topic, any broker, the cluster default.
        (
            &both,
            RESOURCE_TOPIC,
            "logs",
            unclean,
            0,
            Some("true"),
            Refused,
        ),
        (
            &both,
            RESOURCE_TOPIC,
            "logs",
            unclean,
            0,
            Some("false"),
            Forwarded,
        ),
        (
            &both,
            RESOURCE_TOPIC,
            "logs",
            unclean,
            0,
            Some("yes"),
            Refused,
        ),
        (&both, RESOURCE_TOPIC, "logs", unclean, 0, None, Refused),
        (&both, RESOURCE_TOPIC, "logs", unclean, 1, None, Refused),
        (
            &both,
            RESOURCE_TOPIC,
            "logs",
            unclean,
            2,
            Some("x"),
            Refused,
        ),
        (
            &both,
            RESOURCE_TOPIC,
            "logs",
            unclean,
            9,
            Some("false"),
            Refused,
        ),
        (
            &both,
            RESOURCE_BROKER,
            "",
            unclean,
            0,
            Some("true"),
            Refused,
        ),
        (
            &both,
            RESOURCE_BROKER,
            "2",
            unclean,
            0,
            Some("true"),
            Refused,
        ),
        (&both, RESOURCE_TOPIC, "logs", isr, 0, Some("1"), Forwarded),
        // protected topics: their own min ISR and the defaults they inherit.
        (
            &both,
            RESOURCE_TOPIC,
            "payments",
            isr,
            0,
            Some("1"),
            Refused,
        ),
        (&both, RESOURCE_TOPIC, "payments", isr, 1, None, Refused),
        (&both, RESOURCE_BROKER, "", isr, 0, Some("1"), Refused),
        // Issue 42: a protected topic keeps its records, and so do the defaults it inherits.
        (
            &both,
            RESOURCE_TOPIC,
            "payments",
            "retention.ms",
            0,
            Some("1"),
            Refused,
        ),
        (
            &both,
            RESOURCE_TOPIC,
            "payments",
            "retention.bytes",
            0,
            Some("0"),
            Refused,
        ),
        (
            &both,
            RESOURCE_TOPIC,
            "logs",
            "retention.ms",
            0,
            Some("1"),
            Forwarded,
        ),
        (
            &both,
            RESOURCE_TOPIC,
            "payments",
            "compression.type",
            0,
            Some("zstd"),
            Forwarded,
        ),
        // A topic config the guard does not know: refused on a protected topic only.
        (
            &both,
            RESOURCE_TOPIC,
            "payments",
            "message.format.version",
            0,
            Some("3.0"),
            Refused,
        ),
        (
            &both,
            RESOURCE_TOPIC,
            "logs",
            "message.format.version",
            0,
            Some("3.0"),
            Forwarded,
        ),
        (
            &both,
            RESOURCE_BROKER,
            "",
            "log.retention.ms",
            0,
            Some("1"),
            Refused,
        ),
        (
            &both,
            RESOURCE_BROKER,
            "1",
            "log.retention.hours",
            1,
            None,
            Refused,
        ),
        (
            &both,
            RESOURCE_BROKER,
            "",
            "log.cleanup.policy",
            0,
            Some("compact"),
            Refused,
        ),
        (
            &both,
            RESOURCE_BROKER,
            "",
            "compression.type",
            0,
            Some("lz4"),
            Forwarded,
        ),
        (
            &both,
            RESOURCE_BROKER,
            "",
            "num.io.threads",
            0,
            Some("8"),
            Forwarded,
        ),
        (
            &deny,
            RESOURCE_BROKER,
            "",
            "log.retention.ms",
            0,
            Some("1"),
            Forwarded,
        ),
        (
            &both,
            RESOURCE_BROKER_LOGGER,
            "2",
            unclean,
            0,
            Some("DEBUG"),
            Forwarded,
        ),
        (&both, 99, "x", "retention.ms", 0, Some("1"), Refused),
    ];
    for &(policy, t, name, key, op, value, expected) in cases {
        let resources: Resources<'_> = &[(t, name, &[(key, op, value)])];
        assert_eq!(
            decide(policy, resources),
            expected,
            "{t} {name} {key} op {op} {value:?}"
        );
    }
    // Protecting a topic alone guards its own unclean setting and the defaults.
    let protected = protect(&["payments"]);
    let topic_unclean: Resources<'_> =
        &[(RESOURCE_TOPIC, "payments", &[(unclean, 0, Some("true"))])];
    assert_eq!(decide(&protected, topic_unclean), Refused);
    let other_unclean: Resources<'_> = &[(RESOURCE_TOPIC, "logs", &[(unclean, 0, Some("true"))])];
    assert_eq!(decide(&protected, other_unclean), Forwarded);
    let default_unclean: Resources<'_> = &[(RESOURCE_BROKER, "", &[(unclean, 0, Some("true"))])];
    assert_eq!(decide(&protected, default_unclean), Refused);
    // No rule that concerns leadership: nothing refused.
    assert_eq!(decide(&Policy::default(), topic_unclean), Forwarded);
    assert!(!Policy::default().polices_leadership());
    // log_only: would refuse, forwarded.
    let log_only = Policy {
        log_only: true,
        ..deny_unclean()
    };
    assert_eq!(decide(&log_only, other_unclean), Verdict::WouldRefuse);
}

#[test]
fn reassignments_at_every_version() {
    let body = AlterPartitionReassignmentsRequest::default()
        .with_timeout_ms(1000)
        .with_topics(vec![
            ReassignableTopic::default()
                .with_name(topic("payments"))
                .with_partitions(vec![
                    ReassignablePartition::default()
                        .with_partition_index(0)
                        .with_replicas(Some(vec![BrokerId(3), BrokerId(2)])),
                    ReassignablePartition::default().with_partition_index(1),
                ]),
            ReassignableTopic::default()
                .with_name(topic("logs"))
                .with_partitions(vec![ReassignablePartition::default()
                    .with_partition_index(4)
                    .with_replicas(Some(vec![BrokerId(2)]))]),
        ]);
    for version in 0..=Api::AlterPartitionReassignments.max_version() {
        let bytes = frame(Api::AlterPartitionReassignments, version, &body);
        let request = read_request(Api::AlterPartitionReassignments, version, &bytes).unwrap();
        assert_eq!(request.entries.len(), 2);
        assert_eq!(request.entries[0].partitions, [0, 1]);
        assert_eq!(request.entries[1].partitions, [4]);
        assert_eq!(
            protect(&["other"]).decide_change(&request, None).verdict,
            Verdict::Forwarded
        );
        let decision = protect(&["payments"]).decide_change(&request, None);
        assert_eq!(decision.verdict, Verdict::Refused);
        assert_eq!(decision.refused[0].0, 0);
        let reply = refusal(&request, &decision);
        let answer: AlterPartitionReassignmentsResponse = answer(&reply, version);
        assert_eq!(answer.error_code, POLICY_VIOLATION);
        let partitions: Vec<(String, i32, i16)> = answer
            .responses
            .iter()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .map(|p| (t.name.0.to_string(), p.partition_index, p.error_code))
            })
            .collect();
        assert_eq!(
            partitions,
            [
                ("payments".to_owned(), 0, 44),
                ("payments".to_owned(), 1, 44),
                ("logs".to_owned(), 4, 44)
            ]
        );
        // Who may move leaders: the rules of who may elect.
        let mut allow = Policy::default();
        allow.allowed_principals.insert("alice".into());
        assert_eq!(
            allow.decide_change(&request, Some("alice")).verdict,
            Verdict::Forwarded
        );
        let bob = allow.decide_change(&request, Some("bob"));
        assert_eq!(bob.verdict, Verdict::Refused);
        assert!(bob.whole.as_deref().unwrap().contains("principal"));
        assert!(
            !bob.whole.as_deref().unwrap().contains("alice"),
            "the rule set is not shown"
        );
    }
}

#[test]
fn topic_apis_at_every_version() {
    // CreatePartitions.
    let body = CreatePartitionsRequest::default().with_topics(vec![
        CreatePartitionsTopic::default()
            .with_name(topic("logs"))
            .with_count(3),
        CreatePartitionsTopic::default()
            .with_name(topic("payments"))
            .with_count(6)
            .with_assignments(Some(vec![Default::default()])),
    ]);
    for version in 0..=Api::CreatePartitions.max_version() {
        let bytes = frame(Api::CreatePartitions, version, &body);
        let request = read_request(Api::CreatePartitions, version, &bytes).unwrap();
        let decision = protect(&["payments"]).decide_change(&request, None);
        assert_eq!(decision.verdict, Verdict::Refused);
        let answer: CreatePartitionsResponse = answer(&refusal(&request, &decision), version);
        let names: Vec<_> = answer
            .results
            .iter()
            .map(|r| r.name.0.to_string())
            .collect();
        assert_eq!(names, ["logs", "payments"]);
        assert!(answer.results.iter().all(|r| r.error_code == 44));
    }
    // DeleteTopics, by name and (v6) by id.
    for version in Api::DeleteTopics.min_version()..=Api::DeleteTopics.max_version() {
        let body = if version >= 6 {
            DeleteTopicsRequest::default().with_topics(vec![
                DeleteTopicState::default().with_name(Some(topic("payments"))),
                DeleteTopicState::default().with_topic_id(uuid::Uuid::from_u128(5)),
            ])
        } else {
            DeleteTopicsRequest::default().with_topic_names(vec![topic("payments"), topic("logs")])
        };
        let bytes = frame(Api::DeleteTopics, version, &body);
        let request = read_request(Api::DeleteTopics, version, &bytes).unwrap();
        assert_eq!(request.entries.len(), 2);
        let decision = protect(&["payments"]).decide_change(&request, None);
        assert_eq!(decision.verdict, Verdict::Refused);
        let answer: DeleteTopicsResponse = answer(&refusal(&request, &decision), version);
        assert_eq!(answer.responses.len(), 2);
        assert!(answer.responses.iter().all(|r| r.error_code == 44));
        if version >= 6 {
            assert_eq!(answer.responses[1].name, None);
            assert_eq!(answer.responses[1].topic_id, uuid::Uuid::from_u128(5));
            // By id, while topics are protected: refused on its own.
            assert_eq!(decision.refused.len(), 2);
        } else {
            assert_eq!(
                answer.responses[1].name.as_ref().unwrap().0.as_str(),
                "logs"
            );
            assert_eq!(decision.refused.len(), 1);
        }
    }
    // CreateTopics.
    let body = CreateTopicsRequest::default().with_topics(vec![
        CreatableTopic::default()
            .with_name(topic("logs"))
            .with_num_partitions(1)
            .with_replication_factor(2)
            .with_configs(vec![CreatableTopicConfig::default()
                .with_name(s("unclean.leader.election.enable"))
                .with_value(Some(s("true")))]),
        CreatableTopic::default().with_name(topic("orders")),
    ]);
    for version in Api::CreateTopics.min_version()..=Api::CreateTopics.max_version() {
        let bytes = frame(Api::CreateTopics, version, &body);
        let request = read_request(Api::CreateTopics, version, &bytes).unwrap();
        assert_eq!(
            protect(&["x"]).decide_change(&request, None).verdict,
            Verdict::Forwarded
        );
        let decision = deny_unclean().decide_change(&request, None);
        assert_eq!(decision.verdict, Verdict::Refused);
        let answer: CreateTopicsResponse = answer(&refusal(&request, &decision), version);
        let names: Vec<_> = answer.topics.iter().map(|t| t.name.0.to_string()).collect();
        assert_eq!(names, ["logs", "orders"]);
        assert!(answer.topics.iter().all(|t| t.error_code == 44));
    }
    // UnregisterBroker.
    let body = UnregisterBrokerRequest::default().with_broker_id(BrokerId(3));
    let bytes = frame(Api::UnregisterBroker, 0, &body);
    let request = read_request(Api::UnregisterBroker, 0, &bytes).unwrap();
    assert_eq!(request.broker_id, Some(3));
    assert_eq!(
        deny_unclean().decide_change(&request, None).verdict,
        Verdict::Forwarded
    );
    let decision = protect(&["payments"]).decide_change(&request, None);
    assert_eq!(decision.verdict, Verdict::Refused);
    let answer: UnregisterBrokerResponse = answer(&refusal(&request, &decision), 0);
    assert_eq!(answer.error_code, 44);
}

#[test]
fn what_cannot_be_read_is_an_error_never_a_panic() {
    let body = incremental(&[(
        RESOURCE_TOPIC,
        "payments",
        &[("unclean.leader.election.enable", 0, Some("true"))],
    )]);
    for version in 0..=1 {
        let bytes = frame(Api::IncrementalAlterConfigs, version, &body);
        for cut in 0..bytes.len() {
            assert!(read_request(Api::IncrementalAlterConfigs, version, &bytes[..cut]).is_err());
        }
        let mut longer = bytes.clone();
        longer.push(0);
        let e = read_request(Api::IncrementalAlterConfigs, version, &longer).unwrap_err();
        assert_eq!(e.kind, ReadErrorKind::Trailing);
    }
    // A count of four billion entries in 30 bytes: refused before anything is reserved.
    let mut huge = frame(Api::DeleteTopics, 3, &DeleteTopicsRequest::default());
    let at = huge.len() - 8; // the topic_names count, then timeout_ms
    huge[at..at + 4].copy_from_slice(&i32::MAX.to_be_bytes());
    let e = read_request(Api::DeleteTopics, 3, &huge).unwrap_err();
    assert_eq!((e.field, e.kind), ("topic_names", ReadErrorKind::Count));
    assert_eq!(e.offset, at);
    assert!(e.to_string().contains("topic_names at offset"), "{e}");
}

#[test]
fn a_refusal_of_many_entries_carries_a_bounded_number_of_messages() {
    let names: Vec<TopicName> = (0..1000).map(|i| topic(&format!("t{i}"))).collect();
    let body = DeleteTopicsRequest::default().with_topic_names(names);
    let bytes = frame(Api::DeleteTopics, 5, &body);
    let request = read_request(Api::DeleteTopics, 5, &bytes).unwrap();
    let mut policy = protect(&[]);
    for i in 0..1000 {
        policy
            .protected_topics
            .insert(format!("t{i}").into_bytes().into());
    }
    let decision = policy.decide_change(&request, None);
    let reply = refusal(&request, &decision);
    let answer: DeleteTopicsResponse = answer(&reply, 5);
    let with_message = answer
        .responses
        .iter()
        .filter(|r| r.error_message.is_some())
        .count();
    assert_eq!(with_message, MESSAGES);
    // The answer stays within a small multiple of the request.
    assert!(
        reply.len() < 2 * bytes.len() + 16 * 1024,
        "{} vs {}",
        reply.len(),
        bytes.len()
    );
}

#[test]
fn every_api_is_found_by_its_key() {
    for api in Api::ALL {
        assert_eq!(Api::of(api.key()), Some(api));
        assert_eq!(
            crate::filters::doors::apis::door_of(api.key()).map(|door| door.name),
            Some(api.name())
        );
    }
}

/// A request frame as `frame` writes it, from another client id.
fn frame_as<M: Encodable + HeaderVersion>(
    client_id: &str,
    api: Api,
    version: i16,
    body: &M,
) -> Vec<u8> {
    let mut bytes = frame(api, version, body);
    // The header as `frame` writes it: size, api key, version, correlation id, then the
    // client id "admin-1"; written again with this one.
    let at = 4 + 2 + 2 + 4;
    let mut out = bytes[..at].to_vec();
    out.extend_from_slice(&(client_id.len() as i16).to_be_bytes());
    out.extend_from_slice(client_id.as_bytes());
    out.extend_from_slice(&bytes[at + 2 + "admin-1".len()..]);
    let size = (out.len() - 4) as i32;
    out[..4].copy_from_slice(&size.to_be_bytes());
    bytes.clear();
    out
}

fn create_topic(name: &str, replication: i16, configs: &[(&str, &str)]) -> CreatableTopic {
    CreatableTopic::default()
        .with_name(topic(name))
        .with_num_partitions(if replication == -1 { -1 } else { 1 })
        .with_replication_factor(replication)
        .with_configs(
            configs
                .iter()
                .map(|(k, v)| {
                    CreatableTopicConfig::default()
                        .with_name(s(k))
                        .with_value(Some(s(v)))
                })
                .collect(),
        )
}

/// Issue 42: every topic config of the table, on a protected topic and on another, and
/// every broker synonym on the cluster default while topics are protected: the policy is
/// the table's.
#[test]
fn the_table_decides_each_config_of_a_protected_topic() {
    let policy = protect(&["payments"]);
    let incremental_verdict = |t: i8, name: &str, key: &str, op: i8, value: Option<&str>| {
        let bytes = frame(
            Api::IncrementalAlterConfigs,
            1,
            &incremental(&[(t, name, &[(key, op, value)])]),
        );
        let request = read_request(Api::IncrementalAlterConfigs, 1, &bytes).unwrap();
        policy.decide_change(&request, None)
    };
    for config in TOPIC_CONFIGS {
        let refused = config.decision != OnProtected::Allowed;
        let expected = if refused {
            Verdict::Refused
        } else {
            Verdict::Forwarded
        };
        for (op, value) in [(0, Some("1")), (1, None)] {
            let decision = incremental_verdict(RESOURCE_TOPIC, "payments", config.key, op, value);
            assert_eq!(decision.verdict, expected, "{} op {op}", config.key);
            if config.decision == OnProtected::Refused {
                assert_eq!(
                    decision.rules.iter().collect::<Vec<_>>(),
                    [Rule::ProtectTopic]
                );
                let message = decision.refused[0].1.message;
                assert!(message.contains(config.key), "{message}");
                assert!(message.contains(config.reason), "{message}");
            }
            let other = incremental_verdict(RESOURCE_TOPIC, "logs", config.key, op, value);
            assert_eq!(other.verdict, Verdict::Forwarded, "{} on logs", config.key);
        }
        // A protected name created with it: refused as surely.
        let body = CreateTopicsRequest::default().with_topics(vec![create_topic(
            "payments",
            3,
            &[(config.key, "1")],
        )]);
        let bytes = frame(Api::CreateTopics, 7, &body);
        let request = read_request(Api::CreateTopics, 7, &bytes).unwrap();
        assert_eq!(
            policy.decide_change(&request, None).verdict,
            expected,
            "CreateTopics {}",
            config.key
        );
    }
    // unclean.leader.election.enable: false passes.
    let unclean = incremental_verdict(
        RESOURCE_TOPIC,
        "payments",
        "unclean.leader.election.enable",
        0,
        Some("false"),
    );
    assert_eq!(unclean.verdict, Verdict::Forwarded);
    for synonym in BROKER_SYNONYMS {
        let refused = synonym.topic_config().decision != OnProtected::Allowed;
        for broker in ["", "1"] {
            let decision =
                incremental_verdict(RESOURCE_BROKER, broker, synonym.broker_key, 0, Some("1"));
            let expected = if refused {
                Verdict::Refused
            } else {
                Verdict::Forwarded
            };
            assert_eq!(decision.verdict, expected, "{}", synonym.broker_key);
            if synonym.topic_config().decision == OnProtected::Refused {
                let message = decision.refused[0].1.message;
                assert!(message.contains(synonym.broker_key), "{message}");
            }
        }
        // No topic protected: the defaults are the operator's.
        let bytes = frame(
            Api::IncrementalAlterConfigs,
            1,
            &incremental(&[(RESOURCE_BROKER, "", &[(synonym.broker_key, 0, Some("1"))])]),
        );
        let request = read_request(Api::IncrementalAlterConfigs, 1, &bytes).unwrap();
        let expected = if synonym.topic_key == "unclean.leader.election.enable" {
            Verdict::Refused
        } else {
            Verdict::Forwarded
        };
        assert_eq!(
            deny_unclean().decide_change(&request, None).verdict,
            expected,
            "{} under deny-unclean only",
            synonym.broker_key
        );
    }
    // Under log-only: would refuse, forwarded.
    let log_only = Policy {
        log_only: true,
        ..protect(&["payments"])
    };
    let bytes = frame(
        Api::IncrementalAlterConfigs,
        0,
        &incremental(&[(
            RESOURCE_TOPIC,
            "payments",
            &[("retention.ms", 0, Some("1"))],
        )]),
    );
    let request = read_request(Api::IncrementalAlterConfigs, 0, &bytes).unwrap();
    assert_eq!(
        log_only.decide_change(&request, None).verdict,
        Verdict::WouldRefuse
    );
}

/// A request of a million configs the guard does not know keeps one of them.
#[test]
fn an_entry_keeps_one_config_the_guard_does_not_know() {
    let configs: Vec<(String, i8, Option<&str>)> =
        (0..1000).map(|i| (format!("x{i}"), 0, Some("1"))).collect();
    let configs: Vec<(&str, i8, Option<&str>)> = configs
        .iter()
        .map(|(k, op, v)| (k.as_str(), *op, *v))
        .collect();
    let bytes = frame(
        Api::IncrementalAlterConfigs,
        1,
        &incremental(&[(RESOURCE_TOPIC, "payments", &configs)]),
    );
    let request = read_request(Api::IncrementalAlterConfigs, 1, &bytes).unwrap();
    assert_eq!(request.entries[0].changes.len(), 1);
    assert_eq!(request.entries[0].changes[0].name, b"x0");
    assert!(request.entries[0].unknown_config);
    let decision = protect(&["payments"]).decide_change(&request, None);
    assert_eq!(decision.verdict, Verdict::Refused);
    assert!(decision.refused[0].1.message.contains("does not know"));
}

/// Issue 42: with only `allow-client-id`, the config route to an unclean election (on a
/// topic, a broker, the cluster default; set, deleted, reset by AlterConfigs; a topic
/// created with it) is held to who may elect, as an UNCLEAN ElectLeaders is.
#[test]
fn enabling_unclean_election_is_held_to_who_may_elect() {
    let mut ops_only = Policy::default();
    ops_only.allowed_client_ids.insert(b"ops"[..].into());
    let unclean = "unclean.leader.election.enable";
    let incremental_as = |client: &str, resources: Resources<'_>| {
        let bytes = frame_as(
            client,
            Api::IncrementalAlterConfigs,
            1,
            &incremental(resources),
        );
        let request = read_request(Api::IncrementalAlterConfigs, 1, &bytes).unwrap();
        assert_eq!(request.client_id, Some(client.as_bytes()));
        ops_only.decide_change(&request, None)
    };
    let topic_true: Resources<'_> = &[(RESOURCE_TOPIC, "logs", &[(unclean, 0, Some("true"))])];
    let default_true: Resources<'_> = &[(RESOURCE_BROKER, "", &[(unclean, 0, Some("true"))])];
    let deleted: Resources<'_> = &[(RESOURCE_TOPIC, "logs", &[(unclean, 1, None)])];
    let set_false: Resources<'_> = &[(RESOURCE_TOPIC, "logs", &[(unclean, 0, Some("false"))])];
    let retention: Resources<'_> = &[(RESOURCE_TOPIC, "logs", &[("retention.ms", 0, Some("1"))])];
    for resources in [topic_true, default_true, deleted] {
        let mallory = incremental_as("mallory", resources);
        assert_eq!(mallory.verdict, Verdict::Refused);
        assert_eq!(
            mallory.rules.iter().collect::<Vec<_>>(),
            [Rule::AllowClientId]
        );
        assert_eq!(mallory.refused[0].1.rule, Rule::AllowClientId);
        let message = mallory.refused[0].1.message;
        assert!(message.contains("this client id may not"), "{message}");
        assert!(
            !message.contains("ops"),
            "the allow-list is not shown: {message}"
        );
        assert_eq!(incremental_as("ops", resources).verdict, Verdict::Forwarded);
    }
    assert_eq!(
        incremental_as("mallory", set_false).verdict,
        Verdict::Forwarded
    );
    assert_eq!(
        incremental_as("mallory", retention).verdict,
        Verdict::Forwarded
    );

    // AlterConfigs replaces the set: without unclean=false it resets the setting.
    let alter = |configs: &[(&str, &str)]| {
        AlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default()
            .with_resource_type(RESOURCE_TOPIC)
            .with_resource_name(s("logs"))
            .with_configs(
                configs
                    .iter()
                    .map(|(k, v)| {
                        AlterableConfig::default()
                            .with_name(s(k))
                            .with_value(Some(s(v)))
                    })
                    .collect(),
            )])
    };
    for (configs, mallory_verdict) in [
        (&[("retention.ms", "1")][..], Verdict::Refused),
        (&[(unclean, "false")][..], Verdict::Forwarded),
    ] {
        let bytes = frame_as("mallory", Api::AlterConfigs, 2, &alter(configs));
        let request = read_request(Api::AlterConfigs, 2, &bytes).unwrap();
        assert_eq!(
            ops_only.decide_change(&request, None).verdict,
            mallory_verdict,
            "{configs:?}"
        );
    }

    // A topic created with unclean election enabled.
    let body = CreateTopicsRequest::default().with_topics(vec![create_topic(
        "logs",
        3,
        &[(unclean, "true")],
    )]);
    for (client, expected) in [("mallory", Verdict::Refused), ("ops", Verdict::Forwarded)] {
        let bytes = frame_as(client, Api::CreateTopics, 5, &body);
        let request = read_request(Api::CreateTopics, 5, &bytes).unwrap();
        assert_eq!(
            ops_only.decide_change(&request, None).verdict,
            expected,
            "{client}"
        );
    }

    // allow-principal: the principal the broker authenticated; an unknown one refused.
    let mut alice_only = Policy::default();
    alice_only.allowed_principals.insert("alice".into());
    let bytes = frame(Api::IncrementalAlterConfigs, 1, &incremental(default_true));
    let request = read_request(Api::IncrementalAlterConfigs, 1, &bytes).unwrap();
    assert_eq!(
        alice_only.decide_change(&request, Some("alice")).verdict,
        Verdict::Forwarded
    );
    for principal in [Some("bob"), None] {
        let decision = alice_only.decide_change(&request, principal);
        assert_eq!(decision.verdict, Verdict::Refused, "{principal:?}");
        assert_eq!(decision.refused[0].1.rule, Rule::AllowPrincipal);
    }
    // Both lists, and deny-unclean: the audit names every rule; the first refuses.
    let strict = Policy {
        deny_unclean: true,
        allowed_principals: alice_only.allowed_principals.clone(),
        ..ops_only.clone()
    };
    let decision = strict.decide_change(&request, Some("bob"));
    assert_eq!(
        decision.rules.iter().collect::<Vec<_>>(),
        [Rule::AllowClientId, Rule::AllowPrincipal, Rule::DenyUnclean]
    );
    assert_eq!(decision.refused[0].1.rule, Rule::DenyUnclean);
    // Log-only: would refuse, forwarded.
    let log_only = Policy {
        log_only: true,
        ..ops_only.clone()
    };
    assert_eq!(
        log_only.decide_change(&request, None).verdict,
        Verdict::WouldRefuse
    );
}

/// Issue 42: DeleteRecords of a protected topic refused, every partition answered
/// POLICY_VIOLATION; another topic's forwarded.
#[test]
fn delete_records_at_every_version() {
    use kafka_protocol::messages::delete_records_request::{
        DeleteRecordsPartition, DeleteRecordsTopic,
    };
    let body = DeleteRecordsRequest::default()
        .with_timeout_ms(1000)
        .with_topics(vec![
            DeleteRecordsTopic::default()
                .with_name(topic("payments"))
                .with_partitions(vec![
                    DeleteRecordsPartition::default()
                        .with_partition_index(0)
                        .with_offset(-1),
                    DeleteRecordsPartition::default()
                        .with_partition_index(1)
                        .with_offset(500),
                ]),
            DeleteRecordsTopic::default()
                .with_name(topic("logs"))
                .with_partitions(vec![DeleteRecordsPartition::default()
                    .with_partition_index(4)
                    .with_offset(7)]),
        ]);
    for version in Api::DeleteRecords.min_version()..=Api::DeleteRecords.max_version() {
        let bytes = frame(Api::DeleteRecords, version, &body);
        let request = read_request(Api::DeleteRecords, version, &bytes).unwrap();
        assert_eq!(request.entries.len(), 2);
        assert_eq!(request.entries[0].partitions, [0, 1]);
        assert_eq!(request.entries[1].partitions, [4]);
        assert_eq!(
            protect(&["other"]).decide_change(&request, None).verdict,
            Verdict::Forwarded
        );
        let decision = protect(&["payments"]).decide_change(&request, None);
        assert_eq!(decision.verdict, Verdict::Refused);
        assert_eq!(decision.refused.len(), 1);
        assert_eq!(decision.refused[0].1.rule, Rule::ProtectTopic);
        assert!(decision.refused[0].1.message.contains("records"));
        let answer: DeleteRecordsResponse = answer(&refusal(&request, &decision), version);
        let partitions: Vec<(String, i32, i64, i16)> = answer
            .topics
            .iter()
            .flat_map(|t| {
                t.partitions.iter().map(|p| {
                    (
                        t.name.0.to_string(),
                        p.partition_index,
                        p.low_watermark,
                        p.error_code,
                    )
                })
            })
            .collect();
        assert_eq!(
            partitions,
            [
                ("payments".to_owned(), 0, -1, 44),
                ("payments".to_owned(), 1, -1, 44),
                ("logs".to_owned(), 4, -1, 44)
            ]
        );
        let log_only = Policy {
            log_only: true,
            ..protect(&["payments"])
        };
        assert_eq!(
            log_only.decide_change(&request, None).verdict,
            Verdict::WouldRefuse
        );
        for cut in 0..bytes.len() {
            assert!(read_request(Api::DeleteRecords, version, &bytes[..cut]).is_err());
        }
    }
    // A count of two billion partitions in a few bytes: refused before anything is kept.
    let one = DeleteRecordsRequest::default().with_topics(vec![DeleteRecordsTopic::default()
        .with_name(topic("t"))
        .with_partitions(vec![DeleteRecordsPartition::default()])]);
    let mut huge = frame(Api::DeleteRecords, 0, &one);
    let at = huge.len() - 4 - 12 - 4; // the partitions count, one partition, timeout_ms
    huge[at..at + 4].copy_from_slice(&i32::MAX.to_be_bytes());
    let e = read_request(Api::DeleteRecords, 0, &huge).unwrap_err();
    assert_eq!(
        (e.field, e.kind, e.offset),
        ("topics: partitions", ReadErrorKind::Count, at)
    );
}

/// Issue 42: a protected name created with too few replicas (`min-replication`), with the
/// broker's default, or with an assignment of too few; and with a config that deletes.
#[test]
fn create_topics_of_a_protected_name() {
    use kafka_protocol::messages::create_topics_request::CreatableReplicaAssignment;
    let policy = Policy {
        min_replication: Some(3),
        ..protect(&["payments"])
    };
    let assigned = |name: &str, replicas: &[&[i32]]| {
        CreatableTopic::default()
            .with_name(topic(name))
            .with_num_partitions(-1)
            .with_replication_factor(-1)
            .with_assignments(
                replicas
                    .iter()
                    .enumerate()
                    .map(|(i, brokers)| {
                        CreatableReplicaAssignment::default()
                            .with_partition_index(i as i32)
                            .with_broker_ids(brokers.iter().map(|b| BrokerId(*b)).collect())
                    })
                    .collect(),
            )
    };
    let cases: Vec<(CreatableTopic, Verdict, Option<Rule>)> = vec![
        (
            create_topic("payments", 1, &[]),
            Verdict::Refused,
            Some(Rule::MinReplication),
        ),
        (
            create_topic("payments", 2, &[]),
            Verdict::Refused,
            Some(Rule::MinReplication),
        ),
        (create_topic("payments", 3, &[]), Verdict::Forwarded, None),
        (
            create_topic("payments", -1, &[]),
            Verdict::Refused,
            Some(Rule::MinReplication),
        ),
        (
            assigned("payments", &[&[1, 2, 3], &[2, 3]]),
            Verdict::Refused,
            Some(Rule::MinReplication),
        ),
        (
            assigned("payments", &[&[1, 2, 3], &[2, 3, 1]]),
            Verdict::Forwarded,
            None,
        ),
        (create_topic("logs", 1, &[]), Verdict::Forwarded, None),
        (create_topic("logs", -1, &[]), Verdict::Forwarded, None),
        (
            create_topic("payments", 3, &[("retention.ms", "1")]),
            Verdict::Refused,
            Some(Rule::ProtectTopic),
        ),
        (
            create_topic("payments", 3, &[("min.insync.replicas", "1")]),
            Verdict::Refused,
            Some(Rule::ProtectTopic),
        ),
        (
            create_topic("logs", 1, &[("retention.ms", "1")]),
            Verdict::Forwarded,
            None,
        ),
    ];
    for version in Api::CreateTopics.min_version()..=Api::CreateTopics.max_version() {
        for (topic, expected, rule) in &cases {
            let body = CreateTopicsRequest::default().with_topics(vec![topic.clone()]);
            let bytes = frame(Api::CreateTopics, version, &body);
            let request = read_request(Api::CreateTopics, version, &bytes).unwrap();
            let decision = policy.decide_change(&request, None);
            let what = format!("v{version} {topic:?}");
            assert_eq!(decision.verdict, *expected, "{what}");
            assert_eq!(
                decision.refused.first().map(|(_, why)| why.rule),
                *rule,
                "{what}"
            );
            if decision.verdict == Verdict::Refused {
                let answer: CreateTopicsResponse = answer(&refusal(&request, &decision), version);
                assert_eq!(answer.topics[0].error_code, POLICY_VIOLATION);
                if version >= 1 {
                    let message = answer.topics[0].error_message.as_deref().unwrap();
                    assert!(!message.contains('3'), "the floor is not shown: {message}");
                }
            }
        }
    }
    // The broker's default: named in the refusal, which says to name it.
    let body = CreateTopicsRequest::default().with_topics(vec![create_topic("payments", -1, &[])]);
    let bytes = frame(Api::CreateTopics, 7, &body);
    let request = read_request(Api::CreateTopics, 7, &bytes).unwrap();
    let decision = policy.decide_change(&request, None);
    assert!(decision.refused[0].1.message.contains("name it"));
    // Without min-replication: any replication factor.
    let body = CreateTopicsRequest::default().with_topics(vec![create_topic("payments", 1, &[])]);
    let bytes = frame(Api::CreateTopics, 7, &body);
    let request = read_request(Api::CreateTopics, 7, &bytes).unwrap();
    assert_eq!(
        protect(&["payments"]).decide_change(&request, None).verdict,
        Verdict::Forwarded
    );
    // A principal's own rules: ops may create it with one replica, others may not.
    let mut with_ops = policy.clone();
    with_ops.principal_rules.insert(
        "ops".into(),
        Policy {
            min_replication: None,
            ..policy.clone()
        },
    );
    assert_eq!(
        with_ops.decide_change(&request, Some("ops")).verdict,
        Verdict::Forwarded
    );
    let decision = with_ops.decide_change(&request, Some("bob"));
    assert_eq!(decision.verdict, Verdict::Refused);
    assert_eq!(
        decision.rules.iter().collect::<Vec<_>>(),
        [Rule::MinReplication]
    );
    // Log-only.
    let log_only = Policy {
        log_only: true,
        ..policy.clone()
    };
    assert_eq!(
        log_only.decide_change(&request, None).verdict,
        Verdict::WouldRefuse
    );
}

/// Issue 43, item 2: the operator's refusal text begins the messages of a refused change.
#[test]
fn the_operators_refusal_text_begins_a_refused_changes_messages() {
    const TEXT: &str = "refused by the Kafka team's guard (ask in #kafka)";
    let body = incremental(&[
        (
            RESOURCE_TOPIC,
            "payments",
            &[("unclean.leader.election.enable", 0, Some("true"))],
        ),
        (RESOURCE_BROKER, "", &[("min.insync.replicas", 1, None)]),
    ]);
    let version = Api::IncrementalAlterConfigs.max_version();
    let bytes = frame(Api::IncrementalAlterConfigs, version, &body);
    let request = read_request(Api::IncrementalAlterConfigs, version, &bytes).unwrap();
    let policy = Policy {
        refusal_text: Some(TEXT.into()),
        ..deny_unclean()
    };
    let decision = policy.decide_change(&request, None);
    assert_eq!(decision.verdict, Verdict::Refused);
    let mut reply = BytesMut::new();
    encode_refusal_with(&request, &decision, &policy, &mut reply);
    let custom: IncrementalAlterConfigsResponse = answer(&reply, version);
    assert_eq!(custom.responses.len(), 2);
    for r in &custom.responses {
        let message = r.error_message.as_deref().unwrap();
        assert!(message.starts_with(TEXT), "{message}");
        assert!(!message.contains("elect-leaders proxy"), "{message}");
    }
    // The default text without one.
    let reply = refusal(&request, &decision);
    let default: IncrementalAlterConfigsResponse = answer(&reply, version);
    let message = default.responses[0].error_message.as_deref().unwrap();
    assert!(
        message.starts_with("refused by the elect-leaders proxy: "),
        "{message}"
    );
}
