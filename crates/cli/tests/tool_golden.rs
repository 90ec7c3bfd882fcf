//! The tool's outputs, pinned byte for byte: `decode`, `decode --all`, `scan --json` and
//! `inspect` on every corpus frame and every real capture, `summary` and `summary --json`
//! on the captures, `gen` and `mutate` for fixed seeds. Each case keeps its exit status,
//! standard output and standard error in one file of `tests/golden/tool/`; binary output is
//! kept as hex.
//!
//! These files hold the tool still while its code moves between crates: a change of output
//! shows up here as a diff to review. After a deliberate change, rewrite them with
//! `UPDATE_GOLDEN=1 cargo test -p elect-leaders --test tool_golden` and review `git diff`.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// One run of the tool: its arguments, the folder it runs in (so that file names print as
/// short relative names, the same on every machine), and what it reads on stdin.
struct Case {
    name: String,
    args: Vec<String>,
    dir: PathBuf,
    stdin: Vec<u8>,
    binary_out: bool,
}

fn case(name: String, dir: &Path, args: &[&str]) -> Case {
    Case {
        name,
        args: args.iter().map(|a| a.to_string()).collect(),
        dir: dir.to_path_buf(),
        stdin: Vec::new(),
        binary_out: false,
    }
}

fn cases() -> Vec<Case> {
    let corpus = root().join("../../corpus");
    let captures = corpus.join("captures");
    let mut cases = Vec::new();
    let mut frames: Vec<String> = std::fs::read_dir(&corpus)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".bin"))
        .collect();
    frames.sort();
    assert!(frames.len() >= 10, "the corpus has its frames");
    for file in &frames {
        let stem = file.trim_end_matches(".bin");
        let f = file.as_str();
        cases.push(case(format!("decode-{stem}"), &corpus, &["decode", f]));
        cases.push(case(
            format!("decode-all-{stem}"),
            &corpus,
            &["decode", "--all", f],
        ));
        cases.push(case(
            format!("inspect-{stem}"),
            &corpus,
            &["inspect", "--color", "never", f],
        ));
        if stem.starts_with("request-") {
            cases.push(case(
                format!("scan-json-{stem}"),
                &corpus,
                &["scan", "--json", f],
            ));
        }
    }
    // Malformed input: what came before is printed, then one line naming the field and
    // the offset, and status 1.
    cases.push(case(
        "decode-request-as-response".into(),
        &corpus,
        &[
            "decode",
            "--response",
            "--version",
            "2",
            "request-v2-multi.bin",
        ],
    ));
    let mut cut = case("decode-truncated".into(), &corpus, &["decode", "-"]);
    let mut frame = std::fs::read(corpus.join("request-v2-multi.bin")).unwrap();
    frame.truncate(frame.len() - 7);
    cut.stdin = frame;
    cases.push(cut);
    // A request and its answer as one connection's two directions.
    cases.push(case(
        "scan-json-pair-v2-min".into(),
        &corpus,
        &[
            "scan",
            "--json",
            "request-v2-min.bin",
            "response-v2-min.bin",
        ],
    ));
    for file in [
        "elect-leaders-kafka-4.4.pcap",
        "elect-leaders-kafka-4.4.pcapng",
    ] {
        let ext = file.rsplit('.').next().unwrap();
        cases.push(case(
            format!("capture-decode-{ext}"),
            &captures,
            &["decode", file],
        ));
        cases.push(case(
            format!("capture-decode-all-{ext}"),
            &captures,
            &["decode", "--all", file],
        ));
        cases.push(case(
            format!("capture-scan-json-{ext}"),
            &captures,
            &["scan", "--json", file],
        ));
        cases.push(case(
            format!("capture-summary-{ext}"),
            &captures,
            &["summary", file],
        ));
        cases.push(case(
            format!("capture-summary-json-{ext}"),
            &captures,
            &["summary", "--json", file],
        ));
        cases.push(case(
            format!("capture-inspect-{ext}"),
            &captures,
            &["inspect", "--color", "never", file],
        ));
    }
    // A capture read from standard input, as `tcpdump -w - | elect-leaders decode -` reads it.
    let mut piped = case("capture-decode-stdin".into(), &captures, &["decode", "-"]);
    piped.stdin = std::fs::read(captures.join("elect-leaders-kafka-4.4.pcap")).unwrap();
    cases.push(piped);

    let gens: [&[&str]; 5] = [
        &["gen", "--seed", "7", "--count", "25"],
        &["gen", "--seed", "7", "--count", "25", "--version", "0"],
        &[
            "gen",
            "--seed",
            "11",
            "--count",
            "25",
            "--kind",
            "response",
            "--version",
            "0",
        ],
        &[
            "gen",
            "--seed",
            "11",
            "--count",
            "25",
            "--kind",
            "response",
            "--version",
            "1",
        ],
        &[
            "gen",
            "--seed",
            "11",
            "--count",
            "25",
            "--kind",
            "response",
            "--version",
            "2",
        ],
    ];
    for (i, args) in gens.iter().enumerate() {
        let mut c = case(format!("gen-{i}"), &corpus, args);
        c.binary_out = true;
        cases.push(c);
    }
    for (i, (file, extra)) in [
        ("request-v2-multi.bin", &[][..]),
        ("request-v0.bin", &[][..]),
        (
            "response-v2-multi.bin",
            &["--kind", "response", "--version", "2"][..],
        ),
        (
            "response-v1-errors.bin",
            &["--kind", "response", "--version", "1"][..],
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let mut args = vec!["mutate", "--seed", "5", "--count", "20"];
        args.extend_from_slice(extra);
        args.push(file);
        let mut c = case(format!("mutate-{i}"), &corpus, &args);
        c.binary_out = true;
        cases.push(c);
    }
    cases
}

fn run(case: &Case) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_elect-leaders"))
        .args(&case.args)
        .current_dir(&case.dir)
        .env_remove("NO_COLOR")
        .env_remove("ELECT_LEADERS_PEAK_RSS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut input = child.stdin.take().unwrap();
    let stdin = case.stdin.clone();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let mut text = String::new();
    writeln!(text, "$ elect-leaders {}", case.args.join(" ")).unwrap();
    writeln!(text, "exit: {:?}", output.status.code()).unwrap();
    writeln!(text, "--- stdout").unwrap();
    if case.binary_out {
        for chunk in output.stdout.chunks(32) {
            for b in chunk {
                write!(text, "{b:02x}").unwrap();
            }
            text.push('\n');
        }
    } else {
        text.push_str(&String::from_utf8_lossy(&output.stdout));
    }
    writeln!(text, "--- stderr").unwrap();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    text
}

#[test]
fn tool_outputs_match_the_golden_files() {
    let dir = root().join("tests/golden/tool");
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    if update {
        std::fs::create_dir_all(&dir).unwrap();
    }
    let mut differ = Vec::new();
    let cases = cases();
    for case in &cases {
        let actual = run(case);
        let path = dir.join(format!("{}.txt", case.name));
        if update {
            std::fs::write(&path, &actual).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_GOLDEN=1 writes it)", path.display()));
        if expected != actual {
            let line = expected
                .lines()
                .zip(actual.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(expected.lines().count().min(actual.lines().count()));
            differ.push(format!(
                "{} (first difference at line {})",
                case.name,
                line + 1
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} cases differ from tests/golden/tool/: {}",
        differ.len(),
        cases.len(),
        differ.join(", ")
    );
    // Every golden file is a case: a file left behind by a removed case is an error.
    if !update {
        let names: std::collections::HashSet<String> =
            cases.iter().map(|c| format!("{}.txt", c.name)).collect();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            assert!(
                names.contains(&name),
                "tests/golden/tool/{name}: no case writes it"
            );
        }
    }
}
