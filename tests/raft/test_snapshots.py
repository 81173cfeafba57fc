"""KIP-630 snapshots: creating them at committed offsets, serving them in slices."""

from __future__ import annotations

import pytest

from kraft.raft.errors import Errors, InvalidSnapshotIdError
from kraft.raft.rpcs import FetchSnapshotResponse
from kraft.records.view import OffsetAndEpoch
from kraft.sim.memlog import decode_batches
from tests.harness.raft_context import RaftTestContext


def leader_with_snapshot() -> tuple[RaftTestContext, OffsetAndEpoch]:
    ctx = RaftTestContext(local_id=1, voters=[1]).with_log((1, 3), (2, 4)).start()
    sid = OffsetAndEpoch(7, 2)
    ctx.raft.validate_snapshot_id(sid)
    ctx.log.create_snapshot(sid)
    ctx.log.delete_before_snapshot(sid)
    return ctx, sid


def test_a_snapshot_may_only_cover_committed_offsets() -> None:
    ctx = RaftTestContext(local_id=1, voters=[1]).with_log((1, 3)).start()
    assert ctx.committed == 4  # 3 records + the LeaderChangeMessage
    ctx.raft.validate_snapshot_id(OffsetAndEpoch(3, 1))
    for bad in (OffsetAndEpoch(5, 2), OffsetAndEpoch(3, 2), OffsetAndEpoch(0, 0), OffsetAndEpoch(2, 7)):
        with pytest.raises(InvalidSnapshotIdError):
            ctx.raft.validate_snapshot_id(bad)


def test_the_log_start_moves_to_the_snapshot() -> None:
    ctx, sid = leader_with_snapshot()
    assert ctx.log.start_offset == 7 and ctx.log.earliest_snapshot_id() == sid
    assert ctx.log.end_offset_for_epoch(2) == OffsetAndEpoch(7, 2)


def test_the_leader_serves_a_snapshot_in_slices() -> None:
    ctx, sid = leader_with_snapshot()
    whole = ctx.log.read_snapshot(sid, 0, 1 << 20)
    assert whole is not None
    received = b""
    while len(received) < whole.size:
        ctx.clear_sent()
        ctx.deliver(
            ctx.fetch_snapshot_request(replica=5, snapshot_id=sid, position=len(received), max_bytes=17),
            source=5,
        )
        response = ctx.assert_response(FetchSnapshotResponse)
        assert response.partition_error is Errors.NONE
        assert (response.snapshot_id, response.size, response.position) == (sid, whole.size, len(received))
        assert 0 < len(response.unaligned_records) <= 17
        received += response.unaligned_records
    assert received == whole.data
    assert [b.epoch for b in decode_batches(received)] == [1, 2]


def test_an_unknown_snapshot_is_snapshot_not_found() -> None:
    ctx, _ = leader_with_snapshot()
    for sid in (OffsetAndEpoch(5, 1), OffsetAndEpoch(0, 0), OffsetAndEpoch(-1, -1)):
        ctx.clear_sent()
        ctx.deliver(ctx.fetch_snapshot_request(replica=5, snapshot_id=sid, position=0), source=5)
        assert ctx.assert_response(FetchSnapshotResponse).partition_error is Errors.SNAPSHOT_NOT_FOUND


@pytest.mark.parametrize("position", [-1, 10_000])
def test_a_position_outside_the_snapshot_is_position_out_of_range(position: int) -> None:
    ctx, sid = leader_with_snapshot()
    ctx.deliver(ctx.fetch_snapshot_request(replica=5, snapshot_id=sid, position=position), source=5)
    assert ctx.assert_response(FetchSnapshotResponse).partition_error is Errors.POSITION_OUT_OF_RANGE


def test_fetch_snapshot_is_served_by_the_leader_only() -> None:
    ctx = RaftTestContext(local_id=1).with_log((1, 3)).start()
    ctx.deliver(ctx.fetch_snapshot_request(replica=2, snapshot_id=OffsetAndEpoch(3, 1), position=0), source=2)
    assert ctx.assert_response(FetchSnapshotResponse).partition_error is Errors.NOT_LEADER_OR_FOLLOWER
