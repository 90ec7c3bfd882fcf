//! endpoints: the guard's rewrite of KIP-951 node endpoints in Produce (v10+) and Fetch
//! (v16+) answers (crates/proxy/src/addresses/endpoints.rs, shapes.rs), which steps over the
//! broker's answer by hand and decodes only the endpoints with kafka-protocol. Part of the
//! `addresses` target.
//!
//! The input builds an answer with kafka-protocol's structures (partitions with records
//! bytes, endpoints at the route's upstream, the guard's listener or elsewhere), maybe
//! damaged afterwards (cut, a byte changed, four bytes replaced: a count among them), and
//! what must hold:
//!
//! - nothing panics or aborts (an allocation sized by a count read off the wire is one);
//! - an answer built whole and not damaged is rewritten exactly when one of its endpoints
//!   is at the upstream;
//! - a rewritten answer is a whole frame that kafka-protocol reads at the same version to
//!   the broker's answer but for the endpoints at the upstream, now at the listener.

use std::net::SocketAddr;

use arbitrary::Unstructured;
use bytes::{Bytes, BytesMut};
use kafka_elect_leaders_proxy::addresses::{Routes, PRODUCE};
use kafka_elect_leaders_proxy::testing::ConnInfo;
use kafka_protocol::messages::fetch_response::{
    FetchableTopicResponse, NodeEndpoint as FetchEndpoint, PartitionData,
};
use kafka_protocol::messages::produce_response::{
    NodeEndpoint as ProduceEndpoint, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::{
    BrokerId, FetchResponse, ProduceResponse, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};

use crate::damage::{address, damage};

const UPSTREAM: &str = "10.0.0.1:9092";
const LISTEN: &str = "127.0.0.1:19092";

/// One answer, decoded: Produce's or Fetch's.
#[derive(Debug, PartialEq)]
enum Answer {
    Produce(ProduceResponse),
    Fetch(FetchResponse),
}

impl Answer {
    /// Its endpoints' (node, host, port), and the answer with none.
    fn split(mut self) -> (Vec<(i32, String, i32)>, Answer) {
        let endpoints = match &mut self {
            Answer::Produce(a) => std::mem::take(&mut a.node_endpoints)
                .into_iter()
                .map(|e| (e.node_id.0, e.host.to_string(), e.port))
                .collect(),
            Answer::Fetch(a) => std::mem::take(&mut a.node_endpoints)
                .into_iter()
                .map(|e| (e.node_id.0, e.host.to_string(), e.port))
                .collect(),
        };
        (endpoints, self)
    }
}

fn header_version(api_key: i16, version: i16) -> i16 {
    if api_key == PRODUCE {
        ProduceResponse::header_version(version)
    } else {
        FetchResponse::header_version(version)
    }
}

fn decode(api_key: i16, version: i16, frame: &[u8]) -> Result<Answer, String> {
    let mut buf = Bytes::copy_from_slice(frame.get(4..).ok_or("no size prefix")?);
    ResponseHeader::decode(&mut buf, header_version(api_key, version))
        .map_err(|e| e.to_string())?;
    let answer = if api_key == PRODUCE {
        Answer::Produce(ProduceResponse::decode(&mut buf, version).map_err(|e| e.to_string())?)
    } else {
        Answer::Fetch(FetchResponse::decode(&mut buf, version).map_err(|e| e.to_string())?)
    };
    if !buf.is_empty() {
        return Err(format!("{} bytes left over", buf.len()));
    }
    Ok(answer)
}

fn build(u: &mut Unstructured<'_>, api_key: i16, version: i16) -> arbitrary::Result<Vec<u8>> {
    let s = |text: String| StrBytes::from_string(text);
    let mut endpoints = Vec::new();
    for node in 0..u.int_in_range(0..=3)? {
        let (host, port) = address(u)?;
        let rack = if u.arbitrary()? {
            Some(s("r".repeat(u.int_in_range(0..=3)?)))
        } else {
            None
        };
        endpoints.push((node, host, port, rack));
    }
    let mut body = BytesMut::new();
    let encoded = if api_key == PRODUCE {
        let mut topics = Vec::new();
        for t in 0..u.int_in_range(0..=2)? {
            let partitions = (0..u.int_in_range(0..=2)?)
                .map(|p| {
                    PartitionProduceResponse::default()
                        .with_index(p)
                        .with_error_code(6)
                        .with_base_offset(i64::from(t))
                })
                .collect();
            topics.push(
                TopicProduceResponse::default()
                    .with_name(TopicName(s(format!("t{t}"))))
                    .with_partition_responses(partitions),
            );
        }
        ProduceResponse::default()
            .with_responses(topics)
            .with_node_endpoints(
                endpoints
                    .into_iter()
                    .map(|(n, h, p, r)| {
                        ProduceEndpoint::default()
                            .with_node_id(BrokerId(n))
                            .with_host(s(h))
                            .with_port(p)
                            .with_rack(r)
                    })
                    .collect(),
            )
            .encode(&mut body, version)
    } else {
        let mut topics = Vec::new();
        for _ in 0..u.int_in_range(0..=2)? {
            let mut partitions = Vec::new();
            for p in 0..u.int_in_range(0..=2)? {
                let len = u.int_in_range(0..=40)?;
                let records = if u.arbitrary()? {
                    Some(Bytes::copy_from_slice(u.bytes(len)?))
                } else {
                    None
                };
                partitions.push(
                    PartitionData::default()
                        .with_partition_index(p)
                        .with_high_watermark(i64::from(p) * 10)
                        .with_records(records),
                );
            }
            topics.push(FetchableTopicResponse::default().with_partitions(partitions));
        }
        FetchResponse::default()
            .with_responses(topics)
            .with_node_endpoints(
                endpoints
                    .into_iter()
                    .map(|(n, h, p, r)| {
                        FetchEndpoint::default()
                            .with_node_id(BrokerId(n))
                            .with_host(s(h))
                            .with_port(p)
                            .with_rack(r)
                    })
                    .collect(),
            )
            .encode(&mut body, version)
    };
    // A host kafka-protocol cannot write (longer than a string may be): no answer.
    encoded.map_err(|_| arbitrary::Error::IncorrectFormat)?;
    let mut header = BytesMut::new();
    ResponseHeader::default()
        .with_correlation_id(7)
        .encode(&mut header, header_version(api_key, version))
        .map_err(|_| arbitrary::Error::IncorrectFormat)?;
    let mut frame = ((header.len() + body.len()) as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&header);
    frame.extend_from_slice(&body);
    Ok(frame)
}

/// The check, on what is left of the `addresses` target's input.
pub fn check_endpoints(u: &mut Unstructured<'_>, api_key: i16) {
    let versions = if api_key == PRODUCE { 10..=13 } else { 16..=18 };
    let Ok(version) = u.int_in_range(versions) else {
        return;
    };
    let Ok(mut frame) = build(u, api_key, version) else {
        return;
    };
    let whole = !damage(u, &mut frame);
    let upstream: SocketAddr = UPSTREAM.parse().expect("an address");
    let listen: SocketAddr = LISTEN.parse().expect("an address");
    let addresses = Routes::new([(listen, upstream, None)], None, None);
    let conn = ConnInfo {
        client: "127.0.0.1:50000".parse().expect("an address"),
        listener: listen,
        local: listen,
        upstream,
    };
    let rewritten = addresses.rewrite_endpoints(&frame, api_key, version, &conn);
    let at_upstream = |(_, host, port): &(i32, String, i32)| host == "10.0.0.1" && *port == 9092;
    if whole {
        let (endpoints, _) = decode(api_key, version, &frame)
            .expect("an answer kafka-protocol built reads back")
            .split();
        assert_eq!(
            rewritten.is_some(),
            endpoints.iter().any(at_upstream),
            "v{version} {endpoints:?}: rewritten or not as its endpoints say"
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
    // The scan steps over strings without reading them as UTF-8, as a proxy should: a
    // damaged byte in a topic name or a message stays in the answer, which kafka-protocol
    // then refuses as it refused the broker's.
    let (was, rest_was) = match decode(api_key, version, &frame) {
        Ok(answer) => answer.split(),
        Err(e) => {
            let now = decode(api_key, version, &out).err();
            assert_eq!(
                now.as_deref(),
                Some(e.as_str()),
                "an answer refused is refused alike"
            );
            return;
        }
    };
    let (now, rest_now) = decode(api_key, version, &out)
        .unwrap_or_else(|e| panic!("the rewritten answer does not decode: {e}"))
        .split();
    assert_eq!(
        rest_now, rest_was,
        "all but the endpoints as the broker sent it"
    );
    assert_eq!(now.len(), was.len(), "as many endpoints after as before");
    for (before, after) in was.iter().zip(&now) {
        if at_upstream(before) {
            assert_eq!(after, &(before.0, "127.0.0.1".to_owned(), 19092));
        } else {
            assert_eq!(after, before, "an endpoint elsewhere is left as it is");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inputs from a fixed pseudo-random stream: the check holds on each, and some of the
    /// answers built are rewritten (so the check is not vacuous).
    #[test]
    fn the_check_holds_and_rewrites_some() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut rewritten = 0;
        for _ in 0..3000 {
            let data: Vec<u8> = (0..200)
                .map(|_| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    (state >> 56) as u8
                })
                .collect();
            for api_key in [PRODUCE, kafka_elect_leaders_proxy::addresses::FETCH] {
                let mut u = Unstructured::new(&data);
                check_endpoints(&mut u, api_key);
                let mut u = Unstructured::new(&data);
                let version = if api_key == PRODUCE { 10..=13 } else { 16..=18 };
                let (Ok(version), mut u) = (u.int_in_range(version), u) else {
                    continue;
                };
                if let Ok(frame) = build(&mut u, api_key, version) {
                    let upstream: SocketAddr = UPSTREAM.parse().unwrap();
                    let listen: SocketAddr = LISTEN.parse().unwrap();
                    let addresses = Routes::new([(listen, upstream, None)], None, None);
                    let conn = ConnInfo {
                        client: "127.0.0.1:50000".parse().unwrap(),
                        listener: listen,
                        local: listen,
                        upstream,
                    };
                    if addresses
                        .rewrite_endpoints(&frame, api_key, version, &conn)
                        .is_some()
                    {
                        rewritten += 1;
                    }
                }
            }
        }
        assert!(rewritten > 100, "{rewritten} answers rewritten");
    }
}
