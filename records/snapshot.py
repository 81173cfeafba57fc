"""KRaft snapshots (KIP-630): ``<20-digit end offset>-<10-digit epoch>.checkpoint``.

A snapshot file is a sequence of v2 batches at offsets 0, 1, 2, ...:

1. a control batch: ``SnapshotHeaderRecord`` (lastContainedLogTimestamp) and,
   under kraft.version >= 1, ``KRaftVersionRecord`` and ``VotersRecord``;
2. data batches of metadata records;
3. a control batch with ``SnapshotFooterRecord``.

Lifecycle, as Kafka's ``Snapshots``/``FileRawSnapshotWriter``: written as
``.checkpoint.part``, fsynced and atomically renamed to ``.checkpoint`` when
frozen; renamed to ``.checkpoint.deleted`` before removal. Leftover ``.part``
and ``.deleted`` files are deleted when the log opens.

``bootstrap.checkpoint`` (in the metadata log directory itself, written by
``kafka-storage format``) uses the same file format.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kraft.records.batch import LOG_OVERHEAD, Record, RecordBatch, build_batch, iter_batches
from kraft.records.compression import Compression
from kraft.records.control import ControlRecordType, build_control_batch, decode_control_record
from kraft.records.errors import CorruptRecordError, CorruptSnapshotError
from kraft.records.fileutil import atomic_rename, disk_operation, fsync_dir, pread_exact, pwrite_all
from kraft.records.view import OffsetAndEpoch

SUFFIX = ".checkpoint"
PARTIAL_SUFFIX = SUFFIX + ".part"
DELETE_SUFFIX = SUFFIX + ".deleted"
BOOTSTRAP_FILE_NAME = "bootstrap.checkpoint"
BOOTSTRAP_SNAPSHOT_ID = OffsetAndEpoch(0, 0)
#: KafkaRaftClient.MAX_BATCH_SIZE_BYTES: the largest batch a snapshot writer makes.
MAX_BATCH_SIZE_BYTES = 8 * 1024 * 1024

_NAME = re.compile(r"^(\d{20})-(\d{10})(\.checkpoint(?:\.part|\.deleted)?)$")


def snapshot_file_name(snapshot_id: OffsetAndEpoch) -> str:
    return f"{snapshot_id.offset:020d}-{snapshot_id.epoch:010d}{SUFFIX}"


@dataclass(frozen=True, slots=True)
class SnapshotPath:
    path: Path
    snapshot_id: OffsetAndEpoch
    partial: bool
    deleted: bool


def parse_snapshot_path(path: str | os.PathLike[str]) -> SnapshotPath | None:
    """Kafka's ``Snapshots.parse``: ``None`` for files that are not snapshots."""
    p = Path(path)
    m = _NAME.match(p.name)
    if m is None:
        return None
    suffix = m.group(3)
    return SnapshotPath(
        p,
        OffsetAndEpoch(int(m.group(1)), int(m.group(2))),
        partial=suffix == PARTIAL_SUFFIX,
        deleted=suffix == DELETE_SUFFIX,
    )


def list_snapshot_paths(directory: Path) -> list[SnapshotPath]:
    out = []
    for entry in sorted(Path(directory).iterdir()):
        sp = parse_snapshot_path(entry)
        if sp is not None:
            out.append(sp)
    return out


def delete_snapshot(directory: Path, snapshot_id: OffsetAndEpoch) -> None:
    """Rename to ``.checkpoint.deleted`` then remove (Kafka's two steps, so a
    crash in between never leaves a half-deleted snapshot that looks valid)."""
    path = Path(directory) / snapshot_file_name(snapshot_id)
    doomed = path.with_name(path.name[: -len(SUFFIX)] + DELETE_SUFFIX)
    if path.exists():
        atomic_rename(path, doomed)
    doomed.unlink(missing_ok=True)


def _now_ms() -> int:
    return int(time.time() * 1000)


class RawSnapshotWriter:
    """Bytes into ``<id>.checkpoint.part``; :meth:`freeze` validates the whole
    file and renames it into place. Used directly when a follower downloads a
    snapshot with FetchSnapshot, and by :class:`SnapshotWriter`."""

    def __init__(self, directory: Path, snapshot_id: OffsetAndEpoch, *, final_name: str | None = None) -> None:
        self.directory = Path(directory)
        self.snapshot_id = snapshot_id
        name = final_name if final_name is not None else snapshot_file_name(snapshot_id)
        self.final_path = self.directory / name
        # A log snapshot is staged as <id>.checkpoint.part (Kafka's partial
        # snapshot name); other files (bootstrap.checkpoint) as <name>.tmp.
        self.part_path = self.directory / (name + ".part" if final_name is None else name + ".tmp")
        self._fd = os.open(self.part_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        self.size = 0
        self.frozen = False

    def append(self, data: bytes | memoryview) -> None:
        if self.frozen or self._fd < 0:
            raise ValueError(f"snapshot {self.final_path.name} is already frozen or closed")
        pwrite_all(self._fd, data, self.size)
        self.size += len(data)

    def freeze(self, *, validate: bool = True) -> Path:
        """Make the snapshot immutable and visible: validate, fsync, rename."""
        if validate:
            data = pread_exact(self._fd, self.size, 0)
            validate_snapshot_bytes(data, str(self.part_path))
        with disk_operation("fsync", self.part_path):
            os.fsync(self._fd)
        os.close(self._fd)
        self._fd = -1
        atomic_rename(self.part_path, self.final_path)
        self.frozen = True
        return self.final_path

    def abort(self) -> None:
        """Drop an unfinished snapshot."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if not self.frozen:
            self.part_path.unlink(missing_ok=True)

    def __enter__(self) -> RawSnapshotWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.frozen:
            self.abort()


class SnapshotWriter:
    """Kafka's ``RecordsSnapshotWriter``: header batch, data batches, footer."""

    def __init__(
        self,
        directory: Path,
        snapshot_id: OffsetAndEpoch,
        *,
        last_contained_log_timestamp: int,
        kraft_version: int = 0,
        voters_record: Any = None,
        compression: Compression = Compression.NONE,
        max_batch_size: int = MAX_BATCH_SIZE_BYTES,
        clock_ms: Any = _now_ms,
        final_name: str | None = None,
    ) -> None:
        from kraft.messages.registry import CONTROL_RECORD_CLASSES

        self.snapshot_id = snapshot_id
        self._raw = RawSnapshotWriter(directory, snapshot_id, final_name=final_name)
        self._compression = compression
        self._max_batch_size = max_batch_size
        self._clock_ms = clock_ms
        self._next_offset = 0
        self._pending: list[bytes] = []
        self._pending_size = 0
        header_cls = CONTROL_RECORD_CLASSES[ControlRecordType.SNAPSHOT_HEADER]
        messages: list[Any] = [header_cls(version=0, last_contained_log_timestamp=last_contained_log_timestamp)]
        if kraft_version > 0:
            kraft_cls = CONTROL_RECORD_CLASSES[ControlRecordType.KRAFT_VERSION]
            messages.append(kraft_cls(version=0, k_raft_version=kraft_version))
            # Kafka 4.4 formats a --no-initial-controllers controller with a
            # bootstrap snapshot of kraft.version alone (KIP-1170): its voters
            # come from the quorum. Every other snapshot carries the voter set.
            if voters_record is None and snapshot_id != BOOTSTRAP_SNAPSHOT_ID:
                raise ValueError("kraft.version >= 1 snapshots must carry a VotersRecord")
            if voters_record is not None:
                messages.append(voters_record)
        try:
            self._append_control(messages)
        except BaseException:
            # The .part file exists already: a failed header write (disk
            # full) must not leave it, or its descriptor, behind.
            self._raw.abort()
            raise

    @property
    def path(self) -> Path:
        return self._raw.final_path

    def _append_control(self, messages: Sequence[Any]) -> None:
        batch = build_control_batch(
            messages,
            base_offset=self._next_offset,
            partition_leader_epoch=self.snapshot_id.epoch,
            timestamp=self._clock_ms(),
        )
        self._raw.append(batch)
        self._next_offset += len(messages)

    def append(self, values: Iterable[bytes]) -> None:
        """Append record values (metadata record frames), batching them up to
        the maximum batch size."""
        for value in values:
            size = len(value) + 16  # rough per-record overhead
            if self._pending and self._pending_size + size > self._max_batch_size:
                self._flush_pending()
            self._pending.append(value)
            self._pending_size += size

    def _flush_pending(self) -> None:
        if not self._pending:
            return
        timestamp = self._clock_ms()
        records = [Record(self._next_offset + i, timestamp, None, v) for i, v in enumerate(self._pending)]
        batch = build_batch(
            records,
            base_offset=self._next_offset,
            partition_leader_epoch=self.snapshot_id.epoch,
            compression=self._compression,
        )
        self._raw.append(batch)
        self._next_offset += len(records)
        self._pending = []
        self._pending_size = 0

    def freeze(self) -> Path:
        """Write the footer and publish the snapshot."""
        from kraft.messages.registry import CONTROL_RECORD_CLASSES

        self._flush_pending()
        footer_cls = CONTROL_RECORD_CLASSES[ControlRecordType.SNAPSHOT_FOOTER]
        self._append_control([footer_cls(version=0)])
        return self._raw.freeze()

    def abort(self) -> None:
        self._raw.abort()

    def __enter__(self) -> SnapshotWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._raw.frozen:
            self.abort()


@dataclass
class SnapshotContents:
    """A snapshot read and checked whole."""

    header: Any  # SnapshotHeaderRecord
    kraft_version: Any  # KRaftVersionRecord | None
    voters: Any  # VotersRecord | None
    footer: Any  # SnapshotFooterRecord
    batches: list[RecordBatch]

    def data_records(self) -> Iterator[Record]:
        for batch in self.batches:
            if not batch.is_control:
                yield from batch.records()


def validate_snapshot_bytes(data: bytes | memoryview, path: str | None = None) -> SnapshotContents:
    """Check a snapshot's structure: every batch CRC-valid and consecutive,
    a SnapshotHeader first and a SnapshotFooter last with nothing after it.
    Raises :class:`CorruptSnapshotError` with the file and byte position."""
    batches: list[RecordBatch] = []
    header = footer = kraft_version = voters = None
    expected_offset = 0
    try:
        for batch in iter_batches(data):
            if not batch.is_valid():
                raise CorruptSnapshotError("CRC mismatch in snapshot batch", position=batch.position, path=path)
            if batch.base_offset != expected_offset:
                raise CorruptSnapshotError(
                    f"batch offset {batch.base_offset}, expected {expected_offset}", position=batch.position, path=path
                )
            if footer is not None:
                raise CorruptSnapshotError("batches after the snapshot footer", position=batch.position, path=path)
            expected_offset = batch.next_offset
            records = batch.records()
            if batch.is_control:
                for record in records:
                    control = decode_control_record(record)
                    if control.type is ControlRecordType.SNAPSHOT_HEADER:
                        if batches or header is not None or record.offset != 0:
                            raise CorruptSnapshotError(
                                "snapshot header is not the first record", position=batch.position, path=path
                            )
                        header = control.message
                    elif control.type is ControlRecordType.SNAPSHOT_FOOTER:
                        footer = control.message
                    elif control.type is ControlRecordType.KRAFT_VERSION:
                        kraft_version = control.message
                    elif control.type is ControlRecordType.KRAFT_VOTERS:
                        voters = control.message
            if header is None:
                raise CorruptSnapshotError("snapshot does not start with a SnapshotHeader", position=batch.position, path=path)
            batches.append(batch)
    except CorruptSnapshotError:
        raise
    except CorruptRecordError as exc:
        raise CorruptSnapshotError(f"malformed snapshot batch: {exc.reason}", position=exc.position, path=path) from None
    except Exception as exc:  # a control record that does not decode
        position = batches[-1].position + batches[-1].size_in_bytes if batches else 0
        raise CorruptSnapshotError(f"malformed snapshot: {exc}", position=position, path=path) from None
    if header is None:
        raise CorruptSnapshotError("empty snapshot: no SnapshotHeader", position=0, path=path)
    if footer is None:
        end = batches[-1].position + batches[-1].size_in_bytes if batches else 0
        raise CorruptSnapshotError("snapshot has no SnapshotFooter", position=end, path=path)
    return SnapshotContents(header, kraft_version, voters, footer, batches)


class SnapshotReader:
    """A frozen snapshot file, for FetchSnapshot serving (raw slices) and for
    loading (decoded, validated contents)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        parsed = parse_snapshot_path(self.path)
        self.snapshot_id = parsed.snapshot_id if parsed is not None else BOOTSTRAP_SNAPSHOT_ID
        self._fd = os.open(self.path, os.O_RDONLY)
        self.size = os.fstat(self._fd).st_size

    def read(self, position: int, max_bytes: int) -> bytes:
        """Raw bytes of the file (FetchSnapshot sends unaligned slices)."""
        if position < 0 or position > self.size:
            raise ValueError(f"position {position} outside snapshot of {self.size} bytes")
        return pread_exact(self._fd, min(max_bytes, self.size - position), position)

    def contents(self) -> SnapshotContents:
        return validate_snapshot_bytes(pread_exact(self._fd, self.size, 0), str(self.path))

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> SnapshotReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_snapshot_timestamp(path: Path) -> int | None:
    """``lastContainedLogTimestamp`` from the header, reading only the first
    batch; ``None`` if the file has no readable header."""
    try:
        with open(path, "rb") as f:
            prefix = f.read(LOG_OVERHEAD)
            if len(prefix) < LOG_OVERHEAD:
                return None
            size = int.from_bytes(prefix[8:12], "big", signed=True) + LOG_OVERHEAD
            if size <= LOG_OVERHEAD or size > MAX_BATCH_SIZE_BYTES * 2:
                return None
            data = prefix + f.read(size - LOG_OVERHEAD)
        batch = RecordBatch.parse(data, 0)
        if not batch.is_control or not batch.is_valid():
            return None
        control = decode_control_record(batch.records()[0])
    except (OSError, ValueError):
        return None
    if control.type is not ControlRecordType.SNAPSHOT_HEADER:
        return None
    return control.message.last_contained_log_timestamp


def fsync_directory(directory: Path) -> None:
    fsync_dir(directory)
