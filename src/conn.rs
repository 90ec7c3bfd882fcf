//! A Kafka connection carries every API, not only ElectLeaders: every API key is named (by
//! [`ApiKey`](crate::ApiKey)), and [`InFlight`] pairs each response with the request it
//! answers, so that a response is parsed with its request's version.
//!
//! ```
//! use kafka_elect_leaders::{api_name, peek_request, peek_response, InFlight};
//!
//! // ApiVersions v3 (correlation id 1), then ElectLeaders v2 (correlation id 2).
//! let api_versions = [0, 0, 0, 10, 0, 18, 0, 3, 0, 0, 0, 1, 0, 0];
//! let elect_leaders = std::fs::read("corpus/request-v2-min.bin").unwrap();
//! let mut in_flight = InFlight::<16>::new();
//! for request in [&api_versions[..], &elect_leaders[..]] {
//!     let peek = peek_request(request).unwrap();
//!     in_flight.push(peek.into()).unwrap();
//! }
//! // The responses come back in order; each names only its correlation id.
//! let answered = in_flight.answer(1).unwrap();
//! assert_eq!(api_name(answered.request.api_key), Some("ApiVersions"));
//! let answered = in_flight.answer(0).unwrap();
//! assert!(answered.request.is_elect_leaders());
//! assert_eq!(answered.request.api_version, 2);
//! assert!(in_flight.is_empty());
//! ```

use crate::api_key::ApiKey;
use crate::frame::RequestPeek;
use crate::version::{API_KEY, MAX_VERSION, MIN_VERSION};

/// The name Apache Kafka gives an API key (`18` is `"ApiVersions"`, `43`
/// `"ElectLeaders"`), or `None` for a key Kafka 4.4 does not define: a thin wrapper over
/// [`ApiKey::name`], kept for the callers that hold a bare `i16`.
///
/// ```
/// use kafka_elect_leaders::api_name;
/// assert_eq!(api_name(3), Some("Metadata"));
/// assert_eq!(api_name(-1), None);
/// ```
pub const fn api_name(api_key: i16) -> Option<&'static str> {
    ApiKey(api_key).name()
}

/// Whether a request header with this API key and version could have been sent by a Kafka
/// client or broker: the key is one Kafka defines, the version between 0 and the newest
/// Kafka 4.4 knows for that key. Tools use it to tell a request of another API from bytes
/// that are not a request at all (a response read as a request, or garbage). A thin
/// wrapper over [`ApiKey::knows_version`].
///
/// ```
/// use kafka_elect_leaders::is_known_request;
/// assert!(is_known_request(18, 3)); // ApiVersions v3
/// assert!(!is_known_request(18, 99));
/// assert!(!is_known_request(1000, 0));
/// ```
pub const fn is_known_request(api_key: i16, api_version: i16) -> bool {
    ApiKey(api_key).knows_version(api_version)
}

/// What is kept of a request until its response comes back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pending {
    /// `RequestApiKey`.
    pub api_key: i16,
    /// `RequestApiVersion`: the version the response is written in.
    pub api_version: i16,
    /// `CorrelationId`, which the response echoes.
    pub correlation_id: i32,
}

impl Pending {
    /// True for an ElectLeaders request of a version this crate reads: its response can be
    /// given to [`parse_response`](crate::parse_response) with `api_version`.
    pub const fn is_elect_leaders(&self) -> bool {
        self.api_key == API_KEY
            && self.api_version >= MIN_VERSION
            && self.api_version <= MAX_VERSION
    }
}

impl From<RequestPeek> for Pending {
    fn from(peek: RequestPeek) -> Self {
        Pending {
            api_key: peek.api_key,
            api_version: peek.api_version,
            correlation_id: peek.correlation_id,
        }
    }
}

/// The request a response answers, as [`InFlight::answer`] finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answered {
    /// The request.
    pub request: Pending,
    /// How many older requests were dropped unanswered on the way: Kafka answers the
    /// requests of one connection in order, so a request left behind by a later answer
    /// never gets one (a `Produce` with `acks=0`, for one).
    pub skipped: usize,
}

/// [`InFlight::push`] found the tracker full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InFlightFull {
    /// The capacity that was reached.
    pub capacity: usize,
}

impl core::fmt::Display for InFlightFull {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "more than {} requests waiting for their responses on one connection",
            self.capacity
        )
    }
}

#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
impl std::error::Error for InFlightFull {}

/// The requests of one connection that are waiting for their responses, oldest first, at
/// most `N` of them: a ring in place, no allocation, O(1) per request and per response
/// when the broker answers in order (as Kafka does).
///
/// A response carries neither API key nor version; [`answer`](InFlight::answer) finds the
/// request it answers by correlation id, and with it the version to parse it with.
#[derive(Clone, Debug)]
pub struct InFlight<const N: usize> {
    slots: [Pending; N],
    head: usize,
    len: usize,
}

impl<const N: usize> Default for InFlight<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> InFlight<N> {
    const EMPTY: Pending = Pending {
        api_key: 0,
        api_version: 0,
        correlation_id: 0,
    };

    /// An empty tracker.
    pub const fn new() -> Self {
        InFlight {
            slots: [Self::EMPTY; N],
            head: 0,
            len: 0,
        }
    }

    /// How many requests are waiting.
    pub const fn len(&self) -> usize {
        self.len
    }

    /// True when no request is waiting.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The most requests it holds: `N`.
    pub const fn capacity(&self) -> usize {
        N
    }

    /// Records a request sent on the connection. When `N` requests are already waiting it
    /// records nothing and says so: the caller decides (stop reading the client, or close
    /// the connection); nothing is dropped silently.
    pub fn push(&mut self, request: Pending) -> Result<(), InFlightFull> {
        if self.len == N {
            return Err(InFlightFull { capacity: N });
        }
        let at = (self.head + self.len) % N;
        self.slots[at] = request;
        self.len += 1;
        Ok(())
    }

    /// The waiting requests, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Pending> + ExactSizeIterator + '_ {
        (0..self.len).map(move |i| &self.slots[(self.head + i) % N])
    }

    /// The request that the response with `correlation_id` answers: the oldest waiting
    /// request with that correlation id. It is taken out, together with any older request
    /// (those will never be answered: see [`Answered::skipped`]). `None`, and nothing taken
    /// out, when no waiting request has that correlation id.
    pub fn answer(&mut self, correlation_id: i32) -> Option<Answered> {
        let position = self
            .iter()
            .position(|p| p.correlation_id == correlation_id)?;
        let request = self.slots[(self.head + position) % N];
        self.head = (self.head + position + 1) % N;
        self.len -= position + 1;
        if self.len == 0 {
            self.head = 0;
        }
        Some(Answered {
            request,
            skipped: position,
        })
    }

    /// Forgets every waiting request (the connection closed).
    pub fn clear(&mut self) {
        self.head = 0;
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::vec::Vec;

    fn req(api_key: i16, correlation_id: i32) -> Pending {
        Pending {
            api_key,
            api_version: 1,
            correlation_id,
        }
    }

    #[test]
    fn names() {
        assert_eq!(api_name(0), Some("Produce"));
        assert_eq!(api_name(18), Some("ApiVersions"));
        assert_eq!(api_name(43), Some("ElectLeaders"));
        assert_eq!(api_name(94), Some("UnregisterController"));
        assert_eq!(api_name(95), None);
        assert_eq!(api_name(i16::MIN), None);
        assert_eq!(api_name(i16::MAX), None);
    }

    #[test]
    fn known_requests() {
        assert!(is_known_request(43, 0) && is_known_request(43, 2) && !is_known_request(43, 3));
        assert!(is_known_request(0, 13) && !is_known_request(0, 14));
        assert!(!is_known_request(-1, 0) && !is_known_request(95, 0) && !is_known_request(3, -1));
    }

    #[test]
    fn in_order_wraps_around_the_ring() {
        let mut t = InFlight::<3>::new();
        for id in 0..100 {
            t.push(req(3, id)).unwrap();
            if id % 2 == 1 {
                assert_eq!(t.answer(id - 1).map(|a| a.skipped), Some(0));
                assert_eq!(t.answer(id).map(|a| a.request), Some(req(3, id)));
            }
            assert!(t.len() <= 2);
        }
        assert!(t.is_empty());
    }

    #[test]
    fn full_refuses_and_keeps_what_it_has() {
        let mut t = InFlight::<2>::new();
        t.push(req(1, 1)).unwrap();
        t.push(req(1, 2)).unwrap();
        assert_eq!(t.push(req(1, 3)), Err(InFlightFull { capacity: 2 }));
        assert_eq!(
            t.iter().map(|p| p.correlation_id).collect::<Vec<_>>(),
            [1, 2]
        );
        assert_eq!(
            InFlight::<0>::new().push(req(1, 1)),
            Err(InFlightFull { capacity: 0 })
        );
    }

    #[test]
    fn unanswered_requests_are_skipped_and_unknown_ids_change_nothing() {
        let mut t = InFlight::<8>::new();
        for id in [10, 11, 12, 13] {
            t.push(req(0, id)).unwrap();
        }
        assert_eq!(t.answer(99), None);
        assert_eq!(t.len(), 4);
        let a = t.answer(12).unwrap();
        assert_eq!((a.request.correlation_id, a.skipped), (12, 2));
        assert_eq!(t.iter().map(|p| p.correlation_id).collect::<Vec<_>>(), [13]);
        // A correlation id reused: the oldest waiting one is answered first.
        t.push(req(43, 13)).unwrap();
        assert_eq!(t.answer(13).unwrap().request.api_key, 0);
        assert_eq!(t.answer(13).unwrap().request.api_key, 43);
        assert!(t.is_empty());
        t.push(req(1, 1)).unwrap();
        t.clear();
        assert_eq!(t.answer(1), None);
    }

    #[test]
    fn elect_leaders_versions() {
        let p = |v| Pending {
            api_key: 43,
            api_version: v,
            correlation_id: 0,
        };
        assert!(p(0).is_elect_leaders() && p(2).is_elect_leaders());
        assert!(!p(3).is_elect_leaders() && !p(-1).is_elect_leaders());
        assert!(!req(18, 0).is_elect_leaders());
    }
}
