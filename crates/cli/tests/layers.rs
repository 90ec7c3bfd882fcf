//! The CLI's modules form layers: no module uses, directly or through others, a module that
//! uses it (issue 37). A circle makes two files one unit that cannot be read, tested or
//! moved apart, so this test reads every file under `src/`, collects the modules each one
//! names (`use crate::...`, `super::...`, `self::...`, a child module's name, and the same
//! paths written inline), and fails with the circle when the graph among them is not acyclic.
//!
//! How the graph is read: [`kafka_elect_leaders_testkit::modules`]. Paths to the crate
//! root are left out: `main.rs` only declares the modules and dispatches to them, and what
//! it names for them (`crate::capture`) is another crate. If the reader stops seeing the
//! edges it should, [`reads_the_edges_it_should`] says so.

use std::path::Path;

use kafka_elect_leaders_testkit::modules::{assert_no_circle, graph, uses};

#[test]
fn modules_have_no_circle() {
    assert_no_circle(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        "the CLI",
    );
}

/// The reader is not blind: it finds edges known to be there.
#[test]
fn reads_the_edges_it_should() {
    let graph = graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let uses = |from: &str, to: &str| uses(&graph, from, to);
    // `use crate::fail::Failure;`
    assert!(uses("commands::decode", "fail"));
    // `use super::help;` in flags/defs.rs
    assert!(uses("flags::defs", "flags::help"));
    // An inline path: `super::serve::run(...)` in fuzz/run.rs.
    assert!(uses("commands::fuzz::run", "commands::fuzz::serve"));
    // A path to an item of a module names that module: `crate::flags::{LiveFlags,
    // ReadFlags}` in input/items.rs.
    assert!(uses("input::items", "flags"));
    // `use crate::notes::Reporter;` in commands/summary.rs.
    assert!(uses("commands::summary", "notes"));
    // An inline path: `super::live::walk(...)` in input/items.rs.
    assert!(uses("input::items", "input::live"));
}
