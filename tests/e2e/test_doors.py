"""The guard decides on every Kafka API (issue 42), on the real cluster: the doors an
attacker walked through at fc8327b, each shown closed.

- WriteTxnMarkers, an API only brokers send: through the plaintext guard (PROXY_BOOTSTRAP,
  --deny-unclean --protect-topic guarded) an ABORT marker for a producer's open transaction
  closes the connection with no answer and an audit line (verdict "closed"); the producer's
  commit then goes through and read_committed consumers read all its records (with the
  marker forwarded, they read none).
- The allow-list on the config route: a guard with only --allow-client-id doors-ops
  (DOORS_BOOTSTRAP, run.sh, in front of the brokers' client listeners) refuses client id
  doors-mallory's IncrementalAlterConfigs unclean.leader.election.enable=true on a topic and
  on the cluster default, which before were forwarded and let the controller elect an
  out-of-sync replica; doors-ops' change is taken.
- A protected topic keeps its records: DeleteRecords to the high watermark and
  retention.ms=1 on `guarded` are refused and change nothing; on an open topic
  DeleteRecords through the guard deletes.

Raw frames are written here only where no client sends such a request on purpose
(WriteTxnMarkers) or where one connection must carry it (the allow-list guard forwards to
listeners that advertise other addresses); the other requests are the real clients'.
test_e2e.py runs these after test_leadership.py.
"""

import os
import socket
import struct
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

import e2e_common as common
from e2e_common import admin_tool, registry, wait_for

PROXY = os.environ.get("PROXY_BOOTSTRAP", "")
PROXY_AUDIT = os.environ.get("PROXY_AUDIT", "")
DOORS = os.environ.get("DOORS_BOOTSTRAP", "")
DOORS_AUDIT = os.environ.get("DOORS_AUDIT", "")
DIRECT = os.environ.get("BOOTSTRAP", "")
ADMIN_CP = os.environ.get("ADMIN_CP", "")

POLICY_VIOLATION = 44
UNCLEAN = "unclean.leader.election.enable"

TESTS, test = registry("doors: ")


def direct(cmd, *args):
    return admin_tool(ADMIN_CP, DIRECT, cmd, *args, client_id="doors-direct", where="directly")


def through_guard(cmd, *args, client_id="doors-java"):
    return admin_tool(ADMIN_CP, PROXY, cmd, *args, client_id=client_id, where="through the guard")


def ensure(topic, assignment="2,3"):
    if direct("describe", "--topic", topic)["topics"][topic] is None:
        direct("create", "--topic", topic, "--assignment", assignment)
    return wait_for("leaders of %s" % topic,
                    lambda: ((d := direct("describe", "--topic", topic)["topics"][topic]) is not None
                             and all(p["leader"] is not None for p in d), d))


def configs(resource, *keys):
    args = []
    for k in keys:
        args += ["--key", k]
    return direct("configs", "--resource", resource, *args)["configs"]


# ---------------------------------------------------------------- raw frames

def string(text):
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def uvarint(n):
    out = b""
    while True:
        if n < 0x80:
            return out + bytes([n])
        out += bytes([(n & 0x7f) | 0x80])
        n >>= 7


def compact_string(text):
    raw = text.encode()
    return uvarint(len(raw) + 1) + raw


def frame(api_key, version, correlation_id, client_id, body, flexible):
    header = struct.pack(">hhi", api_key, version, correlation_id) + string(client_id)
    if flexible:
        header += b"\x00"  # no tagged fields in the header
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def read_exactly(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def exchange(address, request, timeout=20.0):
    """Sends one frame on a new connection: the answer's bytes after the size prefix, or
    None when the peer closed the connection without one."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(request)
        size = read_exactly(sock, 4)
        if size is None:
            return None
        return read_exactly(sock, struct.unpack(">i", size)[0])


def write_txn_markers_abort(producer_id, epoch, coordinator_epoch, topic, partition):
    """WriteTxnMarkers v1 (flexible): one ABORT marker for the producer on one partition."""
    marker = (struct.pack(">qh?", producer_id, epoch, False)
              + uvarint(2) + compact_string(topic) + uvarint(2) + struct.pack(">i", partition) + b"\x00"
              + struct.pack(">i", coordinator_epoch) + b"\x00")
    return frame(27, 1, 4242, "doors-mallory", uvarint(2) + marker + b"\x00", flexible=True)


def fetch_v11(replica_id, topic, partition, offset):
    """Fetch v11 (classic), as a follower (replica_id >= 0) or a consumer (-1) sends it."""
    body = (struct.pack(">iiiibii", replica_id, 100, 1, 1 << 20, 0, 0, -1)
            + struct.pack(">i", 1) + string(topic) + struct.pack(">i", 1)
            + struct.pack(">iiqqi", partition, -1, offset, -1, 1 << 20)
            + struct.pack(">i", 0) + string(""))
    return frame(1, 11, 99, "doors-follower", body, flexible=False)


def incremental_alter_configs(client_id, resource_type, name, key, value):
    """IncrementalAlterConfigs v0 (classic): SET key=value on one resource."""
    body = (struct.pack(">i", 1) + struct.pack(">b", resource_type) + string(name)
            + struct.pack(">i", 1) + string(key) + struct.pack(">b", 0) + string(value)
            + struct.pack(">?", False))
    return frame(44, 0, 77, client_id, body, flexible=False)


def alter_configs_errors(answer):
    """[(error code, message)] of an IncrementalAlterConfigs v0 answer."""
    at = 4 + 4  # correlation id, throttle time
    (count,) = struct.unpack_from(">i", answer, at)
    at += 4
    out = []
    for _ in range(count):
        (code, length) = struct.unpack_from(">hh", answer, at)
        at += 4
        message = None
        if length >= 0:
            message = answer[at:at + length].decode()
            at += length
        at += 1  # resource type
        (length,) = struct.unpack_from(">h", answer, at)
        at += 2 + length
        out.append((code, message))
    return out


# ---------------------------------------------------------------- the tests

@test("WriteTxnMarkers from a client closes the connection, nothing forwarded; the producer's "
      "transaction commits and read_committed consumers read 10 of 10 [confluent, java]")
def write_txn_markers_closed():
    topic = "doors-txn"
    ensure(topic)
    mark = len(common.audit_lines(PROXY_AUDIT, every=True))
    producer = Producer({"bootstrap.servers": PROXY, "transactional.id": "doors-txn-1",
                         "client.id": "doors-producer", "log_level": 3})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(10):
        producer.produce(topic, key=b"t%d" % i, value=b"committed %d" % i, partition=0)
    assert producer.flush(30) == 0
    open_txns = wait_for("the open transaction on %s:0" % topic,
                         lambda: ((ps := [p for p in direct("producers", "--partition", topic + ":0")["producers"]
                                          if p["txn_start_offset"] >= 0]) != [], ps))
    pid, epoch = open_txns[0]["producer_id"], open_txns[0]["producer_epoch"]
    coordinator_epoch = max(open_txns[0]["coordinator_epoch"], 0)
    request = write_txn_markers_abort(pid, epoch, coordinator_epoch, topic, 0)
    for address in PROXY.split(","):
        answer = exchange(address, request)
        assert answer is None, "the guard at %s answered WriteTxnMarkers: %r" % (address, answer)
    producer.commit_transaction(30)
    consumer = Consumer({"bootstrap.servers": PROXY, "group.id": "doors-txn-reader",
                         "client.id": "doors-reader", "isolation.level": "read_committed",
                         "enable.auto.commit": False, "log_level": 3})
    got = []
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.time() + 30
        while len(got) < 10 and time.time() < deadline:
            for m in consumer.consume(num_messages=100, timeout=1.0):
                assert m.error() is None, m.error()
                got.append(m.key())
    finally:
        consumer.close()
    assert sorted(got) == sorted(b"t%d" % i for i in range(10)), got
    closed = [a for a in common.audit_lines(PROXY_AUDIT, every=True)[mark:]
              if a.get("api_name") == "WriteTxnMarkers"]
    assert len(closed) == len(PROXY.split(",")), closed
    assert all(a["verdict"] == "closed" and a["client_id"] == "doors-mallory" for a in closed), closed
    print("  producer %d epoch %d: the ABORT marker closed %d connections, audited; the commit read"
          " back whole (10 of 10, read_committed)" % (pid, epoch, len(closed)))


@test("a Fetch sent as a follower replica closes the connection; the same Fetch as a consumer is answered")
def follower_fetch_closed():
    topic = "doors-txn"
    ensure(topic)
    leader = direct("describe", "--topic", topic)["topics"][topic][0]["leader"]
    # The guard's first listener is in front of broker 2, the second of broker 3 (run.sh).
    address = PROXY.split(",")[leader - 2]
    consumer = exchange(address, fetch_v11(-1, topic, 0, 0))
    assert consumer is not None and len(consumer) > 8, "a consumer's Fetch v11 was not answered"
    follower = exchange(address, fetch_v11(3 if leader == 2 else 2, topic, 0, 1 << 40))
    assert follower is None, "the guard answered a Fetch sent as a replica: %r" % follower[:64]


@test("an allow-list covers the config route: doors-mallory's unclean.leader.election.enable=true "
      "refused on a topic and the cluster default and not applied; doors-ops' taken")
def allow_list_on_the_config_route():
    assert DOORS, "run.sh did not start the allow-list guard (DOORS_BOOTSTRAP)"
    topic = "doors-allow"
    ensure(topic)
    before = configs("topic:" + topic, UNCLEAN)[UNCLEAN]
    default_before = configs("broker:2", UNCLEAN)[UNCLEAN]
    address = DOORS.split(",")[0]
    mark = len(common.audit_lines(DOORS_AUDIT, every=True))
    for resource_type, name in [(2, topic), (4, "")]:
        answer = exchange(address, incremental_alter_configs("doors-mallory", resource_type, name,
                                                             UNCLEAN, "true"))
        assert answer is not None, "the guard closed the connection"
        errors = alter_configs_errors(answer)
        assert [code for code, _ in errors] == [POLICY_VIOLATION], errors
        assert "elect-leaders proxy" in (errors[0][1] or ""), errors
    time.sleep(1.0)
    assert configs("topic:" + topic, UNCLEAN)[UNCLEAN] == before, before
    assert configs("broker:2", UNCLEAN)[UNCLEAN] == default_before, default_before
    lines = [a for a in common.audit_lines(DOORS_AUDIT, every=True)[mark:]
             if a.get("api_name") == "IncrementalAlterConfigs"]
    assert [a["verdict"] for a in lines] == ["refused", "refused"], lines
    assert all("allow-client-id" in a["rules"] for a in lines), lines
    # The client id the allow-list names: the same change is forwarded and applied, then
    # set back.
    for value in ("true", "false"):
        answer = exchange(address, incremental_alter_configs("doors-ops", 2, topic, UNCLEAN, value))
        errors = alter_configs_errors(answer)
        assert [code for code, _ in errors] == [0], errors
        wait_for("%s=%s on %s" % (UNCLEAN, value, topic),
                 lambda: ((c := configs("topic:" + topic, UNCLEAN)[UNCLEAN])["value"] == value, c))


@test("a protected topic keeps its records: DeleteRecords and retention.ms=1 refused, nothing "
      "deleted; an open topic's records deleted through the guard [confluent, java]")
def protected_records_kept():
    protected, open_topic = "guarded", "doors-open"
    ensure(protected)
    ensure(open_topic)
    producer = Producer({"bootstrap.servers": PROXY, "client.id": "doors-producer-2", "acks": "all",
                         "log_level": 3})
    for topic in (protected, open_topic):
        for i in range(100):
            producer.produce(topic, value=b"kept %d" % i, partition=0)
    assert producer.flush(30) == 0
    reader = Consumer({"bootstrap.servers": PROXY, "group.id": "doors-marks", "log_level": 3})
    try:
        low, high = reader.get_watermark_offsets(TopicPartition(protected, 0), timeout=20)
        open_low, open_high = reader.get_watermark_offsets(TopicPartition(open_topic, 0), timeout=20)
        mark = len(common.audit_lines(PROXY_AUDIT, every=True))
        admin = AdminClient({"bootstrap.servers": PROXY, "client.id": "doors-deleter", "log_level": 3})
        result = admin.delete_records([TopicPartition(protected, 0, high)])
        try:
            list(result.values())[0].result(timeout=30)
            raise AssertionError("DeleteRecords of %s was not refused" % protected)
        except KafkaException as e:
            assert e.args[0].code() == POLICY_VIOLATION, e
        refused = through_guard("alter", "--resource", "topic:" + protected, "--set", "retention.ms=1")
        assert refused["error"] and refused["error"]["code"] == POLICY_VIOLATION, refused
        time.sleep(1.0)
        assert reader.get_watermark_offsets(TopicPartition(protected, 0), timeout=20) == (low, high)
        assert configs("topic:" + protected, "retention.ms")["retention.ms"]["value"] != "1"
        lines = common.audit_lines(PROXY_AUDIT, every=True)[mark:]
        assert any(a.get("api_name") == "DeleteRecords" and a["verdict"] == "refused" for a in lines), lines
        # The open topic: deleted up to its end.
        result = admin.delete_records([TopicPartition(open_topic, 0, open_high)])
        list(result.values())[0].result(timeout=30)
        wait_for("%s's records deleted" % open_topic,
                 lambda: ((w := reader.get_watermark_offsets(TopicPartition(open_topic, 0), timeout=20))[0]
                          == open_high, w))
        assert open_low < open_high
    finally:
        reader.close()
    print("  %s kept offsets %d-%d; %s deleted up to %d" % (protected, low, high, open_topic, open_high))
