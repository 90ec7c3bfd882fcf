//! The ElectLeaders policy: which partitions of a request the proxy refuses, and by which
//! rule. A pure function of the configured rules and the parsed request: no socket, no
//! clock, no allocation unless a whole request is refused (its message names the rule).
//!
//! Two kinds of refusal, as Kafka itself has them:
//! - **whole**: the request itself is refused (a client id not allowed, too many
//!   partitions, a null `TopicPartitions` under a partition rule). It is answered as Kafka's
//!   `ElectLeadersRequest.getErrorResponse` answers: the top-level `ErrorCode` (v1+) and
//!   every partition the request names (none, when it names all) with `POLICY_VIOLATION`.
//! - **per partition**: some or all partitions refused (a protected topic, an unclean
//!   election of named partitions). Each refused partition is answered with
//!   `POLICY_VIOLATION` and a message naming the rule; the top-level `ErrorCode` stays
//!   `NONE`, as the broker leaves it for per-partition errors, so that clients report the
//!   error per partition (Kafka's Java Admin fails the whole call on a top-level error).
//!   The partitions not refused are forwarded, trimmed (`RequestEdit`).

use std::collections::{HashMap, HashSet};

use kafka_elect_leaders::{ElectLeadersRequest, ElectionType, TopicPartitions};

/// A name the client chose, quoted for a refusal's message: at most [`SHOWN_NAME`] bytes
/// of it. The message is repeated for every partition a whole refusal answers, so a long
/// client id (up to 32 KiB) would otherwise turn a 64 KiB request into an answer of
/// hundreds of megabytes.
fn quoted(name: &[u8]) -> String {
    if name.len() <= SHOWN_NAME {
        return format!("'{}'", String::from_utf8_lossy(name));
    }
    let shown = String::from_utf8_lossy(&name[..SHOWN_NAME]);
    // A character cut in two at the end becomes U+FFFD: dropped.
    let shown = shown.trim_end_matches('\u{fffd}');
    format!("'{shown}...' ({} bytes)", name.len())
}

/// The longest part of a client-chosen name a refusal's message shows.
pub const SHOWN_NAME: usize = 64;

/// What the operator configured.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    /// Only PREFERRED elections pass: UNCLEAN ones, and any type the guard does not know,
    /// are refused (`rules.deny-unclean`).
    pub deny_unclean: bool,
    /// No election for these topics' partitions (`rules.protect-topic`).
    pub protected_topics: HashSet<Box<[u8]>>,
    /// When not empty, only these client ids may elect, move partitions or let the
    /// controller elect a replica out of sync (`rules.allow-client-id`).
    ///
    /// A client id is chosen by the client, in every request's header: it is no identity,
    /// and a client that wants to pass as `ops` writes `ops`. This list keeps well-meaning
    /// tools apart (a script that should not elect); against a client that means harm, use
    /// [`Policy::allowed_principals`], which the broker authenticated.
    pub allowed_client_ids: HashSet<Box<[u8]>>,
    /// When not empty, only these principals may elect, move partitions or let the
    /// controller elect a replica out of sync (a SASL user name the broker accepted, or a
    /// client certificate's subject); an unknown principal is refused
    /// (`rules.allow-principal`).
    pub allowed_principals: HashSet<Box<str>>,
    /// A request naming more partitions (or all of them) is refused
    /// (`rules.max-partitions`).
    pub max_partitions: Option<usize>,
    /// A protected topic is created with at least this many replicas
    /// (`rules.min-replication`): CreateTopics of a protected name asking for fewer, or for
    /// the broker's default (-1, which the guard cannot check), is refused.
    pub min_replication: Option<i16>,
    /// Nothing refused, what would be is audited (`rules.log-only`).
    pub log_only: bool,
    /// Rules for one principal (the config file's `[rules.principal."NAME"]`): a request
    /// from a connection whose principal is a key here is decided by that policy instead,
    /// which the config file builds from these rules and the principal's own. Those
    /// policies' own `principal_rules` are not looked at. A principal named here still
    /// needs [`Policy::allowed_principals`] to allow it, when that is not empty.
    pub principal_rules: HashMap<Box<str>, Policy>,
    /// API keys Kafka 4.4 does not define that are forwarded all the same
    /// (`rules.forward-unknown-api`); every other key the guard's table of APIs
    /// (`crate::filters::doors::apis`) does not know closes the connection while any rule is set. A key
    /// the table knows cannot be named here.
    pub forwarded_unknown_apis: std::collections::BTreeSet<i16>,
    /// What every refusal's message begins with, in place of [`DEFAULT_REFUSAL_TEXT`]
    /// (`refusal-text`): the operator's words, such as a team and where to ask, which the
    /// client's tool shows. At most [`MAX_REFUSAL_TEXT`] bytes of printable characters
    /// ([`check_refusal_text`]). Only the top-level policy's is read.
    pub refusal_text: Option<Box<str>>,
}

/// What a refusal's message begins with unless the operator chose other words
/// ([`Policy::refusal_text`]).
pub const DEFAULT_REFUSAL_TEXT: &str = "refused by the elect-leaders proxy";

/// The longest [`Policy::refusal_text`]: it is repeated in up to 64 partitions' answers.
pub const MAX_REFUSAL_TEXT: usize = 200;

/// Whether `text` can be a refusal's text: not empty, at most [`MAX_REFUSAL_TEXT`] bytes, no
/// control character (a client's tool prints it on one line).
pub fn check_refusal_text(text: &str) -> Result<(), String> {
    if text.trim().is_empty() {
        return Err("an empty refusal text".into());
    }
    if text.len() > MAX_REFUSAL_TEXT {
        return Err(format!(
            "a refusal text of {} bytes, more than {MAX_REFUSAL_TEXT}",
            text.len()
        ));
    }
    if let Some(c) = text.chars().find(|c| c.is_control()) {
        return Err(format!("a control character ({c:?}) in the refusal text"));
    }
    Ok(())
}

/// A rule of the policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Only the client ids of [`Policy::allowed_client_ids`] may elect.
    AllowClientId,
    /// Only the principals of [`Policy::allowed_principals`] may elect.
    AllowPrincipal,
    /// A request names at most [`Policy::max_partitions`] partitions, and not all of them.
    MaxPartitions,
    /// Only PREFERRED elections ([`Policy::deny_unclean`]).
    DenyUnclean,
    /// No election for the topics of [`Policy::protected_topics`].
    ProtectTopic,
    /// The decision could not be written to the audit log: refused, failing closed.
    AuditLog,
    /// A protected topic is created with at least [`Policy::min_replication`] replicas.
    MinReplication,
}

impl Rule {
    const ALL: [Rule; 7] = [
        Rule::AllowClientId,
        Rule::AllowPrincipal,
        Rule::MaxPartitions,
        Rule::DenyUnclean,
        Rule::ProtectTopic,
        Rule::AuditLog,
        Rule::MinReplication,
    ];

    /// The rule's name, as the configuration file names its setting (`deny-unclean`,
    /// `audit-log`, ...): what the audit log says.
    pub fn name(self) -> &'static str {
        match self {
            Rule::AllowClientId => "allow-client-id",
            Rule::AllowPrincipal => "allow-principal",
            Rule::MaxPartitions => "max-partitions",
            Rule::DenyUnclean => "deny-unclean",
            Rule::ProtectTopic => "protect-topic",
            Rule::AuditLog => "audit-log",
            Rule::MinReplication => "min-replication",
        }
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// A set of rules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rules(u8);

impl Rules {
    /// Adds `rule` to the set.
    pub fn insert(&mut self, rule: Rule) {
        self.0 |= rule.bit();
    }

    /// Whether `rule` is in the set.
    pub fn contains(self, rule: Rule) -> bool {
        self.0 & rule.bit() != 0
    }

    /// The rules in the set, in a fixed order.
    pub fn iter(self) -> impl Iterator<Item = Rule> {
        Rule::ALL.into_iter().filter(move |r| self.contains(*r))
    }
}

/// What is refused of a request, whatever log-only says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Nothing.
    Nothing,
    /// The whole request, with a top-level error; `message` names the rules.
    Whole {
        /// The message the answer carries.
        message: String,
    },
    /// The partitions of some topics ([`Decision::refuses_topic`]), each with its own
    /// error; `all` when that is every topic of the request, so nothing is left to forward.
    Partitions {
        /// Every topic of the request is refused.
        all: bool,
    },
}

/// What the proxy does with the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Forwarded as it is.
    Forwarded,
    /// Answered by the proxy; nothing reaches the broker.
    Refused,
    /// Forwarded without the refused partitions; the broker's answer is merged with the
    /// refusals.
    Trimmed,
    /// Log-only ([`Policy::log_only`]): forwarded as it is, but the policy would have
    /// refused some of it.
    WouldRefuse,
}

impl Verdict {
    /// The verdict as the audit log and the metrics write it (`forwarded`...).
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Forwarded => "forwarded",
            Verdict::Refused => "refused",
            Verdict::Trimmed => "trimmed",
            Verdict::WouldRefuse => "would-refuse",
        }
    }
}

/// The per-partition messages, by the rules that refused the partition's topic. A client is
/// told what of its own request is refused, never the guard's configuration (its options,
/// its limits, its lists: issue 35, finding 9); the audit line names the rules.
const MESSAGE_UNCLEAN: &str =
    "refused by the elect-leaders proxy: only PREFERRED elections are allowed, here an UNCLEAN one";
const MESSAGE_PROTECTED: &str =
    "refused by the elect-leaders proxy: the leaders of this topic are protected";
const MESSAGE_BOTH: &str = "refused by the elect-leaders proxy: only PREFERRED elections are \
                            allowed, here an UNCLEAN one; the leaders of this topic are protected";
/// Every per-partition message, for the answers that put the operator's text in place of
/// the default one (`encode`).
pub(crate) const PARTITION_MESSAGES: [&str; 5] = [
    MESSAGE_UNCLEAN,
    MESSAGE_PROTECTED,
    MESSAGE_BOTH,
    MESSAGE_OTHER_TYPE,
    MESSAGE_OTHER_TYPE_PROTECTED,
];
/// For an election type that is neither PREFERRED nor UNCLEAN (Kafka reads any i8): what the
/// policy cannot prove allowed is refused.
const MESSAGE_OTHER_TYPE: &str = "refused by the elect-leaders proxy: only PREFERRED elections \
                                  are allowed, here one of an unknown type";
const MESSAGE_OTHER_TYPE_PROTECTED: &str = "refused by the elect-leaders proxy: only PREFERRED \
                                            elections are allowed, here one of an unknown type; \
                                            the leaders of this topic are protected";

/// The policy's decision on one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// What becomes of the request.
    pub verdict: Verdict,
    /// What of it is refused, whatever log-only says.
    pub refusal: Refusal,
    /// Every rule that refused something.
    pub rules: Rules,
    /// Partitions the request names; `None`: all (a null `TopicPartitions`).
    pub requested: Option<usize>,
    /// Partitions refused (all those named when the whole request is).
    pub refused: usize,
    /// Whether every named partition is refused because the election is not PREFERRED
    /// (named partitions under [`Policy::deny_unclean`]).
    unclean: bool,
    /// The election type is neither PREFERRED nor UNCLEAN.
    other_type: bool,
    /// The principal whose own rules decided ([`Policy::principal_rules`]); None: the
    /// policy's.
    rules_of: Option<Box<str>>,
}

impl Decision {
    /// Whether the partitions of this topic entry are refused, one by one (a whole refusal
    /// answers every partition; see [`Refusal`]).
    pub fn refuses_topic(&self, policy: &Policy, topic: &[u8]) -> bool {
        let policy = self.rules(policy);
        match self.refusal {
            Refusal::Nothing => false,
            Refusal::Whole { .. } => true,
            Refusal::Partitions { .. } => self.unclean || policy.is_protected(topic),
        }
    }

    /// The error message of a partition refused one by one, naming the rules, with the
    /// default refusal text (the answer puts [`Policy::refusal_text`] in its place).
    pub fn partition_message(&self, policy: &Policy, topic: &[u8]) -> &'static str {
        let policy = self.rules(policy);
        match (self.unclean, self.other_type, policy.is_protected(topic)) {
            (true, false, true) => MESSAGE_BOTH,
            (true, false, false) => MESSAGE_UNCLEAN,
            (true, true, true) => MESSAGE_OTHER_TYPE_PROTECTED,
            (true, true, false) => MESSAGE_OTHER_TYPE,
            _ => MESSAGE_PROTECTED,
        }
    }

    /// The principal whose own rules decided ([`Policy::principal_rules`]), if any.
    pub fn rules_of(&self) -> Option<&str> {
        self.rules_of.as_deref()
    }

    /// The rules that made this decision: `policy`'s, or a principal's own.
    fn rules<'p>(&self, policy: &'p Policy) -> &'p Policy {
        self.rules_of
            .as_deref()
            .and_then(|p| policy.principal_rules.get(p))
            .unwrap_or(policy)
    }
}

impl Policy {
    /// What refusals' messages begin with: [`Policy::refusal_text`] or the default.
    pub fn refusal_text(&self) -> &str {
        self.refusal_text.as_deref().unwrap_or(DEFAULT_REFUSAL_TEXT)
    }

    /// One of the guard's messages (which begin with [`DEFAULT_REFUSAL_TEXT`]) with the
    /// operator's text in its place; as it is without one.
    pub fn refusal_message<'m>(&self, message: &'m str) -> std::borrow::Cow<'m, str> {
        match (
            &self.refusal_text,
            message.strip_prefix(DEFAULT_REFUSAL_TEXT),
        ) {
            (Some(text), Some(rest)) => std::borrow::Cow::Owned(format!("{text}{rest}")),
            _ => std::borrow::Cow::Borrowed(message),
        }
    }

    /// Whether `topic`'s leaders are protected (`rules.protect-topic`).
    pub fn is_protected(&self, topic: &[u8]) -> bool {
        !self.protected_topics.is_empty() && self.protected_topics.contains(topic)
    }

    /// Whether any rule is set: without one, every request is forwarded.
    pub fn has_rules(&self) -> bool {
        self.deny_unclean
            || !self.protected_topics.is_empty()
            || !self.allowed_client_ids.is_empty()
            || !self.allowed_principals.is_empty()
            || self.max_partitions.is_some()
            || self.principal_rules.values().any(Policy::has_rules)
    }

    /// Decides on one parsed request from a connection whose principal is unknown.
    pub fn decide(&self, request: &ElectLeadersRequest<'_>) -> Decision {
        self.decide_as(request, None)
    }

    /// Decides on one parsed request from a connection with this principal (see
    /// [`Policy::allowed_principals`] and [`Policy::principal_rules`]).
    pub fn decide_as(
        &self,
        request: &ElectLeadersRequest<'_>,
        principal: Option<&str>,
    ) -> Decision {
        // The allowed principals are this policy's, whichever rules decide the rest.
        let allowed = &self.allowed_principals;
        let text = self.refusal_text();
        match principal.and_then(|p| self.principal_rules.get_key_value(p)) {
            Some((name, own)) => {
                let mut decision = own.decide_with(request, principal, allowed, text);
                decision.rules_of = Some(name.clone());
                decision
            }
            None => self.decide_with(request, principal, allowed, text),
        }
    }

    fn decide_with(
        &self,
        request: &ElectLeadersRequest<'_>,
        principal: Option<&str>,
        allowed_principals: &HashSet<Box<str>>,
        text: &str,
    ) -> Decision {
        let topics = request.topic_partitions();
        let requested = requested_partitions(request);
        // Fail closed: under `deny_unclean` every election type but PREFERRED is refused,
        // UNCLEAN and the types this proxy does not know alike (Kafka's reader takes any i8).
        let election_type = request.election_type();
        let unclean = self.deny_unclean && election_type != ElectionType::PREFERRED;
        let other_type = unclean && election_type != ElectionType::UNCLEAN;

        // Rules that refuse the request itself.
        let mut rules = Rules::default();
        let mut reasons: Vec<String> = Vec::new();
        let client_id = request.header().client_id();
        if !self.allowed_client_ids.is_empty()
            && !client_id.is_some_and(|id| self.allowed_client_ids.contains(id))
        {
            rules.insert(Rule::AllowClientId);
            let shown = client_id.map_or_else(|| "null".to_owned(), quoted);
            reasons.push(format!("client id {shown} may not elect"));
        }
        if !allowed_principals.is_empty()
            && !principal.is_some_and(|p| allowed_principals.contains(p))
        {
            rules.insert(Rule::AllowPrincipal);
            reasons.push(match principal {
                Some(p) => format!("principal {} may not elect", quoted(p.as_bytes())),
                None => "the principal is unknown (no SASL PLAIN, SCRAM or OAUTHBEARER authentication accepted, no \
                         client certificate), and only some principals may elect"
                    .to_owned(),
            });
        }
        if let Some(max) = self.max_partitions {
            match requested {
                None => {
                    rules.insert(Rule::MaxPartitions);
                    reasons.push(
                        "the request names all partitions (null TopicPartitions), more than \
                         the guard allows in one request"
                            .to_owned(),
                    );
                }
                Some(n) if n > max => {
                    rules.insert(Rule::MaxPartitions);
                    reasons.push(format!(
                        "the request names {n} partitions, more than the guard allows in one \
                         request"
                    ));
                }
                Some(_) => {}
            }
        }
        // An empty list elects nothing at the broker today, but what the policy cannot
        // prove allowed is refused: it is refused whole, as a null list is.
        let no_topics = topics.is_none_or(|list| list.is_empty());
        if no_topics && unclean {
            rules.insert(Rule::DenyUnclean);
            let which = if topics.is_none() {
                "all partitions"
            } else {
                "an empty topic list"
            };
            reasons.push(if other_type {
                format!(
                    "only PREFERRED elections are allowed, here one of unknown type {} for \
                     {which}",
                    election_type.0
                )
            } else {
                format!("only PREFERRED elections are allowed, here an UNCLEAN one for {which}")
            });
        }
        if topics.is_none() && !self.protected_topics.is_empty() {
            rules.insert(Rule::ProtectTopic);
            reasons.push(
                "an election for all partitions (null TopicPartitions) would include protected \
                 topics"
                    .to_owned(),
            );
        }
        let whole = !reasons.is_empty();

        // Rules that refuse partitions one by one (all of them, when the request is refused
        // whole: the audit names every rule that applies).
        let mut refused_topics = 0;
        let mut refused = 0;
        if let Some(list) = topics {
            for entry in list.iter() {
                if self.refuses_entry(unclean, &entry, &mut rules) {
                    refused_topics += 1;
                    refused += entry.partitions().len();
                }
            }
        }
        let refusal = if whole {
            refused = requested.unwrap_or(0);
            let message = format!("{text}: {}", reasons.join("; "));
            Refusal::Whole { message }
        } else if refused_topics == 0 {
            Refusal::Nothing
        } else {
            Refusal::Partitions {
                all: topics.is_some_and(|list| refused_topics == list.len()),
            }
        };
        self.finish(refusal, rules, requested, refused, unclean, other_type)
    }

    /// The decision when the request's decision could not be audited: the whole request
    /// refused, whatever the rules and [`Policy::log_only`] say, with a message saying
    /// `why`.
    pub fn refuse_unaudited(&self, request: &ElectLeadersRequest<'_>, why: &str) -> Decision {
        let requested = requested_partitions(request);
        let mut rules = Rules::default();
        rules.insert(Rule::AuditLog);
        Decision {
            verdict: Verdict::Refused,
            refusal: Refusal::Whole {
                message: format!(
                    "{}: {why}, and an election that cannot be audited is not let through",
                    self.refusal_text()
                ),
            },
            rules,
            requested,
            refused: requested.unwrap_or(0),
            unclean: false,
            other_type: false,
            rules_of: None,
        }
    }

    fn refuses_entry(&self, unclean: bool, entry: &TopicPartitions<'_>, rules: &mut Rules) -> bool {
        let protected = self.is_protected(entry.topic());
        if protected {
            rules.insert(Rule::ProtectTopic);
        }
        if unclean {
            rules.insert(Rule::DenyUnclean);
        }
        protected || unclean
    }

    fn finish(
        &self,
        refusal: Refusal,
        rules: Rules,
        requested: Option<usize>,
        refused: usize,
        unclean: bool,
        other_type: bool,
    ) -> Decision {
        let verdict = match (&refusal, self.log_only) {
            (Refusal::Nothing, _) => Verdict::Forwarded,
            (_, true) => Verdict::WouldRefuse,
            (Refusal::Whole { .. }, false) | (Refusal::Partitions { all: true }, false) => {
                Verdict::Refused
            }
            (Refusal::Partitions { all: false }, false) => Verdict::Trimmed,
        };
        Decision {
            verdict,
            refusal,
            rules,
            requested,
            refused,
            unclean,
            other_type,
            rules_of: None,
        }
    }
}

/// The partitions a request names; `None`: all (a null `TopicPartitions`).
fn requested_partitions(request: &ElectLeadersRequest<'_>) -> Option<usize> {
    request
        .topic_partitions()
        .map(|list| list.iter().map(|t| t.partitions().len()).sum())
}

/// The policy in `lock` (the one in force), also when a writer panicked while holding it:
/// a policy is replaced whole, so what the lock holds is always a whole one.
pub(crate) fn in_force(lock: &std::sync::RwLock<std::sync::Arc<Policy>>) -> std::sync::Arc<Policy> {
    match lock.read() {
        Ok(policy) => policy.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
}

#[cfg(test)]
mod tests;
