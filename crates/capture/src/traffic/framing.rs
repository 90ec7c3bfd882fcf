//! Framing one direction of a connection ([`Dir`]): its bytes cut into frames at their size
//! prefixes and, where the stream lost its boundaries (a gap, a capture that began
//! mid-connection, a bad size prefix), the next frame boundary searched for and proven
//! before frames are cut again ([`find_boundary`]).
//!
//! Above the requests in flight (a response boundary is proven by a request waiting for it);
//! below the pairing. It cuts no frame itself: the analyser does, with what this finds.

use std::collections::VecDeque;

use kafka_elect_leaders::{
    is_known_request, parse_request, parse_response, peek_request, SIZE_PREFIX_LEN,
};

use super::in_flight::{be_i16, be_i32, Waiting};
use super::item::Role;
use crate::types::{Endpoint, Timestamp};

/// A direction's buffer keeps its room when it empties, up to this; a larger one (it held
/// a large frame) is given back.
const SHRINK_ABOVE: usize = 256 * 1024;

/// One direction of a connection.
pub(super) struct Dir {
    pub(super) from: Endpoint,
    pub(super) to: Endpoint,
    /// Bytes not yet cut into a frame; `buf[pos..]` is live, starting at stream offset
    /// `start`.
    pub(super) buf: Vec<u8>,
    pub(super) pos: usize,
    pub(super) start: u64,
    /// Which packet delivered the bytes up to each stream offset (exclusive end), and how
    /// far it acknowledged the other direction.
    pub(super) packets: VecDeque<(u64, u64, Timestamp, Option<u64>)>,
    /// False at a mid-stream start and after a gap or a bad size prefix: the next frame
    /// boundary must be proven before frames are cut again.
    pub(super) synced: bool,
    /// While not synced: the stream offsets of candidate boundaries that need more bytes
    /// to be judged (a few at most), ...
    pub(super) waiting: Vec<u64>,
    /// ... and the stream offset up to which every other position was judged and rejected.
    pub(super) frontier: u64,
    /// Bytes passed over since the stream lost its frame boundaries.
    pub(super) skipped: u64,
    pub(super) frames: u64,
    /// Bytes of this direction were lost (a gap) since the last frame was cut: requests may
    /// have been lost there.
    pub(super) lost_since_frame: bool,
    /// The stream offset of the first frame cut, and the packet of its first byte.
    pub(super) first_frame: Option<u64>,
    pub(super) first_frame_packet: Option<u64>,
    /// A frame being passed over as it streams by: its head kept, its other bytes counted
    /// and dropped as they come.
    pub(super) passing: Option<PassOver>,
    /// While not synced: search for a boundary at once, without waiting for requests the
    /// last ACK proves were sent (set when the bound on bytes held is reached).
    pub(super) search_now: bool,
}

/// The bytes of a frame's start that are read before it is passed over: the request
/// header (its client id is at most 32,767 bytes) and, for a Produce, its
/// `transactional_id` (as long) and `acks`, with room for tagged fields. A frame of an
/// API the reader does not decode that is longer is not held whole.
pub const PASS_OVER_HEAD: usize = 72 * 1024;

/// A frame passed over as it streams by ([`Dir::passing`]).
pub(super) struct PassOver {
    /// The frame's head: its size prefix and header (for a request, up to the end of its
    /// client id; for a response, its correlation id).
    pub(super) head: Vec<u8>,
    /// The whole frame's length, size prefix included.
    pub(super) len: usize,
    /// Its bytes still to come.
    pub(super) rest: usize,
    /// Its first byte's stream offset and packet.
    pub(super) offset: u64,
    pub(super) first_packet: u64,
    /// The latest capture time and the furthest acknowledgement among the packets that
    /// carried the bytes passed over so far, and the packet of the last of them.
    pub(super) time: Timestamp,
    pub(super) acked: Option<u64>,
    pub(super) last_packet: u64,
    /// For a request: Kafka never answers it (a Produce with `acks` 0), read off its head.
    pub(super) never_answered: bool,
    /// Let go by the reader's bound on the bytes held (a frame it would have decoded; a
    /// note said so then).
    pub(super) let_go: bool,
}

impl Dir {
    pub(super) fn new(from: Endpoint, to: Endpoint, synced: bool) -> Dir {
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
            passing: None,
            search_now: false,
        }
    }

    /// Bytes this direction holds: its buffer's room and the head of a frame passed over.
    pub(super) fn held_bytes(&self) -> usize {
        self.buf.capacity() + self.passing.as_ref().map_or(0, |p| p.head.capacity())
    }

    /// Starts passing over the frame at the front of the live bytes (`len` bytes, size
    /// prefix included; its head read already): keeps `keep` bytes of its head, drops the
    /// live bytes of it.
    pub(super) fn pass_over(&mut self, len: usize, keep: usize, never_answered: bool) {
        let live = self.live();
        let head = live[..keep.min(live.len())].to_vec();
        let offset = self.start;
        let (first_packet, ..) = self.packets_of(offset, offset + 1);
        self.passing = Some(PassOver {
            head,
            len,
            rest: len,
            offset,
            first_packet,
            time: Timestamp::default(),
            acked: None,
            last_packet: first_packet,
            never_answered,
            let_go: false,
        });
        self.pass_live();
    }

    /// Drops the live bytes of the frame being passed over, up to its end; returns it once
    /// its last byte has come.
    pub(super) fn pass_live(&mut self) -> Option<PassOver> {
        let p = self.passing.as_mut()?;
        let n = p.rest.min(self.live().len());
        if n > 0 {
            let (first, last, time, acked) = self.packets_of(self.start, self.start + n as u64);
            let p = self.passing.as_mut()?;
            p.rest -= n;
            p.first_packet = p.first_packet.min(first);
            if last >= p.last_packet {
                p.last_packet = last;
                p.time = time;
            }
            p.acked = p.acked.max(acked);
            self.consume(n);
        }
        if self.passing.as_ref()?.rest == 0 {
            self.passing.take()
        } else {
            None
        }
    }

    pub(super) fn live(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    /// Drops `n` live bytes from the front.
    pub(super) fn consume(&mut self, n: usize) {
        self.pos += n;
        self.start += n as u64;
        if self.pos == self.buf.len() {
            if self.buf.capacity() > SHRINK_ABOVE {
                // The room a large frame took is given back, not kept for the connection.
                self.buf = Vec::new();
            } else {
                self.buf.clear();
            }
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
    pub(super) fn lose_sync(&mut self, at: u64) {
        self.synced = false;
        self.waiting.clear();
        self.frontier = at;
        self.skipped = 0;
    }

    /// Drops what a search has ruled out: everything before the first candidate still
    /// waiting for bytes, or before the frontier.
    pub(super) fn drop_ruled_out(&mut self) {
        let keep_from = self.waiting.first().copied().unwrap_or(self.frontier);
        let n = keep_from
            .saturating_sub(self.start)
            .min(self.live().len() as u64);
        self.skipped += n;
        self.consume(n as usize);
    }

    /// The packets that carried stream bytes `[from, to)`: the first and the last of them
    /// in capture order (the last completed the bytes: a byte held out of order may come
    /// from an earlier packet than one that filled a hole before it), the last one's
    /// capture time (so that a range names the packet whose time it gives), and the
    /// furthest any of them acknowledged the other direction.
    pub(super) fn packets_of(&self, from: u64, to: u64) -> (u64, u64, Timestamp, Option<u64>) {
        let mut first: Option<u64> = None;
        let mut last: Option<(u64, Timestamp)> = None;
        let mut acked: Option<u64> = None;
        for &(end, packet, at, ack) in &self.packets {
            if end <= from {
                continue;
            }
            first = Some(first.map_or(packet, |f| f.min(packet)));
            if last.map_or(true, |(p, _)| packet > p) {
                last = Some((packet, at));
            }
            acked = acked.max(ack);
            if end >= to {
                break;
            }
        }
        let (last, time) = last.unwrap_or((0, Timestamp::default()));
        (first.unwrap_or(last), last, time, acked)
    }

    /// Whether every request frame that ends at or before stream offset `acked` has been
    /// cut (or passed over, or lost in a gap): a response that `acked` came with can no
    /// longer find its request still to come.
    pub(super) fn caught_up(&self, acked: u64) -> bool {
        if self.synced {
            // Drained: what is live is at most the start of a frame not yet whole.
            self.start + self.live().len() as u64 >= acked
        } else {
            self.start >= acked
        }
    }
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
pub(super) fn find_boundary(
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
