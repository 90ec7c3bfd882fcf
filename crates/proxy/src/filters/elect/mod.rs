//! The ElectLeaders rule: the [`Policy`] and its [`Decision`] on a parsed request
//! (`policy`: a pure function, no socket, no clock), what the guard writes for a decision
//! (`encode`: the trimmed request for the broker, the refusal of a whole request, and
//! per-partition refusals, `POLICY_VIOLATION` (44), merged with the broker's answer to the
//! trimmed request), and the filter that holds each ElectLeaders request to the policy in
//! force (`filter`, [`ElectLeaders`](crate::builtin::ElectLeaders)); the policy's canonical
//! hash, which replicas export to show that they agree (`policy_hash`, [`policy_hash()`]).

mod encode;
mod filter;
pub(crate) mod policy;
mod policy_hash;

pub use encode::{encode_bounded, encode_refusal, encode_trimmed, refusal_len, MESSAGES};
pub use filter::ElectLeaders;
pub use policy::{
    check_refusal_text, Decision, Policy, Refusal, Rule, Rules, Verdict, DEFAULT_REFUSAL_TEXT,
    MAX_REFUSAL_TEXT, SHOWN_NAME,
};
pub use policy_hash::{policy_hash, POLICY_HASH_DIGITS};
