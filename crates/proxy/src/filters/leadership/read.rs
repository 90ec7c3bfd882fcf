//! The requests the leadership-change policy reads, read as far as the policy needs and no
//! further, with every count checked against the bytes that remain before anything is
//! kept.
//!
//! Why by hand and not with the `kafka-protocol` crate the address rewrite uses: these
//! requests come from clients, before anything is known of them, and `kafka-protocol` 0.18
//! reserves `Vec::with_capacity(count)` for every array count it reads off the wire (a
//! 30-byte frame claiming four billion entries aborts the process), and holds ~100 bytes
//! per entry besides. Here what is kept is a list of entries, each a few words borrowing
//! the frame's bytes, and only the config changes that matter to the policy. The
//! `kafka-protocol` crate stays the oracle: the tests read every version of every request
//! it writes and decode every refusal written here with it.
//!
//! The layouts, from Kafka's message definitions (`clients/src/main/resources/common/
//! message/*Request.json`); "flexible" versions use compact lengths and tagged fields:
//!
//! ```text
//! CreateTopics (19) v0-7, flexible 5+
//!   Topics [Name string, NumPartitions i32, ReplicationFactor i16,
//!           Assignments [PartitionIndex i32, BrokerIds [i32]],
//!           Configs [Name string, Value string?]]
//!   TimeoutMs i32, ValidateOnly bool (1+)
//! DeleteTopics (20) v0-6, flexible 4+
//!   v0-5: TopicNames [string]     v6+: Topics [Name string?, TopicId uuid]
//!   TimeoutMs i32
//! DeleteRecords (21) v0-2, flexible 2+
//!   Topics [Name string, Partitions [PartitionIndex i32, Offset i64]]
//!   TimeoutMs i32
//! AlterConfigs (33) v0-2, flexible 2+
//!   Resources [ResourceType i8, ResourceName string, Configs [Name string, Value string?]]
//!   ValidateOnly bool
//! CreatePartitions (37) v0-3, flexible 2+
//!   Topics [Name string, Count i32, Assignments [BrokerIds [i32]]?]
//!   TimeoutMs i32, ValidateOnly bool
//! IncrementalAlterConfigs (44) v0-1, flexible 1+
//!   Resources [ResourceType i8, ResourceName string,
//!              Configs [Name string, ConfigOperation i8, Value string?]]
//!   ValidateOnly bool
//! AlterPartitionReassignments (45) v0-1, flexible 0+
//!   TimeoutMs i32, AllowReplicationFactorChange bool (1+),
//!   Topics [Name string, Partitions [PartitionIndex i32, Replicas [i32]?]]
//! UnregisterBroker (64) v0, flexible 0+
//!   BrokerId i32
//! ```

use std::fmt;

use super::api::Api;

use super::topic_configs::{
    self, BrokerSynonym, OnProtected, TopicConfig, UNCLEAN_LEADER_ELECTION,
};

/// ConfigResource types (`org.apache.kafka.common.config.ConfigResource.Type`).
/// A topic's configs.
pub const RESOURCE_TOPIC: i8 = 2;
/// A broker's configs (an empty name: the cluster's defaults).
pub const RESOURCE_BROKER: i8 = 4;
/// A broker's log levels.
pub const RESOURCE_BROKER_LOGGER: i8 = 8;
/// A client-metrics subscription.
pub const RESOURCE_CLIENT_METRICS: i8 = 16;
/// A consumer group's configs.
pub const RESOURCE_GROUP: i8 = 32;

/// Where a request could not be read: the field and the byte offset in the frame (size
/// prefix included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadError {
    /// The field, as Kafka's schema names it.
    pub field: &'static str,
    /// Where the field begins, in bytes from the frame's first (its size prefix).
    pub offset: usize,
    /// What is wrong there.
    pub kind: ReadErrorKind,
}

/// What is wrong at a [`ReadError`]'s offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadErrorKind {
    /// The frame ends before the field does.
    End,
    /// A count claims more entries than the bytes that remain can hold.
    Count,
    /// A length or count that is negative (or null) where Kafka does not allow it.
    Negative,
    /// A varint longer than 5 bytes.
    Varint,
    /// Bytes left after the request's last field.
    Trailing,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            ReadErrorKind::End => "the frame ends inside",
            ReadErrorKind::Count => "more entries than the bytes left can hold in",
            ReadErrorKind::Negative => "a negative length or null in",
            ReadErrorKind::Varint => "a varint longer than 5 bytes in",
            ReadErrorKind::Trailing => "bytes left after",
        };
        write!(f, "{what} {} at offset {}", self.field, self.offset)
    }
}

/// A config change that matters to the policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConfigChange<'a> {
    /// The config's name, as the request has it.
    pub name: &'a [u8],
    /// What the guard knows of it.
    pub key: Key,
    /// What is done to it.
    pub op: Op<'a>,
}

/// What the guard knows of a config that matters to the policy: its line in the topic
/// configs' table ([`TOPIC_CONFIGS`](super::topic_configs::TOPIC_CONFIGS)). Configs the table allows are not kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// A topic config (on a topic, or in CreateTopics).
    Topic(&'static TopicConfig),
    /// A broker config that is a topic config's default (on a broker, or the cluster
    /// default).
    Broker(&'static BrokerSynonym),
    /// A topic config the guard does not know: only the first of an entry is kept, one
    /// being enough to refuse it on a protected topic.
    Unknown,
}

impl Key {
    /// What the key of a topic config (`topic`) or of a broker config is to the policy;
    /// None: it does not matter (allowed on a protected topic, or a broker config that no
    /// topic inherits).
    fn of(name: &[u8], topic: bool) -> Option<Key> {
        let (key, config) = if topic {
            match topic_configs::topic_config(name) {
                Some(config) => (Key::Topic(config), config),
                None => return Some(Key::Unknown),
            }
        } else {
            let synonym = topic_configs::broker_synonym(name)?;
            (Key::Broker(synonym), synonym.topic_config())
        };
        (config.decision != OnProtected::Allowed).then_some(key)
    }

    /// The topic config (its own, or the one a broker config is the default of); None for
    /// one the guard does not know.
    pub fn topic_config(self) -> Option<&'static TopicConfig> {
        match self {
            Key::Topic(config) => Some(config),
            Key::Broker(synonym) => Some(synonym.topic_config()),
            Key::Unknown => None,
        }
    }

    /// Whether it is `unclean.leader.election.enable`, of a topic or a broker.
    pub fn is_unclean(self) -> bool {
        self.topic_config()
            .is_some_and(|c| c.key == UNCLEAN_LEADER_ELECTION)
    }
}

/// What a change does to its config.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op<'a> {
    /// Set to this value (null: Kafka takes it as a delete in IncrementalAlterConfigs).
    Set(Option<&'a [u8]>),
    /// IncrementalAlterConfigs DELETE: back to the inherited value.
    Delete,
    /// IncrementalAlterConfigs APPEND or SUBTRACT (list configs only; Kafka refuses them on
    /// these two, but the guard does not rely on it).
    ListOp(i8),
    /// An AlterConfigs that does not name it: it replaces the resource's whole set, so the
    /// config goes back to the inherited value.
    Omitted,
    /// An operation code the guard does not know.
    Unknown(i8),
}

impl Op<'_> {
    /// Whether this change leaves `unclean.leader.election.enable` false for sure: a value
    /// that Kafka's boolean parser reads as false (trimmed, any case).
    pub fn sets_false(&self) -> bool {
        matches!(self, Op::Set(Some(v)) if v.trim_ascii().eq_ignore_ascii_case(b"false"))
    }
}

/// One entry of the request, which its answer has one entry for: a topic, a config
/// resource, or (DeleteTopics v6) a topic named by its id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    /// The config resource's type; [`RESOURCE_TOPIC`] for the topic APIs.
    pub resource_type: i8,
    /// The topic or resource name; None: a topic named only by id (DeleteTopics v6+).
    pub name: Option<&'a [u8]>,
    /// DeleteTopics v6+: the topic id (zero when named).
    pub topic_id: [u8; 16],
    /// The changes to the configs the policy looks at, in request order.
    pub changes: Vec<ConfigChange<'a>>,
    /// AlterPartitionReassignments, DeleteRecords: the partitions named, in order.
    pub partitions: Vec<i32>,
    /// CreateTopics: the replication factor asked for (-1: the broker's default, or an
    /// explicit assignment).
    pub replication_factor: i16,
    /// CreateTopics with explicit assignments: the fewest replicas a partition is given.
    pub fewest_assigned: Option<usize>,
    /// Whether `changes` holds a topic config the guard does not know (the first only).
    pub unknown_config: bool,
}

impl<'a> Entry<'a> {
    fn topic(name: Option<&'a [u8]>) -> Entry<'a> {
        Entry {
            resource_type: RESOURCE_TOPIC,
            name,
            topic_id: [0; 16],
            changes: Vec::new(),
            partitions: Vec::new(),
            replication_factor: -1,
            fewest_assigned: None,
            unknown_config: false,
        }
    }

    /// Keeps a config change of this entry when it matters to the policy (see [`Key`]).
    fn change(&mut self, name: &'a [u8], op: Op<'a>) {
        let topic = match self.resource_type {
            RESOURCE_TOPIC => true,
            RESOURCE_BROKER => false,
            _ => return,
        };
        let Some(key) = Key::of(name, topic) else {
            return;
        };
        if key == Key::Unknown {
            if self.unknown_config {
                return;
            }
            self.unknown_config = true;
        }
        self.changes.push(ConfigChange { name, key, op });
    }
}

/// A request the leadership-change policy reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangeRequest<'a> {
    /// Which API.
    pub api: Api,
    /// The request's version.
    pub version: i16,
    /// Its header's correlation id.
    pub correlation_id: i32,
    /// Its header's client id (null: None).
    pub client_id: Option<&'a [u8]>,
    /// One per entry of the answer, in request order.
    pub entries: Vec<Entry<'a>>,
    /// `ValidateOnly`: nothing would change (still decided: Kafka's own policies refuse a
    /// validation as they would the change).
    pub validate_only: bool,
    /// AlterPartitionReassignments v1+: `AllowReplicationFactorChange`, echoed by the answer.
    pub allow_replication_factor_change: bool,
    /// UnregisterBroker: the broker.
    pub broker_id: Option<i32>,
}

/// Reads `frame` (size prefix included), a request of `api` at `version`, which the caller
/// checked it reads ([`Api::reads`]).
pub fn read_request(api: Api, version: i16, frame: &[u8]) -> Result<ChangeRequest<'_>, ReadError> {
    let flexible = version >= api.first_flexible();
    let mut r = Wire {
        buf: frame,
        at: 0,
        flexible,
    };
    r.skip(4 + 2 + 2, "header")?;
    let correlation_id = r.int32("correlation_id")?;
    let client_id = r.classic_nullable_string("client_id")?;
    if flexible {
        r.tagged_fields("header tagged fields")?;
    }
    let mut request = ChangeRequest {
        api,
        version,
        correlation_id,
        client_id,
        entries: Vec::new(),
        validate_only: false,
        allow_replication_factor_change: true,
        broker_id: None,
    };
    match api {
        Api::CreateTopics => create_topics(&mut r, &mut request)?,
        Api::DeleteTopics => delete_topics(&mut r, &mut request)?,
        Api::DeleteRecords => delete_records(&mut r, &mut request)?,
        Api::AlterConfigs => alter_configs(&mut r, &mut request, false)?,
        Api::IncrementalAlterConfigs => alter_configs(&mut r, &mut request, true)?,
        Api::CreatePartitions => create_partitions(&mut r, &mut request)?,
        Api::AlterPartitionReassignments => reassignments(&mut r, &mut request)?,
        Api::UnregisterBroker => {
            request.broker_id = Some(r.int32("broker_id")?);
        }
    }
    if flexible {
        r.tagged_fields("tagged fields")?;
    }
    if r.buf.len() > r.at {
        return Err(r.error("the request", ReadErrorKind::Trailing));
    }
    Ok(request)
}

fn create_topics<'a>(r: &mut Wire<'a>, request: &mut ChangeRequest<'a>) -> Result<(), ReadError> {
    let topics = r.array("topics", 6)?;
    for _ in 0..topics {
        let name = r.string("topics: name")?;
        r.skip(4, "topics: num_partitions")?;
        let mut entry = Entry::topic(Some(name));
        entry.replication_factor = r.int16("topics: replication_factor")?;
        let assignments = r.array("topics: assignments", 5)?;
        for _ in 0..assignments {
            r.skip(4, "assignments: partition_index")?;
            let replicas = r.int32_array("assignments: broker_ids")?;
            r.struct_end("assignments: tagged fields")?;
            entry.fewest_assigned =
                Some(entry.fewest_assigned.map_or(replicas, |n| n.min(replicas)));
        }
        let configs = r.array("topics: configs", 2)?;
        for _ in 0..configs {
            let name = r.string("configs: name")?;
            let value = r.nullable_string("configs: value")?;
            r.struct_end("configs: tagged fields")?;
            entry.change(name, Op::Set(value));
        }
        r.struct_end("topics: tagged fields")?;
        request.entries.push(entry);
    }
    r.skip(4, "timeout_ms")?;
    if request.version >= 1 {
        request.validate_only = r.boolean("validate_only")?;
    }
    Ok(())
}

fn delete_topics<'a>(r: &mut Wire<'a>, request: &mut ChangeRequest<'a>) -> Result<(), ReadError> {
    if request.version >= 6 {
        let topics = r.array("topics", 17)?;
        for _ in 0..topics {
            let name = r.nullable_string("topics: name")?;
            let id = r.take(16, "topics: topic_id")?;
            r.struct_end("topics: tagged fields")?;
            let mut entry = Entry::topic(name);
            entry.topic_id.copy_from_slice(id);
            request.entries.push(entry);
        }
    } else {
        let names = r.array("topic_names", 1)?;
        for _ in 0..names {
            let name = r.string("topic_names")?;
            request.entries.push(Entry::topic(Some(name)));
        }
    }
    r.skip(4, "timeout_ms")?;
    Ok(())
}

fn delete_records<'a>(r: &mut Wire<'a>, request: &mut ChangeRequest<'a>) -> Result<(), ReadError> {
    let topics = r.array("topics", 3)?;
    for _ in 0..topics {
        let name = r.string("topics: name")?;
        let mut entry = Entry::topic(Some(name));
        let partitions = r.array("topics: partitions", 12)?;
        for _ in 0..partitions {
            entry
                .partitions
                .push(r.int32("partitions: partition_index")?);
            r.skip(8, "partitions: offset")?;
            r.struct_end("partitions: tagged fields")?;
        }
        r.struct_end("topics: tagged fields")?;
        request.entries.push(entry);
    }
    r.skip(4, "timeout_ms")?;
    Ok(())
}

fn alter_configs<'a>(
    r: &mut Wire<'a>,
    request: &mut ChangeRequest<'a>,
    incremental: bool,
) -> Result<(), ReadError> {
    let resources = r.array("resources", 4)?;
    for _ in 0..resources {
        let resource_type = r.int8("resources: resource_type")?;
        let name = r.string("resources: resource_name")?;
        let mut entry = Entry::topic(Some(name));
        entry.resource_type = resource_type;
        let mut names_unclean = false;
        let configs = r.array("resources: configs", if incremental { 3 } else { 2 })?;
        for _ in 0..configs {
            let config = r.string("configs: name")?;
            let op = if incremental {
                r.int8("configs: config_operation")?
            } else {
                0
            };
            let value = r.nullable_string("configs: value")?;
            r.struct_end("configs: tagged fields")?;
            names_unclean |= config == UNCLEAN_LEADER_ELECTION.as_bytes();
            let op = match op {
                0 => Op::Set(value),
                1 => Op::Delete,
                2 | 3 => Op::ListOp(op),
                other => Op::Unknown(other),
            };
            entry.change(config, op);
        }
        r.struct_end("resources: tagged fields")?;
        if !incremental && !names_unclean {
            // The set replaces every config of the resource: one not named goes back to
            // what the resource inherits. Only the unclean setting is kept so: every other
            // config that matters is one of a protected topic or of the defaults it
            // inherits, and the policy refuses AlterConfigs on those whole.
            entry.change(UNCLEAN_LEADER_ELECTION.as_bytes(), Op::Omitted);
        }
        request.entries.push(entry);
    }
    request.validate_only = r.boolean("validate_only")?;
    Ok(())
}

fn create_partitions<'a>(
    r: &mut Wire<'a>,
    request: &mut ChangeRequest<'a>,
) -> Result<(), ReadError> {
    let topics = r.array("topics", 6)?;
    for _ in 0..topics {
        let name = r.string("topics: name")?;
        r.skip(4, "topics: count")?;
        if let Some(assignments) = r.nullable_array("topics: assignments", 1)? {
            for _ in 0..assignments {
                r.int32_array("assignments: broker_ids")?;
                r.struct_end("assignments: tagged fields")?;
            }
        }
        r.struct_end("topics: tagged fields")?;
        request.entries.push(Entry::topic(Some(name)));
    }
    r.skip(4, "timeout_ms")?;
    request.validate_only = r.boolean("validate_only")?;
    Ok(())
}

fn reassignments<'a>(r: &mut Wire<'a>, request: &mut ChangeRequest<'a>) -> Result<(), ReadError> {
    r.skip(4, "timeout_ms")?;
    if request.version >= 1 {
        request.allow_replication_factor_change = r.boolean("allow_replication_factor_change")?;
    }
    let topics = r.array("topics", 3)?;
    for _ in 0..topics {
        let name = r.string("topics: name")?;
        let mut entry = Entry::topic(Some(name));
        let partitions = r.array("topics: partitions", 6)?;
        for _ in 0..partitions {
            entry
                .partitions
                .push(r.int32("partitions: partition_index")?);
            if let Some(replicas) = r.nullable_array("partitions: replicas", 4)? {
                r.skip(replicas * 4, "partitions: replicas")?;
            }
            r.struct_end("partitions: tagged fields")?;
        }
        r.struct_end("topics: tagged fields")?;
        request.entries.push(entry);
    }
    Ok(())
}

/// A cursor over a request's bytes, classic or flexible.
struct Wire<'a> {
    buf: &'a [u8],
    at: usize,
    flexible: bool,
}

impl<'a> Wire<'a> {
    fn error(&self, field: &'static str, kind: ReadErrorKind) -> ReadError {
        ReadError {
            field,
            offset: self.at,
            kind,
        }
    }

    fn left(&self) -> usize {
        self.buf.len() - self.at
    }

    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], ReadError> {
        if n > self.left() {
            return Err(self.error(field, ReadErrorKind::End));
        }
        let bytes = &self.buf[self.at..self.at + n];
        self.at += n;
        Ok(bytes)
    }

    fn skip(&mut self, n: usize, field: &'static str) -> Result<(), ReadError> {
        self.take(n, field).map(|_| ())
    }

    fn fixed<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], ReadError> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N, field)?);
        Ok(out)
    }

    fn int8(&mut self, field: &'static str) -> Result<i8, ReadError> {
        self.fixed(field).map(i8::from_be_bytes)
    }

    fn boolean(&mut self, field: &'static str) -> Result<bool, ReadError> {
        self.int8(field).map(|b| b != 0)
    }

    fn int16(&mut self, field: &'static str) -> Result<i16, ReadError> {
        self.fixed(field).map(i16::from_be_bytes)
    }

    fn int32(&mut self, field: &'static str) -> Result<i32, ReadError> {
        self.fixed(field).map(i32::from_be_bytes)
    }

    fn uvarint(&mut self, field: &'static str) -> Result<u32, ReadError> {
        let start = self.at;
        let mut value = 0u32;
        for shift in (0..35).step_by(7) {
            let [byte] = self.fixed::<1>(field)?;
            value |= u32::from(byte & 0x7f).wrapping_shl(shift);
            if byte & 0x80 == 0 {
                if shift == 28 && byte > 0x0f {
                    // More than 32 bits: Kafka wraps, the guard refuses.
                    self.at = start;
                    return Err(self.error(field, ReadErrorKind::Varint));
                }
                return Ok(value);
            }
        }
        self.at = start;
        Err(self.error(field, ReadErrorKind::Varint))
    }

    /// A length: `Some(n)`, or None for null (-1 classic, 0 compact).
    fn length(
        &mut self,
        field: &'static str,
        classic_i16: bool,
    ) -> Result<Option<usize>, ReadError> {
        let start = self.at;
        let n = if self.flexible {
            i64::from(self.uvarint(field)?) - 1
        } else if classic_i16 {
            i64::from(self.int16(field)?)
        } else {
            i64::from(self.int32(field)?)
        };
        if n < 0 {
            if n == -1 {
                return Ok(None);
            }
            self.at = start;
            return Err(self.error(field, ReadErrorKind::Negative));
        }
        Ok(Some(n as usize))
    }

    fn nullable_string(&mut self, field: &'static str) -> Result<Option<&'a [u8]>, ReadError> {
        match self.length(field, true)? {
            Some(n) => self.take(n, field).map(Some),
            None => Ok(None),
        }
    }

    fn string(&mut self, field: &'static str) -> Result<&'a [u8], ReadError> {
        let start = self.at;
        match self.nullable_string(field)? {
            Some(s) => Ok(s),
            None => {
                self.at = start;
                Err(self.error(field, ReadErrorKind::Negative))
            }
        }
    }

    /// The header's client id: an int16-length string in every header version.
    fn classic_nullable_string(
        &mut self,
        field: &'static str,
    ) -> Result<Option<&'a [u8]>, ReadError> {
        let n = self.int16(field)?;
        match usize::try_from(n) {
            Ok(n) => self.take(n, field).map(Some),
            Err(_) => Ok(None),
        }
    }

    /// An array count, null allowed, checked against the bytes that remain: each entry
    /// takes at least `smallest` bytes.
    fn nullable_array(
        &mut self,
        field: &'static str,
        smallest: usize,
    ) -> Result<Option<usize>, ReadError> {
        let start = self.at;
        let Some(n) = self.length(field, false)? else {
            return Ok(None);
        };
        if n.saturating_mul(smallest) > self.left() {
            self.at = start;
            return Err(self.error(field, ReadErrorKind::Count));
        }
        Ok(Some(n))
    }

    fn array(&mut self, field: &'static str, smallest: usize) -> Result<usize, ReadError> {
        let start = self.at;
        match self.nullable_array(field, smallest)? {
            Some(n) => Ok(n),
            None => {
                self.at = start;
                Err(self.error(field, ReadErrorKind::Negative))
            }
        }
    }

    /// An array of int32, skipped: its count.
    fn int32_array(&mut self, field: &'static str) -> Result<usize, ReadError> {
        let n = self.array(field, 4)?;
        self.skip(n * 4, field)?;
        Ok(n)
    }

    fn tagged_fields(&mut self, field: &'static str) -> Result<(), ReadError> {
        let count = self.uvarint(field)?;
        if count as usize > self.left() {
            return Err(self.error(field, ReadErrorKind::Count));
        }
        for _ in 0..count {
            self.uvarint(field)?;
            let size = self.uvarint(field)?;
            self.skip(size as usize, field)?;
        }
        Ok(())
    }

    /// The end of a struct inside an array: its tagged fields, when flexible.
    fn struct_end(&mut self, field: &'static str) -> Result<(), ReadError> {
        if self.flexible {
            self.tagged_fields(field)?;
        }
        Ok(())
    }
}
