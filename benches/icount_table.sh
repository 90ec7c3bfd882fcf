#!/usr/bin/env bash
# The instruction-count tables of BENCHMARKS.md, from callgrind in one run: walk (parse +
# read every field) for this crate, its single-pass visitor, kafka-protocol and the two
# floors; encode for this crate and kafka-protocol. Instructions per operation, counted by
# callgrind over examples/profile.rs; stable on a noisy machine, where times are not.
#
#   benches/icount_table.sh [VERSION...]        # default: 2 (the reference frames are v2)
#   RUSTFLAGS="-C target-cpu=x86-64-v3" CARGO_TARGET_DIR=target/x86-64-v3 benches/icount_table.sh
#
# Each count is (total with N iterations - total with 0) / N, so building the cases is not
# counted. OPS overrides the operations measured (see examples/profile.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${BIN:-}" ] || cargo build --quiet --release --example profile
bin=${BIN:-${CARGO_TARGET_DIR:-target}/release/examples/profile}
versions=("$@")
[ ${#versions[@]} -eq 0 ] && versions=(2)
walk_ops=${WALK_OPS-"walk_req visit_req visit_req_words kp_walk_req read_floor_req chase_floor_req walk_resp visit_resp kp_walk_resp read_floor_resp chase_floor_resp"}
encode_ops=${ENCODE_OPS-"encode_req encode_known_req kp_encode_req encode_resp encode_known_resp kp_encode_resp"}

count() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$@" 2>&1 >/dev/null |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

iterations() {
  case $1 in
  reference) echo 2000 ;;
  typical) echo 500 ;;
  large) echo 3 ;;
  esac
}

printf '%-10s %-3s' case v
for op in $walk_ops $encode_ops; do printf ' %17s' "$op"; done
echo
for v in "${versions[@]}"; do
  for c in reference typical large; do
    n=$(iterations "$c")
    setup=$(count parse_req 0 "$c" "$v") || setup=""
    printf '%-10s %-3s' "$c" "$v"
    for op in $walk_ops $encode_ops; do
      total=$(count "$op" "$n" "$c" "$v") || total=""
      # An operation this build does not have, or that failed: no count.
      if [ -z "$total" ] || [ -z "$setup" ] || [ "$total" -lt "$setup" ]; then
        printf ' %17s' '-'
        continue
      fi
      printf ' %17d' $(((total - setup) / n))
    done
    echo
  done
done
