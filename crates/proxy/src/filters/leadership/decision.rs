//! The policy's decision on one leadership-change request ([`ChangeDecision`]) and why an
//! entry is refused ([`Why`]): what the refusal's answer and the audit line are written
//! from.

use crate::filters::elect::policy::{Rule, Rules, Verdict};

/// What an entry refused only because another entry of its request is says.
pub(super) const WITH_THE_REST: &str =
    "refused by the elect-leaders proxy with the rest of its request: another entry of it breaks \
     the guard's leadership-change policy";

/// Why an entry is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Why {
    /// The rule that refuses it.
    pub rule: Rule,
    /// The message its answer carries (it names no other rule than its own, and no other
    /// topic or principal than the client's own).
    pub message: &'static str,
}

/// The policy's decision on one leadership-change request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangeDecision {
    /// Forwarded, or refused (whole: these APIs are never trimmed).
    pub verdict: Verdict,
    /// Every rule that refused something.
    pub rules: Rules,
    /// The entries refused on their own, by index, in order, with why.
    pub refused: Vec<(usize, Why)>,
    /// A refusal of the whole request (a client id or principal not allowed, an audit log
    /// that failed): the message every entry carries.
    pub whole: Option<String>,
    /// The principal whose own rules decided ([`crate::Policy::principal_rules`]); None: the
    /// policy's.
    pub rules_of: Option<Box<str>>,
}

impl ChangeDecision {
    /// Whether anything is refused (or would be, under
    /// [`Policy::log_only`](crate::Policy::log_only)).
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
            Err(_) => Some(WITH_THE_REST),
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
    /// [`Policy::log_only`](crate::Policy::log_only) says.
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
