#!/usr/bin/env python3
"""A soak test of the guard, run by hand (not in CI): every attack of issue 23 at once, on
loopback, while one well-behaved client keeps sending ElectLeaders and ApiVersions requests
and times each answer.

    cargo build --release -p elect-leaders
    python3 benches/guard_soak.py [--seconds 60] [--bin target/release/elect-leaders]

At the same time, for --seconds:
  - churn: 10,000 connections opened and closed, 200 at a time;
  - slow: 500 clients trickling a frame one byte a second (the guard closes each at its
    frame timeout; they reconnect and start again);
  - large: 100 clients announcing a 100 MB frame and sending 8 bytes of it, reconnecting
    when closed;
  - normal: one client, one request at a time, alternating ElectLeaders v2 and ApiVersions
    v0, timing each answer.
Then 1,000 idle connections are opened and the guard's RSS measured before and after.

`--attacks issue42` runs instead the attacks of issue 42, item 5 (with `--deny-unclean` and
`--max-buffered-bytes --budget`): --refused clients each sending, one after the other, an
UNCLEAN ElectLeaders request of --refused-mib MiB that the guard refuses whole (reading each
answer), and --stalled clients each announcing a 64 MiB frame, sending --stalled-mib MiB of
it and stalling until the guard's frame timeout closes it (then again), in a process of
their own (`--same-process`: in this one, where reading a 33 MB answer holds up the event
loop that times the normal client and runs the fake broker); `--attacks none`
runs the normal client alone, the baseline. `--no-idle` skips the RSS per idle connection.
And, on a fresh guard each (no soak before: nothing the allocator kept to reuse), 1,000
connections that send nothing, and 1,000 that each make one ApiVersions round trip and
then idle (their buffers touched, as a real client's are): the RSS per connection of each.
`--idle-only` measures just these.

The upstream is a FAKE BROKER written here (asyncio): it answers every request with its
correlation id alone, at once. A real broker would add its own latency and memory; this
measures the guard. The guard's peak RSS (VmHWM) and its open descriptors are sampled every
200 ms. Bounded in time; every process and socket it opens is closed at the end.
"""

import argparse
import asyncio
import multiprocessing
import os
import resource
import statistics
import struct
import subprocess
import sys
import time


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def elect_leaders_v2(correlation_id: int) -> bytes:
    # Header v2: api key 43, version 2, correlation id, client id (i16 length), no tags.
    header = struct.pack(">hhi", 43, 2, correlation_id) + struct.pack(">h", 4) + b"soak" + b"\x00"
    # Body v2: election type 0, one topic "orders" with partitions [0, 1, 2], timeout, no tags.
    topic = bytes([7]) + b"orders" + bytes([4]) + struct.pack(">iii", 0, 1, 2) + b"\x00"
    body = b"\x00" + bytes([2]) + topic + struct.pack(">i", 60000) + b"\x00"
    return frame(header + body)


def unclean_election_v2(correlation_id: int, mib: int) -> bytes:
    """An UNCLEAN ElectLeaders v2 request of about `mib` MiB: one topic, its partitions."""
    n = (mib << 20) // 4
    header = struct.pack(">hhi", 43, 2, correlation_id) + struct.pack(">h", 4) + b"soak" + b"\x00"
    topic = bytes([7]) + b"orders" + varint(n + 1) + struct.pack(f">{n}i", *range(n)) + b"\x00"
    body = b"\x01" + bytes([2]) + topic + struct.pack(">i", 60000) + b"\x00"
    return frame(header + body)


def varint(v: int) -> bytes:
    out = b""
    while v >= 0x80:
        out += bytes([(v & 0x7F) | 0x80])
        v >>= 7
    return out + bytes([v])


def api_versions_v0(correlation_id: int) -> bytes:
    return frame(struct.pack(">hhi", 18, 0, correlation_id) + struct.pack(">h", 4) + b"soak")


async def fake_broker():
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

    server = await asyncio.start_server(serve, "127.0.0.1", 0, limit=1 << 20, backlog=4096)
    return server, server.sockets[0].getsockname()[1]


def proc_status(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def fd_count(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


async def idle_on_a_fresh_guard(binary: str, broker_port: int, round_trip: bool) -> float:
    """KiB of RSS per connection of 1,000 held open on a guard started for them."""
    guard = subprocess.Popen(
        [binary, "proxy", "--listen", "127.0.0.1:0", "--upstream", f"127.0.0.1:{broker_port}",
         "--protect-topic", "payments", "--audit-log", "/dev/null"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    conns = []
    try:
        port = int(guard.stdout.readline().split()[1].rsplit(":", 1)[1])
        # One connection first, so that the runtime's own first allocations are not counted.
        conns.append(await asyncio.open_connection("127.0.0.1", port))
        await asyncio.sleep(1)
        before = proc_status(guard.pid, "VmRSS")
        for i in range(1000):
            r, w = await asyncio.open_connection("127.0.0.1", port)
            if round_trip:
                w.write(api_versions_v0(i))
                await w.drain()
                size = struct.unpack(">i", await r.readexactly(4))[0]
                await r.readexactly(size)
            conns.append((r, w))
        await asyncio.sleep(1)
        after = proc_status(guard.pid, "VmRSS")
        return (after - before) / 1000
    finally:
        for c in conns:
            c[1].close()
        guard.terminate()
        try:
            guard.wait(timeout=10)
        except subprocess.TimeoutExpired:
            guard.kill()


async def issue42_attacks(port: int, end: float, stats: dict, refused_n: int, refused_mib: int,
                          stalled_n: int, stalled_mib: int):
    """The attackers of issue 42, item 5, until `end` (time.monotonic()), counting in `stats`."""

    async def refused(request: bytes):
        # One large refused request after the other, each answer read whole.
        while time.monotonic() < end:
            try:
                r, w = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
                while time.monotonic() < end:
                    w.write(request)
                    await w.drain()
                    size = struct.unpack(">i", await r.readexactly(4))[0]
                    await r.readexactly(size)
                    stats["refusals"] += 1
                    stats["refusal_bytes"] += size + 4
                w.close()
            except (OSError, asyncio.IncompleteReadError, ConnectionError):
                await asyncio.sleep(0.05)

    async def stalled(part: bytes):
        # A 64 MiB frame announced, part of it sent, then nothing until the guard closes.
        while time.monotonic() < end:
            try:
                r, w = await asyncio.open_connection("127.0.0.1", port, limit=1 << 16)
                w.write(part)
                await w.drain()
                got = await asyncio.wait_for(r.read(1), timeout=max(0.1, end - time.monotonic()))
                if got == b"":
                    stats["stalled_closed"] += 1
                w.close()
            except (OSError, asyncio.TimeoutError, ConnectionError):
                await asyncio.sleep(0.05)

    refusal = unclean_election_v2(1, refused_mib)
    head = struct.pack(">i", 64 << 20) + struct.pack(">hhi", 0, 3, 1)
    part = head + bytes((stalled_mib << 20) - len(head))
    await asyncio.gather(*([refused(refusal) for _ in range(refused_n)]
                           + [stalled(part) for _ in range(stalled_n)]))


def issue42_attack_process(port, seconds, refused_n, refused_mib, stalled_n, stalled_mib, nice,
                           out):
    """`issue42_attacks` in a process of its own (see --same-process), its counts sent back."""
    os.nice(nice)
    stats = {"refusals": 0, "refusal_bytes": 0, "stalled_closed": 0}
    end = time.monotonic() + seconds
    asyncio.run(issue42_attacks(port, end, stats, refused_n, refused_mib, stalled_n, stalled_mib))
    out.put(stats)


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--bin", default="target/release/elect-leaders")
    ap.add_argument("--idle-only", action="store_true",
                    help="only the RSS per idle connection on fresh guards")
    ap.add_argument("--no-idle", action="store_true", help="skip the RSS per idle connection")
    ap.add_argument("--attacks", choices=["issue23", "issue42", "none"], default="issue23")
    ap.add_argument("--budget", default="256MiB", help="--max-buffered-bytes (issue42, none)")
    ap.add_argument("--refused", type=int, default=2, help="clients sending refused requests")
    ap.add_argument("--refused-mib", type=int, default=16)
    ap.add_argument("--stalled", type=int, default=4, help="clients stalling large frames")
    ap.add_argument("--stalled-mib", type=int, default=8)
    ap.add_argument("--attackers-nice", type=int, default=0,
                    help="issue42: the nice value of the attackers' process (on a network they "
                         "run on machines of their own; here their CPU is the normal client's)")
    ap.add_argument("--guard-args", default="", help="more arguments for the guard, e.g. "
                    "'--threads 4'")
    ap.add_argument("--same-process", action="store_true",
                    help="issue42: run the attackers in this process's event loop, beside the "
                         "normal client and the fake broker (as before), not in a process of "
                         "their own")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    server, broker_port = await fake_broker()
    for round_trip in (() if args.no_idle else (False, True)):
        kib = await idle_on_a_fresh_guard(args.bin, broker_port, round_trip)
        what = "after one ApiVersions round trip each" if round_trip else "that sent nothing"
        print(f"fresh guard: RSS per idle connection {kib:.1f} KiB (1,000 connections {what})")
    if args.idle_only:
        server.close()
        return

    audit = f"/tmp/guard-soak-audit-{os.getpid()}.jsonl"
    extra = [] if args.attacks == "issue23" else [
        "--deny-unclean", "--max-buffered-bytes", args.budget]
    guard = subprocess.Popen(
        [args.bin, "proxy", "--listen", "127.0.0.1:0", "--upstream", f"127.0.0.1:{broker_port}",
         "--protect-topic", "payments", "--audit-log", audit] + extra + args.guard_args.split(),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    attackers = None
    try:
        line = guard.stdout.readline()
        port = int(line.split()[1].rsplit(":", 1)[1])
        end = time.monotonic() + args.seconds
        stats = {"churn": 0, "slow_closed": 0, "large_closed": 0, "refused": 0,
                 "refusals": 0, "refusal_bytes": 0, "stalled_closed": 0, "peak_rss_kb": 0,
                 "peak_fds": 0, "latencies": {"elect": [], "api_versions": []}, "errors": 0}

        async def connect():
            return await asyncio.open_connection("127.0.0.1", port, limit=1 << 16)

        async def churn():
            async def one():
                try:
                    _, w = await connect()
                    w.close()
                    stats["churn"] += 1
                except OSError:
                    stats["refused"] += 1
            while stats["churn"] < 10_000 and time.monotonic() < end:
                await asyncio.gather(*(one() for _ in range(200)))

        async def trickle(payload: bytes, key: str, per_second: float):
            while time.monotonic() < end:
                try:
                    r, w = await connect()
                    stats["connects_" + key] = stats.get("connects_" + key, 0) + 1
                    for i in range(len(payload)):
                        if time.monotonic() >= end:
                            break
                        w.write(payload[i:i + 1] if per_second else payload)
                        await w.drain()
                        if not per_second:
                            break
                        await asyncio.sleep(1 / per_second)
                        if r.at_eof():
                            # The guard closed it (its frame timeout): start again.
                            stats[key] += 1
                            break
                    if not per_second:
                        # Hold the announced frame until the guard gives up on it.
                        got = await asyncio.wait_for(r.read(1), timeout=max(0.1, end - time.monotonic()))
                        if got == b"":
                            stats[key] += 1
                    w.close()
                except (OSError, asyncio.TimeoutError, ConnectionError):
                    stats[key] += 1
                    await asyncio.sleep(0.05)

        async def normal():
            r, w = await connect()
            cid = 0
            while time.monotonic() < end:
                cid += 1
                kind = "elect" if cid % 2 else "api_versions"
                req = elect_leaders_v2(cid) if kind == "elect" else api_versions_v0(cid)
                t = time.perf_counter()
                w.write(req)
                await w.drain()
                size = struct.unpack(">i", await r.readexactly(4))[0]
                body = await r.readexactly(size)
                stats["latencies"][kind].append(time.perf_counter() - t)
                if struct.unpack(">i", body[:4])[0] != cid:
                    stats["errors"] += 1
                await asyncio.sleep(0.01)
            w.close()

        async def sample():
            while time.monotonic() < end:
                stats["peak_fds"] = max(stats["peak_fds"], fd_count(guard.pid))
                await asyncio.sleep(0.2)

        slow_frame = elect_leaders_v2(1)
        large = struct.pack(">i", 100_000_000) + struct.pack(">hhi", 0, 3, 1)
        tasks = [normal(), sample()]
        if args.attacks == "issue23":
            tasks.append(churn())
            tasks += [trickle(slow_frame, "slow_closed", 1.0) for _ in range(500)]
            tasks += [trickle(large, "large_closed", 0) for _ in range(100)]
        elif args.attacks == "issue42":
            counts = (args.refused, args.refused_mib, args.stalled, args.stalled_mib)
            if args.same_process:
                tasks.append(issue42_attacks(port, end, stats, *counts))
            else:
                ctx = multiprocessing.get_context("spawn")
                out = ctx.Queue()
                attackers = ctx.Process(target=issue42_attack_process,
                                        args=(port, args.seconds, *counts,
                                              args.attackers_nice, out))
                attackers.start()
        started = time.monotonic()
        await asyncio.gather(*tasks)
        elapsed = time.monotonic() - started
        if attackers is not None:
            stats.update(await asyncio.to_thread(out.get, timeout=60))
            attackers.join(timeout=10)
        peak_rss = proc_status(guard.pid, "VmHWM")
        if args.no_idle:
            def pct(xs, p):
                xs = sorted(xs)
                return xs[min(len(xs) - 1, int(len(xs) * p))] * 1000 if xs else float("nan")
            print(f"soak ({args.attacks}): {elapsed:.0f} s; refused requests answered "
                  f"{stats['refusals']} ({stats['refusal_bytes'] / 1e6:.0f} MB); stalled "
                  f"frames closed {stats['stalled_closed']} times")
            for kind, xs in stats["latencies"].items():
                print(f"normal client, {kind}: {len(xs)} answers, p50 {pct(xs, 0.5):.2f} ms, "
                      f"p99 {pct(xs, 0.99):.2f} ms, max {max(xs) * 1000 if xs else float('nan'):.2f} ms")
            print(f"normal client: {stats['errors']} answers out of order")
            print(f"guard: peak RSS {peak_rss / 1024:.1f} MiB (budget {args.budget})")
            return

        # RSS per idle connection: 1,000 connections that send nothing.
        await asyncio.sleep(1)
        before = proc_status(guard.pid, "VmRSS")
        idle = [await connect() for _ in range(1000)]
        await asyncio.sleep(1)
        after = proc_status(guard.pid, "VmRSS")
        for _, w in idle:
            w.close()

        def pct(xs, p):
            xs = sorted(xs)
            return xs[min(len(xs) - 1, int(len(xs) * p))] * 1000 if xs else float("nan")

        print(f"soak: {elapsed:.0f} s; churn {stats['churn']} connections opened and closed "
              f"({stats['refused']} refused); slow clients closed {stats['slow_closed']} times; "
              f"large-frame clients closed {stats['large_closed']} times")
        for kind, xs in stats["latencies"].items():
            print(f"normal client, {kind}: {len(xs)} answers, p50 {pct(xs, 0.5):.2f} ms, "
                  f"p99 {pct(xs, 0.99):.2f} ms, max {max(xs) * 1000 if xs else float('nan'):.2f} ms")
        print(f"normal client: {stats['errors']} answers out of order")
        print(f"attackers: slow clients connected {stats.get('connects_slow_closed', 0)} times, "
              f"large-frame clients {stats.get('connects_large_closed', 0)} times")
        print(f"guard: peak RSS {peak_rss / 1024:.1f} MiB, peak open descriptors {stats['peak_fds']}")
        print(f"guard: RSS per idle connection {(after - before) / 1000:.1f} KiB "
              f"({before} -> {after} kB for 1,000)")
    finally:
        if attackers is not None and attackers.is_alive():
            attackers.kill()
        guard.terminate()
        try:
            guard.wait(timeout=10)
        except subprocess.TimeoutExpired:
            guard.kill()
        server.close()
        try:
            os.remove(audit)
        except OSError:
            pass


if __name__ == "__main__":
    asyncio.run(main())
