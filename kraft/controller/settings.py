"""The controller's configuration (Kafka's ``QuorumController.Builder`` and
``KafkaConfig`` keys it reads), as plain values: the sans-IO controller
never parses a properties file; :mod:`kraft.config` fills this in."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = ["ControllerSettings"]


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    """Kafka's defaults (``ServerConfigs``, ``ReplicationConfigs``,
    ``KRaftConfigs``, ``QuorumConfig``) unless the node's config sets them."""

    node_id: int
    cluster_id: str = ""
    #: ``num.partitions``: CreateTopics without a partition count (-1).
    num_partitions: int = 1
    #: ``default.replication.factor``: CreateTopics without a replication factor (-1).
    default_replication_factor: int = 1
    #: ``min.insync.replicas`` of the controller's own config (the cluster default with ELR).
    min_insync_replicas: int = 1
    #: ``unclean.leader.election.enable`` of the controller's own config.
    unclean_leader_election_enable: bool = False
    #: ``broker.session.timeout.ms``: a broker with no heartbeat for this long is fenced.
    broker_session_timeout_ms: int = 9000
    #: ``broker.heartbeat.interval.ms``: what the broker is told to use (and the fencing check's period).
    broker_heartbeat_interval_ms: int = 2000
    #: ``metadata.max.idle.interval.ms``: a NoOpRecord when nothing was written for this long (0: never).
    metadata_max_idle_interval_ms: int = 500
    #: ``delete.topic.enable``.
    delete_topic_enable: bool = True
    #: ``controlled.shutdown.enable`` is the broker's; the controller honours what it asks.
    #: ``max.incremental.fetch.session.cache.slots`` etc. are broker keys and not here.
    #: ``authorizer.class.name``: without one, CreateAcls/DeleteAcls answer SECURITY_DISABLED (``AclApis``).
    authorizer_class_name: str = ""
    #: The controller's own properties (Kafka's ``staticConfig``): the defaults
    #: DescribeConfigs and config validation fall back to.
    static_config: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    #: The ids of ``controller.quorum.voters`` (Kafka's ``QuorumFeatures.quorumNodeIds``;
    #: empty for a quorum bootstrapped dynamically): each must have registered
    #: before a feature is upgraded.
    quorum_node_ids: tuple[int, ...] = ()
