//! The `elect-leaders` binary, run on the corpus: golden `inspect` output for the two
//! reference frames, `decode` JSON for every frame, `decode | encode` byte for byte, `scan`
//! on a synthetic capture, malformed input (exit 1, one line naming field and offset),
//! usage errors (exit 2) and `--help`.
//!
//! Golden files live in `tests/golden/`; after a deliberate change of the output, rewrite
//! them with `UPDATE_GOLDEN=1 cargo test -p elect-leaders --test cli` and review the diff.

use kafka_elect_leaders_testkit as common;

mod tool;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{corpus_dir, fix_size, kind_of, load, load_corpus, Kind};
use kafka_elect_leaders::{
    parse_request, parse_response, ElectLeadersRequest, ElectLeadersRequestData,
    ElectLeadersResponse, ElectLeadersResponseData, ElectionType, EncodeRequest, EncodeResponse,
    ErrorCode, PartitionResultData, ReplicaElectionResultData, TaggedFields, TopicPartitionsData,
};
use serde_json::Value;

// ---------------------------------------------------------------------------------------
// Running the binary

/// Runs the binary in `corpus/` (so file names are as short as in the golden files), with
/// `stdin` as standard input and colours left to their default (off: stdout is a pipe).
fn run(args: &[&str], stdin: &[u8]) -> Output {
    run_in(&corpus_dir(), args, stdin)
}

use tool::run_in;

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("stderr is UTF-8")
}

#[track_caller]
fn assert_ok(output: &Output) {
    assert_eq!(
        output.status.code(),
        Some(0),
        "exit status; stderr: {}",
        stderr(output)
    );
    assert!(
        output.stderr.is_empty(),
        "nothing on stderr: {}",
        stderr(output)
    );
}

/// Exit status 1 and exactly one line on stderr, which contains every one of `needles`.
#[track_caller]
fn assert_malformed(output: &Output, needles: &[&str]) -> String {
    assert_eq!(
        output.status.code(),
        Some(1),
        "exit status; stderr: {}",
        stderr(output)
    );
    let err = stderr(output);
    assert_eq!(err.lines().count(), 1, "one line on stderr: {err:?}");
    for needle in needles {
        assert!(err.contains(needle), "stderr {err:?} lacks {needle:?}");
    }
    err
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("elect-leaders-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

// ---------------------------------------------------------------------------------------
// inspect

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

#[track_caller]
fn assert_golden(name: &str, actual: &str) {
    let path = golden(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        let before = std::fs::read_to_string(&path).unwrap_or_default();
        std::fs::write(&path, actual).expect("golden file is writable");
        // A rewrite is never a pass: review the diff, then run the tests again without
        // UPDATE_GOLDEN.
        assert_eq!(
            before, actual,
            "{name}: golden file rewritten (UPDATE_GOLDEN is set); review the diff and \
             run again without it"
        );
        return;
    }
    let expected =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if expected != actual {
        for (i, (e, a)) in expected.lines().zip(actual.lines()).enumerate() {
            assert_eq!(e, a, "{name}: line {} differs", i + 1);
        }
        assert_eq!(
            expected, actual,
            "{name}: output differs from the golden file"
        );
    }
}

#[test]
fn inspect_request_v2_min_matches_golden() {
    let output = run(&["inspect", "request-v2-min.bin"], b"");
    assert_ok(&output);
    assert_golden("inspect-request-v2-min.txt", &stdout(&output));
}

#[test]
fn inspect_response_v2_min_matches_golden() {
    // By name (response-v2-…), and told explicitly: the same output.
    let by_name = run(&["inspect", "response-v2-min.bin"], b"");
    assert_ok(&by_name);
    assert_golden("inspect-response-v2-min.txt", &stdout(&by_name));
    let told = run(
        &[
            "inspect",
            "--response",
            "--version",
            "2",
            "response-v2-min.bin",
        ],
        b"",
    );
    assert_ok(&told);
    assert_eq!(stdout(&told), stdout(&by_name));
}

/// Every field of the reference page's object trees, with its offset and size, as the
/// page gives them (`shared/reference/ElectLeaders.txt`); the header's fields under the
/// names of Kafka's schema (`RequestHeader.json`), as the body's are.
#[test]
fn inspect_offsets_match_the_reference_page() {
    let request: &[(&str, &str)] = &[
        ("ElectLeadersRequest message v2", "[0x0000, 29B]"),
        ("Frame", "[0x0000, 4B]"),
        ("size int32 = 25", "[0x0000, 4B]"),
        ("RequestHeader v2", "[0x0004, 11B]"),
        ("RequestApiKey int16 = 43 (ElectLeaders)", "[0x0004, 2B]"),
        ("RequestApiVersion int16 = 2", "[0x0006, 2B]"),
        ("CorrelationId int32 = 0", "[0x0008, 4B]"),
        (
            "ClientId nullable_string = \"\" (int16 len=0)",
            "[0x000c, 2B]",
        ),
        ("TaggedFields uvarint = 0", "[0x000e, 1B]"),
        ("ElectLeadersRequest struct", "[0x000f, 14B]"),
        ("ElectionType int8 = 0 (PREFERRED)", "[0x000f, 1B]"),
        (
            "TopicPartitions []TopicPartitions = 1 element",
            "[0x0010, 8B]",
        ),
        ("length uvarint = 2 (compact, n+1)", "[0x0010, 1B]"),
        (
            "TopicPartitions[0] TopicPartitions = struct",
            "[0x0011, 7B]",
        ),
        ("Topic string = \"\" (compact, len+1=1)", "[0x0011, 1B]"),
        ("Partitions []int32 = 1 element", "[0x0012, 5B]"),
        ("length uvarint = 2 (compact, n+1)", "[0x0012, 1B]"),
        ("int32[0] int32 = 0", "[0x0013, 4B]"),
        ("TaggedFields uvarint = 0", "[0x0017, 1B]"),
        ("TimeoutMs int32 = 0", "[0x0018, 4B]"),
        ("TaggedFields uvarint = 0", "[0x001c, 1B]"),
    ];
    let response: &[(&str, &str)] = &[
        ("ElectLeadersResponse message v2", "[0x0000, 28B]"),
        ("Frame", "[0x0000, 4B]"),
        ("size int32 = 24", "[0x0000, 4B]"),
        ("ResponseHeader v1", "[0x0004, 5B]"),
        ("CorrelationId int32 = 0", "[0x0004, 4B]"),
        ("TaggedFields uvarint = 0", "[0x0008, 1B]"),
        ("ElectLeadersResponse struct", "[0x0009, 19B]"),
        ("ThrottleTimeMs int32 = 0", "[0x0009, 4B]"),
        ("ErrorCode int16 = 0 (NONE)", "[0x000d, 2B]"),
        (
            "ReplicaElectionResults []ReplicaElectionResult = 1 element",
            "[0x000f, 12B]",
        ),
        ("length uvarint = 2 (compact, n+1)", "[0x000f, 1B]"),
        (
            "ReplicaElectionResult[0] ReplicaElectionResult = struct",
            "[0x0010, 11B]",
        ),
        ("Topic string = \"\" (compact, len+1=1)", "[0x0010, 1B]"),
        (
            "PartitionResult []PartitionResult = 1 element",
            "[0x0011, 9B]",
        ),
        ("length uvarint = 2 (compact, n+1)", "[0x0011, 1B]"),
        (
            "PartitionResult[0] PartitionResult = struct",
            "[0x0012, 8B]",
        ),
        ("PartitionId int32 = 0", "[0x0012, 4B]"),
        ("ErrorCode int16 = 0 (NONE)", "[0x0016, 2B]"),
        (
            "ErrorMessage string = \"\" (compact, len+1=1)",
            "[0x0018, 1B]",
        ),
        ("TaggedFields uvarint = 0", "[0x0019, 1B]"),
        ("TaggedFields uvarint = 0", "[0x001a, 1B]"),
        ("TaggedFields uvarint = 0", "[0x001b, 1B]"),
    ];
    for (file, fields) in [
        ("request-v2-min.bin", request),
        ("response-v2-min.bin", response),
    ] {
        let output = run(&["inspect", file], b"");
        assert_ok(&output);
        let text = stdout(&output);
        // The tree's lines, in order, without the branches drawn in front of them.
        let lines: Vec<&str> = text
            .lines()
            .skip_while(|l| *l != "object tree")
            .skip(1)
            .take_while(|l| !l.is_empty())
            .map(|l| l.trim_start_matches(['|', ' ', '+', '-']))
            .collect();
        assert_eq!(lines.len(), fields.len(), "{file}: tree lines:\n{text}");
        for (line, (field, range)) in lines.iter().zip(fields) {
            assert!(
                line.starts_with(&format!("{field} {range}")),
                "{file}: expected {field} {range}, got {line:?}"
            );
        }
    }
}

/// With no FILE and a terminal on standard input (nothing piped in), the samples; run
/// under `script`, which gives the tool a pseudo-terminal (skipped where it is missing).
/// What is piped in is read instead: tests/manners.rs.
#[test]
fn inspect_without_arguments_shows_the_bundled_samples() {
    let bin = env!("CARGO_BIN_EXE_elect-leaders");
    let Ok(output) = Command::new("script")
        .args([
            "-qec",
            &format!("'{bin}' inspect --color never"),
            "/dev/null",
        ])
        .current_dir(std::env::temp_dir())
        .stdin(Stdio::null())
        .output()
    else {
        std::io::stderr()
            .write_all(
                b"inspect_without_arguments_shows_the_bundled_samples: skipped: no `script`\n",
            )
            .unwrap();
        return;
    };
    assert_eq!(output.status.code(), Some(0));
    // The terminal writes each newline as CR LF.
    let shown = stdout(&output).replace("\r\n", "\n");
    let read = |name: &str| std::fs::read_to_string(golden(name)).expect("golden file");
    let expected = read("inspect-request-v2-min.txt")
        .replace("== request-v2-min.bin:", "== request-v2-min.bin (bundled):")
        + &read("inspect-response-v2-min.txt").replace(
            "== response-v2-min.bin:",
            "== response-v2-min.bin (bundled):",
        );
    assert_eq!(shown, expected);
}

/// One line of the tree: depth, start and length.
struct TreeLine {
    depth: usize,
    start: usize,
    len: usize,
    text: String,
}

/// The tree of one inspected frame, parsed back from its lines.
fn tree_lines(text: &str) -> Vec<TreeLine> {
    text.lines()
        .skip_while(|l| !l.starts_with("object tree"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|line| {
            let depth = line.find("+-- ").map_or(0, |i| i / 4 + 1);
            let open = line.rfind("[0x").expect("a range on every line");
            let close = open + line[open..].find(']').expect("closing bracket");
            let (offset, size) = line[open + 1..close]
                .split_once(", ")
                .expect("offset, size");
            TreeLine {
                depth,
                start: usize::from_str_radix(&offset[2..], 16).expect("hex offset"),
                len: size.trim_end_matches('B').parse().expect("size"),
                text: line.to_owned(),
            }
        })
        .collect()
}

/// Every corpus frame: the tree's ranges nest and tile (each node's children cover its
/// bytes exactly, in order), the root covers the frame, and error codes carry names.
#[test]
fn inspect_every_corpus_frame_tiles_its_bytes() {
    for frame in load_corpus() {
        let output = run(&["inspect", &frame.name], b"");
        assert_ok(&output);
        let text = stdout(&output);
        let lines = tree_lines(&text);
        assert_eq!(
            (lines[0].start, lines[0].len),
            (0, frame.bytes.len()),
            "{}: root",
            frame.name
        );
        for (i, parent) in lines.iter().enumerate() {
            let children: Vec<&TreeLine> = lines[i + 1..]
                .iter()
                .take_while(|l| l.depth > parent.depth)
                .filter(|l| l.depth == parent.depth + 1)
                .collect();
            if children.is_empty() {
                continue;
            }
            let mut at = parent.start;
            for child in &children {
                assert_eq!(
                    child.start, at,
                    "{}: {:?} does not start where its sibling ends (parent {:?})",
                    frame.name, child.text, parent.text
                );
                at += child.len;
            }
            assert_eq!(
                at,
                parent.start + parent.len,
                "{}: the children of {:?} do not cover it",
                frame.name,
                parent.text
            );
        }
        assert!(text.contains(&format!(
            "byte layout ({} bytes, 16 bytes per row)",
            frame.bytes.len()
        )));
        let rows = text
            .lines()
            .filter(|l| {
                l.len() > 6
                    && l.as_bytes()[4] == b' '
                    && l[..4].chars().all(|c| c.is_ascii_hexdigit())
            })
            .count();
        assert_eq!(
            rows,
            frame.bytes.len().div_ceil(16),
            "{}: hex rows",
            frame.name
        );
    }
    let errors = stdout(&run(&["inspect", "response-v0-errors.bin"], b""));
    for named in [
        "ErrorCode int16 = 3 (UNKNOWN_TOPIC_OR_PARTITION)",
        "ErrorCode int16 = 84 (ELECTION_NOT_NEEDED)",
        "ErrorCode int16 = 80 (PREFERRED_LEADER_NOT_AVAILABLE)",
        "ErrorMessage string = null (int16 len=-1)",
    ] {
        assert!(errors.contains(named), "lacks {named:?}:\n{errors}");
    }
    let top = stdout(&run(&["inspect", "response-v1-errors.bin"], b""));
    assert!(top.contains("ErrorCode int16 = 31 (CLUSTER_AUTHORIZATION_FAILED) [0x000c, 2B]"));
    let unclean = stdout(&run(&["inspect", "request-v1-unclean.bin"], b""));
    assert!(unclean.contains("ElectionType int8 = 1 (UNCLEAN) [0x0013, 1B]"));
}

#[test]
fn inspect_reads_several_frames_from_one_input() {
    let mut stream = load("request-v0.bin");
    stream.extend(load("request-v2-min.bin"));
    let output = run(&["inspect", "-"], &stream);
    assert_ok(&output);
    let text = stdout(&output);
    assert!(text.contains("== <stdin>: frame 1 at input byte 0 =="));
    assert!(text.contains("== <stdin>: frame 2 at input byte 77 =="));
    assert_eq!(text.matches("object tree").count(), 2);
}

#[test]
fn inspect_colours_only_when_asked_or_on_a_terminal() {
    let plain = run(&["inspect", "request-v2-min.bin"], b"");
    assert!(
        !plain.stdout.contains(&0x1b),
        "no escapes when stdout is a pipe"
    );
    let never = run(&["inspect", "--color", "never", "request-v2-min.bin"], b"");
    assert_eq!(never.stdout, plain.stdout);
    let always = run(&["inspect", "--color=always", "request-v2-min.bin"], b"");
    assert_ok(&always);
    assert!(
        stdout(&always).contains("\x1b["),
        "escapes with --color always"
    );
    // With the escapes removed, the same text (plus the colour legend).
    let stripped = strip_ansi(&stdout(&always));
    assert_eq!(
        stripped.replace("frame header body tagged_fields\n", ""),
        stdout(&plain)
    );
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn inspect_malformed_frame_shows_the_tree_up_to_the_failure() {
    // request-v2-multi cut after 40 bytes: the size prefix says 242 bytes follow, 36 do.
    let cut = load("request-v2-multi.bin")[..40].to_vec();
    let mut stream = load("request-v2-min.bin");
    stream.extend(&cut);
    let output = run(&["inspect", "-"], &stream);
    let err = assert_malformed(
        &output,
        &[
            "<stdin>: frame 2 (input byte 29)",
            "frame truncated: 40 of 246 bytes (206 missing at input byte 69)",
        ],
    );
    assert!(!err.contains("panicked"));
    let text = stdout(&output);
    // The good frame first, whole.
    assert!(text.contains("== <stdin>: frame 1 at input byte 0 =="));
    assert!(text.contains("TimeoutMs int32 = 0 [0x0018, 4B]"));
    // Then what can be read of the truncated one (the size prefix and the first header
    // fields), the error, and the size prefix marked.
    for needle in [
        "== <stdin>: frame 2 at input byte 29 ==",
        "ElectLeadersRequest v2, request header v2: TRUNCATED, 40 of 246 bytes",
        "object tree (up to the failure)",
        "size int32 = 242 [0x0000, 4B] number of bytes that follow (36 present)",
        "RequestApiKey int16 = 43 (ElectLeaders) [0x0004, 2B]",
        "CorrelationId int32 = 16 [0x0008, 4B]",
        "+-- ERROR size at 0x0000 (byte 0): incomplete frame: need 206 more byte(s)",
        "^^ size",
    ] {
        assert!(text.contains(needle), "lacks {needle:?}:\n{text}");
    }
    // The marker sits under byte 0: column 0 of row 0x0000.
    let marker = text.lines().find(|l| l.contains("^^")).expect("marker");
    assert_eq!(marker.find("^^"), Some(6));
}

#[test]
fn inspect_goes_on_after_a_bad_file_and_exits_1() {
    let dir = temp_dir("inspect-bad");
    let bad = dir.join("bad.bin");
    // A good frame, then a size prefix that no frame has. (At the very start of an input,
    // bytes that cannot be a size are refused as a whole: tests/manners.rs.)
    let mut bytes = load("request-v2-min.bin");
    bytes.extend_from_slice(&[0xff, 0xff, 0xff, 0xfe]);
    std::fs::write(&bad, bytes).expect("write");
    let bad = bad.to_str().expect("UTF-8 path");
    let output = run(&["inspect", bad, "request-v2-min.bin"], b"");
    assert_malformed(
        &output,
        &["bad.bin", "size at frame byte 0", "negative length -2"],
    );
    let text = stdout(&output);
    assert!(text.contains("+-- ERROR size at 0x0000 (byte 0): negative length -2"));
    assert!(text.contains("== request-v2-min.bin: frame 1 at input byte 0 =="));
}

// ---------------------------------------------------------------------------------------
// decode

/// Hand-checked against the corpus README and the `.hex` sources.
const KNOWN: &[(&str, &str)] = &[
    (
        "request-v2-min.bin",
        r#"{"kind":"request","api_key":43,"api_name":"ElectLeaders","api_version":2,"correlation_id":0,"client_id":"","election_type":0,"topic_partitions":[{"topic":"","partitions":[0]}],"timeout_ms":0}"#,
    ),
    (
        "request-v0-null-topics.bin",
        r#"{"kind":"request","api_key":43,"api_name":"ElectLeaders","api_version":0,"correlation_id":8,"client_id":null,"topic_partitions":null,"timeout_ms":30000}"#,
    ),
    (
        "request-v1-unclean.bin",
        r#"{"kind":"request","api_key":43,"api_name":"ElectLeaders","api_version":1,"correlation_id":2147483647,"client_id":"admin","election_type":1,"topic_partitions":[{"topic":"events","partitions":[3,4]}],"timeout_ms":10000}"#,
    ),
    (
        "request-v2-tagged.bin",
        r#"{"kind":"request","api_key":43,"api_name":"ElectLeaders","api_version":2,"correlation_id":20,"client_id":"admin","header_tagged_fields":[{"tag":0,"data":"aabbcc"},{"tag":7,"data":""}],"election_type":0,"topic_partitions":[{"topic":"orders","partitions":[0],"tagged_fields":[{"tag":2,"data":"deadbeef"}]},{"topic":"payments","partitions":[5]}],"timeout_ms":60000,"tagged_fields":[{"tag":1,"data":"cafe"},{"tag":300,"data":"ff"}]}"#,
    ),
    (
        "request-v2-non-ascii.bin",
        r#"{"kind":"request","api_key":43,"api_name":"ElectLeaders","api_version":2,"correlation_id":19,"client_id":"管理客户端","election_type":0,"topic_partitions":[{"topic":"trädgård","partitions":[0]},{"topic":"主题","partitions":[1,2]},{"topic":"🚀","partitions":[3]}],"timeout_ms":60000}"#,
    ),
    (
        "response-v2-min.bin",
        r#"{"kind":"response","api_key":43,"api_name":"ElectLeaders","api_version":2,"correlation_id":0,"throttle_time_ms":0,"error_code":0,"error_name":"NONE","replica_election_results":[{"topic":"","partition_result":[{"partition_id":0,"error_code":0,"error_name":"NONE","error_message":""}]}]}"#,
    ),
    (
        "response-v0-errors.bin",
        r#"{"kind":"response","api_key":43,"api_name":"ElectLeaders","api_version":0,"correlation_id":8,"throttle_time_ms":100,"replica_election_results":[{"topic":"ghost","partition_result":[{"partition_id":0,"error_code":3,"error_name":"UNKNOWN_TOPIC_OR_PARTITION","error_message":"Unknown topic"}]},{"topic":"orders","partition_result":[{"partition_id":1,"error_code":84,"error_name":"ELECTION_NOT_NEEDED","error_message":null},{"partition_id":2,"error_code":80,"error_name":"PREFERRED_LEADER_NOT_AVAILABLE","error_message":"Preferred replica 3 is not alive"}]}]}"#,
    ),
    (
        "response-v1-errors.bin",
        r#"{"kind":"response","api_key":43,"api_name":"ElectLeaders","api_version":1,"correlation_id":9,"throttle_time_ms":0,"error_code":31,"error_name":"CLUSTER_AUTHORIZATION_FAILED","replica_election_results":[]}"#,
    ),
    (
        "response-v2-tagged.bin",
        r#"{"kind":"response","api_key":43,"api_name":"ElectLeaders","api_version":2,"correlation_id":20,"header_tagged_fields":[{"tag":3,"data":"2a"}],"throttle_time_ms":0,"error_code":0,"error_name":"NONE","replica_election_results":[{"topic":"orders","partition_result":[{"partition_id":0,"error_code":0,"error_name":"NONE","error_message":null,"tagged_fields":[{"tag":5,"data":"010203"}]},{"partition_id":1,"error_code":0,"error_name":"NONE","error_message":null}],"tagged_fields":[{"tag":4,"data":"beef"}]}],"tagged_fields":[{"tag":0,"data":""},{"tag":9,"data":"ff"}]}"#,
    ),
];

#[test]
fn decode_known_answers() {
    for (name, expected) in KNOWN {
        let output = run(&["decode", name], b"");
        assert_ok(&output);
        assert_eq!(stdout(&output), format!("{expected}\n"), "{name}");
    }
}

/// The keys of a JSON text, in document order, at every depth.
fn keys_in_order(json: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let mut chars = json.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        if c != '"' {
            continue;
        }
        let mut end = start + 1;
        while let Some((i, c)) = chars.next() {
            end = i;
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => break,
                _ => {}
            }
        }
        let is_key = json[end + 1..].trim_start().starts_with(':');
        if is_key {
            keys.push(json[start + 1..end].to_owned());
        }
    }
    keys
}

/// What the contract says the keys of a request are, in order, from the library's view.
fn request_keys(r: &ElectLeadersRequest<'_>) -> Vec<String> {
    let mut keys: Vec<&str> = vec![
        "kind",
        "api_key",
        "api_name",
        "api_version",
        "correlation_id",
        "client_id",
    ];
    push_tag_keys(
        &mut keys,
        "header_tagged_fields",
        r.header().tagged_fields(),
    );
    if r.version() >= 1 {
        keys.push("election_type");
    }
    keys.push("topic_partitions");
    for entry in r.topic_partitions().into_iter().flatten() {
        keys.extend(["topic", "partitions"]);
        push_tag_keys(&mut keys, "tagged_fields", entry.tagged_fields());
    }
    keys.push("timeout_ms");
    push_tag_keys(&mut keys, "tagged_fields", r.tagged_fields());
    keys.into_iter().map(str::to_owned).collect()
}

fn response_keys(r: &ElectLeadersResponse<'_>) -> Vec<String> {
    let mut keys: Vec<&str> = vec![
        "kind",
        "api_key",
        "api_name",
        "api_version",
        "correlation_id",
    ];
    push_tag_keys(
        &mut keys,
        "header_tagged_fields",
        r.header().tagged_fields(),
    );
    keys.push("throttle_time_ms");
    if r.version() >= 1 {
        keys.extend(["error_code", "error_name"]);
    }
    keys.push("replica_election_results");
    for result in r.replica_election_results() {
        keys.extend(["topic", "partition_result"]);
        for p in result.partition_result() {
            keys.extend(["partition_id", "error_code", "error_name", "error_message"]);
            push_tag_keys(&mut keys, "tagged_fields", p.tagged_fields());
        }
        push_tag_keys(&mut keys, "tagged_fields", result.tagged_fields());
    }
    push_tag_keys(&mut keys, "tagged_fields", r.tagged_fields());
    keys.into_iter().map(str::to_owned).collect()
}

fn push_tag_keys(keys: &mut Vec<&str>, name: &'static str, fields: TaggedFields<'_>) {
    if !fields.is_empty() {
        keys.push(name);
        for _ in fields {
            keys.extend(["tag", "data"]);
        }
    }
}

fn json_bytes(value: &Value) -> Option<Vec<u8>> {
    match value {
        Value::Null => None,
        Value::String(s) => Some(s.as_bytes().to_vec()),
        other => panic!("expected a string or null, got {other}"),
    }
}

fn json_tags(value: Option<&Value>) -> Vec<(u32, Vec<u8>)> {
    value
        .map(|v| {
            v.as_array()
                .expect("tagged fields are an array")
                .iter()
                .map(|f| {
                    let data = f["data"].as_str().expect("hex data");
                    (f["tag"].as_u64().expect("tag") as u32, common::hex(data))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn view_tags(fields: TaggedFields<'_>) -> Vec<(u32, Vec<u8>)> {
    fields
        .iter()
        .map(|f| (f.tag(), f.data().to_vec()))
        .collect()
}

/// Every corpus frame: one line, valid JSON, the contract's keys in the contract's order,
/// and every value equal to what the library's parser reads.
#[test]
fn decode_every_corpus_frame_matches_the_parser() {
    for frame in load_corpus() {
        // Responses are told apart by name, as the corpus names them.
        let output = run(&["decode", &frame.name], b"");
        assert_ok(&output);
        let text = stdout(&output);
        assert_eq!(text.lines().count(), 1, "{}: one line", frame.name);
        let line = text.trim_end();
        let json: Value = serde_json::from_str(line).expect("valid JSON");
        match kind_of(&frame.name) {
            Kind::Request => {
                let r = parse_request(&frame.bytes).expect("corpus request parses");
                assert_eq!(
                    keys_in_order(line),
                    request_keys(&r),
                    "{}: keys",
                    frame.name
                );
                assert_eq!(json["kind"], "request");
                assert_eq!(json["api_key"], 43);
                assert_eq!(json["api_version"], r.version());
                assert_eq!(json["correlation_id"], r.correlation_id());
                assert_eq!(
                    json_bytes(&json["client_id"]).as_deref(),
                    r.header().client_id()
                );
                assert_eq!(
                    json_tags(json.get("header_tagged_fields")),
                    view_tags(r.header().tagged_fields())
                );
                if r.version() >= 1 {
                    assert_eq!(json["election_type"], r.election_type().0);
                }
                match r.topic_partitions() {
                    None => assert!(json["topic_partitions"].is_null()),
                    Some(list) => {
                        let topics = json["topic_partitions"].as_array().expect("array");
                        assert_eq!(topics.len(), list.len());
                        for (t, entry) in topics.iter().zip(list) {
                            assert_eq!(json_bytes(&t["topic"]).as_deref(), Some(entry.topic()));
                            let partitions: Vec<i64> = t["partitions"]
                                .as_array()
                                .expect("array")
                                .iter()
                                .map(|p| p.as_i64().expect("int"))
                                .collect();
                            let expected: Vec<i64> =
                                entry.partitions().iter().map(i64::from).collect();
                            assert_eq!(partitions, expected);
                            assert_eq!(
                                json_tags(t.get("tagged_fields")),
                                view_tags(entry.tagged_fields())
                            );
                        }
                    }
                }
                assert_eq!(json["timeout_ms"], r.timeout_ms());
                assert_eq!(
                    json_tags(json.get("tagged_fields")),
                    view_tags(r.tagged_fields())
                );
            }
            Kind::Response { version } => {
                let r = parse_response(&frame.bytes, version).expect("corpus response parses");
                assert_eq!(
                    keys_in_order(line),
                    response_keys(&r),
                    "{}: keys",
                    frame.name
                );
                assert_eq!(json["kind"], "response");
                assert_eq!(json["api_version"], version);
                assert_eq!(json["correlation_id"], r.correlation_id());
                assert_eq!(
                    json_tags(json.get("header_tagged_fields")),
                    view_tags(r.header().tagged_fields())
                );
                assert_eq!(json["throttle_time_ms"], r.throttle_time_ms());
                if version >= 1 {
                    assert_eq!(json["error_code"], r.error_code().0);
                }
                let results = json["replica_election_results"].as_array().expect("array");
                assert_eq!(results.len(), r.replica_election_results().len());
                for (j, result) in results.iter().zip(r.replica_election_results()) {
                    assert_eq!(json_bytes(&j["topic"]).as_deref(), Some(result.topic()));
                    let partitions = j["partition_result"].as_array().expect("array");
                    assert_eq!(partitions.len(), result.partition_result().len());
                    for (jp, p) in partitions.iter().zip(result.partition_result()) {
                        assert_eq!(jp["partition_id"], p.partition_id());
                        assert_eq!(jp["error_code"], p.error_code().0);
                        assert_eq!(
                            json_bytes(&jp["error_message"]).as_deref(),
                            p.error_message()
                        );
                        assert_eq!(
                            json_tags(jp.get("tagged_fields")),
                            view_tags(p.tagged_fields())
                        );
                    }
                    assert_eq!(
                        json_tags(j.get("tagged_fields")),
                        view_tags(result.tagged_fields())
                    );
                }
                assert_eq!(
                    json_tags(json.get("tagged_fields")),
                    view_tags(r.tagged_fields())
                );
            }
        }
    }
}

#[test]
fn decode_responses_by_flag_from_stdin() {
    for frame in load_corpus() {
        let Kind::Response { version } = frame.kind() else {
            continue;
        };
        let by_name = run(&["decode", &frame.name], b"");
        let version = version.to_string();
        let told = run(
            &["decode", "--response", "--version", &version, "-"],
            &frame.bytes,
        );
        assert_ok(&told);
        assert_eq!(told.stdout, by_name.stdout, "{}", frame.name);
        // Forced to read it as a request, it is not one: either its first bytes are no
        // request header of any API, or they read as one of another API (a small
        // correlation id reads as api key 0, Produce) and no ElectLeaders request is found.
        // Either way the error says how to read a response.
        let forced = run(&["decode", "--request", &frame.name], b"");
        assert_malformed(&forced, &["--response --version N"]);
    }
    // Requests need no flag, from standard input too.
    let output = run(&["decode"], &load("request-v2-min.bin"));
    assert_ok(&output);
    assert_eq!(stdout(&output), format!("{}\n", KNOWN[0].1));
}

#[test]
fn decode_hex_input_reads_the_annotated_corpus_sources() {
    for frame in load_corpus() {
        let source = format!("src/{}", frame.name.replace(".bin", ".hex"));
        let from_hex = run(&["decode", "--hex", &source], b"");
        assert_ok(&from_hex);
        // `src/response-vN-….hex` is named like its frame: the version comes from the name.
        let binary = run(&["decode", &frame.name], b"");
        assert_eq!(from_hex.stdout, binary.stdout, "{source}");
    }
    // Plain hex with spaces and newlines anywhere, even inside a byte.
    let spaced = "00 00 00 19 00 2b 00 02 00 00 00 00 00 00 00 00\n0 2 01 02 00 00 00 00 00 00 00 00 00 00\n";
    let output = run(&["decode", "--hex"], spaced.as_bytes());
    assert_ok(&output);
    assert_eq!(stdout(&output), format!("{}\n", KNOWN[0].1));
}

/// Strings that are not UTF-8 come out as `{"hex":"…"}`, and go back in the same way.
#[test]
fn decode_non_utf8_strings_as_hex_objects() {
    let topics = [TopicPartitionsData::new(b"\xc3\x28", &[1])];
    let request = ElectLeadersRequestData {
        correlation_id: 5,
        client_id: Some(b"\xff\x00"),
        topic_partitions: Some(&topics),
        ..Default::default()
    };
    let frame = encode_request(&request, 2);
    let output = run(&["decode"], &frame);
    assert_ok(&output);
    let line = stdout(&output);
    assert_eq!(
        line,
        "{\"kind\":\"request\",\"api_key\":43,\"api_name\":\"ElectLeaders\",\"api_version\":2,\
         \"correlation_id\":5,\
         \"client_id\":{\"hex\":\"ff00\"},\"election_type\":0,\"topic_partitions\":\
         [{\"topic\":{\"hex\":\"c328\"},\"partitions\":[1]}],\"timeout_ms\":60000}\n"
    );
    let back = run(&["encode"], line.as_bytes());
    assert_ok(&back);
    assert_eq!(back.stdout, frame);
}

// ---------------------------------------------------------------------------------------
// encode

fn encode_request(request: &impl EncodeRequest, version: i16) -> Vec<u8> {
    let mut frame = vec![0u8; request.encoded_len(version).expect("encodable")];
    request.encode(version, &mut frame).expect("encodes");
    frame
}

fn encode_response(response: &impl EncodeResponse, version: i16) -> Vec<u8> {
    let mut frame = vec![0u8; response.encoded_len(version).expect("encodable")];
    response.encode(version, &mut frame).expect("encodes");
    frame
}

#[test]
fn decode_then_encode_gives_back_every_corpus_frame() {
    for frame in load_corpus() {
        let decoded = run(&["decode", &frame.name], b"");
        assert_ok(&decoded);
        let encoded = run(&["encode"], &decoded.stdout);
        assert_ok(&encoded);
        assert_eq!(
            encoded.stdout, frame.bytes,
            "{}: decode | encode",
            frame.name
        );
        // And through hex text both ways.
        let hex = run(&["encode", "--hex"], &decoded.stdout);
        assert_ok(&hex);
        assert_eq!(stdout(&hex).lines().count(), 1);
        let version = match frame.kind() {
            Kind::Request => None,
            Kind::Response { version } => Some(version.to_string()),
        };
        let mut args = vec!["decode", "--hex"];
        if let Some(version) = &version {
            args.extend(["--response", "--version", version]);
        }
        let again = run(&args, &hex.stdout);
        assert_ok(&again);
        assert_eq!(
            again.stdout, decoded.stdout,
            "{}: hex round trip",
            frame.name
        );
    }
    // A stream of every request frame, and of every response of one version.
    let mut stream = Vec::new();
    for frame in load_corpus().into_iter().filter(|f| f.is_request()) {
        stream.extend(frame.bytes);
    }
    let decoded = run(&["decode", "-"], &stream);
    assert_ok(&decoded);
    assert_eq!(stdout(&decoded).lines().count(), 10);
    let encoded = run(&["encode", "-"], &decoded.stdout);
    assert_ok(&encoded);
    assert_eq!(encoded.stdout, stream);
    let mut responses = load("response-v2-min.bin");
    responses.extend(load("response-v2-multi.bin"));
    responses.extend(load("response-v2-tagged.bin"));
    let decoded = run(&["decode", "--response", "--version", "2"], &responses);
    assert_ok(&decoded);
    let encoded = run(&["encode"], &decoded.stdout);
    assert_ok(&encoded);
    assert_eq!(encoded.stdout, responses);
}

#[test]
fn encode_fills_in_defaults() {
    let output = run(
        &["encode"],
        br#"{"kind":"request","api_version":1,"topic_partitions":[{"topic":"t","partitions":[1,2]}]}

{"kind":"response","api_version":0,"correlation_id":3,"replica_election_results":[{"topic":"t","partition_result":[{"partition_id":1}]}]}
"#,
    );
    assert_ok(&output);
    let topics = [TopicPartitionsData::new(b"t", &[1, 2])];
    let mut expected = encode_request(
        &ElectLeadersRequestData {
            topic_partitions: Some(&topics),
            ..Default::default()
        },
        1,
    );
    let partitions = [PartitionResultData {
        partition_id: 1,
        ..Default::default()
    }];
    let results = [ReplicaElectionResultData {
        topic: b"t",
        partition_result: &partitions,
        tagged_fields: &[],
    }];
    expected.extend(encode_response(
        &ElectLeadersResponseData {
            correlation_id: 3,
            replica_election_results: &results,
            ..Default::default()
        },
        0,
    ));
    assert_eq!(output.stdout, expected);
    let (first, _) = kafka_elect_leaders::split_frame(&expected).expect("a whole frame");
    let request = parse_request(first).expect("parses");
    assert_eq!(request.timeout_ms(), 60000);
    assert_eq!(request.election_type(), ElectionType::PREFERRED);
}

#[test]
fn encode_refuses_what_the_writer_refuses_naming_the_field() {
    let good = KNOWN[0].1;
    let cases: &[(&str, &[&str])] = &[
        (
            r#"{"kind":"request","api_version":0,"election_type":1}"#,
            &["line 2", "election_type (ElectionType)", "version 0"],
        ),
        (
            r#"{"kind":"response","api_version":0,"error_code":31}"#,
            &["line 2", "error_code (ErrorCode)", "version 0"],
        ),
        (
            r#"{"kind":"request","api_version":1,"tagged_fields":[{"tag":1,"data":"00"}]}"#,
            &["line 2", "tagged_fields", "version 1 has none"],
        ),
        (
            r#"{"kind":"request","api_version":2,"tagged_fields":[{"tag":5,"data":""},{"tag":1,"data":""}]}"#,
            &["line 2", "tagged_fields", "tag 1 comes after tag 5"],
        ),
        (
            r#"{"kind":"request","api_version":3}"#,
            &["line 2", "api_version", "version 3 is not supported"],
        ),
        (
            r#"{"kind":"request","api_version":2,"timeout":5}"#,
            &["line 2", "unknown field \"timeout\""],
        ),
        (
            r#"{"kind":"request","api_version":2,"topic_partitions":[{"topic":"a","partitions":[1,"x"]}]}"#,
            &[
                "line 2",
                "topic_partitions[0].partitions[1]",
                "expected an int32",
            ],
        ),
        (
            r#"{"kind":"request","api_version":2,"topic_partitions":[{"topic":null,"partitions":[]}]}"#,
            &["line 2", "topic_partitions[0].topic", "not nullable"],
        ),
        (
            r#"{"kind":"request","api_version":2,"correlation_id":2147483648}"#,
            &["line 2", "correlation_id", "expected an int32"],
        ),
        (
            r#"{"kind":"request","api_version":2,"client_id":{"hex":"abc"}}"#,
            &["line 2", "client_id.hex", "odd number of hex digits"],
        ),
        (
            r#"{"kind":"request","api_key":3,"api_version":2}"#,
            &["line 2", "api_key: expected 43"],
        ),
        (r#"{"kind":"request"}"#, &["line 2", "api_version: missing"]),
        (r#"{"api_version":2}"#, &["line 2", "kind: missing"]),
        (
            r#"{"kind":"reply","api_version":2}"#,
            &["line 2", "kind: expected"],
        ),
        ("[1,2]", &["line 2", "expected a JSON object"]),
        ("{not json", &["line 2", "not JSON"]),
    ];
    for (bad, needles) in cases {
        // A good line first: its frame is written before the error.
        let input = format!("{good}\n{bad}\n");
        let output = run(&["encode"], input.as_bytes());
        assert_malformed(&output, needles);
        assert_eq!(output.stdout, load("request-v2-min.bin"), "input {bad}");
    }
}

/// `decode | jq . | encode`: objects spread over several lines (serde_json's pretty
/// printer, as jq's) and objects back to back, with no whitespace between them.
#[test]
fn encode_reads_objects_over_several_lines_and_back_to_back() {
    let mut frames = Vec::new();
    let mut pretty = String::new();
    let mut packed = String::new();
    for frame in load_corpus() {
        let decoded = run(&["decode", &frame.name], b"");
        assert_ok(&decoded);
        let value: Value = serde_json::from_slice(&decoded.stdout).expect("one JSON object");
        pretty.push_str(&serde_json::to_string_pretty(&value).unwrap());
        pretty.push('\n');
        packed.push_str(&value.to_string());
        frames.extend(frame.bytes);
    }
    for input in [&pretty, &packed] {
        let encoded = run(&["encode"], input.as_bytes());
        assert_ok(&encoded);
        assert_eq!(encoded.stdout, frames);
    }
    // A bad object over several lines: the lines it spans; its frame is not written, the
    // one before it is.
    let good = KNOWN[0].1;
    let bad = "{\n  \"kind\": \"request\",\n  \"api_version\": 2,\n  \"timeout\": 5\n}";
    let output = run(&["encode"], format!("{good}\n\n{bad}\n").as_bytes());
    assert_malformed(&output, &["<stdin>: lines 3-7: unknown field \"timeout\""]);
    assert_eq!(output.stdout, load("request-v2-min.bin"));
    // Back to back on one line: the line.
    let output = run(&["encode"], format!("{good}{good}\n{good}[1]").as_bytes());
    assert_malformed(&output, &["<stdin>: line 2: expected a JSON object"]);
    assert_eq!(output.stdout, load("request-v2-min.bin").repeat(3));
    // Text that is not JSON: its line and column, in the whole input.
    let output = run(
        &["encode"],
        format!("{good}\n{{\n  \"kind\" \"request\"\n}}").as_bytes(),
    );
    assert_malformed(
        &output,
        &["<stdin>: line 3, column 10: not JSON: expected `:`"],
    );
    // An object cut by the end of the input.
    let output = run(&["encode"], format!("{good}\n{{\"kind\":\n").as_bytes());
    assert_malformed(&output, &["line 3, column 0: not JSON: EOF while parsing"]);
}

/// Error codes and election types by their Kafka names, as `ErrorCode::name()` and
/// `ElectionType::name()` spell them: the same frames as with the numbers.
/// What `decode` adds for people to query (`api_name`, a response's `api_key`, an
/// `error_name` beside each `error_code`) is read back by `encode`, checked against the
/// rest, and `error_name` alone gives the code.
#[test]
fn encode_takes_the_members_decode_adds_for_queries() {
    let pairs = [
        (
            r#"{"kind":"request","api_key":43,"api_name":"ElectLeaders","api_version":1}"#,
            r#"{"kind":"request","api_version":1}"#,
        ),
        (
            r#"{"kind":"response","api_key":43,"api_name":"ElectLeaders","api_version":1,"error_code":41,"error_name":"NOT_CONTROLLER","replica_election_results":[{"topic":"t","partition_result":[{"partition_id":1,"error_name":"ELECTION_NOT_NEEDED"},{"partition_id":2,"error_code":9999,"error_name":null}]}]}"#,
            r#"{"kind":"response","api_version":1,"error_code":41,"replica_election_results":[{"topic":"t","partition_result":[{"partition_id":1,"error_code":84},{"partition_id":2,"error_code":9999}]}]}"#,
        ),
    ];
    for (named, plain) in pairs {
        let named_out = run(&["encode"], named.as_bytes());
        assert_ok(&named_out);
        let plain_out = run(&["encode"], plain.as_bytes());
        assert_ok(&plain_out);
        assert_eq!(named_out.stdout, plain_out.stdout, "{named}");
    }
    // And decode prints them: an unknown code's name is null.
    let frame = run(&["encode"], pairs[1].1.as_bytes()).stdout;
    let decoded = run(&["decode", "--response", "--version", "1"], &frame);
    assert_ok(&decoded);
    let object: Value = serde_json::from_str(stdout(&decoded).trim()).unwrap();
    assert_eq!(object["api_key"], 43);
    assert_eq!(object["api_name"], "ElectLeaders");
    assert_eq!(object["error_name"], "NOT_CONTROLLER");
    let partitions = &object["replica_election_results"][0]["partition_result"];
    assert_eq!(partitions[0]["error_name"], "ELECTION_NOT_NEEDED");
    assert_eq!(partitions[1]["error_name"], Value::Null);
    let cases: &[(&str, &[&str])] = &[
        (
            r#"{"kind":"response","api_version":1,"error_code":3,"error_name":"NONE"}"#,
            &[
                "error_name: \"NONE\" does not name error_code 3 (UNKNOWN_TOPIC_OR_PARTITION)",
            ],
        ),
        (
            r#"{"kind":"response","api_version":1,"replica_election_results":[{"topic":"t","partition_result":[{"error_code":0,"error_name":null}]}]}"#,
            &["replica_election_results[0].partition_result[0].error_name: null does not name error_code 0 (NONE)"],
        ),
        (
            r#"{"kind":"request","api_version":1,"api_name":"Metadata"}"#,
            &["api_name: expected \"ElectLeaders\", got \"Metadata\""],
        ),
        (
            r#"{"kind":"response","api_version":1,"api_key":3}"#,
            &["api_key: expected 43 (ElectLeaders), got 3"],
        ),
        (
            r#"{"kind":"response","api_version":1,"error_name":"NO_SUCH_ERROR"}"#,
            &["error_name: unknown name \"NO_SUCH_ERROR\""],
        ),
    ];
    for (json, needles) in cases {
        assert_malformed(&run(&["encode"], json.as_bytes()), needles);
    }
}

/// The error codes Kafka 4.4 added last (134-136): a response carrying them, top-level and
/// per partition, that `encode` wrote from the numbers.
const KAFKA_4_4_CODES: [(i16, &str); 3] = [
    (134, "GROUP_DELETION_FAILED"),
    (135, "STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED"),
    (136, "CONTROLLER_ID_NOT_REGISTERED"),
];

fn kafka_4_4_codes_response(code: i16) -> Vec<u8> {
    let json = format!(
        r#"{{"kind":"response","api_version":1,"error_code":{code},"replica_election_results":[{{"topic":"t","partition_result":[{{"partition_id":0,"error_code":{code}}}]}}]}}"#
    );
    let out = run(&["encode"], json.as_bytes());
    assert_ok(&out);
    out.stdout
}

/// `decode` names the error codes of Kafka 4.4's `Errors` up to the last one.
#[test]
fn decode_names_the_newest_kafka_error_codes() {
    for (code, name) in KAFKA_4_4_CODES {
        let decoded = run(
            &["decode", "--response", "--version", "1"],
            &kafka_4_4_codes_response(code),
        );
        assert_ok(&decoded);
        let object: Value = serde_json::from_str(stdout(&decoded).trim()).unwrap();
        assert_eq!(object["error_code"], code);
        assert_eq!(object["error_name"], name);
        let partition = &object["replica_election_results"][0]["partition_result"][0];
        assert_eq!(partition["error_name"], name);
    }
}

/// `encode` takes the names of Kafka 4.4's newest error codes for their codes.
#[test]
fn encode_takes_the_newest_kafka_error_names() {
    for (code, name) in KAFKA_4_4_CODES {
        let json = format!(
            r#"{{"kind":"response","api_version":1,"error_name":"{name}","replica_election_results":[{{"topic":"t","partition_result":[{{"partition_id":0,"error_name":"{name}"}}]}}]}}"#
        );
        let named = run(&["encode"], json.as_bytes());
        assert_ok(&named);
        assert_eq!(named.stdout, kafka_4_4_codes_response(code), "{name}");
    }
}

#[test]
fn encode_accepts_names_of_error_codes_and_election_types() {
    let pairs = [
        (
            r#"{"kind":"request","api_version":1,"election_type":"UNCLEAN"}"#,
            r#"{"kind":"request","api_version":1,"election_type":1}"#,
        ),
        (
            r#"{"kind":"request","api_version":2,"election_type":"PREFERRED"}"#,
            r#"{"kind":"request","api_version":2,"election_type":0}"#,
        ),
        (
            r#"{"kind":"response","api_version":1,"error_code":"NOT_CONTROLLER","replica_election_results":[{"topic":"t","partition_result":[{"partition_id":1,"error_code":"ELECTION_NOT_NEEDED"},{"partition_id":2,"error_code":"NONE"}]}]}"#,
            r#"{"kind":"response","api_version":1,"error_code":41,"replica_election_results":[{"topic":"t","partition_result":[{"partition_id":1,"error_code":84},{"partition_id":2,"error_code":0}]}]}"#,
        ),
    ];
    for (names, numbers) in pairs {
        let by_name = run(&["encode"], names.as_bytes());
        assert_ok(&by_name);
        let by_number = run(&["encode"], numbers.as_bytes());
        assert_ok(&by_number);
        assert_eq!(by_name.stdout, by_number.stdout, "{names}");
    }
    let cases: &[(&str, &[&str])] = &[
        (
            r#"{"kind":"request","api_version":1,"election_type":"unclean"}"#,
            &[
                "line 1",
                "election_type: unknown name \"unclean\"",
                "UNCLEAN",
            ],
        ),
        (
            r#"{"kind":"response","api_version":1,"error_code":"NOT_A_CODE"}"#,
            &["line 1", "error_code: unknown name \"NOT_A_CODE\""],
        ),
        (
            r#"{"kind":"response","api_version":1,"replica_election_results":[{"topic":"t","partition_result":[{"error_code":"BOGUS"}]}]}"#,
            &["replica_election_results[0].partition_result[0].error_code: unknown name"],
        ),
        (
            r#"{"kind":"request","api_version":1,"election_type":true}"#,
            &["election_type: expected an int8, got true"],
        ),
    ];
    for (bad, needles) in cases {
        assert_malformed(&run(&["encode"], bad.as_bytes()), needles);
    }
}

/// `encode` writes no binary frames to a terminal (usage error, exit 2), but hex text yes.
/// Run under `script`, which gives the tool a pseudo-terminal; skipped where it is missing.
#[test]
fn encode_refuses_to_write_binary_frames_to_a_terminal() {
    let script = |command: &str| {
        Command::new("script")
            .args(["-qec", command, "/dev/null"])
            .current_dir(corpus_dir())
            .stdin(Stdio::null())
            .output()
    };
    let bin = env!("CARGO_BIN_EXE_elect-leaders");
    let json = temp_dir("terminal").join("request.json");
    std::fs::write(&json, KNOWN[0].1).unwrap();
    let Ok(binary) = script(&format!("'{bin}' encode '{}'", json.display())) else {
        std::io::stderr()
            .write_all(
                b"encode_refuses_to_write_binary_frames_to_a_terminal: skipped: no `script`\n",
            )
            .unwrap();
        return;
    };
    // `script` copies the terminal's output, stderr included, to its standard output.
    let text = String::from_utf8_lossy(&binary.stdout).into_owned();
    assert_eq!(binary.status.code(), Some(2), "{text}");
    assert!(
        text.contains("refusing to write binary frames to a terminal: use --hex"),
        "{text}"
    );
    let hex = script(&format!("'{bin}' encode --hex '{}'", json.display())).unwrap();
    let text = String::from_utf8_lossy(&hex.stdout).into_owned();
    assert_eq!(hex.status.code(), Some(0), "{text}");
    assert!(text.contains("00000019002b0002"), "{text}");
}

#[test]
fn version_flag_prints_the_tools_version() {
    for flag in ["-V", "--version"] {
        let output = run(&[flag], b"");
        assert_ok(&output);
        assert_eq!(
            stdout(&output),
            format!("elect-leaders {}\n", env!("CARGO_PKG_VERSION"))
        );
    }
    // Inside decode, --version is still the responses' version.
    let output = run(
        &["decode", "--response", "--version", "1", "response-v1.bin"],
        b"",
    );
    assert_ok(&output);
    assert!(stdout(&output).starts_with(
        r#"{"kind":"response","api_key":43,"api_name":"ElectLeaders","api_version":1,"#
    ));
}

// ---------------------------------------------------------------------------------------
// scan

fn request(
    version: i16,
    correlation_id: i32,
    client_id: &[u8],
    topics: &[(&[u8], &[i32])],
) -> Vec<u8> {
    let topics: Vec<TopicPartitionsData<'_>> = topics
        .iter()
        .map(|(topic, partitions)| TopicPartitionsData::new(topic, partitions))
        .collect();
    encode_request(
        &ElectLeadersRequestData {
            correlation_id,
            client_id: Some(client_id),
            election_type: if version >= 1 {
                ElectionType::UNCLEAN
            } else {
                ElectionType::PREFERRED
            },
            topic_partitions: Some(&topics),
            timeout_ms: 1000,
            ..Default::default()
        },
        version,
    )
}

fn response(version: i16, correlation_id: i32, topic: &[u8], errors: &[i16]) -> Vec<u8> {
    let partitions: Vec<PartitionResultData<'_>> = errors
        .iter()
        .enumerate()
        .map(|(i, &code)| PartitionResultData {
            partition_id: i as i32,
            error_code: ErrorCode(code),
            error_message: None,
            tagged_fields: &[],
        })
        .collect();
    let results = [ReplicaElectionResultData {
        topic,
        partition_result: &partitions,
        tagged_fields: &[],
    }];
    encode_response(
        &ElectLeadersResponseData {
            correlation_id,
            replica_election_results: &results,
            ..Default::default()
        },
        version,
    )
}

/// A request frame of another API (header v1), with `body` after the header.
fn other_request(api_key: i16, version: i16, correlation_id: i32, body: &[u8]) -> Vec<u8> {
    let mut frame = vec![0, 0, 0, 0];
    frame.extend(api_key.to_be_bytes());
    frame.extend(version.to_be_bytes());
    frame.extend(correlation_id.to_be_bytes());
    frame.extend(6i16.to_be_bytes());
    frame.extend(b"client");
    frame.extend(body);
    fix_size(frame)
}

/// `(offset, rest of the line)` of every `request` line, and the response line under it.
fn scan_lines(text: &str) -> Vec<(usize, String, Option<String>)> {
    let mut found: Vec<(usize, String, Option<String>)> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("request  offset=") {
            let offset = rest
                .split(' ')
                .next()
                .expect("offset")
                .parse()
                .expect("number");
            found.push((offset, line.to_owned(), None));
        } else if let Some(rest) = line.strip_prefix("  ") {
            found.last_mut().expect("a request line first").2 = Some(rest.to_owned());
        }
    }
    found
}

#[test]
fn scan_finds_requests_and_pairs_responses_in_a_synthetic_capture() {
    let mut capture = Vec::new();
    let mut expected = Vec::new();
    // Starts inside an ElectLeaders frame: 1 byte of its size prefix is missing, so its
    // header pattern sits at offset 3, and no frame can start 4 bytes before it.
    capture.extend(&request(2, 1, b"cut", &[(b"x", &[0])])[1..]);
    // A Metadata request (api key 3) and some garbage.
    capture.extend(other_request(3, 12, 55, &[0x01, 0x00, 0x00]));
    capture.extend(b"\x00\x2b\x00\x02garbage\x00\x2b\x00");
    // ElectLeaders v0.
    let v0 = request(
        0,
        7,
        b"admin",
        &[(b"orders", &[0, 1, 2]), (b"payments", &[5])],
    );
    expected.push((capture.len(), 7));
    capture.extend(&v0);
    // A Produce request (api key 0) whose payload holds the pattern 4 bytes after a
    // plausible size prefix: the parser rejects that candidate.
    capture.extend(other_request(
        0,
        9,
        56,
        b"\x00\x00\x00\x0c\x00\x2b\x00\x01\x00\x00\x00\x09\xff\xff\xff\xff",
    ));
    // ElectLeaders v2.
    expected.push((capture.len(), 16));
    capture.extend(request(
        2,
        16,
        b"adminclient-1",
        &[(b"events", &[3, 4]), (b"t", &[])],
    ));
    // api key 43 at a version ElectLeaders does not have: not a candidate.
    capture.extend(other_request(43, 5, 57, &[0; 8]));
    // ElectLeaders v1 whose size prefix is 43 (00 00 00 2b): the pattern's first hit is
    // inside the size prefix, overlapping the real header one byte later.
    let client = vec![b'c'; 24];
    let overlapping = request(1, 9, &client, &[]);
    assert_eq!(&overlapping[..8], b"\x00\x00\x00\x2b\x00\x2b\x00\x01");
    expected.push((capture.len(), 9));
    capture.extend(&overlapping);
    // The same correlation id twice (a retry), then a request cut at the end.
    expected.push((capture.len(), 16));
    capture.extend(request(2, 16, b"retry", &[(b"events", &[3])]));
    capture.extend(&request(2, 99, b"tail", &[(b"t", &[0])])[..20]);

    // The other direction: starts mid-frame, has other APIs' responses, garbage, a frame
    // holding correlation id 7 that is no ElectLeaders response, and the answers out of
    // order. The request with id 9 gets no answer.
    let mut responses = Vec::new();
    responses.extend(&response(2, 1, b"cut", &[0])[6..]);
    let metadata_response = fix_size([0, 0, 0, 0, 0, 0, 0, 55, 0, 0, 0, 0, 0, 0, 0, 0].to_vec());
    responses.extend(&metadata_response);
    let first_16 = responses.len();
    responses.extend(response(2, 16, b"events", &[0, 84]));
    responses.extend(b"\xde\xad\xbe\xef");
    responses.extend(fix_size(b"\x00\x00\x00\x00\x00\x00\x00\x07\x01".to_vec()));
    let answer_7 = responses.len();
    responses.extend(response(0, 7, b"orders", &[0, 0, 80, 0]));
    let second_16 = responses.len();
    responses.extend(response(2, 16, b"events", &[0]));

    let dir = temp_dir("scan");
    let requests_path = dir.join("requests.bin");
    let responses_path = dir.join("responses.bin");
    std::fs::write(&requests_path, &capture).expect("write");
    std::fs::write(&responses_path, &responses).expect("write");
    let requests_path = requests_path.to_str().expect("UTF-8");
    let responses_path = responses_path.to_str().expect("UTF-8");

    // Requests only.
    let output = run(&["scan", requests_path], b"");
    assert_ok(&output);
    let text = stdout(&output);
    let found = scan_lines(&text);
    let offsets: Vec<usize> = found.iter().map(|f| f.0).collect();
    let expected_offsets: Vec<usize> = expected.iter().map(|e| e.0).collect();
    assert_eq!(offsets, expected_offsets, "{text}");
    for ((_, line, response), (offset, correlation_id)) in found.iter().zip(&expected) {
        assert!(
            line.contains(&format!("offset={offset} (0x{offset:x})")),
            "{line}"
        );
        assert!(
            line.contains(&format!("correlation_id={correlation_id} ")),
            "{line}"
        );
        assert!(response.is_none());
    }
    assert_eq!(
        found[0].1,
        format!(
            "request  offset={o} (0x{o:x}) bytes={len} v0 correlation_id=7 client_id=\"admin\" \
             election_type=PREFERRED topics=2 partitions=4",
            o = expected[0].0,
            len = v0.len()
        )
    );
    assert!(
        found[1].1.contains(" v2 ")
            && found[1]
                .1
                .contains("election_type=UNCLEAN topics=2 partitions=2")
    );
    assert!(found[2].1.contains(" v1 ") && found[2].1.contains("topics=0 partitions=0"));
    assert!(text.ends_with(&format!(
        "4 ElectLeaders requests in {requests_path} ({} bytes)\n",
        capture.len()
    )));

    // With the responses: each request's answer, by correlation id, at its version.
    let output = run(&["scan", requests_path, responses_path], b"");
    assert_ok(&output);
    let text = stdout(&output);
    let found = scan_lines(&text);
    let answers: Vec<Option<String>> = found.iter().map(|f| f.2.clone()).collect();
    let at = |offset: usize| format!("response offset={offset} (0x{offset:x}) ");
    let answer = |i: usize| answers[i].clone().unwrap_or_default();
    assert!(answer(0).starts_with(&at(answer_7)), "{text}");
    assert!(answer(0).contains(" v0 correlation_id=7 "));
    assert!(answer(0).contains("results=1 partitions=4 failed=1 not_needed=0"));
    assert!(answer(1).starts_with(&at(first_16)), "{text}");
    assert!(
        answer(1).contains("partitions=2 failed=0 not_needed=1"),
        "{text}"
    );
    assert_eq!(answer(2), "response not found (correlation_id=9)");
    assert!(answer(3).starts_with(&at(second_16)), "{text}");
    assert!(text.ends_with(&format!(
        "4 ElectLeaders requests in {requests_path} ({} bytes); 3 answered in {responses_path} ({} bytes)\n",
        capture.len(),
        responses.len()
    )));

    // From standard input, and as hex text: the same findings.
    let from_stdin = run(&["scan", "-"], &capture);
    assert_ok(&from_stdin);
    let offsets: Vec<usize> = scan_lines(&stdout(&from_stdin))
        .iter()
        .map(|f| f.0)
        .collect();
    assert_eq!(offsets, expected_offsets);
    let hex: String = capture.iter().map(|b| format!("{b:02x} ")).collect();
    let from_hex = run(&["scan", "--hex", "-"], hex.as_bytes());
    assert_ok(&from_hex);
    let offsets: Vec<usize> = scan_lines(&stdout(&from_hex)).iter().map(|f| f.0).collect();
    assert_eq!(offsets, expected_offsets);
}

#[test]
fn scan_of_a_capture_without_requests_finds_none() {
    let capture = b"\x00\x2b\x00\x02 nothing here \x00\x00\x00\x2b";
    let output = run(&["scan", "-"], capture);
    assert_ok(&output);
    assert_eq!(
        stdout(&output),
        format!(
            "0 ElectLeaders requests in <stdin> ({} bytes)\n",
            capture.len()
        )
    );
}

// ---------------------------------------------------------------------------------------
// Malformed input and usage errors

#[test]
fn malformed_input_exits_1_naming_field_and_offset() {
    let min = load("request-v2-min.bin");
    let multi = load("request-v2-multi.bin");
    let mut trailing = min.clone();
    trailing.insert(min.len(), 0xaa);
    let trailing = fix_size(trailing);
    let mut bad_version = min.clone();
    bad_version[7] = 3;
    // An api key Kafka does not define (999): not a request of another API to pass over.
    let mut bad_key = min.clone();
    bad_key[4..6].copy_from_slice(&999i16.to_be_bytes());
    let cases: Vec<(&str, Vec<u8>, Vec<&str>)> = vec![
        // A frame shorter than its size prefix is truncated, whatever field the cut lands
        // in: the line says how much of it there is.
        (
            "cut inside a frame",
            multi[..40].to_vec(),
            vec![
                "frame 1 (input byte 0)",
                "frame truncated: 40 of 246 bytes (206 missing at input byte 69)",
            ],
        ),
        (
            "cut inside the second topic's name",
            multi[..60].to_vec(),
            vec!["frame truncated: 60 of 246 bytes (186 missing"],
        ),
        (
            "cut inside the partitions",
            multi[..45].to_vec(),
            vec!["frame truncated: 45 of 246 bytes (201 missing"],
        ),
        (
            "cut inside the size prefix",
            min[..3].to_vec(),
            vec!["frame truncated inside its size prefix: 3 of its 4 bytes"],
        ),
        (
            "bytes after the message",
            trailing,
            vec![
                "ElectLeadersRequest at frame byte 29",
                "1 byte(s) left over",
            ],
        ),
        (
            "version 3",
            bad_version,
            vec![
                "RequestHeader.RequestApiVersion at frame byte 6",
                "version 3",
            ],
        ),
        (
            "an api key Kafka does not define",
            bad_key,
            vec!["RequestHeader.RequestApiKey at frame byte 4", "api key 999"],
        ),
        (
            "negative size",
            vec![0xff, 0xff, 0xff, 0xff, 0, 0x2b],
            vec!["size at frame byte 0", "negative length -1"],
        ),
        (
            "size over the maximum",
            vec![0x7f, 0xff, 0xff, 0xff, 0, 0x2b],
            vec!["size at frame byte 0", "over the maximum of 104857600"],
        ),
    ];
    for (what, bad, needles) in cases {
        // After a good frame: the good frame is decoded, then the error, with offsets.
        let mut stream = min.clone();
        stream.extend(&bad);
        let output = run(&["decode"], &stream);
        let mut needles: Vec<&str> = needles
            .into_iter()
            .map(|n| {
                if n.starts_with("frame 1") {
                    "frame 2 (input byte 29)"
                } else {
                    n
                }
            })
            .collect();
        needles.push("<stdin>");
        let err = assert_malformed(&output, &needles);
        assert!(!err.contains("panicked"), "{what}: {err}");
        assert_eq!(stdout(&output), format!("{}\n", KNOWN[0].1), "{what}");
        // inspect: exit 1 as well, the same line on stderr, the error in the tree.
        let inspected = run(&["inspect", "-"], &stream);
        assert_eq!(
            inspected.status.code(),
            Some(1),
            "{what}: {}",
            stderr(&inspected)
        );
        assert_eq!(stderr(&inspected), err, "{what}");
        assert!(stdout(&inspected).contains("+-- ERROR "), "{what}");
    }
    // Input byte offsets add the frame's start to the field's offset within the frame: the
    // second frame (at input byte 29) is whole, but its topics count (frame byte 29, a
    // compact count) says 126 topics, far more than its bytes can hold.
    let mut stream = min.clone();
    let mut bad = multi.clone();
    bad[29] = 0x7f;
    stream.extend(&bad);
    let output = run(&["decode"], &stream);
    assert_malformed(
        &output,
        &["TopicPartitions at frame byte 29 (input byte 58)"],
    );
    // A response at the wrong version.
    let output = run(
        &["decode", "--response", "--version", "2"],
        &load("response-v1.bin"),
    );
    assert_malformed(
        &output,
        &["ReplicaElectionResults at frame byte 15", "not nullable"],
    );
    // Hex text that is not hex.
    let output = run(&["decode", "--hex"], b"00 00\n00 zz");
    assert_malformed(&output, &["not a hex digit", "line 2"]);
    let output = run(&["decode", "--hex"], b"000");
    assert_malformed(&output, &["odd number of hex digits", "(line 1, column 3)"]);
    // The last digit is named where it is, past comments and blank lines.
    let output = run(&["decode", "--hex"], b"00 00 00 1d\n  0 # cut\n\n# end\n");
    assert_malformed(&output, &["odd number of hex digits", "(line 2, column 3)"]);
}

#[test]
fn usage_errors_exit_2() {
    // Each case, and what its message must name: the offending option, argument or file.
    let cases: &[(&[&str], &str)] = &[
        (&[], "subcommand"),
        (&["frobnicate"], "'frobnicate'"),
        (&["help", "frobnicate"], "'frobnicate'"),
        (&["decode", "--bogus"], "'--bogus'"),
        (&["decode", "--version", "1"], "--response"),
        (&["decode", "--response"], "--version"),
        (&["decode", "--response", "--version", "3"], "--version"),
        (&["decode", "--response", "--version"], "--version"),
        (
            &["decode", "--request", "--response", "--version", "1"],
            "--request",
        ),
        // Several files are decoded in turn (tests/manners.rs); stdin only once.
        (&["decode", "-", "-"], "standard input (-)"),
        (&["inspect", "-", "x", "-"], "standard input (-)"),
        (&["mutate", "--verbose", "x"], "--hex"),
        (&["decode", "--hex=yes"], "--hex"),
        (&["encode", "--response"], "'--response'"),
        (&["encode", "a", "b"], "'b'"),
        (&["inspect", "--color", "sometimes"], "--color"),
        (&["scan"], "REQUESTS_FILE"),
        (&["scan", "a", "b", "c"], "'c'"),
        (&["scan", "-", "-"], "standard input (-)"),
        (&["scan", "--version", "1", "a"], "'--version'"),
        (&["decode", "no-such-file.bin"], "no-such-file.bin"),
        (&["scan", "no-such-file.bin"], "no-such-file.bin"),
        // A directory, like a file that cannot be opened.
        (&["decode", "src"], "src"),
        (&["encode", "src"], "src"),
        (&["scan", "src"], "src"),
        (&["scan", "request-v2-min.bin", "src"], "src"),
        (&["inspect", "src"], "src"),
    ];
    for &(args, named) in cases {
        let output = run(args, b"");
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(output.stdout.is_empty(), "{args:?}");
        assert!(stderr(&output).starts_with("elect-leaders: "), "{args:?}");
        assert!(
            stderr(&output).contains(named),
            "{args:?}: {named:?} not named in {}",
            stderr(&output)
        );
    }
    // inspect goes on past a file it cannot open, then exits 2.
    let output = run(&["inspect", "no-such-file.bin", "request-v2-min.bin"], b"");
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("cannot open no-such-file.bin"));
    assert!(stdout(&output).contains("== request-v2-min.bin: frame 1"));
    // And past a directory, saying what it is.
    let output = run(&["inspect", "src", "request-v2-min.bin"], b"");
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("cannot open src: is a directory"));
    assert!(stdout(&output).contains("== request-v2-min.bin: frame 1"));
}

#[test]
fn help_for_every_subcommand() {
    let top = run(&["--help"], b"");
    assert_ok(&top);
    assert!(stdout(&top).contains("Usage: elect-leaders <COMMAND>"));
    assert_eq!(run(&["help"], b"").stdout, top.stdout);
    for command in ["inspect", "decode", "encode", "scan"] {
        for args in [
            vec![command, "--help"],
            vec![command, "-h"],
            vec!["help", command],
            vec![command, "--hex", "--help"],
        ] {
            let output = run(&args, b"");
            assert_ok(&output);
            let text = stdout(&output);
            assert!(
                text.starts_with(&format!("Usage: elect-leaders {command} ")),
                "{args:?}: {text}"
            );
        }
    }
}
