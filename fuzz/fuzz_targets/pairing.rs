#![no_main]
//! Fuzz target `pairing`: `InFlight` against a plain queue. See `check_pairing` in `crates/fuzz-checks`.

use kafka_elect_leaders_fuzz_checks as checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_pairing(data));
