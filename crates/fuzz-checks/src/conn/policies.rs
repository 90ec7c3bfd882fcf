//! The guard's configuration in the `conn` target: the few policies a script picks from
//! (its first byte), each with its `Shared` (and so its audit thread) made once for the
//! process, and the addresses of the one connection.
//!
//! What the guard must do under each policy is `expected`'s: this only sets it up.

use std::io;
use std::sync::OnceLock;

use kafka_elect_leaders_proxy::audit::{Audit, AuditSink, ConnInfo, DEFAULT_AUDIT_QUEUE_BYTES};
use kafka_elect_leaders_proxy::testing::Shared;
use kafka_elect_leaders_proxy::{Config, Policy};

use super::limits::{FRAME_TIMEOUT, IDLE_TIMEOUT, MAX_FRAME_SIZE};

/// The policies, by the script's first byte.
fn policies() -> Vec<Policy> {
    let names = |names: &[&str]| names.iter().map(|n| n.as_bytes().into()).collect();
    vec![
        // No rules: everything forwarded.
        Policy::default(),
        Policy {
            deny_unclean: true,
            protected_topics: names(&["payments", "secrets"]),
            ..Policy::default()
        },
        Policy {
            protected_topics: names(&["payments"]),
            allowed_client_ids: names(&["admin"]),
            max_partitions: Some(64),
            ..Policy::default()
        },
        Policy {
            deny_unclean: true,
            protected_topics: names(&["payments", "secrets"]),
            max_partitions: Some(8),
            log_only: true,
            ..Policy::default()
        },
        Policy {
            deny_unclean: true,
            max_partitions: Some(1000),
            ..Policy::default()
        },
    ]
}

/// One `Shared` per policy, for the whole process: each starts an audit thread.
pub(super) fn shared(policy: u8) -> &'static Shared {
    static SHARED: OnceLock<Vec<Shared>> = OnceLock::new();
    let all = SHARED.get_or_init(|| {
        policies()
            .into_iter()
            .map(|policy| {
                let config = Config {
                    policy,
                    max_frame_size: MAX_FRAME_SIZE,
                    idle_timeout: IDLE_TIMEOUT,
                    frame_timeout: FRAME_TIMEOUT,
                    ..Config::default()
                };
                let audit = Audit::start(
                    AuditSink::Writer(Box::new(io::sink())),
                    DEFAULT_AUDIT_QUEUE_BYTES,
                )
                .expect("the audit thread starts");
                Shared::new(&config, audit)
            })
            .collect()
    });
    &all[usize::from(policy) % all.len()]
}

pub(super) fn conn_info() -> ConnInfo {
    ConnInfo {
        client: "192.0.2.1:50000".parse().unwrap(),
        listener: "127.0.0.1:19092".parse().unwrap(),
        local: "127.0.0.1:19092".parse().unwrap(),
        upstream: "127.0.0.1:9092".parse().unwrap(),
    }
}
