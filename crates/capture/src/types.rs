//! The plain types every layer of the crate speaks: the two ends of a TCP connection
//! ([`Endpoint`]), its number ([`ConnId`]), a capture time ([`Timestamp`]), what a capture
//! says ([`Event`], with [`CloseReason`] for why a connection ended), the bounds a reader
//! keeps ([`Limits`]) and its counts ([`CaptureStats`]).
//!
//! The bottom layer: it imports nothing from the rest of the crate, so that the decoding,
//! the reassembly, the readers and the Kafka layer above can all use it. It holds data and
//! how to write it, not how to read a capture.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, UNIX_EPOCH};

/// One end of a TCP connection.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct Endpoint {
    /// The IPv4 or IPv6 address.
    pub ip: IpAddr,
    /// The TCP port.
    pub port: u16,
}

impl fmt::Display for Endpoint {
    /// `127.0.0.1:9092`, `[::1]:9092`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&SocketAddr::new(self.ip, self.port), f)
    }
}

/// A capture time: seconds since the Unix epoch (UTC) and nanoseconds (below 10^9).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Default)]
pub struct Timestamp {
    /// Whole seconds since 1970-01-01T00:00:00Z.
    pub secs: u64,
    /// Nanoseconds past `secs`.
    pub nanos: u32,
}

impl Timestamp {
    /// Seconds and a fraction of `units_per_sec` units, normalised.
    pub(crate) fn from_parts(secs: u64, frac: u64, units_per_sec: u64) -> Timestamp {
        let secs = secs.saturating_add(frac / units_per_sec);
        let frac = frac % units_per_sec;
        let nanos = (u128::from(frac) * 1_000_000_000 / u128::from(units_per_sec)) as u32;
        Timestamp { secs, nanos }
    }
}

impl Timestamp {
    /// The last second RFC 3339 can write (four-digit years): 9999-12-31T23:59:59Z.
    const LAST_RFC3339_SECOND: u64 = 253_402_300_799;

    /// The latest capture time the reader hands on: 2^53 - 1 microseconds after the epoch
    /// (2255-06-05T23:47:34.740991Z), the largest whole number of microseconds the doubles
    /// of JSON readers (`jq`) hold exactly. A packet stamped later is taken as this, and
    /// named in a note.
    pub const LATEST: Timestamp = Timestamp {
        secs: 9_007_199_254,
        nanos: 740_991_000,
    };

    /// A capture clock that steps back further than this between two packets is named in a
    /// note: packets reordered by a multi-queue capture are out of order by microseconds
    /// to milliseconds, not by a second. An answer timed earlier than its request by more
    /// is left out of the latency percentiles (counted apart).
    pub const STEP_BACK: Duration = Duration::from_secs(1);
}

impl fmt::Display for Timestamp {
    /// RFC 3339 in UTC with nine fraction digits: `2026-11-30T22:35:17.123456789Z`, written by
    /// `humantime`. RFC 3339 has four-digit years, so a time past the end of year 9999 (a
    /// capture can hold any 32- or 64-bit seconds, `u64::MAX` is year 584,554,051,223) is
    /// written as the last instant it can hold, `9999-12-31T23:59:59.999999999Z`, the way the
    /// reader already saturates a time before the epoch to 1970; nothing panics.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const LAST: &str = "9999-12-31T23:59:59.999999999Z";
        let secs = self
            .secs
            .saturating_add(u64::from(self.nanos / 1_000_000_000));
        let nanos = self.nanos % 1_000_000_000;
        if secs > Timestamp::LAST_RFC3339_SECOND {
            return f.write_str(LAST);
        }
        // Every platform std supports holds year 9999 in a SystemTime; were one not to, the
        // time is written as the last instant rather than failing the whole output.
        match UNIX_EPOCH.checked_add(Duration::new(secs, nanos)) {
            Some(time) => write!(f, "{}", humantime::format_rfc3339_nanos(time)),
            None => f.write_str(LAST),
        }
    }
}

/// A TCP connection: numbered from 1 in order of first appearance in the capture.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct ConnId(pub u32);

impl fmt::Display for ConnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// What a capture says, in capture order. Each variant's text says what its fields are.
#[derive(Clone, PartialEq, Eq, Debug)]
#[allow(missing_docs)]
pub enum Event {
    /// A connection seen for the first time. `a` sent the first packet seen (the SYN's sender
    /// when `syn_seen`).
    Open {
        conn: ConnId,
        a: Endpoint,
        b: Endpoint,
        syn_seen: bool,
        packet: u64,
        time: Timestamp,
    },
    /// Bytes of one direction, in stream order, without holes or repeats: `from` -> `to`,
    /// starting at `offset` in that direction's stream (0 = first byte after the SYN; or the
    /// first byte seen when the capture began mid-connection). `packet` is the (1-based, as
    /// Wireshark numbers them) packet that carried these bytes, `time` its capture time,
    /// also when they are delivered later (held out of order until a hole before them was
    /// filled, declared lost, or the connection closed): bytes of different packets come
    /// as different Data, never named by the packet that released them. Consecutive Data
    /// of one direction continue each other.
    Data {
        conn: ConnId,
        from: Endpoint,
        to: Endpoint,
        offset: u64,
        bytes: Vec<u8>,
        packet: u64,
        time: Timestamp,
        /// How far `packet` acknowledged the other direction (a stream offset of it), when
        /// it carried an ACK: its sender had received those bytes before it sent these, so
        /// a response here answers a request that ends there or before.
        acked: Option<u64>,
    },
    /// `len` bytes of one direction, from `offset`, were never captured (lost segment, or cut
    /// by the snap length); the next Data of that direction starts at `offset + len`.
    /// `packet` is where this was noticed.
    Gap {
        conn: ConnId,
        from: Endpoint,
        to: Endpoint,
        offset: u64,
        len: u64,
        packet: u64,
        /// The bytes were cut by the snap length (the capture has their packets, shorter
        /// than sent), not lost.
        cut: bool,
    },
    /// The connection ended: FIN seen both ways, RST, a new SYN on its 4-tuple, the end of
    /// the capture (`packet` None), or the reader let go of it ([`Limits`]: idle longer than
    /// the idle timeout, or the least recently active when more are open than the limit;
    /// [`Event::is_limit_close`] tells these apart). Any bytes still held out of order are flushed first (as
    /// Data after a Gap), and so is a gap before a FIN whose bytes never came.
    Close {
        conn: ConnId,
        packet: Option<u64>,
        reason: CloseReason,
    },
    /// A packet that could not be used and why, or a problem with the capture itself. For a
    /// problem that is not about one packet (an unreadable block, the end of the file),
    /// `packet` is the number the next packet would have had. `partial` when some traffic
    /// could not be read because of it (not for a clock that steps back, say).
    Note {
        packet: u64,
        message: String,
        partial: bool,
    },
}

impl Event {
    /// A Close of a connection the reader let go of because of its [`Limits`] (idle, or
    /// evicted), not because it ended: whatever it held is lost, and its later packets, if
    /// any, open it again as a connection seen mid-stream.
    pub fn is_limit_close(&self) -> bool {
        matches!(self, Event::Close { reason, .. } if reason.is_limit())
    }
}

/// Why a connection ended ([`Event::Close`]). Its text ([`CloseReason::as_str`], also its
/// `Display`) is what notes about it say.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub enum CloseReason {
    /// FIN seen both ways, and every byte before them: `FIN`.
    Fin,
    /// A RST: `RST`.
    Rst,
    /// A new SYN on its 4-tuple (the old connection's end was not captured): `the 4-tuple
    /// was reused by a new SYN`. The old connection is kept, for segments whose sequence
    /// numbers fit it and not the new one (a late answer), and closes with the new one.
    Reused,
    /// The end of the capture (the Close has no packet): `end of capture`.
    EndOfCapture,
    /// Let go by the reader: idle for longer than [`Limits::idle_timeout`] (`idle longer
    /// than the idle timeout`).
    Idle,
    /// Let go by the reader: the least recently active when more were open than
    /// [`Limits::max_connections`] (`evicted: more open connections than the limit`).
    Evicted,
}

impl CloseReason {
    /// The reason in words, as notes say it.
    pub fn as_str(self) -> &'static str {
        match self {
            CloseReason::Fin => "FIN",
            CloseReason::Rst => "RST",
            CloseReason::Reused => "the 4-tuple was reused by a new SYN",
            CloseReason::EndOfCapture => "end of capture",
            CloseReason::Idle => "idle longer than the idle timeout",
            CloseReason::Evicted => "evicted: more open connections than the limit",
        }
    }

    /// The reader let go of the connection because of its [`Limits`] (idle, or evicted):
    /// it did not end.
    pub fn is_limit(self) -> bool {
        matches!(self, CloseReason::Idle | CloseReason::Evicted)
    }
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How many connections a capture follows at once, and for how long one that is idle.
/// Memory grows with the connections followed (a few KB each when idle, plus the bytes
/// each holds: see the crate's documentation), so both bound it whatever the capture.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Limits {
    /// A connection without a packet for this long (in capture time) is closed, as a broker
    /// closes it after `connections.max.idle.ms`. Default 10 minutes, Kafka's default.
    pub idle_timeout: Duration,
    /// At most this many connections are followed; opening one more first closes the least
    /// recently active. Default [`Limits::DEFAULT_MAX_CONNECTIONS`].
    pub max_connections: usize,
    /// Bytes of the table of requests waiting for their responses, per connection, at
    /// most ([`crate::traffic::IN_FLIGHT_ENTRY_BYTES`] per request): a request beyond it is
    /// not kept for pairing, and named. Default [`Limits::DEFAULT_IN_FLIGHT_BYTES`].
    pub in_flight_bytes: usize,
    /// The same, on all connections together. Default
    /// [`Limits::DEFAULT_IN_FLIGHT_TOTAL_BYTES`].
    pub in_flight_total_bytes: usize,
    /// Bytes of frames held on all connections together, at most: frames in progress
    /// (ElectLeaders frames are held whole until they end; a frame of another API only
    /// for its head, [`crate::traffic::PASS_OVER_HEAD`] bytes, then passed over as it
    /// streams by) and responses waiting for their requests. Past it the largest is let
    /// go (passed over, or handed on unpaired) and named in a note. Default
    /// [`Limits::DEFAULT_HELD_BYTES`].
    pub held_bytes: usize,
}

impl Limits {
    /// The default idle timeout: Kafka's `connections.max.idle.ms`, 10 minutes.
    pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(600);
    /// The default number of connections followed at once.
    pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;
    /// The default in-flight budget of one connection: 1 MiB, some 26,000 requests
    /// waiting (a client pipelines a few hundred at most).
    pub const DEFAULT_IN_FLIGHT_BYTES: usize = 1 << 20;
    /// The default in-flight budget of all connections together: 64 MiB.
    pub const DEFAULT_IN_FLIGHT_TOTAL_BYTES: usize = 64 << 20;
    /// The default bound on the bytes of frames held on all connections: 128 MiB, room
    /// for one frame of Kafka's largest default size (`socket.request.max.bytes`, 100 MiB)
    /// and more.
    pub const DEFAULT_HELD_BYTES: usize = 128 << 20;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            idle_timeout: Limits::DEFAULT_IDLE_TIMEOUT,
            max_connections: Limits::DEFAULT_MAX_CONNECTIONS,
            in_flight_bytes: Limits::DEFAULT_IN_FLIGHT_BYTES,
            in_flight_total_bytes: Limits::DEFAULT_IN_FLIGHT_TOTAL_BYTES,
            held_bytes: Limits::DEFAULT_HELD_BYTES,
        }
    }
}

/// Counts so far.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct CaptureStats {
    /// Packets read (every packet record, whatever it holds).
    pub packets: u64,
    /// Packets skipped silently because they are not TCP over IP (ARP, UDP, ICMP...).
    pub not_tcp: u64,
    /// Note events emitted.
    pub notes: u64,
    /// TCP segments decoded.
    pub tcp: u64,
    /// Packets skipped because their interface's link type is not supported (one Note per
    /// interface).
    pub unsupported_link: u64,
    /// TCP connections opened.
    pub connections: u32,
    /// TCP connections followed now.
    pub open_connections: usize,
    /// The most TCP connections followed at once: never above [`Limits::max_connections`].
    pub peak_open_connections: usize,
    /// Connections closed for being idle longer than [`Limits::idle_timeout`].
    pub idle_closed: u64,
    /// Connections closed because more were open than [`Limits::max_connections`].
    pub evicted: u64,
}
