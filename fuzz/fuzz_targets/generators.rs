#![no_main]
//! Fuzz target `generators`: the crate's own generators and mutator, fuzzed. See
//! `check_generators` in `crates/fuzz-checks`.

use kafka_elect_leaders_fuzz_checks as checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_generators(data));
