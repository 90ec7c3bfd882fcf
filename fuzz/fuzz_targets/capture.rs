#![no_main]
//! Fuzz target `capture`: the capture reader (crates/capture) over arbitrary bytes. See `check_capture` in `crates/fuzz-checks`.

use kafka_elect_leaders_fuzz_checks as checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_capture(data));
