"""The in-node side of ``kraft bench quorum``: a metadata-log load generator.

KRaft has no client RPC that appends to ``__cluster_metadata`` (Kafka's
controller writes it from inside the process), so the load runs inside each
voter: ``kraft bench voter --record-size SIZE`` (hidden,
:mod:`kraft.tools.bench.voter_command`) runs the node with this module as its
:class:`~kraft.tools.node_run.NodeLoad`. While the node leads, it appends ``SIZE``-byte records at
the rate the driver asks for, pipelined (each record is its own append call;
many are outstanding and the core's accumulator batches them), and measures
every record's commit latency: from the append call to the moment the high
watermark passes its offset.

The driver talks to it over the process's stdin and stdout, one JSON object
per line (the node logs to stderr).

Commands (stdin):

* ``{"op": "rate", "rate": R, "window": W}``: append R records/s while
  leader (``R < 0``: as fast as possible); at most W records uncommitted;
* ``{"op": "reset"}``: start a new measurement window;
* ``{"op": "report", "id": K}``: answer with a ``stats`` line for the window.

Reports (stdout): ``ready``; ``leader`` (every leader change this node
learns, with the wall-clock time); ``first_commit`` (the first record this
node committed as leader of an epoch, with the wall-clock time: the end of a
failover); ``stats``. The node shuts down when stdin closes, so a dead
driver leaves no process behind.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, TextIO

import trio

from kraft.raft.errors import NotLeaderError
from kraft.node.node import KraftNode
from kraft.records.view import OffsetAndEpoch
from kraft.tools.node_run import NodeLoad

log = logging.getLogger("kraft.bench")

__all__ = ["bench_load", "run_bench_load", "LoadStats", "percentile"]

#: Records appended per scheduling round before yielding to the raft driver.
_CHUNK = 512
#: The generator's tick when it is ahead of its rate.
_TICK_S = 0.001


def percentile(samples: list[tuple[float, int]], q: float) -> float | None:
    """The ``q`` quantile (0..1) of weighted samples ``(value, count)``."""
    total = sum(n for _, n in samples)
    if total == 0:
        return None
    rank = q * (total - 1)
    seen = 0
    for value, n in sorted(samples):
        seen += n
        if seen > rank:
            return value
    return samples[-1][0]


@dataclass
class LoadStats:
    """What the generator saw since the last reset."""

    started: float = field(default_factory=time.perf_counter)
    #: CPU seconds of the whole process (every thread) at the start.
    started_cpu: float = field(default_factory=time.process_time)
    appended: int = 0
    committed: int = 0
    #: Appends whose leader epoch ended before they committed (fate unknown).
    unknown: int = 0
    #: (latency ms, records): records appended together commit together.
    latencies: list[tuple[float, int]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        elapsed = time.perf_counter() - self.started
        return {
            "elapsed": elapsed,
            "cpu_s": time.process_time() - self.started_cpu,
            "appended": self.appended,
            "committed": self.committed,
            "unknown": self.unknown,
            "p50_ms": percentile(self.latencies, 0.50),
            "p99_ms": percentile(self.latencies, 0.99),
            "max_ms": max((v for v, _ in self.latencies), default=None),
        }


class _Load:
    def __init__(self, node: KraftNode, record_size: int, out: TextIO) -> None:
        self.node = node
        self.record = bytes(i % 251 for i in range(record_size))
        self.out = out
        self.rate = 0.0
        self.window = 10_000
        #: Set (and replaced) when the rate or the leader changes.
        self.changed = trio.Event()
        self.stats = LoadStats()

    def emit(self, kind: str, **fields: Any) -> None:
        node = self.node
        line = {"type": kind, "node": node.config.node_id, "t": time.time(), **fields}
        self.out.write(json.dumps(line) + "\n")
        self.out.flush()

    # --- control ----------------------------------------------------------------

    async def read_commands(self) -> None:
        stream = trio.lowlevel.FdStream(os.dup(0))
        buffer = b""
        async with stream:
            while True:
                data = await stream.receive_some(65536)
                if not data:
                    return  # the driver is gone
                buffer += data
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if not line.strip():
                        continue
                    try:
                        self.command(json.loads(line))
                    except (ValueError, KeyError, TypeError, AttributeError) as e:
                        log.warning("ignored bench command %r: %s", line[:200], e)

    def command(self, cmd: dict[str, Any]) -> None:
        match cmd.get("op"):
            case "rate":
                self.rate = float(cmd["rate"])
                self.window = int(cmd.get("window", self.window))
                self._notify()
            case "reset":
                self.stats = LoadStats()
            case "report":
                node = self.node
                self.emit("stats", id=cmd.get("id"), role=node.role, epoch=node.leader.epoch,
                          leader=node.leader.leader_id, high_watermark=node.high_watermark,
                          log_end_offset=node.log.end_offset if node.log is not None else None,
                          **self.stats.summary())

    def _notify(self) -> None:
        self.changed.set()
        self.changed = trio.Event()

    async def follow_leader(self) -> None:
        node = self.node
        seen = None
        while True:
            leader = node.leader
            if leader != seen:
                seen = leader
                self.emit("leader", epoch=leader.epoch, leader=leader.leader_id)
                self._notify()
            await node.wait_leader_change(seen)

    # --- load -------------------------------------------------------------------

    async def generate(self) -> None:
        node = self.node
        while True:
            epoch = node.led_epoch()
            if self.rate == 0 or epoch is None:
                # A new leader learns it in the same Ready that tells the
                # listeners (leader_changed): no polling delay.
                await self.changed.wait()
                continue
            if await self._lead(epoch):
                continue  # the rate dropped to 0 (and may be back already)
            while self.rate != 0 and node.led_epoch() == epoch:
                # Refused while still leader (resigning): wait for what comes next.
                with trio.move_on_after(0.01):
                    await self.changed.wait()

    async def _lead(self, epoch: int) -> bool:
        """Append while leader of ``epoch``; returns True when the rate
        dropped to 0, False when the leadership ended (or appends were
        refused)."""
        node = self.node
        # (first offset, last offset, time appended) per chunk of appends.
        pending: deque[list[Any]] = deque()
        appended = trio.Event()
        reported_first = False

        async def watch_commits(cancel: trio.CancelScope) -> None:
            nonlocal appended, reported_first
            while True:
                while not pending:
                    await appended.wait()
                    appended = trio.Event()
                try:
                    await node.wait_committed(OffsetAndEpoch(pending[0][0], epoch))
                except NotLeaderError:
                    cancel.cancel()
                    return
                self._account_committed(pending, node.high_watermark)
                if not reported_first:
                    reported_first = True
                    self.emit("first_commit", epoch=epoch)

        refused = False
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(watch_commits, nursery.cancel_scope)
                rate = self.rate
                base, sent = time.perf_counter(), 0
                while self.rate != 0:
                    if self.rate != rate:
                        rate = self.rate
                        base, sent = time.perf_counter(), 0
                    now = time.perf_counter()
                    due = _CHUNK if rate < 0 else int((now - base) * rate) - sent
                    if due > max(rate, _CHUNK):
                        base, sent = now, 0  # far behind (a stall): do not burst
                        continue
                    in_flight = (pending[-1][1] - node.high_watermark + 1) if pending else 0
                    n = min(due, _CHUNK, self.window - in_flight)
                    if n <= 0:
                        await trio.sleep(_TICK_S)
                        continue
                    chunk = self._append_chunk(n)
                    if chunk is None:
                        refused = True  # not the leader any more
                        break
                    first_offset, last_offset = chunk
                    pending.append([first_offset, last_offset, now])
                    count = last_offset - first_offset + 1
                    sent += count
                    self.stats.appended += count
                    appended.set()
                    if count < n:
                        refused = True
                        break
                    if n < _CHUNK:
                        await trio.sleep(_TICK_S)
                    else:
                        await trio.lowlevel.checkpoint()
                nursery.cancel_scope.cancel()
        finally:
            # Appended but not seen committed: the epoch ended (or the rate
            # dropped to 0 and we stopped watching).
            self.stats.unknown += sum(last - start + 1 for start, last, _ in pending)
        # watch_commits cancels the loop when the epoch ends.
        return not refused and node.led_epoch() == epoch

    def _account_committed(self, pending: deque[list[Any]], hwm: int) -> None:
        """Count what the high watermark ``hwm`` committed of the pending
        chunks, with each chunk's latency; a chunk committed in part keeps
        its rest pending."""
        now = time.perf_counter()
        stats = self.stats
        while pending and pending[0][0] < hwm:
            entry = pending[0]
            start, last, t = entry
            done = min(last + 1, hwm) - start
            stats.committed += done
            stats.latencies.append(((now - t) * 1000, done))
            if last < hwm:
                pending.popleft()
            else:
                entry[0] = hwm

    def _append_chunk(self, n: int) -> tuple[int, int] | None:
        """Append ``n`` records, one append call each; the offsets of the
        first and last appended (fewer than ``n`` if the leadership ended)."""
        append = self.node.append_nowait
        record = [self.record]
        try:
            first = last = append(record).offset
        except NotLeaderError:
            return None
        try:
            for _ in range(n - 1):
                last = append(record).offset
        except NotLeaderError:
            pass
        return first, last


async def run_bench_load(node: KraftNode, record_size: int, out: TextIO = sys.stdout) -> None:
    """Run the bench load next to a started ``node`` until stdin closes, then
    shut the node down."""
    load = _Load(node, record_size, out)
    load.emit("ready")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(load.follow_leader)
        nursery.start_soon(load.generate)
        await load.read_commands()
        nursery.cancel_scope.cancel()
    await node.shutdown()


def bench_load(record_size: int) -> NodeLoad:
    """:func:`run_bench_load` as the node's load, without the record-history
    snapshots (they would only measure the cost of copying the history)."""

    async def run(node: KraftNode) -> None:
        await run_bench_load(node, record_size)

    return NodeLoad(run, record_history=False)
