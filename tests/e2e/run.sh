#!/usr/bin/env bash
# End-to-end tests of ElectLeaders against a real Apache Kafka 4.4.0 cluster (KRaft: one
# controller, two brokers) with three real clients (Kafka's Java Admin, confluent-kafka /
# librdkafka, kafka-python), all through a passthrough tap whose recordings this crate then
# decodes (examples/e2e_frames.rs); then the same clients through `elect-leaders proxy`: a
# plaintext guard (test_proxy.py), and two with TLS on both sides, SASL (SCRAM, PLAIN) and
# mTLS, keys and certificates made at start (test_tls.py, pki.sh); and one in front of
# listeners that advertise the brokers' own addresses, which it rewrites (test_rewrite.py).
# Beside it, test_compare.py starts two small clusters of its own (Kafka 4.4.0 and 3.9.1,
# compare.sh) and compares their answers to the same fuzzed requests.
# One command:
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
GUARD_PIDS=()
REWRITE_PID=""
REWRITE_TRACER_PID=""
HAPROXY_PID=""
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
    local g
    for g in "${GUARD_PIDS[@]}"; do stop_pid "$g"; done
    # The rewriting guard first, then strace, which ends with it (strace ignores TERM).
    stop_pid "$REWRITE_PID"
    stop_pid "$REWRITE_TRACER_PID"
    stop_pid "$HAPROXY_PID"
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
# `decode --interface` (test_live.py) needs the feature `live`, which links libpcap: built in
# when libpcap's headers are there (libpcap-dev); without them that test says so and skips.
LIVE=()
if [[ -e /usr/include/pcap.h || -e /usr/include/pcap/pcap.h ]]; then LIVE=(--features live); fi
(cd "$ROOT" && cargo build -q --example e2e_frames && cargo build -q -p elect-leaders --bin elect-leaders "${LIVE[@]}")
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

# 3a. strace, with which the rewriting guard runs (test_rewrite.py: which of its sockets
# reached the brokers' own listeners).
if ! command -v strace >/dev/null 2>&1; then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
        say "installing strace"
        { DEBIAN_FRONTEND=noninteractive apt-get update -qq
          DEBIAN_FRONTEND=noninteractive apt-get install -y -qq strace; } >"$E2E_DIR/apt-strace.log" 2>&1 \
            || say "could not install strace (see $E2E_DIR/apt-strace.log); the rewrite tests that need it fail"
    else
        say "strace missing and cannot install it; the rewrite tests that need it fail"
    fi
fi

# 3b. openssl, for the keys and certificates of the TLS tests (pki.sh).
if ! command -v openssl >/dev/null 2>&1; then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
        say "installing openssl"
        { DEBIAN_FRONTEND=noninteractive apt-get update -qq
          DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssl; } >"$E2E_DIR/apt-openssl.log" 2>&1 \
            || { cat "$E2E_DIR/apt-openssl.log" >&2; say "could not install openssl"; exit 1; }
    else
        say "openssl is needed for the TLS tests and cannot be installed here"; exit 1
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

# 4c. Two guards with TLS on both sides (test_tls.py), with keys, certificates and passwords
# made now (pki.sh): one in front of the brokers' SASL_SSL listeners (SCRAM and PLAIN users
# alice and bob; only alice may elect), one in front of their SSL listeners that requires
# client certificates (only carol's subject may elect) and presents one of its own to the
# brokers. Like the proxy, they start before the cluster, whose TLS listeners advertise
# them; so the brokers' TLS ports are chosen here, below the kernel's ephemeral range, where
# no listener on port 0 (the guards', the taps', the cluster's other ones) can take them.
PKI="$RUN/pki"
bash "$HERE/pki.sh" "$PKI" 2>"$RUN/pki.log" || { cat "$RUN/pki.log" >&2; say "could not make the keys and certificates"; exit 1; }
read -r SSL_UP_2 SSL_UP_3 SASL_UP_2 SASL_UP_3 < <(python3 - <<'EOF'
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
ports = []
while len(ports) < 4:
    # (an ephemeral range that starts low leaves no room: any free port then)
    port = random.randrange(10000, low) if low > 11000 else 0
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        port = s.getsockname()[1]
        if port not in ports:
            ports.append(port)
    except OSError:
        pass
    finally:
        s.close()
print(*ports)
EOF
)
start_guard() { # NAME ARGS...: `elect-leaders proxy ARGS`, output in $RUN/NAME.out and .log;
    local name=$1 pid n=0  # sets GUARD_BOOTSTRAP (its two listeners)
    shift
    "$PROXY_BIN" proxy "$@" >"$RUN/$name.out" 2>"$RUN/$name.log" &
    pid=$!
    GUARD_PIDS+=("$pid")
    while ((n++ < 100)) && kill -0 "$pid" 2>/dev/null; do
        [[ $(grep -c '^listening' "$RUN/$name.out" 2>/dev/null) == 2 ]] && break
        sleep 0.1
    done
    GUARD_BOOTSTRAP="$(awk '/^listening/ {print $2}' "$RUN/$name.out" | paste -sd, -)"
    [[ "$GUARD_BOOTSTRAP" == *,* ]] || { cat "$RUN/$name.log" >&2; say "the guard $name did not start"; exit 1; }
}
start_guard tls-guard \
    --listen 127.0.0.1:0 --upstream "127.0.0.1:$SASL_UP_2" --listen 127.0.0.1:0 --upstream "127.0.0.1:$SASL_UP_3" \
    --tls-cert "$PKI/guard.pem" --tls-key "$PKI/guard.key" --upstream-tls --upstream-ca "$PKI/ca.pem" \
    --allow-principal alice --deny-unclean --audit-log "$RUN/tls-guard-audit.jsonl"
TLS_BOOTSTRAP="$GUARD_BOOTSTRAP"
MTLS_PRINCIPAL="CN=carol,OU=e2e,O=kafka-elect-leaders"
start_guard mtls-guard \
    --listen 127.0.0.1:0 --upstream "127.0.0.1:$SSL_UP_2" --listen 127.0.0.1:0 --upstream "127.0.0.1:$SSL_UP_3" \
    --tls-cert "$PKI/guard.pem" --tls-key "$PKI/guard.key" --tls-client-ca "$PKI/ca.pem" \
    --upstream-tls --upstream-ca "$PKI/ca.pem" \
    --upstream-tls-cert "$PKI/guard-upstream.pem" --upstream-tls-key "$PKI/guard-upstream.key" \
    --allow-principal "$MTLS_PRINCIPAL" --deny-unclean --audit-log "$RUN/mtls-guard-audit.jsonl"
MTLS_BOOTSTRAP="$GUARD_BOOTSTRAP"

T_CLUSTER=$SECONDS
ADVERTISE="$ADVERTISE" PROXY_ADVERTISE="$PROXY_BOOTSTRAP" \
    TLS_DIR="$PKI" SSL_PORTS="$SSL_UP_2,$SSL_UP_3" SASL_SSL_PORTS="$SASL_UP_2,$SASL_UP_3" \
    SSL_ADVERTISE="$MTLS_BOOTSTRAP" SASL_SSL_ADVERTISE="$TLS_BOOTSTRAP" OWN=1 bash "$HERE/cluster.sh" start \
    >"$RUN/cluster-start.out" 2>"$RUN/cluster-start.log" \
    || { cat "$RUN/cluster-start.log" >&2; say "the cluster did not start"; exit 1; }
say "cluster up in $((SECONDS - T_CLUSTER))s; clients bootstrap through the tap at $ADVERTISE," \
    "the proxy's at $PROXY_BOOTSTRAP, the TLS guards' at $TLS_BOOTSTRAP (SASL_SSL) and $MTLS_BOOTSTRAP (mTLS)"
export TLS_DIR="$PKI" TLS_BOOTSTRAP MTLS_BOOTSTRAP MTLS_PRINCIPAL
export TLS_AUDIT="$RUN/tls-guard-audit.jsonl" MTLS_AUDIT="$RUN/mtls-guard-audit.jsonl"
export TLS_DIRECT="127.0.0.1:$SASL_UP_2,127.0.0.1:$SASL_UP_3"
export PROXY_BOOTSTRAP PROXY_PID PROXY_AUDIT="$RUN/proxy-audit.jsonl" PROXY_TAP_DIR="$RUN/proxy-tap"
export PROXY_LOG="$RUN/proxy.log"

# 4d. The rewriting guard (test_rewrite.py), started now that the brokers' OWN listeners are
# up: they advertise the brokers' own addresses, and the guard tells its clients its own
# instead (nothing advertised in advance). Every SYN to the OWN ports is captured from now
# on (tcpdump, $RUN/own-syn.pcap), and the guard runs under strace, which records each of
# its TCP sockets' addresses (setsockopt TCP_NODELAY after its connect): the test matches
# the two. Its metrics on a port of its own.
# The allow-list guard of test_doors.py (issue 42): only client id doors-ops may change
# leadership, in front of the brokers' client listeners (not the taps: its frames stay out of
# the recordings the frames' check decodes).
CLIENT_PORT_2="$(sed -n 's/^CLIENT_PORT_2=//p' "$E2E_DIR/cluster/state.env")"
CLIENT_PORT_3="$(sed -n 's/^CLIENT_PORT_3=//p' "$E2E_DIR/cluster/state.env")"
start_guard doors-guard \
    --listen 127.0.0.1:0 --upstream "127.0.0.1:$CLIENT_PORT_2" --listen 127.0.0.1:0 --upstream "127.0.0.1:$CLIENT_PORT_3" \
    --allow-client-id doors-ops --audit-log "$RUN/doors-guard-audit.jsonl"
export DOORS_BOOTSTRAP="$GUARD_BOOTSTRAP" DOORS_AUDIT="$RUN/doors-guard-audit.jsonl"

OWN_PORT_2="$(sed -n 's/^OWN_PORT_2=//p' "$E2E_DIR/cluster/state.env")"
OWN_PORT_3="$(sed -n 's/^OWN_PORT_3=//p' "$E2E_DIR/cluster/state.env")"
[[ -n "$OWN_PORT_2" && -n "$OWN_PORT_3" ]] || { say "the cluster has no OWN listeners"; exit 1; }
if command -v tcpdump >/dev/null 2>&1; then
    tcpdump -i lo --immediate-mode -U -s 96 -w "$RUN/own-syn.pcap" \
        "tcp[tcpflags] & (tcp-syn|tcp-ack) == tcp-syn and (dst port $OWN_PORT_2 or dst port $OWN_PORT_3)" \
        >"$RUN/own-syn.pcap.log" 2>&1 &
    CAP_PIDS+=($!)
fi
TRACE=()
if command -v strace >/dev/null 2>&1; then
    TRACE=(strace -f --seccomp-bpf -qq -e signal=none -yy -e trace=connect,setsockopt -o "$RUN/rewrite-guard.strace" --)
fi
# The guard writes its own pid before it execs (strace forks a child of its own first, to
# check seccomp: strace's first child is not always the guard).
rm -f "$RUN/rewrite-guard.pid"
"${TRACE[@]}" sh -c 'echo $$ >"$1"; shift; exec "$@"' sh "$RUN/rewrite-guard.pid" "$PROXY_BIN" proxy \
    --listen 127.0.0.1:0 --upstream "127.0.0.1:$OWN_PORT_2" --listen 127.0.0.1:0 --upstream "127.0.0.1:$OWN_PORT_3" \
    --deny-unclean --audit-log "$RUN/rewrite-guard-audit.jsonl" --metrics-listen 127.0.0.1:0 \
    >"$RUN/rewrite-guard.out" 2>"$RUN/rewrite-guard.log" &
if [[ ${#TRACE[@]} -gt 0 ]]; then REWRITE_TRACER_PID=$!; fi
for _ in $(seq 100); do
    [[ -s "$RUN/rewrite-guard.pid" ]] && break
    sleep 0.05
done
REWRITE_PID="$(cat "$RUN/rewrite-guard.pid" 2>/dev/null || true)"
[[ -n "$REWRITE_PID" ]] || { cat "$RUN/rewrite-guard.log" >&2; say "the rewriting guard did not start"; exit 1; }
for _ in $(seq 100); do
    grep -q '^metrics ' "$RUN/rewrite-guard.out" 2>/dev/null && break
    kill -0 "$REWRITE_PID" 2>/dev/null || break
    sleep 0.1
done
REWRITE_BOOTSTRAP="$(awk '/^listening/ {print $2}' "$RUN/rewrite-guard.out" | paste -sd, -)"
REWRITE_METRICS="$(awk '/^metrics/ {print $2}' "$RUN/rewrite-guard.out")"
[[ "$REWRITE_BOOTSTRAP" == *,* && -n "$REWRITE_METRICS" ]] \
    || { cat "$RUN/rewrite-guard.log" >&2; say "the rewriting guard did not start"; exit 1; }
say "the rewriting guard at $REWRITE_BOOTSTRAP (brokers' own listeners 127.0.0.1:$OWN_PORT_2," \
    "127.0.0.1:$OWN_PORT_3), metrics at $REWRITE_METRICS${TRACE[*]:+, under strace}"
export REWRITE_BOOTSTRAP REWRITE_METRICS REWRITE_PID OWN_PORTS="$OWN_PORT_2,$OWN_PORT_3"
export REWRITE_AUDIT="$RUN/rewrite-guard-audit.jsonl" REWRITE_LOG="$RUN/rewrite-guard.log"
export REWRITE_STRACE="${TRACE[*]:+$RUN/rewrite-guard.strace}" OWN_SYN_PCAP="$RUN/own-syn.pcap"

# 4e. The fleet (test_fleet.py, issue 45): three guards behind a real HAProxy, in front of
# the brokers' OWN listeners. HAProxy listens on 127.0.0.2, one frontend port per broker,
# and connects to the guards from 127.0.0.5 with the PROXY protocol (v2), checking each
# guard's /livez; the guards listen on 127.0.1.1-3 with the same ports and tell their
# clients HAProxy's address (--advertise-host 127.0.0.2). Linux answers on all of 127/8.
if [[ -n "${E2E_FLEET:-}" ]] && ! command -v haproxy >/dev/null 2>&1; then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
        say "installing haproxy"
        { DEBIAN_FRONTEND=noninteractive apt-get update -qq
          DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy; } >"$E2E_DIR/apt-haproxy.log" 2>&1 \
            || say "could not install haproxy (see $E2E_DIR/apt-haproxy.log); the fleet tests fail"
    else
        say "haproxy missing and cannot install it; the fleet tests fail"
    fi
fi
# Opt-in for now (E2E_FLEET=1): with the fleet up, test_rewrite.py's count of the
# connections that reached the brokers' OWN listeners found one it could not match to the
# rewriting guard (2026-12-08); until that is understood, CI runs the rest without it.
if [[ -n "${E2E_FLEET:-}" ]] && command -v haproxy >/dev/null 2>&1; then
    read -r FLEET_P2 FLEET_P3 FLEET_M < <(python3 - <<'EOF'
import socket
ips = ["127.0.0.2", "127.0.1.1", "127.0.1.2", "127.0.1.3"]
ports = []
while len(ports) < 3:
    s = socket.socket()
    s.bind(("127.0.0.2", 0))
    port = s.getsockname()[1]
    s.close()
    free = True
    for ip in ips:
        t = socket.socket()
        try:
            t.bind((ip, port))
        except OSError:
            free = False
        finally:
            t.close()
    if free and port not in ports:
        ports.append(port)
print(*ports)
EOF
)
    FLEET_PID_LIST=()
    FLEET_AUDIT_LIST=()
    FLEET_METRICS_LIST=()
    for i in 1 2 3; do
        start_guard "fleet-$i" \
            --listen "127.0.1.$i:$FLEET_P2" --upstream "127.0.0.1:$OWN_PORT_2" \
            --listen "127.0.1.$i:$FLEET_P3" --upstream "127.0.0.1:$OWN_PORT_3" \
            --advertise-host 127.0.0.2 --proxy-protocol-from 127.0.0.5 \
            --deny-unclean --protect-topic guarded --drain-timeout 10s \
            --metrics-listen "127.0.1.$i:$FLEET_M" --audit-log "$RUN/fleet-$i-audit.jsonl"
        FLEET_PID_LIST+=("${GUARD_PIDS[-1]}")
        FLEET_AUDIT_LIST+=("$RUN/fleet-$i-audit.jsonl")
        FLEET_METRICS_LIST+=("127.0.1.$i:$FLEET_M")
    done
    {
        printf 'global\n    maxconn 2000\n'
        printf 'defaults\n    mode tcp\n    timeout connect 5s\n    timeout client 5m\n    timeout server 5m\n'
        printf '    retries 3\n    option redispatch\n'
        for port in "$FLEET_P2" "$FLEET_P3"; do
            printf 'frontend kafka-%s\n    bind 127.0.0.2:%s\n    default_backend guards-%s\n' "$port" "$port" "$port"
            printf 'backend guards-%s\n    balance roundrobin\n    source 127.0.0.5\n' "$port"
            # /livez, not /readyz: /readyz probes a broker (ApiVersions to the OWN
            # listeners), and test_rewrite.py counts every connection that reaches those
            # before the fleet's tests run. test_fleet.py checks /readyz itself.
            printf '    option httpchk GET /livez\n    http-check expect status 200\n'
            printf '    default-server send-proxy-v2 check port %s inter 500 fall 2 rise 1\n' "$FLEET_M"
            for i in 1 2 3; do printf '    server g%s 127.0.1.%s:%s\n' "$i" "$i" "$port"; done
        done
    } >"$RUN/haproxy.cfg"
    haproxy -f "$RUN/haproxy.cfg" -db >"$RUN/haproxy.log" 2>&1 &
    HAPROXY_PID=$!
    for _ in $(seq 50); do
        python3 -c "import socket; socket.create_connection(('127.0.0.2', $FLEET_P2), 1).close()" 2>/dev/null && break
        sleep 0.1
    done
    FLEET_BOOTSTRAP="127.0.0.2:$FLEET_P2,127.0.0.2:$FLEET_P3"
    # (bash exports no array: the lists go as comma-separated strings)
    FLEET_PIDS="$(IFS=,; echo "${FLEET_PID_LIST[*]}")"
    FLEET_AUDITS="$(IFS=,; echo "${FLEET_AUDIT_LIST[*]}")"
    FLEET_METRICS="$(IFS=,; echo "${FLEET_METRICS_LIST[*]}")"
    export FLEET_BOOTSTRAP FLEET_PIDS FLEET_AUDITS FLEET_METRICS
    say "the fleet: HAProxy at $FLEET_BOOTSTRAP, guards at 127.0.1.1-3 (metrics port $FLEET_M)"
fi

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
