//! The audit queue: what the writer thread and whoever queues lines share (the bytes
//! queued, whether the log is failing, the metrics), the messages the writer is handed, and
//! how a line's bytes are given back once written. Below both the writer ([`super::sink`])
//! and the handles that queue lines ([`super::Audit`]).

use std::io::{self};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::TrySendError;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;

use super::chain::Chain;

/// What the queue holds, shared by whoever queues lines and the writer thread.
pub(super) struct Queue {
    /// Bytes of lines queued and not yet written, at most.
    pub(super) bound: usize,
    /// Bytes one connection may have queued before its next decision waits
    /// ([`connection_share`]).
    pub(super) share: usize,
    /// Bytes of lines queued and not yet written.
    pub(super) bytes: AtomicUsize,
    /// The last write failed (or the file could not be opened again).
    pub(super) failing: AtomicBool,
    /// Told after each line written, and when `failing` changes: what a connection waiting
    /// for room in its share waits on ([`AuditConnection::ready`]).
    pub(super) changed: tokio::sync::Notify,
    pub(super) metrics: AuditMetrics,
    /// The guard's buffer budget, which every line queued takes its bytes from too, once
    /// the guard is started with this log ([`Audit::count_in`]).
    pub(super) budget: OnceLock<crate::core::budget::Budget>,
    /// The chain the writer adds to each line before writing it ([`Queue::sealed`]); none
    /// for a log started without one.
    pub(super) chain: Mutex<Option<Chain>>,
}

impl Queue {
    /// `line` with its chain fields (super::chain), the next in the chain: what the writer
    /// does to each line before its first try, so that the chain's order is the order
    /// lines are written in, and a line tried again keeps its fields.
    pub(super) fn sealed(&self, mut line: Queued) -> Queued {
        if let Some(chain) = self
            .chain
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
        {
            chain.seal(&mut line.text);
        }
        line
    }

    pub(super) fn set_failing(&self, failing: bool) {
        if self.failing.swap(failing, Ordering::Relaxed) != failing {
            self.changed.notify_waiters();
        }
    }
}

/// The audit log's metrics, kept by the writer and by whoever queues lines.
#[derive(Clone, Debug, Default)]
pub(crate) struct AuditMetrics {
    /// Lines queued and not yet written.
    pub queued_lines: Gauge,
    /// Bytes of those lines (their allocations).
    pub queued_bytes: Gauge,
    /// Decisions under log-only rules ([`Policy::log_only`](crate::Policy::log_only))
    /// forwarded although they could not be audited.
    pub forwarded_unaudited: Counter,
    /// The delivery's, when lines go to a sink that acknowledges them.
    pub delivery: super::delivery::DeliveryMetrics,
}

/// A line queued: its text, the bytes it is counted for, and the counter of the
/// connection that queued it (if any), which the writer takes them off once it is written.
pub(super) struct Queued {
    pub(super) text: String,
    pub(super) bytes: usize,
    pub(super) conn: Option<Arc<AtomicUsize>>,
    /// The line's share of the guard's buffer budget, given back once it is written.
    pub(super) _share: Option<crate::core::budget::Share>,
    /// Who waits for its acknowledgement, when it goes to a sink that acknowledges
    /// ([`super::delivery::Pending`]): handed the sink's answer.
    pub(super) handed: Option<tokio::sync::oneshot::Sender<Result<super::delivery::Acked, String>>>,
}

/// What a writer thread is handed: a line, or a request to say when every line before it
/// is written.
pub(super) enum Message {
    Line(Box<Queued>),
    Drained(std::sync::mpsc::Sender<()>),
    /// Open the audit file again; the answer: whether there is a file.
    Reopen(std::sync::mpsc::Sender<io::Result<bool>>),
}

/// Hands `Drained` to a writer with `send` and waits for its answer, at most until
/// `deadline`: whether every line queued before it was written.
pub(super) fn drain(
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

/// Takes a line's bytes off the queue's count and its connection's.
pub(super) fn release(queue: &Queue, bytes: usize, conn: Option<&AtomicUsize>) {
    if let Some(c) = conn {
        c.fetch_sub(bytes, Ordering::AcqRel);
    }
    queue.bytes.fetch_sub(bytes, Ordering::AcqRel);
    queue.metrics.queued_lines.dec();
    queue.metrics.queued_bytes.dec_by(bytes as i64);
    queue.changed.notify_waiters();
}
