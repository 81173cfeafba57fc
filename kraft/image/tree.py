"""The metadata image as the file tree of Kafka 4.x's ``kafka-metadata-shell.sh``.

One small class per node, after ``org.apache.kafka.image.node`` and the
shell's ``RootShellNode``/``LocalShellNode``: each knows its child names,
how to find a child by name, and how to print itself (a leaf prints one
line; a directory prints its children, ``MetadataNode.print``)::

    /image/acls/byId/<acl id>                       StandardAcl(...)
    /image/clientQuotas/<entity>/<key>              a Java double
    /image/cluster/brokers/<id>                     BrokerRegistration(...)
    /image/cluster/controllers/<id>                 ControllerRegistration(...)
    /image/configs/<TYPE[:name]>/<key>              the value
    /image/delegationToken/<token id>               DelegationTokenData...
    /image/features/{metadataVersion,zkMigrationState,finalized_<name>}
    /image/producerIds/nextProducerId
    /image/provenance                               offset O, epoch E, time T
    /image/scram/<mechanism>/<user>                 ScramCredentialData(...)
    /image/topics/{byName/<name>,byId/<id>}/{name,id,<partition>}
    /local/{version,commitId}

Nodes are built on demand from an immutable image, so a tree over a large
image costs nothing until it is walked.

Where Kafka 4.0.0 fails on its own nodes, these do the sensible thing:
``zkMigrationState`` is a leaf holding the state's name (4.0.0 lists it but
cannot open it); a client-quota entity with a default part names it
``<default>`` (4.0.0 names a default entity with the empty string, which no
path can reach, and collapses ``clientId(<default>)_user(bob)`` into
``user(bob)``).
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass
from collections.abc import Callable, Iterable, Mapping
from typing import Generic, TypeVar

from kraft.image.model import (
    ClientQuotaEntity,
    ConfigResource,
    ConfigResourceType,
    MetadataImage,
    ScramCredential,
    TopicImage,
)
from kraft.image.printing import (
    NodePrinter,
    acl_text,
    broker_text,
    controller_text,
    delegation_token_text,
    java_double,
    java_sorted,
    metadata_version_text,
    partition_text,
    provenance_text,
    scram_text,
    zk_migration_state_name,
)
from kraft.messages.json_form import uuid_from_kafka, uuid_to_kafka

V = TypeVar("V")

__all__ = ["MetadataNode", "LeafNode", "ShellForm", "RootShellNode", "LocalShellNode", "MetadataImageNode", "build_tree",
           "quota_entity_name", "DEFAULT_ENTITY_NAME"]


class MetadataNode:
    """``MetadataNode``: a directory unless a subclass says otherwise."""

    is_directory = True

    def child_names(self) -> Iterable[str]:
        return ()

    def child(self, name: str) -> MetadataNode | None:
        return None

    def print(self, printer: NodePrinter) -> None:
        for name in java_sorted(self.child_names()):
            printer.enter_node(name)
            child = self.child(name)
            if child is not None:
                child.print(printer)
            printer.leave_node()


class LeafNode(MetadataNode):
    """``MetadataLeafNode``: a file holding one string."""

    is_directory = False
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def print(self, printer: NodePrinter) -> None:
        printer.output(self.text)


class _MapNode(MetadataNode):
    """A directory whose children come from a name -> factory table."""

    def __init__(self, children: Mapping[str, Callable[[], MetadataNode | None]]) -> None:
        self._children = children

    def child_names(self) -> Iterable[str]:
        return self._children.keys()

    def child(self, name: str) -> MetadataNode | None:
        make = self._children.get(name)
        return None if make is None else make()


def _int_key(name: str) -> int | None:
    """``Integer.valueOf``-ish: only a plain decimal names an id."""
    try:
        return int(name) if name.lstrip("-").isdigit() else None
    except ValueError:
        return None


def _uuid_key(name: str) -> uuid.UUID | None:
    try:
        return uuid_from_kafka(name)
    except Exception:  # Uuid.fromString fails on anything else: no such child
        return None


# ----------------------------------------------------------------- /image/*


class ProvenanceNode(MetadataNode):
    is_directory = False

    def __init__(self, image: MetadataImage) -> None:
        self._image = image

    def print(self, printer: NodePrinter) -> None:
        printer.output(provenance_text(self._image.provenance))


@dataclass(frozen=True)
class ShellForm:
    """Where the metadata shells of Kafka releases print differently."""

    #: ``FeaturesImageNode`` lists ``zkMigrationState`` (4.0, 4.1; gone in 4.2)
    zk_migration_state: bool = True
    #: ``BrokerRegistration.toString`` ends with ``cordonedDirectories=...`` (KIP-1066, 4.3)
    cordoned_directories: bool = False
    #: ``StandardAcl`` is a Java record, ``StandardAcl[...]`` (4.2 on; ``StandardAcl(...)`` before)
    acl_record: bool = False


class FeaturesImageNode(MetadataNode):
    """``FeaturesImageNode``; ``zkMigrationState`` is a real leaf here --
    where the release has it at all (``zk_migration_state``: Kafka 4.2
    dropped it from the node, as ``find`` on it aborted 4.0 and 4.1)."""

    def __init__(self, image: MetadataImage, zk_migration_state: bool = True) -> None:
        self._features = image.features
        self._zk = zk_migration_state

    def child_names(self) -> Iterable[str]:
        zk = ["zkMigrationState"] if self._zk else []
        return ["metadataVersion", *zk, *(f"finalized_{n}" for n in self._features.finalized)]

    def child(self, name: str) -> MetadataNode | None:
        if name == "metadataVersion":
            return LeafNode(metadata_version_text(self._features.metadata_version))
        if name == "zkMigrationState" and self._zk:
            return LeafNode(zk_migration_state_name(self._features.zk_migration_state))
        if name.startswith("finalized_"):
            # As Kafka: any finalized_<x> opens, 0 when x is not finalized.
            return LeafNode(str(self._features.finalized.get(name[len("finalized_"):], 0)))
        return None


class ClusterImageNode(_MapNode):
    def __init__(self, image: MetadataImage, form: ShellForm = ShellForm()) -> None:
        super().__init__({
            "brokers": lambda: _IdMapNode(image.brokers, functools.partial(
                broker_text, cordoned_directories=form.cordoned_directories)),
            "controllers": lambda: _IdMapNode(image.controllers, controller_text),
        })


class _IdMapNode(MetadataNode, Generic[V]):
    """``ClusterImageBrokersNode``/``ClusterImageControllersNode``."""

    def __init__(self, entries: Mapping[int, V], text: Callable[[V], str]) -> None:
        self._entries = entries
        self._text = text

    def child_names(self) -> Iterable[str]:
        return [str(i) for i in self._entries]

    def child(self, name: str) -> MetadataNode | None:
        key = _int_key(name)
        value = None if key is None else self._entries.get(key)
        return None if value is None else LeafNode(self._text(value))


class TopicImageNode(MetadataNode):
    """``TopicImageNode``: ``name``, ``id`` and one leaf per partition."""

    def __init__(self, topic: TopicImage) -> None:
        self._topic = topic

    def child_names(self) -> Iterable[str]:
        return ["name", "id", *(str(p) for p in self._topic.partitions)]

    def child(self, name: str) -> MetadataNode | None:
        if name == "name":
            return LeafNode(self._topic.name)
        if name == "id":
            return LeafNode(uuid_to_kafka(self._topic.id))
        key = _int_key(name)
        part = None if key is None else self._topic.partitions.get(key)
        return None if part is None else LeafNode(partition_text(part))


class TopicsByNameNode(MetadataNode):
    def __init__(self, image: MetadataImage) -> None:
        self._image = image

    def child_names(self) -> Iterable[str]:
        return self._image.topic_ids_by_name.keys()

    def child(self, name: str) -> MetadataNode | None:
        topic = self._image.topic(name)
        return None if topic is None else TopicImageNode(topic)


class TopicsByIdNode(MetadataNode):
    def __init__(self, image: MetadataImage) -> None:
        self._image = image

    def child_names(self) -> Iterable[str]:
        return [uuid_to_kafka(i) for i in self._image.topics]

    def child(self, name: str) -> MetadataNode | None:
        key = _uuid_key(name)
        topic = None if key is None else self._image.topics.get(key)
        return None if topic is None else TopicImageNode(topic)


class TopicsImageNode(_MapNode):
    def __init__(self, image: MetadataImage) -> None:
        super().__init__({"byName": lambda: TopicsByNameNode(image), "byId": lambda: TopicsByIdNode(image)})


def config_resource_name(resource: ConfigResource) -> str:
    """``ConfigurationsImageNode``: ``TOPIC:foo``; a default resource is its type alone."""
    type_name = ConfigResourceType.name_of(resource.type)
    return type_name if not resource.name else f"{type_name}:{resource.name}"


class _StringMapNode(MetadataNode):
    """A directory of string leaves (``ConfigurationImageNode``,
    ``ClientQuotaImageNode``)."""

    def __init__(self, values: Mapping[str, object], text: Callable[[object], str] = str) -> None:
        self._values = values
        self._text = text

    def child_names(self) -> Iterable[str]:
        return self._values.keys()

    def child(self, name: str) -> MetadataNode | None:
        value = self._values.get(name)
        return None if value is None else LeafNode(self._text(value))


class ConfigurationsImageNode(MetadataNode):
    def __init__(self, image: MetadataImage) -> None:
        self._configs = image.configs
        self._names: dict[str, ConfigResource] | None = None

    def _by_name(self) -> dict[str, ConfigResource]:
        if self._names is None:
            self._names = {config_resource_name(r): r for r in self._configs}
        return self._names

    def child_names(self) -> Iterable[str]:
        return self._by_name().keys()

    def child(self, name: str) -> MetadataNode | None:
        resource = self._by_name().get(name)
        return None if resource is None else _StringMapNode(self._configs[resource])


#: How a default part of a client-quota entity is named (Kafka 4.0.0 leaves it empty).
DEFAULT_ENTITY_NAME = "<default>"
_QUOTA_TYPES = (("client-id", "clientId"), ("ip", "ip"), ("user", "user"))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def quota_entity_name(entity: ClientQuotaEntity) -> str:
    """``ClientQuotasImageNode.clientQuotaEntityToString``: ``clientId(a)_user(b)``,
    with ``\\``, ``(`` and ``)`` escaped; a default part is ``<default>``."""
    entries = dict(entity.entries)
    parts = []
    for entity_type, label in _QUOTA_TYPES:
        if entity_type in entries:
            name = entries[entity_type]
            parts.append(f"{label}({DEFAULT_ENTITY_NAME if name is None else _escape(name)})")
    return "_".join(parts)


class ClientQuotasImageNode(MetadataNode):
    def __init__(self, image: MetadataImage) -> None:
        self._quotas = image.client_quotas
        self._names: dict[str, ClientQuotaEntity] | None = None

    def _by_name(self) -> dict[str, ClientQuotaEntity]:
        if self._names is None:
            self._names = {quota_entity_name(e): e for e in self._quotas}
        return self._names

    def child_names(self) -> Iterable[str]:
        return self._by_name().keys()

    def child(self, name: str) -> MetadataNode | None:
        entity = self._by_name().get(name)
        return None if entity is None else _StringMapNode(self._quotas[entity], java_double)  # type: ignore[arg-type]


class ProducerIdsImageNode(_MapNode):
    def __init__(self, image: MetadataImage) -> None:
        super().__init__({"nextProducerId": lambda: LeafNode(str(image.producer_ids.next_producer_id))})


class AclsByIdNode(MetadataNode):
    def __init__(self, image: MetadataImage, record: bool = False) -> None:
        self._acls = image.acls
        self._record = record

    def child_names(self) -> Iterable[str]:
        return [uuid_to_kafka(i) for i in self._acls]

    def child(self, name: str) -> MetadataNode | None:
        key = _uuid_key(name)
        acl = None if key is None else self._acls.get(key)
        return None if acl is None else LeafNode(acl_text(acl, self._record))


class AclsImageNode(_MapNode):
    def __init__(self, image: MetadataImage, record: bool = False) -> None:
        super().__init__({"byId": lambda: AclsByIdNode(image, record)})


_SCRAM_MECHANISMS = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}


class ScramImageNode(MetadataNode):
    """``ScramImageNode``: every mechanism Kafka knows, empty or not."""

    def __init__(self, image: MetadataImage) -> None:
        self._scram = image.scram

    def child_names(self) -> Iterable[str]:
        return _SCRAM_MECHANISMS.keys()

    def child(self, name: str) -> MetadataNode | None:
        mechanism = _SCRAM_MECHANISMS.get(name)
        if mechanism is None:
            return None
        users: Mapping[str, ScramCredential] = self._scram.get(mechanism, {})
        return _StringMapNode(users, scram_text)  # type: ignore[arg-type]


class DelegationTokenImageNode(MetadataNode):
    def __init__(self, image: MetadataImage) -> None:
        self._tokens = image.delegation_tokens

    def child_names(self) -> Iterable[str]:
        return self._tokens.keys()

    def child(self, name: str) -> MetadataNode | None:
        token = self._tokens.get(name)
        return None if token is None else LeafNode(delegation_token_text(token))


class MetadataImageNode(_MapNode):
    """``MetadataImageNode``: ``/image``."""

    def __init__(self, image: MetadataImage, form: ShellForm = ShellForm()) -> None:
        self.image = image
        super().__init__({
            "provenance": lambda: ProvenanceNode(image),
            "features": lambda: FeaturesImageNode(image, form.zk_migration_state),
            "cluster": lambda: ClusterImageNode(image, form),
            "topics": lambda: TopicsImageNode(image),
            "configs": lambda: ConfigurationsImageNode(image),
            "clientQuotas": lambda: ClientQuotasImageNode(image),
            "producerIds": lambda: ProducerIdsImageNode(image),
            "acls": lambda: AclsImageNode(image, form.acl_record),
            "scram": lambda: ScramImageNode(image),
            "delegationToken": lambda: DelegationTokenImageNode(image),
        })


# ----------------------------------------------------------------- the shell's own nodes


class LocalShellNode(_MapNode):
    """``LocalShellNode``: ``/local/version`` and ``/local/commitId``."""

    def __init__(self, version: str, commit_id: str) -> None:
        super().__init__({"version": lambda: LeafNode(version), "commitId": lambda: LeafNode(commit_id)})


class RootShellNode(_MapNode):
    """``RootShellNode``: ``/image`` and ``/local``."""

    def __init__(self, image: MetadataImage, version: str, commit_id: str, form: ShellForm = ShellForm()) -> None:
        self.image = image
        super().__init__({"local": lambda: LocalShellNode(version, commit_id),
                          "image": lambda: MetadataImageNode(image, form)})


def build_tree(image: MetadataImage, *, version: str = "unknown", commit_id: str = "unknown",
               form: ShellForm = ShellForm()) -> RootShellNode:
    """The shell's root for ``image``, as the release ``form`` describes prints it."""
    return RootShellNode(image, version, commit_id, form)
