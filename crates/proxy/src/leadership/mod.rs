//! The leadership-change policy: every request other than ElectLeaders that can change who
//! leads a partition, or let the controller elect a replica out of sync by itself, held to
//! the same rules as ElectLeaders.
//!
//! A guard that refuses an UNCLEAN election but forwards the config change that makes the
//! controller hold one by itself protects nothing. So, whenever the policy has a rule that
//! concerns leadership (`--deny-unclean`, `--protect-topic`, `--allow-client-id`,
//! `--allow-principal`), these requests are read and decided on:
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
//! decide them. Under `--log-only` nothing is refused and what would be is audited. Every
//! decision is audited; one that cannot be is refused.

mod read;
mod refuse;

pub use read::{
    read_request, ChangeRequest, ConfigChange, Entry, Key, Op, ReadError, ReadErrorKind,
    RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, RESOURCE_CLIENT_METRICS, RESOURCE_GROUP,
    RESOURCE_TOPIC,
};
pub use refuse::{encode_refusal, MESSAGES, POLICY_VIOLATION};

use crate::policy::{Policy, Rule, Rules, Verdict};

/// The APIs the policy reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Api {
    CreateTopics,
    DeleteTopics,
    AlterConfigs,
    CreatePartitions,
    IncrementalAlterConfigs,
    AlterPartitionReassignments,
    UnregisterBroker,
}

impl Api {
    /// Every API the policy reads.
    pub const ALL: [Api; 7] = [
        Api::CreateTopics,
        Api::DeleteTopics,
        Api::AlterConfigs,
        Api::CreatePartitions,
        Api::IncrementalAlterConfigs,
        Api::AlterPartitionReassignments,
        Api::UnregisterBroker,
    ];

    /// The API of `api_key`, if the policy reads it.
    pub fn of(api_key: i16) -> Option<Api> {
        Api::ALL.into_iter().find(|api| api.key() == api_key)
    }

    pub fn key(self) -> i16 {
        match self {
            Api::CreateTopics => 19,
            Api::DeleteTopics => 20,
            Api::AlterConfigs => 33,
            Api::CreatePartitions => 37,
            Api::IncrementalAlterConfigs => 44,
            Api::AlterPartitionReassignments => 45,
            Api::UnregisterBroker => 64,
        }
    }

    /// Kafka's name of the API.
    pub fn name(self) -> &'static str {
        match self {
            Api::CreateTopics => "CreateTopics",
            Api::DeleteTopics => "DeleteTopics",
            Api::AlterConfigs => "AlterConfigs",
            Api::CreatePartitions => "CreatePartitions",
            Api::IncrementalAlterConfigs => "IncrementalAlterConfigs",
            Api::AlterPartitionReassignments => "AlterPartitionReassignments",
            Api::UnregisterBroker => "UnregisterBroker",
        }
    }

    /// The newest version the guard reads (the broker's ApiVersions answer is capped to it,
    /// so that clients never send a newer one).
    pub fn max_version(self) -> i16 {
        match self {
            Api::CreateTopics => 7,
            Api::DeleteTopics => 6,
            Api::AlterConfigs => 2,
            Api::CreatePartitions => 3,
            Api::IncrementalAlterConfigs => 1,
            Api::AlterPartitionReassignments => 1,
            Api::UnregisterBroker => 0,
        }
    }

    /// The first flexible version (compact encodings, tagged fields, header v2).
    pub fn first_flexible(self) -> i16 {
        match self {
            Api::CreateTopics => 5,
            Api::DeleteTopics => 4,
            Api::AlterConfigs => 2,
            Api::CreatePartitions => 2,
            Api::IncrementalAlterConfigs => 1,
            Api::AlterPartitionReassignments | Api::UnregisterBroker => 0,
        }
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

/// The APIs brokers and controllers send each other and no client does, with their names:
/// the guard closes a connection that sends one while leadership is policed.
pub const INTER_BROKER: [(i16, &str); 11] = [
    (4, "LeaderAndIsr"),
    (5, "StopReplica"),
    (6, "UpdateMetadata"),
    (7, "ControlledShutdown"),
    (52, "Vote"),
    (53, "BeginQuorumEpoch"),
    (54, "EndQuorumEpoch"),
    (56, "AlterPartition"),
    (58, "Envelope"),
    (62, "BrokerRegistration"),
    (63, "BrokerHeartbeat"),
];

/// The name of an inter-broker API the guard never forwards while it polices leadership.
pub fn inter_broker(api_key: i16) -> Option<&'static str> {
    INTER_BROKER
        .iter()
        .find(|(key, _)| *key == api_key)
        .map(|(_, name)| *name)
}

/// Why an entry is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Why {
    pub rule: Rule,
    /// The message its answer carries (it names no other rule than its own, and no other
    /// topic or principal than the client's own).
    pub message: &'static str,
}

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

/// The policy's decision on one leadership-change request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangeDecision {
    pub verdict: Verdict,
    /// Every rule that refused something.
    pub rules: Rules,
    /// The entries refused on their own, by index, in order, with why.
    pub refused: Vec<(usize, Why)>,
    /// A refusal of the whole request (a client id or principal not allowed, an audit log
    /// that failed): the message every entry carries.
    pub whole: Option<String>,
    /// The principal whose own rules decided ([`Policy::principal_rules`]); None: the
    /// policy's.
    pub rules_of: Option<Box<str>>,
}

impl ChangeDecision {
    /// Whether anything is refused (or would be, under `--log-only`).
    pub fn refuses(&self) -> bool {
        self.whole.is_some() || !self.refused.is_empty()
    }

    /// The message of entry `i` in the refusal.
    pub fn message(&self, i: usize) -> Option<&str> {
        if let Some(whole) = &self.whole {
            return Some(whole);
        }
        match self.refused.binary_search_by_key(&i, |(at, _)| *at) {
            Ok(at) => Some(self.refused[at].1.message),
            Err(_) => Some(refuse::WITH_THE_REST),
        }
    }

    /// The message of the request as a whole (answers with a top-level error).
    pub fn first_message(&self) -> Option<&str> {
        match &self.whole {
            Some(whole) => Some(whole),
            None => self.refused.first().map(|(_, why)| why.message),
        }
    }

    /// The decision when this one could not be audited: everything refused, whatever
    /// `--log-only` says.
    pub fn unaudited(mut self, why: &str) -> ChangeDecision {
        self.verdict = Verdict::Refused;
        self.rules.insert(Rule::AuditLog);
        self.whole = Some(format!(
            "refused by the elect-leaders proxy: {why}, and a change that cannot be audited is \
             not let through"
        ));
        self
    }
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
