//! The audit log: one JSON line per ElectLeaders decision; and the proxy's own diagnostics,
//! one plain line each on stderr.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kafka_elect_leaders::ElectLeadersRequest;
use serde_json::{json, Value};

use crate::policy::{Decision, Policy};

/// Where audit lines go.
pub enum AuditSink {
    Stdout,
    Stderr,
    File(File),
}

/// One JSON line per decision, written whole (one `write` under a lock) and flushed, so
/// that lines from several connections never interleave and a reader sees them at once.
pub struct Audit {
    sink: Mutex<AuditSink>,
}

/// The connection a decision was made on.
#[derive(Clone, Copy, Debug)]
pub struct ConnInfo {
    pub client: SocketAddr,
    pub listener: SocketAddr,
    pub upstream: SocketAddr,
}

impl Audit {
    /// A file, appended to (created if missing).
    pub fn open_file(path: &std::path::Path) -> io::Result<Audit> {
        Ok(Audit {
            sink: Mutex::new(AuditSink::File(
                OpenOptions::new().create(true).append(true).open(path)?,
            )),
        })
    }

    /// `-`: standard output; a path: appended to; `None`: standard error.
    pub fn open(target: Option<&str>) -> io::Result<Audit> {
        let sink = match target {
            None => AuditSink::Stderr,
            Some("-") => AuditSink::Stdout,
            Some(path) => AuditSink::File(OpenOptions::new().create(true).append(true).open(path)?),
        };
        Ok(Audit {
            sink: Mutex::new(sink),
        })
    }

    /// Writes the line for one decision.
    pub fn record(
        &self,
        conn: &ConnInfo,
        policy: &Policy,
        request: &ElectLeadersRequest<'_>,
        decision: &Decision,
    ) {
        let mut line = decision_json(conn, policy, request, decision).to_string();
        line.push('\n');
        let mut sink = match self.sink.lock() {
            Ok(sink) => sink,
            Err(poisoned) => poisoned.into_inner(),
        };
        let written = match &mut *sink {
            AuditSink::Stdout => {
                let mut out = io::stdout().lock();
                out.write_all(line.as_bytes()).and_then(|()| out.flush())
            }
            AuditSink::Stderr => io::stderr().lock().write_all(line.as_bytes()),
            AuditSink::File(f) => f.write_all(line.as_bytes()),
        };
        if let Err(e) = written {
            log(format_args!("cannot write the audit log: {e}"));
        }
    }
}

fn text(bytes: &[u8]) -> Value {
    Value::String(String::from_utf8_lossy(bytes).into_owned())
}

/// The audit record of one decision.
pub fn decision_json(
    conn: &ConnInfo,
    policy: &Policy,
    request: &ElectLeadersRequest<'_>,
    decision: &Decision,
) -> Value {
    let topics = request.topic_partitions();
    let list = |refused_only: bool| -> Value {
        match topics {
            None => Value::Null,
            Some(list) => Value::Array(
                list.iter()
                    .filter(|t| !refused_only || decision.refuses_topic(policy, t.topic()))
                    .map(|t| json!({"topic": text(t.topic()), "partitions": t.partitions().iter().collect::<Vec<i32>>()}))
                    .collect(),
            ),
        }
    };
    let election_type = request.election_type();
    let mut record = json!({
        "time": rfc3339_now(),
        "listener": conn.listener.to_string(),
        "client": conn.client.to_string(),
        "upstream": conn.upstream.to_string(),
        "client_id": request.header().client_id().map_or(Value::Null, text),
        "correlation_id": request.correlation_id(),
        "version": request.version(),
        "election_type": election_type.name().map_or_else(|| json!(election_type.0), |n| json!(n)),
        "partitions": list(false),
        "partition_count": decision.requested,
        "verdict": decision.verdict.name(),
        "rules": decision.rules.iter().map(|r| r.name()).collect::<Vec<_>>(),
    });
    if let Some(map) = record.as_object_mut() {
        match &decision.refusal {
            crate::policy::Refusal::Nothing => {}
            crate::policy::Refusal::Whole { message } => {
                map.insert("refused".into(), list(true));
                map.insert("whole".into(), Value::Bool(true));
                map.insert("message".into(), Value::String(message.clone()));
            }
            crate::policy::Refusal::Partitions { .. } => {
                map.insert("refused".into(), list(true));
                map.insert("whole".into(), Value::Bool(false));
            }
        }
    }
    record
}

/// A diagnostic line on stderr: `elect-leaders proxy: TIME MESSAGE`.
pub fn log(message: std::fmt::Arguments<'_>) {
    let line = format!("elect-leaders proxy: {} {message}\n", rfc3339_now());
    let _ = io::stderr().lock().write_all(line.as_bytes());
}

/// Now, in RFC 3339 UTC with milliseconds: `2025-01-31T23:59:59.123Z`.
pub fn rfc3339_now() -> String {
    rfc3339(SystemTime::now())
}

/// A time in RFC 3339 UTC with milliseconds, written by `humantime`. RFC 3339 has four-digit
/// years: a time before the epoch is written as `1970-01-01T00:00:00.000Z`, one past the end of
/// year 9999 as `9999-12-31T23:59:59.999Z`; nothing panics.
pub fn rfc3339(time: SystemTime) -> String {
    // 9999-12-31T23:59:59.999Z, the last instant written with milliseconds.
    const LAST: Duration = Duration::new(253_402_300_799, 999_000_000);
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let time = UNIX_EPOCH + since.min(LAST);
    humantime::format_rfc3339_millis(time).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_dates() {
        let at =
            |secs: u64, millis: u32| rfc3339(UNIX_EPOCH + Duration::new(secs, millis * 1_000_000));
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(at(1_767_225_599, 999), "2025-12-31T23:59:59.999Z");
        assert_eq!(at(4_107_542_400, 0), "2100-03-01T00:00:00.000Z");
        // Milliseconds are cut, not rounded.
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::new(1_738_367_999, 123_999_999)),
            "2025-01-31T23:59:59.123Z"
        );
        // The limits: no panic, the nearest instant RFC 3339 can write.
        assert_eq!(at(u64::from(u32::MAX), 0), "2106-02-07T06:28:15.000Z");
        assert_eq!(at(253_402_300_799, 999), "9999-12-31T23:59:59.999Z");
        if let Some(far) = UNIX_EPOCH.checked_add(Duration::from_secs(1 << 40)) {
            assert_eq!(rfc3339(far), "9999-12-31T23:59:59.999Z");
        }
        if let Some(before) = UNIX_EPOCH.checked_sub(Duration::from_secs(86_400)) {
            assert_eq!(rfc3339(before), "1970-01-01T00:00:00.000Z");
        }
    }
}
