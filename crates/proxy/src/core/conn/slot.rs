//! The queue of answers owed: a request's [`Slot`] (forwarded, to be paired with the
//! broker's answer by correlation id, or answered by a filter) and what a kept answer holds
//! of the connection's and the guard's budgets. Putting a slot in the queue or taking the
//! budget may wait, and then flushes the broker side first. Reading and pairing answers is
//! the response pump's.

use std::sync::Arc;

use futures_util::FutureExt;
use kafka_elect_leaders::Pending;
use tokio::io::AsyncWrite;
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore, TryAcquireError};
use tokio::time::Instant;

use super::frames::{flush, ToPeer};
use crate::core::budget::{Share, SMALL_FRAME};
use crate::core::close::Close;
use crate::core::shared::Shared;
use crate::filter::{Answered, Respond};

/// Requests of one connection waiting for their answers, at most.
pub const MAX_IN_FLIGHT: usize = 128;

/// A request's place in the order of answers. A request the broker never answers (a
/// `Produce` with `acks=0`) has none.
pub(super) enum Slot {
    /// Forwarded: the broker's answer goes back through the response filters, or to the
    /// filter's `merge` when it forwarded another frame in the request's place, by `due`.
    Forwarded {
        pending: Pending,
        sent: Instant,
        due: Instant,
        merge: Option<Kept>,
    },
    /// Answered by the guard, nothing sent: written in its turn.
    Local(Kept),
}

/// An answer a filter will write, and what it holds of the budgets until then.
pub(super) struct Kept {
    pub(super) write: Answered,
    /// The request it answers, or the answer, is larger than a small frame: the answer is
    /// written off the runtime's worker (see `responses`).
    pub(super) heavy: bool,
    _held: OwnedSemaphorePermit,
    _share: Share,
}

impl Slot {
    pub(super) fn pending(&self) -> Option<Pending> {
        match self {
            Slot::Forwarded { pending, .. } => Some(*pending),
            Slot::Local(_) => None,
        }
    }

    /// When the broker's answer is late.
    pub(super) fn due(&self) -> Option<Instant> {
        match self {
            Slot::Forwarded { due, .. } => Some(*due),
            Slot::Local(_) => None,
        }
    }

    /// Answered by the guard, not the broker.
    pub(super) fn is_local(&self) -> bool {
        matches!(self, Slot::Local(_))
    }
}

/// Puts a slot in the queue; when the queue is full, flushes the broker side first (the
/// answers that would make room may be waiting for requests still in the buffer).
pub(super) async fn send_slot<W: AsyncWrite + Unpin>(
    slots: &mpsc::Sender<Slot>,
    to_upstream: &mut ToPeer<W>,
    slot: Slot,
) -> Result<(), Close> {
    match slots.try_send(slot) {
        Ok(()) => Ok(()),
        Err(TrySendError::Full(slot)) => {
            flush(to_upstream).await.map_err(Close::write("broker"))?;
            slots
                .send(slot)
                .await
                .map_err(|_| Close::new("the response side stopped"))
        }
        Err(TrySendError::Closed(_)) => Err(Close::new("the response side stopped")),
    }
}

/// Permits for `len` bytes of a request kept in a slot, out of the connection's budget;
/// flushes the broker side before waiting for them, as `send_slot` does.
pub(super) async fn hold<W: AsyncWrite + Unpin>(
    held: &Arc<Semaphore>,
    to_upstream: &mut ToPeer<W>,
    len: usize,
) -> Result<OwnedSemaphorePermit, Close> {
    // A frame is never larger than the budget, which is the largest frame.
    let permits = u32::try_from(len).unwrap_or(u32::MAX);
    match held.clone().try_acquire_many_owned(permits) {
        Ok(permit) => Ok(permit),
        Err(TryAcquireError::NoPermits) => {
            flush(to_upstream).await.map_err(Close::write("broker"))?;
            held.clone()
                .acquire_many_owned(permits)
                .await
                .map_err(|_| Close::new("request budget closed"))
        }
        Err(TryAcquireError::Closed) => Err(Close::new("request budget closed")),
    }
}

/// An answer a filter will write, holding its bytes against the connection's budget of
/// requests kept and the guard's buffer budget until it is written. An answer written
/// later keeps the request it answers: a large request's share of the budget, taken as it
/// was read (`read_share`), covers it; a frame written now takes a share of its own.
///
/// The bytes the answer itself will take ([`Respond::answering`]) are taken now, before it
/// is built, with the request's (issue 42, item 5: refusals of large requests, about
/// twice their size, were built outside the budget, and 40 clients aborted a guard with a
/// 256 MiB budget under a 3 GiB limit). A request that held nothing of the budget (at most
/// [`SMALL_FRAME`] bytes) waits for both together, as any frame does. One that holds its
/// read share does not wait for more: connections that each hold a request and wait for
/// room for its answer could wait on one another for ever. It takes the answer's bytes at
/// once or, when the budget has no room for them now, its answer is the short one the
/// filter gave (`bounded`), whose size does not grow with the request.
pub(super) async fn keep<W: AsyncWrite + Unpin>(
    held: &Arc<Semaphore>,
    to_upstream: &mut ToPeer<W>,
    shared: &Shared,
    answer: Respond,
    read_share: Option<Share>,
) -> Result<Kept, Close> {
    let permits = answer.holds.min(shared.max_frame_size);
    let kept = hold(held, to_upstream, permits).await?;
    let Respond {
        holds,
        write,
        answer: answer_len,
        bounded,
    } = answer;
    let heavy = holds > SMALL_FRAME || answer_len > SMALL_FRAME;
    let later = matches!(write, Answered::Later(_));
    let (share, write) = match (read_share, bounded) {
        (Some(mut share), Some(bounded)) if later => match shared.budget.try_hold(answer_len) {
            Some(room) => {
                share.merge(room);
                (share, write)
            }
            None => (share, Answered::Later(bounded)),
        },
        (Some(share), None) if later => (share, write),
        _ => {
            let len = holds.saturating_add(answer_len);
            (budget_share(shared, to_upstream, len).await?, write)
        }
    };
    Ok(Kept {
        write,
        heavy,
        _held: kept,
        _share: share,
    })
}

/// A share of the guard's buffer budget for `len` bytes kept ([`keep`]): a request kept to
/// answer or merge (issue 35, finding 5: small ones were kept outside the budget, up to 128 of
/// them a connection), or an answer the guard wrote. Flushes the broker side before
/// waiting, as `hold` does.
pub(super) async fn budget_share<W: AsyncWrite + Unpin>(
    shared: &Shared,
    to_upstream: &mut ToPeer<W>,
    len: usize,
) -> Result<Share, Close> {
    let wait = shared.budget.hold(len);
    tokio::pin!(wait);
    if let Some(share) = (&mut wait).now_or_never() {
        return Ok(share);
    }
    flush(to_upstream).await.map_err(Close::write("broker"))?;
    Ok(wait.await)
}
