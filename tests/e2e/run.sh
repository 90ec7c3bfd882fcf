#!/usr/bin/env bash
# End-to-end tests of ElectLeaders against a real Apache Kafka 4.4.0 cluster (KRaft: one
# controller, two brokers) with three real clients (Kafka's Java Admin, confluent-kafka /
# librdkafka, kafka-python), all through a passthrough tap whose recordings this crate then
# decodes (examples/e2e_frames.rs). One command:
#
#   tests/e2e/run.sh                   build, start cluster + taps, test, stop everything
#   tests/e2e/run.sh --update-corpus   also copy the small captures to corpus/captures/
#
# Everything it makes lives in target/e2e/ (the venv, the cluster, run/: tap recordings,
# captures, decoded frames, observations). The last line is "N passed, M failed"; the exit
# status is non-zero when M > 0 or when the set-up fails.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
export E2E_DIR="${E2E_DIR:-$ROOT/target/e2e}"
RUN="$E2E_DIR/run"
UPDATE_CORPUS=0
[[ "${1:-}" == "--update-corpus" ]] && UPDATE_CORPUS=1

T_START=$SECONDS
say() { echo "e2e: $*" >&2; }

if ! command -v java >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then
    echo "e2e: Java and Maven are needed (java: $(command -v java || echo missing), mvn: $(command -v mvn || echo missing)); not run"
    exit 1
fi

mkdir -p "$E2E_DIR"
rm -rf "$RUN"
mkdir -p "$RUN/tap"

TAP_PID=""
PROXY_TAP_PID=""
PROXY_PID=""
CAP_PIDS=()
CLEANED=0
stop_captures() {
    local p
    for p in "${CAP_PIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done
    for p in "${CAP_PIDS[@]}"; do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$p" 2>/dev/null || true
    done
    CAP_PIDS=()
}
cleanup() {
    [[ $CLEANED == 1 ]] && return 0
    CLEANED=1
    stop_captures
    stop_pid "$PROXY_PID"
    bash "$HERE/cluster.sh" stop >>"$RUN/cleanup.log" 2>&1 || true
    stop_pid "$TAP_PID"
    stop_pid "$PROXY_TAP_PID"
}
stop_pid() { # TERM, then KILL after 5 s
    local p=$1
    [[ -n "$p" ]] && kill -0 "$p" 2>/dev/null || return 0
    kill -TERM "$p" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
}
# A set-up that fails still ends with the summary line (after cleanup).
SUMMARY_PRINTED=0
on_exit() {
    local rc=$?
    cleanup
    if [[ $SUMMARY_PRINTED == 0 && $rc != 0 ]]; then
        say "stopped before the tests ended (exit $rc); logs in $RUN"
        echo "0 passed, 1 failed"
    fi
}
trap on_exit EXIT
trap 'exit 130' INT TERM

# 1. Python clients, in a venv of their own.
VENV="$E2E_DIR/venv"
if [[ ! -x "$VENV/bin/python" ]]; then
    say "creating $VENV"
    python3 -m venv "$VENV"
fi
STAMP="$VENV/.e2e-requirements"
if [[ ! -f "$STAMP" ]] || ! cmp -s "$HERE/requirements.txt" "$STAMP"; then
    say "installing $(tr '\n' ' ' <"$HERE/requirements.txt")into $VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check -r "$HERE/requirements.txt" >"$E2E_DIR/pip.log" 2>&1 \
        || { cat "$E2E_DIR/pip.log" >&2; say "pip install failed"; exit 1; }
    cp "$HERE/requirements.txt" "$STAMP"
fi

# 2. The Java Admin tool, and the Rust frame checker.
JAVA_DIR="$HERE/java"
if ! mvn -q -B -o -f "$JAVA_DIR/pom.xml" compile dependency:build-classpath \
        -Dmdep.outputFile="$JAVA_DIR/target/classpath.txt" >"$E2E_DIR/mvn-java.log" 2>&1; then
    mvn -q -B -f "$JAVA_DIR/pom.xml" compile dependency:build-classpath \
        -Dmdep.outputFile="$JAVA_DIR/target/classpath.txt" >"$E2E_DIR/mvn-java.log" 2>&1 \
        || { cat "$E2E_DIR/mvn-java.log" >&2; say "the Java Admin tool does not build"; exit 1; }
fi
export ADMIN_CP="$JAVA_DIR/target/classes:$(cat "$JAVA_DIR/target/classpath.txt")"
(cd "$ROOT" && cargo build -q --example e2e_frames && cargo build -q -p elect-leaders --bin elect-leaders)
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
export E2E_FRAMES="$TARGET_DIR/debug/examples/e2e_frames"
PROXY_BIN="$TARGET_DIR/debug/elect-leaders"
# `elect-leaders fuzz` (test fuzz_campaign_short) runs the same binary.
export ELECT_LEADERS_BIN="$PROXY_BIN"

# 3. Capture tools (optional: without them the tests still run, without captures).
if ! command -v tcpdump >/dev/null 2>&1 || ! command -v dumpcap >/dev/null 2>&1; then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
        say "installing tcpdump and tshark"
        {
            echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
            DEBIAN_FRONTEND=noninteractive apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tcpdump tshark
        } >"$E2E_DIR/apt.log" 2>&1 || say "could not install tcpdump/tshark (see $E2E_DIR/apt.log); no captures"
    else
        say "tcpdump/dumpcap missing and cannot install them; no captures"
    fi
fi

# 4. The tap (one listener per broker), then the cluster advertising the tap's addresses.
"$VENV/bin/python" "$HERE/tap.py" --out "$RUN/tap" --count 2 --ports-file "$RUN/tap.ports" \
    --targets-env "$E2E_DIR/cluster/state.env" --target-keys CLIENT_PORT_2,CLIENT_PORT_3 \
    2>"$RUN/tap.log" &
TAP_PID=$!
for _ in $(seq 100); do [[ -s "$RUN/tap.ports" ]] && break; sleep 0.1; done
[[ -s "$RUN/tap.ports" ]] || { cat "$RUN/tap.log" >&2; say "the tap did not start"; exit 1; }
ADVERTISE="$(cat "$RUN/tap.ports")"

# 4b. The proxy: `elect-leaders proxy` (--deny-unclean, --protect-topic guarded) in front of
# a second tap, which records what reaches the brokers' PROXY listener (cluster.sh); the
# brokers advertise the proxy's addresses there, so its clients stay on it.
mkdir -p "$RUN/proxy-tap"
"$VENV/bin/python" "$HERE/tap.py" --out "$RUN/proxy-tap" --count 2 --ports-file "$RUN/proxy-tap.ports" \
    --targets-env "$E2E_DIR/cluster/state.env" --target-keys PROXY_PORT_2,PROXY_PORT_3 \
    2>"$RUN/proxy-tap.log" &
PROXY_TAP_PID=$!
for _ in $(seq 100); do [[ -s "$RUN/proxy-tap.ports" ]] && break; sleep 0.1; done
[[ -s "$RUN/proxy-tap.ports" ]] || { cat "$RUN/proxy-tap.log" >&2; say "the proxy's tap did not start"; exit 1; }
IFS=, read -r PROXY_UP_2 PROXY_UP_3 <"$RUN/proxy-tap.ports"
"$PROXY_BIN" proxy --listen 127.0.0.1:0 --upstream "$PROXY_UP_2" --listen 127.0.0.1:0 --upstream "$PROXY_UP_3" \
    --deny-unclean --protect-topic guarded --audit-log "$RUN/proxy-audit.jsonl" \
    >"$RUN/proxy.out" 2>"$RUN/proxy.log" &
PROXY_PID=$!
for _ in $(seq 100); do [[ $(grep -c '^listening' "$RUN/proxy.out" 2>/dev/null) == 2 ]] && break; sleep 0.1; done
PROXY_BOOTSTRAP="$(awk '/^listening/ {print $2}' "$RUN/proxy.out" | paste -sd, -)"
[[ "$PROXY_BOOTSTRAP" == *,* ]] || { cat "$RUN/proxy.log" >&2; say "the proxy did not start"; exit 1; }

T_CLUSTER=$SECONDS
ADVERTISE="$ADVERTISE" PROXY_ADVERTISE="$PROXY_BOOTSTRAP" bash "$HERE/cluster.sh" start \
    >"$RUN/cluster-start.out" 2>"$RUN/cluster-start.log" \
    || { cat "$RUN/cluster-start.log" >&2; say "the cluster did not start"; exit 1; }
say "cluster up in $((SECONDS - T_CLUSTER))s; clients bootstrap through the tap at $ADVERTISE," \
    "the proxy's at $PROXY_BOOTSTRAP"
export PROXY_BOOTSTRAP PROXY_PID PROXY_AUDIT="$RUN/proxy-audit.jsonl" PROXY_TAP_DIR="$RUN/proxy-tap"
export PROXY_LOG="$RUN/proxy.log"

export E2E_RUN="$RUN" BOOTSTRAP="$ADVERTISE" TAP_DIR="$RUN/tap" CLUSTER_SH="$HERE/cluster.sh"
TAP_PORTS="$(echo "$ADVERTISE" | sed 's/127\.0\.0\.1://g')"
export TAP_PORTS

# 5. The whole run's client traffic (the tap ports on lo): pcap by tcpdump, pcapng by dumpcap.
FILTER="$(echo "$TAP_PORTS" | sed 's/^/tcp port /; s/,/ or tcp port /g')"
if command -v tcpdump >/dev/null 2>&1; then
    tcpdump -i lo -U -s 0 -w "$RUN/all.pcap" "$FILTER" >"$RUN/all.pcap.log" 2>&1 &
    CAP_PIDS+=($!)
fi
if command -v dumpcap >/dev/null 2>&1; then
    dumpcap -q -i lo -s 0 -f "$FILTER" -w "$RUN/all.pcapng" >"$RUN/all.pcapng.log" 2>&1 &
    CAP_PIDS+=($!)
fi
sleep 1
for i in "${!CAP_PIDS[@]}"; do
    if ! kill -0 "${CAP_PIDS[$i]}" 2>/dev/null; then
        say "a capture did not start, the tests run without it: $(tail -n 1 "$RUN"/all.pcap*.log | tr '\n' ' ')"
    fi
done

# 6. The tests (the last line they print is the summary).
set +e
"$VENV/bin/python" -u "$HERE/test_e2e.py" | tee "$RUN/test.log"
STATUS=${PIPESTATUS[0]}
set -e
SUMMARY="$(tail -n 1 "$RUN/test.log")"

cleanup
for f in "$RUN/all.pcap" "$RUN/all.pcapng"; do
    if [[ -s "$f" ]]; then say "captured $(basename "$f"): $(stat -c %s "$f") bytes"
    else say "no capture in $(basename "$f") (tcpdump/dumpcap missing or not permitted)"; fi
done

if [[ $UPDATE_CORPUS == 1 ]]; then
    mkdir -p "$ROOT/corpus/captures"
    for f in "$RUN"/elect-leaders-kafka-4.4.pcap "$RUN"/elect-leaders-kafka-4.4.pcapng; do
        if [[ -s "$f" ]]; then
            install -m 644 "$f" "$ROOT/corpus/captures/"
            say "copied $(basename "$f") ($(stat -c %s "$f") bytes) to corpus/captures/"
        else
            say "no $(basename "$f") to copy"
        fi
    done
fi
say "done in $((SECONDS - T_START))s (recordings, captures and decoded frames in $RUN)"
if ! [[ "$SUMMARY" =~ ^[0-9]+\ passed,\ [0-9]+\ failed$ ]]; then
    SUMMARY="0 passed, 1 failed"
    STATUS=1
fi
SUMMARY_PRINTED=1
echo "$SUMMARY"
exit "$STATUS"
