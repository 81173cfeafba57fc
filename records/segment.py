"""One log segment: ``NNNNNNNNNNNNNNNNNNNN.log`` plus its ``.index`` and
``.timeindex``, named after the segment's base offset (20 digits, zero padded).

Appends and index maintenance follow Kafka's ``LogSegment.append``: an offset
index entry ``(last offset of the append, position where it starts)`` and a
time index entry are added when more than ``index_interval_bytes`` were
appended since the previous entry; closing or rolling the segment appends the
final ``(max timestamp, offset)`` time index entry.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kraft.records.batch import HEADER, HEADER_SIZE, LOG_OVERHEAD, MAGIC_V2, MIN_BATCH_LENGTH
from kraft.records.errors import CorruptRecordError
from kraft.records.fileutil import pread_exact, pwrite_all
from kraft.records.index import OffsetIndex, TimeIndex
from kraft.records.log_config import LogConfig

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"

_PREFIX = struct.Struct(">qi")


def segment_file_name(base_offset: int, suffix: str) -> str:
    """Kafka's ``LogFileUtils.filenamePrefixFromOffset``: 20 zero-padded digits."""
    return f"{base_offset:020d}{suffix}"


def parse_segment_base(name: str) -> int | None:
    """Base offset of a ``.log`` file name, or ``None`` for any other file."""
    if not name.endswith(LOG_SUFFIX):
        return None
    stem = name[: -len(LOG_SUFFIX)]
    if len(stem) != 20 or not stem.isdigit():
        return None
    return int(stem)


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """Where a batch sits in a segment and the header fields the storage needs."""

    position: int
    base_offset: int
    last_offset: int
    size: int
    partition_leader_epoch: int
    max_timestamp: int

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


def read_batch_header(fd: int, position: int, file_size: int) -> BatchHeader:
    """Header of the batch at ``position``; structural checks only (length
    within the file, magic 2). Raises :class:`CorruptRecordError`."""
    raw = pread_exact(fd, HEADER_SIZE, position)
    if len(raw) < HEADER_SIZE:
        raise CorruptRecordError(f"only {len(raw)} bytes left for a {HEADER_SIZE}-byte batch header", position=position)
    fields = HEADER.unpack(raw)
    base_offset, length, epoch, magic = fields[0], fields[1], fields[2], fields[3]
    if length < MIN_BATCH_LENGTH:
        raise CorruptRecordError(f"batch length {length} below the minimum {MIN_BATCH_LENGTH}", position=position)
    size = length + LOG_OVERHEAD
    if position + size > file_size:
        raise CorruptRecordError(
            f"batch of {size} bytes runs past the end of the file ({file_size - position} bytes left)",
            position=position,
        )
    if magic != MAGIC_V2:
        raise CorruptRecordError(f"unsupported magic {magic}", position=position)
    return BatchHeader(position, base_offset, base_offset + fields[6], size, epoch, fields[8])


class LogSegment:
    """A segment open for reading and (if active) appending."""

    def __init__(self, directory: Path, base_offset: int, config: LogConfig, *, created_ms: int = 0) -> None:
        self.directory = Path(directory)
        self.base_offset = base_offset
        self.config = config
        self.log_path = self.directory / segment_file_name(base_offset, LOG_SUFFIX)
        self.index = OffsetIndex(self.directory / segment_file_name(base_offset, INDEX_SUFFIX), base_offset, config.max_index_size)
        self.time_index = TimeIndex(
            self.directory / segment_file_name(base_offset, TIME_INDEX_SUFFIX), base_offset, config.max_index_size
        )
        self._fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)
        self.size = os.fstat(self._fd).st_size
        #: one past the last offset in this segment (== base_offset when empty)
        self.next_offset = base_offset
        self.max_timestamp_so_far = -1
        self.offset_of_max_timestamp = base_offset
        self.bytes_since_last_index_entry = 0
        #: max timestamp of the first batch: the clock of time-based rolling
        self.rolling_based_timestamp: int | None = None
        self.created_ms = created_ms
        self.last_epoch: int | None = None

    # --- lifecycle ----------------------------------------------------------------

    @property
    def fd(self) -> int:
        return self._fd

    def open_indexes_for_append(self) -> None:
        self.index.open_for_append()
        self.time_index.open_for_append()

    def load_state_from_headers(self, headers: list[BatchHeader]) -> None:
        """Set the in-memory state from the headers of every batch in the file."""
        if headers:
            last = headers[-1]
            self.next_offset = last.next_offset
            self.rolling_based_timestamp = headers[0].max_timestamp
            self.last_epoch = last.partition_leader_epoch
            best = max(headers, key=lambda h: (h.max_timestamp, -h.position))
            self.max_timestamp_so_far = best.max_timestamp
            self.offset_of_max_timestamp = best.last_offset
            # Resume the index cadence from the last indexed position.
            last_indexed = self.index.lookup(last.last_offset)[1] if len(self.index) else 0
            self.bytes_since_last_index_entry = self.size - last_indexed if len(self.index) else self.size
        else:
            self.next_offset = self.base_offset
            self.rolling_based_timestamp = None
            self.last_epoch = None
            self.max_timestamp_so_far = -1
            self.offset_of_max_timestamp = self.base_offset
            self.bytes_since_last_index_entry = 0

    def rebuild_indexes(self, headers: list[BatchHeader]) -> None:
        """Recreate both indexes from the batches, as Kafka's ``LogSegment.recover`` does."""
        self.index.reset()
        self.time_index.reset()
        since = 0
        max_ts, max_ts_offset = -1, self.base_offset
        for h in headers:
            if h.max_timestamp > max_ts:
                max_ts, max_ts_offset = h.max_timestamp, h.last_offset
            if since > self.config.index_interval_bytes:
                self.index.append(h.last_offset, h.position)
                self.time_index.maybe_append(max_ts, max_ts_offset)
                since = 0
            since += h.size
        self.index.rewrite()
        self.time_index.rewrite()

    def close(self, *, final_time_index_entry: bool = True) -> None:
        if final_time_index_entry and self.max_timestamp_so_far >= 0 and self._fd >= 0:
            self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp)
        self.index.close()
        self.time_index.close()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def on_become_inactive(self) -> None:
        """Roll: seal the time index with the max timestamp, fsync everything."""
        if self.max_timestamp_so_far >= 0:
            self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp)
        self.flush(indexes=True)

    def delete(self) -> None:
        """Kafka renames segment files to ``.deleted`` before removing them, so a
        crash in between leaves files that open() recognises and removes."""
        self.close(final_time_index_entry=False)
        for path in (self.log_path, self.index.path, self.time_index.path):
            if path.exists():
                doomed = path.with_name(path.name + DELETED_SUFFIX)
                os.replace(path, doomed)
                doomed.unlink(missing_ok=True)

    def flush(self, *, indexes: bool = False) -> None:
        os.fsync(self._fd)
        if indexes:
            self.index.flush()
            self.time_index.flush()

    # --- appends ---------------------------------------------------------------------

    def should_roll(self, append_size: int, max_timestamp_in_append: int, last_offset: int, now_ms: int) -> bool:
        """Kafka's ``LogSegment.shouldRoll``: size, time, full indexes, or an
        offset too far from the base to store as a relative int32."""
        if self.size > 0:
            if self.rolling_based_timestamp is not None and self.rolling_based_timestamp >= 0:
                waited = max_timestamp_in_append - self.rolling_based_timestamp
            else:
                waited = now_ms - self.created_ms
            if waited > self.config.segment_ms:
                return True
        return (
            self.size > self.config.segment_bytes - append_size
            or self.index.is_full()
            or self.time_index.is_full()
            or last_offset - self.base_offset > 0x7FFFFFFF
        )

    def append(self, data: bytes | memoryview, headers: list[BatchHeader]) -> int:
        """Append whole batches (``headers`` describe them, positions relative to
        ``data``); returns the file position where they start."""
        position = self.size
        pwrite_all(self._fd, data, position)
        self.size += len(data)
        if self.rolling_based_timestamp is None and headers:
            self.rolling_based_timestamp = headers[0].max_timestamp
        # Per batch, as Kafka's LogSegment.append: an index entry is (last
        # offset of a batch, position of that batch), which is what recovery
        # checks (one entry for a multi-batch append would name the last
        # batch's offset at the first batch's position).
        for h in headers:
            if h.max_timestamp > self.max_timestamp_so_far:
                self.max_timestamp_so_far = h.max_timestamp
                self.offset_of_max_timestamp = h.last_offset
            if self.bytes_since_last_index_entry > self.config.index_interval_bytes:
                self.index.append(h.last_offset, position + h.position)
                self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp)
                self.bytes_since_last_index_entry = 0
            self.bytes_since_last_index_entry += h.size
        self.next_offset = headers[-1].next_offset
        self.last_epoch = headers[-1].partition_leader_epoch
        return position

    # --- reads ------------------------------------------------------------------------

    def iter_headers(self, start_position: int = 0, end_position: int | None = None) -> Iterator[BatchHeader]:
        end = self.size if end_position is None else end_position
        pos = start_position
        while pos < end:
            header = read_batch_header(self._fd, pos, self.size)
            yield header
            pos += header.size

    def find_batch(self, offset: int) -> BatchHeader | None:
        """The first batch whose last offset is >= ``offset`` (Kafka's
        ``translateOffset``), starting from the index hint."""
        _, position = self.index.lookup(offset)
        for header in self.iter_headers(position):
            if header.last_offset >= offset:
                return header
        return None

    def read(self, position: int, max_bytes: int) -> bytes:
        """Whole batches from ``position``: as many as fit in ``max_bytes``, and
        always the first one even if it is larger."""
        if position >= self.size:
            return b""
        end = position
        for header in self.iter_headers(position):
            if end > position and header.position + header.size - position > max_bytes:
                break
            end = header.position + header.size
            if end - position >= max_bytes:
                break
        return pread_exact(self._fd, end - position, position)

    def read_bytes(self, position: int, size: int) -> bytes:
        return pread_exact(self._fd, size, position)

    # --- truncation --------------------------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Remove every batch whose last offset is >= ``offset`` (the batch that
        contains ``offset`` goes whole). Returns the bytes removed."""
        header = self.find_batch(offset)
        if header is None:
            return 0
        return self.truncate_to_position(header.position)

    def truncate_to_position(self, position: int) -> int:
        """Cut the file at ``position`` (a batch boundary), drop the index
        entries of the removed batches and recompute the tail state (Kafka's
        ``readLargestTimestamp`` + ``updateLogEndOffset``)."""
        removed = self.size - position
        if removed <= 0:
            return 0
        os.ftruncate(self._fd, position)
        self.size = position
        self.index.truncate_to_position(position)
        headers = list(self.iter_headers())
        self.time_index.truncate_to(headers[-1].next_offset if headers else self.base_offset)
        self.load_state_from_headers(headers)
        self.bytes_since_last_index_entry = 0
        return removed
