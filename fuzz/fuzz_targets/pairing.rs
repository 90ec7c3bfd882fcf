#![no_main]
//! Fuzz target `pairing`: `InFlight` against a plain queue. See `check_pairing` in `fuzz/checks.rs`.

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_pairing(data));
