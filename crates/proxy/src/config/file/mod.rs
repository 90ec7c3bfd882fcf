//! The guard's configuration file: TOML, read with the `toml` crate.
//!
//! Its keys are the command-line options' names, so that one page of documentation serves
//! both; a repeatable option is a list. What a file leaves out keeps its default, and an
//! option given on the command line overrides the file (`elect-leaders proxy --config`).
//!
//! ```toml
//! audit-log = "/var/log/elect-leaders/audit.jsonl"
//! idle-timeout = "10m"
//! max-buffered-bytes = "1GiB"
//! advertise-host = "guard.example.com"   # what clients are told in broker addresses
//!
//! [[route]]                      # one per broker, in order
//! listen = "0.0.0.0:19092"
//! upstream = "kafka-1.internal:9093"
//!
//! [tls]                          # towards clients: --tls-cert, --tls-key, --tls-client-ca
//! cert = "guard.pem"
//! key = "guard.key"
//! client-ca = "clients-ca.pem"
//!
//! [upstream-tls]                 # towards the brokers: --upstream-tls and its options
//! ca = "kafka-ca.pem"
//!
//! [rules]
//! deny-unclean = true
//! protect-topic = ["payments"]
//! allow-principal = ["alice", "ops"]
//! max-partitions = 1000
//! forward-unknown-api = [95]     # a key newer than Kafka 4.4, forwarded all the same
//! min-replication = 3            # a protected topic is created with 3 replicas or more
//!
//! [rules.principal.ops]          # ops's own rules: what it sets replaces [rules]' value
//! deny-unclean = false
//! max-partitions = "none"
//! ```
//!
//! Relative paths are read from the file's directory. A file that fails to parse or does
//! not hold what the guard expects is refused whole, with its line and column; on SIGHUP
//! the guard then keeps the configuration it runs with.
//!
//! A reload fails closed ([`ConfigFile::read_again`], [`crate::Reloader::apply`]): a file
//! that sets nothing (empty, or comments only) is refused, and so is one whose rules are
//! weaker than those in force ([`Policy::weakened_by`]: a protected topic fewer,
//! `deny-unclean` off, ...) unless it says so with a top-level
//! `allow-weaker-rules = true`. A file cut short mid-table does not parse; one cut at a line
//! boundary has fewer rules: either way the rules in force stay.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::{self, Deserializer};
use serde::Deserialize;

use crate::config::merge::Overrides;
use crate::config::settings::{AuditTarget, Config, Route};
use crate::core::tls::{ServerTls, UpstreamTls};
use crate::filters::addresses::DynamicListen;
use crate::filters::elect::policy::Policy;
use crate::observability::audit::{SyslogTarget, SyslogTls};

/// What a configuration file sets; `None` (or an empty list) where it says nothing.
#[derive(Clone, Debug, Default)]
pub struct ConfigFile {
    /// `[[route]]`: listeners and their brokers, in order.
    pub routes: Vec<(SocketAddr, Upstream)>,
    /// `[[route]] advertise`: [`Config::route_advertise`].
    pub route_advertise: Vec<(SocketAddr, String, u16)>,
    /// `[tls]`: TLS towards clients.
    pub tls: Option<ServerTls>,
    /// `[upstream-tls]`: TLS towards the brokers.
    pub upstream_tls: Option<UpstreamTls>,
    /// `audit-log`: where audit lines go.
    pub audit: Option<AuditTarget>,
    /// `audit-queue-bytes`: [`Config::audit_queue_bytes`].
    pub audit_queue_bytes: Option<usize>,
    /// `replica-id`: [`Config::replica_id`].
    pub replica_id: Option<String>,
    /// `audit-chain-key-file`: [`Config::audit_chain_key_file`].
    pub audit_chain_key_file: Option<PathBuf>,
    /// `max-connections`: [`Config::max_connections`].
    pub max_connections: Option<usize>,
    /// `threads`: [`Config::connection_threads`].
    pub threads: Option<usize>,
    /// `max-frame-size`: [`Config::max_frame_size`].
    pub max_frame_size: Option<usize>,
    /// `idle-timeout`: [`Config::idle_timeout`].
    pub idle_timeout: Option<Duration>,
    /// `frame-timeout`: [`Config::frame_timeout`].
    pub frame_timeout: Option<Duration>,
    /// `upstream-connect-timeout`: [`Config::upstream_connect_timeout`].
    pub upstream_connect_timeout: Option<Duration>,
    /// `request-timeout`: [`Config::request_timeout`].
    pub request_timeout: Option<Duration>,
    /// `drain-timeout`: [`Config::drain_timeout`].
    pub drain_timeout: Option<Duration>,
    /// `max-connection-age`: [`Config::max_connection_age`].
    pub max_connection_age: Option<Duration>,
    /// `proxy-protocol-from`: [`Config::proxy_protocol_from`].
    pub proxy_protocol_from: Option<Vec<ipnet::IpNet>>,
    /// `max-buffered-bytes`: [`Config::max_buffered_bytes`].
    pub max_buffered_bytes: Option<usize>,
    /// `refused-bytes-per-second`: [`Config::refused_bytes_per_second`].
    pub refused_bytes_per_second: Option<usize>,
    /// `advertise-host`: [`Config::advertise_host`].
    pub advertise_host: Option<String>,
    /// `dynamic-listen`: [`Config::dynamic_listen`].
    pub dynamic_listen: Option<DynamicListen>,
    /// `metrics-listen`: [`Config::metrics_listen`].
    pub metrics_listen: Option<SocketAddr>,
    /// `[rules]`, with `[rules.principal.NAME]` in `principal_rules`.
    pub policy: Policy,
    /// `allow-weaker-rules = true`: a reload from this file may put in force rules weaker
    /// than those in force ([`Config::allow_weaker_rules`]).
    pub allow_weaker_rules: bool,
    /// The file sets nothing: no key at all (empty, or only comments and blank lines).
    pub empty: bool,
    /// `[audit-kafka]`: the audit log produced to a Kafka topic (`elect-leaders proxy`
    /// makes the sink of it; this crate has no Kafka client).
    pub audit_kafka: Option<AuditKafkaFile>,
}

/// `[audit-kafka]`: the audit log produced to a Kafka topic, as the file says it (paths
/// resolved). Read by `elect-leaders proxy`, which makes the sink
/// (`kafka-elect-leaders-audit-kafka`). Its `Debug` shows the password file's path, never
/// a password (the file is read when the guard starts).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditKafkaFile {
    /// `bootstrap-servers`: `host:port,...` of the audit cluster.
    pub bootstrap_servers: String,
    /// `topic`: the audit topic (it must exist).
    pub topic: String,
    /// `replica`: this guard's name (each record's key); None: the host name.
    pub replica: Option<String>,
    /// `tls`: TLS towards the audit cluster (also on when a `tls-*` path is given).
    pub tls: bool,
    /// `tls-ca`: the CA bundle (PEM) the audit cluster's certificates are checked against.
    pub tls_ca: Option<PathBuf>,
    /// `tls-cert`: the guard's client certificate (PEM).
    pub tls_cert: Option<PathBuf>,
    /// `tls-key`: its key (PEM).
    pub tls_key: Option<PathBuf>,
    /// `sasl-mechanism`: `PLAIN`, `SCRAM-SHA-256` or `SCRAM-SHA-512`.
    pub sasl_mechanism: Option<String>,
    /// `sasl-username`.
    pub sasl_username: Option<String>,
    /// `sasl-password-file`: the file holding the password (its first line).
    pub sasl_password_file: Option<PathBuf>,
    /// `mode`: `batch`, `blocking` or `blocking-strict` (None: `blocking-strict`), for the
    /// records of leadership changes the guard forwards.
    pub mode: Option<String>,
    /// `deadline`: how long `blocking-strict` waits (None: 5 s).
    pub deadline: Option<Duration>,
    /// `delivery-timeout`: how long a record is retried (None: 30 s).
    pub delivery_timeout: Option<Duration>,
    /// `max-buffered-bytes`: the producer's buffer (None: 16 MiB).
    pub max_buffered_bytes: Option<usize>,
}

/// A broker's address as written: resolved, with its host name when it is not an IP
/// address (what its TLS certificate is checked against).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Upstream {
    /// The address, resolved.
    pub addr: SocketAddr,
    /// The host name written, when it is not an IP address.
    pub host: Option<String>,
}

impl Upstream {
    /// `host:port`, resolved (the first address), keeping the host name.
    pub fn parse(text: &str) -> Result<Upstream, String> {
        let addr = match text.to_socket_addrs().map(|mut a| a.next()) {
            Ok(Some(addr)) => addr,
            _ => return Err("expected host:port (e.g. 127.0.0.1:9092)".into()),
        };
        let host = text
            .rsplit_once(':')
            .map(|(host, _)| host.trim_start_matches('[').trim_end_matches(']'))
            .filter(|host| host.parse::<std::net::IpAddr>().is_err())
            .map(str::to_owned);
        Ok(Upstream { addr, host })
    }
}

/// An amount of memory: bytes, or a whole number with `KiB`, `MiB` or `GiB`; at least
/// `min`.
pub fn parse_bytes(text: &str, min: usize) -> Result<usize, String> {
    let expected = || format!("expected bytes, or a number with KiB, MiB or GiB, at least {min}");
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, ""),
    };
    let scale: usize = match unit.trim() {
        "" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        _ => return Err(expected()),
    };
    match number
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
    {
        Some(n) if n >= min => Ok(n),
        _ => Err(expected()),
    }
}

/// The smallest `max-buffered-bytes`: a frame under it is never metered.
pub const MIN_BUFFERED_BYTES: usize = 64 * 1024;
/// The smallest `audit-queue-bytes`: a hundred lines of kafka-leader-election runs.
pub const MIN_AUDIT_QUEUE_BYTES: usize = 64 * 1024;
/// The smallest `max-frame-size`: a request header's first fields.
pub const MIN_FRAME_SIZE: usize = 8;

/// Why a configuration file was refused: where, and what.
#[derive(Debug)]
pub struct FileError {
    /// The file.
    pub path: PathBuf,
    /// 1-based; 0 when the error is not about one place (the file cannot be read).
    pub line: usize,
    /// 1-based, on `line`.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.path.display(), self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.path.display(),
                self.line,
                self.column,
                self.message
            )
        }
    }
}

impl std::error::Error for FileError {}

impl ConfigFile {
    /// Reads and checks the file at `path`.
    pub fn read(path: &Path) -> Result<ConfigFile, FileError> {
        let text = std::fs::read_to_string(path).map_err(|e| FileError {
            path: path.to_owned(),
            line: 0,
            column: 0,
            message: format!("cannot read it: {e}"),
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        ConfigFile::parse(&text, base).map_err(|(line, column, message)| FileError {
            path: path.to_owned(),
            line,
            column,
            message,
        })
    }

    /// Reads the file at `path` again, for a reload: as [`ConfigFile::read`], and a file
    /// that sets nothing is refused (an empty file is a file being written, or truncated,
    /// never a wish to drop every rule).
    pub fn read_again(path: &Path) -> Result<ConfigFile, FileError> {
        let file = ConfigFile::read(path)?;
        if file.empty {
            return Err(FileError {
                path: path.to_owned(),
                line: 0,
                column: 0,
                message: "the file is empty (it sets nothing): a reload never drops every \
                          rule"
                    .into(),
            });
        }
        Ok(file)
    }

    /// Parses `text`, with relative paths taken from `base`; an error is `(line, column,
    /// message)`, 1-based.
    pub fn parse(text: &str, base: &Path) -> Result<ConfigFile, (usize, usize, String)> {
        let raw: Raw = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map_or((1, 1), |span| position(text, span.start));
            (line, column, e.message().trim_end().to_owned())
        })?;
        if raw.audit_log.is_some() && raw.audit_syslog.is_some() {
            return Err((
                1,
                1,
                "audit-log and [audit-syslog] are two audit sinks: the guard writes to one".into(),
            ));
        }
        let mut file = raw.into_file(base);
        // TOML has no multi-line comment: a line that is neither blank nor a comment holds
        // a key or a table.
        file.empty = text.lines().all(|line| {
            let line = line.trim();
            line.is_empty() || line.starts_with('#')
        });
        Ok(file)
    }

    /// Puts what the file sets into `config`, leaving the rest as it is.
    pub fn apply(&self, config: &mut Config) {
        if !self.routes.is_empty() {
            config.routes = self
                .routes
                .iter()
                .map(|(listen, upstream)| Route {
                    listen: *listen,
                    upstream: upstream.addr,
                })
                .collect();
            config.route_advertise = self.route_advertise.clone();
        }
        if self.tls.is_some() {
            config.tls = self.tls.clone();
        }
        if let Some(upstream_tls) = &self.upstream_tls {
            let mut upstream_tls = upstream_tls.clone();
            upstream_tls.names = self.upstream_names();
            config.upstream_tls = Some(upstream_tls);
        }
        Overrides {
            audit: self.audit.clone(),
            audit_queue_bytes: self.audit_queue_bytes,
            replica_id: self.replica_id.clone(),
            audit_chain_key_file: self.audit_chain_key_file.clone(),
            max_connections: self.max_connections,
            threads: self.threads,
            max_frame_size: self.max_frame_size,
            max_buffered_bytes: self.max_buffered_bytes,
            refused_bytes_per_second: self.refused_bytes_per_second,
            idle_timeout: self.idle_timeout,
            frame_timeout: self.frame_timeout,
            upstream_connect_timeout: self.upstream_connect_timeout,
            request_timeout: self.request_timeout,
            drain_timeout: self.drain_timeout,
            max_connection_age: self.max_connection_age,
            proxy_protocol_from: self.proxy_protocol_from.clone(),
            advertise_host: self.advertise_host.clone(),
            dynamic_listen: self.dynamic_listen,
            metrics_listen: self.metrics_listen,
        }
        .over(config);
        config.upstream_names = self.upstream_names();
        config.policy = self.policy.clone();
        config.allow_weaker_rules = self.allow_weaker_rules;
    }

    /// Each route's broker host name, for its certificate's check.
    pub fn upstream_names(&self) -> Vec<(SocketAddr, String)> {
        self.routes
            .iter()
            .filter_map(|(_, u)| Some((u.addr, u.host.clone()?)))
            .collect()
    }
}

/// One line on a configuration: its routes, its rules (lists counted, never their names),
/// its audit log, and whether a reload may weaken the rules (`elect-leaders proxy
/// --check-config`).
pub fn summary(config: &Config) -> String {
    let audit = match &config.audit {
        AuditTarget::Stderr => "standard error".to_owned(),
        AuditTarget::Stdout => "standard output".to_owned(),
        AuditTarget::File(path) => path.display().to_string(),
        AuditTarget::Syslog(target) => format!(
            "syslog {}{}",
            target.address,
            if target.tls.is_some() { " (TLS)" } else { "" }
        ),
        AuditTarget::Delivered(target) => format!(
            "{} ({} for leadership changes)",
            target.sink.describe(),
            target.leadership.name()
        ),
    };
    let mut line = format!(
        "{} route(s); rules: {}; audit-log {audit}",
        config.routes.len(),
        rules_summary(&config.policy)
    );
    if config.tls.is_some() {
        line.push_str("; tls");
    }
    if config.upstream_tls.is_some() {
        line.push_str("; upstream-tls");
    }
    if config.allow_weaker_rules {
        line.push_str("; allow-weaker-rules = true");
    }
    line
}

/// The rules set, each by its option, lists counted.
fn rules_summary(policy: &Policy) -> String {
    let mut rules = Vec::new();
    if policy.deny_unclean {
        rules.push("deny-unclean".to_owned());
    }
    let mut count = |option: &str, n: usize| {
        if n > 0 {
            rules.push(format!("{option} ({n})"));
        }
    };
    count("protect-topic", policy.protected_topics.len());
    count("allow-client-id", policy.allowed_client_ids.len());
    count("allow-principal", policy.allowed_principals.len());
    if let Some(max) = policy.max_partitions {
        rules.push(format!("max-partitions {max}"));
    }
    if let Some(least) = policy.min_replication {
        rules.push(format!("min-replication {least}"));
    }
    if policy.log_only {
        rules.push("log-only".to_owned());
    }
    if !policy.principal_rules.is_empty() {
        rules.push(format!(
            "own rules for {} principal(s)",
            policy.principal_rules.len()
        ));
    }
    if rules.is_empty() {
        "none (every election is forwarded)".to_owned()
    } else {
        rules.join(", ")
    }
}

/// The 1-based line and column (in characters) of byte `at` of `text`.
fn position(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[start..].chars().count() + 1)
}

// The file as TOML has it. Values are parsed while it is read, so that an error points
// at the value.

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct Raw {
    #[serde(default)]
    route: Vec<RawRoute>,
    tls: Option<RawTls>,
    upstream_tls: Option<RawUpstreamTls>,
    audit_log: Option<PathBuf>,
    #[serde(default, deserialize_with = "audit_queue_bytes")]
    audit_queue_bytes: Option<usize>,
    #[serde(default, deserialize_with = "replica_id")]
    replica_id: Option<String>,
    audit_chain_key_file: Option<PathBuf>,
    #[serde(default, deserialize_with = "at_least_one")]
    max_connections: Option<usize>,
    #[serde(default, deserialize_with = "threads")]
    threads: Option<usize>,
    #[serde(default, deserialize_with = "frame_size")]
    max_frame_size: Option<usize>,
    #[serde(default, deserialize_with = "duration")]
    idle_timeout: Option<Duration>,
    #[serde(default, deserialize_with = "duration")]
    frame_timeout: Option<Duration>,
    #[serde(default, deserialize_with = "duration")]
    upstream_connect_timeout: Option<Duration>,
    #[serde(default, deserialize_with = "duration")]
    request_timeout: Option<Duration>,
    #[serde(default, deserialize_with = "duration")]
    drain_timeout: Option<Duration>,
    #[serde(default, deserialize_with = "duration")]
    max_connection_age: Option<Duration>,
    #[serde(default, deserialize_with = "source_ranges")]
    proxy_protocol_from: Option<Vec<ipnet::IpNet>>,
    #[serde(default, deserialize_with = "buffered_bytes")]
    max_buffered_bytes: Option<usize>,
    #[serde(default, deserialize_with = "bytes_per_second")]
    refused_bytes_per_second: Option<usize>,
    advertise_host: Option<String>,
    #[serde(default, deserialize_with = "dynamic_listen")]
    dynamic_listen: Option<DynamicListen>,
    #[serde(default, deserialize_with = "optional_listen")]
    metrics_listen: Option<SocketAddr>,
    #[serde(default)]
    rules: RawRules,
    #[serde(default)]
    allow_weaker_rules: bool,
    audit_kafka: Option<RawAuditKafka>,
    audit_syslog: Option<RawAuditSyslog>,
    #[serde(default, deserialize_with = "refusal_text")]
    refusal_text: Option<Box<str>>,
}

/// `refusal-text`: see [`check_refusal_text`](crate::elect::check_refusal_text).
fn refusal_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Box<str>>, D::Error> {
    let text = String::deserialize(d)?;
    crate::filters::elect::policy::check_refusal_text(&text).map_err(de::Error::custom)?;
    Ok(Some(text.into_boxed_str()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawAuditSyslog {
    address: String,
    #[serde(default)]
    tls: bool,
    tls_ca: Option<PathBuf>,
    tls_server_name: Option<String>,
    app_name: Option<String>,
    #[serde(default, deserialize_with = "syslog_facility")]
    facility: Option<u8>,
}

/// `facility`: a name of RFC 5424 (`local0`, `auth`, ...) or its number, 0 to 23.
fn syslog_facility<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u8>, D::Error> {
    let text = String::deserialize(d)?;
    crate::observability::audit::facility(&text)
        .map(Some)
        .ok_or_else(|| de::Error::custom("expected a syslog facility: local0 to local7, auth, ..."))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawAuditKafka {
    bootstrap_servers: String,
    topic: String,
    replica: Option<String>,
    #[serde(default)]
    tls: bool,
    tls_ca: Option<PathBuf>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    sasl_mechanism: Option<String>,
    sasl_username: Option<String>,
    sasl_password_file: Option<PathBuf>,
    #[serde(default, deserialize_with = "delivery_mode")]
    mode: Option<String>,
    #[serde(default, deserialize_with = "duration")]
    deadline: Option<Duration>,
    #[serde(default, deserialize_with = "duration")]
    delivery_timeout: Option<Duration>,
    #[serde(default, deserialize_with = "audit_queue_bytes")]
    max_buffered_bytes: Option<usize>,
}

/// `mode`: `batch`, `blocking` or `blocking-strict`.
fn delivery_mode<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let text = String::deserialize(d)?;
    match text.as_str() {
        "batch" | "blocking" | "blocking-strict" => Ok(Some(text)),
        _ => Err(de::Error::custom(
            "expected \"batch\", \"blocking\" or \"blocking-strict\"",
        )),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawRoute {
    #[serde(deserialize_with = "listen")]
    listen: SocketAddr,
    #[serde(deserialize_with = "upstream")]
    upstream: Upstream,
    #[serde(default, deserialize_with = "advertise")]
    advertise: Option<(String, u16)>,
}

/// `[[route]] advertise`: `host:port`, not resolved (the clients resolve it).
fn advertise<'de, D: Deserializer<'de>>(d: D) -> Result<Option<(String, u16)>, D::Error> {
    let text = String::deserialize(d)?;
    let parsed = text.rsplit_once(':').and_then(|(host, port)| {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port = port.parse::<u16>().ok().filter(|&p| p > 0)?;
        (!host.is_empty() && !host.contains(char::is_whitespace)).then(|| (host.to_owned(), port))
    });
    parsed
        .map(Some)
        .ok_or_else(|| de::Error::custom("expected host:port (e.g. kafka-lb.example.com:29092)"))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawTls {
    cert: PathBuf,
    key: PathBuf,
    client_ca: Option<PathBuf>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawUpstreamTls {
    ca: Option<PathBuf>,
    server_name: Option<String>,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawRules {
    #[serde(default)]
    deny_unclean: bool,
    #[serde(default)]
    protect_topic: Vec<String>,
    #[serde(default)]
    allow_client_id: Vec<String>,
    #[serde(default)]
    allow_principal: Vec<String>,
    #[serde(default, deserialize_with = "partition_cap")]
    max_partitions: Option<Cap>,
    #[serde(default, deserialize_with = "replication_floor")]
    min_replication: Option<Floor>,
    #[serde(default)]
    log_only: bool,
    #[serde(default, deserialize_with = "unknown_api_keys")]
    forward_unknown_api: Vec<i16>,
    #[serde(default)]
    principal: BTreeMap<String, RawPrincipalRules>,
}

/// A principal's own rules: each one set replaces `[rules]`' value for it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawPrincipalRules {
    deny_unclean: Option<bool>,
    protect_topic: Option<Vec<String>>,
    allow_client_id: Option<Vec<String>>,
    #[serde(default, deserialize_with = "partition_cap")]
    max_partitions: Option<Cap>,
    #[serde(default, deserialize_with = "replication_floor")]
    min_replication: Option<Floor>,
    log_only: Option<bool>,
}

/// `max-partitions`: a number, or "none" (a principal's own rules lifting the cap).
#[derive(Clone, Copy)]
struct Cap(Option<usize>);

/// `min-replication`: a number from 1 to 32767 (a replication factor is an int16), or
/// "none" (a principal's own rules lifting the floor).
#[derive(Clone, Copy)]
struct Floor(Option<i16>);

fn names(list: &[String]) -> HashSet<Box<[u8]>> {
    list.iter().map(|n| n.as_bytes().into()).collect()
}

impl Raw {
    fn into_file(self, base: &Path) -> ConfigFile {
        let path = |p: PathBuf| if p.is_relative() { base.join(p) } else { p };
        let rules = self.rules;
        let policy = Policy {
            deny_unclean: rules.deny_unclean,
            protected_topics: names(&rules.protect_topic),
            allowed_client_ids: names(&rules.allow_client_id),
            allowed_principals: rules
                .allow_principal
                .iter()
                .map(|p| p.as_str().into())
                .collect(),
            max_partitions: rules.max_partitions.and_then(|c| c.0),
            min_replication: rules.min_replication.and_then(|f| f.0),
            log_only: rules.log_only,
            principal_rules: Default::default(),
            forwarded_unknown_apis: rules.forward_unknown_api.into_iter().collect(),
            refusal_text: self.refusal_text,
        };
        let principal_rules = rules
            .principal
            .into_iter()
            .map(|(name, own)| {
                let mut theirs = Policy {
                    principal_rules: Default::default(),
                    ..policy.clone()
                };
                if let Some(v) = own.deny_unclean {
                    theirs.deny_unclean = v;
                }
                if let Some(v) = &own.protect_topic {
                    theirs.protected_topics = names(v);
                }
                if let Some(v) = &own.allow_client_id {
                    theirs.allowed_client_ids = names(v);
                }
                if let Some(v) = own.max_partitions {
                    theirs.max_partitions = v.0;
                }
                if let Some(v) = own.min_replication {
                    theirs.min_replication = v.0;
                }
                if let Some(v) = own.log_only {
                    theirs.log_only = v;
                }
                (name.into_boxed_str(), theirs)
            })
            .collect();
        ConfigFile {
            route_advertise: self
                .route
                .iter()
                .filter_map(|r| {
                    let (host, port) = r.advertise.clone()?;
                    Some((r.listen, host, port))
                })
                .collect(),
            routes: self
                .route
                .into_iter()
                .map(|r| (r.listen, r.upstream))
                .collect(),
            tls: self.tls.map(|t| ServerTls {
                cert: path(t.cert),
                key: path(t.key),
                client_ca: t.client_ca.map(path),
            }),
            upstream_tls: self.upstream_tls.map(|t| UpstreamTls {
                ca: t.ca.map(path),
                server_name: t.server_name,
                names: Vec::new(),
                client_cert: t.cert.map(path).zip(t.key.map(path)),
            }),
            audit: match self.audit_syslog {
                Some(syslog) => Some(AuditTarget::Syslog(SyslogTarget {
                    address: syslog.address,
                    tls: (syslog.tls
                        || syslog.tls_ca.is_some()
                        || syslog.tls_server_name.is_some())
                    .then(|| SyslogTls {
                        ca: syslog.tls_ca.map(path),
                        server_name: syslog.tls_server_name,
                    }),
                    app_name: syslog.app_name.unwrap_or_else(|| "elect-leaders".into()),
                    facility: syslog.facility.unwrap_or(16),
                })),
                None => self.audit_log.map(|p| {
                    if p.as_os_str() == "-" {
                        AuditTarget::Stdout
                    } else {
                        AuditTarget::File(path(p))
                    }
                }),
            },
            audit_queue_bytes: self.audit_queue_bytes,
            replica_id: self.replica_id,
            audit_chain_key_file: self.audit_chain_key_file.map(path),
            max_connections: self.max_connections,
            threads: self.threads,
            max_frame_size: self.max_frame_size,
            idle_timeout: self.idle_timeout,
            frame_timeout: self.frame_timeout,
            upstream_connect_timeout: self.upstream_connect_timeout,
            request_timeout: self.request_timeout,
            drain_timeout: self.drain_timeout,
            max_connection_age: self.max_connection_age,
            proxy_protocol_from: self.proxy_protocol_from,
            max_buffered_bytes: self.max_buffered_bytes,
            refused_bytes_per_second: self.refused_bytes_per_second,
            advertise_host: self.advertise_host,
            dynamic_listen: self.dynamic_listen,
            metrics_listen: self.metrics_listen,
            policy: Policy {
                principal_rules,
                ..policy
            },
            allow_weaker_rules: self.allow_weaker_rules,
            empty: false,
            audit_kafka: self.audit_kafka.map(|k| AuditKafkaFile {
                bootstrap_servers: k.bootstrap_servers,
                topic: k.topic,
                replica: k.replica,
                tls: k.tls,
                tls_ca: k.tls_ca.map(path),
                tls_cert: k.tls_cert.map(path),
                tls_key: k.tls_key.map(path),
                sasl_mechanism: k.sasl_mechanism,
                sasl_username: k.sasl_username,
                sasl_password_file: k.sasl_password_file.map(path),
                mode: k.mode,
                deadline: k.deadline,
                delivery_timeout: k.delivery_timeout,
                max_buffered_bytes: k.max_buffered_bytes,
            }),
        }
    }
}

// Value readers: each error becomes toml's, at the value's place.

fn listen<'de, D: Deserializer<'de>>(d: D) -> Result<SocketAddr, D::Error> {
    let text = String::deserialize(d)?;
    match text.to_socket_addrs().map(|mut a| a.next()) {
        Ok(Some(addr)) => Ok(addr),
        _ => Err(de::Error::custom(
            "expected host:port (e.g. 0.0.0.0:19092; port 0: any free one)",
        )),
    }
}

fn dynamic_listen<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DynamicListen>, D::Error> {
    DynamicListen::parse(&String::deserialize(d)?)
        .map(Some)
        .map_err(de::Error::custom)
}

fn optional_listen<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SocketAddr>, D::Error> {
    listen(d).map(Some)
}

fn upstream<'de, D: Deserializer<'de>>(d: D) -> Result<Upstream, D::Error> {
    Upstream::parse(&String::deserialize(d)?).map_err(de::Error::custom)
}

fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    let text = String::deserialize(d)?;
    match humantime::parse_duration(&text) {
        Ok(d) if !d.is_zero() => Ok(Some(d)),
        Ok(_) => Err(de::Error::custom("expected a duration above zero")),
        Err(e) => Err(de::Error::custom(format!(
            "expected a duration such as \"500ms\", \"30s\" or \"10m\" ({e})"
        ))),
    }
}

/// Connection threads: 0 (the guard's runtime) to [`crate::MAX_CONNECTION_THREADS`].
fn threads<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    match i64::deserialize(d)? {
        n if (0..=crate::MAX_CONNECTION_THREADS as i64).contains(&n) => Ok(Some(n as usize)),
        _ => Err(de::Error::custom(format!(
            "expected a whole number from 0 to {}",
            crate::MAX_CONNECTION_THREADS
        ))),
    }
}

fn at_least_one<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    match i64::deserialize(d)? {
        n if n >= 1 => usize::try_from(n)
            .map(Some)
            .map_err(|_| de::Error::custom("too large")),
        _ => Err(de::Error::custom("expected a whole number of at least 1")),
    }
}

/// Bytes: a number, or a string with a unit ("512MiB").
#[derive(Deserialize)]
#[serde(untagged)]
enum Amount {
    Number(i64),
    Text(String),
}

fn amount<'de, D: Deserializer<'de>>(d: D, min: usize) -> Result<usize, D::Error> {
    match Amount::deserialize(d)? {
        Amount::Number(n) => usize::try_from(n)
            .ok()
            .filter(|&n| n >= min)
            .ok_or_else(|| de::Error::custom(format!("expected at least {min} bytes"))),
        Amount::Text(text) => parse_bytes(&text, min).map_err(de::Error::custom),
    }
}

fn buffered_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    amount(d, MIN_BUFFERED_BYTES).map(Some)
}

/// `proxy-protocol-from`: addresses and ranges (`10.0.0.0/8`).
fn source_ranges<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<ipnet::IpNet>>, D::Error> {
    let texts = Vec::<String>::deserialize(d)?;
    texts
        .iter()
        .map(|t| crate::core::proxy_protocol::parse_range(t))
        .collect::<Result<_, _>>()
        .map(Some)
        .map_err(de::Error::custom)
}

fn bytes_per_second<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    amount(d, 0).map(Some)
}

fn audit_queue_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    amount(d, MIN_AUDIT_QUEUE_BYTES).map(Some)
}

fn replica_id<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let id = String::deserialize(d)?;
    crate::observability::audit::check_replica(&id).map_err(de::Error::custom)?;
    Ok(Some(id))
}

fn frame_size<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    let size = amount(d, MIN_FRAME_SIZE)?;
    if size > i32::MAX as usize {
        return Err(de::Error::custom(format!(
            "at most {} (a size prefix is an int32)",
            i32::MAX
        )));
    }
    Ok(Some(size))
}

/// `forward-unknown-api`: API keys the guard's table of every Kafka API does not know; a
/// key it knows already has its decision, which no setting opens.
fn unknown_api_keys<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<i16>, D::Error> {
    let keys = Vec::<i16>::deserialize(d)?;
    for key in &keys {
        if let Some(door) = crate::filters::doors::apis::door_of(*key) {
            return Err(de::Error::custom(format!(
                "api key {key} is {}, which the guard knows ({}): only keys Kafka 4.4 does \
                 not define can be forwarded",
                door.name,
                door.class.name()
            )));
        }
    }
    Ok(keys)
}

fn partition_cap<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cap>, D::Error> {
    match Amount::deserialize(d)? {
        Amount::Number(n) => usize::try_from(n)
            .map(|n| Some(Cap(Some(n))))
            .map_err(|_| de::Error::custom("expected a whole number, or \"none\"")),
        Amount::Text(text) if text == "none" => Ok(Some(Cap(None))),
        Amount::Text(_) => Err(de::Error::custom("expected a whole number, or \"none\"")),
    }
}

fn replication_floor<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Floor>, D::Error> {
    let expected = || de::Error::custom("expected a whole number from 1 to 32767, or \"none\"");
    match Amount::deserialize(d)? {
        Amount::Number(n) => match i16::try_from(n) {
            Ok(n) if n >= 1 => Ok(Some(Floor(Some(n)))),
            _ => Err(expected()),
        },
        Amount::Text(text) if text == "none" => Ok(Some(Floor(None))),
        Amount::Text(_) => Err(expected()),
    }
}

#[cfg(test)]
mod tests;
