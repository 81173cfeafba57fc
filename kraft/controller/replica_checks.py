"""What the image says that replication decisions need (Kafka 4.4's
``ClusterControlManager`` and ``ConfigurationControlManager`` as
``ReplicationControlManager`` asks them): which brokers are active or
usable for placement, which directories are online, the topic configs that
steer elections (min ISR, unclean election), and a ``PartitionChangeBuilder``
set up as Kafka's ``LeaderAcceptor`` and topic settings want it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence

from kraft.controller.metadata_version import MetadataVersion, by_level
from kraft.controller.partition_change import Election, PartitionChangeBuilder
from kraft.controller.placement import UsableBroker
from kraft.controller.result import ApiError
from kraft.controller.settings import ControllerSettings
from kraft.controller.topic_config_table import (
    MIN_INSYNC_REPLICAS,
    TOPIC_CONFIGS,
    TOPIC_CONFIG_SYNONYMS,
    UNCLEAN_LEADER_ELECTION_ENABLE,
    synonym_value,
)
from kraft.image.builder import LOST_DIRECTORY, MIGRATING_DIRECTORY, UNASSIGNED_DIRECTORY
from kraft.image.model import (
    BrokerRegistration,
    ConfigResource,
    ConfigResourceType,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
)
from kraft.wire.errors import ErrorCode

__all__ = [
    "check_broker_epoch",
    "is_active", "has_uncordoned_dirs", "has_online_dir", "default_dir", "usable_brokers", "metadata_version_of",
    "elr_enabled", "resolve_topic_config", "topic_config", "unclean_election_enabled", "effective_min_isr",
    "partition_builder", "partitions_where", "check_manual_assignment", "bare_error", "DEFAULT_MESSAGES",
    "TOPIC_CONFIG_SOURCE", "DYNAMIC_BROKER_CONFIG_SOURCE", "DYNAMIC_DEFAULT_BROKER_CONFIG_SOURCE",
    "STATIC_BROKER_CONFIG_SOURCE", "DEFAULT_CONFIG_SOURCE",
]

#: ``ConfigSource`` ids (DescribeConfigsResponse).
TOPIC_CONFIG_SOURCE = 1
DYNAMIC_BROKER_CONFIG_SOURCE = 2
DYNAMIC_DEFAULT_BROKER_CONFIG_SOURCE = 3
STATIC_BROKER_CONFIG_SOURCE = 4
DEFAULT_CONFIG_SOURCE = 5


# ------------------------------------------------------------------ what the image says about brokers


def is_active(image: MetadataImage, broker_id: int) -> bool:
    """``ClusterControlManager.isActive``: registered, unfenced, not shutting down."""
    b = image.brokers.get(broker_id)
    return b is not None and not b.fenced and not b.in_controlled_shutdown


def has_uncordoned_dirs(b: BrokerRegistration) -> bool:
    """``BrokerRegistration.hasUncordonedDirs``."""
    if not b.directories or b.cordoned_directories is None:
        return True
    return bool(set(b.directories) - set(b.cordoned_directories))


def has_online_dir(image: MetadataImage, broker_id: int, directory: uuid.UUID) -> bool:
    """``ClusterControlManager.hasOnlineDir`` (``DirectoryId.isOnline``)."""
    b = image.brokers.get(broker_id)
    if b is None:
        return False
    if directory in (UNASSIGNED_DIRECTORY, MIGRATING_DIRECTORY):
        return True
    if directory == LOST_DIRECTORY:
        return False
    return not b.directories or directory in b.directories


def default_dir(image: MetadataImage, broker_id: int) -> uuid.UUID:
    """``ClusterControlManager.defaultDir``: a new replica's directory."""
    b = image.brokers.get(broker_id)
    if b is None:
        return UNASSIGNED_DIRECTORY
    if not b.directories:
        return MIGRATING_DIRECTORY
    return b.directories[0] if len(b.directories) == 1 else UNASSIGNED_DIRECTORY


def usable_brokers(image: MetadataImage) -> list[UsableBroker]:
    """``ClusterControlManager.usableBrokers``: registered brokers not in
    controlled shutdown and with a directory not cordoned; fenced ones are
    included, marked (placement makes them followers only)."""
    return [UsableBroker(b.id, b.rack, b.fenced) for b in sorted(image.brokers.values(), key=lambda b: b.id)
            if not b.in_controlled_shutdown and has_uncordoned_dirs(b)]


def metadata_version_of(image: MetadataImage) -> MetadataVersion:
    level = image.features.metadata_version
    if level is None:
        raise RuntimeError("metadata.version is not finalized")
    return by_level(level)


def elr_enabled(image: MetadataImage) -> bool:
    """``FeatureControlManager.isElrFeatureEnabled``: ``eligible.leader.replicas.version`` >= 1."""
    return image.features.finalized.get("eligible.leader.replicas.version", 0) >= 1


# ------------------------------------------------------------------ topic configs the controller reads


def resolve_topic_config(image: MetadataImage, settings: ControllerSettings, key: str,
                         topic_configs: Mapping[str, str]) -> tuple[str | None, int]:
    """``KafkaConfigSchema.resolveEffectiveTopicConfig``: (value, source) of
    one topic config -- the topic's own, else its broker synonyms in the
    controller's dynamic node config, the cluster default, the static
    config, else Kafka's default."""
    if key in topic_configs:
        return topic_configs[key], TOPIC_CONFIG_SOURCE
    synonyms = TOPIC_CONFIG_SYNONYMS.get(key, ())
    node = image.configs.get(ConfigResource(ConfigResourceType.BROKER, str(settings.node_id)), {})
    cluster = image.configs.get(ConfigResource(ConfigResourceType.BROKER, ""), {})
    for configs, source in ((node, DYNAMIC_BROKER_CONFIG_SOURCE), (cluster, DYNAMIC_DEFAULT_BROKER_CONFIG_SOURCE),
                            (settings.static_config, STATIC_BROKER_CONFIG_SOURCE)):
        for synonym in synonyms:
            if synonym in configs:
                return synonym_value(synonym, configs[synonym]), source
    spec = TOPIC_CONFIGS.get(key)
    return (spec.default if spec is not None else None), DEFAULT_CONFIG_SOURCE


def topic_config(image: MetadataImage, settings: ControllerSettings, topic: str, key: str) -> str | None:
    """``ConfigurationControlManager.getTopicConfig``, or None where only
    Kafka's default applies (the settings' own default decides then)."""
    own = image.configs.get(ConfigResource(ConfigResourceType.TOPIC, topic), {})
    value, source = resolve_topic_config(image, settings, key, own)
    return None if source == DEFAULT_CONFIG_SOURCE else value


def unclean_election_enabled(image: MetadataImage, settings: ControllerSettings, topic: str) -> bool:
    """``uncleanLeaderElectionEnabledForTopic``."""
    value = topic_config(image, settings, topic, UNCLEAN_LEADER_ELECTION_ENABLE)
    if value is None:
        return settings.unclean_leader_election_enable
    return value.strip().lower() == "true"


def effective_min_isr(image: MetadataImage, settings: ControllerSettings, topic: TopicImage) -> int:
    """``getTopicEffectiveMinIsr``: min.insync.replicas, at most the replication factor."""
    value = topic_config(image, settings, topic.name, MIN_INSYNC_REPLICAS)
    min_isr = settings.min_insync_replicas if value is None else int(value)
    first = topic.partitions.get(0)
    return min(min_isr, len(first.replicas)) if first is not None else min_isr


# ------------------------------------------------------------------ partition changes


def partition_builder(image: MetadataImage, settings: ControllerSettings, topic: TopicImage, partition_id: int,
             acceptable: Callable[[int], bool] | None = None) -> PartitionChangeBuilder:
    """A builder with Kafka's ``LeaderAcceptor`` (active, or as ``acceptable``
    says, and the replica's directory online) and the topic's election."""
    partition = topic.partitions[partition_id]
    is_ok = acceptable or (lambda r: is_active(image, r))
    directories = dict(zip(partition.replicas, partition.directories))

    def leader_acceptor(replica: int) -> bool:
        if not is_ok(replica):
            return False
        directory = directories.get(replica)
        return directory is not None and has_online_dir(image, replica, directory)

    builder = PartitionChangeBuilder(partition, topic.id, partition_id, leader_acceptor,
                                     metadata_version_of(image), effective_min_isr(image, settings, topic),
                                     elr_enabled(image))
    if unclean_election_enabled(image, settings, topic.name):
        builder.set_election(Election.UNCLEAN)
    return builder.set_default_dir_provider(lambda r: default_dir(image, r))


def partitions_where(image: MetadataImage, where: Callable[[PartitionRegistration], bool]
                ) -> Iterator[tuple[TopicImage, int]]:
    for topic_id in sorted(image.topics):
        topic = image.topics[topic_id]
        for partition_id in sorted(topic.partitions):
            if where(topic.partitions[partition_id]):
                yield topic, partition_id


def check_manual_assignment(image: MetadataImage, replicas: Sequence[int], replication_factor: int | None) -> None:
    """``validateManualPartitionAssignment``."""
    def refuse(message: str) -> ApiError:
        return ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, message)
    if not replicas:
        raise refuse("The manual partition assignment includes an empty replica list.")
    previous = None
    for broker_id in sorted(replicas):
        registration = image.brokers.get(broker_id)
        if registration is None:
            raise refuse(f"The manual partition assignment includes broker {broker_id}, "
                         "but no such broker is registered.")
        if not has_uncordoned_dirs(registration):
            raise refuse(f"The manual partition assignment includes broker {broker_id}, "
                         "but all its log directories are cordoned.")
        if broker_id == previous:
            raise refuse(f"The manual partition assignment includes the broker {previous} more than once.")
        previous = broker_id
    if replication_factor is not None and len(replicas) != replication_factor:
        raise refuse(f"The manual partition assignment includes a partition with {len(replicas)} replica(s), "
                     "but this is not consistent with previous partitions, which have "
                     f"{replication_factor} replica(s).")


#: Kafka's default messages (``Errors``) of the codes these operations return bare.
DEFAULT_MESSAGES: Mapping[int, str] = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
    ErrorCode.UNKNOWN_TOPIC_ID: "This server does not host this topic ID.",
    ErrorCode.TOPIC_DELETION_DISABLED: "Topic deletion is disabled.",
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: "The preferred leader was not available.",
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: "Eligible topic partition leaders are not available.",
    ErrorCode.ELECTION_NOT_NEEDED: "Leader election not needed for topic partition.",
    ErrorCode.NO_REASSIGNMENT_IN_PROGRESS: "No partition reassignment is in progress.",
}


def bare_error(code: ErrorCode) -> ApiError:
    """``new ApiError(Errors.X)``: the code with its default message."""
    return ApiError(code, DEFAULT_MESSAGES[code])


def check_broker_epoch(image: MetadataImage, broker_id: int, broker_epoch: int) -> None:
    """``ClusterControlManager.checkBrokerEpoch``."""
    registration = image.brokers.get(broker_id)
    if registration is None:
        raise ApiError(ErrorCode.STALE_BROKER_EPOCH, f"No broker registration found for broker id {broker_id}")
    if registration.epoch != broker_epoch:
        raise ApiError(ErrorCode.STALE_BROKER_EPOCH,
                       f"Expected broker epoch {registration.epoch}, but got broker epoch {broker_epoch}")
