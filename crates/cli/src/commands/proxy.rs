//! `elect-leaders proxy`: the guard's command line. The flags become a
//! [`kafka_elect_leaders_proxy::Config`]; the guard itself (policy, answers, audit, the
//! server) is the `kafka-elect-leaders-proxy` crate.

use std::collections::HashSet;
use std::io::Write;
use std::time::Duration;

use kafka_elect_leaders_proxy::diag::StderrLog;
use kafka_elect_leaders_proxy::{
    max_connections_for, raise_fd_limit, AuditTarget, Config, ConfigFile, Guard, Overrides, Policy,
    Reloader, Route, ServerTls,
};

use crate::commands::proxy_watch::ConfigWatch;
use kafka_elect_leaders_proxy::audit::DeliveryTarget;

use crate::fail::Failure;
use crate::flags::ProxyArgs;

mod audit_kafka;

/// Runs `elect-leaders proxy` until SIGINT or SIGTERM.
///
/// The soft limit on open files is raised to the hard limit first; without
/// `--max-connections`, the guard takes as many clients as that limit allows.
pub fn run(args: &ProxyArgs) -> Result<(), Failure> {
    // The guard's diagnostics and the tool's own lines: `elect-leaders proxy: TIME MESSAGE`
    // on stderr, from a thread of their own. Nothing else installs a logger here.
    let _ = StderrLog::new("elect-leaders proxy").install(log::LevelFilter::Info);
    if let Some(path) = &args.check_config {
        return check_config(args, path);
    }
    let fd_limit = raise_fd_limit().unwrap_or_else(|e| {
        // 1,024: the usual soft limit.
        warn(format_args!("cannot raise the limit on open files: {e}"));
        1024
    });
    let watch = config_watch(args);
    let file = match &args.config {
        Some(path) => {
            Some(ConfigFile::read(path).map_err(|e| Failure::cannot_open(e.to_string()))?)
        }
        None => None,
    };
    let config = settings(args, file.as_ref(), max_connections_for(fd_limit))
        .map_err(|e| Failure::usage("proxy", e))?;
    // With connection threads, the runtime here only accepts, reloads and serves
    // `/metrics`: one thread is enough. Without, it runs the connections too.
    let runtime = if config.connection_threads > 0 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    }
    .enable_all()
    .build()
    .map_err(|e| Failure::Input(format!("cannot start the runtime: {e}")))?;
    runtime.block_on(async {
        let config = with_audit_kafka(config, args, file.as_ref()).await?;
        serve(config, watch, args, fd_limit).await
    })
}

/// `[audit-kafka]`: the audit log produced to a Kafka topic, in place of `audit-log` (one
/// sink: both given is a usage error).
async fn with_audit_kafka(
    mut config: Config,
    args: &ProxyArgs,
    file: Option<&ConfigFile>,
) -> Result<Config, Failure> {
    let Some(kafka) = file.and_then(|f| f.audit_kafka.as_ref()) else {
        return Ok(config);
    };
    if args.audit_log.is_some() || file.is_some_and(|f| f.audit.is_some()) {
        return Err(Failure::usage(
            "proxy",
            "audit-log and [audit-kafka] are two audit sinks: the guard writes to one",
        ));
    }
    let target = audit_kafka::start(kafka)
        .await
        .map_err(|e| Failure::usage("proxy", e))?;
    config.audit = AuditTarget::Delivered(target);
    Ok(config)
}

/// A line of the tool's own at level `warn`, through the logger [`run`] installs.
fn warn(message: std::fmt::Arguments<'_>) {
    log::warn!(target: "elect_leaders", "{message}");
}

/// A line of the tool's own at level `info`.
fn info(message: std::fmt::Arguments<'_>) {
    log::info!(target: "elect_leaders", "{message}");
}

/// `--check-config FILE`: the file read as a reload reads it (an empty one refused), the
/// options given over it, its certificates loaded and the audit log's place checked, as a
/// start does them, without binding or creating anything; one line on its rules. Every
/// error is exit 2, naming the file (with the line and column where it is the file's).
fn check_config(args: &ProxyArgs, path: &std::path::Path) -> Result<(), Failure> {
    let invalid = |e: String| Failure::cannot_open(format!("{}: {e}", path.display()));
    let file = ConfigFile::read_again(path).map_err(|e| Failure::cannot_open(e.to_string()))?;
    // The limit on open files matters only to a guard that runs.
    let config = settings(args, Some(&file), 1).map_err(|e| Failure::usage("proxy", e))?;
    if config.tls.is_some() || config.upstream_tls.is_some() {
        kafka_elect_leaders_proxy::tls::Tls::new(config.tls.clone(), config.upstream_tls.clone())
            .map_err(|e| invalid(e.to_string()))?;
    }
    if let Some(kafka) = &file.audit_kafka {
        audit_kafka::settings(kafka).map_err(invalid)?;
    }
    if let AuditTarget::File(audit) = &config.audit {
        audit_log_openable(audit).map_err(|e| {
            invalid(format!(
                "cannot open the audit log {}: {e}",
                audit.display()
            ))
        })?;
    }
    if let Some(key) = &config.audit_chain_key_file {
        kafka_elect_leaders_proxy::audit::ChainKey::from_file(key).map_err(|e| {
            invalid(format!(
                "cannot read the audit chain key {}: {e}",
                key.display()
            ))
        })?;
    }
    let mut stdout = std::io::stdout().lock();
    writeln!(
        stdout,
        "{}: valid: {}",
        path.display(),
        kafka_elect_leaders_proxy::file::summary(&config)
    )?;
    stdout.flush()?;
    Ok(())
}

/// Whether the guard could open the audit log at `path` to append, changing nothing: an
/// existing file is opened (without writing) as the guard opens it, so that a FIFO with no
/// reader is the guard's error rather than a wait; a missing one needs its directory.
fn audit_log_openable(path: &std::path::Path) -> std::io::Result<()> {
    if path.exists() {
        return kafka_elect_leaders_proxy::audit::AuditSink::check(path);
    }
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => std::path::Path::new("."),
    };
    if std::fs::metadata(dir)?.is_dir() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "{} is not a directory",
            dir.display()
        )))
    }
}

/// The guard's configuration: the file's (when there is one), each option given on the
/// command line overriding it, and the defaults for the rest. An error is a usage error,
/// naming the option.
fn settings(
    args: &ProxyArgs,
    file: Option<&ConfigFile>,
    max_connections: usize,
) -> Result<Config, String> {
    let mut config = Config {
        max_connections,
        connection_threads: std::thread::available_parallelism().map_or(1, usize::from),
        ..Config::default()
    };
    if let Some(file) = file {
        file.apply(&mut config);
    }
    // Routes: the command line's pairs replace the file's.
    let mut names = file.map(ConfigFile::upstream_names).unwrap_or_default();
    if !args.listen.is_empty() {
        config.routes = args
            .listen
            .iter()
            .zip(&args.upstream)
            .map(|(&listen, upstream)| Route {
                listen,
                upstream: upstream.addr,
            })
            .collect();
        names = args
            .upstream
            .iter()
            .filter_map(|u| Some((u.addr, u.host.clone()?)))
            .collect();
    }
    config.upstream_names = names.clone();
    if config.routes.is_empty() {
        return Err("no --listen/--upstream pair, and no [[route]] in the --config file".into());
    }
    let fixed: Vec<_> = config
        .routes
        .iter()
        .map(|r| r.listen)
        .filter(|a| a.port() != 0)
        .collect();
    if fixed.iter().collect::<HashSet<_>>().len() != fixed.len() {
        return Err("the same --listen address is given twice".into());
    }

    // TLS towards clients: each option given replaces the file's.
    let server = config.tls.take();
    let cert = args
        .tls_cert
        .clone()
        .or_else(|| server.as_ref().map(|t| t.cert.clone()));
    let key = args
        .tls_key
        .clone()
        .or_else(|| server.as_ref().map(|t| t.key.clone()));
    let client_ca = args
        .tls_client_ca
        .clone()
        .or_else(|| server.and_then(|t| t.client_ca));
    config.tls = match (cert, key) {
        (Some(cert), Some(key)) => Some(ServerTls {
            cert,
            key,
            client_ca,
        }),
        (Some(_), None) => return Err("--tls-cert needs --tls-key".into()),
        (None, Some(_)) => return Err("--tls-key needs --tls-cert".into()),
        (None, None) if client_ca.is_some() => {
            return Err("--tls-client-ca needs --tls-cert and --tls-key".into())
        }
        (None, None) => None,
    };
    // TLS towards the brokers.
    let upstream = config.upstream_tls.take();
    let on = args.upstream_tls || upstream.is_some();
    let mut upstream = upstream.unwrap_or_default();
    upstream.names = names;
    if let Some(ca) = &args.upstream_ca {
        upstream.ca = Some(ca.clone());
    }
    if let Some(name) = &args.upstream_server_name {
        upstream.server_name = Some(name.clone());
    }
    match (&args.upstream_tls_cert, &args.upstream_tls_key) {
        (Some(cert), Some(key)) => upstream.client_cert = Some((cert.clone(), key.clone())),
        (Some(_), None) => return Err("--upstream-tls-cert needs --upstream-tls-key".into()),
        (None, Some(_)) => return Err("--upstream-tls-key needs --upstream-tls-cert".into()),
        (None, None) => {}
    }
    let asked =
        upstream.ca.is_some() || upstream.server_name.is_some() || upstream.client_cert.is_some();
    config.upstream_tls = match (on, asked) {
        (true, _) => Some(upstream),
        (false, true) => {
            return Err(
                "--upstream-ca, --upstream-server-name and --upstream-tls-cert need \
                        --upstream-tls"
                    .into(),
            )
        }
        (false, false) => None,
    };

    // The rules: each option given replaces the file's, in [rules] and in every
    // principal's own rules alike (the command line is the operator's last word).
    override_rules(args, &mut config.policy);
    for own in config.policy.principal_rules.values_mut() {
        override_rules(args, own);
    }
    if !args.allow_principal.is_empty() {
        config.policy.allowed_principals = args
            .allow_principal
            .iter()
            .map(|p| p.as_str().into())
            .collect();
    }
    if config.connection_threads > kafka_elect_leaders_proxy::MAX_CONNECTION_THREADS {
        return Err(format!(
            "--threads {}: at most {}",
            config.connection_threads,
            kafka_elect_leaders_proxy::MAX_CONNECTION_THREADS
        ));
    }
    if args.plain && config.policy.has_rules() {
        return Err("--plain parses nothing, so it cannot apply rules".into());
    }

    // Every other setting given replaces the file's, as the file's replace the defaults.
    Overrides {
        audit: args.audit_log.as_ref().map(|path| {
            if path == "-" {
                AuditTarget::Stdout
            } else {
                AuditTarget::File(path.into())
            }
        }),
        audit_queue_bytes: args.audit_queue_bytes,
        replica_id: args.replica_id.clone(),
        audit_chain_key_file: args.audit_chain_key_file.clone(),
        max_connections: args.max_connections,
        threads: args.threads,
        max_frame_size: args.max_frame_size,
        max_buffered_bytes: args.max_buffered_bytes,
        refused_bytes_per_second: args.refused_bytes_per_second,
        idle_timeout: args.idle_timeout,
        frame_timeout: args.frame_timeout,
        upstream_connect_timeout: args.upstream_connect_timeout,
        request_timeout: args.request_timeout,
        drain_timeout: args.drain_timeout,
        max_connection_age: args.max_connection_age,
        proxy_protocol_from: (!args.proxy_protocol_from.is_empty())
            .then(|| args.proxy_protocol_from.clone()),
        advertise_host: args.advertise_host.clone(),
        dynamic_listen: args.dynamic_listen,
        metrics_listen: args.metrics_listen,
    }
    .over(&mut config);
    config.plain = args.plain;
    Ok(config)
}

/// The rules given on the command line, over those of `policy`.
fn override_rules(args: &ProxyArgs, policy: &mut Policy) {
    let bytes = |text: &std::ffi::OsString| -> Box<[u8]> {
        text.to_string_lossy()
            .into_owned()
            .into_bytes()
            .into_boxed_slice()
    };
    if args.deny_unclean {
        policy.deny_unclean = true;
    }
    if !args.protect_topic.is_empty() {
        policy.protected_topics = args.protect_topic.iter().map(bytes).collect();
    }
    if !args.allow_client_id.is_empty() {
        policy.allowed_client_ids = args.allow_client_id.iter().map(bytes).collect();
    }
    if let Some(max) = args.max_partitions {
        policy.max_partitions = Some(max);
    }
    if let Some(least) = args.min_replication {
        policy.min_replication = Some(least);
    }
    if args.log_only {
        policy.log_only = true;
    }
    if !args.forward_unknown_api.is_empty() {
        policy.forwarded_unknown_apis = args.forward_unknown_api.iter().copied().collect();
    }
    if let Some(text) = &args.refusal_text {
        policy.refusal_text = Some(text.as_str().into());
    }
}

/// How long SIGHUP waits for the audit lines queued before it to be written, and the file
/// opened again.
const AUDIT_REOPEN: Duration = Duration::from_secs(5);

/// SIGHUP's first step: the audit file opened again at its path (logrotate's `postrotate`),
/// off the runtime's workers.
async fn reopen_audit(reloader: &Reloader) {
    let reloader = reloader.clone();
    let reopened = tokio::task::spawn_blocking(move || reloader.reopen_audit(AUDIT_REOPEN)).await;
    match reopened {
        Ok(Ok(true)) => info(format_args!("SIGHUP: audit log opened again at its path")),
        Ok(Ok(false)) | Err(_) => {}
        Ok(Err(e)) => warn(format_args!(
            "SIGHUP: audit log not opened again: {e}; elections are refused until it can be \
             written (tried every second)"
        )),
    }
}

/// `--config FILE` without `--no-watch-config`: its directory watched. Made before the file
/// is read, so that a change after the read is seen. A watch that cannot be set up (no
/// inotify instance left) is said, and SIGHUP alone reloads.
fn config_watch(args: &ProxyArgs) -> Option<ConfigWatch> {
    let path = args.config.as_ref().filter(|_| !args.no_watch_config)?;
    match ConfigWatch::new(path) {
        Ok(watch) => Some(watch),
        Err(e) => {
            warn(format_args!(
                "{}: its directory is not watched, SIGHUP alone reloads it: {e}",
                path.display()
            ));
            None
        }
    }
}

/// The next change of the watched file; never, without a watch.
async fn next_change(watch: &mut Option<ConfigWatch>) {
    match watch {
        Some(watch) => watch.changed().await,
        None => std::future::pending().await,
    }
}

/// What SIGHUP does after opening the audit log again, and a change of the watched file
/// does alone (`cause` begins each line): with `--config`, the file read again with the
/// command line over it as at the start, put in force whole or not at all; without, the
/// certificates read again.
/// `started_audit`: the Kafka sink made at start, which stays (a reload reads `[audit-kafka]`
/// but makes no other producer: a changed table is applied by a restart).
async fn reload(
    cause: &str,
    reloader: &Reloader,
    args: &ProxyArgs,
    fd_limit: u64,
    started_audit: Option<&DeliveryTarget>,
) {
    let Some(path) = &args.config else {
        match reloader.reload() {
            Ok(true) => info(format_args!(
                "{cause}: certificates reloaded; new connections use them"
            )),
            Ok(false) => info(format_args!("{cause}: no TLS, nothing to reload")),
            Err(e) => warn(format_args!(
                "{cause}: certificates not reloaded, the previous ones stay: {e}"
            )),
        }
        return;
    };
    // It fails closed: a file that is empty, does not parse, or has weaker rules than
    // those in force without saying allow-weaker-rules = true changes nothing.
    let config = ConfigFile::read_again(path)
        .map_err(|e| e.to_string())
        .and_then(|file| {
            let mut config = settings(args, Some(&file), max_connections_for(fd_limit))?;
            if let (Some(target), Some(_)) = (started_audit, &file.audit_kafka) {
                config.audit = AuditTarget::Delivered(target.clone());
            }
            Ok(config)
        });
    let applied = match config {
        Ok(config) => reloader.apply(&config).map_err(|e| e.to_string()),
        Err(e) => {
            reloader.failed();
            Err(e)
        }
    };
    match applied {
        Ok(reloaded) => {
            let mut line = format!(
                "{cause}: {} reloaded: its rules are in force, and its certificates for new \
                 connections",
                path.display()
            );
            if !reloaded.weakened.is_empty() {
                line.push_str(&format!(
                    "; its rules are weaker than those before, as its allow-weaker-rules = \
                     true allows: {} (remove allow-weaker-rules once done: while it is there, \
                     a file cut short weakens the rules too)",
                    reloaded.weakened.join("; ")
                ));
            }
            if !reloaded.restart.is_empty() {
                line.push_str(&format!(
                    "; changed but not applied until a restart: {}",
                    reloaded.restart.join(", ")
                ));
            }
            line.push_str(&format!(
                "; policy hash {}, generation {}{}",
                reloaded.hash,
                reloaded.generation,
                if reloaded.unchanged {
                    " (the same rules)"
                } else {
                    ""
                }
            ));
            info(format_args!("{line}"));
        }
        Err(e) => {
            let (hash, generation) = reloader.policy_version();
            warn(format_args!(
                "{cause}: {} not reloaded, the configuration in force stays: {e}; policy hash \
                 {hash}, generation {generation}",
                path.display()
            ))
        }
    }
}

async fn serve(
    config: Config,
    mut watch: Option<ConfigWatch>,
    args: &ProxyArgs,
    fd_limit: u64,
) -> Result<(), Failure> {
    let config_audit = config.audit.clone();
    let guard = Guard::bind(config).await.map_err(|e| match e {
        kafka_elect_leaders_proxy::StartError::AuditLog(..)
        | kafka_elect_leaders_proxy::StartError::AuditChainKey(..) => {
            Failure::cannot_open(e.to_string())
        }
        _ => Failure::Input(format!("proxy: {e}")),
    })?;
    // Signal handlers before the addresses are printed: whoever reads them may signal.
    let mut terminate =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| Failure::Input(format!("proxy: cannot handle SIGTERM: {e}")))?;
    let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .map_err(|e| Failure::Input(format!("proxy: cannot handle SIGINT: {e}")))?;
    let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        .map_err(|e| Failure::Input(format!("proxy: cannot handle SIGHUP: {e}")))?;
    let reloader = guard.reloader();
    let (hash, generation) = reloader.policy_version();
    info(format_args!(
        "policy in force: hash {hash}, generation {generation}"
    ));
    if let (Some(watch), Some(path)) = (&watch, &args.config) {
        info(format_args!(
            "{} watched: a change to {} is reloaded as SIGHUP reloads it",
            watch.directory().display(),
            path.display()
        ));
    }
    let reload_args = args.clone();
    // The audit sink made at start stays: a reload reads `[audit-kafka]` but does not
    // make another producer (a changed table is applied by a restart).
    let started_audit = match &config_audit {
        AuditTarget::Delivered(target) => Some(target.clone()),
        _ => None,
    };
    tokio::spawn(async move {
        // SIGHUP and the watch in one task: one reload at a time.
        loop {
            let cause = tokio::select! {
                signal = hangup.recv() => {
                    if signal.is_none() {
                        return;
                    }
                    reopen_audit(&reloader).await;
                    "SIGHUP"
                }
                () = next_change(&mut watch) => "config file changed",
            };
            reload(
                cause,
                &reloader,
                &reload_args,
                fd_limit,
                started_audit.as_ref(),
            )
            .await;
            if let Some(watch) = &mut watch {
                watch.seen();
            }
        }
    });
    {
        let mut stdout = std::io::stdout().lock();
        for route in guard.routes() {
            let _ = writeln!(
                stdout,
                "listening {} upstream {}",
                route.listen, route.upstream
            );
        }
        if let Some(addr) = guard.metrics_addr() {
            let _ = writeln!(stdout, "metrics {addr}");
        }
        let _ = stdout.flush();
    }
    guard
        .run(async move {
            let signal = tokio::select! {
                _ = terminate.recv() => "SIGTERM",
                _ = interrupt.recv() => "SIGINT",
            };
            info(format_args!(
                "{signal}: no more connections accepted; closing"
            ));
        })
        .await;
    Ok(())
}
