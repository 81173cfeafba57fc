"""The quickstart's second part: a whole Kafka cluster on kraft controllers.

Three ``kraft node start`` controllers running Kafka's controller, three
real Kafka brokers (:mod:`kraft.tools.kafka_brokers`), a topic of three
partitions replicated three times, records produced (acks=all, idempotent)
and consumed with kafka-python, then kill -9 of the broker leading
partition 0: the controller fences it when its session times out and moves
its leaderships to the other replicas, and every record is read again.
Without Java or Kafka's jars it says what it skips, and why.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from kraft.records.state_files import random_cluster_id
from kraft.tools.kafka_brokers import KafkaBroker, KafkaJars, find_kafka

__all__ = ["run_kafka_cluster"]

CONTROLLERS = (1, 2, 3)
BROKERS = (101, 102, 103)
TOPIC = "quickstart-kafka"
RECORDS = 100


def _leaders(bootstrap: str) -> dict[int, int]:
    """Partition -> leader of :data:`TOPIC`, from a broker's Metadata."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        consumer.topics()  # fetches metadata
        cluster = consumer._client.cluster  # kafka-python keeps the last Metadata here
        return {p: cluster.leader_for_partition(_tp(TOPIC, p)) for p in cluster.partitions_for_topic(TOPIC) or ()}
    finally:
        consumer.close()


def _tp(topic: str, partition: int) -> object:
    from kafka import TopicPartition

    return TopicPartition(topic, partition)


def _consume(bootstrap: str) -> set[str]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             consumer_timeout_ms=15000, group_id=None)
    try:
        return {m.value.decode() for m in consumer}
    finally:
        consumer.close()


def _until(check: Callable[[], bool], what: str, timeout_s: float = 120.0) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        try:
            if check():
                return time.monotonic() - start
        except Exception:  # the cluster is settling: ask again
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{what}: not within {timeout_s:.0f} s")


class _Controllers:
    """The three kraft controllers, formatted for the jars' release."""

    def __init__(self, root: Path, ports: list[int], cluster_id: str, jars: KafkaJars) -> None:
        self.root = root
        self.voters = ",".join(f"{i}@127.0.0.1:{p}" for i, p in zip(CONTROLLERS, ports))
        self.procs: list[subprocess.Popen[bytes]] = []
        self.configs = []
        for node_id, port in zip(CONTROLLERS, ports):
            config = root / f"controller-{node_id}.properties"
            keys = {"process.roles": "controller", "node.id": node_id, "controller.quorum.voters": self.voters,
                    "listeners": f"CONTROLLER://127.0.0.1:{port}", "controller.listener.names": "CONTROLLER",
                    "metadata.log.dir": root / f"controller-{node_id}", "kraft.witness": "false", "kraft.controller": "true",
                    "min.insync.replicas": 2}
            config.write_text("".join(f"{k}={v}\n" for k, v in keys.items()))
            release = ["--kafka-version", jars.version] if jars.version else []
            subprocess.run([sys.executable, "-m", "kraft.cli", "storage", "format", "-c", str(config),
                            "-t", cluster_id, *release], check=True, capture_output=True)
            self.configs.append(config)

    def start(self) -> None:
        for node_id, config in zip(CONTROLLERS, self.configs):
            out = open(self.root / f"controller-{node_id}.log", "ab")
            self.procs.append(subprocess.Popen([sys.executable, "-m", "kraft.cli", "node", "start", "-c", str(config)],
                                               stdout=out, stderr=subprocess.STDOUT))
            out.close()

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()


def run_kafka_cluster(root: Path, ports: list[int], say: Callable[[str], None],
                      listening: Callable[[], None] = lambda: None) -> bool:
    """The Kafka cluster part in ``root`` on ``ports`` (six of them);
    ``listening`` is called once every node holds its port. False when it
    was skipped (no Java or no jars: said why)."""
    found = find_kafka()
    if isinstance(found, str):
        listening()
        say(f"skipping the Kafka cluster on kraft controllers: {found}")
        return False
    root.mkdir(parents=True, exist_ok=True)
    cluster_id = random_cluster_id()
    controllers = _Controllers(root, ports[:3], cluster_id, found)
    brokers = {b: KafkaBroker(found, b, p, root / f"broker-{b}", cluster_id=cluster_id, voters=controllers.voters,
                              replication_factor=3) for b, p in zip(BROKERS, ports[3:6])}
    try:
        for broker in brokers.values():
            broker.format()
        controllers.start()
        for broker in brokers.values():
            broker.start()
        for broker in brokers.values():
            broker.wait_started()
        listening()
        bootstrap = ",".join(f"127.0.0.1:{b.port}" for b in brokers.values())
        say(f"Kafka {found.version or 'from ' + str(found.libs)}: brokers {', '.join(map(str, BROKERS))} "
            f"registered with kraft controllers {', '.join(map(str, CONTROLLERS))} and serve on {bootstrap}")
        _demo(bootstrap, brokers, say)
        return True
    finally:
        for broker in brokers.values():
            broker.stop()
        controllers.stop()


def _demo(bootstrap: str, brokers: dict[int, KafkaBroker], say: Callable[[str], None]) -> None:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(TOPIC, 3, 3)])
    finally:
        admin.close()
    _until(lambda: len(_leaders(bootstrap)) == 3, "the topic's leaders")
    say(f"created topic {TOPIC} (3 partitions, 3 replicas); leaders {_text(_leaders(bootstrap))}")
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
    for i in range(RECORDS):
        producer.send(TOPIC, f"record-{i}".encode())
    producer.flush(timeout=60)
    producer.close()
    sent = {f"record-{i}" for i in range(RECORDS)}
    if _consume(bootstrap) != sent:
        raise RuntimeError("the consumer did not read back every acknowledged record")
    say(f"produced {RECORDS} records (acks=all, idempotent) and consumed all {RECORDS}")
    victim = _leaders(bootstrap)[0]
    brokers[victim].kill()
    say(f"kill -9 broker {victim} (the leader of partition 0)")
    rest = ",".join(f"127.0.0.1:{b.port}" for i, b in brokers.items() if i != victim)
    took = _until(lambda: victim not in _leaders(rest).values() and len(_leaders(rest)) == 3,
                  f"leaders away from broker {victim}")
    say(f"the controller fenced broker {victim} and moved its leaderships in {took:.1f} s: leaders "
        f"{_text(_leaders(rest))}")
    if _consume(rest) != sent:
        raise RuntimeError(f"records were lost after broker {victim} died")
    say(f"all {RECORDS} records read again from the two live brokers")


def _text(leaders: dict[int, int]) -> str:
    return ", ".join(f"p{p}={b}" for p, b in sorted(leaders.items()))
