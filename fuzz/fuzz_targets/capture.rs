#![no_main]
//! Fuzz target `capture`: the tool's capture reader (src/bin/elect-leaders/capture/) over arbitrary bytes. See `check_capture` in `fuzz/checks.rs`.

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_capture(data));
