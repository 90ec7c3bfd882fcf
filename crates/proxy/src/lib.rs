//! The ElectLeaders guard: a Kafka proxy that forwards every frame of every API byte for
//! byte and holds ElectLeaders (API key 43) requests to a policy.
//!
//! The parts, usable apart:
//!
//! - [`elect`]: a [`Policy`] built in code (or from `elect-leaders proxy`'s options), its
//!   [`Decision`] on a parsed request (forwarded, refused whole, trimmed: some partitions
//!   refused, or, in log-only mode, what would have been refused; a pure function: no
//!   socket, no clock), and what the guard writes for a decision, with the codec's writer:
//!   the trimmed request for the broker, the refusal of a whole request (Kafka's own error
//!   response), and per-partition refusals (`POLICY_VIOLATION`, 44) merged with the
//!   broker's answer to the trimmed request.
//! - [`audit`]: one JSON line per decision.
//! - [`Guard`]: the server, on tokio, from a [`Config`]: one listener per broker, answers in
//!   request order per connection, bounded memory and connections.
//! - [`filter`]: the guard as a pipeline: a connection core that moves frames and owns the
//!   budgets, timeouts and closes, and [`Filter`]s, one per concern (the SASL principal,
//!   the leadership-change policy, the ElectLeaders policy, the ApiVersions cap, the
//!   broker-address rewrite), each reading the API keys it names. An embedder adds its own
//!   with [`Filters::with`] (`examples/filter.rs`). Inside, each rule is one folder
//!   (`src/filters/<rule>/`: its decoding, decision, refusal and audit fields beside its
//!   `Filter`), beside the connection core (`src/core/`), the configuration
//!   (`src/config/`) and what operators see (`src/observability/`).
//! - [`mod@file`]: the configuration file (TOML) that fills a [`Config`]; [`Reloader::apply`]
//!   puts a new one's policy and certificates in force while the guard runs.
//!
//! # Example
//!
//! A policy that protects one topic, deciding on a request that names two:
//!
//! ```
//! use bytes::BytesMut;
//! use kafka_elect_leaders::{
//!     parse_request, parse_response, ElectLeadersRequestData, ElectionType, EncodeRequestExt,
//!     ErrorCode, TopicPartitionsData,
//! };
//! use kafka_elect_leaders_proxy::{elect, Policy, Verdict};
//!
//! let mut policy = Policy::default();
//! policy.protected_topics.insert(b"payments"[..].into());
//!
//! let topics = [
//!     TopicPartitionsData::new(b"payments", &[0, 1]),
//!     TopicPartitionsData::new(b"logs", &[0]),
//! ];
//! let frame = ElectLeadersRequestData {
//!     correlation_id: 7,
//!     election_type: ElectionType::PREFERRED,
//!     topic_partitions: Some(&topics),
//!     ..Default::default()
//! }
//! .encode_to_vec(2)
//! .unwrap();
//! let request = parse_request(&frame).unwrap();
//!
//! let decision = policy.decide(&request);
//! assert_eq!(decision.verdict, Verdict::Trimmed);
//!
//! // What goes to the broker: the request without the protected topic.
//! let mut trimmed = BytesMut::new();
//! elect::encode_trimmed(&policy, &decision, &request, &mut trimmed).unwrap();
//! let trimmed = parse_request(&trimmed).unwrap();
//! assert_eq!(trimmed.topic_partitions().unwrap().len(), 1);
//!
//! // Had the broker not answered, the refusals alone: each refused partition gets 44.
//! let mut refusal = BytesMut::new();
//! elect::encode_refusal(&policy, &decision, &request, None, &mut refusal).unwrap();
//! let refusal = parse_response(&refusal, 2).unwrap();
//! let result = refusal.replica_election_results().first().unwrap();
//! assert_eq!(result.topic(), b"payments");
//! for partition in result.partition_result() {
//!     assert_eq!(partition.error_code(), ErrorCode::POLICY_VIOLATION);
//! }
//! ```
//!
//! Running the guard from a program (the `elect-leaders proxy` command does exactly this):
//!
//! ```no_run
//! use kafka_elect_leaders_proxy::{Config, Guard, Route};
//!
//! # async fn run() -> Result<(), kafka_elect_leaders_proxy::StartError> {
//! let mut config = Config::default();
//! config.routes.push(Route {
//!     listen: "127.0.0.1:19092".parse().unwrap(),
//!     upstream: "127.0.0.1:9092".parse().unwrap(),
//! });
//! config.policy.deny_unclean = true;
//! let guard = Guard::bind(config).await?;
//! guard.run(async { tokio::signal::ctrl_c().await.unwrap() }).await;
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod config;
mod core;
pub mod filter;
mod filters;
mod observability;

/// The connection state machine alone, over any streams: what the `conn` fuzz target
/// drives in memory. Not a stable API.
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing {
    pub use crate::core::close::Close;
    pub use crate::core::conn::{proxy, ClientRead, MAX_IN_FLIGHT, RESERVE_STEP};
    pub use crate::core::shared::Shared;
    pub use crate::observability::audit::ConnInfo;
}

pub use crate::core::close::{Close, CloseReason};
pub use crate::core::proxy_protocol::parse_range as parse_source_range;
pub use config::file::{self, ConfigFile, FileError};
pub use config::settings::{
    AuditTarget, Config, Route, DEFAULT_DRAIN_TIMEOUT, DEFAULT_FRAME_TIMEOUT, DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_BUFFERED_BYTES, DEFAULT_REFUSED_BYTES_PER_SECOND, DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_UPSTREAM_CONNECT_TIMEOUT, MAX_CONNECTION_THREADS,
};
pub use filter::{Filter, Filters};
pub use filters::addresses;
pub use filters::doors::apis;
pub use filters::elect;
pub use filters::leadership;
/// An address range, as [`Config::proxy_protocol_from`] holds them.
pub use ipnet::IpNet;
/// Kafka's tables and the headers a filter reads, from the codec: one dependency is enough
/// to write a filter.
pub use kafka_elect_leaders::{ApiKey, ErrorCode, Pending, RequestPeek};

/// The guard's own filters, as values an embedder places in its chain ([`Filters::with`])
/// before, after or between its own, or leaves out. [`Filters::builtin`] is all of them, in
/// this order: [`Doors`](builtin::Doors), [`FollowerFetch`](builtin::FollowerFetch),
/// [`Sasl`](builtin::Sasl), [`Leadership`](builtin::Leadership),
/// [`ElectLeaders`](builtin::ElectLeaders), [`ApiVersions`](builtin::ApiVersions),
/// [`Addresses`](builtin::Addresses).
///
/// Leaving one out leaves its door open: without `Doors`, the APIs only brokers send reach
/// the broker; without `Sasl`, rules that name a principal see none; without
/// `ApiVersions` and `Addresses`, clients learn the brokers' own addresses and leave the
/// guard. A filter placed before `Sasl` sees no principal yet.
pub mod builtin {
    pub use crate::filters::{
        Addresses, ApiVersions, Doors, ElectLeaders, FollowerFetch, Leadership, Sasl,
    };
}
pub use crate::core::server::{
    max_connections_for, raise_fd_limit, Guard, StartError, RESERVED_FDS,
};
pub use crate::core::tls::{self, ServerTls, UpstreamTls};
pub use config::merge::Overrides;
pub use config::reload::{ReloadError, Reloaded, Reloader};
pub use filters::elect::{Decision, Policy, Refusal, Rule, Verdict};
pub use observability::listener::{
    MetricsLimits, DEFAULT_METRICS_CONNECTIONS, DEFAULT_METRICS_HEADER_TIMEOUT,
    DEFAULT_METRICS_WRITE_TIMEOUT,
};
pub use observability::metrics::MAX_CLIENT_SERIES;
pub use observability::{audit, diag};
