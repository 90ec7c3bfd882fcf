#![no_main]
//! Fuzz target `policy`: the proxy's policy (crates/proxy) against its stated rules. See `check_policy` in `crates/fuzz-checks`.

use kafka_elect_leaders_fuzz_checks as checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_policy(data));
