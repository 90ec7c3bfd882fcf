#!/usr/bin/env python3
"""Two Kafka releases side by side: `elect-leaders fuzz --target A --compare B` between a
Kafka 4.4.0 and a Kafka 3.9.1 cluster of their own (one controller and one broker each,
started and stopped by compare.sh), after the same topics were made on both: 300 requests
of seed 7, bounded by --duration 40.

Passes when every request was sent and answered alike by both releases (after the
normalization FUZZING.md describes). Without Java or Maven it prints one line and skips.

Part of tests/e2e/run.sh (through test_e2e.py), which sets ELECT_LEADERS_BIN and E2E_DIR;
alone: ELECT_LEADERS_BIN=target/debug/elect-leaders python3 tests/e2e/test_compare.py
"""

import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
COUNT = 300
TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


@test
def kafka_4_4_and_3_9_answer_alike():
    """compare.sh: the same 300 generated and mutated requests to Kafka 4.4.0 and 3.9.1."""
    if not shutil.which("java") or not shutil.which("mvn"):
        print("  skipped: Java and Maven are needed to run two Kafka clusters")
        return
    binary = os.environ.get("ELECT_LEADERS_BIN")
    if not binary:
        raise AssertionError("ELECT_LEADERS_BIN is not set (run.sh sets it)")
    e2e_dir = os.environ.get("E2E_DIR", os.path.join(HERE, "..", "..", "target", "e2e"))
    out = os.path.join(e2e_dir, "compare", "test-differences.jsonl")
    env = dict(os.environ, ELECT_LEADERS_BIN=binary, E2E_DIR=e2e_dir, COMPARE_OUT=out,
               COMPARE_A="4.4.0", COMPARE_B="3.9.1")
    env.pop("KEEP", None)
    t0 = time.time()
    run = subprocess.run(["bash", os.path.join(HERE, "compare.sh"), "--count", str(COUNT),
                          "--seed", "7", "--timeout", "10000", "--duration", "40"],
                         env=env, capture_output=True, text=True, timeout=400)
    seconds = time.time() - t0
    lines = []
    if os.path.exists(out):
        with open(out, encoding="utf-8") as f:
            lines = [json.loads(l) for l in f if l.strip()]
    summary = [l for l in run.stderr.splitlines() if l.startswith("compare: ") and " sent (" in l]
    print("  %.0fs: %s" % (seconds, summary[-1] if summary else run.stderr.strip()[-300:]))
    assert run.returncode in (0, 1), "compare.sh exit %d: %s" % (run.returncode, run.stderr[-2000:])
    assert summary and summary[-1].startswith("compare: %d sent (" % COUNT), run.stderr[-2000:]
    for side in ("A ", "B "):
        line = next(l for l in run.stderr.splitlines() if l.startswith(side))
        answered = int(line.split("; ")[1].split(" ")[0])
        assert answered >= COUNT * 3 // 4, "too few answers: %s" % line
    # The answers carried partition results (most for topics that do not exist: requests
    # for all partitions are answered without the partitions that need no election).
    codes = next(l for l in run.stderr.splitlines() if l.startswith("partition results"))
    assert "3 UNKNOWN_TOPIC_OR_PARTITION" in codes, codes
    for l in lines:
        print("  difference at request %d: %s; %s" % (l["index"], l["classes"], l["reproduce"]))
    assert run.returncode == 0 and not lines, "%d answers differ (lines in %s)" % (len(lines), out)


def main():
    passed = failed = 0
    for t in TESTS:
        t0 = time.time()
        try:
            t()
            passed += 1
            print("PASS %s (%.1fs)" % (t.__name__, time.time() - t0), flush=True)
        except Exception as e:  # noqa: BLE001 - reported, then the next runs
            failed += 1
            print("FAIL %s (%.1fs): %s" % (t.__name__, time.time() - t0, e), flush=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
