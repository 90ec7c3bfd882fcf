#![no_main]
//! Fuzz target `edit`: edits (`RequestEdit`, `ResponseEdit`) parse back showing exactly the change. See `check_edit` in `fuzz/checks.rs`.

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_edit(data));
