"""Recovery of a log segment at open, and the report of what was repaired.

The active segment is scanned batch by batch: length within the file, magic
2, CRC32C, offsets not going backwards. At the first bad batch:

- if no batch with a valid CRC follows, the bytes from there on are a torn
  tail (a crash mid-append, or a zero-filled tail the filesystem left): the
  file is truncated there and the repair is reported;
- if a CRC-valid batch does follow, the damage is in the middle of the log.
  Truncating would drop valid batches, so recovery refuses with
  :class:`CorruptLogError` (file and position) and leaves the file untouched.

Indexes are then checked against the batches that remain: entries past the
end are dropped, and a missing, truncated or inconsistent index is rebuilt.
"""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

from crc32c import crc32c

from kraft.records.batch import ATTRIBUTES_OFFSET, HEADER, HEADER_SIZE, LOG_OVERHEAD, MAGIC_V2, MIN_BATCH_LENGTH
from kraft.records.endpoint_overrides import ENDPOINT_OVERRIDES_FILE
from kraft.records.errors import CorruptLogError
from kraft.records.segment import BatchHeader, LogSegment
from kraft.records.state_files import QUORUM_STATE_FILE
from kraft.records.voter_api_versions import VOTER_API_VERSIONS_FILE

_PREFIX = struct.Struct(">qi")


@dataclass(frozen=True)
class Repair:
    """One thing recovery found and fixed (or refused to fix)."""

    path: str
    position: int | None
    action: str
    reason: str

    def __str__(self) -> str:
        where = "" if self.position is None else f" at position {self.position}"
        return f"{self.path}{where}: {self.action} ({self.reason})"


@dataclass
class RecoveryReport:
    """What opening the log found: every repair, plus the resulting bounds."""

    directory: str
    repairs: list[Repair] = field(default_factory=list)
    log_start_offset: int = 0
    log_end_offset: int = 0

    @property
    def clean(self) -> bool:
        return not self.repairs

    def add(self, path: str | os.PathLike[str], position: int | None, action: str, reason: str) -> None:
        self.repairs.append(Repair(str(path), position, action, reason))

    def __str__(self) -> str:
        if not self.repairs:
            return f"{self.directory}: clean (offsets {self.log_start_offset}..{self.log_end_offset})"
        lines = [f"{self.directory}: {len(self.repairs)} repair(s), offsets {self.log_start_offset}..{self.log_end_offset}"]
        lines.extend(f"  {r}" for r in self.repairs)
        return "\n".join(lines)


@dataclass
class ScanResult:
    headers: list[BatchHeader]
    valid_bytes: int
    problem: str | None = None


def _check_batch(buf: memoryview, pos: int, expected_offset: int,
                 segment_base: int | None = None) -> tuple[BatchHeader | None, str | None]:
    """Validate the batch at ``pos``; returns its header or why it is bad.

    The base offset is not covered by the CRC, so a damaged one is caught by
    range checks only: never below the expected next offset, and (Kafka's
    ``LogSegment.ensureOffsetInRange``) within an int32 of the segment's base
    offset, as the indexes store relative offsets."""
    end = len(buf)
    if end - pos < LOG_OVERHEAD:
        return None, f"torn batch: {end - pos} bytes left, fewer than a batch prefix"
    base_offset, length = _PREFIX.unpack_from(buf, pos)
    if length < MIN_BATCH_LENGTH:
        return None, f"batch length {length} below the minimum {MIN_BATCH_LENGTH}"
    size = length + LOG_OVERHEAD
    if pos + size > end:
        return None, f"batch length {length} runs beyond the end of the file ({end - pos} bytes left)"
    fields = HEADER.unpack_from(buf, pos)
    if fields[3] != MAGIC_V2:
        return None, f"bad magic {fields[3]}"
    stored_crc = fields[4]
    if crc32c(buf[pos + ATTRIBUTES_OFFSET : pos + size]) != stored_crc:
        return None, "CRC mismatch"
    last_offset = base_offset + fields[6]
    header = BatchHeader(pos, base_offset, last_offset, size, fields[2], fields[8])
    if fields[6] < 0:
        return header, f"negative last offset delta {fields[6]}"
    if base_offset < expected_offset:
        return header, f"batch base offset {base_offset} is below the expected {expected_offset}"
    if segment_base is not None and last_offset - segment_base > 0x7FFFFFFF:
        return header, f"batch last offset {last_offset} is out of range for a segment based at {segment_base}"
    return header, None


def scan(buf: memoryview, first_offset: int) -> ScanResult:
    """Walk the batches of a segment until the end or the first bad batch."""
    headers: list[BatchHeader] = []
    pos = 0
    expected = first_offset
    end = len(buf)
    while pos < end:
        header, problem = _check_batch(buf, pos, expected, first_offset)
        if problem is not None:
            return ScanResult(headers, pos, problem)
        assert header is not None
        headers.append(header)
        expected = header.next_offset
        pos += header.size
    return ScanResult(headers, pos)


def find_valid_batch_after(buf: memoryview, start: int) -> int | None:
    """Position of the first CRC-valid v2 batch that starts after ``start``.

    Candidates are found by their magic byte; each is checked for a sane
    length and a matching CRC, so random bytes essentially never qualify.
    """
    data = buf.obj if isinstance(buf.obj, (bytes, bytearray, mmap.mmap)) else bytes(buf)
    end = len(buf)
    search = start + 1 + 16  # the magic byte sits 16 bytes into a batch
    while True:
        idx = data.find(b"\x02", search, end)
        if idx < 0:
            return None
        pos = idx - 16
        search = idx + 1
        if pos <= start or end - pos < HEADER_SIZE:
            continue
        _, length = _PREFIX.unpack_from(buf, pos)
        if length < MIN_BATCH_LENGTH or pos + length + LOG_OVERHEAD > end:
            continue
        (stored_crc,) = struct.unpack_from(">I", buf, pos + 17)
        if crc32c(buf[pos + ATTRIBUTES_OFFSET : pos + length + LOG_OVERHEAD]) == stored_crc:
            return pos


def _is_zero(buf: memoryview, start: int) -> bool:
    chunk = 1 << 20
    zeros = bytes(chunk)
    pos = start
    while pos < len(buf):
        part = buf[pos : pos + chunk]
        if part != zeros[: len(part)]:
            return False
        pos += chunk
    return True


class _Mapped:
    """A read-only mapping of a file that is safe to close after use."""

    def __init__(self, fd: int, size: int) -> None:
        self._map = mmap.mmap(fd, size, access=mmap.ACCESS_READ) if size else None
        self.view = memoryview(self._map) if self._map is not None else memoryview(b"")

    def close(self) -> None:
        self.view.release()
        if self._map is not None:
            self._map.close()


def scan_segment_file(segment: LogSegment, first_offset: int) -> tuple[ScanResult, bool, int | None]:
    """Scan a segment file. Returns the scan, whether the tail after the last
    valid batch is all zeros, and the position of a CRC-valid batch after the
    damage (``None`` if there is none)."""
    mapped = _Mapped(segment.fd, segment.size)
    try:
        result = scan(mapped.view, first_offset)
        if result.problem is None:
            return result, False, None
        zero_tail = _is_zero(mapped.view, result.valid_bytes)
        later = None if zero_tail else find_valid_batch_after(mapped.view, result.valid_bytes)
        return result, zero_tail, later
    finally:
        mapped.close()


def recover_segment(
    segment: LogSegment, report: RecoveryReport, *, first_offset: int | None = None, allow_truncate: bool = True
) -> list[BatchHeader]:
    """Validate every batch of ``segment``, truncate a torn tail, then check
    and repair its indexes. Returns the headers of the batches kept."""
    path = str(segment.log_path)
    expected = segment.base_offset if first_offset is None else first_offset
    result, zero_tail, later = scan_segment_file(segment, expected)
    if result.problem is not None:
        if not allow_truncate:
            raise CorruptLogError(
                f"{result.problem} in a segment followed by later segments, refusing to truncate",
                path=path,
                position=result.valid_bytes,
            )
        if later is not None:
            raise CorruptLogError(
                f"{result.problem}; a batch with a valid CRC follows at position {later}, "
                "refusing to truncate valid data",
                path=path,
                position=result.valid_bytes,
            )
        dropped = segment.size - result.valid_bytes
        kind = "zero-filled tail" if zero_tail else result.problem
        os.ftruncate(segment.fd, result.valid_bytes)
        os.fsync(segment.fd)
        segment.size = result.valid_bytes
        report.add(path, result.valid_bytes, f"truncated {dropped} bytes", kind)
    check_indexes(segment, result.headers, report)
    return result.headers


def check_indexes(segment: LogSegment, headers: list[BatchHeader], report: RecoveryReport) -> None:
    """Make both indexes consistent with ``headers`` (the batches in the file)."""
    index, time_index = segment.index, segment.time_index
    index.load()
    time_index.load()
    rebuild: str | None = None
    if not headers:
        if len(index) or len(time_index) or index.dropped_tail_bytes or time_index.dropped_tail_bytes:
            report.add(index.path, None, "cleared", "index entries for an empty segment")
        index.reset()
        time_index.reset()
        index.rewrite()
        time_index.rewrite()
        return
    for idx in (index, time_index):
        if idx.dropped_tail_bytes:
            report.add(idx.path, len(idx) * idx.ENTRY_SIZE, f"dropped {idx.dropped_tail_bytes} bytes", "partial trailing entry")
        if idx.dropped_zero_entries:
            report.add(idx.path, len(idx) * idx.ENTRY_SIZE, f"dropped {idx.dropped_zero_entries} entries", "zero-filled tail")
    if not index.path.exists():
        rebuild = "missing offset index"
    elif not time_index.path.exists():
        rebuild = "missing time index"
    else:
        end_position = segment.size
        next_offset = headers[-1].next_offset
        before = len(index)
        index.truncate_to_position(end_position)
        time_index.truncate_to(next_offset)
        if len(index) < before:
            report.add(index.path, None, f"dropped {before - len(index)} entries", "entries past the end of the log")
        last_by_position = {h.position: h.last_offset for h in headers}
        for offset, position in index.entries:
            if last_by_position.get(position) != offset:
                rebuild = f"entry (offset {offset}, position {position}) does not match a batch"
                break
        if rebuild is None and (problem := index.sanity_check(end_position)):
            rebuild = problem
        if rebuild is None:
            last_offsets = {h.last_offset for h in headers}
            for _, offset in time_index.entries:
                if offset not in last_offsets:
                    rebuild = f"time index entry for offset {offset} does not match a batch"
                    break
            if rebuild is None and (problem := time_index.sanity_check(next_offset)):
                rebuild = problem
    if rebuild is not None:
        segment.rebuild_indexes(headers)
        report.add(index.path, None, "rebuilt offset and time indexes", rebuild)
    else:
        index.rewrite()
        time_index.rewrite()


def quick_check_segment(segment: LogSegment, report: RecoveryReport) -> None:
    """For segments before the active one: trust the data (it was fsynced at
    roll) but not the indexes; rebuild them if missing or insane."""
    index, time_index = segment.index, segment.time_index
    index.load()
    time_index.load()
    problem = None
    if segment.size and not index.path.exists():
        problem = "missing offset index"
    elif segment.size and not time_index.path.exists():
        problem = "missing time index"
    elif index.dropped_tail_bytes or time_index.dropped_tail_bytes:
        problem = "index file length is not a whole number of entries"
    else:
        problem = index.sanity_check(segment.size)
    if problem is None:
        return
    headers = list(segment.iter_headers())
    segment.rebuild_indexes(headers)
    report.add(index.path, None, "rebuilt offset and time indexes", problem)


# The files written by atomic_write (temp file, fsync, rename) into the
# partition directory: Kafka's, then kraft's own.
_ATOMIC_STATE_FILES = (QUORUM_STATE_FILE, "leader-epoch-checkpoint", "partition", VOTER_API_VERSIONS_FILE,
                       ENDPOINT_OVERRIDES_FILE)


def leftover_files(directory: Path) -> list[Path]:
    """Files a crash can leave behind that open() removes: segment files renamed
    for deletion, compaction leftovers, partial or deleted snapshots, and temp
    files of the atomic state-file writes (Kafka's and kraft's own beside
    them: a write that failed or was cut leaves ``<file>.tmp``)."""
    out = []
    for entry in sorted(Path(directory).iterdir()):
        name = entry.name
        if name.endswith((".deleted", ".cleaned", ".swap", ".checkpoint.part")) or (
            name.endswith(".tmp") and name.split(".")[0] in _ATOMIC_STATE_FILES
        ):
            out.append(entry)
    return out


def orphaned_indexes(directory: Path, segment_bases: set[int]) -> list[Path]:
    """``.index``/``.timeindex`` files whose ``.log`` does not exist."""
    out = []
    for entry in sorted(Path(directory).iterdir()):
        for suffix in (".index", ".timeindex"):
            stem = entry.name[: -len(suffix)]
            if entry.name.endswith(suffix) and len(stem) == 20 and stem.isdigit() and int(stem) not in segment_bases:
                out.append(entry)
    return out
