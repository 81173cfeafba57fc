"""``kraft quorum``: Kafka's ``kafka-metadata-quorum.sh`` (Kafka 4.x
``MetadataQuorumCommand``) for a kraft quorum -- or a Kafka one: it speaks
only Kafka's protocol.

    kraft quorum --bootstrap-controller HOST:PORT[,HOST:PORT...] describe --status
    kraft quorum --bootstrap-controller HOST:PORT describe --replication [--human-readable]
    kraft quorum --bootstrap-server HOST:PORT describe --status

What it sends is what Kafka's admin client sends for the command:
ApiVersions on every connection, DescribeCluster to a bootstrap address
(endpoint type 2, controllers, with ``--bootstrap-controller``; 1, brokers,
with ``--bootstrap-server``) to learn the cluster id and the leader
(``controllerId``), then DescribeQuorum (v2 at most) to that node. The output
has Kafka's fields, order and layout, byte for byte: ``--status`` prints
``ClusterId`` ... ``CurrentObservers`` with Kafka's column alignment and
node strings (``{"id": 1, "directoryId": "...", "endpoints":
["CONTROLLER://host:port"]}``, ``"directoryId": null`` for a zero directory
id, an empty endpoint list left out); ``--replication`` prints Kafka's ``prettyPrintTable``:
every cell padded to its column's width and followed by a tab, the leader
first, then the other voters, then the observers.

kraft additions: when some voter is a kraft witness (kraft/raft/witness.py),
``describe --status`` adds a ``Witnesses`` line naming them and why
(:mod:`kraft.tools.quorum_witness`); and while a ``kraft quorum reassign`` (KIP-642) is in
progress -- its state file exists (``--state-file``, by default
``.kraft-reassignment-<cluster id>.json`` in the current directory) and the
voter set is not its target yet -- ``describe --status`` adds
``ReassignmentTarget``, ``ReassignmentAdding``, ``ReassignmentRemoving`` and
``ReassignmentStep`` (the next single-voter change, or why it waits) after
Kafka's lines. Otherwise the output is Kafka's alone.

Every wait is bounded. ``default.api.timeout.ms`` (10000 here, 60000 in
Kafka's client) bounds the whole command and ``request.timeout.ms`` (5000)
each request; both can be set in ``--command-config`` as for Kafka's tool.
A bootstrap list none of whose addresses accepts a connection fails at once;
a quorum without a leader, or whose leader moves, is retried every 100 ms
(Kafka's ``retry.backoff.ms``) until the command's timeout. Errors print one
line on stderr and exit 1; usage errors exit 2.

The group is meant to grow: KIP-853's ``add-controller``,
``remove-controller`` (and reassignment) register on :data:`quorum_group`
and reuse :class:`QuorumToolOptions`, :class:`AdminSession` (which finds
the leader and sends it a request) and :func:`run_tool`.
"""

from __future__ import annotations

import logging
import re
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click
import trio

from kraft.config import ConfigError, load_properties
from kraft.messages.errors import KraftProtocolError
from kraft.messages.generated import describe_cluster_request as dc_req
from kraft.messages.generated import describe_quorum_request as dq_req
from kraft.messages.json_form import uuid_to_kafka
from kraft.wire.apis import ApiKey
from kraft.wire.client import ConnectionFailed, NoCommonVersion, PeerClient, PeerClientError, RequestTimedOut
from kraft.wire.errors import ErrorCode
from kraft.wire.security import ClientSecurity, SecurityConfigError, client_security_from_properties

__all__ = [
    "quorum_group",
    "describe_command",
    "ToolError",
    "Bootstrap",
    "AdminSettings",
    "QuorumToolOptions",
    "ClusterView",
    "ReplicaInfo",
    "QuorumInfo",
    "AdminSession",
    "run_tool",
    "format_status",
    "quorum_view",
    "load_reassignment_state",
    "ReassignmentProgress",
    "reassignment_progress",
    "format_reassignment",
    "format_replication",
    "parse_bootstrap",
]

#: The bound on a whole command (Kafka's ``default.api.timeout.ms`` is
#: 60000; a tool that cannot reach its quorum should say so sooner).
DEFAULT_API_TIMEOUT_MS = 10_000
#: The bound on one request, connecting included.
DEFAULT_REQUEST_TIMEOUT_MS = 5_000
#: Kafka's ``retry.backoff.ms``: the pause before asking again.
RETRY_BACKOFF_MS = 100

ENDPOINT_TYPE_BROKER = 1
ENDPOINT_TYPE_CONTROLLER = 2
_ENDPOINT_TYPE_NAMES = {ENDPOINT_TYPE_BROKER: "BROKER", ENDPOINT_TYPE_CONTROLLER: "CONTROLLER"}

METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION = 0
_ZERO_UUID = uuid.UUID(int=0)

T = TypeVar("T")


class ToolError(Exception):
    """A failure the tool reports as one message on stderr, exit status 1."""


# ---------------------------------------------------------------- settings


@dataclass(frozen=True, slots=True)
class Bootstrap:
    """Where to start: addresses and which kind of node they are."""

    addresses: tuple[tuple[str, int], ...]
    #: ``ENDPOINT_TYPE_CONTROLLER`` (``--bootstrap-controller``) or
    #: ``ENDPOINT_TYPE_BROKER`` (``--bootstrap-server``).
    endpoint_type: int

    @property
    def kind(self) -> str:
        return "controllers" if self.endpoint_type == ENDPOINT_TYPE_CONTROLLER else "servers"


@dataclass(frozen=True, slots=True)
class AdminSettings:
    """The admin client settings the tool honours (from ``--command-config``)."""

    api_timeout_ms: int = DEFAULT_API_TIMEOUT_MS
    request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS
    client_id: str = "kraft-quorum"
    #: security.protocol, sasl.*, ssl.* (None: PLAINTEXT).
    security: ClientSecurity | None = None


_HOST_PORT = re.compile(r"\[([^\]]+)\]:(\d+)|([^:\[\]\s]+):(\d+)")


def parse_bootstrap(text: str, config_key: str) -> tuple[tuple[str, int], ...]:
    """Kafka's ``ClientUtils.parseAndValidateAddresses``: comma-separated
    ``host:port`` (IPv6 hosts in brackets)."""
    out = []
    for item in (s.strip() for s in text.split(",")):
        if not item:
            continue
        m = _HOST_PORT.fullmatch(item)
        port = int(m.group(2) or m.group(4)) if m else -1
        if m is None or not 0 < port < 65536:
            raise ToolError(f"Invalid url in {config_key}: {item}")
        out.append((m.group(1) or m.group(3), port))
    if not out:
        raise ToolError(f"No resolvable bootstrap urls given in {config_key}")
    return tuple(out)


def _positive_int(props: dict[str, str], key: str, default: int) -> int:
    text = props.get(key)
    if text is None:
        return default
    try:
        value = int(text.strip())
    except ValueError:
        raise ToolError(f"Invalid value {text} for configuration {key}: Not a number of type INT") from None
    if value <= 0:
        raise ToolError(f"Invalid value {value} for configuration {key}: Value must be at least 1")
    return value


@dataclass(frozen=True, slots=True)
class QuorumToolOptions:
    """The options of ``kraft quorum`` itself (before the subcommand)."""

    bootstrap_server: str | None
    bootstrap_controller: str | None
    command_config: Path | None

    def resolve(self) -> tuple[Bootstrap, AdminSettings]:
        """Validate: exactly one bootstrap option, a readable command config."""
        if self.bootstrap_server is not None and self.bootstrap_controller is not None:
            raise click.UsageError("argument --bootstrap-controller: not allowed with argument --bootstrap-server")
        if self.bootstrap_controller is not None:
            bootstrap = Bootstrap(parse_bootstrap(self.bootstrap_controller, "bootstrap.controllers"),
                                  ENDPOINT_TYPE_CONTROLLER)
        elif self.bootstrap_server is not None:
            bootstrap = Bootstrap(parse_bootstrap(self.bootstrap_server, "bootstrap.servers"), ENDPOINT_TYPE_BROKER)
        else:
            raise click.UsageError("one of the arguments --bootstrap-server --bootstrap-controller is required")
        return bootstrap, self._settings()

    def _settings(self) -> AdminSettings:
        if self.command_config is None:
            return AdminSettings()
        path = self.command_config
        if not path.exists():
            raise ToolError(f"Properties file {path} does not exist.")
        try:
            props = load_properties(path)
        except ConfigError as e:
            raise ToolError(str(e)) from None
        try:
            security = client_security_from_properties(props)
        except SecurityConfigError as e:
            raise ToolError(f"{path}: {e}") from None
        return AdminSettings(
            security=security,
            api_timeout_ms=_positive_int(props, "default.api.timeout.ms", DEFAULT_API_TIMEOUT_MS),
            request_timeout_ms=_positive_int(props, "request.timeout.ms", DEFAULT_REQUEST_TIMEOUT_MS),
            client_id=props.get("client.id", "kraft-quorum").strip() or "kraft-quorum",
        )


# ---------------------------------------------------------------- what the cluster said


@dataclass(frozen=True, slots=True)
class ClusterView:
    """A DescribeCluster answer: the cluster id, the leader (``controllerId``,
    -1 if none) and where each listed node is."""

    cluster_id: str
    controller_id: int
    nodes: dict[int, tuple[str, int]]

    @property
    def leader_address(self) -> tuple[str, int] | None:
        return self.nodes.get(self.controller_id) if self.controller_id >= 0 else None


@dataclass(frozen=True, slots=True)
class ReplicaInfo:
    """Kafka's ``QuorumInfo.ReplicaState``; a timestamp of -1 on the wire is None."""

    replica_id: int
    directory_id: uuid.UUID
    log_end_offset: int
    last_fetch_ms: int | None
    last_caught_up_ms: int | None


@dataclass(frozen=True, slots=True)
class QuorumInfo:
    """Kafka's ``QuorumInfo``: DescribeQuorum's answer, as the tool uses it."""

    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[ReplicaInfo, ...]
    observers: tuple[ReplicaInfo, ...]
    #: node id -> its listeners as (name, host, port); DescribeQuorum v2 only.
    nodes: dict[int, tuple[tuple[str, str, int], ...]] = field(default_factory=dict)


def _optional_ms(value: int) -> int | None:
    return None if value == -1 else value


def _replica_info(state: Any) -> ReplicaInfo:
    return ReplicaInfo(state.replica_id, state.replica_directory_id, state.log_end_offset,
                       _optional_ms(state.last_fetch_timestamp), _optional_ms(state.last_caught_up_timestamp))


def quorum_info(body: Any) -> QuorumInfo:
    """The partition of a successful DescribeQuorum answer (Kafka's
    ``KafkaAdminClient.createQuorumResult``)."""
    partition = body.topics[0].partitions[0]
    return QuorumInfo(
        leader_id=partition.leader_id,
        leader_epoch=partition.leader_epoch,
        high_watermark=partition.high_watermark,
        voters=tuple(_replica_info(v) for v in partition.current_voters),
        observers=tuple(_replica_info(o) for o in partition.observers),
        nodes={n.node_id: tuple((l.name, l.host, l.port) for l in n.listeners) for n in body.nodes},
    )


def _error_text(code: int, message: str | None) -> str:
    name = ErrorCode.name_of(code)
    return f"{name}: {message}" if message else name


# ---------------------------------------------------------------- talking to the quorum


class _VersionTooOld(Exception):
    """The peer's highest common version cannot express the request."""


class AdminSession:
    """The requests a quorum tool makes, each bounded by ``request.timeout.ms``
    and all of them by the command's deadline (``default.api.timeout.ms``,
    counted from the session's start). Use as ``async with``."""

    def __init__(self, bootstrap: Bootstrap, settings: AdminSettings) -> None:
        self.bootstrap = bootstrap
        self.settings = settings
        self._clients: dict[tuple[str, int], PeerClient] = {}
        self._deadline = 0.0

    async def __aenter__(self) -> AdminSession:
        self._deadline = trio.current_time() + self.settings.api_timeout_ms / 1000
        return self

    async def __aexit__(self, *exc: object) -> None:
        with trio.CancelScope(shield=True):
            for client in self._clients.values():
                await client.aclose()

    def _client(self, address: tuple[str, int]) -> PeerClient:
        client = self._clients.get(address)
        if client is None:
            client = self._clients[address] = PeerClient(
                *address, client_id=self.settings.client_id,
                request_timeout_ms=self.settings.request_timeout_ms,
                connect_timeout_ms=self.settings.request_timeout_ms, security=self.settings.security)
        return client

    def _remaining_ms(self) -> int:
        return max(0, int((self._deadline - trio.current_time()) * 1000))

    async def request(self, address: tuple[str, int], api: ApiKey, build: Callable[[int], Any],
                      max_version: int | None = None) -> tuple[int, Any]:
        """One request to ``address``; raises :class:`PeerClientError` (or
        :class:`_VersionTooOld` from ``build``)."""
        timeout = min(self.settings.request_timeout_ms, self._remaining_ms())
        if timeout <= 0:
            raise RequestTimedOut(*address, api, 0)
        return await self._client(address).request(api, build, timeout_ms=timeout, max_version=max_version)

    async def describe_cluster(self) -> ClusterView:
        """DescribeCluster to the bootstrap addresses, in order, until one
        answers. Raises :class:`ToolError` when none can be reached or one
        answers with an error."""
        endpoint_type = self.bootstrap.endpoint_type

        def build(version: int) -> dc_req.DescribeClusterRequest:
            if version < 1 and endpoint_type != ENDPOINT_TYPE_BROKER:
                raise _VersionTooOld("DescribeCluster v0 cannot ask for controllers")
            return dc_req.DescribeClusterRequest(include_cluster_authorized_operations=False,
                                                 endpoint_type=endpoint_type)

        failures = []
        for address in self.bootstrap.addresses:
            try:
                version, body = await self.request(address, ApiKey.DESCRIBE_CLUSTER, build)
            except (PeerClientError, KraftProtocolError) as e:
                failures.append(str(e))
                continue
            except _VersionTooOld as e:
                raise ToolError(f"{address[0]}:{address[1]}: {e} (the node is too old for --bootstrap-controller)")
            if body.error_code != ErrorCode.NONE:
                raise ToolError(f"DescribeCluster to {address[0]}:{address[1]} failed: "
                                f"{_error_text(body.error_code, body.error_message)}")
            got = body.endpoint_type if version >= 1 else ENDPOINT_TYPE_BROKER
            if got != endpoint_type:
                # Kafka's KafkaAdminClient.parseDescribeClusterResponse.
                raise ToolError(f"MISMATCHED_ENDPOINT_TYPE: expected {_ENDPOINT_TYPE_NAMES[endpoint_type]} "
                                f"endpoints, got {_ENDPOINT_TYPE_NAMES.get(got, got)} from {address[0]}:{address[1]}")
            return ClusterView(body.cluster_id, body.controller_id,
                               {b.broker_id: (b.host, b.port) for b in body.brokers})
        raise ToolError(f"Cannot reach any of the bootstrap {self.bootstrap.kind}: " + "; ".join(failures))

    async def until_deadline(self, what: str, attempt: Callable[[], Awaitable[T | str]]) -> T:
        """Call ``attempt`` until it returns a result, every
        :data:`RETRY_BACKOFF_MS` while it returns a string (why it must be
        retried), until the command's deadline."""
        reason = "no attempt finished"
        with trio.move_on_at(self._deadline):
            while True:
                outcome = await attempt()
                if not isinstance(outcome, str):
                    return outcome
                reason = outcome
                await trio.sleep(RETRY_BACKOFF_MS / 1000)
        raise ToolError(f"Timed out after {self.settings.api_timeout_ms} ms waiting for {what}: {reason}")

    async def send_to_leader(self, api: ApiKey, build: Callable[[int], Any],
                             max_version: int | None = None) -> tuple[ClusterView, int, Any] | str:
        """Find the leader (DescribeCluster) and send it one request: the
        view, the version used and the response body -- or, when there is no
        leader to send to or it cannot be reached, the reason as a string
        (for :meth:`until_deadline`)."""
        view = await self.describe_cluster()
        address = view.leader_address
        if address is None:
            return "no leader is known for the metadata quorum (controllerId -1)"
        try:
            version, body = await self.request(address, api, build, max_version)
        except NoCommonVersion as e:
            raise ToolError(str(e)) from None
        except (ConnectionFailed, RequestTimedOut, KraftProtocolError) as e:
            return f"leader {view.controller_id} at {address[0]}:{address[1]}: {e}"
        return view, version, body

    async def describe_quorum(self) -> tuple[str, QuorumInfo]:
        """The cluster id and the leader's DescribeQuorum answer, retried
        while the leader is unknown or moves."""

        def build(version: int) -> dq_req.DescribeQuorumRequest:
            return dq_req.DescribeQuorumRequest(topics=[dq_req.TopicData(
                topic_name=METADATA_TOPIC, partitions=[dq_req.PartitionData(partition_index=METADATA_PARTITION)])])

        async def attempt() -> tuple[str, QuorumInfo] | str:
            sent = await self.send_to_leader(ApiKey.DESCRIBE_QUORUM, build, max_version=2)
            if isinstance(sent, str):
                return sent
            view, _, body = sent
            if body.error_code != ErrorCode.NONE:
                raise ToolError(f"DescribeQuorum failed: {_error_text(body.error_code, body.error_message)}")
            if len(body.topics) != 1 or len(body.topics[0].partitions) != 1:
                raise ToolError("DescribeQuorum answer does not describe exactly one partition")
            partition = body.topics[0].partitions[0]
            if partition.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                return f"node {view.controller_id} answered NOT_LEADER_OR_FOLLOWER (the leader moved)"
            if partition.error_code != ErrorCode.NONE:
                raise ToolError(f"DescribeQuorum failed: "
                                f"{_error_text(partition.error_code, partition.error_message)}")
            return view.cluster_id, quorum_info(body)

        return await self.until_deadline("the metadata quorum's leader", attempt)


def run_tool(main: Callable[[], Awaitable[str]]) -> None:
    """Run ``main`` on trio and print what it returns; a :class:`ToolError`
    (or any other failure) prints one line on stderr and exits 1."""
    # The wire client logs connection trouble at INFO; the tool reports it.
    logging.getLogger("kraft.wire").setLevel(logging.ERROR)
    try:
        output = trio.run(main)
    except ToolError as e:
        click.echo(str(e), err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as e:  # a bug; still no traceback for the user
        click.echo(f"Unexpected error: {type(e).__name__}: {e}", err=True)
        sys.exit(1)
    click.echo(output, nl=False)


# ---------------------------------------------------------------- output, as MetadataQuorumCommand prints it


def _node_string(replica: ReplicaInfo, info: QuorumInfo) -> str:
    """MetadataQuorumCommand's ``Node.toString`` (Kafka 4.0): the directory
    id always, ``null`` for none (a static voter, an observer without one)."""
    text = '{"id": ' + str(replica.replica_id)
    if replica.directory_id == _ZERO_UUID:
        text += ', "directoryId": null'
    else:
        text += ', "directoryId": "' + uuid_to_kafka(replica.directory_id) + '"'
    endpoints = info.nodes.get(replica.replica_id, ())
    if endpoints:
        # RaftVoterEndpoint.toString: IPv6 hosts in brackets.
        text += ', "endpoints": [' + ", ".join(
            f'"{name}://{"[" + host + "]" if ":" in host else host}:{port}"' for name, host, port in endpoints) + "]"
    return text + "}"


def _replicas_string(replicas: Sequence[ReplicaInfo], info: QuorumInfo) -> str:
    return "[" + ", ".join(_node_string(r, info) for r in replicas) + "]"


def _leader_of(info: QuorumInfo) -> ReplicaInfo:
    for voter in info.voters:
        if voter.replica_id == info.leader_id:
            return voter
    raise ToolError(f"The leader {info.leader_id} is not among the current voters "
                    f"{[v.replica_id for v in info.voters]}")


def format_status(cluster_id: str, info: QuorumInfo) -> str:
    """``describe --status``, exactly as Kafka prints it."""
    leader = _leader_of(info)
    # Stream.min keeps the first of equal elements.
    max_lag = min(info.voters, key=lambda v: v.log_end_offset)
    max_follower_lag = leader.log_end_offset - max_lag.log_end_offset
    if max_lag is leader:
        max_follower_lag_time_ms = 0
    elif leader.last_caught_up_ms is not None and max_lag.last_caught_up_ms is not None:
        max_follower_lag_time_ms = leader.last_caught_up_ms - max_lag.last_caught_up_ms
    else:
        max_follower_lag_time_ms = -1
    return (
        f"ClusterId:              {cluster_id}\n"
        f"LeaderId:               {info.leader_id}\n"
        f"LeaderEpoch:            {info.leader_epoch}\n"
        f"HighWatermark:          {info.high_watermark}\n"
        f"MaxFollowerLag:         {max_follower_lag}\n"
        f"MaxFollowerLagTimeMs:   {max_follower_lag_time_ms}\n"
        f"CurrentVoters:          {_replicas_string(info.voters, info)}\n"
        f"CurrentObservers:       {_replicas_string(info.observers, info)}\n"
    )


def _relative_ms(timestamp_ms: int, what: str, now_ms: int) -> int:
    """MetadataQuorumCommand.relativeTimeMs."""
    if not 0 < timestamp_ms <= now_ms:
        raise ToolError("Error while computing relative time, possible drift in system clock.\n"
                        f"Current timestamp is {now_ms}, {what} timestamp is {timestamp_ms}")
    return now_ms - timestamp_ms


def _timestamp_cell(value: int | None, what: str, human_readable: bool, now_ms: Callable[[], int]) -> str:
    if value is None:
        return "-1"
    if human_readable:
        return f"{_relative_ms(value, what, now_ms())} ms ago"
    return str(value)


_REPLICATION_HEADERS = ("NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp",
                        "LastCaughtUpTimestamp", "Status")


def format_replication(info: QuorumInfo, human_readable: bool = False,
                       now_ms: Callable[[], int] = lambda: int(time.time() * 1000)) -> str:
    """``describe --replication``, as Kafka's ``ToolsUtils.prettyPrintTable``
    prints it: each cell left-aligned to its column's width, then a tab."""
    leader = _leader_of(info)
    tagged = [(leader, "Leader")]
    tagged += [(v, "Follower") for v in info.voters if v.replica_id != info.leader_id]
    tagged += [(o, "Observer") for o in info.observers]
    rows = [[
        str(r.replica_id),
        uuid_to_kafka(r.directory_id),
        str(r.log_end_offset),
        str(leader.log_end_offset - r.log_end_offset),
        _timestamp_cell(r.last_fetch_ms, "last fetch", human_readable, now_ms),
        _timestamp_cell(r.last_caught_up_ms, "last caught up", human_readable, now_ms),
        status,
    ] for r, status in tagged]
    widths = [max([len(h)] + [len(row[i]) for row in rows]) for i, h in enumerate(_REPLICATION_HEADERS)]
    lines = ["".join(cell.ljust(w) + "\t" for cell, w in zip(row, widths))
             for row in [list(_REPLICATION_HEADERS), *rows]]
    return "".join(line + "\n" for line in lines)


# ---------------------------------------------------------------- commands


@click.group("quorum")
@click.option("--bootstrap-server", metavar="HOST:PORT[,...]",
              help="A comma-separated list of host:port pairs to use for establishing the connection to the "
                   "Kafka cluster (brokers; a kraft node answers as its leader).")
@click.option("--bootstrap-controller", metavar="HOST:PORT[,...]",
              help="A comma-separated list of host:port pairs to use for establishing the connection to the "
                   "controllers.")
@click.option("--command-config", type=click.Path(path_type=Path, dir_okay=False),
              help="Property file containing configs to be passed to the admin client "
                   "(default.api.timeout.ms, request.timeout.ms, client.id, security.protocol, sasl.mechanism, "
                   "sasl.jaas.config, ssl.*).")
@click.pass_context
def quorum_group(ctx: click.Context, bootstrap_server: str | None, bootstrap_controller: str | None,
                 command_config: Path | None) -> None:
    """Describe (and, with KIP-853, change) the KRaft metadata quorum:
    kafka-metadata-quorum.sh for kraft."""
    ctx.obj = QuorumToolOptions(bootstrap_server, bootstrap_controller, command_config)


@quorum_group.command("describe")
@click.option("--status", is_flag=True,
              help="A short summary of the quorum status and the other provides detailed information about the "
                   "status of replication.")
@click.option("--replication", is_flag=True, help="Detailed information about the status of replication")
@click.option("--human-readable", is_flag=True, help="Human-readable output")
@click.option("--state-file", type=click.Path(path_type=Path, dir_okay=False),
              help="kraft: with --status, where `kraft quorum reassign` keeps its state (default "
                   ".kraft-reassignment-<cluster id>.json in the current directory); a reassignment in progress "
                   "is shown after Kafka's fields.")
@click.pass_obj
def describe_command(options: QuorumToolOptions, status: bool, replication: bool, human_readable: bool,
                     state_file: Path | None) -> None:
    """Describe the metadata quorum info."""
    if status and replication:
        _fail("Only one of --status or --replication should be specified with describe sub-command")
    if not status and not replication:
        _fail("One of --status or --replication must be specified with describe sub-command")
    if status and human_readable:
        _fail("The option --human-readable is only supported along with --replication")
    try:
        bootstrap, settings = options.resolve()
    except ToolError as e:
        _fail(str(e))

    async def main() -> str:
        from kraft.tools.quorum_witness import format_witnesses, witness_reasons

        async with AdminSession(bootstrap, settings) as session:
            cluster_id, info = await session.describe_quorum()
            # kraft: which voters are witnesses (tools/quorum_witness.py).
            witnesses = await witness_reasons(session, info) if status else {}
        if status:
            # Kafka's lines, then (kraft) the witnesses and a KIP-642
            # reassignment in progress: nothing more otherwise, so the output
            # stays Kafka's.
            saved = load_reassignment_state(_state_path(state_file, cluster_id), cluster_id)
            progress = None if saved is None else reassignment_progress(quorum_view(info), saved)
            extra = "" if progress is None else format_reassignment(progress)
            return format_status(cluster_id, info) + format_witnesses(witnesses) + extra
        return format_replication(info, human_readable)

    run_tool(main)


def _fail(message: str) -> NoReturn:
    click.echo(message, err=True)
    sys.exit(1)


# ---------------------------------------------------------------- KIP-853 voter changes and KIP-642 reassignment
# (add-controller / remove-controller as kafka-metadata-quorum.sh has them;
# reassign drives kraft/node/reconfig.py's planner)

#: Errors after which the admin client tries again until its deadline (Kafka's
#: admin client retries RetriableExceptions: REQUEST_TIMED_OUT is one, and a
#: moved leader is found again).
_RETRIABLE_VOTER_ERRORS = frozenset({
    ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.BROKER_NOT_AVAILABLE,
    ErrorCode.NOT_CONTROLLER,
})


@dataclass(frozen=True, slots=True)
class ControllerIdentity:
    """What add-controller reads from the new controller's own configuration
    (``--command-config``) and its ``meta.properties``."""

    node_id: int
    directory_id: uuid.UUID
    endpoints: tuple[tuple[str, str, int], ...]


def controller_identity(path: Path) -> ControllerIdentity:
    """Kafka's MetadataQuorumCommand.getControllerId / getMetadataDirectoryId /
    getControllerAdvertisedListeners, with its messages."""
    from kraft.config import parse_listeners
    from kraft.records.errors import StateFileError
    from kraft.records.state_files import MetaProperties

    try:
        props = load_properties(path)
    except ConfigError as e:
        raise ToolError(str(e)) from None
    if "node.id" not in props:
        raise ToolError("node.id not found in configuration file. Is this a valid controller configuration file?")
    try:
        node_id = int(props["node.id"].strip())
    except ValueError:
        raise ToolError(f"node.id is not an integer in configuration file: {props['node.id']!r}") from None
    if node_id < 0:
        raise ToolError("node.id was negative in configuration file. Is this a valid controller configuration file?")
    if "controller" not in props.get("process.roles", ""):
        raise ToolError("process.roles did not contain 'controller' in configuration file. "
                        "Is this a valid controller configuration file?")
    if props.get("metadata.log.dir", "").strip():
        directory = props["metadata.log.dir"].strip()
    elif props.get("log.dirs", "").strip():
        directory = props["log.dirs"].split(",")[0].strip()
    else:
        raise ToolError("Neither metadata.log.dir nor log.dirs were found. Is this a valid controller "
                        "configuration file?")
    meta_path = Path(directory) / "meta.properties"
    try:
        meta = MetaProperties.read(meta_path)
    except (StateFileError, OSError):
        raise ToolError(f"Unable to read meta.properties from {directory}") from None
    if meta.directory_id is None:
        raise ToolError(f"No directory id found in {directory}")
    try:
        listeners = {e.name: e for e in parse_listeners(props.get("listeners", ""), "listeners")}
        listeners.update({e.name: e for e in parse_listeners(props.get("advertised.listeners", ""),
                                                            "advertised.listeners")})
    except ConfigError as e:
        raise ToolError(str(e)) from None
    if "controller.listener.names" not in props:
        raise ToolError("controller.listener.names was not found. Is this a valid controller configuration file?")
    endpoints = []
    for name in (n.strip().upper() for n in props["controller.listener.names"].split(",") if n.strip()):
        e = listeners.get(name)
        if e is None:
            raise ToolError(f"Cannot find information about controller listener name: {name}")
        endpoints.append((e.name, e.host or "localhost", e.port))
    return ControllerIdentity(node_id, meta.directory_id, tuple(endpoints))


def _endpoint_text(endpoints: Sequence[tuple[str, str, int]]) -> str:
    return ", ".join(f"{name}://{'[' + host + ']' if ':' in host else host}:{port}" for name, host, port in endpoints)


async def send_voter_change(session: AdminSession, api: ApiKey, build: Callable[[str, int], Any]) -> tuple[int, str | None]:
    """Send AddRaftVoter / RemoveRaftVoter to the leader once (``build``
    gets the cluster id and the version): (error code, message). Where
    there is no leader to send it to, the reason as the message and
    ``ErrorCode.NOT_LEADER_OR_FOLLOWER``."""
    view = await session.describe_cluster()
    address = view.leader_address
    if address is None:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER, "no leader is known for the metadata quorum (controllerId -1)"
    try:
        _, body = await session.request(address, api, lambda v: build(view.cluster_id, v))
    except NoCommonVersion as e:
        raise ToolError(str(e)) from None
    except (ConnectionFailed, RequestTimedOut, KraftProtocolError) as e:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER, f"leader {view.controller_id} at {address[0]}:{address[1]}: {e}"
    return body.error_code, body.error_message


async def voter_change_until_done(session: AdminSession, what: str, api: ApiKey,
                                  build: Callable[[str, int], Any]) -> None:
    """One voter change, retried as Kafka's admin client retries it; raises
    :class:`ToolError` with Kafka's error name and message on a refusal."""

    async def attempt() -> bool | str:
        code, message = await send_voter_change(session, api, build)
        if code == ErrorCode.NONE:
            return True
        if code in _RETRIABLE_VOTER_ERRORS:
            return _error_text(code, message)
        raise ToolError(_error_text(code, message))

    await session.until_deadline(what, attempt)


def _add_request(identity: ControllerIdentity, timeout_ms: int) -> Callable[[str, int], Any]:
    from kraft.messages.generated import add_raft_voter_request as add_req

    def build(cluster_id: str, version: int) -> Any:
        return add_req.AddRaftVoterRequest(
            cluster_id=cluster_id, timeout_ms=timeout_ms, voter_id=identity.node_id,
            voter_directory_id=identity.directory_id,
            listeners=[add_req.Listener(name=n, host=h, port=p) for n, h, p in identity.endpoints])

    return build


def _remove_request(node_id: int, directory_id: uuid.UUID) -> Callable[[str, int], Any]:
    from kraft.messages.generated import remove_raft_voter_request as remove_req

    def build(cluster_id: str, version: int) -> Any:
        return remove_req.RemoveRaftVoterRequest(cluster_id=cluster_id, voter_id=node_id,
                                                 voter_directory_id=directory_id)

    return build


@quorum_group.command("add-controller")
@click.option("--dry-run", is_flag=True, help="True if we should print what would be done, but not do it.")
@click.pass_obj
def add_controller_command(options: QuorumToolOptions, dry_run: bool) -> None:
    """Add a controller to the KRaft controller cluster (its configuration
    is the --command-config file)."""
    try:
        bootstrap, settings = options.resolve()
        if options.command_config is None:
            raise ToolError("You must supply the configuration file of the controller you are adding when using "
                            "add-controller.")
        identity = controller_identity(options.command_config)
    except ToolError as e:
        _fail(str(e))

    async def main() -> str:
        if not dry_run:
            async with AdminSession(bootstrap, settings) as session:
                await voter_change_until_done(session, f"controller {identity.node_id} to be added",
                                              ApiKey.ADD_RAFT_VOTER,
                                              _add_request(identity, settings.request_timeout_ms))
        prefix = "DRY RUN of adding" if dry_run else "Added"
        return (f"{prefix} controller {identity.node_id} with directory id {uuid_to_kafka(identity.directory_id)}"
                f" and endpoints: {_endpoint_text(identity.endpoints)}\n")

    run_tool(main)


@quorum_group.command("remove-controller")
@click.option("--controller-id", "-i", type=int, required=True, help="The id of the controller to remove.")
@click.option("--controller-directory-id", "-d", required=True, help="The directory ID of the controller to remove.")
@click.option("--dry-run", is_flag=True, help="True if we should print what would be done, but not do it.")
@click.pass_obj
def remove_controller_command(options: QuorumToolOptions, controller_id: int, controller_directory_id: str,
                              dry_run: bool) -> None:
    """Remove a controller from the KRaft controller cluster."""
    from kraft.messages.json_form import uuid_from_kafka

    try:
        bootstrap, settings = options.resolve()
        if controller_id < 0:
            raise ToolError(f"Invalid negative --controller-id: {controller_id}")
        try:
            directory_id = uuid_from_kafka(controller_directory_id)
        except ValueError as e:
            raise ToolError(f"Failed to parse --controller-directory-id: {e}") from None
    except ToolError as e:
        _fail(str(e))

    async def main() -> str:
        if not dry_run:
            async with AdminSession(bootstrap, settings) as session:
                await voter_change_until_done(session, f"controller {controller_id} to be removed",
                                              ApiKey.REMOVE_RAFT_VOTER, _remove_request(controller_id, directory_id))
        # Kafka's printf("%s KRaft controller ...", "Removed ") has two spaces.
        prefix = "DRY RUN of removing " if dry_run else "Removed "
        return f"{prefix} KRaft controller {controller_id} with directory id {uuid_to_kafka(directory_id)}\n"

    run_tool(main)


def quorum_view(info: QuorumInfo, now_ms: int | None = None) -> Any:
    """The planner's :class:`kraft.node.reconfig.QuorumView` of a DescribeQuorum answer."""
    from kraft.node.reconfig import QuorumView, Replica

    def replica(r: ReplicaInfo) -> Replica:
        return Replica(r.replica_id, None if r.directory_id == _ZERO_UUID else r.directory_id,
                       r.log_end_offset, r.last_fetch_ms, r.last_caught_up_ms)

    return QuorumView(info.leader_id, info.high_watermark, tuple(replica(v) for v in info.voters),
                      tuple(replica(o) for o in info.observers), dict(info.nodes),
                      int(time.time() * 1000) if now_ms is None else now_ms)


# A reassignment's state file (JSON) is written by `reassign` when it starts
# and removed when it completes: {"cluster_id", "original", "target"} with the
# voter lists as `reassign --voters` takes them (id:directory-id,...), and
# "endpoints" {id: [[listener, host, port], ...]} of the target voters whose
# listeners were given, so a resumed run or `describe --status` knows them.


def load_reassignment_state(path: Path, cluster_id: str) -> dict[str, Any] | None:
    """The saved reassignment of ``cluster_id`` at ``path``; None when there
    is none (no file, another cluster's, or unreadable -- said on stderr)."""
    import json

    if not path.exists():
        return None
    try:
        saved = json.loads(path.read_text())
        if not isinstance(saved, dict) or not isinstance(saved.get("target"), str):
            raise ValueError("no target voters")
    except (OSError, ValueError) as e:
        click.echo(f"Ignoring the reassignment state in {path}: {e}", err=True)
        return None
    if saved.get("cluster_id", cluster_id) != cluster_id:
        return None
    return saved


def saved_endpoints(saved: dict[str, Any]) -> dict[int, Any]:
    """The target voters' listeners a state file holds, as ``reassign``'s
    ``known`` controllers (:class:`kraft.node.reconfig.TargetVoter` by id)."""
    from kraft.node.reconfig import TargetVoter

    out = {}
    for key, listeners in (saved.get("endpoints") or {}).items():
        try:
            node_id = int(key)
            endpoints = tuple((str(n), str(h), int(p)) for n, h, p in listeners)
        except (TypeError, ValueError):
            continue
        out[node_id] = TargetVoter(node_id, None, endpoints)
    return out


@dataclass(frozen=True, slots=True)
class ReassignmentProgress:
    """Where a KIP-642 reassignment stands (``describe --status``)."""

    target: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]
    #: The next single-voter change, or why there is none yet.
    step: str


def reassignment_progress(view: Any, saved: dict[str, Any]) -> ReassignmentProgress | None:
    """The progress of the saved reassignment in ``view`` (a
    :class:`kraft.node.reconfig.QuorumView`); None once the voter set is the
    target (the reassignment is complete, whether or not its state file was
    removed yet)."""
    from kraft.node import reconfig

    try:
        target = reconfig.parse_target(saved["target"])
    except reconfig.ReassignError as e:
        click.echo(f"Ignoring the reassignment state: {e}", err=True)
        return None
    ids = tuple(t.node_id for t in target)
    try:
        resolved = reconfig.resolve_target(target, view, saved_endpoints(saved))
        plan = reconfig.plan_step(view, resolved)
    except reconfig.ReassignError as e:
        return ReassignmentProgress(ids, (), (), f"blocked: {e}")
    if plan.done:
        return None
    step = str(plan.step) if plan.step is not None else (plan.waiting or "waiting")
    return ReassignmentProgress(ids, tuple(sorted(i for i, _ in plan.adding)),
                                tuple(sorted(i for i, _ in plan.removing)), step)


def format_reassignment(progress: ReassignmentProgress) -> str:
    """The lines ``describe --status`` adds after Kafka's, aligned as Kafka's are."""

    def ids(values: Sequence[int]) -> str:
        return "[" + ", ".join(str(i) for i in values) + "]"

    return (
        f"ReassignmentTarget:     {ids(progress.target)}\n"
        f"ReassignmentAdding:     {ids(progress.adding)}\n"
        f"ReassignmentRemoving:   {ids(progress.removing)}\n"
        f"ReassignmentStep:       {progress.step}\n"
    )


class _SessionReassignClient:
    """kraft/node/reconfig.py's ReassignClient over an AdminSession."""

    def __init__(self, session: AdminSession) -> None:
        self.session = session
        self.cluster_id: str | None = None

    async def describe(self) -> Any:
        cluster_id, info = await self.session.describe_quorum()
        self.cluster_id = cluster_id
        return quorum_view(info)

    async def apply(self, step: Any) -> tuple[str, str | None]:
        if step.kind == "add":
            identity = ControllerIdentity(step.node_id, step.directory_id, step.endpoints)
            code, message = await send_voter_change(self.session, ApiKey.ADD_RAFT_VOTER,
                                                    _add_request(identity, self.session.settings.request_timeout_ms))
        else:
            code, message = await send_voter_change(self.session, ApiKey.REMOVE_RAFT_VOTER,
                                                    _remove_request(step.node_id, step.directory_id))
        return ErrorCode.name_of(code), message


def _voters_text(voters: Sequence[Any]) -> str:
    return "[" + ", ".join(f"{v.node_id}:{uuid_to_kafka(v.directory_id)}" if v.directory_id else str(v.node_id)
                           for v in voters) + "]"


def _state_path(state_file: Path | None, cluster_id: str) -> Path:
    return state_file if state_file is not None else Path(f".kraft-reassignment-{cluster_id}.json")


@quorum_group.command("reassign")
@click.option("--voters", "voters_text", metavar="ID[:DIRECTORY-ID],...",
              help="The voters the quorum should end with: node ids, or id:directory-id, or "
                   "id@host:port[:directory-id] for a controller whose configuration is not given.")
@click.option("--controller-config", "controller_configs", multiple=True,
              type=click.Path(path_type=Path, dir_okay=False),
              help="The configuration file of a controller to add (its id, directory id and listeners); repeatable.")
@click.option("--cancel", is_flag=True, help="Go back to the voters the running reassignment started from.")
@click.option("--status", is_flag=True, help="Show the reassignment in progress and the next step; change nothing.")
@click.option("--state-file", type=click.Path(path_type=Path, dir_okay=False),
              help="Where the reassignment remembers where it started (for --cancel and --status); default "
                   ".kraft-reassignment-<cluster id>.json in the current directory.")
@click.option("--timeout-ms", type=click.IntRange(min=1), default=300_000, show_default=True,
              help="How long the whole reassignment may take.")
@click.pass_obj
def reassign_command(options: QuorumToolOptions, voters_text: str | None, controller_configs: tuple[Path, ...],
                     cancel: bool, status: bool, state_file: Path | None, timeout_ms: int) -> None:
    """Move the quorum to another voter set, one voter at a time (KIP-642 on
    KIP-853's AddRaftVoter/RemoveRaftVoter): new voters are added once caught
    up, old ones removed, the leader last. Run the same command again to
    resume after any crash."""
    import dataclasses
    import json

    from kraft.node import reconfig

    if sum(1 for x in (voters_text is not None, cancel, status) if x) != 1:
        _fail("Exactly one of --voters, --cancel or --status must be given")
    try:
        bootstrap, settings = options.resolve()
        settings = dataclasses.replace(settings, api_timeout_ms=timeout_ms)
        known = {}
        for path in controller_configs:
            identity = controller_identity(path)
            known[identity.node_id] = reconfig.TargetVoter(identity.node_id, identity.directory_id,
                                                           identity.endpoints)
        target = reconfig.parse_target(voters_text) if voters_text is not None else None
    except (ToolError, reconfig.ReassignError) as e:
        _fail(str(e))

    async def main() -> str:
        lines: list[str] = []

        def report(line: str) -> None:
            click.echo(line)

        async with AdminSession(bootstrap, settings) as session:
            client = _SessionReassignClient(session)
            view = await client.describe()
            assert client.cluster_id is not None
            path = _state_path(state_file, client.cluster_id)
            saved = json.loads(path.read_text()) if path.exists() else None
            if saved is not None:
                for node_id, hint in saved_endpoints(saved).items():
                    known.setdefault(node_id, hint)
            goal = target
            if status or cancel:
                if saved is None:
                    if status:
                        return f"No reassignment in progress. Voters: {_voters_text(view.voters)}\n"
                    raise ToolError(f"No reassignment to cancel ({path} does not exist)")
                origin = reconfig.parse_target(saved["original"])
                goal = origin if cancel else reconfig.parse_target(saved["target"])
            assert goal is not None
            try:
                resolved = reconfig.resolve_target(goal, view, known)
                plan = reconfig.plan_step(view, resolved)
            except reconfig.ReassignError as e:
                raise ToolError(str(e)) from None
            if status:
                step = plan.step or (plan.waiting or "")
                return (f"Reassignment from {saved['original']} to {saved['target']}\n"
                        f"CurrentVoters: {_voters_text(view.voters)}\n"
                        f"Adding:        {[f'{i}:{uuid_to_kafka(d)}' for i, d in plan.adding]}\n"
                        f"Removing:      {[f'{i}:{uuid_to_kafka(d) if d else None}' for i, d in plan.removing]}\n"
                        f"Next:          {'done' if plan.done else step}\n")
            if not cancel:
                original = saved["original"] if saved is not None else ",".join(
                    f"{v.node_id}:{uuid_to_kafka(v.directory_id)}" if v.directory_id else str(v.node_id)
                    for v in view.voters)
                goal_text = ",".join(f"{t.node_id}:{uuid_to_kafka(t.directory_id)}" for t in resolved)
                endpoints = {str(t.node_id): [list(e) for e in t.endpoints] for t in resolved if t.endpoints}
                path.write_text(json.dumps({"cluster_id": client.cluster_id, "original": original,
                                            "target": goal_text, "endpoints": endpoints}) + "\n")
            report(f"Reassigning voters {_voters_text(view.voters)} -> {_voters_text(resolved)}")
            try:
                final = await reconfig.drive(client, goal, known=known, report=report, pause=trio.sleep)
            except reconfig.ReassignError as e:
                raise ToolError(str(e)) from None
            except trio.TooSlowError:
                raise
            path.unlink(missing_ok=True)
            lines.append(f"Reassignment complete. CurrentVoters: {_voters_text(final.voters)}\n")
        return "".join(lines)

    def main_bounded() -> Callable[[], Awaitable[str]]:
        async def run() -> str:
            with trio.move_on_after(timeout_ms / 1000) as scope:
                return await main()
            assert scope.cancelled_caught
            raise ToolError(f"Timed out after {timeout_ms} ms: run the same command again to resume "
                            "the reassignment")
        return run

    run_tool(main_bounded())
