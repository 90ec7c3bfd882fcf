//! Whole Kafka connections out of a capture: each TCP direction cut into frames, the broker
//! side told apart from the client side, every request remembered (whatever its API) until
//! its response comes, and every ElectLeaders frame handed on with where it was found.
//!
//! The capture layer (`capture`) delivers reassembled bytes and gaps; this layer knows
//! Kafka: size prefixes, request headers, correlation ids. It does not decode ElectLeaders
//! itself: it hands whole frames to the library's parsers (through the commands).
//!
//! Memory: per open connection, at most one frame per direction (bounded by the maximum
//! frame size), the requests in flight within the in-flight budgets, and the responses waiting for
//! their requests (at most [`HELD_RESPONSES`] and [`HELD_RESPONSE_BYTES`]). The capture
//! layer bounds the open connections ([`crate::Limits`]).

use std::collections::{HashMap, VecDeque};

use kafka_elect_leaders::{
    api_name, is_known_request, parse_request, parse_response, peek_request, peek_response,
    split_frame_with_max, Pending, DEFAULT_MAX_FRAME_SIZE, SIZE_PREFIX_LEN,
};

use crate::error::CaptureError;
use crate::reader::Capture;
use crate::types::{CaptureStats, ConnId, Endpoint, Event, Limits, Timestamp};

/// What one request waiting for its response costs in the in-flight budgets
/// ([`Limits::in_flight_bytes`], [`Limits::in_flight_total_bytes`]): the table's room for
/// it. The table of a connection grows by doubling, within its budget, and is given back
/// when it empties.
pub const IN_FLIGHT_ENTRY_BYTES: usize = std::mem::size_of::<Waiting>();

/// Responses held on one connection, at most, while they wait for the requests they may
/// answer (a response captured before its request); past this the oldest is let go,
/// unpaired, and named.
pub const HELD_RESPONSES: usize = 256;

/// Bytes of responses held on one connection, at most (beyond the first response).
pub const HELD_RESPONSE_BYTES: usize = 8 << 20;

/// The broker's port, unless `--port` says otherwise.
pub const DEFAULT_PORT: u16 = 9092;

/// Which way a direction's frames go.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Role {
    /// Client to broker.
    Requests,
    /// Broker to client.
    Responses,
}

/// Where a frame of a capture was found.
#[derive(Clone, Debug)]
pub struct Origin {
    /// The connection, numbered from 1 in the order the capture shows them.
    pub conn: ConnId,
    /// The sender of the frame.
    pub from: Endpoint,
    /// The receiver of the frame.
    pub to: Endpoint,
    /// The packet that carried the frame's first byte (numbered from 1, as Wireshark does).
    pub first_packet: u64,
    /// The packet that carried the frame's last byte.
    pub last_packet: u64,
    /// The capture time of the packet that completed the frame.
    pub time: Timestamp,
    /// The frame's first byte in its direction's stream.
    pub offset: u64,
    /// The frame's number in its direction, from 1.
    pub index: u64,
}

/// What a frame is. Each variant's text says what its fields are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum What {
    /// An ElectLeaders request (v0-v2): `parse_request`.
    ElectRequest,
    /// An ElectLeaders response, of its request's version: `parse_response`.
    ElectResponse { version: i16 },
    /// A frame of another API (or an ElectLeaders version this crate does not read).
    Other {
        role: Role,
        api_key: i16,
        api_version: i16,
        correlation_id: i32,
    },
    /// A response whose request was not seen (the capture began after it, or it was lost).
    Unpaired { correlation_id: i32 },
}

/// The request a response answers, as the capture showed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Asked {
    /// The capture time of the packet that completed the request (its [`Origin::time`]).
    pub time: Timestamp,
    /// The request's frame number in its direction (its [`Origin::index`]).
    pub index: u64,
}

/// A frame, whole, size prefix included.
pub struct Found {
    /// Where it was found.
    pub origin: Origin,
    /// What it is, and for a response the version to parse it at.
    pub what: What,
    /// For a response paired with its request (of any API): that request. `None` for a
    /// request and for an unpaired response.
    pub request: Option<Asked>,
    /// For a request: it is kept until its response comes. False for a request Kafka never
    /// answers (a Produce with `acks` 0: not counted as unanswered), for one the in-flight
    /// budget could not keep (a note names it), and for every response.
    pub waits: bool,
    /// The frame's bytes, size prefix included.
    pub frame: Vec<u8>,
}

/// Something the reader of the output should know: where, and what. `partial` when it
/// means some traffic could not be decoded (a gap, a malformed frame, a cut capture).
pub struct Note {
    /// The connection it is about (with its direction: from, to), if it is about one.
    pub conn: Option<(ConnId, Endpoint, Endpoint)>,
    /// The packet where it was noticed, if it is about one.
    pub packet: Option<u64>,
    /// What happened, in one line.
    pub message: String,
    /// Some traffic was not decoded because of it: the output is partial.
    pub partial: bool,
}

/// What the analyser hands on.
pub enum Item {
    /// A whole frame.
    Frame(Found),
    /// Something that could not be read, or that the reader of the output should know.
    Note(Note),
    /// A connection ended: nothing more will come from it.
    Closed(ConnId),
}

/// One direction of a connection.
struct Dir {
    from: Endpoint,
    to: Endpoint,
    /// Bytes not yet cut into a frame; `buf[pos..]` is live, starting at stream offset
    /// `start`.
    buf: Vec<u8>,
    pos: usize,
    start: u64,
    /// Which packet delivered the bytes up to each stream offset (exclusive end), and how
    /// far it acknowledged the other direction.
    packets: VecDeque<(u64, u64, Timestamp, Option<u64>)>,
    /// False at a mid-stream start and after a gap or a bad size prefix: the next frame
    /// boundary must be proven before frames are cut again.
    synced: bool,
    /// While not synced: the stream offsets of candidate boundaries that need more bytes
    /// to be judged (a few at most), ...
    waiting: Vec<u64>,
    /// ... and the stream offset up to which every other position was judged and rejected.
    frontier: u64,
    /// Bytes passed over since the stream lost its frame boundaries.
    skipped: u64,
    frames: u64,
    /// Bytes of this direction were lost (a gap) since the last frame was cut: requests may
    /// have been lost there.
    lost_since_frame: bool,
    /// The stream offset of the first frame cut, and the packet of its first byte.
    first_frame: Option<u64>,
    first_frame_packet: Option<u64>,
}

impl Dir {
    fn new(from: Endpoint, to: Endpoint, synced: bool) -> Dir {
        Dir {
            from,
            to,
            buf: Vec::new(),
            pos: 0,
            start: 0,
            packets: VecDeque::new(),
            synced,
            waiting: Vec::new(),
            frontier: 0,
            skipped: 0,
            frames: 0,
            lost_since_frame: false,
            first_frame: None,
            first_frame_packet: None,
        }
    }

    fn live(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    /// Drops `n` live bytes from the front.
    fn consume(&mut self, n: usize) {
        self.pos += n;
        self.start += n as u64;
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        } else if self.pos > 64 * 1024 && self.pos * 2 > self.buf.len() {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        while self
            .packets
            .front()
            .is_some_and(|&(end, ..)| end <= self.start)
        {
            self.packets.pop_front();
        }
    }

    /// The stream lost its frame boundaries at stream offset `at` (a gap, a bad size
    /// prefix): search again from there.
    fn lose_sync(&mut self, at: u64) {
        self.synced = false;
        self.waiting.clear();
        self.frontier = at;
        self.skipped = 0;
    }

    /// Drops what a search has ruled out: everything before the first candidate still
    /// waiting for bytes, or before the frontier.
    fn drop_ruled_out(&mut self) {
        let keep_from = self.waiting.first().copied().unwrap_or(self.frontier);
        let n = keep_from
            .saturating_sub(self.start)
            .min(self.live().len() as u64);
        self.skipped += n;
        self.consume(n as usize);
    }

    /// The packets that carried stream bytes `[from, to)`: the first's number, the last's,
    /// the latest capture time among them (when the last of the bytes was captured: a
    /// byte held out of order may come from an earlier packet than one that filled a hole
    /// before it) and the furthest any of them acknowledged the other direction.
    fn packets_of(&self, from: u64, to: u64) -> (u64, u64, Timestamp, Option<u64>) {
        let mut first = None;
        let mut last = 0;
        let mut time = Timestamp::default();
        let mut acked: Option<u64> = None;
        for &(end, packet, at, ack) in &self.packets {
            if end <= from {
                continue;
            }
            first.get_or_insert(packet);
            last = packet;
            time = time.max(at);
            acked = acked.max(ack);
            if end >= to {
                break;
            }
        }
        (first.unwrap_or(last), last, time, acked)
    }

    /// Whether every request frame that ends at or before stream offset `acked` has been
    /// cut (or passed over, or lost in a gap): a response that `acked` came with can no
    /// longer find its request still to come.
    fn caught_up(&self, acked: u64) -> bool {
        if self.synced {
            // Drained: what is live is at most the start of a frame not yet whole.
            self.start + self.live().len() as u64 >= acked
        } else {
            self.start >= acked
        }
    }
}

/// A response waiting for its request, or behind one that is (so that responses keep
/// their order).
struct Held {
    found: Found,
    correlation_id: i32,
    /// How far the packet that completed it acknowledged the requests.
    acked: Option<u64>,
    /// Whether it may answer a request lost in a hole rather than the one it matches.
    doubt: Doubt,
}

/// A response whose request, by correlation id, came after a hole in the requests: a
/// request lost there may have had the same id (a client that reuses them), and Kafka
/// answers in order, so the lost one's answer would come first. It waits for the next
/// response of the connection to tell.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Doubt {
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

/// A request waiting for its response.
#[derive(Clone, Copy)]
struct Waiting {
    pending: Pending,
    /// When and where it was seen.
    asked: Asked,
    /// Bytes of the requests were lost just before it (requests may have been lost).
    after_gap: bool,
}

struct Conn {
    a: Endpoint,
    syn_seen: bool,
    /// The broker's side, once known.
    server: Option<Endpoint>,
    dirs: [Dir; 2],
    /// The requests waiting for their responses, oldest first (Kafka answers in order).
    waiting: VecDeque<Waiting>,
    /// The bytes of the in-flight budgets `waiting` holds: its room, not its length.
    charged: usize,
    /// Requests not kept because the in-flight budget was full (each named in a note).
    not_kept: u64,
    /// Responses waiting for their requests, in stream order.
    held: VecDeque<Held>,
    held_bytes: usize,
}

impl Conn {
    fn dir_index(&self, from: Endpoint) -> usize {
        usize::from(from != self.a)
    }

    /// The index of the requests' direction (meaningful once the broker's side is known).
    fn requests(&self) -> usize {
        usize::from(self.role(0) != Some(Role::Requests))
    }

    fn role(&self, index: usize) -> Option<Role> {
        let server = self.server?;
        Some(if self.dirs[index].to == server {
            Role::Requests
        } else {
            Role::Responses
        })
    }
}

/// The connections of one capture.
pub struct Analyzer {
    port: u16,
    max_frame: usize,
    conns: HashMap<ConnId, Conn>,
    budget: Budget,
}

/// The in-flight budgets: per connection, and for all together (what they hold now).
struct Budget {
    per_conn: usize,
    total_limit: usize,
    total: usize,
}

impl Budget {
    /// Keeps `w` among `c`'s requests waiting, growing the table within the budgets; else
    /// says which budget is full (the note's words).
    fn keep(&mut self, c: &mut Conn, w: Waiting) -> Result<(), String> {
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
    fn shrink(&mut self, c: &mut Conn) {
        if c.waiting.is_empty() && c.waiting.capacity() > 64 {
            c.waiting = VecDeque::new();
            self.release(c);
        }
    }

    /// Gives back all of a connection's room (it closed, or its table was replaced).
    fn release(&mut self, c: &mut Conn) {
        let charged = c.waiting.capacity() * IN_FLIGHT_ENTRY_BYTES;
        self.total = self.total.saturating_sub(c.charged) + charged;
        c.charged = charged;
    }
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
        }
    }

    /// Takes the in-flight budgets of `limits` ([`Limits::in_flight_bytes`],
    /// [`Limits::in_flight_total_bytes`]); the other limits are the capture layer's.
    pub fn set_limits(&mut self, limits: Limits) {
        self.budget.per_conn = limits.in_flight_bytes;
        self.budget.total_limit = limits.in_flight_total_bytes;
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
                let i = c.dir_index(from);
                let d = &mut c.dirs[i];
                if d.buf.len() == d.pos {
                    d.start = offset;
                }
                d.buf.extend_from_slice(&bytes);
                d.packets
                    .push_back((offset + bytes.len() as u64, packet, time, acked));
                if c.server.is_none() {
                    decide_server(c, i);
                }
                // Requests first: a response direction may be waiting for a request, to pair
                // a frame or to prove a boundary.
                let requests = c.requests();
                let budget = &mut self.budget;
                drain(conn, c, requests, max_frame, budget, out);
                drain(conn, c, 1 - requests, max_frame, budget, out);
                release_held(conn, c, budget, out);
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
                if held > 0 {
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
                d.start = offset + len;
                d.lose_sync(d.start);
                d.lost_since_frame = true;
                if c.server.is_some() {
                    release_held(conn, c, &mut self.budget, out);
                }
            }
            Event::Close {
                conn,
                packet,
                reason,
            } => {
                let Some(mut c) = self.conns.remove(&conn) else {
                    return;
                };
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
            Event::Note { packet, message } => out(Item::Note(Note {
                conn: None,
                packet: Some(packet),
                message,
                partial: true,
            })),
        }
    }
}

/// Without a SYN or the broker's port (a capture that began mid-connection): the client is
/// the side where an ElectLeaders request is found at a boundary that can be proven. A
/// weaker sign is not enough: a response with a small correlation id reads as a request
/// header of api key 0.
fn decide_server(c: &mut Conn, i: usize) {
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
    } else {
        // What was ruled out as a request here is let go, so that an undecided connection
        // holds at most a frame's worth per direction.
        c.dirs[i].drop_ruled_out();
    }
}

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
            d.waiting.clear();
            d.skipped = 0;
        }
        let d = &mut c.dirs[i];
        let frame_len = match split_frame_with_max(d.live(), max_frame) {
            Ok((frame, _)) => frame.len(),
            Err(e) if e.is_incomplete() => return,
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
        let mut waits = role == Role::Requests;
        let what = match role {
            Role::Requests => match peek_request(&frame) {
                Ok(peek) => {
                    let pending = Pending::from(peek);
                    let asked = Asked {
                        time: origin.time,
                        index: origin.index,
                    };
                    if never_answered(&frame, pending) {
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
                    if pending.is_elect_leaders() {
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
                    continue;
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
                            frame,
                        },
                        correlation_id: peek.correlation_id,
                        acked,
                        doubt: Doubt::None,
                    };
                    if c.held.is_empty()
                        && !must_wait(c, &held)
                        && !in_doubt(c, peek.correlation_id)
                    {
                        hand_on(conn, c, held, None, budget, out);
                        continue;
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
                    continue;
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
                    continue;
                }
            },
        };
        out(Item::Frame(Found {
            origin,
            what,
            request: None,
            waits,
            frame,
        }));
    }
}

const BEYOND_BOUND: &str = "; it waited for its request beyond the bound (256 responses or \
     8 MiB held on the connection)";

/// Hands on the held responses that can be: paired with a request now in flight, or known
/// to have none (the requests' direction has caught up with what the response's packet
/// acknowledged).
fn release_held(conn: ConnId, c: &mut Conn, budget: &mut Budget, out: &mut dyn FnMut(Item)) {
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
fn must_wait(c: &Conn, h: &Held) -> bool {
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
fn in_doubt(c: &Conn, correlation_id: i32) -> bool {
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
fn settle_front(c: &mut Conn, end: bool) {
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
fn release_front(
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
fn hand_on(
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
    found.what = match answered.map(|w| w.pending) {
        Some(request) if request.is_elect_leaders() => What::ElectResponse {
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

/// Whether Kafka never answers this request: a Produce with `acks` 0. The header and the
/// body's first fields are read as Kafka's ProduceRequest.json has them: request header v1
/// (v0-v8) or v2 with tagged fields (v9+, flexible); from v3 a nullable `transactional_id`
/// (a compact string from v9) before `acks` (int16). A frame that ends first is taken as
/// answered (the response, if any, is then paired; if none comes, it is unanswered).
fn never_answered(frame: &[u8], request: Pending) -> bool {
    const PRODUCE: i16 = 0;
    if request.api_key != PRODUCE {
        return false;
    }
    let version = request.api_version;
    let flexible = version >= 9;
    // Size prefix, api key, version, correlation id, then the client id (int16 length).
    let mut at = 12;
    let Some(len) = be_i16(frame, at) else {
        return false;
    };
    at += 2 + usize::try_from(len).unwrap_or(0);
    if flexible {
        // The header's tagged fields: a count, then tag, size and bytes of each.
        let Some(count) = uvarint(frame, &mut at) else {
            return false;
        };
        for _ in 0..count {
            let (Some(_tag), Some(size)) = (uvarint(frame, &mut at), uvarint(frame, &mut at))
            else {
                return false;
            };
            at = at.saturating_add(size as usize);
            if at > frame.len() {
                return false;
            }
        }
    }
    // Produce's transactional_id, from its version 3 (not an ElectLeaders version).
    const TRANSACTIONAL_ID_SINCE: i16 = 3;
    if version >= TRANSACTIONAL_ID_SINCE {
        if flexible {
            // Compact nullable string: length + 1, 0 for null.
            let Some(n) = uvarint(frame, &mut at) else {
                return false;
            };
            at = at.saturating_add((n as usize).saturating_sub(1));
        } else {
            let Some(n) = be_i16(frame, at) else {
                return false;
            };
            at += 2 + usize::try_from(n).unwrap_or(0);
        }
    }
    be_i16(frame, at) == Some(0)
}

/// An unsigned varint at `*at` (at most 5 bytes: a u32), moving `*at` past it.
fn uvarint(b: &[u8], at: &mut usize) -> Option<u32> {
    let mut value = 0u32;
    for i in 0..5 {
        let byte = *b.get(*at)?;
        *at += 1;
        value |= u32::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

fn be_i32(b: &[u8], at: usize) -> Option<i32> {
    Some(i32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn be_i16(b: &[u8], at: usize) -> Option<i16> {
    Some(i16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

/// Could a request frame start at `b[0]`: a size that holds a request header, a known API
/// key, a sane version, a client id length that fits.
fn plausible_request(b: &[u8], max_frame: usize) -> bool {
    let (Some(size), Some(key), Some(version), Some(client_id)) =
        (be_i32(b, 0), be_i16(b, 4), be_i16(b, 6), be_i16(b, 12))
    else {
        return false;
    };
    (10..=max_frame as i64).contains(&i64::from(size))
        && is_known_request(key, version)
        && (client_id == -1 || (0..=size - 10).contains(&i32::from(client_id)))
}

/// Could a response to one of the requests waiting start at `b[0]`?
fn plausible_response(b: &[u8], in_flight: &VecDeque<Waiting>, max_frame: usize) -> bool {
    let (Some(size), Some(correlation_id)) = (be_i32(b, 0), be_i32(b, 4)) else {
        return false;
    };
    (4..=max_frame as i64).contains(&i64::from(size))
        && in_flight
            .iter()
            .any(|w| w.pending.correlation_id == correlation_id)
}

/// What a position of a stream that lost its boundaries may be.
enum Verdict {
    /// A frame starts here.
    Proven,
    /// Maybe: more bytes are needed to tell.
    Waiting,
    /// No frame starts here.
    Rejected,
}

/// Judges live position `p`: the frame there is plausible, and either parses as
/// ElectLeaders or (unless `strong_only`) is followed by another plausible frame. With
/// `leading` (the first byte a capture that joined a connection has of its responses), a
/// frame there may also answer a request sent before the capture: see [`judge_leading`].
fn judge(
    b: &[u8],
    p: usize,
    role: Role,
    in_flight: &VecDeque<Waiting>,
    max_frame: usize,
    strong_only: bool,
    leading: bool,
) -> Verdict {
    match judge_plain(b, p, role, in_flight, max_frame, strong_only) {
        Verdict::Rejected if leading => judge_leading(&b[p..], in_flight, max_frame),
        verdict => verdict,
    }
}

/// The answers a capture that joined a connection has first, to requests sent before it
/// began: frames of a sane size back to back (at most 16, and a frame's worth of bytes in
/// all) that end exactly where a response to a request the capture saw starts.
fn judge_leading(here: &[u8], in_flight: &VecDeque<Waiting>, max_frame: usize) -> Verdict {
    let mut at = 0usize;
    for _ in 0..16 {
        let Some(size) = be_i32(here, at) else {
            return Verdict::Waiting;
        };
        if !(4..=max_frame as i64).contains(&i64::from(size)) {
            return Verdict::Rejected;
        }
        at += SIZE_PREFIX_LEN + size as usize;
        if at > max_frame {
            return Verdict::Rejected;
        }
        match here.get(at..) {
            Some(next) if next.len() >= 8 => {
                if plausible_response(next, in_flight, max_frame) {
                    return Verdict::Proven;
                }
            }
            _ => return Verdict::Waiting,
        }
    }
    Verdict::Rejected
}

fn judge_plain(
    b: &[u8],
    p: usize,
    role: Role,
    in_flight: &VecDeque<Waiting>,
    max_frame: usize,
    strong_only: bool,
) -> Verdict {
    let need = match role {
        Role::Requests => SIZE_PREFIX_LEN + 10,
        Role::Responses => 8,
    };
    let plausible = |at: &[u8]| match role {
        Role::Requests => plausible_request(at, max_frame),
        Role::Responses => plausible_response(at, in_flight, max_frame),
    };
    let here = &b[p..];
    if here.len() < need {
        return Verdict::Waiting;
    }
    if !plausible(here) {
        return Verdict::Rejected;
    }
    let end = SIZE_PREFIX_LEN + be_i32(here, 0).unwrap_or(0) as usize;
    if end > here.len() {
        return Verdict::Waiting;
    }
    let frame = &here[..end];
    let proven = match role {
        Role::Requests => peek_request(frame)
            .is_ok_and(|peek| peek.is_elect_leaders() && parse_request(frame).is_ok()),
        Role::Responses => {
            let correlation_id = be_i32(here, 4).unwrap_or(0);
            in_flight.iter().map(|w| &w.pending).any(|q| {
                q.correlation_id == correlation_id
                    && q.is_elect_leaders()
                    && parse_response(frame, q.api_version).is_ok()
            })
        }
    };
    if proven {
        return Verdict::Proven;
    }
    if strong_only {
        return Verdict::Rejected;
    }
    let next = &here[end..];
    if next.len() < need {
        Verdict::Waiting
    } else if plausible(next) {
        Verdict::Proven
    } else {
        Verdict::Rejected
    }
}

/// The first live position where a frame provably starts, if one can be proven yet. Each
/// position is judged once, but for the few that wait for more bytes: the work is linear
/// in the bytes searched.
fn find_boundary(
    d: &mut Dir,
    role: Role,
    in_flight: &VecDeque<Waiting>,
    max_frame: usize,
    strong_only: bool,
    leading: bool,
) -> Option<usize> {
    const MAX_WAITING: usize = 32;
    let start = d.start;
    let b = &d.buf[d.pos..];
    let need = match role {
        Role::Requests => SIZE_PREFIX_LEN + 10,
        Role::Responses => 8,
    };
    // Candidates that were waiting for bytes, oldest first.
    let mut still = Vec::new();
    for &at in &d.waiting {
        let Some(p) = at.checked_sub(start).map(|p| p as usize) else {
            continue;
        };
        if p >= b.len() {
            continue;
        }
        match judge(
            b,
            p,
            role,
            in_flight,
            max_frame,
            strong_only,
            leading && at == 0,
        ) {
            Verdict::Proven => {
                d.waiting.clear();
                return Some(p);
            }
            Verdict::Waiting => still.push(at),
            Verdict::Rejected => {}
        }
    }
    d.waiting = still;
    // Then the positions not judged yet.
    let mut p = d.frontier.saturating_sub(start) as usize;
    while p + need <= b.len() {
        let leading = leading && start + p as u64 == 0;
        match judge(b, p, role, in_flight, max_frame, strong_only, leading) {
            Verdict::Proven => {
                d.waiting.clear();
                return Some(p);
            }
            Verdict::Waiting if d.waiting.len() < MAX_WAITING => d.waiting.push(start + p as u64),
            Verdict::Waiting | Verdict::Rejected => {}
        }
        p += 1;
    }
    d.frontier = start + p as u64;
    None
}

/// A frame of a capture that the library refused, as a note that names where it was.
pub fn bad_frame(o: &Origin, e: &kafka_elect_leaders::Error) -> Note {
    Note {
        conn: Some((o.conn, o.from, o.to)),
        packet: Some(o.last_packet),
        message: format!(
            "frame at stream offset {}: {} at frame byte {}: {}",
            o.offset, e.field, e.offset, e.kind
        ),
        partial: true,
    }
}

/// A capture read as Kafka traffic: a [`Capture`]'s events through an [`Analyzer`], as one
/// iterator of [`Item`]s, each handed out as soon as it is complete. An error is an I/O
/// error of the reader or a capture that cannot be read on (the items before it were
/// handed out); the iterator ends after it.
pub struct Traffic<R: std::io::Read> {
    capture: Capture<R>,
    analyzer: Analyzer,
    ready: VecDeque<Item>,
    done: bool,
}

impl<R: std::io::Read> Traffic<R> {
    /// Reads a pcap or pcapng capture from `reader`; `port` is the broker's TCP port when
    /// known (else the side that received the SYN, else the side requests go to).
    pub fn new(reader: R, port: Option<u16>) -> Result<Self, CaptureError> {
        Ok(Self::from_capture(Capture::new(reader)?, port))
    }

    /// The traffic of a capture already opened, within its limits (set them first).
    pub fn from_capture(capture: Capture<R>, port: Option<u16>) -> Self {
        let mut analyzer = Analyzer::new(port);
        analyzer.set_limits(capture.limits());
        Traffic {
            capture,
            analyzer,
            ready: VecDeque::new(),
            done: false,
        }
    }

    /// The capture's counts so far.
    pub fn stats(&self) -> CaptureStats {
        self.capture.stats()
    }
}

impl<R: std::io::Read> Iterator for Traffic<R> {
    type Item = Result<Item, CaptureError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.ready.pop_front() {
                return Some(Ok(item));
            }
            if self.done {
                return None;
            }
            match self.capture.next_event() {
                Ok(Some(event)) => {
                    let ready = &mut self.ready;
                    self.analyzer.feed(event, &mut |item| ready.push_back(item));
                }
                Ok(None) => self.done = true,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }
}
