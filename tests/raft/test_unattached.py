"""Unattached (with or without a vote): KIP-595 Vote handling and leader discovery."""

from __future__ import annotations

from kraft.raft.errors import Errors
from kraft.raft.events import OutboundResponse
from kraft.raft.rpcs import FetchRequest, VoteResponse
from kraft.raft.roles import ElectionState, Follower, Prospective, Unattached
from kraft.raft.voters import ReplicaKey
from tests.harness.raft_context import RaftTestContext


def voter() -> RaftTestContext:
    return RaftTestContext(local_id=1, voters=[1, 2, 3]).with_log((1, 3), (2, 2)).start()


def test_starts_an_election_only_after_the_randomized_timeout() -> None:
    """Election timeout t + rand(t): nothing before t, a pre-vote by 2t."""
    ctx = voter()
    ctx.advance(ctx.config.election_timeout_ms - 1)
    assert isinstance(ctx.role, Unattached)
    ctx.advance(ctx.config.election_timeout_ms)
    assert isinstance(ctx.role, Prospective)


def test_grants_a_vote_to_an_up_to_date_candidate_of_a_higher_epoch() -> None:
    """KIP-595 Vote handling, rule 3: a larger candidate epoch is adopted and, if
    the log is at least as up to date, the vote is granted durably."""
    ctx = voter()
    ready = ctx.deliver(ctx.vote_request(candidate=2, epoch=3), source=2)
    response = ctx.assert_response(VoteResponse)
    assert response.vote_granted and response.leader_epoch == 3
    # The vote is persisted in the very Ready that carries the response, and
    # the shell persists before it sends.
    assert ready.persist == ElectionState(3, voted_key=ReplicaKey(2))
    assert ctx.role == Unattached(3, None, ReplicaKey(2), ctx.role.election_deadline_ms)


def test_rejects_a_candidate_whose_last_epoch_is_older() -> None:
    """Raft's up-to-date rule compares the last epoch first..."""
    ctx = voter()
    ctx.deliver(ctx.vote_request(candidate=2, epoch=3, last_epoch=1, last_offset=100), source=2)
    assert not ctx.assert_response(VoteResponse).vote_granted
    assert ctx.raft.quorum.voted_key is None
    assert ctx.epoch == 3  # the epoch is still adopted


def test_rejects_a_candidate_with_a_shorter_log_in_the_same_epoch() -> None:
    """...then the end offset."""
    ctx = voter()
    ctx.deliver(ctx.vote_request(candidate=2, epoch=3, last_epoch=2, last_offset=4), source=2)
    assert not ctx.assert_response(VoteResponse).vote_granted


def test_votes_at_most_once_per_epoch() -> None:
    """KIP-595 Vote handling, rule 2: only the candidate already voted for is granted."""
    ctx = voter()
    ctx.deliver(ctx.vote_request(candidate=2, epoch=3), source=2)
    ctx.clear_sent()
    ctx.deliver(ctx.vote_request(candidate=3, epoch=3), source=3)
    assert not ctx.assert_response(VoteResponse).vote_granted
    ctx.clear_sent()
    ctx.deliver(ctx.vote_request(candidate=2, epoch=3), source=2)  # a retried request
    assert ctx.assert_response(VoteResponse).vote_granted
    assert ctx.persisted == ElectionState(3, voted_key=ReplicaKey(2))


def test_a_pre_vote_is_granted_without_binding_anything() -> None:
    """KIP-996: a pre-vote neither bumps the epoch nor records a vote."""
    ctx = voter()
    assert ctx.epoch == 2  # the log's last epoch
    ready = ctx.deliver(ctx.vote_request(candidate=2, epoch=2, pre_vote=True), source=2)
    assert ctx.assert_response(VoteResponse).vote_granted
    assert ready.persist is None and ctx.raft.quorum.voted_key is None
    ctx.clear_sent()
    ctx.deliver(ctx.vote_request(candidate=3, epoch=5, pre_vote=True), source=3)
    response = ctx.assert_response(VoteResponse)
    assert ctx.epoch == 2 and response.leader_epoch == 2  # a pre-vote never disrupts


def test_a_vote_with_a_known_leader_is_rejected() -> None:
    ctx = RaftTestContext().with_election_state(ElectionState(4, leader_id=9)).start()
    # Leader 9 is not a voter: its endpoints are unknown, so we stay Unattached.
    assert isinstance(ctx.role, Unattached) and ctx.role.leader_id == 9
    ctx.deliver(ctx.vote_request(candidate=2, epoch=4), source=2)
    assert not ctx.assert_response(VoteResponse).vote_granted


def test_discovers_the_leader_through_a_fetch_to_another_voter() -> None:
    """An Unattached replica fetches from bootstrap voters; an answer naming the
    leader of its epoch makes it a follower (Kafka's maybeHandleCommonResponse)."""
    ctx = RaftTestContext().with_election_state(ElectionState(2)).start()
    [fetch] = ctx.assert_sent(FetchRequest, epoch=2)
    leader = fetch.destination
    ctx.respond(fetch, ctx.fetch_response(leader=leader, epoch=2, records=[(0, 2, 2)], high_watermark=2))
    assert isinstance(ctx.role, Follower) and ctx.role.leader_id == leader
    assert ctx.log.end_offset == 2 and ctx.committed == 2


def test_begin_quorum_epoch_makes_it_follow_the_new_leader() -> None:
    ctx = voter()
    ctx.deliver(ctx.begin_quorum_epoch(leader=3, epoch=4), source=3)
    assert isinstance(ctx.role, Follower) and ctx.role.leader_id == 3 and ctx.epoch == 4
    assert ctx.persisted == ElectionState(4, leader_id=3)
    ctx.assert_sent(FetchRequest, destination=3, epoch=4, fetch_offset=5, last_fetched_epoch=2)
    response = ctx.assert_response(type(ctx.begin_quorum_epoch_response(epoch=0, leader=0)))
    assert response.partition_error is Errors.NONE


def test_responses_are_sent_only_after_the_vote_is_persisted() -> None:
    """The Ready lists the persist before the sends: the shell fsyncs first."""
    ctx = voter()
    ready = ctx.deliver(ctx.vote_request(candidate=3, epoch=3), source=3)
    assert ready.persist is not None
    assert any(isinstance(m, OutboundResponse) for m in ready.send)
    assert [f for f in type(ready).__dataclass_fields__][:3] == ["persist", "log", "send"]
