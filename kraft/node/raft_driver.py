"""The raft driver: the trio task around the sans-IO raft core, Kafka's
``KafkaRaftClientDriver`` around its ``KafkaRaftClient``.

The names map one to one: Kafka's ``KafkaRaftClient`` is the protocol engine
(here :class:`~kraft.raft.core.RaftCore`, with its ``QuorumState``), and its
``KafkaRaftClientDriver`` the thread that polls it (here :class:`RaftDriver`,
``KraftNode.raft_driver``).
It was ``KafkaRaftClient`` in ``raft_client.py`` (``KraftNode.raft_client``) until issue 45.

A request goes one way through it. Inbound, a listener's task hands the
request to :meth:`RaftDriver.handle_request` and awaits the answer the
core gives (the answer goes straight back to that task, from the ``Ready``
that carries it). Outbound, the core's requests go to the
:class:`RequestSender` (the node's network channel, Kafka's
``NetworkChannel``), whose answers come back in through :meth:`deliver`.

One task (:meth:`RaftDriver.run`) owns the :class:`~kraft.raft.core.RaftCore` and
the :class:`~kraft.records.log.MetadataLog`; everything else talks to it
through a memory channel. It sleeps until the core's next deadline or the
next message, steps the core, and executes the returned ``Ready`` in the
order the core documents: persist the election state, run the log
operations (in a worker thread when they may fsync; a leader's batch writes
in the task), then send, then tell listeners.

Leaders append without waiting: :meth:`RaftDriver.append_nowait` hands the
records to the core's accumulator at once and returns their offset, many
appends may be outstanding, and :meth:`RaftDriver.wait_committed` waits for
one (failing if the leadership ends first).

The raft driver is also where bytes meet the core's abstractions: batches the core
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
:meth:`RaftDriver._on_storage_fault`).
Other work on the log (snapshots, retention) comes in through
:meth:`RaftDriver.run_on_log` and runs between two calls of the core.
"""

from __future__ import annotations

import errno
import heapq
import itertools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn, Protocol

import trio

from kraft.raft import events as ev
from kraft.raft.core import RaftCore, Ready
from kraft.raft.errors import LocalRaftError, NotLeaderError
from kraft.raft.logops import AppendAsLeader, Flush, LogOp
from kraft.node.log_writer import apply_log_op, encode_batch
from kraft.node.quorum_state_store import ElectionStateStore
from kraft.node.fault import FaultHandler, ProcessTerminatingFaultHandler
from kraft.node.ready_report import Telemetry
from kraft.records.errors import DiskIOError
from kraft.records.log import MetadataLog
from kraft.records.view import OffsetAndEpoch
from kraft.wire.rate_limited_log import RateLimitedLog
from kraft.raft.roles import ElectionState, LeaderAndEpoch

log = logging.getLogger("kraft.node")

__all__ = ["KafkaRaftClient", "RequestSender", "Shutdown", "ElectionStateStore", "StorageError", "apply_log_op", "encode_batch"]

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
    """Run ``fn(log)`` in the raft driver's task between two calls of the core."""

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


_FAULT_BACKOFF_MIN_S = 0.05
_FAULT_BACKOFF_MAX_S = 0.5
_FAULT_QUIET_MS = 10_000

class RequestSender(Protocol):
    """Where the core's outbound requests go (Kafka's ``NetworkChannel.send``),
    all those of one ``Ready`` at once: sent without blocking; the answer, or the failure, comes back through
    :meth:`RaftDriver.deliver`."""

    def send_all(self, requests: Sequence[ev.OutboundRequest]) -> None: ...


class RaftDriver:
    """Drives one RaftCore on trio."""

    def __init__(
        self,
        core: RaftCore,
        log_: MetadataLog,
        store: ElectionStateStore,
        *,
        sender: RequestSender | None = None,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
        fault_handler: FaultHandler | None = None,
    ) -> None:
        self.core = core
        #: Called with a disk error of unknown outcome; never returns.
        self.fault_handler: FaultHandler = fault_handler or ProcessTerminatingFaultHandler()
        self.log = log_
        self.store = store
        #: Set before :meth:`run` (the network channel needs this client to deliver to).
        self.sender = sender
        #: Inbound requests waiting for the core's answer, by correlation id.
        self._waiting: dict[int, tuple[trio.Event, list[ev.RaftResponse]]] = {}
        self._clock_ms = clock_ms
        self._inbox_send, self._inbox = trio.open_memory_channel[Any](1024)
        self._deadline_ms: int | None = None
        self._poll_requested = False
        #: Min-heap by offset; all in epoch ``_waiters_epoch`` once checked.
        self._commit_waiters: list[_CommitWaiter] = []
        #: A peer that breaks the protocol in a loop: its first line at once,
        #: the repeats counted into the next (once a minute).
        self._violations = RateLimitedLog(log)
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
        #: raft driver's task (listeners) take it too.
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
        # The core is between calls whenever another task runs (the raft driver
        # task only yields between whole core calls), so appending here is
        # the same as appending from the raft driver's task; the accumulator does
        # not depend on the log the raft driver may be writing meanwhile.
        offset = core.append(self._clock_ms(), records, epoch=epoch)
        if not self._poll_requested:
            # The first record since the leader last wrote a batch starts the
            # linger timer: wake the raft driver so the core's next deadline counts
            # it (later ones change nothing until the next write). A full
            # inbox needs no token: the raft driver steps (and so re-reads the
            # deadline) for every item anyway.
            self._poll_requested = self._wake()
        return OffsetAndEpoch(offset, core.epoch)

    def next_append_offset(self) -> int:
        """Where the next :meth:`append_nowait` goes (:meth:`RaftCore.next_append_offset`);
        :class:`NotLeaderError` on a non-leader or a stopped node."""
        if not self.initialized or self.stopped.is_set():
            raise NotLeaderError("the node is not running")
        return self.core.next_append_offset()

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
        (the witness decision, :mod:`kraft.node.witness_detector`)."""
        self._wake()

    def _wake(self) -> bool:
        """Queue a poll token for the raft driver; False when the inbox is full
        (no token is needed then: the raft driver steps, and so polls, for every
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

    async def handle_request(self, source: int, request: ev.RaftRequest, timeout_ms: int) -> ev.RaftResponse | None:
        """Step the core with one inbound request and return its answer (Kafka's
        ``KafkaRaftClient.handleRequest``), or None when the core gave none
        within ``timeout_ms``. The caller's task waits; the answer comes from
        the ``Ready`` that carries it."""
        correlation = next(self._correlation)
        done = trio.Event()
        slot: list[ev.RaftResponse] = []
        self._waiting[correlation] = (done, slot)
        try:
            self.deliver(ev.InboundRequest(source, correlation, request))
            with trio.move_on_after(timeout_ms / 1000):
                await done.wait()
        finally:
            del self._waiting[correlation]
        return slot[0] if slot else None

    async def run_on_log(self, fn: Callable[[MetadataLog], Any], *, in_thread: bool = True) -> Any:
        """Run ``fn(log)`` in the raft driver's task, between two calls of the core,
        holding :attr:`log_lock`: neither the core nor a log operation sees
        the log half-changed. ``fn`` runs in a worker thread, or (``in_thread``
        False, for quick work that consults the core, such as
        ``RaftCore.validate_snapshot_id``) on the trio thread. Returns what
        ``fn`` returns; raises what it raises."""
        if not self.initialized or self.stopped.is_set():
            raise LocalRaftError("the node is not running")
        task = _LogTask(fn, in_thread)
        await self._inbox_send.send(task)
        # Once queued the raft driver runs it whatever happens to the caller: wait
        # for the outcome (so a caller never cleans up under a running task),
        # or for the raft driver to stop.
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
                    # A timer due again at once must starve neither the other
                    # tasks (the signal handler's) nor the inbox (the Shutdown
                    # they send): yield, and take what is queued, each turn.
                    await trio.lowlevel.checkpoint()
                    try:
                        item = self._inbox.receive_nowait()
                    except trio.WouldBlock:
                        continue
                    await self._handle(self._clock_ms(), item)
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
                self.core.step(now, item)
                await self._execute(self.core.poll(now))

    # ------------------------------------------------------------ Ready

    async def _execute(self, ready: Ready) -> None:
        for v in ready.violations:
            self._violations.log(logging.WARNING, (v.source, v.description),
                                 "refused a protocol violation from node %s: %s", v.source, v.description)
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
            # now): the next append needs to wake the raft driver again. This Ready
            # asks for a poll right after, which sees anything appended since.
            self._poll_requested = False
        requests = []
        for message in ready.send:
            if isinstance(message, ev.OutboundRequest):
                requests.append(message)
            else:
                waiting = self._waiting.get(message.correlation_id)
                if waiting is not None:  # else it timed out on the listener's side meanwhile
                    waiting[1].append(message.message)
                    waiting[0].set()
        if requests:
            assert self.sender is not None
            self.sender.send_all(requests)
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
        """Runs in a worker thread (a leader's writes: in the raft driver's task); only
        this thread touches the log meanwhile (the raft driver's task is awaiting it
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
        must never be forgotten), so the raft driver waits. Any other failure (the
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
