//! The principal: SASL requests read for the name the broker will take the client as, a
//! mechanism the guard cannot read answered here, and a connection on the guard's own
//! broker identity checked against the policy before each request (see `identity`).

use kafka_elect_leaders::{Pending, RequestPeek};

use crate::audit::log;
use crate::close::Close;
use crate::filter::{Answer, Filter, OnRequest, OnResponse, Request, Respond, Session};
use crate::identity::{Action, SASL_AUTHENTICATE};

pub(crate) struct Sasl;

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

    fn request(&self, session: &Session<'_>, request: &mut Request) -> OnRequest {
        let peek: RequestPeek = *request.peek();
        match session
            .identity
            .request(request.frame(), &peek, || session.shared.policy())
        {
            Action::Forward => OnRequest::Pass,
            Action::Answer(reply, why) => {
                log(format_args!(
                    "{} -> {}: {why}",
                    session.conn.client, session.conn.upstream
                ));
                OnRequest::Answer(Respond::frame(reply))
            }
            Action::Close(why) => OnRequest::Close(Close::new(why)),
        }
    }

    fn response(&self, session: &Session<'_>, request: Pending, answer: &mut Answer) -> OnResponse {
        session.identity.authenticate_answer(
            answer.frame(),
            request.api_version,
            request.correlation_id,
        );
        OnResponse::Pass
    }
}
