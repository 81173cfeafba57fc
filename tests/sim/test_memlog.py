"""MemLog: the LogView semantics the core relies on, and the crash model."""

from __future__ import annotations

import random

import pytest

from kraft.raft.logops import AppendAsLeader, Batch, Flush, InstallSnapshot, SnapshotChunk, TruncateTo
from kraft.records.view import LogView, OffsetAndEpoch
from kraft.sim.memlog import MemLog, MemLogError, decode_batches


def log_with(*batches: tuple[int, int]) -> MemLog:
    log = MemLog()
    for epoch, count in batches:
        base = log.end_offset
        log.apply(AppendAsLeader(Batch(base, epoch, tuple(b"r%d" % (base + i) for i in range(count)))))
    log.apply(Flush())
    return log


def test_memlog_is_a_log_view() -> None:
    log: LogView = MemLog()
    assert (log.start_offset, log.end_offset, log.last_epoch) == (0, 0, 0)
    assert log.latest_snapshot_id() is None and log.read(0, 100) == b""


def test_end_offset_for_epoch_follows_kip_101() -> None:
    """The largest epoch <= the requested one, and where it ends."""
    log = log_with((1, 3), (3, 2), (5, 4))
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(3, 1)
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(3, 1)
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(5, 3)
    assert log.end_offset_for_epoch(5) == OffsetAndEpoch(9, 5)
    assert log.end_offset_for_epoch(9) == OffsetAndEpoch(9, 5)
    assert log.end_offset_for_epoch(0) == OffsetAndEpoch(-1, -1)


def test_read_returns_whole_batches_from_the_one_holding_the_offset() -> None:
    log = log_with((1, 3), (2, 3))
    batches = decode_batches(log.read(4, 1))  # at least one batch even if over max_bytes
    assert [(b.base_offset, b.epoch) for b in batches] == [(3, 2)]
    assert [b.base_offset for b in decode_batches(log.read(0, 10_000))] == [0, 3]


def test_appends_must_continue_the_log() -> None:
    log = log_with((2, 3))
    with pytest.raises(MemLogError):
        log.apply(AppendAsLeader(Batch(5, 2, (b"x",))))
    with pytest.raises(MemLogError):
        log.apply(AppendAsLeader(Batch(3, 1, (b"x",))))  # epochs never go back


def test_truncation_keeps_batches_whole() -> None:
    log = log_with((1, 3), (2, 3))
    log.apply(TruncateTo(4))  # inside the second batch: it goes, as in Kafka
    assert log.end_offset == 3 and log.last_epoch == 1


def test_a_crash_loses_unflushed_batches_only() -> None:
    log = log_with((1, 3))
    log.apply(AppendAsLeader(Batch(3, 1, (b"late",))))
    assert log.crash_copy().end_offset == 3
    log.apply(Flush())
    assert log.crash_copy().end_offset == 4


def test_a_crash_may_keep_some_unflushed_batches() -> None:
    log = log_with((1, 1))
    for i in range(1, 6):
        log.apply(AppendAsLeader(Batch(i, 1, (b"x",))))
    ends = {log.crash_copy(random.Random(seed)).end_offset for seed in range(30)}
    assert min(ends) == 1 and max(ends) == 6 and len(ends) > 2


def test_snapshots_move_the_log_start_and_answer_for_their_epoch() -> None:
    log = log_with((1, 3), (2, 3), (4, 1))
    sid = OffsetAndEpoch(6, 2)
    log.create_snapshot(sid)
    log.delete_before_snapshot(sid)
    assert (log.start_offset, log.end_offset) == (6, 7)
    assert log.earliest_snapshot_id() == sid == log.latest_snapshot_id()
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(6, 2)
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(-1, -1)
    assert log.entry_at(4) == (2, b"r4")  # from the snapshot
    assert log.crash_copy().earliest_snapshot_id() == sid


def test_installing_a_downloaded_snapshot_replaces_the_log() -> None:
    source = log_with((1, 2), (3, 2))
    sid = OffsetAndEpoch(4, 3)
    source.create_snapshot(sid)
    data = source.read_snapshot(sid, 0, 1 << 20)
    assert data is not None
    follower = log_with((1, 1))
    follower.apply(SnapshotChunk(sid, 0, data.data[:5]))
    follower.apply(SnapshotChunk(sid, 5, data.data[5:]))
    follower.apply(InstallSnapshot(sid))
    assert (follower.start_offset, follower.end_offset, follower.last_epoch) == (4, 4, 3)
    assert follower.entry_at(3) == (3, b"r3")


def test_a_snapshot_chunk_must_continue_the_download() -> None:
    log = MemLog()
    with pytest.raises(MemLogError):
        log.apply(SnapshotChunk(OffsetAndEpoch(4, 1), 10, b"x"))
