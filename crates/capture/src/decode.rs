//! From a captured frame to a TCP segment: the link layer (by link type), IPv4 or IPv6 (with
//! extension headers), then the TCP header. Nothing here allocates except the messages of
//! notes, and every slice is taken with checked indexing.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::types::Endpoint;

/// Link types this module reads (the values of pcap's LINKTYPE_ registry).
pub const LINKTYPE_NULL: u32 = 0;
pub const LINKTYPE_ETHERNET: u32 = 1;
pub const LINKTYPE_RAW: u32 = 101;
pub const LINKTYPE_LOOP: u32 = 108;
pub const LINKTYPE_LINUX_SLL: u32 = 113;
pub const LINKTYPE_IPV4: u32 = 228;
pub const LINKTYPE_IPV6: u32 = 229;
pub const LINKTYPE_LINUX_SLL2: u32 = 276;
/// DLT_RAW as some systems wrote it into files before LINKTYPE_RAW existed (12 on most, 14 on
/// OpenBSD). Both numbers mean raw IP in files written by libpcap.
const DLT_RAW_12: u32 = 12;
const DLT_RAW_14: u32 = 14;

pub const TCP_FIN: u8 = 0x01;
pub const TCP_SYN: u8 = 0x02;
pub const TCP_RST: u8 = 0x04;
pub const TCP_ACK: u8 = 0x10;

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
/// An Ethernet type field this small is an IEEE 802.3 length (an LLC header follows).
const MAX_8023_LENGTH: u16 = 1500;
/// 802.1Q, 802.1ad, and the two pre-standard QinQ values.
const ETHERTYPE_VLAN: [u16; 4] = [0x8100, 0x88a8, 0x9100, 0x9200];
/// More stacked VLAN tags than this is not a real frame.
const MAX_VLAN_TAGS: usize = 8;
/// More IPv6 extension headers than this is not a real packet.
const MAX_IPV6_EXTENSIONS: usize = 16;

const IPPROTO_TCP: u8 = 6;

/// Whether this module can read frames of a link type.
pub fn link_supported(linktype: u32) -> bool {
    matches!(
        linktype,
        LINKTYPE_NULL
            | LINKTYPE_ETHERNET
            | LINKTYPE_RAW
            | DLT_RAW_12
            | DLT_RAW_14
            | LINKTYPE_LOOP
            | LINKTYPE_LINUX_SLL
            | LINKTYPE_IPV4
            | LINKTYPE_IPV6
            | LINKTYPE_LINUX_SLL2
    )
}

/// One TCP segment, as far as it was captured.
#[derive(Debug)]
pub struct Segment<'a> {
    pub src: Endpoint,
    pub dst: Endpoint,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    /// The payload bytes that were captured.
    pub payload: &'a [u8],
    /// Payload bytes that the packet carried after `payload` but that the capture cut off
    /// (snap length).
    pub missing: u64,
}

/// What a frame turned out to be.
#[derive(Debug)]
pub enum Decoded<'a> {
    Tcp(Segment<'a>),
    /// Not TCP over IP (ARP, UDP, ICMP, ...): skipped silently.
    NotTcp,
    /// Unusable, and why.
    Bad(String),
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    let s = b.get(at..at.checked_add(2)?)?;
    Some(u16::from_be_bytes([s[0], s[1]]))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

fn le32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// Decodes one frame of a supported link type. `cut` is how many bytes of the frame were not
/// captured (original length minus captured length).
pub fn decode(linktype: u32, frame: &[u8], cut: u64) -> Decoded<'_> {
    match linktype {
        LINKTYPE_ETHERNET => ethernet(frame, cut),
        LINKTYPE_LINUX_SLL => match be16(frame, 14) {
            Some(proto) => by_ethertype(proto, frame.get(16..).unwrap_or(&[]), cut),
            None => truncated("Linux cooked (SLL) header", cut),
        },
        LINKTYPE_LINUX_SLL2 => match (be16(frame, 0), frame.get(20..)) {
            (Some(proto), Some(rest)) => by_ethertype(proto, rest, cut),
            _ => truncated("Linux cooked (SLL2) header", cut),
        },
        LINKTYPE_NULL => match (le32(frame, 0), be32(frame, 0)) {
            (Some(le), Some(be)) => by_family(le, be, frame.get(4..).unwrap_or(&[]), cut),
            _ => truncated("loopback (NULL) header", cut),
        },
        LINKTYPE_LOOP => match be32(frame, 0) {
            Some(be) => by_family(be, be, frame.get(4..).unwrap_or(&[]), cut),
            None => truncated("loopback (LOOP) header", cut),
        },
        LINKTYPE_RAW | DLT_RAW_12 | DLT_RAW_14 | LINKTYPE_IPV4 | LINKTYPE_IPV6 => {
            match frame.first().map(|b| b >> 4) {
                Some(4) if linktype != LINKTYPE_IPV6 => ipv4(frame, cut),
                Some(6) if linktype != LINKTYPE_IPV4 => ipv6(frame, cut),
                Some(v) => Decoded::Bad(format!("raw IP packet of IP version {v}")),
                None => truncated("raw IP packet", cut),
            }
        }
        _ => Decoded::Bad(format!("unsupported link type {linktype}")),
    }
}

fn truncated(what: &str, cut: u64) -> Decoded<'static> {
    if cut > 0 {
        Decoded::Bad(format!("{what} cut by the snap length"))
    } else {
        Decoded::Bad(format!("truncated {what}"))
    }
}

fn ethernet(frame: &[u8], cut: u64) -> Decoded<'_> {
    let mut at = 12;
    for _ in 0..=MAX_VLAN_TAGS {
        let Some(ethertype) = be16(frame, at) else {
            return truncated("Ethernet header", cut);
        };
        if ETHERTYPE_VLAN.contains(&ethertype) {
            at += 4;
            continue;
        }
        let rest = frame.get(at + 2..).unwrap_or(&[]);
        if ethertype <= MAX_8023_LENGTH {
            // IEEE 802.3: a length, then an 802.2 LLC header. With SNAP (RFC 1042: DSAP and
            // SSAP 0xAA, control 3 (UI), OUI 0) the ethertype follows, as tshark reads it.
            return match rest {
                [0xaa, 0xaa, 0x03, 0, 0, 0, hi, lo, payload @ ..] => {
                    by_ethertype(u16::from_be_bytes([*hi, *lo]), payload, cut)
                }
                _ => Decoded::NotTcp,
            };
        }
        return by_ethertype(ethertype, rest, cut);
    }
    Decoded::Bad(format!("more than {MAX_VLAN_TAGS} VLAN tags"))
}

fn by_ethertype(ethertype: u16, rest: &[u8], cut: u64) -> Decoded<'_> {
    match ethertype {
        ETHERTYPE_IPV4 => ipv4(rest, cut),
        ETHERTYPE_IPV6 => ipv6(rest, cut),
        _ => Decoded::NotTcp,
    }
}

/// BSD loopback: the address family is in the capturing host's byte order, so both readings
/// are tried (`le` and `be`); AF_INET is 2 everywhere, AF_INET6 is 24, 28 or 30 depending on
/// the system.
fn by_family(le: u32, be: u32, rest: &[u8], cut: u64) -> Decoded<'_> {
    let family = |af: u32| match af {
        2 => Some(4),
        24 | 28 | 30 => Some(6),
        _ => None,
    };
    match family(le).or(family(be)) {
        Some(4) => ipv4(rest, cut),
        Some(_) => ipv6(rest, cut),
        None => Decoded::NotTcp,
    }
}

/// The IP payload as captured, and how many of its bytes the capture cut off. `declared` is the
/// payload length the IP header gives (None when it gives none: 0, as segmentation offload
/// writes it).
fn ip_payload(rest: &[u8], declared: Option<usize>, cut: u64) -> Result<(&[u8], u64), String> {
    match declared {
        None => Ok((rest, cut)),
        Some(len) if len <= rest.len() => Ok((&rest[..len], 0)),
        Some(len) if cut > 0 => {
            let short = u64::try_from(len - rest.len()).unwrap_or(u64::MAX);
            Ok((rest, short.min(cut)))
        }
        Some(len) => Err(format!(
            "IP length says {len} payload bytes but the packet has {}",
            rest.len()
        )),
    }
}

fn ipv4(p: &[u8], cut: u64) -> Decoded<'_> {
    let Some(&vihl) = p.first() else {
        return truncated("IPv4 header", cut);
    };
    if vihl >> 4 != 4 {
        return Decoded::Bad(format!("IPv4 header with IP version {}", vihl >> 4));
    }
    let ihl = usize::from(vihl & 0x0f) * 4;
    if ihl < 20 {
        return Decoded::Bad(format!("bad IPv4 header length {ihl}"));
    }
    let (Some(total), Some(header)) = (be16(p, 2), p.get(..ihl)) else {
        return truncated("IPv4 header", cut);
    };
    let total = usize::from(total);
    let declared = if total == 0 {
        None
    } else if total < ihl {
        return Decoded::Bad(format!(
            "bad IPv4 total length {total} (header length {ihl})"
        ));
    } else {
        Some(total - ihl)
    };
    let proto = header[9];
    let frag = u16::from_be_bytes([header[6], header[7]]);
    let more_fragments = frag & 0x2000 != 0;
    let frag_offset = frag & 0x1fff;
    if more_fragments || frag_offset != 0 {
        if proto != IPPROTO_TCP {
            return Decoded::NotTcp;
        }
        let id = u16::from_be_bytes([header[4], header[5]]);
        return Decoded::Bad(format!(
            "IPv4 fragment of a TCP packet (id {id:#06x}, offset {}, {}): fragments are not reassembled",
            u32::from(frag_offset) * 8,
            if more_fragments { "more follow" } else { "last" }
        ));
    }
    if proto != IPPROTO_TCP {
        return Decoded::NotTcp;
    }
    let src = IpAddr::V4(Ipv4Addr::new(
        header[12], header[13], header[14], header[15],
    ));
    let dst = IpAddr::V4(Ipv4Addr::new(
        header[16], header[17], header[18], header[19],
    ));
    match ip_payload(p.get(ihl..).unwrap_or(&[]), declared, cut) {
        Ok((segment, missing)) => tcp(src, dst, segment, missing),
        Err(message) => Decoded::Bad(message),
    }
}

fn ipv6(p: &[u8], cut: u64) -> Decoded<'_> {
    let Some(header) = p.get(..40) else {
        return truncated("IPv6 header", cut);
    };
    if header[0] >> 4 != 6 {
        return Decoded::Bad(format!("IPv6 header with IP version {}", header[0] >> 4));
    }
    let payload_len = usize::from(u16::from_be_bytes([header[4], header[5]]));
    let mut next = header[6];
    let mut addr = [0u8; 16];
    addr.copy_from_slice(&header[8..24]);
    let src = IpAddr::V6(Ipv6Addr::from(addr));
    addr.copy_from_slice(&header[24..40]);
    let dst = IpAddr::V6(Ipv6Addr::from(addr));
    // A payload length of 0 is a jumbogram or segmentation offload: the frame says the length.
    let declared = (payload_len != 0).then_some(payload_len);
    let (mut rest, missing) = match ip_payload(&p[40..], declared, cut) {
        Ok(v) => v,
        Err(message) => return Decoded::Bad(message),
    };
    // Up to MAX_IPV6_EXTENSIONS headers, then the upper layer: one pass more than headers.
    for _ in 0..=MAX_IPV6_EXTENSIONS {
        match next {
            IPPROTO_TCP => return tcp(src, dst, rest, missing),
            // Hop-by-hop options, routing, destination options: length in 8-octet units, not
            // counting the first 8.
            0 | 43 | 60 => {
                let (Some(&nh), Some(&units)) = (rest.first(), rest.get(1)) else {
                    return truncated("IPv6 extension header", missing);
                };
                let len = (usize::from(units) + 1) * 8;
                let Some(after) = rest.get(len..) else {
                    return truncated("IPv6 extension header", missing);
                };
                next = nh;
                rest = after;
            }
            // Authentication header: length in 4-octet units, not counting the first 8.
            51 => {
                let (Some(&nh), Some(&units)) = (rest.first(), rest.get(1)) else {
                    return truncated("IPv6 authentication header", missing);
                };
                let len = (usize::from(units) + 2) * 4;
                let Some(after) = rest.get(len..) else {
                    return truncated("IPv6 authentication header", missing);
                };
                next = nh;
                rest = after;
            }
            44 => {
                let Some(fragment) = rest.get(..8) else {
                    return truncated("IPv6 fragment header", missing);
                };
                let nh = fragment[0];
                let off_m = u16::from_be_bytes([fragment[2], fragment[3]]);
                let offset = off_m >> 3;
                let more = off_m & 1 != 0;
                if offset == 0 && !more {
                    // An atomic fragment is a whole packet.
                    next = nh;
                    rest = &rest[8..];
                    continue;
                }
                if nh != IPPROTO_TCP {
                    return Decoded::NotTcp;
                }
                let id = u32::from_be_bytes([fragment[4], fragment[5], fragment[6], fragment[7]]);
                return Decoded::Bad(format!(
                    "IPv6 fragment of a TCP packet (id {id:#010x}, offset {}, {}): fragments are not reassembled",
                    u32::from(offset) * 8,
                    if more { "more follow" } else { "last" }
                ));
            }
            _ => return Decoded::NotTcp,
        }
    }
    Decoded::Bad(format!(
        "more than {MAX_IPV6_EXTENSIONS} IPv6 extension headers"
    ))
}

fn tcp(src: IpAddr, dst: IpAddr, segment: &[u8], missing: u64) -> Decoded<'_> {
    let (Some(sport), Some(dport), Some(seq), Some(ack), Some(&offset), Some(&flags)) = (
        be16(segment, 0),
        be16(segment, 2),
        be32(segment, 4),
        be32(segment, 8),
        segment.get(12),
        segment.get(13),
    ) else {
        return truncated("TCP header", missing);
    };
    let header_len = usize::from(offset >> 4) * 4;
    if header_len < 20 {
        return Decoded::Bad(format!("bad TCP header length {header_len}"));
    }
    let Some(payload) = segment.get(header_len..) else {
        return truncated("TCP header", missing);
    };
    Decoded::Tcp(Segment {
        src: Endpoint {
            ip: src,
            port: sport,
        },
        dst: Endpoint {
            ip: dst,
            port: dport,
        },
        seq,
        ack,
        flags,
        payload,
        missing,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_elect_leaders_testkit::pcap as w;

    /// Up to 16 extension headers are read; a 17th is refused. (A chain of exactly 16 was
    /// refused as "more than 16": the loop had no pass left to see the TCP header.)
    #[test]
    fn sixteen_ipv6_extension_headers_are_read_and_seventeen_are_not() {
        let segment = w::tcp(40000, 9092, 1, 0, w::ACK, &[], b"kafka");
        let packet = |headers: usize| {
            let extensions = vec![60u8; headers];
            w::ipv6([1; 16], [2; 16], &extensions, (0, false), 6, &segment)
        };
        for headers in [0, 1, 15, MAX_IPV6_EXTENSIONS] {
            match decode(LINKTYPE_IPV6, &packet(headers), 0) {
                Decoded::Tcp(s) => assert_eq!(s.payload, b"kafka", "{headers} headers"),
                other => panic!("{headers} headers: {other:?}"),
            }
        }
        match decode(LINKTYPE_IPV6, &packet(MAX_IPV6_EXTENSIONS + 1), 0) {
            Decoded::Bad(message) => {
                assert_eq!(message, "more than 16 IPv6 extension headers")
            }
            other => panic!("17 headers: {other:?}"),
        }
    }
}
