//! What every connection of one guard shares: the policy in force, the audit log, the
//! limits and timeouts, the buffer budget, TLS, the address rewrite and the metrics.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use crate::core::budget::Budget;
use crate::core::heavy::Heavy;
use crate::core::tls::Tls;
use crate::filter::{Filters, Session, SessionParts};
use crate::filters::addresses::routes::Routes;
use crate::filters::elect::policy::Policy;
use crate::filters::sasl::identity::Identity;
use crate::observability::audit::Audit;
use crate::observability::audit::ConnInfo;
use crate::observability::metrics::Metrics;

/// What every connection shares.
pub struct Shared {
    /// The policy in force: replaced whole on reload ([`Shared::set_policy`]); each
    /// ElectLeaders request is decided and answered by the one it found.
    pub(crate) policy: Arc<RwLock<Arc<Policy>>>,
    /// The audit log.
    pub audit: Arc<Audit>,
    /// The largest frame either way, in bytes.
    pub max_frame_size: usize,
    /// The hidden plain mode (`Config::plain`): bytes copied both ways, nothing parsed (a
    /// baseline for benches/proxy_throughput.sh).
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
    /// After a stop, how long answers in flight are waited for.
    pub drain_timeout: Duration,
    /// A connection open this long is drained.
    pub max_connection_age: Option<Duration>,
    /// The sources whose connections begin with a PROXY protocol header.
    pub(crate) proxy_protocol: crate::core::proxy_protocol::Trusted,
    /// Whether the guard is ready for clients (`/readyz`).
    pub(crate) health: crate::observability::health::Health,
    /// The bytes of large frames held at once, by every connection.
    pub budget: Budget,
    /// TLS towards clients, brokers or both; None: plaintext both ways.
    pub tls: Option<Tls>,
    /// Broker addresses rewritten in the answers that carry them.
    pub addresses: Arc<Routes>,
    /// What the guard did, for `metrics-listen`.
    pub metrics: Arc<Metrics>,
    /// What reads each frame, in order.
    pub filters: Filters,
    /// The pace of each client's refused large frames.
    pub(crate) refusal_pace: crate::core::refusal_pace::RefusalPace,
    /// The work on large frames: off the connection threads, a core always left to the others.
    pub(crate) heavy: Heavy,
    /// The number the next connection's session takes ([`Session::id`]).
    pub(crate) next_connection: std::sync::atomic::AtomicU64,
}

impl Shared {
    /// The policy in force.
    pub fn policy(&self) -> Arc<Policy> {
        crate::filters::elect::policy::in_force(&self.policy)
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

impl Session {
    /// The session of the connection `conn`, whose principal is `identity`'s, on a guard
    /// whose connections share `shared`. Here rather than in `filter.rs`, which names no
    /// part of the guard above it.
    pub(crate) fn new(conn: ConnInfo, identity: Identity, shared: &Shared) -> Self {
        let id = shared
            .next_connection
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Session::of(SessionParts {
            id,
            conn,
            identity,
            policy: shared.policy.clone(),
            audit_log: shared.audit.clone(),
            metrics: shared.metrics.clone(),
            addresses: shared.addresses.clone(),
            audit: Audit::connection(&shared.audit, conn.client.ip()),
        })
    }
}
