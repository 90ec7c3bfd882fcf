#!/usr/bin/env python3
"""One client's loop of ElectLeaders calls against `elect-leaders fuzz --serve`: the child
process of driver.py.

    client.py CLIENT BOOTSTRAP CALLS TIMEOUT_MS

CLIENT is kafka-python or confluent. Before each call it prints {"call": k} and after it
one JSON line: {"call": k, "outcome": "accepted", "results": N} or {"call": k, "outcome":
"exception", "kind": "module.Class", "message": "..."}, flushed, so that the driver sees
which call a crash or a hang happened in. Errors the response carries per partition are
not exceptions here (a hostile broker answers any code): the call is accepted.
"""
import json
import sys
import time

# The partitions asked for: two topics, one of them with two partitions.
ASKED = {"fuzz-a": [0, 1], "fuzz-b": [7]}


def say(**kw):
    kw["t"] = int(time.time() * 1000)  # the wall clock, ms: the driver attributes by it
    sys.stdout.write(json.dumps(kw) + "\n")
    sys.stdout.flush()


def kind_of(e):
    t = type(e)
    return "%s.%s" % (t.__module__, t.__qualname__)


def kafka_python(bootstrap, timeout_ms):
    from kafka import KafkaAdminClient

    # Short reconnect backoffs: a connection closed after a bad response comes back at
    # once, so that calls failing on the way back are not taken for a dead client.
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="fuzz-kafka-python",
                             request_timeout_ms=timeout_ms, reconnect_backoff_ms=10,
                             reconnect_backoff_max_ms=100)

    def call():
        r = admin.elect_leaders(0, ASKED, timeout_ms=1000, raise_errors=False)
        return sum(len(t.partition_result) for t in r.replica_election_results)
    return call


def confluent(bootstrap, timeout_ms):
    from confluent_kafka import ElectionType, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "fuzz-confluent",
                         "socket.timeout.ms": timeout_ms, "log_level": 0,
                         "reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 100})
    tps = [TopicPartition(t, p) for t, ps in ASKED.items() for p in ps]

    def call():
        # Not request_timeout=: confluent-kafka 2.16.1 raises SystemError on any keyword
        # argument of elect_leaders (its argument parsing is broken); socket.timeout.ms
        # bounds the call instead.
        futures = admin.elect_leaders(ElectionType.PREFERRED, tps)
        r = futures.result(timeout=timeout_ms / 1000.0 + 5)
        return len(r)
    return call


def main():
    client, bootstrap, calls, timeout_ms = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    make = {"kafka-python": kafka_python, "confluent": confluent}[client]
    try:
        call = make(bootstrap, timeout_ms)
    except Exception as e:  # noqa: BLE001 - reported, not hidden
        say(call=-1, outcome="exception", kind=kind_of(e), message=str(e)[:300])
        return
    for k in range(calls):
        say(call=k)
        try:
            n = call()
            say(call=k, outcome="accepted", results=n)
        except Exception as e:  # noqa: BLE001 - every kind is what the driver classifies
            say(call=k, outcome="exception", kind=kind_of(e), message=str(e)[:300])


if __name__ == "__main__":
    main()
