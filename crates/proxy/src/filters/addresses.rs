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
        match session.addresses.rewrite(
            answer.frame_bytes(),
            request.api_key,
            request.api_version,
            session.conn,
        ) {
            Some(rewritten) => {
                session.metrics.rewrote();
                OnResponse::Splice {
                    head: rewritten.head,
                    tail_from: rewritten.tail_from,
                }
            }
            None => OnResponse::Pass,
        }
    }
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::metadata_response::MetadataResponseBroker;
    use kafka_protocol::messages::{BrokerId, MetadataResponse, ResponseHeader};
    use kafka_protocol::protocol::{Decodable, HeaderVersion, StrBytes};

    use super::*;
    use crate::addresses::{DESCRIBE_CLUSTER, FIND_COORDINATOR, METADATA};
    use crate::filter::testing::{answer, kafka_response, Conn};
    use crate::{Config, Route};

    const VERSION: i16 = 12;

    /// A guard with one route, 127.0.0.1:19092 in front of the broker at 10.0.0.1:9092.
    fn guard() -> Conn {
        let mut config = Config::default();
        config.routes.push(Route {
            listen: "127.0.0.1:19092".parse().unwrap(),
            upstream: "10.0.0.1:9092".parse().unwrap(),
        });
        Conn::new(&config)
    }

    /// A Metadata answer (correlation id 5) naming one broker, node 1 at `host:9092`.
    fn metadata(host: &'static str) -> Vec<u8> {
        let mut body = MetadataResponse::default();
        body.brokers = vec![MetadataResponseBroker::default()
            .with_node_id(BrokerId(1))
            .with_host(StrBytes::from_static_str(host))
            .with_port(9092)];
        kafka_response(VERSION, 5, &body)
    }

    fn read(conn: &Conn, api_key: i16, frame: &[u8]) -> OnResponse {
        let pending = Pending {
            api_key,
            api_version: VERSION,
            correlation_id: 5,
        };
        Addresses.response(&conn.session(), pending, &mut answer(frame))
    }

    #[test]
    fn reads_the_three_answers_that_carry_addresses_only() {
        for api_key in -1..200 {
            let carries = [METADATA, FIND_COORDINATOR, DESCRIBE_CLUSTER].contains(&api_key);
            assert_eq!(
                Addresses.reads_response(api_key),
                carries,
                "API key {api_key}"
            );
            assert!(!Addresses.reads_request(api_key));
        }
    }

    /// A broker behind a route is given as the route's listener: the client gets a new
    /// head, then the rest of the broker's answer.
    #[test]
    fn a_routed_broker_is_rewritten_to_its_listener() {
        let conn = guard();
        let frame = metadata("10.0.0.1");
        let (head, tail_from) = match read(&conn, METADATA, &frame) {
            OnResponse::Splice { head, tail_from } => (head, tail_from),
            _ => panic!("not rewritten"),
        };
        let mut whole = head.to_vec();
        whole.extend_from_slice(&frame[tail_from..]);
        let mut body = bytes::Bytes::copy_from_slice(&whole[4..]);
        ResponseHeader::decode(&mut body, MetadataResponse::header_version(VERSION)).unwrap();
        let rewritten = MetadataResponse::decode(&mut body, VERSION).unwrap();
        let broker = &rewritten.brokers[0];
        assert_eq!((broker.host.as_str(), broker.port), ("127.0.0.1", 19092));
    }

    /// A broker with no route (and no `dynamic-listen`), or the same bytes as the answer
    /// to another API: passed on as they came.
    #[test]
    fn anything_else_passes() {
        let conn = guard();
        let elsewhere = metadata("10.0.0.2");
        assert!(matches!(
            read(&conn, METADATA, &elsewhere),
            OnResponse::Pass
        ));
        let routed = metadata("10.0.0.1");
        assert!(matches!(read(&conn, 18, &routed), OnResponse::Pass));
    }
}
