//! The sink: each audit line produced to the topic as a CloudEvent, keyed by replica,
//! through librdkafka's idempotent producer with `acks=all`; and the three delivery modes.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, Message, OwnedHeaders};
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::{ClientConfig, ClientContext};
use tokio::sync::{oneshot, Notify};

use crate::error::{redact, Error};
use crate::event::{cloud_event, Attributes, CONTENT_TYPE};
use crate::settings::Settings;

/// How a decision waits for its audit record (Kubernetes' audit backends have the same
/// three).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The record is queued, and the decision goes on at once. A record that does not fit
    /// in the buffer is not queued: it is counted ([`Stats::not_queued`]), and the next
    /// event that is queued says how many records before it were not delivered
    /// (`undeliveredbefore`); so are records the broker never acknowledged
    /// ([`Stats::failed`]). Nothing is dropped silently.
    Batch,
    /// The decision waits until the broker acknowledges its record (`acks=all`), or
    /// librdkafka gives up on it ([`Settings::delivery_timeout`]).
    Blocking,
    /// The decision waits at most `deadline` for the acknowledgement; past it,
    /// [`Error::Deadline`], and the guard refuses a leadership change. The default for
    /// leadership-changing requests ([`Mode::strict`]).
    BlockingStrict {
        /// How long the decision waits, queueing included.
        deadline: Duration,
    },
}

impl Mode {
    /// [`Mode::BlockingStrict`]'s deadline by default: 5 s, within the 30 s a Kafka tool
    /// waits for its answer.
    pub const DEFAULT_STRICT_DEADLINE: Duration = Duration::from_secs(5);

    /// Blocking-strict with [`Mode::DEFAULT_STRICT_DEADLINE`].
    pub fn strict() -> Mode {
        Mode::BlockingStrict {
            deadline: Mode::DEFAULT_STRICT_DEADLINE,
        }
    }
}

/// Where the broker put an acknowledged record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    /// The partition.
    pub partition: i32,
    /// The record's offset in it.
    pub offset: i64,
}

/// What [`KafkaAudit::record`] did with a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Batch mode: queued; its delivery is counted when it is known.
    Queued,
    /// The broker acknowledged it.
    Acknowledged(Ack),
}

/// The sink's counters since it was made, for the guard's metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Records queued for the broker.
    pub queued: u64,
    /// Records the broker acknowledged.
    pub acknowledged: u64,
    /// Records queued but never acknowledged (librdkafka gave up on them).
    pub failed: u64,
    /// Records never queued: no room in the buffer (batch mode at once, the blocking
    /// modes when their wait ended first).
    pub not_queued: u64,
    /// Blocking-strict waits that ended at their deadline (the record may still be
    /// delivered later, or fail and be counted in `failed`).
    pub deadline_missed: u64,
    /// Records not delivered that no event has reported yet: the next event's
    /// `undeliveredbefore`.
    pub unreported: u64,
    /// Bytes of events waiting for the broker now.
    pub buffered_bytes: usize,
}

impl Stats {
    /// Records that will never reach the topic: `not_queued + failed`.
    pub fn undelivered(&self) -> u64 {
        self.not_queued + self.failed
    }
}

/// What the producer's thread and the callers share.
#[derive(Default)]
struct Shared {
    buffered: AtomicUsize,
    unreported: AtomicU64,
    queued: AtomicU64,
    acknowledged: AtomicU64,
    failed: AtomicU64,
    not_queued: AtomicU64,
    deadline_missed: AtomicU64,
    /// Woken when an event leaves the buffer.
    room: Notify,
    /// The password, cut out of delivery errors.
    secret: Option<String>,
}

/// A record on its way: what its delivery report settles.
struct InFlight {
    /// Bytes it holds of the buffer.
    bytes: usize,
    /// The undelivered records its event reports: counted again if it fails too.
    carried: u64,
    reply: oneshot::Sender<Result<Ack, Error>>,
}

/// librdkafka's callbacks: a delivery report settles its record.
struct AuditContext {
    shared: Arc<Shared>,
}

impl ClientContext for AuditContext {}

impl ProducerContext for AuditContext {
    type DeliveryOpaque = Box<InFlight>;

    fn delivery(&self, result: &DeliveryResult<'_>, in_flight: Box<InFlight>) {
        let InFlight {
            bytes,
            carried,
            reply,
        } = *in_flight;
        let shared = &self.shared;
        shared.buffered.fetch_sub(bytes, Ordering::AcqRel);
        let outcome = match result {
            Ok(message) => {
                shared.acknowledged.fetch_add(1, Ordering::Relaxed);
                Ok(Ack {
                    partition: message.partition(),
                    offset: message.offset(),
                })
            }
            Err((error, _)) => {
                shared.failed.fetch_add(1, Ordering::Relaxed);
                shared
                    .unreported
                    .fetch_add(carried.saturating_add(1), Ordering::AcqRel);
                Err(Error::Delivery(redact(
                    error.to_string(),
                    shared.secret.as_deref(),
                )))
            }
        };
        shared.room.notify_waiters();
        // The caller may have stopped waiting (batch mode, a deadline): nothing to tell.
        let _ = reply.send(outcome);
    }
}

/// Bytes an event holds of the buffer besides its value and key: librdkafka's own
/// message header and the `content-type` header, roughly.
const RECORD_OVERHEAD: usize = 128;

/// While waiting for room, how often the buffer is looked at again even without a
/// delivery report (librdkafka's own count of its queue may free first).
const ROOM_POLL: Duration = Duration::from_millis(50);

/// The audit sink on a Kafka topic: one producer, for one replica of the guard.
pub struct KafkaAudit {
    producer: Arc<ThreadedProducer<AuditContext>>,
    shared: Arc<Shared>,
    topic: String,
    replica: String,
    /// Made at start, random: event ids stay unique when the replica restarts.
    session: String,
    sequence: AtomicU64,
    max_buffered_bytes: usize,
    delivery_timeout: Duration,
}

impl std::fmt::Debug for KafkaAudit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaAudit")
            .field("topic", &self.topic)
            .field("replica", &self.replica)
            .field("session", &self.session)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl KafkaAudit {
    /// Makes the producer (librdkafka connects in the background: nothing here waits for
    /// the cluster; [`KafkaAudit::check_topic`] does).
    pub fn connect(settings: Settings) -> Result<KafkaAudit, Error> {
        settings.check()?;
        let secret = settings.connection.secret().map(str::to_owned);
        let shared = Arc::new(Shared {
            secret: secret.clone(),
            ..Shared::default()
        });
        let config: ClientConfig = settings.producer_config();
        let producer = config
            .create_with_context(AuditContext {
                shared: Arc::clone(&shared),
            })
            .map_err(|e| Error::from_kafka(Error::Client, &e, secret.as_deref()))?;
        Ok(KafkaAudit {
            producer: Arc::new(producer),
            shared,
            topic: settings.topic,
            replica: settings.replica,
            session: session_id(),
            sequence: AtomicU64::new(0),
            max_buffered_bytes: settings.max_buffered_bytes,
            delivery_timeout: settings.delivery_timeout,
        })
    }

    /// The replica this sink writes for (each event's key).
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// Asks the cluster, within `timeout`, whether the topic exists: its partition count.
    pub async fn check_topic(&self, timeout: Duration) -> Result<usize, Error> {
        let producer = Arc::clone(&self.producer);
        let topic = self.topic.clone();
        let secret = self.shared.secret.clone();
        let answer = tokio::task::spawn_blocking(move || {
            let metadata = producer
                .client()
                .fetch_metadata(Some(&topic), timeout)
                .map_err(|e| Error::from_kafka(Error::Client, &e, secret.as_deref()))?;
            let Some(found) = metadata.topics().iter().find(|t| t.name() == topic) else {
                return Err(Error::Client(format!(
                    "the cluster did not describe topic {topic}"
                )));
            };
            if let Some(error) = found.error() {
                let code = RDKafkaErrorCode::from(error);
                return Err(Error::Client(format!("topic {topic}: {code}")));
            }
            Ok(found.partitions().len())
        })
        .await;
        answer.map_err(|_| Error::Closed)?
    }

    /// Queues one audit line's event now, or fails at once ([`Error::Full`] when the buffer
    /// has no room: the record is counted as not delivered). The future resolves when the
    /// broker acknowledged the record (`acks=all`) or librdkafka gave up on it; dropping it
    /// abandons nothing: the record goes on, and its fate is counted.
    pub fn send(&self, line: &[u8]) -> Result<Delivery, Error> {
        self.enqueue(line).inspect_err(|e| self.give_up(e))
    }

    /// Audits one line in `mode` (see [`Mode`]).
    pub async fn record(&self, line: &[u8], mode: Mode) -> Result<Outcome, Error> {
        match mode {
            Mode::Batch => self.send(line).map(|_| Outcome::Queued),
            Mode::Blocking => {
                let until = Instant::now() + self.delivery_timeout;
                let delivery = self.enqueue_within(line, until).await?;
                delivery.await.map(Outcome::Acknowledged)
            }
            Mode::BlockingStrict { deadline } => {
                let until = Instant::now() + deadline;
                let delivery = self.enqueue_within(line, until).await?;
                match tokio::time::timeout_at(until.into(), delivery).await {
                    Ok(acknowledged) => acknowledged.map(Outcome::Acknowledged),
                    Err(_) => {
                        self.shared.deadline_missed.fetch_add(1, Ordering::Relaxed);
                        Err(Error::Deadline(deadline))
                    }
                }
            }
        }
    }

    /// Waits until every queued record is acknowledged or failed, at most `timeout` (for a
    /// clean stop). An error says how many are left.
    pub async fn flush(&self, timeout: Duration) -> Result<(), Error> {
        let producer = Arc::clone(&self.producer);
        let flushed = tokio::task::spawn_blocking(move || {
            producer
                .flush(timeout)
                .map_err(|_| producer.in_flight_count())
        })
        .await
        .map_err(|_| Error::Closed)?;
        flushed.map_err(|left| {
            Error::Delivery(format!(
                "{left} records still unacknowledged after {} ms",
                timeout.as_millis()
            ))
        })
    }

    /// The counters.
    pub fn stats(&self) -> Stats {
        let s = &self.shared;
        Stats {
            queued: s.queued.load(Ordering::Relaxed),
            acknowledged: s.acknowledged.load(Ordering::Relaxed),
            failed: s.failed.load(Ordering::Relaxed),
            not_queued: s.not_queued.load(Ordering::Relaxed),
            deadline_missed: s.deadline_missed.load(Ordering::Relaxed),
            unreported: s.unreported.load(Ordering::Relaxed),
            buffered_bytes: s.buffered.load(Ordering::Relaxed),
        }
    }

    /// A record given up before it was queued: counted, and reported by the next event.
    fn give_up(&self, error: &Error) {
        if matches!(error, Error::Full) {
            self.shared.not_queued.fetch_add(1, Ordering::Relaxed);
            self.shared.unreported.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Queues the line's event, waiting for room until `until`.
    async fn enqueue_within(&self, line: &[u8], until: Instant) -> Result<Delivery, Error> {
        loop {
            let room = self.shared.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            match self.enqueue(line) {
                Err(Error::Full) => {}
                other => return other.inspect_err(|e| self.give_up(e)),
            }
            let now = Instant::now();
            if now >= until {
                self.give_up(&Error::Full);
                return Err(Error::Full);
            }
            let wait = (until - now).min(ROOM_POLL);
            let _ = tokio::time::timeout(wait, room).await;
        }
    }

    /// Makes the line's event and queues it, or says why not; on failure the undelivered
    /// count it would have carried is kept for the next one.
    fn enqueue(&self, line: &[u8]) -> Result<Delivery, Error> {
        let sequence = self.sequence.fetch_add(1, Ordering::Relaxed);
        let id = format!("{}:{}:{sequence}", self.replica, self.session);
        let carried = self.shared.unreported.swap(0, Ordering::AcqRel);
        let keep = |error: Error| {
            self.shared.unreported.fetch_add(carried, Ordering::AcqRel);
            error
        };
        let attributes = Attributes {
            id: &id,
            replica: &self.replica,
            time: None,
            subject: None,
            undelivered_before: carried,
        };
        let event = cloud_event(&attributes, line).map_err(|e| keep(e.into()))?;
        let bytes = event.len() + self.replica.len() + RECORD_OVERHEAD;
        if !self.reserve(bytes) {
            return Err(keep(Error::Full));
        }
        let (reply, answer) = oneshot::channel();
        let in_flight = Box::new(InFlight {
            bytes,
            carried,
            reply,
        });
        let headers = OwnedHeaders::new().insert(Header {
            key: "content-type",
            value: Some(CONTENT_TYPE),
        });
        let record = BaseRecord::with_opaque_to(&self.topic, in_flight)
            .key(self.replica.as_bytes())
            .payload(&event[..])
            .headers(headers);
        match self.producer.send(record) {
            Ok(()) => {
                self.shared.queued.fetch_add(1, Ordering::Relaxed);
                Ok(Delivery { answer })
            }
            Err((error, _record)) => {
                self.shared.buffered.fetch_sub(bytes, Ordering::AcqRel);
                Err(keep(match error {
                    KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull) => Error::Full,
                    other => {
                        Error::Delivery(redact(other.to_string(), self.shared.secret.as_deref()))
                    }
                }))
            }
        }
    }

    /// Takes `bytes` of the buffer if they fit.
    fn reserve(&self, bytes: usize) -> bool {
        self.shared
            .buffered
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(bytes)
                    .filter(|&total| total <= self.max_buffered_bytes)
            })
            .is_ok()
    }
}

/// A queued record's acknowledgement, to come: resolves to where the broker put it, or why
/// it was not delivered.
#[derive(Debug)]
pub struct Delivery {
    answer: oneshot::Receiver<Result<Ack, Error>>,
}

impl Future for Delivery {
    type Output = Result<Ack, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.answer)
            .poll(cx)
            .map(|answer| answer.unwrap_or(Err(Error::Closed)))
    }
}

/// 128 bits from the standard library's randomly keyed hasher, in hex: unique enough to
/// tell two runs of one replica apart in event ids.
fn session_id() -> String {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    let mut words = [0u64; 2];
    for (i, word) in words.iter_mut().enumerate() {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_usize(i);
        hasher.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos(),
        );
        hasher.write_u32(std::process::id());
        *word = hasher.finish();
    }
    format!("{:016x}{:016x}", words[0], words[1])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No broker at all: the sink still starts, queues, counts and reports.
    fn unreachable(max_buffered_bytes: usize) -> KafkaAudit {
        let mut settings = Settings::new("127.0.0.1:1", "audit", "guard-0");
        settings.max_buffered_bytes = max_buffered_bytes;
        settings.delivery_timeout = Duration::from_secs(60);
        KafkaAudit::connect(settings).unwrap()
    }

    const LINE: &[u8] = b"{\"verdict\":\"allowed\",\"api_name\":\"ElectLeaders\"}\n";

    #[tokio::test]
    async fn batch_counts_what_does_not_fit() {
        let audit = unreachable(2048);
        let mut full = 0;
        for _ in 0..20 {
            match audit.record(LINE, Mode::Batch).await {
                Ok(Outcome::Queued) => {}
                Err(Error::Full) => full += 1,
                other => panic!("{other:?}"),
            }
        }
        let stats = audit.stats();
        assert!(full > 0 && full < 20, "{full}");
        assert_eq!(stats.not_queued, full);
        assert_eq!(stats.unreported, full);
        assert_eq!(stats.queued, 20 - full);
        assert!(stats.buffered_bytes <= 2048);
    }

    #[tokio::test]
    async fn strict_mode_keeps_its_deadline() {
        let audit = unreachable(1 << 20);
        let deadline = Duration::from_millis(300);
        let started = Instant::now();
        let answer = audit.record(LINE, Mode::BlockingStrict { deadline }).await;
        assert_eq!(answer, Err(Error::Deadline(deadline)));
        assert!(started.elapsed() < deadline + Duration::from_secs(5));
        assert_eq!(audit.stats().deadline_missed, 1);
    }

    #[tokio::test]
    async fn a_bad_line_is_refused_and_reports_nothing() {
        let audit = unreachable(1 << 20);
        assert!(matches!(
            audit.record(b"not json", Mode::Batch).await,
            Err(Error::Event(_))
        ));
        assert_eq!(audit.stats(), Stats::default());
    }

    #[test]
    fn sessions_differ() {
        assert_ne!(session_id(), session_id());
        assert_eq!(session_id().len(), 32);
    }
}
