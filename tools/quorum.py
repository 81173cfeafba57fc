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
["CONTROLLER://host:port"]}``, no ``directoryId`` for a zero directory id
as Kafka 4.1 prints it -- ``"directoryId": null`` with ``--kafka-version 4.0``
--, an empty endpoint list left out); ``--replication`` prints Kafka's ``prettyPrintTable``:
every cell padded to its column's width and followed by a tab, the leader
first, then the other voters, then the observers.

kraft additions: when some voter is a kraft witness (kraft/raft/witness_policy.py),
``describe --status`` adds a ``Witnesses`` line naming them and why
(:mod:`kraft.tools.quorum_witness`); and while a ``kraft quorum reassign`` (KIP-642) is in
progress -- its state file exists (``--state-file``, by default
``.kraft-reassignment-<cluster id>.json`` in the current directory) and the
voter set is not its target yet -- ``describe --status`` adds
``ReassignmentTarget``, ``ReassignmentAdding``, ``ReassignmentRemoving`` and
``ReassignmentStep`` (the next single-voter change, or why it waits) after
Kafka's lines. Otherwise the output is Kafka's alone.
``describe --json`` prints the leader's answer as one JSON document
derived from the DescribeQuorum model's fields
(:mod:`kraft.tools.structured_output`): a field added to the RPC's unit
(:mod:`kraft.raft.rpcs.describe_quorum_rpc`) is printed without a change here.

Every wait is bounded. ``default.api.timeout.ms`` (10000 here, 60000 in
Kafka's client) bounds the whole command and ``request.timeout.ms`` (5000)
each request; both can be set in ``--command-config`` as for Kafka's tool.
A bootstrap list none of whose addresses accepts a connection fails at once;
a quorum without a leader, or whose leader moves, is retried every 100 ms
(Kafka's ``retry.backoff.ms``) until the command's timeout. Errors print one
line on stderr and exit 1; usage errors exit 2.

The requests are the admin client's (:mod:`kraft.admin_client.admin`:
:class:`~kraft.admin_client.admin.AdminSession` finds the leader and sends it a
request); this module parses the options (:class:`QuorumToolOptions`),
prints what Kafka prints and runs the commands (:func:`run_tool`). Heavy
imports (trio, the node's reassignment planner) happen when a command runs,
so ``kraft quorum --help`` answers at once.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from kraft.admin_client.errors import AdminError
from kraft.kafka_release import LATEST, KafkaRelease
from kraft.tools.kafka_version import current_release, kafka_version_option

if TYPE_CHECKING:
    from kraft.admin_client.admin import AdminSession, AdminSettings, Bootstrap, ControllerIdentity
    from kraft.raft.rpcs.describe_quorum_rpc import QuorumInfo, ReplicaInfo

__all__ = [
    "quorum_group",
    "describe_command",
    "ToolError",
    "QuorumToolOptions",
    "run_tool",
    "format_status",
    "quorum_view",
    "load_reassignment_state",
    "ReassignmentProgress",
    "reassignment_progress",
    "reassignment_plan_lines",
    "format_reassignment",
    "format_replication",
]

#: A failure the tool reports as one message on stderr, exit status 1: the
#: admin client's error type, so its failures and the tool's are one kind.
ToolError = AdminError


# ---------------------------------------------------------------- settings


def _positive_int(props: dict[str, str], key: str, default: int) -> int:
    text = props.get(key)
    if text is None:
        return default
    from kraft.config import ConfigError

    # A bad value is a config error, exit 3 in every tool (Kafka's tools exit 1).
    try:
        value = int(text.strip())
    except ValueError:
        raise ConfigError(f"Invalid value {text} for configuration {key}: Not a number of type INT") from None
    if value <= 0:
        raise ConfigError(f"Invalid value {value} for configuration {key}: Value must be at least 1")
    return value


@dataclass(frozen=True, slots=True)
class QuorumToolOptions:
    """The options of ``kraft quorum`` itself (before the subcommand)."""

    bootstrap_server: str | None
    bootstrap_controller: str | None
    command_config: Path | None

    def resolve(self) -> tuple[Bootstrap, AdminSettings]:
        """Validate: exactly one bootstrap option, a readable command config."""
        from kraft.admin_client.admin import ENDPOINT_TYPE_BROKER, ENDPOINT_TYPE_CONTROLLER, Bootstrap, parse_bootstrap

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
        from kraft.admin_client.admin import DEFAULT_API_TIMEOUT_MS, DEFAULT_REQUEST_TIMEOUT_MS, AdminSettings
        from kraft.config import ConfigError, load_properties
        from kraft.wire.security import SecurityConfigError, client_security_from_properties

        if self.command_config is None:
            return AdminSettings()
        path = self.command_config
        if not path.exists():
            raise ToolError(current_release().missing_command_config.format(path=path))
        try:
            props = load_properties(path)
        except ConfigError as e:
            raise ToolError(str(e)) from None
        try:
            security = client_security_from_properties(props)
        except SecurityConfigError as e:
            raise ConfigError(f"{path}: {e}") from None  # a bad value: exit 3 in every tool
        return AdminSettings(
            security=security,
            api_timeout_ms=_positive_int(props, "default.api.timeout.ms", DEFAULT_API_TIMEOUT_MS),
            request_timeout_ms=_positive_int(props, "request.timeout.ms", DEFAULT_REQUEST_TIMEOUT_MS),
            client_id=props.get("client.id", "kraft-quorum").strip() or "kraft-quorum",
        )




def run_tool(main: Callable[[], Awaitable[str]]) -> None:
    """Run ``main`` on trio and print what it returns; a :class:`ToolError`
    (or any other failure) prints one line on stderr and exits with its
    class's code (:mod:`kraft.errors`: 1 refused, 5 unreachable)."""
    import logging

    import trio

    # The wire client logs connection trouble at INFO; the tool reports it.
    logging.getLogger("kraft.wire").setLevel(logging.ERROR)
    try:
        output = trio.run(main)
    except ToolError as e:
        click.echo(str(e), err=True)
        sys.exit(e.exit_code)  # 1 as Kafka's tools; 5 when no bootstrap server answers
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as e:  # a bug; still no traceback for the user
        click.echo(f"Unexpected error: {type(e).__name__}: {e}", err=True)
        sys.exit(1)
    click.echo(output, nl=False)


# ---------------------------------------------------------------- output, as MetadataQuorumCommand prints it


def _node_string(replica: ReplicaInfo, info: QuorumInfo, release: KafkaRelease) -> str:
    """MetadataQuorumCommand's ``Node.toString``: for a replica without a
    directory id (a static voter, an observer without one) Kafka 4.1 leaves
    the key out, Kafka 4.0 prints ``"directoryId": null``."""
    from kraft.messages.json_form import uuid_to_kafka

    text = '{"id": ' + str(replica.replica_id)
    if replica.directory is None:
        if not release.omits_missing_directory_id:
            text += ', "directoryId": null'
    else:
        text += ', "directoryId": "' + uuid_to_kafka(replica.directory_id) + '"'
    endpoints = info.nodes.get(replica.replica_id, ())
    if endpoints:
        # RaftVoterEndpoint.toString: IPv6 hosts in brackets.
        text += ', "endpoints": [' + ", ".join(
            f'"{name}://{"[" + host + "]" if ":" in host else host}:{port}"' for name, host, port in endpoints) + "]"
    return text + "}"


def _replicas_string(replicas: Sequence[ReplicaInfo], info: QuorumInfo, release: KafkaRelease) -> str:
    return "[" + ", ".join(_node_string(r, info, release) for r in replicas) + "]"


def _leader_of(info: QuorumInfo) -> ReplicaInfo:
    for voter in info.voters:
        if voter.replica_id == info.leader_id:
            return voter
    raise ToolError(f"The leader {info.leader_id} is not among the current voters "
                    f"{[v.replica_id for v in info.voters]}")


def format_status(cluster_id: str, info: QuorumInfo, release: KafkaRelease = LATEST) -> str:
    """``describe --status``, exactly as Kafka ``release`` prints it."""
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
        f"CurrentVoters:          {_replicas_string(info.voters, info, release)}\n"
        f"CurrentObservers:       {_replicas_string(info.observers, info, release)}\n"
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
    from kraft.messages.json_form import uuid_to_kafka

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


@click.group("quorum", short_help="Describe and change a KRaft quorum (kafka-metadata-quorum.sh; alias metadata-quorum).")
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
@kafka_version_option
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
@click.option("--json", "as_json", is_flag=True,
              help="kraft: instead of --status or --replication, the leader's answer as one JSON document: the "
                   "cluster id and every field of the DescribeQuorum model.")
@kafka_version_option
@click.pass_obj
def describe_command(options: QuorumToolOptions, status: bool, replication: bool, human_readable: bool,
                     state_file: Path | None, as_json: bool) -> None:
    """Describe the metadata quorum info."""
    if as_json and (status or replication or human_readable):
        _fail("The option --json is a mode of its own: give it without --status, --replication or --human-readable")
    if status and replication:
        _fail("Only one of --status or --replication should be specified with describe sub-command")
    if not status and not replication and not as_json:
        _fail("One of --status or --replication must be specified with describe sub-command")
    if status and human_readable:
        _fail("The option --human-readable is only supported along with --replication")
    release = current_release()
    try:
        bootstrap, settings = options.resolve()
    except ToolError as e:
        _fail(str(e))

    async def main() -> str:
        from kraft.admin_client.admin import AdminSession
        from kraft.tools.quorum_witness import format_witnesses, witness_reasons
        from kraft.tools.structured_output import as_json as json_document

        async with AdminSession(bootstrap, settings) as session:
            cluster_id, info = await session.describe_quorum()
            # kraft: which voters are witnesses (tools/quorum_witness.py).
            witnesses = await witness_reasons(session, info) if status else {}
        if as_json:
            # The model field by field (tools/structured_output.py): a
            # field added to its unit (kraft/raft/rpcs/describe_quorum_rpc.py)
            # is printed as it is.
            return json_document({"cluster_id": cluster_id, "quorum": info})
        if status:
            # Kafka's lines, then (kraft) the witnesses and a KIP-642
            # reassignment in progress: nothing more otherwise, so the output
            # stays Kafka's.
            saved = load_reassignment_state(_state_path(state_file, cluster_id), cluster_id)
            progress = None if saved is None else reassignment_progress(quorum_view(info), saved)
            extra = "" if progress is None else format_reassignment(progress)
            return format_status(cluster_id, info, release) + format_witnesses(witnesses) + extra
        return format_replication(info, human_readable)

    run_tool(main)


def _fail(message: str) -> NoReturn:
    click.echo(message, err=True)
    sys.exit(1)


# ---------------------------------------------------------------- KIP-853 voter changes and KIP-642 reassignment
# (add-controller / remove-controller as kafka-metadata-quorum.sh has them;
# reassign drives kraft/programs/reconfig.py's planner)


def controller_identity(path: Path) -> ControllerIdentity:
    """Kafka's MetadataQuorumCommand.getControllerId / getMetadataDirectoryId /
    getControllerAdvertisedListeners, with its messages."""
    from kraft.admin_client.admin import ControllerIdentity
    from kraft.config import ConfigError, load_properties, parse_listeners
    from kraft.records.errors import StateFileError
    from kraft.records.state_files import META_PROPERTIES_FILE, MetaProperties

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
    meta_path = Path(directory) / META_PROPERTIES_FILE
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
    endpoints: list[tuple[str, str, int]] = []
    for name in (n.strip().upper() for n in props["controller.listener.names"].split(",") if n.strip()):
        listener = listeners.get(name)
        if listener is None:
            raise ToolError(f"Cannot find information about controller listener name: {name}")
        endpoints.append((listener.name, listener.host or "localhost", listener.port))
    return ControllerIdentity(node_id, meta.directory_id, tuple(endpoints))


def _endpoint_text(endpoints: Sequence[tuple[str, str, int]]) -> str:
    return ", ".join(f"{name}://{'[' + host + ']' if ':' in host else host}:{port}" for name, host, port in endpoints)


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
        from kraft.admin_client.admin import AdminSession, add_voter_request, voter_change_until_done
        from kraft.messages.json_form import uuid_to_kafka

        if not dry_run:
            async with AdminSession(bootstrap, settings) as session:
                await voter_change_until_done(session, f"controller {identity.node_id} to be added",
                                              add_voter_request(identity, settings.request_timeout_ms))
        prefix = "DRY RUN of adding" if dry_run else "Added"
        return (f"{prefix} controller {identity.node_id} with directory id {uuid_to_kafka(identity.directory_id)}"
                f" and endpoints: {_endpoint_text(identity.endpoints)}\n")

    run_tool(main)


@quorum_group.command("remove-controller")
@click.option("--controller-id", "-i", type=int, required=True, help="The id of the controller to remove.")
@click.option("--controller-directory-id", "-d", required=True, help="The directory ID of the controller to remove.")
@click.option("--dry-run", is_flag=True, help="True if we should print what would be done, but not do it.")
@click.option("--unregister", is_flag=True,
              help="If set, also unregister the controller after successfully removing it from the voter set.")
@click.pass_obj
def remove_controller_command(options: QuorumToolOptions, controller_id: int, controller_directory_id: str,
                              dry_run: bool, unregister: bool) -> None:
    """Remove a controller from the KRaft controller cluster."""
    from kraft.messages.json_form import uuid_from_kafka

    release = current_release()
    if unregister and not release.unregisters_controller:
        raise click.UsageError(f"--unregister: Kafka {release.name}'s remove-controller has no such option "
                               f"(KIP-1312, Kafka 4.4 on); name --kafka-version 4.4 or leave it out")
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
        from kraft.messages.json_form import uuid_to_kafka

        removed = release.removed_controller.format(
            action="DRY RUN of removing " if dry_run else "Removed ", controller_id=controller_id,
            directory_id=uuid_to_kafka(directory_id))
        if dry_run:
            lines = [removed, *([f"DRY RUN of unregistering KRaft controller {controller_id}"] if unregister else [])]
            return "".join(line + "\n" for line in lines)
        return await _remove_controller(bootstrap, settings, controller_id, directory_id, unregister, removed)

    run_tool(main)


def _unregister_hint(controller_id: int) -> str:
    return (f". To unregister the controller from the cluster, run "
            f"`kafka-cluster.sh unregister-controller --id {controller_id}`.")


async def _remove_controller(bootstrap: Bootstrap, settings: AdminSettings, controller_id: int, directory_id: Any,
                             unregister: bool, removed: str) -> str:
    """Kafka's ``MetadataQuorumCommand.handleRemoveController``: RemoveRaftVoter,
    then (``--unregister``) UnregisterController. Its lines go out as each
    step is done: the removal's stays printed when unregistering fails."""
    from kraft.admin_client.admin import AdminSession, remove_voter_request, unregister_controller, voter_change_until_done
    from kraft.admin_client.errors import RefusedError
    from kraft.wire.errors import ErrorCode

    async with AdminSession(bootstrap, settings) as session:
        try:
            await voter_change_until_done(session, f"controller {controller_id} to be removed",
                                          remove_voter_request(controller_id, directory_id))
        except RefusedError as e:
            # MetadataQuorumCommand.removeRaftVoter: with --unregister these two say how to unregister anyway.
            if unregister and e.code in (ErrorCode.UNSUPPORTED_VERSION, ErrorCode.VOTER_NOT_FOUND):
                raise ToolError(f"Failed to remove KRaft voter {controller_id}: {e.message}"
                                + _unregister_hint(controller_id)) from None
            raise
        if not unregister:
            return removed + "\n"
        click.echo(removed)
        try:
            await unregister_controller(session, controller_id)
        except ToolError as e:
            # MetadataQuorumCommand.unregisterController: any failure, the exception's message.
            message = e.message if isinstance(e, RefusedError) else str(e)
            raise ToolError(f"Failed to unregister controller {controller_id}: {message}"
                            + _unregister_hint(controller_id)) from None
    return f"Unregistered KRaft controller {controller_id}\n"


def quorum_view(info: QuorumInfo, now_ms: int | None = None) -> QuorumInfo:
    """The answer as the planner reads it: stamped with when it came (``now_ms``, default now)."""
    import dataclasses

    return dataclasses.replace(info, now_ms=int(time.time() * 1000) if now_ms is None else now_ms)


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
    ``known`` controllers (:class:`kraft.programs.reconfig.TargetVoter` by id)."""
    from kraft.programs.reconfig import TargetVoter

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
    :class:`~kraft.raft.rpcs.describe_quorum_rpc.QuorumInfo` stamped by :func:`quorum_view`); None once the voter set is the
    target (the reassignment is complete, whether or not its state file was
    removed yet)."""
    from kraft.programs import reconfig

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
    """kraft/programs/reconfig.py's ReassignClient over an AdminSession."""

    def __init__(self, session: AdminSession) -> None:
        self.session = session
        self.cluster_id: str | None = None

    async def describe(self) -> Any:
        cluster_id, info = await self.session.describe_quorum()
        self.cluster_id = cluster_id
        return quorum_view(info)

    async def apply(self, step: Any) -> tuple[str, str | None]:
        from kraft.admin_client.admin import ControllerIdentity, add_voter_request, remove_voter_request, send_voter_change
        from kraft.wire.errors import ErrorCode

        if step.kind == "add":
            identity = ControllerIdentity(step.node_id, step.directory_id, step.endpoints)
            code, message = await send_voter_change(
                self.session, add_voter_request(identity, self.session.settings.request_timeout_ms))
        else:
            code, message = await send_voter_change(self.session, remove_voter_request(step.node_id, step.directory_id))
        return ErrorCode.name_of(code), message


def _voters_text(voters: Sequence[Any]) -> str:
    from kraft.messages.json_form import uuid_to_kafka

    # Voters of the answer (a zero directory id is none) or targets (None is none).
    return "[" + ", ".join(f"{v.node_id}:{uuid_to_kafka(v.directory_id)}"
                           if v.directory_id is not None and v.directory_id.int else str(v.node_id)
                           for v in voters) + "]"


def reassignment_plan_lines(view: Any, resolved: Sequence[Any], plan: Any) -> list[str]:
    """What ``reassign`` will do, before it does it: the voters it adds
    (each once caught up) and removes (the leader last), and a warning when
    the quorum would end with an even number of voters (2 tolerate no
    failure, as 1 does; 4 tolerate one, as 3 do)."""
    lines = [f"Plan: voters {_voters_text(view.voters)} -> {_voters_text(resolved)}"]
    if plan.done:
        return [*lines, "  nothing to do: the voters are already the target"]
    if plan.adding:
        lines.append("  add " + ", ".join(str(i) for i, _ in plan.adding) + " (each once it has caught up with the leader)")
    if plan.removing:
        leader = [i for i, _ in plan.removing if i == view.leader_id]
        lines.append("  remove " + ", ".join(str(i) for i, _ in plan.removing)
                     + (f" (the leader, {leader[0]}, last)" if leader else ""))
    n = len(resolved)
    if n % 2 == 0:
        lines.append(f"Warning: the quorum would end with {n} voters, an even number: {n // 2 + 1} must agree, so it "
                     f"tolerates no more failures than {n - 1} voters would ({(n - 1) // 2}). Add or keep one more "
                     "voter, or remove one more.")
    return lines


def _reassignment_session(options: QuorumToolOptions, timeout_ms: int) -> tuple[Bootstrap, AdminSettings]:
    """The admin session's bootstrap and settings for ``reassign``: its
    deadline comes one request after ``--timeout-ms``."""
    import dataclasses

    bootstrap, settings = options.resolve()
    # --timeout-ms bounds the whole run (_bounded_reassignment), which then
    # says how to resume. The session's own deadline comes one request
    # later, so it never ends the run first with a bare request timeout
    # ("timed out after 0 ms") -- on a loaded machine the two raced.
    return bootstrap, dataclasses.replace(settings, api_timeout_ms=timeout_ms + settings.request_timeout_ms)


def _saved_reassignment(path: Path, known: dict[int, Any]) -> dict[str, Any] | None:
    """The state file of a reassignment in progress, if any; the endpoints it
    remembers join ``known`` (a ``--controller-config`` given again wins)."""
    import json

    saved: dict[str, Any] | None = json.loads(path.read_text()) if path.exists() else None
    if saved is not None:
        for node_id, hint in saved_endpoints(saved).items():
            known.setdefault(node_id, hint)
    return saved


def _state_path(state_file: Path | None, cluster_id: str) -> Path:
    return state_file if state_file is not None else Path(f".kraft-reassignment-{cluster_id}.json")


def _known_controllers(controller_configs: tuple[Path, ...]) -> dict[int, Any]:
    """The controllers ``--controller-config`` files describe, by node id."""
    from kraft.programs import reconfig

    known = {}
    for path in controller_configs:
        identity = controller_identity(path)
        known[identity.node_id] = reconfig.TargetVoter(identity.node_id, identity.directory_id, identity.endpoints)
    return known


def _reassignment_status(saved: dict[str, Any], view: Any, plan: Any) -> str:
    """``reassign --status``: where the saved reassignment stands."""
    from kraft.messages.json_form import uuid_to_kafka

    step = plan.step or (plan.waiting or "")
    return (f"Reassignment from {saved['original']} to {saved['target']}\n"
            f"CurrentVoters: {_voters_text(view.voters)}\n"
            f"Adding:        {[f'{i}:{uuid_to_kafka(d)}' for i, d in plan.adding]}\n"
            f"Removing:      {[f'{i}:{uuid_to_kafka(d) if d else None}' for i, d in plan.removing]}\n"
            f"Next:          {'done' if plan.done else step}\n")


def _save_reassignment(path: Path, cluster_id: str, saved: dict[str, Any] | None, view: Any,
                       resolved: Any) -> None:
    """Write the state file a re-run resumes from: the original voters (kept
    from an earlier run), the target and the endpoints of the new voters."""
    import json

    from kraft.messages.json_form import uuid_to_kafka

    original = saved["original"] if saved is not None else ",".join(
        f"{v.node_id}:{uuid_to_kafka(v.directory_id)}" if v.directory is not None else str(v.node_id)
        for v in view.voters)
    goal_text = ",".join(
        f"{t.node_id}:{uuid_to_kafka(t.directory_id)}" if t.directory_id else str(t.node_id)
        for t in resolved)
    endpoints = {str(t.node_id): [list(e) for e in t.endpoints] for t in resolved if t.endpoints}
    path.write_text(json.dumps({"cluster_id": cluster_id, "original": original,
                                "target": goal_text, "endpoints": endpoints}) + "\n")


def _bounded_reassignment(main: Callable[[], Awaitable[str]], timeout_ms: int) -> Callable[[], Awaitable[str]]:
    """``main`` within ``--timeout-ms``; past it, how to resume."""
    import trio

    async def run() -> str:
        with trio.move_on_after(timeout_ms / 1000) as scope:
            return await main()
        assert scope.cancelled_caught
        raise ToolError(f"Timed out after {timeout_ms} ms: run the same command again to resume "
                        "the reassignment")
    return run

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
@click.option("--dry-run", is_flag=True, help="Print the plan (and any warning) and change nothing.")
@click.pass_obj
def reassign_command(options: QuorumToolOptions, voters_text: str | None, controller_configs: tuple[Path, ...],
                     cancel: bool, status: bool, state_file: Path | None, timeout_ms: int, dry_run: bool) -> None:
    """Move the quorum to another voter set, one voter at a time (KIP-642 on
    KIP-853's AddRaftVoter/RemoveRaftVoter): new voters are added once caught
    up, old ones removed, the leader last. Run the same command again to
    resume after any crash."""
    import trio

    from kraft.admin_client.admin import AdminSession
    from kraft.programs import reconfig

    if sum(1 for x in (voters_text is not None, cancel, status) if x) != 1:
        _fail("Exactly one of --voters, --cancel or --status must be given")
    try:
        bootstrap, settings = _reassignment_session(options, timeout_ms)
        known = _known_controllers(controller_configs)
        target = reconfig.parse_target(voters_text) if voters_text is not None else None
    except (ToolError, reconfig.ReassignError) as e:
        _fail(str(e))

    async def main() -> str:
        async with AdminSession(bootstrap, settings) as session:
            client = _SessionReassignClient(session)
            view = await client.describe()
            assert client.cluster_id is not None
            path = _state_path(state_file, client.cluster_id)
            saved = _saved_reassignment(path, known)
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
                assert saved is not None  # no saved reassignment returned above
                return _reassignment_status(saved, view, plan)
            for line in reassignment_plan_lines(view, resolved, plan):
                click.echo(line, err=line.startswith("Warning:"))
            if dry_run:
                return "Dry run: nothing was changed.\n"
            if not cancel:
                _save_reassignment(path, client.cluster_id, saved, view, resolved)
            click.echo(f"Reassigning voters {_voters_text(view.voters)} -> {_voters_text(resolved)}")
            try:
                final = await reconfig.drive(client, goal, known=known, report=click.echo, pause=trio.sleep)
            except reconfig.ReassignError as e:
                raise ToolError(str(e)) from None
            except trio.TooSlowError:
                raise
            path.unlink(missing_ok=True)
        return f"Reassignment complete. CurrentVoters: {_voters_text(final.voters)}\n"

    run_tool(_bounded_reassignment(main, timeout_ms))
