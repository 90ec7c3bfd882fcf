#![no_main]
//! Fuzz target `generators`: the crate's own generators and mutator, fuzzed. See
//! `check_generators` in `fuzz/checks.rs`.

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_generators(data));
