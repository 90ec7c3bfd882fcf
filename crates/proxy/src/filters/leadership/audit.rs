//! The audit line of a leadership-change decision. Its keys, in order: `time`, `listener`,
//! `client`, `upstream`, `client_id`, `principal`, `principal_rules` (when a principal's own
//! rules decided), `api_key`, `api_name`, `version`, `correlation_id`, `validate_only`,
//! `entries` (how many the request has), `changes` (its entries, at most
//! `SHOWN_ENTRIES`: `{"resource_type", "name", "changes": ["KEY=VALUE" | "KEY deleted"
//! | ...], "partitions", "replication_factor", "fewest_assigned"}`: the changes are those
//! of configs the policy reads, and allows on no protected topic), `verdict`, `rules`, and
//! for a refusal `refused` (`[{"entry", "rule", "message"}]`, at most `SHOWN_ENTRIES`) and
//! `message` for a whole refusal; last, in a line shortened to fit the share of the audit
//! queue it is counted against, `truncated` (`true`) and `left_out` (`{"changes": N,
//! "refused": N}`: the request's entries and the refusals not written; `refused` only
//! when some are refused). Names the guard cannot show as UTF-8 are `{"hex": ...}`, and
//! characters a reader cannot see are escaped, as in ElectLeaders' lines.
//!
//! The caps bound the line by the number of entries, not by bytes: a hundred entries
//! named by topic names of 32 KiB each, or one entry naming a million partitions, make a
//! line larger than a share of a small audit queue. Such a line is shortened
//! ([`ChangeLine`](crate::filters::leadership::audit::ChangeLine)'s
//! [`AuditLine`](crate::observability::audit::AuditLine)), whole entries left out, rather than refused
//! unaudited.

use serde::ser::{Serialize, SerializeMap, Serializer};

use super::decision::ChangeDecision;
use super::read::{ChangeRequest, Entry, Op};
use crate::observability::audit::{
    json_len, line_within, rfc3339_now, AuditLine, ConnInfo, Name, RuleList, Shown, MAX_LINE,
};

/// Entries written in one line, at most: a request of many entries stays one line of
/// bounded size, its count in `entries`.
pub const SHOWN_ENTRIES: usize = 100;
/// Changes of one entry written, at most.
const SHOWN_CHANGES: usize = 8;
/// Bytes of a config name or value written, at most (the configs the policy reads hold
/// booleans, numbers and short words; a name the guard does not know is the client's).
const SHOWN_VALUE: usize = 64;

/// The audit line of one decision, written when it is queued, to fit the share of the
/// queue it is counted against ([`AuditLine`]).
pub fn line<'a, 'r>(
    conn: &'a ConnInfo,
    principal: Option<&'a str>,
    request: &'a ChangeRequest<'r>,
    decision: &'a ChangeDecision,
) -> ChangeLine<'a, 'r> {
    ChangeLine(Record {
        conn,
        principal,
        request,
        decision,
        shortened: None,
    })
}

/// The audit line of one leadership-change decision, not yet written ([`line()`]).
pub struct ChangeLine<'a, 'r>(Record<'a, 'r>);

impl ChangeLine<'_, '_> {
    /// The whole line, with its newline.
    pub fn text(&self) -> String {
        line_within(&self.0, usize::MAX).unwrap_or_default()
    }
}

impl AuditLine for ChangeLine<'_, '_> {
    /// The whole line within `limit` bytes (and [`MAX_LINE`]), or else shortened: of the
    /// refusals, then of
    /// the entries, as many as fit (refusals given half the room first), measured before
    /// anything is written, with `"truncated": true` and the counts left out. None only
    /// when even a line listing none of them is larger than `limit`.
    fn fitted_to(self, limit: usize) -> Option<String> {
        let limit = limit.min(MAX_LINE);
        let record = self.0;
        if let Some(line) = line_within(&record, limit) {
            return Some(line);
        }
        let (entries, refusals) = (&record.request.entries, &record.decision.refused);
        let lists_refused = !refusals.is_empty();
        let empty = Record {
            shortened: Some(Shortened {
                changes: 0,
                refused: 0,
                left_out: LeftOut {
                    changes: entries.len(),
                    refused: lists_refused.then_some(refusals.len()),
                },
            }),
            ..record
        };
        let room = limit.checked_sub(json_len(&empty).saturating_add(1))?;
        let (refused, used) = prefix_within(
            refusals
                .iter()
                .take(SHOWN_ENTRIES)
                .map(|r| json_len(&refused(r))),
            room / 2,
        );
        let (changes, _) = prefix_within(
            entries
                .iter()
                .take(SHOWN_ENTRIES)
                .map(|e| json_len(&ShownEntry(e))),
            room - used,
        );
        let shortened = Record {
            shortened: Some(Shortened {
                changes,
                refused,
                left_out: LeftOut {
                    changes: entries.len() - changes,
                    refused: lists_refused.then_some(refusals.len() - refused),
                },
            }),
            ..record
        };
        line_within(&shortened, limit)
    }
}

/// How many of a list's elements, of these JSON lengths, fit in `room` bytes more than an
/// empty list (a comma between two), from the first on; and the bytes they take.
fn prefix_within(lengths: impl Iterator<Item = usize>, room: usize) -> (usize, usize) {
    let (mut shown, mut used) = (0, 0usize);
    for len in lengths {
        let more = len.saturating_add(usize::from(shown > 0));
        if used.saturating_add(more) > room {
            break;
        }
        used += more;
        shown += 1;
    }
    (shown, used)
}

#[derive(Clone, Copy)]
struct Record<'a, 'r> {
    conn: &'a ConnInfo,
    principal: Option<&'a str>,
    request: &'a ChangeRequest<'r>,
    decision: &'a ChangeDecision,
    shortened: Option<Shortened>,
}

/// How many entries and refusals a shortened line writes, and how many it leaves out.
#[derive(Clone, Copy)]
struct Shortened {
    changes: usize,
    refused: usize,
    left_out: LeftOut,
}

/// The entries and refusals a shortened line does not write.
#[derive(Clone, Copy, serde::Serialize)]
struct LeftOut {
    changes: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    refused: Option<usize>,
}

impl Serialize for Record<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (request, decision) = (self.request, self.decision);
        let (shown_changes, shown_refused) = match &self.shortened {
            Some(cut) => (cut.changes, cut.refused),
            None => (SHOWN_ENTRIES, SHOWN_ENTRIES),
        };
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
                    .take(shown_changes.min(SHOWN_ENTRIES))
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
                .take(shown_refused.min(SHOWN_ENTRIES))
                .map(refused)
                .collect();
            map.serialize_entry("refused", &refused)?;
        }
        if let Some(message) = &decision.whole {
            map.serialize_entry("message", message)?;
        }
        if let Some(cut) = &self.shortened {
            map.serialize_entry("truncated", &true)?;
            map.serialize_entry("left_out", &cut.left_out)?;
        }
        map.end()
    }
}

/// A refusal of one entry, as its line writes it.
fn refused((entry, why): &(usize, super::decision::Why)) -> Refused {
    Refused {
        entry: *entry,
        rule: why.rule.name(),
        message: why.message,
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
