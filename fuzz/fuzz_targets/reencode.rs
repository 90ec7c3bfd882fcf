#![no_main]
//! Fuzz target `reencode`: a parsed message written at another version, and back. See `check_reencode` in `crates/fuzz-checks`.

use kafka_elect_leaders_fuzz_checks as checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_reencode(data));
