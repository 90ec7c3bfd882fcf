//! conn: the guard's connection state machine (`proxy`, crates/proxy/src/conn.rs) as a whole,
//! driven in memory by a script: a client and a fake broker on in-memory pipes, a paused
//! clock, and the properties the guard promises checked on what each side saw.
//!
//! The script (`Script`, read with `arbitrary`) is up to [`MAX_OPS`] moves in any order: the
//! client sends frames (valid ElectLeaders requests of every version and shape, damaged
//! ones, Produce with acks 0/1/-1, Metadata, Fetch, any other API, frames cut into several
//! writes or left unfinished, size prefixes the guard must refuse); the broker answers its
//! oldest request (an ElectLeaders answer for exactly the partitions it was asked, error 0,
//! or a plain frame for other APIs), skips one, answers an id nobody sent, sends garbage;
//! either side closes; the client stops or resumes reading; virtual time moves; the guard is
//! told to stop. A finale then ends the connection (both sides close, or one of them, or the
//! guard is told to stop) and gives the guard an hour of virtual time to finish.
//!
//! What is checked (a panic on a violation):
//! 1. the answers the client gets are answers to its own requests, in the order it sent
//!    them, each at most once; an answer to a request the guard forwards as it is, is the
//!    broker's frame byte for byte;
//! 2. the broker gets the client's frames of other APIs byte for byte, in order, and of the
//!    ElectLeaders requests only those that parse, each forwarded as it was or trimmed of
//!    exactly the partitions the policy refuses; nothing after a malformed frame;
//! 3. every ElectLeaders answer parses at its request's version, and every partition the
//!    policy refuses is answered `POLICY_VIOLATION` (44), unless the policy only logs;
//! 4. the bytes the guard holds while the connection runs stay under [`memory_bound`] (only
//!    in the fuzz binary, which installs a counting allocator: see [`memory`]);
//! 5. no panic, and the guard finishes within that hour of the finale's end.
//!
//! Everything the guard sees is what the client's bytes are once framed, not what the script
//! meant to send: the checks split the client's stream into frames exactly as the guard's
//! codec does ([`classify`]), so a damaged frame that still parses is a request like any other.
//!
//! The audit log is a thread with a bounded queue: when it lags, the guard refuses the
//! elections it cannot record, whole (`Policy::refuse_unaudited`). That depends on thread
//! scheduling, not on the input, so the checks accept such a refusal in place of any
//! decision: it refuses more, never less. Except under `--log-only`, which never refuses:
//! there a decision that could not be audited is forwarded all the same, and a refusal
//! for want of an audit is a violation.
//!
//! The target found two bugs in the guard (`corpus/regressions/conn`); until they are
//! fixed, [`check_conn_lenient`] tolerates them, for campaigns and for the replay.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet, VecDeque};
use std::future::{poll_fn, Future};
use std::io;
use std::ops::Range;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use arbitrary::{Arbitrary, Unstructured};
use bytes::BytesMut;
use kafka_elect_leaders::{
    nth_version, parse_request, parse_response, peek_request, peek_response, split_frame_with_max,
    ElectLeadersRequestData, ElectLeadersResponseData, ElectionType, EncodeRequestExt,
    EncodeResponseExt, ErrorCode, PartitionResultData, ReplicaElectionResultData, TaggedFieldData,
    TopicPartitionsData, API_KEY, SIZE_PREFIX_LEN,
};
use kafka_elect_leaders_proxy::answer::encode_refusal;
use kafka_elect_leaders_proxy::audit::{
    Audit, AuditError, AuditSink, ConnInfo, DEFAULT_AUDIT_QUEUE_BYTES,
};
use kafka_elect_leaders_proxy::leadership;
use kafka_elect_leaders_proxy::testing::{proxy, ClientRead, Shared, MAX_IN_FLIGHT, RESERVE_STEP};
use kafka_elect_leaders_proxy::{Config, Decision, Policy, Verdict};
use tokio::io::{
    AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream, ReadBuf, ReadHalf, WriteHalf,
};
use tokio::sync::{watch, Notify};

/// The guard's `--max-frame-size` here: small, so that the memory bound means something
/// and a frame past it is a few bytes of input away.
pub const MAX_FRAME_SIZE: usize = 64 * 1024;
/// Moves of a script, at most.
pub const MAX_OPS: usize = 64;
/// The guard's idle and frame timeouts here: short, so that a few moves of the clock pass
/// them (a move is milliseconds to minutes).
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
const FRAME_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the finale waits, in virtual time, for the guard to finish once both sides
/// closed.
const FINISH_WITHIN: Duration = Duration::from_secs(3600);
/// Correlation ids of the client's requests start here and grow by one.
const FIRST_ID: i32 = 1;
/// Bytes of requests the client writes, at most: enough for 32 frames of the largest size
/// (that many kept requests, each pinning its read buffer, are twice the memory bound), few
/// enough to keep a run short.
const CLIENT_BUDGET: usize = 2 << 20;
/// Bytes of answers the client reads, at most (it stops reading there), and bytes the
/// broker writes: what one run may cost. Answers of refusals can be many times larger than
/// their requests (every refused partition carries its message).
const CLIENT_READ_CAP: usize = 4 << 20;
const BROKER_BUDGET: usize = 4 << 20;
/// Partitions the client's ElectLeaders requests name, at most: four frames of the largest
/// size. The guard's work grows with them (the audit record, the answers of refusals),
/// so that inputs of many such frames would take most of a campaign's time.
const PARTITION_BUDGET: usize = 4 * MAX_FRAME_SIZE / 4;

/// Bytes the guard may hold at its peak while one connection runs, by its design, with
/// `max_frame_size` F. Two terms depend on the connection's requests: `largest_elect`, the
/// largest ElectLeaders request (its audit record), and `largest_refusal`, the largest answer
/// of refusals the guard writes for one of them (`answer::encode_refusal`, without the
/// broker's part). Checked only where a counting allocator is installed ([`memory`]).
///
/// Each term at its worst (conn.rs's constants; its write boundary of 64 KiB is not
/// exported, so it is written here):
/// - two read buffers (client, broker), each up to a frame and [`RESERVE_STEP`] past the
///   bytes received, and `BytesMut` grows by doubling: 2 × 2 × (F + RESERVE_STEP);
/// - the broker's write buffer, written out past 64 KiB and taking one more frame before
///   it is, doubling: 2 × (64 KiB + F);
/// - the ElectLeaders requests kept in slots to be answered or merged later: the budget of
///   one frame (F + 4), and their decisions, whose messages can repeat the client id: 2 × F;
/// - the audit record of one decision, a `serde_json::Value` and then a line: a 4-byte
///   partition id becomes a 32-byte `Value`, in two lists (`partitions`, `refused`), and up
///   to 12 bytes of text in each, the text written while the `Value` lives (names: less):
///   32 × `largest_elect`;
/// - one answer: the refusals (as large as `largest_refusal`: every refused partition
///   carries its message) merged with the broker's answer (at most F), held encoded, then
///   copied into the client's write buffer, which doubles as it grows, and the merge's
///   vectors beside them: 4 × (`largest_refusal` + F + 64 KiB);
/// - [`MAX_IN_FLIGHT`] slots and their bookkeeping: 512 bytes each.
///
/// With small ElectLeaders requests that is about 1.4 MiB at F = 64 KiB; with requests of
/// the largest size, 3.4 MiB and their answers. The measured peaks (FUZZING.md) are under
/// it; the bound is what the design allows, not the highest peak seen, so that a guard
/// holding more than its design says (per request kept, per byte received) fails here. What
/// the guard hands to the audit thread and the thread has not yet written is not the
/// connection's: the check allows it on top (see `run`).
pub const fn memory_bound(
    max_frame_size: usize,
    largest_elect: usize,
    largest_refusal: usize,
) -> usize {
    const WRITE_BOUNDARY: usize = 64 * 1024;
    let f = max_frame_size;
    let read = 2 * 2 * (f + RESERVE_STEP);
    let write = 2 * (WRITE_BOUNDARY + f);
    let held = 2 * f;
    let audit = 32 * largest_elect;
    let answer = 4 * (largest_refusal + f + WRITE_BOUNDARY);
    let slots = MAX_IN_FLIGHT * 512;
    read + write + held + audit + answer + slots
}

/// The live bytes the guard holds, counted by the fuzz binary's allocator.
///
/// The fuzz target (`fuzz/fuzz_targets/conn.rs`) installs a global allocator that marks
/// every block allocated while [`counting`](memory::counting) says so, and calls
/// [`allocated`](memory::allocated) then, and [`freed`](memory::freed) when a marked block
/// is freed, on whichever thread; it [`install`](memory::install)s itself at start. The
/// check counts only while it polls the guard's future, and not while the guard writes
/// into the in-memory pipes (their buffers stand for the kernel's socket buffers). Without
/// the allocator (`cargo test`'s replay) the memory property is skipped.
pub mod memory {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};
    use std::time::{Duration, Instant};

    static INSTALLED: AtomicBool = AtomicBool::new(false);
    static LIVE: AtomicIsize = AtomicIsize::new(0);
    static PEAK: AtomicIsize = AtomicIsize::new(0);
    /// Counted bytes freed by another thread than the check's: the lines the guard hands
    /// to the audit (and diagnostics) thread, counted until that thread is done with them.
    static ELSEWHERE: AtomicIsize = AtomicIsize::new(0);

    thread_local! {
        static COUNTING: Cell<bool> = const { Cell::new(false) };
        /// The thread the check runs on.
        static HOME: Cell<bool> = const { Cell::new(false) };
    }

    /// Says that a counting allocator calls [`allocated`] and [`freed`].
    pub fn install() {
        INSTALLED.store(true, Ordering::Relaxed);
    }

    /// Whether a block allocated now, on this thread, is to be counted. Safe to call from
    /// a global allocator: the thread-locals are const-initialized and have no destructor.
    #[inline]
    pub fn counting() -> bool {
        COUNTING.try_with(Cell::get).unwrap_or(false)
    }

    /// A counted block of `bytes` was allocated (or grown by `bytes`).
    #[inline]
    pub fn allocated(bytes: usize) {
        let bytes = bytes as isize;
        let live = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
        PEAK.fetch_max(live, Ordering::Relaxed);
    }

    /// A counted block of `bytes` was freed (or shrunk by `bytes`), on this thread.
    #[inline]
    pub fn freed(bytes: usize) {
        let bytes = bytes as isize;
        LIVE.fetch_sub(bytes, Ordering::Relaxed);
        if !HOME.try_with(Cell::get).unwrap_or(false) {
            ELSEWHERE.fetch_add(bytes, Ordering::Relaxed);
        }
    }

    pub(crate) fn installed() -> bool {
        INSTALLED.load(Ordering::Relaxed)
    }

    /// One connection's measure.
    pub(crate) struct Measure {
        live: isize,
        elsewhere: isize,
    }

    impl Measure {
        /// Starts a measure on this thread: the peak is reset to the live bytes now.
        pub(crate) fn start() -> Measure {
            HOME.with(|h| h.set(true));
            let live = LIVE.load(Ordering::Relaxed);
            PEAK.store(live, Ordering::Relaxed);
            Measure {
                live,
                elsewhere: ELSEWHERE.load(Ordering::Relaxed),
            }
        }

        /// Once the guard is gone: the peak above the start, and what the guard handed to
        /// other threads: the counted bytes they freed meanwhile, and those still live
        /// (lines not written yet, and whatever the guard's polls left behind, such as
        /// tokio's or a `OnceLock`'s). First waits (a second at most) for the other threads
        /// to free what they were handed: until the live count is back near the start.
        pub(crate) fn finish(self) -> (usize, usize) {
            let deadline = Instant::now() + Duration::from_secs(1);
            while LIVE.load(Ordering::Relaxed) > self.live + 4096 && Instant::now() < deadline {
                std::thread::yield_now();
            }
            let peak = PEAK.load(Ordering::Relaxed) - self.live;
            let elsewhere = ELSEWHERE.load(Ordering::Relaxed) - self.elsewhere;
            let left = LIVE.load(Ordering::Relaxed) - self.live;
            (
                usize::try_from(peak).unwrap_or(0),
                usize::try_from(elsewhere.max(0) + left.max(0)).unwrap_or(0),
            )
        }
    }

    /// Counting on (or off) on this thread until dropped; the previous state comes back.
    pub(crate) struct Counting(bool);

    impl Counting {
        pub(crate) fn set(on: bool) -> Counting {
            Counting(COUNTING.with(|c| c.replace(on)))
        }
    }

    impl Drop for Counting {
        fn drop(&mut self) {
            COUNTING.with(|c| c.set(self.0));
        }
    }
}

// ---------------------------------------------------------------------------------------
// The script.

#[derive(Arbitrary, Debug)]
struct Script {
    /// Which policy the guard runs ([`policies`]).
    policy: u8,
    /// The capacity of each in-memory pipe ([`PIPES`]).
    pipe: u8,
    finale: Finale,
    ops: Vec<Op>,
}

/// Pipe capacities: from one that cuts every frame to one that holds many.
const PIPES: [usize; 4] = [512, 4 << 10, 64 << 10, 256 << 10];

#[derive(Arbitrary, Debug)]
struct Finale {
    /// Time passes before the end (the guard's own timeouts may fire meanwhile).
    linger: Option<Delay>,
    /// The broker answers everything still owed before the end.
    answer_all: bool,
    end: End,
}

/// What makes the guard finish, in the finale: within an hour of virtual time after it,
/// the guard must have returned.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum End {
    /// Both sides close.
    Both,
    /// The client closes; the broker stays, reading and answering nothing more.
    Client,
    /// The broker closes; the client stays, reading or not, as the script left it.
    Broker,
    /// The guard is told to stop; both sides stay, the client reading or not.
    Stop,
}

#[derive(Arbitrary, Debug)]
enum Op {
    /// The client writes a request in one write.
    Send(Request),
    /// The client writes a request in up to four writes, with time passing between them.
    Pieces {
        request: Request,
        cuts: [u16; 3],
        gap: Option<Delay>,
    },
    /// The client writes a few requests (up to 4), in turn, 2 to 129 times over, each with
    /// its own correlation id: as many requests as the guard keeps in flight, from a few
    /// bytes of input.
    Repeat {
        requests: Vec<Request>,
        times: u8,
    },
    /// The client writes the first bytes of a request now, the rest just before its next
    /// write (or never, if none comes).
    Head {
        request: Request,
        keep: u16,
    },
    /// The client writes the first bytes of a request and never the rest: what follows is
    /// read as the frame's remainder.
    Desync {
        request: Request,
        keep: u16,
    },
    /// A size prefix the guard must refuse (negative, or past the largest frame), and bytes.
    BadSize {
        negative: bool,
        size: u32,
        then: Vec<u8>,
    },
    /// The broker answers its oldest requests (1 to 128), each in up to 4 writes; a plain
    /// answer carries 16 × `extra` payload bytes, or [`large`]`(extra)`.
    Answer {
        count: u8,
        pieces: u8,
        extra: u8,
        large: bool,
    },
    /// The broker drops its oldest request: it will never answer it.
    Skip,
    /// The broker answers a correlation id that no request has.
    UnknownId {
        extra: u8,
    },
    /// The broker writes bytes of no meaning.
    Garbage(Vec<u8>),
    /// The client closes its sending side (a TCP FIN) and keeps reading.
    ClientFin,
    /// The client closes the connection.
    ClientClose,
    ClientStopReading,
    ClientResumeReading,
    /// The broker closes the connection, after writing what it had begun.
    BrokerClose,
    /// Virtual time passes.
    Wait(Delay),
    /// The guard is told to stop.
    Stop,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Delay {
    Millis(u8),
    Seconds(u8),
    Minutes(u8),
}

impl Delay {
    fn duration(self) -> Duration {
        match self {
            Delay::Millis(n) => Duration::from_millis(u64::from(n) + 1),
            Delay::Seconds(n) => Duration::from_secs(u64::from(n) + 1),
            Delay::Minutes(n) => Duration::from_secs(60 * (u64::from(n) + 1)),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Request {
    Elect(Elect),
    Damaged(Elect, Damage),
    Produce(Produce),
    Metadata {
        version: u8,
        body: Body,
    },
    Fetch {
        version: u8,
        max_wait_ms: u16,
        body: Body,
    },
    Other {
        api_key: i16,
        version: i16,
        body: Body,
    },
}

#[derive(Arbitrary, Debug)]
struct Elect {
    version: u8,
    client_id: ClientId,
    election_type: Election,
    topics: Option<Vec<Topic>>,
    timeout_ms: u16,
    /// Unknown tagged fields in the header and the body (v2).
    tags: bool,
}

#[derive(Arbitrary, Debug)]
enum ClientId {
    Null,
    Admin,
    Ops,
    Bytes(Vec<u8>),
    /// A long id, up to Kafka's 32767 bytes.
    Long(u16),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Election {
    Preferred,
    Unclean,
    Other(i8),
}

#[derive(Arbitrary, Debug)]
struct Topic {
    name: TopicName,
    partitions: Partitions,
}

/// The policies protect `payments` and `secrets`.
#[derive(Arbitrary, Debug)]
enum TopicName {
    Payments,
    Secrets,
    Orders,
    Logs,
    Bytes(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
enum Partitions {
    List(Vec<i32>),
    /// Partitions 0 to n-1.
    Count(u8),
    /// About as many partitions as the largest frame holds (15,872 + 4n): a frame just
    /// under or just over the guard's limit, from one byte of input.
    Many(u8),
}

/// About as many partitions as the largest frame holds, from one byte: 15,872 + 4n.
fn many(n: u8) -> usize {
    MAX_FRAME_SIZE / 4 - 512 + 4 * usize::from(n)
}

impl Partitions {
    fn ids(&self) -> Vec<i32> {
        match self {
            Partitions::List(list) => list.clone(),
            Partitions::Count(n) => (0..i32::from(*n)).collect(),
            Partitions::Many(n) => (0..many(*n) as i32).collect(),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Damage {
    /// The body cut to this length (modulo its own), the size prefix saying so.
    Truncate(u16),
    /// One byte changed, anywhere after the size prefix but in the correlation id.
    Flip { at: u16, xor: u8 },
    /// Bytes after the body, the size prefix counting them.
    Trailing(Vec<u8>),
    /// Another API version in the header.
    Version(i16),
}

#[derive(Arbitrary, Debug)]
struct Produce {
    /// 3 to 12 (9 and later are flexible).
    version: u8,
    acks: Acks,
    transactional_id: Option<Vec<u8>>,
    timeout_ms: u16,
    body: Body,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Acks {
    None,
    Leader,
    All,
    Other(i16),
}

#[derive(Arbitrary, Debug)]
enum Body {
    Bytes(Vec<u8>),
    /// 16 × n filler bytes.
    Filled(u8),
    /// [`large`] filler bytes: a frame just under or just over the guard's limit.
    Large(u8),
}

/// About the largest frame's size, from one byte: `MAX_FRAME_SIZE` - 1024 + 8n. Large
/// frames cost time to build and copy: they take a variant of their own, so that most
/// inputs stay small.
fn large(n: u8) -> usize {
    MAX_FRAME_SIZE - 1024 + 8 * usize::from(n)
}

impl Body {
    fn write_to(&self, out: &mut Vec<u8>) {
        let filler = match self {
            Body::Bytes(b) => return out.extend_from_slice(b),
            Body::Filled(n) => 16 * usize::from(*n),
            Body::Large(n) => large(*n),
        };
        out.resize(out.len() + filler, 0x5a);
    }
}

/// Writes `i16`-length string `s`, or null.
fn put_string(out: &mut Vec<u8>, s: Option<&[u8]>) {
    match s {
        None => out.extend_from_slice(&(-1i16).to_be_bytes()),
        Some(s) => {
            let s = &s[..s.len().min(i16::MAX as usize)];
            out.extend_from_slice(&(s.len() as i16).to_be_bytes());
            out.extend_from_slice(s);
        }
    }
}

fn put_uvarint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// A request header of any API (v1: no tagged fields; `flexible`: v2, an empty tag list).
fn header(api_key: i16, version: i16, id: i32, client_id: &[u8], flexible: bool) -> Vec<u8> {
    let mut out = vec![0; SIZE_PREFIX_LEN];
    out.extend_from_slice(&api_key.to_be_bytes());
    out.extend_from_slice(&version.to_be_bytes());
    out.extend_from_slice(&id.to_be_bytes());
    put_string(&mut out, Some(client_id));
    if flexible {
        out.push(0);
    }
    out
}

/// Writes the size prefix of a frame built behind a zeroed one.
fn seal(mut frame: Vec<u8>) -> Vec<u8> {
    let size = (frame.len() - SIZE_PREFIX_LEN) as u32;
    frame[..SIZE_PREFIX_LEN].copy_from_slice(&size.to_be_bytes());
    frame
}

impl Request {
    /// The partitions an ElectLeaders request names (damaged or not).
    fn partitions(&self) -> usize {
        let (Request::Elect(e) | Request::Damaged(e, _)) = self else {
            return 0;
        };
        e.topics
            .iter()
            .flatten()
            .map(|t| match &t.partitions {
                Partitions::List(list) => list.len(),
                Partitions::Count(n) => usize::from(*n),
                Partitions::Many(n) => many(*n),
            })
            .sum()
    }

    /// The frame (size prefix included) with correlation id `id`; `None` when the writer
    /// refuses the ElectLeaders request (a field its version cannot carry).
    fn frame(&self, id: i32) -> Option<Vec<u8>> {
        match self {
            Request::Elect(e) => e.frame(id),
            Request::Damaged(e, damage) => {
                let mut frame = e.frame(id)?;
                damage.apply(&mut frame);
                Some(frame)
            }
            Request::Produce(p) => Some(p.frame(id)),
            Request::Metadata { version, body } => {
                let mut out = header(3, i16::from(version % 9), id, b"client", false);
                body.write_to(&mut out);
                Some(seal(out))
            }
            Request::Fetch {
                version,
                max_wait_ms,
                body,
            } => {
                // v4 to v11: not flexible, replica id first.
                let mut out = header(1, 4 + i16::from(version % 8), id, b"consumer", false);
                out.extend_from_slice(&(-1i32).to_be_bytes());
                out.extend_from_slice(&i32::from(*max_wait_ms).to_be_bytes());
                out.extend_from_slice(&1i32.to_be_bytes());
                body.write_to(&mut out);
                Some(seal(out))
            }
            Request::Other {
                api_key,
                version,
                body,
            } => {
                // Produce and ElectLeaders have their own variants.
                let api_key = match *api_key {
                    0 => 18,
                    API_KEY => 19,
                    key => key,
                };
                let mut out = header(api_key, *version, id, b"client", false);
                body.write_to(&mut out);
                Some(seal(out))
            }
        }
    }
}

impl Elect {
    fn frame(&self, id: i32) -> Option<Vec<u8>> {
        let version = nth_version(u64::from(self.version));
        let long;
        let client_id: Option<&[u8]> = match &self.client_id {
            ClientId::Null => None,
            ClientId::Admin => Some(b"admin"),
            ClientId::Ops => Some(b"ops"),
            ClientId::Bytes(b) => Some(b),
            ClientId::Long(n) => {
                long = vec![b'c'; usize::from(*n) % 32768];
                Some(&long)
            }
        };
        // Version 0 carries no election type: only PREFERRED.
        let election_type = match (version, self.election_type) {
            (0, _) | (_, Election::Preferred) => ElectionType::PREFERRED,
            (_, Election::Unclean) => ElectionType::UNCLEAN,
            (_, Election::Other(t)) => ElectionType(t),
        };
        let partitions: Vec<Vec<i32>> = self
            .topics
            .iter()
            .flatten()
            .map(|t| t.partitions.ids())
            .collect();
        let topics: Option<Vec<TopicPartitionsData<'_>>> = self.topics.as_ref().map(|topics| {
            topics
                .iter()
                .zip(&partitions)
                .map(|(t, p)| TopicPartitionsData::new(t.name.bytes(), p))
                .collect()
        });
        let tags = [TaggedFieldData::new(3, b"tag")];
        let tags: &[TaggedFieldData<'_>] = if self.tags && version >= 2 {
            &tags
        } else {
            &[]
        };
        ElectLeadersRequestData {
            correlation_id: id,
            client_id,
            header_tagged_fields: tags,
            election_type,
            topic_partitions: topics.as_deref(),
            timeout_ms: i32::from(self.timeout_ms),
            tagged_fields: tags,
        }
        .encode_to_vec(version)
        .ok()
    }
}

impl TopicName {
    fn bytes(&self) -> &[u8] {
        match self {
            TopicName::Payments => b"payments",
            TopicName::Secrets => b"secrets",
            TopicName::Orders => b"orders",
            TopicName::Logs => b"logs",
            TopicName::Bytes(b) => &b[..b.len().min(i16::MAX as usize)],
        }
    }
}

impl Damage {
    fn apply(&self, frame: &mut Vec<u8>) {
        // Offsets in the frame, size prefix included.
        const API_KEY_AT: usize = 4;
        const VERSION_AT: usize = 6;
        const ID_AT: usize = 8;
        const HEADER_END: usize = 12;
        match self {
            Damage::Truncate(n) => {
                let body = frame.len() - SIZE_PREFIX_LEN;
                frame.truncate(SIZE_PREFIX_LEN + usize::from(*n) % body.max(1));
            }
            Damage::Flip { at, xor } => {
                let mut i = SIZE_PREFIX_LEN + usize::from(*at) % (frame.len() - SIZE_PREFIX_LEN);
                if (ID_AT..HEADER_END).contains(&i) {
                    i = if HEADER_END < frame.len() {
                        HEADER_END
                    } else {
                        API_KEY_AT
                    };
                }
                frame[i] ^= (*xor).max(1);
                // An API key of 0 would make it a Produce, which the fake broker reads for
                // its acks: keep Produce to the frames built as such.
                if frame[API_KEY_AT..VERSION_AT] == [0, 0] {
                    frame[API_KEY_AT] = 0x40;
                }
            }
            Damage::Trailing(bytes) => frame.extend_from_slice(bytes),
            Damage::Version(v) => frame[VERSION_AT..ID_AT].copy_from_slice(&v.to_be_bytes()),
        }
        let sealed = seal(std::mem::take(frame));
        *frame = sealed;
    }
}

impl Produce {
    /// A Produce request as the guard reads it for its acks: header (v2 from v9 on), then
    /// the transactional id, acks and timeout; the rest (the records) is filler.
    fn frame(&self, id: i32) -> Vec<u8> {
        let version = 3 + i16::from(self.version % 10);
        let flexible = version >= 9;
        let mut out = header(0, version, id, b"producer", flexible);
        let transactional_id = self
            .transactional_id
            .as_deref()
            .map(|t| &t[..t.len().min(255)]);
        match (transactional_id, flexible) {
            (None, false) => put_string(&mut out, None),
            (Some(t), false) => put_string(&mut out, Some(t)),
            (None, true) => put_uvarint(&mut out, 0),
            (Some(t), true) => {
                put_uvarint(&mut out, t.len() as u64 + 1);
                out.extend_from_slice(t);
            }
        }
        let acks: i16 = match self.acks {
            Acks::None => 0,
            Acks::Leader => 1,
            Acks::All => -1,
            Acks::Other(a) => a,
        };
        out.extend_from_slice(&acks.to_be_bytes());
        out.extend_from_slice(&i32::from(self.timeout_ms).to_be_bytes());
        self.body.write_to(&mut out);
        seal(out)
    }
}

/// A Produce request's acks, read as Kafka's broker (and the guard) read them; `None` when
/// the frame is not a Produce or is cut short before them.
fn produce_acks(frame: &[u8]) -> Option<i16> {
    struct Reader<'a>(&'a [u8]);
    impl Reader<'_> {
        fn take(&mut self, n: usize) -> Option<&[u8]> {
            if self.0.len() < n {
                return None;
            }
            let (head, rest) = self.0.split_at(n);
            self.0 = rest;
            Some(head)
        }
        fn i16(&mut self) -> Option<i16> {
            self.take(2).map(|b| i16::from_be_bytes([b[0], b[1]]))
        }
        fn uvarint(&mut self) -> Option<u64> {
            let mut n = 0u64;
            for shift in (0..64).step_by(7) {
                let b = self.take(1)?[0];
                n |= u64::from(b & 0x7f) << shift;
                if b & 0x80 == 0 {
                    return Some(n);
                }
            }
            None
        }
        /// An `i16`-length nullable string.
        fn string(&mut self) -> Option<()> {
            let len = self.i16()?;
            if len > 0 {
                self.take(len as usize)?;
            }
            Some(())
        }
    }
    let mut r = Reader(frame.get(SIZE_PREFIX_LEN..)?);
    if r.i16()? != 0 {
        return None;
    }
    let version = r.i16()?;
    r.take(4)?; // correlation id
    r.string()?; // client id
    let flexible = version >= 9;
    if flexible {
        for _ in 0..r.uvarint()? {
            r.uvarint()?;
            let len = r.uvarint()?;
            r.take(usize::try_from(len).ok()?)?;
        }
        let len = r.uvarint()?;
        if len > 0 {
            r.take(usize::try_from(len - 1).ok()?)?;
        }
    } else {
        r.string()?;
    }
    r.i16()
}

// ---------------------------------------------------------------------------------------
// The guard's configuration: a few policies, each with its `Shared` made once.

/// The policies, by the script's first byte.
fn policies() -> Vec<Policy> {
    let names = |names: &[&str]| names.iter().map(|n| n.as_bytes().into()).collect();
    vec![
        // No rules: everything forwarded.
        Policy::default(),
        Policy {
            deny_unclean: true,
            protected_topics: names(&["payments", "secrets"]),
            ..Policy::default()
        },
        Policy {
            protected_topics: names(&["payments"]),
            allowed_client_ids: names(&["admin"]),
            max_partitions: Some(64),
            ..Policy::default()
        },
        Policy {
            deny_unclean: true,
            protected_topics: names(&["payments", "secrets"]),
            max_partitions: Some(8),
            log_only: true,
            ..Policy::default()
        },
        Policy {
            deny_unclean: true,
            max_partitions: Some(1000),
            ..Policy::default()
        },
    ]
}

/// One `Shared` per policy, for the whole process: each starts an audit thread.
fn shared(policy: u8) -> &'static Shared {
    static SHARED: OnceLock<Vec<Shared>> = OnceLock::new();
    let all = SHARED.get_or_init(|| {
        policies()
            .into_iter()
            .map(|policy| {
                let config = Config {
                    policy,
                    max_frame_size: MAX_FRAME_SIZE,
                    idle_timeout: IDLE_TIMEOUT,
                    frame_timeout: FRAME_TIMEOUT,
                    ..Config::default()
                };
                let audit = Audit::start(
                    AuditSink::Writer(Box::new(io::sink())),
                    DEFAULT_AUDIT_QUEUE_BYTES,
                )
                .expect("the audit thread starts");
                Shared::new(&config, audit)
            })
            .collect()
    });
    &all[usize::from(policy) % all.len()]
}

fn conn_info() -> ConnInfo {
    ConnInfo {
        client: "192.0.2.1:50000".parse().unwrap(),
        listener: "127.0.0.1:19092".parse().unwrap(),
        local: "127.0.0.1:19092".parse().unwrap(),
        upstream: "127.0.0.1:9092".parse().unwrap(),
    }
}

// ---------------------------------------------------------------------------------------
// The in-memory sides.

/// The client's close, as the guard's `ClientRead::closed` learns it (a TCP FIN).
#[derive(Default)]
struct ClientClosed {
    closed: AtomicBool,
    notify: Notify,
}

impl ClientClosed {
    fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
        self.notify.notify_waiters();
    }
}

/// The guard's end of the client's connection, reading side: what a TCP read half is to
/// the guard, with the client's FIN known as soon as it is sent.
struct ClientEnd {
    read: ReadHalf<DuplexStream>,
    closed: Arc<ClientClosed>,
}

impl AsyncRead for ClientEnd {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.read).poll_read(cx, buf)
    }
}

impl ClientRead for ClientEnd {
    async fn closed(&self) {
        loop {
            let notified = self.closed.notify.notified();
            if self.closed.closed.load(Ordering::Relaxed) {
                return;
            }
            notified.await;
        }
    }
}

/// A writing half of the guard's whose writes are not counted: the pipe's buffer stands for
/// the kernel's socket buffer, not for the guard's memory.
struct Uncounted<W>(W);

impl<W: AsyncWrite + Unpin> AsyncWrite for Uncounted<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let _off = memory::Counting::set(false);
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let _off = memory::Counting::set(false);
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

/// How far a side's sending has gone.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sending {
    Open,
    /// Write what is queued, then close: the client's FIN, or the broker's close.
    Closing,
    /// Closed at once, the queue dropped: the connection is gone.
    Gone,
}

/// Everything the client, the broker and the driver share. One task runs them all (with the
/// guard), so plain cells do.
struct World {
    /// Bumped by every byte moved by the client or the broker: the driver's sign that the
    /// guard is still at work.
    progress: Cell<u64>,

    client_queue: RefCell<VecDeque<Vec<u8>>>,
    client_sending: Cell<Sending>,
    client_reading: Cell<bool>,
    /// What the client wrote, as far as the pipe took it.
    client_sent: RefCell<Vec<u8>>,
    /// What the client read.
    client_got: RefCell<Vec<u8>>,
    client_closed: Arc<ClientClosed>,

    broker_queue: RefCell<VecDeque<Vec<u8>>>,
    broker_sending: Cell<Sending>,
    /// Bytes queued so far: where the next queued byte will be in `broker_sent`.
    broker_queued: Cell<usize>,
    /// The spans of `broker_sent` that are answers the fake broker made, as opposed to
    /// garbage or unknown ids.
    broker_proper: RefCell<Vec<(usize, usize)>>,
    broker_sent: RefCell<Vec<u8>>,
    broker_got: RefCell<Vec<u8>>,
    /// Where the next frame begins in `broker_got`.
    broker_parsed: Cell<usize>,
    /// The broker skipped a request, answered an unknown id or wrote garbage: it no longer
    /// answers as Kafka does.
    broker_misbehaved: Cell<bool>,
    /// Requests received and owed an answer, oldest first: where they are in `broker_got`.
    broker_owes: RefCell<VecDeque<Range<usize>>>,

    guard_done: Cell<bool>,
    guard_result: RefCell<Option<Result<(), String>>>,
    /// The driver gives up on the guard: its future is dropped.
    cancel: Cell<bool>,
    /// The driver is done: the sides stop once they have read what is left.
    over: Cell<bool>,
}

impl World {
    fn new() -> World {
        World {
            progress: Cell::new(0),
            client_queue: RefCell::default(),
            client_sending: Cell::new(Sending::Open),
            client_reading: Cell::new(true),
            client_sent: RefCell::default(),
            client_got: RefCell::default(),
            client_closed: Arc::default(),
            broker_queue: RefCell::default(),
            broker_sending: Cell::new(Sending::Open),
            broker_queued: Cell::new(0),
            broker_proper: RefCell::default(),
            broker_sent: RefCell::default(),
            broker_got: RefCell::default(),
            broker_parsed: Cell::new(0),
            broker_owes: RefCell::default(),
            broker_misbehaved: Cell::new(false),
            guard_done: Cell::new(false),
            guard_result: RefCell::new(None),
            cancel: Cell::new(false),
            over: Cell::new(false),
        }
    }

    fn moved(&self) {
        self.progress.set(self.progress.get() + 1);
    }

    fn client_write(&self, bytes: Vec<u8>) {
        if !bytes.is_empty() && self.client_sending.get() == Sending::Open {
            self.client_queue.borrow_mut().push_back(bytes);
        }
    }

    /// Queues bytes for the broker to write; `proper` when they are an answer it made.
    fn broker_write(&self, bytes: Vec<u8>, proper: bool) {
        if bytes.is_empty() || self.broker_sending.get() != Sending::Open {
            return;
        }
        let start = self.broker_queued.get();
        self.broker_queued.set(start + bytes.len());
        if proper {
            self.broker_proper
                .borrow_mut()
                .push((start, start + bytes.len()));
        }
        self.broker_queue.borrow_mut().push_back(bytes);
    }

    /// Takes the frames the broker received since the last call: those owed an answer (all
    /// but a Produce with acks=0) join `broker_owes`.
    fn broker_received(&self) {
        let got = self.broker_got.borrow();
        let mut at = self.broker_parsed.get();
        while let Ok((frame, _)) = split_frame_with_max(&got[at..], usize::MAX) {
            if produce_acks(frame) != Some(0) {
                self.broker_owes
                    .borrow_mut()
                    .push_back(at..at + frame.len());
            }
            at += frame.len();
        }
        self.broker_parsed.set(at);
    }
}

/// Resolves once `ready` says so. It registers no waker: every side runs in the one task,
/// which is polled again whenever any of them moves, and the driver yields after each of
/// its moves.
async fn until(ready: impl Fn() -> bool) {
    poll_fn(|_| {
        if ready() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await
}

/// Writes what `queue` holds into `w` (recording it in `sent`) until the side is closed.
async fn sender(
    world: &World,
    mut w: WriteHalf<DuplexStream>,
    queue: &RefCell<VecDeque<Vec<u8>>>,
    state: &Cell<Sending>,
    sent: &RefCell<Vec<u8>>,
    on_close: impl Fn(),
) {
    loop {
        until(|| !queue.borrow().is_empty() || state.get() != Sending::Open || world.over.get())
            .await;
        if state.get() == Sending::Gone || world.over.get() {
            break;
        }
        let Some(bytes) = queue.borrow_mut().pop_front() else {
            // Closing, everything written.
            let _ = w.shutdown().await;
            on_close();
            until(|| state.get() == Sending::Gone || world.over.get()).await;
            break;
        };
        let mut at = 0;
        while at < bytes.len() {
            let written = tokio::select! {
                biased;
                () = until(|| state.get() == Sending::Gone || world.over.get()) => None,
                r = w.write(&bytes[at..]) => Some(r),
            };
            match written {
                None => return,
                Some(Ok(n)) if n > 0 => {
                    sent.borrow_mut().extend_from_slice(&bytes[at..at + n]);
                    at += n;
                    world.moved();
                }
                // The guard is gone: nothing more gets through.
                Some(_) => {
                    queue.borrow_mut().clear();
                    until(|| state.get() == Sending::Gone || world.over.get()).await;
                    return;
                }
            }
        }
    }
}

/// Reads from `r` into `got` while `reading` says so, until the end of the stream, or until
/// the side is gone.
async fn receiver(
    world: &World,
    mut r: ReadHalf<DuplexStream>,
    got: &RefCell<Vec<u8>>,
    reading: impl Fn() -> bool,
    gone: impl Fn() -> bool,
    on_read: impl Fn(),
) {
    let mut buf = vec![0u8; 16 << 10];
    loop {
        until(|| reading() || gone() || world.over.get()).await;
        if gone() {
            return;
        }
        let n = tokio::select! {
            biased;
            () = until(|| gone() || (!reading() && !world.over.get())) => continue,
            r = r.read(&mut buf) => r,
        };
        match n {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                got.borrow_mut().extend_from_slice(&buf[..n]);
                world.moved();
                on_read();
            }
        }
    }
}

/// Lets the guard and the sides run until nothing moves: two yields in a row with no byte
/// moved (the guard does its work within the polls those yields cause).
async fn settle(world: &World) {
    let mut quiet = 0;
    for _ in 0..100_000 {
        let before = world.progress.get();
        tokio::task::yield_now().await;
        if world.progress.get() == before && !world.guard_done.get() {
            quiet += 1;
            if quiet == 2 {
                return;
            }
        } else if world.guard_done.get() {
            return;
        } else {
            quiet = 0;
        }
    }
}

/// The fake broker's answer to `request`: for ElectLeaders, a response at the request's
/// version with error 0 for exactly the partitions it names (none when it names all); for
/// the others, the correlation id and `extra` bytes.
fn broker_answer(request: &[u8], extra: usize) -> Vec<u8> {
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
fn plain_answer(correlation_id: i32, extra: usize) -> Vec<u8> {
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
async fn driver(world: &World, script: &Script, stop: &watch::Sender<bool>, lenient: bool) {
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
async fn guard(world: &World, future: impl Future<Output = Result<(), impl std::fmt::Display>>) {
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

/// A read buffer at its largest: a frame and [`RESERVE_STEP`] past it, doubled.
const PINNED_BUFFER: usize = 2 * (MAX_FRAME_SIZE + RESERVE_STEP);

/// `KEL_CONN_PEAKS` set: each run prints its memory peak and bound on stderr (how the bound
/// was checked against what the guard really holds).
fn report_peaks() -> bool {
    static REPORT: OnceLock<bool> = OnceLock::new();
    *REPORT.get_or_init(|| std::env::var_os("KEL_CONN_PEAKS").is_some())
}

thread_local! {
    /// One paused current-thread runtime per thread, for every input. Building one per input
    /// instead costs about 3 µs more a run (measured on the shorter half of a corpus: 27 µs
    /// against 30 µs a script, release build without instrumentation); the clock and the
    /// scheduler start each run idle either way.
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
}

/// Input: a `Script`, read with `arbitrary`. Strict, unless `KEL_CONN_LENIENT` is set in
/// the environment (see [`check_conn_lenient`]); with `KEL_CONN_SCRIPT` set, the script is
/// printed on stderr first.
pub fn check_conn(data: &[u8]) {
    static LENIENT: OnceLock<bool> = OnceLock::new();
    let lenient = *LENIENT.get_or_init(|| std::env::var_os("KEL_CONN_LENIENT").is_some());
    static SHOW: OnceLock<bool> = OnceLock::new();
    let show = *SHOW.get_or_init(|| std::env::var_os("KEL_CONN_SCRIPT").is_some());
    if let Ok(script) = Script::arbitrary_take_rest(Unstructured::new(data)) {
        if show {
            eprintln!("{script:#?}");
        }
        run(&script, lenient);
    }
}

/// [`check_conn`], tolerating the two bugs this target found in the guard at 13de460
/// (`corpus/regressions/conn`), so that a campaign on a guard that still has them looks for
/// other faults, and the replay of that corpus passes until they are fixed:
/// - a request kept in a slot (refused or trimmed) is a slice of the read buffer it was
///   read into, and keeps all of it allocated: the memory bound allows a whole read buffer
///   (`PINNED_BUFFER`) for each, up to [`MAX_IN_FLIGHT`];
/// - while one of its sides waits (the client's for room: the budget of kept requests, or a
///   slot; the broker's to write to a client that does not read), the guard sees neither a
///   stop, nor the other side's close, nor its idle timeout: after such an end, if the guard
///   has not finished, both sides close, and then it must.
pub fn check_conn_lenient(data: &[u8]) {
    if let Ok(script) = Script::arbitrary_take_rest(Unstructured::new(data)) {
        run(&script, true);
    }
}

/// Plays `script` against the guard and checks what each side saw (`lenient`: see
/// [`check_conn_lenient`]); returns the world for the tests below to look into.
fn run(script: &Script, lenient: bool) -> World {
    let shared = shared(script.policy);
    let pipe = PIPES[usize::from(script.pipe) % PIPES.len()];
    let world = World::new();
    let conn = conn_info();
    let measure = memory::installed().then(memory::Measure::start);

    RUNTIME.with(|rt| {
        rt.block_on(async {
            let (client, guard_client) = tokio::io::duplex(pipe);
            let (broker, guard_broker) = tokio::io::duplex(pipe);
            let (client_r, client_w) = tokio::io::split(client);
            let (broker_r, broker_w) = tokio::io::split(broker);
            let (gc_r, gc_w) = tokio::io::split(guard_client);
            let (gb_r, gb_w) = tokio::io::split(guard_broker);
            let client_end = ClientEnd {
                read: gc_r,
                closed: world.client_closed.clone(),
            };
            let (stop_tx, stop_rx) = watch::channel(false);
            let future = proxy(
                (client_end, Uncounted(gc_w)),
                (gb_r, Uncounted(gb_w)),
                &conn,
                shared,
                stop_rx,
            );
            let w = &world;
            tokio::join!(
                guard(w, future),
                sender(
                    w,
                    client_w,
                    &w.client_queue,
                    &w.client_sending,
                    &w.client_sent,
                    || w.client_closed.close(),
                ),
                receiver(
                    w,
                    client_r,
                    &w.client_got,
                    || w.client_reading.get() && w.client_got.borrow().len() < CLIENT_READ_CAP,
                    || w.client_sending.get() == Sending::Gone && !w.over.get(),
                    || {},
                ),
                sender(
                    w,
                    broker_w,
                    &w.broker_queue,
                    &w.broker_sending,
                    &w.broker_sent,
                    || w.broker_sending.set(Sending::Gone),
                ),
                receiver(
                    w,
                    broker_r,
                    &w.broker_got,
                    || true,
                    || w.broker_sending.get() == Sending::Gone && !w.over.get(),
                    || w.broker_received(),
                ),
                driver(w, script, &stop_tx, lenient),
            );
        })
    });

    let client_sent = world.client_sent.borrow();
    let (sent, growing) = classify(&client_sent, &shared.policy());
    if let Some(measure) = measure {
        let (peak, handed_over) = measure.finish();
        let largest_elect = sent
            .iter()
            .filter(|s| s.elect.is_some())
            .map(|s| s.frame.len())
            .max()
            .unwrap_or(0);
        let largest_refusal = sent.iter().map(|s| s.refusal_len).max().unwrap_or(0);
        let mut bound = memory_bound(MAX_FRAME_SIZE, largest_elect, largest_refusal);
        if lenient {
            let kept = sent
                .iter()
                .filter(|s| {
                    s.elect.as_ref().is_some_and(|(_, d)| {
                        matches!(d.verdict, Verdict::Refused | Verdict::Trimmed)
                    })
                })
                .count();
            bound += kept.min(MAX_IN_FLIGHT) * PINNED_BUFFER;
        }
        if report_peaks() {
            eprintln!(
                "conn: peak {peak} B, bound {bound} B, handed to the audit thread {handed_over} \
                 B, the guard's end: {:?}",
                world.guard_result.borrow()
            );
        }
        assert!(
            peak <= bound + handed_over,
            "the guard held {peak} bytes at its peak, over the bound of {bound} (and \
             {handed_over} bytes handed to the audit thread)"
        );
    }
    if growing {
        check_world(&world, &sent, &shared.policy());
    }
    drop(sent);
    drop(client_sent);
    world
}

// ---------------------------------------------------------------------------------------
// The checks, on what each side saw.

/// A request the guard read whole from the client, as it read it.
#[derive(Debug)]
pub struct Sent<'a> {
    pub id: i32,
    pub frame: &'a [u8],
    /// For an ElectLeaders request: its version and the policy's decision.
    pub elect: Option<(i16, Decision)>,
    /// The size of the guard's answer of refusals to it, if it has refusals.
    pub refusal_len: usize,
    /// For a request the leadership-change policy refuses (`leadership`): the answer the
    /// guard writes in its place, never forwarding it.
    pub change_refused: Option<Vec<u8>>,
}

/// What the leadership-change policy makes of a request of another API: None when it does
/// not read it (or no rule concerns leadership); `Err(())` when the guard closes the
/// connection on it (an inter-broker API, a version it does not read, a request it cannot
/// read); else its refusal, if refused.
fn police_change(frame: &[u8], policy: &Policy) -> Option<Result<Option<Vec<u8>>, ()>> {
    if !policy.polices_leadership() {
        return None;
    }
    let peek = peek_request(frame).ok()?;
    if leadership::inter_broker(peek.api_key).is_some() {
        return Some(Err(()));
    }
    let api = leadership::Api::of(peek.api_key)?;
    if !api.reads(peek.api_version) {
        return Some(Err(()));
    }
    let Ok(request) = leadership::read_request(api, peek.api_version, frame) else {
        return Some(Err(()));
    };
    let decision = policy.decide_change(&request, None);
    if decision.verdict != Verdict::Refused {
        return Some(Ok(None));
    }
    let mut answer = BytesMut::new();
    leadership::encode_refusal(&request, &decision, &mut answer);
    Some(Ok(Some(answer.to_vec())))
}

/// The refusals the guard writes for a leadership change it could not audit, whatever the
/// policy decided (the audit thread's lag depends on scheduling, not on the input). None
/// under `--log-only`, which never refuses.
fn unaudited_change_refusals(frame: &[u8], policy: &Policy) -> Vec<Vec<u8>> {
    if policy.log_only {
        return Vec::new();
    }
    let Ok(peek) = peek_request(frame) else {
        return Vec::new();
    };
    let Some(api) = leadership::Api::of(peek.api_key) else {
        return Vec::new();
    };
    let Ok(request) = leadership::read_request(api, peek.api_version, frame) else {
        return Vec::new();
    };
    let decision = policy.decide_change(&request, None);
    AuditError::ALL
        .iter()
        .map(|e| e.reason())
        .map(|why| {
            let mut answer = BytesMut::new();
            leadership::encode_refusal(&request, &decision.clone().unaudited(why), &mut answer);
            answer.to_vec()
        })
        .collect()
}

/// The client's stream as the guard reads it: the whole frames up to the first it must
/// close the connection on (a size prefix negative or past the largest frame, a frame too
/// short for a request header, an ElectLeaders request that does not parse). Also whether
/// their correlation ids grow (the harness sends them growing; a frame left unfinished can
/// make the next ones read at the wrong place).
pub fn classify<'a>(stream: &'a [u8], policy: &Policy) -> (Vec<Sent<'a>>, bool) {
    let mut sent: Vec<Sent<'a>> = Vec::new();
    let mut growing = true;
    let mut rest = stream;
    while let Ok((frame, tail)) = split_frame_with_max(rest, MAX_FRAME_SIZE) {
        rest = tail;
        let Ok(peek) = peek_request(frame) else {
            break;
        };
        let mut refusal_len = 0;
        let mut change_refused = None;
        if peek.api_key != API_KEY {
            match police_change(frame, policy) {
                Some(Err(())) => break,
                Some(Ok(Some(answer))) => {
                    refusal_len = answer.len();
                    change_refused = Some(answer);
                }
                Some(Ok(None)) | None => {}
            }
        }
        let elect = if peek.api_key == API_KEY {
            let Ok(request) = parse_request(frame) else {
                break;
            };
            let decision = policy.decide(&request);
            if matches!(decision.verdict, Verdict::Refused | Verdict::Trimmed) {
                let mut answer = BytesMut::new();
                refusal_len =
                    encode_refusal(policy, &decision, &request, None, &mut answer).unwrap_or(0);
            }
            Some((request.version(), decision))
        } else {
            None
        };
        if sent.last().is_some_and(|s| s.id >= peek.correlation_id) {
            growing = false;
        }
        sent.push(Sent {
            id: peek.correlation_id,
            frame,
            elect,
            refusal_len,
            change_refused,
        });
    }
    (sent, growing)
}

/// The whole frames at the front of `stream`, up to the first malformed size prefix (that
/// a whole frame of the guard's follows the framing is checked by the guard's own writer).
fn frames(stream: &[u8], max: usize) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = stream;
    while let Ok((frame, tail)) = split_frame_with_max(rest, max) {
        out.push(frame);
        rest = tail;
    }
    out
}

/// What the broker sent (`stream`), as the guard reads it: by correlation id, the first
/// frame with it and whether that is an answer the fake broker made (its span is in
/// `proper`), not garbage read as a frame.
fn broker_frames<'a>(
    stream: &'a [u8],
    proper: &[(usize, usize)],
) -> HashMap<i32, (&'a [u8], bool)> {
    let mut out = HashMap::new();
    let mut at = 0;
    for frame in frames(stream, MAX_FRAME_SIZE) {
        let span = (at, at + frame.len());
        at += frame.len();
        let Ok(peek) = peek_response(frame) else {
            break;
        };
        out.entry(peek.correlation_id)
            .or_insert_with(|| (frame, proper.contains(&span)));
    }
    out
}

/// Properties 1 to 3, on the client's requests as the guard read them (`sent`, their ids
/// growing).
fn check_world(world: &World, sent: &[Sent<'_>], policy: &Policy) {
    let by_id: HashMap<i32, &Sent<'_>> = sent.iter().map(|s| (s.id, s)).collect();
    let broker_got = world.broker_got.borrow();
    check_forwarded(&frames(&broker_got, usize::MAX), &by_id, policy);
    let broker_sent = world.broker_sent.borrow();
    let broker = broker_frames(&broker_sent, &world.broker_proper.borrow());
    let client_got = world.client_got.borrow();
    let answers = frames(&client_got, usize::MAX);
    check_answers(
        &answers,
        &by_id,
        &broker,
        world.broker_misbehaved.get(),
        policy,
    );
}

/// (topic, partition) of each partition an ElectLeaders request names, in order.
fn named(frame: &[u8]) -> Vec<(&[u8], i32)> {
    let request = parse_request(frame).expect("classified as parsing");
    request
        .topic_partitions()
        .iter()
        .flat_map(|list| list.iter())
        .flat_map(|t| t.partitions().iter().map(move |p| (t.topic(), p)))
        .collect()
}

/// Property 2: what the broker received, in order, against what the client sent.
pub fn check_forwarded(received: &[&[u8]], sent: &HashMap<i32, &Sent<'_>>, policy: &Policy) {
    let mut last: Option<i32> = None;
    for frame in received {
        let peek = peek_request(frame).expect("the broker got a frame without a request header");
        let id = peek.correlation_id;
        assert!(
            last.map_or(true, |l| l < id),
            "the broker got correlation id {id} after {last:?}: out of order, or twice"
        );
        last = Some(id);
        let Some(request) = sent.get(&id) else {
            panic!(
                "the broker got correlation id {id}, which the client never sent (or sent \
                 after a frame the guard must close on)"
            );
        };
        let Some((version, decision)) = &request.elect else {
            assert!(
                request.change_refused.is_none(),
                "correlation id {id}: a leadership change the policy refuses (API {}) was \
                 forwarded",
                peek.api_key
            );
            assert!(
                *frame == request.frame,
                "correlation id {id}: a frame of API {} not forwarded byte for byte",
                peek.api_key
            );
            continue;
        };
        match decision.verdict {
            Verdict::Forwarded | Verdict::WouldRefuse => assert!(
                *frame == request.frame,
                "correlation id {id}: an ElectLeaders request the policy lets through was \
                 changed"
            ),
            Verdict::Refused => {
                panic!("correlation id {id}: an ElectLeaders request refused whole was forwarded")
            }
            Verdict::Trimmed => {
                let trimmed = parse_request(frame).unwrap_or_else(|e| {
                    panic!("correlation id {id}: the trimmed request does not parse: {e}")
                });
                assert_eq!(trimmed.version(), *version, "correlation id {id}: version");
                let original = parse_request(request.frame).expect("classified as parsing");
                assert_eq!(trimmed.election_type(), original.election_type());
                let kept: Vec<(&[u8], i32)> = named(request.frame)
                    .into_iter()
                    .filter(|(t, _)| !decision.refuses_topic(policy, t))
                    .collect();
                assert_eq!(
                    named(frame),
                    kept,
                    "correlation id {id}: the trimmed request is not the original without \
                     exactly the refused topics"
                );
            }
        }
    }
}

/// Properties 1 and 3: the answers the client got, in order, against its requests and the
/// broker's answers (`broker_misbehaved`: see `ElectBroker`).
pub fn check_answers(
    answers: &[&[u8]],
    sent: &HashMap<i32, &Sent<'_>>,
    broker: &HashMap<i32, (&[u8], bool)>,
    broker_misbehaved: bool,
    policy: &Policy,
) {
    let mut last: Option<i32> = None;
    for answer in answers {
        let id = peek_response(answer)
            .expect("the client got a frame without a response header")
            .correlation_id;
        assert!(
            last.map_or(true, |l| l < id),
            "the client got the answer to correlation id {id} after that to {last:?}: out \
             of order, or twice"
        );
        last = Some(id);
        let Some(request) = sent.get(&id) else {
            panic!("the client got an answer to correlation id {id}, which it never sent");
        };
        let from_broker = broker.get(&id);
        if let Some(refusal) = &request.change_refused {
            assert!(
                *answer == &refusal[..]
                    || unaudited_change_refusals(request.frame, policy)
                        .iter()
                        .any(|r| *answer == &r[..]),
                "correlation id {id}: a refused leadership change not answered with its refusal"
            );
            continue;
        }
        let Some((version, decision)) = &request.elect else {
            if !from_broker.is_some_and(|(frame, _)| answer == frame)
                && unaudited_change_refusals(request.frame, policy)
                    .iter()
                    .any(|r| *answer == &r[..])
            {
                // A change the policy allows, refused because it could not be audited.
                continue;
            }
            if guard_refused_mechanism(request.frame, answer) {
                continue;
            }
            let Some((frame, _)) = from_broker else {
                panic!(
                    "the client got an answer to correlation id {id} that the broker never \
                     sent (a Produce with acks=0 gets none)"
                );
            };
            assert!(
                answer == frame,
                "correlation id {id}: the broker's answer not passed on byte for byte"
            );
            continue;
        };
        let from_broker = ElectBroker {
            frame: from_broker,
            misbehaved: broker_misbehaved,
        };
        check_elect_answer(
            answer,
            id,
            *version,
            decision,
            request.frame,
            from_broker,
            policy,
        );
    }
}

/// A SaslHandshake the guard answered itself: a mechanism it cannot read a principal
/// from, refused with UNSUPPORTED_SASL_MECHANISM (33) and never forwarded (see the
/// proxy's `identity`).
fn guard_refused_mechanism(request: &[u8], answer: &[u8]) -> bool {
    peek_request(request).is_ok_and(|p| p.api_key == 17) && answer.get(8..10) == Some(&[0, 33])
}

/// What the broker did for one ElectLeaders request.
struct ElectBroker<'a> {
    /// The first frame it wrote with the request's correlation id, and whether the fake
    /// broker made it (not garbage read as a frame).
    frame: Option<&'a (&'a [u8], bool)>,
    /// The broker skipped requests, answered unknown ids or wrote garbage: the guard may
    /// then give up on the answers it waits for, and answer a trimmed request with its
    /// refusals alone.
    misbehaved: bool,
}

/// One ElectLeaders answer (property 3, and 1's byte-for-byte rule where nothing is refused).
fn check_elect_answer(
    answer: &[u8],
    id: i32,
    version: i16,
    decision: &Decision,
    request: &[u8],
    broker: ElectBroker<'_>,
    policy: &Policy,
) {
    const POLICY_VIOLATION: i16 = ErrorCode::POLICY_VIOLATION.0;
    let response = parse_response(answer, version).unwrap_or_else(|e| {
        panic!("correlation id {id}: the ElectLeaders answer does not parse at v{version}: {e}")
    });
    // (topic, partition, error code), in the answer's order.
    let mut results: Vec<(&[u8], i32, i16)> = Vec::new();
    let mut unaudited = version == 0 || response.error_code() == ErrorCode::POLICY_VIOLATION;
    for topic in response.replica_election_results() {
        for p in topic.partition_result() {
            results.push((topic.topic(), p.partition_id(), p.error_code().0));
            if unaudited {
                let message = p.error_message().unwrap_or_default();
                unaudited = p.error_code() == ErrorCode::POLICY_VIOLATION
                    && message
                        .windows(b"cannot be audited".len())
                        .any(|w| w == b"cannot be audited");
            }
        }
    }
    // The audit log lagged: the whole request refused (see the module's comment); never
    // under --log-only, where the checks below find it a violation.
    if unaudited && !policy.log_only {
        return;
    }
    let broker_frame = broker.frame.map(|(frame, _)| *frame);
    let requested = named(request);
    let refused = |topic: &[u8]| decision.refuses_topic(policy, topic);
    match decision.verdict {
        Verdict::Forwarded | Verdict::WouldRefuse => {
            assert!(
                Some(answer) == broker_frame,
                "correlation id {id}: a forwarded ElectLeaders request's answer is not the \
                 broker's"
            );
            return;
        }
        Verdict::Trimmed if broker_frame.is_none() => {
            assert!(
                broker.misbehaved,
                "correlation id {id}: answered before the broker answered the trimmed request"
            );
            // Given up on the broker's answer: the refusals alone.
            let mut want: Vec<(&[u8], i32, i16)> = requested
                .iter()
                .filter(|(t, _)| refused(t))
                .map(|&(t, p)| (t, p, POLICY_VIOLATION))
                .collect();
            results.sort_unstable();
            want.sort_unstable();
            assert!(
                results == want,
                "correlation id {id}: a trimmed request answered without the broker, with \
                 other than its refusals"
            );
            return;
        }
        Verdict::Trimmed if broker.misbehaved => {
            // The broker answered unknown ids or wrote garbage: the guard may have given up
            // on its answers before this one came (an unknown id read while every slot is
            // taken means the broker is out of step), and answered the refusals alone. Found
            // by the campaign at c700b91 (corpus/regressions/conn/trimmed-answered-alone-after-unknown-ids): the
            // broker's answer to the trimmed request was whole in the stream, behind answers
            // to ids no request had.
            let mut alone: Vec<(&[u8], i32, i16)> = requested
                .iter()
                .filter(|(t, _)| refused(t))
                .map(|&(t, p)| (t, p, POLICY_VIOLATION))
                .collect();
            let mut sorted = results.clone();
            sorted.sort_unstable();
            alone.sort_unstable();
            if sorted == alone {
                return;
            }
        }
        Verdict::Trimmed | Verdict::Refused => {}
    }
    let proper = broker.frame.is_some_and(|(_, proper)| *proper);
    if decision.verdict == Verdict::Refused || proper {
        // With the fake broker's own answer (or none): exactly the partitions asked, those
        // refused with 44, the others with the broker's 0. In the order the guard writes
        // them (the broker's part first), else in any order.
        let kept = requested.iter().filter(|(t, _)| !refused(t));
        let refusals = requested.iter().filter(|(t, _)| refused(t));
        let mut want: Vec<(&[u8], i32, i16)> = kept
            .map(|&(t, p)| (t, p, 0))
            .chain(refusals.map(|&(t, p)| (t, p, POLICY_VIOLATION)))
            .collect();
        if results != want {
            results.sort_unstable();
            want.sort_unstable();
            assert!(
                results == want,
                "correlation id {id}: the answer's partitions and codes are not those asked \
                 (refused ones 44, the others the broker's 0): top-level {:?}, got {} {:?}, \
                 want {} {:?}",
                response.error_code(),
                results.len(),
                &results[..results.len().min(8)],
                want.len(),
                &want[..want.len().min(8)]
            );
        }
        return;
    }
    // Merged with a broker's answer that is not the fake broker's (garbage read as one):
    // every refused partition answered 44 all the same.
    let answered_44: HashSet<(&[u8], i32)> = results
        .iter()
        .filter(|(_, _, code)| *code == POLICY_VIOLATION)
        .map(|&(t, p, _)| (t, p))
        .collect();
    for &(topic, partition) in requested.iter().filter(|(t, _)| refused(t)) {
        assert!(
            answered_44.contains(&(topic, partition)),
            "correlation id {id}: refused partition {}-{partition} not answered \
             POLICY_VIOLATION",
            String::from_utf8_lossy(topic)
        );
    }
}

/// Scripts written as the bytes `arbitrary` reads them back as: the seeds of
/// `corpus/fuzz/conn` are made from scripts written out in Rust (`tests::write_seeds`).
#[cfg(test)]
mod seed {
    use super::*;

    /// The writing side of `Arbitrary`'s derive, by hand; `tests::seeds_read_back` checks
    /// each type against the derive.
    pub(super) trait Put {
        fn put(&self, out: &mut Vec<u8>);
    }

    /// The derive reads a variant from a `u32`: index `(tag * count) >> 32`.
    fn variant(out: &mut Vec<u8>, index: u32, count: u32) {
        let tag = (u64::from(index) << 32).div_ceil(u64::from(count));
        out.extend_from_slice(&(tag as u32).to_le_bytes());
    }

    macro_rules! put_int {
        ($($t:ty),*) => {$(
            impl Put for $t {
                fn put(&self, out: &mut Vec<u8>) {
                    out.extend_from_slice(&self.to_le_bytes());
                }
            }
        )*};
    }
    put_int!(u8, i8, u16, i16, u32, i32);

    impl Put for bool {
        fn put(&self, out: &mut Vec<u8>) {
            out.push(u8::from(*self));
        }
    }

    impl<T: Put> Put for Option<T> {
        fn put(&self, out: &mut Vec<u8>) {
            self.is_some().put(out);
            if let Some(v) = self {
                v.put(out);
            }
        }
    }

    /// Each element behind a "one more" byte, then a "no more" byte.
    impl<T: Put> Put for Vec<T> {
        fn put(&self, out: &mut Vec<u8>) {
            for v in self {
                out.push(1);
                v.put(out);
            }
            out.push(0);
        }
    }

    impl<T: Put, const N: usize> Put for [T; N] {
        fn put(&self, out: &mut Vec<u8>) {
            for v in self {
                v.put(out);
            }
        }
    }

    /// The script's bytes: its moves are its last field, read to the end of the input.
    pub(super) fn bytes(script: &Script) -> Vec<u8> {
        let mut out = Vec::new();
        script.policy.put(&mut out);
        script.pipe.put(&mut out);
        script.finale.linger.put(&mut out);
        script.finale.answer_all.put(&mut out);
        script.finale.end.put(&mut out);
        for op in &script.ops {
            out.push(1);
            op.put(&mut out);
        }
        out
    }

    impl Put for Op {
        fn put(&self, out: &mut Vec<u8>) {
            const N: u32 = 17;
            match self {
                Op::Send(r) => {
                    variant(out, 0, N);
                    r.put(out);
                }
                Op::Pieces { request, cuts, gap } => {
                    variant(out, 1, N);
                    request.put(out);
                    cuts.put(out);
                    gap.put(out);
                }
                Op::Repeat { requests, times } => {
                    variant(out, 2, N);
                    requests.put(out);
                    times.put(out);
                }
                Op::Head { request, keep } => {
                    variant(out, 3, N);
                    request.put(out);
                    keep.put(out);
                }
                Op::Desync { request, keep } => {
                    variant(out, 4, N);
                    request.put(out);
                    keep.put(out);
                }
                Op::BadSize {
                    negative,
                    size,
                    then,
                } => {
                    variant(out, 5, N);
                    negative.put(out);
                    size.put(out);
                    then.put(out);
                }
                Op::Answer {
                    count,
                    pieces,
                    extra,
                    large,
                } => {
                    variant(out, 6, N);
                    count.put(out);
                    pieces.put(out);
                    extra.put(out);
                    large.put(out);
                }
                Op::Skip => variant(out, 7, N),
                Op::UnknownId { extra } => {
                    variant(out, 8, N);
                    extra.put(out);
                }
                Op::Garbage(bytes) => {
                    variant(out, 9, N);
                    bytes.put(out);
                }
                Op::ClientFin => variant(out, 10, N),
                Op::ClientClose => variant(out, 11, N),
                Op::ClientStopReading => variant(out, 12, N),
                Op::ClientResumeReading => variant(out, 13, N),
                Op::BrokerClose => variant(out, 14, N),
                Op::Wait(delay) => {
                    variant(out, 15, N);
                    delay.put(out);
                }
                Op::Stop => variant(out, 16, N),
            }
        }
    }

    impl Put for End {
        fn put(&self, out: &mut Vec<u8>) {
            let index = match self {
                End::Both => 0,
                End::Client => 1,
                End::Broker => 2,
                End::Stop => 3,
            };
            variant(out, index, 4);
        }
    }

    impl Put for Delay {
        fn put(&self, out: &mut Vec<u8>) {
            match self {
                Delay::Millis(n) => {
                    variant(out, 0, 3);
                    n.put(out);
                }
                Delay::Seconds(n) => {
                    variant(out, 1, 3);
                    n.put(out);
                }
                Delay::Minutes(n) => {
                    variant(out, 2, 3);
                    n.put(out);
                }
            }
        }
    }

    impl Put for Request {
        fn put(&self, out: &mut Vec<u8>) {
            const N: u32 = 6;
            match self {
                Request::Elect(e) => {
                    variant(out, 0, N);
                    e.put(out);
                }
                Request::Damaged(e, d) => {
                    variant(out, 1, N);
                    e.put(out);
                    d.put(out);
                }
                Request::Produce(p) => {
                    variant(out, 2, N);
                    p.put(out);
                }
                Request::Metadata { version, body } => {
                    variant(out, 3, N);
                    version.put(out);
                    body.put(out);
                }
                Request::Fetch {
                    version,
                    max_wait_ms,
                    body,
                } => {
                    variant(out, 4, N);
                    version.put(out);
                    max_wait_ms.put(out);
                    body.put(out);
                }
                Request::Other {
                    api_key,
                    version,
                    body,
                } => {
                    variant(out, 5, N);
                    api_key.put(out);
                    version.put(out);
                    body.put(out);
                }
            }
        }
    }

    impl Put for Elect {
        fn put(&self, out: &mut Vec<u8>) {
            self.version.put(out);
            self.client_id.put(out);
            self.election_type.put(out);
            self.topics.put(out);
            self.timeout_ms.put(out);
            self.tags.put(out);
        }
    }

    impl Put for ClientId {
        fn put(&self, out: &mut Vec<u8>) {
            match self {
                ClientId::Null => variant(out, 0, 5),
                ClientId::Admin => variant(out, 1, 5),
                ClientId::Ops => variant(out, 2, 5),
                ClientId::Bytes(b) => {
                    variant(out, 3, 5);
                    b.put(out);
                }
                ClientId::Long(n) => {
                    variant(out, 4, 5);
                    n.put(out);
                }
            }
        }
    }

    impl Put for Election {
        fn put(&self, out: &mut Vec<u8>) {
            match self {
                Election::Preferred => variant(out, 0, 3),
                Election::Unclean => variant(out, 1, 3),
                Election::Other(t) => {
                    variant(out, 2, 3);
                    t.put(out);
                }
            }
        }
    }

    impl Put for Topic {
        fn put(&self, out: &mut Vec<u8>) {
            self.name.put(out);
            self.partitions.put(out);
        }
    }

    impl Put for TopicName {
        fn put(&self, out: &mut Vec<u8>) {
            match self {
                TopicName::Payments => variant(out, 0, 5),
                TopicName::Secrets => variant(out, 1, 5),
                TopicName::Orders => variant(out, 2, 5),
                TopicName::Logs => variant(out, 3, 5),
                TopicName::Bytes(b) => {
                    variant(out, 4, 5);
                    b.put(out);
                }
            }
        }
    }

    impl Put for Partitions {
        fn put(&self, out: &mut Vec<u8>) {
            match self {
                Partitions::List(list) => {
                    variant(out, 0, 3);
                    list.put(out);
                }
                Partitions::Count(n) => {
                    variant(out, 1, 3);
                    n.put(out);
                }
                Partitions::Many(n) => {
                    variant(out, 2, 3);
                    n.put(out);
                }
            }
        }
    }

    impl Put for Damage {
        fn put(&self, out: &mut Vec<u8>) {
            match self {
                Damage::Truncate(n) => {
                    variant(out, 0, 4);
                    n.put(out);
                }
                Damage::Flip { at, xor } => {
                    variant(out, 1, 4);
                    at.put(out);
                    xor.put(out);
                }
                Damage::Trailing(b) => {
                    variant(out, 2, 4);
                    b.put(out);
                }
                Damage::Version(v) => {
                    variant(out, 3, 4);
                    v.put(out);
                }
            }
        }
    }

    impl Put for Produce {
        fn put(&self, out: &mut Vec<u8>) {
            self.version.put(out);
            self.acks.put(out);
            self.transactional_id.put(out);
            self.timeout_ms.put(out);
            self.body.put(out);
        }
    }

    impl Put for Acks {
        fn put(&self, out: &mut Vec<u8>) {
            match self {
                Acks::None => variant(out, 0, 4),
                Acks::Leader => variant(out, 1, 4),
                Acks::All => variant(out, 2, 4),
                Acks::Other(a) => {
                    variant(out, 3, 4);
                    a.put(out);
                }
            }
        }
    }

    impl Put for Body {
        fn put(&self, out: &mut Vec<u8>) {
            match self {
                Body::Bytes(b) => {
                    variant(out, 0, 3);
                    b.put(out);
                }
                Body::Filled(n) => {
                    variant(out, 1, 3);
                    n.put(out);
                }
                Body::Large(n) => {
                    variant(out, 2, 3);
                    n.put(out);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elect(id: i32, topics: &[TopicPartitionsData<'_>]) -> Vec<u8> {
        ElectLeadersRequestData {
            correlation_id: id,
            election_type: ElectionType::PREFERRED,
            topic_partitions: Some(topics),
            ..Default::default()
        }
        .encode_to_vec(2)
        .unwrap()
    }

    fn protect_payments() -> Policy {
        Policy {
            protected_topics: ["payments"].iter().map(|n| n.as_bytes().into()).collect(),
            ..Policy::default()
        }
    }

    fn metadata(id: i32) -> Vec<u8> {
        let mut out = header(3, 1, id, b"c", false);
        out.extend_from_slice(b"body");
        seal(out)
    }

    /// The answers' order is checked: an answer before that of an earlier request fails.
    #[test]
    #[should_panic(expected = "out of order")]
    fn answers_out_of_order_fail() {
        let policy = Policy::default();
        let stream = [metadata(1), metadata(2)].concat();
        let (sent, growing) = classify(&stream, &policy);
        assert!(growing);
        let by_id: HashMap<i32, &Sent<'_>> = sent.iter().map(|s| (s.id, s)).collect();
        let (one, two) = (plain_answer(1, 3), plain_answer(2, 3));
        let broker = HashMap::from([(1, (&one[..], true)), (2, (&two[..], true))]);
        check_answers(&[&one, &two], &by_id, &broker, false, &policy);
        check_answers(&[&two, &one], &by_id, &broker, false, &policy);
    }

    /// CreatePartitions v0 adding partitions to `topic`.
    fn add_partitions(id: i32, topic: &str) -> Vec<u8> {
        let mut out = header(37, 0, id, b"client", false);
        out.extend_from_slice(&1i32.to_be_bytes());
        put_string(&mut out, Some(topic.as_bytes()));
        out.extend_from_slice(&4i32.to_be_bytes());
        out.extend_from_slice(&(-1i32).to_be_bytes());
        out.extend_from_slice(&1000i32.to_be_bytes());
        out.push(0);
        seal(out)
    }

    /// Issue 35: a leadership change the policy refuses is answered by the guard and never
    /// forwarded; one it allows is forwarded byte for byte; an inter-broker API ends the
    /// stream as the guard reads it (it closes the connection).
    #[test]
    #[should_panic(expected = "a leadership change the policy refuses (API 37) was forwarded")]
    fn a_refused_leadership_change_forwarded_fails() {
        let policy = protect_payments();
        let stream = [add_partitions(1, "orders"), add_partitions(2, "payments")].concat();
        let (sent, _) = classify(&stream, &policy);
        assert_eq!(sent.len(), 2);
        assert!(sent[0].change_refused.is_none());
        let refusal = sent[1].change_refused.clone().expect("refused");
        let by_id: HashMap<i32, &Sent<'_>> = sent.iter().map(|s| (s.id, s)).collect();
        // The guard's own answer to the refused one is accepted; the broker's is not.
        let broker_one = plain_answer(1, 3);
        let broker = HashMap::from([(1, (&broker_one[..], true))]);
        check_answers(&[&broker_one, &refusal], &by_id, &broker, false, &policy);
        check_forwarded(&[sent[0].frame], &by_id, &policy);
        let mut inter_broker = header(56, 0, 3, b"client", false);
        inter_broker.extend_from_slice(&[0; 4]);
        let stream = [
            add_partitions(1, "orders"),
            seal(inter_broker),
            add_partitions(4, "x"),
        ]
        .concat();
        assert_eq!(classify(&stream, &policy).0.len(), 1);
        check_forwarded(&[sent[0].frame, sent[1].frame], &by_id, &policy);
    }

    /// A forwarded request that still names a refused partition fails.
    #[test]
    #[should_panic(expected = "not the original without exactly the refused topics")]
    fn a_refused_partition_forwarded_fails() {
        let policy = protect_payments();
        let topics = [
            TopicPartitionsData::new(b"payments", &[0]),
            TopicPartitionsData::new(b"orders", &[1]),
        ];
        let request = elect(1, &topics);
        let (sent, _) = classify(&request, &policy);
        assert_eq!(sent[0].elect.as_ref().unwrap().1.verdict, Verdict::Trimmed);
        let by_id: HashMap<i32, &Sent<'_>> = sent.iter().map(|s| (s.id, s)).collect();
        let trimmed = elect(1, &topics[1..]);
        check_forwarded(&[&trimmed], &by_id, &policy);
        check_forwarded(&[&request], &by_id, &policy);
    }

    /// An election refused because it could not be audited is accepted in place of any
    /// decision, except under `--log-only`, which never refuses (issue 35, finding 5):
    /// there it is a violation, for an election and for a leadership change alike.
    #[test]
    fn an_unaudited_refusal_is_a_violation_under_log_only() {
        let topics = [TopicPartitionsData::new(b"orders", &[1])];
        let request = elect(1, &topics);
        let unaudited = |policy: &Policy| {
            let view = parse_request(&request).unwrap();
            let decision = policy.refuse_unaudited(&view, AuditError::Stalled.reason());
            let mut answer = BytesMut::new();
            encode_refusal(policy, &decision, &view, None, &mut answer).unwrap();
            answer.to_vec()
        };
        let check = |policy: &Policy| {
            let (sent, _) = classify(&request, policy);
            let by_id: HashMap<i32, &Sent<'_>> = sent.iter().map(|s| (s.id, s)).collect();
            let from_broker = broker_answer(&request, 0);
            let broker = HashMap::from([(1, (&from_broker[..], true))]);
            let answer = unaudited(policy);
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                check_answers(&[&answer], &by_id, &broker, false, policy);
            }))
            .is_ok()
        };
        assert!(check(&protect_payments()), "an unaudited refusal rejected");
        let log_only = Policy {
            log_only: true,
            ..protect_payments()
        };
        assert!(
            !check(&log_only),
            "an unaudited refusal accepted under --log-only"
        );

        let change = add_partitions(2, "payments");
        assert!(!unaudited_change_refusals(&change, &protect_payments()).is_empty());
        assert!(unaudited_change_refusals(&change, &log_only).is_empty());
    }

    /// A refused partition answered with the broker's 0 rather than 44 fails.
    #[test]
    #[should_panic(expected = "refused ones 44")]
    fn a_refused_partition_answered_0_fails() {
        let policy = protect_payments();
        let topics = [
            TopicPartitionsData::new(b"payments", &[0]),
            TopicPartitionsData::new(b"orders", &[1]),
        ];
        let request = elect(1, &topics);
        let (sent, _) = classify(&request, &policy);
        let by_id: HashMap<i32, &Sent<'_>> = sent.iter().map(|s| (s.id, s)).collect();
        // The broker's answer to the whole request, passed on as it is.
        let answer = broker_answer(&request, 0);
        let trimmed_answer = broker_answer(&elect(1, &topics[1..]), 0);
        let broker = HashMap::from([(1, (&trimmed_answer[..], true))]);
        check_answers(&[&answer], &by_id, &broker, false, &policy);
    }

    /// A Produce with acks=0 is read as such, at both header versions.
    #[test]
    fn produce_acks_are_read() {
        for version in 0..10 {
            for (acks, want) in [(Acks::None, 0), (Acks::Leader, 1), (Acks::All, -1)] {
                let produce = Produce {
                    version,
                    acks,
                    transactional_id: (version % 2 == 0).then(|| b"tx".to_vec()),
                    timeout_ms: 1000,
                    body: Body::Filled(1),
                };
                assert_eq!(produce_acks(&produce.frame(5)), Some(want));
            }
        }
        assert_eq!(produce_acks(&metadata(1)), None);
    }

    fn elect_of(
        version: u8,
        client_id: ClientId,
        election_type: Election,
        topics: Option<Vec<(TopicName, Partitions)>>,
    ) -> Request {
        Request::Elect(Elect {
            version,
            client_id,
            election_type,
            topics: topics.map(|topics| {
                topics
                    .into_iter()
                    .map(|(name, partitions)| Topic { name, partitions })
                    .collect()
            }),
            timeout_ms: 30_000,
            tags: version == 2,
        })
    }

    fn produce(acks: Acks) -> Request {
        Request::Produce(Produce {
            version: 6,
            acks,
            transactional_id: None,
            timeout_ms: 1000,
            body: Body::Filled(3),
        })
    }

    fn script(policy: u8, ops: Vec<Op>) -> Script {
        Script {
            policy,
            pipe: 2,
            finale: Finale {
                linger: None,
                answer_all: false,
                end: End::Both,
            },
            ops,
        }
    }

    fn answer(count: u8) -> Op {
        Op::Answer {
            count,
            pieces: 0,
            extra: 1,
            large: false,
        }
    }

    /// The correlation ids of the frames in `stream`, requests or responses.
    fn ids(stream: &[u8], requests: bool) -> Vec<i32> {
        frames(stream, usize::MAX)
            .into_iter()
            .map(|f| {
                if requests {
                    peek_request(f).unwrap().correlation_id
                } else {
                    peek_response(f).unwrap().correlation_id
                }
            })
            .collect()
    }

    /// The scripts the seeds are made from, by name: one of each kind of move, each on a
    /// policy where it decides something.
    fn seeds() -> Vec<(&'static str, Script)> {
        use Partitions::{Count, List};
        use TopicName::{Logs, Orders, Payments, Secrets};
        let some = |p: &[i32]| List(p.to_vec());
        let mut out = vec![
            (
                "decisions",
                // Policy 1: payments and secrets protected, unclean elections denied.
                script(
                    1,
                    vec![
                        Op::Send(elect_of(
                            2,
                            ClientId::Admin,
                            Election::Preferred,
                            Some(vec![(Payments, some(&[0, 1])), (Orders, some(&[2]))]),
                        )),
                        Op::Send(produce(Acks::None)),
                        Op::Send(Request::Metadata {
                            version: 8,
                            body: Body::Bytes(b"topics".to_vec()),
                        }),
                        Op::Send(elect_of(
                            1,
                            ClientId::Ops,
                            Election::Unclean,
                            Some(vec![(Orders, some(&[2])), (Logs, some(&[0, 0]))]),
                        )),
                        Op::Send(produce(Acks::All)),
                        answer(3),
                        Op::Wait(Delay::Seconds(1)),
                    ],
                ),
            ),
            (
                "whole-refusals",
                // Policy 2: client id admin only, payments protected, 64 partitions at most.
                script(
                    2,
                    vec![
                        Op::Send(elect_of(
                            0,
                            ClientId::Ops,
                            Election::Preferred,
                            Some(vec![(Orders, some(&[1]))]),
                        )),
                        Op::Send(elect_of(2, ClientId::Admin, Election::Preferred, None)),
                        Op::Send(elect_of(
                            1,
                            ClientId::Admin,
                            Election::Preferred,
                            Some(vec![(Orders, Count(65)), (Payments, some(&[3]))]),
                        )),
                        Op::Send(elect_of(
                            2,
                            ClientId::Admin,
                            Election::Other(7),
                            Some(vec![(Payments, some(&[3])), (Secrets, Count(3))]),
                        )),
                        answer(1),
                    ],
                ),
            ),
            (
                "log-only",
                // Policy 3: the rules of policy 1 and 8 partitions at most, log only.
                script(
                    3,
                    vec![
                        Op::Send(elect_of(
                            2,
                            ClientId::Null,
                            Election::Unclean,
                            Some(vec![(Payments, some(&[0])), (Logs, Count(9))]),
                        )),
                        Op::Send(elect_of(1, ClientId::Ops, Election::Preferred, None)),
                        answer(1),
                    ],
                ),
            ),
            (
                "pieces-and-timeouts",
                script(
                    1,
                    vec![
                        Op::Pieces {
                            request: elect_of(
                                2,
                                ClientId::Ops,
                                Election::Preferred,
                                Some(vec![(Secrets, some(&[1])), (Orders, some(&[5]))]),
                            ),
                            cuts: [3, 20, 41],
                            gap: Some(Delay::Seconds(1)),
                        },
                        Op::Head {
                            request: Request::Fetch {
                                version: 7,
                                max_wait_ms: 500,
                                body: Body::Filled(6),
                            },
                            keep: 30,
                        },
                        answer(0),
                        Op::Wait(Delay::Seconds(5)),
                        Op::Send(Request::Other {
                            api_key: 18,
                            version: 3,
                            body: Body::Bytes(vec![]),
                        }),
                        Op::Wait(Delay::Seconds(20)),
                        answer(0),
                    ],
                ),
            ),
            (
                "damaged",
                script(
                    1,
                    vec![
                        Op::Send(produce(Acks::Leader)),
                        Op::Send(Request::Damaged(
                            Elect {
                                version: 2,
                                client_id: ClientId::Admin,
                                election_type: Election::Preferred,
                                topics: Some(vec![Topic {
                                    name: Orders,
                                    partitions: some(&[0, 1, 2]),
                                }]),
                                timeout_ms: 100,
                                tags: false,
                            },
                            Damage::Truncate(20),
                        )),
                        Op::Send(produce(Acks::Leader)),
                        answer(1),
                    ],
                ),
            ),
            (
                "broker-misbehaves",
                script(
                    0,
                    vec![
                        Op::Send(produce(Acks::Leader)),
                        Op::Send(produce(Acks::None)),
                        Op::Send(produce(Acks::All)),
                        Op::Skip,
                        answer(0),
                        Op::UnknownId { extra: 3 },
                        Op::Garbage(vec![0, 0, 0, 1, 9]),
                    ],
                ),
            ),
            (
                "stop-and-closes",
                script(
                    4,
                    vec![
                        Op::Send(elect_of(
                            1,
                            ClientId::Ops,
                            Election::Unclean,
                            Some(vec![(Orders, some(&[1]))]),
                        )),
                        Op::Send(produce(Acks::Leader)),
                        Op::ClientStopReading,
                        Op::Stop,
                        Op::Wait(Delay::Millis(200)),
                        Op::ClientResumeReading,
                        answer(0),
                        Op::ClientFin,
                        Op::BrokerClose,
                        Op::Wait(Delay::Seconds(5)),
                    ],
                ),
            ),
            (
                "bad-size",
                script(
                    0,
                    vec![
                        Op::Send(produce(Acks::Leader)),
                        Op::BadSize {
                            negative: false,
                            size: 0,
                            then: vec![1, 2, 3],
                        },
                        answer(0),
                    ],
                ),
            ),
        ];
        // Large frames while the broker keeps the first request waiting: refused requests
        // behind frames near the largest, and a request of about as many partitions as a
        // frame holds, trimmed.
        let held = vec![
            Op::ClientStopReading,
            Op::Send(Request::Metadata {
                version: 1,
                body: Body::Bytes(vec![]),
            }),
            Op::Repeat {
                requests: vec![
                    Request::Other {
                        api_key: 3,
                        version: 1,
                        body: Body::Large(50),
                    },
                    elect_of(
                        1,
                        ClientId::Ops,
                        Election::Unclean,
                        Some(vec![(Orders, some(&[1]))]),
                    ),
                ],
                times: 4,
            },
            Op::Send(elect_of(
                2,
                ClientId::Ops,
                Election::Preferred,
                Some(vec![(Payments, Partitions::Many(0)), (Orders, some(&[0]))]),
            )),
            Op::Answer {
                count: 3,
                pieces: 1,
                extra: 50,
                large: true,
            },
        ];
        out.push(("large-frames-held", script(1, held)));
        // Each end of the finale, on some seed.
        for (name, script) in &mut out {
            let (end, answer_all) = match *name {
                "whole-refusals" => (End::Client, true),
                "log-only" => (End::Broker, false),
                "pieces-and-timeouts" => (End::Stop, false),
                "decisions" => (End::Stop, true),
                _ => continue,
            };
            script.finale.end = end;
            script.finale.answer_all = answer_all;
        }
        out
    }

    /// The script of `corpus/regressions/conn/memory-kept-requests-pin-read-buffers`: the
    /// broker keeps the first request waiting while the client sends 30 pairs of a frame
    /// near the largest and a refused ElectLeaders request; each refused request kept in
    /// its slot keeps the whole read buffer it was read into (about 64 KiB) allocated.
    fn pinned_read_buffers() -> Script {
        let refused = elect_of(
            1,
            ClientId::Ops,
            Election::Unclean,
            Some(vec![(TopicName::Orders, Partitions::List(vec![1]))]),
        );
        let large = Request::Other {
            api_key: 3,
            version: 1,
            body: Body::Large(50),
        };
        script(
            1,
            vec![
                Op::ClientStopReading,
                Op::Send(Request::Metadata {
                    version: 1,
                    body: Body::Bytes(vec![]),
                }),
                Op::Repeat {
                    requests: vec![large, refused],
                    times: 28,
                },
                Op::Wait(Delay::Seconds(1)),
            ],
        )
    }

    /// The script of `corpus/regressions/conn/end-unseen-while-waiting-for-budget-*`: the
    /// broker leaves the first request unanswered; the client sends three requests refused
    /// whole, of 30 KB each (a long client id). Two hold the budget of kept requests (one
    /// frame); the third waits for it, and while it waits the guard sees neither `end`
    /// (a stop, the client's close) nor its idle timeout: it never finishes.
    fn unseen_end(end: End) -> Script {
        let refused = elect_of(
            1,
            ClientId::Long(30_000),
            Election::Unclean,
            Some(vec![(TopicName::Orders, Partitions::List(vec![1]))]),
        );
        let mut script = script(
            1,
            vec![
                Op::Send(Request::Metadata {
                    version: 1,
                    body: Body::Bytes(vec![]),
                }),
                Op::Repeat {
                    requests: vec![refused],
                    times: 1,
                },
            ],
        );
        script.finale.end = end;
        script
    }

    /// The script of `corpus/regressions/conn/end-unseen-while-writing-to-a-client-not-reading`:
    /// the client stops reading, the broker answers its Metadata request with 640 bytes, more
    /// than the client's pipe takes; the guard waits to write the answer. The client sends
    /// three requests refused whole, of 30 KB each: the third waits for the budget of kept
    /// requests (the first two are never answered, the client not reading). Then the broker
    /// closes, and the guard, its two sides waiting, never sees it: it never finishes.
    fn unseen_broker_close() -> Script {
        let refused = elect_of(
            1,
            ClientId::Long(30_000),
            Election::Unclean,
            Some(vec![(TopicName::Orders, Partitions::List(vec![1]))]),
        );
        let mut script = script(
            1,
            vec![
                Op::ClientStopReading,
                Op::Send(Request::Metadata {
                    version: 1,
                    body: Body::Bytes(vec![]),
                }),
                Op::Answer {
                    count: 0,
                    pieces: 0,
                    extra: 40,
                    large: false,
                },
                Op::Repeat {
                    requests: vec![refused],
                    times: 1,
                },
            ],
        );
        script.pipe = 0;
        script.finale.end = End::Broker;
        script
    }

    /// Every seed reads back as the script it was written from (the hand-written encoder
    /// agrees with `arbitrary`'s derive).
    #[test]
    fn seeds_read_back() {
        let regressions = [
            ("pinned-read-buffers", pinned_read_buffers()),
            ("unseen-stop", unseen_end(End::Stop)),
            ("unseen-broker-close", unseen_broker_close()),
        ];
        for (name, script) in seeds().into_iter().chain(regressions) {
            let bytes = seed::bytes(&script);
            let read = Script::arbitrary_take_rest(Unstructured::new(&bytes)).unwrap();
            assert_eq!(format!("{read:?}"), format!("{script:?}"), "{name}");
        }
    }

    /// Writes the seeds into corpus/fuzz/conn, and the script of a bug found into
    /// corpus/regressions/conn (`cargo test -p kafka-elect-leaders-fuzz-checks write_seeds --
    /// --ignored`).
    #[test]
    #[ignore]
    fn write_seeds() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/fuzz/conn");
        std::fs::create_dir_all(&dir).unwrap();
        for (name, script) in seeds() {
            std::fs::write(dir.join(format!("seed-{name}")), seed::bytes(&script)).unwrap();
        }
        let regressions = dir.join("../../regressions/conn");
        std::fs::create_dir_all(&regressions).unwrap();
        std::fs::write(
            regressions.join("memory-kept-requests-pin-read-buffers"),
            seed::bytes(&pinned_read_buffers()),
        )
        .unwrap();
        for (name, end) in [("stop", End::Stop), ("client-close", End::Client)] {
            std::fs::write(
                regressions.join(format!("end-unseen-while-waiting-for-budget-{name}")),
                seed::bytes(&unseen_end(end)),
            )
            .unwrap();
        }
        std::fs::write(
            regressions.join("end-unseen-while-writing-to-a-client-not-reading"),
            seed::bytes(&unseen_broker_close()),
        )
        .unwrap();
    }

    /// What each side saw of the first seed: every decision taken as the policy says.
    #[test]
    fn a_session_goes_as_the_policy_says() {
        let (_, script) = seeds().remove(0);
        let world = run(&script, false);
        // 1 trimmed, 2 Produce acks=0, 3 Metadata, 4 refused (unclean), 5 Produce acks=-1.
        assert_eq!(ids(&world.broker_got.borrow(), true), [1, 2, 3, 5]);
        assert_eq!(ids(&world.client_got.borrow(), false), [1, 3, 4, 5]);
    }

    /// A SaslHandshake for a mechanism the guard cannot read a principal from is answered
    /// by the guard (UNSUPPORTED_SASL_MECHANISM) in its turn, never forwarded, and the
    /// checks take that answer as the guard's own.
    #[test]
    fn a_refused_sasl_mechanism_is_answered_by_the_guard() {
        let mut gssapi = 6i16.to_be_bytes().to_vec();
        gssapi.extend(b"GSSAPI");
        let script = script(
            0,
            vec![
                Op::Send(produce(Acks::Leader)),
                Op::Send(Request::Other {
                    api_key: 17,
                    version: 1,
                    body: Body::Bytes(gssapi),
                }),
                Op::Send(produce(Acks::Leader)),
                answer(0),
                answer(0),
            ],
        );
        let world = run(&script, false);
        assert!(world.guard_done.get());
        assert_eq!(ids(&world.broker_got.borrow(), true), [1, 3]);
        assert_eq!(ids(&world.client_got.borrow(), false), [1, 2, 3]);
    }

    /// The bugs of `corpus/regressions/conn/` (the guard at 13de460), fixed in 69867bd
    /// (kept requests pinned read buffers) and 6848fcd (a stop unseen while waiting for the
    /// budget or to write to a client that does not read; a close of the other side unseen
    /// there is now ended by the idle watchdog): their scripts pass the strict checks.
    #[test]
    fn the_bugs_found_stay_fixed() {
        for end in [End::Stop, End::Client] {
            let world = run(&unseen_end(end), false);
            assert!(world.guard_done.get());
        }
        let world = run(&unseen_broker_close(), false);
        assert!(world.guard_done.get());
        let world = run(&pinned_read_buffers(), false);
        assert!(world.guard_done.get());
    }

    /// The same scripts pass the lenient checks.
    #[test]
    fn the_lenient_checks_close_both_sides_after_an_unseen_end() {
        for script in [unseen_end(End::Client), unseen_broker_close()] {
            let world = run(&script, true);
            assert!(world.guard_done.get());
        }
    }

    /// Every seed runs to its end and passes the checks.
    #[test]
    fn seeds_run() {
        for (name, script) in seeds() {
            let world = run(&script, false);
            assert!(world.guard_done.get(), "{name}");
        }
    }

    /// Scripts from arbitrary bytes run, and the guard finishes.
    #[test]
    fn arbitrary_scripts_run() {
        for seed in 0u8..=255 {
            let data: Vec<u8> = (0..512u32)
                .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
                .collect();
            check_conn(&data);
        }
    }
}
