//! The leadership-change policy: every request other than ElectLeaders that can change who
//! leads a partition, let the controller elect a replica out of sync by itself, or take a
//! protected topic's records, held to the same rules as ElectLeaders.
//!
//! A guard that refuses an UNCLEAN election but forwards the config change that makes the
//! controller hold one by itself protects nothing; nor does one that protects a topic's
//! leaders and forwards `retention.ms=1` on it. So, whenever the policy has a rule that
//! concerns leadership ([`Policy::deny_unclean`], [`Policy::protected_topics`],
//! [`Policy::allowed_client_ids`], [`Policy::allowed_principals`]), these requests are read
//! and decided on:
//!
//! | API (key) | refused when |
//! |---|---|
//! | IncrementalAlterConfigs (44) | a topic, broker or cluster-default `unclean.leader.election.enable` set to anything but `false`, deleted, or changed by an operation the guard does not know (deny-unclean; for a protected topic always; and, as an UNCLEAN election, for a client id or principal not allowed to elect: allow-client-id, allow-principal); on a protected topic, a config the table of [`topic_configs`] refuses (retention, cleanup, compaction, tiered storage, `min.insync.replicas`, ...) or one the guard does not know; on a broker or the cluster default while topics are protected, the broker synonym of such a config (`log.retention.ms`, `log.cleanup.policy`, `min.insync.replicas`, ...: their inherited value); a resource type the guard does not know |
//! | AlterConfigs (33) | the same; and since it replaces a resource's whole set, a resource whose set does not say `unclean.leader.election.enable=false` (deny-unclean, allow-client-id, allow-principal), and any set for a protected topic, a broker or the cluster default while topics are protected (it resets their retention, `min.insync.replicas`, ...) |
//! | CreateTopics (19) | a topic created with `unclean.leader.election.enable` other than `false` (deny-unclean, allow-client-id, allow-principal; for a protected name always); a protected name created with a config the table refuses (a record produced to a topic created with `retention.ms=1` is lost as surely), or, under [`Policy::min_replication`], with fewer replicas, with the broker's default (-1: the guard cannot check it), or with an assignment giving a partition fewer |
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
//! decide them. Under [`Policy::log_only`] nothing is refused and what would be is audited.
//! Every decision is audited; one that cannot be is refused.

mod api;
mod decision;
mod read;
mod refuse;
pub mod topic_configs;

pub use api::Api;
pub use decision::{ChangeDecision, Why};
pub use read::{
    read_request, ChangeRequest, ConfigChange, Entry, Key, Op, ReadError, ReadErrorKind,
    RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, RESOURCE_CLIENT_METRICS, RESOURCE_GROUP,
    RESOURCE_TOPIC,
};
pub use refuse::{encode_refusal, MESSAGES, POLICY_VIOLATION};
pub use topic_configs::{BrokerSynonym, OnProtected, TopicConfig, BROKER_SYNONYMS, TOPIC_CONFIGS};

use crate::policy::{Policy, Rule, Rules, Verdict};

const UNCLEAN: &str = "refused by the elect-leaders proxy: this change could let the controller \
                       elect a replica out of sync (unclean.leader.election.enable may only be \
                       set to false through the guard)";
const REPLACES_UNCLEAN: &str = "refused by the elect-leaders proxy: AlterConfigs replaces every \
                                config of the resource and would reset \
                                unclean.leader.election.enable; set it to false in the same \
                                request, or use IncrementalAlterConfigs";
const UNCLEAN_CLIENT_ID: &str = "refused by the elect-leaders proxy: this client id may not let \
                                 the controller elect a replica out of sync \
                                 (unclean.leader.election.enable set to anything but false, \
                                 deleted, or reset by AlterConfigs)";
const UNCLEAN_PRINCIPAL: &str = "refused by the elect-leaders proxy: this principal may not let \
                                 the controller elect a replica out of sync \
                                 (unclean.leader.election.enable set to anything but false, \
                                 deleted, or reset by AlterConfigs)";
const UNCLEAN_UNKNOWN_PRINCIPAL: &str = "refused by the elect-leaders proxy: the principal is \
                                         unknown, and only some may let the controller elect a \
                                         replica out of sync (unclean.leader.election.enable set \
                                         to anything but false, deleted, or reset by \
                                         AlterConfigs)";
const REPLACES_PROTECTED: &str = "refused by the elect-leaders proxy: AlterConfigs replaces every \
                                  config of the resource and would reset those of a protected \
                                  topic, or the defaults it inherits (retention, \
                                  min.insync.replicas, ...); use IncrementalAlterConfigs";
const UNKNOWN_CONFIG: &str = "refused by the elect-leaders proxy: the topic is protected, and the \
                              request sets a config on it that the guard does not know";
const UNKNOWN_RESOURCE: &str = "refused by the elect-leaders proxy: a config resource of a type \
                                the guard does not know";
const UNKNOWN_OP: &str = "refused by the elect-leaders proxy: a config operation the guard does \
                          not know, on a config that concerns leadership";
const REASSIGN: &str = "refused by the elect-leaders proxy: the topic is protected; its \
                        partitions may not be reassigned through the guard";
const ADD_PARTITIONS: &str = "refused by the elect-leaders proxy: the topic is protected; \
                              partitions may not be added to it through the guard";
const DELETE: &str = "refused by the elect-leaders proxy: the topic is protected and may not be \
                      deleted through the guard";
const DELETE_BY_ID: &str = "refused by the elect-leaders proxy: a topic named only by its id \
                            cannot be checked against the protected topics; name it";
const DELETE_RECORDS: &str = "refused by the elect-leaders proxy: the topic is protected; its \
                              records may not be deleted through the guard";
const UNREGISTER: &str = "refused by the elect-leaders proxy: unregistering a broker moves the \
                          leadership of its partitions, protected topics' included";
const REPLICATION_BELOW: &str = "refused by the elect-leaders proxy: the topic is protected, and \
                                 the replication factor asked for is below the least the guard \
                                 allows it";
const REPLICATION_DEFAULT: &str =
    "refused by the elect-leaders proxy: the topic is protected, and \
                                   its replication factor is left to the broker's default (-1), \
                                   which the guard cannot check; name it";
const ASSIGNED_BELOW: &str = "refused by the elect-leaders proxy: the topic is protected, and the \
                              assignment gives a partition fewer replicas than the guard allows \
                              it";

/// Which of the rules of who may change leadership (elect, move partitions, let the
/// controller elect a replica out of sync) refuse this client.
#[derive(Clone, Copy)]
struct NotAllowed {
    /// Its client id is not in [`Policy::allowed_client_ids`].
    client_id: bool,
    /// Its principal is not in [`Policy::allowed_principals`] (or unknown).
    principal: bool,
    /// Its principal is known.
    principal_known: bool,
}

impl Policy {
    /// Whether this policy (or a principal's own) has a rule that concerns leadership, so
    /// that the leadership-change APIs are read and decided on.
    pub fn polices_leadership(&self) -> bool {
        self.concerns_leadership()
            || self
                .principal_rules
                .values()
                .any(Policy::concerns_leadership)
    }

    /// Whether this policy (or a principal's own) protects any topic: only then is
    /// DeleteRecords read, since no other rule concerns it (Kafka Streams deletes the
    /// records of its repartition topics on every commit: unread, they cost nothing).
    pub fn protects_topics(&self) -> bool {
        !self.protected_topics.is_empty()
            || self
                .principal_rules
                .values()
                .any(|own| !own.protected_topics.is_empty())
    }

    /// Whether a request of `api` is read and decided on under this policy.
    pub fn reads_change(&self, api: Api) -> bool {
        match api {
            Api::DeleteRecords => self.protects_topics(),
            _ => self.polices_leadership(),
        }
    }

    fn concerns_leadership(&self) -> bool {
        self.deny_unclean
            || !self.protected_topics.is_empty()
            || !self.allowed_client_ids.is_empty()
            || !self.allowed_principals.is_empty()
    }

    /// Decides on a leadership-change request from a connection with this principal.
    pub fn decide_change(
        &self,
        request: &ChangeRequest<'_>,
        principal: Option<&str>,
    ) -> ChangeDecision {
        let allowed = &self.allowed_principals;
        match principal.and_then(|p| self.principal_rules.get_key_value(p)) {
            Some((name, own)) => {
                let mut decision = own.decide_change_with(request, principal, allowed);
                decision.rules_of = Some(name.clone());
                decision
            }
            None => self.decide_change_with(request, principal, allowed),
        }
    }

    fn decide_change_with(
        &self,
        request: &ChangeRequest<'_>,
        principal: Option<&str>,
        allowed_principals: &std::collections::HashSet<Box<str>>,
    ) -> ChangeDecision {
        let mut rules = Rules::default();
        let mut whole = None;
        let who = NotAllowed {
            client_id: !self.allowed_client_ids.is_empty()
                && !request
                    .client_id
                    .is_some_and(|id| self.allowed_client_ids.contains(id)),
            principal: !allowed_principals.is_empty()
                && !principal.is_some_and(|p| allowed_principals.contains(p)),
            principal_known: principal.is_some(),
        };
        // Who may move leaders: the rules of who may elect.
        if matches!(
            request.api,
            Api::AlterPartitionReassignments | Api::UnregisterBroker
        ) {
            let mut reasons = Vec::new();
            if who.client_id {
                rules.insert(Rule::AllowClientId);
                reasons.push("this client id may not change partition leadership");
            }
            if who.principal {
                rules.insert(Rule::AllowPrincipal);
                reasons.push(if who.principal_known {
                    "this principal may not change partition leadership"
                } else {
                    "the principal is unknown, and only some may change partition leadership"
                });
            }
            if !reasons.is_empty() {
                whole = Some(format!(
                    "refused by the elect-leaders proxy: {}",
                    reasons.join("; ")
                ));
            }
        }
        let mut refused = Vec::new();
        for (i, entry) in request.entries.iter().enumerate() {
            if let Some(why) = self.refuses_change(request, entry, who, &mut rules) {
                refused.push((i, why));
            }
        }
        if request.api == Api::UnregisterBroker && !self.protected_topics.is_empty() {
            rules.insert(Rule::ProtectTopic);
            refused.push((
                0,
                Why {
                    rule: Rule::ProtectTopic,
                    message: UNREGISTER,
                },
            ));
        }
        let refuses = whole.is_some() || !refused.is_empty();
        let verdict = match (refuses, self.log_only) {
            (false, _) => Verdict::Forwarded,
            (true, true) => Verdict::WouldRefuse,
            (true, false) => Verdict::Refused,
        };
        ChangeDecision {
            verdict,
            rules,
            refused,
            whole,
            rules_of: None,
        }
    }

    /// Why this entry of the request is refused, if it is: the first reason; every rule
    /// that refuses it goes into `rules`.
    fn refuses_change(
        &self,
        request: &ChangeRequest<'_>,
        entry: &Entry<'_>,
        who: NotAllowed,
        rules: &mut Rules,
    ) -> Option<Why> {
        let protected = entry
            .name
            .is_some_and(|name| entry.resource_type == RESOURCE_TOPIC && self.is_protected(name));
        let topics_protected = !self.protected_topics.is_empty();
        let mut why = |rule, message| {
            rules.insert(rule);
            Some(Why { rule, message })
        };
        match request.api {
            Api::AlterPartitionReassignments if protected => why(Rule::ProtectTopic, REASSIGN),
            Api::CreatePartitions if protected => why(Rule::ProtectTopic, ADD_PARTITIONS),
            Api::DeleteTopics if protected => why(Rule::ProtectTopic, DELETE),
            Api::DeleteTopics if entry.name.is_none() && topics_protected => {
                why(Rule::ProtectTopic, DELETE_BY_ID)
            }
            Api::DeleteRecords if protected => why(Rule::ProtectTopic, DELETE_RECORDS),
            Api::CreateTopics | Api::AlterConfigs | Api::IncrementalAlterConfigs => {
                self.refuses_config(request.api, entry, protected, who, rules)
            }
            _ => None,
        }
    }

    /// Why a config resource (or a topic CreateTopics creates) is refused, if it is.
    fn refuses_config(
        &self,
        api: Api,
        entry: &Entry<'_>,
        protected: bool,
        who: NotAllowed,
        rules: &mut Rules,
    ) -> Option<Why> {
        let topics_protected = !self.protected_topics.is_empty();
        let mut first = None;
        let mut refuse = |rule, message| {
            rules.insert(rule);
            first.get_or_insert(Why { rule, message });
        };
        // Whether this resource's configs are those a protected topic has or inherits.
        let guards_records = match entry.resource_type {
            RESOURCE_TOPIC => protected,
            RESOURCE_BROKER => topics_protected,
            RESOURCE_BROKER_LOGGER | RESOURCE_CLIENT_METRICS | RESOURCE_GROUP => return None,
            _ => {
                // A type the guard does not know could hold the unclean setting.
                let rule = if self.deny_unclean {
                    Some(Rule::DenyUnclean)
                } else if topics_protected {
                    Some(Rule::ProtectTopic)
                } else if who.client_id {
                    Some(Rule::AllowClientId)
                } else if who.principal {
                    Some(Rule::AllowPrincipal)
                } else {
                    None
                };
                if let Some(rule) = rule {
                    refuse(rule, UNKNOWN_RESOURCE);
                }
                return first;
            }
        };
        let guards_unclean = guards_records || self.deny_unclean;
        let unclean_rule = if self.deny_unclean {
            Rule::DenyUnclean
        } else {
            Rule::ProtectTopic
        };
        for change in &entry.changes {
            if change.key.is_unclean() {
                if change.op.sets_false() {
                    continue;
                }
                // It may let the controller elect a replica out of sync: held to the rules
                // of an UNCLEAN election.
                if guards_unclean {
                    let message = match change.op {
                        Op::Omitted => REPLACES_UNCLEAN,
                        Op::Unknown(_) => UNKNOWN_OP,
                        _ => UNCLEAN,
                    };
                    refuse(unclean_rule, message);
                }
                if who.client_id {
                    refuse(Rule::AllowClientId, UNCLEAN_CLIENT_ID);
                }
                if who.principal {
                    let message = if who.principal_known {
                        UNCLEAN_PRINCIPAL
                    } else {
                        UNCLEAN_UNKNOWN_PRINCIPAL
                    };
                    refuse(Rule::AllowPrincipal, message);
                }
                continue;
            }
            if !guards_records {
                continue;
            }
            match change.key {
                Key::Topic(config) if config.decision == OnProtected::Refused => {
                    refuse(Rule::ProtectTopic, config.refusal);
                }
                Key::Broker(synonym) if synonym.topic_config().decision == OnProtected::Refused => {
                    refuse(Rule::ProtectTopic, synonym.refusal);
                }
                Key::Unknown => refuse(Rule::ProtectTopic, UNKNOWN_CONFIG),
                _ => {}
            }
        }
        if api == Api::AlterConfigs && guards_records {
            refuse(Rule::ProtectTopic, REPLACES_PROTECTED);
        }
        if api == Api::CreateTopics && protected {
            if let Some(short) = self.short_of_replicas(entry) {
                refuse(Rule::MinReplication, short);
            }
        }
        first
    }

    /// Why a protected topic CreateTopics creates has too few replicas, if it has
    /// ([`Policy::min_replication`]).
    fn short_of_replicas(&self, entry: &Entry<'_>) -> Option<&'static str> {
        let least = self.min_replication?;
        match entry.fewest_assigned {
            Some(replicas) => {
                (replicas < usize::try_from(least).unwrap_or(0)).then_some(ASSIGNED_BELOW)
            }
            // No assignment: the replication factor says, unless it leaves it to the broker.
            None if entry.replication_factor == -1 => Some(REPLICATION_DEFAULT),
            None => (entry.replication_factor < least).then_some(REPLICATION_BELOW),
        }
    }
}

/// The audit record of one leadership-change decision, as one JSON line.
pub mod audit;

#[cfg(test)]
mod tests;
