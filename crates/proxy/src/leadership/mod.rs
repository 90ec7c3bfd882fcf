//! The leadership-change policy: every request other than ElectLeaders that can change who
//! leads a partition, or let the controller elect a replica out of sync by itself, held to
//! the same rules as ElectLeaders.
//!
//! A guard that refuses an UNCLEAN election but forwards the config change that makes the
//! controller hold one by itself protects nothing. So, whenever the policy has a rule that
//! concerns leadership ([`Policy::deny_unclean`], [`Policy::protected_topics`],
//! [`Policy::allowed_client_ids`], [`Policy::allowed_principals`]), these requests are read
//! and decided on:
//!
//! | API (key) | refused when |
//! |---|---|
//! | IncrementalAlterConfigs (44) | a topic, broker or cluster-default `unclean.leader.election.enable` set to anything but `false`, deleted, or changed by an operation the guard does not know (deny-unclean; for a protected topic always); `min.insync.replicas` changed on a protected topic, or on a broker or the cluster default while topics are protected (their inherited value); a resource type the guard does not know |
//! | AlterConfigs (33) | the same; and since it replaces a resource's whole set, a resource whose set does not say `unclean.leader.election.enable=false` (deny-unclean), and any set for a protected topic, a broker or the cluster default while topics are protected (it resets `min.insync.replicas`) |
//! | CreateTopics (19) | a topic created with `unclean.leader.election.enable` other than `false` (deny-unclean; for a protected name always) |
//! | AlterPartitionReassignments (45) | a protected topic's partitions, moved or their move cancelled; the client id or principal not allowed to elect |
//! | CreatePartitions (37) | partitions added to a protected topic |
//! | DeleteTopics (20) | a protected topic; a topic named only by its id while topics are protected (the guard cannot tell which it is) |
//! | UnregisterBroker (64) | while topics are protected (its partitions' leadership moves); the client id or principal not allowed to elect |
//! | LeaderAndIsr (4), StopReplica (5), UpdateMetadata (6), ControlledShutdown (7), Vote, BeginQuorumEpoch, EndQuorumEpoch (52-54), AlterPartition (56), Envelope (58), BrokerRegistration (62), BrokerHeartbeat (63) | always: brokers and controllers send these to each other, never a client, and Kafka's brokers do not take them on a client listener; the guard closes the connection, as Kafka does |
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
//! - DeleteRecords, CreateAcls, DeleteAcls, the quotas and SCRAM credentials: no effect on
//!   leadership.
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

pub use api::{inter_broker, Api, INTER_BROKER};
pub use decision::{ChangeDecision, Why};
pub use read::{
    read_request, ChangeRequest, ConfigChange, Entry, Key, Op, ReadError, ReadErrorKind,
    RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, RESOURCE_CLIENT_METRICS, RESOURCE_GROUP,
    RESOURCE_TOPIC,
};
pub use refuse::{encode_refusal, MESSAGES, POLICY_VIOLATION};

use crate::policy::{Policy, Rule, Rules, Verdict};

const UNCLEAN: &str = "refused by the elect-leaders proxy: this change could let the controller \
                       elect a replica out of sync (unclean.leader.election.enable may only be \
                       set to false through the guard)";
const REPLACES_UNCLEAN: &str = "refused by the elect-leaders proxy: AlterConfigs replaces every \
                                config of the resource and would reset \
                                unclean.leader.election.enable; set it to false in the same \
                                request, or use IncrementalAlterConfigs";
const MIN_ISR: &str = "refused by the elect-leaders proxy: min.insync.replicas of a protected \
                       topic, or the broker default it inherits, may not be changed through the \
                       guard";
const REPLACES_PROTECTED: &str = "refused by the elect-leaders proxy: AlterConfigs replaces every \
                                  config of the resource and would reset min.insync.replicas of \
                                  a protected topic; use IncrementalAlterConfigs";
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
const UNREGISTER: &str = "refused by the elect-leaders proxy: unregistering a broker moves the \
                          leadership of its partitions, protected topics' included";

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
        // Who may move leaders: the rules of who may elect.
        if matches!(
            request.api,
            Api::AlterPartitionReassignments | Api::UnregisterBroker
        ) {
            let mut reasons = Vec::new();
            if !self.allowed_client_ids.is_empty()
                && !request
                    .client_id
                    .is_some_and(|id| self.allowed_client_ids.contains(id))
            {
                rules.insert(Rule::AllowClientId);
                reasons.push("this client id may not change partition leadership");
            }
            if !allowed_principals.is_empty()
                && !principal.is_some_and(|p| allowed_principals.contains(p))
            {
                rules.insert(Rule::AllowPrincipal);
                reasons.push(if principal.is_some() {
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
            if let Some(why) = self.refuses_change(request, entry) {
                rules.insert(why.rule);
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

    /// Why this entry of the request is refused, if it is.
    fn refuses_change(&self, request: &ChangeRequest<'_>, entry: &Entry<'_>) -> Option<Why> {
        let protected = entry
            .name
            .is_some_and(|name| entry.resource_type == RESOURCE_TOPIC && self.is_protected(name));
        let topics_protected = !self.protected_topics.is_empty();
        let why = |rule, message| Some(Why { rule, message });
        match request.api {
            Api::AlterPartitionReassignments if protected => why(Rule::ProtectTopic, REASSIGN),
            Api::CreatePartitions if protected => why(Rule::ProtectTopic, ADD_PARTITIONS),
            Api::DeleteTopics if protected => why(Rule::ProtectTopic, DELETE),
            Api::DeleteTopics if entry.name.is_none() && topics_protected => {
                why(Rule::ProtectTopic, DELETE_BY_ID)
            }
            Api::CreateTopics => {
                let enables = entry
                    .changes
                    .iter()
                    .any(|c| c.key == Key::UncleanLeaderElection && !c.op.sets_false());
                if enables && protected {
                    why(Rule::ProtectTopic, UNCLEAN)
                } else if enables && self.deny_unclean {
                    why(Rule::DenyUnclean, UNCLEAN)
                } else {
                    None
                }
            }
            Api::AlterConfigs | Api::IncrementalAlterConfigs => {
                self.refuses_config(entry, protected)
            }
            _ => None,
        }
    }

    fn refuses_config(&self, entry: &Entry<'_>, protected: bool) -> Option<Why> {
        let topics_protected = !self.protected_topics.is_empty();
        // Whether this resource's `min.insync.replicas` is one a protected topic has or
        // inherits, and whether its unclean setting is one a protected topic has or inherits.
        let (guards_isr, guards_unclean) = match entry.resource_type {
            RESOURCE_TOPIC => (protected, protected || self.deny_unclean),
            RESOURCE_BROKER => (topics_protected, topics_protected || self.deny_unclean),
            RESOURCE_BROKER_LOGGER | RESOURCE_CLIENT_METRICS | RESOURCE_GROUP => return None,
            _ if self.deny_unclean || topics_protected => {
                let rule = if self.deny_unclean {
                    Rule::DenyUnclean
                } else {
                    Rule::ProtectTopic
                };
                return Some(Why {
                    rule,
                    message: UNKNOWN_RESOURCE,
                });
            }
            _ => return None,
        };
        let unclean_rule = if self.deny_unclean {
            Rule::DenyUnclean
        } else {
            Rule::ProtectTopic
        };
        for change in &entry.changes {
            match change.key {
                Key::UncleanLeaderElection if guards_unclean && !change.op.sets_false() => {
                    let message = match change.op {
                        Op::Omitted => REPLACES_UNCLEAN,
                        Op::Unknown(_) => UNKNOWN_OP,
                        _ => UNCLEAN,
                    };
                    return Some(Why {
                        rule: unclean_rule,
                        message,
                    });
                }
                Key::MinInsyncReplicas if guards_isr => {
                    let message = match change.op {
                        Op::Omitted => REPLACES_PROTECTED,
                        Op::Unknown(_) => UNKNOWN_OP,
                        _ => MIN_ISR,
                    };
                    return Some(Why {
                        rule: Rule::ProtectTopic,
                        message,
                    });
                }
                _ => {}
            }
        }
        None
    }
}

/// The audit record of one leadership-change decision, as one JSON line.
pub mod audit;

#[cfg(test)]
mod tests;
