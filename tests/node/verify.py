"""Checks on what nodes left on disk: the committed records (snapshot + log)
and who led each epoch. Shared by the fault and multi-process tests."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kraft.records.control import ControlRecordType, decode_control_record
from kraft.records.log import MetadataLog, metadata_partition_dir
from kraft.records.state_files import QuorumStateFile
from kraft.records.snapshot import BOOTSTRAP_SNAPSHOT_ID
from kraft.records.view import OffsetAndEpoch


@dataclass
class StoredLog:
    """A stopped node's ``__cluster_metadata-0``, read with MetadataLog."""

    start_offset: int
    end_offset: int
    snapshot_id: OffsetAndEpoch | None
    #: Data records of the latest snapshot (no offsets: the snapshot is state).
    snapshot_records: list[bytes]
    #: offset -> value of every data record still in the log.
    records: dict[int, bytes]
    #: epoch -> leader id, from the LeaderChange control records in the log.
    leaders: dict[int, int] = field(default_factory=dict)

    def history(self) -> list[bytes]:
        """Snapshot records, then the log's data records from the snapshot on
        (for ``kraft node start``'s record-history snapshots: every data
        record from offset 0, in order)."""
        begin = self.snapshot_id.offset if self.snapshot_id is not None else 0
        return self.snapshot_records + [v for o, v in sorted(self.records.items()) if o >= begin]


def read_stored_log(metadata_log_dir: str | Path) -> StoredLog:
    mlog = MetadataLog.open(metadata_partition_dir(metadata_log_dir))
    try:
        records: dict[int, bytes] = {}
        leaders: dict[int, int] = {}
        for batch in mlog.iter_batches():
            for rec in batch.records():
                if not batch.is_control:
                    records[rec.offset] = bytes(rec.value or b"")
                    continue
                control = decode_control_record(rec)
                if control.type is ControlRecordType.LEADER_CHANGE:
                    assert leaders.get(batch.partition_leader_epoch, control.message.leader_id) \
                        == control.message.leader_id, f"two LeaderChange leaders in epoch {batch.partition_leader_epoch}"
                    leaders[batch.partition_leader_epoch] = control.message.leader_id
        snapshot_id = mlog.latest_snapshot_id()
        if snapshot_id == BOOTSTRAP_SNAPSHOT_ID:
            # The format's bootstrap state, not committed history (Kafka's
            # listeners get it through handleLoadBootstrap, not as a snapshot).
            snapshot_id = None
        snapshot_records: list[bytes] = []
        if snapshot_id is not None:
            reader = mlog.open_snapshot(snapshot_id)
            assert reader is not None
            with reader:
                snapshot_records = [bytes(r.value or b"") for r in reader.contents().data_records()]
        return StoredLog(mlog.start_offset, mlog.end_offset, snapshot_id, snapshot_records, records, leaders)
    finally:
        mlog.close()


def quorum_state(metadata_log_dir: str | Path) -> tuple[int, int | None]:
    """(epoch, leader id or None) from a node's quorum-state file."""
    data = QuorumStateFile(metadata_partition_dir(metadata_log_dir) / "quorum-state").read()
    assert data is not None
    return data.leader_epoch, (data.leader_id if data.leader_id >= 0 else None)


_LEADER_LINE = re.compile(r"leader change: epoch (\d+) leader (\d+)")


def leaders_in_node_log(text: str) -> list[tuple[int, int]]:
    """(epoch, leader) pairs a node logged (``leader change: epoch E leader L``)."""
    return [(int(e), int(leader)) for e, leader in _LEADER_LINE.findall(text)]


def assert_one_leader_per_epoch(observations: Iterable[tuple[int, int | None]]) -> dict[int, int]:
    """Election safety: across every node, at most one leader per epoch."""
    seen: dict[int, set[int]] = defaultdict(set)
    for epoch, leader in observations:
        if leader is not None:
            seen[epoch].add(leader)
    two = {e: sorted(ls) for e, ls in seen.items() if len(ls) > 1}
    assert not two, f"two leaders in one epoch: {two}"
    return {e: next(iter(ls)) for e, ls in seen.items()}


def assert_committed_everywhere(committed: Mapping[int, bytes], logs: Mapping[int, StoredLog]) -> None:
    """Every committed (offset, value) is at that offset on every node whose
    log still holds the offset, and in the snapshot of every node whose log
    starts past it (record-history snapshots)."""
    for node_id, stored in logs.items():
        in_snapshot = set(stored.snapshot_records)
        for offset, value in committed.items():
            if offset >= stored.start_offset:
                got = stored.records.get(offset)
                assert got == value, f"node {node_id}: offset {offset} holds {got!r}, committed {value!r}"
            else:
                assert value in in_snapshot, f"node {node_id}: committed {value!r} (offset {offset}) is in neither log nor snapshot"
