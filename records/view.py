"""The read-only view of the metadata log that the raft core consults.

The sans-IO raft core (``kraft.raft.quorum_state`` and friends) never writes to the log:
it reads through this protocol, and asks the shell to append or truncate by
returning log operations. The on-disk ``MetadataLog`` in ``kraft.records.log``
and the in-memory log used by the simulation both implement it.

Offsets follow Kafka: ``end_offset`` is the log end offset (LEO), the offset
the next record will get; ``start_offset`` is the log start offset, moved
forward by snapshots.
"""

from __future__ import annotations

import uuid
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


class VoterEntry(NamedTuple):
    """One voter of a ``VotersRecord`` as the log read it (KIP-853): the id,
    the directory id (``None`` for Kafka's zero uuid), the endpoints as
    (listener, host, port), and the supported ``kraft.version`` range."""

    voter_id: int
    directory_id: uuid.UUID | None
    endpoints: tuple[tuple[str, str, int], ...] = ()
    min_kraft_version: int = 0
    max_kraft_version: int = 0


class VotersAt(NamedTuple):
    """A voter set and the offset of the ``VotersRecord`` that set it; a
    snapshot's voters sit at its end offset - 1 (so -1 for the bootstrap
    checkpoint ``00000000000000000000-0000000000``), as in Kafka's
    ``KRaftControlRecordStateMachine``."""

    offset: int
    voters: tuple[VoterEntry, ...]


class KRaftControlState(NamedTuple):
    """What the KRaft control records of the latest snapshot and the whole log
    (committed or not) say at the log end: the latest voter set (``None`` if
    no ``VotersRecord`` was ever read: a static quorum, or an observer that
    has not fetched one yet) and the latest finalized ``kraft.version``."""

    voters: VotersAt | None = None
    kraft_version: int = 0
    #: The voter set before ``voters`` (if the history still has it): the
    #: raft core's liveness exception for a replica whose removal is not
    #: committed yet (``kraft.raft.quorum_state``).
    previous_voters: VotersAt | None = None


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

    def kraft_control_state(self) -> KRaftControlState:
        """The latest voter set and ``kraft.version`` from the KRaft control
        records (``VotersRecord``, ``KRaftVersionRecord``) of the latest
        snapshot and every log batch up to the log end, uncommitted ones
        included; reverted when the log is truncated below them (Kafka's
        ``KRaftControlRecordStateMachine``). Cheap: the log maintains it as it
        appends, truncates and installs snapshots, and returns the same
        object until it changes."""
        ...
