#!/usr/bin/env python3
"""Which of the guard's threads wake up per request: voluntary context switches per request
of each thread (by its name), for paced Produce and ElectLeaders requests through the guard
(`--deny-unclean`, audit lines to a file) in front of guard_cpu.py's FAKE BROKER, which
answers at once. What BENCHMARKS.md's "The guard's own CPU per request" says of the audit
writer's wake-ups comes from here.

    cargo build --release -p elect-leaders
    python3 benches/guard_wakeups.py [--bin PATH] [--requests 3000] [--proxy-arg=--threads=0]

Everything it starts is stopped, also on failure.
"""

import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guard_cpu as g  # noqa: E402


def per_thread(pid):
    """Voluntary context switches so far, summed by thread name."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                comm = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                status = f.read()
        except OSError:
            continue  # a thread that ended meanwhile
        line = next(l for l in status.splitlines() if l.startswith("voluntary_ctxt_switches"))
        out[comm] = out.get(comm, 0) + int(line.split()[1])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(g.ROOT, "target", "release", "elect-leaders"))
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--rate", type=float, default=1000)
    ap.add_argument("--proxy-arg", action="append", default=[])
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="guard-wakeups-")
    broker = g.FakeBroker()
    proxy = subprocess.Popen(
        [args.bin, "proxy", "--listen", "127.0.0.1:0", "--upstream", f"127.0.0.1:{broker.port}",
         "--deny-unclean", "--audit-log", os.path.join(work, "audit.jsonl")] + args.proxy_arg,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = int(proxy.stdout.readline().split()[1].rsplit(":", 1)[1])
        print(f"voluntary context switches per paced request, by thread ({args.requests} "
              f"requests at {args.rate:.0f}/s, after {g.WARM_UP} to warm up)")
        for kind in g.KINDS:
            s = g.connect(port)
            try:
                before = per_thread(proxy.pid)
                r = g.paced(s, kind, args.requests, args.rate, proxy.pid)
                after = per_thread(proxy.pid)
            finally:
                s.close()
            n = args.requests + g.WARM_UP
            threads = ", ".join(f"{name} {(after[name] - before.get(name, 0)) / n:.2f}"
                                for name in sorted(after))
            print(f"{kind}: {threads}; the process {r['wakeups']:.2f}")
    finally:
        proxy.kill()
        proxy.wait()
        broker.stop()


if __name__ == "__main__":
    main()
