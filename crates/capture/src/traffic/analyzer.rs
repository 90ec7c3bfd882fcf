//! The analyser ([`Analyzer`]): capture events in, items out. It opens and closes each
//! connection's state, tells the broker's side from the client's, cuts each direction
//! into frames (with `framing`'s boundaries), and hands requests and responses to the
//! pairing; gaps and closes become notes.
//!
//! The top of the Kafka layer but for the iterator over a capture file (`iter`).

use std::collections::{HashMap, VecDeque};

use kafka_elect_leaders::{
    api_name, never_answered, peek_request, peek_response, split_frame_with_max, Pending,
    DEFAULT_MAX_FRAME_SIZE, SIZE_PREFIX_LEN,
};

use super::framing::{find_boundary, Dir, PASS_OVER_HEAD};
use super::in_flight::Waiting;
use super::item::{Asked, Found, Item, Note, Origin, Role, What};
use super::pairing::{
    hand_on, in_doubt, must_wait, release_front, release_held, settle_front, Budget, Conn, Doubt,
    Held, BEYOND_BOUND, BEYOND_HELD_BYTES, HELD_RESPONSES, HELD_RESPONSE_BYTES,
};
use crate::types::{ConnId, Event, Limits};

/// The broker's port, unless `--port` says otherwise.
pub const DEFAULT_PORT: u16 = 9092;

/// The connections of one capture.
pub struct Analyzer {
    port: u16,
    max_frame: usize,
    conns: HashMap<ConnId, Conn>,
    budget: Budget,
    /// Bytes of frames held on all connections ([`conn_bytes`]), and the bound on them.
    held: usize,
    held_limit: usize,
}

/// Bytes of frames a connection holds: its directions' buffers and heads, and the
/// responses waiting for their requests.
fn conn_bytes(c: &Conn) -> usize {
    c.dirs[0].held_bytes() + c.dirs[1].held_bytes() + c.held_bytes
}

impl Analyzer {
    /// An analyser that takes `port` for the broker's (9092 when `None`); a connection
    /// whose two ports are both other than it falls back on the SYN, then on which side
    /// sends request headers.
    pub fn new(port: Option<u16>) -> Analyzer {
        Analyzer {
            port: port.unwrap_or(DEFAULT_PORT),
            max_frame: DEFAULT_MAX_FRAME_SIZE,
            conns: HashMap::new(),
            budget: Budget {
                per_conn: Limits::DEFAULT_IN_FLIGHT_BYTES,
                total_limit: Limits::DEFAULT_IN_FLIGHT_TOTAL_BYTES,
                total: 0,
            },
            held: 0,
            held_limit: Limits::DEFAULT_HELD_BYTES,
        }
    }

    /// Takes the in-flight budgets of `limits` ([`Limits::in_flight_bytes`],
    /// [`Limits::in_flight_total_bytes`]); the other limits are the capture layer's.
    pub fn set_limits(&mut self, limits: Limits) {
        self.budget.per_conn = limits.in_flight_bytes;
        self.budget.total_limit = limits.in_flight_total_bytes;
        self.held_limit = limits.held_bytes;
    }

    /// Bytes of frames held now, on all connections (bounded by [`Limits::held_bytes`]).
    pub fn held_bytes(&self) -> usize {
        self.held
    }

    /// Bytes of the in-flight budgets held now, on all connections.
    pub fn in_flight_bytes(&self) -> usize {
        self.budget.total
    }

    /// Takes one capture event; hands on what it completes.
    pub fn feed(&mut self, event: Event, out: &mut dyn FnMut(Item)) {
        let limit_close = event.is_limit_close();
        match event {
            Event::Open {
                conn,
                a,
                b,
                syn_seen,
                ..
            } => {
                let server = if b.port == self.port {
                    Some(b)
                } else if a.port == self.port {
                    Some(a)
                } else if syn_seen {
                    Some(b)
                } else {
                    None
                };
                self.conns.insert(
                    conn,
                    Conn {
                        a,
                        syn_seen,
                        server,
                        dirs: [Dir::new(a, b, syn_seen), Dir::new(b, a, syn_seen)],
                        waiting: VecDeque::new(),
                        charged: 0,
                        not_kept: 0,
                        held: VecDeque::new(),
                        held_bytes: 0,
                    },
                );
            }
            Event::Data {
                conn,
                from,
                offset,
                bytes,
                packet,
                time,
                acked,
                ..
            } => {
                let max_frame = self.max_frame;
                let Some(c) = self.conns.get_mut(&conn) else {
                    return;
                };
                let before = conn_bytes(c);
                let i = c.dir_index(from);
                let d = &mut c.dirs[i];
                if d.buf.len() == d.pos {
                    d.start = offset;
                }
                d.buf.extend_from_slice(&bytes);
                d.packets
                    .push_back((offset + bytes.len() as u64, packet, time, acked));
                if c.server.is_none() {
                    decide_server(conn, c, i, out);
                }
                // Requests first: a response direction may be waiting for a request, to pair
                // a frame or to prove a boundary.
                let requests = c.requests();
                let budget = &mut self.budget;
                drain(conn, c, requests, max_frame, budget, out);
                drain(conn, c, 1 - requests, max_frame, budget, out);
                release_held(conn, c, budget, out);
                self.held = (self.held + conn_bytes(c)).saturating_sub(before);
                if self.held > self.held_limit {
                    self.let_go(packet, out);
                }
            }
            Event::Gap {
                conn,
                from,
                offset,
                len,
                packet,
                cut,
                ..
            } => {
                let Some(c) = self.conns.get_mut(&conn) else {
                    return;
                };
                let before = conn_bytes(c);
                let i = c.dir_index(from);
                let d = &mut c.dirs[i];
                let held = d.live().len();
                let mut message = if cut {
                    format!(
                        "{len} bytes cut by the snap length at stream offset {offset} ({} -> \
                         {}): the capture has their packets, shorter than they were sent",
                        d.from, d.to
                    )
                } else {
                    format!(
                        "{len} bytes missing from the capture at stream offset {offset} ({} -> {})",
                        d.from, d.to
                    )
                };
                let passing = d.passing.as_ref().map(|p| (p.offset, p.len, p.rest as u64));
                if let Some((at, frame_len, rest)) = passing.filter(|p| p.2 >= len && held == 0) {
                    // Inside a frame passed over, whose end is known: nothing else lost.
                    message.push_str(&format!(
                        "; inside the frame passed over at offset {at} ({frame_len} bytes, not \
                         decoded), whose end is known: decoding goes on after it"
                    ));
                    let (from, to) = (d.from, d.to);
                    if let Some(p) = d.passing.as_mut() {
                        p.rest = (rest - len) as usize;
                    }
                    d.start = offset + len;
                    d.packets.clear();
                    out(Item::Note(Note {
                        conn: Some((conn, from, to)),
                        packet: Some(packet),
                        message,
                        partial: true,
                    }));
                    // A frame that ends with the gap is handed on now.
                    let max_frame = self.max_frame;
                    drain(conn, c, i, max_frame, &mut self.budget, out);
                    self.held = (self.held + conn_bytes(c)).saturating_sub(before);
                    return;
                }
                if let Some((at, frame_len, _)) = passing {
                    message.push_str(&format!(
                        "; the frame passed over at offset {at} ({frame_len} bytes, not decoded) \
                         is lost"
                    ));
                } else if held > 0 {
                    message.push_str(&format!(
                        "; the frame in progress at offset {} ({held} bytes held) is lost",
                        d.start
                    ));
                }
                message
                    .push_str("; decoding resumes at the next frame boundary that can be proven");
                let (from, to) = (d.from, d.to);
                out(Item::Note(Note {
                    conn: Some((conn, from, to)),
                    packet: Some(packet),
                    message,
                    partial: true,
                }));
                let d = &mut c.dirs[i];
                d.buf.clear();
                d.pos = 0;
                d.packets.clear();
                d.passing = None;
                d.start = offset + len;
                d.lose_sync(d.start);
                d.lost_since_frame = true;
                if c.server.is_some() {
                    release_held(conn, c, &mut self.budget, out);
                }
                self.held = (self.held + conn_bytes(c)).saturating_sub(before);
            }
            Event::Close {
                conn,
                packet,
                reason,
            } => {
                let Some(mut c) = self.conns.remove(&conn) else {
                    return;
                };
                self.held = self.held.saturating_sub(conn_bytes(&c));
                // Whole answers the search could not prove a boundary for (a capture that
                // joined the connection, no request after them): listed, not called a
                // frame cut short.
                if let Some(i) = (0..2).find(|&i| c.role(i) == Some(Role::Responses)) {
                    if !c.dirs[i].synced && whole_frames(c.dirs[i].live(), self.max_frame) {
                        c.dirs[i].synced = true;
                        drain(conn, &mut c, i, self.max_frame, &mut self.budget, out);
                    }
                }
                // Nothing more will come: what waits for a request has none.
                while !c.held.is_empty() {
                    settle_front(&mut c, true);
                    release_front(conn, &mut c, None, &mut self.budget, out);
                }
                let limit = limit_close.then_some(reason);
                // Each direction's note names the packet where its frame began: in packet
                // order, whichever direction that is.
                let mut cut_short = Vec::new();
                for d in &c.dirs {
                    if let Some(p) = &d.passing {
                        let ends = match limit {
                            Some(reason) => {
                                format!("the reader let go of the connection ({reason})")
                            }
                            None => "the stream ends".to_owned(),
                        };
                        cut_short.push(Note {
                            conn: Some((conn, d.from, d.to)),
                            packet: packet.or(Some(p.first_packet)),
                            message: format!(
                                "{ends} inside a frame passed over: {} bytes from stream offset \
                                 {} of {} are not a whole frame",
                                p.len - p.rest,
                                p.offset,
                                p.len
                            ),
                            partial: true,
                        });
                        continue;
                    }
                    let held = d.live().len();
                    if held > 0 {
                        let ends = match limit {
                            Some(reason) => {
                                format!("the reader let go of the connection ({reason})")
                            }
                            None => "the stream ends".to_owned(),
                        };
                        // At the end of the capture, the packet where the frame began.
                        let packet = packet.or(Some(d.packets_of(d.start, d.start + 1).0));
                        cut_short.push(Note {
                            conn: Some((conn, d.from, d.to)),
                            packet,
                            message: format!(
                                "{ends} inside a frame: {held} bytes from stream offset {} \
                                 are not a whole frame",
                                d.start
                            ),
                            partial: true,
                        });
                    }
                }
                cut_short.sort_by_key(|n| n.packet);
                for note in cut_short {
                    out(Item::Note(note));
                }
                let waiting = c.waiting.len();
                c.waiting = VecDeque::new();
                self.budget.release(&mut c);
                if let (Some(reason), true) = (limit, waiting > 0) {
                    let r = &c.dirs[c.requests()];
                    out(Item::Note(Note {
                        conn: Some((conn, r.from, r.to)),
                        packet,
                        message: format!(
                            "the reader let go of the connection ({reason}) with {waiting} \
                             request(s) waiting for their responses: responses that come \
                             later are not paired"
                        ),
                        partial: true,
                    }));
                }
                out(Item::Closed(conn));
            }
            Event::Note {
                packet,
                message,
                partial,
            } => out(Item::Note(Note {
                conn: None,
                packet: Some(packet),
                message,
                partial,
            })),
        }
    }
}

impl Analyzer {
    /// The frames held on all connections passed [`Limits::held_bytes`]: lets go of the
    /// largest, one at a time, until they fit. A frame in progress is passed over as it
    /// streams by (not decoded); the oldest response waiting for its request is handed on
    /// unpaired. Each is named in a note.
    fn let_go(&mut self, packet: u64, out: &mut dyn FnMut(Item)) {
        while self.held > self.held_limit {
            // The largest frame in progress, and the connection holding the most
            // responses waiting.
            let frame = self
                .conns
                .iter()
                .flat_map(|(&id, c)| {
                    (0..2).filter_map(move |i| {
                        let d = &c.dirs[i];
                        let size_known = d.synced && d.passing.is_none() && d.live().len() >= 8;
                        // Or bytes held while a boundary is searched for (answers waiting
                        // for the requests that may prove one).
                        let searching = !d.synced && !d.live().is_empty();
                        ((size_known || searching) && c.role(i).is_some()).then_some((
                            d.buf.capacity(),
                            id,
                            i,
                        ))
                    })
                })
                .max();
            let held = self
                .conns
                .iter()
                .filter(|(_, c)| !c.held.is_empty())
                .map(|(&id, c)| (c.held_bytes, id))
                .max();
            let frame = frame.filter(|f| held.map_or(true, |h| h.0 < f.0));
            let (conn, c, before) = if let Some((_, conn, i)) = frame {
                let Some(c) = self.conns.get_mut(&conn) else {
                    return;
                };
                let before = conn_bytes(c);
                if c.dirs[i].synced {
                    let_go_frame(conn, c, i, packet, self.held_limit, out);
                } else {
                    // Searched now, without waiting for the requests: what the search
                    // rules out is let go.
                    c.dirs[i].search_now = true;
                    drain(conn, c, i, self.max_frame, &mut self.budget, out);
                }
                (conn, c, before)
            } else if let Some((_, conn)) = held {
                let Some(c) = self.conns.get_mut(&conn) else {
                    return;
                };
                let before = conn_bytes(c);
                release_front(conn, c, Some(BEYOND_HELD_BYTES), &mut self.budget, out);
                (conn, c, before)
            } else {
                return;
            };
            let after = conn_bytes(c);
            self.held = (self.held + after).saturating_sub(before);
            if after >= before {
                // Nothing of connection `conn` could be given back: stop rather than loop.
                let _ = conn;
                return;
            }
        }
    }
}

/// Lets go of the frame in progress in direction `i` of `c` (see [`Analyzer::let_go`]).
fn let_go_frame(
    conn: ConnId,
    c: &mut Conn,
    i: usize,
    packet: u64,
    limit: usize,
    out: &mut dyn FnMut(Item),
) {
    let Some(role) = c.role(i) else {
        return;
    };
    let d = &c.dirs[i];
    let live = d.live();
    let Ok((size, _)) = peek_response(live).map(|p| (p.size, p.correlation_id)) else {
        return;
    };
    let len = size + SIZE_PREFIX_LEN;
    let (keep, never, what) = match role {
        Role::Requests => match peek_request(live) {
            Ok(peek) => {
                let client_id = live
                    .get(12..14)
                    .map_or(-1, |b| i16::from_be_bytes([b[0], b[1]]));
                (
                    14 + usize::try_from(client_id).unwrap_or(0),
                    never_answered(live),
                    format!(
                        "{} v{} request (correlation id {})",
                        api_name(peek.api_key).unwrap_or("unknown API"),
                        peek.api_version,
                        peek.correlation_id
                    ),
                )
            }
            Err(_) => (live.len(), false, "request".to_owned()),
        },
        Role::Responses => (
            8,
            false,
            format!(
                "response (correlation id {})",
                peek_response(live).map_or(0, |p| p.correlation_id)
            ),
        ),
    };
    let (offset, held) = (d.start, live.len());
    let (from, to) = (d.from, d.to);
    out(Item::Note(Note {
        conn: Some((conn, from, to)),
        packet: Some(packet),
        message: format!(
            "{what} frame at stream offset {offset} ({len} bytes, {held} of them held) let \
             go: the frames held on all connections reached the reader's bound ({limit} \
             bytes: --max-held-bytes); passed over as it streams by, not decoded"
        ),
        partial: true,
    }));
    let d = &mut c.dirs[i];
    d.frames += 1;
    d.first_frame.get_or_insert(offset);
    d.pass_over(len, keep.min(held), never);
    if let Some(p) = d.passing.as_mut() {
        p.let_go = true;
    }
    if d.live().is_empty() {
        // Its room given back whatever its size.
        d.buf = Vec::new();
        d.pos = 0;
    }
}

/// Without a SYN or the broker's port (a capture that began mid-connection): the client is
/// the side where an ElectLeaders request is found at a boundary that can be proven. A
/// weaker sign is not enough: a response with a small correlation id reads as a request
/// header of api key 0.
fn decide_server(conn: ConnId, c: &mut Conn, i: usize, out: &mut dyn FnMut(Item)) {
    let found = find_boundary(
        &mut c.dirs[i],
        Role::Requests,
        &VecDeque::new(),
        DEFAULT_MAX_FRAME_SIZE,
        true,
        false,
    );
    if found.is_some() {
        c.server = Some(c.dirs[i].to);
        // The searches so far judged both directions as requests: start them again.
        for d in &mut c.dirs {
            d.waiting.clear();
            d.frontier = d.start;
        }
    } else if c.dirs[i].live().len() > UNDECIDED_KEEP {
        // What was ruled out as a request here is let go past a bound, so that an
        // undecided connection holds little per direction; below it the bytes are kept,
        // since this may be the broker's side (its leading answers are listed once the
        // requests tell which side the broker is). What is let go is named.
        let d = &mut c.dirs[i];
        let (before, at) = (d.skipped, d.start);
        d.drop_ruled_out();
        let dropped = d.skipped - before;
        if dropped > 0 {
            out(Item::Note(Note {
                conn: Some((conn, d.from, d.to)),
                packet: Some(d.packets_of(at, at + 1).0),
                message: format!(
                    "{dropped} bytes from stream offset {at} passed over before the broker's \
                     side of the connection could be told (no SYN seen, and neither port is \
                     the broker's: --port)"
                ),
                partial: true,
            }));
        }
    }
}

/// Whether `live` is frames back to back, each long enough for a correlation id, the last
/// ending where `live` ends.
fn whole_frames(live: &[u8], max_frame: usize) -> bool {
    let mut at = 0usize;
    while at < live.len() {
        let Some(size) = live
            .get(at..at + SIZE_PREFIX_LEN)
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        else {
            return false;
        };
        let Ok(size) = usize::try_from(size) else {
            return false;
        };
        if !(4..=max_frame).contains(&size) {
            return false;
        }
        at += SIZE_PREFIX_LEN + size;
    }
    at == live.len() && !live.is_empty()
}

/// Bytes of a direction kept while the broker's side of its connection is not known.
const UNDECIDED_KEEP: usize = 256 * 1024;

/// Cuts what it can of direction `i` into frames.
fn drain(
    conn: ConnId,
    c: &mut Conn,
    i: usize,
    max_frame: usize,
    budget: &mut Budget,
    out: &mut dyn FnMut(Item),
) {
    let Some(role) = c.role(i) else {
        return;
    };
    loop {
        if !c.dirs[i].synced {
            if role == Role::Responses
                && !c.dirs[i].search_now
                && c.dirs[i].live().len() <= HELD_RESPONSE_BYTES
            {
                // The ACK of the last packet proves requests were sent that the requests'
                // direction has not handed on yet (held behind a hole the same ACK proves
                // lost): a boundary here may be proven by one of them. Wait for them
                // rather than rule the answers out (within a bound).
                let acked = c.dirs[i].packets.back().and_then(|p| p.3);
                let requests = &c.dirs[c.requests()];
                if acked.is_some_and(|a| !requests.caught_up(a)) {
                    return;
                }
            }
            // A capture that joined the connection: the responses' first bytes may be the
            // answers to requests sent before it began.
            let leading = role == Role::Responses && !c.syn_seen && c.dirs[i].frames == 0;
            let found = find_boundary(&mut c.dirs[i], role, &c.waiting, max_frame, false, leading);
            let d = &mut c.dirs[i];
            let Some(p) = found else {
                d.drop_ruled_out();
                return;
            };
            let skipped = d.skipped + p as u64;
            let at = d.start + p as u64;
            let passed_over = (skipped > 0 && (d.frames > 0 || c.syn_seen)).then(|| Note {
                conn: Some((conn, d.from, d.to)),
                packet: Some(d.packets_of(at, at + 1).0),
                message: format!(
                    "{skipped} bytes before stream offset {at} passed over, to the next frame \
                     boundary that could be proven"
                ),
                partial: true,
            });
            d.consume(p);
            if role == Role::Requests {
                // Every request before the boundary is cut or lost: the responses that
                // waited for them go first (they came in earlier packets than the one
                // that proved the boundary, named below).
                release_held(conn, c, budget, out);
            }
            if let Some(note) = passed_over {
                out(Item::Note(note));
            }
            let d = &mut c.dirs[i];
            d.synced = true;
            d.search_now = false;
            d.waiting.clear();
            d.skipped = 0;
        }
        let d = &mut c.dirs[i];
        if d.passing.is_some() {
            // A frame passed over as it streams by: its bytes dropped as they come.
            let Some(p) = d.pass_live() else {
                return;
            };
            let origin = Origin {
                conn,
                from: d.from,
                to: d.to,
                first_packet: p.first_packet,
                last_packet: p.last_packet,
                time: p.time,
                offset: p.offset,
                index: d.frames,
            };
            let frame = Cut {
                frame: p.head,
                len: p.len,
                origin,
                acked: p.acked,
                never_answered: Some(p.never_answered),
                noted: p.let_go,
            };
            hand_frame(conn, c, i, role, frame, budget, out);
            continue;
        }
        let frame_len = match split_frame_with_max(d.live(), max_frame) {
            Ok((frame, _)) => frame.len(),
            Err(e) if e.is_incomplete() => {
                if let Some((len, keep, never)) = passes_over(c, i, role) {
                    let d = &mut c.dirs[i];
                    d.frames += 1;
                    d.first_frame.get_or_insert(d.start);
                    d.pass_over(len, keep, never);
                    let first_packet = d.passing.as_ref().map(|p| p.first_packet);
                    if let Some(p) = first_packet {
                        d.first_frame_packet.get_or_insert(p);
                    }
                    continue;
                }
                return;
            }
            Err(e) => {
                out(Item::Note(Note {
                    conn: Some((conn, d.from, d.to)),
                    packet: Some(d.packets_of(d.start, d.start + 1).0),
                    message: format!("stream offset {}: not a frame: {e}", d.start),
                    partial: true,
                }));
                let next = d.start + 1;
                d.lose_sync(next);
                continue;
            }
        };
        if role == Role::Requests {
            if let Some(why) = no_request_header(&d.live()[..frame_len]) {
                // Garbage after a corrupted size prefix reads as a size too: trusting it
                // would swallow the requests after it. Search for a boundary instead.
                out(Item::Note(Note {
                    conn: Some((conn, d.from, d.to)),
                    packet: Some(d.packets_of(d.start, d.start + 1).0),
                    message: format!(
                        "stream offset {}: not a request frame ({why}); decoding resumes at \
                         the next frame boundary that can be proven",
                        d.start
                    ),
                    partial: true,
                }));
                let next = d.start + 1;
                d.lose_sync(next);
                continue;
            }
        }
        d.frames += 1;
        let offset = d.start;
        let (first_packet, last_packet, time, acked) =
            d.packets_of(offset, offset + frame_len as u64);
        d.first_frame.get_or_insert(offset);
        d.first_frame_packet.get_or_insert(first_packet);
        let frame = d.live()[..frame_len].to_vec();
        let origin = Origin {
            conn,
            from: d.from,
            to: d.to,
            first_packet,
            last_packet,
            time,
            offset,
            index: d.frames,
        };
        d.consume(frame_len);
        let frame = Cut {
            len: frame.len(),
            frame,
            origin,
            acked,
            never_answered: None,
            noted: false,
        };
        hand_frame(conn, c, i, role, frame, budget, out);
    }
}

/// Why `frame` cannot be a request of any API, known to this crate or not: its size cannot
/// hold a request header (api key, version, correlation id, client id length: 10 bytes),
/// its api key or version is negative, or its client id runs past its end.
fn no_request_header(frame: &[u8]) -> Option<&'static str> {
    let size = frame.len().saturating_sub(SIZE_PREFIX_LEN);
    let at = |i: usize| {
        frame
            .get(i..i + 2)
            .map(|b| i16::from_be_bytes([b[0], b[1]]))
    };
    if size < 10 {
        return Some("a size too small for a request header");
    }
    if at(4).is_some_and(|k| k < 0) || at(6).is_some_and(|v| v < 0) {
        return Some("a negative api key or version");
    }
    match at(12) {
        Some(n) if n >= 0 && usize::from(n.unsigned_abs()) > size - 10 => {
            Some("a client id longer than the frame")
        }
        _ => None,
    }
}

/// A frame cut from a direction: whole, or the head of one passed over.
struct Cut {
    frame: Vec<u8>,
    len: usize,
    origin: Origin,
    /// How far the packets that carried it acknowledged the other direction.
    acked: Option<u64>,
    /// For a request passed over: whether Kafka never answers it, read off its head when
    /// it was whole (`None`: read it off `frame`).
    never_answered: Option<bool>,
    /// Passed over and named in a note already (let go by the bound on bytes held).
    noted: bool,
}

/// Whether the frame at the front of direction `i`, not whole yet, is to be passed over
/// as it streams by: longer than [`PASS_OVER_HEAD`], its head read, and of an API not
/// decoded (a request other than ElectLeaders v0-v2, a response to none of the
/// ElectLeaders requests waiting). Returns its length, the bytes of its head to keep
/// (the header), and for a request whether Kafka never answers it.
fn passes_over(c: &Conn, i: usize, role: Role) -> Option<(usize, usize, bool)> {
    let live = c.dirs[i].live();
    if live.len() < PASS_OVER_HEAD {
        return None;
    }
    match role {
        Role::Requests => {
            let peek = peek_request(live).ok()?;
            let pending = Pending::from(peek);
            if pending.is_elect_leaders() {
                return None;
            }
            // Size prefix, api key, version, correlation id, client id.
            let client_id = i16::from_be_bytes([live[12], live[13]]);
            let keep = 14 + usize::try_from(client_id).unwrap_or(0);
            Some((peek.size + SIZE_PREFIX_LEN, keep, never_answered(live)))
        }
        Role::Responses => {
            let peek = peek_response(live).ok()?;
            let elect = c.waiting.iter().any(|w| {
                w.pending.correlation_id == peek.correlation_id && w.pending.is_elect_leaders()
            });
            (!elect).then_some((peek.size + SIZE_PREFIX_LEN, 8, false))
        }
    }
}

/// Hands on a frame cut from direction `i`: a request is remembered until its response
/// comes, a response paired (or held until its request comes).
fn hand_frame(
    conn: ConnId,
    c: &mut Conn,
    i: usize,
    role: Role,
    cut: Cut,
    budget: &mut Budget,
    out: &mut dyn FnMut(Item),
) {
    let Cut {
        frame,
        len,
        origin,
        acked,
        never_answered: never,
        noted,
    } = cut;
    let offset = origin.offset;
    // A frame ElectLeaders would be decoded from, let go by the bound on the bytes held
    // (named in a note): listed as passed over.
    let whole = frame.len() == len;
    {
        let mut waits = role == Role::Requests;
        let mut not_kept = false;
        let what = match role {
            Role::Requests => match peek_request(&frame) {
                Ok(peek) => {
                    let pending = Pending::from(peek);
                    let asked = Asked {
                        time: origin.time,
                        index: origin.index,
                    };
                    if never.unwrap_or_else(|| never_answered(&frame)) {
                        // Kafka sends nothing back: nothing to wait for.
                        waits = false;
                    } else if let Err(full) = {
                        let after_gap = std::mem::take(&mut c.dirs[i].lost_since_frame);
                        budget.keep(
                            c,
                            Waiting {
                                pending,
                                asked,
                                after_gap,
                            },
                        )
                    } {
                        // Named, one by one; the requests already waiting are kept.
                        c.not_kept += 1;
                        waits = false;
                        not_kept = true;
                        out(Item::Note(Note {
                            conn: Some((conn, origin.from, origin.to)),
                            packet: Some(origin.first_packet),
                            message: format!(
                                "request frame at stream offset {offset} ({} v{}, correlation \
                                 id {}) not kept for pairing: {full}; its response will be \
                                 listed as unpaired",
                                api_name(pending.api_key).unwrap_or("unknown API"),
                                pending.api_version,
                                pending.correlation_id
                            ),
                            partial: true,
                        }));
                    }
                    if pending.is_elect_leaders() && whole {
                        What::ElectRequest
                    } else {
                        What::Other {
                            role,
                            api_key: peek.api_key,
                            api_version: peek.api_version,
                            correlation_id: peek.correlation_id,
                        }
                    }
                }
                Err(e) => {
                    out(Item::Note(Note {
                        conn: Some((conn, origin.from, origin.to)),
                        packet: Some(origin.last_packet),
                        message: format!(
                            "request frame at stream offset {offset}: {} at frame byte {}: {}",
                            e.field, e.offset, e.kind
                        ),
                        partial: true,
                    }));
                    return;
                }
            },
            Role::Responses => match peek_response(&frame) {
                Ok(peek) => {
                    let held = Held {
                        found: Found {
                            origin,
                            what: What::Unpaired {
                                correlation_id: peek.correlation_id,
                            },
                            request: None,
                            waits: false,
                            not_kept: false,
                            frame,
                            len,
                        },
                        correlation_id: peek.correlation_id,
                        acked,
                        doubt: Doubt::None,
                        noted,
                    };
                    if c.held.is_empty()
                        && !must_wait(c, &held)
                        && !in_doubt(c, peek.correlation_id)
                    {
                        hand_on(conn, c, held, None, budget, out);
                        return;
                    }
                    // Captured before its request, or behind one that was: held, in order.
                    c.held_bytes += held.found.frame.len();
                    c.held.push_back(held);
                    while c.held.len() > HELD_RESPONSES
                        || (c.held.len() > 1 && c.held_bytes > HELD_RESPONSE_BYTES)
                    {
                        release_front(conn, c, Some(BEYOND_BOUND), budget, out);
                    }
                    release_held(conn, c, budget, out);
                    return;
                }
                Err(e) => {
                    out(Item::Note(Note {
                        conn: Some((conn, origin.from, origin.to)),
                        packet: Some(origin.last_packet),
                        message: format!(
                            "response frame at stream offset {offset}: {} at frame byte {}: {}",
                            e.field, e.offset, e.kind
                        ),
                        partial: true,
                    }));
                    return;
                }
            },
        };
        out(Item::Frame(Found {
            origin,
            what,
            request: None,
            waits,
            not_kept,
            frame,
            len,
        }));
    }
}
