//! What the tests of `fuzz --serve` and `fuzz --compare` share: the hostile broker started
//! on a free loopback port, killed by pid when the test ends (also on failure), and a
//! scratch directory per test file.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};

/// Kills the child when dropped (a failed assertion included).
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A path for `name` under this test file's own directory (`file`), unique to the run.
pub fn scratch(file: &str, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(file);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{name}-{}", std::process::id()))
}

/// Starts `fuzz --serve 127.0.0.1:0` with `extra` flags (and `--duration 60` unless they
/// say otherwise), `stderr` where its diagnostics go; returns it, its address and the rest
/// of its standard output.
pub fn serve(extra: &[&str], stderr: Stdio) -> (Killed, String, BufReader<ChildStdout>) {
    let duration: &[&str] = if extra.contains(&"--duration") {
        &[]
    } else {
        &["--duration", "60"]
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_elect-leaders"))
        .args(["fuzz", "--serve", "127.0.0.1:0"])
        .args(duration)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let child = Killed(child);
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("fuzz: serving on ")
        .unwrap_or_else(|| panic!("first line {line:?}"))
        .to_string();
    (child, addr, stdout)
}
