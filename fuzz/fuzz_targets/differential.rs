#![no_main]
//! Fuzz target `differential`: see `check_differential` in `fuzz/checks.rs`.

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_differential(data));
