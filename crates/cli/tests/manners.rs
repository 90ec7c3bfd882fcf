//! The tool's manners, as a new user meets them (issue 26, point 7): several files where
//! one would do, a pipe into `inspect`, binary output to a terminal, flags that would be
//! ignored, inputs that are not frames at all, and empty inputs.

use kafka_elect_leaders_testkit as common;

mod tool;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::corpus_dir;
use serde_json::Value;

fn run(args: &[&str], stdin: &[u8]) -> Output {
    tool::run_in(&corpus_dir(), args, stdin)
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "elect-leaders-manners-{}-{name}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Runs `command` (a shell line) under `script`, which gives it a pseudo-terminal for its
/// standard input and output; `None` where `script` is missing.
fn on_terminal(command: &str) -> Option<(Option<i32>, String)> {
    let output = Command::new("script")
        .args(["-qec", command, "/dev/null"])
        .current_dir(corpus_dir())
        .stdin(Stdio::null())
        .output()
        .ok()?;
    // `script` copies the terminal's output, stderr included, to its standard output.
    Some((
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    ))
}

fn skipped(test: &str) {
    std::io::stderr()
        .write_all(format!("{test}: skipped: no `script`\n").as_bytes())
        .unwrap();
}

#[test]
fn decode_takes_several_files_and_names_each_in_source() {
    let output = run(&["decode", "request-v0.bin", "request-v2-min.bin"], b"");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let objects: Vec<Value> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(objects.len(), 2, "{}", stdout(&output));
    assert_eq!(objects[0]["source"]["file"], "request-v0.bin");
    assert_eq!(objects[0]["source"]["frame"], 1);
    assert_eq!(objects[0]["api_version"], 0);
    assert_eq!(objects[1]["source"]["file"], "request-v2-min.bin");
    assert_eq!(objects[1]["api_version"], 2);
    // One file alone prints exactly as before: no "source".
    let one = run(&["decode", "request-v0.bin"], b"");
    assert!(!stdout(&one).contains("\"source\""), "{}", stdout(&one));
}

#[test]
fn decode_goes_on_after_a_bad_file_and_says_so_at_the_end() {
    let output = run(
        &["decode", "no-such-file.bin", "request-v2-min.bin", "-"],
        b"not frames at all\n",
    );
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot open no-such-file.bin"), "{err}");
    assert!(
        err.contains("<stdin>: not a Kafka frame stream or a capture"),
        "{err}"
    );
    assert_eq!(stdout(&output).lines().count(), 1, "{}", stdout(&output));
    let twice = run(&["decode", "-", "-"], b"");
    assert_eq!(twice.status.code(), Some(2));
    assert!(
        stderr(&twice).contains("standard input (-) can be given only once"),
        "{}",
        stderr(&twice)
    );
}

#[test]
fn inspect_reads_what_is_piped_in() {
    let frame = std::fs::read(corpus_dir().join("request-v0.bin")).unwrap();
    let output = run(&["inspect", "--color", "never"], &frame);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        text.contains("== <stdin>: frame 1 at input byte 0 =="),
        "{text}"
    );
    assert!(!text.contains("(bundled)"), "{text}");
}

#[test]
fn inspect_on_a_terminal_with_no_file_shows_the_samples() {
    let bin = env!("CARGO_BIN_EXE_elect-leaders");
    let Some((status, text)) = on_terminal(&format!("'{bin}' inspect --color never")) else {
        return skipped("inspect_on_a_terminal_with_no_file_shows_the_samples");
    };
    assert_eq!(status, Some(0), "{text}");
    assert!(
        text.contains("== request-v2-min.bin (bundled): frame 1"),
        "{text}"
    );
    assert!(
        text.contains("== response-v2-min.bin (bundled): frame 1"),
        "{text}"
    );
}

#[test]
fn gen_and_mutate_refuse_binary_to_a_terminal_as_encode_does() {
    let bin = env!("CARGO_BIN_EXE_elect-leaders");
    for (binary, hex, expect) in [
        ("gen --count 3", "gen --hex --count 1", "00"),
        (
            "mutate request-v2-min.bin",
            "mutate --hex --verbose src/request-v2-min.hex",
            "# ",
        ),
    ] {
        let Some((status, text)) = on_terminal(&format!("'{bin}' {binary}")) else {
            return skipped("gen_and_mutate_refuse_binary_to_a_terminal_as_encode_does");
        };
        assert_eq!(status, Some(2), "{binary}: {text}");
        assert!(
            text.contains("refusing to write binary frames to a terminal: use --hex"),
            "{binary}: {text}"
        );
        let (status, text) = on_terminal(&format!("'{bin}' {hex}")).unwrap();
        assert_eq!(status, Some(0), "{hex}: {text}");
        assert!(text.contains(expect), "{hex}: {text}");
    }
    // Into a pipe, binary as before.
    let piped = run(&["gen", "--count", "2"], b"");
    assert_eq!(piped.status.code(), Some(0));
    assert!(!piped.stdout.is_empty());
}

#[test]
fn mutate_verbose_without_hex_is_a_usage_error() {
    let output = run(&["mutate", "--verbose", "request-v2-min.bin"], b"");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("--verbose") && err.contains("--hex"), "{err}");
    assert!(output.stdout.is_empty());
}

/// What is not frames nor a capture is named for what it looks like, at once.
#[test]
fn text_images_and_json_are_not_taken_for_frames() {
    let dir = temp_dir("not-frames");
    let png: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x10\0\0\0\x10\x08\x06\0\0\0";
    let cases: [(&str, &[u8], &[&str]); 5] = [
        (
            "notes.txt",
            b"hello world, this is not Kafka\n",
            &["text (\"hello world", "here 1751477356, over the maximum"],
        ),
        ("image.png", png, &["PNG file (image/png", "negative"]),
        (
            "objects.json",
            b"{\"kind\":\"request\",\"api_version\":2}\n",
            &["JSON text", "'encode' turns JSON objects into frames"],
        ),
        (
            "frames.hex",
            b"0000001d002b0002000000000000\n",
            &["read it with --hex"],
        ),
        (
            "data.gz",
            b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03",
            &["GZ file"],
        ),
    ];
    for (file, bytes, needles) in cases {
        let path = dir.join(file);
        std::fs::write(&path, bytes).unwrap();
        for command in ["decode", "inspect"] {
            let output = run(&[command, path.to_str().unwrap()], b"");
            let err = stderr(&output);
            assert_eq!(output.status.code(), Some(1), "{command} {file}: {err}");
            assert!(
                err.contains("not a Kafka frame stream or a capture: it looks like"),
                "{command} {file}: {err}"
            );
            for needle in needles {
                assert!(err.contains(needle), "{command} {file}: {needle}: {err}");
            }
            assert_eq!(err.lines().count(), 1, "{command} {file}: {err}");
            assert!(!err.contains("frame size"), "{command} {file}: {err}");
        }
    }
    // The same from a pipe.
    let output = run(&["decode"], png);
    assert!(stderr(&output).contains("<stdin>: not a Kafka frame stream"));
}

/// An empty input is named, and the exit status says nothing was read.
#[test]
fn an_empty_input_is_said_and_exits_1() {
    let dir = temp_dir("empty");
    let empty = dir.join("empty.bin");
    std::fs::write(&empty, b"").unwrap();
    let empty = empty.to_str().unwrap();
    let comments = dir.join("comments.hex");
    std::fs::write(&comments, b"# nothing here\n\n").unwrap();
    let comments = comments.to_str().unwrap();
    let cases: [(&[&str], &str); 8] = [
        (
            &["decode", empty],
            "empty.bin: empty (0 bytes): nothing to read",
        ),
        (&["decode"], "<stdin>: empty (0 bytes): nothing to read"),
        (&["inspect", empty], "empty.bin: empty (0 bytes)"),
        (&["inspect"], "<stdin>: empty (0 bytes)"),
        (&["scan", empty], "empty.bin: empty (0 bytes)"),
        (&["mutate", empty], "empty.bin: empty (0 bytes)"),
        (&["decode", "--hex", comments], "no hex digits in it"),
        (&["encode"], "<stdin>: no JSON object in it"),
    ];
    for (args, needle) in cases {
        let output = run(args, b"");
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(output.stdout.is_empty(), "{args:?}: {}", stdout(&output));
    }
    assert!(Path::new(empty).exists());
}

/// Built without the feature `live`, `--interface` says so, and how to get it, in one line.
#[cfg(not(feature = "live"))]
#[test]
fn decode_interface_without_the_live_feature_says_how_to_get_it() {
    let out = run(&["decode", "--interface", "lo"], b"");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("elect-leaders: --interface lo: this elect-leaders was built without live capture (build it with --features live"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

/// The live capture's options need --interface, also beside a FILE (where clap's own
/// `requires` is waived, and the option was ignored), and --interface takes no FILE.
#[test]
fn live_options_need_an_interface_and_no_file() {
    for args in [
        &["decode", "--filter", "tcp"][..],
        &["decode", "--count", "3"],
        &["decode", "--duration", "1s"],
        &["decode", "--interface", "lo", "x.pcap"],
        &["decode", "--filter", "tcp", "x.pcap"],
        &["decode", "--count", "3", "x.pcap"],
        &["decode", "--duration", "1s", "x.pcap", "y.pcap"],
        &["scan", "--filter", "tcp", "x.pcap"],
        &["scan", "--count", "2", "requests.bin", "responses.bin"],
        &["scan", "--json", "--duration", "1s", "x.pcap"],
        &["summary", "--filter", "tcp", "x.pcap"],
        &["summary", "--count", "2", "x.pcap"],
        &["summary", "--duration", "2s", "x.pcap"],
    ] {
        let out = run(args, b"");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("--interface"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}

/// Issue 44, item 9: `decode` with nothing piped in, on a terminal, said nothing while it
/// waited: it says it reads standard input, and how to end it.
#[test]
fn decode_waiting_on_a_terminal_says_it_reads_standard_input() {
    let bin = env!("CARGO_BIN_EXE_elect-leaders");
    let Some((_, text)) = on_terminal(&format!("'{bin}' decode")) else {
        return skipped("decode_waiting_on_a_terminal_says_it_reads_standard_input");
    };
    assert!(
        text.contains(
            "reading frames or a capture from standard input (a terminal); end it with Ctrl-D"
        ),
        "{text}"
    );
}

/// Issue 44, item 9: `encode --help` says how to feed it what `decode` prints of a capture,
/// and the way it gives works.
#[test]
fn encode_help_says_how_to_feed_it_decodes_output() {
    let help = stdout(&run(&["encode", "--help"], b""));
    assert!(
        help.contains(
            "elect-leaders decode capture.pcap | jq -c 'del(.source)' | elect-leaders encode --hex"
        ),
        "{help}"
    );
    // What the line does, without jq: each object without its "source", then encode.
    let capture = Path::new("captures/elect-leaders-kafka-4.4.pcap");
    let decoded = run(&["decode", capture.to_str().unwrap()], b"");
    let mut without_source = String::new();
    for line in stdout(&decoded).lines() {
        let mut object: Value = serde_json::from_str(line).unwrap();
        object.as_object_mut().unwrap().remove("source");
        without_source.push_str(&format!("{object}\n"));
    }
    let encoded = run(&["encode", "--hex"], without_source.as_bytes());
    assert_eq!(encoded.status.code(), Some(0), "{}", stderr(&encoded));
    assert_eq!(stdout(&encoded).lines().count(), 12);
    // As it is, encode refuses "source" (the reason the help says so).
    let as_is = run(&["encode", "--hex"], stdout(&decoded).as_bytes());
    assert_eq!(as_is.status.code(), Some(1));
}

/// Issue 44, item 9: `decode --help` and the tool's README say alike which side is the
/// broker's.
#[test]
fn decode_help_and_the_readme_say_alike_which_side_is_the_brokers() {
    let rule = "else the side that received the SYN, else the side an ElectLeaders request was \
                proven to go to";
    let flat = |text: &str| {
        text.replace('`', "")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let help = flat(&stdout(&run(&["decode", "--help"], b"")));
    let readme = flat(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap(),
    );
    assert!(help.contains(rule), "{help}");
    assert!(readme.contains(rule), "crates/cli/README.md");
}
