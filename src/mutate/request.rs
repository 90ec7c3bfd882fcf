//! The request mutator: [`mutate_request`], one change at the level of the schema written
//! back by the crate's writer, or a malformation of the canonical frame.

use std::vec::Vec;

use super::byte_level::mutate_bytes;
use super::malform::{collect_tag_pairs, lie_count, lie_string_len, raw_frame, swap_adjacent};
use super::mutant::{bad, ok, write, Mutant, MutateError, Mutation, ATTEMPTS, BYTES};
use super::values::{
    another_version, i32_value, i8_value, list_op, mutated_string, new_string, tags_op, weighted,
    Rng,
};
use crate::arbitrary::{ArbitraryRequest, ArbitraryTopicPartitions};
use crate::election_type::ElectionType;
use crate::field;
use crate::request::parse_request;
use crate::version::{nth_version, MAX_VERSION, MIN_VERSION};
use crate::write::EncodeRequest;

///
/// Mutates one ElectLeaders request frame into `out`: a frame that does not parse, or whose
/// mutants do not fit in `out`, gets [`mutate_bytes`].
///
/// [`mutate_request`] and [`mutate_response`](crate::mutate_response) parse a frame, change one thing at the level
/// of the schema, and write the result back with the crate's writer into the caller's
/// buffer, so the frame's lengths, counts and size prefix stay right while a value goes
/// wrong where it counts:
///
/// - a field's value: one of the boundaries Kafka cares about (0, -1, 1, `i32::MAX`,
///   `i32::MIN`, 32767, 32768 ...), a value next to one, a small one or any (error codes
///   also any code Kafka names): correlation id, election type, timeout, partition ids,
///   throttle time, error codes;
/// - a string's bytes (a byte flipped, added or dropped, non-UTF-8, another string's bytes,
///   empty, the longest Kafka allows: 32767 bytes) or null where the schema allows it;
/// - a list element inserted, removed, duplicated or two swapped; a null or empty list;
/// - a tagged field added or removed (version 2);
/// - the version (what the new version cannot carry is dropped).
///
/// Some mutations are deliberate malformations written over the canonical frame: a length
/// or count that lies (-1 where null is not allowed, one more than there is, more than the
/// frame holds), two tagged fields out of order, an unknown version, a size prefix off by
/// one or a few, a truncated body, trailing bytes.
///
/// The choices are weighted by how many different frames they can make, so that most of
/// one seed's mutants differ: of 1,000 mutants of any frame in `corpus/`, at least 80% are
/// distinct (`tests/generate.rs`). A choice that cannot apply (a topic's partitions in a
/// request with none, tagged fields before version 2) is never drawn. The [`Mutant`] says which, and `malformed` is
/// true for them. A frame that does not parse gets byte-level mutation ([`mutate_bytes`]).
///
/// Everything is deterministic for a seed.
///
/// With libFuzzer (`libfuzzer-sys`), as in `fuzz/fuzz_targets/structured.rs`:
///
/// ```ignore
/// libfuzzer_sys::fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
///     let frame = data[..size].to_vec();
///     match kafka_elect_leaders::mutate_request(&frame, u64::from(seed), &mut data[..max_size]) {
///         Ok(mutant) => mutant.len,
///         Err(_) => libfuzzer_sys::fuzzer_mutate(data, size, max_size),
///     }
/// });
/// ```
///
/// ```
/// use kafka_elect_leaders::{mutate_request, parse_request};
///
/// let frame = std::fs::read("corpus/request-v2-multi.bin").unwrap();
/// let mut out = vec![0u8; 4096];
/// for seed in 0..100 {
///     let mutant = mutate_request(&frame, seed, &mut out).unwrap();
///     let result = parse_request(&out[..mutant.len]);
///     if !mutant.mutation.malformed {
///         assert!(result.is_ok(), "{}", mutant.mutation);
///     }
/// }
/// ```
pub fn mutate_request(frame: &[u8], seed: u64, out: &mut [u8]) -> Result<Mutant, MutateError> {
    if out.is_empty() {
        return Err(MutateError::EmptyBuffer);
    }
    let mut rng = Rng::new(seed);
    if let Ok(view) = parse_request(frame) {
        let mut donors: Vec<&[u8]> = Vec::new();
        donors.extend(view.header().client_id());
        for t in view.topic_partitions().into_iter().flat_map(|l| l.iter()) {
            donors.push(t.topic());
        }
        let donor = if donors.is_empty() {
            &b"topic"[..]
        } else {
            rng.pick(&donors)
        };
        let scratch = mutated_string(&mut rng, donor);
        for _ in 0..ATTEMPTS {
            let mut m = ArbitraryRequest::from_view(&view);
            if rng.chance(5) {
                if let Some(mutant) = raw_request(&mut rng, &m, out) {
                    return Ok(mutant);
                }
                continue;
            }
            let mutation = request_op(&mut rng, &mut m, &donors, &scratch);
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
        version: frame_version(frame),
        mutation: BYTES,
    })
}

fn frame_version(frame: &[u8]) -> i16 {
    match frame.get(6..8) {
        Some(v) => i16::from_be_bytes([v[0], v[1]]),
        None => -1,
    }
}

fn request_op<'a>(
    rng: &mut Rng,
    m: &mut ArbitraryRequest<'a>,
    donors: &[&'a [u8]],
    scratch: &'a [u8],
) -> Mutation {
    let topics = m.topic_partitions.as_ref().map_or(0, Vec::len);
    // The arms below by weight, an arm that cannot apply to this message never: those
    // with few outcomes (null or empty, another version) are drawn least, so that a seed's
    // mutants seldom repeat one another.
    let some_topics = usize::from(topics > 0);
    let flexible = usize::from(m.version >= 2);
    // ElectionType is an int8: drawn as often as the int32s, it would repeat itself.
    let weights = [
        24,
        24,
        12,
        24,
        1,
        16,
        64 * some_topics,
        0,
        32 * flexible,
        0,
        1,
        2 * some_topics,
    ];
    match weighted(rng, &weights) {
        0 => {
            m.correlation_id = i32_value(rng);
            ok("CorrelationId", "a boundary or any value")
        }
        1 => {
            if rng.chance(16) {
                m.client_id = None;
                ok("ClientId", "null")
            } else {
                m.client_id = Some(new_string(rng, donors, scratch));
                ok("ClientId", "new bytes")
            }
        }
        2 => {
            m.election_type = ElectionType(i8_value(rng));
            ok(field::ELECTION_TYPE, "a boundary or any value")
        }
        3 => {
            m.timeout_ms = i32_value(rng);
            ok(field::TIMEOUT_MS, "a boundary or any value")
        }
        4 => {
            m.topic_partitions = match &m.topic_partitions {
                None => Some(Vec::new()),
                Some(list) if list.is_empty() || rng.chance(2) => None,
                Some(_) => Some(Vec::new()),
            };
            ok(field::TOPIC_PARTITIONS, "null or empty")
        }
        5 => {
            let list = m.topic_partitions.get_or_insert_with(Vec::new);
            let name = new_string(rng, donors, scratch);
            let edge = i32_value(rng);
            let change = list_op(rng, list, || ArbitraryTopicPartitions {
                topic: name,
                partitions: std::vec![edge],
                tagged_fields: Vec::new(),
            });
            ok(field::TOPIC_PARTITIONS, change)
        }
        6 | 7 if topics > 0 => {
            let i = rng.below(topics);
            let entry = &mut m.topic_partitions.as_mut().unwrap()[i];
            if rng.chance(3) {
                entry.topic = new_string(rng, donors, scratch);
                return ok(field::TOPIC, "new bytes");
            }
            let edge = i32_value(rng);
            if !entry.partitions.is_empty() && rng.chance(2) {
                let j = rng.below(entry.partitions.len());
                entry.partitions[j] = edge;
                return ok(field::PARTITIONS, "a boundary or any value");
            }
            let change = list_op(rng, &mut entry.partitions, || edge);
            ok(field::PARTITIONS, change)
        }
        8 | 9 if m.version >= 2 => {
            let data = new_string(rng, donors, scratch);
            let data = if data.len() > 64 { &data[..0] } else { data };
            let block = rng.below(topics + 2);
            let (field, tags) = match block {
                0 => (field::REQUEST_HEADER_TAGS, &mut m.header_tagged_fields),
                1 => (field::TAGS, &mut m.tagged_fields),
                _ => (
                    field::TOPIC_PARTITIONS_TAGS,
                    &mut m.topic_partitions.as_mut().unwrap()[block - 2].tagged_fields,
                ),
            };
            ok(field, tags_op(rng, tags, data))
        }
        10 => {
            m.fit_to_version(another_version(m.version, rng));
            ok("RequestApiVersion", "another version")
        }
        _ => {
            // Duplicate topics and partitions are what Kafka's controller must refuse.
            if let Some(list) = m.topic_partitions.as_mut().filter(|l| !l.is_empty()) {
                let i = rng.below(list.len());
                let copy = list[i].clone();
                list.push(copy);
                ok(field::TOPIC_PARTITIONS, "topic repeated at the end")
            } else {
                m.correlation_id = m.correlation_id.wrapping_add(1);
                ok("CorrelationId", "plus one")
            }
        }
    }
}

/// Writes `m` canonically, then breaks one thing in the bytes.
fn raw_request(rng: &mut Rng, m: &ArbitraryRequest<'_>, out: &mut [u8]) -> Option<Mutant> {
    let len = write(|o| m.encode(m.version, o), out)?;
    let flexible = m.version >= 2;
    // Where things are, read from the canonical frame.
    let (lists, strings, tag_pairs) = {
        let view = parse_request(&out[..len]).ok()?;
        let base = out.as_ptr() as usize;
        let mut lists = Vec::new();
        let mut strings = Vec::new();
        let mut tag_pairs = Vec::new();
        if let Some(client_id) = view.header().client_id() {
            strings.push((client_id.as_ptr() as usize - base, client_id.len(), false));
        }
        collect_tag_pairs(view.header().tagged_fields(), &mut tag_pairs);
        collect_tag_pairs(view.tagged_fields(), &mut tag_pairs);
        if let Some(topics) = view.topic_partitions() {
            lists.push((topics.range().start, topics.len()));
            for t in topics {
                strings.push((
                    t.topic().as_ptr() as usize - base,
                    t.topic().len(),
                    flexible,
                ));
                lists.push((t.partitions().range().start, t.partitions().len()));
                collect_tag_pairs(t.tagged_fields(), &mut tag_pairs);
            }
        }
        (lists, strings, tag_pairs)
    };
    let frame = &mut out[..len];
    let mutation = match rng.below(7) {
        0 => {
            let step = (m.version - MIN_VERSION) as u64;
            let v = if !rng.chance(3) {
                // Any version the codec does not know, but a known one written in place.
                let v = rng.next() as i16;
                if (MIN_VERSION..=MAX_VERSION).contains(&v) {
                    MAX_VERSION + 1
                } else {
                    v
                }
            } else {
                rng.pick(&[
                    MAX_VERSION + 1,
                    -1,
                    i16::MAX,
                    nth_version(step + 1),
                    nth_version(step + 2),
                ])
            };
            frame[6..8].copy_from_slice(&v.to_be_bytes());
            bad("RequestApiVersion", "version changed in place")
        }
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
