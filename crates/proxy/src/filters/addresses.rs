//! Broker addresses in Metadata, FindCoordinator and DescribeCluster answers rewritten to
//! the guard's listeners (see `crate::addresses`, which holds the routes and decodes).

use kafka_elect_leaders::Pending;

use crate::addresses::Addresses as Routes;
use crate::filter::{Answer, Filter, OnResponse, Session};

pub(crate) struct Addresses;

impl Filter for Addresses {
    fn name(&self) -> &'static str {
        "addresses"
    }

    fn reads_response(&self, api_key: i16) -> bool {
        Routes::carries_addresses(api_key)
    }

    fn response(&self, session: &Session<'_>, request: Pending, answer: &mut Answer) -> OnResponse {
        let shared = session.shared;
        match shared.addresses.rewrite(
            answer.frame_bytes(),
            request.api_key,
            request.api_version,
            session.conn,
        ) {
            Some(rewritten) => {
                shared.metrics.rewrote();
                OnResponse::Splice {
                    head: rewritten.head,
                    tail_from: rewritten.tail_from,
                }
            }
            None => OnResponse::Pass,
        }
    }
}
