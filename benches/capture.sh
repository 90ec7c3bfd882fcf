#!/usr/bin/env bash
# Capture benchmark: decode a large synthetic pcap (examples/make_capture.rs: many
# interleaved connections to a broker on 9092, ElectLeaders among Produce-sized frames of
# another API), with this tool and with tshark's Kafka dissector on the same file.
# Prints wall time, MB/s and peak memory (max RSS) of each.
#
#   benches/capture.sh [MB] [CONNECTIONS]      (default 500 MB, 2000 connections)
#
# Needs /usr/bin/time (Debian package `time`); tshark is optional (Debian `tshark`).
set -euo pipefail
cd "$(dirname "$0")/.."
MB=${1:-500}
CONNS=${2:-2000}
FILE=target/bench/capture-${MB}mb-${CONNS}c.pcap

cargo build -q --release --features cli --bin elect-leaders
cargo build -q --release --example make_capture
[ -f "$FILE" ] || ./target/release/examples/make_capture "$FILE" "$MB" "$CONNS"
SIZE=$(stat -c %s "$FILE")

measure() {
  local name=$1; shift
  local log
  log=$(mktemp)
  local lines
  lines=$( { /usr/bin/time -v "$@" 2>"$log" || true; } | wc -l)
  local secs rss
  secs=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,t,":"); s=0; for(i=1;i<=n;i++) s=s*60+t[i]; print s}' "$log")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
  awk -v n="$name" -v s="$secs" -v r="$rss" -v b="$SIZE" -v l="$lines" 'BEGIN {
    printf "%-34s %8.2f s %9.1f MB/s %9.1f MB peak RSS %9d lines out\n", n, s, b/1e6/s, r/1024, l }'
  rm -f "$log"
}

echo "$FILE: $((SIZE / 1000000)) MB, $CONNS connections"
measure "elect-leaders decode" ./target/release/elect-leaders decode "$FILE"
measure "elect-leaders decode --all" ./target/release/elect-leaders decode --all "$FILE"
measure "elect-leaders scan --json" ./target/release/elect-leaders scan --json "$FILE"
if command -v tshark >/dev/null 2>&1; then
  measure "tshark -d tcp.port==9092,kafka -Y kafka -T json" \
    tshark -r "$FILE" -d tcp.port==9092,kafka -Y kafka -T json
else
  echo "tshark: not installed, skipped"
fi
