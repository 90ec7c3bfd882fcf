#![no_main]
//! Fuzz target `reencode`: a parsed message written at another version, and back. See `check_reencode` in `fuzz/checks.rs`.

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_reencode(data));
