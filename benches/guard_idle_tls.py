#!/usr/bin/env python3
"""RSS per idle TLS connection on a fresh guard, run by hand (not in CI): the figure the
guard's manual (crates/proxy/GUARD.md, "Memory") gives beside the plaintext one of `guard_soak.py --idle-only`.

    cargo build --release -p elect-leaders
    python3 benches/guard_idle_tls.py [--bin target/release/elect-leaders] [--count 1000]

A throw-away certificate (openssl, EC P-256, in a temporary directory), a guard with
`--tls-cert/--tls-key` in front of the FAKE BROKER of guard_soak.py (it answers every
request with its correlation id alone), then, on a guard started for them, --count TLS
connections that finish their handshake and send nothing, and on another --count that each
make one ApiVersions round trip first and then idle. The guard's VmRSS before and after,
per connection. Loopback only; every process and socket it opens is closed at the end.
"""

import argparse
import asyncio
import os
import resource
import ssl
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from guard_soak import api_versions_v0, fake_broker, proc_status  # noqa: E402


def certificate(directory: str) -> tuple[str, str]:
    cert, key = os.path.join(directory, "guard.pem"), os.path.join(directory, "guard.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    return cert, key


async def idle_tls(binary: str, broker_port: int, cert: str, key: str, count: int,
                   round_trip: bool) -> float:
    guard = subprocess.Popen(
        [binary, "proxy", "--listen", "127.0.0.1:0", "--upstream", f"127.0.0.1:{broker_port}",
         "--tls-cert", cert, "--tls-key", key, "--protect-topic", "payments",
         "--audit-log", "/dev/null"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    context = ssl.create_default_context(cafile=cert)
    conns = []
    try:
        port = int(guard.stdout.readline().split()[1].rsplit(":", 1)[1])

        async def connect():
            return await asyncio.open_connection("127.0.0.1", port, ssl=context,
                                                 server_hostname="127.0.0.1")
        # One connection first, so that the runtime's and rustls' first allocations are
        # not counted.
        conns.append(await connect())
        await asyncio.sleep(1)
        before = proc_status(guard.pid, "VmRSS")
        for i in range(count):
            r, w = await connect()
            if round_trip:
                w.write(api_versions_v0(i))
                await w.drain()
                size = struct.unpack(">i", await r.readexactly(4))[0]
                await r.readexactly(size)
            conns.append((r, w))
        await asyncio.sleep(1)
        after = proc_status(guard.pid, "VmRSS")
        return (after - before) / count
    finally:
        for _, w in conns:
            w.close()
        guard.terminate()
        try:
            guard.wait(timeout=10)
        except subprocess.TimeoutExpired:
            guard.kill()


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/elect-leaders")
    ap.add_argument("--count", type=int, default=1000)
    args = ap.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    server, broker_port = await fake_broker()
    try:
        with tempfile.TemporaryDirectory() as directory:
            cert, key = certificate(directory)
            for round_trip in (False, True):
                kib = await idle_tls(args.bin, broker_port, cert, key, args.count, round_trip)
                what = "after one ApiVersions round trip each" if round_trip else "that sent nothing"
                print(f"fresh TLS guard: RSS per idle connection {kib:.1f} KiB "
                      f"({args.count:,} connections, handshake done, {what})")
    finally:
        server.close()


if __name__ == "__main__":
    asyncio.run(main())
