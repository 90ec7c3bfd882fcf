//! The cost of rewriting the broker addresses of one Metadata answer (v12, what Kafka 4.x
//! clients ask for): 3 and 100 brokers, 1,000 partitions over 100 topics, each partition
//! with 3 replicas. Beside it, the floor: copying the answer's bytes, which any proxy that
//! forwards it does; and kafka-protocol's decode and encode alone (the peer the rewrite is
//! built on), to show what the guard adds to it.
//!
//! ```sh
//! cargo bench -p kafka-elect-leaders-proxy --bench rewrite
//! ```

use std::hint::black_box;
use std::net::SocketAddr;

use bytes::{BufMut, Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use kafka_elect_leaders_proxy::addresses::{Routes, METADATA};
use kafka_elect_leaders_proxy::audit::ConnInfo;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, MetadataResponse, TopicName};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

const VERSION: i16 = 12;

fn broker(i: usize) -> SocketAddr {
    SocketAddr::from(([10, 0, (i / 250) as u8, (i % 250) as u8 + 1], 9092))
}

/// The answer's frame (size prefix, response header v1, body).
fn metadata(brokers: usize) -> Bytes {
    let mut answer = MetadataResponse::default();
    answer.brokers = (0..brokers)
        .map(|i| {
            MetadataResponseBroker::default()
                .with_node_id(BrokerId(i as i32))
                .with_host(StrBytes::from_string(broker(i).ip().to_string()))
                .with_port(9092)
        })
        .collect();
    answer.topics = (0..100)
        .map(|t| {
            MetadataResponseTopic::default()
                .with_name(Some(TopicName(StrBytes::from_string(format!(
                    "topic-{t:03}"
                )))))
                .with_partitions(
                    (0..10)
                        .map(|p| {
                            let replicas: Vec<BrokerId> = (0..3)
                                .map(|r| BrokerId(((t * 10 + p + r) % brokers) as i32))
                                .collect();
                            MetadataResponsePartition::default()
                                .with_partition_index(p as i32)
                                .with_leader_id(replicas[0])
                                .with_replica_nodes(replicas.clone())
                                .with_isr_nodes(replicas)
                        })
                        .collect(),
                )
        })
        .collect();
    let mut out = BytesMut::new();
    out.put_i32(0);
    out.put_i32(7); // correlation id
    out.put_u8(0); // no tagged fields in the header
    answer.encode(&mut out, VERSION).unwrap();
    let size = (out.len() - 4) as i32;
    out[..4].copy_from_slice(&size.to_be_bytes());
    out.freeze()
}

fn rewrite(c: &mut Criterion) {
    let mut group = c.benchmark_group("metadata_rewrite");
    for brokers in [3usize, 100] {
        let frame = metadata(brokers);
        // Every broker has a route: all of them are rewritten.
        let addresses = Routes::new(
            (0..brokers).map(|i| {
                (
                    SocketAddr::from(([127, 0, 0, 1], 19000 + i as u16)),
                    broker(i),
                    None,
                )
            }),
            None,
            None,
        );
        let conn = ConnInfo {
            client: "127.0.0.1:50000".parse().unwrap(),
            listener: "127.0.0.1:19000".parse().unwrap(),
            local: "127.0.0.1:19000".parse().unwrap(),
            upstream: broker(0),
        };
        assert!(addresses
            .rewrite(&frame, METADATA, VERSION, &conn)
            .is_some());
        group.throughput(Throughput::Bytes(frame.len() as u64));
        group.bench_with_input(BenchmarkId::new("guard", brokers), &frame, |b, frame| {
            // What the guard does with an answer this size (under its 64 KiB write
            // buffer): the rewritten head and the topics in one buffer.
            b.iter(|| {
                addresses
                    .rewrite(black_box(frame), METADATA, VERSION, &conn)
                    .map(|r| r.to_frame(frame))
            })
        });
        group.bench_with_input(
            BenchmarkId::new("kafka-protocol decode+encode", brokers),
            &frame,
            |b, frame| {
                b.iter(|| {
                    let mut body = Bytes::copy_from_slice(&frame[9..]);
                    let answer = MetadataResponse::decode(&mut body, VERSION).unwrap();
                    let mut out = BytesMut::with_capacity(frame.len());
                    answer.encode(&mut out, VERSION).unwrap();
                    out
                })
            },
        );
        group.bench_with_input(
            BenchmarkId::new("floor: copy", brokers),
            &frame,
            |b, frame| b.iter(|| BytesMut::from(black_box(&frame[..]))),
        );
    }
    group.finish();
}

criterion_group!(benches, rewrite);
criterion_main!(benches);
