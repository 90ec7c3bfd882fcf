//! The guard as a server: a listener per broker, each forwarding to its broker, a bound on
//! the connections open at once, and a graceful stop.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use kafka_elect_leaders::DEFAULT_MAX_FRAME_SIZE;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};

use crate::addresses::{Addresses, Opened};
use crate::audit::{log, Audit, AuditSink, ConnInfo, DEFAULT_AUDIT_QUEUE_BYTES};
use crate::conn;
use crate::filter::Filters;
use crate::metrics::Refused;
use crate::policy::Policy;
use crate::shards::Shards;
use crate::shared::Shared;
use crate::tls::{ServerTls, Tls, TlsError, UpstreamTls};

/// One listener of the guard and the broker it forwards to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// Where clients connect (port 0: any free port, see [`Guard::routes`]).
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
    /// ([`crate::audit::connection_share`]); past the whole of it the log is stalled, and
    /// elections are refused until it drains.
    pub audit_queue_bytes: usize,
    /// Connections open at once, at most; a client past it is closed at once. Default 1024.
    pub max_connections: usize,
    /// Threads that run the connections, each on a single-threaded runtime of its own,
    /// connections placed on them in turn (`--threads`); 0, the default: connections run
    /// on the runtime that runs the guard, as tasks of their own. On a work-stealing
    /// runtime each event of a connection may wake a second worker that then finds
    /// nothing to do; a connection kept on one thread costs about half the CPU per round
    /// trip at a paced request rate (`benches/guard_cpu.py`). At most
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
    /// TLS towards clients (`--tls-cert`, `--tls-key`, `--tls-client-ca`); None:
    /// plaintext.
    pub tls: Option<ServerTls>,
    /// TLS towards the brokers (`--upstream-tls` and its options); None: plaintext.
    pub upstream_tls: Option<UpstreamTls>,
    /// The bytes of frames larger than 64 KiB held at once, by every connection and in
    /// both directions; a frame waits (its sender held back by TCP) until its whole size
    /// fits. Default 1 GiB.
    pub max_buffered_bytes: usize,
    /// Each broker's host name as written (`--upstream kafka-1:9092`), by its resolved
    /// address: a broker advertising that name is recognised as that route's
    /// ([`crate::addresses`]).
    pub upstream_names: Vec<(SocketAddr, String)>,
    /// The host clients are told for the guard's listeners in rewritten broker addresses
    /// (`--advertise-host`). None: each listener's IP address, or for a listener on an
    /// unspecified address (0.0.0.0), the address the client reached.
    pub advertise_host: Option<String>,
    /// Listeners opened for brokers that have no route (`--dynamic-listen`); None: such a
    /// broker's address is left as it is, with a warning.
    pub dynamic_listen: Option<crate::addresses::DynamicListen>,
    /// Where `/metrics` (Prometheus) and `/status` (a page for a person) are served
    /// (`--metrics-listen`); None: nowhere.
    pub metrics_listen: Option<SocketAddr>,
    /// What a client of `/metrics` and `/status` may hold: clients at once, the time to
    /// ask and the time to take the answer, each with its default
    /// ([`crate::metrics_listener::MetricsLimits`]); apart from the Kafka listeners' limits.
    pub metrics_limits: crate::metrics_listener::MetricsLimits,
    /// For [`Reloader::apply`]: put this policy in force even when it is weaker than the
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

    /// Why the guard would forward to itself, if it would: a route whose `--upstream` is
    /// one of the guard's own listening addresses (a route's `--listen`, its own included,
    /// or `--metrics-listen`). An address matches as the guard matches brokers'
    /// ([`crate::addresses`]): the same port and IP, or for a listener on `0.0.0.0` or
    /// `::` any address of this host. Each client would open a connection through the
    /// guard to the guard, and so on until `--max-connections`. Port 0 (any free port)
    /// matches nothing.
    pub fn forwarding_to_itself(&self) -> Option<String> {
        let own = self
            .routes
            .iter()
            .map(|r| ("--listen", r.listen))
            .chain(self.metrics_listen.map(|m| ("--metrics-listen", m)));
        self.routes.iter().enumerate().find_map(|(n, route)| {
            let upstream = route.upstream;
            own.clone()
                .find(|(_, listen)| {
                    listen.port() != 0
                        && listen.port() == upstream.port()
                        && crate::addresses::same_host(listen.ip(), upstream.ip(), None, true)
                })
                .map(|(option, listen)| {
                    format!(
                        "route {}: --upstream {upstream} is the guard's own {option} {listen}: \
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
pub use crate::budget::DEFAULT_MAX_BUFFERED_BYTES;

impl Default for Config {
    fn default() -> Self {
        Config {
            routes: Vec::new(),
            policy: Policy::default(),
            audit: AuditTarget::Stderr,
            audit_queue_bytes: DEFAULT_AUDIT_QUEUE_BYTES,
            max_connections: 1024,
            connection_threads: 0,
            max_frame_size: DEFAULT_MAX_FRAME_SIZE,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            frame_timeout: DEFAULT_FRAME_TIMEOUT,
            upstream_connect_timeout: DEFAULT_UPSTREAM_CONNECT_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            max_buffered_bytes: DEFAULT_MAX_BUFFERED_BYTES,
            tls: None,
            upstream_tls: None,
            upstream_names: Vec::new(),
            advertise_host: None,
            dynamic_listen: None,
            metrics_listen: None,
            metrics_limits: crate::metrics_listener::MetricsLimits::default(),
            allow_weaker_rules: false,
            filters: Filters::builtin(),
            plain: false,
        }
    }
}

/// [`Config::connection_threads`], at most.
pub const MAX_CONNECTION_THREADS: usize = 1024;

/// How long a stopping guard waits for the audit log and the diagnostics to be written.
const AUDIT_DRAIN: Duration = Duration::from_secs(5);

/// File descriptors kept back from connections: the listeners, the audit log, the
/// runtime's own, standard streams and the spare one that lets the guard refuse a client
/// when every other descriptor is taken.
pub const RESERVED_FDS: u64 = 64;

/// Raises the process's soft limit on open files to its hard limit, and returns the limit
/// now in force. Each client costs the guard two descriptors (the client's socket and its
/// broker connection).
pub fn raise_fd_limit() -> io::Result<u64> {
    rlimit::increase_nofile_limit(u64::MAX)
}

/// The connections the guard can serve at once under a limit of `fd_limit` open files:
/// two descriptors each, after [`RESERVED_FDS`]. At least 1.
pub fn max_connections_for(fd_limit: u64) -> usize {
    let pairs = fd_limit.saturating_sub(RESERVED_FDS) / 2;
    usize::try_from(pairs).unwrap_or(usize::MAX).max(1)
}

/// Why the guard could not start.
#[derive(Debug)]
pub enum StartError {
    /// The audit log could not be opened.
    AuditLog(std::path::PathBuf, io::Error),
    /// A listener could not be bound.
    Listen(SocketAddr, io::Error),
    /// A bound listener's address could not be read.
    LocalAddr(SocketAddr, io::Error),
    /// A certificate or key could not be loaded.
    Tls(TlsError),
    /// A route would forward to the guard itself ([`Config::forwarding_to_itself`]).
    ForwardsToItself(String),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::AuditLog(path, e) => {
                write!(f, "cannot open the audit log {}: {e}", path.display())
            }
            StartError::Listen(addr, e) => write!(f, "cannot listen on {addr}: {e}"),
            StartError::LocalAddr(addr, e) => write!(f, "{addr}: {e}"),
            StartError::Tls(e) => write!(f, "{e}"),
            StartError::ForwardsToItself(why) => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StartError::AuditLog(_, e) | StartError::Listen(_, e) | StartError::LocalAddr(_, e) => {
                Some(e)
            }
            StartError::Tls(e) => Some(e),
            StartError::ForwardsToItself(_) => None,
        }
    }
}

/// Reloads the guard's certificates, or its whole policy and TLS settings: see
/// [`Guard::reloader`].
#[derive(Clone)]
pub struct Reloader {
    shared: Arc<Shared>,
    started: Arc<Config>,
}

/// Why a reload put nothing in force.
#[derive(Debug)]
pub enum ReloadError {
    /// A certificate or key could not be loaded, or TLS would be turned on or off.
    Tls(TlsError),
    /// The new rules are weaker than those in force, and the new configuration does not
    /// allow it ([`Config::allow_weaker_rules`]): what they would drop, one phrase each
    /// ([`Policy::weakened_by`]).
    Weaker(Vec<String>),
}

impl fmt::Display for ReloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReloadError::Tls(e) => write!(f, "{e}"),
            ReloadError::Weaker(dropped) => write!(
                f,
                "its rules are weaker than those in force, and it does not say \
                 allow-weaker-rules = true: {}",
                dropped.join("; ")
            ),
        }
    }
}

/// What a reload put in force, besides its policy and certificates.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Reloaded {
    /// The options whose new values wait for a restart, by their command-line names.
    pub restart: Vec<&'static str>,
    /// What the new rules dropped of those in force ([`Policy::weakened_by`]); not empty
    /// only when the configuration allowed it ([`Config::allow_weaker_rules`]).
    pub weakened: Vec<String>,
}

impl std::error::Error for ReloadError {}

impl Reloader {
    /// Reads the certificate and key files again. New connections use them; connections
    /// open keep theirs. On an error nothing changes. `Ok(false)`: the guard has no TLS.
    pub fn reload(&self) -> Result<bool, TlsError> {
        match &self.shared.tls {
            Some(tls) => tls.reload().map(|()| true),
            None => Ok(false),
        }
    }

    /// Puts `config`'s policy and TLS settings in force together, or, on an error, none
    /// of them. The certificates are loaded first; then requests read from now on are
    /// decided by the new policy (a request already decided is answered by the policy
    /// that decided it), and new connections use the new certificates.
    ///
    /// It fails closed: a policy weaker than the one in force (a protected topic fewer,
    /// `deny-unclean` off, ...: [`Policy::weakened_by`]) is refused, naming what it would
    /// drop, unless `config` allows it ([`Config::allow_weaker_rules`]); then it is put in
    /// force and what it dropped is returned, for the caller to log.
    ///
    /// The rest of `config` (listeners and brokers, the audit log, limits and timeouts)
    /// is not changed while the guard runs: the options whose values differ from those it
    /// started with are returned, by their command-line names, for the caller to say that
    /// they wait for a restart. TLS cannot be turned on or off on either side either.
    ///
    /// Calls are not serialized: one caller (the SIGHUP handler) reloads at a time.
    pub fn apply(&self, config: &Config) -> Result<Reloaded, ReloadError> {
        let weakened = self.shared.policy().weakened_by(&config.policy);
        if !weakened.is_empty() && !config.allow_weaker_rules {
            return Err(ReloadError::Weaker(weakened));
        }
        let prepared = match &self.shared.tls {
            Some(tls) => Some(
                tls.prepare(config.tls.clone(), config.upstream_tls.clone())
                    .map_err(ReloadError::Tls)?,
            ),
            None if config.tls.is_some() || config.upstream_tls.is_some() => {
                return Err(ReloadError::Tls(TlsError::new(
                    "TLS cannot be turned on without a restart",
                )))
            }
            None => None,
        };
        self.shared.set_policy(config.policy.clone());
        if let (Some(tls), Some(prepared)) = (&self.shared.tls, prepared) {
            tls.install(prepared);
        }
        Ok(Reloaded {
            restart: restart_only(&self.started, config),
            weakened,
        })
    }

    /// Opens the audit log file again at its path (SIGHUP; what logrotate's `postrotate`
    /// asks for), once the lines queued before are written, and waits for it at most
    /// `timeout`. On an error elections are refused until the file can be opened again
    /// (tried every second). Without a file (standard output or error) there is nothing
    /// to reopen: `Ok(false)`. Blocks: call it off the runtime's workers.
    pub fn reopen_audit(&self, timeout: Duration) -> io::Result<bool> {
        self.shared.audit.reopen(timeout)
    }
}

/// The options of `new` that differ from `old`'s and take effect only at a restart.
fn restart_only(old: &Config, new: &Config) -> Vec<&'static str> {
    let mut changed = Vec::new();
    let mut check = |differs: bool, name: &'static str| {
        if differs {
            changed.push(name);
        }
    };
    check(old.routes != new.routes, "listen/upstream");
    check(old.audit != new.audit, "audit-log");
    check(
        old.audit_queue_bytes != new.audit_queue_bytes,
        "audit-queue-bytes",
    );
    check(
        old.max_connections != new.max_connections,
        "max-connections",
    );
    check(old.connection_threads != new.connection_threads, "threads");
    check(old.max_frame_size != new.max_frame_size, "max-frame-size");
    check(old.idle_timeout != new.idle_timeout, "idle-timeout");
    check(old.frame_timeout != new.frame_timeout, "frame-timeout");
    check(
        old.upstream_connect_timeout != new.upstream_connect_timeout,
        "upstream-connect-timeout",
    );
    check(
        old.request_timeout != new.request_timeout,
        "request-timeout",
    );
    check(
        old.max_buffered_bytes != new.max_buffered_bytes,
        "max-buffered-bytes",
    );
    check(old.advertise_host != new.advertise_host, "advertise-host");
    check(old.dynamic_listen != new.dynamic_listen, "dynamic-listen");
    check(old.metrics_listen != new.metrics_listen, "metrics-listen");
    check(old.metrics_limits != new.metrics_limits, "metrics limits");
    changed
}

/// The guard with its listeners bound, not yet accepting.
pub struct Guard {
    listeners: Vec<(TcpListener, SocketAddr, SocketAddr)>,
    /// Listeners opened while the guard runs, for brokers with no route.
    opened: tokio::sync::mpsc::UnboundedReceiver<Opened>,
    /// `/metrics` and `/status`, and their limits.
    metrics: Option<(TcpListener, SocketAddr)>,
    metrics_limits: crate::metrics_listener::MetricsLimits,
    max_connections: usize,
    connection_threads: usize,
    shared: Arc<Shared>,
    started: Arc<Config>,
}

impl Guard {
    /// Loads the certificates, opens the audit log and binds every route's listener.
    pub async fn bind(config: Config) -> Result<Guard, StartError> {
        if let Some(why) = config.forwarding_to_itself() {
            return Err(StartError::ForwardsToItself(why));
        }
        let tls = if config.tls.is_some() || config.upstream_tls.is_some() {
            Some(
                Tls::new(config.tls.clone(), config.upstream_tls.clone())
                    .map_err(StartError::Tls)?,
            )
        } else {
            None
        };
        let failed = |e| match &config.audit {
            AuditTarget::File(path) => StartError::AuditLog(path.clone(), e),
            _ => StartError::AuditLog("-".into(), e),
        };
        let sink = match &config.audit {
            AuditTarget::Stderr => AuditSink::Stderr,
            AuditTarget::Stdout => AuditSink::Stdout,
            AuditTarget::File(path) => AuditSink::open(path).map_err(failed)?,
        };
        let audit = Audit::start(sink, config.audit_queue_bytes).map_err(failed)?;
        let mut listeners = Vec::new();
        for route in &config.routes {
            let listener = TcpListener::bind(route.listen)
                .await
                .map_err(|e| StartError::Listen(route.listen, e))?;
            let local = listener
                .local_addr()
                .map_err(|e| StartError::LocalAddr(route.listen, e))?;
            listeners.push((listener, local, route.upstream));
        }
        let metrics = match config.metrics_listen {
            Some(addr) => {
                let listener = TcpListener::bind(addr)
                    .await
                    .map_err(|e| StartError::Listen(addr, e))?;
                let local = listener
                    .local_addr()
                    .map_err(|e| StartError::LocalAddr(addr, e))?;
                Some((listener, local))
            }
            None => None,
        };
        let (open, opened) = tokio::sync::mpsc::unbounded_channel();
        let mut addresses = Addresses::new(
            listeners
                .iter()
                .map(|&(_, listen, upstream)| (listen, upstream, config.upstream_name(upstream))),
            config.advertise_host.clone(),
            config.dynamic_listen.map(|range| (range, open)),
        );
        if let Some((_, local)) = &metrics {
            addresses = addresses.also_listening(*local, "--metrics-listen");
        }
        Ok(Guard {
            listeners,
            opened,
            metrics,
            metrics_limits: config.metrics_limits,
            max_connections: config.max_connections,
            connection_threads: config.connection_threads,
            shared: Arc::new(Shared {
                tls,
                addresses,
                ..Shared::new(&config, audit)
            }),
            started: Arc::new(config),
        })
    }

    /// A handle that reloads the certificates, or the policy and TLS settings, while the
    /// guard runs (on SIGHUP, in `elect-leaders proxy`).
    pub fn reloader(&self) -> Reloader {
        Reloader {
            shared: self.shared.clone(),
            started: self.started.clone(),
        }
    }

    /// Where `/metrics` and `/status` are served, as bound.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().map(|&(_, addr)| addr)
    }

    /// The routes as bound: each listener's actual address (a port 0 resolved).
    pub fn routes(&self) -> Vec<Route> {
        self.listeners
            .iter()
            .map(|&(_, listen, upstream)| Route { listen, upstream })
            .collect()
    }

    /// Accepts and serves clients until `stop` completes; then accepts no more, lets the
    /// answers in flight finish for a grace period, and returns once every connection is
    /// closed (or the grace period is over).
    pub async fn run(self, stop: impl std::future::Future<Output = ()>) {
        let max_connections = self.max_connections;
        let shards = match Shards::start(self.connection_threads.min(MAX_CONNECTION_THREADS)) {
            Ok(shards) => Arc::new(shards),
            Err(e) => {
                log(format_args!(
                    "cannot start {} connection threads ({e}): connections run on the \
                     guard's runtime",
                    self.connection_threads
                ));
                Arc::new(Shards::start(0).expect("no threads to start"))
            }
        };
        let (stop_tx, stop_rx) = watch::channel(false);
        let connections = Arc::new(Semaphore::new(max_connections));
        let mut accepting = Vec::new();
        let routes_shown: Vec<(SocketAddr, String)> = self
            .listeners
            .iter()
            .map(|&(_, listen, upstream)| (listen, upstream.to_string()))
            .collect();
        for (listener, local, upstream) in self.listeners {
            accepting.push(tokio::spawn(accept(
                listener,
                local,
                Target::Fixed(upstream),
                connections.clone(),
                max_connections,
                self.shared.clone(),
                shards.clone(),
                stop_rx.clone(),
            )));
        }
        if let Some((listener, _)) = self.metrics {
            accepting.push(tokio::spawn(crate::metrics_listener::serve(
                listener,
                self.shared.clone(),
                routes_shown,
                self.metrics_limits,
                stop_rx.clone(),
            )));
        }
        // Listeners opened for brokers with no route, as the rewrite finds them.
        let mut opened = self.opened;
        tokio::pin!(stop);
        loop {
            tokio::select! {
                () = &mut stop => break,
                Some(o) = opened.recv() => {
                    let listener = match TcpListener::from_std(o.listener) {
                        Ok(listener) => listener,
                        Err(e) => {
                            log(format_args!("{}: cannot accept on it: {e}", o.local));
                            continue;
                        }
                    };
                    accepting.push(tokio::spawn(accept(
                        listener,
                        o.local,
                        Target::Named(o.host, o.port),
                        connections.clone(),
                        max_connections,
                        self.shared.clone(),
                        shards.clone(),
                        stop_rx.clone(),
                    )));
                }
            }
        }
        let _ = stop_tx.send(true);
        for task in accepting {
            let _ = task.await;
        }
        // Every connection holds a permit until it is closed: all back means all closed.
        let all = u32::try_from(max_connections).unwrap_or(u32::MAX);
        let closed = tokio::time::timeout(
            conn::SHUTDOWN_GRACE + Duration::from_secs(2),
            connections.acquire_many(all),
        )
        .await;
        if closed.is_err() {
            log(format_args!(
                "connections still open after the grace period: exiting"
            ));
        }
        // The connection threads end, and with them what still ran there.
        drop(shards);
        // The audit lines of the decisions made, and the last diagnostics, are written
        // before this returns (the program may exit right after).
        let shared = self.shared.clone();
        let drained = tokio::task::spawn_blocking(move || {
            let audited = shared.audit.drain(AUDIT_DRAIN);
            if !audited {
                log(format_args!(
                    "audit lines still queued after {AUDIT_DRAIN:?}: the log is stalled or \
                     failing; they are lost"
                ));
            }
            crate::audit::drain_log(AUDIT_DRAIN);
        })
        .await;
        let _ = drained;
    }
}

/// The broker behind a listener: a route's address, or for a listener opened for a broker
/// with no route, the host and port it advertised (resolved for each client, as Kafka's
/// clients do).
enum Target {
    Fixed(SocketAddr),
    Named(String, u16),
}

#[allow(clippy::too_many_arguments)]
async fn accept(
    listener: TcpListener,
    local: SocketAddr,
    target: Target,
    connections: Arc<Semaphore>,
    max_connections: usize,
    shared: Arc<Shared>,
    shards: Arc<Shards>,
    mut stop: watch::Receiver<bool>,
) {
    // One descriptor held back, to be able to refuse a client when all others are taken.
    let mut spare = spare_fd();
    let mut refused_for_fds = 0u64;
    let mut last_fd_log: Option<std::time::Instant> = None;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.wait_for(|stop| *stop) => return,
        };
        let (client, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) if is_out_of_fds(&e) => {
                // Every descriptor is taken. The client waiting in the backlog would hang
                // until its own timeout: give back the spare descriptor, take the client
                // and close it at once, then take the spare again. The connections open
                // keep being served.
                drop(spare.take());
                if let Ok((refused, peer)) = listener.accept().await {
                    drop(refused);
                    refused_for_fds += 1;
                    shared.metrics.refused(Refused::Descriptors);
                    if last_fd_log.is_none_or(|at| at.elapsed() >= Duration::from_secs(1)) {
                        log(format_args!(
                            "{local}: {peer} refused: out of file descriptors ({e}); \
                             {refused_for_fds} client(s) refused so far"
                        ));
                        last_fd_log = Some(std::time::Instant::now());
                    }
                }
                spare = spare_fd();
                // Let connections close before trying again; do not spin.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
            Err(e) => {
                log(format_args!("{local}: accept failed: {e}"));
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            shared.metrics.refused(Refused::MaxConnections);
            log(format_args!(
                "{local}: {peer} refused: {max_connections} connections already open \
                 (--max-connections)"
            ));
            drop(client);
            continue;
        };
        let reached = client.local_addr().unwrap_or(local);
        let shared = shared.clone();
        let stop = stop.clone();
        let upstream = match &target {
            Target::Fixed(addr) => Ok(*addr),
            Target::Named(host, port) => Err((host.clone(), *port)),
        };
        // Off this runtime's reactor, onto the runtime of the thread that serves it.
        let client = match client.into_std() {
            Ok(client) => client,
            Err(e) => {
                log(format_args!(
                    "{local}: {peer}: cannot hand the connection on: {e}"
                ));
                continue;
            }
        };
        shards.spawn(async move {
            let client = match TcpStream::from_std(client) {
                Ok(client) => client,
                Err(e) => {
                    log(format_args!(
                        "{local}: {peer}: cannot serve the connection: {e}"
                    ));
                    return;
                }
            };
            let (upstream, advertised) = match upstream {
                Ok(addr) => (addr, None),
                Err((host, port)) => match resolve(&host, port, &shared).await {
                    Ok(addr) => (addr, Some(host)),
                    Err(e) => {
                        log(format_args!(
                            "{peer} -> {local}: cannot resolve the broker {host}:{port}, \
                             closing the client: {e}"
                        ));
                        return;
                    }
                },
            };
            // The guard never connects to itself: were a broker to advertise a name of one
            // of the guard's listeners, each client's connection would open another
            // through the guard, until --max-connections.
            if advertised.is_some() {
                if let Some(option) = shared.addresses.own_listener(upstream, reached.ip()) {
                    log(format_args!(
                        "{peer} -> {local}: the broker is at {upstream}, one of the guard's \
                         own listening addresses ({option}): closing the client rather than \
                         forwarding to the guard itself"
                    ));
                    return;
                }
            }
            let conn = ConnInfo {
                client: peer,
                listener: local,
                local: reached,
                upstream,
            };
            conn::serve(client, conn, advertised, shared, stop).await;
            drop(permit);
        });
    }
}

/// The first address of `host:port`, within the upstream connect timeout.
async fn resolve(host: &str, port: u16, shared: &Shared) -> io::Result<SocketAddr> {
    let found = tokio::time::timeout(
        shared.upstream_connect_timeout,
        tokio::net::lookup_host((host, port)),
    )
    .await
    .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no answer from DNS"))??;
    found
        .into_iter()
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address"))
}

/// The spare descriptor: `/dev/null`, opened for nothing but to be closed when needed.
fn spare_fd() -> Option<std::fs::File> {
    std::fs::File::open("/dev/null").ok()
}

/// `EMFILE` (the process's limit) or `ENFILE` (the system's).
fn is_out_of_fds(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(24) | Some(23))
}
