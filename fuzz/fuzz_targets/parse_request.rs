#![no_main]
//! Fuzz target `parse_request`: see `check_parse_request` in `crates/fuzz-checks`.

use kafka_elect_leaders_fuzz_checks as checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_parse_request(data));
