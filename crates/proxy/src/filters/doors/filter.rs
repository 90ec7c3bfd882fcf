//! The first filter: every API key the guard has decided nothing for is closed here, from
//! the one table of every Kafka API (`crate::filters::doors::apis`). While any rule is set, a request of
//! an API only brokers and controllers send ([`Class::Closed`]: WriteTxnMarkers, the
//! quorum's, the share coordinator's...), or of a key Kafka 4.4 does not define and the
//! operator has not forwarded by number (`rules.forward-unknown-api`), closes the
//! connection with nothing forwarded, and leaves an audit line (verdict `closed`). Under
//! `rules.log-only` it closes too: log-only spares the decisions on what clients may
//! send, not what no client sends.
//!
//! Kafka's broker answers none of these on a client listener only when ACLs refuse the
//! cluster action; a cluster without ACLs (or a client that holds the guard's own
//! credentials) takes them, and a transaction marker from a client hides a producer's
//! committed records from `read_committed` consumers.

use kafka_elect_leaders::RequestPeek;
use serde_json::json;

use crate::core::close::{Close, CloseReason};
use crate::filter::{Filter, OnRequest, Request, Session};
use crate::filters::doors::apis::{class_of, door_of, Class};
use crate::observability::audit::{rfc3339_now, ConnInfo};
use crate::observability::diag::log;

/// Closes, under any rule, every API the guard never forwards (those only brokers and
/// controllers send, and keys the guard has no decision for): `crate::filters::doors::apis`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Doors;

impl Filter for Doors {
    fn name(&self) -> &'static str {
        "doors"
    }

    /// The closed APIs, and every key the table does not know.
    fn reads_request(&self, api_key: i16) -> bool {
        matches!(class_of(api_key), None | Some(Class::Closed))
    }

    fn request(&self, session: &Session, request: &mut Request) -> OnRequest {
        let peek = *request.peek();
        let policy = session.policy();
        let door = door_of(peek.api_key);
        if !policy.has_rules()
            || (door.is_none() && policy.forwarded_unknown_apis.contains(&peek.api_key))
        {
            return OnRequest::Pass;
        }
        let why = match door {
            Some(door) => format!(
                "the client sent {} (api key {}), which only brokers and controllers send \
                 ({})",
                door.name, door.key, door.why
            ),
            None => format!(
                "the client sent api key {}, which Kafka 4.4 does not define and the guard \
                 has no decision for (rules.forward-unknown-api forwards it)",
                peek.api_key
            ),
        };
        let principal = session.principal();
        let line = audit_line(
            session.conn(),
            principal.as_deref(),
            client_id(request.frame()),
            &peek,
            &why,
        );
        if let Err(e) = session.parts().audit.record_line(line) {
            // Closed all the same: nothing of it is forwarded, whatever the log says.
            log(format_args!(
                "{} -> {}: api key {} (correlation id {}) closed without an audit line: {}",
                session.conn().client,
                session.conn().upstream,
                peek.api_key,
                peek.correlation_id,
                e.reason()
            ));
        }
        OnRequest::Close(Close::of(
            CloseReason::Refused,
            format!(
                "{why} (correlation id {}): never forwarded while the guard has rules",
                peek.correlation_id
            ),
        ))
    }
}

/// The request header's client id (after key, version and correlation id, an i16 length;
/// negative: null), when the frame holds it whole.
fn client_id(frame: &[u8]) -> Option<&[u8]> {
    let len = i16::from_be_bytes(frame.get(12..14)?.try_into().ok()?);
    let len = usize::try_from(len).ok()?;
    frame.get(14..14 + len)
}

/// Bytes of a client id an audit line shows, at most.
const SHOWN_ID: usize = 256;

/// The audit line of a closed request: where it came from, what it was, `"verdict":
/// "closed"`, `"rules": ["closed-api"]` and why.
fn audit_line(
    conn: &ConnInfo,
    principal: Option<&str>,
    client_id: Option<&[u8]>,
    peek: &RequestPeek,
    why: &str,
) -> String {
    // A client id is up to 32 KiB: the line shows its first SHOWN_ID bytes.
    let shown_id = client_id.map(
        |id| match std::str::from_utf8(&id[..id.len().min(SHOWN_ID)]) {
            Ok(text) => json!(text),
            Err(_) => json!({ "hex": id.iter().map(|b| format!("{b:02x}")).collect::<String>() }),
        },
    );
    let record = json!({
        "time": rfc3339_now(),
        "listener": conn.listener.to_string(),
        "client": conn.client.to_string(),
        "upstream": conn.upstream.to_string(),
        "client_id": shown_id,
        "principal": principal,
        "api_key": peek.api_key,
        "api_name": door_of(peek.api_key).map(|door| door.name),
        "version": peek.api_version,
        "correlation_id": peek.correlation_id,
        "verdict": "closed",
        "rules": ["closed-api"],
        "message": why,
    });
    let mut line = record.to_string();
    line.push('\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::testing::{kind, request, Conn};
    use crate::filters::elect::policy::Policy;
    use crate::Config;

    fn guard(policy: Policy) -> Conn {
        Conn::new(&Config {
            policy,
            ..Config::default()
        })
    }

    fn deny_unclean() -> Policy {
        Policy {
            deny_unclean: true,
            ..Policy::default()
        }
    }

    /// A request header alone (no body: the header decides): `api_key` v0, correlation id
    /// 9, client id "mallory".
    fn header(api_key: i16) -> Vec<u8> {
        let mut frame = vec![0, 0, 0, 0];
        frame.extend_from_slice(&api_key.to_be_bytes());
        frame.extend_from_slice(&0i16.to_be_bytes());
        frame.extend_from_slice(&9i32.to_be_bytes());
        frame.extend_from_slice(&7i16.to_be_bytes());
        frame.extend_from_slice(b"mallory");
        let size = (frame.len() - 4) as u32;
        frame[..4].copy_from_slice(&size.to_be_bytes());
        frame
    }

    fn decide(conn: &Conn, frame: &[u8]) -> OnRequest {
        Doors.request(&conn.session(), &mut request(frame))
    }

    /// WriteTxnMarkers, the share coordinator's and the quorum's APIs close the connection
    /// under any rule, log-only included; with no rule the guard forwards everything.
    #[test]
    fn broker_only_apis_close_the_connection() {
        let log_only = Policy {
            log_only: true,
            ..deny_unclean()
        };
        for key in [27, 81, 83, 94, 4, 63] {
            assert!(Doors.reads_request(key));
            for policy in [deny_unclean(), log_only.clone()] {
                match decide(&guard(policy), &header(key)) {
                    OnRequest::Close(close) => {
                        assert_eq!(close.reason(), CloseReason::Refused);
                        assert!(
                            close
                                .to_string()
                                .contains("only brokers and controllers send"),
                            "{close}"
                        );
                    }
                    other => panic!("key {key}: {}", kind(&other)),
                }
            }
            assert!(matches!(
                decide(&guard(Policy::default()), &header(key)),
                OnRequest::Pass
            ));
        }
        let close = match decide(&guard(deny_unclean()), &header(27)) {
            OnRequest::Close(close) => close,
            other => panic!("{}", kind(&other)),
        };
        assert!(
            close.to_string().starts_with(
                "the client sent WriteTxnMarkers (api key 27), which only brokers and \
                 controllers send"
            ),
            "{close}"
        );
    }

    /// A key Kafka 4.4 does not define is closed, unless the operator forwards it by number.
    #[test]
    fn unknown_keys_are_closed_unless_forwarded() {
        for key in [95, 200, 1000, i16::MAX, -1, i16::MIN] {
            assert!(Doors.reads_request(key));
            match decide(&guard(deny_unclean()), &header(key)) {
                OnRequest::Close(close) => {
                    assert_eq!(close.reason(), CloseReason::Refused);
                    assert!(close.to_string().contains("does not define"), "{close}");
                }
                other => panic!("key {key}: {}", kind(&other)),
            }
        }
        let mut policy = deny_unclean();
        policy.forwarded_unknown_apis.insert(95);
        assert!(matches!(
            decide(&guard(policy.clone()), &header(95)),
            OnRequest::Pass
        ));
        assert!(matches!(
            decide(&guard(policy), &header(96)),
            OnRequest::Close(_)
        ));
    }

    /// The APIs clients send are not this filter's: it never sees them.
    #[test]
    fn reads_only_closed_and_unknown_keys() {
        for key in [0, 1, 3, 18, 19, 21, 43, 44, 45, 78, 93] {
            assert!(!Doors.reads_request(key), "key {key}");
        }
    }

    /// The audit line names the API, the client id and the verdict.
    #[test]
    fn a_closed_request_is_audited() {
        let conn = ConnInfo {
            client: "127.0.0.1:5000".parse().unwrap(),
            listener: "127.0.0.1:9092".parse().unwrap(),
            local: "127.0.0.1:9092".parse().unwrap(),
            upstream: "127.0.0.1:19092".parse().unwrap(),
        };
        let frame = header(27);
        let peek = RequestPeek {
            size: frame.len() - 4,
            api_key: 27,
            api_version: 0,
            correlation_id: 9,
        };
        let line = audit_line(&conn, Some("alice"), client_id(&frame), &peek, "why");
        assert!(line.ends_with('\n'));
        let record: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(record["api_name"], "WriteTxnMarkers");
        assert_eq!(record["client_id"], "mallory");
        assert_eq!(record["principal"], "alice");
        assert_eq!(record["verdict"], "closed");
        assert_eq!(record["rules"][0], "closed-api");
        assert_eq!(record["correlation_id"], 9);
        assert_eq!(client_id(&frame[..16]), None);
    }
}
