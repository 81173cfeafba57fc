"""``kraft node start``: run one KRaft node from a Kafka server.properties."""

from __future__ import annotations

import gc
import logging
import signal
from pathlib import Path
from typing import TextIO

import click
import trio

from kraft.config import NodeConfig
from kraft.raft.errors import NotLeaderError
from kraft.node.node import KraftNode
from kraft.node.snapshots import run_record_history_snapshots

log = logging.getLogger("kraft.node")


def setup_logging(level: str, fmt: str = "text") -> None:
    from kraft.tools.log_format import setup_logging as setup

    setup(level, fmt)


@click.group("node")
def node_group() -> None:
    """Run a KRaft node."""


from kraft.tools.node_status import status_command  # noqa: E402  (status is light: no trio)

node_group.add_command(status_command)


def _overrides(items: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise click.BadParameter(f"expected key=value, got {item!r}", param_hint="--override")
        out[key.strip()] = value.strip()
    return out


@node_group.command("start")
@click.option("--config", "-c", "config_path", required=True, type=click.Path(path_type=Path),
              help="A Kafka server.properties with process.roles=controller.")
@click.option("--override", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a property of the config file (repeatable).")
@click.option("--log-level", default="INFO", show_default=True,
              type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
              help="DEBUG adds per-request detail; INFO logs role changes, voter changes, snapshots, recovery.")
@click.option("--log-format", default="text", show_default=True, type=click.Choice(["text", "json"]),
              help="text, or json: one object per line (time, level, logger, message).")
@click.option("--demo-append-rate", type=float, default=0.0, hidden=True,
              help="While leader, append this many demo records per second (used by `kraft quickstart`).")
@click.option("--demo-ack-log", type=click.Path(path_type=Path), default=None, hidden=True,
              help="With --demo-append-rate: append one 'OFFSET<TAB>RECORD' line per demo record this node "
              "acknowledged as committed (the test harness checks no acknowledged record is ever lost). "
              "SIGUSR1 stops the demo writer.")
@click.option("--bench-load", "bench_record_size", type=click.IntRange(min=1), default=None, hidden=True,
              metavar="SIZE", help="Bench mode (used by `kraft bench quorum`): take load commands on stdin, "
              "append SIZE-byte records while leader, report JSON lines on stdout; stop when stdin closes.")
def start_command(config_path: Path, overrides: tuple[str, ...], log_level: str, log_format: str,
                  demo_append_rate: float, demo_ack_log: Path | None, bench_record_size: int | None) -> None:
    """Start a node and run until SIGTERM or Ctrl-C (a leader hands over
    leadership with EndQuorumEpoch before it exits).

    \b
    Snapshots hold the committed records themselves (this node has no state
    machine of its own), taken as Kafka's controller takes them: after
    metadata.log.max.record.bytes.between.snapshots bytes or
    metadata.log.max.snapshot.interval.ms; retention
    (metadata.max.retention.bytes/.ms) then moves the log start, and a
    replica that fell behind it catches up with FetchSnapshot."""
    setup_logging(log_level, log_format)
    # A failure is one line and its class's exit code (kraft.cli's handler):
    # ConfigError 3, a log directory problem 4, a port 5.
    config = NodeConfig.load(config_path, _overrides(overrides))
    trio.run(_run_node, config, demo_append_rate, bench_record_size, demo_ack_log)


async def _run_node(config: NodeConfig, demo_append_rate: float, bench_record_size: int | None = None,
                    demo_ack_log: Path | None = None) -> None:
    node = KraftNode(config)
    async with trio.open_nursery() as nursery:
        await nursery.start(node.run)
        # What exists now (modules, generated codecs, the opened log) lives as
        # long as the process: keep it out of the collector's full passes,
        # which otherwise stall the event loop for tens of milliseconds.
        gc.freeze()
        nursery.start_soon(_stop_on_signal, node)
        if bench_record_size is None:
            # No state machine here: snapshots hold the committed record
            # history (kraft.node.snapshots). Not under the bench load, whose
            # history would only measure the cost of copying it.
            nursery.start_soon(run_record_history_snapshots, node)
        if demo_append_rate > 0:
            nursery.start_soon(_demo_writer, node, demo_append_rate, demo_ack_log)
        if bench_record_size is not None:
            from kraft.tools.bench.load import run_bench_load

            nursery.start_soon(run_bench_load, node, bench_record_size)
        await node.shell.stopped.wait()  # type: ignore[union-attr]
        nursery.cancel_scope.cancel()


async def _stop_on_signal(node: KraftNode) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            log.info("received %s, shutting down", signal.Signals(signum).name)
            await node.shutdown()
            return


async def _demo_writer(node: KraftNode, rate: float, ack_log: Path | None = None) -> None:
    """Append numbered records while this node leads (the quickstart's load),
    until SIGUSR1. With ``ack_log``, record each acknowledged one there."""
    interval = 1.0 / rate
    acks = open(ack_log, "a", buffering=1, encoding="utf-8") if ack_log is not None else None  # noqa: SIM115
    # The receiver stays installed for the life of the process, so a second
    # SIGUSR1 is ignored too (instead of killing the process by default).
    with trio.open_signal_receiver(signal.SIGUSR1) as stop:
        async with trio.open_nursery() as nursery:
            async def write() -> None:
                try:
                    await _demo_loop(node, interval, acks)
                finally:
                    if acks is not None:
                        acks.close()

            nursery.start_soon(write)
            log.info("demo writer started: %g records/s while leader (SIGUSR1 stops it)", rate)
            async for _ in stop:
                log.info("SIGUSR1: the demo writer stops")
                nursery.cancel_scope.cancel()
                break
        await trio.sleep_forever()


async def _demo_loop(node: KraftNode, interval: float, acks: TextIO | None) -> None:
    seq = 0
    while True:
        await node.wait_for_leader()
        if node.leader.leader_id != node.config.node_id:
            assert node.shell is not None
            async with node.shell.leader_changed:
                await node.shell.leader_changed.wait()
            continue
        seq += 1
        record = f"quickstart node={node.config.node_id} epoch={node.leader.epoch} seq={seq}".encode()
        try:
            with trio.move_on_after(5):
                offset = await node.append([record])
                if acks is not None:
                    # Line-buffered: in the kernel before the next append,
                    # so a kill -9 of this process cannot lose it.
                    acks.write(f"{offset}\t{record.decode()}\n")
        except NotLeaderError:
            pass
        await trio.sleep(interval)
