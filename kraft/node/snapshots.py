"""Snapshots in the node: writing them, retention, and delivering them to
listeners (KIP-630, as Kafka's ``KafkaRaftClient`` and controller do).

Writing. :func:`create_snapshot` (``KraftNode.create_snapshot``) writes a
snapshot of the caller's state at a committed offset: the id is checked by
the core (``RaftCore.validate_snapshot_id``: committed, and a real
(offset, epoch) of the log) and must end on a batch boundary; the file is
``<offset>-<epoch>.checkpoint`` (SnapshotHeader, the records, SnapshotFooter)
staged as ``.checkpoint.part`` and frozen (fsync, rename). Then the log is
cleaned by retention (``metadata.max.retention.bytes`` / ``.ms``, Kafka's
``maybeClean``: old snapshots go and the log start moves up to the next one,
deleting the segments before it; at least one snapshot is always kept).
Kafka cleans every 60 s (``RaftMetadataLogCleanerManager``); the node does
that too (:func:`run_log_cleaner`) and also right after each new snapshot, so
the log start follows the snapshots without waiting a minute.

Every step that reads or changes the log runs through
``RaftDriver.run_on_log``: the raft driver's task executes it between two calls of
the core, so neither the core nor a log operation ever sees the log
half-changed. Only the records go to the ``.part`` file outside it.

Which state is snapshotted. An application embedding the node has its own
state machine and passes its state to :meth:`KraftNode.create_snapshot`
(as Kafka's controller passes its metadata image). ``kraft node start`` has
no state machine, so its snapshots (:func:`run_record_history_snapshots`)
hold the record history itself: every committed data record from offset 0,
in order. That keeps the log bounded by retention while a follower or
observer that fell behind the log start can still catch up, through
FetchSnapshot, to exactly the records it missed. It is taken when Kafka's
controller would take one (:class:`SnapshotPolicy`:
``metadata.log.max.record.bytes.between.snapshots`` bytes of committed
batches, or ``metadata.log.max.snapshot.interval.ms`` since the last one).
The history is kept in memory and grows with the log: fine for a demo or a
test cluster, not for a long-lived store (pass your own state instead).

Listeners. :func:`committed_items` (``KraftNode.committed_batches``) has the
semantics of Kafka's ``RaftClient.Listener``: a new listener first gets the
latest snapshot (``handleLoadSnapshot``), as does one whose next offset fell
below the log start (a follower installed a snapshot, or retention moved the
start past it); then every committed batch after it (``handleCommit``). A
snapshot arrives as :class:`SnapshotLoaded`; batches as :class:`CommittedBatch`.
The 0-0 bootstrap snapshot (``kraft storage format`` writes one for a
dynamic quorum, and with 4.4's layout the bootstrap metadata too) is not a
committed state: Kafka hands it to ``handleLoadBootstrap``, which its
``MetadataLoader`` ignores and its controller only reads bootstrap metadata
from. A listener here never gets it; it starts at offset 0.
Once the node stops, the listener ends (Kafka's listeners get no more
callbacks after ``beginShutdown``) instead of waiting or reading: the node
closes its log when it stops, and a listener may run in a task of its own
that outlives the node.

What this module needs of a node is narrow: a :class:`~kraft.node.raft_view.RaftWriter`
(the log and the core, through ``run_on_log``), or for the record-history
snapshots a :class:`SnapshotTarget` (``KraftNode`` is one).
"""

from __future__ import annotations

import errno
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import trio

from kraft.node.leader_changes import LeaderChanged
from kraft.node.leader_changes import due as leader_change_due
from kraft.raft.errors import InvalidSnapshotIdError, LocalRaftError
from kraft.raft.roles import LeaderAndEpoch
from kraft.records.batch import iter_batches
from kraft.records.errors import LogOffsetError
from kraft.records.log import MetadataLog
from kraft.records.snapshot import BOOTSTRAP_SNAPSHOT_ID, SnapshotWriter
from kraft.records.view import OffsetAndEpoch

if TYPE_CHECKING:
    from kraft.config import NodeConfig
    from kraft.node.raft_view import RaftView, RaftWriter

log = logging.getLogger("kraft.node")

__all__ = [
    "CommittedBatch",
    "CommittedSource",
    "SnapshotTarget",
    "SnapshotLoaded",
    "SnapshotPolicy",
    "committed_items",
    "read_committed",
    "create_snapshot",
    "run_log_cleaner",
    "run_record_history_snapshots",
    "LOG_CLEANER_INTERVAL_S",
]

#: Kafka's raft client runs ``maybeClean`` every 60 s.
LOG_CLEANER_INTERVAL_S = 60.0
#: Records are handed to the snapshot writer in chunks of about this size.
_WRITE_CHUNK_BYTES = 1 << 20
#: A listener whose committed range is not readable yet (a snapshot install
#: still in flight) looks again after this long.
_UNREADABLE_RETRY_S = 0.1


@dataclass(frozen=True, slots=True)
class SnapshotLoaded:
    """A listener item: the state as of ``snapshot_id`` (Kafka's
    ``handleLoadSnapshot``). It replaces whatever the listener had: the
    batches that follow start at ``snapshot_id.offset``."""

    snapshot_id: OffsetAndEpoch
    #: The snapshot's data records (the SnapshotHeader/Footer control records
    #: are not included).
    records: tuple[bytes, ...]
    last_contained_log_timestamp: int


@dataclass(frozen=True, slots=True)
class CommittedBatch:
    """A committed record batch as listeners see it (Kafka's ``handleCommit``)."""

    base_offset: int
    last_offset: int
    epoch: int
    append_time_ms: int
    is_control: bool
    records: tuple[bytes, ...]  # values; for a control batch, the raw control values
    #: The batch's size in the log (what Kafka's snapshot policy counts).
    size_in_bytes: int = 0


class CommittedSource(Protocol):
    """Whatever hands out the committed log as a listener sees it
    (``KraftNode.committed_batches``)."""

    def committed_batches(self, start_offset: int | None = None) -> AsyncIterator[CommittedBatch | SnapshotLoaded]:
        ...


class SnapshotTarget(CommittedSource, Protocol):
    """What :func:`run_record_history_snapshots` needs: the committed log, a
    way to write a snapshot of it, and the snapshot settings."""

    @property
    def config(self) -> NodeConfig:
        ...

    async def create_snapshot(self, at: OffsetAndEpoch | int, records: Iterable[bytes]) -> OffsetAndEpoch:
        ...


# ---------------------------------------------------------------- writing


def batch_ending_at(mlog: MetadataLog, offset: int) -> Any:
    """The batch holding ``offset - 1``; it must end there (a snapshot that
    ended mid-batch could never be continued by fetching whole batches)."""
    try:
        data = mlog.read(offset - 1, 1)
    except LogOffsetError as e:
        raise InvalidSnapshotIdError(f"snapshot end offset {offset} is not in the log: {e}") from None
    batch = next(iter_batches(data), None)
    if batch is None:
        raise InvalidSnapshotIdError(f"snapshot end offset {offset} is past the log end {mlog.end_offset}")
    last = batch.base_offset + batch.last_offset_delta
    if last != offset - 1:
        raise InvalidSnapshotIdError(
            f"snapshot end offset {offset} is inside the batch {batch.base_offset}..{last}: "
            "a snapshot ends on a batch boundary")
    return batch


def _resolve_snapshot_id(mlog: MetadataLog, at: OffsetAndEpoch | int) -> OffsetAndEpoch:
    if isinstance(at, OffsetAndEpoch):
        return at
    offset = int(at)
    epoch = mlog.epoch_for_offset(offset - 1) if offset > 0 else None
    if epoch is None:
        raise InvalidSnapshotIdError(f"no epoch is known for offset {offset - 1} (log {mlog.start_offset}..{mlog.end_offset})")
    return OffsetAndEpoch(offset, epoch)


async def create_snapshot(raft_driver: RaftWriter | None, at: OffsetAndEpoch | int,
                          records: Iterable[bytes]) -> OffsetAndEpoch:
    """Write a snapshot of ``records`` ending at ``at`` (an id, or a committed
    offset whose epoch is taken from the log), then apply retention. Returns
    the snapshot id. Raises :class:`~kraft.raft.errors.InvalidSnapshotIdError` for
    an id that is not committed, not in the log, not on a batch boundary, or
    not newer than the latest snapshot; ``OSError`` if the file cannot be
    written (nothing is left behind then)."""
    if raft_driver is None or not raft_driver.initialized:
        raise LocalRaftError("the node is not running")

    def prepare(mlog: MetadataLog) -> tuple[OffsetAndEpoch, SnapshotWriter]:
        sid = _resolve_snapshot_id(mlog, at)
        raft_driver.core.validate_snapshot_id(sid)
        batch = batch_ending_at(mlog, sid.offset)
        latest = mlog.latest_snapshot_id()
        if latest is not None and not (latest.offset < sid.offset and latest.epoch <= sid.epoch):
            raise InvalidSnapshotIdError(f"snapshot {sid} is not newer than the latest snapshot {latest}")
        try:
            writer = mlog.create_snapshot(sid, last_contained_log_timestamp=batch.max_timestamp)
        except ValueError as e:
            raise InvalidSnapshotIdError(str(e)) from None
        return sid, writer

    # On the trio thread: it consults the core, and only opens the file.
    sid, writer = await raft_driver.run_on_log(prepare, in_thread=False)
    try:
        chunk: list[bytes] = []
        size = 0
        for value in records:
            chunk.append(bytes(value))
            size += len(value)
            if size >= _WRITE_CHUNK_BYTES:
                await trio.to_thread.run_sync(writer.append, chunk)
                chunk, size = [], 0
        if chunk:
            await trio.to_thread.run_sync(writer.append, chunk)

        def publish(mlog: MetadataLog) -> None:
            latest = mlog.latest_snapshot_id()
            if latest is not None and latest.offset >= sid.offset:
                # A snapshot from the leader was installed meanwhile.
                raise InvalidSnapshotIdError(f"snapshot {sid} is not newer than the latest snapshot {latest}")
            writer.freeze()

        await raft_driver.run_on_log(publish)
    except BaseException:
        writer.abort()
        raise
    log.info("created snapshot %s", sid)
    await clean_log(raft_driver)
    return sid


async def clean_log(raft_driver: RaftWriter) -> bool:
    """Apply retention now (Kafka's ``maybeClean``); True if anything went."""

    def clean(mlog: MetadataLog) -> bool:
        start, snapshots = mlog.start_offset, mlog.snapshot_ids()
        if not mlog.maybe_clean():
            return False
        log.info("retention: log start offset %d -> %d, snapshots %s -> %s",
                 start, mlog.start_offset, _ids(snapshots), _ids(mlog.snapshot_ids()))
        return True

    return await raft_driver.run_on_log(clean)


def _ids(ids: list[OffsetAndEpoch]) -> str:
    return "[" + ", ".join(f"{s.offset}-{s.epoch}" for s in ids) + "]"


async def run_log_cleaner(raft_driver: RaftWriter, interval_s: float = LOG_CLEANER_INTERVAL_S) -> None:
    """Retention every ``interval_s`` (snapshots age out by time even when no
    new one is written). Runs until cancelled or the raft driver stops."""
    while not raft_driver.stopped.is_set():
        await trio.sleep(interval_s)
        try:
            await clean_log(raft_driver)
        except OSError as e:
            if e.errno == errno.EIO:
                raise  # outcome unknown: the node fail-stops (kraft.node.fault), never retries an fsync
            log.warning("retention failed: %s", e)
        except LocalRaftError:
            return  # the node stopped


# ---------------------------------------------------------------- policy


@dataclass(slots=True)
class SnapshotPolicy:
    """When to snapshot, as Kafka's controller ``SnapshotGenerator`` decides:
    after ``max_bytes_between_snapshots`` bytes of committed batches, or —
    when something was committed — once ``max_interval_ms`` passed since the
    last snapshot (0 disables the time trigger)."""

    max_bytes_between_snapshots: int
    max_interval_ms: int
    last_snapshot_ms: int
    bytes_since_last: int = 0
    #: After a failed attempt, none before this time.
    retry_after_ms: int = 0
    retry_backoff_ms: int = 5000

    def on_commit(self, size_in_bytes: int, now_ms: int) -> str | None:
        """Count a committed batch; the reason to snapshot now, or None."""
        self.bytes_since_last += size_in_bytes
        if now_ms < self.retry_after_ms:
            return None
        if self.bytes_since_last >= self.max_bytes_between_snapshots:
            return f"{self.bytes_since_last} bytes committed since the last snapshot"
        if self.max_interval_ms > 0 and now_ms - self.last_snapshot_ms >= self.max_interval_ms:
            return f"{now_ms - self.last_snapshot_ms} ms since the last snapshot"
        return None

    def on_snapshot(self, now_ms: int) -> None:
        """A snapshot was written or loaded: start counting afresh."""
        self.bytes_since_last = 0
        self.last_snapshot_ms = now_ms
        self.retry_after_ms = 0

    def on_failure(self, now_ms: int) -> None:
        self.retry_after_ms = now_ms + self.retry_backoff_ms


def _now_ms() -> int:
    return int(time.time() * 1000)


async def write_snapshot(create: Callable[[OffsetAndEpoch, Sequence[bytes]], Awaitable[object]],
                         snapshot_id: OffsetAndEpoch, records: Sequence[bytes], policy: SnapshotPolicy, now: int,
                         done: str) -> None:
    """One snapshot the policy asked for, its outcome told to the policy:
    ``done`` is logged once written; an id another snapshot already covers
    is no failure; a failed write is retried after the backoff, except EIO,
    whose outcome is unknown (the node fail-stops, kraft.node.fault, and
    never retries an fsync)."""
    try:
        await create(snapshot_id, records)
    except InvalidSnapshotIdError as e:
        # Typically a snapshot from the leader already covers it.
        log.debug("no snapshot at %s: %s", snapshot_id, e)
        policy.on_snapshot(now)
    except OSError as e:
        if e.errno == errno.EIO:
            raise
        log.warning("snapshot at %s failed (%s), retrying in %d ms", snapshot_id, e, policy.retry_backoff_ms)
        policy.on_failure(now)
    else:
        log.info("%s", done)
        policy.on_snapshot(now)


async def run_record_history_snapshots(
    node: SnapshotTarget, policy: SnapshotPolicy | None = None, clock_ms: Callable[[], int] = _now_ms
) -> None:
    """``kraft node start``'s snapshots: the committed data records
    themselves (see the module docstring). Runs until the node stops."""
    config = node.config
    if policy is None:
        policy = SnapshotPolicy(config.max_bytes_between_snapshots, config.max_snapshot_interval_ms, clock_ms())
    history: list[bytes] = []
    async for item in node.committed_batches():
        if isinstance(item, SnapshotLoaded):
            history = list(item.records)
            policy.on_snapshot(clock_ms())
            continue
        if not item.is_control:
            history.extend(item.records)
        now = clock_ms()
        reason = policy.on_commit(item.size_in_bytes, now)
        if reason is None:
            continue
        sid = OffsetAndEpoch(item.last_offset + 1, item.epoch)
        # ``history`` is not touched while this awaits: this loop is the
        # only writer and it is suspended here.
        await write_snapshot(node.create_snapshot, sid, history, policy, now,
                             f"snapshot {sid} of {len(history)} records: {reason}")


# ---------------------------------------------------------------- listeners


def read_committed(mlog: MetadataLog, offset: int, hwm: int) -> list[CommittedBatch]:
    """The batches from the one holding ``offset`` up to the high watermark."""
    out: list[CommittedBatch] = []
    for b in mlog.iter_batches(offset):
        if b.base_offset >= hwm:
            break
        last = b.base_offset + b.last_offset_delta
        if last < offset:
            continue
        recs = b.records()
        out.append(CommittedBatch(b.base_offset, last, b.partition_leader_epoch, b.max_timestamp,
                                  b.is_control, tuple(bytes(r.value or b"") for r in recs),
                                  b.size_in_bytes))
    return out


async def committed_items(
    raft_driver: RaftView, start_offset: int | None = None, *, leader_changes: bool = False,
) -> AsyncIterator[CommittedBatch | SnapshotLoaded | LeaderChanged]:
    """Kafka's listener semantics (module docstring). ``start_offset`` None
    is a new listener: the latest snapshot first, if there is one; an offset
    resumes there, with a snapshot only if it is below the log start. With
    ``leader_changes``, :class:`~kraft.node.leader_changes.LeaderChanged`
    items too, this node's own leadership only once this listener has read
    past the epoch's start (Kafka's ``maybeFireLeaderChange``)."""
    mlog = raft_driver.log
    next_offset = -1 if start_offset is None else max(start_offset, 0)
    told: LeaderAndEpoch | None = None
    while True:
        if leader_changes and (change := leader_change_due(raft_driver, told, next_offset)) is not None:
            told = change
            yield LeaderChanged(change)
        async with raft_driver.committed:
            while raft_driver.high_watermark <= max(next_offset, 0) and not raft_driver.stopped.is_set():
                if leader_changes and leader_change_due(raft_driver, told, next_offset) is not None:
                    break
                await raft_driver.committed.wait()
        if leader_changes and raft_driver.high_watermark <= max(next_offset, 0) and not raft_driver.stopped.is_set():
            continue  # woken by a leader change: give it first (top of the loop)
        hwm = raft_driver.high_watermark
        reader = None
        batches: list[CommittedBatch] = []
        async with raft_driver.log_lock:
            # Checked under the lock: the node closes the log only after the
            # raft_driver stopped, so a read past this check never meets a closed
            # segment (whose reads would fail with EBADF).
            if raft_driver.stopped.is_set():
                return
            start = mlog.start_offset
            latest = mlog.latest_snapshot_id()
            if latest == BOOTSTRAP_SNAPSHOT_ID:
                latest = None  # uncommitted bootstrap state (module docstring)
            wants_snapshot = next_offset < 0 or next_offset < start
            if wants_snapshot and latest is not None and latest.offset <= hwm:
                reader = mlog.open_snapshot(latest)
                if reader is None:
                    # Retention removes a snapshot from the log before its
                    # file, under this lock: the file was deleted by hand.
                    raise LocalRaftError(f"snapshot {latest.offset}-{latest.epoch} is gone from {mlog.directory}: "
                                         f"the committed records below offset {latest.offset} cannot be delivered")
            elif not wants_snapshot or latest is None:
                if start > max(next_offset, 0):
                    # The log start only moves to a snapshot's end offset and
                    # one snapshot is always kept (MetadataLog), so this is a
                    # broken directory: jumping to the start would skip the
                    # offsets below it without a word.
                    raise LocalRaftError(
                        f"the committed records {max(next_offset, 0)}..{start - 1} are gone: the log starts at "
                        f"{start} and no snapshot covers them")
                next_offset = max(next_offset, start)
                batches = read_committed(mlog, next_offset, min(hwm, mlog.end_offset))
        if reader is not None:
            assert latest is not None
            try:
                contents = await trio.to_thread.run_sync(reader.contents)
            finally:
                reader.close()
            yield SnapshotLoaded(
                latest,
                tuple(bytes(r.value or b"") for r in contents.data_records()),
                contents.header.last_contained_log_timestamp,
            )
            next_offset = latest.offset
            continue
        if not batches:
            # Committed but not readable yet (a snapshot download that is
            # being installed): look again shortly or when more commits.
            with trio.move_on_after(_UNREADABLE_RETRY_S):
                async with raft_driver.committed:
                    await raft_driver.committed.wait()
            continue
        for batch in batches:
            yield batch
            next_offset = batch.last_offset + 1
            if leader_changes and (change := leader_change_due(raft_driver, told, next_offset)) is not None:
                told = change
                yield LeaderChanged(change)
