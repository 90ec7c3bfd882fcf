//! An audit line's JSON: the decision record ([`DecisionRecord`]), the connection it was
//! made on ([`ConnInfo`]), names written losslessly, characters a reader cannot see
//! escaped, and times in RFC 3339.

use std::io;
use std::net::SocketAddr;

pub use crate::diag::{rfc3339, rfc3339_now};

use kafka_elect_leaders::ElectLeadersRequest;
use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::policy::{Decision, Policy};
use kafka_elect_leaders_text::is_hidden;

/// The connection a decision was made on.
#[derive(Clone, Copy, Debug)]
pub struct ConnInfo {
    /// The client's address.
    pub client: SocketAddr,
    /// The guard's listener the client connected to.
    pub listener: SocketAddr,
    /// The address the client reached the guard on (the listener's, unless it listens on
    /// an unspecified address such as 0.0.0.0).
    pub local: SocketAddr,
    /// The broker behind that listener.
    pub upstream: SocketAddr,
}

/// A name as the tool's JSON writes it: a string when it is UTF-8, else `{"hex": ...}`,
/// so that two different names never look the same.
pub(crate) struct Name<'a>(pub(crate) &'a [u8]);

impl Serialize for Name<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(self.0) {
            Ok(text) => s.serialize_str(text),
            Err(_) => {
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry("hex", &Hex(self.0))?;
                map.end()
            }
        }
    }
}

/// Bytes as lowercase hex digits, written as they are serialized.
struct Hex<'a>(&'a [u8]);

impl Serialize for Hex<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl std::fmt::Display for Hex<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

/// The topics and partitions of a request, or of those the decision refuses: `null` for
/// "every partition" (a null topic list), else `[{"topic", "partitions"}]`, read from the
/// request's bytes as they are written.
struct Topics<'a, 'r> {
    request: &'a ElectLeadersRequest<'r>,
    refused_only: Option<(&'a Policy, &'a Decision)>,
}

impl Serialize for Topics<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Some(list) = self.request.topic_partitions() else {
            return s.serialize_none();
        };
        s.collect_seq(
            list.iter()
                .filter(|t| {
                    self.refused_only
                        .is_none_or(|(policy, decision)| decision.refuses_topic(policy, t.topic()))
                })
                .map(|t| Topic {
                    topic: Name(t.topic()),
                    partitions: Partitions(t.partitions()),
                }),
        )
    }
}

#[derive(serde::Serialize)]
struct Topic<'a, P> {
    topic: Name<'a>,
    partitions: P,
}

/// A topic's partition indexes, read from the request as they are written.
struct Partitions<L>(L);

impl<L> Serialize for Partitions<L>
where
    L: IntoIterator<Item = i32> + Copy,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0)
    }
}

/// The names of a decision's rules, in their fixed order.
pub(crate) struct RuleList(pub(crate) crate::policy::Rules);

impl Serialize for RuleList {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|r| r.name()))
    }
}

/// A value written with its `Display`.
pub(crate) struct Shown<T>(pub(crate) T);

impl<T: std::fmt::Display> Serialize for Shown<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

/// The audit record of one decision, serialized straight from the request and the decision
/// (nothing is copied into an intermediate JSON value). Its keys, in order: `time`,
/// `listener`, `client`, `upstream`, `client_id`, `principal`, `principal_rules` (when a
/// principal's own rules decided), `correlation_id`, `version`, `election_type` (its name,
/// or the number when it has none), `partitions` (`null` for every partition),
/// `partition_count`, `verdict`, `rules`, and for a refusal `refused`, `whole` and, for a
/// whole refusal, `message`.
pub struct DecisionRecord<'a, 'r> {
    conn: &'a ConnInfo,
    principal: Option<&'a str>,
    policy: &'a Policy,
    request: &'a ElectLeadersRequest<'r>,
    decision: &'a Decision,
}

impl<'a, 'r> DecisionRecord<'a, 'r> {
    /// The record of `decision`, taken under `policy` on `request`.
    pub fn new(
        conn: &'a ConnInfo,
        principal: Option<&'a str>,
        policy: &'a Policy,
        request: &'a ElectLeadersRequest<'r>,
        decision: &'a Decision,
    ) -> Self {
        DecisionRecord {
            conn,
            principal,
            policy,
            request,
            decision,
        }
    }

    /// The record as one line of JSON, with its newline. Characters a reader cannot see
    /// in what a client chose (bidi controls and other format characters, line and
    /// paragraph separators) are written as `\uXXXX` escapes (`Visible`): the JSON value is
    /// the same, but a line shown in a terminal or an editor reads as its bytes are.
    pub fn line(&self) -> String {
        let mut line = Vec::with_capacity(256);
        let mut json = serde_json::Serializer::with_formatter(&mut line, Visible);
        // Writing into a Vec cannot fail, nor can any of the record's values.
        if self.serialize(&mut json).is_err() {
            line.clear();
        }
        line.push(b'\n');
        // serde_json writes UTF-8 only.
        String::from_utf8(line).unwrap_or_default()
    }

    /// [`DecisionRecord::line`], or None as soon as it grows past `limit` bytes: a line
    /// too large to be queued is never written out whole (a request of the largest frame
    /// size would make a line of several times its size).
    pub fn line_within(&self, limit: usize) -> Option<String> {
        let mut line = Capped {
            bytes: Vec::with_capacity(256.min(limit)),
            limit,
        };
        let mut json = serde_json::Serializer::with_formatter(&mut line, Visible);
        self.serialize(&mut json).ok()?;
        io::Write::write_all(&mut line, b"\n").ok()?;
        String::from_utf8(line.bytes).ok()
    }
}

/// A buffer that refuses to grow past `limit` bytes.
struct Capped {
    bytes: Vec<u8>,
    limit: usize,
}

impl io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.bytes.len().saturating_add(buf.len()) > self.limit {
            return Err(io::Error::other("past the limit"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Serialize for DecisionRecord<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (request, decision) = (self.request, self.decision);
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("time", &rfc3339_now())?;
        map.serialize_entry("listener", &Shown(self.conn.listener))?;
        map.serialize_entry("client", &Shown(self.conn.client))?;
        map.serialize_entry("upstream", &Shown(self.conn.upstream))?;
        map.serialize_entry("client_id", &request.header().client_id().map(Name))?;
        map.serialize_entry("principal", &self.principal)?;
        if let Some(name) = decision.rules_of() {
            map.serialize_entry("principal_rules", name)?;
        }
        map.serialize_entry("correlation_id", &request.correlation_id())?;
        map.serialize_entry("version", &request.version())?;
        let election_type = request.election_type();
        match election_type.name() {
            Some(name) => map.serialize_entry("election_type", name)?,
            None => map.serialize_entry("election_type", &election_type.0)?,
        }
        let all = Topics {
            request,
            refused_only: None,
        };
        map.serialize_entry("partitions", &all)?;
        map.serialize_entry("partition_count", &decision.requested)?;
        map.serialize_entry("verdict", decision.verdict.name())?;
        map.serialize_entry("rules", &RuleList(decision.rules))?;
        let refused = Topics {
            request,
            refused_only: Some((self.policy, decision)),
        };
        match &decision.refusal {
            crate::policy::Refusal::Nothing => {}
            crate::policy::Refusal::Whole { message } => {
                map.serialize_entry("refused", &refused)?;
                map.serialize_entry("whole", &true)?;
                map.serialize_entry("message", message)?;
            }
            crate::policy::Refusal::Partitions { .. } => {
                map.serialize_entry("refused", &refused)?;
                map.serialize_entry("whole", &false)?;
            }
        }
        map.end()
    }
}

/// serde_json's compact format, but with the characters [`is_hidden`] finds written as
/// `\uXXXX` escapes (a surrogate pair past U+FFFF), as JSON allows for any character.
/// serde_json escapes control characters itself, and writes the rest as they are.
struct Visible;

impl serde_json::ser::Formatter for Visible {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut from = 0;
        for (at, c) in fragment.char_indices() {
            if !is_hidden(c) {
                continue;
            }
            writer.write_all(&fragment.as_bytes()[from..at])?;
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                write!(writer, "\\u{unit:04x}")?;
            }
            from = at + c.len_utf8();
        }
        writer.write_all(&fragment.as_bytes()[from..])
    }
}
