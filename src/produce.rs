//! Which requests Kafka never answers: a Produce with `acks` 0. Its broker sends nothing
//! back (on an error it closes the connection instead) and its client expects nothing, so
//! whoever pairs requests with responses (the capture reader, the guard) must not wait.
//! Only the first fields of the Produce body are read; the records are never looked at.

use nom::Parser;

use crate::any_header::read_header;
use crate::api_key::ApiKey;
use crate::error::{Error, ErrorKind};
use crate::frame::parse_prefix;
use crate::wire::{self, Cx};

const FIELD_TRANSACTIONAL_ID: &str = "ProduceRequest.TransactionalId";
const FIELD_ACKS: &str = "ProduceRequest.Acks";
const FIELD_TIMEOUT_MS: &str = "ProduceRequest.TimeoutMs";

/// The first Produce version with a `TransactionalId` before `Acks`.
const TRANSACTIONAL_ID_SINCE: i16 = 3;

/// The first fields of a Produce request, as [`peek_produce`] reads them.
///
/// ```text
/// ProduceRequest (after the request header: v1, v2 from the first flexible version)
///   TransactionalId  nullable string (compact when flexible)   v3+
///   Acks             int16   0: no answer; 1: the leader's; -1: every in-sync replica's
///   TimeoutMs        int32
///   ...              the records, not read
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProducePeek<'a> {
    /// `TransactionalId` (from v3; `None` before, and when null).
    pub transactional_id: Option<&'a [u8]>,
    /// `Acks`: 0 asks for no answer at all.
    pub acks: i16,
    /// `TimeoutMs`: how long the broker may wait for the acknowledgements.
    pub timeout_ms: i32,
}

/// Reads `TransactionalId`, `Acks` and `TimeoutMs` from the start of a Produce request
/// frame (size prefix included); the frame need not be whole. Another API's request is
/// [`ErrorKind::UnsupportedApiKey`]; a prefix that stops before `TimeoutMs`, the frame
/// going on, is [`ErrorKind::Incomplete`].
///
/// ```
/// use kafka_elect_leaders::{never_answered, peek_produce};
///
/// // Produce v8 (header v1), correlation id 1, null client id, null transactional id,
/// // acks 0, timeout 1500 ms, then the records (left out here).
/// let mut frame = vec![0, 0, 0, 18, 0, 0, 0, 8, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff];
/// frame.extend(0i16.to_be_bytes());
/// frame.extend(1500i32.to_be_bytes());
/// let produce = peek_produce(&frame).unwrap();
/// assert_eq!((produce.transactional_id, produce.acks, produce.timeout_ms), (None, 0, 1500));
/// assert!(never_answered(&frame));
/// ```
pub fn peek_produce(buf: &[u8]) -> Result<ProducePeek<'_>, Error> {
    parse_prefix(buf, |end, input| {
        let (rest, header) = read_header(end, input)?;
        let cx = Cx {
            end,
            flexible: header.header_version >= 2,
        };
        if header.api_key != ApiKey::PRODUCE {
            let key = header.api_key.0;
            return Err(cx.error(ErrorKind::UnsupportedApiKey(key), FIELD_ACKS, rest));
        }
        let (rest, transactional_id) = if header.api_version >= TRANSACTIONAL_ID_SINCE {
            wire::string(cx, true, FIELD_TRANSACTIONAL_ID).parse(rest)?
        } else {
            (rest, None)
        };
        let (rest, acks) = wire::int16(cx, FIELD_ACKS).parse(rest)?;
        let (rest, timeout_ms) = wire::int32(cx, FIELD_TIMEOUT_MS).parse(rest)?;
        let produce = ProducePeek {
            transactional_id,
            acks,
            timeout_ms,
        };
        Ok((rest, produce))
    })
}

/// Whether Kafka never answers the request that `buf` starts (size prefix included): a
/// Produce with `acks` 0. Anything that cannot be read as one (another API, a frame that
/// ends before `Acks` or is malformed) is taken as answered: the broker answers or refuses
/// it, and a response that never comes is then reported as missing rather than silently
/// expected.
pub fn never_answered(buf: &[u8]) -> bool {
    peek_produce(buf).is_ok_and(|produce| produce.acks == 0)
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use std::vec::Vec;

    /// A Produce request of `version`: client id "c", one header tagged field when the
    /// version is flexible, the transactional id from v3, `acks`, timeout 1500, records.
    fn produce(version: i16, transactional_id: Option<&[u8]>, acks: i16) -> Vec<u8> {
        let flexible = ApiKey::PRODUCE.is_flexible(version).unwrap();
        let mut f = std::vec![0; 4];
        f.extend(ApiKey::PRODUCE.0.to_be_bytes());
        f.extend(version.to_be_bytes());
        f.extend(7i32.to_be_bytes());
        f.extend(1i16.to_be_bytes());
        f.push(b'c');
        if flexible {
            f.extend([1, 0, 2, 0xaa, 0xbb]);
        }
        if version >= TRANSACTIONAL_ID_SINCE {
            match (flexible, transactional_id) {
                (false, None) => f.extend((-1i16).to_be_bytes()),
                (false, Some(id)) => {
                    f.extend(i16::try_from(id.len()).unwrap().to_be_bytes());
                    f.extend(id);
                }
                (true, None) => f.push(0),
                (true, Some(id)) => {
                    f.push(u8::try_from(id.len() + 1).unwrap());
                    f.extend(id);
                }
            }
        }
        f.extend(acks.to_be_bytes());
        f.extend(1500i32.to_be_bytes());
        f.extend([0xde, 0xad]); // the records
        let size = u32::try_from(f.len() - 4).unwrap();
        f[..4].copy_from_slice(&size.to_be_bytes());
        f
    }

    #[test]
    fn acks_zero_is_never_answered_at_every_layout() {
        // Classic before and after the transactional id, flexible (header v2).
        for version in [2, 3, 8, 9, 13] {
            for id in [None, Some(&b"tx-1"[..])] {
                for acks in [0i16, 1, -1] {
                    let f = produce(version, id, acks);
                    let p = peek_produce(&f).unwrap();
                    let id = if version >= TRANSACTIONAL_ID_SINCE {
                        id
                    } else {
                        None
                    };
                    assert_eq!((p.transactional_id, p.acks, p.timeout_ms), (id, acks, 1500));
                    assert_eq!(never_answered(&f), acks == 0, "v{version} {id:?} {acks}");
                }
            }
        }
    }

    #[test]
    fn what_cannot_be_read_is_answered() {
        let f = produce(9, Some(b"tx"), 0);
        // Cut before the end of Acks: read more, and not (yet) "never answered".
        let acks_end = f.len() - 2 - 4;
        for cut in 0..acks_end {
            assert!(!never_answered(&f[..cut]), "cut at {cut}");
        }
        assert!(peek_produce(&f[..acks_end - 1])
            .unwrap_err()
            .is_incomplete());
        assert!(never_answered(&f[..acks_end + 4]));
        // Another API with the same bytes after its header.
        let mut metadata = f.clone();
        metadata[4..6].copy_from_slice(&ApiKey::METADATA.0.to_be_bytes());
        assert!(!never_answered(&metadata));
        let e = peek_produce(&metadata).unwrap_err();
        assert_eq!(e.kind, ErrorKind::UnsupportedApiKey(3));
        // A frame that ends inside the transactional id: malformed, answered.
        let mut short = produce(8, Some(b"tx"), 0);
        short.truncate(4 + 8 + 3 + 2);
        let size = u32::try_from(short.len() - 4).unwrap();
        short[..4].copy_from_slice(&size.to_be_bytes());
        assert!(!never_answered(&short));
        assert!(!peek_produce(&short).unwrap_err().is_incomplete());
    }
}
