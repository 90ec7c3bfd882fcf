//! Pairing whose every printed value is true or absent (issue 36, findings 1 to 5): one
//! hand-made capture of each adversarial shape, each finding's check on it, and `decode`,
//! `scan` and `summary` agreeing with each other on every one of them.
//!
//! The captures are kept in `corpus/captures/adversarial/` (small pcap files, for anyone
//! to try the tool on). They are made here, by [`captures`], the same way every time
//! (fixed addresses, sequence numbers and times): the test fails if a kept file differs
//! from what the generator makes; `UPDATE_CORPUS=1 cargo test -p elect-leaders --test
//! pairing` rewrites them (then review `git diff --stat`).

use kafka_elect_leaders_testkit as common;

mod tool;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Output;

use common::pcap::{self as cap, ACK, FIN, PSH, SYN};
use kafka_elect_leaders::{
    ElectLeadersRequestData, ElectLeadersResponseData, ElectionType, EncodeRequest, EncodeResponse,
    ErrorCode, PartitionResultData, ReplicaElectionResultData, TopicPartitionsData,
};
use serde_json::Value;

const CLIENT: [u8; 4] = [10, 0, 0, 1];
const SERVER: [u8; 4] = [10, 0, 0, 2];
const CLIENT_PORT: u16 = 50123;
const PORT: u16 = 9092;
const CLIENT_ISN: u32 = 1000;
const SERVER_ISN: u32 = 5000;
/// The captures' clock: 2023-11-14T22:13:20Z, plus each packet's microseconds.
const EPOCH_S: u32 = 1_700_000_000;

fn adversarial_dir() -> PathBuf {
    tool::captures_dir().join("adversarial")
}

// ---------------------------------------------------------------------------------------
// Frames

fn elect_request(correlation_id: i32, topic: &str) -> Vec<u8> {
    let partitions = [0];
    let topics = [TopicPartitionsData::new(topic.as_bytes(), &partitions)];
    let data = ElectLeadersRequestData {
        correlation_id,
        client_id: Some(b"adversary"),
        election_type: ElectionType::PREFERRED,
        topic_partitions: Some(&topics),
        timeout_ms: 30_000,
        ..Default::default()
    };
    let mut buf = vec![0; data.encoded_len(2).unwrap()];
    data.encode(2, &mut buf).unwrap();
    buf
}

fn elect_response(correlation_id: i32, topic: &str, error: i16) -> Vec<u8> {
    let partitions = [PartitionResultData {
        partition_id: 0,
        error_code: ErrorCode(error),
        error_message: None,
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

/// ApiVersions v3 request of `correlation_id` (client `kafka-python` 3.0).
fn api_versions_request(correlation_id: i32) -> Vec<u8> {
    common::hex(&format!(
        "00000021 0012 0003 {correlation_id:08x} 0004 6b616661 00 \
         0d 6b61666b612d707974686f6e 04 332e30 00"
    ))
}

/// Its response (header v0, error 0, an empty list).
fn api_versions_response(correlation_id: i32) -> Vec<u8> {
    common::hex(&format!(
        "0000000c {correlation_id:08x} 0000 01 00000000 00"
    ))
}

/// A Produce request of `version` with `acks`, laid out as Kafka's ProduceRequest.json
/// has it: header v1 (v0-v8) or v2 (v9+: tagged fields), a null `transactional_id` from
/// v3 (compact from v9), `acks`, `timeout_ms`, an empty topic list.
fn produce_request(version: i16, acks: i16, correlation_id: i32) -> Vec<u8> {
    let flexible = version >= 9;
    let mut b = Vec::new();
    b.extend(0i16.to_be_bytes());
    b.extend(version.to_be_bytes());
    b.extend(correlation_id.to_be_bytes());
    b.extend(1i16.to_be_bytes());
    b.push(b'p');
    if flexible {
        b.push(0); // header tagged fields
    }
    // Produce's transactional_id, from its version 3 (not an ElectLeaders version).
    const TRANSACTIONAL_ID_SINCE: i16 = 3;
    if version >= TRANSACTIONAL_ID_SINCE {
        if flexible {
            b.push(0); // compact null
        } else {
            b.extend((-1i16).to_be_bytes());
        }
    }
    b.extend(acks.to_be_bytes());
    b.extend(1500i32.to_be_bytes());
    if flexible {
        b.push(1); // compact empty array
        b.push(0); // body tagged fields
    } else {
        b.extend(0i32.to_be_bytes());
    }
    let mut frame = (b.len() as i32).to_be_bytes().to_vec();
    frame.extend(b);
    frame
}

/// A Produce response (the reader reads its correlation id alone).
fn produce_response(version: i16, correlation_id: i32) -> Vec<u8> {
    let mut b = correlation_id.to_be_bytes().to_vec();
    if version >= 9 {
        b.extend([0, 1]); // header tagged fields, compact empty array
        b.extend(0i32.to_be_bytes());
        b.push(0);
    } else {
        b.extend(0i32.to_be_bytes());
        b.extend(0i32.to_be_bytes());
    }
    let mut frame = (b.len() as i32).to_be_bytes().to_vec();
    frame.extend(b);
    frame
}

// ---------------------------------------------------------------------------------------
// Conversations

/// One TCP segment: its direction, sequence and acknowledgement numbers, flags, payload,
/// capture time (µs after [`EPOCH_S`]), and whether the capture has it.
struct Seg {
    to_server: bool,
    seq: u32,
    ack: u32,
    flags: u8,
    payload: Vec<u8>,
    at_us: u32,
    captured: bool,
}

/// A client and a broker on one connection.
struct Conv {
    segs: Vec<Seg>,
    cseq: u32,
    sseq: u32,
    client_port: u16,
    server_port: u16,
}

impl Conv {
    /// With the handshake (three packets from time 0), or without (mid-connection).
    fn new(handshake: bool) -> Conv {
        let mut c = Conv {
            segs: Vec::new(),
            cseq: CLIENT_ISN + 1,
            sseq: SERVER_ISN + 1,
            client_port: CLIENT_PORT,
            server_port: PORT,
        };
        if handshake {
            c.push(true, CLIENT_ISN, 0, SYN, vec![], 0);
            c.push(false, SERVER_ISN, CLIENT_ISN + 1, SYN | ACK, vec![], 0);
            c.push(true, CLIENT_ISN + 1, SERVER_ISN + 1, ACK, vec![], 0);
        }
        c
    }

    fn push(
        &mut self,
        to_server: bool,
        seq: u32,
        ack: u32,
        flags: u8,
        payload: Vec<u8>,
        at_us: u32,
    ) {
        self.segs.push(Seg {
            to_server,
            seq,
            ack,
            flags,
            payload,
            at_us,
            captured: true,
        });
    }

    /// The client sends `payload` at `at_us`; returns the segment's index.
    fn client(&mut self, payload: Vec<u8>, at_us: u32) -> usize {
        let (seq, ack, len) = (self.cseq, self.sseq, payload.len() as u32);
        self.push(true, seq, ack, ACK | PSH, payload, at_us);
        self.cseq += len;
        self.segs.len() - 1
    }

    /// The broker sends `payload` at `at_us`, acknowledging all the client sent.
    fn server(&mut self, payload: Vec<u8>, at_us: u32) -> usize {
        let (seq, ack, len) = (self.sseq, self.cseq, payload.len() as u32);
        self.push(false, seq, ack, ACK | PSH, payload, at_us);
        self.sseq += len;
        self.segs.len() - 1
    }

    /// Both sides close.
    fn fin(&mut self, at_us: u32) {
        let (c, s) = (self.cseq, self.sseq);
        self.push(true, c, s, FIN | ACK, vec![], at_us);
        self.push(false, s, c + 1, FIN | ACK, vec![], at_us);
        self.push(true, c + 1, s + 1, ACK, vec![], at_us);
    }

    /// The capture lost segment `i`.
    fn lose(&mut self, i: usize) {
        self.segs[i].captured = false;
    }

    /// The captured segments as an Ethernet pcap (microseconds).
    fn pcap(&self) -> Vec<u8> {
        pcap_of(&self.frames())
    }

    /// The captured segments as Ethernet frames, with their times.
    fn frames(&self) -> Vec<(u32, Vec<u8>)> {
        let (port, server_port) = (self.client_port, self.server_port);
        self.segs
            .iter()
            .filter(|s| s.captured)
            .map(|s| {
                let (src, dst, sport, dport) = if s.to_server {
                    (CLIENT, SERVER, port, server_port)
                } else {
                    (SERVER, CLIENT, server_port, port)
                };
                let ip = cap::ipv4_tcp(src, dst, sport, dport, s.seq, s.ack, s.flags, &s.payload);
                (s.at_us, cap::ethernet(&[], cap::ETHERTYPE_IPV4, &ip))
            })
            .collect()
    }
}

/// Ethernet frames and their times (µs after [`EPOCH_S`]) as a pcap.
fn pcap_of(frames: &[(u32, Vec<u8>)]) -> Vec<u8> {
    {
        let packets: Vec<cap::Packet<'_>> = frames
            .iter()
            .map(|(at, f)| {
                (
                    EPOCH_S + at / 1_000_000,
                    (at % 1_000_000) * 1_000,
                    &f[..],
                    f.len() as u32,
                )
            })
            .collect();
        cap::pcap_file(cap::LINKTYPE_ETHERNET, false, false, &packets)
    }
}

/// Finding 1: request 1 (`alpha`) lost by the capture, request 2 (`beta`, packet 4, at
/// 0.2 s) held behind the hole until the broker's answer to 1 (packet 5, at 1.1 s)
/// acknowledges both; the answer to 2 at 1.4 s. Request 2's packet is 4 and its latency
/// 1.2 s, not the ACK's packet 5 and 0.3 s.
fn hole_then_ack() -> Vec<u8> {
    let mut c = Conv::new(true);
    let lost = c.client(elect_request(1, "alpha"), 100_000);
    c.client(elect_request(2, "beta"), 200_000);
    c.server(elect_response(1, "alpha", 0), 1_100_000);
    c.server(elect_response(2, "beta", 84), 1_400_000);
    c.fin(1_500_000);
    c.lose(lost);
    c.pcap()
}

/// Requests on one connection before the first answer: ApiVersions, every 100th an
/// ElectLeaders (ids 1..=n), 100 to a packet; then the answers, 100 to a packet.
fn pipelined(n: i32) -> Vec<u8> {
    let mut c = Conv::new(true);
    let ids: Vec<i32> = (1..=n).collect();
    for (k, chunk) in ids.chunks(100).enumerate() {
        let bytes: Vec<u8> = chunk
            .iter()
            .flat_map(|&id| {
                if id % 100 == 0 {
                    elect_request(id, "pipelined")
                } else {
                    api_versions_request(id)
                }
            })
            .collect();
        c.client(bytes, 10_000 + k as u32 * 1_000);
    }
    for (k, chunk) in ids.chunks(100).enumerate() {
        let bytes: Vec<u8> = chunk
            .iter()
            .flat_map(|&id| {
                if id % 100 == 0 {
                    elect_response(id, "pipelined", 0)
                } else {
                    api_versions_response(id)
                }
            })
            .collect();
        c.server(bytes, 500_000 + k as u32 * 1_000);
    }
    c.fin(900_000);
    c.pcap()
}

/// Finding 5: the capture joins a connection as the broker answers a request sent before
/// it (ElectLeaders, correlation id 7); then one more exchange (id 8).
fn mid_connection() -> Vec<u8> {
    let mut c = Conv::new(false);
    c.server(elect_response(7, "before", 0), 100_000);
    c.client(elect_request(8, "after"), 200_000);
    c.server(elect_response(8, "after", 0), 300_000);
    c.fin(400_000);
    c.pcap()
}

/// Produce versions used for acks=0: every one Kafka 4.4 knows, header v1 and v2.
const PRODUCE_VERSIONS: std::ops::RangeInclusive<i16> = 0..=13;

/// Finding 2: 1,030 Produce requests with acks=0 (never answered by Kafka), of every
/// version, 103 to a packet; then an ElectLeaders exchange and a Produce with acks=1.
fn produce_acks0() -> Vec<u8> {
    let mut c = Conv::new(true);
    let versions: Vec<i16> = PRODUCE_VERSIONS.collect();
    for k in 0..10 {
        let bytes: Vec<u8> = (0..103)
            .flat_map(|j| {
                let id = k * 103 + j + 1;
                produce_request(versions[id as usize % versions.len()], 0, id)
            })
            .collect();
        c.client(bytes, 10_000 + k as u32 * 1_000);
    }
    c.client(elect_request(2000, "after-produce"), 100_000);
    c.server(elect_response(2000, "after-produce", 0), 150_000);
    c.client(produce_request(9, 1, 2001), 200_000);
    c.server(produce_response(9, 2001), 250_000);
    c.fin(300_000);
    c.pcap()
}

/// Finding 4: two requests with correlation id 7: `alpha` lost by the capture, `beta`
/// captured; the broker answers both, in order (`alpha` failed with
/// PREFERRED_LEADER_NOT_AVAILABLE, `beta` elected).
fn correlation_reuse_hole() -> Vec<u8> {
    let mut c = Conv::new(true);
    let lost = c.client(elect_request(7, "alpha"), 100_000);
    c.client(elect_request(7, "beta"), 200_000);
    c.server(elect_response(7, "alpha", 80), 1_100_000);
    c.server(elect_response(7, "beta", 0), 1_400_000);
    c.fin(1_500_000);
    c.lose(lost);
    c.pcap()
}

/// Issue 44, item 6: ElectLeaders request 1's size prefix corrupted (10 bytes short: the
/// frame cut there is malformed, the rest of it is garbage), never answered; then request
/// 2, answered.
fn corrupted_size_prefix() -> Vec<u8> {
    let mut c = Conv::new(true);
    let mut bad = elect_request(1, "alpha");
    let size = i32::from_be_bytes([bad[0], bad[1], bad[2], bad[3]]) - 10;
    bad[..4].copy_from_slice(&size.to_be_bytes());
    c.client(bad, 100_000);
    c.client(elect_request(2, "beta"), 200_000);
    c.server(elect_response(2, "beta", 0), 300_000);
    c.fin(400_000);
    c.pcap()
}

/// Issue 44, item 4: a capture that joins a connection as the broker sends two whole
/// answers (ids 7 and 8) to requests sent before it; no request follows; then FIN.
fn leading_answers_only() -> Vec<u8> {
    let mut c = Conv::new(false);
    c.server(elect_response(7, "before", 0), 100_000);
    c.server(elect_response(8, "before", 84), 150_000);
    c.fin(200_000);
    c.pcap()
}

/// Issue 44, item 4: the broker on port 9093 (not the default), no SYN: its answer to a
/// request sent before the capture (id 7), then one exchange (id 8).
fn non_default_port() -> Vec<u8> {
    let mut c = Conv::new(false);
    c.server_port = 9093;
    c.server(elect_response(7, "before", 0), 100_000);
    c.client(elect_request(8, "after"), 200_000);
    c.server(elect_response(8, "after", 0), 300_000);
    c.fin(400_000);
    c.pcap()
}

/// Issue 44, item 4: an ElectLeaders request answered 11 minutes later, longer than the
/// idle timeout (10 minutes): the reader lets go of the connection at the answer's packet;
/// the answer is listed, unpaired.
fn idle_then_answer() -> Vec<u8> {
    let mut c = Conv::new(true);
    c.client(elect_request(1, "slow"), 100_000);
    c.server(elect_response(1, "slow", 0), 660_100_000);
    c.fin(660_200_000);
    c.pcap()
}

/// Issue 44, item 4: one exchange, and between the request and its answer one packet of
/// unrelated traffic (an ACK 10.0.0.9:443 -> 10.0.0.8:5000) stamped a year ahead.
fn year_ahead_packet() -> Vec<u8> {
    let mut c = Conv::new(true);
    c.client(elect_request(1, "now"), 100_000);
    c.server(elect_response(1, "now", 0), 200_000);
    c.fin(300_000);
    let mut frames: Vec<(u32, u32, Vec<u8>)> = c
        .frames()
        .into_iter()
        .map(|(at, f)| (EPOCH_S + at / 1_000_000, at % 1_000_000, f))
        .collect();
    let unrelated = cap::ipv4_tcp([10, 0, 0, 9], [10, 0, 0, 8], 443, 5000, 1, 1, ACK, b"");
    let year = 365 * 86_400;
    frames.insert(
        4,
        (
            EPOCH_S + year,
            150_000,
            cap::ethernet(&[], cap::ETHERTYPE_IPV4, &unrelated),
        ),
    );
    let packets: Vec<cap::Packet<'_>> = frames
        .iter()
        .map(|(s, us, f)| (*s, us * 1_000, &f[..], f.len() as u32))
        .collect();
    cap::pcap_file(cap::LINKTYPE_ETHERNET, false, false, &packets)
}

/// Issue 44, item 3: the capture's clock steps back an hour between ElectLeaders request
/// 2 and its answer (request 2 at 3,600.1 s, its answer at 0.3 s); exchanges 1 and 3 are
/// timed right.
fn clock_step_back() -> Vec<u8> {
    let mut c = Conv::new(true);
    c.client(elect_request(1, "a"), 100_000);
    c.server(elect_response(1, "a", 0), 110_000);
    c.client(elect_request(2, "b"), 3_600_100_000);
    c.server(elect_response(2, "b", 0), 300_000);
    c.client(elect_request(3, "c"), 400_000);
    c.server(elect_response(3, "c", 0), 420_000);
    c.fin(500_000);
    c.pcap()
}

/// Issue 44, item 7: one exchange in IEEE 802.3 frames with an LLC/SNAP header (RFC 1042)
/// instead of an Ethernet II type, as tshark reads them; and one UDP packet (DNS).
fn llc_snap() -> Vec<u8> {
    let mut c = Conv::new(true);
    c.client(elect_request(1, "snap"), 100_000);
    c.server(elect_response(1, "snap", 0), 200_000);
    c.fin(300_000);
    let mut frames: Vec<(u32, Vec<u8>)> = c
        .frames()
        .into_iter()
        .map(|(at, ethernet_ii)| {
            // The same addresses, then the 802.3 length, LLC (AA AA 03), SNAP (OUI 0, IPv4).
            let ip = &ethernet_ii[14..];
            let mut f = ethernet_ii[..12].to_vec();
            f.extend(((8 + ip.len()) as u16).to_be_bytes());
            f.extend([0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00]);
            f.extend(ip);
            (at, f)
        })
        .collect();
    let dns = cap::ipv4(
        [10, 0, 0, 1],
        [10, 0, 0, 53],
        17,
        1,
        0,
        &cap::udp(5353, 53, b"q"),
    );
    frames.insert(0, (50_000, cap::ethernet(&[], cap::ETHERTYPE_IPV4, &dns)));
    pcap_of(&frames)
}

/// An ElectLeaders v2 request of `client` for `partitions` of `topic`.
fn election(
    id: i32,
    client: &str,
    election_type: ElectionType,
    topic: &str,
    partitions: &[i32],
) -> Vec<u8> {
    let topics = [TopicPartitionsData::new(topic.as_bytes(), partitions)];
    let data = ElectLeadersRequestData {
        correlation_id: id,
        client_id: Some(client.as_bytes()),
        election_type,
        topic_partitions: Some(&topics),
        timeout_ms: 30_000,
        ..Default::default()
    };
    let mut buf = vec![0; data.encoded_len(2).unwrap()];
    data.encode(2, &mut buf).unwrap();
    buf
}

/// Its answer: each partition's error code and message.
fn election_answer(id: i32, topic: &str, results: &[(i32, i16, Option<&str>)]) -> Vec<u8> {
    let partitions: Vec<PartitionResultData<'_>> = results
        .iter()
        .map(|&(partition_id, code, message)| PartitionResultData {
            partition_id,
            error_code: ErrorCode(code),
            error_message: message.map(str::as_bytes),
            tagged_fields: &[],
        })
        .collect();
    let results = [ReplicaElectionResultData {
        topic: topic.as_bytes(),
        partition_result: &partitions,
        tagged_fields: &[],
    }];
    let data = ElectLeadersResponseData {
        correlation_id: id,
        replica_election_results: &results,
        ..Default::default()
    };
    let mut buf = vec![0; data.encoded_len(2).unwrap()];
    data.encode(2, &mut buf).unwrap();
    buf
}

/// Issue 44, item 8: the everyday questions, on two connections. Connection 1, client
/// `ops-tool`: an UNCLEAN election of orders/0 and orders/1, answered after 2.5 s, orders/1
/// ELIGIBLE_LEADERS_NOT_AVAILABLE. Connection 2, client `admin`: ApiVersions, then a
/// PREFERRED election of payments/0 (40 ms, NONE) and of payments/1 (90 ms,
/// PREFERRED_LEADER_NOT_AVAILABLE).
fn elections() -> Vec<u8> {
    let mut ops = Conv::new(true);
    ops.client(
        election(1, "ops-tool", ElectionType::UNCLEAN, "orders", &[0, 1]),
        100_000,
    );
    let lost = Some("no live replica in the ISR or out of it");
    ops.server(
        election_answer(1, "orders", &[(0, 0, None), (1, 83, lost)]),
        2_600_000,
    );
    ops.fin(2_700_000);
    let mut admin = Conv::new(true);
    admin.client_port = CLIENT_PORT + 1;
    admin.client(api_versions_request(1), 200_000);
    admin.server(api_versions_response(1), 210_000);
    admin.client(
        election(2, "admin", ElectionType::PREFERRED, "payments", &[0]),
        300_000,
    );
    admin.server(election_answer(2, "payments", &[(0, 0, None)]), 340_000);
    admin.client(
        election(3, "admin", ElectionType::PREFERRED, "payments", &[1]),
        400_000,
    );
    let busy = Some("preferred replica 3 is not in the ISR");
    admin.server(election_answer(3, "payments", &[(1, 80, busy)]), 490_000);
    admin.fin(3_000_000);
    let mut frames = ops.frames();
    frames.extend(admin.frames());
    frames.sort_by_key(|f| f.0);
    pcap_of(&frames)
}

/// Issue 44, item 4: a client reconnects from the same port (a new SYN, new initial
/// sequence numbers) while its ElectLeaders request 1 waits; the broker's late answer to
/// it comes on the old connection after the new handshake; then request 2 on the new one.
fn reused_late_answer() -> Vec<u8> {
    let mut old = Conv::new(true);
    old.client(elect_request(1, "before"), 100_000);
    old.server(elect_response(1, "before", 0), 300_000);
    let mut new = Conv::new(false);
    let (cisn, sisn) = (70_000, 90_000);
    new.push(true, cisn, 0, SYN, vec![], 200_000);
    new.push(false, sisn, cisn + 1, SYN | ACK, vec![], 200_000);
    new.push(true, cisn + 1, sisn + 1, ACK, vec![], 200_000);
    new.cseq = cisn + 1;
    new.sseq = sisn + 1;
    new.client(elect_request(2, "after"), 400_000);
    new.server(elect_response(2, "after", 0), 500_000);
    new.fin(600_000);
    let mut frames = old.frames();
    frames.extend(new.frames());
    frames.sort_by_key(|f| f.0);
    pcap_of(&frames)
}

/// Issue 44, item 4: holes both ways: request 1 lost, answer 2 lost, request 3 lost. The
/// answer to 4 comes in the packet whose ACK proves request 3 lost and request 4 sent
/// (request 4 was held behind that hole): it was searched for a boundary before request 4
/// was handed on, ruled out, and lost ("7 bytes ... not a whole frame").
fn holes_three() -> Vec<u8> {
    let mut c = Conv::new(true);
    let l1 = c.client(elect_request(1, "a"), 100_000);
    c.client(elect_request(2, "b"), 110_000);
    c.server(elect_response(1, "a", 0), 200_000);
    let l2 = c.server(elect_response(2, "b", 0), 210_000);
    let l3 = c.client(elect_request(3, "c"), 300_000);
    c.server(elect_response(3, "c", 0), 310_000);
    c.client(elect_request(4, "d"), 320_000);
    c.server(elect_response(4, "d", 0), 330_000);
    c.fin(400_000);
    for lost in [l1, l2, l3] {
        c.lose(lost);
    }
    c.pcap()
}

/// Every adversarial capture: its file name and bytes.
fn captures() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("hole-then-ack.pcap", hole_then_ack()),
        ("pipelined-1100.pcap", pipelined(1100)),
        ("mid-connection.pcap", mid_connection()),
        ("produce-acks0.pcap", produce_acks0()),
        ("correlation-reuse-hole.pcap", correlation_reuse_hole()),
        ("gaps-both-ways.pcap", gaps_both_ways()),
        ("lost-middle-segment.pcap", lost_middle_segment()),
        ("corrupted-size-prefix.pcap", corrupted_size_prefix()),
        ("leading-answers-only.pcap", leading_answers_only()),
        ("non-default-port.pcap", non_default_port()),
        ("idle-then-answer.pcap", idle_then_answer()),
        ("year-ahead-packet.pcap", year_ahead_packet()),
        ("clock-step-back.pcap", clock_step_back()),
        ("llc-snap.pcap", llc_snap()),
        ("elections.pcap", elections()),
        ("reused-late-answer.pcap", reused_late_answer()),
        ("holes-three.pcap", holes_three()),
    ]
}

#[test]
fn the_kept_captures_are_what_the_generator_makes() {
    let dir = adversarial_dir();
    let update = std::env::var_os("UPDATE_CORPUS").is_some();
    let mut stale = Vec::new();
    for (name, bytes) in captures() {
        let path = dir.join(name);
        if update {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &bytes).unwrap();
        } else if std::fs::read(&path).ok().as_deref() != Some(&bytes[..]) {
            stale.push(name);
        }
        assert!(
            bytes.len() < 128 * 1024,
            "{name}: small ({} bytes)",
            bytes.len()
        );
    }
    assert!(
        stale.is_empty(),
        "{stale:?} differ from what this test makes: UPDATE_CORPUS=1 rewrites them"
    );
}

// ---------------------------------------------------------------------------------------
// Running the tool

fn run(args: &[&str], capture: &[u8]) -> Output {
    tool::run_in(&adversarial_dir(), args, capture)
}

/// `decode ARGS -` of a capture: its objects, stderr and exit status.
fn decode(capture: &[u8], extra: &[&str]) -> (Vec<Value>, String, Option<i32>) {
    let mut args = vec!["decode"];
    args.extend_from_slice(extra);
    args.push("-");
    let output = run(&args, capture);
    let objects = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    (
        objects,
        String::from_utf8(output.stderr).unwrap(),
        output.status.code(),
    )
}

/// `summary --json -` of a capture: the summary, stderr and exit status.
fn summary(capture: &[u8], extra: &[&str]) -> (Value, String, Option<i32>) {
    let mut args = vec!["summary", "--json"];
    args.extend_from_slice(extra);
    args.push("-");
    let output = run(&args, capture);
    let err = String::from_utf8(output.stderr).unwrap();
    let s = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {err}"));
    (s, err, output.status.code())
}

fn of_kind<'a>(objects: &'a [Value], kind: &str) -> Vec<&'a Value> {
    objects.iter().filter(|o| o["kind"] == kind).collect()
}

// ---------------------------------------------------------------------------------------
// Finding 1

#[test]
fn after_a_hole_proven_by_an_ack_a_request_keeps_its_own_packet_and_time() {
    let (objects, err, status) = decode(&hole_then_ack(), &[]);
    assert_eq!(status, Some(1), "a gap: partial. {err}");
    assert!(err.contains("bytes missing from the capture"), "{err}");
    let requests = of_kind(&objects, "request");
    assert_eq!(requests.len(), 1, "{objects:#?}");
    let request = &requests[0]["source"];
    assert_eq!(
        request["packet"], 4,
        "its own packet, not the ACK's: {request}"
    );
    assert_eq!(request["epoch_us"], 1_700_000_000_200_000u64, "{request}");
    // Its answer: paired, and its latency from the request's own time.
    let answer = objects
        .iter()
        .find(|o| o["kind"] == "response" && o["correlation_id"] == 2)
        .unwrap_or_else(|| panic!("{objects:#?}"));
    assert_eq!(answer["source"]["request_frame"], 1, "{answer}");
    assert_eq!(answer["source"]["latency_us"], 1_200_000, "{answer}");
    assert_eq!(
        answer["source"]["request_time"], request["time"],
        "{answer}"
    );
    // summary's percentiles come from the same times.
    let (s, _, _) = summary(&hole_then_ack(), &[]);
    assert_eq!(s["latency_us"]["max"], 1_200_000, "{s:#}");
}

// ---------------------------------------------------------------------------------------
// Finding 3

/// The frames of a capture through the library with an in-flight budget per connection:
/// (requests not kept and the packets their notes name, unpaired responses and the
/// reasons their notes give).
fn read_with_budget(capture: &[u8], bytes: usize) -> (Vec<u64>, Vec<String>, usize) {
    use kafka_elect_leaders_capture::{Capture, Item, Limits, Traffic, What};
    let mut reader = Capture::new(capture).unwrap();
    reader.set_limits(Limits {
        in_flight_bytes: bytes,
        ..Limits::default()
    });
    let (mut not_kept, mut unpaired_notes, mut paired) = (Vec::new(), Vec::new(), 0);
    for item in Traffic::from_capture(reader, None) {
        match item.unwrap() {
            Item::Note(n) if n.message.contains("cannot be decoded") => {
                unpaired_notes.push(n.message)
            }
            Item::Note(n) if n.message.contains("not kept for pairing") => {
                assert_eq!(n.conn.map(|c| c.0 .0), Some(1), "{}", n.message);
                not_kept.push(n.packet.unwrap());
            }
            Item::Frame(f) if f.request.is_some() => paired += 1,
            Item::Frame(f) => assert!(!matches!(f.what, What::ElectResponse { .. })),
            _ => {}
        }
    }
    (not_kept, unpaired_notes, paired)
}

#[test]
fn eleven_hundred_pipelined_requests_all_pair_under_the_default_budget() {
    // Before: a table of 1,024 requests, emptied when it overflowed: 76 paired, 948
    // called unanswered, their answers "request not seen" although they were printed.
    let capture = pipelined(1100);
    let (objects, err, status) = decode(&capture, &["--all"]);
    assert_eq!((status, err.as_str()), (Some(0), ""), "{err}");
    let paired = objects
        .iter()
        .filter(|o| o["kind"] == "response" && o["source"]["request_frame"].is_u64())
        .count();
    assert_eq!(paired, 1100);
    let (s, err, status) = summary(&capture, &[]);
    assert_eq!(status, Some(0), "{err}");
    assert_eq!(s["anomalies"]["unanswered_requests"], 0, "{s:#}");
    assert_eq!(s["anomalies"]["unpaired_responses"], 0, "{s:#}");
    assert_eq!(s["latency_us"]["paired"], 11, "{s:#}");
}

#[test]
fn requests_beyond_the_budget_are_named_one_by_one_and_their_answers_say_why() {
    let capture = pipelined(1100);
    // Room for 100 requests (the table grows 8, 16, 32, 64, then to its budget).
    let budget = 100 * kafka_elect_leaders_capture::traffic::IN_FLIGHT_ENTRY_BYTES;
    let (not_kept, unpaired, paired) = read_with_budget(&capture, budget);
    // Requests 101 to 1,100 each named, with the packet that carried it (100 to a packet,
    // after the three of the handshake).
    assert_eq!(not_kept.len(), 1000);
    for (k, packet) in not_kept.iter().enumerate() {
        assert_eq!(*packet, 4 + (100 + k as u64) / 100, "request {}", 101 + k);
    }
    // The first 100 pair; the others' answers are unpaired and say why.
    assert_eq!(paired, 100);
    assert_eq!(unpaired.len(), 1000);
    for message in &unpaired {
        assert!(
            message.contains("its request was not kept or not seen (1000 request(s) of this connection were not kept for pairing, each named above)"),
            "{message}"
        );
    }
    // The tool: the same through --max-in-flight-bytes, the notes on stderr (the first of
    // each kind in full, then a count with the packets it spans), partial.
    let flag = budget.to_string();
    let (objects, err, status) = decode(&capture, &["--all", "--max-in-flight-bytes", &flag]);
    assert_eq!(status, Some(1), "{err}");
    assert!(
        err.contains("packet 5: connection 1 (10.0.0.1:50123 -> 10.0.0.2:9092): request frame at stream offset 3710 (ApiVersions v3, correlation id 101) not kept for pairing: the 100 requests waiting on this connection fill its in-flight budget"),
        "{err}"
    );
    // The notes of each API counted: 1,000 in all, spanning the requests' packets.
    assert!(err.contains("989 more like \"request frame at stream offset 3710 (ApiVersions v3, correlation id 101) not kept"), "{err}");
    assert!(err.contains("9 more like \"request frame at stream offset 7373 (ElectLeaders v2, correlation id 200) not kept"), "{err}");
    assert!(err.contains("(packets 5 to 14, connection 1)"), "{err}");
    assert!(!err.contains("its request was not seen,"), "{err}");
    let requests = of_kind(&objects, "request").len();
    assert_eq!(requests, 1100, "every request is still printed");
    let (s, _, status) = summary(&capture, &["--max-in-flight-bytes", &flag]);
    assert_eq!(status, Some(1));
    assert_eq!(s["anomalies"]["unpaired_responses"], 1000, "{s:#}");
    assert_eq!(s["anomalies"]["unanswered_requests"], 0, "{s:#}");
}

#[test]
fn the_budget_of_all_connections_holds_against_many_pipelining_connections() {
    // 20 connections of 200 requests each waiting, under a reader budget of 1,000
    // requests for all connections together: the table stops growing at it, and each
    // request it cannot keep is named with its connection.
    use kafka_elect_leaders_capture::traffic::IN_FLIGHT_ENTRY_BYTES;
    use kafka_elect_leaders_capture::{Capture, Item, Limits, Traffic};
    let mut frames = Vec::new();
    for k in 0..20u16 {
        let mut c = Conv::new(true);
        c.client_port = 40_000 + k;
        let requests: Vec<u8> = (1..=200).flat_map(api_versions_request).collect();
        c.client(requests, 1_000 + u32::from(k));
        frames.extend(c.frames());
    }
    let capture = pcap_of(&frames);
    let mut reader = Capture::new(&capture[..]).unwrap();
    reader.set_limits(Limits {
        in_flight_total_bytes: 1000 * IN_FLIGHT_ENTRY_BYTES,
        ..Limits::default()
    });
    let mut by_conn = BTreeMap::new();
    for item in Traffic::from_capture(reader, None) {
        if let Item::Note(n) = item.unwrap() {
            assert!(
                n.message.contains(
                    "the requests waiting on all connections fill the reader's in-flight budget"
                ),
                "{}",
                n.message
            );
            *by_conn.entry(n.conn.unwrap().0 .0).or_insert(0) += 1;
        }
    }
    // 4,000 requests, at most 1,000 kept: at least 3,000 named, each connection's from
    // the one where the budget ran out.
    let named: u32 = by_conn.values().sum();
    assert!((3000..4000).contains(&named), "{named}: {by_conn:?}");
    assert_eq!(by_conn.keys().last(), Some(&20));
}

// ---------------------------------------------------------------------------------------
// Finding 2

#[test]
fn produce_requests_with_acks_0_are_not_waited_for() {
    // 1,030 Produce requests with acks=0, of every version (0 to 13: header v1 and v2, a
    // transactional id from v3, compact from v9): Kafka never answers them. Before: 1,023
    // counted unanswered, the table of 1,024 overflowed, and the clean capture was partial.
    let capture = produce_acks0();
    let (objects, err, status) = decode(&capture, &["--all"]);
    assert_eq!((status, err.as_str()), (Some(0), ""), "{err}");
    let produce = objects
        .iter()
        .filter(|o| o["api_name"] == "Produce")
        .count();
    assert_eq!(
        produce,
        1030 + 2,
        "every Produce listed, the acks=1 one and its answer"
    );
    let (s, err, status) = summary(&capture, &[]);
    assert_eq!((status, err.as_str()), (Some(0), ""), "{s:#}");
    assert_eq!(s["anomalies"]["unanswered_requests"], 0, "{s:#}");
    assert_eq!(s["anomalies"]["partial"], false, "{s:#}");
    assert_eq!(s["latency_us"]["paired"], 1, "{s:#}");
    // Not kept in the table: a budget of 8 requests holds the two that are answered.
    let budget = (8 * kafka_elect_leaders_capture::traffic::IN_FLIGHT_ENTRY_BYTES).to_string();
    let (_, err, status) = decode(&capture, &["--max-in-flight-bytes", &budget]);
    assert_eq!((status, err.as_str()), (Some(0), ""), "{err}");
    // The same Produce with acks=1 is waited for: unanswered when no answer comes.
    let mut c = Conv::new(true);
    for version in PRODUCE_VERSIONS {
        c.client(produce_request(version, 1, i32::from(version)), 1_000);
    }
    c.fin(2_000);
    let (s, _, _) = summary(&c.pcap(), &[]);
    assert_eq!(s["anomalies"]["unanswered_requests"], 14, "{s:#}");
}

// ---------------------------------------------------------------------------------------
// Finding 5

#[test]
fn a_capture_that_joins_a_connection_lists_its_leading_answer_as_unpaired() {
    // crates/cli/README.md: "its first responses, to requests sent before the capture,
    // are listed with --all as unpaired". Before, the leading answer was passed over in
    // silence and summary's unpaired_responses stayed 0.
    let capture = mid_connection();
    let (objects, err, status) = decode(&capture, &["--all"]);
    assert_eq!((status, err.as_str()), (Some(0), ""), "not a loss: {err}");
    let unpaired: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == "response" && o["api_key"].is_null())
        .collect();
    assert_eq!(unpaired.len(), 1, "{objects:#?}");
    assert_eq!(unpaired[0]["correlation_id"], 7);
    assert_eq!(unpaired[0]["source"]["packet"], 1);
    // The exchange after it is paired as ever.
    let paired = objects
        .iter()
        .filter(|o| o["kind"] == "response" && o["source"]["request_frame"] == 1)
        .count();
    assert_eq!(paired, 1, "{objects:#?}");
    let (s, err, status) = summary(&capture, &[]);
    assert_eq!((status, err.as_str()), (Some(0), ""), "{s:#}");
    assert_eq!(s["anomalies"]["unpaired_responses"], 1, "{s:#}");
    assert_eq!(s["anomalies"]["partial"], false, "{s:#}");
}

// ---------------------------------------------------------------------------------------
// Finding 4

#[test]
fn a_correlation_id_reused_across_a_hole_is_reported_not_paired_with_the_survivor() {
    // Before: the survivor (`beta`) was paired with the lost request's answer (`alpha`,
    // PREFERRED_LEADER_NOT_AVAILABLE) without a word, and its own answer called unpaired.
    let capture = correlation_reuse_hole();
    let (objects, err, status) = decode(&capture, &["--all"]);
    assert_eq!(status, Some(1), "a gap: partial. {err}");
    let reused: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("correlation id reused"))
        .collect();
    assert_eq!(reused.len(), 1, "{err}");
    assert!(
        reused[0].contains("packet 5: connection 1 (10.0.0.2:9092 -> 10.0.0.1:50123)"),
        "{err}"
    );
    let responses = of_kind(&objects, "response");
    assert_eq!(responses.len(), 2, "{objects:#?}");
    // The lost request's answer: unpaired, not decoded with the survivor's version.
    assert!(responses[0]["api_key"].is_null(), "{}", responses[0]);
    assert_eq!(responses[0]["source"]["packet"], 5);
    // The survivor's own answer, paired with it.
    assert_eq!(
        responses[1]["source"]["request_frame"], 1,
        "{}",
        responses[1]
    );
    assert_eq!(
        responses[1]["replica_election_results"][0]["topic"], "beta",
        "{}",
        responses[1]
    );
    let (s, _, _) = summary(&capture, &[]);
    assert_eq!(s["anomalies"]["unpaired_responses"], 1, "{s:#}");
    assert_eq!(s["latency_us"]["paired"], 1, "{s:#}");
    assert_eq!(
        s["elect_leaders"]["outcomes"][0]["error_name"], "NONE",
        "{s:#}"
    );

    // When no later answer comes to tell, the pairing is made and its doubt said.
    let mut c = Conv::new(true);
    let lost = c.client(elect_request(7, "alpha"), 100_000);
    c.client(elect_request(7, "beta"), 200_000);
    c.server(elect_response(7, "alpha", 80), 1_100_000);
    c.fin(1_500_000);
    c.lose(lost);
    let (_, err, status) = decode(&c.pcap(), &[]);
    assert_eq!(status, Some(1), "{err}");
    assert!(
        err.contains("paired with request frame 1, the one seen with that id, which came after bytes of the requests were lost; if a request lost there had the same id"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------
// decode, scan and summary agree

/// What one command says of a capture: responses paired with their requests (every API;
/// ElectLeaders alone), responses unpaired, ElectLeaders requests never answered, and
/// whether the output is partial. `None` where the command does not say.
#[derive(Debug, PartialEq, Eq)]
struct Counts {
    paired: Option<usize>,
    paired_elect: usize,
    unpaired_responses: Option<usize>,
    unanswered_elect: usize,
    partial: bool,
}

fn by_decode(path: &str, extra: &[&str]) -> Counts {
    let args = [&["decode", "--all"][..], extra, &[path]].concat();
    let output = tool::run_in(&tool::captures_dir(), &args, b"");
    let objects: Vec<Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let responses = of_kind(&objects, "response");
    let paired: Vec<&&Value> = responses
        .iter()
        .filter(|o| o["source"]["request_frame"].is_u64())
        .collect();
    let answered: BTreeSet<(u64, u64)> = paired
        .iter()
        .map(|o| {
            let s = &o["source"];
            (
                s["connection"].as_u64().unwrap(),
                s["request_frame"].as_u64().unwrap(),
            )
        })
        .collect();
    // A request not kept for pairing is not unanswered: its answer is listed unpaired.
    let unanswered_elect = of_kind(&objects, "request")
        .iter()
        .filter(|o| o["api_key"] == 43 && o["source"]["not_kept"] != true)
        .filter(|o| {
            let s = &o["source"];
            !answered.contains(&(
                s["connection"].as_u64().unwrap(),
                s["frame"].as_u64().unwrap(),
            ))
        })
        .count();
    Counts {
        paired: Some(paired.len()),
        paired_elect: paired.iter().filter(|o| o["api_key"] == 43).count(),
        unpaired_responses: Some(responses.iter().filter(|o| o["api_key"].is_null()).count()),
        unanswered_elect,
        partial: output.status.code() == Some(1),
    }
}

fn by_scan(path: &str, extra: &[&str]) -> Counts {
    let args = [&["scan", "--json"][..], extra, &[path]].concat();
    let output = tool::run_in(&tool::captures_dir(), &args, b"");
    let lines: Vec<Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.iter().all(|l| !l["request"].is_null()), "{lines:#?}");
    Counts {
        paired: None,
        paired_elect: lines.iter().filter(|l| !l["response"].is_null()).count(),
        unpaired_responses: None,
        unanswered_elect: lines
            .iter()
            .filter(|l| l["response"].is_null() && l["request"]["source"]["not_kept"] != true)
            .count(),
        partial: output.status.code() == Some(1),
    }
}

fn by_summary(path: &str, extra: &[&str]) -> Counts {
    let args = [&["summary", "--json"][..], extra, &[path]].concat();
    let output = tool::run_in(&tool::captures_dir(), &args, b"");
    let s: Value = serde_json::from_slice(&output.stdout).unwrap();
    let a = &s["anomalies"];
    let n = |v: &Value| v.as_u64().unwrap() as usize;
    // The text and the HTML page say the same as the JSON.
    let (json_unanswered, json_unpaired, json_not_kept) = (
        n(&a["unanswered_requests"]),
        n(&a["unpaired_responses"]),
        n(&a["not_kept_requests"]),
    );
    let text = tool::run_in(
        &tool::captures_dir(),
        &[&["summary"][..], extra, &[path]].concat(),
        b"",
    );
    let text = String::from_utf8(text.stdout).unwrap();
    let line_number = |prefix: &str| -> usize {
        text.lines()
            .find_map(|l| l.trim_start().strip_prefix(prefix))
            .map_or(0, |rest| {
                rest.split(|c: char| !c.is_ascii_digit())
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap()
            })
    };
    let in_percentiles = n(&s["latency_us"]["paired"]);
    let paired_elect = in_percentiles + n(&s["latency_us"]["across_clock_steps"]);
    assert_eq!(
        (
            line_number("latency (us, "),
            line_number("unanswered requests: "),
            line_number("responses whose request was not seen: "),
            line_number("requests not kept for pairing (the in-flight budget was full): "),
        ),
        (
            in_percentiles,
            json_unanswered,
            json_unpaired,
            json_not_kept
        ),
        "{path}: summary's text and JSON\n{text}"
    );
    let dir = tempfile_dir();
    let page = dir.join("summary.html");
    let html_args = [
        &["summary", "--html", page.to_str().unwrap()][..],
        extra,
        &[path],
    ]
    .concat();
    tool::run_in(&tool::captures_dir(), &html_args, b"");
    let html = std::fs::read_to_string(&page).unwrap();
    let cell = |id: &str| -> usize {
        let at = html
            .find(&format!("id=\"{id}\">"))
            .unwrap_or_else(|| panic!("{id}"));
        let rest = &html[at + id.len() + 6..];
        rest[..rest.find('<').unwrap()].parse().unwrap()
    };
    assert_eq!(
        (
            cell("latency-paired"),
            cell("unanswered"),
            cell("unpaired"),
            cell("not-kept"),
        ),
        (
            in_percentiles,
            json_unanswered,
            json_unpaired,
            json_not_kept
        ),
        "{path}: summary's HTML and JSON"
    );
    Counts {
        paired: Some(
            s["apis"]
                .as_array()
                .unwrap()
                .iter()
                .map(|api| n(&api["responses"]))
                .sum(),
        ),
        paired_elect,
        unpaired_responses: Some(json_unpaired),
        unanswered_elect: a["unanswered_by_api"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|u| u["api_key"] == 43)
            .map(|u| n(&u["requests"]))
            .sum(),
        partial: a["partial"] == true,
    }
}

/// A directory of this test run's own, for the HTML pages.
fn tempfile_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "elect-leaders-pairing-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// decode, scan and summary (JSON, text, HTML) on one capture: they agree, and say
/// `want` when given.
fn assert_agree(path: &str, extra: &[&str], want: Option<Counts>) {
    let decode = by_decode(path, extra);
    let scan = by_scan(path, extra);
    let summary = by_summary(path, extra);
    assert_eq!(decode, summary, "{path} {extra:?}: decode, summary");
    if let Some(want) = want {
        assert_eq!(decode, want, "{path} {extra:?}");
    }
    assert_eq!(
        (decode.paired_elect, decode.unanswered_elect, decode.partial),
        (scan.paired_elect, scan.unanswered_elect, scan.partial),
        "{path} {extra:?}: decode, scan"
    );
}

#[test]
fn decode_scan_and_summary_agree_on_every_capture_of_the_corpus() {
    let mut paths: Vec<String> = [
        "elect-leaders-kafka-4.4.pcap",
        "elect-leaders-kafka-4.4.pcapng",
    ]
    .map(String::from)
    .to_vec();
    for (name, _) in captures() {
        paths.push(format!("adversarial/{name}"));
    }
    // What each adversarial capture holds: (paired, ElectLeaders paired, unpaired
    // responses, ElectLeaders unanswered, partial).
    let expected: BTreeMap<&str, (usize, usize, usize, usize, bool)> = [
        ("adversarial/hole-then-ack.pcap", (1, 1, 1, 0, true)),
        ("adversarial/pipelined-1100.pcap", (1100, 11, 0, 0, false)),
        ("adversarial/mid-connection.pcap", (1, 1, 1, 0, false)),
        ("adversarial/produce-acks0.pcap", (2, 1, 0, 0, false)),
        (
            "adversarial/correlation-reuse-hole.pcap",
            (1, 1, 1, 0, true),
        ),
        ("adversarial/gaps-both-ways.pcap", (2, 2, 1, 2, true)),
        ("adversarial/lost-middle-segment.pcap", (2, 2, 1, 0, true)),
        // The malformed request is no request, and not unanswered.
        ("adversarial/corrupted-size-prefix.pcap", (1, 1, 0, 0, true)),
        // Both answers listed, unpaired, without a note (sent before the capture).
        ("adversarial/leading-answers-only.pcap", (0, 0, 2, 0, false)),
        ("adversarial/non-default-port.pcap", (1, 1, 1, 0, false)),
        // The let-go is named (partial); the answer listed, unpaired.
        ("adversarial/idle-then-answer.pcap", (0, 0, 1, 1, true)),
        ("adversarial/year-ahead-packet.pcap", (1, 1, 0, 0, false)),
        // Three paired; the step back named in a note that does not make it partial.
        ("adversarial/clock-step-back.pcap", (3, 3, 0, 0, false)),
        ("adversarial/llc-snap.pcap", (1, 1, 0, 0, false)),
        ("adversarial/elections.pcap", (4, 3, 0, 0, false)),
        // The late answer paired with its request on the old connection.
        ("adversarial/reused-late-answer.pcap", (2, 2, 0, 0, false)),
        // Answer 4 paired (it was lost); answer 1 unpaired; request 2 unanswered.
        ("adversarial/holes-three.pcap", (1, 1, 1, 1, true)),
    ]
    .into_iter()
    .collect();
    assert_eq!(expected.len(), captures().len());
    for path in &paths {
        let want = expected.get(path.as_str()).map(
            |&(paired, paired_elect, unpaired, unanswered_elect, partial)| Counts {
                paired: Some(paired),
                paired_elect,
                unpaired_responses: Some(unpaired),
                unanswered_elect,
                partial,
            },
        );
        assert_agree(path, &[], want);
    }
}

/// Issue 44, item 6: requests pipelined past the in-flight budget are not kept for
/// pairing; their answers are unpaired, and no command counts them unanswered.
#[test]
fn requests_not_kept_for_pairing_are_counted_alike() {
    // 1,100 requests with room for 400: ElectLeaders 100 to 400 paired, 500 to 1,100 not
    // kept (7), their answers unpaired.
    let budget = (400 * kafka_elect_leaders_capture::traffic::IN_FLIGHT_ENTRY_BYTES).to_string();
    let extra = ["--max-in-flight-bytes", budget.as_str()];
    let want = Counts {
        paired: Some(400),
        paired_elect: 4,
        unpaired_responses: Some(700),
        unanswered_elect: 0,
        partial: true,
    };
    assert_agree("adversarial/pipelined-1100.pcap", &extra, Some(want));
    let (s, _, _) = summary(&pipelined(1100), &extra);
    assert_eq!(s["anomalies"]["not_kept_requests"], 700, "{s:#}");
}

// ---------------------------------------------------------------------------------------
// Finding 11: the notes' words

/// Gaps both ways: request 1 lost (client to broker), then answers 3 and 4 lost (broker
/// to client), each proven by the other side's ACK.
fn gaps_both_ways() -> Vec<u8> {
    let mut c = Conv::new(true);
    let mut lost = vec![c.client(elect_request(1, "a"), 100_000)];
    c.client(elect_request(2, "b"), 110_000);
    c.server(elect_response(1, "a", 0), 120_000);
    c.server(elect_response(2, "b", 0), 130_000);
    c.client(elect_request(3, "c"), 140_000);
    lost.push(c.server(elect_response(3, "c", 0), 150_000));
    c.client(elect_request(4, "d"), 160_000);
    lost.push(c.server(elect_response(4, "d", 0), 170_000));
    c.client(elect_request(5, "e"), 180_000);
    c.server(elect_response(5, "e", 0), 190_000);
    c.fin(200_000);
    for i in lost {
        c.lose(i);
    }
    c.pcap()
}

#[test]
fn a_repeat_count_says_when_its_notes_go_the_other_way() {
    let (_, err, status) = decode(&gaps_both_ways(), &[]);
    assert_eq!(status, Some(1), "{err}");
    let count: Vec<&str> = err.lines().filter(|l| l.contains(" more like ")).collect();
    assert_eq!(count.len(), 1, "{err}");
    // The quoted note is the first, client to broker; the two counted went the other way.
    assert!(
        count[0].contains("(10.0.0.1:50123 -> 10.0.0.2:9092)"),
        "{err}"
    );
    assert!(
        count[0].contains("all of them the other way, as 10.0.0.2:9092 -> 10.0.0.1:50123)"),
        "{err}"
    );
}

#[test]
fn the_notes_at_the_end_of_a_capture_come_in_packet_order() {
    // The capture ends inside a response begun in packet 5 and inside a request begun in
    // packet 6. The client's direction was named first whatever the packets.
    let mut c = Conv::new(true);
    c.client(elect_request(1, "a"), 100_000);
    let answer = elect_response(1, "a", 0);
    c.server(answer[..10].to_vec(), 110_000);
    let request = elect_request(2, "b");
    c.client(request[..10].to_vec(), 120_000);
    let (_, err, status) = decode(&c.pcap(), &[]);
    assert_eq!(status, Some(1), "{err}");
    // The first is said in full, the second counted (one kind): the first is packet 5's.
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("inside a frame"))
        .collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].contains(": packet 5: connection 1 (10.0.0.2:9092 -> 10.0.0.1:50123)"),
        "{err}"
    );
    assert!(
        lines[1].contains("1 more like")
            && lines[1].contains("(packet 6, connection 1, all of them the other way"),
        "{err}"
    );
}

/// A request (id 2) whose middle segment the capture lost, the broker's answer
/// acknowledging it all, then one more exchange.
fn lost_middle_segment() -> Vec<u8> {
    let mut c = Conv::new(true);
    c.client(elect_request(1, "a"), 100_000);
    c.server(elect_response(1, "a", 0), 110_000);
    let r = elect_request(2, "b");
    c.client(r[..20].to_vec(), 120_000);
    let lost = c.client(r[20..30].to_vec(), 130_000);
    c.client(r[30..].to_vec(), 140_000);
    c.server(elect_response(2, "b", 0), 150_000);
    c.client(elect_request(3, "c"), 160_000);
    c.server(elect_response(3, "c", 0), 170_000);
    c.fin(200_000);
    c.lose(lost);
    c.pcap()
}

#[test]
fn notes_come_in_packet_order_when_a_response_waited_for_the_requests() {
    // The answer to request 2 (packet 8) waits until the requests' direction finds its
    // next frame boundary (packet 9): its note came after the one of packet 9.
    let (objects, err, status) = decode(&lost_middle_segment(), &["--all"]);
    assert_eq!(status, Some(1), "{err}");
    let packets: Vec<u64> = err
        .lines()
        .filter_map(|l| {
            let at = l.find(": packet ")? + 9;
            l[at..].split(':').next()?.parse().ok()
        })
        .collect();
    assert_eq!(packets, [8, 8, 9], "{err}");
    assert!(
        !err.contains("paired with request frame"),
        "no doubt: {err}"
    );
    let paired = objects
        .iter()
        .filter(|o| o["source"]["request_frame"].is_u64())
        .count();
    assert_eq!(paired, 2, "{objects:#?}");
}

// ---------------------------------------------------------------------------------------
// Issue 44, item 3: time that goes backward

#[test]
fn a_clock_that_steps_back_is_named_and_kept_out_of_the_percentiles() {
    let (objects, err, status) = decode(&clock_step_back(), &[]);
    assert_eq!(status, Some(0), "named, not partial: {err}");
    assert!(
        err.contains(": packet 7: the capture's clock steps back 3599.800000 s here"),
        "{err}"
    );
    // decode shows what the capture says, the answer timed an hour before its request.
    let answer = objects
        .iter()
        .find(|o| o["kind"] == "response" && o["correlation_id"] == 2)
        .unwrap();
    assert_eq!(
        answer["source"]["latency_us"], -3_599_800_000i64,
        "{answer}"
    );
    let (s, _, status) = summary(&clock_step_back(), &[]);
    assert_eq!(status, Some(0));
    let l = &s["latency_us"];
    assert_eq!(
        (l["paired"].as_u64(), l["across_clock_steps"].as_u64()),
        (Some(2), Some(1)),
        "{s:#}"
    );
    assert_eq!(
        (l["p50"].as_i64(), l["max"].as_i64()),
        (Some(10_000), Some(20_000)),
        "{s:#}"
    );
}

#[test]
fn times_past_what_json_holds_exactly_are_taken_as_its_last_and_named() {
    // pcapng, microsecond ticks: the exchange stamped near u64::MAX microseconds (year
    // 584,556), the answer a second before its request.
    let mut c = Conv::new(true);
    c.client(elect_request(1, "far"), 100_000);
    c.server(elect_response(1, "far", 0), 200_000);
    let frames = c.frames();
    let ticks = |k: usize| match k {
        4 => u64::MAX,
        _ => u64::MAX - 1_000_000,
    };
    let packets: Vec<(u32, u64, &[u8], u32)> = frames
        .iter()
        .enumerate()
        .map(|(k, (_, f))| (0, ticks(k), &f[..], f.len() as u32))
        .collect();
    let capture = cap::pcapng_file(false, &[(cap::LINKTYPE_ETHERNET as u16, None)], &packets);
    let (objects, err, status) = decode(&capture, &[]);
    assert_eq!(status, Some(0), "{err}");
    assert!(err.contains("is past 2255-06-05T23:47:34.740991"), "{err}");
    for o in &objects {
        assert_eq!(o["source"]["epoch_us"], 9_007_199_254_740_991u64, "{o}");
        assert_eq!(o["source"]["time"], "2255-06-05T23:47:34.740991000Z", "{o}");
    }
}

// ---------------------------------------------------------------------------------------
// Issue 44, item 7: the summary says what it read

#[test]
fn the_summary_counts_the_packets_it_read_and_those_not_tcp() {
    let (s, _, status) = summary(&llc_snap(), &[]);
    assert_eq!(status, Some(0));
    assert_eq!(s["packets"]["read"], 9, "{s:#}");
    assert_eq!(s["packets"]["not_tcp_ip"], 1, "{s:#}");
    let text = run(&["summary", "-"], &llc_snap());
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("\npackets: 9 (1 not TCP/IP)\n"), "{text}");
}

#[test]
fn a_capture_without_tcp_says_so() {
    let dns = cap::ipv4(
        [10, 0, 0, 1],
        [10, 0, 0, 53],
        17,
        1,
        0,
        &cap::udp(5353, 53, b"q"),
    );
    let frames = vec![
        (0, cap::ethernet(&[], cap::ETHERTYPE_IPV4, &dns)),
        (1_000, cap::ethernet(&[], cap::ETHERTYPE_ARP, &[0; 28])),
    ];
    let (objects, err, status) = decode(&pcap_of(&frames), &["--all"]);
    assert!(objects.is_empty());
    assert_eq!(status, Some(0), "said, not an error: {err}");
    assert!(
        err.contains("none of the capture's 2 packets is TCP over IP (2 of them not TCP/IP"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------
// Issue 44, item 8: questions in one short command

/// The commands of crates/cli/README.md's "Questions in one command", each with what it must show
/// on `elections.pcap`.
#[test]
fn each_everyday_question_is_one_short_command() {
    let readme =
        std::fs::read_to_string(tool::captures_dir().join("../../crates/cli/README.md")).unwrap();
    let at = readme
        .find("### Questions in one command")
        .expect("the README's section");
    let section = &readme[at..];
    let section = &section[..section[4..].find("\n#").map_or(section.len(), |e| e + 4)];
    let commands: Vec<&str> = section
        .lines()
        .filter(|l| l.starts_with("| "))
        .filter_map(|l| l.find("`elect-leaders ").map(|at| &l[at + 15..]))
        .map(|l| &l[..l.find('`').unwrap()])
        .collect();
    assert_eq!(commands.len(), 4, "{section}");
    let capture = elections();
    let mut outputs = Vec::new();
    for command in &commands {
        let line = format!("elect-leaders {command}");
        assert!(line.len() <= 60, "{line}: {} characters", line.len());
        let args: Vec<&str> = command
            .split_whitespace()
            .map(|a| if a == "capture.pcap" { "-" } else { a })
            .collect();
        let output = run(&args, &capture);
        assert_eq!(output.status.code(), Some(0), "{line}");
        outputs.push(String::from_utf8(output.stdout).unwrap());
    }
    // Which clients ran UNCLEAN elections, and what happened.
    assert!(
        outputs[0].contains("client_id=\"ops-tool\" election_type=UNCLEAN")
            && outputs[0].contains("failed=1 not_needed=0")
            && !outputs[0].contains("admin"),
        "{}",
        outputs[0]
    );
    // The slowest round trips, with their partitions.
    assert!(
        outputs[1].contains(
            "slowest ElectLeaders round trips:\n  2500000 us  connection 1, request frame 1, \
             answer packet 14: \"orders\"/0 NONE, \"orders\"/1 ELIGIBLE_LEADERS_NOT_AVAILABLE\n  \
             90000 us  connection 2"
        ),
        "{}",
        outputs[1]
    );
    // Which partitions failed, and why.
    assert!(
        outputs[2].contains("\"orders\" partition 1  ELIGIBLE_LEADERS_NOT_AVAILABLE (83)  x1  message \"no live replica in the ISR or out of it\"")
            && outputs[2].contains("\"payments\" partition 1  PREFERRED_LEADER_NOT_AVAILABLE (80)"),
        "{}",
        outputs[2]
    );
    // Every frame of one connection, in order.
    let frames: Vec<Value> = outputs[3]
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<(String, u64)> = frames
        .iter()
        .map(|o| {
            assert_eq!(o["source"]["connection"], 2, "{o}");
            (
                o["api_name"].as_str().unwrap().to_owned(),
                o["source"]["frame"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(kinds.len(), 6, "{kinds:?}");
    assert_eq!(kinds[0], ("ApiVersions".to_owned(), 1));
    assert!(kinds[1..]
        .iter()
        .all(|k| k.0 == "ApiVersions" || k.0 == "ElectLeaders"));
}

#[test]
fn a_filter_that_can_never_match_says_so() {
    let output = run(
        &["decode", "--api", "Metadata", "--errors-only", "-"],
        &elections(),
    );
    assert_eq!(output.status.code(), Some(2));
    let err = String::from_utf8(output.stderr).unwrap();
    assert!(err.contains("can never match"), "{err}");
    // --connection on frames that are not a capture.
    let output = tool::run_in(
        &tool::captures_dir().join(".."),
        &["decode", "--connection", "1", "request-v0.bin"],
        b"",
    );
    assert_eq!(output.status.code(), Some(2));
    let err = String::from_utf8(output.stderr).unwrap();
    assert!(err.contains("this input is not a capture"), "{err}");
}

// ---------------------------------------------------------------------------------------
// Issue 44, item 9: a packet range names the packet whose time it gives

#[test]
fn a_packet_range_runs_in_capture_order_and_ends_with_the_packet_timed() {
    // The request's second half captured first (packet 4, 110 ms), its first half next
    // (packet 5, 120 ms): the range was [5,4], timed by packet 5.
    let mut c = Conv::new(true);
    let request = elect_request(1, "reordered");
    let (head, tail) = request.split_at(20);
    let (seq, ack) = (c.cseq, c.sseq);
    c.push(true, seq + 20, ack, ACK | PSH, tail.to_vec(), 110_000);
    c.push(true, seq, ack, ACK | PSH, head.to_vec(), 120_000);
    c.cseq += request.len() as u32;
    c.server(elect_response(1, "reordered", 0), 200_000);
    c.fin(300_000);
    let (objects, err, status) = decode(&c.pcap(), &[]);
    assert_eq!(status, Some(0), "{err}");
    let source = &of_kind(&objects, "request")[0]["source"];
    assert_eq!(source["packets"], serde_json::json!([4, 5]), "{source}");
    assert_eq!(source["epoch_us"], 1_700_000_000_120_000u64, "{source}");
}
