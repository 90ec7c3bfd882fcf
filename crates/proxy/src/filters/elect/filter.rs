//! The ElectLeaders policy: each request decided by the policy in force (see
//! `crate::filters::elect::policy`), audited, and forwarded as it came, forwarded trimmed of its refused
//! partitions (the broker's answer then merged with the refusals), or refused whole and
//! answered by the guard (see `crate::filters::elect::encode`, which writes both). A decision that cannot
//! be audited is a refusal, except under `rules.log-only`.

use std::sync::Arc;

use bytes::BytesMut;
use kafka_elect_leaders::{
    parse_response, ElectLeadersRequest, ElectLeadersResponse, OwnedRequest, RequestPeek, API_KEY,
};

use super::encode;
use super::policy::{Decision, Policy, Verdict};
use crate::core::close::{Close, CloseReason};
use crate::core::response_due::millis;
use crate::filter::{Filter, Forward, Gate, OnRequest, Request, Respond, Session, Wait};
use crate::observability::audit::{log_only, DecisionRecord, Pending};
use crate::observability::diag::log;
use crate::observability::metrics::RecentDecision;

/// The ElectLeaders policy: refuses, trims or forwards each election, audited.
#[derive(Clone, Copy, Debug, Default)]
pub struct ElectLeaders;

impl Filter for ElectLeaders {
    fn name(&self) -> &'static str {
        "elect-leaders"
    }

    fn reads_request(&self, api_key: i16) -> bool {
        api_key == API_KEY
    }

    /// Its own audit lines fill the client's share of the audit queue: wait for them to be
    /// written (not under `rules.log-only`, which never holds a request back).
    fn ready<'a>(&'a self, session: &'a Session, _: &RequestPeek) -> Option<Wait<'a>> {
        if log_only(&session.policy(), session.principal().as_deref()) {
            return None;
        }
        Some(Box::pin(session.parts().audit.ready()))
    }

    fn request(&self, session: &Session, request: &mut Request) -> OnRequest {
        match decide(session, request) {
            Ok(outcome) => outcome,
            Err(close) => OnRequest::Close(close),
        }
    }
}

fn decide(session: &Session, request: &mut Request) -> Result<OnRequest, Close> {
    let conn = session.conn();
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
    let policy = session.policy();
    let log_only = log_only(&policy, principal.as_deref());
    let mut decision = policy.decide_as(&view, principal.as_deref());
    // A leadership change forwarded waits for its record's acknowledgement when the audit
    // sink's mode says so (never under log-only, which holds nothing back).
    let changes = !log_only && matches!(decision.verdict, Verdict::Forwarded | Verdict::Trimmed);
    let mut pending = None;
    if let Err(e) = if changes {
        let record = DecisionRecord::new(conn, principal.as_deref(), &policy, &view, &decision);
        session
            .parts()
            .audit
            .record_change(record)
            .map(|waits| pending = waits)
    } else {
        session
            .parts()
            .audit
            .record(conn, principal.as_deref(), &policy, &view, &decision)
    }
    .or_else(|e| {
        let id = view.correlation_id();
        let what = format_args!("ElectLeaders (correlation id {id})");
        session.parts().audit_log.unaudited(log_only, conn, what, e)
    }) {
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
    session
        .parts()
        .metrics
        .decided(&decision, || RecentDecision {
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
    let gate = pending.map(|pending| held_until_acknowledged(session, &request, &policy, pending));
    let gated = |forward: Forward| match gate {
        Some(gate) => forward.after(gate),
        None => forward,
    };
    Ok(match decision.verdict {
        Verdict::Forwarded | Verdict::WouldRefuse => {
            OnRequest::Forward(gated(Forward::new(request.into_bytes()).waiting(wait)))
        }
        Verdict::Trimmed => {
            let mut trimmed = BytesMut::new();
            encode::encode_trimmed(&policy, &decision, &view, &mut trimmed)
                .map_err(|e| Close::new(format!("cannot encode the trimmed request: {e}")))?;
            let merge = answer_later(holds, request, policy, decision)?;
            OnRequest::Forward(gated(
                Forward::new(trimmed.freeze())
                    .waiting(wait)
                    .merged_by(merge),
            ))
        }
        Verdict::Refused if holds > WHOLE_ANSWER_UP_TO => OnRequest::Answer(short(holds, request)),
        Verdict::Refused => OnRequest::Answer(answer_later(holds, request, policy, decision)?),
    })
}

/// The gate of an election forwarded whose record's acknowledgement it waits for
/// ([`crate::observability::audit::Pending`]): open once acknowledged; otherwise the
/// election is refused as one that could not be audited (POLICY_VIOLATION, the reason in
/// its message), said in the guard's log, counted, and the refusal audited as a record of
/// its own (its first record may still reach the sink later).
fn held_until_acknowledged(
    session: &Session,
    request: &OwnedRequest<bytes::Bytes>,
    policy: &Arc<Policy>,
    pending: Pending,
) -> Gate {
    let (session, request, policy) = (session.clone(), request.clone(), policy.clone());
    Box::pin(async move {
        let why = match pending.wait().await {
            Ok(()) => return Ok(()),
            Err(why) => why,
        };
        let conn = session.conn();
        let view = request.view();
        let principal = session.principal();
        log(format_args!(
            "{} -> {}: ElectLeaders request (correlation id {}) refused: {why}",
            conn.client,
            conn.upstream,
            view.correlation_id(),
        ));
        let decision = policy.refuse_unaudited(&view, &why);
        let record = DecisionRecord::new(conn, principal.as_deref(), &policy, &view, &decision);
        if let Err(e) = session.parts().audit.record_line(record) {
            log(format_args!(
                "{} -> {}: the refusal of ElectLeaders (correlation id {}) is not audited: {}",
                conn.client,
                conn.upstream,
                view.correlation_id(),
                e.reason()
            ));
        }
        let holds = request.frame().len();
        Err(answer_later(holds, request, policy, decision)
            .unwrap_or_else(|close| Respond::later(0, move |_, _| Err(close))))
    })
}

/// A request refused whole and larger than this (about a million partitions) is answered
/// with one top-level POLICY_VIOLATION ([`encode::encode_bounded`]), not with every
/// partition it names: that answer is twice the request's size, and measuring and writing
/// it for a client sending one refused 16 MiB request after another was most of the CPU
/// it cost the guard (issue 42, item 5, which allows a request over a bound this answer).
/// Kafka's clients fail every partition of a request with a top-level error. At v0, which
/// has no top-level error code, the answer is an empty result list (see
/// `encode_bounded`). A request naming so many partitions is never a tool's: Kafka's
/// `kafka-leader-election.sh` sends all partitions as a null list.
pub const WHOLE_ANSWER_UP_TO: usize = 4 << 20;

/// The short answer of a request refused whole: a header and a top-level error.
fn short(holds: usize, request: OwnedRequest<bytes::Bytes>) -> Respond {
    Respond::later(holds, move |_, out| {
        encode::encode_bounded(&request.view(), None, out)
            .map(|_| ())
            .map_err(|e| Close::new(format!("cannot encode the answer: {e}")))
    })
}

/// The guard's answer to a request refused whole, or the broker's answer to its trimmed
/// form merged with the refusals, written in its turn by the policy that decided it (a
/// reload since changes nothing for it). The guard's part of it is measured now, so that
/// the core takes its bytes from the buffer budget before it is written; if the budget
/// cannot give them, the short answer of [`encode::encode_bounded`] is written instead.
fn answer_later(
    holds: usize,
    request: OwnedRequest<bytes::Bytes>,
    policy: Arc<Policy>,
    decision: Decision,
) -> Result<Respond, Close> {
    let len = encode::refusal_len(&policy, &decision, &request.view())
        .map_err(|e| Close::new(format!("cannot measure the answer: {e}")))?;
    let bounded = request.clone();
    let full = Respond::later(holds, move |broker, out| {
        let view = request.view();
        let broker = broker_answer(&view, broker)?;
        encode::encode_refusal(&policy, &decision, &view, broker.as_ref(), out)
            .map(|_| ())
            .map_err(|e| Close::new(format!("cannot encode the answer: {e}")))
    });
    Ok(full.answering(len, move |broker, out| {
        let view = bounded.view();
        let broker = broker_answer(&view, broker)?;
        encode::encode_bounded(&view, broker.as_ref(), out)
            .map(|_| ())
            .map_err(|e| Close::new(format!("cannot encode the answer: {e}")))
    }))
}

/// The broker's answer to the trimmed form of `request`, read at the request's version.
fn broker_answer<'a>(
    request: &ElectLeadersRequest<'_>,
    broker: Option<&'a [u8]>,
) -> Result<Option<ElectLeadersResponse<'a>>, Close> {
    let Some(frame) = broker else {
        return Ok(None);
    };
    parse_response(frame, request.version())
        .map(Some)
        .map_err(|e| {
            Close::of(
                CloseReason::Malformed,
                format!(
                "the broker's ElectLeaders response (correlation id {}) cannot be read at v{}: \
                 {e}",
                request.correlation_id(),
                request.version()
            ),
            )
        })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use kafka_elect_leaders::{
        parse_request, ElectLeadersRequestData, ElectLeadersResponseData, ElectionType,
        EncodeRequestExt, EncodeResponseExt, ErrorCode, PartitionResultData,
        ReplicaElectionResultData, TopicPartitionsData,
    };

    use super::*;
    use crate::filter::testing::{kind, request, written, Conn};
    use crate::Config;

    fn guard(policy: Policy) -> Conn {
        Conn::new(&Config {
            policy,
            ..Config::default()
        })
    }

    fn deny_unclean() -> Policy {
        Policy {
            deny_unclean: true,
            ..Policy::default()
        }
    }

    /// An ElectLeaders request v2 (correlation id 7, a timeout of 5 s) for payments-0,
    /// payments-1 and orders-0.
    fn election(election_type: ElectionType) -> Vec<u8> {
        let topics = [
            TopicPartitionsData::new(b"payments", &[0, 1]),
            TopicPartitionsData::new(b"orders", &[0]),
        ];
        ElectLeadersRequestData {
            correlation_id: 7,
            election_type,
            topic_partitions: Some(&topics),
            timeout_ms: 5000,
            ..Default::default()
        }
        .encode_to_vec(2)
        .unwrap()
    }

    fn decide(conn: &Conn, frame: &[u8]) -> OnRequest {
        ElectLeaders.request(&conn.session(), &mut request(frame))
    }

    /// An answer at v2: its correlation id, top-level error code, and (topic, partition,
    /// error code) of each partition.
    fn results(frame: &[u8]) -> (i32, i16, Vec<(String, i32, i16)>) {
        let answer = parse_response(frame, 2).unwrap();
        let mut partitions = Vec::new();
        for topic in answer.replica_election_results() {
            for p in topic.partition_result() {
                let name = topic.topic_str().unwrap().to_owned();
                partitions.push((name, p.partition_id(), p.error_code().0));
            }
        }
        (answer.correlation_id(), answer.error_code().0, partitions)
    }

    #[test]
    fn reads_elect_leaders_requests_only() {
        for api_key in -1..200 {
            assert_eq!(ElectLeaders.reads_request(api_key), api_key == API_KEY);
            assert!(!ElectLeaders.reads_response(api_key));
        }
    }

    /// PREFERRED under deny-unclean: forwarded as it came, the broker's answer going back
    /// as it is, the guard's request timeout starting after the request's own.
    #[test]
    fn a_preferred_election_is_forwarded_as_it_came() {
        let conn = guard(deny_unclean());
        let frame = election(ElectionType::PREFERRED);
        match decide(&conn, &frame) {
            OnRequest::Forward(forward) => {
                assert_eq!(forward.frame, frame);
                assert!(forward.merge.is_none(), "nothing to merge");
                assert_eq!(forward.wait, Duration::from_secs(5));
            }
            other => panic!("{}", kind(&other)),
        }
    }

    /// UNCLEAN under deny-unclean: never forwarded; the guard answers every partition
    /// POLICY_VIOLATION.
    #[test]
    fn an_unclean_election_under_deny_unclean_is_answered_policy_violation() {
        let conn = guard(deny_unclean());
        let respond = match decide(&conn, &election(ElectionType::UNCLEAN)) {
            OnRequest::Answer(respond) => respond,
            other => panic!("{}", kind(&other)),
        };
        let (correlation_id, _, partitions) = results(&written(respond, None).unwrap());
        assert_eq!(correlation_id, 7);
        let violation = ErrorCode::POLICY_VIOLATION.0;
        assert_eq!(
            partitions,
            [
                ("payments".to_owned(), 0, violation),
                ("payments".to_owned(), 1, violation),
                ("orders".to_owned(), 0, violation),
            ]
        );
    }

    /// Under `rules.log-only` the same request goes to the broker as it came.
    #[test]
    fn log_only_forwards_what_it_would_refuse() {
        let conn = guard(Policy {
            log_only: true,
            ..deny_unclean()
        });
        let frame = election(ElectionType::UNCLEAN);
        match decide(&conn, &frame) {
            OnRequest::Forward(forward) => {
                assert_eq!(forward.frame, frame);
                assert!(forward.merge.is_none());
            }
            other => panic!("{}", kind(&other)),
        }
    }

    /// A protected topic among others: the broker gets the request without it, and the
    /// client gets the broker's answer merged with the refusal of the protected partitions.
    #[test]
    fn a_partly_refused_request_is_forwarded_trimmed_and_its_answer_merged() {
        let mut policy = Policy::default();
        policy.protected_topics.insert(b"payments"[..].into());
        let conn = guard(policy);
        let forward = match decide(&conn, &election(ElectionType::PREFERRED)) {
            OnRequest::Forward(forward) => forward,
            other => panic!("{}", kind(&other)),
        };
        assert_eq!(forward.wait, Duration::from_secs(5));
        let trimmed = parse_request(&forward.frame).unwrap();
        let topics: Vec<_> = trimmed
            .topic_partitions()
            .unwrap()
            .iter()
            .map(|t| t.topic())
            .collect();
        assert_eq!(topics, [b"orders"]);
        assert_eq!(trimmed.correlation_id(), 7);

        // The broker elects orders-0.
        let elected = [PartitionResultData {
            partition_id: 0,
            ..Default::default()
        }];
        let results_data = [ReplicaElectionResultData {
            topic: b"orders",
            partition_result: &elected,
            ..Default::default()
        }];
        let broker = ElectLeadersResponseData {
            correlation_id: 7,
            replica_election_results: &results_data,
            ..Default::default()
        }
        .encode_to_vec(2)
        .unwrap();
        let merge = forward.merge.expect("the answer is merged");
        let (correlation_id, top, partitions) = results(&written(merge, Some(&broker)).unwrap());
        assert_eq!((correlation_id, top), (7, 0));
        let violation = ErrorCode::POLICY_VIOLATION.0;
        assert_eq!(
            partitions,
            [
                ("orders".to_owned(), 0, 0),
                ("payments".to_owned(), 0, violation),
                ("payments".to_owned(), 1, violation),
            ]
        );
    }

    /// A request the codec cannot read closes the connection, as malformed.
    #[test]
    fn a_malformed_request_closes_the_connection() {
        let mut frame = election(ElectionType::PREFERRED);
        // Cut short inside its topics, the size prefix saying so.
        frame.truncate(frame.len() - 6);
        let size = u32::try_from(frame.len() - 4).unwrap();
        frame[..4].copy_from_slice(&size.to_be_bytes());
        match decide(&guard(Policy::default()), &frame) {
            OnRequest::Close(close) => {
                assert_eq!(close.reason(), CloseReason::Malformed);
                assert!(
                    close
                        .to_string()
                        .starts_with("malformed ElectLeaders request (v2, correlation id 7)"),
                    "{close}"
                );
            }
            other => panic!("{}", kind(&other)),
        }
    }
}
