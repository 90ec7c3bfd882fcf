//! Writes a large synthetic pcap for the capture benchmark (`benches/capture.sh`): many TCP
//! connections to a broker on port 9092, interleaved packet by packet as a busy host's
//! would be, each carrying ApiVersions, Produce-sized frames of another API, and
//! ElectLeaders requests (1 to 300 partitions) with their responses, cut into 1448-byte
//! segments.
//!
//! ```sh
//! cargo run --release --example make_capture -- target/bench/big.pcap 500 2000
//! ```
//! (path, size in MB, connections). The same arguments always give the same file.

use kafka_elect_leaders_testkit::pcap;

use std::io::{BufWriter, Write};

use kafka_elect_leaders::{
    ElectLeadersRequestData, ElectLeadersResponseData, ElectionType, EncodeRequest, EncodeResponse,
    ErrorCode, PartitionResultData, ReplicaElectionResultData, TopicPartitionsData,
};

const MSS: usize = 1448;

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn elect_request(correlation_id: i32, partitions: &[i32]) -> Vec<u8> {
    let topics = [TopicPartitionsData::new(b"orders-eu-west", partitions)];
    let data = ElectLeadersRequestData {
        correlation_id,
        client_id: Some(b"bench-admin"),
        election_type: ElectionType::PREFERRED,
        topic_partitions: Some(&topics),
        timeout_ms: 30_000,
        ..Default::default()
    };
    let mut buf = vec![0; data.encoded_len(2).unwrap()];
    data.encode(2, &mut buf).unwrap();
    buf
}

fn elect_response(correlation_id: i32, partitions: &[i32]) -> Vec<u8> {
    let results: Vec<PartitionResultData<'_>> = partitions
        .iter()
        .map(|&p| PartitionResultData {
            partition_id: p,
            error_code: if p % 3 == 0 {
                ErrorCode(84)
            } else {
                ErrorCode(0)
            },
            error_message: (p % 3 == 0).then_some(&b"Leader election not needed"[..]),
            tagged_fields: &[],
        })
        .collect();
    let topics = [ReplicaElectionResultData {
        topic: b"orders-eu-west",
        partition_result: &results,
        tagged_fields: &[],
    }];
    let data = ElectLeadersResponseData {
        correlation_id,
        replica_election_results: &topics,
        ..Default::default()
    };
    let mut buf = vec![0; data.encoded_len(2).unwrap()];
    data.encode(2, &mut buf).unwrap();
    buf
}

/// A frame of another API: its request header, then filler (the tool passes it over).
fn other_request(api_key: i16, version: i16, correlation_id: i32, body: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(body + 20);
    f.extend(((10 + body) as i32).to_be_bytes());
    f.extend(api_key.to_be_bytes());
    f.extend(version.to_be_bytes());
    f.extend(correlation_id.to_be_bytes());
    f.extend((-1i16).to_be_bytes());
    f.resize(f.len() + body, 0x5a);
    f
}

fn other_response(correlation_id: i32, body: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(body + 8);
    f.extend(((4 + body) as i32).to_be_bytes());
    f.extend(correlation_id.to_be_bytes());
    f.resize(f.len() + body, 0xa5);
    f
}

/// One connection's two streams, as (to_server, bytes) exchanges.
fn connection_script(rng: &mut Rng, budget: usize) -> Vec<(bool, Vec<u8>)> {
    let mut script = vec![
        (true, other_request(18, 3, 0, 40)),
        (false, other_response(0, 400)),
    ];
    let mut used = 0;
    let mut id = 1;
    while used < budget {
        let (request, response) = if rng.below(3) == 0 {
            let n = 1 + rng.below(300) as i32;
            let partitions: Vec<i32> = (0..n).collect();
            (
                elect_request(id, &partitions),
                elect_response(id, &partitions),
            )
        } else {
            (
                other_request(0, 9, id, 2_000 + rng.below(14_000) as usize),
                other_response(id, 60),
            )
        };
        used += request.len() + response.len();
        script.push((true, request));
        script.push((false, response));
        id += 1;
    }
    script
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args.first().map_or("target/bench/big.pcap", String::as_str);
    let megabytes: usize = args.get(1).map_or(500, |a| a.parse().unwrap());
    let connections: usize = args.get(2).map_or(2000, |a| a.parse().unwrap());
    if let Some(dir) = std::path::Path::new(path).parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    let mut out = BufWriter::new(std::fs::File::create(path).unwrap());
    // The file header, then records as they are made.
    let header = pcap::pcap_file(pcap::LINKTYPE_ETHERNET, false, false, &[]);
    out.write_all(&header).unwrap();
    let mut rng = Rng(0x6361_7074_7572_6521);
    let per_connection = megabytes * 1_000_000 / connections;

    // Each connection: its segments, made lazily, round-robin over the open ones.
    struct Conn {
        port: u16,
        script: std::vec::IntoIter<(bool, Vec<u8>)>,
        pending: std::collections::VecDeque<(bool, Vec<u8>)>,
        cseq: u32,
        sseq: u32,
    }
    let mut open: Vec<Conn> = Vec::new();
    let mut started = 0;
    let mut packets = 0u64;
    let mut micros = 0u64;
    let mut written = header.len();
    let mut emit = |to_server: bool, c: &Conn, seq: u32, ack: u32, flags: u8, payload: &[u8]| {
        let (src, dst, sport, dport) = if to_server {
            ([10, 1, 0, 1], [10, 1, 0, 2], c.port, 9092)
        } else {
            ([10, 1, 0, 2], [10, 1, 0, 1], 9092, c.port)
        };
        let frame = pcap::ethernet_ipv4_tcp(src, dst, sport, dport, seq, ack, flags, payload);
        micros += 7;
        let record = pcap::pcap_record(
            1_764_540_000 + (micros / 1_000_000) as u32,
            (micros % 1_000_000) as u32,
            &frame,
            frame.len() as u32,
            false,
        );
        written += record.len();
        packets += 1;
        out.write_all(&record).unwrap();
    };
    loop {
        while open.len() < 64 && started < connections {
            let port = 20_000 + started as u16;
            let c = Conn {
                port,
                script: connection_script(&mut rng, per_connection).into_iter(),
                pending: Default::default(),
                cseq: 1_000 + started as u32 * 7919,
                sseq: 0xffff_0000u32.wrapping_add(started as u32 * 104_729),
            };
            emit(true, &c, c.cseq, 0, pcap::SYN, &[]);
            emit(false, &c, c.sseq, c.cseq + 1, pcap::SYN | pcap::ACK, &[]);
            let mut c = c;
            c.cseq = c.cseq.wrapping_add(1);
            c.sseq = c.sseq.wrapping_add(1);
            open.push(c);
            started += 1;
        }
        if open.is_empty() {
            break;
        }
        let i = rng.below(open.len() as u64) as usize;
        let c = &mut open[i];
        if c.pending.is_empty() {
            match c.script.next() {
                Some((to_server, bytes)) => {
                    for chunk in bytes.chunks(MSS) {
                        c.pending.push_back((to_server, chunk.to_vec()));
                    }
                }
                None => {
                    let c = open.swap_remove(i);
                    emit(true, &c, c.cseq, c.sseq, pcap::FIN | pcap::ACK, &[]);
                    emit(false, &c, c.sseq, c.cseq + 1, pcap::FIN | pcap::ACK, &[]);
                    continue;
                }
            }
        }
        let (to_server, chunk) = c.pending.pop_front().unwrap();
        let (seq, ack) = if to_server {
            (c.cseq, c.sseq)
        } else {
            (c.sseq, c.cseq)
        };
        let c = &open[i];
        emit(to_server, c, seq, ack, pcap::ACK | pcap::PSH, &chunk);
        let c = &mut open[i];
        if to_server {
            c.cseq = c.cseq.wrapping_add(chunk.len() as u32);
        } else {
            c.sseq = c.sseq.wrapping_add(chunk.len() as u32);
        }
    }
    out.flush().unwrap();
    eprintln!("{path}: {written} bytes, {packets} packets, {connections} connections");
}
