//! The guard as a server: a listener per broker, each forwarding to its broker, a bound on
//! the connections open at once, and a graceful stop.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};

use crate::config::reload::Reloader;
use crate::config::settings::MAX_CONNECTION_THREADS;
use crate::config::settings::{AuditTarget, Config, Route};
use crate::core::budget::Budget;
use crate::core::conn;
use crate::core::connection_threads::ConnectionThreads;
use crate::core::proxy_protocol;
use crate::core::shared::Shared;
use crate::core::tls::{Tls, TlsError};
use crate::filters::addresses::{Opened, Routes};
use crate::observability::audit::{default_replica, Audit, AuditSink, ChainKey, ConnInfo, Syslog};
use crate::observability::diag::log;
use crate::observability::metrics::{Metrics, Refused};

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
    /// The audit chain's key could not be read (its bytes are never said).
    AuditChainKey(std::path::PathBuf, io::Error),
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
            StartError::AuditChainKey(path, e) => {
                write!(f, "cannot read the audit chain key {}: {e}", path.display())
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
            StartError::AuditLog(_, e)
            | StartError::AuditChainKey(_, e)
            | StartError::Listen(_, e)
            | StartError::LocalAddr(_, e) => Some(e),
            StartError::Tls(e) => Some(e),
            StartError::ForwardsToItself(_) => None,
        }
    }
}

/// The guard with its listeners bound, not yet accepting.
pub struct Guard {
    listeners: Vec<(TcpListener, SocketAddr, SocketAddr)>,
    /// Listeners opened while the guard runs, for brokers with no route.
    opened: tokio::sync::mpsc::UnboundedReceiver<Opened>,
    /// `/metrics` and `/status`, and their limits.
    metrics: Option<(TcpListener, SocketAddr)>,
    metrics_limits: crate::observability::listener::MetricsLimits,
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
            AuditTarget::Delivered(target) => AuditSink::Delivered(target.clone()),
            AuditTarget::Syslog(target) => {
                AuditSink::Syslog(Syslog::connect(target.clone()).map_err(|e| {
                    StartError::AuditLog(format!("syslog {}", target.address).into(), e)
                })?)
            }
        };
        let key = match &config.audit_chain_key_file {
            Some(path) => Some(
                ChainKey::from_file(path)
                    .map_err(|e| StartError::AuditChainKey(path.clone(), e))?,
            ),
            None => None,
        };
        let replica = config.replica_id.clone().unwrap_or_else(default_replica);
        let audit =
            Audit::start_chained(sink, config.audit_queue_bytes, &replica, key).map_err(failed)?;
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
        let mut addresses = Routes::new(
            listeners
                .iter()
                .map(|&(_, listen, upstream)| (listen, upstream, config.upstream_name(upstream))),
            config.advertise_host.clone(),
            config.dynamic_listen.map(|range| (range, open)),
        )
        .advertising(&config.route_advertise);
        if let Some((_, local)) = &metrics {
            addresses = addresses.also_listening(*local, "metrics-listen");
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
                addresses: Arc::new(addresses),
                ..Shared::new(&config, audit)
            }),
            started: Arc::new(config),
        })
    }

    /// A handle that reloads the certificates, or the policy and TLS settings, while the
    /// guard runs (on SIGHUP, in `elect-leaders proxy`).
    pub fn reloader(&self) -> Reloader {
        Reloader::new(self.shared.clone(), self.started.clone())
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
        let threads =
            match ConnectionThreads::start(self.connection_threads.min(MAX_CONNECTION_THREADS)) {
                Ok(threads) => Arc::new(threads),
                Err(e) => {
                    log(format_args!(
                        "cannot start {} connection threads ({e}): connections run on the \
                     guard's runtime",
                        self.connection_threads
                    ));
                    Arc::new(ConnectionThreads::start(0).expect("no threads to start"))
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
        let brokers: Vec<SocketAddr> = self.listeners.iter().map(|&(_, _, u)| u).collect();
        for (listener, local, upstream) in self.listeners {
            accepting.push(tokio::spawn(accept(
                listener,
                local,
                Target::Fixed(upstream),
                connections.clone(),
                max_connections,
                self.shared.clone(),
                threads.clone(),
                stop_rx.clone(),
            )));
        }
        // The metrics listener serves on while the connections drain (`/readyz` says
        // so), and stops with the last of them.
        let (metrics_stop, metrics_stopped) = watch::channel(false);
        let metrics = self.metrics.map(|(listener, _)| {
            tokio::spawn(crate::observability::listener::serve(
                listener,
                self.shared.clone(),
                routes_shown,
                self.metrics_limits,
                metrics_stopped,
            ))
        });
        // The brokers `/readyz` probes.
        self.shared.health.set_brokers(brokers);
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
                        threads.clone(),
                        stop_rx.clone(),
                    )));
                }
            }
        }
        // Draining: not ready, no new connection, no new request read; the answers in
        // flight go out within the drain timeout.
        self.shared.health.drain();
        let _ = stop_tx.send(true);
        for task in accepting {
            let _ = task.await;
        }
        // Every connection holds a permit until it is closed: all back means all closed.
        let all = u32::try_from(max_connections).unwrap_or(u32::MAX);
        let closed = tokio::time::timeout(
            self.shared.drain_timeout + Duration::from_secs(2),
            connections.acquire_many(all),
        )
        .await;
        if closed.is_err() {
            log(format_args!(
                "connections still open after the drain timeout: exiting"
            ));
        }
        let _ = metrics_stop.send(true);
        if let Some(metrics) = metrics {
            let _ = metrics.await;
        }
        // The connection threads end, and with them what still ran there.
        drop(threads);
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
            // The embedder's logger writes what it was given (the tool's waits for its
            // writer thread, at most `diag::FLUSH_TIMEOUT`).
            log::logger().flush();
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
    threads: Arc<ConnectionThreads>,
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
                 (max-connections)"
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
        threads.spawn(async move {
            let mut client = match TcpStream::from_std(client) {
                Ok(client) => client,
                Err(e) => {
                    log(format_args!(
                        "{local}: {peer}: cannot serve the connection: {e}"
                    ));
                    return;
                }
            };
            // A load balancer's connection names its client first (the PROXY protocol);
            // without a header, or with a bad one, it is closed.
            let peer = if shared.proxy_protocol.trusts(peer.ip()) {
                let read = proxy_protocol::read_header(&mut client);
                match tokio::time::timeout(shared.frame_timeout, read).await {
                    Ok(Ok(proxy_protocol::Header::Proxied(client))) => client,
                    Ok(Ok(proxy_protocol::Header::Local)) => peer,
                    Ok(Err(e)) => {
                        shared.metrics.proxy_header_refused();
                        log(format_args!(
                            "{peer} -> {local}: closing the connection: {e}"
                        ));
                        return;
                    }
                    Err(_) => {
                        shared.metrics.proxy_header_refused();
                        log(format_args!(
                            "{peer} -> {local}: no whole PROXY header within the frame \
                             timeout ({:?}), closing the connection",
                            shared.frame_timeout
                        ));
                        return;
                    }
                }
            } else {
                peer
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
            // through the guard, until `max-connections`.
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

impl Shared {
    /// What every connection of a guard run with `config` shares.
    pub fn new(config: &Config, audit: Audit) -> Shared {
        // Audit lines are counted in the budget too (issue 35, finding 5).
        let budget = Budget::new(config.max_buffered_bytes, config.max_frame_size);
        audit.count_in(&budget);
        let metrics = if config.metrics_listen.is_some() {
            Metrics::new(audit.metrics())
        } else {
            Metrics::disabled()
        };
        // The first policy in force: generation 1.
        metrics.policy_in_force(crate::filters::elect::policy_hash(&config.policy));
        Shared {
            metrics: Arc::new(metrics),
            filters: config.filters.clone(),
            heavy: crate::core::heavy::Heavy::per_core(),
            refusal_pace: crate::core::refusal_pace::RefusalPace::new(
                config.refused_bytes_per_second as u64,
            ),
            next_connection: std::sync::atomic::AtomicU64::new(1),
            policy: Arc::new(RwLock::new(Arc::new(config.policy.clone()))),
            audit: Arc::new(audit),
            max_frame_size: config.max_frame_size,
            plain: config.plain,
            idle_timeout: config.idle_timeout,
            frame_timeout: config.frame_timeout,
            upstream_connect_timeout: config.upstream_connect_timeout,
            request_timeout: config.request_timeout,
            drain_timeout: config.drain_timeout,
            max_connection_age: config.max_connection_age,
            proxy_protocol: crate::core::proxy_protocol::Trusted::new(
                config.proxy_protocol_from.clone(),
            ),
            health: crate::observability::health::Health::default(),
            budget,
            tls: None,
            addresses: Arc::new(
                Routes::new(
                    config
                        .routes
                        .iter()
                        .map(|r| (r.listen, r.upstream, config.upstream_name(r.upstream))),
                    config.advertise_host.clone(),
                    None,
                )
                .advertising(&config.route_advertise),
            ),
        }
    }
}
