//! What a guard is built from ([`Config`]): its routes, limits, timeouts, TLS settings,
//! policy and filters, with their defaults. Below the server that runs it, the reload that
//! replaces parts of it, and the configuration file that fills it.

use std::net::SocketAddr;
use std::time::Duration;

use kafka_elect_leaders::DEFAULT_MAX_FRAME_SIZE;

use crate::core::tls::{ServerTls, UpstreamTls};
use crate::filter::Filters;
use crate::filters::elect::policy::Policy;
use crate::observability::audit::DEFAULT_AUDIT_QUEUE_BYTES;

/// One listener of the guard and the broker it forwards to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// Where clients connect (port 0: any free port, see [`crate::Guard::routes`]).
    pub listen: SocketAddr,
    /// The broker this listener forwards to.
    pub upstream: SocketAddr,
}

/// Where the audit log goes: one JSON line per ElectLeaders decision.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum AuditTarget {
    /// Standard error (the default).
    #[default]
    Stderr,
    /// Standard output.
    Stdout,
    /// A file, appended to (created if missing).
    File(std::path::PathBuf),
    /// A sink that acknowledges each line (`elect-leaders proxy`'s `[audit-kafka]`), in
    /// its delivery mode.
    Delivered(crate::observability::audit::DeliveryTarget),
    /// A syslog receiver (`[audit-syslog]`): RFC 5424 over TCP or TLS.
    Syslog(crate::observability::audit::SyslogTarget),
}

/// Everything the guard needs to run: what `elect-leaders proxy`'s options build, and what a
/// program embedding the guard fills in itself.
#[derive(Clone, Debug)]
pub struct Config {
    /// The listeners and their brokers; one route per broker, so that clients stay on the
    /// guard after bootstrap (each broker advertises its route's listener).
    pub routes: Vec<Route>,
    /// What ElectLeaders requests may do.
    pub policy: Policy,
    /// Where decisions are recorded.
    pub audit: AuditTarget,
    /// Bytes of audit lines waiting for the writer, at most ([`DEFAULT_AUDIT_QUEUE_BYTES`]).
    /// A connection whose own lines fill an eighth of it waits for them to be written
    /// ([`crate::observability::audit::connection_share`]); past the whole of it the log is stalled, and
    /// elections are refused until it drains.
    pub audit_queue_bytes: usize,
    /// This replica's id in the audit chain (`replica-id`); None: the host name
    /// ([`default_replica`](crate::observability::audit::default_replica)).
    pub replica_id: Option<String>,
    /// The file holding the audit chain's key (`audit-chain-key-file`): lines hashed with
    /// HMAC-SHA-256 under it; None: SHA-256, which anyone can compute.
    pub audit_chain_key_file: Option<std::path::PathBuf>,
    /// Connections open at once, at most; a client past it is closed at once. Default 1024.
    pub max_connections: usize,
    /// Threads that run the connections, each on a single-threaded runtime of its own,
    /// connections placed on them in turn (`threads` in the configuration file); 0, the
    /// default: connections run on the runtime that runs the guard, as tasks of their own.
    /// On a work-stealing runtime each event of a connection may wake a second worker that
    /// then finds nothing to do; a connection kept on one thread costs about half the CPU
    /// per round trip at a paced request rate (`benches/guard_cpu.py`). At most
    /// [`MAX_CONNECTION_THREADS`].
    pub connection_threads: usize,
    /// The largest frame accepted from either side (size prefix excluded). Default: the
    /// codec's `DEFAULT_MAX_FRAME_SIZE` (100 MiB, Kafka's `socket.request.max.bytes`).
    pub max_frame_size: usize,
    /// No frame either way for this long: the connection is closed. Default 10 minutes,
    /// Kafka's `connections.max.idle.ms`.
    pub idle_timeout: Duration,
    /// A frame from a client that has begun must be whole within this, or the connection
    /// is closed (a client trickling bytes cannot hold a slot). Default 30 seconds.
    pub frame_timeout: Duration,
    /// Connecting to the broker must succeed within this, or the client is closed.
    /// Default 10 seconds.
    pub upstream_connect_timeout: Duration,
    /// An answer the broker owes must come within this, counted after the wait the request
    /// itself asks for (ElectLeaders' and Produce's `timeout_ms`, Fetch's `max_wait_ms`,
    /// JoinGroup's rebalance timeout); past it the connection is closed, as Kafka's clients
    /// do at their own request timeout. A `Produce` with `acks=0` is owed nothing. Default
    /// 2 minutes: later than any client's own timeout by default (30 s), so that the
    /// guard is the backstop, never the first to give up.
    pub request_timeout: Duration,
    /// After a stop (SIGTERM): how long the connections' requests in flight are waited
    /// for, no new request read, before the connections still open are closed. Default
    /// 3 seconds.
    pub drain_timeout: Duration,
    /// A connection open this long is drained as at a stop (its requests in flight
    /// answered, then closed; the client reconnects), so that long-lived clients spread
    /// over the replicas again after one is added. Each connection's age is taken
    /// between 90 % and 100 % of it, so that connections opened together do not all
    /// reconnect at once. None (the default): no maximum.
    pub max_connection_age: Option<Duration>,
    /// The sources (load balancers) whose connections begin with a PROXY protocol header
    /// (version 1 or 2) naming the client's own address, which the rules, the audit and
    /// the per-client limits then see; a connection from one of them without a header is
    /// closed, and no other source's header is read (`crate::core::proxy_protocol`).
    /// Empty (the default): the protocol is off.
    pub proxy_protocol_from: Vec<ipnet::IpNet>,
    /// TLS towards clients; None: plaintext.
    pub tls: Option<ServerTls>,
    /// TLS towards the brokers; None: plaintext.
    pub upstream_tls: Option<UpstreamTls>,
    /// The bytes of frames larger than 64 KiB held at once, by every connection and in
    /// both directions; a frame waits (its sender held back by TCP) until its whole size
    /// fits. Default 1 GiB.
    pub max_buffered_bytes: usize,
    /// A client's frames larger than 64 KiB that a filter answers in the broker's place
    /// (refusals), in bytes a second with all its connections: past it, the connection's
    /// next frame is read only once the client's refused bytes are back within a second's
    /// worth, as Kafka stops reading a client over its quota (`crate::core::refusal_pace`).
    /// 0: no pace. Default 16 MiB.
    pub refused_bytes_per_second: usize,
    /// Each broker's host name as written for its route (`upstream = "kafka-1:9092"`), by
    /// its resolved address: a broker advertising that name is recognised as that route's
    /// ([`crate::filters::addresses`]).
    pub upstream_names: Vec<(SocketAddr, String)>,
    /// For a route's listener (by its address as configured), the host and port clients are
    /// told for its broker in place of [`Config::advertise_host`] and the listener's port
    /// (`[[route]] advertise`): a load balancer's address for that broker, when its
    /// frontend ports are not the guard's.
    pub route_advertise: Vec<(SocketAddr, String, u16)>,
    /// The host clients are told for the guard's listeners in rewritten broker addresses.
    /// None: each listener's IP address, or for a listener on an unspecified address
    /// (0.0.0.0), the address the client reached.
    pub advertise_host: Option<String>,
    /// Listeners opened for brokers that have no route; None: such a broker's address is
    /// left as it is, with a warning.
    pub dynamic_listen: Option<crate::filters::addresses::DynamicListen>,
    /// Where `/metrics` (Prometheus) and `/status` (a page for a person) are served;
    /// None: nowhere.
    pub metrics_listen: Option<SocketAddr>,
    /// What a client of `/metrics` and `/status` may hold: clients at once, the time to
    /// ask and the time to take the answer, each with its default
    /// ([`crate::MetricsLimits`]); apart from the Kafka listeners' limits.
    pub metrics_limits: crate::observability::listener::MetricsLimits,
    /// For [`crate::Reloader::apply`]: put this policy in force even when it is weaker than the
    /// one in force ([`Policy::weakened_by`]). The config file's `allow-weaker-rules =
    /// true`, and never a command-line option (the command line is read again at every
    /// reload: it would allow every weakening for good). Default false.
    pub allow_weaker_rules: bool,
    /// What reads each frame ([`crate::filter`]): the guard's own filters by default
    /// ([`Filters::builtin`]); an embedder adds its own with [`Filters::with`].
    pub filters: Filters,
    /// Copy bytes both ways, parse nothing: the baseline of `benches/proxy_throughput.sh`.
    #[doc(hidden)]
    pub plain: bool,
}

impl Config {
    /// The host name written for the broker at `upstream`, if any
    /// ([`Config::upstream_names`]).
    pub fn upstream_name(&self, upstream: SocketAddr) -> Option<String> {
        self.upstream_names
            .iter()
            .find(|(addr, _)| *addr == upstream)
            .map(|(_, name)| name.clone())
    }

    /// Why the guard would forward to itself, if it would: a route whose
    /// [`upstream`](Route::upstream) is one of the guard's own listening addresses (a
    /// route's [`listen`](Route::listen), its own included, or
    /// [`metrics_listen`](Config::metrics_listen)). An address matches as the guard matches
    /// brokers' ([`crate::filters::addresses`]): the same port and IP, or for a listener on
    /// `0.0.0.0` or `::` any address of this host. Each client would open a connection
    /// through the guard to the guard, and so on until
    /// [`max_connections`](Config::max_connections). Port 0 (any free port) matches
    /// nothing.
    pub fn forwarding_to_itself(&self) -> Option<String> {
        let own = self
            .routes
            .iter()
            .map(|r| ("route.listen", r.listen))
            .chain(self.metrics_listen.map(|m| ("metrics-listen", m)));
        self.routes.iter().enumerate().find_map(|(n, route)| {
            let upstream = route.upstream;
            own.clone()
                .find(|(_, listen)| {
                    listen.port() != 0
                        && listen.port() == upstream.port()
                        && crate::filters::addresses::same_host(
                            listen.ip(),
                            upstream.ip(),
                            None,
                            true,
                        )
                })
                .map(|(option, listen)| {
                    format!(
                        "route {}: its upstream {upstream} is the guard's own {option} {listen}: \
                         the guard would forward to itself",
                        n + 1
                    )
                })
        })
    }
}

/// [`Config::idle_timeout`]'s default: Kafka's `connections.max.idle.ms`, 10 minutes.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(600);
/// [`Config::frame_timeout`]'s default.
pub const DEFAULT_FRAME_TIMEOUT: Duration = Duration::from_secs(30);
/// [`Config::upstream_connect_timeout`]'s default.
pub const DEFAULT_UPSTREAM_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// [`Config::request_timeout`]'s default.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// [`Config::drain_timeout`]'s default.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(3);
pub use crate::core::budget::DEFAULT_MAX_BUFFERED_BYTES;
pub use crate::core::refusal_pace::DEFAULT_REFUSED_BYTES_PER_SECOND;

impl Default for Config {
    fn default() -> Self {
        Config {
            routes: Vec::new(),
            policy: Policy::default(),
            audit: AuditTarget::Stderr,
            audit_queue_bytes: DEFAULT_AUDIT_QUEUE_BYTES,
            replica_id: None,
            audit_chain_key_file: None,
            max_connections: 1024,
            connection_threads: 0,
            max_frame_size: DEFAULT_MAX_FRAME_SIZE,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            frame_timeout: DEFAULT_FRAME_TIMEOUT,
            upstream_connect_timeout: DEFAULT_UPSTREAM_CONNECT_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
            max_connection_age: None,
            proxy_protocol_from: Vec::new(),
            max_buffered_bytes: DEFAULT_MAX_BUFFERED_BYTES,
            refused_bytes_per_second: DEFAULT_REFUSED_BYTES_PER_SECOND,
            tls: None,
            upstream_tls: None,
            upstream_names: Vec::new(),
            route_advertise: Vec::new(),
            advertise_host: None,
            dynamic_listen: None,
            metrics_listen: None,
            metrics_limits: crate::observability::listener::MetricsLimits::default(),
            allow_weaker_rules: false,
            filters: Filters::builtin(),
            plain: false,
        }
    }
}

/// [`Config::connection_threads`], at most.
pub const MAX_CONNECTION_THREADS: usize = 1024;
