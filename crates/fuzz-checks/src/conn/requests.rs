//! The frames the client's requests become: each `Request` of a script written out with
//! its correlation id (ElectLeaders by the codec's own writer, the other APIs by hand, as
//! far as the guard reads them), damaged where the script says so; and a Produce's acks,
//! read back as Kafka's broker reads them, for the fake broker to know which requests it
//! owes an answer.
//!
//! Not the grammar (`script`), nor the broker's answers (`driver`).

use kafka_elect_leaders::{
    nth_version, ElectLeadersRequestData, ElectionType, EncodeRequestExt, TaggedFieldData,
    TopicPartitionsData, API_KEY, SIZE_PREFIX_LEN,
};

use super::script::{
    large, many, Acks, Body, ClientId, Damage, Elect, Election, Partitions, Produce, Request,
    TopicName,
};

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
pub(super) fn put_string(out: &mut Vec<u8>, s: Option<&[u8]>) {
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
pub(super) fn header(
    api_key: i16,
    version: i16,
    id: i32,
    client_id: &[u8],
    flexible: bool,
) -> Vec<u8> {
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
pub(super) fn seal(mut frame: Vec<u8>) -> Vec<u8> {
    let size = (frame.len() - SIZE_PREFIX_LEN) as u32;
    frame[..SIZE_PREFIX_LEN].copy_from_slice(&size.to_be_bytes());
    frame
}

impl Request {
    /// The partitions an ElectLeaders request names (damaged or not).
    pub(super) fn partitions(&self) -> usize {
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
    pub(super) fn frame(&self, id: i32) -> Option<Vec<u8>> {
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
    pub(super) fn frame(&self, id: i32) -> Vec<u8> {
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
pub(super) fn produce_acks(frame: &[u8]) -> Option<i16> {
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
