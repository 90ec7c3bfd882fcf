//! The audit log sent to a syslog receiver (a SIEM): each line one RFC 5424 message, its
//! MSG the line's JSON (no structured data: `-`), framed by octet counting (RFC 6587,
//! `LEN SP MESSAGE`), over TCP or over TLS (RFC 5425, rustls).
//!
//! Written by the audit writer thread, as a file is: a message is sent whole on one
//! connection or sent again whole on the next; a failed send drops the connection, the
//! next try connects again (every second, the writer's retry), and meanwhile the log is
//! failing: elections are refused, as with a file that cannot be written. Before each
//! message the connection is looked at for the receiver's close (a receiver that closed
//! would take one more message into the void); a write that takes longer than
//! [`WRITE_TIMEOUT`] fails (a receiver that stopped reading).

use std::io::{self, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

/// Where audit lines go as syslog messages (`[audit-syslog]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyslogTarget {
    /// The receiver, `host:port`.
    pub address: String,
    /// TLS towards it (RFC 5425); None: plain TCP.
    pub tls: Option<SyslogTls>,
    /// The APP-NAME of each message (default `elect-leaders`).
    pub app_name: String,
    /// The facility, 0 to 23 (default 16, `local0`); each message's severity is
    /// informational (6).
    pub facility: u8,
}

/// TLS towards the syslog receiver.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SyslogTls {
    /// The CAs its certificate must chain to (PEM); None: the system's roots.
    pub ca: Option<PathBuf>,
    /// The name its certificate is checked against; None: the address's host.
    pub server_name: Option<String>,
}

/// How long one message may take to be written before the connection is given up.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The facility names of RFC 5424, by number.
pub const FACILITIES: [&str; 24] = [
    "kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron", "authpriv",
    "ftp", "ntp", "audit", "alert", "clock", "local0", "local1", "local2", "local3", "local4",
    "local5", "local6", "local7",
];

/// The facility named `name` (or its number).
pub fn facility(name: &str) -> Option<u8> {
    FACILITIES
        .iter()
        .position(|f| *f == name)
        .or_else(|| name.parse::<usize>().ok().filter(|&n| n < FACILITIES.len()))
        .and_then(|n| u8::try_from(n).ok())
}

enum Stream {
    Tcp(TcpStream),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
}

impl Stream {
    fn socket(&self) -> &TcpStream {
        match self {
            Stream::Tcp(s) => s,
            Stream::Tls(s) => &s.sock,
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.write_all(bytes),
            Stream::Tls(s) => {
                s.write_all(bytes)?;
                s.flush()
            }
        }
    }
}

/// A connection to the syslog receiver, made when a message is to be sent.
pub struct Syslog {
    target: SyslogTarget,
    tls: Option<Arc<ClientConfig>>,
    host: String,
    stream: Option<Stream>,
}

impl Syslog {
    /// The receiver of `target`, connected now (an error when it cannot be: the guard
    /// does not start with a syslog sink it cannot reach).
    pub fn connect(target: SyslogTarget) -> io::Result<Syslog> {
        let tls = target.tls.as_ref().map(client_config).transpose()?;
        let host = std::env::var("HOSTNAME")
            .ok()
            .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
            .map(|h| h.trim().to_owned())
            .filter(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_graphic()))
            .map_or_else(|| "-".to_owned(), |h| h.chars().take(255).collect());
        let mut syslog = Syslog {
            target,
            tls,
            host,
            stream: None,
        };
        syslog.stream = Some(syslog.open()?);
        Ok(syslog)
    }

    /// The receiver, for logs.
    pub fn address(&self) -> &str {
        &self.target.address
    }

    fn open(&self) -> io::Result<Stream> {
        let address = &self.target.address;
        let addr = address.to_socket_addrs()?.next().ok_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, format!("{address}: no address"))
        })?;
        let socket = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT)?;
        socket.set_write_timeout(Some(WRITE_TIMEOUT))?;
        socket.set_read_timeout(Some(WRITE_TIMEOUT))?;
        socket.set_nodelay(true)?;
        let Some(config) = &self.tls else {
            return Ok(Stream::Tcp(socket));
        };
        let name = self
            .target
            .tls
            .as_ref()
            .and_then(|t| t.server_name.clone())
            .unwrap_or_else(|| {
                address
                    .rsplit_once(':')
                    .map_or(address.as_str(), |(host, _)| host)
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_owned()
            });
        let name = ServerName::try_from(name)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        let conn = ClientConnection::new(config.clone(), name).map_err(io::Error::other)?;
        let mut stream = StreamOwned::new(conn, socket);
        // The handshake now, so that a certificate refused is this error.
        while stream.conn.is_handshaking() {
            stream
                .conn
                .complete_io(&mut stream.sock)
                .map_err(|e| io::Error::new(e.kind(), format!("TLS with {address}: {e}")))?;
        }
        Ok(Stream::Tls(Box::new(stream)))
    }

    /// One RFC 5424 message of `line` (its newline left out), octet-counted.
    pub fn frame(&self, line: &[u8]) -> Vec<u8> {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let pri = u32::from(self.target.facility) * 8 + 6;
        let head = format!(
            "<{pri}>1 {} {} {} {} audit - ",
            crate::observability::diag::rfc3339_now(),
            self.host,
            self.target.app_name,
            std::process::id()
        );
        let len = head.len() + line.len();
        let mut frame = format!("{len} {head}").into_bytes();
        frame.extend_from_slice(line);
        frame
    }

    /// Sends `line` whole, connecting first when there is no connection, or when the
    /// receiver closed the one there is; on an error the connection is dropped.
    pub fn send(&mut self, line: &[u8]) -> io::Result<()> {
        if self.stream.as_ref().is_some_and(|s| closed(s.socket())) {
            self.stream = None;
        }
        let frame = self.frame(line);
        let mut stream = match self.stream.take() {
            Some(stream) => stream,
            None => self.open()?,
        };
        let sent = stream.write_all(&frame);
        if sent.is_ok() {
            self.stream = Some(stream);
        }
        sent
    }
}

/// Whether the receiver closed `socket` (or reset it): a syslog receiver never sends.
fn closed(socket: &TcpStream) -> bool {
    if socket.set_nonblocking(true).is_err() {
        return true;
    }
    let mut byte = [0u8; 1];
    let gone = match socket.peek(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != io::ErrorKind::WouldBlock,
    };
    // A TLS receiver may send (a session ticket): bytes waiting are no close.
    let _ = socket.set_nonblocking(false);
    gone
}

fn client_config(tls: &SyslogTls) -> io::Result<Arc<ClientConfig>> {
    let bad = |what: String| io::Error::new(io::ErrorKind::InvalidInput, what);
    let mut roots = RootCertStore::empty();
    match &tls.ca {
        Some(ca) => {
            let certs = CertificateDer::pem_file_iter(ca)
                .and_then(|c| c.collect::<Result<Vec<_>, _>>())
                .map_err(|e| bad(format!("audit-syslog.tls-ca {}: {e}", ca.display())))?;
            if certs.is_empty() {
                return Err(bad(format!(
                    "audit-syslog.tls-ca {}: no certificate in it (expected PEM)",
                    ca.display()
                )));
            }
            for cert in certs {
                roots
                    .add(cert)
                    .map_err(|e| bad(format!("audit-syslog.tls-ca {}: {e}", ca.display())))?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
        }
    }
    let config =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| bad(format!("TLS: {e}")))?
            .with_root_certificates(roots)
            .with_no_client_auth();
    Ok(Arc::new(config))
}
