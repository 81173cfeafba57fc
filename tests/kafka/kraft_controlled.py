"""Real Kafka brokers on a quorum of kraft controllers: the cluster, the
brokers' bootstrap list, and what the tests ask it through Kafka's tools
(a partition's leader, the active controller)."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from tests.harness import poll
from tests.harness.kafka_cluster import KafkaCluster
from tests.kafka.releases import KafkaRelease

__all__ = ["BROKER_KEYS", "active_controller", "bootstrap", "kraft_controlled", "partition_leader", "until"]

#: What a 3-broker cluster runs its internal topics with (Kafka's defaults are RF 3, min ISR 2).
BROKER_KEYS = {"offsets.topic.replication.factor": 3, "transaction.state.log.replication.factor": 3,
               "transaction.state.log.min.isr": 2, "default.replication.factor": 3, "min.insync.replicas": 2}


def kraft_controlled(root: Path, release: KafkaRelease, *, voters: tuple[int, ...] = (1, 2, 3),
                     brokers: tuple[int, ...] = (101, 102, 103), dynamic: bool = False,
                     extra: dict[str, object] | None = None) -> KafkaCluster:
    """A formatted cluster of kraft controllers ``voters`` and real Kafka
    ``brokers`` (not started); the brokers carry :data:`BROKER_KEYS`."""
    cluster = KafkaCluster(root, release, kafka_controllers=(), kraft_voters=voters, brokers=brokers, dynamic=dynamic,
                      extra=extra)
    cluster.format()
    for broker in cluster.brokers.values():
        with broker.config.open("a") as f:  # the later key wins in a properties file
            f.writelines(f"{k}={v}\n" for k, v in BROKER_KEYS.items())
    return cluster


def bootstrap(cluster: KafkaCluster) -> str:
    """Every broker, as ``--bootstrap-server``."""
    return ",".join(f"127.0.0.1:{b.port}" for b in cluster.brokers.values())


#: The harness poller as the real-Kafka tests ask it: each answer runs a Kafka
#: tool (a JVM), so once a second, and a tool failing while the cluster
#: settles is a no.
until = functools.partial(poll.until, interval_s=1.0, retry=(Exception,))


def partition_leader(cluster: KafkaCluster, topic: str, partition: int = 0) -> int:
    """The partition's leader as ``kafka-topics.sh --describe`` prints it
    through the brokers (kafkatest's ``KafkaService.leader``); -1 when it has none."""
    out = cluster.run_tool("TopicCommand", "--bootstrap-server", bootstrap(cluster), "--describe", "--topic", topic)
    found = re.search(rf"Partition: {partition}\s+Leader: (-?\d+|none)", out)
    if found is None:
        raise AssertionError(f"no partition {partition} in kafka-topics --describe --topic {topic}: {out!r}")
    return -1 if found.group(1) == "none" else int(found.group(1))


def active_controller(cluster: KafkaCluster, via: str | None = None) -> int:
    """The quorum's leader, ``LeaderId`` of ``kafka-metadata-quorum.sh
    describe --status`` through the brokers (or ``via``, a bootstrap list)."""
    out = cluster.run_tool("MetadataQuorumCommand", "--bootstrap-server", via or bootstrap(cluster),
                           "describe", "--status")
    found = re.search(r"LeaderId:\s+(-?\d+)", out)
    if found is None:
        raise AssertionError(f"no LeaderId in kafka-metadata-quorum describe --status: {out!r}")
    return int(found.group(1))
