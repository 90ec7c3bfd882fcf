//! The request pump, client to broker: reads the client's frames within the frame timeout,
//! asks the filters that read each API key, queues the request's slot, then forwards the
//! request (or what a filter put in its place). Answers are the response pump's.

use std::sync::Arc;
use std::time::Duration;

use futures_util::{FutureExt, StreamExt};
use kafka_elect_leaders::{peek_request, CodecError};
use tokio::io::AsyncWrite;
use tokio::sync::{mpsc, watch, Semaphore};
use tokio::time::Instant;

use super::client_read::{unless_gone, ClientRead};
use super::frames::{flush, forward, shrink, FromClient, ToPeer};
use super::slot::{keep, send_slot, Slot};
use super::timers::{until, Activity};
use crate::core::budget::SMALL_FRAME;
use crate::core::close::{Close, CloseReason};
use crate::core::response_due::response_due;
use crate::core::shared::Shared;
use crate::filter::{Filter, Frame, OnRequest, Request, Respond, Session};

/// Where a request's chain of filters ended.
enum End {
    /// After the last filter: forwarded (as it came, or as a filter put it).
    Forward,
    /// A filter answers it.
    Answer(Respond),
    /// A filter dropped it.
    Drop,
}

/// What woke the wait for the client's next frame, besides the frame.
enum Wake {
    Stopping,
    Deadline,
}

/// How the client's side ended without an error.
pub(super) enum Ended {
    /// The client closed its connection: answers still owed are dropped, as Kafka's broker
    /// drops them.
    ClientClosed,
    /// The proxy is stopping: answers still owed go out within the grace period.
    Stopping,
}

/// Client to broker: the filters decide, the slot goes in the queue, the request (or what
/// a filter put in its place) is forwarded.
// The pump's two streams, its queue of slots and budget of kept requests, and the
// connection's state: one struct for them would only rename them.
#[allow(clippy::too_many_arguments)]
pub(super) async fn requests<CR: ClientRead, UW: AsyncWrite + Unpin>(
    mut from_client: FromClient<CR>,
    mut to_upstream: ToPeer<UW>,
    slots: mpsc::Sender<Slot>,
    held: Arc<Semaphore>,
    shared: &Shared,
    session: &Session,
    activity: &Activity,
    mut shutdown: watch::Receiver<bool>,
) -> Result<Ended, Close> {
    let upstream_write = Close::write("broker");
    let filters = &shared.filters;
    // The client's account of refused large frames, shared by its connections.
    let refused = shared.refusal_pace.account(session.conn().client.ip());
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
        // Every filter that reads this API key, in order, until one answers, drops or
        // closes; a filter that forwards another frame hands it to the next.
        let api_key = peek.api_key;
        let frame_len = frame.len();
        let mut request = Request::new(frame, peek);
        let mut end = End::Forward;
        // The merges of filters that forwarded another frame, outermost first, and the
        // longest wait a forwarded frame asked the broker for.
        let mut merges: Vec<Respond> = Vec::new();
        let mut wait = Duration::ZERO;
        if filters.reads_request(api_key) {
            // A large frame holds a share of the budget: its filters decide off the
            // worker (see `decide_off_worker`).
            let heavy = share.is_some();
            for filter in filters.for_request(api_key) {
                if let Some(wait) = filter.ready(session, &peek) {
                    or_gone!(wait);
                }
                let outcome = if heavy {
                    let decided = decide_off_worker(shared, filter, session, request);
                    let (decided, back) = or_gone!(decided)?;
                    request = back;
                    decided
                } else {
                    filter.request(session, &mut request)
                };
                match outcome {
                    OnRequest::Pass => {}
                    OnRequest::Forward(forwarded) => {
                        // Held until the filter's gate opens (its audit record
                        // acknowledged), or answered with what the gate says instead.
                        if let Some(gate) = forwarded.gate {
                            if let Err(answer) = or_gone!(gate) {
                                end = End::Answer(answer);
                                break;
                            }
                        }
                        wait = wait.max(forwarded.wait);
                        merges.extend(forwarded.merge);
                        request = Request::forwarded(forwarded.frame, peek);
                    }
                    OnRequest::Answer(answer) => {
                        end = End::Answer(answer);
                        break;
                    }
                    OnRequest::Drop => {
                        shared.metrics.filter_dropped(filter.name());
                        end = End::Drop;
                        break;
                    }
                    OnRequest::Close(close) => {
                        shared.metrics.filter_closed(filter.name());
                        return Err(close);
                    }
                }
            }
        }
        // The merges, each writing its answer from the next one's (the last from the
        // broker's answer, or from a filter's own).
        let merges = merges.into_iter().rev();
        let sent = Instant::now();
        match end {
            End::Forward => {
                let frame = request.into_frame();
                let due = response_due(frame.bytes(), api_key, peek.api_version, 0);
                let merge = match merges.reduce(|inner, outer| Respond::nest(outer, inner)) {
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
                if due.answer || merge.is_some() {
                    let slot = Slot::Forwarded {
                        pending: peek.into(),
                        sent,
                        due: sent + due.wait.max(wait) + shared.request_timeout,
                        merge,
                    };
                    or_gone!(send_slot(&slots, &mut to_upstream, slot))?;
                }
                match frame {
                    Frame::Mut(frame) => or_gone!(forward(&mut to_upstream, frame)),
                    Frame::Shared(frame) => or_gone!(forward(&mut to_upstream, frame)),
                }
                .map_err(&upstream_write)?;
            }
            End::Answer(answer) => {
                drop(request);
                let answer = merges.fold(answer, |inner, outer| Respond::nest(outer, inner));
                let large = share.is_some();
                let kept = or_gone!(keep(&held, &mut to_upstream, shared, answer, share.take()))?;
                or_gone!(send_slot(&slots, &mut to_upstream, Slot::Local(kept)))?;
                // A large frame answered in the broker's place: the client's next frame
                // waits for its pace (`refusal_pace`).
                if large {
                    let now = Instant::now();
                    if let Some(resume) = shared.refusal_pace.charge(&refused, frame_len, now) {
                        shared.metrics.refusal_paced(resume - now);
                        or_gone!(flush(&mut to_upstream)).map_err(&upstream_write)?;
                        let stopping = or_gone!(async {
                            tokio::select! {
                                () = until(Some(resume)) => false,
                                _ = shutdown.wait_for(|stop| *stop) => true,
                            }
                        });
                        if stopping {
                            return Ok(Ended::Stopping);
                        }
                        // A next frame already begun is not timed for the wait.
                        let waited = now.elapsed();
                        let started = &mut from_client.decoder_mut().get_mut().started;
                        *started = started.map(|at| at + waited);
                    }
                }
            }
            End::Drop => drop(request),
        }
        drop(share);
    }
}

/// A filter's decision on a large frame, off the connection's thread, a core always left
/// to the others (`heavy`): on the connection's thread it held up every other connection
/// of that thread (issue 42, item 5). The request moves there and back, not copied; the connection waits for the decision, so its requests stay in
/// order. A small frame is decided in place: the hop would cost more than the decision.
async fn decide_off_worker(
    shared: &Shared,
    filter: &Arc<dyn Filter>,
    session: &Session,
    mut request: Request,
) -> Result<(OnRequest, Request), Close> {
    let (filter, session) = (filter.clone(), session.clone());
    shared
        .heavy
        .run(move || {
            let decided = filter.request(&session, &mut request);
            (decided, request)
        })
        .await
        .map_err(|e| Close::new(format!("a filter failed deciding a request: {e}")))
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
