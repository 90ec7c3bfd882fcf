//! The guard's budget for buffered bytes (`--max-buffered-bytes`), shared by every
//! connection and both directions, and the reader that applies it.
//!
//! A frame is read whole before it is forwarded, so what the guard holds is the frames in
//! progress. Frames up to [`SMALL_FRAME`] bytes are what a connection's base buffers hold
//! and need nothing from the budget. A larger frame takes its whole size from the budget
//! when its size prefix has been read and before more than [`LOOKAHEAD`] bytes of its body
//! are, and gives it back once it has been forwarded (or, for an ElectLeaders request the
//! guard answers itself, once answered). While the budget is spent, its reader waits: TCP
//! holds the sender back, and the frames of other connections keep flowing.
//!
//! Taking a frame's whole size at once, rather than bytes as they come, is what keeps this
//! free of deadlock: a frame waiting for its share holds none of the budget, so the frames
//! that hold it can always finish (a client's frame must finish within the frame timeout,
//! which gives its share back if it does not). The budget bounds what is set aside, not
//! what is allocated: memory still grows only as bytes arrive ([`crate::conn::RESERVE_STEP`]
//! at a time past them), never by a size read off the wire. A frame larger than the whole
//! budget waits until it can take all of it.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::BytesMut;
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
    semaphore: Arc<Semaphore>,
    total: usize,
}

impl Budget {
    /// A budget of `bytes` (at least one frame of [`SMALL_FRAME`] bytes).
    pub fn new(bytes: usize) -> Budget {
        let total = bytes.clamp(SMALL_FRAME, Semaphore::MAX_PERMITS);
        Budget {
            semaphore: Arc::new(Semaphore::new(total)),
            total,
        }
    }

    /// Bytes of the budget not set aside now.
    #[cfg(test)]
    pub fn available(&self) -> usize {
        self.semaphore.available_permits()
    }

    /// A share of `len` bytes for what the guard keeps besides the frames being read: an
    /// ElectLeaders request kept to answer or merge, an answer the guard wrote. Waits while
    /// the budget is spent, as a reader does.
    pub async fn hold(&self, len: usize) -> Share {
        match self
            .semaphore
            .clone()
            .acquire_many_owned(self.share(len))
            .await
        {
            Ok(permit) => Share(permit),
            // The budget's semaphore is never closed.
            Err(_) => unreachable!("the budget is never closed"),
        }
    }

    /// The share a frame of `len` bytes (size prefix included) takes: all of it, or the
    /// whole budget for a frame larger than that.
    fn share(&self, len: usize) -> u32 {
        u32::try_from(len.min(self.total)).unwrap_or(u32::MAX)
    }
}

/// The share of the budget one frame holds; given back when dropped.
#[derive(Debug)]
pub struct Share(#[allow(dead_code)] OwnedSemaphorePermit);

/// Where a [`Metered`] reader is in the stream of frames.
#[derive(Debug)]
struct Position {
    /// Size prefix bytes of the next frame read so far.
    prefix: [u8; 4],
    prefix_len: usize,
    /// Body bytes of the current frame still to come.
    body_left: u64,
    /// The current frame needs a share of this many bytes before more of it is read; and
    /// its length, size prefix included.
    needs: Option<(u32, usize)>,
}

/// An `AsyncRead` of Kafka frames that takes each large frame's share of the [`Budget`]
/// before reading its body, and keeps the shares, oldest first, until [`Metered::take_share`]
/// hands them on with their frames.
///
/// It follows the frame boundaries itself from the size prefixes, without touching the
/// bytes. A size that is negative or larger than the largest frame is let through: the
/// frame decoder refuses it and the connection is closed.
pub struct Metered<R> {
    inner: Take<R>,
    budget: Budget,
    semaphore: PollSemaphore,
    max_frame_size: usize,
    at: Position,
    /// Shares of the large frames read or being read, oldest first.
    shares: VecDeque<Share>,
    /// A size was not a frame's: stop following boundaries, the decoder will fail.
    lost: bool,
    /// The length of the frame being read once its share covers it whole, else 0: what
    /// [`Reserving`] sizes the read buffer to.
    granted: Arc<AtomicUsize>,
}

impl<R: AsyncRead + Unpin> Metered<R> {
    /// `inner`'s frames, metered against `budget`; `max_frame_size` as the decoder's.
    pub fn new(inner: R, budget: &Budget, max_frame_size: usize) -> Metered<R> {
        Metered {
            inner: inner.take(0),
            budget: budget.clone(),
            semaphore: PollSemaphore::new(budget.semaphore.clone()),
            max_frame_size,
            at: Position {
                prefix: [0; 4],
                prefix_len: 0,
                body_left: 0,
                needs: None,
            },
            shares: VecDeque::new(),
            lost: false,
            granted: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// `decoder`, sizing its read buffer to each large frame once the frame's share is
    /// granted.
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
                    self.granted.store(0, Ordering::Relaxed);
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
            let len = size + kafka_elect_leaders::SIZE_PREFIX_LEN;
            if len > SMALL_FRAME {
                self.at.needs = Some((self.budget.share(len), len));
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
        if let Some((n, len)) = this.at.needs {
            // The frame begun needs its share before more of its body is read.
            let share = ready!(this.semaphore.poll_acquire_many(cx, n));
            this.at.needs = None;
            match share {
                Some(permit) => {
                    this.shares.push_back(Share(permit));
                    if n as usize == len {
                        this.granted.store(len, Ordering::Relaxed);
                    }
                }
                // The budget is never closed; were it, frames would go unmetered.
                None => this.lost = true,
            }
        }
        // The rest of the frame held (or small), and what follows up to the lookahead,
        // counted from where that frame's share (if any) was taken.
        // A large frame's body cannot be whole within the lookahead (LOOKAHEAD is
        // SMALL_FRAME): it is never yielded before its share is taken.
        let limit = if this.lost {
            u64::MAX
        } else {
            this.at.body_left.saturating_add(LOOKAHEAD as u64)
        };
        this.inner.set_limit(limit);
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        this.track(&buf.filled()[before..]);
        Poll::Ready(Ok(()))
    }
}

/// A decoder whose read buffer, once a large frame's share is granted, is sized to the
/// whole frame at once: one allocation, which the budget has accounted for, instead of
/// growing step by step with copies (and the allocator's leftovers) on the way.
pub struct Reserving<D> {
    decoder: D,
    granted: Arc<AtomicUsize>,
}

impl<D> Reserving<D> {
    /// The decoder wrapped.
    pub fn get_ref(&self) -> &D {
        &self.decoder
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
        let budget = Budget::new(BIG + 4);
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

    #[tokio::test]
    async fn a_frame_larger_than_the_budget_takes_all_of_it() {
        let budget = Budget::new(100_000);
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
        let budget = Budget::new(SMALL_FRAME);
        for prefix in [(-1i32).to_be_bytes(), 5_000_000i32.to_be_bytes()] {
            let (mut tx, rx) = tokio::io::duplex(1 << 20);
            let mut r = Metered::new(rx, &budget, 1 << 20);
            tx.write_all(&prefix).await.unwrap();
            tx.write_all(&[0; 100_000]).await.unwrap();
            assert_eq!(read_available(&mut r, 100_004).await, 100_004);
            assert!(r.take_share().is_none());
        }
    }
}
