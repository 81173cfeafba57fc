"""``kraft doctor``: name what is wrong with a KRaft quorum, one line per
finding (severity, code, what, evidence, fix), or ``--json``.

    kraft doctor --bootstrap-controller HOST:PORT[,HOST:PORT...]     # ask the live quorum
    kraft doctor --dir /var/lib/kraft/meta --config server.properties  # read directories offline

Online, every address of the bootstrap list and then every voter the
quorum reports is asked ApiVersions, DescribeCluster (controllers) and
DescribeQuorum -- Kafka's public RPCs, so a real Kafka quorum is checked
the same way (:mod:`kraft.doctor.live`). Offline, directories and configs
are read without writing (:mod:`kraft.doctor.local`). Both can be given at
once. Exit status: 0 healthy, 1 some finding is an error, 10 warnings only;
a usage error exits 2 as click's do, a tool failure (unreadable
--command-config) prints one line and exits 1.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from kraft.admin_client.admin import AdminSession
    from kraft.doctor.live import NodeAnswer

__all__ = ["doctor_command", "gather"]


async def _probe(session: AdminSession, host: str, port: int, node_id: int | None,
                 known: dict[int, tuple[str, int]]) -> NodeAnswer:
    """One address's answers as a :class:`kraft.doctor.live.NodeAnswer`; the
    controllers it lists (id -> address) are added to ``known``."""
    from kraft.controller.describe_cluster_rpc import (
        ENDPOINT_TYPE_CONTROLLER,
        ClusterView,
        VersionTooOld,
        cluster_view,
        describe_cluster_request,
    )
    from kraft.admin_client.admin_features import api_versions
    from kraft.doctor.live import LeaderAnswer, NodeAnswer
    from kraft.messages.errors import KraftProtocolError
    from kraft.raft.rpcs.describe_quorum_rpc import DUPLICATE_NOTE, QuorumAnswer
    from kraft.wire.apis import ApiKey
    from kraft.wire.network_client import PeerClientError
    from kraft.wire.errors import ErrorCode

    address = (host, port)
    refused: list[str] = []
    cluster: ClusterView | None = None
    quorum: QuorumAnswer
    try:
        _, versions = await api_versions(session, address)
        kraft_version = next((f.max_version_level for f in versions.finalized_features or ()
                              if f.name == "kraft.version"), 0)
        # Kafka's controller wants ALTER on CLUSTER for DescribeCluster and
        # DESCRIBE for DescribeQuorum: a refusal leaves the node reachable.
        _, described = await session.request(address, ApiKey.DESCRIBE_CLUSTER,
                                             describe_cluster_request(ENDPOINT_TYPE_CONTROLLER))
        if described.error_code != ErrorCode.NONE:
            refused.append(f"DescribeCluster: {ErrorCode.name_of(described.error_code)}")
        else:
            cluster = cluster_view(described)
            for node, node_address in cluster.nodes.items():
                known.setdefault(node, node_address)
        _, quorum = await session.quorum_answer(address)
        if quorum.error_code not in (ErrorCode.NONE, ErrorCode.NOT_LEADER_OR_FOLLOWER):
            refused.append(f"DescribeQuorum: {ErrorCode.name_of(quorum.error_code)}")
    except (PeerClientError, KraftProtocolError, VersionTooOld, OSError) as e:
        return NodeAnswer(host, port, node_id, error=str(e))
    leader = None
    epoch = None
    if quorum.partition_error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER and quorum.leader_epoch > 0:
        epoch = quorum.leader_epoch
    info = quorum.info
    if info is not None:
        # The leader's fetch timestamps are compared with when the answer came.
        leader = LeaderAnswer(info.leader_epoch, dataclasses.replace(info, now_ms=int(time.time() * 1000)))
        epoch = info.leader_epoch
        for voter_id, listeners in info.nodes.items():
            if listeners:
                known[voter_id] = (listeners[0][1], listeners[0][2])
    message = quorum.partition_error_message or ""
    duplicates = message[message.index(DUPLICATE_NOTE) + len(DUPLICATE_NOTE):].rstrip(")") \
        if info is not None and DUPLICATE_NOTE in message else None
    if cluster is None:
        return NodeAnswer(host, port, node_id, kraft_version=kraft_version, leader=leader, refused=tuple(refused),
                          epoch=epoch, duplicates=duplicates)
    return NodeAnswer(host, port, node_id, cluster_id=cluster.cluster_id, controller_id=cluster.controller_id,
                      controllers=tuple(sorted(cluster.nodes)), kraft_version=kraft_version,
                      leader=leader, refused=tuple(refused), epoch=epoch, duplicates=duplicates)


async def gather(addresses: tuple[tuple[str, int], ...], settings: Any) -> list[Any]:
    """Ask the bootstrap addresses, then every voter they name that was not
    asked yet; one :class:`~kraft.doctor.live.NodeAnswer` per address."""
    import dataclasses

    import trio

    from kraft.admin_client.admin import ENDPOINT_TYPE_CONTROLLER, AdminSession, Bootstrap

    known: dict[int, tuple[str, int]] = {}
    answers: dict[tuple[str, int], Any] = {}

    async def ask(address: tuple[str, int], node_id: int | None) -> None:
        answers[address] = await _probe(session, address[0], address[1], node_id, known)

    async with AdminSession(Bootstrap(addresses, ENDPOINT_TYPE_CONTROLLER), settings) as session:
        async with trio.open_nursery() as nursery:
            for address in addresses:
                nursery.start_soon(ask, address, None)
        # The voters the quorum (or, without a leader, DescribeCluster) names.
        voters: set[int] = set()
        for a in answers.values():
            if a.leader is not None:
                voters |= {v.node_id for v in a.leader.view.voters}
            elif a.controllers:
                voters |= set(a.controllers)
        by_address = {address: node_id for node_id, address in known.items() if node_id in voters}
        async with trio.open_nursery() as nursery:
            for node_id in sorted(voters):
                endpoint = known.get(node_id)
                if endpoint is not None and endpoint not in answers:
                    nursery.start_soon(ask, endpoint, node_id)
    out = []
    for address in [*addresses, *[a for a in answers if a not in addresses]]:
        a = answers[address]
        if a.node_id is None and address in by_address:
            a = dataclasses.replace(a, node_id=by_address[address])
        out.append(a)
    return out


def _summary(answers: list[Any], directories: int) -> str:
    parts = []
    leaders = [a for a in answers if a.leader is not None]
    if leaders:
        view = leaders[0].leader.view
        parts.append(f"leader {view.leader_id} in epoch {leaders[0].leader.epoch}, "
                     f"voters {sorted(v.node_id for v in view.voters)}, high watermark {view.high_watermark}")
    if answers:
        parts.append(f"{sum(1 for a in answers if a.error is None)} of {len(answers)} controllers answered")
    if directories:
        parts.append(f"{directories} director{'y' if directories == 1 else 'ies'} read")
    return "; ".join(parts)


@click.command("doctor")
@click.option("--bootstrap-controller", metavar="HOST:PORT[,...]",
              help="Controllers to ask (then every voter they name).")
@click.option("--dir", "directories", multiple=True, type=click.Path(path_type=Path, file_okay=False),
              help="A metadata log directory to read offline (repeatable).")
@click.option("--config", "configs", multiple=True, type=click.Path(path_type=Path, dir_okay=False),
              help="A controller's server.properties: its metadata.log.dir is read and checked against it (repeatable).")
@click.option("--command-config", type=click.Path(path_type=Path, dir_okay=False),
              help="Admin client properties (security.protocol, sasl.*, ssl.*, request.timeout.ms).")
@click.option("--max-lag-offsets", type=click.IntRange(min=0), default=10_000, show_default=True,
              help="A replica further behind the leader's log end is lagging.")
@click.option("--max-lag-ms", type=click.IntRange(min=0), default=30_000, show_default=True,
              help="A replica behind the leader that last caught up longer ago is lagging.")
@click.option("--max-bytes-since-snapshot", type=click.IntRange(min=0), default=40 * 1024 * 1024, show_default=True,
              help="More log bytes than this after the latest snapshot: the snapshot is far behind.")
@click.option("--min-free-percent", type=click.FloatRange(0, 100), default=10.0, show_default=True,
              help="Less free disk than this: a warning (below a fifth of it: an error).")
@click.option("--json", "as_json", is_flag=True, help="One JSON document: what was checked, the findings, the status.")
def doctor_command(bootstrap_controller: str | None, directories: tuple[Path, ...], configs: tuple[Path, ...],
                   command_config: Path | None, max_lag_offsets: int, max_lag_ms: int, max_bytes_since_snapshot: int,
                   min_free_percent: float, as_json: bool) -> None:
    """Name what is wrong with a KRaft quorum: one line per finding, with the fix."""
    from kraft.doctor.findings import as_json as findings_json
    from kraft.doctor.findings import EXIT_ERROR, EXIT_HEALTHY, EXIT_WARNING, exit_status, format_line
    from kraft.doctor.local import LocalLimits, local_findings, read_config
    from kraft.doctor.live import LiveLimits, expected_cluster_id, live_findings

    if not bootstrap_controller and not directories and not configs:
        raise click.UsageError("give --bootstrap-controller and/or --dir / --config")
    findings = []
    answers: list[Any] = []
    if bootstrap_controller:
        import logging

        import trio

        from kraft.tools.quorum import QuorumToolOptions, ToolError

        logging.getLogger("kraft.wire").setLevel(logging.ERROR)
        try:
            bootstrap, settings = QuorumToolOptions(None, bootstrap_controller, command_config).resolve()
        except ToolError as e:
            click.echo(str(e), err=True)
            sys.exit(1)
        # Two rounds (bootstrap, then voters) of up to three requests each:
        # the command's deadline must not cut the second round short, or a
        # slow voter would read as unreachable.
        import dataclasses

        settings = dataclasses.replace(settings, api_timeout_ms=max(settings.api_timeout_ms,
                                                                     7 * settings.request_timeout_ms))
        answers = trio.run(gather, bootstrap.addresses, settings)
        findings += live_findings(answers, LiveLimits(max_lag_offsets, max_lag_ms))
    directories_read = 0
    if directories or configs:
        local, facts = local_findings(
            list(directories), [read_config(c) for c in configs],
            LocalLimits(max_bytes_since_snapshot, min_free_percent, min_free_percent / 5),
            expected_cluster_id(answers) if answers else None)
        findings += local
        directories_read = len(facts)  # each directory once, however many times it was named
    checked = {"controllers": [a.address for a in answers], "directories": [str(d) for d in directories],
               "configs": [str(c) for c in configs]}
    if as_json:
        import orjson

        click.echo(orjson.dumps(findings_json(findings, checked)).decode())
    else:
        for f in findings:
            click.echo(format_line(f))
        summary = _summary(answers, directories_read)
        status = exit_status(findings)
        verdict = {EXIT_HEALTHY: "healthy", EXIT_ERROR: "errors found", EXIT_WARNING: "warnings only"}[status]
        click.echo(f"{verdict}: {summary}" if summary else verdict)
    if answers and all(a.error is not None for a in answers):
        # No controller answered at all: the exit-code table's network
        # failure (5), as every tool that asks a quorum (README "Exit codes").
        from kraft.errors import EXIT_NETWORK

        sys.exit(EXIT_NETWORK)
    sys.exit(exit_status(findings))
