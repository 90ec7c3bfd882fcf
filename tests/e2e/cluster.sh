#!/usr/bin/env bash
# A real Apache Kafka cluster (4.4.0 unless KAFKA_VERSION says otherwise) in KRaft mode on
# loopback, for the end-to-end tests.
#
#   tests/e2e/cluster.sh start            format and start: controller 1, brokers 2 and 3
#   tests/e2e/cluster.sh stop             stop every node it started, remove the data dirs
#   tests/e2e/cluster.sh status           which nodes run, ports, bootstrap address
#   tests/e2e/cluster.sh stop-broker ID   stop one broker (2 or 3), keep its data
#   tests/e2e/cluster.sh start-broker ID  start it again with the same config and data
#   tests/e2e/cluster.sh bootstrap        print the bootstrap address (advertised)
#   tests/e2e/cluster.sh classpath        resolve (once) and print the server classpath
#
# Environment:
#   E2E_DIR      state root (default: <repo>/target/e2e); the cluster lives in $E2E_DIR/cluster
#   KAFKA_VERSION  the Kafka release to run (default 4.4.0), its classpath resolved by Maven
#                from server/pom.xml with -Dkafka.version; 3.9.x and 4.x are known to work
#                (3.9 is the last release with ZooKeeper, run here in KRaft mode like 4.x)
#   CLUSTER_NAME another cluster beside the default one: it lives in $E2E_DIR/$CLUSTER_NAME
#                (default "cluster"), on ports of its own; give the same name to stop it
#   BROKER_COUNT 1 or 2 (default 2): with 1, only broker 2 runs (no TLS, PROXY or ADVERTISE
#                for broker 3), a smaller cluster for side-by-side runs
#   ADVERTISE    "host:port,host:port": what brokers 2 and 3 advertise on their client
#                listener (e.g. a tap or proxy in front of each); default: their own address
#   PROXY_ADVERTISE  "host:port,host:port": adds a third listener, PROXY, on free ports
#                (PROXY_PORT_2, PROXY_PORT_3 in state.env), advertised as these addresses
#                (an `elect-leaders proxy` in front of each broker). A client that connects
#                to a listener is told the addresses of that same listener, so clients of
#                the proxy stay on it while those of CLIENT stay on the tap.
#   TLS_DIR      a directory made by pki.sh: adds two listeners on brokers 2 and 3, SSL (TLS,
#                client certificate required) and SASL_SSL (TLS, then SASL: SCRAM-SHA-256,
#                SCRAM-SHA-512 and PLAIN), both with TLS_DIR/broker.p12 and trusting
#                TLS_DIR/ca.pem. The SCRAM users alice and bob (passwords in
#                TLS_DIR/users.env) are added at format time (StorageTool --add-scram); the
#                PLAIN ones are in the listener's JAAS config.
#   SSL_ADVERTISE, SASL_SSL_ADVERTISE  "host:port,host:port": what those listeners advertise
#                (a TLS guard in front of each broker); default: their own address
#   SSL_PORTS, SASL_SSL_PORTS  "port,port": the ports they listen on (SSL_PORT_2, ... in
#                state.env), for a guard started before the cluster that must know where to
#                connect; default: free ones. The other ports are chosen free around them.
#   OWN=1        adds a listener OWN on a free port per broker (OWN_PORT_2, OWN_PORT_3 in
#                state.env), advertised as the address it listens on, as a broker advertises
#                itself by default: nothing about it names a guard or a tap (for a guard
#                that rewrites broker addresses, started after the cluster).
#   KAFKA_HEAP   JVM heap per node (default 256m)
#
# Each broker has two listeners: CLIENT (advertised as $ADVERTISE) for clients, INTERNAL for
# replication between brokers (never through the tap). Ports are chosen free at start and
# written, with the pids, to $E2E_DIR/cluster/state.env. Nodes log to files
# ($E2E_DIR/cluster/logs/node-N/server.log), never to the console.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
E2E_DIR="${E2E_DIR:-$ROOT/target/e2e}"
DIR="$E2E_DIR/${CLUSTER_NAME:-cluster}"
STATE="$DIR/state.env"
HEAP="${KAFKA_HEAP:-256m}"
KAFKA_VERSION="${KAFKA_VERSION:-4.4.0}"
[[ "$KAFKA_VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "cluster: KAFKA_VERSION=$KAFKA_VERSION is not a release number like 4.4.0" >&2; exit 2; }
CONTROLLER=1
case "${BROKER_COUNT:-2}" in
    1) BROKERS=(2) ;;
    2) BROKERS=(2 3) ;;
    *) echo "cluster: BROKER_COUNT must be 1 or 2 (got '$BROKER_COUNT')" >&2; exit 2 ;;
esac
READY_TIMEOUT="${READY_TIMEOUT:-120}"

log() { echo "cluster: $*" >&2; }
die() { log "$*"; exit 1; }

need_java() {
    command -v java >/dev/null 2>&1 || die "java not found (Java 17+ is needed for the Kafka cluster)"
    command -v mvn >/dev/null 2>&1 || die "mvn not found (Maven is needed to resolve the Kafka classpath)"
}

# The Kafka server classpath of $KAFKA_VERSION, resolved by Maven from server/pom.xml
# (offline first), one file per version.
classpath() {
    local out="$E2E_DIR/kafka-server-$KAFKA_VERSION.classpath" mlog="$E2E_DIR/mvn-server-$KAFKA_VERSION.log"
    if [[ ! -s "$out" || "$HERE/server/pom.xml" -nt "$out" ]]; then
        mkdir -p "$E2E_DIR"
        if ! mvn -q -B -o -f "$HERE/server/pom.xml" dependency:build-classpath -Dkafka.version="$KAFKA_VERSION" \
                -Dmdep.outputFile="$out" >"$mlog" 2>&1; then
            mvn -q -B -f "$HERE/server/pom.xml" dependency:build-classpath -Dkafka.version="$KAFKA_VERSION" \
                -Dmdep.outputFile="$out" >"$mlog" 2>&1 \
                || { cat "$mlog" >&2; die "could not resolve the classpath of Kafka $KAFKA_VERSION"; }
        fi
    fi
    cat "$out"
}

free_ports() { # N [port...] -> N free loopback ports, space separated, none of the ports given
    python3 - "$@" <<'EOF'
import socket, sys
avoid = {int(p) for p in sys.argv[2:]}
socks, ports = [], []
while len(ports) < int(sys.argv[1]):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
    if s.getsockname()[1] not in avoid:
        ports.append(s.getsockname()[1])
print(" ".join(map(str, ports)))
for s in socks: s.close()
EOF
}

# A cluster id as Kafka's Uuid.randomUuid makes one: never one whose text begins
# with '-' (1 in 64 of random ids), which StorageTool's '-t' would take for an option
# ("argument --cluster-id/-t: expected one argument"; a CI run failed so).
cluster_id() {
    python3 -c '
import base64, uuid
while True:
    s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    if not s.startswith("-"):
        print(s); break'
}

load_state() { [[ -f "$STATE" ]] || die "no cluster state in $STATE (not started?)"; # shellcheck disable=SC1090
    source "$STATE"; }

pid_of() { local f="$DIR/node-$1.pid"; [[ -f "$f" ]] && cat "$f" || true; }
alive() { local p; p="$(pid_of "$1")"; [[ -n "$p" ]] && kill -0 "$p" 2>/dev/null; }

write_props() { # node-id role -> props file
    local id=$1 role=$2 f="$DIR/node-$1.properties"
    {
        echo "process.roles=$role"
        echo "node.id=$id"
        echo "controller.quorum.voters=$CONTROLLER@127.0.0.1:$CONTROLLER_PORT"
        echo "controller.listener.names=CONTROLLER"
        echo "log.dirs=$DIR/data/node-$id"
        echo "num.partitions=1"
        echo "default.replication.factor=1"
        echo "offsets.topic.replication.factor=1"
        echo "offsets.topic.num.partitions=1"
        echo "transaction.state.log.replication.factor=1"
        echo "transaction.state.log.min.isr=1"
        echo "share.coordinator.state.topic.replication.factor=1"
        echo "share.coordinator.state.topic.min.isr=1"
        echo "group.initial.rebalance.delay.ms=0"
        # The tests decide where leaders go: no automatic move back to the preferred replica.
        echo "auto.leader.rebalance.enable=false"
        echo "unclean.leader.election.enable=false"
        echo "min.insync.replicas=1"
        echo "log.segment.bytes=1048576"
        echo "num.network.threads=2"
        echo "num.io.threads=2"
        echo "background.threads=2"
        echo "num.recovery.threads.per.data.dir=1"
        echo "log.cleaner.enable=false"
        # Shorter timeouts so that a stopped broker is fenced and a restarted one is back fast.
        echo "broker.session.timeout.ms=6000"
        echo "broker.heartbeat.interval.ms=500"
        echo "replica.lag.time.max.ms=5000"
        echo "controlled.shutdown.enable=true"
        echo "controller.quorum.election.timeout.ms=1000"
        echo "controller.quorum.fetch.timeout.ms=2000"
        if [[ $role == controller ]]; then
            echo "listeners=CONTROLLER://127.0.0.1:$CONTROLLER_PORT"
            echo "listener.security.protocol.map=CONTROLLER:PLAINTEXT"
        else
            local client_var="CLIENT_PORT_$id" internal_var="INTERNAL_PORT_$id" adv_var="ADVERTISED_$id"
            local proxy_var="PROXY_PORT_$id" proxy_adv_var="PROXY_ADVERTISED_$id" extra="" extra_adv=""
            if [[ -n "${!proxy_var:-}" ]]; then
                extra=",PROXY://127.0.0.1:${!proxy_var}"
                extra_adv=",PROXY://${!proxy_adv_var}"
            fi
            local ssl_var="SSL_PORT_$id" ssl_adv_var="SSL_ADVERTISED_$id"
            local sasl_var="SASL_SSL_PORT_$id" sasl_adv_var="SASL_SSL_ADVERTISED_$id"
            local own_var="OWN_PORT_$id"
            if [[ -n "${!own_var:-}" ]]; then
                extra="$extra,OWN://127.0.0.1:${!own_var}"
                extra_adv="$extra_adv,OWN://127.0.0.1:${!own_var}"
            fi
            if [[ -n "${TLS_DIR:-}" ]]; then
                extra="$extra,SSL://127.0.0.1:${!ssl_var},SASL_SSL://127.0.0.1:${!sasl_var}"
                extra_adv="$extra_adv,SSL://${!ssl_adv_var},SASL_SSL://${!sasl_adv_var}"
            fi
            echo "listeners=CLIENT://127.0.0.1:${!client_var},INTERNAL://127.0.0.1:${!internal_var}$extra"
            echo "advertised.listeners=CLIENT://${!adv_var},INTERNAL://127.0.0.1:${!internal_var}$extra_adv"
            echo "listener.security.protocol.map=CONTROLLER:PLAINTEXT,CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT,PROXY:PLAINTEXT,OWN:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL"
            echo "inter.broker.listener.name=INTERNAL"
            if [[ -n "${TLS_DIR:-}" ]]; then tls_props; fi
        fi
    } >"$f"
    echo "$f"
}

# The SSL and SASL_SSL listeners' settings (brokers, with TLS_DIR). Replication and the
# controller stay on PLAINTEXT listeners.
tls_props() {
    # shellcheck disable=SC1091
    source "$TLS_DIR/users.env"
    echo "ssl.keystore.type=PKCS12"
    echo "ssl.keystore.location=$TLS_DIR/broker.p12"
    echo "ssl.keystore.password=$KEYSTORE_PASSWORD"
    echo "ssl.key.password=$KEYSTORE_PASSWORD"
    echo "ssl.truststore.type=PEM"
    echo "ssl.truststore.location=$TLS_DIR/ca.pem"
    echo "listener.name.ssl.ssl.client.auth=required"
    echo "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,PLAIN"
    local scram="org.apache.kafka.common.security.scram.ScramLoginModule required;"
    echo "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=$scram"
    echo "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=$scram"
    echo "listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule" \
        "required user_alice=\"$ALICE_PASSWORD\" user_bob=\"$BOB_PASSWORD\";"
}

# StorageTool arguments adding the SCRAM users alice and bob (both mechanisms), one a line.
scram_args() {
    # shellcheck disable=SC1091
    source "$TLS_DIR/users.env"
    local mech
    for mech in SCRAM-SHA-256 SCRAM-SHA-512; do
        printf '%s\n' --add-scram "$mech=[name=alice,password=$ALICE_PASSWORD]" \
            --add-scram "$mech=[name=bob,password=$BOB_PASSWORD]"
    done
}

launch() { # node-id
    local id=$1 cp logs
    cp="$(classpath)"
    logs="$DIR/logs/node-$id"
    mkdir -p "$logs"
    # setsid: the node gets its own process group, so that the caller's Ctrl-C or trap does
    # not reach it except through `stop`, which kills it by pid.
    setsid java -Xms64m -Xmx"$HEAP" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k \
        -XX:ReservedCodeCacheSize=64m -Djava.awt.headless=true \
        -Dkafka.logs.dir="$logs" -Dlog4j2.configurationFile="$HERE/server/log4j2.xml" \
        -cp "$cp" kafka.Kafka "$DIR/node-$id.properties" \
        >"$logs/stdout.log" 2>&1 </dev/null &
    echo $! >"$DIR/node-$id.pid"
}

wait_ready() { # node ids... : brokers unfenced, controller listening
    local deadline=$((SECONDS + READY_TIMEOUT)) id
    for id in "$@"; do
        local logf="$DIR/logs/node-$id/server.log" marker
        if [[ $id == "$CONTROLLER" ]]; then marker="Kafka Server started"
        else marker="The broker has been unfenced"; fi
        # A restarted broker appends to its log: count markers seen since this launch.
        local before
        before=$(cat "$DIR/node-$id.markers" 2>/dev/null || echo 0)
        while :; do
            alive "$id" || { tail -20 "$logf" "$DIR/logs/node-$id/stdout.log" >&2 2>/dev/null || true
                die "node $id exited during startup (logs: $DIR/logs/node-$id)"; }
            local n
            n=$(grep -c "$marker" "$logf" 2>/dev/null || true)
            [[ ${n:-0} -gt $before ]] && { echo "$n" >"$DIR/node-$id.markers"; break; }
            ((SECONDS < deadline)) || die "node $id not ready after ${READY_TIMEOUT}s (logs: $DIR/logs/node-$id)"
            sleep 0.3
        done
    done
}

kill_node() { # node-id [timeout]
    local id=$1 t=${2:-20} p
    p="$(pid_of "$id")"
    [[ -n "$p" ]] || return 0
    if kill -0 "$p" 2>/dev/null; then
        kill -TERM "$p" 2>/dev/null || true
        local deadline=$((SECONDS + t))
        while kill -0 "$p" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
        if kill -0 "$p" 2>/dev/null; then
            log "node $id (pid $p) still up after ${t}s: KILL"
            kill -KILL "$p" 2>/dev/null || true
            sleep 0.2
        fi
    fi
    rm -f "$DIR/node-$id.pid"
}

bootstrap() { load_state; echo "$BOOTSTRAP"; }

start() {
    need_java
    if [[ -f "$STATE" ]]; then
        local id
        for id in $CONTROLLER 2 3; do
            alive "$id" && die "a cluster is already running in $DIR (run: $0 stop)"
        done
        rm -rf "$DIR"
    fi
    mkdir -p "$DIR/data" "$DIR/logs"
    local t0=$SECONDS cp
    cp="$(classpath)"
    SSL_PORT_2=""; SSL_PORT_3=""; SASL_SSL_PORT_2=""; SASL_SSL_PORT_3=""
    SSL_ADVERTISED_2=""; SSL_ADVERTISED_3=""; SASL_SSL_ADVERTISED_2=""; SASL_SSL_ADVERTISED_3=""
    local fixed=()
    if [[ ${#BROKERS[@]} == 1 && ( -n "${TLS_DIR:-}" || -n "${PROXY_ADVERTISE:-}" ) ]]; then
        die "TLS_DIR and PROXY_ADVERTISE need BROKER_COUNT=2"
    fi
    if [[ -n "${TLS_DIR:-}" ]]; then
        [[ -d "$TLS_DIR" ]] || die "TLS_DIR=$TLS_DIR is not a directory (make it with: $HERE/pki.sh DIR)"
        TLS_DIR="$(cd "$TLS_DIR" && pwd)"
        [[ -s "$TLS_DIR/broker.p12" && -s "$TLS_DIR/users.env" ]] \
            || die "TLS_DIR=$TLS_DIR holds no PKI (make it with: $HERE/pki.sh DIR)"
        local tls_ports given="${SSL_PORTS:-},${SASL_SSL_PORTS:-}"
        read -r -a tls_ports <<<"$(free_ports 4 ${given//,/ })"
        IFS=, read -r SSL_PORT_2 SSL_PORT_3 <<<"${SSL_PORTS:-${tls_ports[0]},${tls_ports[1]}}"
        IFS=, read -r SASL_SSL_PORT_2 SASL_SSL_PORT_3 <<<"${SASL_SSL_PORTS:-${tls_ports[2]},${tls_ports[3]}}"
        [[ -n "$SSL_PORT_3" && -n "$SASL_SSL_PORT_3" ]] \
            || die "SSL_PORTS and SASL_SSL_PORTS must name ${#BROKERS[@]} ports, one per broker"
        fixed=("$SSL_PORT_2" "$SSL_PORT_3" "$SASL_SSL_PORT_2" "$SASL_SSL_PORT_3")
        local sadv
        IFS=, read -r -a sadv <<<"${SSL_ADVERTISE:-127.0.0.1:$SSL_PORT_2,127.0.0.1:$SSL_PORT_3}"
        [[ ${#sadv[@]} -eq ${#BROKERS[@]} ]] \
            || die "SSL_ADVERTISE must name ${#BROKERS[@]} host:port, one per broker (got '$SSL_ADVERTISE')"
        SSL_ADVERTISED_2=${sadv[0]}; SSL_ADVERTISED_3=${sadv[1]}
        IFS=, read -r -a sadv <<<"${SASL_SSL_ADVERTISE:-127.0.0.1:$SASL_SSL_PORT_2,127.0.0.1:$SASL_SSL_PORT_3}"
        [[ ${#sadv[@]} -eq ${#BROKERS[@]} ]] \
            || die "SASL_SSL_ADVERTISE must name ${#BROKERS[@]} host:port, one per broker (got '$SASL_SSL_ADVERTISE')"
        SASL_SSL_ADVERTISED_2=${sadv[0]}; SASL_SSL_ADVERTISED_3=${sadv[1]}
    fi
    local ports
    read -r -a ports <<<"$(free_ports 9 "${fixed[@]}")"
    CONTROLLER_PORT=${ports[0]}
    CLIENT_PORT_2=${ports[1]}; INTERNAL_PORT_2=${ports[2]}
    CLIENT_PORT_3=${ports[3]}; INTERNAL_PORT_3=${ports[4]}
    PROXY_PORT_2=""; PROXY_PORT_3=""; PROXY_ADVERTISED_2=""; PROXY_ADVERTISED_3=""
    if [[ -n "${PROXY_ADVERTISE:-}" ]]; then
        local padv
        IFS=, read -r -a padv <<<"$PROXY_ADVERTISE"
        [[ ${#padv[@]} -eq ${#BROKERS[@]} ]] \
            || die "PROXY_ADVERTISE must name ${#BROKERS[@]} host:port, one per broker (got '$PROXY_ADVERTISE')"
        PROXY_PORT_2=${ports[5]}; PROXY_PORT_3=${ports[6]}
        PROXY_ADVERTISED_2=${padv[0]}; PROXY_ADVERTISED_3=${padv[1]}
    fi
    OWN_PORT_2=""; OWN_PORT_3=""
    if [[ "${OWN:-}" == 1 ]]; then
        OWN_PORT_2=${ports[7]}; OWN_PORT_3=${ports[8]}
    fi
    local adv
    IFS=, read -r -a adv <<<"${ADVERTISE:-}"
    if [[ ${#adv[@]} -gt 0 && ${#adv[@]} -ne ${#BROKERS[@]} ]]; then
        die "ADVERTISE must name ${#BROKERS[@]} host:port, one per broker (got '${ADVERTISE}')"
    fi
    ADVERTISED_2=${adv[0]:-127.0.0.1:$CLIENT_PORT_2}
    ADVERTISED_3=${adv[1]:-127.0.0.1:$CLIENT_PORT_3}
    BOOTSTRAP="$ADVERTISED_2,$ADVERTISED_3"
    local direct="127.0.0.1:$CLIENT_PORT_2,127.0.0.1:$CLIENT_PORT_3"
    if [[ ${#BROKERS[@]} == 1 ]]; then
        BOOTSTRAP="$ADVERTISED_2"; direct="127.0.0.1:$CLIENT_PORT_2"
    fi
    CLUSTER_ID="$(cluster_id)"
    cat >"$STATE" <<EOF
CLUSTER_ID=$CLUSTER_ID
KAFKA_VERSION=$KAFKA_VERSION
BROKER_COUNT=${#BROKERS[@]}
CONTROLLER_PORT=$CONTROLLER_PORT
CLIENT_PORT_2=$CLIENT_PORT_2
INTERNAL_PORT_2=$INTERNAL_PORT_2
CLIENT_PORT_3=$CLIENT_PORT_3
INTERNAL_PORT_3=$INTERNAL_PORT_3
ADVERTISED_2=$ADVERTISED_2
ADVERTISED_3=$ADVERTISED_3
BOOTSTRAP=$BOOTSTRAP
DIRECT_BOOTSTRAP=$direct
PROXY_PORT_2=$PROXY_PORT_2
PROXY_PORT_3=$PROXY_PORT_3
PROXY_ADVERTISED_2=$PROXY_ADVERTISED_2
PROXY_ADVERTISED_3=$PROXY_ADVERTISED_3
OWN_PORT_2=$OWN_PORT_2
OWN_PORT_3=$OWN_PORT_3
TLS_DIR=${TLS_DIR:-}
SSL_PORT_2=$SSL_PORT_2
SSL_PORT_3=$SSL_PORT_3
SSL_ADVERTISED_2=$SSL_ADVERTISED_2
SSL_ADVERTISED_3=$SSL_ADVERTISED_3
SASL_SSL_PORT_2=$SASL_SSL_PORT_2
SASL_SSL_PORT_3=$SASL_SSL_PORT_3
SASL_SSL_ADVERTISED_2=$SASL_SSL_ADVERTISED_2
SASL_SSL_ADVERTISED_3=$SASL_SSL_ADVERTISED_3
EOF
    write_props $CONTROLLER controller >/dev/null
    for id in "${BROKERS[@]}"; do write_props "$id" broker >/dev/null; done
    # Format the three storage dirs in parallel (one short JVM each).
    # With TLS_DIR, the controller's bootstrap metadata gets the SCRAM users.
    local fpids=() id scram=()
    [[ -n "${TLS_DIR:-}" ]] && mapfile -t scram < <(scram_args)
    for id in $CONTROLLER "${BROKERS[@]}"; do
        local extra_args=()
        [[ $id == "$CONTROLLER" ]] && extra_args=("${scram[@]}")
        java -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
            -Dlog4j2.configurationFile="$HERE/server/log4j2.xml" -Dkafka.logs.dir="$DIR/logs" \
            -cp "$cp" kafka.tools.StorageTool format -t "$CLUSTER_ID" -c "$DIR/node-$id.properties" \
            "${extra_args[@]}" >"$DIR/logs/format-$id.log" 2>&1 &
        fpids+=($!)
    done
    for p in "${fpids[@]}"; do
        local rc=0
        wait "$p" || rc=$?
        if [[ $rc != 0 ]]; then
            tail -n 20 "$DIR"/logs/format-*.log "$DIR/logs/server.log" >&2 2>/dev/null || true
            die "storage format failed (exit $rc)"
        fi
    done
    for id in $CONTROLLER "${BROKERS[@]}"; do launch "$id"; done
    wait_ready $CONTROLLER "${BROKERS[@]}"
    local third=""
    [[ ${#BROKERS[@]} == 2 ]] && third=", broker 3 on 127.0.0.1:$CLIENT_PORT_3 (advertised $ADVERTISED_3)"
    log "Kafka $KAFKA_VERSION KRaft cluster up in $((SECONDS - t0))s in $DIR: controller 1 on" \
        "127.0.0.1:$CONTROLLER_PORT, broker 2 on 127.0.0.1:$CLIENT_PORT_2 (advertised $ADVERTISED_2)$third"
    if [[ -n "$OWN_PORT_2" ]]; then
        log "OWN listeners on 127.0.0.1:$OWN_PORT_2, 127.0.0.1:$OWN_PORT_3, advertised as themselves"
    fi
    if [[ -n "${TLS_DIR:-}" ]]; then
        log "SSL listeners on 127.0.0.1:$SSL_PORT_2, 127.0.0.1:$SSL_PORT_3 (advertised $SSL_ADVERTISED_2," \
            "$SSL_ADVERTISED_3); SASL_SSL on 127.0.0.1:$SASL_SSL_PORT_2, 127.0.0.1:$SASL_SSL_PORT_3" \
            "(advertised $SASL_SSL_ADVERTISED_2, $SASL_SSL_ADVERTISED_3)"
    fi
    echo "$BOOTSTRAP"
}

stop() {
    [[ -d "$DIR" ]] || { log "nothing to stop"; return 0; }
    # Brokers first (controlled shutdown needs the controller), then the controller. Both
    # broker ids, whatever BROKER_COUNT says now: a broker without a pid file is skipped.
    local id
    for id in 2 3; do kill_node "$id" 15 & done
    wait
    kill_node $CONTROLLER 15
    rm -rf "$DIR/data"
    rm -f "$DIR"/node-*.markers
    log "stopped (logs kept in $DIR/logs)"
}

status() {
    load_state
    [[ "${BROKER_COUNT:-2}" == 1 ]] && BROKERS=(2)
    local id
    echo "Kafka ${KAFKA_VERSION:-4.4.0} in $DIR"
    for id in $CONTROLLER "${BROKERS[@]}"; do
        if alive "$id"; then echo "node $id: running (pid $(pid_of "$id"))"
        else echo "node $id: stopped"; fi
    done
    echo "controller: 127.0.0.1:$CONTROLLER_PORT"
    echo "broker 2: 127.0.0.1:$CLIENT_PORT_2 advertised $ADVERTISED_2"
    [[ ${#BROKERS[@]} == 2 ]] && echo "broker 3: 127.0.0.1:$CLIENT_PORT_3 advertised $ADVERTISED_3"
    echo "bootstrap: $BOOTSTRAP"
    if [[ -n "${OWN_PORT_2:-}" ]]; then
        echo "OWN: 127.0.0.1:$OWN_PORT_2, 127.0.0.1:$OWN_PORT_3 (advertised as themselves)"
    fi
    if [[ -n "${TLS_DIR:-}" ]]; then
        echo "SSL: 127.0.0.1:$SSL_PORT_2 advertised $SSL_ADVERTISED_2, 127.0.0.1:$SSL_PORT_3 advertised $SSL_ADVERTISED_3"
        echo "SASL_SSL: 127.0.0.1:$SASL_SSL_PORT_2 advertised $SASL_SSL_ADVERTISED_2," \
            "127.0.0.1:$SASL_SSL_PORT_3 advertised $SASL_SSL_ADVERTISED_3"
    fi
}

broker_arg() {
    local id=${1:-}
    [[ " ${BROKERS[*]} " == *" $id "* ]] || die "broker id must be one of: ${BROKERS[*]}"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    bootstrap) bootstrap ;;
    classpath) need_java; classpath ;;
    stop-broker)
        broker_arg "${2:-}"; load_state
        kill_node "$2" 30
        log "broker $2 stopped" ;;
    start-broker)
        broker_arg "${2:-}"; load_state
        alive "$2" && die "broker $2 is already running"
        launch "$2"; wait_ready "$2"
        log "broker $2 started" ;;
    *) echo "usage: $0 start|stop|status|bootstrap|classpath|stop-broker ID|start-broker ID" >&2; exit 2 ;;
esac
