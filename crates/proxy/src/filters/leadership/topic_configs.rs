//! Every topic config of Kafka 4's `org.apache.kafka.common.config.TopicConfig`, with
//! what the guard does with it on a protected topic and why ([`TOPIC_CONFIGS`]), and the
//! broker configs through which a topic inherits them (Kafka's `ServerTopicConfigSynonyms`,
//! [`BROKER_SYNONYMS`]).
//!
//! A protected topic keeps its leaders, and its records: a guard that refuses an UNCLEAN
//! election of it but forwards `retention.ms=1` protects nothing either. So each config is
//! refused on a protected topic (in IncrementalAlterConfigs, AlterConfigs and CreateTopics)
//! when changing it can delete records, hide them, or let an acknowledged record have fewer
//! copies; and so is its broker synonym, on a broker or the cluster default, while topics
//! are protected (a topic without its own value inherits the broker's). The rest is
//! allowed. The table errs towards refusing: a config that only makes retention or
//! compaction reach records sooner (`segment.ms`) is refused with those that delete them
//! outright, since what an operator protects a topic for is what it holds today.
//!
//! A topic config not in the table is refused on a protected topic ("what the guard
//! cannot prove allowed is refused"): Kafka itself refuses names it does not know
//! (`LogConfig.validateNames`), and a key a later Kafka adds is refused until the table
//! says what it does. That covers the keys Kafka 4.0 removed (`message.format.version`,
//! `message.timestamp.difference.max.ms`), and topic configs kept outside `TopicConfig`
//! (`leader.replication.throttled.replicas`, `follower.replication.throttled.replicas`:
//! reassignments of protected topics are refused anyway). A broker config not in
//! [`BROKER_SYNONYMS`] is forwarded: a broker has hundreds, and only these are a topic's
//! defaults.
//!
//! The table is `pub` so that a test outside this crate can hold it against the real
//! `TopicConfig` of a kafka-clients jar: a key added or removed there fails that test.

/// What the guard does with a topic config on a protected topic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnProtected {
    /// Refused, whatever the change (set, deleted, reset by AlterConfigs).
    Refused,
    /// Refused unless set to `false` (`unclean.leader.election.enable`).
    RefusedUnlessFalse,
    /// Allowed: no record is deleted, hidden or left with fewer copies.
    Allowed,
}

/// One topic config.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TopicConfig {
    /// Its name, as `TopicConfig` spells it.
    pub key: &'static str,
    /// What the guard does with it on a protected topic.
    pub decision: OnProtected,
    /// Why, in one line.
    pub reason: &'static str,
    /// The message of a refusal, naming the config and why (not the guard's settings).
    pub refusal: &'static str,
}

/// A broker config that is a topic config's default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BrokerSynonym {
    /// The broker config's name.
    pub broker_key: &'static str,
    /// The topic config it is the default of.
    pub topic_key: &'static str,
    /// The message of a refusal, naming both.
    pub refusal: &'static str,
}

/// One line per config; the refusal's message is written from the key and the reason, so
/// that a client is told which of its configs is refused and why.
macro_rules! topic_configs {
    ($($key:literal: $decision:ident, $reason:literal;)*) => {
        /// Every topic config of Kafka 4's `TopicConfig`, in its order.
        pub const TOPIC_CONFIGS: &[TopicConfig] = &[$(TopicConfig {
            key: $key,
            decision: OnProtected::$decision,
            reason: $reason,
            refusal: concat!(
                "refused by the elect-leaders proxy: the topic is protected, and ",
                $key,
                " may not be set, deleted or reset on it through the guard: ",
                $reason
            ),
        },)*];
    };
}

topic_configs! {
    "segment.bytes": Refused,
        "smaller segments roll sooner, so retention and compaction reach records sooner";
    "segment.ms": Refused,
        "segments roll sooner, so retention and compaction reach records sooner";
    "segment.jitter.ms": Refused,
        "segments roll sooner, so retention and compaction reach records sooner";
    "segment.index.bytes": Refused,
        "a smaller index fills and rolls its segment sooner, so retention reaches records sooner";
    "flush.messages": Refused,
        "acknowledged records may stay unflushed longer, lost if every replica loses power";
    "flush.ms": Refused,
        "acknowledged records may stay unflushed longer, lost if every replica loses power";
    "retention.bytes": Refused,
        "the oldest records past this size are deleted";
    "retention.ms": Refused,
        "records older than it are deleted";
    "remote.storage.enable": Refused,
        "tiered storage can delete copies: local ones once tiered, remote ones once disabled";
    "local.retention.ms": Refused,
        "tiered storage deletes the local copies of records older than it";
    "local.retention.bytes": Refused,
        "tiered storage deletes the local copies of the oldest records past this size";
    "remote.log.copy.disable": Refused,
        "tiered storage can delete copies: records stop being copied, a step to disabling it";
    "remote.copy.lag.ms": Refused,
        "tiered storage can delete copies: when records are copied moves when local ones may go";
    "remote.copy.lag.bytes": Refused,
        "tiered storage can delete copies: when records are copied moves when local ones may go";
    "remote.log.delete.on.disable": Refused,
        "tiered storage can delete copies: the remote ones, once tiered storage is disabled";
    "max.message.bytes": Allowed,
        "the largest batch accepted; a batch it refuses was never acknowledged";
    "max.decompressed.message.bytes": Allowed,
        "the largest decompressed batch accepted; a batch it refuses was never acknowledged";
    "index.interval.bytes": Refused,
        "a denser index fills and rolls its segment sooner, so retention reaches records sooner";
    "file.delete.delay.ms": Allowed,
        "only when files already deleted from the log leave the disk";
    "delete.retention.ms": Refused,
        "compaction deletes tombstones older than it";
    "min.compaction.lag.ms": Refused,
        "compaction may delete superseded records sooner";
    "max.compaction.lag.ms": Refused,
        "compaction is forced sooner, deleting superseded records";
    "min.cleanable.dirty.ratio": Refused,
        "compaction runs sooner, deleting superseded records";
    "cleanup.policy": Refused,
        "compaction deletes superseded records, delete deletes old ones";
    "unclean.leader.election.enable": RefusedUnlessFalse,
        "a replica out of sync elected leader loses the acknowledged records it lacks";
    "min.insync.replicas": Refused,
        "acks=all acknowledges with fewer copies";
    "compression.type": Allowed,
        "how batches are stored; no record lost";
    "compression.gzip.level": Allowed,
        "how batches are stored; no record lost";
    "compression.lz4.level": Allowed,
        "how batches are stored; no record lost";
    "compression.zstd.level": Allowed,
        "how batches are stored; no record lost";
    "preallocate": Allowed,
        "how segment files are allocated on disk; no record lost";
    "message.timestamp.type": Refused,
        "CreateTime lets a producer's old timestamps make retention delete records at once";
    "message.timestamp.before.max.ms": Refused,
        "older producer timestamps pass, and retention deletes their records at once";
    "message.timestamp.after.max.ms": Allowed,
        "later producer timestamps keep records longer, never shorter";
    "message.downconversion.enable": Allowed,
        "a no-op since Kafka 4.0, which has no down-conversion";
    "errors.deadletterqueue.group.enable": Allowed,
        "whether groups may send records they fail on to this topic; the records stay";
}

/// One line per broker config: its name, then the topic config it is the default of.
macro_rules! broker_synonyms {
    ($($broker:literal => $topic:literal,)*) => {
        /// The broker configs that are topic configs' defaults, Kafka 4's
        /// `ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS` (every synonym of each,
        /// not only the first), without the keys Kafka 4.0 removed.
        pub const BROKER_SYNONYMS: &[BrokerSynonym] = &[$(BrokerSynonym {
            broker_key: $broker,
            topic_key: $topic,
            refusal: concat!(
                "refused by the elect-leaders proxy: ",
                $broker,
                " is the default of ",
                $topic,
                ", which protected topics inherit, and may not be changed through the guard"
            ),
        },)*];
    };
}

broker_synonyms! {
    "log.segment.bytes" => "segment.bytes",
    "log.roll.ms" => "segment.ms",
    "log.roll.hours" => "segment.ms",
    "log.roll.jitter.ms" => "segment.jitter.ms",
    "log.roll.jitter.hours" => "segment.jitter.ms",
    "log.index.size.max.bytes" => "segment.index.bytes",
    "log.flush.interval.messages" => "flush.messages",
    "log.flush.interval.ms" => "flush.ms",
    "log.flush.scheduler.interval.ms" => "flush.ms",
    "log.retention.bytes" => "retention.bytes",
    "log.retention.ms" => "retention.ms",
    "log.retention.minutes" => "retention.ms",
    "log.retention.hours" => "retention.ms",
    "message.max.bytes" => "max.message.bytes",
    "log.index.interval.bytes" => "index.interval.bytes",
    "log.cleaner.delete.retention.ms" => "delete.retention.ms",
    "log.cleaner.min.compaction.lag.ms" => "min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms" => "max.compaction.lag.ms",
    "log.segment.delete.delay.ms" => "file.delete.delay.ms",
    "log.cleaner.min.cleanable.ratio" => "min.cleanable.dirty.ratio",
    "log.cleanup.policy" => "cleanup.policy",
    "unclean.leader.election.enable" => "unclean.leader.election.enable",
    "min.insync.replicas" => "min.insync.replicas",
    "compression.type" => "compression.type",
    "compression.gzip.level" => "compression.gzip.level",
    "compression.lz4.level" => "compression.lz4.level",
    "compression.zstd.level" => "compression.zstd.level",
    "log.preallocate" => "preallocate",
    "log.message.timestamp.type" => "message.timestamp.type",
    "log.message.timestamp.before.max.ms" => "message.timestamp.before.max.ms",
    "log.message.timestamp.after.max.ms" => "message.timestamp.after.max.ms",
    "log.message.downconversion.enable" => "message.downconversion.enable",
    "log.local.retention.ms" => "local.retention.ms",
    "log.local.retention.bytes" => "local.retention.bytes",
}

/// `unclean.leader.election.enable`: whether a replica out of sync may be elected.
pub const UNCLEAN_LEADER_ELECTION: &str = "unclean.leader.election.enable";

/// The topic config named `name` (Kafka's names are case-sensitive and never trimmed).
pub fn topic_config(name: &[u8]) -> Option<&'static TopicConfig> {
    TOPIC_CONFIGS.iter().find(|c| c.key.as_bytes() == name)
}

/// The broker config named `name`, when it is a topic config's default.
pub fn broker_synonym(name: &[u8]) -> Option<&'static BrokerSynonym> {
    BROKER_SYNONYMS
        .iter()
        .find(|s| s.broker_key.as_bytes() == name)
}

impl BrokerSynonym {
    /// The topic config this broker config is the default of.
    pub fn topic_config(&self) -> &'static TopicConfig {
        // Every synonym's topic key is in the table (a test checks it): the fallback is
        // never taken, and would refuse.
        topic_config(self.topic_key.as_bytes()).unwrap_or(&TOPIC_CONFIGS[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_unique_and_every_synonym_names_a_topic_config() {
        let mut keys: Vec<&str> = TOPIC_CONFIGS.iter().map(|c| c.key).collect();
        keys.sort_unstable();
        let before = keys.len();
        keys.dedup();
        assert_eq!(keys.len(), before, "a topic config listed twice");
        let mut brokers: Vec<&str> = BROKER_SYNONYMS.iter().map(|s| s.broker_key).collect();
        brokers.sort_unstable();
        let before = brokers.len();
        brokers.dedup();
        assert_eq!(brokers.len(), before, "a broker config listed twice");
        for synonym in BROKER_SYNONYMS {
            assert_eq!(
                synonym.topic_config().key,
                synonym.topic_key,
                "{}",
                synonym.broker_key
            );
        }
        // Every refused topic config has its broker synonyms listed, but tiered storage's
        // own switches, which have none (an allowed one's synonym is forwarded anyway).
        for config in TOPIC_CONFIGS {
            let has_synonym = BROKER_SYNONYMS.iter().any(|s| s.topic_key == config.key);
            if config.key.starts_with("remote.") {
                assert!(!has_synonym, "{}", config.key);
            } else if config.decision != OnProtected::Allowed {
                assert!(has_synonym, "{}", config.key);
            }
        }
    }

    #[test]
    fn a_refusal_names_the_config_and_why() {
        let retention = topic_config(b"retention.ms").unwrap();
        assert_eq!(retention.decision, OnProtected::Refused);
        assert!(retention.refusal.contains("retention.ms may not be set"));
        assert!(retention
            .refusal
            .ends_with("records older than it are deleted"));
        assert!(topic_config(b"Retention.ms").is_none());
        assert!(topic_config(b"message.format.version").is_none());
        let hours = broker_synonym(b"log.retention.hours").unwrap();
        assert_eq!(hours.topic_config().key, "retention.ms");
        assert!(hours
            .refusal
            .contains("log.retention.hours is the default of retention.ms"));
        assert!(broker_synonym(b"num.network.threads").is_none());
    }
}
