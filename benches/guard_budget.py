#!/usr/bin/env python3
"""The guard's buffer budget under bulk traffic, run by hand (not in CI): N clients each
send whole Produce requests of M MiB through the guard, one after the other, reading each
answer, for S seconds; the guard's peak RSS (VmHWM) and the throughput are printed for each
--max-buffered-bytes given.

    cargo build --release -p elect-leaders
    python3 benches/guard_budget.py [--clients 20] [--mib 8] [--seconds 15] \
        [--budget 1GiB --budget 64MiB --budget 32MiB] [--bin target/release/elect-leaders]

The upstream is a FAKE BROKER written here (asyncio): it reads each request whole and
answers with its correlation id alone. Set MALLOC_MMAP_THRESHOLD_=131072 in the
environment to see the budget without glibc keeping freed blocks in its per-thread arenas
(BENCHMARKS.md has both). Bounded in time; the guard and the sockets are closed at the end.
"""

import argparse
import asyncio
import struct
import subprocess
import time


async def measure(binary: str, budget: str, clients: int, mib: int, seconds: float):
    async def serve(reader, writer):
        try:
            while True:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                body = await reader.readexactly(size)
                writer.write(struct.pack(">i", 4) + body[4:8])
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0, limit=1 << 20)
    broker_port = server.sockets[0].getsockname()[1]
    guard = subprocess.Popen(
        [binary, "proxy", "--listen", "127.0.0.1:0", "--upstream", f"127.0.0.1:{broker_port}",
         "--max-buffered-bytes", budget],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = int(guard.stdout.readline().split()[1].rsplit(":", 1)[1])
        # Produce v3, acks=1 (answered), client id "bulk", padded to `mib` MiB of records.
        header = struct.pack(">hhi", 0, 3, 1) + struct.pack(">h", 4) + b"bulk"
        body = struct.pack(">hhii", -1, 1, 30000, 0) + bytes(mib << 20)
        request = struct.pack(">i", len(header) + len(body)) + header + body
        sent = [0]
        end = time.monotonic() + seconds

        async def client():
            r, w = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
            while time.monotonic() < end:
                w.write(request)
                await w.drain()
                size = struct.unpack(">i", await r.readexactly(4))[0]
                await r.readexactly(size)
                sent[0] += 1
            w.close()

        started = time.monotonic()
        await asyncio.gather(*(client() for _ in range(clients)))
        elapsed = time.monotonic() - started
        with open(f"/proc/{guard.pid}/status") as status:
            hwm = next(int(line.split()[1]) for line in status if line.startswith("VmHWM"))
        print(f"--max-buffered-bytes {budget}: {clients} clients, {sent[0]} requests of {mib} MiB "
              f"in {elapsed:.1f} s ({sent[0] * mib / elapsed:.0f} MiB/s); guard peak RSS "
              f"{hwm / 1024:.0f} MiB")
    finally:
        guard.terminate()
        try:
            guard.wait(timeout=10)
        except subprocess.TimeoutExpired:
            guard.kill()
        server.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--mib", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--budget", action="append")
    ap.add_argument("--bin", default="target/release/elect-leaders")
    args = ap.parse_args()
    for budget in args.budget or ["1GiB", "64MiB", "32MiB"]:
        asyncio.run(measure(args.bin, budget, args.clients, args.mib, args.seconds))


if __name__ == "__main__":
    main()
