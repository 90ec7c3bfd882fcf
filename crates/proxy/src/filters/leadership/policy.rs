//! The leadership-change rules applied to a change request: which APIs the policy in force
//! reads, and its decision on each entry.

use super::api::Api;
use super::decision::{ChangeDecision, Why};
use super::read::{
    ChangeRequest, Entry, Key, Op, RESOURCE_BROKER, RESOURCE_BROKER_LOGGER,
    RESOURCE_CLIENT_METRICS, RESOURCE_GROUP, RESOURCE_TOPIC,
};
use super::topic_configs::OnProtected;
use crate::filters::elect::policy::{Policy, Rule, Rules, Verdict};

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
