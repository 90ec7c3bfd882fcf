//! `elect-leaders proxy`: the guard's command line. The flags become a
//! [`kafka_elect_leaders_proxy::Config`]; the guard itself (policy, answers, audit, the
//! server) is the `kafka-elect-leaders-proxy` crate.

use std::io::Write;

use kafka_elect_leaders_proxy::audit::log;
use kafka_elect_leaders_proxy::{
    max_connections_for, raise_fd_limit, AuditTarget, Config, Guard, Policy, Route, ServerTls,
    UpstreamTls,
};

use crate::fail::Failure;
use crate::flags::ProxyArgs;

/// Runs `elect-leaders proxy` until SIGINT or SIGTERM.
///
/// The soft limit on open files is raised to the hard limit first; without
/// `--max-connections`, the guard takes as many clients as that limit allows.
pub fn run(args: &ProxyArgs) -> Result<(), Failure> {
    let fd_limit = raise_fd_limit().unwrap_or_else(|e| {
        // 1,024: the usual soft limit.
        log(format_args!("cannot raise the limit on open files: {e}"));
        1024
    });
    let max_connections = args
        .max_connections
        .unwrap_or_else(|| max_connections_for(fd_limit));
    let bytes = |text: &std::ffi::OsString| {
        text.to_string_lossy()
            .into_owned()
            .into_bytes()
            .into_boxed_slice()
    };
    let policy = Policy {
        deny_unclean: args.deny_unclean,
        protected_topics: args.protect_topic.iter().map(bytes).collect(),
        allowed_client_ids: args.allow_client_id.iter().map(bytes).collect(),
        allowed_principals: args
            .allow_principal
            .iter()
            .map(|p| p.as_str().into())
            .collect(),
        max_partitions: args.max_partitions,
        log_only: args.log_only,
    };
    let config = Config {
        routes: args
            .listen
            .iter()
            .zip(&args.upstream)
            .map(|(&listen, upstream)| Route {
                listen,
                upstream: upstream.addr,
            })
            .collect(),
        policy,
        audit: match args.audit_log.as_deref() {
            None => AuditTarget::Stderr,
            Some(path) if path == "-" => AuditTarget::Stdout,
            Some(path) => AuditTarget::File(path.into()),
        },
        audit_queue: args.audit_queue,
        max_connections,
        max_frame_size: args.max_frame_size,
        idle_timeout: args.idle_timeout,
        frame_timeout: args.frame_timeout,
        upstream_connect_timeout: args.upstream_connect_timeout,
        request_timeout: args.request_timeout,
        max_buffered_bytes: args.max_buffered_bytes,
        tls: match (&args.tls_cert, &args.tls_key) {
            (Some(cert), Some(key)) => Some(ServerTls {
                cert: cert.clone(),
                key: key.clone(),
                client_ca: args.tls_client_ca.clone(),
            }),
            _ => None,
        },
        upstream_tls: args.upstream_tls.then(|| UpstreamTls {
            ca: args.upstream_ca.clone(),
            server_name: args.upstream_server_name.clone(),
            names: args
                .upstream
                .iter()
                .filter_map(|u| Some((u.addr, u.host.clone()?)))
                .collect(),
            client_cert: args
                .upstream_tls_cert
                .clone()
                .zip(args.upstream_tls_key.clone()),
        }),
        plain: args.plain,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Input(format!("cannot start the runtime: {e}")))?;
    runtime.block_on(serve(config))
}

async fn serve(config: Config) -> Result<(), Failure> {
    let guard = Guard::bind(config).await.map_err(|e| match e {
        kafka_elect_leaders_proxy::StartError::AuditLog(..) => Failure::cannot_open(e.to_string()),
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
    tokio::spawn(async move {
        while hangup.recv().await.is_some() {
            match reloader.reload() {
                Ok(true) => log(format_args!(
                    "SIGHUP: certificates reloaded; new connections use them"
                )),
                Ok(false) => log(format_args!("SIGHUP: no TLS, nothing to reload")),
                Err(e) => log(format_args!(
                    "SIGHUP: certificates not reloaded, the previous ones stay: {e}"
                )),
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
        let _ = stdout.flush();
    }
    guard
        .run(async move {
            let signal = tokio::select! {
                _ = terminate.recv() => "SIGTERM",
                _ = interrupt.recv() => "SIGINT",
            };
            log(format_args!(
                "{signal}: no more connections accepted; closing"
            ));
        })
        .await;
    Ok(())
}
