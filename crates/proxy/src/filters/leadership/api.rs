//! The APIs the leadership-change policy reads ([`Api`]: their keys, names and the
//! versions the guard reads): the bottom of the policy, which everything else in it names.
//! (The APIs only brokers send, which the guard never forwards, are `crate::filters::doors::apis`'.)

use kafka_elect_leaders::ApiKey;

/// The APIs the policy reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Api {
    /// CreateTopics (19): a new topic's replica assignment and configs.
    CreateTopics,
    /// DeleteTopics (20): a protected topic's partitions and their leaders gone.
    DeleteTopics,
    /// DeleteRecords (21): a protected topic's records deleted, up to an offset.
    DeleteRecords,
    /// AlterConfigs (33): a topic's or a broker's whole config, unclean election included.
    AlterConfigs,
    /// CreatePartitions (37): new partitions, and their replica assignment.
    CreatePartitions,
    /// IncrementalAlterConfigs (44): config changes one key at a time.
    IncrementalAlterConfigs,
    /// AlterPartitionReassignments (45): replicas moved, leaders with them.
    AlterPartitionReassignments,
    /// UnregisterBroker (64): a broker's registration removed.
    UnregisterBroker,
}

impl Api {
    /// Every API the policy reads. A new one goes last: the fuzz corpus picks an API by
    /// its place here.
    pub const ALL: [Api; 8] = [
        Api::CreateTopics,
        Api::DeleteTopics,
        Api::AlterConfigs,
        Api::CreatePartitions,
        Api::IncrementalAlterConfigs,
        Api::AlterPartitionReassignments,
        Api::UnregisterBroker,
        Api::DeleteRecords,
    ];

    /// The API of `api_key`, if the policy reads it.
    pub fn of(api_key: i16) -> Option<Api> {
        Api::ALL.into_iter().find(|api| api.key() == api_key)
    }

    /// Its API key.
    pub fn key(self) -> i16 {
        let key = match self {
            Api::CreateTopics => ApiKey::CREATE_TOPICS,
            Api::DeleteTopics => ApiKey::DELETE_TOPICS,
            Api::DeleteRecords => ApiKey::DELETE_RECORDS,
            Api::AlterConfigs => ApiKey::ALTER_CONFIGS,
            Api::CreatePartitions => ApiKey::CREATE_PARTITIONS,
            Api::IncrementalAlterConfigs => ApiKey::INCREMENTAL_ALTER_CONFIGS,
            Api::AlterPartitionReassignments => ApiKey::ALTER_PARTITION_REASSIGNMENTS,
            Api::UnregisterBroker => ApiKey::UNREGISTER_BROKER,
        };
        key.0
    }

    /// Kafka's name of the API, from the codec's table of API keys.
    pub fn name(self) -> &'static str {
        ApiKey(self.key()).name().unwrap_or("unknown")
    }

    /// The newest version the guard reads (the broker's ApiVersions answer is capped to it,
    /// so that clients never send a newer one).
    pub fn max_version(self) -> i16 {
        match self {
            Api::CreateTopics => 7,
            Api::DeleteTopics => 6,
            Api::DeleteRecords => 2,
            Api::AlterConfigs => 2,
            Api::CreatePartitions => 3,
            Api::IncrementalAlterConfigs => 1,
            Api::AlterPartitionReassignments => 1,
            Api::UnregisterBroker => 0,
        }
    }

    /// The first flexible version (compact encodings, tagged fields, header v2): Kafka's,
    /// from the codec's table of API keys (every API here has one).
    pub fn first_flexible(self) -> i16 {
        ApiKey(self.key())
            .first_flexible_version()
            .unwrap_or(i16::MAX)
    }

    /// The oldest version the guard reads: Kafka 4's (older ones were removed in 4.0, and a
    /// broker answers them UNSUPPORTED_VERSION).
    pub fn min_version(self) -> i16 {
        match self {
            Api::CreateTopics => 2,
            Api::DeleteTopics => 1,
            _ => 0,
        }
    }

    /// Whether the guard reads `version` of this API.
    pub fn reads(self, version: i16) -> bool {
        (self.min_version()..=self.max_version()).contains(&version)
    }
}
