//! Who is asking: a connection's principal, as the broker will know it.
//!
//! - With SASL, the user name the client authenticates as: for PLAIN the authentication
//!   identity, for SCRAM-SHA-256/512 the `n=` of the client's first message. The guard reads
//!   it from the SaslAuthenticate requests going through, and trusts it only once the broker
//!   has answered the authentication with success (for SCRAM, the answer to the client's
//!   final message). Passwords and proofs are looked past, never kept.
//! - With a client certificate (mTLS) and no SASL, the certificate's subject, written as
//!   Kafka's default principal builder does (RFC 2253, the most specific name first:
//!   `CN=alice,OU=ops,O=example`).
//! - Otherwise (plaintext or TLS without a certificate, other SASL mechanisms such as
//!   OAUTHBEARER and GSSAPI): unknown, and a rule that needs a principal refuses, failing
//!   closed.
//!
//! SaslHandshake (17) and SaslAuthenticate (36) frames are forwarded unchanged; this only
//! reads them.

use std::sync::Mutex;

use crate::owed::Reader;

/// SaslHandshake's API key.
pub const SASL_HANDSHAKE: i16 = 17;
/// SaslAuthenticate's API key.
pub const SASL_AUTHENTICATE: i16 = 36;

/// A SASL mechanism the guard can read a user name from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mechanism {
    Plain,
    Scram,
    /// Any other: the principal stays unknown.
    Other,
}

#[derive(Debug, Default)]
struct State {
    /// Trusted: from the certificate, or a SASL authentication the broker accepted.
    principal: Option<String>,
    mechanism: Option<Mechanism>,
    /// The name claimed, not yet accepted by the broker.
    claimed: Option<String>,
    /// SaslAuthenticate requests since the handshake: SCRAM succeeds on the second.
    steps: u32,
    /// The correlation id of the SaslAuthenticate request whose success authenticates.
    deciding: Option<i32>,
}

/// The principal of one connection; shared by its two directions.
#[derive(Debug, Default)]
pub struct Identity(Mutex<State>);

impl Identity {
    /// A connection whose client presented a certificate with this subject (or none).
    pub fn new(certificate_subject: Option<String>) -> Identity {
        Identity(Mutex::new(State {
            principal: certificate_subject,
            ..State::default()
        }))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        match self.0.lock() {
            Ok(state) => state,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// The principal trusted now, if any.
    pub fn principal(&self) -> Option<String> {
        self.state().principal.clone()
    }

    /// A request going to the broker: SASL ones are read (`frame` with its size prefix).
    pub fn request(&self, frame: &[u8], api_key: i16, api_version: i16, correlation_id: i32) {
        match api_key {
            SASL_HANDSHAKE => {
                let mechanism = sasl_handshake_mechanism(frame);
                let mut state = self.state();
                state.mechanism = Some(match mechanism.as_deref() {
                    Some(b"PLAIN") => Mechanism::Plain,
                    Some(b"SCRAM-SHA-256" | b"SCRAM-SHA-512") => Mechanism::Scram,
                    _ => Mechanism::Other,
                });
                state.claimed = None;
                state.steps = 0;
                state.deciding = None;
            }
            SASL_AUTHENTICATE => {
                let mut state = self.state();
                state.steps = state.steps.saturating_add(1);
                let bytes = sasl_auth_bytes(frame, api_version);
                match (state.mechanism, state.steps) {
                    (Some(Mechanism::Plain), 1) => {
                        state.claimed = bytes.and_then(plain_user);
                        state.deciding = Some(correlation_id);
                    }
                    (Some(Mechanism::Scram), 1) => {
                        state.claimed = bytes.and_then(scram_user);
                    }
                    (Some(Mechanism::Scram), 2) => state.deciding = Some(correlation_id),
                    _ => {}
                }
            }
            _ => {}
        }
    }

    /// The broker's answer to a SaslAuthenticate request: the name claimed becomes the
    /// principal when this answer is the authentication's success.
    pub fn authenticate_answer(&self, frame: &[u8], api_version: i16, correlation_id: i32) {
        let mut state = self.state();
        if state.deciding != Some(correlation_id) {
            // An intermediate step (SCRAM's server-first) or a later re-authentication's.
            if sasl_error_code(frame, api_version).is_some_and(|code| code != 0) {
                state.claimed = None;
            }
            return;
        }
        state.deciding = None;
        let claimed = state.claimed.take();
        if sasl_error_code(frame, api_version) == Some(0) {
            if let Some(name) = claimed {
                state.principal = Some(name);
            }
        }
    }
}

/// SaslHandshake's `Mechanism` (v0 and v1: an int16-length string after a v1 header).
fn sasl_handshake_mechanism(frame: &[u8]) -> Option<Vec<u8>> {
    let mut r = Reader::new(frame);
    r.skip(4 + 2 + 2 + 4)?;
    r.skip_string()?;
    let len = usize::try_from(r.int16()?).ok()?;
    r.take(len).map(<[u8]>::to_vec)
}

/// SaslAuthenticate's `AuthBytes` (v0-v1: int32 length; v2: flexible, compact bytes).
fn sasl_auth_bytes(frame: &[u8], api_version: i16) -> Option<&[u8]> {
    let flexible = api_version >= 2;
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

/// SaslAuthenticate's answer's `ErrorCode` (v2: after the response header's tagged fields).
fn sasl_error_code(frame: &[u8], api_version: i16) -> Option<i16> {
    let mut r = Reader::new(frame);
    r.skip(4 + 4)?;
    if api_version >= 2 {
        r.skip_tagged_fields()?;
    }
    r.int16()
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

/// SCRAM's client-first message (RFC 5802): `gs2-header n=NAME,r=NONCE[,...]`; the name,
/// with `=2C` and `=3D` decoded.
fn scram_user(bytes: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?;
    // The GS2 header: a channel binding flag and an optional authzid, then the message.
    let mut fields = text.splitn(3, ',');
    let _flag = fields.next()?;
    let _authzid = fields.next()?;
    let message = fields.next()?;
    let name = message.split(',').next()?.strip_prefix("n=")?;
    let name = name.replace("=2C", ",").replace("=3D", "=");
    (!name.is_empty()).then_some(name)
}

/// A certificate's subject as Kafka's default principal builder writes it: RFC 2253, the
/// most specific name first. None when the certificate cannot be read.
pub fn certificate_subject(der: &[u8]) -> Option<String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let mut rdns = Vec::new();
    for rdn in cert.subject().iter() {
        let mut parts = Vec::new();
        for attr in rdn.iter() {
            let oid = attr.attr_type().to_id_string();
            let key = match oid.as_str() {
                "2.5.4.3" => "CN".to_owned(),
                "2.5.4.11" => "OU".to_owned(),
                "2.5.4.10" => "O".to_owned(),
                "2.5.4.7" => "L".to_owned(),
                "2.5.4.8" => "ST".to_owned(),
                "2.5.4.6" => "C".to_owned(),
                "2.5.4.9" => "STREET".to_owned(),
                "0.9.2342.19200300.100.1.25" => "DC".to_owned(),
                "0.9.2342.19200300.100.1.1" => "UID".to_owned(),
                _ => oid,
            };
            let value = attr.as_str().ok()?;
            parts.push(format!("{key}={}", escape_rfc2253(value)));
        }
        rdns.push(parts.join("+"));
    }
    rdns.reverse();
    Some(rdns.join(","))
}

fn escape_rfc2253(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let last = value.chars().count().saturating_sub(1);
    for (i, c) in value.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == '#' || c == ' '))
            || (i == last && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn handshake(mechanism: &str, id: i32) -> Vec<u8> {
        let mut body = i16::try_from(mechanism.len())
            .unwrap()
            .to_be_bytes()
            .to_vec();
        body.extend(mechanism.as_bytes());
        request(SASL_HANDSHAKE, 1, id, &body)
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

    fn answer(version: i16, id: i32, error_code: i16) -> Vec<u8> {
        let mut f = vec![0; 4];
        f.extend(id.to_be_bytes());
        if version >= 2 {
            f.push(0);
        }
        f.extend(error_code.to_be_bytes());
        f.extend((-1i16).to_be_bytes());
        let size = u32::try_from(f.len() - 4).unwrap();
        f[..4].copy_from_slice(&size.to_be_bytes());
        f
    }

    /// Runs a SASL exchange: the handshake, then each client message and the broker's
    /// answer to it (an error code); the principal at the end.
    fn exchange(mechanism: &str, version: i16, steps: &[(&[u8], i16)]) -> Option<String> {
        let identity = Identity::new(None);
        identity.request(&handshake(mechanism, 1), SASL_HANDSHAKE, 1, 1);
        for (i, (bytes, code)) in steps.iter().enumerate() {
            let id = i32::try_from(i).unwrap() + 2;
            identity.request(
                &authenticate(version, id, bytes),
                SASL_AUTHENTICATE,
                version,
                id,
            );
            assert_eq!(
                identity.principal(),
                None,
                "trusted before the broker's answer"
            );
            identity.authenticate_answer(&answer(version, id, *code), version, id);
        }
        identity.principal()
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

    #[test]
    fn other_mechanisms_leave_the_principal_unknown() {
        assert_eq!(
            exchange("OAUTHBEARER", 2, &[(b"n,,\x01auth=Bearer x\x01\x01", 0)]),
            None
        );
        assert_eq!(exchange("GSSAPI", 2, &[(b"\x60\x82", 0), (b"", 0)]), None);
        // A certificate's principal stays when no SASL succeeds.
        let identity = Identity::new(Some("CN=alice".into()));
        identity.request(&handshake("PLAIN", 1), SASL_HANDSHAKE, 1, 1);
        identity.request(&authenticate(2, 2, b"\0bob\0pw"), SASL_AUTHENTICATE, 2, 2);
        identity.authenticate_answer(&answer(2, 2, 58), 2, 2);
        assert_eq!(identity.principal().as_deref(), Some("CN=alice"));
    }

    #[test]
    fn malformed_sasl_frames_claim_nothing() {
        // Cut anywhere before the end of the auth bytes (the last byte is the tagged fields).
        for cut in 0..authenticate(2, 2, b"\0alice\0pw").len() - 1 {
            let identity = Identity::new(None);
            identity.request(&handshake("PLAIN", 1), SASL_HANDSHAKE, 1, 1);
            let frame = authenticate(2, 2, b"\0alice\0pw");
            identity.request(&frame[..cut], SASL_AUTHENTICATE, 2, 2);
            identity.authenticate_answer(&answer(2, 2, 0), 2, 2);
            assert_eq!(identity.principal(), None, "cut at {cut}");
        }
        assert_eq!(plain_user(b"\0alice"), None, "no password");
        assert_eq!(scram_user(b"n,,r=nonce"), None);
    }

    #[test]
    fn subjects_in_rfc_2253() {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CountryName, "US");
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "Example, Inc.");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "alice");
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        assert_eq!(
            certificate_subject(cert.der()).as_deref(),
            Some("CN=alice,O=Example\\, Inc.,C=US")
        );
        assert_eq!(certificate_subject(b"not a certificate"), None);
    }
}
