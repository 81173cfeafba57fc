"""KIP-101 leader epoch cache: ``leader-epoch-checkpoint``.

Maps each leader epoch to the first offset written in it. It answers "what
is the end offset of epoch E" (:meth:`LeaderEpochCache.end_offset_for`), which
is how a follower finds where its log diverges from the leader's.

The file is Kafka's ``CheckpointFile`` text format::

    0            <- version
    2            <- number of entries
    1 0          <- epoch start-offset
    3 477

rewritten whole on every change through a temp file, fsync and atomic rename.
Semantics mirror Kafka's ``LeaderEpochFileCache``.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from pathlib import Path

from kraft.records.errors import StateFileError
from kraft.records.fileutil import atomic_write

LEADER_EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"
CHECKPOINT_VERSION = 0
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


@dataclass(frozen=True, slots=True)
class EpochEntry:
    epoch: int
    start_offset: int


def parse_checkpoint(text: str, path: str = LEADER_EPOCH_CHECKPOINT_FILE) -> list[EpochEntry]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) < 2:
        raise StateFileError(path, "missing version or entry count line")
    try:
        version = int(lines[0].strip())
        count = int(lines[1].strip())
    except ValueError:
        raise StateFileError(path, "version and entry count must be integers") from None
    if version != CHECKPOINT_VERSION:
        raise StateFileError(path, f"unrecognised checkpoint version {version}")
    body = lines[2:]
    if len(body) != count:
        raise StateFileError(path, f"expected {count} entries in checkpoint file but found {len(body)}")
    entries: list[EpochEntry] = []
    for n, line in enumerate(body, start=3):
        parts = line.split()
        if len(parts) != 2:
            raise StateFileError(path, f"line {n}: expected 'epoch offset', got {line!r}")
        try:
            epoch, offset = int(parts[0]), int(parts[1])
        except ValueError:
            raise StateFileError(path, f"line {n}: non-integer entry {line!r}") from None
        if epoch < 0 or offset < 0:
            raise StateFileError(path, f"line {n}: negative entry {line!r}")
        if entries and (epoch <= entries[-1].epoch or offset < entries[-1].start_offset):
            raise StateFileError(path, f"line {n}: entries not increasing ({line!r})")
        entries.append(EpochEntry(epoch, offset))
    return entries


def format_checkpoint(entries: list[EpochEntry]) -> str:
    lines = [str(CHECKPOINT_VERSION), str(len(entries))]
    lines.extend(f"{e.epoch} {e.start_offset}" for e in entries)
    return "\n".join(lines) + "\n"


class LeaderEpochCache:
    """Epoch -> start offset entries, strictly increasing in both."""

    def __init__(self, path: Path | None, entries: list[EpochEntry] | None = None) -> None:
        self.path = None if path is None else Path(path)
        self._epochs: list[int] = []
        self._offsets: list[int] = []
        for e in entries or []:
            self._epochs.append(e.epoch)
            self._offsets.append(e.start_offset)

    @classmethod
    def load(cls, path: Path) -> LeaderEpochCache:
        """Read the checkpoint (a missing file is an empty cache); raises
        :class:`StateFileError` on a malformed file."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return cls(path)
        except UnicodeDecodeError:
            raise StateFileError(str(path), "not a text file") from None
        return cls(path, parse_checkpoint(text, str(path)))

    # --- reads --------------------------------------------------------------------

    @property
    def entries(self) -> list[EpochEntry]:
        return [EpochEntry(e, o) for e, o in zip(self._epochs, self._offsets)]

    def __len__(self) -> int:
        return len(self._epochs)

    @property
    def latest_epoch(self) -> int | None:
        return self._epochs[-1] if self._epochs else None

    @property
    def latest_entry(self) -> EpochEntry | None:
        return EpochEntry(self._epochs[-1], self._offsets[-1]) if self._epochs else None

    @property
    def earliest_entry(self) -> EpochEntry | None:
        return EpochEntry(self._epochs[0], self._offsets[0]) if self._epochs else None

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch the record at ``offset`` was written in."""
        i = bisect.bisect_right(self._offsets, offset) - 1
        return self._epochs[i] if i >= 0 else None

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """Kafka's ``LeaderEpochFileCache.endOffsetFor``: ``(epoch, end offset)``.

        - the latest epoch: ``(epoch, log end offset)``;
        - an epoch between known ones: the largest known epoch <= it, and the
          start offset of the next known epoch (its end, exclusive);
        - smaller than every known epoch: ``(requested, first start offset)``;
        - larger than every known epoch or undefined: ``(-1, -1)``.
        """
        if requested_epoch == UNDEFINED_EPOCH or not self._epochs:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if self._epochs[-1] == requested_epoch:
            return requested_epoch, log_end_offset
        higher = bisect.bisect_right(self._epochs, requested_epoch)
        if higher >= len(self._epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            return requested_epoch, self._offsets[0]
        return self._epochs[higher - 1], self._offsets[higher]

    def floor_entry(self, epoch: int) -> EpochEntry | None:
        i = bisect.bisect_right(self._epochs, epoch) - 1
        return EpochEntry(self._epochs[i], self._offsets[i]) if i >= 0 else None

    # --- writes (each flushes the checkpoint durably) --------------------------------------

    def assign(self, epoch: int, start_offset: int, *, flush: bool = True) -> bool:
        """Record that ``epoch`` starts at ``start_offset``. A no-op when the
        latest entry already is this epoch at or before that offset. Entries
        that would break monotonicity (same or higher epoch, or same or later
        start offset) are removed first, as Kafka does. Returns True if the
        cache changed."""
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"cannot assign epoch {epoch} at offset {start_offset}")
        if self._epochs and self._epochs[-1] == epoch and start_offset >= self._offsets[-1]:
            return False
        while self._epochs and (self._epochs[-1] >= epoch or self._offsets[-1] >= start_offset):
            self._epochs.pop()
            self._offsets.pop()
        self._epochs.append(epoch)
        self._offsets.append(start_offset)
        if flush:
            self.flush()
        return True

    def truncate_from_end(self, end_offset: int, *, flush: bool = True) -> bool:
        """Drop entries starting at or after ``end_offset`` (log truncated to it)."""
        keep = bisect.bisect_left(self._offsets, end_offset)
        if keep >= len(self._offsets):
            return False
        del self._epochs[keep:]
        del self._offsets[keep:]
        if flush:
            self.flush()
        return True

    def truncate_from_start(self, start_offset: int, *, flush: bool = True) -> bool:
        """The log now starts at ``start_offset``: drop entries wholly before it
        and move the epoch that covers it to start there."""
        i = bisect.bisect_right(self._offsets, start_offset) - 1
        if i < 0 or (i == 0 and self._offsets[0] == start_offset):
            return False
        del self._epochs[:i]
        del self._offsets[:i]
        self._offsets[0] = start_offset
        if flush:
            self.flush()
        return True

    def clear(self, *, flush: bool = True) -> None:
        self._epochs.clear()
        self._offsets.clear()
        if flush:
            self.flush()

    def replace(self, entries: list[EpochEntry], *, flush: bool = True) -> None:
        self._epochs = [e.epoch for e in entries]
        self._offsets = [e.start_offset for e in entries]
        if flush:
            self.flush()

    def flush(self) -> None:
        if self.path is not None:
            atomic_write(self.path, format_checkpoint(self.entries).encode("ascii"))
