//! Link, IP and TCP headers: the hand-written `src/decode.rs` against the `etherparse` crate
//! (`LaxSlicedPacket`, zero-copy header slices), on the same packets, to the same answer (a
//! TCP segment with its addresses, sequence numbers, flags, payload and the bytes the snap
//! length cut off; not TCP; or a note).
//!
//! ```sh
//! cargo run --release --example make_capture -- /tmp/big.pcap 50 200   # at the repository root
//! LINK_BENCH_PCAP=/tmp/big.pcap cargo bench -p kafka-elect-leaders-capture --bench link
//! ```
//!
//! Without `LINK_BENCH_PCAP` the "capture" group reads a small capture made here (Ethernet,
//! IPv4, TCP, as make_capture writes). The "link types" group is one TCP segment in each
//! framing decode.rs reads. Before measuring, both decoders answer every packet and a list
//! of edge cases (snap-length cuts, VLAN stacks, IPv6 extension header chains, fragments,
//! non-TCP, bad headers); every disagreement is printed on stderr.
//!
//! decode.rs is a private module of the crate; the bench reaches it through the crate's
//! `testing` feature (a hidden module, not a stable API).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kafka_elect_leaders_testkit::pcap as w;

use kafka_elect_leaders_capture::testing as decode;
use kafka_elect_leaders_capture::Endpoint;

use decode::{Decoded, Segment};

/// The same job as `decode::decode`, with etherparse doing the slicing. Link types etherparse
/// has no reader for (Linux SLL and SLL2 without a full header check, BSD loopback) are
/// stripped by hand, as decode.rs does, and the rest handed to etherparse. What etherparse
/// does not say (how many bytes a snap length cut off, a total length below the header
/// length, fragment details) is read from the header slices it returns.
mod ether {
    use std::net::IpAddr;

    use etherparse::err::packet::SliceError;
    use etherparse::err::Layer;
    use etherparse::{
        EtherType, IpNumber, Ipv6ExtensionSlice, LaxIpPayloadSlice, LaxNetSlice, LaxSlicedPacket,
        TransportSlice,
    };

    use super::{Decoded, Endpoint, Segment};

    fn be16(b: &[u8], at: usize) -> Option<u16> {
        Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
    }

    fn truncated(what: &str, cut: u64) -> Decoded<'static> {
        if cut > 0 {
            Decoded::Bad(format!("{what} cut by the snap length"))
        } else {
            Decoded::Bad(format!("truncated {what}"))
        }
    }

    pub fn decode(linktype: u32, frame: &[u8], cut: u64) -> Decoded<'_> {
        let packet = match linktype {
            1 => match LaxSlicedPacket::from_ethernet(frame) {
                Ok(p) => p,
                Err(_) => return truncated("Ethernet header", cut),
            },
            113 => match (be16(frame, 14), frame.get(16..)) {
                (Some(proto), Some(rest)) => {
                    LaxSlicedPacket::from_ether_type(EtherType(proto), rest)
                }
                _ => return truncated("Linux cooked (SLL) header", cut),
            },
            276 => match (be16(frame, 0), frame.get(20..)) {
                (Some(proto), Some(rest)) => {
                    LaxSlicedPacket::from_ether_type(EtherType(proto), rest)
                }
                _ => return truncated("Linux cooked (SLL2) header", cut),
            },
            0 | 108 => {
                let Some(head) = frame.get(..4) else {
                    return truncated("loopback header", cut);
                };
                let le = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
                let be = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
                let ip = |af| matches!(af, 2 | 24 | 28 | 30);
                if !(ip(be) || linktype == 0 && ip(le)) {
                    return Decoded::NotTcp;
                }
                match LaxSlicedPacket::from_ip(&frame[4..]) {
                    Ok(p) => p,
                    Err(_) => return truncated("IP header", cut),
                }
            }
            _ => match (frame.first().map(|b| b >> 4), linktype) {
                (Some(4), 229) | (Some(6), 228) => {
                    return Decoded::Bad(format!("raw IP packet of IP version {}", frame[0] >> 4))
                }
                _ => match LaxSlicedPacket::from_ip(frame) {
                    Ok(p) => p,
                    Err(_) => return truncated("raw IP packet", cut),
                },
            },
        };
        sliced(packet, cut)
    }

    /// Bytes of the IP payload the capture lost: `declared` is the length the header gives
    /// (None: 0, as segmentation offload writes it), `captured` what is there.
    fn missing(
        declared: Option<usize>,
        payload: &LaxIpPayloadSlice<'_>,
        captured: usize,
        cut: u64,
    ) -> Result<u64, String> {
        match declared {
            None => Ok(cut),
            Some(_) if !payload.incomplete => Ok(0),
            Some(len) if cut > 0 => Ok((len.saturating_sub(captured) as u64).min(cut)),
            Some(len) => Err(format!(
                "IP length says {len} payload bytes but the packet has {captured}"
            )),
        }
    }

    fn sliced(packet: LaxSlicedPacket<'_>, cut: u64) -> Decoded<'_> {
        let (src, dst, missing) = match &packet.net {
            None | Some(LaxNetSlice::Arp(_)) => {
                return match &packet.stop_err {
                    Some((e, layer)) => bad(e, *layer, cut),
                    None => Decoded::NotTcp,
                }
            }
            Some(LaxNetSlice::Ipv4(v4)) => {
                let h = v4.header();
                let ihl = usize::from(h.ihl()) * 4;
                let total = usize::from(h.total_len());
                if total != 0 && total < ihl {
                    return Decoded::Bad(format!(
                        "bad IPv4 total length {total} (header length {ihl})"
                    ));
                }
                let payload = v4.payload();
                if payload.fragmented {
                    if payload.ip_number != IpNumber::TCP {
                        return Decoded::NotTcp;
                    }
                    let more = h.more_fragments();
                    return Decoded::Bad(format!(
                        "IPv4 fragment of a TCP packet (id {:#06x}, offset {}, {}): fragments are not reassembled",
                        h.identification(),
                        u32::from(h.fragments_offset().value()) * 8,
                        if more { "more follow" } else { "last" }
                    ));
                }
                if payload.ip_number != IpNumber::TCP {
                    return Decoded::NotTcp;
                }
                let declared = (total != 0).then(|| total - ihl);
                match missing(declared, payload, payload.payload.len(), cut) {
                    Ok(m) => (
                        IpAddr::V4(h.source_addr()),
                        IpAddr::V4(h.destination_addr()),
                        m,
                    ),
                    Err(message) => return Decoded::Bad(message),
                }
            }
            Some(LaxNetSlice::Ipv6(v6)) => {
                let h = v6.header();
                let payload = v6.payload();
                let len = usize::from(h.payload_length());
                let captured = v6.extensions().slice().len() + payload.payload.len();
                let m = match missing((len != 0).then_some(len), payload, captured, cut) {
                    Ok(m) => m,
                    Err(message) => return Decoded::Bad(message),
                };
                if payload.fragmented {
                    if payload.ip_number != IpNumber::TCP {
                        return Decoded::NotTcp;
                    }
                    for ext in v6.extensions().clone() {
                        if let Ipv6ExtensionSlice::Fragment(f) = ext {
                            if f.fragment_offset().value() != 0 || f.more_fragments() {
                                return Decoded::Bad(format!(
                                    "IPv6 fragment of a TCP packet (id {:#010x}, offset {}, {}): fragments are not reassembled",
                                    f.identification(),
                                    u32::from(f.fragment_offset().value()) * 8,
                                    if f.more_fragments() { "more follow" } else { "last" }
                                ));
                            }
                        }
                    }
                }
                if payload.ip_number != IpNumber::TCP {
                    // An error past the extension headers (a short ICMPv6 message) is not ours.
                    return match &packet.stop_err {
                        Some((e, layer)) if ipv6_ext(*layer) => bad(e, *layer, m),
                        _ => Decoded::NotTcp,
                    };
                }
                (
                    IpAddr::V6(h.source_addr()),
                    IpAddr::V6(h.destination_addr()),
                    m,
                )
            }
        };
        match &packet.transport {
            Some(TransportSlice::Tcp(tcp)) => {
                let header = tcp.header_slice();
                Decoded::Tcp(Segment {
                    src: Endpoint {
                        ip: src,
                        port: tcp.source_port(),
                    },
                    dst: Endpoint {
                        ip: dst,
                        port: tcp.destination_port(),
                    },
                    seq: tcp.sequence_number(),
                    ack: tcp.acknowledgment_number(),
                    flags: header[13],
                    payload: tcp.payload(),
                    missing,
                })
            }
            _ => match &packet.stop_err {
                Some((e, layer)) => bad(e, *layer, missing),
                None => Decoded::NotTcp,
            },
        }
    }

    fn ipv6_ext(layer: Layer) -> bool {
        matches!(
            layer,
            Layer::Ipv6ExtHeader
                | Layer::Ipv6HopByHopHeader
                | Layer::Ipv6DestOptionsHeader
                | Layer::Ipv6RouteHeader
                | Layer::Ipv6FragHeader
                | Layer::IpAuthHeader
        )
    }

    fn bad(e: &SliceError, layer: Layer, cut: u64) -> Decoded<'static> {
        let what = match layer {
            Layer::Ethernet2Header | Layer::VlanHeader => "Ethernet header",
            Layer::Ipv4Header | Layer::Ipv4Packet => "IPv4 header",
            Layer::Ipv6Header | Layer::Ipv6Packet => "IPv6 header",
            Layer::IpAuthHeader => "IPv6 authentication header",
            Layer::Ipv6FragHeader => "IPv6 fragment header",
            Layer::TcpHeader => "TCP header",
            _ => "IPv6 extension header",
        };
        match e {
            SliceError::Len(_) => truncated(what, cut),
            other => Decoded::Bad(format!("bad {what}: {other}")),
        }
    }
}

/// An answer reduced to what the reader uses; notes compare by kind only (their wording is
/// decode.rs's own).
#[derive(PartialEq, Debug)]
enum Answer {
    Tcp {
        src: Endpoint,
        dst: Endpoint,
        seq: u32,
        ack: u32,
        flags: u8,
        payload: (usize, usize),
        missing: u64,
    },
    NotTcp,
    Note,
}

fn answer(d: &Decoded<'_>) -> Answer {
    match d {
        Decoded::Tcp(s) => Answer::Tcp {
            src: s.src,
            dst: s.dst,
            seq: s.seq,
            ack: s.ack,
            flags: s.flags,
            payload: (s.payload.as_ptr() as usize, s.payload.len()),
            missing: s.missing,
        },
        Decoded::NotTcp => Answer::NotTcp,
        Decoded::Bad(_) => Answer::Note,
    }
}

fn describe(d: &Decoded<'_>) -> String {
    match d {
        Decoded::Tcp(s) => format!(
            "TCP {}->{} {} payload bytes, {} missing",
            s.src,
            s.dst,
            s.payload.len(),
            s.missing
        ),
        Decoded::NotTcp => "not TCP".into(),
        Decoded::Bad(m) => format!("note: {m}"),
    }
}

/// A frame: link type, captured bytes, bytes cut off by the snap length.
struct Frame {
    linktype: u32,
    data: Vec<u8>,
    cut: u64,
}

/// The packets of a legacy pcap file (either byte order).
fn pcap_frames(bytes: &[u8]) -> Vec<Frame> {
    let magic = u32::from_le_bytes(bytes[..4].try_into().unwrap());
    let le = matches!(magic, 0xa1b2_c3d4 | 0xa1b2_3c4d);
    let u32_at = |at: usize| {
        let b: [u8; 4] = bytes[at..at + 4].try_into().unwrap();
        if le {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }
    };
    let linktype = u32_at(20) & 0x0fff_ffff;
    let mut frames = Vec::new();
    let mut at = 24;
    while at + 16 <= bytes.len() {
        let incl = u32_at(at + 8) as usize;
        let orig = u32_at(at + 12);
        let Some(data) = bytes.get(at + 16..at + 16 + incl) else {
            break;
        };
        frames.push(Frame {
            linktype,
            data: data.to_vec(),
            cut: u64::from(orig).saturating_sub(incl as u64),
        });
        at += 16 + incl;
    }
    frames
}

/// make_capture's traffic in small: Ethernet, IPv4, TCP, interleaved connections, segments of
/// up to 1448 bytes and small ones.
fn small_capture() -> Vec<Frame> {
    let mut frames = Vec::new();
    let mut seq = [1000u32; 64];
    for i in 0..20_000usize {
        let conn = i % 64;
        let len = if i % 5 == 0 { 60 } else { 1448 };
        let payload = vec![(i % 251) as u8; len];
        let data = w::ethernet_ipv4_tcp(
            [10, 0, (conn >> 8) as u8, conn as u8],
            [10, 1, 0, 1],
            40_000 + conn as u16,
            9092,
            seq[conn],
            7,
            w::ACK | w::PSH,
            &payload,
        );
        seq[conn] = seq[conn].wrapping_add(len as u32);
        frames.push(Frame {
            linktype: w::LINKTYPE_ETHERNET,
            data,
            cut: 0,
        });
    }
    frames
}

const V6_A: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const V6_B: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

fn v4_segment(len: usize) -> Vec<u8> {
    w::ipv4_tcp(
        [10, 0, 0, 1],
        [10, 0, 0, 2],
        50_000,
        9092,
        1,
        2,
        w::ACK,
        &vec![b'k'; len],
    )
}

fn v6_segment(ext: &[u8], len: usize) -> Vec<u8> {
    w::ipv6_tcp(
        V6_A,
        V6_B,
        ext,
        50_000,
        9092,
        1,
        2,
        w::ACK,
        &vec![b'k'; len],
    )
}

/// One 1448-byte TCP segment in each framing decode.rs reads.
fn link_types() -> Vec<(&'static str, Frame)> {
    let v4 = v4_segment(1448);
    let v6 = v6_segment(&[], 1448);
    let f = |linktype, data| Frame {
        linktype,
        data,
        cut: 0,
    };
    vec![
        (
            "ethernet",
            f(
                w::LINKTYPE_ETHERNET,
                w::ethernet(&[], w::ETHERTYPE_IPV4, &v4),
            ),
        ),
        (
            "ethernet-vlan",
            f(
                w::LINKTYPE_ETHERNET,
                w::ethernet(&[7], w::ETHERTYPE_IPV4, &v4),
            ),
        ),
        (
            "ethernet-ipv6",
            f(
                w::LINKTYPE_ETHERNET,
                w::ethernet(&[], w::ETHERTYPE_IPV6, &v6),
            ),
        ),
        (
            "sll",
            f(w::LINKTYPE_LINUX_SLL, w::sll(w::ETHERTYPE_IPV4, &v4)),
        ),
        (
            "sll2",
            f(w::LINKTYPE_LINUX_SLL2, w::sll2(w::ETHERTYPE_IPV4, &v4)),
        ),
        ("null", f(w::LINKTYPE_NULL, w::null_loopback(2, false, &v4))),
        ("raw-ipv4", f(w::LINKTYPE_RAW, v4.clone())),
        (
            "raw-ipv6-ext",
            f(w::LINKTYPE_RAW, v6_segment(&[0, 60, 43], 1448)),
        ),
    ]
}

/// The cases where the two could disagree.
fn edge_cases() -> Vec<(String, Frame)> {
    let v4 = v4_segment(100);
    let eth = |vlans: &[u16]| w::ethernet(vlans, w::ETHERTYPE_IPV4, &v4);
    let mut cases: Vec<(String, Frame)> = Vec::new();
    let mut add = |name: String, linktype, data: Vec<u8>, cut| {
        cases.push((
            name,
            Frame {
                linktype,
                data,
                cut,
            },
        ))
    };
    let full = eth(&[]);
    for keep in [10, 14 + 10, 14 + 20 + 10, 14 + 20 + 20 + 40] {
        let cut = (full.len() - keep) as u64;
        add(
            format!("snap length {keep} of {}", full.len()),
            1,
            full[..keep].to_vec(),
            cut,
        );
    }
    let mut short = full.clone();
    short.truncate(14 + 20 + 20 + 40);
    add(
        "IPv4 total length past the frame, no snap cut".into(),
        1,
        short,
        0,
    );
    for tags in [1, 2, 3, 4, 8, 9] {
        add(format!("{tags} VLAN tags"), 1, eth(&vec![7; tags]), 0);
    }
    for tpid in [0x88a8u16, 0x9100, 0x9200] {
        let mut f = eth(&[100, 7]);
        f[12..14].copy_from_slice(&tpid.to_be_bytes());
        add(format!("outer tag {tpid:#06x}"), 1, f, 0);
    }
    for exts in [
        &[0u8, 60, 43][..],
        &[60; 16][..],
        &[60; 17][..],
        &[0, 0][..],
        &[60, 0][..],
    ] {
        add(
            format!("IPv6 extension headers {exts:?}"),
            w::LINKTYPE_RAW,
            v6_segment(exts, 50),
            0,
        );
    }
    let v6 = v6_segment(&[0, 60], 50);
    add(
        "IPv6 cut inside the extension headers".into(),
        w::LINKTYPE_RAW,
        v6[..40 + 12].to_vec(),
        (v6.len() - 52) as u64,
    );
    let tcp = w::tcp(50_000, 9092, 1, 0, w::ACK, &[], b"fragmented");
    add(
        "IPv4 first fragment".into(),
        101,
        w::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 6, 77, 0x2000, &tcp),
        0,
    );
    add(
        "IPv4 later fragment".into(),
        101,
        w::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 6, 77, 3, b"tail0123"),
        0,
    );
    add(
        "IPv6 fragment".into(),
        101,
        w::ipv6(V6_A, V6_B, &[44], (185, false), 6, b"rest of it"),
        0,
    );
    add("IPv6 atomic fragment".into(), 101, v6_segment(&[44], 20), 0);
    add(
        "UDP".into(),
        101,
        w::ipv4(
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            17,
            1,
            0,
            &w::udp(53, 53, b"dns"),
        ),
        0,
    );
    add(
        "ARP".into(),
        1,
        w::ethernet(&[], w::ETHERTYPE_ARP, &[0; 28]),
        0,
    );
    add(
        "ICMPv6".into(),
        101,
        w::ipv6(V6_A, V6_B, &[], (0, false), 58, &[128, 0, 0, 0]),
        0,
    );
    let mut bad_total = v4.clone();
    bad_total[2..4].copy_from_slice(&10u16.to_be_bytes());
    add("IPv4 total length 10".into(), 101, bad_total, 0);
    let mut tso = v4.clone();
    tso[2..4].copy_from_slice(&0u16.to_be_bytes());
    add("IPv4 total length 0 (offload)".into(), 101, tso, 0);
    let mut bad_ihl = v4.clone();
    bad_ihl[0] = 0x44;
    add("IPv4 header length 16".into(), 101, bad_ihl, 0);
    let mut bad_doff = v4.clone();
    bad_doff[20 + 12] = 0x40;
    add("TCP data offset 16".into(), 101, bad_doff, 0);
    let mut big_doff = v4.clone();
    big_doff[20 + 12] = 0xf0;
    big_doff.truncate(20 + 40);
    big_doff[2..4].copy_from_slice(&60u16.to_be_bytes());
    add("TCP data offset 60 in 40 bytes".into(), 101, big_doff, 0);
    add(
        "IPv6 in an IPv4-only link".into(),
        w::LINKTYPE_IPV4,
        v6_segment(&[], 10),
        0,
    );
    add("empty raw packet".into(), 101, Vec::new(), 0);
    add(
        "loopback AF 24 big-endian".into(),
        0,
        w::null_loopback(24, true, &v6_segment(&[], 10)),
        0,
    );
    cases
}

/// Both decoders on every frame; prints each disagreement (at most 20 per set) and returns
/// how many there were.
fn compare<'a>(set: &str, frames: impl Iterator<Item = (String, &'a Frame)>) -> usize {
    let (mut n, mut differ) = (0, 0);
    for (name, f) in frames {
        n += 1;
        let hand = decode::decode(f.linktype, &f.data, f.cut);
        let ep = ether::decode(f.linktype, &f.data, f.cut);
        if answer(&hand) != answer(&ep) {
            differ += 1;
            if differ <= 20 {
                eprintln!(
                    "  {set}: {name}: decode.rs {} | etherparse {}",
                    describe(&hand),
                    describe(&ep)
                );
            }
        }
    }
    eprintln!("{set}: {differ} of {n} packets answered differently");
    differ
}

fn sum(d: Decoded<'_>) -> u64 {
    match d {
        Decoded::Tcp(s) => s.payload.len() as u64 + u64::from(s.seq) + u64::from(s.src.port),
        Decoded::NotTcp => 1,
        Decoded::Bad(m) => m.len() as u64,
    }
}

fn bench(c: &mut Criterion) {
    let (capture, name) = match std::env::var_os("LINK_BENCH_PCAP") {
        Some(path) => (
            pcap_frames(&std::fs::read(&path).expect("LINK_BENCH_PCAP: cannot read")),
            format!("capture {}", path.to_string_lossy()),
        ),
        None => (small_capture(), "capture (made here)".to_string()),
    };
    let links = link_types();
    let edges = edge_cases();
    compare(
        &name,
        capture
            .iter()
            .enumerate()
            .map(|(i, f)| (format!("packet {}", i + 1), f)),
    );
    compare("link types", links.iter().map(|(n, f)| (n.to_string(), f)));
    compare("edge cases", edges.iter().map(|(n, f)| (n.clone(), f)));

    let mut g = c.benchmark_group("capture");
    g.throughput(Throughput::Elements(capture.len() as u64));
    g.bench_function("decode.rs", |b| {
        b.iter(|| {
            capture
                .iter()
                .map(|f| sum(decode::decode(f.linktype, black_box(&f.data), f.cut)))
                .sum::<u64>()
        })
    });
    g.bench_function("etherparse", |b| {
        b.iter(|| {
            capture
                .iter()
                .map(|f| sum(ether::decode(f.linktype, black_box(&f.data), f.cut)))
                .sum::<u64>()
        })
    });
    // A floor, not a decoder: etherparse's strict slicer alone on Ethernet frames, reading the
    // TCP fields, with none of the snap-length, fragment or other-link handling above.
    g.bench_function("etherparse SlicedPacket alone", |b| {
        b.iter(|| {
            capture
                .iter()
                .map(
                    |f| match etherparse::SlicedPacket::from_ethernet(black_box(&f.data)) {
                        Ok(etherparse::SlicedPacket {
                            transport: Some(etherparse::TransportSlice::Tcp(t)),
                            ..
                        }) => {
                            t.payload().len() as u64
                                + u64::from(t.sequence_number())
                                + u64::from(t.source_port())
                        }
                        _ => 1,
                    },
                )
                .sum::<u64>()
        })
    });
    g.finish();

    let mut g = c.benchmark_group("link types");
    for (name, f) in &links {
        g.throughput(Throughput::Elements(1));
        g.bench_function(format!("{name}/decode.rs"), |b| {
            b.iter(|| sum(decode::decode(f.linktype, black_box(&f.data), f.cut)))
        });
        g.bench_function(format!("{name}/etherparse"), |b| {
            b.iter(|| sum(ether::decode(f.linktype, black_box(&f.data), f.cut)))
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
