//! `[audit-kafka]`: the guard's audit log produced to a Kafka topic as CloudEvents
//! (`kafka-elect-leaders-audit-kafka`), plugged into the guard as a sink that acknowledges
//! each line ([`Deliver`]); the guard itself has no Kafka client.

use std::sync::Arc;
use std::time::Duration;

use kafka_elect_leaders_audit_kafka::{
    KafkaAudit, Mechanism, Sasl, Secret, Settings, Tls, DEFAULT_DELIVERY_TIMEOUT,
    DEFAULT_MAX_BUFFERED_BYTES,
};
use kafka_elect_leaders_proxy::audit::{
    Acked, Deliver, DeliveryMode, DeliveryStats, DeliveryTarget,
};
use kafka_elect_leaders_proxy::file::AuditKafkaFile;

/// The audit topic as the guard's sink.
pub struct KafkaSink {
    audit: Arc<KafkaAudit>,
    runtime: tokio::runtime::Handle,
    describe: String,
    max_buffered_bytes: usize,
}

impl Deliver for KafkaSink {
    fn send(&self, line: &[u8]) -> Result<Acked, String> {
        // The event's `data` is the line's JSON object, without its newline.
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let delivery = self.audit.send(line).map_err(|e| e.to_string())?;
        Ok(Box::pin(async move {
            delivery.await.map(drop).map_err(|e| e.to_string())
        }))
    }

    fn flush(&self, timeout: Duration) -> Result<(), String> {
        // Called off the runtime's workers (the guard's drain): waiting here is allowed.
        self.runtime
            .block_on(self.audit.flush(timeout))
            .map_err(|e| e.to_string())
    }

    fn stats(&self) -> DeliveryStats {
        let stats = self.audit.stats();
        DeliveryStats {
            delivered: stats.acknowledged,
            failed: stats.failed,
            not_queued: stats.not_queued,
            buffered_bytes: stats.buffered_bytes as u64,
        }
    }

    fn max_buffered_bytes(&self) -> usize {
        self.max_buffered_bytes
    }

    fn describe(&self) -> String {
        self.describe.clone()
    }
}

/// The producer's settings of `[audit-kafka]`: the password read from its file (never
/// shown: errors name the file, not what it holds). An error names the key.
pub fn settings(file: &AuditKafkaFile) -> Result<Settings, String> {
    let replica = file.replica.clone().unwrap_or_else(host_name);
    let mut settings = Settings::new(&file.bootstrap_servers, &file.topic, replica);
    if file.tls || file.tls_ca.is_some() || file.tls_cert.is_some() || file.tls_key.is_some() {
        settings.connection.tls = Some(Tls {
            ca_file: file.tls_ca.clone(),
            cert_file: file.tls_cert.clone(),
            key_file: file.tls_key.clone(),
        });
    }
    match (
        &file.sasl_mechanism,
        &file.sasl_username,
        &file.sasl_password_file,
    ) {
        (None, None, None) => {}
        (Some(mechanism), Some(username), Some(password_file)) => {
            let mechanism = Mechanism::from_name(mechanism).ok_or_else(|| {
                format!(
                    "[audit-kafka] sasl-mechanism {mechanism:?}: expected PLAIN, SCRAM-SHA-256 \
                     or SCRAM-SHA-512"
                )
            })?;
            let text = std::fs::read_to_string(password_file).map_err(|e| {
                format!(
                    "[audit-kafka] sasl-password-file {}: cannot read it: {}",
                    password_file.display(),
                    e.kind()
                )
            })?;
            let password = text.lines().next().unwrap_or_default();
            if password.is_empty() {
                return Err(format!(
                    "[audit-kafka] sasl-password-file {}: its first line is empty",
                    password_file.display()
                ));
            }
            settings.connection.sasl = Some(Sasl {
                mechanism,
                username: username.clone(),
                password: Secret::new(password),
            });
        }
        _ => {
            return Err(
                "[audit-kafka] sasl-mechanism, sasl-username and sasl-password-file go \
                        together"
                    .into(),
            )
        }
    }
    settings.delivery_timeout = file.delivery_timeout.unwrap_or(DEFAULT_DELIVERY_TIMEOUT);
    settings.max_buffered_bytes = file
        .max_buffered_bytes
        .unwrap_or(DEFAULT_MAX_BUFFERED_BYTES);
    settings
        .check()
        .map_err(|e| format!("[audit-kafka]: {e}"))?;
    Ok(settings)
}

/// The mode of the records of leadership changes: `mode`, `blocking-strict` by default,
/// with `deadline` (5 s by default).
pub fn mode(file: &AuditKafkaFile) -> DeliveryMode {
    let deadline = file.deadline.unwrap_or(DeliveryMode::DEFAULT_DEADLINE);
    file.mode
        .as_deref()
        .and_then(|name| DeliveryMode::from_name(name, deadline))
        .unwrap_or(DeliveryMode::BlockingStrict { deadline })
}

/// Makes the producer of `[audit-kafka]` (librdkafka connects in the background), and
/// asks the cluster whether the topic is there, at most 10 s: a warning when it is not
/// (strict mode then refuses leadership changes until it is).
pub async fn start(file: &AuditKafkaFile) -> Result<DeliveryTarget, String> {
    let settings = settings(file)?;
    let describe = format!(
        "Kafka topic {} on {} (replica {})",
        settings.topic, settings.connection.bootstrap_servers, settings.replica
    );
    let max_buffered_bytes = settings.max_buffered_bytes;
    let audit = KafkaAudit::connect(settings).map_err(|e| format!("[audit-kafka]: {e}"))?;
    match audit.check_topic(Duration::from_secs(10)).await {
        Ok(partitions) => log::info!(
            target: "elect_leaders",
            "audit log: {describe}, {partitions} partition(s)"
        ),
        Err(e) => log::warn!(
            target: "elect_leaders",
            "audit log: {describe}: the topic cannot be described yet: {e}"
        ),
    }
    Ok(DeliveryTarget {
        sink: Arc::new(KafkaSink {
            audit: Arc::new(audit),
            runtime: tokio::runtime::Handle::current(),
            describe,
            max_buffered_bytes,
        }),
        leadership: mode(file),
    })
}

/// This host's name (a Kubernetes pod's name): `HOSTNAME`, else the kernel's, else
/// `guard`; characters a replica id may not hold become `-`.
fn host_name() -> String {
    let name = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "guard".to_owned());
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':') {
                c
            } else {
                '-'
            }
        })
        .take(200)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSWORD: &str = "correct-horse-battery-staple";

    fn file(dir: &std::path::Path, mechanism: &str) -> AuditKafkaFile {
        let password_file = dir.join("password");
        std::fs::write(&password_file, format!("{PASSWORD}\n")).unwrap();
        AuditKafkaFile {
            bootstrap_servers: "127.0.0.1:1".into(),
            topic: "audit".into(),
            replica: Some("guard-0".into()),
            tls: true,
            tls_ca: None,
            tls_cert: None,
            tls_key: None,
            sasl_mechanism: Some(mechanism.into()),
            sasl_username: Some("guard".into()),
            sasl_password_file: Some(password_file),
            mode: None,
            deadline: None,
            delivery_timeout: None,
            max_buffered_bytes: None,
        }
    }

    /// The password is read from its file, and shown by no `Debug` and no error.
    #[test]
    fn the_password_is_read_and_never_shown() {
        let dir = std::env::temp_dir().join(format!("audit-kafka-secret-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = file(&dir, "SCRAM-SHA-512");
        let made = settings(&good).unwrap();
        let sasl = made.connection.sasl.as_ref().unwrap();
        assert_eq!(sasl.password.expose(), PASSWORD, "its first line");
        for shown in [
            format!("{made:?}"),
            format!("{good:?}"),
            settings(&file(&dir, "GSSAPI")).unwrap_err(),
            settings(&AuditKafkaFile {
                sasl_username: None,
                ..good.clone()
            })
            .unwrap_err(),
            settings(&AuditKafkaFile {
                topic: String::new(),
                ..good.clone()
            })
            .unwrap_err(),
        ] {
            assert!(!shown.contains(PASSWORD), "{shown}");
        }
        // The mode: blocking-strict with a 5 s deadline unless said otherwise.
        assert_eq!(
            mode(&good),
            DeliveryMode::BlockingStrict {
                deadline: Duration::from_secs(5)
            }
        );
        let batch = AuditKafkaFile {
            mode: Some("batch".into()),
            ..good
        };
        assert_eq!(mode(&batch), DeliveryMode::Batch);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
