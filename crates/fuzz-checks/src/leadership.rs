//! leadership: the guard's reader of the requests its leadership-change policy decides on
//! (`kafka_elect_leaders_proxy::leadership`), on any bytes, against `kafka-protocol`.
//!
//! The input: one byte choosing the API, one choosing its version (within what the guard
//! reads), then the request after its size prefix, API key and version (correlation id,
//! client id, ..., body). Checked:
//! 1. reading never panics, and an error names a field at an offset inside the frame;
//! 2. what the guard reads, `kafka-protocol` reads too (only once the guard has checked
//!    every count against the bytes left: `kafka-protocol` reserves what a count says), with
//!    the same entries by name, unless a string is not UTF-8 (which `kafka-protocol`
//!    refuses and the guard does not look at);
//! 3. under three policies, a refusal is the API's own answer at the request's version as
//!    `kafka-protocol` reads it, one entry per entry of the request, in order, each
//!    POLICY_VIOLATION, with at most `MESSAGES` messages, and about the request's size.

use bytes::{Bytes, BytesMut};
use kafka_elect_leaders_proxy::leadership::{self, Api, ChangeRequest, MESSAGES};
use kafka_elect_leaders_proxy::Policy;
use kafka_protocol::messages::{
    AlterConfigsRequest, AlterConfigsResponse, AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse, CreatePartitionsRequest, CreatePartitionsResponse,
    CreateTopicsRequest, CreateTopicsResponse, DeleteRecordsRequest, DeleteRecordsResponse,
    DeleteTopicsRequest, DeleteTopicsResponse, IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse, RequestHeader, ResponseHeader, UnregisterBrokerRequest,
    UnregisterBrokerResponse,
};
use kafka_protocol::protocol::{Decodable, HeaderVersion};

/// What one entry is called in a request or an answer: its name, or None.
type Names = Vec<Option<Vec<u8>>>;

fn policies() -> [Policy; 3] {
    let names = |names: &[&str]| names.iter().map(|n| n.as_bytes().into()).collect();
    [
        Policy {
            deny_unclean: true,
            ..Policy::default()
        },
        Policy {
            protected_topics: names(&["payments", "a", ""]),
            ..Policy::default()
        },
        Policy {
            deny_unclean: true,
            protected_topics: names(&["payments"]),
            allowed_client_ids: names(&["admin"]),
            ..Policy::default()
        },
    ]
}

/// The `leadership` target: a leadership-change request (API and version from the first two
/// bytes, the rest its body) decided by the guard's policy; no panic, and a refusal reads back.
pub fn check_leadership(data: &[u8]) {
    let [api, version, rest @ ..] = data else {
        return;
    };
    let api = Api::ALL[usize::from(*api) % Api::ALL.len()];
    let span = api.max_version() - api.min_version() + 1;
    let version = api.min_version() + i16::from(*version) % span;
    let mut frame = Vec::with_capacity(rest.len() + 8);
    frame.extend_from_slice(&(u32::try_from(rest.len() + 4).unwrap_or(u32::MAX)).to_be_bytes());
    frame.extend_from_slice(&api.key().to_be_bytes());
    frame.extend_from_slice(&version.to_be_bytes());
    frame.extend_from_slice(rest);

    let request = match leadership::read_request(api, version, &frame) {
        Ok(request) => request,
        Err(e) => {
            assert!(
                e.offset <= frame.len(),
                "{e:?} past the frame's {} bytes",
                frame.len()
            );
            assert!(!e.field.is_empty());
            return;
        }
    };
    assert_eq!((request.api, request.version), (api, version));

    let names = request_names(&request);
    // The refusal echoes the names as sent; kafka-protocol reads only UTF-8 ones.
    let utf8_names = names
        .iter()
        .flatten()
        .all(|n| std::str::from_utf8(n).is_ok());
    // A client id of negative length other than -1 is null to Kafka (and the guard);
    // kafka-protocol refuses it.
    let odd_null_client_id = i16::from_be_bytes([frame[12], frame[13]]) < -1;
    if utf8_names
        && !odd_null_client_id
        && request
            .client_id
            .map_or(true, |c| std::str::from_utf8(c).is_ok())
    {
        let theirs = peer_request(api, version, &frame[4..]);
        // kafka-protocol checks UTF-8 in every string (config names and values too); the
        // guard keeps bytes as they are and checks none.
        let utf8 = matches!(&theirs, Err(e) if e.contains("utf-8"));
        assert!(
            utf8 || theirs.as_ref().ok() == Some(&names),
            "{} v{version}: kafka-protocol reads {theirs:?}, the guard {names:?}",
            api.name()
        );
    }

    for policy in policies() {
        let decision = policy.decide_change(&request, None);
        let mut answer = BytesMut::new();
        leadership::encode_refusal(&request, &decision, &mut answer);
        let size = u32::from_be_bytes(answer[..4].try_into().unwrap()) as usize;
        assert_eq!(size, answer.len() - 4, "size prefix");
        assert!(
            answer.len() <= 4 * frame.len() + 64 * 1024,
            "{} v{version}: a refusal of {} bytes for a request of {}",
            api.name(),
            answer.len(),
            frame.len()
        );
        if !utf8_names {
            continue;
        }
        let (id, codes, answered, messages) = peer_answer(api, version, &answer[4..])
            .unwrap_or_else(|e| {
                panic!("{} v{version}: the refusal does not read: {e}", api.name())
            });
        assert_eq!(id, request.correlation_id);
        assert!(codes.iter().all(|&c| c == 44), "{codes:?}");
        assert_eq!(
            answered,
            answer_names(&request),
            "{} v{version}",
            api.name()
        );
        assert!(messages <= MESSAGES + 1, "{messages} messages");
    }
}

/// The entries' names as the guard read them.
fn request_names(request: &ChangeRequest<'_>) -> Names {
    request
        .entries
        .iter()
        .map(|e| e.name.map(<[u8]>::to_vec))
        .collect()
}

/// The names the answer's entries carry, one per request entry (AlterPartitionReassignments,
/// DeleteRecords: one per partition, under its topic's name).
fn answer_names(request: &ChangeRequest<'_>) -> Names {
    match request.api {
        Api::AlterPartitionReassignments | Api::DeleteRecords => request
            .entries
            .iter()
            .flat_map(|e| e.partitions.iter().map(move |_| e.name.map(<[u8]>::to_vec)))
            .collect(),
        Api::UnregisterBroker => Vec::new(),
        _ => request_names(request),
    }
}

fn decode<M: Decodable + HeaderVersion>(bytes: &[u8], version: i16) -> Result<M, String> {
    let mut buf = Bytes::copy_from_slice(bytes);
    RequestHeader::decode(&mut buf, M::header_version(version)).map_err(|e| e.to_string())?;
    M::decode(&mut buf, version).map_err(|e| e.to_string())
}

fn name_of(s: &kafka_protocol::protocol::StrBytes) -> Option<Vec<u8>> {
    Some(s.as_bytes().to_vec())
}

/// The request's entries as `kafka-protocol` reads them (header included in `bytes`).
fn peer_request(api: Api, version: i16, bytes: &[u8]) -> Result<Names, String> {
    Ok(match api {
        Api::CreateTopics => decode::<CreateTopicsRequest>(bytes, version)?
            .topics
            .iter()
            .map(|t| name_of(&t.name.0))
            .collect(),
        Api::DeleteTopics => {
            let r = decode::<DeleteTopicsRequest>(bytes, version)?;
            if version >= 6 {
                r.topics
                    .iter()
                    .map(|t| t.name.as_ref().and_then(|n| name_of(&n.0)))
                    .collect()
            } else {
                r.topic_names.iter().map(|n| name_of(&n.0)).collect()
            }
        }
        Api::DeleteRecords => decode::<DeleteRecordsRequest>(bytes, version)?
            .topics
            .iter()
            .map(|t| name_of(&t.name.0))
            .collect(),
        Api::AlterConfigs => decode::<AlterConfigsRequest>(bytes, version)?
            .resources
            .iter()
            .map(|r| name_of(&r.resource_name))
            .collect(),
        Api::IncrementalAlterConfigs => decode::<IncrementalAlterConfigsRequest>(bytes, version)?
            .resources
            .iter()
            .map(|r| name_of(&r.resource_name))
            .collect(),
        Api::CreatePartitions => decode::<CreatePartitionsRequest>(bytes, version)?
            .topics
            .iter()
            .map(|t| name_of(&t.name.0))
            .collect(),
        Api::AlterPartitionReassignments => {
            decode::<AlterPartitionReassignmentsRequest>(bytes, version)?
                .topics
                .iter()
                .map(|t| name_of(&t.name.0))
                .collect()
        }
        Api::UnregisterBroker => {
            decode::<UnregisterBrokerRequest>(bytes, version)?;
            Vec::new()
        }
    })
}

fn decode_answer<M: Decodable + HeaderVersion>(
    bytes: &[u8],
    version: i16,
) -> Result<(i32, M), String> {
    let mut buf = Bytes::copy_from_slice(bytes);
    let header =
        ResponseHeader::decode(&mut buf, M::header_version(version)).map_err(|e| e.to_string())?;
    let body = M::decode(&mut buf, version).map_err(|e| e.to_string())?;
    if !buf.is_empty() {
        return Err(format!("{} bytes left after the answer", buf.len()));
    }
    Ok((header.correlation_id, body))
}

/// The refusal as `kafka-protocol` reads it: correlation id, every error code, the entries'
/// names, and how many messages it carries.
fn peer_answer(
    api: Api,
    version: i16,
    bytes: &[u8],
) -> Result<(i32, Vec<i16>, Names, usize), String> {
    let count = |m: &Option<kafka_protocol::protocol::StrBytes>| usize::from(m.is_some());
    Ok(match api {
        Api::CreateTopics => {
            let (id, r) = decode_answer::<CreateTopicsResponse>(bytes, version)?;
            let codes = r.topics.iter().map(|t| t.error_code).collect();
            let names = r.topics.iter().map(|t| name_of(&t.name.0)).collect();
            let messages = r.topics.iter().map(|t| count(&t.error_message)).sum();
            (id, codes, names, messages)
        }
        Api::DeleteTopics => {
            let (id, r) = decode_answer::<DeleteTopicsResponse>(bytes, version)?;
            let codes = r.responses.iter().map(|t| t.error_code).collect();
            let names = r
                .responses
                .iter()
                .map(|t| t.name.as_ref().and_then(|n| name_of(&n.0)))
                .collect();
            let messages = r.responses.iter().map(|t| count(&t.error_message)).sum();
            (id, codes, names, messages)
        }
        Api::DeleteRecords => {
            // Per partition, under its topic's name; the answer has no message.
            let (id, r) = decode_answer::<DeleteRecordsResponse>(bytes, version)?;
            let mut codes = Vec::new();
            let mut names = Vec::new();
            for t in &r.topics {
                for p in &t.partitions {
                    codes.push(p.error_code);
                    names.push(name_of(&t.name.0));
                }
            }
            (id, codes, names, 0)
        }
        Api::AlterConfigs => {
            let (id, r) = decode_answer::<AlterConfigsResponse>(bytes, version)?;
            let codes = r.responses.iter().map(|t| t.error_code).collect();
            let names = r
                .responses
                .iter()
                .map(|t| name_of(&t.resource_name))
                .collect();
            let messages = r.responses.iter().map(|t| count(&t.error_message)).sum();
            (id, codes, names, messages)
        }
        Api::IncrementalAlterConfigs => {
            let (id, r) = decode_answer::<IncrementalAlterConfigsResponse>(bytes, version)?;
            let codes = r.responses.iter().map(|t| t.error_code).collect();
            let names = r
                .responses
                .iter()
                .map(|t| name_of(&t.resource_name))
                .collect();
            let messages = r.responses.iter().map(|t| count(&t.error_message)).sum();
            (id, codes, names, messages)
        }
        Api::CreatePartitions => {
            let (id, r) = decode_answer::<CreatePartitionsResponse>(bytes, version)?;
            let codes = r.results.iter().map(|t| t.error_code).collect();
            let names = r.results.iter().map(|t| name_of(&t.name.0)).collect();
            let messages = r.results.iter().map(|t| count(&t.error_message)).sum();
            (id, codes, names, messages)
        }
        Api::AlterPartitionReassignments => {
            let (id, r) = decode_answer::<AlterPartitionReassignmentsResponse>(bytes, version)?;
            let mut codes = vec![r.error_code];
            let mut names = Vec::new();
            let mut messages = count(&r.error_message);
            for t in &r.responses {
                for p in &t.partitions {
                    codes.push(p.error_code);
                    names.push(name_of(&t.name.0));
                    messages += count(&p.error_message);
                }
            }
            (id, codes, names, messages)
        }
        Api::UnregisterBroker => {
            let (id, r) = decode_answer::<UnregisterBrokerResponse>(bytes, version)?;
            (id, vec![r.error_code], Vec::new(), count(&r.error_message))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request after its size prefix, key and version: correlation id 7, client id "c",
    /// and `body` (tagged fields where flexible are the caller's).
    fn seed(api: u8, version: u8, flexible: bool, body: &[u8]) -> Vec<u8> {
        let mut out = vec![api, version];
        out.extend_from_slice(&7i32.to_be_bytes());
        out.extend_from_slice(&[0, 1, b'c']);
        if flexible {
            out.push(0);
        }
        out.extend_from_slice(body);
        out
    }

    /// The seeds: one readable request of every API, and one count that lies.
    pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
        vec![
            // IncrementalAlterConfigs v1: payments unclean=true.
            (
                "seed-iac-unclean",
                seed(
                    4,
                    1,
                    true,
                    &[
                        2, 2, 9, b'p', b'a', b'y', b'm', b'e', b'n', b't', b's', 2, 31, b'u', b'n',
                        b'c', b'l', b'e', b'a', b'n', b'.', b'l', b'e', b'a', b'd', b'e', b'r',
                        b'.', b'e', b'l', b'e', b'c', b't', b'i', b'o', b'n', b'.', b'e', b'n',
                        b'a', b'b', b'l', b'e', 0, 5, b't', b'r', b'u', b'e', 0, 0, 0, 0,
                    ],
                ),
            ),
            // CreatePartitions v0: payments to 4, no assignments.
            (
                "seed-create-partitions",
                seed(
                    3,
                    0,
                    false,
                    &[
                        0, 0, 0, 1, 0, 8, b'p', b'a', b'y', b'm', b'e', b'n', b't', b's', 0, 0, 0,
                        4, 0xff, 0xff, 0xff, 0xff, 0, 0, 0x03, 0xe8, 0,
                    ],
                ),
            ),
            // DeleteTopics v3 with a count of 2^31-1.
            (
                "seed-delete-lying-count",
                seed(1, 2, false, &[0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0]),
            ),
            // AlterPartitionReassignments v0: payments 0 -> [3, 2].
            (
                "seed-reassign",
                seed(
                    5,
                    0,
                    true,
                    &[
                        0, 0, 0x75, 0x30, 2, 9, b'p', b'a', b'y', b'm', b'e', b'n', b't', b's', 2,
                        0, 0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0,
                    ],
                ),
            ),
            // UnregisterBroker v0: broker 3.
            ("seed-unregister", seed(6, 0, true, &[0, 0, 0, 3, 0])),
            // DeleteRecords v2: payments partition 0 up to offset 5.
            (
                "seed-delete-records",
                seed(
                    7,
                    2,
                    true,
                    &[
                        2, 9, b'p', b'a', b'y', b'm', b'e', b'n', b't', b's', 2, 0, 0, 0, 0, 0, 0,
                        0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0x75, 0x30, 0,
                    ],
                ),
            ),
        ]
    }

    #[test]
    fn seeds_read_and_refuse() {
        for (name, data) in seeds() {
            check_leadership(&data);
            let api = Api::ALL[usize::from(data[0]) % Api::ALL.len()];
            let version = api.min_version()
                + i16::from(data[1]) % (api.max_version() - api.min_version() + 1);
            let mut frame = ((data.len() + 2) as u32).to_be_bytes().to_vec();
            frame.extend_from_slice(&api.key().to_be_bytes());
            frame.extend_from_slice(&version.to_be_bytes());
            frame.extend_from_slice(&data[2..]);
            let read = leadership::read_request(api, version, &frame);
            assert_eq!(read.is_ok(), !name.contains("lying"), "{name}: {read:?}");
        }
    }

    #[test]
    #[ignore]
    fn write_seeds() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/fuzz/leadership");
        std::fs::create_dir_all(&dir).unwrap();
        for (name, data) in seeds() {
            std::fs::write(dir.join(name), data).unwrap();
        }
    }
}
