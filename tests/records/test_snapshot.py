"""Snapshot files: names, writer, reader and structural validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraft.records.batch import Record, build_batch, iter_batches
from kraft.records.control import build_control_batch
from kraft.records.errors import CorruptSnapshotError
from kraft.records.snapshot import (
    SnapshotWriter,
    delete_snapshot,
    parse_snapshot_path,
    read_snapshot_timestamp,
    snapshot_file_name,
    validate_snapshot_bytes,
)
from kraft.records.view import OffsetAndEpoch


def test_names_follow_kafka_snapshots() -> None:
    sid = OffsetAndEpoch(28869, 189)
    assert snapshot_file_name(sid) == "00000000000000028869-0000000189.checkpoint"
    assert parse_snapshot_path("x/00000000000000028869-0000000189.checkpoint").snapshot_id == sid
    assert parse_snapshot_path("00000000000000028869-0000000189.checkpoint.part").partial
    assert parse_snapshot_path("00000000000000028869-0000000189.checkpoint.deleted").deleted
    for other in ("bootstrap.checkpoint", "00000000000000028869.log", "1-2.checkpoint", "quorum-state"):
        assert parse_snapshot_path(other) is None


def _header_footer_classes():
    from kraft.messages.registry import CONTROL_RECORD_CLASSES

    return CONTROL_RECORD_CLASSES[3], CONTROL_RECORD_CLASSES[4]


def test_writer_batches_records_and_writes_voters(tmp_path: Path) -> None:
    from kraft.records.bootstrap import DynamicVoter, voters_record
    import uuid

    voters = voters_record([DynamicVoter(1, "localhost", 9093, uuid.UUID(int=9))], "CONTROLLER")
    sid = OffsetAndEpoch(500, 7)
    writer = SnapshotWriter(tmp_path, sid, last_contained_log_timestamp=1234, kraft_version=1,
                            voters_record=voters, max_batch_size=1000, clock_ms=lambda: 99)
    writer.append([b"\x01\x14\x00\x00" + bytes(60)] * 40)
    path = writer.freeze()
    assert path.name == "00000000000000000500-0000000007.checkpoint"
    contents = validate_snapshot_bytes(path.read_bytes())
    assert contents.header.last_contained_log_timestamp == 1234
    assert contents.kraft_version.k_raft_version == 1 and contents.voters == voters
    batches = list(iter_batches(path.read_bytes()))
    assert all(b.partition_leader_epoch == 7 for b in batches)
    assert len(batches) > 4  # data split by the batch size limit
    assert [b.base_offset for b in batches] == sorted(b.base_offset for b in batches)
    assert batches[-1].next_offset == 3 + 40 + 1
    assert read_snapshot_timestamp(path) == 1234
    delete_snapshot(tmp_path, sid)
    assert list(tmp_path.iterdir()) == []


def test_kraft_version_1_needs_voters(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="VotersRecord"):
        SnapshotWriter(tmp_path, OffsetAndEpoch(1, 1), last_contained_log_timestamp=0, kraft_version=1)


def test_context_manager_aborts_unfrozen(tmp_path: Path) -> None:
    with SnapshotWriter(tmp_path, OffsetAndEpoch(5, 1), last_contained_log_timestamp=0) as writer:
        writer.append([b"\x01\x14\x00\x00"])
    assert list(tmp_path.iterdir()) == []


def _snapshot_bytes(*, header: bool = True, footer: bool = True, after_footer: bool = False, gap: bool = False) -> bytes:
    header_cls, footer_cls = _header_footer_classes()
    out = b""
    offset = 0
    if header:
        out += build_control_batch([header_cls(version=0, last_contained_log_timestamp=1)], base_offset=0,
                                   partition_leader_epoch=1, timestamp=1)
        offset = 1
    offset += 5 if gap else 0
    out += build_batch([Record(offset, 1, None, b"\x01\x14\x00\x00")], base_offset=offset)
    offset += 1
    if footer:
        out += build_control_batch([footer_cls(version=0)], base_offset=offset, partition_leader_epoch=1, timestamp=1)
        offset += 1
    if after_footer:
        out += build_batch([Record(offset, 1, None, b"\x01\x14\x00\x00")], base_offset=offset)
    return out


@pytest.mark.parametrize("kwargs, reason", [
    ({"header": False}, "SnapshotHeader"),
    ({"footer": False}, "no SnapshotFooter"),
    ({"after_footer": True}, "after the snapshot footer"),
    ({"gap": True}, "expected"),
])
def test_structural_errors(kwargs: dict, reason: str) -> None:
    with pytest.raises(CorruptSnapshotError, match=reason) as info:
        validate_snapshot_bytes(_snapshot_bytes(**kwargs), "snap.checkpoint")
    assert info.value.path == "snap.checkpoint" and info.value.position is not None


def test_crc_and_truncation_errors() -> None:
    data = bytearray(_snapshot_bytes())
    data[70] ^= 1
    with pytest.raises(CorruptSnapshotError, match="CRC"):
        validate_snapshot_bytes(bytes(data))
    with pytest.raises(CorruptSnapshotError):
        validate_snapshot_bytes(_snapshot_bytes()[:-10])
    with pytest.raises(CorruptSnapshotError, match="empty"):
        validate_snapshot_bytes(b"")
