"""How Kafka 4.x prints image values: the ``toString`` of its image classes
and the printers of ``org.apache.kafka.image.node.printer``.

Every leaf of the metadata shell's tree is one of these strings, so they are
reproduced exactly: ``BrokerRegistration.toString``,
``ControllerRegistration.toString``, ``PartitionRegistration.toString``,
``StandardAcl.toString``, ``ScramCredentialDataNode.print``,
``DelegationTokenDataNode.print``, ``ProvenanceNode.print``, Java's
``Double.toString`` for quota values, ``Optional.toString`` for the
metadata version, and ``String.compareTo`` for the order of names.

Printers: :class:`ShellNodePrinter` (``cat``/``tree``: ``name:`` lines and
two spaces per level) and :class:`NodeStringifier` (one line,
``name(child, ...)``).
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Protocol

from kraft.image.model import (
    BrokerRegistration,
    ControllerRegistration,
    DelegationToken,
    Listener,
    PartitionRegistration,
    Provenance,
    ScramCredential,
    StandardAcl,
    VersionRange,
)
from kraft.messages.json_form import uuid_to_kafka

__all__ = [
    "java_sorted", "java_double", "metadata_version_text", "zk_migration_state_name", "provenance_text",
    "broker_text", "controller_text", "partition_text", "acl_text", "scram_text", "delegation_token_text",
    "NodePrinter", "ShellNodePrinter", "NodeStringifier",
]


def _utf16(s: str) -> bytes:
    return s.encode("utf-16-be", "surrogatepass")


def java_sorted(names: Iterable[str]) -> list[str]:
    """Sorted as Java's ``String::compareTo`` sorts (UTF-16 code units; the
    same as Python's order except around characters beyond U+FFFF)."""
    items = list(names)
    if all(s.isascii() for s in items):
        return sorted(items)
    return sorted(items, key=_utf16)


def java_double(x: float) -> str:
    """Java's ``Double.toString``: ``1024.0``, ``1.0E7``, ``1.0E-4``."""
    if x != x:
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    # repr gives the shortest digits that read back the same double, as Java does.
    sign, digits, exponent = Decimal(repr(float(x))).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    minus = "-" if sign else ""
    if 1e-3 <= abs(x) < 1e7:
        plain = format(Decimal(repr(abs(float(x)))).normalize(), "f")
        return minus + (plain if "." in plain else plain + ".0")
    return f"{minus}{text[0]}.{text[1:] or '0'}E{len(text) - 1 + exponent}"


# MetadataVersion's release names by feature level (MetadataVersion.java,
# IBP_3_3_IV3(7) .. IBP_4_2_IV1(29)); levels below 7 only appear in ZK-era
# files and are named the same way.
_METADATA_VERSIONS: dict[int, str] = {
    1: "3.0-IV1", 2: "3.1-IV0", 3: "3.2-IV0", 4: "3.3-IV0", 5: "3.3-IV1", 6: "3.3-IV2", 7: "3.3-IV3",
    8: "3.4-IV0", 9: "3.5-IV0", 10: "3.5-IV1", 11: "3.5-IV2", 12: "3.6-IV0", 13: "3.6-IV1", 14: "3.6-IV2",
    15: "3.7-IV0", 16: "3.7-IV1", 17: "3.7-IV2", 18: "3.7-IV3", 19: "3.7-IV4", 20: "3.8-IV0", 21: "3.9-IV0",
    22: "4.0-IV0", 23: "4.0-IV1", 24: "4.0-IV2", 25: "4.0-IV3", 26: "4.1-IV0", 27: "4.1-IV1", 28: "4.2-IV0",
    29: "4.2-IV1", 30: "4.3-IV0", 31: "4.4-IV0", 32: "4.4-IV1", 33: "4.4-IV2", 34: "4.5-IV0",
}


def metadata_version_text(level: int | None) -> str:
    """``FeaturesImage.metadataVersion().toString()``: ``Optional[3.9-IV0]``
    or ``Optional.empty``. A level newer than ours is named by its number."""
    if level is None:
        return "Optional.empty"
    return f"Optional[{_METADATA_VERSIONS.get(level, f'feature level {level}')}]"


_ZK_MIGRATION_STATES = {0: "NONE", 1: "MIGRATION", 2: "PRE_MIGRATION", 3: "POST_MIGRATION", 4: "ZK"}


def zk_migration_state_name(state: int) -> str:
    """``ZkMigrationState`` constant names (ZkMigrationState.java)."""
    return _ZK_MIGRATION_STATES.get(state, f"UNKNOWN({state})")


def _iso_zoned_utc(ms: int) -> str:
    """``DateTimeFormatter.ISO_ZONED_DATE_TIME`` of an instant in zone UTC:
    ``2025-01-22T15:23:35.21Z[UTC]`` (fraction without trailing zeros)."""
    try:
        t = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(milliseconds=ms)
    except OverflowError:
        return f"{ms}ms"
    text = t.strftime("%Y-%m-%dT%H:%M:%S")
    fraction = f"{t.microsecond // 1000:03d}".rstrip("0")
    return text + (f".{fraction}" if fraction else "") + "Z[UTC]"


def provenance_text(p: Provenance) -> str:
    """``ProvenanceNode.print``."""
    return f"offset {p.offset}, epoch {p.epoch}, time {_iso_zoned_utc(p.timestamp_ms)}"


_SECURITY_PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}


def _endpoint(e: Listener) -> str:
    """``org.apache.kafka.common.Endpoint.toString``."""
    protocol = _SECURITY_PROTOCOLS.get(e.security_protocol, f"UNKNOWN({e.security_protocol})")
    return f"Endpoint(listenerName='{e.name}', securityProtocol={protocol}, host='{e.host}', port={e.port})"


def _listeners(listeners: Iterable[Listener]) -> str:
    by_name = {e.name: e for e in listeners}  # a map keyed by listener name, as Kafka's
    return ", ".join(_endpoint(by_name[n]) for n in java_sorted(by_name))


def _version_range(v: VersionRange) -> str:
    """``VersionRange.toString``."""
    if v.min_version == v.max_version:
        return str(v.min_version)
    if v.max_version == 0x7FFF:
        return f"{v.min_version}+"
    return f"{v.min_version}-{v.max_version}"


def _features(features: Iterable[VersionRange]) -> str:
    by_name = {f.name: f for f in features}
    return ", ".join(f"{n}: {_version_range(by_name[n])}" for n in java_sorted(by_name))


def _optional(value: str | None) -> str:
    return "Optional.empty" if value is None else f"Optional[{value}]"


def _uuids(ids: Iterable[object]) -> str:
    return "[" + ", ".join(uuid_to_kafka(u) for u in ids) + "]"  # type: ignore[arg-type]


def _signed64(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _uuid_order(u: object) -> tuple[int, int]:
    """``Uuid.compareTo``: the most, then the least significant 64 bits, signed."""
    value = u.int  # type: ignore[attr-defined]
    return _signed64(value >> 64), _signed64(value & ((1 << 64) - 1))


def _ints(values: Iterable[int]) -> str:
    return "[" + ", ".join(map(str, values)) + "]"


def _bool(b: bool) -> str:
    return "true" if b else "false"


def broker_text(b: BrokerRegistration, cordoned_directories: bool = False) -> str:
    """``BrokerRegistration.toString``: ``cordonedDirectories`` from Kafka 4.3 on (KIP-1066; ``null`` until
    the broker reports them), none before."""
    cordoned = ""
    if cordoned_directories:
        cordoned = ", cordonedDirectories=" + ("null" if b.cordoned_directories is None
                                               else _uuids(b.cordoned_directories))
    return (f"BrokerRegistration(id={b.id}, epoch={b.epoch}, incarnationId={uuid_to_kafka(b.incarnation_id)}, "
            f"listeners=[{_listeners(b.listeners)}], supportedFeatures={{{_features(b.supported_features)}}}, "
            f"rack={_optional(b.rack)}, fenced={_bool(b.fenced)}, "
            f"inControlledShutdown={_bool(b.in_controlled_shutdown)}, "
            f"isMigratingZkBroker={_bool(b.is_migrating_zk_broker)}, "
            # The constructor sorts the directories (Uuid::compareTo).
            f"directories={_uuids(sorted(b.directories, key=_uuid_order))}{cordoned})")


def controller_text(c: ControllerRegistration) -> str:
    """``ControllerRegistration.toString``."""
    return (f"ControllerRegistration(id={c.id}, incarnationId={uuid_to_kafka(c.incarnation_id)}, "
            f"zkMigrationReady={_bool(c.zk_migration_ready)}, listeners=[{_listeners(c.listeners)}], "
            f"supportedFeatures={{{_features(c.supported_features)}}})")


_LEADER_RECOVERY_STATES = {0: "RECOVERED", 1: "RECOVERING"}


def partition_text(p: PartitionRegistration) -> str:
    """``PartitionRegistration.toString``."""
    recovery = _LEADER_RECOVERY_STATES.get(p.leader_recovery_state, f"UNKNOWN({p.leader_recovery_state})")
    return (f"PartitionRegistration(replicas={_ints(p.replicas)}, directories={_uuids(p.directories)}, "
            f"isr={_ints(p.isr)}, removingReplicas={_ints(p.removing_replicas)}, "
            f"addingReplicas={_ints(p.adding_replicas)}, elr={_ints(p.elr)}, lastKnownElr={_ints(p.last_known_elr)}, "
            f"leader={p.leader}, leaderRecoveryState={recovery}, leaderEpoch={p.leader_epoch}, "
            f"partitionEpoch={p.partition_epoch})")


# org.apache.kafka.common.resource.ResourceType / PatternType, acl.AclOperation / AclPermissionType.
_RESOURCE_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER", 5: "TRANSACTIONAL_ID",
                   6: "DELEGATION_TOKEN", 7: "USER"}
_PATTERN_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}
_OPERATIONS = {0: "UNKNOWN", 1: "ANY", 2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE", 6: "DELETE", 7: "ALTER",
               8: "DESCRIBE", 9: "CLUSTER_ACTION", 10: "DESCRIBE_CONFIGS", 11: "ALTER_CONFIGS",
               12: "IDEMPOTENT_WRITE", 13: "CREATE_TOKENS", 14: "DESCRIBE_TOKENS", 15: "TWO_PHASE_COMMIT"}
_PERMISSIONS = {0: "UNKNOWN", 1: "ANY", 2: "DENY", 3: "ALLOW"}


def _enum(table: Mapping[int, str], code: int) -> str:
    return table.get(code, "UNKNOWN")  # fromCode maps what it does not know to UNKNOWN


def acl_text(a: StandardAcl, record: bool = False) -> str:
    """``StandardAcl.toString``: a Java record's ``StandardAcl[...]`` from
    Kafka 4.2 on (``record``), ``StandardAcl(...)`` before."""
    fields = (f"resourceType={_enum(_RESOURCE_TYPES, a.resource_type)}, resourceName={a.resource_name}, "
              f"patternType={_enum(_PATTERN_TYPES, a.pattern_type)}, principal={a.principal}, host={a.host}, "
              f"operation={_enum(_OPERATIONS, a.operation)}, permissionType={_enum(_PERMISSIONS, a.permission_type)}")
    return f"StandardAcl[{fields}]" if record else f"StandardAcl({fields})"


def scram_text(c: ScramCredential) -> str:
    """``ScramCredentialDataNode.print`` without redaction (as the shell prints it)."""
    return (f"ScramCredentialData(salt={c.salt.hex()}, storedKey={c.stored_key.hex()}, "
            f"serverKey={c.server_key.hex()}, iterations={c.iterations})")


def delegation_token_text(t: DelegationToken) -> str:
    """``DelegationTokenDataNode.print``, unbalanced parentheses included."""
    return (f"DelegationTokenDatatokenId={t.token_id}(owner={t.owner}(tokenRequester={t.requester}"
            f"(renewers={' '.join(t.renewers)}, issueTimestamp={t.issue_timestamp_ms}, "
            f"maxTimestamp={t.max_timestamp_ms}), expiryTimestamp={t.expiration_timestamp_ms}")


# ----------------------------------------------------------------- printers


class NodePrinter(Protocol):
    """``MetadataNodePrinter``: what a node calls to print itself."""

    def enter_node(self, name: str) -> None: ...

    def leave_node(self) -> None: ...

    def output(self, text: str) -> None: ...


class ShellNodePrinter:
    """``ShellNodePrinter``: ``name:`` on entering a node, two spaces of
    indentation per level, each output on its own line (only its first line
    indented, as ``String.format("%s%s%n")`` does)."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._level = 0

    def enter_node(self, name: str) -> None:
        self._parts.append(f"{'  ' * self._level}{name}:\n")
        self._level += 1

    def leave_node(self) -> None:
        self._level -= 1

    def output(self, text: str) -> None:
        self._parts.append(f"{'  ' * self._level}{text}\n")

    def text(self) -> str:
        return "".join(self._parts)


class NodeStringifier:
    """``NodeStringifier``: a node as one line, ``name(child, child)``."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._prefixes = [""]

    def enter_node(self, name: str) -> None:
        self._parts.append(self._prefixes.pop())
        self._prefixes.append(", ")
        self._parts.append(name + "(")
        self._prefixes.append("")

    def leave_node(self) -> None:
        self._parts.append(")")
        self._prefixes.pop()

    def output(self, text: str) -> None:
        self._parts.append(self._prefixes.pop() + text)
        self._prefixes.append(", ")

    def __str__(self) -> str:
        return "".join(self._parts)
