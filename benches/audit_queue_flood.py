#!/usr/bin/env python3
"""The guard's audit queue under a flood of large ElectLeaders requests, run by hand (not in
CI): CLIENTS clients each write ElectLeaders requests naming 20,000 partitions (80 KB, an
audit line of about 110 KB) as fast as the guard takes them, for SECONDS, while the audit
log, a named pipe, is read slowly (MODE `slow`: 16 KiB every 20 ms) or never (`stopped`).
Prints the peak of `audit_queue_bytes` (bounded by --audit-queue-bytes, 64 MiB by default;
one connection holds at most its share, 8 MiB, plus the line that crosses it), the guard's
peak RSS, and the elections refused as unaudited.

    cargo build --release -p elect-leaders
    python3 benches/audit_queue_flood.py target/release/elect-leaders slow 1 15
    python3 benches/audit_queue_flood.py target/release/elect-leaders stopped 8 15

The upstream is a FAKE BROKER written here: it answers each request with its correlation id
alone. Bounded in time; the guard is killed at the end.
"""

import os
import re
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

BIN, MODE, CLIENTS, SECONDS = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
fifo = os.path.join(tempfile.mkdtemp(prefix="audit-queue-flood-"), "audit.fifo")
os.mkfifo(fifo)
reader_fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)

broker = socket.socket()
broker.bind(("127.0.0.1", 0))
broker.listen(64)


def serve(conn):
    f = conn.makefile("rb")
    try:
        while True:
            head = f.read(4)
            if len(head) < 4:
                return
            body = f.read(struct.unpack(">i", head)[0])
            conn.sendall(struct.pack(">i", 4) + body[4:8])
    except OSError:
        pass


def accept():
    while True:
        conn, _ = broker.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


threading.Thread(target=accept, daemon=True).start()

guard = subprocess.Popen(
    [BIN, "proxy", "--listen", "127.0.0.1:0",
     "--upstream", f"127.0.0.1:{broker.getsockname()[1]}",
     "--audit-log", fifo, "--metrics-listen", "127.0.0.1:0"],
    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
listen = metrics = None
while listen is None or metrics is None:
    line = guard.stdout.readline()
    port = re.search(r"127\.0\.0\.1:(\d+)", line)
    if line.startswith("listening"):
        listen = int(port.group(1))
    elif line.startswith("metrics"):
        metrics = int(port.group(1))
threading.Thread(target=lambda: [None for _ in guard.stdout], daemon=True).start()


def elect(correlation_id, partitions):
    """ElectLeaders v2 (flexible), PREFERRED, for `partitions` of topic `orders`."""
    body = struct.pack(">hhi", 43, 2, correlation_id) + struct.pack(">h", 4) + b"load" + b"\x00"
    body += b"\x00" + bytes([2]) + bytes([len(b"orders") + 1]) + b"orders"
    n, varint = partitions + 1, b""
    while True:
        low, n = n & 0x7F, n >> 7
        varint += bytes([low | 0x80]) if n else bytes([low])
        if not n:
            break
    body += varint + b"".join(struct.pack(">i", p) for p in range(partitions)) + b"\x00"
    body += struct.pack(">i", 60000) + b"\x00"
    return struct.pack(">i", len(body)) + body


frame = elect(1, 20000)
stop = False
sent = [0] * CLIENTS


def flood(i):
    s = socket.create_connection(("127.0.0.1", listen))
    threading.Thread(target=lambda: [s.recv(1 << 16) for _ in iter(int, 1)], daemon=True).start()
    while not stop:
        try:
            s.sendall(frame)
            sent[i] += 1
        except OSError:
            return


def read_slowly():
    while not stop:
        try:
            os.read(reader_fd, 16 << 10)
        except BlockingIOError:
            pass
        time.sleep(0.02)


for i in range(CLIENTS):
    threading.Thread(target=flood, args=(i,), daemon=True).start()
if MODE == "slow":
    threading.Thread(target=read_slowly, daemon=True).start()


def scrape(name):
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics}/metrics", timeout=30).read().decode()
    return next(int(float(l.split()[1])) for l in text.splitlines() if l.startswith(name + " "))


peak_queue = peak_rss = 0
end = time.time() + SECONDS
while time.time() < end:
    peak_queue = max(peak_queue, scrape("elect_leaders_guard_audit_queue_bytes"))
    status = open(f"/proc/{guard.pid}/status").read()
    peak_rss = max(peak_rss, int(status.split("VmRSS:")[1].split()[0]) * 1024)
    time.sleep(0.05)
refused = scrape("elect_leaders_guard_audit_failures_total")
print(f"mode={MODE} clients={CLIENTS} request={len(frame)}B sent={sum(sent)} "
      f"peak_audit_queue_bytes={peak_queue} peak_rss={peak_rss} refused_unaudited={refused}")
stop = True
guard.kill()
os.remove(fifo)
os.rmdir(os.path.dirname(fifo))
