//! The connection core: one client connection and its own broker connection; requests go
//! up in order, answers come back in the same order. It knows no API beyond pairing (which
//! requests get no answer, how long a request lets the broker wait: `owed`): what is read
//! and decided is the filters' ([`crate::filter`]), asked in their order for the API keys
//! they read.
//!
//! Both directions run in one task, as two futures:
//! - `requests` reads whole frames from the client (`FramedRead`, `KafkaFrameCodec`), peeks
//!   each header, lets the filters decide, and for every request puts a *slot* into a
//!   bounded channel before the request (or the frame a filter put in its place) is written
//!   upstream: `Forwarded` (its answer through the response filters, or to the filter that
//!   kept it to merge) or `Local` (answered by a filter, nothing sent).
//! - `responses` takes the slots in order. A `Local` slot is answered as soon as every slot
//!   before it is; the broker's frames are paired with the forwarded slots by correlation id
//!   (`InFlight`): a forwarded request the broker skipped (a `Produce` with `acks=0`, which
//!   gets no answer) is passed over, and the local answers queued after it still go out in
//!   their turn.
//!
//! Memory is bounded: each side reads one frame at a time (at most `--max-frame-size`)
//! and does not read the next before the last one was handed on; writes go through
//! `FramedWrite`s that flush past 64 KiB; at most [`MAX_IN_FLIGHT`] requests wait for
//! their answers; and what the filters keep to answer or merge later holds permits of a
//! per-connection budget of `--max-frame-size` bytes and a share of the guard's buffer
//! budget. A slow client thus
//! stops the proxy reading the broker, which stops it reading the client.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::{FutureExt, SinkExt, StreamExt};
use kafka_elect_leaders::{
    peek_request, peek_response, CodecError, InFlight, KafkaFrameCodec, Pending,
};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, Interest};
use tokio::net::TcpStream;
use tokio::sync::mpsc::error::{TryRecvError, TrySendError};
use tokio::sync::{mpsc, watch, Notify, OwnedSemaphorePermit, Semaphore, TryAcquireError};
use tokio::time::Instant;
use tokio_util::codec::{Decoder, FramedRead, FramedWrite};

use crate::audit::{log, ConnInfo};
use crate::budget::{Metered, Reserving, Share, SMALL_FRAME};
use crate::close::{Close, CloseReason};
use crate::filter::{Answer, Answered, Frame, OnRequest, OnResponse, Request, Respond, Session};
use crate::identity::{certificate_subject, Identity};
use crate::owed::owed;
use crate::shared::Shared;
use crate::tls::{handshake_error, Loaded, Tls};

/// Requests of one connection waiting for their answers, at most.
pub const MAX_IN_FLIGHT: usize = 128;
/// How long answers still in flight are waited for once the proxy is told to stop.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);
/// How far ahead of the bytes received a partial frame's buffer is grown at a time: a size
/// prefix alone reserves no more than this.
pub const RESERVE_STEP: usize = 64 * 1024;
/// First read buffer of each side; a larger frame grows it, [`RESERVE_STEP`] at a time.
const READ_CAPACITY: usize = 16 * 1024;
/// A `FramedWrite` writes its buffer out once it holds this much.
const WRITE_BOUNDARY: usize = 64 * 1024;

/// A request's place in the order of answers. A request the broker never answers (a
/// `Produce` with `acks=0`) has none.
enum Slot {
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
struct Kept {
    write: Answered,
    _held: OwnedSemaphorePermit,
    _share: Share,
}

impl Slot {
    fn pending(&self) -> Option<Pending> {
        match self {
            Slot::Forwarded { pending, .. } => Some(*pending),
            Slot::Local(_) => None,
        }
    }

    /// When the broker's answer is late.
    fn due(&self) -> Option<Instant> {
        match self {
            Slot::Forwarded { due, .. } => Some(*due),
            Slot::Local(_) => None,
        }
    }

    /// Answered by the guard, not the broker.
    fn is_local(&self) -> bool {
        matches!(self, Slot::Local(_))
    }
}

/// Serves one accepted client: connects to its upstream, then proxies until either side
/// closes, a frame is malformed, or the proxy stops. `advertised`: the host name of a
/// broker with no route, as it advertised itself (its certificate's name, with TLS).
pub async fn serve(
    client: TcpStream,
    conn: ConnInfo,
    advertised: Option<String>,
    shared: Arc<Shared>,
    shutdown: watch::Receiver<bool>,
) {
    shared.metrics.accepted();
    let stopping = shutdown.clone();
    let reason = serve_client(client, conn, advertised, &shared, shutdown).await;
    let reason = match reason {
        Some(CloseReason::Client) if *stopping.borrow() => Some(CloseReason::Stop),
        reason => reason,
    };
    shared.metrics.closed(reason);
}

/// [`serve`]; how the connection ended (None: the client's TLS handshake failed).
async fn serve_client(
    client: TcpStream,
    conn: ConnInfo,
    advertised: Option<String>,
    shared: &Arc<Shared>,
    shutdown: watch::Receiver<bool>,
) -> Option<CloseReason> {
    let shared = shared.clone();
    let tls = shared.tls.as_ref().map(Tls::current);
    // Kafka's clients and brokers disable Nagle; a proxy that did not would add delay.
    let _ = client.set_nodelay(true);
    let client = client_side(client, &conn, &shared, tls.as_ref()).await?;
    // The principal, and whether the broker will take this client as the guard itself
    // (`--upstream-tls-cert`): then only a client the policy allows goes on (see
    // `identity`), closed here before anything reaches the broker.
    let certificate = match &client {
        ClientSide::Tls(c, _) => subject(c),
        ClientSide::Plain(_) => None,
    };
    let lent = tls.as_ref().is_some_and(Loaded::lends_identity);
    let identity = Identity::new(certificate, lent);
    if let Err(why) = identity.admitted(&shared.policy()) {
        log(format_args!(
            "{} -> {}: closing the client after its TLS handshake: {why}",
            conn.client, conn.listener
        ));
        return None;
    }
    let Some(upstream) = upstream_side(&conn, &shared, tls.as_ref(), advertised.as_deref()).await
    else {
        return Some(CloseReason::Upstream);
    };
    let plain_mode = shared.plain;
    let result = match (client, upstream) {
        (ClientSide::Plain(mut c), UpstreamSide::Plain(mut u)) => {
            if plain_mode {
                plain(&mut c, &mut u, shutdown).await
            } else {
                proxy(c.split(), u.split(), &conn, &shared, shutdown).await
            }
        }
        (ClientSide::Plain(mut c), UpstreamSide::Tls(mut u)) => {
            if plain_mode {
                plain(&mut c, &mut *u, shutdown).await
            } else {
                proxy(c.split(), tokio::io::split(*u), &conn, &shared, shutdown).await
            }
        }
        (ClientSide::Tls(mut c, probe), UpstreamSide::Plain(mut u)) => {
            if plain_mode {
                plain(&mut *c, &mut u, shutdown).await
            } else {
                let (read, write) = tokio::io::split(*c);
                let read = Probed { read, probe };
                let client = (read, write);
                proxy_as(client, u.split(), &conn, &identity, &shared, shutdown).await
            }
        }
        (ClientSide::Tls(mut c, probe), UpstreamSide::Tls(mut u)) => {
            if plain_mode {
                plain(&mut *c, &mut *u, shutdown).await
            } else {
                let (read, write) = tokio::io::split(*c);
                let read = Probed { read, probe };
                let (client, upstream) = ((read, write), tokio::io::split(*u));
                proxy_as(client, upstream, &conn, &identity, &shared, shutdown).await
            }
        }
    };
    match result {
        Ok(()) => Some(CloseReason::Client),
        Err(close) => {
            log(format_args!(
                "{} -> {}: closing the connection: {close}",
                conn.client, conn.upstream
            ));
            Some(close.reason())
        }
    }
}

/// The subject of the client's certificate (mTLS), as Kafka names its principal.
fn subject(tls: &tokio_rustls::server::TlsStream<TcpStream>) -> Option<String> {
    let leaf = tls.get_ref().1.peer_certificates()?.first()?;
    certificate_subject(leaf)
}

/// The client's connection, after its TLS handshake if the guard speaks TLS to clients.
enum ClientSide {
    Plain(TcpStream),
    /// With a second descriptor of the same socket, to see the client's FIN while the TLS
    /// stream is split (see [`Probed`]).
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>, TcpStream),
}

/// The broker connection, after its TLS handshake if the guard speaks TLS to brokers.
enum UpstreamSide {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

/// The client's TLS handshake, within the frame timeout (a client that opens a connection
/// and sends nothing, or half a handshake, is closed then); a failure is one log line and
/// concerns this client alone.
async fn client_side(
    client: TcpStream,
    conn: &ConnInfo,
    shared: &Shared,
    tls: Option<&Loaded>,
) -> Option<ClientSide> {
    let Some(acceptor) = tls.and_then(|tls| tls.acceptor.clone()) else {
        return Some(ClientSide::Plain(client));
    };
    let probe = match duplicate(client) {
        Ok(pair) => pair,
        Err(e) => {
            log(format_args!("{}: closing the client: {e}", conn.client));
            return None;
        }
    };
    let (client, probe) = probe;
    match tokio::time::timeout(shared.frame_timeout, acceptor.accept(client)).await {
        Ok(Ok(stream)) => Some(ClientSide::Tls(Box::new(stream), probe)),
        Ok(Err(e)) => {
            log(format_args!(
                "{} -> {}: TLS handshake with the client failed, closing it: {}",
                conn.client,
                conn.listener,
                handshake_error(&e)
            ));
            None
        }
        Err(_) => {
            log(format_args!(
                "{} -> {}: no TLS handshake from the client within the frame timeout ({:?}), \
                 closing it",
                conn.client, conn.listener, shared.frame_timeout
            ));
            None
        }
    }
}

/// A second tokio handle on the same socket (a duplicated descriptor), for [`Probed`].
fn duplicate(stream: TcpStream) -> std::io::Result<(TcpStream, TcpStream)> {
    let stream = stream.into_std()?;
    let copy = stream.try_clone()?;
    Ok((TcpStream::from_std(stream)?, TcpStream::from_std(copy)?))
}

/// The broker connection and its TLS handshake, together within the upstream connect
/// timeout; a failure closes the client with one log line.
async fn upstream_side(
    conn: &ConnInfo,
    shared: &Shared,
    tls: Option<&Loaded>,
    advertised: Option<&str>,
) -> Option<UpstreamSide> {
    let connect_timeout = shared.upstream_connect_timeout;
    let connector = tls.and_then(|tls| tls.connector.clone());
    let connect = async {
        let upstream = TcpStream::connect(conn.upstream)
            .await
            .map_err(|e| format!("cannot connect to the upstream: {e}"))?;
        let _ = upstream.set_nodelay(true);
        let Some(connector) = connector else {
            return Ok(UpstreamSide::Plain(upstream));
        };
        let name = tls
            .map(|tls| tls.server_name(conn.upstream, advertised))
            .transpose()
            .map_err(|e| e.to_string())?
            .unwrap_or_else(|| conn.upstream.ip().into());
        connector
            .connect(name, upstream)
            .await
            .map(|stream| UpstreamSide::Tls(Box::new(stream)))
            .map_err(|e| {
                format!(
                    "TLS handshake with the upstream failed: {}",
                    handshake_error(&e)
                )
            })
    };
    match tokio::time::timeout(connect_timeout, connect).await {
        Ok(Ok(upstream)) => Some(upstream),
        Ok(Err(e)) => {
            log(format_args!(
                "{} -> {}: {e}; closing the client",
                conn.client, conn.upstream
            ));
            None
        }
        Err(_) => {
            log(format_args!(
                "{} -> {}: no connection to the upstream after {:?}, closing the client",
                conn.client, conn.upstream, connect_timeout
            ));
            None
        }
    }
}

/// A read half of a TLS stream, with a second handle on its socket that sees the client's
/// FIN (`ClientRead::closed`) while the TLS stream's own handle is inside the split.
pub struct Probed<R> {
    read: R,
    probe: TcpStream,
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

type FromPeer<R> = FramedRead<Metered<R>, Reserving<KafkaFrameCodec>>;
type FromClient<R> = FramedRead<Metered<R>, Reserving<TimedDecoder>>;
type ToPeer<W> = FramedWrite<W, KafkaFrameCodec>;

/// The client's frames, with the time the frame still partial began to arrive: what the
/// frame timeout counts from. `decode` runs after every read, so the time is the read's.
struct TimedDecoder {
    codec: KafkaFrameCodec,
    started: Option<Instant>,
    /// Told when a frame begins, so that a wait armed for the idle timeout re-arms for the
    /// frame timeout: the frame's first bytes arrive while the guard waits for them.
    began: Arc<Notify>,
}

impl Decoder for TimedDecoder {
    type Item = BytesMut;
    type Error = CodecError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<BytesMut>, CodecError> {
        let frame = self.codec.decode(src)?;
        let was_started = self.started.is_some();
        if frame.is_some() || src.is_empty() {
            // What is left (if anything) is the next frame, begun with this read.
            self.started = (!src.is_empty()).then(Instant::now);
        } else if self.started.is_none() {
            self.started = Some(Instant::now());
        }
        if self.started.is_some() && (!was_started || frame.is_some()) {
            self.began.notify_one();
        }
        Ok(frame)
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<BytesMut>, CodecError> {
        self.codec.decode_eof(src)
    }
}

/// When a frame last went either way: milliseconds since the connection began. Both
/// directions run in one task; an atomic keeps the future `Send`.
struct Activity {
    since: Instant,
    last: AtomicU64,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            since: Instant::now(),
            last: AtomicU64::new(0),
        }
    }

    fn touch(&self) {
        let ms = self.since.elapsed().as_millis();
        self.last
            .store(u64::try_from(ms).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    fn last(&self) -> Instant {
        self.since + Duration::from_millis(self.last.load(Ordering::Relaxed))
    }
}

/// What woke the wait for the client's next frame, besides the frame.
enum Wake {
    Stopping,
    Deadline,
}

/// How the client's side ended without an error.
enum Ended {
    /// The client closed its connection: answers still owed are dropped, as Kafka's broker
    /// drops them.
    ClientClosed,
    /// The proxy is stopping: answers still owed go out within the grace period.
    Stopping,
}

/// Proxies one connection, given both sides split into their reading and writing halves,
/// until either side closes, a frame is malformed, a timeout passes or the proxy stops.
pub async fn proxy<CR, CW, UR, UW>(
    client: (CR, CW),
    upstream: (UR, UW),
    conn: &ConnInfo,
    shared: &Shared,
    shutdown: watch::Receiver<bool>,
) -> Result<(), Close>
where
    CR: ClientRead,
    CW: AsyncWrite + Unpin + Send,
    UR: AsyncRead + Unpin + Send,
    UW: AsyncWrite + Unpin + Send,
{
    proxy_as(
        client,
        upstream,
        conn,
        &Identity::default(),
        shared,
        shutdown,
    )
    .await
}

/// [`proxy`], for a client whose identity starts as `identity` (its certificate's).
pub async fn proxy_as<CR, CW, UR, UW>(
    (client_r, client_w): (CR, CW),
    (upstream_r, upstream_w): (UR, UW),
    conn: &ConnInfo,
    identity: &Identity,
    shared: &Shared,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), Close>
where
    CR: ClientRead,
    CW: AsyncWrite + Unpin + Send,
    UR: AsyncRead + Unpin + Send,
    UW: AsyncWrite + Unpin + Send,
{
    let codec = KafkaFrameCodec::new()
        .with_max_frame_size(shared.max_frame_size)
        .with_max_reserve(RESERVE_STEP);
    let timed = TimedDecoder {
        codec,
        started: None,
        began: Arc::new(Notify::new()),
    };
    let client_r = Metered::new(client_r, &shared.budget, shared.max_frame_size);
    let timed = client_r.reserving(timed);
    let from_client = FramedRead::with_capacity(client_r, timed, READ_CAPACITY);
    let mut to_upstream = FramedWrite::new(upstream_w, codec);
    to_upstream.set_backpressure_boundary(WRITE_BOUNDARY);
    let upstream_r = Metered::new(upstream_r, &shared.budget, shared.max_frame_size);
    let upstream_codec = upstream_r.reserving(codec);
    let from_upstream = FramedRead::with_capacity(upstream_r, upstream_codec, READ_CAPACITY);
    let mut to_client = FramedWrite::new(client_w, codec);
    to_client.set_backpressure_boundary(WRITE_BOUNDARY);

    let (slots_tx, slots_rx) = mpsc::channel(MAX_IN_FLIGHT);
    let budget = shared
        .max_frame_size
        .saturating_add(kafka_elect_leaders::SIZE_PREFIX_LEN)
        .min(Semaphore::MAX_PERMITS)
        .min(u32::MAX as usize);
    let held = Arc::new(Semaphore::new(budget));
    let activity = Activity::new();
    let session = Session::new(conn, identity, shared);
    let requests = requests(
        from_client,
        to_upstream,
        slots_tx,
        held,
        &session,
        &activity,
        shutdown.clone(),
    );
    let responses = responses(from_upstream, to_client, slots_rx, &session, &activity);
    tokio::pin!(requests, responses);
    // The stop is seen wherever the connection waits: the request side may be blocked on
    // the broker's side (a full queue of answers owed, the budget of requests kept) and
    // not at its own wait for the client, where it watches for the stop itself.
    let mut stopping = shutdown.clone();
    let ended = tokio::select! {
        r = &mut requests => r?,
        r = &mut responses => return r,
        close = idle(&activity, shared.idle_timeout) => return Err(close),
        () = grace(&mut stopping) => return Err(Close::of(CloseReason::Stop,
            "the proxy is stopping and the connection is still waiting on the broker after \
             the grace period",
        )),
    };
    if let Ended::ClientClosed = ended {
        // Both sockets close as this returns: the slot, the broker connection and every
        // buffer are released now, whatever answers were still owed.
        return Ok(());
    }
    // The proxy is stopping: the answers still due go out, within the grace period.
    tokio::select! {
        r = &mut responses => r,
        () = grace(&mut shutdown) => Err(Close::of(CloseReason::Stop,
            "the proxy is stopping and answers are still due after the grace period",
        )),
    }
}

/// Resolves once no frame went either way for `timeout`, wherever the connection waits:
/// for the client, for the broker, or for a client that does not read its answers.
async fn idle(activity: &Activity, timeout: Duration) -> Close {
    loop {
        let at = activity.last() + timeout;
        if at <= Instant::now() {
            return Close::of(
                CloseReason::Idle,
                format!("idle: no frame either way within the idle timeout ({timeout:?})"),
            );
        }
        tokio::time::sleep_until(at).await;
    }
}

/// Sleeps until `deadline`, or for ever without one.
async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Runs `op`, a wait on the broker's side of the connection, unless the client closes
/// meanwhile (None): its close must be seen even while its bytes are not being read.
async fn unless_gone<T>(client: &impl ClientRead, op: impl Future<Output = T>) -> Option<T> {
    tokio::pin!(op);
    if let Some(done) = (&mut op).now_or_never() {
        return Some(done);
    }
    tokio::select! {
        done = op => Some(done),
        () = client.closed() => None,
    }
}

/// After a frame larger than the base buffer, a fresh base buffer with what is left: the
/// buffer left behind by the frame still shares the frame's allocation (whatever capacity
/// it shows), and would take it over once the frame is dropped, keeping it for the
/// connection's lifetime, outside the budget.
fn shrink(buffer: &mut BytesMut) {
    let mut fresh = BytesMut::with_capacity(READ_CAPACITY.max(buffer.len()));
    fresh.extend_from_slice(buffer);
    *buffer = fresh;
}

/// Hands a frame to a `FramedWrite`: a large one is written straight to its socket, after
/// what is buffered, rather than copied into the buffer.
async fn forward<W, F>(to: &mut ToPeer<W>, frame: F) -> Result<(), CodecError>
where
    W: AsyncWrite + Unpin,
    F: AsRef<[u8]>,
    KafkaFrameCodec: tokio_util::codec::Encoder<F, Error = CodecError>,
{
    if frame.as_ref().len() <= WRITE_BOUNDARY {
        return to.feed(frame).await;
    }
    flush(to).await?;
    to.get_mut().write_all(frame.as_ref()).await?;
    Ok(())
}

/// An answer a filter spliced: its new head, then the rest of the broker's `frame` from
/// `tail_from` on, as it came. A large one goes out in two writes, the tail (most of a
/// Metadata answer) never copied.
async fn forward_spliced<W: AsyncWrite + Unpin>(
    to: &mut ToPeer<W>,
    head: BytesMut,
    tail_from: usize,
    frame: &Bytes,
) -> Result<(), CodecError> {
    let tail = frame.get(tail_from..).unwrap_or_default();
    if head.len() + tail.len() <= WRITE_BOUNDARY {
        let mut whole = BytesMut::with_capacity(head.len() + tail.len());
        whole.extend_from_slice(&head);
        whole.extend_from_slice(tail);
        return to.feed(whole).await;
    }
    flush(to).await?;
    let w = to.get_mut();
    w.write_all(&head).await?;
    w.write_all(tail).await?;
    Ok(())
}

/// Resolves [`SHUTDOWN_GRACE`] after the proxy was told to stop.
async fn grace(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
    tokio::time::sleep(SHUTDOWN_GRACE).await;
}

/// Client to broker: the filters decide, the slot goes in the queue, the request (or what
/// a filter put in its place) is forwarded.
async fn requests<CR: ClientRead, UW: AsyncWrite + Unpin>(
    mut from_client: FromClient<CR>,
    mut to_upstream: ToPeer<UW>,
    slots: mpsc::Sender<Slot>,
    held: Arc<Semaphore>,
    session: &Session<'_>,
    activity: &Activity,
    mut shutdown: watch::Receiver<bool>,
) -> Result<Ended, Close> {
    let upstream_write = Close::write("broker");
    let shared = session.shared;
    let filters = &shared.filters;
    // Every wait on the broker's side (a full queue of answers owed, the budget of requests
    // kept, a broker not reading) also watches for the client's close.
    macro_rules! or_gone {
        ($op:expr) => {
            match unless_gone(from_client.get_ref(), $op).await {
                Some(done) => done,
                None => return Ok(Ended::ClientClosed),
            }
        };
    }
    loop {
        // Flush what was written before waiting for the client; never wait with requests
        // unsent, or their answers (and the client) would wait for them.
        let next = match from_client.next().now_or_never() {
            Some(next) => next,
            None => {
                or_gone!(flush(&mut to_upstream)).map_err(&upstream_write)?;
                let began = from_client.decoder().get_ref().began.clone();
                loop {
                    let deadline = frame_deadline(&from_client, shared);
                    let wake = tokio::select! {
                        next = from_client.next() => break next,
                        _ = shutdown.wait_for(|stop| *stop) => Wake::Stopping,
                        () = until(deadline) => Wake::Deadline,
                        // A frame began: there is now a frame timeout to wait for.
                        () = began.notified() => continue,
                    };
                    if let Wake::Stopping = wake {
                        or_gone!(flush(&mut to_upstream)).map_err(&upstream_write)?;
                        return Ok(Ended::Stopping);
                    }
                    if frame_deadline(&from_client, shared).is_some_and(|at| at <= Instant::now()) {
                        return Err(frame_timed_out(&from_client, shared));
                    }
                }
            }
        };
        let frame = match next {
            None => return Ok(Ended::ClientClosed),
            Some(Ok(frame)) => frame,
            // A TLS client that closed between frames without TLS's close_notify (many
            // do): a close like any other; inside a frame, it is still an error.
            Some(Err(CodecError::Io(e)))
                if e.kind() == std::io::ErrorKind::UnexpectedEof
                    && from_client.read_buffer().is_empty() =>
            {
                return Ok(Ended::ClientClosed)
            }
            Some(Err(e)) => return Err(Close::client_read(e)),
        };
        activity.touch();
        // A large frame comes with its share of the buffer budget, given back once the
        // frame is forwarded or answered.
        let mut share = if frame.len() > SMALL_FRAME {
            shrink(from_client.read_buffer_mut());
            from_client.get_mut().take_share()
        } else {
            None
        };
        let peek = peek_request(&frame).map_err(|e| {
            Close::of(
                CloseReason::Malformed,
                format!("malformed request header from the client: {e}"),
            )
        })?;
        shared.metrics.frame(peek.api_key, "request", frame.len());
        // The filters that read this API key, in order, until one decides.
        let api_key = peek.api_key;
        let mut request = Request::new(frame, peek);
        let mut outcome = OnRequest::Pass;
        if filters.reads_request(api_key) {
            for filter in filters.for_request(api_key) {
                if let Some(wait) = filter.ready(session, &peek) {
                    or_gone!(wait);
                }
                outcome = filter.request(session, &mut request);
                if !matches!(outcome, OnRequest::Pass) {
                    break;
                }
            }
        }
        let sent = Instant::now();
        match outcome {
            OnRequest::Pass => {
                let owed = owed(request.frame(), api_key, peek.api_version, 0);
                if owed.answer {
                    let slot = Slot::Forwarded {
                        pending: peek.into(),
                        sent,
                        due: sent + owed.wait + shared.request_timeout,
                        merge: None,
                    };
                    or_gone!(send_slot(&slots, &mut to_upstream, slot))?;
                }
                match request.into_frame() {
                    Frame::Mut(frame) => or_gone!(forward(&mut to_upstream, frame)),
                    Frame::Shared(frame) => or_gone!(forward(&mut to_upstream, frame)),
                }
                .map_err(&upstream_write)?;
            }
            OnRequest::Forward(forwarded) => {
                drop(request);
                let owed = owed(&forwarded.frame, api_key, peek.api_version, 0);
                let merge = match forwarded.merge {
                    Some(merge) => Some(or_gone!(keep(
                        &held,
                        &mut to_upstream,
                        shared,
                        merge,
                        share.take()
                    ))?),
                    None => None,
                };
                // A request a filter keeps to merge its answer is always answered.
                if owed.answer || merge.is_some() {
                    let slot = Slot::Forwarded {
                        pending: peek.into(),
                        sent,
                        due: sent + owed.wait.max(forwarded.wait) + shared.request_timeout,
                        merge,
                    };
                    or_gone!(send_slot(&slots, &mut to_upstream, slot))?;
                }
                or_gone!(forward(&mut to_upstream, forwarded.frame)).map_err(&upstream_write)?;
            }
            OnRequest::Answer(answer) => {
                drop(request);
                let kept = or_gone!(keep(&held, &mut to_upstream, shared, answer, share.take()))?;
                or_gone!(send_slot(&slots, &mut to_upstream, Slot::Local(kept)))?;
            }
            OnRequest::Close(close) => return Err(close),
        }
        drop(share);
    }
}

/// When the client's frame begun must be whole: the frame timeout after it began.
fn frame_deadline<R>(from_client: &FromClient<R>, shared: &Shared) -> Option<Instant> {
    from_client
        .decoder()
        .get_ref()
        .started
        .map(|started| started + shared.frame_timeout)
}

/// Why the client's side timed out, for the log.
fn frame_timed_out<R>(from_client: &FromClient<R>, shared: &Shared) -> Close {
    Close::of(
        CloseReason::Timeout,
        format!(
            "the client's frame was not whole within the frame timeout ({:?}; {} bytes received)",
            shared.frame_timeout,
            from_client.read_buffer().len()
        ),
    )
}

/// Puts a slot in the queue; when the queue is full, flushes the broker side first (the
/// answers that would make room may be waiting for requests still in the buffer).
async fn send_slot<W: AsyncWrite + Unpin>(
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
async fn hold<W: AsyncWrite + Unpin>(
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
async fn keep<W: AsyncWrite + Unpin>(
    held: &Arc<Semaphore>,
    to_upstream: &mut ToPeer<W>,
    shared: &Shared,
    answer: Respond,
    read_share: Option<Share>,
) -> Result<Kept, Close> {
    let permits = answer.holds.min(shared.max_frame_size);
    let kept = hold(held, to_upstream, permits).await?;
    let later = matches!(answer.write, Answered::Later(_));
    let share = match read_share {
        Some(share) if later => share,
        _ => budget_share(shared, to_upstream, answer.holds).await?,
    };
    Ok(Kept {
        write: answer.write,
        _held: kept,
        _share: share,
    })
}

/// A share of the guard's buffer budget for `len` bytes kept ([`keep`]): a request kept to
/// answer or merge (issue 35, finding 5: small ones were kept outside the budget, up to 128 of
/// them a connection), or an answer the guard wrote. Flushes the broker side before
/// waiting, as `hold` does.
async fn budget_share<W: AsyncWrite + Unpin>(
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

/// Writes out what a `FramedWrite` holds (its items are frames, whichever type they came as).
async fn flush<W: AsyncWrite + Unpin>(to: &mut ToPeer<W>) -> Result<(), CodecError> {
    SinkExt::<BytesMut>::flush(to).await
}

enum Next {
    Slot(Option<Slot>),
    Frame(Option<Result<BytesMut, CodecError>>),
    /// An answer owed is past its due time.
    Late,
}

/// Broker to client: answers in the order of the requests.
async fn responses<UR: AsyncRead + Unpin, CW: AsyncWrite + Unpin>(
    mut from_upstream: FromPeer<UR>,
    mut to_client: ToPeer<CW>,
    mut slots: mpsc::Receiver<Slot>,
    session: &Session<'_>,
    activity: &Activity,
) -> Result<(), Close> {
    let client_write = Close::write("client");
    let shared = session.shared;
    let filters = &shared.filters;
    let mut waiting: VecDeque<Slot> = VecDeque::new();
    let mut in_flight = InFlight::<MAX_IN_FLIGHT>::new();
    let mut requests_open = true;
    let mut scratch = BytesMut::new();
    loop {
        while waiting.front().is_some_and(Slot::is_local) {
            if let Some(slot) = waiting.pop_front() {
                write_answer(&mut to_client, slot, None, &mut scratch).await?;
            }
        }
        if !requests_open && waiting.is_empty() {
            return flush(&mut to_client).await.map_err(&client_write);
        }
        let room = requests_open && waiting.len() < MAX_IN_FLIGHT;
        let ready = if room {
            match slots.try_recv() {
                Ok(slot) => Some(Next::Slot(Some(slot))),
                Err(TryRecvError::Disconnected) => Some(Next::Slot(None)),
                Err(TryRecvError::Empty) => None,
            }
        } else {
            None
        };
        let next = match ready {
            Some(next) => next,
            None => match from_upstream.next().now_or_never() {
                Some(frame) => Next::Frame(frame),
                None => {
                    flush(&mut to_client).await.map_err(&client_write)?;
                    let due = waiting.iter().filter_map(Slot::due).min();
                    tokio::select! {
                        slot = slots.recv(), if room => Next::Slot(slot),
                        frame = from_upstream.next() => Next::Frame(frame),
                        () = until(due) => Next::Late,
                    }
                }
            },
        };
        let frame = match next {
            Next::Late => return Err(late(&waiting, shared)),
            Next::Slot(None) => {
                requests_open = false;
                continue;
            }
            Next::Slot(Some(slot)) => {
                if let Some(pending) = slot.pending() {
                    in_flight
                        .push(pending)
                        .map_err(|e| Close::new(format!("{e}")))?;
                }
                waiting.push_back(slot);
                continue;
            }
            Next::Frame(None) => {
                // What the broker answered before it closed goes out first (a failed SASL
                // authentication's answer comes with the close).
                flush(&mut to_client).await.map_err(&client_write)?;
                return Err(Close::of(
                    CloseReason::Upstream,
                    format!(
                        "the broker closed the connection ({} requests unanswered)",
                        waiting.len()
                    ),
                ));
            }
            Next::Frame(Some(Err(e))) => {
                // The whole answers the broker sent before what could not be read (a
                // malformed frame, a close inside one, a reset) go out first, as before a
                // clean close; the error stays the reason the connection is closed.
                let _ = flush(&mut to_client).await;
                return Err(Close::upstream_read(e));
            }
            Next::Frame(Some(Ok(frame))) => {
                activity.touch();
                frame
            }
        };
        let _share = if frame.len() > SMALL_FRAME {
            shrink(from_upstream.read_buffer_mut());
            from_upstream.get_mut().take_share()
        } else {
            None
        };
        let correlation_id = peek_response(&frame)
            .map_err(|e| {
                Close::of(
                    CloseReason::Malformed,
                    format!("malformed response header from the broker: {e}"),
                )
            })?
            .correlation_id;
        let answered = loop {
            if let Some(answered) = in_flight.answer(correlation_id) {
                break answered;
            }
            // The request's slot was put in the channel before the request was written, so
            // it is there if not taken yet.
            if waiting.len() >= MAX_IN_FLIGHT {
                // No room to take it: every forwarded request waiting is older than the one
                // answered, and Kafka answers in order, so none of them will be answered.
                in_flight.clear();
                while let Some(slot) = waiting.pop_front() {
                    write_answer(&mut to_client, slot, None, &mut scratch).await?;
                }
            }
            match slots.try_recv() {
                Ok(slot) => {
                    if let Some(pending) = slot.pending() {
                        in_flight
                            .push(pending)
                            .map_err(|e| Close::new(format!("{e}")))?;
                    }
                    waiting.push_back(slot);
                }
                Err(_) => {
                    return Err(Close::of(
                        CloseReason::Malformed,
                        format!(
                        "the broker answered correlation id {correlation_id}, which no request \
                         waits for"
                    ),
                    ))
                }
            }
        };
        let mut skipped = answered.skipped;
        loop {
            let Some(slot) = waiting.pop_front() else {
                return Err(Close::new("answer queue out of step"));
            };
            match slot {
                Slot::Local(_) => {
                    write_answer(&mut to_client, slot, None, &mut scratch).await?;
                }
                // The broker answered a later request: this one gets no answer (a Produce
                // with acks=0).
                _ if skipped > 0 => skipped -= 1,
                Slot::Forwarded {
                    pending,
                    sent,
                    merge,
                    ..
                } => {
                    shared
                        .metrics
                        .frame(pending.api_key, "response", frame.len());
                    shared.metrics.round_trip(pending.api_key, sent.elapsed());
                    if let Some(merge) = merge {
                        let slot = Slot::Local(merge);
                        write_answer(&mut to_client, slot, Some(&frame), &mut scratch).await?;
                        break;
                    }
                    let mut answer = Answer::new(frame);
                    let mut splice = None;
                    if filters.reads_response(pending.api_key) {
                        for filter in filters.for_response(pending.api_key) {
                            match filter.response(session, pending, &mut answer) {
                                OnResponse::Pass => {}
                                OnResponse::Splice { head, tail_from } => {
                                    splice = Some((head, tail_from));
                                    break;
                                }
                                OnResponse::Close(close) => return Err(close),
                            }
                        }
                    }
                    match splice {
                        Some((head, tail_from)) => {
                            let frame = answer.frame_bytes().clone();
                            forward_spliced(&mut to_client, head, tail_from, &frame).await
                        }
                        None => match answer.into_frame() {
                            Frame::Mut(frame) => forward(&mut to_client, frame).await,
                            Frame::Shared(frame) => forward(&mut to_client, frame).await,
                        },
                    }
                    .map_err(&client_write)?;
                    break;
                }
            }
        }
    }
}

/// Why the connection is closed when an answer owed is late: the broker is stuck, or lost
/// the request. Kafka's clients do the same at their own request timeout: close, and send
/// again on a new connection.
fn late(waiting: &VecDeque<Slot>, shared: &Shared) -> Close {
    let oldest = waiting
        .iter()
        .filter_map(|slot| Some((slot.due()?, slot.pending()?)))
        .min_by_key(|&(due, _)| due);
    match oldest {
        Some((_, pending)) => {
            Close::of(
                CloseReason::Timeout,
                format!(
            "the broker did not answer correlation id {} (api key {}, v{}) within the request \
             timeout ({:?}, after the wait the request asks for)",
            pending.correlation_id, pending.api_key, pending.api_version, shared.request_timeout
        ),
            )
        }
        None => Close::of(CloseReason::Timeout, "an answer owed is late"),
    }
}

/// Writes the answer a filter kept for a `Local` slot: the frame it wrote, or the one it
/// writes now (from the broker's answer, for a request it forwarded in another form).
async fn write_answer<W: AsyncWrite + Unpin>(
    to_client: &mut ToPeer<W>,
    slot: Slot,
    broker: Option<&[u8]>,
    scratch: &mut BytesMut,
) -> Result<(), Close> {
    let Slot::Local(kept) = slot else {
        return Ok(());
    };
    match kept.write {
        Answered::Frame(frame) => forward(to_client, frame)
            .await
            .map_err(Close::write("client")),
        Answered::Later(write) => {
            scratch.clear();
            write(broker, scratch)?;
            to_client
                .feed(scratch.split())
                .await
                .map_err(Close::write("client"))
        }
    }
}

/// The hidden `--plain` mode: bytes copied both ways, no frame looked at.
async fn plain<C, U>(
    client: &mut C,
    upstream: &mut U,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), Close>
where
    C: AsyncRead + AsyncWrite + Unpin + ?Sized,
    U: AsyncRead + AsyncWrite + Unpin + ?Sized,
{
    tokio::select! {
        r = tokio::io::copy_bidirectional_with_sizes(
            client, upstream, WRITE_BOUNDARY, WRITE_BOUNDARY,
        ) => r.map(|_| ()).map_err(|e| Close::new(format!("copying: {e}"))),
        _ = shutdown.wait_for(|stop| *stop) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 23, finding 8: a broker that hung up inside a frame was reported as sending a
    /// malformed frame.
    #[test]
    fn a_broker_gone_mid_frame_is_not_called_malformed() {
        let mut codec = KafkaFrameCodec::new();
        let mut cut = BytesMut::from(&[0, 0, 0, 20, 0, 0, 0, 7][..]);
        let e = codec.decode_eof(&mut cut).unwrap_err();
        let close = Close::upstream_read(e).to_string();
        assert_eq!(
            close,
            "the broker closed the connection inside a frame (16 bytes missing)"
        );
        let mut negative = BytesMut::from(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 7][..]);
        let e = codec.decode(&mut negative).unwrap_err();
        assert!(Close::upstream_read(e)
            .to_string()
            .starts_with("malformed frame from the broker"));
    }
}
