"""Vote (api key 52, v0-v2): a Candidate's vote request and a Prospective's
pre-vote (KIP-996, v2). KIP-853 (v1) adds the voter's and candidate's
directory ids and the answer's NodeEndpoints.

Kafka: ``RaftUtil.singletonVoteRequest``/``singletonVoteResponse``,
``KafkaRaftClient.handleVoteRequest``/``handleVoteResponse``. The handlers
are :func:`kraft.raft.handlers.election.handle_vote_request` and
:func:`~kraft.raft.handlers.election.handle_vote_response`.
"""

from __future__ import annotations

from typing import Any

from kraft.messages.generated import vote_request as wire_req, vote_response as wire_resp
from kraft.raft.errors import Errors
from kraft.raft.events import VoteRequest, VoteResponse
from kraft.raft.rpcs.spec import (
    METADATA_TOPIC,
    ZERO,
    RaftRpc,
    directory,
    errors_of,
    node_endpoint_list,
    node_endpoints,
    one_partition,
    one_response_partition,
    replica_key,
    wire_directory,
)
from kraft.raft.voters import Endpoints, ReplicaKey
from kraft.wire.apis import ApiKey

__all__ = ["RPC"]


def request_from_wire(version: int, msg: Any) -> VoteRequest:
    p = one_partition(msg.topics)
    return VoteRequest(
        cluster_id=msg.cluster_id,
        voter_key=ReplicaKey(msg.voter_id, directory(p.voter_directory_id)) if version >= 1 and msg.voter_id >= 0 else None,
        candidate_epoch=p.replica_epoch,
        candidate_key=replica_key(p.replica_id, p.replica_directory_id),
        last_offset_epoch=p.last_offset_epoch,
        last_offset=p.last_offset,
        pre_vote=p.pre_vote,
    )


def request_to_wire(req: VoteRequest, version: int, endpoints: Endpoints) -> Any:
    voter = req.voter_key
    return wire_req.VoteRequest(
        cluster_id=req.cluster_id,
        voter_id=voter.id if voter is not None and version >= 1 else -1,
        topics=[wire_req.TopicData(topic_name=METADATA_TOPIC, partitions=[wire_req.PartitionData(
            partition_index=0,
            replica_epoch=req.candidate_epoch,
            replica_id=req.candidate_key.id,
            replica_directory_id=wire_directory(req.candidate_key.directory_id) if version >= 1 else ZERO,
            voter_directory_id=wire_directory(voter.directory_id if voter else None) if version >= 1 else ZERO,
            last_offset_epoch=req.last_offset_epoch,
            last_offset=req.last_offset,
            pre_vote=req.pre_vote,
        )])],
    )


def response_to_wire(resp: VoteResponse, version: int, listener: str) -> Any:
    return wire_resp.VoteResponse(
        error_code=int(resp.error),
        topics=[wire_resp.TopicData(topic_name=METADATA_TOPIC, partitions=[wire_resp.PartitionData(
            partition_index=0, error_code=int(resp.partition_error), leader_id=resp.leader_id,
            leader_epoch=resp.leader_epoch, vote_granted=resp.vote_granted)])],
        node_endpoints=node_endpoint_list(wire_resp, resp.leader_id, resp.leader_endpoints, listener)
        if version >= 1 else [],
    )


def response_from_wire(version: int, msg: Any, listener: str) -> VoteResponse:
    top = errors_of(msg.error_code)
    p = one_response_partition(top, msg.topics)
    return VoteResponse(
        error=top,
        partition_error=errors_of(p.error_code),
        leader_id=p.leader_id,
        leader_epoch=p.leader_epoch,
        leader_endpoints=node_endpoints(msg.node_endpoints, p.leader_id, listener) if version >= 1 else (),
        vote_granted=p.vote_granted,
    )


def error_response(error: Errors, partition_level: bool) -> VoteResponse:
    return VoteResponse(partition_error=error) if partition_level else VoteResponse(error=error)


def source(req: VoteRequest) -> int:
    return req.candidate_key.id


RPC: RaftRpc[VoteRequest, VoteResponse] = RaftRpc(
    api_key=ApiKey.VOTE,
    versions=(0, 2),
    request_type=VoteRequest,
    response_type=VoteResponse,
    request_from_wire=request_from_wire,
    request_to_wire=request_to_wire,
    response_to_wire=response_to_wire,
    response_from_wire=response_from_wire,
    error_response=error_response,
    source=source,
)
