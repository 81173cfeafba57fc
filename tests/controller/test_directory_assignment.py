"""Kafka's directory assignment (KIP-858): ReplicationControlManager.handleAssignReplicasToDirs,
handleDirectoriesOffline and handleDirectoriesCordoned (Kafka 4.4)."""

from __future__ import annotations

import uuid

from kraft.controller.directory_assignment import assign_replicas_to_dirs, directories_cordoned, directories_offline
from kraft.controller.settings import ControllerSettings
from kraft.messages.generated.assign_replicas_to_dirs_request import (
    AssignReplicasToDirsRequest,
    DirectoryData,
    PartitionData,
    TopicData,
)
from kraft.messages.generated.broker_registration_change_record import BrokerRegistrationChangeRecord
from kraft.messages.generated.partition_change_record import PartitionChangeRecord
from kraft.wire.errors import ErrorCode
from tests.controller.images import ImageSetup

SETTINGS = ControllerSettings(node_id=3000)
D1, D2, D3 = (uuid.UUID(int=1000 + i) for i in range(3))


def _cluster() -> ImageSetup:
    return ImageSetup().broker(1, dirs=[D1, D2]).broker(2, dirs=[D3]).topic("t", [[1, 2]])


def _request(cluster: ImageSetup, directory: uuid.UUID, partition: int = 0,
             epoch: int = 1) -> AssignReplicasToDirsRequest:
    topic_id = cluster.image.topic("t").id  # type: ignore[union-attr]
    return AssignReplicasToDirsRequest(broker_id=1, broker_epoch=epoch, directories=[DirectoryData(
        id=directory, topics=[TopicData(topic_id=topic_id, partitions=[PartitionData(partition_index=partition)])])])


def test_assigning_a_replica_records_its_directory() -> None:
    """handleAssignReplicasToDirs: a PartitionChangeRecord with the replica's new directory."""
    cluster = _cluster()
    result = assign_replicas_to_dirs(cluster.image, SETTINGS, _request(cluster, D2), 0)
    [record] = result.records
    assert record.message.directories[0] == D2
    assert result.response.directories[0].topics[0].partitions[0].error_code == 0
    p = cluster.apply(result.records).topic("t").partitions[0]  # type: ignore[union-attr]
    assert p.directories[0] == D2 and p.leader == 1


def test_refusals() -> None:
    """handleAssignReplicasToDirs: STALE_BROKER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION, and UNSUPPORTED_VERSION
    before 3.7-IV2."""
    cluster = _cluster()
    stale = assign_replicas_to_dirs(cluster.image, SETTINGS, _request(cluster, D2, epoch=9), 0)
    assert stale.response.error_code == ErrorCode.STALE_BROKER_EPOCH and stale.records == ()
    missing = assign_replicas_to_dirs(cluster.image, SETTINGS, _request(cluster, D2, partition=4), 0)
    assert missing.response.directories[0].topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    old = ImageSetup(metadata_version=14).broker(1).topic("t", [[1]])
    answer = assign_replicas_to_dirs(old.image, SETTINGS, _request(old, D2), 0)
    assert answer.response.error_code == ErrorCode.UNSUPPORTED_VERSION


def test_an_offline_directory_takes_its_replicas_out_of_the_isr() -> None:
    """handleDirectoriesOffline: the replicas in the failed directory leave ISR and leadership, then a
    BrokerRegistrationChangeRecord v2 lists the directories still online."""
    cluster = _cluster()
    cluster.apply(assign_replicas_to_dirs(cluster.image, SETTINGS, _request(cluster, D1), 0).records)
    records = directories_offline(cluster.image, SETTINGS, 1, 1, [D1])
    assert [type(r.message) for r in records] == [PartitionChangeRecord, BrokerRegistrationChangeRecord]
    assert (records[-1].message.log_dirs, records[-1].version) == ([D2], 2)
    image = cluster.apply(records)
    p = image.topic("t").partitions[0]  # type: ignore[union-attr]
    assert (p.leader, p.isr) == (2, (2,))
    assert directories_offline(image, SETTINGS, 1, 1, [D1]) == []  # already offline


def test_cordoned_directories_are_recorded_when_they_change() -> None:
    """handleDirectoriesCordoned: BrokerRegistrationChangeRecord v3 when the set changes; None ignored."""
    cluster = _cluster()
    assert directories_cordoned(cluster.image, 1, 1, None) == []
    [record] = directories_cordoned(cluster.image, 1, 1, [D2])
    assert (record.message.cordoned_log_dirs, record.version) == ([D2], 3)
    image = cluster.apply([record])
    assert directories_cordoned(image, 1, 1, [D2]) == []
