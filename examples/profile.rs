//! A loop to put under a profiler: runs one operation of the benchmarks many times, on the
//! same cases (built the same way), with nothing else in the process.
//!
//! ```sh
//! cargo build --release --example profile
//! target/release/examples/profile OP ITERATIONS [reference|typical|large] [VERSION]
//! valgrind --tool=callgrind target/release/examples/profile walk_resp 200 typical 0
//! perf record target/release/examples/profile parse_req 20000 large 0
//! ```
//!
//! OP is one of `parse_req`, `walk_req`, `sum_only` (partition ids of a request parsed
//! beforehand), `parse_resp`, `walk_resp`, `encode_req`, `encode_resp`, `reemit_req`,
//! `reemit_resp`, `encode_known_req`, `encode_known_resp` (`encode_exact` with the length
//! known), `visit_req`, `visit_resp` (the single-pass visitors), `visit_req_unsigned` (the
//! request visitor adding ids as the read floor adds words, zero-extended), `visit_req_words`
//! (the ids read from `Int32List::as_bytes` in the read floor's own loop); the peer's `kp_walk_req`, `kp_walk_resp` (kafka-protocol decodes the body
//! and the same fields are read), `kp_encode_req`, `kp_encode_resp` (its `compute_size` +
//! size prefix + `encode` into a reused buffer); and the floors, on the same frames:
//! `read_floor_req`, `read_floor_resp` (sum the body as big-endian 32-bit words, touching
//! every byte once) and `chase_floor_req`, `chase_floor_resp` (read only the lengths and
//! counts needed to find where each element ends: a request's topic name lengths and
//! partition counts, a response's topic name lengths, partition counts, message lengths and
//! tagged-field counts). `reference` is the 29-byte request and 28-byte response of the
//! reference page. It prints the mean time per iteration on stderr; `benches/icount.sh` and
//! `benches/icount_table.sh` turn callgrind's totals into instructions per iteration.

use kafka_elect_leaders_testkit::floors::{chase_request, chase_response, read_floor};

use std::hint::black_box;
use std::time::Instant;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_elect_leaders::{
    parse_request, parse_response, ElectLeadersRequestData, ElectLeadersResponseData,
    EncodeRequest, EncodeResponse, ErrorCode, Int32List, PartitionResult, PartitionResultData,
    ReplicaElectionResultData, RequestVisitor, ResponseVisitor, TopicPartitions,
    TopicPartitionsData,
};
use kafka_protocol::messages::{
    ElectLeadersRequest as KpRequest, ElectLeadersResponse as KpResponse,
    RequestHeader as KpRequestHeader, ResponseHeader as KpResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion};

fn usage() -> ! {
    eprintln!("usage: profile OP ITERATIONS [reference|typical|large] [VERSION]");
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(op), Some(iterations)) = (args.get(1), args.get(2)) else {
        usage()
    };
    let iterations: u32 = iterations.parse().unwrap_or_else(|_| usage());
    let case = args.get(3).map_or("typical", String::as_str);
    let (topics, partitions) = match case {
        "reference" => (1, 1),
        "large" => (1000, 100),
        "typical" => (10, 10),
        _ => usage(),
    };
    let version: i16 = args
        .get(4)
        .map_or(0, |v| v.parse().unwrap_or_else(|_| usage()));

    // The cases of benches/codec.rs: topic names, every third partition failed with a
    // message; or the reference frames (one empty topic, partition 0, an empty message).
    let names: Vec<Vec<u8>> = if case == "reference" {
        vec![Vec::new()]
    } else {
        (0..topics)
            .map(|i| format!("bench.topic-{i:04}").into_bytes())
            .collect()
    };
    let ids: Vec<i32> = (0..partitions).collect();
    let entries: Vec<_> = names
        .iter()
        .map(|n| TopicPartitionsData::new(n, &ids))
        .collect();
    let request = if case == "reference" {
        ElectLeadersRequestData {
            topic_partitions: Some(&entries),
            timeout_ms: 0,
            ..Default::default()
        }
    } else {
        ElectLeadersRequestData {
            correlation_id: 42,
            client_id: Some(b"bench-admin-client"),
            topic_partitions: Some(&entries),
            ..Default::default()
        }
    };
    let messages: Vec<Vec<u8>> = names
        .iter()
        .flat_map(|n| {
            (0..partitions).map(move |p| {
                format!(
                    "Failed to elect leader for partition {}-{p} under strategy \
                     PreferredLeaderElectionStrategy",
                    String::from_utf8_lossy(n)
                )
                .into_bytes()
            })
        })
        .collect();
    let results: Vec<Vec<PartitionResultData>> = (0..topics as usize)
        .map(|t| {
            (0..partitions)
                .map(|p| PartitionResultData {
                    partition_id: p,
                    error_code: if p % 3 == 0 && case != "reference" {
                        ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE
                    } else {
                        ErrorCode::NONE
                    },
                    error_message: if case == "reference" {
                        Some(b"")
                    } else {
                        (p % 3 == 0).then(|| &messages[t * partitions as usize + p as usize][..])
                    },
                    tagged_fields: &[],
                })
                .collect()
        })
        .collect();
    let topic_results: Vec<_> = names
        .iter()
        .zip(&results)
        .map(|(n, r)| ReplicaElectionResultData {
            topic: n,
            partition_result: r,
            tagged_fields: &[],
        })
        .collect();
    let response = ElectLeadersResponseData {
        correlation_id: if case == "reference" { 0 } else { 42 },
        replica_election_results: &topic_results,
        ..Default::default()
    };

    let mut request_frame = vec![0; request.encoded_len(version).expect("valid request")];
    request.encode(version, &mut request_frame).expect("sized");
    let mut response_frame = vec![0; response.encoded_len(version).expect("valid response")];
    response
        .encode(version, &mut response_frame)
        .expect("sized");
    let request_len = request_frame.len();
    let response_len = response_frame.len();
    let mut out = vec![0; request_len.max(response_len)];
    let parsed_request = parse_request(&request_frame).expect("parses");
    let parsed_response = parse_response(&response_frame, version).expect("parses");

    // kafka-protocol's side: the body after our header (it decodes the body only), and the
    // same messages decoded once, to encode.
    let request_header_len = parsed_request.body_range().start;
    let response_header_len = parsed_response.body_range().start;
    let request_body = Bytes::copy_from_slice(&request_frame[request_header_len..]);
    let response_body = Bytes::copy_from_slice(&response_frame[response_header_len..]);
    let kp_request = {
        let mut buf = Bytes::copy_from_slice(&request_frame[4..]);
        let header = KpRequestHeader::decode(&mut buf, KpRequest::header_version(version))
            .expect("kafka-protocol decodes");
        (
            header,
            KpRequest::decode(&mut buf, version).expect("decodes"),
        )
    };
    let kp_response = {
        let mut buf = Bytes::copy_from_slice(&response_frame[4..]);
        let header = KpResponseHeader::decode(&mut buf, KpResponse::header_version(version))
            .expect("kafka-protocol decodes");
        (
            header,
            KpResponse::decode(&mut buf, version).expect("decodes"),
        )
    };
    let mut kp_out = BytesMut::with_capacity(out.len());
    if case == "reference" && version == 2 {
        assert_eq!(
            request_frame,
            include_bytes!("../corpus/request-v2-min.bin")
        );
        assert_eq!(
            response_frame,
            include_bytes!("../corpus/response-v2-min.bin")
        );
    }

    // The operation is chosen once, before the loop: one indirect call an iteration, not a
    // string comparison per arm.
    let mut run: Box<dyn FnMut() -> i64 + '_> = match op.as_str() {
        "parse_req" => Box::new(|| {
            i64::from(
                parse_request(black_box(&request_frame))
                    .unwrap()
                    .timeout_ms(),
            )
        }),
        "walk_req" => Box::new(|| walk_request(&parse_request(black_box(&request_frame)).unwrap())),
        "sum_only" => Box::new(|| walk_request(black_box(&parsed_request))),
        "parse_resp" => Box::new(|| {
            i64::from(
                parse_response(black_box(&response_frame), version)
                    .unwrap()
                    .throttle_time_ms(),
            )
        }),
        "walk_resp" => Box::new(|| {
            walk_response(&parse_response(black_box(&response_frame), version).unwrap())
        }),
        "encode_req" => Box::new(|| black_box(&request).encode(version, &mut out).unwrap() as i64),
        "encode_resp" => {
            Box::new(|| black_box(&response).encode(version, &mut out).unwrap() as i64)
        }
        "encode_known_req" => Box::new(|| {
            black_box(&request)
                .encode_exact(version, request_len, &mut out)
                .unwrap() as i64
        }),
        "encode_known_resp" => Box::new(|| {
            black_box(&response)
                .encode_exact(version, response_len, &mut out)
                .unwrap() as i64
        }),
        "reemit_req" => Box::new(|| {
            black_box(&parsed_request)
                .encode(version, &mut out)
                .unwrap() as i64
        }),
        "reemit_resp" => Box::new(|| {
            black_box(&parsed_response)
                .encode(version, &mut out)
                .unwrap() as i64
        }),
        "visit_req" => Box::new(|| visit_request(black_box(&request_frame))),
        "visit_req_unsigned" => Box::new(|| visit_request_unsigned(black_box(&request_frame))),
        "visit_req_words" => Box::new(|| visit_request_words(black_box(&request_frame))),
        "visit_resp" => Box::new(|| visit_response(black_box(&response_frame), version)),
        "kp_walk_req" => Box::new(|| {
            let mut buf = black_box(&request_body).clone();
            walk_kp_request(&KpRequest::decode(&mut buf, version).unwrap())
        }),
        "kp_walk_resp" => Box::new(|| {
            let mut buf = black_box(&response_body).clone();
            walk_kp_response(&KpResponse::decode(&mut buf, version).unwrap())
        }),
        "kp_encode_req" => Box::new(|| {
            kp_encode(
                black_box(&kp_request),
                KpRequest::header_version(version),
                version,
                &mut kp_out,
            )
        }),
        "kp_encode_resp" => Box::new(|| {
            kp_encode(
                black_box(&kp_response),
                KpResponse::header_version(version),
                version,
                &mut kp_out,
            )
        }),
        "read_floor_req" => {
            Box::new(|| read_floor(black_box(&request_frame[request_header_len..])))
        }
        "read_floor_resp" => {
            Box::new(|| read_floor(black_box(&response_frame[response_header_len..])))
        }
        "chase_floor_req" => {
            Box::new(|| chase_request(black_box(&request_frame[request_header_len..]), version))
        }
        "chase_floor_resp" => {
            Box::new(|| chase_response(black_box(&response_frame[response_header_len..]), version))
        }
        _ => usage(),
    };
    let mut acc = 0i64;
    let start = Instant::now();
    for _ in 0..iterations {
        acc += run();
    }
    drop(run);
    eprintln!("{:?} per iteration", start.elapsed() / iterations.max(1));
    println!("{acc}");
}

fn touch(s: &[u8]) -> i64 {
    s.len() as i64 + s.first().map_or(0, |&b| i64::from(b))
}

fn walk_request(r: &kafka_elect_leaders::ElectLeadersRequest<'_>) -> i64 {
    let mut acc = i64::from(r.correlation_id()) + i64::from(r.timeout_ms());
    for topic in r.topic_partitions().into_iter().flatten() {
        acc += touch(topic.topic());
        acc += topic.partitions().iter().map(i64::from).sum::<i64>();
    }
    acc
}

fn walk_response(r: &kafka_elect_leaders::ElectLeadersResponse<'_>) -> i64 {
    let mut acc = i64::from(r.correlation_id()) + i64::from(r.throttle_time_ms());
    for result in r.replica_election_results() {
        acc += touch(result.topic());
        for p in result.partition_result() {
            acc += i64::from(p.partition_id()) + i64::from(p.error_code().0);
            acc += p.error_message().map_or(0, touch);
        }
    }
    acc
}

/// The walk of `walk_request` in one pass: each topic handed over as it is validated.
fn visit_request(frame: &[u8]) -> i64 {
    struct Walk(i64);
    impl<'a> RequestVisitor<'a> for Walk {
        #[inline(always)]
        fn topic_partitions(&mut self, topic: TopicPartitions<'a>) {
            self.0 += touch(topic.topic());
            self.0 += topic.partitions().iter().map(i64::from).sum::<i64>();
        }
    }
    let mut walk = Walk(0);
    let r = kafka_elect_leaders::visit_request(frame, &mut walk).unwrap();
    walk.0 + i64::from(r.correlation_id()) + i64::from(r.timeout_ms())
}

/// `visit_request` with each topic's ids summed by `sum_ids` into a `u64`, the read
/// floor's accumulator.
#[inline(always)]
fn visit_request_summing(frame: &[u8], sum_ids: impl Fn(Int32List<'_>) -> u64) -> i64 {
    struct Walk<F>(u64, F);
    impl<'a, F: Fn(Int32List<'_>) -> u64> RequestVisitor<'a> for Walk<F> {
        #[inline(always)]
        fn topic_partitions(&mut self, topic: TopicPartitions<'a>) {
            self.0 += touch(topic.topic()) as u64;
            self.0 += (self.1)(topic.partitions());
        }
    }
    let mut walk = Walk(0, sum_ids);
    let r = kafka_elect_leaders::visit_request(frame, &mut walk).unwrap();
    walk.0 as i64 + i64::from(r.correlation_id()) + i64::from(r.timeout_ms())
}

/// `visit_request` with the ids added as the read floor adds its words (zero-extended, not
/// sign-extended), through the iterator: what the walk costs when its arithmetic is the
/// floor's.
fn visit_request_unsigned(frame: &[u8]) -> i64 {
    visit_request_summing(frame, |ids| ids.iter().map(|id| u64::from(id as u32)).sum())
}

/// `visit_request` with the ids read from `Int32List::as_bytes` exactly as the read floor
/// reads the body (big-endian words, zero-extended, added): the walk when the caller's
/// arithmetic is the floor's, loop shape included.
fn visit_request_words(frame: &[u8]) -> i64 {
    visit_request_summing(frame, |ids| {
        ids.as_bytes()
            .chunks_exact(4)
            .map(|w| u64::from(u32::from_be_bytes([w[0], w[1], w[2], w[3]])))
            .sum()
    })
}

/// The walk of `walk_response` in one pass: each value handed over as it is validated.
fn visit_response(frame: &[u8], version: i16) -> i64 {
    struct Walk(i64);
    impl<'a> ResponseVisitor<'a> for Walk {
        #[inline(always)]
        fn replica_election_result(&mut self, topic: &'a [u8]) {
            self.0 += touch(topic);
        }
        #[inline(always)]
        fn partition_result(&mut self, p: PartitionResult<'a>) {
            self.0 += i64::from(p.partition_id()) + i64::from(p.error_code().0);
            self.0 += p.error_message().map_or(0, touch);
        }
    }
    let mut walk = Walk(0);
    let r = kafka_elect_leaders::visit_response(frame, version, &mut walk).unwrap();
    walk.0 + i64::from(r.correlation_id()) + i64::from(r.throttle_time_ms())
}

fn walk_kp_request(body: &KpRequest) -> i64 {
    let mut acc = i64::from(body.timeout_ms);
    for topic in body.topic_partitions.iter().flatten() {
        acc += touch(topic.topic.as_bytes());
        acc += topic.partitions.iter().map(|&p| i64::from(p)).sum::<i64>();
    }
    acc
}

fn walk_kp_response(body: &KpResponse) -> i64 {
    let mut acc = i64::from(body.throttle_time_ms);
    for result in &body.replica_election_results {
        acc += touch(result.topic.as_bytes());
        for p in &result.partition_result {
            acc += i64::from(p.partition_id) + i64::from(p.error_code);
            acc += p.error_message.as_ref().map_or(0, |m| touch(m.as_bytes()));
        }
    }
    acc
}

/// kafka-protocol's encode of a whole frame into a reused buffer: measure (for the size
/// prefix), then write; no allocation once `out` has grown.
fn kp_encode<H: Encodable, B: Encodable>(
    (header, body): &(H, B),
    header_version: i16,
    version: i16,
    out: &mut BytesMut,
) -> i64 {
    out.clear();
    let size = header.compute_size(header_version).unwrap() + body.compute_size(version).unwrap();
    out.reserve(4 + size);
    out.put_i32(size as i32);
    header.encode(out, header_version).unwrap();
    body.encode(out, version).unwrap();
    out.len() as i64
}
