//! Every relative link of the workspace's Markdown files leads somewhere: the file (or
//! directory) it names exists, and an anchor (`GUARD.md#every-setting`, `#layout`) is a
//! heading of the file it points into, as GitHub names headings. Documents move between
//! crates (issue 43, item 6); a link left pointing at the old place fails here.
//!
//! Links to other sites are not followed. Code blocks and code spans are not links.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Directories not searched for Markdown: build output, version control, and the fuzz
/// corpora (thousands of files, none of them Markdown).
const SKIPPED: &[&str] = &["target", "corpus/fuzz", "corpus/regressions", "mutants.out"];

fn markdown_files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let relative = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if name.starts_with('.') || SKIPPED.iter().any(|s| relative == *s || name == *s) {
            continue;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            markdown_files(root, &path, out);
        } else if name.ends_with(".md") {
            out.push(path);
        }
    }
}

/// The text outside fenced code blocks, a line at a time, with code spans blanked.
fn prose(text: &str) -> Vec<String> {
    let mut fence: Option<&str> = None;
    let mut lines = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        let marker = if t.starts_with("```") {
            Some("```")
        } else if t.starts_with("~~~") {
            Some("~~~")
        } else {
            None
        };
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(f), Some(m)) if f == m => fence = None,
            (None, None) => {
                let mut out = String::new();
                for (i, part) in line.split('`').enumerate() {
                    out.push_str(if i % 2 == 0 { part } else { "" });
                }
                lines.push(out);
            }
            _ => {}
        }
    }
    lines
}

/// The targets of the inline links `[text](target)` of a line.
fn links(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let end = rest.find(')').unwrap_or(rest.len());
        let target = rest[..end].split_whitespace().next().unwrap_or("");
        found.push(target.trim_matches(|c| c == '<' || c == '>').to_owned());
        rest = &rest[end..];
    }
    found
}

/// The anchors GitHub gives a file's headings: lower case, punctuation dropped, spaces as
/// hyphens, `-1`, `-2`, ... after a repeated one.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for line in prose_keeping_code_spans(text) {
        let Some(heading) = line
            .strip_prefix('#')
            .map(|h| h.trim_start_matches('#'))
            .filter(|h| h.starts_with(' '))
        else {
            continue;
        };
        // A link in a heading counts by its text.
        let mut plain = String::new();
        let mut rest = heading.trim();
        while let Some(at) = rest.find("](") {
            plain.push_str(&rest[..at]);
            rest = &rest[at..];
            rest = &rest[rest.find(')').map_or(rest.len(), |e| e + 1)..];
        }
        plain.push_str(rest);
        let base: String = plain
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

/// The lines outside fenced code blocks, code spans kept (a heading's code is its text).
fn prose_keeping_code_spans(text: &str) -> Vec<&str> {
    let mut fenced = false;
    text.lines()
        .filter(|line| {
            let t = line.trim_start();
            if t.starts_with("```") || t.starts_with("~~~") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .collect()
}

#[test]
fn every_relative_link_leads_to_a_file_and_a_heading() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    markdown_files(root, root, &mut files);
    files.sort();
    let readme = root.join("README.md");
    assert!(files.contains(&readme), "{files:?}");
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for line in prose(&text) {
            for target in links(&line) {
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (path, anchor) = match target.split_once('#') {
                    Some((path, anchor)) => (path, Some(anchor)),
                    None => (target.as_str(), None),
                };
                let linked = if path.is_empty() {
                    file.clone()
                } else {
                    file.parent().unwrap().join(path)
                };
                let name = file.strip_prefix(root).unwrap().display();
                if !linked.exists() {
                    broken.push(format!("{name}: {target}: no such file"));
                    continue;
                }
                let Some(anchor) = anchor else { continue };
                if linked.extension().is_some_and(|e| e == "md") {
                    let headings = anchors(&std::fs::read_to_string(&linked).unwrap());
                    if !headings.contains(anchor) {
                        broken.push(format!("{name}: {target}: no such heading"));
                    }
                }
            }
        }
    }
    assert!(checked > 50, "only {checked} relative links found");
    assert!(
        broken.is_empty(),
        "{} broken links:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn anchors_are_named_as_github_names_them() {
    let text = "# Title\n## Checking a file: `--check-config`\n## The guard's own CPU (1.0)\n\
                ```sh\n# not a heading\n```\n## Title\n";
    let got = anchors(text);
    let want = [
        "title",
        "checking-a-file---check-config",
        "the-guards-own-cpu-10",
        "title-1",
    ];
    assert_eq!(got, want.iter().map(|s| s.to_string()).collect());
}
