//! The leadership-change policy on the APIs other than ElectLeaders that can change who
//! leads a protected partition or enable unclean election (see `crate::filters::leadership`, which
//! reads them, decides and writes the refusals): each such request is read and decided
//! whenever the policy has a rule about leadership, audited, and forwarded or answered
//! with the API's own refusal; a version the guard does not read or a request it cannot
//! read closes the connection. (The APIs only brokers send are closed before, by the
//! doors: `crate::filters::doors::apis`.)

use kafka_elect_leaders::RequestPeek;

use super::api::Api;
use super::audit;
use super::decision::ChangeDecision;
use super::read::read_request;
use super::refuse::encode_refusal_with;
use crate::core::close::{Close, CloseReason};
use crate::filter::{Filter, Forward, Gate, OnRequest, Request, Respond, Session, Wait};
use crate::filters::elect::policy::Verdict;
use crate::observability::audit::{log_only, Pending};
use crate::observability::diag::log;

/// The leadership-change policy on every API other than ElectLeaders that can change a
/// partition's leader or lose acknowledged records (configs, reassignments, topic and
/// record deletion), audited.
#[derive(Clone, Copy, Debug, Default)]
pub struct Leadership;

impl Filter for Leadership {
    fn name(&self) -> &'static str {
        "leadership"
    }

    fn reads_request(&self, api_key: i16) -> bool {
        Api::of(api_key).is_some()
    }

    /// Its own audit lines fill the client's share of the audit queue: wait for them to be
    /// written (not under `rules.log-only`, which never holds a request back, nor for a
    /// request the policy in force does not read).
    fn ready<'a>(&'a self, session: &'a Session, request: &RequestPeek) -> Option<Wait<'a>> {
        let api = Api::of(request.api_key)?;
        let policy = session.policy();
        if !policy.reads_change(api) || log_only(&policy, session.principal().as_deref()) {
            return None;
        }
        Some(Box::pin(session.parts().audit.ready()))
    }

    fn request(&self, session: &Session, request: &mut Request) -> OnRequest {
        let peek = *request.peek();
        match police_change(session, request.frame(), peek) {
            Ok(Policed::Pass) => OnRequest::Pass,
            Ok(Policed::Answer(reply)) => OnRequest::Answer(Respond::frame(reply)),
            Ok(Policed::Held(pending, decision)) => {
                let frame = request.keep();
                let gate = held_until_acknowledged(session, frame.clone(), peek, pending, decision);
                OnRequest::Forward(Forward::new(frame).after(gate))
            }
            Err(close) => OnRequest::Close(close),
        }
    }
}

/// What becomes of a leadership-change request.
enum Policed {
    /// Forwarded as it came (not read, or allowed).
    Pass,
    /// Allowed, and forwarded once its record is acknowledged ([`Pending`]).
    Held(Pending, ChangeDecision),
    /// Refused: this answer instead.
    Answer(bytes::Bytes),
}

/// The gate of a change allowed whose record's acknowledgement it waits for: open once
/// acknowledged; otherwise the change is refused as one that could not be audited (the
/// API's own refusal, the reason in its message), said in the guard's log, and the
/// refusal audited as a record of its own.
fn held_until_acknowledged(
    session: &Session,
    frame: bytes::Bytes,
    peek: RequestPeek,
    pending: Pending,
    decision: ChangeDecision,
) -> Gate {
    let session = session.clone();
    Box::pin(async move {
        let why = match pending.wait().await {
            Ok(()) => return Ok(()),
            Err(why) => why,
        };
        let conn = session.conn();
        let Some(api) = Api::of(peek.api_key) else {
            return Ok(());
        };
        log(format_args!(
            "{} -> {}: {} request (correlation id {}) refused: {why}",
            conn.client,
            conn.upstream,
            api.name(),
            peek.correlation_id,
        ));
        // Read again: it was read when decided, so it reads.
        let request = read_request(api, peek.api_version, &frame)
            .map_err(|e| Respond::later(0, move |_, _| Err(Close::new(e.to_string()))))?;
        let decision = decision.unaudited(&why);
        let principal = session.principal();
        let line = audit::line(conn, principal.as_deref(), &request, &decision);
        if let Err(e) = session.parts().audit.record_line(line) {
            log(format_args!(
                "{} -> {}: the refusal of {} (correlation id {}) is not audited: {}",
                conn.client,
                conn.upstream,
                api.name(),
                peek.correlation_id,
                e.reason()
            ));
        }
        let mut reply = bytes::BytesMut::new();
        encode_refusal_with(&request, &decision, &session.policy(), &mut reply);
        Err(Respond::frame(reply.freeze()))
    })
}

/// None to forward the request (not an API the policy reads, no rule that concerns
/// leadership, or allowed), the answer to send instead when it is refused; an error closes
/// the connection (a request the guard cannot read, of a version it does not know, or one
/// no client sends).
fn police_change(session: &Session, frame: &[u8], peek: RequestPeek) -> Result<Policed, Close> {
    let conn = session.conn();
    let Some(api) = Api::of(peek.api_key) else {
        return Ok(Policed::Pass);
    };
    let policy = session.policy();
    if !policy.reads_change(api) {
        return Ok(Policed::Pass);
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
    if !api.reads(peek.api_version) {
        return Err(refused(format!(
            "the client sent {} v{}, a version the guard does not read (it reads v{}-v{})",
            api.name(),
            peek.api_version,
            api.min_version(),
            api.max_version()
        )));
    }
    let request = read_request(api, peek.api_version, frame).map_err(|e| {
        refused(format!(
            "malformed {} v{} request: {e}",
            api.name(),
            peek.api_version
        ))
    })?;
    let principal = session.principal();
    let mut decision = policy.decide_change(&request, principal.as_deref());
    let log_only = log_only(&policy, principal.as_deref());
    // A change let through waits for its record's acknowledgement when the audit sink's
    // mode says so (never under log-only, which holds nothing back).
    let changes = !log_only && decision.verdict == Verdict::Forwarded;
    let line = audit::line(conn, principal.as_deref(), &request, &decision);
    let mut pending = None;
    let recorded = if changes {
        let audit = &session.parts().audit;
        audit.record_change(line).map(|waits| pending = waits)
    } else {
        session.parts().audit.record_line(line)
    };
    if let Err(e) = recorded.or_else(|e| {
        let what = format_args!("{} (correlation id {})", api.name(), peek.correlation_id);
        session.parts().audit_log.unaudited(log_only, conn, what, e)
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
    session
        .parts()
        .metrics
        .change_decided(api.name(), decision.verdict);
    if decision.verdict != Verdict::Refused {
        return Ok(match pending {
            Some(pending) => Policed::Held(pending, decision),
            None => Policed::Pass,
        });
    }
    let mut reply = bytes::BytesMut::new();
    encode_refusal_with(&request, &decision, &policy, &mut reply);
    Ok(Policed::Answer(reply.freeze()))
}

#[cfg(test)]
mod tests {
    use crate::filters::leadership;
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    use kafka_protocol::messages::delete_records_request::{
        DeleteRecordsPartition, DeleteRecordsTopic,
    };
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    use kafka_protocol::messages::{
        CreateTopicsRequest, CreateTopicsResponse, DeleteRecordsRequest, DeleteRecordsResponse,
        IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, RequestHeader, TopicName,
    };
    use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};

    use super::*;
    use crate::filter::testing::{kafka_request, kind, request, written, Conn};
    use crate::filters::elect::policy::Policy;
    use crate::Config;

    const INCREMENTAL_ALTER_CONFIGS: i16 = 44;
    const CREATE_TOPICS: i16 = 19;
    const DELETE_RECORDS: i16 = 21;
    const TOPIC: i8 = 2;
    const BROKER: i8 = 4;
    const SET: i8 = 0;

    fn s(text: &str) -> StrBytes {
        StrBytes::from_string(text.to_owned())
    }

    /// A request frame from client id `client_id` (correlation id 7).
    fn request_as<M: Encodable + HeaderVersion>(
        client_id: &str,
        api_key: i16,
        version: i16,
        body: &M,
    ) -> Vec<u8> {
        let mut buf = bytes::BytesMut::new();
        RequestHeader::default()
            .with_request_api_key(api_key)
            .with_request_api_version(version)
            .with_correlation_id(7)
            .with_client_id(Some(s(client_id)))
            .encode(&mut buf, M::header_version(version))
            .unwrap();
        body.encode(&mut buf, version).unwrap();
        let mut frame = (buf.len() as i32).to_be_bytes().to_vec();
        frame.extend_from_slice(&buf);
        frame
    }

    /// IncrementalAlterConfigs v1 from `client_id`, setting `config` to `value` on the
    /// resource of type `resource_type` named `name`.
    fn alter_as(
        client_id: &str,
        resource_type: i8,
        name: &str,
        config: &str,
        value: &str,
    ) -> Vec<u8> {
        let body = IncrementalAlterConfigsRequest::default().with_resources(vec![
            AlterConfigsResource::default()
                .with_resource_type(resource_type)
                .with_resource_name(s(name))
                .with_configs(vec![AlterableConfig::default()
                    .with_name(s(config))
                    .with_config_operation(SET)
                    .with_value(Some(s(value)))]),
        ]);
        request_as(client_id, INCREMENTAL_ALTER_CONFIGS, 1, &body)
    }

    /// The body of the guard's answer, decoded by kafka-protocol (correlation id 7).
    fn answered<M: Decodable + HeaderVersion>(decision: OnRequest, version: i16) -> M {
        let respond = match decision {
            OnRequest::Answer(respond) => respond,
            other => panic!("{}", kind(&other)),
        };
        let reply = written(respond, None).unwrap();
        let mut body = bytes::Bytes::copy_from_slice(&reply[4..]);
        let header =
            kafka_protocol::messages::ResponseHeader::decode(&mut body, M::header_version(version))
                .unwrap();
        assert_eq!(header.correlation_id, 7);
        M::decode(&mut body, version).unwrap()
    }

    fn protect(topics: &[&str]) -> Policy {
        let mut policy = Policy::default();
        for topic in topics {
            policy.protected_topics.insert(topic.as_bytes().into());
        }
        policy
    }

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

    /// IncrementalAlterConfigs at `version` (correlation id 7) setting `config` to `value`
    /// on the topic `topic`.
    fn alter(version: i16, topic: &str, config: &str, value: &str) -> Vec<u8> {
        let s = |text: &str| StrBytes::from_string(text.to_owned());
        let body = IncrementalAlterConfigsRequest::default().with_resources(vec![
            AlterConfigsResource::default()
                .with_resource_type(TOPIC)
                .with_resource_name(s(topic))
                .with_configs(vec![AlterableConfig::default()
                    .with_name(s(config))
                    .with_config_operation(SET)
                    .with_value(Some(s(value)))]),
        ]);
        kafka_request(INCREMENTAL_ALTER_CONFIGS, version, 7, &body)
    }

    fn decide(conn: &Conn, frame: &[u8]) -> OnRequest {
        Leadership.request(&conn.session(), &mut request(frame))
    }

    #[test]
    fn reads_the_apis_that_change_leadership() {
        let changes = [19, 20, 21, 33, 37, 44, 45, 64];
        for api_key in -1..200 {
            let reads = changes.contains(&api_key);
            assert_eq!(
                Leadership.reads_request(api_key),
                reads,
                "API key {api_key}"
            );
            assert!(!Leadership.reads_response(api_key));
        }
    }

    /// Setting unclean.leader.election.enable under deny-unclean: never forwarded, answered
    /// with the API's own answer, the resource refused POLICY_VIOLATION.
    #[test]
    fn a_refused_incremental_alter_configs_is_answered() {
        let conn = guard(deny_unclean());
        for version in 0..=1 {
            let frame = alter(
                version,
                "payments",
                "unclean.leader.election.enable",
                "true",
            );
            let respond = match decide(&conn, &frame) {
                OnRequest::Answer(respond) => respond,
                other => panic!("v{version}: {}", kind(&other)),
            };
            let reply = written(respond, None).unwrap();
            let mut body = bytes::Bytes::copy_from_slice(&reply[4..]);
            let header = kafka_protocol::messages::ResponseHeader::decode(
                &mut body,
                IncrementalAlterConfigsResponse::header_version(version),
            )
            .unwrap();
            assert_eq!(header.correlation_id, 7);
            let answer = IncrementalAlterConfigsResponse::decode(&mut body, version).unwrap();
            assert_eq!(answer.responses.len(), 1);
            let refused = &answer.responses[0];
            assert_eq!(refused.resource_name.as_str(), "payments");
            assert_eq!(refused.error_code, leadership::POLICY_VIOLATION);
        }
    }

    /// A change the policy allows, or any change when no rule concerns leadership: the next
    /// filter reads it, and it is forwarded as it came.
    #[test]
    fn an_allowed_change_passes() {
        let allowed = alter(1, "orders", "retention.ms", "1000");
        assert!(matches!(
            decide(&guard(deny_unclean()), &allowed),
            OnRequest::Pass
        ));
        let unclean = alter(1, "payments", "unclean.leader.election.enable", "true");
        assert!(matches!(
            decide(&guard(Policy::default()), &unclean),
            OnRequest::Pass
        ));
    }

    /// A version of a policed API newer than the guard reads: closed, never forwarded.
    #[test]
    fn a_version_the_guard_does_not_read_closes_the_connection() {
        // A v1 request whose header says v2: the header alone decides.
        let mut frame = alter(1, "orders", "retention.ms", "1000");
        frame[6..8].copy_from_slice(&2i16.to_be_bytes());
        match decide(&guard(deny_unclean()), &frame) {
            OnRequest::Close(close) => assert!(
                close.to_string().starts_with(
                    "the client sent IncrementalAlterConfigs v2, a version the guard does not read"
                ),
                "{close}"
            ),
            other => panic!("{}", kind(&other)),
        }
    }

    /// Issue 42: DeleteRecords of a protected topic is answered by the guard, each
    /// partition POLICY_VIOLATION; of another topic, forwarded.
    #[test]
    fn delete_records_of_a_protected_topic_is_answered() {
        let conn = guard(protect(&["payments"]));
        let body = |name: &str| {
            DeleteRecordsRequest::default().with_topics(vec![DeleteRecordsTopic::default()
                .with_name(TopicName(s(name)))
                .with_partitions(vec![
                    DeleteRecordsPartition::default()
                        .with_partition_index(0)
                        .with_offset(-1),
                    DeleteRecordsPartition::default()
                        .with_partition_index(1)
                        .with_offset(-1),
                ])])
        };
        let api = Api::DeleteRecords;
        for version in api.min_version()..=api.max_version() {
            let frame = request_as("admin-1", DELETE_RECORDS, version, &body("payments"));
            let answer: DeleteRecordsResponse = answered(decide(&conn, &frame), version);
            assert_eq!(answer.topics.len(), 1);
            assert_eq!(answer.topics[0].name.0.as_str(), "payments");
            let partitions: Vec<(i32, i16)> = answer.topics[0]
                .partitions
                .iter()
                .map(|p| (p.partition_index, p.error_code))
                .collect();
            assert_eq!(partitions, [(0, 44), (1, 44)], "v{version}");
            let other = request_as("admin-1", DELETE_RECORDS, version, &body("logs"));
            assert!(
                matches!(decide(&conn, &other), OnRequest::Pass),
                "v{version}"
            );
        }
    }

    /// Without a protected topic no rule concerns DeleteRecords: it is not read (Kafka
    /// Streams sends one per commit), so even one the guard could not read is forwarded;
    /// with one, such a request closes the connection.
    #[test]
    fn delete_records_is_read_only_while_topics_are_protected() {
        let truncated = {
            let mut frame = request_as(
                "streams-1",
                DELETE_RECORDS,
                2,
                &DeleteRecordsRequest::default(),
            );
            frame.truncate(frame.len() - 2);
            let size = (frame.len() - 4) as u32;
            frame[..4].copy_from_slice(&size.to_be_bytes());
            frame
        };
        assert!(matches!(
            decide(&guard(deny_unclean()), &truncated),
            OnRequest::Pass
        ));
        assert!(!deny_unclean().reads_change(Api::DeleteRecords));
        assert!(matches!(
            decide(&guard(protect(&["payments"])), &truncated),
            OnRequest::Close(_)
        ));
    }

    /// Issue 42: with only allow-client-id, unclean election enabled through the config
    /// route is refused for a client id not allowed (on a topic and on the cluster
    /// default), and forwarded for one allowed.
    #[test]
    fn the_config_route_to_an_unclean_election_is_held_to_the_allowed_client_ids() {
        let mut policy = Policy::default();
        policy.allowed_client_ids.insert(b"ops"[..].into());
        let conn = guard(policy);
        let unclean = "unclean.leader.election.enable";
        for (resource_type, name) in [(TOPIC, "payments"), (BROKER, "")] {
            let mallory = alter_as("mallory", resource_type, name, unclean, "true");
            let answer: IncrementalAlterConfigsResponse = answered(decide(&conn, &mallory), 1);
            assert_eq!(answer.responses[0].error_code, leadership::POLICY_VIOLATION);
            let message = answer.responses[0].error_message.as_deref().unwrap();
            assert!(message.contains("client id may not"), "{message}");
            let ops = alter_as("ops", resource_type, name, unclean, "true");
            assert!(matches!(decide(&conn, &ops), OnRequest::Pass));
        }
    }

    /// Issue 42: retention.ms of a protected topic refused, of another forwarded; the
    /// broker default it inherits (log.retention.ms) refused while topics are protected.
    #[test]
    fn a_protected_topic_keeps_its_records() {
        let conn = guard(protect(&["payments"]));
        let refused = alter_as("admin-1", TOPIC, "payments", "retention.ms", "1");
        let answer: IncrementalAlterConfigsResponse = answered(decide(&conn, &refused), 1);
        assert_eq!(answer.responses[0].error_code, leadership::POLICY_VIOLATION);
        let message = answer.responses[0].error_message.as_deref().unwrap();
        assert!(message.contains("retention.ms"), "{message}");
        let other = alter_as("admin-1", TOPIC, "logs", "retention.ms", "1");
        assert!(matches!(decide(&conn, &other), OnRequest::Pass));
        let default = alter_as("admin-1", BROKER, "", "log.retention.ms", "1");
        let answer: IncrementalAlterConfigsResponse = answered(decide(&conn, &default), 1);
        assert_eq!(answer.responses[0].error_code, leadership::POLICY_VIOLATION);
        assert_eq!(answer.responses[0].resource_name.as_str(), "");
        let unprotected = guard(deny_unclean());
        assert!(matches!(decide(&unprotected, &default), OnRequest::Pass));
    }

    /// Issue 42: a protected name created with one replica under min-replication 3 is
    /// refused; with three, forwarded.
    #[test]
    fn a_protected_topic_created_with_too_few_replicas_is_refused() {
        let conn = guard(Policy {
            min_replication: Some(3),
            ..protect(&["payments"])
        });
        let body = |replication: i16| {
            CreateTopicsRequest::default().with_topics(vec![CreatableTopic::default()
                .with_name(TopicName(s("payments")))
                .with_num_partitions(1)
                .with_replication_factor(replication)])
        };
        for version in 2..=7 {
            let one = request_as("admin-1", CREATE_TOPICS, version, &body(1));
            let answer: CreateTopicsResponse = answered(decide(&conn, &one), version);
            assert_eq!(answer.topics[0].name.0.as_str(), "payments");
            assert_eq!(answer.topics[0].error_code, leadership::POLICY_VIOLATION);
            let three = request_as("admin-1", CREATE_TOPICS, version, &body(3));
            assert!(
                matches!(decide(&conn, &three), OnRequest::Pass),
                "v{version}"
            );
        }
    }
}
