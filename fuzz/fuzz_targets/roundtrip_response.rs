#![no_main]
//! Fuzz target `roundtrip_response`: see `check_roundtrip_response` in `fuzz/checks.rs`.

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_roundtrip_response(data));
