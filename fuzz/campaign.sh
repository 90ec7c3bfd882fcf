#!/usr/bin/env bash
# Runs fuzz campaigns and records what they did.
#
#   fuzz/campaign.sh RUNS [TARGET...]    (default: every target, e.g. RUNS=10000000)
#
# Needs the nightly toolchain (`rustup toolchain install nightly`) and cargo-fuzz
# (`cargo install cargo-fuzz --locked`); it stops at once when either is missing.
#
# FUZZ_ARGS adds libFuzzer options (e.g. -max_total_time=N for a run bounded by time rather
# than count); FUZZ_SCRATCH moves the scratch corpus (default fuzz/scratch, ignored by git),
# so two campaigns can run side by side. The scratch corpus is kept between campaigns.
# Each target also gets its own options (`target_args` below): the targets that read frames
# get a -max_len that holds a 32767-byte string, the longest Kafka writes, with room to spare.
#
# FUZZ_SANITIZER=none builds without AddressSanitizer (in fuzz/target/none, beside the ASan
# build): two to six times the executions per second. The codec forbids unsafe code and
# the tool's crates have none, so what ASan adds there is mostly its allocator's limits on
# the dependencies.
# Neither build has overflow checks (`-O` without `-a`): `cargo test` replays every corpus
# input with them, which is how pcap-parser's overflow was found (CHANGELOG.md).
#
# For each target: `cargo +nightly fuzz run` (AddressSanitizer, the default) for RUNS
# executions, starting from corpus/fuzz/TARGET and writing new inputs to a scratch
# directory (both created when missing: libFuzzer stops on a missing one); then `cargo fuzz
# cmin` over both, and the minimized set replaces corpus/fuzz/TARGET. The log of each run
# is kept in fuzz/logs/TARGET-RUNS.log; its last lines hold libFuzzer's final stats
# (executions, time, cov/ft).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:?usage: fuzz/campaign.sh RUNS [TARGET...]}
shift
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(parse_request parse_response roundtrip_request roundtrip_response split_stream differential
    structured generators edit error_response reencode scan needed pairing policy capture conn addresses leadership)
fi
# The same table is in .ci/run.
target_args() {
  case "$1" in
    pairing | policy | generators | conn | addresses) echo "" ;;
    capture) echo "-max_len=65536" ;;
    *) echo "-max_len=66000" ;;
  esac
}
# In the repository by default: `cargo fuzz cmin` renames the corpus into a temporary
# directory under fuzz/, which fails across file systems.
scratch=${FUZZ_SCRATCH:-fuzz/scratch}
if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "fuzz/campaign.sh: needs the nightly toolchain: rustup toolchain install nightly" >&2
  exit 1
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "fuzz/campaign.sh: needs cargo-fuzz: cargo install cargo-fuzz --locked" >&2
  exit 1
fi
build=(-O)
if [ "${FUZZ_SANITIZER:-address}" != address ]; then
  build+=(-s "$FUZZ_SANITIZER" --target-dir "fuzz/target/$FUZZ_SANITIZER")
fi
mkdir -p fuzz/logs
for t in "${targets[@]}"; do
  mkdir -p "$scratch/$t" "corpus/fuzz/$t"
  log="fuzz/logs/$t-$runs.log"
  start=$(date +%s)
  set +e
  cargo +nightly fuzz run "${build[@]}" "$t" "$scratch/$t" "corpus/fuzz/$t" -- \
    -runs="$runs" -print_final_stats=1 -rss_limit_mb=4096 $(target_args "$t") ${FUZZ_ARGS:-} >"$log" 2>&1
  status=$?
  set -e
  end=$(date +%s)
  echo "# target=$t runs=$runs exit=$status seconds=$((end - start)) sanitizer=${FUZZ_SANITIZER:-address} args=$(target_args "$t") ${FUZZ_ARGS:-}" >>"$log"
  if [ $status -ne 0 ]; then
    echo "$t: FAILED (exit $status), see $log; crash inputs in fuzz/artifacts/$t/"
    continue
  fi
  # Minimize: scratch + committed corpus → corpus/fuzz/$t.
  cp -n "corpus/fuzz/$t"/* "$scratch/$t"/ 2>/dev/null || true
  cargo +nightly fuzz cmin "${build[@]}" "$t" "$scratch/$t" >>"$log" 2>&1
  rm -rf "corpus/fuzz/$t"
  mkdir -p "corpus/fuzz/$t"
  cp "$scratch/$t"/* "corpus/fuzz/$t"/
  # cmin keeps what adds coverage; the named seeds are kept whatever it drops (CI checks
  # them with corpus/fuzz_seeds.py --check).
  python3 corpus/fuzz_seeds.py
  grep -E "^#[0-9]+.*DONE|stat::number_of_executed_units|stat::peak_rss_mb" "$log" | tail -3 || true
  echo "$t: ok in $((end - start)) s, corpus $(ls "corpus/fuzz/$t" | wc -l) inputs"
done
