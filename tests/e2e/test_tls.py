"""End-to-end tests of `elect-leaders proxy` with TLS on both sides, SASL and mTLS (issue 24).

run.sh makes a throw-away CA, certificates and passwords (pki.sh, in TLS_DIR) and starts two
guards before the cluster, whose brokers advertise them on two listeners of their own
(cluster.sh with TLS_DIR):

- the TLS guard (TLS_BOOTSTRAP): TLS towards its clients with guard.pem, TLS towards the
  brokers' SASL_SSL listeners (checked against ca.pem); SASL passes through it to the
  brokers, which know the SCRAM users alice and bob (both SHA-256 and SHA-512, added at
  format time by StorageTool --add-scram) and the same two as PLAIN users.
  `--allow-principal alice --deny-unclean`, audit in TLS_AUDIT.
- the mTLS guard (MTLS_BOOTSTRAP): requires a client certificate signed by ca.pem, and
  presents its own (guard-upstream.pem) to the brokers' SSL listeners, which require one.
  `--allow-principal MTLS_PRINCIPAL` (carol's subject, RFC 2253) `--deny-unclean`, audit in
  MTLS_AUDIT.

The three clients authenticate as Kafka users do: Kafka's Java Admin with SCRAM-SHA-512,
librdkafka (confluent-kafka) with SCRAM-SHA-256, kafka-python with SCRAM-SHA-512, all over
TLS trusting only the test CA (and checking the guard's name, 127.0.0.1, against its
certificate); through the mTLS guard carol presents her certificate (dave's, signed by the
same CA but not allowed, gets his connection closed after the TLS handshake). One test
drives the SASL exchanges by hand (kafka-python's protocol classes and its SCRAM client) to
pipeline a request behind a wrong password and to know the proofs sent, which the last
test looks for, with the passwords, in everything the guards wrote.

test_e2e.py runs these tests after test_proxy.py's, in the same summary.
"""

import base64
import os
import socket
import ssl
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.net.sasl.scram import ScramClient
from kafka.protocol.admin.topics import ElectLeadersRequest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.parser import KafkaProtocol
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

import e2e_common as common
from e2e_common import PREFERRED, UNCLEAN, Topics, admin_tool, audit_lines, registry

RUN = os.environ.get("E2E_RUN", "")
PKI = os.environ.get("TLS_DIR", "")
TLS = os.environ.get("TLS_BOOTSTRAP", "")
MTLS = os.environ.get("MTLS_BOOTSTRAP", "")
DIRECT = os.environ.get("TLS_DIRECT", "")
TLS_AUDIT = os.environ.get("TLS_AUDIT", "")
MTLS_AUDIT = os.environ.get("MTLS_AUDIT", "")
MTLS_PRINCIPAL = os.environ.get("MTLS_PRINCIPAL", "")
ADMIN_CP = os.environ.get("ADMIN_CP", "")

NONE, SASL_AUTHENTICATION_FAILED, POLICY_VIOLATION, ELECTION_NOT_NEEDED = 0, 58, 44, 84
CLIENTS = ("java", "confluent", "kafka-python")
# The SCRAM mechanism each client uses (the brokers enable both).
MECHANISM = {"java": "SCRAM-SHA-512", "confluent": "SCRAM-SHA-256", "kafka-python": "SCRAM-SHA-512"}
SASL_USERS = ("alice", "bob")
CERT_USERS = ("carol", "dave")


def pki(name):
    return os.path.join(PKI, name)


def users_env():
    values = {}
    if PKI:
        with open(pki("users.env"), encoding="utf-8") as f:
            for line in f:
                key, _, value = line.strip().partition("=")
                values[key] = value
    return values


ENV = users_env()
PASSWORDS = {"alice": ENV.get("ALICE_PASSWORD", ""), "bob": ENV.get("BOB_PASSWORD", "")}
# What no guard output may contain: the passwords, and what the hand-driven exchanges add
# (a wrong password, SCRAM proofs, PLAIN's token).
SECRETS = {"alice's password": PASSWORDS["alice"], "bob's password": PASSWORDS["bob"]}


def subject(user):
    return "CN=%s,OU=e2e,O=kafka-elect-leaders" % user


def client_id(client, who):
    return "tls-%s-%s" % (client, who)


def bootstrap(who):
    return TLS if who in SASL_USERS else MTLS


def audit_file(who):
    return TLS_AUDIT if who in SASL_USERS else MTLS_AUDIT


def confluent_conf(who, **extra):
    conf = {"bootstrap.servers": bootstrap(who), "ssl.ca.location": pki("ca.pem"), "log_level": 3}
    if who in SASL_USERS:
        conf.update({"security.protocol": "SASL_SSL", "sasl.mechanisms": MECHANISM["confluent"],
                     "sasl.username": who, "sasl.password": PASSWORDS[who]})
    else:
        conf.update({"security.protocol": "SSL", "ssl.certificate.location": pki(who + ".pem"),
                     "ssl.key.location": pki(who + ".key")})
    conf.update(extra)
    return conf


def kafka_python_conf(who, **extra):
    conf = {"bootstrap_servers": bootstrap(who).split(","), "ssl_cafile": pki("ca.pem")}
    if who in SASL_USERS:
        conf.update({"security_protocol": "SASL_SSL", "sasl_mechanism": MECHANISM["kafka-python"],
                     "sasl_plain_username": who, "sasl_plain_password": PASSWORDS[who]})
    else:
        conf.update({"security_protocol": "SSL", "ssl_certfile": pki(who + ".pem"),
                     "ssl_keyfile": pki(who + ".key")})
    conf.update(extra)
    return conf


def java_config(who):
    """The Java client's properties for `who` (AdminTool --client-config), written once."""
    path = os.path.join(RUN, "tls-clients", who + ".properties")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        lines = ["ssl.truststore.type=PEM", "ssl.truststore.location=" + pki("ca.pem")]
        if who in SASL_USERS:
            lines += ["security.protocol=SASL_SSL", "sasl.mechanism=" + MECHANISM["java"],
                      "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                      'username="%s" password="%s";' % (who, PASSWORDS[who])]
        else:
            lines += ["security.protocol=SSL", "ssl.keystore.type=PKCS12",
                      "ssl.keystore.location=" + pki(who + ".p12"),
                      "ssl.keystore.password=" + ENV["KEYSTORE_PASSWORD"],
                      "ssl.key.password=" + ENV["KEYSTORE_PASSWORD"]]
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    return path


def java(cmd, *args, who="alice", cid=None):
    return admin_tool(ADMIN_CP, bootstrap(who), cmd, *args, client_id=cid or "tls-java-setup",
                      client_config=java_config(who),
                      where="through the %s guard as %s" % ("TLS" if who in SASL_USERS else "mTLS", who))


def elect(client, who, etype, parts):
    """One ElectLeaders by `client` as `who` through its guard; {"top": whole-request error
    or None, "results": {(topic, partition): code}, "messages": {(topic, partition): text}}."""
    cid = client_id(client, who)
    return common.elect(
        client, etype, parts,
        java=lambda *args: java("elect", *args, who=who, cid=cid),
        confluent_conf=confluent_conf(who, **{"client.id": cid}),
        kafka_python_conf=kafka_python_conf(who, client_id=cid, request_timeout_ms=30000))


# ---------------------------------------------------------------- set-up, as alice, through the TLS guard

_ADMIN = {}


def admin():
    if "confluent" not in _ADMIN:
        _ADMIN["confluent"] = AdminClient(confluent_conf("alice", **{"client.id": "tls-setup"}))
    return _ADMIN["confluent"]


def reassigner():
    if "kafka-python" not in _ADMIN:
        _ADMIN["kafka-python"] = KafkaAdminClient(**kafka_python_conf(
            "alice", client_id="tls-setup-kp", request_timeout_ms=30000))
    return _ADMIN["kafka-python"]


def close_admins():
    if "kafka-python" in _ADMIN:
        _ADMIN.pop("kafka-python").close()
    _ADMIN.clear()


TOPICS = Topics(admin, reassigner)
describe = TOPICS.describe
wait_partitions = TOPICS.wait_partitions
create = TOPICS.create
make_non_preferred = TOPICS.make_non_preferred


def decisions(who, topic):
    """The audit lines of `who`'s ElectLeaders naming `topic`."""
    return [a for a in audit_lines(audit_file(who))
            if a["client_id"] and a["client_id"].endswith("-" + who)
            and any(t["topic"] == topic for t in a["partitions"] or [])]


def refused_whole(got, tp):
    """A request refused whole (a principal not allowed): the top-level error, or (when a
    client reports per partition) every partition, is POLICY_VIOLATION."""
    return got["top"] == POLICY_VIOLATION or (got["top"] is None and got["results"] == {tp: POLICY_VIOLATION})


TESTS, test = registry()


# ---------------------------------------------------------------- the tests

@test("tls: alice (SCRAM over TLS, through the guard) elects, the leader moves [java, confluent, kafka-python]")
def alice_elects():
    topic = "tls-pref"
    make_non_preferred(topic, partitions=len(CLIENTS))
    for i, client in enumerate(CLIENTS):
        got = elect(client, "alice", PREFERRED, [(topic, i)])
        assert got["top"] is None and got["results"] == {(topic, i): NONE}, "%s: %r" % (client, got)
    wait_partitions(topic, lambda p: p["leader"] == 3, "leader 3 (the preferred replica) everywhere")
    lines = decisions("alice", topic)
    assert sorted(a["client_id"] for a in lines) == sorted(client_id(c, "alice") for c in CLIENTS), lines
    for a in lines:
        assert (a["principal"], a["verdict"], a["rules"]) == ("alice", "forwarded", []), a


@test("tls: bob (SCRAM) may not elect: POLICY_VIOLATION (44) from the guard, the broker never asked [java, confluent, kafka-python]")
def bob_refused():
    topic = "tls-bob"
    make_non_preferred(topic)
    tp = (topic, 0)
    shapes = {}
    for client in CLIENTS:
        got = elect(client, "bob", PREFERRED, [tp])
        assert refused_whole(got, tp), "%s: %r" % (client, got)
        shapes[client] = "top-level" if got["top"] else "per partition"
        for message in got["messages"].values():
            assert message and "bob" in message and "may not elect" in message, "%s: %r" % (client, got)
    # Had any of bob's requests reached a broker, the leader would be 3 already and alice's
    # election would find nothing to do (ELECTION_NOT_NEEDED).
    got = elect("confluent", "alice", PREFERRED, [tp])
    assert got["results"] == {tp: NONE}, "after bob's refusals: %r" % got
    lines = decisions("bob", topic)
    assert sorted(a["client_id"] for a in lines) == sorted(client_id(c, "bob") for c in CLIENTS), lines
    for a in lines:
        assert (a["principal"], a["verdict"], a["whole"]) == ("bob", "refused", True), a
        assert a["rules"] == ["allow-principal"] and "bob" in a["message"], a
    print("  bob refused: %s" % ", ".join("%s reports it %s" % kv for kv in shapes.items()))


@test("tls: an UNCLEAN election by alice is refused per partition (--deny-unclean) [java, confluent, kafka-python]")
def alice_unclean_refused():
    topic = "tls-unclean"
    create(topic, [[2, 3]])
    before = wait_partitions(topic, lambda p: p["leader"] == 2 and p["isr"] == [2, 3], "isr [2,3]", 1)
    for client in CLIENTS:
        got = elect(client, "alice", UNCLEAN, [(topic, 0)])
        assert got["top"] is None and got["results"] == {(topic, 0): POLICY_VIOLATION}, "%s: %r" % (client, got)
        assert "only PREFERRED elections are allowed" in (got["messages"][(topic, 0)] or ""), "%s: %r" % (client, got)
    assert describe(topic) == before
    lines = decisions("alice", topic)
    assert sorted(a["client_id"] for a in lines) == sorted(client_id(c, "alice") for c in CLIENTS), lines
    for a in lines:
        assert (a["principal"], a["verdict"], a["rules"], a["election_type"]) == \
            ("alice", "refused", ["deny-unclean"], "UNCLEAN"), a


@test("tls: records through the TLS guard, byte-identical: produced by all three clients, consumed by kafka-python as bob and librdkafka as alice")
def records_round_trip():
    topic = "tls-records"
    create(topic, [[2], [3]])  # one partition led by each broker: both guard listeners carry records
    d = wait_partitions(topic, lambda p: p["leader"] is not None, "leaders", 2)
    assert [p["leader"] for p in d] == [2, 3], d
    n = 20_000
    sent = {}
    producer = Producer(confluent_conf("alice", **{"client.id": "tls-producer", "linger.ms": 20,
                                                   "acks": "all"}))
    for i in range(n):
        key = b"k%06d" % i
        value = bytes((i + j) % 256 for j in range(64)) + key  # every byte value, shifted by i
        sent[key] = value
        while True:
            try:
                producer.produce(topic, value=value, key=key, partition=i % 2)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0, "records not delivered"
    # kafka-python produces as bob (only elections are restricted), Java as alice.
    producer = KafkaProducer(**kafka_python_conf("bob", client_id="tls-kp-producer", acks="all"))
    try:
        for i in range(1000):
            key = b"b%04d" % i
            value = bytes((7 * i + j) % 256 for j in range(256))
            sent[key] = value
            producer.send(topic, key=key, value=value, partition=i % 2)
        producer.flush(timeout=60)
    finally:
        producer.close()
    java("produce", "--partition", topic + ":1", "--count", "10", cid="tls-java-producer")
    sent.update({b"k%d" % i: b"v%d" % i for i in range(10)})

    consumer = KafkaConsumer(**kafka_python_conf("bob", client_id="tls-consumer", group_id=None,
                                                 enable_auto_commit=False, auto_offset_reset="earliest"))
    got = {}
    try:
        consumer.assign([KafkaTopicPartition(topic, 0), KafkaTopicPartition(topic, 1)])
        deadline = time.time() + 60
        while len(got) < len(sent) and time.time() < deadline:
            for records in consumer.poll(timeout_ms=1000, max_records=5000).values():
                for r in records:
                    assert r.key not in got, "duplicate %r" % r.key
                    got[r.key] = r.value
    finally:
        consumer.close()
    assert len(got) == len(sent), "kafka-python consumed %d of %d" % (len(got), len(sent))
    bad = [k for k in sent if got[k] != sent[k]]
    assert not bad, "kafka-python: %d records differ, e.g. %r" % (len(bad), bad[:3])

    consumer = Consumer(confluent_conf("alice", **{"group.id": "tls-records", "client.id": "tls-ck-consumer",
                                                   "enable.auto.commit": False}))
    got = {}
    try:
        consumer.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
        deadline = time.time() + 60
        while len(got) < len(sent) and time.time() < deadline:
            for m in consumer.consume(num_messages=10000, timeout=1.0):
                assert m.error() is None, m.error()
                assert m.key() not in got, "duplicate %r" % m.key()
                got[m.key()] = m.value()
    finally:
        consumer.close()
    assert len(got) == len(sent), "librdkafka consumed %d of %d" % (len(got), len(sent))
    bad = [k for k in sent if got[k] != sent[k]]
    assert not bad, "librdkafka: %d records differ, e.g. %r" % (len(bad), bad[:3])
    guard_ports = {int(a.rsplit(":", 1)[1]) for a in TLS.split(",")}
    md = admin().list_topics(timeout=20)
    assert {b.port for b in md.brokers.values()} == guard_ports, \
        "the brokers advertise %r, not the TLS guard's addresses" % md.brokers


def mtls_answered(who=None):
    """Whether the mTLS guard answers an ApiVersions request on a connection presenting
    `who`'s certificate (None: no certificate); False if it closes it instead."""
    host, port = MTLS.split(",")[0].rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=pki("ca.pem"))
    if who:
        ctx.load_cert_chain(pki(who + ".pem"), pki(who + ".key"))
    try:
        with socket.create_connection((host, int(port)), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname=host) as s:
                proto = KafkaProtocol(client_id="mtls-%s" % (who or "no-cert"))
                proto.send_request(ApiVersionsRequest[3](client_software_name="e2e", client_software_version="1"))
                s.sendall(proto.send_bytes())
                return s.recv(1 << 16) != b""  # TLS 1.3: the client's handshake ends first
    except (ssl.SSLError, ConnectionError):
        return False


@test("mtls: the client certificate's subject is the principal: carol elects; dave, not in --allow-principal, never acts at the brokers as the guard: closed after his TLS handshake [java, confluent, kafka-python]")
def certificate_principals():
    topic = "mtls-pref"
    make_non_preferred(topic, partitions=len(CLIENTS))
    for i, client in enumerate(CLIENTS):
        got = elect(client, "carol", PREFERRED, [(topic, i)])
        assert got["top"] is None and got["results"] == {(topic, i): NONE}, "%s: %r" % (client, got)
    wait_partitions(topic, lambda p: p["leader"] == 3, "leader 3 everywhere")
    lines = decisions("carol", topic)
    assert sorted(a["client_id"] for a in lines) == sorted(client_id(c, "carol") for c in CLIENTS), lines
    for a in lines:
        assert (a["principal"], a["verdict"]) == (subject("carol"), "forwarded"), a
    assert subject("carol") == MTLS_PRINCIPAL
    # The guard presents its own certificate to the brokers (--upstream-tls-cert): it lends
    # that identity only to the principals it allows. dave's certificate is signed by the
    # same CA, but his connection is closed after its TLS handshake, for every API, with a
    # line in the guard's log; carol's is answered.
    assert mtls_answered("carol"), "carol's connection was closed"
    assert not mtls_answered("dave"), "dave was answered: he would act at the brokers as the guard"
    line = '"%s" is not allowed (rules.allow-principal)' % subject("dave")
    deadline = time.time() + 10  # the guard's log is written by a thread of its own
    while True:
        with open(os.path.join(RUN, "mtls-guard.log"), encoding="utf-8", errors="replace") as f:
            if line in f.read():
                break
        assert time.time() < deadline, "no line in mtls-guard.log saying why dave was closed"
        time.sleep(0.2)
    assert not [a for a in audit_lines(MTLS_AUDIT) if a["principal"] == subject("dave")]
    # Without a certificate, no connection at all: the handshake fails.
    assert not mtls_answered(), "a client without a certificate was answered by the mTLS guard"


def tls_socket(address):
    host, port = address.rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=pki("ca.pem"))  # checks 127.0.0.1 against the SAN
    return ctx.wrap_socket(socket.create_connection((host, int(port)), timeout=30), server_hostname=host)


def exchange(s, proto, *requests, answers=None):
    """Sends the requests at once; their answers, in order (fewer if the connection closes)."""
    want = len(requests) if answers is None else answers
    for r in requests:
        proto.send_request(r)
    s.sendall(proto.send_bytes())
    got = []
    while len(got) < want:
        try:
            data = s.recv(1 << 16)
        except (ConnectionError, ssl.SSLError):
            data = b""
        if not data:
            break
        got += [resp for _, resp in proto.receive_bytes(data)]
    return got


def api_versions_at(address, version):
    proto = KafkaProtocol(client_id="tls-versions")
    request = (ApiVersionsRequest[version](client_software_name="tls", client_software_version="1")
               if version >= 3 else ApiVersionsRequest[version]())
    with tls_socket(address) as s:
        (answer,) = exchange(s, proto, request)
    return sorted((k.api_key, k.min_version, k.max_version) for k in answer.api_keys)


@test("tls: ApiVersions through the TLS guard: the SASL_SSL listener's list unchanged but for the caps (ElectLeaders v2, ShareFetch and ShareAcknowledge v1) [kafka-python protocol]")
def api_versions_over_tls():
    for version in range(5):
        want = common.capped(api_versions_at(DIRECT.split(",")[0], version))
        got = api_versions_at(TLS.split(",")[0], version)
        assert got == want, "ApiVersions v%d changed by the TLS guard: %r" % (version, sorted(set(got) ^ set(want)))
        elect_versions = [k for k in got if k[0] == 43]
        assert elect_versions and elect_versions[0][2] <= 2, elect_versions


HAND_TOPIC = "tls-hand"


def elect_request(topic):
    return ElectLeadersRequest[2](election_type=PREFERRED, timeout_ms=30000, topic_partitions=[
        ElectLeadersRequest.TopicPartitions(topic=topic, partitions=[0])])


def election_codes(answer):
    return [(r.topic, p.partition_id, p.error_code) for r in answer.replica_election_results
            for p in r.partition_result]


def scram_by_hand(user, password, cid, mechanism="SCRAM-SHA-256", pipelined=None):
    """A SCRAM exchange through the TLS guard to broker 2. With `pipelined`, that request
    is sent right behind the client's final message, before the broker has answered it.
    Returns (the answers after the handshake, the ScramClient)."""
    proto = KafkaProtocol(client_id=cid)
    scram = ScramClient(user, password, mechanism)
    with tls_socket(TLS.split(",")[0]) as s:
        (hs,) = exchange(s, proto, SaslHandshakeRequest[1](mechanism=mechanism))
        assert hs.error_code == 0, hs
        (first,) = exchange(s, proto, SaslAuthenticateRequest[2](auth_bytes=scram.first_message()))
        assert first.error_code == 0, first
        scram.process_server_first_message(first.auth_bytes)
        final = SaslAuthenticateRequest[2](auth_bytes=scram.final_message())
        SECRETS["%s's SCRAM proof (%s)" % (cid, mechanism)] = base64.b64encode(scram.client_proof).decode()
        SECRETS["%s's SCRAM final message" % cid] = scram.final_message().decode()
        if pipelined is not None:
            return exchange(s, proto, final, pipelined), scram
        answers = exchange(s, proto, final)
        if answers and answers[0].error_code == 0:
            scram.process_server_final_message(answers[0].auth_bytes)  # checks the server's signature
            answers += exchange(s, proto, elect_request(HAND_TOPIC))
        return answers, scram


@test("tls: SASL by hand through the guard: SCRAM and PLAIN principals once the broker accepts, a wrong password trusts nobody [kafka-python protocol]")
def sasl_by_hand():
    create(HAND_TOPIC, [[2, 3]])
    wait_partitions(HAND_TOPIC, lambda p: p["leader"] == 2, "leader 2", 1)
    # alice, SCRAM-SHA-256: accepted; her election is the broker's to answer (the leader is
    # the preferred replica already).
    answers, _ = scram_by_hand("alice", PASSWORDS["alice"], "tls-hand-scram-alice")
    assert [a.error_code for a in answers[:1]] == [NONE], answers
    assert election_codes(answers[1]) == [(HAND_TOPIC, 0, ELECTION_NOT_NEEDED)], answers[1]
    # bob, PLAIN: accepted by the broker, refused by the guard.
    token = b"\0bob\0" + PASSWORDS["bob"].encode()
    SECRETS["bob's PLAIN token"] = token.decode()
    proto = KafkaProtocol(client_id="tls-hand-plain-bob")
    with tls_socket(TLS.split(",")[0]) as s:
        hs, auth = exchange(s, proto, SaslHandshakeRequest[1](mechanism="PLAIN"),
                            SaslAuthenticateRequest[2](auth_bytes=token))
        assert (hs.error_code, auth.error_code) == (0, NONE), (hs, auth)
        (answer,) = exchange(s, proto, elect_request(HAND_TOPIC))
    assert answer.error_code == POLICY_VIOLATION, answer
    assert election_codes(answer) == [(HAND_TOPIC, 0, POLICY_VIOLATION)], answer
    # alice with a wrong password, an election pipelined behind her final message: the
    # guard decides it before the broker has answered, so with no principal: refused.
    wrong = "wrong-" + PASSWORDS["bob"][::-1]
    SECRETS["the wrong password"] = wrong
    answers, _ = scram_by_hand("alice", wrong, "tls-hand-scram-wrong", mechanism="SCRAM-SHA-512",
                               pipelined=elect_request(HAND_TOPIC))
    # The broker answers the failure and closes the connection at once; both its answer and
    # the guard's refusal queued behind it must reach the client before the guard closes.
    assert len(answers) == 2 and answers[0].error_code == SASL_AUTHENTICATION_FAILED, answers
    assert election_codes(answers[1]) == [(HAND_TOPIC, 0, POLICY_VIOLATION)], answers[1]
    by_client = {}
    for a in audit_lines(TLS_AUDIT):
        by_client.setdefault(a["client_id"], []).append(a)
    assert [(a["principal"], a["verdict"]) for a in by_client.get("tls-hand-scram-alice", [])] == \
        [("alice", "forwarded")], by_client
    assert [(a["principal"], a["verdict"]) for a in by_client.get("tls-hand-plain-bob", [])] == \
        [("bob", "refused")], by_client
    wrong_lines = by_client.get("tls-hand-scram-wrong", [])
    assert [(a["principal"], a["verdict"], a["rules"]) for a in wrong_lines] == \
        [(None, "refused", ["allow-principal"])], wrong_lines
    assert "unknown" in wrong_lines[0]["message"], wrong_lines


def guard_outputs():
    """Every file a guard wrote: the TLS guards' and the plaintext proxy's standard output,
    standard error and audit log."""
    names = ["tls-guard.out", "tls-guard.log", "mtls-guard.out", "mtls-guard.log",
             "proxy.out", "proxy.log"]
    paths = [os.path.join(RUN, n) for n in names] + [TLS_AUDIT, MTLS_AUDIT, os.environ.get("PROXY_AUDIT", "")]
    return [p for p in paths if p and os.path.exists(p)]


@test("tls: no password, SCRAM proof or SASL token in anything the guards wrote (logs, audit)")
def no_secrets_logged():
    close_admins()
    assert all(SECRETS.values()), SECRETS
    forms = {}
    for what, secret in SECRETS.items():
        raw = secret.encode()
        forms["%s" % what] = raw
        forms["%s, base64" % what] = base64.b64encode(raw)
        forms["%s, hex" % what] = raw.hex().encode()
    files = guard_outputs()
    names = {os.path.basename(p) for p in files}
    assert {"tls-guard.log", "mtls-guard.log", os.path.basename(TLS_AUDIT), os.path.basename(MTLS_AUDIT)} <= names, files
    found = []
    size = 0
    for path in files:
        with open(path, "rb") as f:
            data = f.read()
        size += len(data)
        found += ["%s in %s" % (what, os.path.basename(path)) for what, form in forms.items() if form in data]
    assert not found, "found: %s" % "; ".join(found)
    # The search itself finds a password where there is one: in the Java client's settings.
    with open(java_config("alice"), "rb") as f:
        assert forms["alice's password"] in f.read()
    # After the tests above (not when run alone with E2E_ONLY), what was searched did hold
    # the authentications: alice's, bob's and the failed one's decisions are audited.
    if "the wrong password" in SECRETS:
        principals = {a["principal"] for a in audit_lines(TLS_AUDIT)}
        assert {"alice", "bob", None} <= principals, principals
    print("  %d files (%d bytes) searched for %d secrets in %d forms: none found" % (
        len(files), size, len(SECRETS), len(forms)))
