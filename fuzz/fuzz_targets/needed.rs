#![no_main]
//! Fuzz target `needed`: `Incomplete { needed }` is exact at every prefix of a frame. See `check_needed` in `crates/fuzz-checks`.

use kafka_elect_leaders_fuzz_checks as checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_needed(data));
