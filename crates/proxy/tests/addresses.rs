//! Broker addresses rewritten in Metadata, FindCoordinator and DescribeCluster answers
//! (issue 25), at every version Kafka 4.x answers, against **fake brokers**: each answers
//! those three requests with an answer made by the `kafka-protocol` crate (Kafka's own
//! schemas), naming brokers paired with a route, by IP and by name, and one with none. The
//! real cluster's answers are the e2e tests' business. Every wait is bounded.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_elect_leaders_proxy::addresses::DynamicListen;
use kafka_elect_leaders_proxy::{Config, Guard, Route};
use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::metadata_response::MetadataResponseBroker;
use kafka_protocol::messages::{
    BrokerId, DescribeClusterRequest, DescribeClusterResponse, FindCoordinatorRequest,
    FindCoordinatorResponse, MetadataRequest, MetadataResponse, RequestHeader, ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::timeout;

const METADATA: i16 = 3;
const FIND_COORDINATOR: i16 = 10;
const DESCRIBE_CLUSTER: i16 = 60;
/// The versions Kafka 4.x answers, by API.
const VERSIONS: [(i16, std::ops::RangeInclusive<i16>); 3] = [
    (METADATA, 0..=13),
    (FIND_COORDINATOR, 0..=6),
    (DESCRIBE_CLUSTER, 0..=2),
];

/// The brokers every fake names: node 1 at `first` (by IP), node 2 at `second` (by the
/// name "LocalHost", which the route wrote "localhost"), node 3 at an address no route has.
#[derive(Clone, Copy)]
struct Cluster {
    first: SocketAddr,
    second: SocketAddr,
}

const STRANGER: (&str, i32) = ("10.255.0.3", 9092);

impl Cluster {
    fn brokers(&self) -> [(i32, String, i32); 3] {
        [
            (1, self.first.ip().to_string(), i32::from(self.first.port())),
            (2, "LocalHost".to_owned(), i32::from(self.second.port())),
            (3, STRANGER.0.to_owned(), STRANGER.1),
        ]
    }

    /// The answer's body to `api_key` at `version`.
    fn answer(&self, api_key: i16, version: i16) -> BytesMut {
        let mut body = BytesMut::new();
        let brokers = self.brokers();
        match api_key {
            METADATA => {
                let mut answer = MetadataResponse::default();
                answer.brokers = brokers
                    .iter()
                    .map(|(node, host, port)| {
                        MetadataResponseBroker::default()
                            .with_node_id(BrokerId(*node))
                            .with_host(StrBytes::from_string(host.clone()))
                            .with_port(*port)
                    })
                    .collect();
                answer.encode(&mut body, version).unwrap();
            }
            FIND_COORDINATOR => {
                let mut answer = FindCoordinatorResponse::default();
                if version >= 4 {
                    answer.coordinators = brokers
                        .iter()
                        .map(|(node, host, port)| {
                            Coordinator::default()
                                .with_key(StrBytes::from_static_str("group"))
                                .with_node_id(BrokerId(*node))
                                .with_host(StrBytes::from_string(host.clone()))
                                .with_port(*port)
                        })
                        .collect();
                } else {
                    let (node, host, port) = &brokers[1];
                    answer.node_id = BrokerId(*node);
                    answer.host = StrBytes::from_string(host.clone());
                    answer.port = *port;
                }
                answer.encode(&mut body, version).unwrap();
            }
            _ => {
                let mut answer = DescribeClusterResponse::default();
                answer.brokers = brokers
                    .iter()
                    .map(|(node, host, port)| {
                        DescribeClusterBroker::default()
                            .with_broker_id(BrokerId(*node))
                            .with_host(StrBytes::from_string(host.clone()))
                            .with_port(*port)
                    })
                    .collect();
                answer.encode(&mut body, version).unwrap();
            }
        }
        body
    }
}

fn response_header_version(api_key: i16, version: i16) -> i16 {
    match api_key {
        METADATA => MetadataResponse::header_version(version),
        FIND_COORDINATOR => FindCoordinatorResponse::header_version(version),
        _ => DescribeClusterResponse::header_version(version),
    }
}

fn request_header_version(api_key: i16, version: i16) -> i16 {
    match api_key {
        METADATA => MetadataRequest::header_version(version),
        FIND_COORDINATOR => FindCoordinatorRequest::header_version(version),
        _ => DescribeClusterRequest::header_version(version),
    }
}

/// A free address on loopback (bound, then released), for a fake broker that must know
/// its own address before it answers.
fn free_addr() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// A request of `api_key` at `version` (its body empty of topics or keys).
fn request(api_key: i16, version: i16, correlation_id: i32) -> BytesMut {
    let mut out = BytesMut::new();
    out.put_i32(0);
    RequestHeader::default()
        .with_request_api_key(api_key)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str("t")))
        .encode(&mut out, request_header_version(api_key, version))
        .unwrap();
    match api_key {
        METADATA => MetadataRequest::default().encode(&mut out, version),
        FIND_COORDINATOR => {
            let mut r = FindCoordinatorRequest::default();
            if version >= 4 {
                r.coordinator_keys = vec![StrBytes::from_static_str("group")];
            } else {
                r.key = StrBytes::from_static_str("group");
            }
            r.encode(&mut out, version)
        }
        _ => DescribeClusterRequest::default().encode(&mut out, version),
    }
    .unwrap();
    let len = (out.len() - 4) as i32;
    out[..4].copy_from_slice(&len.to_be_bytes());
    out
}

/// Sends one request and returns the answer's body (after the response header).
async fn ask(s: &mut TcpStream, api_key: i16, version: i16, id: i32) -> Bytes {
    s.write_all(&request(api_key, version, id)).await.unwrap();
    let mut size = [0u8; 4];
    timeout(Duration::from_secs(5), s.read_exact(&mut size))
        .await
        .expect("an answer within 5 s")
        .unwrap();
    let mut frame = vec![0u8; i32::from_be_bytes(size) as usize];
    timeout(Duration::from_secs(5), s.read_exact(&mut frame))
        .await
        .expect("the whole answer within 5 s")
        .unwrap();
    let mut frame = Bytes::from(frame);
    let header =
        ResponseHeader::decode(&mut frame, response_header_version(api_key, version)).unwrap();
    assert_eq!(header.correlation_id, id);
    frame
}

/// The (node, host, port) of every broker an answer names.
fn brokers_in(api_key: i16, version: i16, mut body: Bytes) -> Vec<(i32, String, i32)> {
    let found = match api_key {
        METADATA => MetadataResponse::decode(&mut body, version)
            .unwrap()
            .brokers
            .into_iter()
            .map(|b| (b.node_id.0, b.host.to_string(), b.port))
            .collect(),
        FIND_COORDINATOR => {
            let a = FindCoordinatorResponse::decode(&mut body, version).unwrap();
            if version >= 4 {
                a.coordinators
                    .into_iter()
                    .map(|c| (c.node_id.0, c.host.to_string(), c.port))
                    .collect()
            } else {
                vec![(a.node_id.0, a.host.to_string(), a.port)]
            }
        }
        _ => DescribeClusterResponse::decode(&mut body, version)
            .unwrap()
            .brokers
            .into_iter()
            .map(|b| (b.broker_id.0, b.host.to_string(), b.port))
            .collect(),
    };
    assert!(!body.has_remaining());
    found
}

/// Two routes in front of two fake brokers that name each other; the guard's listeners.
async fn two_routes(edit: impl FnOnce(&mut Config)) -> (Cluster, [SocketAddr; 2]) {
    let cluster = Cluster {
        first: free_addr(),
        second: free_addr(),
    };
    let a = serve_at(cluster.first, move |k, v| cluster.answer(k, v)).await;
    let b = serve_at(cluster.second, move |k, v| cluster.answer(k, v)).await;
    let mut config = Config::default();
    config.routes.push(Route {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: a,
    });
    config.routes.push(Route {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: b,
    });
    config.upstream_names.push((b, "localhost".to_owned()));
    edit(&mut config);
    let guard = Guard::bind(config).await.unwrap();
    let routes = guard.routes();
    tokio::spawn(guard.run(std::future::pending()));
    (cluster, [routes[0].listen, routes[1].listen])
}

/// One route in front of `upstream` (the config edited by `edit`); the guard's listener.
async fn one_route(upstream: SocketAddr, edit: impl FnOnce(&mut Config)) -> SocketAddr {
    let mut config = Config::default();
    config.routes.push(Route {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream,
    });
    edit(&mut config);
    let guard = Guard::bind(config).await.unwrap();
    let listen = guard.routes()[0].listen;
    tokio::spawn(guard.run(std::future::pending()));
    listen
}

/// A fake broker on `addr`: answers each request with what `answer` makes of (api key,
/// version), under a response header of the right version.
async fn serve_at(
    addr: SocketAddr,
    answer: impl Fn(i16, i16) -> BytesMut + Send + Sync + 'static,
) -> SocketAddr {
    let listener = TcpListener::bind(addr).await.unwrap();
    let answer = std::sync::Arc::new(answer);
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            tokio::spawn(serve_one(s, answer.clone()));
        }
    });
    addr
}

async fn serve_one(
    mut s: TcpStream,
    answer: std::sync::Arc<impl Fn(i16, i16) -> BytesMut + Send + Sync + 'static>,
) {
    loop {
        let mut size = [0u8; 4];
        if s.read_exact(&mut size).await.is_err() {
            return;
        }
        let mut frame = vec![0u8; i32::from_be_bytes(size) as usize];
        if s.read_exact(&mut frame).await.is_err() {
            return;
        }
        let mut peek = Bytes::from(frame);
        let api_key = i16::from_be_bytes([peek[0], peek[1]]);
        let version = i16::from_be_bytes([peek[2], peek[3]]);
        let header =
            RequestHeader::decode(&mut peek, request_header_version(api_key, version)).unwrap();
        let mut out = BytesMut::new();
        out.put_i32(0);
        ResponseHeader::default()
            .with_correlation_id(header.correlation_id)
            .encode(&mut out, response_header_version(api_key, version))
            .unwrap();
        out.extend_from_slice(&answer(api_key, version));
        let len = (out.len() - 4) as i32;
        out[..4].copy_from_slice(&len.to_be_bytes());
        if s.write_all(&out).await.is_err() {
            return;
        }
    }
}

/// Every version of the three answers: a broker with a route is told as that route's
/// listener (matched by IP, or by the name written in the route, case aside); one with
/// none is left as it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_version_of_the_three_answers() {
    let (_, listens) = two_routes(|_| {}).await;
    let mut client = TcpStream::connect(listens[0]).await.unwrap();
    let mut id = 0;
    for (api_key, versions) in VERSIONS {
        for version in versions {
            id += 1;
            let body = ask(&mut client, api_key, version, id).await;
            let got = brokers_in(api_key, version, body);
            let told = |node: i32, listen: SocketAddr| {
                (node, listen.ip().to_string(), i32::from(listen.port()))
            };
            let expected = if api_key == FIND_COORDINATOR && version < 4 {
                vec![told(2, listens[1])]
            } else {
                vec![
                    told(1, listens[0]),
                    told(2, listens[1]),
                    (3, STRANGER.0.to_owned(), STRANGER.1),
                ]
            };
            assert_eq!(got, expected, "api key {api_key} v{version}");
        }
    }
}

/// `--advertise-host`: the name clients are told instead of the listener's IP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advertise_host() {
    let (_, listens) = two_routes(|c| c.advertise_host = Some("guard.example".into())).await;
    let mut client = TcpStream::connect(listens[1]).await.unwrap();
    let got = brokers_in(METADATA, 12, ask(&mut client, METADATA, 12, 1).await);
    assert_eq!(
        got[0],
        (1, "guard.example".to_owned(), i32::from(listens[0].port()))
    );
    assert_eq!(
        got[1],
        (2, "guard.example".to_owned(), i32::from(listens[1].port()))
    );
}

/// Issue 45, item 4: behind a load balancer whose frontend ports are not the guard's, a
/// route's `advertise` names the balancer's address for its broker; a route without one
/// keeps the advertised host and its listener's port.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_advertises_the_load_balancers_address() {
    let (first, second) = (free_addr(), free_addr());
    let (_, listens) = two_routes(|c| {
        c.routes[0].listen = first;
        c.routes[1].listen = second;
        c.advertise_host = Some("guard.example".into());
        c.route_advertise = vec![(second, "kafka-lb.example".into(), 29093)];
    })
    .await;
    assert_eq!(listens, [first, second]);
    let mut client = TcpStream::connect(listens[0]).await.unwrap();
    let got = brokers_in(METADATA, 12, ask(&mut client, METADATA, 12, 1).await);
    assert_eq!(
        got[0],
        (1, "guard.example".to_owned(), i32::from(first.port()))
    );
    assert_eq!(got[1], (2, "kafka-lb.example".to_owned(), 29093));
}

/// An answer that cannot be decoded goes through byte for byte (failing open loses only
/// the rewrite): bytes left over after a valid answer, and an answer that is not one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_cannot_be_decoded_goes_through_unchanged() {
    let addr = free_addr();
    let cluster = Cluster {
        first: addr,
        second: addr,
    };
    // Metadata cut inside its second broker (only its brokers are decoded: the rest is
    // copied as it is); DescribeCluster with a byte left over, and cut short.
    let spoil = move |api_key: i16, version: i16| {
        let mut body = cluster.answer(api_key, version);
        match (api_key, version) {
            (METADATA, _) => body.truncate(25),
            (_, 0) => body.put_u8(0xff),
            _ => body.truncate(3),
        }
        body
    };
    let upstream = serve_at(addr, spoil).await;
    let listen = one_route(upstream, |_| {}).await;
    let mut client = TcpStream::connect(listen).await.unwrap();
    for (api_key, version) in [
        (METADATA, 12),
        (METADATA, 1),
        (DESCRIBE_CLUSTER, 0),
        (DESCRIBE_CLUSTER, 1),
    ] {
        let got = ask(&mut client, api_key, version, 9).await;
        assert_eq!(
            &got[..],
            &spoil(api_key, version)[..],
            "api key {api_key} v{version}"
        );
    }
}

/// `--dynamic-listen`: a broker with no route gets a listener of its own on port FIRST +
/// its node id, told to clients, which reaches that broker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_for_a_broker_with_no_route() {
    // Node 3 at an address no route has, and the port of its listener-to-be: FIRST is
    // that port minus 3.
    let third = free_addr();
    let node_port = free_addr().port();
    let range = DynamicListen {
        ip: "127.0.0.1".parse().unwrap(),
        first: node_port - 3,
        last: node_port,
    };
    // Both the route's broker and node 3's answer Metadata naming node 3 alone.
    let answer = move |api_key: i16, version: i16| {
        assert_eq!(api_key, METADATA);
        let mut m = MetadataResponse::default();
        m.brokers = vec![MetadataResponseBroker::default()
            .with_node_id(BrokerId(3))
            .with_host(StrBytes::from_string(third.ip().to_string()))
            .with_port(i32::from(third.port()))];
        let mut body = BytesMut::new();
        m.encode(&mut body, version).unwrap();
        body
    };
    serve_at(third, answer).await;
    let route_upstream = serve_at(free_addr(), answer).await;
    let listen = one_route(route_upstream, |c| c.dynamic_listen = Some(range)).await;

    let mut client = TcpStream::connect(listen).await.unwrap();
    let got = brokers_in(METADATA, 12, ask(&mut client, METADATA, 12, 1).await);
    assert_eq!(got, [(3, "127.0.0.1".to_owned(), i32::from(node_port))]);
    // The listener is there and reaches node 3's broker, whose answer names node 3 as the
    // same listener.
    let mut to_three = TcpStream::connect(("127.0.0.1", node_port)).await.unwrap();
    let again = brokers_in(METADATA, 12, ask(&mut to_three, METADATA, 12, 2).await);
    assert_eq!(again, got);
}

/// `--dynamic-listen`: a broker that appears in a later answer gets its listener then; a
/// node whose port would fall past the range is left as it advertises itself (the guard
/// warns), and so is everything once the range is used up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamic_listeners_for_brokers_that_appear_later_and_past_the_range() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    // Two free ports, FIRST and FIRST + 1: nodes 0 and 1 fit, node 2 does not.
    let (first, second) = loop {
        let a = free_addr().port();
        if std::net::TcpListener::bind(("127.0.0.1", a + 1)).is_ok() {
            break (a, a + 1);
        }
    };
    let range = DynamicListen {
        ip: "127.0.0.1".parse().unwrap(),
        first,
        last: second,
    };
    let brokers = [free_addr(), free_addr(), free_addr()];
    // The first answer names node 0; the next ones nodes 0, 1 and 2.
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    let answer = move |api_key: i16, version: i16| {
        assert_eq!(api_key, METADATA);
        let named = if counter.fetch_add(1, Ordering::SeqCst) == 0 {
            1
        } else {
            3
        };
        let mut m = MetadataResponse::default();
        m.brokers = (0..named)
            .map(|node| {
                let at = brokers[node];
                MetadataResponseBroker::default()
                    .with_node_id(BrokerId(node as i32))
                    .with_host(StrBytes::from_string(at.ip().to_string()))
                    .with_port(i32::from(at.port()))
            })
            .collect();
        let mut body = BytesMut::new();
        m.encode(&mut body, version).unwrap();
        body
    };
    let route_upstream = serve_at(free_addr(), answer).await;
    for at in brokers {
        serve_at(at, |_, _| BytesMut::new()).await;
    }
    let listen = one_route(route_upstream, |c| c.dynamic_listen = Some(range)).await;

    let mut client = TcpStream::connect(listen).await.unwrap();
    let told = |port: u16| ("127.0.0.1".to_owned(), i32::from(port));
    let got = brokers_in(METADATA, 12, ask(&mut client, METADATA, 12, 1).await);
    assert_eq!(got, [(0, told(first).0, told(first).1)]);
    // Node 1 only now: its listener opens; node 2's port would be past the range.
    assert!(TcpStream::connect(("127.0.0.1", second)).await.is_err());
    let got = brokers_in(METADATA, 12, ask(&mut client, METADATA, 12, 2).await);
    assert_eq!(
        got,
        [
            (0, told(first).0, told(first).1),
            (1, told(second).0, told(second).1),
            (2, brokers[2].ip().to_string(), i32::from(brokers[2].port())),
        ]
    );
    TcpStream::connect(("127.0.0.1", second)).await.unwrap();
}

/// A Metadata answer larger than the guard's write buffer (64 KiB) goes out in two
/// writes: its rewritten head, then its topics straight from the broker's frame. Both
/// arrive whole, in order with the answer after them, at a flexible and an older version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_metadata_answer_is_rewritten_and_its_topics_go_as_they_came() {
    use kafka_protocol::messages::metadata_response::{
        MetadataResponsePartition, MetadataResponseTopic,
    };
    use kafka_protocol::messages::TopicName;
    let topics: Vec<MetadataResponseTopic> = (0..50)
        .map(|t| {
            MetadataResponseTopic::default()
                .with_name(Some(TopicName(StrBytes::from_string(format!("topic-{t}")))))
                .with_partitions(
                    (0..200)
                        .map(|p| {
                            MetadataResponsePartition::default()
                                .with_partition_index(p)
                                .with_leader_id(BrokerId(1 + p % 2))
                                .with_replica_nodes(vec![BrokerId(1), BrokerId(2)])
                                .with_isr_nodes(vec![BrokerId(1), BrokerId(2)])
                        })
                        .collect(),
                )
        })
        .collect();
    let cluster = Cluster {
        first: free_addr(),
        second: free_addr(),
    };
    let with_topics = {
        let topics = topics.clone();
        move |api_key: i16, version: i16| {
            if api_key != METADATA {
                return cluster.answer(api_key, version);
            }
            let mut body = BytesMut::new();
            let mut answer =
                MetadataResponse::decode(&mut cluster.answer(METADATA, version).freeze(), version)
                    .unwrap();
            answer.topics = topics.clone();
            answer.encode(&mut body, version).unwrap();
            body
        }
    };
    let upstream = serve_at(cluster.first, with_topics.clone()).await;
    let listen = one_route(upstream, |_| {}).await;
    let mut client = TcpStream::connect(listen).await.unwrap();
    for (id, version) in [(1, 12), (2, 1)] {
        assert!(with_topics(METADATA, version).len() > 64 * 1024);
        // The large answer, then a small one behind it on the same connection.
        let body = ask(&mut client, METADATA, version, id).await;
        let got = MetadataResponse::decode(&mut body.clone(), version).unwrap();
        assert_eq!(
            (got.brokers[0].host.as_str(), got.brokers[0].port),
            (listen.ip().to_string().as_str(), i32::from(listen.port())),
            "v{version}"
        );
        assert_eq!(got.topics, topics, "v{version}");
        let body = ask(&mut client, DESCRIBE_CLUSTER, 0, id + 10).await;
        assert_eq!(brokers_in(DESCRIBE_CLUSTER, 0, body).len(), 3);
    }
}

/// `GET /metrics` of a guard: the value of `metric` (a series without labels).
async fn scrape(addr: SocketAddr, metric: &str) -> u64 {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").await.unwrap();
    let mut text = String::new();
    timeout(Duration::from_secs(5), s.read_to_string(&mut text))
        .await
        .expect("the metrics within 5 s")
        .unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix(metric)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {metric} in:\n{text}"))
}

/// `--dynamic-listen` and brokers that advertise the guard's own addresses (issue 35,
/// finding 7): node 1 the metrics listener, node 2 `localhost` at the port its own
/// listener gets (FIRST + 2: a name, not resolved when the answer is rewritten), node 3
/// `127.0.0.1` at FIRST + 3, the address its listener would have. No listener is opened
/// for nodes 1 and 3, and their entries are left as advertised; node 2's listener closes
/// each client once it resolves the name to one of the guard's listeners. Before, each of
/// them had a listener forwarding to the guard itself: one connection to node 2's opened
/// another through the guard, and so on until `--max-connections` (20 here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_advertising_the_guards_own_addresses_makes_no_loop() {
    use std::sync::{Arc, OnceLock};
    // FIRST + 1 to FIRST + 3 free.
    let first = loop {
        let a = free_addr().port();
        if a < 65_000 && (1..=3).all(|k| std::net::TcpListener::bind(("127.0.0.1", a + k)).is_ok())
        {
            break a;
        }
    };
    let metrics_at: Arc<OnceLock<SocketAddr>> = Arc::new(OnceLock::new());
    let at = metrics_at.clone();
    let answer = move |api_key: i16, version: i16| {
        assert_eq!(api_key, METADATA);
        let metrics = at.get().expect("the guard's metrics address");
        let mut m = MetadataResponse::default();
        m.brokers = [
            (1, "127.0.0.1".to_owned(), metrics.port()),
            (2, "localhost".to_owned(), first + 2),
            (3, "127.0.0.1".to_owned(), first + 3),
        ]
        .into_iter()
        .map(|(node, host, port)| {
            MetadataResponseBroker::default()
                .with_node_id(BrokerId(node))
                .with_host(StrBytes::from_string(host))
                .with_port(i32::from(port))
        })
        .collect();
        let mut body = BytesMut::new();
        m.encode(&mut body, version).unwrap();
        body
    };
    let upstream = serve_at(free_addr(), answer).await;
    let mut config = Config::default();
    config.routes.push(Route {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream,
    });
    config.dynamic_listen = Some(DynamicListen {
        ip: "127.0.0.1".parse().unwrap(),
        first,
        last: first + 3,
    });
    config.metrics_listen = Some("127.0.0.1:0".parse().unwrap());
    config.max_connections = 20;
    let guard = Guard::bind(config).await.unwrap();
    let metrics = guard.metrics_addr().unwrap();
    metrics_at.set(metrics).unwrap();
    let listen = guard.routes()[0].listen;
    tokio::spawn(guard.run(std::future::pending()));

    let mut client = TcpStream::connect(listen).await.unwrap();
    let got = brokers_in(METADATA, 12, ask(&mut client, METADATA, 12, 1).await);
    // Node 2's listener forwards to localhost:FIRST+2, the guard itself: its client is
    // closed, unanswered, and opens no connection through the guard.
    let mut looping = TcpStream::connect(("127.0.0.1", first + 2)).await.unwrap();
    looping.write_all(&request(METADATA, 12, 2)).await.unwrap();
    let mut answer = Vec::new();
    let _ = timeout(Duration::from_secs(20), looping.read_to_end(&mut answer))
        .await
        .expect("the client of node 2's listener was neither answered nor closed");
    assert!(answer.is_empty(), "{answer:?}");
    assert_eq!(
        scrape(metrics, "elect_leaders_guard_connections_accepted_total").await,
        1,
        "the guard accepted connections of its own"
    );
    // Nodes 1 and 3 as they advertised themselves, node 2 at its listener.
    let own = |port: u16| ("127.0.0.1".to_owned(), i32::from(port));
    assert_eq!(
        got,
        [
            (1, own(metrics.port()).0, own(metrics.port()).1),
            (2, own(first + 2).0, own(first + 2).1),
            (3, own(first + 3).0, own(first + 3).1),
        ]
    );
    for port in [first + 1, first + 3] {
        assert!(
            TcpStream::connect(("127.0.0.1", port)).await.is_err(),
            "a listener was opened at {port}, forwarding to the guard itself"
        );
    }
}

/// A route whose `--upstream` is one of the guard's own listeners (its own `--listen`,
/// another route's, `--metrics-listen`; on `0.0.0.0`, any address of this host) is
/// refused at start, the error naming the options.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_to_the_guard_itself_is_refused_at_start() {
    let taken = free_addr();
    let other = free_addr();
    let any = SocketAddr::new("0.0.0.0".parse().unwrap(), taken.port());
    // (--listen, --upstream) pairs, --metrics-listen, the option named.
    type Case = (
        Vec<(SocketAddr, SocketAddr)>,
        Option<SocketAddr>,
        &'static str,
    );
    let cases: [Case; 4] = [
        (vec![(taken, taken)], None, "route.listen"),
        (vec![(any, taken)], None, "route.listen"),
        (
            vec![(taken, other), (other, free_addr())],
            None,
            "route.listen",
        ),
        (vec![(free_addr(), taken)], Some(taken), "metrics-listen"),
    ];
    for (routes, metrics, option) in cases {
        let mut config = Config::default();
        for &(listen, upstream) in &routes {
            config.routes.push(Route { listen, upstream });
        }
        config.metrics_listen = metrics;
        let refused = Guard::bind(config).await.err().unwrap_or_else(|| {
            panic!("{routes:?} (metrics {metrics:?}) started, forwarding to itself")
        });
        let why = refused.to_string();
        assert!(
            why.contains("its upstream")
                && why.contains(option)
                && why.contains("itself")
                && !why.contains("--"),
            "{why}"
        );
    }
}
