//! What the broker owes a forwarded request: an answer or none, and how long the request
//! itself lets the broker wait before answering.
//!
//! Two facts decide how the guard waits for an answer, and both are in the request:
//!
//! - A `Produce` with `acks=0` is never answered: Kafka's broker sends nothing back (on an
//!   error it closes the connection instead), and Kafka's client expects nothing. The guard
//!   keeps no place for it in the order of answers, so the answers queued behind it are not
//!   held up and no request timeout runs for it.
//! - Some requests ask the broker to hold them: ElectLeaders' and Produce's `timeout_ms`,
//!   Fetch's `max_wait_ms`, JoinGroup's rebalance timeout (the session timeout at v0). The
//!   guard's request timeout starts after that wait, as Kafka's clients add it to theirs.
//!
//! Only these few fields are read, right after the request header: a `Produce` is on the
//! hot path of every producer and the rest of it (the records) is never looked at; decoding
//! the whole request with a general Kafka library would allocate for every topic for one
//! field. The header and a Produce's acks are the codec's reading (shared with the capture
//! reader); Fetch's and JoinGroup's waits are read here. Whatever cannot be read is taken as
//! "an answer is owed, no extra wait": the broker will refuse such a request, and answer it.

use std::time::Duration;

use kafka_elect_leaders::{peek_produce, read_request_header, ApiKey};

/// What the broker owes one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponseDue {
    /// False only for a `Produce` with `acks=0`.
    pub answer: bool,
    /// How long the request lets the broker wait before it answers.
    pub wait: Duration,
}

impl Default for ResponseDue {
    fn default() -> ResponseDue {
        ResponseDue {
            answer: true,
            wait: Duration::ZERO,
        }
    }
}

/// What the broker owes the request in `frame` (size prefix included), whose header says
/// `api_key` and `api_version`. For ElectLeaders, whose body the guard parses anyway, pass
/// its `timeout_ms` as `elect_timeout_ms`. The header, and a Produce's acks, are read by the
/// codec ([`read_request_header`], [`peek_produce`]): the capture reader reads them there
/// too.
pub fn response_due(
    frame: &[u8],
    api_key: i16,
    api_version: i16,
    elect_timeout_ms: i32,
) -> ResponseDue {
    match ApiKey(api_key) {
        ApiKey::ELECT_LEADERS => ResponseDue {
            answer: true,
            wait: millis(elect_timeout_ms),
        },
        ApiKey::PRODUCE => match peek_produce(frame) {
            Ok(produce) => ResponseDue {
                answer: produce.acks != 0,
                wait: millis(produce.timeout_ms),
            },
            Err(_) => ResponseDue::default(),
        },
        key @ (ApiKey::FETCH | ApiKey::JOIN_GROUP) => {
            let Ok((header, body)) = read_request_header(frame) else {
                return ResponseDue::default();
            };
            let flexible = header.header_version >= 2;
            let read = |r: &mut Reader<'_>| -> Option<Duration> {
                if key == ApiKey::FETCH {
                    if api_version < 15 {
                        r.skip(4)?; // replica_id, moved into a tagged field at v15
                    }
                    return Some(millis(r.int32()?));
                }
                r.skip_body_string(flexible)?; // group_id
                let session_timeout_ms = r.int32()?;
                let rebalance_timeout_ms = if api_version >= 1 {
                    r.int32()?
                } else {
                    session_timeout_ms
                };
                Some(millis(rebalance_timeout_ms))
            };
            read(&mut Reader::new(body)).map_or_else(ResponseDue::default, |wait| ResponseDue {
                answer: true,
                wait,
            })
        }
        _ => ResponseDue::default(),
    }
}

/// A wait in milliseconds as sent; negative ones wait for nothing.
pub(crate) fn millis(ms: i32) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// Reads the few fields needed, failing (None) at the end of the bytes.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf }
    }

    /// Bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len()
    }

    /// The next `n` bytes.
    pub(crate) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (self.buf.get(..n)?, self.buf.get(n..)?);
        self.buf = rest;
        Some(head)
    }

    pub(crate) fn skip(&mut self, n: usize) -> Option<()> {
        self.buf = self.buf.get(n..)?;
        Some(())
    }

    fn bytes<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.buf.split_first_chunk::<N>()?;
        self.buf = rest;
        Some(*head)
    }

    pub(crate) fn int16(&mut self) -> Option<i16> {
        self.bytes().map(i16::from_be_bytes)
    }

    pub(crate) fn int32(&mut self) -> Option<i32> {
        self.bytes().map(i32::from_be_bytes)
    }

    pub(crate) fn uvarint(&mut self) -> Option<u32> {
        let mut value = 0u32;
        for shift in (0..35).step_by(7) {
            let [byte] = self.bytes::<1>()?;
            value |= u32::from(byte & 0x7f).checked_shl(shift)?;
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }

    /// A nullable string with an int16 length (-1: null).
    pub(crate) fn skip_string(&mut self) -> Option<()> {
        let len = self.int16()?;
        self.skip(usize::try_from(len).unwrap_or(0))
    }

    /// A nullable string of a request body: compact (uvarint length + 1) when flexible.
    fn skip_body_string(&mut self, flexible: bool) -> Option<()> {
        if !flexible {
            return self.skip_string();
        }
        let len_plus_one = self.uvarint()?;
        self.skip(usize::try_from(len_plus_one.saturating_sub(1)).ok()?)
    }

    pub(crate) fn skip_tagged_fields(&mut self) -> Option<()> {
        for _ in 0..self.uvarint()? {
            self.uvarint()?; // tag
            let size = self.uvarint()?;
            self.skip(usize::try_from(size).ok()?)?;
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRODUCE: i16 = ApiKey::PRODUCE.0;
    const FETCH: i16 = ApiKey::FETCH.0;
    const JOIN_GROUP: i16 = ApiKey::JOIN_GROUP.0;
    const ELECT_LEADERS: i16 = ApiKey::ELECT_LEADERS.0;

    /// A request frame: size prefix, header (client id "c", tagged fields when flexible),
    /// then `body`.
    fn frame(api_key: i16, api_version: i16, flexible: bool, body: &[u8]) -> Vec<u8> {
        let mut f = vec![0; 4];
        f.extend(api_key.to_be_bytes());
        f.extend(api_version.to_be_bytes());
        f.extend(7i32.to_be_bytes());
        f.extend(1i16.to_be_bytes());
        f.push(b'c');
        if flexible {
            // One tagged field, to be skipped.
            f.extend([1, 0, 2, 0xaa, 0xbb]);
        }
        f.extend(body);
        let size = u32::try_from(f.len() - 4).unwrap();
        f[..4].copy_from_slice(&size.to_be_bytes());
        f
    }

    fn produce_body(flexible: bool, transactional_id: Option<&[u8]>, acks: i16) -> Vec<u8> {
        let mut b = Vec::new();
        match (flexible, transactional_id) {
            (false, None) => b.extend((-1i16).to_be_bytes()),
            (false, Some(id)) => {
                b.extend(i16::try_from(id.len()).unwrap().to_be_bytes());
                b.extend(id);
            }
            (true, None) => b.push(0),
            (true, Some(id)) => {
                b.push(u8::try_from(id.len() + 1).unwrap());
                b.extend(id);
            }
        }
        b.extend(acks.to_be_bytes());
        b.extend(1500i32.to_be_bytes());
        b
    }

    #[test]
    fn produce_with_acks_zero_owes_no_answer() {
        for (version, flexible) in [(3, false), (8, false), (9, true), (12, true)] {
            for id in [None, Some(&b"tx-1"[..])] {
                for acks in [0i16, 1, -1] {
                    let f = frame(
                        PRODUCE,
                        version,
                        flexible,
                        &produce_body(flexible, id, acks),
                    );
                    let due = response_due(&f, PRODUCE, version, 0);
                    assert_eq!(due.answer, acks != 0, "v{version} {id:?} acks={acks}");
                    assert_eq!(due.wait, Duration::from_millis(1500));
                }
            }
        }
        // Before v3 there is no transactional id: acks come first.
        let mut old = 0i16.to_be_bytes().to_vec();
        old.extend(100i32.to_be_bytes());
        assert!(!response_due(&frame(PRODUCE, 2, false, &old), PRODUCE, 2, 0).answer);
    }

    #[test]
    fn waits_the_request_asks_for() {
        let mut fetch = 5i32.to_be_bytes().to_vec(); // replica id
        fetch.extend(500i32.to_be_bytes());
        let f = frame(FETCH, 11, false, &fetch);
        assert_eq!(
            response_due(&f, FETCH, 11, 0).wait,
            Duration::from_millis(500)
        );
        let f = frame(FETCH, 15, true, &700i32.to_be_bytes());
        assert_eq!(
            response_due(&f, FETCH, 15, 0).wait,
            Duration::from_millis(700)
        );

        let mut join = vec![0, 1, b'g'];
        join.extend(10_000i32.to_be_bytes());
        join.extend(300_000i32.to_be_bytes());
        let f = frame(JOIN_GROUP, 5, false, &join);
        assert_eq!(
            response_due(&f, JOIN_GROUP, 5, 0).wait,
            Duration::from_secs(300)
        );
        let f = frame(JOIN_GROUP, 0, false, &join[..7]);
        assert_eq!(
            response_due(&f, JOIN_GROUP, 0, 0).wait,
            Duration::from_secs(10)
        );
        let mut compact = vec![2, b'g'];
        compact.extend(&join[3..]);
        let f = frame(JOIN_GROUP, 6, true, &compact);
        assert_eq!(
            response_due(&f, JOIN_GROUP, 6, 0).wait,
            Duration::from_secs(300)
        );

        assert_eq!(
            response_due(&[], ELECT_LEADERS, 2, 60_000).wait,
            Duration::from_secs(60)
        );
        assert_eq!(response_due(&[], ELECT_LEADERS, 2, -5).wait, Duration::ZERO);
    }

    #[test]
    fn what_cannot_be_read_owes_an_answer_without_extra_wait() {
        let f = frame(PRODUCE, 9, true, &produce_body(true, None, 0));
        for cut in 0..f.len() {
            assert_eq!(
                response_due(&f[..cut], PRODUCE, 9, 0),
                ResponseDue::default(),
                "cut at {cut}"
            );
        }
        // Other APIs: nothing is read.
        assert_eq!(response_due(&f, 3, 12, 0), ResponseDue::default());
        // A huge tagged field count or varint does not loop or overflow.
        let mut bad = frame(PRODUCE, 9, false, &[]);
        bad.extend([0xff; 8]);
        assert_eq!(response_due(&bad, PRODUCE, 9, 0), ResponseDue::default());
    }
}
