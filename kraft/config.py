"""A node's configuration, read from a Kafka ``server.properties``.

Same keys, same defaults and the same value formats as a Kafka controller, so
an operator's existing file works. Keys Kafka knows but a kraft node does not
use (broker settings, say) and keys nobody knows each get one warning; a bad
value is a :class:`ConfigError` naming the key.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kraft.errors import ConfigurationError
from kraft.raft.quorum_config import QuorumConfig
from kraft.raft.witness import WitnessMode
from kraft.records.state_files import parse_java_properties
from kraft.wire.addresses import InvalidAddress, parse_addresses
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
    "Endpoint",
    "NodeConfig",
    "VoterSpec",
    "load_properties",
    "parse_properties",
]

DEFAULT_SECURITY_PROTOCOL_MAP = (
    "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
)
SECURITY_PROTOCOLS = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}


class ConfigError(ConfigurationError, ValueError):
    """A configuration value that cannot be used; the message names the key."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A listener: ``NAME://host:port``."""

    name: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class VoterSpec:
    """One entry of ``controller.quorum.voters``: ``id@host:port``."""

    node_id: int
    host: str
    port: int


# Keys a kraft node reads, with Kafka's defaults (as strings, parsed below).
_DEFAULTS: dict[str, str] = {
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
    "metadata.log.segment.ms": str(7 * 24 * 60 * 60 * 1000),
    "metadata.max.retention.bytes": str(100 * 1024 * 1024),
    "metadata.max.retention.ms": str(7 * 24 * 60 * 60 * 1000),
    "metadata.log.max.record.bytes.between.snapshots": str(20 * 1024 * 1024),
    "metadata.log.max.snapshot.interval.ms": str(60 * 60 * 1000),
    "metadata.log.flush.interval.messages": str(2**63 - 1),
    "socket.request.max.bytes": str(100 * 1024 * 1024),
    # Connection limits and security (kraft/wire/connection_limits.py, kraft/wire/security.py).
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
    # The witness voter (kraft/raft/witness.py): auto detects a Kafka quorum.
    "kraft.witness": "auto",
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
)


def parse_properties(text: str) -> dict[str, str]:
    """Java ``.properties`` syntax (``key=value``, ``key: value``, ``key value``,
    comments, continuations, escapes), as Kafka reads server.properties."""
    return parse_java_properties(text)


def load_properties(path: Path | str) -> dict[str, str]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read the config file {path}: {e.strerror} "
                          "(give the path of a Kafka server.properties)") from None
    return parse_properties(text)


def _int(props: Mapping[str, str], key: str, minimum: int | None = 0) -> int:
    value = props.get(key, _DEFAULTS[key]).strip()
    try:
        n = int(value)
    except ValueError:
        raise ConfigError(f"{key}: expected an integer, got {value!r}") from None
    if minimum is not None and n < minimum:
        raise ConfigError(f"{key}: must be at least {minimum}, got {n}")
    return n


def _port(props: Mapping[str, str], key: str) -> int:
    """A TCP port: 0 (any free one) to 65535."""
    n = _int(props, key)
    if n > 65535:
        raise ConfigError(f"{key}: port must be between 0 and 65535, got {n}")
    return n


def _bool(props: Mapping[str, str], key: str) -> bool:
    value = props.get(key, _DEFAULTS[key]).strip().lower()
    if value not in ("true", "false"):
        raise ConfigError(f"{key}: expected true or false, got {value!r}")
    return value == "true"


def _host_port(text: str, key: str) -> tuple[str, int]:
    m = re.fullmatch(r"\[([^\]]+)\]:(\d+)|([^:\[\]]*):(\d+)", text.strip())
    if not m:
        raise ConfigError(f"{key}: expected host:port, got {text!r}")
    host = m.group(1) if m.group(1) is not None else m.group(3)
    port = int(m.group(2) or m.group(4))
    if not 0 <= port <= 65535:
        raise ConfigError(f"{key}: port must be between 0 and 65535, got {port} in {text!r}")
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


def parse_voters(text: str) -> list[VoterSpec]:
    """``controller.quorum.voters``: ``id@host:port,...``."""
    key = "controller.quorum.voters"
    voters: list[VoterSpec] = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        node, sep, address = item.partition("@")
        if not sep:
            raise ConfigError(f"{key}: expected id@host:port, got {item!r}")
        try:
            node_id = int(node)
        except ValueError:
            raise ConfigError(f"{key}: node id {node!r} is not an integer") from None
        if node_id < 0:
            raise ConfigError(f"{key}: node id must not be negative, got {node_id}")
        host, port = _host_port(address, key)
        voters.append(VoterSpec(node_id, host, port))
    ids = [v.node_id for v in voters]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"{key}: duplicate voter id in {text!r}")
    return voters


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
    #: SCRAM accounts every SASL listener checks; the node fills it from
    #: bootstrap.checkpoint and the committed metadata log.
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
        roles = tuple(r.strip() for r in props.get("process.roles", "").split(",") if r.strip())
        if not roles:
            raise ConfigError("process.roles: required (kraft runs process.roles=controller)")
        for role in roles:
            if role not in ("controller", "broker"):
                raise ConfigError(f"process.roles: unknown role {role!r}")
        if "controller" not in roles:
            raise ConfigError("process.roles: a kraft node needs the controller role")
        if "broker" in roles:
            log.warning("process.roles includes broker: kraft has no broker duties, running as a controller only")
        if not props.get("node.id", "").strip():
            raise ConfigError("node.id: required")
        node_id = _int(props, "node.id")
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
        log_dir = (props.get("metadata.log.dir", "").strip()
                   or props.get("log.dirs", "").split(",")[0].strip()
                   or props.get("log.dir", _DEFAULTS["log.dir"]).strip())
        quorum = QuorumConfig(
            election_timeout_ms=_int(props, "controller.quorum.election.timeout.ms", 1),
            fetch_timeout_ms=_int(props, "controller.quorum.fetch.timeout.ms", 1),
            election_backoff_max_ms=_int(props, "controller.quorum.election.backoff.max.ms", 1),
            append_linger_ms=_int(props, "controller.quorum.append.linger.ms"),
            request_timeout_ms=_int(props, "controller.quorum.request.timeout.ms", 1),
            retry_backoff_ms=_int(props, "controller.quorum.retry.backoff.ms"),
            fetch_max_bytes=_int(props, "controller.quorum.fetch.max.bytes", 1),
            fetch_snapshot_max_bytes=_int(props, "controller.quorum.fetch.snapshot.max.bytes", 1),
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
            segment_bytes=_int(props, "metadata.log.segment.bytes", 14),
            segment_ms=_int(props, "metadata.log.segment.ms", 1),
            retention_bytes=_int(props, "metadata.max.retention.bytes", -1),
            retention_ms=_int(props, "metadata.max.retention.ms", -1),
            max_bytes_between_snapshots=_int(props, "metadata.log.max.record.bytes.between.snapshots", 1),
            max_snapshot_interval_ms=_int(props, "metadata.log.max.snapshot.interval.ms"),
            socket_request_max_bytes=_int(props, "socket.request.max.bytes", 1),
            prometheus_port=_port(props, "metrics.prometheus.port") if port_text else None,
            prometheus_host=props.get("metrics.prometheus.host", "").strip(),
            raw=dict(props),
            connection_limits=_limits(props),
            witness=_witness_mode(props),
            **security,  # type: ignore[arg-type]
        )


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
        if not sep or not host or not count.strip().isdigit():
            raise ConfigError(f"{key}: expected host:count, got {item!r}")
        overrides[host.strip()] = int(count)
    return ConnectionLimits(
        max_connections=_int(props, "max.connections"),
        max_connections_per_ip=_int(props, "max.connections.per.ip"),
        max_connections_per_ip_overrides=overrides,
        idle_timeout_ms=_int(props, "connections.max.idle.ms", 1),
        request_receive_timeout_ms=_int(props, "kraft.socket.request.receive.timeout.ms", 1),
        max_in_flight_per_connection=_int(props, "kraft.max.in.flight.requests.per.connection", 1),
        sasl_max_receive_size=_int(props, "sasl.server.max.receive.size", 1),
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
    matches = difflib.get_close_matches(key, list(_DEFAULTS), n=1, cutoff=0.8)
    return matches[0] if matches else None


def _warn_unknown(props: Mapping[str, str]) -> None:
    for key in sorted(props):
        if key in _DEFAULTS or key.startswith(_IGNORED_PREFIXES) or key.startswith("listener.name."):
            continue
        suggestion = suggest_key(key)
        if suggestion is not None:
            log.warning("ignoring unknown config key %s: did you mean %s? (running with %s=%s)", key, suggestion,
                        suggestion, props.get(suggestion, _DEFAULTS[suggestion]))
        else:
            log.warning("ignoring unknown config key %s", key)
