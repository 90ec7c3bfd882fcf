//! The principal: SASL requests read for the name the broker will take the client as, a
//! mechanism the guard cannot read answered here, and a connection on the guard's own
//! broker identity checked against the policy before each request (see `identity`).

use kafka_elect_leaders::{Pending, RequestPeek};

use crate::core::close::Close;
use crate::filter::{Filter, OnRequest, OnResponse, Request, Respond, Response, Session};
use crate::filters::sasl::identity::{Action, SASL_AUTHENTICATE};
use crate::observability::diag::log;

/// Follows the SASL exchange to learn the principal the broker authenticated, for the rules
/// that name principals.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sasl;

impl Filter for Sasl {
    fn name(&self) -> &'static str {
        "sasl"
    }

    /// Every request: the first must be a Kafka request, and on a lent connection each is
    /// checked.
    fn reads_request(&self, _: i16) -> bool {
        true
    }

    fn reads_response(&self, api_key: i16) -> bool {
        api_key == SASL_AUTHENTICATE
    }

    fn request(&self, session: &Session, request: &mut Request) -> OnRequest {
        let peek: RequestPeek = *request.peek();
        match session
            .parts()
            .identity
            .request(request.frame(), &peek, || session.policy())
        {
            Action::Forward => OnRequest::Pass,
            Action::Reply(reply, why) => {
                log(format_args!(
                    "{} -> {}: {why}",
                    session.conn().client,
                    session.conn().upstream
                ));
                OnRequest::Answer(Respond::frame(reply))
            }
            Action::Close(why) => OnRequest::Close(Close::new(why)),
        }
    }

    fn response(&self, session: &Session, request: Pending, answer: &mut Response) -> OnResponse {
        session.parts().identity.authenticate_answer(
            answer.frame(),
            request.api_version,
            request.correlation_id,
        );
        OnResponse::Pass
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use kafka_protocol::messages::{
        SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
        SaslHandshakeResponse,
    };
    use kafka_protocol::protocol::{Decodable, StrBytes};

    use super::*;
    use crate::filter::testing::{
        answer, kafka_request, kafka_response, kind, request, written, Conn,
    };
    use crate::Config;

    const SASL_HANDSHAKE: i16 = 17;
    /// SaslAuthenticate's version in these exchanges (flexible).
    const AUTH_VERSION: i16 = 2;

    fn handshake(mechanism: &'static str) -> Vec<u8> {
        let body =
            SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mechanism));
        kafka_request(SASL_HANDSHAKE, 1, 1, &body)
    }

    fn authenticate(correlation_id: i32, bytes: &'static [u8]) -> Vec<u8> {
        let body = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from_static(bytes));
        kafka_request(SASL_AUTHENTICATE, AUTH_VERSION, correlation_id, &body)
    }

    fn decide(conn: &Conn, frame: &[u8]) -> OnRequest {
        Sasl.request(&conn.session(), &mut request(frame))
    }

    /// The broker's answer to the SaslAuthenticate request `correlation_id`.
    fn broker_answers(conn: &Conn, correlation_id: i32, error_code: i16) {
        let body = SaslAuthenticateResponse::default().with_error_code(error_code);
        let frame = kafka_response(AUTH_VERSION, correlation_id, &body);
        let pending = Pending {
            api_key: SASL_AUTHENTICATE,
            api_version: AUTH_VERSION,
            correlation_id,
        };
        let next = Sasl.response(&conn.session(), pending, &mut answer(&frame));
        assert!(matches!(next, OnResponse::Pass));
    }

    /// A PLAIN exchange for alice: the handshake and her credentials, passed on.
    fn plain_exchange(conn: &Conn) {
        assert!(matches!(decide(conn, &handshake("PLAIN")), OnRequest::Pass));
        let credentials = authenticate(2, b"\0alice\0s3cret");
        assert!(matches!(decide(conn, &credentials), OnRequest::Pass));
    }

    #[test]
    fn reads_every_request_and_the_answers_to_sasl_authenticate() {
        for api_key in -1..200 {
            assert!(Sasl.reads_request(api_key));
            assert_eq!(Sasl.reads_response(api_key), api_key == SASL_AUTHENTICATE);
        }
    }

    /// The name the client claims is its principal only once the broker says the
    /// authentication succeeded.
    #[test]
    fn the_principal_is_learnt_after_the_brokers_success_only() {
        let conn = Conn::new(&Config::default());
        plain_exchange(&conn);
        assert_eq!(
            conn.session().principal(),
            None,
            "claimed, not yet accepted"
        );
        broker_answers(&conn, 2, 0);
        assert_eq!(conn.session().principal().as_deref(), Some("alice"));
    }

    #[test]
    fn a_refused_authentication_leaves_the_principal_unknown() {
        let conn = Conn::new(&Config::default());
        plain_exchange(&conn);
        // SASL_AUTHENTICATION_FAILED.
        broker_answers(&conn, 2, 58);
        assert_eq!(conn.session().principal(), None);
    }

    /// A mechanism whose principal the guard cannot read is answered by the guard
    /// (UNSUPPORTED_SASL_MECHANISM, naming those it reads), never forwarded.
    #[test]
    fn a_mechanism_the_guard_cannot_read_is_answered_here() {
        let conn = Conn::new(&Config::default());
        let respond = match decide(&conn, &handshake("GSSAPI")) {
            OnRequest::Answer(respond) => respond,
            other => panic!("{}", kind(&other)),
        };
        let reply = written(respond, None).unwrap();
        // Response header v0: the correlation id alone.
        assert_eq!(reply[4..8], 1i32.to_be_bytes());
        let mut body = Bytes::copy_from_slice(&reply[8..]);
        let answer = SaslHandshakeResponse::decode(&mut body, 1).unwrap();
        assert_eq!(answer.error_code, 33);
        assert!(answer.mechanisms.iter().any(|m| m.as_str() == "PLAIN"));
    }

    /// A first frame that is no Kafka request (a bare GSSAPI token) closes the connection.
    #[test]
    fn a_first_frame_that_is_no_kafka_request_closes_the_connection() {
        let conn = Conn::new(&Config::default());
        let token = [
            0, 0, 0, 12, 0x60, 0x82, 0x02, 0x5c, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12,
        ];
        assert!(matches!(decide(&conn, &token), OnRequest::Close(_)));
    }
}
