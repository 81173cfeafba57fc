"""FetchSnapshot (api key 59, v0-v1): a follower downloading the leader's
snapshot in slices. KIP-853 (v1) adds the replica's directory id and the
answer's NodeEndpoints. A request for another partition is answered
UNKNOWN_TOPIC_OR_PARTITION on the partition, as Kafka does.

Kafka: ``RaftUtil.singletonFetchSnapshotRequest``/``Response``,
``KafkaRaftClient.handleFetchSnapshotRequest``/``Response``. The handlers
are :func:`kraft.raft.handlers.fetch.handle_fetch_snapshot_request` and
:func:`~kraft.raft.handlers.fetch.handle_fetch_snapshot_response`.
"""

from __future__ import annotations

from typing import Any

from kraft.messages.generated import fetch_snapshot_request as wire_req, fetch_snapshot_response as wire_resp
from kraft.raft.errors import Errors
from kraft.raft.events import FetchSnapshotRequest, FetchSnapshotResponse
from kraft.raft.handlers import fetch
from kraft.raft.rpcs.spec import (
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
from kraft.raft.voters import Endpoints
from kraft.records.view import OffsetAndEpoch
from kraft.wire.apis import ApiKey

__all__ = ["RPC"]


def request_from_wire(version: int, msg: Any) -> FetchSnapshotRequest:
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


def request_to_wire(req: FetchSnapshotRequest, version: int, endpoints: Endpoints) -> Any:
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


def response_to_wire(resp: FetchSnapshotResponse, version: int, listener: str) -> Any:
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
        node_endpoints=node_endpoint_list(wire_resp, resp.leader_id, resp.leader_endpoints, listener)
        if version >= 1 else [],
    )


def response_from_wire(version: int, msg: Any, listener: str) -> FetchSnapshotResponse:
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


RPC: RaftRpc[FetchSnapshotRequest, FetchSnapshotResponse] = RaftRpc(
    api_key=ApiKey.FETCH_SNAPSHOT,
    versions=(0, 1),
    request_type=FetchSnapshotRequest,
    response_type=FetchSnapshotResponse,
    request_from_wire=request_from_wire,
    request_to_wire=request_to_wire,
    response_to_wire=response_to_wire,
    response_from_wire=response_from_wire,
    error_response=error_response,
    source=source,
    handle_request=fetch.handle_fetch_snapshot_request,
    handle_response=fetch.handle_fetch_snapshot_response,
)
