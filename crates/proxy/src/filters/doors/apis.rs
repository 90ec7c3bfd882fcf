//! Every API key Apache Kafka 4.4 defines, in one class each: what the guard does with a
//! request of that key while a policy is active. The guard decides on every API from this
//! one table, not on a list of doors it happens to know: a key the table does not name
//! (a newer Kafka's) is closed unless the operator forwards it by number
//! ([`Policy::forwarded_unknown_apis`](crate::Policy::forwarded_unknown_apis)).
//!
//! The classes:
//!
//! - [`Class::Forwarded`]: forwarded byte for byte, only its header peeked: the data path
//!   (produce and fetch are [`Class::Rewritten`] for their answers), group and transaction
//!   coordination a client does for itself, reads, and administration that has no bearing
//!   on what the guard protects;
//! - [`Class::Policed`]: decoded and decided before it is forwarded, by the filter of its
//!   [`Concern`];
//! - [`Class::Rewritten`]: forwarded as it came; the broker's answer is rewritten (broker
//!   addresses, the versions the guard reads);
//! - [`Class::Closed`]: only brokers and controllers send it to each other, never a
//!   client: the connection is closed, nothing forwarded, as long as any rule is set.
//!
//! `tests/kafka_tables.rs` reads Kafka's own `ApiKeys` from the kafka-clients jar the tests
//! use and fails on a key without a class, and on a key Kafka marks as a cluster action or
//! serves on no broker listener that is not closed: a Kafka upgrade cannot add a door the
//! guard forwards without anyone deciding it. The guard's manual (GUARD.md) lists this table.

use crate::core::response_due::Reader;

/// What the guard does with a request of an API key while a policy is active.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    /// Forwarded byte for byte; only its header is read.
    Forwarded,
    /// Decoded and decided by the guard before anything of it is forwarded.
    Policed(Concern),
    /// Forwarded as it came; the broker's answer is rewritten.
    Rewritten,
    /// Never forwarded: brokers and controllers send it each other, no client does.
    Closed,
}

/// What a policed API is decided on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Concern {
    /// Who leads a partition, and whether the controller may elect a replica out of sync.
    Leadership,
    /// Whether a protected topic's acknowledged records stay (deleted, hidden, fewer
    /// copies).
    Durability,
    /// Who the client is: the principal the rules allow or refuse.
    Identity,
}

impl Class {
    /// The class as GUARD.md's table and the logs name it.
    pub fn name(self) -> &'static str {
        match self {
            Class::Forwarded => "forwarded",
            Class::Policed(Concern::Leadership) => "policed (leadership)",
            Class::Policed(Concern::Durability) => "policed (durability)",
            Class::Policed(Concern::Identity) => "policed (identity)",
            Class::Rewritten => "answer rewritten",
            Class::Closed => "closed",
        }
    }
}

/// One row of the table: an API key, its class and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Door {
    /// The API key.
    pub key: i16,
    /// Kafka's name of it.
    pub name: &'static str,
    /// What the guard does with it.
    pub class: Class,
    /// Why, in one line.
    pub why: &'static str,
}

use Class::{Closed, Forwarded, Policed, Rewritten};
use Concern::{Durability, Identity, Leadership};

const fn door(key: i16, name: &'static str, class: Class, why: &'static str) -> Door {
    Door {
        key,
        name,
        class,
        why,
    }
}

const READS: &str = "reads; changes nothing";
const GROUPS: &str = "a client's own group membership and offsets; no record is deleted";
const TXN: &str = "a producer's own transaction, fenced by its transactional id and epoch";
const TOKENS: &str = "delegation tokens: the broker's authentication; a token's principal is \
                      its id to the guard, never another user's name";
const PEER: &str = "sent only by brokers and controllers to each other; Kafka checks it as a \
                    cluster action, which a cluster without ACLs does not refuse";
const QUORUM: &str = "changes the controllers' quorum: done on a controller's own listener, \
                      never through a guard in front of the brokers";
const SHARE_STATE: &str =
    "share-group state, sent by brokers to the share coordinator; a cluster action";
const ADDRESSES: &str = "its answer names brokers: rewritten to the guard's listeners";

/// Every API key of Kafka 4.4, by key (index = key).
pub const DOORS: [Door; 95] = [
    door(
        0,
        "Produce",
        Rewritten,
        "the data path; KIP-951 NodeEndpoints in answers (v10+) rewritten",
    ),
    door(
        1,
        "Fetch",
        Rewritten,
        "the data path; KIP-951 NodeEndpoints in answers (v16+) rewritten; one sent as a \
         follower replica (replica id >= 0: the leader would count it in sync) is closed",
    ),
    door(2, "ListOffsets", Forwarded, READS),
    door(3, "Metadata", Rewritten, ADDRESSES),
    door(
        4,
        "LeaderAndIsr",
        Closed,
        "the ZooKeeper controller's order to brokers; no client sends it",
    ),
    door(
        5,
        "StopReplica",
        Closed,
        "the ZooKeeper controller's order to brokers; no client sends it",
    ),
    door(
        6,
        "UpdateMetadata",
        Closed,
        "the ZooKeeper controller's order to brokers; no client sends it",
    ),
    door(7, "ControlledShutdown", Closed, PEER),
    door(8, "OffsetCommit", Forwarded, GROUPS),
    door(9, "OffsetFetch", Forwarded, READS),
    door(10, "FindCoordinator", Rewritten, ADDRESSES),
    door(11, "JoinGroup", Forwarded, GROUPS),
    door(12, "Heartbeat", Forwarded, GROUPS),
    door(13, "LeaveGroup", Forwarded, GROUPS),
    door(14, "SyncGroup", Forwarded, GROUPS),
    door(15, "DescribeGroups", Forwarded, READS),
    door(16, "ListGroups", Forwarded, READS),
    door(
        17,
        "SaslHandshake",
        Policed(Identity),
        "the mechanism the principal is learnt from",
    ),
    door(
        18,
        "ApiVersions",
        Rewritten,
        "the versions in its answer capped to those the guard reads",
    ),
    door(
        19,
        "CreateTopics",
        Policed(Leadership),
        "a new topic's unclean election, replication and configs",
    ),
    door(
        20,
        "DeleteTopics",
        Policed(Durability),
        "a protected topic and its records gone",
    ),
    door(
        21,
        "DeleteRecords",
        Policed(Durability),
        "a protected topic's records deleted up to an offset",
    ),
    door(22, "InitProducerId", Forwarded, TXN),
    door(23, "OffsetForLeaderEpoch", Forwarded, READS),
    door(24, "AddPartitionsToTxn", Forwarded, TXN),
    door(25, "AddOffsetsToTxn", Forwarded, TXN),
    door(26, "EndTxn", Forwarded, TXN),
    door(
        27,
        "WriteTxnMarkers",
        Closed,
        "transaction markers: only the transaction coordinator (a broker) writes them; from \
         a client an ABORT hides a producer's committed records",
    ),
    door(28, "TxnOffsetCommit", Forwarded, TXN),
    door(29, "DescribeAcls", Forwarded, READS),
    door(
        30,
        "CreateAcls",
        Forwarded,
        "Kafka's own authorization; no rule of the guard depends on it",
    ),
    door(
        31,
        "DeleteAcls",
        Forwarded,
        "Kafka's own authorization; no rule of the guard depends on it",
    ),
    door(32, "DescribeConfigs", Forwarded, READS),
    door(
        33,
        "AlterConfigs",
        Policed(Leadership),
        "unclean election, min.insync.replicas and the configs that delete records",
    ),
    door(
        34,
        "AlterReplicaLogDirs",
        Forwarded,
        "moves a replica between directories of one broker; replicas and leader stay",
    ),
    door(35, "DescribeLogDirs", Forwarded, READS),
    door(
        36,
        "SaslAuthenticate",
        Policed(Identity),
        "the principal, learnt once the broker accepts it",
    ),
    door(
        37,
        "CreatePartitions",
        Policed(Leadership),
        "new partitions of a protected topic, and their leaders",
    ),
    door(38, "CreateDelegationToken", Forwarded, TOKENS),
    door(39, "RenewDelegationToken", Forwarded, TOKENS),
    door(40, "ExpireDelegationToken", Forwarded, TOKENS),
    door(41, "DescribeDelegationToken", Forwarded, READS),
    door(
        42,
        "DeleteGroups",
        Forwarded,
        "a group's committed offsets, not its topics' records",
    ),
    door(
        43,
        "ElectLeaders",
        Policed(Leadership),
        "the election itself: type, topics, who asks",
    ),
    door(
        44,
        "IncrementalAlterConfigs",
        Policed(Leadership),
        "unclean election, min.insync.replicas and the configs that delete records",
    ),
    door(
        45,
        "AlterPartitionReassignments",
        Policed(Leadership),
        "replicas moved, leaders with them",
    ),
    door(46, "ListPartitionReassignments", Forwarded, READS),
    door(
        47,
        "OffsetDelete",
        Forwarded,
        "a group's committed offsets, not records",
    ),
    door(48, "DescribeClientQuotas", Forwarded, READS),
    door(
        49,
        "AlterClientQuotas",
        Forwarded,
        "throttles; slows a client, deletes nothing",
    ),
    door(50, "DescribeUserScramCredentials", Forwarded, READS),
    door(
        51,
        "AlterUserScramCredentials",
        Forwarded,
        "credentials are the broker's (Alter on the cluster); the guard trusts only the \
         broker's acceptance of an exchange",
    ),
    door(52, "Vote", Closed, PEER),
    door(53, "BeginQuorumEpoch", Closed, PEER),
    door(54, "EndQuorumEpoch", Closed, PEER),
    door(
        55,
        "DescribeQuorum",
        Rewritten,
        "reads; the controllers' listeners in its answer (v2) handled by the address rewrite",
    ),
    door(56, "AlterPartition", Closed, PEER),
    door(
        57,
        "UpdateFeatures",
        Forwarded,
        "feature levels; eligible.leader.replicas.version changes how the ELR is kept, not \
         whether a replica out of sync may lead",
    ),
    door(58, "Envelope", Closed, PEER),
    door(
        59,
        "FetchSnapshot",
        Closed,
        "the metadata log's snapshots, fetched by controllers and brokers",
    ),
    door(60, "DescribeCluster", Rewritten, ADDRESSES),
    door(61, "DescribeProducers", Forwarded, READS),
    door(62, "BrokerRegistration", Closed, PEER),
    door(63, "BrokerHeartbeat", Closed, PEER),
    door(
        64,
        "UnregisterBroker",
        Policed(Leadership),
        "a broker's registration removed, its partitions' leadership with it",
    ),
    door(65, "DescribeTransactions", Forwarded, READS),
    door(66, "ListTransactions", Forwarded, READS),
    door(67, "AllocateProducerIds", Closed, PEER),
    door(68, "ConsumerGroupHeartbeat", Forwarded, GROUPS),
    door(69, "ConsumerGroupDescribe", Forwarded, READS),
    door(70, "ControllerRegistration", Closed, PEER),
    door(
        71,
        "GetTelemetrySubscriptions",
        Forwarded,
        "client metrics; no bearing on leaders or records",
    ),
    door(
        72,
        "PushTelemetry",
        Forwarded,
        "client metrics; no bearing on leaders or records",
    ),
    door(73, "AssignReplicasToDirs", Closed, PEER),
    door(74, "ListConfigResources", Forwarded, READS),
    door(75, "DescribeTopicPartitions", Forwarded, READS),
    door(76, "ShareGroupHeartbeat", Forwarded, GROUPS),
    door(77, "ShareGroupDescribe", Forwarded, READS),
    door(
        78,
        "ShareFetch",
        Rewritten,
        "the data path of share groups; NodeEndpoints in answers rewritten",
    ),
    door(
        79,
        "ShareAcknowledge",
        Rewritten,
        "the data path of share groups; NodeEndpoints in answers rewritten",
    ),
    door(80, "AddRaftVoter", Closed, QUORUM),
    door(81, "RemoveRaftVoter", Closed, QUORUM),
    door(82, "UpdateRaftVoter", Closed, QUORUM),
    door(83, "InitializeShareGroupState", Closed, SHARE_STATE),
    door(84, "ReadShareGroupState", Closed, SHARE_STATE),
    door(85, "WriteShareGroupState", Closed, SHARE_STATE),
    door(86, "DeleteShareGroupState", Closed, SHARE_STATE),
    door(87, "ReadShareGroupStateSummary", Closed, SHARE_STATE),
    door(88, "StreamsGroupHeartbeat", Forwarded, GROUPS),
    door(89, "StreamsGroupDescribe", Forwarded, READS),
    door(90, "DescribeShareGroupOffsets", Forwarded, READS),
    door(
        91,
        "AlterShareGroupOffsets",
        Forwarded,
        "a share group's start offsets, not records",
    ),
    door(
        92,
        "DeleteShareGroupOffsets",
        Forwarded,
        "a share group's offsets, not records",
    ),
    door(
        93,
        "StreamsGroupTopologyDescriptionUpdate",
        Forwarded,
        "a Streams group's topology description; no bearing on leaders or records",
    ),
    door(94, "UnregisterController", Closed, QUORUM),
];

/// The row of `api_key`, if Kafka 4.4 defines it.
pub fn door_of(api_key: i16) -> Option<&'static Door> {
    usize::try_from(api_key).ok().and_then(|key| DOORS.get(key))
}

/// The class of `api_key`, if Kafka 4.4 defines it.
pub fn class_of(api_key: i16) -> Option<Class> {
    door_of(api_key).map(|door| door.class)
}

/// The first flexible Fetch version (header v2, compact encodings, tagged fields).
const FETCH_FLEXIBLE: i16 = 12;
/// The first version that names topics by id (a UUID) rather than by name.
const FETCH_TOPIC_IDS: i16 = 13;
/// The first version with the replica id in the `ReplicaState` tagged field.
const FETCH_REPLICA_STATE: i16 = 15;
/// `ReplicaState`'s tag in the request's tagged fields.
const FETCH_REPLICA_STATE_TAG: u32 = 1;

/// The replica id of the Fetch request in `frame` (size prefix included) at `version`: -1
/// for a consumer (v15+: no `ReplicaState`), a broker id for a follower (which no client
/// is: `filters/follower.rs` closes it); None when the request cannot be read that far.
///
/// Read by hand: a Fetch is on every consumer's hot path, and from v15 the field is a
/// tagged field at the request's end, after the topics; the request is stepped over
/// without decoding or allocating anything, every count checked against the bytes that
/// remain.
pub fn fetch_replica_id(frame: &[u8], version: i16) -> Option<i32> {
    let mut r = Reader::new(frame);
    r.skip(4 + 2 + 2 + 4)?; // size, api key, api version, correlation id
    r.skip_string()?; // client id
    if version >= FETCH_FLEXIBLE {
        r.skip_tagged_fields()?;
    }
    if version < FETCH_REPLICA_STATE {
        return r.int32();
    }
    // MaxWaitMs, MinBytes, MaxBytes, IsolationLevel, SessionId, SessionEpoch.
    r.skip(4 + 4 + 4 + 1 + 4 + 4)?;
    let topic_name_or_id = |r: &mut Reader<'_>| {
        if version >= FETCH_TOPIC_IDS {
            r.skip(16)
        } else {
            compact_skip(r)
        }
    };
    // Topics [TopicId, Partitions [Partition, CurrentLeaderEpoch, FetchOffset,
    // LastFetchedEpoch, LogStartOffset, PartitionMaxBytes; tagged]; tagged].
    for _ in 0..count(&mut r, 2)? {
        topic_name_or_id(&mut r)?;
        for _ in 0..count(&mut r, 4 + 4 + 8 + 4 + 8 + 4 + 1)? {
            r.skip(4 + 4 + 8 + 4 + 8 + 4)?;
            r.skip_tagged_fields()?;
        }
        r.skip_tagged_fields()?;
    }
    // ForgottenTopicsData [TopicId, Partitions [int32]; tagged].
    for _ in 0..count(&mut r, 2)? {
        topic_name_or_id(&mut r)?;
        let partitions = count(&mut r, 4)?;
        r.skip(partitions.checked_mul(4)?)?;
        r.skip_tagged_fields()?;
    }
    compact_skip(&mut r)?; // RackId
    let mut id = -1;
    for _ in 0..r.uvarint()? {
        let tag = r.uvarint()?;
        let size = usize::try_from(r.uvarint()?).ok()?;
        let data = r.take(size)?;
        if tag == FETCH_REPLICA_STATE_TAG {
            // ReplicaState: ReplicaId int32, ReplicaEpoch int64; tagged.
            id = i32::from_be_bytes(data.get(..4)?.try_into().ok()?);
        }
    }
    Some(id)
}

/// A compact array's count (its length plus one; 0, null, counts as empty), refused when
/// its entries, each `least` bytes at the least, cannot fit in what remains.
fn count(r: &mut Reader<'_>, least: usize) -> Option<usize> {
    let n = usize::try_from(r.uvarint()?.saturating_sub(1)).ok()?;
    (n.checked_mul(least)? <= r.remaining()).then_some(n)
}

/// A compact string or bytes: its length plus one (0: null), then its bytes.
fn compact_skip(r: &mut Reader<'_>) -> Option<()> {
    let len = usize::try_from(r.uvarint()?.saturating_sub(1)).ok()?;
    r.skip(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table is by key, and its names are the codec's (Kafka's `ApiKeys`).
    #[test]
    fn every_key_at_its_index_with_the_codecs_name() {
        for (i, door) in DOORS.iter().enumerate() {
            assert_eq!(usize::try_from(door.key).unwrap(), i);
            assert_eq!(
                kafka_elect_leaders::api_name(door.key),
                Some(door.name),
                "key {i}"
            );
            assert!(!door.why.is_empty());
        }
        assert_eq!(kafka_elect_leaders::api_name(DOORS.len() as i16), None);
        assert_eq!(class_of(-1), None);
        assert_eq!(class_of(95), None);
    }

    /// The APIs the issue found forwarded are closed.
    #[test]
    fn broker_only_apis_are_closed() {
        for key in [
            4, 5, 6, 7, 27, 52, 53, 54, 56, 58, 62, 63, 67, 70, 73, 80, 81, 82, 94,
        ] {
            assert_eq!(class_of(key), Some(Class::Closed), "key {key}");
        }
        for key in 83..=87 {
            assert_eq!(class_of(key), Some(Class::Closed), "key {key}");
        }
    }
}

#[cfg(test)]
mod readme {
    use super::*;

    /// The guard's manual (GUARD.md, "Every Kafka API, one table") lists every key under
    /// its class, as this table has it.
    #[test]
    fn the_readme_lists_every_key_under_its_class() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/GUARD.md");
        let readme = std::fs::read_to_string(path).expect("GUARD.md");
        for door in &DOORS {
            let entry = format!("{} ({})", door.name, door.key);
            let rows: Vec<&str> = readme
                .lines()
                .filter(|line| line.trim_start().starts_with("| ") && line.contains(&entry))
                .collect();
            let cell = format!("| {} |", door.class.name());
            assert!(
                rows.len() == 1 && rows[0].trim_start().starts_with(&cell),
                "GUARD.md: {entry} must be listed once, in the row `{cell}`: {rows:?}"
            );
        }
    }
}
