//! Properties 1 to 3 of the `conn` target, on what each side saw: the frames the broker
//! received against the client's requests (`check_forwarded`), and the answers the client
//! got against its requests and the broker's answers (`check_answers`, with each
//! ElectLeaders answer held to the policy's decision).
//!
//! What the guard must do is `expected`'s model; the memory property (4) and the finish
//! (5) are checked where the run ends (`run`, `driver`).

use std::collections::{HashMap, HashSet};

use kafka_elect_leaders::{
    parse_request, parse_response, peek_request, peek_response, split_frame_with_max, ErrorCode,
};
use kafka_elect_leaders_proxy::{Decision, Policy, Verdict};

use super::expected::{unaudited_change_refusals, Sent};
use super::limits::MAX_FRAME_SIZE;
use super::world::World;

/// The whole frames at the front of `stream`, up to the first malformed size prefix (that
/// a whole frame of the guard's follows the framing is checked by the guard's own writer).
pub(super) fn frames(stream: &[u8], max: usize) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = stream;
    while let Ok((frame, tail)) = split_frame_with_max(rest, max) {
        out.push(frame);
        rest = tail;
    }
    out
}

/// What the broker sent (`stream`), as the guard reads it: by correlation id, the first
/// frame with it and whether that is an answer the fake broker made (its span is in
/// `proper`), not garbage read as a frame.
fn broker_frames<'a>(
    stream: &'a [u8],
    proper: &[(usize, usize)],
) -> HashMap<i32, (&'a [u8], bool)> {
    let mut out = HashMap::new();
    let mut at = 0;
    for frame in frames(stream, MAX_FRAME_SIZE) {
        let span = (at, at + frame.len());
        at += frame.len();
        let Ok(peek) = peek_response(frame) else {
            break;
        };
        out.entry(peek.correlation_id)
            .or_insert_with(|| (frame, proper.contains(&span)));
    }
    out
}

/// Properties 1 to 3, on the client's requests as the guard read them (`sent`, their ids
/// growing).
pub(super) fn check_world(world: &World, sent: &[Sent<'_>], policy: &Policy) {
    let by_id: HashMap<i32, &Sent<'_>> = sent.iter().map(|s| (s.id, s)).collect();
    let broker_got = world.broker_got.borrow();
    check_forwarded(&frames(&broker_got, usize::MAX), &by_id, policy);
    let broker_sent = world.broker_sent.borrow();
    let broker = broker_frames(&broker_sent, &world.broker_proper.borrow());
    let client_got = world.client_got.borrow();
    let answers = frames(&client_got, usize::MAX);
    check_answers(
        &answers,
        &by_id,
        &broker,
        world.broker_misbehaved.get(),
        policy,
    );
}

/// (topic, partition) of each partition an ElectLeaders request names, in order.
fn named(frame: &[u8]) -> Vec<(&[u8], i32)> {
    let request = parse_request(frame).expect("classified as parsing");
    request
        .topic_partitions()
        .iter()
        .flat_map(|list| list.iter())
        .flat_map(|t| t.partitions().iter().map(move |p| (t.topic(), p)))
        .collect()
}

/// Property 2: what the broker received, in order, against what the client sent.
pub fn check_forwarded(received: &[&[u8]], sent: &HashMap<i32, &Sent<'_>>, policy: &Policy) {
    let mut last: Option<i32> = None;
    for frame in received {
        let peek = peek_request(frame).expect("the broker got a frame without a request header");
        let id = peek.correlation_id;
        assert!(
            last.map_or(true, |l| l < id),
            "the broker got correlation id {id} after {last:?}: out of order, or twice"
        );
        last = Some(id);
        let Some(request) = sent.get(&id) else {
            panic!(
                "the broker got correlation id {id}, which the client never sent (or sent \
                 after a frame the guard must close on)"
            );
        };
        let Some((version, decision)) = &request.elect else {
            assert!(
                request.change_refused.is_none(),
                "correlation id {id}: a leadership change the policy refuses (API {}) was \
                 forwarded",
                peek.api_key
            );
            assert!(
                *frame == request.frame,
                "correlation id {id}: a frame of API {} not forwarded byte for byte",
                peek.api_key
            );
            continue;
        };
        match decision.verdict {
            Verdict::Forwarded | Verdict::WouldRefuse => assert!(
                *frame == request.frame,
                "correlation id {id}: an ElectLeaders request the policy lets through was \
                 changed"
            ),
            Verdict::Refused => {
                panic!("correlation id {id}: an ElectLeaders request refused whole was forwarded")
            }
            Verdict::Trimmed => {
                let trimmed = parse_request(frame).unwrap_or_else(|e| {
                    panic!("correlation id {id}: the trimmed request does not parse: {e}")
                });
                assert_eq!(trimmed.version(), *version, "correlation id {id}: version");
                let original = parse_request(request.frame).expect("classified as parsing");
                assert_eq!(trimmed.election_type(), original.election_type());
                let kept: Vec<(&[u8], i32)> = named(request.frame)
                    .into_iter()
                    .filter(|(t, _)| !decision.refuses_topic(policy, t))
                    .collect();
                assert_eq!(
                    named(frame),
                    kept,
                    "correlation id {id}: the trimmed request is not the original without \
                     exactly the refused topics"
                );
            }
        }
    }
}

/// Properties 1 and 3: the answers the client got, in order, against its requests and the
/// broker's answers (`broker_misbehaved`: see `ElectBroker`).
pub fn check_answers(
    answers: &[&[u8]],
    sent: &HashMap<i32, &Sent<'_>>,
    broker: &HashMap<i32, (&[u8], bool)>,
    broker_misbehaved: bool,
    policy: &Policy,
) {
    let mut last: Option<i32> = None;
    for answer in answers {
        let id = peek_response(answer)
            .expect("the client got a frame without a response header")
            .correlation_id;
        assert!(
            last.map_or(true, |l| l < id),
            "the client got the answer to correlation id {id} after that to {last:?}: out \
             of order, or twice"
        );
        last = Some(id);
        let Some(request) = sent.get(&id) else {
            panic!("the client got an answer to correlation id {id}, which it never sent");
        };
        let from_broker = broker.get(&id);
        if let Some(refusal) = &request.change_refused {
            assert!(
                *answer == &refusal[..]
                    || unaudited_change_refusals(request.frame, policy)
                        .iter()
                        .any(|r| *answer == &r[..]),
                "correlation id {id}: a refused leadership change not answered with its refusal"
            );
            continue;
        }
        let Some((version, decision)) = &request.elect else {
            if !from_broker.is_some_and(|(frame, _)| answer == frame)
                && unaudited_change_refusals(request.frame, policy)
                    .iter()
                    .any(|r| *answer == &r[..])
            {
                // A change the policy allows, refused because it could not be audited.
                continue;
            }
            if guard_refused_mechanism(request.frame, answer) {
                continue;
            }
            let Some((frame, _)) = from_broker else {
                panic!(
                    "the client got an answer to correlation id {id} that the broker never \
                     sent (a Produce with acks=0 gets none)"
                );
            };
            assert!(
                answer == frame,
                "correlation id {id}: the broker's answer not passed on byte for byte"
            );
            continue;
        };
        let from_broker = ElectBroker {
            frame: from_broker,
            misbehaved: broker_misbehaved,
        };
        check_elect_answer(
            answer,
            id,
            *version,
            decision,
            request.frame,
            from_broker,
            policy,
        );
    }
}

/// A SaslHandshake the guard answered itself: a mechanism it cannot read a principal
/// from, refused with UNSUPPORTED_SASL_MECHANISM (33) and never forwarded (see the
/// proxy's `identity`).
fn guard_refused_mechanism(request: &[u8], answer: &[u8]) -> bool {
    peek_request(request).is_ok_and(|p| p.api_key == 17) && answer.get(8..10) == Some(&[0, 33])
}

/// What the broker did for one ElectLeaders request.
struct ElectBroker<'a> {
    /// The first frame it wrote with the request's correlation id, and whether the fake
    /// broker made it (not garbage read as a frame).
    frame: Option<&'a (&'a [u8], bool)>,
    /// The broker skipped requests, answered unknown ids or wrote garbage: the guard may
    /// then give up on the answers it waits for, and answer a trimmed request with its
    /// refusals alone.
    misbehaved: bool,
}

/// One ElectLeaders answer (property 3, and 1's byte-for-byte rule where nothing is refused).
fn check_elect_answer(
    answer: &[u8],
    id: i32,
    version: i16,
    decision: &Decision,
    request: &[u8],
    broker: ElectBroker<'_>,
    policy: &Policy,
) {
    const POLICY_VIOLATION: i16 = ErrorCode::POLICY_VIOLATION.0;
    let response = parse_response(answer, version).unwrap_or_else(|e| {
        panic!("correlation id {id}: the ElectLeaders answer does not parse at v{version}: {e}")
    });
    // (topic, partition, error code), in the answer's order.
    let mut results: Vec<(&[u8], i32, i16)> = Vec::new();
    let mut unaudited = version == 0 || response.error_code() == ErrorCode::POLICY_VIOLATION;
    for topic in response.replica_election_results() {
        for p in topic.partition_result() {
            results.push((topic.topic(), p.partition_id(), p.error_code().0));
            if unaudited {
                let message = p.error_message().unwrap_or_default();
                unaudited = p.error_code() == ErrorCode::POLICY_VIOLATION
                    && message
                        .windows(b"cannot be audited".len())
                        .any(|w| w == b"cannot be audited");
            }
        }
    }
    // The audit log lagged: the whole request refused (see the module's comment); never
    // under --log-only, where the checks below find it a violation.
    if unaudited && !policy.log_only {
        return;
    }
    let broker_frame = broker.frame.map(|(frame, _)| *frame);
    let requested = named(request);
    let refused = |topic: &[u8]| decision.refuses_topic(policy, topic);
    match decision.verdict {
        Verdict::Forwarded | Verdict::WouldRefuse => {
            assert!(
                Some(answer) == broker_frame,
                "correlation id {id}: a forwarded ElectLeaders request's answer is not the \
                 broker's"
            );
            return;
        }
        Verdict::Trimmed if broker_frame.is_none() => {
            assert!(
                broker.misbehaved,
                "correlation id {id}: answered before the broker answered the trimmed request"
            );
            // Given up on the broker's answer: the refusals alone.
            let mut want: Vec<(&[u8], i32, i16)> = requested
                .iter()
                .filter(|(t, _)| refused(t))
                .map(|&(t, p)| (t, p, POLICY_VIOLATION))
                .collect();
            results.sort_unstable();
            want.sort_unstable();
            assert!(
                results == want,
                "correlation id {id}: a trimmed request answered without the broker, with \
                 other than its refusals"
            );
            return;
        }
        Verdict::Trimmed if broker.misbehaved => {
            // The broker answered unknown ids or wrote garbage: the guard may have given up
            // on its answers before this one came (an unknown id read while every slot is
            // taken means the broker is out of step), and answered the refusals alone. Found
            // by the campaign at c700b91 (corpus/regressions/conn/trimmed-answered-alone-after-unknown-ids): the
            // broker's answer to the trimmed request was whole in the stream, behind answers
            // to ids no request had.
            let mut alone: Vec<(&[u8], i32, i16)> = requested
                .iter()
                .filter(|(t, _)| refused(t))
                .map(|&(t, p)| (t, p, POLICY_VIOLATION))
                .collect();
            let mut sorted = results.clone();
            sorted.sort_unstable();
            alone.sort_unstable();
            if sorted == alone {
                return;
            }
        }
        Verdict::Trimmed | Verdict::Refused => {}
    }
    let proper = broker.frame.is_some_and(|(_, proper)| *proper);
    if decision.verdict == Verdict::Refused || proper {
        // With the fake broker's own answer (or none): exactly the partitions asked, those
        // refused with 44, the others with the broker's 0. In the order the guard writes
        // them (the broker's part first), else in any order.
        let kept = requested.iter().filter(|(t, _)| !refused(t));
        let refusals = requested.iter().filter(|(t, _)| refused(t));
        let mut want: Vec<(&[u8], i32, i16)> = kept
            .map(|&(t, p)| (t, p, 0))
            .chain(refusals.map(|&(t, p)| (t, p, POLICY_VIOLATION)))
            .collect();
        if results != want {
            results.sort_unstable();
            want.sort_unstable();
            assert!(
                results == want,
                "correlation id {id}: the answer's partitions and codes are not those asked \
                 (refused ones 44, the others the broker's 0): top-level {:?}, got {} {:?}, \
                 want {} {:?}",
                response.error_code(),
                results.len(),
                &results[..results.len().min(8)],
                want.len(),
                &want[..want.len().min(8)]
            );
        }
        return;
    }
    // Merged with a broker's answer that is not the fake broker's (garbage read as one):
    // every refused partition answered 44 all the same.
    let answered_44: HashSet<(&[u8], i32)> = results
        .iter()
        .filter(|(_, _, code)| *code == POLICY_VIOLATION)
        .map(|&(t, p, _)| (t, p))
        .collect();
    for &(topic, partition) in requested.iter().filter(|(t, _)| refused(t)) {
        assert!(
            answered_44.contains(&(topic, partition)),
            "correlation id {id}: refused partition {}-{partition} not answered \
             POLICY_VIOLATION",
            String::from_utf8_lossy(topic)
        );
    }
}
