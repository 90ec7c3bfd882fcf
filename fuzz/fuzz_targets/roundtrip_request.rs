#![no_main]
//! Fuzz target `roundtrip_request`: see `check_roundtrip_request` in `crates/fuzz-checks`.

use kafka_elect_leaders_fuzz_checks as checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_roundtrip_request(data));
