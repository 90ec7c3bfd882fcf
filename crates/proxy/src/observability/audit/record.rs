//! An audit line's JSON: the decision record ([`DecisionRecord`]), the connection it was
//! made on ([`ConnInfo`]), names written losslessly, characters a reader cannot see
//! escaped, and times in RFC 3339.

use std::io;
use std::net::SocketAddr;

pub use crate::observability::diag::{rfc3339, rfc3339_now};

use kafka_elect_leaders::ElectLeadersRequest;
use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::filters::elect::policy::{Decision, Policy};
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
/// request's bytes as they are written; in a shortened line, only the first of them
/// (`cut`).
#[derive(Clone, Copy)]
struct Topics<'a, 'r> {
    request: &'a ElectLeadersRequest<'r>,
    refused_only: Option<(&'a Policy, &'a Decision)>,
    cut: Option<Cut>,
}

/// What a shortened line shows of a list of topics: its first `topics` topics, and of
/// their partitions the first `partitions`, in order (the last topic shown may be shown in
/// part).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Cut {
    topics: usize,
    partitions: usize,
}

impl<'r> Topics<'_, 'r> {
    /// The topics listed, in order.
    fn listed(&self) -> impl Iterator<Item = kafka_elect_leaders::TopicPartitions<'r>> + '_ {
        let refused_only = self.refused_only;
        self.request
            .topic_partitions()
            .into_iter()
            .flat_map(|list| list.iter())
            .filter(move |t| {
                refused_only
                    .is_none_or(|(policy, decision)| decision.refuses_topic(policy, t.topic()))
            })
    }

    /// The longest cut whose topics take at most `room` bytes of JSON more than an empty
    /// list, measured before anything is written: the cut, the bytes it takes, and the
    /// partitions it leaves out. A topic is shown only with its first partition (or with
    /// none when it has none), and a cut never skips one to show a later one, so what is
    /// shown is the start of the list.
    fn cut_within(&self, room: usize) -> (Cut, usize, usize) {
        let (mut cut, mut used, mut listed) = (Cut::default(), 0usize, 0usize);
        let mut full = false;
        for t in self.listed() {
            let partitions = t.partitions();
            listed = listed.saturating_add(partitions.len());
            if full {
                continue;
            }
            let header = usize::from(cut.topics > 0).saturating_add(json_len(&Topic {
                topic: Name(t.topic()),
                partitions: [0i32; 0],
            }));
            let mut cost = header;
            let mut shown = 0;
            for p in partitions {
                let more = usize::from(shown > 0) + int_len(p);
                if used.saturating_add(cost).saturating_add(more) > room {
                    break;
                }
                cost += more;
                shown += 1;
            }
            if used.saturating_add(cost) > room || (shown == 0 && !partitions.is_empty()) {
                full = true;
                continue;
            }
            used += cost;
            cut.topics += 1;
            cut.partitions += shown;
            full = shown < partitions.len();
        }
        (cut, used, listed.saturating_sub(cut.partitions))
    }
}

impl Serialize for Topics<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.request.topic_partitions().is_none() {
            return s.serialize_none();
        }
        let Some(cut) = self.cut else {
            return s.collect_seq(self.listed().map(|t| Topic {
                topic: Name(t.topic()),
                partitions: Partitions(t.partitions()),
            }));
        };
        let mut left = cut.partitions;
        s.collect_seq(self.listed().take(cut.topics).map(|t| {
            let shown = t.partitions().len().min(left);
            left -= shown;
            Topic {
                topic: Name(t.topic()),
                partitions: FirstPartitions(t.partitions(), shown),
            }
        }))
    }
}

/// The first partitions of a topic, for a shortened line.
struct FirstPartitions<'a>(kafka_elect_leaders::Int32List<'a>, usize);

impl Serialize for FirstPartitions<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.into_iter().take(self.1))
    }
}

/// The bytes of `value`'s JSON in an audit line, counted without writing it.
pub(crate) fn json_len(value: &impl Serialize) -> usize {
    let mut counted = Counted(0);
    let mut json = serde_json::Serializer::with_formatter(&mut counted, Visible);
    // Counting cannot fail, nor can any of the lines' values.
    let _ = value.serialize(&mut json);
    counted.0
}

/// The digits (and sign) of `n` written as JSON.
fn int_len(n: i32) -> usize {
    let digits = n
        .unsigned_abs()
        .checked_ilog10()
        .map_or(1, |d| d as usize + 1);
    digits + usize::from(n < 0)
}

/// A writer that only counts the bytes written to it.
struct Counted(usize);

impl io::Write for Counted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 = self.0.saturating_add(buf.len());
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
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
pub(crate) struct RuleList(pub(crate) crate::filters::elect::policy::Rules);

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
/// whole refusal, `message`; last, in a line shortened to fit the share of the audit queue
/// it is counted against ([`DecisionRecord::line_fitted_to`]), `truncated` (`true`) and
/// `left_out` (`{"partitions": N, "refused": N}`: the partitions of each list not written;
/// `refused` only for a refusal).
pub struct DecisionRecord<'a, 'r> {
    conn: &'a ConnInfo,
    principal: Option<&'a str>,
    policy: &'a Policy,
    request: &'a ElectLeadersRequest<'r>,
    decision: &'a Decision,
    shortened: Option<Shortened>,
}

/// What a shortened line shows of its lists, and how many partitions each leaves out.
#[derive(Clone, Copy, Debug)]
struct Shortened {
    partitions: Cut,
    refused: Cut,
    left_out: LeftOut,
}

/// The partitions of each list a shortened line does not write.
#[derive(Clone, Copy, Debug, serde::Serialize)]
struct LeftOut {
    partitions: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    refused: Option<usize>,
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
            shortened: None,
        }
    }

    /// Whether the decision lists refused partitions (`refused`).
    fn lists_refused(&self) -> bool {
        !matches!(
            self.decision.refusal,
            crate::filters::elect::policy::Refusal::Nothing
        )
    }

    /// The list of the request's partitions, or of those refused, cut as `cut` says.
    fn topics(&self, refused: bool, cut: Option<Cut>) -> Topics<'_, 'r> {
        Topics {
            request: self.request,
            refused_only: refused.then_some((self.policy, self.decision)),
            cut,
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

    /// [`DecisionRecord::line_within`] `limit` bytes, or else the line shortened to fit
    /// them: its lists of partitions cut (what is refused given half the room first), with
    /// `"truncated": true` and how many partitions each list leaves out, so that a request
    /// too large for its line is audited all the same (issue 42, item 6: its refusal was
    /// left unaudited). None only when even a line with both lists empty is larger than
    /// `limit`. The room is measured before anything is written ("measure, then write"):
    /// at most one line is written past the full one given up.
    pub fn line_fitted_to(&self, limit: usize) -> Option<String> {
        if let Some(line) = self.line_within(limit) {
            return Some(line);
        }
        let all = self.topics(false, None);
        let refused = self.topics(true, None);
        let (_, _, partitions) = all.cut_within(0);
        let (_, _, refused_partitions) = refused.cut_within(0);
        let lists_refused = self.lists_refused();
        let empty = DecisionRecord {
            shortened: Some(Shortened {
                partitions: Cut::default(),
                refused: Cut::default(),
                // The most it can leave out: the counts written are never longer.
                left_out: LeftOut {
                    partitions,
                    refused: lists_refused.then_some(refused_partitions),
                },
            }),
            ..*self
        };
        let room = limit.checked_sub(json_len(&empty).saturating_add(1))?;
        let (refused_cut, used, refused_left) = if lists_refused {
            refused.cut_within(room / 2)
        } else {
            (Cut::default(), 0, 0)
        };
        let (partitions_cut, _, partitions_left) = all.cut_within(room - used);
        let shortened = DecisionRecord {
            shortened: Some(Shortened {
                partitions: partitions_cut,
                refused: refused_cut,
                left_out: LeftOut {
                    partitions: partitions_left,
                    refused: lists_refused.then_some(refused_left),
                },
            }),
            ..*self
        };
        shortened.line_within(limit)
    }

    /// [`DecisionRecord::line`], or None as soon as it grows past `limit` bytes: a line
    /// too large to be queued is never written out whole (a request of the largest frame
    /// size would make a line of several times its size).
    pub fn line_within(&self, limit: usize) -> Option<String> {
        line_within(self, limit)
    }
}

/// `value` as one audit line of JSON, with its newline and [`Visible`] escapes, or None as
/// soon as it grows past `limit` bytes.
pub(crate) fn line_within(value: &impl Serialize, limit: usize) -> Option<String> {
    let mut line = Capped {
        bytes: Vec::with_capacity(256.min(limit)),
        limit,
    };
    let mut json = serde_json::Serializer::with_formatter(&mut line, Visible);
    value.serialize(&mut json).ok()?;
    io::Write::write_all(&mut line, b"\n").ok()?;
    String::from_utf8(line.bytes).ok()
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
        let cut = self.shortened.map(|c| (c.partitions, c.refused));
        map.serialize_entry("partitions", &self.topics(false, cut.map(|c| c.0)))?;
        map.serialize_entry("partition_count", &decision.requested)?;
        map.serialize_entry("verdict", decision.verdict.name())?;
        map.serialize_entry("rules", &RuleList(decision.rules))?;
        let refused = self.topics(true, cut.map(|c| c.1));
        match &decision.refusal {
            crate::filters::elect::policy::Refusal::Nothing => {}
            crate::filters::elect::policy::Refusal::Whole { message } => {
                map.serialize_entry("refused", &refused)?;
                map.serialize_entry("whole", &true)?;
                map.serialize_entry("message", message)?;
            }
            crate::filters::elect::policy::Refusal::Partitions { .. } => {
                map.serialize_entry("refused", &refused)?;
                map.serialize_entry("whole", &false)?;
            }
        }
        if let Some(shortened) = &self.shortened {
            map.serialize_entry("truncated", &true)?;
            map.serialize_entry("left_out", &shortened.left_out)?;
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
