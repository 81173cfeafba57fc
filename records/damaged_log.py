"""What a log directory that recovery refused still says about its quorum.

A node whose segment is damaged mid-log cannot open it, yet what to do
about it depends on the log, not on the config (KIP-853): a quorum started
from ``controller.quorum.voters`` and upgraded to ``kraft.version=1`` keeps
its voters, directory ids included, in a ``VotersRecord``, and a voter that
comes back with a fresh directory is an observer until the voter set names
its new directory id. :func:`readable_kraft_control_state` reads, without
changing a byte, the KRaft control records of the newest snapshot that
validates and of every CRC-valid batch of the segments, the damaged batch
skipped, as Kafka's ``KRaftControlRecordStateMachine`` would have read them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kraft.records.batch import RecordBatch, iter_batches
from kraft.records.errors import CorruptSnapshotError, RecordsError
from kraft.records.kraft_control import control_entries, voter_entries
from kraft.records.recovery import find_valid_batch_after
from kraft.records.segment import parse_segment_base
from kraft.records.snapshot import list_snapshot_paths, validate_snapshot_bytes
from kraft.records.view import KRaftControlState, VotersAt

__all__ = ["readable_kraft_control_state"]


def _valid_batches(data: memoryview) -> Iterator[RecordBatch]:
    """Every CRC-valid batch of a segment, in file order, skipping what is not one."""
    pos = 0
    while pos < len(data):
        bad = pos
        try:
            for batch in iter_batches(data, pos):
                if not batch.is_valid():
                    bad = batch.position
                    break
                yield batch
                pos = bad = batch.position + batch.size_in_bytes
            else:
                return
        except RecordsError:
            pass
        after = find_valid_batch_after(data, bad)
        if after is None:
            return
        pos = after


def readable_kraft_control_state(partition_dir: Path) -> KRaftControlState:
    """The latest ``kraft.version`` and voter set readable in
    ``__cluster_metadata-0`` (voters ``None``: no ``VotersRecord``, a static
    quorum that was never upgraded)."""
    version_at, version = -2, 0
    voters: VotersAt | None = None
    snapshots = [s for s in list_snapshot_paths(partition_dir) if not s.partial and not s.deleted]
    for snap in sorted(snapshots, key=lambda s: s.snapshot_id, reverse=True):
        try:
            contents = validate_snapshot_bytes(snap.path.read_bytes(), str(snap.path))
        except (CorruptSnapshotError, RecordsError, OSError):
            continue
        at = snap.snapshot_id.offset - 1
        if contents.kraft_version is not None:
            version_at, version = at, int(contents.kraft_version.k_raft_version)
        if contents.voters is not None:
            voters = VotersAt(at, voter_entries(contents.voters))
        break
    bases = sorted(b for p in partition_dir.iterdir() if (b := parse_segment_base(p.name)) is not None)
    for base in bases:
        try:
            data = memoryview((partition_dir / f"{base:020d}.log").read_bytes())
        except OSError:
            continue
        for batch in _valid_batches(data):
            if not batch.is_control:
                continue
            try:
                entries = list(control_entries(batch))
            except (RecordsError, ValueError):
                continue
            for offset, value in entries:
                if isinstance(value, int):
                    if offset > version_at:
                        version_at, version = offset, max(version, value)
                elif voters is None or offset > voters.offset:
                    voters = VotersAt(offset, value)
    return KRaftControlState(voters, version)
