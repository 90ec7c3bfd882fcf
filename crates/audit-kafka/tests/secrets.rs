//! The SASL password never reaches a log line, a `Debug` or an error of this crate: a
//! sink and a reader with SCRAM credentials against an address where no broker listens,
//! every log record of librdkafka (through the `log` facade) kept and searched.

use std::sync::Mutex;
use std::time::Duration;

use kafka_elect_leaders_audit_kafka::{
    Connection, KafkaAudit, Mechanism, Mode, Sasl, Secret, Settings, TopicReader,
};

const PASSWORD: &str = "pw-never-shown-7f3a9c";

static LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Keep;

impl log::Log for Keep {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &log::Record<'_>) {
        LINES.lock().unwrap().push(format!(
            "{} {} {}",
            record.level(),
            record.target(),
            record.args()
        ));
    }

    fn flush(&self) {}
}

fn connection() -> Connection {
    Connection {
        // Nothing listens on port 1: every attempt fails, and librdkafka logs each.
        bootstrap_servers: "127.0.0.1:1".into(),
        tls: None,
        sasl: Some(Sasl {
            mechanism: Mechanism::ScramSha256,
            username: "alice".into(),
            password: Secret::new(PASSWORD),
        }),
    }
}

#[tokio::test]
async fn the_password_is_never_shown() {
    log::set_logger(&Keep).unwrap();
    log::set_max_level(log::LevelFilter::Trace);

    let mut settings = Settings::new("", "audit", "guard-0");
    settings.connection = connection();
    let mut shown = vec![format!("{settings:?}"), format!("{settings:#?}")];
    let audit = KafkaAudit::connect(settings.clone()).unwrap();
    let deadline = Duration::from_millis(1500);
    let answer = audit
        .record(
            b"{\"verdict\":\"allowed\"}",
            Mode::BlockingStrict { deadline },
        )
        .await;
    shown.push(format!("{answer:?}"));
    shown.push(format!("{}", answer.unwrap_err()));
    shown.push(format!("{audit:?}"));
    if let Err(e) = audit.check_topic(Duration::from_millis(500)).await {
        shown.push(format!("{e:?} {e}"));
    }
    if let Err(e) = audit.flush(Duration::from_millis(100)).await {
        shown.push(format!("{e:?} {e}"));
    }
    drop(audit);
    match TopicReader::open(&connection(), "audit", Duration::from_millis(500)) {
        Ok(reader) => shown.push(format!("{reader:?}")),
        Err(e) => shown.push(format!("{e:?} {e}")),
    }
    // PLAIN without TLS is refused before anything is sent.
    let mut plain = settings;
    plain.connection.sasl.as_mut().unwrap().mechanism = Mechanism::Plain;
    shown.push(format!("{}", KafkaAudit::connect(plain).unwrap_err()));

    let logged = LINES.lock().unwrap().clone();
    assert!(
        !logged.is_empty(),
        "librdkafka logged nothing: the test would prove nothing"
    );
    for text in shown.iter().chain(&logged) {
        assert!(!text.contains(PASSWORD), "the password shows in: {text}");
    }
}
