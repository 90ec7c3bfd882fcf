//! Broker addresses rewritten in the answers that carry them, so that clients stay on the
//! guard after bootstrap without the brokers advertising the guard's addresses.
//!
//! These answers carry broker addresses:
//!
//! - Metadata (its `brokers`), FindCoordinator (the coordinator, or `coordinators` from v4)
//!   and DescribeCluster (its `brokers`): lists at the head of the answer;
//! - Produce from v10 and Fetch from v16 (KIP-951: `node_endpoints`, a tagged field at the
//!   answer's end, the new leaders of partitions that moved), ShareFetch and
//!   ShareAcknowledge (`node_endpoints`, a field of every version): behind the topics and
//!   their records. Older Produce and Fetch answers have none and are not read at all;
//! - DescribeQuorum from v2 (`nodes`: each controller's `listeners`).
//!
//! For the first three, the guard
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
//!   host can bind counts for `0.0.0.0`: `Routes::own_listener`). A route whose upstream
//!   is one of the guard's listeners is refused at start
//!   ([`crate::Config::forwarding_to_itself`]).
//! - An answer that cannot be decoded (a version newer than the crate knows, bytes that do
//!   not parse, bytes left over) is forwarded unchanged with a warning: failing open is
//!   safe here, as it loses only the rewrite. For the answers read on every produce and
//!   fetch, a version newer than the guard knows is said once per API and version, not
//!   once per answer.
//!
//! Node endpoints ride on the data path, so they are read otherwise (`endpoints`). Each
//! answer is first checked against its shape, field by field without decoding or
//! allocating (`shapes`): it says where the node endpoints are, and that every count fits
//! the bytes that remain, which kafka-protocol does not check before it reserves room for
//! one. Most answers have none (Kafka sends them only with NOT_LEADER_OR_FOLLOWER and
//! FENCED_LEADER_EPOCH): those go to the client as the broker sent them, not copied.
//! Otherwise each endpoint is decoded with kafka-protocol and rewritten as a Metadata
//! broker is (the same matching, `dynamic-listen`, warnings), and the answer is written
//! whole: the broker's bytes before the list (the records byte for byte), the list, the
//! broker's bytes after it. Not decoding the rest keeps what the guard holds to the answer
//! itself: a Fetch answer's partitions decoded whole would take several times their bytes.
//! The answer written whole replaces the broker's frame before the client is written to,
//! under the share of the buffer budget that frame took, as a splice's head lives under
//! the share of the answer it follows: it is no longer than the broker's but for the
//! longer host names, and the two are not both held while the client reads.
//!
//! DescribeQuorum's listeners are the controllers', which the guard does not front: its
//! routes lead to brokers. A listener at a route's upstream is given as the route's
//! listener; every other is left out of the answer (its node kept, with fewer or no
//! listeners), with one line per address. Leaving them with a warning, as for a broker
//! with no route, would hand every client that asks a way around the guard to the
//! controllers, which take admin requests directly (KIP-919), the leadership changes the
//! guard polices among them; clients lose nothing they use, as Kafka's clients reach the
//! controllers through the brokers and only show these listeners. No listener is opened
//! for a controller (`dynamic-listen` numbers its listeners by node id, and a controller's
//! id may be a broker's).
//!
//! The parts:
//!
//! - `filter`: the filter that hands the answers that carry addresses to the rewrite
//!   (`Addresses`, in the chain as [`builtin::Addresses`](crate::builtin::Addresses));
//! - `rewrite`: the three answers read, their addresses replaced and the entries written
//!   again ([`Routes::rewrite`], [`Rewritten`]); it binds nothing, and asks the routes
//!   what each broker's address becomes;
//! - `shapes`: the shapes of the answers with node endpoints or controller listeners,
//!   version by version, and the scan that checks an answer against its shape;
//! - `endpoints`: their lists rewritten and the answer written whole
//!   ([`Routes::rewrite_endpoints`]);
//! - `routes`: which of the guard's listeners fronts a broker ([`Routes`]: the routes,
//!   the guard's other listening addresses, the warnings for brokers left as they are);
//! - `listeners`: the listeners [`Config::dynamic_listen`] opens for brokers with no route
//!   ([`DynamicListen`], [`Opened`]), the only part that binds a socket. A listener is
//!   bound before the answer that names it reaches the client, which may connect at once;
//! - `newest`: the newest version of each answer the rewrite reads, for the ApiVersions cap.
//!
//! [`Config::upstream_names`]: crate::Config::upstream_names
//! [`Config::advertise_host`]: crate::Config::advertise_host
//! [`Config::dynamic_listen`]: crate::Config::dynamic_listen
//! [`Config::max_connections`]: crate::Config::max_connections

mod endpoints;
pub(crate) mod filter;
mod listeners;
pub(crate) mod newest;
mod rewrite;
pub(crate) mod routes;
mod shapes;

pub use listeners::{DynamicListen, Opened};
pub use newest::newest_rewritten;
pub use rewrite::{Rewritten, DESCRIBE_CLUSTER, FIND_COORDINATOR, METADATA};
pub(crate) use routes::same_host;
pub use routes::Routes;
pub use shapes::{DESCRIBE_QUORUM, FETCH, PRODUCE, SHARE_ACKNOWLEDGE, SHARE_FETCH};
