//! The codec's modules form layers, bottom up as the design draws them (wire, frame,
//! header, request, response, write, scan, then the std features): no module uses,
//! directly or through others, a module that uses it (issue 37). How the graph is read:
//! [`kafka_elect_leaders_testkit::modules`].

use std::path::Path;

use kafka_elect_leaders_testkit::modules::{assert_no_circle, graph, uses};

#[test]
fn codec_modules_have_no_circle() {
    assert_no_circle(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        "the codec",
    );
}

/// The reader is not blind: it finds edges known to be there, and none upward.
#[test]
fn codec_module_graph_has_the_edges_it_should() {
    let graph = graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(uses(&graph, "mutate::request", "arbitrary"));
    assert!(uses(&graph, "request", "wire"));
    assert!(!uses(&graph, "wire", "request"));
}
