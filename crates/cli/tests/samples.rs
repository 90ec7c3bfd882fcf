//! The frames `elect-leaders inspect` shows with no argument are built into the binary from
//! `crates/cli/samples/`, so that the package builds on its own; they are the corpus's two
//! reference frames, byte for byte.

#[test]
fn the_bundled_samples_are_the_corpus_reference_frames() {
    for name in ["request-v2-min.bin", "response-v2-min.bin"] {
        let bundled = std::fs::read(format!("{}/samples/{name}", env!("CARGO_MANIFEST_DIR")));
        assert_eq!(
            bundled.unwrap(),
            kafka_elect_leaders_testkit::load(name),
            "crates/cli/samples/{name} differs from corpus/{name}"
        );
    }
}
