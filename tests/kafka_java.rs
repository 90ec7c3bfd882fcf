//! Differential tests against Apache Kafka's own codec: the generated classes of
//! `kafka-clients` 4.4.0 that the broker and the Java client run, behind the JSON-lines peer
//! in `interop/java` (built here with Maven, one JVM per test).
//!
//! 1. For thousands of pseudo-random messages of every version and kind (the generator of
//!    `tests/differential.rs`): Kafka's writer and ours produce the same frame, byte for byte;
//!    Kafka reads our frame to the values we built, leaving nothing over; we read Kafka's
//!    frame to the same values.
//! 2. Every corpus frame: Kafka reads it to the values we read, and writes it back to the
//!    same bytes.
//! 3. Every class of malformed or unusual input that `shared/DESIGN.md`'s table lists: Kafka
//!    accepts or refuses it as the table says, and so do we (or we are stricter where the
//!    table says so).
//!
//! Needs `java` and `mvn` on PATH (and Maven Central, the first time). Without them each test
//! prints one line saying it was skipped and passes; `KEL_SKIP_JAVA=1` skips on purpose.
//! `.ci/run` always has them.

mod common;
mod gen;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use gen::*;
use kafka_elect_leaders::VERSIONS;
use kafka_elect_leaders::{
    parse_request, parse_response, EncodeRequest, EncodeResponse, ErrorKind, MAX_STRING_LEN,
};
use serde_json::{json, Value};

/// Messages per (kind, version) sent through Kafka.
const JAVA_CASES: u64 = 2000;

// ---------------------------------------------------------------------------------------
// The peer

/// The peer's classpath, built once per test binary; `None` when Java or Maven is missing.
fn classpath() -> Option<&'static str> {
    static CLASSPATH: OnceLock<Option<String>> = OnceLock::new();
    CLASSPATH.get_or_init(build_peer).as_deref()
}

/// One line on the real stderr (libtest captures `eprintln!` of passing tests).
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// `interop/java` built with Maven: its classpath.
fn build_peer() -> Option<String> {
    kafka_elect_leaders_testkit::kafka_tables::interop_classpath(
        "kafka_java",
        "run Apache Kafka's codec",
    )
}

/// Sends every command to a fresh peer and returns its replies, in order. A writer thread
/// feeds the pipe while this thread reads, so neither side blocks on a full pipe.
fn ask(classpath: &str, commands: Vec<Value>) -> Vec<Value> {
    let mut child = Command::new("java")
        .args(["-Xss4m", "-XX:+UseSerialGC", "-cp", classpath])
        .arg("interop.ElectLeadersPeer")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("java starts");
    let mut stdin = child.stdin.take().unwrap();
    let count = commands.len();
    let writer = std::thread::spawn(move || {
        let mut out = std::io::BufWriter::new(&mut stdin);
        for c in &commands {
            serde_json::to_writer(&mut out, c).unwrap();
            out.write_all(b"\n").unwrap();
        }
        out.flush().unwrap();
    });
    let replies: Vec<Value> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|l| serde_json::from_str(&l.expect("peer output")).expect("peer speaks JSON"))
        .collect();
    writer.join().unwrap();
    assert!(child.wait().unwrap().success(), "the Kafka peer failed");
    assert_eq!(replies.len(), count, "one reply per command");
    replies
}

macro_rules! peer_or_skip {
    () => {
        match classpath() {
            Some(cp) => cp,
            None => return,
        }
    };
}

// ---------------------------------------------------------------------------------------
// JSON, in the crate's names (DESIGN's contract), both ways

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn from_hex(text: &str) -> Vec<u8> {
    let clean: Vec<u8> = text
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b'|')
        .collect();
    assert!(clean.len() % 2 == 0, "odd hex: {text}");
    clean
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
        .collect()
}

fn tags_json(tags: &Tags) -> Value {
    tags.iter()
        .map(|(tag, data)| json!({"tag": tag, "data": to_hex(data)}))
        .collect()
}

fn tags_from(v: &Value) -> Tags {
    v.as_array()
        .expect("tagged fields are an array")
        .iter()
        .map(|t| {
            let tag = t["tag"].as_u64().expect("tag") as u32;
            (tag, from_hex(t["data"].as_str().expect("data")))
        })
        .collect()
}

fn string_from(v: &Value) -> Option<String> {
    v.as_str().map(str::to_owned)
}

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

fn request_json(g: &GenRequest) -> Value {
    json!({
        "api_key": 43,
        "api_version": g.version,
        "correlation_id": g.correlation_id,
        "client_id": g.client_id,
        "header_tagged_fields": tags_json(&g.header_tags),
        "election_type": g.election_type,
        "topic_partitions": g.topics.as_ref().map(|topics| topics.iter().map(|t| json!({
            "topic": t.name,
            "partitions": t.partitions,
            "tagged_fields": tags_json(&t.tags),
        })).collect::<Vec<_>>()),
        "timeout_ms": g.timeout_ms,
        "tagged_fields": tags_json(&g.tags),
    })
}

fn request_from(m: &Value) -> GenRequest {
    assert_eq!(m["api_key"], 43);
    GenRequest {
        version: int(&m["api_version"]) as i16,
        correlation_id: int(&m["correlation_id"]) as i32,
        client_id: string_from(&m["client_id"]),
        header_tags: tags_from(&m["header_tagged_fields"]),
        election_type: int(&m["election_type"]) as i8,
        topics: m["topic_partitions"].as_array().map(|topics| {
            topics
                .iter()
                .map(|t| GenTopic {
                    name: string_from(&t["topic"]).expect("a topic name"),
                    partitions: t["partitions"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|p| int(p) as i32)
                        .collect(),
                    tags: tags_from(&t["tagged_fields"]),
                })
                .collect()
        }),
        timeout_ms: int(&m["timeout_ms"]) as i32,
        tags: tags_from(&m["tagged_fields"]),
    }
}

fn response_json(g: &GenResponse) -> Value {
    json!({
        "api_version": g.version,
        "correlation_id": g.correlation_id,
        "header_tagged_fields": tags_json(&g.header_tags),
        "throttle_time_ms": g.throttle_time_ms,
        "error_code": g.error_code,
        "replica_election_results": g.results.iter().map(|r| json!({
            "topic": r.topic,
            "partition_result": r.partitions.iter().map(|p| json!({
                "partition_id": p.partition_id,
                "error_code": p.error_code,
                "error_message": p.error_message,
                "tagged_fields": tags_json(&p.tags),
            })).collect::<Vec<_>>(),
            "tagged_fields": tags_json(&r.tags),
        })).collect::<Vec<_>>(),
        "tagged_fields": tags_json(&g.tags),
    })
}

fn response_from(m: &Value) -> GenResponse {
    GenResponse {
        version: int(&m["api_version"]) as i16,
        correlation_id: int(&m["correlation_id"]) as i32,
        header_tags: tags_from(&m["header_tagged_fields"]),
        throttle_time_ms: int(&m["throttle_time_ms"]) as i32,
        error_code: int(&m["error_code"]) as i16,
        results: m["replica_election_results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| GenResult {
                topic: string_from(&r["topic"]).expect("a topic name"),
                partitions: r["partition_result"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| GenPartition {
                        partition_id: int(&p["partition_id"]) as i32,
                        error_code: int(&p["error_code"]) as i16,
                        error_message: string_from(&p["error_message"]),
                        tags: tags_from(&p["tagged_fields"]),
                    })
                    .collect(),
                tags: tags_from(&r["tagged_fields"]),
            })
            .collect(),
        tags: tags_from(&m["tagged_fields"]),
    }
}

fn decode_request_cmd(frame: &[u8]) -> Value {
    json!({"op": "decode_request", "frame": to_hex(frame)})
}

fn decode_response_cmd(frame: &[u8], version: i16) -> Value {
    json!({"op": "decode_response", "version": version, "frame": to_hex(frame)})
}

/// A reply's `ok`, or a panic that shows Kafka's error.
fn ok<'a>(reply: &'a Value, ctx: &str) -> &'a Value {
    assert_eq!(
        reply["ok"], true,
        "{ctx}: Kafka refused: {}",
        reply["error"]
    );
    reply
}

fn reply_frame(reply: &Value, key: &str) -> Vec<u8> {
    from_hex(
        reply[key]
            .as_str()
            .unwrap_or_else(|| panic!("no {key} in {reply}")),
    )
}

/// Kafka's writer refuses an unknown tagged field numbered `i32::MAX`, which it uses as an
/// end marker; its reader accepts one. Ours writes it (README, "What the codec guarantees").
fn has_max_tag(tag_lists: &[&Tags]) -> bool {
    tag_lists
        .iter()
        .any(|tags| tags.iter().any(|(tag, _)| *tag == i32::MAX as u32))
}

fn request_tag_lists(g: &GenRequest) -> Vec<&Tags> {
    let mut all = vec![&g.header_tags, &g.tags];
    all.extend(g.topics.iter().flatten().map(|t| &t.tags));
    all
}

fn response_tag_lists(g: &GenResponse) -> Vec<&Tags> {
    let mut all = vec![&g.header_tags, &g.tags];
    for r in &g.results {
        all.push(&r.tags);
        all.extend(r.partitions.iter().map(|p| &p.tags));
    }
    all
}

/// What Kafka's broker path reports for a request: `RequestHeader.parse` replaces a null
/// client id with an empty one (the generated reader reads null; the broker then normalizes).
/// We keep the null that is on the wire.
fn as_the_broker_sees_it(g: &GenRequest) -> GenRequest {
    GenRequest {
        client_id: Some(g.client_id.clone().unwrap_or_default()),
        ..g.clone()
    }
}

fn assert_max_tag_refused(reply: &Value, ctx: &str) {
    assert_eq!(reply["ok"], false, "{ctx}: Kafka wrote tag 2147483647");
    let error = reply["error"].as_str().unwrap();
    assert!(
        error.contains("2147483647"),
        "{ctx}: Kafka refused for another reason: {error}"
    );
}

// ---------------------------------------------------------------------------------------
// 1. Random messages, both directions

#[test]
fn random_requests_agree_with_apache_kafka() {
    let cp = peer_or_skip!();
    let mut cases = Vec::new();
    let mut commands = Vec::new();
    for version in VERSIONS {
        for case in 0..JAVA_CASES {
            let seed = case_seed(0, version, case);
            let ctx = format!("request v{version} case {case} (seed {seed:#018x})");
            let g = gen_request(&mut Rng::new(seed), version, case % HUGE_EVERY == HUGE_AT);
            let ours = encode_ours_request(&g, &ctx);
            commands.push(json!({"op": "encode_request", "message": request_json(&g)}));
            commands.push(decode_request_cmd(&ours));
            cases.push((ctx, g, ours));
        }
    }
    let replies = ask(cp, commands);
    let mut compared = 0;
    let mut refused_max_tag = 0;
    let mut nulled_client_ids = 0;
    for ((ctx, g, ours), reply) in cases.iter().zip(replies.chunks(2)) {
        let (written, read) = (&reply[0], &reply[1]);
        // Kafka reads our frame to the values we built, every byte of it.
        let read = ok(read, ctx);
        assert_eq!(read["trailing"], 0, "{ctx}: Kafka left bytes unread");
        let seen = as_the_broker_sees_it(g);
        assert_eq!(
            request_from(&read["message"]),
            seen,
            "{ctx}: Kafka's view of our frame"
        );
        nulled_client_ids += usize::from(g.client_id.is_none());
        if has_max_tag(&request_tag_lists(g)) {
            assert_max_tag_refused(written, ctx);
            refused_max_tag += 1;
            continue;
        }
        // The same bytes from both writers, and Kafka writes back what it read.
        let theirs = reply_frame(ok(written, ctx), "frame");
        assert_same_bytes(ours, &theirs, ctx);
        // Kafka writes back what it read: with an empty client id where ours was null.
        let rewritten = if g.client_id.is_none() {
            encode_ours_request(&seen, ctx)
        } else {
            ours.clone()
        };
        assert_same_bytes(&reply_frame(read, "reencoded"), &rewritten, ctx);
        // We read Kafka's frame to the same values.
        let parsed = parse_request(&theirs).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        assert_eq!(
            &request_model(&parsed, ctx),
            g,
            "{ctx}: our view of Kafka's"
        );
        compared += 1;
    }
    say(&format!(
        "kafka_java: {} requests through Apache Kafka, {compared} byte-compared, \
         {refused_max_tag} with tag 2147483647 (Kafka's writer refuses it), \
         {nulled_client_ids} null client ids read as empty by the broker's path",
        cases.len()
    ));
    assert_eq!(compared + refused_max_tag, cases.len());
    assert!(compared * 4 > cases.len() * 3 && nulled_client_ids > 0);
}

#[test]
fn random_responses_agree_with_apache_kafka() {
    let cp = peer_or_skip!();
    let mut cases = Vec::new();
    let mut commands = Vec::new();
    for version in VERSIONS {
        for case in 0..JAVA_CASES {
            let seed = case_seed(1, version, case);
            let ctx = format!("response v{version} case {case} (seed {seed:#018x})");
            let g = gen_response(&mut Rng::new(seed), version, case % HUGE_EVERY == HUGE_AT);
            let ours = encode_ours_response(&g, &ctx);
            commands.push(json!({"op": "encode_response", "message": response_json(&g)}));
            commands.push(decode_response_cmd(&ours, version));
            cases.push((ctx, g, ours));
        }
    }
    let replies = ask(cp, commands);
    let mut compared = 0;
    let mut refused_max_tag = 0;
    for ((ctx, g, ours), reply) in cases.iter().zip(replies.chunks(2)) {
        let (written, read) = (&reply[0], &reply[1]);
        let read = ok(read, ctx);
        assert_eq!(read["trailing"], 0, "{ctx}: Kafka left bytes unread");
        assert_eq!(
            &response_from(&read["message"]),
            g,
            "{ctx}: Kafka's view of our frame"
        );
        if has_max_tag(&response_tag_lists(g)) {
            assert_max_tag_refused(written, ctx);
            refused_max_tag += 1;
            continue;
        }
        let theirs = reply_frame(ok(written, ctx), "frame");
        assert_same_bytes(ours, &theirs, ctx);
        assert_same_bytes(&reply_frame(read, "reencoded"), ours, ctx);
        let parsed = parse_response(&theirs, g.version).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        assert_eq!(
            &response_model(&parsed, ctx),
            g,
            "{ctx}: our view of Kafka's"
        );
        compared += 1;
    }
    say(&format!(
        "kafka_java: {} responses through Apache Kafka, {compared} byte-compared, \
         {refused_max_tag} with tag 2147483647 (Kafka's writer refuses it)",
        cases.len()
    ));
    assert_eq!(compared + refused_max_tag, cases.len());
    assert!(compared * 4 > cases.len() * 3);
}

// ---------------------------------------------------------------------------------------
// 2. The corpus

#[test]
fn corpus_frames_agree_with_apache_kafka() {
    let cp = peer_or_skip!();
    let mut commands = Vec::new();
    let mut frames = Vec::new();
    for frame in common::load_corpus() {
        let version = match frame.kind() {
            common::Kind::Request => None,
            common::Kind::Response { version } => Some(version),
        };
        commands.push(match version {
            None => decode_request_cmd(&frame.bytes),
            Some(v) => decode_response_cmd(&frame.bytes, v),
        });
        frames.push((frame.name, frame.bytes, version));
    }
    for ((name, bytes, version), reply) in frames.iter().zip(ask(cp, commands)) {
        let ctx = name.as_str();
        let reply = ok(&reply, ctx);
        assert_eq!(reply["trailing"], 0, "{ctx}");
        match version {
            None => {
                let ours = request_model(&parse_request(bytes).unwrap(), ctx);
                let seen = as_the_broker_sees_it(&ours);
                assert_eq!(request_from(&reply["message"]), seen, "{ctx}");
                let rewritten = if ours.client_id.is_none() {
                    encode_ours_request(&seen, ctx)
                } else {
                    bytes.clone()
                };
                assert_same_bytes(&reply_frame(reply, "reencoded"), &rewritten, ctx);
            }
            Some(v) => {
                assert_same_bytes(&reply_frame(reply, "reencoded"), bytes, ctx);
                let ours = parse_response(bytes, *v).unwrap();
                assert_eq!(
                    response_from(&reply["message"]),
                    response_model(&ours, ctx),
                    "{ctx}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// 3. DESIGN's table of unusual and malformed input, re-measured against Kafka 4.x

/// What a reader does with an input.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Read {
    /// Reads it.
    Accepts,
    /// Refuses it; Kafka's message contains this text.
    Refuses(&'static str),
}

/// What our reader does, when it differs from Kafka on purpose.
#[derive(Clone, Copy, Debug)]
enum Ours {
    /// The same as Kafka (accepts, or refuses).
    Same,
    /// Refuses what Kafka accepts, with this error kind (DESIGN: "stricter").
    Stricter(fn(&ErrorKind) -> bool),
    /// Accepts but keeps the bytes Kafka replaces (invalid UTF-8).
    KeepsBytes,
}

struct Case {
    name: &'static str,
    /// `None`: a request; `Some(v)`: a response of version `v`.
    response: Option<i16>,
    /// Hex of everything after the size prefix (`|` and spaces for layout).
    body: &'static str,
    kafka: Read,
    ours: Ours,
    /// What Kafka's writer does with what it read (unknown tags out of order, tag MAX).
    kafka_rewrite: Read,
}

fn framed(body: &str) -> Vec<u8> {
    let body = from_hex(body);
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    frame
}

// Request headers (api key 43) and the minimal bodies of the reference page.
// v2: api key, version, correlation id 0, client id "" (int16 length), no header tags.
// v2 body: election type 0, one topic "" with partition 0, no topic tags, timeout 0, no tags.
fn cases() -> Vec<Case> {
    let long_topic: &'static str = Box::leak(
        format!(
            "002b 0002 00000000 0000 00 | 00 02 {} {} 02 00000000 00 00000000 00",
            "8180 02", // compact length 32769: a 32768-byte name
            "61".repeat(MAX_STRING_LEN + 1)
        )
        .into_boxed_str(),
    );
    let max_topic: &'static str = Box::leak(
        format!(
            "002b 0002 00000000 0000 00 | 00 02 {} {} 02 00000000 00 00000000 00",
            "8080 02", // compact length 32768: a 32767-byte name
            "61".repeat(MAX_STRING_LEN)
        )
        .into_boxed_str(),
    );
    let same = Ours::Same;
    let ok = Read::Accepts;
    vec![
        Case {
            name: "the reference 29-byte request",
            response: None,
            body: "002b 0002 00000000 0000 00 | 00 02 01 02 00000000 00 00000000 00",
            kafka: ok,
            ours: same,
            kafka_rewrite: ok,
        },
        Case {
            name: "non-minimal varint in an array count (82 00 for 2)",
            response: None,
            body: "002b 0002 00000000 0000 00 | 00 8200 01 02 00000000 00 00000000 00",
            kafka: ok,
            ours: same,
            kafka_rewrite: ok,
        },
        Case {
            name: "non-minimal varint in a tag and a tag size",
            response: None,
            body: "002b 0002 00000000 0000 00 | 00 02 01 02 00000000 00 00000000 01 8500 8100 aa",
            kafka: ok,
            ours: same,
            kafka_rewrite: ok,
        },
        Case {
            name: "5-byte varint with the high bit set in its 5th byte",
            response: None,
            body: "002b 0002 00000000 0000 00 | 00 8080808080 00 01 02 00000000 00 00000000 00",
            kafka: Read::Refuses("Varint is too long"),
            ours: same,
            kafka_rewrite: ok,
        },
        Case {
            name: "5-byte varint whose value does not fit 32 bits (tag count 2^32 + 1)",
            response: None,
            body: "002b 0002 00000000 0000 00 | 00 02 01 02 00000000 00 00000000 8180808010 00 00",
            kafka: ok,
            ours: Ours::Stricter(|k| matches!(k, ErrorKind::VarintOverflow)),
            kafka_rewrite: ok,
        },
        Case {
            name: "client id with int16 length -2 (nullable: null)",
            response: None,
            body: "002b 0002 00000000 fffe 00 | 00 02 01 02 00000000 00 00000000 00",
            kafka: ok,
            ours: same,
            kafka_rewrite: ok,
        },
        Case {
            name: "topic with int16 length -1 at v0 (not nullable)",
            response: None,
            body: "002b 0000 00000000 0000 | 00000001 ffff 00000001 00000000 00000000",
            kafka: Read::Refuses("non-nullable field topic was serialized as null"),
            ours: same,
            kafka_rewrite: ok,
        },
        Case {
            name: "topic with compact length 0 at v2 (null, not nullable)",
            response: None,
            body: "002b 0002 00000000 0000 00 | 00 02 00 02 00000000 00 00000000 00",
            kafka: Read::Refuses("non-nullable field topic was serialized as null"),
            ours: same,
            kafka_rewrite: ok,
        },
        Case {
            name: "TopicPartitions count -2 at v0 (nullable: null, all partitions)",
            response: None,
            body: "002b 0000 00000000 0000 | fffffffe 00000000",
            kafka: ok,
            ours: same,
            kafka_rewrite: ok,
        },
        Case {
            name: "partitions count -1 at v0 (not nullable)",
            response: None,
            body: "002b 0000 00000000 0000 | 00000001 0000 ffffffff 00000000",
            kafka: Read::Refuses("non-nullable field partitions was serialized as null"),
            ours: same,
            kafka_rewrite: ok,
        },
        Case {
            name: "partitions compact count 0 at v2 (null, not nullable)",
            response: None,
            body: "002b 0002 00000000 0000 00 | 00 02 01 00 00 00000000 00",
            kafka: Read::Refuses("non-nullable field partitions was serialized as null"),
            ours: same,
            kafka_rewrite: ok,
        },
        Case {
            name: "response results count -1 at v0 (not nullable)",
            response: Some(0),
            body: "00000000 | 00000000 ffffffff",
            kafka: Read::Refuses("non-nullable field replicaElectionResults was serialized as null"),
            ours: same,
            kafka_rewrite: ok,
        },
        Case {
            name: "topic name of 32767 bytes",
            response: None,
            body: max_topic,
            kafka: ok,
            ours: same,
            kafka_rewrite: ok,
        },
        Case {
            name: "topic name of 32768 bytes",
            response: None,
            body: long_topic,
            kafka: Read::Refuses("string field topic had invalid length 32768"),
            ours: same,
            kafka_rewrite: ok,
        },
        Case {
            name: "array count larger than the bytes that remain",
            response: None,
            body: "002b 0002 00000000 0000 00 | 00 7f 01 02 00000000 00 00000000 00",
            kafka: Read::Refuses("Tried to allocate a collection of size 126"),
            ours: same,
            kafka_rewrite: ok,
        },
        Case {
            name: "int32 partition count larger than the bytes that remain (v0)",
            response: None,
            body: "002b 0000 00000000 0000 | 00000001 0000 000f4240 00000000 00000000",
            kafka: Read::Refuses("Tried to allocate a collection of size 1000000"),
            ours: same,
            kafka_rewrite: ok,
        },
        Case {
            name: "tagged field whose size runs past the end",
            response: None,
            body: "002b 0002 00000000 0000 00 | 00 02 01 02 00000000 00 00000000 01 00 05 aa",
            kafka: Read::Refuses(""),
            ours: same,
            kafka_rewrite: ok,
        },
        Case {
            name: "unknown tagged fields out of order (5 then 3)",
            response: None,
            body: "002b 0002 00000000 0000 00 | 00 02 01 02 00000000 00 00000000 02 05 00 03 00",
            kafka: ok,
            ours: same,
            kafka_rewrite: Read::Refuses("tag 3 comes after tag 5"),
        },
        Case {
            name: "unknown tagged field repeated (3 twice)",
            response: None,
            body: "002b 0002 00000000 0000 00 | 00 02 01 02 00000000 00 00000000 02 03 00 03 00",
            kafka: ok,
            ours: same,
            kafka_rewrite: Read::Refuses("tag 3 comes after tag 3"),
        },
        Case {
            name: "unknown tagged field numbered 2147483647",
            response: None,
            body: "002b 0002 00000000 0000 00 | 00 02 01 02 00000000 00 00000000 01 ffffffff07 01 aa",
            kafka: ok,
            ours: same,
            kafka_rewrite: Read::Refuses("Attempted to use tag 2147483647 as an undefined tag"),
        },
        Case {
            name: "the same topic twice",
            response: None,
            body: "002b 0002 00000000 0000 00 | 00 03 0261 02 00000001 00 0261 02 00000001 00 00000000 00",
            kafka: ok,
            ours: same,
            kafka_rewrite: ok,
        },
        Case {
            name: "election type 2 at v1",
            response: None,
            body: "002b 0001 00000000 0000 | 02 00000000 00000000",
            kafka: ok,
            ours: same,
            kafka_rewrite: ok,
        },
        Case {
            name: "election type -1 at v2",
            response: None,
            body: "002b 0002 00000000 0000 00 | ff 01 00000000 00",
            kafka: ok,
            ours: same,
            kafka_rewrite: ok,
        },
        Case {
            name: "invalid UTF-8 in a topic name (80)",
            response: None,
            body: "002b 0002 00000000 0000 00 | 00 02 0280 02 00000000 00 00000000 00",
            kafka: ok,
            ours: Ours::KeepsBytes,
            kafka_rewrite: ok,
        },
        Case {
            name: "a byte left after the body, inside the frame",
            response: None,
            body: "002b 0002 00000000 0000 00 | 00 02 01 02 00000000 00 00000000 00 | aa",
            kafka: ok,
            ours: Ours::Stricter(|k| matches!(k, ErrorKind::TrailingBytes { count: 1 })),
            kafka_rewrite: ok,
        },
        Case {
            name: "api version 3",
            response: None,
            body: "002b 0003 00000000 0000 00 | 00 02 01 02 00000000 00 00000000 00",
            kafka: Read::Refuses("version 3"),
            ours: same,
            kafka_rewrite: ok,
        },
        Case {
            name: "response with a byte left after the body",
            response: Some(2),
            body: "00000000 00 | 00000000 0000 01 00 | aa",
            kafka: ok,
            ours: Ours::Stricter(|k| matches!(k, ErrorKind::TrailingBytes { count: 1 })),
            kafka_rewrite: ok,
        },
        Case {
            name: "response error message with int16 length -5 (nullable: null)",
            response: Some(1),
            body: "00000000 | 00000000 0000 00000001 0001 61 00000001 00000000 0000 fffb",
            kafka: ok,
            ours: same,
            kafka_rewrite: ok,
        },
    ]
}

#[test]
fn unusual_input_is_read_as_apache_kafka_reads_it() {
    let cp = peer_or_skip!();
    let cases = cases();
    let frames: Vec<Vec<u8>> = cases.iter().map(|c| framed(c.body)).collect();
    let commands = cases
        .iter()
        .zip(&frames)
        .map(|(c, frame)| match c.response {
            None => decode_request_cmd(frame),
            Some(v) => decode_response_cmd(frame, v),
        })
        .collect();
    let replies = ask(cp, commands);
    let mut table = String::new();
    for ((c, frame), reply) in cases.iter().zip(&frames).zip(&replies) {
        let ctx = c.name;
        let kafka_read = if reply["ok"] == true {
            Read::Accepts
        } else {
            Read::Refuses("")
        };
        let error = reply["error"].as_str().unwrap_or("");
        table.push_str(&format!(
            "  {:<70} Kafka: {}\n",
            c.name,
            if kafka_read == Read::Accepts {
                format!(
                    "read{}; writes back: {}",
                    match reply["trailing"].as_u64() {
                        Some(0) | None => String::new(),
                        Some(n) => format!(" ({n} bytes ignored)"),
                    },
                    reply["reencode_error"].as_str().unwrap_or("ok")
                )
            } else {
                format!("refused: {error}")
            }
        ));
        // Kafka does what DESIGN's table says.
        match c.kafka {
            Read::Accepts => {
                ok(reply, ctx);
            }
            Read::Refuses(text) => {
                assert_eq!(reply["ok"], false, "{ctx}: Kafka read it: {reply}");
                assert!(error.contains(text), "{ctx}: Kafka says {error:?}");
            }
        }
        if c.kafka == Read::Accepts {
            match c.kafka_rewrite {
                Read::Accepts => assert!(
                    reply.get("reencoded").is_some(),
                    "{ctx}: Kafka's writer refused what it read: {}",
                    reply["reencode_error"]
                ),
                Read::Refuses(text) => {
                    let e = reply["reencode_error"]
                        .as_str()
                        .unwrap_or_else(|| panic!("{ctx}: Kafka's writer wrote it back: {reply}"));
                    assert!(e.contains(text), "{ctx}: Kafka's writer says {e:?}");
                }
            }
        }
        // And we do the same, or what DESIGN says we do instead.
        let ours = match c.response {
            None => parse_request(frame).map(|r| {
                let mut out = vec![0u8; frame.len() + 16];
                (
                    request_model_lossy(&r),
                    r.encode(r.version(), &mut out).map(|n| out[..n].to_vec()),
                )
            }),
            Some(v) => parse_response(frame, v).map(|r| {
                let mut out = vec![0u8; frame.len() + 16];
                (
                    serde_json::to_value(format!("{:?}", response_model(&r, ctx))).unwrap(),
                    r.encode(v, &mut out).map(|n| out[..n].to_vec()),
                )
            }),
        };
        match (c.kafka, c.ours, &ours) {
            (Read::Refuses(_), Ours::Same, Err(_)) => {}
            (Read::Accepts, Ours::Stricter(kind), Err(e)) => {
                assert!(kind(&e.kind), "{ctx}: we refused, but with {e}")
            }
            (Read::Accepts, Ours::Same | Ours::KeepsBytes, Ok((_, written))) => {
                // Our writer refuses exactly what Kafka's refuses, except tag 2147483647.
                let kafka_writes = c.kafka_rewrite == Read::Accepts;
                let max_tag = ctx.contains("2147483647");
                assert_eq!(
                    written.is_ok(),
                    kafka_writes || max_tag,
                    "{ctx}: our writer: {written:?}"
                );
                if let (Ok(ours), Some(theirs)) = (written, reply["reencoded"].as_str()) {
                    if parse_request(frame).is_ok_and(|r| r.header().client_id().is_none()) {
                        // Kafka writes the empty client id its broker path made of the null.
                        assert_eq!(from_hex(theirs)[12..14], [0, 0], "{ctx}");
                    } else if matches!(c.ours, Ours::KeepsBytes) {
                        // Kafka wrote U+FFFD (ef bf bd) where the byte 80 was; we kept it.
                        assert_eq!(ours.as_slice(), frame.as_slice(), "{ctx}");
                        assert_ne!(from_hex(theirs), *frame, "{ctx}");
                    } else {
                        assert_same_bytes(ours, &from_hex(theirs), ctx);
                    }
                }
            }
            (kafka, ours_rule, result) => panic!(
                "{ctx}: Kafka {kafka:?}, expected ours {}, got {:?}",
                match ours_rule {
                    Ours::Same => "the same",
                    Ours::Stricter(_) => "stricter",
                    Ours::KeepsBytes => "bytes kept",
                },
                result.as_ref().map(|_| "accepted")
            ),
        }
        // Values, where both read: compared through Kafka's own re-encoding, which we read.
        if let (Ok((model, _)), Some(theirs)) = (&ours, reply["reencoded"].as_str()) {
            if c.response.is_none() && !matches!(c.ours, Ours::KeepsBytes) {
                let again = from_hex(theirs);
                let theirs = parse_request(&again).unwrap();
                assert_eq!(&request_model_lossy(&theirs), model, "{ctx}");
            }
        }
    }
    say(&format!(
        "kafka_java: DESIGN's table against Apache Kafka 4.4.0:\n{table}"
    ));
}

/// A request's values as text, names read lossily (for the invalid UTF-8 case).
fn request_model_lossy(r: &kafka_elect_leaders::ElectLeadersRequest<'_>) -> Value {
    let topics = r.topic_partitions().map(|list| {
        list.iter()
            .map(|t| {
                json!({
                    "topic": String::from_utf8_lossy(t.topic()),
                    "partitions": t.partitions().iter().collect::<Vec<_>>(),
                    "tags": t.tagged_fields().iter().map(|f| (f.tag(), to_hex(f.data()))).collect::<Vec<_>>(),
                })
            })
            .collect::<Vec<_>>()
    });
    json!({
        "version": r.version(),
        // As the broker's path reports it: null read as empty.
        "client_id": String::from_utf8_lossy(r.header().client_id().unwrap_or_default()),
        "election_type": r.election_type().0,
        "topics": topics,
        "timeout_ms": r.timeout_ms(),
        "tags": r.tagged_fields().iter().map(|f| (f.tag(), to_hex(f.data()))).collect::<Vec<_>>(),
    })
}

// ---------------------------------------------------------------------------------------
// 4. What both writers refuse

#[test]
fn both_writers_refuse_the_same_messages() {
    let cp = peer_or_skip!();
    let base = GenRequest {
        version: 0,
        correlation_id: 7,
        client_id: Some("c".into()),
        header_tags: Tags::new(),
        election_type: 0,
        topics: Some(vec![GenTopic {
            name: "t".into(),
            partitions: vec![0],
            tags: Tags::new(),
        }]),
        timeout_ms: 60_000,
        tags: Tags::new(),
    };
    let response = GenResponse {
        version: 0,
        correlation_id: 7,
        header_tags: Tags::new(),
        throttle_time_ms: 0,
        error_code: 0,
        results: Vec::new(),
        tags: Tags::new(),
    };
    let long = "t".repeat(MAX_STRING_LEN + 1);
    let requests: Vec<(&str, GenRequest, &str)> = vec![
        (
            "election type 1 at v0",
            GenRequest {
                election_type: 1,
                ..base.clone()
            },
            "non-default electionType at version 0",
        ),
        (
            "body tagged fields at v1",
            GenRequest {
                version: 1,
                tags: vec![(1, vec![])],
                ..base.clone()
            },
            "version 1 of this message does not support them",
        ),
        (
            "header tagged fields at v1 (request header v1)",
            GenRequest {
                version: 1,
                header_tags: vec![(1, vec![])],
                ..base.clone()
            },
            "does not support them",
        ),
        (
            "a 32768-byte topic at v2",
            GenRequest {
                version: 2,
                topics: Some(vec![GenTopic {
                    name: long.clone(),
                    partitions: vec![],
                    tags: Tags::new(),
                }]),
                ..base.clone()
            },
            "'topic' field is too long to be serialized",
        ),
        (
            "a 32768-byte client id at v2",
            GenRequest {
                version: 2,
                client_id: Some(long.clone()),
                ..base.clone()
            },
            "too long",
        ),
        (
            "unknown tags out of order at v2",
            GenRequest {
                version: 2,
                tags: vec![(5, vec![]), (3, vec![])],
                ..base.clone()
            },
            "tag 3 comes after tag 5",
        ),
    ];
    let responses: Vec<(&str, GenResponse, &str)> = vec![
        (
            "response error code 31 at v0",
            GenResponse {
                error_code: 31,
                ..response.clone()
            },
            "non-default errorCode at version 0",
        ),
        (
            "response tagged fields at v1",
            GenResponse {
                version: 1,
                tags: vec![(0, vec![1])],
                ..response.clone()
            },
            "version 1 of this message does not support them",
        ),
    ];
    let mut commands: Vec<Value> = requests
        .iter()
        .map(|(_, g, _)| json!({"op": "encode_request", "message": request_json(g)}))
        .collect();
    commands.extend(
        responses
            .iter()
            .map(|(_, g, _)| json!({"op": "encode_response", "message": response_json(g)})),
    );
    let replies = ask(cp, commands);
    let (request_replies, response_replies) = replies.split_at(requests.len());
    for ((ctx, g, text), reply) in requests.iter().zip(request_replies) {
        assert_eq!(reply["ok"], false, "{ctx}: Kafka wrote it");
        let error = reply["error"].as_str().unwrap();
        assert!(error.contains(text), "{ctx}: Kafka says {error:?}");
        let ours = with_request_data(g, |data| data.encoded_len(g.version));
        assert!(ours.is_err(), "{ctx}: our writer measured it: {ours:?}");
    }
    for ((ctx, g, text), reply) in responses.iter().zip(response_replies) {
        assert_eq!(reply["ok"], false, "{ctx}: Kafka wrote it");
        let error = reply["error"].as_str().unwrap();
        assert!(error.contains(text), "{ctx}: Kafka says {error:?}");
        let ours = with_response_data(g, |data| data.encoded_len(g.version));
        assert!(ours.is_err(), "{ctx}: our writer measured it: {ours:?}");
    }
}

// ---------------------------------------------------------------------------------------
// 5. Kafka's API keys, named as Kafka names them

#[test]
fn api_names_are_kafkas() {
    let cp = peer_or_skip!();
    let reply = &ask(cp, vec![json!({"op": "api_keys"})])[0];
    let keys = ok(reply, "api_keys")["api_keys"].as_array().unwrap();
    assert!(keys.len() > 90);
    let mut highest = 0;
    for key in keys {
        let id = int(&key["id"]) as i16;
        highest = highest.max(id);
        assert_eq!(
            kafka_elect_leaders::api_name(id),
            key["name"].as_str(),
            "api key {id}"
        );
        // Every version Kafka serves counts as a known request; the next one does not.
        let latest = int(&key["latest"]) as i16;
        if latest >= 0 {
            for v in int(&key["oldest"]) as i16..=latest {
                assert!(kafka_elect_leaders::is_known_request(id, v), "{id} v{v}");
            }
            assert!(
                !kafka_elect_leaders::is_known_request(id, latest + 1),
                "{id}"
            );
        }
    }
    assert_eq!(kafka_elect_leaders::api_name(highest + 1), None);
}
