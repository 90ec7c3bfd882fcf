//! The SASL mechanisms' client messages (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER): the name
//! each claims, as the broker will take it. Passwords, proofs and token signatures are
//! looked past, never kept; whether the broker accepted the claim is not known here (see
//! the parent, which trusts a name only then).

use serde::de::{Deserializer as _, Error as _, IgnoredAny, MapAccess, Visitor};

/// PLAIN (RFC 4616): `[authzid] NUL authcid NUL passwd`; the authentication identity, as
/// Kafka takes it. Nothing past the second NUL is looked at.
pub(super) fn plain_user(bytes: &[u8]) -> Option<String> {
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
pub(super) fn scram_user(bytes: &[u8]) -> Option<String> {
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
pub(super) fn oauthbearer_user(bytes: &[u8]) -> Option<String> {
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
pub(super) fn jwt_sub(payload: &[u8]) -> Option<String> {
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
pub(super) fn base64url(text: &str) -> Option<Vec<u8>> {
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
