//! Tests of the principal's rules and of the SASL readers: exchanges of every mechanism and
//! version against the broker's answers, refusals, and frames that claim nothing.

use super::super::mechanisms::{base64url, jwt_sub};
use super::*;
use crate::core::response_due::Reader;
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
    let steps: Vec<(&[u8], i16, &[u8])> = steps.iter().map(|&(b, c)| (b, c, &b""[..])).collect();
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
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
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
        let Action::Reply(frame, why) = send(&identity, &handshake(mechanism, 5)) else {
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
        why.contains("CN=bob") && why.contains("(rules.allow-principal)") && !why.contains("--"),
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
    // Without rules.allow-principal, in log-only, or when the identity is not lent: on.
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
