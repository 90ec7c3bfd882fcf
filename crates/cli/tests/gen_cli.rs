//! `elect-leaders gen`, `mutate` and `fuzz` (argument handling only: a live broker is the
//! e2e tests' business): deterministic for a seed, valid frames from `gen`, usable in pipes.

use std::io::Write;
use std::process::{Command, Stdio};

use kafka_elect_leaders::{parse_request, parse_response, Frames};

fn tool(args: &[&str], stdin: &[u8]) -> (i32, Vec<u8>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_elect-leaders"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn gen_writes_valid_requests_the_same_for_a_seed() {
    let (code, frames, err) = tool(&["gen", "--seed", "3", "--count", "300"], b"");
    assert_eq!(code, 0, "{err}");
    let mut n = 0;
    for frame in Frames::new(&frames) {
        parse_request(frame.unwrap()).unwrap();
        n += 1;
    }
    assert_eq!(n, 300);
    assert_eq!(
        tool(&["gen", "--seed", "3", "--count", "300"], b"").1,
        frames
    );
    assert_ne!(
        tool(&["gen", "--seed", "4", "--count", "300"], b"").1,
        frames
    );
}

#[test]
fn gen_writes_responses_at_the_version_asked() {
    for version in kafka_elect_leaders::VERSIONS {
        let v = version.to_string();
        let args = [
            "gen",
            "--kind",
            "response",
            "--version",
            &v,
            "--count",
            "100",
        ];
        let (code, frames, err) = tool(&args, b"");
        assert_eq!(code, 0, "{err}");
        for frame in Frames::new(&frames) {
            parse_response(frame.unwrap(), version).unwrap();
        }
    }
}

#[test]
fn gen_hex_pipes_into_mutate_hex() {
    let (code, hex, err) = tool(&["gen", "--hex", "--count", "20", "--seed", "1"], b"");
    assert_eq!(code, 0, "{err}");
    assert_eq!(String::from_utf8(hex.clone()).unwrap().lines().count(), 20);
    let args = ["mutate", "--hex", "--count", "3", "--seed", "9", "-"];
    let (code, mutants, err) = tool(&args, &hex);
    assert_eq!(code, 0, "{err}");
    let text = String::from_utf8(mutants.clone()).unwrap();
    assert_eq!(text.lines().filter(|l| !l.starts_with('#')).count(), 60);
    assert_eq!(tool(&args, &hex).1, mutants, "not deterministic");
}

#[test]
fn mutate_reads_binary_frames_and_keeps_going_on_garbage() {
    let mut input = kafka_elect_leaders_testkit::load("request-v2-multi.bin");
    input.extend_from_slice(b"\x00\x00\x00\x09garbage");
    let (code, out, err) = tool(&["mutate", "--count", "5"], &input);
    assert_eq!(code, 0, "{err}");
    assert!(!out.is_empty());
    let response = kafka_elect_leaders_testkit::load("response-v1.bin");
    let args = [
        "mutate",
        "--kind",
        "response",
        "--version",
        "1",
        "--hex",
        "--count",
        "4",
    ];
    let (code, _, err) = tool(&args, input_hex(&response).as_bytes());
    assert_eq!(code, 0, "{err}");
}

fn input_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn usage_errors() {
    for (args, named) in [
        (&["gen", "--version", "3"][..], "--version"),
        (&["mutate", "--kind", "response"][..], "--version"),
        (&["fuzz"][..], "--target"),
        (&["fuzz", "--target", "nowhere"][..], "--target"),
        (
            &["fuzz", "--target", "127.0.0.1:1", "--rate", "0"][..],
            "--rate",
        ),
        (&["gen", "--count", "many"][..], "--count"),
    ] {
        let (code, _, err) = tool(args, b"");
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains(named),
            "{args:?}: {named:?} not named in {err}"
        );
    }
    let (code, out, _) = tool(&["help", "fuzz"], b"");
    assert_eq!(code, 0);
    assert!(String::from_utf8(out)
        .unwrap()
        .contains("--target <HOST:PORT>"));
}

#[test]
fn fuzz_reports_an_unreachable_broker() {
    // A port nobody listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let target = format!("127.0.0.1:{port}");
    let (code, out, _) = tool(&["fuzz", "--target", &target, "--count", "3"], b"");
    // Issue 44, item 9: exit 2, as fuzz --compare says a broker cannot be reached.
    assert_eq!(code, 2);
    assert!(String::from_utf8(out)
        .unwrap()
        .contains("anomaly unreachable"));
}
