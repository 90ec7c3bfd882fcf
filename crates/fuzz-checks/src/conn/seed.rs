//! Scripts written as the bytes `arbitrary` reads them back as: the seeds of
//! `corpus/fuzz/conn` are made from scripts written out in Rust (`scripts::write_seeds`).
//!
//! Tests only; the scripts themselves are in `scripts`.

use super::script::{
    Acks, Body, ClientId, Damage, Delay, Elect, Election, End, Op, Partitions, Produce, Request,
    Script, Topic, TopicName,
};

/// The writing side of `Arbitrary`'s derive, by hand; `scripts::seeds_read_back` checks
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
