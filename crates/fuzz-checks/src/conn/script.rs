//! The input grammar of the `conn` target: the moves a `Script` is made of, as `arbitrary`
//! reads them from the fuzzer's bytes, and the few sizes a byte of input stands for
//! ([`many`] partitions, a [`large`] body).
//!
//! What a move does is the driver's (`driver`); the bytes a request becomes are `requests`'.

use std::time::Duration;

use arbitrary::Arbitrary;

use super::limits::MAX_FRAME_SIZE;

#[derive(Arbitrary, Debug)]
pub(super) struct Script {
    /// Which policy the guard runs ([`policies`](super::policies)).
    pub(super) policy: u8,
    /// The capacity of each in-memory pipe ([`PIPES`]).
    pub(super) pipe: u8,
    pub(super) finale: Finale,
    pub(super) ops: Vec<Op>,
}

/// Pipe capacities: from one that cuts every frame to one that holds many.
pub(super) const PIPES: [usize; 4] = [512, 4 << 10, 64 << 10, 256 << 10];

#[derive(Arbitrary, Debug)]
pub(super) struct Finale {
    /// Time passes before the end (the guard's own timeouts may fire meanwhile).
    pub(super) linger: Option<Delay>,
    /// The broker answers everything still owed before the end.
    pub(super) answer_all: bool,
    pub(super) end: End,
}

/// What makes the guard finish, in the finale: within an hour of virtual time after it,
/// the guard must have returned.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub(super) enum End {
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
pub(super) enum Op {
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
pub(super) enum Delay {
    Millis(u8),
    Seconds(u8),
    Minutes(u8),
}

impl Delay {
    pub(super) fn duration(self) -> Duration {
        match self {
            Delay::Millis(n) => Duration::from_millis(u64::from(n) + 1),
            Delay::Seconds(n) => Duration::from_secs(u64::from(n) + 1),
            Delay::Minutes(n) => Duration::from_secs(60 * (u64::from(n) + 1)),
        }
    }
}

#[derive(Arbitrary, Debug)]
pub(super) enum Request {
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
pub(super) struct Elect {
    pub(super) version: u8,
    pub(super) client_id: ClientId,
    pub(super) election_type: Election,
    pub(super) topics: Option<Vec<Topic>>,
    pub(super) timeout_ms: u16,
    /// Unknown tagged fields in the header and the body (v2).
    pub(super) tags: bool,
}

#[derive(Arbitrary, Debug)]
pub(super) enum ClientId {
    Null,
    Admin,
    Ops,
    Bytes(Vec<u8>),
    /// A long id, up to Kafka's 32767 bytes.
    Long(u16),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
pub(super) enum Election {
    Preferred,
    Unclean,
    Other(i8),
}

#[derive(Arbitrary, Debug)]
pub(super) struct Topic {
    pub(super) name: TopicName,
    pub(super) partitions: Partitions,
}

/// The policies protect `payments` and `secrets`.
#[derive(Arbitrary, Debug)]
pub(super) enum TopicName {
    Payments,
    Secrets,
    Orders,
    Logs,
    Bytes(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
pub(super) enum Partitions {
    List(Vec<i32>),
    /// Partitions 0 to n-1.
    Count(u8),
    /// About as many partitions as the largest frame holds (15,872 + 4n): a frame just
    /// under or just over the guard's limit, from one byte of input.
    Many(u8),
}

/// About as many partitions as the largest frame holds, from one byte: 15,872 + 4n.
pub(super) fn many(n: u8) -> usize {
    MAX_FRAME_SIZE / 4 - 512 + 4 * usize::from(n)
}

impl Partitions {
    pub(super) fn ids(&self) -> Vec<i32> {
        match self {
            Partitions::List(list) => list.clone(),
            Partitions::Count(n) => (0..i32::from(*n)).collect(),
            Partitions::Many(n) => (0..many(*n) as i32).collect(),
        }
    }
}

#[derive(Arbitrary, Debug)]
pub(super) enum Damage {
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
pub(super) struct Produce {
    /// 3 to 12 (9 and later are flexible).
    pub(super) version: u8,
    pub(super) acks: Acks,
    pub(super) transactional_id: Option<Vec<u8>>,
    pub(super) timeout_ms: u16,
    pub(super) body: Body,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
pub(super) enum Acks {
    None,
    Leader,
    All,
    Other(i16),
}

#[derive(Arbitrary, Debug)]
pub(super) enum Body {
    Bytes(Vec<u8>),
    /// 16 × n filler bytes.
    Filled(u8),
    /// [`large`] filler bytes: a frame just under or just over the guard's limit.
    Large(u8),
}

/// About the largest frame's size, from one byte: `MAX_FRAME_SIZE` - 1024 + 8n. Large
/// frames cost time to build and copy: they take a variant of their own, so that most
/// inputs stay small.
pub(super) fn large(n: u8) -> usize {
    MAX_FRAME_SIZE - 1024 + 8 * usize::from(n)
}
