//! The audit log: one JSON line per decision (the guard's diagnostics are
//! [`crate::observability::diag`]'s).
//!
//! It is never written on a runtime worker. Audit lines go through a queue bounded in
//! bytes ([`DEFAULT_AUDIT_QUEUE_BYTES`], each line counted by its allocation) to a writer
//! thread of their own, which writes each line with one `write` (and flushes standard
//! output); nothing is fsynced. An election goes on once its line is queued, not written: a
//! crash of the guard can lose the lines still queued, a crash of the machine also what the
//! kernel had not written out. A clean stop waits for the queue to drain ([`Audit::drain`]).
//!
//! Each client address has a share of the queue ([`connection_share`], an eighth of it),
//! which all its connections draw on (an IPv6 client's whole /64, which one host commonly
//! holds): once the lines its connections queued fill it, their next decision waits
//! ([`AuditConnection::ready`], on the runtime, never blocking a worker) until they are
//! written, while other clients' decisions are audited as they come. So one client flooding
//! elections, over one connection or many, slows itself down and no one else (issue 35,
//! finding 5: eight connections of one client filled the queue). Clients behind one
//! address (a NAT, a load balancer) share its share. When the whole queue is full (the log
//! is stalled: a full disk, a pipe nobody reads, or more flooding clients than the log
//! keeps up with) or the last
//! write failed, [`AuditConnection::record`] says so, and the guard refuses the election
//! it could not audit: it fails closed, while every other API keeps flowing; under
//! log-only it forwards it unaudited and counts it ([`Audit::unaudited`]).
//!
//! An audit file is opened again at its path when the path no longer names the file open
//! (its device and inode, looked at before each line): moved or deleted, as logrotate's
//! default `create` mode does, the next line goes to a new file at the path, and the lines
//! before stay in the file moved. [`Audit::reopen`] opens it again at once (SIGHUP,
//! logrotate's `postrotate`). `copytruncate` needs nothing: the file is appended to, so
//! the next line goes to the start of the truncated file. When the file cannot be opened
//! again (its directory gone, the path a directory), elections are refused, failing
//! closed, and the writer tries again every second.
//!
//! A log started with a chain ([`Audit::start_chained`], what the guard does) is a hash
//! chain: each line carries the replica's id, the chain of this start, its sequence number
//! and the hash of the line before, added by the writer as it writes it (`chain`: the
//! fields, the hash, and what they prove).
//!
//! Inside, bottom up: `chain` (a line's chain fields), `queue` (what the writer and the
//! connections share), `sink` (where lines go, and the writer thread), `record` (a line's
//! JSON), and here the handles that queue lines ([`Audit`], [`AuditConnection`]).

use std::io;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Sender, TrySendError};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kafka_elect_leaders::ElectLeadersRequest;
use prometheus_client::metrics::gauge::Gauge;

use crate::filters::elect::policy::{Decision, Policy};
use crate::observability::diag::log;

mod chain;
mod delivery;
mod queue;
mod record;
mod sink;
mod syslog;
#[cfg(test)]
mod tests;

use chain::Chain;
pub use chain::{check_replica, default_replica, line_hash, ChainKey, MIN_KEY_BYTES};
pub(crate) use delivery::DeliveryMetrics;
use delivery::DeliveryState;
pub use delivery::{Acked, Deliver, DeliveryMode, DeliveryStats, DeliveryTarget, Pending};
pub(crate) use queue::AuditMetrics;
use queue::{drain, release, Message, Queue, Queued};
pub(crate) use record::{json_len, line_within, Name, RuleList, Shown};
pub use record::{rfc3339, rfc3339_now, ConnInfo, DecisionRecord};
use sink::write_lines;
pub use sink::{AuditFile, AuditSink};
pub use syslog::{facility, Syslog, SyslogTarget, SyslogTls, FACILITIES};

/// Bytes of audit lines waiting for the writer, at most, by default: 64 MiB, what the guard
/// holds of them at most however its clients flood and however the log lags (lines are
/// counted by their allocation; an ElectLeaders line lists every partition of its request,
/// and of those refused again). Past it the log is stalled and elections are refused. A
/// connection has an eighth of it ([`connection_share`]): 8 MiB, also the largest line
/// queued, that of a request naming about a million and a half partitions of one topic
/// (a line takes about 5.5 bytes a partition), fewer spread over many topics; a larger
/// one is shortened to fit, its lists cut and marked `"truncated": true` ([`AuditLine`]).
/// The lines of kafka-leader-election runs are a few hundred bytes, or null for all
/// partitions.
pub const DEFAULT_AUDIT_QUEUE_BYTES: usize = 64 << 20;

/// One JSON line per decision, handed to a writer thread through a queue bounded in bytes.
/// Lines from several connections never interleave: one thread writes them, one `write`
/// each.
pub struct Audit {
    lines: Sender<Message>,
    queue: Arc<Queue>,
    /// The bytes each client address has queued, shared by its connections.
    by_address: crate::core::clients::PerClient,
    /// The delivery's mode and state, when lines go to a sink that acknowledges them.
    delivery: Option<Arc<DeliveryState>>,
    /// The part of the guard's buffer budget that sink's buffer holds, for the guard's life.
    _delivery_share: OnceLock<crate::core::budget::Share>,
}

/// An audit line to queue: one written already, or a record written when queued, as its
/// share of the queue allows: shortened, its lists cut and marked `"truncated": true`,
/// when it is larger than a share, so that a large request is audited all the same.
pub trait AuditLine {
    /// The line (JSON, newline included) in at most `limit` bytes, shortened if it has
    /// to be and can be; None when it cannot fit.
    fn fitted_to(self, limit: usize) -> Option<String>;
}

/// A line written already: it fits or not; nothing can be cut from it.
impl AuditLine for String {
    fn fitted_to(self, limit: usize) -> Option<String> {
        (self.len() <= limit).then_some(self)
    }
}

/// A decision's record: within `limit` and [`MAX_LINE`].
impl AuditLine for DecisionRecord<'_, '_> {
    fn fitted_to(self, limit: usize) -> Option<String> {
        self.line_fitted_to(limit.min(MAX_LINE))
    }
}

/// Why a decision could not be audited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuditError {
    /// The queue is full: the writer cannot keep up or is blocked.
    Stalled,
    /// The last write failed, or the writer is gone.
    Failing,
    /// The decision's line alone is larger than a connection's share of the queue, even
    /// shortened (its lists cut, [`AuditLine`]): a share smaller than its fixed fields.
    TooLarge,
    /// The guard's buffer budget
    /// ([`Config::max_buffered_bytes`](crate::Config::max_buffered_bytes)), which audit
    /// lines are counted in, has no room for the line.
    NoMemory,
}

impl std::fmt::Display for AuditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.reason())
    }
}

impl std::error::Error for AuditError {}

impl AuditError {
    /// Every kind, for what checks the reasons a refusal can give.
    pub const ALL: [AuditError; 4] = [
        AuditError::Stalled,
        AuditError::Failing,
        AuditError::TooLarge,
        AuditError::NoMemory,
    ];

    /// Why, in a few words, for the refusal's message.
    pub fn reason(self) -> &'static str {
        match self {
            AuditError::Stalled => "the audit log is stalled",
            AuditError::Failing => "the audit log cannot be written",
            AuditError::TooLarge => {
                "its audit line, even shortened, is larger than a connection's share of the \
                 audit queue"
            }
            AuditError::NoMemory => "the guard has no memory left for its audit line",
        }
    }
}

/// The bytes of audit lines one connection may have queued before its next decision waits
/// for them to be written: an eighth of the queue, at least 1 MiB, at most the whole queue.
/// Eight connections flooding elections at once are needed to fill the queue, and then
/// only while the log does not keep up with them.
pub fn connection_share(bound: usize) -> usize {
    (bound / 8).max(MIN_CONNECTION_SHARE).min(bound.max(1))
}

/// A connection whose share is full waits for its lines at most this long without any
/// line being written ([`AuditConnection::ready`]): past it the log is stalled, and its
/// decision is refused (a client's own request timeout, 30 s for Kafka's tools, is longer).
pub const STALLED_AFTER: Duration = Duration::from_secs(5);

/// The longest audit line of a decision (a line written already is the writer's to
/// size): a decision on more partitions than fit lists the first of them, marked `"truncated": true` with the count of those left out. A line of
/// megabytes helps no reader (SIEMs cut events far shorter) and cost the guard: writing
/// the 8 MiB lines of a flood of refused 16 MiB requests was about half of what delayed
/// the other clients (issue 42, item 5). A chained log's writer adds the chain fields
/// after it, at most [`MAX_CHAIN_FIELDS`] bytes more.
pub const MAX_LINE: usize = 64 << 10;

/// The most bytes the chain fields add to a line (`chain`): a replica id of 200 bytes,
/// the chain's id, a seq of 20 digits, `prev` and `hash`.
pub const MAX_CHAIN_FIELDS: usize = 435;

/// The smallest share of the queue a connection has ([`connection_share`]).
pub const MIN_CONNECTION_SHARE: usize = 1 << 20;

/// Whether the rules that decide for `principal` under `policy` are log-only
/// ([`Policy::log_only`]): the principal's own rules if it has some, else the policy's.
pub fn log_only(policy: &Policy, principal: Option<&str>) -> bool {
    principal
        .and_then(|p| policy.principal_rules.get(p))
        .unwrap_or(policy)
        .log_only
}

impl Audit {
    /// Starts the writer thread of `sink`, with room for `bound` bytes of lines waiting (at
    /// least 1).
    pub fn start(sink: AuditSink, bound: usize) -> io::Result<Audit> {
        Audit::start_with(sink, bound, None)
    }

    /// [`Audit::start`], each line written with its chain fields: a new chain of `replica`
    /// (an id [`check_replica`] takes), hashed under `key` (HMAC-SHA-256; SHA-256 without
    /// one), begun by a `chain-start` line queued at once.
    pub fn start_chained(
        sink: AuditSink,
        bound: usize,
        replica: &str,
        key: Option<ChainKey>,
    ) -> io::Result<Audit> {
        check_replica(replica)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("replica id: {e}")))?;
        let chain = Chain::new(replica, key);
        let start = chain.start_line();
        let audit = Audit::start_with(sink, bound, Some(chain))?;
        audit
            .queue_line(start, None, None)
            .map_err(|e| io::Error::other(format!("the audit chain's start: {e}")))?;
        Ok(audit)
    }

    fn start_with(sink: AuditSink, bound: usize, chain: Option<Chain>) -> io::Result<Audit> {
        let bound = bound.max(1);
        let metrics = AuditMetrics::default();
        let delivery = match &sink {
            AuditSink::Delivered(target) => {
                metrics.delivery.read_from(target.sink.clone());
                Some(Arc::new(DeliveryState {
                    target: target.clone(),
                    failing: AtomicBool::new(false),
                    metrics: metrics.delivery.clone(),
                }))
            }
            _ => None,
        };
        let (lines, rx) = channel();
        let queue = Arc::new(Queue {
            bound,
            share: connection_share(bound),
            bytes: AtomicUsize::new(0),
            failing: AtomicBool::new(false),
            changed: tokio::sync::Notify::new(),
            metrics,
            budget: OnceLock::new(),
            chain: std::sync::Mutex::new(chain),
        });
        let writer = queue.clone();
        std::thread::Builder::new()
            .name("audit-writer".into())
            .spawn(move || write_lines(sink, &rx, &writer))?;
        Ok(Audit {
            lines,
            queue,
            by_address: crate::core::clients::PerClient::default(),
            delivery,
            _delivery_share: OnceLock::new(),
        })
    }

    /// Counts every line queued from now on in `budget` as well (the guard's
    /// [`Config::max_buffered_bytes`](crate::Config::max_buffered_bytes)): a line the
    /// budget has no room for is refused ([`AuditError::NoMemory`]). Once: a second budget
    /// is ignored.
    pub(crate) fn count_in(&self, budget: &crate::core::budget::Budget) {
        if self.queue.budget.set(budget.clone()).is_err() {
            return;
        }
        // A sink that acknowledges buffers lines of its own: its bound is taken from the
        // budget once, for the guard's life.
        if let Some(delivery) = &self.delivery {
            let bytes = delivery.target.sink.max_buffered_bytes();
            match budget.try_set_aside(bytes) {
                Some(share) => {
                    let _ = self._delivery_share.set(share);
                }
                None => log(format_args!(
                    "the audit sink's buffer ({bytes} bytes) is more than half of what \
                     max-buffered-bytes leaves to frames: it is not taken from it, and the \
                     guard may hold that much more"
                )),
            }
        }
    }

    /// The mode of the records of leadership changes the guard forwards: `Batch` for
    /// every sink but one that acknowledges ([`AuditSink::Delivered`]).
    pub fn leadership_mode(&self) -> DeliveryMode {
        self.delivery
            .as_ref()
            .map_or(DeliveryMode::Batch, |d| d.target.leadership)
    }

    /// Whether the records of leadership changes wait for a sink that, lately, did not
    /// acknowledge them (strict or blocking): `/readyz` says not ready meanwhile.
    pub fn delivery_failing(&self) -> bool {
        self.delivery
            .as_ref()
            .is_some_and(|d| d.target.leadership.waits() && d.failing.load(Ordering::Relaxed))
    }

    /// The audit log's metrics (its queue's depth, kept by the writer).
    pub(crate) fn metrics(&self) -> AuditMetrics {
        self.queue.metrics.clone()
    }

    /// The gauge of lines queued and not yet written.
    pub fn queued(&self) -> Gauge {
        self.queue.metrics.queued_lines.clone()
    }

    /// Bytes of lines queued and not yet written, now.
    pub fn queued_bytes(&self) -> usize {
        self.queue.bytes.load(Ordering::Relaxed)
    }

    /// The handle of a connection from `client`: its decisions' lines are counted against
    /// the share of the queue of `client`'s address ([`connection_share`]), with those of
    /// the address's other connections.
    pub fn connection(self: &Arc<Self>, client: IpAddr) -> AuditConnection {
        let queued = self.by_address.counter(client);
        AuditConnection {
            audit: self.clone(),
            queued,
        }
    }

    fn send(&self, message: Message) -> Result<(), TrySendError<Message>> {
        self.lines
            .send(message)
            .map_err(|e| TrySendError::Disconnected(e.0))
    }

    /// Waits until every line queued so far is written, at most `timeout`: false if they
    /// were not (the log is stalled or failing). Blocks: call it off the runtime's workers.
    pub fn drain(&self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        let written = drain(|message| self.send(message), deadline);
        // Then a sink that acknowledges: what it holds delivered, in the time left.
        let Some(delivery) = &self.delivery else {
            return written;
        };
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match delivery.target.sink.flush(left) {
            Ok(()) => written,
            Err(why) => {
                log(format_args!(
                    "audit sink {}: not every record delivered at stop: {why}",
                    delivery.target.sink.describe()
                ));
                false
            }
        }
    }

    /// Opens the audit file again at its path once the lines queued before are written,
    /// and waits for it at most `timeout`: what SIGHUP does, for logrotate. `Ok(false)`:
    /// the sink is no file. On an error (the file cannot be opened, or the log is stalled
    /// past `timeout`) elections are refused until a line can be written. Blocks: call it
    /// off the runtime's workers.
    pub fn reopen(&self, timeout: Duration) -> io::Result<bool> {
        let (done, wait) = std::sync::mpsc::channel();
        if self.send(Message::Reopen(done)).is_err() {
            return Err(io::Error::other("the audit writer is gone"));
        }
        wait.recv_timeout(timeout).unwrap_or_else(|_| {
            Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the audit log is stalled: the lines before are not written yet",
            ))
        })
    }

    /// Whether the log is failing: its last write failed, or its writer is gone. Decisions
    /// that must be audited are refused meanwhile; `/readyz` says not ready.
    pub fn failing(&self) -> bool {
        self.queue.failing.load(Ordering::Relaxed)
    }

    /// Hands the line for one decision to the writer, shortened if it is larger than a
    /// share of the queue ([`DecisionRecord::line_fitted_to`]); an error when it cannot be
    /// audited (the caller then refuses the election, and nothing is written for it).
    /// Counted against no connection's share: see [`Audit::connection`].
    pub fn record(
        &self,
        conn: &ConnInfo,
        principal: Option<&str>,
        policy: &Policy,
        request: &ElectLeadersRequest<'_>,
        decision: &Decision,
    ) -> Result<(), AuditError> {
        if self.queue.failing.load(Ordering::Relaxed) {
            return Err(AuditError::Failing);
        }
        let record = DecisionRecord::new(conn, principal, policy, request, decision);
        self.record_line(record)
    }

    /// Hands one line (JSON, newline included) to the writer, as [`Audit::record`] does:
    /// shortened to fit a share of the queue if it is a line that can be ([`AuditLine`]).
    pub fn record_line(&self, line: impl AuditLine) -> Result<(), AuditError> {
        self.queue_line(self.fitted(line)?, None, None)
    }

    /// A waiter for the acknowledgement of the line about to be queued, when leadership
    /// changes wait for theirs ([`Audit::leadership_mode`]): its sender goes with the line.
    fn waiter(
        &self,
    ) -> (
        Option<Pending>,
        Option<tokio::sync::oneshot::Sender<Result<Acked, String>>>,
    ) {
        match &self.delivery {
            Some(delivery) if delivery.target.leadership.waits() => {
                let (handed, waits) = tokio::sync::oneshot::channel();
                let pending = Pending {
                    handed: waits,
                    mode: delivery.target.leadership,
                    since: tokio::time::Instant::now(),
                    state: delivery.clone(),
                };
                (Some(pending), Some(handed))
            }
            _ => (None, None),
        }
    }

    /// `line`, written to fit a share of the queue: [`AuditError::TooLarge`] when even
    /// shortened it does not. Not written at all when the log is failing.
    fn fitted(&self, line: impl AuditLine) -> Result<String, AuditError> {
        if self.queue.failing.load(Ordering::Relaxed) {
            return Err(AuditError::Failing);
        }
        line.fitted_to(self.queue.share).ok_or(AuditError::TooLarge)
    }

    /// Queues `line`, counted against the queue's bound and `conn`'s share: refused when
    /// the log is failing, when the line alone is larger than a share, when `conn`'s share
    /// is full, or when the queue has no room for it (stalled).
    fn queue_line(
        &self,
        mut line: String,
        conn: Option<&Arc<AtomicUsize>>,
        handed: Option<tokio::sync::oneshot::Sender<Result<Acked, String>>>,
    ) -> Result<(), AuditError> {
        let queue = &*self.queue;
        if queue.failing.load(Ordering::Relaxed) {
            return Err(AuditError::Failing);
        }
        // Counted as what it holds: its allocation, made to fit first (a line is written
        // into a buffer that grows by doubling).
        line.shrink_to_fit();
        let bytes = line.capacity().max(1);
        if bytes > queue.share {
            return Err(AuditError::TooLarge);
        }
        if conn.is_some_and(|c| c.load(Ordering::Acquire) >= queue.share) {
            return Err(AuditError::Stalled);
        }
        let room = queue
            .bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |queued| {
                queued
                    .checked_add(bytes)
                    .filter(|&after| after <= queue.bound)
            });
        if room.is_err() {
            return Err(AuditError::Stalled);
        }
        // And in the guard's buffer budget, with everything else a client makes it hold.
        let share = match queue.budget.get() {
            Some(budget) => match budget.try_hold(bytes) {
                Some(share) => Some(share),
                None => {
                    queue.bytes.fetch_sub(bytes, Ordering::AcqRel);
                    queue.changed.notify_waiters();
                    return Err(AuditError::NoMemory);
                }
            },
            None => None,
        };
        if let Some(c) = conn {
            c.fetch_add(bytes, Ordering::AcqRel);
        }
        // Counted before it is sent, so that the writer never takes them below zero.
        queue.metrics.queued_lines.inc();
        queue.metrics.queued_bytes.inc_by(bytes as i64);
        let queued = Queued {
            text: line,
            bytes,
            conn: conn.cloned(),
            _share: share,
            handed,
        };
        if self.send(Message::Line(Box::new(queued))).is_err() {
            release(queue, bytes, conn.map(|c| &**c));
            return Err(AuditError::Failing);
        }
        Ok(())
    }

    /// A decision that could not be audited (`what` says which, `e` why): under
    /// log-only rules ([`log_only`]), which never refuse, it is forwarded all the same:
    /// `Ok`, counted, and said in the diagnostics at most once every ten seconds, with how
    /// many since. Otherwise `Err(e)`: the caller refuses it.
    pub fn unaudited(
        &self,
        log_only: bool,
        conn: &ConnInfo,
        what: std::fmt::Arguments<'_>,
        e: AuditError,
    ) -> Result<(), AuditError> {
        if !log_only {
            return Err(e);
        }
        static LAST: AtomicU64 = AtomicU64::new(0);
        static SINCE: AtomicU64 = AtomicU64::new(0);
        self.queue.metrics.forwarded_unaudited.inc();
        SINCE.fetch_add(1, Ordering::Relaxed);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let last = LAST.load(Ordering::Relaxed);
        if now >= last.saturating_add(10)
            && LAST
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            let since = SINCE.swap(0, Ordering::Relaxed);
            log(format_args!(
                "{} -> {}: {what} forwarded unaudited under log-only: {}; {since} \
                 decision(s) forwarded unaudited since the last such line",
                conn.client,
                conn.upstream,
                e.reason()
            ));
        }
        Ok(())
    }
}

/// One connection's handle on the audit log ([`Audit::connection`]): the bytes of its
/// lines queued and not yet written, at most its share of the queue.
pub struct AuditConnection {
    audit: Arc<Audit>,
    queued: Arc<AtomicUsize>,
}

impl AuditConnection {
    /// Waits until this connection's share of the queue has room: its own lines queued
    /// before are written, while other connections' decisions are audited as they come.
    /// Also done when the log is failing, when the whole queue is near full, or when no
    /// line at all was written for [`STALLED_AFTER`] (the log is stalled: a pipe nobody
    /// reads): the next line is then refused and the decision with it, rather than held
    /// for ever. Never blocks a runtime worker.
    pub async fn ready(&self) {
        let queue = &*self.audit.queue;
        loop {
            let changed = queue.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let others_full = queue
                .bytes
                .load(Ordering::Acquire)
                .saturating_add(queue.share)
                > queue.bound;
            if self.queued.load(Ordering::Acquire) < queue.share
                || queue.failing.load(Ordering::Relaxed)
                || others_full
            {
                return;
            }
            // Each line written wakes this: a wait this long saw none written.
            if tokio::time::timeout(STALLED_AFTER, changed).await.is_err() {
                return;
            }
        }
    }

    /// [`Audit::record`], counted against this connection's share.
    pub fn record(
        &self,
        conn: &ConnInfo,
        principal: Option<&str>,
        policy: &Policy,
        request: &ElectLeadersRequest<'_>,
        decision: &Decision,
    ) -> Result<(), AuditError> {
        if self.audit.queue.failing.load(Ordering::Relaxed) {
            return Err(AuditError::Failing);
        }
        let record = DecisionRecord::new(conn, principal, policy, request, decision);
        self.record_line(record)
    }

    /// [`Audit::record_line`], counted against this connection's share.
    pub fn record_line(&self, line: impl AuditLine) -> Result<(), AuditError> {
        let line = self.audit.fitted(line)?;
        self.audit.queue_line(line, Some(&self.queued), None)
    }

    /// [`AuditConnection::record_line`] for the record of a leadership change the guard
    /// is about to forward: with the wait for its acknowledgement when the sink's mode
    /// has one ([`Audit::leadership_mode`]; None: it goes on at once, as a queued line).
    pub fn record_change(&self, line: impl AuditLine) -> Result<Option<Pending>, AuditError> {
        let line = self.audit.fitted(line)?;
        let (pending, handed) = self.audit.waiter();
        self.audit.queue_line(line, Some(&self.queued), handed)?;
        Ok(pending)
    }
}
