//! The policy's hash: what replicas export (`elect_leaders_guard_policy_info{hash}`) to
//! show that they hold the same rules. It is canonical: computed from the rules as parsed,
//! not from the file's text, so that formatting, comments, the order of keys, of a list's
//! items and of `[rules.principal."NAME"]` tables change nothing, while any rule that
//! differs changes it.

use std::fmt::Write as _;

use sha2::{Digest, Sha256};

use super::policy::Policy;

/// Hex digits of the hash shown: 64 bits of SHA-256, enough to tell a few replicas'
/// policies apart, short enough for a label and a log line.
pub const POLICY_HASH_DIGITS: usize = 16;

/// The hash of `policy`: the first [`POLICY_HASH_DIGITS`] hex digits of the SHA-256 of its
/// canonical encoding (every rule, in a fixed order, each set sorted, every name
/// length-prefixed).
pub fn policy_hash(policy: &Policy) -> String {
    let mut sha = Sha256::new();
    // The encoding's version: a change to it changes every hash at once, never one alone.
    sha.update(b"elect-leaders policy 1\n");
    encode(&mut sha, policy);
    let digest = sha.finalize();
    let mut hex = String::with_capacity(POLICY_HASH_DIGITS);
    for byte in &digest[..POLICY_HASH_DIGITS / 2] {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// Writes `policy` into `sha`. Destructured whole, so that a rule added to [`Policy`] and
/// not to its hash does not compile.
fn encode(sha: &mut Sha256, policy: &Policy) {
    let Policy {
        deny_unclean,
        protected_topics,
        allowed_client_ids,
        allowed_principals,
        max_partitions,
        min_replication,
        log_only,
        principal_rules,
        forwarded_unknown_apis,
        refusal_text,
    } = policy;
    name(sha, b"deny-unclean");
    sha.update([u8::from(*deny_unclean)]);
    name(sha, b"protect-topic");
    names(sha, protected_topics.iter().map(|t| &t[..]));
    name(sha, b"allow-client-id");
    names(sha, allowed_client_ids.iter().map(|c| &c[..]));
    name(sha, b"allow-principal");
    names(sha, allowed_principals.iter().map(|p| p.as_bytes()));
    name(sha, b"max-partitions");
    number(sha, max_partitions.map(|n| n as u64));
    name(sha, b"min-replication");
    number(sha, min_replication.map(|n| n as u64));
    name(sha, b"log-only");
    sha.update([u8::from(*log_only)]);
    name(sha, b"forward-unknown-api");
    // A BTreeSet: already in order.
    sha.update((forwarded_unknown_apis.len() as u64).to_be_bytes());
    for key in forwarded_unknown_apis {
        sha.update(key.to_be_bytes());
    }
    // What refusals say: replicas that tell clients different words differ.
    name(sha, b"refusal-text");
    match refusal_text {
        Some(text) => {
            sha.update([1]);
            name(sha, text.as_bytes());
        }
        None => sha.update([0]),
    }
    name(sha, b"principal");
    let mut principals: Vec<_> = principal_rules.iter().collect();
    principals.sort_by(|a, b| a.0.cmp(b.0));
    sha.update((principals.len() as u64).to_be_bytes());
    for (principal, own) in principals {
        name(sha, principal.as_bytes());
        encode(sha, own);
    }
}

/// A name, its length first: no two sequences of names encode alike.
fn name(sha: &mut Sha256, bytes: &[u8]) {
    sha.update((bytes.len() as u64).to_be_bytes());
    sha.update(bytes);
}

/// A set of names, sorted: a set's order in the file, or in memory, changes nothing.
fn names<'a>(sha: &mut Sha256, set: impl Iterator<Item = &'a [u8]>) {
    let mut sorted: Vec<&[u8]> = set.collect();
    sorted.sort_unstable();
    sha.update((sorted.len() as u64).to_be_bytes());
    for item in sorted {
        name(sha, item);
    }
}

/// A number that may be unset: unset is not 0.
fn number(sha: &mut Sha256, value: Option<u64>) {
    match value {
        Some(n) => {
            sha.update([1]);
            sha.update(n.to_be_bytes());
        }
        None => sha.update([0]),
    }
}
