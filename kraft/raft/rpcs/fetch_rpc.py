"""Fetch (api key 1, v4-v18 on a controller listener): a follower's or
observer's pull, and the leader's answer with records, a diverging epoch
or a snapshot id (KIP-595). v13 addresses the topic by id, v15 moves the
replica id into ``ReplicaState``, v16 adds NodeEndpoints, v17 the
replica's directory id (KIP-853), v18 the follower's high watermark.

Kafka: ``RaftUtil.singletonFetchRequest``/``singletonFetchResponse``,
``KafkaRaftClient.handleFetchRequest``/``handleFetchResponse``. The
handlers are :func:`kraft.raft.handlers.fetch.handle_fetch_request` and
:func:`~kraft.raft.handlers.fetch.handle_fetch_response`.
"""

from __future__ import annotations

from typing import Any

from kraft.messages.generated import fetch_request as wire_req, fetch_response as wire_resp
from kraft.raft.errors import Errors
from kraft.raft.events import FetchRequest, FetchResponse
from kraft.raft.handlers import fetch
from kraft.raft.rpcs.spec import (
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
from kraft.raft.voters import Endpoints
from kraft.records.view import OffsetAndEpoch
from kraft.wire.apis import ApiKey

__all__ = ["RPC"]

#: Fetch v18's "no high watermark" (Long.MAX_VALUE).
_NO_HIGH_WATERMARK = (1 << 63) - 1


def request_from_wire(version: int, msg: Any) -> FetchRequest:
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


def request_to_wire(req: FetchRequest, version: int, endpoints: Endpoints) -> Any:
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


def response_to_wire(resp: FetchResponse, version: int, listener: str) -> Any:
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


def response_from_wire(version: int, msg: Any, listener: str) -> FetchResponse:
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


RPC: RaftRpc[FetchRequest, FetchResponse] = RaftRpc(
    api_key=ApiKey.FETCH,
    versions=(4, 18),
    request_type=FetchRequest,
    response_type=FetchResponse,
    request_from_wire=request_from_wire,
    request_to_wire=request_to_wire,
    response_to_wire=response_to_wire,
    response_from_wire=response_from_wire,
    error_response=error_response,
    source=source,
    answer_wait_ms=wait_ms,
    send_timeout_ms=wait_ms,
    handle_request=fetch.handle_fetch_request,
    handle_response=fetch.handle_fetch_response,
)
