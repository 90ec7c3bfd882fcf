//! Identity that cannot be borrowed (issue 35, finding 3): the principal the guard decides
//! by is the one the broker will use, through a guard in front of a fake broker.
//!
//! - A client's certificate no longer counts once it starts SASL (SaslHandshake).
//! - OAUTHBEARER: the principal is the `sub` claim of the client's token, once the broker
//!   accepts it.
//! - A mechanism the guard cannot read (GSSAPI, ...) is answered by the guard,
//!   UNSUPPORTED_SASL_MECHANISM (33), and never reaches the broker.
//! - The guard's own certificate towards the brokers (`--upstream-tls-cert`) is lent only to
//!   clients it authenticated (`--tls-client-ca`, or it does not start) and allowed
//!   (`--allow-principal`): any other client is closed before the broker sees anything of
//!   it, also after a reload that no longer allows it.
//!
//! The fake broker records every request it gets and answers SaslHandshake and
//! SaslAuthenticate with success, anything else with the correlation id alone (so that an
//! answer longer than that is the guard's own). Certificates are made at run time with
//! rcgen. Every wait is bounded.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafka_elect_leaders::{
    ElectLeadersRequestData, ElectionType, EncodeRequestExt, TopicPartitionsData,
};
use kafka_elect_leaders_proxy::{Config, Guard, Reloader, Route, ServerTls, UpstreamTls};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::timeout;

const WAIT: Duration = Duration::from_secs(5);

/// A CA, a server certificate for localhost and 127.0.0.1, and client certificates for
/// alice and bob (`CN=alice,OU=ops,O=example` and the same for bob), as PEM files.
struct Pki {
    dir: PathBuf,
}

impl Pki {
    fn new(test: &str) -> Pki {
        let dir =
            std::env::temp_dir().join(format!("guard-identity-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(DnType::CommonName, "ca");
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
        std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
        let key = KeyPair::generate().unwrap();
        let server = CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()])
            .unwrap()
            .signed_by(&key, &ca)
            .unwrap();
        std::fs::write(dir.join("server.pem"), server.pem()).unwrap();
        std::fs::write(dir.join("server.key"), key.serialize_pem()).unwrap();
        for who in ["alice", "bob", "guard"] {
            let key = KeyPair::generate().unwrap();
            let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
            params.distinguished_name = rcgen::DistinguishedName::new();
            params
                .distinguished_name
                .push(DnType::OrganizationName, "example");
            params
                .distinguished_name
                .push(DnType::OrganizationalUnitName, "ops");
            params.distinguished_name.push(DnType::CommonName, who);
            let cert = params.signed_by(&key, &ca).unwrap();
            std::fs::write(dir.join(format!("{who}.pem")), cert.pem()).unwrap();
            std::fs::write(dir.join(format!("{who}.key")), key.serialize_pem()).unwrap();
        }
        Pki { dir }
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

    /// TLS towards the fake broker, presenting the guard's own certificate.
    fn upstream_tls(&self) -> UpstreamTls {
        UpstreamTls {
            ca: Some(self.path("ca.pem")),
            server_name: Some("localhost".into()),
            client_cert: Some((self.path("guard.pem"), self.path("guard.key"))),
            ..UpstreamTls::default()
        }
    }

    /// A TLS client configuration trusting the CA, presenting `who`'s certificate.
    fn client(&self, who: &str) -> Arc<rustls::ClientConfig> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in certs(&self.path("ca.pem")) {
            roots.add(cert).unwrap();
        }
        let key = PrivateKeyDer::from_pem_file(self.path(&format!("{who}.key"))).unwrap();
        Arc::new(
            rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_client_auth_cert(certs(&self.path(&format!("{who}.pem"))), key)
            .unwrap(),
        )
    }

    /// The fake broker's TLS: the server certificate, a client certificate required.
    fn broker_tls(&self) -> Arc<rustls::ServerConfig> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        for cert in certs(&self.path("ca.pem")) {
            roots.add(cert).unwrap();
        }
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            provider.clone(),
        )
        .build()
        .unwrap();
        let key = PrivateKeyDer::from_pem_file(self.path("server.key")).unwrap();
        Arc::new(
            rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_client_cert_verifier(verifier)
                .with_single_cert(certs(&self.path("server.pem")), key)
                .unwrap(),
        )
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn certs(path: &std::path::Path) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_file_iter(path)
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// What the fake broker saw: its connections, and (API key, correlation id) of every
/// request, in order.
#[derive(Default)]
struct Seen {
    connections: usize,
    requests: Vec<(i16, i32)>,
}

/// The fake broker, plaintext or TLS; what it saw.
async fn broker(tls: Option<Arc<rustls::ServerConfig>>) -> (SocketAddr, Arc<Mutex<Seen>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let shared = seen.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let (tls, seen) = (tls.clone(), shared.clone());
            tokio::spawn(async move {
                match tls {
                    Some(config) => {
                        if let Ok(s) = tokio_rustls::TlsAcceptor::from(config).accept(socket).await
                        {
                            seen.lock().unwrap().connections += 1;
                            answer_all(s, &seen).await;
                        }
                    }
                    None => {
                        seen.lock().unwrap().connections += 1;
                        answer_all(socket, &seen).await;
                    }
                }
            });
        }
    });
    (addr, seen)
}

/// Answers every request: SaslHandshake v1 and SaslAuthenticate v2 with success, anything
/// else with its correlation id alone.
async fn answer_all<S: AsyncRead + AsyncWrite + Unpin>(mut s: S, seen: &Mutex<Seen>) {
    loop {
        let mut size = [0u8; 4];
        if s.read_exact(&mut size).await.is_err() {
            return;
        }
        let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
        if s.read_exact(&mut body).await.is_err() {
            return;
        }
        let api_key = i16::from_be_bytes([body[0], body[1]]);
        let id = &body[4..8];
        seen.lock()
            .unwrap()
            .requests
            .push((api_key, i32::from_be_bytes(id.try_into().unwrap())));
        let mut answer = id.to_vec();
        match api_key {
            17 => {
                answer.extend(0i16.to_be_bytes());
                answer.extend(1i32.to_be_bytes());
                answer.extend(5i16.to_be_bytes());
                answer.extend(b"PLAIN");
            }
            36 => {
                // v2: header tagged fields, error 0, null message, empty auth bytes,
                // session lifetime, tagged fields.
                answer.extend([0, 0, 0, 0, 1]);
                answer.extend(0i64.to_be_bytes());
                answer.push(0);
            }
            _ => {}
        }
        let mut frame = (answer.len() as i32).to_be_bytes().to_vec();
        frame.extend(answer);
        if s.write_all(&frame).await.is_err() {
            return;
        }
    }
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

fn frame(api_key: i16, version: i16, id: i32, flexible: bool, body: &[u8]) -> Vec<u8> {
    let mut f = vec![0; 4];
    f.extend(api_key.to_be_bytes());
    f.extend(version.to_be_bytes());
    f.extend(id.to_be_bytes());
    f.extend(1i16.to_be_bytes());
    f.push(b'c');
    if flexible {
        f.push(0);
    }
    f.extend(body);
    let size = (f.len() - 4) as u32;
    f[..4].copy_from_slice(&size.to_be_bytes());
    f
}

fn metadata(id: i32) -> Vec<u8> {
    frame(3, 1, id, false, &0i32.to_be_bytes())
}

fn handshake(mechanism: &str, id: i32) -> Vec<u8> {
    let mut body = (mechanism.len() as i16).to_be_bytes().to_vec();
    body.extend(mechanism.as_bytes());
    frame(17, 1, id, false, &body)
}

/// SaslAuthenticate v2 (flexible: compact bytes, tagged fields).
fn authenticate(id: i32, bytes: &[u8]) -> Vec<u8> {
    let mut body = vec![u8::try_from(bytes.len() + 1).unwrap()];
    body.extend(bytes);
    body.push(0);
    frame(36, 2, id, true, &body)
}

/// A PREFERRED election of orders-0, v2.
fn elect(id: i32) -> Vec<u8> {
    let topics = [TopicPartitionsData::new(b"orders", &[0])];
    ElectLeadersRequestData {
        correlation_id: id,
        election_type: ElectionType::PREFERRED,
        topic_partitions: Some(&topics),
        ..Default::default()
    }
    .encode_to_vec(2)
    .unwrap()
}

/// Base64url without padding.
fn b64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | (u32::from(b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
        }
    }
    out
}

/// OAUTHBEARER's initial response with an unsecured JWS for `sub`.
fn bearer(sub: &str) -> Vec<u8> {
    let claims = format!(r#"{{"sub":"{sub}","exp":99999999999}}"#);
    let token = format!("{}.{}.", b64(br#"{"alg":"none"}"#), b64(claims.as_bytes()));
    format!("n,,\x01auth=Bearer {token}\x01\x01").into_bytes()
}

/// The next frame (without its size prefix); None if the connection closed, or nothing came.
async fn read_frame<S: AsyncRead + Unpin>(s: &mut S) -> Option<Vec<u8>> {
    let mut size = [0u8; 4];
    timeout(WAIT, s.read_exact(&mut size)).await.ok()?.ok()?;
    let mut body = vec![0u8; u32::from_be_bytes(size) as usize];
    timeout(WAIT, s.read_exact(&mut body)).await.ok()?.ok()?;
    Some(body)
}

/// Sends `request` and reads its answer: whether the broker's (the correlation id alone)
/// rather than the guard's refusal.
async fn elect_forwarded<S: AsyncRead + AsyncWrite + Unpin>(s: &mut S, id: i32) -> bool {
    s.write_all(&elect(id)).await.unwrap();
    let answer = read_frame(s).await.expect("an answer to the election");
    assert_eq!(answer[..4], id.to_be_bytes());
    answer.len() == 4
}

async fn tls_client(
    listen: SocketAddr,
    config: Arc<rustls::ClientConfig>,
) -> tokio_rustls::client::TlsStream<TcpStream> {
    let tcp = TcpStream::connect(listen).await.unwrap();
    tokio_rustls::TlsConnector::from(config)
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap()
}

/// With mTLS at the guard, the certificate's subject is the principal only until the
/// client starts SASL: after its SaslHandshake the broker's principal will be the SASL one,
/// unknown until the broker accepts the exchange, and `--allow-principal` refuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sasl_handshake_drops_the_certificate_principal() {
    let pki = Pki::new("handshake");
    let (upstream, seen) = broker(None).await;
    let (listen, _) = guard(upstream, |c| {
        c.tls = Some(pki.server_tls(true));
        c.policy
            .allowed_principals
            .insert("CN=alice,OU=ops,O=example".into());
    })
    .await;
    let mut alice = tls_client(listen, pki.client("alice")).await;
    assert!(
        elect_forwarded(&mut alice, 1).await,
        "alice by her certificate"
    );
    alice.write_all(&handshake("PLAIN", 2)).await.unwrap();
    let answer = read_frame(&mut alice).await.unwrap();
    assert_eq!(answer[4..6], [0, 0], "the broker's answer to the handshake");
    assert!(
        !elect_forwarded(&mut alice, 3).await,
        "after a SaslHandshake the certificate no longer counts"
    );
    let keys: Vec<i16> = seen.lock().unwrap().requests.iter().map(|r| r.0).collect();
    assert_eq!(keys, [43, 17]);
}

/// OAUTHBEARER: the principal is the `sub` claim of the client's token, once the broker
/// accepts it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_oauthbearer_principal_is_read() {
    let (upstream, _) = broker(None).await;
    let (listen, _) = guard(upstream, |c| {
        c.policy.allowed_principals.insert("alice".into());
    })
    .await;
    for (sub, forwarded) in [("alice", true), ("bob", false)] {
        let mut client = TcpStream::connect(listen).await.unwrap();
        client
            .write_all(&handshake("OAUTHBEARER", 1))
            .await
            .unwrap();
        read_frame(&mut client).await.unwrap();
        client
            .write_all(&authenticate(2, &bearer(sub)))
            .await
            .unwrap();
        let answer = read_frame(&mut client).await.unwrap();
        assert_eq!(answer[..4], 2i32.to_be_bytes());
        assert_eq!(elect_forwarded(&mut client, 3).await, forwarded, "{sub}");
    }
}

/// GSSAPI (and any mechanism the guard cannot read a principal from) is refused by the
/// guard: Kafka's own SaslHandshake answer, UNSUPPORTED_SASL_MECHANISM (33) with the
/// mechanisms the guard reads, in its turn among the broker's answers; the handshake never
/// reaches the broker, and the connection goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gssapi_is_refused_by_the_guard_and_never_forwarded() {
    let (upstream, seen) = broker(None).await;
    let (listen, _) = guard(upstream, |_| {}).await;
    let mut client = TcpStream::connect(listen).await.unwrap();
    let mut pipelined = metadata(1);
    pipelined.extend(handshake("GSSAPI", 2));
    pipelined.extend(metadata(3));
    client.write_all(&pipelined).await.unwrap();
    assert_eq!(read_frame(&mut client).await.unwrap(), 1i32.to_be_bytes());
    let refusal = read_frame(&mut client).await.unwrap();
    let mut want = 2i32.to_be_bytes().to_vec();
    want.extend(33i16.to_be_bytes());
    want.extend(4i32.to_be_bytes());
    for m in ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"] {
        want.extend((m.len() as i16).to_be_bytes());
        want.extend(m.as_bytes());
    }
    assert_eq!(refusal, want);
    assert_eq!(read_frame(&mut client).await.unwrap(), 3i32.to_be_bytes());
    assert_eq!(seen.lock().unwrap().requests, [(3, 1), (3, 3)]);
}

/// The guard does not start with a certificate of its own towards the brokers
/// (`--upstream-tls-cert`) unless it authenticates its clients (`--tls-client-ca`): every
/// client would act at the broker as the guard. A reload cannot drop the client CA either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_certificate_needs_client_certificates() {
    let pki = Pki::new("start");
    let (upstream, _) = broker(Some(pki.broker_tls())).await;
    let config = |server: Option<ServerTls>| {
        let mut config = Config::default();
        config.routes.push(Route {
            listen: "127.0.0.1:0".parse().unwrap(),
            upstream,
        });
        config.tls = server;
        config.upstream_tls = Some(pki.upstream_tls());
        config
    };
    for server in [None, Some(pki.server_tls(false))] {
        let Err(e) = Guard::bind(config(server.clone())).await else {
            panic!("started with --upstream-tls-cert and no --tls-client-ca ({server:?})");
        };
        let e = e.to_string();
        assert!(
            e.contains("upstream-tls.cert") && e.contains("tls.client-ca"),
            "{e}"
        );
        assert!(!e.contains("  "), "{e}");
    }
    let good = config(Some(pki.server_tls(true)));
    let guard = Guard::bind(good.clone()).await.unwrap();
    let e = guard
        .reloader()
        .apply(&config(Some(pki.server_tls(false))))
        .unwrap_err();
    assert!(e.to_string().contains("tls.client-ca"), "{e}");
}

/// Issue 35, finding 3: with the guard's certificate towards the brokers, a client that
/// `--allow-principal` does not name never gets the guard's identity, for any API: closed
/// after its TLS handshake, before the guard even connects to the broker. An allowed one is
/// served, until a reload no longer allows it: its next request closes the connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_not_allowed_never_acts_as_the_guard() {
    let pki = Pki::new("lent");
    let (upstream, seen) = broker(Some(pki.broker_tls())).await;
    let mut config = Config::default();
    config.routes.push(Route {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream,
    });
    config.tls = Some(pki.server_tls(true));
    config.upstream_tls = Some(pki.upstream_tls());
    config
        .policy
        .allowed_principals
        .insert("CN=alice,OU=ops,O=example".into());
    let started = config.clone();
    let guard = Guard::bind(config).await.unwrap();
    let listen = guard.routes()[0].listen;
    let reloader = guard.reloader();
    tokio::spawn(guard.run(std::future::pending()));

    let mut bob = tls_client(listen, pki.client("bob")).await;
    let _ = bob.write_all(&metadata(1)).await;
    assert_eq!(read_frame(&mut bob).await, None, "bob was answered");
    let mut alice = tls_client(listen, pki.client("alice")).await;
    alice.write_all(&metadata(2)).await.unwrap();
    assert_eq!(read_frame(&mut alice).await.unwrap(), 2i32.to_be_bytes());
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.connections, 1, "a broker connection for bob");
        assert_eq!(seen.requests, [(3, 2)]);
    }

    // A reload that allows carol alone: alice's next request closes her connection.
    let mut carol_only = started.clone();
    carol_only.policy.allowed_principals = ["CN=carol,OU=ops,O=example".into()].into();
    // Carol gains the right to elect: a weaker policy, put in force only when asked.
    carol_only.allow_weaker_rules = true;
    reloader.apply(&carol_only).unwrap();
    let _ = alice.write_all(&metadata(3)).await;
    assert_eq!(read_frame(&mut alice).await, None, "alice still served");
    assert_eq!(seen.lock().unwrap().requests, [(3, 2)]);
}
