//! What the guard did, for Prometheus (`--metrics-listen`): counters, gauges and a
//! histogram kept with the `prometheus-client` crate and served in its text format at
//! `/metrics`, with a small page for a person at `/status`.
//!
//! The names follow Prometheus' conventions (base units, `_total` on counters) under the
//! prefix `elect_leaders_guard_`; the README lists them. Every series of a label that a
//! client or a broker chooses is bounded: the API label takes the names of the APIs Kafka
//! has (others are `unknown`), reasons and verdicts are fixed sets.
//!
//! The listener is an HTTP/1.1 server of two pages, written here with `httparse` for the
//! request line, each client served by a task of its own, and every answer closes the
//! connection. A scrape endpoint needs no more, and no more code to trust. Its limits
//! ([`MetricsLimits`]) are its own, apart from the Kafka listeners': a client has 8 KiB
//! and 5 s to ask, and 10 s to take its answer; at most 64 are served at once. A client
//! past that takes the place of the oldest one that has not finished asking (a client
//! that asks nothing, or one byte, is closed to make room), so that clients that open
//! connections and stay silent cannot keep a scrape out however many they open; only
//! when every place is taken by a client being answered is the newcomer closed at once.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};

use crate::audit::AuditMetrics;
use crate::conn::{CloseReason, Shared};
use crate::policy::{Decision, Policy, Rule, Verdict};

/// How much a metrics client may send before its request head is whole.
const REQUEST_BYTES: usize = 8 * 1024;
/// [`MetricsLimits::max_connections`]' default.
pub const DEFAULT_METRICS_CONNECTIONS: usize = 64;
/// [`MetricsLimits::header_timeout`]'s default.
pub const DEFAULT_METRICS_HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// [`MetricsLimits::write_timeout`]'s default.
pub const DEFAULT_METRICS_WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// What a client of `/metrics` and `/status` may hold of the guard: the metrics listener's
/// own limits, apart from the Kafka listeners'.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetricsLimits {
    /// Clients served at once ([`DEFAULT_METRICS_CONNECTIONS`]). One past it takes the
    /// place of the oldest client that has not finished asking, which is closed; when
    /// every client is being answered, the newcomer is closed at once.
    pub max_connections: usize,
    /// A client's request head must be whole within this of its connection
    /// ([`DEFAULT_METRICS_HEADER_TIMEOUT`]), or it is closed.
    pub header_timeout: Duration,
    /// The whole answer must be written within this ([`DEFAULT_METRICS_WRITE_TIMEOUT`]):
    /// a client that does not read is closed.
    pub write_timeout: Duration,
}

impl Default for MetricsLimits {
    fn default() -> Self {
        MetricsLimits {
            max_connections: DEFAULT_METRICS_CONNECTIONS,
            header_timeout: DEFAULT_METRICS_HEADER_TIMEOUT,
            write_timeout: DEFAULT_METRICS_WRITE_TIMEOUT,
        }
    }
}

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

type Histograms = Family<Api, Histogram, fn() -> Histogram>;

fn round_trip_histogram() -> Histogram {
    // 0.5 ms to about 16 s.
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

/// Why a client was refused at once.
#[derive(Clone, Copy, Debug)]
pub enum Refused {
    /// `--max-connections` reached.
    MaxConnections,
    /// Out of file descriptors.
    Descriptors,
}

/// The guard's metrics, shared by every connection.
pub struct Metrics {
    /// Whether anything is recorded: only when the metrics are served (a guard without
    /// `--metrics-listen` pays nothing for them, and keeps no label set or last decision).
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
    round_trip: Histograms,
    rewrites: Counter,
    /// The last decisions, newest last, for the status page.
    recent: Mutex<VecDeque<Recent>>,
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
    pub fn new(audit: AuditMetrics) -> Metrics {
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
            round_trip: Family::new_with_constructor(round_trip_histogram),
            rewrites: Counter::default(),
            recent: Mutex::new(VecDeque::with_capacity(RECENT)),
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
            "Bytes of audit lines waiting to be written (bounded by --audit-queue-bytes)",
            audit.queued_bytes,
        );
        registry.register(
            "audit_forwarded_unaudited",
            "Decisions under --log-only forwarded although they could not be audited",
            audit.forwarded_unaudited,
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
            time: crate::audit::rfc3339_now(),
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
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    fn counter(family: &Family<Reason, Counter>, reason: &'static str) -> u64 {
        family.get(&Reason { reason }).map_or(0, |c| c.get())
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

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => out.push('\u{fffd}'),
            // A bidi control would turn the rest of the cell around: shown as its code.
            c if crate::audit::is_hidden(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// The name of API `api_key` as Kafka names it, or "unknown": a label value of a bounded
/// set, whatever key a client sends.
pub fn api_name(api_key: i16) -> &'static str {
    static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        (0..=i16::from(u8::MAX))
            .map(
                |key| match kafka_protocol::messages::ApiKey::try_from(key) {
                    // Once per API, for the process's life.
                    Ok(api) => &*Box::leak(format!("{api:?}").into_boxed_str()),
                    Err(()) => "unknown",
                },
            )
            .collect()
    });
    usize::try_from(api_key)
        .ok()
        .and_then(|i| names.get(i))
        .copied()
        .unwrap_or("unknown")
}

/// Serves `/metrics` and `/status` on `listener` until `stop`, each client in a task of
/// its own, under `limits`.
pub async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    routes: Vec<(SocketAddr, String)>,
    limits: MetricsLimits,
    mut stop: watch::Receiver<bool>,
) {
    let slots = Arc::new(Slots::new(limits.max_connections));
    let routes = Arc::new(routes);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.wait_for(|stop| *stop) => return,
        };
        let Ok((mut socket, _)) = accepted else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        // Every place taken by a client being answered: closed at once, never queued.
        let Some((id, evicted)) = slots.admit() else {
            continue;
        };
        let shared = shared.clone();
        let routes = routes.clone();
        let slots = slots.clone();
        tokio::spawn(async move {
            let _place = Place(&slots, id);
            tokio::select! {
                // Another client took this one's place: closed.
                _ = evicted => {}
                _ = answer(&mut socket, &shared, &routes, limits, || slots.answering(id)) => {}
            }
        });
    }
}

/// The places of the metrics listener's clients: each client, oldest first, and whether it
/// is being answered. A client that has not finished asking can be closed to make room
/// for a newcomer; one being answered cannot (its answer is bounded by the write timeout).
struct Slots {
    limit: usize,
    clients: Mutex<Clients>,
}

#[derive(Default)]
struct Clients {
    next: u64,
    /// By id, in the order they came. Dropping a client's sender closes it.
    open: BTreeMap<u64, Client>,
}

struct Client {
    answering: bool,
    _close: oneshot::Sender<()>,
}

impl Slots {
    fn new(limit: usize) -> Slots {
        Slots {
            limit: limit.max(1),
            clients: Mutex::new(Clients::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Clients> {
        self.clients.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A place for a new client: its id, and what completes when it is to be closed to
    /// make room for a later one. At the limit, the oldest client that has not finished
    /// asking gives its place; None when every client is being answered.
    fn admit(&self) -> Option<(u64, oneshot::Receiver<()>)> {
        let mut clients = self.lock();
        if clients.open.len() >= self.limit {
            let oldest = clients
                .open
                .iter()
                .find(|(_, client)| !client.answering)
                .map(|(&id, _)| id)?;
            clients.open.remove(&oldest);
        }
        let id = clients.next;
        clients.next += 1;
        let (close, closed) = oneshot::channel();
        clients.open.insert(
            id,
            Client {
                answering: false,
                _close: close,
            },
        );
        Some((id, closed))
    }

    /// Client `id` asked: it is being answered, and keeps its place until it is done.
    fn answering(&self, id: u64) {
        if let Some(client) = self.lock().open.get_mut(&id) {
            client.answering = true;
        }
    }

    /// Client `id` is done (or was closed to make room): its place is free.
    fn release(&self, id: u64) {
        self.lock().open.remove(&id);
    }

    #[cfg(test)]
    fn open(&self) -> usize {
        self.lock().open.len()
    }
}

/// A client's place, given back when its task ends however it ends.
struct Place<'a>(&'a Slots, u64);

impl Drop for Place<'_> {
    fn drop(&mut self) {
        self.0.release(self.1);
    }
}

/// What a client asked for.
enum Asked {
    Path(String),
    NotGet,
    Bad,
}

/// Reads one request head, at most [`REQUEST_BYTES`]; None when the client closed first.
async fn read_head<S: AsyncRead + Unpin>(socket: &mut S) -> std::io::Result<Option<Asked>> {
    let mut buf = vec![0u8; REQUEST_BYTES];
    let mut filled = 0;
    loop {
        let n = socket.read(&mut buf[filled..]).await?;
        if n == 0 {
            return Ok(None);
        }
        filled += n;
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&buf[..filled]) {
            Ok(httparse::Status::Complete(_)) if request.method != Some("GET") => {
                return Ok(Some(Asked::NotGet))
            }
            Ok(httparse::Status::Complete(_)) => {
                return Ok(Some(Asked::Path(request.path.unwrap_or("/").to_owned())))
            }
            Ok(httparse::Status::Partial) if filled < buf.len() => continue,
            _ => return Ok(Some(Asked::Bad)),
        }
    }
}

/// Reads one request, within the header timeout, and answers it, within the write
/// timeout; `answering` is called in between.
async fn answer<S: AsyncRead + AsyncWrite + Unpin>(
    socket: &mut S,
    shared: &Shared,
    routes: &[(SocketAddr, String)],
    limits: MetricsLimits,
    answering: impl FnOnce(),
) -> std::io::Result<()> {
    let timed_out = |what: &str| std::io::Error::new(std::io::ErrorKind::TimedOut, what.to_owned());
    let asked = tokio::time::timeout(limits.header_timeout, read_head(socket))
        .await
        .map_err(|_| timed_out("no whole request head within the header timeout"))??;
    let Some(asked) = asked else {
        return Ok(());
    };
    answering();
    let (status, content_type, body) = match asked {
        Asked::NotGet => (
            "405 Method Not Allowed",
            "text/plain",
            "GET only\n".to_owned(),
        ),
        Asked::Bad => ("400 Bad Request", "text/plain", "bad request\n".to_owned()),
        Asked::Path(path) => match path.split('?').next() {
            Some("/metrics") => (
                "200 OK",
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                shared.metrics.encode(),
            ),
            Some("/status") | Some("/") => (
                "200 OK",
                "text/html; charset=utf-8",
                shared.metrics.status_page(routes, &shared.policy()),
            ),
            _ => (
                "404 Not Found",
                "text/plain",
                "/metrics or /status\n".to_owned(),
            ),
        },
    };
    tokio::time::timeout(
        limits.write_timeout,
        respond(socket, status, content_type, &body),
    )
    .await
    .map_err(|_| timed_out("the answer not taken within the write timeout"))?
}

async fn respond<S: AsyncWrite + Unpin>(
    socket: &mut S,
    status: &str,
    content_type: &str,
    body: &str,
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    socket.write_all(head.as_bytes()).await?;
    socket.write_all(body.as_bytes()).await?;
    socket.shutdown().await
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

    /// At the limit, a newcomer takes the place of the oldest client that has not finished
    /// asking (which is told to close); a client being answered keeps its place; with every
    /// place taken by clients being answered, the newcomer is refused.
    #[test]
    fn a_newcomer_takes_the_place_of_the_oldest_client_still_asking() {
        let slots = Slots::new(2);
        let (a, mut a_closed) = slots.admit().unwrap();
        let (b, mut b_closed) = slots.admit().unwrap();
        slots.answering(b);
        let (c, mut c_closed) = slots.admit().unwrap();
        assert_eq!(
            a_closed.try_recv(),
            Err(oneshot::error::TryRecvError::Closed)
        );
        assert_eq!(
            b_closed.try_recv(),
            Err(oneshot::error::TryRecvError::Empty)
        );
        assert_eq!(slots.open(), 2);
        slots.release(a);
        assert_eq!(slots.open(), 2, "a's place was c's already");
        slots.answering(c);
        assert!(slots.admit().is_none(), "every place is being answered");
        assert_eq!(
            c_closed.try_recv(),
            Err(oneshot::error::TryRecvError::Empty)
        );
        slots.release(b);
        let (_, mut d_closed) = slots.admit().unwrap();
        assert_eq!(
            d_closed.try_recv(),
            Err(oneshot::error::TryRecvError::Empty)
        );
        assert_eq!(slots.open(), 2);
    }

    fn shared() -> Shared {
        let config = crate::Config {
            metrics_listen: Some("127.0.0.1:0".parse().unwrap()),
            ..crate::Config::default()
        };
        let audit = crate::audit::Audit::start(
            crate::audit::AuditSink::Writer(Box::new(std::io::sink())),
            1 << 20,
        )
        .unwrap();
        Shared::new(&config, audit)
    }

    /// A client that asks and never reads its answer is closed at the write timeout; one
    /// that never finishes asking at the header timeout. (The waits are bounded by the
    /// test, not measured.)
    #[tokio::test]
    async fn a_client_that_does_not_read_or_does_not_ask_is_let_go() {
        let shared = shared();
        let limits = MetricsLimits {
            max_connections: 1,
            header_timeout: Duration::from_millis(200),
            write_timeout: Duration::from_millis(200),
        };
        let bounded = Duration::from_secs(20);
        // A pipe of 64 bytes the client never reads: the status page does not fit.
        let (mut guard_end, mut client) = tokio::io::duplex(64);
        client
            .write_all(b"GET /status HTTP/1.1\r\n\r\n")
            .await
            .unwrap();
        let mut asked = false;
        let done = tokio::time::timeout(
            bounded,
            answer(&mut guard_end, &shared, &[], limits, || asked = true),
        )
        .await
        .expect("the answer's write never gave up");
        assert!(asked);
        assert_eq!(done.unwrap_err().kind(), std::io::ErrorKind::TimedOut);

        let (mut guard_end, mut client) = tokio::io::duplex(64);
        client.write_all(b"G").await.unwrap();
        let mut asked = false;
        let done = tokio::time::timeout(
            bounded,
            answer(&mut guard_end, &shared, &[], limits, || asked = true),
        )
        .await
        .expect("the wait for a request head never gave up");
        assert!(!asked);
        assert_eq!(done.unwrap_err().kind(), std::io::ErrorKind::TimedOut);
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
        assert!(!page.chars().any(crate::audit::is_hidden), "{page}");
        assert!(page.contains("<td id=\"audit-failures\">1</td>"), "{page}");
    }
}
