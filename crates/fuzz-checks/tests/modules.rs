//! The fuzz checks' modules form layers: no module uses, directly or through others, a
//! module that uses it (issue 37). How the graph is read:
//! [`kafka_elect_leaders_testkit::modules`].

use std::path::Path;

use kafka_elect_leaders_testkit::modules::{assert_no_circle, graph};

#[test]
fn fuzz_checks_modules_have_no_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    assert_no_circle(&src, "the fuzz checks");
    // The reader is not blind: `conn`'s parts name each other.
    let graph = graph(&src);
    let named: usize = graph
        .iter()
        .filter(|(m, _)| m.first().map(String::as_str) == Some("conn"))
        .map(|(_, e)| e.len())
        .sum();
    assert!(named > 5, "{graph:?}");
}
