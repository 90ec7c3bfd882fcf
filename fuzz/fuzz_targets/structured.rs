#![no_main]
//! Fuzz target `structured`: request frames, mutated by the crate's structure-aware mutator
//! (`kafka_elect_leaders::mutate_request`), checked by our parser and writer
//! (`check_parse_request`) and against kafka-protocol's decoder (`check_differential`).
//!
//! Seed it with request frames (`corpus/request-*.bin`, `corpus/fuzz/parse_request/`):
//!
//! ```text
//! cargo +nightly fuzz run structured corpus/request-*.bin -- -max_len=4096
//! ```
//!
//! One mutation in eight is libFuzzer's own byte-level one, so inputs that the structured
//! mutator cannot parse still move. With `KEL_DEFAULT_MUTATOR=1` in the environment every
//! mutation is libFuzzer's own: the same target, for comparing coverage on one budget.

use kafka_elect_leaders_fuzz_checks as checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    checks::check_parse_request(data);
    // `check_differential` takes a selector byte first: 0 is "one request frame".
    let mut selected = Vec::with_capacity(data.len() + 1);
    selected.push(0);
    selected.extend_from_slice(data);
    checks::check_differential(&selected);
});

libfuzzer_sys::fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
    if seed % 8 == 0 || default_only() {
        return libfuzzer_sys::fuzzer_mutate(data, size, max_size);
    }
    let frame = data[..size].to_vec();
    match kafka_elect_leaders::mutate_request(&frame, u64::from(seed), &mut data[..max_size]) {
        Ok(mutant) => mutant.len,
        Err(_) => libfuzzer_sys::fuzzer_mutate(data, size, max_size),
    }
});

/// `KEL_DEFAULT_MUTATOR` set: libFuzzer's default mutation only (the baseline).
fn default_only() -> bool {
    static DEFAULT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *DEFAULT.get_or_init(|| std::env::var_os("KEL_DEFAULT_MUTATOR").is_some())
}
