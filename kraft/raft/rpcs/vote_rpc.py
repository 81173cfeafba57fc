"""Vote (api key 52, v0-v2): a Candidate's vote request and a Prospective's
pre-vote (KIP-996, v2). KIP-853 (v1) adds the voter's and candidate's
directory ids and the answer's NodeEndpoints.

Kafka: ``RaftUtil.singletonVoteRequest``/``singletonVoteResponse``,
``KafkaRaftClient.handleVoteRequest``/``handleVoteResponse``. The handlers
are :func:`handle_request` and :func:`handle_response` below; the poll
sends what :func:`request` builds.
"""

from __future__ import annotations

from dataclasses import dataclass

from kraft.messages.generated import vote_request as wire_req, vote_response as wire_resp
from kraft.raft.errors import Errors
from kraft.raft.events import METADATA_PARTITION, NO_LEADER, RaftRequest, QuorumResponse, TopicPartition
from kraft.raft.events import InboundRequest
from kraft.raft.families.common import ElectionContext
from kraft.raft.roles import Candidate, Prospective
from kraft.records.view import OffsetAndEpoch
from kraft.raft.rpcs.rpc_unit import (
    METADATA_TOPIC,
    ZERO,
    RaftRpc,
    directory,
    error_answer,
    node_endpoint_list,
    one_partition,
    quorum_response_fields,
    replica_key,
    wire_directory,
)
from kraft.raft.voters import Endpoints, ReplicaKey
from kraft.wire.apis import ApiKey

__all__ = ["RPC", "VoteRequest", "VoteResponse"]


@dataclass(frozen=True, slots=True, kw_only=True)
class VoteRequest(RaftRequest):
    """Sent by a Prospective (``pre_vote=True``, KIP-996) or a Candidate."""

    cluster_id: str | None
    topic_partition: TopicPartition = METADATA_PARTITION
    #: The receiving voter's key (KIP-853, v1+); ``None`` when not sent.
    voter_key: ReplicaKey | None = None
    #: The nominee's epoch: bumped for a real vote, the current one for a pre-vote.
    candidate_epoch: int
    candidate_key: ReplicaKey
    #: Epoch and end offset of the nominee's log (the "last fetched epoch" and LEO).
    last_offset_epoch: int
    last_offset: int
    pre_vote: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class VoteResponse(QuorumResponse):
    error: Errors = Errors.NONE
    partition_error: Errors = Errors.NONE
    leader_id: int = NO_LEADER
    leader_epoch: int = -1
    vote_granted: bool = False
    leader_endpoints: Endpoints = ()



def request_from_wire(version: int, msg: wire_req.VoteRequest) -> VoteRequest:
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


def request_to_wire(req: VoteRequest, version: int, endpoints: Endpoints) -> wire_req.VoteRequest:
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


def response_to_wire(resp: VoteResponse, version: int, listener: str) -> wire_resp.VoteResponse:
    return wire_resp.VoteResponse(
        error_code=int(resp.error),
        topics=[wire_resp.TopicData(topic_name=METADATA_TOPIC, partitions=[wire_resp.PartitionData(
            partition_index=0, error_code=int(resp.partition_error), leader_id=resp.leader_id,
            leader_epoch=resp.leader_epoch, vote_granted=resp.vote_granted)])],
        node_endpoints=node_endpoint_list(wire_resp.NodeEndpoint, resp.leader_id, resp.leader_endpoints, listener)
        if version >= 1 else [],
    )


def response_from_wire(version: int, msg: wire_resp.VoteResponse, listener: str) -> VoteResponse:
    fields, p = quorum_response_fields(version, msg, listener)
    return VoteResponse(vote_granted=p.vote_granted, **fields)


error_response = error_answer(VoteResponse)


def source(req: VoteRequest) -> int:
    return req.candidate_key.id


# ----------------------------------------------------------------- the core's side


def request(ctx: ElectionContext, role: Prospective | Candidate, voter: int) -> VoteRequest:
    """A (pre-)vote request of ``role`` to ``voter``, with our log end."""
    assert ctx.local_key is not None
    end = ctx.log_end
    return VoteRequest(
        cluster_id=ctx.cluster_id,
        topic_partition=ctx.topic_partition,
        voter_key=ctx.voters.key(voter),
        candidate_epoch=role.epoch,
        candidate_key=ctx.local_key,
        last_offset_epoch=end.epoch,
        last_offset=end.offset,
        pre_vote=isinstance(role, Prospective),
    )


def handle_request(ctx: ElectionContext, now_ms: int, env: InboundRequest) -> VoteResponse:
    """KIP-595 Vote handling: grant only an up-to-date log, once per epoch
    (Kafka's ``handleVoteRequest`` and each state's ``canGrantVote``)."""
    msg = env.message
    assert isinstance(msg, VoteRequest)
    granted = ctx.quorum.grant_vote(
        msg.candidate_key, OffsetAndEpoch(msg.last_offset, msg.last_offset_epoch), ctx.log_end, msg.pre_vote, now_ms)
    return VoteResponse(vote_granted=granted, **ctx.quorum.leader_fields)


def handle_response(ctx: ElectionContext, now_ms: int, source: int, msg: VoteResponse) -> bool:
    """Count the vote (Kafka's ``handleVoteResponse``); a majority moves the
    nominee forward, a lost pre-vote sends it back."""
    quorum = ctx.quorum
    if msg.partition_error is not Errors.NONE:
        return False
    if isinstance(quorum.role, (Prospective, Candidate)):
        quorum.record_vote(source, msg.vote_granted)
        if msg.vote_granted:
            ctx.maybe_transition_forward(now_ms)
        else:
            role = quorum.role
            if isinstance(role, Prospective) and role.votes.is_vote_rejected():
                ctx.prospective_lost(now_ms, "lost pre-vote")
            # A rejected Candidate waits out its election timeout, then
            # becomes Prospective again (Kafka 4.x).
    return True


RPC: RaftRpc[VoteRequest, VoteResponse, wire_req.VoteRequest, wire_resp.VoteResponse, ElectionContext] = RaftRpc(
    api_key=ApiKey.VOTE,
    versions=(0, 2),
    request_type=VoteRequest,
    response_type=VoteResponse,
    wire_request_type=wire_req.VoteRequest,
    wire_response_type=wire_resp.VoteResponse,
    request_from_wire=request_from_wire,
    request_to_wire=request_to_wire,
    response_to_wire=response_to_wire,
    response_from_wire=response_from_wire,
    error_response=error_response,
    source=source,
    handle_request=handle_request,
    handle_response=handle_response,
)
