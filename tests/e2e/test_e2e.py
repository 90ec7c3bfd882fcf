#!/usr/bin/env python3
"""End-to-end tests of ElectLeaders against a real Apache Kafka 4.4.0 cluster, with three real
clients (Kafka's Java Admin, librdkafka through confluent-kafka, kafka-python), all through
the passthrough tap; the tap's recordings are then decoded by this crate
(examples/e2e_frames.rs) and compared with what the clients sent and reported.

Run by tests/e2e/run.sh, which sets up the cluster, the tap and the environment:
E2E_RUN, BOOTSTRAP (the tap addresses), TAP_PORTS, TAP_DIR, CLUSTER_SH, ADMIN_CP, E2E_FRAMES.

This file never parses Kafka frames: it only runs clients and the Rust checker.
Prints one line per test and, last, "N passed, M failed".
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import traceback

from confluent_kafka import ElectionType, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
import confluent_kafka
import kafka
from kafka import KafkaAdminClient

RUN = os.environ["E2E_RUN"]
BOOTSTRAP = os.environ["BOOTSTRAP"]
TAP_PORTS = [int(p) for p in os.environ["TAP_PORTS"].split(",")]
TAP_DIR = os.environ["TAP_DIR"]
CLUSTER_SH = os.environ["CLUSTER_SH"]
ADMIN_CP = os.environ["ADMIN_CP"]
E2E_FRAMES = os.environ["E2E_FRAMES"]

PREFERRED, UNCLEAN = 0, 1
TYPE_NAMES = {PREFERRED: "preferred", UNCLEAN: "unclean"}
NONE, UNKNOWN_TOPIC_OR_PARTITION = 0, 3
PREFERRED_LEADER_NOT_AVAILABLE, ELECTION_NOT_NEEDED = 80, 84

CLIENT_IDS = {
    "java": "e2e-java-admin",
    "confluent": "e2e-confluent",
    "kafka-python": "e2e-kafka-python",
}
SHORT = {"java": "java", "confluent": "ck", "kafka-python": "kp"}

# Every election a client ran: what it asked and what it reported, to compare with the frames.
ELECTIONS = []
# What was observed, for the report (run/observations.jsonl).
OBSERVED = []


def note(**kv):
    OBSERVED.append(kv)
    with open(os.path.join(RUN, "observations.jsonl"), "a", encoding="utf-8") as f:
        f.write(json.dumps(kv) + "\n")


# ---------------------------------------------------------------- Java Admin (AdminTool)

def java(cmd, *args, client_id="e2e-java-setup"):
    argv = ["java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m", "-cp", ADMIN_CP,
            "e2e.AdminTool", cmd, "--bootstrap", BOOTSTRAP, "--client-id", client_id, *args]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise AssertionError("AdminTool %s failed (%d): %s %s" % (cmd, p.returncode, p.stdout, p.stderr))
    return json.loads(p.stdout.strip().splitlines()[-1])


def describe(topic):
    return java("describe", "--topic", topic)["topics"][topic]


def create(topic, assignment, *configs):
    args = ["--topic", topic, "--assignment", "/".join(",".join(map(str, r)) for r in assignment)]
    for c in configs:
        args += ["--config", c]
    java("create", *args)


def reassign(topic, partition, replicas):
    java("reassign", "--partition", "%s:%d" % (topic, partition),
         "--replicas", ",".join(map(str, replicas)))


def wait_for(what, fn, timeout=30.0, interval=0.3):
    deadline = time.time() + timeout
    last = None
    while True:
        last = fn()
        if last[0]:
            return last[1]
        if time.time() > deadline:
            raise AssertionError("timed out waiting for %s; last: %r" % (what, last[1]))
        time.sleep(interval)


def wait_partition(topic, partition, pred, what, timeout=30.0):
    def check():
        d = describe(topic)
        p = d[partition] if d else None
        return (p is not None and pred(p)), p
    return wait_for("%s of %s-%d" % (what, topic, partition), check, timeout)


# ---------------------------------------------------------------- the three clients

_confluent = None
_kafka_python = None


def confluent_admin():
    global _confluent
    if _confluent is None:
        _confluent = AdminClient({"bootstrap.servers": BOOTSTRAP,
                                  "client.id": CLIENT_IDS["confluent"],
                                  "socket.timeout.ms": 30000,
                                  # no "Disconnected" info lines when brokers stop
                                  "log_level": 3})
    return _confluent


def kafka_python_admin():
    global _kafka_python
    if _kafka_python is None:
        _kafka_python = KafkaAdminClient(bootstrap_servers=BOOTSTRAP,
                                         client_id=CLIENT_IDS["kafka-python"],
                                         request_timeout_ms=30000)
    return _kafka_python


def close_clients():
    global _confluent, _kafka_python
    if _kafka_python is not None:
        _kafka_python.close()
        _kafka_python = None
    _confluent = None  # librdkafka closes its connections when the handle is collected
    import gc
    gc.collect()


def elect(client, etype, parts):
    """Runs one ElectLeaders from `client`; parts: [(topic, partition)] or None (all).

    Returns {"top": code of a whole-request error or None,
             "results": {(topic, partition): error code, 0 for success}}."""
    if client == "java":
        args = ["--type", TYPE_NAMES[etype]]
        for t, p in parts or []:
            args += ["--partition", "%s:%d" % (t, p)]
        out = java("elect", *args, client_id=CLIENT_IDS["java"])
        top = out["error"]["code"] if out["error"] else None
        results = {(r["topic"], r["partition"]): (r["error"]["code"] if r["error"] else 0)
                   for r in out["results"] or []}
    elif client == "confluent":
        a = confluent_admin()
        et = ElectionType.PREFERRED if etype == PREFERRED else ElectionType.UNCLEAN
        tps = None if parts is None else [TopicPartition(t, p) for t, p in parts]
        top, results = None, {}
        try:
            r = a.elect_leaders(et, tps).result(timeout=90)
            for tp, e in r.items():
                if isinstance(e, KafkaException):
                    e = e.args[0]
                results[(tp.topic, tp.partition)] = e.code() if e is not None else 0
        except KafkaException as e:
            top = e.args[0].code()
    elif client == "kafka-python":
        a = kafka_python_admin()
        tps = None
        if parts is not None:
            tps = {}
            for t, p in parts:
                tps.setdefault(t, []).append(p)
        resp = a.elect_leaders(etype, tps, timeout_ms=30000, raise_errors=False)
        top = resp.error_code or None
        results = {}
        for res in resp.replica_election_results:
            for pr in res.partition_result:
                results[(res.topic, pr.partition_id)] = pr.error_code
    else:
        raise ValueError(client)
    ELECTIONS.append({
        "client": client, "client_id": CLIENT_IDS[client], "type": etype,
        "requested": None if parts is None else sorted([t, p] for t, p in parts),
        "top": top, "results": {"%s:%d" % k: v for k, v in results.items()},
    })
    note(event="elect", client=client, type=TYPE_NAMES[etype], requested=parts, top=top,
         results={"%s:%d" % k: v for k, v in results.items()})
    return {"top": top, "results": results}


def expect_results(got, expected, what):
    assert got["top"] in (None, 0), "%s: whole request failed with %r" % (what, got["top"])
    assert got["results"] == expected, "%s: got %r, expected %r" % (what, got["results"], expected)


# ---------------------------------------------------------------- tests

CLIENTS = ["java", "confluent", "kafka-python"]
TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def make_non_preferred(topic):
    """A topic with one partition, replicas [2,3], then reassigned to [3,2]: the leader stays
    2, which is no longer the preferred replica (3)."""
    create(topic, [[2, 3]])
    wait_partition(topic, 0, lambda p: p["leader"] == 2 and sorted(p["isr"]) == [2, 3], "leader 2, isr [2,3]")
    reassign(topic, 0, [3, 2])
    p = wait_partition(topic, 0, lambda p: p["replicas"] == [3, 2] and sorted(p["isr"]) == [2, 3],
                       "replicas [3,2]")
    assert p["leader"] == 2, "leader moved by itself (auto.leader.rebalance.enable?): %r" % p


def preferred_moves_leader(client):
    topic = "pref-" + SHORT[client]
    make_non_preferred(topic)
    got = elect(client, PREFERRED, [(topic, 0)])
    expect_results(got, {(topic, 0): NONE}, "%s PREFERRED on %s-0" % (client, topic))
    p = wait_partition(topic, 0, lambda p: p["leader"] == 3, "leader 3 (the preferred replica)")
    assert p["replicas"][0] == p["leader"] == 3


def not_needed_and_unknown(client):
    topic = "pref-" + SHORT[client]
    ghost = "no-such-topic-" + SHORT[client]
    got = elect(client, PREFERRED, [(topic, 0), (ghost, 0), (topic, 7)])
    note(event="not_needed_and_unknown", client=client, results=repr(got))
    expect_results(got, {(topic, 0): ELECTION_NOT_NEEDED,
                         (ghost, 0): UNKNOWN_TOPIC_OR_PARTITION,
                         (topic, 7): UNKNOWN_TOPIC_OR_PARTITION},
                   "%s PREFERRED again + unknown partitions" % client)
    assert describe(topic)[0]["leader"] == 3


for _c in CLIENTS:
    TESTS.append((lambda c: (lambda: preferred_moves_leader(c)))(_c))
    TESTS[-1].__name__ = "preferred election moves the leader [%s]" % _c
for _c in CLIENTS:
    TESTS.append((lambda c: (lambda: not_needed_and_unknown(c)))(_c))
    TESTS[-1].__name__ = "election not needed, unknown topic/partition [%s]" % _c


def all_partitions(client):
    """TopicPartitions null (all partitions) with PREFERRED: Kafka answers only for the
    partitions it elected. kafka-python cannot send null: it lists every partition itself."""
    topic = "all-" + SHORT[client]
    make_non_preferred(topic)
    got = elect(client, PREFERRED, None)
    if client == "kafka-python":
        assert got["top"] in (None, 0), got
        assert got["results"][(topic, 0)] == NONE, got
        others = {k: v for k, v in got["results"].items() if k != (topic, 0)}
        assert others and all(v == ELECTION_NOT_NEEDED for v in others.values()), others
    else:
        expect_results(got, {(topic, 0): NONE}, "%s PREFERRED on all partitions" % client)
    wait_partition(topic, 0, lambda p: p["leader"] == 3, "leader 3")
    # Nothing left to elect: an empty answer.
    if client != "kafka-python":
        again = elect(client, PREFERRED, None)
        expect_results(again, {}, "%s PREFERRED on all partitions, again" % client)


for _c in CLIENTS:
    TESTS.append((lambda c: (lambda: all_partitions(c)))(_c))
    TESTS[-1].__name__ = "all partitions (null TopicPartitions) [%s]" % _c


def cluster(*args):
    p = subprocess.run(["bash", CLUSTER_SH, *args], capture_output=True, text=True, timeout=180)
    if p.returncode != 0:
        raise AssertionError("cluster.sh %s failed: %s" % (" ".join(args), p.stderr))


@test
def unclean_election():
    """Replicas [2,3]; broker 3 stops (out of the ISR), records go to 2; broker 2 stops (the
    partition has no leader, its last ISR member 2 goes to the ELR); broker 3 comes back. Then
    PREFERRED cannot elect (80), UNCLEAN elects 3 from every client, and UNCLEAN again is not
    needed (84)."""
    topics = {c: "unclean-" + SHORT[c] for c in CLIENTS}
    for t in topics.values():
        create(t, [[2, 3]])
        wait_partition(t, 0, lambda p: p["leader"] == 2 and sorted(p["isr"]) == [2, 3], "isr [2,3]")
    cluster("stop-broker", "3")
    try:
        for t in topics.values():
            wait_partition(t, 0, lambda p: p["isr"] == [2], "isr [2]")
            java("produce", "--partition", "%s:0" % t, "--count", "5")
        cluster("stop-broker", "2")
    finally:
        cluster("start-broker", "3")
    # kafka-python keeps the controller id of its first Metadata answer (broker 2, now
    # down) and fails with UnknownBrokerIdError instead of refreshing: start the Python
    # clients afresh after the brokers changed.
    close_clients()
    try:
        for c, t in topics.items():
            p = wait_partition(t, 0, lambda p: p["leader"] is None, "no leader")
            note(event="leaderless", topic=t, describe=p)
            # KIP-966 (ELR on by default in 4.4): the last ISR member, cleanly shut down,
            # moves to the ELR; the ISR is empty.
            assert p["isr"] == [] and p["elr"] == [2], p
        t = topics["java"]
        got = elect("java", PREFERRED, [(t, 0)])
        expect_results(got, {(t, 0): PREFERRED_LEADER_NOT_AVAILABLE}, "PREFERRED on a leaderless partition")
        for c, t in topics.items():
            got = elect(c, UNCLEAN, [(t, 0)])
            expect_results(got, {(t, 0): NONE}, "%s UNCLEAN on %s-0" % (c, t))
            p = wait_partition(t, 0, lambda p: p["leader"] == 3, "leader 3 (unclean)")
            note(event="after_unclean", topic=t, describe=p)
            assert p["isr"] == [3] and p["elr"] == [], p
        for c, t in topics.items():
            got = elect(c, UNCLEAN, [(t, 0)])
            expect_results(got, {(t, 0): ELECTION_NOT_NEEDED}, "%s UNCLEAN again" % c)
    finally:
        cluster("start-broker", "2")
    for t in topics.values():
        p = wait_partition(t, 0, lambda p: sorted(p["isr"]) == [2, 3], "isr [2,3] after broker 2 is back")
        assert p["leader"] == 3, p


# ---------------------------------------------------------------- captures for the corpus

def start_captures(name):
    """tcpdump (pcap) and dumpcap (pcapng, its default format; dumpcap has no -F) on lo,
    the tap ports only. Returns the running processes; a capture that cannot start is
    reported in one line and skipped."""
    flt = " or ".join("tcp port %d" % p for p in TAP_PORTS)
    procs = []
    for tool, ext, argv in (
        ("tcpdump", "pcap", ["tcpdump", "-i", "lo", "-U", "-s", "0", "-w"]),
        ("dumpcap", "pcapng", ["dumpcap", "-q", "-i", "lo", "-s", "0", "-f", flt, "-w"]),
    ):
        path = os.path.join(RUN, "%s.%s" % (name, ext))
        if shutil.which(tool) is None:
            print("capture: %s not installed, no %s" % (tool, path))
            continue
        log = open(path + ".log", "w")
        argv = argv + [path] + ([flt] if tool == "tcpdump" else [])
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        procs.append((tool, p, path))
    time.sleep(1.5)
    alive = []
    for tool, p, path in procs:
        if p.poll() is not None:
            print("capture: %s exited (%d), no %s: %s" % (tool, p.returncode, path,
                                                           open(path + ".log").read().strip()[-200:]))
        else:
            alive.append((tool, p, path))
    return alive


def stop_captures(procs):
    time.sleep(1.0)
    for _, p, _ in procs:
        p.send_signal(signal.SIGINT)
    for tool, p, _ in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return [path for _, _, path in procs if os.path.exists(path)]


@test
def corpus_capture():
    """A short capture with one successful PREFERRED election and one ELECTION_NOT_NEEDED
    from each client, whole connections (bootstrap, ApiVersions, Metadata, ElectLeaders)."""
    topic = "capture"
    create(topic, [[2, 3], [2, 3], [2, 3]])
    for p in range(3):
        wait_partition(topic, p, lambda x: sorted(x["isr"]) == [2, 3], "isr [2,3]")
        reassign(topic, p, [3, 2])
    close_clients()
    procs = start_captures("elect-leaders-kafka-4.4")
    try:
        for i, c in enumerate(CLIENTS):
            got = elect(c, PREFERRED, [(topic, i)])
            expect_results(got, {(topic, i): NONE}, "%s PREFERRED on %s-%d" % (c, topic, i))
            got = elect(c, PREFERRED, [(topic, i)])
            expect_results(got, {(topic, i): ELECTION_NOT_NEEDED}, "%s PREFERRED again" % c)
        close_clients()
    finally:
        files = stop_captures(procs)
    note(event="captures", files=files, sizes={f: os.path.getsize(f) for f in files})


def split_capture(capture, out):
    """Writes each TCP connection of `capture` as out/stream-N.c2s and .s2c, the payload bytes
    of each direction as tshark reassembles them (`-z follow,tcp,raw`). Only bytes: the
    Kafka frames in them are the Rust checker's to read."""
    os.makedirs(out, exist_ok=True)
    ids = subprocess.run(["tshark", "-r", capture, "-T", "fields", "-e", "tcp.stream"],
                         capture_output=True, text=True, check=True, timeout=120).stdout.split()
    streams = sorted({int(i) for i in ids if i.strip()})
    for n in streams:
        text = subprocess.run(["tshark", "-r", capture, "-q", "-z", "follow,tcp,raw,%d" % n],
                              capture_output=True, text=True, check=True, timeout=120).stdout
        nodes, c2s, s2c = {}, bytearray(), bytearray()
        for line in text.splitlines():
            if line.startswith("Node "):
                k, addr = line.split(": ", 1)
                nodes[k] = int(addr.rsplit(":", 1)[1])
            elif line and not line.startswith(("=", "Follow", "Filter")):
                (s2c if line.startswith("\t") else c2s).extend(bytes.fromhex(line.strip()))
        # Node 0 sent the first payload; the server side is the tap port.
        if nodes.get("Node 0") in TAP_PORTS:
            c2s, s2c = s2c, c2s
        with open(os.path.join(out, "stream-%04d.c2s" % n), "wb") as f:
            f.write(c2s)
        with open(os.path.join(out, "stream-%04d.s2c" % n), "wb") as f:
            f.write(s2c)
    return len(streams)


@test
def captures_decode():
    """The pcap and pcapng of the corpus capture hold whole connections: split into streams by
    tshark, decoded by the crate, they hold each client's two ElectLeaders requests, answered
    with NONE then ELECTION_NOT_NEEDED."""
    if shutil.which("tshark") is None:
        raise AssertionError("tshark not installed: cannot check the captures")
    for ext in ("pcap", "pcapng"):
        capture = os.path.join(RUN, "elect-leaders-kafka-4.4." + ext)
        assert os.path.exists(capture), "no capture %s (see the capture lines above)" % capture
        size = os.path.getsize(capture)
        assert size < 200_000, "%s is %d bytes" % (capture, size)
        out = os.path.join(RUN, "capture-streams", ext)
        n = split_capture(capture, out)
        p = subprocess.run([E2E_FRAMES, out], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, "e2e_frames on %s: %s" % (capture, p.stderr[-2000:])
        lines = [json.loads(l) for l in p.stdout.splitlines()]
        got = {}
        for l in lines:
            if l["kind"] == "response":
                codes = [q["error_code"] for r in l["results"] for q in r["partition_result"]]
                got.setdefault(l["client_id"], []).append(codes)
        expected = {cid: [[NONE], [ELECTION_NOT_NEEDED]] for cid in CLIENT_IDS.values()}
        assert got == expected, "%s: %r" % (capture, got)
        note(event="capture", file=os.path.basename(capture), bytes=size, streams=n,
             summary=lines[-1])


# ---------------------------------------------------------------- live capture (test_live.py)

# Before the frames' check, which then finds its elections in the tap's recordings too.
# test_live uses this module's helpers: run as a script, it is __main__, not test_e2e.
sys.modules.setdefault("test_e2e", sys.modules[__name__])
import test_live  # noqa: E402 - after the helpers it uses
TESTS.extend(test_live.TESTS)


# ---------------------------------------------------------------- the frames, decoded by the crate

@test
def frames_decode_and_match():
    """Every recorded connection splits into frames, every response pairs with a request,
    every ElectLeaders frame parses (the Rust checker's exit status), and the decoded
    ElectLeaders requests and responses are what the clients asked and reported."""
    close_clients()
    p = subprocess.run([E2E_FRAMES, TAP_DIR], capture_output=True, text=True, timeout=300)
    with open(os.path.join(RUN, "frames.jsonl"), "w", encoding="utf-8") as f:
        f.write(p.stdout)
    assert p.returncode == 0, "e2e_frames failed (%d): %s" % (p.returncode, p.stderr[-2000:])
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    summary = lines[-1]
    assert summary["kind"] == "summary" and summary["errors"] == 0, summary
    assert summary["unanswered"].get("43", 0) == 0, summary
    requests = {(l["conn"], l["correlation_id"]): l for l in lines if l["kind"] == "request"}
    responses = {(l["conn"], l["correlation_id"]): l for l in lines if l["kind"] == "response"}
    assert set(requests) == set(responses), "ElectLeaders requests without responses"
    counts = summary["frames"]["43"]
    assert counts["requests"] == counts["responses"] == len(requests)
    # Each client's elections, in the order they were made, against its frames in capture order.
    by_client = {}
    for key in sorted(requests, key=lambda k: (k[0], requests[k]["offset"])):
        by_client.setdefault(requests[key]["client_id"], []).append((requests[key], responses[key]))
    for c, cid in CLIENT_IDS.items():
        mine = [e for e in ELECTIONS if e["client_id"] == cid]
        frames = by_client.get(cid, [])
        assert frames, "no ElectLeaders frames from %s" % cid
        assert len(frames) == len(mine), "%s: %d elections, %d ElectLeaders requests" % (cid, len(mine), len(frames))
        unmatched = list(frames)
        for e in mine:
            hit = None
            for i, (rq, rs) in enumerate(unmatched):
                if frame_matches(e, rq, rs):
                    hit = i
                    break
            assert hit is not None, "%s: no frame pair for %r; left: %r" % (cid, e, unmatched)
            unmatched.pop(hit)
    versions = {l["client_id"]: l["version"] for l in requests.values()}
    note(event="frames", summary=summary, versions=versions)
    print("  frames: %d connections, %d ElectLeaders requests, versions %s, frames per API %s"
          % (summary["connections"], len(requests), versions,
             {k: v["requests"] for k, v in summary["frames"].items()}))


@test
def checker_names_damage():
    """The checker fails, naming the connection, the direction and the byte offset, on a
    recording cut inside an ElectLeaders request, and inside its response."""
    frames = [json.loads(l) for l in open(os.path.join(RUN, "frames.jsonl"), encoding="utf-8")]
    rq = next(l for l in frames if l["kind"] == "request")
    rs = next(l for l in frames if l["kind"] == "response" and l["conn"] == rq["conn"])
    for direction, offset in (("c2s", rq["offset"]), ("s2c", rs["offset"])):
        bad = os.path.join(RUN, "damaged-" + direction)
        shutil.rmtree(bad, ignore_errors=True)
        os.makedirs(bad)
        for d in ("c2s", "s2c"):
            data = open(os.path.join(TAP_DIR, "%s.%s" % (rq["conn"], d)), "rb").read()
            if d == direction:
                data = data[:offset + 10]
            open(os.path.join(bad, "%s.%s" % (rq["conn"], d)), "wb").write(data)
        p = subprocess.run([E2E_FRAMES, bad], capture_output=True, text=True, timeout=60)
        want = "%s %s offset %d:" % (rq["conn"], direction, offset)
        assert p.returncode == 1 and want in p.stderr, (p.returncode, want, p.stderr)


def frame_matches(e, rq, rs):
    if rq["election_type"] != e["type"] and not (rq["version"] == 0 and e["type"] == PREFERRED):
        return False
    tp = rq["topic_partitions"]
    if e["requested"] is None:
        if e["client"] == "kafka-python":
            # kafka-python lists every partition itself instead of sending null.
            if tp is None:
                return False
        elif tp is not None:
            return False
    else:
        sent = sorted([t["topic"], p] for t in tp for p in t["partitions"]) if tp is not None else None
        if sent != e["requested"]:
            return False
    got = {"%s:%d" % (r["topic"], p["partition_id"]): p["error_code"]
           for r in rs["results"] for p in r["partition_result"]}
    top = rs.get("error_code", 0) or None
    return got == e["results"] and top == e["top"]


# ---------------------------------------------------------------- the proxy (test_proxy.py)

if os.environ.get("PROXY_BOOTSTRAP"):
    import test_proxy
    TESTS.extend(test_proxy.TESTS)
    # The leadership-change policy (issue 35), on the same guard.
    import test_leadership
    TESTS.extend(test_leadership.TESTS)
    # Every Kafka API decided, not a list of doors (issue 42), on the same guard and the
    # allow-list guard.
    import test_doors
    TESTS.extend(test_doors.TESTS)

# ---------------------------------------------------------------- TLS, SASL and mTLS guards (test_tls.py)

if os.environ.get("TLS_BOOTSTRAP"):
    import test_tls
    TESTS.extend(test_tls.TESTS)

# ---------------------------------------------------------------- the guard rewriting broker addresses (test_rewrite.py)

if os.environ.get("REWRITE_BOOTSTRAP"):
    import test_rewrite
    TESTS.extend(test_rewrite.TESTS)


# ---------------------------------------------------------------- the guard as a fleet behind HAProxy (test_fleet.py)

if os.environ.get("FLEET_BOOTSTRAP"):
    import test_fleet
    TESTS.extend(test_fleet.TESTS)

# ---------------------------------------------------------------- two releases side by side (test_compare.py)

# Two small clusters of their own (4.4.0 and 3.9.1), started and stopped by compare.sh.
import test_compare  # noqa: E402
TESTS.extend(test_compare.TESTS)

# ---------------------------------------------------------------- a fuzz campaign (last)

def cluster_state():
    path = os.path.join(os.environ.get("E2E_DIR", os.path.join(RUN, "..")), "cluster", "state.env")
    state = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            key, _, value = line.strip().partition("=")
            state[key] = value
    return state


@test
def fuzz_campaign_short():
    """`elect-leaders fuzz`: 300 generated and mutated requests straight to broker 2 (not
    through the tap, whose recordings other tests match). No anomaly, and the broker still
    answers afterwards. Last, since requests for all partitions run real elections."""
    binary = os.environ.get("ELECT_LEADERS_BIN")
    if not binary:
        raise AssertionError("ELECT_LEADERS_BIN is not set (run.sh sets it)")
    target = "127.0.0.1:%s" % cluster_state()["CLIENT_PORT_2"]
    t0 = time.time()
    run = subprocess.run([binary, "fuzz", "--target", target, "--count", "300", "--seed", "7",
                          "--timeout", "10000", "--duration", "90"],
                         capture_output=True, text=True, timeout=150)
    summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
    note(event="fuzz_campaign", target=target, status=run.returncode, summary=summary,
         anomalies=[l for l in run.stdout.splitlines() if l.startswith("anomaly ")][:20],
         seconds=round(time.time() - t0, 1))
    assert run.returncode == 0, "fuzz found anomalies (exit %d): %s %s" % (
        run.returncode, run.stdout[-2000:], run.stderr[-500:])
    assert summary.startswith("fuzz: 300 sent"), summary
    # The broker still answers a well-formed request.
    again = subprocess.run([binary, "fuzz", "--target", target, "--count", "2", "--seed", "8"],
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and "fuzz: 2 sent" in again.stdout, again.stdout + again.stderr


def elect_raw_v1(port, topic):
    """A v1 ElectLeaders request for (topic, 0), straight to a broker; the answer decoded by
    `elect-leaders decode`."""
    import socket
    import struct
    body = (struct.pack(">bih", 0, 1, len(topic)) + topic + struct.pack(">iii", 1, 0, 60000))
    msg = struct.pack(">hhih", 43, 1, 77, 1) + b"t" + body
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(struct.pack(">i", len(msg)) + msg)
        f = s.makefile("rb")
        size = f.read(4)
        frame = size + f.read(struct.unpack(">i", size)[0])
    run = subprocess.run([os.environ["ELECT_LEADERS_BIN"], "decode", "--response", "--version", "1", "-"],
                         input=frame, capture_output=True, timeout=30)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


@test
def topic_name_too_long_for_the_error_message():
    """Found by `elect-leaders fuzz`: the controller answers an unknown topic with "No such
    topic as <name>", and for a name over 32750 bytes that message is longer than the 32767
    bytes a string can hold. Kafka 4.4.0 then fails to serialize its own answer (the
    controller logs "'errorMessage' field is too long to be serialized") and the client gets
    UNKNOWN_SERVER_ERROR instead of UNKNOWN_TOPIC_OR_PARTITION."""
    port = int(cluster_state()["CLIENT_PORT_2"])
    fits = elect_raw_v1(port, b"x" * 32750)
    p = fits["replica_election_results"][0]["partition_result"][0]
    assert fits["correlation_id"] == 77 and p["error_code"] == UNKNOWN_TOPIC_OR_PARTITION, fits["error_code"]
    assert len(p["error_message"]) == 32767, len(p["error_message"])
    over = elect_raw_v1(port, b"x" * 32751)
    q = over["replica_election_results"][0]["partition_result"][0]
    note(event="topic_name_too_long", top_level=over["error_code"], partition=q["error_code"],
         message=q["error_message"])
    assert over["correlation_id"] == 77
    assert (over["error_code"], q["error_code"]) in [(-1, -1), (NONE, UNKNOWN_TOPIC_OR_PARTITION)], over


# ---------------------------------------------------------------- runner

def main():
    print("e2e: Kafka 4.4.0, confluent-kafka %s (librdkafka %s), kafka-python %s, bootstrap %s"
          % (confluent_kafka.__version__, confluent_kafka.libversion()[0], kafka.__version__, BOOTSTRAP))
    if os.environ.get("PROXY_BOOTSTRAP"):
        print("e2e: elect-leaders proxy at %s (--deny-unclean --protect-topic %s)"
              % (os.environ["PROXY_BOOTSTRAP"], test_proxy.PROTECTED))
    if os.environ.get("TLS_BOOTSTRAP"):
        print("e2e: TLS guards at %s (SASL_SSL, --allow-principal alice) and %s (mTLS, --allow-principal %s),"
              " both --deny-unclean" % (os.environ["TLS_BOOTSTRAP"], os.environ["MTLS_BOOTSTRAP"],
                                        os.environ["MTLS_PRINCIPAL"]))
    if os.environ.get("REWRITE_BOOTSTRAP"):
        print("e2e: a guard rewriting broker addresses at %s, in front of the brokers' own listeners"
              " (ports %s), --deny-unclean, metrics at %s" % (os.environ["REWRITE_BOOTSTRAP"],
                                                              os.environ["OWN_PORTS"], os.environ["REWRITE_METRICS"]))
    only = os.environ.get("E2E_ONLY")
    passed = failed = 0
    for t in TESTS:
        name = t.__name__
        if only and only not in name and name != "frames_decode_and_match":
            continue
        t0 = time.time()
        try:
            t()
            passed += 1
            print("PASS %s (%.1fs)" % (name, time.time() - t0), flush=True)
        except Exception as e:  # noqa: BLE001 - a failed test is reported, then the next runs
            failed += 1
            print("FAIL %s (%.1fs): %s" % (name, time.time() - t0, e), flush=True)
            traceback.print_exc(file=sys.stdout)
    close_clients()
    with open(os.path.join(RUN, "elections.json"), "w", encoding="utf-8") as f:
        json.dump(ELECTIONS, f, indent=1)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
