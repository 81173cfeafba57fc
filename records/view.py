"""The read-only view of the metadata log that the raft core consults.

The sans-IO raft core (``kraft.quorum`` and friends) never writes to the log:
it reads through this protocol, and asks the shell to append or truncate by
returning log operations. The on-disk ``MetadataLog`` in ``kraft.records.log``
and the in-memory log used by the simulation both implement it.

Offsets follow Kafka: ``end_offset`` is the log end offset (LEO), the offset
the next record will get; ``start_offset`` is the log start offset, moved
forward by snapshots.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol


class OffsetAndEpoch(NamedTuple):
    """An (offset, epoch) pair, Kafka's ``OffsetAndEpoch``.

    Used for snapshot ids (offset = end offset of the snapshot, exclusive) and
    for the answers of :meth:`LogView.end_offset_for_epoch` (KIP-101).
    """

    offset: int
    epoch: int


class SnapshotSlice(NamedTuple):
    """A byte range of a snapshot file, as served by FetchSnapshot."""

    #: Total size of the snapshot in bytes.
    size: int
    #: The requested bytes (empty when the position is at or past the end).
    data: bytes


class LogView(Protocol):
    """What the raft core may ask of the log. All reads, no writes."""

    @property
    def start_offset(self) -> int:
        """The log start offset: the first offset still readable as records."""
        ...

    @property
    def end_offset(self) -> int:
        """The log end offset: one past the last appended record."""
        ...

    @property
    def last_epoch(self) -> int:
        """Epoch of the last record; the latest snapshot's epoch if the log is
        empty past it; 0 for an empty log."""
        ...

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """KIP-101: the largest epoch <= ``epoch`` known to the log and the end
        offset (exclusive) of that epoch. ``(-1, -1)`` when no such epoch exists
        (the log starts past it). Semantics of Kafka's
        ``LeaderEpochFileCache.endOffsetFor``."""
        ...

    def latest_snapshot_id(self) -> OffsetAndEpoch | None:
        """The newest complete snapshot, if any."""
        ...

    def read(self, start_offset: int, max_bytes: int) -> bytes:
        """Whole record batches starting at the batch that contains
        ``start_offset``; at least one batch if any exists, even if larger
        than ``max_bytes`` (as Kafka does). Empty at the log end."""
        ...

    def earliest_snapshot_id(self) -> OffsetAndEpoch | None:
        """The snapshot whose end offset is the log start offset (Kafka's
        ``earliestSnapshotId``); ``None`` when the log starts at offset 0
        without one. The leader needs its epoch to decide whether a fetch at
        the log start must switch to FetchSnapshot."""
        ...

    def read_snapshot(
        self, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int
    ) -> SnapshotSlice | None:
        """Up to ``max_bytes`` of the complete snapshot ``snapshot_id`` from byte
        ``position`` (not aligned to record batches), with the snapshot's total
        size; ``None`` if no such complete snapshot exists."""
        ...
