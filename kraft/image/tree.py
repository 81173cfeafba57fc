"""The metadata image as the file tree ``kafka-metadata-shell.sh`` shows.

The layout is the one ``kafka-metadata-shell.sh`` showed for a metadata log
(Kafka's ``MetadataNodeManager``)::

    /brokers/<id>/registration, isFenced, inControlledShutdown
    /controllers/<id>/registration
    /topics/<name>/id, name, <partition>/data     (PartitionRecord JSON)
    /topicIds/<id>/...                            (the same topic directories)
    /configs/<type>/<resource or <default>>/<key>
    /client-quotas/<entity type>/<name or <default>>/.../<key>
    /features/<name>                              (FeatureLevelRecord JSON)
    /acl/id/<id>                                  (AccessControlEntryRecord JSON)
    /producerIds/nextBlockStartId
    /scram/<mechanism>/<user>                     (name, mechanism, iterations: no secrets)
    /delegationTokens/<id>                        (DelegationTokenRecord JSON)
    /metadataQuorum/offset, epoch, timestamp[, leader]
    /local/version, commitId

File contents that are records are printed as Jackson's pretty printer
prints Kafka's ``*JsonConverter`` output (``"key" : value``, arrays on one
line). The commands over the tree are in :mod:`kraft.image.session`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from kraft.image.model import (
    ClientQuotaEntity,
    ConfigResourceType,
    MetadataImage,
    PartitionRegistration,
    ScramMechanism,
    TopicImage,
)
from kraft.messages.json_form import to_json, uuid_to_kafka

__all__ = ["Dir", "File", "Node", "build_tree", "jackson_pretty", "java_double"]


# ----------------------------------------------------------------- nodes


@dataclass(slots=True)
class File:
    """A leaf; ``text`` may be a callable, computed when first read."""

    text: str | Callable[[], str]

    is_directory = False

    def contents(self) -> str:
        if callable(self.text):
            self.text = self.text()
        return self.text


@dataclass(slots=True)
class Dir:
    entries: dict[str, Dir | File] = field(default_factory=dict)

    is_directory = True

    def child(self, name: str) -> Dir | File | None:
        return self.entries.get(name)

    def mkdirs(self, *names: str) -> Dir:
        node = self
        for name in names:
            nxt = node.entries.get(name)
            if not isinstance(nxt, Dir):
                nxt = node.entries[name] = Dir()
            node = nxt
        return node


Node = Dir | File


# ----------------------------------------------------------------- text forms


def java_double(x: float) -> str:
    """Java's ``Double.toString``: ``1024.0``, ``1.0E7``, ``1.0E-4`` (shortest
    digits that read back the same double, as Python's ``repr``)."""
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign, digits, exponent = Decimal(repr(float(x))).normalize().as_tuple()
    text = "".join(map(str, digits))
    minus = "-" if sign else ""
    if 1e-3 <= abs(x) < 1e7:
        plain = format(Decimal(repr(float(x))).normalize(), "f").lstrip("-")
        return minus + (plain if "." in plain else plain + ".0")
    sci_exponent = len(text) - 1 + int(exponent)
    return f"{minus}{text[0]}.{text[1:] or '0'}E{sci_exponent}"


def jackson_pretty(value: Any, level: int = 0) -> str:
    """Jackson's ``toPrettyString`` (``DefaultPrettyPrinter``)."""
    indent = "  "
    if isinstance(value, dict):
        if not value:
            return "{ }"
        items = [f"\n{indent * (level + 1)}{_json_str(k)} : {jackson_pretty(v, level + 1)}" for k, v in value.items()]
        return "{" + ",".join(items) + f"\n{indent * level}}}"
    if isinstance(value, list):
        if not value:
            return "[ ]"
        return "[ " + ", ".join(jackson_pretty(v, level) for v in value) + " ]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, str):
        return _json_str(value)
    return str(value)


def _json_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def _record_json(cls_module: str, cls_name: str, **fields: Any) -> str:
    import importlib

    cls = getattr(importlib.import_module(f"kraft.messages.generated.{cls_module}"), cls_name)
    message = cls(**fields)
    return jackson_pretty(to_json(message, cls.HIGHEST_VERSION))


# ----------------------------------------------------------------- the tree


def _partition_data(topic: TopicImage, partition_id: int, p: PartitionRegistration) -> Callable[[], str]:
    def render() -> str:
        fields: dict[str, Any] = dict(
            partition_id=partition_id, topic_id=topic.id, replicas=list(p.replicas), isr=list(p.isr),
            removing_replicas=list(p.removing_replicas), adding_replicas=list(p.adding_replicas),
            leader=p.leader, leader_recovery_state=p.leader_recovery_state, leader_epoch=p.leader_epoch,
            partition_epoch=p.partition_epoch, directories=list(p.directories))
        # As PartitionRegistration.toRecord: ELR fields only when non-empty.
        if p.elr:
            fields["eligible_leader_replicas"] = list(p.elr)
        if p.last_known_elr:
            fields["last_known_elr"] = list(p.last_known_elr)
        return _record_json("partition_record", "PartitionRecord", **fields)
    return render


def _broker_registration(b: Any) -> Callable[[], str]:
    def render() -> str:
        from kraft.messages.generated import register_broker_record as rbr

        return _record_json(
            "register_broker_record", "RegisterBrokerRecord",
            broker_id=b.id, is_migrating_zk_broker=b.is_migrating_zk_broker, incarnation_id=b.incarnation_id,
            broker_epoch=b.epoch,
            end_points=[rbr.BrokerEndpoint(name=e.name, host=e.host, port=e.port, security_protocol=e.security_protocol)
                        for e in b.listeners],
            features=[rbr.BrokerFeature(name=f.name, min_supported_version=f.min_version,
                                        max_supported_version=f.max_version) for f in b.supported_features],
            rack=b.rack, fenced=b.fenced, in_controlled_shutdown=b.in_controlled_shutdown,
            log_dirs=list(b.directories),
            cordoned_log_dirs=None if b.cordoned_directories is None else list(b.cordoned_directories))
    return render


def _controller_registration(c: Any) -> Callable[[], str]:
    def render() -> str:
        from kraft.messages.generated import register_controller_record as rcr

        return _record_json(
            "register_controller_record", "RegisterControllerRecord",
            controller_id=c.id, incarnation_id=c.incarnation_id, zk_migration_ready=c.zk_migration_ready,
            end_points=[rcr.ControllerEndpoint(name=e.name, host=e.host, port=e.port,
                                               security_protocol=e.security_protocol) for e in c.listeners],
            features=[rcr.ControllerFeature(name=f.name, min_supported_version=f.min_version,
                                            max_supported_version=f.max_version) for f in c.supported_features])
    return render


def _quota_dirs(entity: ClientQuotaEntity) -> list[str]:
    """``MetadataNodeManager.clientQuotaRecordDirectories``."""
    out = ["client-quotas"]
    for entity_type, name in entity.entries:
        out += [entity_type, "<default>" if name is None else name]
    return out


def build_tree(image: MetadataImage, *, leader: str | None = None, version: str = "unknown",
               commit_id: str = "unknown") -> Dir:
    """The shell's root directory for ``image``. ``leader`` (Kafka's
    ``LeaderAndEpoch`` text) is shown under /metadataQuorum when known."""
    root = Dir()
    local = root.mkdirs("local")
    local.entries["version"] = File(version)
    local.entries["commitId"] = File(commit_id)

    quorum = root.mkdirs("metadataQuorum")
    quorum.entries["offset"] = File(str(image.provenance.offset))
    quorum.entries["epoch"] = File(str(image.provenance.epoch))
    quorum.entries["timestamp"] = File(str(image.provenance.timestamp_ms))
    if leader is not None:
        quorum.entries["leader"] = File(leader)

    if image.brokers:
        brokers = root.mkdirs("brokers")
        for broker_id, b in sorted(image.brokers.items()):
            d = brokers.mkdirs(str(broker_id))
            d.entries["registration"] = File(_broker_registration(b))
            d.entries["isFenced"] = File("true" if b.fenced else "false")
            d.entries["inControlledShutdown"] = File("true" if b.in_controlled_shutdown else "false")
    if image.controllers:
        controllers = root.mkdirs("controllers")
        for controller_id, c in sorted(image.controllers.items()):
            controllers.mkdirs(str(controller_id)).entries["registration"] = File(_controller_registration(c))

    if image.topics:
        topics, topic_ids = root.mkdirs("topics"), root.mkdirs("topicIds")
        for topic in image.topics.values():
            d = Dir()
            d.entries["id"] = File(uuid_to_kafka(topic.id))
            d.entries["name"] = File(topic.name)
            for pid, part in sorted(topic.partitions.items()):
                d.mkdirs(str(pid)).entries["data"] = File(_partition_data(topic, pid, part))
            # The same directory under both names, as Kafka's addChild did.
            if image.topic_ids_by_name.get(topic.name) == topic.id:
                topics.entries[topic.name] = d
            topic_ids.entries[uuid_to_kafka(topic.id)] = d

    if image.configs:
        configs = root.mkdirs("configs")
        for resource, values in sorted(image.configs.items()):
            type_dir = ConfigResourceType.name_of(resource.type).lower()
            d = configs.mkdirs(type_dir, resource.name or "<default>")
            for key, value in sorted(values.items()):
                d.entries[key] = File(value)

    for entity, quotas in image.client_quotas.items():
        d = root.mkdirs(*_quota_dirs(entity))
        for key, quota in sorted(quotas.items()):
            d.entries[key] = File(java_double(quota))

    if image.producer_ids.next_producer_id >= 0:
        pids = root.mkdirs("producerIds")
        pids.entries["nextBlockStartId"] = File(str(image.producer_ids.next_producer_id))

    if image.acls:
        acls = root.mkdirs("acl", "id")
        for acl_id, acl in image.acls.items():
            acls.entries[uuid_to_kafka(acl_id)] = File(_acl_json(acl_id, acl))

    levels = image.features.levels()
    if levels:
        features = root.mkdirs("features")
        for name, level in levels.items():
            features.entries[name] = File(_record_json("feature_level_record", "FeatureLevelRecord",
                                                       name=name, feature_level=level))

    if image.scram:
        scram = root.mkdirs("scram")
        for mechanism, users in sorted(image.scram.items()):
            d = scram.mkdirs(ScramMechanism.name_of(mechanism))
            for user, cred in sorted(users.items()):
                d.entries[user] = File(jackson_pretty({"name": user, "mechanism": ScramMechanism.name_of(mechanism),
                                                       "iterations": cred.iterations}))

    if image.delegation_tokens:
        tokens = root.mkdirs("delegationTokens")
        for token_id, t in sorted(image.delegation_tokens.items()):
            tokens.entries[token_id] = File(_token_json(t))
    return root


def _token_json(t: Any) -> Callable[[], str]:
    return lambda: _record_json(
        "delegation_token_record", "DelegationTokenRecord", owner=t.owner, requester=t.requester,
        renewers=list(t.renewers), issue_timestamp=t.issue_timestamp_ms, max_timestamp=t.max_timestamp_ms,
        expiration_timestamp=t.expiration_timestamp_ms, token_id=t.token_id)


def _acl_json(acl_id: Any, acl: Any) -> Callable[[], str]:
    return lambda: _record_json(
        "access_control_entry_record", "AccessControlEntryRecord", id=acl_id, resource_type=acl.resource_type,
        resource_name=acl.resource_name, pattern_type=acl.pattern_type, principal=acl.principal, host=acl.host,
        operation=acl.operation, permission_type=acl.permission_type)
