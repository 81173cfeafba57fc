"""The trio shell around the sans-IO raft core.

One task (:meth:`RaftShell.run`) owns the :class:`~kraft.raft.core.RaftCore` and
the :class:`~kraft.records.log.MetadataLog`; everything else talks to it
through a memory channel. It sleeps until the core's next deadline or the
next message, steps the core, and executes the returned ``Ready`` in the
order the core documents: persist the election state, run the log
operations (in a worker thread when they may fsync; a leader's batch writes
in the task), then send, then tell listeners.

Leaders append without waiting: :meth:`RaftShell.append_nowait` hands the
records to the core's accumulator at once and returns their offset, many
appends may be outstanding, and :meth:`RaftShell.wait_committed` waits for
one (failing if the leadership ends first).

The shell is also where bytes meet the core's abstractions: batches the core
asks to append become Kafka record batches here, and fetched bytes that fail
validation are refused (the core sees a failed fetch, as Kafka's
``KafkaRaftClient`` does when ``appendAsFollower`` throws).

And where the disk fails. A write, fsync, truncate or rename whose outcome
is unknown (``EIO``, any failed fsync, a failed rename) stops the node at
once, before anything of the same ``Ready`` is sent or counted (fail-stop,
Kafka's fatal fault handler; see :mod:`kraft.node.fault`): nothing written
after the last successful flush can then count toward a vote, a fetch
offset or the high watermark. Only a full disk (``ENOSPC``, ``EDQUOT``)
refusing a write that the log cut back completely is survived, since
nothing of that write exists: a leader resigns (Kafka's controller treats a
failed append as fatal for its leadership) and appends are refused with
:class:`StorageError` until a write works again, while listeners keep
reading; a follower fetches the same records again after a backoff; an
election state whose temporary file did not fit is retried until it is
written, since nothing may depend on it before (see
:meth:`RaftShell._on_storage_fault`).
Other work on the log (snapshots, retention) comes in through
:meth:`RaftShell.run_on_log` and runs between two calls of the core.
"""

from __future__ import annotations

import errno
import heapq
import itertools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

import trio

from kraft.raft import events as ev
from kraft.raft.core import RaftCore, Ready
from kraft.raft.errors import LocalRaftError, NotLeaderError
from kraft.raft.logops import (
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
from kraft.node.control_records import encode_control_batch
from kraft.node.fault import FaultHandler, ProcessTerminatingFaultHandler
from kraft.node.telemetry import Telemetry
from kraft.records.errors import CorruptRecordError, CorruptSnapshotError, DiskIOError, LogOffsetError
from kraft.records.log import MetadataLog
from kraft.records.view import OffsetAndEpoch
from kraft.raft.roles import ElectionState, LeaderAndEpoch
from kraft.records.state_files import QuorumStateFile, QuorumStateFileData

log = logging.getLogger("kraft.node")

__all__ = ["RaftShell", "Shutdown", "ElectionStateStore", "StorageError", "apply_log_op", "encode_batch"]

def is_known_outcome(error: OSError) -> bool:
    """True for the one disk error the node survives: a full disk refused a
    write that was undone completely (see :class:`DiskIOError`). Every other
    error of a log write, fsync, truncate or rename is fatal."""
    return isinstance(error, DiskIOError) and error.rolled_back


class StorageError(NotLeaderError):
    """An append refused because the metadata log cannot be written (a full
    disk refused a write, which was undone): the node gave up its leadership
    and keeps serving reads until a write succeeds again. Any other disk
    error stops the node instead (fail-stop)."""


@dataclass(frozen=True, slots=True)
class _StorageFault:
    op: LogOp
    error: OSError


@dataclass(slots=True)
class _LogTask:
    """Run ``fn(log)`` in the shell task between two calls of the core."""

    fn: Callable[[MetadataLog], Any]
    in_thread: bool
    done: trio.Event = field(default_factory=trio.Event)
    result: Any = None
    error: BaseException | None = None


class _Poll:
    """Inbox token: poll the core now (records were appended while it slept)."""


_POLL = _Poll()


@dataclass(slots=True)
class _CommitWaiter:
    """Someone waiting for ``offset`` to commit in leader epoch ``epoch``."""

    offset: int
    epoch: int
    done: trio.Event = field(default_factory=trio.Event)
    error: BaseException | None = None

    def __lt__(self, other: _CommitWaiter) -> bool:  # heap order
        return self.offset < other.offset


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
        from kraft.raft.voters import ReplicaKey

        data = self.file.read()
        if data is None or data.leader_epoch < 0:
            return None
        voted = None
        if data.voted_id >= 0:
            directory = None if data.voted_directory_id.int == 0 else data.voted_directory_id
            voted = ReplicaKey(data.voted_id, directory)
        leader = data.leader_id if data.leader_id >= 0 else None
        return ElectionState(epoch=data.leader_epoch, leader_id=leader, voted_key=voted)

    def write(self, state: ElectionState, kraft_version: int | None = None) -> None:
        """Kafka's ``FileQuorumStateStore.writeElectionState``: the data version
        follows the latest kraft.version in the log (0 -> data_version 0 with
        the static voter ids; 1 -> data_version 1 with votedDirectoryId).
        ``None`` (a caller that does not know it): by the configuration."""
        import uuid

        voted = state.voted_key
        v0 = self.static_voters is not None if kraft_version is None else kraft_version == 0
        data = QuorumStateFileData(
            leader_id=-1 if state.leader_id is None else state.leader_id,
            leader_epoch=state.epoch,
            voted_id=-1 if voted is None else voted.id,
            voted_directory_id=uuid.UUID(int=0) if voted is None or voted.directory_id is None else voted.directory_id,
            current_voters=self.static_voters if v0 and self.static_voters is not None else (),
            cluster_id="",
            data_version=0 if v0 else 1,
        )
        self.file.write(data)


_FAULT_BACKOFF_MIN_S = 0.05
_FAULT_BACKOFF_MAX_S = 0.5
_FAULT_QUIET_MS = 10_000

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
        fault_handler: FaultHandler | None = None,
    ) -> None:
        self.core = core
        #: Called with a disk error of unknown outcome; never returns.
        self.fault_handler: FaultHandler = fault_handler or ProcessTerminatingFaultHandler()
        self.log = log_
        self.store = store
        self._send_request = send_request
        self._send_response = send_response
        self._clock_ms = clock_ms
        self._inbox_send, self._inbox = trio.open_memory_channel[Any](1024)
        self._deadline_ms: int | None = None
        self._poll_requested = False
        #: Min-heap by offset; all in epoch ``_waiters_epoch`` once checked.
        self._commit_waiters: list[_CommitWaiter] = []
        self._waiters_epoch = -1
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
        #: The last disk error of a log write or quorum-state write, until a
        #: write succeeds again; appends are refused meanwhile.
        self.storage_error: OSError | None = None
        self._fault_backoff_s = _FAULT_BACKOFF_MIN_S
        self._last_fault_ms = 0
        #: Set by the log worker when an operation really wrote new data.
        self._wrote = False
        #: Role-change and voter-change log lines; the raft metrics once the
        #: node sets ``telemetry.metrics``.
        self.telemetry = Telemetry()

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
        position = self.append_nowait(records)
        await self.wait_committed(position)
        return position.offset

    def append_nowait(self, records: Sequence[bytes], *, epoch: int | None = None) -> OffsetAndEpoch:
        """Queue records as leader without waiting (many appends may be
        outstanding; the core's accumulator batches them). Returns the offset
        of the last record and the leader epoch it was appended in; pass that
        to :meth:`wait_committed`. Raises :class:`NotLeaderError` on a
        non-leader (or for ``epoch`` other than the current leader epoch)."""
        if not self.initialized or self.stopped.is_set():
            raise NotLeaderError("append failed: the node is not running")
        if self.storage_error is not None:
            raise StorageError(f"append refused: the metadata log cannot be written ({self.storage_error})")
        core = self.core
        # The core is between calls whenever another task runs (the shell
        # task only yields between whole core calls), so appending here is
        # the same as appending from the shell task; the accumulator does
        # not depend on the log the shell may be writing meanwhile.
        offset = core.append(self._clock_ms(), records, epoch=epoch)
        if not self._poll_requested:
            # The first record since the leader last wrote a batch starts the
            # linger timer: wake the shell so the core's next deadline counts
            # it (later ones change nothing until the next write). A full
            # inbox needs no token: the shell steps (and so re-reads the
            # deadline) for every item anyway.
            self._poll_requested = self._wake()
        return OffsetAndEpoch(offset, core.epoch)

    async def wait_committed(self, position: OffsetAndEpoch) -> None:
        """Return once the record at ``position.offset``, appended by this
        leader in epoch ``position.epoch``, is committed. Raises
        :class:`NotLeaderError` if that epoch ends first: the record's fate is
        then unknown (a later leader may keep or truncate it)."""
        if position.epoch != self.core.epoch or self.stopped.is_set():
            raise NotLeaderError(f"leader epoch {position.epoch} ended before offset {position.offset} committed")
        if self.high_watermark > position.offset:
            return
        waiter = _CommitWaiter(position.offset, position.epoch)
        heapq.heappush(self._commit_waiters, waiter)
        await waiter.done.wait()
        if waiter.error is not None:
            raise waiter.error

    def upgrade_kraft_version(self, level: int, *, validate_only: bool = False) -> OffsetAndEpoch | None:
        """The leader's kraft.version upgrade (:meth:`RaftCore.upgrade_kraft_version`),
        called between two core calls as :meth:`append_nowait` is. Returns
        where the upgrade was appended (this call or an earlier one of this
        leader; pass it to :meth:`wait_committed`), None when there is
        nothing to wait for. Raises what the core raises."""
        if not self.initialized or self.stopped.is_set():
            raise NotLeaderError("kraft.version upgrade failed: the node is not running")
        core = self.core
        appended = core.upgrade_kraft_version(self._clock_ms(), level, validate_only=validate_only)
        if appended and not validate_only:
            self._wake()  # so the control batch is written now
        return None if validate_only else core.pending_kraft_version_upgrade

    def request_poll(self) -> None:
        """Poll the core soon: something it consults between calls changed
        (the witness decision, :mod:`kraft.node.witness`)."""
        self._wake()

    def _wake(self) -> bool:
        """Queue a poll token for the shell; False when the inbox is full
        (no token is needed then: the shell steps, and so polls, for every
        item anyway)."""
        try:
            self._inbox_send.send_nowait(_POLL)
        except trio.WouldBlock:
            return False
        return True

    async def shutdown(self, timeout_ms: int = 5000) -> None:
        cmd = Shutdown(timeout_ms)
        try:
            await self._inbox_send.send(cmd)
        except trio.ClosedResourceError:
            return
        await cmd.done.wait()

    def clock_ms(self) -> int:
        """Now, in the clock the core is driven with."""
        return self._clock_ms()

    def next_correlation_id(self) -> int:
        return next(self._correlation)

    async def run_on_log(self, fn: Callable[[MetadataLog], Any], *, in_thread: bool = True) -> Any:
        """Run ``fn(log)`` in the shell task, between two calls of the core,
        holding :attr:`log_lock`: neither the core nor a log operation sees
        the log half-changed. ``fn`` runs in a worker thread, or (``in_thread``
        False, for quick work that consults the core, such as
        ``RaftCore.validate_snapshot_id``) on the trio thread. Returns what
        ``fn`` returns; raises what it raises."""
        if not self.initialized or self.stopped.is_set():
            raise LocalRaftError("the node is not running")
        task = _LogTask(fn, in_thread)
        await self._inbox_send.send(task)
        # Once queued the shell runs it whatever happens to the caller: wait
        # for the outcome (so a caller never cleans up under a running task),
        # or for the shell to stop.
        with trio.CancelScope(shield=True):
            async with trio.open_nursery() as nursery:
                async def stopped() -> None:
                    await self.stopped.wait()
                    nursery.cancel_scope.cancel()

                nursery.start_soon(stopped)
                await task.done.wait()
                nursery.cancel_scope.cancel()
        await trio.lowlevel.checkpoint_if_cancelled()
        if not task.done.is_set():
            raise LocalRaftError("the node stopped")
        if task.error is not None:
            raise task.error
        return task.result

    # ------------------------------------------------------------ loop

    async def run(self) -> None:
        try:
            # The leader is what the core's Readys announce (leader_change), as
            # Kafka's maybeFireLeaderChange does: our own leadership only once
            # committed up to the epoch start. Setting it here from the role
            # announced it early and without waking wait_for_leader, and then
            # the core's announcement, equal to it, woke nobody either.
            await self._execute(self.core.initialize(self._clock_ms()))
            self.initialized = True
            while self._shutdown is None or not self._shutdown.done.is_set():
                now = self._clock_ms()
                if self._deadline_ms is not None and self._deadline_ms <= now:
                    await self._execute(self.core.poll(now))
                    continue
                timeout = (self._deadline_ms - now) / 1000 if self._deadline_ms is not None else 3600
                item = None
                metrics = self.telemetry.metrics
                if metrics is not None:
                    metrics.idle_start()
                with trio.move_on_after(timeout):
                    item = await self._inbox.receive()
                if metrics is not None:
                    metrics.idle_end()
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
            self.stopped.set()
            for waiter in self._commit_waiters:
                waiter.error = NotLeaderError("the node stopped")
                waiter.done.set()
            self._commit_waiters = []
            # Listeners waiting for a commit wake up and see the node
            # stopped; left waiting, they would hang, or read the log after
            # the node closed it.
            with trio.CancelScope(shield=True):
                async with self.committed:
                    self.committed.notify_all()

    async def _handle(self, now: int, item: Any) -> None:
        match item:
            case _Poll():
                await self._execute(self.core.poll(now))
            case Shutdown():
                self._shutdown = item
                await self._execute(self.core.begin_shutdown(now, item.timeout_ms))
            case _LogTask():
                async with self.log_lock:
                    try:
                        if item.in_thread:
                            item.result = await trio.to_thread.run_sync(item.fn, self.log)
                        else:
                            item.result = item.fn(self.log)
                    except DiskIOError as e:
                        if not is_known_outcome(e):
                            # The log itself failed part-way (a segment
                            # deleted, a snapshot renamed): fail-stop.
                            self._fail_stop(e, "work on the log")
                        item.error = e
                    except Exception as e:
                        item.error = e
                item.done.set()
            case _:
                await self._execute(self.core.step(now, item))

    # ------------------------------------------------------------ Ready

    async def _execute(self, ready: Ready) -> None:
        for v in ready.violations:
            log.warning("refused a protocol violation from node %s: %s", v.source, v.description)
        if ready.persist is not None:
            await self._persist(ready.persist, ready.kraft_version)
        fault = None
        if ready.log:
            self._wrote = False
            async with self.log_lock:
                if all(type(op) is AppendAsLeader for op in ready.log):
                    # A leader's write is a copy into the page cache (its fsync
                    # is a Flush of a later Ready): cheaper than a thread hop.
                    fault = self._apply_log_ops(ready.log)
                else:
                    fault = await trio.to_thread.run_sync(self._apply_log_ops, ready.log)
            if fault is not None and not is_known_outcome(fault.error):
                # Before anything of this Ready leaves the node or counts.
                self._fail_stop(fault.error, type(fault.op).__name__)
            if fault is None and self.storage_error is not None and self._wrote:
                self._storage_recovered()
        if self._poll_requested and (
            ready.leader_change is not None or any(type(op) is AppendAsLeader for op in ready.log)
        ):
            # The accumulator was drained (or belongs to another leadership
            # now): the next append needs to wake the shell again. This Ready
            # asks for a poll right after, which sees anything appended since.
            self._poll_requested = False
        for message in ready.send:
            if isinstance(message, ev.OutboundRequest):
                self._send_request(message)
            else:
                self._send_response(message)
        if ready.committed is not None and ready.committed > self.high_watermark:
            async with self.committed:
                self.high_watermark = ready.committed
                self.committed.notify_all()
        if self._commit_waiters:
            self._wake_commit_waiters()
        if ready.leader_change is not None and ready.leader_change != self.leader:
            old = self.leader
            self.leader = ready.leader_change
            # The role change that came with it is logged at INFO (telemetry).
            log.debug("leader change: epoch %d leader %s (was epoch %d leader %s), local role %s",
                      self.leader.epoch, self.leader.leader_id, old.epoch, old.leader_id, self.core.role.name)
            async with self.leader_changed:
                self.leader_changed.notify_all()
            async with self.committed:  # listeners that take leader changes (kraft/node/leader_changes.py)
                self.committed.notify_all()
        self.telemetry.after_ready(ready, self.core, self._clock_ms)
        if fault is not None:
            await self._on_storage_fault(fault)
        self._deadline_ms = ready.next_deadline_ms
        if ready.shutdown is not None and self._shutdown is not None:
            log.info("shutdown %s", "completed" if ready.shutdown.completed else "timed out")
            self._shutdown.done.set()

    def _wake_commit_waiters(self) -> None:
        epoch = self.core.epoch
        if epoch != self._waiters_epoch:
            # Waiters start in the epoch current at the time, and epochs only
            # grow: those of an earlier epoch have lost their leadership.
            self._waiters_epoch = epoch
            for waiter in self._commit_waiters:
                if waiter.epoch != epoch:
                    waiter.error = NotLeaderError(
                        f"leader epoch {waiter.epoch} ended before offset {waiter.offset} committed")
                    waiter.done.set()
            self._commit_waiters = [w for w in self._commit_waiters if w.epoch == epoch]
            heapq.heapify(self._commit_waiters)
        waiters = self._commit_waiters
        hwm = self.high_watermark
        while waiters and waiters[0].offset < hwm:
            heapq.heappop(waiters).done.set()

    def _apply_log_ops(self, ops: list[LogOp]) -> _StorageFault | None:
        """Runs in a worker thread (a leader's writes: in the shell task); only
        this thread touches the log meanwhile (the shell task is awaiting it
        and nothing else uses the log). Stops
        at the first operation the disk refuses and returns it (the log rolls
        a failed append back itself)."""
        for op in ops:
            try:
                self._apply_log_op(op)
            except OSError as e:
                return _StorageFault(op, e)
        return None

    def _apply_log_op(self, op: LogOp) -> None:
        if apply_log_op(self.log, op):
            self._wrote = True

    # ------------------------------------------------------------ disk faults

    async def _persist(self, state: ElectionState, kraft_version: int | None = None) -> None:
        """Write the election state; when a full disk refused the temporary
        file (the old state stands), retry until it works: nothing the core
        decided after this state may happen before it is durable (a vote
        must never be forgotten), so the shell waits. Any other failure (the
        fsync, the rename) has an unknown outcome: fail-stop."""
        delay = _FAULT_BACKOFF_MIN_S
        while True:
            try:
                await trio.to_thread.run_sync(self.store.write, state, kraft_version)
            except OSError as e:
                if not is_known_outcome(e):
                    self._fail_stop(e, "persisting the election state")
                if delay == _FAULT_BACKOFF_MIN_S:
                    log.error("cannot write quorum-state (%s); nothing moves until it is written", e)
                self.storage_error = e
                await trio.sleep(delay)
                delay = min(delay * 2, _FAULT_BACKOFF_MAX_S)
                continue
            return

    async def _on_storage_fault(self, fault: _StorageFault) -> None:
        """A full disk refused a log write, which the log undid completely
        (the only disk error survived; see :func:`is_known_outcome`): nothing
        of it is on disk, so the log end the core reads next is the flushed
        one and nothing unflushed can count. As Kafka's controller treats a failed append as
        fatal for its leadership, a leader resigns (EndQuorumEpoch; a voter
        with a working disk takes over) and its outstanding appends fail;
        appends are refused until a write works again. Reads (listeners) go
        on. A follower just fetches the same records again, after a backoff
        so a full disk does not turn into a busy loop."""
        if self.storage_error is None:
            log.error("metadata log write failed (%s): %s; appends are refused until it recovers",
                      type(fault.op).__name__, fault.error)
        self.storage_error = fault.error
        if self.core.is_leader:
            epoch = self.core.epoch
            log.error("resigning leadership of epoch %d: the log cannot be written", epoch)
            self.core.resign(epoch)
            error = StorageError(f"append failed: the metadata log cannot be written ({fault.error})")
            for waiter in self._commit_waiters:
                waiter.error = error
                waiter.done.set()
            self._commit_waiters = []
        # The backoff grows while faults keep coming (on a nearly full disk
        # some writes work now and then) and starts small again after a
        # quiet spell.
        now = self._clock_ms()
        if now - self._last_fault_ms > _FAULT_QUIET_MS:
            self._fault_backoff_s = _FAULT_BACKOFF_MIN_S
        self._last_fault_ms = now
        await trio.sleep(self._fault_backoff_s)
        self._fault_backoff_s = min(self._fault_backoff_s * 2, _FAULT_BACKOFF_MAX_S)

    def _fail_stop(self, error: OSError, during: str) -> NoReturn:
        """Kafka's fatal fault: one line naming the file, the operation and
        the errno, then the process ends (see :mod:`kraft.node.fault`)."""
        if isinstance(error, DiskIOError):
            what = str(error)
        else:
            name = errno.errorcode.get(error.errno or 0, f"errno {error.errno}")
            what = f"{error.filename or self.log.directory}: {name} ({error.strerror or error})"
        self.fault_handler.handle_fault(
            f"metadata log I/O error during {during}, outcome unknown: {what}; stopping so that nothing "
            f"written after the last successful flush counts (restart once the disk is healthy)", error)

    def _storage_recovered(self) -> None:
        log.warning("metadata log writes work again (after %s)", self.storage_error)
        self.storage_error = None


def apply_log_op(log_: MetadataLog, op: LogOp) -> bool:
    """Execute one log operation of a ``Ready`` on the metadata log, as the
    node does (the simulation's disk-backed replicas run this same code).
    Returns True if it wrote new data. Fetched records or snapshot chunks the
    log refuses are logged and dropped (the core fetches them again); disk
    errors (``OSError``) propagate."""
    wrote = False
    match op:
        case AppendAsLeader(batch=batch):
            log_.append_as_leader(encode_batch(batch), batch.epoch)
            wrote = True
        case AppendAsFollower(records=records):
            if records:
                try:
                    log_.append_as_follower(records)
                    wrote = True
                except (CorruptRecordError, LogOffsetError) as e:
                    # Kafka's KafkaRaftClient fails the fetch; the next
                    # one starts again from our (unchanged) log end.
                    log.warning("refused fetched records: %s", e)
        case TruncateTo(offset=offset):
            log_.truncate_to(offset)
        case Flush():
            log_.flush()
        case SnapshotChunk(snapshot_id=sid, position=position, data=data):
            try:
                log_.write_snapshot_chunk(sid, position, data)
                wrote = True
            except LogOffsetError as e:
                # An earlier chunk was lost (disk error): the install
                # fails too, and the next Fetch starts the download over.
                log.warning("dropped a snapshot chunk: %s", e)
        case InstallSnapshot(snapshot_id=sid):
            try:
                log_.install_snapshot(sid)
            except (LogOffsetError, CorruptSnapshotError) as e:
                # The log is unchanged; the leader answers our next Fetch
                # (still below its log start) with the snapshot id again.
                log.warning("snapshot %s not installed, it will be fetched again: %s", sid, e)
            else:
                wrote = True
                log.info("installed snapshot %d-%d from the leader: the log restarts at offset %d",
                         sid.offset, sid.epoch, sid.offset)
    return wrote


def encode_batch(batch: Batch) -> bytes:
    """A core ``Batch`` as a Kafka v2 record batch (data or control)."""
    if batch.controls:
        # LeaderChange, KRaftVersion, Voters (KIP-853): kraft/node/control_records.py
        return encode_control_batch(batch)
    return build_data_batch(list(batch.records), base_offset=batch.base_offset, epoch=batch.epoch,
                            timestamp=batch.append_time_ms)
