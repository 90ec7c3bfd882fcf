//! The ElectLeaders policy: each request decided by the policy in force (see
//! `crate::policy`), audited, and forwarded as it came, forwarded trimmed of its refused
//! partitions (the broker's answer then merged with the refusals), or refused whole and
//! answered by the guard (see `crate::answer`, which writes both). A decision that cannot
//! be audited is a refusal, except under `--log-only`.

use std::sync::Arc;

use bytes::BytesMut;
use kafka_elect_leaders::{parse_response, OwnedRequest, RequestPeek, API_KEY};

use crate::answer;
use crate::audit::{log, log_only};
use crate::close::{Close, CloseReason};
use crate::filter::{Filter, Forward, OnRequest, Request, Respond, Session, Wait};
use crate::metrics::RecentDecision;
use crate::owed::millis;
use crate::policy::{Decision, Policy, Verdict};

pub(crate) struct ElectLeaders;

impl Filter for ElectLeaders {
    fn name(&self) -> &'static str {
        "elect-leaders"
    }

    fn reads_request(&self, api_key: i16) -> bool {
        api_key == API_KEY
    }

    /// Its own audit lines fill the client's share of the audit queue: wait for them to be
    /// written (not under `--log-only`, which never holds a request back).
    fn ready<'a>(&'a self, session: &'a Session<'a>, _: &RequestPeek) -> Option<Wait<'a>> {
        if log_only(&session.shared.policy(), session.principal().as_deref()) {
            return None;
        }
        Some(Box::pin(session.audit.ready()))
    }

    fn request(&self, session: &Session<'_>, request: &mut Request) -> OnRequest {
        match decide(session, request) {
            Ok(outcome) => outcome,
            Err(close) => OnRequest::Close(close),
        }
    }
}

fn decide(session: &Session<'_>, request: &mut Request) -> Result<OnRequest, Close> {
    let (conn, shared) = (session.conn, session.shared);
    let peek = *request.peek();
    let request = OwnedRequest::new(request.keep()).map_err(|e| {
        Close::of(
            CloseReason::Malformed,
            format!(
                "malformed ElectLeaders request (v{}, correlation id {}) from the client: {}",
                peek.api_version,
                peek.correlation_id,
                e.error()
            ),
        )
    })?;
    let view = request.view();
    let principal = session.principal();
    let policy = shared.policy();
    let log_only = log_only(&policy, principal.as_deref());
    let mut decision = policy.decide_as(&view, principal.as_deref());
    if let Err(e) = session
        .audit
        .record(conn, principal.as_deref(), &policy, &view, &decision)
        .or_else(|e| {
            let what = format_args!("ElectLeaders (correlation id {})", view.correlation_id());
            shared.audit.unaudited(log_only, conn, what, e)
        })
    {
        // Fail closed: an election that cannot be audited is refused. The refusal is not
        // audited either (the log is what failed); the diagnostics say it.
        log(format_args!(
            "{} -> {}: ElectLeaders request (correlation id {}) refused: {}",
            conn.client,
            conn.upstream,
            view.correlation_id(),
            e.reason()
        ));
        decision = policy.refuse_unaudited(&view, e.reason());
    }
    shared.metrics.decided(&decision, || RecentDecision {
        client: conn.client,
        principal: principal.clone(),
        client_id: view.header().client_id().map_or_else(
            || "null".to_owned(),
            |id| String::from_utf8_lossy(id).into_owned(),
        ),
        election_type: view
            .election_type()
            .name()
            .map_or_else(|| view.election_type().0.to_string(), str::to_owned),
    });
    let wait = millis(view.timeout_ms());
    let holds = request.frame().len();
    Ok(match decision.verdict {
        Verdict::Forwarded | Verdict::WouldRefuse => {
            OnRequest::Forward(Forward::new(request.into_bytes()).waiting(wait))
        }
        Verdict::Trimmed => {
            let mut trimmed = BytesMut::new();
            answer::encode_trimmed(&policy, &decision, &view, &mut trimmed)
                .map_err(|e| Close::new(format!("cannot encode the trimmed request: {e}")))?;
            let merge = answer_later(holds, request, policy, decision);
            OnRequest::Forward(
                Forward::new(trimmed.freeze())
                    .waiting(wait)
                    .merged_by(merge),
            )
        }
        Verdict::Refused => OnRequest::Answer(answer_later(holds, request, policy, decision)),
    })
}

/// The guard's answer to a request refused whole, or the broker's answer to its trimmed
/// form merged with the refusals, written in its turn by the policy that decided it (a
/// reload since changes nothing for it).
fn answer_later(
    holds: usize,
    request: OwnedRequest<bytes::Bytes>,
    policy: Arc<Policy>,
    decision: Decision,
) -> Respond {
    Respond::later(holds, move |broker, out| {
        let view = request.view();
        let broker = match broker {
            Some(frame) => Some(parse_response(frame, view.version()).map_err(|e| {
                Close::of(
                    CloseReason::Malformed,
                    format!(
                        "the broker's ElectLeaders response (correlation id {}) cannot be read \
                         at v{}: {e}",
                        view.correlation_id(),
                        view.version()
                    ),
                )
            })?),
            None => None,
        };
        answer::encode_refusal(&policy, &decision, &view, broker.as_ref(), out)
            .map(|_| ())
            .map_err(|e| Close::new(format!("cannot encode the answer: {e}")))
    })
}
