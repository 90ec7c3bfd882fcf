//! Apache Kafka's API keys as an open `i16` newtype, from one table: each key's constant,
//! name, latest version and first flexible version are one line of [`api_keys!`], as
//! Kafka's `ApiKeys` (kafka-clients 4.4) has them. `tests/kafka_tables.rs` checks the table
//! against that enum.

use core::fmt;

/// A Kafka API key (`RequestApiKey`): which API a request is for.
///
/// Any `i16` is a value: a key newer than this crate is kept as it is and has no
/// [`name`](ApiKey::name). The keys Kafka 4.4 defines are the associated constants
/// (`ApiKey::PRODUCE` … `ApiKey::UNREGISTER_CONTROLLER`, named as Kafka's `ApiKeys` enum).
///
/// ```
/// use kafka_elect_leaders::ApiKey;
///
/// let key = ApiKey::from(43);
/// assert_eq!(key, ApiKey::ELECT_LEADERS);
/// assert_eq!(key.name(), Some("ElectLeaders"));
/// assert_eq!(key.latest_version(), Some(2));
/// assert_eq!(key.first_flexible_version(), Some(2));
/// assert_eq!(key.to_string(), "ElectLeaders (43)");
/// assert_eq!(ApiKey(1000).name(), None);
/// assert_eq!(ApiKey(1000).to_string(), "unknown API key 1000");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[repr(transparent)]
pub struct ApiKey(pub i16);

/// What the table says of one key.
struct Row {
    key: i16,
    name: &'static str,
    latest: i16,
    first_flexible: Option<i16>,
}

/// The one table: `key, CONSTANT, "Name", latest version, first flexible version;`.
macro_rules! api_keys {
    ($($key:literal, $konst:ident, $name:literal, $latest:literal, $flexible:expr;)*) => {
        impl ApiKey {
            $(
                #[doc = concat!("`", $name, "` (", stringify!($key), ").")]
                pub const $konst: ApiKey = ApiKey($key);
            )*

            /// Every key this crate knows, in ascending order: 0 to the newest without gaps,
            /// as Kafka numbers them.
            pub const ALL: &'static [ApiKey] = &[$(ApiKey($key)),*];
        }

        const ROWS: &[Row] = &[$(Row {
            key: $key,
            name: $name,
            latest: $latest,
            first_flexible: $flexible,
        }),*];
    };
}

// The newest version and the first flexible version (the first whose request header is
// v2) as kafka-clients 4.4's `ApiKeys` has them, with the newest version even when Kafka
// marks it unstable (InitProducerId 6). The four inter-broker APIs of the ZooKeeper era
// (4-7) have no version left in Kafka 4: theirs are kafka-clients 3.9's, so that a capture
// of an older cluster is still read.
api_keys! {
0, PRODUCE, "Produce", 13, Some(9);
1, FETCH, "Fetch", 18, Some(12);
2, LIST_OFFSETS, "ListOffsets", 11, Some(6);
3, METADATA, "Metadata", 13, Some(9);
4, LEADER_AND_ISR, "LeaderAndIsr", 7, Some(4);
5, STOP_REPLICA, "StopReplica", 4, Some(2);
6, UPDATE_METADATA, "UpdateMetadata", 8, Some(6);
7, CONTROLLED_SHUTDOWN, "ControlledShutdown", 3, Some(3);
8, OFFSET_COMMIT, "OffsetCommit", 10, Some(8);
9, OFFSET_FETCH, "OffsetFetch", 10, Some(6);
10, FIND_COORDINATOR, "FindCoordinator", 6, Some(3);
11, JOIN_GROUP, "JoinGroup", 9, Some(6);
12, HEARTBEAT, "Heartbeat", 4, Some(4);
13, LEAVE_GROUP, "LeaveGroup", 5, Some(4);
14, SYNC_GROUP, "SyncGroup", 5, Some(4);
15, DESCRIBE_GROUPS, "DescribeGroups", 6, Some(5);
16, LIST_GROUPS, "ListGroups", 5, Some(3);
17, SASL_HANDSHAKE, "SaslHandshake", 1, None;
18, API_VERSIONS, "ApiVersions", 5, Some(3);
19, CREATE_TOPICS, "CreateTopics", 7, Some(5);
20, DELETE_TOPICS, "DeleteTopics", 6, Some(4);
21, DELETE_RECORDS, "DeleteRecords", 2, Some(2);
22, INIT_PRODUCER_ID, "InitProducerId", 6, Some(2);
23, OFFSET_FOR_LEADER_EPOCH, "OffsetForLeaderEpoch", 4, Some(4);
24, ADD_PARTITIONS_TO_TXN, "AddPartitionsToTxn", 5, Some(3);
25, ADD_OFFSETS_TO_TXN, "AddOffsetsToTxn", 4, Some(3);
26, END_TXN, "EndTxn", 5, Some(3);
27, WRITE_TXN_MARKERS, "WriteTxnMarkers", 2, Some(1);
28, TXN_OFFSET_COMMIT, "TxnOffsetCommit", 6, Some(3);
29, DESCRIBE_ACLS, "DescribeAcls", 3, Some(2);
30, CREATE_ACLS, "CreateAcls", 3, Some(2);
31, DELETE_ACLS, "DeleteAcls", 3, Some(2);
32, DESCRIBE_CONFIGS, "DescribeConfigs", 4, Some(4);
33, ALTER_CONFIGS, "AlterConfigs", 2, Some(2);
34, ALTER_REPLICA_LOG_DIRS, "AlterReplicaLogDirs", 2, Some(2);
35, DESCRIBE_LOG_DIRS, "DescribeLogDirs", 5, Some(2);
36, SASL_AUTHENTICATE, "SaslAuthenticate", 2, Some(2);
37, CREATE_PARTITIONS, "CreatePartitions", 3, Some(2);
38, CREATE_DELEGATION_TOKEN, "CreateDelegationToken", 3, Some(2);
39, RENEW_DELEGATION_TOKEN, "RenewDelegationToken", 2, Some(2);
40, EXPIRE_DELEGATION_TOKEN, "ExpireDelegationToken", 2, Some(2);
41, DESCRIBE_DELEGATION_TOKEN, "DescribeDelegationToken", 3, Some(2);
42, DELETE_GROUPS, "DeleteGroups", 3, Some(2);
43, ELECT_LEADERS, "ElectLeaders", 2, Some(2);
44, INCREMENTAL_ALTER_CONFIGS, "IncrementalAlterConfigs", 1, Some(1);
45, ALTER_PARTITION_REASSIGNMENTS, "AlterPartitionReassignments", 1, Some(0);
46, LIST_PARTITION_REASSIGNMENTS, "ListPartitionReassignments", 0, Some(0);
47, OFFSET_DELETE, "OffsetDelete", 0, None;
48, DESCRIBE_CLIENT_QUOTAS, "DescribeClientQuotas", 1, Some(1);
49, ALTER_CLIENT_QUOTAS, "AlterClientQuotas", 1, Some(1);
50, DESCRIBE_USER_SCRAM_CREDENTIALS, "DescribeUserScramCredentials", 0, Some(0);
51, ALTER_USER_SCRAM_CREDENTIALS, "AlterUserScramCredentials", 0, Some(0);
52, VOTE, "Vote", 2, Some(0);
53, BEGIN_QUORUM_EPOCH, "BeginQuorumEpoch", 1, Some(1);
54, END_QUORUM_EPOCH, "EndQuorumEpoch", 1, Some(1);
55, DESCRIBE_QUORUM, "DescribeQuorum", 2, Some(0);
56, ALTER_PARTITION, "AlterPartition", 3, Some(2);
57, UPDATE_FEATURES, "UpdateFeatures", 2, Some(0);
58, ENVELOPE, "Envelope", 0, Some(0);
59, FETCH_SNAPSHOT, "FetchSnapshot", 1, Some(0);
60, DESCRIBE_CLUSTER, "DescribeCluster", 2, Some(0);
61, DESCRIBE_PRODUCERS, "DescribeProducers", 0, Some(0);
62, BROKER_REGISTRATION, "BrokerRegistration", 4, Some(0);
63, BROKER_HEARTBEAT, "BrokerHeartbeat", 2, Some(0);
64, UNREGISTER_BROKER, "UnregisterBroker", 0, Some(0);
65, DESCRIBE_TRANSACTIONS, "DescribeTransactions", 0, Some(0);
66, LIST_TRANSACTIONS, "ListTransactions", 2, Some(0);
67, ALLOCATE_PRODUCER_IDS, "AllocateProducerIds", 0, Some(0);
68, CONSUMER_GROUP_HEARTBEAT, "ConsumerGroupHeartbeat", 1, Some(0);
69, CONSUMER_GROUP_DESCRIBE, "ConsumerGroupDescribe", 1, Some(0);
70, CONTROLLER_REGISTRATION, "ControllerRegistration", 0, Some(0);
71, GET_TELEMETRY_SUBSCRIPTIONS, "GetTelemetrySubscriptions", 0, Some(0);
72, PUSH_TELEMETRY, "PushTelemetry", 0, Some(0);
73, ASSIGN_REPLICAS_TO_DIRS, "AssignReplicasToDirs", 0, Some(0);
74, LIST_CONFIG_RESOURCES, "ListConfigResources", 1, Some(0);
75, DESCRIBE_TOPIC_PARTITIONS, "DescribeTopicPartitions", 0, Some(0);
76, SHARE_GROUP_HEARTBEAT, "ShareGroupHeartbeat", 1, Some(1);
77, SHARE_GROUP_DESCRIBE, "ShareGroupDescribe", 1, Some(1);
78, SHARE_FETCH, "ShareFetch", 2, Some(1);
79, SHARE_ACKNOWLEDGE, "ShareAcknowledge", 2, Some(1);
80, ADD_RAFT_VOTER, "AddRaftVoter", 1, Some(0);
81, REMOVE_RAFT_VOTER, "RemoveRaftVoter", 0, Some(0);
82, UPDATE_RAFT_VOTER, "UpdateRaftVoter", 0, Some(0);
83, INITIALIZE_SHARE_GROUP_STATE, "InitializeShareGroupState", 0, Some(0);
84, READ_SHARE_GROUP_STATE, "ReadShareGroupState", 0, Some(0);
85, WRITE_SHARE_GROUP_STATE, "WriteShareGroupState", 1, Some(0);
86, DELETE_SHARE_GROUP_STATE, "DeleteShareGroupState", 0, Some(0);
87, READ_SHARE_GROUP_STATE_SUMMARY, "ReadShareGroupStateSummary", 1, Some(0);
88, STREAMS_GROUP_HEARTBEAT, "StreamsGroupHeartbeat", 1, Some(0);
89, STREAMS_GROUP_DESCRIBE, "StreamsGroupDescribe", 1, Some(0);
90, DESCRIBE_SHARE_GROUP_OFFSETS, "DescribeShareGroupOffsets", 1, Some(0);
91, ALTER_SHARE_GROUP_OFFSETS, "AlterShareGroupOffsets", 0, Some(0);
92, DELETE_SHARE_GROUP_OFFSETS, "DeleteShareGroupOffsets", 0, Some(0);
93, STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE, "StreamsGroupTopologyDescriptionUpdate", 0, Some(0);
94, UNREGISTER_CONTROLLER, "UnregisterController", 0, Some(0);
}

// The table is indexed by key: row `i` is key `i`.
const _: () = {
    let mut i = 0;
    while i < ROWS.len() {
        assert!(ROWS[i].key as usize == i);
        i += 1;
    }
};

impl ApiKey {
    const fn row(self) -> Option<&'static Row> {
        if self.0 >= 0 && (self.0 as usize) < ROWS.len() {
            Some(&ROWS[self.0 as usize])
        } else {
            None
        }
    }

    /// Kafka's name of the API (`18` is `"ApiVersions"`), `None` for a key this crate does
    /// not know.
    pub const fn name(self) -> Option<&'static str> {
        match self.row() {
            Some(row) => Some(row.name),
            None => None,
        }
    }

    /// The key of a name as Kafka spells it (`"ApiVersions"`), `None` for a name this
    /// crate does not know. The match is exact.
    ///
    /// ```
    /// use kafka_elect_leaders::ApiKey;
    /// assert_eq!(ApiKey::from_name("ApiVersions"), Some(ApiKey::API_VERSIONS));
    /// assert_eq!(ApiKey::from_name("apiversions"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<ApiKey> {
        ROWS.iter()
            .find(|row| row.name == name)
            .map(|row| ApiKey(row.key))
    }

    /// Whether this crate knows the key.
    pub const fn is_known(self) -> bool {
        self.row().is_some()
    }

    /// The newest version of the API that Kafka 4.4 defines (`None` for an unknown key).
    pub const fn latest_version(self) -> Option<i16> {
        match self.row() {
            Some(row) => Some(row.latest),
            None => None,
        }
    }

    /// The first flexible version of the API: compact strings and arrays, tagged fields,
    /// request header v2. `None` for an unknown key, and for an API that has no flexible
    /// version (SaslHandshake, OffsetDelete).
    pub const fn first_flexible_version(self) -> Option<i16> {
        match self.row() {
            Some(row) => row.first_flexible,
            None => None,
        }
    }

    /// Whether `version` of this API is flexible; `None` for an unknown key.
    pub const fn is_flexible(self, version: i16) -> Option<bool> {
        match self.row() {
            Some(Row {
                first_flexible: Some(first),
                ..
            }) => Some(version >= *first),
            Some(_) => Some(false),
            None => None,
        }
    }

    /// Whether a request of this key and `version` could have been sent by a Kafka client
    /// or broker: the key is one Kafka defines, the version between 0 and
    /// [`latest_version`](Self::latest_version).
    pub const fn knows_version(self, version: i16) -> bool {
        match self.latest_version() {
            Some(latest) => version >= 0 && version <= latest,
            None => false,
        }
    }

    /// The version of the request header that a request of this key and `version` has, as
    /// Kafka's `ApiKeys.requestHeaderVersion`: 2 when the version is flexible, else 1, and
    /// 0 for ControlledShutdown v0 (no client id). `None` for an unknown key.
    ///
    /// ```
    /// use kafka_elect_leaders::ApiKey;
    /// assert_eq!(ApiKey::PRODUCE.request_header_version(8), Some(1));
    /// assert_eq!(ApiKey::PRODUCE.request_header_version(9), Some(2));
    /// assert_eq!(ApiKey::CONTROLLED_SHUTDOWN.request_header_version(0), Some(0));
    /// assert_eq!(ApiKey(-1).request_header_version(0), None);
    /// ```
    pub const fn request_header_version(self, version: i16) -> Option<i16> {
        match self.is_flexible(version) {
            Some(true) => Some(2),
            Some(false) if self.0 == Self::CONTROLLED_SHUTDOWN.0 && version == 0 => Some(0),
            Some(false) => Some(1),
            None => None,
        }
    }

    /// The version of the response header that answers a request of this key and
    /// `version`, as Kafka's `ApiKeys.responseHeaderVersion`: 1 when the version is
    /// flexible, else 0, and always 0 for ApiVersions (a client that does not know the
    /// broker's versions yet must read the answer). `None` for an unknown key.
    ///
    /// ```
    /// use kafka_elect_leaders::ApiKey;
    /// assert_eq!(ApiKey::ELECT_LEADERS.response_header_version(2), Some(1));
    /// assert_eq!(ApiKey::API_VERSIONS.response_header_version(3), Some(0));
    /// ```
    pub const fn response_header_version(self, version: i16) -> Option<i16> {
        match self.is_flexible(version) {
            Some(true) if self.0 != Self::API_VERSIONS.0 => Some(1),
            Some(_) => Some(0),
            None => None,
        }
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "ApiKey({} {})", self.0, name),
            None => write!(f, "ApiKey({})", self.0),
        }
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{} ({})", name, self.0),
            None => write!(f, "unknown API key {}", self.0),
        }
    }
}

impl From<i16> for ApiKey {
    fn from(key: i16) -> Self {
        ApiKey(key)
    }
}

impl From<ApiKey> for i16 {
    fn from(key: ApiKey) -> Self {
        key.0
    }
}

impl PartialEq<i16> for ApiKey {
    fn eq(&self, other: &i16) -> bool {
        self.0 == *other
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::ApiKey;
    use std::format;

    #[test]
    fn names() {
        assert_eq!(ApiKey(0).name(), Some("Produce"));
        assert_eq!(ApiKey(18).name(), Some("ApiVersions"));
        assert_eq!(ApiKey(43).name(), Some("ElectLeaders"));
        assert_eq!(ApiKey(94).name(), Some("UnregisterController"));
        for unknown in [95, -1, i16::MIN, i16::MAX] {
            assert_eq!(ApiKey(unknown).name(), None);
            assert_eq!(ApiKey(unknown).latest_version(), None);
            assert_eq!(ApiKey(unknown).first_flexible_version(), None);
            assert!(!ApiKey(unknown).is_known() && !ApiKey(unknown).knows_version(0));
        }
    }

    #[test]
    fn constants_are_the_table() {
        assert_eq!(ApiKey::ALL.len(), 95);
        assert_eq!(ApiKey::PRODUCE, ApiKey(0));
        assert_eq!(ApiKey::ELECT_LEADERS.0, crate::version::API_KEY);
        assert_eq!(ApiKey::UNREGISTER_CONTROLLER, ApiKey(94));
        for (i, key) in ApiKey::ALL.iter().enumerate() {
            assert_eq!(usize::try_from(key.0).unwrap(), i);
            assert_eq!(ApiKey::from_name(key.name().unwrap()), Some(*key));
        }
        assert_eq!(ApiKey::from_name(""), None);
    }

    #[test]
    fn versions() {
        let elect = ApiKey::ELECT_LEADERS;
        assert_eq!(elect.latest_version(), Some(crate::version::MAX_VERSION));
        assert_eq!(
            elect.first_flexible_version(),
            Some(crate::version::FIRST_FLEXIBLE_VERSION)
        );
        assert!(elect.knows_version(0) && elect.knows_version(2) && !elect.knows_version(3));
        assert!(ApiKey::PRODUCE.knows_version(13) && !ApiKey::PRODUCE.knows_version(14));
        assert!(!ApiKey(3).knows_version(-1));
        assert_eq!(ApiKey::SASL_HANDSHAKE.first_flexible_version(), None);
        assert_eq!(ApiKey::SASL_HANDSHAKE.is_flexible(1), Some(false));
        assert_eq!(ApiKey::SASL_HANDSHAKE.request_header_version(1), Some(1));
        assert_eq!(
            ApiKey::CONTROLLED_SHUTDOWN.request_header_version(1),
            Some(1)
        );
        assert_eq!(ApiKey::API_VERSIONS.request_header_version(3), Some(2));
        assert_eq!(ApiKey::API_VERSIONS.response_header_version(3), Some(0));
        assert_eq!(ApiKey::FETCH.response_header_version(12), Some(1));
        assert_eq!(ApiKey::FETCH.response_header_version(11), Some(0));
    }

    #[test]
    fn formatting() {
        assert_eq!(format!("{:?}", ApiKey(3)), "ApiKey(3 Metadata)");
        assert_eq!(format!("{:?}", ApiKey(-2)), "ApiKey(-2)");
        assert_eq!(format!("{}", ApiKey(18)), "ApiVersions (18)");
        assert_eq!(i16::from(ApiKey::from(7)), 7);
        assert!(ApiKey(43) == 43);
    }
}
