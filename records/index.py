"""The sparse per-segment indexes, laid out as Kafka's ``OffsetIndex`` and
``TimeIndex``.

``NNN.index``: 8-byte entries, relative offset int32 + file position int32,
both big-endian. An entry maps the *last* offset of a batch to the position
where that batch starts (``LogSegment.append`` indexes ``largestOffset`` at
``physicalPosition``).

``NNN.timeindex``: 12-byte entries, timestamp int64 + relative offset int32:
the largest timestamp seen so far in the segment and the last offset of the
batch that carried it.

Kafka preallocates these files and trims them on close; a crash can leave a
zero-filled tail, which :meth:`load` recognises and drops (a zero relative
offset after the first entry cannot be real). We append entries without
preallocation, so our files are always exactly ``entries * entry_size`` long.
"""

from __future__ import annotations

import bisect
import os
import struct
from array import array
from pathlib import Path

from kraft.records.errors import CorruptIndexError
from kraft.records.fileutil import pwrite_all

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")

DEFAULT_MAX_INDEX_SIZE = 10 * 1024 * 1024  # segment.index.bytes


class _IndexFile:
    """The file handling both index kinds share: entries of two int columns
    (the attributes :attr:`COLUMNS` names, in file order; both kinds have a
    ``_offsets`` column of relative offsets), kept in memory and appended to
    the file; a partial trailing entry and a zero-filled tail dropped on load.
    The entry methods of each kind use their columns directly (hot paths)."""

    ENTRY: struct.Struct
    ENTRY_SIZE: int
    #: The attribute names and array typecodes of the two columns, in file order.
    COLUMNS: tuple[str, str]
    TYPECODES: tuple[str, str]

    _offsets: array[int]

    def __init__(self, path: Path, base_offset: int, max_index_size: int = DEFAULT_MAX_INDEX_SIZE) -> None:
        self.path = Path(path)
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_size // self.ENTRY_SIZE)
        self._clear_columns()
        self._fd: int | None = None
        # What load() had to repair, for the recovery report.
        self.dropped_tail_bytes = 0
        self.dropped_zero_entries = 0

    def _clear_columns(self) -> None:
        for name, typecode in zip(self.COLUMNS, self.TYPECODES):
            setattr(self, name, array(typecode))

    def _columns(self) -> tuple[array[int], array[int]]:
        return getattr(self, self.COLUMNS[0]), getattr(self, self.COLUMNS[1])

    @staticmethod
    def _is_zero_fill(first: int, second: int) -> bool:
        """An entry after the first one that only preallocation can have left."""
        raise NotImplementedError

    # --- file lifecycle ---------------------------------------------------------

    def load(self) -> None:
        """Read the entries on disk; drop a partial trailing entry and a
        zero-filled tail (both are crash leftovers). Missing file = empty."""
        self._clear_columns()
        self.dropped_tail_bytes = 0
        self.dropped_zero_entries = 0
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        usable = len(data) - len(data) % self.ENTRY_SIZE
        self.dropped_tail_bytes = len(data) - usable
        firsts, seconds = self._columns()
        for i, (first, second) in enumerate(self.ENTRY.iter_unpack(memoryview(data)[:usable])):
            if i > 0 and self._is_zero_fill(first, second):
                self.dropped_zero_entries = usable // self.ENTRY_SIZE - i
                break
            firsts.append(first)
            seconds.append(second)

    def open_for_append(self) -> None:
        """Open the file for appends and rewrite it to exactly the loaded entries."""
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        os.ftruncate(self._fd, len(self._offsets) * self.ENTRY_SIZE)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def flush(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)

    def rewrite(self) -> None:
        """Write the in-memory entries to disk from scratch (after a rebuild)."""
        data = b"".join(self.ENTRY.pack(a, b) for a, b in zip(*self._columns()))
        fd = self._fd if self._fd is not None else os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.ftruncate(fd, 0)
            pwrite_all(fd, data, 0)
        finally:
            if self._fd is None:
                os.close(fd)

    # --- entries -----------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._offsets)

    def is_full(self) -> bool:
        return len(self._offsets) >= self.max_entries

    def _write_entry(self, first: int, second: int) -> None:
        """Write the entry after the last one to the file, if it is open
        (the caller then appends it to its columns)."""
        if self._fd is not None:
            pwrite_all(self._fd, self.ENTRY.pack(first, second), len(self._offsets) * self.ENTRY_SIZE)

    def _truncate_entries(self, keep: int) -> None:
        if keep >= len(self._offsets):
            return
        for column in self._columns():
            del column[keep:]
        if self._fd is not None:
            os.ftruncate(self._fd, keep * self.ENTRY_SIZE)

    def reset(self) -> None:
        self._truncate_entries(0)


class OffsetIndex(_IndexFile):
    """``relative offset -> position`` entries, kept in memory and appended to the file."""

    ENTRY = _OFFSET_ENTRY
    ENTRY_SIZE = 8
    COLUMNS = ("_offsets", "_positions")  # relative offsets, file positions
    TYPECODES = ("i", "i")

    _positions: array[int]

    @staticmethod
    def _is_zero_fill(first: int, second: int) -> bool:
        return first == 0  # a zero relative offset after the first entry

    @property
    def entries(self) -> list[tuple[int, int]]:
        """``(absolute offset, position)`` pairs."""
        base = self.base_offset
        return [(base + r, p) for r, p in zip(self._offsets, self._positions)]

    @property
    def last_offset(self) -> int:
        return self.base_offset + self._offsets[-1] if self._offsets else self.base_offset

    def sanity_check(self, log_size: int) -> str | None:
        """Why this index cannot be trusted against a log of ``log_size`` bytes, or ``None``."""
        prev_rel, prev_pos = -1, -1
        for rel, pos in zip(self._offsets, self._positions):
            if rel <= prev_rel:
                return f"offsets not increasing ({self.base_offset + rel} after {self.base_offset + prev_rel})"
            if pos <= prev_pos or pos >= log_size:
                return f"position {pos} out of order or beyond the log ({log_size} bytes)"
            prev_rel, prev_pos = rel, pos
        return None

    def append(self, offset: int, position: int) -> None:
        rel = offset - self.base_offset
        if not 0 <= rel <= 0x7FFFFFFF:
            raise CorruptIndexError(f"offset {offset} does not fit segment base {self.base_offset}")
        if self._offsets and rel <= self._offsets[-1]:
            raise CorruptIndexError(f"index append of offset {offset} not after {self.last_offset}")
        self._write_entry(rel, position)
        self._offsets.append(rel)
        self._positions.append(position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """The largest entry with offset <= ``offset``: ``(offset, position)``;
        ``(base_offset, 0)`` when there is none."""
        rel = offset - self.base_offset
        i = bisect.bisect_right(self._offsets, rel) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self._offsets[i], self._positions[i]

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose offset is >= ``offset``."""
        self._truncate_entries(bisect.bisect_left(self._offsets, offset - self.base_offset))

    def truncate_to_position(self, position: int) -> None:
        """Drop entries that point at or beyond ``position``."""
        self._truncate_entries(bisect.bisect_left(self._positions, position))


class TimeIndex(_IndexFile):
    """``timestamp -> relative offset`` entries with increasing timestamps."""

    ENTRY = _TIME_ENTRY
    ENTRY_SIZE = 12
    COLUMNS = ("_timestamps", "_offsets")  # timestamps, relative offsets
    TYPECODES = ("q", "i")

    _timestamps: array[int]

    @staticmethod
    def _is_zero_fill(first: int, second: int) -> bool:
        return first == 0 and second == 0  # timestamp 0 at relative offset 0 after the first entry

    @property
    def entries(self) -> list[tuple[int, int]]:
        """``(timestamp, absolute offset)`` pairs."""
        base = self.base_offset
        return [(t, base + r) for t, r in zip(self._timestamps, self._offsets)]

    @property
    def last_entry(self) -> tuple[int, int]:
        """Kafka's ``lastEntry``: ``(NO_TIMESTAMP, base_offset)`` when empty."""
        if not self._offsets:
            return -1, self.base_offset
        return self._timestamps[-1], self.base_offset + self._offsets[-1]

    def sanity_check(self, next_offset: int) -> str | None:
        prev_ts, prev_rel = -1, -1
        for ts, rel in zip(self._timestamps, self._offsets):
            if ts < prev_ts or rel < prev_rel:
                return f"entries not in order (timestamp {ts}, offset {self.base_offset + rel})"
            if self.base_offset + rel >= next_offset:
                return f"offset {self.base_offset + rel} beyond the log end {next_offset}"
            prev_ts, prev_rel = ts, rel
        return None

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Append when ``timestamp`` is larger than the last entry's (Kafka's rule)."""
        last_ts, last_offset = self.last_entry
        if self._offsets and offset < last_offset:
            raise CorruptIndexError(f"time index append of offset {offset} before {last_offset}")
        if timestamp <= last_ts:
            return
        rel = offset - self.base_offset
        self._write_entry(timestamp, rel)
        self._timestamps.append(timestamp)
        self._offsets.append(rel)

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """The largest entry with timestamp <= ``timestamp``: ``(timestamp, offset)``."""
        i = bisect.bisect_right(self._timestamps, timestamp) - 1
        if i < 0:
            return -1, self.base_offset
        return self._timestamps[i], self.base_offset + self._offsets[i]

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose offset is >= ``offset``."""
        self._truncate_entries(bisect.bisect_left(self._offsets, offset - self.base_offset))
