//! Whether a crate's modules form layers: no module uses, directly or through others, a
//! module that uses it. A circle makes two files one unit that cannot be read, tested or
//! moved apart. [`graph`] reads every file under a crate's `src/` and collects the modules
//! each one names (`use crate::...`, `super::...`, `self::...`, a child module's name, and
//! the same paths written inline); [`circle`] finds a circle in it; [`assert_no_circle`]
//! is what each crate's `tests/modules.rs` calls.
//!
//! What it reads, and what not: one module a file (`x.rs` and `x/mod.rs` are `x`), code only
//! (comments, strings and `#[cfg(test)] mod ... { }` blocks are skipped, and `tests.rs`
//! files: tests may use anything). A path names the deepest module it reaches; the rest are
//! items. Paths to the crate root are left out: the root declares the modules and
//! re-exports their items, and a path through it (`crate::Config`) is not followed to the
//! module that defines the item.
//!
//! Not a Rust parser: a reader of paths, enough for this workspace's code. Each crate's
//! test also checks edges known to be there, so that a reader gone blind fails.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// A module path inside a crate (`["commands", "fuzz"]`); the root is empty.
pub type Module = Vec<String>;

/// Panics, naming the circle, when the modules under `src` (a crate's `src/`) are not
/// acyclic; `crate_name` is for the message. Returns the graph, for the edges a test
/// expects.
pub fn assert_no_circle(src: &Path, crate_name: &str) -> BTreeMap<Module, BTreeSet<Module>> {
    let graph = graph(src);
    if let Some(circle) = circle(&graph) {
        panic!(
            "a circle among {crate_name}'s modules (each uses the next): {}",
            circle.iter().map(name).collect::<Vec<_>>().join(" -> ")
        );
    }
    graph
}

/// Whether `from` names `to` in `graph` (modules written as `a::b`).
pub fn uses(graph: &BTreeMap<Module, BTreeSet<Module>>, from: &str, to: &str) -> bool {
    let from: Module = from.split("::").map(str::to_owned).collect();
    let to: Module = to.split("::").map(str::to_owned).collect();
    graph.get(&from).is_some_and(|e| e.contains(&to))
}

/// A module's path as written (`commands::fuzz`; the root is `crate`).
pub fn name(m: &Module) -> String {
    if m.is_empty() {
        "crate".to_owned()
    } else {
        m.join("::")
    }
}

/// Every module under `src` and the modules it names.
pub fn graph(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut files = Vec::new();
    walk(src, src, &mut files);
    // Modules declared `#[cfg(test)] mod name;` in a file of their own are test code too.
    let test_only: Vec<Module> = files
        .iter()
        .flat_map(|(module, text)| {
            test_modules(&code_only(text))
                .into_iter()
                .map(move |name| [module.clone(), vec![name]].concat())
        })
        .collect();
    files.retain(|(m, _)| !test_only.iter().any(|t| m.starts_with(t)));
    let modules: BTreeSet<Module> = files.iter().map(|(m, _)| m.clone()).collect();
    assert!(!modules.is_empty(), "no module under {src:?}");
    let mut graph = BTreeMap::new();
    for (module, text) in &files {
        let tokens = tokens(&without_tests(&code_only(text)));
        let mut named = BTreeSet::new();
        for i in 0..tokens.len() {
            if i > 0 && tokens[i - 1] == "::" {
                continue;
            }
            if tokens.get(i + 1).map(String::as_str) != Some("::") {
                continue;
            }
            let base = match tokens[i].as_str() {
                "crate" => Vec::new(),
                "self" => module.clone(),
                "super" => module[..module.len().saturating_sub(1)].to_vec(),
                child => {
                    let mut m = module.clone();
                    m.push(child.to_owned());
                    if !modules.contains(&m) {
                        continue;
                    }
                    m
                }
            };
            path(&tokens, i + 1, base, &modules, &mut named);
        }
        named.retain(|m| m != module && !m.is_empty());
        graph.insert(module.clone(), named);
    }
    graph
}

/// The names of the modules `code` declares `#[cfg(test)] mod name;` (out of line).
fn test_modules(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        rest = &rest[at + "#[cfg(test)]".len()..];
        let decl = without_visibility(rest.trim_start());
        let Some(after) = decl.strip_prefix("mod ") else {
            continue;
        };
        let name: String = after
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if after.trim_start()[name.len()..]
            .trim_start()
            .starts_with(';')
        {
            names.push(name);
        }
    }
    names
}

/// The `.rs` files under `dir`, with their module paths.
fn walk(root: &Path, dir: &Path, files: &mut Vec<(Module, String)>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .expect("src is readable")
        .map(|e| e.expect("an entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(root, &path, files);
        } else if path.extension().is_some_and(|e| e == "rs")
            && path.file_name().is_some_and(|n| n != "tests.rs")
        {
            let relative = path.strip_prefix(root).expect("under src");
            let mut module: Module = relative
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(
                module.last().map(String::as_str),
                Some("mod" | "main" | "lib")
            ) {
                module.pop();
            }
            files.push((module, fs::read_to_string(&path).expect("a readable file")));
        }
    }
}

/// Follows a path from `tokens[at]` (a `::`), `base` the module reached so far: the deepest
/// module named goes into `named`, and each element of a `{a, b::c}` group is followed.
/// Returns where the path ends.
fn path(
    tokens: &[String],
    mut at: usize,
    mut base: Module,
    modules: &BTreeSet<Module>,
    named: &mut BTreeSet<Module>,
) -> usize {
    let mut items = false;
    while tokens.get(at).map(String::as_str) == Some("::") {
        match tokens.get(at + 1).map(String::as_str) {
            Some("{") => return group(tokens, at + 2, base, modules, named),
            Some("super") if !items => {
                base.pop();
            }
            Some("self") => {}
            Some(ident) if !items => {
                let mut next = base.clone();
                next.push(ident.to_owned());
                if modules.contains(&next) {
                    base = next;
                } else {
                    // An item; what follows it (`Type::method`) is no module.
                    items = true;
                }
            }
            _ => {}
        }
        at += 2;
    }
    named.insert(base);
    at
}

/// A `{...}` group's elements, from `tokens[at]` (after its `{`), each a path from `base`.
/// Returns where the group ends (after its `}`).
fn group(
    tokens: &[String],
    mut at: usize,
    base: Module,
    modules: &BTreeSet<Module>,
    named: &mut BTreeSet<Module>,
) -> usize {
    while let Some(token) = tokens.get(at) {
        match token.as_str() {
            "}" => return at + 1,
            "," | ";" => at += 1,
            "{" => at = group(tokens, at + 1, base.clone(), modules, named),
            ident => {
                // `a::b` inside the group is `base::a::b`: `a` is read as if after a `::`.
                let mut element = vec!["::".to_owned(), ident.to_owned()];
                let mut end = at + 1;
                let mut depth = 0;
                while let Some(t) = tokens.get(end) {
                    match t.as_str() {
                        "{" => depth += 1,
                        "}" if depth == 0 => break,
                        "}" => depth -= 1,
                        "," if depth == 0 => break,
                        _ => {}
                    }
                    element.push(t.clone());
                    end += 1;
                }
                path(&element, 0, base.clone(), modules, named);
                at = end;
            }
        }
    }
    at
}

/// The text with comments, string and character literals blanked.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r' && matches!(next, Some('"' | '#')) && !ident_char(out.chars().last()) {
            // A raw string: r"...", r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= chars.len() {
                    break;
                }
                if chars[j] == '"' && (0..hashes).all(|h| chars.get(j + 1 + h) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            i = j;
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if next == Some('\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push_str("' '");
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push_str("' '");
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_char(c: Option<char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || c == '_')
}

/// The code without its test modules: `#[cfg(test)] mod name { ... }`, and any `#[cfg(...)]`
/// naming `test` (`#[cfg(all(test, feature = "proxy"))]`).
/// `decl` without a leading visibility (`pub`, `pub(crate)`, `pub(in path)`).
fn without_visibility(decl: &str) -> &str {
    let Some(rest) = decl.strip_prefix("pub") else {
        return decl;
    };
    let rest = rest.trim_start();
    match rest.strip_prefix('(') {
        Some(inner) => inner
            .find(')')
            .map_or(decl, |end| inner[end + 1..].trim_start()),
        None => rest,
    }
}

fn without_tests(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(") {
        out.push_str(&rest[..at]);
        let attribute_end = rest[at..].find(")]").map_or(rest.len(), |e| at + e + 2);
        let attribute = &rest[at..attribute_end];
        let after = rest[attribute_end..].trim_start();
        let names_test = tokens(attribute).iter().any(|t| t == "test");
        // `pub mod`, `pub(crate) mod`, `pub(in crate::x) mod` are test modules too.
        let after = without_visibility(after);
        let is_mod = after.starts_with("mod ") && {
            let head = after.split(['{', ';']).next().unwrap_or("");
            after.as_bytes().get(head.len()) == Some(&b'{')
        };
        if !(names_test && is_mod) {
            out.push_str(attribute);
            rest = &rest[attribute_end..];
            continue;
        }
        let open = after.find('{').expect("a mod block");
        let mut depth = 0;
        let mut end = after.len();
        for (i, c) in after[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Identifiers, `::` and the punctuation paths use; everything else is dropped, and a
/// `;` between tokens so that two paths never join.
fn tokens(code: &str) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && ident_char(Some(chars[i])) {
                i += 1;
            }
            tokens.push(chars[start..i].iter().collect());
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            tokens.push("::".to_owned());
            i += 2;
        } else if matches!(c, '{' | '}' | ',') {
            tokens.push(c.to_string());
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else {
            if tokens.last().map(String::as_str) != Some(";") {
                tokens.push(";".to_owned());
            }
            i += 1;
        }
    }
    tokens
}

/// A circle in `graph` (its first module repeated at its end), if there is one.
pub fn circle(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Option<Vec<Module>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Seen {
        Not,
        OnPath,
        Done,
    }
    fn visit(
        m: &Module,
        graph: &BTreeMap<Module, BTreeSet<Module>>,
        seen: &mut BTreeMap<Module, Seen>,
        path: &mut Vec<Module>,
    ) -> Option<Vec<Module>> {
        match seen.get(m).copied().unwrap_or(Seen::Not) {
            Seen::Done => return None,
            Seen::OnPath => {
                let from = path.iter().position(|p| p == m).expect("on the path");
                let mut circle = path[from..].to_vec();
                circle.push(m.clone());
                return Some(circle);
            }
            Seen::Not => {}
        }
        seen.insert(m.clone(), Seen::OnPath);
        path.push(m.clone());
        for next in graph.get(m).into_iter().flatten() {
            if let Some(circle) = visit(next, graph, seen, path) {
                return Some(circle);
            }
        }
        path.pop();
        seen.insert(m.clone(), Seen::Done);
        None
    }
    let mut seen = BTreeMap::new();
    for m in graph.keys() {
        if let Some(circle) = visit(m, graph, &mut seen, &mut Vec::new()) {
            return Some(circle);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_modules_with_a_visibility_are_left_out() {
        let code = "use crate::a::X;\n#[cfg(test)]\npub(in crate::b) mod tests {\n    use crate::c::Y;\n}\nfn f() {}\n";
        let kept = without_tests(code);
        assert!(
            kept.contains("crate::a::X") && kept.contains("fn f()"),
            "{kept}"
        );
        assert!(!kept.contains("crate::c::Y"), "{kept}");
    }

    #[test]
    fn test_modules_declared_out_of_line_are_found() {
        let code = "mod a;\n#[cfg(test)]\nmod seed;\n#[cfg(test)] pub(crate) mod b ;\n\
                    #[cfg(test)]\nmod tests {\n}\n#[cfg(test)]\nfn f() {}\n";
        assert_eq!(test_modules(code), ["seed", "b"]);
    }

    #[test]
    fn finds_a_circle_when_there_is_one() {
        let m = |s: &str| -> Module { vec![s.to_owned()] };
        let mut graph: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
        graph.entry(m("a")).or_default().insert(m("b"));
        graph.entry(m("b")).or_default().insert(m("c"));
        graph.entry(m("c")).or_default();
        assert_eq!(circle(&graph), None);
        graph.entry(m("c")).or_default().insert(m("a"));
        assert_eq!(circle(&graph), Some(vec![m("a"), m("b"), m("c"), m("a")]));
    }
}
