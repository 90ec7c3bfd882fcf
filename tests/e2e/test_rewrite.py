"""End-to-end tests of the guard's broker-address rewriting and its metrics (issue 25).

The brokers have a listener of their own, OWN (cluster.sh with OWN=1), advertised as the
address it listens on, as brokers do by default: nothing in the cluster names this guard.
run.sh starts the guard after the cluster, one `--listen 127.0.0.1:0 --upstream
127.0.0.1:<OWN port>` per broker, `--deny-unclean`, audit log REWRITE_AUDIT, metrics at
REWRITE_METRICS; the clients are given only its listeners (REWRITE_BOOTSTRAP) and learn
every other broker address from the guard's rewritten Metadata, FindCoordinator and
DescribeCluster answers.

That every client connection went through the guard is checked from the brokers' side, so
that no client can be forgotten: run.sh captures every SYN sent to an OWN port from the
cluster's start (tcpdump on lo, OWN_SYN_PCAP), and runs the guard under strace, which
records the addresses of each of the guard's TCP sockets (`-yy`: the guard sets
TCP_NODELAY on each broker connection right after its connect, and strace prints the
socket as local->remote, REWRITE_STRACE). Every SYN's source port must be one of the
guard's sockets to that port. `ss -tnp` shows the same for the connections open at the
time of the check, and the taps in front of the brokers' other plaintext listeners show no
request with these clients' ids.

Then a scrape of `/metrics` must count, number for number, the elections this module made
through the guard (its own list, DECISIONS), and the audit log must hold the same.

test_e2e.py runs these tests after test_tls.py's, in the same summary.
"""

import collections
import os
import re
import subprocess
import time
import urllib.request

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition

import e2e_common as common
from e2e_common import PREFERRED, UNCLEAN, Topics, admin_tool, registry

GUARD = os.environ.get("REWRITE_BOOTSTRAP", "")
METRICS = os.environ.get("REWRITE_METRICS", "")
AUDIT = os.environ.get("REWRITE_AUDIT", "")
GUARD_LOG = os.environ.get("REWRITE_LOG", "")
GUARD_PID = os.environ.get("REWRITE_PID", "")
STRACE = os.environ.get("REWRITE_STRACE", "")
SYN_PCAP = os.environ.get("OWN_SYN_PCAP", "")
OWN_PORTS = [int(p) for p in os.environ.get("OWN_PORTS", "").split(",") if p]
ADMIN_CP = os.environ.get("ADMIN_CP", "")
E2E_DIR = os.environ.get("E2E_DIR", "")

NONE, POLICY_VIOLATION = 0, 44
CLIENTS = ("java", "confluent", "kafka-python")
# Every client id of this module starts with it: the taps' recordings are searched for it.
PREFIX = "rewrite-e2e-"
# What this module asked the guard to decide: (client, election type, partitions, verdict).
DECISIONS = []


def guard_addresses():
    """{broker id: the guard's listener in front of it}: the first --listen is paired with
    broker 2's OWN listener, the second with broker 3's (run.sh)."""
    first, second = GUARD.split(",")
    return {2: first, 3: second}


def cid(name):
    return PREFIX + name


def java(cmd, *args, client_id="java-setup"):
    return admin_tool(ADMIN_CP, GUARD, cmd, *args, client_id=cid(client_id),
                      where="through the rewriting guard")


_ADMIN = {}


def admin():
    """librdkafka's admin client, kept open to the end (its connections are the ones `ss`
    sees in the connection test)."""
    if "confluent" not in _ADMIN:
        _ADMIN["confluent"] = AdminClient({"bootstrap.servers": GUARD, "client.id": cid("setup"),
                                           "log_level": 3})
    return _ADMIN["confluent"]


def reassigner():
    if "kafka-python" not in _ADMIN:
        _ADMIN["kafka-python"] = KafkaAdminClient(bootstrap_servers=GUARD.split(","),
                                                  client_id=cid("setup-kp"), request_timeout_ms=30000)
    return _ADMIN["kafka-python"]


TOPICS = Topics(admin, reassigner)
describe = TOPICS.describe
wait_partitions = TOPICS.wait_partitions
create = TOPICS.create
make_non_preferred = TOPICS.make_non_preferred


def elect(client, etype, parts, verdict):
    """One ElectLeaders through the guard, which should decide `verdict`; {"top", "results":
    {(topic, partition): code}, "messages": {(topic, partition): text}}."""
    client_id = cid("elect-" + client)
    got = common.elect(
        client, etype, parts,
        java=lambda *args: java("elect", *args, client_id="elect-java"),
        confluent_conf={"bootstrap.servers": GUARD, "client.id": client_id, "log_level": 3},
        kafka_python_conf={"bootstrap_servers": GUARD.split(","), "client_id": client_id,
                           "request_timeout_ms": 30000})
    DECISIONS.append({"client": client, "client_id": client_id, "type": etype, "partitions": list(parts),
                      "verdict": verdict})
    return got


def audit_lines():
    return common.audit_lines(AUDIT)


TESTS, test = registry()


# ---------------------------------------------------------------- the tests

@test("rewrite: the brokers advertise their own addresses; Java Admin describeCluster, librdkafka and kafka-python are told only the guard's [java, confluent, kafka-python]")
def cluster_told_through_the_guard():
    want = guard_addresses()
    # What the brokers advertise on OWN, read from their configuration (not asked: a
    # direct connection would spoil the connection test below).
    for broker, port in zip((2, 3), OWN_PORTS):
        with open(os.path.join(E2E_DIR, "cluster", "node-%d.properties" % broker), encoding="utf-8") as f:
            props = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
        advertised = props["advertised.listeners"].split(",")
        assert "OWN://127.0.0.1:%d" % port in advertised, advertised
        named = {e.split("://", 1)[1] for e in advertised + props["listeners"].split(",")}
        assert not named & set(want.values()), (named, want)
    told = java("cluster", client_id="describe-cluster")
    assert {n["id"]: "%s:%d" % (n["host"], n["port"]) for n in told["nodes"]} == want, told
    controller = told["controller"]
    assert controller and want.get(controller["id"]) == "%s:%d" % (controller["host"], controller["port"]), told
    d = admin().describe_cluster(request_timeout=20).result(timeout=30)
    assert {n.id: "%s:%d" % (n.host, n.port) for n in d.nodes} == want, d
    assert d.cluster_id == told["cluster_id"], (d.cluster_id, told)
    md = admin().list_topics(timeout=20)
    assert {b.id: "%s:%d" % (b.host, b.port) for b in md.brokers.values()} == want, md.brokers
    kp = reassigner().describe_cluster()
    assert {b["broker_id"]: "%s:%d" % (b["host"], b["port"]) for b in kp["brokers"]} == want, kp
    print("  brokers advertise 127.0.0.1:%s on OWN; told as %s (Java and kafka-python describeCluster,"
          " librdkafka describe_cluster, which asks with Metadata, and its Metadata)" % (
              ", 127.0.0.1:".join(map(str, OWN_PORTS)), want))


@test("rewrite: records produced by all three clients and consumed in consumer groups (FindCoordinator) by librdkafka and kafka-python, byte-identical")
def records_and_groups():
    topic = "rewrite-records"
    create(topic, [[2], [3]])  # one partition led by each broker: both guard listeners carry records
    d = wait_partitions(topic, lambda p: p["leader"] is not None, "leaders", 2)
    assert [p["leader"] for p in d] == [2, 3], d
    sent = {}
    producer = Producer({"bootstrap.servers": GUARD, "client.id": cid("producer-ck"), "linger.ms": 20,
                         "acks": "all", "log_level": 3})
    for i in range(10_000):
        key = b"c%06d" % i
        value = bytes((i + j) % 256 for j in range(64)) + key  # every byte value, shifted by i
        sent[key] = value
        while True:
            try:
                producer.produce(topic, value=value, key=key, partition=i % 2)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0, "records not delivered"
    kp = KafkaProducer(bootstrap_servers=GUARD.split(","), client_id=cid("producer-kp"), acks="all")
    try:
        for i in range(1000):
            key = b"p%04d" % i
            value = bytes((7 * i + j) % 256 for j in range(256))
            sent[key] = value
            kp.send(topic, key=key, value=value, partition=i % 2)
        kp.flush(timeout=60)
    finally:
        kp.close()
    java("produce", "--partition", topic + ":1", "--count", "10", client_id="producer-java")
    sent.update({b"k%d" % i: b"v%d" % i for i in range(10)})

    # kafka-python in a group of its own: it subscribes, the coordinator (FindCoordinator)
    # assigns it both partitions, it commits.
    consumer = KafkaConsumer(bootstrap_servers=GUARD.split(","), client_id=cid("consumer-kp"),
                             group_id=PREFIX + "group-kp", enable_auto_commit=False,
                             auto_offset_reset="earliest")
    got = {}
    try:
        consumer.subscribe([topic])
        deadline = time.time() + 60
        while len(got) < len(sent) and time.time() < deadline:
            for records in consumer.poll(timeout_ms=1000, max_records=5000).values():
                for r in records:
                    assert r.key not in got, "kafka-python: duplicate %r" % r.key
                    got[r.key] = r.value
        consumer.commit()
    finally:
        consumer.close()
    assert len(got) == len(sent), "kafka-python consumed %d of %d" % (len(got), len(sent))
    bad = [k for k in sent if got[k] != sent[k]]
    assert not bad, "kafka-python: %d records differ, e.g. %r" % (len(bad), bad[:3])

    group = PREFIX + "group-ck"
    consumer = Consumer({"bootstrap.servers": GUARD, "group.id": group, "client.id": cid("consumer-ck"),
                         "enable.auto.commit": False, "auto.offset.reset": "earliest", "log_level": 3})
    got = {}
    try:
        consumer.subscribe([topic])
        deadline = time.time() + 60
        while len(got) < len(sent) and time.time() < deadline:
            for m in consumer.consume(num_messages=10000, timeout=1.0):
                assert m.error() is None, m.error()
                assert m.key() not in got, "librdkafka: duplicate %r" % m.key()
                got[m.key()] = m.value()
        consumer.commit(asynchronous=False)
        # The committed offsets, read back from the coordinator, are the partitions' ends.
        ends = [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=20)[1] for p in (0, 1)]
        committed = consumer.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=20)
        assert [c.offset for c in committed] == ends, (committed, ends)
        assert sum(ends) == len(sent), (ends, len(sent))
    finally:
        consumer.close()
    assert len(got) == len(sent), "librdkafka consumed %d of %d" % (len(got), len(sent))
    bad = [k for k in sent if got[k] != sent[k]]
    assert not bad, "librdkafka: %d records differ, e.g. %r" % (len(bad), bad[:3])
    # kafka-python's group committed too.
    offsets = reassigner().list_group_offsets(PREFIX + "group-kp")[PREFIX + "group-kp"]
    assert {tp.partition: o.offset for tp, o in offsets.items() if tp.topic == topic} == \
        {0: ends[0], 1: ends[1]}, offsets
    print("  %d records (10,000 by librdkafka, 1,000 by kafka-python, 10 by Java), consumed by two groups" % len(sent))


@test("rewrite: preferred elections through the guard move the leaders [java, confluent, kafka-python]")
def preferred_elections():
    topic = "rewrite-pref"
    make_non_preferred(topic, len(CLIENTS))
    for i, client in enumerate(CLIENTS):
        got = elect(client, PREFERRED, [(topic, i)], "forwarded")
        assert got["top"] is None and got["results"] == {(topic, i): NONE}, "%s: %r" % (client, got)
    wait_partitions(topic, lambda p: p["leader"] == 3, "leader 3 (the preferred replica) everywhere", len(CLIENTS))


@test("rewrite: UNCLEAN elections refused per partition with POLICY_VIOLATION (44) [java, confluent, kafka-python]")
def unclean_refused():
    topic = "rewrite-unclean"
    create(topic, [[2, 3], [2, 3]])
    before = wait_partitions(topic, lambda p: p["leader"] == 2 and p["isr"] == [2, 3], "isr [2,3]", 2)
    # librdkafka names both partitions: the refused-partitions counter counts 4, not 3.
    asks = {"java": [(topic, 0)], "confluent": [(topic, 0), (topic, 1)], "kafka-python": [(topic, 1)]}
    for client, parts in asks.items():
        got = elect(client, UNCLEAN, parts, "refused")
        assert got["top"] is None and got["results"] == {tp: POLICY_VIOLATION for tp in parts}, \
            "%s: %r" % (client, got)
        for tp in parts:
            assert "only PREFERRED elections are allowed" in (got["messages"][tp] or ""), "%s: %r" % (client, got)
    assert describe(topic) == before, (before, describe(topic))


@test("rewrite: leaders move while all three clients produce and fetch; KIP-951 NodeEndpoints name the guard (issue 42) [java, confluent, kafka-python]")
def leaders_move_during_produce_and_fetch():
    """Produce (v10+) and Fetch (v16+) answers to a request sent to a former leader carry
    the new leader's address (KIP-951 NodeEndpoints), which librdkafka connected to
    directly at fc8327b. Here the leader of one partition moves from broker 2 to 3 and
    back while each client produces and fetches; every record is delivered and read, and
    `only_the_guard_connects` (next) proves no socket reached a broker but the guard's."""
    import threading
    topic = "rewrite-moving"
    create(topic, [[2, 3]])
    wait_partitions(topic, lambda p: p["leader"] == 2 and p["isr"] == [2, 3], "isr [2,3]", 1)
    stop = threading.Event()
    produced = collections.Counter()
    errors = []

    def confluent_producer():
        p = Producer({"bootstrap.servers": GUARD, "client.id": cid("moving-producer-ck"), "acks": "all",
                      "linger.ms": 5, "log_level": 3})
        i = 0
        while not stop.is_set():
            p.produce(topic, value=b"ck%d" % i, partition=0,
                      on_delivery=lambda e, m: errors.append(("confluent", e)) if e else
                      produced.update(["confluent"]))
            p.poll(0.02)
            i += 1
        if p.flush(60) != 0:
            errors.append(("confluent", "not flushed"))

    def kafka_python_producer():
        p = KafkaProducer(bootstrap_servers=GUARD.split(","), client_id=cid("moving-producer-kp"), acks="all",
                          retries=20)
        try:
            i = 0
            while not stop.is_set():
                p.send(topic, value=b"kp%d" % i, partition=0).get(timeout=60)
                produced.update(["kafka-python"])
                i += 1
                time.sleep(0.02)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(("kafka-python", e))
        finally:
            p.close()

    consumed = {}
    # Consumers read until the producers are done and they have every record (or a minute).
    target = {"n": None}

    def reading(n):
        return (target["n"] is None or n < target["n"]) and time.time() < reading_deadline[0]
    reading_deadline = [time.time() + 180]

    def confluent_consumer():
        c = Consumer({"bootstrap.servers": GUARD, "group.id": PREFIX + "moving-ck", "client.id":
                      cid("moving-consumer-ck"), "enable.auto.commit": False, "log_level": 3})
        n = 0
        try:
            c.assign([TopicPartition(topic, 0, 0)])
            while reading(n):
                n += sum(1 for m in c.consume(num_messages=1000, timeout=0.5) if m.error() is None)
        finally:
            c.close()
        consumed["confluent"] = n

    def kafka_python_consumer():
        c = KafkaConsumer(bootstrap_servers=GUARD.split(","), client_id=cid("moving-consumer-kp"),
                          enable_auto_commit=False, auto_offset_reset="earliest")
        n = 0
        try:
            c.assign([KafkaTopicPartition(topic, 0)])
            c.seek_to_beginning()
            while reading(n):
                n += sum(len(r) for r in c.poll(timeout_ms=500).values())
        finally:
            c.close()
        consumed["kafka-python"] = n

    java_out = {}

    def java_clients():
        java_out["produce"] = java("produce", "--partition", topic + ":0", "--count", "250",
                                   "--interval-ms", "30", client_id="moving-producer-java")
        java_out["consume"] = java("consume", "--partition", topic + ":0", "--duration-ms", "3000",
                                   client_id="moving-consumer-java")

    def rewrites_beyond_lists():
        """Rewrites counted, less the Metadata, FindCoordinator and DescribeCluster answers
        (each rewritten at most once): what remains are data-path answers rewritten."""
        samples = scrape()
        count = samples.get(("elect_leaders_guard_address_rewrites_total", ()), 0)
        lists = sum(samples.get(("elect_leaders_guard_frames_total",
                                 (("api", api), ("direction", "response"))), 0)
                    for api in ("Metadata", "FindCoordinator", "DescribeCluster"))
        return count - lists

    beyond_before = rewrites_beyond_lists()
    threads = [threading.Thread(target=f) for f in
               (confluent_producer, kafka_python_producer, confluent_consumer, kafka_python_consumer, java_clients)]
    for t in threads:
        t.start()
    try:
        # The leader moves to 3 and back to 2, each by a reassignment and a preferred election
        # through the guard.
        for replicas, leader in (("3,2", 3), ("2,3", 2)):
            time.sleep(2.0)
            java("reassign", "--partition", topic + ":0", "--replicas", replicas)
            got = elect("java", PREFERRED, [(topic, 0)], "forwarded")
            assert got["results"] == {(topic, 0): NONE}, got
            wait_partitions(topic, lambda p, leader=leader: p["leader"] == leader, "leader %d" % leader, 1)
        time.sleep(2.0)
    finally:
        threads[-1].join(timeout=120)
        stop.set()
        for t in threads[:2]:
            t.join(timeout=120)
        target["n"] = produced["confluent"] + produced["kafka-python"] + 250
        reading_deadline[0] = min(reading_deadline[0], time.time() + 60)
        for t in threads[2:4]:
            t.join(timeout=120)
    assert not errors, errors[:5]
    assert produced["confluent"] > 0 and produced["kafka-python"] > 0, produced
    assert java_out.get("produce", {}).get("count") == 250, java_out
    # The topic has min.insync.replicas 1: while the reassignment shrinks the ISR, an
    # acks=all record acknowledged by the old leader alone can be truncated when the
    # leader moves (Kafka's behaviour, seen once in CI: 1960 read of 1961 acknowledged, by
    # both consumers alike). A record or two lost so is not the guard's; more would be.
    for client in ("confluent", "kafka-python"):
        assert (consumed.get(client) or 0) >= target["n"] - 2, (client, consumed, target)
    assert java_out.get("consume", {}).get("count", 0) > 0, java_out
    # The brokers did name the new leader in Produce or Fetch answers, and the guard
    # rewrote them: more rewrites than the lists of brokers it rewrote meanwhile.
    data_rewrites = rewrites_beyond_lists() - beyond_before
    assert data_rewrites > 0, "no Produce or Fetch answer with NodeEndpoints was rewritten"
    print("  leader 2 -> 3 -> 2 while producing (%s, java 250) and fetching (%s, java %d); at least %d"
          " Produce/Fetch answers' NodeEndpoints rewritten" % (
              dict(produced), consumed, java_out["consume"]["count"], data_rewrites))


def tap_hits():
    """The tap recordings (the brokers' CLIENT and PROXY listeners) holding this module's
    client ids: requests from its clients that went to another listener."""
    hits = []
    for key in ("TAP_DIR", "PROXY_TAP_DIR"):
        root = os.environ.get(key, "")
        if not root or not os.path.isdir(root):
            continue
        for name in sorted(os.listdir(root)):
            if name.endswith(".c2s"):
                with open(os.path.join(root, name), "rb") as f:
                    if PREFIX.encode() in f.read():
                        hits.append(os.path.join(os.path.basename(root), name))
    return hits


SOCKET = re.compile(r"^\d+\s+(?:connect|setsockopt)\(\d+<TCP:\[127\.0\.0\.1:(\d+)->127\.0\.0\.1:(\d+)\]>")
CONNECT = re.compile(r"^\d+\s+connect\(\d+<TCP:\[\d+\]>, \{sa_family=AF_INET, sin_port=htons\((\d+)\)")
SYN = re.compile(r"\sIP 127\.0\.0\.1\.(\d+) > 127\.0\.0\.1\.(\d+): Flags \[S\]")


def own_syns():
    """{(source port, OWN port)} of every SYN captured so far."""
    p = subprocess.run(["tcpdump", "-nn", "-r", SYN_PCAP], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return {(int(m.group(1)), int(m.group(2))) for m in map(SYN.search, p.stdout.splitlines()) if m}


def guard_sockets():
    """({(local port, OWN port)} of the guard's sockets to the OWN ports, as strace printed
    them; how many connect() calls it made to those ports)."""
    mine, connects = set(), 0
    with open(STRACE, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = SOCKET.match(line)
            if m and int(m.group(2)) in OWN_PORTS:
                mine.add((int(m.group(1)), int(m.group(2))))
            m = CONNECT.match(line)
            if m and int(m.group(1)) in OWN_PORTS:
                connects += 1
    return mine, connects


@test("rewrite: every connection that reached the brokers' own listeners came from the guard (tcpdump SYNs matched to the guard's sockets by strace; ss -tnp)")
def only_the_guard_connects():
    assert STRACE and os.path.exists(STRACE), "the guard does not run under strace (strace missing?)"
    assert SYN_PCAP and os.path.exists(SYN_PCAP), "no capture of the SYNs to the OWN ports (tcpdump missing?)"
    # Every connection attempt to an OWN port since the cluster started, from any process
    # (tcpdump --immediate-mode -U writes each SYN as it sees it), and the guard's own
    # sockets to those ports, local->remote as the kernel reported them. The capture has
    # caught up when it holds every one of the guard's connections (and a second passed).
    time.sleep(1.0)
    deadline = time.time() + 10
    while True:
        syns = own_syns()
        mine, connects = guard_sockets()
        if mine <= syns or time.time() > deadline:
            break
        time.sleep(0.5)
    assert syns and {dst for _, dst in syns} == set(OWN_PORTS), "SYNs to the OWN ports: %r" % syns
    assert mine <= syns, "the capture misses %d of the guard's connections: %r" % (
        len(mine - syns), sorted(mine - syns)[:20])
    strangers = sorted(syns - mine)
    assert not strangers, "%d connections to the brokers' own listeners not from the guard (source port," \
        " port): %r" % (len(strangers), strangers[:20])
    assert connects >= len(syns), (connects, len(syns))
    # The connections open now: each one's client end belongs to the guard's process.
    ports = " or ".join("dport = :%d" % p for p in OWN_PORTS)
    p = subprocess.run(["ss", "-tnpH", "state", "established", "( %s )" % ports], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    open_now = [l for l in p.stdout.splitlines() if l.strip()]
    assert open_now, "no connection open to the OWN listeners (the setup admin client keeps some)"
    owners = {m.group(1) for l in open_now for m in [re.search(r"pid=(\d+)", l)] if m}
    others = [l for l in open_now if "pid=%s," % GUARD_PID not in l]
    assert not others and owners == {GUARD_PID}, "open to the OWN listeners, not by the guard: %r" % others
    hits = tap_hits()
    assert not hits, "this module's clients reached another listener: %r" % hits
    print("  %d connections reached the OWN listeners since the cluster started, each from one of the"
          " guard's %d broker connections (strace); %d open now, all the guard's (pid %s); no %s client"
          " id in the taps' recordings" % (len(syns), connects, len(open_now), GUARD_PID, PREFIX))


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def scrape():
    """{(name, ((label, value), ...)): value} from /metrics."""
    with urllib.request.urlopen("http://%s/metrics" % METRICS, timeout=10) as r:
        assert r.status == 200, r.status
        text = r.read().decode()
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, "not a sample: %r" % line
        labels = tuple(sorted(LABEL.findall(m.group(2) or "")))
        samples[(m.group(1), labels)] = float(m.group(3))
    return samples


def family(samples, name, label):
    """{label value: sample value} of one metric family, zeros left out."""
    return {dict(labels)[label]: v for (n, labels), v in samples.items() if n == name and v}


@test("rewrite: /metrics counts what this test decided through the guard, number for number; the audit log too")
def metrics_match_decisions():
    assert DECISIONS, "no elections made through the rewriting guard (the tests above failed?)"
    g = "elect_leaders_guard_"
    samples = scrape()

    def one(name, **labels):
        return samples.get((g + name, tuple(sorted(labels.items()))), 0)

    verdicts = collections.Counter(d["verdict"] for d in DECISIONS)
    refused_partitions = sum(len(d["partitions"]) for d in DECISIONS if d["verdict"] in ("refused", "trimmed"))
    rules = collections.Counter()
    for d in DECISIONS:
        if d["type"] == UNCLEAN:
            rules["deny-unclean"] += 1
    got = family(samples, g + "elect_leaders_decisions_total", "verdict")
    assert got == {k: float(v) for k, v in verdicts.items()}, "decisions by verdict: %r, made %r" % (got, verdicts)
    got = family(samples, g + "elect_leaders_decision_rules_total", "rule")
    assert got == {k: float(v) for k, v in rules.items()}, "decisions by rule: %r, made %r" % (got, rules)
    assert one("elect_leaders_refused_partitions_total") == refused_partitions, \
        (one("elect_leaders_refused_partitions_total"), refused_partitions)
    # Every ElectLeaders request was read; only the forwarded ones reached a broker and came
    # back with its answer (the refusals are the guard's).
    assert one("frames_total", api="ElectLeaders", direction="request") == len(DECISIONS), samples
    assert one("frames_total", api="ElectLeaders", direction="response") == verdicts["forwarded"], samples
    assert one("broker_round_trip_seconds_count", api="ElectLeaders") == verdicts["forwarded"], samples
    assert one("audit_failures_total") == 0
    # The answers that carry broker addresses went through it, and were rewritten: every
    # Metadata and DescribeCluster answer (each names both brokers), and the FindCoordinator
    # answers that name a coordinator.
    answers = {api: one("frames_total", api=api, direction="response")
               for api in ("Metadata", "FindCoordinator", "DescribeCluster")}
    assert all(answers.values()), answers
    rewrites = one("address_rewrites_total")
    # Produce and Fetch answers that name a new leader (KIP-951) are rewritten too.
    data = sum(one("frames_total", api=api, direction="response") for api in ("Produce", "Fetch"))
    assert answers["Metadata"] + answers["DescribeCluster"] <= rewrites <= sum(answers.values()) + data, \
        (rewrites, answers, data)
    closed = family(samples, g + "connections_closed_total", "reason")
    assert not set(closed) - {"client"}, "connections closed for other reasons: %r" % closed
    # The audit log: one line per decision, the same verdicts, per client.
    lines = audit_lines()
    assert collections.Counter((a["client_id"], a["verdict"]) for a in lines) == \
        collections.Counter((d["client_id"], d["verdict"]) for d in DECISIONS), (lines, DECISIONS)
    for a in lines:
        if a["verdict"] == "refused":
            assert (a["rules"], a["election_type"]) == (["deny-unclean"], "UNCLEAN"), a
    with open(GUARD_LOG, encoding="utf-8") as f:
        log = f.read()
    for bad in ("cannot be decoded", "left as the broker advertises it", "malformed"):
        assert bad not in log, "the guard's log: %s" % log[-2000:]
    print("  /metrics: decisions %s, rules %s, %d refused partitions, ElectLeaders %d requests / %d answers"
          " from brokers; %d answers rewritten of %s; %d connections accepted" % (
              dict(verdicts), dict(rules), refused_partitions, len(DECISIONS), verdicts["forwarded"], rewrites,
              {k: int(v) for k, v in answers.items()}, one("connections_accepted_total")))
    if "kafka-python" in _ADMIN:
        _ADMIN.pop("kafka-python").close()
    _ADMIN.clear()
