//! Captures written by hand (with the shared writer of the integration tests), read back as
//! events.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::net::IpAddr;
use std::time::Duration;

use super::decoder::Resolution;
use super::file::BUFFER;
use super::*;
use crate::reasm;
use crate::types::{CaptureStats, CloseReason, ConnId, Endpoint, Event, Limits, Timestamp};

use kafka_elect_leaders_testkit::pcap as w;
use w::{ACK, FIN, PSH, RST, SYN};

// ---------------------------------------------------------------------------------------
// Harness

/// Reads every event, checking the stream invariants on the way.
fn read_all<R: Read>(reader: R) -> (Vec<Event>, CaptureStats) {
    let mut capture = Capture::new(reader).expect("a capture");
    let mut events = Vec::new();
    while let Some(event) = capture.next_event().expect("no I/O error") {
        events.push(event);
        assert!(events.len() < 1_000_000, "runaway");
    }
    assert!(capture.next_event().unwrap().is_none(), "None stays None");
    check_invariants(&events);
    let stats = capture.stats();
    let notes = events
        .iter()
        .filter(|e| matches!(e, Event::Note { .. }))
        .count() as u64;
    assert_eq!(stats.notes, notes, "notes counted");
    (events, stats)
}

fn read(bytes: &[u8]) -> (Vec<Event>, CaptureStats) {
    read_all(bytes)
}

/// Open first, Close once and last, each direction's Data and Gap continuing each other.
fn check_invariants(events: &[Event]) {
    let mut open = HashSet::new();
    let mut closed = HashSet::new();
    let mut next: HashMap<(ConnId, Endpoint), u64> = HashMap::new();
    let mut last_packet = 0;
    for e in events {
        match e {
            Event::Open { conn, packet, .. } => {
                assert!(open.insert(*conn), "opened twice: {e:?}");
                assert_eq!(conn.0 as usize, open.len(), "numbered in order");
                assert!(*packet >= last_packet);
                last_packet = *packet;
            }
            Event::Data {
                conn,
                from,
                offset,
                bytes,
                packet,
                ..
            } => {
                assert!(open.contains(conn) && !closed.contains(conn), "{e:?}");
                assert!(!bytes.is_empty());
                let n = next.entry((*conn, *from)).or_insert(0);
                assert_eq!(*offset, *n, "data continues: {e:?}");
                *n += bytes.len() as u64;
                assert!(*packet >= last_packet.min(*packet));
            }
            Event::Gap {
                conn,
                from,
                offset,
                len,
                ..
            } => {
                assert!(open.contains(conn) && !closed.contains(conn), "{e:?}");
                assert!(*len > 0);
                let n = next.entry((*conn, *from)).or_insert(0);
                assert_eq!(*offset, *n, "gap continues: {e:?}");
                *n += len;
            }
            Event::Close { conn, .. } => {
                assert!(open.contains(conn), "{e:?}");
                assert!(closed.insert(*conn), "closed twice: {e:?}");
            }
            Event::Note { message, .. } => assert!(!message.is_empty()),
        }
    }
    assert_eq!(open, closed, "every connection closes");
}

/// Each direction's stream as text: bytes as they are, gaps as `<gap N>`.
fn stream(events: &[Event], conn: u32, from: Endpoint) -> String {
    let mut s = String::new();
    for e in events {
        match e {
            Event::Data {
                conn: c,
                from: f,
                bytes,
                ..
            } if c.0 == conn && *f == from => s.push_str(&String::from_utf8_lossy(bytes)),
            Event::Gap {
                conn: c,
                from: f,
                len,
                ..
            } if c.0 == conn && *f == from => s.push_str(&format!("<gap {len}>")),
            _ => {}
        }
    }
    s
}

fn notes(events: &[Event]) -> Vec<(u64, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Note {
                packet, message, ..
            } => Some((*packet, message.clone())),
            _ => None,
        })
        .collect()
}

fn closes(events: &[Event]) -> Vec<(u32, Option<u64>, &'static str)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Close {
                conn,
                packet,
                reason,
            } => Some((conn.0, *packet, reason.as_str())),
            _ => None,
        })
        .collect()
}

fn opens(events: &[Event]) -> Vec<(u32, Endpoint, Endpoint, bool, u64)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Open {
                conn,
                a,
                b,
                syn_seen,
                packet,
                ..
            } => Some((conn.0, *a, *b, *syn_seen, *packet)),
            _ => None,
        })
        .collect()
}

const CLIENT: [u8; 4] = [10, 0, 0, 1];
const SERVER: [u8; 4] = [10, 0, 0, 2];
const CPORT: u16 = 50_000;
const SPORT: u16 = 9092;

fn ep(ip: [u8; 4], port: u16) -> Endpoint {
    Endpoint {
        ip: IpAddr::from(ip),
        port,
    }
}

fn client() -> Endpoint {
    ep(CLIENT, CPORT)
}

fn server() -> Endpoint {
    ep(SERVER, SPORT)
}

/// Client to server, as a raw IPv4 packet.
fn c2s(seq: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    w::ipv4_tcp(CLIENT, SERVER, CPORT, SPORT, seq, 0, flags, payload)
}

/// Server to client, as a raw IPv4 packet.
fn s2c(seq: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    w::ipv4_tcp(SERVER, CLIENT, SPORT, CPORT, seq, 0, flags, payload)
}

/// Server to client, acknowledging up to `ack`.
fn s2c_ack(seq: u32, ack: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    w::ipv4_tcp(SERVER, CLIENT, SPORT, CPORT, seq, ack, flags, payload)
}

/// A legacy pcap (little-endian, microseconds) of Ethernet frames around these IP packets,
/// one second apart.
fn eth_pcap(ip_packets: &[Vec<u8>]) -> Vec<u8> {
    let frames: Vec<Vec<u8>> = ip_packets
        .iter()
        .map(|p| w::ethernet(&[], w::ETHERTYPE_IPV4, p))
        .collect();
    let packets: Vec<w::Packet> = frames
        .iter()
        .enumerate()
        .map(|(i, f)| (1_000 + i as u32, 0, &f[..], f.len() as u32))
        .collect();
    w::pcap_file(w::LINKTYPE_ETHERNET, false, false, &packets)
}

const CISN: u32 = 1000;
const SISN: u32 = 5000;

/// SYN, SYN-ACK, ACK.
fn handshake() -> Vec<Vec<u8>> {
    vec![
        c2s(CISN, SYN, b""),
        s2c(SISN, SYN | ACK, b""),
        c2s(CISN + 1, ACK, b""),
    ]
}

// ---------------------------------------------------------------------------------------
// Small pieces

#[test]
fn capture_magic_numbers() {
    for magic in [
        [0xa1, 0xb2, 0xc3, 0xd4],
        [0xd4, 0xc3, 0xb2, 0xa1],
        [0xa1, 0xb2, 0x3c, 0x4d],
        [0x4d, 0x3c, 0xb2, 0xa1],
        [0x0a, 0x0d, 0x0d, 0x0a],
    ] {
        assert!(is_capture(&magic));
        assert!(is_capture(&[&magic[..], &[1, 2, 3]].concat()));
    }
    assert!(!is_capture(&[0xa1, 0xb2, 0xc3]));
    assert!(!is_capture(&[0, 0, 0, 42, 0, 43]));
    assert!(!is_capture(b""));
}

#[test]
fn capture_timestamp_display() {
    let t = |secs, nanos| Timestamp { secs, nanos }.to_string();
    assert_eq!(t(0, 0), "1970-01-01T00:00:00.000000000Z");
    assert_eq!(
        t(1_796_078_117, 123_456_789),
        "2026-11-30T22:35:17.123456789Z"
    );
    assert_eq!(t(951_825_600, 1), "2000-02-29T12:00:00.000000001Z");
    assert_eq!(t(94_694_399, 999_999_999), "1972-12-31T23:59:59.999999999Z");
    assert_eq!(t(4_107_542_400, 0), "2100-03-01T00:00:00.000000000Z");
    assert_eq!(t(253_402_300_799, 0), "9999-12-31T23:59:59.000000000Z");
    // The largest 32-bit seconds of a pcap record.
    assert_eq!(
        t(u64::from(u32::MAX), 999_999_999),
        "2106-02-07T06:28:15.999999999Z"
    );
    // Past year 9999 RFC 3339 has no four-digit year: the last instant it can write, no panic.
    let last = "9999-12-31T23:59:59.999999999Z";
    assert_eq!(t(253_402_300_799, 999_999_999), last);
    assert_eq!(t(253_402_300_800, 0), last);
    assert_eq!(t(1 << 40, 5), last);
    assert_eq!(t(u64::MAX, 999_999_999), last);
    assert_eq!(t(u64::MAX, u32::MAX), last);
    // Nanoseconds of a second or more (not made by the reader) carry into the seconds.
    assert_eq!(t(0, 1_000_000_001), "1970-01-01T00:00:01.000000001Z");
    assert!(
        Timestamp { secs: 1, nanos: 0 }
            > Timestamp {
                secs: 0,
                nanos: 999
            }
    );
}

#[test]
fn capture_endpoint_display() {
    assert_eq!(client().to_string(), "10.0.0.1:50000");
    let v6 = Endpoint {
        ip: "::1".parse().unwrap(),
        port: 9092,
    };
    assert_eq!(v6.to_string(), "[::1]:9092");
}

#[test]
fn capture_rejects_what_is_not_a_capture() {
    assert!(Capture::new(&b""[..]).is_err());
    assert!(Capture::new(&b"\x00\x00\x00\x10hello"[..]).is_err());
    // A pcap magic number and then nothing.
    assert!(Capture::new(&[0xd4, 0xc3, 0xb2, 0xa1, 2, 0][..]).is_err());
    // A pcapng magic number with a bad byte-order magic.
    assert!(Capture::new(&[0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 1, 2, 3, 4][..]).is_err());
}

#[test]
fn capture_empty_captures_have_no_events() {
    let (events, stats) = read(&w::pcap_file(1, false, false, &[]));
    assert!(events.is_empty());
    assert_eq!(stats, CaptureStats::default());
    let (events, _) = read(&w::pcapng_file(false, &[(1, None)], &[]));
    assert!(events.is_empty());
}

// ---------------------------------------------------------------------------------------
// Streams

#[test]
fn capture_in_order_conversation() {
    let mut p = handshake();
    p.push(c2s(CISN + 1, PSH | ACK, b"hello"));
    p.push(s2c(SISN + 1, PSH | ACK, b"world"));
    p.push(c2s(CISN + 6, PSH | ACK, b"again"));
    p.push(c2s(CISN + 11, FIN | ACK, b""));
    p.push(s2c(SISN + 6, FIN | ACK, b""));
    p.push(c2s(CISN + 12, ACK, b"")); // the last ACK opens nothing
    let (events, stats) = read(&eth_pcap(&p));
    assert_eq!(opens(&events), vec![(1, client(), server(), true, 1)]);
    assert_eq!(stream(&events, 1, client()), "helloagain");
    assert_eq!(stream(&events, 1, server()), "world");
    assert_eq!(closes(&events), vec![(1, Some(8), "FIN")]);
    assert!(notes(&events).is_empty());
    assert_eq!(stats.packets, 9);
    assert_eq!(stats.tcp, 9);
    assert_eq!(stats.connections, 1);
    // The data events name their packets and times.
    let data: Vec<(u64, u64, Timestamp)> = events
        .iter()
        .filter_map(|e| match e {
            Event::Data {
                offset,
                packet,
                time,
                ..
            } => Some((*offset, *packet, *time)),
            _ => None,
        })
        .collect();
    let at = |s| Timestamp { secs: s, nanos: 0 };
    assert_eq!(
        data,
        vec![(0, 4, at(1003)), (0, 5, at(1004)), (5, 6, at(1005))]
    );
    // Open comes first, Close last.
    assert!(matches!(events.first(), Some(Event::Open { .. })));
    assert!(matches!(events.last(), Some(Event::Close { .. })));
}

#[test]
fn capture_out_of_order_segments_wait_for_the_hole() {
    let mut p = handshake();
    p.push(c2s(CISN + 6, ACK, b"world"));
    p.push(c2s(CISN + 11, ACK, b"!"));
    p.push(c2s(CISN + 1, ACK, b"hello"));
    let (events, _) = read(&eth_pcap(&p));
    let data: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Data {
                offset,
                bytes,
                packet,
                ..
            } => Some((*offset, bytes.clone(), *packet)),
            _ => None,
        })
        .collect();
    // Each packet's bytes named by that packet, not by the one that filled the hole
    // (issue 36, finding 1).
    assert_eq!(
        data,
        vec![
            (0, b"hello".to_vec(), 6),
            (5, b"world".to_vec(), 4),
            (10, b"!".to_vec(), 5)
        ]
    );
    assert_eq!(closes(&events), vec![(1, None, "end of capture")]);
}

#[test]
fn capture_bytes_after_a_hole_proven_by_an_ack_keep_their_packet_and_time() {
    // "hello" never captured; "world" (packet 4, at 1003 s) held behind the hole until the
    // server's ACK (packet 5, at 1004 s) proves the hole lost. "world" is still named by
    // packet 4 and its time, not by the ACK's (issue 36, finding 1).
    let mut p = handshake();
    p.push(c2s(CISN + 6, ACK, b"world"));
    p.push(s2c_ack(SISN + 1, CISN + 11, ACK, b""));
    let (events, _) = read(&eth_pcap(&p));
    let seen: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Data {
                offset,
                packet,
                time,
                ..
            } => Some(format!("data {offset} packet {packet} at {}", time.secs)),
            Event::Gap {
                offset,
                len,
                packet,
                ..
            } => Some(format!("gap {offset}+{len} packet {packet}")),
            _ => None,
        })
        .collect();
    assert_eq!(seen, ["gap 0+5 packet 5", "data 5 packet 4 at 1003"]);
}

#[test]
fn capture_retransmissions_are_dropped() {
    let mut p = handshake();
    p.push(c2s(CISN + 1, ACK, b"hello"));
    p.push(c2s(CISN + 1, ACK, b"hello"));
    p.push(c2s(CISN + 6, ACK, b"world"));
    p.push(c2s(CISN + 1, ACK, b"helloworld"));
    p.push(c2s(CISN, SYN, b"")); // a retransmitted SYN (same ISN) is nothing new
    let (events, _) = read(&eth_pcap(&p));
    assert_eq!(stream(&events, 1, client()), "helloworld");
    assert!(notes(&events).is_empty(), "{:?}", notes(&events));
    assert_eq!(opens(&events).len(), 1);
}

#[test]
fn capture_overlapping_segments_with_the_same_bytes() {
    let mut p = handshake();
    p.push(c2s(CISN + 1, ACK, b"0123456789"));
    p.push(c2s(CISN + 6, ACK, b"56789abcde"));
    // Out of order, overlapping a held segment.
    p.push(c2s(CISN + 21, ACK, b"klmno"));
    p.push(c2s(CISN + 19, ACK, b"ijklm"));
    p.push(c2s(CISN + 16, ACK, b"fghij"));
    let (events, _) = read(&eth_pcap(&p));
    assert_eq!(stream(&events, 1, client()), "0123456789abcdefghijklmno");
    assert!(notes(&events).is_empty(), "{:?}", notes(&events));
}

#[test]
fn capture_overlapping_segments_with_different_bytes_keep_the_first() {
    let mut p = handshake();
    p.push(c2s(CISN + 1, ACK, b"0123456789"));
    p.push(c2s(CISN + 6, ACK, b"XXXXXabcde")); // packet 5: disagrees with delivered bytes
    p.push(c2s(CISN + 21, ACK, b"klmno"));
    p.push(c2s(CISN + 20, ACK, b"jKLm")); // packet 7: disagrees with held bytes
    p.push(c2s(CISN + 16, ACK, b"fghi"));
    let (events, _) = read(&eth_pcap(&p));
    assert_eq!(stream(&events, 1, client()), "0123456789abcdefghijklmno");
    let n = notes(&events);
    assert_eq!(n.len(), 2, "{n:?}");
    assert_eq!(n[0].0, 5);
    assert_eq!(n[1].0, 7);
    assert!(n[0].1.contains("disagree"), "{}", n[0].1);
    assert!(
        n[0].1.contains("10.0.0.1:50000 -> 10.0.0.2:9092"),
        "{}",
        n[0].1
    );
    // The offsets where the bytes differ, not the whole segment's (issue 36, finding 11):
    // "XXXXX" over "56789" (the segment ran to 15), "KL" over "kl" ("j" and "m" agree or
    // overlap nothing).
    assert!(
        n[0].1.contains("at stream offsets 5..10 disagree"),
        "{}",
        n[0].1
    );
    assert!(
        n[1].1.contains("at stream offsets 20..22 disagree"),
        "{}",
        n[1].1
    );
}

#[test]
fn capture_lost_segment_is_a_gap_then_the_rest() {
    let mut p = handshake();
    p.push(c2s(CISN + 1, ACK, b"hello"));
    // " big " (5 bytes) never captured.
    p.push(c2s(CISN + 11, ACK, b"world"));
    p.push(c2s(CISN + 16, FIN | ACK, b""));
    // The server acknowledges everything, the FIN included: the capture lost those bytes.
    p.push(s2c_ack(SISN + 1, CISN + 17, FIN | ACK, b""));
    let (events, _) = read(&eth_pcap(&p));
    assert_eq!(stream(&events, 1, client()), "hello<gap 5>world");
    assert_eq!(closes(&events), vec![(1, Some(7), "FIN")]);
    // The gap is reported where it was noticed (the closing packet), before the held data.
    let gap = events
        .iter()
        .find_map(|e| match e {
            Event::Gap {
                offset,
                len,
                packet,
                ..
            } => Some((*offset, *len, *packet)),
            _ => None,
        })
        .unwrap();
    assert_eq!(gap, (5, 5, 7));
}

#[test]
fn capture_acknowledged_hole_is_a_gap_at_once() {
    let mut p = handshake();
    p.push(c2s(CISN + 1, ACK, b"hello"));
    p.push(c2s(CISN + 11, ACK, b"world"));
    p.push(s2c_ack(SISN + 1, CISN + 6, ACK, b"")); // acknowledges "hello" only
    p.push(s2c_ack(SISN + 1, CISN + 16, ACK, b"")); // and now the lost bytes too
    p.push(s2c_ack(SISN + 1, CISN + 99, ACK, b"")); // beyond anything seen: not trusted
    p.push(c2s(CISN + 16, ACK, b"!"));
    let (events, _) = read(&eth_pcap(&p));
    assert_eq!(stream(&events, 1, client()), "hello<gap 5>world!");
    let gap = events
        .iter()
        .find_map(|e| match e {
            Event::Gap { packet, from, .. } => Some((*packet, *from)),
            _ => None,
        })
        .unwrap();
    assert_eq!(gap, (7, client()));
    assert_eq!(closes(&events), vec![(1, None, "end of capture")]);
}

#[test]
fn capture_lost_segment_at_the_end_of_the_capture() {
    let mut p = handshake();
    p.push(c2s(CISN + 1, ACK, b"hello"));
    p.push(c2s(CISN + 11, ACK, b"world"));
    let (events, _) = read(&eth_pcap(&p));
    assert_eq!(stream(&events, 1, client()), "hello<gap 5>world");
    assert_eq!(closes(&events), vec![(1, None, "end of capture")]);
}

#[test]
fn capture_lost_bytes_before_a_fin() {
    let mut p = handshake();
    p.push(c2s(CISN + 1, ACK, b"hello"));
    p.push(c2s(CISN + 9, FIN | ACK, b"")); // 3 bytes lost before the FIN
    p.push(s2c(SISN + 1, FIN | ACK, b""));
    let (events, _) = read(&eth_pcap(&p));
    assert_eq!(stream(&events, 1, client()), "hello<gap 3>");
    // Not closed at the FINs: nothing acknowledged the hole, a retransmission may still fill
    // it. At the end it is a gap.
    assert_eq!(closes(&events), vec![(1, None, "end of capture")]);
    let mut p = handshake();
    p.push(c2s(CISN + 1, ACK, b"hello"));
    p.push(c2s(CISN + 9, FIN | ACK, b""));
    p.push(s2c(SISN + 1, FIN | ACK, b""));
    p.push(c2s(CISN + 6, ACK, b"abc")); // the retransmission fills it
    let (events, _) = read(&eth_pcap(&p));
    assert_eq!(stream(&events, 1, client()), "helloabc");
    assert_eq!(closes(&events), vec![(1, Some(7), "FIN")]);
}

#[test]
fn capture_mid_connection_without_syn() {
    let p = vec![
        s2c(77_777, ACK, b""), // a pure ACK of an unknown connection opens nothing
        c2s(123_456, ACK, b"first"),
        s2c(77_777, ACK, b"reply"),
        c2s(123_461, ACK, b"second"),
        c2s(123_400, ACK, b"before the start"),
    ];
    let (events, _) = read(&eth_pcap(&p));
    assert_eq!(opens(&events), vec![(1, client(), server(), false, 2)]);
    assert_eq!(stream(&events, 1, client()), "firstsecond");
    assert_eq!(stream(&events, 1, server()), "reply");
    assert!(notes(&events).is_empty());
}

#[test]
fn capture_sequence_numbers_wrap_around() {
    let isn = 0xffff_fff0u32;
    let p = vec![
        c2s(isn, SYN, b""),
        s2c(SISN, SYN | ACK, b""),
        c2s(isn.wrapping_add(1), ACK, b"0123456789"), // up to 2^32 - 5
        c2s(isn.wrapping_add(21), ACK, b"KLMNOPQRST"), // after the wrap, out of order
        c2s(isn.wrapping_add(11), ACK, b"ABCDEFGHIJ"), // across the wrap
        c2s(isn.wrapping_add(31), ACK, b"uvwxyz"),
    ];
    let (events, _) = read(&eth_pcap(&p));
    assert_eq!(
        stream(&events, 1, client()),
        "0123456789ABCDEFGHIJKLMNOPQRSTuvwxyz"
    );
}

#[test]
fn capture_snaplen_truncation_is_data_then_gap() {
    let mut p = handshake();
    p.push(c2s(CISN + 1, ACK, &[b'a'; 100]));
    p.push(c2s(CISN + 101, ACK, b"next"));
    let mut frames: Vec<Vec<u8>> = p
        .iter()
        .map(|ip| w::ethernet(&[], w::ETHERTYPE_IPV4, ip))
        .collect();
    let full = frames[3].len() as u32;
    frames[3].truncate(14 + 20 + 20 + 40); // 40 payload bytes captured of 100
    let packets: Vec<w::Packet> = frames
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let orig = if i == 3 { full } else { f.len() as u32 };
            (1, i as u32, &f[..], orig)
        })
        .collect();
    let (events, _) = read(&w::pcap_file(1, true, false, &packets));
    assert_eq!(
        stream(&events, 1, client()),
        format!("{}<gap 60>next", "a".repeat(40))
    );
    assert!(notes(&events).is_empty());
    // Truncation inside the TCP header is a note; the missing bytes become a gap later.
    frames[3].truncate(14 + 20 + 10);
    let packets: Vec<w::Packet> = frames
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let orig = if i == 3 { full } else { f.len() as u32 };
            (1, i as u32, &f[..], orig)
        })
        .collect();
    let (events, _) = read(&w::pcap_file(1, true, false, &packets));
    let n = notes(&events);
    assert_eq!(n.len(), 1);
    assert!(n[0].1.contains("snap length"), "{n:?}");
    assert_eq!(stream(&events, 1, client()), "<gap 100>next");
}

#[test]
fn capture_keepalives_are_ignored() {
    let mut p = handshake();
    p.push(c2s(CISN + 1, ACK, b"hello"));
    p.push(c2s(CISN + 5, ACK, b"\0")); // keep-alive: one garbage byte below the next
    p.push(c2s(CISN + 5, ACK, b"")); // keep-alive without the byte
    p.push(c2s(CISN + 6, ACK, b"!"));
    let (events, _) = read(&eth_pcap(&p));
    assert_eq!(stream(&events, 1, client()), "hello!");
    assert!(notes(&events).is_empty());
}

#[test]
fn capture_two_connections_interleaved() {
    let other = |seq, flags, payload: &[u8]| {
        w::ipv4_tcp([10, 0, 0, 3], SERVER, 40_000, SPORT, seq, 0, flags, payload)
    };
    let p = vec![
        c2s(CISN, SYN, b""),
        other(9, SYN, b""),
        c2s(CISN + 1, ACK, b"one-"),
        other(10, ACK, b"two-"),
        s2c(SISN, SYN | ACK, b""),
        c2s(CISN + 5, ACK, b"a"),
        other(14, ACK, b"b"),
        other(15, RST, b""),
    ];
    let (events, stats) = read(&eth_pcap(&p));
    assert_eq!(stats.connections, 2);
    assert_eq!(stream(&events, 1, client()), "one-a");
    assert_eq!(stream(&events, 2, ep([10, 0, 0, 3], 40_000)), "two-b");
    assert_eq!(
        closes(&events),
        vec![(2, Some(8), "RST"), (1, None, "end of capture")]
    );
}

#[test]
fn capture_four_tuple_reuse_is_a_new_connection() {
    // After FIN both ways.
    let mut p = handshake();
    p.push(c2s(CISN + 1, ACK, b"first"));
    p.push(c2s(CISN + 6, FIN | ACK, b""));
    p.push(s2c(SISN + 1, FIN | ACK, b""));
    p.push(c2s(CISN + 7, ACK, b"")); // last ACK: nothing
    p.push(c2s(90_000, SYN, b""));
    p.push(s2c(70_000, SYN | ACK, b""));
    p.push(c2s(90_001, ACK, b"second"));
    // After RST.
    p.push(s2c(70_001, RST, b""));
    p.push(c2s(90_007, ACK, b"late")); // data after the RST: noted, opens nothing
    p.push(c2s(12, SYN, b""));
    p.push(c2s(13, ACK, b"third"));
    let (events, _) = read(&eth_pcap(&p));
    assert_eq!(
        opens(&events)
            .iter()
            .map(|o| (o.0, o.4))
            .collect::<Vec<_>>(),
        vec![(1, 1), (2, 8), (3, 13)]
    );
    assert_eq!(stream(&events, 1, client()), "first");
    assert_eq!(stream(&events, 2, client()), "second");
    assert_eq!(stream(&events, 3, client()), "third");
    assert_eq!(
        closes(&events),
        vec![
            (1, Some(6), "FIN"),
            (2, Some(11), "RST"),
            (3, None, "end of capture")
        ]
    );
    assert_eq!(notes(&events).len(), 1);
    assert_eq!(notes(&events)[0].0, 12);
}

#[test]
fn capture_new_syn_on_an_open_connection_replaces_it() {
    let mut p = handshake();
    p.push(c2s(CISN + 1, ACK, b"old"));
    p.push(c2s(4242, SYN, b"")); // the old connection's end was never captured
    p.push(c2s(4243, ACK, b"new"));
    let (events, _) = read(&eth_pcap(&p));
    // The old one is kept for its late segments (issue 44, item 4) and closes with the
    // new one, first, saying why.
    assert_eq!(
        closes(&events),
        vec![
            (1, Some(6), "the 4-tuple was reused by a new SYN"),
            (2, None, "end of capture")
        ]
    );
    assert_eq!(stream(&events, 2, client()), "new");
}

#[test]
fn capture_out_of_order_limit_declares_a_gap() {
    // More than the limit held behind a hole that never fills.
    let chunk = vec![b'x'; 60_000];
    let mut p = handshake();
    let count = reasm::HELD_LIMIT / chunk.len() + 2;
    for i in 0..count {
        let seq = CISN + 1 + 10 + (i * chunk.len()) as u32;
        p.push(c2s(seq, ACK, &chunk));
    }
    let (events, _) = read(&eth_pcap(&p));
    let first_gap = events.iter().position(|e| matches!(e, Event::Gap { .. }));
    let first_gap = first_gap.expect("a gap");
    match &events[first_gap] {
        Event::Gap {
            offset,
            len,
            packet,
            ..
        } => {
            assert_eq!((*offset, *len), (0, 10));
            // Noticed when the limit was passed, not at the end.
            assert!(*packet < p.len() as u64, "{packet}");
        }
        _ => unreachable!(),
    }
    let total: usize = events
        .iter()
        .map(|e| match e {
            Event::Data { bytes, .. } => bytes.len(),
            _ => 0,
        })
        .sum();
    assert_eq!(total, count * chunk.len());
}

// ---------------------------------------------------------------------------------------
// Link types and network layers

/// The same small conversation in every framing: each entry is a link type and a function
/// from an IP packet to a frame.
#[test]
fn capture_link_types() {
    type Frame = fn(&[u8]) -> Vec<u8>;
    let cases: Vec<(u32, Frame)> = vec![
        (w::LINKTYPE_ETHERNET, |ip| {
            w::ethernet(&[], w::ETHERTYPE_IPV4, ip)
        }),
        (w::LINKTYPE_ETHERNET, |ip| {
            w::ethernet(&[7], w::ETHERTYPE_IPV4, ip)
        }),
        (w::LINKTYPE_ETHERNET, |ip| {
            // 802.1ad outer tag, 802.1Q inner tag.
            let mut f = w::ethernet(&[100, 7], w::ETHERTYPE_IPV4, ip);
            f[12..14].copy_from_slice(&0x88a8u16.to_be_bytes());
            f
        }),
        (w::LINKTYPE_LINUX_SLL, |ip| w::sll(w::ETHERTYPE_IPV4, ip)),
        (w::LINKTYPE_LINUX_SLL2, |ip| w::sll2(w::ETHERTYPE_IPV4, ip)),
        (w::LINKTYPE_NULL, |ip| w::null_loopback(2, false, ip)),
        (w::LINKTYPE_NULL, |ip| w::null_loopback(2, true, ip)),
        (w::LINKTYPE_LOOP, |ip| w::loop_frame(2, ip)),
        (w::LINKTYPE_RAW, |ip| ip.to_vec()),
        (12, |ip| ip.to_vec()),
        (14, |ip| ip.to_vec()),
        (w::LINKTYPE_IPV4, |ip| ip.to_vec()),
    ];
    for (i, (linktype, frame)) in cases.iter().enumerate() {
        let mut p = handshake();
        p.push(c2s(CISN + 1, ACK, b"ping"));
        p.push(s2c(SISN + 1, ACK, b"pong"));
        let frames: Vec<Vec<u8>> = p.iter().map(|ip| frame(ip)).collect();
        let packets: Vec<w::Packet> = frames
            .iter()
            .map(|f| (5, 0, &f[..], f.len() as u32))
            .collect();
        let (events, stats) = read(&w::pcap_file(*linktype, false, i % 2 == 1, &packets));
        assert_eq!(stream(&events, 1, client()), "ping", "case {i}");
        assert_eq!(stream(&events, 1, server()), "pong", "case {i}");
        assert!(notes(&events).is_empty(), "case {i}: {:?}", notes(&events));
        assert_eq!(stats.tcp, 5, "case {i}");
    }
}

const V6_CLIENT: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const V6_SERVER: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

#[test]
fn capture_ipv6_with_extension_headers() {
    type Frame = fn(&[u8]) -> Vec<u8>;
    let cases: Vec<(u32, Frame)> = vec![
        (w::LINKTYPE_ETHERNET, |ip| {
            w::ethernet(&[], w::ETHERTYPE_IPV6, ip)
        }),
        (w::LINKTYPE_LINUX_SLL, |ip| w::sll(w::ETHERTYPE_IPV6, ip)),
        (w::LINKTYPE_LINUX_SLL2, |ip| w::sll2(w::ETHERTYPE_IPV6, ip)),
        (w::LINKTYPE_NULL, |ip| w::null_loopback(24, false, ip)),
        (w::LINKTYPE_NULL, |ip| w::null_loopback(28, true, ip)),
        (w::LINKTYPE_NULL, |ip| w::null_loopback(30, false, ip)),
        (w::LINKTYPE_LOOP, |ip| w::loop_frame(24, ip)),
        (w::LINKTYPE_RAW, |ip| ip.to_vec()),
        (w::LINKTYPE_IPV6, |ip| ip.to_vec()),
    ];
    let c = |seq, flags, payload: &[u8], ext: &[u8]| {
        w::ipv6_tcp(
            V6_CLIENT, V6_SERVER, ext, CPORT, SPORT, seq, 0, flags, payload,
        )
    };
    let s = |seq, flags, payload: &[u8]| {
        w::ipv6_tcp(
            V6_SERVER,
            V6_CLIENT,
            &[],
            SPORT,
            CPORT,
            seq,
            0,
            flags,
            payload,
        )
    };
    let v6 = |ip: [u8; 16], port| Endpoint {
        ip: IpAddr::from(ip),
        port,
    };
    for (i, (linktype, frame)) in cases.iter().enumerate() {
        let p = [
            c(1, SYN, b"", &[]),
            s(9, SYN | ACK, b""),
            c(2, ACK, b"hop", &[0]),
            c(5, ACK, b"-dst", &[0, 60]),
            c(9, ACK, b"-rt", &[0, 43, 60]),
            c(12, ACK, b"-atomic", &[44]), // offset 0, no more: a whole packet
            s(10, ACK, b"ok"),
        ];
        let frames: Vec<Vec<u8>> = p.iter().map(|ip| frame(ip)).collect();
        let packets: Vec<w::Packet> = frames
            .iter()
            .map(|f| (5, 0, &f[..], f.len() as u32))
            .collect();
        let (events, _) = read(&w::pcap_file(*linktype, true, i % 2 == 0, &packets));
        let cl = v6(V6_CLIENT, CPORT);
        assert_eq!(stream(&events, 1, cl), "hop-dst-rt-atomic", "case {i}");
        assert_eq!(stream(&events, 1, v6(V6_SERVER, SPORT)), "ok", "case {i}");
        assert!(notes(&events).is_empty(), "case {i}: {:?}", notes(&events));
        assert_eq!(cl.to_string(), "[2001:db8::1]:50000");
    }
}

#[test]
fn capture_fragments_are_noted() {
    let tcp = w::tcp(CPORT, SPORT, CISN + 1, 0, ACK, &[], b"fragmented");
    let p = vec![
        c2s(CISN, SYN, b""),
        w::ipv4(CLIENT, SERVER, 6, 77, 0x2000, &tcp), // first fragment, more follow
        w::ipv4(CLIENT, SERVER, 6, 77, 3, b"tail0123"), // a later fragment
        w::ipv4(CLIENT, SERVER, 17, 78, 0x2000, b"udp fragment"), // not TCP: silent
    ];
    let (events, stats) = read(&eth_pcap(&p));
    let n = notes(&events);
    assert_eq!(n.len(), 2, "{n:?}");
    assert_eq!((n[0].0, n[1].0), (2, 3));
    assert!(n[0].1.contains("IPv4 fragment"), "{n:?}");
    assert!(n[1].1.contains("offset 24"), "{n:?}");
    assert_eq!(stats.not_tcp, 1);

    let frag = w::ipv6(
        V6_CLIENT,
        V6_SERVER,
        &[0, 44],
        (0, true),
        6,
        &w::tcp(CPORT, SPORT, 1, 0, SYN, &[], b""),
    );
    let later = w::ipv6(V6_CLIENT, V6_SERVER, &[44], (185, false), 6, b"rest of it");
    let frames: Vec<Vec<u8>> = [frag, later]
        .iter()
        .map(|ip| w::ethernet(&[], w::ETHERTYPE_IPV6, ip))
        .collect();
    let packets: Vec<w::Packet> = frames
        .iter()
        .map(|f| (1, 0, &f[..], f.len() as u32))
        .collect();
    let (events, stats) = read(&w::pcap_file(1, false, false, &packets));
    let n = notes(&events);
    assert_eq!(n.len(), 2, "{n:?}");
    assert!(n[0].1.contains("IPv6 fragment"), "{n:?}");
    assert!(n[1].1.contains("offset 1480"), "{n:?}");
    assert_eq!(stats.connections, 0);
}

#[test]
fn capture_non_tcp_is_counted_not_noted() {
    let arp = w::ethernet(&[], w::ETHERTYPE_ARP, &[0; 28]);
    let udp = w::ethernet(
        &[],
        w::ETHERTYPE_IPV4,
        &w::ipv4(CLIENT, SERVER, 17, 1, 0, &w::udp(53, 53, b"dns")),
    );
    let icmp = w::ethernet(
        &[],
        w::ETHERTYPE_IPV4,
        &w::ipv4(CLIENT, SERVER, 1, 1, 0, &[8, 0, 0, 0, 0, 0, 0, 0]),
    );
    let udp6 = w::ethernet(
        &[],
        w::ETHERTYPE_IPV6,
        &w::ipv6(
            V6_CLIENT,
            V6_SERVER,
            &[0],
            (0, false),
            17,
            &w::udp(1, 2, b"x"),
        ),
    );
    let packets: Vec<w::Packet> = [&arp, &udp, &icmp, &udp6]
        .iter()
        .map(|f| (1, 0, &f[..], f.len() as u32))
        .collect();
    let (events, stats) = read(&w::pcap_file(1, false, false, &packets));
    assert!(events.is_empty(), "{events:?}");
    assert_eq!(stats.packets, 4);
    assert_eq!(stats.not_tcp, 4);
    assert_eq!(stats.notes, 0);
}

#[test]
fn capture_bad_headers_are_noted() {
    let good = c2s(CISN, SYN, b"");
    let mut bad_ihl = good.clone();
    bad_ihl[0] = 0x44;
    let mut bad_total = good.clone();
    bad_total[2..4].copy_from_slice(&10u16.to_be_bytes());
    let mut long_total = good.clone();
    long_total[2..4].copy_from_slice(&500u16.to_be_bytes());
    let mut bad_doff = good.clone();
    bad_doff[20 + 12] = 0x40;
    let mut big_doff = good.clone();
    big_doff[20 + 12] = 0xf0;
    let short = good[..30].to_vec();
    let raw: Vec<Vec<u8>> = vec![
        bad_ihl,
        bad_total,
        long_total,
        bad_doff,
        big_doff,
        short,
        vec![],
    ];
    let packets: Vec<w::Packet> = raw.iter().map(|f| (1, 0, &f[..], f.len() as u32)).collect();
    let (events, stats) = read(&w::pcap_file(w::LINKTYPE_RAW, false, false, &packets));
    let n = notes(&events);
    assert_eq!(n.len(), raw.len(), "{n:?}");
    for (i, (packet, _)) in n.iter().enumerate() {
        assert_eq!(*packet, i as u64 + 1);
    }
    assert_eq!(stats.connections, 0);
}

#[test]
fn capture_unsupported_link_type_is_noted_once_per_interface() {
    let frame = [0u8; 40];
    let packets: Vec<w::Packet> = (0..3).map(|_| (1, 0, &frame[..], 40)).collect();
    let (events, stats) = read(&w::pcap_file(105, false, false, &packets)); // 802.11
    assert_eq!(notes(&events).len(), 1);
    assert_eq!(stats.unsupported_link, 3);
    assert_eq!(stats.packets, 3);

    let ip = c2s(CISN + 1, ACK, b"data");
    let ng = w::pcapng_file(
        false,
        &[(105, None), (147, None), (101, None)],
        &[
            (0, 0, &frame, 40),
            (1, 0, &frame, 40),
            (0, 0, &frame, 40),
            (2, 0, &ip, 44),
        ],
    );
    let (events, stats) = read(&ng);
    let n = notes(&events);
    assert_eq!(n.iter().map(|n| n.0).collect::<Vec<_>>(), vec![1, 2]);
    assert_eq!(stats.unsupported_link, 3);
    assert_eq!(stream(&events, 1, client()), "data");
}

// ---------------------------------------------------------------------------------------
// File formats

fn first_time(events: &[Event]) -> Timestamp {
    events
        .iter()
        .find_map(|e| match e {
            Event::Open { time, .. } => Some(*time),
            _ => None,
        })
        .unwrap()
}

#[test]
fn capture_legacy_byte_orders_and_resolutions() {
    let frame = w::ethernet(&[], w::ETHERTYPE_IPV4, &c2s(CISN, SYN, b""));
    for (nanos, be) in [(false, false), (false, true), (true, false), (true, true)] {
        let bytes = w::pcap_file(
            1,
            nanos,
            be,
            &[(1_796_078_117, 123_456_789, &frame, frame.len() as u32)],
        );
        let (events, _) = read(&bytes);
        let expect = if nanos {
            "2026-11-30T22:35:17.123456789Z"
        } else {
            "2026-11-30T22:35:17.123456000Z"
        };
        assert_eq!(
            first_time(&events).to_string(),
            expect,
            "nanos {nanos} be {be}"
        );
    }
    // A fraction out of range carries into the seconds.
    let bytes = [
        w::pcap_file(1, false, false, &[]),
        w::pcap_record(10, 2_500_000, &frame, frame.len() as u32, false),
    ]
    .concat();
    let (events, _) = read(&bytes);
    assert_eq!(
        first_time(&events),
        Timestamp {
            secs: 12,
            nanos: 500_000_000
        }
    );
}

#[test]
fn capture_pcapng_resolutions_and_blocks() {
    let syn = c2s(CISN, SYN, b"");
    let data = c2s(CISN + 1, ACK, b"simple");
    let eth = w::ethernet(&[], w::ETHERTYPE_IPV4, &c2s(CISN + 7, ACK, b"-more"));
    for be in [false, true] {
        // Interface 0: raw IP in nanoseconds; interface 1: Ethernet in 2^-20 s; interface 2:
        // default microseconds with an offset of 1000 s.
        let mut f = w::ng_shb(be);
        f.extend(w::ng_idb(101, 0, Some(9), None, be));
        f.extend(w::ng_idb(1, 0, Some(0x94), None, be));
        f.extend(w::ng_idb(101, 0, None, Some(1000), be));
        f.extend(w::ng_epb(
            0,
            1_796_078_117_123_456_789,
            &syn,
            syn.len() as u32,
            be,
        ));
        f.extend(w::ng_spb(&data, data.len() as u32, be));
        let ticks = (1_796_078_117u64 << 20) | (1 << 19); // .5 s
        f.extend(w::ng_epb(1, ticks, &eth, eth.len() as u32, be));
        let more = c2s(CISN + 12, ACK, b"!");
        f.extend(w::ng_epb(2, 5_000_001, &more, more.len() as u32, be));
        let (events, stats) = read(&f);
        assert_eq!(stream(&events, 1, client()), "simple-more!");
        // The last packet's time (1000 s and 5 µs after 1970) steps back from the one
        // before (2026): named, and nothing else.
        let notes = notes(&events);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].0 == 4 && notes[0].1.contains("the capture's clock steps back"),
            "{notes:?}"
        );
        assert_eq!(stats.packets, 4);
        let times: Vec<String> = events
            .iter()
            .filter_map(|e| match e {
                Event::Open { time, .. } | Event::Data { time, .. } => Some(time.to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(
            times,
            vec![
                "2026-11-30T22:35:17.123456789Z",
                // The simple packet block has no time: the previous packet's.
                "2026-11-30T22:35:17.123456789Z",
                "2026-11-30T22:35:17.500000000Z",
                "1970-01-01T00:16:45.000001000Z",
            ]
        );
    }
    // 2^-20 exactly: one tick.
    assert_eq!(
        Resolution::from_tsresol(0x94).unwrap().time(1, 0),
        Timestamp {
            secs: 0,
            nanos: 953
        }
    );
    assert!(Resolution::from_tsresol(20).is_none());
    assert!(Resolution::from_tsresol(0x80 | 64).is_none());
}

#[test]
fn capture_pcapng_sections_reset_interfaces() {
    let syn = c2s(CISN, SYN, b"");
    let eth = w::ethernet(&[], w::ETHERTYPE_IPV4, &c2s(CISN + 1, ACK, b"one"));
    let raw = c2s(CISN + 4, ACK, b"two");
    let mut f = w::ng_shb(false);
    f.extend(w::ng_idb(1, 0, None, None, false));
    f.extend(w::ng_idb(101, 0, None, None, false));
    let syn_eth = w::ethernet(&[], w::ETHERTYPE_IPV4, &syn);
    f.extend(w::ng_epb(0, 1, &syn_eth, syn_eth.len() as u32, false));
    f.extend(w::ng_epb(0, 2, &eth, eth.len() as u32, false));
    // Second section, big-endian: interface 0 is now raw IP, interface 1 is gone.
    f.extend(w::ng_shb(true));
    f.extend(w::ng_idb(101, 0, None, None, true));
    f.extend(w::ng_epb(0, 3, &raw, raw.len() as u32, true));
    f.extend(w::ng_epb(1, 4, &raw, raw.len() as u32, true));
    let (events, stats) = read(&f);
    assert_eq!(stream(&events, 1, client()), "onetwo");
    let n = notes(&events);
    assert_eq!(n.len(), 1, "{n:?}");
    assert_eq!(n[0].0, 4);
    assert!(n[0].1.contains("interface 1"), "{n:?}");
    assert_eq!(stats.packets, 4);
}

#[test]
fn capture_pcapng_snaplen_and_padding() {
    // An EPB whose captured length is less than the original: data then gap.
    let ip = c2s(CISN + 1, ACK, &[b'z'; 50]);
    let syn = c2s(CISN, SYN, b"");
    let mut f = w::ng_shb(false);
    f.extend(w::ng_idb(101, 0, None, None, false));
    f.extend(w::ng_epb(0, 0, &syn, syn.len() as u32, false));
    f.extend(w::ng_epb(0, 0, &ip[..61], ip.len() as u32, false)); // 21 payload bytes
    let (events, _) = read(&f);
    assert_eq!(
        stream(&events, 1, client()),
        format!("{}<gap 29>", "z".repeat(21))
    );
}

#[test]
fn capture_pcapng_corrupt_block_is_skipped() {
    let syn = c2s(CISN, SYN, b"");
    let one = c2s(CISN + 1, ACK, b"one");
    let two = c2s(CISN + 4, ACK, b"two");
    let mut f = w::ng_shb(false);
    f.extend(w::ng_idb(101, 0, None, None, false));
    f.extend(w::ng_epb(0, 0, &syn, syn.len() as u32, false));
    f.extend(w::ng_epb(0, 0, &one, one.len() as u32, false));
    // An EPB whose captured length overruns the block.
    let mut bad = w::ng_epb(0, 0, &two, two.len() as u32, false);
    bad[20..24].copy_from_slice(&1000u32.to_le_bytes());
    f.extend(bad);
    // An EPB whose trailing length disagrees.
    let mut bad = w::ng_epb(0, 0, &two, two.len() as u32, false);
    let n = bad.len();
    bad[n - 4..].copy_from_slice(&8u32.to_le_bytes());
    f.extend(bad);
    // A block too short for an EPB.
    f.extend(w::ng_block(6, &[0; 8], false));
    f.extend(w::ng_epb(0, 0, &two, two.len() as u32, false));
    let (events, stats) = read(&f);
    assert_eq!(stream(&events, 1, client()), "onetwo");
    let n = notes(&events);
    assert_eq!(
        n.iter().map(|n| n.0).collect::<Vec<_>>(),
        vec![3, 4, 5],
        "{n:?}"
    );
    assert_eq!(stats.packets, 6);
}

#[test]
fn capture_pcapng_block_shorter_than_its_header_stops_with_a_note() {
    // Found by the capture fuzz target: a Process Information Block (0x80000001) claiming
    // 4 bytes made pcap-parser 0.17 subtract 12 from 4. In each byte order, and for a
    // plain block type as well.
    for big_endian in [false, true] {
        for kind in [0x8000_0001u32, 6] {
            let syn = c2s(CISN, SYN, b"");
            let mut f = w::ng_shb(big_endian);
            f.extend(w::ng_idb(101, 0, None, None, big_endian));
            f.extend(w::ng_epb(0, 0, &syn, syn.len() as u32, big_endian));
            let (kind, four) = if big_endian {
                (kind.to_be_bytes(), 4u32.to_be_bytes())
            } else {
                (kind.to_le_bytes(), 4u32.to_le_bytes())
            };
            f.extend(kind);
            f.extend(four);
            f.extend([0; 16]);
            let (events, stats) = read(&f);
            let n = notes(&events);
            assert_eq!(n.len(), 1, "{n:?}");
            assert_eq!(n[0].0, 2);
            assert!(
                n[0].1
                    .contains("impossible length (4 bytes, less than the 12"),
                "{n:?}"
            );
            assert_eq!(stats.packets, 1);
        }
    }
}

#[test]
fn capture_large_blocks_grow_the_buffer() {
    let big = vec![b'q'; 200_000];
    // Raw IP with a jumbo-sized payload (IPv4 total length 0: segmentation offload).
    let mut ip = c2s(CISN + 1, ACK, b"");
    ip[2..4].copy_from_slice(&0u16.to_be_bytes());
    ip.extend(&big);
    let syn = c2s(CISN, SYN, b"");
    let packets: Vec<w::Packet> =
        vec![(1, 0, &syn, syn.len() as u32), (1, 0, &ip, ip.len() as u32)];
    let (events, _) = read(&w::pcap_file(101, false, false, &packets));
    assert_eq!(stream(&events, 1, client()).len(), big.len());
    let f = w::pcapng_file(
        true,
        &[(101, None)],
        &[(0, 0, &syn, syn.len() as u32), (0, 0, &ip, ip.len() as u32)],
    );
    let (events, _) = read(&f);
    assert_eq!(stream(&events, 1, client()).len(), big.len());
    // A record larger than the limit ends the reading with a note.
    let header = w::pcap_file(101, false, false, &[]);
    let mut f = header.clone();
    f.extend(w::pcap_record(1, 0, &syn, syn.len() as u32, false));
    f.extend(1u32.to_le_bytes());
    f.extend(0u32.to_le_bytes());
    f.extend(0x7000_0000u32.to_le_bytes());
    f.extend(0x7000_0000u32.to_le_bytes());
    f.extend([0u8; 100]);
    let (events, stats) = read(&f);
    let n = notes(&events);
    assert_eq!(n.len(), 1, "{n:?}");
    assert!(n[0].1.contains("1879048192"), "{n:?}");
    assert_eq!(stats.packets, 1);
    assert_eq!(closes(&events), vec![(1, None, "end of capture")]);
}

#[test]
fn capture_file_cut_in_the_middle_of_a_packet() {
    let mut p = handshake();
    p.push(c2s(CISN + 1, ACK, b"hello"));
    p.push(c2s(CISN + 6, ACK, b"world"));
    let full = eth_pcap(&p);
    for cut in 1..60 {
        let (events, stats) = read(&full[..full.len() - cut]);
        let n = notes(&events);
        assert_eq!(n.len(), 1, "cut {cut}: {n:?}");
        assert_eq!(n[0].0, 5);
        assert!(n[0].1.contains("ends in the middle"), "{n:?}");
        assert_eq!(stream(&events, 1, client()), "hello");
        assert_eq!(stats.packets, 4);
    }
    let mut f = w::ng_shb(false);
    f.extend(w::ng_idb(101, 0, None, None, false));
    let ip = c2s(CISN, SYN, b"");
    f.extend(w::ng_epb(0, 0, &ip, ip.len() as u32, false));
    for cut in 1..40 {
        let (events, _) = read(&f[..f.len() - cut]);
        assert_eq!(notes(&events).len(), 1, "cut {cut}");
    }
}

#[test]
fn capture_garbage_after_the_header() {
    let header = w::pcap_file(1, false, false, &[]);
    let mut f = header.clone();
    f.extend(b"this is not a packet record at all, just text".repeat(10));
    let (events, _) = read(&f);
    assert!(!notes(&events).is_empty());
    let mut f = w::ng_shb(false);
    f.extend(b"this is not a pcapng block either".repeat(10));
    let (events, _) = read(&f);
    assert!(!notes(&events).is_empty());
}

/// Hands out one byte per read, like a slow pipe.
struct Trickle<'a>(&'a [u8]);

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match (self.0.split_first(), buf.first_mut()) {
            (Some((&b, rest)), Some(slot)) => {
                *slot = b;
                self.0 = rest;
                Ok(1)
            }
            _ => Ok(0),
        }
    }
}

#[test]
fn capture_reads_a_byte_at_a_time() {
    let mut p = handshake();
    p.push(c2s(CISN + 6, ACK, b"world"));
    p.push(c2s(CISN + 1, ACK, b"hello"));
    p.push(c2s(CISN + 11, FIN, b""));
    p.push(s2c(SISN + 1, FIN, b""));
    let f = eth_pcap(&p);
    assert_eq!(read_all(Trickle(&f)).0, read(&f).0);
    let ng = w::pcapng_file(
        false,
        &[(101, Some(9))],
        &p.iter()
            .map(|ip| (0, 7, &ip[..], ip.len() as u32))
            .collect::<Vec<_>>(),
    );
    let (events, _) = read_all(Trickle(&ng));
    assert_eq!(stream(&events, 1, client()), "helloworld");
    assert_eq!(events, read(&ng).0);
}

struct Failing;

impl Read for Failing {
    fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
        Err(std::io::Error::other("disk on fire"))
    }
}

#[test]
fn capture_io_errors_are_errors() {
    let header = w::pcap_file(1, false, false, &[]);
    let mut c = Capture::new(header.as_slice().chain(Failing)).unwrap();
    let e = c.next_event().unwrap_err();
    assert_eq!(e.to_string(), "cannot read the capture: disk on fire");
    assert_eq!(
        Capture::new(Failing).unwrap_err().to_string(),
        "cannot read the capture: disk on fire"
    );
}

// ---------------------------------------------------------------------------------------
// Robustness

/// xorshift64*: enough randomness for robustness tests, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Reads a capture to the end, whatever it holds, with a bound on the work.
fn read_anything(bytes: &[u8]) {
    let Ok(mut capture) = Capture::new(bytes) else {
        return;
    };
    let mut events = Vec::new();
    loop {
        match capture.next_event() {
            Ok(Some(e)) => events.push(e),
            Ok(None) => break,
            Err(e) => panic!("an I/O error from a slice: {e}"),
        }
        assert!(events.len() < 100_000, "runaway");
    }
    check_invariants(&events);
}

#[test]
fn capture_random_bytes_after_a_valid_header_do_not_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let headers = [
        w::pcap_file(1, false, false, &[]),
        w::pcap_file(101, true, true, &[]),
        w::pcap_file(113, false, true, &[]),
        w::pcap_file(0, true, false, &[]),
        [w::ng_shb(false), w::ng_idb(1, 0, None, None, false)].concat(),
        [w::ng_shb(true), w::ng_idb(101, 0, Some(0x94), None, true)].concat(),
    ];
    for _ in 0..3000 {
        let mut f = headers[rng.below(headers.len())].clone();
        let len = rng.below(600);
        f.extend((0..len).map(|_| rng.next() as u8));
        read_anything(&f);
    }
}

#[test]
fn capture_mutated_captures_do_not_panic() {
    let mut rng = Rng(42);
    let mut p = handshake();
    p.push(c2s(CISN + 6, ACK, b"world"));
    p.push(c2s(CISN + 1, ACK, b"hello"));
    p.push(s2c(SISN + 1, ACK, b"reply"));
    p.push(c2s(CISN + 11, FIN, b""));
    p.push(s2c(SISN + 6, FIN | ACK, b""));
    p.push(c2s(CISN, SYN, b""));
    let v6 = w::ipv6_tcp(V6_CLIENT, V6_SERVER, &[0, 60], 1, 2, 3, 4, ACK, b"six");
    let seeds = [
        eth_pcap(&p),
        w::pcapng_file(
            false,
            &[(101, Some(9)), (1, None)],
            &p.iter()
                .enumerate()
                .map(|(i, ip)| (0, i as u64, &ip[..], ip.len() as u32))
                .collect::<Vec<_>>(),
        ),
        w::pcap_file(229, false, true, &[(1, 0, &v6, v6.len() as u32)]),
    ];
    for _ in 0..3000 {
        let mut f = seeds[rng.below(seeds.len())].clone();
        for _ in 0..1 + rng.below(8) {
            let at = rng.below(f.len());
            match rng.below(4) {
                0 => f[at] = rng.next() as u8,
                1 => f[at] ^= 1 << rng.below(8),
                2 => f.truncate(at.max(24)),
                _ => {
                    let b = rng.next() as u8;
                    f.insert(at, b);
                }
            }
        }
        read_anything(&f);
    }
}

/// Random streams cut into random segments, delivered shuffled, repeated and overlapping (with
/// the same bytes), from an initial sequence number anywhere (wrapping around 2^32 often):
/// the stream comes out whole. With segments left out, what comes out is still the stream's
/// bytes at their offsets, with gaps between.
#[test]
fn capture_random_reordering_reassembles_the_stream() {
    let mut rng = Rng(7);
    for round in 0..300 {
        let len = 1 + rng.below(3000);
        let original: Vec<u8> = (0..len).map(|_| b'a' + rng.below(26) as u8).collect();
        let isn = if rng.below(2) == 0 {
            u32::MAX - rng.below(2000) as u32
        } else {
            rng.next() as u32
        };
        // A cover of the stream, then repeats and overlaps.
        let mut pieces = Vec::new();
        let mut at = 0;
        while at < len {
            let n = 1 + rng.below(300).min(len - at - 1);
            pieces.push((at, at + n));
            at += n;
        }
        let lose = round % 3 == 2;
        if lose && pieces.len() > 2 {
            let i = 1 + rng.below(pieces.len() - 2);
            pieces.remove(i);
        }
        let cover = pieces.clone();
        for _ in 0..rng.below(10) {
            let (s, e) = cover[rng.below(cover.len())];
            pieces.push((s, e)); // a retransmission
            let s2 = s + rng.below(e - s);
            let e2 = (e + rng.below(200)).min(len);
            if !lose {
                pieces.push((s2, e2)); // an overlap
            }
        }
        // Shuffle locally (within a window of 6).
        for i in 0..pieces.len() {
            let j = (i + rng.below(6)).min(pieces.len() - 1);
            pieces.swap(i, j);
        }
        let mut p = vec![c2s(isn, SYN, b""), s2c(SISN, SYN | ACK, b"")];
        for (s, e) in pieces {
            let seq = isn.wrapping_add(1).wrapping_add(s as u32);
            p.push(c2s(seq, ACK, &original[s..e]));
        }
        let (events, _) = read(&eth_pcap(&p));
        assert!(
            notes(&events).is_empty(),
            "round {round}: {:?}",
            notes(&events)
        );
        let mut end = 0u64;
        for e in &events {
            match e {
                Event::Data { offset, bytes, .. } => {
                    let o = *offset as usize;
                    assert_eq!(&original[o..o + bytes.len()], &bytes[..], "round {round}");
                    end = offset + bytes.len() as u64;
                }
                Event::Gap { offset, len, .. } => {
                    assert!(lose, "round {round}: a gap");
                    end = offset + len;
                }
                _ => {}
            }
        }
        if lose {
            assert!(end <= len as u64);
        } else {
            assert_eq!(
                stream(&events, 1, client()).as_bytes(),
                &original[..],
                "round {round}"
            );
        }
    }
}

/// A block or record header that claims up to 16 MiB makes the buffer grow only as the bytes
/// arrive: a short file that claims a huge block never gets a buffer of that size.
#[test]
fn capture_a_claimed_length_alone_does_not_grow_the_buffer() {
    let syn = c2s(CISN, SYN, b"");
    // pcapng: an Enhanced Packet Block whose length field says 15 MiB, then 100 bytes.
    let mut ng = w::pcapng_file(false, &[(101, None)], &[(0, 0, &syn, syn.len() as u32)]);
    ng.extend(6u32.to_le_bytes());
    ng.extend((15u32 << 20).to_le_bytes());
    ng.extend([0u8; 100]);
    // pcap: a record whose captured length says 15 MiB, then 100 bytes.
    let mut legacy = w::pcap_file(101, false, false, &[(1, 0, &syn, syn.len() as u32)]);
    legacy.extend([1u8, 0, 0, 0, 0, 0, 0, 0]);
    legacy.extend((15u32 << 20).to_le_bytes());
    legacy.extend((15u32 << 20).to_le_bytes());
    legacy.extend([0u8; 100]);
    for file in [ng, legacy] {
        let mut capture = Capture::new(&file[..]).expect("a capture");
        let mut events = Vec::new();
        while let Some(event) = capture.next_event().expect("no I/O error") {
            events.push(event);
        }
        assert_eq!(
            capture.capacity, BUFFER,
            "the buffer grew for bytes that never came"
        );
        let n = notes(&events);
        assert_eq!(n.len(), 1, "{n:?}");
        assert!(n[0].1.contains("ends in the middle"), "{n:?}");
    }
    // The same block, all there, is read: the buffer doubles up to its size.
    let big = vec![b'q'; 3 << 20];
    let mut ip = c2s(CISN + 1, ACK, b"");
    ip[2..4].copy_from_slice(&0u16.to_be_bytes());
    ip.extend(&big);
    let f = w::pcapng_file(
        false,
        &[(101, None)],
        &[(0, 0, &syn, syn.len() as u32), (0, 0, &ip, ip.len() as u32)],
    );
    let mut capture = Capture::new(&f[..]).expect("a capture");
    while capture.next_event().expect("no I/O error").is_some() {}
    assert!(capture.capacity >= ip.len(), "{}", capture.capacity);
    assert!(capture.capacity <= 2 * f.len(), "{}", capture.capacity);
}

// ---------------------------------------------------------------------------------------
// Limits: connections followed at once, idle connections (issue #26)

/// `n` connections from distinct ports that never close: a SYN and a byte of data each,
/// one second apart.
fn never_closed(n: u16) -> Vec<u8> {
    let mut packets = Vec::new();
    for i in 0..n {
        let port = 10_000 + i;
        packets.push(w::ipv4_tcp(CLIENT, SERVER, port, SPORT, CISN, 0, SYN, b""));
        packets.push(w::ipv4_tcp(
            CLIENT,
            SERVER,
            port,
            SPORT,
            CISN + 1,
            0,
            ACK,
            b"x",
        ));
    }
    eth_pcap(&packets)
}

/// Reads every event with `limits`.
fn read_limited(bytes: &[u8], limits: Limits) -> (Vec<Event>, CaptureStats) {
    let mut capture = Capture::new(bytes).expect("a capture");
    capture.set_limits(limits);
    let mut events = Vec::new();
    let mut peak = 0;
    while let Some(event) = capture.next_event().expect("no I/O error") {
        peak = peak.max(capture.stats().open_connections);
        events.push(event);
    }
    check_invariants(&events);
    let stats = capture.stats();
    assert_eq!(
        stats.peak_open_connections, peak,
        "the peak is the most seen"
    );
    (events, stats)
}

#[test]
fn capture_never_follows_more_connections_than_the_limit() {
    // 1,000 packets a second apart: longer than the default idle timeout, set aside here.
    let capture = never_closed(500);
    let day = Duration::from_secs(86_400);
    let limits = Limits {
        idle_timeout: day,
        ..Limits::default()
    };
    let (events, stats) = read_limited(&capture, limits);
    assert_eq!((stats.peak_open_connections, stats.evicted), (500, 0));
    assert_eq!(closes(&events).len(), 500);

    let limits = Limits {
        max_connections: 100,
        idle_timeout: day,
        ..Limits::default()
    };
    let (events, stats) = read_limited(&capture, limits);
    assert_eq!(stats.connections, 500);
    assert_eq!((stats.peak_open_connections, stats.evicted), (100, 400));
    assert_eq!(stats.open_connections, 0, "all closed at the end");
    // The least recently active goes first: connection 1 when the 101st opens.
    let closes = closes(&events);
    assert_eq!(closes[0], (1, Some(201), CloseReason::Evicted.as_str()));
    assert!(events.iter().any(Event::is_limit_close));
    assert_eq!(
        closes
            .iter()
            .filter(|c| c.2 == CloseReason::Evicted.as_str())
            .count(),
        400
    );
}

#[test]
fn capture_a_recent_packet_keeps_a_connection_from_eviction() {
    // Two connections, limit 2: the first is active again before a third opens, so the
    // second, now the least recently active, is the one let go.
    let (a, b, c) = (10_001, 10_002, 10_003);
    let packets = vec![
        w::ipv4_tcp(CLIENT, SERVER, a, SPORT, CISN, 0, SYN, b""),
        w::ipv4_tcp(CLIENT, SERVER, b, SPORT, CISN, 0, SYN, b""),
        w::ipv4_tcp(CLIENT, SERVER, a, SPORT, CISN + 1, 0, ACK, b"x"),
        w::ipv4_tcp(CLIENT, SERVER, c, SPORT, CISN, 0, SYN, b""),
    ];
    let limits = Limits {
        max_connections: 2,
        ..Limits::default()
    };
    let (events, stats) = read_limited(&eth_pcap(&packets), limits);
    assert_eq!(stats.evicted, 1);
    assert_eq!(
        closes(&events)[0],
        (2, Some(4), CloseReason::Evicted.as_str())
    );
}

#[test]
fn capture_idle_connections_are_closed_at_the_timeout() {
    // One packet a second: with a 3.5 s idle timeout each connection (SYN, then a byte a
    // second later) is let go 4 s after its last packet (the clock idleness is judged by
    // moves with the bytes that continue a connection, and with them only: issue 44,
    // item 4).
    let limits = Limits {
        idle_timeout: Duration::from_millis(3500),
        ..Limits::default()
    };
    let (events, stats) = read_limited(&never_closed(10), limits);
    assert_eq!(
        stats.idle_closed, 8,
        "the last two are still recent at the end"
    );
    let closes = closes(&events);
    assert_eq!(closes[0], (1, Some(6), CloseReason::Idle.as_str()));
    assert!(stats.peak_open_connections <= 3, "{stats:?}");
    // The default (10 minutes) closes none of them.
    let (_, stats) = read_limited(&never_closed(10), Limits::default());
    assert_eq!(stats.idle_closed, 0);
}

// ---------------------------------------------------------------------------------------
// Packets handed over one at a time (live capture)

/// Every event of `packets`, fed one at a time (Ethernet), then finished.
fn feed_all(frames: &[Vec<u8>], cut_last: usize) -> (Vec<Event>, CaptureStats) {
    let mut packets = Packets::new();
    let mut events = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        let data = if i + 1 == frames.len() {
            &f[..f.len() - cut_last]
        } else {
            &f[..]
        };
        let time = Timestamp {
            secs: 1_000 + i as u64,
            nanos: 0,
        };
        packets.packet(w::LINKTYPE_ETHERNET, time, data, f.len() as u32);
        while let Some(event) = packets.next_event() {
            events.push(event);
        }
    }
    packets.finish();
    while let Some(event) = packets.next_event() {
        events.push(event);
    }
    // Finished: more packets change nothing.
    packets.packet(w::LINKTYPE_ETHERNET, Timestamp::default(), &frames[0], 60);
    assert_eq!(packets.next_event(), None);
    check_invariants(&events);
    (events, packets.stats())
}

#[test]
fn packets_one_at_a_time_give_the_events_of_the_same_capture_file() {
    let mut ip = handshake();
    ip.push(c2s(CISN + 1, PSH | ACK, b"request"));
    ip.push(s2c_ack(SISN + 1, CISN + 8, PSH | ACK, b"response"));
    // A lost segment: the next client bytes start 5 bytes further.
    ip.push(c2s(CISN + 13, PSH | ACK, b"after"));
    ip.push(w::ipv4(
        CLIENT,
        SERVER,
        17,
        0,
        0x4000,
        &w::udp(1, 2, b"not tcp"),
    ));
    // A second connection, left open at the end.
    ip.push(w::ipv4_tcp(
        CLIENT,
        SERVER,
        CPORT + 1,
        SPORT,
        1,
        0,
        PSH | ACK,
        b"open",
    ));
    let frames: Vec<Vec<u8>> = ip
        .iter()
        .map(|p| w::ethernet(&[], w::ETHERTYPE_IPV4, p))
        .collect();
    let (from_file, file_stats) = read(&eth_pcap(&ip));
    let (fed, fed_stats) = feed_all(&frames, 0);
    assert_eq!(fed, from_file);
    assert_eq!(fed_stats, file_stats);
    assert_eq!(stream(&fed, 1, client()), "request<gap 5>after");
    assert_eq!(stream(&fed, 1, server()), "response");
    assert_eq!(closes(&fed).len(), 2, "{fed:?}");
    assert_eq!((fed_stats.not_tcp, fed_stats.connections), (1, 2));
}

#[test]
fn packets_cut_by_the_snap_length_are_a_gap_and_an_unsupported_link_one_note() {
    let mut ip = handshake();
    ip.push(c2s(CISN + 1, PSH | ACK, b"0123456789"));
    let frames: Vec<Vec<u8>> = ip
        .iter()
        .map(|p| w::ethernet(&[], w::ETHERTYPE_IPV4, p))
        .collect();
    let (fed, _) = feed_all(&frames, 4);
    assert_eq!(stream(&fed, 1, client()), "012345<gap 4>");

    let mut packets = Packets::new();
    for _ in 0..3 {
        packets.packet(147, Timestamp::default(), b"user link type", 14);
    }
    let mut events = Vec::new();
    while let Some(event) = packets.next_event() {
        events.push(event);
    }
    let notes = notes(&events);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].1.contains("link type 147"), "{notes:?}");
    assert_eq!(packets.stats().unsupported_link, 3);
}
