//! What the guard must make of the client's stream in the `conn` target: the requests as
//! its codec frames them (`classify`), up to the first it must close the connection on,
//! each with the policy's decision and the refusals the guard answers in its place,
//! including those of a leadership change it could not audit.
//!
//! The model only: comparing it with what each side saw is `checks`'.

use bytes::BytesMut;
use kafka_elect_leaders::{parse_request, peek_request, split_frame_with_max, API_KEY};
use kafka_elect_leaders_proxy::audit::AuditError;
use kafka_elect_leaders_proxy::elect::encode_refusal;
use kafka_elect_leaders_proxy::{apis, leadership};
use kafka_elect_leaders_proxy::{Decision, Policy, Verdict};

use super::limits::MAX_FRAME_SIZE;

/// A request the guard read whole from the client, as it read it.
#[derive(Debug)]
pub struct Sent<'a> {
    /// Its correlation id.
    pub id: i32,
    /// The whole frame, size prefix included.
    pub frame: &'a [u8],
    /// For an ElectLeaders request: its version and the policy's decision.
    pub elect: Option<(i16, Decision)>,
    /// The size of the guard's answer of refusals to it, if it has refusals.
    pub refusal_len: usize,
    /// For a request the leadership-change policy refuses (`leadership`): the answer the
    /// guard writes in its place, never forwarding it.
    pub change_refused: Option<Vec<u8>>,
}

/// What the guard makes of a request of another API: `Err(())` when it closes the
/// connection on it (under any rule, an API only brokers send or a key its table of APIs
/// does not know and the policy does not forward, or a Fetch sent as a follower; under a leadership rule, a version the
/// leadership-change policy does not read, a request it cannot read); None when the
/// leadership-change policy does not read it (or no rule concerns leadership); else its
/// refusal, if refused.
fn police_change(frame: &[u8], policy: &Policy) -> Option<Result<Option<Vec<u8>>, ()>> {
    let peek = peek_request(frame).ok()?;
    let closed = match apis::class_of(peek.api_key) {
        Some(class) => class == apis::Class::Closed,
        None => !policy.forwarded_unknown_apis.contains(&peek.api_key),
    };
    if policy.has_rules() && closed {
        return Some(Err(()));
    }
    // A Fetch as a follower replica, or one not readable to its replica id.
    if policy.has_rules()
        && peek.api_key == 1
        && !matches!(apis::fetch_replica_id(frame, peek.api_version), Some(id) if id < 0)
    {
        return Some(Err(()));
    }
    let api = leadership::Api::of(peek.api_key)?;
    if !policy.reads_change(api) {
        return None;
    }
    if !api.reads(peek.api_version) {
        return Some(Err(()));
    }
    let Ok(request) = leadership::read_request(api, peek.api_version, frame) else {
        return Some(Err(()));
    };
    let decision = policy.decide_change(&request, None);
    if decision.verdict != Verdict::Refused {
        return Some(Ok(None));
    }
    let mut answer = BytesMut::new();
    leadership::encode_refusal(&request, &decision, &mut answer);
    Some(Ok(Some(answer.to_vec())))
}

/// The refusals the guard writes for a leadership change it could not audit, whatever the
/// policy decided (the audit thread's lag depends on scheduling, not on the input). None
/// under `--log-only`, which never refuses.
pub(super) fn unaudited_change_refusals(frame: &[u8], policy: &Policy) -> Vec<Vec<u8>> {
    if policy.log_only {
        return Vec::new();
    }
    let Ok(peek) = peek_request(frame) else {
        return Vec::new();
    };
    let Some(api) = leadership::Api::of(peek.api_key).filter(|api| policy.reads_change(*api))
    else {
        return Vec::new();
    };
    let Ok(request) = leadership::read_request(api, peek.api_version, frame) else {
        return Vec::new();
    };
    let decision = policy.decide_change(&request, None);
    AuditError::ALL
        .iter()
        .map(|e| e.reason())
        .map(|why| {
            let mut answer = BytesMut::new();
            leadership::encode_refusal(&request, &decision.clone().unaudited(why), &mut answer);
            answer.to_vec()
        })
        .collect()
}

/// The client's stream as the guard reads it: the whole frames up to the first it must
/// close the connection on (a size prefix negative or past the largest frame, a frame too
/// short for a request header, an ElectLeaders request that does not parse). Also whether
/// their correlation ids grow (the harness sends them growing; a frame left unfinished can
/// make the next ones read at the wrong place).
pub fn classify<'a>(stream: &'a [u8], policy: &Policy) -> (Vec<Sent<'a>>, bool) {
    let mut sent: Vec<Sent<'a>> = Vec::new();
    let mut growing = true;
    let mut rest = stream;
    while let Ok((frame, tail)) = split_frame_with_max(rest, MAX_FRAME_SIZE) {
        rest = tail;
        let Ok(peek) = peek_request(frame) else {
            break;
        };
        let mut refusal_len = 0;
        let mut change_refused = None;
        if peek.api_key != API_KEY {
            match police_change(frame, policy) {
                Some(Err(())) => break,
                Some(Ok(Some(answer))) => {
                    refusal_len = answer.len();
                    change_refused = Some(answer);
                }
                Some(Ok(None)) | None => {}
            }
        }
        let elect = if peek.api_key == API_KEY {
            let Ok(request) = parse_request(frame) else {
                break;
            };
            let decision = policy.decide(&request);
            if matches!(decision.verdict, Verdict::Refused | Verdict::Trimmed) {
                let mut answer = BytesMut::new();
                refusal_len =
                    encode_refusal(policy, &decision, &request, None, &mut answer).unwrap_or(0);
            }
            Some((request.version(), decision))
        } else {
            None
        };
        if sent.last().is_some_and(|s| s.id >= peek.correlation_id) {
            growing = false;
        }
        sent.push(Sent {
            id: peek.correlation_id,
            frame,
            elect,
            refusal_len,
            change_refused,
        });
    }
    (sent, growing)
}
