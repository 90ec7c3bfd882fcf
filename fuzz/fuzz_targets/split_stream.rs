#![no_main]
//! Fuzz target `split_stream`: see `check_split_stream` in `fuzz/checks.rs`.

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_split_stream(data));
