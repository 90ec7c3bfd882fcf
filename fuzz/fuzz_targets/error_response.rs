#![no_main]
//! Fuzz target `error_response`: `error_response` answers every partition of every request that parses. See `check_error_response` in `crates/fuzz-checks`.

use kafka_elect_leaders_fuzz_checks as checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_error_response(data));
