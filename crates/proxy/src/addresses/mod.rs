//! Broker addresses rewritten in the answers that carry them, so that clients stay on the
//! guard after bootstrap without the brokers advertising the guard's addresses.
//!
//! Three answers carry broker addresses: Metadata (its `brokers`), FindCoordinator (the
//! coordinator, or `coordinators` from v4) and DescribeCluster (its `brokers`). The guard
//! decodes their entries one at a time with the `kafka-protocol` crate, replaces each
//! address that is a route's [`upstream`](crate::Route::upstream) with that route's
//! [`listen`](crate::Route::listen), and encodes the entry again; what follows the list
//! goes to the client from the broker's frame, not decoded and not copied ([`Rewritten`]).
//! Beyond the answer, a rewrite holds the rewritten list and one entry at a time, never the
//! answer decoded whole. These answers are off the hot path (a client asks for them at
//! bootstrap and after a change), and their version tables change with Kafka's releases: a
//! well-kept codec beats writing a second one here. ElectLeaders stays on this crate's own
//! codec.
//!
//! - A broker address matches a route's upstream when the ports are equal and the host is
//!   the one written for it ([`Config::upstream_names`], case aside) or its IP address.
//!   Host names are not resolved: write each `route.upstream` as the brokers advertise
//!   themselves.
//! - What replaces it: the listener's address; for a listener on an unspecified address
//!   (`0.0.0.0`, `::`), [`Config::advertise_host`] if given, else the address the client
//!   reached the guard on.
//! - A broker with no route: with [`Config::dynamic_listen`] (`IP:FIRST-LAST`) the guard
//!   opens a listener of its own for it on port FIRST + node id (stable across restarts),
//!   which forwards to the address the broker advertised; without it the address is left as
//!   it is, with one warning naming the broker (clients then go around the guard to it).
//!   An address that is already one of the guard's route listeners is left as it is,
//!   quietly (brokers that advertise the guard's addresses, the older way to deploy it).
//! - The guard never forwards to itself. A broker that advertises another of the guard's
//!   own listening addresses (the metrics listener, a listener opened for a broker, or the
//!   very address its own listener would have: port FIRST + its node id) gets no listener,
//!   which would forward to the guard itself, each connection through it opening another
//!   until [`Config::max_connections`]. Its entry is left as it advertised it, with one
//!   warning: a client that connects there reaches the guard, or nothing. An address is the
//!   guard's when its port is a listener's and its IP that listener's, or, for a listener
//!   on `0.0.0.0` or `::`, a loopback address or the one the client reached; host names are
//!   not resolved here, but [`Config::advertise_host`] is the guard's. A listener opened
//!   for a broker resolves the broker's address for each client, and closes the client with
//!   a log line when that address is one of the guard's listeners (then any address this
//!   host can bind counts for `0.0.0.0`: `Addresses::own_listener`). A route whose upstream
//!   is one of the guard's listeners is refused at start
//!   ([`crate::Config::forwarding_to_itself`]).
//! - An answer that cannot be decoded (a version newer than the crate knows, bytes that do
//!   not parse, bytes left over) is forwarded unchanged with a warning: failing open is
//!   safe here, as it loses only the rewrite.
//!
//! The parts:
//!
//! - `rewrite`: the three answers read, their addresses replaced and the entries written
//!   again ([`Addresses::rewrite`], [`Rewritten`]); it binds nothing, and asks the routes
//!   what each broker's address becomes;
//! - `routes`: which of the guard's listeners fronts a broker ([`Addresses`]: the routes,
//!   the guard's other listening addresses, the warnings for brokers left as they are);
//! - `listeners`: the listeners [`Config::dynamic_listen`] opens for brokers with no route
//!   ([`DynamicListen`], [`Opened`]), the only part that binds a socket. A listener is
//!   bound before the answer that names it reaches the client, which may connect at once.
//!
//! [`Config::upstream_names`]: crate::Config::upstream_names
//! [`Config::advertise_host`]: crate::Config::advertise_host
//! [`Config::dynamic_listen`]: crate::Config::dynamic_listen
//! [`Config::max_connections`]: crate::Config::max_connections

mod listeners;
mod rewrite;
mod routes;

pub use listeners::{DynamicListen, Opened};
pub use rewrite::{Rewritten, DESCRIBE_CLUSTER, FIND_COORDINATOR, METADATA};
pub(crate) use routes::same_host;
pub use routes::Addresses;
