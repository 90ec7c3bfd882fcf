//! Serves one accepted client: the client's TLS handshake (accept) and the broker
//! connection with its own (dial), each within its timeout; the principal the client
//! brings, and whether the guard lends it its identity; then the frames ([`proxy`]), or the
//! hidden plain copy of bytes (`Config::plain`). How the connection ended goes to the
//! metrics.

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::watch;

use super::client_read::Probed;
use super::frames::WRITE_BOUNDARY;
use super::proxy::{proxy, proxy_as};
use crate::core::close::{Close, CloseReason};
use crate::core::shared::Shared;
use crate::core::tls::{handshake_error, Loaded, Tls};
use crate::filters::sasl::identity::{certificate_subject, Identity};
use crate::observability::audit::ConnInfo;
use crate::observability::diag::log;

/// Serves one accepted client: connects to its upstream, then proxies until either side
/// closes, a frame is malformed, or the proxy stops. `advertised`: the host name of a
/// broker with no route, as it advertised itself (its certificate's name, with TLS).
pub async fn serve(
    client: TcpStream,
    conn: ConnInfo,
    advertised: Option<String>,
    shared: Arc<Shared>,
    shutdown: watch::Receiver<bool>,
) {
    shared.metrics.accepted();
    let stopping = shutdown.clone();
    let reason = serve_client(client, conn, advertised, &shared, shutdown).await;
    let reason = match reason {
        Some(CloseReason::Client) if *stopping.borrow() => Some(CloseReason::Stop),
        reason => reason,
    };
    shared.metrics.closed(reason);
}

/// [`serve`]; how the connection ended (None: the client's TLS handshake failed).
async fn serve_client(
    client: TcpStream,
    conn: ConnInfo,
    advertised: Option<String>,
    shared: &Arc<Shared>,
    shutdown: watch::Receiver<bool>,
) -> Option<CloseReason> {
    let shared = shared.clone();
    let tls = shared.tls.as_ref().map(Tls::current);
    // Kafka's clients and brokers disable Nagle; a proxy that did not would add delay.
    let _ = client.set_nodelay(true);
    let client = client_side(client, &conn, &shared, tls.as_ref()).await?;
    // The principal, and whether the broker will take this client as the guard itself
    // (`upstream-tls.cert`): then only a client the policy allows goes on (see
    // `identity`), closed here before anything reaches the broker.
    let certificate = match &client {
        ClientSide::Tls(c, _) => subject(c),
        ClientSide::Plain(_) => None,
    };
    let lent = tls.as_ref().is_some_and(Loaded::lends_identity);
    let identity = Identity::new(certificate, lent);
    if let Err(why) = identity.admitted(&shared.policy()) {
        log(format_args!(
            "{} -> {}: closing the client after its TLS handshake: {why}",
            conn.client, conn.listener
        ));
        return None;
    }
    let Some(upstream) = upstream_side(&conn, &shared, tls.as_ref(), advertised.as_deref()).await
    else {
        return Some(CloseReason::Upstream);
    };
    let plain_mode = shared.plain;
    let result = match (client, upstream) {
        (ClientSide::Plain(mut c), UpstreamSide::Plain(mut u)) => {
            if plain_mode {
                plain(&mut c, &mut u, shutdown).await
            } else {
                proxy(c.split(), u.split(), &conn, &shared, shutdown).await
            }
        }
        (ClientSide::Plain(mut c), UpstreamSide::Tls(mut u)) => {
            if plain_mode {
                plain(&mut c, &mut *u, shutdown).await
            } else {
                proxy(c.split(), tokio::io::split(*u), &conn, &shared, shutdown).await
            }
        }
        (ClientSide::Tls(mut c, probe), UpstreamSide::Plain(mut u)) => {
            if plain_mode {
                plain(&mut *c, &mut u, shutdown).await
            } else {
                let (read, write) = tokio::io::split(*c);
                let read = Probed { read, probe };
                let client = (read, write);
                proxy_as(client, u.split(), &conn, identity, &shared, shutdown).await
            }
        }
        (ClientSide::Tls(mut c, probe), UpstreamSide::Tls(mut u)) => {
            if plain_mode {
                plain(&mut *c, &mut *u, shutdown).await
            } else {
                let (read, write) = tokio::io::split(*c);
                let read = Probed { read, probe };
                let (client, upstream) = ((read, write), tokio::io::split(*u));
                proxy_as(client, upstream, &conn, identity, &shared, shutdown).await
            }
        }
    };
    match result {
        Ok(()) => Some(CloseReason::Client),
        Err(close) => {
            log(format_args!(
                "{} -> {}: closing the connection: {close}",
                conn.client, conn.upstream
            ));
            Some(close.reason())
        }
    }
}

/// The subject of the client's certificate (mTLS), as Kafka names its principal.
fn subject(tls: &tokio_rustls::server::TlsStream<TcpStream>) -> Option<String> {
    let leaf = tls.get_ref().1.peer_certificates()?.first()?;
    certificate_subject(leaf)
}

/// The client's connection, after its TLS handshake if the guard speaks TLS to clients.
enum ClientSide {
    Plain(TcpStream),
    /// With a second descriptor of the same socket, to see the client's FIN while the TLS
    /// stream is split (see [`Probed`]).
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>, TcpStream),
}

/// The broker connection, after its TLS handshake if the guard speaks TLS to brokers.
enum UpstreamSide {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

/// The client's TLS handshake, within the frame timeout (a client that opens a connection
/// and sends nothing, or half a handshake, is closed then); a failure is one log line and
/// concerns this client alone.
async fn client_side(
    client: TcpStream,
    conn: &ConnInfo,
    shared: &Shared,
    tls: Option<&Loaded>,
) -> Option<ClientSide> {
    let Some(acceptor) = tls.and_then(|tls| tls.acceptor.clone()) else {
        return Some(ClientSide::Plain(client));
    };
    let probe = match duplicate(client) {
        Ok(pair) => pair,
        Err(e) => {
            log(format_args!("{}: closing the client: {e}", conn.client));
            return None;
        }
    };
    let (client, probe) = probe;
    match tokio::time::timeout(shared.frame_timeout, acceptor.accept(client)).await {
        Ok(Ok(stream)) => Some(ClientSide::Tls(Box::new(stream), probe)),
        Ok(Err(e)) => {
            log(format_args!(
                "{} -> {}: TLS handshake with the client failed, closing it: {}",
                conn.client,
                conn.listener,
                handshake_error(&e)
            ));
            None
        }
        Err(_) => {
            log(format_args!(
                "{} -> {}: no TLS handshake from the client within the frame timeout ({:?}), \
                 closing it",
                conn.client, conn.listener, shared.frame_timeout
            ));
            None
        }
    }
}

/// A second tokio handle on the same socket (a duplicated descriptor), for [`Probed`].
fn duplicate(stream: TcpStream) -> std::io::Result<(TcpStream, TcpStream)> {
    let stream = stream.into_std()?;
    let copy = stream.try_clone()?;
    Ok((TcpStream::from_std(stream)?, TcpStream::from_std(copy)?))
}

/// The broker connection and its TLS handshake, together within the upstream connect
/// timeout; a failure closes the client with one log line.
async fn upstream_side(
    conn: &ConnInfo,
    shared: &Shared,
    tls: Option<&Loaded>,
    advertised: Option<&str>,
) -> Option<UpstreamSide> {
    let connect_timeout = shared.upstream_connect_timeout;
    let connector = tls.and_then(|tls| tls.connector.clone());
    let connect = async {
        let upstream = TcpStream::connect(conn.upstream)
            .await
            .map_err(|e| format!("cannot connect to the upstream: {e}"))?;
        let _ = upstream.set_nodelay(true);
        let Some(connector) = connector else {
            return Ok(UpstreamSide::Plain(upstream));
        };
        let name = tls
            .map(|tls| tls.server_name(conn.upstream, advertised))
            .transpose()
            .map_err(|e| e.to_string())?
            .unwrap_or_else(|| conn.upstream.ip().into());
        connector
            .connect(name, upstream)
            .await
            .map(|stream| UpstreamSide::Tls(Box::new(stream)))
            .map_err(|e| {
                format!(
                    "TLS handshake with the upstream failed: {}",
                    handshake_error(&e)
                )
            })
    };
    match tokio::time::timeout(connect_timeout, connect).await {
        Ok(Ok(upstream)) => Some(upstream),
        Ok(Err(e)) => {
            log(format_args!(
                "{} -> {}: {e}; closing the client",
                conn.client, conn.upstream
            ));
            None
        }
        Err(_) => {
            log(format_args!(
                "{} -> {}: no connection to the upstream after {:?}, closing the client",
                conn.client, conn.upstream, connect_timeout
            ));
            None
        }
    }
}

/// The hidden plain mode (`Config::plain`): bytes copied both ways, no frame looked at.
async fn plain<C, U>(
    client: &mut C,
    upstream: &mut U,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), Close>
where
    C: AsyncRead + AsyncWrite + Unpin + ?Sized,
    U: AsyncRead + AsyncWrite + Unpin + ?Sized,
{
    tokio::select! {
        r = tokio::io::copy_bidirectional_with_sizes(
            client, upstream, WRITE_BOUNDARY, WRITE_BOUNDARY,
        ) => r.map(|_| ()).map_err(|e| Close::new(format!("copying: {e}"))),
        _ = shutdown.wait_for(|stop| *stop) => Ok(()),
    }
}
