//! `elect-leaders audit verify` on audit files written by a real guard (`elect-leaders
//! proxy` in front of a fake broker that answers every frame "ok"): whole, it passes; with
//! one record edited, removed, moved, copied, or checked under the wrong key, it fails
//! (exit 1) naming the replica and the seq; two starts appending to one file are two
//! chains, each with its start (issue 45, item 2).
#![cfg(feature = "proxy")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use kafka_elect_leaders::{
    ElectLeadersRequestData, ElectionType, EncodeRequestExt, TopicPartitionsData,
};
use serde_json::Value;

const TIMEOUT: Duration = Duration::from_secs(10);
const BIN: &str = env!("CARGO_BIN_EXE_elect-leaders");
static NEXT: AtomicUsize = AtomicUsize::new(0);

fn dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "audit-verify-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn read_frame(s: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut size = [0u8; 4];
    s.read_exact(&mut size)?;
    let mut frame = vec![0u8; 4 + i32::from_be_bytes(size).max(0) as usize];
    frame[..4].copy_from_slice(&size);
    s.read_exact(&mut frame[4..])?;
    Ok(frame)
}

/// A fake broker: every frame answered with its correlation id and "ok".
fn fake_broker() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { return };
            thread::spawn(move || {
                while let Ok(f) = read_frame(&mut s) {
                    let mut answer = 6i32.to_be_bytes().to_vec();
                    answer.extend_from_slice(&f[8..12]);
                    answer.extend_from_slice(b"ok");
                    if s.write_all(&answer).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// A guard writing its audit to `audit`, killed when dropped.
struct Guard(Child, SocketAddr);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn guard(broker: SocketAddr, audit: &Path, extra: &[&str]) -> Guard {
    let mut child = Command::new(BIN)
        .args(["proxy", "--listen", "127.0.0.1:0", "--upstream"])
        .arg(broker.to_string())
        .arg("--audit-log")
        .arg(audit)
        .args(["--deny-unclean", "--replica-id", "guard-7"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .strip_prefix("listening ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    Guard(child, addr)
}

/// `n` decisions on one connection, alternately allowed (PREFERRED) and refused
/// (UNCLEAN), then waits for the audit file to hold `lines` lines in all.
fn decide(guard: &Guard, n: i32, audit: &Path, lines: usize) {
    let mut c = TcpStream::connect(guard.1).unwrap();
    c.set_read_timeout(Some(TIMEOUT)).unwrap();
    let topics = [TopicPartitionsData::new(b"orders", &[0, 1])];
    for id in 0..n {
        let election_type = if id % 2 == 0 {
            ElectionType::PREFERRED
        } else {
            ElectionType::UNCLEAN
        };
        let frame = ElectLeadersRequestData {
            correlation_id: id,
            client_id: Some(b"t"),
            election_type,
            topic_partitions: Some(&topics),
            timeout_ms: 30_000,
            ..Default::default()
        }
        .encode_to_vec(2)
        .unwrap();
        c.write_all(&frame).unwrap();
        read_frame(&mut c).unwrap();
    }
    let deadline = Instant::now() + TIMEOUT;
    while read_lines(audit).len() < lines {
        assert!(Instant::now() < deadline, "{lines} audit lines");
        thread::sleep(Duration::from_millis(20));
    }
}

fn read_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    std::fs::write(
        path,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
}

fn verify(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(["audit", "verify"])
        .args(args)
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A trail of one start: the chain's start and eight decisions.
fn trail(extra: &[&str]) -> (PathBuf, Vec<String>) {
    let dir = dir();
    let audit = dir.join("audit.jsonl");
    let g = guard(fake_broker(), &audit, extra);
    decide(&g, 8, &audit, 9);
    drop(g);
    let lines = read_lines(&audit);
    (dir, lines)
}

/// `lines` written to a file of `dir`, verified; the exit code and the output.
fn check(dir: &Path, name: &str, lines: &[String], args: &[&str]) -> (i32, String) {
    let path = dir.join(name);
    write_lines(&path, lines);
    let mut all = vec![path.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = verify(&all);
    (out.status.code().unwrap(), text(&out))
}

#[test]
fn a_true_trail_passes_and_each_change_is_named() {
    let (dir, lines) = trail(&[]);
    assert_eq!(lines.len(), 9, "{lines:?}");
    let first: Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(first["event"], "chain-start");
    assert_eq!(first["algorithm"], "sha256");
    for (seq, line) in lines.iter().enumerate() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["replica"], "guard-7");
        assert_eq!(v["seq"], seq);
    }
    let (code, out) = check(&dir, "whole", &lines, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("replica guard-7 chain "), "{out}");
    assert!(
        out.contains("9 record(s), 1 chain(s) of 1 replica(s): whole"),
        "{out}"
    );

    // One decision edited: refused made allowed.
    let mut edited = lines.clone();
    assert!(
        edited[4].contains("\"verdict\":\"refused\""),
        "{}",
        edited[4]
    );
    edited[4] = edited[4].replace("\"verdict\":\"refused\"", "\"verdict\":\"allowed\"");
    let (code, out) = check(&dir, "edited", &edited, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("edited: replica guard-7 chain "), "{out}");
    assert!(out.contains(" seq 4: "), "{out}");

    // One removed.
    let mut removed = lines.clone();
    removed.remove(5);
    let (code, out) = check(&dir, "removed", &removed, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("gap: replica guard-7"), "{out}");
    assert!(out.contains(" seq 5: 1 record(s) missing"), "{out}");

    // Two swapped.
    let mut swapped = lines.clone();
    swapped.swap(6, 7);
    let (code, out) = check(&dir, "swapped", &swapped, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("reorder: replica guard-7"), "{out}");
    assert!(out.contains(" seq 6: out of order: after seq 7"), "{out}");

    // One twice.
    let mut twice = lines.clone();
    twice.insert(3, lines[2].clone());
    let (code, out) = check(&dir, "twice", &twice, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("duplicate: replica guard-7"), "{out}");
    assert!(out.contains(" seq 2: a copy of"), "{out}");

    // The JSON report says the same.
    let (code, out) = check(&dir, "removed-json", &removed, &["--json"]);
    assert_eq!(code, 1);
    let report: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(report["whole"], false);
    assert_eq!(report["findings"][0]["kind"], "gap");
    assert_eq!(report["findings"][0]["replica"], "guard-7");
    assert_eq!(report["findings"][0]["seq"], 5);

    // Standard input too; a file that is not there is exit 2.
    let mut child = Command::new(BIN)
        .args(["audit", "verify", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let piped = lines.iter().map(|l| format!("{l}\n")).collect::<String>();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(piped.as_bytes())
        .unwrap();
    assert_eq!(child.wait_with_output().unwrap().status.code(), Some(0));
    let missing = dir.join("missing");
    assert_eq!(verify(&[missing.to_str().unwrap()]).status.code(), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_keyed_trail_fails_under_another_key_or_none() {
    let dir = dir();
    let key = dir.join("key");
    std::fs::write(&key, "a secret of more than sixteen bytes\n").unwrap();
    let wrong = dir.join("wrong");
    std::fs::write(&wrong, "another secret, also long enough\n").unwrap();
    let (trail_dir, lines) = trail(&["--audit-chain-key-file", key.to_str().unwrap()]);
    assert!(
        lines[0].contains("\"algorithm\":\"hmac-sha256\""),
        "{}",
        lines[0]
    );
    // The key is in no line.
    assert!(lines.iter().all(|l| !l.contains("a secret")));
    let key_arg = ["--key-file", key.to_str().unwrap()];
    let (code, out) = check(&dir, "keyed", &lines, &key_arg);
    assert_eq!(code, 0, "{out}");
    let (code, out) = check(
        &dir,
        "keyed",
        &lines,
        &["--key-file", wrong.to_str().unwrap()],
    );
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("edited: replica guard-7"), "{out}");
    assert!(out.contains(" seq 0: "), "{out}");
    let (code, out) = check(&dir, "keyed", &lines, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("give it with --key-file"), "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&trail_dir).unwrap();
}

#[test]
fn a_restart_begins_a_second_chain_that_says_where_it_starts() {
    let dir = dir();
    let audit = dir.join("audit.jsonl");
    let broker = fake_broker();
    let g = guard(broker, &audit, &[]);
    decide(&g, 3, &audit, 4);
    drop(g);
    let g = guard(broker, &audit, &[]);
    decide(&g, 2, &audit, 7);
    drop(g);
    let out = verify(&[audit.to_str().unwrap()]);
    let report = text(&out);
    assert_eq!(out.status.code(), Some(0), "{report}");
    let starts: Vec<&str> = report
        .lines()
        .filter(|l| l.starts_with("replica guard-7 chain "))
        .collect();
    assert_eq!(starts.len(), 2, "{report}");
    assert!(
        starts[0].contains("4 record(s), seq 0 to 3; started at "),
        "{report}"
    );
    assert!(
        starts[1].contains("3 record(s), seq 0 to 2; started at "),
        "{report}"
    );
    assert!(starts[1].contains("audit.jsonl:5 "), "{report}");
    assert!(
        report.contains("7 record(s), 2 chain(s) of 1 replica(s): whole"),
        "{report}"
    );
    // The second start removed: its chain begins at seq 1, a gap.
    let mut lines = read_lines(&audit);
    lines.remove(4);
    let (code, out) = check(&dir, "no-second-start", &lines, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("its start is not in the input"), "{out}");
    assert!(out.contains(" seq 0: 1 record(s) missing"), "{out}");
    // Unless the input is said to begin after it.
    let tail = lines[5..].to_vec();
    let (code, out) = check(&dir, "tail", &tail, &["--partial"]);
    assert_eq!(code, 0, "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}
