//! TLS on either side of the guard, with rustls (the `ring` provider: it builds with a C
//! compiler alone, where `aws-lc-rs` also needs cmake and more time).
//!
//! Towards clients the guard is a TLS server with its own certificate, and can require a
//! client certificate signed by a CA of the operator's (mTLS). Towards the brokers it is a
//! TLS client that verifies the broker's certificate against a CA file or the system's
//! roots, and can present a certificate of its own. Either side can be plaintext. The
//! certificates are read from PEM files at start, and again on [`Tls::reload`] (SIGHUP in
//! `elect-leaders proxy`): a reload that fails keeps what was loaded before.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rustls::client::ClientConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::server::{ServerConfig, WebPkiClientVerifier};
use rustls::RootCertStore;

/// TLS towards clients ([`Config::tls`](crate::Config::tls)): the configuration file's
/// `[tls]` (`cert`, `key`, `client-ca`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerTls {
    /// The guard's certificate chain, PEM, leaf first.
    pub cert: PathBuf,
    /// Its private key, PEM (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// With it, clients must present a certificate signed by one of these CAs (PEM).
    pub client_ca: Option<PathBuf>,
}

/// TLS towards the brokers ([`Config::upstream_tls`](crate::Config::upstream_tls)): the
/// configuration file's `[upstream-tls]` (`ca`, `server-name`, `cert`, `key`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UpstreamTls {
    /// The CAs the brokers' certificates must chain to (PEM); none: the system's roots.
    pub ca: Option<PathBuf>,
    /// The name every broker's certificate is checked against. None: the name in
    /// `names` for that broker, or else its IP address.
    pub server_name: Option<String>,
    /// Each broker's host name as the operator wrote it (its route's `upstream`), by its
    /// resolved address.
    pub names: Vec<(SocketAddr, String)>,
    /// A certificate chain and key (PEM) the guard presents to the brokers (mTLS).
    pub client_cert: Option<(PathBuf, PathBuf)>,
}

/// Why TLS could not be set up.
#[derive(Debug)]
pub struct TlsError(String);

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TlsError {}

impl TlsError {
    pub(crate) fn new(message: &str) -> TlsError {
        TlsError(message.to_owned())
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn certs(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| TlsError(format!("{what} {}: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(TlsError(format!(
            "{what} {}: no certificate in it (expected PEM)",
            path.display()
        )));
    }
    Ok(certs)
}

fn key(path: &Path, what: &str) -> Result<PrivateKeyDer<'static>, TlsError> {
    // The error names the file, never its contents.
    PrivateKeyDer::from_pem_file(path)
        .map_err(|e| TlsError(format!("{what} {}: {e}", path.display())))
}

fn roots(path: &Path, what: &str) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in certs(path, what)? {
        roots
            .add(cert)
            .map_err(|e| TlsError(format!("{what} {}: {e}", path.display())))?;
    }
    Ok(roots)
}

impl ServerTls {
    /// The rustls configuration these files make.
    pub fn load(&self) -> Result<Arc<ServerConfig>, TlsError> {
        let builder = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError(format!("TLS: {e}")))?;
        let builder = match &self.client_ca {
            Some(ca) => {
                let verifier = WebPkiClientVerifier::builder(Arc::new(roots(ca, "tls.client-ca")?))
                    .build()
                    .map_err(|e| TlsError(format!("tls.client-ca {}: {e}", ca.display())))?;
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        let config = builder
            .with_single_cert(certs(&self.cert, "tls.cert")?, key(&self.key, "tls.key")?)
            .map_err(|e| {
                TlsError(format!(
                    "tls.cert {} with tls.key {}: {e}",
                    self.cert.display(),
                    self.key.display()
                ))
            })?;
        Ok(Arc::new(config))
    }
}

impl UpstreamTls {
    /// The rustls configuration these files make.
    pub fn load(&self) -> Result<Arc<ClientConfig>, TlsError> {
        let roots = match &self.ca {
            Some(ca) => roots(ca, "upstream-tls.ca")?,
            None => {
                let found = rustls_native_certs::load_native_certs();
                let mut roots = RootCertStore::empty();
                let (added, _) = roots.add_parsable_certificates(found.certs);
                if added == 0 {
                    return Err(TlsError(format!(
                        "upstream-tls without upstream-tls.ca: no CA certificate found on \
                         this system ({} error(s))",
                        found.errors.len()
                    )));
                }
                roots
            }
        };
        let builder = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError(format!("TLS: {e}")))?
            .with_root_certificates(roots);
        let config = match &self.client_cert {
            Some((cert, key_path)) => builder
                .with_client_auth_cert(
                    certs(cert, "upstream-tls.cert")?,
                    key(key_path, "upstream-tls.key")?,
                )
                .map_err(|e| TlsError(format!("upstream-tls.cert {}: {e}", cert.display())))?,
            None => builder.with_no_client_auth(),
        };
        Ok(Arc::new(config))
    }

    /// The name the certificate of the broker at `upstream` is checked against: the
    /// `server_name` field (`upstream-tls.server-name`), else the host written for its
    /// route (`names`), else `advertised` (the name a broker with no route advertised),
    /// else its IP address.
    pub fn server_name(
        &self,
        upstream: SocketAddr,
        advertised: Option<&str>,
    ) -> Result<ServerName<'static>, TlsError> {
        let name = self
            .server_name
            .clone()
            .or_else(|| {
                self.names
                    .iter()
                    .find(|(addr, _)| *addr == upstream)
                    .map(|(_, name)| name.clone())
            })
            .or_else(|| advertised.map(str::to_owned));
        match name {
            Some(name) => ServerName::try_from(name.clone())
                .map_err(|e| TlsError(format!("upstream-tls.server-name {name:?}: {e}"))),
            None => Ok(ServerName::from(upstream.ip())),
        }
    }
}

/// TLS as the guard runs it: both sides' settings and what they load, swapped whole on
/// reload.
pub struct Tls {
    current: RwLock<Current>,
}

struct Current {
    server: Option<ServerTls>,
    loaded: Loaded,
}

/// What one load made, and the settings it was made from: what a new connection uses.
#[derive(Clone)]
pub struct Loaded {
    /// TLS towards clients, if on.
    pub acceptor: Option<tokio_rustls::TlsAcceptor>,
    /// TLS towards the brokers, if on.
    pub connector: Option<tokio_rustls::TlsConnector>,
    upstream: Option<Arc<UpstreamTls>>,
}

impl Loaded {
    /// The name the certificate of the broker at `upstream` is checked against (see
    /// [`UpstreamTls::server_name`]).
    pub fn server_name(
        &self,
        upstream: SocketAddr,
        advertised: Option<&str>,
    ) -> Result<ServerName<'static>, TlsError> {
        match &self.upstream {
            Some(tls) => tls.server_name(upstream, advertised),
            None => Ok(ServerName::from(upstream.ip())),
        }
    }

    /// Whether the guard presents a certificate of its own to the brokers
    /// ([`UpstreamTls::client_cert`], `upstream-tls.cert`): the brokers then take each
    /// client as the guard.
    pub fn lends_identity(&self) -> bool {
        self.upstream
            .as_ref()
            .is_some_and(|upstream| upstream.client_cert.is_some())
    }
}

/// A guard that presents its own certificate to the brokers (`upstream-tls.cert`) makes
/// every client act at the broker as the guard: it may lend that identity only to clients
/// it authenticated itself, with a certificate (`tls.client-ca`). See `identity`.
fn check_lent_identity(
    server: Option<&ServerTls>,
    upstream: Option<&UpstreamTls>,
) -> Result<(), TlsError> {
    let lends = upstream.is_some_and(|u| u.client_cert.is_some());
    let authenticates = server.is_some_and(|s| s.client_ca.is_some());
    if lends && !authenticates {
        return Err(TlsError(
            "upstream-tls.cert needs tls.client-ca: the brokers take every connection the guard opens with its \
             own certificate as the guard, so each client would act at the broker as the \
             guard; the guard lends that identity only to clients whose certificate it \
             checked (mTLS), and with rules.allow-principal only to those allowed"
                .into(),
        ));
    }
    Ok(())
}

/// Settings loaded and checked, not yet in force: see [`Tls::prepare`].
pub struct Prepared(Current);

impl Tls {
    /// Loads both sides' files; an error names the setting (`tls.cert`, ...) and the file.
    pub fn new(server: Option<ServerTls>, upstream: Option<UpstreamTls>) -> Result<Tls, TlsError> {
        check_lent_identity(server.as_ref(), upstream.as_ref())?;
        let loaded = load(server.as_ref(), upstream.map(Arc::new))?;
        Ok(Tls {
            current: RwLock::new(Current { server, loaded }),
        })
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Current> {
        self.current.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether either side speaks TLS.
    pub fn enabled(&self) -> bool {
        let current = self.read();
        current.server.is_some() || current.loaded.upstream.is_some()
    }

    /// What new connections use now.
    pub fn current(&self) -> Loaded {
        self.read().loaded.clone()
    }

    /// Reads the files again; new connections use them, connections open keep theirs. On
    /// an error nothing changes.
    pub fn reload(&self) -> Result<(), TlsError> {
        let (server, upstream) = {
            let current = self.read();
            (current.server.clone(), current.loaded.upstream.clone())
        };
        let loaded = load(server.as_ref(), upstream)?;
        self.install(Prepared(Current { server, loaded }));
        Ok(())
    }

    /// Loads new settings for both sides, without putting them in force
    /// ([`Tls::install`]). Each side stays as it is, TLS or plaintext: turning TLS on or
    /// off needs a restart, as the listeners' clients and the brokers would need theirs.
    pub fn prepare(
        &self,
        server: Option<ServerTls>,
        upstream: Option<UpstreamTls>,
    ) -> Result<Prepared, TlsError> {
        {
            let current = self.read();
            if current.server.is_some() != server.is_some() {
                return Err(TlsError(
                    "TLS towards clients (tls) cannot be turned on or off without a \
                     restart"
                        .into(),
                ));
            }
            if current.loaded.upstream.is_some() != upstream.is_some() {
                return Err(TlsError(
                    "TLS towards the brokers (upstream-tls) cannot be turned on or off \
                     without a restart"
                        .into(),
                ));
            }
        }
        check_lent_identity(server.as_ref(), upstream.as_ref())?;
        let loaded = load(server.as_ref(), upstream.map(Arc::new))?;
        Ok(Prepared(Current { server, loaded }))
    }

    /// Puts prepared settings in force: new connections use them, connections open keep
    /// theirs.
    pub fn install(&self, prepared: Prepared) {
        match self.current.write() {
            Ok(mut current) => *current = prepared.0,
            Err(poisoned) => *poisoned.into_inner() = prepared.0,
        }
    }
}

fn load(
    server: Option<&ServerTls>,
    upstream: Option<Arc<UpstreamTls>>,
) -> Result<Loaded, TlsError> {
    Ok(Loaded {
        acceptor: server
            .map(ServerTls::load)
            .transpose()?
            .map(tokio_rustls::TlsAcceptor::from),
        connector: upstream
            .as_deref()
            .map(UpstreamTls::load)
            .transpose()?
            .map(tokio_rustls::TlsConnector::from),
        upstream,
    })
}

/// An I/O error of a handshake, for the log: rustls says what failed.
pub fn handshake_error(e: &io::Error) -> String {
    let Some(inner) = e.get_ref() else {
        return e.to_string();
    };
    // The most common mistake said plainly: a client configured for PLAINTEXT (or
    // SASL_PLAINTEXT) on a TLS listener sends a Kafka request where a TLS record belongs.
    if let Some(rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType)) =
        inner.downcast_ref::<rustls::Error>()
    {
        return format!(
            "{inner} (the peer does not speak TLS: a plaintext client on a TLS listener?)"
        );
    }
    inner.to_string()
}
