//! The broker's ApiVersions answer capped in place, so that a client never picks a
//! version of an API the guard polices newer than the guard reads (see `versions`).

use kafka_elect_leaders::Pending;

use crate::audit::log;
use crate::filter::{Answer, Filter, OnResponse, Session};
use crate::versions::{cap_elect_leaders, API_VERSIONS};

pub(crate) struct ApiVersions;

impl Filter for ApiVersions {
    fn name(&self) -> &'static str {
        "api-versions"
    }

    fn reads_response(&self, api_key: i16) -> bool {
        api_key == API_VERSIONS
    }

    /// An answer that cannot be read goes through unchanged, with a line saying what that
    /// risks.
    fn response(&self, session: &Session<'_>, request: Pending, answer: &mut Answer) -> OnResponse {
        if let Err(field) = cap_elect_leaders(answer.frame_mut(), request.api_version) {
            log(format_args!(
                "{} -> {}: the broker's ApiVersions answer (v{}, correlation id {}) cannot be \
                 read at {field}: forwarded unchanged; should the client pick an ElectLeaders \
                 version newer than the guard reads, its connection will be closed",
                session.conn.client,
                session.conn.upstream,
                request.api_version,
                request.correlation_id
            ));
        }
        OnResponse::Pass
    }
}
