//! Issue 24: the broker's ApiVersions answer reaches the client with ElectLeaders capped at
//! the newest version the guard reads, so a client that knows a newer one negotiates down
//! instead of being disconnected. The upstream is a **fake broker** advertising
//! ElectLeaders up to a version that does not exist yet (a real broker cannot be made to);
//! `tests/e2e/test_proxy.py` checks that a real broker's answer goes through unchanged.

use bytes::{Bytes, BytesMut};
use kafka_elect_leaders::{API_KEY, LATEST_VERSION};
use kafka_elect_leaders_proxy::{Config, Guard, Route};
use kafka_protocol::messages::api_versions_response::{ApiVersion, ApiVersionsResponse};
use kafka_protocol::messages::ResponseHeader;
use kafka_protocol::protocol::{Decodable, Encodable};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{timeout, Duration};

/// ApiVersions' first flexible version: its request carries the client software's name.
const API_VERSIONS_FIRST_FLEXIBLE: i16 = 3;

/// A fake broker: answers every request with an ApiVersions answer at the request's
/// version, advertising ElectLeaders 0..=LATEST_VERSION + 1.
async fn broker() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                loop {
                    let mut size = [0u8; 4];
                    if socket.read_exact(&mut size).await.is_err() {
                        return;
                    }
                    let mut request = vec![0u8; i32::from_be_bytes(size) as usize];
                    if socket.read_exact(&mut request).await.is_err() {
                        return;
                    }
                    let version = i16::from_be_bytes([request[2], request[3]]);
                    let correlation_id =
                        i32::from_be_bytes([request[4], request[5], request[6], request[7]]);
                    let answer = ApiVersionsResponse::default().with_api_keys(vec![
                        ApiVersion::default().with_api_key(18).with_max_version(4),
                        ApiVersion::default()
                            .with_api_key(API_KEY)
                            .with_max_version(LATEST_VERSION + 1),
                    ]);
                    let mut body = BytesMut::new();
                    ResponseHeader::default()
                        .with_correlation_id(correlation_id)
                        .encode(&mut body, 0)
                        .unwrap();
                    answer.encode(&mut body, version).unwrap();
                    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
                    frame.extend_from_slice(&body);
                    if socket.write_all(&frame).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_elect_leaders_is_not_advertised_through_the_guard() {
    let upstream = broker().await;
    let mut config = Config::default();
    config.routes.push(Route {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream,
    });
    let guard = Guard::bind(config).await.unwrap();
    let listen = guard.routes()[0].listen;
    let (_stop, stop) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(guard.run(async move {
        let _ = stop.await;
    }));

    let mut client = TcpStream::connect(listen).await.unwrap();
    for version in 0..=4i16 {
        // ApiVersions request: header v1 (v2 with tags for v3+), empty body (v3+: client
        // software name and version, compact strings, and tags).
        let mut request = 18i16.to_be_bytes().to_vec();
        request.extend(version.to_be_bytes());
        request.extend(i32::from(version).to_be_bytes());
        request.extend(1i16.to_be_bytes());
        request.push(b't');
        if version >= API_VERSIONS_FIRST_FLEXIBLE {
            request.extend([0, 2, b't', 2, b'1', 0]);
        }
        let mut frame = (request.len() as i32).to_be_bytes().to_vec();
        frame.extend(request);
        client.write_all(&frame).await.unwrap();

        let mut size = [0u8; 4];
        timeout(Duration::from_secs(5), client.read_exact(&mut size))
            .await
            .unwrap()
            .unwrap();
        let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
        client.read_exact(&mut body).await.unwrap();
        let mut body = Bytes::from(body);
        let header = ResponseHeader::decode(&mut body, 0).unwrap();
        assert_eq!(header.correlation_id, i32::from(version));
        let answer = ApiVersionsResponse::decode(&mut body, version).unwrap();
        let elect = answer
            .api_keys
            .iter()
            .find(|k| k.api_key == API_KEY)
            .unwrap();
        assert_eq!(elect.max_version, LATEST_VERSION, "ApiVersions v{version}");
        let own = answer.api_keys.iter().find(|k| k.api_key == 18).unwrap();
        assert_eq!(own.max_version, 4, "other APIs untouched");
    }
}
