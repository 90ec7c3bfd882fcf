//! Models: arbitrary messages, encoded by the writer, parsed back.

use super::*;

/// Unknown tagged fields; `sorted` makes them valid (ascending, unique) most of the time.
#[derive(Arbitrary, Debug, Clone)]
pub struct TagsModel {
    /// Sort the fields by tag and drop repeated tags before use.
    pub sorted: bool,
    /// The fields: tag and data.
    pub fields: Vec<(u32, Vec<u8>)>,
}

impl TagsModel {
    fn fields(&self) -> Vec<(u32, Vec<u8>)> {
        let mut fields = self.fields.clone();
        if self.sorted {
            fields.sort_by_key(|f| f.0);
            fields.dedup_by_key(|f| f.0);
        }
        fields
    }
}

pub(crate) fn tag_data(fields: &[(u32, Vec<u8>)]) -> Vec<TaggedFieldData<'_>> {
    fields
        .iter()
        .map(|(t, d)| TaggedFieldData::new(*t, d))
        .collect()
}

pub(crate) fn tags_in_order(fields: &[(u32, Vec<u8>)]) -> bool {
    fields.windows(2).all(|w| w[0].0 < w[1].0)
}

pub(crate) fn same_tags(parsed: TaggedFields<'_>, model: &[(u32, Vec<u8>)]) {
    let got: Vec<(u32, &[u8])> = parsed.iter().map(|f| (f.tag(), f.data())).collect();
    let want: Vec<(u32, &[u8])> = model.iter().map(|(t, d)| (*t, &d[..])).collect();
    assert_eq!(got, want);
}

/// A request's `TopicPartitions` entry.
#[derive(Arbitrary, Debug)]
pub struct TopicModel {
    /// `Topic`: any bytes, UTF-8 or not, any length.
    pub topic: Vec<u8>,
    /// `Partitions`.
    pub partitions: Vec<i32>,
    /// The entry's unknown tagged fields.
    pub tags: TagsModel,
}

/// An ElectLeaders request, any values, for any version.
#[derive(Arbitrary, Debug)]
pub struct RequestModel {
    /// The version, taken modulo one more than the number of versions (one past the last).
    pub version: u8,
    /// The header's correlation id.
    pub correlation_id: i32,
    /// The header's client id; `None` is null.
    pub client_id: Option<Vec<u8>>,
    /// The header's unknown tagged fields.
    pub header_tags: TagsModel,
    /// `ElectionType`, any value (a v0 request can carry only 0).
    pub election_type: i8,
    /// `TopicPartitions`; `None` is null, all partitions.
    pub topic_partitions: Option<Vec<TopicModel>>,
    /// `TimeoutMs`.
    pub timeout_ms: i32,
    /// The body's unknown tagged fields.
    pub tags: TagsModel,
}

/// Encodes an arbitrary request model and checks the writer's answer: refused exactly when
/// the version cannot carry it, otherwise parsed back to the same values.
pub fn check_roundtrip_request(data: &[u8]) {
    let Ok(model) = RequestModel::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let _ = encode_request_model(&model);
}

/// Encodes `model` (checking everything on the way) and returns the frame, if the writer
/// accepted it.
pub fn encode_request_model(model: &RequestModel) -> Option<Vec<u8>> {
    let version = version_or_one_past(model.version);
    let header_tags = model.header_tags.fields();
    let body_tags = model.tags.fields();
    let topic_tags: Vec<Vec<(u32, Vec<u8>)>> = model
        .topic_partitions
        .iter()
        .flatten()
        .map(|t| t.tags.fields())
        .collect();
    let topic_tag_data: Vec<Vec<TaggedFieldData<'_>>> =
        topic_tags.iter().map(|t| tag_data(t)).collect();
    let topics: Option<Vec<TopicPartitionsData<'_>>> =
        model.topic_partitions.as_ref().map(|list| {
            list.iter()
                .zip(&topic_tag_data)
                .map(|(t, tags)| TopicPartitionsData {
                    topic: &t.topic,
                    partitions: &t.partitions,
                    tagged_fields: tags,
                })
                .collect()
        });
    let header_tag_data = tag_data(&header_tags);
    let body_tag_data = tag_data(&body_tags);
    let request = ElectLeadersRequestData {
        correlation_id: model.correlation_id,
        client_id: model.client_id.as_deref(),
        header_tagged_fields: &header_tag_data,
        election_type: ElectionType(model.election_type),
        topic_partitions: topics.as_deref(),
        timeout_ms: model.timeout_ms,
        tagged_fields: &body_tag_data,
    };

    // What the writer must refuse, from the model alone.
    let mut refusals = Vec::new();
    if !is_supported(version) {
        refusals.push(EncodeErrorKind::UnsupportedVersion(version));
    }
    if version == 0 && model.election_type != 0 {
        refusals.push(EncodeErrorKind::NonDefaultValue { version });
    }
    let all_tags = || {
        std::iter::once(&header_tags)
            .chain(&topic_tags)
            .chain(std::iter::once(&body_tags))
    };
    if version < 2 && all_tags().any(|t| !t.is_empty()) {
        refusals.push(EncodeErrorKind::TaggedFieldsUnsupported { version });
    }
    if version == 2 && !all_tags().all(|t| tags_in_order(t)) {
        refusals.push(EncodeErrorKind::TaggedFieldOrder {
            tag: 0,
            previous: 0,
        });
    }
    let strings = model
        .client_id
        .iter()
        .chain(model.topic_partitions.iter().flatten().map(|t| &t.topic));
    if strings.clone().any(|s| s.len() > 32767) {
        refusals.push(EncodeErrorKind::StringTooLong { len: 0 });
    }

    let answer = request.encoded_len(version);
    let len = match answer {
        Err(e) => {
            assert!(
                refusals.iter().any(|r| same_kind(r, &e.kind)),
                "refused {e} but expected {refusals:?}"
            );
            return None;
        }
        Ok(len) => {
            assert!(refusals.is_empty(), "accepted, but expected {refusals:?}");
            len
        }
    };
    // Every shorter buffer is refused with the exact length, untouched.
    let mut short = vec![0x5au8; len - 1];
    let e = request.encode(version, &mut short).unwrap_err();
    assert_eq!(e.kind, EncodeErrorKind::BufferTooSmall { needed: len });
    assert!(short.iter().all(|&b| b == 0x5a));

    let mut out = vec![0u8; len];
    assert_eq!(request.encode(version, &mut out), Ok(len));
    assert_eq!(
        canonical_request(&out),
        Some(true),
        "the writer's frame is canonical"
    );
    let parsed = parse_request(&out).expect("a written request parses");
    assert_eq!(parsed.version(), version);
    assert_eq!(parsed.correlation_id(), model.correlation_id);
    assert_eq!(parsed.header().client_id(), model.client_id.as_deref());
    same_tags(parsed.header().tagged_fields(), &header_tags);
    let expected_type = if version == 0 { 0 } else { model.election_type };
    assert_eq!(parsed.election_type(), ElectionType(expected_type));
    match (parsed.topic_partitions(), &model.topic_partitions) {
        (None, None) => {}
        (Some(got), Some(want)) => {
            assert_eq!(got.len(), want.len());
            for ((g, w), tags) in got.iter().zip(want).zip(&topic_tags) {
                assert_eq!(g.topic(), &w.topic[..]);
                assert!(g.partitions().iter().eq(w.partitions.iter().copied()));
                same_tags(g.tagged_fields(), tags);
            }
        }
        (got, want) => panic!("null-ness changed: {got:?} vs {want:?}"),
    }
    assert_eq!(parsed.timeout_ms(), model.timeout_ms);
    same_tags(parsed.tagged_fields(), &body_tags);
    // The parsed view re-encodes to the same bytes.
    let mut again = vec![0u8; len];
    assert_eq!(parsed.encode(version, &mut again), Ok(len));
    assert_eq!(again, out);
    Some(out)
}

pub(crate) fn same_kind(a: &EncodeErrorKind, b: &EncodeErrorKind) -> bool {
    core::mem::discriminant(a) == core::mem::discriminant(b)
}

/// A response's `PartitionResult` entry.
#[derive(Arbitrary, Debug)]
pub struct PartitionModel {
    /// `PartitionId`.
    pub partition_id: i32,
    /// `ErrorCode`, any value.
    pub error_code: i16,
    /// `ErrorMessage`; `None` is null.
    pub error_message: Option<Vec<u8>>,
    /// The entry's unknown tagged fields.
    pub tags: TagsModel,
}

/// A response's `ReplicaElectionResults` entry.
#[derive(Arbitrary, Debug)]
pub struct ResultModel {
    /// `Topic`: any bytes.
    pub topic: Vec<u8>,
    /// `PartitionResult`.
    pub partitions: Vec<PartitionModel>,
    /// The entry's unknown tagged fields.
    pub tags: TagsModel,
}

/// An ElectLeaders response, any values, for any version.
#[derive(Arbitrary, Debug)]
pub struct ResponseModel {
    /// The version, taken modulo one more than the number of versions (one past the last).
    pub version: u8,
    /// The header's correlation id.
    pub correlation_id: i32,
    /// The header's unknown tagged fields (v2).
    pub header_tags: TagsModel,
    /// `ThrottleTimeMs`.
    pub throttle_time_ms: i32,
    /// The top-level `ErrorCode`, any value (a v0 response can carry only 0).
    pub error_code: i16,
    /// `ReplicaElectionResults`.
    pub results: Vec<ResultModel>,
    /// The body's unknown tagged fields.
    pub tags: TagsModel,
}

/// The response counterpart of [`check_roundtrip_request`].
pub fn check_roundtrip_response(data: &[u8]) {
    let Ok(model) = ResponseModel::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let version = version_or_one_past(model.version);
    let header_tags = model.header_tags.fields();
    let body_tags = model.tags.fields();
    let result_tags: Vec<_> = model.results.iter().map(|r| r.tags.fields()).collect();
    let partition_tags: Vec<Vec<_>> = model
        .results
        .iter()
        .map(|r| r.partitions.iter().map(|p| p.tags.fields()).collect())
        .collect();
    let result_tag_data: Vec<_> = result_tags.iter().map(|t| tag_data(t)).collect();
    let partition_tag_data: Vec<Vec<_>> = partition_tags
        .iter()
        .map(|ps| ps.iter().map(|t| tag_data(t)).collect())
        .collect();
    let partitions: Vec<Vec<PartitionResultData<'_>>> = model
        .results
        .iter()
        .zip(&partition_tag_data)
        .map(|(r, tags)| {
            r.partitions
                .iter()
                .zip(tags)
                .map(|(p, t)| PartitionResultData {
                    partition_id: p.partition_id,
                    error_code: ErrorCode(p.error_code),
                    error_message: p.error_message.as_deref(),
                    tagged_fields: t,
                })
                .collect()
        })
        .collect();
    let results: Vec<ReplicaElectionResultData<'_>> = model
        .results
        .iter()
        .zip(&partitions)
        .zip(&result_tag_data)
        .map(|((r, ps), t)| ReplicaElectionResultData {
            topic: &r.topic,
            partition_result: ps,
            tagged_fields: t,
        })
        .collect();
    let header_tag_data = tag_data(&header_tags);
    let body_tag_data = tag_data(&body_tags);
    let response = ElectLeadersResponseData {
        correlation_id: model.correlation_id,
        header_tagged_fields: &header_tag_data,
        throttle_time_ms: model.throttle_time_ms,
        error_code: ErrorCode(model.error_code),
        replica_election_results: &results,
        tagged_fields: &body_tag_data,
    };

    let mut refusals = Vec::new();
    if !is_supported(version) {
        refusals.push(EncodeErrorKind::UnsupportedVersion(version));
    }
    if version == 0 && model.error_code != 0 {
        refusals.push(EncodeErrorKind::NonDefaultValue { version });
    }
    let all_tags: Vec<&Vec<(u32, Vec<u8>)>> = std::iter::once(&header_tags)
        .chain(&result_tags)
        .chain(partition_tags.iter().flatten())
        .chain(std::iter::once(&body_tags))
        .collect();
    if version < 2 && all_tags.iter().any(|t| !t.is_empty()) {
        refusals.push(EncodeErrorKind::TaggedFieldsUnsupported { version });
    }
    if version == 2 && !all_tags.iter().all(|t| tags_in_order(t)) {
        refusals.push(EncodeErrorKind::TaggedFieldOrder {
            tag: 0,
            previous: 0,
        });
    }
    let long = model.results.iter().any(|r| {
        r.topic.len() > 32767
            || r.partitions
                .iter()
                .any(|p| p.error_message.as_ref().is_some_and(|m| m.len() > 32767))
    });
    if long {
        refusals.push(EncodeErrorKind::StringTooLong { len: 0 });
    }

    let len = match response.encoded_len(version) {
        Err(e) => {
            assert!(
                refusals.iter().any(|r| same_kind(r, &e.kind)),
                "refused {e} but expected {refusals:?}"
            );
            return;
        }
        Ok(len) => {
            assert!(refusals.is_empty(), "accepted, but expected {refusals:?}");
            len
        }
    };
    let mut short = vec![0x5au8; len - 1];
    let e = response.encode(version, &mut short).unwrap_err();
    assert_eq!(e.kind, EncodeErrorKind::BufferTooSmall { needed: len });
    assert!(short.iter().all(|&b| b == 0x5a));

    let mut out = vec![0u8; len];
    assert_eq!(response.encode(version, &mut out), Ok(len));
    assert_eq!(
        canonical_response(&out, version),
        Some(true),
        "the writer's frame is canonical"
    );
    let parsed = parse_response(&out, version).expect("a written response parses");
    assert_eq!(parsed.correlation_id(), model.correlation_id);
    same_tags(parsed.header().tagged_fields(), &header_tags);
    assert_eq!(parsed.throttle_time_ms(), model.throttle_time_ms);
    let expected_code = if version == 0 { 0 } else { model.error_code };
    assert_eq!(parsed.error_code(), ErrorCode(expected_code));
    let got = parsed.replica_election_results();
    assert_eq!(got.len(), model.results.len());
    for (i, (g, w)) in got.iter().zip(&model.results).enumerate() {
        assert_eq!(g.topic(), &w.topic[..]);
        same_tags(g.tagged_fields(), &result_tags[i]);
        assert_eq!(g.partition_result().len(), w.partitions.len());
        for (j, (gp, wp)) in g.partition_result().iter().zip(&w.partitions).enumerate() {
            assert_eq!(gp.partition_id(), wp.partition_id);
            assert_eq!(gp.error_code(), ErrorCode(wp.error_code));
            assert_eq!(gp.error_message(), wp.error_message.as_deref());
            same_tags(gp.tagged_fields(), &partition_tags[i][j]);
        }
    }
    same_tags(parsed.tagged_fields(), &body_tags);
    let mut again = vec![0u8; len];
    assert_eq!(parsed.encode(version, &mut again), Ok(len));
    assert_eq!(again, out);
}
