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
//! `reemit_resp`. It prints the mean time per iteration on stderr; `benches/icount.sh`
//! turns callgrind's totals into instructions per iteration.

use std::hint::black_box;
use std::time::Instant;

use kafka_elect_leaders::{
    parse_request, parse_response, ElectLeadersRequestData, ElectLeadersResponseData,
    EncodeRequest, EncodeResponse, ErrorCode, PartitionResultData, ReplicaElectionResultData,
    TopicPartitionsData,
};

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
    let (topics, partitions) = match args.get(3).map(String::as_str) {
        Some("reference") => (1, 1),
        Some("large") => (1000, 100),
        None | Some("typical") => (10, 10),
        Some(_) => usage(),
    };
    let version: i16 = args
        .get(4)
        .map_or(0, |v| v.parse().unwrap_or_else(|_| usage()));

    // The cases of benches/codec.rs: topic names, every third partition failed with a
    // message.
    let names: Vec<Vec<u8>> = (0..topics)
        .map(|i| format!("bench.topic-{i:04}").into_bytes())
        .collect();
    let ids: Vec<i32> = (0..partitions).collect();
    let entries: Vec<_> = names
        .iter()
        .map(|n| TopicPartitionsData::new(n, &ids))
        .collect();
    let request = ElectLeadersRequestData {
        correlation_id: 42,
        client_id: Some(b"bench-admin-client"),
        topic_partitions: Some(&entries),
        ..Default::default()
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
                    error_code: if p % 3 == 0 {
                        ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE
                    } else {
                        ErrorCode::NONE
                    },
                    error_message: (p % 3 == 0)
                        .then(|| &messages[t * partitions as usize + p as usize][..]),
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
        correlation_id: 42,
        replica_election_results: &topic_results,
        ..Default::default()
    };

    let mut request_frame = vec![0; request.encoded_len(version).expect("valid request")];
    request.encode(version, &mut request_frame).expect("sized");
    let mut response_frame = vec![0; response.encoded_len(version).expect("valid response")];
    response
        .encode(version, &mut response_frame)
        .expect("sized");
    let mut out = vec![0; request_frame.len().max(response_frame.len())];
    let parsed_request = parse_request(&request_frame).expect("parses");
    let parsed_response = parse_response(&response_frame, version).expect("parses");

    let mut acc = 0i64;
    let start = Instant::now();
    for _ in 0..iterations {
        acc += match op.as_str() {
            "parse_req" => i64::from(
                parse_request(black_box(&request_frame))
                    .unwrap()
                    .timeout_ms(),
            ),
            "walk_req" => walk_request(&parse_request(black_box(&request_frame)).unwrap()),
            "sum_only" => walk_request(black_box(&parsed_request)),
            "parse_resp" => i64::from(
                parse_response(black_box(&response_frame), version)
                    .unwrap()
                    .throttle_time_ms(),
            ),
            "walk_resp" => {
                walk_response(&parse_response(black_box(&response_frame), version).unwrap())
            }
            "encode_req" => black_box(&request).encode(version, &mut out).unwrap() as i64,
            "encode_resp" => black_box(&response).encode(version, &mut out).unwrap() as i64,
            "reemit_req" => black_box(&parsed_request)
                .encode(version, &mut out)
                .unwrap() as i64,
            "reemit_resp" => black_box(&parsed_response)
                .encode(version, &mut out)
                .unwrap() as i64,
            _ => usage(),
        };
    }
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
