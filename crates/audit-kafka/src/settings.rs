//! Where the audit topic is and how to reach it: bootstrap servers, TLS, SASL, the topic,
//! the replica, the delivery timeout and the buffer bound; and the librdkafka
//! configuration made of them, the only place that names librdkafka's properties.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use rdkafka::ClientConfig;

use crate::error::Error;

/// How to reach a Kafka cluster: the audit topic's, which may be the guarded cluster or
/// another one, with TLS and SASL settings of its own.
#[derive(Clone, Debug)]
pub struct Connection {
    /// `host:port` of one or more brokers, comma separated (librdkafka's
    /// `bootstrap.servers`).
    pub bootstrap_servers: String,
    /// TLS to the brokers; `None` for plaintext.
    pub tls: Option<Tls>,
    /// SASL authentication; `None` for none. PLAIN needs TLS (it sends the password).
    pub sasl: Option<Sasl>,
}

/// TLS to the brokers: the CA that signs their certificates, and a client certificate when
/// the brokers ask for one (mTLS). PEM files.
#[derive(Clone, Debug, Default)]
pub struct Tls {
    /// The CA certificates (PEM) the brokers' certificates must chain to; `None` for the
    /// system's.
    pub ca_file: Option<PathBuf>,
    /// The client's certificate (PEM), for brokers that require one.
    pub cert_file: Option<PathBuf>,
    /// The client certificate's private key (PEM, unencrypted).
    pub key_file: Option<PathBuf>,
}

/// The SASL mechanisms librdkafka speaks here without Cyrus SASL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// `PLAIN`: the password itself, so only over TLS.
    Plain,
    /// `SCRAM-SHA-256`.
    ScramSha256,
    /// `SCRAM-SHA-512`.
    ScramSha512,
}

impl Mechanism {
    /// The mechanism's name as Kafka and librdkafka write it.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Plain => "PLAIN",
            Mechanism::ScramSha256 => "SCRAM-SHA-256",
            Mechanism::ScramSha512 => "SCRAM-SHA-512",
        }
    }

    /// The mechanism named `name` (as [`Mechanism::name`] writes it, any case).
    pub fn from_name(name: &str) -> Option<Mechanism> {
        [
            Mechanism::Plain,
            Mechanism::ScramSha256,
            Mechanism::ScramSha512,
        ]
        .into_iter()
        .find(|m| m.name().eq_ignore_ascii_case(name))
    }
}

/// SASL credentials. The password is a [`Secret`]: it shows as `***` in `Debug`, and no
/// error of this crate quotes it.
#[derive(Clone, Debug)]
pub struct Sasl {
    /// The mechanism.
    pub mechanism: Mechanism,
    /// The user name.
    pub username: String,
    /// The password.
    pub password: Secret,
}

/// A password: kept only to hand to librdkafka; `Debug` shows `***`, and it has no
/// `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a password.
    pub fn new(password: impl Into<String>) -> Secret {
        Secret(password.into())
    }

    /// The password itself, for whoever must send it (librdkafka's configuration).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// What [`KafkaAudit::connect`](crate::KafkaAudit::connect) needs.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The cluster the audit topic lives on.
    pub connection: Connection,
    /// The audit topic (it must exist: the producer does not create it).
    pub topic: String,
    /// The replica of the guard that writes: each event's key and its CloudEvents
    /// `source` (`urn:elect-leaders:guard:<replica>`). Letters, digits, `.`, `_`, `-`,
    /// `:`, at most [`MAX_REPLICA_LEN`] bytes (a pod name, a host name).
    pub replica: String,
    /// How long librdkafka tries to deliver a record (`message.timeout.ms`, retries
    /// included) before it fails it: the longest any mode waits. At least 1 ms.
    pub delivery_timeout: Duration,
    /// Bytes of events waiting for the broker's acknowledgement, at most, in every mode:
    /// librdkafka's `queue.buffering.max.kbytes` and this crate's own count of what is in
    /// flight. An event that does not fit is not queued ([`Mode`](crate::Mode) says what
    /// then).
    pub max_buffered_bytes: usize,
}

/// The longest replica id ([`Settings::replica`]).
pub const MAX_REPLICA_LEN: usize = 200;

/// [`Settings::delivery_timeout`] by default: 30 s, Kafka's own `delivery.timeout.ms` is
/// two minutes; an audit record later than this helps no one.
pub const DEFAULT_DELIVERY_TIMEOUT: Duration = Duration::from_secs(30);

/// [`Settings::max_buffered_bytes`] by default: 16 MiB.
pub const DEFAULT_MAX_BUFFERED_BYTES: usize = 16 << 20;

/// librdkafka's largest `queue.buffering.max.kbytes`.
const MAX_QUEUE_KBYTES: usize = 2_147_483_647 / 1024;

impl Settings {
    /// Settings with the defaults: plaintext, no SASL, [`DEFAULT_DELIVERY_TIMEOUT`],
    /// [`DEFAULT_MAX_BUFFERED_BYTES`].
    pub fn new(
        bootstrap_servers: impl Into<String>,
        topic: impl Into<String>,
        replica: impl Into<String>,
    ) -> Settings {
        Settings {
            connection: Connection {
                bootstrap_servers: bootstrap_servers.into(),
                tls: None,
                sasl: None,
            },
            topic: topic.into(),
            replica: replica.into(),
            delivery_timeout: DEFAULT_DELIVERY_TIMEOUT,
            max_buffered_bytes: DEFAULT_MAX_BUFFERED_BYTES,
        }
    }

    /// Checks what librdkafka would not, or would only when it is too late.
    pub fn check(&self) -> Result<(), Error> {
        self.connection.check()?;
        check_replica(&self.replica)?;
        if self.topic.is_empty() || self.topic.len() > 249 {
            return Err(Error::Settings("the topic name must have 1 to 249 bytes"));
        }
        if !self
            .topic
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        {
            return Err(Error::Settings(
                "the topic name may hold only letters, digits, '.', '_' and '-'",
            ));
        }
        if self.delivery_timeout < Duration::from_millis(1) {
            return Err(Error::Settings(
                "the delivery timeout must be at least 1 ms",
            ));
        }
        if self.max_buffered_bytes < 1024 {
            return Err(Error::Settings("the buffer must hold at least 1 KiB"));
        }
        Ok(())
    }

    /// The producer's configuration: idempotent, `acks=all`, bounded in time and bytes.
    pub(crate) fn producer_config(&self) -> ClientConfig {
        let mut config = self.connection.client_config();
        let kbytes = self.max_buffered_bytes.div_ceil(1024).min(MAX_QUEUE_KBYTES);
        config
            .set("enable.idempotence", "true")
            .set("acks", "all")
            // What idempotence allows at most while keeping the order of one partition.
            .set("max.in.flight.requests.per.connection", "5")
            .set("message.timeout.ms", millis(self.delivery_timeout))
            .set("queue.buffering.max.kbytes", kbytes.to_string())
            // The bytes bound the queue; librdkafka's count of messages must not first.
            .set("queue.buffering.max.messages", "2147483647")
            // A decision waits for its record: send it at once rather than linger.
            .set("linger.ms", "0")
            // All of one replica's records on one partition, in order: the key's hash, as
            // Kafka's own clients place keys (murmur2), so Java and Rust agree.
            .set("partitioner", "murmur2_random");
        config
    }
}

impl Connection {
    /// Checks the settings librdkafka would accept but that are unsafe or unusable.
    pub fn check(&self) -> Result<(), Error> {
        if self.bootstrap_servers.trim().is_empty() {
            return Err(Error::Settings("no bootstrap servers"));
        }
        if let Some(sasl) = &self.sasl {
            if sasl.mechanism == Mechanism::Plain && self.tls.is_none() {
                return Err(Error::Settings(
                    "SASL PLAIN without TLS would send the password in clear",
                ));
            }
            if sasl.username.is_empty() {
                return Err(Error::Settings("SASL needs a user name"));
            }
        }
        if let Some(tls) = &self.tls {
            if tls.cert_file.is_some() != tls.key_file.is_some() {
                return Err(Error::Settings(
                    "a client certificate needs its key, and a key its certificate",
                ));
            }
        }
        Ok(())
    }

    /// The configuration every client of this crate shares: where, and how securely.
    pub(crate) fn client_config(&self) -> ClientConfig {
        let mut config = ClientConfig::new();
        config
            .set("bootstrap.servers", &self.bootstrap_servers)
            .set("client.id", "elect-leaders-audit")
            // Nothing of the guard's audit is compressed or fetched over HTTP.
            .set("compression.type", "none");
        let protocol = match (&self.tls, &self.sasl) {
            (None, None) => "plaintext",
            (Some(_), None) => "ssl",
            (None, Some(_)) => "sasl_plaintext",
            (Some(_), Some(_)) => "sasl_ssl",
        };
        config.set("security.protocol", protocol);
        if let Some(tls) = &self.tls {
            if let Some(ca) = &tls.ca_file {
                config.set("ssl.ca.location", ca.to_string_lossy());
            }
            if let Some(cert) = &tls.cert_file {
                config.set("ssl.certificate.location", cert.to_string_lossy());
            }
            if let Some(key) = &tls.key_file {
                config.set("ssl.key.location", key.to_string_lossy());
            }
            config.set("ssl.endpoint.identification.algorithm", "https");
        }
        if let Some(sasl) = &self.sasl {
            config
                .set("sasl.mechanism", sasl.mechanism.name())
                .set("sasl.username", &sasl.username)
                .set("sasl.password", sasl.password.expose());
        }
        config
    }

    /// The password, if any: what error texts must never quote.
    pub(crate) fn secret(&self) -> Option<&str> {
        self.sasl.as_ref().map(|s| s.password.expose())
    }
}

/// Checks a replica id ([`Settings::replica`]).
pub fn check_replica(replica: &str) -> Result<(), Error> {
    if replica.is_empty() || replica.len() > MAX_REPLICA_LEN {
        return Err(Error::Settings("the replica id must have 1 to 200 bytes"));
    }
    if !replica
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"._-:".contains(&b))
    {
        return Err(Error::Settings(
            "the replica id may hold only letters, digits, '.', '_', '-' and ':'",
        ));
    }
    Ok(())
}

/// A duration in whole milliseconds, at least 1, at most `i32::MAX` (librdkafka's range).
fn millis(d: Duration) -> String {
    d.as_millis().clamp(1, i32::MAX as u128).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sasl_settings() -> Settings {
        let mut settings = Settings::new("127.0.0.1:9092", "audit", "guard-0");
        settings.connection.tls = Some(Tls::default());
        settings.connection.sasl = Some(Sasl {
            mechanism: Mechanism::ScramSha512,
            username: "alice".into(),
            password: Secret::new("hunter2-very-secret"),
        });
        settings
    }

    #[test]
    fn the_password_never_shows_in_debug() {
        let settings = sasl_settings();
        let shown = format!("{settings:?} {settings:#?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("Secret(***)"));
        assert!(shown.contains("alice"));
    }

    #[test]
    fn producer_config_is_idempotent_and_acks_all() {
        let config = sasl_settings().producer_config();
        assert_eq!(config.get("enable.idempotence"), Some("true"));
        assert_eq!(config.get("acks"), Some("all"));
        assert_eq!(config.get("security.protocol"), Some("sasl_ssl"));
        assert_eq!(config.get("sasl.mechanism"), Some("SCRAM-SHA-512"));
        assert_eq!(config.get("message.timeout.ms"), Some("30000"));
        assert_eq!(config.get("queue.buffering.max.kbytes"), Some("16384"));
    }

    #[test]
    fn plain_without_tls_is_refused() {
        let mut settings = sasl_settings();
        settings.connection.tls = None;
        settings.connection.sasl.as_mut().unwrap().mechanism = Mechanism::Plain;
        assert!(settings.check().is_err());
        settings.connection.sasl.as_mut().unwrap().mechanism = Mechanism::ScramSha256;
        assert!(settings.check().is_ok());
    }

    #[test]
    fn replica_ids_are_checked() {
        assert!(check_replica("guard-0.ns:1").is_ok());
        assert!(check_replica("").is_err());
        assert!(check_replica("a b").is_err());
        assert!(check_replica("é").is_err());
        assert!(check_replica(&"a".repeat(MAX_REPLICA_LEN + 1)).is_err());
    }

    #[test]
    fn mechanisms_by_name() {
        assert_eq!(
            Mechanism::from_name("scram-sha-256"),
            Some(Mechanism::ScramSha256)
        );
        assert_eq!(Mechanism::from_name("GSSAPI"), None);
    }
}
