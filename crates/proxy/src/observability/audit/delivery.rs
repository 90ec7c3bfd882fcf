//! Audit lines delivered to a sink that acknowledges them (the Kafka topic of
//! `elect-leaders proxy`'s `[audit-kafka]`, which the tool implements with
//! `kafka-elect-leaders-audit-kafka`: this crate has no Kafka client), and the delivery modes
//! of issue 45: `batch`, `blocking`, `blocking-strict`.
//!
//! The writer thread hands each line to the sink in the order queued ([`Deliver::send`],
//! which must not block); the acknowledgement to come goes back to whoever waits for it
//! ([`Pending`]), on the runtime, never on a worker's time: a leadership change forwarded
//! under `blocking` or `blocking-strict` is held in its connection's request pump (which
//! keeps the connection's requests in order) until its record is acknowledged, and under
//! `blocking-strict` answered with its rule's refusal when the acknowledgement does not come
//! within the deadline (`crate::filter::Forward::after`).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::oneshot;
use tokio::time::Instant;

/// A line's acknowledgement to come: `Ok` once the sink holds it for good (for Kafka: the
/// broker's `acks=all`), `Err(why)` when it never will.
pub type Acked = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

/// A sink that acknowledges each line. Implemented outside this crate (the tool's Kafka sink).
/// Its texts (errors, [`Deliver::describe`]) must never hold a secret.
pub trait Deliver: Send + Sync + 'static {
    /// Hands one line (JSON, newline included) over, without blocking: its
    /// acknowledgement to come, or why it was not taken (its buffer is full: the sink
    /// counts it and reports it later, as `batch` has it).
    fn send(&self, line: &[u8]) -> Result<Acked, String>;

    /// Waits at most `timeout` until every line handed over is acknowledged or given up
    /// (a clean stop). Blocks: called off the runtime's workers.
    fn flush(&self, timeout: Duration) -> Result<(), String>;

    /// Its counters, for `/metrics`.
    fn stats(&self) -> DeliveryStats;

    /// The bytes of lines it buffers at most (counted in the guard's buffer budget, taken
    /// from it once when the guard starts).
    fn max_buffered_bytes(&self) -> usize;

    /// What it is, for the guard's log (`Kafka topic audit on host:9092`): no secret.
    fn describe(&self) -> String;
}

/// A sink's counters ([`Deliver::stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeliveryStats {
    /// Lines acknowledged.
    pub delivered: u64,
    /// Lines handed over and never acknowledged (given up after retries).
    pub failed: u64,
    /// Lines not taken at all (the sink's buffer full).
    pub not_queued: u64,
    /// Bytes of lines in the sink's buffer now.
    pub buffered_bytes: u64,
}

/// How a record is delivered: what the decision waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeliveryMode {
    /// The decision goes on once the line is queued; what is not delivered is counted
    /// (and reported in the next record), never dropped silently.
    Batch,
    /// The decision waits for the acknowledgement; a line the sink gives up on refuses it.
    Blocking,
    /// The decision waits at most `deadline` for the acknowledgement; past it, it is
    /// refused, and the refusal audited as a record of its own.
    BlockingStrict {
        /// How long the decision waits.
        deadline: Duration,
    },
}

impl DeliveryMode {
    /// The default deadline of `blocking-strict`: 5 s, well within the 30 s a Kafka tool
    /// waits for its answer.
    pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(5);

    /// Its name in the settings: `batch`, `blocking`, `blocking-strict`.
    pub fn name(self) -> &'static str {
        match self {
            DeliveryMode::Batch => "batch",
            DeliveryMode::Blocking => "blocking",
            DeliveryMode::BlockingStrict { .. } => "blocking-strict",
        }
    }

    /// The mode named `name`, `blocking-strict` with `deadline`.
    pub fn from_name(name: &str, deadline: Duration) -> Option<DeliveryMode> {
        match name {
            "batch" => Some(DeliveryMode::Batch),
            "blocking" => Some(DeliveryMode::Blocking),
            "blocking-strict" => Some(DeliveryMode::BlockingStrict { deadline }),
            _ => None,
        }
    }

    /// Whether a decision waits for its record.
    pub fn waits(self) -> bool {
        self != DeliveryMode::Batch
    }
}

/// The audit log delivered to a sink that acknowledges ([`crate::AuditTarget::Delivered`]).
#[derive(Clone)]
pub struct DeliveryTarget {
    /// The sink.
    pub sink: Arc<dyn Deliver>,
    /// The mode of the records of leadership changes the guard forwards (an ElectLeaders
    /// request forwarded, whole or trimmed; a configuration, reassignment or deletion the
    /// leadership rules let through). Default `blocking-strict`, 5 s.
    pub leadership: DeliveryMode,
}

impl std::fmt::Debug for DeliveryTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeliveryTarget")
            .field("sink", &self.sink.describe())
            .field("leadership", &self.leadership)
            .finish()
    }
}

impl PartialEq for DeliveryTarget {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.sink, &other.sink) && self.leadership == other.leadership
    }
}

impl Eq for DeliveryTarget {}

/// What the audit log keeps of its delivery: the mode, the sink, whether strict waits
/// are failing (`/readyz`), and the metrics.
pub(crate) struct DeliveryState {
    pub(crate) target: DeliveryTarget,
    /// The last wait for a record of a leadership change ended without its
    /// acknowledgement (cleared by the next acknowledged).
    pub(crate) failing: AtomicBool,
    pub(crate) metrics: DeliveryMetrics,
}

/// The acknowledgement of one record a decision waits for ([`Pending::wait`]).
pub struct Pending {
    /// The sink's answer, handed over by the writer thread once the line reached it.
    pub(super) handed: oneshot::Receiver<Result<Acked, String>>,
    pub(super) mode: DeliveryMode,
    pub(super) since: Instant,
    pub(super) state: Arc<DeliveryState>,
}

impl Pending {
    /// Waits for the record's acknowledgement, as its mode says: `Err(why)` when the
    /// decision must be refused (the sink gave it up, or, strict, its deadline passed).
    pub async fn wait(self) -> Result<(), String> {
        let state = self.state;
        let acked = async move {
            let acked = self
                .handed
                .await
                .map_err(|_| "the audit writer is gone".to_owned())??;
            acked.await
        };
        let outcome = match self.mode {
            DeliveryMode::Batch => return Ok(()),
            DeliveryMode::Blocking => acked
                .await
                .map_err(|why| format!("its audit record was not delivered: {why}")),
            DeliveryMode::BlockingStrict { deadline } => {
                match tokio::time::timeout_at(self.since + deadline, acked).await {
                    Ok(done) => {
                        done.map_err(|why| format!("its audit record was not delivered: {why}"))
                    }
                    Err(_) => {
                        state.metrics.deadline_missed.inc();
                        Err(format!(
                            "its audit record was not acknowledged within {} ms",
                            deadline.as_millis()
                        ))
                    }
                }
            }
        };
        match &outcome {
            Ok(()) => state.failing.store(false, Ordering::Relaxed),
            Err(_) => {
                state.metrics.refused.inc();
                state.failing.store(true, Ordering::Relaxed);
            }
        }
        outcome
    }
}

/// The delivery's metrics: the sink's counters, read from it when `/metrics` is served,
/// and the guard's own.
#[derive(Clone, Debug, Default)]
pub(crate) struct DeliveryMetrics {
    /// Records acknowledged.
    pub delivered: Counter,
    /// Records the sink gave up on.
    pub failed: Counter,
    /// Records the sink's buffer had no room for (batch: counted, reported in the next).
    pub not_queued: Counter,
    /// Records whose strict deadline passed before their acknowledgement.
    pub deadline_missed: Counter,
    /// Leadership changes refused because their record was not acknowledged.
    pub refused: Counter,
    /// Bytes in the sink's buffer.
    pub buffered_bytes: Gauge,
    source: Arc<OnceLock<Arc<dyn Deliver>>>,
    last: Arc<Mutex<DeliveryStats>>,
}

impl std::fmt::Debug for dyn Deliver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl DeliveryMetrics {
    /// Reads the sink's counters from `sink` from now on.
    pub(crate) fn read_from(&self, sink: Arc<dyn Deliver>) {
        let _ = self.source.set(sink);
    }

    /// Brings the sink's counters up to date (before `/metrics` is served).
    pub(crate) fn refresh(&self) {
        let Some(sink) = self.source.get() else {
            return;
        };
        let now = sink.stats();
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        self.delivered
            .inc_by(now.delivered.saturating_sub(last.delivered));
        self.failed.inc_by(now.failed.saturating_sub(last.failed));
        self.not_queued
            .inc_by(now.not_queued.saturating_sub(last.not_queued));
        self.buffered_bytes
            .set(i64::try_from(now.buffered_bytes).unwrap_or(i64::MAX));
        *last = now;
    }
}
