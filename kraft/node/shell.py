"""The trio shell around the sans-IO raft core.

One task (:meth:`RaftShell.run`) owns the :class:`~kraft.core.RaftCore` and
the :class:`~kraft.records.log.MetadataLog`; everything else talks to it
through a memory channel. It sleeps until the core's next deadline or the
next message, steps the core, and executes the returned ``Ready`` in the
order the core documents: persist the election state, run the log
operations (in a worker thread: they fsync), then send, then tell listeners.

The shell is also where bytes meet the core's abstractions: batches the core
asks to append become Kafka record batches here, and fetched bytes that fail
validation are refused (the core sees a failed fetch, as Kafka's
``KafkaRaftClient`` does when ``appendAsFollower`` throws).
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import trio

from kraft import events as ev
from kraft.core import RaftCore, Ready
from kraft.errors import LocalRaftError, NotLeaderError
from kraft.logops import (
    AppendAsFollower,
    AppendAsLeader,
    Batch,
    Flush,
    InstallSnapshot,
    LogOp,
    SnapshotChunk,
    TruncateTo,
)
from kraft.records.batch import build_data_batch
from kraft.records.control import leader_change_batch
from kraft.records.errors import CorruptRecordError
from kraft.records.log import MetadataLog
from kraft.roles import ElectionState, LeaderAndEpoch
from kraft.records.state_files import QuorumStateFile, QuorumStateFileData

log = logging.getLogger("kraft.node")

__all__ = ["RaftShell", "Append", "Shutdown", "ElectionStateStore"]


@dataclass(slots=True)
class Append:
    """A command: append ``records`` as leader; ``result`` gets the offset of
    the last record, or the exception."""

    records: Sequence[bytes]
    done: trio.Event = field(default_factory=trio.Event)
    offset: int | None = None
    error: BaseException | None = None


@dataclass(slots=True)
class Shutdown:
    """A command: hand over leadership (EndQuorumEpoch) and stop."""

    timeout_ms: int
    done: trio.Event = field(default_factory=trio.Event)


class ElectionStateStore:
    """The election state in ``quorum-state`` (temp file, fsync, rename)."""

    def __init__(self, file: QuorumStateFile, static_voters: Sequence[int] | None, cluster_id: str) -> None:
        self.file = file
        self.static_voters = tuple(static_voters) if static_voters is not None else None
        self.cluster_id = cluster_id

    def read(self) -> ElectionState | None:
        from kraft.voters import ReplicaKey

        data = self.file.read()
        if data is None or data.leader_epoch < 0:
            return None
        voted = None
        if data.voted_id >= 0:
            directory = None if data.voted_directory_id.int == 0 else data.voted_directory_id
            voted = ReplicaKey(data.voted_id, directory)
        leader = data.leader_id if data.leader_id >= 0 else None
        return ElectionState(epoch=data.leader_epoch, leader_id=leader, voted_key=voted)

    def write(self, state: ElectionState) -> None:
        import uuid

        voted = state.voted_key
        data = QuorumStateFileData(
            leader_id=-1 if state.leader_id is None else state.leader_id,
            leader_epoch=state.epoch,
            voted_id=-1 if voted is None else voted.id,
            voted_directory_id=uuid.UUID(int=0) if voted is None or voted.directory_id is None else voted.directory_id,
            # kraft.version 0 (static voters) writes data_version 0 with the
            # voter ids, as Kafka's FileQuorumStateStore does.
            current_voters=self.static_voters if self.static_voters is not None else (),
            cluster_id="",
            data_version=0 if self.static_voters is not None else 1,
        )
        self.file.write(data)


Sender = Callable[[ev.OutboundRequest], Any]
Responder = Callable[[ev.OutboundResponse], Any]


class RaftShell:
    """Drives one RaftCore on trio."""

    def __init__(
        self,
        core: RaftCore,
        log_: MetadataLog,
        store: ElectionStateStore,
        *,
        send_request: Sender,
        send_response: Responder,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self.core = core
        self.log = log_
        self.store = store
        self._send_request = send_request
        self._send_response = send_response
        self._clock_ms = clock_ms
        self._inbox_send, self._inbox = trio.open_memory_channel[Any](1024)
        self._deadline_ms: int | None = None
        self._pending: list[Append] = []
        self.high_watermark = -1
        self.committed = trio.Condition()
        self.leader = LeaderAndEpoch(None, 0)  # known after initialize
        self.leader_changed = trio.Condition()
        self._shutdown: Shutdown | None = None
        self.stopped = trio.Event()
        self.initialized = False
        self._correlation = itertools.count(1)
        #: Held while a worker thread writes the log; readers outside the
        #: shell task (listeners) take it too.
        self.log_lock = trio.Lock()

    # ------------------------------------------------------------ inputs

    def deliver(self, item: ev.Inbound) -> None:
        """Hand the core an inbound message (never blocks; a full inbox drops
        it, which the protocol tolerates like a lost packet)."""
        try:
            self._inbox_send.send_nowait(item)
        except trio.WouldBlock:
            log.warning("raft inbox full, dropping %s", type(item).__name__)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass

    async def append(self, records: Sequence[bytes]) -> int:
        """Append as leader; returns the last offset once it is committed."""
        cmd = Append(list(records))
        await self._inbox_send.send(cmd)
        await cmd.done.wait()
        if cmd.error is not None:
            raise cmd.error
        assert cmd.offset is not None
        async with self.committed:
            while self.high_watermark <= cmd.offset:
                await self.committed.wait()
        return cmd.offset

    async def shutdown(self, timeout_ms: int = 5000) -> None:
        cmd = Shutdown(timeout_ms)
        try:
            await self._inbox_send.send(cmd)
        except trio.ClosedResourceError:
            return
        await cmd.done.wait()

    def next_correlation_id(self) -> int:
        return next(self._correlation)

    # ------------------------------------------------------------ loop

    async def run(self) -> None:
        try:
            await self._execute(self.core.initialize(self._clock_ms()))
            self.leader = LeaderAndEpoch(self.core.leader_id, self.core.epoch)
            self.initialized = True
            while self._shutdown is None or not self._shutdown.done.is_set():
                now = self._clock_ms()
                if self._deadline_ms is not None and self._deadline_ms <= now:
                    await self._execute(self.core.poll(now))
                    continue
                timeout = (self._deadline_ms - now) / 1000 if self._deadline_ms is not None else 3600
                item = None
                with trio.move_on_after(timeout):
                    item = await self._inbox.receive()
                now = self._clock_ms()
                if item is None:
                    await self._execute(self.core.poll(now))
                    continue
                await self._handle(now, item)
                # Drain what is already queued before polling again, so a
                # burst of fetches is answered in one go.
                for _ in range(64):
                    try:
                        item = self._inbox.receive_nowait()
                    except trio.WouldBlock:
                        break
                    await self._handle(self._clock_ms(), item)
        finally:
            for cmd in self._pending:
                if not cmd.done.is_set():
                    cmd.error = NotLeaderError("the node stopped")
                    cmd.done.set()
            self.stopped.set()

    async def _handle(self, now: int, item: Any) -> None:
        match item:
            case Append():
                try:
                    item.offset = self.core.append(now, item.records)
                except LocalRaftError as e:
                    item.error = e
                item.done.set()
                await self._execute(self.core.poll(now))
            case Shutdown():
                self._shutdown = item
                await self._execute(self.core.begin_shutdown(now, item.timeout_ms))
            case _:
                await self._execute(self.core.step(now, item))

    # ------------------------------------------------------------ Ready

    async def _execute(self, ready: Ready) -> None:
        for v in ready.violations:
            log.warning("refused a protocol violation from node %s: %s", v.source, v.description)
        if ready.persist is not None:
            state = ready.persist
            await trio.to_thread.run_sync(self.store.write, state)
        if ready.log:
            async with self.log_lock:
                await trio.to_thread.run_sync(self._apply_log_ops, ready.log)
        for message in ready.send:
            if isinstance(message, ev.OutboundRequest):
                self._send_request(message)
            else:
                self._send_response(message)
        if ready.committed is not None and ready.committed > self.high_watermark:
            async with self.committed:
                self.high_watermark = ready.committed
                self.committed.notify_all()
        if ready.leader_change is not None and ready.leader_change != self.leader:
            old = self.leader
            self.leader = ready.leader_change
            log.info("leader change: epoch %d leader %s (was epoch %d leader %s), local role %s",
                     self.leader.epoch, self.leader.leader_id, old.epoch, old.leader_id, self.core.role.name)
            async with self.leader_changed:
                self.leader_changed.notify_all()
        self._deadline_ms = ready.next_deadline_ms
        if ready.shutdown is not None and self._shutdown is not None:
            log.info("shutdown %s", "completed" if ready.shutdown.completed else "timed out")
            self._shutdown.done.set()

    def _apply_log_ops(self, ops: list[LogOp]) -> None:
        """Runs in a worker thread: only this thread touches the log meanwhile
        (the shell task is awaiting it and nothing else uses the log)."""
        for op in ops:
            match op:
                case AppendAsLeader(batch=batch):
                    self.log.append_as_leader(self._encode(batch), batch.epoch)
                case AppendAsFollower(records=records):
                    if records:
                        try:
                            self.log.append_as_follower(records)
                        except CorruptRecordError as e:
                            # Kafka's KafkaRaftClient fails the fetch; the next
                            # one starts again from our (unchanged) log end.
                            log.warning("refused fetched records: %s", e)
                case TruncateTo(offset=offset):
                    self.log.truncate_to(offset)
                case Flush():
                    self.log.flush()
                case SnapshotChunk(snapshot_id=sid, position=position, data=data):
                    self.log.write_snapshot_chunk(sid, position, data)
                case InstallSnapshot(snapshot_id=sid):
                    self.log.install_snapshot(sid)

    @staticmethod
    def _encode(batch: Batch) -> bytes:
        if batch.control is not None:
            c = batch.control
            return leader_change_batch(
                base_offset=batch.base_offset, epoch=batch.epoch, leader_id=c.leader_id,
                voters=c.voters, granting_voters=c.granting_voters, timestamp=batch.append_time_ms)
        return build_data_batch(list(batch.records), base_offset=batch.base_offset, epoch=batch.epoch,
                                timestamp=batch.append_time_ms)
