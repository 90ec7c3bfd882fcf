//! The audit line of a leadership-change decision. Its keys, in order: `time`, `listener`,
//! `client`, `upstream`, `client_id`, `principal`, `principal_rules` (when a principal's own
//! rules decided), `api_key`, `api_name`, `version`, `correlation_id`, `validate_only`,
//! `entries` (how many the request has), `changes` (its entries, at most
//! `SHOWN_ENTRIES`: `{"resource_type", "name", "changes": ["KEY=VALUE" | "KEY deleted"
//! | ...], "partitions", "replication_factor", "fewest_assigned"}`: the changes are those
//! of configs the policy reads, and allows on no protected topic), `verdict`, `rules`, and for a refusal `refused` (`[{"entry",
//! "rule", "message"}]`, at most `SHOWN_ENTRIES`) and `message` for a whole refusal.
//! Names the guard cannot show as UTF-8 are `{"hex": ...}`, as in ElectLeaders' lines.

use serde::ser::{Serialize, SerializeMap, Serializer};

use super::decision::ChangeDecision;
use super::read::{ChangeRequest, Entry, Op};
use crate::audit::{rfc3339_now, ConnInfo, Name, RuleList, Shown};

/// Entries written in one line, at most: a request of many entries stays one line of
/// bounded size, its count in `entries`.
pub const SHOWN_ENTRIES: usize = 100;
/// Changes of one entry written, at most.
const SHOWN_CHANGES: usize = 8;
/// Bytes of a config name or value written, at most (the configs the policy reads hold
/// booleans, numbers and short words; a name the guard does not know is the client's).
const SHOWN_VALUE: usize = 64;

/// One line of JSON, with its newline.
pub fn line(
    conn: &ConnInfo,
    principal: Option<&str>,
    request: &ChangeRequest<'_>,
    decision: &ChangeDecision,
) -> String {
    let record = Record {
        conn,
        principal,
        request,
        decision,
    };
    let mut line = serde_json::to_string(&record).unwrap_or_default();
    line.push('\n');
    line
}

struct Record<'a, 'r> {
    conn: &'a ConnInfo,
    principal: Option<&'a str>,
    request: &'a ChangeRequest<'r>,
    decision: &'a ChangeDecision,
}

impl Serialize for Record<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (request, decision) = (self.request, self.decision);
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("time", &rfc3339_now())?;
        map.serialize_entry("listener", &Shown(self.conn.listener))?;
        map.serialize_entry("client", &Shown(self.conn.client))?;
        map.serialize_entry("upstream", &Shown(self.conn.upstream))?;
        map.serialize_entry("client_id", &request.client_id.map(Name))?;
        map.serialize_entry("principal", &self.principal)?;
        if let Some(name) = &decision.rules_of {
            map.serialize_entry("principal_rules", name)?;
        }
        map.serialize_entry("api_key", &request.api.key())?;
        map.serialize_entry("api_name", request.api.name())?;
        map.serialize_entry("version", &request.version)?;
        map.serialize_entry("correlation_id", &request.correlation_id)?;
        map.serialize_entry("validate_only", &request.validate_only)?;
        if let Some(broker) = request.broker_id {
            map.serialize_entry("broker_id", &broker)?;
        }
        map.serialize_entry("entries", &request.entries.len())?;
        map.serialize_entry(
            "changes",
            &Listed(
                request
                    .entries
                    .iter()
                    .take(SHOWN_ENTRIES)
                    .map(ShownEntry)
                    .collect::<Vec<_>>(),
            ),
        )?;
        map.serialize_entry("verdict", decision.verdict.name())?;
        map.serialize_entry("rules", &RuleList(decision.rules))?;
        if !decision.refused.is_empty() {
            let refused: Vec<_> = decision
                .refused
                .iter()
                .take(SHOWN_ENTRIES)
                .map(|(i, why)| Refused {
                    entry: *i,
                    rule: why.rule.name(),
                    message: why.message,
                })
                .collect();
            map.serialize_entry("refused", &refused)?;
        }
        if let Some(message) = &decision.whole {
            map.serialize_entry("message", message)?;
        }
        map.end()
    }
}

struct Listed<T>(Vec<T>);

impl<T: Serialize> Serialize for Listed<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(&self.0)
    }
}

#[derive(serde::Serialize)]
struct Refused {
    entry: usize,
    rule: &'static str,
    message: &'static str,
}

struct ShownEntry<'e, 'a>(&'e Entry<'a>);

impl Serialize for ShownEntry<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let entry = self.0;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("resource_type", resource_type(entry.resource_type))?;
        map.serialize_entry("name", &entry.name.map(Name))?;
        if entry.name.is_none() {
            let id: String = entry.topic_id.iter().map(|b| format!("{b:02x}")).collect();
            map.serialize_entry("topic_id", &id)?;
        }
        if !entry.changes.is_empty() {
            let changes: Vec<String> = entry
                .changes
                .iter()
                .take(SHOWN_CHANGES)
                .map(|c| {
                    let name = String::from_utf8_lossy(&c.name[..c.name.len().min(SHOWN_VALUE)]);
                    match c.op {
                        Op::Set(Some(v)) => {
                            let shown = &v[..v.len().min(SHOWN_VALUE)];
                            format!("{name}={}", String::from_utf8_lossy(shown))
                        }
                        Op::Set(None) => format!("{name}=null"),
                        Op::Delete => format!("{name} deleted"),
                        Op::ListOp(op) => format!("{name} list operation {op}"),
                        Op::Omitted => format!("{name} reset (not in the replacing set)"),
                        Op::Unknown(op) => format!("{name} unknown operation {op}"),
                    }
                })
                .collect();
            map.serialize_entry("changes", &changes)?;
        }
        if !entry.partitions.is_empty() {
            map.serialize_entry("partitions", &entry.partitions)?;
        }
        if entry.replication_factor != -1 {
            map.serialize_entry("replication_factor", &entry.replication_factor)?;
        }
        if let Some(fewest) = entry.fewest_assigned {
            map.serialize_entry("fewest_assigned", &fewest)?;
        }
        map.end()
    }
}

fn resource_type(t: i8) -> &'static str {
    match t {
        super::read::RESOURCE_TOPIC => "topic",
        super::read::RESOURCE_BROKER => "broker",
        super::read::RESOURCE_BROKER_LOGGER => "broker_logger",
        super::read::RESOURCE_CLIENT_METRICS => "client_metrics",
        super::read::RESOURCE_GROUP => "group",
        _ => "unknown",
    }
}
