//! Whole connections and packet captures through the `elect-leaders` tool: the real
//! captures of `corpus/captures/` (Apache Kafka 4.4.0 and three real clients, recorded by
//! `tests/e2e/run.sh`), recorded connection streams, and tshark's reading of the same
//! packets where it reads them right.

use kafka_elect_leaders_testkit as common;

mod tool;

use std::process::{Command, Output, Stdio};

use serde_json::Value;
use tool::captures_dir;

const PCAP: &str = "elect-leaders-kafka-4.4.pcap";
const PCAPNG: &str = "elect-leaders-kafka-4.4.pcapng";

fn run(args: &[&str], stdin: &[u8]) -> Output {
    tool::run_in(&captures_dir(), args, stdin)
}

#[track_caller]
fn ok_lines(output: &Output) -> Vec<Value> {
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "stderr: {err}");
    assert!(err.is_empty(), "stderr: {err}");
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// What the clients asked for and reported, per `corpus/captures/README.md`: each client
/// elected one partition of topic `capture`, first with success, then again (not needed).
const ELECTIONS: [(&str, i64); 3] = [
    ("e2e-java-admin", 0),
    ("e2e-confluent", 1),
    ("e2e-kafka-python", 2),
];

fn check_real_capture(objects: &[Value]) {
    let requests: Vec<&Value> = objects.iter().filter(|o| o["kind"] == "request").collect();
    let responses: Vec<&Value> = objects.iter().filter(|o| o["kind"] == "response").collect();
    assert_eq!((requests.len(), responses.len()), (6, 6), "{objects:#?}");
    for (client, partition) in ELECTIONS {
        let mine: Vec<&&Value> = requests
            .iter()
            .filter(|r| r["client_id"] == client)
            .collect();
        assert_eq!(mine.len(), 2, "{client}");
        let mut codes = Vec::new();
        for request in mine {
            assert_eq!(request["api_key"], 43);
            assert_eq!(request["api_version"], 2);
            assert_eq!(request["election_type"], 0);
            assert_eq!(
                request["topic_partitions"],
                serde_json::json!([{"topic": "capture", "partitions": [partition]}])
            );
            // Its response: same connection, the other way, same correlation id.
            let src = &request["source"];
            let answer: Vec<&&Value> = responses
                .iter()
                .filter(|r| {
                    r["correlation_id"] == request["correlation_id"]
                        && r["source"]["connection"] == src["connection"]
                })
                .collect();
            assert_eq!(answer.len(), 1, "{client}: {request}");
            let answer = answer[0];
            assert_eq!(answer["source"]["src"], src["dst"]);
            assert_eq!(answer["source"]["dst"], src["src"]);
            assert!(answer["source"]["packet"].as_u64() > src["packet"].as_u64());
            // Parsed with its request's version.
            assert_eq!(answer["api_version"], 2);
            assert_eq!(answer["error_code"], 0);
            let results = &answer["replica_election_results"];
            assert_eq!(results[0]["topic"], "capture");
            assert_eq!(results[0]["partition_result"][0]["partition_id"], partition);
            codes.push(
                results[0]["partition_result"][0]["error_code"]
                    .as_i64()
                    .unwrap(),
            );
        }
        // NONE, then ELECTION_NOT_NEEDED.
        assert_eq!(codes, [0, 84], "{client}");
    }
}

#[test]
fn real_pcap_and_pcapng_captures_decode_to_what_the_clients_reported() {
    let pcap = ok_lines(&run(&["decode", PCAP], b""));
    let pcapng = ok_lines(&run(&["decode", PCAPNG], b""));
    check_real_capture(&pcap);
    check_real_capture(&pcapng);
    // The same packets in both files: the same objects, but for the clock's resolution.
    let strip = |objects: &[Value]| -> Vec<Value> {
        objects
            .iter()
            .map(|o| {
                let mut o = o.clone();
                // And what follows from the times: nanoseconds in one, microseconds
                // (rounded) in the other.
                for member in ["time", "epoch_us", "request_time", "latency_us"] {
                    o["source"].as_object_mut().unwrap().remove(member);
                }
                o
            })
            .collect()
    };
    assert_eq!(strip(&pcap), strip(&pcapng));
    // And from standard input, recognised by the magic number alone.
    let bytes = std::fs::read(captures_dir().join(PCAPNG)).unwrap();
    assert_eq!(ok_lines(&run(&["decode", "-"], &bytes)), pcapng);
}

#[test]
fn all_lists_every_api_of_every_connection() {
    let objects = ok_lines(&run(&["decode", "--all", PCAP], b""));
    let names: std::collections::BTreeSet<&str> = objects
        .iter()
        .filter_map(|o| o["api_name"].as_str())
        .collect();
    assert!(
        names.contains("ApiVersions") && names.contains("Metadata"),
        "{names:?}"
    );
    // Every connection starts with ApiVersions, answered at its version.
    for o in &objects {
        if o["source"]["frame"] == 1 {
            assert_eq!(o["api_name"], "ApiVersions", "{o}");
        }
        if o["api_name"].is_string() && o["api_key"] != 43 {
            assert!(o["bytes"].as_u64().unwrap() >= 8, "{o}");
        }
    }
    let elect = objects.iter().filter(|o| o["api_key"] == 43).count();
    assert_eq!(elect, 12, "the requests and, from them, their responses");
    // Requests and responses of other APIs come in pairs.
    let other_requests = objects
        .iter()
        .filter(|o| o["kind"] == "request" && o["api_name"].is_string())
        .count();
    let other_responses = objects
        .iter()
        .filter(|o| o["kind"] == "response" && o["api_name"].is_string())
        .count();
    assert_eq!(other_requests, other_responses);
}

#[test]
fn scan_json_pairs_every_request_with_its_response() {
    let pairs = ok_lines(&run(&["scan", "--json", PCAPNG], b""));
    assert_eq!(pairs.len(), 6);
    for pair in &pairs {
        let (request, response) = (&pair["request"], &pair["response"]);
        assert_eq!(
            request["correlation_id"], response["correlation_id"],
            "{pair}"
        );
        assert_eq!(
            request["source"]["connection"],
            response["source"]["connection"]
        );
    }
    let text = run(&["scan", PCAP], b"");
    assert_eq!(text.status.code(), Some(0));
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.ends_with("6 ElectLeaders requests in elect-leaders-kafka-4.4.pcap; 6 answered\n"));
}

#[test]
fn inspect_heads_each_tree_with_where_the_frame_was() {
    let output = run(&["inspect", "--color", "never", PCAP], b"");
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8(output.stdout).unwrap();
    let heads: Vec<&str> = text.lines().filter(|l| l.starts_with("== ")).collect();
    assert_eq!(heads.len(), 12, "{heads:#?}");
    assert!(heads[0].contains("packet 18") && heads[0].contains("connection 2"));
    assert_eq!(text.matches("ElectLeadersRequest v2,").count(), 6);
    assert_eq!(text.matches("ElectLeadersResponse v2,").count(), 6);
}

/// tshark 4.0 reads the request headers of every API right (it gets ElectLeaders v2 bodies
/// wrong, and leaves responses undecoded): where it reads them, it agrees with us.
#[test]
fn tshark_reads_the_same_request_headers() {
    let Ok(version) = Command::new("tshark").arg("--version").output() else {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "captures: skipped the tshark comparison: tshark is not installed"
        );
        return;
    };
    assert!(version.status.success());
    let ours = ok_lines(&run(&["decode", "--all", PCAP], b""));
    let ours: Vec<Value> = ours
        .iter()
        .filter(|o| o["kind"] == "request")
        .map(|o| {
            let packet = o["source"]["packet"]
                .as_u64()
                .or_else(|| o["source"]["packets"][1].as_u64())
                .unwrap();
            serde_json::json!([packet, o["api_key"], o["api_version"], o["correlation_id"]])
        })
        .collect();
    // The broker ports: the destinations of the requests.
    let mut ports: Vec<String> = ok_lines(&run(&["decode", PCAP], b""))
        .iter()
        .filter(|o| o["kind"] == "request")
        .map(|o| {
            let dst = o["source"]["dst"].as_str().unwrap();
            dst.rsplit(':').next().unwrap().to_owned()
        })
        .collect();
    ports.sort();
    ports.dedup();
    let mut args = vec![
        "-r".to_owned(),
        captures_dir().join(PCAP).display().to_string(),
    ];
    for port in &ports {
        args.push("-d".into());
        args.push(format!("tcp.port=={port},kafka"));
    }
    args.extend(
        [
            "-Y",
            // Requests: tshark shows an api_version only for them.
            "kafka.api_version",
            "-T",
            "fields",
            "-e",
            "frame.number",
            "-e",
            "kafka.api_key",
            "-e",
            "kafka.api_version",
            "-e",
            "kafka.correlation_id",
        ]
        .map(String::from),
    );
    let out = Command::new("tshark").args(&args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .flat_map(|l| {
            // One packet may carry several requests: their fields come comma-separated.
            let f: Vec<Vec<i64>> = l
                .split('\t')
                .map(|x| x.split(',').map(|v| v.parse().unwrap()).collect())
                .collect();
            (0..f[1].len())
                .map(|i| serde_json::json!([f[0][0], f[1][i], f[2][i], f[3][i]]))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(!theirs.is_empty());
    assert_eq!(ours, theirs);
}

#[test]
fn a_recorded_connection_stream_passes_other_apis_over() {
    // A client's side of a connection: ApiVersions v3, then an ElectLeaders request.
    let api_versions = common::hex(
        "00000021 0012 0003 00000001 0004 6b616661 00 \
         0d 6b61666b612d707974686f6e 04 332e30 00",
    );
    let elect = common::load("request-v2-multi.bin");
    let mut stream = api_versions.clone();
    stream.extend_from_slice(&elect);
    let objects = ok_lines(&run(&["decode", "-"], &stream));
    assert_eq!(objects.len(), 1);
    assert_eq!(objects[0]["api_key"], 43);
    assert_eq!(
        objects[0]["source"],
        serde_json::json!({"frame": 2, "offset": api_versions.len()})
    );
    let all = ok_lines(&run(&["decode", "--all", "-"], &stream));
    assert_eq!(all.len(), 2);
    assert_eq!(all[0]["api_name"], "ApiVersions");
    assert_eq!(all[0]["correlation_id"], 1);
    // A plain frame file prints exactly what it did: no "source".
    let plain = ok_lines(&run(&["decode", "-"], &elect));
    assert!(plain[0].get("source").is_none());
    assert_eq!(plain[0], {
        let mut o = objects[0].clone();
        o.as_object_mut().unwrap().remove("source");
        o
    });
}

// ---------------------------------------------------------------------------------------
// Hand-made captures: every link type, TCP's troubles, bad captures

use common::pcap::{self as cap, ACK, FIN, PSH, SYN};
use kafka_elect_leaders::{
    ElectLeadersRequestData, ElectLeadersResponseData, ElectionType, EncodeRequest, EncodeResponse,
    ErrorCode, PartitionResultData, ReplicaElectionResultData, TopicPartitionsData,
};

const CLIENT: [u8; 4] = [10, 0, 0, 1];
const SERVER: [u8; 4] = [10, 0, 0, 2];
const CLIENT_PORT: u16 = 50123;
/// The client's initial sequence number; the server's wraps past 2^32 mid-stream.
const CLIENT_ISN: u32 = 1000;
const SERVER_ISN: u32 = 0xffff_ff00;

/// ApiVersions v3 request (correlation id 1) and its response (header v0, empty list).
const API_VERSIONS_REQUEST: &str = "00000021 0012 0003 00000001 0004 6b616661 00 \
     0d 6b61666b612d707974686f6e 04 332e30 00";
const API_VERSIONS_RESPONSE: &str = "0000000c 00000001 0000 01 00000000 00";

fn elect_request(correlation_id: i32, topic: &str) -> Vec<u8> {
    let partitions = [0, 1];
    let topics = [TopicPartitionsData::new(topic.as_bytes(), &partitions)];
    let data = ElectLeadersRequestData {
        correlation_id,
        client_id: Some(b"synthetic"),
        election_type: ElectionType::PREFERRED,
        topic_partitions: Some(&topics),
        timeout_ms: 30_000,
        ..Default::default()
    };
    let mut buf = vec![0; data.encoded_len(2).unwrap()];
    data.encode(2, &mut buf).unwrap();
    buf
}

fn elect_response(correlation_id: i32, topic: &str) -> Vec<u8> {
    let partitions = [PartitionResultData {
        partition_id: 0,
        error_code: ErrorCode(84),
        error_message: Some(b"Leader election not needed for topic partition."),
        tagged_fields: &[],
    }];
    let results = [ReplicaElectionResultData {
        topic: topic.as_bytes(),
        partition_result: &partitions,
        tagged_fields: &[],
    }];
    let data = ElectLeadersResponseData {
        correlation_id,
        replica_election_results: &results,
        ..Default::default()
    };
    let mut buf = vec![0; data.encoded_len(2).unwrap()];
    data.encode(2, &mut buf).unwrap();
    buf
}

/// One TCP segment of the conversation.
#[derive(Clone, Debug)]
struct Seg {
    to_server: bool,
    seq: u32,
    ack: u32,
    flags: u8,
    payload: Vec<u8>,
}

/// A client's whole conversation with a broker on `port`: handshake, ApiVersions, three
/// ElectLeaders requests each answered, FIN both ways; every frame cut into `mss`-byte
/// segments.
fn conversation(port: u16, mss: usize) -> Vec<Seg> {
    let _ = port;
    let mut exchanges = vec![(
        common::hex(API_VERSIONS_REQUEST),
        common::hex(API_VERSIONS_RESPONSE),
    )];
    for (id, topic) in [(2, "t-two"), (3, "t-three"), (4, "t-four")] {
        exchanges.push((elect_request(id, topic), elect_response(id, topic)));
    }
    let mut segs = vec![
        Seg {
            to_server: true,
            seq: CLIENT_ISN,
            ack: 0,
            flags: SYN,
            payload: vec![],
        },
        Seg {
            to_server: false,
            seq: SERVER_ISN,
            ack: CLIENT_ISN + 1,
            flags: SYN | ACK,
            payload: vec![],
        },
    ];
    let (mut cseq, mut sseq) = (CLIENT_ISN.wrapping_add(1), SERVER_ISN.wrapping_add(1));
    for (request, response) in exchanges {
        for chunk in request.chunks(mss) {
            segs.push(Seg {
                to_server: true,
                seq: cseq,
                ack: sseq,
                flags: ACK | PSH,
                payload: chunk.to_vec(),
            });
            cseq = cseq.wrapping_add(chunk.len() as u32);
        }
        for chunk in response.chunks(mss) {
            segs.push(Seg {
                to_server: false,
                seq: sseq,
                ack: cseq,
                flags: ACK | PSH,
                payload: chunk.to_vec(),
            });
            sseq = sseq.wrapping_add(chunk.len() as u32);
        }
    }
    segs.push(Seg {
        to_server: true,
        seq: cseq,
        ack: sseq,
        flags: FIN | ACK,
        payload: vec![],
    });
    segs.push(Seg {
        to_server: false,
        seq: sseq,
        ack: cseq.wrapping_add(1),
        flags: FIN | ACK,
        payload: vec![],
    });
    segs
}

/// The IPv4 packets of `segs`, broker on `port`.
fn ipv4_packets(segs: &[Seg], port: u16) -> Vec<Vec<u8>> {
    segs.iter()
        .map(|s| {
            let (src, dst, sport, dport) = if s.to_server {
                (CLIENT, SERVER, CLIENT_PORT, port)
            } else {
                (SERVER, CLIENT, port, CLIENT_PORT)
            };
            cap::ipv4_tcp(src, dst, sport, dport, s.seq, s.ack, s.flags, &s.payload)
        })
        .collect()
}

fn ipv6_packets(segs: &[Seg], port: u16) -> Vec<Vec<u8>> {
    let (c, s6) = (
        [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
        [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
    );
    segs.iter()
        .map(|s| {
            let (src, dst, sport, dport) = if s.to_server {
                (c, s6, CLIENT_PORT, port)
            } else {
                (s6, c, port, CLIENT_PORT)
            };
            // A destination-options extension header before TCP.
            cap::ipv6_tcp(
                src,
                dst,
                &[60],
                sport,
                dport,
                s.seq,
                s.ack,
                s.flags,
                &s.payload,
            )
        })
        .collect()
}

/// A legacy pcap (little-endian, microseconds) of link-layer frames, 1 ms apart.
fn pcap_of(linktype: u32, frames: &[Vec<u8>]) -> Vec<u8> {
    let packets: Vec<cap::Packet<'_>> = frames
        .iter()
        .enumerate()
        .map(|(i, f)| (1_700_000_000, i as u32 * 1_000_000, &f[..], f.len() as u32))
        .collect();
    cap::pcap_file(linktype, false, false, &packets)
}

/// What decoding the conversation must give: each ElectLeaders request and its response,
/// as (kind, correlation id, topic).
fn expected(ids: &[i64]) -> Vec<(String, i64, String)> {
    let topic = |id| match id {
        2 => "t-two",
        3 => "t-three",
        _ => "t-four",
    };
    ids.iter()
        .flat_map(|&id| {
            [
                ("request".to_owned(), id, topic(id).to_owned()),
                ("response".to_owned(), id, topic(id).to_owned()),
            ]
        })
        .collect()
}

fn summary(objects: &[Value]) -> Vec<(String, i64, String)> {
    objects
        .iter()
        .map(|o| {
            let topic = if o["kind"] == "request" {
                &o["topic_partitions"][0]["topic"]
            } else {
                assert_eq!(o["api_version"], 2, "{o}");
                &o["replica_election_results"][0]["topic"]
            };
            (
                o["kind"].as_str().unwrap().to_owned(),
                o["correlation_id"].as_i64().unwrap(),
                topic.as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Decodes a capture given on standard input: (objects, stderr, exit status).
fn decode(capture: &[u8], extra: &[&str]) -> (Vec<Value>, String, Option<i32>) {
    let mut args = vec!["decode"];
    args.extend_from_slice(extra);
    args.push("-");
    let output = run(&args, capture);
    let objects = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (
        objects,
        String::from_utf8(output.stderr).unwrap(),
        output.status.code(),
    )
}

/// `summary --json` of a capture given on standard input: (the summary, exit status).
fn summarized(capture: &[u8]) -> (Value, Option<i32>) {
    let output = run(&["summary", "--json", "-"], capture);
    let summary = serde_json::from_slice(&output.stdout).unwrap();
    (summary, output.status.code())
}

#[track_caller]
fn assert_clean(capture: &[u8], extra: &[&str], what: &str) -> Vec<Value> {
    let (objects, err, status) = decode(capture, extra);
    assert_eq!((status, err.as_str()), (Some(0), ""), "{what}");
    assert_eq!(summary(&objects), expected(&[2, 3, 4]), "{what}");
    objects
}

#[test]
fn every_link_type_in_pcap_and_pcapng() {
    let segs = conversation(9092, 1000);
    let v4 = ipv4_packets(&segs, 9092);
    let v6 = ipv6_packets(&segs, 9092);
    let wrap = |f: &dyn Fn(&[u8]) -> Vec<u8>, packets: &[Vec<u8>]| -> Vec<Vec<u8>> {
        packets.iter().map(|p| f(p)).collect()
    };
    let cases: Vec<(&str, u32, Vec<Vec<u8>>)> = vec![
        (
            "Ethernet, IPv4",
            cap::LINKTYPE_ETHERNET,
            wrap(&|p| cap::ethernet(&[], cap::ETHERTYPE_IPV4, p), &v4),
        ),
        (
            "Ethernet, two VLAN tags, IPv6",
            cap::LINKTYPE_ETHERNET,
            wrap(&|p| cap::ethernet(&[7, 8], cap::ETHERTYPE_IPV6, p), &v6),
        ),
        (
            "Linux cooked SLL, IPv4",
            cap::LINKTYPE_LINUX_SLL,
            wrap(&|p| cap::sll(cap::ETHERTYPE_IPV4, p), &v4),
        ),
        (
            "Linux cooked SLL2, IPv6",
            cap::LINKTYPE_LINUX_SLL2,
            wrap(&|p| cap::sll2(cap::ETHERTYPE_IPV6, p), &v6),
        ),
        (
            "BSD loopback, little-endian family",
            cap::LINKTYPE_NULL,
            wrap(&|p| cap::null_loopback(2, false, p), &v4),
        ),
        (
            "BSD loopback, big-endian family, IPv6",
            cap::LINKTYPE_NULL,
            wrap(&|p| cap::null_loopback(30, true, p), &v6),
        ),
        ("raw IPv4", cap::LINKTYPE_RAW, v4.clone()),
        ("raw IPv6 (229)", cap::LINKTYPE_IPV6, v6.clone()),
    ];
    for (what, linktype, frames) in &cases {
        let objects = assert_clean(&pcap_of(*linktype, frames), &[], what);
        let src = objects[0]["source"]["src"].as_str().unwrap();
        assert!(src.ends_with(":50123"), "{what}: {src}");
        // The same packets in a big-endian, nanosecond pcap and in a pcapng.
        let packets: Vec<cap::Packet<'_>> = frames
            .iter()
            .enumerate()
            .map(|(i, f)| (1_700_000_000, i as u32 * 1_000_000, &f[..], f.len() as u32))
            .collect();
        let nanos = cap::pcap_file(*linktype, true, true, &packets);
        assert_eq!(
            assert_clean(&nanos, &[], what),
            objects,
            "{what}: nanosecond pcap"
        );
        let ng_packets: Vec<(u32, u64, &[u8], u32)> = frames
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let ns = 1_700_000_000u64 * 1_000_000_000 + i as u64 * 1_000_000;
                (0, ns, &f[..], f.len() as u32)
            })
            .collect();
        let ng = cap::pcapng_file(false, &[(*linktype as u16, Some(9))], &ng_packets);
        assert_eq!(assert_clean(&ng, &[], what), objects, "{what}: pcapng");
    }
}

fn ethernet_capture(segs: &[Seg], port: u16) -> Vec<u8> {
    let frames: Vec<Vec<u8>> = ipv4_packets(segs, port)
        .iter()
        .map(|p| cap::ethernet(&[], cap::ETHERTYPE_IPV4, p))
        .collect();
    pcap_of(cap::LINKTYPE_ETHERNET, &frames)
}

#[test]
fn frames_split_over_many_segments_name_their_packets() {
    let segs = conversation(9092, 7);
    let objects = assert_clean(&ethernet_capture(&segs, 9092), &[], "7-byte segments");
    let packets = &objects[0]["source"]["packets"];
    assert!(packets[1].as_u64() > packets[0].as_u64(), "{}", objects[0]);
    // The server's sequence numbers wrapped past 2^32 on the way: offsets go on.
    let last = objects.last().unwrap();
    assert!(last["source"]["stream_offset"].as_u64().unwrap() > 12);
}

#[test]
fn out_of_order_retransmitted_and_overlapping_segments() {
    let mut segs = conversation(9092, 16);
    // Swap neighbours, here and there.
    for i in (4..segs.len() - 3).step_by(5) {
        segs.swap(i, i + 1);
    }
    // Retransmit some segments later on.
    let again: Vec<Seg> = segs.iter().skip(3).step_by(4).cloned().collect();
    for (k, s) in again.into_iter().enumerate() {
        let at = (k * 3 + 6).min(segs.len() - 2);
        segs.insert(at, s);
    }
    // And resend one segment together with half of the next one.
    let i = segs
        .iter()
        .position(|s| s.to_server && s.payload.len() == 16)
        .unwrap();
    let j = (i + 1..segs.len())
        .find(|&j| segs[j].to_server && !segs[j].payload.is_empty())
        .unwrap();
    let mut merged = segs[i].clone();
    merged
        .payload
        .extend_from_slice(&segs[j].payload[..segs[j].payload.len() / 2]);
    segs.insert(j + 1, merged);
    assert_clean(&ethernet_capture(&segs, 9092), &[], "reordered");
}

#[test]
fn a_lost_segment_is_reported_and_decoding_resumes() {
    let mut segs = conversation(9092, 20);
    // Drop a segment in the middle of the second ElectLeaders request (correlation id 3).
    let request = elect_request(3, "t-three");
    let at = segs
        .iter()
        .position(|s| s.to_server && request.windows(8).any(|w| s.payload.starts_with(w)))
        .unwrap();
    segs.remove(at + 1);
    let (objects, err, status) = decode(&ethernet_capture(&segs, 9092), &[]);
    assert_eq!(status, Some(1), "{err}");
    assert!(err.contains("bytes missing from the capture"), "{err}");
    assert!(err.contains("connection 1"), "{err}");
    assert!(err.contains("output is partial"), "{err}");
    // Requests 2 and 4 and their responses; 3's response has no request to pair with.
    assert_eq!(summary(&objects), expected(&[2, 4]), "{err}");
    // summary counts the gap and the unpaired response, and is partial too.
    let (s, status) = summarized(&ethernet_capture(&segs, 9092));
    assert_eq!(status, Some(1));
    let a = &s["anomalies"];
    assert_eq!(a["gaps"], 1, "{s:#}");
    assert_eq!(a["unpaired_responses"], 1, "{s:#}");
    assert_eq!(a["partial"], true);
    assert_eq!(s["elect_leaders"]["requests"], 2);
    assert_eq!(s["elect_leaders"]["responses"], 2);
}

#[test]
fn a_capture_that_starts_mid_connection() {
    let segs = conversation(9092, 10);
    // Start inside the ApiVersions exchange, after the handshake.
    let late: Vec<Seg> = segs[4..].to_vec();
    assert_clean(
        &ethernet_capture(&late, 9092),
        &[],
        "mid-stream, broker on 9092",
    );
    // Without the broker's port to go by, the client is the side that sends requests.
    assert_clean(&ethernet_capture(&late, 7777), &[], "mid-stream, port 7777");
}

#[test]
fn the_broker_is_found_by_port_or_by_syn() {
    let segs = conversation(7777, 100);
    let capture = ethernet_capture(&segs, 7777);
    assert_clean(&capture, &[], "SYN");
    assert_clean(&capture, &["--port", "7777"], "--port");
}

#[test]
fn bad_captures_are_reported_and_the_rest_decoded() {
    let segs = conversation(9092, 30);
    let whole = ethernet_capture(&segs, 9092);

    // Cut in the middle of a packet near the end: what came before is decoded.
    let (objects, err, status) = decode(&whole[..whole.len() - 50], &[]);
    assert_eq!(status, Some(1), "{err}");
    assert!(err.contains("partial"), "{err}");
    assert_eq!(summary(&objects), expected(&[2, 3, 4]), "cut: {err}");

    // A packet cut short by the snap length: its missing bytes are a gap.
    let frames: Vec<Vec<u8>> = ipv4_packets(&segs, 9092)
        .iter()
        .map(|p| cap::ethernet(&[], cap::ETHERTYPE_IPV4, p))
        .collect();
    let request = elect_request(3, "t-three");
    let victim = segs
        .iter()
        .position(|s| s.to_server && s.payload.starts_with(&request[..8]))
        .unwrap();
    let packets: Vec<cap::Packet<'_>> = frames
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let kept = if i == victim { f.len() - 10 } else { f.len() };
            (1_700_000_000, i as u32 * 1000, &f[..kept], f.len() as u32)
        })
        .collect();
    let snapped = cap::pcap_file(cap::LINKTYPE_ETHERNET, false, false, &packets);
    let (objects, err, status) = decode(&snapped, &[]);
    assert_eq!(status, Some(1), "{err}");
    assert!(err.contains(&format!("packet {}", victim + 1)), "{err}");
    assert_eq!(summary(&objects), expected(&[2, 4]), "snap length: {err}");
    // Said to be cut by the snap length, not "missing" (issue 36, finding 11).
    assert!(
        err.contains("10 bytes cut by the snap length at stream offset"),
        "{err}"
    );
    assert!(!err.contains("missing from the capture"), "{err}");
    let (s, _) = summarized(&snapped);
    assert_eq!(s["anomalies"]["gaps"], 1, "{s:#}");

    // Garbage between two requests in the client's stream.
    let mut segs = conversation(9092, 1000);
    let at = segs
        .iter()
        .position(|s| s.to_server && s.payload.starts_with(&request[..8]))
        .unwrap();
    let garbage = vec![0xee; 300];
    for s in segs.iter_mut().skip(at) {
        if s.to_server {
            s.seq = s.seq.wrapping_add(garbage.len() as u32);
        } else {
            s.ack = s.ack.wrapping_add(garbage.len() as u32);
        }
    }
    let mut junk = segs[at].clone();
    junk.seq = junk.seq.wrapping_sub(garbage.len() as u32);
    junk.payload = garbage;
    segs.insert(at, junk);
    let (objects, err, status) = decode(&ethernet_capture(&segs, 9092), &[]);
    assert_eq!(status, Some(1), "{err}");
    assert!(err.contains("not a frame"), "{err}");
    assert_eq!(summary(&objects), expected(&[2, 3, 4]), "garbage: {err}");

    // Not a capture, not frames: a clear error, no panic.
    let output = run(&["decode", "-"], &whole[..30]);
    assert_eq!(output.status.code(), Some(1));
    assert!(!String::from_utf8_lossy(&output.stderr).contains("panicked"));
}

// ---------------------------------------------------------------------------------------
// Raw one-direction files: streamed a window at a time, paired in one pass

#[test]
fn raw_scan_streams_files_larger_than_its_window_and_pairs_every_response() {
    const PAIRS: i32 = 20_000;
    const WINDOW: usize = 4 << 20;
    // Requests among filler; two of them straddle the window boundaries (4 and 8 MiB).
    let mut requests = Vec::new();
    let mut responses = Vec::new();
    let mut request_at = Vec::new();
    let mut response_at = Vec::new();
    for id in 1..=PAIRS {
        let topic = format!("topic-{id}");
        let (request, response) = (elect_request(id, &topic), elect_response(id, &topic));
        for (file, at, frame, filler) in [
            (&mut requests, &mut request_at, request, 0x11u8),
            (&mut responses, &mut response_at, response, 0x22u8),
        ] {
            // Where a frame would cross a window boundary, it is made to straddle it.
            let boundary = (file.len() / WINDOW + 1) * WINDOW;
            // (Looking 500 bytes further ahead than the 400-byte gap, so that the frame
            // before never ends too close to the boundary.)
            let gap = if file.len() + 900 + frame.len() > boundary && file.len() + 20 < boundary {
                boundary - file.len() - 20
            } else {
                400
            };
            file.extend(std::iter::repeat_n(filler, gap));
            at.push(file.len() as u64);
            file.extend_from_slice(&frame);
        }
    }
    assert!(requests.len() > 2 * WINDOW && responses.len() > 2 * WINDOW);
    // A frame lies across each of the first two window boundaries, in both files.
    for (at, file) in [(&request_at, &requests), (&response_at, &responses)] {
        for boundary in [WINDOW as u64, 2 * WINDOW as u64] {
            assert!(
                at.iter().any(|&a| a + 20 == boundary),
                "no frame across {boundary} in a {}-byte file",
                file.len()
            );
        }
    }
    let dir = std::env::temp_dir().join(format!("kel-scan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (req_path, resp_path) = (dir.join("requests.bin"), dir.join("responses.bin"));
    std::fs::write(&req_path, &requests).unwrap();
    std::fs::write(&resp_path, &responses).unwrap();
    let output = run(
        &[
            "scan",
            "--json",
            req_path.to_str().unwrap(),
            resp_path.to_str().unwrap(),
        ],
        b"",
    );
    std::fs::remove_dir_all(&dir).unwrap();
    let pairs = ok_lines(&output);
    assert_eq!(pairs.len(), PAIRS as usize);
    for (i, pair) in pairs.iter().enumerate() {
        let id = i as i64 + 1;
        assert_eq!(pair["request"]["correlation_id"], id);
        assert_eq!(pair["request"]["source"]["offset"], request_at[i], "{pair}");
        assert_eq!(pair["response"]["correlation_id"], id, "{pair}");
        assert_eq!(
            pair["response"]["source"]["offset"], response_at[i],
            "{pair}"
        );
        assert_eq!(
            pair["response"]["replica_election_results"][0]["topic"],
            pair["request"]["topic_partitions"][0]["topic"]
        );
    }
}

#[test]
fn a_capture_starting_inside_a_large_frame_finds_the_next_boundary() {
    // Produce-sized requests of another API (200 kB each), then an ElectLeaders request;
    // the capture starts 1,000 bytes into the first one, without the handshake.
    let produce = |id: i32| {
        let body = 200_000;
        let mut f = ((10 + body) as i32).to_be_bytes().to_vec();
        f.extend(0i16.to_be_bytes());
        f.extend(9i16.to_be_bytes());
        f.extend(id.to_be_bytes());
        f.extend((-1i16).to_be_bytes());
        f.resize(f.len() + body, 0x5a);
        f
    };
    let mut client = Vec::new();
    for id in 10..30 {
        client.extend(produce(id));
    }
    let elect_at = client.len();
    client.extend(elect_request(2, "t-two"));
    let stream = &client[1_000..];
    let mut segs = Vec::new();
    let mut seq = 5_000u32;
    for chunk in stream.chunks(1448) {
        segs.push(Seg {
            to_server: true,
            seq,
            ack: 1,
            flags: ACK | PSH,
            payload: chunk.to_vec(),
        });
        seq = seq.wrapping_add(chunk.len() as u32);
    }
    let (objects, err, status) = decode(&ethernet_capture(&segs, 9092), &["--all"]);
    assert_eq!((status, err.as_str()), (Some(0), ""));
    // The 19 whole Produce requests after the cut one, then the ElectLeaders request.
    assert_eq!(objects.len(), 20, "{objects:?}");
    assert!(objects[..19].iter().all(|o| o["api_name"] == "Produce"));
    assert_eq!(objects[0]["correlation_id"], 11);
    assert_eq!(objects[19]["api_key"], 43);
    assert_eq!(
        objects[19]["source"]["stream_offset"],
        (elect_at - 1_000) as u64
    );
}

#[test]
fn a_malformed_elect_leaders_frame_in_a_capture_is_reported_and_the_rest_decoded() {
    let mut segs = conversation(9092, 1000);
    // Request 3, whole and framed right, but its topics count (frame byte 25, a compact
    // count) says 126 topics, far more than its bytes hold.
    let request = elect_request(3, "t-three");
    let at = segs
        .iter()
        .position(|s| s.to_server && s.payload == request)
        .unwrap();
    segs[at].payload[25] = 0x7f;
    let (objects, err, status) = decode(&ethernet_capture(&segs, 9092), &[]);
    assert_eq!(status, Some(1), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].contains(&format!("packet {}: connection 1", at + 1))
            && lines[0].contains("TopicPartitions at frame byte 25"),
        "{err}"
    );
    assert!(lines[1].contains("output is partial: 1 problem"), "{err}");
    // Its response still pairs with it (the request header was read), the rest decode.
    let mut want = expected(&[2, 3, 4]);
    want.remove(2);
    assert_eq!(summary(&objects), want, "{err}");
    let (s, status) = summarized(&ethernet_capture(&segs, 9092));
    assert_eq!(status, Some(1));
    assert_eq!(s["anomalies"]["malformed_frames"], 1, "{s:#}");
    assert_eq!(s["anomalies"]["gaps"], 0, "{s:#}");
    assert_eq!(s["anomalies"]["unanswered_requests"], 0, "{s:#}");
    assert_eq!(s["elect_leaders"]["requests"], 2);
    assert_eq!(s["elect_leaders"]["responses"], 3);
}

#[test]
fn more_requests_in_flight_than_the_old_tracker_held_are_all_paired() {
    // 1,030 ElectLeaders requests on one connection before the broker answers any. The
    // tracker held 1,024 and was emptied when the 1,025th came (only 6 paired); the table
    // is now bounded in bytes (1 MiB a connection by default, tests/pairing.rs attacks it):
    // all are paired, nothing is said, the exit status is 0.
    const SENT: i32 = 1030;
    let mut segs = vec![
        Seg {
            to_server: true,
            seq: CLIENT_ISN,
            ack: 0,
            flags: SYN,
            payload: vec![],
        },
        Seg {
            to_server: false,
            seq: SERVER_ISN,
            ack: CLIENT_ISN + 1,
            flags: SYN | ACK,
            payload: vec![],
        },
    ];
    let (mut cseq, mut sseq) = (CLIENT_ISN.wrapping_add(1), SERVER_ISN.wrapping_add(1));
    for id in 1..=SENT {
        let payload = elect_request(id, "t-two");
        segs.push(Seg {
            to_server: true,
            seq: cseq,
            ack: sseq,
            flags: ACK | PSH,
            payload: payload.clone(),
        });
        cseq = cseq.wrapping_add(payload.len() as u32);
    }
    for id in 1..=SENT {
        let payload = elect_response(id, "t-two");
        segs.push(Seg {
            to_server: false,
            seq: sseq,
            ack: cseq,
            flags: ACK | PSH,
            payload: payload.clone(),
        });
        sseq = sseq.wrapping_add(payload.len() as u32);
    }
    let capture = ethernet_capture(&segs, 9092);

    let (objects, err, status) = decode(&capture, &[]);
    assert_eq!((status, err.as_str()), (Some(0), ""), "{err}");
    let ids = |kind: &str| -> Vec<i64> {
        objects
            .iter()
            .filter(|o| o["kind"] == kind)
            .map(|o| o["correlation_id"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(ids("request"), (1..=i64::from(SENT)).collect::<Vec<_>>());
    assert_eq!(ids("response"), (1..=i64::from(SENT)).collect::<Vec<_>>());
    for o in objects.iter().filter(|o| o["kind"] == "response") {
        assert_eq!(o["replica_election_results"][0]["topic"], "t-two", "{o}");
        assert!(o["source"]["request_frame"].is_u64(), "{o}");
    }
}

// ---------------------------------------------------------------------------------------
// Nothing lost silently, bounded memory, one line per problem (issue #26)

/// The packet of `segs` that carries the start of `frame`.
fn segment_of(segs: &[Seg], frame: &[u8]) -> usize {
    segs.iter()
        .position(|s| !s.payload.is_empty() && frame.starts_with(&s.payload[..8]))
        .unwrap()
}

#[test]
fn a_response_captured_before_its_request_is_paired() {
    // Multi-queue capture swaps adjacent packets: each ElectLeaders response comes before
    // its request. Its ACK says the broker had the request: it waits for it, then is
    // paired; nothing is lost, nothing is said, the exit status is 0.
    let mut segs = conversation(9092, 1000);
    for (id, topic) in [(2, "t-two"), (3, "t-three"), (4, "t-four")] {
        let request = segment_of(&segs, &elect_request(id, topic));
        let response = segment_of(&segs, &elect_response(id, topic));
        assert_eq!(response, request + 1);
        segs.swap(request, response);
    }
    assert_clean(&ethernet_capture(&segs, 9092), &[], "swapped");
    // Scan pairs them too.
    let output = run(&["scan", "--json", "-"], &ethernet_capture(&segs, 9092));
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{err}");
    let text = String::from_utf8(output.stdout).unwrap();
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(!text.contains("null"), "{text}");
}

/// A connection of `n` ElectLeaders requests (ids 1..=n), one packet each, then every
/// response in one packet that acknowledges them all; the first request packet lost its
/// first byte.
fn requests_then_responses_in_one_packet(n: i32, lose_first_byte: bool) -> Vec<Seg> {
    let mut segs = conversation(9092, 1000)[..2].to_vec();
    let (mut cseq, sseq) = (CLIENT_ISN.wrapping_add(1), SERVER_ISN.wrapping_add(1));
    for id in 1..=n {
        let payload = elect_request(id, "t-two");
        let len = payload.len() as u32;
        let (seq, payload) = if id == 1 && lose_first_byte {
            (cseq + 1, payload[1..].to_vec())
        } else {
            (cseq, payload)
        };
        segs.push(Seg {
            to_server: true,
            seq,
            ack: sseq,
            flags: ACK | PSH,
            payload,
        });
        cseq = cseq.wrapping_add(len);
    }
    let responses: Vec<u8> = (1..=n).flat_map(|id| elect_response(id, "t-two")).collect();
    segs.push(Seg {
        to_server: false,
        seq: sseq,
        ack: cseq,
        flags: ACK | PSH,
        payload: responses,
    });
    segs
}

#[test]
fn a_hole_in_the_requests_does_not_drop_the_responses() {
    let capture = ethernet_capture(&requests_then_responses_in_one_packet(200, false), 9092);
    let (objects, err, status) = decode(&capture, &[]);
    assert_eq!((status, err.as_str()), (Some(0), ""));
    assert_eq!(objects.len(), 400);

    // The response's ACK proves the first byte lost: the gap is named, request 1 cannot be
    // framed, its response is named as unpaired, and the other 199 pairs are decoded.
    let capture = ethernet_capture(&requests_then_responses_in_one_packet(200, true), 9092);
    let (objects, err, status) = decode(&capture, &[]);
    assert_eq!(status, Some(1), "{err}");
    let count = |kind: &str| objects.iter().filter(|o| o["kind"] == kind).count();
    assert_eq!((count("request"), count("response")), (199, 199), "{err}");
    assert!(
        err.contains("1 bytes missing from the capture at stream offset 0"),
        "{err}"
    );
    let unpaired: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("its request was not seen"))
        .collect();
    assert_eq!(unpaired.len(), 1, "{err}");
    // The packet of the responses (handshake, 200 requests, then it) and the connection.
    assert!(unpaired[0].contains("packet 203: connection 1 ("), "{err}");
    assert!(unpaired[0].contains("(correlation id 1)"), "{err}");
    assert!(err.contains("output is partial"), "{err}");
}

#[test]
fn a_response_whose_request_never_comes_is_named() {
    // The request of correlation id 3 is not in the capture at all (its packet and the
    // ACK-proven gap): its response is named, with its packet and connection.
    let mut segs = conversation(9092, 1000);
    let request = segment_of(&segs, &elect_request(3, "t-three"));
    segs.remove(request);
    let (objects, err, status) = decode(&ethernet_capture(&segs, 9092), &[]);
    assert_eq!(status, Some(1), "{err}");
    assert_eq!(summary(&objects), expected(&[2, 4]), "{err}");
    let (s, status) = summarized(&ethernet_capture(&segs, 9092));
    assert_eq!(status, Some(1));
    assert_eq!(s["anomalies"]["unpaired_responses"], 1, "{s:#}");
    assert_eq!(s["anomalies"]["malformed_frames"], 0, "{s:#}");
    assert!(
        err.lines().any(
            |l| l.contains("connection 1 (10.0.0.2:9092 -> 10.0.0.1:50123)")
                && l.contains("(correlation id 3): its request was not seen")
        ),
        "{err}"
    );
}

/// `n` connections from distinct client ports, each: handshake, one ElectLeaders request,
/// its response, no FIN; with `cut`, the response's last byte never comes (and the
/// connection is left open).
fn many_connections(n: u16, cut: bool) -> Vec<u8> {
    let mut frames = Vec::new();
    for i in 0..n {
        let port = 10_000 + i;
        let client = |seq: u32, ack: u32, flags: u8, payload: &[u8]| {
            cap::ipv4_tcp(CLIENT, SERVER, port, 9092, seq, ack, flags, payload)
        };
        let server = |seq: u32, ack: u32, flags: u8, payload: &[u8]| {
            cap::ipv4_tcp(SERVER, CLIENT, 9092, port, seq, ack, flags, payload)
        };
        let request = elect_request(i32::from(i), "t-two");
        let mut response = elect_response(i32::from(i), "t-two");
        if cut {
            response.pop();
        }
        let (c, s) = (CLIENT_ISN + 1, SERVER_ISN.wrapping_add(1));
        let end = c + request.len() as u32;
        for p in [
            client(CLIENT_ISN, 0, SYN, &[]),
            server(SERVER_ISN, c, SYN | ACK, &[]),
            client(c, s, ACK | PSH, &request),
            server(s, end, ACK | PSH, &response),
        ] {
            frames.push(cap::ethernet(&[], cap::ETHERTYPE_IPV4, &p));
        }
    }
    pcap_of(cap::LINKTYPE_ETHERNET, &frames)
}

#[test]
fn connections_beyond_the_limit_are_let_go_and_what_they_lose_is_named() {
    // 300 connections that never close, 3 followed at once: each is let go when the 4th
    // after it opens, after its request was answered; nothing is lost, nothing is said.
    let capture = many_connections(300, false);
    let (objects, err, status) = decode(&capture, &["--max-connections", "3"]);
    assert_eq!((status, err.as_str()), (Some(0), ""));
    assert_eq!(objects.len(), 600);

    // Each response cut short: a connection let go holds a partial frame, which is named,
    // once, with a count for the others (and each at the end of the capture likewise).
    let capture = many_connections(300, true);
    let (objects, err, status) = decode(&capture, &["--max-connections", "3"]);
    assert_eq!(status, Some(1), "{err}");
    assert_eq!(objects.len(), 300, "the requests");
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines[0].contains("the reader let go of the connection (evicted"),
        "{err}"
    );
    assert!(
        err.contains(
            "296 more like \"the reader let go of the connection (evicted: more open \
             connections than the limit) inside a frame: 79 bytes from stream offset 0 are not \
             a whole frame\" (packets 17 to 1197, connections 2 to 297)"
        ),
        "{err}"
    );
    // Its request left waiting, likewise.
    assert!(
        err.contains("with 1 request(s) waiting for their responses: responses that come later are not paired"),
        "{err}"
    );
    // The three still open at the end: one line, and one with the count of the other two.
    assert!(
        err.contains(
            "packet 1192: connection 298 (10.0.0.2:9092 -> 10.0.0.1:10297): the stream ends \
             inside a frame"
        ),
        "{err}"
    );
    assert!(
        err.contains("(packets 1196 to 1200, connections 299 to 300)"),
        "{err}"
    );
    assert_eq!(lines.len(), 7, "{err}");
    assert!(
        lines[6].contains("the output is partial: 597 problem(s)"),
        "{err}"
    );

    let output = run(&["decode", "--max-connections", "0", "-"], &capture);
    assert_eq!(output.status.code(), Some(2));
    let output = run(&["decode", "--idle-timeout", "soon", "-"], &capture);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn connections_idle_longer_than_the_timeout_are_let_go() {
    // Packets 1 ms apart: with a 2 ms idle timeout, each connection is let go four
    // packets after its last.
    let capture = many_connections(50, true);
    let (_, err, status) = decode(&capture, &["--idle-timeout", "2ms"]);
    assert_eq!(status, Some(1), "{err}");
    assert!(
        err.contains("the reader let go of the connection (idle longer than the idle timeout)"),
        "{err}"
    );
    assert!(err.contains("48 more like \"the reader let go"), "{err}");
}

#[test]
fn one_line_per_distinct_problem_with_a_count() {
    // 1,000 connections left inside a frame at the end of the capture: one line names the
    // first, one counts the others; then the line that says the output is partial.
    let capture = many_connections(1000, true);
    let (objects, err, status) = decode(&capture, &[]);
    assert_eq!(status, Some(1), "{err}");
    assert_eq!(objects.len(), 1000);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    // Named by the packet where the frame began.
    assert!(lines[0].contains("packet 4: connection 1 ("), "{err}");
    assert!(lines[0].contains("the stream ends inside a frame"), "{err}");
    assert!(
        lines[1].ends_with(
            "999 more like \"the stream ends inside a frame: 79 bytes from stream offset 0 \
             are not a whole frame\" (packets 8 to 4000, connections 2 to 1000)"
        ),
        "{err}"
    );
    assert!(
        lines[2].contains("the output is partial: 1000 problem(s)"),
        "{err}"
    );
}

#[test]
fn a_problem_of_every_packet_is_one_line_and_a_count() {
    // 100 data packets after the connection was reset: one note each on the old code
    // (101 lines); now the first, then one line with the count and the packets.
    let mut segs = conversation(9092, 1000);
    let last = segs.pop().unwrap();
    segs.pop();
    segs.push(Seg {
        flags: ACK | 0x04,
        ..last.clone()
    });
    for i in 0..100 {
        segs.push(Seg {
            to_server: true,
            seq: 77_000 + i * 10,
            ack: 1,
            flags: ACK | PSH,
            payload: vec![0; 10],
        });
    }
    let (objects, err, status) = decode(&ethernet_capture(&segs, 9092), &[]);
    assert_eq!(status, Some(1), "{err}");
    assert_eq!(summary(&objects), expected(&[2, 3, 4]), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(
        lines[0].contains("after the connection closed: ignored"),
        "{err}"
    );
    assert!(lines[1].contains("99 more like \""), "{err}");
    assert!(lines[1].ends_with("(packets 13 to 111)"), "{err}");
    assert!(
        lines[2].contains("the output is partial: 100 problem(s)"),
        "{err}"
    );
}

/// Issue 26, point 5: every object names its API, a paired response carries its request's
/// time, frame and the latency, `source` the epoch time, and every error code its name.
#[test]
fn objects_name_their_api_errors_and_latency() {
    let objects = ok_lines(&run(&["decode", "--all", PCAP], b""));
    for o in &objects {
        assert!(o["api_key"].is_i64() && o["api_name"].is_string(), "{o}");
    }
    let elect: Vec<&Value> = objects
        .iter()
        .filter(|o| o["api_name"] == "ElectLeaders")
        .collect();
    assert_eq!(elect.len(), 12);
    assert!(elect.iter().all(|o| o["api_key"] == 43));
    // Each paired response, of every API, names its request: the same connection's frame
    // of that number the other way, whose time is its request_time.
    let mut paired = 0;
    for response in objects.iter().filter(|o| o["kind"] == "response") {
        let src = &response["source"];
        let request = objects
            .iter()
            .find(|r| {
                r["kind"] == "request"
                    && r["source"]["connection"] == src["connection"]
                    && r["source"]["frame"] == src["request_frame"]
            })
            .unwrap_or_else(|| panic!("no request for {response}"));
        assert_eq!(request["correlation_id"], response["correlation_id"]);
        assert_eq!(src["request_time"], request["source"]["time"]);
        let latency = src["latency_us"].as_i64().unwrap();
        let between =
            src["epoch_us"].as_i64().unwrap() - request["source"]["epoch_us"].as_i64().unwrap();
        assert_eq!(latency, between, "{response}");
        assert!(latency >= 0, "{response}");
        paired += 1;
    }
    assert!(paired >= 12, "{paired}");
    // Requests carry no request_time.
    assert!(objects
        .iter()
        .filter(|o| o["kind"] == "request")
        .all(|o| o["source"].get("request_time").is_none()));
    // Error names beside the codes.
    for response in elect.iter().filter(|o| o["kind"] == "response") {
        assert_eq!(response["error_name"], "NONE");
        let p = &response["replica_election_results"][0]["partition_result"][0];
        let name = match p["error_code"].as_i64().unwrap() {
            0 => "NONE",
            84 => "ELECTION_NOT_NEEDED",
            other => panic!("error code {other}"),
        };
        assert_eq!(p["error_name"], name);
    }
}

#[test]
fn latency_is_from_the_request_answered_not_an_older_unanswered_one() {
    // Requests 1, 2, 3 in packets 3, 4, 5 (1 ms apart), then the answers to 2 and 3 only in
    // packet 6: 1 is never answered (Kafka answers in order, so it never will be).
    let mut segs = requests_then_responses_in_one_packet(3, false);
    let last = segs.len() - 1;
    segs[last].payload = (2..=3).flat_map(|id| elect_response(id, "t-two")).collect();
    let (objects, err, status) = decode(&ethernet_capture(&segs, 9092), &[]);
    assert_eq!((status, err.as_str()), (Some(0), ""));
    let responses: Vec<&Value> = objects.iter().filter(|o| o["kind"] == "response").collect();
    assert_eq!(responses.len(), 2);
    for (response, (frame, latency)) in responses.iter().zip([(2, 2000), (3, 1000)]) {
        let src = &response["source"];
        assert_eq!(src["request_frame"], frame, "{response}");
        assert_eq!(src["latency_us"], latency, "{response}");
        assert_eq!(src["epoch_us"], 1_700_000_000_005_000_i64, "{response}");
    }
}

/// The bytes of a capture up to the end of its `n`th packet (pcap records, or pcapng
/// blocks of which the Enhanced Packet Blocks count).
fn through_packet(bytes: &[u8], n: usize) -> usize {
    let le32 = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    let (mut at, mut packets) = (0, 0);
    if bytes.starts_with(&[0x0a, 0x0d, 0x0d, 0x0a]) {
        while packets < n {
            packets += usize::from(le32(at) == 6);
            at += le32(at + 4);
        }
    } else {
        at = 24;
        while packets < n {
            at += 16 + le32(at + 8);
            packets += 1;
        }
    }
    at
}

/// Issue 26, point 6: a capture piped in as it is written (`tcpdump -U -w - | elect-leaders
/// decode -`) is decoded as it arrives, each object flushed as soon as its frame is read.
/// The tool gets the capture up to the first ElectLeaders response (packet 19); its first
/// two objects must come out while it waits for the rest; then the rest is written and the
/// output is the whole file's. Waits are bounded (a minute) and nothing is timed.
#[test]
fn a_capture_piped_in_is_decoded_as_it_arrives() {
    use std::io::{BufRead, BufReader, Write};
    use std::sync::mpsc;
    use std::time::Duration;
    for file in [PCAP, PCAPNG] {
        let bytes = std::fs::read(captures_dir().join(file)).unwrap();
        let whole = String::from_utf8(run(&["decode", file], b"").stdout).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_elect-leaders"))
            .args(["decode", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (lines, received) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                if lines.send(line.unwrap()).is_err() {
                    break;
                }
            }
        });
        let cut = through_packet(&bytes, 19);
        stdin.write_all(&bytes[..cut]).unwrap();
        stdin.flush().unwrap();
        let mut first = Vec::new();
        for _ in 0..2 {
            match received.recv_timeout(Duration::from_secs(60)) {
                Ok(line) => first.push(line),
                Err(e) => {
                    let _ = child.kill();
                    panic!("{file}: the first objects did not come out before the rest was written ({e})");
                }
            }
        }
        let objects: Vec<Value> = first
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(objects[0]["kind"], "request", "{file}");
        assert_eq!(objects[0]["source"]["packet"], 18, "{file}");
        assert_eq!(objects[1]["kind"], "response", "{file}");
        assert_eq!(objects[1]["source"]["packet"], 19, "{file}");
        stdin.write_all(&bytes[cut..]).unwrap();
        drop(stdin);
        let status = child.wait().unwrap();
        reader.join().unwrap();
        let mut all = first;
        all.extend(received.try_iter());
        assert!(status.success(), "{file}");
        assert_eq!(all.join("\n") + "\n", whole, "{file}");
    }
}

/// Issue 26: `decode --topic`, `--client-id`, `--api`, `--errors-only`.
#[test]
fn decode_filters_by_topic_client_id_api_and_errors() {
    let decoded = |extra: &[&str]| {
        let mut args = vec!["decode"];
        args.extend_from_slice(extra);
        args.push(PCAP);
        ok_lines(&run(&args, b""))
    };
    // A client's requests, and through them its responses (which carry no client id).
    let mine = decoded(&["--client-id", "e2e-confluent"]);
    assert_eq!(mine.len(), 4, "{mine:#?}");
    for pair in mine.chunks(2) {
        assert_eq!(pair[0]["client_id"], "e2e-confluent");
        assert_eq!(pair[1]["kind"], "response");
        assert_eq!(pair[1]["correlation_id"], pair[0]["correlation_id"]);
        assert_eq!(
            pair[1]["source"]["connection"],
            pair[0]["source"]["connection"]
        );
    }
    let two = decoded(&[
        "--client-id",
        "e2e-confluent",
        "--client-id",
        "e2e-java-admin",
    ]);
    assert_eq!(two.len(), 8);
    assert!(decoded(&["--client-id", "nobody"]).is_empty());
    // Topics, in requests and in responses.
    assert_eq!(decoded(&["--topic", "capture"]).len(), 12);
    assert!(decoded(&["--topic", "other"]).is_empty());
    // Issue 44, item 5: nothing failed (the summary's meaning): each client's second
    // election was not needed (ELECTION_NOT_NEEDED), which is no failure.
    assert!(decoded(&["--errors-only"]).is_empty());
    // Every error code, with --any-error: those three, responses only.
    let errors = decoded(&["--any-error"]);
    assert_eq!(errors.len(), 3, "{errors:#?}");
    for o in &errors {
        assert_eq!(o["kind"], "response");
        let p = &o["replica_election_results"][0]["partition_result"][0];
        assert_eq!(p["error_name"], "ELECTION_NOT_NEEDED");
    }
    let errors_mine = decoded(&["--any-error", "--client-id", "e2e-kafka-python"]);
    assert_eq!(errors_mine.len(), 1);
    assert_eq!(errors_mine[0]["correlation_id"], 4);
    // Other APIs by name (any case) or key, without --all.
    let metadata = decoded(&["--api", "metadata"]);
    assert!(!metadata.is_empty());
    assert!(metadata.iter().all(|o| o["api_name"] == "Metadata"));
    assert!(metadata.iter().any(|o| o["kind"] == "response"));
    assert_eq!(decoded(&["--api", "3"]), metadata);
    let both = decoded(&["--api", "Metadata", "--api", "ElectLeaders"]);
    assert_eq!(both.len(), metadata.len() + 12);
    // Unknown names are usage errors.
    let output = run(&["decode", "--api", "Bogus", PCAP], b"");
    assert_eq!(output.status.code(), Some(2));
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("--api: unknown API \"Bogus\""), "{err}");
    // A file of frames: the errors of responses, read as such.
    let corpus = captures_dir().join("..");
    let errors = run(
        &[
            "decode",
            "--errors-only",
            corpus.join("response-v0-errors.bin").to_str().unwrap(),
            corpus.join("response-v0.bin").to_str().unwrap(),
        ],
        b"",
    );
    let objects = ok_lines(&errors);
    assert_eq!(objects.len(), 1, "{objects:#?}");
    assert!(objects[0]["source"]["file"]
        .as_str()
        .unwrap()
        .ends_with("response-v0-errors.bin"));
}

/// Issue 26: `scan` takes decode's filters, with the same meaning; a request listed with its
/// response is listed as a pair.
#[test]
fn scan_filters_by_topic_client_id_api_and_errors() {
    let scanned = |extra: &[&str]| {
        let mut args = vec!["scan", "--json"];
        args.extend_from_slice(extra);
        args.push(PCAP);
        ok_lines(&run(&args, b""))
    };
    // decode's answers, read independently: the pairs scan lists must be those.
    let decoded = ok_lines(&run(&["decode", PCAP], b""));
    let requests_of = |client: &str| {
        decoded
            .iter()
            .filter(|o| o["kind"] == "request" && o["client_id"] == client)
            .count()
    };
    let all = scanned(&[]);
    assert_eq!(all.len(), 6);
    for client in ["e2e-confluent", "e2e-java-admin", "e2e-kafka-python"] {
        let mine = scanned(&["--client-id", client]);
        assert_eq!(mine.len(), requests_of(client), "{client}");
        assert!(mine.iter().all(|p| p["request"]["client_id"] == client));
        assert!(mine.iter().all(|p| p["response"].is_object()));
    }
    assert!(scanned(&["--client-id", "nobody"]).is_empty());
    assert_eq!(scanned(&["--topic", "capture"]), all);
    assert!(scanned(&["--topic", "other"]).is_empty());
    assert!(scanned(&["--api", "Metadata"]).is_empty());
    assert_eq!(scanned(&["--api", "ElectLeaders"]), all);
    // Issue 44, item 5: no election failed (ELECTION_NOT_NEEDED is no failure) ...
    assert!(scanned(&["--errors-only"]).is_empty());
    // ... and every error code with --any-error, each with its request.
    let failed = scanned(&["--any-error"]);
    let errors = decoded
        .iter()
        .filter(|o| o["kind"] == "response")
        .filter(|o| o["replica_election_results"][0]["partition_result"][0]["error_code"] != 0)
        .count();
    assert_eq!(failed.len(), errors);
    for pair in &failed {
        assert_eq!(pair["request"]["kind"], "request");
        let p = &pair["response"]["replica_election_results"][0]["partition_result"][0];
        assert_eq!(p["error_name"], "ELECTION_NOT_NEEDED");
    }
    let failed_mine = scanned(&["--any-error", "--client-id", "e2e-kafka-python"]);
    assert_eq!(failed_mine.len(), 1);
    // The text listing: lines filtered as decode filters its objects, each answer's
    // partitions counted as the summary counts them.
    let text = run(&["scan", "--any-error", PCAP], b"");
    assert_eq!(text.status.code(), Some(0));
    let text = String::from_utf8(text.stdout).unwrap();
    assert_eq!(text.matches("response offset=").count(), errors, "{text}");
    assert_eq!(
        text.matches("failed=0 not_needed=1").count(),
        errors,
        "{text}"
    );
    assert_eq!(text.matches("request  offset=").count(), 0, "{text}");
    let output = run(&["scan", "--api", "Bogus", PCAP], b"");
    assert_eq!(output.status.code(), Some(2));
}

/// `scan`'s filters on raw files, alone and with the responses' file.
#[test]
fn scan_filters_raw_files() {
    let corpus = captures_dir().join("..");
    let scan = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_elect-leaders"))
            .arg("scan")
            .args(args)
            .current_dir(&corpus)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0));
        String::from_utf8(output.stdout).unwrap()
    };
    let pair = ["request-v2-min.bin", "response-v2-min.bin"];
    let all = scan(&pair);
    assert!(all.contains("response offset=0"), "{all}");
    // The sample's client id and topic are both "": an empty --client-id matches it.
    let mine = scan(&[&["--client-id", ""][..], &pair].concat());
    assert_eq!(mine, all);
    let none = scan(&[&["--client-id", "x"][..], &pair].concat());
    assert!(!none.contains("offset="), "{none}");
    assert!(
        none.contains("0 ElectLeaders requests listed (of 1 found)"),
        "{none}"
    );
    // The sample response has no error: --errors-only lists nothing.
    let failed = scan(&[&["--errors-only"][..], &pair].concat());
    assert!(!failed.contains("offset="), "{failed}");
    let alone = scan(&["--topic", "x", "request-v2-min.bin"]);
    assert!(!alone.contains("offset="), "{alone}");
    let alone = scan(&["--topic", "", "request-v2-min.bin"]);
    assert!(alone.contains("request  offset=0"), "{alone}");
}

#[test]
fn the_readme_examples_on_the_corpus_captures_print_something() {
    // Each line of the tool's README (crates/cli/README.md, "Looking at traffic") and of
    // the workspace's README that runs the tool on a capture of corpus/captures prints
    // something and succeeds. Issue 36, finding 11: its filter example (`--topic orders
    // --api Metadata`) could never print anything (a topic filter shows only ElectLeaders
    // frames, and --api Metadata none of them).
    let root = captures_dir().join("../..");
    let readme = ["crates/cli/README.md", "README.md"]
        .map(|f| std::fs::read_to_string(root.join(f)).unwrap())
        .join("\n");
    let examples: Vec<Vec<&str>> = readme
        .lines()
        .filter(|l| l.starts_with("elect-leaders ") && l.contains("corpus/captures/"))
        .map(|l| {
            let command = l.split(" #").next().unwrap();
            command.split_whitespace().skip(1).collect()
        })
        .collect();
    assert!(examples.len() >= 3, "{examples:?}");
    assert!(
        examples.iter().any(|e| e.contains(&"--topic"))
            && examples.iter().any(|e| e.contains(&"--api")),
        "the filter examples run on a real capture: {examples:?}"
    );
    for args in &examples {
        let output = tool::run_in(&root, args, b"");
        let err = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{args:?}: {err}");
        assert!(!output.stdout.is_empty(), "{args:?} prints nothing");
    }
}
