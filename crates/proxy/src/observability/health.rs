//! Whether the guard is live and ready, for `/livez` and `/readyz` on the metrics listener
//! (a load balancer's or Kubernetes' probes).
//!
//! Live: the guard's runtime answers (the metrics listener serving the page is the proof).
//! Ready: the policy is in force (always, once the guard runs: a reload that fails keeps
//! the one in force), a broker answered the guard's probe, the audit log is not failing,
//! and the guard is not draining. The probe is an ApiVersions request (version 0, which
//! every broker answers, before any authentication) sent to each broker in turn, through
//! the upstream TLS when there is one, until one answers. It is made when `/readyz` is
//! asked and the last one is older than [`PROBE_INTERVAL`], so that a guard nobody probes
//! sends the brokers nothing of its own.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::core::tls::Tls;

/// How long a probe's result stands.
pub(crate) const PROBE_INTERVAL: Duration = Duration::from_secs(5);

/// The longest one broker's probe may take: within the metrics listener's write timeout
/// however many brokers fail.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The correlation id of the probe's request.
const PROBE_ID: i32 = 0x4b45_4c50;

/// The guard's readiness, as the probes and the stop set it.
#[derive(Debug, Default)]
pub(crate) struct Health {
    draining: AtomicBool,
    /// The brokers to probe, set when the guard runs.
    brokers: OnceLock<Vec<SocketAddr>>,
    /// The last probe: when, and which broker answered or why none did.
    probed: tokio::sync::Mutex<Option<(Instant, Result<SocketAddr, String>)>>,
}

impl Health {
    /// The guard is stopping: not ready from now on.
    pub(crate) fn drain(&self) {
        self.draining.store(true, Ordering::Relaxed);
    }

    /// The brokers `/readyz` probes.
    pub(crate) fn set_brokers(&self, brokers: Vec<SocketAddr>) {
        let _ = self.brokers.set(brokers);
    }

    /// What `/readyz` says: every check, and whether all pass; `tls` is the guard's (the
    /// brokers are probed through it), `audit_failing` the audit log's state,
    /// `audit_unacknowledged` whether the audit sink lately did not acknowledge the record
    /// of a leadership change that waited for it (`blocking`, `blocking-strict`).
    pub(crate) async fn readiness(
        &self,
        tls: Option<&Tls>,
        audit_failing: bool,
        audit_unacknowledged: bool,
    ) -> (bool, String) {
        let broker = self.broker(tls).await;
        let mut ready = true;
        let mut lines = String::new();
        let mut check = |ok: bool, what: &str| {
            ready &= ok;
            lines.push_str(if ok { "ok: " } else { "not ready: " });
            lines.push_str(what);
            lines.push('\n');
        };
        check(true, "policy in force");
        match broker {
            Ok(addr) => check(true, &format!("broker {addr} answered the last probe")),
            Err(why) => check(false, &format!("no broker answered the last probe: {why}")),
        }
        if audit_failing {
            check(
                false,
                "audit log failing: decisions that must be audited are refused",
            );
        } else {
            check(true, "audit log writing");
        }
        if audit_unacknowledged {
            check(
                false,
                "audit sink not acknowledging: the last leadership change that waited for its \
                 record was refused",
            );
        }
        if self.draining.load(Ordering::Relaxed) {
            check(false, "draining: the guard is stopping");
        }
        (ready, lines)
    }

    /// The last probe's result, probing again when it is older than [`PROBE_INTERVAL`]
    /// (one probe at a time: the others wait for its result).
    async fn broker(&self, tls: Option<&Tls>) -> Result<SocketAddr, String> {
        let mut probed = self.probed.lock().await;
        if let Some((at, result)) = &*probed {
            if at.elapsed() < PROBE_INTERVAL {
                return result.clone();
            }
        }
        let brokers = self.brokers.get().map(Vec::as_slice).unwrap_or_default();
        let mut result = Err(String::from("no broker to probe"));
        for &broker in brokers {
            match tokio::time::timeout(PROBE_TIMEOUT, probe(tls, broker)).await {
                Ok(Ok(())) => {
                    result = Ok(broker);
                    break;
                }
                Ok(Err(e)) => result = Err(format!("{broker}: {e}")),
                Err(_) => result = Err(format!("{broker}: no answer within {PROBE_TIMEOUT:?}")),
            }
        }
        *probed = Some((Instant::now(), result.clone()));
        result
    }
}

/// One ApiVersions round trip with `broker`, through the upstream TLS if any.
async fn probe(tls: Option<&Tls>, broker: SocketAddr) -> Result<(), String> {
    let tcp = TcpStream::connect(broker)
        .await
        .map_err(|e| format!("cannot connect: {e}"))?;
    let loaded = tls.map(Tls::current);
    match loaded
        .as_ref()
        .and_then(|l| l.connector.clone().map(|c| (l, c)))
    {
        None => round_trip(tcp).await,
        Some((loaded, connector)) => {
            let name = loaded
                .server_name(broker, None)
                .map_err(|e| e.to_string())?;
            let tls = connector
                .connect(name, tcp)
                .await
                .map_err(|e| format!("TLS handshake failed: {e}"))?;
            round_trip(tls).await
        }
    }
}

/// Writes an ApiVersions v0 request and reads its answer's size and correlation id.
async fn round_trip<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S) -> Result<(), String> {
    let client_id = b"elect-leaders-guard-probe";
    let mut request = Vec::with_capacity(4 + 10 + client_id.len());
    let len = 2 + 2 + 4 + 2 + client_id.len();
    request.extend_from_slice(&(len as i32).to_be_bytes());
    request.extend_from_slice(&18i16.to_be_bytes());
    request.extend_from_slice(&0i16.to_be_bytes());
    request.extend_from_slice(&PROBE_ID.to_be_bytes());
    request.extend_from_slice(&(client_id.len() as i16).to_be_bytes());
    request.extend_from_slice(client_id);
    stream
        .write_all(&request)
        .await
        .map_err(|e| format!("cannot write: {e}"))?;
    let mut head = [0u8; 8];
    stream
        .read_exact(&mut head)
        .await
        .map_err(|e| format!("no answer: {e}"))?;
    let size = i32::from_be_bytes([head[0], head[1], head[2], head[3]]);
    let id = i32::from_be_bytes([head[4], head[5], head[6], head[7]]);
    if size < 4 || id != PROBE_ID {
        return Err(format!(
            "not a Kafka answer (size {size}, correlation id {id})"
        ));
    }
    Ok(())
}
