#!/usr/bin/env python3
"""Packets dropped by a live capture on a loopback flood, run by hand (not in CI): a client
sends PACKETS ElectLeaders requests to a sink on 127.0.0.1, each in a write of its own
(TCP_NODELAY: about one segment each, plus the sink's ACKs), as fast as loopback takes
them, while one capture of that port runs; the capture is then stopped with SIGINT and
the packets it says were dropped are read off its standard error. Each capture in turn,
RUNS times:

  tcpdump            tcpdump -i lo -w /dev/null (its default mode: libpcap's buffer,
                     2 MiB on Linux, not immediate)
  elect-leaders      summary --interface lo (standard output to a file, so not immediate),
                     with each --args given (e.g. --args="--immediate-mode"
                     --args="--buffer-size 64MiB --immediate-mode")

    cargo build --release -p elect-leaders --features live
    sudo python3 benches/live_capture_flood.py [--packets 40000] [--runs 3] \\
        [--bin target/release/elect-leaders] [--args="--immediate-mode"]

Needs root (or CAP_NET_RAW) and tcpdump. The sink and the client are written here; the
port is a free one. Every process started is stopped (SIGINT, then killed) before the
next run. Prints one line per run and the figures of each capture: drops per run, and
the packets tcpdump's filter received (the flood's size in packets).
"""

import argparse
import os
import re
import shlex
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

PATIENCE = 30  # seconds, at most, for a capture to start or to end


def request_v1(correlation_id):
    """ElectLeaders v1 (PREFERRED), partition 0 of topic `flood`."""
    def string(s):
        return struct.pack(">h", len(s)) + s
    body = struct.pack(">hhi", 43, 1, correlation_id) + string(b"flood-client")
    body += struct.pack(">b", 0)
    body += struct.pack(">i", 1) + string(b"flood") + struct.pack(">ii", 1, 0)
    body += struct.pack(">i", 30000)
    return struct.pack(">i", len(body)) + body


def sink():
    """A listener on a free loopback port that reads and discards; returns (port, stop)."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    done = threading.Event()

    def drain(conn):
        with conn:
            while conn.recv(65536):
                pass

    def serve():
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                continue
            threading.Thread(target=drain, args=(conn,), daemon=True).start()
        listener.close()

    threading.Thread(target=serve, daemon=True).start()
    return listener.getsockname()[1], done.set


def flood(port, packets):
    frames = [request_v1(i + 1) for i in range(256)]
    with socket.create_connection(("127.0.0.1", port)) as c:
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(packets):
            c.sendall(frames[i % 256])


def start(cmd, ready, stdout):
    """Starts a capture; returns it once a line of its stderr contains `ready`."""
    err = tempfile.TemporaryFile()
    proc = subprocess.Popen(cmd, stdout=stdout, stderr=err)
    deadline = time.time() + PATIENCE
    while time.time() < deadline:
        err.seek(0)
        text = err.read().decode(errors="replace")
        if ready in text:
            return proc, err
        if proc.poll() is not None:
            sys.exit("%s ended: %s" % (cmd[0], text.strip()))
        time.sleep(0.05)
    proc.kill()
    sys.exit("%s did not start capturing within %d s" % (cmd[0], PATIENCE))


def stop(proc, err):
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(PATIENCE)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        sys.exit("a capture did not end on SIGINT within %d s" % PATIENCE)
    err.seek(0)
    return err.read().decode(errors="replace")


def run_tcpdump(port, packets):
    proc, err = start(["tcpdump", "-i", "lo", "-n", "-w", "/dev/null", "tcp port %d" % port],
                      "listening on lo", subprocess.DEVNULL)
    flood(port, packets)
    time.sleep(1)  # what the capture still holds is read before it stops
    text = stop(proc, err)
    dropped = re.search(r"(\d+) packets? dropped by kernel", text)
    received = re.search(r"(\d+) packets? received by filter", text)
    if not dropped or not received:
        sys.exit("tcpdump said: %s" % text)
    return int(dropped.group(1)), int(received.group(1))


def run_tool(binary, extra, port, packets):
    with tempfile.TemporaryFile() as out:
        cmd = [binary, "summary", "--interface", "lo", "--filter", "tcp port %d" % port,
               "--port", str(port)] + extra
        proc, err = start(cmd, "capturing", out)
        flood(port, packets)
        time.sleep(1)
        text = stop(proc, err)
    if proc.returncode not in (0, 1):
        sys.exit("elect-leaders exited %s: %s" % (proc.returncode, text))
    dropped = re.search(r"(\d+) packet\(s\) dropped by the kernel or libpcap", text)
    setup = re.search(r"capturing \(([^)]*)\)", text)
    return (int(dropped.group(1)) if dropped else 0), (setup.group(1) if setup else "")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--packets", type=int, default=40000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--bin", default="target/release/elect-leaders")
    p.add_argument("--args", action="append", default=None,
                   help="elect-leaders options for one more capture (repeatable)")
    a = p.parse_args()
    if os.geteuid() != 0:
        print("note: not root; the captures need CAP_NET_RAW", file=sys.stderr)
    variants = [[]] + [shlex.split(x) for x in (a.args or [])]
    port, done = sink()
    results = {}
    try:
        for run in range(a.runs):
            dropped, received = run_tcpdump(port, a.packets)
            results.setdefault("tcpdump (default mode)", []).append(dropped)
            print("run %d: tcpdump: %d dropped of %d received by its filter"
                  % (run + 1, dropped, received), flush=True)
            for extra in variants:
                dropped, setup = run_tool(a.bin, extra, port, a.packets)
                name = "elect-leaders %s" % (" ".join(extra) or "(defaults)")
                results.setdefault(name, []).append(dropped)
                print("run %d: %s [%s]: %d dropped" % (run + 1, name, setup, dropped),
                      flush=True)
    finally:
        done()
    print()
    print("| capture | packets dropped, each run |")
    print("|---|---|")
    for name, drops in results.items():
        print("| %s | %s |" % (name, ", ".join(str(d) for d in drops)))


if __name__ == "__main__":
    main()
