"""The process ``kraft node start`` runs: the node, its record-history
snapshots, the signal handling and the hidden demo/bench load modes."""

from __future__ import annotations

import gc
import json
import os
import logging
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TextIO

import trio

from kraft.config import ControllerMode, NodeConfig
from kraft.node.fault import fail_stop_on_disk_failure
from kraft.node.node import KraftNode
from kraft.node.snapshots import run_record_history_snapshots
from kraft.raft.errors import LocalRaftError, NotLeaderError

__all__ = ["run_node"]

log = logging.getLogger("kraft.node")


async def run_node(config: NodeConfig, demo_append_rate: float, bench_record_size: int | None = None,
                    demo_ack_log: Path | None = None, demo_records: str = "text",
                    demo_history: Path | None = None) -> None:
    # Kafka's controller runs as kraft.controller says, unless a demo or
    # bench load writes records of its own into the log (they would not be
    # the controller's).
    own_load = demo_append_rate > 0 or bench_record_size is not None
    node = KraftNode(config, controller=ControllerMode.OFF if own_load else config.controller)
    # The handlers go in before the node starts: a SIGTERM sent the moment
    # the node says "listening on" is then a clean shutdown, not a kill by
    # the default action (the receiver keeps what arrives until it is read).
    try:
        await _run(node, demo_append_rate, bench_record_size, demo_ack_log, demo_records, demo_history)
    except BaseException as exc:
        # A disk error out of a task beside the node (the record-history
        # snapshots, the demo load), or EIO even while it starts (reading or
        # recovering the log, as Kafka's KafkaRaftServer exits 1 then):
        # Kafka's fatal fault, exit 1.
        fail_stop_on_disk_failure(exc, Path(config.metadata_log_dir), node.fault_handler,
                                  eio_only=not node.running)
        raise


async def _run(node: KraftNode, demo_append_rate: float, bench_record_size: int | None,
               demo_ack_log: Path | None, demo_records: str, demo_history: Path | None) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            await nursery.start(node.run)
            # What exists now (modules, generated codecs, the opened log) lives as
            # long as the process: keep it out of the collector's full passes,
            # which otherwise stall the event loop for tens of milliseconds.
            gc.freeze()
            nursery.start_soon(_stop_on_signal, node, signals)
            if bench_record_size is None:
                # No state machine here (or a controller that stood down on a
                # log of other records): snapshots hold the committed record
                # history (kraft.node.snapshots). Not under the bench load, whose
                # history would only measure the cost of copying it.
                nursery.start_soon(_record_history_snapshots, node)
            if demo_append_rate > 0:
                nursery.start_soon(_demo_writer, node, demo_append_rate, demo_ack_log, demo_records, demo_history)
            if bench_record_size is not None:
                from kraft.tools.bench.load import run_bench_load

                nursery.start_soon(run_bench_load, node, bench_record_size)
            await node.wait_stopped()
            nursery.cancel_scope.cancel()


async def _stop_on_signal(node: KraftNode, signals: AsyncIterator[int]) -> None:
    async for signum in signals:
        log.info("received %s, shutting down", signal.Signals(signum).name)
        await node.shutdown()
        return


async def _demo_writer(node: KraftNode, rate: float, ack_log: Path | None = None, records: str = "text",
                       history: Path | None = None) -> None:
    """Append numbered records while this node leads (the quickstart's load),
    until SIGUSR1. With ``ack_log``, record each acknowledged one there;
    with ``history`` (text records), every append's invocation and outcome.
    ``records``: ``text`` (bare numbered lines, the tests' load) or
    ``metadata`` (real metadata records: :mod:`kraft.tools.quickstart_records`)."""
    interval = 1.0 / rate
    acks = open(ack_log, "a", buffering=1, encoding="utf-8") if ack_log is not None else None  # noqa: SIM115
    ops = _OperationLog(history) if history is not None else None
    # The receiver stays installed for the life of the process, so a second
    # SIGUSR1 is ignored too (instead of killing the process by default).
    with trio.open_signal_receiver(signal.SIGUSR1) as stop:
        async with trio.open_nursery() as nursery:
            async def write() -> None:
                try:
                    if records == "metadata":
                        await _metadata_demo_loop(node, interval, acks)
                    else:
                        await _demo_loop(node, interval, acks, ops)
                finally:
                    if acks is not None:
                        acks.close()
                    if ops is not None:
                        ops.close()

            nursery.start_soon(write)
            log.info("demo writer started: %g records/s while leader (SIGUSR1 stops it)", rate)
            async for _ in stop:
                log.info("SIGUSR1: the demo writer stops")
                nursery.cancel_scope.cancel()
                break
        await trio.sleep_forever()


class _OperationLog:
    """The load's complete history, as Jepsen records one: a JSON line
    before each append is sent (``invoke``) and one after (``ok`` with its
    offset; ``fail`` when it was refused before it was appended; ``info``
    when its outcome is unknown). Line-buffered, so each line is in the
    kernel before the next step: a kill -9 of this process loses none (the
    reader takes an invocation without an outcome as ``info``)."""

    def __init__(self, path: Path) -> None:
        self._file = open(path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115

    def add(self, kind: str, value: str, **fields: object) -> None:
        self._file.write(json.dumps({"type": kind, "f": "append", "value": value, **fields}) + "\n")

    def close(self) -> None:
        self._file.close()


async def _demo_append(node: KraftNode, record: str, acks: TextIO | None, ops: _OperationLog | None) -> None:
    """One append and its outcome: refused before it was appended (fail),
    committed (ok), or unknown (info: the epoch ended, or no commit in 5 s)."""
    if ops is not None:
        ops.add("invoke", record)
    try:
        position = node.append_nowait([record.encode()])
    except (NotLeaderError, LocalRaftError) as e:
        if ops is not None:
            ops.add("fail", record, error=str(e))
        return
    outcome: tuple[str, str] = ("info", "no commit within 5 s")
    with trio.move_on_after(5):
        try:
            await node.wait_committed(position)
            if acks is not None:
                # Line-buffered: in the kernel before the next append,
                # so a kill -9 of this process cannot lose it.
                acks.write(f"{position.offset}\t{record}\n")
            outcome = ("ok", "")
        except (NotLeaderError, LocalRaftError) as e:
            outcome = ("info", str(e))
    if ops is not None:
        if outcome[0] == "ok":
            ops.add("ok", record, offset=position.offset)
        else:
            ops.add("info", record, error=outcome[1])


async def _demo_loop(node: KraftNode, interval: float, acks: TextIO | None,
                     ops: _OperationLog | None = None) -> None:
    # The process id keeps values distinct across restarts (a restarted
    # node counts from 1 again, maybe in the epoch it believed it led).
    seq, pid = 0, os.getpid()
    while True:
        await node.wait_for_leader()
        if node.leader.leader_id != node.config.node_id:
            await node.wait_leader_change()
            continue
        seq += 1
        await _demo_append(node, f"quickstart node={node.config.node_id} epoch={node.leader.epoch} seq={seq} "
                                 f"pid={pid}", acks, ops)
        await trio.sleep(interval)


async def _record_history_snapshots(node: KraftNode) -> None:
    """The record-history snapshots, once no controller writes snapshots of
    its image (none runs, or it stood down)."""
    if node.controller is not None:
        await node.controller.stopped.wait()
    await run_record_history_snapshots(node)


async def _metadata_demo_loop(node: KraftNode, interval: float, acks: TextIO | None) -> None:
    """:func:`_demo_loop` with real metadata records. The node's committed
    log is folded into an image, so a new leader writes the once-per-cluster
    records (topics, partitions, a config, the bootstrap features) only if
    no earlier leader committed them, and never on an image behind the log."""
    from kraft.image.builder import ImageBuilder
    from kraft.node.snapshots import CommittedBatch, SnapshotLoaded
    from kraft.tools.quickstart_records import EVENTS_TOPIC, event_record, setup_records

    builder = ImageBuilder()

    async def follow() -> None:
        async for item in node.committed_batches():
            if isinstance(item, CommittedBatch):
                builder.apply_batch(item.base_offset, item.epoch, item.append_time_ms, item.records,
                                    is_control=item.is_control, last_offset=item.last_offset)
            elif isinstance(item, SnapshotLoaded):
                builder.load_snapshot(item.snapshot_id, item.records, item.last_contained_log_timestamp)

    async def caught_up(offset: int) -> None:
        with trio.fail_after(10):
            while builder.last_offset < offset:
                await trio.sleep(0.01)

    voters = [v.node_id for v in node.config.voters] or [node.config.node_id]
    seq = 0
    async with trio.open_nursery() as nursery:
        nursery.start_soon(follow)
        while True:
            await node.wait_for_leader()
            if node.leader.leader_id != node.config.node_id:
                await node.wait_leader_change()
                continue
            try:
                # Everything of earlier epochs is committed once our
                # LeaderChange is: the image then shows what they wrote.
                with trio.fail_after(10):
                    while node.high_watermark < 0:
                        await trio.sleep(0.01)
                await caught_up(node.high_watermark - 1)
                if builder.image.topic(EVENTS_TOPIC) is None:
                    offset = await node.append(setup_records(node.config.metadata_log_dir, voters))
                    await caught_up(offset)
                    log.info("demo writer: created the quickstart topics at offset %d", offset)
                seq += 1
                label = f"node={node.config.node_id} epoch={node.leader.epoch} seq={seq}"
                with trio.move_on_after(5):
                    offset = await node.append([event_record(label)])
                    if acks is not None:
                        acks.write(f"{offset}\t{label}\n")
            except (NotLeaderError, LocalRaftError, trio.TooSlowError):
                await trio.sleep(0.05)
            await trio.sleep(interval)
