//! The crate's modules are layers, and no module imports from a layer above its own (no
//! import circle): the `use` statements and the paths in the code of every `src/**/*.rs`
//! (`crate::…`, `super::…`, `self::…`, and a child module's name) are read and checked
//! against [`LAYERS`], bottom first. Test code (`tests.rs` files, `#[cfg(test)] mod tests`
//! blocks) and comments are not read. A new source file must be placed in the table.

use std::collections::BTreeMap;
use std::path::Path;

/// The modules, bottom layer first. A module may use what a strictly lower layer defines;
/// modules of one layer do not use each other. An index module (`reader`, `traffic`, the
/// crate root) sits above its children, whose items it re-exports.
const LAYERS: &[&[&str]] = &[
    // Plain types and the error: nothing of the crate below them.
    &["types", "error"],
    // Link, IP and TCP decoding of one packet.
    &["decode"],
    // TCP reassembly.
    &["reasm"],
    // The readers: what a packet becomes, pcapng's blocks, then the file reader and the
    // live packets, then their index.
    &["reader::decoder"],
    &["reader::pcapng"],
    &["reader::file", "reader::packets"],
    &["reader"],
    // Kafka: what is handed on, the requests in flight, framing, pairing, the analyser,
    // the iterator over a capture, then their index.
    &["traffic::item"],
    &["traffic::in_flight"],
    &["traffic::framing"],
    &["traffic::pairing"],
    &["traffic::analyzer"],
    &["traffic::iter"],
    &["traffic"],
    // The summary counted from the traffic's frames and notes.
    &["summary"],
    // lib.rs: the crate's index.
    &[""],
];

#[test]
fn capture_modules_import_only_from_layers_below() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    read_sources(&src, &src, &mut files);
    assert!(files.len() >= 10, "{} files under {src:?}", files.len());
    let problems = violations(&files, LAYERS);
    assert!(
        problems.is_empty(),
        "imports against the layers:\n{}",
        problems.join("\n")
    );
}

/// The check catches what the crate had before it was layered: `decode` and `reasm` took
/// their types from `reader` above them, and `reader` compared a close reason with a
/// constant of `reasm` through an inline path (allowed: reasm is below) while `reasm` used
/// `reader`'s types (not allowed).
#[test]
fn capture_the_layer_check_catches_an_import_upward() {
    let old: &[(&str, &str)] = &[
        ("types", ""),
        ("error", ""),
        (
            "decode",
            "use std::net::IpAddr;\nuse crate::reader::Endpoint;\n",
        ),
        (
            "reasm",
            "use crate::decode::{Segment, TCP_ACK};\nuse crate::reader::{ConnId, Endpoint, \
             Event,\n    Limits, Timestamp};\n",
        ),
        (
            "reader",
            "mod decoder;\n// use crate::traffic::Note; (a comment)\nfn f(r: &str) -> bool { r == \
             crate::reasm::IDLE }\npub use file::Capture;\n",
        ),
        ("reader::decoder", "use super::file::BUFFER;\n"),
        ("reader::pcapng", "const S: &str = \"crate::traffic\";\n"),
        (
            "reader::file",
            "use super::{decoder::Decoder, pcapng::{self, Block}};\n",
        ),
        ("reader::packets", "use crate::Limits;\n"),
        ("traffic::item", ""),
        ("traffic::in_flight", ""),
        ("traffic::framing", ""),
        ("traffic::pairing", ""),
        ("traffic::analyzer", ""),
        ("traffic::iter", "use crate::reader::Capture;\n"),
        (
            "traffic",
            "mod iter;\npub use iter::Traffic;\n#[cfg(test)]\nmod tests {\n    use \
             crate::lib_test::*;\n}\n",
        ),
        ("summary", "use crate::traffic::Note;\n"),
        ("", "pub use reader::Capture;\npub use traffic::Traffic;\n"),
    ];
    let files: Vec<(String, String)> = old
        .iter()
        .map(|(m, s)| (m.to_string(), s.to_string()))
        .collect();
    let problems = violations(&files, LAYERS);
    let found = |needle: &str| problems.iter().any(|p| p.contains(needle));
    assert!(found("decode uses reader"), "{problems:#?}");
    assert!(found("reasm uses reader"), "{problems:#?}");
    assert!(found("reader::decoder uses reader::file"), "{problems:#?}");
    assert!(
        found("reader::packets uses the crate root"),
        "{problems:#?}"
    );
    // Allowed: downward, siblings' children, an index's own children; comments, strings
    // and test modules are not read.
    assert_eq!(problems.len(), 4, "{problems:#?}");
}

// ---------------------------------------------------------------------------------------
// The check

/// Every `.rs` file under `dir` but test files, with its module path (`reader::file`; the
/// crate root `lib.rs` is the empty path).
fn read_sources(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            read_sources(root, &path, out);
            continue;
        }
        if path.extension().and_then(|e| e.to_str()) != Some("rs")
            || path.file_name().and_then(|n| n.to_str()) == Some("tests.rs")
        {
            continue;
        }
        let rel = path.strip_prefix(root).unwrap().with_extension("");
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_str().unwrap().to_owned())
            .collect();
        let module = if parts == ["lib"] {
            String::new()
        } else {
            parts.join("::")
        };
        out.push((module, std::fs::read_to_string(&path).unwrap()));
    }
}

/// What breaks the layers: a module missing from the table or listed without a file, and
/// each path that reaches a module of the same layer or above.
fn violations(files: &[(String, String)], layers: &[&[&str]]) -> Vec<String> {
    let mut layer_of = BTreeMap::new();
    for (i, layer) in layers.iter().enumerate() {
        for m in *layer {
            layer_of.insert(m.to_string(), i);
        }
    }
    let mut problems = Vec::new();
    for m in layer_of.keys() {
        if !files.iter().any(|(f, _)| f == m) {
            problems.push(format!("{} is in the table but has no file", name(m)));
        }
    }
    // (module, the module it reaches) -> the paths that do.
    let mut upward: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (module, source) in files {
        let Some(&mine) = layer_of.get(module) else {
            problems.push(format!("{} is not in the table of layers", name(module)));
            continue;
        };
        let here: Vec<&str> = module.split("::").filter(|s| !s.is_empty()).collect();
        for path in paths(source) {
            let Some(absolute) = resolve(&here, &path, &layer_of) else {
                continue;
            };
            // The longest prefix that is a module of the table: the module it reaches.
            let target = (0..=absolute.len())
                .rev()
                .map(|n| absolute[..n].join("::"))
                .find(|m| layer_of.contains_key(m))
                .unwrap_or_default();
            if target == *module {
                continue;
            }
            let theirs = layer_of.get(&target).copied().unwrap_or(usize::MAX);
            if theirs >= mine {
                upward
                    .entry((module.clone(), target))
                    .or_default()
                    .push(path.join("::"));
            }
        }
    }
    for ((module, target), paths) in upward {
        let how = if target.is_empty() {
            "the crate root (name the module that defines what it uses)"
        } else {
            &target
        };
        problems.push(format!(
            "{} uses {how}, not a layer below it: {}",
            name(&module),
            paths.join(", ")
        ));
    }
    problems
}

fn name(module: &str) -> &str {
    if module.is_empty() {
        "the crate root"
    } else {
        module
    }
}

/// A path as written, made absolute from the module `here`: `crate::…`, `super::…`,
/// `self::…`, or the name of a child module. None for other crates and the standard
/// library.
fn resolve(
    here: &[&str],
    path: &[String],
    layer_of: &BTreeMap<String, usize>,
) -> Option<Vec<String>> {
    let mut at: Vec<String> = here.iter().map(|s| s.to_string()).collect();
    let mut rest = path;
    match path.first()?.as_str() {
        "crate" => {
            at.clear();
            rest = &path[1..];
        }
        "self" => rest = &path[1..],
        "super" => {
            while rest.first().is_some_and(|s| s == "super") {
                at.pop()?;
                rest = &rest[1..];
            }
        }
        first => {
            let child = at
                .iter()
                .map(String::as_str)
                .chain([first])
                .collect::<Vec<_>>()
                .join("::");
            if !layer_of.contains_key(&child) {
                return None;
            }
        }
    }
    at.extend(rest.iter().filter(|s| *s != "self").cloned());
    Some(at)
}

/// Every path of the source's code: each leaf of each `use` tree, and each path in the
/// code that starts with `crate`, `super` or `self` (`crate::reasm::IDLE`). Comments,
/// string and character literals, and a `#[cfg(test)] mod tests { … }` are left out.
fn paths(source: &str) -> Vec<Vec<String>> {
    let tokens = tokens(source);
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let t = tokens[i].as_str();
        if t == "#" && tokens[i..].starts_with(&test_module()) {
            break;
        }
        if t == "use" {
            let end = tokens[i..]
                .iter()
                .position(|t| t == ";")
                .map_or(tokens.len(), |e| i + e);
            let mut at = i + 1;
            tree(&tokens[..end], &mut at, &mut Vec::new(), &mut out);
            i = end + 1;
            continue;
        }
        if matches!(t, "crate" | "super" | "self") && tokens.get(i + 1).is_some_and(|n| n == "::") {
            let mut path = vec![t.to_owned()];
            let mut j = i + 1;
            while tokens.get(j).is_some_and(|n| n == "::")
                && tokens.get(j + 1).is_some_and(|n| is_ident(n))
            {
                path.push(tokens[j + 1].clone());
                j += 2;
            }
            out.push(path);
            i = j;
            continue;
        }
        i += 1;
    }
    out
}

fn test_module() -> Vec<String> {
    ["#", "[", "cfg", "(", "test", ")", "]", "mod", "tests", "{"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// One `use` tree from `tokens[*at]`: its leaves, each with `prefix` in front.
fn tree(tokens: &[String], at: &mut usize, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tokens.get(*at).map(String::as_str) {
        Some("{") => {
            *at += 1;
            while *at < tokens.len() && tokens[*at] != "}" {
                tree(tokens, at, prefix, out);
                if tokens.get(*at).is_some_and(|t| t == ",") {
                    *at += 1;
                }
            }
            *at += 1;
        }
        Some("*") => {
            *at += 1;
            out.push(prefix.clone());
        }
        Some(t) if is_ident(t) => {
            prefix.push(t.to_owned());
            *at += 1;
            if tokens.get(*at).is_some_and(|t| t == "::") {
                *at += 1;
                tree(tokens, at, prefix, out);
            } else {
                out.push(prefix.clone());
                if tokens.get(*at).is_some_and(|t| t == "as") {
                    *at += 2;
                }
            }
            prefix.pop();
        }
        _ => *at += 1,
    }
}

fn is_ident(t: &str) -> bool {
    t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
}

/// Identifiers, `::` and single punctuation; comments and literals dropped.
fn tokens(source: &str) -> Vec<String> {
    let b = source.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if source[i..].starts_with("//") {
            i += source[i..].find('\n').unwrap_or(b.len() - i);
        } else if source[i..].starts_with("/*") {
            i += source[i..].find("*/").map_or(b.len() - i, |e| e + 2);
        } else if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == b'\'' {
            // A character literal ('x', '\n', '"'), or a lifetime ('a) left as a quote.
            if b.get(i + 1) == Some(&b'\\') {
                i += 3 + source[i + 3..].find('\'').map_or(0, |e| e + 1);
            } else if b.get(i + 2) == Some(&b'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if c.is_ascii_alphanumeric() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(source[start..i].to_owned());
        } else if source[i..].starts_with("::") {
            out.push("::".to_owned());
            i += 2;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else {
            let len = source[i..].chars().next().map_or(1, char::len_utf8);
            out.push(source[i..i + len].to_owned());
            i += len;
        }
    }
    out
}
