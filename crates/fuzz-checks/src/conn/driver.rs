//! What moves in a run of the `conn` target: the fake broker's answers, the driver that
//! plays a script's moves and then its finale, and the guard's future, polled with its
//! allocations counted until it finishes or the driver gives up on it.
//!
//! The sides it moves are `world`'s; whether what came out is right is `checks`' to say
//! (the driver itself only fails a guard that does not finish).

use std::future::{poll_fn, Future};

use kafka_elect_leaders::{
    parse_request, peek_request, ElectLeadersResponseData, EncodeResponseExt, ErrorCode,
    PartitionResultData, ReplicaElectionResultData, API_KEY, SIZE_PREFIX_LEN,
};
use tokio::sync::watch;

use super::limits::{
    BROKER_BUDGET, CLIENT_BUDGET, FINISH_WITHIN, FIRST_ID, MAX_FRAME_SIZE, MAX_OPS,
    PARTITION_BUDGET,
};
use super::memory;
use super::requests::seal;
use super::script::{large, End, Op, Request, Script};
use super::world::{settle, until, Sending, World};

/// The fake broker's answer to `request`: for ElectLeaders, a response at the request's
/// version with error 0 for exactly the partitions it names (none when it names all); for
/// the others, the correlation id and `extra` bytes.
pub(super) fn broker_answer(request: &[u8], extra: usize) -> Vec<u8> {
    let peek = peek_request(request).expect("the guard forwards frames with a request header");
    if peek.api_key == API_KEY {
        if let Ok(request) = parse_request(request) {
            let topics: Vec<(&[u8], Vec<PartitionResultData<'_>>)> = request
                .topic_partitions()
                .iter()
                .flat_map(|list| list.iter())
                .map(|t| {
                    let partitions = t
                        .partitions()
                        .iter()
                        .map(|p| PartitionResultData {
                            partition_id: p,
                            error_code: ErrorCode::NONE,
                            error_message: None,
                            tagged_fields: &[],
                        })
                        .collect();
                    (t.topic(), partitions)
                })
                .collect();
            let results: Vec<ReplicaElectionResultData<'_>> = topics
                .iter()
                .map(|(topic, partitions)| ReplicaElectionResultData {
                    topic,
                    partition_result: partitions,
                    tagged_fields: &[],
                })
                .collect();
            let answer = ElectLeadersResponseData {
                correlation_id: peek.correlation_id,
                header_tagged_fields: &[],
                throttle_time_ms: 0,
                error_code: ErrorCode::NONE,
                replica_election_results: &results,
                tagged_fields: &[],
            };
            if let Ok(frame) = answer.encode_to_vec(request.version()) {
                return frame;
            }
        }
    }
    plain_answer(peek.correlation_id, extra)
}

/// `[size][correlation id][extra bytes]`: an answer of any API but ElectLeaders, as far as
/// the guard reads it.
pub(super) fn plain_answer(correlation_id: i32, extra: usize) -> Vec<u8> {
    let mut out = vec![0; SIZE_PREFIX_LEN];
    out.extend_from_slice(&correlation_id.to_be_bytes());
    out.resize(out.len() + extra, 0xa5);
    seal(out)
}

/// Cuts `bytes` at the `cuts` (taken modulo its length), in order.
fn cut(bytes: Vec<u8>, cuts: &[u16]) -> Vec<Vec<u8>> {
    if bytes.len() < 2 {
        return vec![bytes];
    }
    let mut at: Vec<usize> = cuts
        .iter()
        .map(|&c| 1 + usize::from(c) % (bytes.len() - 1))
        .collect();
    at.sort_unstable();
    at.dedup();
    let mut pieces = Vec::with_capacity(at.len() + 1);
    let mut start = 0;
    for end in at {
        pieces.push(bytes[start..end].to_vec());
        start = end;
    }
    pieces.push(bytes[start..].to_vec());
    pieces
}

/// Plays the script: the client's and the broker's moves, then the finale.
pub(super) async fn driver(
    world: &World,
    script: &Script,
    stop: &watch::Sender<bool>,
    lenient: bool,
) {
    let mut next_id = FIRST_ID;
    let mut budget = CLIENT_BUDGET;
    let mut partitions = PARTITION_BUDGET;
    // The next request's frame, with the next id; none once the client's budget is spent.
    let mut frame = |request: &Request| {
        let id = next_id;
        next_id += 1;
        partitions = partitions.checked_sub(request.partitions())?;
        let frame = request.frame(id)?;
        budget = budget.checked_sub(frame.len())?;
        Some(frame)
    };
    // The rest of a frame begun with `Op::Head`: written before the client's next bytes.
    let mut tail: Vec<u8> = Vec::new();
    let mut unknown = 0i32;
    for op in script.ops.iter().take(MAX_OPS) {
        if world.guard_done.get() {
            break;
        }
        match op {
            Op::Send(request) => {
                if let Some(frame) = frame(request) {
                    let mut bytes = std::mem::take(&mut tail);
                    bytes.extend_from_slice(&frame);
                    world.client_write(bytes);
                }
            }
            Op::Pieces { request, cuts, gap } => {
                if let Some(frame) = frame(request) {
                    let mut bytes = std::mem::take(&mut tail);
                    bytes.extend_from_slice(&frame);
                    for piece in cut(bytes, cuts) {
                        world.client_write(piece);
                        settle(world).await;
                        if let Some(gap) = gap {
                            tokio::time::sleep(gap.duration()).await;
                        }
                    }
                }
            }
            Op::Repeat { requests, times } => {
                let requests = &requests[..requests.len().min(4)];
                for _ in 0..2 + usize::from(*times) % 128 {
                    for request in requests {
                        if let Some(frame) = frame(request) {
                            let mut bytes = std::mem::take(&mut tail);
                            bytes.extend_from_slice(&frame);
                            world.client_write(bytes);
                        }
                    }
                }
            }
            Op::Head { request, keep } | Op::Desync { request, keep } => {
                if let Some(frame) = frame(request) {
                    let mut bytes = std::mem::take(&mut tail);
                    let keep = bytes.len() + usize::from(*keep) % frame.len();
                    bytes.extend_from_slice(&frame);
                    let rest = bytes.split_off(keep);
                    world.client_write(bytes);
                    if matches!(op, Op::Head { .. }) {
                        tail = rest;
                    }
                }
            }
            Op::BadSize {
                negative,
                size,
                then,
            } => {
                let size = if *negative {
                    -1 - (*size % i32::MAX as u32) as i32
                } else {
                    let past = MAX_FRAME_SIZE as u32 + 1;
                    (past + *size % (i32::MAX as u32 - past + 1)) as i32
                };
                let mut bytes = std::mem::take(&mut tail);
                bytes.extend_from_slice(&size.to_be_bytes());
                bytes.extend_from_slice(then);
                world.client_write(bytes);
            }
            Op::Answer {
                count,
                pieces,
                extra,
                large: is_large,
            } => {
                let extra = if *is_large {
                    large(*extra)
                } else {
                    16 * usize::from(*extra)
                };
                for _ in 0..=count % 128 {
                    let Some(request) = world.broker_owes.borrow_mut().pop_front() else {
                        break;
                    };
                    let answer = broker_answer(&world.broker_got.borrow()[request], extra);
                    if world.broker_queued.get() + answer.len() > BROKER_BUDGET {
                        break;
                    }
                    let cuts: Vec<u16> = (1..=u16::from(pieces % 4))
                        .map(|i| (extra as u16).wrapping_mul(i).wrapping_add(i * 7))
                        .collect();
                    // The proper span is the whole answer, however it is cut.
                    let start = world.broker_queued.get();
                    let len = answer.len();
                    for piece in cut(answer, &cuts) {
                        world.broker_write(piece, false);
                        settle(world).await;
                    }
                    if world.broker_queued.get() == start + len {
                        world.broker_proper.borrow_mut().push((start, start + len));
                    }
                }
            }
            Op::Skip => {
                world.broker_misbehaved.set(true);
                world.broker_owes.borrow_mut().pop_front();
            }
            Op::UnknownId { extra } => {
                world.broker_misbehaved.set(true);
                // Negative: the client's ids are positive.
                unknown += 1;
                world.broker_write(plain_answer(-unknown, usize::from(*extra)), false);
            }
            Op::Garbage(bytes) => {
                world.broker_misbehaved.set(true);
                world.broker_write(bytes.clone(), false);
            }
            Op::ClientFin => {
                if world.client_sending.get() == Sending::Open {
                    world.client_sending.set(Sending::Closing);
                }
            }
            Op::ClientClose => {
                world.client_sending.set(Sending::Gone);
                world.client_closed.close();
            }
            Op::ClientStopReading => world.client_reading.set(false),
            Op::ClientResumeReading => world.client_reading.set(true),
            Op::BrokerClose => {
                if world.broker_sending.get() == Sending::Open {
                    world.broker_sending.set(Sending::Closing);
                }
            }
            Op::Wait(delay) => tokio::time::sleep(delay.duration()).await,
            Op::Stop => {
                let _ = stop.send(true);
            }
        }
        settle(world).await;
    }

    // The finale.
    if !world.guard_done.get() {
        if script.finale.answer_all {
            loop {
                let Some(request) = world.broker_owes.borrow_mut().pop_front() else {
                    break;
                };
                let answer = broker_answer(&world.broker_got.borrow()[request], 0);
                if world.broker_queued.get() + answer.len() > BROKER_BUDGET {
                    break;
                }
                world.broker_write(answer, true);
                settle(world).await;
            }
        }
        if let Some(linger) = script.finale.linger {
            tokio::time::sleep(linger.duration()).await;
            settle(world).await;
        }
        // The client reads what the guard wrote, for the checks, before it closes.
        if matches!(script.finale.end, End::Both | End::Client) {
            world.client_reading.set(true);
            settle(world).await;
        }
    }
    // The end: the guard must finish.
    let client_closes = || {
        world.client_sending.set(Sending::Gone);
        world.client_closed.close();
    };
    let what = match script.finale.end {
        End::Both => {
            client_closes();
            world.broker_sending.set(Sending::Gone);
            "both sides closed"
        }
        End::Client => {
            client_closes();
            "the client closed"
        }
        End::Broker => {
            world.broker_sending.set(Sending::Gone);
            "the broker closed"
        }
        End::Stop => {
            let _ = stop.send(true);
            "it was told to stop"
        }
    };
    settle(world).await;
    let mut finished = finishes(world).await;
    if !finished && lenient && !matches!(script.finale.end, End::Both) {
        // The known bug: the end was not seen. Both sides close, which must be.
        client_closes();
        world.broker_sending.set(Sending::Gone);
        settle(world).await;
        finished = finishes(world).await;
    }
    if !finished {
        world.cancel.set(true);
        until(|| world.guard_done.get()).await;
        panic!("the guard did not finish within {FINISH_WITHIN:?} of virtual time after {what}");
    }
    client_closes();
    world.broker_sending.set(Sending::Gone);
    world.over.set(true);
    // Wake the task: the sides may be waiting for this, and nothing else will move.
    tokio::task::yield_now().await;
}

/// Whether the guard finishes within [`FINISH_WITHIN`] of virtual time.
async fn finishes(world: &World) -> bool {
    tokio::time::timeout(FINISH_WITHIN, until(|| world.guard_done.get()))
        .await
        .is_ok()
}

/// Runs the guard's future, counting what it allocates, until it finishes or the driver
/// gives up on it.
pub(super) async fn guard(
    world: &World,
    future: impl Future<Output = Result<(), impl std::fmt::Display>>,
) {
    let result = {
        let mut future = Box::pin(future);
        let counted = poll_fn(|cx| {
            let _on = memory::Counting::set(true);
            future.as_mut().poll(cx)
        });
        tokio::select! {
            biased;
            () = until(|| world.cancel.get()) => None,
            r = counted => Some(r.map_err(|e| e.to_string())),
        }
        // The future, with the guard's ends of both pipes, is dropped here: the sides see
        // the connection close.
    };
    if let Some(result) = result {
        *world.guard_result.borrow_mut() = Some(result);
    }
    world.guard_done.set(true);
    // Wake the task: the driver may be waiting for this.
    tokio::task::yield_now().await;
}
