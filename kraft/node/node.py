"""A KRaft node, the embedding API: a Kafka controller's raft
(``__cluster_metadata``) in your trio program, from a
:class:`~kraft.config.NodeConfig`.

Python API::

    node = KraftNode(NodeConfig.load(path))
    async with trio.open_nursery() as nursery:
        await nursery.start(node.run)
        offset = await node.append([b"record"])     # leader only; waits for commit
        position = node.append_nowait([b"r"])        # pipelined: many outstanding
        await node.wait_committed(position)
        async for item in node.committed_batches(until=offset): # the latest snapshot
            ...                                      # (SnapshotLoaded) if any, then every committed
                                                     # batch in order; ends once `until` is delivered
        await node.create_snapshot(offset, state)    # your state as of a committed offset
        await node.shutdown()                        # a leader hands over first

How it is put together is :mod:`kraft.node.raft_manager` (the wiring);
requests come in through :mod:`kraft.node.controller_apis` and go out
through :mod:`kraft.node.network_channel`; the raft core runs in
:mod:`kraft.node.raft_driver`.
"""

from __future__ import annotations

import random
import time
import uuid
from contextlib import aclosing
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping, Sequence
from typing import Any, Literal, cast, overload

import trio

from kraft.config import ControllerMode, NodeConfig
from kraft.node import snapshots
from kraft.node.controller_apis import SUPPORTED_APIS, ControllerApis, replayed_api_versions
from kraft.node.controller_server import ControllerServer
from kraft.node.fault import FaultHandler
from kraft.node.raft_driver import RaftDriver
from kraft.node.raft_manager import NodeStartError, RaftManager
from kraft.node.raft_metrics import RaftMetrics
from kraft.node.snapshots import CommittedBatch, SnapshotLoaded
from kraft.node.leader_changes import LeaderChanged
from kraft.node.witness_detector import WitnessDetector
from kraft.raft.errors import LocalRaftError, NotLeaderError
from kraft.raft.roles import LeaderAndEpoch
from kraft.raft.voters import Endpoint
from kraft.raft.witness_policy import WitnessDecision
from kraft.records.log import MetadataLog
from kraft.records.view import OffsetAndEpoch
from kraft.wire.connection_limits import ConnectionTracker
from kraft.wire.security import ClientSecurity

__all__ = ["KraftNode", "NodeStartError", "CommittedBatch", "SnapshotLoaded", "SUPPORTED_APIS",
           "replayed_api_versions"]


class KraftNode:
    """One node. ``advertised_apis`` (tests only) replaces what its
    ApiVersions advertises, e.g. with :func:`replayed_api_versions` of a real
    Kafka controller's answer.

    ``controller=True`` runs Kafka's controller on a ``process.roles=controller``
    node whose log directory was formatted with a metadata.version
    (``kraft/node/controller_server.py``; ``kraft node start`` passes
    ``kraft.controller``, :class:`~kraft.config.ControllerMode`); the default
    keeps the node a replicated log whose records are yours."""

    def __init__(self, config: NodeConfig, *, rng: random.Random | None = None,
                 client_security: ClientSecurity | None = None, fault_handler: FaultHandler | None = None,
                 advertised_apis: Mapping[Any, tuple[int, int]] | None = None,
                 controller: bool | ControllerMode = False) -> None:
        self.config = config
        self._parts = RaftManager(config, rng=rng or random.Random(), client_security=client_security,
                                  fault_handler=fault_handler, advertised_apis=advertised_apis,
                                  committed_source=self, controller=controller)

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Run until cancelled or :meth:`shutdown`. ``task_status.started()``
        once every listener accepts connections (ports in :attr:`ports`)."""
        await self._parts.run(task_status=task_status)

    # ------------------------------------------------------------ parts

    @property
    def controller(self) -> ControllerServer | None:
        """Kafka's controller on this node, when it runs one."""
        return self._parts.controller

    @property
    def raft_driver(self) -> RaftDriver | None:
        """The raft driver (None before :meth:`run`)."""
        return self._parts.raft_driver

    @property
    def log(self) -> MetadataLog | None:
        return self._parts.log

    @property
    def cluster_id(self) -> str | None:
        return self._parts.cluster_id

    @property
    def directory_id(self) -> uuid.UUID | None:
        return self._parts.directory_id

    @property
    def ports(self) -> dict[str, int]:
        """Each listener's bound port, by listener name."""
        return self._parts.ports

    @property
    def metrics(self) -> RaftMetrics | None:
        """The raft metrics, with ``metrics.prometheus.port`` set (else None)."""
        return self._parts.metrics

    @property
    def metrics_port(self) -> int | None:
        return self._parts.metrics_port

    @property
    def witness(self) -> WitnessDetector | None:
        """The witness decision's evidence and log lines (kraft/node/witness_detector.py)."""
        return self._parts.witness

    @property
    def controller_apis(self) -> ControllerApis | None:
        """What answers this node's listeners (None before :meth:`run`)."""
        return self._parts.apis

    @property
    def connections(self) -> ConnectionTracker:
        """Open connections across this node's listeners (max.connections*)."""
        return self._parts.connections

    @property
    def client_security(self) -> ClientSecurity | None:
        """How this node dials the others."""
        return self._parts.client_security

    @property
    def fault_handler(self) -> FaultHandler | None:
        return self._parts.fault_handler

    @property
    def advertised_apis(self) -> dict[Any, tuple[int, int]]:
        """What this node's ApiVersions advertises."""
        return self._parts.advertised_apis

    def local_endpoints(self) -> tuple[Endpoint, ...]:
        """This node's controller listeners as peers reach them (advertised,
        else bound), in ``controller.listener.names`` order."""
        return self._parts.local_endpoints()

    # ------------------------------------------------------------ API

    @property
    def leader(self) -> LeaderAndEpoch:
        assert self.raft_driver is not None
        return self.raft_driver.leader

    @property
    def high_watermark(self) -> int:
        assert self.raft_driver is not None
        return self.raft_driver.high_watermark

    @property
    def witness_decision(self) -> WitnessDecision | None:
        """Whether this voter may lead, and why (None: not running, or an observer)."""
        return self._parts.witness_decision

    @property
    def role(self) -> str:
        """The raft role's name (``leader``, ``follower``, ...), ``starting``
        before the core is initialized."""
        if self.raft_driver is None or not self.raft_driver.initialized:
            return "starting"
        return self.raft_driver.core.role.name.lower()

    async def append(self, records: Sequence[bytes]) -> int:
        """Append records as leader; the offset of the last one, once committed.
        Raises :class:`kraft.raft.errors.NotLeaderError` on a non-leader."""
        assert self.raft_driver is not None
        return await self.raft_driver.append(records)

    def append_nowait(self, records: Sequence[bytes], *, epoch: int | None = None) -> OffsetAndEpoch:
        """Pipelined append as leader: queue ``records`` and return at once
        with (offset of the last record, leader epoch); many may be
        outstanding. Raises :class:`kraft.raft.errors.NotLeaderError` on a
        non-leader."""
        if self.raft_driver is None:
            raise NotLeaderError("append failed: the node is not running")
        return self.raft_driver.append_nowait(records, epoch=epoch)

    async def wait_committed(self, position: OffsetAndEpoch) -> None:
        """Wait until an :meth:`append_nowait` result is committed; raises
        :class:`kraft.raft.errors.NotLeaderError` if its leader epoch ends first
        (the record may or may not survive)."""
        assert self.raft_driver is not None
        await self.raft_driver.wait_committed(position)

    async def shutdown(self, timeout_ms: int = 5000) -> None:
        """Graceful stop: a leader resigns with EndQuorumEpoch first."""
        if self.raft_driver is not None:
            with trio.move_on_after(timeout_ms / 1000 + 1):
                await self.raft_driver.shutdown(timeout_ms)
        parts = self._parts
        if parts.nursery is not None:
            parts.nursery.cancel_scope.cancel()
        if parts.stopped is not None:
            # Back once run() has closed the log and released the directory's
            # .lock: the directory may be reused (a restart, a new format).
            await parts.stopped.wait()

    async def wait_for_leader(self) -> LeaderAndEpoch:
        assert self.raft_driver is not None
        async with self.raft_driver.leader_changed:
            while self.raft_driver.leader.leader_id is None:
                await self.raft_driver.leader_changed.wait()
        return self.raft_driver.leader

    @property
    def running(self) -> bool:
        """The node got past start-up: its raft driver exists (it may have
        stopped since; see :meth:`wait_stopped`)."""
        return self.raft_driver is not None

    @property
    def storage_error(self) -> OSError | None:
        """The disk error that stops the metadata log from being written (full
        disk, I/O error), or None while writes work (or before start-up)."""
        raft_driver = self.raft_driver
        return None if raft_driver is None else raft_driver.storage_error

    def led_epoch(self) -> int | None:
        """The epoch this node's raft core leads now, None if it does not lead."""
        raft_driver = self.raft_driver
        if raft_driver is None or not raft_driver.initialized or not raft_driver.core.is_leader:
            return None
        return raft_driver.core.epoch

    async def wait_leader_change(self, seen: LeaderAndEpoch | None = None) -> LeaderAndEpoch:
        """Wait for the next leader change (with ``seen``: return at once if
        the leader is no longer ``seen``); the leader now."""
        raft_driver = self._running_driver()
        async with raft_driver.leader_changed:
            if seen is None or raft_driver.leader == seen:
                await raft_driver.leader_changed.wait()
        return raft_driver.leader

    async def wait_stopped(self) -> None:
        """Wait until the raft driver stops (a fatal fault, or a shutdown)."""
        await self._running_driver().stopped.wait()

    async def wait_high_watermark(self) -> int:
        """Wait until a high watermark is known (the first commit this node
        learns); that high watermark."""
        raft_driver = self._running_driver()
        async with raft_driver.committed:
            while raft_driver.high_watermark < 0:
                await raft_driver.committed.wait()
        return raft_driver.high_watermark

    async def read_log(self, offset: int, max_bytes: int) -> bytes | None:
        """Up to ``max_bytes`` of the local metadata log from ``offset`` (whole
        batches), read while the raft driver leaves the log alone; None
        before start-up."""
        raft_driver, local_log = self.raft_driver, self.log
        if raft_driver is None or local_log is None:
            return None
        async with raft_driver.log_lock:
            return local_log.read(offset, max_bytes)

    def _running_driver(self) -> RaftDriver:
        raft_driver = self.raft_driver
        if raft_driver is None:
            raise LocalRaftError("the node is not running")
        return raft_driver

    @overload
    def committed_batches(
        self, start_offset: int | None = None, *, until: int | None = None, leader_changes: Literal[False] = False,
    ) -> AsyncIterator[CommittedBatch | SnapshotLoaded]: ...

    @overload
    def committed_batches(
        self, start_offset: int | None = None, *, until: int | None = None, leader_changes: Literal[True],
    ) -> AsyncIterator[CommittedBatch | SnapshotLoaded | LeaderChanged]: ...

    async def committed_batches(
        self, start_offset: int | None = None, *, until: int | None = None, leader_changes: bool = False,
    ) -> AsyncIterator[CommittedBatch | SnapshotLoaded | LeaderChanged]:
        """What a Kafka ``RaftClient.Listener`` gets: the latest snapshot
        first (a :class:`SnapshotLoaded`) if there is one, then every committed
        batch after it, as it commits. With ``start_offset``, resume there (a
        snapshot only if it is below the log start). A listener that falls
        below the log start later (a snapshot was installed, retention moved
        the start) gets the latest snapshot again, then the batches after it.
        Without ``until`` it ends only when the node stops; with it, it
        ends once offset ``until`` has been delivered (by a batch, or a
        snapshot past it), and raises ``LocalRaftError`` if the node stops
        before that. With ``leader_changes`` it also yields
        :class:`~kraft.node.leader_changes.LeaderChanged` items as Kafka fires
        ``handleLeaderChange``: this node's own leadership only once this
        listener has read past the epoch's start offset."""
        assert self.raft_driver is not None
        generator = cast(AsyncGenerator[CommittedBatch | SnapshotLoaded | LeaderChanged, None],
                         snapshots.committed_items(self.raft_driver, start_offset, leader_changes=leader_changes))
        async with aclosing(generator) as items:
            async for item in items:
                yield item
                if until is not None and not isinstance(item, LeaderChanged):
                    delivered = (item.last_offset if isinstance(item, CommittedBatch)
                                 else item.snapshot_id.offset - 1)
                    if delivered >= until:
                        return
        if until is not None:
            raise LocalRaftError(f"the node stopped before offset {until} was delivered")

    async def create_snapshot(self, at: OffsetAndEpoch | int, records: Iterable[bytes]) -> OffsetAndEpoch:
        """Write a snapshot of your state (``records``) as of ``at``: a
        committed offset (its epoch comes from the log) or a snapshot id. The
        log start then moves by retention (``metadata.max.retention.bytes`` /
        ``.ms``); followers behind it catch up with FetchSnapshot. Raises
        :class:`kraft.raft.errors.InvalidSnapshotIdError` for an id that is not
        committed, not on a batch boundary, or not newer than the latest
        snapshot. See :mod:`kraft.node.snapshots`."""
        return await snapshots.create_snapshot(self.raft_driver, at, records)


def now_ms() -> int:
    return int(time.time() * 1000)
