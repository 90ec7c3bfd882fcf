//! Running the `elect-leaders` binary, as the tests of the tool's commands share it: in a
//! given directory (so file names are as short as users type them), with bytes on standard
//! input and colours left to their default (off: standard output is a pipe).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// `corpus/captures/`: the real captures and their README.
#[allow(dead_code)] // not every test file reads the captures
pub fn captures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/captures")
}

/// Runs the binary in `dir` with `args`, `stdin` written to it, and waits for it.
pub fn run_in(dir: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_elect-leaders"))
        .args(args)
        .current_dir(dir)
        .env_remove("NO_COLOR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut input = child.stdin.take().expect("stdin is piped");
    let stdin = stdin.to_vec();
    // Written from another thread: a large input must not deadlock against a full stdout.
    // The binary may stop reading early (a usage error): the write's error is not ours.
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    let output = child.wait_with_output().expect("the binary finishes");
    writer.join().expect("stdin writer");
    output
}
