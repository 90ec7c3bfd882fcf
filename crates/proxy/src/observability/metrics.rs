//! What the guard did, for Prometheus (`metrics-listen`): counters, gauges and a
//! histogram kept with the `prometheus-client` crate and served in its text format at
//! `/metrics`, with a small page for a person at `/status` (served by
//! [`crate::observability::listener`]).
//!
//! The names follow Prometheus' conventions (base units, `_total` on counters) under the
//! prefix `elect_leaders_guard_`; the guard's manual (GUARD.md) lists them. Every series
//! of a label that a client or a broker chooses is bounded: the API label takes the names
//! of the APIs Kafka has (others are `unknown`), reasons and verdicts are fixed sets.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use kafka_elect_leaders_text::html as escape;

use crate::core::close::CloseReason;
use crate::filters::elect::policy::{Decision, Policy, Rule, Verdict};
use crate::observability::audit::AuditMetrics;

/// Decisions the status page shows.
const RECENT: usize = 20;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Traffic {
    api: &'static str,
    direction: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Api {
    api: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ChangeLabel {
    api: &'static str,
    verdict: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VerdictLabel {
    verdict: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RuleLabel {
    rule: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Reason {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HashLabel {
    hash: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabel {
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FilterLabel {
    filter: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FilterEvent {
    filter: &'static str,
    event: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FilterClientEvent {
    filter: &'static str,
    event: &'static str,
    client: String,
}

/// Client addresses with series of their own in a filter's per-client counters
/// ([`Session::count_per_client`](crate::filter::Session::count_per_client)); later ones
/// are counted as `other`.
pub const MAX_CLIENT_SERIES: usize = 256;

type Histograms = Family<Api, Histogram, fn() -> Histogram>;

fn round_trip_histogram() -> Histogram {
    // 0.5 ms to about 16 s.
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

/// Why a client was refused at once.
#[derive(Clone, Copy, Debug)]
pub enum Refused {
    /// `max-connections` reached.
    MaxConnections,
    /// Out of file descriptors.
    Descriptors,
}

/// The guard's metrics, shared by every connection.
pub struct Metrics {
    /// Whether anything is recorded: only when the metrics are served (a guard without
    /// `metrics-listen` pays nothing for them, and keeps no label set or last decision).
    enabled: bool,
    registry: Registry,
    frames: Family<Traffic, Counter>,
    bytes: Family<Traffic, Counter>,
    decisions: Family<VerdictLabel, Counter>,
    decision_rules: Family<RuleLabel, Counter>,
    changes: Family<ChangeLabel, Counter>,
    refused_partitions: Counter,
    connections_open: Gauge,
    connections_accepted: Counter,
    connections_refused: Family<Reason, Counter>,
    connections_closed: Family<Reason, Counter>,
    audit_failures: Counter,
    /// The audit delivery's (its sink's counters are read from it when served).
    delivery: crate::observability::audit::DeliveryMetrics,
    round_trip: Histograms,
    rewrites: Counter,
    filter_events: Family<FilterEvent, Counter>,
    filter_client_events: Family<FilterClientEvent, Counter>,
    /// The client addresses with series of their own, at most [`MAX_CLIENT_SERIES`].
    filter_clients: Mutex<std::collections::HashSet<std::net::IpAddr>>,
    filter_closes: Family<FilterLabel, Counter>,
    filter_drops: Family<FilterLabel, Counter>,
    refusals_paced: Counter,
    connections_aged: Counter,
    proxy_headers_refused: Counter,
    refusal_pace_seconds: Counter<f64, std::sync::atomic::AtomicU64>,
    /// The last decisions, newest last, for the status page.
    recent: Mutex<VecDeque<Recent>>,
    /// The policy in force and its reloads: [`Metrics::policy_in_force`].
    replicas: Replicas,
}

/// What tells replicas apart: the hash of the policy in force, its generation, and the
/// reloads by result. Kept even when the metrics are not served: the reload's log line
/// shows the hash and the generation.
#[derive(Default)]
struct Replicas {
    /// `policy_info{hash}`: one series, that of the policy in force.
    info: Family<HashLabel, Gauge>,
    generation: Gauge,
    reloads: Family<ResultLabel, Counter>,
    /// The hash and generation in force, read and replaced together.
    in_force: Mutex<(String, u64)>,
}

/// What a reload did, as `reloads_total{result}` counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReloadResult {
    /// A policy whose hash differs from the one in force was put in force.
    Applied,
    /// The configuration read was put in force (its certificates too), but its policy is
    /// the one in force: the hash and the generation stay.
    Unchanged,
    /// Its rules are weaker than those in force and it does not allow it.
    Refused,
    /// It could not be read, parsed or validated, or its certificates loaded.
    Failed,
}

impl Replicas {
    fn register(&self, registry: &mut Registry) {
        registry.register(
            "policy_info",
            "The policy in force, by its hash (the first 16 hex digits of the SHA-256 of its \
             rules, canonical): 1, one series; replicas with the same rules show the same hash",
            self.info.clone(),
        );
        registry.register(
            "policy_generation",
            "Policies put in force since the start, the first included: 1, plus one for each \
             reload that changed the hash",
            self.generation.clone(),
        );
        registry.register(
            "reloads",
            "Reloads of the configuration (SIGHUP, or its directory watched), by result \
             (applied, unchanged, refused, failed)",
            self.reloads.clone(),
        );
        // Every result from the start, 0: a rate or an alert needs the series before the
        // first reload.
        for result in [
            ReloadResult::Applied,
            ReloadResult::Unchanged,
            ReloadResult::Refused,
            ReloadResult::Failed,
        ] {
            let _ = self.reloads.get_or_create(&ResultLabel {
                result: result.name(),
            });
        }
    }
}

impl ReloadResult {
    /// The result as the label writes it.
    pub fn name(self) -> &'static str {
        match self {
            ReloadResult::Applied => "applied",
            ReloadResult::Unchanged => "unchanged",
            ReloadResult::Refused => "refused",
            ReloadResult::Failed => "failed",
        }
    }
}

/// One decision as the status page shows it.
#[derive(Clone, Debug)]
struct Recent {
    time: String,
    client: SocketAddr,
    principal: Option<String>,
    client_id: String,
    election_type: String,
    verdict: &'static str,
    rules: Vec<&'static str>,
    partitions: String,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new(AuditMetrics::default())
    }
}

impl Metrics {
    /// Metrics that record nothing: a guard that does not serve them.
    pub fn disabled() -> Metrics {
        Metrics {
            enabled: false,
            ..Metrics::new(AuditMetrics::default())
        }
    }

    /// The metrics, with `audit`'s (the audit log's queue depth, kept by the audit writer)
    /// among them.
    pub(crate) fn new(audit: AuditMetrics) -> Metrics {
        let mut registry = Registry::with_prefix("elect_leaders_guard");
        let metrics = Metrics {
            enabled: true,
            frames: Family::default(),
            bytes: Family::default(),
            decisions: Family::default(),
            decision_rules: Family::default(),
            changes: Family::default(),
            refused_partitions: Counter::default(),
            connections_open: Gauge::default(),
            connections_accepted: Counter::default(),
            connections_refused: Family::default(),
            connections_closed: Family::default(),
            audit_failures: Counter::default(),
            delivery: audit.delivery.clone(),
            round_trip: Family::new_with_constructor(round_trip_histogram),
            rewrites: Counter::default(),
            filter_events: Family::default(),
            filter_client_events: Family::default(),
            filter_clients: Mutex::default(),
            filter_closes: Family::default(),
            filter_drops: Family::default(),
            refusals_paced: Counter::default(),
            connections_aged: Counter::default(),
            proxy_headers_refused: Counter::default(),
            refusal_pace_seconds: Counter::default(),
            recent: Mutex::new(VecDeque::with_capacity(RECENT)),
            replicas: Replicas::default(),
            registry: Registry::default(),
        };
        registry.register(
            "frames",
            "Kafka frames through the guard, by API and direction (request, response)",
            metrics.frames.clone(),
        );
        registry.register_with_unit(
            "frame",
            "Bytes of Kafka frames through the guard (size prefix included), by API and direction",
            prometheus_client::registry::Unit::Bytes,
            metrics.bytes.clone(),
        );
        registry.register(
            "elect_leaders_decisions",
            "ElectLeaders requests decided, by verdict (forwarded, trimmed, refused, would-refuse)",
            metrics.decisions.clone(),
        );
        registry.register(
            "leadership_changes",
            "Requests other than ElectLeaders that can change partition leadership, decided by \
             the leadership-change policy, by API and verdict (forwarded, refused, would-refuse)",
            metrics.changes.clone(),
        );
        registry.register(
            "elect_leaders_decision_rules",
            "ElectLeaders requests a rule refused something of (or would have, in log-only mode), by rule",
            metrics.decision_rules.clone(),
        );
        registry.register(
            "elect_leaders_refused_partitions",
            "Partitions answered POLICY_VIOLATION by the guard",
            metrics.refused_partitions.clone(),
        );
        registry.register(
            "connections_open",
            "Client connections open now",
            metrics.connections_open.clone(),
        );
        registry.register(
            "connections_accepted",
            "Client connections accepted",
            metrics.connections_accepted.clone(),
        );
        registry.register(
            "connections_refused",
            "Client connections closed at once, by reason (max-connections, descriptors)",
            metrics.connections_refused.clone(),
        );
        registry.register(
            "connections_closed",
            "Client connections closed, by reason (client, idle, timeout, malformed, upstream, \
             handshake, stop, error)",
            metrics.connections_closed.clone(),
        );
        registry.register(
            "audit_queue_lines",
            "Audit lines waiting to be written",
            audit.queued_lines,
        );
        registry.register(
            "audit_queue_bytes",
            "Bytes of audit lines waiting to be written (bounded by audit-queue-bytes)",
            audit.queued_bytes,
        );
        registry.register(
            "audit_forwarded_unaudited",
            "Decisions under log-only forwarded although they could not be audited",
            audit.forwarded_unaudited,
        );
        let delivery = &audit.delivery;
        registry.register(
            "audit_delivered",
            "Audit records the audit sink acknowledged (audit-kafka: acks=all)",
            delivery.delivered.clone(),
        );
        registry.register(
            "audit_delivery_failed",
            "Audit records the audit sink gave up on after its retries",
            delivery.failed.clone(),
        );
        registry.register(
            "audit_not_queued",
            "Audit records the audit sink's buffer had no room for (batch: reported in the \
             next record's undeliveredbefore)",
            delivery.not_queued.clone(),
        );
        registry.register(
            "audit_deadline_missed",
            "Audit records of leadership changes not acknowledged within the \
             blocking-strict deadline",
            delivery.deadline_missed.clone(),
        );
        registry.register(
            "audit_unacknowledged_refusals",
            "Leadership changes refused because their audit record was not acknowledged \
             (blocking, blocking-strict)",
            delivery.refused.clone(),
        );
        registry.register(
            "audit_sink_buffered_bytes",
            "Bytes of audit records in the audit sink's buffer, waiting for the broker",
            delivery.buffered_bytes.clone(),
        );
        registry.register(
            "audit_failures",
            "ElectLeaders requests refused because their decision could not be audited",
            metrics.audit_failures.clone(),
        );
        registry.register_with_unit(
            "broker_round_trip",
            "From a request forwarded to its answer from the broker, by API",
            prometheus_client::registry::Unit::Seconds,
            metrics.round_trip.clone(),
        );
        registry.register(
            "address_rewrites",
            "Broker answers whose broker addresses were rewritten",
            metrics.rewrites.clone(),
        );
        registry.register(
            "filter_events",
            "What a filter counted (Session::count), by filter and event",
            metrics.filter_events.clone(),
        );
        registry.register(
            "filter_client_events",
            "What a filter counted per client address (Session::count_per_client), by filter, \
             event and client (the first 256 addresses; later ones as other)",
            metrics.filter_client_events.clone(),
        );
        registry.register(
            "filter_closes",
            "Connections a filter closed, by filter",
            metrics.filter_closes.clone(),
        );
        registry.register(
            "filter_drops",
            "Requests a filter dropped (neither forwarded nor answered), by filter",
            metrics.filter_drops.clone(),
        );
        registry.register(
            "proxy_headers_refused",
            "Connections from a proxy-protocol-from source closed for a missing or bad PROXY \
             protocol header",
            metrics.proxy_headers_refused.clone(),
        );
        registry.register(
            "connections_aged",
            "Connections drained at their maximum age (max-connection-age)",
            metrics.connections_aged.clone(),
        );
        registry.register(
            "refusals_paced",
            "Large refused frames after which a client's connection waited before its next \
             frame was read (refused-bytes-per-second)",
            metrics.refusals_paced.clone(),
        );
        registry.register_with_unit(
            "refusal_pace",
            "Time connections waited, their next frame unread, for their client's refused \
             bytes to come back within refused-bytes-per-second",
            prometheus_client::registry::Unit::Seconds,
            metrics.refusal_pace_seconds.clone(),
        );
        metrics.replicas.register(&mut registry);
        Metrics {
            registry,
            ..metrics
        }
    }

    /// A frame of `api_key` in `direction` ("request" or "response"), `len` bytes.
    pub fn frame(&self, api_key: i16, direction: &'static str, len: usize) {
        if !self.enabled {
            return;
        }
        let labels = Traffic {
            api: api_name(api_key),
            direction,
        };
        self.frames.get_or_create(&labels).inc();
        self.bytes.get_or_create(&labels).inc_by(len as u64);
    }

    /// The broker's answer to a request of `api_key`, `elapsed` after it was forwarded.
    pub fn round_trip(&self, api_key: i16, elapsed: Duration) {
        if !self.enabled {
            return;
        }
        self.round_trip
            .get_or_create(&Api {
                api: api_name(api_key),
            })
            .observe(elapsed.as_secs_f64());
    }

    /// A filter's own counter ([`Session::count`](crate::filter::Session::count)).
    pub fn filter_event(&self, filter: &'static str, event: &'static str, by: u64) {
        if !self.enabled {
            return;
        }
        self.filter_events
            .get_or_create(&FilterEvent { filter, event })
            .inc_by(by);
    }

    /// A filter's own counter per client address, the first [`MAX_CLIENT_SERIES`]
    /// addresses by name, later ones as `other`.
    pub fn filter_client_event(
        &self,
        filter: &'static str,
        event: &'static str,
        client: std::net::IpAddr,
        by: u64,
    ) {
        if !self.enabled {
            return;
        }
        let named = {
            let mut clients = self
                .filter_clients
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            clients.contains(&client)
                || (clients.len() < MAX_CLIENT_SERIES && clients.insert(client))
        };
        let client = if named {
            client.to_string()
        } else {
            "other".to_owned()
        };
        self.filter_client_events
            .get_or_create(&FilterClientEvent {
                filter,
                event,
                client,
            })
            .inc_by(by);
    }

    /// A connection a filter closed.
    pub fn filter_closed(&self, filter: &'static str) {
        if self.enabled {
            self.filter_closes
                .get_or_create(&FilterLabel { filter })
                .inc();
        }
    }

    /// A request a filter dropped.
    pub fn filter_dropped(&self, filter: &'static str) {
        if self.enabled {
            self.filter_drops
                .get_or_create(&FilterLabel { filter })
                .inc();
        }
    }

    /// A connection waits `wait` before reading its next frame, its client's refused large
    /// frames past their pace (`crate::core::refusal_pace`).
    pub fn refusal_paced(&self, wait: Duration) {
        if !self.enabled {
            return;
        }
        self.refusals_paced.inc();
        self.refusal_pace_seconds.inc_by(wait.as_secs_f64());
    }

    /// A load balancer's connection closed: its PROXY header missing or bad.
    pub fn proxy_header_refused(&self) {
        if !self.enabled {
            return;
        }
        self.proxy_headers_refused.inc();
    }

    /// A connection reached its maximum age and drains.
    pub fn aged(&self) {
        if !self.enabled {
            return;
        }
        self.connections_aged.inc();
    }

    /// An answer whose broker addresses were rewritten.
    pub fn rewrote(&self) {
        if !self.enabled {
            return;
        }
        self.rewrites.inc();
    }

    /// A decision on an ElectLeaders request, for the counters and the status page.
    /// A leadership-change request decided (see `leadership`).
    pub fn change_decided(&self, api: &'static str, verdict: Verdict) {
        if !self.enabled {
            return;
        }
        self.changes
            .get_or_create(&ChangeLabel {
                api,
                verdict: verdict.name(),
            })
            .inc();
    }

    pub fn decided(&self, decision: &Decision, recent: impl FnOnce() -> RecentDecision) {
        if !self.enabled {
            return;
        }
        self.decisions
            .get_or_create(&VerdictLabel {
                verdict: decision.verdict.name(),
            })
            .inc();
        for rule in decision.rules.iter() {
            self.decision_rules
                .get_or_create(&RuleLabel { rule: rule.name() })
                .inc();
        }
        if matches!(decision.verdict, Verdict::Refused | Verdict::Trimmed) {
            self.refused_partitions.inc_by(decision.refused as u64);
        }
        if decision.rules.contains(Rule::AuditLog) {
            self.audit_failures.inc();
        }
        let r = recent();
        let entry = Recent {
            time: crate::observability::audit::rfc3339_now(),
            client: r.client,
            principal: r.principal,
            client_id: r.client_id,
            election_type: r.election_type,
            verdict: decision.verdict.name(),
            rules: decision.rules.iter().map(Rule::name).collect(),
            partitions: match decision.requested {
                Some(n) => format!("{} of {n} refused", decision.refused),
                None => "all".to_owned(),
            },
        };
        let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        if recent.len() == RECENT {
            recent.pop_front();
        }
        recent.push_back(entry);
    }

    /// A client accepted: open until [`Metrics::closed`].
    pub fn accepted(&self) {
        if !self.enabled {
            return;
        }
        self.connections_accepted.inc();
        self.connections_open.inc();
    }

    /// A client refused at once.
    pub fn refused(&self, why: Refused) {
        if !self.enabled {
            return;
        }
        let reason = match why {
            Refused::MaxConnections => "max-connections",
            Refused::Descriptors => "descriptors",
        };
        self.connections_refused
            .get_or_create(&Reason { reason })
            .inc();
    }

    /// An accepted client's connection closed; `None`: its TLS handshake failed.
    pub fn closed(&self, reason: Option<CloseReason>) {
        if !self.enabled {
            return;
        }
        self.connections_open.dec();
        let reason = reason.map_or("handshake", CloseReason::name);
        self.connections_closed
            .get_or_create(&Reason { reason })
            .inc();
    }

    /// The text format, as `/metrics` serves it.
    pub fn encode(&self) -> String {
        self.delivery.refresh();
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    fn counter(family: &Family<Reason, Counter>, reason: &'static str) -> u64 {
        family.get(&Reason { reason }).map_or(0, |c| c.get())
    }

    /// Puts `hash` in force as the policy's: its generation is the one before plus one
    /// (the first, at the start, is 1), and `policy_info` has its series alone. Returns the
    /// generation.
    pub(crate) fn policy_in_force(&self, hash: String) -> u64 {
        let mut in_force = self
            .replicas
            .in_force
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let generation = in_force.1 + 1;
        if self.enabled {
            self.replicas.info.remove(&HashLabel {
                hash: in_force.0.clone(),
            });
            self.replicas
                .info
                .get_or_create(&HashLabel { hash: hash.clone() })
                .set(1);
            self.replicas
                .generation
                .set(i64::try_from(generation).unwrap_or(i64::MAX));
        }
        *in_force = (hash, generation);
        generation
    }

    /// The hash and the generation of the policy in force.
    pub fn policy_version(&self) -> (String, u64) {
        self.replicas
            .in_force
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// A reload, by what it did.
    pub(crate) fn reload(&self, result: ReloadResult) {
        if self.enabled {
            self.replicas
                .reloads
                .get_or_create(&ResultLabel {
                    result: result.name(),
                })
                .inc();
        }
    }

    /// The status page: listeners, rules, counts and the last decisions, self-contained
    /// (no script, no external asset; an empty inline icon, so that a browser asks for no
    /// `/favicon.ico`, whose 404 would be a console error).
    pub fn status_page(&self, routes: &[(SocketAddr, String)], policy: &Policy) -> String {
        let mut page = String::new();
        let _ = write!(
            page,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <title>elect-leaders guard</title>\
             <link rel=\"icon\" href=\"data:,\"><style>\
             body{{font-family:sans-serif;margin:2em;color:#222}}\
             table{{border-collapse:collapse;margin-bottom:1.5em}}\
             td,th{{border:1px solid #ccc;padding:.25em .6em;text-align:left}}\
             th{{background:#f3f3f3}} .refused{{color:#a00}} .forwarded{{color:#070}}\
             </style></head><body><h1>elect-leaders guard</h1>"
        );
        page.push_str("<h2>Listeners</h2><table><tr><th>listen</th><th>upstream</th></tr>");
        for (listen, upstream) in routes {
            let _ = write!(
                page,
                "<tr><td>{}</td><td>{}</td></tr>",
                listen,
                escape(upstream)
            );
        }
        let (hash, generation) = self.policy_version();
        let _ = write!(
            page,
            "</table><h2>Policy in force</h2><table id=\"policy\">\
             <tr><th>hash</th><td>{}</td></tr><tr><th>generation</th><td>{generation}</td></tr>",
            escape(&hash)
        );
        page.push_str("</table><h2>Rules in force</h2><table id=\"rules\">");
        for (name, value) in rules_shown(policy) {
            let _ = write!(page, "<tr><th>{name}</th><td>{}</td></tr>", escape(&value));
        }
        page.push_str("</table><h2>Counts</h2><table id=\"counts\">");
        let verdict = |v: &'static str| {
            self.decisions
                .get(&VerdictLabel { verdict: v })
                .map_or(0, |c| c.get())
        };
        let rows: [(&str, &str, u64); 9] = [
            ("forwarded", "elections forwarded", verdict("forwarded")),
            ("trimmed", "elections trimmed", verdict("trimmed")),
            ("refused", "elections refused", verdict("refused")),
            (
                "would-refuse",
                "elections log-only would refuse",
                verdict("would-refuse"),
            ),
            (
                "refused-partitions",
                "partitions refused",
                self.refused_partitions.get(),
            ),
            (
                "connections-open",
                "connections open",
                self.connections_open.get().max(0) as u64,
            ),
            (
                "connections-accepted",
                "connections accepted",
                self.connections_accepted.get(),
            ),
            (
                "connections-refused",
                "connections refused at once",
                Metrics::counter(&self.connections_refused, "max-connections")
                    + Metrics::counter(&self.connections_refused, "descriptors"),
            ),
            (
                "audit-failures",
                "elections refused, not auditable",
                self.audit_failures.get(),
            ),
        ];
        for (id, label, value) in rows {
            let _ = write!(
                page,
                "<tr><th>{label}</th><td id=\"{id}\">{value}</td></tr>"
            );
        }
        page.push_str(
            "</table><h2>Last decisions</h2><table id=\"decisions\"><tr><th>time</th>\
             <th>client</th><th>principal</th><th>client id</th><th>type</th>\
             <th>verdict</th><th>rules</th><th>partitions</th></tr>",
        );
        let recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        for r in recent.iter().rev() {
            let _ = write!(
                page,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
                 <td class=\"{}\">{}</td><td>{}</td><td>{}</td></tr>",
                r.time,
                r.client,
                escape(r.principal.as_deref().unwrap_or("-")),
                escape(&r.client_id),
                escape(&r.election_type),
                r.verdict,
                r.verdict,
                r.rules.join(", "),
                escape(&r.partitions),
            );
        }
        page.push_str("</table></body></html>\n");
        page
    }
}

/// What the caller knows of a decision's request, for the status page.
pub struct RecentDecision {
    pub client: SocketAddr,
    pub principal: Option<String>,
    pub client_id: String,
    pub election_type: String,
}

/// The rules of `policy`, as the status page lists them.
fn rules_shown(policy: &Policy) -> Vec<(&'static str, String)> {
    let names = |set: &std::collections::HashSet<Box<[u8]>>| {
        let mut list: Vec<String> = set
            .iter()
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .collect();
        list.sort();
        list.join(", ")
    };
    let mut principals: Vec<&str> = policy.allowed_principals.iter().map(|p| &**p).collect();
    principals.sort_unstable();
    let mut own: Vec<&str> = policy.principal_rules.keys().map(|p| &**p).collect();
    own.sort_unstable();
    vec![
        ("deny-unclean", policy.deny_unclean.to_string()),
        ("protect-topic", names(&policy.protected_topics)),
        ("allow-client-id", names(&policy.allowed_client_ids)),
        ("allow-principal", principals.join(", ")),
        (
            "max-partitions",
            policy
                .max_partitions
                .map_or_else(|| "none".to_owned(), |n| n.to_string()),
        ),
        ("log-only", policy.log_only.to_string()),
        ("principals with rules of their own", own.join(", ")),
    ]
}

/// The name of API `api_key` as Kafka names it (the codec's table,
/// [`kafka_elect_leaders::api_name`]), or "unknown": a label value of a bounded set,
/// whatever key a client sends.
pub fn api_name(api_key: i16) -> &'static str {
    kafka_elect_leaders::api_name(api_key).unwrap_or("unknown")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_names_are_kafkas_and_bounded() {
        assert_eq!(api_name(3), "Metadata");
        assert_eq!(api_name(43), "ElectLeaders");
        assert_eq!(api_name(-1), "unknown");
        assert_eq!(api_name(999), "unknown");
    }

    /// A filter's per-client counter under many client addresses (each one a new label
    /// value a client chooses): the first MAX_CLIENT_SERIES have series of their own, every
    /// later one is counted in `other`, and the registry stops growing.
    #[test]
    fn per_client_series_are_bounded() {
        let m = Metrics::default();
        let extra = 100;
        for n in 0..(MAX_CLIENT_SERIES + extra) as u32 {
            let client = std::net::IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + n));
            m.filter_client_event("f", "bytes", client, 2);
        }
        // The first address again: still its own series.
        m.filter_client_event("f", "bytes", "10.0.0.0".parse().unwrap(), 1);
        let text = m.encode();
        let series: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("elect_leaders_guard_filter_client_events_total{"))
            .collect();
        assert_eq!(series.len(), MAX_CLIENT_SERIES + 1, "{series:?}");
        assert!(text.contains(&format!(
            "elect_leaders_guard_filter_client_events_total{{filter=\"f\",event=\"bytes\",client=\"other\"}} {}",
            2 * extra
        )));
        assert!(text.contains(
            "elect_leaders_guard_filter_client_events_total{filter=\"f\",event=\"bytes\",client=\"10.0.0.0\"} 3"
        ));
    }

    #[test]
    fn the_text_format_names_each_metric() {
        let m = Metrics::default();
        m.frame(3, "request", 40);
        m.round_trip(3, Duration::from_millis(3));
        m.accepted();
        m.closed(Some(CloseReason::Idle));
        let text = m.encode();
        for line in [
            "elect_leaders_guard_frames_total{api=\"Metadata\",direction=\"request\"} 1",
            "elect_leaders_guard_frame_bytes_total{api=\"Metadata\",direction=\"request\"} 40",
            "elect_leaders_guard_connections_open 0",
            "elect_leaders_guard_connections_accepted_total 1",
            "elect_leaders_guard_connections_closed_total{reason=\"idle\"} 1",
            "elect_leaders_guard_broker_round_trip_seconds_count{api=\"Metadata\"} 1",
        ] {
            assert!(text.contains(line), "{line} not in:\n{text}");
        }
    }

    #[test]
    fn the_status_page_escapes_what_clients_chose() {
        let m = Metrics::default();
        let decision = Policy::default().refuse_unaudited(
            &kafka_elect_leaders::parse_request(
                &kafka_elect_leaders::EncodeRequestExt::encode_to_vec(
                    &kafka_elect_leaders::ElectLeadersRequestData::default(),
                    2,
                )
                .unwrap(),
            )
            .unwrap(),
            "the log is stalled",
        );
        m.decided(&decision, || RecentDecision {
            client: "127.0.0.1:1".parse().unwrap(),
            principal: Some("<script>alert(1)</script>".into()),
            client_id: "a&b\u{202e}cba".into(),
            election_type: "PREFERRED".into(),
        });
        let page = m.status_page(&[], &Policy::default());
        assert!(!page.contains("<script>"), "{page}");
        assert!(page.contains("&lt;script&gt;") && page.contains("a&amp;b\\u{202e}cba"));
        assert!(
            !page.chars().any(kafka_elect_leaders_text::is_hidden),
            "{page}"
        );
        assert!(page.contains("<td id=\"audit-failures\">1</td>"), "{page}");
    }
}
