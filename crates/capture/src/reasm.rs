//! TCP reassembly: connections keyed by their unordered pair of endpoints, and per direction a
//! stream offset, the out-of-order segments held until the hole before them is filled, and a
//! short window of the bytes last delivered (to tell a faithful retransmission from one whose
//! bytes disagree).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use crate::decode::{Segment, TCP_ACK, TCP_FIN, TCP_RST, TCP_SYN};
use crate::types::{CloseReason, ConnId, Endpoint, Event, Limits, Timestamp};

/// Out-of-order bytes held per direction, at most; past this the lowest hole is declared a gap.
pub(crate) const HELD_LIMIT: usize = 8 << 20;
/// What one held piece costs beyond its bytes (map node, bookkeeping), so that a flood of tiny
/// segments is bounded too.
const PIECE_OVERHEAD: usize = 64;
/// Bytes last delivered per direction, kept to compare retransmissions with.
const RECENT_LIMIT: usize = 64 << 10;
/// Closed connections remembered (so that their last ACKs do not open new ones), at most.
const CLOSED_LIMIT: usize = 1 << 16;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) struct Key(Endpoint, Endpoint);

impl Key {
    fn new(x: Endpoint, y: Endpoint) -> Key {
        if x <= y {
            Key(x, y)
        } else {
            Key(y, x)
        }
    }
}

/// The packet that carried some bytes: its number, capture time and how far it acknowledged
/// the other direction. Each held piece keeps its own, so that bytes delivered later (after
/// a hole is filled or declared lost) are still named by the packet that carried them, never
/// by the packet that released them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Seen {
    pub packet: u64,
    pub time: Timestamp,
    pub acked: Option<u64>,
}

enum Piece {
    Bytes(Vec<u8>, Seen),
    /// Bytes the capture never had (cut by the snap length).
    Lost(u64),
}

impl Piece {
    fn len(&self) -> u64 {
        match self {
            Piece::Bytes(b, _) => b.len() as u64,
            Piece::Lost(n) => *n,
        }
    }

    fn cost(&self) -> usize {
        match self {
            Piece::Bytes(b, _) => b.len() + PIECE_OVERHEAD,
            Piece::Lost(_) => PIECE_OVERHEAD,
        }
    }
}

/// One direction of a connection.
#[derive(Default)]
struct Direction {
    /// The sequence number of stream offset 0, once known.
    base: Option<u32>,
    /// Everything before this offset has been delivered (as Data or Gap).
    next: u64,
    /// Out-of-order pieces, by stream offset; they do not overlap and all start at or after
    /// `next`.
    held: BTreeMap<u64, Piece>,
    held_cost: usize,
    /// The last bytes delivered: offsets `next - recent.len() .. next`.
    recent: VecDeque<u8>,
    /// The stream offset where the FIN sits, once seen.
    fin: Option<u64>,
    /// The end of the furthest segment seen (counting the FIN's sequence number).
    seen_end: u64,
    /// How far the peer acknowledged (as a stream offset; the FIN counts one).
    acked: u64,
}

impl Direction {
    /// The stream offset of a sequence number, taken as the one nearest to `next` (so that
    /// sequence numbers wrap around 2^32 transparently). Negative: before the stream began.
    fn offset(&self, base: u32, seq: u32) -> i128 {
        let rel = seq.wrapping_sub(base);
        let diff = rel.wrapping_sub(self.next as u32) as i32;
        i128::from(self.next) + i128::from(diff)
    }

    fn complete(&self) -> bool {
        self.held.is_empty() && self.fin.is_some_and(|fin| self.next >= fin)
    }

    fn remember(&mut self, bytes: &[u8]) {
        let tail = &bytes[bytes.len().saturating_sub(RECENT_LIMIT)..];
        let excess = (self.recent.len() + tail.len()).saturating_sub(RECENT_LIMIT);
        self.recent.drain(..excess);
        self.recent.extend(tail);
    }

    /// Where `bytes`, found at stream offset `start` (below `next`), disagree with what was
    /// delivered there, as far as the recent window remembers it: the stream offsets from
    /// the first byte that differs to the last (`None`: they agree).
    fn disagreement_with_delivered(&self, start: u64, bytes: &[u8]) -> Disagreement {
        let window_start = self.next - self.recent.len() as u64;
        let from = start.max(window_start);
        let to = (start + bytes.len() as u64).min(self.next);
        if from >= to {
            return None;
        }
        let theirs = self
            .recent
            .range((from - window_start) as usize..(to - window_start) as usize);
        let ours = &bytes[(from - start) as usize..(to - start) as usize];
        span(theirs.zip(ours).map(|(a, b)| a != b), from)
    }
}

/// The stream offsets where bytes captured twice disagree: from the first byte that
/// differs to the last (exclusive); `None` when they agree.
type Disagreement = Option<(u64, u64)>;

/// The span of the `true`s of `differs`, as stream offsets from `base`.
fn span(differs: impl Iterator<Item = bool>, base: u64) -> Disagreement {
    let mut found = None;
    for (i, d) in differs.enumerate() {
        if d {
            let at = base + i as u64;
            found = Some(found.map_or((at, at + 1), |(a, _)| (a, at + 1)));
        }
    }
    found
}

/// Both spans as one.
fn union(a: Disagreement, b: Disagreement) -> Disagreement {
    match (a, b) {
        (Some((a0, a1)), Some((b0, b1))) => Some((a0.min(b0), a1.max(b1))),
        (x, None) | (None, x) => x,
    }
}

struct Conn {
    id: ConnId,
    a: Endpoint,
    b: Endpoint,
    dirs: [Direction; 2],
    /// The capture time of its last packet.
    last: Timestamp,
    /// Its node in the tracker's list of connections by last activity.
    node: usize,
}

/// The open connections, least recently active first: a doubly linked list in a slab, so
/// that a packet moves its connection to the back in constant time.
#[derive(Default)]
struct Recency {
    nodes: Vec<Node>,
    free: Vec<usize>,
    head: Option<usize>,
    tail: Option<usize>,
}

#[derive(Clone, Copy)]
struct Node {
    key: Key,
    prev: Option<usize>,
    next: Option<usize>,
}

impl Recency {
    /// Adds `key` as the most recently active; returns its node.
    fn push(&mut self, key: Key) -> usize {
        let node = Node {
            key,
            prev: self.tail,
            next: None,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.nodes[i] = node;
                i
            }
            None => {
                self.nodes.push(node);
                self.nodes.len() - 1
            }
        };
        self.link_back(i);
        i
    }

    fn link_back(&mut self, i: usize) {
        self.nodes[i].prev = self.tail;
        self.nodes[i].next = None;
        match self.tail {
            Some(t) => self.nodes[t].next = Some(i),
            None => self.head = Some(i),
        }
        self.tail = Some(i);
    }

    fn unlink(&mut self, i: usize) {
        let Node { prev, next, .. } = self.nodes[i];
        match prev {
            Some(p) => self.nodes[p].next = next,
            None => self.head = next,
        }
        match next {
            Some(n) => self.nodes[n].prev = prev,
            None => self.tail = prev,
        }
    }

    /// `i` was just active.
    fn touch(&mut self, i: usize) {
        if self.tail != Some(i) {
            self.unlink(i);
            self.link_back(i);
        }
    }

    fn remove(&mut self, i: usize) {
        self.unlink(i);
        self.free.push(i);
    }

    /// The least recently active connection.
    fn oldest(&self) -> Option<Key> {
        self.head.map(|i| self.nodes[i].key)
    }
}

/// What a direction's delivery produced, before it is turned into events.
enum Out {
    Data(u64, Vec<u8>, Seen),
    /// Offset, length, and whether the bytes were cut by the snap length (else lost).
    Gap(u64, u64, bool),
}

/// All connections of a capture.
#[derive(Default)]
pub(crate) struct Tracker {
    conns: HashMap<Key, Conn>,
    closed: HashSet<Key>,
    closed_order: VecDeque<Key>,
    last_id: u32,
    recency: Recency,
    limits: Limits,
    /// The most connections open at once.
    peak: usize,
    /// Connections closed for being idle, and evicted by the limit.
    idle_closed: u64,
    evicted: u64,
    /// The capture clock idleness is judged by: moved only by packets that continue a
    /// connection within the idle timeout of its own previous packet, so that one packet
    /// stamped far ahead (unrelated traffic, a new connection) lets go of nothing.
    clock: Option<Timestamp>,
    /// Connections whose 4-tuple a new SYN reused, kept for their late segments (an answer
    /// to a request sent before the new SYN): those whose sequence numbers fit the old
    /// connection and not the new one go to the old. Closed with the new one, when another
    /// SYN reuses the 4-tuple again, or past [`LINGER_LIMIT`] (oldest first).
    lingering: HashMap<Key, Conn>,
    lingering_order: VecDeque<Key>,
}

/// Connections kept for their late segments after a new SYN reused their 4-tuple, at most.
const LINGER_LIMIT: usize = 1024;

/// How far from where a direction's stream stands a segment may start and still be taken
/// as one of its own (for a 4-tuple reused by a new connection): behind by the window of
/// bytes remembered, or ahead by a megabyte.
const OWN_BEHIND: i128 = RECENT_LIMIT as i128;
const OWN_AHEAD: i128 = 1 << 20;

fn nanos(t: Timestamp) -> u128 {
    u128::from(t.secs) * 1_000_000_000 + u128::from(t.nanos)
}

/// Where events and notes go.
pub(crate) struct Sink<'a> {
    pub events: &'a mut VecDeque<Event>,
    pub notes: &'a mut u64,
}

impl Sink<'_> {
    fn push(&mut self, event: Event) {
        if matches!(event, Event::Note { .. }) {
            *self.notes += 1;
        }
        self.events.push_back(event);
    }
}

impl Tracker {
    /// How many connections were opened so far.
    pub fn connections(&self) -> u32 {
        self.last_id
    }

    /// The connections open now, the most open at once, those closed for being idle, and
    /// those evicted by the limit.
    pub fn tracking(&self) -> (usize, usize, u64, u64) {
        (self.conns.len(), self.peak, self.idle_closed, self.evicted)
    }

    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Closes the connections idle for longer than the idle timeout at capture time `now`.
    fn close_idle(&mut self, now: Timestamp, packet: u64, sink: &mut Sink) {
        let timeout = self.limits.idle_timeout.as_nanos();
        while let Some(key) = self.recency.oldest() {
            let Some(conn) = self.conns.get(&key) else {
                break;
            };
            if nanos(conn.last) + timeout >= nanos(now) {
                break;
            }
            self.idle_closed += 1;
            self.close_as(key, (packet, now), CloseReason::Idle, false, sink);
        }
    }

    /// The open connections, last opened first (pop them to close in order).
    pub fn open_keys(&self) -> Vec<Key> {
        let mut open: Vec<(ConnId, Key)> = self.conns.iter().map(|(k, c)| (c.id, *k)).collect();
        open.sort_unstable_by_key(|x| std::cmp::Reverse(x.0));
        open.into_iter().map(|(_, k)| k).collect()
    }

    /// Closes one connection at the end of the capture; `at` is the last packet read.
    pub fn close_at_end(&mut self, key: Key, at: (u64, Timestamp), sink: &mut Sink<'_>) {
        self.close(key, at, CloseReason::EndOfCapture, sink);
    }

    pub fn segment(&mut self, seg: &Segment<'_>, packet: u64, time: Timestamp, sink: &mut Sink) {
        let key = Key::new(seg.src, seg.dst);
        let syn = seg.flags & TCP_SYN != 0;
        let pure_syn = syn && seg.flags & TCP_ACK == 0;
        let carries = !seg.payload.is_empty() || seg.missing > 0;
        // Idleness is judged by the connections' own packets: this one's previous packet,
        // and a clock that only packets continuing a connection move.
        let timeout = self.limits.idle_timeout.as_nanos();
        let own_idle = self
            .conns
            .get(&key)
            .map(|conn| nanos(conn.last) + timeout < nanos(time));
        if own_idle == Some(false) {
            self.clock = Some(self.clock.map_or(time, |c| c.max(time)));
        }
        if let Some(clock) = self.clock {
            self.close_idle(clock, packet, sink);
        }
        if !syn && self.lingering.contains_key(&key) && self.is_lingerings(key, seg) {
            self.lingering_segment(key, seg, packet, time, sink);
            return;
        }
        if own_idle == Some(true) && self.conns.contains_key(&key) {
            // Its own packet comes after longer than the timeout: a broker would have
            // closed it; what follows is a connection seen mid-stream.
            self.idle_closed += 1;
            self.close_as(key, (packet, time), CloseReason::Idle, false, sink);
        }

        let reused = self.conns.get(&key).is_some_and(|conn| {
            let dir = &conn.dirs[usize::from(seg.src != conn.a)];
            // A SYN with a new initial sequence number on a connection that has seen traffic:
            // a new connection on the same 4-tuple (the old one's end was not captured).
            pure_syn
                && dir.base != Some(seg.seq.wrapping_add(1))
                && (dir.base.is_some()
                    || conn
                        .dirs
                        .iter()
                        .any(|d| d.next > 0 || !d.held.is_empty() || d.fin.is_some()))
        });
        if reused {
            // The old connection is kept for its late segments (see `lingering`).
            self.linger(key, (packet, time), sink);
            self.open(key, seg, true, packet, time, sink);
        } else if self.conns.contains_key(&key) {
            // Carry on below.
        } else if self.closed.contains(&key) {
            if !pure_syn {
                if carries {
                    sink.push(Event::Note {
                        packet,
                        partial: true,
                        message: format!(
                            "TCP data {} -> {} after the connection closed: ignored",
                            seg.src, seg.dst
                        ),
                    });
                }
                return;
            }
            self.closed.remove(&key);
            self.open(key, seg, true, packet, time, sink);
        } else if syn || carries {
            self.open(key, seg, pure_syn, packet, time, sink);
        } else {
            // A pure ACK, FIN or RST of a connection never seen: nothing to follow.
            return;
        }

        let Some(conn) = self.conns.get_mut(&key) else {
            return;
        };
        conn.last = conn.last.max(time);
        self.recency.touch(conn.node);
        let d = usize::from(seg.src != conn.a);
        let (from, to) = (seg.src, seg.dst);
        let mut start_seq = seg.seq;
        {
            let dir = &mut conn.dirs[d];
            if syn {
                start_seq = seg.seq.wrapping_add(1);
                match dir.base {
                    None => dir.base = Some(start_seq),
                    Some(base) if base == start_seq => {}
                    Some(_) if dir.next == 0 && dir.held.is_empty() => dir.base = Some(start_seq),
                    Some(_) => {
                        sink.push(Event::Note {
                            packet,
                            partial: true,
                            message: format!(
                                "SYN {from} -> {to} with a new initial sequence number on an open connection: ignored"
                            ),
                        });
                        return;
                    }
                }
            } else if dir.base.is_none() && (carries || seg.flags & TCP_FIN != 0) {
                // The capture began mid-connection: the first byte seen is offset 0.
                dir.base = Some(start_seq);
            }
        }

        if seg.flags & TCP_RST != 0 {
            self.close(key, (packet, time), CloseReason::Rst, sink);
            return;
        }

        // What this packet acknowledges of the other direction: the bytes its sender had
        // received, so every request a response in it answers ends there or before.
        let acked = (seg.flags & TCP_ACK != 0)
            .then(|| {
                let other = &conn.dirs[1 - d];
                let base = other.base?;
                u64::try_from(other.offset(base, seg.ack)).ok()
            })
            .flatten();
        let seen_here = Seen {
            packet,
            time,
            acked,
        };
        let dir = &mut conn.dirs[d];
        let Some(base) = dir.base else {
            return;
        };
        let start = dir.offset(base, start_seq);
        let len = seg.payload.len() as u64 + seg.missing;
        let mut out = Vec::new();
        let keepalive = len <= 1 && start == i128::from(dir.next) - 1;
        let differs = if len > 0 && !keepalive {
            accept(dir, start, seg.payload, seg.missing, seen_here, &mut out)
        } else {
            None
        };
        if let Some((a, b)) = differs {
            sink.push(Event::Note {
                packet,
                partial: true,
                message: format!(
                    "TCP bytes {from} -> {to} at stream offsets {a}..{b} disagree with the bytes captured first there: kept the first"
                ),
            });
        }
        let end = start + i128::from(len);
        let fin = seg.flags & TCP_FIN != 0;
        if fin && dir.fin.is_none() && end >= 0 {
            dir.fin = Some(end as u64);
        }
        let seen = end + i128::from(fin);
        if seen > i128::from(dir.seen_end) {
            dir.seen_end = seen as u64;
        }
        while dir.held_cost > HELD_LIMIT {
            // Give up on the lowest hole.
            let Some((&first, _)) = dir.held.first_key_value() else {
                break;
            };
            gap(dir, first - dir.next, false, &mut out);
            drain(dir, &mut out);
        }
        emit(conn.id, from, to, out, packet, sink);

        if seg.flags & TCP_ACK != 0 {
            // What the peer acknowledged and the capture does not have was lost by the
            // capture, not by the network: it will not come again.
            let other = &mut conn.dirs[1 - d];
            if let Some(base) = other.base {
                let acked = other.offset(base, seg.ack);
                if acked > i128::from(other.acked) && acked <= i128::from(other.seen_end) {
                    other.acked = acked as u64;
                    let mut out = Vec::new();
                    confirm_lost(other, &mut out);
                    emit(conn.id, to, from, out, packet, sink);
                }
            }
        }

        if conn.dirs.iter().all(Direction::complete) {
            self.close(key, (packet, time), CloseReason::Fin, sink);
        }
    }

    fn open(
        &mut self,
        key: Key,
        seg: &Segment<'_>,
        syn_seen: bool,
        packet: u64,
        time: Timestamp,
        sink: &mut Sink,
    ) {
        while self.conns.len() >= self.limits.max_connections.max(1) {
            let Some(oldest) = self.recency.oldest() else {
                break;
            };
            self.evicted += 1;
            self.close_as(oldest, (packet, time), CloseReason::Evicted, false, sink);
        }
        self.last_id = self.last_id.saturating_add(1);
        let id = ConnId(self.last_id);
        let node = self.recency.push(key);
        self.conns.insert(
            key,
            Conn {
                id,
                a: seg.src,
                b: seg.dst,
                dirs: Default::default(),
                last: time,
                node,
            },
        );
        self.peak = self.peak.max(self.conns.len());
        sink.push(Event::Open {
            conn: id,
            a: seg.src,
            b: seg.dst,
            syn_seen,
            packet,
            time,
        });
    }

    /// Whether `seg`, on the 4-tuple `key` that a new SYN reused, belongs to the old
    /// connection: its sequence number fits where the old one's direction stands, and not
    /// where the new one's does.
    fn is_lingerings(&self, key: Key, seg: &Segment<'_>) -> bool {
        let fits = |conn: &Conn| {
            let dir = &conn.dirs[usize::from(seg.src != conn.a)];
            dir.base.is_some_and(|base| {
                let at = dir.offset(base, seg.seq) - i128::from(dir.next);
                (-OWN_BEHIND..=OWN_AHEAD).contains(&at)
            })
        };
        self.lingering.get(&key).is_some_and(fits) && !self.conns.get(&key).is_some_and(fits)
    }

    /// Keeps the connection on `key` (its 4-tuple just reused by a new SYN) for its late
    /// segments; one kept before on the same 4-tuple is closed now.
    fn linger(&mut self, key: Key, at: (u64, Timestamp), sink: &mut Sink) {
        self.close_lingering(key, at, CloseReason::Reused, sink);
        let Some(conn) = self.conns.remove(&key) else {
            return;
        };
        self.recency.remove(conn.node);
        if self.lingering_order.len() >= LINGER_LIMIT {
            if let Some(oldest) = self.lingering_order.pop_front() {
                self.close_lingering(oldest, at, CloseReason::Reused, sink);
            }
        }
        self.lingering.insert(key, conn);
        self.lingering_order.push_back(key);
    }

    /// Runs `f` with the lingering connection of `key` in the place of the open one (which
    /// is put back after, with its place in the recency list), and keeps it lingering after
    /// unless `f` closed it.
    fn with_lingering(&mut self, key: Key, f: impl FnOnce(&mut Tracker)) {
        let Some(mut old) = self.lingering.remove(&key) else {
            return;
        };
        self.lingering_order.retain(|k| *k != key);
        let new = self.conns.remove(&key);
        old.node = self.recency.push(key);
        self.conns.insert(key, old);
        f(self);
        if let Some(old) = self.conns.remove(&key) {
            self.recency.remove(old.node);
            self.lingering.insert(key, old);
            self.lingering_order.push_back(key);
        }
        if let Some(new) = new {
            self.conns.insert(key, new);
        }
    }

    /// A late segment of the connection a new SYN superseded on `key`.
    fn lingering_segment(
        &mut self,
        key: Key,
        seg: &Segment<'_>,
        packet: u64,
        time: Timestamp,
        sink: &mut Sink,
    ) {
        self.with_lingering(key, |t| t.segment(seg, packet, time, sink));
    }

    /// Closes the lingering connection of `key`, if any.
    fn close_lingering(
        &mut self,
        key: Key,
        at: (u64, Timestamp),
        reason: CloseReason,
        sink: &mut Sink,
    ) {
        self.with_lingering(key, |t| t.close_as(key, at, reason, false, sink));
    }

    /// Flushes what is held (gaps for the holes), then closes. `at` is the packet (and its
    /// time) that the flushed events name; at the end of the capture
    /// ([`CloseReason::EndOfCapture`]) the Close names no packet.
    fn close(&mut self, key: Key, at: (u64, Timestamp), reason: CloseReason, sink: &mut Sink) {
        self.close_as(key, at, reason, true, sink);
    }

    /// As `close`; `remember` false for a connection let go by a limit, whose later packets
    /// open it again (as one seen mid-stream) rather than being ignored.
    fn close_as(
        &mut self,
        key: Key,
        at: (u64, Timestamp),
        reason: CloseReason,
        remember: bool,
        sink: &mut Sink,
    ) {
        let Some(mut conn) = self.conns.remove(&key) else {
            return;
        };
        self.recency.remove(conn.node);
        // The connection its 4-tuple superseded ends with it, first (it began first).
        if self.lingering.contains_key(&key) {
            self.conns.insert(key, conn);
            let node = self.conns.get(&key).map(|c| c.node);
            self.close_lingering(key, at, CloseReason::Reused, sink);
            conn = match self.conns.remove(&key) {
                Some(conn) => conn,
                None => return,
            };
            debug_assert_eq!(Some(conn.node), node);
        }
        let ends = [(conn.a, conn.b), (conn.b, conn.a)];
        for (dir, (from, to)) in conn.dirs.iter_mut().zip(ends) {
            let mut out = Vec::new();
            while let Some((&first, _)) = dir.held.first_key_value() {
                gap(dir, first - dir.next, false, &mut out);
                drain(dir, &mut out);
            }
            if let Some(fin) = dir.fin {
                if fin > dir.next {
                    gap(dir, fin - dir.next, false, &mut out);
                }
            }
            emit(conn.id, from, to, out, at.0, sink);
        }
        let at_end = reason == CloseReason::EndOfCapture;
        sink.push(Event::Close {
            conn: conn.id,
            packet: (!at_end).then_some(at.0),
            reason,
        });
        if !at_end && remember {
            if self.closed_order.len() >= CLOSED_LIMIT {
                if let Some(old) = self.closed_order.pop_front() {
                    self.closed.remove(&old);
                }
            }
            if self.closed.insert(key) {
                self.closed_order.push_back(key);
            }
        }
    }
}

/// Takes in a segment's bytes at stream offset `start` (may be negative: before the stream
/// began): drops what was delivered already, holds what is ahead, and delivers what is now in
/// order. Where some of its bytes disagree with bytes captured first, says where.
fn accept(
    dir: &mut Direction,
    start: i128,
    bytes: &[u8],
    missing: u64,
    seen: Seen,
    out: &mut Vec<Out>,
) -> Disagreement {
    let next = i128::from(dir.next);
    let end = start + bytes.len() as i128 + i128::from(missing);
    if end <= next {
        if start < 0 {
            return None;
        }
        return dir.disagreement_with_delivered(start as u64, bytes);
    }
    let mut differs = None;
    let (start, bytes, missing) = if start < next {
        let skip = (next - start) as u64;
        if start >= 0 {
            differs = dir.disagreement_with_delivered(start as u64, bytes);
        }
        let skip_bytes = skip.min(bytes.len() as u64) as usize;
        let skip_missing = skip - skip_bytes as u64;
        (dir.next, &bytes[skip_bytes..], missing - skip_missing)
    } else {
        (start as u64, bytes, missing)
    };
    if start == dir.next && dir.held.is_empty() {
        // The common case: in order, nothing held.
        if !bytes.is_empty() {
            dir.next += bytes.len() as u64;
            dir.remember(bytes);
            out.push(Out::Data(start, bytes.to_vec(), seen));
        }
        if missing > 0 {
            gap(dir, missing, true, out);
        }
        return differs;
    }
    if !bytes.is_empty() {
        differs = union(differs, hold(dir, start, PieceRef::Bytes(bytes, seen)));
    }
    if missing > 0 {
        hold(dir, start + bytes.len() as u64, PieceRef::Lost(missing));
    }
    drain(dir, out);
    differs
}

#[derive(Clone, Copy)]
enum PieceRef<'a> {
    Bytes(&'a [u8], Seen),
    Lost(u64),
}

impl PieceRef<'_> {
    fn len(&self) -> u64 {
        match self {
            PieceRef::Bytes(b, _) => b.len() as u64,
            PieceRef::Lost(n) => *n,
        }
    }

    fn slice(&self, from: u64, to: u64) -> Piece {
        match self {
            PieceRef::Bytes(b, seen) => Piece::Bytes(b[from as usize..to as usize].to_vec(), *seen),
            PieceRef::Lost(_) => Piece::Lost(to - from),
        }
    }
}

/// Holds the parts of a piece (at `start`, at or after `next`) that no held piece covers
/// already; where both have bytes, compares them, and says where they disagree.
fn hold(dir: &mut Direction, start: u64, piece: PieceRef<'_>) -> Disagreement {
    let end = start + piece.len();
    // Held pieces overlapping start..end: they do not overlap each other, so walking back from
    // the last one starting before `end` finds them all.
    let mut overlaps: Vec<(u64, u64)> = Vec::new();
    for (&s, p) in dir.held.range(..end).rev() {
        let e = s + p.len();
        if e <= start {
            break;
        }
        overlaps.push((s, e));
    }
    overlaps.reverse();
    let mut differs = None;
    let mut cursor = start;
    let mut uncovered = Vec::new();
    for (s, e) in overlaps {
        if s > cursor {
            uncovered.push((cursor, s));
        }
        if let (PieceRef::Bytes(new, _), Some(Piece::Bytes(old, _))) = (piece, dir.held.get(&s)) {
            let from = s.max(start);
            let to = e.min(end);
            if from < to {
                let a = &new[(from - start) as usize..(to - start) as usize];
                let b = &old[(from - s) as usize..(to - s) as usize];
                differs = union(differs, span(a.iter().zip(b).map(|(x, y)| x != y), from));
            }
        }
        cursor = cursor.max(e);
    }
    if cursor < end {
        uncovered.push((cursor, end));
    }
    for (s, e) in uncovered {
        let part = piece.slice(s - start, e - start);
        dir.held_cost += part.cost();
        dir.held.insert(s, part);
    }
    differs
}

/// Declares lost the holes below what the peer acknowledged, delivering what was held after
/// them.
fn confirm_lost(dir: &mut Direction, out: &mut Vec<Out>) {
    let upto = dir.fin.map_or(dir.acked, |fin| fin.min(dir.acked));
    while dir.next < upto {
        match dir.held.first_key_value() {
            Some((&first, _)) if first < upto => {
                gap(dir, first - dir.next, false, out);
                drain(dir, out);
            }
            _ => gap(dir, upto - dir.next, false, out),
        }
    }
}

/// Delivers the held pieces that now continue the stream.
fn drain(dir: &mut Direction, out: &mut Vec<Out>) {
    while let Some(entry) = dir.held.first_entry() {
        if *entry.key() > dir.next {
            break;
        }
        let piece = entry.remove();
        dir.held_cost = dir.held_cost.saturating_sub(piece.cost());
        match piece {
            Piece::Bytes(bytes, seen) => {
                dir.remember(&bytes);
                let at = dir.next;
                dir.next += bytes.len() as u64;
                // Pieces of one packet are joined; each packet's bytes go out as their
                // own Data, named by that packet.
                match out.last_mut() {
                    Some(Out::Data(s, b, by)) if *s + b.len() as u64 == at && *by == seen => {
                        b.extend_from_slice(&bytes)
                    }
                    _ => out.push(Out::Data(at, bytes, seen)),
                }
            }
            Piece::Lost(n) => gap(dir, n, true, out),
        }
    }
}

/// Declares `len` bytes from `next` lost.
fn gap(dir: &mut Direction, len: u64, cut: bool, out: &mut Vec<Out>) {
    if len == 0 {
        return;
    }
    dir.recent.clear();
    match out.last_mut() {
        Some(Out::Gap(s, n, c)) if *s + *n == dir.next && *c == cut => *n += len,
        _ => out.push(Out::Gap(dir.next, len, cut)),
    }
    dir.next += len;
}

/// Turns what a delivery produced into events: each Data named by the packet that carried
/// its bytes, each Gap by `packet`, where it was noticed.
fn emit(conn: ConnId, from: Endpoint, to: Endpoint, out: Vec<Out>, packet: u64, sink: &mut Sink) {
    for o in out {
        sink.push(match o {
            Out::Data(offset, bytes, seen) => Event::Data {
                conn,
                from,
                to,
                offset,
                bytes,
                packet: seen.packet,
                time: seen.time,
                acked: seen.acked,
            },
            Out::Gap(offset, len, cut) => Event::Gap {
                conn,
                from,
                to,
                offset,
                len,
                packet,
                cut,
            },
        });
    }
}
