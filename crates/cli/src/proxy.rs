//! `elect-leaders proxy`: the guard's command line. The options become a
//! [`kafka_elect_leaders_proxy::Config`]; the guard itself (policy, answers, audit, the
//! server) is the `kafka-elect-leaders-proxy` crate.

use std::collections::HashSet;
use std::ffi::OsString;
use std::io::Write;
use std::net::SocketAddr;

use kafka_elect_leaders::DEFAULT_MAX_FRAME_SIZE;
use kafka_elect_leaders_proxy::audit::log;
use kafka_elect_leaders_proxy::{AuditTarget, Config, Guard, Policy, Route};

use crate::fail::Failure;

pub const USAGE: &str = "\
Usage: elect-leaders proxy --listen ADDR --upstream ADDR [--listen ADDR --upstream ADDR ...]
                           [--deny-unclean] [--protect-topic NAME]... [--allow-client-id ID]...
                           [--max-partitions N] [--log-only] [--audit-log FILE|-]
                           [--max-connections N] [--max-frame-size BYTES]

A TCP proxy in front of Kafka brokers that applies a policy to ElectLeaders requests
(API key 43, versions 0-2). Give one --listen/--upstream pair per broker, in order, and
make the brokers advertise the --listen addresses (advertised.listeners), so clients stay
on the proxy after bootstrap. Each client connection gets its own broker connection.

Frames of every other API are forwarded byte for byte; only their header's first fields
are read. ElectLeaders requests are parsed, and:
  --deny-unclean          UNCLEAN elections are refused
  --protect-topic NAME    no election for NAME's partitions (repeatable)
  --allow-client-id ID    only these client ids may elect (repeatable; none: any)
  --max-partitions N      a request naming more than N partitions is refused, and so is
                          one for all partitions (null TopicPartitions)
  --log-only              forward everything unchanged; audit what would be refused

A refused partition is answered by the proxy, in the response the client waits for, with
POLICY_VIOLATION (44) and a message naming the rule; the broker never sees it. When only
some partitions are refused (a protected topic next to others), the rest is forwarded and
the broker's answer is merged with the refusals into one response. A refused client id,
too many partitions, or an election of all partitions under --protect-topic or (UNCLEAN)
--deny-unclean refuse the whole request as Kafka's getErrorResponse does: the top-level
ErrorCode (v1+) and every named partition set to POLICY_VIOLATION. Version 0 has no
top-level ErrorCode: a v0 request for all partitions refused whole gets an empty result
list (what Kafka answers at v0 too), and the audit log says it was refused. Answers go
back in request order, also when one is answered by the proxy while earlier ones are still
at the broker.

Options:
  --listen ADDR           address to accept clients on (host:port; port 0: any free one)
  --upstream ADDR         the broker behind the --listen before it (host:port)
  --audit-log FILE|-      one JSON line per ElectLeaders decision, appended to FILE, or to
                          standard output with -; default: standard error
  --max-connections N     client connections at once, over all listeners (default 1024);
                          one more is accepted and closed at once
  --max-frame-size BYTES  largest frame read from either side (default 104857600, Kafka's
                          socket.request.max.bytes); a larger size prefix closes the
                          connection
  -h, --help              this text

Once listening, prints one line per listener on standard output:
  listening 127.0.0.1:PORT upstream HOST:PORT
Diagnostics (connections closed on malformed frames, brokers unreachable) go to standard
error, one line each. A malformed frame from a client (a bad size prefix, an ElectLeaders
request that does not parse) closes that client's connection, and nothing of it is
forwarded. A broker that closes its connection closes the client's. SIGINT or SIGTERM:
stop accepting, give answers in flight up to 3 s, close everything, exit 0.

Exit status: 0 after a signal; 1 when a listener cannot be opened; 2 usage error.
";

/// The parsed command line.
#[derive(Debug)]
struct Options {
    routes: Vec<(SocketAddr, SocketAddr)>,
    policy: Policy,
    audit_log: Option<String>,
    max_connections: usize,
    max_frame_size: usize,
    plain: bool,
}

fn usage(message: impl Into<String>) -> Failure {
    Failure::usage("proxy", message)
}

fn parse_addr(option: &str, text: &str) -> Result<SocketAddr, Failure> {
    use std::net::ToSocketAddrs;
    match text.to_socket_addrs().map(|mut a| a.next()) {
        Ok(Some(addr)) => Ok(addr),
        _ => Err(usage(format!(
            "{option}: expected host:port (e.g. 127.0.0.1:9092), got '{text}'"
        ))),
    }
}

fn parse_count(option: &str, text: &str, min: usize) -> Result<usize, Failure> {
    match text.parse::<usize>() {
        Ok(n) if n >= min => Ok(n),
        _ => Err(usage(format!(
            "{option}: expected a whole number of at least {min}, got '{text}'"
        ))),
    }
}

/// Parses the options; `None` when `--help` was asked for.
fn parse_options(args: impl Iterator<Item = OsString>) -> Result<Option<Options>, Failure> {
    let mut args = args;
    let mut listens = Vec::new();
    let mut upstreams = Vec::new();
    let mut policy = Policy::default();
    let mut audit_log = None;
    let mut max_connections = 1024;
    let mut max_frame_size = DEFAULT_MAX_FRAME_SIZE;
    let mut plain = false;
    while let Some(arg) = args.next() {
        let text = arg.to_string_lossy().into_owned();
        let (name, inline) = match text.split_once('=') {
            Some((name, value)) if name.starts_with("--") => {
                (name.to_owned(), Some(value.to_owned()))
            }
            _ => (text.clone(), None),
        };
        let flag = matches!(
            name.as_str(),
            "--deny-unclean" | "--log-only" | "--plain" | "-h" | "--help"
        );
        if flag && inline.is_some() {
            return Err(usage(format!("{name} takes no value")));
        }
        let mut value = |what: &str| -> Result<String, Failure> {
            match inline
                .clone()
                .or_else(|| args.next().map(|a| a.to_string_lossy().into_owned()))
            {
                Some(v) => Ok(v),
                None => Err(usage(format!("{name} needs a value ({what})"))),
            }
        };
        match name.as_str() {
            "-h" | "--help" => return Ok(None),
            "--listen" => listens.push(parse_addr("--listen", &value("host:port")?)?),
            "--upstream" => upstreams.push(parse_addr("--upstream", &value("host:port")?)?),
            "--deny-unclean" => policy.deny_unclean = true,
            "--log-only" => policy.log_only = true,
            // Hidden: copy bytes, parse nothing (the baseline of benches/proxy_throughput.sh).
            "--plain" => plain = true,
            "--protect-topic" => {
                let topic = value("a topic name")?;
                policy
                    .protected_topics
                    .insert(topic.into_bytes().into_boxed_slice());
            }
            "--allow-client-id" => {
                let id = value("a client id")?;
                policy
                    .allowed_client_ids
                    .insert(id.into_bytes().into_boxed_slice());
            }
            "--max-partitions" => {
                policy.max_partitions = Some(parse_count("--max-partitions", &value("N")?, 0)?)
            }
            "--audit-log" => audit_log = Some(value("a file, or - for standard output")?),
            "--max-connections" => {
                max_connections = parse_count("--max-connections", &value("N")?, 1)?
            }
            "--max-frame-size" => {
                max_frame_size = parse_count("--max-frame-size", &value("bytes")?, 8)?;
                if max_frame_size > i32::MAX as usize {
                    return Err(usage(format!(
                        "--max-frame-size: at most {} (a size prefix is an int32)",
                        i32::MAX
                    )));
                }
            }
            _ => return Err(usage(format!("unknown option '{name}'"))),
        }
    }
    if listens.is_empty() {
        return Err(usage(
            "at least one --listen ADDR --upstream ADDR pair is needed",
        ));
    }
    if listens.len() != upstreams.len() {
        return Err(usage(format!(
            "each --listen needs its --upstream: {} --listen, {} --upstream",
            listens.len(),
            upstreams.len()
        )));
    }
    if plain && (policy.has_rules() || policy.log_only) {
        return Err(usage(
            "--plain forwards bytes only: it takes no policy option",
        ));
    }
    let unique: HashSet<_> = listens.iter().filter(|a| a.port() != 0).collect();
    if unique.len() != listens.iter().filter(|a| a.port() != 0).count() {
        return Err(usage("the same --listen address is given twice"));
    }
    Ok(Some(Options {
        routes: listens.into_iter().zip(upstreams).collect(),
        policy,
        audit_log,
        max_connections,
        max_frame_size,
        plain,
    }))
}

/// Runs `elect-leaders proxy ARGS...` until SIGINT or SIGTERM.
pub fn run(args: impl Iterator<Item = OsString>) -> Result<(), Failure> {
    let Some(options) = parse_options(args)? else {
        let mut out = std::io::stdout().lock();
        return out
            .write_all(USAGE.as_bytes())
            .and_then(|()| out.flush())
            .map_err(Failure::Output);
    };
    let config = Config {
        routes: options
            .routes
            .iter()
            .map(|&(listen, upstream)| Route { listen, upstream })
            .collect(),
        policy: options.policy,
        audit: match options.audit_log.as_deref() {
            None => AuditTarget::Stderr,
            Some("-") => AuditTarget::Stdout,
            Some(path) => AuditTarget::File(path.into()),
        },
        max_connections: options.max_connections,
        max_frame_size: options.max_frame_size,
        plain: options.plain,
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
