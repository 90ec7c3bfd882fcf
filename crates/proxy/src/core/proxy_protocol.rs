//! The PROXY protocol (HAProxy's, versions 1 and 2) on the guard's listeners: a load
//! balancer in front of several guards (HAProxy, an AWS NLB, a Kubernetes Service with
//! `externalTrafficPolicy: Cluster`) opens each connection itself, so the guard sees the
//! balancer's address; with the PROXY protocol, the balancer's first bytes name the
//! client's own address, and the rules, the audit, the per-client budgets and paces see
//! the client.
//!
//! Accepted only from the sources the operator lists
//! ([`Config::proxy_protocol_from`](crate::Config::proxy_protocol_from)): a connection from
//! one of them must begin with a header (or it is closed), and its client is the header's
//! source address; a `LOCAL` header (the balancer's own health check) keeps the
//! connection's address. A connection from any other source is taken as it is, and a
//! header it sends is not read as one: its first bytes are then a Kafka size prefix of
//! about 1.3 GB, refused, and the connection closed, so a client cannot choose its own
//! address.
//!
//! The header is read exactly, never past its end: version 2's 16 fixed bytes then the
//! length they give (at most [`MAX_V2_PAYLOAD`]), version 1's line byte by byte up to its
//! CRLF (at most 107 bytes, as the specification bounds it); the parsing is the `ppp`
//! crate's. The first Kafka (or TLS) byte stays in the socket for what comes next.

use std::net::{IpAddr, SocketAddr};

use ipnet::IpNet;
use ppp::v2;
use tokio::io::{AsyncRead, AsyncReadExt};

/// The longest version 2 payload read (addresses and TLVs): HAProxy's headers are under 300
/// bytes; a longer one is refused rather than read.
pub const MAX_V2_PAYLOAD: usize = 4096;

/// Version 1's longest line, CRLF included (the specification's bound).
const MAX_V1: usize = 107;

/// Version 2's signature.
const V2_SIGNATURE: &[u8; 12] = b"\r\n\r\n\0\r\nQUIT\n";

/// The sources whose connections begin with a PROXY header.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trusted(Vec<IpNet>);

impl Trusted {
    /// The sources in `ranges` (an address is a range of one).
    pub fn new(ranges: Vec<IpNet>) -> Trusted {
        Trusted(ranges)
    }

    /// Whether a connection from `peer` begins with a header.
    pub fn trusts(&self, peer: IpAddr) -> bool {
        let peer = peer.to_canonical();
        self.0.iter().any(|range| range.contains(&peer))
    }
}

/// Parses a source range of the setting: `10.0.0.0/8`, `2001:db8::/32`, or an address
/// alone.
pub fn parse_range(text: &str) -> Result<IpNet, String> {
    let text = text.trim();
    if let Ok(range) = text.parse::<IpNet>() {
        return Ok(range.trunc());
    }
    text.parse::<IpAddr>()
        .map(IpNet::from)
        .map_err(|_| format!("expected an address or a range such as 10.0.0.0/8, not {text:?}"))
}

/// What a header said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Header {
    /// A proxied connection: the client's own address.
    Proxied(SocketAddr),
    /// The balancer's own connection (version 2 `LOCAL`, version 1 `UNKNOWN`): the
    /// connection's address stands.
    Local,
}

/// Reads one header from `stream`, and no byte past it.
pub async fn read_header<S: AsyncRead + Unpin>(stream: &mut S) -> Result<Header, String> {
    // Both versions are at least 15 bytes ("PROXY UNKNOWN\r\n"): 8 tell which it is.
    let mut head = [0u8; 16];
    stream
        .read_exact(&mut head[..8])
        .await
        .map_err(|e| format!("no PROXY header: {e}"))?;
    if head[..8] == V2_SIGNATURE[..8] {
        stream
            .read_exact(&mut head[8..])
            .await
            .map_err(|e| format!("a PROXY v2 header cut short: {e}"))?;
        if head[..12] != V2_SIGNATURE[..] {
            return Err("not a PROXY header (a bad version 2 signature)".into());
        }
        let len = usize::from(u16::from_be_bytes([head[14], head[15]]));
        if len > MAX_V2_PAYLOAD {
            return Err(format!(
                "a PROXY v2 header of {len} bytes after its 16 (at most {MAX_V2_PAYLOAD} are read)"
            ));
        }
        let mut whole = Vec::with_capacity(16 + len);
        whole.extend_from_slice(&head);
        whole.resize(16 + len, 0);
        stream
            .read_exact(&mut whole[16..])
            .await
            .map_err(|e| format!("a PROXY v2 header cut short: {e}"))?;
        let header =
            v2::Header::try_from(&whole[..]).map_err(|e| format!("a bad PROXY v2 header: {e}"))?;
        return Ok(match (header.command, header.addresses) {
            (v2::Command::Local, _) => Header::Local,
            (v2::Command::Proxy, v2::Addresses::IPv4(a)) => {
                Header::Proxied(SocketAddr::from((a.source_address, a.source_port)))
            }
            (v2::Command::Proxy, v2::Addresses::IPv6(a)) => {
                Header::Proxied(SocketAddr::from((a.source_address, a.source_port)))
            }
            (v2::Command::Proxy, v2::Addresses::Unspecified) => Header::Local,
            (v2::Command::Proxy, v2::Addresses::Unix(_)) => {
                return Err("a PROXY v2 header for a UNIX socket, not TCP".into())
            }
        });
    }
    if &head[..6] != b"PROXY " {
        return Err("no PROXY header where the load balancer must send one".into());
    }
    let mut line = Vec::with_capacity(MAX_V1);
    line.extend_from_slice(&head[..8]);
    while !line.ends_with(b"\r\n") {
        if line.len() == MAX_V1 {
            return Err(format!("a PROXY v1 line longer than {MAX_V1} bytes"));
        }
        let mut byte = [0u8];
        stream
            .read_exact(&mut byte)
            .await
            .map_err(|e| format!("a PROXY v1 line cut short: {e}"))?;
        line.push(byte[0]);
    }
    let header =
        ppp::v1::Header::try_from(&line[..]).map_err(|e| format!("a bad PROXY v1 line: {e}"))?;
    Ok(match header.addresses {
        ppp::v1::Addresses::Unknown => Header::Local,
        ppp::v1::Addresses::Tcp4(a) => {
            Header::Proxied(SocketAddr::from((a.source_address, a.source_port)))
        }
        ppp::v1::Addresses::Tcp6(a) => {
            Header::Proxied(SocketAddr::from((a.source_address, a.source_port)))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read(bytes: &[u8]) -> (Result<Header, String>, Vec<u8>) {
        let mut input = bytes;
        let header = read_header(&mut input).await;
        (header, input.to_vec())
    }

    fn v2(command: u8, family: u8, addresses: &[u8]) -> Vec<u8> {
        let mut h = V2_SIGNATURE.to_vec();
        h.push(0x20 | command);
        h.push(family);
        h.extend((addresses.len() as u16).to_be_bytes());
        h.extend_from_slice(addresses);
        h
    }

    #[tokio::test]
    async fn version_1_gives_the_client_and_leaves_the_next_bytes() {
        let (header, rest) = read(b"PROXY TCP4 192.0.2.7 10.0.0.1 51000 19092\r\n\0\0\0\x10").await;
        assert_eq!(
            header,
            Ok(Header::Proxied("192.0.2.7:51000".parse().unwrap()))
        );
        assert_eq!(rest, b"\0\0\0\x10");
        let (header, _) = read(b"PROXY TCP6 2001:db8::7 2001:db8::1 51000 19092\r\n").await;
        assert_eq!(
            header,
            Ok(Header::Proxied("[2001:db8::7]:51000".parse().unwrap()))
        );
        let (header, rest) = read(b"PROXY UNKNOWN\r\nX").await;
        assert_eq!(header, Ok(Header::Local));
        assert_eq!(rest, b"X");
    }

    #[tokio::test]
    async fn version_2_gives_the_client_and_leaves_the_next_bytes() {
        // PROXY, TCP over IPv4: source 192.0.2.7:51000, destination 10.0.0.1:19092, and a
        // TLV (type 4, NOOP, 3 bytes).
        let mut addresses = vec![192, 0, 2, 7, 10, 0, 0, 1];
        addresses.extend(51000u16.to_be_bytes());
        addresses.extend(19092u16.to_be_bytes());
        addresses.extend([4, 0, 3, 0, 0, 0]);
        let mut bytes = v2(1, 0x11, &addresses);
        bytes.extend(b"\0\0\0\x10");
        let (header, rest) = read(&bytes).await;
        assert_eq!(
            header,
            Ok(Header::Proxied("192.0.2.7:51000".parse().unwrap()))
        );
        assert_eq!(rest, b"\0\0\0\x10");
        // LOCAL: a health check.
        let (header, rest) = read(&[v2(0, 0, &[]), b"K".to_vec()].concat()).await;
        assert_eq!(header, Ok(Header::Local));
        assert_eq!(rest, b"K");
    }

    #[tokio::test]
    async fn what_is_not_a_header_is_refused_naming_why() {
        // A Kafka frame where a header must be.
        let (header, _) = read(b"\0\0\0\x10\0\x12\0\0\0\0\0\x01\xff\xff\0\0").await;
        assert!(header.unwrap_err().contains("no PROXY header"));
        // Cut short.
        let (header, _) = read(b"PROXY TCP4 192.0.2.7").await;
        assert!(header.unwrap_err().contains("cut short"));
        // A v1 line with no end.
        let long = [b"PROXY TCP4 ".as_slice(), &[b'1'; 200]].concat();
        let (header, _) = read(&long).await;
        assert!(header.unwrap_err().contains("longer than 107"));
        // A v2 header announcing more than is read.
        let mut huge = V2_SIGNATURE.to_vec();
        huge.extend([0x21, 0x11, 0xff, 0xff]);
        let (header, _) = read(&huge).await;
        assert!(header.unwrap_err().contains("at most 4096"));
        // A bad v1 address.
        let (header, _) = read(b"PROXY TCP4 999.0.2.7 10.0.0.1 1 2\r\n").await;
        assert!(header.unwrap_err().contains("bad PROXY v1"));
    }

    #[test]
    fn only_listed_sources_are_trusted() {
        let trusted = Trusted::new(vec![
            parse_range("10.0.0.0/8").unwrap(),
            parse_range("192.0.2.7").unwrap(),
            parse_range("2001:db8::/32").unwrap(),
        ]);
        assert!(trusted.trusts("10.1.2.3".parse().unwrap()));
        assert!(trusted.trusts("::ffff:10.1.2.3".parse().unwrap()));
        assert!(trusted.trusts("192.0.2.7".parse().unwrap()));
        assert!(!trusted.trusts("192.0.2.8".parse().unwrap()));
        assert!(trusted.trusts("2001:db8:1::1".parse().unwrap()));
        assert!(!trusted.trusts("2001:db9::1".parse().unwrap()));
        assert!(!Trusted::default().trusts("10.1.2.3".parse().unwrap()));
        assert!(parse_range("10.0.0.0/33").is_err());
        assert!(parse_range("example.com")
            .unwrap_err()
            .contains("10.0.0.0/8"));
        assert_eq!(parse_range("10.1.2.3/8").unwrap().to_string(), "10.0.0.0/8");
    }
}
