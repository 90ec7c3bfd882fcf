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
//! When the guard presents a certificate of its own to the brokers (`--upstream-tls-cert`),
//! the broker takes every connection as the guard's: the guard *lends* its identity. It
//! lends it only to clients it authenticated itself (`--tls-client-ca` is required, see
//! `tls`) and, when `--allow-principal` names principals, only to those: the connection of
//! any other is closed before any of its frames is forwarded.
//!
//! SaslHandshake (17) and SaslAuthenticate (36) frames the guard does not answer are
//! forwarded unchanged; this only reads them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use kafka_elect_leaders::RequestPeek;
use serde::de::{Deserializer as _, Error as _, IgnoredAny, MapAccess, Visitor};

use crate::owed::Reader;
use crate::policy::Policy;

/// SaslHandshake's API key.
pub const SASL_HANDSHAKE: i16 = 17;
/// SaslAuthenticate's API key.
pub const SASL_AUTHENTICATE: i16 = 36;
/// SaslHandshake's error for a mechanism the server does not offer.
const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
/// The mechanisms the guard reads a principal from: what it answers a SaslHandshake it
/// refuses with.
pub const READABLE_MECHANISMS: [&str; 4] =
    ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"];
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
    Answer(Bytes, String),
    /// Close the connection, for this reason; nothing of this frame is forwarded.
    Close(String),
}

/// The principal of one connection; shared by its two directions.
#[derive(Debug, Default)]
pub struct Identity {
    state: Mutex<State>,
    /// The broker takes this connection as the guard's own (`--upstream-tls-cert`).
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
    /// unless the identity is lent and `policy` names the principals allowed (outside
    /// `--log-only`) without this one. Err: why not, for the log.
    pub fn admitted(&self, policy: &Policy) -> Result<(), String> {
        if !self.lent || policy.allowed_principals.is_empty() || policy.log_only {
            return Ok(());
        }
        // Under the lock, without a copy: on a lent connection this runs for every request.
        let state = self.state();
        match state.principal.as_deref() {
            Some(p) if policy.allowed_principals.contains(p) => Ok(()),
            Some(p) => Err(format!(
                "principal {:?} is not allowed (--allow-principal), and the brokers would \
                 take its requests as the guard's own (--upstream-tls-cert)",
                p
            )),
            None => Err(
                "the principal is unknown (a SaslHandshake drops the certificate's), \
                 only some are allowed (--allow-principal), and the brokers would take its \
                 requests as the guard's own (--upstream-tls-cert)"
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
                return Action::Answer(
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

/// Kafka's SaslHandshake error response (v0 and v1 alike): `UNSUPPORTED_SASL_MECHANISM` and
/// the mechanisms the guard reads.
fn handshake_refusal(correlation_id: i32) -> Bytes {
    let mut f = vec![0; 4];
    f.extend(correlation_id.to_be_bytes());
    f.extend(UNSUPPORTED_SASL_MECHANISM.to_be_bytes());
    f.extend(
        i32::try_from(READABLE_MECHANISMS.len())
            .unwrap_or(0)
            .to_be_bytes(),
    );
    for m in READABLE_MECHANISMS {
        f.extend(i16::try_from(m.len()).unwrap_or(0).to_be_bytes());
        f.extend(m.as_bytes());
    }
    let size = u32::try_from(f.len() - 4).unwrap_or(0);
    f[..4].copy_from_slice(&size.to_be_bytes());
    Bytes::from(f)
}

/// SaslHandshake's `Mechanism` (v0 and v1: an int16-length string after a v1 header).
fn sasl_handshake_mechanism(frame: &[u8]) -> Option<&[u8]> {
    let mut r = Reader::new(frame);
    r.skip(4 + 2 + 2 + 4)?;
    r.skip_string()?;
    let len = usize::try_from(r.int16()?).ok()?;
    r.take(len)
}

/// SaslAuthenticate's `AuthBytes` (v0-v1: int32 length; v2: flexible, compact bytes).
fn sasl_auth_bytes(frame: &[u8], api_version: i16) -> Option<&[u8]> {
    let flexible = match api_version {
        0 | 1 => false,
        2 => true,
        _ => return None,
    };
    let mut r = Reader::new(frame);
    r.skip(4 + 2 + 2 + 4)?;
    r.skip_string()?;
    let len = if flexible {
        r.skip_tagged_fields()?;
        usize::try_from(r.uvarint()?.checked_sub(1)?).ok()?
    } else {
        usize::try_from(r.int32()?).ok()?
    };
    r.take(len)
}

/// SaslAuthenticate's answer: its `ErrorCode`, and whether its `AuthBytes` are empty (v0-v1:
/// int16 and int32 lengths; v2: flexible, compact lengths). None: it cannot be read.
fn sasl_answer(frame: &[u8], api_version: i16) -> Option<(i16, bool)> {
    let flexible = match api_version {
        0 | 1 => false,
        2 => true,
        _ => return None,
    };
    let mut r = Reader::new(frame);
    r.skip(4 + 4)?;
    if flexible {
        r.skip_tagged_fields()?;
    }
    let code = r.int16()?;
    let auth_len = if flexible {
        let message = r.uvarint()?; // length + 1; 0: null
        r.skip(usize::try_from(message.saturating_sub(1)).ok()?)?;
        usize::try_from(r.uvarint()?.checked_sub(1)?).ok()?
    } else {
        r.skip_string()?;
        usize::try_from(r.int32()?).unwrap_or(0) // -1: null
    };
    r.take(auth_len)?;
    Some((code, auth_len == 0))
}

/// PLAIN (RFC 4616): `[authzid] NUL authcid NUL passwd`; the authentication identity, as
/// Kafka takes it. Nothing past the second NUL is looked at.
fn plain_user(bytes: &[u8]) -> Option<String> {
    let mut parts = bytes.splitn(3, |&b| b == 0);
    let _authzid = parts.next()?;
    let authcid = parts.next()?;
    parts.next()?; // a password must follow
    let name = std::str::from_utf8(authcid).ok()?;
    (!name.is_empty()).then(|| name.to_owned())
}

/// SCRAM's client-first message (RFC 5802): `gs2-header n=NAME,r=NONCE[,EXT=VALUE...]`;
/// the name, with `=2C` and `=3D` decoded. None with Kafka's `tokenauth` extension: a
/// delegation token's id stands in `n=`, and the broker's principal is the token's owner,
/// which the guard cannot know.
fn scram_user(bytes: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?;
    // The GS2 header: a channel binding flag and an optional authzid, then the message.
    let mut fields = text.splitn(3, ',');
    let _flag = fields.next()?;
    let _authzid = fields.next()?;
    let message = fields.next()?;
    let mut attributes = message.split(',');
    let name = attributes.next()?.strip_prefix("n=")?;
    if attributes.any(|a| a.starts_with("tokenauth=")) {
        return None;
    }
    let name = name.replace("=2C", ",").replace("=3D", "=");
    (!name.is_empty()).then_some(name)
}

/// OAUTHBEARER's initial response (RFC 7628, as Kafka's `OAuthBearerClientInitialResponse`
/// reads it): `n,[a=AUTHZID],%x01auth=Bearer TOKEN%x01[KEY=VALUE%x01...]%x01`; the `sub`
/// claim of the token, a JWS (`HEADER.PAYLOAD.SIGNATURE`, base64url without padding), as
/// Kafka's validators name the principal by default (`sasl.oauthbearer.sub.claim.name`).
/// None when anything cannot be read, or could be read otherwise by the broker (a claim or
/// key given twice).
fn oauthbearer_user(bytes: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?;
    let rest = text.strip_prefix("n,")?;
    let (authzid, rest) = rest.split_once(',')?;
    if !authzid.is_empty() && !authzid.starts_with("a=") {
        return None;
    }
    let pairs = rest.strip_prefix('\x01')?.strip_suffix('\x01')?;
    if !pairs.is_empty() && !pairs.ends_with('\x01') {
        return None;
    }
    let mut auth = None;
    for pair in pairs.split_terminator('\x01') {
        let (key, value) = pair.split_once('=')?;
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphabetic()) || value.is_empty() {
            return None;
        }
        if key == "auth" && auth.replace(value).is_some() {
            return None;
        }
    }
    // `auth`: a scheme (Bearer, any case), spaces, the token.
    let (scheme, token) = auth?.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = token.trim_start_matches(' ');
    let mut parts = token.split('.');
    let (_header, payload, _signature) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    jwt_sub(&base64url(payload)?)
}

/// The `sub` claim of a JWT's payload (a JSON object): a string, not empty, given once. The
/// JSON is read with serde_json, bounded by the token (at most the frame) and its nesting
/// limit; only `sub` is kept.
fn jwt_sub(payload: &[u8]) -> Option<String> {
    struct Claims;
    impl<'de> Visitor<'de> for Claims {
        type Value = Option<String>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON object")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<String>, A::Error> {
            let mut sub = None;
            while let Some(key) = map.next_key::<String>()? {
                if key == "sub" {
                    // jose4j (Kafka's validator) refuses a claim given twice; another
                    // reader might take either.
                    if sub.replace(map.next_value::<String>()?).is_some() {
                        return Err(A::Error::custom("sub given twice"));
                    }
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(sub)
        }
    }
    let mut de = serde_json::Deserializer::from_slice(payload);
    let sub = (&mut de).deserialize_map(Claims).ok()?;
    de.end().ok()?;
    sub.filter(|s| !s.is_empty())
}

/// Base64url without padding (RFC 4648 section 5), as a JWT's parts are written.
fn base64url(text: &str) -> Option<Vec<u8>> {
    if text.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() / 4 * 3 + 2);
    let (mut acc, mut bits) = (0u32, 0u32);
    for b in text.bytes() {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// A certificate's subject as Kafka's default principal builder writes it
/// (`X500Principal.getName()`, see [`name_rfc2253`]). None when the certificate cannot be
/// read, or its subject written exactly as Java would.
pub fn certificate_subject(der: &[u8]) -> Option<String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    name_rfc2253(cert.subject())
}

/// A distinguished name as Java's `X500Principal.getName()` writes it (RFC 2253, which
/// Kafka's default principal builder uses): the RDNs in the reverse order of the DER
/// sequence, joined by `,`; the attributes of a multi-valued RDN in their DER order, joined
/// by `+`; the keywords CN, C, L, ST, O, OU, STREET, DC and UID, any other attribute by its
/// OID; a value that is a string of a known attribute written out with Java's escapes
/// ([`escape_rfc2253`]), any other as `#` and the lowercase hex of its DER encoding. None
/// for an empty name, and for a string Java 17 and later Javas write otherwise (see
/// [`ava_rfc2253`]), or write with replacement characters: rather unknown than another
/// name.
fn name_rfc2253(name: &x509_parser::x509::X509Name<'_>) -> Option<String> {
    let mut rdns = Vec::new();
    for rdn in name.iter() {
        let mut avas = Vec::new();
        for ava in rdn.iter() {
            avas.push(ava_rfc2253(ava)?);
        }
        rdns.push(avas.join("+"));
    }
    rdns.reverse();
    let name = rdns.join(",");
    (!name.is_empty()).then_some(name)
}

fn ava_rfc2253(ava: &x509_parser::x509::AttributeTypeAndValue<'_>) -> Option<String> {
    let oid = oid_text(ava.attr_type().as_bytes())?;
    let keyword = match oid.as_str() {
        "2.5.4.3" => Some("CN"),
        "2.5.4.6" => Some("C"),
        "2.5.4.7" => Some("L"),
        "2.5.4.8" => Some("ST"),
        "2.5.4.10" => Some("O"),
        "2.5.4.11" => Some("OU"),
        "2.5.4.9" => Some("STREET"),
        "0.9.2342.19200300.100.1.25" => Some("DC"),
        "0.9.2342.19200300.100.1.1" => Some("UID"),
        _ => None,
    };
    let value = ava.attr_value();
    let header = &value.header;
    let tag = header.tag().0;
    if tag >= 31 {
        return None; // a multi-byte tag, which Java's DerValue does not read
    }
    let tag_byte =
        ((header.class() as u8) << 6) | (u8::from(header.is_constructed()) << 5) | tag as u8;
    let data = value.data;
    let text = match (keyword, tag_byte) {
        (None, _) => None,
        // Java 17 reads the bytes of every string type as UTF-8; later versions read each
        // in its own charset (US-ASCII, ISO-8859-1 for TeletexString, UTF-16 for
        // BMPString). They agree on UTF8String, and on ASCII in PrintableString,
        // TeletexString, IA5String and GeneralString; any other string is written
        // otherwise by one Java or another (a BMPString always): unknown.
        (Some(_), 0x13 | 0x14 | 0x16 | 0x1b) => Some(if data.is_ascii() {
            data.iter().map(|&b| char::from(b)).collect::<String>()
        } else {
            return None;
        }),
        (Some(_), 0x0c) => Some(std::str::from_utf8(data).ok()?.to_owned()),
        (Some(_), 0x1e) => return None,
        (Some(_), _) => None,
    };
    let key = keyword.unwrap_or(&oid);
    Some(match text {
        Some(text) => format!("{key}={}", escape_rfc2253(&text)),
        None => {
            // The whole DER value, as Java re-encodes it (definite, shortest length).
            let mut der = vec![tag_byte];
            let len = data.len();
            if len < 0x80 {
                der.push(len as u8);
            } else {
                let bytes = len.to_be_bytes();
                let skip = bytes.iter().take_while(|&&b| b == 0).count();
                der.push(0x80 | (bytes.len() - skip) as u8);
                der.extend(&bytes[skip..]);
            }
            der.extend(data);
            let hex: String = der.iter().map(|b| format!("{b:02x}")).collect();
            format!("{key}=#{hex}")
        }
    })
}

/// An OBJECT IDENTIFIER's content in dotted decimal, as Java writes it: the first
/// sub-identifier holds the first two arcs (40 x + y, x at most 2, so that `2.999` is one
/// sub-identifier, 1079). None for an encoding Java refuses (a sub-identifier padded with
/// 0x80, or cut), or an arc past 64 bits.
fn oid_text(content: &[u8]) -> Option<String> {
    let mut arcs: Vec<u64> = Vec::new();
    let mut value = 0u64;
    let mut start = true;
    for &b in content {
        if start && b == 0x80 {
            return None;
        }
        value = value.checked_mul(128)? | u64::from(b & 0x7f);
        start = b & 0x80 == 0;
        if start {
            if arcs.is_empty() {
                let first = (value / 40).min(2);
                arcs.extend([first, value - 40 * first]);
            } else {
                arcs.push(value);
            }
            value = 0;
        }
    }
    if !start || arcs.is_empty() {
        return None;
    }
    Some(
        arcs.iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join("."),
    )
}

/// A value escaped as Java's `AVA.toRFC2253String` escapes it: a backslash before each of
/// `, = + < > # ; " \` anywhere, NUL as `\00`, and a backslash before every space or
/// carriage return that leads or trails the result.
fn escape_rfc2253(value: &str) -> String {
    let mut chars = Vec::with_capacity(value.len());
    for c in value.chars() {
        match c {
            ',' | '=' | '+' | '<' | '>' | '#' | ';' | '"' | '\\' => chars.extend(['\\', c]),
            '\0' => chars.extend(['\\', '0', '0']),
            c => chars.push(c),
        }
    }
    let blank = |c: &char| *c == ' ' || *c == '\r';
    let lead = chars.iter().position(|c| !blank(c)).unwrap_or(chars.len());
    let trail = chars.iter().rposition(|c| !blank(c));
    let mut out = String::with_capacity(chars.len() + 2);
    for (i, c) in chars.into_iter().enumerate() {
        if i < lead || trail.is_none_or(|t| i > t) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_elect_leaders::peek_request;

    fn request(api_key: i16, version: i16, correlation_id: i32, body: &[u8]) -> Vec<u8> {
        let mut f = vec![0; 4];
        f.extend(api_key.to_be_bytes());
        f.extend(version.to_be_bytes());
        f.extend(correlation_id.to_be_bytes());
        f.extend(2i16.to_be_bytes());
        f.extend(b"cl");
        if api_key == SASL_AUTHENTICATE && version >= 2 {
            f.push(0); // header tagged fields
        }
        f.extend(body);
        let size = u32::try_from(f.len() - 4).unwrap();
        f[..4].copy_from_slice(&size.to_be_bytes());
        f
    }

    fn handshake_v(mechanism: &str, version: i16, id: i32) -> Vec<u8> {
        let mut body = i16::try_from(mechanism.len())
            .unwrap()
            .to_be_bytes()
            .to_vec();
        body.extend(mechanism.as_bytes());
        request(SASL_HANDSHAKE, version, id, &body)
    }

    fn handshake(mechanism: &str, id: i32) -> Vec<u8> {
        handshake_v(mechanism, 1, id)
    }

    fn authenticate(version: i16, id: i32, bytes: &[u8]) -> Vec<u8> {
        let mut body = Vec::new();
        if version >= 2 {
            body.push(u8::try_from(bytes.len() + 1).unwrap());
        } else {
            body.extend(i32::try_from(bytes.len()).unwrap().to_be_bytes());
        }
        body.extend(bytes);
        body.push(0); // v2: body tagged fields (ignored at v0-v1)
        request(SASL_AUTHENTICATE, version, id, &body)
    }

    /// The broker's SaslAuthenticate answer: an error code and auth bytes.
    fn answer_with(version: i16, id: i32, error_code: i16, auth: &[u8]) -> Vec<u8> {
        let mut f = vec![0; 4];
        f.extend(id.to_be_bytes());
        if version >= 2 {
            f.push(0);
        }
        f.extend(error_code.to_be_bytes());
        if version >= 2 {
            f.push(0); // null message
            f.push(u8::try_from(auth.len() + 1).unwrap());
        } else {
            f.extend((-1i16).to_be_bytes());
            f.extend(i32::try_from(auth.len()).unwrap().to_be_bytes());
        }
        f.extend(auth);
        if version >= 1 {
            f.extend(0i64.to_be_bytes());
        }
        if version >= 2 {
            f.push(0);
        }
        let size = u32::try_from(f.len() - 4).unwrap();
        f[..4].copy_from_slice(&size.to_be_bytes());
        f
    }

    fn answer(version: i16, id: i32, error_code: i16) -> Vec<u8> {
        answer_with(version, id, error_code, b"")
    }

    /// A request through `identity`, with `policy`.
    fn send_with(identity: &Identity, frame: &[u8], policy: &Policy) -> Action {
        let peek = peek_request(frame).unwrap();
        identity.request(frame, &peek, || Arc::new(policy.clone()))
    }

    fn send(identity: &Identity, frame: &[u8]) -> Action {
        send_with(identity, frame, &Policy::default())
    }

    /// Runs a SASL exchange: the handshake, then each client message and the broker's
    /// answer to it (an error code and auth bytes); the principal at the end.
    fn exchange_with(
        identity: &Identity,
        mechanism: &str,
        version: i16,
        steps: &[(&[u8], i16, &[u8])],
    ) -> Option<String> {
        assert_eq!(send(identity, &handshake(mechanism, 1)), Action::Forward);
        for (i, (bytes, code, auth)) in steps.iter().enumerate() {
            let id = i32::try_from(i).unwrap() + 2;
            assert_eq!(
                send(identity, &authenticate(version, id, bytes)),
                Action::Forward
            );
            assert_eq!(
                identity.principal(),
                None,
                "trusted before the broker's answer"
            );
            identity.authenticate_answer(&answer_with(version, id, *code, auth), version, id);
        }
        identity.principal()
    }

    fn exchange(mechanism: &str, version: i16, steps: &[(&[u8], i16)]) -> Option<String> {
        let steps: Vec<(&[u8], i16, &[u8])> =
            steps.iter().map(|&(b, c)| (b, c, &b""[..])).collect();
        exchange_with(&Identity::new(None, false), mechanism, version, &steps)
    }

    #[test]
    fn plain_user_once_the_broker_accepts() {
        for version in [0, 1, 2] {
            assert_eq!(
                exchange("PLAIN", version, &[(b"\0alice\0s3cret", 0)]).as_deref(),
                Some("alice")
            );
            assert_eq!(
                exchange("PLAIN", version, &[(b"admin\0alice\0s3cret", 0)]).as_deref(),
                Some("alice"),
                "the authentication identity, not the authorization one"
            );
            assert_eq!(exchange("PLAIN", version, &[(b"\0alice\0wrong", 58)]), None);
        }
    }

    #[test]
    fn scram_user_after_the_final_message() {
        let first = b"n,,n=al=2Cice=3D,r=fyko+d2lbbFgONRv9qkxdawL";
        let last =
            b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=";
        for mechanism in ["SCRAM-SHA-256", "SCRAM-SHA-512"] {
            for version in [0, 1, 2] {
                assert_eq!(
                    exchange(mechanism, version, &[(first, 0), (last, 0)]).as_deref(),
                    Some("al,ice=")
                );
                // The server-first answer is a success too; only the final one counts.
                assert_eq!(exchange(mechanism, version, &[(first, 0)]), None);
                assert_eq!(
                    exchange(mechanism, version, &[(first, 0), (last, 58)]),
                    None
                );
            }
        }
    }

    /// Kafka's delegation tokens authenticate with SCRAM, the token's id in `n=` and
    /// `tokenauth=true` among the extensions: the broker's principal is the token's owner,
    /// which the guard cannot know.
    #[test]
    fn a_scram_delegation_token_leaves_the_principal_unknown() {
        let first = b"n,,n=MTIzNDU2Nzg5,r=fyko+d2lbbFgONRv9qkxdawL,tokenauth=true";
        let last = b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0=";
        assert_eq!(exchange("SCRAM-SHA-256", 2, &[(first, 0), (last, 0)]), None);
        assert_eq!(
            scram_user(b"n,,n=alice,r=nonce,other=x").as_deref(),
            Some("alice")
        );
    }

    fn b64(bytes: &[u8]) -> String {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, &b)| n | (u32::from(b) << (16 - 8 * i)));
            for i in 0..=chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            }
        }
        out
    }

    /// An unsecured JWS (`alg: none`, empty signature) with these claims, in an
    /// OAUTHBEARER initial response.
    fn bearer(claims: &str) -> Vec<u8> {
        let token = format!("{}.{}.", b64(br#"{"alg":"none"}"#), b64(claims.as_bytes()));
        format!("n,,\x01auth=Bearer {token}\x01\x01").into_bytes()
    }

    #[test]
    fn base64url_without_padding() {
        for len in 0..40 {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            assert_eq!(
                base64url(&b64(&bytes)).as_deref(),
                Some(&bytes[..]),
                "{len}"
            );
        }
        assert_eq!(base64url("YQ=="), None, "padding");
        assert_eq!(base64url("Y"), None);
        assert_eq!(base64url("a+b/"), None, "not the URL alphabet");
    }

    #[test]
    fn oauthbearer_sub_once_the_broker_accepts() {
        let alice = bearer(r#"{"iss":"idp","sub":"alice","exp":99999999999,"scope":["a"]}"#);
        for version in [0, 1, 2] {
            let identity = Identity::new(None, false);
            assert_eq!(
                exchange_with(&identity, "OAUTHBEARER", version, &[(&alice, 0, b"")]).as_deref(),
                Some("alice")
            );
            // Refused: the broker's error comes as a challenge with error code 0; the client's
            // `%x01` then gets the failure.
            let identity = Identity::new(None, false);
            let steps: [(&[u8], i16, &[u8]); 2] = [
                (&alice, 0, br#"{"status":"invalid_token"}"#),
                (b"\x01", 58, b""),
            ];
            assert_eq!(
                exchange_with(&identity, "OAUTHBEARER", version, &steps),
                None
            );
            // A new initial response after a refused one is taken as such by Kafka's server.
            let bob = bearer(r#"{"sub":"bob"}"#);
            let identity = Identity::new(None, false);
            let steps: [(&[u8], i16, &[u8]); 2] = [
                (&alice, 0, br#"{"status":"invalid_token"}"#),
                (&bob, 0, b""),
            ];
            assert_eq!(
                exchange_with(&identity, "OAUTHBEARER", version, &steps).as_deref(),
                Some("bob")
            );
        }
        // With an authorization id, extensions, the scheme in another case, several spaces.
        let token = format!("{}.{}.sig", b64(b"{}"), b64(br#"{"sub":"carol"}"#));
        let response = format!("n,a=carol,\x01host=h\x01auth=bEaReR  {token}\x01port=1\x01\x01");
        assert_eq!(
            oauthbearer_user(response.as_bytes()).as_deref(),
            Some("carol")
        );
        assert_eq!(
            oauthbearer_user(&bearer(r#"{"s\u0075b":"dan"}"#)).as_deref(),
            Some("dan"),
            "a JSON escape in the name"
        );
    }

    #[test]
    fn an_oauthbearer_token_read_otherwise_by_the_broker_leaves_the_principal_unknown() {
        let jws = |claims: &str| format!("{}.{}.", b64(b"{}"), b64(claims.as_bytes()));
        let alice = jws(r#"{"sub":"alice"}"#);
        for response in [
            // The claim given twice, not a string, empty, missing; not an object; trailing.
            bearer(r#"{"sub":"alice","sub":"admin"}"#),
            bearer(r#"{"sub":1}"#),
            bearer(r#"{"sub":null}"#),
            bearer(r#"{"sub":""}"#),
            bearer(r#"{"name":"alice"}"#),
            bearer(r#"["sub","alice"]"#),
            bearer(r#"{"sub":"alice"} x"#),
            bearer(r#"{"sub":"alice""#),
            // A JWE (five parts), two parts, a bad scheme, `auth` twice or missing.
            format!("n,,\x01auth=Bearer {alice}a.b.c\x01\x01").into_bytes(),
            format!(
                "n,,\x01auth=Bearer {}.{}\x01\x01",
                b64(b"{}"),
                b64(br#"{"sub":"a"}"#)
            )
            .into_bytes(),
            format!("n,,\x01auth=Basic {alice}\x01\x01").into_bytes(),
            format!("n,,\x01auth=Bearer{alice}\x01\x01").into_bytes(),
            format!("n,,\x01auth=Bearer {alice}\x01auth=Bearer {alice}\x01\x01").into_bytes(),
            b"n,,\x01host=h\x01\x01".to_vec(),
            // The framing of RFC 7628 broken.
            format!("y,,\x01auth=Bearer {alice}\x01\x01").into_bytes(),
            format!("n,x=y,\x01auth=Bearer {alice}\x01\x01").into_bytes(),
            format!("n,,auth=Bearer {alice}\x01\x01").into_bytes(),
            format!("n,,\x01auth=Bearer {alice}\x01").into_bytes(),
            format!("n,,\x01auth=Bearer {alice}\x01junk\x01").into_bytes(),
            b"\x01".to_vec(),
            vec![],
        ] {
            assert_eq!(oauthbearer_user(&response), None, "{response:?}");
            assert_eq!(
                exchange_with(
                    &Identity::new(None, false),
                    "OAUTHBEARER",
                    2,
                    &[(&response, 0, b"")]
                ),
                None
            );
        }
        // Bounded: deep nesting is no stack overflow. serde_json skips the claims not kept
        // with a stack of its own (on the heap, as large as the token at most), and refuses
        // nesting past its limit where it builds a value.
        let deep = |n| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        let skipped = format!(r#"{{"a":{},"sub":"x"}}"#, deep(100_000));
        assert_eq!(jwt_sub(skipped.as_bytes()).as_deref(), Some("x"));
        let kept = format!(r#"{{"sub":{}}}"#, deep(100_000));
        assert_eq!(jwt_sub(kept.as_bytes()), None);
    }

    /// Issue 35, finding 3: a mechanism the guard cannot read is refused, answered by the
    /// guard with UNSUPPORTED_SASL_MECHANISM (33) and the mechanisms it reads.
    #[test]
    fn other_mechanisms_are_answered_here_and_refused() {
        for mechanism in ["GSSAPI", "SCRAM-SHA-1", "plain", "AWS_MSK_IAM", ""] {
            let identity = Identity::new(Some("CN=alice".into()), false);
            let Action::Answer(frame, why) = send(&identity, &handshake(mechanism, 5)) else {
                panic!("{mechanism}: not answered here");
            };
            assert!(why.contains("UNSUPPORTED_SASL_MECHANISM"), "{why}");
            let mut r = Reader::new(&frame);
            assert_eq!(
                usize::try_from(r.int32().unwrap()).unwrap(),
                frame.len() - 4
            );
            assert_eq!(r.int32(), Some(5), "correlation id");
            assert_eq!(r.int16(), Some(33));
            assert_eq!(r.int32(), Some(4));
            for want in READABLE_MECHANISMS {
                let len = usize::try_from(r.int16().unwrap()).unwrap();
                assert_eq!(r.take(len), Some(want.as_bytes()));
            }
            assert_eq!(r.remaining(), 0);
            // The certificate no longer counts, and what follows claims nothing.
            assert_eq!(identity.principal(), None);
            let token = b"\x60\x82\x01\x00";
            assert_eq!(send(&identity, &authenticate(2, 6, token)), Action::Forward);
            identity.authenticate_answer(&answer(2, 6, 0), 2, 6);
            assert_eq!(identity.principal(), None);
        }
    }

    /// Issue 35, finding 3: once a client starts SASL, its certificate no longer counts; the
    /// principal is unknown until the broker accepts the exchange.
    #[test]
    fn a_handshake_drops_the_certificate() {
        let identity = Identity::new(Some("CN=alice".into()), false);
        assert_eq!(identity.principal().as_deref(), Some("CN=alice"));
        assert_eq!(send(&identity, &handshake("PLAIN", 1)), Action::Forward);
        assert_eq!(identity.principal(), None, "after the handshake");
        assert_eq!(
            send(&identity, &authenticate(2, 2, b"\0bob\0pw")),
            Action::Forward
        );
        identity.authenticate_answer(&answer(2, 2, 58), 2, 2);
        assert_eq!(identity.principal(), None, "after a failed authentication");

        let identity = Identity::new(Some("CN=alice".into()), false);
        let steps: [(&[u8], i16, &[u8]); 1] = [(b"\0bob\0pw", 0, b"")];
        assert_eq!(
            exchange_with(&identity, "PLAIN", 2, &steps).as_deref(),
            Some("bob")
        );
        // A re-authentication keeps the SASL principal (Kafka requires the same one).
        assert_eq!(send(&identity, &handshake("PLAIN", 9)), Action::Forward);
        assert_eq!(identity.principal().as_deref(), Some("bob"));
    }

    /// A SaslAuthenticate without a handshake reads nothing: Kafka's broker never
    /// authenticates one (it needs the handshake's mechanism first).
    #[test]
    fn no_mechanism_is_read_without_a_handshake() {
        let identity = Identity::new(Some("CN=alice".into()), false);
        for version in [0, 1, 2] {
            let frame = authenticate(version, 3, b"\0bob\0pw");
            assert_eq!(send(&identity, &frame), Action::Forward);
            identity.authenticate_answer(&answer(version, 3, 0), version, 3);
            assert_eq!(identity.principal().as_deref(), Some("CN=alice"));
        }
    }

    #[test]
    fn handshakes_and_frames_the_guard_cannot_read_close_the_connection() {
        let closes = |frame: &[u8]| {
            let identity = Identity::new(Some("CN=alice".into()), false);
            matches!(send(&identity, frame), Action::Close(_))
        };
        assert!(
            closes(&handshake_v("PLAIN", 0, 1)),
            "v0: bare tokens follow"
        );
        assert!(closes(&handshake_v("PLAIN", 2, 1)), "a version not read");
        assert!(!closes(&handshake_v("PLAIN", 1, 1)));
        let whole = handshake("PLAIN", 1);
        for cut in 12..whole.len() {
            let mut frame = whole[..cut].to_vec();
            let size = u32::try_from(cut - 4).unwrap();
            frame[..4].copy_from_slice(&size.to_be_bytes());
            assert!(closes(&frame), "cut at {cut}");
        }
        // A bare GSSAPI token (what Kafka 0.9 clients sent first) and other API keys no
        // Kafka API has, as the first frame; after it they are forwarded as any other.
        let mut token = vec![0, 0, 0, 12, 0x60, 0x82, 0x02, 0x5c, 0x06, 0x09, 0x2a, 0x86];
        token.extend([0x48, 0x86, 0xf7, 0x12]);
        assert!(closes(&token));
        for api_key in [-1, i16::MIN, API_KEYS_BELOW, i16::MAX] {
            assert!(closes(&request(api_key, 0, 1, b"")), "{api_key}");
            let identity = Identity::new(None, false);
            assert_eq!(send(&identity, &request(18, 0, 1, b"")), Action::Forward);
            assert_eq!(
                send(&identity, &request(api_key, 0, 2, b"")),
                Action::Forward
            );
        }
        for api_key in [0, 3, 18, 43, API_KEYS_BELOW - 1] {
            assert!(!closes(&request(api_key, 0, 1, b"")), "{api_key}");
        }
    }

    /// Issue 35, finding 3: a connection that borrows the guard's identity at the broker
    /// goes on only while its principal is allowed.
    #[test]
    fn a_lent_identity_only_for_allowed_principals() {
        let mut policy = Policy::default();
        policy.allowed_principals.insert("CN=alice".into());
        let metadata = request(3, 1, 1, b"\xff\xff\xff\xff");
        let alice = Identity::new(Some("CN=alice".into()), true);
        assert_eq!(send_with(&alice, &metadata, &policy), Action::Forward);
        let bob = Identity::new(Some("CN=bob".into()), true);
        let Action::Close(why) = send_with(&bob, &metadata, &policy) else {
            panic!("bob let through");
        };
        assert!(
            why.contains("CN=bob") && why.contains("--allow-principal"),
            "{why}"
        );
        assert!(bob.admitted(&policy).is_err());
        // A name is written for the log with its control characters escaped.
        let mallory = Identity::new(Some("CN=mal\u{202e}lory\n".into()), true);
        let why = mallory.admitted(&policy).unwrap_err();
        assert!(why.contains(r#""CN=mal\u{202e}lory\n""#), "{why}");
        let unknown = Identity::new(None, true);
        assert!(matches!(
            send_with(&unknown, &metadata, &policy),
            Action::Close(_)
        ));
        // A handshake makes alice's principal unknown: closed, the handshake not forwarded.
        assert!(matches!(
            send_with(&alice, &handshake("PLAIN", 2), &policy),
            Action::Close(_)
        ));
        // Without --allow-principal, in --log-only, or when the identity is not lent: on.
        let bob_lent = Identity::new(Some("CN=bob".into()), true);
        assert_eq!(
            send_with(&bob_lent, &metadata, &Policy::default()),
            Action::Forward
        );
        let log_only = Policy {
            log_only: true,
            ..policy.clone()
        };
        assert_eq!(send_with(&bob_lent, &metadata, &log_only), Action::Forward);
        let bob_own = Identity::new(Some("CN=bob".into()), false);
        assert_eq!(send_with(&bob_own, &metadata, &policy), Action::Forward);
    }

    #[test]
    fn malformed_sasl_frames_claim_nothing() {
        // Cut anywhere before the end of the auth bytes (the last byte is the tagged fields).
        for cut in 12..authenticate(2, 2, b"\0alice\0pw").len() - 1 {
            let identity = Identity::new(None, false);
            assert_eq!(send(&identity, &handshake("PLAIN", 1)), Action::Forward);
            let mut frame = authenticate(2, 2, b"\0alice\0pw")[..cut].to_vec();
            let size = u32::try_from(cut - 4).unwrap();
            frame[..4].copy_from_slice(&size.to_be_bytes());
            assert_eq!(send(&identity, &frame), Action::Forward);
            identity.authenticate_answer(&answer(2, 2, 0), 2, 2);
            assert_eq!(identity.principal(), None, "cut at {cut}");
        }
        // An answer cut short, or of a version not read, accepts nothing.
        let whole = answer(2, 2, 0);
        for cut in 0..whole.len() - 9 {
            let identity = Identity::new(None, false);
            assert_eq!(send(&identity, &handshake("PLAIN", 1)), Action::Forward);
            send(&identity, &authenticate(2, 2, b"\0alice\0pw"));
            identity.authenticate_answer(&whole[..cut], 2, 2);
            assert_eq!(identity.principal(), None, "answer cut at {cut}");
        }
        let identity = Identity::new(None, false);
        send(&identity, &handshake("PLAIN", 1));
        send(
            &identity,
            &request(SASL_AUTHENTICATE, 3, 2, b"\x0a\0alice\0pw\0"),
        );
        identity.authenticate_answer(&answer(2, 2, 0), 3, 2);
        assert_eq!(identity.principal(), None, "v3");
        assert_eq!(plain_user(b"\0alice"), None, "no password");
        assert_eq!(scram_user(b"n,,r=nonce"), None);
    }

    // ------------------------------------------------------------------ RFC 2253 names

    /// DER: a tag, a length, the content.
    fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        let len = content.len();
        if len < 0x80 {
            out.push(len as u8);
        } else {
            let bytes = len.to_be_bytes();
            let skip = bytes.iter().take_while(|&&b| b == 0).count();
            out.push(0x80 | (bytes.len() - skip) as u8);
            out.extend(&bytes[skip..]);
        }
        out.extend(content);
        out
    }

    fn oid(arcs: &[u64]) -> Vec<u8> {
        let mut content = Vec::new();
        let mut put = |mut arc: u64| {
            let mut groups = vec![(arc & 0x7f) as u8];
            arc >>= 7;
            while arc > 0 {
                groups.push((arc & 0x7f) as u8 | 0x80);
                arc >>= 7;
            }
            groups.reverse();
            content.extend(groups);
        };
        put(arcs[0] * 40 + arcs[1]);
        for &arc in &arcs[2..] {
            put(arc);
        }
        tlv(0x06, &content)
    }

    const CN: &[u64] = &[2, 5, 4, 3];
    const OU: &[u64] = &[2, 5, 4, 11];
    const O: &[u64] = &[2, 5, 4, 10];
    const C: &[u64] = &[2, 5, 4, 6];
    const UID: &[u64] = &[0, 9, 2342, 19200300, 100, 1, 1];
    const DC: &[u64] = &[0, 9, 2342, 19200300, 100, 1, 25];
    const EMAIL: &[u64] = &[1, 2, 840, 113549, 1, 9, 1];
    const SURNAME: &[u64] = &[2, 5, 4, 4];
    const UTF8: u8 = 0x0c;
    const PRINTABLE: u8 = 0x13;
    const T61: u8 = 0x14;
    const IA5: u8 = 0x16;
    const BMP: u8 = 0x1e;

    /// An attribute: its type and value (a tag and the value's bytes).
    fn ava(arcs: &[u64], tag: u8, value: &[u8]) -> Vec<u8> {
        let mut content = oid(arcs);
        content.extend(tlv(tag, value));
        tlv(0x30, &content)
    }

    /// A name of RDNs, each a set of attributes (in this order, DER's own or not).
    fn name(rdns: &[Vec<Vec<u8>>]) -> Vec<u8> {
        let content: Vec<u8> = rdns
            .iter()
            .flat_map(|rdn| tlv(0x31, &rdn.concat()))
            .collect();
        tlv(0x30, &content)
    }

    fn bmp(text: &str) -> Vec<u8> {
        text.encode_utf16().flat_map(u16::to_be_bytes).collect()
    }

    fn written(der: &[u8]) -> Option<String> {
        use x509_parser::prelude::FromDer;
        let (rest, name) = x509_parser::x509::X509Name::from_der(der).unwrap();
        assert!(rest.is_empty());
        name_rfc2253(&name)
    }

    /// Names of every shape the guard writes, with what Java's `X500Principal.getName()`
    /// writes for each (checked against Java itself by
    /// `names_as_java_writes_them`, where Java is installed).
    fn names() -> Vec<(Vec<u8>, &'static str)> {
        let long = "x".repeat(200);
        let long: &'static str = Box::leak(long.into_boxed_str());
        vec![
            (
                name(&[
                    vec![ava(C, PRINTABLE, b"US")],
                    vec![ava(O, UTF8, b"Example, Inc.")],
                    vec![ava(CN, UTF8, b"alice")],
                ]),
                r"CN=alice,O=Example\, Inc.,C=US",
            ),
            // Multi-valued RDNs: their attributes in DER order, joined by `+`.
            (
                name(&[
                    vec![ava(O, UTF8, b"kafka-elect-leaders")],
                    vec![ava(OU, UTF8, b"ops"), ava(OU, UTF8, b"e2e")],
                    vec![ava(CN, UTF8, b"carol"), ava(UID, UTF8, b"c1")],
                ]),
                "CN=carol+UID=c1,OU=ops+OU=e2e,O=kafka-elect-leaders",
            ),
            // Every character Java escapes, anywhere in the value.
            (
                name(&[vec![ava(CN, UTF8, br#"a,b=c+d<e>f#g;h"i\j"#)]]),
                r#"CN=a\,b\=c\+d\<e\>f\#g\;h\"i\\j"#,
            ),
            (name(&[vec![ava(CN, UTF8, b"#lead")]]), r"CN=\#lead"),
            // Leading and trailing spaces and carriage returns, each escaped.
            (name(&[vec![ava(CN, UTF8, b"  two ")]]), r"CN=\ \ two\ "),
            (
                name(&[vec![ava(CN, UTF8, b" \r x\r")]]),
                "CN=\\ \\\r\\ x\\\r",
            ),
            (name(&[vec![ava(CN, UTF8, b"   ")]]), r"CN=\ \ \ "),
            (name(&[vec![ava(CN, UTF8, b"in side")]]), "CN=in side"),
            (name(&[vec![ava(CN, UTF8, b"nul\0x")]]), r"CN=nul\00x"),
            (name(&[vec![ava(CN, UTF8, b"")]]), "CN="),
            (
                name(&[vec![ava(CN, UTF8, b"tab\tnl\n@*_")]]),
                "CN=tab\tnl\n@*_",
            ),
            // Other string types, and characters outside ASCII.
            (
                name(&[
                    vec![ava(DC, IA5, b"com")],
                    vec![ava(DC, IA5, b"example")],
                    vec![ava(CN, T61, b"cafe")],
                ]),
                "CN=cafe,DC=example,DC=com",
            ),
            (
                name(&[vec![ava(CN, UTF8, "ünï ✓ 😀".as_bytes())]]),
                "CN=ünï ✓ 😀",
            ),
            (
                name(&[vec![
                    ava(&[2, 5, 4, 7], UTF8, b"L"),
                    ava(&[2, 5, 4, 8], UTF8, b"ST"),
                ]]),
                "L=L+ST=ST",
            ),
            (
                name(&[vec![ava(&[2, 5, 4, 9], UTF8, b"1 Main St")]]),
                "STREET=1 Main St",
            ),
            // Attributes without an RFC 2253 keyword: the OID, the value's DER in hex.
            (
                name(&[vec![ava(EMAIL, IA5, b"a@b.c")], vec![ava(CN, UTF8, b"x")]]),
                "CN=x,1.2.840.113549.1.9.1=#16056140622e63",
            ),
            (
                name(&[vec![ava(SURNAME, UTF8, b"Doe")]]),
                "2.5.4.4=#0c03446f65",
            ),
            (
                name(&[vec![ava(
                    &[1, 3, 6, 1, 4, 1, 99999, 7],
                    UTF8,
                    long.as_bytes(),
                )]]),
                "1.3.6.1.4.1.99999.7=#0c81c8LONG",
            ),
            (
                name(&[vec![ava(&[2, 999, 3], PRINTABLE, b"z")]]),
                "2.999.3=#13017a",
            ),
            // A known attribute whose value is not one of Java's strings: hex too.
            (name(&[vec![ava(CN, 0x02, b"\x05")]]), "CN=#020105"),
            (name(&[vec![ava(CN, 0x1c, b"\0\0\0a")]]), "CN=#1c0400000061"),
        ]
        .into_iter()
        .map(|(der, want)| {
            let want = want.replace("LONG", &"78".repeat(200));
            (der, Box::leak(want.into_boxed_str()) as &'static str)
        })
        .collect()
    }

    #[test]
    fn subjects_in_rfc_2253_as_java_writes_them() {
        for (der, want) in names() {
            assert_eq!(written(&der).as_deref(), Some(want), "{der:02x?}");
        }
        // Bytes Java would write as replacement characters: unknown, not another name.
        for (tag, value) in [
            (PRINTABLE, &b"caf\xe9"[..]),
            (T61, b"caf\xe9"),
            (IA5, b"\x80"),
            (UTF8, b"\xff"),
            (BMP, &bmp("alice")),
            (BMP, b"\x00a\x00"),
        ] {
            assert_eq!(written(&name(&[vec![ava(CN, tag, value)]])), None);
        }
        assert_eq!(written(&name(&[])), None, "an empty name");
        assert_eq!(certificate_subject(b"not a certificate"), None);
    }
    /// A certificate made by rcgen with this subject, in this order.
    fn certificate(dn: Vec<(rcgen::DnType, rcgen::DnValue)>) -> Vec<u8> {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        for (ty, value) in dn {
            params.distinguished_name.push(ty, value);
        }
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().to_vec()
    }

    /// Certificates with several attributes, string types and characters to escape, and
    /// the subject Java writes for each.
    fn certificates() -> Vec<(Vec<u8>, &'static str)> {
        use rcgen::{DnType, DnValue};
        let custom = |arcs: &[u64]| DnType::CustomDnType(arcs.to_vec());
        vec![
            (
                certificate(vec![
                    (
                        DnType::CountryName,
                        DnValue::PrintableString("US".try_into().unwrap()),
                    ),
                    (DnType::StateOrProvinceName, "Some State".into()),
                    (DnType::LocalityName, "Town".into()),
                    (DnType::OrganizationName, "Example, Inc.".into()),
                    (DnType::OrganizationalUnitName, "ops+dev".into()),
                    (DnType::CommonName, r#"alice "the" <admin>; #1 "#.into()),
                ]),
                r#"CN=alice \"the\" \<admin\>\; \#1\ ,OU=ops\+dev,O=Example\, Inc.,L=Town,ST=Some State,C=US"#,
            ),
            (
                certificate(vec![
                    (custom(DC), DnValue::Ia5String("org".try_into().unwrap())),
                    (
                        DnType::OrganizationName,
                        DnValue::TeletexString("Acme".try_into().unwrap()),
                    ),
                    (
                        DnType::OrganizationalUnitName,
                        DnValue::Ia5String("a=b".try_into().unwrap()),
                    ),
                    (custom(UID), "u-42".into()),
                    (
                        custom(EMAIL),
                        DnValue::Ia5String("zoe@example.org".try_into().unwrap()),
                    ),
                    (DnType::CommonName, "zoë".into()),
                ]),
                "CN=zoë,1.2.840.113549.1.9.1=#160f7a6f65406578616d706c652e6f7267,UID=u-42,\
                 OU=a\\=b,O=Acme,DC=org",
            ),
            (
                certificate(vec![
                    (
                        DnType::OrganizationalUnitName,
                        DnValue::UniversalString("ü".try_into().unwrap()),
                    ),
                    (DnType::CommonName, "#carol".into()),
                ]),
                r"CN=\#carol,OU=#1c04000000fc",
            ),
        ]
    }

    #[test]
    fn certificate_subjects_as_kafka_names_them() {
        for (der, want) in certificates() {
            assert_eq!(certificate_subject(&der).as_deref(), Some(want));
        }
        // A BMPString: Java 17 and later Javas write it otherwise.
        let bmp = certificate(vec![(
            rcgen::DnType::CommonName,
            rcgen::DnValue::BmpString("zoe".try_into().unwrap()),
        )]);
        assert_eq!(certificate_subject(&bmp), None);
    }

    /// The strongest proof: Java's own `X500Principal.getName()` (what Kafka's default
    /// principal builder calls, `ssl.principal.mapping.rules=DEFAULT`) on every name and
    /// certificate subject above writes what the guard writes. Skipped, with one line,
    /// where no `java` (17 or later) is installed.
    #[test]
    fn names_as_java_writes_them() {
        let java = std::process::Command::new("java").arg("-version").output();
        if !java.is_ok_and(|o| o.status.success()) {
            eprintln!("names_as_java_writes_them: skipped: no `java` on PATH");
            return;
        }
        let mut cases: Vec<(Vec<u8>, String)> = names()
            .into_iter()
            .map(|(der, want)| (der, want.to_owned()))
            .collect();
        for (der, want) in certificates() {
            let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
            cases.push((cert.subject().as_raw().to_vec(), want.to_owned()));
        }
        let dir = std::env::temp_dir().join(format!("guard-x500-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let source = dir.join("Names.java");
        std::fs::write(
            &source,
            "import java.nio.charset.StandardCharsets;\n\
             import java.util.HexFormat;\n\
             import javax.security.auth.x500.X500Principal;\n\
             public class Names {\n\
             \x20   public static void main(String[] args) {\n\
             \x20       HexFormat hex = HexFormat.of();\n\
             \x20       for (String a : args) {\n\
             \x20           String name = new X500Principal(hex.parseHex(a)).getName();\n\
             \x20           System.out.println(hex.formatHex(name.getBytes(StandardCharsets.UTF_8)));\n\
             \x20       }\n\
             \x20   }\n\
             }\n",
        )
        .unwrap();
        let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
        let out = std::process::Command::new("java")
            .arg(&source)
            .args(cases.iter().map(|(der, _)| hex(der)))
            .output()
            .unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            out.status.success(),
            "java: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lines: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
        assert_eq!(lines.len(), cases.len());
        for ((der, want), line) in cases.iter().zip(lines) {
            let bytes: Vec<u8> = (0..line.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&line[i..i + 2], 16).unwrap())
                .collect();
            let java = String::from_utf8(bytes).unwrap();
            assert_eq!(&java, want, "Java writes {der:02x?} otherwise");
            assert_eq!(written(der).as_deref(), Some(java.as_str()));
        }
    }
}
