//! An audit line as a CloudEvents 1.0 event in the structured JSON format: the event's
//! attributes, and the line itself, its bytes spliced in unchanged, as `data`.
//!
//! ```text
//! {"specversion":"1.0","id":"guard-0:5f1c...:42","source":"urn:elect-leaders:guard:guard-0",
//!  "type":"io.github.elect-leaders.audit.decision","time":"2025-01-01T00:00:00.000Z",
//!  "subject":"payments,orders","datacontenttype":"application/json",
//!  "undeliveredbefore":3,"data":{...the audit line...}}
//! ```
//!
//! `undeliveredbefore` (an extension attribute: CloudEvents names are lowercase letters and
//! digits only) is there only when records before this one were not delivered.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

/// The CloudEvents version written.
pub const SPEC_VERSION: &str = "1.0";

/// The events' `type`: a decision of the guard, as its audit line tells it.
pub const EVENT_TYPE: &str = "io.github.elect-leaders.audit.decision";

/// The Kafka record header `content-type` of a structured-mode CloudEvent (the CloudEvents
/// Kafka protocol binding).
pub const CONTENT_TYPE: &str = "application/cloudevents+json; charset=UTF-8";

/// The name of the extension attribute that counts the records not delivered before this
/// one.
pub const UNDELIVERED_ATTRIBUTE: &str = "undeliveredbefore";

/// The longest audit line made into an event: Kafka's default largest record is 1 MB
/// (`message.max.bytes`), and the event's attributes need room. The guard's lines are at
/// most 64 KiB.
pub const MAX_DATA_BYTES: usize = 900 * 1024;

/// The longest `subject`: topic names past it are counted, not listed.
pub const MAX_SUBJECT_BYTES: usize = 256;

/// The prefix of an event's `source`, followed by the replica id.
pub const SOURCE_PREFIX: &str = "urn:elect-leaders:guard:";

/// Why an audit line cannot be an event's `data`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventError {
    /// Longer than [`MAX_DATA_BYTES`].
    TooLarge,
    /// Not JSON.
    NotJson,
    /// JSON, but not an object.
    NotObject,
}

impl fmt::Display for EventError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EventError::TooLarge => "the audit line is too large for an event",
            EventError::NotJson => "the audit line is not JSON",
            EventError::NotObject => "the audit line is not a JSON object",
        })
    }
}

impl std::error::Error for EventError {}

/// An event's attributes besides `data`.
#[derive(Clone, Copy, Debug)]
pub struct Attributes<'a> {
    /// The event's `id`, unique per event.
    pub id: &'a str,
    /// The replica that decided: the `source` is [`SOURCE_PREFIX`] and this.
    pub replica: &'a str,
    /// The `time` (RFC 3339); `None`: the line's own `"time"`, else now.
    pub time: Option<&'a str>,
    /// The `subject`; `None`: taken from the line ([`subject_of`]).
    pub subject: Option<&'a str>,
    /// Records not delivered before this one; written only when not 0.
    pub undelivered_before: u64,
}

/// The event's `source` for a replica.
pub fn source(replica: &str) -> String {
    format!("{SOURCE_PREFIX}{replica}")
}

/// The structured-mode CloudEvent (JSON) of one audit line: `line` without the white space
/// around it (its newline) is the event's `data`, byte for byte.
pub fn cloud_event(attributes: &Attributes<'_>, line: &[u8]) -> Result<Vec<u8>, EventError> {
    let data = line.trim_ascii();
    if data.len() > MAX_DATA_BYTES {
        return Err(EventError::TooLarge);
    }
    let parsed: Value = serde_json::from_slice(data).map_err(|_| EventError::NotJson)?;
    let Value::Object(fields) = &parsed else {
        return Err(EventError::NotObject);
    };
    let now;
    let time = match attributes.time {
        Some(time) => time,
        None => match fields.get("time").and_then(Value::as_str) {
            Some(time) if looks_like_rfc3339(time) => time,
            _ => {
                now = rfc3339(SystemTime::now());
                &now
            }
        },
    };
    let derived;
    let subject = match attributes.subject {
        Some(subject) => Some(subject),
        None => {
            derived = subject_of(&parsed);
            derived.as_deref()
        }
    };
    let mut out = Vec::with_capacity(data.len() + 512);
    out.extend_from_slice(b"{\"specversion\":\"1.0\",\"id\":");
    push_str(&mut out, attributes.id);
    out.extend_from_slice(b",\"source\":");
    push_str(&mut out, &source(attributes.replica));
    out.extend_from_slice(b",\"type\":");
    push_str(&mut out, EVENT_TYPE);
    out.extend_from_slice(b",\"time\":");
    push_str(&mut out, time);
    if let Some(subject) = subject {
        out.extend_from_slice(b",\"subject\":");
        push_str(&mut out, subject);
    }
    out.extend_from_slice(b",\"datacontenttype\":\"application/json\"");
    if attributes.undelivered_before > 0 {
        out.extend_from_slice(format!(",\"{UNDELIVERED_ATTRIBUTE}\":").as_bytes());
        out.extend_from_slice(attributes.undelivered_before.to_string().as_bytes());
    }
    out.extend_from_slice(b",\"data\":");
    out.extend_from_slice(data);
    out.push(b'}');
    Ok(out)
}

/// A JSON string, escaped as serde_json escapes it.
fn push_str(out: &mut Vec<u8>, text: &str) {
    // Writing a &str to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, text);
}

/// What a decision was about, from its audit line: the topics it names (an ElectLeaders
/// line's `partitions`, comma separated, those past [`MAX_SUBJECT_BYTES`] counted: `a,b
/// (+3 more)`), else its `api_name`, else `ElectLeaders` for an election of every
/// partition, else its `kind` (a filter's line). `None` when the line says none of these.
pub fn subject_of(line: &Value) -> Option<String> {
    let mut names: Vec<String> = Vec::new();
    if let Some(partitions) = line.get("partitions").and_then(Value::as_array) {
        for entry in partitions {
            let name = match entry.get("topic") {
                Some(Value::String(name)) => name.clone(),
                Some(other) => match other.get("hex").and_then(Value::as_str) {
                    Some(hex) => format!("hex:{hex}"),
                    None => continue,
                },
                None => continue,
            };
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    if !names.is_empty() {
        let mut subject = String::new();
        let mut shown = 0;
        for name in &names {
            let more = usize::from(shown > 0) + name.len();
            // Room left for " (+N more)".
            if subject.len() + more + 24 > MAX_SUBJECT_BYTES && shown > 0 {
                break;
            }
            if shown > 0 {
                subject.push(',');
            }
            if name.len() > MAX_SUBJECT_BYTES - 24 {
                // A name longer than the subject: its start, cut on a character boundary.
                let mut end = MAX_SUBJECT_BYTES - 24;
                while !name.is_char_boundary(end) {
                    end -= 1;
                }
                subject.push_str(&name[..end]);
            } else {
                subject.push_str(name);
            }
            shown += 1;
        }
        if shown < names.len() {
            subject.push_str(&format!(" (+{} more)", names.len() - shown));
        }
        return Some(subject);
    }
    if let Some(api) = line.get("api_name").and_then(Value::as_str) {
        return Some(api.to_owned());
    }
    if line.get("election_type").is_some() {
        return Some("ElectLeaders".to_owned());
    }
    line.get("kind").and_then(Value::as_str).map(str::to_owned)
}

/// Whether `text` has the shape of an RFC 3339 date-time (`YYYY-MM-DDTHH:MM:SS`, then a
/// fraction and an offset, or `Z`): a guard's line always has; anything else is replaced.
fn looks_like_rfc3339(text: &str) -> bool {
    let b = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| b[range].iter().all(u8::is_ascii_digit);
    b.len() >= 20
        && b.len() <= 64
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && matches!(b[10], b'T' | b't')
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
        && text.is_ascii()
        && (text.ends_with(['Z', 'z']) || b[b.len() - 6] == b'+' || b[b.len() - 6] == b'-')
}

/// A time in RFC 3339, UTC, with milliseconds: `2025-01-01T00:00:00.000Z`.
pub fn rfc3339(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60,
        since.subsec_millis()
    )
}

/// The proleptic Gregorian date `days` days after 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, for days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const LINE: &str = "{\"time\":\"2025-03-04T05:06:07.089Z\",\"client\":\"127.0.0.1:5\",\
        \"client_id\":\"t\\u202e\",\"version\":2,\"election_type\":\"PREFERRED\",\
        \"partitions\":[{\"topic\":\"payments\",\"partitions\":[0,1]},\
        {\"topic\":{\"hex\":\"ff00\"},\"partitions\":[2]}],\"verdict\":\"allowed\",\
        \"rules\":[],\"n\":1.50}\n";

    fn attributes() -> Attributes<'static> {
        Attributes {
            id: "guard-0:abc:7",
            replica: "guard-0",
            time: None,
            subject: None,
            undelivered_before: 0,
        }
    }

    /// The position of `data`'s value in the event: after the last `"data":`.
    fn data_of(event: &[u8]) -> &[u8] {
        let text = std::str::from_utf8(event).unwrap();
        let at = text.rfind("\"data\":").unwrap() + "\"data\":".len();
        &event[at..event.len() - 1]
    }

    #[test]
    fn an_event_is_json_with_every_attribute() {
        let event = cloud_event(&attributes(), LINE.as_bytes()).unwrap();
        let value: Value = serde_json::from_slice(&event).unwrap();
        assert_eq!(value["specversion"], "1.0");
        assert_eq!(value["id"], "guard-0:abc:7");
        assert_eq!(value["source"], "urn:elect-leaders:guard:guard-0");
        assert_eq!(value["type"], EVENT_TYPE);
        assert_eq!(value["time"], "2025-03-04T05:06:07.089Z");
        assert_eq!(value["subject"], "payments,hex:ff00");
        assert_eq!(value["datacontenttype"], "application/json");
        assert!(value.get(UNDELIVERED_ATTRIBUTE).is_none());
        let line: Value = serde_json::from_str(LINE).unwrap();
        assert_eq!(value["data"], line);
    }

    #[test]
    fn data_is_the_line_byte_for_byte() {
        let event = cloud_event(&attributes(), LINE.as_bytes()).unwrap();
        // Not re-serialised: the escape and the number keep their spelling.
        assert_eq!(data_of(&event), LINE.trim_end().as_bytes());
        assert!(data_of(&event).ends_with(b"\"n\":1.50}"));
    }

    #[test]
    fn undelivered_records_are_counted_in_the_event() {
        let mut attributes = attributes();
        attributes.undelivered_before = 12;
        let event = cloud_event(&attributes, LINE.as_bytes()).unwrap();
        let value: Value = serde_json::from_slice(&event).unwrap();
        assert_eq!(value[UNDELIVERED_ATTRIBUTE], 12);
    }

    #[test]
    fn given_time_and_subject_win() {
        let mut attributes = attributes();
        attributes.time = Some("2030-01-01T00:00:00Z");
        attributes.subject = Some("s\"x");
        let event = cloud_event(&attributes, LINE.as_bytes()).unwrap();
        let value: Value = serde_json::from_slice(&event).unwrap();
        assert_eq!(value["time"], "2030-01-01T00:00:00Z");
        assert_eq!(value["subject"], "s\"x");
    }

    #[test]
    fn subjects_fall_back_to_the_api() {
        let subject = |line: &str| subject_of(&serde_json::from_str(line).unwrap());
        assert_eq!(
            subject(r#"{"api_name":"AlterPartitionReassignments"}"#).as_deref(),
            Some("AlterPartitionReassignments")
        );
        assert_eq!(
            subject(r#"{"election_type":"UNCLEAN","partitions":null}"#).as_deref(),
            Some("ElectLeaders")
        );
        assert_eq!(subject(r#"{"kind":"filter"}"#).as_deref(), Some("filter"));
        assert_eq!(subject(r#"{"verdict":"allowed"}"#), None);
    }

    #[test]
    fn long_subjects_are_cut_and_counted() {
        let topics: Vec<Value> = (0..100)
            .map(|i| serde_json::json!({"topic": format!("topic-{i:03}"), "partitions": [0]}))
            .collect();
        let subject = subject_of(&serde_json::json!({ "partitions": topics })).unwrap();
        assert!(subject.len() <= MAX_SUBJECT_BYTES, "{subject}");
        assert!(subject.starts_with("topic-000,topic-001,"));
        assert!(subject.ends_with("more)"), "{subject}");
        let long = "x".repeat(1000);
        let subject =
            subject_of(&serde_json::json!({"partitions": [{"topic": long}, {"topic": "b"}]}))
                .unwrap();
        assert!(subject.len() <= MAX_SUBJECT_BYTES, "{subject}");
    }

    #[test]
    fn bad_lines_are_refused() {
        let a = attributes();
        assert_eq!(cloud_event(&a, b"nope"), Err(EventError::NotJson));
        assert_eq!(cloud_event(&a, b"[1,2]"), Err(EventError::NotObject));
        assert_eq!(cloud_event(&a, b"{\"a\":1} {"), Err(EventError::NotJson));
        assert_eq!(cloud_event(&a, b""), Err(EventError::NotJson));
        let big = format!("{{\"a\":\"{}\"}}", "x".repeat(MAX_DATA_BYTES));
        assert_eq!(cloud_event(&a, big.as_bytes()), Err(EventError::TooLarge));
    }

    #[test]
    fn a_line_without_time_gets_now() {
        let event = cloud_event(&attributes(), b"{\"time\":\"yesterday\"}").unwrap();
        let value: Value = serde_json::from_slice(&event).unwrap();
        assert!(looks_like_rfc3339(value["time"].as_str().unwrap()));
    }

    #[test]
    fn rfc3339_known_answers() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_709_251_200_123); // 2024-03-01 (leap year)
        assert_eq!(rfc3339(t), "2024-03-01T00:00:00.123Z");
        let t = UNIX_EPOCH + Duration::from_secs(951_782_399); // the last second of 2000-02-28
        assert_eq!(rfc3339(t), "2000-02-28T23:59:59.000Z");
        assert!(looks_like_rfc3339("2024-03-01T00:00:00+01:00"));
        assert!(!looks_like_rfc3339("2024-03-01"));
    }
}
