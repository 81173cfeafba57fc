"""The metadata image: the state a Kafka broker holds after replaying the
committed ``__cluster_metadata`` records, as of one committed offset.

Shaped after Kafka's ``org.apache.kafka.image`` classes (``MetadataImage``,
``FeaturesImage``, ``ClusterImage``, ``TopicsImage``, ``ConfigurationsImage``,
``ClientQuotasImage``, ``ScramImage``, ``AclsImage``, ``ProducerIdsImage``,
``DelegationTokenImage``) and their value types (``BrokerRegistration``,
``ControllerRegistration``, ``PartitionRegistration``, ``StandardAcl``, ...).

Everything here is immutable: frozen dataclasses and read-only mappings. An
image never changes after it is built; :class:`~kraft.image.builder.ImageBuilder`
makes a new one (sharing what did not change). SCRAM credentials keep their
salt and keys because Kafka's metadata shell prints them (``cat
/image/scram/...``); the JSON forms (:meth:`MetadataImage.to_json`) leave
them out.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from kraft.messages.json_form import uuid_to_kafka

__all__ = [
    "EMPTY_MAPPING",
    "ZERO_UUID",
    "METADATA_VERSION",
    "ConfigResourceType",
    "ScramMechanism",
    "Provenance",
    "FeaturesImage",
    "Listener",
    "VersionRange",
    "BrokerRegistration",
    "ControllerRegistration",
    "PartitionRegistration",
    "new_partition",
    "TopicImage",
    "ConfigResource",
    "ClientQuotaEntity",
    "ScramCredential",
    "StandardAcl",
    "ProducerIdsImage",
    "DelegationToken",
    "MetadataImage",
    "frozen_mapping",
]

ZERO_UUID = uuid.UUID(int=0)
#: The feature that carries the metadata version (``MetadataVersion.FEATURE_NAME``).
METADATA_VERSION = "metadata.version"

EMPTY_MAPPING: Mapping[Any, Any] = MappingProxyType({})


def frozen_mapping(d: dict[Any, Any]) -> Mapping[Any, Any]:
    """A read-only view; the caller hands over ``d`` and must not touch it again."""
    return MappingProxyType(d) if d else EMPTY_MAPPING


class ConfigResourceType:
    """Kafka's ``ConfigResource.Type`` ids and the names the shell uses."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32

    NAMES: Mapping[int, str] = MappingProxyType({
        0: "UNKNOWN", 2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS", 32: "GROUP",
    })

    @classmethod
    def name_of(cls, type_id: int) -> str:
        return cls.NAMES.get(type_id, f"UNKNOWN({type_id})")


class ScramMechanism:
    """Kafka's ``ScramMechanism`` ids and mechanism names."""

    NAMES: Mapping[int, str] = MappingProxyType({1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"})

    @classmethod
    def name_of(cls, mechanism: int) -> str:
        return cls.NAMES.get(mechanism, f"UNKNOWN({mechanism})")


def _uuid(u: uuid.UUID) -> str:
    return uuid_to_kafka(u)


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where an image comes from (Kafka's ``MetadataProvenance``): the last
    offset whose record it contains, that record's leader epoch and append
    time. ``offset == -1`` is the empty image."""

    offset: int = -1
    epoch: int = -1
    timestamp_ms: int = -1

    def to_json(self) -> dict[str, Any]:
        return {"lastContainedOffset": self.offset, "lastContainedEpoch": self.epoch,
                "lastContainedLogTimeMs": self.timestamp_ms}


@dataclass(frozen=True, slots=True)
class FeaturesImage:
    """Finalized feature levels. ``metadata.version`` is kept apart, as in
    Kafka's ``FeaturesImage``; a level of 0 removes any other feature."""

    metadata_version: int | None = None
    finalized: Mapping[str, int] = field(default_factory=lambda: EMPTY_MAPPING)
    zk_migration_state: int = 0  # ZkMigrationState.NONE

    def levels(self) -> dict[str, int]:
        """Every finalized level, ``metadata.version`` included."""
        out = dict(sorted(self.finalized.items()))
        if self.metadata_version is not None:
            out[METADATA_VERSION] = self.metadata_version
        return dict(sorted(out.items()))

    def to_json(self) -> dict[str, Any]:
        return {"metadataVersion": self.metadata_version, "finalizedVersions": dict(sorted(self.finalized.items())),
                "zkMigrationState": self.zk_migration_state}


@dataclass(frozen=True, slots=True)
class Listener:
    """A broker or controller endpoint (``BrokerEndpoint``/``ControllerEndpoint``)."""

    name: str
    host: str
    port: int
    security_protocol: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "host": self.host, "port": self.port, "securityProtocol": self.security_protocol}


@dataclass(frozen=True, slots=True)
class VersionRange:
    """A supported feature range (``BrokerFeature``/``ControllerFeature``)."""

    name: str
    min_version: int
    max_version: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "minSupportedVersion": self.min_version, "maxSupportedVersion": self.max_version}


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    id: int
    epoch: int
    incarnation_id: uuid.UUID
    listeners: tuple[Listener, ...]
    supported_features: tuple[VersionRange, ...]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    is_migrating_zk_broker: bool
    directories: tuple[uuid.UUID, ...]
    cordoned_directories: tuple[uuid.UUID, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id, "epoch": self.epoch, "incarnationId": _uuid(self.incarnation_id),
            "listeners": [e.to_json() for e in self.listeners],
            "supportedFeatures": [f.to_json() for f in self.supported_features],
            "rack": self.rack, "fenced": self.fenced, "inControlledShutdown": self.in_controlled_shutdown,
            "isMigratingZkBroker": self.is_migrating_zk_broker,
            "directories": [_uuid(d) for d in self.directories],
        }
        if self.cordoned_directories is not None:
            out["cordonedDirectories"] = [_uuid(d) for d in self.cordoned_directories]
        return out


@dataclass(frozen=True, slots=True)
class ControllerRegistration:
    id: int
    incarnation_id: uuid.UUID
    zk_migration_ready: bool
    listeners: tuple[Listener, ...]
    supported_features: tuple[VersionRange, ...]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "incarnationId": _uuid(self.incarnation_id), "zkMigrationReady": self.zk_migration_ready,
                "listeners": [e.to_json() for e in self.listeners],
                "supportedFeatures": [f.to_json() for f in self.supported_features]}


@dataclass(frozen=True, slots=True)
class PartitionRegistration:
    """One partition, as Kafka's ``PartitionRegistration``: ``directories`` has
    one entry per replica (``DirectoryId.MIGRATING`` when the record carried
    none); ``elr``/``last_known_elr`` are empty when absent."""

    replicas: tuple[int, ...]
    directories: tuple[uuid.UUID, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    leader: int
    leader_recovery_state: int
    leader_epoch: int
    partition_epoch: int
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "replicas": list(self.replicas), "directories": [_uuid(d) for d in self.directories],
            "isr": list(self.isr), "removingReplicas": list(self.removing_replicas),
            "addingReplicas": list(self.adding_replicas), "leader": self.leader,
            "leaderRecoveryState": self.leader_recovery_state, "leaderEpoch": self.leader_epoch,
            "partitionEpoch": self.partition_epoch, "eligibleLeaderReplicas": list(self.elr),
            "lastKnownElr": list(self.last_known_elr),
        }


class _PartitionSlots:
    """:class:`PartitionRegistration`'s slots, in its order, on a plain class."""

    __slots__ = ("replicas", "directories", "isr", "removing_replicas", "adding_replicas", "leader",
                 "leader_recovery_state", "leader_epoch", "partition_epoch", "elr", "last_known_elr")
    replicas: tuple[int, ...]
    directories: tuple[uuid.UUID, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    leader: int
    leader_recovery_state: int
    leader_epoch: int
    partition_epoch: int
    elr: tuple[int, ...]
    last_known_elr: tuple[int, ...]


def new_partition(replicas: tuple[int, ...], directories: tuple[uuid.UUID, ...], isr: tuple[int, ...],
                  removing_replicas: tuple[int, ...], adding_replicas: tuple[int, ...], leader: int,
                  leader_recovery_state: int, leader_epoch: int, partition_epoch: int,
                  elr: tuple[int, ...] = (), last_known_elr: tuple[int, ...] = ()) -> PartitionRegistration:
    """``PartitionRegistration(...)``, built about five times faster.

    A frozen dataclass's ``__init__`` stores each field through
    ``object.__setattr__`` (1.6-3 us for these eleven); opening a log builds
    one per PartitionRecord and PartitionChangeRecord, most of its records.
    The fields go into a plain object with the same slots, which then
    becomes a PartitionRegistration (the layouts are the same, so CPython
    allows the ``__class__`` change): the same type, equality, hash and
    immutability as the constructor's (tests/image/test_builder.py pins it)."""
    p = _PartitionSlots()
    p.replicas = replicas
    p.directories = directories
    p.isr = isr
    p.removing_replicas = removing_replicas
    p.adding_replicas = adding_replicas
    p.leader = leader
    p.leader_recovery_state = leader_recovery_state
    p.leader_epoch = leader_epoch
    p.partition_epoch = partition_epoch
    p.elr = elr
    p.last_known_elr = last_known_elr
    p.__class__ = PartitionRegistration  # type: ignore[assignment]
    return p  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class TopicImage:
    name: str
    id: uuid.UUID
    partitions: Mapping[int, PartitionRegistration] = field(default_factory=lambda: EMPTY_MAPPING)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "id": _uuid(self.id),
                "partitions": {str(p): r.to_json() for p, r in sorted(self.partitions.items())}}


@dataclass(frozen=True, slots=True, order=True)
class ConfigResource:
    """``ConfigResource(type, name)``; an empty name is the cluster default."""

    type: int
    name: str

    def __str__(self) -> str:
        return f"{ConfigResourceType.name_of(self.type)}:{self.name}"


@dataclass(frozen=True, slots=True)
class ClientQuotaEntity:
    """``ClientQuotaEntity``: entity type -> name, ``None`` for the default
    entity of that type. Kept sorted by type, so equal entities compare equal."""

    entries: tuple[tuple[str, str | None], ...]

    @classmethod
    def of(cls, entries: Mapping[str, str | None] | list[tuple[str, str | None]]) -> ClientQuotaEntity:
        items = entries.items() if isinstance(entries, Mapping) else entries
        return cls(tuple(sorted(items)))

    def __str__(self) -> str:
        return ",".join(f"{t}={'<default>' if n is None else n}" for t, n in self.entries)


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """A SCRAM user under one mechanism (Kafka's ``ScramCredentialData``).
    The salt and keys are kept for the shell; :meth:`to_json` omits them."""

    user: str
    mechanism: int
    iterations: int
    salt: bytes = field(default=b"", repr=False)
    stored_key: bytes = field(default=b"", repr=False)
    server_key: bytes = field(default=b"", repr=False)

    def to_json(self) -> dict[str, Any]:
        return {"user": self.user, "mechanism": ScramMechanism.name_of(self.mechanism), "iterations": self.iterations}


@dataclass(frozen=True, slots=True)
class StandardAcl:
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int

    def to_json(self) -> dict[str, Any]:
        return {"resourceType": self.resource_type, "resourceName": self.resource_name,
                "patternType": self.pattern_type, "principal": self.principal, "host": self.host,
                "operation": self.operation, "permissionType": self.permission_type}


@dataclass(frozen=True, slots=True)
class ProducerIdsImage:
    """The start of the next producer id block (Kafka's ``ProducerIdsImage``);
    -1 when none was allocated. Only this survives a snapshot: Kafka's
    snapshot writes the block's broker id and epoch as -1."""

    next_producer_id: int = -1

    def to_json(self) -> dict[str, Any]:
        return {"nextProducerId": self.next_producer_id}


@dataclass(frozen=True, slots=True)
class DelegationToken:
    """A delegation token's public information (the record carries no HMAC)."""

    token_id: str
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_timestamp_ms: int
    max_timestamp_ms: int
    expiration_timestamp_ms: int

    def to_json(self) -> dict[str, Any]:
        return {"tokenId": self.token_id, "owner": self.owner, "requester": self.requester,
                "renewers": list(self.renewers), "issueTimestamp": self.issue_timestamp_ms,
                "maxTimestamp": self.max_timestamp_ms, "expirationTimestamp": self.expiration_timestamp_ms}


@dataclass(frozen=True, slots=True)
class MetadataImage:
    """The whole image. Mappings are read-only; two images with the same
    content compare equal whatever order they were built in."""

    provenance: Provenance = Provenance()
    features: FeaturesImage = FeaturesImage()
    brokers: Mapping[int, BrokerRegistration] = field(default_factory=lambda: EMPTY_MAPPING)
    controllers: Mapping[int, ControllerRegistration] = field(default_factory=lambda: EMPTY_MAPPING)
    topics: Mapping[uuid.UUID, TopicImage] = field(default_factory=lambda: EMPTY_MAPPING)
    topic_ids_by_name: Mapping[str, uuid.UUID] = field(default_factory=lambda: EMPTY_MAPPING)
    configs: Mapping[ConfigResource, Mapping[str, str]] = field(default_factory=lambda: EMPTY_MAPPING)
    client_quotas: Mapping[ClientQuotaEntity, Mapping[str, float]] = field(default_factory=lambda: EMPTY_MAPPING)
    scram: Mapping[int, Mapping[str, ScramCredential]] = field(default_factory=lambda: EMPTY_MAPPING)
    acls: Mapping[uuid.UUID, StandardAcl] = field(default_factory=lambda: EMPTY_MAPPING)
    producer_ids: ProducerIdsImage = ProducerIdsImage()
    delegation_tokens: Mapping[str, DelegationToken] = field(default_factory=lambda: EMPTY_MAPPING)

    @property
    def offset(self) -> int:
        """The last committed offset the image contains (-1 when empty)."""
        return self.provenance.offset

    def is_empty(self) -> bool:
        return self.provenance.offset < 0 and not self.topics and not self.brokers and self.features == FeaturesImage()

    def topic(self, name: str) -> TopicImage | None:
        topic_id = self.topic_ids_by_name.get(name)
        return None if topic_id is None else self.topics.get(topic_id)

    def content_equals(self, other: MetadataImage) -> bool:
        """Same state, whatever the provenance."""
        return self.to_json(include_provenance=False) == other.to_json(include_provenance=False)

    def to_json(self, *, include_provenance: bool = True) -> dict[str, Any]:
        """A plain-JSON form of everything in the image, keys sorted so two
        equal images print identically."""
        out: dict[str, Any] = {}
        if include_provenance:
            out["provenance"] = self.provenance.to_json()
        out["features"] = self.features.to_json()
        out["cluster"] = {
            "brokers": {str(i): b.to_json() for i, b in sorted(self.brokers.items())},
            "controllers": {str(i): c.to_json() for i, c in sorted(self.controllers.items())},
        }
        out["topics"] = {t.name: t.to_json() for t in sorted(self.topics.values(), key=lambda t: t.name)}
        out["configs"] = {str(r): dict(sorted(c.items())) for r, c in sorted(self.configs.items())}
        out["clientQuotas"] = {str(e): dict(sorted(q.items()))
                               for e, q in sorted(self.client_quotas.items(), key=lambda kv: str(kv[0]))}
        out["scram"] = {ScramMechanism.name_of(m): {u: c.to_json() for u, c in sorted(users.items())}
                        for m, users in sorted(self.scram.items())}
        out["acls"] = {_uuid(i): a.to_json() for i, a in sorted(self.acls.items(), key=lambda kv: _uuid(kv[0]))}
        out["producerIds"] = self.producer_ids.to_json()
        out["delegationTokens"] = {i: t.to_json() for i, t in sorted(self.delegation_tokens.items())}
        return out
