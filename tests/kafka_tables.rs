//! The codec's tables against Kafka's own, read from the kafka-clients jar the tests use
//! (4.4.0, `interop/java`, class `interop.KafkaTables`): every API key's name, latest
//! version, first flexible version and header versions ([`ApiKey`]), and every error code
//! and its name ([`ErrorCode`]). A Kafka release that adds a key or a code, or a version,
//! fails here until the tables have it.
//!
//! Needs `java` and `mvn` on PATH (and Maven Central the first time); without them each
//! test says so in one line and passes. `KEL_SKIP_JAVA=1` skips on purpose. `.ci/run`
//! always has them.

use std::collections::BTreeMap;

use kafka_elect_leaders::{ApiKey, ErrorCode};
use kafka_elect_leaders_testkit::kafka_tables;
use serde_json::Value;

fn lines_with(member: &str) -> Option<Vec<Value>> {
    let tables = kafka_tables()?;
    Some(
        tables
            .iter()
            .map(|l| serde_json::from_str::<Value>(l).expect("JSON"))
            .filter(|v| v.get(member).is_some())
            .collect(),
    )
}

fn int16(v: &Value) -> i16 {
    i16::try_from(v.as_i64().expect("an integer")).expect("an int16")
}

fn int16s(v: &Value) -> Vec<i16> {
    v.as_array().expect("an array").iter().map(int16).collect()
}

/// The APIs that kafka-clients 4.4 still names but gives no version (the inter-broker
/// APIs of the ZooKeeper era, removed in Kafka 4.0). The codec keeps kafka-clients 3.9's
/// versions for them, so that captures of older clusters are read; a key that loses its
/// versions in a later release shows up here.
const NO_VERSION_IN_KAFKA_4: [ApiKey; 4] = [
    ApiKey::LEADER_AND_ISR,
    ApiKey::STOP_REPLICA,
    ApiKey::UPDATE_METADATA,
    ApiKey::CONTROLLED_SHUTDOWN,
];

#[test]
fn api_keys_match_kafka() {
    let Some(kafka) = lines_with("api_key") else {
        return;
    };
    assert!(kafka.len() >= 90, "read {} API keys", kafka.len());
    let mut without_versions = Vec::new();
    for line in &kafka {
        let key = ApiKey(int16(&line["api_key"]));
        let name = line["name"].as_str().unwrap();
        assert_eq!(key.name(), Some(name), "{key:?}");
        assert_eq!(ApiKey::from_name(name), Some(key));
        let latest = int16(&line["latest_version"]);
        if latest < 0 {
            without_versions.push(key);
            assert!(key.latest_version().is_some(), "{key:?}");
            continue;
        }
        assert_eq!(key.latest_version(), Some(latest), "{key}: latest version");
        let first_flexible = line["first_flexible_version"].as_i64();
        assert_eq!(
            key.first_flexible_version().map(i64::from),
            first_flexible,
            "{key}: first flexible version"
        );
        let oldest = int16(&line["oldest_version"]);
        let requests = int16s(&line["request_header_versions"]);
        let responses = int16s(&line["response_header_versions"]);
        for (at, version) in (oldest..=latest).enumerate() {
            assert!(key.knows_version(version), "{key} v{version}");
            assert_eq!(
                key.request_header_version(version),
                Some(requests[at]),
                "{key} v{version}: request header version"
            );
            assert_eq!(
                key.response_header_version(version),
                Some(responses[at]),
                "{key} v{version}: response header version"
            );
        }
        assert!(!key.knows_version(latest + 1), "{key} v{}", latest + 1);
    }
    assert_eq!(without_versions, NO_VERSION_IN_KAFKA_4);
    let kafka_keys: Vec<ApiKey> = kafka.iter().map(|l| ApiKey(int16(&l["api_key"]))).collect();
    assert_eq!(
        ApiKey::ALL,
        &kafka_keys[..],
        "ApiKey::ALL holds exactly kafka-clients' ApiKeys"
    );
}

#[test]
fn error_codes_match_kafka() {
    let Some(kafka) = lines_with("error_code") else {
        return;
    };
    let kafka: BTreeMap<i16, String> = kafka
        .iter()
        .map(|l| {
            (
                int16(&l["error_code"]),
                l["error_name"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(kafka.len() > 130, "read {} error codes", kafka.len());
    let ours: BTreeMap<i16, String> = ErrorCode::ALL
        .iter()
        .map(|code| (code.0, code.name().unwrap().to_owned()))
        .collect();
    let missing: Vec<_> = kafka
        .iter()
        .filter(|(code, name)| ours.get(code) != Some(name))
        .collect();
    assert!(
        missing.is_empty(),
        "codes of kafka-clients' Errors that ErrorCode lacks or names otherwise: {missing:?}"
    );
    assert_eq!(ours, kafka, "ErrorCode names no code Kafka lacks");
    for (code, name) in &kafka {
        assert_eq!(ErrorCode::from_name(name), Some(ErrorCode(*code)));
    }
}
