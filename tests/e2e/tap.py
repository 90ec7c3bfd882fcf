#!/usr/bin/env python3
"""A passthrough tap for the end-to-end tests: one loopback listener per Kafka broker, each
forwarding every connection to its broker and recording the bytes of each direction, as they
are, into files. It never looks inside the bytes: decoding is the Rust checker's job
(examples/e2e_frames.rs), with this crate.

    tap.py --out DIR --count 2 --ports-file FILE --targets-env STATE --target-keys K2,K3

- binds COUNT free loopback ports at once and writes them, "127.0.0.1:P1,127.0.0.1:P2", to
  --ports-file (the brokers advertise these);
- the listener number i forwards to 127.0.0.1:<value of key i in the STATE env file>, read
  when a connection arrives (the cluster may start after the tap);
- connection n is recorded as DIR/conn-NNNN.c2s (client to server) and DIR/conn-NNNN.s2c,
  and one JSON line in DIR/index.jsonl: {"conn","listener","tap_port","target","client"}.

Stops on SIGTERM or SIGINT.
"""

import argparse
import asyncio
import json
import os
import signal
import socket
import sys
import time


def read_env(path):
    values = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                k, v = line.split("=", 1)
                values[k] = v
    return values


class Tap:
    def __init__(self, out, targets_env, target_keys):
        self.out = out
        self.targets_env = targets_env
        self.target_keys = target_keys
        self.next_id = 0
        self.index = open(os.path.join(out, "index.jsonl"), "a", encoding="utf-8")

    def target(self, listener):
        env = read_env(self.targets_env)
        return "127.0.0.1", int(env[self.target_keys[listener]])

    async def pipe(self, reader, writer, path):
        with open(path, "wb", buffering=0) as rec:
            try:
                while True:
                    data = await reader.read(65536)
                    if not data:
                        break
                    rec.write(data)
                    writer.write(data)
                    await writer.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                try:
                    if writer.can_write_eof():
                        writer.write_eof()
                except (ConnectionError, OSError, RuntimeError):
                    pass

    async def handle(self, listener, tap_port, c_reader, c_writer):
        self.next_id += 1
        name = "conn-%04d" % self.next_id
        base = os.path.join(self.out, name)
        try:
            host, port = self.target(listener)
            s_reader, s_writer = await asyncio.open_connection(host, port)
        except (OSError, KeyError, ValueError) as e:
            print("tap: %s: cannot reach broker of listener %d: %s" % (name, listener, e),
                  file=sys.stderr)
            c_writer.close()
            return
        peer = c_writer.get_extra_info("peername")
        self.index.write(json.dumps({
            "conn": name, "listener": listener, "tap_port": tap_port,
            "target": "%s:%d" % (host, port), "client": "%s:%d" % peer[:2],
            "time": time.time(),
        }) + "\n")
        self.index.flush()
        await asyncio.gather(
            self.pipe(c_reader, s_writer, base + ".c2s"),
            self.pipe(s_reader, c_writer, base + ".s2c"),
        )
        for w in (s_writer, c_writer):
            w.close()


async def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--count", type=int, default=2)
    ap.add_argument("--ports-file", required=True)
    ap.add_argument("--targets-env", required=True)
    ap.add_argument("--target-keys", required=True)
    args = ap.parse_args()
    keys = args.target_keys.split(",")
    if len(keys) != args.count:
        ap.error("--target-keys must name --count keys")
    os.makedirs(args.out, exist_ok=True)
    tap = Tap(args.out, args.targets_env, keys)

    socks = []
    for _ in range(args.count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    servers = []
    for i, s in enumerate(socks):
        port = s.getsockname()[1]
        servers.append(await asyncio.start_server(
            lambda r, w, i=i, port=port: tap.handle(i, port, r, w), sock=s))
    ports = ",".join("127.0.0.1:%d" % s.getsockname()[1] for s in socks)
    tmp = args.ports_file + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(ports + "\n")
    os.replace(tmp, args.ports_file)
    print("tap: listening on %s, recording into %s" % (ports, args.out), file=sys.stderr)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    for srv in servers:
        srv.close()
    tap.index.close()


if __name__ == "__main__":
    asyncio.run(main())
