"""Fetch and FetchSnapshot (KIP-595, KIP-630): the leader serves, the
follower applies.

Kafka's ``KafkaRaftClient.handleFetchRequest``/``tryCompleteFetchRequest``
(with the fetch purgatory: a Fetch with nothing new is parked on the
leader's :class:`~kraft.raft.leader_state.LeaderState` until new data, a
higher high watermark, or its ``max_wait_ms``),
``handleFetchSnapshotRequest``, and the follower's ``handleFetchResponse``
(append, truncate on a diverging epoch, start a snapshot download) and
``handleFetchSnapshotResponse``.
"""

from __future__ import annotations

from kraft.raft.errors import Errors, InvalidSnapshotIdError
from kraft.raft.events import (
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    InboundRequest,
)
from kraft.raft.handlers import membership
from kraft.raft.handlers.common import ReplicationContext, validate_leader_only
from kraft.raft.leader_state import ParkedFetch
from kraft.raft.logops import AppendAsFollower, Flush, InstallSnapshot, SnapshotChunk, TruncateTo
from kraft.raft.log_reconciliation import BOOTSTRAP_SNAPSHOT_ID, FetchValidity, truncation_offset, validate_offset_and_epoch
from kraft.raft.roles import Follower, Leader, SnapshotDownload
from kraft.raft.voters import ReplicaKey
from kraft.records.view import LogView, OffsetAndEpoch




# --- the leader ----------------------------------------------------------------


def fetch_error(ctx: ReplicationContext, error: Errors) -> FetchResponse:
    return FetchResponse(partition_error=error, log_start_offset=ctx.log.start_offset, **ctx.quorum.leader_fields)


def handle_fetch_request(ctx: ReplicationContext, now_ms: int, env: InboundRequest) -> FetchResponse | None:
    """Answer now, or park the fetch (long poll) until there is news. The
    core's gate checked the fields and the epoch (Kafka's
    ``handleFetchRequest`` does both first); a parked fetch is checked again
    when it completes (:func:`try_complete_fetch`)."""
    msg = env.message
    assert isinstance(msg, FetchRequest)
    response = _read_for_fetch(ctx, now_ms, msg)
    if (
        response.partition_error is not Errors.NONE
        or response.records
        or msg.max_wait_ms == 0
        or response.diverging_epoch is not None
        or response.snapshot_id is not None
        or msg.high_watermark < response.high_watermark
    ):
        return response
    leader = ctx.quorum.role
    assert isinstance(leader, Leader)
    leader.state.parked.append(ParkedFetch(now_ms + msg.max_wait_ms, env, msg))
    return None


def try_complete_fetch(ctx: ReplicationContext, now_ms: int, msg: FetchRequest) -> FetchResponse:
    """Check the fetch's epoch again (a parked fetch may outlive it), then
    validate its position against the leader's log and read."""
    error = validate_leader_only(ctx.quorum, msg.current_leader_epoch, ctx.shutting_down)
    if error is not None:
        return fetch_error(ctx, error)
    return _read_for_fetch(ctx, now_ms, msg)


def _read_for_fetch(ctx: ReplicationContext, now_ms: int, msg: FetchRequest) -> FetchResponse:
    """Validate the fetch position against the leader's log, read, and
    count the fetch on the leader's replica progress."""
    leader = ctx.quorum.role
    assert isinstance(leader, Leader)
    log = ctx.log
    latest = log.latest_snapshot_id() if msg.fetch_offset == 0 else None
    if latest is not None and latest != BOOTSTRAP_SNAPSHOT_ID:
        # An empty follower is better served by the snapshot than the log.
        kind, position = FetchValidity.SNAPSHOT, latest
    elif (
        msg.fetch_offset == log.end_offset
        and msg.fetch_offset > log.start_offset
        and msg.last_fetched_epoch == log.last_epoch
    ):
        # The usual Fetch: a follower caught up with our last record, the
        # same (offset, epoch) -- a prefix of this log by definition, as
        # validate_offset_and_epoch would find.
        kind, position = FetchValidity.VALID, OffsetAndEpoch(msg.fetch_offset, msg.last_fetched_epoch)
    else:
        check = validate_offset_and_epoch(log, msg.fetch_offset, msg.last_fetched_epoch)
        kind, position = check.kind, check.offset_and_epoch
    records = b""
    if kind is FetchValidity.VALID:
        records = log.read(msg.fetch_offset, msg.max_bytes)
        if leader.progress.update_replica(msg.replica_key, now_ms, msg.fetch_offset):
            leader_high_watermark_advanced(ctx, now_ms, leader)
    hwm = leader.progress.high_watermark
    return FetchResponse(
        high_watermark=-1 if hwm is None else hwm,
        log_start_offset=log.start_offset,
        records=records,
        diverging_epoch=position if kind is FetchValidity.DIVERGING else None,
        snapshot_id=position if kind is FetchValidity.SNAPSHOT else None,
        **ctx.quorum.leader_fields,
    )


def leader_high_watermark_advanced(ctx: ReplicationContext, now_ms: int, leader: Leader) -> None:
    """The leader's high watermark advanced (Kafka's
    ``LeaderState.updateReplicaState`` returning true, then
    ``onUpdateLeaderHighWatermark``): expose it, complete the voter change
    it commits, and answer the parked fetches."""
    state = leader.state
    hwm = state.high_watermark
    if hwm is not None:
        ctx.expose_committed(hwm)
    membership.maybe_complete_voter_change(ctx, state)
    if state.parked:
        complete_parked(ctx, now_ms, state.take_all_parked())


def complete_parked(
    ctx: ReplicationContext,
    now_ms: int,
    parked: list[ParkedFetch],
    *,
    error: Errors | None = None,
    expired: bool = False,
) -> None:
    """Answer fetches taken off the leader's purgatory: with ``error``, with
    the empty answer if they ``expired``, or by reading again."""
    for p in parked:
        if error is not None:
            response = fetch_error(ctx, error)
        elif expired:
            # Nothing new arrived while it waited: the empty answer.
            hwm = ctx.quorum.high_watermark
            response = FetchResponse(
                high_watermark=-1 if hwm is None else hwm,
                log_start_offset=ctx.log.start_offset,
                **ctx.quorum.leader_fields,
            )
        else:
            response = try_complete_fetch(ctx, now_ms, p.fetch)
        ctx.respond(p.request, response)


def complete_parked_below(ctx: ReplicationContext, now_ms: int, leader: Leader, end_offset: int) -> None:
    """The leader's log grew to ``end_offset``: answer the fetches waiting below it."""
    done = leader.state.take_parked_below(end_offset)
    if done:
        complete_parked(ctx, now_ms, done)


def complete_expired(ctx: ReplicationContext, now_ms: int, leader: Leader) -> None:
    """Answer the parked fetches whose ``max_wait_ms`` is over with the empty answer."""
    done = leader.state.take_expired(now_ms)
    if done:
        complete_parked(ctx, now_ms, done, expired=True)


def handle_fetch_snapshot_request(ctx: ReplicationContext, now_ms: int, env: InboundRequest) -> FetchSnapshotResponse:
    msg = env.message
    assert isinstance(msg, FetchSnapshotRequest)
    leader = ctx.quorum.role
    assert isinstance(leader, Leader)
    log = ctx.log
    common = ctx.quorum.leader_fields
    sid = msg.snapshot_id
    found = None
    if sid.offset >= 0 and sid.epoch >= 0 and sid != BOOTSTRAP_SNAPSHOT_ID:
        # The bootstrap checkpoint is never replicated.
        found = log.read_snapshot(sid, max(msg.position, 0), 0)
    if found is None:
        return FetchSnapshotResponse(partition_error=Errors.SNAPSHOT_NOT_FOUND, **common)
    if msg.position < 0 or msg.position >= found.size:
        return FetchSnapshotResponse(partition_error=Errors.POSITION_OUT_OF_RANGE, **common)
    chunk = log.read_snapshot(sid, msg.position, max(1, min(msg.max_bytes, found.size)))
    if chunk is None:
        return FetchSnapshotResponse(partition_error=Errors.SNAPSHOT_NOT_FOUND, **common)
    leader.progress.update_check_quorum(msg.replica_key, now_ms)
    return FetchSnapshotResponse(
        snapshot_id=sid,
        size=chunk.size,
        position=msg.position,
        unaligned_records=chunk.data,
        **common,
    )


# --- the follower --------------------------------------------------------------


def build_fetch_request(ctx: ReplicationContext) -> FetchRequest:
    hwm = ctx.quorum.high_watermark
    return FetchRequest(
        cluster_id=ctx.cluster_id,
        topic_partition=ctx.topic_partition,
        replica_key=ctx.local_key or ReplicaKey(-1),
        current_leader_epoch=ctx.quorum.epoch,
        fetch_offset=ctx.log.end_offset,
        last_fetched_epoch=ctx.log.last_epoch,
        max_wait_ms=ctx.config.fetch_max_wait_ms,
        max_bytes=ctx.config.fetch_max_bytes,
        high_watermark=-1 if hwm is None else hwm,
    )


def build_fetch_snapshot_request(ctx: ReplicationContext, role: Follower, download: SnapshotDownload) -> FetchSnapshotRequest:
    return FetchSnapshotRequest(
        cluster_id=ctx.cluster_id,
        topic_partition=ctx.topic_partition,
        replica_key=ctx.local_key or ReplicaKey(-1),
        current_leader_epoch=role.epoch,
        snapshot_id=download.snapshot_id,
        position=download.size,
        max_bytes=ctx.config.fetch_snapshot_max_bytes,
    )


def handle_fetch_response(ctx: ReplicationContext, now_ms: int, source: int, msg: FetchResponse) -> bool:
    quorum = ctx.quorum
    if not isinstance(quorum.role, Follower):
        return True
    if msg.partition_error is not Errors.NONE:
        return False
    log = ctx.log
    if msg.diverging_epoch is not None:
        if msg.diverging_epoch.offset < 0 or msg.diverging_epoch.epoch < 0:
            ctx.violation(source, f"invalid diverging epoch {msg.diverging_epoch}")
            return False
        # Log reconciliation: drop our records past the common point.
        target = truncation_offset(log, msg.diverging_epoch)
        committed = ctx.committed_offset
        if committed is not None and target < committed:
            # Committed records are never removed: refuse, whoever asks.
            ctx.violation(
                source,
                f"leader asked to truncate to {target} ({msg.diverging_epoch}), "
                f"below the high watermark {committed}",
            )
            return False
        if target < log.end_offset:
            ctx.emit_log(TruncateTo(target))
    elif msg.snapshot_id is not None:
        sid = msg.snapshot_id
        if sid.offset < 0 or sid.epoch < 0:
            ctx.violation(source, f"invalid snapshot id {sid}")
            return False
        if log.latest_snapshot_id() == sid:
            # Already stored (downloaded before a crash): just adopt it.
            ctx.emit_log(InstallSnapshot(sid))
            quorum.set_installing_snapshot(sid)
        else:
            quorum.set_fetching_snapshot(SnapshotDownload(sid))
    else:
        if msg.records:
            ctx.emit_log(AppendAsFollower(msg.records))
            if quorum.is_voter or ctx.followers_always_flush:
                # Voters fsync before their next Fetch tells the leader they
                # have these offsets. Observers are not counted -- unless
                # added meanwhile (KIP-853), so controllers flush anyway.
                ctx.emit_log(Flush())
        if msg.high_watermark >= 0:
            quorum.set_leader_high_watermark(msg.high_watermark)
        maybe_update_follower_high_watermark(ctx)
    quorum.reset_fetch_timeout(now_ms)
    return True


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


def handle_fetch_snapshot_response(
    ctx: ReplicationContext, now_ms: int, source: int, msg: FetchSnapshotResponse
) -> bool:
    quorum = ctx.quorum
    role = quorum.role
    if not isinstance(role, Follower):
        return True
    sid = msg.snapshot_id
    if msg.partition_error is Errors.SNAPSHOT_NOT_FOUND or sid.offset < 0 or sid.epoch < 0:
        # The leader dropped the snapshot before we got it: start over with a Fetch.
        quorum.set_fetching_snapshot(None)
        quorum.reset_fetch_timeout(now_ms)
        return True
    if msg.partition_error is not Errors.NONE:
        return False
    download = role.fetching_snapshot
    if (
        download is None
        or download.snapshot_id != sid
        or msg.position != download.size
        or msg.size < 0
        or download.size + len(msg.unaligned_records) > msg.size
        or (not msg.unaligned_records and download.size < msg.size)
    ):
        ctx.violation(source, f"unexpected FetchSnapshot answer {sid}@{msg.position}/{msg.size} for {download}")
        quorum.set_fetching_snapshot(None)
        return False
    ctx.emit_log(SnapshotChunk(sid, download.size, msg.unaligned_records))
    size = download.size + len(msg.unaligned_records)
    if size == msg.size:
        ctx.emit_log(InstallSnapshot(sid))
        quorum.set_fetching_snapshot(None)
        quorum.set_installing_snapshot(sid)
    else:
        quorum.set_fetching_snapshot(SnapshotDownload(sid, size))
    quorum.reset_fetch_timeout(now_ms)
    return True


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
