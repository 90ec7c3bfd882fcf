//! Apache Kafka's own tables, as `interop.KafkaTables` prints them from the kafka-clients
//! jar the tests use (4.4.0, `interop/java`, built with Maven): one JSON value a line, an
//! API key of `ApiKeys`, an error of `Errors` or a key of `TopicConfig`. The codec's
//! `tests/kafka_tables.rs` and the guard's read them.
//!
//! Needs `java` and `mvn` on PATH (and Maven Central the first time); without them
//! [`kafka_tables`] says so in one line and returns `None`, and the test passes.
//! `KEL_SKIP_JAVA=1` skips on purpose. `.ci/run` always has them.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// One line on the real stderr (libtest captures `eprintln!` of passing tests).
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

fn have(tool: &str, arg: &str) -> bool {
    Command::new(tool)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Kafka's tables, one JSON value a line (the lines as printed, for the caller to parse),
/// read once per test binary; `None`, after one line saying why, when Java or Maven is
/// missing or `KEL_SKIP_JAVA` is set.
pub fn kafka_tables() -> Option<&'static [String]> {
    static TABLES: OnceLock<Option<Vec<String>>> = OnceLock::new();
    TABLES.get_or_init(read).as_deref()
}

/// The classpath of `interop/java` (its classes and the kafka-clients jar it depends on),
/// built with Maven: what the tests that run Kafka's own code give `java -cp`. `None`,
/// after one line on stderr naming `test` and saying it needs them `to` do something, when
/// Java or Maven is missing or `KEL_SKIP_JAVA` is set. A failing build panics.
pub fn interop_classpath(test: &str, to: &str) -> Option<String> {
    if std::env::var_os("KEL_SKIP_JAVA").is_some() {
        say(&format!("{test}: skipped: KEL_SKIP_JAVA is set"));
        return None;
    }
    if !have("java", "-version") || !have("mvn", "-v") {
        say(&format!(
            "{test}: skipped: needs `java` (17+) and `mvn` on PATH to {to}"
        ));
        return None;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop/java");
    let out = Command::new("mvn")
        .args(["-q", "-B", "package", "-DskipTests"])
        .current_dir(&dir)
        .output()
        .expect("mvn runs");
    assert!(
        out.status.success(),
        "building interop/java with Maven failed (set KEL_SKIP_JAVA=1 to skip):\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let deps = std::fs::read_to_string(dir.join("target/classpath.txt"))
        .expect("interop/java/target/classpath.txt");
    Some(format!(
        "{}:{}",
        dir.join("target/classes").display(),
        deps.trim()
    ))
}

fn read() -> Option<Vec<String>> {
    let classpath = interop_classpath("kafka_tables", "read Kafka's tables")?;
    let out = Command::new("java")
        .args(["-cp", &classpath, "interop.KafkaTables"])
        .output()
        .expect("java runs");
    assert!(
        out.status.success(),
        "interop.KafkaTables failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = String::from_utf8(out.stdout).expect("UTF-8");
    Some(lines.lines().map(str::to_owned).collect())
}
