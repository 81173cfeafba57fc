"""What the replication RPCs share (Fetch, FetchSnapshot; KIP-595,
KIP-630): the follower's high watermark and the check of a snapshot id.

Each RPC's own handlers are in its module (``kraft/raft/rpcs/fetch_rpc.py``,
``kraft/raft/rpcs/fetch_snapshot_rpc.py``), as Kafka's
``KafkaRaftClient.handleFetchRequest``/``handleFetchResponse`` and
``handleFetchSnapshotRequest``/``Response``.
"""

from __future__ import annotations

from kraft.raft.errors import InvalidSnapshotIdError
from kraft.raft.families.common import ReplicationContext
from kraft.raft.log_reconciliation import FetchValidity, validate_offset_and_epoch
from kraft.raft.roles import Follower
from kraft.records.view import LogView, OffsetAndEpoch


def maybe_update_follower_high_watermark(ctx: ReplicationContext, log_pending: bool | None = None) -> None:
    """high watermark = min(leader's, log end); only once pending writes are
    visible in the log (Kafka's ``FollowerState.updateHighWatermark``).
    ``log_pending``: whether this step has log writes queued, when the caller
    knows it (otherwise the core is asked)."""
    role = ctx.quorum.role
    if not isinstance(role, Follower) or role.leader_high_watermark is None:
        return
    if log_pending is None:
        log_pending = ctx.has_pending_log()
    if log_pending:
        return
    new = min(role.leader_high_watermark, ctx.log.end_offset)
    # Read off the role: most steps of a follower move nothing, and only a
    # rise is an update (the high watermark never decreases).
    if role.high_watermark is None or new > role.high_watermark:
        ctx.quorum.update_follower_high_watermark(new)
        ctx.expose_committed(new)


def sync_follower_with_log(ctx: ReplicationContext, log_pending: bool) -> None:
    """What the shell wrote for this follower while executing the last Ready:
    an installed snapshot moves the high watermark to its end (a snapshot
    holds only committed records), appended records may raise it.
    ``log_pending``: the step has log writes queued already (the core's
    fact, passed along rather than asked back)."""
    role = ctx.quorum.role
    assert isinstance(role, Follower)
    installing = role.installing_snapshot
    if installing is not None:
        ctx.quorum.set_installing_snapshot(None)
        if ctx.log.start_offset >= installing.offset and ctx.quorum.update_follower_high_watermark(installing.offset):
            ctx.expose_committed(installing.offset)
    maybe_update_follower_high_watermark(ctx, log_pending)


def validate_snapshot_id(log: LogView, committed: int | None, snapshot_id: OffsetAndEpoch) -> None:
    """See :meth:`kraft.raft.core.RaftCore.validate_snapshot_id` (Kafka's
    ``KafkaRaftClient.createSnapshot`` checks via ``validateOffsetAndEpoch``)."""
    if snapshot_id.offset <= 0 or snapshot_id.epoch < 0:
        raise InvalidSnapshotIdError(f"invalid snapshot id {snapshot_id}")
    if committed is None or snapshot_id.offset > committed:
        raise InvalidSnapshotIdError(
            f"snapshot end offset {snapshot_id.offset} is not committed (high watermark {committed})"
        )
    if snapshot_id.offset < log.start_offset:
        raise InvalidSnapshotIdError(
            f"snapshot end offset {snapshot_id.offset} is below the log start {log.start_offset}"
        )
    check = validate_offset_and_epoch(log, snapshot_id.offset, snapshot_id.epoch)
    # Stricter than Kafka's check: the epoch must be that of the record just
    # before the offset, i.e. the epoch must also have started before it.
    previous = log.end_offset_for_epoch(snapshot_id.epoch - 1) if snapshot_id.epoch > 0 else None
    starts_before = previous is None or previous.offset < snapshot_id.offset
    if check.kind is not FetchValidity.VALID or not starts_before:
        raise InvalidSnapshotIdError(
            f"snapshot id {snapshot_id} does not match the log ({check.kind.value} {check.offset_and_epoch})"
        )
