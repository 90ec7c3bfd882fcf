//! Request header v1/v2 and response header v0/v1, as views.

use core::fmt;
use core::ops::Range;

use nom::Parser;

use crate::error::ErrorKind;
use crate::tagged::{tagged_fields, TaggedFields};
use crate::version;
use crate::wire::{self, Cx, PResult};

use crate::field::CLIENT_ID as FIELD_CLIENT_ID;
pub(crate) use crate::field::REQUEST_API_KEY as FIELD_API_KEY;
pub(crate) use crate::field::REQUEST_API_VERSION as FIELD_API_VERSION;
pub(crate) use crate::field::REQUEST_CORRELATION_ID as FIELD_CORRELATION_ID;
use crate::field::REQUEST_HEADER_TAGS as FIELD_REQUEST_TAGS;
pub(crate) use crate::field::RESPONSE_CORRELATION_ID as FIELD_RESPONSE_CORRELATION_ID;
use crate::field::RESPONSE_HEADER_TAGS as FIELD_RESPONSE_TAGS;

/// The request header of an ElectLeaders request.
///
/// ```text
/// RequestHeader v1 (ElectLeaders v0-1), v2 (ElectLeaders v2)
///   RequestApiKey      int16
///   RequestApiVersion  int16
///   CorrelationId      int32
///   ClientId           nullable string, int16 length in every version
///   _tagged_fields     v2 only
/// ```
#[derive(Clone, Copy)]
pub struct RequestHeader<'a> {
    api_key: i16,
    api_version: i16,
    correlation_id: i32,
    client_id: Option<&'a [u8]>,
    tagged_fields: TaggedFields<'a>,
    start: usize,
    end: usize,
}

impl<'a> RequestHeader<'a> {
    /// `RequestApiKey`: always 43 (ElectLeaders) in a parsed request.
    pub const fn api_key(&self) -> i16 {
        self.api_key
    }

    /// `RequestApiVersion`: the ElectLeaders version, 0 to 2.
    pub const fn api_version(&self) -> i16 {
        self.api_version
    }

    /// The header's own version: 1 for ElectLeaders v0-1, 2 for v2.
    pub const fn header_version(&self) -> i16 {
        version::request_header_version(self.api_version)
    }

    /// `CorrelationId`: echoed back by the response.
    pub const fn correlation_id(&self) -> i32 {
        self.correlation_id
    }

    /// `ClientId`: the client's name, `None` when null.
    pub const fn client_id(&self) -> Option<&'a [u8]> {
        self.client_id
    }

    /// `ClientId` as UTF-8, checked now; `Ok(None)` when null.
    #[inline]
    pub fn client_id_str(&self) -> Result<Option<&'a str>, core::str::Utf8Error> {
        crate::wire::utf8_opt(self.client_id)
    }

    /// Unknown tagged fields of the header (header v2); empty in header v1.
    pub const fn tagged_fields(&self) -> TaggedFields<'a> {
        self.tagged_fields
    }

    /// Where the header lies in the frame.
    pub const fn range(&self) -> Range<usize> {
        self.start..self.end
    }

    /// Where `RequestApiKey` lies in the frame (2 bytes).
    pub const fn api_key_range(&self) -> Range<usize> {
        self.start..self.start + 2
    }

    /// Where `RequestApiVersion` lies in the frame (2 bytes).
    pub const fn api_version_range(&self) -> Range<usize> {
        self.start + 2..self.start + 4
    }

    /// Where `CorrelationId` lies in the frame (4 bytes).
    pub const fn correlation_id_range(&self) -> Range<usize> {
        self.start + 4..self.start + 8
    }

    /// Where `ClientId` lies in the frame, its int16 length included (2 bytes when null).
    pub const fn client_id_range(&self) -> Range<usize> {
        self.start + 8..self.tagged_fields.range().start
    }

    /// Reads an ElectLeaders request header: refuses another API key or a version outside
    /// 0-2, and returns the header with `cx` set for the body's version.
    #[inline(always)]
    pub(crate) fn parse(end: usize, input: &'a [u8]) -> PResult<'a, (Self, Cx)> {
        let classic = Cx {
            end,
            flexible: false,
        };
        let start = classic.offset(input);
        let (rest, api_key) = wire::int16(classic, FIELD_API_KEY).parse(input)?;
        if api_key != version::API_KEY {
            return Err(classic.error(ErrorKind::UnsupportedApiKey(api_key), FIELD_API_KEY, input));
        }
        let at_version = rest;
        let (rest, api_version) = wire::int16(classic, FIELD_API_VERSION).parse(rest)?;
        version::check(api_version, FIELD_API_VERSION, classic.offset(at_version))
            .map_err(nom::Err::Failure)?;
        let (rest, correlation_id) = wire::int32(classic, FIELD_CORRELATION_ID).parse(rest)?;
        // ClientId keeps its int16 length even in the flexible header v2.
        let (rest, client_id) = wire::string(classic, true, FIELD_CLIENT_ID).parse(rest)?;
        let cx = Cx {
            end,
            flexible: version::is_flexible(api_version),
        };
        let (rest, tagged_fields) = tagged_fields(cx, FIELD_REQUEST_TAGS).parse(rest)?;
        let header = RequestHeader {
            api_key,
            api_version,
            correlation_id,
            client_id,
            tagged_fields,
            start,
            end: cx.offset(rest),
        };
        Ok((rest, (header, cx)))
    }
}

/// Compares values, not positions.
impl PartialEq for RequestHeader<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.api_key == other.api_key
            && self.api_version == other.api_version
            && self.correlation_id == other.correlation_id
            && self.client_id == other.client_id
            && self.tagged_fields == other.tagged_fields
    }
}

impl fmt::Debug for RequestHeader<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestHeader")
            .field("api_key", &self.api_key)
            .field("api_version", &self.api_version)
            .field("correlation_id", &self.correlation_id)
            .field("client_id", &crate::debug::OptBytes(self.client_id))
            .field("tagged_fields", &self.tagged_fields)
            .finish()
    }
}

/// The response header of an ElectLeaders response.
///
/// ```text
/// ResponseHeader v0 (ElectLeaders v0-1), v1 (ElectLeaders v2)
///   CorrelationId      int32
///   _tagged_fields     v1 only
/// ```
#[derive(Clone, Copy)]
pub struct ResponseHeader<'a> {
    correlation_id: i32,
    tagged_fields: TaggedFields<'a>,
    start: usize,
    end: usize,
}

impl<'a> ResponseHeader<'a> {
    /// `CorrelationId`: the request's, echoed.
    pub const fn correlation_id(&self) -> i32 {
        self.correlation_id
    }

    /// Unknown tagged fields of the header (header v1); empty in header v0.
    pub const fn tagged_fields(&self) -> TaggedFields<'a> {
        self.tagged_fields
    }

    /// Where the header lies in the frame.
    pub const fn range(&self) -> Range<usize> {
        self.start..self.end
    }

    /// Where `CorrelationId` lies in the frame (4 bytes).
    pub const fn correlation_id_range(&self) -> Range<usize> {
        self.start..self.start + 4
    }

    #[inline(always)]
    pub(crate) fn parse(cx: Cx, input: &'a [u8]) -> PResult<'a, Self> {
        let start = cx.offset(input);
        let (rest, correlation_id) = wire::int32(cx, FIELD_RESPONSE_CORRELATION_ID).parse(input)?;
        let (rest, tagged_fields) = tagged_fields(cx, FIELD_RESPONSE_TAGS).parse(rest)?;
        let header = ResponseHeader {
            correlation_id,
            tagged_fields,
            start,
            end: cx.offset(rest),
        };
        Ok((rest, header))
    }
}

/// Compares values, not positions.
impl PartialEq for ResponseHeader<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.correlation_id == other.correlation_id && self.tagged_fields == other.tagged_fields
    }
}

impl fmt::Debug for ResponseHeader<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseHeader")
            .field("correlation_id", &self.correlation_id)
            .field("tagged_fields", &self.tagged_fields)
            .finish()
    }
}
