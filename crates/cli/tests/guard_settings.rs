//! The guard's manual (`crates/proxy/GUARD.md`, "Every setting") lists every setting once:
//! each option `elect-leaders proxy --help` prints and each key the configuration file
//! accepts, and nothing else. The options are read from the binary's help, the keys from
//! the file reader itself (what it names as expected when given a key it does not know),
//! so that an option or a key added to the code without a row here fails this test, as does
//! a row left behind when one goes.
#![cfg(feature = "proxy")]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use kafka_elect_leaders_proxy::ConfigFile;

const MANUAL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../proxy/GUARD.md");

/// The settings table: (options, file keys, default) of each row. A file key is written
/// `key` (top level), `[table] key` or `[[route]] key`, and `[upstream-tls]` alone for the
/// table's presence; it is returned as a dotted path (`upstream-tls.ca`,
/// `rules.principal.*.log-only`).
fn table() -> Vec<(Vec<String>, Vec<String>, String)> {
    let manual = std::fs::read_to_string(MANUAL).expect("GUARD.md");
    let mut lines = manual
        .lines()
        .skip_while(|l| !l.starts_with("| option | file key | default |"));
    assert!(lines.next().is_some(), "GUARD.md has no settings table");
    assert!(lines.next().is_some_and(|l| l.starts_with("|---")));
    let mut rows = Vec::new();
    for line in lines.take_while(|l| l.starts_with('|')) {
        // `\|` is a `|` inside a cell (`--audit-log FILE\|-`).
        let line = line.replace("\\|", "/");
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        assert!(cells.len() >= 5, "a row of four cells: {line}");
        let options = code_spans(cells[1])
            .iter()
            .map(|o| o.split_whitespace().next().unwrap().to_owned())
            .collect();
        let keys = code_spans(cells[2])
            .iter()
            .map(|k| dotted(k).unwrap_or_else(|| panic!("file key `{k}` in: {line}")))
            .collect();
        rows.push((options, keys, cells[3].to_owned()));
    }
    assert!(rows.len() > 20, "{rows:?}");
    rows
}

/// The text between backticks, in order.
fn code_spans(cell: &str) -> Vec<&str> {
    cell.split('`').skip(1).step_by(2).collect()
}

/// `[rules.principal.NAME] log-only` -> `rules.principal.*.log-only`.
fn dotted(key: &str) -> Option<String> {
    let key = key.trim();
    let Some(rest) = key.strip_prefix('[') else {
        return Some(key.to_owned()).filter(|k| !k.contains([' ', '.']));
    };
    let (table, leaf) = rest.trim_start_matches('[').split_once(']')?;
    let table = table.replace("NAME", "*");
    let leaf = leaf.trim_start_matches(']').trim();
    Some(if leaf.is_empty() {
        table
    } else {
        format!("{table}.{leaf}")
    })
}

/// The long options `elect-leaders proxy --help` prints, but `--help`.
fn help_options() -> BTreeSet<String> {
    let output = Command::new(env!("CARGO_BIN_EXE_elect-leaders"))
        .args(["proxy", "--help"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).unwrap();
    option_lines(&help)
        .filter_map(|l| {
            let l = l.trim_start();
            let l = l.strip_prefix("-h, ").unwrap_or(l);
            l.starts_with("--").then(|| {
                l.split(|c: char| c.is_whitespace() || c == '=')
                    .next()
                    .unwrap()
                    .to_owned()
            })
        })
        .filter(|o| o != "--help")
        .collect()
}

/// The lines of clap's "Options:" that name an option (those of its text are indented
/// further, and may begin with an option's name too).
fn option_lines(help: &str) -> impl Iterator<Item = &str> {
    help.lines()
        .skip_while(|l| *l != "Options:")
        .filter(|l| l.len() - l.trim_start().len() <= 6 && l.trim_start().starts_with('-'))
}

/// The keys a table of the file accepts, as the reader names them when it meets a key it
/// does not know (`unknown field ..., expected one of `a`, `b``).
fn accepted(table_header: &str) -> Vec<String> {
    let text = format!("{table_header}\nnot-a-setting = 1\n");
    let Err((_, _, message)) = ConfigFile::parse(&text, Path::new(".")) else {
        panic!("{text:?} was accepted");
    };
    let (_, expected) = message
        .split_once("expected")
        .unwrap_or_else(|| panic!("{text:?}: {message}"));
    let keys: Vec<String> = code_spans(expected)
        .into_iter()
        .map(str::to_owned)
        .collect();
    assert!(!keys.is_empty(), "{text:?}: {message}");
    keys
}

/// Every key the file accepts, as dotted paths; a table stands for its keys.
fn file_keys() -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    for key in accepted("") {
        let header = match key.as_str() {
            "route" => "[[route]]",
            "tls" => "[tls]",
            "upstream-tls" => "[upstream-tls]",
            "rules" => "[rules]",
            "audit-kafka" => "[audit-kafka]",
            "audit-syslog" => "[audit-syslog]",
            _ => {
                keys.insert(key);
                continue;
            }
        };
        for sub in accepted(header) {
            if (key.as_str(), sub.as_str()) == ("rules", "principal") {
                for own in accepted("[rules.principal.someone]") {
                    keys.insert(format!("rules.principal.*.{own}"));
                }
            } else {
                keys.insert(format!("{key}.{sub}"));
            }
        }
    }
    keys
}

#[test]
fn the_manual_lists_every_option_and_every_file_key() {
    let rows = table();
    let options: Vec<&String> = rows.iter().flat_map(|r| &r.0).collect();
    let keys: Vec<&String> = rows.iter().flat_map(|r| &r.1).collect();
    for (list, what) in [(&options, "option"), (&keys, "file key")] {
        let mut seen = BTreeSet::new();
        for item in list {
            assert!(seen.insert(item), "GUARD.md lists the {what} {item} twice");
        }
    }

    let code_options = help_options();
    assert!(code_options.contains("--deny-unclean"), "{code_options:?}");
    let listed: BTreeSet<String> = options.iter().map(|o| o.to_string()).collect();
    let missing: Vec<_> = code_options.difference(&listed).collect();
    let extra: Vec<_> = listed.difference(&code_options).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "GUARD.md's settings table and `elect-leaders proxy --help` disagree: \
         options not in the table {missing:?}, in the table but not the tool {extra:?}"
    );

    let code_keys = file_keys();
    assert!(code_keys.contains("rules.deny-unclean"), "{code_keys:?}");
    let listed: BTreeSet<String> = keys.iter().map(|k| k.to_string()).collect();
    // A table listed alone (`[upstream-tls]`: its presence is a setting) is a key of the
    // code when some key of the code lies in it.
    let missing: Vec<_> = code_keys.difference(&listed).collect();
    let extra: Vec<_> = listed
        .difference(&code_keys)
        .filter(|k| !code_keys.iter().any(|c| c.starts_with(&format!("{k}."))))
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "GUARD.md's settings table and the configuration file's reader disagree: \
         keys not in the table {missing:?}, in the table but not the reader {extra:?}"
    );
}

/// Where `--help` states a default (`[default: 10m]`), the table's default says it too.
#[test]
fn the_manual_gives_the_defaults_the_help_gives() {
    let output = Command::new(env!("CARGO_BIN_EXE_elect-leaders"))
        .args(["proxy", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(output.stdout).unwrap();
    // clap's long help: an option's line, then its text, which may end with the default.
    let mut defaults = Vec::new();
    let mut current: Option<String> = None;
    let names: Vec<&str> = option_lines(&help).collect();
    for line in help.lines().skip_while(|l| *l != "Options:") {
        let t = line.trim_start();
        if names.contains(&line) {
            current = t
                .trim_start_matches("-h, ")
                .split(|c: char| c.is_whitespace() || c == '=')
                .next()
                .map(str::to_owned);
        }
        if let (Some(option), Some(at)) = (&current, t.find("[default: ")) {
            let value = t[at + "[default: ".len()..].split(']').next().unwrap();
            defaults.push((option.clone(), value.to_owned()));
        }
    }
    assert!(
        defaults.iter().any(|(o, _)| o == "--idle-timeout"),
        "{defaults:?}"
    );
    let rows = table();
    for (option, value) in defaults {
        let Some(row) = rows.iter().find(|r| r.0.contains(&option)) else {
            continue; // the other test names the option missing
        };
        let value = match value.as_str() {
            "the number of cores" => value.clone(),
            v => v.replace(' ', ""),
        };
        assert!(
            row.2.replace(' ', "").contains(&value.replace(' ', "")),
            "GUARD.md: {option}'s default is {value} in --help, `{}` in the table",
            row.2
        );
    }
}
