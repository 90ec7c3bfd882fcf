#![no_main]
//! Fuzz target `scan`: `scan_requests` / `scan_responses` against a walk over every offset. See `check_scan` in `fuzz/checks.rs`.

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_scan(data));
