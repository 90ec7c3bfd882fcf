#!/usr/bin/env bash
# Fuzz three real Kafka admin clients with `elect-leaders fuzz --serve` (a hostile broker):
# Kafka's Java Admin, confluent-kafka (librdkafka) and kafka-python, in that order; see
# driver.py for what is classified how. One command:
#
#   tests/fuzz-clients/run.sh                 the short run: 200 responses a client, at
#                                             most 60 s each
#   tests/fuzz-clients/run.sh --responses 10000 --seconds 1200    a campaign
#   tests/fuzz-clients/run.sh --self-test     a known-bad response (a partition count past
#                                             the end of the frame) must be each client's
#                                             rejection, not a harness failure; first,
#                                             test_driver.py checks the driver's
#                                             bookkeeping against a scripted child
#
# Other options go to driver.py. It builds the binary (debug, in CARGO_TARGET_DIR or
# target/), uses the Python clients of tests/e2e/requirements.txt in a venv of its own
# (target/fuzz-clients/venv) and the Java Admin of tests/e2e/java (Maven, offline first).
# A client whose toolchain is missing (no Java or Maven, no pip access) is skipped with one
# line. Results: standard output and target/fuzz-clients/ (records, stderr, summary.json).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT="${FUZZ_CLIENTS_DIR:-$ROOT/target/fuzz-clients}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
mkdir -p "$OUT"
say() { echo "fuzz-clients: $*" >&2; }

if ! (cd "$ROOT" && cargo build -q -p elect-leaders) >"$OUT/build.log" 2>&1; then
    cat "$OUT/build.log" >&2
    say "the binary does not build"
    exit 1
fi
BIN="$TARGET/debug/elect-leaders"

CLIENTS=()
# Python clients, pinned as in the e2e tests, in a venv of their own.
VENV="$OUT/venv"
if [[ ! -x "$VENV/bin/python" ]] || ! cmp -s "$ROOT/tests/e2e/requirements.txt" "$VENV/requirements.txt"; then
    rm -rf "$VENV"
    if python3 -m venv "$VENV" >"$OUT/pip.log" 2>&1 \
        && "$VENV/bin/pip" install -q --disable-pip-version-check \
            -r "$ROOT/tests/e2e/requirements.txt" >>"$OUT/pip.log" 2>&1; then
        cp "$ROOT/tests/e2e/requirements.txt" "$VENV/requirements.txt"
    else
        say "confluent, kafka-python: the venv cannot be made (see $OUT/pip.log); skipped"
        rm -rf "$VENV"
    fi
fi
PYTHON=python3
if [[ -x "$VENV/bin/python" ]]; then
    PYTHON="$VENV/bin/python"
    CLIENTS+=(confluent kafka-python)
fi

# Java: the e2e Maven project (kafka-clients as in the e2e cluster), which holds
# e2e.FuzzElect.
CLASSPATH_ARGS=()
JAVA_DIR="$ROOT/tests/e2e/java"
if ! command -v java >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then
    say "java: Java and Maven are needed (java: $(command -v java || echo missing), mvn: $(command -v mvn || echo missing)); skipped"
elif mvn -q -B -o -f "$JAVA_DIR/pom.xml" compile dependency:build-classpath \
        -Dmdep.outputFile="$JAVA_DIR/target/classpath.txt" >"$OUT/mvn.log" 2>&1 \
    || mvn -q -B -f "$JAVA_DIR/pom.xml" compile dependency:build-classpath \
        -Dmdep.outputFile="$JAVA_DIR/target/classpath.txt" >"$OUT/mvn.log" 2>&1; then
    CLASSPATH_ARGS=(--java-classpath "$(cat "$JAVA_DIR/target/classpath.txt"):$JAVA_DIR/target/classes")
    CLIENTS=(java "${CLIENTS[@]}")
else
    say "java: the Maven project does not build (see $OUT/mvn.log); skipped"
fi

for arg in "$@"; do
    if [[ "$arg" == --self-test ]] && ! "$PYTHON" "$HERE/test_driver.py" >"$OUT/test_driver.log" 2>&1; then
        cat "$OUT/test_driver.log" >&2
        say "the driver's own tests fail"
        exit 1
    fi
done
if [[ ${#CLIENTS[@]} == 0 ]]; then
    say "no client available; not run"
    exit 0
fi
CLIENT_LIST="$(IFS=,; echo "${CLIENTS[*]}")"
exec "$PYTHON" "$HERE/driver.py" --bin "$BIN" --out "$OUT" --python "$PYTHON" \
    --clients "$CLIENT_LIST" "${CLASSPATH_ARGS[@]}" "$@"
