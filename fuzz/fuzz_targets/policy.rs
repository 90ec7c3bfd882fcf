#![no_main]
//! Fuzz target `policy`: the proxy's policy (src/bin/elect-leaders/proxy/policy.rs) against its stated rules. See `check_policy` in `fuzz/checks.rs`.

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_policy(data));
