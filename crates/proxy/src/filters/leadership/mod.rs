//! The leadership-change policy: every request other than ElectLeaders that can change who
//! leads a partition, let the controller elect a replica out of sync by itself, or take a
//! protected topic's records, held to the same rules as ElectLeaders.
//!
//! A guard that refuses an UNCLEAN election but forwards the config change that makes the
//! controller hold one by itself protects nothing; nor does one that protects a topic's
//! leaders and forwards `retention.ms=1` on it. So, whenever the policy has a rule that
//! concerns leadership ([`Policy::deny_unclean`](crate::Policy::deny_unclean), [`Policy::protected_topics`](crate::Policy::protected_topics),
//! [`Policy::allowed_client_ids`](crate::Policy::allowed_client_ids), [`Policy::allowed_principals`](crate::Policy::allowed_principals)), these requests are read
//! and decided on:
//!
//! | API (key) | refused when |
//! |---|---|
//! | IncrementalAlterConfigs (44) | a topic, broker or cluster-default `unclean.leader.election.enable` set to anything but `false`, deleted, or changed by an operation the guard does not know (deny-unclean; for a protected topic always; and, as an UNCLEAN election, for a client id or principal not allowed to elect: allow-client-id, allow-principal); on a protected topic, a config the table of [`TOPIC_CONFIGS`] refuses (retention, cleanup, compaction, tiered storage, `min.insync.replicas`, ...) or one the guard does not know; on a broker or the cluster default while topics are protected, the broker synonym of such a config (`log.retention.ms`, `log.cleanup.policy`, `min.insync.replicas`, ...: their inherited value); a resource type the guard does not know |
//! | AlterConfigs (33) | the same; and since it replaces a resource's whole set, a resource whose set does not say `unclean.leader.election.enable=false` (deny-unclean, allow-client-id, allow-principal), and any set for a protected topic, a broker or the cluster default while topics are protected (it resets their retention, `min.insync.replicas`, ...) |
//! | CreateTopics (19) | a topic created with `unclean.leader.election.enable` other than `false` (deny-unclean, allow-client-id, allow-principal; for a protected name always); a protected name created with a config the table refuses (a record produced to a topic created with `retention.ms=1` is lost as surely), or, under [`Policy::min_replication`](crate::Policy::min_replication), with fewer replicas, with the broker's default (-1: the guard cannot check it), or with an assignment giving a partition fewer |
//! | DeleteRecords (21) | records of a protected topic (each partition answered `POLICY_VIOLATION`) |
//! | AlterPartitionReassignments (45) | a protected topic's partitions, moved or their move cancelled; the client id or principal not allowed to elect |
//! | CreatePartitions (37) | partitions added to a protected topic |
//! | DeleteTopics (20) | a protected topic; a topic named only by its id while topics are protected (the guard cannot tell which it is) |
//! | UnregisterBroker (64) | while topics are protected (its partitions' leadership moves); the client id or principal not allowed to elect |
//!
//! A client id is chosen by the client, in every request's header: it is no identity, and
//! `allow-client-id` only keeps well-meaning tools apart. A client that means harm writes
//! the id it is allowed; against it, use `allow-principal` (the principal the broker
//! authenticated: a SASL user, a client certificate's subject).
//!
//! Checked and left out, with why:
//! - ListPartitionReassignments, DescribeConfigs, DescribeTopicPartitions, Metadata: they
//!   read, they change nothing.
//! - AlterReplicaLogDirs (34): moves a replica between directories of the same broker;
//!   the replica set and the leader stay.
//! - UpdateFeatures (57): `eligible.leader.replicas.version` changes how the controller
//!   keeps the ELR, not whether it may elect a replica out of sync.
//! - AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter (80-82): the controllers' own quorum,
//!   not a partition's leader.
//! - CreateAcls, DeleteAcls, the quotas and SCRAM credentials: no effect on leadership or
//!   on records (a quota slows a client, it deletes nothing).
//!
//! A whole request is refused when one of its entries is: each entry is answered
//! `POLICY_VIOLATION` (44), the ones at fault with why, the others as refused with the rest
//! (Kafka's own `CreateTopicPolicy` and `AlterConfigPolicy` answer per entry, but a request
//! half applied is harder for an operator to reason about than one refused). A request the
//! guard cannot read, or of a version it does not know, closes the connection: it is never
//! forwarded. `ValidateOnly` requests are decided like the others, as Kafka's policies
//! decide them. Under [`Policy::log_only`](crate::Policy::log_only) nothing is refused and what would be is audited.
//! Every decision is audited; one that cannot be is refused.

mod api;
/// The audit record of one leadership-change decision, as one JSON line.
pub mod audit;
mod decision;
mod filter;
mod policy;
mod read;
mod refuse;
mod topic_configs;

pub use api::Api;
pub use decision::{ChangeDecision, Why};
pub use filter::Leadership;
pub use read::{
    read_request, ChangeRequest, ConfigChange, Entry, Key, Op, ReadError, ReadErrorKind,
    RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, RESOURCE_CLIENT_METRICS, RESOURCE_GROUP,
    RESOURCE_TOPIC,
};
pub use refuse::{encode_refusal, encode_refusal_with, MESSAGES, POLICY_VIOLATION};
pub use topic_configs::{BrokerSynonym, OnProtected, TopicConfig, BROKER_SYNONYMS, TOPIC_CONFIGS};

#[cfg(test)]
mod tests;
