#!/usr/bin/env bash
# Produce throughput on a real Kafka 4.4.0 cluster (tests/e2e/cluster.sh), measured by
# Kafka's own org.apache.kafka.tools.ProducerPerformance, three ways:
#
#   direct  the producer talks to the brokers
#   proxy   through `elect-leaders proxy` (release build; every frame cut out and peeked,
#           forwarded byte for byte)
#   plain   through `elect-leaders proxy --plain` (hidden): the same binary, runtime, accept
#           loop and connection handling, but bytes copied both ways with nothing parsed
#
#   benches/proxy_throughput.sh            RECORDS=1000000 RECORD_SIZE=100 ROUNDS=3
#
# The brokers advertise the proxy's addresses on a listener of their own (PROXY), so the
# producer stays on the proxy (or the plain forwarder, started on the same ports) after
# bootstrap. The modes run interleaved, ROUNDS times each; the table gives each run and the
# median. Everything it starts is stopped by pid, also on failure. State: target/proxy-bench.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
export E2E_DIR="${PROXY_BENCH_DIR:-$ROOT/target/proxy-bench}"
RECORDS="${RECORDS:-1000000}"
RECORD_SIZE="${RECORD_SIZE:-100}"
ROUNDS="${ROUNDS:-3}"
CLUSTER_SH="$ROOT/tests/e2e/cluster.sh"
say() { echo "proxy-bench: $*" >&2; }

mkdir -p "$E2E_DIR"
LOG="$E2E_DIR/logs"
rm -rf "$LOG"
mkdir -p "$LOG"

FWD_PID=""
cleanup() {
    stop_forwarder
    bash "$CLUSTER_SH" stop >>"$LOG/cleanup.log" 2>&1 || true
}
stop_forwarder() {
    if [[ -n "$FWD_PID" ]] && kill -0 "$FWD_PID" 2>/dev/null; then
        kill -TERM "$FWD_PID" 2>/dev/null || true
        for _ in $(seq 80); do kill -0 "$FWD_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$FWD_PID" 2>/dev/null || true
    fi
    FWD_PID=""
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# 1. The proxy (release) and ProducerPerformance's classpath (kafka-tools 4.4.0).
(cd "$ROOT" && cargo build -q --release -p elect-leaders --bin elect-leaders)
PROXY_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/elect-leaders"
TOOLS_POM="$E2E_DIR/tools-pom.xml"
cat >"$TOOLS_POM" <<'EOF'
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kafka-elect-leaders.bench</groupId>
  <artifactId>kafka-tools-classpath</artifactId>
  <version>0</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>4.4.0</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-nop</artifactId><version>1.7.36</version></dependency>
  </dependencies>
</project>
EOF
TOOLS_CP_FILE="$E2E_DIR/kafka-tools.classpath"
if [[ ! -s "$TOOLS_CP_FILE" ]]; then
    mvn -q -B -o -f "$TOOLS_POM" dependency:build-classpath -Dmdep.outputFile="$TOOLS_CP_FILE" >"$LOG/mvn.log" 2>&1 \
        || mvn -q -B -f "$TOOLS_POM" dependency:build-classpath -Dmdep.outputFile="$TOOLS_CP_FILE" >"$LOG/mvn.log" 2>&1 \
        || { cat "$LOG/mvn.log" >&2; say "cannot resolve kafka-tools"; exit 1; }
fi
TOOLS_CP="$(cat "$TOOLS_CP_FILE")"

# 2. The cluster: the proxy's listen ports chosen first, advertised on the PROXY listener.
read -r P2 P3 <<<"$(python3 -c '
import socket
s=[socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1",0))
print(" ".join(str(x.getsockname()[1]) for x in s))')"
LISTEN=("127.0.0.1:$P2" "127.0.0.1:$P3")
PROXIED="${LISTEN[0]},${LISTEN[1]}"
PROXY_ADVERTISE="$PROXIED" bash "$CLUSTER_SH" start >"$LOG/cluster.out" 2>"$LOG/cluster.log" \
    || { cat "$LOG/cluster.log" >&2; say "the cluster did not start"; exit 1; }
# shellcheck disable=SC1091
source "$E2E_DIR/cluster/state.env"
say "cluster up; direct $DIRECT_BOOTSTRAP, proxied $PROXIED"

java_tool() {
    java -Xmx512m -XX:+UseSerialGC -cp "$TOOLS_CP" "$@"
}
java_tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$DIRECT_BOOTSTRAP" --create \
    --topic bench --replica-assignment 2,3 >"$LOG/topic.log" 2>&1 \
    || { cat "$LOG/topic.log" >&2; say "cannot create the topic"; exit 1; }
sleep 2

start_forwarder() { # extra args...
    "$PROXY_BIN" proxy --listen "${LISTEN[0]}" --upstream "127.0.0.1:$PROXY_PORT_2" \
        --listen "${LISTEN[1]}" --upstream "127.0.0.1:$PROXY_PORT_3" "$@" \
        >"$LOG/forwarder.out" 2>>"$LOG/forwarder.log" &
    FWD_PID=$!
    for _ in $(seq 100); do [[ $(grep -c '^listening' "$LOG/forwarder.out" 2>/dev/null) == 2 ]] && return 0; sleep 0.05; done
    cat "$LOG/forwarder.log" >&2; say "the forwarder did not start"; exit 1
}

run_perf() { # mode bootstrap -> "records/s MB/s avg-latency-ms"
    local mode=$1 bootstrap=$2 out="$LOG/perf-$1-$3.log"
    java_tool org.apache.kafka.tools.ProducerPerformance --topic bench --num-records "$RECORDS" \
        --record-size "$RECORD_SIZE" --throughput -1 \
        --producer-props bootstrap.servers="$bootstrap" acks=1 linger.ms=5 batch.size=262144 \
        compression.type=none client.id="bench-$mode" >"$out" 2>&1 \
        || { tail -5 "$out" >&2; say "ProducerPerformance failed ($mode)"; exit 1; }
    # "N records sent, R records/sec (M MB/sec), L ms avg latency, ..."
    grep 'records sent' "$out" | tail -1 \
        | sed -E 's/.*sent, ([0-9.]+) records\/sec \(([0-9.]+) MB\/sec\), ([0-9.]+) ms avg latency.*/\1 \2 \3/' \
        | awk '{printf "%.0f %.2f %.1f\n", $1, $2, $3}'
}

# Warm-up (JIT, page cache, segment creation), not counted.
run_perf warmup "$DIRECT_BOOTSTRAP" 0 >/dev/null

declare -A RESULTS
for round in $(seq "$ROUNDS"); do
    RESULTS[direct,$round]="$(run_perf direct "$DIRECT_BOOTSTRAP" "$round")"
    start_forwarder
    RESULTS[proxy,$round]="$(run_perf proxy "$PROXIED" "$round")"
    stop_forwarder
    start_forwarder --plain
    RESULTS[plain,$round]="$(run_perf plain "$PROXIED" "$round")"
    stop_forwarder
    say "round $round: direct ${RESULTS[direct,$round]} | proxy ${RESULTS[proxy,$round]} | plain ${RESULTS[plain,$round]}"
done

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo
echo "ProducerPerformance: $RECORDS records of $RECORD_SIZE bytes, acks=1, linger.ms=5, batch.size=256 KiB;"
echo "2 brokers (1 partition each), $(nproc) cores shared by brokers, producer and forwarder."
echo
echo "| mode | records/s (each run) | median records/s | median MB/s | median avg latency (ms) |"
echo "|---|---|---:|---:|---:|"
for mode in direct proxy plain; do
    runs="" rs="" mbs="" lat=""
    for round in $(seq "$ROUNDS"); do
        read -r r m l <<<"${RESULTS[$mode,$round]}"
        runs="$runs${runs:+, }$r"; rs="$rs$r"$'\n'; mbs="$mbs$m"$'\n'; lat="$lat$l"$'\n'
    done
    echo "| $mode | $runs | $(printf '%s' "$rs" | median) | $(printf '%s' "$mbs" | median) | $(printf '%s' "$lat" | median) |"
done
