//! The audit log: one JSON line per ElectLeaders decision; and the proxy's own diagnostics,
//! one plain line each on stderr.
//!
//! Neither is ever written on a runtime worker. Audit lines go through a queue bounded in
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
//! address (a NAT, a load balancer) share its share. When the whole queue is full (the log is stalled: a full disk, a
//! pipe nobody reads, or more flooding clients than the log keeps up with) or the last
//! write failed, [`AuditConnection::record`] says so, and the guard refuses the election
//! it could not audit: it fails closed, while every other API keeps flowing; under
//! `--log-only` it forwards it unaudited and counts it ([`Audit::unaudited`]).
//! Diagnostics go through a queue of their own to a thread that writes stderr; when it is
//! full they are dropped and counted, never waited for.
//!
//! An audit file is opened again at its path when the path no longer names the file open
//! (its device and inode, looked at before each line): moved or deleted, as logrotate's
//! default `create` mode does, the next line goes to a new file at the path, and the lines
//! before stay in the file moved. [`Audit::reopen`] opens it again at once (SIGHUP,
//! logrotate's `postrotate`). `copytruncate` needs nothing: the file is appended to, so
//! the next line goes to the start of the truncated file. When the file cannot be opened
//! again (its directory gone, the path a directory), elections are refused, failing
//! closed, and the writer tries again every second.

use std::fs::File;
use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{
    channel, sync_channel, Receiver, RecvTimeoutError, Sender, SyncSender, TrySendError,
};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kafka_elect_leaders::ElectLeadersRequest;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::policy::{Decision, Policy};

/// Bytes of audit lines waiting for the writer, at most, by default: 64 MiB, what the guard
/// holds of them at most however its clients flood and however the log lags (lines are
/// counted by their allocation; an ElectLeaders line lists every partition of its request,
/// and of those refused again). Past it the log is stalled and elections are refused. A
/// connection has an eighth of it ([`connection_share`]): 8 MiB, also the largest line
/// audited, that of a request naming about a million and a half partitions of one topic
/// (a line takes about 5.5 bytes a partition), fewer spread over many topics. The lines of
/// kafka-leader-election runs are a few hundred bytes, or null for all partitions.
pub const DEFAULT_AUDIT_QUEUE_BYTES: usize = 64 << 20;

/// Where audit lines go.
pub enum AuditSink {
    /// Standard output, flushed after each line.
    Stdout,
    /// Standard error.
    Stderr,
    /// A file, appended to, and opened again at its path when that names another file or
    /// none ([`AuditSink::open`]).
    File(AuditFile),
    /// Any writer, e.g. `io::sink()` or a pipe of the embedding program's.
    Writer(Box<dyn Write + Send>),
}

impl AuditSink {
    /// The file at `path`, opened to append (created if missing).
    pub fn open(path: &Path) -> io::Result<AuditSink> {
        let mut file = AuditFile {
            path: path.to_owned(),
            open: None,
        };
        file.reopen()?;
        Ok(AuditSink::File(file))
    }

    /// An audit file that could not be opened again: tried every second.
    fn broken(&self) -> bool {
        matches!(self, AuditSink::File(AuditFile { open: None, .. }))
    }
}

/// An audit file: its path, and the file open with its identity (None: it could not be
/// opened again).
pub struct AuditFile {
    path: PathBuf,
    open: Option<(File, Option<FileId>)>,
}

/// A file's device and inode: whether a path still names the file open.
type FileId = (u64, u64);

#[cfg(unix)]
fn file_id(meta: &std::fs::Metadata) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

/// Elsewhere a file has no identity the standard library shows: a move is not seen (a
/// delete still is), and SIGHUP opens the file again.
#[cfg(not(unix))]
fn file_id(_: &std::fs::Metadata) -> Option<FileId> {
    None
}

impl AuditFile {
    /// Opens the file at the path (created if missing) in place of the one open; on an
    /// error none is open (lines are not written to a file the path no longer names).
    fn reopen(&mut self) -> io::Result<()> {
        self.open = None;
        let opened = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .and_then(|file| {
                let id = file_id(&file.metadata()?);
                Ok((file, id))
            });
        match opened {
            Ok(open) => {
                self.open = Some(open);
                Ok(())
            }
            Err(e) => Err(io::Error::new(
                e.kind(),
                format!("cannot open {} again: {e}", self.path.display()),
            )),
        }
    }

    /// Writes `line` to the file the path names: opened again first when it is not the
    /// one open (moved or deleted), or when none is.
    fn write(&mut self, line: &[u8]) -> io::Result<()> {
        let at_path = std::fs::metadata(&self.path).map(|m| file_id(&m));
        let moved = match (&self.open, &at_path) {
            (Some((_, Some(open))), Ok(Some(at_path))) => open != at_path,
            (Some(_), Ok(_)) | (None, _) => false,
            (Some(_), Err(_)) => true,
        };
        if moved || self.open.is_none() {
            self.reopen()?;
            if moved {
                log(format_args!(
                    "audit log {}: the path names another file or none (moved or deleted, as \
                     logrotate does): opened again; the lines before stay in the file moved",
                    self.path.display()
                ));
            }
        }
        match &mut self.open {
            Some((file, _)) => file.write_all(line),
            None => Err(io::Error::other("no audit file open")),
        }
    }
}

/// One JSON line per decision, handed to a writer thread through a queue bounded in bytes.
/// Lines from several connections never interleave: one thread writes them, one `write`
/// each.
pub struct Audit {
    lines: Sender<Message>,
    queue: Arc<Queue>,
    /// The bytes each client address has queued, shared by its connections.
    by_address: std::sync::Mutex<Addresses>,
}

/// The share counters of the client addresses with a connection open.
#[derive(Default)]
struct Addresses {
    counters: std::collections::HashMap<IpAddr, std::sync::Weak<AtomicUsize>>,
    /// Entries of closed connections are dropped when the map reaches this many.
    prune_at: usize,
}

impl Addresses {
    /// The counter of `address`'s share, shared with its connections open.
    fn counter(&mut self, address: IpAddr) -> Arc<AtomicUsize> {
        let key = share_key(address);
        if let Some(counter) = self.counters.get(&key).and_then(std::sync::Weak::upgrade) {
            return counter;
        }
        if self.counters.len() >= self.prune_at {
            // Amortised: the map is at most twice the addresses with a connection open.
            self.counters.retain(|_, c| c.strong_count() > 0);
            self.prune_at = (2 * self.counters.len()).max(64);
        }
        let counter = Arc::new(AtomicUsize::new(0));
        self.counters.insert(key, Arc::downgrade(&counter));
        counter
    }
}

/// The address whose share a client's connections draw on: an IPv4 address itself, an IPv6
/// address's /64 (IPv4-mapped ones as IPv4).
fn share_key(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

/// What the queue holds, shared by whoever queues lines and the writer thread.
struct Queue {
    /// Bytes of lines queued and not yet written, at most.
    bound: usize,
    /// Bytes one connection may have queued before its next decision waits
    /// ([`connection_share`]).
    share: usize,
    /// Bytes of lines queued and not yet written.
    bytes: AtomicUsize,
    /// The last write failed (or the file could not be opened again).
    failing: AtomicBool,
    /// Told after each line written, and when `failing` changes: what a connection waiting
    /// for room in its share waits on ([`AuditConnection::ready`]).
    changed: tokio::sync::Notify,
    metrics: AuditMetrics,
    /// The guard's buffer budget, which every line queued takes its bytes from too, once
    /// the guard is started with this log ([`Audit::count_in`]).
    budget: OnceLock<crate::budget::Budget>,
}

impl Queue {
    fn set_failing(&self, failing: bool) {
        if self.failing.swap(failing, Ordering::Relaxed) != failing {
            self.changed.notify_waiters();
        }
    }
}

/// The audit log's metrics, kept by the writer and by whoever queues lines.
#[derive(Clone, Debug, Default)]
pub struct AuditMetrics {
    /// Lines queued and not yet written.
    pub queued_lines: Gauge,
    /// Bytes of those lines (their allocations).
    pub queued_bytes: Gauge,
    /// Decisions under `--log-only` forwarded although they could not be audited.
    pub forwarded_unaudited: Counter,
}

/// A line queued: its text, the bytes it is counted for, and the counter of the
/// connection that queued it (if any), which the writer takes them off once it is written.
struct Queued {
    text: String,
    bytes: usize,
    conn: Option<Arc<AtomicUsize>>,
    /// The line's share of the guard's buffer budget, given back once it is written.
    _share: Option<crate::budget::Share>,
}

/// What a writer thread is handed: a line, or a request to say when every line before it
/// is written.
enum Message {
    Line(Queued),
    Drained(std::sync::mpsc::Sender<()>),
    /// Open the audit file again; the answer: whether there is a file.
    Reopen(std::sync::mpsc::Sender<io::Result<bool>>),
}

impl Message {
    /// A diagnostic line: counted against nothing.
    fn diagnostic(text: String) -> Message {
        Message::Line(Queued {
            text,
            bytes: 0,
            conn: None,
            _share: None,
        })
    }
}

/// How often a writer whose file could not be opened again tries again.
const REOPEN_RETRY: Duration = Duration::from_secs(1);

/// Hands `Drained` to a writer with `send` and waits for its answer, at most until
/// `deadline`: whether every line queued before it was written.
fn drain(
    send: impl Fn(Message) -> Result<(), TrySendError<Message>>,
    deadline: std::time::Instant,
) -> bool {
    let (done, wait) = std::sync::mpsc::channel();
    let mut message = Message::Drained(done);
    loop {
        match send(message) {
            Ok(()) => break,
            Err(TrySendError::Full(back)) if std::time::Instant::now() < deadline => {
                message = back;
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(_) => return false,
        }
    }
    let left = deadline.saturating_duration_since(std::time::Instant::now());
    wait.recv_timeout(left).is_ok()
}

/// Why a decision could not be audited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuditError {
    /// The queue is full: the writer cannot keep up or is blocked.
    Stalled,
    /// The last write failed, or the writer is gone.
    Failing,
    /// The decision's line alone is larger than a connection's share of the queue.
    TooLarge,
    /// The guard's buffer budget (`--max-buffered-bytes`), which audit lines are counted
    /// in, has no room for the line.
    NoMemory,
}

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
                "its audit line is larger than a connection's share of the audit queue \
                 (--audit-queue-bytes)"
            }
            AuditError::NoMemory => "the guard has no memory left for its audit line",
        }
    }
}

/// The connection a decision was made on.
#[derive(Clone, Copy, Debug)]
pub struct ConnInfo {
    /// The client's address.
    pub client: SocketAddr,
    /// The guard's listener the client connected to.
    pub listener: SocketAddr,
    /// The address the client reached the guard on (the listener's, unless it listens on
    /// an unspecified address such as 0.0.0.0).
    pub local: SocketAddr,
    /// The broker behind that listener.
    pub upstream: SocketAddr,
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

/// The smallest share of the queue a connection has ([`connection_share`]).
pub const MIN_CONNECTION_SHARE: usize = 1 << 20;

/// Whether the rules that decide for `principal` under `policy` are `--log-only`: the
/// principal's own rules if it has some, else the policy's.
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
        let bound = bound.max(1);
        let (lines, rx) = channel();
        let queue = Arc::new(Queue {
            bound,
            share: connection_share(bound),
            bytes: AtomicUsize::new(0),
            failing: AtomicBool::new(false),
            changed: tokio::sync::Notify::new(),
            metrics: AuditMetrics::default(),
            budget: OnceLock::new(),
        });
        let writer = queue.clone();
        std::thread::Builder::new()
            .name("audit-writer".into())
            .spawn(move || write_lines(sink, &rx, &writer))?;
        Ok(Audit {
            lines,
            queue,
            by_address: std::sync::Mutex::default(),
        })
    }

    /// Counts every line queued from now on in `budget` as well (the guard's
    /// `--max-buffered-bytes`): a line the budget has no room for is refused
    /// ([`AuditError::NoMemory`]). Once: a second budget is ignored.
    pub(crate) fn count_in(&self, budget: &crate::budget::Budget) {
        let _ = self.queue.budget.set(budget.clone());
    }

    /// The audit log's metrics (its queue's depth, kept by the writer).
    pub fn metrics(&self) -> AuditMetrics {
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
    pub fn connection(&self, client: IpAddr) -> AuditConnection<'_> {
        let queued = match self.by_address.lock() {
            Ok(mut addresses) => addresses.counter(client),
            // A panic while the map was held: this connection gets a share of its own.
            Err(_) => Arc::new(AtomicUsize::new(0)),
        };
        AuditConnection {
            audit: self,
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
        drain(
            |message| self.send(message),
            std::time::Instant::now() + timeout,
        )
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

    /// Hands the line for one decision to the writer; an error when it cannot be audited
    /// (the caller then refuses the election, and nothing is written for it). Counted
    /// against no connection's share: see [`Audit::connection`].
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
        let line = record
            .line_within(self.queue.share)
            .ok_or(AuditError::TooLarge)?;
        self.record_line(line)
    }

    /// Hands one line (JSON, newline included) to the writer, as [`Audit::record`] does.
    pub fn record_line(&self, line: String) -> Result<(), AuditError> {
        self.queue_line(line, None)
    }

    /// Queues `line`, counted against the queue's bound and `conn`'s share: refused when
    /// the log is failing, when the line alone is larger than a share, when `conn`'s share
    /// is full, or when the queue has no room for it (stalled).
    fn queue_line(
        &self,
        mut line: String,
        conn: Option<&Arc<AtomicUsize>>,
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
        };
        if self.send(Message::Line(queued)).is_err() {
            release(queue, bytes, conn.map(|c| &**c));
            return Err(AuditError::Failing);
        }
        Ok(())
    }

    /// A decision that could not be audited (`what` says which, `e` why): under
    /// `--log-only` (`log_only`), which never refuses, it is forwarded all the same:
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
                "{} -> {}: {what} forwarded unaudited under --log-only: {}; {since} \
                 decision(s) forwarded unaudited since the last such line",
                conn.client,
                conn.upstream,
                e.reason()
            ));
        }
        Ok(())
    }
}

/// Takes a line's bytes off the queue's count and its connection's.
fn release(queue: &Queue, bytes: usize, conn: Option<&AtomicUsize>) {
    if let Some(c) = conn {
        c.fetch_sub(bytes, Ordering::AcqRel);
    }
    queue.bytes.fetch_sub(bytes, Ordering::AcqRel);
    queue.metrics.queued_lines.dec();
    queue.metrics.queued_bytes.dec_by(bytes as i64);
    queue.changed.notify_waiters();
}

/// One connection's handle on the audit log ([`Audit::connection`]): the bytes of its
/// lines queued and not yet written, at most its share of the queue.
pub struct AuditConnection<'a> {
    audit: &'a Audit,
    queued: Arc<AtomicUsize>,
}

impl AuditConnection<'_> {
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
        let line = record
            .line_within(self.audit.queue.share)
            .ok_or(AuditError::TooLarge)?;
        self.record_line(line)
    }

    /// [`Audit::record_line`], counted against this connection's share.
    pub fn record_line(&self, line: String) -> Result<(), AuditError> {
        self.audit.queue_line(line, Some(&self.queued))
    }
}

/// The writer thread: one `write` per line. A line whose write fails is tried again every
/// second until it is written; meanwhile the log is failing and no decision is let through.
/// A file that could not be opened again is tried every second too, lines or not.
fn write_lines(mut sink: AuditSink, lines: &Receiver<Message>, queue: &Queue) {
    loop {
        let message = if sink.broken() {
            match lines.recv_timeout(REOPEN_RETRY) {
                Ok(message) => message,
                Err(RecvTimeoutError::Timeout) => {
                    if let AuditSink::File(file) = &mut sink {
                        if file.reopen().is_ok() {
                            queue.set_failing(false);
                            log(format_args!(
                                "audit log {} opened again: elections are audited again",
                                file.path.display()
                            ));
                        }
                    }
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => return,
            }
        } else {
            match lines.recv() {
                Ok(message) => message,
                Err(_) => return,
            }
        };
        let line = match message {
            Message::Line(line) => line,
            Message::Drained(done) => {
                let _ = done.send(());
                continue;
            }
            Message::Reopen(done) => {
                let reopened = match &mut sink {
                    AuditSink::File(file) => match file.reopen() {
                        Ok(()) => {
                            queue.set_failing(false);
                            Ok(true)
                        }
                        // The caller says it (its error), once.
                        Err(e) => {
                            queue.set_failing(true);
                            Err(e)
                        }
                    },
                    _ => Ok(false),
                };
                let _ = done.send(reopened);
                continue;
            }
        };
        loop {
            let text = line.text.as_bytes();
            let written = match &mut sink {
                AuditSink::Stdout => {
                    let mut out = io::stdout().lock();
                    out.write_all(text).and_then(|()| out.flush())
                }
                AuditSink::Stderr => io::stderr().lock().write_all(text),
                AuditSink::File(f) => f.write(text),
                AuditSink::Writer(w) => w.write_all(text).and_then(|()| w.flush()),
            };
            match written {
                Ok(()) => {
                    queue.set_failing(false);
                    release(queue, line.bytes, line.conn.as_deref());
                    break;
                }
                Err(e) => {
                    if !queue.failing.load(Ordering::Relaxed) {
                        log(format_args!(
                            "cannot write the audit log: {e}; elections are refused until it \
                             can be written"
                        ));
                    }
                    queue.set_failing(true);
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
        }
    }
}

/// A name as the tool's JSON writes it: a string when it is UTF-8, else `{"hex": ...}`,
/// so that two different names never look the same.
pub(crate) struct Name<'a>(pub(crate) &'a [u8]);

impl Serialize for Name<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(self.0) {
            Ok(text) => s.serialize_str(text),
            Err(_) => {
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry("hex", &Hex(self.0))?;
                map.end()
            }
        }
    }
}

/// Bytes as lowercase hex digits, written as they are serialized.
struct Hex<'a>(&'a [u8]);

impl Serialize for Hex<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl std::fmt::Display for Hex<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

/// The topics and partitions of a request, or of those the decision refuses: `null` for
/// "every partition" (a null topic list), else `[{"topic", "partitions"}]`, read from the
/// request's bytes as they are written.
struct Topics<'a, 'r> {
    request: &'a ElectLeadersRequest<'r>,
    refused_only: Option<(&'a Policy, &'a Decision)>,
}

impl Serialize for Topics<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Some(list) = self.request.topic_partitions() else {
            return s.serialize_none();
        };
        s.collect_seq(
            list.iter()
                .filter(|t| {
                    self.refused_only
                        .is_none_or(|(policy, decision)| decision.refuses_topic(policy, t.topic()))
                })
                .map(|t| Topic {
                    topic: Name(t.topic()),
                    partitions: Partitions(t.partitions()),
                }),
        )
    }
}

#[derive(serde::Serialize)]
struct Topic<'a, P> {
    topic: Name<'a>,
    partitions: P,
}

/// A topic's partition indexes, read from the request as they are written.
struct Partitions<L>(L);

impl<L> Serialize for Partitions<L>
where
    L: IntoIterator<Item = i32> + Copy,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0)
    }
}

/// The names of a decision's rules, in their fixed order.
pub(crate) struct RuleList(pub(crate) crate::policy::Rules);

impl Serialize for RuleList {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|r| r.name()))
    }
}

/// A value written with its `Display`.
pub(crate) struct Shown<T>(pub(crate) T);

impl<T: std::fmt::Display> Serialize for Shown<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

/// The audit record of one decision, serialized straight from the request and the decision
/// (nothing is copied into an intermediate JSON value). Its keys, in order: `time`,
/// `listener`, `client`, `upstream`, `client_id`, `principal`, `principal_rules` (when a
/// principal's own rules decided), `correlation_id`, `version`, `election_type` (its name,
/// or the number when it has none), `partitions` (`null` for every partition),
/// `partition_count`, `verdict`, `rules`, and for a refusal `refused`, `whole` and, for a
/// whole refusal, `message`.
pub struct DecisionRecord<'a, 'r> {
    conn: &'a ConnInfo,
    principal: Option<&'a str>,
    policy: &'a Policy,
    request: &'a ElectLeadersRequest<'r>,
    decision: &'a Decision,
}

impl<'a, 'r> DecisionRecord<'a, 'r> {
    /// The record of `decision`, taken under `policy` on `request`.
    pub fn new(
        conn: &'a ConnInfo,
        principal: Option<&'a str>,
        policy: &'a Policy,
        request: &'a ElectLeadersRequest<'r>,
        decision: &'a Decision,
    ) -> Self {
        DecisionRecord {
            conn,
            principal,
            policy,
            request,
            decision,
        }
    }

    /// The record as one line of JSON, with its newline. Characters a reader cannot see
    /// in what a client chose (bidi controls and other format characters, line and
    /// paragraph separators) are written as `\uXXXX` escapes (`Visible`): the JSON value is
    /// the same, but a line shown in a terminal or an editor reads as its bytes are.
    pub fn line(&self) -> String {
        let mut line = Vec::with_capacity(256);
        let mut json = serde_json::Serializer::with_formatter(&mut line, Visible);
        // Writing into a Vec cannot fail, nor can any of the record's values.
        if self.serialize(&mut json).is_err() {
            line.clear();
        }
        line.push(b'\n');
        // serde_json writes UTF-8 only.
        String::from_utf8(line).unwrap_or_default()
    }

    /// [`DecisionRecord::line`], or None as soon as it grows past `limit` bytes: a line
    /// too large to be queued is never written out whole (a request of the largest frame
    /// size would make a line of several times its size).
    pub fn line_within(&self, limit: usize) -> Option<String> {
        let mut line = Capped {
            bytes: Vec::with_capacity(256.min(limit)),
            limit,
        };
        let mut json = serde_json::Serializer::with_formatter(&mut line, Visible);
        self.serialize(&mut json).ok()?;
        io::Write::write_all(&mut line, b"\n").ok()?;
        String::from_utf8(line.bytes).ok()
    }
}

/// A buffer that refuses to grow past `limit` bytes.
struct Capped {
    bytes: Vec<u8>,
    limit: usize,
}

impl io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.bytes.len().saturating_add(buf.len()) > self.limit {
            return Err(io::Error::other("past the limit"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Serialize for DecisionRecord<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (request, decision) = (self.request, self.decision);
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("time", &rfc3339_now())?;
        map.serialize_entry("listener", &Shown(self.conn.listener))?;
        map.serialize_entry("client", &Shown(self.conn.client))?;
        map.serialize_entry("upstream", &Shown(self.conn.upstream))?;
        map.serialize_entry("client_id", &request.header().client_id().map(Name))?;
        map.serialize_entry("principal", &self.principal)?;
        if let Some(name) = decision.rules_of() {
            map.serialize_entry("principal_rules", name)?;
        }
        map.serialize_entry("correlation_id", &request.correlation_id())?;
        map.serialize_entry("version", &request.version())?;
        let election_type = request.election_type();
        match election_type.name() {
            Some(name) => map.serialize_entry("election_type", name)?,
            None => map.serialize_entry("election_type", &election_type.0)?,
        }
        let all = Topics {
            request,
            refused_only: None,
        };
        map.serialize_entry("partitions", &all)?;
        map.serialize_entry("partition_count", &decision.requested)?;
        map.serialize_entry("verdict", decision.verdict.name())?;
        map.serialize_entry("rules", &RuleList(decision.rules))?;
        let refused = Topics {
            request,
            refused_only: Some((self.policy, decision)),
        };
        match &decision.refusal {
            crate::policy::Refusal::Nothing => {}
            crate::policy::Refusal::Whole { message } => {
                map.serialize_entry("refused", &refused)?;
                map.serialize_entry("whole", &true)?;
                map.serialize_entry("message", message)?;
            }
            crate::policy::Refusal::Partitions { .. } => {
                map.serialize_entry("refused", &refused)?;
                map.serialize_entry("whole", &false)?;
            }
        }
        map.end()
    }
}

/// Diagnostic lines waiting for stderr, at most; past it they are dropped and counted.
const LOG_QUEUE: usize = 1024;

struct Diagnostics {
    lines: SyncSender<Message>,
    dropped: Arc<AtomicU64>,
}

/// A diagnostic line on stderr: `elect-leaders proxy: TIME MESSAGE`. Never blocks: a thread
/// of its own writes stderr; when it cannot keep up, lines are dropped, and the next line it
/// writes says how many.
pub fn log(message: std::fmt::Arguments<'_>) {
    let message = message.to_string();
    let line = format!(
        "elect-leaders proxy: {} {}\n",
        rfc3339_now(),
        one_line(&message)
    );
    match diagnostics() {
        Some(d) => {
            if d.lines.try_send(Message::diagnostic(line)).is_err() {
                d.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
        // No thread could be started: write here rather than lose the line.
        None => {
            let _ = io::stderr().lock().write_all(line.as_bytes());
        }
    }
}

/// A diagnostic as one line: control characters (a newline, a carriage return, an escape
/// sequence) shown escaped (`\n`, `\u{1b}`), and so are the characters a reader cannot see
/// ([`is_hidden`]: bidi controls such as U+202E, which would show the rest of a line right
/// to left, and other format characters, line and paragraph separators), as `\u{202e}`.
/// Some lines quote what a peer sent (a broker's advertised host name): without this, a
/// broker could write lines of its own into the guard's log, or make one read otherwise
/// than its bytes.
fn one_line(message: &str) -> std::borrow::Cow<'_, str> {
    if !message.chars().any(|c| c.is_control() || is_hidden(c)) {
        return std::borrow::Cow::Borrowed(message);
    }
    let mut out = String::with_capacity(message.len() + 8);
    for c in message.chars() {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else if is_hidden(c) {
            let _ = std::fmt::Write::write_fmt(&mut out, format_args!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Whether `c` is a character a reader does not see but that changes how text around it
/// reads: Unicode's format characters (general category Cf, as of Unicode 15.1: the bidi
/// controls U+061C, U+200E, U+200F, U+202A to U+202E and U+2066 to U+2069, zero-width
/// characters, the byte order mark, tag characters...) and the line and paragraph
/// separators U+2028 and U+2029. Control characters (Cc) are not among them: they are
/// escaped everywhere already.
pub(crate) fn is_hidden(c: char) -> bool {
    /// General category Cf (Unicode 15.1), then Zl and Zp.
    const HIDDEN: &[(u32, u32)] = &[
        (0x00AD, 0x00AD),
        (0x0600, 0x0605),
        (0x061C, 0x061C),
        (0x06DD, 0x06DD),
        (0x070F, 0x070F),
        (0x0890, 0x0891),
        (0x08E2, 0x08E2),
        (0x180E, 0x180E),
        (0x200B, 0x200F),
        (0x2028, 0x202E),
        (0x2060, 0x2064),
        (0x2066, 0x206F),
        (0xFEFF, 0xFEFF),
        (0xFFF9, 0xFFFB),
        (0x110BD, 0x110BD),
        (0x110CD, 0x110CD),
        (0x13430, 0x1343F),
        (0x1BCA0, 0x1BCA3),
        (0x1D173, 0x1D17A),
        (0xE0001, 0xE0001),
        (0xE0020, 0xE007F),
    ];
    let c = u32::from(c);
    // Everything below U+00AD is ASCII or Latin-1: the common case, decided at once.
    c >= 0xAD
        && HIDDEN
            .binary_search_by(|&(first, last)| {
                if last < c {
                    std::cmp::Ordering::Less
                } else if first > c {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .is_ok()
}

/// serde_json's compact format, but with the characters [`is_hidden`] finds written as
/// `\uXXXX` escapes (a surrogate pair past U+FFFF), as JSON allows for any character.
/// serde_json escapes control characters itself, and writes the rest as they are.
struct Visible;

impl serde_json::ser::Formatter for Visible {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut from = 0;
        for (at, c) in fragment.char_indices() {
            if !is_hidden(c) {
                continue;
            }
            writer.write_all(&fragment.as_bytes()[from..at])?;
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                write!(writer, "\\u{unit:04x}")?;
            }
            from = at + c.len_utf8();
        }
        writer.write_all(&fragment.as_bytes()[from..])
    }
}

/// Waits until the diagnostics logged so far are on stderr, at most `timeout`: what a
/// program does before it exits, so that its last lines are not lost with the thread.
pub fn drain_log(timeout: Duration) -> bool {
    match diagnostics() {
        Some(d) => drain(
            |message| d.lines.try_send(message),
            std::time::Instant::now() + timeout,
        ),
        None => true,
    }
}

fn diagnostics() -> Option<&'static Diagnostics> {
    static DIAGNOSTICS: OnceLock<Option<Diagnostics>> = OnceLock::new();
    DIAGNOSTICS
        .get_or_init(|| {
            let (lines, rx) = sync_channel::<Message>(LOG_QUEUE);
            let dropped = Arc::new(AtomicU64::new(0));
            let counter = dropped.clone();
            std::thread::Builder::new()
                .name("diagnostics".into())
                .spawn(move || {
                    for message in rx {
                        let line = match message {
                            Message::Line(line) => line.text,
                            Message::Drained(done) => {
                                let _ = done.send(());
                                continue;
                            }
                            Message::Reopen(done) => {
                                let _ = done.send(Ok(false));
                                continue;
                            }
                        };
                        let lost = counter.swap(0, Ordering::Relaxed);
                        let mut err = io::stderr().lock();
                        if lost > 0 {
                            let _ = writeln!(
                                err,
                                "elect-leaders proxy: {} {lost} diagnostic line(s) dropped: \
                                 stderr was not keeping up",
                                rfc3339_now()
                            );
                        }
                        let _ = err.write_all(line.as_bytes());
                    }
                })
                .ok()
                .map(|_| Diagnostics { lines, dropped })
        })
        .as_ref()
}

/// Now, in RFC 3339 UTC with milliseconds: `2025-01-31T23:59:59.123Z`.
pub fn rfc3339_now() -> String {
    rfc3339(SystemTime::now())
}

/// A time in RFC 3339 UTC with milliseconds, written by `humantime`. RFC 3339 has four-digit
/// years: a time before the epoch is written as `1970-01-01T00:00:00.000Z`, one past the end of
/// year 9999 as `9999-12-31T23:59:59.999Z`; nothing panics.
pub fn rfc3339(time: SystemTime) -> String {
    // 9999-12-31T23:59:59.999Z, the last instant written with milliseconds.
    const LAST: Duration = Duration::new(253_402_300_799, 999_000_000);
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let time = UNIX_EPOCH + since.min(LAST);
    humantime::format_rfc3339_millis(time).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;

    /// Issue 23, finding 7: a name that is not UTF-8 was written with U+FFFD in its place,
    /// so two different names could look the same in the audit log.
    #[test]
    fn names_that_are_not_utf8_are_written_losslessly() {
        let text = |name: &[u8]| serde_json::to_string(&Name(name)).unwrap();
        assert_eq!(text(b"payments"), r#""payments""#);
        assert_eq!(text(b"pay\xffments"), r#"{"hex":"706179ff6d656e7473"}"#);
        assert_ne!(text(b"pay\xffments"), text(b"pay\xfements"));
    }

    /// The whole record of a partial refusal, read back as JSON: every key with its value,
    /// the names as the tool writes them, only the protected topic under `refused`.
    #[test]
    fn a_decision_record_reads_back_as_the_decision() {
        use kafka_elect_leaders::{
            parse_request, ElectLeadersRequestData, ElectionType, EncodeRequestExt,
            TopicPartitionsData,
        };
        const VERSION: i16 = 2;
        let (orders, bad) = ([0, 5, -1], [7]);
        let topics = [
            TopicPartitionsData::new(b"orders", &orders),
            TopicPartitionsData::new(b"pay\xffments", &bad),
        ];
        let frame = ElectLeadersRequestData {
            correlation_id: 41,
            client_id: Some(b"ops\xfe"),
            election_type: ElectionType::PREFERRED,
            topic_partitions: Some(&topics),
            ..Default::default()
        }
        .encode_to_vec(VERSION)
        .unwrap();
        let request = parse_request(&frame).unwrap();
        let policy = Policy {
            protected_topics: [b"pay\xffments".to_vec().into_boxed_slice()].into(),
            ..Default::default()
        };
        let decision = policy.decide(&request);
        let conn = ConnInfo {
            client: "127.0.0.1:5000".parse().unwrap(),
            listener: "127.0.0.1:19092".parse().unwrap(),
            local: "127.0.0.1:19092".parse().unwrap(),
            upstream: "10.0.0.2:9092".parse().unwrap(),
        };
        let line = DecisionRecord::new(&conn, Some("alice"), &policy, &request, &decision).line();
        assert!(
            line.ends_with('\n') && line.matches('\n').count() == 1,
            "{line:?}"
        );
        let mut got: serde_json::Value = serde_json::from_str(&line).unwrap();
        let time = got.as_object_mut().unwrap().remove("time").unwrap();
        assert!(time.as_str().unwrap().ends_with('Z'), "{time}");
        let pay = serde_json::json!({"hex": "706179ff6d656e7473"});
        assert_eq!(
            got,
            serde_json::json!({
                "listener": "127.0.0.1:19092",
                "client": "127.0.0.1:5000",
                "upstream": "10.0.0.2:9092",
                "client_id": {"hex": "6f7073fe"},
                "principal": "alice",
                "correlation_id": 41,
                "version": VERSION,
                "election_type": "PREFERRED",
                "partitions": [
                    {"topic": "orders", "partitions": [0, 5, -1]},
                    {"topic": pay.clone(), "partitions": [7]},
                ],
                "partition_count": 4,
                "verdict": decision.verdict.name(),
                "rules": ["protect-topic"],
                "refused": [{"topic": pay, "partitions": [7]}],
                "whole": false,
            })
        );
    }

    /// A line past its limit is given up as it is written, not made whole first: the line
    /// of a request of the largest frame size would be several times that size. Within
    /// the limit it is the line, byte for byte.
    #[test]
    fn a_line_past_its_limit_is_given_up() {
        use kafka_elect_leaders::{
            parse_request, ElectLeadersRequestData, ElectionType, EncodeRequestExt,
            TopicPartitionsData,
        };
        let partitions: Vec<i32> = (0..3000).collect();
        let topics = [TopicPartitionsData::new(b"orders", &partitions)];
        let frame = ElectLeadersRequestData {
            correlation_id: 1,
            election_type: ElectionType::PREFERRED,
            topic_partitions: Some(&topics),
            ..Default::default()
        }
        .encode_to_vec(2)
        .unwrap();
        let request = parse_request(&frame).unwrap();
        let policy = Policy::default();
        let decision = policy.decide(&request);
        let conn = ConnInfo {
            client: "127.0.0.1:5000".parse().unwrap(),
            listener: "127.0.0.1:19092".parse().unwrap(),
            local: "127.0.0.1:19092".parse().unwrap(),
            upstream: "10.0.0.2:9092".parse().unwrap(),
        };
        let record = DecisionRecord::new(&conn, None, &policy, &request, &decision);
        let line = record.line();
        let within = record.line_within(line.len()).unwrap();
        // The time may have moved on between the two: the rest is the same.
        assert_eq!(within.len(), line.len());
        let after_time = |l: &str| l[l.find("\"listener\"").unwrap()..].to_owned();
        assert_eq!(after_time(&within), after_time(&line));
        assert_eq!(record.line_within(line.len() - 1), None);
        assert_eq!(record.line_within(100), None);
    }

    /// Bidi controls and other characters a reader cannot see, in what a peer sent, are
    /// shown as escapes in a diagnostic: a host name with U+202E cannot make the rest of
    /// the line read right to left ("...9092 left as it is" shown as something else).
    #[test]
    fn a_diagnostic_shows_the_characters_a_reader_cannot_see() {
        let host = "b1\u{202e}si ti sa tfel\u{2066}\u{2069}\u{200e}\u{200f}\u{61c}\u{202a}\
                    \u{feff}\u{200b}\u{2028}\u{2029}\u{e0041}x";
        let message = format!("broker {host}:9092 left as it is");
        let shown = one_line(&message);
        assert_eq!(
            shown,
            "broker b1\\u{202e}si ti sa tfel\\u{2066}\\u{2069}\\u{200e}\\u{200f}\\u{61c}\
             \\u{202a}\\u{feff}\\u{200b}\\u{2028}\\u{2029}\\u{e0041}x:9092 left as it is"
        );
        assert!(!shown.chars().any(|c| c.is_control() || is_hidden(c)));
        for c in ['a', 'é', '中', 'ש', '🚀', '\u{ad}'] {
            assert_eq!(is_hidden(c), c == '\u{ad}', "{c:?}");
        }
    }

    /// The audit line of a request whose client id and principal carry bidi controls:
    /// they are written as JSON escapes, so that the line shows as its bytes are, and
    /// read back as what the client sent.
    #[test]
    fn an_audit_line_escapes_the_characters_a_reader_cannot_see() {
        use kafka_elect_leaders::{
            parse_request, ElectLeadersRequestData, ElectionType, EncodeRequestExt,
            TopicPartitionsData,
        };
        let client_id = "ops\u{202e}nimda\u{2066}";
        let topic = "pay\u{200f}ments\u{1d173}";
        let topics = [TopicPartitionsData::new(topic.as_bytes(), &[0])];
        let frame = ElectLeadersRequestData {
            correlation_id: 1,
            client_id: Some(client_id.as_bytes()),
            election_type: ElectionType::PREFERRED,
            topic_partitions: Some(&topics),
            ..Default::default()
        }
        .encode_to_vec(2)
        .unwrap();
        let request = parse_request(&frame).unwrap();
        let policy = Policy::default();
        let decision = policy.decide(&request);
        let conn = ConnInfo {
            client: "127.0.0.1:5000".parse().unwrap(),
            listener: "127.0.0.1:19092".parse().unwrap(),
            local: "127.0.0.1:19092".parse().unwrap(),
            upstream: "10.0.0.2:9092".parse().unwrap(),
        };
        let principal = "CN=al\u{2067}ice";
        let line = DecisionRecord::new(&conn, Some(principal), &policy, &request, &decision).line();
        assert!(
            !line.chars().any(is_hidden),
            "a hidden character written as it is: {line:?}"
        );
        assert!(
            line.contains(r#""client_id":"ops\u202enimda\u2066""#),
            "{line}"
        );
        assert!(
            line.contains(r#""topic":"pay\u200fments\ud834\udd73""#),
            "{line}"
        );
        let got: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(got["client_id"], client_id);
        assert_eq!(got["principal"], principal);
        assert_eq!(got["partitions"][0]["topic"], topic);
    }

    #[test]
    fn rfc3339_dates() {
        let at =
            |secs: u64, millis: u32| rfc3339(UNIX_EPOCH + Duration::new(secs, millis * 1_000_000));
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(at(1_767_225_599, 999), "2025-12-31T23:59:59.999Z");
        assert_eq!(at(4_107_542_400, 0), "2100-03-01T00:00:00.000Z");
        // Milliseconds are cut, not rounded.
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::new(1_738_367_999, 123_999_999)),
            "2025-01-31T23:59:59.123Z"
        );
        // The limits: no panic, the nearest instant RFC 3339 can write.
        assert_eq!(at(u64::from(u32::MAX), 0), "2106-02-07T06:28:15.000Z");
        assert_eq!(at(253_402_300_799, 999), "9999-12-31T23:59:59.999Z");
        if let Some(far) = UNIX_EPOCH.checked_add(Duration::from_secs(1 << 40)) {
            assert_eq!(rfc3339(far), "9999-12-31T23:59:59.999Z");
        }
        if let Some(before) = UNIX_EPOCH.checked_sub(Duration::from_secs(86_400)) {
            assert_eq!(rfc3339(before), "1970-01-01T00:00:00.000Z");
        }
    }

    /// A writer that takes 20 ms a line and counts them; or, gated, none until let go.
    struct Slow(
        Arc<std::sync::Mutex<usize>>,
        Option<std::sync::mpsc::Receiver<()>>,
    );

    impl Write for Slow {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if let Some(gate) = &self.1 {
                let _ = gate.recv();
            }
            std::thread::sleep(Duration::from_millis(20));
            *self.0.lock().unwrap() += buf.iter().filter(|&&b| b == b'\n').count();
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn queue_lines(audit: &Audit, n: usize) {
        for i in 0..n {
            audit.record_line(format!("{{\"line\":{i}}}\n")).unwrap();
        }
    }

    #[test]
    fn drain_waits_for_every_line_queued() {
        let written = Arc::new(std::sync::Mutex::new(0));
        let audit = Audit::start(
            AuditSink::Writer(Box::new(Slow(written.clone(), None))),
            4096,
        )
        .unwrap();
        queue_lines(&audit, 10);
        assert!(audit.drain(Duration::from_secs(10)));
        assert_eq!(
            *written.lock().unwrap(),
            10,
            "drained before the lines were written"
        );
    }

    #[test]
    fn drain_gives_up_on_a_stalled_log() {
        let written = Arc::new(std::sync::Mutex::new(0));
        let (open, gate) = std::sync::mpsc::channel();
        let sink = AuditSink::Writer(Box::new(Slow(written.clone(), Some(gate))));
        let audit = Audit::start(sink, 4096).unwrap();
        queue_lines(&audit, 4);
        let started = std::time::Instant::now();
        assert!(!audit.drain(Duration::from_millis(300)));
        assert!(started.elapsed() < Duration::from_secs(5));
        drop(open);
    }

    /// Issue 35, finding 5: the queue was bounded in lines and shared by all. Now a
    /// connection whose own lines fill its share waits (on the runtime) until they are
    /// written, while another connection's lines are still queued; a line larger than a
    /// share is refused; the bytes queued never pass the bound, and are given back once
    /// written.
    #[tokio::test]
    async fn a_connection_past_its_share_waits_for_its_own_lines_and_no_one_else_does() {
        let written = Arc::new(std::sync::Mutex::new(0));
        let (open, gate) = std::sync::mpsc::channel::<()>();
        let sink = AuditSink::Writer(Box::new(Slow(written.clone(), Some(gate))));
        let bound = 8 << 20;
        let audit = Audit::start(sink, bound).unwrap();
        assert_eq!(audit.queue.share, 1 << 20);
        let line = |n: usize| format!("{}\n", "x".repeat(n - 1));
        let flooder = audit.connection(FLOODER);
        let mut lines = 0;
        while flooder.queued.load(Ordering::Relaxed) < audit.queue.share {
            flooder.record_line(line(300_000)).unwrap();
            lines += 1;
        }
        assert_eq!(
            lines, 4,
            "the line that crosses the share is taken, no more"
        );
        assert_eq!(
            flooder.record_line(line(1000)),
            Err(AuditError::Stalled),
            "past its share without waiting"
        );
        assert!(
            flooder.ready().now_or_never().is_none(),
            "ready while its share is full"
        );
        let other = audit.connection("192.0.2.2".parse().unwrap());
        assert!(other.ready().now_or_never().is_some());
        other.record_line(line(300_000)).unwrap();
        assert_eq!(
            other.record_line(line((1 << 20) + 1)),
            Err(AuditError::TooLarge)
        );
        assert!(audit.queued_bytes() <= bound);
        assert_eq!(audit.queued_bytes(), 5 * 300_000);
        assert_eq!(audit.metrics().queued_bytes.get(), 5 * 300_000);
        // The log writes: the flooder's wait ends, on the runtime.
        drop(open);
        tokio::time::timeout(Duration::from_secs(30), flooder.ready())
            .await
            .expect("the wait ends once its lines are written");
        assert!(audit.drain(Duration::from_secs(30)));
        assert_eq!(*written.lock().unwrap(), 5);
        assert_eq!(audit.queued_bytes(), 0);
        assert_eq!(audit.metrics().queued_bytes.get(), 0);
        assert_eq!(audit.metrics().queued_lines.get(), 0);
    }

    const FLOODER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));

    /// Issue 35, finding 5: the share was a connection's, so one client with eight
    /// connections filled the queue and everyone's elections were refused. Now every
    /// connection from one address (an IPv6 client's /64) draws on one share, and another
    /// address keeps its own.
    #[tokio::test]
    async fn connections_from_one_address_share_one_share() {
        let (open, gate) = std::sync::mpsc::channel::<()>();
        let sink = AuditSink::Writer(Box::new(Slow(Default::default(), Some(gate))));
        let audit = Audit::start(sink, 8 << 20).unwrap();
        let line = || format!("{}\n", "x".repeat(299_999));
        for (first, second) in [
            ("192.0.2.1", "192.0.2.1"),
            ("2001:db8:0:1::1", "2001:db8:0:1:ffff::2"),
            ("198.51.100.7", "::ffff:198.51.100.7"),
        ] {
            let first = audit.connection(first.parse().unwrap());
            while first.queued.load(Ordering::Relaxed) < audit.queue.share {
                first.record_line(line()).unwrap();
            }
            let second = audit.connection(second.parse().unwrap());
            assert_eq!(second.record_line(line()), Err(AuditError::Stalled));
            assert!(second.ready().now_or_never().is_none());
        }
        // Another /64, another address: a share of their own.
        for other in ["2001:db8:0:2::1", "192.0.2.2"] {
            let other = audit.connection(other.parse().unwrap());
            assert_eq!(other.record_line(line()), Ok(()));
        }
        assert!(audit.queued_bytes() <= 8 << 20);
        drop(open);
    }

    /// Issue 35, finding 5: audit lines were held outside `--max-buffered-bytes`. Now each
    /// line queued takes its bytes from the guard's budget until written, and a line the
    /// budget has no room for is refused (the election with it), never held beyond it.
    #[tokio::test]
    async fn audit_lines_are_counted_in_the_buffer_budget() {
        let (open, gate) = std::sync::mpsc::channel::<()>();
        let written = Arc::new(std::sync::Mutex::new(0));
        let sink = AuditSink::Writer(Box::new(Slow(written.clone(), Some(gate))));
        let audit = Audit::start(sink, 8 << 20).unwrap();
        // 1 MiB for frames' remainders, about 1 MiB for everything else.
        let budget = crate::budget::Budget::new(2 << 20, 1 << 20);
        audit.count_in(&budget);
        let before = budget.available();
        let line = || format!("{}\n", "x".repeat(299_999));
        let conn = audit.connection(FLOODER);
        for _ in 0..3 {
            conn.record_line(line()).unwrap();
        }
        assert_eq!(budget.available(), before - 3 * 300_000);
        let other = audit.connection("192.0.2.2".parse().unwrap());
        assert_eq!(other.record_line(line()), Err(AuditError::NoMemory));
        assert_eq!(
            audit.queued_bytes(),
            3 * 300_000,
            "the refused line is not queued"
        );
        drop(open);
        assert!(audit.drain(Duration::from_secs(30)));
        assert_eq!(
            budget.available(),
            before,
            "written lines give their share back"
        );
        assert_eq!(other.record_line(line()), Ok(()));
    }

    /// The map of addresses keeps no more than about twice the addresses with a connection
    /// open.
    #[test]
    fn closed_connections_leave_the_map_of_addresses() {
        let audit = Audit::start(AuditSink::Writer(Box::new(io::sink())), 1 << 20).unwrap();
        let kept = audit.connection(FLOODER);
        for n in 0..10_000u32 {
            drop(audit.connection(IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + n))));
        }
        let size = audit.by_address.lock().unwrap().counters.len();
        assert!(size <= 130, "{size} entries for one connection open");
        assert!(Arc::ptr_eq(&kept.queued, &audit.connection(FLOODER).queued));
    }

    /// A connection waiting for its share while the log writes nothing at all (stopped)
    /// is not held for ever: after [`STALLED_AFTER`] its wait ends and its next line is
    /// refused as stalled, so that the client is answered rather than left to time out.
    #[tokio::test]
    async fn a_wait_on_a_stopped_log_ends_in_a_refusal() {
        let written = Arc::new(std::sync::Mutex::new(0));
        let (open, gate) = std::sync::mpsc::channel::<()>();
        let sink = AuditSink::Writer(Box::new(Slow(written.clone(), Some(gate))));
        let audit = Audit::start(sink, 8 << 20).unwrap();
        let flooder = audit.connection(FLOODER);
        while flooder.queued.load(Ordering::Relaxed) < audit.queue.share {
            flooder
                .record_line(format!("{}\n", "x".repeat(299_999)))
                .unwrap();
        }
        tokio::time::timeout(Duration::from_secs(60), flooder.ready())
            .await
            .expect("the wait ends while nothing is written");
        assert_eq!(*written.lock().unwrap(), 0);
        assert_eq!(flooder.record_line("{}\n".into()), Err(AuditError::Stalled));
        drop(open);
    }

    /// A directory of its own for one test, removed when dropped.
    struct Dir(PathBuf);

    impl Dir {
        fn new(name: &str) -> Dir {
            let dir = std::env::temp_dir().join(format!("kel-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Dir(dir)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap_or_default()
    }

    /// Issue 35, finding 6: the audit file was never opened again, so after logrotate
    /// moved it (its default `create` mode) every line went to the file moved, and after
    /// a delete to a file no one can read. Now the next line goes to a new file at the
    /// path; the lines before stay where they were.
    #[test]
    fn a_file_moved_or_deleted_is_opened_again_at_its_path() {
        let dir = Dir::new("audit-moved");
        let path = dir.0.join("audit.jsonl");
        let audit = Audit::start(AuditSink::open(&path).unwrap(), 4096).unwrap();
        queue_lines(&audit, 1);
        assert!(audit.drain(Duration::from_secs(10)));
        std::fs::rename(&path, dir.0.join("audit.jsonl.1")).unwrap();
        queue_lines(&audit, 2);
        assert!(audit.drain(Duration::from_secs(10)));
        assert_eq!(read(&dir.0.join("audit.jsonl.1")), "{\"line\":0}\n");
        assert_eq!(read(&path), "{\"line\":0}\n{\"line\":1}\n");

        std::fs::remove_file(&path).unwrap();
        queue_lines(&audit, 1);
        assert!(audit.drain(Duration::from_secs(10)));
        assert_eq!(read(&path), "{\"line\":0}\n");
        assert!(!audit.queue.failing.load(Ordering::Relaxed));
    }

    /// logrotate's `copytruncate`: the file is copied, then cut to nothing in place; the
    /// next line goes at its start (appended), not after a hole where the old end was.
    #[test]
    fn a_file_truncated_in_place_is_written_from_its_start() {
        let dir = Dir::new("audit-truncated");
        let path = dir.0.join("audit.jsonl");
        let audit = Audit::start(AuditSink::open(&path).unwrap(), 4096).unwrap();
        queue_lines(&audit, 3);
        assert!(audit.drain(Duration::from_secs(10)));
        std::fs::copy(&path, dir.0.join("audit.jsonl.1")).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(0)
            .unwrap();
        queue_lines(&audit, 1);
        assert!(audit.drain(Duration::from_secs(10)));
        assert_eq!(read(&path), "{\"line\":0}\n");
        assert_eq!(read(&dir.0.join("audit.jsonl.1")).lines().count(), 3);
    }

    /// SIGHUP: opened again at once, before any line; a path that cannot be opened (its
    /// directory gone, or a directory itself) sets the log failing, so that the next
    /// decision is refused; once it can be opened again, the writer does it by itself.
    #[test]
    fn reopen_at_once_and_fail_closed_when_it_cannot() {
        let dir = Dir::new("audit-reopen");
        let logs = dir.0.join("logs");
        std::fs::create_dir_all(&logs).unwrap();
        let path = logs.join("audit.jsonl");
        let audit = Audit::start(AuditSink::open(&path).unwrap(), 4096).unwrap();
        std::fs::rename(&path, logs.join("audit.jsonl.1")).unwrap();
        assert!(audit.reopen(Duration::from_secs(10)).unwrap());
        assert!(path.exists(), "opened again before any line");

        std::fs::remove_dir_all(&logs).unwrap();
        let e = audit.reopen(Duration::from_secs(10)).unwrap_err();
        assert!(e.to_string().contains("audit.jsonl again"), "{e}");
        assert!(
            audit.queue.failing.load(Ordering::Relaxed),
            "elections refused"
        );

        // The path is now a directory: still failing, whatever is asked.
        std::fs::create_dir_all(&path).unwrap();
        assert!(audit.reopen(Duration::from_secs(10)).is_err());
        assert!(audit.queue.failing.load(Ordering::Relaxed));

        // Fixed: the writer opens it by itself (it tries every second).
        std::fs::remove_dir(&path).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while audit.queue.failing.load(Ordering::Relaxed) {
            assert!(std::time::Instant::now() < deadline, "never opened again");
            std::thread::sleep(Duration::from_millis(20));
        }
        queue_lines(&audit, 1);
        assert!(audit.drain(Duration::from_secs(10)));
        assert_eq!(read(&path), "{\"line\":0}\n");

        // Standard error is no file: nothing to open.
        let stderr = Audit::start(AuditSink::Stderr, 4096).unwrap();
        assert!(!stderr.reopen(Duration::from_secs(10)).unwrap());
    }

    /// A broker that advertises a host name with a newline and an escape sequence in it
    /// cannot write a line of its own into the log, nor colour a terminal.
    #[test]
    fn a_diagnostic_stays_one_line_whatever_a_peer_sent() {
        let host = "b1\nelect-leaders proxy: 2026-12-02T00:00:00Z forged line\r\u{1b}[31m";
        let message = format!("broker {host}:9092 left as it is");
        let shown = one_line(&message);
        assert_eq!(
            shown,
            "broker b1\\nelect-leaders proxy: 2026-12-02T00:00:00Z forged line\\r\\u{1b}[31m:9092 \
             left as it is"
        );
        assert!(!shown.chars().any(char::is_control));
        // Text without control characters, non-ASCII included, is left as it is.
        assert!(matches!(
            one_line("tópico 🚀 \"quoted\""),
            std::borrow::Cow::Borrowed("tópico 🚀 \"quoted\"")
        ));
    }
}
