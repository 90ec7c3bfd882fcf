//! The Kafka audit crate's modules form layers: no module uses, directly or through
//! others, a module that uses it (issue 37). How the graph is read:
//! [`kafka_elect_leaders_testkit::modules`]; paths through the crate root are not followed.

use std::path::Path;

use kafka_elect_leaders_testkit::modules::{assert_no_circle, graph, uses};

#[test]
fn audit_kafka_modules_have_no_circle() {
    assert_no_circle(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        "the Kafka audit crate",
    );
}

/// The reader is not blind: it finds edges known to be there.
#[test]
fn audit_kafka_module_graph_has_the_edges_it_should() {
    let graph = graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let uses = |from: &str, to: &str| uses(&graph, from, to);
    assert!(uses("producer", "event"));
    assert!(uses("producer", "settings"));
    assert!(uses("reader", "settings"));
    // The event is a pure function: it knows nothing of Kafka or of the settings.
    assert!(!uses("event", "settings"));
    assert!(!uses("event", "producer"));
    // The reader does not produce.
    assert!(!uses("reader", "producer"));
}
