#![no_main]
//! Fuzz target `parse_response`: see `check_parse_response` in `crates/fuzz-checks`.

use kafka_elect_leaders_fuzz_checks as checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_parse_response(data));
