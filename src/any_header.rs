//! The request header of any Kafka API, read as Kafka's `ApiKeys` lays it out for the key
//! and version: header v0 (ControlledShutdown v0: no client id), v1 (client id) or v2
//! (client id, then tagged fields). For the callers that look past the header of a request
//! they do not decode whole: the capture reader and the guard.

use nom::Parser;

use crate::api_key::ApiKey;
use crate::error::{Error, ErrorKind};
use crate::field::CLIENT_ID as FIELD_CLIENT_ID;
use crate::field::REQUEST_API_KEY as FIELD_API_KEY;
use crate::field::REQUEST_API_VERSION as FIELD_API_VERSION;
use crate::field::REQUEST_CORRELATION_ID as FIELD_CORRELATION_ID;
use crate::field::REQUEST_HEADER_TAGS as FIELD_TAGS;
use crate::frame::parse_prefix;
use crate::tagged::{tagged_fields, TaggedFields};
use crate::wire::{self, Cx};

/// The request header of a request of any API, as [`read_request_header`] reads it, and
/// where the body starts.
///
/// ```text
/// RequestHeader v0 (ControlledShutdown v0), v1, v2 (flexible versions)
///   RequestApiKey      int16
///   RequestApiVersion  int16
///   CorrelationId      int32
///   ClientId           nullable string, int16 length    v1 and v2
///   _tagged_fields                                      v2 only
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AnyRequestHeader<'a> {
    /// `RequestApiKey`: one Kafka defines.
    pub api_key: ApiKey,
    /// `RequestApiVersion`, as sent (not checked against the key's versions).
    pub api_version: i16,
    /// `CorrelationId`, echoed by the response.
    pub correlation_id: i32,
    /// `ClientId`; `None` when null, and in header v0.
    pub client_id: Option<&'a [u8]>,
    /// The header's tagged fields (header v2); empty otherwise.
    pub tagged_fields: TaggedFields<'a>,
    /// The header's version: 0, 1 or 2 ([`ApiKey::request_header_version`]).
    pub header_version: i16,
    /// Where the body starts: the offset, in the frame (size prefix included), of the
    /// first byte after the header.
    pub body_offset: usize,
}

/// Reads the request header of any API from the start of a request frame (size prefix
/// included), laid out as Kafka lays it out for the key and version; returns it with the
/// bytes of the body that follow it in `buf` (up to the frame's end).
///
/// The frame need not be whole: fewer bytes than the header needs, while the frame goes on,
/// is [`ErrorKind::Incomplete`] with the exact number missing. A key Kafka does not define
/// is [`ErrorKind::UnsupportedApiKey`] (its header's layout is unknown); a header that runs
/// past the frame's end is malformed.
///
/// ```
/// use kafka_elect_leaders::{read_request_header, ApiKey};
///
/// // Metadata v12 (flexible: header v2), correlation id 7, client id "c", no tagged field,
/// // then the body.
/// let frame = [0, 0, 0, 14, 0, 3, 0, 12, 0, 0, 0, 7, 0, 1, b'c', 0, 0xaa, 0xbb];
/// let (header, body) = read_request_header(&frame).unwrap();
/// assert_eq!(header.api_key, ApiKey::METADATA);
/// assert_eq!((header.api_version, header.correlation_id), (12, 7));
/// assert_eq!(header.client_id, Some(&b"c"[..]));
/// assert_eq!(header.header_version, 2);
/// assert_eq!(body, [0xaa, 0xbb]);
/// // Cut inside the client id: one more byte is needed.
/// assert_eq!(read_request_header(&frame[..14]).unwrap_err().needed(), Some(1));
/// ```
pub fn read_request_header(buf: &[u8]) -> Result<(AnyRequestHeader<'_>, &[u8]), Error> {
    parse_prefix(buf, |end, input| {
        let (rest, header) = read_header(end, input)?;
        Ok((rest, (header, rest)))
    })
}

/// Reads the header at the start of `input`, the bytes after the size prefix of a frame
/// whose given bytes end at `end`.
pub(crate) fn read_header(end: usize, input: &[u8]) -> wire::PResult<'_, AnyRequestHeader<'_>> {
    let cx = Cx {
        end,
        flexible: false,
    };
    let (rest, key) = wire::int16(cx, FIELD_API_KEY).parse(input)?;
    let (rest, api_version) = wire::int16(cx, FIELD_API_VERSION).parse(rest)?;
    let api_key = ApiKey(key);
    let Some(header_version) = api_key.request_header_version(api_version) else {
        return Err(cx.error(ErrorKind::UnsupportedApiKey(key), FIELD_API_KEY, input));
    };
    let (rest, correlation_id) = wire::int32(cx, FIELD_CORRELATION_ID).parse(rest)?;
    let (rest, client_id) = if header_version >= 1 {
        // ClientId keeps its int16 length even in the flexible header v2.
        wire::string(cx, true, FIELD_CLIENT_ID).parse(rest)?
    } else {
        (rest, None)
    };
    let tags = Cx {
        flexible: header_version >= 2,
        ..cx
    };
    let (rest, tagged_fields) = tagged_fields(tags, FIELD_TAGS).parse(rest)?;
    let header = AnyRequestHeader {
        api_key,
        api_version,
        correlation_id,
        client_id,
        tagged_fields,
        header_version,
        body_offset: cx.offset(rest),
    };
    Ok((rest, header))
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use std::vec::Vec;

    /// A request frame: size prefix, key, version, correlation id 9, then `rest`.
    fn frame(key: i16, version: i16, rest: &[u8]) -> Vec<u8> {
        let mut f = Vec::new();
        f.extend(u32::try_from(8 + rest.len()).unwrap().to_be_bytes());
        f.extend(key.to_be_bytes());
        f.extend(version.to_be_bytes());
        f.extend(9i32.to_be_bytes());
        f.extend(rest);
        f
    }

    #[test]
    fn header_v1_has_a_client_id_and_no_tagged_fields() {
        // Produce v8: header v1; a tagged-field count would be read as body.
        let f = frame(0, 8, &[0xff, 0xff, 0, 1]);
        let (h, body) = read_request_header(&f).unwrap();
        assert_eq!(
            (h.api_key, h.api_version, h.correlation_id),
            (ApiKey::PRODUCE, 8, 9)
        );
        assert_eq!((h.client_id, h.header_version), (None, 1));
        assert!(h.tagged_fields.is_empty());
        assert_eq!(h.body_offset, 14);
        assert_eq!(body, [0, 1]);
    }

    #[test]
    fn header_v2_has_tagged_fields() {
        // Produce v9: header v2, client id "ab", one tagged field (tag 1, 2 bytes).
        let f = frame(0, 9, &[0, 2, b'a', b'b', 1, 1, 2, 0xaa, 0xbb, 0x07]);
        let (h, body) = read_request_header(&f).unwrap();
        assert_eq!((h.client_id, h.header_version), (Some(&b"ab"[..]), 2));
        let tags: Vec<_> = h
            .tagged_fields
            .iter()
            .map(|t| (t.tag(), t.data()))
            .collect();
        assert_eq!(tags, [(1, &[0xaa, 0xbb][..])]);
        assert_eq!(body, [0x07]);
    }

    #[test]
    fn controlled_shutdown_v0_has_header_v0() {
        let f = frame(7, 0, &[0, 0, 0, 1]);
        let (h, body) = read_request_header(&f).unwrap();
        assert_eq!((h.header_version, h.client_id), (0, None));
        assert_eq!(body, [0, 0, 0, 1]);
        let f = frame(7, 1, &[0, 0]);
        let (h, _) = read_request_header(&f).unwrap();
        assert_eq!(h.header_version, 1);
    }

    #[test]
    fn unknown_keys_and_short_headers() {
        let e = read_request_header(&frame(1000, 0, &[0, 0])).unwrap_err();
        assert_eq!((e.kind, e.offset), (ErrorKind::UnsupportedApiKey(1000), 4));
        let e = read_request_header(&frame(-1, 0, &[0, 0])).unwrap_err();
        assert_eq!(e.kind, ErrorKind::UnsupportedApiKey(-1));
        // A client id longer than the whole frame: malformed, not "read more".
        let f = frame(3, 1, &[0, 5, b'a']);
        let e = read_request_header(&f).unwrap_err();
        assert_eq!(e.kind, ErrorKind::UnexpectedEnd { needed: 4 });
        // The same header cut by the buffer, the frame going on: read more.
        let f = frame(3, 1, &[0, 5, b'a', b'b', b'c', b'd', b'e', 0]);
        for cut in 0..f.len() - 1 {
            let e = read_request_header(&f[..cut]).unwrap_err();
            assert!(e.is_incomplete(), "cut at {cut}: {e:?}");
        }
        assert_eq!(read_request_header(&f[..15]).unwrap_err().needed(), Some(4));
    }
}
