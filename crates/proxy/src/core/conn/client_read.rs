//! The client's side as read: [`ClientRead`], bytes and word of the client's close even while
//! the guard is not reading it (it waits on the broker), for plain TCP, TLS ([`Probed`]) and
//! in-memory streams. What is read from it is the request pump's.

use std::future::Future;
use std::time::Duration;

use futures_util::FutureExt;
use tokio::io::{AsyncRead, Interest};
use tokio::net::TcpStream;

use crate::core::budget::Metered;

/// A read half of a TLS stream, with a second handle on its socket that sees the client's
/// FIN (`ClientRead::closed`) while the TLS stream's own handle is inside the split.
pub struct Probed<R> {
    pub(super) read: R,
    pub(super) probe: TcpStream,
}

impl<R: AsyncRead + Unpin> AsyncRead for Probed<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.read).poll_read(cx, buf)
    }
}

impl<R: AsyncRead + Unpin + Send + Sync> ClientRead for Probed<R> {
    async fn closed(&self) {
        until_read_closed(|| self.probe.ready(Interest::READABLE)).await
    }
}

/// The client's side of a connection, as read: bytes, and word of the client's close even
/// while the guard is not reading it (it is waiting for the broker).
pub trait ClientRead: AsyncRead + Unpin + Send {
    /// Resolves once the client is known to have closed its side, even with bytes it sent
    /// still unread (a TCP FIN has arrived); never, where the transport cannot tell without
    /// reading.
    fn closed(&self) -> impl Future<Output = ()> + Send + '_;
}

/// How often, while bytes from the client wait unread, the socket is asked whether the
/// client's FIN has come behind them. Without unread bytes the FIN wakes the guard at once.
const CLOSE_PROBE: Duration = Duration::from_millis(250);

impl ClientRead for tokio::net::tcp::ReadHalf<'_> {
    async fn closed(&self) {
        until_read_closed(|| self.ready(Interest::READABLE)).await
    }
}

/// Resolves once `ready` reports the read side closed (or fails).
async fn until_read_closed<F, R>(ready: F)
where
    F: Fn() -> R,
    R: Future<Output = std::io::Result<tokio::io::Ready>>,
{
    loop {
        match ready().await {
            // Closed states are final in tokio's readiness: once seen, always seen.
            Ok(ready) if ready.is_read_closed() => return,
            Err(_) => return,
            // Readable: bytes wait that the guard will read in its turn.
            Ok(_) => tokio::time::sleep(CLOSE_PROBE).await,
        }
    }
}

/// An in-memory stream (the fuzz target's): its close is seen only by reading.
impl<T: AsyncRead + Send> ClientRead for tokio::io::ReadHalf<T> {
    fn closed(&self) -> impl Future<Output = ()> + Send + '_ {
        std::future::pending()
    }
}

impl<R: ClientRead> ClientRead for Metered<R> {
    fn closed(&self) -> impl Future<Output = ()> + Send + '_ {
        self.get_ref().closed()
    }
}

/// Runs `op`, a wait on the broker's side of the connection, unless the client closes
/// meanwhile (None): its close must be seen even while its bytes are not being read.
pub(super) async fn unless_gone<T>(
    client: &impl ClientRead,
    op: impl Future<Output = T>,
) -> Option<T> {
    tokio::pin!(op);
    if let Some(done) = (&mut op).now_or_never() {
        return Some(done);
    }
    tokio::select! {
        done = op => Some(done),
        () = client.closed() => None,
    }
}
