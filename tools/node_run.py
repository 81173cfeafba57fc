"""The process ``kraft node start`` runs: the node, its record-history
snapshots and the signal handling; and beside them, when its caller asks, a
:class:`NodeLoad` writing records of its own (the quickstart's demo writer,
:mod:`kraft.tools.demo_writer`; the quorum bench's voters,
``kraft bench voter``). The node's run path names no load: it imports
nothing of the bench (an import contract in pyproject.toml)."""

from __future__ import annotations

import gc
import logging
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import trio

from kraft.config import ControllerMode, NodeConfig
from kraft.node.fault import fail_stop_on_disk_failure
from kraft.node.node import KraftNode
from kraft.node.snapshots import run_record_history_snapshots

__all__ = ["NodeLoad", "run_node"]

log = logging.getLogger("kraft.node")


@dataclass(frozen=True)
class NodeLoad:
    """A load run beside the node once it listens: it appends records of its
    own, so Kafka's controller does not run (they would not be the
    controller's)."""

    #: Runs while the node does (cancelled when it stops).
    run: Callable[[KraftNode], Awaitable[None]]
    #: Whether the record-history snapshots run beside it: not under the
    #: bench's load, whose history would only measure the cost of copying it.
    record_history: bool = True


async def run_node(config: NodeConfig, load: NodeLoad | None = None) -> None:
    node = KraftNode(config, controller=ControllerMode.OFF if load is not None else config.controller)
    # The handlers go in before the node starts: a SIGTERM sent the moment
    # the node says "listening on" is then a clean shutdown, not a kill by
    # the default action (the receiver keeps what arrives until it is read).
    try:
        await _run(node, load)
    except BaseException as exc:
        # A disk error out of a task beside the node (the record-history
        # snapshots, the load), or EIO even while it starts (reading or
        # recovering the log, as Kafka's KafkaRaftServer exits 1 then):
        # Kafka's fatal fault, exit 1.
        fail_stop_on_disk_failure(exc, Path(config.metadata_log_dir), node.fault_handler,
                                  eio_only=not node.running)
        raise


async def _run(node: KraftNode, load: NodeLoad | None) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            await nursery.start(node.run)
            # What exists now (modules, generated codecs, the opened log) lives as
            # long as the process: keep it out of the collector's full passes,
            # which otherwise stall the event loop for tens of milliseconds.
            gc.freeze()
            nursery.start_soon(_stop_on_signal, node, signals)
            if load is None or load.record_history:
                # No state machine here (or a controller that stood down on a
                # log of other records): snapshots hold the committed record
                # history (kraft.node.snapshots).
                nursery.start_soon(_record_history_snapshots, node)
            if load is not None:
                nursery.start_soon(load.run, node)
            await node.wait_stopped()
            nursery.cancel_scope.cancel()


async def _stop_on_signal(node: KraftNode, signals: AsyncIterator[int]) -> None:
    async for signum in signals:
        log.info("received %s, shutting down", signal.Signals(signum).name)
        await node.shutdown()
        return


async def _record_history_snapshots(node: KraftNode) -> None:
    """The record-history snapshots, once no controller writes snapshots of
    its image (none runs, or it stood down)."""
    if node.controller is not None:
        await node.controller.stopped.wait()
    await run_record_history_snapshots(node)
