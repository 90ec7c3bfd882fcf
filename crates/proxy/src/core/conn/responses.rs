//! The response pump, broker to client: pairs the broker's answers with the slots queued by
//! the request pump (by correlation id, passing over requests the broker never answers),
//! runs the response filters, and writes every answer in the order of the requests, the
//! filters' own answers in their turn. Closes on a late or unpaired answer.

use std::collections::VecDeque;

use bytes::BytesMut;
use futures_util::{FutureExt, StreamExt};
use kafka_elect_leaders::{peek_response, CodecError, InFlight};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TryRecvError;

use super::frames::{flush, forward, forward_spliced, shrink, FromPeer, ToPeer};
use super::slot::{Slot, MAX_IN_FLIGHT};
use super::timers::{until, Activity};
use crate::core::budget::SMALL_FRAME;
use crate::core::close::{Close, CloseReason};
use crate::core::shared::Shared;
use crate::filter::{Answered, Frame, OnResponse, Response, Session};

enum Next {
    Slot(Option<Slot>),
    Frame(Option<Result<BytesMut, CodecError>>),
    /// An answer owed is past its due time.
    Late,
}

/// Broker to client: answers in the order of the requests.
pub(super) async fn responses<UR: AsyncRead + Unpin, CW: AsyncWrite + Unpin>(
    mut from_upstream: FromPeer<UR>,
    mut to_client: ToPeer<CW>,
    mut slots: mpsc::Receiver<Slot>,
    shared: &Shared,
    session: &Session,
    activity: &Activity,
) -> Result<(), Close> {
    let client_write = Close::write("client");
    let filters = &shared.filters;
    let mut waiting: VecDeque<Slot> = VecDeque::new();
    let mut in_flight = InFlight::<MAX_IN_FLIGHT>::new();
    let mut requests_open = true;
    loop {
        while waiting.front().is_some_and(Slot::is_local) {
            if let Some(slot) = waiting.pop_front() {
                write_answer(shared, &mut to_client, slot, None).await?;
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
                    write_answer(shared, &mut to_client, slot, None).await?;
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
                    write_answer(shared, &mut to_client, slot, None).await?;
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
                        write_answer(shared, &mut to_client, slot, Some(frame)).await?;
                        break;
                    }
                    let mut answer = Response::new(frame);
                    if filters.reads_response(pending.api_key) {
                        for filter in filters.for_response(pending.api_key) {
                            // A splice an earlier filter asked for is made before this one
                            // reads the answer.
                            answer.settle();
                            match filter.response(session, pending, &mut answer) {
                                OnResponse::Pass => {}
                                OnResponse::Splice { head, tail_from } => {
                                    answer.splice(head, tail_from);
                                }
                                OnResponse::Close(close) => {
                                    shared.metrics.filter_closed(filter.name());
                                    return Err(close);
                                }
                            }
                        }
                    }
                    match answer.into_parts() {
                        (frame, Some((head, tail_from))) => {
                            let frame = match frame {
                                Frame::Mut(frame) => frame.freeze(),
                                Frame::Shared(frame) => frame,
                            };
                            forward_spliced(&mut to_client, head, tail_from, &frame).await
                        }
                        (Frame::Mut(frame), None) => forward(&mut to_client, frame).await,
                        (Frame::Shared(frame), None) => forward(&mut to_client, frame).await,
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
/// writes now (from the broker's answer, for a request it forwarded in another form), in a
/// buffer of its own sized once to the answer and dropped once written (a buffer kept for
/// the connection would keep the largest answer's allocation outside the budget).
///
/// A heavy answer (its request, the answer or the broker's answer larger than a small
/// frame) is written off the connection's thread, a core always left to the others
/// (`heavy`): writing the refusal of a 16 MiB request on the worker held up every other
/// connection on its thread (issue 42, item 5: another client's Metadata p50 went from 0.6 ms to
/// 177-304 ms). The pump waits for it, so answers still go out in the order of the
/// requests.
async fn write_answer<W: AsyncWrite + Unpin>(
    shared: &Shared,
    to_client: &mut ToPeer<W>,
    slot: Slot,
    broker: Option<BytesMut>,
) -> Result<(), Close> {
    let Slot::Local(kept) = slot else {
        return Ok(());
    };
    let answer = match kept.write {
        Answered::Frame(frame) => {
            return forward(to_client, frame)
                .await
                .map_err(Close::write("client"))
        }
        Answered::Later(write) => {
            let heavy = kept.heavy || broker.as_ref().is_some_and(|b| b.len() > SMALL_FRAME);
            let job = move || {
                let mut out = BytesMut::new();
                write(broker.as_deref(), &mut out).map(|()| out)
            };
            if heavy {
                shared
                    .heavy
                    .run(job)
                    .await
                    .map_err(|e| Close::new(format!("writing the answer failed: {e}")))??
            } else {
                job()?
            }
        }
    };
    forward(to_client, answer)
        .await
        .map_err(Close::write("client"))
}
