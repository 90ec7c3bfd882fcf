//! The guard's budget for buffered bytes (`max-buffered-bytes`), shared by every
//! connection and both directions, and the reader that applies it.
//!
//! A frame is read whole before it is forwarded, so what the guard holds is the frames in
//! progress. Frames up to [`SMALL_FRAME`] bytes are what a connection's base buffers hold
//! and need nothing from the budget. A larger frame takes its share as its bytes come: a
//! first grant of twice [`LOOKAHEAD`] once its size prefix has been read (before more than
//! [`LOOKAHEAD`] bytes of its body are), then doubling what it holds each time its bytes
//! reach what is granted, until the share covers the whole frame. It gives the share back
//! once the frame has been forwarded (or, for an ElectLeaders request the guard answers
//! itself, once answered). A frame that stalls thus holds at most about twice what it has
//! sent, not its announced size (issue 35, finding 5: a few frames that stalled after
//! 64 KiB each set aside the largest frame size, and every legitimate large frame waited
//! for the frame timeout).
//!
//! Growing shares could deadlock: frames each holding part of the budget, each waiting
//! for more. So the budget is in two parts. The *general* part is what growing shares and
//! everything else the guard keeps ([`Budget::hold`]) take from. The *reserve*, one largest
//! frame (`max-frame-size` and its size prefix) or the whole budget if smaller, is taken
//! only whole-remainder at a time: a frame whose next grant the general part cannot give
//! takes what its share still lacks from the reserve in one grant, and can then be read to
//! its end. A frame waiting on the reserve holds none of it, and every frame holding part of
//! the reserve needs nothing more, so the reserve always drains as its holders' bytes
//! arrive (a client's frame must be whole within the frame timeout, which gives its share
//! back if it is not). With a budget no larger than one frame, the general part is empty and
//! every large frame takes its whole size at once from the reserve, as a frame larger than
//! the whole budget takes all of it.
//!
//! One client (an IP address; an IPv6 client's whole /64, which one host commonly holds)
//! holds at most half of the reserve at a time, with all its connections: a frame takes
//! from the reserve all it still lacks when that keeps its client within the cap, and
//! otherwise nothing (it waits for the general part). Without the cap one client's stalled
//! frames, taking the reserve in turn, made every other client's large frame wait for their
//! frame timeouts (issue 42, item 5: 30 MB/s of stalled large frames from one attacker kept
//! a legitimate client's large frame waiting 24-29 s). Never a part of what a frame lacks:
//! frames of one client each holding part of the reserve and of the general part, each
//! waiting for more, waited on one another until their frame timeouts. A frame of at most
//! half the reserve thus always finds room in it, whatever other clients hold; a larger one
//! may have to wait for the general part. With a budget no larger than one frame there is
//! no general part to grow from, and no cap.
//!
//! A sixteenth of the budget (at least one small frame, at most half of what is not the
//! reserve) is the *small* part: what a hold of at most [`SMALL_FRAME`] bytes (a small
//! request the guard keeps to answer or merge, its answer, an audit line) takes when the
//! general part has no room. Large frames never take from it, so frames that stall and
//! spend the general part and the reserve, from however many clients, leave small requests
//! served (issue 42, item 5: 40 clients stalling 24 MiB frames held another client's small
//! ElectLeaders request 18 s).
//!
//! The budget bounds what is set aside, not what is allocated: memory still grows only as
//! bytes arrive ([`crate::core::conn::RESERVE_STEP`] at a time past them, and a large frame's
//! buffer to what its share covers), never by a size read off the wire.

use crate::core::clients::PerClient;
use std::collections::VecDeque;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::BytesMut;
use kafka_elect_leaders::SIZE_PREFIX_LEN;
use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf, Take};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::codec::Decoder;
use tokio_util::sync::PollSemaphore;

/// Frames of at most this many bytes (size prefix included) take nothing from the budget.
pub const SMALL_FRAME: usize = 64 * 1024;
/// Bytes a reader may deliver past the end of the current frame (or past the last frame
/// boundary) before it knows whether what follows needs a share.
pub const LOOKAHEAD: usize = SMALL_FRAME;
/// [`crate::Config::max_buffered_bytes`]'s default: 1 GiB.
pub const DEFAULT_MAX_BUFFERED_BYTES: usize = 1 << 30;

/// The budget: one per guard.
#[derive(Clone, Debug)]
pub struct Budget {
    /// What growing shares and [`Budget::hold`] take from.
    general: Arc<Semaphore>,
    general_total: usize,
    /// What a frame's remainder is taken from, whole, when the general part is spent.
    reserve: Arc<Semaphore>,
    reserve_total: usize,
    /// What holds of at most [`SMALL_FRAME`] bytes take when the general part is spent.
    small: Arc<Semaphore>,
    small_total: usize,
    /// What one client may hold of the reserve, with all its connections.
    client_cap: usize,
    /// Each client's bytes of the reserve held (`crate::core::clients`); pruned as clients go.
    clients: Arc<PerClient>,
}

impl Budget {
    /// A budget of `bytes` (at least one frame of [`SMALL_FRAME`] bytes), for frames of at
    /// most `max_frame_size` bytes after their size prefix.
    pub fn new(bytes: usize, max_frame_size: usize) -> Budget {
        Budget::with_small_part(bytes, max_frame_size, true)
    }

    /// [`Budget::new`], with the small part or without it (the tests of the general part
    /// and the reserve count them alone).
    fn with_small_part(bytes: usize, max_frame_size: usize, small: bool) -> Budget {
        let total = bytes.clamp(SMALL_FRAME, Semaphore::MAX_PERMITS);
        let reserve_total = max_frame_size.saturating_add(SIZE_PREFIX_LEN).min(total);
        let rest = total - reserve_total;
        // A sixteenth of the budget (at least one small frame, at most half of what is not
        // the reserve) for the small things kept, out of large frames' reach.
        let small_total = if small && rest >= 2 * SMALL_FRAME {
            (total / 16).max(SMALL_FRAME).min(rest / 2)
        } else {
            0
        };
        let general_total = rest - small_total;
        Budget {
            general: Arc::new(Semaphore::new(general_total)),
            general_total,
            small: Arc::new(Semaphore::new(small_total)),
            small_total,
            reserve: Arc::new(Semaphore::new(reserve_total)),
            reserve_total,
            client_cap: if general_total > 0 {
                reserve_total / 2
            } else {
                reserve_total
            },
            clients: Arc::new(PerClient::default()),
        }
    }

    /// The counter of the reserve `client` holds, shared by all its connections (an IPv6
    /// client's /64 is one client).
    pub fn client(&self, client: IpAddr) -> Arc<AtomicUsize> {
        self.clients.counter(client)
    }

    /// Bytes of the budget not set aside now.
    #[cfg(test)]
    pub fn available(&self) -> usize {
        self.general.available_permits()
            + self.reserve.available_permits()
            + self.small.available_permits()
    }

    /// A share of `len` bytes for what the guard keeps besides the frames being read: an
    /// ElectLeaders request kept to answer or merge, an answer the guard wrote. Taken from
    /// the general part (from the reserve when the budget is no larger than one frame),
    /// all of that part if `len` is larger; waits while it is spent, as a reader does.
    ///
    /// A hold of at most [`SMALL_FRAME`] bytes (a small request kept, its answer, an audit
    /// line) that the general part has no room for takes from the small part, set aside
    /// from the general part where large frames, which grow only from the general part
    /// and the reserve, cannot spend it: stalled large frames that spend both (issue 42,
    /// item 5: 40 clients stalling 24 MiB frames held a small ElectLeaders request 18 s)
    /// leave the small requests of other clients served.
    pub async fn hold(&self, len: usize) -> Share {
        if let Some(share) = self.try_hold(len) {
            return share;
        }
        let (part, n) = self.part_for(len);
        let part = if self.small_total > 0 && len <= SMALL_FRAME {
            &self.small
        } else {
            part
        };
        match part.clone().acquire_many_owned(n).await {
            Ok(permit) => self.share_of(part, permit),
            // The budget's semaphores are never closed.
            Err(_) => unreachable!("the budget is never closed"),
        }
    }

    /// The part [`Budget::hold`] takes from, and the permits it takes for `len` bytes.
    fn part_for(&self, len: usize) -> (&Arc<Semaphore>, u32) {
        let (part, total) = if self.general_total > 0 {
            (&self.general, self.general_total)
        } else {
            (&self.reserve, self.reserve_total)
        };
        (part, u32::try_from(len.min(total)).unwrap_or(u32::MAX))
    }

    /// A share of what [`Budget::part_for`] gave: kept with the permits of its own part, so
    /// that shares can be merged ([`Share::merge`]).
    fn share_of(&self, part: &Arc<Semaphore>, permit: OwnedSemaphorePermit) -> Share {
        let mut share = Share::default();
        if Arc::ptr_eq(part, &self.small) {
            share.small = Some(permit);
        } else if Arc::ptr_eq(part, &self.general) {
            share.general = Some(permit);
        } else {
            share.reserve = Some(permit);
        }
        share
    }
}

impl Budget {
    /// `len` bytes of the general part held for good (an audit sink's own buffer), only
    /// when that leaves at least as much of it to the frames: `None` otherwise, and nothing
    /// taken (never the reserve, which a large frame needs whole).
    pub(crate) fn try_set_aside(&self, len: usize) -> Option<Share> {
        if self.general_total / 2 < len {
            return None;
        }
        let n = u32::try_from(len).ok()?;
        let permit = self.general.clone().try_acquire_many_owned(n).ok()?;
        Some(self.share_of(&self.general, permit))
    }

    /// [`Budget::hold`] without waiting: `None` when the part it takes from has no room now.
    pub fn try_hold(&self, len: usize) -> Option<Share> {
        let (part, n) = self.part_for(len);
        let small = self.small_total > 0 && len <= SMALL_FRAME;
        match part.clone().try_acquire_many_owned(n) {
            Ok(permit) => Some(self.share_of(part, permit)),
            Err(_) if small => {
                let permit = self.small.clone().try_acquire_many_owned(n).ok()?;
                Some(self.share_of(&self.small, permit))
            }
            Err(_) => None,
        }
    }
}

/// The share of the budget one frame (or one thing kept) holds; given back when dropped.
#[derive(Debug, Default)]
pub struct Share {
    general: Option<OwnedSemaphorePermit>,
    reserve: Option<OwnedSemaphorePermit>,
    /// The client whose count of the reserve held `reserve` is in, if it is counted.
    client: Option<Arc<AtomicUsize>>,
    /// Taken from the small part ([`Budget::hold`]).
    small: Option<OwnedSemaphorePermit>,
}

impl Drop for Share {
    fn drop(&mut self) {
        if let (Some(client), Some(reserve)) = (&self.client, &self.reserve) {
            client.fetch_sub(reserve.num_permits(), Ordering::Relaxed);
        }
    }
}

impl Share {
    /// Bytes this share holds.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        let n = |p: &Option<OwnedSemaphorePermit>| p.as_ref().map_or(0, |p| p.num_permits());
        n(&self.general) + n(&self.reserve) + n(&self.small)
    }

    /// Adds `permit`, taken from the general part, to what this share holds there.
    fn add_general(&mut self, permit: OwnedSemaphorePermit) {
        match &mut self.general {
            Some(held) => held.merge(permit),
            None => self.general = Some(permit),
        }
    }

    /// Adds what `other` holds to this share (both of one budget): given back together.
    /// An answer the guard writes later thus holds the request it answers and its own
    /// bytes as one share.
    pub fn merge(&mut self, mut other: Share) {
        if let Some(permit) = other.general.take() {
            self.add_general(permit);
        }
        if let Some(permit) = other.small.take() {
            match &mut self.small {
                Some(held) => held.merge(permit),
                None => self.small = Some(permit),
            }
        }
        if let Some(permit) = other.reserve.take() {
            // Counted for other's client until now: counted for this share's from here.
            if let Some(client) = other.client.take() {
                client.fetch_sub(permit.num_permits(), Ordering::Relaxed);
            }
            if let Some(client) = &self.client {
                client.fetch_add(permit.num_permits(), Ordering::Relaxed);
            }
            self.add_reserve(permit);
        }
    }

    /// Adds `permit`, taken from the reserve, to what this share holds there.
    fn add_reserve(&mut self, permit: OwnedSemaphorePermit) {
        match &mut self.reserve {
            Some(held) => held.merge(permit),
            None => self.reserve = Some(permit),
        }
    }
}

/// A large frame being read and the share it holds so far.
#[derive(Debug)]
struct Large {
    /// Its length, size prefix included.
    len: usize,
    /// Bytes of it, counted from its size prefix, its share covers.
    covered: usize,
    share: Share,
}

/// Where a [`Metered`] reader is in the stream of frames.
#[derive(Debug)]
struct Position {
    /// Size prefix bytes of the next frame read so far.
    prefix: [u8; 4],
    prefix_len: usize,
    /// Body bytes of the current frame still to come.
    body_left: u64,
    /// The current frame, when it is large.
    large: Option<Large>,
}

/// An `AsyncRead` of Kafka frames that grows each large frame's share of the [`Budget`]
/// before reading more of its body than the share covers, and keeps the shares of the
/// frames read, oldest first, until [`Metered::take_share`] hands them on with their frames.
///
/// It follows the frame boundaries itself from the size prefixes, without touching the
/// bytes. A size that is negative or larger than the largest frame is let through: the
/// frame decoder refuses it and the connection is closed.
pub struct Metered<R> {
    inner: Take<R>,
    budget: Budget,
    general: PollSemaphore,
    reserve: PollSemaphore,
    /// A grant from the reserve is pending (queued): dropped once the general part gives.
    reserve_queued: bool,
    /// A grant from the general part is pending: dropped once the reserve gives.
    general_queued: bool,
    max_frame_size: usize,
    at: Position,
    /// Shares of the large frames read whole, oldest first.
    shares: VecDeque<Share>,
    /// A size was not a frame's: stop following boundaries, the decoder will fail.
    lost: bool,
    /// The bytes the current large frame's share covers, else 0: what [`Reserving`] sizes
    /// the read buffer to.
    granted: Arc<AtomicUsize>,
    /// The client's count of the reserve held ([`Budget::client`]); None: uncapped.
    client: Option<Arc<AtomicUsize>>,
}

impl<R: AsyncRead + Unpin> Metered<R> {
    /// `inner`'s frames, metered against `budget`; `max_frame_size` as the decoder's.
    pub fn new(inner: R, budget: &Budget, max_frame_size: usize) -> Metered<R> {
        Metered {
            inner: inner.take(0),
            budget: budget.clone(),
            general: PollSemaphore::new(budget.general.clone()),
            reserve: PollSemaphore::new(budget.reserve.clone()),
            reserve_queued: false,
            general_queued: false,
            max_frame_size,
            at: Position {
                prefix: [0; 4],
                prefix_len: 0,
                body_left: 0,
                large: None,
            },
            shares: VecDeque::new(),
            lost: false,
            granted: Arc::new(AtomicUsize::new(0)),
            client: None,
        }
    }

    /// Its frames take no more of the reserve than `client` may still hold: what
    /// [`Budget::client`] gave for the connection's client.
    pub fn for_client(mut self, client: Arc<AtomicUsize>) -> Metered<R> {
        self.client = Some(client);
        self
    }

    /// `decoder`, sizing its read buffer to what each large frame's share covers.
    pub fn reserving<D>(&self, decoder: D) -> Reserving<D> {
        Reserving {
            decoder,
            granted: self.granted.clone(),
        }
    }

    /// The reader metered.
    pub fn get_ref(&self) -> &R {
        self.inner.get_ref()
    }

    /// The share of the oldest large frame not yet taken: call it once for every frame of
    /// more than [`SMALL_FRAME`] bytes the decoder yields, in order.
    pub fn take_share(&mut self) -> Option<Share> {
        self.shares.pop_front()
    }

    /// Bytes the share of the frame being read holds (0 between frames).
    #[cfg(test)]
    fn holding(&self) -> usize {
        self.at.large.as_ref().map_or(0, |l| l.share.len())
    }

    /// Follows the frame boundaries through bytes just delivered.
    fn track(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() && !self.lost {
            if self.at.body_left > 0 {
                let n = usize::try_from(self.at.body_left)
                    .unwrap_or(usize::MAX)
                    .min(bytes.len());
                bytes = &bytes[n..];
                self.at.body_left -= n as u64;
                if self.at.body_left == 0 {
                    if let Some(large) = self.at.large.take() {
                        self.shares.push_back(large.share);
                        self.granted.store(0, Ordering::Relaxed);
                    }
                }
                continue;
            }
            let n = (4 - self.at.prefix_len).min(bytes.len());
            self.at.prefix[self.at.prefix_len..self.at.prefix_len + n].copy_from_slice(&bytes[..n]);
            self.at.prefix_len += n;
            bytes = &bytes[n..];
            if self.at.prefix_len < 4 {
                return;
            }
            self.at.prefix_len = 0;
            let size = i32::from_be_bytes(self.at.prefix);
            let Some(size) = usize::try_from(size)
                .ok()
                .filter(|&size| size <= self.max_frame_size)
            else {
                self.lost = true;
                return;
            };
            self.at.body_left = size as u64;
            let len = size + SIZE_PREFIX_LEN;
            if len > SMALL_FRAME {
                self.at.large = Some(Large {
                    len,
                    covered: 0,
                    share: Share::default(),
                });
            }
        }
    }

    /// Grows the current large frame's share: the next doubling from the general part, or
    /// all it still lacks from the reserve, whichever comes first.
    fn poll_grow(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let Some(large) = self.at.large.as_mut() else {
            return Poll::Ready(());
        };
        let next = large
            .len
            .min(large.covered.saturating_mul(2).max(2 * LOOKAHEAD));
        // A step larger than the whole general part would wait at the head of its queue for
        // ever, and every hold behind it.
        if next - large.covered <= self.budget.general_total {
            let step = u32::try_from(next - large.covered).unwrap_or(u32::MAX);
            match self.general.poll_acquire_many(cx, step) {
                Poll::Ready(Some(permit)) => {
                    large.share.add_general(permit);
                    large.covered = next;
                    self.general_queued = false;
                    if std::mem::take(&mut self.reserve_queued) {
                        // Leave the reserve's queue: a pending grant keeps what it was given.
                        self.reserve = PollSemaphore::new(self.budget.reserve.clone());
                    }
                    self.granted.store(large.covered, Ordering::Relaxed);
                    return Poll::Ready(());
                }
                // The budget is never closed; were it, frames would go unmetered.
                Poll::Ready(None) => {
                    self.lost = true;
                    return Poll::Ready(());
                }
                Poll::Pending => self.general_queued = true,
            }
        }
        // All the frame lacks, or the whole reserve for a frame larger than the budget.
        let whole = (large.len - large.covered).min(self.budget.reserve_total);
        // Only when all it lacks keeps its client within its cap of the reserve: a frame
        // given part of the reserve would still need more from the general part, and frames
        // of one client each holding part of both, each waiting, would wait on one another
        // until their frame timeouts (16 connections of one address sending 1 MiB frames
        // through an 8 MiB budget did). A frame past the cap waits for the general part,
        // where it is queued; were the general part too small to be queued on, the frame
        // could only be read from the reserve, and takes it.
        let capped = self.client.as_ref().filter(|_| self.general_queued);
        if let Some(client) = capped {
            let allowed = self
                .budget
                .client_cap
                .saturating_sub(client.load(Ordering::Relaxed));
            if allowed < whole {
                if std::mem::take(&mut self.reserve_queued) {
                    self.reserve = PollSemaphore::new(self.budget.reserve.clone());
                }
                return Poll::Pending;
            }
        }
        let rest = u32::try_from(whole).unwrap_or(u32::MAX);
        match self.reserve.poll_acquire_many(cx, rest) {
            Poll::Ready(Some(permit)) => {
                if let Some(client) = &self.client {
                    let n = permit.num_permits();
                    let held = client.fetch_add(n, Ordering::Relaxed).saturating_add(n);
                    // Another connection of the client's took its part meanwhile: this
                    // grant goes back whole, and the frame waits for the general part
                    // (where it is still queued) as if it had found the client at its cap.
                    if capped.is_some() && held > self.budget.client_cap {
                        drop(permit);
                        client.fetch_sub(n, Ordering::Relaxed);
                        self.reserve_queued = false;
                        self.reserve = PollSemaphore::new(self.budget.reserve.clone());
                        return Poll::Pending;
                    }
                    large.share.client = Some(client.clone());
                }
                if permit.num_permits() >= whole {
                    large.covered = large.len;
                } else {
                    large.covered += permit.num_permits();
                }
                large.share.add_reserve(permit);
                self.reserve_queued = false;
                if std::mem::take(&mut self.general_queued) {
                    self.general = PollSemaphore::new(self.budget.general.clone());
                }
                self.granted.store(large.covered, Ordering::Relaxed);
                Poll::Ready(())
            }
            Poll::Ready(None) => {
                self.lost = true;
                Poll::Ready(())
            }
            Poll::Pending => {
                self.reserve_queued = true;
                Poll::Pending
            }
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Metered<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        // The large frame begun needs more of its share before more of it is read.
        let limit = loop {
            if this.lost {
                break u64::MAX;
            }
            let Some(large) = &this.at.large else {
                // Between frames, or in a small one: the rest of it, and what follows up
                // to the lookahead.
                break this.at.body_left.saturating_add(LOOKAHEAD as u64);
            };
            if large.covered >= large.len {
                break this.at.body_left.saturating_add(LOOKAHEAD as u64);
            }
            // Bytes of the frame delivered so far, size prefix included.
            let seen = large.len - usize::try_from(this.at.body_left).unwrap_or(large.len);
            if seen < large.covered {
                break (large.covered - seen) as u64;
            }
            ready!(this.poll_grow(cx));
        };
        // A large frame's body cannot be whole within the lookahead (LOOKAHEAD is
        // SMALL_FRAME): it is never yielded before its share covers it.
        this.inner.set_limit(limit);
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        this.track(&buf.filled()[before..]);
        Poll::Ready(Ok(()))
    }
}

/// A decoder whose read buffer, while a large frame is read, is sized to what the frame's
/// share covers: one allocation a grant (a handful a frame, the grants doubling), which the
/// budget has accounted for, instead of growing step by step with copies (and the
/// allocator's leftovers) on the way.
pub struct Reserving<D> {
    decoder: D,
    granted: Arc<AtomicUsize>,
}

impl<D> Reserving<D> {
    /// The decoder wrapped.
    pub fn get_ref(&self) -> &D {
        &self.decoder
    }

    /// The decoder wrapped, to change.
    pub fn get_mut(&mut self) -> &mut D {
        &mut self.decoder
    }
}

impl<D: Decoder> Decoder for Reserving<D> {
    type Item = D::Item;
    type Error = D::Error;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<D::Item>, D::Error> {
        // The frame granted starts at the front of `src`: the frames before it were taken.
        let granted = self.granted.load(Ordering::Relaxed);
        if granted > src.capacity() {
            src.reserve(granted - src.len());
        }
        self.decoder.decode(src)
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<D::Item>, D::Error> {
        self.decoder.decode_eof(src)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// An audit sink's buffer is set aside from the general part only when it leaves as
    /// much to the frames, and never from the reserve.
    #[test]
    fn a_sink_buffer_is_set_aside_only_from_a_large_enough_general_part() {
        let budget = Budget::new(1 << 30, 100 << 20);
        let before = budget.available();
        let share = budget.try_set_aside(16 << 20).expect("room");
        assert_eq!(budget.available(), before - (16 << 20));
        drop(share);
        assert_eq!(budget.available(), before);
        // 128 MiB with 100 MiB frames: a general part of about 20 MiB, too small.
        let small = Budget::new(128 << 20, 100 << 20);
        let before = small.available();
        assert!(small.try_set_aside(16 << 20).is_none());
        assert_eq!(small.available(), before, "nothing taken");
        // All reserve: never.
        assert!(Budget::new(64 << 20, 100 << 20).try_set_aside(1).is_none());
    }

    /// A frame of `size` body bytes, each `fill`.
    fn frame(size: usize, fill: u8) -> Vec<u8> {
        let mut f = u32::try_from(size).unwrap().to_be_bytes().to_vec();
        f.resize(4 + size, fill);
        f
    }

    /// Reads from `r` until `want` bytes came or it would wait; the bytes read.
    async fn read_available<R: AsyncRead + Unpin>(r: &mut R, want: usize) -> usize {
        let mut got = 0;
        let mut buf = vec![0; 8192];
        while got < want {
            let n = match tokio::time::timeout(
                std::time::Duration::from_millis(50),
                r.read(&mut buf[..(want - got).min(8192)]),
            )
            .await
            {
                Ok(n) => n.unwrap(),
                Err(_) => break,
            };
            if n == 0 {
                break;
            }
            got += n;
        }
        got
    }

    #[tokio::test]
    async fn a_large_frame_waits_for_its_share_and_small_ones_never_do() {
        const BIG: usize = 200_000;
        let budget = Budget::with_small_part(BIG + 4, 1 << 20, false);
        let (mut a_tx, a_rx) = tokio::io::duplex(1 << 20);
        let (mut b_tx, b_rx) = tokio::io::duplex(1 << 20);
        let mut a = Metered::new(a_rx, &budget, 1 << 20);
        let mut b = Metered::new(b_rx, &budget, 1 << 20);

        a_tx.write_all(&frame(BIG, 1)).await.unwrap();
        assert_eq!(read_available(&mut a, BIG + 4).await, BIG + 4);
        assert_eq!(budget.available(), 0, "A's frame holds the whole budget");

        // B's large frame: no more than the lookahead is read while A holds the budget.
        b_tx.write_all(&frame(BIG, 2)).await.unwrap();
        let early = read_available(&mut b, BIG + 4).await;
        assert!(early <= LOOKAHEAD, "{early} bytes read without a share");

        // A's frame handed on: B's goes on.
        drop(a.take_share().expect("A's share"));
        assert!(a.take_share().is_none());
        let rest = read_available(&mut b, BIG + 4 - early).await;
        assert_eq!(early + rest, BIG + 4);
        assert_eq!(budget.available(), 0);
        drop(b.take_share().expect("B's share"));
        assert_eq!(budget.available(), BIG + 4);

        // Small frames, however many, take nothing.
        let mut smalls = Vec::new();
        for _ in 0..40 {
            smalls.extend(frame(SMALL_FRAME - 4, 3));
        }
        let (written, read) = tokio::join!(
            a_tx.write_all(&smalls),
            read_available(&mut a, smalls.len())
        );
        written.unwrap();
        assert_eq!(read, smalls.len());
        assert!(a.take_share().is_none());
        assert_eq!(budget.available(), BIG + 4);
    }

    const MIB: usize = 1 << 20;

    /// Issue 35, finding 5: frames that stall after their first bytes each set aside the
    /// largest frame size, and a legitimate large frame waited for the frame timeout. Now a
    /// stalled frame holds about what it sent, and eight of them leave room for the ninth.
    #[tokio::test]
    async fn a_stalled_frame_holds_about_what_it_sent() {
        let budget = Budget::with_small_part(4 * MIB, MIB, false);
        let mut stalled = Vec::new();
        for _ in 0..8 {
            let (mut tx, rx) = tokio::io::duplex(2 * MIB);
            let mut r = Metered::new(rx, &budget, MIB);
            let sent = 100_000 + 4;
            tx.write_all(&frame(MIB, 1)[..sent]).await.unwrap();
            assert_eq!(read_available(&mut r, sent).await, sent);
            assert!(
                r.holding() <= 2 * sent,
                "a frame that sent {sent} bytes holds {}",
                r.holding()
            );
            stalled.push((tx, r));
        }
        let (mut tx, rx) = tokio::io::duplex(2 * MIB);
        let mut r = Metered::new(rx, &budget, MIB);
        let whole = frame(MIB, 2);
        let (written, read) = tokio::join!(tx.write_all(&whole), read_available(&mut r, MIB + 4));
        written.unwrap();
        assert_eq!(
            read,
            MIB + 4,
            "the ninth frame waited behind eight stalled ones"
        );
        assert_eq!(r.take_share().expect("its share").len(), MIB + 4);
    }

    /// Growing shares without deadlock: two stalled frames hold the whole general part,
    /// and a third frame is read whole from the reserve; then each stalled one finishes in
    /// turn as the others give their shares back.
    #[tokio::test]
    async fn with_the_general_part_spent_frames_finish_from_the_reserve() {
        let budget = Budget::with_small_part(MIB + 4 + 512 * 1024, MIB, false);
        let mut a_frame = frame(MIB, 1);
        let mut b_frame = frame(MIB, 2);
        let (mut a_tx, a_rx) = tokio::io::duplex(2 * MIB);
        let (mut b_tx, b_rx) = tokio::io::duplex(2 * MIB);
        let mut a = Metered::new(a_rx, &budget, MIB);
        let mut b = Metered::new(b_rx, &budget, MIB);
        for (tx, r, f) in [
            (&mut a_tx, &mut a, &mut a_frame),
            (&mut b_tx, &mut b, &mut b_frame),
        ] {
            tx.write_all(&f[..200_000]).await.unwrap();
            assert_eq!(read_available(r, 200_000).await, 200_000);
            assert_eq!(r.holding(), 256 * 1024);
        }
        assert_eq!(budget.available(), MIB + 4, "the reserve is left whole");

        let (mut c_tx, c_rx) = tokio::io::duplex(2 * MIB);
        let mut c = Metered::new(c_rx, &budget, MIB);
        let c_frame = frame(MIB, 3);
        let (written, read) =
            tokio::join!(c_tx.write_all(&c_frame), read_available(&mut c, MIB + 4));
        written.unwrap();
        assert_eq!(
            read,
            MIB + 4,
            "the third frame was not read from the reserve"
        );
        drop(c.take_share().expect("C's share"));

        // A goes on: its next grant comes from the reserve, and B's after A's is given back.
        a_tx.write_all(&a_frame[200_000..]).await.unwrap();
        assert_eq!(
            read_available(&mut a, MIB + 4 - 200_000).await,
            MIB + 4 - 200_000
        );
        b_tx.write_all(&b_frame[200_000..]).await.unwrap();
        let early = read_available(&mut b, MIB + 4 - 200_000).await;
        assert!(
            early <= 256 * 1024 - 200_000,
            "B read {early} bytes past its share"
        );
        drop(a.take_share().expect("A's share"));
        let rest = read_available(&mut b, MIB + 4 - 200_000 - early).await;
        assert_eq!(early + rest, MIB + 4 - 200_000);
        drop(b.take_share().expect("B's share"));
        assert_eq!(budget.available(), MIB + 4 + 512 * 1024);
    }

    #[tokio::test]
    async fn a_frame_larger_than_the_budget_takes_all_of_it() {
        let budget = Budget::with_small_part(100_000, 1 << 20, false);
        let (mut tx, rx) = tokio::io::duplex(1 << 20);
        let mut r = Metered::new(rx, &budget, 1 << 20);
        tx.write_all(&frame(300_000, 0)).await.unwrap();
        assert_eq!(read_available(&mut r, 300_004).await, 300_004);
        assert_eq!(budget.available(), 0);
        drop(r.take_share());
        assert_eq!(budget.available(), 100_000);
    }

    #[tokio::test]
    async fn a_size_the_decoder_refuses_is_let_through_unmetered() {
        let budget = Budget::with_small_part(SMALL_FRAME, 1 << 20, false);
        for prefix in [(-1i32).to_be_bytes(), 5_000_000i32.to_be_bytes()] {
            let (mut tx, rx) = tokio::io::duplex(1 << 20);
            let mut r = Metered::new(rx, &budget, 1 << 20);
            tx.write_all(&prefix).await.unwrap();
            tx.write_all(&[0; 100_000]).await.unwrap();
            assert_eq!(read_available(&mut r, 100_004).await, 100_004);
            assert!(r.take_share().is_none());
        }
    }

    /// Issue 42, item 5: one client's stalled large frames took the reserve in turn, and
    /// another client's large frame waited behind them for their frame timeouts. Now one
    /// client holds at most half the reserve, and a frame takes from it all it lacks or
    /// nothing: with the general part spent by two of the attacker's stalled frames, its
    /// third and fourth (each lacking more than half the reserve) wait, and the other
    /// client's frame of under half the reserve is read whole from the reserve.
    #[tokio::test]
    async fn one_client_holds_at_most_half_the_reserve() {
        let budget = Budget::with_small_part(MIB + 4 + 512 * 1024, MIB, false);
        let attacker: IpAddr = "192.0.2.1".parse().unwrap();
        let mut stalled = Vec::new();
        for _ in 0..4 {
            let (mut tx, rx) = tokio::io::duplex(2 * MIB);
            let mut r = Metered::new(rx, &budget, MIB).for_client(budget.client(attacker));
            tx.write_all(&frame(MIB, 1)[..200_000]).await.unwrap();
            let read = read_available(&mut r, 200_000).await;
            stalled.push((tx, r, read));
        }
        let held: Vec<usize> = stalled.iter().map(|(_, r, _)| r.holding()).collect();
        assert_eq!(
            held[..2],
            [256 * 1024, 256 * 1024],
            "the general part, spent"
        );
        for (i, (_, _, read)) in stalled.iter().enumerate().skip(2) {
            assert!(
                *read <= LOOKAHEAD && held[i] == 0,
                "frame {i} read {read} bytes and holds {}: part of the reserve",
                held[i]
            );
        }
        assert_eq!(budget.client(attacker).load(Ordering::Relaxed), 0);

        // Another client's frame of 400 KB: read whole from the half left.
        let other: IpAddr = "198.51.100.7".parse().unwrap();
        let (mut tx, rx) = tokio::io::duplex(2 * MIB);
        let mut r = Metered::new(rx, &budget, MIB).for_client(budget.client(other));
        let whole = frame(400_000, 2);
        let (written, read) = tokio::join!(tx.write_all(&whole), read_available(&mut r, 400_004));
        written.unwrap();
        assert_eq!(
            read, 400_004,
            "the other client's frame waited behind the attacker's"
        );
        drop(r.take_share().expect("its share"));

        // The attacker's frames given up: everything comes back, its count too.
        drop(stalled);
        assert_eq!(budget.available(), MIB + 4 + 512 * 1024);
        assert_eq!(budget.client(attacker).load(Ordering::Relaxed), 0);
    }

    /// Issue 42, item 5: stalled large frames that spend the general part and the reserve
    /// leave a small hold (a small request kept, an audit line) its part: it is granted at
    /// once, and a large hold is not granted from it.
    #[tokio::test]
    async fn stalled_large_frames_leave_small_holds_their_part() {
        /// Stalled frames from 40 clients: the general part spent (the reserve too, were a
        /// frame's rest within its client's cap).
        async fn stall(
            budget: &Budget,
        ) -> Vec<(tokio::io::DuplexStream, Metered<tokio::io::DuplexStream>)> {
            let mut stalled = Vec::new();
            for i in 0..40u32 {
                let client = IpAddr::V4(std::net::Ipv4Addr::from(0xc000_0200 + i));
                let (mut tx, rx) = tokio::io::duplex(2 * MIB);
                let mut r = Metered::new(rx, budget, MIB).for_client(budget.client(client));
                tx.write_all(&frame(MIB, 1)[..600_000]).await.unwrap();
                let _ = tokio::time::timeout(
                    std::time::Duration::from_millis(50),
                    read_available(&mut r, 600_000),
                )
                .await;
                stalled.push((tx, r));
            }
            assert_eq!(
                budget.general.available_permits(),
                0,
                "the general part, spent"
            );
            stalled
        }
        let budget = Budget::new(8 * MIB, MIB);
        assert_eq!(budget.small_total, MIB / 2, "a sixteenth of the budget");
        let _stalled = stall(&budget).await;
        assert!(
            budget.try_hold(2 * SMALL_FRAME).is_none(),
            "no room for a large hold"
        );
        let small = budget
            .try_hold(SMALL_FRAME)
            .expect("a small hold has its part");
        assert_eq!(small.len(), SMALL_FRAME);
        let waited = tokio::time::timeout(std::time::Duration::from_secs(5), budget.hold(1000))
            .await
            .expect("a small hold is granted at once");
        assert_eq!(waited.len(), 1000);
        drop((small, waited));
        assert_eq!(budget.small.available_permits(), MIB / 2, "given back");
        // Without the small part (as before), the same hold has no room.
        let without = Budget::with_small_part(8 * MIB, MIB, false);
        let _stalled = stall(&without).await;
        assert!(without.try_hold(1000).is_none());
    }

    /// A client is an IPv4 address, or an IPv6 /64 (IPv4-mapped addresses as IPv4).
    #[test]
    fn a_client_is_an_address_or_a_slash_64() {
        let budget = Budget::with_small_part(4 * MIB, MIB, false);
        let same = |a: &str, b: &str| {
            Arc::ptr_eq(
                &budget.client(a.parse().unwrap()),
                &budget.client(b.parse().unwrap()),
            )
        };
        assert!(same("2001:db8::1", "2001:db8::ffff:2"));
        assert!(!same("2001:db8::1", "2001:db8:0:1::1"));
        assert!(same("::ffff:192.0.2.1", "192.0.2.1"));
        assert!(!same("192.0.2.1", "192.0.2.2"));
    }
}
