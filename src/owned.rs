//! Owned frames: the bytes of a frame checked once, kept with it, and parsed into a view
//! again on demand; `Send + 'static` when the storage is, so they can be held across an
//! `.await` or sent to another task.
//!
//! A view borrows its frame, and this crate has no unsafe code, so an owned frame does not
//! keep a view of its own bytes (that would be a self-referential struct). It keeps only
//! the bytes, in a storage type whose bytes cannot change ([`FrameStorage`]), and the few
//! header values worth having for free. [`view`](OwnedRequest::view) runs the parser again:
//! O(topics), no allocation, and it cannot fail, because the same parser accepted the same
//! bytes when the owned frame was made.

use core::fmt;

use crate::error::Error;
use crate::request::{parse_request, ElectLeadersRequest};
use crate::response::{parse_response, ElectLeadersResponse};

mod sealed {
    pub trait Sealed {}
}

/// Bytes an owned frame can keep: storage whose bytes cannot change while it is shared, so
/// that bytes checked once stay valid.
///
/// Implemented for `&'static [u8]`; with `std` for `Vec<u8>`, `Box<[u8]>` and
/// `Arc<[u8]>`; with `bytes` for `bytes::Bytes` and `bytes::BytesMut`. Sealed: a type
/// whose `as_ref` could give other bytes on a second call would break
/// [`OwnedRequest::view`]'s promise.
pub trait FrameStorage: AsRef<[u8]> + sealed::Sealed {}

impl sealed::Sealed for &'static [u8] {}
impl FrameStorage for &'static [u8] {}

#[cfg(feature = "std")]
mod std_storage {
    use std::boxed::Box;
    use std::sync::Arc;
    use std::vec::Vec;

    impl super::sealed::Sealed for Vec<u8> {}
    #[cfg_attr(docsrs, doc(cfg(feature = "std")))]
    impl super::FrameStorage for Vec<u8> {}
    impl super::sealed::Sealed for Box<[u8]> {}
    #[cfg_attr(docsrs, doc(cfg(feature = "std")))]
    impl super::FrameStorage for Box<[u8]> {}
    impl super::sealed::Sealed for Arc<[u8]> {}
    #[cfg_attr(docsrs, doc(cfg(feature = "std")))]
    impl super::FrameStorage for Arc<[u8]> {}
}

#[cfg(feature = "bytes")]
mod bytes_storage {
    use bytes::{Bytes, BytesMut};

    impl super::sealed::Sealed for Bytes {}
    #[cfg_attr(docsrs, doc(cfg(feature = "bytes")))]
    impl super::FrameStorage for Bytes {}
    impl super::sealed::Sealed for BytesMut {}
    #[cfg_attr(docsrs, doc(cfg(feature = "bytes")))]
    impl super::FrameStorage for BytesMut {}
}

/// A frame that did not parse, given back with the error, as `String::from_utf8` gives
/// back its bytes: a proxy may still forward them, or log them.
#[derive(Clone)]
pub struct OwnedParseError<B> {
    error: Error,
    bytes: B,
}

impl<B> OwnedParseError<B> {
    /// Why the frame did not parse.
    pub fn error(&self) -> Error {
        self.error
    }

    /// The bytes, as they were given.
    pub fn into_bytes(self) -> B {
        self.bytes
    }
}

/// The error and the frame's length; not the bytes, which may be large.
impl<B: AsRef<[u8]>> fmt::Debug for OwnedParseError<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedParseError")
            .field("error", &self.error)
            .field("len", &self.bytes.as_ref().len())
            .finish()
    }
}

impl<B> fmt::Display for OwnedParseError<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
impl<B: AsRef<[u8]>> std::error::Error for OwnedParseError<B> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// An ElectLeaders request that owns its frame: `Send + Sync + 'static` when `B` is
/// (`Bytes`, `Vec<u8>`, ...), so it can be held across an `.await`.
///
/// Made by [`new`](Self::new), which parses the frame once and refuses it if it is
/// malformed. [`view`](Self::view) hands out the parsed view, by parsing again: O(topics)
/// (partition arrays are bounds-checked, not walked), no allocation, infallible. The
/// version and correlation id are kept aside and cost nothing.
///
/// ```
/// use kafka_elect_leaders::OwnedRequest;
///
/// let frame: Vec<u8> = std::fs::read("corpus/request-v2-multi.bin").unwrap();
/// let request = OwnedRequest::new(frame).unwrap();
/// let held = std::thread::spawn(move || request).join().unwrap();
/// assert_eq!((held.version(), held.correlation_id()), (2, 16));
/// assert_eq!(held.view().topic_partitions().unwrap().len(), 5);
/// let _bytes: Vec<u8> = held.into_bytes();
///
/// let error = OwnedRequest::new(vec![0, 0, 0, 1, 0]).unwrap_err();
/// assert_eq!(error.error().field, "RequestHeader.RequestApiKey");
/// assert_eq!(error.into_bytes(), [0, 0, 0, 1, 0]);
/// ```
#[derive(Clone)]
pub struct OwnedRequest<B> {
    bytes: B,
    version: i16,
    correlation_id: i32,
}

impl<B: FrameStorage> OwnedRequest<B> {
    /// Parses `bytes`, which must be exactly one ElectLeaders request frame (as
    /// [`parse_request`] takes it), and keeps them. A malformed frame is given back with the
    /// error.
    pub fn new(bytes: B) -> Result<Self, OwnedParseError<B>> {
        let header = parse_request(bytes.as_ref()).map(|r| (r.version(), r.correlation_id()));
        match header {
            Ok((version, correlation_id)) => Ok(OwnedRequest {
                bytes,
                version,
                correlation_id,
            }),
            Err(error) => Err(OwnedParseError { error, bytes }),
        }
    }

    /// The parsed view, borrowing the bytes held: parsed again, O(topics), no allocation.
    /// Keep the view while you read several fields rather than calling this for each.
    pub fn view(&self) -> ElectLeadersRequest<'_> {
        match parse_request(self.bytes.as_ref()) {
            Ok(view) => view,
            // `new` parsed these very bytes, the storage cannot change them (`FrameStorage`
            // is sealed to types that cannot) and the parser is a function of the bytes.
            Err(_) => unreachable!("an OwnedRequest holds a frame that parsed"),
        }
    }

    /// The ElectLeaders version, 0 to 2.
    pub fn version(&self) -> i16 {
        self.version
    }

    /// The header's `CorrelationId`.
    pub fn correlation_id(&self) -> i32 {
        self.correlation_id
    }

    /// The whole frame, size prefix included.
    pub fn frame(&self) -> &[u8] {
        self.bytes.as_ref()
    }

    /// The bytes held, to forward them or to reuse the storage.
    pub fn into_bytes(self) -> B {
        self.bytes
    }
}

impl<B: FrameStorage> fmt::Debug for OwnedRequest<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.view(), f)
    }
}

/// An ElectLeaders response that owns its frame; see [`OwnedRequest`].
///
/// A response does not say its version: give the version of the request it answers
/// ([`InFlight`](crate::InFlight) finds it).
///
/// ```
/// # #[cfg(feature = "bytes")] {
/// use bytes::Bytes;
/// use kafka_elect_leaders::OwnedResponse;
///
/// let frame = Bytes::from(std::fs::read("corpus/response-v1-errors.bin").unwrap());
/// let response = OwnedResponse::new(frame.clone(), 1).unwrap();
/// assert_eq!(response.version(), 1);
/// assert_eq!(response.view().correlation_id(), response.correlation_id());
/// assert_eq!(response.into_bytes(), frame);
/// # }
/// ```
#[derive(Clone)]
pub struct OwnedResponse<B> {
    bytes: B,
    version: i16,
    correlation_id: i32,
}

impl<B: FrameStorage> OwnedResponse<B> {
    /// Parses `bytes`, which must be exactly one ElectLeaders response frame of `version`
    /// (as [`parse_response`] takes it), and keeps them. A malformed frame is given back
    /// with the error.
    pub fn new(bytes: B, version: i16) -> Result<Self, OwnedParseError<B>> {
        let correlation_id = parse_response(bytes.as_ref(), version).map(|r| r.correlation_id());
        match correlation_id {
            Ok(correlation_id) => Ok(OwnedResponse {
                bytes,
                version,
                correlation_id,
            }),
            Err(error) => Err(OwnedParseError { error, bytes }),
        }
    }

    /// The parsed view, borrowing the bytes held: parsed again, O(topics), no allocation.
    pub fn view(&self) -> ElectLeadersResponse<'_> {
        match parse_response(self.bytes.as_ref(), self.version) {
            Ok(view) => view,
            // As for `OwnedRequest::view`: these bytes parsed at this version in `new`.
            Err(_) => unreachable!("an OwnedResponse holds a frame that parsed"),
        }
    }

    /// The version the response was parsed at.
    pub fn version(&self) -> i16 {
        self.version
    }

    /// The header's `CorrelationId`.
    pub fn correlation_id(&self) -> i32 {
        self.correlation_id
    }

    /// The whole frame, size prefix included.
    pub fn frame(&self) -> &[u8] {
        self.bytes.as_ref()
    }

    /// The bytes held, to forward them or to reuse the storage.
    pub fn into_bytes(self) -> B {
        self.bytes
    }
}

impl<B: FrameStorage> fmt::Debug for OwnedResponse<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.view(), f)
    }
}
