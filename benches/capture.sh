#!/usr/bin/env bash
# Capture benchmark: decode a large synthetic pcap (examples/make_capture.rs: many
# interleaved connections to a broker on 9092, ElectLeaders among Produce-sized frames of
# another API), with this tool and with tshark's Kafka dissector on the same file.
# Prints wall time, MB/s and peak memory (max RSS) of each: from the file, and piped in on
# standard input (a stream: what `tcpdump -w - | elect-leaders decode -` reads).
#
#   benches/capture.sh [MB] [CONNECTIONS]      (default 500 MB, 2000 connections)
#
# Builds and capture file go under $CARGO_TARGET_DIR (default: target/). The capture is
# made once per size and kept ($CARGO_TARGET_DIR/bench/). Any step that fails (a build, the
# capture, a reader's non-zero exit) stops the script with a non-zero status.
#
# Needs /usr/bin/time (Debian package `time`); tshark is optional (Debian `tshark`).
set -euo pipefail
cd "$(dirname "$0")/.."
MB=${1:-500}
CONNS=${2:-2000}
TARGET_DIR=${CARGO_TARGET_DIR:-target}
FILE=$TARGET_DIR/bench/capture-${MB}mb-${CONNS}c.pcap
TOOL=$TARGET_DIR/release/elect-leaders
MAKE_CAPTURE=$TARGET_DIR/release/examples/make_capture

fail() {
  echo "benches/capture.sh: $*" >&2
  exit 1
}

[ -x /usr/bin/time ] || fail "/usr/bin/time not found (Debian package \`time\`)"

# The tool is the `elect-leaders` package in a workspace (crates/cli), or the root
# package's binary behind the `cli` feature in the single-package layout.
if [ -d crates/cli ]; then
  tool_build=(-p elect-leaders --bin elect-leaders)
else
  tool_build=(--features cli --bin elect-leaders)
fi
cargo build -q --release "${tool_build[@]}" || fail "building elect-leaders failed"
cargo build -q --release --workspace --example make_capture || fail "building examples/make_capture failed"
[ -x "$TOOL" ] || fail "$TOOL not found after the build (is the target directory elsewhere? set CARGO_TARGET_DIR)"
[ -x "$MAKE_CAPTURE" ] || fail "$MAKE_CAPTURE not found after the build (set CARGO_TARGET_DIR)"

if [ ! -f "$FILE" ]; then
  # Written under another name and renamed, so an interrupted run leaves no partial file
  # that a later run would take for the capture.
  "$MAKE_CAPTURE" "$FILE.partial" "$MB" "$CONNS" || fail "making the capture failed"
  mv "$FILE.partial" "$FILE"
fi
SIZE=$(stat -c %s "$FILE")

# measure NAME COMMAND...: runs COMMAND under /usr/bin/time, counts the lines it prints,
# and stops the script if it exits non-zero.
measure() {
  local name=$1; shift
  local log status_file lines status secs rss
  log=$(mktemp)
  status_file=$(mktemp)
  lines=$( { s=0; /usr/bin/time -v "$@" 2>"$log" || s=$?; echo "$s" >"$status_file"; } | wc -l)
  status=$(cat "$status_file")
  if [ "$status" -ne 0 ]; then
    # The command's own stderr: what precedes /usr/bin/time's report.
    sed '/^\tCommand being timed/,$d' "$log" | tail -n 20 >&2
    rm -f "$log" "$status_file"
    fail "$name: exit status $status"
  fi
  secs=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,t,":"); s=0; for(i=1;i<=n;i++) s=s*60+t[i]; print s}' "$log")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
  rm -f "$log" "$status_file"
  [ -n "$secs" ] && [ -n "$rss" ] || fail "$name: no timing from /usr/bin/time"
  awk -v n="$name" -v s="$secs" -v r="$rss" -v b="$SIZE" -v l="$lines" 'BEGIN {
    if (s > 0) rate = sprintf("%9.1f MB/s", b/1e6/s); else rate = sprintf("%9s MB/s", "-")
    printf "%-34s %8.2f s %s %9.1f MB peak RSS %9d lines out\n", n, s, rate, r/1024, l }'
}

echo "$FILE: $((SIZE / 1000000)) MB, $CONNS connections"
measure "elect-leaders decode" "$TOOL" decode "$FILE"
measure "elect-leaders decode --all" "$TOOL" decode --all "$FILE"
measure "elect-leaders scan --json" "$TOOL" scan --json "$FILE"
# The same capture piped in, as `tcpdump -w - | elect-leaders decode -` reads one: the
# reader then flushes each object as it writes it.
measure "cat | elect-leaders decode - (piped)" sh -c 'cat "$1" | "$0" decode -' "$TOOL" "$FILE"
measure "elect-leaders summary --json" "$TOOL" summary --json "$FILE"
if command -v tshark >/dev/null 2>&1; then
  measure "tshark -d tcp.port==9092,kafka -Y kafka -T json" \
    tshark -r "$FILE" -d tcp.port==9092,kafka -Y kafka -T json
else
  echo "tshark: not installed, skipped"
fi
