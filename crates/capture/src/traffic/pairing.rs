//! Pairing responses with their requests, per connection ([`Conn`]): the table of the
//! requests waiting within the in-flight budgets ([`Budget`]), and the responses held
//! while they wait for a request they may answer (captured before it, or in doubt after a
//! hole), handed on paired or unpaired and named ([`hand_on`]).
//!
//! Above the framing (a held response waits until the requests' direction has caught up)
//! and the requests in flight; below the analyser, which feeds it frames.

use std::collections::VecDeque;

use super::framing::Dir;
use super::in_flight::{Waiting, IN_FLIGHT_ENTRY_BYTES};
use super::item::{Found, Item, Note, Role, What};
use crate::types::{ConnId, Endpoint};

/// Responses held on one connection, at most, while they wait for the requests they may
/// answer (a response captured before its request); past this the oldest is let go,
/// unpaired, and named.
pub const HELD_RESPONSES: usize = 256;

/// Bytes of responses held on one connection, at most (beyond the first response).
pub const HELD_RESPONSE_BYTES: usize = 8 << 20;

/// A response waiting for its request, or behind one that is (so that responses keep
/// their order).
pub(super) struct Held {
    pub(super) found: Found,
    pub(super) correlation_id: i32,
    /// How far the packet that completed it acknowledged the requests.
    pub(super) acked: Option<u64>,
    /// Whether it may answer a request lost in a hole rather than the one it matches.
    pub(super) doubt: Doubt,
    /// Passed over by the bound on bytes held, and named in a note then.
    pub(super) noted: bool,
}

/// A response whose request, by correlation id, came after a hole in the requests: a
/// request lost there may have had the same id (a client that reuses them), and Kafka
/// answers in order, so the lost one's answer would come first. It waits for the next
/// response of the connection to tell.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Doubt {
    /// No hole before its request, or the next response settled it.
    None,
    /// Waiting for the next response (or the connection's end).
    Open,
    /// The next response had the same correlation id, and no other request waits with it:
    /// this one answers the lost request.
    Reused,
    /// The connection ended before a next response: paired with the request it matches,
    /// and the doubt said in a note.
    Unsettled,
}

pub(super) struct Conn {
    pub(super) a: Endpoint,
    pub(super) syn_seen: bool,
    /// The broker's side, once known.
    pub(super) server: Option<Endpoint>,
    pub(super) dirs: [Dir; 2],
    /// The requests waiting for their responses, oldest first (Kafka answers in order).
    pub(super) waiting: VecDeque<Waiting>,
    /// The bytes of the in-flight budgets `waiting` holds: its room, not its length.
    pub(super) charged: usize,
    /// Requests not kept because the in-flight budget was full (each named in a note).
    pub(super) not_kept: u64,
    /// Responses waiting for their requests, in stream order.
    pub(super) held: VecDeque<Held>,
    pub(super) held_bytes: usize,
}

impl Conn {
    pub(super) fn dir_index(&self, from: Endpoint) -> usize {
        usize::from(from != self.a)
    }

    /// The index of the requests' direction (meaningful once the broker's side is known).
    pub(super) fn requests(&self) -> usize {
        usize::from(self.role(0) != Some(Role::Requests))
    }

    pub(super) fn role(&self, index: usize) -> Option<Role> {
        let server = self.server?;
        Some(if self.dirs[index].to == server {
            Role::Requests
        } else {
            Role::Responses
        })
    }
}

/// The in-flight budgets: per connection, and for all together (what they hold now).
pub(super) struct Budget {
    pub(super) per_conn: usize,
    pub(super) total_limit: usize,
    pub(super) total: usize,
}

impl Budget {
    /// Keeps `w` among `c`'s requests waiting, growing the table within the budgets; else
    /// says which budget is full (the note's words).
    pub(super) fn keep(&mut self, c: &mut Conn, w: Waiting) -> Result<(), String> {
        let q = &mut c.waiting;
        if q.len() == q.capacity() {
            let entry = IN_FLIGHT_ENTRY_BYTES;
            let cap = q.capacity();
            let mut want = (cap * 2).max(8).min(self.per_conn / entry);
            let room = self.total_limit.saturating_sub(self.total) / entry;
            let by_total = want > cap + room;
            want = want.min(cap + room);
            if want <= cap {
                return Err(if by_total {
                    format!(
                        "the requests waiting on all connections fill the reader's in-flight \
                         budget ({} bytes, {entry} per request)",
                        self.total_limit
                    )
                } else {
                    format!(
                        "the {} requests waiting on this connection fill its in-flight budget \
                         ({} bytes, {entry} per request: --max-in-flight-bytes)",
                        q.len(),
                        self.per_conn
                    )
                });
            }
            q.reserve_exact(want - q.len());
            let charged = q.capacity() * entry;
            self.total = (self.total + charged).saturating_sub(c.charged);
            c.charged = charged;
        }
        c.waiting.push_back(w);
        Ok(())
    }

    /// Gives back the room of an empty table that grew for a burst.
    pub(super) fn shrink(&mut self, c: &mut Conn) {
        if c.waiting.is_empty() && c.waiting.capacity() > 64 {
            c.waiting = VecDeque::new();
            self.release(c);
        }
    }

    /// Gives back all of a connection's room (it closed, or its table was replaced).
    pub(super) fn release(&mut self, c: &mut Conn) {
        let charged = c.waiting.capacity() * IN_FLIGHT_ENTRY_BYTES;
        self.total = self.total.saturating_sub(c.charged) + charged;
        c.charged = charged;
    }
}

pub(super) const BEYOND_HELD_BYTES: &str =
    "; it waited for its request when the frames held on all connections reached the \
     reader's bound (--max-held-bytes)";

pub(super) const BEYOND_BOUND: &str =
    "; it waited for its request beyond the bound (256 responses or \
     8 MiB held on the connection)";

/// Hands on the held responses that can be: paired with a request now in flight, or known
/// to have none (the requests' direction has caught up with what the response's packet
/// acknowledged).
pub(super) fn release_held(
    conn: ConnId,
    c: &mut Conn,
    budget: &mut Budget,
    out: &mut dyn FnMut(Item),
) {
    loop {
        settle_front(c, false);
        if !c.held.front().is_some_and(|h| !must_wait(c, h)) {
            break;
        }
        release_front(conn, c, None, budget, out);
    }
    if c.held.is_empty() && c.held.capacity() > 0 {
        // Rare (a response before its request): its room is not kept per connection.
        c.held = VecDeque::new();
    }
}

/// Whether a response must wait for its request: none in flight has its correlation id,
/// and the requests' direction has not caught up with what its packet acknowledged.
pub(super) fn must_wait(c: &Conn, h: &Held) -> bool {
    if h.doubt == Doubt::Open {
        return true;
    }
    h.acked
        .is_some_and(|acked| !c.dirs[c.requests()].caught_up(acked))
        && !c
            .waiting
            .iter()
            .any(|w| w.pending.correlation_id == h.correlation_id)
}

/// Whether a response with `correlation_id` may answer a request lost in a hole: the
/// request it would be paired with, or one older it would leave unanswered, came right
/// after lost bytes.
pub(super) fn in_doubt(c: &Conn, correlation_id: i32) -> bool {
    c.waiting
        .iter()
        .position(|w| w.pending.correlation_id == correlation_id)
        .is_some_and(|at| c.waiting.iter().take(at + 1).any(|w| w.after_gap))
}

/// Settles whom the first held response answers, when it is in doubt (see [`Doubt`]):
/// the next response tells. The same correlation id again, with one request waiting for
/// it: the first answered a request lost in the hole (its id reused), and the request
/// waiting is the next one's. Another id: the first answers the request it matches.
/// Without a next response yet it stays in doubt (`Open`) unless `end` (the connection
/// ended: the request it matches is taken as its own).
pub(super) fn settle_front(c: &mut Conn, end: bool) {
    let Some(front) = c.held.front() else {
        return;
    };
    if matches!(front.doubt, Doubt::Reused | Doubt::Unsettled) || !in_doubt(c, front.correlation_id)
    {
        if let Some(front) = c.held.front_mut() {
            front.doubt = front.doubt.max_reused();
        }
        return;
    }
    let id = front.correlation_id;
    let doubt = match c.held.get(1) {
        Some(next)
            if next.correlation_id == id
                && c.waiting
                    .iter()
                    .filter(|w| w.pending.correlation_id == id)
                    .count()
                    == 1 =>
        {
            // The request waiting is the next answer's, beyond doubt.
            if let Some(w) = c
                .waiting
                .iter_mut()
                .find(|w| w.pending.correlation_id == id)
            {
                w.after_gap = false;
            }
            Doubt::Reused
        }
        Some(_) => Doubt::None,
        None if end => Doubt::Unsettled,
        None => Doubt::Open,
    };
    if let Some(front) = c.held.front_mut() {
        front.doubt = doubt;
    }
}

impl Doubt {
    /// Settled without a doubt, unless it was found reused or left unsettled.
    fn max_reused(self) -> Doubt {
        match self {
            Doubt::Reused | Doubt::Unsettled => self,
            Doubt::None | Doubt::Open => Doubt::None,
        }
    }
}

/// Hands on the first held response (see [`hand_on`]).
pub(super) fn release_front(
    conn: ConnId,
    c: &mut Conn,
    why: Option<&str>,
    budget: &mut Budget,
    out: &mut dyn FnMut(Item),
) {
    if let Some(held) = c.held.pop_front() {
        c.held_bytes = c.held_bytes.saturating_sub(held.found.frame.len());
        hand_on(conn, c, held, why, budget, out);
    }
}

/// Hands on a response: paired if its request is in flight, else unpaired and named
/// (`why` says why it was let go before its request could come).
pub(super) fn hand_on(
    conn: ConnId,
    c: &mut Conn,
    held: Held,
    why: Option<&str>,
    budget: &mut Budget,
    out: &mut dyn FnMut(Item),
) {
    let Held {
        mut found,
        correlation_id,
        acked,
        doubt,
        noted,
    } = held;
    if doubt == Doubt::Reused {
        // Two answers with one correlation id after a hole, one request seen with it: the
        // first answers a request lost in the hole. Not paired with the survivor.
        let o = &found.origin;
        let requests = &c.dirs[c.requests()];
        out(Item::Note(Note {
            conn: Some((conn, o.from, o.to)),
            packet: Some(o.last_packet),
            message: format!(
                "response frame at stream offset {} (correlation id {correlation_id}): \
                 correlation id reused: the next answer has the same id, one request seen \
                 has it, and bytes of the requests ({} -> {}) were lost before that request; \
                 this answer is to a request lost there: its request was not seen, so it \
                 cannot be decoded (not paired with the request seen)",
                o.offset, requests.from, requests.to
            ),
            partial: true,
        }));
        found.what = What::Unpaired { correlation_id };
        out(Item::Frame(found));
        return;
    }
    // The oldest waiting request with its correlation id; the older ones are left
    // unanswered (Kafka answers in order: they never will be).
    let answered = c
        .waiting
        .iter()
        .position(|w| w.pending.correlation_id == correlation_id)
        .map(|at| {
            c.waiting.drain(..at);
            c.waiting.pop_front()
        })
        .and_then(|w| w);
    if let (Some(w), Doubt::Unsettled) = (&answered, doubt) {
        let o = &found.origin;
        out(Item::Note(Note {
            conn: Some((conn, o.from, o.to)),
            packet: Some(o.last_packet),
            message: format!(
                "response frame at stream offset {} (correlation id {correlation_id}): paired \
                 with request frame {}, the one seen with that id, which came after bytes of \
                 the requests were lost; if a request lost there had the same id (a client \
                 that reuses ids), this answer is that one's: no later answer came to tell",
                o.offset, w.asked.index
            ),
            partial: false,
        }));
    }
    if let Some(w) = &answered {
        found.request = Some(w.asked);
        // A burst of requests in flight: its room is not kept per connection.
        budget.shrink(c);
    }
    if let Some(w) =
        answered.filter(|w| w.pending.is_elect_leaders() && !found.is_whole() && !noted)
    {
        // Passed over as it streamed by, its ElectLeaders request not seen yet then (the
        // capture had the answer first) or the bound on bytes held reached: not decoded.
        let o = &found.origin;
        out(Item::Note(Note {
            conn: Some((conn, o.from, o.to)),
            packet: Some(o.first_packet),
            message: format!(
                "response frame at stream offset {} (correlation id {correlation_id}, {} \
                 bytes) answers ElectLeaders request frame {}, but it was passed over as it \
                 streamed by: not decoded",
                o.offset, found.len, w.asked.index
            ),
            partial: true,
        }));
    }
    found.what = match answered.map(|w| w.pending) {
        Some(request) if request.is_elect_leaders() && found.is_whole() => What::ElectResponse {
            version: request.api_version,
        },
        Some(request) => What::Other {
            role: Role::Responses,
            api_key: request.api_key,
            api_version: request.api_version,
            correlation_id,
        },
        None => {
            // An answer to a request lost before the oldest request waiting: if that one
            // came after the hole, the hole's request is answered, the doubt is gone.
            match c.waiting.front_mut() {
                Some(w) => w.after_gap = false,
                None => {
                    let requests = c.requests();
                    c.dirs[requests].lost_since_frame = false;
                }
            }
            // A capture that began mid-connection: a request that ended before the first
            // frame the capture shows was sent before it began; its response is expected
            // alone (listed with the frames of other APIs, as before), not a loss.
            // Its packet acknowledged no more than what came before the first request
            // frame; or, when it acknowledged nothing the capture had (the capture had no
            // byte of the requests yet), it came before the first request frame.
            let requests = &c.dirs[c.requests()];
            let before_capture = !c.syn_seen
                && match acked {
                    Some(a) => requests.first_frame.map_or(true, |f| a <= f),
                    None => requests
                        .first_frame_packet
                        .map_or(true, |p| found.origin.first_packet < p),
                };
            if !before_capture {
                let o = &found.origin;
                // Requests the budget could not keep were named: say so, rather than
                // "not seen" of a request that was printed.
                let whose = if c.not_kept > 0 {
                    format!(
                        "its request was not kept or not seen ({} request(s) of this \
                         connection were not kept for pairing, each named above)",
                        c.not_kept
                    )
                } else {
                    "its request was not seen".to_owned()
                };
                out(Item::Note(Note {
                    conn: Some((conn, o.from, o.to)),
                    packet: Some(o.last_packet),
                    message: format!(
                        "response frame at stream offset {} (correlation id {correlation_id}): \
                         {whose}, so it cannot be decoded{}",
                        o.offset,
                        why.unwrap_or("")
                    ),
                    partial: true,
                }));
            }
            What::Unpaired { correlation_id }
        }
    };
    out(Item::Frame(found));
}
