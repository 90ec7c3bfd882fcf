//! What every connection of one guard shares: the policy in force, the audit log, the
//! limits and timeouts, the buffer budget, TLS, the address rewrite and the metrics.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use crate::addresses::Addresses;
use crate::audit::Audit;
use crate::budget::Budget;
use crate::filter::Filters;
use crate::metrics::Metrics;
use crate::policy::Policy;
use crate::server::Config;
use crate::tls::Tls;

/// What every connection shares.
pub struct Shared {
    /// The policy in force: replaced whole on reload ([`Shared::set_policy`]); each
    /// ElectLeaders request is decided and answered by the one it found.
    pub(crate) policy: RwLock<Arc<Policy>>,
    pub audit: Audit,
    pub max_frame_size: usize,
    /// The hidden `--plain` mode: bytes copied both ways, nothing parsed (a baseline for
    /// benches/proxy_throughput.sh).
    pub plain: bool,
    /// No frame either way for this long: the connection is closed.
    pub idle_timeout: Duration,
    /// A frame from the client that has begun must be whole within this.
    pub frame_timeout: Duration,
    /// Connecting to the broker must succeed within this.
    pub upstream_connect_timeout: Duration,
    /// An answer the broker owes must come within this, after the wait the request asks
    /// for.
    pub request_timeout: Duration,
    /// The bytes of large frames held at once, by every connection.
    pub budget: Budget,
    /// TLS towards clients, brokers or both; None: plaintext both ways.
    pub tls: Option<Tls>,
    /// Broker addresses rewritten in the answers that carry them.
    pub addresses: Addresses,
    /// What the guard did, for `--metrics-listen`.
    pub metrics: Metrics,
    /// What reads each frame, in order.
    pub filters: Filters,
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
        Shared {
            metrics,
            filters: config.filters.clone(),
            policy: RwLock::new(Arc::new(config.policy.clone())),
            audit,
            max_frame_size: config.max_frame_size,
            plain: config.plain,
            idle_timeout: config.idle_timeout,
            frame_timeout: config.frame_timeout,
            upstream_connect_timeout: config.upstream_connect_timeout,
            request_timeout: config.request_timeout,
            budget,
            tls: None,
            addresses: Addresses::new(
                config
                    .routes
                    .iter()
                    .map(|r| (r.listen, r.upstream, config.upstream_name(r.upstream))),
                config.advertise_host.clone(),
                None,
            ),
        }
    }

    /// The policy in force.
    pub fn policy(&self) -> Arc<Policy> {
        match self.policy.read() {
            Ok(policy) => policy.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Puts `policy` in force: requests read from now on are decided by it.
    pub fn set_policy(&self, policy: Policy) {
        let policy = Arc::new(policy);
        match self.policy.write() {
            Ok(mut current) => *current = policy,
            Err(poisoned) => *poisoned.into_inner() = policy,
        }
    }
}
