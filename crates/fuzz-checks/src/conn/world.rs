//! The in-memory sides of the `conn` target: the pipes the guard reads and writes, the
//! client's close as the guard learns it, and the `World` the client, the fake broker and
//! the driver share (what each side queued, sent and got, and the broker's debts); the
//! tasks that move bytes on each pipe, and `settle`, which lets them run until nothing moves.
//!
//! What the sides do is the driver's (`driver`); what they saw is checked in `checks`.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::poll_fn;
use std::io;
use std::ops::Range;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use kafka_elect_leaders::split_frame_with_max;
use kafka_elect_leaders_proxy::testing::ClientRead;
use tokio::io::{
    AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream, ReadBuf, ReadHalf, WriteHalf,
};
use tokio::sync::Notify;

use super::memory;
use super::requests::produce_acks;

/// The client's close, as the guard's `ClientRead::closed` learns it (a TCP FIN).
#[derive(Default)]
pub(super) struct ClientClosed {
    closed: AtomicBool,
    notify: Notify,
}

impl ClientClosed {
    pub(super) fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
        self.notify.notify_waiters();
    }
}

/// The guard's end of the client's connection, reading side: what a TCP read half is to
/// the guard, with the client's FIN known as soon as it is sent.
pub(super) struct ClientEnd {
    pub(super) read: ReadHalf<DuplexStream>,
    pub(super) closed: Arc<ClientClosed>,
}

impl AsyncRead for ClientEnd {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.read).poll_read(cx, buf)
    }
}

impl ClientRead for ClientEnd {
    async fn closed(&self) {
        loop {
            let notified = self.closed.notify.notified();
            if self.closed.closed.load(Ordering::Relaxed) {
                return;
            }
            notified.await;
        }
    }
}

/// A writing half of the guard's whose writes are not counted: the pipe's buffer stands for
/// the kernel's socket buffer, not for the guard's memory.
pub(super) struct Uncounted<W>(pub(super) W);

impl<W: AsyncWrite + Unpin> AsyncWrite for Uncounted<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let _off = memory::Counting::set(false);
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let _off = memory::Counting::set(false);
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

/// How far a side's sending has gone.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Sending {
    Open,
    /// Write what is queued, then close: the client's FIN, or the broker's close.
    Closing,
    /// Closed at once, the queue dropped: the connection is gone.
    Gone,
}

/// Everything the client, the broker and the driver share. One task runs them all (with the
/// guard), so plain cells do.
pub(super) struct World {
    /// Bumped by every byte moved by the client or the broker: the driver's sign that the
    /// guard is still at work.
    pub(super) progress: Cell<u64>,

    pub(super) client_queue: RefCell<VecDeque<Vec<u8>>>,
    pub(super) client_sending: Cell<Sending>,
    pub(super) client_reading: Cell<bool>,
    /// What the client wrote, as far as the pipe took it.
    pub(super) client_sent: RefCell<Vec<u8>>,
    /// What the client read.
    pub(super) client_got: RefCell<Vec<u8>>,
    pub(super) client_closed: Arc<ClientClosed>,

    pub(super) broker_queue: RefCell<VecDeque<Vec<u8>>>,
    pub(super) broker_sending: Cell<Sending>,
    /// Bytes queued so far: where the next queued byte will be in `broker_sent`.
    pub(super) broker_queued: Cell<usize>,
    /// The spans of `broker_sent` that are answers the fake broker made, as opposed to
    /// garbage or unknown ids.
    pub(super) broker_proper: RefCell<Vec<(usize, usize)>>,
    pub(super) broker_sent: RefCell<Vec<u8>>,
    pub(super) broker_got: RefCell<Vec<u8>>,
    /// Where the next frame begins in `broker_got`.
    pub(super) broker_parsed: Cell<usize>,
    /// The broker skipped a request, answered an unknown id or wrote garbage: it no longer
    /// answers as Kafka does.
    pub(super) broker_misbehaved: Cell<bool>,
    /// Requests received and owed an answer, oldest first: where they are in `broker_got`.
    pub(super) broker_owes: RefCell<VecDeque<Range<usize>>>,

    pub(super) guard_done: Cell<bool>,
    pub(super) guard_result: RefCell<Option<Result<(), String>>>,
    /// The driver gives up on the guard: its future is dropped.
    pub(super) cancel: Cell<bool>,
    /// The driver is done: the sides stop once they have read what is left.
    pub(super) over: Cell<bool>,
}

impl World {
    pub(super) fn new() -> World {
        World {
            progress: Cell::new(0),
            client_queue: RefCell::default(),
            client_sending: Cell::new(Sending::Open),
            client_reading: Cell::new(true),
            client_sent: RefCell::default(),
            client_got: RefCell::default(),
            client_closed: Arc::default(),
            broker_queue: RefCell::default(),
            broker_sending: Cell::new(Sending::Open),
            broker_queued: Cell::new(0),
            broker_proper: RefCell::default(),
            broker_sent: RefCell::default(),
            broker_got: RefCell::default(),
            broker_parsed: Cell::new(0),
            broker_owes: RefCell::default(),
            broker_misbehaved: Cell::new(false),
            guard_done: Cell::new(false),
            guard_result: RefCell::new(None),
            cancel: Cell::new(false),
            over: Cell::new(false),
        }
    }

    fn moved(&self) {
        self.progress.set(self.progress.get() + 1);
    }

    pub(super) fn client_write(&self, bytes: Vec<u8>) {
        if !bytes.is_empty() && self.client_sending.get() == Sending::Open {
            self.client_queue.borrow_mut().push_back(bytes);
        }
    }

    /// Queues bytes for the broker to write; `proper` when they are an answer it made.
    pub(super) fn broker_write(&self, bytes: Vec<u8>, proper: bool) {
        if bytes.is_empty() || self.broker_sending.get() != Sending::Open {
            return;
        }
        let start = self.broker_queued.get();
        self.broker_queued.set(start + bytes.len());
        if proper {
            self.broker_proper
                .borrow_mut()
                .push((start, start + bytes.len()));
        }
        self.broker_queue.borrow_mut().push_back(bytes);
    }

    /// Takes the frames the broker received since the last call: those owed an answer (all
    /// but a Produce with acks=0) join `broker_owes`.
    pub(super) fn broker_received(&self) {
        let got = self.broker_got.borrow();
        let mut at = self.broker_parsed.get();
        while let Ok((frame, _)) = split_frame_with_max(&got[at..], usize::MAX) {
            if produce_acks(frame) != Some(0) {
                self.broker_owes
                    .borrow_mut()
                    .push_back(at..at + frame.len());
            }
            at += frame.len();
        }
        self.broker_parsed.set(at);
    }
}

/// Resolves once `ready` says so. It registers no waker: every side runs in the one task,
/// which is polled again whenever any of them moves, and the driver yields after each of
/// its moves.
pub(super) async fn until(ready: impl Fn() -> bool) {
    poll_fn(|_| {
        if ready() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await
}

/// Writes what `queue` holds into `w` (recording it in `sent`) until the side is closed.
pub(super) async fn sender(
    world: &World,
    mut w: WriteHalf<DuplexStream>,
    queue: &RefCell<VecDeque<Vec<u8>>>,
    state: &Cell<Sending>,
    sent: &RefCell<Vec<u8>>,
    on_close: impl Fn(),
) {
    loop {
        until(|| !queue.borrow().is_empty() || state.get() != Sending::Open || world.over.get())
            .await;
        if state.get() == Sending::Gone || world.over.get() {
            break;
        }
        let Some(bytes) = queue.borrow_mut().pop_front() else {
            // Closing, everything written.
            let _ = w.shutdown().await;
            on_close();
            until(|| state.get() == Sending::Gone || world.over.get()).await;
            break;
        };
        let mut at = 0;
        while at < bytes.len() {
            let written = tokio::select! {
                biased;
                () = until(|| state.get() == Sending::Gone || world.over.get()) => None,
                r = w.write(&bytes[at..]) => Some(r),
            };
            match written {
                None => return,
                Some(Ok(n)) if n > 0 => {
                    sent.borrow_mut().extend_from_slice(&bytes[at..at + n]);
                    at += n;
                    world.moved();
                }
                // The guard is gone: nothing more gets through.
                Some(_) => {
                    queue.borrow_mut().clear();
                    until(|| state.get() == Sending::Gone || world.over.get()).await;
                    return;
                }
            }
        }
    }
}

/// Reads from `r` into `got` while `reading` says so, until the end of the stream, or until
/// the side is gone.
pub(super) async fn receiver(
    world: &World,
    mut r: ReadHalf<DuplexStream>,
    got: &RefCell<Vec<u8>>,
    reading: impl Fn() -> bool,
    gone: impl Fn() -> bool,
    on_read: impl Fn(),
) {
    let mut buf = vec![0u8; 16 << 10];
    loop {
        until(|| reading() || gone() || world.over.get()).await;
        if gone() {
            return;
        }
        let n = tokio::select! {
            biased;
            () = until(|| gone() || (!reading() && !world.over.get())) => continue,
            r = r.read(&mut buf) => r,
        };
        match n {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                got.borrow_mut().extend_from_slice(&buf[..n]);
                world.moved();
                on_read();
            }
        }
    }
}

/// Lets the guard and the sides run until nothing moves: two yields in a row with no byte
/// moved (the guard does its work within the polls those yields cause).
pub(super) async fn settle(world: &World) {
    let mut quiet = 0;
    for _ in 0..100_000 {
        let before = world.progress.get();
        tokio::task::yield_now().await;
        if world.progress.get() == before && !world.guard_done.get() {
            quiet += 1;
            if quiet == 2 {
                return;
            }
        } else if world.guard_done.get() {
            return;
        } else {
            quiet = 0;
        }
    }
}
