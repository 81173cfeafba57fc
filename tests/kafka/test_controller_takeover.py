"""Kafka's controllers take over a cluster kraft's controllers ran: a
dynamic quorum (KIP-853) started by kraft, real Kafka controllers added with
``kafka-metadata-quorum add-controller``, the kraft controllers removed with
``remove-controller``, the brokers serving throughout.

The kraft controllers run with the default ``kraft.witness=auto``
(kraft/raft/witness_policy.py): alone in the voter set they lead and serve
Kafka's controller (no Kafka controller to leave it to); once a voter
advertises Kafka's controller APIs they resign in its favour and never
campaign again. ``kraft.witness=false`` would keep a kraft voter leading
beside Kafka's voters, and ``remove-controller`` of the leader would then be
what moves the leadership; with ``auto`` the hand-over is Raft's own
(EndQuorumEpoch naming the Kafka voters), which is the path an operator
migrating to Kafka's controllers takes. Either way what must hold is the
same: Kafka's QuorumController replays every record kraft's controller
wrote, first as an observer fetching the log, then as the active controller.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

from tests.harness.kafka_cluster import KafkaCluster, KafkaServer, KraftVoter
from tests.kafka.kraft_controlled import until
from tests.kafka.releases import KafkaRelease
from tests.kafka.report import report
from tests.kafka.verifiable import VerifiableClient, verifiable_consumer, verifiable_producer

pytestmark = pytest.mark.slow

KRAFT, KAFKA, BROKER = (1, 2), (4, 5), 101
MESSAGES = 500
BOUND_S = 180.0
#: What Kafka logs when a record cannot be replayed or loaded
#: (QuorumController's fault handlers, MetadataLoader, the broker's
#: BrokerMetadataPublisher): none may appear.
FAULTS = re.compile(r"Encountered metadata loading fault|Encountered metadata publishing fault|"
                    r"Encountered fatal fault|Error replaying|(ERROR|FATAL) .*[Rr]eplay")


def _bootstrap_controllers(cluster: KafkaCluster, ids: tuple[int, ...]) -> str:
    return ",".join(f"127.0.0.1:{cluster.controller_ports[i]}" for i in ids)


def _voters(cluster: KafkaCluster, via: tuple[int, ...]) -> list[int]:
    status = cluster.describe_quorum("--status", bootstrap=_bootstrap_controllers(cluster, via))
    line = next(line for line in status.splitlines() if line.startswith("CurrentVoters:"))
    return sorted(int(i) for i in re.findall(r'"id":\s*(\d+)', line))


def _leader(cluster: KafkaCluster, via: tuple[int, ...]) -> int:
    status = cluster.describe_quorum("--status", bootstrap=_bootstrap_controllers(cluster, via))
    found = re.search(r"LeaderId:\s+(-?\d+)", status)
    assert found is not None, status
    return int(found.group(1))


def _add(cluster: KafkaCluster, server: KafkaServer | KraftVoter, via: tuple[int, ...]) -> str:
    out = cluster.run_tool("MetadataQuorumCommand", "--bootstrap-controller", _bootstrap_controllers(cluster, via),
                           "--command-config", str(server.config), "add-controller")
    assert out.startswith(f"Added controller {server.node_id} "), out
    return out


def _remove(cluster: KafkaCluster, voter: KraftVoter, via: tuple[int, ...]) -> None:
    meta = (voter.data / "meta.properties").read_text()
    directory = re.search(r"^directory\.id=(\S+)$", meta, flags=re.MULTILINE)
    assert directory is not None, meta
    out = cluster.run_tool("MetadataQuorumCommand", "--bootstrap-controller", _bootstrap_controllers(cluster, via),
                           "remove-controller", "--controller-id", str(voter.node_id),
                           "--controller-directory-id", directory.group(1))
    # MetadataQuorumCommand.handleRemoveController: "Removed KRaft controller N with directory id D"
    # (4.0 prints two spaces after "Removed").
    assert re.fullmatch(rf"Removed +KRaft controller {voter.node_id} with directory id {re.escape(directory.group(1))}",
                        out.strip()), out


def _produce(cluster: KafkaCluster, folder: Path, topic: str) -> set[int]:
    """MESSAGES from VerifiableProducer (acks=-1, idempotent): the acknowledged values."""
    producer = verifiable_producer(cluster.release, folder, _broker(cluster), topic, throughput=-1)
    producer.args += ["--max-messages", str(MESSAGES)]
    producer.start()
    assert producer.reap(BOUND_S) == 0, f"{producer.name}: {producer.why()}"
    return set(producer.values("producer_send_success"))


def _consume(cluster: KafkaCluster, folder: Path, topic: str, count: int) -> set[int]:
    consumer = verifiable_consumer(cluster.release, folder, _broker(cluster), topic, f"g-{uuid.uuid4().hex[:6]}")
    consumer.args += ["--max-messages", str(count)]
    consumer.start()
    assert consumer.reap(BOUND_S) == 0, f"{consumer.name}: {consumer.why()}"
    return set(consumer.values("record_data"))


def _broker(cluster: KafkaCluster) -> str:
    return f"127.0.0.1:{cluster.brokers[BROKER].port}"


def _create(cluster: KafkaCluster, topic: str) -> str:
    out = cluster.run_tool("TopicCommand", "--bootstrap-server", _broker(cluster), "--create", "--topic", topic,
                           "--partitions", "3", "--replication-factor", "1")
    assert f"Created topic {topic}." in out, out
    return out


def _faults(server: KafkaServer) -> list[str]:
    return [line for line in server.text().splitlines() if FAULTS.search(line)]


def test_kafka_controllers_take_over_from_kraft(release: KafkaRelease, tmp_path: Path,
                                                clusters: list[object]) -> None:
    """KIP-853's migration of a quorum's controllers, kraft's to Kafka's:
    MetadataQuorumCommand add-controller / remove-controller, Kafka's
    QuorumController replaying what kraft's QuorumController wrote
    (QuorumController.replay, MetadataLoader), the broker serving before,
    during and after, and Kafka's DumpLogSegments --cluster-metadata-decoder
    reading the log kraft kept."""
    cluster = KafkaCluster(tmp_path, release, kafka_controllers=KAFKA, kraft_voters=KRAFT, brokers=(BROKER,),
                      dynamic=True, extra={"kraft.witness": "auto", "kraft.controller": "true"})
    clusters.append(cluster)
    cluster.format()  # kraft 1 --standalone; kraft 2 and Kafka's --no-initial-controllers
    cluster.start(list(cluster.kraft.values()))
    until("kraft controller 2 added", lambda: _add(cluster, cluster.kraft[2], KRAFT), BOUND_S)
    until("voters 1, 2", lambda: _voters(cluster, KRAFT) == [1, 2], BOUND_S)
    cluster.start([cluster.brokers[BROKER]])
    before = f"before-{uuid.uuid4().hex[:6]}"
    until("a topic on the kraft controllers", lambda: _create(cluster, before), BOUND_S)
    acked = _produce(cluster, tmp_path / "produce-before", before)
    assert len(acked) == MESSAGES

    cluster.start(list(cluster.kafka.values()))
    # Through the kraft controllers: a Kafka controller that only observes
    # answers DescribeCluster with the kraft leader's id but no endpoint for
    # it (kraft's controllers write no RegisterControllerRecord of their own),
    # so an admin client bootstrapped there times out ("Timed out waiting for
    # a node assignment. Call: addRaftVoter").
    for node_id in KAFKA:
        until(f"Kafka controller {node_id} added", lambda: _add(cluster, cluster.kafka[node_id], KRAFT),
              BOUND_S)
    until("a Kafka controller leads", lambda: _leader(cluster, KAFKA) in KAFKA, BOUND_S)
    for node_id in KRAFT:
        _remove(cluster, cluster.kraft[node_id], KAFKA)
    until("voters 4, 5", lambda: _voters(cluster, KAFKA) == list(KAFKA), BOUND_S)
    for voter in cluster.kraft.values():
        voter.terminate()

    after = f"after-{uuid.uuid4().hex[:6]}"
    until("a topic on Kafka's controllers", lambda: _create(cluster, after), BOUND_S)
    acked_after = _produce(cluster, tmp_path / "produce-after", after)
    more = _produce(cluster, tmp_path / "produce-more", before)
    assert len(acked_after) == MESSAGES and len(more) == MESSAGES
    assert _consume(cluster, tmp_path / "consume-before", before, 2 * MESSAGES) == acked | more
    assert _consume(cluster, tmp_path / "consume-after", after, MESSAGES) == acked_after
    for server in (*cluster.kafka.values(), cluster.brokers[BROKER]):
        assert not _faults(server), f"{server.name}: {_faults(server)[:5]}"
    for server in cluster.kafka.values():
        # QuorumController.replay of kraft's records (ReplicationControlManager.replay logs each new partition).
        assert f"Replayed PartitionRecord for new partition {before}-0 " in server.text(), server.why()

    segments = sorted((cluster.kraft[1].data / "__cluster_metadata-0").glob("*.log"))
    dumped = cluster.run_tool("DumpLogSegments", "--cluster-metadata-decoder", "--files",
                              ",".join(map(str, segments)))
    assert "payload:" in dumped and "Exception" not in dumped, dumped[-2000:]
    report(release.version, "controller-takeover", acked=len(acked) + len(acked_after) + len(more),
           leader=_leader(cluster, KAFKA))


def test_a_kafka_observer_controller_can_reach_the_kraft_leader(release: KafkaRelease, tmp_path: Path,
                                                                clusters: list[object]) -> None:
    """What an operator's first step of the take-over meets: a Kafka
    controller formatted --no-initial-controllers and started beside a kraft
    leader answers DescribeCluster (ControllerApis.handleDescribeCluster:
    the raft leader's id, the registered controllers' endpoints); the admin
    client kafka-metadata-quorum builds on it must find the leader there, as
    it does when the leader is a Kafka controller (registered by its own
    ControllerRegistrationManager)."""
    cluster = KafkaCluster(tmp_path, release, kafka_controllers=(4,), kraft_voters=(1,), brokers=(), dynamic=True,
                      extra={"kraft.witness": "auto", "kraft.controller": "true"})
    clusters.append(cluster)
    cluster.format()
    cluster.start(list(cluster.kraft.values()))
    cluster.start(list(cluster.kafka.values()))
    config = tmp_path / "admin.properties"
    config.write_text("default.api.timeout.ms=20000\nrequest.timeout.ms=10000\n")
    status = cluster.run_tool("MetadataQuorumCommand", "--bootstrap-controller", _bootstrap_controllers(cluster, (4,)),
                              "--command-config", str(config), "describe", "--status")
    assert re.search(r"LeaderId:\s+1\b", status), status
