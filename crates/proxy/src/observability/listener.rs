//! The metrics listener (`metrics-listen`): `/metrics` in Prometheus' text format and
//! `/status` for a person, both from [`crate::observability::metrics::Metrics`], and the
//! probes `/livez` and `/readyz` (`crate::observability::health`). It serves on while the
//! guard drains, until the last connection is closed, so that `/readyz` says so.
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

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};

use crate::core::shared::Shared;

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
            Some("/livez") => ("200 OK", "text/plain", "live\n".to_owned()),
            Some("/readyz") => match shared
                .health
                .readiness(
                    shared.tls.as_ref(),
                    shared.audit.failing(),
                    shared.audit.delivery_failing(),
                )
                .await
            {
                (true, checks) => ("200 OK", "text/plain", checks),
                (false, checks) => ("503 Service Unavailable", "text/plain", checks),
            },
            _ => (
                "404 Not Found",
                "text/plain",
                "/metrics, /status, /livez or /readyz\n".to_owned(),
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
        let audit = crate::observability::audit::Audit::start(
            crate::observability::audit::AuditSink::Writer(Box::new(std::io::sink())),
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
}
