//! The guard's audit records delivered to a Kafka topic, and read back.
//!
//! Each audit line becomes a CloudEvents 1.0 event in the structured JSON format
//! ([`cloud_event`]: `id`, `source` naming the replica, `type`, `time`, `subject`, and the
//! line itself, byte for byte, as `data`), produced keyed by the replica through
//! librdkafka's idempotent producer with `acks=all` ([`KafkaAudit`]), in one of three
//! [`Mode`]s: `Batch`, `Blocking` or `BlockingStrict`. [`TopicReader`] reads the topic back
//! from its beginning to its end, every partition, without a consumer group.
//!
//! ```no_run
//! # async fn run() -> Result<(), kafka_elect_leaders_audit_kafka::Error> {
//! use kafka_elect_leaders_audit_kafka::{KafkaAudit, Mode, Settings};
//!
//! let audit = KafkaAudit::connect(Settings::new("127.0.0.1:9092", "audit", "guard-0"))?;
//! let line = br#"{"time":"2025-01-01T00:00:00.000Z","verdict":"allowed"}"#;
//! // A leadership change goes on only once its record is acknowledged, within 5 s.
//! audit.record(line, Mode::strict()).await?;
//! audit.flush(std::time::Duration::from_secs(10)).await?;
//! # Ok(()) }
//! ```
//!
//! Inside, bottom up: `error`, `event` (the CloudEvent, a pure function), `settings` (and
//! librdkafka's configuration made of them), `producer` (the sink and its modes),
//! `reader`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod error;
mod event;
mod producer;
mod reader;
mod settings;

pub use error::Error;
pub use event::{
    cloud_event, rfc3339, source, subject_of, Attributes, EventError, CONTENT_TYPE, EVENT_TYPE,
    MAX_DATA_BYTES, MAX_SUBJECT_BYTES, SOURCE_PREFIX, SPEC_VERSION, UNDELIVERED_ATTRIBUTE,
};
pub use producer::{Ack, Delivery, KafkaAudit, Mode, Outcome, Stats};
pub use reader::{Record, TopicReader};
pub use settings::{
    check_replica, Connection, Mechanism, Sasl, Secret, Settings, Tls, DEFAULT_DELIVERY_TIMEOUT,
    DEFAULT_MAX_BUFFERED_BYTES, MAX_REPLICA_LEN,
};
