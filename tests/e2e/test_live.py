"""Live capture on the real cluster: `elect-leaders decode --interface lo --filter 'tcp port
P1 or tcp port P2'` (the tap ports) runs while the three real clients elect, and what it
decoded as it happened must be the ElectLeaders exchanges the tap recorded in the same time:
the same correlation ids and client ids, election types, topics and partitions asked for,
and error codes answered (whole-request and per partition).

Imported by test_e2e.py (which runs the clients); needs the binary built with the feature
`live` (run.sh builds it so when libpcap's headers are there) and root or CAP_NET_RAW: without
either, the test says so in one line and does nothing else.
"""

import json
import os
import queue
import shutil
import signal
import subprocess
import threading
import time

import test_e2e as e2e

# How long the capture has, at most, to say it is capturing and to end after SIGTERM.
PATIENCE = 60


def _lines(stream, q):
    for line in stream:
        q.put(line)
    q.put(None)


def start_live():
    """The capturing process, its stdout and stderr line queues; None (and one line said)
    when it cannot capture here."""
    binary = os.environ["ELECT_LEADERS_BIN"]
    flt = " or ".join("tcp port %d" % p for p in e2e.TAP_PORTS)
    p = subprocess.Popen([binary, "decode", "--interface", "lo", "--filter", flt],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = queue.Queue(), queue.Queue()
    threading.Thread(target=_lines, args=(p.stdout, out), daemon=True).start()
    threading.Thread(target=_lines, args=(p.stderr, err), daemon=True).start()
    try:
        first = err.get(timeout=PATIENCE)
    except queue.Empty:
        p.kill()
        p.wait()
        raise AssertionError("decode --interface lo said nothing in %ds" % PATIENCE)
    if first is None or "capturing" not in first:
        p.kill()
        p.wait()
        print("  skipped: decode --interface lo cannot capture here: %s" % (first or "").strip())
        return None
    return p, out, err


def stop_live(live):
    p, out, err = live
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=PATIENCE)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise AssertionError("decode --interface lo did not end after SIGTERM")
    objects, errors = [], []
    for q, into in ((out, objects), (err, errors)):
        while True:
            line = q.get(timeout=PATIENCE)
            if line is None:
                break
            into.append(line)
    return p.returncode, [json.loads(l) for l in objects if l.strip()], errors


def exchanges_live(objects):
    """{(client address, correlation_id): exchange} from decode's objects, the response
    paired by its connection and correlation id. (Correlation ids repeat across
    connections: each Java Admin run starts afresh.)"""
    requests, responses = {}, {}
    for o in objects:
        if o.get("api_key") != 43:
            continue
        key = (o["source"]["connection"], o["correlation_id"])
        (requests if o["kind"] == "request" else responses)[key] = o
    assert set(requests) == set(responses), \
        "live: requests and responses do not pair: %r" % (set(requests) ^ set(responses))
    out = {}
    for key, rq in requests.items():
        rs = responses[key]
        results = [(r["topic"], q["partition_id"], q["error_code"])
                   for r in rs["replica_election_results"] for q in r["partition_result"]]
        out[(rq["source"]["src"], rq["correlation_id"])] = exchange(
            rq["client_id"], rq["election_type"], rq["topic_partitions"], rs.get("error_code"),
            results)
    return out


def exchanges_tap(lines, clients):
    """The same from the Rust checker's reading of the tap's recordings; `clients`: each
    recorded connection's client address (the tap's index)."""
    requests = {(l["conn"], l["correlation_id"]): l for l in lines if l["kind"] == "request"}
    responses = {(l["conn"], l["correlation_id"]): l for l in lines if l["kind"] == "response"}
    assert set(requests) == set(responses), "tap: requests and responses do not pair"
    out = {}
    for key, rq in requests.items():
        rs = responses[key]
        results = [(r["topic"], q["partition_id"], q["error_code"])
                   for r in rs["results"] for q in r["partition_result"]]
        out[(clients[rq["conn"]], rq["correlation_id"])] = exchange(
            rq["client_id"], rq["election_type"], rq["topic_partitions"], rs.get("error_code"),
            results)
    return out


def exchange(client_id, election_type, topic_partitions, top, results):
    asked = None if topic_partitions is None else sorted(
        (t["topic"], p) for t in topic_partitions for p in t["partitions"])
    return {"client_id": client_id, "election_type": election_type, "asked": asked, "error_code": top,
            "results": sorted(results)}


def live_capture_matches_the_tap():
    e2e.close_clients()
    topic = "live"
    e2e.create(topic, [[2, 3], [2, 3], [2, 3]])
    for p in range(3):
        e2e.wait_partition(topic, p, lambda x: sorted(x["isr"]) == [2, 3], "isr [2,3]")
        e2e.reassign(topic, p, [3, 2])
    before = set(os.listdir(e2e.TAP_DIR))
    live = start_live()
    if live is None:
        return
    try:
        for i, c in enumerate(e2e.CLIENTS):
            got = e2e.elect(c, e2e.PREFERRED, [(topic, i)])
            e2e.expect_results(got, {(topic, i): e2e.NONE}, "%s PREFERRED on %s-%d" % (c, topic, i))
            got = e2e.elect(c, e2e.PREFERRED, [(topic, i), ("no-such-live", 0)])
            e2e.expect_results(got, {(topic, i): e2e.ELECTION_NOT_NEEDED,
                                     ("no-such-live", 0): e2e.UNKNOWN_TOPIC_OR_PARTITION},
                               "%s PREFERRED again" % c)
        e2e.close_clients()
        # The tap's connections of this test have ended (their files are complete).
        time.sleep(1.0)
    finally:
        status, objects, errors = stop_live(live)
    assert status == 0, "decode --interface lo exited %d: %s" % (status, errors[-5:])
    assert errors[1:] == [], "decode --interface lo reported: %r" % errors[1:]

    # The tap's recordings of the connections opened meanwhile, read by the Rust checker.
    mine = os.path.join(e2e.RUN, "live-tap")
    shutil.rmtree(mine, ignore_errors=True)
    os.makedirs(mine)
    for name in sorted(set(os.listdir(e2e.TAP_DIR)) - before):
        if name.endswith((".c2s", ".s2c")):
            shutil.copy(os.path.join(e2e.TAP_DIR, name), mine)
    p = subprocess.run([e2e.E2E_FRAMES, mine], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, "e2e_frames on the tap's recordings: %s" % p.stderr[-2000:]
    with open(os.path.join(e2e.TAP_DIR, "index.jsonl"), encoding="utf-8") as f:
        clients = {c["conn"]: c["client"] for c in map(json.loads, f) if c}
    tap = exchanges_tap([json.loads(l) for l in p.stdout.splitlines() if l.strip()], clients)
    seen = exchanges_live(objects)
    with open(os.path.join(e2e.RUN, "live.jsonl"), "w", encoding="utf-8") as f:
        for o in objects:
            f.write(json.dumps(o) + "\n")
    # Six elections, two per client: both sides saw all of them, the same.
    assert len(tap) == 6, "tap: %d ElectLeaders exchanges: %r" % (len(tap), sorted(tap))
    assert {x["client_id"] for x in tap.values()} == set(e2e.CLIENT_IDS.values()), tap
    assert sorted(seen) == sorted(tap), "live %r, tap %r" % (sorted(seen), sorted(tap))
    for key in tap:
        assert seen[key] == tap[key], "%r: live %r, tap %r" % (key, seen[key], tap[key])
    e2e.note(event="live_capture", exchanges=len(seen), objects=len(objects))
    print("  live: %d ElectLeaders exchanges decoded as they happened, the tap's %d the same"
          % (len(seen), len(tap)))


live_capture_matches_the_tap.__name__ = "live capture (decode --interface lo) decodes what the tap records"
TESTS = [live_capture_matches_the_tap]
