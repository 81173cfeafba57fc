"""EndQuorumEpoch (api key 54, v0-v1): a resigning leader asking the voters
to elect a successor, the most caught-up first. v0 names them
(``PreferredSuccessors``); KIP-853 (v1) gives their directory ids
(``PreferredCandidates``), the leader's endpoints and the answer's
NodeEndpoints.

Kafka: ``RaftUtil.singletonEndQuorumEpochRequest``/``Response``,
``KafkaRaftClient.handleEndQuorumEpochRequest``/``Response``. The handlers
are :func:`handle_request` and :func:`handle_response` below (the
successors' backoff is :mod:`kraft.raft.families.election`'s); a resigned
leader's poll sends what :func:`request` builds.
"""

from __future__ import annotations

from dataclasses import dataclass

from kraft.messages.generated import end_quorum_epoch_request as wire_req, end_quorum_epoch_response as wire_resp
from kraft.raft.errors import Errors
from kraft.raft.events import METADATA_PARTITION, NO_LEADER, RaftRequest, QuorumResponse, TopicPartition
from kraft.raft.families import election
from kraft.raft.events import InboundRequest
from kraft.raft.families.common import ElectionContext
from kraft.raft.roles import Follower, Resigned
from kraft.raft.rpcs.rpc_unit import (
    METADATA_TOPIC,
    RaftRpc,
    error_answer,
    leader_endpoint_list,
    leader_endpoints,
    node_endpoint_list,
    one_partition,
    quorum_response_fields,
    replica_key,
    wire_directory,
)
from kraft.raft.voters import Endpoints, ReplicaKey
from kraft.wire.apis import ApiKey

__all__ = ["RPC", "EndQuorumEpochRequest", "EndQuorumEpochResponse"]


@dataclass(frozen=True, slots=True, kw_only=True)
class EndQuorumEpochRequest(RaftRequest):
    """A resigning leader asking the voters to elect a successor, the most
    caught-up first (``PreferredCandidates``, v1; ``PreferredSuccessors`` in v0)."""

    cluster_id: str | None
    topic_partition: TopicPartition = METADATA_PARTITION
    leader_id: int
    leader_epoch: int
    preferred_candidates: tuple[ReplicaKey, ...] = ()
    leader_endpoints: Endpoints = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class EndQuorumEpochResponse(QuorumResponse):
    error: Errors = Errors.NONE
    partition_error: Errors = Errors.NONE
    leader_id: int = NO_LEADER
    leader_epoch: int = -1
    leader_endpoints: Endpoints = ()



def request_from_wire(version: int, msg: wire_req.EndQuorumEpochRequest) -> EndQuorumEpochRequest:
    p = one_partition(msg.topics)
    if version >= 1:
        preferred = tuple(replica_key(c.candidate_id, c.candidate_directory_id) for c in p.preferred_candidates)
    else:
        preferred = tuple(ReplicaKey(i) for i in p.preferred_successors)
    return EndQuorumEpochRequest(
        cluster_id=msg.cluster_id,
        leader_id=p.leader_id,
        leader_epoch=p.leader_epoch,
        preferred_candidates=preferred,
        leader_endpoints=leader_endpoints(msg.leader_endpoints),
    )


def request_to_wire(req: EndQuorumEpochRequest, version: int, endpoints: Endpoints) -> wire_req.EndQuorumEpochRequest:
    part = wire_req.PartitionData(partition_index=0, leader_id=req.leader_id, leader_epoch=req.leader_epoch)
    if version >= 1:
        part.preferred_candidates = [
            wire_req.ReplicaInfo(candidate_id=k.id, candidate_directory_id=wire_directory(k.directory_id))
            for k in req.preferred_candidates]
    else:
        part.preferred_successors = [k.id for k in req.preferred_candidates]
    return wire_req.EndQuorumEpochRequest(
        cluster_id=req.cluster_id,
        topics=[wire_req.TopicData(topic_name=METADATA_TOPIC, partitions=[part])],
        leader_endpoints=leader_endpoint_list(wire_req.LeaderEndpoint, req.leader_endpoints, endpoints, version),
    )


def response_to_wire(resp: EndQuorumEpochResponse, version: int, listener: str) -> wire_resp.EndQuorumEpochResponse:
    return wire_resp.EndQuorumEpochResponse(
        error_code=int(resp.error),
        topics=[wire_resp.TopicData(topic_name=METADATA_TOPIC, partitions=[wire_resp.PartitionData(
            partition_index=0, error_code=int(resp.partition_error), leader_id=resp.leader_id,
            leader_epoch=resp.leader_epoch)])],
        node_endpoints=node_endpoint_list(wire_resp.NodeEndpoint, resp.leader_id, resp.leader_endpoints, listener)
        if version >= 1 else [],
    )


def response_from_wire(version: int, msg: wire_resp.EndQuorumEpochResponse, listener: str) -> EndQuorumEpochResponse:
    fields, _ = quorum_response_fields(version, msg, listener)
    return EndQuorumEpochResponse(**fields)


error_response = error_answer(EndQuorumEpochResponse)


def source(req: EndQuorumEpochRequest) -> int:
    return req.leader_id


# ----------------------------------------------------------------- the core's side


def request(ctx: ElectionContext, role: Resigned) -> EndQuorumEpochRequest:
    """A resigned leader's request to elect one of its preferred successors."""
    return EndQuorumEpochRequest(
        cluster_id=ctx.cluster_id,
        topic_partition=ctx.topic_partition,
        leader_id=role.local_id,
        leader_epoch=role.epoch,
        preferred_candidates=role.preferred_successors,
        leader_endpoints=ctx.quorum.leader_endpoints,
    )


def handle_request(ctx: ElectionContext, now_ms: int, env: InboundRequest) -> EndQuorumEpochResponse:
    """A resigning leader names its preferred successors: start the election
    sooner, the most caught-up first (Kafka's ``handleEndQuorumEpochRequest``)."""
    msg = env.message
    assert isinstance(msg, EndQuorumEpochRequest)
    role = ctx.quorum.role
    if isinstance(role, Follower) and role.leader_id == msg.leader_id:
        backoff = election.end_epoch_election_backoff(ctx, msg.preferred_candidates)
        ctx.quorum.override_fetch_timeout(now_ms, backoff, f"leader {msg.leader_id} resigned (EndQuorumEpoch)")
    return EndQuorumEpochResponse(**ctx.quorum.leader_fields)


def handle_response(ctx: ElectionContext, now_ms: int, source: int, msg: EndQuorumEpochResponse) -> bool:
    if msg.partition_error is not Errors.NONE:
        return False
    ctx.quorum.acknowledge_resignation(source)
    return True


RPC: RaftRpc[EndQuorumEpochRequest, EndQuorumEpochResponse, wire_req.EndQuorumEpochRequest, wire_resp.EndQuorumEpochResponse, ElectionContext] = RaftRpc(
    api_key=ApiKey.END_QUORUM_EPOCH,
    versions=(0, 1),
    request_type=EndQuorumEpochRequest,
    response_type=EndQuorumEpochResponse,
    wire_request_type=wire_req.EndQuorumEpochRequest,
    wire_response_type=wire_resp.EndQuorumEpochResponse,
    request_from_wire=request_from_wire,
    request_to_wire=request_to_wire,
    response_to_wire=response_to_wire,
    response_from_wire=response_from_wire,
    error_response=error_response,
    source=source,
    handle_request=handle_request,
    handle_response=handle_response,
)
