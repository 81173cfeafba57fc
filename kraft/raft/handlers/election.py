"""Vote, BeginQuorumEpoch and EndQuorumEpoch (KIP-595, KIP-996).

Kafka's ``KafkaRaftClient.handleVoteRequest``/``handleVoteResponse``,
``handleBeginQuorumEpochRequest``/``Response`` and
``handleEndQuorumEpochRequest``/``Response``. The epoch gate has already run:
the request's epoch equals ours (or the core moved to it), and a response
passed ``maybeHandleCommonResponse``.
"""

from __future__ import annotations


from kraft.raft.events import (
    InboundRequest,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    VoteRequest,
    VoteResponse,
)
from kraft.raft.errors import Errors
from kraft.raft.handlers.common import ElectionContext
from kraft.raft.roles import (
    Candidate,
    EpochElection,
    Follower,
    Leader,
    Prospective,
    Resigned,
)
from kraft.raft.voters import ReplicaKey
from kraft.records.view import OffsetAndEpoch




def tally(votes: EpochElection) -> str:
    """A vote count as a role-change reason shows it."""
    return f"{len(votes.granted)} of {len(votes.voter_ids)} votes"


def vote_request(ctx: ElectionContext, role: Prospective | Candidate, voter: int) -> VoteRequest:
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


def begin_quorum_epoch_request(ctx: ElectionContext, leader: Leader, voter: ReplicaKey) -> BeginQuorumEpochRequest:
    return BeginQuorumEpochRequest(
        cluster_id=ctx.cluster_id,
        topic_partition=ctx.topic_partition,
        voter_key=voter,
        leader_id=leader.leader_id,
        leader_epoch=leader.epoch,
        leader_endpoints=ctx.quorum.leader_endpoints,
    )


def end_quorum_epoch_request(ctx: ElectionContext, role: Resigned) -> EndQuorumEpochRequest:
    return EndQuorumEpochRequest(
        cluster_id=ctx.cluster_id,
        topic_partition=ctx.topic_partition,
        leader_id=role.local_id,
        leader_epoch=role.epoch,
        preferred_candidates=role.preferred_successors,
        leader_endpoints=ctx.quorum.leader_endpoints,
    )


def handle_vote_request(ctx: ElectionContext, now_ms: int, env: InboundRequest) -> VoteResponse:
    """KIP-595 Vote handling: grant only an up-to-date log, once per epoch
    (Kafka's ``handleVoteRequest`` and each state's ``canGrantVote``)."""
    msg = env.message
    assert isinstance(msg, VoteRequest)
    granted = ctx.quorum.grant_vote(
        msg.candidate_key, OffsetAndEpoch(msg.last_offset, msg.last_offset_epoch), ctx.log_end, msg.pre_vote, now_ms)
    return VoteResponse(vote_granted=granted, **ctx.quorum.leader_fields)


def handle_begin_quorum_epoch_request(ctx: ElectionContext, now_ms: int, env: InboundRequest) -> BeginQuorumEpochResponse:
    # The gate already made us follow the announced leader.
    return BeginQuorumEpochResponse(**ctx.quorum.leader_fields)


def handle_end_quorum_epoch_request(ctx: ElectionContext, now_ms: int, env: InboundRequest) -> EndQuorumEpochResponse:
    """A resigning leader names its preferred successors: start the election
    sooner, the most caught-up first (Kafka's ``handleEndQuorumEpochRequest``)."""
    msg = env.message
    assert isinstance(msg, EndQuorumEpochRequest)
    role = ctx.quorum.role
    if isinstance(role, Follower) and role.leader_id == msg.leader_id:
        backoff = end_epoch_election_backoff(ctx, msg.preferred_candidates)
        ctx.quorum.override_fetch_timeout(now_ms, backoff, f"leader {msg.leader_id} resigned (EndQuorumEpoch)")
    return EndQuorumEpochResponse(**ctx.quorum.leader_fields)


def end_epoch_election_backoff(ctx: ElectionContext, preferred: tuple[ReplicaKey, ...]) -> int:
    """The most caught-up successor starts at once, the others after a strict
    exponential backoff by their position."""
    position = len(preferred)
    local = ctx.local_key
    if local is not None:
        for i, key in enumerate(preferred):
            if key.id == local.id and (key.directory_id is None or key.directory_id == local.directory_id):
                position = i
                break
    return strict_exponential_election_backoff_ms(position, len(preferred), ctx.config.election_backoff_max_ms)


def strict_exponential_election_backoff_ms(position: int, total: int, backoff_max_ms: int) -> int:
    """Kafka's ``strictExponentialElectionBackoffMs``: 0 for the first preferred
    successor, ``max >> (total - 1) << (position - 1)`` (capped at ``max``) for
    the others, ``max`` for a replica not in the list."""
    if position == 0:
        return 0
    if position < 0 or position >= total:
        return backoff_max_ms
    base = backoff_max_ms >> (total - 1)
    return min(backoff_max_ms, base << (position - 1))


def handle_vote_response(ctx: ElectionContext, now_ms: int, source: int, msg: VoteResponse) -> bool:
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


def handle_begin_quorum_epoch_response(
    ctx: ElectionContext, now_ms: int, source: int, msg: BeginQuorumEpochResponse
) -> bool:
    if msg.partition_error is not Errors.NONE:
        return False
    role = ctx.quorum.role
    if isinstance(role, Leader):
        role.progress.add_acknowledgement(source)
    return True


def handle_end_quorum_epoch_response(ctx: ElectionContext, now_ms: int, source: int, msg: EndQuorumEpochResponse) -> bool:
    if msg.partition_error is not Errors.NONE:
        return False
    ctx.quorum.acknowledge_resignation(source)
    return True
