"""End-to-end tests of `elect-leaders proxy` on the real cluster, with real clients.

run.sh starts the proxy (--deny-unclean --protect-topic guarded, audit log in PROXY_AUDIT)
in front of a second tap (PROXY_TAP_DIR: what reaches the brokers), and the brokers
advertise the proxy's addresses on a listener of their own (PROXY_BOOTSTRAP), so clients
that bootstrap through the proxy stay on it. test_e2e.py runs these tests after its own
(TESTS below), in the same summary.

As in test_e2e.py, no Kafka frame is parsed here: the clients (Kafka's Java Admin,
confluent-kafka, kafka-python) do that, and what reached the brokers is decoded by the
crate (examples/e2e_frames.rs). The one exception is the pipelining test, which drives
kafka-python's own protocol layer (KafkaProtocol: it encodes the requests and checks that
the answers come back in request order) on a socket of its own.
"""

import json
import os
import socket
import subprocess
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.admin.topics import ElectLeadersRequest
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.parser import KafkaProtocol

import e2e_common as common
from e2e_common import PREFERRED, UNCLEAN, admin_tool, registry, wait_for

PROXY = os.environ.get("PROXY_BOOTSTRAP", "")
AUDIT = os.environ.get("PROXY_AUDIT", "")
PROXY_TAP_DIR = os.environ.get("PROXY_TAP_DIR", "")
PROXY_LOG = os.environ.get("PROXY_LOG", "")
ADMIN_CP = os.environ.get("ADMIN_CP", "")
E2E_FRAMES = os.environ.get("E2E_FRAMES", "")

NONE, POLICY_VIOLATION, ELECTION_NOT_NEEDED = 0, 44, 84
PROTECTED = "guarded"
CLIENT_IDS = {"java": "px-java", "confluent": "px-confluent", "kafka-python": "px-kafka-python"}


def java(cmd, *args, client_id="px-java-setup"):
    return admin_tool(ADMIN_CP, PROXY, cmd, *args, client_id=client_id, where="through the proxy")


def describe(topic):
    return java("describe", "--topic", topic)["topics"][topic]


def wait_partitions(topic, pred, what, timeout=30.0):
    def check():
        d = describe(topic)
        return (d is not None and all(pred(p) for p in d)), d
    return wait_for("%s of %s" % (what, topic), check, timeout)


def audit_lines():
    return common.audit_lines(AUDIT)


def elect(client, etype, parts):
    """One ElectLeaders through the proxy; {"top": whole-request error or None,
    "results": {(topic, partition): code}, "messages": {(topic, partition): text}}."""
    cid = CLIENT_IDS[client]
    return common.elect(
        client, etype, parts,
        java=lambda *args: java("elect", *args, client_id=cid),
        confluent_conf={"bootstrap.servers": PROXY, "client.id": cid, "log_level": 3},
        kafka_python_conf={"bootstrap_servers": PROXY, "client_id": cid, "request_timeout_ms": 30000})


def create(topic, assignment):
    java("create", "--topic", topic, "--assignment", "/".join(",".join(map(str, r)) for r in assignment))


def make_non_preferred(topic, partitions=1):
    """Replicas [2,3] reassigned to [3,2]: the leader stays 2, no longer the preferred one."""
    create(topic, [[2, 3]] * partitions)
    wait_partitions(topic, lambda p: p["leader"] == 2 and sorted(p["isr"]) == [2, 3], "isr [2,3]")
    # A protected topic's reassignment is refused by the guard (test_leadership.py): set up
    # directly, through the tap.
    move = java if topic != PROTECTED else (
        lambda cmd, *args: admin_tool(ADMIN_CP, os.environ["BOOTSTRAP"], cmd, *args,
                                      client_id="px-java-setup", where="directly"))
    for p in range(partitions):
        move("reassign", "--partition", "%s:%d" % (topic, p), "--replicas", "3,2")
    d = wait_partitions(topic, lambda p: p["replicas"] == [3, 2] and sorted(p["isr"]) == [2, 3],
                        "replicas [3,2]")
    assert all(p["leader"] == 2 for p in d), d


TESTS, test = registry("proxy: ")


@test("an allowed preferred election moves the leader [java]")
def preferred_moves_leader():
    topic = "px-pref"
    make_non_preferred(topic)
    got = elect("java", PREFERRED, [(topic, 0)])
    assert got["top"] is None and got["results"] == {(topic, 0): NONE}, got
    wait_partitions(topic, lambda p: p["leader"] == 3, "leader 3 (the preferred replica)")
    mine = [a for a in audit_lines() if a["client_id"] == CLIENT_IDS["java"]]
    assert mine and mine[-1]["verdict"] == "forwarded" and mine[-1]["rules"] == [], mine
    assert mine[-1]["partitions"] == [{"topic": topic, "partitions": [0]}], mine[-1]


@test("an unclean election is refused per partition, the broker never sees it [java, confluent, kafka-python]")
def unclean_refused():
    topic = "px-unclean"
    create(topic, [[2, 3]])
    before = wait_partitions(topic, lambda p: p["leader"] == 2 and sorted(p["isr"]) == [2, 3], "isr [2,3]")
    for client in CLIENT_IDS:
        got = elect(client, UNCLEAN, [(topic, 0)])
        assert got["top"] is None, "%s: whole request failed: %r" % (client, got)
        assert got["results"] == {(topic, 0): POLICY_VIOLATION}, "%s: %r" % (client, got)
        assert "only PREFERRED elections are allowed" in (got["messages"][(topic, 0)] or ""), "%s: %r" % (client, got)
    time.sleep(1.0)
    after = describe(topic)
    assert [(p["leader"], p["isr"], p["replicas"]) for p in after] == \
        [(p["leader"], p["isr"], p["replicas"]) for p in before], (before, after)
    refused = [a for a in audit_lines() if a["partitions"] == [{"topic": topic, "partitions": [0]}]]
    assert sorted(a["client_id"] for a in refused) == sorted(CLIENT_IDS.values()), refused
    for a in refused:
        assert (a["verdict"], a["rules"], a["election_type"]) == ("refused", ["deny-unclean"], "UNCLEAN"), a
    # That no ElectLeaders UNCLEAN reached a broker is checked on the recordings, last.


@test("a protected topic next to an allowed one: elected and refused in one answer [java, confluent, kafka-python]")
def protected_and_allowed():
    free = "px-free"
    make_non_preferred(PROTECTED)
    make_non_preferred(free, partitions=3)
    for i, client in enumerate(CLIENT_IDS):
        got = elect(client, PREFERRED, [(PROTECTED, 0), (free, i)])
        assert got["top"] is None, "%s: %r" % (client, got)
        assert got["results"] == {(free, i): NONE, (PROTECTED, 0): POLICY_VIOLATION}, "%s: %r" % (client, got)
        assert "leaders of this topic are protected" in (got["messages"][(PROTECTED, 0)] or ""), got
    d = wait_partitions(free, lambda p: p["leader"] == 3, "leader 3 on every partition")
    g = describe(PROTECTED)
    assert g[0]["leader"] == 2 and g[0]["replicas"] == [3, 2], g
    trimmed = [a for a in audit_lines() if a["verdict"] == "trimmed"]
    assert sorted(a["client_id"] for a in trimmed) == sorted(CLIENT_IDS.values()), trimmed
    for a in trimmed:
        assert a["rules"] == ["protect-topic"] and a["refused"] == [{"topic": PROTECTED, "partitions": [0]}], a
    assert d


@test("100,000 records produced and consumed through the proxy, byte-identical; create and describe work [confluent]")
def records_round_trip():
    topic = "px-records"
    admin = AdminClient({"bootstrap.servers": PROXY, "client.id": "px-records-admin", "log_level": 3})
    # CreateTopics through the proxy from two clients: librdkafka and Kafka's Java Admin
    # (one partition led by each broker, so both proxy listeners carry records).
    fs = admin.create_topics([NewTopic("px-created", num_partitions=2, replication_factor=2)],
                             operation_timeout=30)
    fs["px-created"].result(timeout=60)
    create(topic, [[2], [3]])
    d = wait_partitions(topic, lambda p: p["leader"] is not None, "leaders")
    assert [p["leader"] for p in d] == [2, 3], d
    n = 100_000
    sent = {}
    producer = Producer({"bootstrap.servers": PROXY, "client.id": "px-producer", "linger.ms": 20,
                         "batch.num.messages": 10000, "acks": "all", "log_level": 3})
    for i in range(n):
        key = b"k%06d" % i
        # Every byte value, shifted by i, so that any corruption shows.
        value = bytes((i + j) % 256 for j in range(64)) + key
        sent[key] = value
        while True:
            try:
                producer.produce(topic, value=value, key=key, partition=i % 2)
                break
            except BufferError:
                producer.poll(0.05)
    left = producer.flush(60)
    assert left == 0, "%d records not delivered" % left
    consumer = Consumer({"bootstrap.servers": PROXY, "group.id": "px-records", "client.id": "px-consumer",
                         "enable.auto.commit": False, "log_level": 3})
    consumer.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
    got = {}
    deadline = time.time() + 90
    try:
        while len(got) < n and time.time() < deadline:
            for m in consumer.consume(num_messages=10000, timeout=1.0):
                assert m.error() is None, m.error()
                assert m.key() not in got, "duplicate %r" % m.key()
                got[m.key()] = m.value()
    finally:
        consumer.close()
    assert len(got) == n, "consumed %d of %d" % (len(got), n)
    bad = [k for k in sent if got.get(k) != sent[k]]
    assert not bad, "%d records differ, e.g. %r" % (len(bad), bad[:3])
    md = admin.list_topics(timeout=30)
    assert sorted(md.topics[topic].partitions) == [0, 1]
    assert sorted(md.topics["px-created"].partitions) == [0, 1]
    assert {b.port for b in md.brokers.values()} == {int(a.rsplit(":", 1)[1]) for a in PROXY.split(",")}, \
        "the brokers advertise other addresses than the proxy's: %r" % md.brokers


@test("pipelined requests on one connection keep their order, a refusal waits behind a long poll [kafka-python protocol]")
def pipelined_order():
    topic = "px-pipe"
    create(topic, [[2]])  # leader 2, behind the first proxy listener
    wait_partitions(topic, lambda p: p["leader"] == 2, "leader 2")
    host, port = PROXY.split(",")[0].rsplit(":", 1)
    proto = KafkaProtocol(client_id="px-pipeline")
    fetch = FetchRequest[11](
        replica_id=-1, max_wait_ms=1500, min_bytes=1 << 20, max_bytes=1 << 20, isolation_level=0,
        session_id=0, session_epoch=-1,
        topics=[FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchTopic.FetchPartition(
            partition=0, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
            partition_max_bytes=1 << 20)])],
        forgotten_topics_data=[], rack_id="")
    unclean = ElectLeadersRequest[2](election_type=UNCLEAN, timeout_ms=30000, topic_partitions=[
        ElectLeadersRequest.TopicPartitions(topic=topic, partitions=[0])])
    metadata = MetadataRequest[12](topics=None, allow_auto_topic_creation=False,
                                   include_topic_authorized_operations=False)
    preferred = ElectLeadersRequest[2](election_type=PREFERRED, timeout_ms=30000, topic_partitions=[
        ElectLeadersRequest.TopicPartitions(topic=topic, partitions=[0])])
    versions = ApiVersionsRequest[3](client_software_name="px", client_software_version="1")
    ids = [proto.send_request(r) for r in (fetch, unclean, metadata, preferred, versions)]
    s = socket.create_connection((host, int(port)), timeout=30)
    try:
        t0 = time.time()
        s.sendall(proto.send_bytes())
        answers = []  # (seconds after sending, correlation id, response)
        while len(answers) < len(ids):
            data = s.recv(1 << 20)
            assert data, "the proxy closed the connection after %d answers" % len(answers)
            # KafkaProtocol raises CorrelationIdError on an answer out of order.
            for cid, resp in proto.receive_bytes(data):
                answers.append((time.time() - t0, cid, resp))
    finally:
        s.close()
    assert [a[1] for a in answers] == ids, answers
    waited = answers[0][0]
    assert waited >= 1.2, "the fetch came back after %.2fs: not a long poll" % waited
    assert answers[1][0] >= waited, "the refusal overtook the fetch"
    refused = answers[1][2]
    codes = [(r.topic, p.partition_id, p.error_code) for r in refused.replica_election_results
             for p in r.partition_result]
    assert refused.error_code == 0 and codes == [(topic, 0, POLICY_VIOLATION)], refused
    forwarded = answers[3][2]
    codes = [(r.topic, p.partition_id, p.error_code) for r in forwarded.replica_election_results
             for p in r.partition_result]
    assert codes == [(topic, 0, ELECTION_NOT_NEEDED)], forwarded
    print("  pipelined: fetch answered after %.2fs, then %s" % (
        waited, ", ".join("%d@%.2fs" % (a[1], a[0]) for a in answers[1:])))


def api_versions_at(address, version):
    """The ApiVersions answer at `version` from `address`, through kafka-python's protocol."""
    host, port = address.rsplit(":", 1)
    proto = KafkaProtocol(client_id="px-versions")
    request = (ApiVersionsRequest[version](client_software_name="px", client_software_version="1")
               if version >= 3 else ApiVersionsRequest[version]())
    proto.send_request(request)
    s = socket.create_connection((host, int(port)), timeout=30)
    try:
        s.sendall(proto.send_bytes())
        while True:
            data = s.recv(1 << 16)
            assert data, "%s closed the connection" % address
            for _, response in proto.receive_bytes(data):
                return response
    finally:
        s.close()


@test("ApiVersions through the proxy: the real broker's API list unchanged but for the caps (ElectLeaders v2, ShareFetch and ShareAcknowledge v1) [kafka-python protocol]")
def api_versions_through_the_proxy():
    direct = os.environ["BOOTSTRAP"].split(",")[0]
    proxied = PROXY.split(",")[0]
    for version in range(5):
        want = common.capped((k.api_key, k.min_version, k.max_version)
                             for k in api_versions_at(direct, version).api_keys)
        got = sorted((k.api_key, k.min_version, k.max_version)
                     for k in api_versions_at(proxied, version).api_keys)
        assert got == want, "ApiVersions v%d changed by the proxy: %r" % (
            version, sorted(set(got) ^ set(want)))
        elect = [k for k in got if k[0] == 43]
        assert elect and elect[0][2] <= 2, elect
    print("  ApiVersions v0-v4: %d APIs, identical through the proxy; ElectLeaders %r" % (
        len(got), elect[0]))


@test("what reached the brokers: no unclean election, no protected topic, nothing malformed")
def frames_behind_the_proxy():
    p = subprocess.run([E2E_FRAMES, PROXY_TAP_DIR], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, "e2e_frames on the proxy's tap: %s" % p.stderr[-2000:]
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    summary = lines[-1]
    assert summary["kind"] == "summary" and summary["errors"] == 0, summary
    requests = [l for l in lines if l["kind"] == "request"]
    assert requests, "no ElectLeaders request reached the brokers through the proxy"
    for r in requests:
        assert r["election_type"] != UNCLEAN, "an UNCLEAN election reached a broker: %r" % r
        topics = [t["topic"] for t in r["topic_partitions"] or []]
        assert PROTECTED not in topics, "the protected topic reached a broker: %r" % r
        assert r["topic_partitions"] is not None, "an election of all partitions reached a broker: %r" % r
    audit = audit_lines()
    passed = [a for a in audit if a["verdict"] in ("forwarded", "trimmed")]
    assert len(requests) == len(passed), "%d ElectLeaders requests recorded, %d forwarded or trimmed" % (
        len(requests), len(passed))
    with open(PROXY_LOG, encoding="utf-8") as f:
        log = f.read()
    assert "malformed" not in log, log[-2000:]
    print("  behind the proxy: %d ElectLeaders requests of %d decisions (%s); frames per API %s" % (
        len(requests), len(audit), ", ".join("%s %d" % (v, sum(a["verdict"] == v for a in audit))
                                              for v in ("forwarded", "trimmed", "refused")),
        {k: v["requests"] for k, v in summary["frames"].items()}))
