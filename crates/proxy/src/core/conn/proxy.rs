//! One connection's frames, once both sides are connected: builds the readers, writers and
//! budgets, runs the request and response pumps together, and ends the connection on a
//! close, an error, the idle timeout or a stop (after the grace period).

use std::sync::Arc;

use kafka_elect_leaders::KafkaFrameCodec;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, watch, Notify, Semaphore};
use tokio_util::codec::{FramedRead, FramedWrite};

use super::client_read::ClientRead;
use super::frames::{TimedDecoder, READ_CAPACITY, RESERVE_STEP, WRITE_BOUNDARY};
use super::requests::{requests, Ended};
use super::responses::responses;
use super::slot::MAX_IN_FLIGHT;
use super::timers::{aged_at, drain_when, grace, idle, Activity};
use crate::core::budget::Metered;
use crate::core::close::{Close, CloseReason};
use crate::core::shared::Shared;
use crate::filter::Session;
use crate::filters::sasl::identity::Identity;
use crate::observability::audit::ConnInfo;

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
        Identity::default(),
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
    identity: Identity,
    shared: &Shared,
    shutdown: watch::Receiver<bool>,
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
    // Both sides draw on the client's cap of the reserve: the broker's answers are what its
    // requests asked for.
    let reserve_held = shared.budget.client(conn.client.ip());
    let client_r = Metered::new(client_r, &shared.budget, shared.max_frame_size)
        .for_client(reserve_held.clone());
    let timed = client_r.reserving(timed);
    let from_client = FramedRead::with_capacity(client_r, timed, READ_CAPACITY);
    let mut to_upstream = FramedWrite::new(upstream_w, codec);
    to_upstream.set_backpressure_boundary(WRITE_BOUNDARY);
    let upstream_r =
        Metered::new(upstream_r, &shared.budget, shared.max_frame_size).for_client(reserve_held);
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
    let session = Session::new(*conn, identity, shared);
    // Every filter hears of the connection's end, however it ends (a return, an error, or
    // this future dropped).
    let _closed = Closed {
        filters: &shared.filters,
        session: &session,
    };
    // The connection drains when the proxy stops or when it reaches its maximum age: no
    // new request read, the answers owed written within the drain timeout, then closed.
    let (drain_tx, mut drain) = watch::channel(false);
    let aged = aged_at(
        tokio::time::Instant::now(),
        shared.max_connection_age,
        session.id(),
    );
    let draining = drain_when(shutdown, aged, drain_tx, || shared.metrics.aged());
    let requests = requests(
        from_client,
        to_upstream,
        slots_tx,
        held,
        shared,
        &session,
        &activity,
        drain.clone(),
    );
    let responses = responses(
        from_upstream,
        to_client,
        slots_rx,
        shared,
        &session,
        &activity,
    );
    tokio::pin!(requests, responses, draining);
    // The drain is seen wherever the connection waits: the request side may be blocked on
    // the broker's side (a full queue of answers owed, the budget of requests kept) and
    // not at its own wait for the client, where it watches for the drain itself.
    let mut stopping = drain.clone();
    let ended = tokio::select! {
        r = &mut requests => r?,
        r = &mut responses => return r,
        close = idle(&activity, shared.idle_timeout) => return Err(close),
        () = &mut draining => unreachable!("drain_when never returns"),
        () = grace(&mut stopping, shared.drain_timeout) => return Err(Close::of(CloseReason::Stop,
            "draining (the proxy stops, or the connection reached its maximum age) and the \
             connection is still waiting on the broker after the drain timeout",
        )),
    };
    if let Ended::ClientClosed = ended {
        // Both sockets close as this returns: the slot, the broker connection and every
        // buffer are released now, whatever answers were still owed.
        return Ok(());
    }
    // Draining: the answers still due go out, within the drain timeout.
    tokio::select! {
        r = &mut responses => r,
        () = grace(&mut drain, shared.drain_timeout) => Err(Close::of(CloseReason::Stop,
            "draining (the proxy stops, or the connection reached its maximum age) and \
             answers are still due after the drain timeout",
        )),
    }
}

/// Tells every filter that the connection ended ([`crate::Filter::closed`]) when dropped.
struct Closed<'a> {
    filters: &'a crate::Filters,
    session: &'a Session,
}

impl Drop for Closed<'_> {
    fn drop(&mut self) {
        for filter in self.filters.all() {
            filter.closed(self.session);
        }
    }
}
