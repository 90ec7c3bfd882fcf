#![no_main]
//! Fuzz target `addresses`: the guard's rewrite of broker addresses in Metadata,
//! FindCoordinator and DescribeCluster answers (crates/proxy), which decodes what a broker
//! sends with kafka-protocol. See `check_addresses` in `crates/fuzz-checks`.

use kafka_elect_leaders_fuzz_checks as checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_addresses(data));
