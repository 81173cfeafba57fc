"""A simulated replica's storage on real files: the node's ``MetadataLog``
(Kafka v2 record batches, segments, indexes, ``leader-epoch-checkpoint``,
snapshots) and its ``quorum-state``, in a directory of its own.

:class:`DiskLog` gives the simulation what it gets from
:class:`~kraft.sim.memlog.MemLog` (see :class:`~kraft.sim.simlog.SimLog`),
through the node's own code paths:

* log operations of a ``Ready`` run through :func:`kraft.node.log_writer.apply_log_op`,
  the function the node's shell runs (a write the log refuses is a failure
  here: the simulated network never corrupts bytes);
* the election state goes through :class:`~kraft.node.quorum_state_store.ElectionStateStore`
  (temp file, fsync, rename) and is read back from the file after a crash;
* snapshots are written as ``kraft.node.snapshots.create_snapshot`` writes
  them (``MetadataLog.create_snapshot``, the writer, ``freeze``), then
  retention (``maybe_clean``) moves the log start;
* a crash (:meth:`DiskLog.crash_copy`) asks the :class:`~kraft.sim.disk.DiskModel`
  what survives, rewrites the directory so, and reopens it with
  ``MetadataLog.open``: the recovery the node runs at start.

The simulation's state machine is the record list itself: a snapshot holds
one record per offset below its end, ``(offset, epoch)`` then the record's
identity (a data record's value; a control record's key and value), so the
invariant checkers read committed records by offset from the log or, below
the log start, from the snapshot there.
"""

from __future__ import annotations

import logging
import random
import shutil
import struct
from collections.abc import Callable, Sequence
from pathlib import Path

from kraft.raft.errors import InvalidSnapshotIdError
from kraft.raft.logops import Flush, InstallSnapshot, LogOp, SnapshotChunk, TruncateTo
from kraft.node.log_writer import apply_log_op
from kraft.node.quorum_state_store import ElectionStateStore
from kraft.node.snapshots import batch_ending_at
from kraft.records.batch import RecordBatch, iter_batches
from kraft.records.bootstrap import DynamicVoter, write_bootstrap_snapshot
from kraft.records.kraft_control import KRaftControlHistory
from kraft.records.log import MetadataLog, metadata_partition_dir
from kraft.records.log_config import LogConfig
from kraft.records.state_files import QuorumStateFile
from kraft.records.view import KRaftControlState, OffsetAndEpoch, SnapshotSlice, VoterEntry
from kraft.raft.roles import ElectionState
from kraft.sim.disk import DiskModel
from kraft.sim.invariants import InvariantViolation

__all__ = ["DiskLog", "DiskLogError", "SIM_LOG_CONFIG"]

#: Small segments and dense indexes, so a run rolls segments, deletes them
#: below snapshots and tears index files; retention keeps one snapshot (the
#: log start follows each new snapshot, as ``MemLog.delete_before_snapshot``);
#: the node's setting of fsyncing only on the core's ``Flush``.
SIM_LOG_CONFIG = LogConfig(
    segment_bytes=1024,
    segment_ms=4000,
    index_interval_bytes=256,
    retention_bytes=0,
    flush_on_append=False,
)

_ENTRY_HEADER = struct.Struct(">qi")


class DiskLogError(Exception):
    """The log refused a write the core asked for: a bug in the core, the
    log or the harness (the simulated network never corrupts bytes)."""


class _Refusals(logging.Handler):
    """Collects the warnings ``apply_log_op`` logs when the log refuses
    fetched records, a snapshot chunk or an install."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


_NODE_LOGGER = logging.getLogger("kraft.node")


def record_identity(batch: RecordBatch) -> list[tuple[int, bytes]]:
    """(offset, identity) of every record of a batch: a data record's value,
    a control record's key and value."""
    out = []
    for record in batch.records():
        if batch.is_control:
            identity = b"control:" + (record.key or b"") + b":" + (record.value or b"")
        else:
            identity = record.value or b""
        out.append((record.offset, identity))
    return out


class DiskLog:
    """One replica's ``__cluster_metadata-0`` directory, open."""

    def __init__(
        self,
        directory: Path,
        model: DiskModel,
        clock_ms: Callable[[], int],
        static_voters: Sequence[int] | None,
        cluster_id: str,
        *,
        generation: int = 0,
    ) -> None:
        self.directory = Path(directory)
        self._model = model
        self._clock_ms = clock_ms
        self._static_voters = static_voters
        self._cluster_id = cluster_id
        self._log = MetadataLog.open(self.directory, SIM_LOG_CONFIG, clock_ms=clock_ms)
        self.recovery_report = self._log.recovery_report
        self.store = ElectionStateStore(QuorumStateFile(self._log.quorum_state_path), static_voters, cluster_id)
        #: Bumped whenever existing records are removed or replaced (see MemLog).
        self.generation = generation
        # After a (re)start everything in the files is on the disk.
        self._flushed_end = self._log.end_offset
        self._snapshot_entries: dict[OffsetAndEpoch, dict[int, tuple[int, bytes]]] = {}
        self._refusals = _Refusals()
        #: What the crash that preceded this opening changed in the files.
        self.crash_changes: tuple[str, ...] = ()

    @classmethod
    def format(
        cls,
        metadata_log_dir: Path,
        model: DiskModel,
        clock_ms: Callable[[], int],
        *,
        static_voters: Sequence[int] | None,
        cluster_id: str,
        bootstrap: Sequence[VoterEntry] | None = None,
    ) -> DiskLog:
        """``kafka-storage format`` a fresh log directory (with
        ``--initial-controllers`` when ``bootstrap`` names voters: the
        bootstrap snapshot ``0-0``), track it in ``model`` and open it."""
        metadata_log_dir = Path(metadata_log_dir)
        partition = metadata_partition_dir(metadata_log_dir)
        partition.mkdir(parents=True)
        model.track(partition)
        if bootstrap:
            voters = []
            for entry in bootstrap:
                assert entry.directory_id is not None, "a dynamic voter has a directory id"
                (_listener, host, port), *_ = entry.endpoints
                voters.append(DynamicVoter(entry.voter_id, host, port, entry.directory_id))
            listener = bootstrap[0].endpoints[0][0]
            write_bootstrap_snapshot(metadata_log_dir, voters, listener, kraft_version=1, timestamp_ms=clock_ms())
        return cls(partition, model, clock_ms, static_voters, cluster_id)

    def wipe(self) -> None:
        """The disk is gone: close and delete the whole log directory."""
        self._log.close()
        self._model.untrack(self.directory)
        shutil.rmtree(self.directory.parent)

    def close(self) -> None:
        self._log.close()

    def fail_fsync(self) -> None:
        """The disk under this log starts failing every fsync (EIO)."""
        self._model.fail_fsync(self.directory)

    def heal_fsync(self) -> None:
        self._model.heal_fsync(self.directory)

    # --- LogView (the core reads through these) -----------------------------------

    @property
    def start_offset(self) -> int:
        return self._log.start_offset

    @property
    def end_offset(self) -> int:
        return self._log.end_offset

    @property
    def last_epoch(self) -> int:
        return self._log.last_epoch

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        return self._log.end_offset_for_epoch(epoch)

    def latest_snapshot_id(self) -> OffsetAndEpoch | None:
        return self._log.latest_snapshot_id()

    def earliest_snapshot_id(self) -> OffsetAndEpoch | None:
        return self._log.earliest_snapshot_id()

    def read(self, start_offset: int, max_bytes: int) -> bytes:
        return self._log.read(start_offset, max_bytes)

    def read_snapshot(self, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int) -> SnapshotSlice | None:
        return self._log.read_snapshot(snapshot_id, position, max_bytes)

    def kraft_control_state(self) -> KRaftControlState:
        return self._log.kraft_control_state()

    @property
    def kraft_control(self) -> KRaftControlHistory:
        return self._log.kraft_control

    @property
    def metadata_log(self) -> MetadataLog:
        return self._log

    # --- writes --------------------------------------------------------------------

    def apply(self, op: LogOp) -> None:
        """Execute one log operation as the node's shell does."""
        end_before = self._log.end_offset
        _NODE_LOGGER.addHandler(self._refusals)
        try:
            apply_log_op(self._log, op)
        finally:
            _NODE_LOGGER.removeHandler(self._refusals)
        if self._refusals.messages:
            messages, self._refusals.messages = self._refusals.messages, []
            raise DiskLogError(f"{type(op).__name__} refused: {'; '.join(messages)}")
        match op:
            case Flush():
                self._flushed_end = self._log.end_offset
            case TruncateTo():
                if self._log.end_offset < end_before:
                    self.generation += 1
                self._flushed_end = min(self._flushed_end, self._log.end_offset)
            case InstallSnapshot(snapshot_id=sid):
                self.generation += 1
                self._flushed_end = sid.offset
            case SnapshotChunk():
                pass

    def persist_election(self, state: ElectionState) -> None:
        self.store.write(state)

    def read_election(self) -> ElectionState | None:
        return self.store.read()

    def create_snapshot(self, snapshot_id: OffsetAndEpoch) -> bool:
        """Snapshot the records below ``snapshot_id.offset`` the way the node
        does, then apply retention (the log start moves to it). False when a
        snapshot at least as new exists already."""
        mlog = self._log
        latest = mlog.latest_snapshot_id()
        if latest is not None and not (latest.offset < snapshot_id.offset and latest.epoch <= snapshot_id.epoch):
            return False
        batch = batch_ending_at(mlog, snapshot_id.offset)
        values = [
            _ENTRY_HEADER.pack(offset, epoch) + identity
            for offset, (epoch, identity) in sorted(self._entries_below(snapshot_id.offset).items())
        ]
        try:
            writer = mlog.create_snapshot(snapshot_id, last_contained_log_timestamp=batch.max_timestamp)
        except ValueError as e:
            raise InvalidSnapshotIdError(str(e)) from None
        try:
            writer.append(values)
            writer.freeze()
        except BaseException:
            writer.abort()
            raise
        start = mlog.start_offset
        mlog.maybe_clean()
        if mlog.start_offset != start:
            self.generation += 1
        return True

    def _entries_below(self, offset: int) -> dict[int, tuple[int, bytes]]:
        entries = dict(self._snapshot_at_start())
        for batch in self._log.iter_batches():
            if batch.base_offset >= offset:
                break
            for o, identity in record_identity(batch):
                entries[o] = (batch.partition_leader_epoch, identity)
        return entries

    # --- reads for the invariant checkers ---------------------------------------------

    @property
    def flushed_end_offset(self) -> int:
        """Offsets below this are durable (the last ``Flush``, or a restart)."""
        return self._flushed_end

    def entry_at(self, offset: int) -> tuple[int, bytes] | None:
        """(epoch, record identity) at ``offset``, from the log or from the
        snapshot at its start."""
        if offset < 0 or offset >= self._log.end_offset:
            return None
        if offset >= self._log.start_offset:
            batch = next(iter_batches(self._log.read(offset, 1)))
            for o, identity in record_identity(batch):
                if o == offset:
                    return batch.partition_leader_epoch, identity
            return None
        return self._snapshot_at_start().get(offset)

    def _snapshot_at_start(self) -> dict[int, tuple[int, bytes]]:
        sid = self._log.earliest_snapshot_id()
        if sid is None:
            return {}
        cached = self._snapshot_entries.get(sid)
        if cached is None:
            reader = self._log.open_snapshot(sid)
            cached = {}
            if reader is not None:
                with reader:
                    for record in reader.contents().data_records():
                        value = record.value or b""
                        offset, epoch = _ENTRY_HEADER.unpack_from(value)
                        cached[offset] = (epoch, value[_ENTRY_HEADER.size :])
            self._snapshot_entries = {sid: cached}
        return cached

    # --- crash model -------------------------------------------------------------------

    def crash_copy(self, rng: random.Random | None = None) -> DiskLog:
        """Crash: lose what the disk model says is not durable, then reopen
        the directory with the node's recovery. Returns the reopened log (its
        :attr:`crash_changes` say what the crash changed). Raises :class:`InvariantViolation` if a
        flushed batch or the last written election state did not survive."""
        start, flushed_end = self._log.start_offset, self._flushed_end
        flushed = [self.entry_at(offset) for offset in range(start, flushed_end)]
        election = self.store.read()
        image = self._model.crash_image(self.directory, rng)
        self._log.close()
        self._model.restore(self.directory, image)
        reopened = DiskLog(
            self.directory,
            self._model,
            self._clock_ms,
            self._static_voters,
            self._cluster_id,
            generation=self.generation + 1,
        )
        # Every flushed record is still there: in the log, or below its start
        # in the snapshot there (a snapshot may be ahead of a torn log, and the
        # log start may come back down to the first segment's base: as
        # Kafka's, it is not stored).
        after = [reopened.entry_at(offset) for offset in range(start, flushed_end)]
        if after != flushed:
            lost = next(start + i for i, (a, b) in enumerate(zip(flushed, after)) if a != b)
            raise InvariantViolation(
                "flushed records survive a crash",
                f"{self.directory}: offset {lost} was flushed as {flushed[lost - start]}, "
                f"after the crash and recovery it is {after[lost - start]} "
                f"(log [{reopened.start_offset}, {reopened.end_offset}); {'; '.join(image.changes)}; "
                f"{reopened.recovery_report})",
            )
        if reopened.store.read() != election:
            raise InvariantViolation(
                "the election state survives a crash",
                f"{self.directory}: quorum-state held {election} before the crash, {reopened.store.read()} after",
            )
        reopened.crash_changes = image.changes
        return reopened
