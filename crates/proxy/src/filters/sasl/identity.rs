//! Who is asking: a connection's principal, as the broker will know it.
//!
//! - With SASL, the principal the broker takes from the exchange: for PLAIN the
//!   authentication identity, for SCRAM-SHA-256/512 the `n=` of the client's first message,
//!   for OAUTHBEARER the `sub` claim of the client's token (a JWT). The guard reads it from
//!   the SaslAuthenticate requests going through, and trusts it only once the broker has
//!   answered the authentication with success. Passwords, proofs and tokens are looked
//!   past, never kept.
//! - Once a client sends a SaslHandshake, its certificate no longer counts: the broker's
//!   principal is the SASL one, and until the broker accepts the exchange the principal is
//!   unknown.
//! - With a client certificate (mTLS) and no SASL, the certificate's subject, written as
//!   Kafka's default principal builder writes it: `X500Principal.getName()`, RFC 2253 (the
//!   most specific name first: `CN=alice,OU=ops,O=example`).
//! - Otherwise (plaintext, or TLS without a certificate): unknown, and a rule that needs a
//!   principal refuses, failing closed.
//!
//! A mechanism the guard cannot read a principal from (GSSAPI, or any other) is refused: the
//! client's SaslHandshake is answered by the guard, `UNSUPPORTED_SASL_MECHANISM` (33) with
//! the mechanisms it reads, and never reaches the broker. A SaslHandshake v0 (whose SASL
//! tokens follow as bare frames, not Kafka requests), one of a version the guard does not
//! read, one that cannot be read, and a first frame whose API key no Kafka API has (brokers
//! before Kafka 4.0 took such a first frame as a bare GSSAPI token, without a handshake)
//! close the connection. Later frames of unknown APIs are forwarded as any other.
//!
//! When the guard presents a certificate of its own to the brokers (`upstream-tls.cert`),
//! the broker takes every connection as the guard's: the guard *lends* its identity. It
//! lends it only to clients it authenticated itself (`tls.client-ca` is required, see
//! `tls`) and, when `rules.allow-principal` names principals, only to those: the connection of
//! any other is closed before any of its frames is forwarded.
//!
//! SaslHandshake (17) and SaslAuthenticate (36) frames the guard does not answer are
//! forwarded unchanged; this only reads them.
//!
//! Here, the principal and its rules ([`Identity`]); in `frames`, where Kafka's SASL frames
//! carry what is read; in `mechanisms`, the name each mechanism's client message claims; in
//! `x500`, a certificate's subject written as Java writes it.

#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use kafka_elect_leaders::RequestPeek;

use super::frames::{handshake_refusal, sasl_answer, sasl_auth_bytes, sasl_handshake_mechanism};
use super::mechanisms::{oauthbearer_user, plain_user, scram_user};
use crate::filters::elect::policy::Policy;

pub use super::frames::{READABLE_MECHANISMS, SASL_AUTHENTICATE, SASL_HANDSHAKE};
pub use super::x500::certificate_subject;

/// Every API key Kafka has is below this (about 90 in Kafka 4). A bare GSSAPI token (what
/// Kafka 0.9 clients sent first, without a SaslHandshake, and brokers before Kafka 4.0 still
/// took as one when a connection's first frame is not a Kafka request) begins with 0x60,
/// which reads as API key 0x60xx.
const API_KEYS_BELOW: i16 = 1000;

/// A SASL mechanism the guard reads a principal from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mechanism {
    Plain,
    Scram,
    OAuthBearer,
}

#[derive(Debug, Default)]
struct State {
    /// Trusted: from the certificate, or a SASL authentication the broker accepted.
    principal: Option<String>,
    /// The principal is the certificate's: no SaslHandshake yet.
    from_certificate: bool,
    /// The mechanism of the last SaslHandshake forwarded; None before one, or after one the
    /// guard refused.
    mechanism: Option<Mechanism>,
    /// The name claimed, not yet accepted by the broker.
    claimed: Option<String>,
    /// SaslAuthenticate requests since the handshake: SCRAM succeeds on the second.
    steps: u32,
    /// The correlation id of the SaslAuthenticate request whose success authenticates.
    deciding: Option<i32>,
}

/// What to do with a request, for the principal's sake.
#[derive(Debug, PartialEq, Eq)]
pub enum Action {
    /// Forward it (or decide on it, for ElectLeaders) as any other.
    Forward,
    /// Answer it with this frame, in its turn, and never forward it; the text says why, for
    /// the log.
    Reply(Bytes, String),
    /// Close the connection, for this reason; nothing of this frame is forwarded.
    Close(String),
}

/// The principal of one connection; shared by its two directions.
#[derive(Debug, Default)]
pub struct Identity {
    state: Mutex<State>,
    /// The broker takes this connection as the guard's own (`upstream-tls.cert`).
    lent: bool,
    /// A request has been seen: the first one must be a Kafka request.
    started: AtomicBool,
}

impl Identity {
    /// A connection whose client presented a certificate with this subject (or none);
    /// `lent`: the guard presents its own certificate to the broker for it.
    pub fn new(certificate_subject: Option<String>, lent: bool) -> Identity {
        Identity {
            state: Mutex::new(State {
                from_certificate: certificate_subject.is_some(),
                principal: certificate_subject,
                ..State::default()
            }),
            lent,
            started: AtomicBool::new(false),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(state) => state,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// The principal trusted now, if any.
    pub fn principal(&self) -> Option<String> {
        self.state().principal.clone()
    }

    /// Whether this connection may go on at the broker under the guard's identity: always,
    /// unless the identity is lent and `policy`, when not log-only (`rules.log-only`),
    /// names the principals allowed without this one. Err: why not, for the log.
    pub fn admitted(&self, policy: &Policy) -> Result<(), String> {
        if !self.lent || policy.allowed_principals.is_empty() || policy.log_only {
            return Ok(());
        }
        // Under the lock, without a copy: on a lent connection this runs for every request.
        let state = self.state();
        match state.principal.as_deref() {
            Some(p) if policy.allowed_principals.contains(p) => Ok(()),
            Some(p) => Err(format!(
                "principal {:?} is not allowed (rules.allow-principal), and the brokers would \
                 take its requests as the guard's own (upstream-tls.cert)",
                p
            )),
            None => Err(
                "the principal is unknown (a SaslHandshake drops the certificate's), \
                 only some are allowed (rules.allow-principal), and the brokers would take its \
                 requests as the guard's own (upstream-tls.cert)"
                    .to_owned(),
            ),
        }
    }

    /// A request from the client (`frame` with its size prefix): SASL ones are read, a
    /// mechanism the guard cannot read is answered here, and on a lent connection
    /// (`Identity::lent`) the principal is checked against `policy` (only then called)
    /// before anything is forwarded.
    pub fn request(
        &self,
        frame: &[u8],
        peek: &RequestPeek,
        policy: impl FnOnce() -> Arc<Policy>,
    ) -> Action {
        // One task reads a connection's requests: a load, and a store once.
        let first = !self.started.load(Ordering::Relaxed);
        if first {
            self.started.store(true, Ordering::Relaxed);
        }
        if first && !(0..API_KEYS_BELOW).contains(&peek.api_key) {
            return Action::Close(format!(
                "a first frame that is not a Kafka request (API key {}; a bare GSSAPI token, \
                 which brokers before Kafka 4.0 took in place of a SaslHandshake, reads as \
                 0x60xx): the guard could not read its principal",
                peek.api_key
            ));
        }
        let action = match peek.api_key {
            SASL_HANDSHAKE => self.handshake(frame, peek),
            SASL_AUTHENTICATE => {
                self.authenticate(frame, peek);
                Action::Forward
            }
            _ => Action::Forward,
        };
        if !self.lent || action != Action::Forward {
            return action;
        }
        match self.admitted(&policy()) {
            Ok(()) => Action::Forward,
            Err(why) => Action::Close(why),
        }
    }

    fn handshake(&self, frame: &[u8], peek: &RequestPeek) -> Action {
        let mut state = self.state();
        // From now on the broker's principal is the SASL one: the certificate no longer
        // counts. A principal from SASL stays through a re-authentication, which Kafka
        // requires to keep the same principal (KIP-368).
        if state.from_certificate {
            state.principal = None;
            state.from_certificate = false;
        }
        state.mechanism = None;
        state.claimed = None;
        state.steps = 0;
        state.deciding = None;
        match peek.api_version {
            0 => {
                return Action::Close(
                    "SaslHandshake v0: the SASL tokens that follow it are bare frames, not \
                     Kafka requests, and the guard cannot read them (clients since Kafka 1.0 \
                     send v1)"
                        .to_owned(),
                )
            }
            1 => {}
            v => {
                return Action::Close(format!(
                    "SaslHandshake v{v}, which the guard does not read (v1 only)"
                ))
            }
        }
        let Some(mechanism) = sasl_handshake_mechanism(frame) else {
            return Action::Close(format!(
                "malformed SaslHandshake (correlation id {})",
                peek.correlation_id
            ));
        };
        state.mechanism = match mechanism {
            b"PLAIN" => Some(Mechanism::Plain),
            b"SCRAM-SHA-256" | b"SCRAM-SHA-512" => Some(Mechanism::Scram),
            b"OAUTHBEARER" => Some(Mechanism::OAuthBearer),
            other => {
                let shown: String = String::from_utf8_lossy(other).chars().take(64).collect();
                return Action::Reply(
                    handshake_refusal(peek.correlation_id),
                    format!(
                        "SASL mechanism {:?} refused (UNSUPPORTED_SASL_MECHANISM), never sent \
                         to the broker: the guard reads the principal of {} only",
                        shown,
                        READABLE_MECHANISMS.join(", ")
                    ),
                );
            }
        };
        Action::Forward
    }

    fn authenticate(&self, frame: &[u8], peek: &RequestPeek) {
        let mut state = self.state();
        state.steps = state.steps.saturating_add(1);
        let bytes = sasl_auth_bytes(frame, peek.api_version);
        let id = peek.correlation_id;
        match (state.mechanism, state.steps) {
            (Some(Mechanism::Plain), 1) => {
                state.claimed = bytes.and_then(plain_user);
                state.deciding = Some(id);
            }
            (Some(Mechanism::Scram), 1) => {
                state.claimed = bytes.and_then(scram_user);
            }
            (Some(Mechanism::Scram), 2) => state.deciding = Some(id),
            // Kafka's OAUTHBEARER server takes any message but the `%x01` that ends a
            // failed exchange as a new initial response: each may be the one that succeeds.
            (Some(Mechanism::OAuthBearer), _) => {
                state.claimed = bytes.and_then(oauthbearer_user);
                state.deciding = Some(id);
            }
            _ => {}
        }
    }

    /// The broker's answer to a SaslAuthenticate request: the name claimed becomes the
    /// principal when this answer is the authentication's success.
    pub fn authenticate_answer(&self, frame: &[u8], api_version: i16, correlation_id: i32) {
        let mut state = self.state();
        let answer = sasl_answer(frame, api_version);
        if state.deciding != Some(correlation_id) {
            // An intermediate step (SCRAM's server-first) or a later re-authentication's.
            if answer.is_none_or(|(code, _)| code != 0) {
                state.claimed = None;
            }
            return;
        }
        state.deciding = None;
        let claimed = state.claimed.take();
        let accepted = match answer {
            // Kafka's OAUTHBEARER server answers a token it refuses with an error of its
            // own as a challenge, with error code 0; it succeeds with nothing.
            Some((0, empty)) => state.mechanism != Some(Mechanism::OAuthBearer) || empty,
            _ => false,
        };
        if accepted {
            if let Some(name) = claimed {
                state.principal = Some(name);
            }
        }
    }
}
