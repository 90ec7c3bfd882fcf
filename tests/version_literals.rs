//! The set of ElectLeaders versions is written down once, in `src/version.rs`
//! (`VERSIONS`, `MIN_VERSION`, `MAX_VERSION`, `VERSION_COUNT`, `nth_version`, ...). This test
//! reads every Rust file of the workspace and fails on a line that speaks of a version and
//! spells the set out itself (`0..=2`, `% 3`, `<= 2`, `3i16`, ...), so that adding a version
//! stays a change of one module.

use std::path::{Path, PathBuf};

/// Spellings of "the versions 0 to 2" found in this code base before the constants existed.
const PATTERNS: &[&str] = &[
    "0..=2", "0..3", "% 3", "%3", "<= 2", "> 2", "< 3", ">= 3", "3i16", "& 3",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if !matches!(name.as_str(), "target" | ".git" | "corpus" | "scratch") {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// A line that mentions a version and holds one of the patterns, outside comments.
fn offends(line: &str) -> Option<&'static str> {
    let code = line.split("//").next().unwrap_or("");
    let lower = code.to_ascii_lowercase();
    if !lower.contains("version") {
        return None;
    }
    PATTERNS.iter().copied().find(|p| {
        code.match_indices(p)
            .any(|(at, _)| stands_alone(code, at, p))
    })
}

/// Whether the pattern at `at` is not part of a longer token: `>> 2` is a shift, not `> 2`;
/// `0..30` is not `0..3`.
fn stands_alone(code: &str, at: usize, pattern: &str) -> bool {
    let before = code[..at].chars().next_back();
    let rest = &code[at + pattern.len()..];
    // An integer suffix (`0..=2i16`) is part of the literal.
    let rest = ["i16", "i32", "i64", "u8", "u16", "u32", "u64", "usize"]
        .iter()
        .find_map(|suffix| rest.strip_prefix(suffix))
        .unwrap_or(rest);
    let after = rest.chars().next();
    let operator = pattern.starts_with(['<', '>', '%', '&']);
    let longer_operator = operator && before.is_some_and(|c| "<>=&".contains(c));
    let longer_token = after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    !longer_operator && !longer_token
}

#[test]
fn no_version_literal_outside_the_version_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "crates", "fuzz", "benches", "examples", "tests"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 50, "found only {} Rust files", files.len());
    let mut found = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(root).unwrap();
        if relative == Path::new("src/version.rs") || relative == Path::new(file!()) {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            if let Some(pattern) = offends(line) {
                found.push(format!(
                    "{}:{}: `{pattern}`: {}",
                    relative.display(),
                    n + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "version literals outside src/version.rs (use VERSIONS, MAX_VERSION, \
         is_supported, nth_version):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_sees_what_it_looks_for() {
    assert_eq!(offends("for version in 0..=2 {"), Some("0..=2"));
    assert_eq!(offends("let v = (m.version + 1) % 3;"), Some("% 3"));
    assert_eq!(offends("if version > 2 {"), Some("> 2"));
    assert_eq!(offends("let version = nth(selector >> 2);"), None);
    assert_eq!(offends("for version in 0..30 {"), None);
    assert_eq!(offends("for version in 0..=2i16 {"), Some("0..=2"));
    assert_eq!(offends("for version in VERSIONS {"), None);
    assert_eq!(offends("let p = p % 3; // a partition"), None);
    assert_eq!(offends("// version 0..=2 in a comment"), None);
}
