"""Which log directory holds each replica (KIP-858, Kafka 4.4's
``ReplicationControlManager.handleAssignReplicasToDirs``,
``handleDirectoriesOffline`` and ``handleDirectoriesCordoned``).

A broker with several log directories reports where it put each new
replica (AssignReplicasToDirs), and in its heartbeats which directories
failed or are cordoned; a failed directory's replicas leave the ISR and
leadership as a fenced broker's would.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

from kraft.controller.partition_change import NO_LEADER, Election
from kraft.controller.replica_checks import has_online_dir, metadata_version_of, partition_builder
from kraft.controller.replication_control import leader_and_isr_updates
from kraft.controller.result import ControllerResult, RecordAndVersion
from kraft.controller.settings import ControllerSettings
from kraft.image.model import MetadataImage, PartitionRegistration
from kraft.messages.generated.assign_replicas_to_dirs_request import AssignReplicasToDirsRequest
from kraft.messages.generated.assign_replicas_to_dirs_response import AssignReplicasToDirsResponse
from kraft.messages.generated.assign_replicas_to_dirs_response import DirectoryData as DirectoryResult
from kraft.messages.generated.assign_replicas_to_dirs_response import PartitionData as PartitionResult
from kraft.messages.generated.assign_replicas_to_dirs_response import TopicData as TopicResult
from kraft.messages.generated.broker_registration_change_record import BrokerRegistrationChangeRecord
from kraft.wire.errors import ErrorCode

__all__ = ["assign_replicas_to_dirs", "directories_offline", "directories_cordoned"]


def _refused(error: ErrorCode) -> ControllerResult[AssignReplicasToDirsResponse]:
    # AssignReplicasToDirsRequest.getErrorResponse: the error at the top only.
    return ControllerResult(tuple(), AssignReplicasToDirsResponse(error_code=int(error), directories=[]), atomic=False)


def assign_replicas_to_dirs(image: MetadataImage, settings: ControllerSettings, request: AssignReplicasToDirsRequest,
                            version: int) -> ControllerResult[AssignReplicasToDirsResponse]:
    """``handleAssignReplicasToDirs``: a PartitionChangeRecord moving each
    named replica of the broker to its directory; a replica put in a
    directory that is offline then leaves the ISR and leadership.
    UNSUPPORTED_VERSION before 3.7-IV2, STALE_BROKER_EPOCH for a stale epoch."""
    if not metadata_version_of(image).is_directory_assignment_supported:
        return _refused(ErrorCode.UNSUPPORTED_VERSION)
    broker_id = request.broker_id
    registration = image.brokers.get(broker_id)
    if registration is None or registration.epoch != request.broker_epoch:
        return _refused(ErrorCode.STALE_BROKER_EPOCH)
    records: list[RecordAndVersion] = []
    to_update: set[tuple[uuid.UUID, int]] = set()
    response = AssignReplicasToDirsResponse(error_code=0, directories=[])
    for directory in request.directories:
        offline = not has_online_dir(image, broker_id, directory.id)
        result_dir = DirectoryResult(id=directory.id, topics=[])
        for t in directory.topics:
            topic = image.topics.get(t.topic_id)
            result_topic = TopicResult(topic_id=t.topic_id, partitions=[])
            for p in t.partitions:
                partition = topic.partitions.get(p.partition_index) if topic is not None else None
                if topic is None:
                    error = ErrorCode.UNKNOWN_TOPIC_ID
                elif partition is None:
                    error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif broker_id not in partition.replicas:
                    error = ErrorCode.NOT_LEADER_OR_FOLLOWER
                else:
                    error = ErrorCode.NONE
                    builder = partition_builder(image, settings, topic, p.partition_index)
                    builder.set_election(Election.ONLINE)  # Kafka's builder here ignores the unclean setting
                    record = builder.set_directory(broker_id, directory.id).build()
                    if record is not None:
                        records.append(record)
                    if offline:
                        to_update.add((topic.id, p.partition_index))
                result_topic.partitions.append(PartitionResult(partition_index=p.partition_index,
                                                               error_code=int(error)))
            result_dir.topics.append(result_topic)
        response.directories.append(result_dir)
    if to_update:
        records += leader_and_isr_updates(image, settings, broker_id, NO_LEADER, lambda _: True, only=to_update)
    return ControllerResult(tuple(records), response, atomic=False)


def directories_offline(image: MetadataImage, settings: ControllerSettings, broker_id: int, broker_epoch: int,
                        offline_dirs: Sequence[uuid.UUID]) -> list[RecordAndVersion]:
    """``handleDirectoriesOffline`` (a heartbeat's offline log dirs): the
    replicas in newly failed directories leave the ISR and leadership, then a
    BrokerRegistrationChangeRecord (v2) with the directories still online."""
    registration = image.brokers[broker_id]
    newly_offline = [d for d in registration.directories if d in offline_dirs]  # directoryIntersection
    if not newly_offline:
        return []
    records: list[RecordAndVersion] = []
    for directory in newly_offline:
        records += leader_and_isr_updates(image, settings, broker_id, NO_LEADER, _holds(directory))
    online = [d for d in registration.directories if d not in offline_dirs]
    records.append(RecordAndVersion(BrokerRegistrationChangeRecord(
        broker_id=broker_id, broker_epoch=broker_epoch, log_dirs=online), 2))
    return records


def _holds(directory: uuid.UUID) -> Callable[[PartitionRegistration], bool]:
    """Kafka's ``directoriesToPartitions``: a partition with a replica in ``directory``."""
    return lambda partition: directory in partition.directories


def directories_cordoned(image: MetadataImage, broker_id: int, broker_epoch: int,
                         cordoned_dirs: Sequence[uuid.UUID] | None) -> list[RecordAndVersion]:
    """``handleDirectoriesCordoned`` (KIP-1066): a BrokerRegistrationChangeRecord
    (v3) when the heartbeat's cordoned directories differ from the
    registration's; None (a broker still catching up) changes nothing."""
    if cordoned_dirs is None:
        return []
    current = image.brokers[broker_id].cordoned_directories
    if current is not None and set(current) == set(cordoned_dirs):  # cordonedDirChanged
        return []
    return [RecordAndVersion(BrokerRegistrationChangeRecord(
        broker_id=broker_id, broker_epoch=broker_epoch, cordoned_log_dirs=list(cordoned_dirs)), 3)]
