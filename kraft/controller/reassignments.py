"""Partition reassignments (Kafka 4.4's
``ReplicationControlManager.alterPartitionReassignments`` and
``listPartitionReassignments``): a reassignment adds the target replicas
first, and ``PartitionChangeBuilder`` drops the removed ones once the ISR
holds every adding replica."""

from __future__ import annotations

from collections.abc import Sequence

from kraft.controller.partition_change import Election, is_reassignment_in_progress
from kraft.controller.replica_checks import (
    bare_error,
    check_manual_assignment,
    partition_builder,
    unclean_election_enabled,
)
from kraft.controller.result import ApiError, ControllerResult, RecordAndVersion
from kraft.controller.settings import ControllerSettings
from kraft.image.model import MetadataImage, PartitionRegistration, TopicImage
from kraft.messages.generated.alter_partition_reassignments_request import (
    AlterPartitionReassignmentsRequest,
    ReassignablePartition,
)
from kraft.messages.generated.alter_partition_reassignments_response import (
    AlterPartitionReassignmentsResponse,
    ReassignablePartitionResponse,
    ReassignableTopicResponse,
)
from kraft.messages.generated.list_partition_reassignments_request import ListPartitionReassignmentsRequest
from kraft.messages.generated.list_partition_reassignments_response import (
    ListPartitionReassignmentsResponse,
    OngoingPartitionReassignment,
    OngoingTopicReassignment,
)
from kraft.wire.errors import ErrorCode

__all__ = ["alter_partition_reassignments", "list_partition_reassignments"]

# ------------------------------------------------------------------ partition reassignments


def _cancel_reassignment(image: MetadataImage, settings: ControllerSettings, topic: TopicImage,
                         partition_id: int) -> RecordAndVersion | None:
    """``cancelPartitionReassignment`` (``PartitionReassignmentRevert``)."""
    part = topic.partitions[partition_id]
    if not is_reassignment_in_progress(part):
        raise bare_error(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS)
    replicas = [r for r in part.replicas if r not in part.adding_replicas]
    isr = [r for r in part.isr if r not in part.adding_replicas]
    unclean = not isr
    if unclean:
        if not replicas:
            raise ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           "Invalid replica assignment: addingReplicas contains all replicas.")
        isr = [replicas[0]]
        if not unclean_election_enabled(image, settings, topic.name):
            raise ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Unable to revert partition assignment for "
                           f"{topic.name}:{partition_id} because it would require an unclean leader election.")
    builder = partition_builder(image, settings, topic, partition_id)
    return builder.set_target_isr(isr).set_target_replicas(replicas).set_target_removing([]).set_target_adding(
        []).build()


def _replication_factor_unchanged(part: PartitionRegistration, target: Sequence[int]) -> None:
    """``validatePartitionReplicationFactorUnchanged``."""
    if is_reassignment_in_progress(part):
        current = len((set(part.replicas) | set(part.adding_replicas)) - set(part.removing_replicas))
    else:
        current = len(part.replicas)
    if current != len(target):
        raise ApiError(ErrorCode.INVALID_REPLICATION_FACTOR,
                       f"The replication factor is changed from {current} to {len(target)}")


def _change_reassignment(image: MetadataImage, settings: ControllerSettings, topic: TopicImage, partition_id: int,
                         target: Sequence[int], allow_rf_change: bool) -> RecordAndVersion | None:
    """``changePartitionReassignment``: the target replicas first, then the
    removed ones (``PartitionReassignmentReplicas``), sorted adding/removing."""
    part = topic.partitions[partition_id]
    check_manual_assignment(image, target, None)
    if not allow_rf_change:
        _replication_factor_unchanged(part, target)
    removing = sorted(set(part.replicas) - set(target))
    adding = sorted(set(target) - set(part.replicas))
    replicas = list(target) + removing
    builder = partition_builder(image, settings, topic, partition_id)
    builder.election = Election.ONLINE  # Kafka's builder here does not take the topic's unclean setting
    if replicas != list(part.replicas):
        builder.set_target_replicas(replicas)
    if removing:
        builder.set_target_removing(removing)
    if adding:
        builder.set_target_adding(adding)
    return builder.build()


def _alter_reassignment(image: MetadataImage, settings: ControllerSettings, topic_name: str,
                        target: ReassignablePartition, allow_rf_change: bool) -> RecordAndVersion | None:
    topic = image.topic(topic_name)
    if topic is None:
        raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {topic_name}.")
    if target.partition_index not in topic.partitions:
        raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                       f"Unable to find partition {topic_name}:{target.partition_index}.")
    if target.replicas is None:
        return _cancel_reassignment(image, settings, topic, target.partition_index)
    return _change_reassignment(image, settings, topic, target.partition_index, target.replicas, allow_rf_change)


def alter_partition_reassignments(image: MetadataImage, settings: ControllerSettings,
                                  request: AlterPartitionReassignmentsRequest, version: int
                                  ) -> ControllerResult[AlterPartitionReassignmentsResponse]:
    """``ReplicationControlManager.alterPartitionReassignments``: start,
    change or (replicas null) cancel each partition's reassignment."""
    allow = request.allow_replication_factor_change
    response = AlterPartitionReassignmentsResponse(allow_replication_factor_change=allow, error_code=0,
                                                   error_message=None, responses=[])
    records: list[RecordAndVersion] = []
    for topic in request.topics:
        topic_response = ReassignableTopicResponse(name=topic.name, partitions=[])
        for target in topic.partitions:
            try:
                record = _alter_reassignment(image, settings, topic.name, target, allow)
            except ApiError as e:
                topic_response.partitions.append(ReassignablePartitionResponse(
                    partition_index=target.partition_index, error_code=int(e.error), error_message=e.message))
                continue
            if record is not None:
                records.append(record)
            topic_response.partitions.append(ReassignablePartitionResponse(
                partition_index=target.partition_index, error_code=0, error_message=None))
        response.responses.append(topic_response)
    return ControllerResult.of(response, *records)


def _ongoing(topic: TopicImage, partition_ids: Sequence[int]) -> OngoingTopicReassignment | None:
    """``listReassigningTopic``."""
    out = OngoingTopicReassignment(name=topic.name, partitions=[])
    for partition_id in partition_ids:
        p = topic.partitions.get(partition_id)
        if p is not None and is_reassignment_in_progress(p):
            out.partitions.append(OngoingPartitionReassignment(
                partition_index=partition_id, replicas=list(p.replicas), adding_replicas=list(p.adding_replicas),
                removing_replicas=list(p.removing_replicas)))
    return out if out.partitions else None


def list_partition_reassignments(image: MetadataImage, request: ListPartitionReassignmentsRequest,
                                 version: int) -> ListPartitionReassignmentsResponse:
    """``ReplicationControlManager.listPartitionReassignments`` (no records):
    every reassigning partition, or those of the named topics."""
    found: list[OngoingTopicReassignment | None] = []
    if request.topics is None:
        for topic_id in sorted(image.topics):
            topic = image.topics[topic_id]
            found.append(_ongoing(topic, sorted(topic.partitions)))
    else:
        for wanted in request.topics:
            topic_or_none = image.topic(wanted.name)
            if topic_or_none is not None:
                found.append(_ongoing(topic_or_none, wanted.partition_indexes))
    return ListPartitionReassignmentsResponse(error_code=0, error_message=None,
                                              topics=[t for t in found if t is not None])
