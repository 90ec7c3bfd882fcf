#![no_main]
//! Fuzz target `needed`: `Incomplete { needed }` is exact at every prefix of a frame. See `check_needed` in `fuzz/checks.rs`.

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_needed(data));
