#!/usr/bin/env bash
# Instructions per iteration of one operation of examples/profile.rs, counted by callgrind:
# stable on a noisy machine, where times are not.
#
#   benches/icount.sh OP ITERATIONS [reference|typical|large] [VERSION]
#   benches/icount.sh walk_resp 200 typical 0
#
# Runs the example twice, with ITERATIONS and with 0, and divides the difference, so setup
# (building the cases) is not counted.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --release --example profile
bin=${CARGO_TARGET_DIR:-target}/release/examples/profile
count() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$@" 2>&1 >/dev/null |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
op=$1 iterations=$2
shift 2
total=$(count "$op" "$iterations" "$@")
setup=$(count "$op" 0 "$@")
echo "$op $iterations $* : $(((total - setup) / iterations)) instructions per iteration"
