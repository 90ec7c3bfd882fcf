//! `elect-leaders fuzz --target A --compare B` between two of the project's own hostile
//! brokers (`fuzz --serve`): with the same seed they answer the same requests the same way,
//! with different seeds they do not, and each difference is one JSON line whose `--index`
//! sends that one request again.
//!
//! Every server listens on 127.0.0.1, on a free port, and is killed by pid when its test
//! ends, also on failure; each run of the tool is bounded by `--count`, `--duration` and a
//! kill after a minute.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod serving;
use serving::Killed;

fn scratch(name: &str) -> PathBuf {
    serving::scratch("fuzz_compare", name)
}

/// `fuzz --serve 127.0.0.1:0 --seed SEED --record FILE`; returns it and its address.
fn serve(seed: &str, record: &Path) -> (Killed, String) {
    let record = record.to_str().unwrap();
    let args = [
        "--duration",
        "120",
        "--count",
        "100000",
        "--seed",
        seed,
        "--record",
        record,
    ];
    let (child, addr, _) = serving::serve(&args, Stdio::null());
    (child, addr)
}

struct Run {
    status: i32,
    lines: Vec<Value>,
    stderr: String,
}

/// `fuzz --target A --compare B ARGS` (with `--timeout 1000` unless ARGS say otherwise),
/// killed if it runs past a minute.
fn compare(a: &str, b: &str, args: &[&str]) -> Run {
    let timeout: &[&str] = if args.contains(&"--timeout") {
        &[]
    } else {
        &["--timeout", "1000"]
    };
    let mut child = Killed(
        Command::new(env!("CARGO_BIN_EXE_elect-leaders"))
            .args(["fuzz", "--target", a, "--compare", b])
            .args(timeout)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut stdout = child.0.stdout.take().unwrap();
    let mut stderr = child.0.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        stdout.read_to_string(&mut s).unwrap();
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        stderr.read_to_string(&mut s).unwrap();
        s
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "fuzz --compare still running after 60 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let stdout = out.join().unwrap();
    let lines = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    Run {
        status: status.code().expect("exited"),
        lines,
        stderr: err.join().unwrap(),
    }
}

fn summary(run: &Run) -> &str {
    run.stderr
        .lines()
        .find(|l| l.starts_with("compare: "))
        .unwrap_or_else(|| panic!("no summary in {}", run.stderr))
}

#[test]
fn the_same_seed_on_both_sides_is_no_difference() {
    let (_a, a) = serve("5", &scratch("same-a"));
    let (_b, b) = serve("5", &scratch("same-b"));
    let run = compare(
        &a,
        &b,
        &["--count", "80", "--seed", "2", "--duration", "40"],
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(run.lines.is_empty(), "{:?}", run.lines.first());
    let s = summary(&run);
    assert!(s.starts_with("compare: 80 sent ("), "{s}");
    assert!(s.contains(" 80 the same, 0 different;"), "{s}");
    // Both hostile brokers answered most requests (the rest: lying frames, on both sides).
    for side in ["A ", "B "] {
        let line = run.stderr.lines().find(|l| l.starts_with(side)).unwrap();
        let answered: u64 = line
            .split("; ")
            .nth(1)
            .and_then(|t| t.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{line}"));
        assert!(answered >= 40, "{line}");
    }
}

#[test]
fn different_seeds_are_reported_line_by_line_and_each_reproduces_by_index() {
    let (record_a, record_b) = (scratch("diff-a"), scratch("diff-b"));
    let (_a, a) = serve("5", &record_a);
    let (_b, b) = serve("6", &record_b);
    let run = compare(
        &a,
        &b,
        &["--count", "40", "--seed", "3", "--duration", "40"],
    );
    assert_eq!(run.status, 1, "differences: exit 1; {}", run.stderr);
    assert!(
        run.lines.len() >= 5,
        "{} differences of 40",
        run.lines.len()
    );
    let s = summary(&run);
    assert!(
        s.contains(&format!(" {} different;", run.lines.len())),
        "{s}"
    );
    let mut last = None;
    for line in &run.lines {
        let index = line["index"].as_u64().unwrap();
        assert!(index < 40 && last < Some(index), "{line}");
        last = Some(index);
        assert_eq!(line["seed"], 3);
        assert!(!line["request"].as_str().unwrap().is_empty());
        let differences = line["differences"].as_array().unwrap();
        assert!(!differences.is_empty(), "{line}");
        for d in differences {
            assert!(d["path"].is_string() && d["a"].is_string() && d["b"].is_string());
        }
        for side in ["a", "b"] {
            let outcome = line[side]["outcome"].as_str().unwrap();
            assert!(["answer", "closed", "timeout"].contains(&outcome), "{line}");
            if outcome == "answer" {
                assert!(line[side]["hex"].as_str().unwrap().starts_with("0000"));
                assert!(line[side]["decoded"].is_object(), "{line}");
            }
        }
        assert_eq!(
            line["reproduce"],
            format!("elect-leaders fuzz --target {a} --compare {b} --seed 3 --index {index}")
        );
    }
    // A summary line per class of difference, its count no more than the lines.
    assert!(
        run.stderr
            .lines()
            .any(|l| l.starts_with("difference ") && l.contains(" x ")),
        "{}",
        run.stderr
    );

    // `--index N` sends request N alone, the same bytes as in the run, to both: for
    // generated requests (even N) and mutants (odd N, made from request N - 1).
    let well_formed: Vec<&Value> = run
        .lines
        .iter()
        .filter(|l| l["malformed"] == false)
        .take(6)
        .collect();
    assert!(!well_formed.is_empty());
    for line in well_formed {
        let index = line["index"].as_u64().unwrap().to_string();
        let before = std::fs::read_to_string(&record_a).unwrap().lines().count();
        let again = compare(
            &a,
            &b,
            &["--seed", "3", "--index", &index, "--duration", "20"],
        );
        let s = summary(&again);
        assert!(s.starts_with("compare: 1 sent (0 malformed)"), "{s}");
        let record = std::fs::read_to_string(&record_a).unwrap();
        let new: Vec<Value> = record
            .lines()
            .skip(before)
            .map(|l| serde_json::from_str(l).unwrap())
            .filter(|l: &Value| l.get("request").is_some())
            .collect();
        assert_eq!(new.len(), 1, "one ElectLeaders request: {new:?}");
        assert_eq!(new[0]["request"], line["request"], "request {index}");
    }
}

/// Issue 36, finding 11 (seeds): jq reads JSON numbers as doubles, so a seed above 2^53
/// came out rounded. Each difference's line has its seed as a string too (`seed_str`),
/// and the servers' records each response's own seed (almost always above 2^53).
#[test]
fn seeds_past_2_53_are_also_written_as_strings() {
    const SEED: &str = "18446744073709551615"; // u64::MAX: jq prints 18446744073709552000
    let (record_a, record_b) = (scratch("big-seed-a"), scratch("big-seed-b"));
    let (_a, a) = serve("5", &record_a);
    let (_b, b) = serve("6", &record_b);
    let run = compare(
        &a,
        &b,
        &["--count", "10", "--seed", SEED, "--duration", "40"],
    );
    assert_eq!(run.status, 1, "differences: exit 1; {}", run.stderr);
    assert!(!run.lines.is_empty());
    for line in &run.lines {
        assert_eq!(line["seed"].as_u64(), Some(u64::MAX), "{line}");
        assert_eq!(line["seed_str"], SEED, "{line}");
    }
    let mut past = 0;
    for l in std::fs::read_to_string(&record_a).unwrap().lines() {
        let l: Value = serde_json::from_str(l).unwrap();
        let Some(seed) = l.get("seed") else { continue };
        let seed = seed.as_u64().unwrap();
        assert_eq!(l["seed_str"], seed.to_string(), "{l}");
        past += usize::from(seed > 1 << 53);
    }
    assert!(past > 0, "no response seed past 2^53");
}

#[test]
fn a_broker_that_cannot_be_reached_is_exit_2() {
    let (_a, a) = serve("5", &scratch("unreachable-a"));
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let run = compare(&a, &closed, &["--count", "5", "--duration", "20"]);
    assert_eq!(run.status, 2, "{}", run.stderr);
    assert!(run.lines.is_empty());
    assert!(
        run.stderr.contains(&format!("B {closed}: cannot connect")),
        "{}",
        run.stderr
    );
}

/// Issue 36, finding 9, for `--compare`: a broker that answers ApiVersions and then
/// nothing, in a run shorter than `--timeout`, was "0 sent, 0 different" and exit 0 (the
/// only wait cut by the duration, and not counted); it is a broker that answered nothing.
#[test]
fn a_broker_that_answers_nothing_within_the_duration_is_exit_2() {
    let (_a, a) = serve("5", &scratch("silent-a"));
    // Answers ApiVersions (v0, an empty list), then reads and never answers.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for s in listener.incoming().take(4) {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                let mut head = [0u8; 12];
                if s.read_exact(&mut head).is_err() {
                    return;
                }
                let size = i32::from_be_bytes([head[0], head[1], head[2], head[3]]);
                let mut rest = vec![0u8; (size.max(8) - 8) as usize];
                if s.read_exact(&mut rest).is_err() {
                    return;
                }
                let mut answer = 10i32.to_be_bytes().to_vec();
                answer.extend_from_slice(&head[8..12]);
                answer.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
                if s.write_all(&answer).is_err() {
                    return;
                }
                let mut buf = [0u8; 4096];
                while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
            });
        }
    });
    let run = compare(
        &a,
        &silent,
        &["--count", "5", "--duration", "2", "--timeout", "60000"],
    );
    assert_eq!(run.status, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "B {silent}: connected and ApiVersions answered, but no ElectLeaders request answered"
        )),
        "{}",
        run.stderr
    );
}

#[test]
fn compare_needs_target_and_index_needs_compare() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_elect-leaders"))
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&[
        "fuzz",
        "--serve",
        "127.0.0.1:0",
        "--compare",
        "127.0.0.1:1",
        "--duration",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["fuzz", "--target", "127.0.0.1:1", "--index", "3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--compare"));
}
