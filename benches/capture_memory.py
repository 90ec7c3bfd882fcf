#!/usr/bin/env python3
"""Peak memory of reading captures whose frames are large, of APIs the tool does not
decode (issue 44, item 1): what `elect-leaders decode -` holds while such frames stream
by, against the same volume of ElectLeaders traffic.

Three synthetic pcap files (Ethernet, IPv4, broker on 10.0.0.1:9092, every connection
with its handshake and FIN, segments of 65,000 bytes, the connections' packets
interleaved round robin, as a busy broker's capture has them):

- `produce`: 12 connections, each sending one 90 MB Produce request (v3, acks=1),
  answered: 1.08 GB;
- `mixed`: 2 GB over 40 connections, each in turn a Produce request of 1 to 30 MB, a
  Fetch (v4) whose answer is 1 to 30 MB (the last of each connection cut to its
  share), and 8 ElectLeaders v2 exchanges (1,000
  partitions each, about 8 KB a request);
- `elect`: 2 GB of ElectLeaders v2 exchanges alone (1,000 partitions each, 8 pipelined
  to a write) over 40 connections.

Each is piped to the tool (`cat FILE | elect-leaders decode -`, what `tcpdump -w - |
elect-leaders decode -` reads) under `/usr/bin/time -v`; the script prints the peak
memory (max RSS), the wall time, the exit status and the lines written.

    cargo build --release -p elect-leaders
    python3 benches/capture_memory.py [--bin PATH] [--dir DIR] [--only produce,mixed,elect]

The captures are made once and kept in DIR (default $CARGO_TARGET_DIR/bench or
target/bench). Needs /usr/bin/time (Debian package `time`). Python 3 standard library.
"""

import argparse
import os
import random
import re
import struct
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MSS = 65_000
BROKER = bytes([10, 0, 0, 1])
PORT = 9092
SYN, FIN, ACK, PSH = 0x02, 0x01, 0x10, 0x08


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


class Body:
    """A frame's bytes: `head`, then `zeros` zero bytes (records, never held whole)."""

    def __init__(self, head: bytes, zeros: int = 0):
        self.head, self.zeros = head, zeros

    def __len__(self):
        return len(self.head) + self.zeros

    def segments(self):
        for i in range(0, len(self), MSS):
            end = min(i + MSS, len(self))
            part = self.head[i:end]
            yield part + bytes(end - i - len(part))


def framed(body: bytes, zeros: int = 0) -> Body:
    return Body(struct.pack(">i", len(body) + zeros) + body, zeros)


def produce_request(cid: int, size: int) -> bytes:
    """Produce v3, acks=1, one topic, one partition whose records are `size` bytes."""
    topic = b"bulk"
    head = (struct.pack(">hhi", 0, 3, cid) + struct.pack(">h", 5) + b"bench"
            + struct.pack(">h", -1) + struct.pack(">hi", 1, 30_000)
            + struct.pack(">ih", 1, len(topic)) + topic
            + struct.pack(">iii", 1, 0, size))
    return Body(struct.pack(">i", len(head) + size) + head, size)


def produce_response(cid: int) -> bytes:
    topic = b"bulk"
    return framed(struct.pack(">i", cid) + struct.pack(">ih", 1, len(topic)) + topic
                  + struct.pack(">iihqq", 1, 0, 0, 0, -1) + struct.pack(">i", 0))


def fetch_request(cid: int) -> bytes:
    topic = b"bulk"
    return framed(struct.pack(">hhi", 1, 4, cid) + struct.pack(">h", 5) + b"bench"
                  + struct.pack(">iiiib", -1, 500, 1, 64 << 20, 0)
                  + struct.pack(">ih", 1, len(topic)) + topic
                  + struct.pack(">iiqi", 1, 0, 0, 1 << 20))


def fetch_response(cid: int, size: int) -> bytes:
    topic = b"bulk"
    return framed(struct.pack(">i", cid) + struct.pack(">i", 0)
                  + struct.pack(">ih", 1, len(topic)) + topic
                  + struct.pack(">iihqqi", 1, 0, 0, 0, 0, -1) + struct.pack(">i", size),
                  size)


PARTITIONS = 1000


def elect_request(cid: int) -> bytes:
    topic = b"orders"
    body = (struct.pack(">hhi", 43, 2, cid) + struct.pack(">h", 5) + b"bench" + b"\0"
            + struct.pack(">b", 0) + uvarint(2) + uvarint(len(topic) + 1) + topic
            + uvarint(PARTITIONS + 1) + b"".join(struct.pack(">i", p) for p in range(PARTITIONS))
            + b"\0" + struct.pack(">i", 30_000) + b"\0")
    return framed(body)


def elect_response(cid: int) -> bytes:
    topic = b"orders"
    results = b"".join(struct.pack(">ih", p, 84) + b"\0\0" for p in range(PARTITIONS))
    body = (struct.pack(">i", cid) + b"\0" + struct.pack(">ih", 0, 0) + uvarint(2)
            + uvarint(len(topic) + 1) + topic + uvarint(PARTITIONS + 1) + results + b"\0" + b"\0")
    return framed(body)


class Conn:
    """One client connection: its exchanges as (request bytes, response bytes), sent as
    segments, the answer after the whole request."""

    def __init__(self, n: int, exchanges):
        self.client = bytes([10, 1, n >> 8, n & 0xFF])
        self.port = 30_000 + n
        self.exchanges = exchanges
        self.cseq, self.sseq = 1_000, 500_000
        self.state = "syn"
        self.pending = []

    def packets(self):
        """Yields (to_server, seq, ack, flags, payload), one segment at a time."""
        yield True, self.cseq - 1, 0, SYN, b""
        yield False, self.sseq - 1, self.cseq, SYN | ACK, b""
        yield True, self.cseq, self.sseq, ACK, b""
        for request, response in self.exchanges():
            for part in request.segments():
                yield True, self.cseq, self.sseq, ACK | PSH, part
                self.cseq += len(part)
            for part in response.segments():
                yield False, self.sseq, self.cseq, ACK | PSH, part
                self.sseq += len(part)
        yield True, self.cseq, self.sseq, FIN | ACK, b""
        yield False, self.sseq, self.cseq + 1, FIN | ACK, b""
        yield True, self.cseq + 1, self.sseq + 1, ACK, b""


def ethernet(conn: Conn, to_server: bool, seq: int, ack: int, flags: int, payload: bytes) -> bytes:
    if to_server:
        src, dst, sport, dport = conn.client, BROKER, conn.port, PORT
    else:
        src, dst, sport, dport = BROKER, conn.client, PORT, conn.port
    tcp = struct.pack(">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4,
                      flags, 65535, 0, 0)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload), 0, 0x4000, 64,
                     6, 0, src, dst)
    return b"\x02\0\0\0\0\x02\x02\0\0\0\0\x01\x08\x00" + ip + tcp + payload


def write_capture(path: str, conns) -> int:
    """The connections' packets interleaved round robin; returns the file's size."""
    with open(path + ".partial", "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262_144, 1))
        streams = [(c, c.packets()) for c in conns]
        t = 0
        while streams:
            alive = []
            for conn, packets in streams:
                p = next(packets, None)
                if p is None:
                    continue
                alive.append((conn, packets))
                frame = ethernet(conn, *p)
                t += 20  # µs
                f.write(struct.pack("<IIII", 1_700_000_000 + t // 1_000_000, t % 1_000_000,
                                    len(frame), len(frame)))
                f.write(frame)
            streams = alive
    os.replace(path + ".partial", path)
    return os.path.getsize(path)


def produce_case():
    def exchanges(n):
        return lambda: iter([(produce_request(1, 90_000_000), produce_response(1))])
    return [Conn(n, exchanges(n)) for n in range(12)]


ELECT_REQUEST = bytearray(elect_request(0).head)
ELECT_RESPONSE = bytearray(elect_response(0).head)


def elect_batch(cid: int):
    """8 ElectLeaders requests, pipelined, and their answers: the frames made once, their
    correlation ids set (request: after size, key and version; response: after size)."""
    requests, responses = bytearray(), bytearray()
    for k in range(8):
        struct.pack_into(">i", ELECT_REQUEST, 8, cid + k)
        struct.pack_into(">i", ELECT_RESPONSE, 4, cid + k)
        requests += ELECT_REQUEST
        responses += ELECT_RESPONSE
    return Body(bytes(requests)), Body(bytes(responses))


def mixed_case(total: int):
    conns, share = 40, total // 40

    def exchanges(n):
        def gen():
            rng = random.Random(n)
            sent, cid = 0, 1
            while sent < share:
                size = min(rng.randint(1, 30) * 1_000_000, max(share - sent, 1))
                yield produce_request(cid, size), produce_response(cid)
                size2 = min(rng.randint(1, 30) * 1_000_000, max(share - sent - size, 1))
                yield fetch_request(cid + 1), fetch_response(cid + 1, size2)
                batch = elect_batch(cid + 2)
                yield batch
                sent += size + size2 + len(batch[0]) + len(batch[1])
                cid += 10
        return gen
    return [Conn(n, exchanges(n)) for n in range(conns)]


def elect_case(total: int):
    conns, share = 40, total // 40

    def exchanges(n):
        def gen():
            sent, cid = 0, 1
            while sent < share:
                batch = elect_batch(cid)
                yield batch
                sent += len(batch[0]) + len(batch[1])
                cid += 8
        return gen
    return [Conn(n, exchanges(n)) for n in range(conns)]


def run(tool: str, path: str) -> dict:
    start = time.monotonic()
    cat = subprocess.Popen(["cat", path], stdout=subprocess.PIPE)
    with open(path + ".stderr", "w+b") as stderr:
        # The output is counted as it comes, never held (it is larger than the capture).
        tool_run = subprocess.Popen(["/usr/bin/time", "-v", tool, "decode", "-"],
                                    stdin=cat.stdout, stdout=subprocess.PIPE, stderr=stderr)
        cat.stdout.close()
        lines = 0
        while chunk := tool_run.stdout.read(1 << 20):
            lines += chunk.count(b"\n")
        tool_run.wait()
        cat.wait()
        stderr.seek(0)
        err = stderr.read().decode("utf-8", "replace")
    os.remove(path + ".stderr")
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", err)
    if rss is None:
        sys.exit(f"no peak memory from /usr/bin/time:\n{err[-2000:]}")
    notes = [l for l in err.splitlines() if l.startswith("elect-leaders:")]
    return {
        "rss_mb": int(rss.group(1)) / 1024,
        "seconds": time.monotonic() - start,
        "status": tool_run.returncode,
        "lines": lines,
        "notes": notes,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    p.add_argument("--bin", default=os.path.join(target, "release", "elect-leaders"))
    p.add_argument("--dir", default=os.path.join(target, "bench"))
    p.add_argument("--only", default="produce,mixed,elect")
    args = p.parse_args()
    if not os.access("/usr/bin/time", os.X_OK):
        sys.exit("/usr/bin/time not found (Debian package `time`)")
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"{args.bin}: not found (cargo build --release -p elect-leaders)")
    os.makedirs(args.dir, exist_ok=True)
    cases = {
        "produce": ("memory-produce-12x90mb.pcap", produce_case),
        "mixed": ("memory-mixed-2gb.pcap", lambda: mixed_case(2_000_000_000)),
        "elect": ("memory-elect-2gb.pcap", lambda: elect_case(2_000_000_000)),
    }
    for name in args.only.split(","):
        if name not in cases:
            sys.exit(f"--only: unknown case {name!r} (produce, mixed, elect)")
        file, make = cases[name]
        path = os.path.join(args.dir, file)
        if not os.path.exists(path):
            print(f"{name}: writing {path} ...", file=sys.stderr, flush=True)
            write_capture(path, make())
        size = os.path.getsize(path)
        r = run(args.bin, path)
        print(f"{name}: {size / 1e6:,.0f} MB piped to decode -: peak RSS {r['rss_mb']:.0f} MB, "
              f"{r['seconds']:.1f} s, exit {r['status']}, {r['lines']:,} lines, "
              f"{len(r['notes'])} note lines", flush=True)
        for line in r["notes"][:5]:
            print(f"    {line[:200]}")


if __name__ == "__main__":
    main()
