//! `dynamic-listen`: the listeners the guard opens, while it runs, for brokers that have no
//! route, one per node on port FIRST + node id, each forwarding to the address its broker
//! advertised.
//!
//! The one part of the address rewrite that binds sockets. The routes ask it for a node's
//! listener ([`DynamicListeners::listener_for`]) while an answer is rewritten, and get its
//! address with the listener already bound and handed to `Guard::run` ([`Opened`]), which
//! accepts on it: a client connects there as soon as the rewritten answer reaches it.
//! Not here: which brokers need a listener (`routes`), nor the answers (`rewrite`).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;

use crate::observability::diag::info;

/// Where the guard opens listeners for brokers that have no route
/// ([`Config::dynamic_listen`](crate::Config::dynamic_listen); in the configuration file,
/// `dynamic-listen = "IP:FIRST-LAST"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DynamicListen {
    /// The address the new listeners bind.
    pub ip: IpAddr,
    /// The listener of node N is on port `first + N`, at most `last`.
    pub first: u16,
    /// The last port a listener may have.
    pub last: u16,
}

impl DynamicListen {
    /// `IP:FIRST-LAST`, e.g. `0.0.0.0:19100-19199`.
    pub fn parse(text: &str) -> Result<DynamicListen, String> {
        let expected = || "expected IP:FIRST-LAST (e.g. 0.0.0.0:19100-19199)".to_owned();
        let (ip, ports) = text.rsplit_once(':').ok_or_else(expected)?;
        let ip = ip
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .map_err(|_| expected())?;
        let (first, last) = ports.split_once('-').ok_or_else(expected)?;
        let (first, last) = match (first.parse::<u16>(), last.parse::<u16>()) {
            (Ok(first), Ok(last)) if first >= 1 && first <= last => (first, last),
            _ => return Err(expected()),
        };
        Ok(DynamicListen { ip, first, last })
    }

    /// The port of node `node`'s listener, when it is in the range.
    fn port(&self, node: i32) -> Option<u16> {
        let port = i64::from(self.first) + i64::from(node);
        (node >= 0 && port <= i64::from(self.last)).then_some(port as u16)
    }
}

/// A listener the guard opened for a broker with no route: `Guard::run` accepts on it.
pub struct Opened {
    /// The listener, bound and non-blocking.
    pub listener: std::net::TcpListener,
    /// Its address.
    pub local: SocketAddr,
    /// The broker, as it advertised itself.
    pub host: String,
    /// Its port, as it advertised it.
    pub port: u16,
}

/// A broker's host and port, as it advertised them.
type Broker = (String, i32);

/// The listeners opened for brokers with no route, and where each goes to be accepted on.
pub(super) struct DynamicListeners {
    range: DynamicListen,
    /// Node id → the broker its listener forwards to, and the listener's address.
    opened: Mutex<HashMap<i32, (Broker, SocketAddr)>>,
    open: tokio::sync::mpsc::UnboundedSender<Opened>,
}

impl DynamicListeners {
    /// Listeners in `range`, each sent to `open` once bound.
    pub(super) fn new(
        range: DynamicListen,
        open: tokio::sync::mpsc::UnboundedSender<Opened>,
    ) -> DynamicListeners {
        DynamicListeners {
            range,
            opened: Mutex::new(HashMap::new()),
            open,
        }
    }

    /// The address node `node`'s listener has, or would have once opened, when the range
    /// has a port for it. Binds nothing.
    pub(super) fn address_of(&self, node: i32) -> Option<SocketAddr> {
        Some(SocketAddr::new(self.range.ip, self.range.port(node)?))
    }

    /// Whether a listener opened so far is at an address for which `matches` holds.
    pub(super) fn any_opened(&self, matches: impl Fn(SocketAddr) -> bool) -> bool {
        let opened = self.opened.lock().unwrap_or_else(|p| p.into_inner());
        opened.values().any(|(_, listen)| matches(*listen))
    }

    /// The listener for node `node` (a broker with no route, at `host:port` as it
    /// advertised itself), opened on first sight (port FIRST + node id) and handed to
    /// `Guard::run`: bound when this returns.
    pub(super) fn listener_for(
        &self,
        node: i32,
        host: &str,
        port: i32,
    ) -> Result<SocketAddr, String> {
        let mut opened = self.opened.lock().unwrap_or_else(|p| p.into_inner());
        let broker = (host.to_owned(), port);
        if let Some((to, listen)) = opened.get(&node) {
            if *to == broker {
                return Ok(*listen);
            }
            // The node moved: its listener keeps forwarding to the old address until a
            // restart. Say so rather than send clients to the wrong broker.
            return Err(format!(
                "node {node} moved from {}:{} to {host}:{port}; its listener (port {}) \
                 forwards to the old address until a restart",
                to.0,
                to.1,
                listen.port()
            ));
        }
        let listen_port = self.range.port(node).ok_or_else(|| {
            format!(
                "node id {node} has no port in dynamic-listen {}-{} (port = FIRST + node id)",
                self.range.first, self.range.last
            )
        })?;
        let broker_port = u16::try_from(port).map_err(|_| format!("port {port} is not a port"))?;
        let addr = SocketAddr::new(self.range.ip, listen_port);
        let listener = std::net::TcpListener::bind(addr)
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(|e| format!("cannot listen on {addr} for node {node}: {e}"))?;
        let local = listener.local_addr().unwrap_or(addr);
        self.open
            .send(Opened {
                listener,
                local,
                host: host.to_owned(),
                port: broker_port,
            })
            .map_err(|_| "the guard is stopping".to_owned())?;
        info(format_args!(
            "listening {local} for node {node} at {host}:{port} (dynamic-listen)"
        ));
        opened.insert(node, (broker, local));
        Ok(local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_as_written() {
        assert_eq!(
            DynamicListen::parse("0.0.0.0:19100-19199"),
            Ok(DynamicListen {
                ip: IpAddr::from([0, 0, 0, 0]),
                first: 19100,
                last: 19199,
            })
        );
        let v6 = DynamicListen::parse("[::1]:5-5").unwrap();
        assert_eq!((v6.ip, v6.first, v6.last), ("::1".parse().unwrap(), 5, 5));
        for bad in [
            "0.0.0.0:19100",
            "0.0.0.0:0-5",
            "0.0.0.0:9-5",
            "0.0.0.0:5-65536",
            "broker:1-2",
            "19100-19199",
        ] {
            assert_eq!(
                DynamicListen::parse(bad),
                Err("expected IP:FIRST-LAST (e.g. 0.0.0.0:19100-19199)".to_owned()),
                "{bad}"
            );
        }
    }

    /// A node's listener is bound on port FIRST + node id and handed over once; asked
    /// again for the same broker, the same address, nothing bound again; a node that
    /// moved, or has no port in the range, gets none.
    #[test]
    fn each_node_gets_one_listener_bound_before_its_address_is_given() {
        // Two free ports, for nodes 0 and 1 (another process may take one meanwhile: then
        // the bind fails and says so).
        let first = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
            .min(u16::MAX - 1);
        let range = DynamicListen {
            ip: IpAddr::from([127, 0, 0, 1]),
            first,
            last: first + 1,
        };
        let (open, mut opened) = tokio::sync::mpsc::unbounded_channel();
        let listeners = DynamicListeners::new(range, open);
        let at = SocketAddr::new(range.ip, first);
        assert_eq!(listeners.address_of(0), Some(at));
        assert_eq!(listeners.address_of(2), None);
        assert_eq!(listeners.address_of(-1), None);
        assert!(!listeners.any_opened(|listen| listen == at));

        let listen = listeners.listener_for(0, "broker-0", 9092).unwrap();
        assert_eq!(listen, at);
        let handed = opened.try_recv().expect("handed to Guard::run");
        assert_eq!(handed.local, at);
        assert_eq!((handed.host.as_str(), handed.port), ("broker-0", 9092));
        // Bound before the address was given: a client can connect at once.
        std::net::TcpStream::connect(at).expect("the listener is bound");
        assert!(listeners.any_opened(|listen| listen == at));

        assert_eq!(listeners.listener_for(0, "broker-0", 9092), Ok(at));
        assert!(opened.try_recv().is_err(), "bound once");
        assert_eq!(
            listeners.listener_for(0, "broker-9", 9092),
            Err(format!(
                "node 0 moved from broker-0:9092 to broker-9:9092; its listener (port {first}) \
                 forwards to the old address until a restart"
            ))
        );
        assert_eq!(
            listeners.listener_for(2, "broker-2", 9092),
            Err(format!(
                "node id 2 has no port in dynamic-listen {first}-{} (port = FIRST + node id)",
                first + 1
            ))
        );
        assert!(opened.try_recv().is_err());
    }
}
