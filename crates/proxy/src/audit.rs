//! The audit log: one JSON line per ElectLeaders decision; and the proxy's own diagnostics,
//! one plain line each on stderr.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

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
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(since.as_secs(), since.subsec_millis())
}

/// Seconds since the Unix epoch in RFC 3339 UTC (Howard Hinnant's `civil_from_days`).
pub fn rfc3339(secs: u64, millis: u32) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(rfc3339(1_767_225_599, 999), "2025-12-31T23:59:59.999Z");
        assert_eq!(rfc3339(4_107_542_400, 0), "2100-03-01T00:00:00.000Z");
    }
}
