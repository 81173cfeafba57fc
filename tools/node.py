"""``kraft node start``: run one KRaft node from a Kafka server.properties."""

from __future__ import annotations

import logging
import signal
import sys
from pathlib import Path

import click
import trio

from kraft.config import ConfigError, NodeConfig
from kraft.errors import NotLeaderError
from kraft.node.node import KraftNode, NodeStartError

log = logging.getLogger("kraft.node")


def setup_logging(level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)",
        stream=sys.stderr,
    )


@click.group("node")
def node_group() -> None:
    """Run a KRaft node."""


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
@click.option("--log-level", default="INFO", show_default=True, help="DEBUG, INFO, WARNING or ERROR.")
@click.option("--demo-append-rate", type=float, default=0.0, hidden=True,
              help="While leader, append this many demo records per second (used by `kraft quickstart`).")
def start_command(config_path: Path, overrides: tuple[str, ...], log_level: str, demo_append_rate: float) -> None:
    """Start a node and run until SIGTERM or Ctrl-C (a leader hands over
    leadership with EndQuorumEpoch before it exits)."""
    setup_logging(log_level)
    try:
        config = NodeConfig.load(config_path, _overrides(overrides))
    except ConfigError as e:
        raise click.ClickException(str(e)) from None
    try:
        trio.run(_run_node, config, demo_append_rate)
    except NodeStartError as e:
        raise click.ClickException(str(e)) from None


async def _run_node(config: NodeConfig, demo_append_rate: float) -> None:
    node = KraftNode(config)
    async with trio.open_nursery() as nursery:
        await nursery.start(node.run)
        nursery.start_soon(_stop_on_signal, node)
        if demo_append_rate > 0:
            nursery.start_soon(_demo_writer, node, demo_append_rate)
        await node.shell.stopped.wait()  # type: ignore[union-attr]
        nursery.cancel_scope.cancel()


async def _stop_on_signal(node: KraftNode) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            log.info("received %s, shutting down", signal.Signals(signum).name)
            await node.shutdown()
            return


async def _demo_writer(node: KraftNode, rate: float) -> None:
    """Append numbered records while this node leads (the quickstart's load)."""
    interval = 1.0 / rate
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
                await node.append([record])
        except NotLeaderError:
            pass
        await trio.sleep(interval)
