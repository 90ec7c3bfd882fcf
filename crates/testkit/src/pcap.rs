//! A tiny writer of pcap and pcapng captures and hand-built packets, for tests: files in
//! either byte order and timestamp resolution, and frames of the link types the capture reader
//! knows (Ethernet with VLAN tags, Linux cooked SLL and SLL2, BSD loopback, raw IP) carrying
//! IPv4 or IPv6 (with extension headers) and TCP. Checksums are left zero: readers of captures
//! do not check them (offloading makes them wrong on the capturing host anyway).
//!
//! Shared by the capture reader's unit tests, the tool's integration tests and the capture
//! benchmark's generator, so it depends on nothing but std.

// TCP flags.

/// TCP flag FIN: the sender has no more bytes.
pub const FIN: u8 = 0x01;
/// TCP flag SYN: the connection's first segment, each way.
pub const SYN: u8 = 0x02;
/// TCP flag RST: the connection is reset.
pub const RST: u8 = 0x04;
/// TCP flag PSH: push the bytes to the application.
pub const PSH: u8 = 0x08;
/// TCP flag ACK: the acknowledgement number is valid.
pub const ACK: u8 = 0x10;

// Link types (tcpdump.org's LINKTYPE_ values).

/// BSD loopback: a 4-byte address family in the host's byte order.
pub const LINKTYPE_NULL: u32 = 0;
/// Ethernet II, VLAN tags allowed.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// Raw IP, version 4 or 6 told by the first nibble.
pub const LINKTYPE_RAW: u32 = 101;
/// OpenBSD loopback: a 4-byte address family in network byte order.
pub const LINKTYPE_LOOP: u32 = 108;
/// Linux cooked capture v1 (SLL).
pub const LINKTYPE_LINUX_SLL: u32 = 113;
/// Raw IPv4.
pub const LINKTYPE_IPV4: u32 = 228;
/// Raw IPv6.
pub const LINKTYPE_IPV6: u32 = 229;
/// Linux cooked capture v2 (SLL2).
pub const LINKTYPE_LINUX_SLL2: u32 = 276;

/// EtherType of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType of IPv6.
pub const ETHERTYPE_IPV6: u16 = 0x86dd;
/// EtherType of ARP, for a frame that carries no IP.
pub const ETHERTYPE_ARP: u16 = 0x0806;

/// One packet of a capture: capture time (seconds, nanoseconds), the captured bytes, and the
/// original length on the wire (more than `data.len()` when the snap length cut it).
pub type Packet<'a> = (u32, u32, &'a [u8], u32);

fn u16b(v: u16, be: bool) -> [u8; 2] {
    if be {
        v.to_be_bytes()
    } else {
        v.to_le_bytes()
    }
}

fn u32b(v: u32, be: bool) -> [u8; 4] {
    if be {
        v.to_be_bytes()
    } else {
        v.to_le_bytes()
    }
}

/// A legacy pcap file: byte order and microsecond or nanosecond resolution as asked; snap
/// length 262144. Times are given in nanoseconds and written in the file's resolution.
pub fn pcap_file(linktype: u32, nanos: bool, big_endian: bool, packets: &[Packet<'_>]) -> Vec<u8> {
    let be = big_endian;
    let mut out = Vec::new();
    let magic = if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 };
    out.extend(u32b(magic, be));
    out.extend(u16b(2, be));
    out.extend(u16b(4, be));
    out.extend(u32b(0, be)); // thiszone
    out.extend(u32b(0, be)); // sigfigs
    out.extend(u32b(262_144, be));
    out.extend(u32b(linktype, be));
    for &(secs, ns, data, orig_len) in packets {
        out.extend(pcap_record(
            secs,
            if nanos { ns } else { ns / 1000 },
            data,
            orig_len,
            be,
        ));
    }
    out
}

/// One record of a legacy pcap file (`frac` in the file's resolution).
pub fn pcap_record(secs: u32, frac: u32, data: &[u8], orig_len: u32, big_endian: bool) -> Vec<u8> {
    let be = big_endian;
    let mut out = Vec::new();
    out.extend(u32b(secs, be));
    out.extend(u32b(frac, be));
    out.extend(u32b(data.len() as u32, be));
    out.extend(u32b(orig_len, be));
    out.extend_from_slice(data);
    out
}

fn pad4(v: &mut Vec<u8>) {
    while v.len() % 4 != 0 {
        v.push(0);
    }
}

/// A pcapng block: type, body (padded here), total length twice.
pub fn ng_block(block_type: u32, body: &[u8], big_endian: bool) -> Vec<u8> {
    let mut body = body.to_vec();
    pad4(&mut body);
    let len = body.len() as u32 + 12;
    let mut out = Vec::new();
    out.extend(u32b(block_type, big_endian));
    out.extend(u32b(len, big_endian));
    out.extend(body);
    out.extend(u32b(len, big_endian));
    out
}

/// pcapng options: (code, value), then opt_endofopt.
pub fn ng_options(options: &[(u16, Vec<u8>)], big_endian: bool) -> Vec<u8> {
    let mut out = Vec::new();
    if options.is_empty() {
        return out;
    }
    for (code, value) in options {
        out.extend(u16b(*code, big_endian));
        out.extend(u16b(value.len() as u16, big_endian));
        out.extend(value);
        pad4(&mut out);
    }
    out.extend([0, 0, 0, 0]);
    out
}

/// Section Header Block.
pub fn ng_shb(big_endian: bool) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(u32b(0x1a2b_3c4d, big_endian));
    body.extend(u16b(1, big_endian));
    body.extend(u16b(0, big_endian));
    body.extend((-1i64).to_le_bytes()); // section length unknown
    ng_block(0x0a0d_0d0a, &body, big_endian)
}

/// Interface Description Block; `tsresol` is the if_tsresol byte (None: default 10^-6),
/// `tsoffset` the if_tsoffset seconds.
pub fn ng_idb(
    linktype: u16,
    snaplen: u32,
    tsresol: Option<u8>,
    tsoffset: Option<i64>,
    big_endian: bool,
) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(u16b(linktype, big_endian));
    body.extend(u16b(0, big_endian));
    body.extend(u32b(snaplen, big_endian));
    let mut options = Vec::new();
    if let Some(r) = tsresol {
        options.push((9u16, vec![r]));
    }
    if let Some(o) = tsoffset {
        let b = if big_endian {
            o.to_be_bytes()
        } else {
            o.to_le_bytes()
        };
        options.push((14u16, b.to_vec()));
    }
    body.extend(ng_options(&options, big_endian));
    ng_block(1, &body, big_endian)
}

/// Enhanced Packet Block; `ticks` in the interface's resolution.
pub fn ng_epb(if_id: u32, ticks: u64, data: &[u8], orig_len: u32, big_endian: bool) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(u32b(if_id, big_endian));
    body.extend(u32b((ticks >> 32) as u32, big_endian));
    body.extend(u32b(ticks as u32, big_endian));
    body.extend(u32b(data.len() as u32, big_endian));
    body.extend(u32b(orig_len, big_endian));
    body.extend_from_slice(data);
    ng_block(6, &body, big_endian)
}

/// Simple Packet Block (interface 0, no timestamp; the captured length is what the
/// interface's snap length leaves of `orig_len`, here `data.len()`).
pub fn ng_spb(data: &[u8], orig_len: u32, big_endian: bool) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(u32b(orig_len, big_endian));
    body.extend_from_slice(data);
    ng_block(3, &body, big_endian)
}

/// A one-section pcapng file: the interfaces as (link type, if_tsresol), then Enhanced Packet
/// Blocks as (interface, ticks, data, original length).
pub fn pcapng_file(
    big_endian: bool,
    interfaces: &[(u16, Option<u8>)],
    packets: &[(u32, u64, &[u8], u32)],
) -> Vec<u8> {
    let mut out = ng_shb(big_endian);
    for &(linktype, tsresol) in interfaces {
        out.extend(ng_idb(linktype, 0, tsresol, None, big_endian));
    }
    for &(if_id, ticks, data, orig_len) in packets {
        out.extend(ng_epb(if_id, ticks, data, orig_len, big_endian));
    }
    out
}

/// A TCP header (20 bytes, or more with `options`, which must be a multiple of 4 long) and
/// payload.
pub fn tcp(
    sport: u16,
    dport: u16,
    seq: u32,
    ack: u32,
    flags: u8,
    options: &[u8],
    payload: &[u8],
) -> Vec<u8> {
    assert!(options.len() % 4 == 0 && options.len() <= 40);
    let mut out = Vec::new();
    out.extend(sport.to_be_bytes());
    out.extend(dport.to_be_bytes());
    out.extend(seq.to_be_bytes());
    out.extend(ack.to_be_bytes());
    out.push((((20 + options.len()) / 4) << 4) as u8);
    out.push(flags);
    out.extend(65535u16.to_be_bytes()); // window
    out.extend([0, 0, 0, 0]); // checksum, urgent pointer
    out.extend_from_slice(options);
    out.extend_from_slice(payload);
    out
}

/// A UDP datagram (header and payload).
pub fn udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend(sport.to_be_bytes());
    out.extend(dport.to_be_bytes());
    out.extend(((8 + payload.len()) as u16).to_be_bytes());
    out.extend([0, 0]);
    out.extend_from_slice(payload);
    out
}

/// An IPv4 packet. `frag` is the flags and fragment offset field (0x4000 = don't fragment,
/// 0x2000 = more fragments, low 13 bits = offset in 8-byte units).
pub fn ipv4(
    src: [u8; 4],
    dst: [u8; 4],
    proto: u8,
    ident: u16,
    frag: u16,
    payload: &[u8],
) -> Vec<u8> {
    let mut out = Vec::new();
    out.push(0x45);
    out.push(0);
    out.extend(((20 + payload.len()) as u16).to_be_bytes());
    out.extend(ident.to_be_bytes());
    out.extend(frag.to_be_bytes());
    out.push(64); // TTL
    out.push(proto);
    out.extend([0, 0]); // checksum
    out.extend(src);
    out.extend(dst);
    out.extend_from_slice(payload);
    out
}

/// An IPv4 packet carrying a TCP segment (don't-fragment set).
#[allow(clippy::too_many_arguments)]
pub fn ipv4_tcp(
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    seq: u32,
    ack: u32,
    flags: u8,
    payload: &[u8],
) -> Vec<u8> {
    ipv4(
        src,
        dst,
        6,
        1,
        0x4000,
        &tcp(sport, dport, seq, ack, flags, &[], payload),
    )
}

/// An IPv6 packet: `extensions` are the extension headers to put before `upper` (whose
/// protocol is `proto`), each as its type; hop-by-hop (0), routing (43) and destination
/// options (60) get 8 bytes of padding options, a fragment header (44) gets `(offset, more)`
/// from `fragment`.
pub fn ipv6(
    src: [u8; 16],
    dst: [u8; 16],
    extensions: &[u8],
    fragment: (u16, bool),
    proto: u8,
    upper: &[u8],
) -> Vec<u8> {
    let mut chain = Vec::new();
    for (i, &ext) in extensions.iter().enumerate() {
        let next = extensions.get(i + 1).copied().unwrap_or(proto);
        match ext {
            44 => {
                chain.push(next);
                chain.push(0);
                let off_m = (fragment.0 << 3) | u16::from(fragment.1);
                chain.extend(off_m.to_be_bytes());
                chain.extend(0x1234_5678u32.to_be_bytes());
            }
            43 => {
                // Routing header type 0 with no addresses left: next, len 0, type, segments left.
                chain.extend([next, 0, 0, 0, 0, 0, 0, 0]);
            }
            _ => {
                // Hop-by-hop or destination options: a PadN option filling 6 bytes.
                chain.extend([next, 0, 1, 4, 0, 0, 0, 0]);
            }
        }
    }
    chain.extend_from_slice(upper);
    let mut out = Vec::new();
    out.extend([0x60, 0, 0, 0]);
    out.extend((chain.len() as u16).to_be_bytes());
    out.push(extensions.first().copied().unwrap_or(proto));
    out.push(64); // hop limit
    out.extend(src);
    out.extend(dst);
    out.extend(chain);
    out
}

/// An IPv6 packet carrying a TCP segment, after the given extension headers (see [`ipv6`]).
#[allow(clippy::too_many_arguments)]
pub fn ipv6_tcp(
    src: [u8; 16],
    dst: [u8; 16],
    extensions: &[u8],
    sport: u16,
    dport: u16,
    seq: u32,
    ack: u32,
    flags: u8,
    payload: &[u8],
) -> Vec<u8> {
    ipv6(
        src,
        dst,
        extensions,
        (0, false),
        6,
        &tcp(sport, dport, seq, ack, flags, &[], payload),
    )
}

/// An Ethernet frame, with 802.1Q tags (their VLAN ids) before the ethertype, padded to the
/// 60-byte minimum as on the wire.
pub fn ethernet(vlans: &[u16], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01];
    for &vid in vlans {
        out.extend(0x8100u16.to_be_bytes());
        out.extend(vid.to_be_bytes());
    }
    out.extend(ethertype.to_be_bytes());
    out.extend_from_slice(payload);
    while out.len() < 60 {
        out.push(0);
    }
    out
}

/// An Ethernet frame carrying IPv4 and TCP.
#[allow(clippy::too_many_arguments)]
pub fn ethernet_ipv4_tcp(
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    seq: u32,
    ack: u32,
    flags: u8,
    payload: &[u8],
) -> Vec<u8> {
    ethernet(
        &[],
        ETHERTYPE_IPV4,
        &ipv4_tcp(src, dst, sport, dport, seq, ack, flags, payload),
    )
}

/// A Linux cooked (SLL, link type 113) frame.
pub fn sll(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend(0u16.to_be_bytes()); // packet type: to us
    out.extend(1u16.to_be_bytes()); // ARPHRD_ETHER
    out.extend(6u16.to_be_bytes()); // address length
    out.extend([0x02, 0, 0, 0, 0, 0x01, 0, 0]);
    out.extend(ethertype.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// A Linux cooked v2 (SLL2, link type 276) frame.
pub fn sll2(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend(ethertype.to_be_bytes());
    out.extend(0u16.to_be_bytes()); // reserved
    out.extend(2u32.to_be_bytes()); // interface index
    out.extend(1u16.to_be_bytes()); // ARPHRD_ETHER
    out.push(0); // packet type
    out.push(6); // address length
    out.extend([0x02, 0, 0, 0, 0, 0x01, 0, 0]);
    out.extend_from_slice(payload);
    out
}

/// A BSD loopback (NULL, link type 0) frame: the address family in the capturing host's byte
/// order (2 = IPv4; 24, 28 or 30 = IPv6).
pub fn null_loopback(family: u32, big_endian: bool, payload: &[u8]) -> Vec<u8> {
    let mut out = u32b(family, big_endian).to_vec();
    out.extend_from_slice(payload);
    out
}

/// An OpenBSD loopback (LOOP, link type 108) frame: the address family in network byte order.
pub fn loop_frame(family: u32, payload: &[u8]) -> Vec<u8> {
    null_loopback(family, true, payload)
}
