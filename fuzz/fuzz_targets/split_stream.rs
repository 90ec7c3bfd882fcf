#![no_main]
//! Fuzz target `split_stream`: see `check_split_stream` in `crates/fuzz-checks`.

use kafka_elect_leaders_fuzz_checks as checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_split_stream(data));
