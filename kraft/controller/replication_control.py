"""Kafka's ``ReplicationControlManager`` (Kafka 4.4): topics, partitions,
ISRs and leaders, as pure functions of the committed image.

Each operation reads a :class:`~kraft.image.model.MetadataImage` and the
controller's :class:`~kraft.controller.settings.ControllerSettings` and
returns the records Kafka writes for it (with their versions) and the
response; nothing is changed here -- the quorum controller applies the
records. Kafka keeps indexes (``BrokersToIsrs``, ``BrokersToElrs``) to find
a broker's partitions; here the image is scanned, in topic-id then
partition order, the order those indexes iterate in is not something a
client can see.

Elections live in :mod:`kraft.controller.elections`, reassignments in
:mod:`kraft.controller.reassignments` (both re-exported here), and what they
all read from the image in :mod:`kraft.controller.replica_checks`.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence

from kraft.controller.elections import (
    elect_leaders,
    maybe_balance_partition_leaders,
    maybe_elect_unclean_leaders,
    partition_leaders_imbalanced,
    some_partitions_leaderless,
)
from kraft.controller.metadata_version import MetadataVersion
from kraft.controller.partition_change import NO_LEADER, RECOVERED, RECOVERING
from kraft.controller.placement import place
from kraft.controller.reassignments import alter_partition_reassignments, list_partition_reassignments
from kraft.controller.replica_checks import (
    bare_error,
    check_broker_epoch,
    check_manual_assignment,
    default_dir,
    elr_enabled,
    is_active,
    metadata_version_of,
    partition_builder,
    partitions_where,
    resolve_topic_config,
    usable_brokers,
)
from kraft.controller.result import ApiError, ControllerResult, RecordAndVersion
from kraft.controller.settings import ControllerSettings
from kraft.controller.topic_config_table import TOPIC_CONFIGS, validate_topic_configs
from kraft.image.builder import merge_partition_change
from kraft.image.model import ZERO_UUID, ConfigResourceType, MetadataImage, PartitionRegistration, TopicImage
from kraft.messages.generated.alter_partition_request import AlterPartitionRequest
from kraft.messages.generated.alter_partition_request import PartitionData as AlterPartitionData
from kraft.messages.generated.alter_partition_response import AlterPartitionResponse
from kraft.messages.generated.alter_partition_response import PartitionData as AlterPartitionResult
from kraft.messages.generated.alter_partition_response import TopicData as AlterPartitionTopicResult
from kraft.messages.generated.broker_registration_change_record import BrokerRegistrationChangeRecord
from kraft.messages.generated.config_record import ConfigRecord
from kraft.messages.generated.create_partitions_request import CreatePartitionsRequest, CreatePartitionsTopic
from kraft.messages.generated.create_partitions_response import CreatePartitionsResponse, CreatePartitionsTopicResult
from kraft.messages.generated.create_topics_request import CreatableTopic, CreateTopicsRequest
from kraft.messages.generated.create_topics_response import (
    CreatableTopicConfigs,
    CreatableTopicResult,
    CreateTopicsResponse,
)
from kraft.messages.generated.delete_topics_request import DeleteTopicsRequest
from kraft.messages.generated.delete_topics_response import DeletableTopicResult, DeleteTopicsResponse
from kraft.messages.generated.partition_record import PartitionRecord
from kraft.messages.generated.remove_topic_record import RemoveTopicRecord
from kraft.messages.generated.topic_record import TopicRecord
from kraft.messages.json_form import uuid_to_kafka
from kraft.wire.errors import ErrorCode

__all__ = [
    "leader_and_isr_updates", "broker_fenced", "broker_unfenced", "broker_in_controlled_shutdown",
    "broker_unregistered", "broker_shutdown",
    "leaders_led_by", "validate_topic_name", "new_topic_id", "partition_record", "create_topics", "alter_partition",
    "delete_topics", "create_partitions", "usable_brokers", "elr_enabled", "elect_leaders",
    "maybe_balance_partition_leaders", "maybe_elect_unclean_leaders", "partition_leaders_imbalanced",
    "some_partitions_leaderless", "alter_partition_reassignments", "list_partition_reassignments",
]

#: ``BrokerRegistrationFencingChange`` and ``BrokerRegistrationInControlledShutdownChange`` values.
FENCE = 1
UNFENCE = -1
IN_CONTROLLED_SHUTDOWN = 1
#: ``ReplicationControlManager.MAX_PARTITIONS_PER_BATCH``.
MAX_PARTITIONS_PER_BATCH = 10_000
#: ``Uuid.METADATA_TOPIC_ID`` (never a new topic's id).
METADATA_TOPIC_ID = uuid.UUID(int=1)
#: ``Topic.CLUSTER_METADATA_TOPIC_NAME``.
CLUSTER_METADATA_TOPIC = "__cluster_metadata"
_LEGAL_TOPIC_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def leader_and_isr_updates(image: MetadataImage, settings: ControllerSettings, broker_to_remove: int,
                            broker_to_add: int, where: Callable[[PartitionRegistration], bool],
                            broker_with_unclean_shutdown: int = NO_LEADER,
                            only: Collection[tuple[uuid.UUID, int]] | None = None) -> list[RecordAndVersion]:
    """``generateLeaderAndIsrUpdates``: for each partition ``where`` picks
    (and, given ``only``, named there by topic id and index), drop
    ``broker_to_remove`` (and an uncleanly shut-down broker) from the ISR
    and leadership; ``broker_to_add`` may lead though the image still shows
    it fenced (the unfence record is in the same batch)."""
    def acceptable(r: int) -> bool:
        return r not in (broker_to_remove, broker_with_unclean_shutdown) and (
            r == broker_to_add or is_active(image, r))
    records: list[RecordAndVersion] = []
    for topic, partition_id in partitions_where(image, where):
        if only is not None and (topic.id, partition_id) not in only:
            continue
        builder = partition_builder(image, settings, topic, partition_id, acceptable)
        if broker_with_unclean_shutdown != NO_LEADER:
            builder.set_unclean_shutdown_replicas([broker_with_unclean_shutdown])
        isr = topic.partitions[partition_id].isr
        builder.set_target_isr([r for r in isr if r not in (broker_to_remove, broker_with_unclean_shutdown)])
        record = builder.build()
        if record is not None:
            records.append(record)
    return records


# ------------------------------------------------------------------ broker state changes


def broker_fenced(image: MetadataImage, settings: ControllerSettings, broker_id: int) -> list[RecordAndVersion]:
    """``handleBrokerFenced``: the broker leaves every ISR (to the ELR when
    enabled) and leadership, then its BrokerRegistrationChangeRecord FENCE."""
    registration = image.brokers.get(broker_id)
    if registration is None:
        raise RuntimeError(f"Can't find broker registration for broker {broker_id}")
    records = leader_and_isr_updates(image, settings, broker_id, NO_LEADER, lambda p: broker_id in p.isr)
    records.append(RecordAndVersion(BrokerRegistrationChangeRecord(
        broker_id=broker_id, broker_epoch=registration.epoch, fenced=FENCE), 0))
    return records


def broker_unfenced(image: MetadataImage, settings: ControllerSettings, broker_id: int,
                    broker_epoch: int) -> list[RecordAndVersion]:
    """``handleBrokerUnfenced``: the UNFENCE record, then leaders for the
    leaderless partitions the broker may now lead."""
    records = [RecordAndVersion(BrokerRegistrationChangeRecord(
        broker_id=broker_id, broker_epoch=broker_epoch, fenced=UNFENCE), 0)]
    records += leader_and_isr_updates(image, settings, NO_LEADER, broker_id, lambda p: p.leader == NO_LEADER)
    return records


def broker_in_controlled_shutdown(image: MetadataImage, settings: ControllerSettings, broker_id: int,
                                  broker_epoch: int) -> list[RecordAndVersion]:
    """``handleBrokerInControlledShutdown``: mark it (once), then move its
    leaderships away and take it out of every ISR."""
    records: list[RecordAndVersion] = []
    registration = image.brokers.get(broker_id)
    if registration is None or not registration.in_controlled_shutdown:
        records.append(RecordAndVersion(BrokerRegistrationChangeRecord(
            broker_id=broker_id, broker_epoch=broker_epoch, in_controlled_shutdown=IN_CONTROLLED_SHUTDOWN), 1))
    records += leader_and_isr_updates(image, settings, broker_id, NO_LEADER, lambda p: broker_id in p.isr)
    return records


def broker_unregistered(image: MetadataImage, settings: ControllerSettings, broker_id: int,
                        broker_epoch: int) -> list[RecordAndVersion]:
    """``handleBrokerUnregistered``, without its UnregisterBrokerRecord (the
    caller writes it after these): the broker leaves every ISR, then every ELR."""
    records = leader_and_isr_updates(image, settings, broker_id, NO_LEADER, lambda p: broker_id in p.isr)
    # The ELR pass reads the image before the ISR pass's records: Kafka's
    # index is updated by replay only after the whole batch is built too.
    records += leader_and_isr_updates(image, settings, broker_id, NO_LEADER, lambda p: broker_id in p.elr)
    return records


def broker_shutdown(image: MetadataImage, settings: ControllerSettings, broker_id: int,
                    is_clean_shutdown: bool) -> list[RecordAndVersion]:
    """``handleBrokerShutdown`` (a broker re-registering after a shutdown):
    with ELR on and an unclean shutdown the broker leaves the ISR and the
    ELR both (its log may be incomplete); otherwise as if it were fenced,
    without the fence record."""
    if elr_enabled(image) and not is_clean_shutdown:
        records = leader_and_isr_updates(image, settings, NO_LEADER, NO_LEADER, lambda p: broker_id in p.isr,
                                          broker_with_unclean_shutdown=broker_id)
        records += leader_and_isr_updates(image, settings, NO_LEADER, NO_LEADER, lambda p: broker_id in p.elr,
                                           broker_with_unclean_shutdown=broker_id)
        return records
    return leader_and_isr_updates(image, settings, broker_id, NO_LEADER, lambda p: broker_id in p.isr)


def leaders_led_by(image: MetadataImage, broker_id: int) -> int:
    """How many partitions ``broker_id`` leads (``BrokersToIsrs.partitionsLedByBroker``)."""
    return sum(1 for t in image.topics.values() for p in t.partitions.values() if p.leader == broker_id)


# ------------------------------------------------------------------ CreateTopics


def validate_topic_name(name: str) -> str | None:
    """``Topic.validate``: the InvalidTopicException message, or None."""
    reason = None
    if not name:
        reason = "the empty string is not allowed"
    elif name in (".", ".."):
        reason = f"'{name}' is not allowed"
    elif len(name) > 249:
        reason = f"the length of '{name}' is longer than the max allowed length 249"
    elif not set(name) <= _LEGAL_TOPIC_CHARS:
        reason = f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    return None if reason is None else f"Topic name is invalid: {reason}"


def _name_errors(image: MetadataImage, topics: Sequence[CreatableTopic]) -> dict[str, ApiError]:
    """``validateNewTopicNames``, the existing-topic check and ``computeConfigChanges``'s null check."""
    errors: dict[str, ApiError] = {}
    colliding: dict[str, str] = {}
    for existing in sorted(image.topic_ids_by_name):
        if "." in existing or "_" in existing:
            colliding.setdefault(existing.replace(".", "_"), existing)
    for topic in topics:
        if topic.name in errors:
            continue
        message = validate_topic_name(topic.name)
        if message is not None:
            errors[topic.name] = ApiError(ErrorCode.INVALID_TOPIC_EXCEPTION, message)
        if "." in topic.name or "_" in topic.name:
            other = colliding.get(topic.name.replace(".", "_"))
            if other is not None:
                errors[topic.name] = ApiError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                                              f"Topic '{topic.name}' collides with existing topic: {other}")
    for topic in topics:
        if topic.name in image.topic_ids_by_name:
            errors[topic.name] = ApiError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{topic.name}' already exists.")
    for topic in topics:
        nulls = [c.name for c in topic.configs if c.value is None]
        if topic.name not in errors and nulls:
            errors[topic.name] = ApiError(ErrorCode.INVALID_CONFIG,
                                          f"Null value not supported for topic configs: {','.join(nulls)}")
    return errors


def _check_total_partitions(topics: Sequence[CreatableTopic], settings: ControllerSettings) -> None:
    """``validateTotalNumberOfPartitions``: a PolicyViolationException for the whole request."""
    total = 0
    for topic in topics:
        if topic.assignments:
            total += len(topic.assignments)
        elif topic.num_partitions == -1:
            total += settings.num_partitions
        elif topic.num_partitions > 0:
            total += topic.num_partitions
        if total > MAX_PARTITIONS_PER_BATCH:
            raise ApiError(ErrorCode.POLICY_VIOLATION, "Excessively large number of partitions per request.")


def _new_partition(image: MetadataImage, replicas: Sequence[int], isr: Sequence[int]) -> PartitionRegistration:
    """``buildPartitionRegistration``: leader = the first ISR member, epochs 0."""
    return PartitionRegistration(
        replicas=tuple(replicas), directories=tuple(default_dir(image, r) for r in replicas), isr=tuple(isr),
        removing_replicas=(), adding_replicas=(), leader=isr[0], leader_recovery_state=RECOVERED,
        leader_epoch=0, partition_epoch=0)


def _manual_partitions(image: MetadataImage, topic: CreatableTopic) -> dict[int, PartitionRegistration]:
    if topic.replication_factor != -1:
        raise ApiError(ErrorCode.INVALID_REQUEST,
                       "A manual partition assignment was specified, but replication factor was not set to -1.")
    if topic.num_partitions != -1:
        raise ApiError(ErrorCode.INVALID_REQUEST,
                       "A manual partition assignment was specified, but numPartitions was not set to -1.")
    parts: dict[int, PartitionRegistration] = {}
    replication_factor: int | None = None
    for assignment in topic.assignments:
        if assignment.partition_index in parts:
            raise ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           f"Found multiple manual partition assignments for partition {assignment.partition_index}")
        check_manual_assignment(image, assignment.broker_ids, replication_factor)
        replication_factor = len(assignment.broker_ids)
        isr = [r for r in assignment.broker_ids if is_active(image, r)]
        if not isr:
            raise ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "All brokers specified in the manual partition "
                           f"assignment for partition {assignment.partition_index} are fenced or in controlled "
                           "shutdown.")
        parts[assignment.partition_index] = _new_partition(image, assignment.broker_ids, isr)
    if any(i not in parts for i in range(len(parts))):
        raise ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                       "partitions should be a consecutive 0-based integer sequence")
    return parts


def _placed_partitions(image: MetadataImage, settings: ControllerSettings, topic: CreatableTopic,
                       rng: random.Random) -> dict[int, PartitionRegistration]:
    if topic.replication_factor < -1 or topic.replication_factor == 0:
        raise ApiError(ErrorCode.INVALID_REPLICATION_FACTOR,
                       "Replication factor must be larger than 0, or -1 to use the default value.")
    if topic.num_partitions < -1 or topic.num_partitions == 0:
        raise ApiError(ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.")
    num_partitions = settings.num_partitions if topic.num_partitions == -1 else topic.num_partitions
    factor = settings.default_replication_factor if topic.replication_factor == -1 else topic.replication_factor
    try:
        assignments = place(rng, usable_brokers(image), num_partitions, factor)
    except ApiError as e:
        raise ApiError(ErrorCode.INVALID_REPLICATION_FACTOR,
                       f"Unable to replicate the partition {factor} time(s): {e.message}") from None
    parts: dict[int, PartitionRegistration] = {}
    for partition_id, replicas in enumerate(assignments):
        isr = [r for r in replicas if is_active(image, r)]
        if not isr:
            raise ApiError(ErrorCode.INVALID_REPLICATION_FACTOR, f"Unable to replicate the partition {factor} "
                           "time(s): All brokers are currently fenced or in controlled shutdown.")
        parts[partition_id] = _new_partition(image, replicas, isr)
    return parts


def new_topic_id(image: MetadataImage, rng: random.Random) -> uuid.UUID:
    """``Uuid.randomUuid``: a version-4 id, never zero, the metadata topic's
    id or one whose base64 form starts with '-'; and not one in use."""
    while True:
        candidate = uuid.UUID(int=rng.getrandbits(128), version=4)
        if candidate in (ZERO_UUID, METADATA_TOPIC_ID) or candidate in image.topics:
            continue
        if not uuid_to_kafka(candidate).startswith("-"):
            return candidate


def _effective_configs(image: MetadataImage, settings: ControllerSettings,
                       configs: Mapping[str, str]) -> list[CreatableTopicConfigs]:
    """``computeEffectiveTopicConfigs``, sorted by name."""
    out = []
    for name in sorted(TOPIC_CONFIGS):
        value, source = resolve_topic_config(image, settings, name, configs)
        out.append(CreatableTopicConfigs(name=name, value=value, read_only=False, config_source=source,
                                         is_sensitive=False))
    return out


def _create_topic(image: MetadataImage, settings: ControllerSettings, topic: CreatableTopic,
                  rng: random.Random, describable: bool) -> tuple[CreatableTopicResult, list[RecordAndVersion]]:
    """``createTopic``: the result and the TopicRecord, ConfigRecords and
    PartitionRecords, in Kafka's order. A caller not allowed to describe the
    topic gets no configs, counts or factor (TOPIC_AUTHORIZATION_FAILED as
    the topic config error)."""
    configs = {c.name: c.value for c in topic.configs if c.value is not None}
    # remote.log.storage.system.enable: a broker key the controller reads from its own config
    system = settings.static_config.get("remote.log.storage.system.enable", "false").strip().lower() == "true"
    validate_topic_configs(configs, remote_storage_system_enabled=system)
    if topic.assignments:
        parts = _manual_partitions(image, topic)
    else:
        parts = _placed_partitions(image, settings, topic, rng)
    topic_id = new_topic_id(image, rng)
    if describable:
        result = CreatableTopicResult(
            name=topic.name, topic_id=topic_id, error_code=0, error_message=None, topic_config_error_code=0,
            num_partitions=len(parts), replication_factor=len(parts[0].replicas),
            configs=_effective_configs(image, settings, configs))
    else:
        result = CreatableTopicResult(name=topic.name, topic_id=topic_id, error_code=0, error_message=None,
                                      topic_config_error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED), configs=[])
    mv = metadata_version_of(image)
    records = [RecordAndVersion(TopicRecord(name=topic.name, topic_id=topic_id), 0)]
    records += [RecordAndVersion(ConfigRecord(resource_type=ConfigResourceType.TOPIC, resource_name=topic.name,
                                              name=name, value=value), 0) for name, value in configs.items()]
    records += [partition_record(mv, topic_id, i, parts[i], elr_enabled(image)) for i in sorted(parts)]
    return result, records


def partition_record(mv: MetadataVersion, topic_id: uuid.UUID, partition_id: int, p: PartitionRegistration,
                     elr: bool) -> RecordAndVersion:
    """``PartitionRegistration.toRecord``: directories from 3.7-IV2, the
    ELR fields only when ELR is on and they are not empty."""
    record = PartitionRecord(
        partition_id=partition_id, topic_id=topic_id, replicas=list(p.replicas), isr=list(p.isr),
        removing_replicas=list(p.removing_replicas), adding_replicas=list(p.adding_replicas), leader=p.leader,
        leader_recovery_state=p.leader_recovery_state, leader_epoch=p.leader_epoch,
        partition_epoch=p.partition_epoch)
    if elr and p.elr:
        record.eligible_leader_replicas = list(p.elr)
    if elr and p.last_known_elr:
        record.last_known_elr = list(p.last_known_elr)
    if mv.is_directory_assignment_supported:
        record.directories = list(p.directories)
    return RecordAndVersion(record, mv.partition_record_version)


def _create_requested(image: MetadataImage, settings: ControllerSettings, topics: Sequence[CreatableTopic],
                      rng: random.Random, describable: Collection[str] | None
                      ) -> tuple[list[CreatableTopicResult], list[RecordAndVersion]]:
    """``ReplicationControlManager.createTopics`` over the topics ControllerApis lets through."""
    errors = _name_errors(image, topics)
    successes: dict[str, CreatableTopicResult] = {}
    records: list[RecordAndVersion] = []
    for topic in topics:
        if topic.name in errors:
            continue
        try:
            allowed = describable is None or topic.name in describable
            result, topic_records = _create_topic(image, settings, topic, rng, allowed)
        except ApiError as e:
            errors[topic.name] = e
            continue
        successes[topic.name] = result
        records += topic_records
    results = [successes[t.name] if t.name not in errors else CreatableTopicResult(
        name=t.name, error_code=int(errors[t.name].error), error_message=errors[t.name].message) for t in topics]
    return results, records


def create_topics(image: MetadataImage, settings: ControllerSettings, request: CreateTopicsRequest, version: int,
                  *, rng: random.Random, describable: Collection[str] | None = None,
                  creatable: Collection[str] | None = None) -> ControllerResult[CreateTopicsResponse]:
    """``ControllerApis.createTopics`` and ``ReplicationControlManager.createTopics``:
    a name given twice is INVALID_REQUEST "Duplicate topic name.",
    ``__cluster_metadata`` is refused, a topic not in ``creatable`` (None:
    all) is TOPIC_AUTHORIZATION_FAILED; ``describable`` (None: all) get
    their effective configs back. Below v5 the response carries no configs
    (the encoder drops them); ``validate_only`` writes nothing. Too many
    partitions in one request refuses every topic (POLICY_VIOLATION)."""
    counts: dict[str, int] = {}
    for t in request.topics:
        counts[t.name] = counts.get(t.name, 0) + 1
    allowed = [t for t in request.topics if counts[t.name] == 1 and t.name != CLUSTER_METADATA_TOPIC
               and (creatable is None or t.name in creatable)]
    try:
        _check_total_partitions(request.topics, settings)
    except ApiError as e:  # AbstractRequest.getErrorResponse: every topic gets the error
        return ControllerResult.of(CreateTopicsResponse(topics=[CreatableTopicResult(
            name=t.name, error_code=int(e.error), error_message=e.message) for t in request.topics]))
    results, records = _create_requested(image, settings, allowed, rng, describable)
    for name, n in counts.items():
        if n > 1:
            results.append(CreatableTopicResult(name=name, error_code=int(ErrorCode.INVALID_REQUEST),
                                                error_message="Duplicate topic name."))
    for name, n in counts.items():
        if n == 1 and name == CLUSTER_METADATA_TOPIC:
            results.append(CreatableTopicResult(name=name, error_code=int(ErrorCode.INVALID_REQUEST),
                                                error_message=f"Creation of internal topic {name} is prohibited."))
        elif n == 1 and creatable is not None and name not in creatable:
            results.append(CreatableTopicResult(name=name, error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED),
                                                error_message="Authorization failed."))
    return ControllerResult.of(CreateTopicsResponse(topics=results), *([] if request.validate_only else records))


# ------------------------------------------------------------------ AlterPartition


def _ineligible_replicas(image: MetadataImage, states: Sequence[tuple[int, int]]) -> list[str]:
    """``ineligibleReplicasForIsr``."""
    out = []
    for broker_id, epoch in states:
        b = image.brokers.get(broker_id)
        if b is None:
            out.append(f"{broker_id} (not registered)")
        elif b.in_controlled_shutdown:
            out.append(f"{broker_id} (shutting down)")
        elif b.fenced:
            out.append(f"{broker_id} (fenced)")
        elif epoch != -1 and b.epoch != epoch:
            out.append(f"{broker_id} (broker epoch mismatch: requested={epoch} VS expected={b.epoch})")
    return out


def _validate_alter_partition(image: MetadataImage, broker_id: int, partition: PartitionRegistration | None,
                              data: AlterPartitionData, states: Sequence[tuple[int, int]]) -> ErrorCode:
    """``validateAlterPartitionData``, in Kafka's order."""
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if data.leader_epoch > partition.leader_epoch or data.partition_epoch > partition.partition_epoch:
        return ErrorCode.NOT_CONTROLLER  # the leader saw a newer controller than this one
    if data.leader_epoch < partition.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if broker_id != partition.leader:
        return ErrorCode.INVALID_REQUEST
    if data.partition_epoch < partition.partition_epoch:
        return ErrorCode.INVALID_UPDATE_VERSION
    new_isr = [s[0] for s in states]
    if len(set(new_isr)) != len(new_isr) or any(r not in partition.replicas for r in new_isr):
        return ErrorCode.INVALID_REQUEST  # Replicas.validateIsr
    if partition.leader not in new_isr:
        return ErrorCode.INVALID_REQUEST
    if data.leader_recovery_state == RECOVERING and len(new_isr) > 1:
        return ErrorCode.INVALID_REQUEST
    if partition.leader_recovery_state == RECOVERED and data.leader_recovery_state == RECOVERING:
        return ErrorCode.INVALID_REQUEST
    if _ineligible_replicas(image, states):
        return ErrorCode.INELIGIBLE_REPLICA
    return ErrorCode.NONE


def _alter_one(image: MetadataImage, settings: ControllerSettings, request: AlterPartitionRequest,
               topic: TopicImage, data: AlterPartitionData, version: int
               ) -> tuple[AlterPartitionResult, RecordAndVersion | None]:
    partition_id = data.partition_index
    if version < 3:  # newIsrToSimpleNewIsrWithBrokerEpochs
        states = [(r, -1) for r in data.new_isr]
    else:
        states = [(s.broker_id, s.broker_epoch) for s in data.new_isr_with_epochs]
    partition = topic.partitions.get(partition_id)
    error = _validate_alter_partition(image, request.broker_id, partition, data, states)
    if error != ErrorCode.NONE or partition is None:
        return AlterPartitionResult(partition_index=partition_id, error_code=int(error)), None
    builder = partition_builder(image, settings, topic, partition_id)
    record = builder.set_target_isr([s[0] for s in states]).set_target_leader_recovery_state(
        data.leader_recovery_state).build()
    if record is not None:
        partition = merge_partition_change(partition, record.message)
        leader = record.message.leader
        if leader != request.broker_id and leader != -2:
            # The change completed a reassignment and moved leadership away:
            # the leader must fetch metadata before it tries again.
            return AlterPartitionResult(partition_index=partition_id,
                                        error_code=int(ErrorCode.NEW_LEADER_ELECTED)), record
    return AlterPartitionResult(
        partition_index=partition_id, error_code=0, leader_id=partition.leader, isr=list(partition.isr),
        leader_recovery_state=partition.leader_recovery_state, leader_epoch=partition.leader_epoch,
        partition_epoch=partition.partition_epoch), record


def alter_partition(image: MetadataImage, settings: ControllerSettings, request: AlterPartitionRequest,
                    version: int) -> ControllerResult[AlterPartitionResponse]:
    """``ReplicationControlManager.alterPartition`` (v2+: topics by id). A
    stale broker epoch refuses the whole request (STALE_BROKER_EPOCH)."""
    try:
        check_broker_epoch(image, request.broker_id, request.broker_epoch)
    except ApiError as e:
        return ControllerResult.of(AlterPartitionResponse(error_code=int(e.error)))
    response = AlterPartitionResponse(topics=[])
    records: list[RecordAndVersion] = []
    for topic_data in request.topics:
        result_topic = AlterPartitionTopicResult(topic_id=topic_data.topic_id, partitions=[])
        response.topics.append(result_topic)
        topic = image.topics.get(topic_data.topic_id) if topic_data.topic_id != ZERO_UUID else None
        if topic is None:
            result_topic.partitions = [AlterPartitionResult(partition_index=p.partition_index,
                                                            error_code=int(ErrorCode.UNKNOWN_TOPIC_ID))
                                       for p in topic_data.partitions]
            continue
        for data in topic_data.partitions:
            result, record = _alter_one(image, settings, request, topic, data, version)
            result_topic.partitions.append(result)
            if record is not None:
                records.append(record)
    return ControllerResult(tuple(records), response, atomic=False)


# ------------------------------------------------------------------ DeleteTopics


def _delete_result(name: str | None, topic_id: uuid.UUID, error: ApiError | None) -> DeletableTopicResult:
    if error is None:
        return DeletableTopicResult(name=name, topic_id=topic_id, error_code=0, error_message=None)
    return DeletableTopicResult(name=name, topic_id=topic_id, error_code=int(error.error), error_message=error.message)


def _provided_topics(request: DeleteTopicsRequest, out: list[DeletableTopicResult]
                     ) -> tuple[list[str], list[uuid.UUID], set[str], set[uuid.UUID]]:
    """``ControllerApis.deleteTopics``'s first pass: the names and ids given
    once each, and those given twice (refused)."""
    names: list[str] = []
    dup_names: set[str] = set()
    ids: list[uuid.UUID] = []
    dup_ids: set[uuid.UUID] = set()

    def add_name(name: str) -> None:
        if name in dup_names or name in names:
            dup_names.add(name)
            if name in names:
                names.remove(name)
        else:
            names.append(name)
    for name in request.topic_names:
        add_name(name)
    for state in request.topics:
        if state.name is None and state.topic_id == ZERO_UUID:
            out.append(_delete_result(None, ZERO_UUID, ApiError(
                ErrorCode.INVALID_REQUEST, "Neither topic name nor id were specified.")))
        elif state.name is None:
            if state.topic_id in dup_ids or state.topic_id in ids:
                dup_ids.add(state.topic_id)
                if state.topic_id in ids:
                    ids.remove(state.topic_id)
            else:
                ids.append(state.topic_id)
        elif state.topic_id == ZERO_UUID:
            add_name(state.name)
        else:
            out.append(_delete_result(state.name, state.topic_id, ApiError(
                ErrorCode.INVALID_REQUEST, "You may not specify both topic name and topic id.")))
    return names, ids, dup_names, dup_ids


def delete_topics(image: MetadataImage, settings: ControllerSettings, request: DeleteTopicsRequest,
                  version: int) -> ControllerResult[DeleteTopicsResponse]:
    """``ControllerApis.deleteTopics`` (names and ids resolved, duplicates
    refused; authorization is the caller's) and
    ``ReplicationControlManager.deleteTopics``: one RemoveTopicRecord per
    topic. Kafka shuffles the results; here they keep the request's order."""
    if not settings.delete_topic_enable:
        error = ApiError(ErrorCode.INVALID_REQUEST, "This version does not support topic deletion.") \
            if version < 3 else bare_error(ErrorCode.TOPIC_DELETION_DISABLED)
        everyone = [_delete_result(n, ZERO_UUID, error) for n in request.topic_names] + [
            _delete_result(t.name, t.topic_id, error) for t in request.topics]
        return ControllerResult.of(DeleteTopicsResponse(responses=everyone))
    out: list[DeletableTopicResult] = []
    names, ids, dup_names, dup_ids = _provided_topics(request, out)
    out += [_delete_result(n, ZERO_UUID, ApiError(ErrorCode.INVALID_REQUEST, "Duplicate topic name."))
            for n in sorted(dup_names)]
    out += [_delete_result(None, i, ApiError(ErrorCode.INVALID_REQUEST, "Duplicate topic id."))
            for i in sorted(dup_ids)]
    id_to_name: dict[uuid.UUID, str] = {}
    for topic_id in ids:
        topic = image.topics.get(topic_id)
        if topic is None:
            out.append(_delete_result(None, topic_id, bare_error(ErrorCode.UNKNOWN_TOPIC_ID)))
        else:
            id_to_name[topic_id] = topic.name
    for name in names:
        found = image.topic_ids_by_name.get(name)
        if found is None:
            out.append(_delete_result(name, ZERO_UUID, bare_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)))
        elif found in dup_ids or found in id_to_name:
            id_to_name.pop(found, None)
            out.append(_delete_result(name, found, ApiError(
                ErrorCode.INVALID_REQUEST, "The provided topic name maps to an ID that was already supplied.")))
        else:
            id_to_name[found] = name
    records = [RecordAndVersion(RemoveTopicRecord(topic_id=i), 0) for i in id_to_name]
    out += [_delete_result(name, i, None) for i, name in id_to_name.items()]
    return ControllerResult.of(DeleteTopicsResponse(responses=out), *records)


# ------------------------------------------------------------------ CreatePartitions


def _new_partition_records(image: MetadataImage, topic: TopicImage, request_topic: CreatePartitionsTopic,
                           rng: random.Random) -> list[RecordAndVersion]:
    """``createPartitions(context, topic, records)``."""
    count = len(topic.partitions)
    if request_topic.count == count:
        raise ApiError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {count} partition(s).")
    if request_topic.count < count:
        raise ApiError(ErrorCode.INVALID_PARTITIONS, f"The topic {topic.name} currently has {count} "
                       f"partition(s); {request_topic.count} would not be an increase.")
    additional = request_topic.count - count
    manual = request_topic.assignments
    if manual is not None and len(manual) != additional:
        raise ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Attempted to add {additional} additional "
                       f"partition(s), but only {len(manual)} assignment(s) were specified.")
    factor = len(next(iter(topic.partitions.values())).replicas)
    if manual is not None:
        assignments = []
        for i, assignment in enumerate(manual):
            check_manual_assignment(image, assignment.broker_ids, factor)
            if not any(is_active(image, r) for r in assignment.broker_ids):
                raise ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "All brokers specified in the manual "
                               f"partition assignment for partition {count + i} are fenced or in controlled "
                               "shutdown.")
            assignments.append(list(assignment.broker_ids))
    else:
        assignments = place(rng, usable_brokers(image), additional, factor)
    mv = metadata_version_of(image)
    records = []
    for i, replicas in enumerate(assignments):
        isr = [r for r in replicas if is_active(image, r)]
        if not isr:
            raise ApiError(ErrorCode.INVALID_REPLICATION_FACTOR, f"Unable to replicate the partition {factor} "
                           "time(s): All brokers are currently fenced or in controlled shutdown.")
        partition = _new_partition(image, replicas, isr)
        records.append(partition_record(mv, topic.id, count + i, partition, elr_enabled(image)))
    return records


def create_partitions(image: MetadataImage, settings: ControllerSettings, request: CreatePartitionsRequest,
                      version: int, *, rng: random.Random) -> ControllerResult[CreatePartitionsResponse]:
    """``ReplicationControlManager.createPartitions``, with ControllerApis'
    duplicate-name refusal; ``validate_only`` writes nothing."""
    seen: dict[str, int] = {}
    for t in request.topics:
        seen[t.name] = seen.get(t.name, 0) + 1
    results: list[CreatePartitionsTopicResult] = []
    records: list[RecordAndVersion] = []
    for t in request.topics:
        if seen[t.name] > 1:
            continue
        try:
            topic = image.topic(t.name)
            if topic is None:
                raise bare_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            records += _new_partition_records(image, topic, t, rng)
            results.append(CreatePartitionsTopicResult(name=t.name, error_code=0, error_message=None))
        except ApiError as e:
            results.append(CreatePartitionsTopicResult(name=t.name, error_code=int(e.error), error_message=e.message))
    results += [CreatePartitionsTopicResult(name=name, error_code=int(ErrorCode.INVALID_REQUEST),
                                            error_message="Duplicate topic name.")
                for name, n in seen.items() if n > 1]
    response = CreatePartitionsResponse(results=results)
    return ControllerResult.of(response, *([] if request.validate_only else records))
