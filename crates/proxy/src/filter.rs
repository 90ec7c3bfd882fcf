//! The guard as a chain of filters: the connection core (`conn`) moves frames, owns the
//! budgets, the timeouts, the order of answers and the closes, and knows no API beyond
//! what pairing needs; every concern that reads a request or an answer is a [`Filter`].
//! The guard's own are public values ([`crate::builtin`]) an embedder places in its chain
//! before, after or between its own, or leaves out ([`Filters::builtin`] is all of them,
//! in their order).
//!
//! A filter says which API keys it reads, per direction; the core hands it those frames,
//! in the order of the chain:
//!
//! - a **request** goes through every filter that reads its API key, each deciding
//!   ([`OnRequest`]): pass it on as it is; forward another frame in its place
//!   ([`Forward`]: the next filters read that frame, and the broker's answer to it may go
//!   to a [`Respond`] that writes the client's answer, nested when several filters did
//!   so); answer it in the broker's place (the chain ends: nothing is forwarded); drop it
//!   (neither forwarded nor answered); or close the connection with the filter's own
//!   reason. After the last filter, the request (or the frame put in its place) goes to
//!   the broker. Before a filter reads a request it may ask the core to wait
//!   ([`Filter::ready`], room in the audit queue), the client's close watched meanwhile;
//! - an **answer** the broker sent goes through every filter that reads its API key, in
//!   the same order: each may read it, change it in place, or have the rest of it spliced
//!   behind a new head ([`OnResponse::Splice`]: never copied when no later filter reads
//!   it). Answers a filter wrote ([`Respond`]) go out as written.
//!
//! What a filter keeps to answer later counts against the connection's budget of requests
//! kept and the guard's buffer budget ([`Config::max_buffered_bytes`]) until it is written:
//! a [`Respond`] says how many bytes it holds.
//!
//! **Sync, on purpose.** A filter's methods are plain functions, not futures: a decision
//! reads the bytes in hand and the [`Session`], and must not wait on the network (the
//! only wait is [`Filter::ready`], which the core runs with the client's close watched).
//! That keeps a filter cheap where most frames are small, and lets the core move the
//! decision on a large frame off the connection's thread (`heavy`) without the filter
//! knowing. What a filter keeps across requests it keeps behind a lock or an atomic; per
//! connection, keyed by [`Session::id`], dropped in [`Filter::closed`].
//!
//! A filter does what the built-ins do through its [`Session`]: an audit line through the
//! guard's sink ([`Session::audit`], failing closed), a counter in the guard's metrics
//! ([`Session::count`], [`Session::count_per_client`]), a refusal in the operator's words
//! (`session.policy().refusal_text()`, [`Policy::refusal_text`]). `examples/` holds three
//! embedders that CI runs.
//!
//! ```
//! use kafka_elect_leaders_proxy::filter::{OnRequest, Request, Session};
//! use kafka_elect_leaders_proxy::{ApiKey, Config, Filter, Filters};
//!
//! /// Closes the connection of any client that sends DeleteTopics.
//! struct NoDeleteTopics;
//!
//! impl Filter for NoDeleteTopics {
//!     fn name(&self) -> &'static str {
//!         "no-delete-topics"
//!     }
//!     fn reads_request(&self, api_key: i16) -> bool {
//!         api_key == ApiKey::DELETE_TOPICS.0
//!     }
//!     fn request(&self, session: &Session, _: &mut Request) -> OnRequest {
//!         session.count(self.name(), "refused", 1);
//!         OnRequest::close("DeleteTopics is not allowed through this guard")
//!     }
//! }
//!
//! // The guard's own filters, then this one.
//! let config = Config {
//!     filters: Filters::builtin().with(NoDeleteTopics),
//!     ..Config::default()
//! };
//! assert_eq!(config.filters.names().last(), Some(&"no-delete-topics"));
//! ```
//!
//! [`Config::max_buffered_bytes`]: crate::Config::max_buffered_bytes

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_elect_leaders::{Pending, RequestPeek};

use crate::core::budget::SMALL_FRAME;
use crate::core::close::{Close, CloseReason};
use crate::filters::addresses::routes::Routes;
use crate::filters::elect::policy::Policy;
use crate::filters::sasl::identity::Identity;
use crate::observability::audit::{Audit, AuditConnection, AuditError, ConnInfo};
use crate::observability::metrics::Metrics;

/// A future a filter asks the core to wait for before it reads a request.
pub type Wait<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// What a forwarded request waits for before it is sent ([`Forward::after`]): `Ok` to send
/// it, or the answer the client gets instead (the chain ends there, nothing forwarded).
pub type Gate = Pin<Box<dyn Future<Output = Result<(), Respond>> + Send>>;

/// One concern of the guard: reads the requests and answers of the API keys it names,
/// and decides what becomes of each request. Shared by every connection of a guard.
pub trait Filter: Send + Sync + 'static {
    /// Its name, for logs.
    fn name(&self) -> &'static str;

    /// Whether it reads requests of this API key (asked once per API key and guard: the
    /// answer must not change).
    fn reads_request(&self, api_key: i16) -> bool {
        let _ = api_key;
        false
    }

    /// Whether it reads the broker's answers to requests of this API key (asked once per
    /// API key and guard).
    fn reads_response(&self, api_key: i16) -> bool {
        let _ = api_key;
        false
    }

    /// Something to wait for before [`Filter::request`] reads this request (room in the
    /// audit queue); the client's close is watched meanwhile.
    fn ready<'a>(&'a self, session: &'a Session, request: &RequestPeek) -> Option<Wait<'a>> {
        let _ = (session, request);
        None
    }

    /// Decides on a request of an API key it reads.
    fn request(&self, session: &Session, request: &mut Request) -> OnRequest {
        let _ = (session, request);
        OnRequest::Pass
    }

    /// Reads (or changes) the broker's answer to a request of an API key it reads.
    fn response(&self, session: &Session, request: Pending, answer: &mut Response) -> OnResponse {
        let _ = (session, request, answer);
        OnResponse::Pass
    }

    /// The connection of `session` ended (however it ended): what the filter keeps for
    /// it ([`Session::id`]) can go. Called once per connection, for every filter.
    fn closed(&self, session: &Session) {
        let _ = session;
    }
}

/// One client connection, as the filters see it: cheap to clone, and owned, so that a
/// filter's decision on a large frame can run off the connection's thread (see
/// `conn::requests`) and a filter may keep it past a call.
///
/// It holds the parts of the guard's shared state the filters use, not that state itself
/// (made by `Session::new`, in `shared.rs`), so that this module sits below it.
#[derive(Clone)]
pub struct Session {
    parts: Arc<SessionParts>,
}

/// What a [`Session`] holds.
pub(crate) struct SessionParts {
    /// The connection's number, unique for the guard's life.
    pub(crate) id: u64,
    pub(crate) conn: ConnInfo,
    pub(crate) identity: Identity,
    /// The policy in force, replaced whole on reload.
    pub(crate) policy: Arc<RwLock<Arc<Policy>>>,
    /// The audit log.
    pub(crate) audit_log: Arc<Audit>,
    /// The guard's metrics.
    pub(crate) metrics: Arc<Metrics>,
    /// The broker-address rewrite.
    pub(crate) addresses: Arc<Routes>,
    /// The client address's share of the audit queue.
    pub(crate) audit: AuditConnection,
}

impl Session {
    pub(crate) fn of(parts: SessionParts) -> Session {
        Session {
            parts: Arc::new(parts),
        }
    }

    /// What the built-in filters use of the guard.
    pub(crate) fn parts(&self) -> &SessionParts {
        &self.parts
    }

    /// The client's address, the guard's listener and the broker behind it.
    pub fn conn(&self) -> &ConnInfo {
        &self.parts.conn
    }

    /// The connection's number: unique among the connections of this guard for its life
    /// (the key of what a filter keeps per connection, until [`Filter::closed`]).
    pub fn id(&self) -> u64 {
        self.parts.id
    }

    /// Adds `by` to the guard's counter `elect_leaders_guard_filter_events_total` with the
    /// labels `filter` and `event` (both chosen in the filter's code, so that the series
    /// are few). Served at `/metrics` when the guard serves metrics; nothing otherwise.
    pub fn count(&self, filter: &'static str, event: &'static str, by: u64) {
        self.parts.metrics.filter_event(filter, event, by);
    }

    /// [`Session::count`] per client address: `elect_leaders_guard_filter_client_events_total`
    /// with a `client` label too (the client's IP address). The first
    /// [`MAX_CLIENT_SERIES`](crate::MAX_CLIENT_SERIES) addresses get a series of
    /// their own, any later one is counted as `other`: a label a client chooses (its
    /// address) cannot grow the registry without bound.
    pub fn count_per_client(&self, filter: &'static str, event: &'static str, by: u64) {
        let client = self.parts.conn.client.ip();
        self.parts
            .metrics
            .filter_client_event(filter, event, client, by);
    }

    /// Writes an audit line through the guard's sink, counted against this client's
    /// share of the audit queue and the guard's buffer budget like the built-ins' lines:
    /// `{"time", "kind": "filter", "rule": rule, "verdict", "client", "listener",
    /// "upstream", "principal", "api_key", "api", "api_version", "correlation_id",
    /// "details"}`. `details` is the filter's own (any JSON). An error means the line was
    /// not written (the log fails or is stalled, no room, or the line is longer than
    /// [`MAX_LINE`](crate::observability::audit::MAX_LINE)): a filter that refuses only what it can audit
    /// refuses the request then, as the built-ins do (fail closed). Wait for room first
    /// with [`Session::audit_ready`] in [`Filter::ready`].
    pub fn audit(
        &self,
        rule: &str,
        request: &RequestPeek,
        verdict: &str,
        details: serde_json::Value,
    ) -> Result<(), AuditError> {
        let conn = &self.parts.conn;
        let key = kafka_elect_leaders::ApiKey(request.api_key);
        let mut line = serde_json::json!({
            "time": crate::observability::diag::rfc3339_now(),
            "kind": "filter",
            "rule": rule,
            "verdict": verdict,
            "client": conn.client.to_string(),
            "listener": conn.listener.to_string(),
            "upstream": conn.upstream.to_string(),
            "principal": self.principal(),
            "api_key": request.api_key,
            "api": key.name(),
            "api_version": request.api_version,
            "correlation_id": request.correlation_id,
            "details": details,
        })
        .to_string();
        line.push('\n');
        if line.len() > crate::observability::audit::MAX_LINE {
            return Err(AuditError::TooLarge);
        }
        self.parts.audit.record_line(line)
    }

    /// Done when this client's share of the audit queue has room for a line (or when
    /// waiting longer would not give it: the log fails or is stalled, and
    /// [`Session::audit`] then says so). What a filter that audits returns from
    /// [`Filter::ready`].
    pub fn audit_ready(&self) -> Wait<'_> {
        Box::pin(self.parts.audit.ready())
    }

    /// The principal the broker takes this client as, when the guard knows it (from the
    /// client's certificate or a SASL exchange the broker accepted).
    pub fn principal(&self) -> Option<String> {
        self.parts.identity.principal()
    }

    /// The policy in force (replaced whole on reload).
    pub fn policy(&self) -> Arc<Policy> {
        crate::filters::elect::policy::in_force(&self.parts.policy)
    }
}

/// A request a filter reads: its frame (size prefix included) and header.
pub struct Request {
    frame: Held,
    peek: RequestPeek,
}

enum Held {
    Read(BytesMut),
    Kept(Bytes),
    /// Only while `keep` swaps the two.
    Moved,
}

impl Request {
    pub(crate) fn new(frame: BytesMut, peek: RequestPeek) -> Request {
        Request {
            frame: Held::Read(frame),
            peek,
        }
    }

    /// The frame a filter forwarded in the request's place, as the next filter reads it.
    pub(crate) fn forwarded(frame: Bytes, peek: RequestPeek) -> Request {
        Request {
            frame: Held::Kept(frame),
            peek,
        }
    }

    /// The frame, size prefix included.
    pub fn frame(&self) -> &[u8] {
        match &self.frame {
            Held::Read(frame) => frame,
            Held::Kept(frame) => frame,
            Held::Moved => &[],
        }
    }

    /// Its header: API key, version, correlation id.
    pub fn peek(&self) -> &RequestPeek {
        &self.peek
    }

    /// The frame as bytes of its own, to keep past this call (to answer or merge later):
    /// a small frame is copied out of the read buffer, whose whole allocation it would
    /// otherwise keep alive outside the budget; a large one already has its own.
    pub fn keep(&mut self) -> Bytes {
        let kept = match std::mem::replace(&mut self.frame, Held::Moved) {
            Held::Read(frame) if frame.len() <= SMALL_FRAME => Bytes::copy_from_slice(&frame),
            Held::Read(frame) => frame.freeze(),
            Held::Kept(frame) => frame,
            Held::Moved => Bytes::new(),
        };
        self.frame = Held::Kept(kept.clone());
        kept
    }

    /// The frame to forward as it came.
    pub(crate) fn into_frame(self) -> Frame {
        match self.frame {
            Held::Read(frame) => Frame::Mut(frame),
            Held::Kept(frame) => Frame::Shared(frame),
            Held::Moved => Frame::Shared(Bytes::new()),
        }
    }
}

/// A frame the core writes, whichever buffer it is in.
pub(crate) enum Frame {
    Mut(BytesMut),
    Shared(Bytes),
}

impl Frame {
    /// The frame's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Frame::Mut(frame) => frame,
            Frame::Shared(frame) => frame,
        }
    }

    /// The frame in a buffer of its own, to change in place: shared bytes are taken over
    /// when nothing else holds them, copied otherwise.
    fn make_mut(&mut self) -> &mut BytesMut {
        match self {
            Frame::Mut(frame) => frame,
            Frame::Shared(shared) => {
                let owned = std::mem::take(shared)
                    .try_into_mut()
                    .unwrap_or_else(|shared| BytesMut::from(&shared[..]));
                *self = Frame::Mut(owned);
                // Now `Mut`: the arm above answers.
                self.make_mut()
            }
        }
    }

    /// The frame as shared bytes: a buffer of its own is frozen, not copied.
    fn make_shared(&mut self) -> &Bytes {
        match self {
            Frame::Shared(frame) => frame,
            Frame::Mut(frame) => {
                *self = Frame::Shared(std::mem::take(frame).freeze());
                // Now `Shared`: the arm above answers.
                self.make_shared()
            }
        }
    }
}

/// What becomes of a request.
pub enum OnRequest {
    /// On to the next filter as it is; after the last, it is forwarded.
    Pass,
    /// On to the next filter as this frame (the request itself, from [`Request::keep`], or
    /// another in its place); after the last, it is forwarded.
    Forward(Forward),
    /// Answer it on the broker's behalf, in its turn: the chain ends, nothing is
    /// forwarded. (An earlier filter's [`Forward::merged_by`] writes the client's answer
    /// from this one, as it would from the broker's.)
    Answer(Respond),
    /// Neither forwarded nor answered: the chain ends, and the client waits for an answer
    /// that will not come (its own request timeout ends the wait). Counted in
    /// `elect_leaders_guard_filter_drops_total`.
    Drop,
    /// Close the connection; nothing of this request is forwarded.
    Close(Close),
}

impl OnRequest {
    /// Closes the connection for a request this filter refuses: counted as closed by
    /// `refused` (and in `elect_leaders_guard_filter_closes_total` under the filter's
    /// name), the reason in the guard's log.
    pub fn close(why: impl Into<String>) -> OnRequest {
        OnRequest::Close(Close::of(CloseReason::Refused, why))
    }

    /// Closes the connection for a request that is not a Kafka request as it claims:
    /// counted as closed by `malformed`.
    pub fn malformed(why: impl Into<String>) -> OnRequest {
        OnRequest::Close(Close::of(CloseReason::Malformed, why))
    }
}

/// A request forwarded by a filter's decision.
pub struct Forward {
    pub(crate) frame: Bytes,
    pub(crate) merge: Option<Respond>,
    pub(crate) wait: Duration,
    pub(crate) gate: Option<Gate>,
}

impl Forward {
    /// Forward `frame` (size prefix included; the request itself, from
    /// [`Request::keep`], or a frame in its place), its answer going back as the broker
    /// sends it.
    pub fn new(frame: Bytes) -> Forward {
        Forward {
            frame,
            merge: None,
            wait: Duration::ZERO,
            gate: None,
        }
    }

    /// Sent only once `gate` says so: the core waits for it before the next filter reads
    /// the request (on the runtime, the client's close watched; the connection's later
    /// requests wait behind it, so they stay in order), and answers the client with what
    /// it gives instead when it refuses. The built-ins hold a leadership change so until
    /// its audit record is acknowledged (`blocking`, `blocking-strict`).
    pub fn after(mut self, gate: Gate) -> Forward {
        self.gate = Some(gate);
        self
    }

    /// The broker's answer goes to `merge`, which writes the client's answer from it.
    pub fn merged_by(mut self, merge: Respond) -> Forward {
        self.merge = Some(merge);
        self
    }

    /// The request lets the broker wait this long before it answers (its `timeout_ms`):
    /// the guard's request timeout starts after it.
    pub fn waiting(mut self, wait: Duration) -> Forward {
        self.wait = wait;
        self
    }
}

type Write = Box<dyn FnOnce(Option<&[u8]>, &mut BytesMut) -> Result<(), Close> + Send>;

/// An answer the guard writes: at once (a frame already made) or when its turn comes,
/// from what it kept (and the broker's answer, for a request forwarded trimmed).
pub struct Respond {
    pub(crate) holds: usize,
    pub(crate) write: Answered,
    /// The bytes the answer written later takes when it is written, taken from the buffer
    /// budget with what it holds ([`Respond::answering`]).
    pub(crate) answer: usize,
    /// What is written instead when the budget cannot give `answer` bytes at once.
    pub(crate) bounded: Option<Write>,
}

pub(crate) enum Answered {
    Frame(Bytes),
    Later(Write),
}

impl Respond {
    /// This frame (size prefix included), in the request's turn.
    pub fn frame(frame: Bytes) -> Respond {
        Respond {
            holds: frame.len(),
            write: Answered::Frame(frame),
            answer: 0,
            bounded: None,
        }
    }

    /// Written by `write` when its turn comes, into an empty buffer, with the broker's
    /// answer when the request was forwarded. `holds`: the bytes it keeps until then
    /// (counted against the budgets).
    pub fn later(
        holds: usize,
        write: impl FnOnce(Option<&[u8]>, &mut BytesMut) -> Result<(), Close> + Send + 'static,
    ) -> Respond {
        Respond {
            holds,
            write: Answered::Later(Box::new(write)),
            answer: 0,
            bounded: None,
        }
    }

    /// The answer written later is `len` bytes (at most), taken from the buffer budget
    /// with what it holds before it is written, so that an answer larger than its request
    /// (a refusal of every partition named) is within `max-buffered-bytes` too. Where the
    /// budget cannot give them at once while the request already holds its share (waiting
    /// then could deadlock connections that each hold a request and wait for room for its
    /// answer), `bounded` is written instead: an answer whose size does not grow with the
    /// request.
    pub fn answering(
        mut self,
        len: usize,
        bounded: impl FnOnce(Option<&[u8]>, &mut BytesMut) -> Result<(), Close> + Send + 'static,
    ) -> Respond {
        self.answer = len;
        self.bounded = Some(Box::new(bounded));
        self
    }
}

impl Respond {
    /// The answer `outer` writes from what `inner` writes: `outer` merges the broker's
    /// answer to a frame its filter forwarded in the request's place, and a later filter
    /// answered that frame itself (`inner`), or forwarded another frame in its place with
    /// a merge of its own. Holds what both hold; when the budget cannot give the bytes of
    /// both answers at once, `outer`'s short answer is written, without `inner`'s.
    pub(crate) fn nest(outer: Respond, inner: Respond) -> Respond {
        let (outer_write, inner_write) = (outer.write, inner.write);
        let write = move |broker: Option<&[u8]>, out: &mut BytesMut| -> Result<(), Close> {
            let middle = match inner_write {
                Answered::Frame(frame) => frame,
                Answered::Later(write) => {
                    let mut middle = BytesMut::new();
                    write(broker, &mut middle)?;
                    middle.freeze()
                }
            };
            match outer_write {
                Answered::Frame(frame) => {
                    out.extend_from_slice(&frame);
                    Ok(())
                }
                Answered::Later(write) => write(Some(&middle), out),
            }
        };
        Respond {
            holds: outer.holds.saturating_add(inner.holds),
            write: Answered::Later(Box::new(write)),
            answer: outer.answer.saturating_add(inner.answer),
            bounded: outer.bounded.map(|bounded| -> Write {
                Box::new(move |_: Option<&[u8]>, out: &mut BytesMut| bounded(None, out))
            }),
        }
    }
}

impl fmt::Debug for Respond {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Respond")
            .field("holds", &self.holds)
            .field("answer", &self.answer)
            .finish_non_exhaustive()
    }
}

/// The broker's answer to a request forwarded as it came, as response filters read it.
pub struct Response {
    frame: Frame,
    /// A splice a filter asked for ([`OnResponse::Splice`]), not made yet: made by the
    /// core as the answer is written (the tail never copied), or here when a later filter
    /// reads the answer.
    splice: Option<(BytesMut, usize)>,
}

impl Response {
    pub(crate) fn new(frame: BytesMut) -> Response {
        Response {
            frame: Frame::Mut(frame),
            splice: None,
        }
    }

    /// The splice a filter asked for, once the next filter is to read the answer: the
    /// head, then the rest of the answer from `tail_from`, in one buffer.
    pub(crate) fn settle(&mut self) {
        if let Some((mut head, tail_from)) = self.splice.take() {
            let frame = match &self.frame {
                Frame::Mut(frame) => &frame[..],
                Frame::Shared(frame) => &frame[..],
            };
            head.extend_from_slice(frame.get(tail_from..).unwrap_or_default());
            self.frame = Frame::Mut(head);
        }
    }

    /// Asks for a splice (see [`OnResponse::Splice`]), after any earlier one is made.
    pub(crate) fn splice(&mut self, head: BytesMut, tail_from: usize) {
        self.settle();
        self.splice = Some((head, tail_from));
    }

    /// What the client gets: the frame, or a head and the frame's tail from an offset.
    pub(crate) fn into_parts(self) -> (Frame, Option<(BytesMut, usize)>) {
        (self.frame, self.splice)
    }

    /// The frame, size prefix included.
    pub fn frame(&self) -> &[u8] {
        match &self.frame {
            Frame::Mut(frame) => frame,
            Frame::Shared(frame) => frame,
        }
    }

    /// The frame, to change in place.
    pub fn frame_mut(&mut self) -> &mut BytesMut {
        self.frame.make_mut()
    }

    /// The frame as shared bytes (for a decoder that keeps slices of it).
    pub fn frame_bytes(&mut self) -> &Bytes {
        self.frame.make_shared()
    }

    #[cfg(test)]
    pub(crate) fn into_frame(mut self) -> Frame {
        self.settle();
        self.frame
    }
}

/// What becomes of an answer.
pub enum OnResponse {
    /// Read (or changed in place): the next filter reads it; after the last, it goes to
    /// the client.
    Pass,
    /// The client gets `head` (size prefix included, counting the whole answer), then
    /// the broker's answer from `tail_from` on: never copied, unless a later filter reads
    /// the answer (it then reads the spliced answer, in one buffer).
    Splice {
        /// What the client gets first, size prefix included.
        head: BytesMut,
        /// Where in the broker's answer the rest begins.
        tail_from: usize,
    },
    /// Close the connection; nothing of this answer goes to the client.
    Close(Close),
}

/// The filters of a guard, in order, with for each API key which of them read it.
#[derive(Clone)]
pub struct Filters {
    filters: Vec<Arc<dyn Filter>>,
    /// Per API key (0..`KEYS`), the filters reading its requests and its answers, as
    /// bits of `filters`' indices; keys past the table ask every filter.
    requests: Arc<[u64]>,
    responses: Arc<[u64]>,
}

/// API keys with a dispatch entry; Kafka 4.x's highest is below 100.
const KEYS: usize = 128;

impl Filters {
    /// No filter at all: every frame forwarded as it came (what the `conn` fuzz target's
    /// plain runs and an embedder's own pipeline start from).
    pub fn none() -> Filters {
        Filters::from_list(Vec::new())
    }

    /// These filters, then `filter` (at most 64 in all).
    ///
    /// # Panics
    ///
    /// With more than 64 filters.
    #[must_use]
    pub fn with(self, filter: impl Filter) -> Filters {
        let mut filters = self.filters;
        filters.push(Arc::new(filter));
        Filters::from_list(filters)
    }

    pub(crate) fn from_list(filters: Vec<Arc<dyn Filter>>) -> Filters {
        assert!(filters.len() <= 64, "at most 64 filters");
        let table = |reads: &dyn Fn(&dyn Filter, i16) -> bool| -> Arc<[u64]> {
            (0..KEYS)
                .map(|key| {
                    filters.iter().enumerate().fold(0u64, |bits, (i, f)| {
                        if reads(f.as_ref(), key as i16) {
                            bits | 1 << i
                        } else {
                            bits
                        }
                    })
                })
                .collect()
        };
        let requests = table(&|f, key| f.reads_request(key));
        let responses = table(&|f, key| f.reads_response(key));
        Filters {
            filters,
            requests,
            responses,
        }
    }

    /// Every filter, in order.
    pub(crate) fn all(&self) -> impl Iterator<Item = &Arc<dyn Filter>> + '_ {
        self.filters.iter()
    }

    /// The names of the filters, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.filters.iter().map(|f| f.name()).collect()
    }

    fn bits(table: &[u64], api_key: i16) -> u64 {
        usize::try_from(api_key)
            .ok()
            .and_then(|key| table.get(key).copied())
            .unwrap_or(u64::MAX)
    }

    /// The filters reading requests of `api_key`, in order.
    pub(crate) fn for_request(&self, api_key: i16) -> impl Iterator<Item = &Arc<dyn Filter>> + '_ {
        let bits = Filters::bits(&self.requests, api_key);
        self.pick(bits, move |f| f.reads_request(api_key))
    }

    /// The filters reading answers to requests of `api_key`, in order.
    pub(crate) fn for_response(&self, api_key: i16) -> impl Iterator<Item = &Arc<dyn Filter>> + '_ {
        let bits = Filters::bits(&self.responses, api_key);
        self.pick(bits, move |f| f.reads_response(api_key))
    }

    fn pick(
        &self,
        bits: u64,
        reads: impl Fn(&dyn Filter) -> bool + 'static,
    ) -> impl Iterator<Item = &Arc<dyn Filter>> + '_ {
        let all = bits == u64::MAX;
        self.filters
            .iter()
            .enumerate()
            .filter(move |(i, f)| {
                if all {
                    reads(f.as_ref())
                } else {
                    bits & (1 << i) != 0
                }
            })
            .map(|(_, f)| f)
    }

    /// Whether any filter reads requests or answers of `api_key`.
    pub(crate) fn reads_request(&self, api_key: i16) -> bool {
        Filters::bits(&self.requests, api_key) != 0
    }

    pub(crate) fn reads_response(&self, api_key: i16) -> bool {
        Filters::bits(&self.responses, api_key) != 0
    }
}

impl Default for Filters {
    fn default() -> Filters {
        Filters::builtin()
    }
}

impl fmt::Debug for Filters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// What the filters' unit tests drive a filter with: a connection's parts, a request or an
/// answer as the core hands it over, and what a [`Respond`] writes. No socket.
#[cfg(test)]
pub(crate) mod testing {
    use bytes::BytesMut;
    use kafka_elect_leaders::peek_request;
    use kafka_protocol::messages::{RequestHeader, ResponseHeader};
    use kafka_protocol::protocol::{Encodable, HeaderVersion, StrBytes};

    use super::{Answered, OnRequest, Request, Respond, Response, Session};
    use crate::core::close::Close;
    use crate::core::shared::Shared;
    use crate::filters::sasl::identity::Identity;
    use crate::observability::audit::{Audit, AuditSink, ConnInfo};
    use crate::Config;

    /// One client connection, from 192.0.2.1 through the listener 127.0.0.1:19092 to the
    /// broker at 10.0.0.1:9092, of a guard run with a config (its audit lines discarded):
    /// what a [`Session`] holds.
    pub(crate) struct Conn {
        session: Session,
    }

    impl Conn {
        pub(crate) fn new(config: &Config) -> Conn {
            let sink = AuditSink::Writer(Box::new(std::io::sink()));
            let audit = Audit::start(sink, 1 << 20).expect("the audit thread starts");
            let conn = ConnInfo {
                client: "192.0.2.1:50000".parse().unwrap(),
                listener: "127.0.0.1:19092".parse().unwrap(),
                local: "127.0.0.1:19092".parse().unwrap(),
                upstream: "10.0.0.1:9092".parse().unwrap(),
            };
            let shared = Shared::new(config, audit);
            let session = Session::new(conn, Identity::new(None, false), &shared);
            Conn { session }
        }

        /// The connection's session (the same one each call, as the core keeps it).
        pub(crate) fn session(&self) -> Session {
            self.session.clone()
        }
    }

    /// A request (size prefix included) as the core hands it to a filter.
    pub(crate) fn request(frame: &[u8]) -> Request {
        let peek = peek_request(frame).expect("a request header");
        Request::new(BytesMut::from(frame), peek)
    }

    /// The broker's answer (size prefix included) as the core hands it to a filter.
    pub(crate) fn answer(frame: &[u8]) -> Response {
        Response::new(BytesMut::from(frame))
    }

    /// What `respond` writes in its turn, given the broker's answer when the request was
    /// forwarded.
    pub(crate) fn written(respond: Respond, broker: Option<&[u8]>) -> Result<Vec<u8>, Close> {
        match respond.write {
            Answered::Frame(frame) => Ok(frame.to_vec()),
            Answered::Later(write) => {
                let mut out = BytesMut::new();
                write(broker, &mut out)?;
                Ok(out.to_vec())
            }
        }
    }

    /// The kind of a decision, for a failing test's message.
    pub(crate) fn kind(decision: &OnRequest) -> &'static str {
        match decision {
            OnRequest::Pass => "pass",
            OnRequest::Forward(_) => "forward",
            OnRequest::Answer(_) => "answer",
            OnRequest::Drop => "drop",
            OnRequest::Close(_) => "close",
        }
    }

    /// A request frame of another API, written by `kafka-protocol` (client id "admin-1").
    pub(crate) fn kafka_request<M: Encodable + HeaderVersion>(
        api_key: i16,
        version: i16,
        correlation_id: i32,
        body: &M,
    ) -> Vec<u8> {
        let mut frame = BytesMut::from(&[0u8; 4][..]);
        RequestHeader::default()
            .with_request_api_key(api_key)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(StrBytes::from_static_str("admin-1")))
            .encode(&mut frame, M::header_version(version))
            .unwrap();
        body.encode(&mut frame, version).unwrap();
        sized(frame)
    }

    /// An answer frame of another API, written by `kafka-protocol`.
    pub(crate) fn kafka_response<M: Encodable + HeaderVersion>(
        version: i16,
        correlation_id: i32,
        body: &M,
    ) -> Vec<u8> {
        let mut frame = BytesMut::from(&[0u8; 4][..]);
        ResponseHeader::default()
            .with_correlation_id(correlation_id)
            .encode(&mut frame, M::header_version(version))
            .unwrap();
        body.encode(&mut frame, version).unwrap();
        sized(frame)
    }

    fn sized(mut frame: BytesMut) -> Vec<u8> {
        let size = u32::try_from(frame.len() - 4).unwrap();
        frame[..4].copy_from_slice(&size.to_be_bytes());
        frame.to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Reads(&'static str, i16);

    impl Filter for Reads {
        fn name(&self) -> &'static str {
            self.0
        }
        fn reads_request(&self, api_key: i16) -> bool {
            api_key == self.1
        }
        fn reads_response(&self, api_key: i16) -> bool {
            api_key == self.1 || api_key == 200
        }
    }

    #[test]
    fn each_key_reaches_the_filters_that_read_it_in_order() {
        let filters = Filters::none()
            .with(Reads("a", 3))
            .with(Reads("b", 18))
            .with(Reads("c", 3));
        let names = |it: &mut dyn Iterator<Item = &Arc<dyn Filter>>| -> Vec<&str> {
            it.map(|f| f.name()).collect()
        };
        assert_eq!(names(&mut filters.for_request(3)), ["a", "c"]);
        assert_eq!(names(&mut filters.for_request(18)), ["b"]);
        assert!(names(&mut filters.for_request(0)).is_empty());
        assert!(!filters.reads_request(0));
        // Past the table, and negative keys: each filter is asked.
        assert_eq!(names(&mut filters.for_response(200)), ["a", "b", "c"]);
        assert!(names(&mut filters.for_request(-1)).is_empty());
        assert_eq!(filters.names(), ["a", "b", "c"]);
    }

    /// An answer read as shared bytes, then changed in place: frozen and taken back
    /// without a copy while nothing else holds it, copied when something does.
    #[test]
    fn an_answer_switches_buffers_keeping_its_bytes() {
        let mut answer = Response::new(BytesMut::from(&b"\0\0\0\x02ab"[..]));
        let at = answer.frame().as_ptr();
        assert_eq!(&answer.frame_bytes()[..], b"\0\0\0\x02ab");
        assert_eq!(answer.frame_bytes().as_ptr(), at, "frozen, not copied");
        answer.frame_mut()[4] = b'x';
        assert_eq!(answer.frame(), b"\0\0\0\x02xb");
        assert_eq!(answer.frame().as_ptr(), at, "taken back, not copied");
        let held = answer.frame_bytes().clone();
        answer.frame_mut()[5] = b'y';
        assert_eq!(answer.frame(), b"\0\0\0\x02xy");
        assert_eq!(&held[..], b"\0\0\0\x02xb", "what is held elsewhere stays");
        assert!(matches!(answer.into_frame(), Frame::Mut(_)));
    }

    #[test]
    fn the_builtin_filters_read_what_they_police() {
        let filters = Filters::builtin();
        assert_eq!(
            filters.names(),
            [
                "doors",
                "follower-fetch",
                "sasl",
                "leadership",
                "elect-leaders",
                "api-versions",
                "addresses"
            ]
        );
        // ElectLeaders requests: the principal, then the ElectLeaders policy.
        let elect: Vec<_> = filters.for_request(43).map(|f| f.name()).collect();
        assert_eq!(elect, ["sasl", "elect-leaders"]);
        // IncrementalAlterConfigs (44): the leadership-change policy.
        let configs: Vec<_> = filters.for_request(44).map(|f| f.name()).collect();
        assert_eq!(configs, ["sasl", "leadership"]);
        let metadata: Vec<_> = filters.for_response(3).map(|f| f.name()).collect();
        assert_eq!(metadata, ["addresses"]);
        let versions: Vec<_> = filters.for_response(18).map(|f| f.name()).collect();
        assert_eq!(versions, ["api-versions"]);
        let sasl: Vec<_> = filters.for_response(36).map(|f| f.name()).collect();
        assert_eq!(sasl, ["sasl"]);
        // WriteTxnMarkers (27), only brokers send it: the doors close it first.
        let markers: Vec<_> = filters.for_request(27).map(|f| f.name()).collect();
        assert_eq!(markers[0], "doors");
        // Produce answers: their node endpoints (from v10), rewritten only when there.
        let produce: Vec<_> = filters.for_response(0).map(|f| f.name()).collect();
        assert_eq!(produce, ["addresses"]);
    }
}
