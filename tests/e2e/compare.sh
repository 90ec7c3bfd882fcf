#!/usr/bin/env bash
# Two Kafka releases side by side: `elect-leaders fuzz --target A --compare B` between two
# small KRaft clusters started by cluster.sh (one controller and one broker each, on ports
# and in directories of their own), after the same topics were made on both.
#
#   tests/e2e/compare.sh [FUZZ FLAGS...]     e.g. --count 20000 --seed 1 --duration 1500
#
# The flags go to `elect-leaders fuzz --target A --compare B` as they are (default: --count
# 300 --duration 60). The topics: the 64 one-character names [a-zA-Z0-9_-], two partitions
# each, so that requests for all partitions and generated names of one character meet real
# partitions.
#
# Environment:
#   COMPARE_A, COMPARE_B  the Kafka versions (default 4.4.0 and 3.9.1)
#   E2E_DIR               state root (default <repo>/target/e2e); the clusters live in
#                         $E2E_DIR/compare-a and $E2E_DIR/compare-b, the Python clients'
#                         venv in $E2E_DIR/venv (made here if missing, as run.sh makes it)
#   ELECT_LEADERS_BIN     the tool (default: built here, `cargo build -p elect-leaders`)
#   COMPARE_OUT           where the difference lines go (default $E2E_DIR/compare/differences.jsonl);
#                         the summary goes to standard error
#   KEEP=1                leave the clusters running (stop them with
#                         CLUSTER_NAME=compare-a tests/e2e/cluster.sh stop, and compare-b)
#
# Exit status: the fuzz's (0 no difference, 1 differences, 2 a broker could not be
# reached), or 3 when Java or Maven is missing or a cluster or the topics could not be set
# up. Both clusters are stopped at the end, also on failure or Ctrl-C.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
export E2E_DIR="${E2E_DIR:-$ROOT/target/e2e}"
A="${COMPARE_A:-4.4.0}"
B="${COMPARE_B:-3.9.1}"
OUT_DIR="$E2E_DIR/compare"
OUT="${COMPARE_OUT:-$OUT_DIR/differences.jsonl}"
say() { echo "compare: $*" >&2; }

if ! command -v java >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then
    say "Java and Maven are needed (java: $(command -v java || echo missing), mvn: $(command -v mvn || echo missing)); not run"
    exit 3
fi
mkdir -p "$OUT_DIR" "$(dirname "$OUT")"

cluster() { # a|b ARGS...
    local name=$1 version
    shift
    if [[ $name == a ]]; then version=$A; else version=$B; fi
    CLUSTER_NAME="compare-$name" KAFKA_VERSION="$version" BROKER_COUNT=1 \
        TLS_DIR="" PROXY_ADVERTISE="" ADVERTISE="" OWN="" bash "$HERE/cluster.sh" "$@"
}
STARTED=()
cleanup() {
    [[ "${KEEP:-}" == 1 ]] && { say "clusters left running (KEEP=1)"; return 0; }
    local n
    for n in "${STARTED[@]}"; do cluster "$n" stop >>"$OUT_DIR/stop.log" 2>&1 & done
    wait
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ -z "${ELECT_LEADERS_BIN:-}" ]]; then
    (cd "$ROOT" && cargo build -q -p elect-leaders --bin elect-leaders)
    ELECT_LEADERS_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/elect-leaders"
fi

VENV="$E2E_DIR/venv"
if [[ ! -x "$VENV/bin/python" ]]; then
    say "creating $VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check -r "$HERE/requirements.txt" >"$OUT_DIR/pip.log" 2>&1 \
        || { cat "$OUT_DIR/pip.log" >&2; say "pip install failed"; exit 3; }
    cp "$HERE/requirements.txt" "$VENV/.e2e-requirements"
fi

# The two classpaths first, one after the other (Maven, offline when it can), then both
# clusters at once: their start is mostly JVM warm-up, one core each.
T0=$SECONDS
cluster a classpath >/dev/null 2>"$OUT_DIR/classpath-a.log" || { cat "$OUT_DIR/classpath-a.log" >&2; exit 3; }
cluster b classpath >/dev/null 2>"$OUT_DIR/classpath-b.log" || { cat "$OUT_DIR/classpath-b.log" >&2; exit 3; }
STARTED=(a b)
cluster a start >"$OUT_DIR/start-a.out" 2>"$OUT_DIR/start-a.log" & PA=$!
cluster b start >"$OUT_DIR/start-b.out" 2>"$OUT_DIR/start-b.log" & PB=$!
FAILED=0
wait "$PA" || { cat "$OUT_DIR/start-a.log" >&2; FAILED=1; }
wait "$PB" || { cat "$OUT_DIR/start-b.log" >&2; FAILED=1; }
[[ $FAILED == 0 ]] || { say "a cluster did not start"; exit 3; }
BOOT_A="$(tail -n 1 "$OUT_DIR/start-a.out")"
BOOT_B="$(tail -n 1 "$OUT_DIR/start-b.out")"
say "Kafka $A at $BOOT_A and Kafka $B at $BOOT_B, up in $((SECONDS - T0))s"

"$VENV/bin/python" - "$BOOT_A" "$BOOT_B" >"$OUT_DIR/topics.log" 2>&1 <<'EOF' || { cat "$OUT_DIR/topics.log" >&2; say "could not make the topics"; exit 3; }
import string, sys, time
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

NAMES = list(string.ascii_letters + string.digits + "_-")
PARTITIONS = 2
for bootstrap in sys.argv[1:]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="compare-setup",
                             request_timeout_ms=60000)
    admin.create_topics([NewTopic(n, PARTITIONS, 1) for n in NAMES], timeout_ms=60000)
    deadline = time.time() + 60
    while True:
        described = admin.describe_topics(NAMES)
        ready = [t for t in described if t.get("error_code") == 0
                 and len(t.get("partitions", [])) == PARTITIONS
                 and all(p.get("leader_id", p.get("leader", -1)) >= 0 for p in t["partitions"])]
        if len(ready) == len(NAMES):
            break
        if time.time() > deadline:
            sys.exit("%s: %d of %d topics have leaders after 60 s; one: %r"
                     % (bootstrap, len(ready), len(NAMES), described[:1]))
        time.sleep(0.5)
    admin.close()
    print("%s: %d topics of %d partitions" % (bootstrap, len(NAMES), PARTITIONS))
EOF
say "topics made ($((SECONDS - T0))s)"

FLAGS=("$@")
[[ ${#FLAGS[@]} -gt 0 ]] || FLAGS=(--count 300 --duration 60)
set +e
"$ELECT_LEADERS_BIN" fuzz --target "$BOOT_A" --compare "$BOOT_B" "${FLAGS[@]}" >"$OUT"
STATUS=$?
set -e
say "Kafka $A (A) against Kafka $B (B): exit $STATUS, $(wc -l <"$OUT") differences in $OUT; $((SECONDS - T0))s in all"
exit "$STATUS"
