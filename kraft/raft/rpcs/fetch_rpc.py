"""Fetch (api key 1, v4-v18 on a controller listener): a follower's or
observer's pull, and the leader's answer with records, a diverging epoch
or a snapshot id (KIP-595). v13 addresses the topic by id, v15 moves the
replica id into ``ReplicaState``, v16 adds NodeEndpoints, v17 the
replica's directory id (KIP-853), v18 the follower's high watermark.

Kafka: ``RaftUtil.singletonFetchRequest``/``singletonFetchResponse``,
``KafkaRaftClient.handleFetchRequest``/``handleFetchResponse``. The
handlers are :func:`handle_request` (with the fetch purgatory: a Fetch
with nothing new is parked on the leader's
:class:`~kraft.raft.leader_state.LeaderState` until new data, a higher high
watermark, or its ``max_wait_ms``) and :func:`handle_response` (append,
truncate on a diverging epoch, start a snapshot download); the poll sends
what :func:`request` builds.
"""

from __future__ import annotations

from dataclasses import dataclass

from kraft.messages.generated import fetch_request as wire_req, fetch_response as wire_resp
from kraft.raft.errors import Errors
from kraft.raft.events import METADATA_PARTITION, InboundRequest, NO_LEADER, RaftRequest, QuorumResponse, TopicPartition
from kraft.raft.families import membership, replication
from kraft.raft.families.common import ReplicationContext, validate_leader_only
from kraft.raft.leader_state import ParkedFetch
from kraft.raft.log_reconciliation import BOOTSTRAP_SNAPSHOT_ID, FetchValidity, truncation_offset, validate_offset_and_epoch
from kraft.raft.logops import AppendAsFollower, Flush, InstallSnapshot, TruncateTo
from kraft.raft.roles import Follower, Leader, SnapshotDownload
from kraft.raft.rpcs.rpc_unit import (
    METADATA_TOPIC,
    METADATA_TOPIC_ID,
    RaftRpc,
    Reject,
    error_answer,
    errors_of,
    node_endpoints,
    replica_key,
    wire_directory,
)
from kraft.raft.voters import Endpoints, ReplicaKey
from kraft.records.view import OffsetAndEpoch
from kraft.wire.apis import ApiKey

__all__ = ["RPC", "FetchRequest", "FetchResponse"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchRequest(RaftRequest):
    """A follower's or observer's pull: its log end offset (``fetch_offset``)
    and the epoch of its last record (``last_fetched_epoch``), which the leader
    checks against its leader-epoch cache (KIP-595 log reconciliation)."""

    cluster_id: str | None
    topic_partition: TopicPartition = METADATA_PARTITION
    #: ``ReplicaState.ReplicaId`` plus ``ReplicaDirectoryId``; id -1 for a
    #: replica without an id (never counted by the leader).
    replica_key: ReplicaKey
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    max_wait_ms: int
    max_bytes: int
    #: The fetcher's high watermark (-1 unknown): the leader answers a parked
    #: fetch early once its own high watermark is larger.
    high_watermark: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchResponse(QuorumResponse):
    error: Errors = Errors.NONE
    partition_error: Errors = Errors.NONE
    high_watermark: int = -1
    log_start_offset: int = -1
    #: The records as the codec decoded them: a view of the received frame, not a copy.
    records: bytes | memoryview = b""
    #: Set when the fetch offset/epoch diverged from the leader's log: the
    #: fetcher truncates to this (``DivergingEpoch``).
    diverging_epoch: OffsetAndEpoch | None = None
    #: Set when the fetcher must download this snapshot first (``SnapshotId``).
    snapshot_id: OffsetAndEpoch | None = None
    leader_id: int = NO_LEADER
    leader_epoch: int = -1
    leader_endpoints: Endpoints = ()


#: Fetch v18's "no high watermark" (Long.MAX_VALUE).
_NO_HIGH_WATERMARK = (1 << 63) - 1


def request_from_wire(version: int, msg: wire_req.FetchRequest) -> FetchRequest:
    if len(msg.topics) != 1 or len(msg.topics[0].partitions) != 1:
        raise Reject(Errors.INVALID_REQUEST)
    topic = msg.topics[0]
    p = topic.partitions[0]
    known = topic.topic_id == METADATA_TOPIC_ID if version >= 13 else topic.topic == METADATA_TOPIC
    if not known or p.partition != 0:
        raise Reject(Errors.INVALID_REQUEST)
    replica_id = msg.replica_state.replica_id if version >= 15 else msg.replica_id
    hwm = p.high_watermark if version >= 18 and p.high_watermark != _NO_HIGH_WATERMARK else -1
    return FetchRequest(
        cluster_id=msg.cluster_id,
        replica_key=replica_key(replica_id, p.replica_directory_id),
        current_leader_epoch=p.current_leader_epoch,
        fetch_offset=p.fetch_offset,
        last_fetched_epoch=p.last_fetched_epoch,
        max_wait_ms=msg.max_wait_ms,
        max_bytes=msg.max_bytes,
        high_watermark=hwm,
    )


def request_to_wire(req: FetchRequest, version: int, endpoints: Endpoints) -> wire_req.FetchRequest:
    part = wire_req.FetchPartition(
        partition=0,
        current_leader_epoch=req.current_leader_epoch,
        fetch_offset=req.fetch_offset,
        last_fetched_epoch=req.last_fetched_epoch,
        log_start_offset=-1,
        partition_max_bytes=0,
    )
    if version >= 17:
        part.replica_directory_id = wire_directory(req.replica_key.directory_id)
    if version >= 18 and req.high_watermark >= 0:
        part.high_watermark = req.high_watermark
    topic = wire_req.FetchTopic(partitions=[part])
    if version >= 13:
        topic.topic_id = METADATA_TOPIC_ID
    else:
        topic.topic = METADATA_TOPIC
    msg = wire_req.FetchRequest(
        cluster_id=req.cluster_id if version >= 12 else None,
        max_wait_ms=req.max_wait_ms,
        min_bytes=0,
        max_bytes=req.max_bytes,
        topics=[topic],
    )
    if version >= 15:
        msg.replica_state = wire_req.ReplicaState(replica_id=req.replica_key.id, replica_epoch=-1)
    else:
        msg.replica_id = req.replica_key.id
    return msg


def response_to_wire(resp: FetchResponse, version: int, listener: str) -> wire_resp.FetchResponse:
    part = wire_resp.PartitionData(
        partition_index=0,
        error_code=int(resp.partition_error),
        high_watermark=resp.high_watermark,
        last_stable_offset=resp.high_watermark,
        log_start_offset=resp.log_start_offset,
        records=resp.records,
        current_leader=wire_resp.LeaderIdAndEpoch(leader_id=resp.leader_id, leader_epoch=resp.leader_epoch),
    )
    if resp.diverging_epoch is not None:
        part.diverging_epoch = wire_resp.EpochEndOffset(
            epoch=resp.diverging_epoch.epoch, end_offset=resp.diverging_epoch.offset)
    if resp.snapshot_id is not None:
        part.snapshot_id = wire_resp.SnapshotId(end_offset=resp.snapshot_id.offset, epoch=resp.snapshot_id.epoch)
    topic = wire_resp.FetchableTopicResponse(partitions=[part])
    if version >= 13:
        topic.topic_id = METADATA_TOPIC_ID
    else:
        topic.topic = METADATA_TOPIC
    msg = wire_resp.FetchResponse(error_code=int(resp.error), responses=[topic])
    if version >= 16 and resp.leader_id >= 0:
        msg.node_endpoints = [wire_resp.NodeEndpoint(node_id=resp.leader_id, host=e.host, port=e.port)
                              for e in resp.leader_endpoints if e.listener == listener][:1]
    return msg


def response_from_wire(version: int, msg: wire_resp.FetchResponse, listener: str) -> FetchResponse:
    top = errors_of(msg.error_code)
    if len(msg.responses) != 1 or len(msg.responses[0].partitions) != 1:
        raise Reject(Errors.INVALID_REQUEST if top == Errors.NONE else top)
    p = msg.responses[0].partitions[0]
    leader_id, leader_epoch = p.current_leader.leader_id, p.current_leader.leader_epoch
    div = p.diverging_epoch
    snap = p.snapshot_id
    return FetchResponse(
        error=top,
        partition_error=errors_of(p.error_code),
        high_watermark=p.high_watermark,
        log_start_offset=p.log_start_offset,
        records=b"" if p.records is None else p.records,
        diverging_epoch=OffsetAndEpoch(div.end_offset, div.epoch) if div.epoch >= 0 and div.end_offset >= 0 else None,
        snapshot_id=OffsetAndEpoch(snap.end_offset, snap.epoch) if snap.end_offset >= 0 and snap.epoch >= 0 else None,
        leader_id=leader_id,
        leader_epoch=leader_epoch,
        leader_endpoints=node_endpoints(msg.node_endpoints, leader_id, listener) if version >= 16 else (),
    )


error_response = error_answer(FetchResponse)


def source(req: FetchRequest) -> int:
    return req.replica_key.id


def wait_ms(req: FetchRequest, request_timeout_ms: int) -> int:
    # A Fetch may be parked for its max_wait_ms before the answer comes.
    return request_timeout_ms + req.max_wait_ms


# ----------------------------------------------------------------- the leader's side


def fetch_error(ctx: ReplicationContext, error: Errors) -> FetchResponse:
    """A refused Fetch: the error with the log start and the leader we know."""
    return FetchResponse(partition_error=error, log_start_offset=ctx.log.start_offset, **ctx.quorum.leader_fields)


def handle_request(ctx: ReplicationContext, now_ms: int, env: InboundRequest) -> FetchResponse | None:
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
    leader.state.parked.append(ParkedFetch(now_ms + msg.max_wait_ms, env, msg.fetch_offset))
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
            fetch = p.request.message
            assert isinstance(fetch, FetchRequest)
            response = try_complete_fetch(ctx, now_ms, fetch)
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


# ----------------------------------------------------------------- the follower's side


def request(ctx: ReplicationContext) -> FetchRequest:
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


def handle_response(ctx: ReplicationContext, now_ms: int, source: int, msg: FetchResponse) -> bool:
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
        replication.maybe_update_follower_high_watermark(ctx)
    quorum.reset_fetch_timeout(now_ms)
    return True



RPC: RaftRpc[FetchRequest, FetchResponse, wire_req.FetchRequest, wire_resp.FetchResponse, ReplicationContext] = RaftRpc(
    api_key=ApiKey.FETCH,
    versions=(4, 18),
    request_type=FetchRequest,
    response_type=FetchResponse,
    wire_request_type=wire_req.FetchRequest,
    wire_response_type=wire_resp.FetchResponse,
    request_from_wire=request_from_wire,
    request_to_wire=request_to_wire,
    response_to_wire=response_to_wire,
    response_from_wire=response_from_wire,
    error_response=error_response,
    leader_error=fetch_error,
    source=source,
    answer_wait_ms=wait_ms,
    send_timeout_ms=wait_ms,
    handle_request=handle_request,
    handle_response=handle_response,
)
