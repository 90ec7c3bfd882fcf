#![no_main]
//! Fuzz target `edit`: edits (`RequestEdit`, `ResponseEdit`) parse back showing exactly the change. See `check_edit` in `crates/fuzz-checks`.

use kafka_elect_leaders_fuzz_checks as checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_edit(data));
