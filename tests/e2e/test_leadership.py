"""The leadership-change policy on the real cluster (issue 35): every request that can change
who leads a protected partition, or let the controller elect a replica out of sync by itself,
is refused by the plaintext guard (--deny-unclean --protect-topic guarded), never takes effect
(checked by asking the brokers directly, through the tap), and is audited; the same change
where the policy allows it goes through and takes effect.

run.sh starts the guard (PROXY_BOOTSTRAP, audit log PROXY_AUDIT); test_e2e.py runs these
after test_proxy.py. Changes are made by Kafka's Java Admin (AdminTool alter / try),
librdkafka and kafka-python (incremental_alter_configs, alter_configs: both send
IncrementalAlterConfigs).
"""

import os
import time

from confluent_kafka import KafkaException
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                   ConfigResource)
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType

import e2e_common as common
from e2e_common import admin_tool, registry, wait_for

PROXY = os.environ.get("PROXY_BOOTSTRAP", "")
DIRECT = os.environ.get("BOOTSTRAP", "")
AUDIT = os.environ.get("PROXY_AUDIT", "")
ADMIN_CP = os.environ.get("ADMIN_CP", "")

POLICY_VIOLATION = 44
PROTECTED = "guarded"
UNCLEAN = "unclean.leader.election.enable"
MIN_ISR = "min.insync.replicas"


def through_guard(cmd, *args, client_id="lc-java"):
    return admin_tool(ADMIN_CP, PROXY, cmd, *args, client_id=client_id, where="through the guard")


def direct(cmd, *args):
    return admin_tool(ADMIN_CP, DIRECT, cmd, *args, client_id="lc-direct", where="directly")


def configs(resource, *keys):
    args = []
    for k in keys:
        args += ["--key", k]
    return direct("configs", "--resource", resource, *args)["configs"]


def describe(topic):
    return direct("describe", "--topic", topic)["topics"][topic]


def ensure(topic, assignment=((2, 3),)):
    """The topic, made directly (not through the guard) if it is not there yet."""
    if describe(topic) is None:
        direct("create", "--topic", topic, "--assignment",
               "/".join(",".join(map(str, r)) for r in assignment))
    return wait_for("leaders of %s" % topic,
                    lambda: ((d := describe(topic)) is not None
                             and all(p["leader"] is not None for p in d), d))


def refused(outcome, what):
    err = outcome.get("error")
    assert err is not None and err["code"] == POLICY_VIOLATION, "%s: %r" % (what, outcome)
    assert "elect-leaders proxy" in (err["message"] or ""), "%s: %r" % (what, outcome)


def allowed(outcome, what):
    assert outcome.get("error") is None, "%s: %r" % (what, outcome)


def audited(api_name, verdict, name=None, since=0):
    lines = [a for a in common.audit_lines(AUDIT, every=True)[since:]
             if a.get("api_name") == api_name and a.get("verdict") == verdict
             and (name is None or any(c.get("name") == name for c in a.get("changes", [])))]
    assert lines, "no %s %s audit line%s" % (
        verdict, api_name, "" if name is None else " for " + name)
    return lines


def audit_mark():
    return len(common.audit_lines(AUDIT, every=True))


TESTS, test = registry("leadership: ")


@test("config changes that could enable unclean election are refused and never take effect "
      "[java, confluent, kafka-python]")
def unclean_configs_refused():
    topic = "lc-open"
    ensure(topic)
    ensure(PROTECTED)
    mark = audit_mark()
    before = configs("topic:" + topic, UNCLEAN)
    protected_before = configs("topic:" + PROTECTED, UNCLEAN)
    default_before = configs("broker:2", UNCLEAN)
    # Java Admin: IncrementalAlterConfigs SET true, on a topic, the cluster default, a broker,
    # and a protected topic; DELETE of the topic's setting (back to what it inherits).
    for resource in ["topic:" + topic, "broker:", "broker:2", "topic:" + PROTECTED]:
        refused(through_guard("alter", "--resource", resource, "--set", UNCLEAN + "=true"),
                "java: %s %s=true" % (resource, UNCLEAN))
    refused(through_guard("alter", "--resource", "topic:" + topic, "--delete", UNCLEAN),
            "java: delete %s" % UNCLEAN)
    # librdkafka: IncrementalAlterConfigs.
    admin = AdminClient({"bootstrap.servers": PROXY, "client.id": "lc-confluent", "log_level": 3})
    res = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry(UNCLEAN, "true", incremental_operation=AlterConfigOpType.SET)])
    try:
        admin.incremental_alter_configs([res])[res].result(timeout=30)
        raise AssertionError("confluent: incremental_alter_configs was not refused")
    except KafkaException as e:
        assert e.args[0].code() == POLICY_VIOLATION, e
    # kafka-python's alter_configs (IncrementalAlterConfigs, in kafka-python 3).
    kp = KafkaAdminClient(bootstrap_servers=PROXY.split(","), client_id="lc-kafka-python",
                          request_timeout_ms=30000)
    try:
        try:
            response = kp.alter_configs([KpConfigResource(ConfigResourceType.TOPIC, topic,
                                                          configs={UNCLEAN: "true"})])
            # kafka-python 3 answers {"topic": {NAME: "[Error 44] PolicyViolationError: ..."}}
            # (None where the change was made); older ones the response itself.
            if isinstance(response, dict):
                outcome = str(response.get("topic", {}).get(topic))
                assert outcome.startswith("[Error %d]" % POLICY_VIOLATION) \
                    and "elect-leaders proxy" in outcome, "kafka-python: %r" % (response,)
            else:
                codes = [r[0] for r in getattr(response, "resources", [])]
                assert codes == [POLICY_VIOLATION], "kafka-python: %r" % (response,)
        except AssertionError:
            raise
        except Exception as e:  # a kafka-python that raises on a refused entry
            assert "olicy" in type(e).__name__ + str(e), "kafka-python: %r" % (e,)
    finally:
        kp.close()
    time.sleep(1.0)
    after = configs("topic:" + topic, UNCLEAN)
    assert after == before and after[UNCLEAN]["value"] == "false", (before, after)
    assert configs("broker:2", UNCLEAN) == default_before, default_before
    assert configs("topic:" + PROTECTED, UNCLEAN) == protected_before, protected_before
    lines = audited("IncrementalAlterConfigs", "refused", since=mark)
    assert any(a["rules"] == ["deny-unclean"] and a["client_id"] == "lc-java" for a in lines), lines
    # kafka-python 3 sends IncrementalAlterConfigs for alter_configs too (the legacy
    # AlterConfigs is read and refused in crates/proxy/src/leadership/tests.rs).
    assert any(a["client_id"] == "lc-kafka-python" for a in lines), lines
    # What the policy allows goes through and takes effect: false, and another config.
    allowed(through_guard("alter", "--resource", "topic:" + topic, "--set", UNCLEAN + "=false",
                          "--set", "retention.ms=3600000"), "java: %s=false" % UNCLEAN)
    now = configs("topic:" + topic, UNCLEAN, "retention.ms")
    assert now[UNCLEAN]["source"] == "DYNAMIC_TOPIC_CONFIG" and now[UNCLEAN]["value"] == "false", now
    assert now["retention.ms"]["value"] == "3600000", now
    audited("IncrementalAlterConfigs", "forwarded", topic, since=mark)


@test("min.insync.replicas of a protected topic, or the default it inherits, is not changed [java]")
def min_isr_refused():
    ensure(PROTECTED)
    mark = audit_mark()
    before = configs("topic:" + PROTECTED, MIN_ISR)
    refused(through_guard("alter", "--resource", "topic:" + PROTECTED, "--set", MIN_ISR + "=1"),
            "topic min.insync.replicas=1")
    refused(through_guard("alter", "--resource", "broker:", "--set", MIN_ISR + "=1"),
            "cluster default min.insync.replicas=1")
    time.sleep(1.0)
    assert configs("topic:" + PROTECTED, MIN_ISR) == before, before
    lines = audited("IncrementalAlterConfigs", "refused", PROTECTED, since=mark)
    assert any("protect-topic" in a["rules"] for a in lines), lines
    # On a topic that is not protected: allowed.
    ensure("lc-open")
    allowed(through_guard("alter", "--resource", "topic:lc-open", "--set", MIN_ISR + "=1"),
            "open topic min.insync.replicas=1")
    assert configs("topic:lc-open", MIN_ISR)[MIN_ISR]["value"] == "1"


@test("a protected topic's partitions are not reassigned, its leader stays; an open topic's move [java]")
def reassignment_refused():
    before = ensure(PROTECTED)
    mark = audit_mark()
    replicas = before[0]["replicas"]
    refused(through_guard("try", "--what", "reassign", "--partition", PROTECTED + ":0",
                          "--replicas", ",".join(map(str, reversed(replicas)))),
            "reassign %s:0" % PROTECTED)
    time.sleep(2.0)
    after = describe(PROTECTED)
    assert [(p["leader"], p["replicas"]) for p in after] == \
        [(p["leader"], p["replicas"]) for p in before], (before, after)
    audited("AlterPartitionReassignments", "refused", PROTECTED, since=mark)
    # An open topic: the same request moves it.
    ensure("lc-move")
    through_guard("reassign", "--partition", "lc-move:0", "--replicas", "3,2")
    assert describe("lc-move")[0]["replicas"] == [3, 2]
    audited("AlterPartitionReassignments", "forwarded", "lc-move", since=mark)


@test("no partitions added to a protected topic, no protected topic deleted; open ones change [java]")
def partitions_and_deletion():
    before = ensure(PROTECTED)
    mark = audit_mark()
    refused(through_guard("try", "--what", "add-partitions", "--topic", PROTECTED,
                          "--count", str(len(before) + 1)), "add partitions to " + PROTECTED)
    refused(through_guard("try", "--what", "delete", "--topic", PROTECTED), "delete " + PROTECTED)
    time.sleep(1.0)
    assert len(describe(PROTECTED)) == len(before)
    audited("CreatePartitions", "refused", PROTECTED, since=mark)
    audited("DeleteTopics", "refused", PROTECTED, since=mark)
    # Open topics: allowed, and done.
    ensure("lc-grow")
    allowed(through_guard("try", "--what", "add-partitions", "--topic", "lc-grow", "--count", "2"),
            "add partitions to lc-grow")
    wait_for("2 partitions of lc-grow", lambda: ((d := describe("lc-grow")) is not None
                                                  and len(d) == 2, d))
    ensure("lc-gone")
    allowed(through_guard("try", "--what", "delete", "--topic", "lc-gone"), "delete lc-gone")
    wait_for("lc-gone deleted", lambda: ((d := describe("lc-gone")) is None, d))


@test("no topic created with unclean election enabled; with it disabled, created [java]")
def creation():
    mark = audit_mark()
    refused(through_guard("try", "--what", "create", "--topic", "lc-unclean",
                          "--config", UNCLEAN + "=true"), "create with %s=true" % UNCLEAN)
    time.sleep(1.0)
    assert describe("lc-unclean") is None
    audited("CreateTopics", "refused", "lc-unclean", since=mark)
    allowed(through_guard("try", "--what", "create", "--topic", "lc-clean",
                          "--config", UNCLEAN + "=false"), "create with %s=false" % UNCLEAN)
    wait_for("lc-clean created", lambda: ((d := describe("lc-clean")) is not None, d))
    audited("CreateTopics", "forwarded", "lc-clean", since=mark)
