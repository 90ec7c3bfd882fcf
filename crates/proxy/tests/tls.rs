//! TLS on both sides of the guard (issue 24): rustls on every end, certificates made at run
//! time with rcgen (a CA, a server certificate for localhost and 127.0.0.1, a client
//! certificate), written to PEM files as an operator's would be.
//!
//! The broker is a **fake broker** (it answers every request with its correlation id, over
//! TLS or not): the real cluster's TLS listener is the e2e tests' business. Every wait is
//! bounded.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use kafka_elect_leaders_proxy::{Config, Guard, Reloader, Route, ServerTls, UpstreamTls};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::timeout;

/// A CA and what it signed, as PEM files in a directory of the test's own.
struct Pki {
    dir: PathBuf,
}

impl Pki {
    /// A CA named `name`, a server certificate for localhost and 127.0.0.1, and a client
    /// certificate with common name "alice", all under a fresh directory.
    fn new(test: &str, name: &str) -> Pki {
        let dir = std::env::temp_dir().join(format!("guard-tls-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pki = Pki { dir };
        pki.issue(name);
        pki
    }

    /// (Re)writes every file, under a new CA named `name`.
    fn issue(&self, name: &str) {
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(DnType::CommonName, name);
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
        self.write("ca.pem", &ca.pem());

        let server_key = KeyPair::generate().unwrap();
        let server = CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()])
            .unwrap()
            .signed_by(&server_key, &ca)
            .unwrap();
        self.write("server.pem", &server.pem());
        self.write("server.key", &server_key.serialize_pem());

        let client_key = KeyPair::generate().unwrap();
        let mut client_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        client_params
            .distinguished_name
            .push(DnType::CommonName, "alice");
        let client = client_params.signed_by(&client_key, &ca).unwrap();
        self.write("client.pem", &client.pem());
        self.write("client.key", &client_key.serialize_pem());

        // The same two, expired at the end of 2020.
        let expired = |mut params: CertificateParams, key: &KeyPair| {
            params.not_before = rcgen::date_time_ymd(2020, 1, 1);
            params.not_after = rcgen::date_time_ymd(2020, 12, 31);
            params.signed_by(key, &ca).unwrap()
        };
        let server = expired(
            CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()]).unwrap(),
            &server_key,
        );
        self.write("expired-server.pem", &server.pem());
        let mut client_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        client_params
            .distinguished_name
            .push(DnType::CommonName, "alice");
        self.write(
            "expired-client.pem",
            &expired(client_params, &client_key).pem(),
        );
    }

    fn write(&self, file: &str, pem: &str) {
        std::fs::write(self.dir.join(file), pem).unwrap();
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    fn server_tls(&self, client_ca: bool) -> ServerTls {
        ServerTls {
            cert: self.path("server.pem"),
            key: self.path("server.key"),
            client_ca: client_ca.then(|| self.path("ca.pem")),
        }
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn certs(path: &Path) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_file_iter(path)
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// A TLS client configuration trusting `ca`, presenting `identity` (cert, key) if given.
fn client_config(ca: &Path, identity: Option<(&Path, &Path)>) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in certs(ca) {
        roots.add(cert).unwrap();
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots);
    Arc::new(match identity {
        Some((cert, key)) => builder
            .with_client_auth_cert(certs(cert), PrivateKeyDer::from_pem_file(key).unwrap())
            .unwrap(),
        None => builder.with_no_client_auth(),
    })
}

/// Serves one connection as a broker that answers every request with its correlation id.
async fn answer_all<S: AsyncRead + AsyncWrite + Unpin>(mut s: S) {
    loop {
        let mut size = [0u8; 4];
        if s.read_exact(&mut size).await.is_err() {
            return;
        }
        let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
        if s.read_exact(&mut body).await.is_err() {
            return;
        }
        let mut answer = 4i32.to_be_bytes().to_vec();
        answer.extend_from_slice(&body[4..8]);
        if s.write_all(&answer).await.is_err() {
            return;
        }
    }
}

/// The fake broker's TLS configuration: the PKI's server certificate (or `cert`, with the
/// same key), requiring a client certificate signed by the PKI's CA when `mtls`.
fn broker_tls(pki: &Pki, cert: &str, mtls: bool) -> Arc<rustls::ServerConfig> {
    let key = PrivateKeyDer::from_pem_file(pki.path("server.key")).unwrap();
    let builder = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap();
    let builder = if mtls {
        let mut roots = rustls::RootCertStore::empty();
        for cert in certs(&pki.path("ca.pem")) {
            roots.add(cert).unwrap();
        }
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            Arc::new(rustls::crypto::ring::default_provider()),
        )
        .build()
        .unwrap();
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    Arc::new(
        builder
            .with_single_cert(certs(&pki.path(cert)), key)
            .unwrap(),
    )
}

/// The fake broker, plaintext or (with a server configuration) TLS.
async fn broker(tls: Option<Arc<rustls::ServerConfig>>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let tls = tls.clone();
            tokio::spawn(async move {
                match tls {
                    Some(config) => {
                        if let Ok(s) = tokio_rustls::TlsAcceptor::from(config).accept(socket).await
                        {
                            answer_all(s).await;
                        }
                    }
                    None => answer_all(socket).await,
                }
            });
        }
    });
    addr
}

async fn guard(upstream: SocketAddr, edit: impl FnOnce(&mut Config)) -> (SocketAddr, Reloader) {
    let mut config = Config::default();
    config.routes.push(Route {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream,
    });
    edit(&mut config);
    let guard = Guard::bind(config).await.unwrap();
    let listen = guard.routes()[0].listen;
    let reloader = guard.reloader();
    tokio::spawn(guard.run(std::future::pending()));
    (listen, reloader)
}

/// A Metadata v1 request for no topics.
fn metadata(correlation_id: i32) -> Vec<u8> {
    let mut f = 0i32.to_be_bytes().to_vec();
    f.extend(3i16.to_be_bytes());
    f.extend(1i16.to_be_bytes());
    f.extend(correlation_id.to_be_bytes());
    f.extend((-1i16).to_be_bytes());
    f.extend(0i32.to_be_bytes());
    let size = (f.len() - 4) as i32;
    f[..4].copy_from_slice(&size.to_be_bytes());
    f
}

/// Sends a Metadata request on `s` and returns the correlation id answered, or an error.
async fn round_trip<S: AsyncRead + AsyncWrite + Unpin>(s: &mut S, id: i32) -> std::io::Result<i32> {
    s.write_all(&metadata(id)).await?;
    s.flush().await?;
    let mut answer = [0u8; 8];
    timeout(Duration::from_secs(5), s.read_exact(&mut answer))
        .await
        .map_err(|_| std::io::Error::other("no answer within 5 s"))??;
    Ok(i32::from_be_bytes([
        answer[4], answer[5], answer[6], answer[7],
    ]))
}

/// Connects to the guard over TLS and does one round trip.
async fn tls_round_trip(
    listen: SocketAddr,
    config: Arc<rustls::ClientConfig>,
    id: i32,
) -> std::io::Result<i32> {
    let tcp = TcpStream::connect(listen).await?;
    let name = ServerName::try_from("localhost").unwrap();
    let mut s = tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await?;
    round_trip(&mut s, id).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_towards_clients() {
    let pki = Pki::new("clients", "ca-one");
    let upstream = broker(None).await;
    let (listen, _) = guard(upstream, |c| c.tls = Some(pki.server_tls(false))).await;
    let trusting = client_config(&pki.path("ca.pem"), None);
    assert_eq!(tls_round_trip(listen, trusting, 7).await.unwrap(), 7);

    // A plaintext Kafka request is not a TLS handshake: that client is closed, alone.
    let mut plain = TcpStream::connect(listen).await.unwrap();
    assert!(round_trip(&mut plain, 8).await.is_err());
    let trusting = client_config(&pki.path("ca.pem"), None);
    assert_eq!(tls_round_trip(listen, trusting, 9).await.unwrap(), 9);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mtls_refuses_a_client_without_a_certificate_and_serves_the_next() {
    let pki = Pki::new("mtls", "ca-one");
    let upstream = broker(None).await;
    let (listen, _) = guard(upstream, |c| c.tls = Some(pki.server_tls(true))).await;
    let anonymous = client_config(&pki.path("ca.pem"), None);
    assert!(tls_round_trip(listen, anonymous, 1).await.is_err());

    // A certificate from another CA is refused too.
    let other = Pki::new("mtls-other", "ca-other");
    let stranger = client_config(
        &pki.path("ca.pem"),
        Some((&other.path("client.pem"), &other.path("client.key"))),
    );
    assert!(tls_round_trip(listen, stranger, 2).await.is_err());

    let alice = client_config(
        &pki.path("ca.pem"),
        Some((&pki.path("client.pem"), &pki.path("client.key"))),
    );
    assert_eq!(tls_round_trip(listen, alice, 3).await.unwrap(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_towards_the_broker_checks_its_name() {
    let pki = Pki::new("upstream", "ca-one");
    let server = pki.server_tls(false);
    let broker_config = {
        let key = PrivateKeyDer::from_pem_file(&server.key).unwrap();
        rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs(&server.cert), key)
        .unwrap()
    };
    let upstream = broker(Some(Arc::new(broker_config))).await;
    let upstream_tls = |name: Option<&str>| UpstreamTls {
        ca: Some(pki.path("ca.pem")),
        server_name: name.map(str::to_owned),
        ..UpstreamTls::default()
    };

    // By IP address (no name given), by the name in the certificate, plaintext clients.
    for name in [None, Some("localhost")] {
        let (listen, _) = guard(upstream, |c| c.upstream_tls = Some(upstream_tls(name))).await;
        let mut client = TcpStream::connect(listen).await.unwrap();
        assert_eq!(round_trip(&mut client, 5).await.unwrap(), 5, "{name:?}");
    }

    // A name the certificate does not have: the client is closed, not served in clear.
    let (listen, _) = guard(upstream, |c| {
        c.upstream_tls = Some(upstream_tls(Some("broker.example")))
    })
    .await;
    let mut client = TcpStream::connect(listen).await.unwrap();
    assert!(round_trip(&mut client, 6).await.is_err());

    // Both sides TLS, the client with a certificate (mTLS).
    let (listen, _) = guard(upstream, |c| {
        c.tls = Some(pki.server_tls(true));
        c.upstream_tls = Some(upstream_tls(Some("localhost")));
    })
    .await;
    let alice = client_config(
        &pki.path("ca.pem"),
        Some((&pki.path("client.pem"), &pki.path("client.key"))),
    );
    assert_eq!(tls_round_trip(listen, alice, 8).await.unwrap(), 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_serves_the_new_certificate_and_a_failed_one_keeps_the_old() {
    let pki = Pki::new("reload", "ca-one");
    let upstream = broker(None).await;
    let (listen, reloader) = guard(upstream, |c| c.tls = Some(pki.server_tls(false))).await;
    let old_ca = certs(&pki.path("ca.pem"));
    let old_trust = client_config(&pki.path("ca.pem"), None);
    assert_eq!(
        tls_round_trip(listen, old_trust.clone(), 1).await.unwrap(),
        1
    );

    // A key file that is not a key: the reload fails and the old certificate stays.
    std::fs::write(pki.path("server.key"), "not a key").unwrap();
    assert!(reloader.reload().is_err());
    assert_eq!(
        tls_round_trip(listen, old_trust.clone(), 2).await.unwrap(),
        2
    );

    pki.issue("ca-two");
    assert_ne!(certs(&pki.path("ca.pem")), old_ca);
    assert!(reloader.reload().unwrap());
    let new_trust = client_config(&pki.path("ca.pem"), None);
    assert_eq!(tls_round_trip(listen, new_trust, 3).await.unwrap(), 3);
    assert!(tls_round_trip(listen, old_trust, 4).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_completes_its_handshake_is_closed_at_the_frame_timeout() {
    let pki = Pki::new("handshake", "ca-one");
    let upstream = broker(None).await;
    let (listen, _) = guard(upstream, |c| {
        c.tls = Some(pki.server_tls(false));
        c.frame_timeout = Duration::from_millis(300);
    })
    .await;
    let mut silent = TcpStream::connect(listen).await.unwrap();
    let mut buf = [0u8; 16];
    let closed = timeout(Duration::from_secs(5), silent.read(&mut buf)).await;
    assert!(
        matches!(closed, Ok(Ok(0)) | Ok(Err(_))),
        "a client without a handshake was kept: {closed:?}"
    );
}

/// With mTLS, the principal is the client certificate's subject (RFC 2253, as Kafka writes
/// it): `--allow-principal CN=alice` lets alice elect and refuses everyone else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_certificate_is_the_principal() {
    use kafka_elect_leaders::{
        ElectLeadersRequestData, ElectionType, EncodeRequestExt, TopicPartitionsData,
    };
    let pki = Pki::new("principal", "ca-one");
    let upstream = broker(None).await;
    let topics = [TopicPartitionsData::new(b"orders", &[0])];
    let request = ElectLeadersRequestData {
        correlation_id: 21,
        election_type: ElectionType::PREFERRED,
        topic_partitions: Some(&topics),
        ..Default::default()
    }
    .encode_to_vec(2)
    .unwrap();
    for (allowed, forwarded) in [("CN=alice", true), ("CN=bob", false)] {
        let (listen, _) = guard(upstream, |c| {
            c.tls = Some(pki.server_tls(true));
            c.policy.allowed_principals.insert(allowed.into());
        })
        .await;
        let alice = client_config(
            &pki.path("ca.pem"),
            Some((&pki.path("client.pem"), &pki.path("client.key"))),
        );
        let tcp = TcpStream::connect(listen).await.unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        let mut s = tokio_rustls::TlsConnector::from(alice)
            .connect(name, tcp)
            .await
            .unwrap();
        s.write_all(&request).await.unwrap();
        let mut size = [0u8; 4];
        timeout(Duration::from_secs(5), s.read_exact(&mut size))
            .await
            .unwrap()
            .unwrap();
        let mut answer = vec![0u8; i32::from_be_bytes(size) as usize];
        s.read_exact(&mut answer).await.unwrap();
        // The fake broker answers with the correlation id alone; the guard's refusal is a
        // whole ElectLeaders response with POLICY_VIOLATION.
        assert_eq!(
            answer.len() == 4,
            forwarded,
            "allowed {allowed}: {answer:?}"
        );
        if !forwarded {
            let mut frame = size.to_vec();
            frame.extend(&answer);
            let response = kafka_elect_leaders::parse_response(&frame, 2).unwrap();
            assert_eq!(response.error_code().0, 44);
        }
    }
}

/// Expired certificates are refused wherever the guard checks one: a client's under mTLS,
/// and a broker's. Each refusal closes that connection alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_certificates_are_refused() {
    let pki = Pki::new("expired", "ca-one");
    let upstream = broker(None).await;
    let (listen, _) = guard(upstream, |c| c.tls = Some(pki.server_tls(true))).await;
    let expired = client_config(
        &pki.path("ca.pem"),
        Some((&pki.path("expired-client.pem"), &pki.path("client.key"))),
    );
    assert!(tls_round_trip(listen, expired, 1).await.is_err());
    let alice = client_config(
        &pki.path("ca.pem"),
        Some((&pki.path("client.pem"), &pki.path("client.key"))),
    );
    assert_eq!(tls_round_trip(listen, alice, 2).await.unwrap(), 2);

    // A broker presenting an expired certificate: the client is closed, never served in
    // clear.
    let stale = broker(Some(broker_tls(&pki, "expired-server.pem", false))).await;
    let fresh = broker(Some(broker_tls(&pki, "server.pem", false))).await;
    let upstream_tls = UpstreamTls {
        ca: Some(pki.path("ca.pem")),
        ..UpstreamTls::default()
    };
    for (upstream, served) in [(stale, false), (fresh, true)] {
        let (listen, _) = guard(upstream, |c| c.upstream_tls = Some(upstream_tls.clone())).await;
        let mut client = TcpStream::connect(listen).await.unwrap();
        assert_eq!(
            round_trip(&mut client, 3).await.is_ok(),
            served,
            "{upstream}"
        );
    }
}

/// A broker that requires a client certificate: without one of the guard's own
/// (`--upstream-tls-cert`) the handshake fails and the client is closed; with one, served.
/// (The guard lends its certificate only to clients it authenticated: mTLS on its side too,
/// see tests/identity.rs.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mtls_towards_the_broker() {
    let pki = Pki::new("upstream-mtls", "ca-one");
    let upstream = broker(Some(broker_tls(&pki, "server.pem", true))).await;
    let other = Pki::new("upstream-mtls-other", "ca-other");
    for (client_cert, served) in [
        (None, false),
        (
            Some((other.path("client.pem"), other.path("client.key"))),
            false,
        ),
        (Some((pki.path("client.pem"), pki.path("client.key"))), true),
    ] {
        let (listen, _) = guard(upstream, |c| {
            c.tls = Some(pki.server_tls(true));
            c.upstream_tls = Some(UpstreamTls {
                ca: Some(pki.path("ca.pem")),
                client_cert: client_cert.clone(),
                ..UpstreamTls::default()
            })
        })
        .await;
        let alice = client_config(
            &pki.path("ca.pem"),
            Some((&pki.path("client.pem"), &pki.path("client.key"))),
        );
        assert_eq!(
            tls_round_trip(listen, alice, 4).await.is_ok(),
            served,
            "{client_cert:?}"
        );
    }
}

/// `Reloader::apply` (SIGHUP with --config) puts new certificate files and a new policy in
/// force together, or nothing of them: a key that cannot be loaded keeps both the old
/// certificate and the old policy, and TLS cannot be turned off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_swaps_certificates_and_policy_together_or_nothing() {
    use kafka_elect_leaders::{
        ElectLeadersRequestData, ElectionType, EncodeRequestExt, TopicPartitionsData,
    };
    let one = Pki::new("apply-one", "ca-one");
    let two = Pki::new("apply-two", "ca-two");
    let upstream = broker(None).await;
    let mut config = Config::default();
    config.routes.push(Route {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream,
    });
    config.tls = Some(one.server_tls(false));
    let started = config.clone();
    let guard = Guard::bind(config).await.unwrap();
    let listen = guard.routes()[0].listen;
    let reloader = guard.reloader();
    tokio::spawn(guard.run(std::future::pending()));

    // An unclean election over TLS trusting `ca`: whether the guard refused it itself.
    let topics = [TopicPartitionsData::new(b"orders", &[0])];
    let refused = |ca: PathBuf| async move {
        let request = ElectLeadersRequestData {
            correlation_id: 5,
            election_type: ElectionType::UNCLEAN,
            topic_partitions: Some(&topics),
            ..Default::default()
        }
        .encode_to_vec(2)
        .unwrap();
        let tcp = TcpStream::connect(listen).await.unwrap();
        let mut s = tokio_rustls::TlsConnector::from(client_config(&ca, None))
            .connect(ServerName::try_from("localhost").unwrap(), tcp)
            .await?;
        s.write_all(&request).await?;
        let mut size = [0u8; 4];
        timeout(Duration::from_secs(5), s.read_exact(&mut size))
            .await
            .map_err(|_| std::io::Error::other("no answer"))??;
        // The fake broker's answer is the correlation id alone.
        Ok::<bool, std::io::Error>(i32::from_be_bytes(size) > 4)
    };
    assert!(!refused(one.path("ca.pem")).await.unwrap());

    // The new policy with a key that does not load: nothing changes.
    let mut next = started.clone();
    next.policy.deny_unclean = true;
    next.tls = Some(ServerTls {
        key: two.path("missing.key"),
        ..two.server_tls(false)
    });
    let e = reloader.apply(&next).unwrap_err();
    assert!(e.to_string().contains("missing.key"), "{e}");
    assert!(!refused(one.path("ca.pem")).await.unwrap());

    // Turning TLS off needs a restart: refused, nothing changes.
    let mut plain = next.clone();
    plain.tls = None;
    assert!(reloader.apply(&plain).is_err());
    assert!(!refused(one.path("ca.pem")).await.unwrap());

    // Both in force at once; a changed timeout is named as waiting for a restart.
    next.tls = Some(two.server_tls(false));
    next.idle_timeout = Duration::from_secs(1);
    assert_eq!(reloader.apply(&next).unwrap().restart, ["idle-timeout"]);
    assert!(refused(two.path("ca.pem")).await.unwrap());
    assert!(refused(one.path("ca.pem")).await.is_err());
}
