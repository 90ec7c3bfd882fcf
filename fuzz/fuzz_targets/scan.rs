#![no_main]
//! Fuzz target `scan`: `scan_requests` / `scan_responses` against a walk over every offset. See `check_scan` in `crates/fuzz-checks`.

use kafka_elect_leaders_fuzz_checks as checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_scan(data));
