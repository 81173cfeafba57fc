"""Issue 41: the records kraft's controller writes for an operation are the
records Kafka's controller writes for it -- their types, versions, fields
and order -- compared on the same steps, run through a real broker against
one real Kafka controller and against one kraft controller.

Left out of the comparison: what differs by design or by clock and nothing
reads as the operation's result -- ids drawn at random (topic ids,
incarnations, directories), NoOpRecords (one per idle interval), and the
controllers' RegisterControllerRecords (a kraft controller registers itself
when it becomes active, Kafka's at start: ``docs/beside-kafka/controller.md``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from kraft.image.metadata_source import read_segments
from kraft.records.metadata import metadata_payload_json
from tests.harness.kafka_cluster import KafkaCluster
from tests.kafka.releases import KafkaRelease

pytestmark = pytest.mark.slow

#: JSON fields that hold random ids or depend on when the step ran.
_RANDOM = {"topicId", "incarnationId", "directories", "logDirs", "brokerEpoch", "epoch", "leaderEpoch",
           "partitionEpoch", "id", "salt", "saltedPassword", "storedKey", "serverKey"}
#: Kafka's StandardAuthorizer on both sides (kafka-acls needs one), everyone allowed.
_AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
               "allow.everyone.if.no.acl.found": "true", "super.users": "User:ANONYMOUS"}
#: Records left out (module docstring).
_LEFT_OUT = {"NoOpRecord", "RegisterControllerRecord"}


def _steps(cluster: KafkaCluster) -> None:
    b = f"127.0.0.1:{cluster.brokers[101].port}"
    topics = ("TopicCommand", "--bootstrap-server", b)
    cluster.run_tool(*topics, "--create", "--topic", "orders", "--partitions", "3", "--replication-factor", "1",
                     "--config", "retention.ms=3600000")
    cluster.run_tool("ConfigCommand", "--bootstrap-server", b, "--alter", "--entity-type", "topics",
                     "--entity-name", "orders", "--add-config", "segment.ms=600000")
    cluster.run_tool("ConfigCommand", "--bootstrap-server", b, "--alter", "--entity-type", "brokers",
                     "--entity-default", "--add-config", "log.retention.bytes=1073741824")
    cluster.run_tool(*topics, "--alter", "--topic", "orders", "--partitions", "4")
    configs = ("ConfigCommand", "--bootstrap-server", b, "--alter")
    cluster.run_tool(*configs, "--entity-type", "users", "--entity-name", "alice",
                     "--add-config", "SCRAM-SHA-256=[iterations=8192,password=alice-secret]")
    cluster.run_tool(*configs, "--entity-type", "clients", "--entity-name", "app", "--add-config",
                     "producer_byte_rate=1048576,consumer_byte_rate=2097152")
    cluster.run_tool("AclCommand", "--bootstrap-server", b, "--add", "--allow-principal", "User:alice",
                     "--operation", "Read", "--operation", "Describe", "--topic", "orders")
    cluster.run_tool(*topics, "--delete", "--topic", "orders")
    time.sleep(2)  # the deletion's records commit before the controller stops


def _normalized(record: dict[str, Any]) -> dict[str, Any]:
    data = {k: v for k, v in record.get("data", {}).items() if k not in _RANDOM}
    return {"type": record["type"], "version": record["version"], "data": data}


def _from_the_topic(data_dir: Path) -> list[dict[str, Any]]:
    """The metadata records from the first TopicRecord on, normalized."""
    records = []
    for batch in read_segments(data_dir / "__cluster_metadata-0"):
        if batch.is_control:
            continue
        for value in batch.values:
            record = metadata_payload_json(value)
            if record["type"] not in {"NO_OP_RECORD", "REGISTER_CONTROLLER_RECORD"}:
                records.append(_normalized(record))
    first = next(i for i, r in enumerate(records) if r["type"] == "TOPIC_RECORD")
    return records[first:]


def _run(root: Path, release: KafkaRelease, kraft: bool) -> list[dict[str, Any]]:
    cluster = KafkaCluster(root, release, kafka_controllers=() if kraft else (1,), kraft_voters=(1,) if kraft else (),
                      brokers=(101,), extra={**_AUTHORIZER, **({"kraft.witness": "false", "kraft.controller": "true"} if kraft else {})})
    cluster.format()
    try:
        cluster.start()
        _steps(cluster)
    finally:
        cluster.close()
    node = cluster.kraft[1] if kraft else cluster.kafka[1]
    return _from_the_topic(node.folder / "data")


def test_the_same_steps_write_the_records_kafkas_controller_writes(release: KafkaRelease, tmp_path: Path) -> None:
    """ReplicationControlManager.createTopics, ConfigurationControlManager.
    incrementalAlterConfigs, ReplicationControlManager.createPartitions,
    ScramControlManager.alterCredentials, ClientQuotaControlManager.
    alterClientQuotas, AclControlManager.createAcls and deleteTopics,
    record for record (random ids, salts and keys left out)."""
    kafka = _run(tmp_path / "kafka", release, kraft=False)
    ours = _run(tmp_path / "kraft", release, kraft=True)
    types = [r["type"] for r in kafka]
    # The steps wrote what they should on Kafka's side: the comparison is not of two empty lists.
    assert types.count("PARTITION_RECORD") == 4 and types.count("CONFIG_RECORD") >= 3, types
    assert types[0] == "TOPIC_RECORD" and "REMOVE_TOPIC_RECORD" in types, types
    assert {"USER_SCRAM_CREDENTIAL_RECORD", "CLIENT_QUOTA_RECORD", "ACCESS_CONTROL_ENTRY_RECORD"} <= set(types), types
    assert [r["type"] for r in ours] == types
    for i, (a, b) in enumerate(zip(ours, kafka)):
        assert a == b, (i, a, b)
