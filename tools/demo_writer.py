"""The demo writer: the load ``kraft quickstart`` runs in each voter
(``kraft node start --demo-append-rate R``, hidden), and with it the tests'
and the chaos bench's acknowledged-record checks (``--demo-ack-log``,
``--demo-history``). It appends numbered records while the node leads, as a
:class:`kraft.tools.node_run.NodeLoad`; the node's run path imports it only
when a demo rate is asked for."""

from __future__ import annotations

import json
import logging
import os
import signal
from pathlib import Path
from typing import TextIO

import trio

from kraft.node.node import KraftNode
from kraft.raft.errors import LocalRaftError, NotLeaderError
from kraft.tools.node_run import NodeLoad

__all__ = ["demo_load"]

log = logging.getLogger("kraft.node")


def demo_load(rate: float, ack_log: Path | None = None, records: str = "text",
              history: Path | None = None) -> NodeLoad:
    """The demo writer at ``rate`` records/s as the node's load (see :func:`_write`)."""

    async def run(node: KraftNode) -> None:
        await _write(node, rate, ack_log, records, history)

    return NodeLoad(run, record_history=True)


async def _write(node: KraftNode, rate: float, ack_log: Path | None = None, records: str = "text",
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
