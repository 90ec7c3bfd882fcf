//! Kafka's SASL frames, as the guard reads and answers them: the mechanism a SaslHandshake
//! names, the bytes a SaslAuthenticate carries, the error code of the broker's answer, and
//! the guard's own refusal of a mechanism. Only where the bytes are: what they mean to each
//! mechanism is in `mechanisms`, and what the connection does with them in the parent.

use bytes::Bytes;

use crate::core::response_due::Reader;

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

/// Kafka's SaslHandshake error response (v0 and v1 alike): `UNSUPPORTED_SASL_MECHANISM` and
/// the mechanisms the guard reads.
pub(super) fn handshake_refusal(correlation_id: i32) -> Bytes {
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
pub(super) fn sasl_handshake_mechanism(frame: &[u8]) -> Option<&[u8]> {
    let mut r = Reader::new(frame);
    r.skip(4 + 2 + 2 + 4)?;
    r.skip_string()?;
    let len = usize::try_from(r.int16()?).ok()?;
    r.take(len)
}

/// SaslAuthenticate's `AuthBytes` (v0-v1: int32 length; v2: flexible, compact bytes).
pub(super) fn sasl_auth_bytes(frame: &[u8], api_version: i16) -> Option<&[u8]> {
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
pub(super) fn sasl_answer(frame: &[u8], api_version: i16) -> Option<(i16, bool)> {
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
