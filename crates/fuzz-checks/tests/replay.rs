//! Replays every fuzz input kept in `corpus/fuzz/TARGET/` (seeds and the minimized corpus
//! of the campaigns) and every past crash (`corpus/regressions/TARGET/`, which `cmin`
//! never touches) through the same check functions the fuzz targets call, on stable, as
//! part of `cargo test`.
//!
//! The corpora live in the repository only: in a copy without `corpus/fuzz/`, every test
//! here passes after one line on stderr saying so.

use kafka_elect_leaders_fuzz_checks as checks;

use std::io::Write;
use std::path::Path;
use std::sync::Once;

fn replay(target: &str, check: fn(&[u8])) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus");
    if !root.join("fuzz").is_dir() {
        // Once for the whole file, on the real stderr: libtest captures `eprintln!`.
        static SKIPPED: Once = Once::new();
        SKIPPED.call_once(|| {
            let line = format!(
                "replay: skipped: no fuzz corpora at {} (they are kept in the \
                 repository only)\n",
                root.join("fuzz").display()
            );
            let _ = std::io::stderr().write_all(line.as_bytes());
        });
        return;
    }
    let dir = root.join("fuzz").join(target);
    let mut inputs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    if let Ok(crashes) = std::fs::read_dir(root.join("regressions").join(target)) {
        inputs.extend(crashes.map(|e| e.unwrap().path()));
    }
    inputs.sort();
    assert!(!inputs.is_empty(), "no inputs for {target}");
    for path in &inputs {
        let data = std::fs::read(path).unwrap();
        let outcome = std::panic::catch_unwind(|| check(&data));
        assert!(outcome.is_ok(), "{target}: {} fails", path.display());
    }
}

#[test]
fn parse_request() {
    replay("parse_request", checks::check_parse_request);
}

#[test]
fn parse_response() {
    replay("parse_response", checks::check_parse_response);
}

#[test]
fn roundtrip_request() {
    replay("roundtrip_request", checks::check_roundtrip_request);
}

#[test]
fn roundtrip_response() {
    replay("roundtrip_response", checks::check_roundtrip_response);
}

#[test]
fn split_stream() {
    replay("split_stream", checks::check_split_stream);
}

#[test]
fn differential() {
    replay("differential", checks::check_differential);
}

#[test]
fn edit() {
    replay("edit", checks::check_edit);
}

#[test]
fn error_response() {
    replay("error_response", checks::check_error_response);
}

#[test]
fn reencode() {
    replay("reencode", checks::check_reencode);
}

#[test]
fn scan() {
    replay("scan", checks::check_scan);
}

#[test]
fn needed() {
    replay("needed", checks::check_needed);
}

#[test]
fn pairing() {
    replay("pairing", checks::check_pairing);
}

#[test]
fn policy() {
    replay("policy", checks::check_policy);
}

#[test]
fn capture() {
    replay("capture", checks::check_capture);
}

/// The structure-aware target runs two checks on each input (`fuzz_targets/structured.rs`).
#[test]
fn structured() {
    replay("structured", |data| {
        checks::check_parse_request(data);
        let mut selected = vec![0];
        selected.extend_from_slice(data);
        checks::check_differential(&selected);
    });
}

#[test]
fn generators() {
    replay("generators", checks::check_generators);
}

/// Strict: the bugs kept in `corpus/regressions/conn/` are fixed. Without the fuzz
/// binary's counting allocator the memory property is not checked here.
#[test]
fn conn() {
    replay("conn", checks::check_conn);
}

#[test]
fn addresses() {
    replay("addresses", checks::check_addresses);
}

#[test]
fn leadership() {
    replay("leadership", checks::check_leadership);
}
