//! The leadership-change policy on the APIs other than ElectLeaders that can change who
//! leads a protected partition or enable unclean election (see `crate::leadership`, which
//! reads them, decides and writes the refusals): each such request is read and decided
//! whenever the policy has a rule about leadership, audited, and forwarded or answered
//! with the API's own refusal; an inter-broker API, a version the guard does not read or
//! a request it cannot read closes the connection.

use kafka_elect_leaders::RequestPeek;

use crate::audit::{log, log_only};
use crate::close::{Close, CloseReason};
use crate::filter::{Filter, OnRequest, Request, Respond, Session, Wait};
use crate::leadership::{self, Api};
use crate::policy::Verdict;

pub(crate) struct Leadership;

impl Filter for Leadership {
    fn name(&self) -> &'static str {
        "leadership"
    }

    fn reads_request(&self, api_key: i16) -> bool {
        Api::of(api_key).is_some() || leadership::inter_broker(api_key).is_some()
    }

    /// Its own audit lines fill the client's share of the audit queue: wait for them to be
    /// written (not under `--log-only`, which never holds a request back).
    fn ready<'a>(&'a self, session: &'a Session<'a>, request: &RequestPeek) -> Option<Wait<'a>> {
        if Api::of(request.api_key).is_none()
            || log_only(&session.shared.policy(), session.principal().as_deref())
        {
            return None;
        }
        Some(Box::pin(session.audit.ready()))
    }

    fn request(&self, session: &Session<'_>, request: &mut Request) -> OnRequest {
        match police_change(session, request.frame(), *request.peek()) {
            Ok(None) => OnRequest::Pass,
            Ok(Some(reply)) => OnRequest::Answer(Respond::frame(reply)),
            Err(close) => OnRequest::Close(close),
        }
    }
}

/// None to forward the request (not an API the policy reads, no rule that concerns
/// leadership, or allowed), the answer to send instead when it is refused; an error closes
/// the connection (a request the guard cannot read, of a version it does not know, or one
/// no client sends).
fn police_change(
    session: &Session<'_>,
    frame: &[u8],
    peek: RequestPeek,
) -> Result<Option<bytes::Bytes>, Close> {
    let (conn, shared) = (session.conn, session.shared);
    let api = Api::of(peek.api_key);
    let inter_broker = leadership::inter_broker(peek.api_key);
    if api.is_none() && inter_broker.is_none() {
        return Ok(None);
    }
    let policy = shared.policy();
    if !policy.polices_leadership() {
        return Ok(None);
    }
    let refused = |what: String| {
        Close::of(
            CloseReason::Malformed,
            format!(
                "{what} (correlation id {}): never forwarded while the guard polices \
                 leadership changes",
                peek.correlation_id
            ),
        )
    };
    let Some(api) = api else {
        let name = inter_broker.unwrap_or("an inter-broker API");
        return Err(refused(format!(
            "the client sent {name} (api key {}), which only brokers and controllers send \
             each other",
            peek.api_key
        )));
    };
    if !api.reads(peek.api_version) {
        return Err(refused(format!(
            "the client sent {} v{}, a version the guard does not read (it reads v{}-v{})",
            api.name(),
            peek.api_version,
            api.min_version(),
            api.max_version()
        )));
    }
    let request = leadership::read_request(api, peek.api_version, frame).map_err(|e| {
        refused(format!(
            "malformed {} v{} request: {e}",
            api.name(),
            peek.api_version
        ))
    })?;
    let principal = session.principal();
    let mut decision = policy.decide_change(&request, principal.as_deref());
    let line = leadership::audit::line(conn, principal.as_deref(), &request, &decision);
    if let Err(e) = session.audit.record_line(line).or_else(|e| {
        let what = format_args!("{} (correlation id {})", api.name(), peek.correlation_id);
        let log_only = log_only(&policy, principal.as_deref());
        shared.audit.unaudited(log_only, conn, what, e)
    }) {
        log(format_args!(
            "{} -> {}: {} request (correlation id {}) refused: {}",
            conn.client,
            conn.upstream,
            api.name(),
            peek.correlation_id,
            e.reason()
        ));
        decision = decision.unaudited(e.reason());
    }
    shared.metrics.change_decided(api.name(), decision.verdict);
    if decision.verdict != Verdict::Refused {
        return Ok(None);
    }
    let mut reply = bytes::BytesMut::new();
    leadership::encode_refusal(&request, &decision, &mut reply);
    Ok(Some(reply.freeze()))
}
