//! policy: the proxy's ElectLeaders policy (the guard's policy module, included
//! as it is) against the rules its documentation states.

use super::*;

use kafka_elect_leaders_proxy::elect;

/// First byte: bit 1 generate the request (1) or read a frame (0). Then the frame (when
/// read), then the policy.
pub fn check_policy(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Some((frame, mut u)) = take_request(rest, selector & 2 != 0) else {
        return;
    };
    let Ok(request) = parse_request(&frame) else {
        return;
    };
    let _ = decide(&request, &mut u);
}

pub(crate) fn decide(
    request: &ElectLeadersRequest<'_>,
    u: &mut Unstructured<'_>,
) -> arbitrary::Result<()> {
    use elect::{Policy, Refusal, Rule, Verdict};
    let plain = plain_request(request);
    let topics: Vec<&[u8]> = plain
        .topics
        .iter()
        .flatten()
        .map(|t| &t.topic[..])
        .collect();
    // Names the request uses, picked by index, and names of the fuzzer's own.
    let names = |u: &mut Unstructured<'_>, own: Option<&[u8]>| -> arbitrary::Result<_> {
        let mut set: std::collections::HashSet<Box<[u8]>> = Default::default();
        for _ in 0..u.int_in_range(0u8..=3)? {
            match (u.arbitrary::<u8>()?, own) {
                (0, Some(own)) => {
                    set.insert(own.into());
                }
                (i, _) if !topics.is_empty() && i & 1 == 1 => {
                    set.insert(topics[usize::from(i) % topics.len()].into());
                }
                _ => {
                    set.insert(<&[u8]>::arbitrary(u)?.into());
                }
            }
        }
        Ok(set)
    };
    let rules = |u: &mut Unstructured<'_>| -> arbitrary::Result<Policy> {
        let protected_topics = names(u, None)?;
        let allowed_client_ids = names(u, plain.client_id.as_deref())?;
        Ok(Policy {
            deny_unclean: u.arbitrary()?,
            protected_topics,
            allowed_client_ids,
            max_partitions: u.arbitrary::<Option<u8>>()?.map(usize::from),
            log_only: u.arbitrary()?,
            ..Policy::default()
        })
    };
    let mut policy = rules(u)?;
    // The connection's principal: unknown, "alice", or any name; only alice allowed, or
    // anyone; alice with rules of her own, or not.
    let principal: Option<String> = match u.int_in_range(0..=2u8)? {
        0 => None,
        1 => Some("alice".to_owned()),
        _ => Some(String::arbitrary(u)?),
    };
    if u.arbitrary()? {
        policy.allowed_principals.insert("alice".into());
    }
    if u.arbitrary()? {
        let own = rules(u)?;
        policy.principal_rules.insert("alice".into(), own);
    }
    let decision = policy.decide_as(request, principal.as_deref());

    // The rules, as the module's documentation states them.
    let requested: Option<usize> = plain
        .topics
        .as_ref()
        .map(|list| list.iter().map(|t| t.partitions.len()).sum());
    assert_eq!(decision.requested, requested);
    // The rules that decide: alice's own when she has them, the policy's otherwise; the
    // allowed principals are the policy's either way.
    let own = principal
        .as_deref()
        .and_then(|p| policy.principal_rules.get(p));
    assert_eq!(decision.rules_of(), own.and(principal.as_deref()));
    let outer = &policy;
    let policy = own.unwrap_or(outer);
    // Fail closed: under --deny-unclean every type but PREFERRED (0) is refused.
    let unclean = policy.deny_unclean && plain.election_type != 0;
    let protected = |t: &[u8]| policy.protected_topics.contains(t);
    let client_refused = !policy.allowed_client_ids.is_empty()
        && !plain
            .client_id
            .as_ref()
            .is_some_and(|id| policy.allowed_client_ids.contains(&id[..]));
    let principal_refused = !outer.allowed_principals.is_empty()
        && !principal
            .as_deref()
            .is_some_and(|p| outer.allowed_principals.contains(p));
    let too_many = policy
        .max_partitions
        .is_some_and(|max| requested.map_or(true, |n| n > max));
    // A null list and (issue 35) an empty one: refused whole under deny-unclean.
    let all_unclean = plain.topics.as_ref().map_or(true, |t| t.is_empty()) && unclean;
    let all_protected = plain.topics.is_none() && !policy.protected_topics.is_empty();
    let whole = client_refused || principal_refused || too_many || all_unclean || all_protected;
    let refused_entries: Vec<&PlainTopic> = plain
        .topics
        .iter()
        .flatten()
        .filter(|t| unclean || protected(&t.topic))
        .collect();
    let mut rules = Vec::new();
    if client_refused {
        rules.push(Rule::AllowClientId);
    }
    if principal_refused {
        rules.push(Rule::AllowPrincipal);
    }
    if too_many {
        rules.push(Rule::MaxPartitions);
    }
    if all_unclean || (unclean && !topics.is_empty()) {
        rules.push(Rule::DenyUnclean);
    }
    if all_protected || topics.iter().any(|t| protected(t)) {
        rules.push(Rule::ProtectTopic);
    }
    let got_rules: Vec<Rule> = decision.rules.iter().collect();
    assert_eq!(got_rules, rules);

    let entries = topics.len();
    match &decision.refusal {
        Refusal::Whole { message } => {
            assert!(whole);
            assert_eq!(decision.refused, requested.unwrap_or(0));
            // The client id's reason comes first; the names quoted are the client's own.
            assert_eq!(
                message.starts_with("refused by the elect-leaders proxy: client id "),
                client_refused,
                "{message}"
            );
            for (refused, option) in [
                (too_many, "than the guard allows in one request"),
                (all_unclean, "only PREFERRED elections are allowed"),
                (all_protected, "would include protected topics"),
            ] {
                assert_eq!(message.contains(option), refused, "{option}: {message}");
            }
        }
        Refusal::Partitions { all } => {
            assert!(!whole && !refused_entries.is_empty());
            assert_eq!(*all, refused_entries.len() == entries);
            let refused: usize = refused_entries.iter().map(|t| t.partitions.len()).sum();
            assert_eq!(decision.refused, refused);
        }
        Refusal::Nothing => {
            assert!(!whole && refused_entries.is_empty());
            assert_eq!(decision.refused, 0);
        }
    }
    if !outer.has_rules() {
        assert_eq!(decision.refusal, Refusal::Nothing);
    }
    let verdict = match (&decision.refusal, policy.log_only) {
        (Refusal::Nothing, _) => Verdict::Forwarded,
        (_, true) => Verdict::WouldRefuse,
        (Refusal::Whole { .. } | Refusal::Partitions { all: true }, false) => Verdict::Refused,
        (Refusal::Partitions { all: false }, false) => Verdict::Trimmed,
    };
    assert_eq!(decision.verdict, verdict);
    for t in &topics {
        let refuses = decision.refuses_topic(outer, t);
        assert_eq!(refuses, whole || unclean || protected(t), "{t:?}");
        if refuses && !whole {
            let message = decision.partition_message(outer, t);
            assert_eq!(
                message.contains("only PREFERRED elections are allowed"),
                unclean
            );
            assert_eq!(
                message.contains("leaders of this topic are protected"),
                protected(t)
            );
            assert!(
                !message.contains("--"),
                "a client is told no option: {message}"
            );
            let other_type = unclean && plain.election_type != 1;
            assert_eq!(message.contains("unknown type"), other_type, "{message}");
        }
    }
    Ok(())
}
