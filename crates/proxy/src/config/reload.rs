//! Putting new settings in force in a running guard ([`Reloader`]): certificates read
//! again, or a whole configuration whose rules and TLS settings apply to new requests and
//! connections, what only a restart can change said as such. Each reload is counted by
//! its result, and a policy whose hash differs from the one in force takes the next
//! generation (`policy_info`, `policy_generation`, `reloads_total`: replicas that agree).

use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use crate::config::settings::Config;
use crate::core::shared::Shared;
use crate::core::tls::TlsError;
use crate::filters::elect::policy_hash;
use crate::observability::metrics::ReloadResult;

/// Reloads the guard's certificates, or its whole policy and TLS settings: see
/// [`crate::Guard::reloader`].
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
    /// ([`crate::Policy::weakened_by`]).
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
    /// The hash of the policy now in force ([`crate::elect::policy_hash()`]).
    pub hash: String,
    /// Its generation: 1 at the start, plus one for each reload that changed the hash.
    pub generation: u64,
    /// The policy read is the one that was in force (the same hash): the generation stays.
    pub unchanged: bool,
    /// The settings whose new values wait for a restart, by their names in the
    /// configuration file (`audit-log`, `threads`, ...).
    pub restart: Vec<&'static str>,
    /// What the new rules dropped of those in force ([`crate::Policy::weakened_by`]); not empty
    /// only when the configuration allowed it ([`Config::allow_weaker_rules`]).
    pub weakened: Vec<String>,
}

impl std::error::Error for ReloadError {}

impl Reloader {
    /// The reloader of the guard whose connections share `shared`, started with `started`.
    pub(crate) fn new(shared: Arc<Shared>, started: Arc<Config>) -> Reloader {
        Reloader { shared, started }
    }

    /// Reads the certificate and key files again. New connections use them; connections
    /// open keep theirs. On an error nothing changes. `Ok(false)`: the guard has no TLS.
    ///
    /// Counted in `reloads_total` as `unchanged` (the policy stays) or `failed`.
    pub fn reload(&self) -> Result<bool, TlsError> {
        let reloaded = match &self.shared.tls {
            Some(tls) => tls.reload().map(|()| true),
            None => Ok(false),
        };
        self.shared.metrics.reload(match reloaded {
            Ok(_) => ReloadResult::Unchanged,
            Err(_) => ReloadResult::Failed,
        });
        reloaded
    }

    /// Counts a reload that failed before [`Reloader::apply`]: its configuration could not
    /// be read, parsed or validated (`reloads_total{result="failed"}`).
    pub fn failed(&self) {
        self.shared.metrics.reload(ReloadResult::Failed);
    }

    /// The hash of the policy in force and its generation (1 at the start).
    pub fn policy_version(&self) -> (String, u64) {
        self.shared.metrics.policy_version()
    }

    /// Puts `config`'s policy and TLS settings in force together, or, on an error, none
    /// of them. The certificates are loaded first; then requests read from now on are
    /// decided by the new policy (a request already decided is answered by the policy
    /// that decided it), and new connections use the new certificates.
    ///
    /// It fails closed: a policy weaker than the one in force (a protected topic fewer,
    /// `deny-unclean` off, ...: [`crate::Policy::weakened_by`]) is refused, naming what it would
    /// drop, unless `config` allows it ([`Config::allow_weaker_rules`]); then it is put in
    /// force and what it dropped is returned, for the caller to log.
    ///
    /// The rest of `config` (listeners and brokers, the audit log, limits and timeouts) is
    /// not changed while the guard runs: the settings whose values differ from those it
    /// started with are returned, by their names in the configuration file, for the caller
    /// to say that they wait for a restart. TLS cannot be turned on or off on either side
    /// either.
    ///
    /// A policy whose hash differs from the one in force takes the next generation; the
    /// same one keeps it (`unchanged`). Each call is counted in `reloads_total` by its
    /// result: `applied`, `unchanged`, `refused` (weaker) or `failed` (certificates).
    ///
    /// Calls are not serialized: one caller (the SIGHUP handler) reloads at a time.
    pub fn apply(&self, config: &Config) -> Result<Reloaded, ReloadError> {
        let applied = self.put_in_force(config);
        self.shared.metrics.reload(match &applied {
            Ok(reloaded) if reloaded.unchanged => ReloadResult::Unchanged,
            Ok(_) => ReloadResult::Applied,
            Err(ReloadError::Weaker(_)) => ReloadResult::Refused,
            Err(ReloadError::Tls(_)) => ReloadResult::Failed,
        });
        applied
    }

    /// [`Reloader::apply`], uncounted.
    fn put_in_force(&self, config: &Config) -> Result<Reloaded, ReloadError> {
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
        let hash = policy_hash(&config.policy);
        self.shared.set_policy(config.policy.clone());
        if let (Some(tls), Some(prepared)) = (&self.shared.tls, prepared) {
            tls.install(prepared);
        }
        let (before, generation) = self.shared.metrics.policy_version();
        let unchanged = before == hash;
        let generation = if unchanged {
            generation
        } else {
            self.shared.metrics.policy_in_force(hash.clone())
        };
        Ok(Reloaded {
            hash,
            generation,
            unchanged,
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

/// The settings of `new` that differ from `old`'s and take effect only at a restart.
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
    check(old.drain_timeout != new.drain_timeout, "drain-timeout");
    check(
        old.proxy_protocol_from != new.proxy_protocol_from,
        "proxy-protocol-from",
    );
    check(
        old.max_connection_age != new.max_connection_age,
        "max-connection-age",
    );
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
    check(
        old.refused_bytes_per_second != new.refused_bytes_per_second,
        "refused-bytes-per-second",
    );
    check(old.advertise_host != new.advertise_host, "advertise-host");
    check(
        old.route_advertise != new.route_advertise,
        "route advertise",
    );
    check(old.dynamic_listen != new.dynamic_listen, "dynamic-listen");
    check(old.metrics_listen != new.metrics_listen, "metrics-listen");
    check(old.metrics_limits != new.metrics_limits, "metrics limits");
    changed
}
