//! Which of the guard's listeners fronts a broker, for the rewrite: the routes (a
//! `route.listen` in front of each `route.upstream`), the guard's other listening addresses
//! (which no broker's may be), the listener `dynamic-listen` opens for a broker with no
//! route (asked of `listeners`), the host clients are told, and the warnings, once per
//! broker, for brokers left as they advertise themselves.
//!
//! Not here: reading and writing the answers (`rewrite`), binding sockets (`listeners`).

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;

use super::listeners::{DynamicListen, DynamicListeners, Opened};
use crate::observability::audit::ConnInfo;
use crate::observability::diag::log;

/// How many distinct unpaired brokers are remembered, so that each is warned about once;
/// past it (a broker answering with ever new addresses) no more warnings.
const WARNED_MAX: usize = 1024;

/// One route: a broker and the listener in front of it.
#[derive(Clone, Debug)]
struct Pair {
    upstream: SocketAddr,
    /// The broker's host as written in its `route.upstream`, lowercased, when not an IP
    /// address.
    name: Option<String>,
    listen: SocketAddr,
    /// What clients are told for this listener instead (`[[route]] advertise`: a load
    /// balancer's address for this broker).
    advertise: Option<(String, u16)>,
}

/// What the rewrite needs: the routes, and where to open listeners for the others.
pub struct Routes {
    pairs: Vec<Pair>,
    /// The guard's other listening addresses (the metrics listener): never a broker's.
    others: Vec<(SocketAddr, &'static str)>,
    advertise_host: Option<String>,
    dynamic: Option<DynamicListeners>,
    /// Unpaired brokers already warned about.
    warned: Mutex<HashSet<(String, i32)>>,
}

impl Routes {
    /// `routes`: (the listener as bound, the broker, its host name as written).
    pub fn new(
        routes: impl IntoIterator<Item = (SocketAddr, SocketAddr, Option<String>)>,
        advertise_host: Option<String>,
        dynamic: Option<(DynamicListen, tokio::sync::mpsc::UnboundedSender<Opened>)>,
    ) -> Routes {
        Routes {
            pairs: routes
                .into_iter()
                .map(|(listen, upstream, name)| Pair {
                    upstream,
                    name: name.map(|n| n.to_ascii_lowercase()),
                    listen,
                    advertise: None,
                })
                .collect(),
            others: Vec::new(),
            advertise_host,
            dynamic: dynamic.map(|(range, open)| DynamicListeners::new(range, open)),
            warned: Mutex::new(HashSet::new()),
        }
    }

    /// These routes with the address clients are told for each listener in `advertised`
    /// (a load balancer's, per broker) in place of the listener's own.
    pub fn advertising(mut self, advertised: &[(SocketAddr, String, u16)]) -> Routes {
        for pair in &mut self.pairs {
            if let Some((_, host, port)) = advertised.iter().find(|(l, _, _)| *l == pair.listen) {
                pair.advertise = Some((host.clone(), *port));
            }
        }
        self
    }

    /// These addresses with `listen` among the guard's own listening addresses, under the
    /// setting `option` that made it (`metrics-listen`): no broker address may be one.
    pub fn also_listening(mut self, listen: SocketAddr, option: &'static str) -> Routes {
        self.others.push((listen, option));
        self
    }

    /// The first of the guard's listening addresses (its routes' listeners, the others
    /// given by [`Routes::also_listening`], the listeners opened for brokers with no
    /// route) for which `matches` holds, by the option that made it.
    fn own(&self, matches: impl Fn(SocketAddr) -> bool) -> Option<&'static str> {
        if self.pairs.iter().any(|p| matches(p.listen)) {
            return Some("route.listen");
        }
        if let Some(&(_, option)) = self.others.iter().find(|(listen, _)| matches(*listen)) {
            return Some(option);
        }
        self.dynamic
            .as_ref()?
            .any_opened(matches)
            .then_some("dynamic-listen")
    }

    /// The option of the guard's listener at `addr` (a broker's address, resolved), if it
    /// is one: the same port and the same IP, or for a listener on an unspecified address
    /// (`0.0.0.0`, `::`) any address of this host: its loopback, `reached` (the address
    /// the client reached) or any other the host can bind. Checked before a listener
    /// opened for a broker connects to it: the guard never connects to itself.
    pub(crate) fn own_listener(&self, addr: SocketAddr, reached: IpAddr) -> Option<&'static str> {
        self.own(|listen| {
            listen.port() != 0
                && listen.port() == addr.port()
                && same_host(listen.ip(), addr.ip(), Some(reached), true)
        })
    }

    /// Whether there is nothing to rewrite to: no route, no `dynamic-listen` (a guard
    /// embedded without routes, the conn fuzz target).
    pub(super) fn rewrites_nothing(&self) -> bool {
        self.pairs.is_empty() && self.dynamic.is_none()
    }

    /// What clients are told for the broker `node` at `host:port`: the host and port of
    /// the listener in front of it, if the guard has one or opens one; otherwise None,
    /// with a warning (once per broker).
    pub(super) fn address_for(
        &self,
        node: i32,
        host: &str,
        port: i32,
        conn: &ConnInfo,
    ) -> Option<(String, u16)> {
        let listen = self.listener_for(node, host, port, conn)?;
        Some(self.advertised(listen, conn))
    }

    /// The listener in front of the broker `node` at `host:port`, if the guard has one or
    /// opens one; otherwise a warning (once per broker).
    fn listener_for(
        &self,
        node: i32,
        host: &str,
        port: i32,
        conn: &ConnInfo,
    ) -> Option<SocketAddr> {
        if let Some(listen) = self.route_for(host, port) {
            return Some(listen);
        }
        let ip = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .ok();
        // One of the guard's own listening addresses: by its IP (names are not resolved
        // here), or by the name clients are told for the guard.
        let told = self
            .advertise_host
            .as_deref()
            .is_some_and(|h| h.eq_ignore_ascii_case(host));
        let is_own = |listen: SocketAddr| {
            listen.port() != 0
                && i32::from(listen.port()) == port
                && (told
                    || ip
                        .is_some_and(|ip| same_host(listen.ip(), ip, Some(conn.local.ip()), false)))
        };
        // Or the address the listener for it would have: it would forward to itself.
        let would_be = self.dynamic.as_ref().and_then(|d| {
            let listen = d.address_of(node)?;
            is_own(listen).then_some("dynamic-listen: its own listener's address")
        });
        match self.own(is_own).or(would_be) {
            // A route's listener: a broker that advertises the guard's address (the older
            // way to deploy it). Clients that connect there reach that route: nothing to do.
            Some("route.listen") => return None,
            // Any other: a listener opened for it would forward to the guard itself, and
            // each connection through it would open another.
            Some(option) => {
                if self.first_warning(host, port) {
                    log(format_args!(
                        "{} -> {}: broker {host}:{port} (node {node}) advertises an address of \
                         the guard's own ({option}): no listener is opened for it, as it \
                         would forward to the guard itself; left as the broker advertises it",
                        conn.client, conn.upstream
                    ));
                }
                return None;
            }
            None => {}
        }
        if let Some(dynamic) = &self.dynamic {
            match dynamic.listener_for(node, host, port) {
                Ok(listen) => return Some(listen),
                Err(e) => self.warn(host, port, conn, &e),
            }
            return None;
        }
        self.warn(
            host,
            port,
            conn,
            "no route.upstream is this broker and there is no dynamic-listen",
        );
        None
    }

    /// The listener of the route whose upstream is `host:port` (the host as written for
    /// it, case aside, or its IP address), if there is one.
    fn route_for(&self, host: &str, port: i32) -> Option<SocketAddr> {
        let lower = host.to_ascii_lowercase();
        let ip = lower
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .ok();
        let is = |addr: SocketAddr, name: Option<&str>| {
            i32::from(addr.port()) == port && (ip == Some(addr.ip()) || name == Some(&lower))
        };
        self.pairs
            .iter()
            .find(|p| is(p.upstream, p.name.as_deref()))
            .map(|p| p.listen)
    }

    /// What clients are told for the address `host:port` when it is a route's upstream:
    /// the host and port of that route's listener. Routes only: no listener is opened for
    /// it and nothing is said when there is none (a controller's listener, which the guard
    /// does not front).
    pub(super) fn routed_address(
        &self,
        host: &str,
        port: i32,
        conn: &ConnInfo,
    ) -> Option<(String, u16)> {
        let listen = self.route_for(host, port)?;
        Some(self.advertised(listen, conn))
    }

    /// Whether the broker at `host:port` is warned about for the first time (at most
    /// [`WARNED_MAX`] brokers are remembered; the other things said once, the answers of a
    /// version too new to read and the controllers' listeners left out, count among them).
    pub(super) fn first_warning(&self, host: &str, port: i32) -> bool {
        let mut warned = self.warned.lock().unwrap_or_else(|p| p.into_inner());
        warned.len() < WARNED_MAX && warned.insert((host.to_owned(), port))
    }

    fn warn(&self, host: &str, port: i32, conn: &ConnInfo, why: &str) {
        if !self.first_warning(host, port) {
            return;
        }
        log(format_args!(
            "{} -> {}: broker {host}:{port} left as the broker advertises it ({why}): clients \
             that connect to it go around the guard",
            conn.client, conn.upstream
        ));
    }

    /// The host and port clients are told for `listen`: its route's `advertise`, or the
    /// advertised host and the listener's port.
    fn advertised(&self, listen: SocketAddr, conn: &ConnInfo) -> (String, u16) {
        let routed = self.pairs.iter().find(|p| p.listen == listen);
        match routed.and_then(|p| p.advertise.clone()) {
            Some(advertised) => advertised,
            None => (self.advertised_host(listen, conn), listen.port()),
        }
    }

    /// The host clients are told for `listen`.
    fn advertised_host(&self, listen: SocketAddr, conn: &ConnInfo) -> String {
        if let Some(host) = &self.advertise_host {
            return host.clone();
        }
        let ip = if listen.ip().is_unspecified() {
            conn.local.ip()
        } else {
            listen.ip()
        };
        ip.to_string()
    }
}

/// Whether a connection to `ip` reaches a listener on `listen` (on the same port): the same
/// address (an IPv4-mapped IPv6 address as its IPv4 one); `0.0.0.0` or `::`, which Linux
/// connects to its loopback; or, for a listener on an unspecified address (`0.0.0.0`
/// takes every IPv4 address of the host, `::` every address of both families), an address
/// of this host: its loopback, `reached` (an address a client reached the guard on) and,
/// when `probe`, any address the host can bind (a UDP socket bound to it: a system call,
/// made only for a port that is the guard's).
pub(crate) fn same_host(listen: IpAddr, ip: IpAddr, reached: Option<IpAddr>, probe: bool) -> bool {
    let listen = listen.to_canonical();
    let ip = match ip.to_canonical() {
        IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
        IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    if ip == listen {
        return true;
    }
    listen.is_unspecified()
        && (listen.is_ipv6() || ip.is_ipv4())
        && (ip.is_loopback()
            || reached.is_some_and(|r| r.to_canonical() == ip)
            || (probe && std::net::UdpSocket::bind((ip, 0)).is_ok()))
}

#[cfg(test)]
pub(super) mod tests {
    use bytes::{BufMut, BytesMut};
    use kafka_protocol::messages::metadata_response::MetadataResponseBroker;
    use kafka_protocol::messages::{BrokerId, MetadataResponse, ResponseHeader};
    use kafka_protocol::protocol::{Encodable, HeaderVersion, StrBytes};

    use super::*;
    use crate::filters::addresses::METADATA;

    /// One route, 127.0.0.1:19092 to the broker at 10.0.0.1:9092, and a client of it.
    pub(in crate::filters::addresses) fn one_route() -> (Routes, ConnInfo) {
        let upstream: SocketAddr = "10.0.0.1:9092".parse().unwrap();
        let listen: SocketAddr = "127.0.0.1:19092".parse().unwrap();
        let addresses = Routes::new([(listen, upstream, None)], None, None);
        let conn = ConnInfo {
            client: "127.0.0.1:50000".parse().unwrap(),
            listener: listen,
            local: listen,
            upstream,
        };
        (addresses, conn)
    }

    /// A broker that answers with ever new addresses the guard has no route for: each is
    /// warned about once, and what is remembered for that stops at WARNED_MAX, however many
    /// answers come.
    #[test]
    fn unrouted_brokers_remembered_for_warnings_are_bounded() {
        const VERSION: i16 = 12;
        let (addresses, conn) = one_route();
        let header_version = MetadataResponse::header_version(VERSION);
        let mut node = 0;
        for _ in 0..3 {
            let mut answer = MetadataResponse::default();
            answer.brokers = (0..WARNED_MAX)
                .map(|_| {
                    node += 1;
                    MetadataResponseBroker::default()
                        .with_node_id(BrokerId(node))
                        .with_host(StrBytes::from_string(format!("broker-{node}.example")))
                        .with_port(9092)
                })
                .collect();
            let mut frame = BytesMut::new();
            frame.put_i32(0);
            ResponseHeader::default()
                .encode(&mut frame, header_version)
                .unwrap();
            answer.encode(&mut frame, VERSION).unwrap();
            let size = (frame.len() - 4) as i32;
            frame[..4].copy_from_slice(&size.to_be_bytes());
            let frame = frame.freeze();
            // Nothing to rewrite (no broker is the route's), so the answer goes as it is.
            let _ = addresses.rewrite(&frame, METADATA, VERSION, &conn);
            let warned = addresses.warned.lock().unwrap().len();
            assert!(warned > 0, "no broker was remembered as warned about");
            assert!(warned <= WARNED_MAX, "{warned} remembered");
        }
        assert_eq!(addresses.warned.lock().unwrap().len(), WARNED_MAX);
    }

    /// Which addresses reach a listener (on the same port): the same one; for a listener
    /// on `0.0.0.0` or `::`, loopback, the address a client reached and, probed, any
    /// address this host can bind; `0.0.0.0` and `::` themselves, which connect to
    /// loopback. Not an address of another host, nor another loopback address for a
    /// listener on 127.0.0.1.
    #[test]
    fn same_host_matches_what_reaches_the_listener() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let reached = Some(ip("10.9.8.7"));
        for (listen, to, probe, same) in [
            ("127.0.0.1", "127.0.0.1", false, true),
            ("127.0.0.1", "::ffff:127.0.0.1", false, true),
            ("127.0.0.1", "0.0.0.0", false, true),
            ("::1", "::", false, true),
            ("127.0.0.1", "127.0.0.2", false, false),
            ("127.0.0.1", "10.9.8.7", false, false),
            ("10.9.8.7", "10.9.8.7", false, true),
            ("0.0.0.0", "127.0.0.1", false, true),
            ("0.0.0.0", "127.3.2.1", false, true),
            ("0.0.0.0", "::1", false, false),
            ("0.0.0.0", "::ffff:127.0.0.1", false, true),
            ("::", "127.0.0.1", false, true),
            ("0.0.0.0", "10.9.8.7", false, true),
            ("0.0.0.0", "0.0.0.0", false, true),
            // TEST-NET-1: never an address of this host.
            ("0.0.0.0", "192.0.2.1", false, false),
            ("0.0.0.0", "192.0.2.1", true, false),
            ("::", "2001:db8::1", true, false),
        ] {
            assert_eq!(
                same_host(ip(listen), ip(to), reached, probe),
                same,
                "{to} reaching {listen} (probe: {probe})"
            );
        }
    }
}
