"""The on-disk ``__cluster_metadata`` partition, laid out exactly as Kafka does::

    <metadata.log.dir>/__cluster_metadata-0/
        00000000000000000000.log / .index / .timeindex     segments
        leader-epoch-checkpoint                             KIP-101 epoch cache
        partition.metadata                                  topic id
        quorum-state                                        election state (see state_files)
        <offset>-<epoch>.checkpoint                         snapshots

:class:`MetadataLog` implements the read-only :class:`~kraft.records.view.LogView`
the raft core consults; the shell calls its write methods (append, truncate,
snapshot, clean) while executing the core's decisions. It is single-threaded:
one owner calls it.

Opening runs recovery (see :mod:`kraft.records.recovery`) and keeps what it
repaired in :attr:`MetadataLog.recovery_report`.
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kraft.records.batch import PARTITION_LEADER_EPOCH_OFFSET, RecordBatch, iter_batches
from kraft.records.epoch_cache import LEADER_EPOCH_CHECKPOINT_FILE, EpochEntry, LeaderEpochCache
from kraft.records.errors import (
    CorruptLogError,
    CorruptRecordError,
    CorruptSnapshotError,
    LogOffsetError,
    RecordsError,
    StateFileError,
)
from kraft.records.errors import DiskIOError
from kraft.records.fileutil import NO_SPACE_ERRNOS, disk_operation, fsync_dir
from kraft.records.log_config import LogConfig
from kraft.records.recovery import RecoveryReport, leftover_files, orphaned_indexes, quick_check_segment, recover_segment
from kraft.records.segment import BatchHeader, LogSegment, parse_segment_base
from kraft.records.snapshot import (
    RawSnapshotWriter,
    SnapshotReader,
    SnapshotWriter,
    delete_snapshot,
    list_snapshot_paths,
    read_snapshot_timestamp,
    snapshot_file_name,
    validate_snapshot_bytes,
)
from kraft.records.state_files import (
    CLUSTER_METADATA_DIR,
    METADATA_TOPIC_ID,
    PARTITION_METADATA_FILE,
    QUORUM_STATE_FILE,
    read_partition_metadata,
    write_partition_metadata,
)
from kraft.records.kraft_control import (
    KRaftControlHistory,
    control_entries,
    voter_entries,
    voters_record_of,
)
from kraft.records.view import KRaftControlState, OffsetAndEpoch, SnapshotSlice

_BASE_OFFSET = struct.Struct(">q")
_EPOCH = struct.Struct(">i")


def metadata_partition_dir(metadata_log_dir: str | Path) -> Path:
    """``<metadata.log.dir>/__cluster_metadata-0``."""
    return Path(metadata_log_dir) / CLUSTER_METADATA_DIR


@dataclass(frozen=True, slots=True)
class AppendInfo:
    """Offsets of an append: first and last offset written."""

    first_offset: int
    last_offset: int


def _system_ms() -> int:
    return int(time.time() * 1000)


def _check_partition_metadata(path: Path, topic_id: Any) -> None:
    """Kafka's ``PartitionMetadataFile``: written on first open; after that
    it must name the topic being opened."""
    if path.exists():
        stored = read_partition_metadata(path)
        if stored != topic_id:
            raise StateFileError(str(path), f"topic id {stored} does not match the expected {topic_id}")
    else:
        write_partition_metadata(path, topic_id)


class MetadataLog:
    """The metadata partition directory: segments, epoch cache, snapshots."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        clock_ms: Callable[[], int],
        segments: list[LogSegment],
        epoch_cache: LeaderEpochCache,
        snapshots: dict[OffsetAndEpoch, Path],
        report: RecoveryReport,
        log_start_offset: int,
    ) -> None:
        self.directory = directory
        self.config = config
        self._clock_ms = clock_ms
        self._segments = segments
        self._epochs = epoch_cache
        self._snapshots = snapshots
        self._snapshot_timestamps: dict[OffsetAndEpoch, int | None] = {}
        self._log_start_offset = log_start_offset
        self.recovery_report = report
        self._closed = False
        self._downloads: dict[OffsetAndEpoch, RawSnapshotWriter] = {}
        #: KIP-853 voter sets and kraft.version levels of the latest snapshot
        #: and the log, uncommitted ones included.
        self._control = KRaftControlHistory()

    # ==== opening & recovery ==========================================================

    @classmethod
    def open(
        cls,
        directory: str | Path,
        config: LogConfig | None = None,
        *,
        clock_ms: Callable[[], int] = _system_ms,
        topic_id: Any = METADATA_TOPIC_ID,
        verify_all_segments: bool = False,
    ) -> MetadataLog:
        """Open (creating if needed) the partition directory and recover it.

        Raises :class:`CorruptLogError` when the directory cannot be used
        without dropping CRC-valid data, and :class:`StateFileError` when
        ``partition.metadata`` names another topic.
        """
        directory = Path(directory)
        config = config or LogConfig()
        if not directory.is_dir():
            directory.mkdir(parents=True)
            fsync_dir(directory.parent)
        report = RecoveryReport(str(directory))

        for leftover in leftover_files(directory):
            leftover.unlink(missing_ok=True)
            report.add(leftover, None, "deleted", "leftover from an interrupted write or delete")

        _check_partition_metadata(directory / PARTITION_METADATA_FILE, topic_id)

        bases = sorted(b for p in directory.iterdir() if (b := parse_segment_base(p.name)) is not None)
        for orphan in orphaned_indexes(directory, set(bases)):
            # Kafka's LogLoader deletes index files whose segment is gone.
            orphan.unlink(missing_ok=True)
            report.add(orphan, None, "deleted", "orphaned index file without its .log segment")
        segments, headers = cls._load_segments(directory, bases, config, clock_ms(), report, verify_all_segments)

        first_base = segments[0].base_offset
        snapshots = cls._load_snapshots(directory, first_base, report)
        # The log start only ever moves to a snapshot's end offset, and older
        # snapshots are deleted when it does: so after a restart it is the
        # first snapshot at or past the first segment's base (a log that still
        # starts at segment 0 starts at 0).
        log_start = first_base
        if first_base > 0:
            reaching = [sid.offset for sid in snapshots if sid.offset >= first_base]
            if not reaching:
                for segment in segments:
                    segment.close(final_time_index_entry=False)
                raise CorruptLogError(
                    f"inconsistent snapshot state: the log starts at {first_base} but no snapshot reaches that offset",
                    path=str(directory),
                )
            log_start = min(reaching[0], segments[-1].next_offset)
        epoch_cache = cls._load_epoch_cache(directory, segments, headers, log_start, report)
        log = cls(directory, config, clock_ms, segments, epoch_cache, snapshots, report, log_start)
        if log.truncate_to_latest_snapshot():
            report.add(directory, None, "truncated fully", f"latest snapshot {log.latest_snapshot_id()} is past the log end")
        try:
            log._load_kraft_control()
        except BaseException:
            log.close()
            raise
        report.log_start_offset = log.start_offset
        report.log_end_offset = log.end_offset
        return log

    @staticmethod
    def _load_segments(directory: Path, bases: list[int], config: LogConfig, now: int, report: RecoveryReport,
                       verify_all_segments: bool) -> tuple[list[LogSegment], list[BatchHeader]]:
        """The segments at ``bases`` (one empty segment at 0 when there are
        none), with the active segment recovered as Kafka's
        ``LogLoader.recoverLog`` does and the others checked; the active
        segment's batch headers. Every segment is closed again on failure."""
        segments = [LogSegment(directory, b, config, created_ms=now) for b in bases]
        try:
            if not segments:
                segments.append(LogSegment(directory, 0, config, created_ms=now))
                fsync_dir(directory)
            for i, segment in enumerate(segments[:-1]):
                if verify_all_segments:
                    # Later segments hold data: damage here can never be a torn tail.
                    headers = recover_segment(segment, report, allow_truncate=False)
                    segment.load_state_from_headers(headers)
                else:
                    quick_check_segment(segment, report)
                segment.next_offset = segments[i + 1].base_offset
            active = segments[-1]
            headers = recover_segment(active, report)
            active.load_state_from_headers(headers)
            active.open_indexes_for_append()
        except BaseException:
            for segment in segments:
                segment.close(final_time_index_entry=False)
            raise
        return segments, headers

    @staticmethod
    def _load_snapshots(directory: Path, log_start: int, report: RecoveryReport) -> dict[OffsetAndEpoch, Path]:
        snapshots: dict[OffsetAndEpoch, Path] = {}
        for sp in list_snapshot_paths(directory):
            if sp.partial or sp.deleted:
                sp.path.unlink(missing_ok=True)
                report.add(sp.path, None, "deleted", "partial or deleted snapshot")
                continue
            if sp.snapshot_id.offset < log_start:
                sp.path.unlink(missing_ok=True)
                report.add(sp.path, None, "deleted", f"snapshot before the log start offset {log_start}")
                continue
            try:
                validate_snapshot_bytes(sp.path.read_bytes(), str(sp.path))
            except CorruptSnapshotError as exc:
                # Not deleted: an operator may want it. It is just not offered.
                report.add(sp.path, exc.position, "ignored corrupt snapshot", exc.reason)
                continue
            snapshots[sp.snapshot_id] = sp.path
        return dict(sorted(snapshots.items()))

    @staticmethod
    def _load_epoch_cache(
        directory: Path,
        segments: list[LogSegment],
        active_headers: list[BatchHeader],
        log_start: int,
        report: RecoveryReport,
    ) -> LeaderEpochCache:
        path = directory / LEADER_EPOCH_CHECKPOINT_FILE
        log_end = segments[-1].next_offset
        try:
            cache = LeaderEpochCache.load(path)
        except StateFileError as exc:
            report.add(path, None, "rebuilt from the log", exc.reason)
            cache = LeaderEpochCache(path)
            cache.replace(_epochs_from_segments(segments), flush=False)
            cache.truncate_from_start(log_start, flush=False)
            cache.flush()
            return cache
        if not path.exists() and log_end > log_start:
            cache.replace(_epochs_from_segments(segments), flush=False)
            cache.truncate_from_start(log_start, flush=False)
            cache.flush()
            report.add(path, None, "rebuilt from the log", "missing leader-epoch-checkpoint")
            return cache
        changed = False
        if cache.truncate_from_end(log_end, flush=False):
            report.add(path, None, "dropped entries", f"epochs starting at or after the log end {log_end}")
            changed = True
        if cache.truncate_from_start(log_start, flush=False):
            changed = True
        earliest = cache.earliest_entry
        if earliest is not None and earliest.start_offset > log_start:
            # The log start was moved past a segment's base by a snapshot before
            # the restart; the segment (and its batches) is still here, so the
            # epochs of [log start, first entry) come back from the headers.
            prefix = LeaderEpochCache(None)
            for segment in segments:
                if segment.base_offset >= earliest.start_offset:
                    break
                for h in segment.iter_headers():
                    if h.base_offset >= earliest.start_offset:
                        break
                    if h.partition_leader_epoch >= 0:
                        prefix.assign(h.partition_leader_epoch, h.base_offset, flush=False)
            if len(prefix):
                for entry in cache.entries:
                    prefix.assign(entry.epoch, entry.start_offset, flush=False)
                cache.replace(prefix.entries, flush=False)
                report.add(path, None, "extended from the log", f"epochs of offsets {log_start}..{earliest.start_offset}")
                changed = True
        # The active segment was just scanned: its epoch boundaries are facts.
        active_base = segments[-1].base_offset
        expected = LeaderEpochCache(None, [e for e in cache.entries if e.start_offset < active_base])
        for h in active_headers:
            if h.partition_leader_epoch >= 0:
                expected.assign(h.partition_leader_epoch, h.base_offset, flush=False)
        expected.truncate_from_start(log_start, flush=False)
        if expected.entries != cache.entries:
            report.add(path, None, "reconciled with the log", f"entries {cache.entries} -> {expected.entries}")
            cache.replace(expected.entries, flush=False)
            changed = True
        if changed:
            cache.flush()
        return cache

    # ==== LogView =====================================================================

    @property
    def start_offset(self) -> int:
        return self._log_start_offset

    @property
    def end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def last_epoch(self) -> int:
        latest = self._epochs.latest_epoch
        if latest is not None:
            return latest
        earliest = self.earliest_snapshot_id()
        return earliest.epoch if earliest is not None else 0

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """KIP-101: the largest epoch <= ``epoch`` written in the log and the
        end offset (exclusive) of that epoch; the latest epoch ends at the log
        end offset. ``(-1, -1)`` when the log holds no epoch <= ``epoch``
        (including an empty log). Built on Kafka's
        ``LeaderEpochFileCache.endOffsetFor`` over the epoch cache."""
        if epoch < 0:
            return OffsetAndEpoch(-1, -1)
        floor = self._epochs.floor_entry(epoch)
        if floor is None:
            return OffsetAndEpoch(-1, -1)
        found_epoch, found_offset = self._epochs.end_offset_for(floor.epoch, self.end_offset)
        return OffsetAndEpoch(found_offset, found_epoch)

    def latest_snapshot_id(self) -> OffsetAndEpoch | None:
        return next(reversed(self._snapshots), None) if self._snapshots else None

    def earliest_snapshot_id(self) -> OffsetAndEpoch | None:
        """The snapshot whose end offset is the log start offset, if any."""
        for sid in self._snapshots:
            if sid.offset == self._log_start_offset:
                return sid
            if sid.offset > self._log_start_offset:
                break
        return None

    def read_snapshot(self, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int) -> SnapshotSlice | None:
        """Up to ``max_bytes`` of the frozen snapshot ``snapshot_id`` from byte
        ``position`` (FetchSnapshot serves unaligned slices), with its size."""
        path = self._snapshots.get(snapshot_id)
        if path is None:
            return None
        try:
            with SnapshotReader(path) as reader:
                if position < 0 or position >= reader.size:
                    return SnapshotSlice(reader.size, b"")
                return SnapshotSlice(reader.size, reader.read(position, max(0, max_bytes)))
        except FileNotFoundError:
            return None

    def read(self, start_offset: int, max_bytes: int) -> bytes:
        """Whole batches from the batch containing ``start_offset``, from one
        segment, at least one batch. Raises :class:`LogOffsetError` outside
        ``[start_offset, end_offset]``."""
        self._ensure_open()  # a closed segment's reads would fail with EBADF
        if start_offset < self._log_start_offset or start_offset > self.end_offset:
            raise LogOffsetError(
                f"offset {start_offset} is out of range [{self._log_start_offset}, {self.end_offset}]"
            )
        if start_offset == self.end_offset:
            return b""
        for segment in self._segments[self._segment_index_for(start_offset) :]:
            header = segment.find_batch(start_offset)
            if header is not None:
                return segment.read(header.position, max_bytes)
        return b""

    # ==== more reads ===================================================================

    @property
    def segments(self) -> list[LogSegment]:
        return list(self._segments)

    @property
    def epoch_entries(self) -> list[EpochEntry]:
        return self._epochs.entries

    def epoch_for_offset(self, offset: int) -> int | None:
        return self._epochs.epoch_for_offset(offset)

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    def snapshot_ids(self) -> list[OffsetAndEpoch]:
        return list(self._snapshots)

    def iter_batches(self, start_offset: int | None = None) -> Any:
        """Every batch from ``start_offset`` (default: the log start) to the end."""
        offset = self._log_start_offset if start_offset is None else start_offset
        while offset < self.end_offset:
            data = self.read(offset, 1 << 20)
            if not data:
                return
            for batch in iter_batches(data):
                yield batch
                offset = batch.next_offset

    def _segment_index_for(self, offset: int) -> int:
        lo, hi = 0, len(self._segments) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._segments[mid].base_offset <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo

    # ==== appends ======================================================================

    def append_as_leader(self, records: bytes | memoryview, epoch: int) -> AppendInfo:
        """Append batches written in ``epoch``: they are given consecutive
        offsets from the log end and stamped with the epoch (neither field is
        covered by the CRC, so the batches need no re-encoding)."""
        if epoch < 0:
            raise LogOffsetError(f"invalid leader epoch {epoch}")
        latest = self._epochs.latest_epoch
        if latest is not None and epoch < latest:
            raise LogOffsetError(f"append in epoch {epoch}, below the log's latest epoch {latest}")
        batches = self._validated_batches(records)
        data = bytearray(records)
        offset = self.end_offset
        headers = []
        control: list[tuple[int, Any]] = []
        for b in batches:
            if b.is_control:
                # Read before the append: a control record that does not
                # decode fails the append instead of being half-applied.
                control += [(o - b.base_offset + offset, v) for o, v in self._control_entries(b)]
            _BASE_OFFSET.pack_into(data, b.position, offset)
            _EPOCH.pack_into(data, b.position + PARTITION_LEADER_EPOCH_OFFSET, epoch)
            last = offset + b.last_offset_delta
            headers.append(BatchHeader(b.position, offset, last, b.size_in_bytes, epoch, b.max_timestamp))
            offset = last + 1
        info = self._append(bytes(data), headers)
        self._control.apply(control)
        return info

    def append_as_follower(self, records: bytes | memoryview) -> AppendInfo:
        """Append batches as fetched from the leader: they must start exactly
        at the log end, be consecutive, and not go back in epoch."""
        batches = self._validated_batches(records)
        expected = self.end_offset
        latest_epoch = self._epochs.latest_epoch
        headers = []
        control: list[tuple[int, Any]] = []
        for b in batches:
            if b.is_control:
                control += self._control_entries(b)
            if b.base_offset != expected:
                raise LogOffsetError(f"batch at offset {b.base_offset} does not continue the log at {expected}")
            if latest_epoch is not None and b.partition_leader_epoch < latest_epoch:
                raise LogOffsetError(
                    f"batch at offset {b.base_offset} has epoch {b.partition_leader_epoch}, "
                    f"below the log's latest epoch {latest_epoch}"
                )
            latest_epoch = b.partition_leader_epoch
            headers.append(
                BatchHeader(b.position, b.base_offset, b.last_offset, b.size_in_bytes, b.partition_leader_epoch, b.max_timestamp)
            )
            expected = b.next_offset
        info = self._append(bytes(records), headers)
        self._control.apply(control)
        return info

    @staticmethod
    def _control_entries(batch: RecordBatch) -> list[tuple[int, Any]]:
        try:
            return list(control_entries(batch))
        except (RecordsError, ValueError) as exc:
            raise CorruptRecordError(f"unreadable KRaft control record: {exc}", position=batch.position) from None

    def _validated_batches(self, records: bytes | memoryview) -> list[RecordBatch]:
        if not len(records):
            raise ValueError("attempt to append an empty record set")
        batches = []
        for batch in iter_batches(records):
            batch.ensure_valid()
            if batch.last_offset_delta < 0:
                raise CorruptRecordError(f"negative last offset delta {batch.last_offset_delta}", position=batch.position)
            batches.append(batch)
        return batches

    def _append(self, data: bytes, headers: list[BatchHeader]) -> AppendInfo:
        self._ensure_open()
        active = self._segments[-1]
        max_ts = max(h.max_timestamp for h in headers)
        if active.size > 0 and active.should_roll(len(data), max_ts, headers[-1].last_offset, self._clock_ms()):
            active = self.roll()
        position = active.size
        try:
            with disk_operation("write", active.log_path):
                active.append(data, headers)
        except DiskIOError as e:
            # Disk full or an I/O error part-way: part of the batches (or an
            # index entry) may be in the files already. Cut back to where this
            # append began so the files and the in-memory state say the same
            # and the next append goes where this one should have. Only a
            # full disk whose write was cut back is a known outcome; an I/O
            # error may have left anything in the page cache (fail-stop).
            with disk_operation("truncate", active.log_path):
                self._rollback_append(active, position)
            e.rolled_back = e.errno in NO_SPACE_ERRNOS
            raise
        if self.config.flush_on_append:
            with disk_operation("fsync", active.log_path):
                active.flush()
        changed = False
        for h in headers:
            latest = self._epochs.latest_epoch
            if h.partition_leader_epoch >= 0 and (latest is None or h.partition_leader_epoch > latest):
                changed |= self._epochs.assign(h.partition_leader_epoch, h.base_offset, flush=False)
        if changed:
            # In memory first: if the checkpoint cannot be written the cache
            # still matches the log (and recovery rebuilds the file from it).
            self._epochs.flush()
        return AppendInfo(headers[0].base_offset, headers[-1].last_offset)

    @staticmethod
    def _rollback_append(segment: LogSegment, position: int) -> None:
        # The file may hold bytes past ``size`` (a partial write never counted).
        segment.size = max(segment.size, os.fstat(segment.fd).st_size)
        segment.truncate_to_position(position)

    def roll(self) -> LogSegment:
        """Seal the active segment and start a new one at the log end."""
        self._ensure_open()
        old = self._segments[-1]
        if old.size == 0:
            return old
        with disk_operation("fsync", old.log_path):
            old.on_become_inactive()
        with disk_operation("create", self.directory / f"{old.next_offset:020d}.log"):
            new = LogSegment(self.directory, old.next_offset, self.config, created_ms=self._clock_ms())
            new.open_indexes_for_append()
        fsync_dir(self.directory)
        self._segments.append(new)
        return new

    def flush(self) -> None:
        """fsync the active segment (everything appended so far is durable)."""
        active = self._segments[-1]
        with disk_operation("fsync", active.log_path):
            active.flush()

    def initialize_leader_epoch(self, epoch: int) -> None:
        """A new leader's epoch starts at the current log end (Kafka's
        ``maybeAssignEpochStartOffset(epoch, logEndOffset)``)."""
        self._epochs.assign(epoch, self.end_offset)

    # ==== truncation ===================================================================

    def truncate_to(self, offset: int) -> int:
        """Remove every batch at or after ``offset`` (a batch that contains it
        goes whole); returns the new log end offset."""
        self._ensure_open()
        if offset >= self.end_offset:
            return self.end_offset
        if offset < self._log_start_offset:
            raise LogOffsetError(f"cannot truncate to {offset}, below the log start offset {self._log_start_offset}")
        latest = self.latest_snapshot_id()
        if latest is not None and offset < latest.offset:
            # A snapshot holds committed records only: the log never diverges below it.
            raise LogOffsetError(f"cannot truncate to {offset}, below the latest snapshot {latest}")
        deleted = False
        while len(self._segments) > 1 and self._segments[-1].base_offset > offset:
            doomed = self._segments.pop()
            with disk_operation("truncate", doomed.log_path):
                doomed.delete()
            deleted = True
        if deleted:
            # The removal must be durable before anything is appended in its
            # place: a crash would otherwise bring the later segments (their
            # truncated records) back behind a hole in the log.
            fsync_dir(self.directory)
        active = self._segments[-1]
        with disk_operation("truncate", active.log_path):
            active.truncate_to(offset)
            # The segment may have been sealed before: reload its tail state either way.
            active.load_state_from_headers(list(active.iter_headers()))
            active.open_indexes_for_append()
        with disk_operation("fsync", active.log_path):
            active.flush(indexes=True)
        self._epochs.truncate_from_end(self.end_offset)
        # Uncommitted voter changes that were truncated are reverted (KIP-853).
        self._control.truncate_from(self.end_offset)
        return self.end_offset

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every segment and restart the log, empty, at ``offset``."""
        self._ensure_open()
        for segment in self._segments:
            with disk_operation("truncate", segment.log_path):
                segment.delete()
        with disk_operation("create", self.directory / f"{offset:020d}.log"):
            new = LogSegment(self.directory, offset, self.config, created_ms=self._clock_ms())
            new.open_indexes_for_append()
        fsync_dir(self.directory)
        self._segments = [new]
        self._log_start_offset = offset
        self._epochs.clear()

    # ==== snapshots ====================================================================

    def create_snapshot(
        self,
        snapshot_id: OffsetAndEpoch,
        *,
        last_contained_log_timestamp: int,
        kraft_version: int | None = None,
        voters_record: Any = None,
    ) -> SnapshotWriter:
        """A writer for a snapshot of the state up to ``snapshot_id.offset``
        (exclusive). It becomes visible to :meth:`latest_snapshot_id` when frozen.

        Unless given, ``kraft_version`` and the ``VotersRecord`` are those in
        effect at ``snapshot_id.offset - 1`` (Kafka's ``voterSetAtOffset`` and
        ``kraftVersionAtOffset``): a kraft.version 1 snapshot carries the voter
        set, so a replica that installs it knows the quorum."""
        if kraft_version is None:
            kraft_version = self._control.kraft_version_at(snapshot_id.offset - 1)
            if voters_record is None and kraft_version > 0:
                voters = self._control.voters_at(snapshot_id.offset - 1)
                if voters is not None:
                    voters_record = voters_record_of(voters.voters)
        latest = self.latest_snapshot_id()
        if latest is not None and (latest.epoch > snapshot_id.epoch or latest.offset > snapshot_id.offset):
            raise ValueError(f"Attempting to create a snapshot ({snapshot_id}) that is not greater than the latest snapshot ({latest})")
        if snapshot_id.offset > self.end_offset:
            raise ValueError(f"snapshot {snapshot_id} is past the log end offset {self.end_offset}")
        if snapshot_id.offset > 0:
            found = self.end_offset_for_epoch(snapshot_id.epoch)
            if found.epoch != snapshot_id.epoch or found.offset < snapshot_id.offset:
                raise ValueError(f"snapshot {snapshot_id} does not match the log (epoch {snapshot_id.epoch} ends at {found})")
        writer = _LogSnapshotWriter(
            self,
            self.directory,
            snapshot_id,
            last_contained_log_timestamp=last_contained_log_timestamp,
            kraft_version=kraft_version,
            voters_record=voters_record,
            clock_ms=self._clock_ms,
        )
        return writer

    def create_raw_snapshot(self, snapshot_id: OffsetAndEpoch) -> RawSnapshotWriter:
        """A writer for snapshot bytes downloaded with FetchSnapshot."""
        return _LogRawSnapshotWriter(self, self.directory, snapshot_id)

    def write_snapshot_chunk(self, snapshot_id: OffsetAndEpoch, position: int, data: bytes | memoryview) -> None:
        """Write a FetchSnapshot chunk into ``<id>.checkpoint.part``; position 0
        starts the download afresh, any other position must continue it."""
        self._ensure_open()
        download = self._downloads.get(snapshot_id)
        if position == 0:
            # One download at a time, as Kafka's follower keeps one: a new
            # one means the leader dropped the snapshot being fetched
            # (SNAPSHOT_NOT_FOUND, the follower went back to Fetch), so the
            # partial files of any other download go now, not at close.
            for stale in self._downloads.values():
                stale.abort()
            self._downloads.clear()
            download = self._downloads[snapshot_id] = _LogRawSnapshotWriter(self, self.directory, snapshot_id)
        if download is None or download.size != position:
            have = None if download is None else download.size
            raise LogOffsetError(f"snapshot chunk for {snapshot_id} at {position} does not continue the download (at {have})")
        # A partial download counts for nothing until it is frozen (fsync +
        # rename, below): a chunk the disk refuses leaves a known outcome.
        with disk_operation("write", download.part_path, undone=True):
            download.append(data)

    def install_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        """Freeze a completed download (validated: header, records, footer) or
        adopt a stored snapshot, then restart the log empty at its end offset
        and drop older snapshots (Kafka's follower path after FetchSnapshot)."""
        self._ensure_open()
        download = self._downloads.pop(snapshot_id, None)
        if download is not None:
            try:
                download.freeze()
            except BaseException:
                download.abort()
                raise
        elif snapshot_id not in self._snapshots:
            raise LogOffsetError(f"no snapshot {snapshot_id} to install")
        self.truncate_fully_and_start_at(snapshot_id.offset)
        self._remove_snapshots_before(snapshot_id)
        self._load_kraft_control()

    def _on_snapshot_frozen(self, snapshot_id: OffsetAndEpoch, path: Path) -> None:
        self._snapshots[snapshot_id] = path
        self._snapshots = dict(sorted(self._snapshots.items()))

    def open_snapshot(self, snapshot_id: OffsetAndEpoch) -> SnapshotReader | None:
        """A reader of the frozen snapshot ``snapshot_id`` (close it after use)."""
        path = self._snapshots.get(snapshot_id)
        if path is None:
            return None
        try:
            return SnapshotReader(path)
        except FileNotFoundError:
            return None

    def delete_before_snapshot(self, snapshot_id: OffsetAndEpoch) -> bool:
        """Move the log start offset up to ``snapshot_id.offset``, delete the
        segments wholly before it and the older snapshots (Kafka's
        ``deleteBeforeSnapshot``). False when the move is not allowed."""
        latest = self.latest_snapshot_id()
        if (
            latest is None
            or snapshot_id not in self._snapshots
            or not self._log_start_offset < snapshot_id.offset <= latest.offset
            or snapshot_id.offset > self.end_offset
        ):
            return False
        self._log_start_offset = snapshot_id.offset
        deleted = False
        while len(self._segments) > 1 and self._segments[1].base_offset <= self._log_start_offset:
            doomed = self._segments.pop(0)
            with disk_operation("rename", doomed.log_path):
                doomed.delete()
            deleted = True
        if deleted:
            fsync_dir(self.directory)  # as in truncate_to: no segment comes back after a crash
        self._epochs.truncate_from_start(self._log_start_offset)
        self._remove_snapshots_before(snapshot_id)
        self._control.truncate_before(self._log_start_offset)
        return True

    def truncate_to_latest_snapshot(self) -> bool:
        """If the latest snapshot is ahead of the log (a follower that fetched a
        snapshot), restart the log at it. Returns True if it did."""
        latest = self.latest_snapshot_id()
        if latest is None:
            return False
        if self._log_start_offset == self.end_offset == latest.offset:
            # Already restarted there (a follower that installed it and has
            # fetched nothing since): truncating again would change nothing.
            return False
        log_epoch = self._epochs.latest_epoch or 0
        if latest.epoch > log_epoch or (latest.epoch == log_epoch and latest.offset > self.end_offset):
            self.truncate_fully_and_start_at(latest.offset)
            self._remove_snapshots_before(latest)
            self._load_kraft_control()
            return True
        return False

    # ==== KIP-853 control records =======================================================

    def kraft_control_state(self) -> KRaftControlState:
        """The latest voter set and kraft.version of the latest snapshot and
        the log, uncommitted records included (``LogView``)."""
        return self._control.state()

    @property
    def kraft_control(self) -> KRaftControlHistory:
        """The whole history (read-only use: voter set at an offset)."""
        return self._control

    def _load_kraft_control(self) -> None:
        """Rebuild the history as Kafka's ``KRaftControlRecordStateMachine``
        does at start-up: the latest snapshot's records (at its end offset - 1),
        then every control batch of the log after it."""
        self._control.clear()
        start = self._log_start_offset
        latest = self.latest_snapshot_id()
        if latest is not None:
            reader = self.open_snapshot(latest)
            if reader is not None:
                with reader:
                    contents = reader.contents()
                at = latest.offset - 1
                if contents.kraft_version is not None:
                    self._control.add_kraft_version(at, int(contents.kraft_version.k_raft_version))
                if contents.voters is not None:
                    self._control.add_voters(at, voter_entries(contents.voters))
                start = max(start, latest.offset)
        for batch in self.iter_batches(start):
            if batch.is_control and batch.next_offset > start:
                self._control.apply(
                    (o, v) for o, v in self._control_entries(batch) if o >= start
                )

    def _remove_snapshots_before(self, snapshot_id: OffsetAndEpoch) -> None:
        for sid in [s for s in self._snapshots if s < snapshot_id]:
            del self._snapshots[sid]
            self._snapshot_timestamps.pop(sid, None)
            delete_snapshot(self.directory, sid)

    def _snapshot_timestamp(self, snapshot_id: OffsetAndEpoch) -> int | None:
        if snapshot_id not in self._snapshot_timestamps:
            self._snapshot_timestamps[snapshot_id] = read_snapshot_timestamp(self._snapshots[snapshot_id])
        return self._snapshot_timestamps[snapshot_id]

    # ==== retention ====================================================================

    def maybe_clean(self) -> bool:
        """Kafka's ``maybeClean``: delete old snapshots (and the log before the
        next one) while snapshots + log exceed ``retention_bytes``, then while
        the oldest snapshot is older than ``retention_ms``. Always keeps at
        least one snapshot. Returns True if anything was deleted."""
        cleaned = False
        if self.config.retention_bytes >= 0:
            cleaned |= self._clean_snapshots(self._over_size_limit)
        if self.config.retention_ms >= 0:
            now = self._clock_ms()

            def too_old(sid: OffsetAndEpoch) -> bool:
                ts = self._snapshot_timestamp(sid)
                return ts is not None and now - ts > self.config.retention_ms

            cleaned |= self._clean_snapshots(too_old)
        return cleaned

    def _over_size_limit(self, snapshot_id: OffsetAndEpoch) -> bool:
        snapshot_bytes = sum(p.stat().st_size for p in self._snapshots.values() if p.exists())
        return self.size_in_bytes + snapshot_bytes > self.config.retention_bytes

    def _clean_snapshots(self, should_clean: Callable[[OffsetAndEpoch], bool]) -> bool:
        cleaned = False
        while len(self._snapshots) >= 2:
            oldest, following = list(self._snapshots)[:2]
            if not should_clean(oldest):
                break
            if self.delete_before_snapshot(following):
                cleaned = True
                continue
            # The log start is already at or past the next snapshot: just drop the old file.
            if following.offset <= self._log_start_offset:
                self._remove_snapshots_before(following)
                cleaned = True
                continue
            break
        return cleaned

    # ==== lifecycle ====================================================================

    @property
    def quorum_state_path(self) -> Path:
        return self.directory / QUORUM_STATE_FILE

    def close(self) -> None:
        if self._closed:
            return
        for download in self._downloads.values():
            download.abort()
        self._downloads.clear()
        for segment in self._segments[:-1]:
            segment.close(final_time_index_entry=False)
        active = self._segments[-1]
        active.close()
        self._closed = True

    def _ensure_open(self) -> None:
        if self._closed:
            raise ValueError(f"metadata log {self.directory} is closed")

    def __enter__(self) -> MetadataLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"MetadataLog({self.directory}, start={self.start_offset}, end={self.end_offset}, "
            f"last_epoch={self.last_epoch}, segments={len(self._segments)}, snapshots={len(self._snapshots)})"
        )


def _epochs_from_segments(segments: list[LogSegment]) -> list[EpochEntry]:
    """Epoch start offsets read off every batch header of the log."""
    cache = LeaderEpochCache(None)
    for segment in segments:
        for h in segment.iter_headers():
            if h.partition_leader_epoch >= 0:
                cache.assign(h.partition_leader_epoch, h.base_offset, flush=False)
    return cache.entries


class _LogSnapshotWriter(SnapshotWriter):
    def __init__(self, log: MetadataLog, *args: Any, **kwargs: Any) -> None:
        self._log = log
        super().__init__(*args, **kwargs)

    def freeze(self) -> Path:
        path = super().freeze()
        self._log._on_snapshot_frozen(self.snapshot_id, path)
        return path


class _LogRawSnapshotWriter(RawSnapshotWriter):
    def __init__(self, log: MetadataLog, directory: Path, snapshot_id: OffsetAndEpoch) -> None:
        self._log = log
        super().__init__(directory, snapshot_id)

    def freeze(self, *, validate: bool = True) -> Path:
        path = super().freeze(validate=validate)
        self._log._on_snapshot_frozen(self.snapshot_id, path)
        return path


__all__ = ["AppendInfo", "MetadataLog", "metadata_partition_dir", "snapshot_file_name"]
