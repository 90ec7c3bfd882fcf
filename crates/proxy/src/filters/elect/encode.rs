//! What the proxy writes for a decision, all with the crate's writer: the trimmed request
//! that goes to the broker (`RequestEdit`), the refusal of a whole request (`ErrorResponse`,
//! Kafka's `getErrorResponse`), and per-partition refusals, alone or merged with the
//! broker's answer to the trimmed request (`ElectLeadersResponseData`).

use bytes::BytesMut;
use kafka_elect_leaders::{
    has_top_level_error_code, ElectLeadersRequest, ElectLeadersResponse, ElectLeadersResponseData,
    EncodeError, EncodePartitionResult, EncodeReplicaElectionResult, EncodeRequestExt,
    EncodeResponse, EncodeResponseExt, ErrorCode, ErrorResponse, PartitionResult,
    ReplicaElectionResult, TaggedFields, TopicPartitions,
};

use super::policy::{Decision, Policy, Refusal, PARTITION_MESSAGES};

/// Refused partitions whose answer carries the refusal's message, at most. A message is
/// ~100 bytes and a partition in the request 4: were every partition to carry one, a
/// refusal would be ~25 times the request (issue 35, finding 5). Past these, the partitions
/// are answered `POLICY_VIOLATION` without a message (Kafka's clients then show the error's
/// own text), so that the answer stays within about twice the request.
pub const MESSAGES: usize = 64;

/// Appends the request without the refused topics to `out`, under its own correlation id
/// (each client has its own broker connection, so ids need no rewriting).
pub fn encode_trimmed(
    policy: &Policy,
    decision: &Decision,
    request: &ElectLeadersRequest<'_>,
    out: &mut BytesMut,
) -> Result<usize, EncodeError> {
    let keep = |t: &TopicPartitions<'_>| !decision.refuses_topic(policy, t.topic());
    request
        .edit()
        .retain_topics(keep)
        .encode_buf(request.version(), out)
}

/// Appends the proxy's answer to a refused request to `out`: for a whole refusal Kafka's
/// error response; for per-partition refusals, each refused partition answered with
/// `POLICY_VIOLATION`, merged with `broker` (the broker's answer to the trimmed request)
/// when there is one. Measured first, then written into room reserved once at its exact
/// length: a large answer is never grown by doubling, nor built as a list of its entries
/// (a refusal of 4 million partitions was built as 160 MB of entries, issue 42 item 5).
pub fn encode_refusal(
    policy: &Policy,
    decision: &Decision,
    request: &ElectLeadersRequest<'_>,
    broker: Option<&ElectLeadersResponse<'_>>,
    out: &mut BytesMut,
) -> Result<usize, EncodeError> {
    let version = request.version();
    if let (Refusal::Whole { message }, None) = (&decision.refusal, broker) {
        let refusal = whole_refusal(decision, request, message);
        let len = refusal.encoded_len(version)?;
        return refusal.encode_with_len(version, len, out);
    }
    let refusals = PartitionRefusals {
        policy,
        decision,
        request,
        broker,
        texts: Texts::of(policy),
    };
    let len = refusals.encoded_len(version)?;
    refusals.encode_with_len(version, len, out)
}

/// The exact length of the guard's own part of its answer to `request`: the whole answer
/// when the request is refused whole, the refused partitions' results (with a header) when
/// it is trimmed, which the broker's results are merged into. What the answer takes from
/// the buffer budget before it is written (issue 42, item 5: a refusal's answer, about
/// twice its request, was built outside the budget). Walks the request once, as writing
/// the answer does.
pub fn refusal_len(
    policy: &Policy,
    decision: &Decision,
    request: &ElectLeadersRequest<'_>,
) -> Result<usize, EncodeError> {
    let version = request.version();
    if let Refusal::Whole { message } = &decision.refusal {
        return whole_refusal(decision, request, message).encoded_len(version);
    }
    PartitionRefusals {
        policy,
        decision,
        request,
        broker: None,
        texts: Texts::of(policy),
    }
    .encoded_len(version)
}

/// Appends the short answer that refuses `request` when its whole answer could not be
/// given room in the buffer budget: one top-level `POLICY_VIOLATION` and no partition
/// results, or, for a request forwarded trimmed, the broker's results under that error.
/// Kafka's clients fail every partition of a request whose answer has a top-level error.
///
/// Version 0 has no top-level error code: there the answer is the broker's results alone,
/// or an empty list, as Kafka's own error response to a request for all partitions is; a
/// partition left out of an answer is not elected, and Kafka's clients report it so.
/// Its length is a header and the broker's answer, which holds its own share.
pub fn encode_bounded(
    request: &ElectLeadersRequest<'_>,
    broker: Option<&ElectLeadersResponse<'_>>,
    out: &mut BytesMut,
) -> Result<usize, EncodeError> {
    let version = request.version();
    let error_code = if has_top_level_error_code(version) {
        ErrorCode::POLICY_VIOLATION
    } else {
        ErrorCode::NONE
    };
    match broker {
        Some(broker) => {
            let edit = broker
                .edit()
                .correlation_id(request.correlation_id())
                .error_code(error_code);
            let len = edit.encoded_len(version)?;
            edit.encode_with_len(version, len, out)
        }
        None => {
            let answer = ElectLeadersResponseData {
                correlation_id: request.correlation_id(),
                error_code,
                ..Default::default()
            };
            let len = answer.encoded_len(version)?;
            answer.encode_with_len(version, len, out)
        }
    }
}

/// Kafka's error response to a request refused whole. At v0, which has no top-level
/// ErrorCode, a request for all partitions gets an empty result list: what Kafka's own
/// getErrorResponse gives at v0. The message is in every partition's answer, so a request
/// of more than MESSAGES partitions gets none (see MESSAGES).
fn whole_refusal<'a>(
    decision: &Decision,
    request: &ElectLeadersRequest<'a>,
    message: &'a str,
) -> ErrorResponse<'a> {
    let message = Some(message.as_bytes()).filter(|_| decision.requested.unwrap_or(0) <= MESSAGES);
    request.error_response(ErrorCode::POLICY_VIOLATION, message)
}

/// Per-partition refusals as the writer reads them, walked where they lie: the broker's
/// results first (when it answered the trimmed request), then every partition of each
/// refused topic of the request, answered `POLICY_VIOLATION`, the first [`MESSAGES`] of
/// them with the refusal's message. Nothing is collected: each pass of the writer (the
/// measure, then the write) walks the request and the broker's answer again.
struct PartitionRefusals<'p, 'a> {
    policy: &'p Policy,
    decision: &'p Decision,
    request: &'p ElectLeadersRequest<'a>,
    broker: Option<&'p ElectLeadersResponse<'a>>,
    texts: Texts,
}

/// The per-partition messages with the operator's refusal text, made once an answer (none
/// without one: the messages are then the policy's own constants).
struct Texts(Option<Vec<(&'static str, String)>>);

impl Texts {
    fn of(policy: &Policy) -> Texts {
        Texts(policy.refusal_text.is_some().then(|| {
            PARTITION_MESSAGES
                .iter()
                .map(|m| (*m, policy.refusal_message(m).into_owned()))
                .collect()
        }))
    }

    /// `message` (one of [`PARTITION_MESSAGES`]) as the answer carries it.
    fn get(&self, message: &'static str) -> &str {
        match &self.0 {
            None => message,
            Some(texts) => texts
                .iter()
                .find(|(m, _)| *m == message)
                .map_or(message, |(_, text)| text),
        }
    }
}

/// One topic's results: the broker's, or a refused topic of the request with the number
/// of refused partitions before it (which of its partitions still carry the message).
enum TopicResult<'a> {
    Broker(ReplicaElectionResult<'a>),
    Refused {
        entry: TopicPartitions<'a>,
        message: &'a str,
        before: usize,
    },
}

/// One partition's result: the broker's, or a refused one.
enum PartitionEntry<'a> {
    Broker(PartitionResult<'a>),
    Refused {
        partition_id: i32,
        message: Option<&'a [u8]>,
    },
}

/// A view's tagged fields as the writer takes them.
fn tag_pairs<'a>(fields: TaggedFields<'a>) -> impl Iterator<Item = (u32, &'a [u8])> + 'a {
    fields.iter().map(|f| (f.tag(), f.data()))
}

impl EncodeResponse for PartitionRefusals<'_, '_> {
    fn correlation_id(&self) -> i32 {
        self.request.correlation_id()
    }
    fn header_tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        self.broker
            .into_iter()
            .flat_map(|b| tag_pairs(b.header().tagged_fields()))
    }
    fn throttle_time_ms(&self) -> i32 {
        self.broker.map_or(0, |b| b.throttle_time_ms())
    }
    fn error_code(&self) -> ErrorCode {
        self.broker.map_or(ErrorCode::NONE, |b| b.error_code())
    }
    fn replica_election_results(
        &self,
    ) -> impl Iterator<Item = impl EncodeReplicaElectionResult + '_> + '_ {
        let broker = self
            .broker
            .into_iter()
            .flat_map(|b| b.replica_election_results().iter())
            .map(TopicResult::Broker);
        let (policy, decision, texts) = (self.policy, self.decision, &self.texts);
        let refused = self
            .request
            .topic_partitions()
            .into_iter()
            .flat_map(|l| l.iter())
            .filter(move |entry| decision.refuses_topic(policy, entry.topic()))
            .scan(0usize, move |before, entry| {
                let at = *before;
                *before = before.saturating_add(entry.partitions().len());
                Some(TopicResult::Refused {
                    entry,
                    message: texts.get(decision.partition_message(policy, entry.topic())),
                    before: at,
                })
            });
        broker.chain(refused)
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        self.broker
            .into_iter()
            .flat_map(|b| tag_pairs(b.tagged_fields()))
    }
}

impl EncodeReplicaElectionResult for TopicResult<'_> {
    fn topic(&self) -> &[u8] {
        match self {
            TopicResult::Broker(r) => r.topic(),
            TopicResult::Refused { entry, .. } => entry.topic(),
        }
    }
    fn partition_result(&self) -> impl Iterator<Item = impl EncodePartitionResult + '_> + '_ {
        let (broker, refused) = match self {
            TopicResult::Broker(r) => (Some(r.partition_result().iter()), None),
            TopicResult::Refused {
                entry,
                message,
                before,
            } => (None, Some((entry.partitions().iter(), *message, *before))),
        };
        let refused = refused.into_iter().flat_map(|(ids, message, before)| {
            ids.enumerate()
                .map(move |(i, partition_id)| PartitionEntry::Refused {
                    partition_id,
                    message: (before.saturating_add(i) < MESSAGES).then_some(message.as_bytes()),
                })
        });
        broker
            .into_iter()
            .flatten()
            .map(PartitionEntry::Broker)
            .chain(refused)
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        let broker = match self {
            TopicResult::Broker(r) => Some(tag_pairs(r.tagged_fields())),
            TopicResult::Refused { .. } => None,
        };
        broker.into_iter().flatten()
    }
}

impl EncodePartitionResult for PartitionEntry<'_> {
    fn partition_id(&self) -> i32 {
        match self {
            PartitionEntry::Broker(p) => p.partition_id(),
            PartitionEntry::Refused { partition_id, .. } => *partition_id,
        }
    }
    fn error_code(&self) -> ErrorCode {
        match self {
            PartitionEntry::Broker(p) => p.error_code(),
            PartitionEntry::Refused { .. } => ErrorCode::POLICY_VIOLATION,
        }
    }
    fn error_message(&self) -> Option<&[u8]> {
        match self {
            PartitionEntry::Broker(p) => p.error_message(),
            PartitionEntry::Refused { message, .. } => *message,
        }
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        let broker = match self {
            PartitionEntry::Broker(p) => Some(tag_pairs(p.tagged_fields())),
            PartitionEntry::Refused { .. } => None,
        };
        broker.into_iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_elect_leaders::VERSIONS;
    use kafka_elect_leaders::{
        parse_request, parse_response, ElectLeadersRequestData, ElectionType, PartitionResultData,
        ReplicaElectionResultData, TopicPartitionsData,
    };

    fn request(
        version: i16,
        election_type: ElectionType,
        topics: Option<&[TopicPartitionsData<'_>]>,
    ) -> Vec<u8> {
        ElectLeadersRequestData {
            correlation_id: 42,
            client_id: Some(b"ops"),
            election_type,
            topic_partitions: topics,
            ..Default::default()
        }
        .encode_to_vec(version)
        .unwrap()
    }

    /// (topic, partition) -> error code, top-level error code.
    fn results(frame: &[u8], version: i16) -> (Vec<(String, i32, i16)>, i16, i32) {
        let r = parse_response(frame, version).unwrap();
        let mut out = Vec::new();
        for t in r.replica_election_results() {
            for p in t.partition_result() {
                out.push((
                    t.topic_str().unwrap().to_owned(),
                    p.partition_id(),
                    p.error_code().0,
                ));
            }
        }
        (out, r.error_code().0, r.correlation_id())
    }

    const TOPICS: &[TopicPartitionsData<'static>] = &[
        TopicPartitionsData::new(b"orders", &[0, 1]),
        TopicPartitionsData::new(b"payments", &[2]),
    ];

    fn protect() -> Policy {
        Policy {
            protected_topics: [b"payments".to_vec().into_boxed_slice()]
                .into_iter()
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn trimmed_then_merged() {
        let policy = protect();
        for version in VERSIONS {
            let frame = request(version, ElectionType::PREFERRED, Some(TOPICS));
            let view = parse_request(&frame).unwrap();
            let decision = policy.decide(&view);
            let mut trimmed = BytesMut::new();
            encode_trimmed(&policy, &decision, &view, &mut trimmed).unwrap();
            let t = parse_request(&trimmed).unwrap();
            assert_eq!(t.correlation_id(), 42);
            let topics: Vec<_> = t
                .topic_partitions()
                .unwrap()
                .iter()
                .map(|e| e.topic())
                .collect();
            assert_eq!(topics, [b"orders"]);
            // The broker elects orders-0 and says orders-1 needs no election.
            let parts = [
                PartitionResultData {
                    partition_id: 0,
                    ..Default::default()
                },
                PartitionResultData {
                    partition_id: 1,
                    error_code: ErrorCode(84),
                    error_message: Some(b"not needed"),
                    ..Default::default()
                },
            ];
            let results_data = [ReplicaElectionResultData {
                topic: b"orders",
                partition_result: &parts,
                ..Default::default()
            }];
            let broker = ElectLeadersResponseData {
                correlation_id: 42,
                throttle_time_ms: 5,
                replica_election_results: &results_data,
                ..Default::default()
            }
            .encode_to_vec(version)
            .unwrap();
            let broker = parse_response(&broker, version).unwrap();
            let mut merged = BytesMut::new();
            encode_refusal(&policy, &decision, &view, Some(&broker), &mut merged).unwrap();
            let (got, top, cid) = results(&merged, version);
            assert_eq!(
                got,
                [
                    ("orders".into(), 0, 0),
                    ("orders".into(), 1, 84),
                    ("payments".into(), 2, 44)
                ]
            );
            assert_eq!((top, cid), (0, 42));
            assert_eq!(
                parse_response(&merged, version).unwrap().throttle_time_ms(),
                5
            );
        }
    }

    #[test]
    fn whole_refusal_is_kafkas_error_response() {
        let policy = Policy {
            deny_unclean: true,
            ..Default::default()
        };
        let frame = request(2, ElectionType::UNCLEAN, None);
        let view = parse_request(&frame).unwrap();
        let decision = policy.decide(&view);
        let mut out = BytesMut::new();
        encode_refusal(&policy, &decision, &view, None, &mut out).unwrap();
        let (got, top, _) = results(&out, 2);
        assert!(got.is_empty());
        assert_eq!(top, 44);
        // At v0 a whole refusal of named partitions answers each one; no top-level code.
        let policy = Policy {
            max_partitions: Some(1),
            ..Default::default()
        };
        let frame = request(0, ElectionType::PREFERRED, Some(TOPICS));
        let view = parse_request(&frame).unwrap();
        let decision = policy.decide(&view);
        let mut out = BytesMut::new();
        encode_refusal(&policy, &decision, &view, None, &mut out).unwrap();
        let (got, top, _) = results(&out, 0);
        assert_eq!(got.len(), 3);
        assert!(got.iter().all(|g| g.2 == 44));
        assert_eq!(top, 0);
        let r = parse_response(&out, 0).unwrap();
        let message = r
            .replica_election_results()
            .first()
            .unwrap()
            .partition_result()
            .first()
            .unwrap();
        assert!(message
            .error_message_str()
            .unwrap()
            .unwrap()
            .contains("more than the guard allows in one request"));
    }

    /// Issue 35, finding 5: a refusal carried its message in every partition's answer, 25
    /// times the request; now the first MESSAGES partitions do.
    #[test]
    fn a_refusal_of_many_partitions_stays_about_the_size_of_the_request() {
        let many: Vec<i32> = (0..10_000).collect();
        let topics = [
            TopicPartitionsData::new(b"a", &many),
            TopicPartitionsData::new(b"b", &many),
        ];
        for (policy, etype) in [
            (
                Policy {
                    deny_unclean: true,
                    ..Default::default()
                },
                ElectionType::UNCLEAN,
            ),
            (
                Policy {
                    max_partitions: Some(10),
                    ..Default::default()
                },
                ElectionType::PREFERRED,
            ),
        ] {
            for version in VERSIONS {
                let frame = ElectLeadersRequestData {
                    correlation_id: 1,
                    election_type: if version == 0 {
                        ElectionType::PREFERRED
                    } else {
                        etype
                    },
                    topic_partitions: Some(&topics),
                    ..Default::default()
                }
                .encode_to_vec(version)
                .unwrap();
                let view = parse_request(&frame).unwrap();
                let decision = policy.decide(&view);
                if decision.refusal == Refusal::Nothing {
                    continue;
                }
                let mut out = BytesMut::new();
                encode_refusal(&policy, &decision, &view, None, &mut out).unwrap();
                assert!(
                    out.len() < 2 * frame.len() + 16 * 1024,
                    "v{version} {:?}: {} bytes answering {}",
                    decision.refusal,
                    out.len(),
                    frame.len()
                );
                let r = parse_response(&out, version).unwrap();
                let with_message = r
                    .replica_election_results()
                    .iter()
                    .flat_map(|t| t.partition_result().iter())
                    .filter(|p| p.error_message().is_some())
                    .count();
                assert!(with_message <= MESSAGES, "v{version}: {with_message}");
            }
        }
    }

    #[test]
    fn per_partition_refusal_keeps_top_level_none() {
        let policy = Policy {
            deny_unclean: true,
            ..Default::default()
        };
        let frame = request(1, ElectionType::UNCLEAN, Some(TOPICS));
        let view = parse_request(&frame).unwrap();
        let decision = policy.decide(&view);
        let mut out = BytesMut::new();
        encode_refusal(&policy, &decision, &view, None, &mut out).unwrap();
        let (got, top, cid) = results(&out, 1);
        assert_eq!(got.len(), 3);
        assert!(got.iter().all(|g| g.2 == 44));
        assert_eq!((top, cid), (0, 42));
    }

    /// Issue 42, item 5: what the budget is asked for is the answer's exact length, for
    /// every kind of refusal and version; and, for a request forwarded trimmed, no less
    /// than what the refusals add to the broker's answer.
    #[test]
    fn the_length_taken_is_the_answer_written() {
        let many: Vec<i32> = (0..1000).collect();
        let topics = [
            TopicPartitionsData::new(b"orders", &many),
            TopicPartitionsData::new(b"payments", &many),
        ];
        let cases = [
            // Refused whole.
            (
                Policy {
                    max_partitions: Some(10),
                    ..Default::default()
                },
                ElectionType::PREFERRED,
            ),
            // Every partition refused one by one.
            (
                Policy {
                    deny_unclean: true,
                    ..Default::default()
                },
                ElectionType::UNCLEAN,
            ),
            // Trimmed: payments refused, orders forwarded.
            (protect(), ElectionType::PREFERRED),
        ];
        for (policy, etype) in cases {
            for version in VERSIONS {
                let etype = if version == 0 {
                    ElectionType::PREFERRED
                } else {
                    etype
                };
                let frame = request(version, etype, Some(&topics));
                let view = parse_request(&frame).unwrap();
                let decision = policy.decide(&view);
                if decision.refusal == Refusal::Nothing {
                    continue;
                }
                let len = refusal_len(&policy, &decision, &view).unwrap();
                let mut out = BytesMut::new();
                let written = encode_refusal(&policy, &decision, &view, None, &mut out).unwrap();
                assert_eq!((len, out.len()), (written, written), "v{version}");
                assert_eq!(out.capacity(), len, "v{version}: reserved once, exactly");
            }
        }
    }

    /// Issue 42, item 5: an answer the budget had no room for is one top-level error (v1+),
    /// or an empty list at v0, whatever the request's size.
    #[test]
    fn the_bounded_answer_does_not_grow_with_the_request() {
        let many: Vec<i32> = (0..100_000).collect();
        let topics = [TopicPartitionsData::new(b"orders", &many)];
        for version in VERSIONS {
            let frame = request(version, ElectionType::PREFERRED, Some(&topics));
            let view = parse_request(&frame).unwrap();
            let mut out = BytesMut::new();
            encode_bounded(&view, None, &mut out).unwrap();
            assert!(out.len() < 32, "v{version}: {} bytes", out.len());
            let (got, top, cid) = results(&out, version);
            assert!(got.is_empty());
            let expected = if version == 0 { 0 } else { 44 };
            assert_eq!((top, cid), (expected, 42));
        }
    }
}
