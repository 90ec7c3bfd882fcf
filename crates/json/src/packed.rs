//! The lists of a message read from JSON, packed into one byte buffer as they are read,
//! and read back by the library's writer through its source traits.
//!
//! `encode` must not hold a tree of the message: a request of 400,000 one-partition
//! topics as `Vec`s of owned names and partitions took 7 times its JSON text. Packed, a
//! topic costs a few bytes more than it does on the wire (its partitions are kept as the
//! wire has them, big-endian, and copied in one go), so the memory `encode` needs is about
//! twice the frame it writes: this list and the frame itself.
//!
//! The layout, private to this module (`u32` fields little-endian, lengths and counts as
//! unsigned LEB128 varints, like Kafka's compact lengths):
//!
//! ```text
//! request topic:     u32 partition count, then the partitions (4 bytes each, big-endian),
//!                    topic, tags
//! response result:   u32 partition result count, the partition results, topic, tags
//! partition result:  i32 partition id, i16 error code, message, tags
//! topic, message:    varint length + 1 (0: null), then the bytes
//! tags:              varint count, then for each: varint tag, varint length, data
//! ```
//!
//! A record is written whole by the functions here, but for its first fixed fields, which
//! are patched when the list inside it has been read ([`Packed::begin`], [`Packed::end`]).

use kafka_elect_leaders::{
    EncodePartitionResult, EncodeReplicaElectionResult, EncodeTopicPartitions, ErrorCode,
};

/// A packed list of request topics or of response results.
#[derive(Default)]
pub struct Packed {
    bytes: Vec<u8>,
    count: usize,
}

/// The most items a Kafka array can hold (its count is an int32): more in one list of the
/// JSON is refused as it is read.
pub const MAX_ITEMS: u32 = i32::MAX as u32;

/// A list of tagged fields, packed as they are read (a tag costs about what it costs on
/// the wire, not a JSON object's tree).
#[derive(Default, Clone, Debug, PartialEq)]
pub struct Tags {
    count: usize,
    bytes: Vec<u8>,
}

impl Tags {
    pub fn push(&mut self, tag: u32, data: &[u8]) {
        varint(&mut self.bytes, u64::from(tag));
        varint(&mut self.bytes, data.len() as u64);
        self.bytes.extend_from_slice(data);
        self.count += 1;
    }

    /// The tags, in the order given, as the writer reads them.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        let mut rest = &self.bytes[..];
        (0..self.count).map(move |_| {
            let tag = take_varint(&mut rest) as u32;
            let len = take_varint(&mut rest) as usize;
            (tag, take_bytes(&mut rest, len))
        })
    }
}

fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Where a record begins and where its inner list begins, for [`Packed::end`].
#[derive(Clone, Copy)]
pub struct Record {
    start: usize,
    inner: usize,
}

impl Packed {
    /// Starts a record: its fixed fields, left at zero until [`end`](Self::end).
    pub fn begin(&mut self) -> Record {
        let start = self.bytes.len();
        self.bytes.resize(start + 4, 0);
        Record {
            start,
            inner: start + 4,
        }
    }

    /// Back to the empty inner list of `record`: its list was given again in the JSON
    /// (the last one counts, as for any key given twice).
    pub fn restart(&mut self, record: Record) {
        self.bytes.truncate(record.inner);
    }

    /// Drops `record` and everything after it: it was refused.
    pub fn drop_record(&mut self, record: Record) {
        self.bytes.truncate(record.start);
    }

    /// One partition of a request topic.
    pub fn partition(&mut self, partition: i32) {
        self.bytes.extend_from_slice(&partition.to_be_bytes());
    }

    /// One partition result of a response result.
    pub fn partition_result(
        &mut self,
        partition_id: i32,
        error_code: i16,
        message: Option<&[u8]>,
        tags: &Tags,
    ) {
        self.bytes.extend_from_slice(&partition_id.to_le_bytes());
        self.bytes.extend_from_slice(&error_code.to_le_bytes());
        self.nullable(message);
        self.tags(tags);
    }

    /// Ends `record` with `items` in its inner list (at most [`MAX_ITEMS`], which the
    /// reader of the JSON enforces), its topic and its tags.
    pub fn end(&mut self, record: Record, items: u32, topic: &[u8], tags: &Tags) {
        self.bytes[record.start..record.start + 4].copy_from_slice(&items.to_le_bytes());
        self.nullable(Some(topic));
        self.tags(tags);
        self.count += 1;
    }

    fn nullable(&mut self, bytes: Option<&[u8]>) {
        match bytes {
            None => self.varint(0),
            Some(bytes) => {
                self.varint(bytes.len() as u64 + 1);
                self.bytes.extend_from_slice(bytes);
            }
        }
    }

    fn tags(&mut self, tags: &Tags) {
        varint(&mut self.bytes, tags.count as u64);
        self.bytes.extend_from_slice(&tags.bytes);
    }

    fn varint(&mut self, n: u64) {
        varint(&mut self.bytes, n);
    }

    /// The request topics, for [`kafka_elect_leaders::EncodeRequest::topic_partitions`].
    pub fn topics(&self) -> impl Iterator<Item = PackedTopic<'_>> + '_ {
        let mut rest = &self.bytes[..];
        (0..self.count).map(move |_| {
            let count = take_u32(&mut rest) as usize;
            let (partitions, after) = rest.split_at(count * 4);
            rest = after;
            let topic = take_nullable(&mut rest).unwrap_or_default();
            let tags = take_tags(&mut rest);
            PackedTopic {
                topic,
                partitions,
                tags,
            }
        })
    }

    /// The response results, for
    /// [`kafka_elect_leaders::EncodeResponse::replica_election_results`].
    pub fn results(&self) -> impl Iterator<Item = PackedResult<'_>> + '_ {
        let mut rest = &self.bytes[..];
        (0..self.count).map(move |_| {
            let count = take_u32(&mut rest);
            let start = rest;
            for _ in 0..count {
                take_partition_result(&mut rest);
            }
            let partitions = &start[..start.len() - rest.len()];
            let topic = take_nullable(&mut rest).unwrap_or_default();
            let tags = take_tags(&mut rest);
            PackedResult {
                topic,
                count,
                partitions,
                tags,
            }
        })
    }
}

// Reading back what this module wrote: the buffer is never anything else, so these trust
// its layout (a slice index out of range would be a bug here, not bad input).

fn take_u32(rest: &mut &[u8]) -> u32 {
    let (n, after) = rest.split_at(4);
    *rest = after;
    u32::from_le_bytes([n[0], n[1], n[2], n[3]])
}

fn take_varint(rest: &mut &[u8]) -> u64 {
    let mut n = 0u64;
    let mut shift = 0;
    loop {
        let (&b, after) = rest.split_first().expect("a varint this module wrote");
        *rest = after;
        n |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return n;
        }
        shift += 7;
    }
}

fn take_bytes<'a>(rest: &mut &'a [u8], len: usize) -> &'a [u8] {
    let (bytes, after) = rest.split_at(len);
    *rest = after;
    bytes
}

fn take_nullable<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
    match take_varint(rest) {
        0 => None,
        n => Some(take_bytes(rest, (n - 1) as usize)),
    }
}

/// The packed tags, as they are skipped; [`Tags`] reads them.
fn take_tags<'a>(rest: &mut &'a [u8]) -> &'a [u8] {
    let start = *rest;
    let count = take_varint(rest);
    for _ in 0..count {
        take_varint(rest);
        let len = take_varint(rest) as usize;
        take_bytes(rest, len);
    }
    &start[..start.len() - rest.len()]
}

fn take_partition_result<'a>(rest: &mut &'a [u8]) -> PackedPartitionResult<'a> {
    let fixed = take_bytes(rest, 6);
    let partition_id = i32::from_le_bytes([fixed[0], fixed[1], fixed[2], fixed[3]]);
    let error_code = i16::from_le_bytes([fixed[4], fixed[5]]);
    let message = take_nullable(rest);
    let tags = take_tags(rest);
    PackedPartitionResult {
        partition_id,
        error_code,
        message,
        tags,
    }
}

/// Packed tags, read as the writer asks for them.
fn tags(mut packed: &[u8]) -> impl Iterator<Item = (u32, &[u8])> + '_ {
    let count = take_varint(&mut packed);
    (0..count).map(move |_| {
        let tag = take_varint(&mut packed) as u32;
        let len = take_varint(&mut packed) as usize;
        (tag, take_bytes(&mut packed, len))
    })
}

/// A request topic, read back.
pub struct PackedTopic<'a> {
    topic: &'a [u8],
    partitions: &'a [u8],
    tags: &'a [u8],
}

impl EncodeTopicPartitions for PackedTopic<'_> {
    fn topic(&self) -> &[u8] {
        self.topic
    }
    fn partitions(&self) -> impl Iterator<Item = i32> + '_ {
        self.partitions
            .chunks_exact(4)
            .map(|p| i32::from_be_bytes([p[0], p[1], p[2], p[3]]))
    }
    fn partitions_wire(&self) -> Option<&[u8]> {
        Some(self.partitions)
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags(self.tags)
    }
}

/// A response result, read back.
pub struct PackedResult<'a> {
    topic: &'a [u8],
    count: u32,
    partitions: &'a [u8],
    tags: &'a [u8],
}

impl EncodeReplicaElectionResult for PackedResult<'_> {
    fn topic(&self) -> &[u8] {
        self.topic
    }
    fn partition_result(&self) -> impl Iterator<Item = impl EncodePartitionResult + '_> + '_ {
        let mut rest = self.partitions;
        (0..self.count).map(move |_| take_partition_result(&mut rest))
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags(self.tags)
    }
}

/// A partition result, read back.
pub struct PackedPartitionResult<'a> {
    partition_id: i32,
    error_code: i16,
    message: Option<&'a [u8]>,
    tags: &'a [u8],
}

impl EncodePartitionResult for PackedPartitionResult<'_> {
    fn partition_id(&self) -> i32 {
        self.partition_id
    }
    fn error_code(&self) -> ErrorCode {
        ErrorCode(self.error_code)
    }
    fn error_message(&self) -> Option<&[u8]> {
        self.message
    }
    fn tagged_fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        tags(self.tags)
    }
}
