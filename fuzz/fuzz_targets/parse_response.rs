#![no_main]
//! Fuzz target `parse_response`: see `check_parse_response` in `fuzz/checks.rs`.

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_parse_response(data));
