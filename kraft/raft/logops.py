"""Record batches as the core sees them, and the log operations it asks for.

The core does not encode Kafka record batches. It describes what to write as
a :class:`Batch` — base offset, epoch, opaque record values, or a control
record — and the log (the on-disk ``MetadataLog`` or the simulation's
``MemLog``) turns that into bytes. Bytes that arrive from the leader
(``FetchResponse.records``) go back to the log untouched in
:class:`AppendAsFollower`. That keeps the boundary thin: one dataclass in, one
``bytes`` through.

The shell executes log operations in order, after persisting the election
state and before sending anything (see ``kraft.raft.core.Ready``).
"""

from __future__ import annotations

from dataclasses import dataclass

from kraft.records.view import OffsetAndEpoch, VoterEntry


@dataclass(frozen=True, slots=True)
class LeaderChangeMessage:
    """Kafka's ``LeaderChangeMessage`` control record (control type 2): written
    by every new leader as the first batch of its epoch so the high watermark
    can advance without waiting for client data (KIP-595)."""

    leader_id: int
    voters: tuple[int, ...]
    granting_voters: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class KRaftVersionControl:
    """Kafka's ``KRaftVersionRecord`` control record (control type 5): the
    finalized ``kraft.version`` from this offset on (KIP-853)."""

    kraft_version: int


@dataclass(frozen=True, slots=True)
class VotersControl:
    """Kafka's ``VotersRecord`` control record (control type 6): the whole
    voter set from this offset on, read by every replica as soon as it is in
    its log, committed or not (KIP-853)."""

    voters: tuple[VoterEntry, ...]


ControlRecord = LeaderChangeMessage | KRaftVersionControl | VotersControl


@dataclass(frozen=True, slots=True)
class Batch:
    """One record batch to append as leader.

    A data batch holds ``records`` (opaque values, one offset each); a control
    batch holds one or more ``controls`` records (one offset each) and no
    data records -- a new leader's LeaderChange, say, followed by the
    KRaftVersion and Voters records of a bootstrapped voter set.
    """

    base_offset: int
    epoch: int
    records: tuple[bytes, ...] = ()
    controls: tuple[ControlRecord, ...] = ()
    #: Wall-clock time of the append as given to the core (the batch's
    #: ``maxTimestamp``/``baseTimestamp`` on disk).
    append_time_ms: int = 0

    def __post_init__(self) -> None:
        if bool(self.controls) == bool(self.records):
            raise ValueError("a batch holds either data records or control records")
        if self.base_offset < 0 or self.epoch < 0:
            raise ValueError(f"invalid batch position ({self.base_offset}, {self.epoch})")

    @property
    def control(self) -> ControlRecord | None:
        """The first control record of a control batch, ``None`` for data."""
        return self.controls[0] if self.controls else None

    @property
    def record_count(self) -> int:
        return len(self.controls) if self.controls else len(self.records)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.record_count - 1

    @property
    def size_in_bytes(self) -> int:
        """Approximate payload size, for batch sizing and fetch limits."""
        return sum(len(r) for r in self.records) + 16 * len(self.controls)


@dataclass(frozen=True, slots=True)
class AppendAsLeader:
    """Append ``batch`` at the log end (its base offset equals the log end)."""

    batch: Batch


@dataclass(frozen=True, slots=True)
class AppendAsFollower:
    """Append record batches fetched from the leader, exactly as received.
    Their base offset equals the local log end offset. As the codec decoded
    them: a view of the received frame, not a copy."""

    records: bytes | memoryview


@dataclass(frozen=True, slots=True)
class TruncateTo:
    """Remove every record at or after ``offset`` (log reconciliation after a
    diverging epoch). Never below the high watermark."""

    offset: int


@dataclass(frozen=True, slots=True)
class Flush:
    """fsync the log. Everything appended before this point is durable once it
    completes; the core only counts an offset towards the high watermark after
    the flush that covers it has been executed."""


@dataclass(frozen=True, slots=True)
class SnapshotChunk:
    """Write ``data`` at byte ``position`` of the snapshot being downloaded.
    ``position == 0`` starts the download afresh (discard any partial file for
    that id, Kafka's ``<id>.checkpoint.part``)."""

    snapshot_id: OffsetAndEpoch
    position: int
    #: As the codec decoded it: a view of the received frame.
    data: bytes | memoryview


@dataclass(frozen=True, slots=True)
class InstallSnapshot:
    """The download of ``snapshot_id`` is complete: freeze it (fsync, atomic
    rename to ``.checkpoint``) and fully truncate the log to it — log start
    offset = log end offset = ``snapshot_id.offset`` (Kafka's
    ``truncateToLatestSnapshot``)."""

    snapshot_id: OffsetAndEpoch


LogOp = AppendAsLeader | AppendAsFollower | TruncateTo | Flush | SnapshotChunk | InstallSnapshot
