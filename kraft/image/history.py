"""A metadata log directory's images at any committed offset or time it still
covers: what ``kraft shell --directory DIR --at ...`` and ``diff A B`` read.

A position is an offset (``1234``) or an ISO-8601 time
(``2025-01-22T15:23:35Z``; without a zone it is UTC). A time means the last
record appended at or before it. An offset is covered when a snapshot ends
right after it, or when the log holds it and continues from a snapshot at or
before it (or from offset 0).
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kraft.image.builder import ImageBuilder
from kraft.image.changes import LogBatch, LogItem
from kraft.image.model import MetadataImage
from kraft.image.metadata_source import (
    cut_batch,
    partition_dir,
    read_directory,
    replay_directory,
    scan_segments,
)
from kraft.records.snapshot import list_snapshot_paths, read_snapshot_timestamp

__all__ = ["DirectoryHistory", "Coverage", "parse_position"]

_OFFSET = re.compile(r"-?\d+")


def parse_position(text: str) -> int | _dt.datetime:
    """An offset or an aware UTC time; ``ValueError`` naming the problem."""
    text = text.strip()
    if _OFFSET.fullmatch(text):
        return int(text)
    try:
        t = _dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"'{text}' is neither an offset nor an ISO-8601 time (e.g. 2025-01-22T15:23:35Z)") from None
    return t if t.tzinfo is not None else t.replace(tzinfo=_dt.timezone.utc)


@dataclass(frozen=True, slots=True)
class Coverage:
    """What a directory holds: its snapshots (end offset, time) and its log."""

    snapshots: tuple[tuple[int, int], ...]
    log_start: int | None
    log_end: int | None  # the last offset in the readable log
    #: (base offset, last offset, append time) of every log batch, in order.
    batches: tuple[tuple[int, int, int], ...]

    def covers(self, offset: int) -> bool:
        if offset < 0:
            return False
        at_or_before = [s for s, _ in self.snapshots if s <= offset + 1]
        in_log = self.log_end is not None and offset <= self.log_end
        if at_or_before:
            latest = max(at_or_before)
            if latest == offset + 1:
                return True
            return in_log and self.log_start is not None and self.log_start <= latest
        return in_log and self.log_start == 0

    def bounds(self) -> tuple[int, int] | None:
        """The lowest and highest offset covered (there may be gaps between)."""
        candidates = [s - 1 for s, _ in self.snapshots if s >= 1]
        if self.log_start == 0 and self.log_end is not None:
            candidates.append(0)
        if self.log_end is not None:
            candidates.append(self.log_end)
        covered = [c for c in candidates if self.covers(c)]
        return (min(covered), max(covered)) if covered else None

    def offset_at(self, t: _dt.datetime) -> int | None:
        """The last covered offset whose record was appended at or before ``t``."""
        ms = int(t.timestamp() * 1000)
        best: int | None = None
        for end, ts in self.snapshots:
            if 0 <= ts <= ms and self.covers(end - 1):
                best = max(best if best is not None else -1, end - 1)
        for _, last, ts in self.batches:
            if ts <= ms and self.covers(last):
                best = max(best if best is not None else -1, last)
        return best


class DirectoryHistory:
    """Images of one ``__cluster_metadata-0`` directory, read-only."""

    def __init__(self, path: str | Path) -> None:
        self.pdir = partition_dir(path)
        self._coverage: Coverage | None = None

    @property
    def coverage(self) -> Coverage:
        if self._coverage is None:
            snapshots = []
            for sp in list_snapshot_paths(self.pdir):
                if sp.partial or sp.deleted:
                    continue
                ts = read_snapshot_timestamp(sp.path)
                snapshots.append((sp.snapshot_id.offset, ts if ts is not None else -1))
            log_start = None
            batches = tuple(scan_segments(self.pdir))
            log_end = batches[-1][1] if batches else None
            log_start = batches[0][0] if batches else None
            self._coverage = Coverage(tuple(sorted(snapshots)), log_start, log_end, batches)
        return self._coverage

    def resolve(self, position: str) -> int:
        """The offset ``position`` names; ``ValueError`` when the directory
        does not cover it."""
        where = parse_position(position)
        cov = self.coverage
        bounds = cov.bounds()
        span = f"offsets {bounds[0]}..{bounds[1]}" if bounds else "nothing"
        if isinstance(where, int):
            if not cov.covers(where):
                raise ValueError(f"offset {where} is outside what {self.pdir} covers ({span})")
            return where
        offset = cov.offset_at(where)
        if offset is None:
            raise ValueError(f"time {position} is before anything {self.pdir} covers ({span})")
        return offset

    def items(self, up_to: int | None = None) -> Iterator[LogItem]:
        """The log items up to ``up_to`` (inclusive; a batch that straddles
        it is cut there)."""
        for item in read_directory(self.pdir, up_to=up_to):
            yield cut_batch(item, up_to) if isinstance(item, LogBatch) else item

    def image(self, up_to: int | None = None, builder: ImageBuilder | None = None) -> MetadataImage:
        """The image at ``up_to`` (the end when ``None``): :meth:`items`
        applied, by the reader that skips building them."""
        return replay_directory(self.pdir, builder or ImageBuilder(), up_to=up_to)

    def image_at(self, position: str) -> MetadataImage:
        return self.image(self.resolve(position))
