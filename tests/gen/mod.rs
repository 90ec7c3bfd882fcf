//! Pseudo-random ElectLeaders messages for the differential tests (kafka-protocol in
//! `tests/differential.rs`, Apache Kafka itself in `tests/kafka_java.rs`): a fixed-seed
//! generator, the messages it builds in storage the test owns, our writer fed from them, and
//! our parsed views read back into them.
//!
//! The generator is a fixed-seed splitmix64; every case has its own seed, so a failure
//! reproduces alone.

// Each test binary uses a different subset.
#![allow(dead_code)]

use kafka_elect_leaders::{
    ElectLeadersRequest, ElectLeadersRequestData, ElectLeadersResponse, ElectLeadersResponseData,
    ElectionType, EncodeErrorKind, EncodeRequest, EncodeResponse, ErrorCode, Int32List,
    PartitionResultData, ReplicaElectionResultData, TaggedFieldData, TaggedFields,
    TopicPartitionsData, API_KEY, MAX_STRING_LEN,
};

/// Messages per (kind, version).
pub const CASES: u64 = 2000;
/// The base seed; each case derives its own from it (see [`case_seed`]).
pub const SEED: u64 = 0x6b61_666b_6134_3364;
/// One case in this many carries a string of exactly `MAX_STRING_LEN` bytes.
pub const HUGE_EVERY: u64 = 400;
pub const HUGE_AT: u64 = 123;

// ---------------------------------------------------------------------------------------
// A tiny PRNG

/// splitmix64: small, fast, good enough to spread test inputs, and reproducible.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (the modulo bias is irrelevant here).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below((hi - lo + 1) as u64) as usize
    }

    pub fn percent(&mut self, p: u64) -> bool {
        self.below(100) < p
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }

    /// Any int32, with the edges and negatives well represented.
    pub fn i32(&mut self) -> i32 {
        match self.below(10) {
            0 => 0,
            1 => -1,
            2 => self.pick(&[i32::MIN, i32::MAX, i32::MIN + 1, i32::MAX - 1]),
            3 | 4 => self.range(0, 2000) as i32 - 1000,
            _ => self.next_u64() as i32,
        }
    }

    /// Any int16, likewise.
    pub fn i16(&mut self) -> i16 {
        match self.below(10) {
            0 => 0,
            1 => -1,
            2 => self.pick(&[i16::MIN, i16::MAX]),
            3 | 4 => self.range(0, 200) as i16 - 100,
            _ => self.next_u64() as i16,
        }
    }

    pub fn i8(&mut self) -> i8 {
        self.next_u64() as i8
    }
}

/// The seed of one case: kind (0 request, 1 response), version and index mixed into [`SEED`].
pub fn case_seed(kind: u64, version: i16, case: u64) -> u64 {
    SEED ^ (kind << 56) ^ ((version as u64) << 48) ^ case
}

// ---------------------------------------------------------------------------------------
// Generated messages, in storage the test owns

/// Unknown tagged fields: (tag, data), tags unique and ascending.
pub type Tags = Vec<(u32, Vec<u8>)>;

#[derive(Clone, Debug, PartialEq)]
pub struct GenTopic {
    pub name: String,
    pub partitions: Vec<i32>,
    pub tags: Tags,
}

#[derive(Clone, Debug, PartialEq)]
pub struct GenRequest {
    pub version: i16,
    pub correlation_id: i32,
    pub client_id: Option<String>,
    pub header_tags: Tags,
    pub election_type: i8,
    pub topics: Option<Vec<GenTopic>>,
    pub timeout_ms: i32,
    pub tags: Tags,
}

#[derive(Clone, Debug, PartialEq)]
pub struct GenPartition {
    pub partition_id: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
    pub tags: Tags,
}

#[derive(Clone, Debug, PartialEq)]
pub struct GenResult {
    pub topic: String,
    pub partitions: Vec<GenPartition>,
    pub tags: Tags,
}

#[derive(Clone, Debug, PartialEq)]
pub struct GenResponse {
    pub version: i16,
    pub correlation_id: i32,
    pub header_tags: Tags,
    pub throttle_time_ms: i32,
    pub error_code: i16,
    pub results: Vec<GenResult>,
    pub tags: Tags,
}

pub const ASCII: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
/// Characters of every UTF-8 width, edges included (NUL, U+007F/0080, U+07FF/0800, U+FFFF,
/// U+10000, U+10FFFF), and some real text.
pub const WIDE: &[char] = &[
    'é',
    'ß',
    'ø',
    'å',
    'ж',
    'λ',
    'ü',
    '日',
    '本',
    '主',
    '题',
    '管',
    '理',
    '€',
    '🚀',
    '🦀',
    '😀',
    '\u{0}',
    '\u{7f}',
    '\u{80}',
    '\u{7ff}',
    '\u{800}',
    '\u{ffff}',
    '\u{fffd}',
    '\u{10000}',
    '\u{10ffff}',
    ' ',
];

/// A valid UTF-8 string of exactly `len` bytes; ASCII only, or mixed widths.
pub fn fill_string(rng: &mut Rng, len: usize, ascii_only: bool) -> String {
    let mut s = String::with_capacity(len);
    while s.len() < len {
        let room = len - s.len();
        let c = if !ascii_only && rng.percent(40) {
            rng.pick(WIDE)
        } else {
            char::from(rng.pick(ASCII))
        };
        if c.len_utf8() <= room {
            s.push(c);
        } else {
            s.push(char::from(rng.pick(ASCII)));
        }
    }
    s
}

/// A string length: mostly short, sometimes a few hundred bytes, sometimes at the edges
/// where a compact length grows a byte (127 -> 128 -> 2 bytes; 16383 -> 16384 -> 3 bytes).
pub fn string_len(rng: &mut Rng) -> usize {
    match rng.below(200) {
        0..=29 => 0,
        30..=99 => rng.range(1, 16),
        100..=149 => rng.range(17, 64),
        150..=185 => rng.range(65, 300),
        186..=197 => rng.range(125, 129),
        _ => rng.range(16381, 16384),
    }
}

pub fn gen_string(rng: &mut Rng) -> String {
    let len = string_len(rng);
    let ascii_only = rng.percent(50);
    fill_string(rng, len, ascii_only)
}

/// A nullable string: null, empty, or text (client ids, error messages).
pub fn gen_nullable_string(rng: &mut Rng) -> Option<String> {
    match rng.below(10) {
        0..=2 => None,
        3 | 4 => Some(String::new()),
        _ => Some(gen_string(rng)),
    }
}

/// A list length: often 0 or 1, up to 20.
pub fn list_len(rng: &mut Rng) -> usize {
    match rng.below(20) {
        0..=2 => 0,
        3..=7 => 1,
        8..=15 => rng.range(2, 5),
        _ => rng.range(6, 20),
    }
}

/// A partition array length: often 0 or 1, up to 50, rarely around 127 (compact count edge).
pub fn partitions_len(rng: &mut Rng) -> usize {
    match rng.below(50) {
        0..=4 => 0,
        5..=16 => 1,
        17..=38 => rng.range(2, 8),
        39..=48 => rng.range(9, 50),
        _ => rng.range(126, 128),
    }
}

pub fn gen_partition_id(rng: &mut Rng) -> i32 {
    if rng.percent(70) {
        rng.range(0, 100) as i32
    } else {
        rng.i32()
    }
}

pub fn gen_error_code(rng: &mut Rng) -> i16 {
    match rng.below(10) {
        0..=4 => 0,
        5..=7 => rng.range(1, 120) as i16,
        8 => -1,
        _ => rng.i16(),
    }
}

pub fn gen_bytes(rng: &mut Rng) -> Vec<u8> {
    let len = match rng.below(20) {
        0..=3 => 0,
        4..=16 => rng.range(1, 16),
        _ => rng.range(100, 300), // a two-byte size uvarint
    };
    (0..len).map(|_| rng.next_u64() as u8).collect()
}

/// Unknown tagged fields for a flexible struct (none otherwise): unique, ascending, within
/// `0..=i32::MAX`, with tags and sizes of one to five varint bytes.
pub fn gen_tags(rng: &mut Rng, flexible: bool) -> Tags {
    if !flexible {
        return Tags::new();
    }
    let count = match rng.below(8) {
        0..=3 => 0,
        4 | 5 => 1,
        _ => rng.range(2, 5),
    };
    let mut tags = Tags::new();
    let mut tag: u64 = match rng.below(4) {
        0 => 0,
        1 => rng.below(10),
        2 => rng.range(120, 20_000) as u64,
        _ => rng.below(1 << 30),
    };
    for _ in 0..count {
        if tag > i32::MAX as u64 {
            break;
        }
        tags.push((tag as u32, gen_bytes(rng)));
        tag += match rng.below(4) {
            0 | 1 => 1,
            2 => rng.range(2, 200) as u64,
            _ => rng.below(1 << 28) + 1,
        };
    }
    let last = tags.last().map(|(t, _)| *t);
    if rng.percent(5) && last.map_or(true, |t| t < i32::MAX as u32) {
        tags.push((i32::MAX as u32, gen_bytes(rng)));
    }
    tags
}

pub fn gen_request(rng: &mut Rng, version: i16, huge: bool) -> GenRequest {
    let flexible = version >= 2;
    let correlation_id = rng.i32();
    let client_id = gen_nullable_string(rng);
    let header_tags = gen_tags(rng, flexible);
    let election_type = if version == 0 {
        0 // v0 cannot carry it: only PREFERRED
    } else {
        match rng.below(10) {
            0..=3 => 0,
            4..=6 => 1,
            7 => 2,
            8 => -1,
            _ => rng.i8(),
        }
    };
    let topics = if rng.percent(12) {
        None
    } else {
        let n = list_len(rng);
        Some(
            (0..n)
                .map(|_| GenTopic {
                    name: gen_string(rng),
                    partitions: (0..partitions_len(rng))
                        .map(|_| gen_partition_id(rng))
                        .collect(),
                    tags: gen_tags(rng, flexible),
                })
                .collect(),
        )
    };
    let timeout_ms = if rng.percent(20) { 60_000 } else { rng.i32() };
    let tags = gen_tags(rng, flexible);
    let mut request = GenRequest {
        version,
        correlation_id,
        client_id,
        header_tags,
        election_type,
        topics,
        timeout_ms,
        tags,
    };
    if huge {
        // One topic name, and sometimes the client id, of exactly the maximum length.
        let topics = request.topics.get_or_insert_with(Vec::new);
        if topics.is_empty() {
            topics.push(GenTopic {
                name: String::new(),
                partitions: vec![0],
                tags: Tags::new(),
            });
        }
        let at = rng.below(topics.len() as u64) as usize;
        let ascii_only = rng.percent(50);
        topics[at].name = fill_string(rng, MAX_STRING_LEN, ascii_only);
        if rng.percent(50) {
            request.client_id = Some(fill_string(rng, MAX_STRING_LEN, !ascii_only));
        }
    }
    request
}

pub fn gen_response(rng: &mut Rng, version: i16, huge: bool) -> GenResponse {
    let flexible = version >= 2;
    let correlation_id = rng.i32();
    let header_tags = gen_tags(rng, flexible);
    let throttle_time_ms = if rng.percent(40) { 0 } else { rng.i32() };
    // v0 cannot carry the top-level error code: only NONE.
    let error_code = if version == 0 { 0 } else { gen_error_code(rng) };
    let n = list_len(rng);
    let results = (0..n)
        .map(|_| GenResult {
            topic: gen_string(rng),
            partitions: (0..partitions_len(rng))
                .map(|_| GenPartition {
                    partition_id: gen_partition_id(rng),
                    error_code: gen_error_code(rng),
                    error_message: gen_nullable_string(rng),
                    tags: gen_tags(rng, flexible),
                })
                .collect(),
            tags: gen_tags(rng, flexible),
        })
        .collect();
    let tags = gen_tags(rng, flexible);
    let mut response = GenResponse {
        version,
        correlation_id,
        header_tags,
        throttle_time_ms,
        error_code,
        results,
        tags,
    };
    if huge {
        // One topic name and one error message of exactly the maximum length.
        if response.results.is_empty() {
            response.results.push(GenResult {
                topic: String::new(),
                partitions: Vec::new(),
                tags: Tags::new(),
            });
        }
        let at = rng.below(response.results.len() as u64) as usize;
        let result = &mut response.results[at];
        let ascii_only = rng.percent(50);
        result.topic = fill_string(rng, MAX_STRING_LEN, ascii_only);
        if result.partitions.is_empty() {
            result.partitions.push(GenPartition {
                partition_id: 0,
                error_code: 0,
                error_message: None,
                tags: Tags::new(),
            });
        }
        let p = rng.below(result.partitions.len() as u64) as usize;
        result.partitions[p].error_message = Some(fill_string(rng, MAX_STRING_LEN, !ascii_only));
    }
    response
}

// ---------------------------------------------------------------------------------------
// Our side: borrow the generated values into the writer's plain data, and read views back

pub fn tag_data(tags: &Tags) -> Vec<TaggedFieldData<'_>> {
    tags.iter()
        .map(|(tag, data)| TaggedFieldData::new(*tag, data))
        .collect()
}

/// Checks that `encoded_len` is what `encode` writes, that nothing past it is touched, and
/// that a buffer one byte short is refused; returns the frame.
pub fn finish_encode(
    len: Result<usize, kafka_elect_leaders::EncodeError>,
    encode: impl Fn(&mut [u8]) -> Result<usize, kafka_elect_leaders::EncodeError>,
    ctx: &str,
) -> Vec<u8> {
    const SENTINEL: u8 = 0xa5;
    const SLACK: usize = 8;
    let len = len.unwrap_or_else(|e| panic!("{ctx}: our encoded_len refused: {e}"));
    let mut buf = vec![SENTINEL; len + SLACK];
    let written = encode(&mut buf).unwrap_or_else(|e| panic!("{ctx}: our encode refused: {e}"));
    assert_eq!(written, len, "{ctx}: encoded_len != bytes written");
    assert!(
        buf[len..].iter().all(|&b| b == SENTINEL),
        "{ctx}: encode wrote past the frame"
    );
    let mut short = vec![SENTINEL; len - 1];
    match encode(&mut short) {
        Err(e) => assert_eq!(
            e.kind,
            EncodeErrorKind::BufferTooSmall { needed: len },
            "{ctx}"
        ),
        Ok(n) => panic!("{ctx}: encode into {} bytes wrote {n}", len - 1),
    }
    buf.truncate(len);
    let size = i32::from_be_bytes(buf[..4].try_into().unwrap());
    assert_eq!(size as usize, len - 4, "{ctx}: our size prefix");
    buf
}

/// Lends `g` to `f` as the writer's plain data.
pub fn with_request_data<R>(
    g: &GenRequest,
    f: impl FnOnce(&ElectLeadersRequestData<'_>) -> R,
) -> R {
    let header_tags = tag_data(&g.header_tags);
    let body_tags = tag_data(&g.tags);
    let topic_tags: Vec<Vec<TaggedFieldData<'_>>> = g
        .topics
        .iter()
        .flatten()
        .map(|t| tag_data(&t.tags))
        .collect();
    let topics: Option<Vec<TopicPartitionsData<'_>>> = g.topics.as_ref().map(|topics| {
        topics
            .iter()
            .zip(&topic_tags)
            .map(|(t, tags)| TopicPartitionsData {
                topic: t.name.as_bytes(),
                partitions: &t.partitions,
                tagged_fields: tags,
            })
            .collect()
    });
    let data = ElectLeadersRequestData {
        correlation_id: g.correlation_id,
        client_id: g.client_id.as_deref().map(str::as_bytes),
        header_tagged_fields: &header_tags,
        election_type: ElectionType(g.election_type),
        topic_partitions: topics.as_deref(),
        timeout_ms: g.timeout_ms,
        tagged_fields: &body_tags,
    };
    f(&data)
}

pub fn encode_ours_request(g: &GenRequest, ctx: &str) -> Vec<u8> {
    with_request_data(g, |data| {
        finish_encode(
            data.encoded_len(g.version),
            |buf| data.encode(g.version, buf),
            ctx,
        )
    })
}

/// Lends `g` to `f` as the writer's plain data.
pub fn with_response_data<R>(
    g: &GenResponse,
    f: impl FnOnce(&ElectLeadersResponseData<'_>) -> R,
) -> R {
    let header_tags = tag_data(&g.header_tags);
    let body_tags = tag_data(&g.tags);
    let result_tags: Vec<Vec<TaggedFieldData<'_>>> =
        g.results.iter().map(|r| tag_data(&r.tags)).collect();
    let partition_tags: Vec<Vec<Vec<TaggedFieldData<'_>>>> = g
        .results
        .iter()
        .map(|r| r.partitions.iter().map(|p| tag_data(&p.tags)).collect())
        .collect();
    let partitions: Vec<Vec<PartitionResultData<'_>>> = g
        .results
        .iter()
        .zip(&partition_tags)
        .map(|(r, tags)| {
            r.partitions
                .iter()
                .zip(tags)
                .map(|(p, tags)| PartitionResultData {
                    partition_id: p.partition_id,
                    error_code: ErrorCode(p.error_code),
                    error_message: p.error_message.as_deref().map(str::as_bytes),
                    tagged_fields: tags,
                })
                .collect()
        })
        .collect();
    let results: Vec<ReplicaElectionResultData<'_>> = g
        .results
        .iter()
        .zip(&partitions)
        .zip(&result_tags)
        .map(|((r, partitions), tags)| ReplicaElectionResultData {
            topic: r.topic.as_bytes(),
            partition_result: partitions,
            tagged_fields: tags,
        })
        .collect();
    let data = ElectLeadersResponseData {
        correlation_id: g.correlation_id,
        header_tagged_fields: &header_tags,
        throttle_time_ms: g.throttle_time_ms,
        error_code: ErrorCode(g.error_code),
        replica_election_results: &results,
        tagged_fields: &body_tags,
    };
    f(&data)
}

pub fn encode_ours_response(g: &GenResponse, ctx: &str) -> Vec<u8> {
    with_response_data(g, |data| {
        finish_encode(
            data.encoded_len(g.version),
            |buf| data.encode(g.version, buf),
            ctx,
        )
    })
}

pub fn utf8(bytes: &[u8], what: &str, ctx: &str) -> String {
    String::from_utf8(bytes.to_vec())
        .unwrap_or_else(|e| panic!("{ctx}: {what} is not the UTF-8 that was written: {e}"))
}

pub fn view_tags(fields: TaggedFields<'_>, ctx: &str) -> Tags {
    let tags: Tags = fields
        .iter()
        .map(|f| (f.tag(), f.data().to_vec()))
        .collect();
    assert_eq!(tags.len(), fields.len(), "{ctx}: tagged fields len()");
    tags
}

/// Reads a partition list every way the view offers: forwards, backwards, by index.
pub fn view_int32s(list: Int32List<'_>, ctx: &str) -> Vec<i32> {
    let forward: Vec<i32> = list.iter().collect();
    assert_eq!(forward.len(), list.len(), "{ctx}: Int32List len()");
    assert_eq!(list.is_empty(), forward.is_empty(), "{ctx}: is_empty()");
    let mut backward: Vec<i32> = list.iter().rev().collect();
    backward.reverse();
    assert_eq!(backward, forward, "{ctx}: Int32List reversed");
    for (i, &p) in forward.iter().enumerate() {
        assert_eq!(list.get(i), Some(p), "{ctx}: Int32List get({i})");
    }
    assert_eq!(list.get(forward.len()), None, "{ctx}: Int32List get(len)");
    forward
}

/// Every value of a parsed request, in the generator's terms.
pub fn request_model(r: &ElectLeadersRequest<'_>, ctx: &str) -> GenRequest {
    let header = r.header();
    assert_eq!(header.api_key(), API_KEY, "{ctx}: api key");
    assert_eq!(header.api_version(), r.version(), "{ctx}: api version");
    assert_eq!(header.correlation_id(), r.correlation_id(), "{ctx}");
    let topics = r.topic_partitions().map(|list| {
        let topics: Vec<GenTopic> = list
            .iter()
            .map(|t| GenTopic {
                name: utf8(t.topic(), "a topic name", ctx),
                partitions: view_int32s(t.partitions(), ctx),
                tags: view_tags(t.tagged_fields(), ctx),
            })
            .collect();
        assert_eq!(topics.len(), list.len(), "{ctx}: topics len()");
        topics
    });
    GenRequest {
        version: r.version(),
        correlation_id: header.correlation_id(),
        client_id: header.client_id().map(|c| utf8(c, "the client id", ctx)),
        header_tags: view_tags(header.tagged_fields(), ctx),
        election_type: r.election_type().0,
        topics,
        timeout_ms: r.timeout_ms(),
        tags: view_tags(r.tagged_fields(), ctx),
    }
}

/// Every value of a parsed response, in the generator's terms.
pub fn response_model(r: &ElectLeadersResponse<'_>, ctx: &str) -> GenResponse {
    let list = r.replica_election_results();
    let results: Vec<GenResult> = list
        .iter()
        .map(|result| {
            let plist = result.partition_result();
            let partitions: Vec<GenPartition> = plist
                .iter()
                .map(|p| GenPartition {
                    partition_id: p.partition_id(),
                    error_code: p.error_code().0,
                    error_message: p.error_message().map(|m| utf8(m, "an error message", ctx)),
                    tags: view_tags(p.tagged_fields(), ctx),
                })
                .collect();
            assert_eq!(partitions.len(), plist.len(), "{ctx}: partitions len()");
            GenResult {
                topic: utf8(result.topic(), "a topic name", ctx),
                partitions,
                tags: view_tags(result.tagged_fields(), ctx),
            }
        })
        .collect();
    assert_eq!(results.len(), list.len(), "{ctx}: results len()");
    GenResponse {
        version: r.version(),
        correlation_id: r.correlation_id(),
        header_tags: view_tags(r.header().tagged_fields(), ctx),
        throttle_time_ms: r.throttle_time_ms(),
        error_code: r.error_code().0,
        results,
        tags: view_tags(r.tagged_fields(), ctx),
    }
}
/// Byte equality, reported as the first differing offset rather than two huge dumps.
pub fn assert_same_bytes(ours: &[u8], theirs: &[u8], ctx: &str) {
    if ours == theirs {
        return;
    }
    let at = ours
        .iter()
        .zip(theirs)
        .position(|(a, b)| a != b)
        .unwrap_or(ours.len().min(theirs.len()));
    let window = |b: &[u8]| {
        let end = b.len().min(at + 16);
        format!("{:02x?}", &b[at.min(end)..end])
    };
    panic!(
        "{ctx}: frames differ: ours {} bytes, theirs {} bytes; first difference at \
         offset {at}: ours {} vs theirs {}",
        ours.len(),
        theirs.len(),
        window(ours),
        window(theirs),
    );
}

/// What the generator produced, counted, so the test can tell it covered what it claims.
#[derive(Default, Debug)]
pub struct Coverage {
    pub null_list: u32,
    pub empty_list: u32,
    pub long_list: u32,
    pub null_string: u32,
    pub empty_string: u32,
    pub non_ascii: u32,
    pub max_len_string: u32,
    pub negative: u32,
    pub odd_election_type: u32,
    pub tagged: u32,
    pub entries: u32,
    pub partitions: u32,
}

impl Coverage {
    pub fn string(&mut self, s: Option<&str>) {
        match s {
            None => self.null_string += 1,
            Some("") => self.empty_string += 1,
            Some(s) if s.len() == MAX_STRING_LEN => self.max_len_string += 1,
            Some(s) if !s.is_ascii() => self.non_ascii += 1,
            Some(_) => {}
        }
    }

    pub fn list(&mut self, len: Option<usize>) {
        match len {
            None => self.null_list += 1,
            Some(0) => self.empty_list += 1,
            Some(n) if n >= 10 => self.long_list += 1,
            Some(_) => {}
        }
    }

    pub fn ints(&mut self, values: &[i64]) {
        self.negative += values.iter().filter(|&&v| v < 0).count() as u32;
    }

    pub fn tags(&mut self, tags: &Tags) {
        self.tagged += u32::from(!tags.is_empty());
    }

    pub fn request(&mut self, g: &GenRequest) {
        self.string(g.client_id.as_deref());
        self.tags(&g.header_tags);
        self.tags(&g.tags);
        self.list(g.topics.as_ref().map(Vec::len));
        self.ints(&[g.correlation_id.into(), g.timeout_ms.into()]);
        self.odd_election_type += u32::from(!(0..=1).contains(&g.election_type));
        for t in g.topics.iter().flatten() {
            self.entries += 1;
            self.partitions += t.partitions.len() as u32;
            self.string(Some(&t.name));
            self.list(Some(t.partitions.len()));
            self.tags(&t.tags);
            let ids: Vec<i64> = t.partitions.iter().map(|&p| p.into()).collect();
            self.ints(&ids);
        }
    }

    pub fn response(&mut self, g: &GenResponse) {
        self.tags(&g.header_tags);
        self.tags(&g.tags);
        self.list(Some(g.results.len()));
        self.ints(&[
            g.correlation_id.into(),
            g.throttle_time_ms.into(),
            g.error_code.into(),
        ]);
        for r in &g.results {
            self.entries += 1;
            self.partitions += r.partitions.len() as u32;
            self.string(Some(&r.topic));
            self.list(Some(r.partitions.len()));
            self.tags(&r.tags);
            for p in &r.partitions {
                self.string(p.error_message.as_deref());
                self.tags(&p.tags);
                self.ints(&[p.partition_id.into(), p.error_code.into()]);
            }
        }
    }
}
