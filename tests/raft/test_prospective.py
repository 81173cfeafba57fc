"""Prospective: KIP-996 pre-vote before bumping the epoch."""

from __future__ import annotations

from kraft.raft.rpcs import VoteRequest, VoteResponse
from kraft.raft.roles import Candidate, ElectionState, Follower, Prospective, Unattached
from kraft.raft.voters import ReplicaKey
from tests.harness.raft_context import RaftTestContext


def follower_of_2(epoch: int = 5) -> RaftTestContext:
    ctx = RaftTestContext(local_id=1, voters=[1, 2, 3]).with_log((epoch, 4)).start()
    ctx.follow(leader=2, epoch=epoch)
    return ctx


def time_out_fetching(ctx: RaftTestContext) -> None:
    ctx.advance(ctx.config.fetch_timeout_ms)
    assert isinstance(ctx.role, Prospective)


def test_a_fetch_timeout_starts_a_pre_vote_in_the_same_epoch() -> None:
    ctx = follower_of_2()
    ready_count = len(ctx.readies)
    time_out_fetching(ctx)
    assert ctx.epoch == 5
    assert all(r.persist is None for r in ctx.readies[ready_count:])  # nothing durable changes
    for voter in (2, 3):
        ctx.assert_sent(
            VoteRequest, destination=voter, pre_vote=True, epoch=5, last_offset=4, last_offset_epoch=5
        )


def test_a_majority_of_pre_votes_makes_it_a_candidate_of_the_next_epoch() -> None:
    ctx = follower_of_2()
    time_out_fetching(ctx)
    [pre_vote] = ctx.assert_sent(VoteRequest, destination=3, pre_vote=True)
    ready = ctx.respond(pre_vote, ctx.vote_response(granted=True, epoch=5))
    assert isinstance(ctx.role, Candidate) and ctx.epoch == 6
    assert ready.persist == ElectionState(6, voted_key=ReplicaKey(1))
    ctx.assert_sent(VoteRequest, destination=2, pre_vote=False, epoch=6)
    ctx.assert_sent(VoteRequest, destination=3, pre_vote=False, epoch=6)


def test_a_lost_pre_vote_returns_to_the_known_leader() -> None:
    """KIP-996: rejected by a majority, a prospective that knew a leader follows it again."""
    ctx = follower_of_2()
    time_out_fetching(ctx)
    for voter in (2, 3):
        [req] = ctx.assert_sent(VoteRequest, destination=voter, pre_vote=True)
        ctx.respond(req, ctx.vote_response(granted=False, epoch=5, leader=2))
    assert isinstance(ctx.role, Follower) and ctx.role.leader_id == 2 and ctx.epoch == 5


def test_a_lost_pre_vote_without_a_leader_returns_to_unattached_in_the_same_epoch() -> None:
    ctx = RaftTestContext(local_id=1, voters=[1, 2, 3]).with_election_state(ElectionState(5)).start()
    ctx.advance(2 * ctx.config.election_timeout_ms)
    assert isinstance(ctx.role, Prospective)
    for voter in (2, 3):
        [req] = ctx.assert_sent(VoteRequest, destination=voter, pre_vote=True)
        ctx.respond(req, ctx.vote_response(granted=False, epoch=5))
    assert isinstance(ctx.role, Unattached) and ctx.epoch == 5


def test_a_pre_vote_that_times_out_is_abandoned() -> None:
    ctx = follower_of_2()
    time_out_fetching(ctx)
    deadline = ctx.role.election_deadline_ms
    ctx.advance(deadline - ctx.now_ms)
    assert isinstance(ctx.role, Follower) and ctx.epoch == 5


def test_a_prospective_can_grant_a_real_vote() -> None:
    """Another voter became candidate in the epoch we are canvassing in."""
    ctx = RaftTestContext(local_id=1).with_log((1, 3)).with_election_state(ElectionState(2)).start()
    ctx.advance(2 * ctx.config.election_timeout_ms)
    assert isinstance(ctx.role, Prospective) and ctx.epoch == 2
    ready = ctx.deliver(ctx.vote_request(candidate=3, epoch=2, last_epoch=1, last_offset=3), source=3)
    assert ctx.assert_response(VoteResponse).vote_granted
    assert ready.persist == ElectionState(2, voted_key=ReplicaKey(3))
    assert isinstance(ctx.role, Prospective) and ctx.role.voted_key == ReplicaKey(3)


def test_only_unanswered_voters_are_asked_again() -> None:
    """Requests that got no answer are resent after the request timeout; a
    recorded answer is final."""
    from kraft.raft.quorum_config import QuorumConfig

    ctx = (
        RaftTestContext(local_id=1, voters=[1, 2, 3, 4, 5], config=QuorumConfig(request_timeout_ms=300))
        .with_election_state(ElectionState(3))
        .start()
    )
    ctx.advance(2 * ctx.config.election_timeout_ms)
    assert isinstance(ctx.role, Prospective)
    [req] = ctx.assert_sent(VoteRequest, destination=2, pre_vote=True)
    ctx.respond(req, ctx.vote_response(granted=False, epoch=3))
    ctx.clear_sent()
    ctx.advance(ctx.config.request_timeout_ms)
    assert isinstance(ctx.role, Prospective)
    ctx.assert_not_sent(VoteRequest, destination=2)
    for voter in (3, 4, 5):
        ctx.assert_sent(VoteRequest, destination=voter, pre_vote=True, epoch=3)
