#![no_main]
//! Fuzz target `leadership`: the guard's reader of leadership changes (crates/proxy/src/leadership) against kafka-protocol. See `check_leadership` in `crates/fuzz-checks`.

use kafka_elect_leaders_fuzz_checks as checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_leadership(data));
