//! What the proxy writes for a decision, all with the crate's writer: the trimmed request
//! that goes to the broker (`RequestEdit`), the refusal of a whole request (`ErrorResponse`,
//! Kafka's `getErrorResponse`), and per-partition refusals, alone or merged with the
//! broker's answer to the trimmed request (`ElectLeadersResponseData`).

use bytes::BytesMut;
use kafka_elect_leaders::{
    ElectLeadersRequest, ElectLeadersResponse, ElectLeadersResponseData, EncodeError,
    EncodeRequestExt, EncodeResponseExt, ErrorCode, PartitionResultData, ReplicaElectionResultData,
    TaggedFieldData, TaggedFields, TopicPartitions,
};

use crate::policy::{Decision, Policy, Refusal};

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
/// when there is one.
pub fn encode_refusal(
    policy: &Policy,
    decision: &Decision,
    request: &ElectLeadersRequest<'_>,
    broker: Option<&ElectLeadersResponse<'_>>,
    out: &mut BytesMut,
) -> Result<usize, EncodeError> {
    if let (Refusal::Whole { message }, None) = (&decision.refusal, broker) {
        // At v0, which has no top-level ErrorCode, a request for all partitions gets an
        // empty result list: what Kafka's own getErrorResponse gives at v0. The message is
        // in every partition's answer, so a request of more than MESSAGES partitions gets
        // none (see MESSAGES).
        let message =
            Some(message.as_bytes()).filter(|_| decision.requested.unwrap_or(0) <= MESSAGES);
        return request
            .error_response(ErrorCode::POLICY_VIOLATION, message)
            .encode_buf(request.version(), out);
    }
    encode_partition_refusals(policy, decision, request, broker, out)
}

/// Tagged fields as the writer takes them, collected from a view.
fn collect_tags<'a>(
    fields: TaggedFields<'a>,
    into: &mut Vec<TaggedFieldData<'a>>,
) -> (usize, usize) {
    let start = into.len();
    into.extend(
        fields
            .iter()
            .map(|f| TaggedFieldData::new(f.tag(), f.data())),
    );
    (start, into.len())
}

/// Where `[start, end)` of a topic result's partitions and tagged fields lie in the flat
/// vectors.
type Span = (usize, usize);

/// A topic result, before the slices it takes can be borrowed.
type ResultSpan<'a> = (&'a [u8], Span, Span);

fn encode_partition_refusals(
    policy: &Policy,
    decision: &Decision,
    request: &ElectLeadersRequest<'_>,
    broker: Option<&ElectLeadersResponse<'_>>,
    out: &mut BytesMut,
) -> Result<usize, EncodeError> {
    // The writer takes borrowed slices, two levels deep: the broker's tagged fields first,
    // then every partition result, then the topic results that slice them.
    let mut tags: Vec<TaggedFieldData<'_>> = Vec::new();
    let mut partition_tags = Vec::new();
    let mut result_tags = Vec::new();
    let (header_tags, body_tags) = match broker {
        Some(b) => (
            collect_tags(b.header().tagged_fields(), &mut tags),
            collect_tags(b.tagged_fields(), &mut tags),
        ),
        None => ((0, 0), (0, 0)),
    };
    if let Some(b) = broker {
        for result in b.replica_election_results() {
            for p in result.partition_result() {
                partition_tags.push(collect_tags(p.tagged_fields(), &mut tags));
            }
            result_tags.push(collect_tags(result.tagged_fields(), &mut tags));
        }
    }

    let mut partitions: Vec<PartitionResultData<'_>> = Vec::new();
    let mut results: Vec<ResultSpan<'_>> = Vec::new();
    let mut messages = MESSAGES;
    if let Some(b) = broker {
        let mut next_tags = partition_tags.iter();
        for (result, &rtags) in b.replica_election_results().iter().zip(&result_tags) {
            let start = partitions.len();
            for p in result.partition_result() {
                let (ts, te) = next_tags.next().copied().unwrap_or((0, 0));
                partitions.push(PartitionResultData {
                    partition_id: p.partition_id(),
                    error_code: p.error_code(),
                    error_message: p.error_message(),
                    tagged_fields: &tags[ts..te],
                });
            }
            results.push((result.topic(), (start, partitions.len()), rtags));
        }
    }
    for entry in request
        .topic_partitions()
        .into_iter()
        .flat_map(|l| l.iter())
    {
        if !decision.refuses_topic(policy, entry.topic()) {
            continue;
        }
        let message = decision.partition_message(policy, entry.topic());
        let start = partitions.len();
        partitions.extend(entry.partitions().iter().map(|p| {
            let with_message = messages > 0;
            messages = messages.saturating_sub(1);
            PartitionResultData {
                partition_id: p,
                error_code: ErrorCode::POLICY_VIOLATION,
                error_message: with_message.then_some(message.as_bytes()),
                tagged_fields: &[],
            }
        }));
        results.push((entry.topic(), (start, partitions.len()), (0, 0)));
    }
    let results: Vec<ReplicaElectionResultData<'_>> = results
        .iter()
        .map(|&(topic, (ps, pe), (ts, te))| ReplicaElectionResultData {
            topic,
            partition_result: &partitions[ps..pe],
            tagged_fields: &tags[ts..te],
        })
        .collect();
    let response = ElectLeadersResponseData {
        correlation_id: request.correlation_id(),
        header_tagged_fields: &tags[header_tags.0..header_tags.1],
        throttle_time_ms: broker.map_or(0, |b| b.throttle_time_ms()),
        error_code: broker.map_or(ErrorCode::NONE, |b| b.error_code()),
        replica_election_results: &results,
        tagged_fields: &tags[body_tags.0..body_tags.1],
    };
    response.encode_buf(request.version(), out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_elect_leaders::VERSIONS;
    use kafka_elect_leaders::{
        parse_request, parse_response, ElectLeadersRequestData, ElectionType, TopicPartitionsData,
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
}
