#![no_main]
//! Fuzz target `parse_request`: see `check_parse_request` in `fuzz/checks.rs`.

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_parse_request(data));
