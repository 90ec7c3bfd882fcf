#!/usr/bin/env python3
"""Checks driver.py's bookkeeping without Java, a server or a network: how it classifies,
attributes and renews, against a scripted child.

    python3 tests/fuzz-clients/test_driver.py       (run.sh --self-test runs it first)

The scripted child plays both sides: it prints the lines a driven Java child prints
({"admin": g}, {"call": k}, the outcome) and appends to the record the ElectLeaders
responses "served" during each call, with the wall clock, as `fuzz --serve` does. It logs
the orders it reads on its standard input. The driver's Server is replaced by one that only
reads that record.
"""
import argparse
import json
import os
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import driver  # noqa: E402

THREAD_EXITED = "The AdminClient thread has exited."
# The number of the response that ends a scripted run.
SENTINEL = 1000
JAVA_TIMEOUT = "org.apache.kafka.common.errors.TimeoutException"

# The scripted child: argv[1] the record, argv[2] the script (JSON), argv[3] the order log.
CHILD = r'''
import json, sys, time

record, script, log = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]

def now():
    time.sleep(0.003)  # distinct, increasing stamps
    return int(time.time() * 1000)

def say(**kw):
    kw["t"] = now()
    sys.stdout.write(json.dumps(kw) + "\n")
    sys.stdout.flush()

admin = 0
say(admin=admin)
for k, step in enumerate(script):
    say(call=k)
    for n in step.get("serve", []):
        with open(record, "a") as f:
            f.write(json.dumps({"n": n, "seed": n, "mutation": "m%d" % n, "malformed": False,
                                "request_version": 2, "response_version": 2,
                                "correlation_id": k, "response": "00", "unix_ms": now()}) + "\n")
    out = dict(step["outcome"], call=k)
    say(**out)
    order = sys.stdin.readline().strip()
    with open(log, "a") as f:
        f.write(order + "\n")
    if not order:
        break
    if order == "renew":
        admin += 1
        say(admin=admin)
time.sleep(30)  # the script is over: the driver must have stopped first
'''


def accepted(*serve):
    return {"serve": list(serve), "outcome": {"outcome": "accepted", "results": 3}}


def exception(kind, message, *serve):
    return {"serve": list(serve),
            "outcome": {"outcome": "exception", "kind": kind, "message": message}}


class FakeServer(driver.Server):
    """No process: the record the scripted child writes. Its "address" is that record."""

    def __init__(self, binary, record, *args, **kwargs):
        self.proc = None
        self.record = record
        self.addr = record
        self.offset = 0
        self.lines = []
        self.served = []
        open(record, "w").close()

    def stop(self):
        pass


class DriverBookkeeping(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.saved = (driver.Server, driver.child_argv)
        driver.Server = FakeServer
        self.child = os.path.join(self.dir.name, "child.py")
        with open(self.child, "w") as f:
            f.write(CHILD)
        self.orders = os.path.join(self.dir.name, "orders")

    def tearDown(self):
        driver.Server, driver.child_argv = self.saved
        self.dir.cleanup()

    def run_script(self, script, responses):
        """The calls of `script`, which serves `responses`. The driver stops once the
        server has served what it was asked for, maybe before the last call's outcome:
        one more call, serving one more response, ends the run and is left out."""
        last = SENTINEL
        script = script + [accepted(last)]
        driver.child_argv = lambda client, addr, calls, timeout_ms, opts: [
            sys.executable, self.child, addr, json.dumps(script), self.orders]
        opts = argparse.Namespace(bin="unused", out=self.dir.name, seed=0,
                                  responses=responses + 1, seconds=60, hang=20, timeout_ms=1500)
        calls, _ = driver.run_client("java", opts)
        with open(self.orders) as f:
            orders = f.read().split()
        return [c for c in calls if c.get("response", {}).get("n") != last], orders

    def test_a_dead_admin_is_one_entry_its_response_and_renewed_in_the_same_process(self):
        died = exception(JAVA_TIMEOUT, THREAD_EXITED + " Call: electLeaders", 1)
        died["outcome"]["cause"] = "java.lang.RuntimeException: Tried to allocate a collection"
        calls, orders = self.run_script([accepted(0), died, accepted(2), accepted(3)],
                                        responses=4)
        self.assertEqual([c["outcome"] for c in calls], ["accepted", "dead", "accepted", "accepted"])
        self.assertEqual([c["response"]["n"] for c in calls], [0, 1, 2, 3])
        self.assertEqual([c["admin"] for c in calls], [0, 0, 1, 1])
        self.assertEqual({c["child"] for c in calls}, {0}, "no new process")
        self.assertEqual(orders[:3], ["next", "renew", "next"])
        self.assertEqual(driver.causes(calls), {"java.lang.RuntimeException": 1})

    def test_a_death_seen_on_the_next_call_is_the_admins_last_response(self):
        # The thread ended after call 0 returned; call 1 fails at once, serving nothing.
        calls, orders = self.run_script([
            exception("org.apache.kafka.common.errors.UnknownServerException", "boom", 0),
            exception(JAVA_TIMEOUT, THREAD_EXITED),
            accepted(1),
            accepted(2),
        ], responses=3)
        self.assertEqual([c["outcome"] for c in calls], ["rejected", "dead", "accepted", "accepted"])
        self.assertEqual(calls[1]["response"]["n"], 0)
        self.assertEqual(calls[2]["response"]["n"], 1)
        self.assertEqual([c["admin"] for c in calls], [0, 0, 1, 1])
        self.assertEqual(orders[:2], ["next", "renew"])

    def test_a_new_admin_is_not_blamed_for_the_last_ones_responses(self):
        # The new Admin's first call dies without a response of its own: no culprit.
        calls, _ = self.run_script([
            exception(JAVA_TIMEOUT, THREAD_EXITED + " Call: electLeaders", 0),
            exception(JAVA_TIMEOUT, THREAD_EXITED),
            accepted(1),
        ], responses=2)
        self.assertEqual([c["outcome"] for c in calls], ["dead", "dead", "accepted"])
        self.assertEqual(calls[0]["response"]["n"], 0)
        self.assertNotIn("response", calls[1])
        self.assertEqual(calls[1]["admin"], 1)

    def test_an_admin_that_stops_sending_is_one_dead_entry_and_renewed(self):
        waiting = exception(JAVA_TIMEOUT, "Timed out waiting to send the call. Call: electLeaders")
        calls, orders = self.run_script(
            [accepted(0)] + [waiting] * driver.DEAD_AFTER + [accepted(1), accepted(2)],
            responses=3)
        self.assertEqual([c["outcome"] for c in calls], ["accepted", "dead", "accepted", "accepted"])
        self.assertTrue(calls[1]["message"].startswith(driver.QUIET_DEAD))
        self.assertEqual(calls[1]["response"]["n"], 0, "the response that silenced it")
        self.assertEqual([c["response"]["n"] for c in calls[2:]], [1, 2])
        self.assertEqual([c["admin"] for c in calls], [0, 0, 1, 1])
        self.assertEqual(orders[:driver.DEAD_AFTER + 2],
                         ["next"] * driver.DEAD_AFTER + ["renew", "next"])

    def test_a_replay_stops_at_the_first_dead_admin(self):
        driver.child_argv = lambda client, addr, calls, timeout_ms, opts: [
            sys.executable, self.child, addr, json.dumps([
                exception(JAVA_TIMEOUT, THREAD_EXITED + " Call: electLeaders", 0),
                accepted(1)]), self.orders]
        opts = argparse.Namespace(bin="unused", out=self.dir.name, seed=0, responses=10,
                                  seconds=60, hang=20, timeout_ms=1500)
        calls, _ = driver.run_client("java", opts, replay="00", responses=10, tag="-replay")
        self.assertEqual([c["outcome"] for c in calls], ["dead"])

    def test_the_self_test_s_renewal_check(self):
        def dead(child, admin, n):
            return {"outcome": "dead", "child": child, "admin": admin, "response": {"n": n}}
        self.assertTrue(driver.renewal_ok([dead(0, 0, 0), dead(0, 1, 1)]))
        self.assertFalse(driver.renewal_ok([dead(0, 0, 0)]), "one death proves no renewal")
        self.assertFalse(driver.renewal_ok([dead(0, 0, 0), dead(0, 0, 1)]), "one Admin twice")
        self.assertFalse(driver.renewal_ok([dead(0, 0, 0), dead(1, 0, 1)]), "a new process")
        self.assertFalse(driver.renewal_ok([dead(0, 0, 0), dead(0, 1, 0)]), "one response twice")


if __name__ == "__main__":
    unittest.main()
