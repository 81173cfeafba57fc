"""An in-memory metadata log for the simulation and the unit tests.

:class:`MemLog` implements :class:`~kraft.records.view.LogView` plus the write
operations a shell executes from a ``Ready`` (:meth:`MemLog.apply`), and it
models durability: :meth:`MemLog.crash_copy` returns the log as a crash would
leave it — everything covered by the last ``Flush`` survives, appended but
unflushed batches may be lost (a random prefix of them survives, as the OS may
have written some back). Truncation and snapshots are durable at once (file
truncate; snapshot files are fsynced and renamed into place).

Record batches cross the wire (``LogView.read`` -> ``FetchResponse.records``
-> ``AppendAsFollower``) in a small private encoding; they are opaque to the
core, which is the point. The encoding is not Kafka's: the on-disk log
carries real Kafka record batches.

A snapshot holds the records below its end offset in the same encoding, so
the invariant checkers can compare snapshot contents with the log.

KIP-853 control records (KRaftVersion, Voters) are readable text records
too; the log keeps their history (:class:`~kraft.records.kraft_control.KRaftControlHistory`)
as it appends, truncates, installs snapshots and crashes, like the on-disk
log. :meth:`MemLog.bootstrap` plays ``kafka-storage format
--initial-controllers``: a voter set at offset -1 that is never replicated.
"""

from __future__ import annotations

import bisect
import json
import random
import struct
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from kraft.raft.logops import (
    AppendAsFollower,
    AppendAsLeader,
    Batch,
    Flush,
    InstallSnapshot,
    KRaftVersionControl,
    LeaderChangeMessage,
    LogOp,
    SnapshotChunk,
    TruncateTo,
    VotersControl,
)
from kraft.records.kraft_control import KRaftControlHistory
from kraft.records.view import KRaftControlState, OffsetAndEpoch, SnapshotSlice, VoterEntry

_BATCH_HEADER = struct.Struct(">qiBi")  # base offset, epoch, control flag, record count
_RECORD_LEN = struct.Struct(">i")


class MemLogError(Exception):
    """A write the log refuses: it would break the log's structure. In the
    simulation this always means a bug in the core or the harness."""


@dataclass(frozen=True, slots=True)
class MemBatch:
    base_offset: int
    epoch: int
    records: tuple[bytes, ...]
    control: bool = False

    @property
    def end_offset(self) -> int:
        return self.base_offset + len(self.records)


def encode_batches(batches: list[MemBatch]) -> bytes:
    out = bytearray()
    for b in batches:
        out += _BATCH_HEADER.pack(b.base_offset, b.epoch, 1 if b.control else 0, len(b.records))
        for r in b.records:
            out += _RECORD_LEN.pack(len(r))
            out += r
    return bytes(out)


def decode_batches(data: bytes | memoryview) -> list[MemBatch]:
    batches = []
    pos = 0
    try:
        while pos < len(data):
            base, epoch, control, count = _BATCH_HEADER.unpack_from(data, pos)
            pos += _BATCH_HEADER.size
            records = []
            for _ in range(count):
                (n,) = _RECORD_LEN.unpack_from(data, pos)
                pos += _RECORD_LEN.size
                if n < 0 or pos + n > len(data):
                    raise MemLogError("truncated record")
                records.append(bytes(data[pos : pos + n]))
                pos += n
            if count < 1:
                raise MemLogError("empty batch")
            batches.append(MemBatch(base, epoch, tuple(records), bool(control)))
    except struct.error as e:
        raise MemLogError(f"corrupt batch data at byte {pos}: {e}") from None
    return batches


def encode_control(c: Any) -> bytes:
    """One control record in the simulation's text form."""
    match c:
        case LeaderChangeMessage():
            return (
                f"LeaderChange(leader={c.leader_id},voters={list(c.voters)},granting={list(c.granting_voters)})"
            ).encode()
        case KRaftVersionControl():
            return f"KRaftVersion({c.kraft_version})".encode()
        case VotersControl():
            voters = [
                [v.voter_id, None if v.directory_id is None else v.directory_id.hex, [list(e) for e in v.endpoints],
                 v.min_kraft_version, v.max_kraft_version]
                for v in c.voters
            ]
            return b"Voters(" + json.dumps(voters, separators=(",", ":")).encode() + b")"
    raise MemLogError(f"unknown control record {c!r}")


def decode_voters(record: bytes) -> tuple[VoterEntry, ...]:
    items = json.loads(record[len(b"Voters(") : -1])
    return tuple(
        VoterEntry(v[0], None if v[1] is None else uuid.UUID(hex=v[1]), tuple(tuple(e) for e in v[2]), v[3], v[4])
        for v in items
    )


def control_entries(batch: MemBatch) -> Iterator[tuple[int, Any]]:
    """(offset, kraft.version) and (offset, voters) of a control batch."""
    if not batch.control:
        return
    for i, record in enumerate(batch.records):
        if record.startswith(b"KRaftVersion("):
            yield batch.base_offset + i, int(record[len(b"KRaftVersion(") : -1])
        elif record.startswith(b"Voters("):
            yield batch.base_offset + i, decode_voters(record)


class MemLog:
    """A replica's log: batches, leader-epoch cache, snapshots, fsync state."""

    def __init__(self) -> None:
        self._batches: list[MemBatch] = []
        self._bases: list[int] = []
        self._start = 0
        #: (epoch, start offset) of each epoch present, ascending.
        self._epochs: list[tuple[int, int]] = []
        self._flushed_end = 0
        self._snapshots: dict[OffsetAndEpoch, bytes] = {}
        self._partial: dict[OffsetAndEpoch, bytearray] = {}
        #: Bumped whenever existing records are removed or replaced; lets
        #: invariant checkers cache what they verified.
        self.generation = 0
        #: KIP-853 control-record history, and the bootstrap voter set
        #: (``kafka-storage format --initial-controllers``) at offset -1.
        self._control = KRaftControlHistory()
        self._bootstrap: tuple[tuple[VoterEntry, ...], int] | None = None

    def bootstrap(self, voters: Sequence[VoterEntry], kraft_version: int = 1) -> None:
        """Format as a dynamic quorum: ``voters`` and ``kraft_version`` in
        effect from offset -1 (Kafka's bootstrap checkpoint ``0-0``, never
        replicated). An empty ``voters`` formats a replica that will learn the
        voters from the leader (``--no-initial-controllers``)."""
        self._bootstrap = (tuple(voters), kraft_version)
        self._rebuild_control()

    def kraft_control_state(self) -> KRaftControlState:
        return self._control.state()

    @property
    def kraft_control(self) -> KRaftControlHistory:
        """The control-record history (read it, do not change it)."""
        return self._control

    def _rebuild_control(self) -> None:
        control = self._control
        control.clear()
        if self._bootstrap is not None:
            voters, version = self._bootstrap
            control.add_kraft_version(-1, version)
            if voters:
                control.add_voters(-1, voters)
        for b in self.snapshot_batches(self.earliest_snapshot_id()):
            control.apply(control_entries(b))
        for b in self._batches:
            control.apply(control_entries(b))

    # --- LogView ------------------------------------------------------------------

    @property
    def start_offset(self) -> int:
        return self._start

    @property
    def end_offset(self) -> int:
        return self._batches[-1].end_offset if self._batches else self._start

    @property
    def last_epoch(self) -> int:
        if self._batches:
            return self._batches[-1].epoch
        earliest = self.earliest_snapshot_id()
        return earliest.epoch if earliest is not None else 0

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        entries = self._epoch_entries()
        if not entries or epoch < 0:
            return OffsetAndEpoch(-1, -1)
        if entries[-1][0] == epoch:
            return OffsetAndEpoch(self.end_offset, epoch)
        # Largest epoch <= requested, ends where the next epoch starts.
        i = bisect.bisect_right([e for e, _ in entries], epoch) - 1
        if i < 0:
            return OffsetAndEpoch(-1, -1)
        found_epoch = entries[i][0]
        end = entries[i + 1][1] if i + 1 < len(entries) else self.end_offset
        return OffsetAndEpoch(end, found_epoch)

    def latest_snapshot_id(self) -> OffsetAndEpoch | None:
        return max(self._snapshots, default=None)

    def earliest_snapshot_id(self) -> OffsetAndEpoch | None:
        if self._start == 0:
            return None
        for sid in self._snapshots:
            if sid.offset == self._start:
                return sid
        return None

    def read(self, start_offset: int, max_bytes: int) -> bytes:
        if start_offset >= self.end_offset or not self._batches:
            return b""
        if start_offset < self._start:
            raise MemLogError(f"read at {start_offset} below the log start {self._start}")
        i = bisect.bisect_right(self._bases, start_offset) - 1
        chosen: list[MemBatch] = []
        size = 0
        for b in self._batches[i:]:
            n = len(encode_batches([b]))
            if chosen and size + n > max_bytes:
                break
            chosen.append(b)
            size += n
        return encode_batches(chosen)

    def read_snapshot(
        self, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int
    ) -> SnapshotSlice | None:
        data = self._snapshots.get(snapshot_id)
        if data is None:
            return None
        if position < 0:
            return SnapshotSlice(len(data), b"")
        return SnapshotSlice(len(data), data[position : position + max(0, max_bytes)])

    # --- writes (what the shell executes) ----------------------------------------------

    def apply(self, op: LogOp) -> None:
        match op:
            case AppendAsLeader(batch=batch):
                self.append_as_leader(batch)
            case AppendAsFollower(records=records):
                self.append_as_follower(records)
            case TruncateTo(offset=offset):
                self.truncate_to(offset)
            case Flush():
                self.flush()
            case SnapshotChunk(snapshot_id=sid, position=position, data=data):
                self.write_snapshot_chunk(sid, position, data)
            case InstallSnapshot(snapshot_id=sid):
                self.install_snapshot(sid)
            case _:
                raise MemLogError(f"unknown log operation {op!r}")

    def append_as_leader(self, batch: Batch) -> None:
        if batch.controls:
            records = tuple(encode_control(c) for c in batch.controls)
        else:
            records = batch.records
        self._append(MemBatch(batch.base_offset, batch.epoch, records, bool(batch.controls)))

    def append_as_follower(self, data: bytes | memoryview) -> None:
        batches = decode_batches(data)
        if not batches:
            raise MemLogError("append of no batches")
        for b in batches:
            self._append(b)

    def _append(self, batch: MemBatch) -> None:
        if batch.base_offset != self.end_offset:
            raise MemLogError(
                f"batch at offset {batch.base_offset} does not start at the log end {self.end_offset}"
            )
        if batch.epoch < self.last_epoch:
            raise MemLogError(f"batch epoch {batch.epoch} is below the last epoch {self.last_epoch}")
        entries = list(control_entries(batch))
        if not self._epochs or self._epochs[-1][0] != batch.epoch:
            self._epochs.append((batch.epoch, batch.base_offset))
        self._batches.append(batch)
        self._bases.append(batch.base_offset)
        self._control.apply(entries)

    def truncate_to(self, offset: int) -> None:
        if offset < self._start:
            raise MemLogError(f"truncation to {offset} below the log start {self._start}")
        if offset >= self.end_offset:
            return
        # Like Kafka, a batch is kept whole or dropped whole: truncating inside
        # one drops it (the log may end a little before ``offset``).
        i = max(0, bisect.bisect_right(self._bases, offset) - 1)
        if self._batches[i].end_offset <= offset:
            i += 1
        offset = self._batches[i].base_offset
        del self._batches[i:]
        del self._bases[i:]
        self._epochs = [(e, s) for e, s in self._epochs if s < offset]
        self._flushed_end = min(self._flushed_end, offset)
        self._control.truncate_from(offset)
        self.generation += 1

    def flush(self) -> None:
        self._flushed_end = self.end_offset

    def write_snapshot_chunk(self, snapshot_id: OffsetAndEpoch, position: int, data: bytes | memoryview) -> None:
        if position == 0:
            self._partial[snapshot_id] = bytearray()
        partial = self._partial.get(snapshot_id)
        if partial is None or len(partial) != position:
            raise MemLogError(
                f"snapshot chunk for {snapshot_id} at {position} does not continue the download"
            )
        partial += data

    def install_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        """Freeze a completed download (or adopt a stored snapshot) and fully
        truncate the log to it."""
        partial = self._partial.pop(snapshot_id, None)
        if partial is not None:
            decode_batches(bytes(partial))  # a frozen snapshot must be whole
            self._snapshots[snapshot_id] = bytes(partial)
        elif snapshot_id not in self._snapshots:
            raise MemLogError(f"no snapshot {snapshot_id} to install")
        self._batches = []
        self._bases = []
        self._epochs = []
        self._start = snapshot_id.offset
        self._flushed_end = snapshot_id.offset
        self._drop_snapshots_before(snapshot_id)
        self._rebuild_control()
        self.generation += 1

    def create_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        """Write a snapshot of the records below ``snapshot_id.offset`` (the
        simulation's state machine is the record list itself)."""
        if snapshot_id in self._snapshots:
            return
        if not self._start <= snapshot_id.offset <= self.end_offset:
            raise MemLogError(f"snapshot {snapshot_id} outside the log [{self._start}, {self.end_offset})")
        if not self._is_boundary(snapshot_id.offset):
            raise MemLogError(f"snapshot {snapshot_id} is not at a batch boundary")
        prefix = self.snapshot_batches(self.earliest_snapshot_id())
        prefix += [b for b in self._batches if b.end_offset <= snapshot_id.offset]
        self._snapshots[snapshot_id] = encode_batches(prefix)

    def delete_before_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        """Move the log start to ``snapshot_id`` (Kafka's log cleaning after a
        snapshot): drop the batches it covers and older snapshots."""
        if snapshot_id not in self._snapshots:
            raise MemLogError(f"unknown snapshot {snapshot_id}")
        if snapshot_id.offset <= self._start:
            return
        i = bisect.bisect_left(self._bases, snapshot_id.offset)
        del self._batches[:i]
        del self._bases[:i]
        self._start = snapshot_id.offset
        kept = [(e, max(s, self._start)) for e, s in self._epochs if s >= self._start]
        older = [(e, s) for e, s in self._epochs if s < self._start]
        if older and (not kept or kept[0][1] > self._start):
            # The epoch that was running at the new start continues there.
            kept.insert(0, (older[-1][0], self._start))
        self._epochs = kept
        self._drop_snapshots_before(snapshot_id)
        self._control.truncate_before(self._start)
        self.generation += 1

    def _drop_snapshots_before(self, snapshot_id: OffsetAndEpoch) -> None:
        for sid in [s for s in self._snapshots if s < snapshot_id]:
            del self._snapshots[sid]

    # --- crash model ------------------------------------------------------------

    def crash_copy(self, rng: random.Random | None = None) -> MemLog:
        """The log after a crash: flushed batches survive; of the unflushed ones
        a random prefix survives (none without ``rng``). Partial snapshot
        downloads are lost."""
        copy = MemLog()
        keep = [b for b in self._batches if b.end_offset <= self._flushed_end]
        unflushed = [b for b in self._batches if b.end_offset > self._flushed_end]
        if rng is not None and unflushed:
            keep += unflushed[: rng.randrange(len(unflushed) + 1)]
        copy._start = self._start
        copy._snapshots = dict(self._snapshots)
        copy._bootstrap = self._bootstrap
        copy._rebuild_control()
        for b in keep:
            copy._append(b)
        copy._flushed_end = copy.end_offset
        copy.generation = self.generation + 1
        return copy

    # --- inspection (invariant checkers, tests) --------------------------------------

    @property
    def flushed_end_offset(self) -> int:
        return self._flushed_end

    @property
    def batches(self) -> tuple[MemBatch, ...]:
        return tuple(self._batches)

    def snapshot_ids(self) -> tuple[OffsetAndEpoch, ...]:
        return tuple(sorted(self._snapshots))

    def snapshot_batches(self, snapshot_id: OffsetAndEpoch | None) -> list[MemBatch]:
        if snapshot_id is None:
            return []
        return decode_batches(self._snapshots[snapshot_id])

    def entry_at(self, offset: int) -> tuple[int, bytes] | None:
        """(epoch, record) at ``offset``, from the log or the snapshot at its start."""
        if offset < 0 or offset >= self.end_offset:
            return None
        if offset >= self._start:
            i = bisect.bisect_right(self._bases, offset) - 1
            b = self._batches[i]
            return b.epoch, b.records[offset - b.base_offset]
        earliest = self.earliest_snapshot_id()
        for b in self.snapshot_batches(earliest):
            if b.base_offset <= offset < b.end_offset:
                return b.epoch, b.records[offset - b.base_offset]
        return None

    def _is_boundary(self, offset: int) -> bool:
        if offset in (self._start, self.end_offset):
            return True
        i = bisect.bisect_left(self._bases, offset)
        return i < len(self._bases) and self._bases[i] == offset

    def _epoch_entries(self) -> list[tuple[int, int]]:
        """The epoch cache, with the snapshot's epoch at the log start when no
        record of the log carries it (Kafka's KafkaRaftLog answers with the
        snapshot id there)."""
        entries = list(self._epochs)
        earliest = self.earliest_snapshot_id()
        if earliest is not None and (not entries or entries[0][0] > earliest.epoch):
            entries.insert(0, (earliest.epoch, self._start))
        return entries
