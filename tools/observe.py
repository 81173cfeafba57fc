"""``kraft observe``: follow a running KRaft cluster as an observer.

Without ``--follow``: catch up to the leader's high watermark, print the
metadata image (``--format table``, the default, a summary; ``json`` the
whole image) and exit. With ``--follow``: print every committed record as
it commits, from ``--from-offset`` (default 0) or ``--from-latest``, one
JSON object per line (``--format jsonl``) or a readable table, until
Ctrl-C / SIGTERM (exit status 0). Ctrl-C before the image is printed
exits with 130; an error that stops the observer (another cluster, a data
directory that cannot be used) with a one-line message and 1; no bootstrap
controller accepting a connection within ``--timeout`` (default 10 s),
naming each address, with 5.

The local copy (``--data-dir``, default
``$XDG_STATE_HOME/kraft/observer/<cluster id>``) is in Kafka's layout and
survives restarts: a second run resumes from it.
"""

from __future__ import annotations

import json
import logging
import signal
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING

import click

from kraft.tools.cli_types import TIMEOUT_S

if TYPE_CHECKING:
    # The node, trio and the image are imported when the command runs, so
    # ``kraft observe --help`` answers at once.
    from kraft.image.model import MetadataImage
    from kraft.programs.observer import Observer
    from kraft.wire.security import ClientSecurity

log = logging.getLogger("kraft.observer")

#: Without ``--timeout``: how long the bootstrap servers get to accept a TCP
#: connection before the command gives up on them.
PROBE_TIMEOUT_S = 10.0

__all__ = ["observe_command", "image_summary", "exit_status", "discovery_bounds"]


def _setup_logging(level: str) -> None:
    logging.basicConfig(level=getattr(logging, level.upper(), logging.WARNING),
                        format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)", stream=sys.stderr)


def image_summary(image: MetadataImage, *, cluster_id: str | None = None, leader: str | None = None) -> str:
    """The image as a few readable tables."""
    from kraft.image.model import ConfigResourceType
    from kraft.messages.json_form import uuid_to_kafka

    lines: list[str] = []
    p = image.provenance
    head = f"offset {p.offset} (epoch {p.epoch})"
    if cluster_id:
        head = f"cluster {cluster_id}, " + head
    if leader:
        head += f", leader {leader}"
    lines.append(head)
    levels = image.features.levels()
    lines.append("features: " + (", ".join(f"{k}={v}" for k, v in levels.items()) or "(none)"))
    lines.append("")
    lines.append(f"{'BROKER':>6}  {'EPOCH':>8}  {'FENCED':<6}  {'RACK':<10}  LISTENERS")
    for b in sorted(image.brokers.values(), key=lambda b: b.id):
        listeners = ",".join(f"{e.name}://{e.host}:{e.port}" for e in b.listeners)
        lines.append(f"{b.id:>6}  {b.epoch:>8}  {str(b.fenced).lower():<6}  {b.rack or '-':<10}  {listeners}")
    if image.controllers:
        lines.append("")
        lines.append(f"{'CONTROLLER':>10}  LISTENERS")
        for c in sorted(image.controllers.values(), key=lambda c: c.id):
            lines.append(f"{c.id:>10}  " + ",".join(f"{e.name}://{e.host}:{e.port}" for e in c.listeners))
    lines.append("")
    lines.append(f"{'TOPIC':<40}  {'ID':<22}  {'PARTITIONS':>10}  {'RF':>3}")
    for t in sorted(image.topics.values(), key=lambda t: t.name):
        rf = max((len(p.replicas) for p in t.partitions.values()), default=0)
        lines.append(f"{t.name:<40}  {uuid_to_kafka(t.id):<22}  {len(t.partitions):>10}  {rf:>3}")
    if image.configs:
        lines.append("")
        lines.append("CONFIGS")
        for resource, values in sorted(image.configs.items()):
            name = resource.name or "<default>"
            for key, value in sorted(values.items()):
                lines.append(f"  {ConfigResourceType.name_of(resource.type).lower()} {name}: {key}={value}")
    extra = []
    if image.client_quotas:
        extra.append(f"{len(image.client_quotas)} client quota entities")
    if image.scram:
        extra.append(f"{sum(len(u) for u in image.scram.values())} SCRAM credentials")
    if image.acls:
        extra.append(f"{len(image.acls)} ACLs")
    if image.delegation_tokens:
        extra.append(f"{len(image.delegation_tokens)} delegation tokens")
    if image.producer_ids.next_producer_id >= 0:
        extra.append(f"next producer id {image.producer_ids.next_producer_id}")
    if extra:
        lines.append("")
        lines.append("; ".join(extra))
    return "\n".join(lines)


def _leader_text(observer: Observer) -> str | None:
    node = observer.node
    if node is None or not node.running:
        return None
    leader = node.leader
    return None if leader.leader_id is None else f"{leader.leader_id} (epoch {leader.epoch})"


async def _run(observer: Observer, *, follow: bool, fmt: str, from_offset: int, from_latest: bool,
               timeout_s: float | None, out: IO[str]) -> int:
    import trio

    from kraft.image.changes import TABLE_HEADER, format_jsonl, format_table

    status = 0
    interrupted = printed = unanswered = False
    async with trio.open_nursery() as nursery:
        async def on_signal() -> None:
            nonlocal interrupted
            with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    interrupted = True
                    nursery.cancel_scope.cancel()
                    return

        nursery.start_soon(on_signal)
        # One deadline for finding the quorum and catching up: --timeout
        # bounds the whole command, not only its second half.
        deadline = trio.current_time() + (timeout_s if timeout_s is not None else float("inf"))
        with trio.move_on_at(deadline) as starting:
            await nursery.start(observer.run)
        if starting.cancelled_caught:
            nursery.cancel_scope.cancel()
            unanswered = True
        elif not follow:
            with trio.move_on_at(deadline) as scope:
                image = await observer.catch_up()
            if scope.cancelled_caught:
                why = "" if observer.storage_error is None else \
                    f"; the local copy cannot be written: {observer.storage_error}"
                click.echo(f"kraft observe: not caught up after {timeout_s:g} s (image at offset "
                           f"{observer.published.offset}, leader high watermark "
                           f"{observer.view.high_watermark if observer.view else -1}{why})", err=True)
                status = 1
                image = observer.published
            if fmt == "table":
                out.write(image_summary(image, cluster_id=observer.cluster_id, leader=_leader_text(observer)) + "\n")
            else:
                out.write(json.dumps({"clusterId": observer.cluster_id, **image.to_json()}, indent=2,
                                     ensure_ascii=False) + "\n")
            out.flush()
            printed = True
        else:
            start = await observer.latest_offset() if from_latest else from_offset
            if fmt == "table":
                out.write(TABLE_HEADER + "\n")
            async for change in observer.changes(start):
                out.write((format_table(change) if fmt == "table" else format_jsonl(change)) + "\n")
                out.flush()
        await observer.shutdown()
        nursery.cancel_scope.cancel()
    if unanswered and not interrupted:
        from kraft.admin_client.errors import UnreachableError

        raise UnreachableError(f"no bootstrap controller described the quorum within {timeout_s:g} s "
                               f"({', '.join(f'{h}:{p}' for h, p in observer.bootstrap)}); check "
                               "--bootstrap-controller, that the controllers are running, and --command-config")
    if interrupted and not follow and not printed:
        # Stopped before the image was printed (with --follow, Ctrl-C is
        # how the stream ends: that is a success). The local copy is left
        # as it was: a prefix of the leader's log, without the partial
        # snapshot download (deleted when the log closes).
        return 130
    return status


@click.command("observe", short_help="Follow a live quorum as an observer and print its metadata.")
@click.option("--bootstrap-controller", "bootstrap", required=True, metavar="HOST:PORT[,HOST:PORT...]",
              help="Controller endpoints to discover the quorum from (controller.quorum.bootstrap.servers).")
@click.option("--cluster-id", default=None, help="Expected cluster id (learned with DescribeCluster if omitted).")
@click.option("--node-id", type=int, default=None,
              help="The observer's node id (must not be a voter; default: the one in --data-dir, or random).")
@click.option("--data-dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Local copy of __cluster_metadata (default $XDG_STATE_HOME/kraft/observer/<cluster id>).")
@click.option("--follow", is_flag=True, help="Print committed records as they commit, until Ctrl-C.")
@click.option("--format", "fmt", type=click.Choice(["table", "jsonl", "json"]), default=None,
              help="Output format (default: table; --follow also takes jsonl).")
@click.option("--from-offset", type=int, default=0, show_default=True, help="With --follow: the first offset.")
@click.option("--from-latest", is_flag=True, help="With --follow: only records committed from now on.")
@click.option("--timeout", "timeout_s", type=TIMEOUT_S, default=None,
              help="Without --follow: give up catching up after this many seconds.")
@click.option("--override", "overrides", multiple=True, metavar="KEY=VALUE",
              help="A node property for the observer (e.g. controller.quorum.request.timeout.ms=5000).")
@click.option("--log-level", default="WARNING", show_default=True, help="DEBUG, INFO, WARNING or ERROR.")
@click.option("--command-config", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Kafka client properties for the connections to the quorum (security.protocol, "
                   "sasl.mechanism, sasl.jaas.config, ssl.*).")
# Kafka has no property for it (KafkaRaftClient fetches 1 MB of a snapshot
# at a time); small values make a download long enough to interrupt in tests.
@click.option("--fetch-snapshot-max-bytes", type=click.IntRange(min=1), default=None, hidden=True)
def observe_command(bootstrap: str, cluster_id: str | None, node_id: int | None, data_dir: Path | None,
                    follow: bool, fmt: str | None, from_offset: int, from_latest: bool, timeout_s: float | None,
                    overrides: tuple[str, ...], log_level: str, fetch_snapshot_max_bytes: int | None,
                    command_config: Path | None = None) -> None:
    """Join a KRaft quorum as an observer and show its metadata."""
    import trio

    from kraft.admin_client.admin import AdminError, parse_bootstrap
    from kraft.admin_client.reach import check_reachable
    from kraft.config import validate_numbers
    from kraft.programs.observer import Observer, ObserverError

    _setup_logging(log_level)
    fmt = fmt or "table"
    if fmt == "json" and follow:
        fmt = "jsonl"
    if from_offset < 0:
        raise click.BadParameter("must not be negative", param_hint="--from-offset")
    if node_id is not None and node_id < 0:
        raise click.BadParameter("must not be negative", param_hint="--node-id")
    props = {}
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise click.BadParameter(f"expected key=value, got {item!r}", param_hint="--override")
        props[key.strip()] = value.strip()
    # A bad value is a config error (exit 3), named before anything connects.
    validate_numbers(props)
    try:
        servers = parse_bootstrap(bootstrap, "--bootstrap-controller")
    except AdminError as e:
        raise click.BadParameter(str(e), param_hint="--bootstrap-controller") from None
    quorum = {} if fetch_snapshot_max_bytes is None else {"fetch_snapshot_max_bytes": fetch_snapshot_max_bytes}
    security = _client_security(command_config)
    # Nothing listening anywhere: say so now, naming the addresses (exit 5),
    # rather than after the observer's retries.
    check_reachable(servers, timeout_s if timeout_s is not None else PROBE_TIMEOUT_S)
    request_ms, unanswered_ms = discovery_bounds(timeout_s)
    observer = Observer(servers, data_dir=data_dir, cluster_id=cluster_id, node_id=node_id, properties=props,
                        quorum=quorum, client_security=security, discovery_timeout_ms=request_ms,
                        discovery_unanswered_ms=unanswered_ms)
    try:
        status = trio.run(lambda: _run(observer, follow=follow, fmt=fmt, from_offset=from_offset,
                                       from_latest=from_latest, timeout_s=timeout_s, out=sys.stdout))
    except BaseException as e:  # noqa: BLE001 - mapped to an exit status below
        status = exit_status(e, "the observer stopped")
    sys.exit(status)


def discovery_bounds(timeout_s: float | None) -> tuple[int, int]:
    """How long the observer asks bootstrap servers of which none answers
    in Kafka's protocol before it gives up (exit 5): the documented
    ``PROBE_TIMEOUT_S`` (10 s) without ``--timeout``, one request's bound and
    the retries after it included (a silent listener takes a request's
    whole timeout each round). A quorum that answers (electing, say) is
    asked for the observer's usual retry time."""
    total_ms = int(1000 * (timeout_s if timeout_s is not None else PROBE_TIMEOUT_S))
    request_ms = max(1, min(5000, total_ms // 2))
    return request_ms, max(0, total_ms - request_ms)  # the Observer's discovery_timeout_ms, discovery_unanswered_ms


def _client_security(path: Path | None) -> ClientSecurity | None:
    """The TLS / SASL settings of a ``--command-config`` file."""
    from kraft.config import ConfigError, load_properties
    from kraft.wire.security import SecurityConfigError, client_security_from_properties

    if path is None:
        return None
    try:
        return client_security_from_properties(load_properties(path))
    except SecurityConfigError as e:
        # A bad value is a config error, exit 3 in every tool.
        raise ConfigError(f"{path}: {e}") from None


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def exit_status(exc: BaseException, what: str) -> int:
    """Map what ended a trio run (possibly inside exception groups) to an
    exit status: Ctrl-C 130, a closed stdout 0, our errors a message and 1."""
    from kraft.errors import OperatorError
    from kraft.programs.observer import ObserverError

    leaves = _leaves(exc)
    if any(isinstance(e, KeyboardInterrupt) for e in leaves):
        return 130
    if any(isinstance(e, BrokenPipeError) for e in leaves):
        try:
            sys.stdout = open("/dev/null", "w")  # nothing more can reach the reader
        except OSError:
            pass
        return 0
    for e in leaves:
        if isinstance(e, ObserverError):
            click.echo(f"Error: {e}", err=True)
            return e.exit_code if isinstance(e, OperatorError) else 1
    for e in leaves:
        if isinstance(e, OSError):
            click.echo(f"Error: {what}: {e}", err=True)
            return 1
    if isinstance(exc, (SystemExit, click.exceptions.Exit)):
        raise exc
    raise exc
