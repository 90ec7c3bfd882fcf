"""What the guard's end-to-end modules share (test_proxy.py, test_tls.py, test_rewrite.py):
one ElectLeaders by each of the three real clients, Kafka's Java AdminTool run once,
topics made with a leader that is not the preferred one, bounded waits, the audit log, and
the list of tests each module hands to test_e2e.py.

Each module keeps what is its own: where the clients connect, as whom, with which client
ids, and what it records of each election.
"""

import json
import subprocess
import time

from confluent_kafka import ElectionType, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient
from kafka import TopicPartition as KafkaTopicPartition

PREFERRED, UNCLEAN = 0, 1

# What the guard caps in Kafka 4.4's ApiVersions list (crates/proxy/src/versions.rs):
# ElectLeaders to the codec's v2, and ShareFetch and ShareAcknowledge to v1, the newest whose
# KIP-951 node endpoints the address rewrite reads (issue 42); every other maximum is 4.4's.
API_VERSION_CAPS = {43: 2, 78: 1, 79: 1}


def capped(versions):
    """[(api key, min, max)] sorted, each max lowered to the guard's cap."""
    return sorted((key, low, min(high, API_VERSION_CAPS.get(key, high))) for key, low, high in versions)


def registry(prefix=""):
    """A module's list of tests and the decorator that adds to it: `@test(name)`."""
    tests = []

    def test(name):
        def register(fn):
            fn.__name__ = prefix + name
            tests.append(fn)
            return fn
        return register
    return tests, test


def wait_for(what, fn, timeout=30.0, interval=0.2):
    """Calls fn() -> (done, last) until done; the last value, or an AssertionError naming
    `what` and the last value after `timeout` seconds."""
    deadline = time.time() + timeout
    while True:
        ok, last = fn()
        if ok:
            return last
        if time.time() > deadline:
            raise AssertionError("timed out waiting for %s; last: %r" % (what, last))
        time.sleep(interval)


def admin_tool(admin_cp, bootstrap, cmd, *args, client_id, client_config=None, where=""):
    """Kafka's Java Admin, once (e2e.AdminTool, interop/java): its last line of JSON."""
    argv = ["java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m", "-cp", admin_cp,
            "e2e.AdminTool", cmd, "--bootstrap", bootstrap]
    if client_config:
        argv += ["--client-config", client_config]
    argv += ["--client-id", client_id, *args]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise AssertionError("AdminTool %s %s failed (%d): %s %s"
                             % (cmd, where, p.returncode, p.stdout, p.stderr))
    return json.loads(p.stdout.strip().splitlines()[-1])


def elect(client, etype, parts, java, confluent_conf, kafka_python_conf):
    """One ElectLeaders of `etype` for `parts` [(topic, partition)] by `client`: "java"
    through `java(*args)` (AdminTool elect), "confluent" with an AdminClient of
    `confluent_conf`, "kafka-python" with a KafkaAdminClient of `kafka_python_conf`.
    {"top": the whole request's error or None, "results": {(topic, partition): code},
    "messages": {(topic, partition): text}}."""
    results, messages, top = {}, {}, None
    if client == "java":
        args = ["--type", "unclean" if etype == UNCLEAN else "preferred"]
        for t, p in parts:
            args += ["--partition", "%s:%d" % (t, p)]
        out = java(*args)
        top = out["error"]["code"] if out["error"] else None
        for r in out["results"] or []:
            key = (r["topic"], r["partition"])
            results[key] = r["error"]["code"] if r["error"] else 0
            messages[key] = r["error"]["message"] if r["error"] else None
    elif client == "confluent":
        a = AdminClient(confluent_conf)
        et = ElectionType.UNCLEAN if etype == UNCLEAN else ElectionType.PREFERRED
        try:
            r = a.elect_leaders(et, [TopicPartition(t, p) for t, p in parts]).result(timeout=60)
            for tp, e in r.items():
                if isinstance(e, KafkaException):
                    e = e.args[0]
                results[(tp.topic, tp.partition)] = e.code() if e is not None else 0
                messages[(tp.topic, tp.partition)] = e.str() if e is not None else None
        except KafkaException as e:
            top = e.args[0].code()
    elif client == "kafka-python":
        a = KafkaAdminClient(**kafka_python_conf)
        try:
            tps = {}
            for t, p in parts:
                tps.setdefault(t, []).append(p)
            resp = a.elect_leaders(etype, tps, timeout_ms=30000, raise_errors=False)
            top = resp.error_code or None
            for res in resp.replica_election_results:
                for pr in res.partition_result:
                    results[(res.topic, pr.partition_id)] = pr.error_code
                    messages[(res.topic, pr.partition_id)] = pr.error_message
        finally:
            a.close()
    else:
        raise ValueError("no such client: %r" % client)
    return {"top": top, "results": results, "messages": messages}


def audit_lines(path, every=False):
    """The guard's audit log, one JSON object per line: its ElectLeaders decisions, or with
    `every` also the leadership-change decisions (lines with an `api_name`); never the
    audit chain's start, which the guard writes first at each start."""
    with open(path, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    lines = [a for a in lines if a.get("event") != "chain-start"]
    return lines if every else [a for a in lines if "api_name" not in a]


class Topics:
    """Topics made and watched through a guard: metadata and creation by librdkafka's
    AdminClient `admin()`, reassignment by kafka-python's `reassigner()` (each a function
    that returns the module's client, kept open)."""

    def __init__(self, admin, reassigner):
        self.admin = admin
        self.reassigner = reassigner

    def describe(self, topic):
        """[{"partition", "leader", "replicas", "isr"}], or None while the topic is not
        (yet) known."""
        t = self.admin().list_topics(topic, timeout=20).topics.get(topic)
        if t is None or t.error is not None:
            return None
        return [{"partition": p.id, "leader": p.leader, "replicas": list(p.replicas),
                 "isr": sorted(p.isrs)}
                for p in sorted(t.partitions.values(), key=lambda p: p.id)]

    def wait_partitions(self, topic, pred, what, count=None):
        def check():
            d = self.describe(topic)
            return (d is not None and (count is None or len(d) == count)
                    and all(pred(p) for p in d)), d
        return wait_for("%s of %s" % (what, topic), check)

    def create(self, topic, assignment):
        new = NewTopic(topic, num_partitions=len(assignment), replication_factor=-1,
                       replica_assignment=assignment)
        self.admin().create_topics([new], operation_timeout=30)[topic].result(timeout=60)

    def make_non_preferred(self, topic, partitions=1):
        """Replicas [2,3] reassigned to [3,2]: the leader stays 2, no longer the preferred
        one."""
        self.create(topic, [[2, 3]] * partitions)
        self.wait_partitions(topic, lambda p: p["leader"] == 2 and p["isr"] == [2, 3],
                             "isr [2,3]", partitions)
        result = self.reassigner().alter_partition_reassignments(
            {KafkaTopicPartition(topic, p): [3, 2] for p in range(partitions)}, timeout_ms=30000)
        assert all(e is None for e in result.values()), result
        d = self.wait_partitions(topic, lambda p: p["replicas"] == [3, 2] and p["isr"] == [2, 3],
                                 "replicas [3,2]", partitions)
        assert all(p["leader"] == 2 for p in d), d
