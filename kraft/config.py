"""A node's configuration, read from a Kafka ``server.properties``.

Same keys, same defaults and the same value formats as a Kafka controller, so
an operator's existing file works. Keys Kafka knows but a kraft node does not
use (broker settings, say) and keys nobody knows each get one warning; a bad
value is a :class:`ConfigError` naming the key.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import logging
import re
from collections.abc import Mapping
from typing import Any
from dataclasses import dataclass, field
from pathlib import Path

from kraft.errors import ConfigurationError
from kraft.raft.quorum_config import QuorumConfig
from kraft.raft.witness_policy import WitnessMode
from kraft.records.state_files import PropertiesSyntaxError, parse_java_properties
from kraft.wire.addresses import InvalidAddress, format_address, parse_addresses
from kraft.wire.connection_limits import INT32_MAX, ConnectionLimits
from kraft.wire.security import (
    ClientSecurity,
    ListenerSecurity,
    ScramCredentialStore,
    SecurityConfigError,
    SecurityProtocol,
    listener_security,
    node_client_security,
    parse_super_users,
)

log = logging.getLogger("kraft.config")

__all__ = [
    "ConfigError",
    "ControllerMode",
    "Endpoint",
    "NUMERIC_KEYS",
    "NumberDef",
    "check_number",
    "validate_numbers",
    "NodeConfig",
    "VoterSpec",
    "load_properties",
    "metadata_log_dir",
    "parse_properties",
    "read_properties",
]

DEFAULT_SECURITY_PROTOCOL_MAP = (
    "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
)
SECURITY_PROTOCOLS = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}


class ConfigError(ConfigurationError, ValueError):
    """A configuration value that cannot be used; the message names the key."""


class ControllerMode(enum.Enum):
    """``kraft.controller``: ``auto`` runs Kafka's controller unless the node
    is a witness or its log is not a metadata log; ``true`` / ``false`` force."""

    AUTO = "auto"
    ON = "true"
    OFF = "false"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A listener: ``NAME://host:port``."""

    name: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.name}://{format_address(self.host, self.port)}"


@dataclass(frozen=True, slots=True)
class VoterSpec:
    """One entry of ``controller.quorum.voters``: ``id@host:port``."""

    node_id: int
    host: str
    port: int


# Keys a kraft node reads, with Kafka's defaults (as strings, parsed below).
DEFAULTS: dict[str, str] = {
    "process.roles": "",
    "node.id": "",
    "listeners": "",
    "advertised.listeners": "",
    "controller.listener.names": "",
    "listener.security.protocol.map": DEFAULT_SECURITY_PROTOCOL_MAP,
    "controller.quorum.voters": "",
    "controller.quorum.bootstrap.servers": "",
    "controller.quorum.election.timeout.ms": "1000",
    "controller.quorum.fetch.timeout.ms": "2000",
    "controller.quorum.election.backoff.max.ms": "1000",
    "controller.quorum.append.linger.ms": "25",
    "controller.quorum.request.timeout.ms": "2000",
    "controller.quorum.retry.backoff.ms": "20",
    "controller.quorum.auto.join.enable": "false",
    # KIP-1219 (Kafka 4.3): the most a Fetch / FetchSnapshot asks for.
    "controller.quorum.fetch.max.bytes": "1048576",
    "controller.quorum.fetch.snapshot.max.bytes": "1048576",
    "metadata.log.dir": "",
    "log.dirs": "",
    "log.dir": "/tmp/kafka-logs",
    "metadata.log.segment.bytes": str(1024 * 1024 * 1024),
    "internal.metadata.log.segment.bytes": "",
    "metadata.log.segment.ms": str(7 * 24 * 60 * 60 * 1000),
    "metadata.max.retention.bytes": str(100 * 1024 * 1024),
    "metadata.max.retention.ms": str(7 * 24 * 60 * 60 * 1000),
    "metadata.log.max.record.bytes.between.snapshots": str(20 * 1024 * 1024),
    "metadata.log.max.snapshot.interval.ms": str(60 * 60 * 1000),
    "metadata.log.flush.interval.messages": str(2**63 - 1),
    "socket.request.max.bytes": str(100 * 1024 * 1024),
    # Connection limits and security (wire/connection_limits.py, wire/security.py).
    "max.connections": str(INT32_MAX),
    "max.connections.per.ip": str(INT32_MAX),
    "max.connections.per.ip.overrides": "",
    "connections.max.idle.ms": "600000",
    "sasl.server.max.receive.size": "524288",
    "sasl.enabled.mechanisms": "GSSAPI",
    "sasl.mechanism.controller.protocol": "GSSAPI",
    "super.users": "",
    # kraft's own: no Kafka equivalent.
    "kraft.socket.request.receive.timeout.ms": "30000",
    "kraft.max.in.flight.requests.per.connection": "100",
    "metrics.prometheus.port": "",
    # The witness voter (kraft/raft/witness_policy.py): auto detects a Kafka quorum.
    "kraft.witness": "auto",
    # kraft's own: `kraft node start` with process.roles=controller runs
    # Kafka's controller (kraft/controller/) on a log directory formatted
    # with a metadata.version. auto: unless the node is a witness
    # (kraft.witness=true) or its log holds records that are not Kafka
    # metadata (a replicated log of your own records); true: always, a
    # foreign record an error; false: the raft quorum member only.
    "kraft.controller": "auto",
    # The controller's keys (Kafka's ServerConfigs, ReplicationConfigs,
    # KRaftConfigs, ServerLogConfigs), with Kafka's defaults.
    "num.partitions": "1",
    "default.replication.factor": "1",
    "min.insync.replicas": "1",
    "unclean.leader.election.enable": "false",
    "delete.topic.enable": "true",
    "broker.session.timeout.ms": "9000",
    "broker.heartbeat.interval.ms": "2000",
    "metadata.max.idle.interval.ms": "500",
    "authorizer.class.name": "",
    # Testing knob only: answer ApiVersions with the api ranges of this hex
    # ApiVersions response frame (e.g. a real Kafka 4.0 controller's), so a
    # kraft node can play a Kafka controller in multi-process tests.
    # Empty: every interface (an orchestrator probes from outside the host).
    "metrics.prometheus.host": "",
}

# Kafka settings a kraft node accepts and ignores silently: they matter to
# brokers or the JVM, not to the quorum. Listed by prefix.
_IGNORED_PREFIXES = (
    "num.", "offsets.", "transaction.", "group.", "log.retention", "log.segment", "log.cleaner",
    "socket.send", "socket.receive", "auto.create", "default.replication", "min.insync",
    "inter.broker", "broker.", "zookeeper.", "confluent.", "sasl.", "ssl.", "super.users",
    "authorizer.", "queued.max", "unclean.", "delete.topic", "share.", "producer.", "fetch.",
    "controlled.shutdown", "replica.", "quota.", "initial.broker", "metric.reporters",
    "compression.", "message.max", "log.flush", "log.index", "log.preallocate", "log.roll",
    "log.message", "eligible.leader", "unstable.", "remote.log", "metadata.log.max.snapshot",
    # StandardAuthorizer's (StandardAuthorizer.ALLOW_EVERYONE_IF_NO_ACL_IS_FOUND_CONFIG):
    # the brokers' authorizer reads it; a kraft controller stores ACLs and
    # enforces none (kraft/node/authorizer.py).
    "allow.everyone.if.no.acl.found",
)


def parse_properties(text: str, source: str = "the config") -> dict[str, str]:
    """Java ``.properties`` syntax (``key=value``, ``key: value``, ``key value``,
    comments, continuations, escapes), as Kafka reads server.properties."""
    try:
        return parse_java_properties(text)
    except PropertiesSyntaxError as e:
        raise ConfigError(f"cannot read {source}: {e} (a backslash-u must be followed by four hex digits; "
                          "write a literal backslash as \\\\)") from None


def read_properties(path: Path | str) -> dict[str, str]:
    """The one reader of a ``server.properties`` for every command: the bytes
    decoded as ISO-8859-1, as ``Properties.load(InputStream)`` decodes them
    (Kafka's ``Utils.loadProps``), so any byte reads and a non-ASCII comment
    is just a comment. An unreadable file raises the ``OSError``: each tool
    reports it with its own exit code (``storage format`` keeps Kafka's 1)."""
    data = Path(path).read_bytes()
    if data.startswith(UTF8_BOM):
        # Java's Properties reads the mark as three Latin-1 characters of
        # the first key (Kafka then misses that key); name the mark instead.
        raise ConfigError(f"the config file {path} starts with a UTF-8 byte order mark (bytes EF BB BF), which "
                          "Kafka reads as part of the first key: save the file without it "
                          f"(sed -i '1s/^\\xEF\\xBB\\xBF//' {path})")
    return parse_properties(data.decode("latin-1"), str(path))


def load_properties(path: Path | str) -> dict[str, str]:
    """:func:`read_properties`, an unreadable file a :class:`ConfigError`."""
    try:
        return read_properties(path)
    except OSError as e:
        raise ConfigError(f"cannot read the config file {path}: {e.strerror} "
                          "(give the path of a Kafka server.properties)") from None


#: What an editor that saves "UTF-8 with BOM" puts before the first key.
UTF8_BOM = b"\xef\xbb\xbf"

INT32_MIN, INT64_MIN, INT64_MAX = -(1 << 31), -(1 << 63), (1 << 63) - 1
METADATA_LOG_SEGMENT_MIN_BYTES = 8 * 1024 * 1024
BATCH_HEADER_SIZE = 61


@dataclass(frozen=True, slots=True)
class NumberDef:
    """Type and range of a numeric key, as Kafka's ``ConfigDef.define``
    states them (``INT`` is a Java int, ``LONG`` a long; ``atLeast(min)``,
    ``between(min, max)``)."""

    type: str  # "INT" or "LONG"
    minimum: int | None = None
    maximum: int | None = None

    @property
    def bounds(self) -> tuple[int, int]:
        lo, hi = (INT32_MIN, INT32_MAX) if self.type == "INT" else (INT64_MIN, INT64_MAX)
        return (lo if self.minimum is None else self.minimum), (hi if self.maximum is None else self.maximum)


#: Every numeric key a kraft node reads, with Kafka 4.1's type and range
#: (``QuorumConfig``, ``KRaftConfigs``, ``MetadataLogConfig``,
#: ``SocketServerConfigs``, ``BrokerSecurityConfigs``). Where kraft's minimum
#: is stricter than Kafka's, the comment says why.
NUMERIC_KEYS: dict[str, NumberDef] = {
    "node.id": NumberDef("INT", 0),
    # Kafka: atLeast(0). kraft's core needs a positive election timeout and
    # fetch/request timeouts (QuorumConfig); 0 would never let a vote finish.
    "controller.quorum.election.timeout.ms": NumberDef("INT", 1),
    "controller.quorum.fetch.timeout.ms": NumberDef("INT", 1),
    "controller.quorum.election.backoff.max.ms": NumberDef("INT", 1),
    "controller.quorum.request.timeout.ms": NumberDef("INT", 1),
    "controller.quorum.append.linger.ms": NumberDef("INT", 0),
    "controller.quorum.retry.backoff.ms": NumberDef("INT", 0),
    # KIP-1219: sizes a Fetch / FetchSnapshot carries as an int32 MaxBytes.
    "controller.quorum.fetch.max.bytes": NumberDef("INT", 1),
    "controller.quorum.fetch.snapshot.max.bytes": NumberDef("INT", 1),
    # Kafka 4.1's MetadataLogConfig.CONFIG_DEF: atLeast(8 * 1024 * 1024).
    "metadata.log.segment.bytes": NumberDef("INT", METADATA_LOG_SEGMENT_MIN_BYTES),
    # Kafka's testing override (defineInternal, no validator; KafkaMetadataLog
    # uses it instead of the key above when set). kraft's floor is the one
    # value a segment must hold: a record batch header (61 bytes, Kafka's
    # DefaultRecordBatch.RECORD_BATCH_OVERHEAD); below it no batch fits.
    "internal.metadata.log.segment.bytes": NumberDef("INT", BATCH_HEADER_SIZE),
    # Kafka: no range; a segment that never rolls or rolls every 0 ms is no
    # setting kraft can honour.
    "metadata.log.segment.ms": NumberDef("LONG", 1),
    "metadata.max.retention.bytes": NumberDef("LONG", -1),
    "metadata.max.retention.ms": NumberDef("LONG", -1),
    "metadata.log.max.record.bytes.between.snapshots": NumberDef("LONG", 1),
    "metadata.log.max.snapshot.interval.ms": NumberDef("LONG", 0),
    "metadata.log.flush.interval.messages": NumberDef("LONG", 1),
    "socket.request.max.bytes": NumberDef("INT", 1),
    "max.connections": NumberDef("INT", 0),
    "max.connections.per.ip": NumberDef("INT", 0),
    # Kafka: no range; kraft closes idle connections, which needs a positive time.
    "connections.max.idle.ms": NumberDef("LONG", 1),
    # Kafka: no range; a negative or zero bound refuses every SASL handshake.
    "sasl.server.max.receive.size": NumberDef("INT", 1),
    "kraft.socket.request.receive.timeout.ms": NumberDef("INT", 1),
    "kraft.max.in.flight.requests.per.connection": NumberDef("INT", 1),
    "metrics.prometheus.port": NumberDef("INT", 0, 65535),
    # The controller's (Kafka's ConfigDef ranges: num.partitions atLeast(1),
    # min.insync.replicas atLeast(1), metadata.max.idle.interval.ms
    # atLeast(0); the others have none in Kafka). kraft's session and
    # heartbeat floors are 1 ms: a broker fenced at once, or told to
    # heartbeat without pause, is no setting a controller can honour.
    "num.partitions": NumberDef("INT", 1),
    "default.replication.factor": NumberDef("INT"),
    "min.insync.replicas": NumberDef("INT", 1),
    "broker.session.timeout.ms": NumberDef("INT", 1),
    "broker.heartbeat.interval.ms": NumberDef("INT", 1),
    "metadata.max.idle.interval.ms": NumberDef("INT", 0),
}


def invalid_value(key: str, value: object, reason: str) -> ConfigError:
    """Kafka's ``ConfigException`` wording: ``Invalid value V for configuration K: reason``
    (a value with a line break or another unprintable character shown
    escaped, so the error stays one line)."""
    text = str(value)
    if not text.isprintable():
        text = text.encode("unicode_escape").decode("ascii")
    return ConfigError(f"Invalid value {text} for configuration {key}: {reason}")


def check_number(key: str, text: str, spec: NumberDef | None = None) -> int:
    """``text`` as the number ``key`` holds (Kafka's ``ConfigDef.parseType``
    then its ``Range`` validator), or a one-line :class:`ConfigError`."""
    spec = spec or NUMERIC_KEYS[key]
    value = text.strip()
    lo, hi = spec.bounds
    type_lo, type_hi = (INT32_MIN, INT32_MAX) if spec.type == "INT" else (INT64_MIN, INT64_MAX)
    try:
        n = int(value) if re.fullmatch(r"[+-]?[0-9]+", value) else None
    except ValueError:  # pragma: no cover - the pattern admits digits only
        n = None
    if n is None or not type_lo <= n <= type_hi:
        raise invalid_value(key, value, f"Not a number of type {spec.type} (give an integer from {lo} to {hi})")
    if n < lo:
        raise invalid_value(key, value, f"Value must be at least {lo}")
    if n > hi:
        raise invalid_value(key, value, f"Value must be no more than {hi}")
    return n


def validate_numbers(props: Mapping[str, str]) -> None:
    """Check every numeric key present in ``props`` (and every port inside
    the listener and voter lists): what ``kraft storage format`` checks
    before it writes anything, as Kafka's tool builds a ``KafkaConfig``."""
    for key, spec in NUMERIC_KEYS.items():
        # Present but empty is "Not a number" too, as Kafka's parseInt says;
        # an empty node.id is "required", which the caller says.
        if key in props and (props[key].strip() or key != "node.id"):
            check_number(key, props[key], spec)
    for key in ("listeners", "advertised.listeners"):
        parse_listeners(props.get(key, ""), key)
    parse_voters(props.get("controller.quorum.voters", ""))
    parse_bootstrap_servers(props.get("controller.quorum.bootstrap.servers", ""))


def _int(props: Mapping[str, str], key: str) -> int:
    return check_number(key, props.get(key, DEFAULTS[key]))


def _port(props: Mapping[str, str], key: str) -> int:
    """A TCP port: 0 (any free one) to 65535."""
    return _int(props, key)


def _bool(props: Mapping[str, str], key: str) -> bool:
    value = props.get(key, DEFAULTS[key]).strip().lower()
    if value not in ("true", "false"):
        raise ConfigError(f"{key}: expected true or false, got {value!r}")
    return value == "true"


def controller_values(props: Mapping[str, str]) -> dict[str, Any]:
    """The controller's keys, parsed and checked (the fields of
    :class:`kraft.controller.settings.ControllerSettings` they fill)."""
    return {
        "num_partitions": _int(props, "num.partitions"),
        "default_replication_factor": _int(props, "default.replication.factor"),
        "min_insync_replicas": _int(props, "min.insync.replicas"),
        "unclean_leader_election_enable": _bool(props, "unclean.leader.election.enable"),
        "delete_topic_enable": _bool(props, "delete.topic.enable"),
        "broker_session_timeout_ms": _int(props, "broker.session.timeout.ms"),
        "broker_heartbeat_interval_ms": _int(props, "broker.heartbeat.interval.ms"),
        "metadata_max_idle_interval_ms": _int(props, "metadata.max.idle.interval.ms"),
        "authorizer_class_name": props.get("authorizer.class.name", "").strip(),
    }


def _host_port(text: str, key: str, lowest_port: int = 0) -> tuple[str, int]:
    m = re.fullmatch(r"\[([^\]]+)\]:(\d+)|([^:\[\]]*):(\d+)", text.strip())
    if not m:
        raise ConfigError(f"{key}: expected host:port, got {text!r}")
    host = m.group(1) if m.group(1) is not None else m.group(3)
    port = int(m.group(2) or m.group(4))
    if not lowest_port <= port <= 65535:
        raise invalid_value(key, text.strip(), f"port must be between {lowest_port} and 65535, got {port}")
    return host, port


def parse_listeners(text: str, key: str) -> list[Endpoint]:
    out: list[Endpoint] = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        m = re.fullmatch(r"([A-Za-z0-9_\-]+)://(.*)", item)
        if not m:
            raise ConfigError(f"{key}: expected NAME://host:port, got {item!r}")
        host, port = _host_port(m.group(2), key)
        out.append(Endpoint(m.group(1).upper(), host, port))
    names = [e.name for e in out]
    if len(set(names)) != len(names):
        raise ConfigError(f"{key}: each listener name may appear once, got {text!r}")
    return out


def _voter_id(node: str, item: str, key: str) -> int:
    """A voter's id: a non-negative int32, as ``node.id`` (Kafka's
    ``QuorumConfig.parseVoterId`` takes a Java int)."""
    if not re.fullmatch(r"[0-9]+", node.strip()) or int(node) > INT32_MAX:
        raise invalid_value(key, item, f"node id {node!r} is not an integer from 0 to {INT32_MAX}")
    return int(node)


def parse_voters(text: str) -> list[VoterSpec]:
    """``controller.quorum.voters``: ``id@host:port,...``."""
    key = "controller.quorum.voters"
    voters: list[VoterSpec] = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        node, sep, address = item.partition("@")
        if not sep:
            raise ConfigError(f"{key}: expected id@host:port, got {item!r}")
        node_id = _voter_id(node, item, key)
        # A voter is dialled: port 0 (any free port) names nobody.
        host, port = _host_port(address, key, lowest_port=1)
        voters.append(VoterSpec(node_id, host, port))
    ids = [v.node_id for v in voters]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"{key}: duplicate voter id in {text!r}")
    return voters


def check_roles_against_voters(roles: tuple[str, ...] | set[str], node_id: int, props: Mapping[str, str]) -> None:
    """Kafka's ``KafkaConfig.validateValues``: with static voters, a node
    with the controller role must be one of them
    (``validateControllerQuorumVotersMustContainNodeIdForKRaftController``)
    and a broker-only node must not be. A node that follows the quorum
    without voting (an observer) is ``process.roles=broker``, as in Kafka;
    with ``controller.quorum.bootstrap.servers`` a controller may be outside
    the voter set (KIP-853: it joins later). ``storage format`` and
    ``node start`` both ask here."""
    ids = sorted(v.node_id for v in parse_voters(props.get("controller.quorum.voters", "")))
    shown = "{" + ", ".join(map(str, ids)) + "}"
    if "controller" in roles and ids and node_id not in ids:
        raise ConfigError(f"If process.roles contains the 'controller' role, the node id {node_id} must be included "
                          f"in the set of voters controller.quorum.voters={shown} (add {node_id}@host:port for this "
                          "node, or set process.roles=broker for a node that follows the quorum without voting)")
    if "controller" not in roles and node_id in ids:
        raise ConfigError(f"If process.roles contains just the 'broker' role, the node id {node_id} must not be "
                          f"included in the set of voters controller.quorum.voters={shown} (a voter is "
                          "process.roles=controller)")


def parse_bootstrap_servers(text: str) -> list[tuple[str, int]]:
    """``controller.quorum.bootstrap.servers`` (empty: a static quorum),
    parsed by the one address parser, :func:`kraft.wire.addresses.parse_addresses`."""
    try:
        return list(parse_addresses(text, "controller.quorum.bootstrap.servers", allow_empty=True))
    except InvalidAddress as e:
        raise ConfigError(str(e)) from None


@dataclass(frozen=True, slots=True)
class NodeConfig:
    node_id: int
    process_roles: tuple[str, ...]
    listeners: tuple[Endpoint, ...]
    advertised_listeners: tuple[Endpoint, ...]
    controller_listener_names: tuple[str, ...]
    security_protocol_map: Mapping[str, str]
    voters: tuple[VoterSpec, ...]  # static quorum (kraft.version 0)
    bootstrap_servers: tuple[tuple[str, int], ...]  # dynamic quorum (KIP-853)
    metadata_log_dir: Path
    quorum: QuorumConfig
    auto_join: bool
    segment_bytes: int
    segment_ms: int
    retention_bytes: int
    retention_ms: int
    max_bytes_between_snapshots: int
    max_snapshot_interval_ms: int
    socket_request_max_bytes: int
    prometheus_port: int | None
    prometheus_host: str = ""
    raw: Mapping[str, str] = field(default_factory=dict, repr=False)
    connection_limits: ConnectionLimits = field(default_factory=ConnectionLimits)
    #: Listener name -> how it authenticates clients (PLAINTEXT listeners too).
    listener_security: Mapping[str, ListenerSecurity] = field(default_factory=dict, repr=False)
    #: How this node dials the other controllers (None: PLAINTEXT).
    client_security: ClientSecurity | None = field(default=None, repr=False)
    super_users: frozenset[str] = frozenset()
    #: ``kraft.witness``: auto (detect a Kafka quorum), true, false.
    witness: WitnessMode = WitnessMode.AUTO
    #: ``kraft.controller``: whether ``kraft node start`` runs Kafka's
    #: controller (process.roles=controller): auto, true, false.
    controller: ControllerMode = ControllerMode.AUTO
    #: SCRAM accounts every SASL listener checks; the node fills it from
    #: the bootstrap metadata (either layout) and the committed metadata log.
    scram_credentials: ScramCredentialStore = field(default_factory=ScramCredentialStore, repr=False, compare=False)
    #: The file it was loaded from (remedies name it), None when built in memory.
    source_path: Path | None = field(default=None, compare=False)

    @property
    def secured(self) -> bool:
        """Some listener uses SSL or SASL: quorum changes then need a super user."""
        return any(s.protocol != SecurityProtocol.PLAINTEXT for s in self.listener_security.values())

    @property
    def is_voter_candidate(self) -> bool:
        """Listed in the static voters (a dynamic quorum decides from the log)."""
        return any(v.node_id == self.node_id for v in self.voters)

    @property
    def controller_listener(self) -> Endpoint:
        """The first controller listener: what peers connect to."""
        for name in self.controller_listener_names:
            for e in self.advertised_listeners or self.listeners:
                if e.name == name:
                    return e
        raise ConfigError("no listener matches controller.listener.names")  # checked in from_properties

    @classmethod
    def load(cls, path: Path | str, overrides: Mapping[str, str] | None = None) -> NodeConfig:
        props = load_properties(path)
        if overrides:
            props.update(overrides)
        return dataclasses.replace(cls.from_properties(props), source_path=Path(path))

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> NodeConfig:
        _warn_unknown(props)
        validate_numbers(props)
        roles = tuple(r.strip() for r in props.get("process.roles", "").split(",") if r.strip())
        if not roles:
            raise ConfigError("process.roles: required (kraft runs process.roles=controller)")
        for role in roles:
            if role not in ("controller", "broker"):
                raise ConfigError(f"process.roles: unknown role {role!r}")
        if "controller" in roles and "broker" in roles:
            log.warning("process.roles includes broker: kraft has no broker duties, running as a controller only")
        if not props.get("node.id", "").strip():
            raise ConfigError('Missing required configuration "node.id" which has no default value.')
        node_id = _int(props, "node.id")
        check_roles_against_voters(roles, node_id, props)
        listeners = parse_listeners(props.get("listeners", ""), "listeners")
        if not listeners:
            raise ConfigError("listeners: required, e.g. listeners=CONTROLLER://127.0.0.1:9093")
        advertised = parse_listeners(props.get("advertised.listeners", ""), "advertised.listeners")
        names = tuple(n.strip().upper() for n in props.get("controller.listener.names", "").split(",") if n.strip())
        if not names:
            raise ConfigError("controller.listener.names: required, e.g. CONTROLLER")
        if not any(e.name in names for e in listeners):
            raise ConfigError(f"controller.listener.names: none of {', '.join(names)} is in listeners")
        proto_map: dict[str, str] = {}
        for item in filter(None, (s.strip() for s in props.get(
                "listener.security.protocol.map", DEFAULT_SECURITY_PROTOCOL_MAP).split(","))):
            name, sep, proto = item.partition(":")
            if not sep or proto.upper() not in SECURITY_PROTOCOLS:
                raise ConfigError(f"listener.security.protocol.map: bad entry {item!r}")
            proto_map[name.strip().upper()] = proto.strip().upper()
        for e in listeners:
            if e.name not in proto_map:
                raise ConfigError(f"listener.security.protocol.map: no security protocol for listener {e.name}")
        voters = parse_voters(props.get("controller.quorum.voters", ""))
        bootstrap = parse_bootstrap_servers(props.get("controller.quorum.bootstrap.servers", ""))
        if not voters and not bootstrap:
            raise ConfigError("one of controller.quorum.voters or controller.quorum.bootstrap.servers is required")
        _warn_voter_address(node_id, voters, advertised or listeners, names)
        log_dir = metadata_log_dir(props)
        quorum = QuorumConfig(
            election_timeout_ms=_int(props, "controller.quorum.election.timeout.ms"),
            fetch_timeout_ms=_fetch_timeout_ms(props),
            election_backoff_max_ms=_int(props, "controller.quorum.election.backoff.max.ms"),
            append_linger_ms=_int(props, "controller.quorum.append.linger.ms"),
            request_timeout_ms=_int(props, "controller.quorum.request.timeout.ms"),
            retry_backoff_ms=_int(props, "controller.quorum.retry.backoff.ms"),
            fetch_max_bytes=_int(props, "controller.quorum.fetch.max.bytes"),
            fetch_snapshot_max_bytes=_int(props, "controller.quorum.fetch.snapshot.max.bytes"),
        )
        port_text = props.get("metrics.prometheus.port", "").strip()
        security = _security(props, listeners, proto_map, names)
        return cls(
            node_id=node_id,
            process_roles=roles,
            listeners=tuple(listeners),
            advertised_listeners=tuple(advertised),
            controller_listener_names=names,
            security_protocol_map=proto_map,
            voters=tuple(voters),
            bootstrap_servers=tuple(bootstrap),
            metadata_log_dir=Path(log_dir),
            quorum=quorum,
            auto_join=_bool(props, "controller.quorum.auto.join.enable"),
            segment_bytes=_segment_bytes(props),
            segment_ms=_int(props, "metadata.log.segment.ms"),
            retention_bytes=_int(props, "metadata.max.retention.bytes"),
            retention_ms=_int(props, "metadata.max.retention.ms"),
            max_bytes_between_snapshots=_int(props, "metadata.log.max.record.bytes.between.snapshots"),
            max_snapshot_interval_ms=_int(props, "metadata.log.max.snapshot.interval.ms"),
            socket_request_max_bytes=_int(props, "socket.request.max.bytes"),
            prometheus_port=_port(props, "metrics.prometheus.port") if port_text else None,
            prometheus_host=props.get("metrics.prometheus.host", "").strip(),
            raw=dict(props),
            connection_limits=_limits(props),
            witness=_witness_mode(props),
            controller=_controller_mode(props),
            **security,  # type: ignore[arg-type]
        )


def _warn_voter_address(node_id: int, voters: list[VoterSpec], listeners: list[Endpoint],
                        names: tuple[str, ...]) -> None:
    """One WARN line when this node's own ``controller.quorum.voters`` entry
    names another address than its controller listener: the other voters
    dial the entry, so they would miss this node. Kafka accepts the config
    (it advertises its listener and, for a wildcard host, the entry's
    address: ``KafkaConfig.effectiveAdvertisedControllerListeners``), so
    kraft starts too, but says so."""
    own = next((v for v in voters if v.node_id == node_id), None)
    listener = next((e for name in names[:1] for e in listeners if e.name == name), None)
    if own is None or listener is None or listener.port == 0:
        return
    wildcard = listener.host in ("", "0.0.0.0", "::")
    if listener.port != own.port or (not wildcard and listener.host.lower() != own.host.lower()):
        log.warning("controller.quorum.voters names node %d at %s but its listener %s is %s: the other voters dial "
                    "%s (make the entry match the listener, or advertised.listeners)", node_id,
                    format_address(own.host, own.port), listener.name, format_address(listener.host, listener.port),
                    format_address(own.host, own.port))


def _segment_bytes(props: Mapping[str, str]) -> int:
    """``internal.metadata.log.segment.bytes`` when set, else
    ``metadata.log.segment.bytes``, as Kafka's ``KafkaMetadataLog`` chooses."""
    if props.get("internal.metadata.log.segment.bytes", "").strip():
        return _int(props, "internal.metadata.log.segment.bytes")
    return _int(props, "metadata.log.segment.bytes")


#: The shortest ``controller.quorum.fetch.timeout.ms`` a quorum can live
#: with: a follower's Fetch waits at the leader up to
#: ``KafkaRaftClient.MAX_FETCH_WAIT_MS`` (500 ms) for new records, so a fetch
#: timeout below it expires on every idle fetch and the voters hold an
#: election after election (and half of it, the leader's BeginQuorumEpoch
#: resend period, became 0: a timer always due).
MIN_FETCH_TIMEOUT_MS = QuorumConfig().fetch_max_wait_ms


def _fetch_timeout_ms(props: Mapping[str, str]) -> int:
    """``controller.quorum.fetch.timeout.ms``, raised to
    :data:`MIN_FETCH_TIMEOUT_MS` with one WARN line. Clamped rather than
    refused: Kafka's ``QuorumConfig.CONFIG_DEF`` defines the key with no
    validator, so a file a Kafka controller starts with starts kraft too."""
    key = "controller.quorum.fetch.timeout.ms"
    value = _int(props, key)
    if value < MIN_FETCH_TIMEOUT_MS:
        log.warning("%s=%d is below a follower's fetch wait (%d ms): using %d (a shorter fetch timeout would "
                    "start an election on every idle fetch)", key, value, MIN_FETCH_TIMEOUT_MS, MIN_FETCH_TIMEOUT_MS)
        return MIN_FETCH_TIMEOUT_MS
    return value


def metadata_log_dir(props: Mapping[str, str]) -> Path:
    """The metadata log directory a config names: ``metadata.log.dir``, else
    the first of ``log.dirs``, else ``log.dir`` (Kafka's default
    ``/tmp/kafka-logs``), as ``KafkaConfig.metadataLogDir``. One left empty
    (``metadata.log.dir=``) is refused: Kafka would take the empty path.
    ``storage format`` and ``node start`` both ask here."""
    if "metadata.log.dir" in props and not props["metadata.log.dir"].strip():
        raise ConfigError("metadata.log.dir is set but empty: give the metadata log directory "
                          "(or remove the line to use the first of log.dirs)")
    first_log_dir = props.get("log.dirs", "").split(",")[0].strip()
    return Path(props.get("metadata.log.dir", "").strip() or first_log_dir
                or props.get("log.dir", DEFAULTS["log.dir"]).strip() or DEFAULTS["log.dir"])


def _controller_mode(props: Mapping[str, str]) -> ControllerMode:
    text = props.get("kraft.controller", DEFAULTS["kraft.controller"])
    for mode in ControllerMode:
        if mode.value == text.strip().lower():
            return mode
    raise ConfigError(f"kraft.controller must be auto, true or false, not {text!r}")


def _witness_mode(props: Mapping[str, str]) -> WitnessMode:
    try:
        return WitnessMode.parse(props.get("kraft.witness", "auto"))
    except ValueError as e:
        raise ConfigError(str(e)) from None


def _limits(props: Mapping[str, str]) -> ConnectionLimits:
    overrides: dict[str, int] = {}
    key = "max.connections.per.ip.overrides"
    for item in filter(None, (s.strip() for s in props.get(key, "").split(","))):
        host, sep, count = item.rpartition(":")
        if not sep or not host:
            raise ConfigError(f"{key}: expected host:count, got {item!r}")
        overrides[host.strip()] = check_number(key, count, NUMERIC_KEYS["max.connections.per.ip"])
    return ConnectionLimits(
        max_connections=_int(props, "max.connections"),
        max_connections_per_ip=_int(props, "max.connections.per.ip"),
        max_connections_per_ip_overrides=overrides,
        idle_timeout_ms=_int(props, "connections.max.idle.ms"),
        request_receive_timeout_ms=_int(props, "kraft.socket.request.receive.timeout.ms"),
        max_in_flight_per_connection=_int(props, "kraft.max.in.flight.requests.per.connection"),
        sasl_max_receive_size=_int(props, "sasl.server.max.receive.size"),
    )


def _security(props: Mapping[str, str], listeners: list[Endpoint], proto_map: Mapping[str, str],
              controller_names: tuple[str, ...]) -> dict[str, object]:
    """Every listener's security, the node's own client side and the super
    users, checked now (files readable, keys decrypt, mechanisms known) so
    a bad setting stops the node at start with the key named."""
    store = ScramCredentialStore()
    try:
        per_listener = {e.name: listener_security(props, e.name, SecurityProtocol(proto_map[e.name]), store)
                        for e in listeners}
        controller = controller_names[0]
        protocol = SecurityProtocol(proto_map.get(controller, "PLAINTEXT"))
        client = None if protocol == SecurityProtocol.PLAINTEXT else node_client_security(props, controller, protocol)
        super_users = parse_super_users(props.get("super.users", ""))
    except SecurityConfigError as e:
        raise ConfigError(str(e)) from None
    return {"listener_security": per_listener, "client_security": client, "super_users": super_users,
            "scram_credentials": store}


def suggest_key(key: str) -> str | None:
    """The known key an unknown one is most likely a typo of (difflib), if any."""
    matches = difflib.get_close_matches(key, list(DEFAULTS), n=1, cutoff=0.8)
    return matches[0] if matches else None


def _warn_unknown(props: Mapping[str, str]) -> None:
    for key in sorted(props):
        if key in DEFAULTS or key.startswith(_IGNORED_PREFIXES) or key.startswith("listener.name."):
            continue
        suggestion = suggest_key(key)
        if suggestion is not None:
            value = props.get(suggestion, DEFAULTS[suggestion]).strip()
            if value:
                log.warning("ignoring unknown config key %s: did you mean %s? (running with %s=%s)", key, suggestion,
                            suggestion, value)
            else:
                log.warning("ignoring unknown config key %s: did you mean %s? (%s is not set)", key, suggestion,
                            suggestion)
        else:
            log.warning("ignoring unknown config key %s", key)
