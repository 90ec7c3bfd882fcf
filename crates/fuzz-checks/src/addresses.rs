//! addresses: the guard's rewrite of the broker addresses in Metadata, FindCoordinator and
//! DescribeCluster answers (and, through `crate::endpoints`, Produce and Fetch answers'
//! node endpoints) (crates/proxy/src/addresses/rewrite.rs), which decodes what a broker
//! sends with the kafka-protocol crate.
//!
//! The input either builds an answer (kafka-protocol's own structures, encoded by it: its
//! brokers or coordinators at the route's upstream address, the guard's listener, or
//! elsewhere), maybe damaged afterwards (cut, a byte changed, a count replaced), or is
//! taken as the broker's bytes as they are. What must hold:
//!
//! - nothing panics or aborts (an allocation sized by a count read off the wire is one:
//!   libFuzzer's malloc limit reports it);
//! - a rewritten answer is a whole frame (its size prefix right) whose list kafka-protocol
//!   reads entry by entry at the same version, as many entries as before, each at the
//!   listener when it was at the route's upstream (a coordinator only with a node id, not
//!   -1) and unchanged otherwise, and what follows the list byte for byte the broker's;
//! - an answer built whole and not damaged is rewritten exactly when one of its entries
//!   is at the upstream: a valid answer is never refused.

use std::net::SocketAddr;

use crate::damage::{address, damage};
use arbitrary::Unstructured;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_elect_leaders_proxy::addresses::{
    Routes, DESCRIBE_CLUSTER, FETCH, FIND_COORDINATOR, METADATA, PRODUCE,
};
use kafka_elect_leaders_proxy::testing::ConnInfo;
use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::metadata_response::MetadataResponseBroker;
use kafka_protocol::messages::{
    BrokerId, DescribeClusterResponse, FindCoordinatorResponse, MetadataResponse, ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Message, StrBytes};

/// The route: the guard listens on LISTEN for the broker at UPSTREAM.
const UPSTREAM: &str = "10.0.0.1:9092";
const LISTEN: &str = "127.0.0.1:19092";
/// The first FindCoordinator version with a list of coordinators.
const BATCHED: i16 = 4;
/// The first Metadata version with a throttle time, and the first flexible one.
const METADATA_THROTTLE: i16 = 3;
const FLEXIBLE_METADATA: i16 = 9;

/// An entry's address: node id, host, port.
type Entry = (i32, String, i32);

/// The `addresses` target: the guard's rewrite of broker addresses in an answer of one of
/// the APIs that carry them, built from the input; no panic, and what it writes reads back.
pub fn check_addresses(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(api_key) = u
        .choose(&[METADATA, FIND_COORDINATOR, DESCRIBE_CLUSTER, PRODUCE, FETCH])
        .copied()
    else {
        return;
    };
    if api_key == PRODUCE || api_key == FETCH {
        return crate::endpoints::check_endpoints(&mut u, api_key);
    }
    let max = match api_key {
        METADATA => MetadataResponse::VERSIONS.max,
        FIND_COORDINATOR => FindCoordinatorResponse::VERSIONS.max,
        _ => DescribeClusterResponse::VERSIONS.max,
    };
    // Now and then a version the crate does not know.
    let Ok(version) = u.int_in_range(-1..=max + 1) else {
        return;
    };
    let upstream: SocketAddr = UPSTREAM.parse().expect("an address");
    let listen: SocketAddr = LISTEN.parse().expect("an address");
    let addresses = Routes::new([(listen, upstream, None)], None, None);
    let conn = ConnInfo {
        client: "127.0.0.1:50000".parse().expect("an address"),
        listener: listen,
        local: listen,
        upstream,
    };
    let raw = u.arbitrary::<bool>().unwrap_or(true);
    let built = if raw || !(0..=max).contains(&version) {
        None
    } else {
        match build(&mut u, api_key, version) {
            Ok(built) => Some(built),
            Err(_) => return,
        }
    };
    let (frame, entries, whole) = match built {
        None => {
            let rest = u.take_rest();
            let mut frame = Vec::with_capacity(rest.len() + 4);
            frame.extend_from_slice(&(rest.len() as i32).to_be_bytes());
            frame.extend_from_slice(rest);
            (frame, None, false)
        }
        Some((mut frame, entries)) => {
            let whole = !damage(&mut u, &mut frame);
            (frame, Some(entries), whole)
        }
    };
    let frame = Bytes::from(frame);
    let rewritten = addresses
        .rewrite(&frame, api_key, version, &conn)
        .map(|r| r.to_frame(&frame));
    let upstream_port = i32::from(upstream.port());
    // A coordinator with a negative node id is none (an error's entry): not an address.
    let at_upstream = |(node, host, port): &Entry| {
        host == "10.0.0.1" && *port == upstream_port && (api_key != FIND_COORDINATOR || *node >= 0)
    };
    if whole {
        let entries = entries.as_ref().expect("built");
        assert_eq!(
            rewritten.is_some(),
            entries.iter().any(at_upstream),
            "a valid answer ({} v{version}, {entries:?}) rewritten or not as its entries say",
            name(api_key)
        );
    }
    let Some(out) = rewritten else {
        return;
    };
    let size = i32::from_be_bytes(out[..4].try_into().expect("a size prefix"));
    assert_eq!(
        size as usize,
        out.len() - 4,
        "the size prefix of the rewritten answer"
    );
    let (got, got_rest) = decode(api_key, version, &out[4..])
        .unwrap_or_else(|e| panic!("the rewritten answer does not decode: {e}"));
    // The entries the input held, as kafka-protocol reads them (it could, or nothing would
    // have been rewritten).
    let (before, rest) =
        decode(api_key, version, &frame[4..]).expect("the answer rewritten decodes");
    assert_eq!(got.len(), before.len(), "as many entries after as before");
    assert!(
        got_rest == rest,
        "what follows the list is copied as it is: {} v{version}, {before:?}, \
         answer {frame:02x?}, rewritten {out:02x?}",
        name(api_key)
    );
    for (was, now) in before.iter().zip(&got) {
        if at_upstream(was) {
            let want = (was.0, "127.0.0.1".to_owned(), i32::from(listen.port()));
            assert_eq!(now, &want, "an entry at the upstream is at the listener");
        } else {
            assert_eq!(now, was, "an entry elsewhere is left as it is");
        }
    }
}

/// Kafka's name of an API key, from the codec's table.
fn name(api_key: i16) -> &'static str {
    kafka_elect_leaders::api_name(api_key).unwrap_or("unknown")
}

/// An answer built with kafka-protocol's structures and encoded by it (size prefix,
/// header, body), and its entries.
fn build(
    u: &mut Unstructured<'_>,
    api_key: i16,
    version: i16,
) -> arbitrary::Result<(Vec<u8>, Vec<Entry>)> {
    let count = u.int_in_range(0..=4)?;
    let mut entries = Vec::new();
    for node in 0..count {
        let (host, port) = address(u)?;
        entries.push((node, host, port));
    }
    let host = |h: &str| StrBytes::from_string(h.to_owned());
    let mut body = BytesMut::new();
    let header_version;
    let encoded = match api_key {
        METADATA => {
            header_version = MetadataResponse::header_version(version);
            let mut answer = MetadataResponse::default();
            answer.brokers = entries
                .iter()
                .map(|(n, h, p)| {
                    MetadataResponseBroker::default()
                        .with_node_id(BrokerId(*n))
                        .with_host(host(h))
                        .with_port(*p)
                })
                .collect();
            answer.encode(&mut body, version)
        }
        FIND_COORDINATOR => {
            header_version = FindCoordinatorResponse::header_version(version);
            let mut answer = FindCoordinatorResponse::default();
            if version >= BATCHED {
                answer.coordinators = entries
                    .iter()
                    .map(|(n, h, p)| {
                        Coordinator::default()
                            .with_node_id(BrokerId(*n))
                            .with_host(host(h))
                            .with_port(*p)
                    })
                    .collect();
            } else {
                entries.truncate(1);
                if let Some((n, h, p)) = entries.first() {
                    answer.node_id = BrokerId(*n);
                    answer.host = host(h);
                    answer.port = *p;
                } else {
                    answer.node_id = BrokerId(-1);
                }
            }
            answer.encode(&mut body, version)
        }
        _ => {
            header_version = DescribeClusterResponse::header_version(version);
            let mut answer = DescribeClusterResponse::default();
            answer.brokers = entries
                .iter()
                .map(|(n, h, p)| {
                    DescribeClusterBroker::default()
                        .with_broker_id(BrokerId(*n))
                        .with_host(host(h))
                        .with_port(*p)
                })
                .collect();
            answer.encode(&mut body, version)
        }
    };
    if encoded.is_err() {
        return Err(arbitrary::Error::IncorrectFormat);
    }
    let mut frame = BytesMut::new();
    frame.put_i32(0);
    ResponseHeader::default()
        .with_correlation_id(u.arbitrary()?)
        .encode(&mut frame, header_version)
        .map_err(|_| arbitrary::Error::IncorrectFormat)?;
    frame.put_slice(&body);
    let size = (frame.len() - 4) as i32;
    frame[..4].copy_from_slice(&size.to_be_bytes());
    Ok((frame.to_vec(), entries))
}

/// The entries of an answer (header and body), as kafka-protocol reads them one at a time,
/// and the bytes after its list, unread: the guard copies them as they are (and
/// kafka-protocol would reserve a vector for whatever count Metadata's topics claim).
/// FindCoordinator before v4 has no list: its one coordinator, read whole.
fn decode(api_key: i16, version: i16, body: &[u8]) -> Result<(Vec<Entry>, Vec<u8>), String> {
    let mut buf = Bytes::copy_from_slice(body);
    let header_version = match api_key {
        METADATA => MetadataResponse::header_version(version),
        FIND_COORDINATOR => FindCoordinatorResponse::header_version(version),
        _ => DescribeClusterResponse::header_version(version),
    };
    ResponseHeader::decode(&mut buf, header_version).map_err(|e| e.to_string())?;
    if api_key == FIND_COORDINATOR && version < BATCHED {
        let answer =
            FindCoordinatorResponse::decode(&mut buf, version).map_err(|e| e.to_string())?;
        if buf.has_remaining() {
            return Err(format!("{} bytes left over", buf.remaining()));
        }
        let entries = if answer.node_id.0 >= 0 {
            vec![(answer.node_id.0, answer.host.to_string(), answer.port)]
        } else {
            Vec::new()
        };
        return Ok((entries, Vec::new()));
    }
    let short = || "cut short".to_owned();
    let compact_string = |buf: &mut Bytes| -> Result<(), String> {
        let n = uvarint(buf).ok_or_else(short)? as usize;
        if n > 0 {
            let len = n - 1;
            if buf.remaining() < len {
                return Err(short());
            }
            buf.advance(len);
        }
        Ok(())
    };
    // The fields before the list.
    match api_key {
        METADATA if version < METADATA_THROTTLE => {}
        METADATA | FIND_COORDINATOR => {
            buf.try_get_i32().map_err(|_| short())?;
        }
        _ => {
            buf.try_get_i32().map_err(|_| short())?; // throttle time
            buf.try_get_i16().map_err(|_| short())?; // error code
            compact_string(&mut buf)?; // error message
            if version >= 1 {
                buf.try_get_i8().map_err(|_| short())?; // endpoint type
            }
            compact_string(&mut buf)?; // cluster id
            buf.try_get_i32().map_err(|_| short())?; // controller id
        }
    }
    let count = if api_key != METADATA || version >= FLEXIBLE_METADATA {
        i64::from(uvarint(&mut buf).ok_or_else(short)?) - 1
    } else {
        i64::from(buf.try_get_i32().map_err(|_| short())?)
    };
    let mut entries = Vec::new();
    for _ in 0..count {
        let entry = match api_key {
            METADATA => {
                let b =
                    MetadataResponseBroker::decode(&mut buf, version).map_err(|e| e.to_string())?;
                (b.node_id.0, b.host.to_string(), b.port)
            }
            FIND_COORDINATOR => {
                let c = Coordinator::decode(&mut buf, version).map_err(|e| e.to_string())?;
                (c.node_id.0, c.host.to_string(), c.port)
            }
            _ => {
                let b =
                    DescribeClusterBroker::decode(&mut buf, version).map_err(|e| e.to_string())?;
                (b.broker_id.0, b.host.to_string(), b.port)
            }
        };
        entries.push(entry);
    }
    Ok((entries, buf.to_vec()))
}

fn uvarint(buf: &mut Bytes) -> Option<u32> {
    let mut value = 0u32;
    for shift in (0..35).step_by(7) {
        let byte = buf.try_get_u8().ok()?;
        value |= u32::from(byte & 0x7f).checked_shl(shift)?;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}
