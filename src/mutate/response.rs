//! The response mutator: [`mutate_response`], as the request mutator does a request, with
//! the changes a response's fields call for (error codes Kafka names, results for topics
//! not asked for).

use std::vec::Vec;

use super::byte_level::mutate_bytes;
use super::malform::{collect_tag_pairs, lie_count, lie_string_len, raw_frame, swap_adjacent};
use super::mutant::{bad, ok, write, Mutant, MutateError, Mutation, ATTEMPTS, BYTES};
use super::values::{
    another_version, i16_value, i32_value, list_op, mutated_string, new_string, tags_op, weighted,
    Rng,
};
use crate::arbitrary::{
    ArbitraryPartitionResult, ArbitraryReplicaElectionResult, ArbitraryResponse,
};
use crate::error_code::ErrorCode;
use crate::field;
use crate::response::parse_response;
use crate::write::EncodeResponse;

/// Mutates one ElectLeaders response frame of `version` into `out`, as
/// [`mutate_request`](crate::mutate_request) does a request. The mutant's version is [`Mutant::version`] (a version mutation changes it).
pub fn mutate_response(
    frame: &[u8],
    version: i16,
    seed: u64,
    out: &mut [u8],
) -> Result<Mutant, MutateError> {
    if out.is_empty() {
        return Err(MutateError::EmptyBuffer);
    }
    let mut rng = Rng::new(seed);
    if let Ok(view) = parse_response(frame, version) {
        let mut donors: Vec<&[u8]> = Vec::new();
        for r in view.replica_election_results() {
            donors.push(r.topic());
            for p in r.partition_result() {
                donors.extend(p.error_message());
            }
        }
        let donor = if donors.is_empty() {
            &b"topic"[..]
        } else {
            rng.pick(&donors)
        };
        let scratch = mutated_string(&mut rng, donor);
        for _ in 0..ATTEMPTS {
            let mut m = ArbitraryResponse::from_view(&view);
            if rng.chance(5) {
                if let Some(mutant) = raw_response(&mut rng, &m, out) {
                    return Ok(mutant);
                }
                continue;
            }
            let mutation = response_op(&mut rng, &mut m, &donors, &scratch);
            if let Some(len) = write(|o| m.encode(m.version, o), out) {
                return Ok(Mutant {
                    len,
                    version: m.version,
                    mutation,
                });
            }
        }
    }
    let len = mutate_bytes(frame, rng.next(), out);
    Ok(Mutant {
        len,
        version,
        mutation: BYTES,
    })
}

fn response_op<'a>(
    rng: &mut Rng,
    m: &mut ArbitraryResponse<'a>,
    donors: &[&'a [u8]],
    scratch: &'a [u8],
) -> Mutation {
    let results = m.replica_election_results.len();
    // By weight, as in `request_op` (the last arm, plus one, only when another cannot
    // apply).
    let some_results = usize::from(results > 0);
    let flexible = usize::from(m.version >= 2);
    // With no partition result, a known error code can go only to the top level: ~120
    // outcomes, drawn less.
    let known_codes = if m
        .replica_election_results
        .iter()
        .any(|r| !r.partition_result.is_empty())
    {
        24
    } else {
        6
    };
    let weights = [
        24,
        24,
        24,
        32,
        80 * some_results,
        0,
        0,
        32 * flexible,
        0,
        1,
        0,
        known_codes,
        24,
    ];
    match weighted(rng, &weights) {
        0 => {
            m.correlation_id = i32_value(rng);
            ok("CorrelationId", "a boundary or any value")
        }
        1 => {
            m.throttle_time_ms = i32_value(rng);
            ok(field::THROTTLE_TIME_MS, "a boundary or any value")
        }
        2 => {
            m.error_code = ErrorCode(i16_value(rng));
            ok(field::ERROR_CODE, "a boundary or any value")
        }
        3 => {
            let name = new_string(rng, donors, scratch);
            let change = list_op(rng, &mut m.replica_election_results, || {
                ArbitraryReplicaElectionResult {
                    topic: name,
                    partition_result: Vec::new(),
                    tagged_fields: Vec::new(),
                }
            });
            ok(field::REPLICA_ELECTION_RESULTS, change)
        }
        4..=6 if results > 0 => {
            let r = &mut m.replica_election_results[rng.below(results)];
            if rng.chance(4) {
                r.topic = new_string(rng, donors, scratch);
                return ok(field::RESULT_TOPIC, "new bytes");
            }
            let n = r.partition_result.len();
            if n == 0 || rng.chance(3) {
                let edge = i32_value(rng);
                let change = list_op(rng, &mut r.partition_result, || ArbitraryPartitionResult {
                    partition_id: edge,
                    ..Default::default()
                });
                return ok(field::PARTITION_RESULT, change);
            }
            let p = &mut r.partition_result[rng.below(n)];
            // A null message has one outcome per partition: drawn least.
            match weighted(rng, &[4, 4, 1, 4]) {
                0 => {
                    p.partition_id = i32_value(rng);
                    ok(field::PARTITION_ID, "a boundary or any value")
                }
                1 => {
                    p.error_code = ErrorCode(i16_value(rng));
                    ok(field::PARTITION_ERROR_CODE, "a boundary or any value")
                }
                2 => {
                    p.error_message = None;
                    ok(field::ERROR_MESSAGE, "null")
                }
                _ => {
                    p.error_message = Some(new_string(rng, donors, scratch));
                    ok(field::ERROR_MESSAGE, "new bytes")
                }
            }
        }
        7 | 8 if m.version >= 2 => {
            let data = new_string(rng, donors, scratch);
            let data = if data.len() > 64 { &data[..0] } else { data };
            let parts: usize = m
                .replica_election_results
                .iter()
                .map(|r| r.partition_result.len())
                .sum();
            let block = rng.below(2 + results + parts);
            let (field, tags) = if block == 0 {
                (field::RESPONSE_HEADER_TAGS, &mut m.header_tagged_fields)
            } else if block == 1 {
                (field::TAGS, &mut m.tagged_fields)
            } else if block < 2 + results {
                (
                    field::RESULT_TAGS,
                    &mut m.replica_election_results[block - 2].tagged_fields,
                )
            } else {
                let mut k = block - 2 - results;
                let mut found = None;
                for r in &mut m.replica_election_results {
                    if k < r.partition_result.len() {
                        found = Some(&mut r.partition_result[k].tagged_fields);
                        break;
                    }
                    k -= r.partition_result.len();
                }
                (
                    field::PARTITION_RESULT_TAGS,
                    found.expect("block index within the partitions"),
                )
            };
            ok(field, tags_op(rng, tags, data))
        }
        9 => {
            m.fit_to_version(another_version(m.version, rng));
            ok("version", "another version")
        }
        11 => {
            // Any code Kafka names (not only the boundaries): what a client maps to its
            // exception types, one by one.
            let code = rng.pick(ErrorCode::ALL);
            let parts: Vec<(usize, usize)> = m
                .replica_election_results
                .iter()
                .enumerate()
                .flat_map(|(i, r)| (0..r.partition_result.len()).map(move |j| (i, j)))
                .collect();
            if parts.is_empty() || (m.version >= 1 && rng.chance(4)) {
                m.error_code = code;
                return ok(field::ERROR_CODE, "a known error code");
            }
            let (i, j) = rng.pick(&parts);
            m.replica_election_results[i].partition_result[j].error_code = code;
            ok(field::PARTITION_ERROR_CODE, "a known error code")
        }
        12 => {
            // A result for a topic the request did not name, with partitions in it.
            let topic = match rng.below(3) {
                0 => &b"not-asked-for"[..],
                1 => b"__consumer_offsets",
                _ => scratch,
            };
            let partition_result = (0..1 + rng.below(3))
                .map(|k| ArbitraryPartitionResult {
                    partition_id: k as i32,
                    error_code: rng.pick(ErrorCode::ALL),
                    ..Default::default()
                })
                .collect();
            let at = rng.below(results + 1);
            m.replica_election_results.insert(
                at,
                ArbitraryReplicaElectionResult {
                    topic,
                    partition_result,
                    tagged_fields: Vec::new(),
                },
            );
            ok(
                field::REPLICA_ELECTION_RESULTS,
                "a result for a topic not asked for",
            )
        }
        _ => {
            m.correlation_id = m.correlation_id.wrapping_add(1);
            ok("CorrelationId", "plus one")
        }
    }
}

fn raw_response(rng: &mut Rng, m: &ArbitraryResponse<'_>, out: &mut [u8]) -> Option<Mutant> {
    let len = write(|o| m.encode(m.version, o), out)?;
    let flexible = m.version >= 2;
    let (lists, strings, tag_pairs) = {
        let view = parse_response(&out[..len], m.version).ok()?;
        let base = out.as_ptr() as usize;
        let mut lists = Vec::new();
        let mut strings = Vec::new();
        let mut tag_pairs = Vec::new();
        collect_tag_pairs(view.header().tagged_fields(), &mut tag_pairs);
        collect_tag_pairs(view.tagged_fields(), &mut tag_pairs);
        let results = view.replica_election_results();
        lists.push((results.range().start, results.len()));
        for r in results {
            strings.push((
                r.topic().as_ptr() as usize - base,
                r.topic().len(),
                flexible,
            ));
            let parts = r.partition_result();
            lists.push((parts.range().start, parts.len()));
            collect_tag_pairs(r.tagged_fields(), &mut tag_pairs);
            for p in parts {
                if let Some(msg) = p.error_message() {
                    strings.push((msg.as_ptr() as usize - base, msg.len(), flexible));
                }
                collect_tag_pairs(p.tagged_fields(), &mut tag_pairs);
            }
        }
        (lists, strings, tag_pairs)
    };
    let frame = &mut out[..len];
    let mutation = match rng.below(6) {
        1 if !strings.is_empty() => {
            let (at, slen, compact) = rng.pick(&strings);
            lie_string_len(rng, frame, at, slen, compact);
            bad("string length", "length lies")
        }
        2 if !lists.is_empty() => {
            let (at, count) = rng.pick(&lists);
            lie_count(rng, frame, at, count, flexible);
            bad("array count", "count lies")
        }
        // As many outcomes as pairs of tagged fields: one time in three.
        3 if !tag_pairs.is_empty() && rng.chance(3) => {
            let (a, b, c) = rng.pick(&tag_pairs);
            swap_adjacent(frame, a, b, c);
            bad(field::TAGS, "two tagged fields swapped (out of order)")
        }
        _ => return raw_frame(rng, out, len, m.version),
    };
    Some(Mutant {
        len,
        version: m.version,
        mutation,
    })
}
