#!/usr/bin/env python3
"""What the guard costs a Kafka client, on a real Kafka 4.4.0 cluster (tests/e2e/cluster.sh
with the TLS listeners of tests/e2e/pki.sh), five ways in one run on the same machine:

  direct      the client talks to the brokers' PLAINTEXT listener
  plain fwd   through `elect-leaders proxy --plain`: the same binary, runtime and connection
              handling, bytes copied both ways, nothing parsed (the brokers advertise its
              addresses on a listener of their own, PROXY, since it rewrites nothing)
  guard       through the guard in plaintext, one route per broker, `--deny-unclean`, the
              broker addresses in Metadata answers rewritten (the brokers advertise
              themselves)
  direct TLS  TLS to the brokers' SSL listener (with a client certificate: it requires one)
  guard TLS   through the guard with TLS on both sides: the client with its certificate to
              the guard (required: the guard lends its own only to clients it authenticated),
              the guard with its own to the brokers' SSL listener; rewriting on

Three measurements per mode, `--rounds` times; each round measures the round trips of every
mode, then the publish latency of every mode, then the throughput, the modes' order rotated
from round to round; tables give the medians of the rounds:

  1. Round trips at a fixed rate, one connection to broker 2, from this script: Metadata v1
     (all topics) and ElectLeaders v1 (PREFERRED, one partition already on its preferred
     leader, so the broker asks the controller and answers ELECTION_NOT_NEEDED), `--rate`
     requests a second for `--seconds` each; p50 and p99 in µs. A request waits for the
     previous answer, so the rate is a ceiling. Beside them, the proxy's CPU time (user and
     system, from /proc) per round trip.
  2. Publish latency at a fixed rate: Kafka's ProducerPerformance, `--fixed-records` records
     of 100 bytes at `--fixed-rate` a second, acks=1; average, p50 and p99 in ms. This is
     the figure kroxylicious reports (+0.2 ms, +6% on average with no filters).
  3. Produce throughput: ProducerPerformance, `--records` records of 100 bytes, unthrottled,
     acks=1, linger.ms=5, batch.size=256 KiB; records/s.

    benches/guard_overhead.py [--rounds 3] [--rate 200] [--seconds 15] ...

Everything it starts is stopped by pid, also on failure. State: target/overhead-bench (or
$OVERHEAD_BENCH_DIR).
"""

import argparse
import os
import re
import signal
import socket
import ssl
import struct
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
E2E = os.path.join(ROOT, "tests", "e2e")
STATE = os.environ.get("OVERHEAD_BENCH_DIR", os.path.join(ROOT, "target", "overhead-bench"))
MODES = ["direct", "plain fwd", "guard", "direct TLS", "guard TLS"]
METADATA_KEY, ELECT_KEY = 3, 43
METADATA_VERSION, ELECT_VERSION = 1, 1
PREFERRED = 0
# Round trips not counted at the start of each connection.
WARM_UP = 20

TOOLS_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
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
"""


def say(*args):
    print("overhead-bench:", *args, file=sys.stderr, flush=True)


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


# ---------------------------------------------------------------------------------------
# 1. Round trips from a raw socket.


def string(s):
    return struct.pack(">h", len(s)) + s


def header(key, version, cid):
    return struct.pack(">hhi", key, version, cid) + string(b"overhead-bench")


def metadata_request(cid):
    body = header(METADATA_KEY, METADATA_VERSION, cid) + struct.pack(">i", -1)  # all topics
    return struct.pack(">i", len(body)) + body


def elect_request(cid, topic, partition):
    body = header(ELECT_KEY, ELECT_VERSION, cid) + struct.pack(">b", PREFERRED)
    body += struct.pack(">i", 1) + string(topic) + struct.pack(">ii", 1, partition)
    body += struct.pack(">i", 30000)
    return struct.pack(">i", len(body)) + body


def recv_exact(s, n):
    data = bytearray()
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed after %d of %d bytes" % (len(data), n))
        data += chunk
    return bytes(data)


def round_trips(addr, kind, rate, seconds, tls=None):
    """Round trips of `kind` ("metadata" or "elect") to `addr`: a sorted list, in µs."""
    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=30)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if tls is not None:
        s = tls.wrap_socket(s, server_hostname=host)
    interval = 1.0 / rate
    times = []
    cid = 0
    try:
        # Warm-up: the first answers (TLS session, the broker's caches) are not counted.
        for _ in range(WARM_UP):
            cid += 1
            s.sendall(metadata_request(cid) if kind == "metadata" else elect_request(cid, b"bench", 0))
            recv_exact(s, struct.unpack(">i", recv_exact(s, 4))[0])
        start = time.perf_counter()
        next_send = start
        while time.perf_counter() - start < seconds:
            now = time.perf_counter()
            if now < next_send:
                time.sleep(next_send - now)
            next_send += interval
            cid += 1
            frame = metadata_request(cid) if kind == "metadata" else elect_request(cid, b"bench", 0)
            t0 = time.perf_counter_ns()
            s.sendall(frame)
            answer = recv_exact(s, struct.unpack(">i", recv_exact(s, 4))[0])
            t1 = time.perf_counter_ns()
            if struct.unpack(">i", answer[:4])[0] != cid:
                raise RuntimeError("%s: answer out of order" % addr)
            if kind == "elect":
                check_not_needed(answer)
            times.append((t1 - t0) / 1000)
    finally:
        s.close()
    times.sort()
    return times


def check_not_needed(answer):
    # v1 response: correlation id, throttle, top-level error, [topic [partition error msg]].
    (top_error,) = struct.unpack(">h", answer[8:10])
    if top_error != 0:
        raise RuntimeError("ElectLeaders answered with top-level error %d" % top_error)
    off = 10 + 4
    (tlen,) = struct.unpack(">h", answer[off:off + 2])
    off += 2 + tlen + 4 + 4
    (perr,) = struct.unpack(">h", answer[off:off + 2])
    if perr != 84:  # ELECTION_NOT_NEEDED
        raise RuntimeError("ElectLeaders partition error %d, expected 84" % perr)


def cpu_seconds(p):
    """The CPU time (user + system) process `p` has used so far, or 0 for no process."""
    if p is None:
        return 0.0
    with open("/proc/%d/stat" % p.pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(sorted_times, p):
    return sorted_times[min(len(sorted_times) - 1, int(len(sorted_times) * p))]


# ---------------------------------------------------------------------------------------
# 2 and 3. ProducerPerformance.


def producer(java_cp, bootstrap, config, mode, records, rate, log):
    """One ProducerPerformance run: `records` at `rate` a second (None: unthrottled, with
    linger.ms=5 and batches of 256 KiB)."""
    props = ["bootstrap.servers=" + bootstrap, "acks=1", "compression.type=none",
             "client.id=bench-" + mode.replace(" ", "-")]
    if rate is None:
        props += ["linger.ms=5", "batch.size=262144"]
    cmd = ["java", "-Xmx512m", "-XX:+UseSerialGC", "-cp", java_cp,
           "org.apache.kafka.tools.ProducerPerformance", "--topic", "bench",
           "--record-size", "100", "--num-records", str(records),
           "--throughput", str(-1 if rate is None else rate),
           "--command-config", config, "--command-property"] + props
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with open(log, "a") as f:
        f.write(" ".join(cmd) + "\n" + out.stdout + "\n")
    # "N records sent, R records/sec (M MB/sec), A ms avg latency, X ms max latency,
    #  P50 ms 50th, P95 ms 95th, P99 ms 99th, P999 ms 99.9th."
    last = [line for line in out.stdout.splitlines() if "records sent" in line]
    if out.returncode != 0 or not last:
        raise RuntimeError("ProducerPerformance failed (%s): see %s" % (mode, log))
    m = re.search(r"sent, ([0-9.]+) records/sec .* ([0-9.]+) ms avg latency.* ([0-9]+) ms 50th,"
                  r" ([0-9]+) ms 95th, ([0-9]+) ms 99th", last[-1])
    if not m:
        raise RuntimeError("cannot read ProducerPerformance's summary: " + last[-1])
    return {"rps": float(m.group(1)), "avg": float(m.group(2)), "p50": int(m.group(3)),
            "p99": int(m.group(5))}


# ---------------------------------------------------------------------------------------
# Processes.


class Procs:
    def __init__(self):
        self.procs = []

    def start(self, args, log):
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=open(log, "a"), text=True)
        self.procs.append(p)
        return p

    def stop(self, p):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs.remove(p)

    def stop_all(self):
        for p in list(self.procs):
            self.stop(p)


def start_proxy(procs, binary, routes, extra, log):
    """An `elect-leaders proxy` with one --listen/--upstream pair per (listen, upstream)."""
    args = [binary, "proxy", "--audit-log", log + ".audit"]
    for listen, upstream in routes:
        args += ["--listen", listen, "--upstream", upstream]
    p = procs.start(args + extra, log)
    for _ in routes:
        line = p.stdout.readline()
        if not line.startswith("listening "):
            procs.stop(p)
            raise RuntimeError("the proxy did not start: see " + log)
    return p


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rate", type=float, default=200, help="round trips a second")
    ap.add_argument("--seconds", type=float, default=15, help="per mode and request kind")
    ap.add_argument("--fixed-rate", type=int, default=5000, help="records a second")
    ap.add_argument("--fixed-records", type=int, default=50000)
    ap.add_argument("--records", type=int, default=1000000, help="for the throughput run")
    ap.add_argument("--skip-producer", action="store_true", help="round trips only")
    args = ap.parse_args()

    os.makedirs(STATE, exist_ok=True)
    logs = os.path.join(STATE, "logs")
    subprocess.run(["rm", "-rf", logs], check=True)
    os.makedirs(logs)
    env = dict(os.environ, E2E_DIR=STATE)
    pki = os.path.join(STATE, "pki")
    subprocess.run(["rm", "-rf", pki], check=True)
    subprocess.run(["bash", os.path.join(E2E, "pki.sh"), pki], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    keystore_password = None
    for line in open(os.path.join(pki, "users.env")):
        if line.startswith("KEYSTORE_PASSWORD="):
            keystore_password = line.strip().split("=", 1)[1].strip("'\"")

    say("building the release binary")
    subprocess.run(["cargo", "build", "-q", "--release", "-p", "elect-leaders", "--bin",
                    "elect-leaders"], check=True, cwd=ROOT)
    binary = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")),
                          "release", "elect-leaders")

    pom = os.path.join(STATE, "tools-pom.xml")
    with open(pom, "w") as f:
        f.write(TOOLS_POM)
    cp_file = os.path.join(STATE, "kafka-tools.classpath")
    if not os.path.exists(cp_file) or os.path.getsize(cp_file) == 0:
        say("resolving kafka-tools 4.4.0")
        subprocess.run(["mvn", "-q", "-B", "-f", pom, "dependency:build-classpath",
                        "-Dmdep.outputFile=" + cp_file], check=True,
                       stdout=open(os.path.join(logs, "mvn.log"), "w"), stderr=subprocess.STDOUT)
    java_cp = open(cp_file).read().strip()
    run_producer = not args.skip_producer

    cluster = os.path.join(E2E, "cluster.sh")
    procs = Procs()
    # The plain forwarder rewrites nothing, so the brokers advertise its addresses on PROXY.
    fwd_ports = free_ports(2)
    fwd_listen = ["127.0.0.1:%d" % p for p in fwd_ports]
    try:
        say("starting the cluster")
        subprocess.run(["bash", cluster, "start"], check=True,
                       env=dict(env, TLS_DIR=pki, PROXY_ADVERTISE=",".join(fwd_listen)),
                       stdout=subprocess.DEVNULL, stderr=open(os.path.join(logs, "cluster.log"), "w"))
        state = {}
        for line in open(os.path.join(STATE, "cluster", "state.env")):
            if "=" in line:
                k, v = line.strip().split("=", 1)
                state[k] = v.strip('"')
        plain = ["127.0.0.1:" + state["CLIENT_PORT_%d" % b] for b in (2, 3)]
        proxied = ["127.0.0.1:" + state["PROXY_PORT_%d" % b] for b in (2, 3)]
        tls = ["127.0.0.1:" + state["SSL_PORT_%d" % b] for b in (2, 3)]

        # The topic: partition 0 on brokers 2 and 3, led by its preferred leader, 2.
        subprocess.run(["java", "-Xmx256m", "-XX:+UseSerialGC", "-cp", java_cp,
                        "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", plain[0],
                        "--create", "--topic", "bench", "--replica-assignment", "2:3"],
                       check=True, stdout=open(os.path.join(logs, "topic.log"), "w"),
                       stderr=subprocess.STDOUT)
        time.sleep(3)

        direct_tls = ssl.create_default_context(cafile=os.path.join(pki, "ca.pem"))
        direct_tls.load_cert_chain(os.path.join(pki, "carol.pem"), os.path.join(pki, "carol.key"))
        guard_tls = ssl.create_default_context(cafile=os.path.join(pki, "ca.pem"))
        guard_tls.load_cert_chain(os.path.join(pki, "carol.pem"), os.path.join(pki, "carol.key"))
        configs = {}
        for mode in MODES:
            path = os.path.join(STATE, "producer-%s.properties" % mode.replace(" ", "-"))
            lines = []
            if mode in ("direct TLS", "guard TLS"):
                lines = ["security.protocol=SSL", "ssl.truststore.type=PEM",
                         "ssl.truststore.location=" + os.path.join(pki, "ca.pem"),
                         "ssl.keystore.type=PKCS12",
                         "ssl.keystore.location=" + os.path.join(pki, "carol.p12"),
                         "ssl.keystore.password=" + keystore_password,
                         "ssl.key.password=" + keystore_password]
            with open(path, "w") as f:
                f.write("\n".join(lines) + "\n")
            configs[mode] = path

        guard_listen = ["127.0.0.1:%d" % p for p in free_ports(2)]
        guard_tls_flags = [
            "--tls-cert", os.path.join(pki, "guard.pem"),
            "--tls-key", os.path.join(pki, "guard.key"),
            "--tls-client-ca", os.path.join(pki, "ca.pem"),
            "--upstream-tls", "--upstream-ca", os.path.join(pki, "ca.pem"),
            "--upstream-tls-cert", os.path.join(pki, "guard-upstream.pem"),
            "--upstream-tls-key", os.path.join(pki, "guard-upstream.key"),
        ]

        def setup(mode):
            """(proxy process or None, bootstrap for a client, address of broker 2's side,
            Python TLS context or None)"""
            if mode == "direct":
                return None, plain[0], plain[0], None
            if mode == "direct TLS":
                return None, tls[0], tls[0], direct_tls
            if mode == "plain fwd":
                p = start_proxy(procs, binary, list(zip(fwd_listen, proxied)), ["--plain"],
                                os.path.join(logs, "plain.log"))
                return p, fwd_listen[0], fwd_listen[0], None
            if mode == "guard":
                p = start_proxy(procs, binary, list(zip(guard_listen, plain)), ["--deny-unclean"],
                                os.path.join(logs, "guard.log"))
                return p, guard_listen[0], guard_listen[0], None
            p = start_proxy(procs, binary, list(zip(guard_listen, tls)),
                            ["--deny-unclean"] + guard_tls_flags, os.path.join(logs, "guard-tls.log"))
            return p, guard_listen[0], guard_listen[0], guard_tls

        if run_producer:
            say("warming up the brokers (not counted)")
            producer(java_cp, plain[0], configs["direct"], "warmup", args.records, None,
                     os.path.join(logs, "producer.log"))

        results = {}
        log = os.path.join(logs, "producer.log")

        def measure(phase, mode, rnd):
            p, bootstrap, addr, ctx = setup(mode)
            try:
                if phase == "round trips":
                    for kind in ("metadata", "elect"):
                        before = cpu_seconds(p)
                        t = round_trips(addr, kind, args.rate, args.seconds, ctx)
                        used = None if p is None else (cpu_seconds(p) - before) * 1e6 / (len(t) + WARM_UP)
                        results.setdefault((mode, kind), []).append((pct(t, 0.5), pct(t, 0.99), used))
                        say("round %d %-10s %-8s p50 %6.0f µs  p99 %6.0f µs  (%d)%s" % (
                            rnd + 1, mode, kind, pct(t, 0.5), pct(t, 0.99), len(t),
                            "" if used is None else "; proxy CPU %.0f µs each" % used))
                elif phase == "publish latency":
                    fixed = producer(java_cp, bootstrap, configs[mode], mode,
                                     args.fixed_records, args.fixed_rate, log)
                    results.setdefault((mode, "fixed"), []).append(fixed)
                    say("round %d %-10s publish avg %.2f ms p50 %d p99 %d" % (
                        rnd + 1, mode, fixed["avg"], fixed["p50"], fixed["p99"]))
                else:
                    full = producer(java_cp, bootstrap, configs[mode], mode, args.records,
                                    None, log)
                    results.setdefault((mode, "full"), []).append(full)
                    say("round %d %-10s %.0f records/s" % (rnd + 1, mode, full["rps"]))
            finally:
                if p is not None:
                    procs.stop(p)
                    if p.returncode not in (0, -signal.SIGTERM):
                        raise RuntimeError("%s exited with %s" % (mode, p.returncode))

        # Each round measures the round trips of every mode, then the publish latency of
        # every mode, then the throughput (which leaves the brokers busy for a while), with
        # the modes' order rotated from round to round so that no mode always follows the
        # same one.
        phases = ["round trips"] + (["publish latency", "throughput"] if run_producer else [])
        for rnd in range(args.rounds):
            order = MODES[rnd % len(MODES):] + MODES[:rnd % len(MODES)]
            for phase in phases:
                for mode in order:
                    measure(phase, mode, rnd)
            time.sleep(5)

        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True).stdout.strip()
        print()
        print("At %s; %d rounds, modes interleaved (order rotated each round), medians of the rounds; %d cores shared by "
              "the controller, two brokers, the proxy and the clients." % (
                  head, args.rounds, os.cpu_count()))
        print()
        print("Round trips, %d a second for %d s per mode and kind, one connection, µs:" % (
            args.rate, args.seconds))
        print()
        print("| mode | Metadata p50 | Metadata p99 | ElectLeaders p50 | ElectLeaders p99 "
              "| proxy CPU per Metadata / ElectLeaders |")
        print("|---|---:|---:|---:|---:|---:|")
        for mode in MODES:
            m, e = results[(mode, "metadata")], results[(mode, "elect")]
            cpu = "–" if m[0][2] is None else "%.0f / %.0f" % (
                median([r[2] for r in m]), median([r[2] for r in e]))
            print("| %s | %.0f | %.0f | %.0f | %.0f | %s |" % (
                mode, median([r[0] for r in m]), median([r[1] for r in m]),
                median([r[0] for r in e]), median([r[1] for r in e]), cpu))
        if not run_producer:
            return
        print()
        print("ProducerPerformance: publish latency at %d records/s (%d records of 100 bytes, "
              "acks=1), and throughput unthrottled (%d records, linger.ms=5, batch.size=256 KiB):"
              % (args.fixed_rate, args.fixed_records, args.records))
        print()
        print("| mode | avg latency (ms) | p50 (ms) | p99 (ms) | records/s (each round) | median records/s |")
        print("|---|---:|---:|---:|---|---:|")
        for mode in MODES:
            fx, fu = results[(mode, "fixed")], results[(mode, "full")]
            print("| %s | %.2f | %d | %d | %s | %.0f |" % (
                mode, median([r["avg"] for r in fx]), median([r["p50"] for r in fx]),
                median([r["p99"] for r in fx]), ", ".join("%.0f" % r["rps"] for r in fu),
                median([r["rps"] for r in fu])))
    finally:
        procs.stop_all()
        subprocess.run(["bash", cluster, "stop"], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
