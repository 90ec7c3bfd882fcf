//! A structure-aware mutator for fuzz campaigns (feature `arbitrary`); documented on
//! `mutate_request`.
use core::fmt;
use std::vec::Vec;

use crate::arbitrary::{
    ArbitraryPartitionResult, ArbitraryReplicaElectionResult, ArbitraryRequest, ArbitraryResponse,
    ArbitraryTopicPartitions,
};
use crate::election_type::ElectionType;
use crate::error_code::ErrorCode;
use crate::field;
use crate::request::parse_request;
use crate::response::parse_response;
use crate::version::{nth_version, MAX_VERSION, MIN_VERSION, VERSION_COUNT};
use crate::write::{EncodeError, EncodeRequest, EncodeResponse, TaggedFieldData};

/// What a mutation changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Mutation {
    /// The field changed, as a schema path (`TopicPartitions.Topic`, `size`, ...); `bytes`
    /// for byte-level mutation of a frame that did not parse.
    pub field: &'static str,
    /// How it was changed, in a few words.
    pub change: &'static str,
    /// True for a deliberate malformation (written over the canonical frame, or byte-level):
    /// the frame may be refused by a parser. False: the writer wrote it, it parses.
    pub malformed: bool,
}

impl fmt::Display for Mutation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.change)?;
        if self.malformed {
            f.write_str(" (malformed)")?;
        }
        Ok(())
    }
}

/// A mutant written into the caller's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mutant {
    /// Its length: the mutant is `out[..len]`.
    pub len: usize,
    /// The version to parse it at (for a response; a request says its own), unless
    /// `mutation.malformed`.
    pub version: i16,
    /// What was changed.
    pub mutation: Mutation,
}

/// Why no mutant was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MutateError {
    /// The output buffer is empty.
    EmptyBuffer,
}

impl fmt::Display for MutateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MutateError::EmptyBuffer => f.write_str("the output buffer is empty"),
        }
    }
}

impl std::error::Error for MutateError {}

/// SplitMix64: small, fast, and the same everywhere.
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed ^ 0x6a09_e667_f3bc_c909)
    }
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

/// A version other than `version`, each of the others as likely.
fn another_version(version: i16, rng: &mut Rng) -> i16 {
    let others = usize::from(VERSION_COUNT) - 1;
    nth_version((version - MIN_VERSION) as u64 + 1 + rng.below(others) as u64)
}

/// The int32 boundaries Kafka cares about.
const I32_EDGES: [i32; 10] = [
    0,
    -1,
    1,
    i32::MAX,
    i32::MIN,
    32767,
    32768,
    -32768,
    65535,
    0x7fff_fffe,
];
const I16_EDGES: [i16; 8] = [0, -1, 1, i16::MAX, i16::MIN, 35, 41, 84];
const I8_EDGES: [i8; 6] = [0, 1, 2, -1, i8::MAX, i8::MIN];
const TAG_EDGES: [u32; 8] = [0, 1, 63, 127, 128, 16383, 16384, u32::MAX];
/// The longest string Kafka reads or writes.
static LONGEST: [u8; 32767] = [b'x'; 32767];

/// Picks an index by weight: `weights[i]` chances in the sum of them for `i`.
fn weighted(rng: &mut Rng, weights: &[usize]) -> usize {
    let total: usize = weights.iter().sum();
    let mut at = rng.below(total);
    for (i, &w) in weights.iter().enumerate() {
        if at < w {
            return i;
        }
        at -= w;
    }
    weights.len() - 1
}

/// An int32 for a field: a boundary Kafka cares about, a value next to one, a small one, or
/// any. The boundaries are an eighth of the draws: a few values drawn again and again
/// would make most of a seed's mutants repeat one another.
fn i32_value(rng: &mut Rng) -> i32 {
    match rng.below(8) {
        0 => rng.pick(&I32_EDGES),
        1 => rng.pick(&I32_EDGES).wrapping_add(rng.below(9) as i32 - 4),
        2 | 3 => rng.below(1 << 16) as i32,
        _ => rng.next() as i32,
    }
}

/// An error code: a boundary, any code Kafka names, a small unnamed one, or any int16.
fn i16_value(rng: &mut Rng) -> i16 {
    match rng.below(8) {
        0 => rng.pick(&I16_EDGES),
        1 | 2 => rng.pick(ErrorCode::ALL).0,
        3 | 4 => rng.below(512) as i16,
        _ => rng.next() as i16,
    }
}

/// An election type: a boundary, or any int8.
fn i8_value(rng: &mut Rng) -> i8 {
    if rng.chance(6) {
        rng.pick(&I8_EDGES)
    } else {
        rng.next() as i8
    }
}

/// A small mutation of `bytes`, for strings.
fn mutated_string(rng: &mut Rng, bytes: &[u8]) -> Vec<u8> {
    // An empty string has little to change: start from a name.
    let bytes = if bytes.is_empty() {
        &b"topic"[..]
    } else {
        bytes
    };
    let mut s = bytes.to_vec();
    // One edit or two, bytes of any value the likeliest: a short name has few bits to flip
    // and fewer places to cut, and a seed's strings should seldom repeat.
    for _ in 0..1 + rng.below(2) {
        match weighted(rng, &[2, 1, 1, 2, 4, 1, 1]) {
            0 if !s.is_empty() => {
                let i = rng.below(s.len());
                s[i] ^= 1 << rng.below(8);
            }
            1 if !s.is_empty() => {
                s.remove(rng.below(s.len()));
            }
            2 => {
                // Not UTF-8: a lone continuation after a lead byte, anywhere.
                let at = rng.below(s.len() + 1);
                s.splice(at..at, [0xc3, 0x28]);
            }
            3 => {
                let any = rng.next() as u8;
                let byte = rng.pick(&[0u8, b'.', b'/', 0xff, b'-', b'_', any]);
                s.insert(rng.below(s.len() + 1), byte);
            }
            5 if !s.is_empty() => s.truncate(rng.below(s.len())),
            6 => {
                for _ in 0..1 + rng.below(8) {
                    s.extend_from_slice(bytes);
                }
            }
            _ => {
                // Bytes of any value, a few to a few dozen.
                let n = 1 + rng.below(48);
                s.extend((0..n).map(|_| rng.next() as u8));
            }
        }
    }
    s
}

/// A string to put in place of another: one of the frame's own, a mutated one, empty, the
/// longest allowed.
fn new_string<'a>(rng: &mut Rng, donors: &[&'a [u8]], scratch: &'a [u8]) -> &'a [u8] {
    // The fixed choices are rare: drawn again and again, they would repeat.
    match rng.below(32) {
        0 => b"",
        1 => &LONGEST[..],
        2 => b"__consumer_offsets",
        3 if !donors.is_empty() => rng.pick(donors),
        4..=7 => &LONGEST[..rng.below(LONGEST.len())],
        _ => scratch,
    }
}

fn list_op<T: Clone>(rng: &mut Rng, list: &mut Vec<T>, fresh: impl FnOnce() -> T) -> &'static str {
    let n = list.len();
    // A new element the likeliest: in a short list, removing, duplicating or swapping one
    // has few outcomes.
    let fresh_weight = if n <= 2 { 12 } else { 4 };
    match weighted(rng, &[1, 1, 1, 1, fresh_weight]) {
        0 if n > 0 => {
            list.remove(rng.below(n));
            "element removed"
        }
        1 if n > 0 => {
            let i = rng.below(n);
            let copy = list[i].clone();
            list.insert(i + 1, copy);
            "element duplicated"
        }
        2 if n > 1 => {
            // Two different places: swapping one with itself would change nothing.
            let i = rng.below(n);
            let j = (i + 1 + rng.below(n - 1)) % n;
            list.swap(i, j);
            "elements swapped"
        }
        3 if n > 0 => {
            let copy = list[rng.below(n)].clone();
            list.insert(rng.below(n + 1), copy);
            "element copied elsewhere"
        }
        _ => {
            let i = rng.below(n + 1);
            list.insert(i, fresh());
            "element inserted"
        }
    }
}

/// Adds or removes a tagged field, keeping tags ascending.
fn tags_op<'a>(rng: &mut Rng, tags: &mut Vec<TaggedFieldData<'a>>, data: &'a [u8]) -> &'static str {
    if !tags.is_empty() && rng.chance(3) {
        tags.remove(rng.below(tags.len()));
        return "tagged field removed";
    }
    let after = tags.last().map(|t| t.tag);
    let candidates: Vec<u32> = TAG_EDGES
        .iter()
        .copied()
        .filter(|&t| after.map_or(true, |a| t > a))
        .collect();
    let tag = if candidates.is_empty() || rng.chance(2) {
        match after {
            None => 0,
            Some(a) => match a.checked_add(1) {
                Some(t) => t,
                None => return "tagged field kept (no tag left)",
            },
        }
    } else {
        rng.pick(&candidates)
    };
    tags.push(TaggedFieldData::new(tag, data));
    "tagged field added"
}

/// Runs an encode into `out`; `None` if it does not fit or the version refuses the message
/// (the caller tries another mutation).
fn write<E>(encode: E, out: &mut [u8]) -> Option<usize>
where
    E: FnOnce(&mut [u8]) -> Result<usize, EncodeError>,
{
    encode(out).ok()
}

const ATTEMPTS: usize = 12;

///
/// Mutates one ElectLeaders request frame into `out`: a frame that does not parse, or whose
/// mutants do not fit in `out`, gets [`mutate_bytes`].
///
/// [`mutate_request`] and [`mutate_response`] parse a frame, change one thing at the level
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

const BYTES: Mutation = Mutation {
    field: "bytes",
    change: "byte-level mutation",
    malformed: true,
};

fn frame_version(frame: &[u8]) -> i16 {
    match frame.get(6..8) {
        Some(v) => i16::from_be_bytes([v[0], v[1]]),
        None => -1,
    }
}

fn ok(field: &'static str, change: &'static str) -> Mutation {
    Mutation {
        field,
        change,
        malformed: false,
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

fn bad(field: &'static str, change: &'static str) -> Mutation {
    Mutation {
        field,
        change,
        malformed: true,
    }
}

/// Adjacent tagged fields: (start of first, start of second, end of second).
fn collect_tag_pairs(tags: crate::TaggedFields<'_>, pairs: &mut Vec<(usize, usize, usize)>) {
    let mut previous: Option<core::ops::Range<usize>> = None;
    for field in tags {
        let r = field.range();
        if let Some(p) = previous {
            pairs.push((p.start, r.start, r.end));
        }
        previous = Some(r);
    }
}

fn swap_adjacent(frame: &mut [u8], a: usize, b: usize, c: usize) {
    frame[a..c].rotate_left(b - a);
}

/// The width of a minimal unsigned varint.
fn varint_width(mut v: u32) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Writes `value` as an unsigned varint of exactly `width` bytes (padded, or truncated to
/// what fits).
fn put_varint(frame: &mut [u8], at: usize, width: usize, value: u64) {
    let value = value.min((1u64 << (7 * width).min(35)) - 1);
    for i in 0..width {
        let mut byte = ((value >> (7 * i)) & 0x7f) as u8;
        if i + 1 < width {
            byte |= 0x80;
        }
        frame[at + i] = byte;
    }
}

/// A string's length prefix, before its bytes at `at`, changed to lie.
fn lie_string_len(rng: &mut Rng, frame: &mut [u8], at: usize, len: usize, compact: bool) {
    if compact {
        let width = varint_width(len as u32 + 1);
        let value = match rng.below(4) {
            // Past the string by any amount.
            0 | 1 => len as u64 + 2 + rng.below(1 << 16) as u64,
            _ => rng.pick(&[0u64, len as u64 + 2, 32769, u64::MAX]),
        };
        put_varint(frame, at - width, width, value);
    } else {
        let value = match rng.below(5) {
            0 => (len as i16).saturating_add(1 + rng.below(32767) as i16),
            1 => -2 - rng.below(32766) as i16,
            _ => rng.pick(&[-2i16, len as i16 + 1, i16::MAX, i16::MIN]),
        };
        frame[at - 2..at].copy_from_slice(&value.to_be_bytes());
    }
}

/// An array's count at `at` changed to lie.
fn lie_count(rng: &mut Rng, frame: &mut [u8], at: usize, count: usize, compact: bool) {
    if compact {
        let width = varint_width(count as u32 + 1);
        let value = match rng.below(4) {
            0 | 1 => count as u64 + 2 + rng.below(1 << 20) as u64,
            _ => rng.pick(&[count as u64 + 2, count as u64, u64::MAX]),
        };
        put_varint(frame, at, width, value);
    } else {
        let value = match rng.below(5) {
            0 => (count as i32).saturating_add(1 + rng.below(1 << 20) as i32),
            1 => rng.next() as i32 | i32::MIN,
            _ => rng.pick(&[-2i32, count as i32 + 1, i32::MAX, i32::MIN]),
        };
        frame[at..at + 4].copy_from_slice(&value.to_be_bytes());
    }
}

/// Whole-frame malformations of the canonical frame in `out[..len]`: the size prefix off by
/// one, the body cut short, bytes left over.
fn raw_frame(rng: &mut Rng, out: &mut [u8], len: usize, version: i16) -> Option<Mutant> {
    let size = i32::from_be_bytes([out[0], out[1], out[2], out[3]]);
    // A short frame has few places to cut: cutting is drawn less there.
    let cut_weight = 1 + (len / 32).min(3);
    let (len, change) = match weighted(rng, &[4, cut_weight * usize::from(len > 5), 4]) {
        0 => {
            // Off by one, or by a few (up to 64 either way).
            let by = if rng.chance(8) {
                1
            } else {
                1 + rng.below(64) as i32
            };
            let delta = if rng.chance(2) { by } else { -by };
            out[..4].copy_from_slice(&size.wrapping_add(delta).to_be_bytes());
            let change = if by == 1 {
                "size prefix off by one"
            } else {
                "size prefix off by a few"
            };
            (len, change)
        }
        1 if len > 5 => {
            let cut = 4 + rng.below(len - 5) + 1;
            out[..4].copy_from_slice(&((cut - 4) as i32).to_be_bytes());
            (cut, "body cut short, size prefix fixed")
        }
        _ => {
            let extra = 1 + rng.below(16);
            if len + extra > out.len() {
                return None;
            }
            for b in &mut out[len..len + extra] {
                *b = if rng.chance(2) { 0 } else { rng.next() as u8 };
            }
            out[..4].copy_from_slice(&size.wrapping_add(extra as i32).to_be_bytes());
            (len + extra, "bytes left over, size prefix fixed")
        }
    };
    Some(Mutant {
        len,
        version,
        mutation: bad(field::SIZE, change),
    })
}

/// Mutates one ElectLeaders response frame of `version` into `out`, as
/// [`mutate_request`] does a request. The mutant's version is [`Mutant::version`] (a version mutation changes it).
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

/// Byte-level mutation of `data` into `out`, for what does not parse: a bit flipped, a byte
/// or an int32 set to a boundary, a byte inserted or removed, the size prefix made to agree
/// with the length (or not). Returns the length written (at most `out.len()`).
pub fn mutate_bytes(data: &[u8], seed: u64, out: &mut [u8]) -> usize {
    let mut rng = Rng::new(seed);
    let mut v: Vec<u8> = data.to_vec();
    let rounds = 1 + rng.below(3);
    for _ in 0..rounds {
        let n = v.len();
        match rng.below(6) {
            0 if n > 0 => {
                let i = rng.below(n);
                v[i] ^= 1 << rng.below(8);
            }
            1 if n > 0 => {
                let i = rng.below(n);
                v[i] = rng.pick(&[0u8, 0xff, 0x7f, 0x80, 0x01]);
            }
            2 if n >= 4 => {
                let i = rng.below(n - 3);
                v[i..i + 4].copy_from_slice(&rng.pick(&I32_EDGES).to_be_bytes());
            }
            3 if n > 0 => {
                v.remove(rng.below(n));
            }
            4 if n >= 2 => {
                let i = rng.below(n - 1);
                v[i..i + 2].copy_from_slice(&rng.pick(&I16_EDGES).to_be_bytes());
            }
            _ => {
                let i = rng.below(n + 1);
                v.insert(i, rng.next() as u8);
            }
        }
    }
    let len = v.len().min(out.len());
    if len >= 4 && rng.chance(2) {
        let size = (len - 4) as i32;
        v[..4].copy_from_slice(&size.to_be_bytes());
    }
    out[..len].copy_from_slice(&v[..len]);
    len
}
