"""FetchSnapshot (api key 59, v0-v1): a follower downloading the leader's
snapshot in slices. KIP-853 (v1) adds the replica's directory id and the
answer's NodeEndpoints. A request for another partition is answered
UNKNOWN_TOPIC_OR_PARTITION on the partition, as Kafka does.

Kafka: ``RaftUtil.singletonFetchSnapshotRequest``/``Response``,
``KafkaRaftClient.handleFetchSnapshotRequest``/``Response``. The handlers
are :func:`handle_request` and :func:`handle_response` below; a
downloading follower's poll sends what :func:`request` builds.
"""

from __future__ import annotations

from dataclasses import dataclass

from kraft.messages.generated import fetch_snapshot_request as wire_req, fetch_snapshot_response as wire_resp
from kraft.raft.errors import Errors
from kraft.raft.events import METADATA_PARTITION, InboundRequest, NO_LEADER, RaftRequest, QuorumResponse, TopicPartition
from kraft.raft.families.common import ReplicationContext
from kraft.raft.log_reconciliation import BOOTSTRAP_SNAPSHOT_ID
from kraft.raft.logops import InstallSnapshot, SnapshotChunk
from kraft.raft.roles import Follower, Leader, SnapshotDownload
from kraft.raft.rpcs.rpc_unit import (
    METADATA_TOPIC,
    RaftRpc,
    Reject,
    error_answer,
    errors_of,
    node_endpoint_list,
    node_endpoints,
    one_response_partition,
    replica_key,
    wire_directory,
)
from kraft.raft.voters import Endpoints, ReplicaKey
from kraft.records.view import OffsetAndEpoch
from kraft.wire.apis import ApiKey

__all__ = ["RPC", "FetchSnapshotRequest", "FetchSnapshotResponse"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchSnapshotRequest(RaftRequest):
    cluster_id: str | None
    topic_partition: TopicPartition = METADATA_PARTITION
    replica_key: ReplicaKey
    current_leader_epoch: int
    snapshot_id: OffsetAndEpoch
    #: Byte position in the snapshot to read from.
    position: int
    max_bytes: int


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchSnapshotResponse(QuorumResponse):
    error: Errors = Errors.NONE
    partition_error: Errors = Errors.NONE
    snapshot_id: OffsetAndEpoch = OffsetAndEpoch(-1, -1)
    #: Total snapshot size in bytes.
    size: int = -1
    position: int = -1
    #: A slice of the snapshot file; not aligned on record batches (a view of
    #: the received frame, as the codec decoded it).
    unaligned_records: bytes | memoryview = b""
    leader_id: int = NO_LEADER
    leader_epoch: int = -1
    leader_endpoints: Endpoints = ()



def request_from_wire(version: int, msg: wire_req.FetchSnapshotRequest) -> FetchSnapshotRequest:
    if len(msg.topics) != 1 or len(msg.topics[0].partitions) != 1:
        raise Reject(Errors.INVALID_REQUEST)
    topic = msg.topics[0]
    p = topic.partitions[0]
    if topic.name != METADATA_TOPIC or p.partition != 0:
        raise Reject(Errors.UNKNOWN_TOPIC_OR_PARTITION, partition_level=True)
    return FetchSnapshotRequest(
        cluster_id=msg.cluster_id,
        replica_key=replica_key(msg.replica_id, p.replica_directory_id),
        current_leader_epoch=p.current_leader_epoch,
        snapshot_id=OffsetAndEpoch(p.snapshot_id.end_offset, p.snapshot_id.epoch),
        position=p.position,
        max_bytes=msg.max_bytes,
    )


def request_to_wire(req: FetchSnapshotRequest, version: int, endpoints: Endpoints) -> wire_req.FetchSnapshotRequest:
    part = wire_req.PartitionSnapshot(
        partition=0,
        current_leader_epoch=req.current_leader_epoch,
        snapshot_id=wire_req.SnapshotId(end_offset=req.snapshot_id.offset, epoch=req.snapshot_id.epoch),
        position=req.position,
    )
    if version >= 1:
        part.replica_directory_id = wire_directory(req.replica_key.directory_id)
    return wire_req.FetchSnapshotRequest(
        cluster_id=req.cluster_id,
        replica_id=req.replica_key.id,
        max_bytes=req.max_bytes,
        topics=[wire_req.TopicSnapshot(name=METADATA_TOPIC, partitions=[part])],
    )


def response_to_wire(resp: FetchSnapshotResponse, version: int, listener: str) -> wire_resp.FetchSnapshotResponse:
    part = wire_resp.PartitionSnapshot(
        index=0,
        error_code=int(resp.partition_error),
        snapshot_id=wire_resp.SnapshotId(end_offset=resp.snapshot_id.offset, epoch=resp.snapshot_id.epoch),
        current_leader=wire_resp.LeaderIdAndEpoch(leader_id=resp.leader_id, leader_epoch=resp.leader_epoch),
        size=resp.size,
        position=resp.position,
        unaligned_records=resp.unaligned_records,
    )
    return wire_resp.FetchSnapshotResponse(
        error_code=int(resp.error),
        topics=[wire_resp.TopicSnapshot(name=METADATA_TOPIC, partitions=[part])],
        node_endpoints=node_endpoint_list(wire_resp.NodeEndpoint, resp.leader_id, resp.leader_endpoints, listener)
        if version >= 1 else [],
    )


def response_from_wire(version: int, msg: wire_resp.FetchSnapshotResponse, listener: str) -> FetchSnapshotResponse:
    top = errors_of(msg.error_code)
    p = one_response_partition(top, msg.topics)
    leader_id, leader_epoch = p.current_leader.leader_id, p.current_leader.leader_epoch
    return FetchSnapshotResponse(
        error=top,
        partition_error=errors_of(p.error_code),
        snapshot_id=OffsetAndEpoch(p.snapshot_id.end_offset, p.snapshot_id.epoch),
        size=p.size,
        position=p.position,
        unaligned_records=b"" if p.unaligned_records is None else p.unaligned_records,
        leader_id=leader_id,
        leader_epoch=leader_epoch,
        leader_endpoints=node_endpoints(msg.node_endpoints, leader_id, listener) if version >= 1 else (),
    )


error_response = error_answer(FetchSnapshotResponse)


def source(req: FetchSnapshotRequest) -> int:
    return req.replica_key.id


# ----------------------------------------------------------------- the core's side


def handle_request(ctx: ReplicationContext, now_ms: int, env: InboundRequest) -> FetchSnapshotResponse:
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


def request(ctx: ReplicationContext, role: Follower, download: SnapshotDownload) -> FetchSnapshotRequest:
    return FetchSnapshotRequest(
        cluster_id=ctx.cluster_id,
        topic_partition=ctx.topic_partition,
        replica_key=ctx.local_key or ReplicaKey(-1),
        current_leader_epoch=role.epoch,
        snapshot_id=download.snapshot_id,
        position=download.size,
        max_bytes=ctx.config.fetch_snapshot_max_bytes,
    )


def handle_response(
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



RPC: RaftRpc[FetchSnapshotRequest, FetchSnapshotResponse, wire_req.FetchSnapshotRequest, wire_resp.FetchSnapshotResponse, ReplicationContext] = RaftRpc(
    api_key=ApiKey.FETCH_SNAPSHOT,
    versions=(0, 1),
    request_type=FetchSnapshotRequest,
    response_type=FetchSnapshotResponse,
    wire_request_type=wire_req.FetchSnapshotRequest,
    wire_response_type=wire_resp.FetchSnapshotResponse,
    request_from_wire=request_from_wire,
    request_to_wire=request_to_wire,
    response_to_wire=response_to_wire,
    response_from_wire=response_from_wire,
    error_response=error_response,
    source=source,
    handle_request=handle_request,
    handle_response=handle_response,
)
