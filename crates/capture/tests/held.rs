//! What the reader holds while large frames stream by (issue 44, item 1): a frame of an
//! API it does not decode is passed over as it comes, its head kept and its bytes counted;
//! one bound ([`Limits::held_bytes`]) on all that is held across connections, with a note
//! naming what was let go when it is reached.

use kafka_elect_leaders::{
    ElectLeadersRequestData, ElectionType, EncodeRequest, TopicPartitionsData,
};
use kafka_elect_leaders_capture::traffic::PASS_OVER_HEAD;
use kafka_elect_leaders_capture::{Analyzer, Capture, Item, Limits, Role, What};
use kafka_elect_leaders_testkit::pcap::{self as cap, ACK, FIN, PSH, SYN};

const SERVER: [u8; 4] = [10, 0, 0, 2];
const MSS: usize = 60_000;

/// A Produce v3 request with `acks` 1 whose records are `records` zero bytes.
fn produce(correlation_id: i32, records: usize) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend(0i16.to_be_bytes());
    b.extend(3i16.to_be_bytes());
    b.extend(correlation_id.to_be_bytes());
    b.extend(4i16.to_be_bytes());
    b.extend(b"bulk");
    b.extend((-1i16).to_be_bytes()); // transactional_id: null
    b.extend(1i16.to_be_bytes()); // acks
    b.extend(30_000i32.to_be_bytes());
    b.extend(1i32.to_be_bytes());
    b.extend(1i16.to_be_bytes());
    b.push(b't');
    b.extend(1i32.to_be_bytes());
    b.extend(0i32.to_be_bytes());
    b.extend((records as i32).to_be_bytes());
    b.resize(b.len() + records, 0);
    let mut frame = (b.len() as i32).to_be_bytes().to_vec();
    frame.extend(b);
    frame
}

/// A response (header v0) of `correlation_id` with `body` zero bytes after it.
fn response(correlation_id: i32, body: usize) -> Vec<u8> {
    let mut frame = ((4 + body) as i32).to_be_bytes().to_vec();
    frame.extend(correlation_id.to_be_bytes());
    frame.resize(frame.len() + body, 0);
    frame
}

/// An ElectLeaders v2 request naming `partitions` partitions of one topic.
fn elect(correlation_id: i32, partitions: i32) -> Vec<u8> {
    let partitions: Vec<i32> = (0..partitions).collect();
    let topics = [TopicPartitionsData::new(b"orders", &partitions)];
    let data = ElectLeadersRequestData {
        correlation_id,
        client_id: Some(b"held"),
        election_type: ElectionType::PREFERRED,
        topic_partitions: Some(&topics),
        timeout_ms: 30_000,
        ..Default::default()
    };
    let mut buf = vec![0; data.encoded_len(2).unwrap()];
    data.encode(2, &mut buf).unwrap();
    buf
}

/// Connections (client n on port 40000 + n) each sending its requests and getting its
/// answers, in segments of [`MSS`] bytes, their packets interleaved round robin.
fn capture(conns: &[Vec<(Vec<u8>, Vec<u8>)>]) -> Vec<u8> {
    let mut per_conn: Vec<Vec<Vec<u8>>> = Vec::new();
    for (n, exchanges) in conns.iter().enumerate() {
        let client = [10, 0, 1, n as u8];
        let port = 40_000 + n as u16;
        let (mut c, mut s) = (1_000u32, 9_000u32);
        let to_server = |seq, ack, flags, payload: &[u8]| {
            cap::ethernet(
                &[],
                cap::ETHERTYPE_IPV4,
                &cap::ipv4_tcp(client, SERVER, port, 9092, seq, ack, flags, payload),
            )
        };
        let to_client = |seq, ack, flags, payload: &[u8]| {
            cap::ethernet(
                &[],
                cap::ETHERTYPE_IPV4,
                &cap::ipv4_tcp(SERVER, client, 9092, port, seq, ack, flags, payload),
            )
        };
        let mut packets = vec![
            to_server(c - 1, 0, SYN, &[]),
            to_client(s - 1, c, SYN | ACK, &[]),
            to_server(c, s, ACK, &[]),
        ];
        for (request, answer) in exchanges {
            for part in request.chunks(MSS) {
                packets.push(to_server(c, s, ACK | PSH, part));
                c += part.len() as u32;
            }
            for part in answer.chunks(MSS) {
                packets.push(to_client(s, c, ACK | PSH, part));
                s += part.len() as u32;
            }
        }
        packets.push(to_server(c, s, FIN | ACK, &[]));
        packets.push(to_client(s, c + 1, FIN | ACK, &[]));
        packets.push(to_server(c + 1, s + 1, ACK, &[]));
        per_conn.push(packets);
    }
    let mut order = Vec::new();
    let longest = per_conn.iter().map(Vec::len).max().unwrap_or(0);
    for k in 0..longest {
        for packets in &per_conn {
            if let Some(p) = packets.get(k) {
                order.push(p.clone());
            }
        }
    }
    let records: Vec<cap::Packet<'_>> = order
        .iter()
        .enumerate()
        .map(|(k, p)| (1_700_000_000, k as u32 * 10, &p[..], p.len() as u32))
        .collect();
    cap::pcap_file(cap::LINKTYPE_ETHERNET, false, false, &records)
}

/// The items of a capture read with `limits`, and the most bytes the analyser held.
fn read(capture: &[u8], limits: Limits) -> (Vec<Item>, usize) {
    let mut reader = Capture::new(capture).unwrap();
    reader.set_limits(limits);
    let mut analyzer = Analyzer::new(None);
    analyzer.set_limits(limits);
    let (mut items, mut peak) = (Vec::new(), 0);
    while let Some(event) = reader.next_event().unwrap() {
        analyzer.feed(event, &mut |item| items.push(item));
        peak = peak.max(analyzer.held_bytes());
    }
    (items, peak)
}

fn notes(items: &[Item]) -> Vec<&str> {
    items
        .iter()
        .filter_map(|i| match i {
            Item::Note(n) => Some(n.message.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_large_frame_of_another_api_is_passed_over_as_it_streams_by() {
    // Four connections, each one 8 MB Produce request answered, interleaved: held whole,
    // 32 MB at once.
    let big = 8 << 20;
    let conns: Vec<_> = (0..4)
        .map(|n| vec![(produce(n + 1, big), response(n + 1, 20))])
        .collect();
    let (items, peak) = read(&capture(&conns), Limits::default());
    assert!(notes(&items).is_empty(), "{:?}", notes(&items));
    assert!(
        peak < 4 * 4 * PASS_OVER_HEAD,
        "at most a head and a packet or so per direction held, not {peak} bytes"
    );
    let frames: Vec<_> = items
        .iter()
        .filter_map(|i| match i {
            Item::Frame(f) => Some(f),
            _ => None,
        })
        .collect();
    assert_eq!(frames.len(), 8, "4 requests and their answers");
    for f in &frames {
        match f.what {
            What::Other {
                role: Role::Requests,
                api_key: 0,
                api_version: 3,
                correlation_id,
            } => {
                assert_eq!(f.len, produce(correlation_id, big).len());
                assert!(!f.is_whole(), "only its head kept");
                assert_eq!(&f.frame[..], &produce(correlation_id, big)[..18], "header");
                assert!(f.waits, "acks 1: answered");
                assert!(f.origin.last_packet > f.origin.first_packet + 100);
            }
            What::Other {
                role: Role::Responses,
                api_key: 0,
                ..
            } => {
                assert!(f.is_whole());
                assert!(f.request.is_some(), "paired");
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn past_the_bound_on_bytes_held_the_largest_frame_is_let_go_and_named() {
    // An ElectLeaders request of some 4 MB (a million partitions) is held whole to be
    // decoded; with a bound of 1 MiB it is let go, named, and its answer still paired.
    let request = elect(7, 1_000_000);
    assert!(request.len() > 4_000_000);
    let conns = vec![vec![(request.clone(), response(7, 0))]];
    let limits = Limits {
        held_bytes: 1 << 20,
        ..Limits::default()
    };
    let (items, peak) = read(&capture(&conns), limits);
    assert!(peak <= (1 << 20) + 2 * MSS + PASS_OVER_HEAD, "{peak}");
    let notes = notes(&items);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("ElectLeaders v2 request (correlation id 7) frame at stream offset 0")
            && notes[0].contains(&format!("({} bytes,", request.len()))
            && notes[0].contains("--max-held-bytes"),
        "{}",
        notes[0]
    );
    let listed: Vec<_> = items
        .iter()
        .filter_map(|i| match i {
            Item::Frame(f) => Some((f.what, f.len, f.request.is_some())),
            _ => None,
        })
        .collect();
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(
        matches!(listed[0].0, What::Other { api_key: 43, .. }) && listed[0].1 == request.len(),
        "listed as passed over: {listed:?}"
    );
    // With the default bound it is decoded.
    let (items, _) = read(&capture(&conns), Limits::default());
    assert!(items
        .iter()
        .any(|i| matches!(i, Item::Frame(f) if f.what == What::ElectRequest && f.is_whole())));
}
