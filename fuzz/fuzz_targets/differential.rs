#![no_main]
//! Fuzz target `differential`: see `check_differential` in `crates/fuzz-checks`.

use kafka_elect_leaders_fuzz_checks as checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_differential(data));
