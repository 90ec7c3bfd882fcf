//! An audit trail checked: its lines read into records of their chains ([`Trail::add`]),
//! then each chain looked at whole ([`Trail::findings`]): the gaps in its sequence numbers,
//! the records out of order, twice, or edited (a hash that does not match the bytes, a
//! `prev` that does not match the hash of the record before). The hash is the guard's
//! (crates/proxy/src/observability/audit/chain.rs), computed here again from its
//! definition rather than with the guard's code, so that the two are checked against each
//! other.

use std::collections::BTreeMap;

use hmac::{Hmac, Mac};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Where a record was read: a line of the input, or a record of the audit topic.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Place {
    /// A line (1-based) of the input named.
    Line { input: String, line: u64 },
    /// A record of the topic.
    #[cfg_attr(not(feature = "audit-topic"), allow(dead_code))]
    Record { partition: i32, offset: i64 },
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Line { input, line } => write!(f, "{input}:{line}"),
            Place::Record { partition, offset } => {
                write!(f, "partition {partition} offset {offset}")
            }
        }
    }
}

impl Serialize for Place {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// What is wrong, by kind; each makes the trail not whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Sequence numbers missing: records removed, or never written.
    Gap,
    /// Sequence numbers missing that the audit topic's producer counted as not delivered
    /// (`undeliveredbefore` of the next event): lost, but said so.
    Undelivered,
    /// A record after one with a higher sequence number: moved.
    Reorder,
    /// A record twice, the same bytes.
    Duplicate,
    /// A record whose bytes do not match its hash, whose `prev` does not match the hash of
    /// the record before, or a second, different record with the same sequence number.
    Edited,
    /// A line that is not JSON.
    NotJson,
    /// A JSON line without the chain fields.
    Unchained,
}

/// One thing wrong.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    pub kind: Kind,
    /// The replica and chain, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replica: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chain: Option<String>,
    /// The sequence number, or the first of those missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// The last sequence number missing (a gap).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_seq: Option<u64>,
    /// Where (for a gap: the record after it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<Place>,
    /// In words.
    pub message: String,
}

/// A chain's record, as read.
#[derive(Debug)]
struct Entry {
    place: Place,
    seq: u64,
    /// The hash the record says it has.
    hash: [u8; 32],
    prev: Option<[u8; 32]>,
    /// Whether its bytes hash to `hash`.
    matches: bool,
    /// `undeliveredbefore` of the event that carried it.
    undelivered: Option<u64>,
    start: Option<Start>,
}

/// What a chain's start record says.
#[derive(Clone, Debug, Serialize)]
pub struct Start {
    pub at: Place,
    pub time: Option<String>,
    pub algorithm: Option<String>,
}

/// A chain as the summary tells it.
#[derive(Debug, Serialize)]
pub struct ChainSummary {
    pub replica: String,
    pub chain: String,
    pub records: usize,
    pub first_seq: u64,
    pub last_seq: u64,
    /// Its start record, when the input has it.
    pub started: Option<Start>,
}

/// Every record read, by replica and chain, and the lines that belong to none.
#[derive(Default)]
pub struct Trail {
    chains: BTreeMap<(String, String), Vec<Entry>>,
    loose: Vec<Finding>,
    records: u64,
}

/// The hash of a record's hashed bytes: SHA-256, or HMAC-SHA-256 under `key`.
pub fn line_hash(key: Option<&[u8]>, bytes: &[u8]) -> [u8; 32] {
    match key {
        None => Sha256::digest(bytes).into(),
        Some(key) => match <Hmac<Sha256> as Mac>::new_from_slice(key) {
            Ok(mut mac) => {
                mac.update(bytes);
                mac.finalize().into_bytes().into()
            }
            // HMAC takes keys of any length.
            Err(_) => [0; 32],
        },
    }
}

/// 64 hex digits as 32 bytes.
fn from_hex(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// The bytes a line's hash covers: the line without its `,"hash":"..."` member, which
/// the guard writes last (None when it does not end so).
fn hashed_bytes(line: &[u8]) -> Option<Vec<u8>> {
    const TAIL: usize = r#","hash":""#.len() + 64 + r#""}"#.len();
    let cut = line.len().checked_sub(TAIL)?;
    let tail = &line[cut..];
    if !tail.starts_with(br#","hash":""#) || !tail.ends_with(br#""}"#) {
        return None;
    }
    let mut bytes = line[..cut].to_vec();
    bytes.push(b'}');
    Some(bytes)
}

impl Trail {
    /// Reads one line (without its newline) read at `place`; `undelivered`: what the event
    /// that carried it says was not delivered before it.
    pub fn add(&mut self, line: &[u8], place: Place, undelivered: Option<u64>, key: Option<&[u8]>) {
        self.records += 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let value: Value = match serde_json::from_slice(line) {
            Ok(value) => value,
            Err(e) => {
                return self.loose.push(Finding {
                    kind: Kind::NotJson,
                    replica: None,
                    chain: None,
                    seq: None,
                    last_seq: None,
                    at: Some(place),
                    message: format!("not JSON ({e})"),
                });
            }
        };
        let field = |name: &str| value.get(name);
        let replica = field("replica").and_then(Value::as_str);
        let chain = field("chain").and_then(Value::as_str);
        let seq = field("seq").and_then(Value::as_u64);
        let hash = field("hash").and_then(Value::as_str).and_then(from_hex);
        let prev = match field("prev") {
            Some(Value::Null) => Some(None),
            Some(Value::String(text)) => from_hex(text).map(Some),
            _ => None,
        };
        let (Some(replica), Some(chain), Some(seq), Some(hash), Some(prev)) =
            (replica, chain, seq, hash, prev)
        else {
            return self.loose.push(Finding {
                kind: Kind::Unchained,
                replica: replica.map(str::to_owned),
                chain: chain.map(str::to_owned),
                seq,
                last_seq: None,
                at: Some(place),
                message: "no chain fields (replica, chain, seq, prev, hash)".to_owned(),
            });
        };
        let matches = hashed_bytes(line).is_some_and(|bytes| line_hash(key, &bytes) == hash);
        let start =
            (field("event").and_then(Value::as_str) == Some("chain-start")).then(|| Start {
                at: place.clone(),
                time: field("time").and_then(Value::as_str).map(str::to_owned),
                algorithm: field("algorithm")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            });
        self.chains
            .entry((replica.to_owned(), chain.to_owned()))
            .or_default()
            .push(Entry {
                place,
                seq,
                hash,
                prev,
                matches,
                undelivered,
                start,
            });
    }

    /// Lines read.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Each chain read, by replica then chain (a chain's id begins with its start's time).
    pub fn chains(&self) -> Vec<ChainSummary> {
        self.chains
            .iter()
            .map(|((replica, chain), entries)| ChainSummary {
                replica: replica.clone(),
                chain: chain.clone(),
                records: entries.len(),
                first_seq: entries.iter().map(|e| e.seq).min().unwrap_or(0),
                last_seq: entries.iter().map(|e| e.seq).max().unwrap_or(0),
                started: entries
                    .iter()
                    .find(|e| e.seq == 0)
                    .and_then(|e| e.start.clone()),
            })
            .collect()
    }

    /// Everything wrong: per chain (in the order of `chains`), by sequence number, then the
    /// lines of no chain in input order. `partial`: a chain's first record may have any
    /// sequence number (the input begins after it: a rotated file, a topic's retention).
    pub fn findings(&self, partial: bool) -> Vec<Finding> {
        let mut all = Vec::new();
        for ((replica, chain), entries) in &self.chains {
            let mut found = Vec::new();
            chain_findings(entries, partial, &mut found);
            found.sort_by_key(|(seq, _, _, _, _)| *seq);
            all.extend(
                found
                    .into_iter()
                    .map(|(seq, last, kind, at, message)| Finding {
                        kind,
                        replica: Some(replica.clone()),
                        chain: Some(chain.clone()),
                        seq: Some(seq),
                        last_seq: last,
                        at,
                        message,
                    }),
            );
        }
        all.extend(self.loose.iter().cloned());
        all
    }
}

/// A chain's finding before it is named: (seq, last seq missing, kind, where, message).
type Found = (u64, Option<u64>, Kind, Option<Place>, String);

fn chain_findings(entries: &[Entry], partial: bool, found: &mut Vec<Found>) {
    // In input order: twice, or after a higher sequence number.
    let mut first: BTreeMap<u64, &Entry> = BTreeMap::new();
    let mut highest: Option<&Entry> = None;
    for entry in entries {
        if !entry.matches {
            found.push((
                entry.seq,
                None,
                Kind::Edited,
                Some(entry.place.clone()),
                "its bytes do not match its hash: edited (or hashed under another key)".to_owned(),
            ));
        }
        if let Some(earlier) = first.get(&entry.seq) {
            let (kind, what) = if earlier.hash == entry.hash && entry.matches {
                (Kind::Duplicate, "a copy of")
            } else {
                (Kind::Edited, "differs from")
            };
            found.push((
                entry.seq,
                None,
                kind,
                Some(entry.place.clone()),
                format!("{what} the record with the same seq at {}", earlier.place),
            ));
            continue;
        }
        first.insert(entry.seq, entry);
        match highest {
            Some(high) if high.seq > entry.seq => found.push((
                entry.seq,
                None,
                Kind::Reorder,
                Some(entry.place.clone()),
                format!("out of order: after seq {} at {}", high.seq, high.place),
            )),
            _ => highest = Some(entry),
        }
    }
    // By sequence number: what is missing, and whether each names the one before.
    let mut gaps = Vec::new();
    let mut before: Option<&Entry> = None;
    for entry in first.values() {
        let expected = match before {
            Some(b) => b.seq + 1,
            None if partial => entry.seq,
            None => 0,
        };
        if entry.seq > expected {
            gaps.push(Gap {
                first: expected,
                last: entry.seq - 1,
                next: entry,
                at_start: before.is_none(),
                counted: 0,
            });
        }
        let link = match (before, entry.prev) {
            (Some(b), Some(prev)) if b.seq + 1 == entry.seq => {
                (prev != b.hash).then(|| format!("its prev is not the hash of seq {}", b.seq))
            }
            (_, None) if entry.seq > 0 => Some("its prev is null, but its seq is not 0".into()),
            (_, Some(_)) if entry.seq == 0 => Some("its prev is not null at seq 0".into()),
            _ => None,
        };
        if let Some(why) = link {
            found.push((
                entry.seq,
                None,
                Kind::Edited,
                Some(entry.place.clone()),
                format!("{why}: this record or the one before was edited"),
            ));
        }
        before = Some(entry);
    }
    // The topic's producer says, on a later record, how many before it were not
    // delivered (not queued, or never acknowledged: not always the ones just before it):
    // each count covers the earliest gaps before its record that are not covered yet.
    for carrier in first.values() {
        let mut count = carrier.undelivered.unwrap_or(0);
        for gap in gaps.iter_mut().filter(|g| g.last < carrier.seq) {
            let open = gap.size() - gap.counted;
            let take = open.min(count);
            gap.counted += take;
            count -= take;
        }
    }
    for gap in gaps {
        let missing = gap.size();
        let (kind, why) = if gap.counted == missing {
            (
                Kind::Undelivered,
                "not delivered, counted by the producer (undeliveredbefore)",
            )
        } else if gap.at_start {
            (Kind::Gap, "missing: the chain's start is not in the input")
        } else {
            (Kind::Gap, "missing")
        };
        found.push((
            gap.first,
            Some(gap.last),
            kind,
            Some(gap.next.place.clone()),
            format!("{missing} record(s) {why}, before {}", gap.next.place),
        ));
    }
}

/// Sequence numbers missing from a chain.
struct Gap<'a> {
    first: u64,
    last: u64,
    /// The record after them.
    next: &'a Entry,
    /// Whether they are the chain's first (no record before them in the input).
    at_start: bool,
    /// How many of them the topic's producer said were not delivered.
    counted: u64,
}

impl Gap<'_> {
    fn size(&self) -> u64 {
        self.last - self.first + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chain's lines as the guard writes them (its code is not used here: these are
    /// made from the definition).
    fn chain(n: usize, key: Option<&[u8]>) -> Vec<String> {
        let mut prev = "null".to_owned();
        (0..n)
            .map(|seq| {
                let body = format!(
                    r#"{{"verdict":"allowed","replica":"r","chain":"c","seq":{seq},"prev":{prev}}}"#
                );
                let hash: String = line_hash(key, body.as_bytes())
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                prev = format!("\"{hash}\"");
                format!(r#"{},"hash":"{hash}"}}"#, &body[..body.len() - 1])
            })
            .collect()
    }

    fn kinds(lines: &[String], key: Option<&[u8]>) -> Vec<(Kind, Option<u64>)> {
        let mut trail = Trail::default();
        for (i, line) in lines.iter().enumerate() {
            let place = Place::Line {
                input: "t".into(),
                line: i as u64 + 1,
            };
            trail.add(line.as_bytes(), place, None, key);
        }
        trail
            .findings(false)
            .into_iter()
            .map(|f| (f.kind, f.seq))
            .collect()
    }

    #[test]
    fn a_whole_chain_has_no_findings_and_each_change_one() {
        let lines = chain(5, None);
        assert_eq!(kinds(&lines, None), []);
        let mut removed = lines.clone();
        removed.remove(2);
        assert_eq!(kinds(&removed, None), [(Kind::Gap, Some(2))]);
        let mut swapped = lines.clone();
        swapped.swap(1, 2);
        assert_eq!(kinds(&swapped, None), [(Kind::Reorder, Some(1))]);
        let mut twice = lines.clone();
        twice.insert(3, lines[3].clone());
        assert_eq!(kinds(&twice, None), [(Kind::Duplicate, Some(3))]);
        let mut edited = lines.clone();
        edited[4] = edited[4].replace("allowed", "refused");
        assert_eq!(kinds(&edited, None), [(Kind::Edited, Some(4))]);
        // A gap the topic's producer counted is said so; one it did not count is a gap.
        let mut trail = Trail::default();
        for (i, line) in lines
            .iter()
            .enumerate()
            .filter(|(i, _)| ![1, 2].contains(i))
        {
            let place = Place::Record {
                partition: 0,
                offset: i as i64,
            };
            let undelivered = (i == 3).then_some(2);
            trail.add(line.as_bytes(), place, undelivered, None);
        }
        let found: Vec<_> = trail
            .findings(false)
            .into_iter()
            .map(|f| (f.kind, f.seq, f.last_seq))
            .collect();
        assert_eq!(found, [(Kind::Undelivered, Some(1), Some(2))]);
        // Counted one record late (a delivery that failed after the next was queued).
        let mut trail = Trail::default();
        for (i, line) in lines.iter().enumerate().filter(|(i, _)| *i != 1) {
            let place = Place::Record {
                partition: 0,
                offset: i as i64,
            };
            trail.add(line.as_bytes(), place, (i == 3).then_some(1), None);
        }
        let found: Vec<_> = trail.findings(false).into_iter().map(|f| f.kind).collect();
        assert_eq!(found, [Kind::Undelivered]);
        // A count short of the gap leaves it a gap.
        let mut trail = Trail::default();
        for (i, line) in lines
            .iter()
            .enumerate()
            .filter(|(i, _)| ![1, 2].contains(i))
        {
            let place = Place::Record {
                partition: 0,
                offset: i as i64,
            };
            trail.add(line.as_bytes(), place, (i == 3).then_some(1), None);
        }
        let found: Vec<_> = trail.findings(false).into_iter().map(|f| f.kind).collect();
        assert_eq!(found, [Kind::Gap]);
        let keyed = chain(3, Some(b"0123456789abcdef"));
        assert_eq!(kinds(&keyed, Some(b"0123456789abcdef")), []);
        assert_eq!(kinds(&keyed, Some(b"0123456789abcdeX")).len(), 3);
        assert_eq!(
            kinds(&["{".to_owned(), "{}".to_owned()], None),
            [(Kind::NotJson, None), (Kind::Unchained, None)]
        );
    }
}
