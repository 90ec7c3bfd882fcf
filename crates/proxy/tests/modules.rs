//! The guard's modules form layers: no module uses, directly or through others, a module
//! that uses it (issue 37: `Shared` and the close types lived in `conn`, whose helpers the
//! metrics server then needed). How the graph is read:
//! [`kafka_elect_leaders_testkit::modules`]; paths through the crate root's re-exports
//! (`crate::Config`) are not followed.

use std::path::Path;

use kafka_elect_leaders_testkit::modules::{assert_no_circle, graph, uses};

#[test]
fn proxy_modules_have_no_circle() {
    assert_no_circle(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        "the guard",
    );
}

/// The reader is not blind: it finds edges known to be there.
#[test]
fn proxy_module_graph_has_the_edges_it_should() {
    let graph = graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    // `use super::queue::{release, Message, Queue};` in observability/audit/sink.rs
    assert!(uses(
        &graph,
        "observability::audit::sink",
        "observability::audit::queue"
    ));
    // `use crate::observability::diag::log;` in observability/audit/mod.rs
    assert!(uses(&graph, "observability::audit", "observability::diag"));
    // `use crate::core::connection_threads::ConnectionThreads;` in core/server.rs
    assert!(uses(&graph, "core::server", "core::connection_threads"));
    // The diagnostics are below the audit log, not above it.
    assert!(!uses(&graph, "observability::diag", "observability::audit"));
}
