//! The guard's tables against Kafka's own, read from the kafka-clients jar the tests use
//! (4.4.0, `interop/java`, class `interop.KafkaTables`): a Kafka release that adds an API
//! key, or a topic config, fails here until the guard has decided what to do with it.
//!
//! Needs `java` and `mvn` on PATH (and Maven Central the first time); without them each
//! test says so in one line and passes. `KEL_SKIP_JAVA=1` skips on purpose. `.ci/run`
//! always has them.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use kafka_elect_leaders_proxy::apis::{door_of, Class, DOORS};
use serde_json::Value;

/// Kafka's tables, one JSON value per line (read by the testkit, shared with the codec's
/// `tests/kafka_tables.rs`); `None` when Java or Maven is missing.
fn tables() -> Option<&'static [Value]> {
    static TABLES: OnceLock<Option<Vec<Value>>> = OnceLock::new();
    TABLES
        .get_or_init(|| {
            let lines = kafka_elect_leaders_testkit::kafka_tables()?;
            Some(
                lines
                    .iter()
                    .map(|l| serde_json::from_str(l).expect("JSON"))
                    .collect(),
            )
        })
        .as_deref()
}

/// Kafka's `ApiKeys`: key -> (name, cluster action, listeners).
fn api_keys(tables: &[Value]) -> BTreeMap<i16, (String, bool, Vec<String>)> {
    tables
        .iter()
        .filter(|v| v.get("api_key").is_some())
        .map(|v| {
            let key = i16::try_from(v["api_key"].as_i64().unwrap()).unwrap();
            let listeners = v["listeners"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l.as_str().unwrap().to_owned())
                .collect();
            (
                key,
                (
                    v["name"].as_str().unwrap().to_owned(),
                    v["cluster_action"].as_bool().unwrap(),
                    listeners,
                ),
            )
        })
        .collect()
}

/// Every key Kafka defines has a class in the guard's table, under Kafka's name, and the
/// table names no key Kafka does not define.
#[test]
fn every_kafka_api_key_has_a_class() {
    let Some(tables) = tables() else { return };
    let kafka = api_keys(tables);
    assert!(kafka.len() >= 90, "read {} API keys", kafka.len());
    let mut missing = Vec::new();
    for (key, (name, _, _)) in &kafka {
        match door_of(*key) {
            Some(door) => assert_eq!(door.name, name, "api key {key}"),
            None => missing.push(format!("{key} {name}")),
        }
    }
    assert!(
        missing.is_empty(),
        "API keys of kafka-clients without a class in crates/proxy/src/apis.rs (a request of \
         one closes the connection until it has one): {missing:?}"
    );
    for door in &DOORS {
        assert!(
            kafka.contains_key(&door.key),
            "{} ({}) is not in kafka-clients' ApiKeys",
            door.name,
            door.key
        );
    }
}

/// What Kafka itself takes only from brokers and controllers is closed: every cluster
/// action, and every API no broker listener serves. The exceptions are APIs Kafka checks
/// as a cluster action that an operator's Admin client sends, each with why.
#[test]
fn cluster_actions_and_controller_apis_are_closed() {
    let Some(tables) = tables() else { return };
    // DescribeQuorum and UpdateFeatures: cluster actions, forwarded to the controller for
    // `kafka-metadata-quorum describe` and `kafka-features`; neither changes a leader or a
    // record (see crates/proxy/src/apis.rs).
    const ADMIN_CLUSTER_ACTIONS: [i16; 2] = [55, 57];
    for (key, (name, cluster_action, listeners)) in api_keys(tables) {
        let broker = listeners.iter().any(|l| l == "broker");
        let Some(door) = door_of(key) else { continue };
        if (cluster_action && !ADMIN_CLUSTER_ACTIONS.contains(&key)) || !broker {
            assert_eq!(
                door.class,
                Class::Closed,
                "{name} ({key}): cluster action {cluster_action}, listeners {listeners:?}"
            );
        }
    }
}

/// Every topic config of Kafka's `TopicConfig` has a decision in the guard's table (what
/// it does on a protected topic, and why), and the table names none that Kafka lacks.
#[test]
fn every_topic_config_has_a_decision() {
    use kafka_elect_leaders_proxy::leadership::TOPIC_CONFIGS;
    let Some(tables) = tables() else { return };
    let kafka: std::collections::BTreeSet<&str> = tables
        .iter()
        .filter_map(|v| v.get("topic_config").and_then(Value::as_str))
        .collect();
    assert!(kafka.len() >= 30, "read {} topic configs", kafka.len());
    let ours: std::collections::BTreeSet<&str> = TOPIC_CONFIGS.iter().map(|c| c.key).collect();
    let missing: Vec<_> = kafka.difference(&ours).collect();
    assert!(
        missing.is_empty(),
        "topic configs of kafka-clients without a decision in \
         crates/proxy/src/leadership/topic_configs.rs (refused on protected topics until they \
         have one): {missing:?}"
    );
    let gone: Vec<_> = ours.difference(&kafka).collect();
    assert!(
        gone.is_empty(),
        "in the guard's table, not in kafka-clients' TopicConfig: {gone:?}"
    );
}
