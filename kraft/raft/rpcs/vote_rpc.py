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
from kraft.raft.events import VoteRequest, VoteResponse
from kraft.raft.handlers import election
from kraft.raft.rpcs.spec import (
    METADATA_TOPIC,
    ZERO,
    RaftRpc,
    directory,
    error_answer,
    one_partition,
    quorum_response_fields,
    quorum_response_to_wire,
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
    return quorum_response_to_wire(wire_resp, wire_resp.VoteResponse, resp, version, listener, vote_granted=resp.vote_granted)


def response_from_wire(version: int, msg: Any, listener: str) -> VoteResponse:
    fields, p = quorum_response_fields(version, msg, listener)
    return VoteResponse(vote_granted=p.vote_granted, **fields)


error_response = error_answer(VoteResponse)


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
    handle_request=election.handle_vote_request,
    handle_response=election.handle_vote_response,
)
