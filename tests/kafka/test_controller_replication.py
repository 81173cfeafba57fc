"""Kafka's replication system test on loopback, its controllers kraft's:
Apache Kafka's ``kafkatest.tests.core.replication_test``,
``ReplicationTest.test_replication_with_broker_failure`` (broker_type
"leader", PLAINTEXT, enable_idempotence=True), with three ``kraft node
start`` controllers in place of Kafka's and three real Kafka brokers.

As there: one topic of 3 partitions, replication factor 3,
min.insync.replicas=2; Kafka's VerifiableProducer (acks=-1, idempotent) and
VerifiableConsumer run in the background; the test drives a failure; then
the producer stops and the consumer reads on until it has every
acknowledged message (EndToEndTest.run_validation, validate_delivery with
idempotence: nothing lost, nothing written twice).

The failures: kafkatest's ``clean_shutdown`` and ``hard_shutdown`` of
partition 0's leader (SIGTERM, SIGKILL; here the broker is restarted once
the others serve on, so the next case finds three brokers), ``clean_bounce``
(restart the leader, chase the new one: what the controller's controlled
shutdown and leader election do), and what kafkatest cannot do with KRaft
controllers and kraft can: ``controller_kill``, kill -9 of the active kraft
controller, a clean bounce of a leader under the new one, and the old one's
restart. Each case is what a kraft controller must get right for no
acknowledged write to be lost: fencing a dead broker (BrokerHeartbeat
session expiry), controlled shutdown (BrokerHeartbeat wantShutDown), leader
election from the ISR, AlterPartition from the leaders, unfencing a broker
that comes back.

One cluster per release serves the module's cases (the JVMs are most of the
time): each case has its own topic and group, and leaves every broker
running with every replica in sync. The cheap case runs on the oldest and the
newest release, the expensive ones on the newest.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.harness.kafka_cluster import KafkaCluster
from tests.kafka.kraft_controlled import active_controller, bootstrap, kraft_controlled, partition_leader, until
from tests.kafka.releases import ends, newest, require
from tests.kafka.report import report
from tests.kafka.verifiable import VerifiableClient, delivery, verifiable_consumer, verifiable_producer

pytestmark = pytest.mark.slow

#: kafkatest's TOPIC_CONFIG.
PARTITIONS, REPLICATION_FACTOR, MIN_ISR = 3, 3, 2
#: Messages a second (kafkatest: 1000 on a machine per service; here
#: everything shares two cores).
THROUGHPUT = 200
#: Acknowledgements the producer must add after each failure
#: (ProduceConsumeValidateTest.check_producing: 5; more here, so that a
#: stall shows).
PROGRESS = 100
#: kafkatest's clean_bounce restarts 5 times; 2 chase the leader on to a second
#: broker (each restart is ~20 s of the module's time on two cores).
BOUNCES = 2
BOUND_S = 180.0


@pytest.fixture(scope="module")
def kraft_cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    release = require(request.param)
    cluster = kraft_controlled(tmp_path_factory.mktemp(f"replication-{release.version}"), release,
                               extra={"kraft.witness": "false", "kraft.controller": "true"})
    try:
        cluster.start(list(cluster.kraft.values()))
        cluster.start(list(cluster.brokers.values()))
        yield cluster
    finally:
        cluster.close()


def _acked(producer: VerifiableClient) -> int:
    return sum(1 for _ in producer.events("producer_send_success"))


def _producing(producer: VerifiableClient, what: str) -> None:
    """ProduceConsumeValidateTest.check_producing: the producer acknowledges more."""
    before = _acked(producer)
    until(f"{PROGRESS} more acknowledgements {what}", lambda: _acked(producer) >= before + PROGRESS, BOUND_S)
    assert producer.alive, f"{producer.name} exited: {producer.why()}"


def _in_sync(cluster: KafkaCluster, topic: str) -> bool:
    """Every partition of ``topic`` has a leader and all three replicas in its ISR."""
    out = cluster.run_tool("TopicCommand", "--bootstrap-server", bootstrap(cluster), "--describe", "--topic", topic)
    rows = [line for line in out.splitlines() if "Partition:" in line]
    isrs = [re.search(r"Isr: ([\d,]*)", row) for row in rows]
    return (len(rows) == PARTITIONS and "Leader: none" not in out
            and all(m is not None and len(m.group(1).split(",")) == REPLICATION_FACTOR for m in isrs))


def _restart(cluster: KafkaCluster, node_id: int) -> None:
    server = cluster.brokers.get(node_id) or cluster.kraft[node_id]
    server.start()
    server.started()


def _stop_leader(cluster: KafkaCluster, topic: str, producer: VerifiableClient, hard: bool) -> None:
    """kafkatest's clean_shutdown / hard_shutdown of partition 0's leader;
    the others serve on; then the broker comes back and catches up."""
    leader = partition_leader(cluster, topic)
    broker = cluster.brokers[leader]
    if hard:
        broker.kill()
    else:
        assert broker.terminate(BOUND_S) == 0 or not broker.alive, f"{broker.name} did not stop on SIGTERM"
    _producing(producer, f"with broker {leader} {'killed' if hard else 'shut down'}")
    until(f"a leader for {topic}-0 other than {leader}", lambda: partition_leader(cluster, topic) not in (leader, -1))
    _restart(cluster, leader)
    until(f"broker {leader} back in every ISR of {topic}", lambda: _in_sync(cluster, topic), BOUND_S)


def clean_shutdown(cluster: KafkaCluster, topic: str, producer: VerifiableClient) -> None:
    _stop_leader(cluster, topic, producer, hard=False)


def hard_shutdown(cluster: KafkaCluster, topic: str, producer: VerifiableClient) -> None:
    _stop_leader(cluster, topic, producer, hard=True)


def clean_bounce(cluster: KafkaCluster, topic: str, producer: VerifiableClient) -> None:
    """kafkatest's clean_bounce: restart partition 0's leader (SIGTERM),
    chase the next one. Each restart waits for the ISR to be whole again:
    with min.insync.replicas=2 of 3 the producer is then never refused."""
    for _ in range(BOUNCES):
        leader = partition_leader(cluster, topic)
        broker = cluster.brokers[leader]
        broker.terminate(BOUND_S)
        _restart(cluster, leader)
        until(f"broker {leader} back in every ISR of {topic}", lambda: _in_sync(cluster, topic), BOUND_S)
        _producing(producer, f"after broker {leader}'s restart")


def controller_kill(cluster: KafkaCluster, topic: str, producer: VerifiableClient) -> None:
    """kill -9 of the active kraft controller: another is elected, the
    brokers heartbeat to it, it answers a leader's controlled shutdown and
    elects; the old one restarts and follows."""
    active = active_controller(cluster)
    assert active in cluster.kraft, f"the active controller {active} is not a kraft controller"
    cluster.kraft[active].kill()
    successor = until(f"an active controller other than {active}",
                      lambda: next((n for n in [active_controller(cluster)] if n not in (active, -1)), None), BOUND_S)
    _producing(producer, f"with controller {active} killed")
    clean_shutdown(cluster, topic, producer)  # under the successor
    _restart(cluster, active)
    _producing(producer, f"with controller {active} back (controller {successor} active)")


FAILURES: dict[str, Callable[[KafkaCluster, str, VerifiableClient], None]] = {
    f.__name__: f for f in (clean_shutdown, hard_shutdown, clean_bounce, controller_kill)}
#: The cheap case on both ends; the rest on the newest release.
CASES = [pytest.param(v, "clean_shutdown", id=f"{v}-clean_shutdown") for v in ends()] + [
    pytest.param(newest(), mode, id=f"{newest()}-{mode}") for mode in ("hard_shutdown", "clean_bounce",
                                                                       "controller_kill")]


@pytest.mark.parametrize(("kraft_cluster", "failure_mode"), CASES, indirect=["kraft_cluster"],
                         scope="module")  # one cluster per release: the cases share it
def test_replication_with_broker_failure(kraft_cluster: KafkaCluster, failure_mode: str, tmp_path: Path) -> None:
    """ReplicationTest.test_replication_with_broker_failure(failure_mode,
    broker_type="leader", enable_idempotence=True)."""
    c = kraft_cluster
    topic, group = f"test_topic-{uuid.uuid4().hex[:6]}", f"test_group-{uuid.uuid4().hex[:6]}"
    # RF 3 needs three unfenced brokers: the previous case's restart may still be registering.
    until("the topic created", lambda: "Created topic" in c.run_tool(
        "TopicCommand", "--bootstrap-server", bootstrap(c), "--create", "--topic", topic,
        "--partitions", str(PARTITIONS), "--replication-factor", str(REPLICATION_FACTOR),
        "--config", f"min.insync.replicas={MIN_ISR}"), BOUND_S)
    until(f"{topic} in sync", lambda: _in_sync(c, topic), BOUND_S)
    producer = verifiable_producer(c.release, tmp_path / "producer", bootstrap(c), topic, THROUGHPUT)
    consumer = verifiable_consumer(c.release, tmp_path / "consumer", bootstrap(c), topic, group)
    try:
        consumer.start()
        producer.start()
        # EndToEndTest.await_startup: the consumer has consumed some records.
        until("the consumer's first records", lambda: sum(1 for _ in consumer.events("record_data")) >= 5, BOUND_S)
        FAILURES[failure_mode](c, topic, producer)
        _producing(producer, "after the failure")
        producer.terminate(60.0)  # its shutdown hook closes the producer: every send answered
        try:
            until("every acknowledged message consumed", lambda: not delivery(producer, consumer).missing, BOUND_S)
        except AssertionError:
            pass  # the assertion below says what is missing
    finally:
        producer.kill()
        consumer.terminate(60.0)
    result = delivery(producer, consumer)
    report(c.release.version, f"replication-{failure_mode}", acked=result.acked, consumed=result.consumed,
           send_errors=sum(1 for _ in producer.events("producer_send_error")))
    assert result.acked > 0 and not result.missing and not result.duplicated, str(result)
