//! What a new policy would let through that the one in force refuses: the check that keeps
//! a reload (SIGHUP) from weakening the guard unasked ([`crate::Reloader::apply`]).
//!
//! A policy is weaker than another when some request the other refuses could pass under it:
//! `deny-unclean` turned off, a protected topic no longer protected, an allow-list emptied
//! or given a name it did not have, `max-partitions` removed or raised, `min-replication`
//! removed or lowered, `log-only` turned on; and the same, for a principal, between the rules that decide for it under each
//! policy (its own rules, or `[rules]` when it has none). The opposite changes (a rule
//! added, a topic protected, a name taken off an allow-list) only refuse more, and pass.

use std::collections::BTreeSet;

use crate::filters::elect::policy::Policy;

/// At most this many names are quoted per rule in what a reload would drop; the rest are
/// counted (a file that drops thousands of topics makes one readable line).
const SHOWN_NAMES: usize = 8;

impl Policy {
    /// What `new` drops of this policy's rules, one phrase each, naming the rule by its
    /// option and the names it no longer covers (`protect-topic "payments" dropped`); for a
    /// principal's own rules, after `principal "NAME": `. Empty: `new` refuses everything
    /// this policy refuses (it may refuse more).
    pub fn weakened_by(&self, new: &Policy) -> Vec<String> {
        let mut dropped = Vec::new();
        // Only the policy's own: a principal's rules are not asked who may elect.
        allow_list(
            "allow-principal",
            "principal",
            &self.allowed_principals,
            &new.allowed_principals,
            |name| name.as_bytes(),
            "",
            &mut dropped,
        );
        rules_weakened(self, new, "", &mut dropped);
        let principals: BTreeSet<&str> = self
            .principal_rules
            .keys()
            .chain(new.principal_rules.keys())
            .map(|name| &**name)
            .collect();
        for name in principals {
            let old_rules = self.principal_rules.get(name).unwrap_or(self);
            let new_rules = new.principal_rules.get(name).unwrap_or(new);
            let prefix = format!("principal {}: ", shown(name.as_bytes()));
            rules_weakened(old_rules, new_rules, &prefix, &mut dropped);
        }
        dropped
    }
}

/// The rules that decide one request (all but who may elect), old against new.
fn rules_weakened(old: &Policy, new: &Policy, prefix: &str, dropped: &mut Vec<String>) {
    // Every field named: a rule added to `Policy` does not compile here until it is
    // compared.
    let Policy {
        deny_unclean,
        protected_topics,
        allowed_client_ids,
        allowed_principals: _,
        max_partitions,
        min_replication,
        log_only,
        principal_rules: _,
        forwarded_unknown_apis,
        // Words, not a rule: any text is as strong as another.
        refusal_text: _,
    } = old;
    if *deny_unclean && !new.deny_unclean {
        dropped.push(format!("{prefix}deny-unclean dropped"));
    }
    let unprotected: BTreeSet<&[u8]> = protected_topics
        .iter()
        .filter(|t| !new.protected_topics.contains(&***t))
        .map(|t| &**t)
        .collect();
    if !unprotected.is_empty() {
        dropped.push(format!(
            "{prefix}protect-topic {} dropped",
            names(unprotected.into_iter())
        ));
    }
    allow_list(
        "allow-client-id",
        "client id",
        allowed_client_ids,
        &new.allowed_client_ids,
        |id| &**id,
        prefix,
        dropped,
    );
    match (*max_partitions, new.max_partitions) {
        (Some(old_max), None) => {
            dropped.push(format!("{prefix}max-partitions {old_max} dropped"));
        }
        (Some(old_max), Some(new_max)) if new_max > old_max => dropped.push(format!(
            "{prefix}max-partitions raised from {old_max} to {new_max}"
        )),
        _ => {}
    }
    // Without a rule every key is forwarded: only a guard with rules had a door to open.
    let opened: Vec<String> = new
        .forwarded_unknown_apis
        .difference(forwarded_unknown_apis)
        .map(i16::to_string)
        .collect();
    if old.has_rules() && !opened.is_empty() {
        dropped.push(format!(
            "{prefix}forward-unknown-api {} added",
            opened.join(", ")
        ));
    }
    match (*min_replication, new.min_replication) {
        (Some(old_least), None) => {
            dropped.push(format!("{prefix}min-replication {old_least} dropped"));
        }
        (Some(old_least), Some(new_least)) if new_least < old_least => dropped.push(format!(
            "{prefix}min-replication lowered from {old_least} to {new_least}"
        )),
        _ => {}
    }
    if !*log_only && new.log_only {
        dropped.push(format!(
            "{prefix}log-only turned on (nothing would be refused)"
        ));
    }
}

/// An allow-list (empty: anyone) old against new: emptied, or given names it did not have.
fn allow_list<T: Eq + std::hash::Hash + Ord>(
    option: &str,
    what: &str,
    old: &std::collections::HashSet<T>,
    new: &std::collections::HashSet<T>,
    bytes: impl Fn(&T) -> &[u8],
    prefix: &str,
    dropped: &mut Vec<String>,
) {
    if old.is_empty() {
        return;
    }
    if new.is_empty() {
        dropped.push(format!("{prefix}{option} dropped (any {what} could elect)"));
        return;
    }
    let added: BTreeSet<&T> = new.iter().filter(|n| !old.contains(n)).collect();
    if !added.is_empty() {
        dropped.push(format!(
            "{prefix}{option} widened to {}",
            names(added.into_iter().map(bytes))
        ));
    }
}

/// A name as a log shows it: quoted, escaped (control characters included), lossy where
/// it is not UTF-8.
fn shown(name: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(name))
}

/// Names, in order, at most [`SHOWN_NAMES`] of them, then how many more.
fn names<'a>(all: impl ExactSizeIterator<Item = &'a [u8]>) -> String {
    let total = all.len();
    let mut out: Vec<String> = all.take(SHOWN_NAMES).map(shown).collect();
    if total > SHOWN_NAMES {
        out.push(format!("and {} more", total - SHOWN_NAMES));
    }
    out.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn topics(names: &[&str]) -> HashSet<Box<[u8]>> {
        names.iter().map(|n| n.as_bytes().into()).collect()
    }

    /// As the file builds it: `[rules]`, and ops's own rules (its `deny-unclean = false`
    /// over a copy of `[rules]`).
    fn strict() -> Policy {
        let mut policy = Policy {
            deny_unclean: true,
            protected_topics: topics(&["payments", "orders"]),
            allowed_client_ids: topics(&["admin"]),
            allowed_principals: ["alice", "ops"].into_iter().map(Into::into).collect(),
            max_partitions: Some(100),
            min_replication: Some(3),
            log_only: false,
            principal_rules: Default::default(),
            forwarded_unknown_apis: [95].into_iter().collect(),
            refusal_text: None,
        };
        let ops = Policy {
            deny_unclean: false,
            ..policy.clone()
        };
        policy.principal_rules.insert("ops".into(), ops);
        policy
    }

    /// Forwarding a key the guard has no decision for opens a door: a weakening.
    #[test]
    fn an_unknown_api_forwarded_weakens() {
        let old = strict();
        let mut new = old.clone();
        new.forwarded_unknown_apis.insert(96);
        assert_eq!(
            old.weakened_by(&new),
            vec!["forward-unknown-api 96 added".to_owned()]
        );
        new.forwarded_unknown_apis.clear();
        assert_eq!(old.weakened_by(&new), Vec::<String>::new());
    }

    #[test]
    fn the_same_policy_or_a_stricter_one_drops_nothing() {
        let old = strict();
        assert_eq!(old.weakened_by(&old.clone()), Vec::<String>::new());
        let mut stricter = old.clone();
        stricter.protected_topics.insert(b"logs"[..].into());
        stricter.allowed_principals.remove("ops");
        stricter.max_partitions = Some(10);
        stricter.min_replication = Some(4);
        // ops loses its own rules: [rules] decides for it, which refuses more.
        stricter.principal_rules.clear();
        assert_eq!(old.weakened_by(&stricter), Vec::<String>::new());
        // From no rules at all, anything is stricter.
        assert!(Policy::default().weakened_by(&old).is_empty());
    }

    #[test]
    fn every_rule_dropped_is_named() {
        let old = strict();
        // An empty file: every rule dropped.
        assert_eq!(
            old.weakened_by(&Policy::default()),
            [
                "allow-principal dropped (any principal could elect)",
                "deny-unclean dropped",
                "protect-topic \"orders\", \"payments\" dropped",
                "allow-client-id dropped (any client id could elect)",
                "max-partitions 100 dropped",
                "min-replication 3 dropped",
                "principal \"ops\": protect-topic \"orders\", \"payments\" dropped",
                "principal \"ops\": allow-client-id dropped (any client id could elect)",
                "principal \"ops\": max-partitions 100 dropped",
                "principal \"ops\": min-replication 3 dropped",
            ]
        );
        // One change at a time.
        let one = |edit: &dyn Fn(&mut Policy)| {
            let mut new = old.clone();
            edit(&mut new);
            old.weakened_by(&new)
        };
        assert_eq!(
            one(&|p| {
                p.protected_topics.remove(&b"orders"[..]);
            }),
            ["protect-topic \"orders\" dropped"]
        );
        assert_eq!(
            one(&|p| {
                p.allowed_principals.insert("bob".into());
            }),
            ["allow-principal widened to \"bob\""]
        );
        assert_eq!(
            one(&|p| {
                p.allowed_client_ids.insert(b"dev"[..].into());
            }),
            ["allow-client-id widened to \"dev\""]
        );
        assert_eq!(
            one(&|p| p.max_partitions = Some(1000)),
            ["max-partitions raised from 100 to 1000"]
        );
        assert_eq!(
            one(&|p| p.min_replication = Some(2)),
            ["min-replication lowered from 3 to 2"]
        );
        assert_eq!(
            one(&|p| p.log_only = true),
            ["log-only turned on (nothing would be refused)"]
        );
        // Only the principal's own rules relaxed.
        assert_eq!(
            one(&|p| {
                p.principal_rules
                    .get_mut("ops")
                    .unwrap()
                    .protected_topics
                    .clear();
            }),
            ["principal \"ops\": protect-topic \"orders\", \"payments\" dropped"]
        );
        // Rules of its own given to a principal that had none, laxer than [rules].
        assert_eq!(
            one(&|p| {
                let alice = Policy {
                    log_only: true,
                    ..p.clone()
                };
                p.principal_rules.insert("alice".into(), alice);
            }),
            ["principal \"alice\": log-only turned on (nothing would be refused)"]
        );
    }

    /// A file that drops thousands of topics: one line, a few names and a count; names
    /// with control characters are escaped.
    #[test]
    fn many_names_are_counted_and_names_are_escaped() {
        let many: Vec<String> = (0..1000).map(|i| format!("t{i:04}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let old = Policy {
            protected_topics: topics(&many),
            ..Default::default()
        };
        let dropped = old.weakened_by(&Policy::default());
        assert_eq!(
            dropped,
            [
                "protect-topic \"t0000\", \"t0001\", \"t0002\", \"t0003\", \"t0004\", \"t0005\", \
              \"t0006\", \"t0007\", and 992 more dropped"
            ]
        );
        let old = Policy {
            protected_topics: topics(&["a\nb\u{1b}[31m"]),
            ..Default::default()
        };
        let dropped = old.weakened_by(&Policy::default());
        assert_eq!(dropped, ["protect-topic \"a\\nb\\u{1b}[31m\" dropped"]);
    }
}
