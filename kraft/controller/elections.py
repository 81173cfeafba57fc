"""Leader elections asked for by ElectLeaders and run by the controller's
periodic tasks (Kafka 4.4's ``ReplicationControlManager.electLeaders``,
``maybeBalancePartitionLeaders`` and ``maybeElectUncleanLeaders``), as pure
functions of the image."""

from __future__ import annotations

from kraft.controller.partition_change import NO_LEADER, Election
from kraft.controller.replica_checks import bare_error, partition_builder, partitions_where, unclean_election_enabled
from kraft.controller.result import ApiError, ControllerResult, RecordAndVersion
from kraft.controller.settings import ControllerSettings
from kraft.image.model import MetadataImage, PartitionRegistration
from kraft.messages.generated.elect_leaders_request import ElectLeadersRequest
from kraft.messages.generated.elect_leaders_response import ElectLeadersResponse, ReplicaElectionResult
from kraft.messages.generated.elect_leaders_response import PartitionResult as ElectionPartitionResult
from kraft.wire.errors import ErrorCode

__all__ = [
    "elect_leaders", "partition_leaders_imbalanced", "maybe_balance_partition_leaders", "some_partitions_leaderless",
    "maybe_elect_unclean_leaders", "MAX_ELECTIONS_PER_IMBALANCE", "PREFERRED_ELECTION", "UNCLEAN_ELECTION",
]

# ------------------------------------------------------------------ ElectLeaders

#: ``ElectionType`` ids on the wire.
PREFERRED_ELECTION = 0
UNCLEAN_ELECTION = 1


def _elect_leader(image: MetadataImage, settings: ControllerSettings, topic_name: str, partition_id: int,
                  election_type: int) -> tuple[ApiError | None, RecordAndVersion | None]:
    """``ReplicationControlManager.electLeader``."""
    topic = image.topic(topic_name)
    if topic is None:
        return ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic_name}"), None
    partition = topic.partitions.get(partition_id)
    if partition is None:
        return ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        f"No such partition as {topic_name}-{partition_id}"), None
    preferred = partition.replicas[0] if partition.replicas else NO_LEADER
    if (election_type == PREFERRED_ELECTION and partition.leader == preferred) or (
            election_type == UNCLEAN_ELECTION and partition.leader != NO_LEADER):
        return bare_error(ErrorCode.ELECTION_NOT_NEEDED), None
    builder = partition_builder(image, settings, topic, partition_id)
    # The request's election type decides, whatever the topic's unclean setting.
    builder.set_election(Election.UNCLEAN if election_type == UNCLEAN_ELECTION else Election.PREFERRED)
    record = builder.build()
    if record is None:
        return bare_error(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE if election_type == PREFERRED_ELECTION
                     else ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE), None
    return None, record


def _election_result(partition_id: int, error: ApiError | None) -> ElectionPartitionResult:
    if error is None:
        return ElectionPartitionResult(partition_id=partition_id, error_code=0, error_message=None)
    return ElectionPartitionResult(partition_id=partition_id, error_code=int(error.error), error_message=error.message)


def elect_leaders(image: MetadataImage, settings: ControllerSettings, request: ElectLeadersRequest,
                  version: int) -> ControllerResult[ElectLeadersResponse]:
    """``ReplicationControlManager.electLeaders``: PREFERRED or UNCLEAN for
    the partitions named, or every partition (then leaving out those that
    need no election). An unknown election type is INVALID_REQUEST for all."""
    if request.election_type not in (PREFERRED_ELECTION, UNCLEAN_ELECTION):
        # ElectLeadersRequest.getErrorResponse: the error at the top and on every partition named.
        refusal = ApiError(ErrorCode.INVALID_REQUEST, f"Unknown election type {request.election_type}")
        refused = [ReplicaElectionResult(topic=t.topic, partition_result=[_election_result(p, refusal)
                                                                         for p in t.partitions])
                   for t in request.topic_partitions or []]
        return ControllerResult.of(ElectLeadersResponse(error_code=int(refusal.error),
                                                        replica_election_results=refused))
    records: list[RecordAndVersion] = []
    results: list[ReplicaElectionResult] = []
    if request.topic_partitions is None:
        wanted = [(name, sorted(image.topics[i].partitions), True)
                  for name, i in sorted(image.topic_ids_by_name.items()) if i in image.topics]
    else:
        wanted = [(t.topic, list(t.partitions), False) for t in request.topic_partitions]
    for name, partition_ids, skip_not_needed in wanted:
        topic_result = ReplicaElectionResult(topic=name, partition_result=[])
        results.append(topic_result)
        for partition_id in partition_ids:
            error, record = _elect_leader(image, settings, name, partition_id, request.election_type)
            if record is not None:
                records.append(record)
            if skip_not_needed and error is not None and error.error == ErrorCode.ELECTION_NOT_NEEDED:
                continue
            topic_result.partition_result.append(_election_result(partition_id, error))
    return ControllerResult(tuple(records), ElectLeadersResponse(error_code=0, replica_election_results=results),
                            atomic=False)


# ------------------------------------------------------------------ periodic elections

#: ``ReplicationControlManager.MAX_ELECTIONS_PER_IMBALANCE``.
MAX_ELECTIONS_PER_IMBALANCE = 1_000


def _without_preferred_leader(p: PartitionRegistration) -> bool:
    """Not ``PartitionRegistration.hasPreferredLeader``."""
    return p.leader != (p.replicas[0] if p.replicas else NO_LEADER)


def partition_leaders_imbalanced(image: MetadataImage) -> bool:
    """``arePartitionLeadersImbalanced``: some partition is not led by its
    preferred (first) replica -- leaderless ones included, as Kafka's
    ``imbalancedPartitions`` holds every partition without its preferred leader."""
    return any(_without_preferred_leader(p) for t in image.topics.values() for p in t.partitions.values())


def maybe_balance_partition_leaders(image: MetadataImage, settings: ControllerSettings, *,
                                    max_elections: int = MAX_ELECTIONS_PER_IMBALANCE
                                    ) -> ControllerResult[bool]:
    """``maybeBalancePartitionLeaders`` (auto.leader.rebalance.enable): a
    preferred election for each partition not led by its first replica, at
    most ``max_elections``; the response is True when there may be more
    (the caller runs it again at once)."""
    records: list[RecordAndVersion] = []
    for topic, partition_id in partitions_where(image, _without_preferred_leader):
        if len(records) >= max_elections:
            break
        builder = partition_builder(image, settings, topic, partition_id).set_election(Election.PREFERRED)
        record = builder.build()
        if record is not None:
            records.append(record)
    return ControllerResult(tuple(records), len(records) >= max_elections, atomic=False)


def some_partitions_leaderless(image: MetadataImage) -> bool:
    """``areSomePartitionsLeaderless``."""
    return any(p.leader == NO_LEADER for t in image.topics.values() for p in t.partitions.values())


def maybe_elect_unclean_leaders(image: MetadataImage, settings: ControllerSettings, *,
                                max_elections: int = MAX_ELECTIONS_PER_IMBALANCE) -> ControllerResult[bool]:
    """``maybeElectUncleanLeaders``: an UNCLEAN election for each leaderless
    partition of a topic that allows it (unclean.leader.election.enable for
    the topic or the cluster); True when there may be more."""
    records: list[RecordAndVersion] = []
    for topic, partition_id in partitions_where(image, lambda p: p.leader == NO_LEADER):
        if len(records) >= max_elections:
            break
        if unclean_election_enabled(image, settings, topic.name):
            _, record = _elect_leader(image, settings, topic.name, partition_id, UNCLEAN_ELECTION)
            if record is not None:
                records.append(record)
    return ControllerResult(tuple(records), len(records) >= max_elections, atomic=False)
