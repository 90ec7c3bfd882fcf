//! The JSON crate's modules form layers: no module uses, directly or through others, a
//! module that uses it (issue 37). How the graph is read:
//! [`kafka_elect_leaders_testkit::modules`]; paths through the crate root are not followed.

use std::path::Path;

use kafka_elect_leaders_testkit::modules::{assert_no_circle, graph, uses};

#[test]
fn json_modules_have_no_circle() {
    assert_no_circle(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        "the JSON crate",
    );
}

/// The reader is not blind: it finds edges known to be there.
#[test]
fn json_module_graph_has_the_edges_it_should() {
    let graph = graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let uses = |from: &str, to: &str| uses(&graph, from, to);
    // `use super::super::packed::{...}` in stream/seeds.rs; a test module's paths
    // (stream/mod.rs's) are not read.
    assert!(uses("stream::seeds", "packed"));
    assert!(!uses("stream", "print"));
    // A path to an item of a module names that module: `crate::hex::from_hex`.
    assert!(uses("sources", "hex"));
    // `use super::sources;` in stream/mod.rs
    assert!(uses("stream", "sources"));
    // The printer does not read, and the reader does not print.
    assert!(!uses("print", "sources"));
    assert!(!uses("sources", "print"));
}
