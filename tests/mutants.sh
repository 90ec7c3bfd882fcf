#!/usr/bin/env bash
# Mutation testing of the core codec with cargo-mutants (not run in CI: hours on 2 cores).
#
#   tests/mutants.sh            # both passes; results in mutants.out/ (missed.txt is the list)
#   tests/mutants.sh --shard 1/4   # extra arguments go to both passes
#   tests/mutants.sh --iterate     # go on from an interrupted run: skips what it caught
#
# Pass 1 builds and runs only the fast, feature-light tests against every mutant of the core
# (about 6-8 s a mutant); `proxy_toolkit` is among them for the appending writer
# (`encode_with_len`, `src/write/append.rs`), which the others reach only in part.
# Pass 2 re-tests only what pass 1 missed (`--iterate`) with the whole suite, Apache
# Kafka's own codec (tests/kafka_java.rs) and the differential test against kafka-protocol
# included, so a mutant is reported missed only when nothing kills it.
# Install: cargo install cargo-mutants --locked (27.x).
#
# Survivors that are equivalent (no test can tell them apart from the code; checked
# 2026-12-01 in sessions 5 and 6, see their notes):
# - `delete field flexible from struct Cx expression` (list.rs, request.rs, response.rs):
#   the branch runs only when `cx.flexible` already has the value the field restates; it
#   is there to make the value a compile-time constant.
# - `replace RequestVisitor::* / ResponseVisitor::* with ()`: the defaults already do
#   nothing.
# - `replace match guard b < 0x80 with false` in `UVarint::process`: the fast path for a
#   one-byte varint; the general loop gives the same value.
# - `partitions_wire -> None` for a parsed topic: the writer then reads `partitions()`,
#   the same ids (tests/encode_sources.rs checks both agree).
# - `tagged_fields -> iter::empty()` on ErrorResponse and its parts: already empty.
# - `Int32Iter::fold -> Default::default()` on the default target: that `fold` is compiled
#   only where the target has byte shuffles; the x86-64-v3 unit tests in CI cover it.
# - `replace match guard flexible && n < 0x7f with false`, `< with ==`, `< with <=` in
#   `sink::count`: the one-byte fast path; the general arm writes the same byte.
# - `Appender::i32s`, `len > self.room` made `>=`: differs only when a wrong
#   `encode_with_len` length ends exactly after the ids, and then the error (the real
#   length) and the emptied buffer are the same; `got < batch` made `>`: a source that ran
#   short then leaves the loop by the count, returning the same total.
# - `encode_with_len`, `len - SIZE_PREFIX_LEN` made `/` in the test that only decides how
#   much to reserve.
# Times out (hangs, so the tests notice): `Appender::i32s`'s `while left > 0` made `>=`.
# `Int32Iter::next -> Some(..)` times out in pass 1 and is caught in pass 2.
set -euo pipefail
cd "$(dirname "$0")/.."
files=(-f src/wire.rs -f src/list.rs -f src/tagged.rs -f src/frame.rs -f src/header.rs
  -f src/request.rs -f src/response.rs -f 'src/write/*.rs')
# The test targets go to every cargo call (-C), the build included: built alone, they take
# a mutant about half the time of `cargo test --no-run` building every target.
fast=()
for t in edits mutation_sweep known_answers malformed reencode truncation no_alloc visit writer_limits \
  encode_sources proxy_toolkit; do
  fast+=(-C "--test=$t")
done
KEL_SKIP_JAVA=1 cargo mutants --no-shuffle --features bytes,tokio "${files[@]}" -C --lib "${fast[@]}" "$@" || true
rest=()
for a in "$@"; do [ "$a" = --iterate ] || rest+=("$a"); done
cargo mutants --iterate --no-shuffle --all-features "${files[@]}" "${rest[@]}"
