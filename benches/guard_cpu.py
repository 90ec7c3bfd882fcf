#!/usr/bin/env python3
"""What the guard itself costs per request: its CPU time per round trip and the latency it
adds, five ways in one run, in front of a FAKE BROKER written here that answers at once
(so that what is measured is the proxy, not a broker: issue 37 asks for this figure
before the guard's per-request cost is cut).

    cargo build --release -p elect-leaders
    python3 benches/guard_cpu.py [--requests 20000] [--rounds 3] [--window 16]

Modes (the same fake broker behind each, plaintext or TLS):
  direct      the client talks to the fake broker
  plain fwd   through `elect-leaders proxy --plain`: bytes copied both ways, nothing parsed
  guard       through the guard, `--deny-unclean`, audit lines to a file
  direct TLS  TLS to the fake broker
  guard TLS   the guard with TLS on both sides (client to guard, guard to the broker)

Kinds: Produce v3 (acks=1, 100 bytes of records: the guard reads its acks and timeout,
and forwards it) and ElectLeaders v1 (PREFERRED, one partition: the guard decides it,
audits it and forwards it; the fake broker elects it).

Patterns:
  paced           one request at a time at --rate a second (a client's requests come
                  apart: each wakes the proxy's threads from sleep, the case of a real
                  broker's millisecond round trips): p50 and p99 of the round trip, what
                  the proxy adds to direct's;
  back to back    each request sent as soon as the previous answer came: the same;
  pipelined       --window requests in flight on the connection: requests a second.
For both, the proxy's CPU time (user + system, from /proc/PID/stat) per request: the
figure that does not depend on the client's own speed (a Python client here, whose cost is
in the latencies but not in the proxy's CPU).

Each round runs every mode, kind and pattern, the modes' order rotated from round to round;
the tables are the medians of the rounds. Everything it starts is stopped by pid, also on
failure. Needs openssl (tests/e2e/pki.sh makes the certificates).
"""

import argparse
import os
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = ["direct", "plain fwd", "guard", "direct TLS", "guard TLS"]
KINDS = ["produce", "elect"]
WARM_UP = 200


def string(s: bytes) -> bytes:
    return struct.pack(">h", len(s)) + s


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def produce_v3(cid: int) -> bytes:
    head = struct.pack(">hhi", 0, 3, cid) + string(b"bench")
    records = bytes(100)
    body = (struct.pack(">h", -1) + struct.pack(">hi", 1, 30000) + struct.pack(">i", 1)
            + string(b"orders") + struct.pack(">i", 1) + struct.pack(">i", 0)
            + struct.pack(">i", len(records)) + records)
    return frame(head + body)


def elect_v1(cid: int) -> bytes:
    head = struct.pack(">hhi", 43, 1, cid) + string(b"bench")
    body = (struct.pack(">b", 0) + struct.pack(">i", 1) + string(b"orders")
            + struct.pack(">ii", 1, 0) + struct.pack(">i", 30000))
    return frame(head + body)


REQUESTS = {"produce": produce_v3, "elect": elect_v1}

# The fake broker's answers, after the correlation id: Produce v3 (no topics, no
# throttle) and ElectLeaders v1 (the one partition elected).
ANSWERS = {
    0: struct.pack(">ii", 0, 0),
    43: (struct.pack(">ihi", 0, 0, 1) + string(b"orders") + struct.pack(">i", 1)
         + struct.pack(">ihh", 0, 0, -1)),
}


def recv_exact(s, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return bytes(buf)


class FakeBroker:
    """A FAKE BROKER: answers Produce and ElectLeaders at once, a thread a connection."""

    def __init__(self, tls: ssl.SSLContext = None):
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.port = self.listener.getsockname()[1]
        self.tls = tls
        self.stopping = False
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while not self.stopping:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn):
        try:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.tls:
                conn = self.tls.wrap_socket(conn, server_side=True)
            while True:
                size = struct.unpack(">i", recv_exact(conn, 4))[0]
                body = recv_exact(conn, size)
                key, cid = struct.unpack(">h", body[:2])[0], body[4:8]
                answer = ANSWERS.get(key, b"")
                conn.sendall(struct.pack(">i", 4 + len(answer)) + cid + answer)
        except (ConnectionError, OSError, ssl.SSLError):
            pass
        finally:
            conn.close()

    def stop(self):
        self.stopping = True
        self.listener.close()


def cpu_seconds(pid) -> float:
    if pid is None:
        return 0.0
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wakeups(pid) -> int:
    """Voluntary context switches of every thread of `pid` so far: each is a thread going
    to sleep to be woken again. A count, steady on a loaded machine where CPU time is not."""
    if pid is None:
        return 0
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        total += int(line.split()[1])
        except OSError:
            pass  # a thread that ended meanwhile
    return total


def connect(port: int, tls: ssl.SSLContext = None):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if tls:
        s = tls.wrap_socket(s, server_hostname="localhost")
    return s


def read_answer(s, cid: int):
    size = struct.unpack(">i", recv_exact(s, 4))[0]
    body = recv_exact(s, size)
    if struct.unpack(">i", body[:4])[0] != cid:
        raise RuntimeError(f"answer {struct.unpack('>i', body[:4])[0]} for request {cid}")


def one_at_a_time(s, kind: str, n: int, pid):
    make = REQUESTS[kind]
    for cid in range(WARM_UP):
        s.sendall(make(cid))
        read_answer(s, cid)
    times = []
    cpu, woken = cpu_seconds(pid), wakeups(pid)
    for cid in range(WARM_UP, WARM_UP + n):
        req = make(cid)
        t = time.perf_counter_ns()
        s.sendall(req)
        read_answer(s, cid)
        times.append(time.perf_counter_ns() - t)
    cpu, woken = cpu_seconds(pid) - cpu, wakeups(pid) - woken
    times.sort()
    return {"p50": times[len(times) // 2] / 1000, "p99": times[int(len(times) * 0.99)] / 1000,
            "cpu": cpu / n * 1e6, "wakeups": woken / n}


def paced(s, kind: str, n: int, rate: float, pid):
    make = REQUESTS[kind]
    for cid in range(WARM_UP):
        s.sendall(make(cid))
        read_answer(s, cid)
    times = []
    cpu, woken = cpu_seconds(pid), wakeups(pid)
    start = time.perf_counter()
    for i, cid in enumerate(range(WARM_UP, WARM_UP + n)):
        wait = start + i / rate - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        req = make(cid)
        t = time.perf_counter_ns()
        s.sendall(req)
        read_answer(s, cid)
        times.append(time.perf_counter_ns() - t)
    cpu, woken = cpu_seconds(pid) - cpu, wakeups(pid) - woken
    times.sort()
    return {"p50": times[len(times) // 2] / 1000, "p99": times[int(len(times) * 0.99)] / 1000,
            "cpu": cpu / n * 1e6, "wakeups": woken / n}


def pipelined(s, kind: str, n: int, window: int, pid):
    make = REQUESTS[kind]
    reqs = [make(cid) for cid in range(n)]
    cpu, woken = cpu_seconds(pid), wakeups(pid)
    t = time.perf_counter()
    sent = 0
    for _ in range(min(window, n)):
        s.sendall(reqs[sent])
        sent += 1
    for cid in range(n):
        read_answer(s, cid)
        if sent < n:
            s.sendall(reqs[sent])
            sent += 1
    elapsed = time.perf_counter() - t
    cpu, woken = cpu_seconds(pid) - cpu, wakeups(pid) - woken
    return {"rate": n / elapsed, "cpu": cpu / n * 1e6, "wakeups": woken / n}


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=20000, help="per mode, kind and pattern")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--window", type=int, default=16, help="requests in flight, pipelined")
    ap.add_argument("--rate", type=float, default=1000, help="requests a second, paced")
    ap.add_argument("--paced", type=int, default=5000, help="paced requests per mode and kind")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "elect-leaders"))
    ap.add_argument("--modes", default=",".join(MODES), help="which modes, comma-separated")
    ap.add_argument("--proxy-arg", action="append", default=[], metavar="ARG",
                    help="one more argument to every proxy (e.g. --proxy-arg=--threads=0)")
    ap.add_argument("--proxy-env", action="append", default=[], metavar="KEY=VALUE",
                    help="set in the proxies' environment (e.g. TOKIO_WORKER_THREADS=1)")
    args = ap.parse_args()
    if not os.path.exists(args.bin):
        sys.exit(f"{args.bin} not found: cargo build --release -p elect-leaders")

    work = tempfile.mkdtemp(prefix="guard-cpu-")
    pki = os.path.join(work, "pki")
    subprocess.run(["bash", os.path.join(ROOT, "tests", "e2e", "pki.sh"), pki], check=True,
                   stdout=subprocess.DEVNULL)
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_tls.load_cert_chain(os.path.join(pki, "broker.pem"), os.path.join(pki, "broker.key"))
    client_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client_tls.load_verify_locations(os.path.join(pki, "ca.pem"))

    brokers = {"plain": FakeBroker(), "tls": FakeBroker(server_tls)}
    procs = []

    def start_proxy(upstream_port: int, extra):
        env = dict(os.environ, **dict(kv.split("=", 1) for kv in args.proxy_env))
        p = subprocess.Popen(
            env=env, args=[args.bin, "proxy", "--listen", "127.0.0.1:0", "--upstream",
             f"127.0.0.1:{upstream_port}"] + extra + args.proxy_arg,
            stdout=subprocess.PIPE, stderr=open(os.path.join(work, "proxy.log"), "a"), text=True)
        procs.append(p)
        line = p.stdout.readline()
        return p, int(line.split()[1].rsplit(":", 1)[1])

    results = {}  # (mode, kind, pattern) -> [round results]
    try:
        for rnd in range(args.rounds):
            modes = [m for m in MODES if m in args.modes.split(",")]
            order = modes[rnd % len(modes):] + modes[:rnd % len(modes)]
            for mode in order:
                tls = mode.endswith("TLS")
                broker = brokers["tls" if tls else "plain"]
                proc, port = None, broker.port
                if mode == "plain fwd":
                    proc, port = start_proxy(broker.port, ["--plain"])
                elif mode == "guard":
                    proc, port = start_proxy(broker.port, [
                        "--deny-unclean", "--audit-log", os.path.join(work, "audit.jsonl")])
                elif mode == "guard TLS":
                    proc, port = start_proxy(broker.port, [
                        "--deny-unclean", "--audit-log", os.path.join(work, "audit.jsonl"),
                        "--tls-cert", os.path.join(pki, "guard.pem"),
                        "--tls-key", os.path.join(pki, "guard.key"),
                        "--upstream-tls", "--upstream-ca", os.path.join(pki, "ca.pem")])
                pid = proc.pid if proc else None
                try:
                    for kind in KINDS:
                        s = connect(port, client_tls if tls else None)
                        try:
                            r = paced(s, kind, args.paced, args.rate, pid)
                            results.setdefault((mode, kind, "paced"), []).append(r)
                        finally:
                            s.close()
                        s = connect(port, client_tls if tls else None)
                        try:
                            r = one_at_a_time(s, kind, args.requests, pid)
                            results.setdefault((mode, kind, "one"), []).append(r)
                        finally:
                            s.close()
                        s = connect(port, client_tls if tls else None)
                        try:
                            r = pipelined(s, kind, args.requests, args.window, pid)
                            results.setdefault((mode, kind, "pipelined"), []).append(r)
                        finally:
                            s.close()
                finally:
                    if proc:
                        proc.terminate()
                        proc.wait(timeout=10)
                        procs.remove(proc)
                print(f"round {rnd + 1}: {mode} done", file=sys.stderr)
    finally:
        for p in procs:
            p.kill()
        for b in brokers.values():
            b.stop()

    def med(mode, kind, pattern, key):
        got = results.get((mode, kind, pattern))
        return median([r[key] for r in got]) if got else float("nan")

    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                          stdout=subprocess.PIPE, text=True).stdout.strip()
    print(f"guard_cpu.py at {head}: {args.requests} requests per mode, kind and pattern, "
          f"{args.rounds} rounds (medians), window {args.window}")
    print(f"paced: {args.paced} requests at {args.rate:.0f}/s")
    for kind in KINDS:
        for pattern, title in [("paced", "paced"), ("one", "back to back")]:
            print(f"\n{kind}, {title}: round trip (µs), proxy CPU per request (µs)\n")
            print("| mode | p50 | p99 | added p50 / p99 | proxy CPU per request | proxy wake-ups "
                  "per request |")
            print("|---|---:|---:|---:|---:|---:|")
            for mode in [m for m in MODES if m in args.modes.split(",")]:
                base = "direct TLS" if mode.endswith("TLS") else "direct"
                p50, p99 = med(mode, kind, pattern, "p50"), med(mode, kind, pattern, "p99")
                added = ("–" if mode == base else
                         f"{p50 - med(base, kind, pattern, 'p50'):.0f} / "
                         f"{p99 - med(base, kind, pattern, 'p99'):.0f}")
                cpu = ("–" if mode.startswith("direct")
                       else f"{med(mode, kind, pattern, 'cpu'):.1f}")
                woken = ("–" if mode.startswith("direct")
                         else f"{med(mode, kind, pattern, 'wakeups'):.2f}")
                print(f"| {mode} | {p50:.0f} | {p99:.0f} | {added} | {cpu} | {woken} |")
        print(f"\n{kind}, pipelined (window {args.window})\n")
        print("| mode | requests/s | proxy CPU per request (µs) | proxy wake-ups per request |")
        print("|---|---:|---:|---:|")
        for mode in [m for m in MODES if m in args.modes.split(",")]:
            cpu = ("–" if mode.startswith("direct")
                   else f"{med(mode, kind, 'pipelined', 'cpu'):.1f}")
            woken = ("–" if mode.startswith("direct")
                     else f"{med(mode, kind, 'pipelined', 'wakeups'):.2f}")
            print(f"| {mode} | {med(mode, kind, 'pipelined', 'rate'):,.0f} | {cpu} | {woken} |")


if __name__ == "__main__":
    main()
