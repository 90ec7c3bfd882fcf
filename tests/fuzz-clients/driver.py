#!/usr/bin/env python3
"""Fuzzes real Kafka admin clients with `elect-leaders fuzz --serve` (a hostile broker).

For each client (java: Kafka's Admin.electLeaders; confluent: librdkafka through
confluent-kafka; kafka-python), it starts its own `fuzz --serve 127.0.0.1:0 --record FILE`,
then a child process (client.py, or the Java class e2e.FuzzElect) that calls ElectLeaders in
a loop, printing one line before and one after each call. Each call is classified:

  accepted        the call returned (per-partition errors included)
  rejected        the client raised its own exception type, naming the problem
  client-timeout  the client gave up by its own timeout (a frame promising more bytes)
  unexpected      another exception kind (an IndexError, a NullPointerException ...)
  crash           the child died (by a signal: an abort, a segfault) in the call
  hang            no outcome within --hang seconds (the child is killed)
  dead            after a response, every call fails without sending a request (the
                  client object is unusable; one entry, and the child is restarted).
                  Java's child is not restarted: told "renew" on its standard input, it
                  makes a new Admin in the same JVM, announced by an {"admin": g} line.
                  Its Admin also says so itself ("The AdminClient thread has exited."):
                  that call is then the entry
  no-request      the call ended (rejected, timed out) with no ElectLeaders response
                  served during it: a client still starting, or one failing on what an
                  earlier response left behind (then that response is in the record)

and attributed to the last ElectLeaders response the server recorded during the call (a
dead client with none during its last call: the last one served to that client object).
Crashes, hangs and unexpected exceptions are findings: each distinct one is replayed alone
(`fuzz --serve --replay HEX`, a fresh child, one call) to see whether that one response
frame reproduces it, and printed with its one-line reproduction command.

    driver.py --bin target/debug/elect-leaders --clients java,confluent,kafka-python \\
              --responses 200 --seconds 60 --out target/fuzz-clients [--java-classpath CP]
    driver.py --bin ... --self-test    a partition count past the end of the frame must be
                                       each client's rejection, not a harness failure

The table and the findings go to standard output and OUT/summary.json; every call, with
the response it is attributed to, to OUT/calls.jsonl (and, as the run goes, to
OUT/CLIENT.calls.jsonl). Exit status: 0 when
every client ran (findings do not fail the run unless --fail-on-findings), 1 when the
harness failed (no server, a client that never starts, a self-test outcome not a rejection).
"""
import argparse
import json
import os
import select
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_CLIENTS = ("kafka-python", "confluent")
# Calls in a row that fail without an ElectLeaders request: the client object is dead.
DEAD_AFTER = 5
# Clients whose child is driven: after each outcome it reads "next" or "renew" (make a new
# client object, then print {"admin": g}) from its standard input. Java's, whose Admin dies
# for good on one bad response: a new Admin costs much less than a new JVM.
RENEWING = ("java",)
# The message of a dead entry found by DEAD_AFTER calls without a request.
QUIET_DEAD = "every call fails without a request: "
ALL_CLIENTS = ("java", "confluent", "kafka-python")

# A version 2 ElectLeaders response whose partition count (5) runs past the end of the
# frame: header (correlation id, no tags), throttle time 0, error 0, one result, topic
# "fuzz-a", then a compact array count promising 5 partitions and no bytes for them.
PAST_THE_END_V2 = "00000014" "00000000" "00" "00000000" "0000" "02" "07" + b"fuzz-a".hex() + "06"

# Exception kinds that are each client's own way of refusing (prefixes of the kind).
OWN_KINDS = {
    "java": ("org.apache.kafka.common.",),
    "confluent": ("confluent_kafka.", "cimpl."),
    "kafka-python": ("kafka.errors.",),
}
CLIENT_TIMEOUT_KINDS = {
    "java": ("org.apache.kafka.common.errors.TimeoutException",),
    "confluent": (),
    "kafka-python": ("kafka.errors.KafkaTimeoutError",),
}
# The harness's own wait on the call's future ran out: the client neither answered nor
# gave up in its own time.
HARNESS_WAIT_KINDS = ("java.util.concurrent.TimeoutException", "concurrent.futures._base.TimeoutError",
                      "TimeoutError", "builtins.TimeoutError")


def classify(client, line):
    kind = line.get("kind", "")
    if line["outcome"] == "accepted":
        return "accepted"
    if client == "java" and "AdminClient thread has exited" in line.get("message", ""):
        return "dead"   # the Admin's one thread ended: every later call fails at once
    if kind in HARNESS_WAIT_KINDS:
        return "hang"
    if kind in CLIENT_TIMEOUT_KINDS[client] or (
            client == "confluent" and "_TIMED_OUT" in line.get("message", "")):
        return "client-timeout"
    if kind.startswith(OWN_KINDS[client]):
        return "rejected"
    return "unexpected"


class Server:
    """`fuzz --serve` with a record, read as it grows."""

    def __init__(self, binary, record, seed, count, seconds, replay=None, keep_id=False):
        args = [binary, "fuzz", "--serve", "127.0.0.1:0", "--seed", str(seed), "--count",
                str(count), "--duration", str(seconds), "--record", record]
        if replay:
            args += ["--replay", replay]
            if keep_id:
                args.append("--keep-correlation-id")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        first = self.proc.stdout.readline()
        if not first.startswith("fuzz: serving on "):
            err = self.proc.stderr.read()
            raise RuntimeError("fuzz --serve did not start: %r %s" % (first, err))
        self.addr = first.split()[-1]
        self.record = record
        self.offset = 0
        self.lines = []      # every record line so far
        self.served = []     # the ElectLeaders responses among them

    def poll(self):
        with open(self.record, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        end = data.rfind(b"\n") + 1
        self.offset += end
        for raw in data[:end].splitlines():
            line = json.loads(raw)
            self.lines.append(line)
            if "seed" in line:
                self.served.append(line)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Child:
    """One client process; its stdout read line by line with a deadline."""

    def __init__(self, argv, log, driven=False):
        self.log = open(log, "ab")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.log,
                                     stdin=subprocess.PIPE if driven else subprocess.DEVNULL,
                                     start_new_session=True)
        self.driven = driven
        self.buf = b""

    def order(self, word):
        """Tells a driven child what to do after the outcome it printed."""
        if not self.driven:
            return
        try:
            self.proc.stdin.write(word.encode() + b"\n")
            self.proc.stdin.flush()
        except OSError:
            pass   # it died: its end of output says so

    def line(self, timeout):
        """The next JSON line, or None at end of output, or "hang" after timeout s."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return "hang"
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                return None
            self.buf += chunk
        raw, self.buf = self.buf.split(b"\n", 1)
        try:
            return json.loads(raw)
        except ValueError:
            return {"noise": raw.decode("utf-8", "replace")}

    def kill(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()
        self.log.close()


def child_argv(client, addr, calls, timeout_ms, opts):
    if client == "java":
        return ["java", "-cp", opts.java_classpath, "e2e.FuzzElect", addr, str(calls), str(timeout_ms),
                "driven"]
    return [opts.python, os.path.join(HERE, "client.py"), client, addr, str(calls), str(timeout_ms)]


def signal_name(rc):
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return "signal %d" % -rc


def run_client(client, opts, replay=None, keep_id=False, responses=None, seconds=None, tag="",
               stop_at_dead=None):
    """Runs one client against its own server; returns (calls, server lines).

    A replay stops at the first dead client object unless stop_at_dead is False. Each
    call's entry says which child process ("child", from 0) and which of its client
    objects ("admin", from 0) it was made on."""
    if stop_at_dead is None:
        stop_at_dead = bool(replay)
    responses = responses or opts.responses
    seconds = seconds or opts.seconds
    record = os.path.join(opts.out, "%s%s.jsonl" % (client, tag))
    # The server may serve more than the driver counts (it stops by the driver's kill):
    # a server that stopped first would close connections under a call in progress.
    server = Server(opts.bin, record, opts.seed, responses * 10 + 100, int(seconds) + 60,
                    replay, keep_id)
    calls = []
    started = time.monotonic()
    log = os.path.join(opts.out, "%s%s.stderr" % (client, tag))
    live = os.path.join(opts.out, "%s%s.calls.jsonl" % (client, tag))
    open(live, "w").close()
    child = None
    children = -1
    admin = 0
    starts_without_call = 0
    # Per client object: since when (ms) it exists, whether a call of it reached the
    # server, its calls in a row that did not, the call in progress.
    child_first, made_a_call, quiet, current = now_ms(), False, 0, None

    def renewed(t):
        """A new client object, made at t (ms): what the last one was served is not its."""
        nonlocal child_first, made_a_call, quiet, current
        child_first, made_a_call, quiet, current = t, False, 0, None

    def add(entry):
        entry["child"], entry["admin"] = children, admin
        calls.append(entry)
        # As they come, for a look at a long run before its end (the quiet calls that a
        # dead entry replaces stay in this file; calls.jsonl has the final list).
        with open(live, "a") as f:
            f.write(json.dumps(entry) + "\n")
    try:
        while len(server.served) < responses and time.monotonic() - started < seconds:
            if child is None:
                child = Child(child_argv(client, server.addr, DEAD_AFTER + 2 if replay else 1000000,
                                         opts.timeout_ms, opts), log, driven=client in RENEWING)
                children += 1
                admin = 0
                # Responses are attributed by time: the server records each one (with its
                # wall clock, unix_ms) before writing it, the child stamps each line (t).
                mark = now_ms()
                renewed(mark)
            line = child.line(opts.hang)
            server.poll()
            if line == "hang" or line is None:
                rc = child.proc.poll()
                if line == "hang":
                    outcome, detail = "hang", "no outcome within %gs" % opts.hang
                elif rc is not None and rc < 0:
                    outcome, detail = "crash", "killed by " + signal_name(rc)
                else:
                    try:
                        rc = child.proc.wait(10)
                    except subprocess.TimeoutExpired:
                        rc = None
                    if current is None and rc == 0:
                        outcome = None   # the child finished its calls
                    elif rc is not None and rc < 0:
                        outcome, detail = "crash", "killed by " + signal_name(rc)
                    else:
                        outcome, detail = "crash", "exited with status %s" % rc
                if outcome is not None and current is not None:
                    add(attribute(client, {"call": current, "outcome": outcome,
                                           "detail": detail}, outcome, server, mark))
                elif outcome is not None:
                    add(attribute(client, {"call": -1, "outcome": outcome, "detail": detail},
                                  outcome, server, mark))
                child.kill()
                child = None
                if not made_a_call:
                    starts_without_call += 1
                    if starts_without_call >= 3:
                        raise RuntimeError("%s: the client failed three times before its first call "
                                           "(see %s)" % (client, log))
                if replay:
                    break
                continue
            if "noise" in line:
                continue
            if "admin" in line:
                # The child replaced a dead client object (or made its first).
                admin = line["admin"]
                renewed(line["t"])
                continue
            if "outcome" not in line:
                current, mark = line["call"], line["t"]
                continue
            if line["call"] < 0:
                # The client could not even be made: a harness failure, unless repeated
                # it is retried.
                starts_without_call += 1
                child.kill()
                child = None
                if starts_without_call >= 3:
                    raise RuntimeError("%s: cannot start: %s %s" % (client, line.get("kind"),
                                                                     line.get("message")))
                continue
            entry = attribute(client, line, classify(client, line), server, mark, line["t"])
            if not entry["responses"] and entry["outcome"] in ("rejected", "client-timeout"):
                # Ended before its ElectLeaders request went out (a JVM still starting,
                # Metadata not yet in): nothing of the fuzzing in it.
                entry["outcome"] = "no-request"
            if entry["outcome"] == "dead" and not entry["responses"]:
                # The client object died after an earlier call of its own: the last
                # response it was served is the culprit.
                entry = attribute(client, line, "dead", server, child_first, line["t"])
            add(entry)
            if entry["outcome"] == "dead":
                if entry["responses"]:
                    starts_without_call = 0
                else:
                    # Dead before any ElectLeaders response: the harness, not the fuzzing.
                    starts_without_call += 1
                    if starts_without_call >= 3:
                        raise RuntimeError("%s: the client object dies before a request: %s"
                                           % (client, line.get("message")))
                if stop_at_dead:
                    break
                if client in RENEWING:
                    # The child makes a new client object; its {"admin": g} line follows.
                    child.order("renew")
                    current = None
                    continue
                child.kill()
                child = None
                continue
            if entry["responses"]:
                made_a_call = True
                starts_without_call = 0
                quiet = 0
            else:
                quiet += 1
            # Calls that fail without reaching the server: the client object is dead. After
            # a response it is a finding (one entry, "dead", attributed to the last
            # response this child was served); before any, the harness failed.
            if quiet >= DEAD_AFTER:
                del calls[-quiet:]
                if made_a_call:
                    dead = attribute(client, line, "dead", server, child_first, line["t"])
                    dead["message"] = QUIET_DEAD + "%s" % (
                        line.get("message") or line["outcome"])
                    add(dead)
                    if client in RENEWING and not stop_at_dead:
                        child.order("renew")
                        current = None
                        continue
                else:
                    starts_without_call += 1
                    if starts_without_call >= 3:
                        raise RuntimeError("%s: calls fail without reaching the server: %s %s"
                                           % (client, line.get("kind"), line.get("message")))
                child.kill()
                child = None
                if stop_at_dead:
                    break
                continue
            child.order("next")
            current = None
        return calls, server.lines
    finally:
        if child is not None:
            child.kill()
        server.stop()


def now_ms():
    return int(time.time() * 1000)


def attribute(client, line, outcome, server, since, until=None):
    """The call's outcome with the responses served during it (by the server's clock,
    between the child's stamps since and until, both in ms); the last is the culprit."""
    during = [r for r in server.served if since <= r["unix_ms"] and (until is None or r["unix_ms"] <= until)]
    entry = {"client": client, "outcome": outcome, "kind": line.get("kind"),
             "message": line.get("message") or line.get("detail"), "responses": len(during)}
    if line.get("cause"):
        entry["cause"] = line["cause"]   # what ended Java's Admin thread
    if during:
        last = during[-1]
        entry["response"] = {k: last[k] for k in ("n", "seed", "mutation", "malformed",
                                                  "request_version", "response_version",
                                                  "correlation_id", "response")}
    return entry


def reproduction(client, finding, opts):
    r = finding["response"]
    # A dead client shows in the calls after the one that killed it.
    calls = DEAD_AFTER + 2 if finding["outcome"] == "dead" else 1
    hexframe = r["response"]
    keep = len(hexframe) >= 16 and int(hexframe[8:16], 16) != (r["correlation_id"] & 0xffffffff)
    serve = "elect-leaders fuzz --serve 127.0.0.1:9092 --count 1000 --replay %s%s" % (
        hexframe, " --keep-correlation-id" if keep else "")
    if client == "java":
        run = "java -cp $(cat tests/e2e/java/target/classpath.txt):tests/e2e/java/target/classes " \
              "e2e.FuzzElect 127.0.0.1:9092 %d %d" % (calls, opts.timeout_ms)
    else:
        run = "python3 tests/fuzz-clients/client.py %s 127.0.0.1:9092 %d %d" % (
            client, calls, opts.timeout_ms)
    # The server ends with the client, so that the line can be pasted again at once.
    return keep, serve + " & server=$!; " + run + "; kill $server; wait $server"


FINDINGS = ("unexpected", "crash", "hang", "dead")


def table(results):
    cols = ["served", "calls", "accepted", "rejected", "client-timeout", "unexpected", "crash",
            "hang", "dead", "no-request"]
    out = ["%-13s" % "client" + "".join("%*s" % (len(c) + 2, c) for c in cols)]
    for client, r in results.items():
        counts = {c: 0 for c in cols}
        counts["served"] = r["served"]
        counts["calls"] = len(r["calls"])
        for c in r["calls"]:
            counts[c["outcome"]] += 1
        out.append("%-13s" % client + "".join("%*d" % (len(c) + 2, counts[c]) for c in cols))
    return "\n".join(out)


def cause_kind(call):
    """The exception class that ended a client object's thread, when the child says."""
    return (call.get("cause") or "").split(":")[0] or None


def causes(calls):
    k = {}
    for c in calls:
        if cause_kind(c):
            k[cause_kind(c)] = k.get(cause_kind(c), 0) + 1
    return dict(sorted(k.items(), key=lambda kv: -kv[1]))


def kinds(calls):
    k = {}
    for c in calls:
        if c["outcome"] != "accepted":
            key = "%s %s" % (c["outcome"], c["kind"] or c["message"])
            k[key] = k.get(key, 0) + 1
    return dict(sorted(k.items(), key=lambda kv: -kv[1]))


def campaign(opts, clients):
    results = {}
    failed = False
    for client in clients:
        t0 = time.monotonic()
        try:
            calls, lines = run_client(client, opts)
        except RuntimeError as e:
            print("fuzz-clients: %s: harness failure: %s" % (client, e))
            failed = True
            continue
        served = sum(1 for l in lines if "seed" in l)
        malformed_accepted = sum(1 for c in calls if c["outcome"] == "accepted"
                                 and c.get("response", {}).get("malformed"))
        findings = []
        seen = set()
        for c in calls:
            if c["outcome"] not in FINDINGS or "response" not in c:
                continue
            # A client object that dies and one that stops sending (told to wait, say) are
            # two findings even when their last exception is of one kind.
            key = (c["outcome"], c["kind"], (c["message"] or "").startswith(QUIET_DEAD),
                   cause_kind(c))
            if key in seen or len(findings) >= opts.max_findings:
                continue
            seen.add(key)
            keep, command = reproduction(client, c, opts)
            try:
                again, _ = run_client(client, opts, replay=c["response"]["response"],
                                      keep_id=keep, responses=100, seconds=opts.hang * 2 + 30,
                                      tag="-replay")
            except RuntimeError:
                again = []
            reproduced = any(a["outcome"] == c["outcome"] and a["kind"] == c["kind"]
                             and cause_kind(a) == cause_kind(c) for a in again)
            findings.append(dict(c, reproduced=reproduced, command=command))
        results[client] = {"served": served, "calls": calls, "kinds": kinds(calls),
                           "causes": causes(calls),
                           "malformed_accepted": malformed_accepted, "findings": findings,
                           "seconds": round(time.monotonic() - t0, 1)}
    return results, failed


def self_test(opts, clients):
    """The known-bad response: every call must be the client's rejection (or its timeout)."""
    failed = False
    # One call that must reach the server: a cold JVM on a loaded machine can take longer
    # than the campaign's short request timeout just to connect and fetch metadata.
    opts = argparse.Namespace(**dict(vars(opts), timeout_ms=max(opts.timeout_ms, 15000)))
    for client in clients:
        # A client that replaces its dead client object gets two responses: each death
        # must be attributed to its own response, the second on a new object in the same
        # process.
        renewing = client in RENEWING
        try:
            calls, lines = run_client(client, opts, replay=PAST_THE_END_V2,
                                      responses=2 if renewing else 1,
                                      seconds=opts.hang * 2 + 30, tag="-selftest",
                                      stop_at_dead=not renewing)
        except RuntimeError as e:
            print("self-test %s: harness failure: %s" % (client, e))
            failed = True
            continue
        served = [l for l in lines if "seed" in l]
        # Rejected is right; a client object that dies on it ("dead") is a finding, and
        # still the client's doing, attributed to the response: not a harness failure.
        fuzzed = [c for c in calls if c["outcome"] != "no-request"]
        ok = bool(fuzzed) and bool(served) and all(
            c["outcome"] in ("rejected", "client-timeout", "dead") and c.get("response")
            for c in fuzzed)
        if renewing and ok and any(c["outcome"] == "dead" for c in fuzzed):
            dead = [c for c in fuzzed if c["outcome"] == "dead"]
            ok = renewal_ok(dead)
            if not ok:
                print("self-test %s: the dead client objects are not one process's, each "
                      "attributed to its own response: %s" % (client, json.dumps(
                          [{k: c.get(k) for k in ("child", "admin", "responses")}
                           | {"n": c["response"]["n"]} for c in dead])))
        versions = sorted({l["request_version"] for l in served})
        print("self-test %s: %s: %s (request versions %s)" % (
            client, "ok" if ok else "FAILED",
            "; ".join("%s %s: %s" % (c["outcome"], c["kind"], (c["message"] or "")[:120])
                      for c in calls) or "no call", versions))
        failed |= not ok
    return failed


def renewal_ok(dead):
    """Two or more dead client objects, all in the first child, each a new object, each
    attributed to a response of its own, in the order served."""
    ns = [c["response"]["n"] for c in dead]
    admins = [c["admin"] for c in dead]
    return (len(dead) >= 2 and all(c["child"] == 0 for c in dead)
            and admins == sorted(set(admins)) and ns == sorted(set(ns)))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", required=True, help="the elect-leaders binary")
    p.add_argument("--clients", default=",".join(ALL_CLIENTS))
    p.add_argument("--responses", type=int, default=200, help="responses served per client")
    p.add_argument("--seconds", type=float, default=60, help="time bound per client")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout-ms", type=int, default=1500, help="the clients' request timeout")
    p.add_argument("--hang", type=float, default=15, help="seconds without an outcome: a hang")
    p.add_argument("--out", default="target/fuzz-clients")
    p.add_argument("--java-classpath", default=None)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--max-findings", type=int, default=5, help="distinct findings replayed per client")
    p.add_argument("--self-test", action="store_true")
    p.add_argument("--fail-on-findings", action="store_true")
    opts = p.parse_args()
    os.makedirs(opts.out, exist_ok=True)
    clients = [c for c in opts.clients.split(",") if c]
    if "java" in clients and not opts.java_classpath:
        print("fuzz-clients: java: no --java-classpath; skipped")
        clients.remove("java")
    if opts.self_test:
        sys.exit(1 if self_test(opts, clients) else 0)
    results, failed = campaign(opts, clients)
    print(table(results))
    any_findings = False
    for client, r in results.items():
        print("%s (%.1fs): %s" % (client, r["seconds"], json.dumps(r["kinds"])))
        if r["causes"]:
            print("  what ended the client object's thread: %s" % json.dumps(r["causes"]))
        if r["malformed_accepted"]:
            print("  %d calls accepted a malformed response" % r["malformed_accepted"])
        for f in r["findings"]:
            any_findings = True
            print("  FINDING %s %s: %s%s (response %d, %s; reproduced alone: %s)\n    %s" % (
                f["outcome"], f["kind"], (f["message"] or "")[:200],
                " [cause: %s]" % f["cause"][:200] if f.get("cause") else "", f["response"]["n"],
                f["response"]["mutation"], "yes" if f["reproduced"] else "no", f["command"]))
    with open(os.path.join(opts.out, "calls.jsonl"), "w") as f:
        for r in results.values():
            for c in r["calls"]:
                f.write(json.dumps(c) + "\n")
    with open(os.path.join(opts.out, "summary.json"), "w") as f:
        json.dump({c: {k: v for k, v in r.items() if k != "calls"} for c, r in results.items()},
                  f, indent=1)
    sys.exit(1 if failed or (any_findings and opts.fail_on_findings) else 0)


if __name__ == "__main__":
    main()
