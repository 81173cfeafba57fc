"""BeginQuorumEpoch (api key 53, v0-v1): a new leader announcing itself to
the voters. KIP-853 (v1) adds the voter's key, the leader's endpoints and
the answer's NodeEndpoints.

Kafka: ``RaftUtil.singletonBeginQuorumEpochRequest``/``Response``,
``KafkaRaftClient.handleBeginQuorumEpochRequest``/``Response``. The
handlers are :func:`handle_request` and :func:`handle_response` below; the
leader's poll sends what :func:`request` builds.
"""

from __future__ import annotations

from dataclasses import dataclass

from kraft.messages.generated import begin_quorum_epoch_request as wire_req, begin_quorum_epoch_response as wire_resp
from kraft.raft.errors import Errors
from kraft.raft.events import METADATA_PARTITION, NO_LEADER, RaftRequest, QuorumResponse, TopicPartition
from kraft.raft.events import InboundRequest
from kraft.raft.families.common import ElectionContext
from kraft.raft.roles import Leader
from kraft.raft.rpcs.rpc_unit import (
    METADATA_TOPIC,
    ZERO,
    RaftRpc,
    directory,
    error_answer,
    leader_endpoint_list,
    leader_endpoints,
    node_endpoint_list,
    one_partition,
    quorum_response_fields,
    wire_directory,
)
from kraft.raft.voters import Endpoints, ReplicaKey
from kraft.wire.apis import ApiKey

__all__ = ["RPC", "BeginQuorumEpochRequest", "BeginQuorumEpochResponse"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BeginQuorumEpochRequest(RaftRequest):
    """A new leader announcing itself to a voter."""

    cluster_id: str | None
    topic_partition: TopicPartition = METADATA_PARTITION
    voter_key: ReplicaKey | None = None
    leader_id: int
    leader_epoch: int
    leader_endpoints: Endpoints = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class BeginQuorumEpochResponse(QuorumResponse):
    error: Errors = Errors.NONE
    partition_error: Errors = Errors.NONE
    leader_id: int = NO_LEADER
    leader_epoch: int = -1
    leader_endpoints: Endpoints = ()



def request_from_wire(version: int, msg: wire_req.BeginQuorumEpochRequest) -> BeginQuorumEpochRequest:
    p = one_partition(msg.topics)
    return BeginQuorumEpochRequest(
        cluster_id=msg.cluster_id,
        voter_key=ReplicaKey(msg.voter_id, directory(p.voter_directory_id)) if version >= 1 and msg.voter_id >= 0 else None,
        leader_id=p.leader_id,
        leader_epoch=p.leader_epoch,
        leader_endpoints=leader_endpoints(msg.leader_endpoints),
    )


def request_to_wire(req: BeginQuorumEpochRequest, version: int, endpoints: Endpoints) -> wire_req.BeginQuorumEpochRequest:
    voter = req.voter_key
    return wire_req.BeginQuorumEpochRequest(
        cluster_id=req.cluster_id,
        voter_id=voter.id if voter is not None and version >= 1 else -1,
        topics=[wire_req.TopicData(topic_name=METADATA_TOPIC, partitions=[wire_req.PartitionData(
            partition_index=0,
            voter_directory_id=wire_directory(voter.directory_id if voter else None) if version >= 1 else ZERO,
            leader_id=req.leader_id,
            leader_epoch=req.leader_epoch,
        )])],
        leader_endpoints=leader_endpoint_list(wire_req.LeaderEndpoint, req.leader_endpoints, endpoints, version),
    )


def response_to_wire(resp: BeginQuorumEpochResponse, version: int, listener: str) -> wire_resp.BeginQuorumEpochResponse:
    return wire_resp.BeginQuorumEpochResponse(
        error_code=int(resp.error),
        topics=[wire_resp.TopicData(topic_name=METADATA_TOPIC, partitions=[wire_resp.PartitionData(
            partition_index=0, error_code=int(resp.partition_error), leader_id=resp.leader_id,
            leader_epoch=resp.leader_epoch)])],
        node_endpoints=node_endpoint_list(wire_resp.NodeEndpoint, resp.leader_id, resp.leader_endpoints, listener)
        if version >= 1 else [],
    )


def response_from_wire(version: int, msg: wire_resp.BeginQuorumEpochResponse, listener: str) -> BeginQuorumEpochResponse:
    fields, _ = quorum_response_fields(version, msg, listener)
    return BeginQuorumEpochResponse(**fields)


error_response = error_answer(BeginQuorumEpochResponse)


def source(req: BeginQuorumEpochRequest) -> int:
    return req.leader_id


# ----------------------------------------------------------------- the core's side


def request(ctx: ElectionContext, leader: Leader, voter: ReplicaKey) -> BeginQuorumEpochRequest:
    """The leader's announcement to ``voter``."""
    return BeginQuorumEpochRequest(
        cluster_id=ctx.cluster_id,
        topic_partition=ctx.topic_partition,
        voter_key=voter,
        leader_id=leader.leader_id,
        leader_epoch=leader.epoch,
        leader_endpoints=ctx.quorum.leader_endpoints,
    )


def handle_request(ctx: ElectionContext, now_ms: int, env: InboundRequest) -> BeginQuorumEpochResponse:
    # The gate already made us follow the announced leader.
    return BeginQuorumEpochResponse(**ctx.quorum.leader_fields)


def handle_response(ctx: ElectionContext, now_ms: int, source: int, msg: BeginQuorumEpochResponse) -> bool:
    if msg.partition_error is not Errors.NONE:
        return False
    role = ctx.quorum.role
    if isinstance(role, Leader):
        role.progress.add_acknowledgement(source)
    return True


RPC: RaftRpc[BeginQuorumEpochRequest, BeginQuorumEpochResponse, wire_req.BeginQuorumEpochRequest, wire_resp.BeginQuorumEpochResponse, ElectionContext] = RaftRpc(
    api_key=ApiKey.BEGIN_QUORUM_EPOCH,
    versions=(0, 1),
    request_type=BeginQuorumEpochRequest,
    response_type=BeginQuorumEpochResponse,
    wire_request_type=wire_req.BeginQuorumEpochRequest,
    wire_response_type=wire_resp.BeginQuorumEpochResponse,
    request_from_wire=request_from_wire,
    request_to_wire=request_to_wire,
    response_to_wire=response_to_wire,
    response_from_wire=response_from_wire,
    error_response=error_response,
    source=source,
    handle_request=handle_request,
    handle_response=handle_response,
)
