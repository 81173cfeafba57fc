"""Kafka's ReplicationControlManager (Kafka 4.4), as pure functions over an image."""

from __future__ import annotations

import random
import uuid

import pytest

from kraft.controller.replication_control import (
    alter_partition,
    broker_fenced,
    broker_in_controlled_shutdown,
    broker_unfenced,
    broker_shutdown,
    broker_unregistered,
    create_topics,
    alter_partition_reassignments,
    create_partitions,
    delete_topics,
    elect_leaders,
    leaders_led_by,
    list_partition_reassignments,
    maybe_balance_partition_leaders,
    maybe_elect_unclean_leaders,
    partition_leaders_imbalanced,
    some_partitions_leaderless,
)
from kraft.messages.generated.alter_partition_reassignments_request import (
    AlterPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
)
from kraft.messages.generated.create_partitions_request import CreatePartitionsRequest, CreatePartitionsTopic
from kraft.messages.generated.delete_topics_request import DeleteTopicsRequest, DeleteTopicState
from kraft.messages.generated.elect_leaders_request import ElectLeadersRequest, TopicPartitions
from kraft.messages.generated.list_partition_reassignments_request import ListPartitionReassignmentsRequest
from kraft.controller.result import ControllerResult
from kraft.controller.settings import ControllerSettings
from kraft.image.model import MetadataImage
from kraft.messages.generated.alter_partition_request import AlterPartitionRequest, BrokerState, PartitionData, TopicData
from kraft.messages.generated.alter_partition_response import AlterPartitionResponse
from kraft.messages.generated.broker_registration_change_record import BrokerRegistrationChangeRecord
from kraft.messages.generated.config_record import ConfigRecord
from kraft.messages.generated.create_topics_request import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from kraft.messages.generated.partition_change_record import PartitionChangeRecord
from kraft.messages.generated.partition_record import PartitionRecord
from kraft.messages.generated.topic_record import TopicRecord
from kraft.wire.errors import ErrorCode
from tests.controller.images import ImageSetup

SETTINGS = ControllerSettings(node_id=3000)


def _create(cluster: ImageSetup, *topics: CreatableTopic, validate_only: bool = False,
            settings: ControllerSettings = SETTINGS):  # type: ignore[no-untyped-def]
    request = CreateTopicsRequest(topics=list(topics), validate_only=validate_only)
    return create_topics(cluster.image, settings, request, 7, rng=random.Random(1))


def _topic(name: str, partitions: int = 1, factor: int = 1, **kw: object) -> CreatableTopic:
    return CreatableTopic(name=name, num_partitions=partitions, replication_factor=factor, assignments=[],
                          configs=[], **kw)  # type: ignore[arg-type]


# ------------------------------------------------------------------ createTopics


def test_create_topic_writes_topic_config_and_partition_records_in_order() -> None:
    """ReplicationControlManager.createTopic: TopicRecord, then ConfigRecords, then PartitionRecords."""
    cluster = ImageSetup().brokers(1, 2, 3)
    topic = _topic("foo", 3, 2)
    topic.configs = [CreatableTopicConfig(name="min.insync.replicas", value="2")]
    result = _create(cluster, topic)
    kinds = [type(r.message) for r in result.records]
    assert kinds == [TopicRecord, ConfigRecord, PartitionRecord, PartitionRecord, PartitionRecord]
    [answer] = result.response.topics
    assert (answer.error_code, answer.num_partitions, answer.replication_factor) == (0, 3, 2)
    image = cluster.apply(result.records)
    created = image.topic("foo")
    assert created is not None and created.id == answer.topic_id
    for p in created.partitions.values():
        assert len(p.replicas) == 2 and p.isr == p.replicas and p.leader == p.replicas[0]
        assert (p.leader_epoch, p.partition_epoch) == (0, 0)
    configs = {c.name: (c.value, c.config_source) for c in answer.configs}
    assert configs["min.insync.replicas"] == ("2", 1)
    assert configs["retention.ms"] == ("604800000", 5)


def test_defaults_come_from_settings() -> None:
    """ReplicationControlManager.createTopic: -1 takes num.partitions and default.replication.factor."""
    settings = ControllerSettings(node_id=1, num_partitions=4, default_replication_factor=2)
    result = _create(ImageSetup().brokers(1, 2), _topic("t", -1, -1), settings=settings)
    assert (result.response.topics[0].num_partitions, result.response.topics[0].replication_factor) == (4, 2)


def test_validate_only_writes_nothing() -> None:
    """ReplicationControlManager.createTopics: validateOnly returns the results without records."""
    result = _create(ImageSetup().brokers(1), _topic("t"), validate_only=True)
    assert result.records == () and result.response.topics[0].error_code == 0


@pytest.mark.parametrize("name,message", [
    ("", "Topic name is invalid: the empty string is not allowed"),
    ("..", "Topic name is invalid: '..' is not allowed"),
    ("a/b", "Topic name is invalid: 'a/b' contains one or more characters other than ASCII alphanumerics, "
            "'.', '_' and '-'"),
    ("x" * 250, f"Topic name is invalid: the length of '{'x' * 250}' is longer than the max allowed length 249"),
    ("my.topic", "Topic 'my.topic' collides with existing topic: my_topic"),
])
def test_bad_names_are_invalid_topic_exception(name: str, message: str) -> None:
    """ReplicationControlManager.validateNewTopicNames: Topic.validate and the '.'/'_' collision check."""
    cluster = ImageSetup().brokers(1).topic("my_topic", [[1]])
    [answer] = _create(cluster, _topic(name)).response.topics
    assert (answer.error_code, answer.error_message) == (ErrorCode.INVALID_TOPIC_EXCEPTION, message)


def test_an_existing_topic_is_topic_already_exists() -> None:
    """ReplicationControlManager.createTopics: TOPIC_ALREADY_EXISTS, "Topic 'x' already exists."."""
    [answer] = _create(ImageSetup().brokers(1).topic("x", [[1]]), _topic("x")).response.topics
    assert (answer.error_code, answer.error_message) == (ErrorCode.TOPIC_ALREADY_EXISTS, "Topic 'x' already exists.")


@pytest.mark.parametrize("name,value,message", [
    ("no.such.config", "1", "Unknown topic config name: no.such.config"),
    ("min.insync.replicas", "0", "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
    ("min.insync.replicas", "x", "Invalid value x for configuration min.insync.replicas: Not a number of type INT"),
    ("cleanup.policy", "bogus", "Invalid value bogus for configuration cleanup.policy: String must be one of: "
                                "compact, delete"),
])
def test_bad_configs_are_invalid_config(name: str, value: str, message: str) -> None:
    """LogConfig.validate (ControllerConfigurationValidator): INVALID_CONFIG with Kafka's message."""
    topic = _topic("t")
    topic.configs = [CreatableTopicConfig(name=name, value=value)]
    result = _create(ImageSetup().brokers(1), topic)
    [answer] = result.response.topics
    assert (answer.error_code, answer.error_message) == (ErrorCode.INVALID_CONFIG, message)
    assert result.records == ()


def test_too_few_brokers_is_invalid_replication_factor() -> None:
    """ReplicationControlManager.createTopic: the placer's refusal, prefixed."""
    [answer] = _create(ImageSetup().brokers(1, 2), _topic("t", 1, 3)).response.topics
    assert answer.error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert answer.error_message == ("Unable to replicate the partition 3 time(s): The target replication factor of "
                                    "3 cannot be reached because only 2 broker(s) are registered or some brokers "
                                    "have all their log directories cordoned.")


def test_fenced_brokers_are_followers_outside_the_isr() -> None:
    """ReplicationControlManager.createTopic: ISR = the active replicas; the leader its first."""
    cluster = ImageSetup().brokers(1).broker(2, fenced=True)
    result = _create(cluster, _topic("t", 2, 2))
    for p in cluster.apply(result.records).topic("t").partitions.values():  # type: ignore[union-attr]
        assert p.isr == (1,) and p.leader == 1 and set(p.replicas) == {1, 2}


def test_manual_assignment() -> None:
    """ReplicationControlManager.createTopic: manual assignments, validateManualPartitionAssignment."""
    cluster = ImageSetup().brokers(1, 2, 3)
    topic = _topic("t", -1, -1)
    topic.assignments = [CreatableReplicaAssignment(partition_index=0, broker_ids=[3, 1]),
                         CreatableReplicaAssignment(partition_index=1, broker_ids=[2, 3])]
    image = cluster.apply(_create(cluster, topic).records)
    parts = image.topic("t").partitions  # type: ignore[union-attr]
    assert (parts[0].replicas, parts[0].leader, parts[1].replicas) == ((3, 1), 3, (2, 3))
    bad = _topic("u", -1, -1)
    bad.assignments = [CreatableReplicaAssignment(partition_index=0, broker_ids=[1, 9])]
    [answer] = _create(cluster, bad).response.topics
    assert (answer.error_code, answer.error_message) == (
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        "The manual partition assignment includes broker 9, but no such broker is registered.")


# ------------------------------------------------------------------ alterPartition


def _alter(image: MetadataImage, broker: int, epoch: int, topic_id: uuid.UUID, isr: list[int], *,
           leader_epoch: int = 0, partition_epoch: int = 0,
           broker_epochs: dict[int, int] | None = None) -> ControllerResult[AlterPartitionResponse]:
    states = [BrokerState(broker_id=r, broker_epoch=(broker_epochs or {}).get(r, -1)) for r in isr]
    request = AlterPartitionRequest(broker_id=broker, broker_epoch=epoch, topics=[TopicData(
        topic_id=topic_id, partitions=[PartitionData(partition_index=0, leader_epoch=leader_epoch,  # type: ignore[arg-type]
                                                     new_isr_with_epochs=states, partition_epoch=partition_epoch)])])
    return alter_partition(image, SETTINGS, request, 3)


def _three() -> ImageSetup:
    return ImageSetup().brokers(1, 2, 3).topic("t", [[1, 2, 3]])


def test_alter_partition_shrinks_the_isr() -> None:
    """ReplicationControlManager.alterPartition: the leader's new ISR is written, partition epoch bumped."""
    cluster = _three()
    topic_id = cluster.image.topic("t").id  # type: ignore[union-attr]
    result = _alter(cluster.image, 1, 1, topic_id, [1, 2])
    [record] = result.records
    assert record.message.isr == [1, 2] and record.message.leader == -2
    answer = result.response.topics[0].partitions[0]
    assert (answer.error_code, answer.isr, answer.partition_epoch, answer.leader_epoch) == (0, [1, 2], 1, 0)
    assert cluster.apply(result.records).topic("t").partitions[0].isr == (1, 2)  # type: ignore[union-attr]


@pytest.mark.parametrize("kw,error", [
    ({"partition_epoch": -1}, ErrorCode.INVALID_UPDATE_VERSION),
    ({"leader_epoch": -1}, ErrorCode.FENCED_LEADER_EPOCH),
    ({"leader_epoch": 5}, ErrorCode.NOT_CONTROLLER),
], ids=["stale-partition-epoch", "stale-leader-epoch", "newer-leader-epoch"])
def test_alter_partition_epoch_checks(kw: dict[str, int], error: ErrorCode) -> None:
    """ReplicationControlManager.validateAlterPartitionData: a stale partition epoch is INVALID_UPDATE_VERSION,
    a stale leader epoch FENCED_LEADER_EPOCH, a newer one NOT_CONTROLLER."""
    cluster = _three()
    result = _alter(cluster.image, 1, 1, cluster.image.topic("t").id, [1, 2], **kw)  # type: ignore[union-attr]
    assert result.records == () and result.response.topics[0].partitions[0].error_code == error


def test_alter_partition_refusals() -> None:
    """ReplicationControlManager.alterPartition: STALE_BROKER_EPOCH, UNKNOWN_TOPIC_ID, INVALID_REQUEST
    from a non-leader, INELIGIBLE_REPLICA for a fenced replica or a wrong broker epoch."""
    cluster = _three()
    topic_id = cluster.image.topic("t").id  # type: ignore[union-attr]
    assert _alter(cluster.image, 1, 99, topic_id, [1]).response.error_code == ErrorCode.STALE_BROKER_EPOCH
    unknown = _alter(cluster.image, 1, 1, type(topic_id)(int=5), [1])
    assert unknown.response.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
    assert _alter(cluster.image, 2, 2, topic_id, [1, 2]).response.topics[0].partitions[0].error_code \
        == ErrorCode.INVALID_REQUEST
    mismatch = _alter(cluster.image, 1, 1, topic_id, [1, 2], broker_epochs={2: 7})
    assert mismatch.response.topics[0].partitions[0].error_code == ErrorCode.INELIGIBLE_REPLICA
    fenced = ImageSetup().brokers(1, 2).broker(3, fenced=True).topic("t", [[1, 2, 3]], isr=[[1, 2]])
    answer = _alter(fenced.image, 1, 1, fenced.image.topic("t").id, [1, 2, 3])  # type: ignore[union-attr]
    assert answer.response.topics[0].partitions[0].error_code == ErrorCode.INELIGIBLE_REPLICA


# ------------------------------------------------------------------ broker state changes


def test_fencing_the_leader_elects_another_and_shrinks_the_isr() -> None:
    """ReplicationControlManager.handleBrokerFenced: out of the ISR, a new leader, then the FENCE record."""
    cluster = _three()
    records = broker_fenced(cluster.image, SETTINGS, 1)
    assert [type(r.message) for r in records] == [PartitionChangeRecord, BrokerRegistrationChangeRecord]
    assert (records[1].message.fenced, records[1].version) == (1, 0)
    image = cluster.apply(records)
    p = image.topic("t").partitions[0]  # type: ignore[union-attr]
    assert (p.leader, p.isr, p.leader_epoch) == (2, (2, 3), 1)
    assert image.brokers[1].fenced


def test_fencing_the_last_isr_member_leaves_it_leaderless_and_unfencing_brings_it_back() -> None:
    """handleBrokerFenced keeps the last ISR member (no empty ISR without ELR); handleBrokerUnfenced
    elects the unfenced broker for its leaderless partitions."""
    cluster = ImageSetup().brokers(1).topic("t", [[1]])
    image = cluster.apply(broker_fenced(cluster.image, SETTINGS, 1))
    p = image.topic("t").partitions[0]  # type: ignore[union-attr]
    assert (p.leader, p.isr) == (-1, (1,))
    records = broker_unfenced(image, SETTINGS, 1, image.brokers[1].epoch)
    assert isinstance(records[0].message, BrokerRegistrationChangeRecord) and records[0].message.fenced == -1
    p = cluster.apply(records).topic("t").partitions[0]  # type: ignore[union-attr]
    assert (p.leader, p.leader_epoch) == (1, 2)


def test_controlled_shutdown_moves_leadership_away() -> None:
    """ReplicationControlManager.handleBrokerInControlledShutdown: the record (v1) once, then leadership moves."""
    cluster = _three()
    assert leaders_led_by(cluster.image, 1) == 1
    records = broker_in_controlled_shutdown(cluster.image, SETTINGS, 1, 1)
    assert (records[0].message.in_controlled_shutdown, records[0].version) == (1, 1)
    image = cluster.apply(records)
    assert leaders_led_by(image, 1) == 0 and image.brokers[1].in_controlled_shutdown
    again = broker_in_controlled_shutdown(image, SETTINGS, 1, 1)
    assert again == []


def test_unclean_election_when_the_topic_allows_it() -> None:
    """ReplicationControlManager.generateLeaderAndIsrUpdates: unclean.leader.election.enable on the topic
    lets an out-of-ISR replica lead (leader recovery state RECOVERING)."""
    cluster = ImageSetup().brokers(1, 2).topic("t", [[1, 2]], isr=[[1]],
                                            configs={"unclean.leader.election.enable": "true"})
    image = cluster.apply(broker_fenced(cluster.image, SETTINGS, 1))
    p = image.topic("t").partitions[0]  # type: ignore[union-attr]
    assert (p.leader, p.isr, p.leader_recovery_state) == (2, (2,), 1)


# ------------------------------------------------------------------ deleteTopics, createPartitions


def test_delete_topics_by_name_and_id() -> None:
    """ReplicationControlManager.deleteTopics: a RemoveTopicRecord per topic; ControllerApis.deleteTopics
    answers an unknown name UNKNOWN_TOPIC_OR_PARTITION and an unknown id UNKNOWN_TOPIC_ID."""
    cluster = ImageSetup().brokers(1).topic("a", [[1]]).topic("b", [[1]])
    b_id = cluster.image.topic("b").id  # type: ignore[union-attr]
    request = DeleteTopicsRequest(topic_names=["a", "nope"], topics=[DeleteTopicState(name=None, topic_id=b_id),
                                                                    DeleteTopicState(name=None, topic_id=uuid.UUID(int=9))])
    result = delete_topics(cluster.image, SETTINGS, request, 6)
    assert sorted(type(r.message).__name__ for r in result.records) == ["RemoveTopicRecord"] * 2
    codes = {(r.name, r.error_code) for r in result.response.responses}
    assert codes == {("a", 0), ("b", 0), ("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                     (None, ErrorCode.UNKNOWN_TOPIC_ID)}
    assert cluster.apply(result.records).topics == {}


def test_delete_topics_disabled() -> None:
    """ControllerApis.deleteTopics: delete.topic.enable=false is TOPIC_DELETION_DISABLED (v3+)."""
    cluster = ImageSetup().brokers(1).topic("a", [[1]])
    settings = ControllerSettings(node_id=1, delete_topic_enable=False)
    result = delete_topics(cluster.image, settings, DeleteTopicsRequest(topic_names=["a"]), 6)
    assert result.records == () and result.response.responses[0].error_code == ErrorCode.TOPIC_DELETION_DISABLED


def test_create_partitions_adds_partitions_with_the_same_replication_factor() -> None:
    """ReplicationControlManager.createPartitions: new PartitionRecords from the next index on."""
    cluster = ImageSetup().brokers(1, 2, 3).topic("t", [[1, 2]])
    request = CreatePartitionsRequest(topics=[CreatePartitionsTopic(name="t", count=3, assignments=None)])
    result = create_partitions(cluster.image, SETTINGS, request, 3, rng=random.Random(0))
    assert result.response.results[0].error_code == 0
    parts = cluster.apply(result.records).topic("t").partitions  # type: ignore[union-attr]
    assert sorted(parts) == [0, 1, 2] and all(len(p.replicas) == 2 for p in parts.values())


@pytest.mark.parametrize("count,message", [
    (1, "Topic already has 1 partition(s)."),
    (0, "The topic t currently has 1 partition(s); 0 would not be an increase."),
])
def test_create_partitions_must_increase(count: int, message: str) -> None:
    """ReplicationControlManager.createPartitions: INVALID_PARTITIONS unless the count grows."""
    cluster = ImageSetup().brokers(1).topic("t", [[1]])
    request = CreatePartitionsRequest(topics=[CreatePartitionsTopic(name="t", count=count, assignments=None)])
    [answer] = create_partitions(cluster.image, SETTINGS, request, 3, rng=random.Random(0)).response.results
    assert (answer.error_code, answer.error_message) == (ErrorCode.INVALID_PARTITIONS, message)


# ------------------------------------------------------------------ electLeaders


def _elect(image: MetadataImage, election_type: int, partitions: list[int] | None = None):  # type: ignore[no-untyped-def]
    topics = None if partitions is None else [TopicPartitions(topic="t", partitions=partitions)]
    return elect_leaders(image, SETTINGS, ElectLeadersRequest(election_type=election_type, topic_partitions=topics), 2)


def test_preferred_election_moves_leadership_back() -> None:
    """ReplicationControlManager.electLeader: PREFERRED elects the first replica when it is in the ISR;
    ELECTION_NOT_NEEDED when it already leads."""
    cluster = ImageSetup().brokers(1, 2).topic("t", [[1, 2]], isr=[[2, 1]])
    result = _elect(cluster.image, 0, [0])
    assert result.records[0].message.leader == 1
    assert result.response.replica_election_results[0].partition_result[0].error_code == 0
    image = cluster.apply(result.records)
    again = _elect(image, 0, [0]).response.replica_election_results[0].partition_result[0]
    assert (again.error_code, again.error_message) == (ErrorCode.ELECTION_NOT_NEEDED,
                                                       "Leader election not needed for topic partition.")
    assert _elect(image, 0).response.replica_election_results[0].partition_result == []


def test_preferred_leader_not_available_and_unclean_election() -> None:
    """ReplicationControlManager.electLeader: PREFERRED_LEADER_NOT_AVAILABLE when the preferred replica
    cannot lead; UNCLEAN elects an out-of-ISR replica of a leaderless partition."""
    cluster = ImageSetup().brokers(1, 2).topic("t", [[1, 2]], isr=[[2]])
    error = _elect(cluster.image, 0, [0]).response.replica_election_results[0].partition_result[0].error_code
    assert error == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    image = cluster.apply(broker_fenced(cluster.image, SETTINGS, 2))
    assert image.topic("t").partitions[0].leader == -1  # type: ignore[union-attr]
    result = _elect(image, 1, [0])
    p = cluster.apply(result.records).topic("t").partitions[0]  # type: ignore[union-attr]
    assert (p.leader, p.isr, p.leader_recovery_state) == (1, (1,), 1)
    missing = _elect(image, 1, [5]).response.replica_election_results[0].partition_result[0]
    assert (missing.error_code, missing.error_message) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                           "No such partition as t-5")


# ------------------------------------------------------------------ reassignments


def test_reassignment_runs_to_completion_when_the_new_replica_joins_the_isr() -> None:
    """ReplicationControlManager.changePartitionReassignment, then alterPartition completes it
    (PartitionChangeBuilder.completeReassignmentIfNeeded)."""
    cluster = ImageSetup().brokers(1, 2, 3).topic("t", [[1, 2]])
    request = AlterPartitionReassignmentsRequest(topics=[ReassignableTopic(
        name="t", partitions=[ReassignablePartition(partition_index=0, replicas=[1, 3])])])
    result = alter_partition_reassignments(cluster.image, SETTINGS, request, 0)
    assert result.response.responses[0].partitions[0].error_code == 0
    image = cluster.apply(result.records)
    p = image.topic("t").partitions[0]  # type: ignore[union-attr]
    assert (p.replicas, p.adding_replicas, p.removing_replicas) == ((1, 3, 2), (3,), (2,))
    listed = list_partition_reassignments(image, ListPartitionReassignmentsRequest(topics=None), 0)
    assert listed.topics[0].partitions[0].adding_replicas == [3]
    done = _alter(image, 1, 1, image.topic("t").id, [1, 2, 3], leader_epoch=p.leader_epoch,  # type: ignore[union-attr]
                  partition_epoch=p.partition_epoch)
    p = cluster.apply(done.records).topic("t").partitions[0]  # type: ignore[union-attr]
    assert (p.replicas, p.isr, p.adding_replicas, p.removing_replicas) == ((1, 3), (1, 3), (), ())


def test_cancelling_without_a_reassignment_is_no_reassignment_in_progress() -> None:
    """ReplicationControlManager.cancelPartitionReassignment: NO_REASSIGNMENT_IN_PROGRESS."""
    cluster = ImageSetup().brokers(1).topic("t", [[1]])
    request = AlterPartitionReassignmentsRequest(topics=[ReassignableTopic(
        name="t", partitions=[ReassignablePartition(partition_index=0, replicas=None)])])
    answer = alter_partition_reassignments(cluster.image, SETTINGS, request, 0).response.responses[0].partitions[0]
    assert (answer.error_code, answer.error_message) == (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
                                                         "No partition reassignment is in progress.")


def test_effective_configs_follow_the_broker_synonyms() -> None:
    """KafkaConfigSchema.resolveEffectiveTopicConfig: the topic's value, then the synonyms in the
    cluster's dynamic default, then the static config (log.retention.hours in milliseconds), then
    Kafka's default."""
    cluster = ImageSetup().brokers(1)
    cluster.record(ConfigRecord(resource_type=4, resource_name="", name="log.cleanup.policy", value="compact"), 0)
    settings = ControllerSettings(node_id=1, static_config={"log.retention.hours": "1"})
    [answer] = _create(cluster, _topic("t"), settings=settings).response.topics
    configs = {c.name: (c.value, c.config_source) for c in answer.configs}
    assert configs["retention.ms"] == ("3600000", 4)
    assert configs["cleanup.policy"] == ("compact", 3)
    assert configs["segment.bytes"] == ("1073741824", 5)


def test_a_topic_the_caller_cannot_describe_gets_no_configs() -> None:
    """ReplicationControlManager.createTopic: not authorizedToReturnConfigs -> TOPIC_AUTHORIZATION_FAILED
    as the topic config error, and no configs."""
    request = CreateTopicsRequest(topics=[_topic("t")])
    result = create_topics(ImageSetup().brokers(1).image, SETTINGS, request, 7, rng=random.Random(1), describable=[])
    [answer] = result.response.topics
    assert (answer.error_code, answer.topic_config_error_code, answer.configs) == (
        0, ErrorCode.TOPIC_AUTHORIZATION_FAILED, [])
    assert len(result.records) == 2


# ------------------------------------------------------------------ unregistration, ELR, periodic elections


def test_unregistering_a_broker_takes_it_out_of_isr_and_leadership() -> None:
    """ReplicationControlManager.handleBrokerUnregistered: the ISR pass (the caller writes UnregisterBrokerRecord)."""
    cluster = _three()
    records = broker_unregistered(cluster.image, SETTINGS, 1, 1)
    assert [type(r.message) for r in records] == [PartitionChangeRecord]
    p = cluster.apply(records).topic("t").partitions[0]  # type: ignore[union-attr]
    assert (p.leader, p.isr) == (2, (2, 3))


def test_fencing_below_min_isr_moves_the_replica_to_the_elr() -> None:
    """ReplicationControlManager.handleBrokerFenced with ELR (KIP-966): below min.insync.replicas the fenced
    ISR member goes to the ELR; the last one leaves an empty ISR and the leader in lastKnownElr."""
    cluster = ImageSetup(elr=True).brokers(1, 2).topic("t", [[1, 2]], configs={"min.insync.replicas": "2"})
    image = cluster.apply(broker_fenced(cluster.image, SETTINGS, 2))
    p = image.topic("t").partitions[0]  # type: ignore[union-attr]
    assert (p.leader, p.isr, p.elr) == (1, (1,), (2,))
    p = cluster.apply(broker_fenced(image, SETTINGS, 1)).topic("t").partitions[0]  # type: ignore[union-attr]
    assert (p.leader, p.isr, p.elr, p.last_known_elr) == (-1, (), (1, 2), (1,))


def test_auto_leader_rebalance_moves_leadership_to_the_preferred_replica() -> None:
    """ReplicationControlManager.maybeBalancePartitionLeaders: preferred elections, at most maxElections."""
    cluster = ImageSetup().brokers(1, 2).topic("t", [[1, 2], [1, 2]], isr=[[2, 1], [2, 1]])
    assert partition_leaders_imbalanced(cluster.image)
    one = maybe_balance_partition_leaders(cluster.image, SETTINGS, max_elections=1)
    assert len(one.records) == 1 and one.response is True
    result = maybe_balance_partition_leaders(cluster.image, SETTINGS)
    image = cluster.apply(result.records)
    assert result.response is False and not partition_leaders_imbalanced(image)


def test_periodic_unclean_election_only_for_topics_that_allow_it() -> None:
    """ReplicationControlManager.maybeElectUncleanLeaders: leaderless partitions of topics with
    unclean.leader.election.enable get an unclean leader; others stay leaderless."""
    cluster = ImageSetup().broker(1, fenced=True).broker(2)
    cluster.topic("u", [[1, 2]], isr=[[1]], leaders=[-1], configs={"unclean.leader.election.enable": "true"})
    cluster.topic("c", [[1, 2]], isr=[[1]], leaders=[-1])
    image = cluster.image
    assert some_partitions_leaderless(image)
    result = maybe_elect_unclean_leaders(image, SETTINGS)
    assert [r.message.topic_id for r in result.records] == [image.topic("u").id]  # type: ignore[union-attr]
    assert result.records[0].message.leader == 2
    everywhere = maybe_elect_unclean_leaders(image, ControllerSettings(node_id=1, unclean_leader_election_enable=True))
    assert len(everywhere.records) == 2


def test_duplicate_and_internal_and_unauthorized_names() -> None:
    """ControllerApis.createTopics: "Duplicate topic name.", __cluster_metadata prohibited, and
    TOPIC_AUTHORIZATION_FAILED for a topic the caller may not create."""
    request = CreateTopicsRequest(topics=[_topic("d"), _topic("d"), _topic("__cluster_metadata"), _topic("ok"),
                                          _topic("secret")])
    result = create_topics(ImageSetup().brokers(1).image, SETTINGS, request, 7, rng=random.Random(1),
                           creatable={"d", "ok", "__cluster_metadata"})
    answers = {t.name: (t.error_code, t.error_message) for t in result.response.topics}
    assert answers == {
        "ok": (0, None), "d": (ErrorCode.INVALID_REQUEST, "Duplicate topic name."),
        "__cluster_metadata": (ErrorCode.INVALID_REQUEST, "Creation of internal topic __cluster_metadata is prohibited."),
        "secret": (ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."),
    }
    assert [type(r.message) for r in result.records] == [TopicRecord, PartitionRecord]


def test_too_many_partitions_refuses_the_whole_request() -> None:
    """ReplicationControlManager.validateTotalNumberOfPartitions: over 10,000 partitions in one request is
    POLICY_VIOLATION "Excessively large number of partitions per request." for every topic."""
    request = CreateTopicsRequest(topics=[_topic("a", 6000), _topic("b", 6000)])
    result = create_topics(ImageSetup().brokers(1).image, SETTINGS, request, 7, rng=random.Random(1))
    assert result.records == ()
    assert {(t.error_code, t.error_message) for t in result.response.topics} == {
        (ErrorCode.POLICY_VIOLATION, "Excessively large number of partitions per request.")}


def test_an_unclean_shutdown_drops_the_broker_from_the_elr_too() -> None:
    """ReplicationControlManager.handleBrokerShutdown: with ELR, an unclean shutdown removes the broker from
    the ISR and the ELR (its log may be incomplete); a clean one only from the ISR."""
    base = ImageSetup(elr=True).brokers(1, 2, 3).topic("t", [[1, 2, 3]], configs={"min.insync.replicas": "3"})
    shrunk = base.apply(broker_fenced(base.image, SETTINGS, 3))
    assert shrunk.topic("t").partitions[0].elr == (3,)  # type: ignore[union-attr]
    unclean = broker_shutdown(shrunk, SETTINGS, 3, False)
    assert base.apply(unclean).topic("t").partitions[0].elr == ()  # type: ignore[union-attr]
    assert broker_shutdown(shrunk, SETTINGS, 3, True) == []  # clean: not in any ISR, nothing to do


def test_an_unknown_election_type_is_invalid_request() -> None:
    """ReplicationControlManager.electionType: "Unknown election type 7", answered as
    ElectLeadersRequest.getErrorResponse does (top level and each partition)."""
    cluster = ImageSetup().brokers(1).topic("t", [[1]])
    result = _elect(cluster.image, 7, [0])
    assert result.records == () and result.response.error_code == ErrorCode.INVALID_REQUEST
    [p] = result.response.replica_election_results[0].partition_result
    assert (p.error_code, p.error_message) == (ErrorCode.INVALID_REQUEST, "Unknown election type 7")
