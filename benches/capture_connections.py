#!/usr/bin/env python3
"""Peak memory of reading a capture of many connections that never close: N TCP
connections to a broker on port 9092, each one packet with one ElectLeaders request and
no answer, no FIN (what a capture cut in the middle of a busy day holds). The figures of
crates/cli/README.md ("Connections followed, at most") and crates/capture/README.md
("Limits and memory") come from here.

    cargo build --release -p elect-leaders
    python3 benches/capture_connections.py [--connections 60000] [--bin PATH]

Writes the capture to a temporary directory (removed after), runs
`/usr/bin/time -v elect-leaders decode FILE` with the default --max-connections (10,000)
and with --max-connections above N (every connection followed), and prints each run's
peak memory (max RSS) and the notes it wrote about connections let go. Needs /usr/bin/time
(Debian package `time`).
"""

import argparse
import os
import re
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def elect_v1(cid: int) -> bytes:
    topic = b"orders"
    body = (struct.pack(">hhi", 43, 1, cid) + struct.pack(">h", 5) + b"bench"
            + struct.pack(">b", 0) + struct.pack(">i", 1) + struct.pack(">h", len(topic))
            + topic + struct.pack(">ii", 1, 0) + struct.pack(">i", 30000))
    return struct.pack(">i", len(body)) + body


def checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(">%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def packet(n: int, payload: bytes) -> bytes:
    """Ethernet, IPv4 and TCP (PSH ACK) from 10.x.y.z:port to 10.0.0.1:9092: connection n."""
    src = bytes([10, 1 + (n >> 16) % 200, (n >> 8) & 0xFF, n & 0xFF])
    dst = bytes([10, 0, 0, 1])
    sport = 20000 + n % 40000
    tcp = struct.pack(">HHIIBBHHH", sport, 9092, 1000, 1, 5 << 4, 0x18, 65535, 0, 0)
    pseudo = src + dst + struct.pack(">BBH", 0, 6, len(tcp) + len(payload))
    tcp = tcp[:16] + struct.pack(">H", checksum(pseudo + tcp + payload)) + tcp[18:]
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload), n & 0xFFFF, 0,
                     64, 6, 0, src, dst)
    ip = ip[:10] + struct.pack(">H", checksum(ip)) + ip[12:]
    eth = b"\x02\0\0\0\0\x02" + b"\x02\0\0\0\0\x01" + b"\x08\x00"
    return eth + ip + tcp + payload


def write_capture(path: str, connections: int) -> None:
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for n in range(connections):
            frame = packet(n, elect_v1(n))
            # One packet a millisecond: the capture lasts a minute, under the idle timeout.
            f.write(struct.pack("<IIII", 1_700_000_000 + n // 1000, (n % 1000) * 1000,
                                len(frame), len(frame)))
            f.write(frame)


def run(tool: str, path: str, extra) -> tuple:
    r = subprocess.run(["/usr/bin/time", "-v", tool, "decode", path] + extra,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr)
    if rss is None:
        sys.exit(f"no peak memory from /usr/bin/time:\n{r.stderr[-2000:]}")
    let_go = sum(1 for line in r.stderr.splitlines() if "let go" in line)
    return int(rss.group(1)) / 1024, r.returncode, let_go


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--connections", type=int, default=60000)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "elect-leaders"))
    args = ap.parse_args()
    if not os.path.exists("/usr/bin/time"):
        sys.exit("/usr/bin/time not found (Debian package `time`)")
    with tempfile.TemporaryDirectory(prefix="capture-connections-") as work:
        path = os.path.join(work, "connections.pcap")
        write_capture(path, args.connections)
        size = os.path.getsize(path) / 1e6
        print(f"{args.connections} connections, one ElectLeaders request each, never closed "
              f"({size:.1f} MB capture)")
        for label, extra in [("default --max-connections (10,000)", []),
                             (f"--max-connections {args.connections + 1}",
                              ["--max-connections", str(args.connections + 1)])]:
            rss, code, let_go = run(args.bin, path, extra)
            print(f"  {label}: peak {rss:.0f} MB, exit {code}, {let_go} line(s) on connections "
                  f"let go")


if __name__ == "__main__":
    main()
