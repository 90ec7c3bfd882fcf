//! Counters kept per client address, shared by all of that client's connections: what the
//! audit queue's shares and the budget's reserve are counted in, so that a client cannot
//! take more by opening more connections.
//!
//! A client is an IPv4 address, or an IPv6 address's /64 (one host is handed a /64; an
//! IPv4-mapped address counts as its IPv4 address) ([`client_key`]).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, Weak};

/// The client an address belongs to: an IPv4 address itself, an IPv6 address's /64
/// (IPv4-mapped ones as IPv4).
pub(crate) fn client_key(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

/// One counter (a `T`) per client with a connection open. A counter lives as long as a
/// connection holds it; the map keeps only weak references, pruned as clients go.
#[derive(Debug)]
pub(crate) struct PerClient<T = AtomicUsize> {
    counters: Mutex<Counters<T>>,
}

impl<T> Default for PerClient<T> {
    fn default() -> Self {
        PerClient {
            counters: Mutex::new(Counters {
                by_client: HashMap::new(),
                prune_at: 0,
            }),
        }
    }
}

#[derive(Debug)]
struct Counters<T> {
    by_client: HashMap<IpAddr, Weak<T>>,
    /// Entries of clients gone are dropped when the map reaches this many.
    prune_at: usize,
}

impl<T: Default> PerClient<T> {
    /// The counter of `address`'s client, shared with its other connections open.
    pub(crate) fn counter(&self, address: IpAddr) -> Arc<T> {
        let key = client_key(address);
        // A counter map is whole whatever a panicking holder did: go on with it.
        let mut counters = match self.counters.lock() {
            Ok(counters) => counters,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(counter) = counters.by_client.get(&key).and_then(Weak::upgrade) {
            return counter;
        }
        if counters.by_client.len() >= counters.prune_at {
            // Amortised: the map is at most twice the clients with a connection open.
            counters.by_client.retain(|_, c| c.strong_count() > 0);
            counters.prune_at = (2 * counters.by_client.len()).max(64);
        }
        let counter = Arc::new(T::default());
        counters.by_client.insert(key, Arc::downgrade(&counter));
        counter
    }

    /// Clients in the map, gone ones not yet pruned included.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        match self.counters.lock() {
            Ok(counters) => counters.by_client.len(),
            Err(poisoned) => poisoned.into_inner().by_client.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_is_an_address_or_a_slash_64() {
        let key = |a: &str| client_key(a.parse().unwrap());
        assert_eq!(key("10.0.0.1"), key("10.0.0.1"));
        assert_ne!(key("10.0.0.1"), key("10.0.0.2"));
        assert_eq!(key("2001:db8:1:2::1"), key("2001:db8:1:2:ffff::9"));
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
        assert_eq!(key("::ffff:10.0.0.1"), key("10.0.0.1"));
    }

    #[test]
    fn connections_of_one_client_share_a_counter_and_gone_ones_are_pruned() {
        let clients = PerClient::<AtomicUsize>::default();
        let a = clients.counter("10.0.0.1".parse().unwrap());
        let b = clients.counter("10.0.0.1".parse().unwrap());
        assert!(Arc::ptr_eq(&a, &b));
        drop((a, b));
        for i in 0..200u32 {
            drop(clients.counter(IpAddr::V4(i.into())));
        }
        assert!(clients.len() <= 128, "{}", clients.len());
    }
}
