//! Two brokers' answers to one request, compared (`fuzz --target A --compare B`, whose
//! campaign is [`super::compare`]): what each broker did ([`Outcome`]), each answer
//! reduced to what the two must agree on, and the fields on which they differ
//! ([`Comparison`], [`Difference`]). What is normalized away and why is said in
//! [`super::compare`]'s documentation and in FUZZING.md.
//!
//! Only the comparison: no connection, no campaign, no output (the campaign prints each
//! [`Difference`] and the counts).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use kafka_elect_leaders::{
    has_top_level_error_code, parse_response, ElectLeadersResponse, ErrorCode, TaggedFields,
};
use kafka_elect_leaders_json::hex::to_hex;

/// A partition whose election the broker gave up on when the request's `TimeoutMs` ran out.
const REQUEST_TIMED_OUT: ErrorCode = ErrorCode(7);

/// A request whose `TimeoutMs` is under this may run out of time on one broker and not on
/// the other: REQUEST_TIMED_OUT on one side only is then a race, not a difference.
pub const SHORT_TIMEOUT_MS: i32 = 1000;

/// What one broker did with one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A whole frame, size prefix included.
    Answer(Vec<u8>),
    /// The connection was closed (or reset, or refused the write) with no answer.
    Closed(String),
    /// No answer within the wait.
    Timeout,
}

impl Outcome {
    fn kind(&self) -> &'static str {
        match self {
            Outcome::Answer(_) => "answer",
            Outcome::Closed(_) => "closed",
            Outcome::Timeout => "timeout",
        }
    }
}

/// One field on which the two answers differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// Where: `outcome`, `frame`, `correlation_id`, `error_code`, `tagged_fields`,
    /// `replica_election_results[topic=T]`, `…partition_result[partition_id=P].error_code`, …
    pub path: String,
    /// What A's answer has there, and B's.
    pub a: String,
    pub b: String,
    /// The path without topic names and partition ids, and the values when they say what
    /// kind of difference it is (error codes, presence, outcomes): one line of the summary.
    pub class: String,
}

impl Difference {
    fn new(path: String, a: String, b: String, values_in_class: bool) -> Difference {
        let mut class = String::new();
        let (mut inside, mut escaped) = (false, false);
        for c in path.chars() {
            match c {
                _ if escaped => escaped = false,
                '\\' if inside => escaped = true,
                '[' if !inside => {
                    inside = true;
                    class.push_str("[]");
                }
                ']' if inside => inside = false,
                c if !inside => class.push(c),
                _ => {}
            }
        }
        if values_in_class {
            let _ = write!(class, ": {a} / {b}");
        }
        Difference { path, a, b, class }
    }
}

/// What comparing two answers found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Comparison {
    pub differences: Vec<Difference>,
    /// Equal once sorted, not as answered.
    pub order_only: bool,
    /// The throttle times differed (normalized away).
    pub throttle_normalized: bool,
    /// Partitions whose error codes agree and whose messages do not (normalized away).
    pub messages_normalized: u64,
    /// Partitions (and whole answers) that timed out on one side only, for a request whose
    /// `TimeoutMs` is short (normalized away): REQUEST_TIMED_OUT, or in version 0 an answer
    /// without results; the request's deadline ran out on that broker and not on the other.
    pub timed_out_one_side: u64,
}

type Tags = Vec<(u32, Vec<u8>)>;

fn tags(fields: TaggedFields<'_>) -> Tags {
    fields
        .iter()
        .map(|f| (f.tag(), f.data().to_vec()))
        .collect()
}

/// One answer for a partition: what must agree, and its message (compared only when the
/// codes do not agree, which is then the difference reported).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    code: i16,
    tags: Tags,
    message: Option<Vec<u8>>,
}

/// A response reduced to what two brokers must agree on, keyed rather than ordered.
struct Normal {
    correlation_id: i32,
    throttle_time_ms: i32,
    error_code: i16,
    header_tags: Tags,
    body_tags: Tags,
    /// Per topic: the tagged fields of each of its entries (sorted).
    topics: BTreeMap<Vec<u8>, Vec<Tags>>,
    /// Per (topic, partition): each answer given for it (sorted).
    partitions: BTreeMap<(Vec<u8>, i32), Vec<Entry>>,
    /// (topic, partition) in the order answered.
    order: Vec<(Vec<u8>, i32)>,
}

impl Normal {
    fn of(r: &ElectLeadersResponse<'_>) -> Normal {
        let mut n = Normal {
            correlation_id: r.correlation_id(),
            throttle_time_ms: r.throttle_time_ms(),
            error_code: r.error_code().0,
            header_tags: tags(r.header().tagged_fields()),
            body_tags: tags(r.tagged_fields()),
            topics: BTreeMap::new(),
            partitions: BTreeMap::new(),
            order: Vec::new(),
        };
        for t in r.replica_election_results() {
            n.topics
                .entry(t.topic().to_vec())
                .or_default()
                .push(tags(t.tagged_fields()));
            for p in t.partition_result() {
                let key = (t.topic().to_vec(), p.partition_id());
                n.order.push(key.clone());
                n.partitions.entry(key).or_default().push(Entry {
                    code: p.error_code().0,
                    tags: tags(p.tagged_fields()),
                    message: p.error_message().map(<[u8]>::to_vec),
                });
            }
        }
        for v in n.topics.values_mut() {
            v.sort();
        }
        for v in n.partitions.values_mut() {
            v.sort();
        }
        n
    }
}

/// A topic name for a path: as it is when short UTF-8, else cut, or in hex; `\`, `[` and
/// `]` escaped with `\`, so that the path's brackets stay the path's.
fn topic_name(t: &[u8]) -> String {
    const SHOWN: usize = 48;
    let escape = |s: &str| {
        let mut e = String::with_capacity(s.len());
        for c in s.chars() {
            if matches!(c, '\\' | '[' | ']') {
                e.push('\\');
            }
            e.push(c);
        }
        e
    };
    match std::str::from_utf8(t) {
        Ok(s) if s.chars().count() <= SHOWN => escape(s),
        Ok(s) => format!(
            "{}…({} bytes)",
            escape(&s.chars().take(SHOWN).collect::<String>()),
            t.len()
        ),
        Err(_) if t.len() <= SHOWN / 2 => format!("hex:{}", to_hex(t)),
        Err(_) => format!("hex:{}…({} bytes)", to_hex(&t[..SHOWN / 2]), t.len()),
    }
}

/// An error code and its name, for text.
pub(super) fn code(c: i16) -> String {
    match ErrorCode(c).name() {
        Some(name) => format!("{c} {name}"),
        None => c.to_string(),
    }
}

fn show_tags(t: &Tags) -> String {
    if t.is_empty() {
        return "none".into();
    }
    let each: Vec<String> = t
        .iter()
        .map(|(tag, data)| format!("tag {tag} ({} bytes)", data.len()))
        .collect();
    each.join(", ")
}

fn codes(entries: &[Entry]) -> Vec<i16> {
    let mut c: Vec<i16> = entries.iter().map(|e| e.code).collect();
    c.sort_unstable();
    c
}

/// Compares two parsed answers after normalization; `short_timeout`: the request's
/// `TimeoutMs` is under [`SHORT_TIMEOUT_MS`].
pub fn compare_responses(
    a: &ElectLeadersResponse<'_>,
    b: &ElectLeadersResponse<'_>,
    short_timeout: bool,
) -> Comparison {
    let version = a.version();
    let (a, b) = (Normal::of(a), Normal::of(b));
    let mut c = Comparison {
        throttle_normalized: a.throttle_time_ms != b.throttle_time_ms,
        ..Comparison::default()
    };
    let d = &mut c.differences;
    if a.correlation_id != b.correlation_id {
        d.push(Difference::new(
            "correlation_id".into(),
            a.correlation_id.to_string(),
            b.correlation_id.to_string(),
            false,
        ));
    }
    // The whole request timed out on one side only: at the top level (v1+), or, in version
    // 0, which cannot say so, as an answer without results against one with some (for a
    // request naming partitions, each partition says REQUEST_TIMED_OUT: below). Nothing
    // else of a timed-out answer can be compared.
    let timed_out = |n: &Normal| {
        n.error_code == REQUEST_TIMED_OUT.0
            || (!has_top_level_error_code(version) && n.topics.is_empty())
    };
    if short_timeout && timed_out(&a) != timed_out(&b) {
        c.timed_out_one_side += 1;
        return c;
    }
    if a.error_code != b.error_code {
        d.push(Difference::new(
            "error_code".into(),
            code(a.error_code),
            code(b.error_code),
            true,
        ));
    }
    for (path, x, y) in [
        ("header_tagged_fields", &a.header_tags, &b.header_tags),
        ("tagged_fields", &a.body_tags, &b.body_tags),
    ] {
        if x != y {
            d.push(Difference::new(
                path.into(),
                show_tags(x),
                show_tags(y),
                false,
            ));
        }
    }
    let mut topics: Vec<&Vec<u8>> = a.topics.keys().chain(b.topics.keys()).collect();
    topics.sort();
    topics.dedup();
    for topic in topics {
        let at = format!("replica_election_results[topic={}]", topic_name(topic));
        let (x, y) = (a.topics.get(topic), b.topics.get(topic));
        let count = |n: &Normal| n.partitions.keys().filter(|(t, _)| t == topic).count();
        match (x, y) {
            (Some(_), None) | (None, Some(_)) => {
                let (na, nb) = (count(&a), count(&b));
                let say = |has: bool, n: usize| {
                    if has {
                        format!("present ({n} partitions)")
                    } else {
                        "absent".to_string()
                    }
                };
                let (sa, sb) = (say(x.is_some(), na), say(y.is_some(), nb));
                let class = |has: bool| if has { "present" } else { "absent" };
                let mut diff = Difference::new(at, sa, sb, false);
                let _ = write!(
                    diff.class,
                    ": {} / {}",
                    class(x.is_some()),
                    class(y.is_some())
                );
                d.push(diff);
                continue;
            }
            (Some(x), Some(y)) if x.len() != y.len() => d.push(Difference::new(
                at.clone(),
                format!("answered {} times", x.len()),
                format!("answered {} times", y.len()),
                false,
            )),
            (Some(x), Some(y)) if x != y => d.push(Difference::new(
                format!("{at}.tagged_fields"),
                x.iter().map(show_tags).collect::<Vec<_>>().join("; "),
                y.iter().map(show_tags).collect::<Vec<_>>().join("; "),
                false,
            )),
            _ => {}
        }
        let mut ids: Vec<i32> = a
            .partitions
            .keys()
            .chain(b.partitions.keys())
            .filter(|(t, _)| t == topic)
            .map(|(_, p)| *p)
            .collect();
        ids.sort_unstable();
        ids.dedup();
        for id in ids {
            let key = (topic.clone(), id);
            let at = format!("{at}.partition_result[partition_id={id}]");
            match (a.partitions.get(&key), b.partitions.get(&key)) {
                (Some(x), Some(y)) if x.len() != y.len() => d.push(Difference::new(
                    at,
                    format!("answered {} times", x.len()),
                    format!("answered {} times", y.len()),
                    false,
                )),
                (Some(x), Some(y)) => {
                    let (cx, cy) = (codes(x), codes(y));
                    let timed_out = |c: &[i16]| c.iter().all(|&c| c == REQUEST_TIMED_OUT.0);
                    if cx != cy && short_timeout && (timed_out(&cx) || timed_out(&cy)) {
                        c.timed_out_one_side += 1;
                        continue;
                    }
                    if cx != cy {
                        let show =
                            |c: &[i16]| c.iter().map(|&c| code(c)).collect::<Vec<_>>().join(", ");
                        d.push(Difference::new(
                            format!("{at}.error_code"),
                            show(&cx),
                            show(&cy),
                            true,
                        ));
                        continue;
                    }
                    let tx: Vec<&Tags> = x.iter().map(|e| &e.tags).collect();
                    let ty: Vec<&Tags> = y.iter().map(|e| &e.tags).collect();
                    if tx != ty {
                        d.push(Difference::new(
                            format!("{at}.tagged_fields"),
                            tx.iter()
                                .map(|t| show_tags(t))
                                .collect::<Vec<_>>()
                                .join("; "),
                            ty.iter()
                                .map(|t| show_tags(t))
                                .collect::<Vec<_>>()
                                .join("; "),
                            false,
                        ));
                    }
                    let mx: Vec<&Option<Vec<u8>>> = x.iter().map(|e| &e.message).collect();
                    let my: Vec<&Option<Vec<u8>>> = y.iter().map(|e| &e.message).collect();
                    if mx != my {
                        c.messages_normalized += 1;
                    }
                }
                (x, y) => {
                    let say = |e: Option<&Vec<Entry>>| match e {
                        Some(e) => format!("present ({})", code(e[0].code)),
                        None => "absent".to_string(),
                    };
                    let mut diff = Difference::new(at, say(x), say(y), false);
                    let side =
                        |e: Option<&Vec<Entry>>| if e.is_some() { "present" } else { "absent" };
                    let _ = write!(diff.class, ": {} / {}", side(x), side(y));
                    d.push(diff);
                }
            }
        }
    }
    c.order_only = c.differences.is_empty() && a.order != b.order;
    c
}

/// Compares what the two brokers did with a request sent at `version` (`short_timeout`: see
/// [`compare_responses`]).
pub fn compare_outcomes(a: &Outcome, b: &Outcome, version: i16, short_timeout: bool) -> Comparison {
    let (x, y) = match (a, b) {
        (Outcome::Answer(x), Outcome::Answer(y)) => (x, y),
        (Outcome::Closed(_), Outcome::Closed(_)) | (Outcome::Timeout, Outcome::Timeout) => {
            return Comparison::default()
        }
        _ => {
            return Comparison {
                differences: vec![Difference::new(
                    "outcome".into(),
                    a.kind().into(),
                    b.kind().into(),
                    true,
                )],
                ..Comparison::default()
            }
        }
    };
    match (parse_response(x, version), parse_response(y, version)) {
        (Ok(x), Ok(y)) => compare_responses(&x, &y, short_timeout),
        (Err(_), Err(_)) if x == y => Comparison::default(),
        (ex, ey) => {
            let say = |r: Result<ElectLeadersResponse<'_>, kafka_elect_leaders::Error>| match r {
                Ok(_) => "parses".to_string(),
                Err(e) => format!("refused: {e}"),
            };
            let class = |r: &Result<_, _>| if r.is_ok() { "parses" } else { "refused" };
            let (ca, cb) = (class(&ex), class(&ey));
            let mut diff = Difference::new("frame".into(), say(ex), say(ey), false);
            let _ = write!(diff.class, ": {ca} / {cb}");
            Comparison {
                differences: vec![diff],
                ..Comparison::default()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A partition's result: id, error code, message.
    type P<'a> = (i32, i16, Option<&'a str>);

    /// A version 1 response, written here byte by byte (not with the library's writer).
    fn v1(id: i32, throttle: i32, error: i16, topics: &[(&str, &[P<'_>])]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&id.to_be_bytes());
        b.extend_from_slice(&throttle.to_be_bytes());
        b.extend_from_slice(&error.to_be_bytes());
        b.extend_from_slice(&(topics.len() as i32).to_be_bytes());
        for (topic, parts) in topics {
            b.extend_from_slice(&(topic.len() as i16).to_be_bytes());
            b.extend_from_slice(topic.as_bytes());
            b.extend_from_slice(&(parts.len() as i32).to_be_bytes());
            for (p, code, message) in *parts {
                b.extend_from_slice(&p.to_be_bytes());
                b.extend_from_slice(&code.to_be_bytes());
                match message {
                    Some(m) => {
                        b.extend_from_slice(&(m.len() as i16).to_be_bytes());
                        b.extend_from_slice(m.as_bytes());
                    }
                    None => b.extend_from_slice(&(-1i16).to_be_bytes()),
                }
            }
        }
        let mut f = (b.len() as i32).to_be_bytes().to_vec();
        f.extend_from_slice(&b);
        f
    }

    fn compare(a: &[u8], b: &[u8]) -> Comparison {
        compare_outcomes(
            &Outcome::Answer(a.to_vec()),
            &Outcome::Answer(b.to_vec()),
            1,
            true,
        )
    }

    fn paths(c: &Comparison) -> Vec<&str> {
        c.differences.iter().map(|d| d.path.as_str()).collect()
    }

    const UNKNOWN: i16 = 3;
    const NOT_NEEDED: i16 = 84;
    const SERVER: i16 = -1;

    #[test]
    fn the_same_answer_is_no_difference() {
        let f = v1(1, 0, 0, &[("t", &[(0, UNKNOWN, Some("No such topic"))])]);
        assert_eq!(compare(&f, &f), Comparison::default());
    }

    #[test]
    fn throttle_time_is_normalized_and_counted() {
        let a = v1(1, 0, 0, &[("t", &[(0, 0, None)])]);
        let b = v1(1, 250, 0, &[("t", &[(0, 0, None)])]);
        let c = compare(&a, &b);
        assert!(c.differences.is_empty(), "{c:?}");
        assert!(c.throttle_normalized);
    }

    #[test]
    fn messages_are_normalized_only_where_the_codes_agree() {
        let a = v1(
            1,
            0,
            0,
            &[("t", &[(0, UNKNOWN, Some("No such topic as t"))])],
        );
        let b = v1(1, 0, 0, &[("t", &[(0, UNKNOWN, None)])]);
        let c = compare(&a, &b);
        assert!(c.differences.is_empty(), "{c:?}");
        assert_eq!(c.messages_normalized, 1);

        let b = v1(
            1,
            0,
            0,
            &[("t", &[(0, SERVER, Some("No such topic as t"))])],
        );
        let c = compare(&a, &b);
        assert_eq!(
            paths(&c),
            ["replica_election_results[topic=t].partition_result[partition_id=0].error_code"]
        );
        let d = &c.differences[0];
        assert_eq!(d.a, "3 UNKNOWN_TOPIC_OR_PARTITION");
        assert_eq!(d.b, "-1 UNKNOWN_SERVER_ERROR");
        assert_eq!(
            d.class,
            "replica_election_results[].partition_result[].error_code: \
             3 UNKNOWN_TOPIC_OR_PARTITION / -1 UNKNOWN_SERVER_ERROR"
        );
        assert_eq!(c.messages_normalized, 0);
    }

    #[test]
    fn a_partition_timed_out_on_one_side_only_is_normalized_and_counted() {
        let a = v1(
            1,
            0,
            0,
            &[("t", &[(0, UNKNOWN, Some("No such topic")), (1, 0, None)])],
        );
        let b = v1(1, 0, 0, &[("t", &[(0, 7, None), (1, 0, None)])]);
        let c = compare(&a, &b);
        assert!(c.differences.is_empty(), "{c:?}");
        assert_eq!(c.timed_out_one_side, 1);
        assert_eq!(compare(&b, &a).timed_out_one_side, 1);
        // The same at the top level: the whole answer counts once.
        let top = v1(1, 0, 7, &[("t", &[(0, 7, None), (1, 7, None)])]);
        let c = compare(&a, &top);
        assert!(c.differences.is_empty(), "{c:?}");
        assert_eq!(c.timed_out_one_side, 1);
        // A timed-out answer has no results to compare (here, one for all partitions: the
        // other side lists each topic with no partition).
        let all = v1(1, 0, 0, &[("s", &[]), ("t", &[])]);
        let none = v1(1, 0, 7, &[]);
        let c = compare(&all, &none);
        assert!(c.differences.is_empty(), "{c:?}");
        assert_eq!(c.timed_out_one_side, 1);
        // Version 0 cannot say REQUEST_TIMED_OUT for the whole request: it answers no results.
        let v0 = |topics: &[(&str, &[P<'_>])]| {
            let mut f = v1(1, 0, 0, topics);
            f.drain(12..14); // version 0 is version 1 without the top-level error code
            let size = (f.len() - 4) as i32;
            f[..4].copy_from_slice(&size.to_be_bytes());
            f
        };
        let (all, none) = (v0(&[("s", &[]), ("t", &[])]), v0(&[]));
        let at_v0 = |short: bool| {
            let (x, y) = (Outcome::Answer(all.clone()), Outcome::Answer(none.clone()));
            compare_outcomes(&x, &y, 0, short)
        };
        let c = at_v0(true);
        assert!(c.differences.is_empty(), "{c:?}");
        assert_eq!(c.timed_out_one_side, 1);
        let c = at_v0(false);
        assert_eq!(
            paths(&c),
            [
                "replica_election_results[topic=s]",
                "replica_election_results[topic=t]"
            ]
        );
        // Not for a request with a long TimeoutMs: there it is a difference.
        let long = |a: &[u8], b: &[u8]| {
            compare_outcomes(
                &Outcome::Answer(a.to_vec()),
                &Outcome::Answer(b.to_vec()),
                1,
                false,
            )
        };
        let c = long(&a, &top);
        assert_eq!(
            paths(&c),
            [
                "error_code",
                "replica_election_results[topic=t].partition_result[partition_id=0].error_code",
                "replica_election_results[topic=t].partition_result[partition_id=1].error_code",
            ]
        );
        assert_eq!(c.timed_out_one_side, 0);
        // Any other pair of codes is a difference.
        let b = v1(1, 0, 0, &[("t", &[(0, NOT_NEEDED, None), (1, 0, None)])]);
        let c = compare(&a, &b);
        assert_eq!(c.differences.len(), 1);
        assert_eq!(c.timed_out_one_side, 0);
    }

    #[test]
    fn order_is_normalized_and_counted() {
        let x: &[P<'_>] = &[(0, NOT_NEEDED, None), (1, 0, None)];
        let y: &[P<'_>] = &[(1, 0, None), (0, NOT_NEEDED, None)];
        let a = v1(1, 0, 0, &[("s", x), ("t", &[(5, 0, None)])]);
        let b = v1(1, 0, 0, &[("t", &[(5, 0, None)]), ("s", y)]);
        let c = compare(&a, &b);
        assert!(c.differences.is_empty(), "{c:?}");
        assert!(c.order_only);
        assert!(!compare(&a, &a).order_only);
    }

    #[test]
    fn a_partition_or_topic_answered_by_one_side_only_is_a_difference() {
        let a = v1(
            1,
            0,
            0,
            &[("t", &[(0, 0, None), (1, 0, None)]), ("u", &[(0, 0, None)])],
        );
        let b = v1(1, 0, 0, &[("t", &[(0, 0, None)])]);
        let c = compare(&a, &b);
        assert_eq!(
            paths(&c),
            [
                "replica_election_results[topic=t].partition_result[partition_id=1]",
                "replica_election_results[topic=u]",
            ]
        );
        assert_eq!(c.differences[0].a, "present (0 NONE)");
        assert_eq!(c.differences[0].b, "absent");
        assert_eq!(c.differences[1].a, "present (1 partitions)");
        assert_eq!(
            c.differences[1].class,
            "replica_election_results[]: present / absent"
        );
        // The same the other way round.
        let c = compare(&b, &a);
        assert_eq!(
            c.differences[1].class,
            "replica_election_results[]: absent / present"
        );
    }

    #[test]
    fn a_partition_answered_twice_is_a_difference() {
        let a = v1(1, 0, 0, &[("t", &[(0, 0, None), (0, 0, None)])]);
        let b = v1(1, 0, 0, &[("t", &[(0, 0, None)])]);
        let c = compare(&a, &b);
        assert_eq!(
            paths(&c),
            ["replica_election_results[topic=t].partition_result[partition_id=0]"]
        );
        assert_eq!(c.differences[0].a, "answered 2 times");
    }

    #[test]
    fn top_level_error_and_correlation_id_are_compared() {
        let a = v1(1, 0, 0, &[]);
        let b = v1(2, 0, 41, &[]);
        let c = compare(&a, &b);
        assert_eq!(paths(&c), ["correlation_id", "error_code"]);
        assert_eq!(c.differences[1].b, "41 NOT_CONTROLLER");
        assert_eq!(c.differences[0].class, "correlation_id");
    }

    #[test]
    fn unknown_tagged_fields_are_compared() {
        // Version 2, by field: correlation id, header tags, throttle, error code, results
        // (compact: 1 + 1 entries), topic "t", partitions (1 + 1), partition 0, error 0, null
        // message, partition tags, topic tags, body tags (none, or tag 5 with one byte).
        let plain = "00000001|00|00000000|0000|02|0274|02|00000000|0000|00|00|00|00";
        let tagged = "00000001|00|00000000|0000|02|0274|02|00000000|0000|00|00|00|01 05 01 00";
        let frame = |text: &str| {
            let body = kafka_elect_leaders_testkit::hex(text);
            let mut f = (body.len() as i32).to_be_bytes().to_vec();
            f.extend_from_slice(&body);
            f
        };
        let (a, b) = (frame(plain), frame(tagged));
        parse_response(&a, 2).expect("a parses");
        parse_response(&b, 2).expect("b parses");
        let c = compare_outcomes(&Outcome::Answer(a.clone()), &Outcome::Answer(b), 2, true);
        assert_eq!(paths(&c), ["tagged_fields"]);
        assert_eq!(c.differences[0].b, "tag 5 (1 bytes)");
        let c = compare_outcomes(&Outcome::Answer(a.clone()), &Outcome::Answer(a), 2, true);
        assert!(c.differences.is_empty());
    }

    #[test]
    fn outcomes_other_than_an_answer_are_compared_by_kind() {
        let f = Outcome::Answer(v1(1, 0, 0, &[]));
        let closed = Outcome::Closed("reset".into());
        let also_closed = Outcome::Closed("closed".into());
        assert!(compare_outcomes(&closed, &also_closed, 1, true)
            .differences
            .is_empty());
        assert!(
            compare_outcomes(&Outcome::Timeout, &Outcome::Timeout, 1, true)
                .differences
                .is_empty()
        );
        for (a, b, class) in [
            (&f, &closed, "outcome: answer / closed"),
            (&closed, &f, "outcome: closed / answer"),
            (&Outcome::Timeout, &f, "outcome: timeout / answer"),
            (&closed, &Outcome::Timeout, "outcome: closed / timeout"),
        ] {
            let c = compare_outcomes(a, b, 1, true);
            assert_eq!(c.differences.len(), 1, "{class}");
            assert_eq!(c.differences[0].class, class);
        }
    }

    #[test]
    fn an_answer_the_library_refuses_is_compared_as_bytes() {
        let good = v1(1, 0, 0, &[]);
        let mut cut = good.clone();
        cut.truncate(cut.len() - 2);
        let size = (cut.len() - 4) as i32;
        cut[..4].copy_from_slice(&size.to_be_bytes());
        let c = compare(&good, &cut);
        assert_eq!(paths(&c), ["frame"]);
        assert_eq!(c.differences[0].class, "frame: parses / refused");
        assert!(
            c.differences[0].b.starts_with("refused: "),
            "{:?}",
            c.differences[0]
        );
        assert!(compare(&cut, &cut).differences.is_empty());
        let mut other = cut.clone();
        other[4] ^= 1;
        assert_eq!(paths(&compare(&cut, &other)), ["frame"]);
    }

    #[test]
    fn long_and_non_utf8_topic_names_are_shortened_in_paths() {
        assert_eq!(topic_name(b"t"), "t");
        assert_eq!(topic_name(b"a]b[\\"), "a\\]b\\[\\\\");
        let d = Difference::new(
            format!(
                "replica_election_results[topic={}].error_code",
                topic_name(b"x]. [y")
            ),
            "1".into(),
            "2".into(),
            true,
        );
        assert_eq!(d.class, "replica_election_results[].error_code: 1 / 2");
        assert_eq!(topic_name(&[0xff, 0x00]), "hex:ff00");
        let long = "x".repeat(100);
        assert_eq!(
            topic_name(long.as_bytes()),
            format!("{}…(100 bytes)", "x".repeat(48))
        );
    }
}
