//! Broker addresses rewritten to the guard's listeners in the answers that carry them:
//! Metadata, FindCoordinator and DescribeCluster (their lists of brokers), Produce, Fetch,
//! ShareFetch and ShareAcknowledge (their node endpoints), DescribeQuorum (its controllers'
//! listeners). See `crate::filters::addresses`, which holds the routes and decodes.

use kafka_elect_leaders::Pending;

use super::routes::Routes;
use crate::filter::{Filter, OnResponse, Response, Session};

/// Rewrites the brokers' addresses in the answers that carry them (Metadata,
/// FindCoordinator, DescribeCluster, DescribeQuorum, and the KIP-951 node endpoints of
/// Produce, Fetch, ShareFetch and ShareAcknowledge) to the guard's listeners, so that
/// clients never leave the guard.
#[derive(Clone, Copy, Debug, Default)]
pub struct Addresses;

impl Filter for Addresses {
    fn name(&self) -> &'static str {
        "addresses"
    }

    fn reads_response(&self, api_key: i16) -> bool {
        Routes::carries_addresses(api_key)
    }

    fn response(&self, session: &Session, request: Pending, answer: &mut Response) -> OnResponse {
        if Routes::carries_endpoints(request.api_key) {
            if let Some(whole) = session.parts().addresses.rewrite_endpoints(
                answer.frame(),
                request.api_key,
                request.api_version,
                session.conn(),
            ) {
                session.parts().metrics.rewrote();
                // The broker's frame is replaced, and dropped, before the client is written
                // to: the answer written whole lives under the share of the budget the
                // broker's frame took (it is no longer than it but for the longer host
                // names), and the two are never held while the client reads. A splice
                // from the frame's end would keep both.
                *answer.frame_mut() = whole;
            }
            return OnResponse::Pass;
        }
        match session.parts().addresses.rewrite(
            answer.frame_bytes(),
            request.api_key,
            request.api_version,
            session.conn(),
        ) {
            Some(rewritten) => {
                session.parts().metrics.rewrote();
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
    use crate::filter::testing::{answer, kafka_response, Conn};
    use crate::filters::addresses::{
        DESCRIBE_CLUSTER, DESCRIBE_QUORUM, FETCH, FIND_COORDINATOR, METADATA, PRODUCE,
        SHARE_ACKNOWLEDGE, SHARE_FETCH,
    };
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
        read_at(conn, api_key, VERSION, &mut answer(frame))
    }

    fn read_at(conn: &Conn, api_key: i16, api_version: i16, answer: &mut Response) -> OnResponse {
        let pending = Pending {
            api_key,
            api_version,
            correlation_id: 5,
        };
        Addresses.response(&conn.session(), pending, answer)
    }

    #[test]
    fn reads_the_answers_that_carry_addresses_only() {
        let carrying = [
            METADATA,
            FIND_COORDINATOR,
            DESCRIBE_CLUSTER,
            PRODUCE,
            FETCH,
            DESCRIBE_QUORUM,
            SHARE_FETCH,
            SHARE_ACKNOWLEDGE,
        ];
        for api_key in -1..200 {
            let carries = carrying.contains(&api_key);
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

    /// A Fetch v16 answer (correlation id 5) naming one new leader, node 1 at `host:9092`,
    /// or none.
    fn fetch(host: Option<&'static str>) -> Vec<u8> {
        use kafka_protocol::messages::fetch_response::{
            FetchableTopicResponse, NodeEndpoint, PartitionData,
        };
        use kafka_protocol::messages::FetchResponse;
        let mut body =
            FetchResponse::default().with_responses(vec![FetchableTopicResponse::default()
                .with_partitions(vec![PartitionData::default()
                    .with_records(Some(bytes::Bytes::from_static(b"batch")))])]);
        if let Some(host) = host {
            body.node_endpoints = vec![NodeEndpoint::default()
                .with_node_id(BrokerId(1))
                .with_host(StrBytes::from_static_str(host))
                .with_port(9092)];
        }
        kafka_response(16, 5, &body)
    }

    /// A Fetch answer naming a routed broker as a new leader goes on written whole, in
    /// place of the broker's (the chain goes on); one without node endpoints goes on as it
    /// came, its buffer not copied; a Fetch answer of v15 is not read.
    #[test]
    fn node_endpoints_are_rewritten_in_place_of_the_answer() {
        use kafka_protocol::messages::FetchResponse;
        let conn = guard();
        let frame = fetch(Some("10.0.0.1"));
        let mut rewritten = answer(&frame);
        assert!(matches!(
            read_at(&conn, FETCH, 16, &mut rewritten),
            OnResponse::Pass
        ));
        let mut body = bytes::Bytes::copy_from_slice(&rewritten.frame()[4..]);
        ResponseHeader::decode(&mut body, FetchResponse::header_version(16)).unwrap();
        let got = FetchResponse::decode(&mut body, 16).unwrap();
        let endpoint = &got.node_endpoints[0];
        assert_eq!(
            (endpoint.host.as_str(), endpoint.port),
            ("127.0.0.1", 19092)
        );

        let plain = fetch(None);
        let mut untouched = answer(&plain);
        let at = untouched.frame().as_ptr();
        assert!(matches!(
            read_at(&conn, FETCH, 16, &mut untouched),
            OnResponse::Pass
        ));
        assert_eq!(untouched.frame(), &plain[..]);
        assert_eq!(untouched.frame().as_ptr(), at, "not copied");

        let mut older = answer(&frame);
        assert!(matches!(
            read_at(&conn, FETCH, 15, &mut older),
            OnResponse::Pass
        ));
        assert_eq!(older.frame(), &frame[..]);
    }
}
