"""Resigned: a leader stepping down, and every leader after a restart."""

from __future__ import annotations

from kraft.raft.rpcs import EndQuorumEpochRequest, FetchRequest, VoteResponse
from kraft.raft.roles import ElectionState, Resigned, Unattached
from tests.harness.raft_context import RaftTestContext


def restarted_leader() -> RaftTestContext:
    return (
        RaftTestContext(local_id=1)
        .with_log((4, 3))
        .with_election_state(ElectionState(4, leader_id=1))
        .start()
    )


def test_a_restarted_leader_resigns_in_its_epoch() -> None:
    ctx = restarted_leader()
    assert isinstance(ctx.role, Resigned) and ctx.epoch == 4
    ctx.assert_sent(EndQuorumEpochRequest, destination=2, epoch=4, leader_id=1)
    ctx.assert_sent(EndQuorumEpochRequest, destination=3, epoch=4, leader_id=1)


def test_a_resigned_leader_cannot_vote_in_its_epoch() -> None:
    ctx = restarted_leader()
    ctx.deliver(ctx.vote_request(candidate=2, epoch=4, last_epoch=3, last_offset=99), source=2)
    assert not ctx.assert_response(VoteResponse).vote_granted


def test_end_quorum_epoch_is_resent_until_acknowledged() -> None:
    ctx = restarted_leader()
    [to_2] = ctx.assert_sent(EndQuorumEpochRequest, destination=2)
    ctx.respond(to_2, ctx.end_quorum_epoch_response(epoch=4, leader=1))
    ctx.clear_sent()
    ctx.advance(ctx.config.request_timeout_ms)
    assert isinstance(ctx.role, Resigned) or ctx.epoch == 5
    ctx.assert_not_sent(EndQuorumEpochRequest, destination=2)


def test_after_the_election_timeout_it_moves_to_the_next_epoch() -> None:
    """A resigned replica must never fetch from itself as the old leader: it
    leaves for epoch + 1."""
    ctx = restarted_leader()
    ctx.advance(2 * ctx.config.election_timeout_ms)
    assert ctx.epoch >= 5
    assert not isinstance(ctx.role, Resigned)
    ctx.assert_not_sent(FetchRequest, destination=1)


def test_a_higher_epoch_ends_the_resignation() -> None:
    ctx = restarted_leader()
    ctx.deliver(ctx.vote_request(candidate=3, epoch=6), source=3)
    assert isinstance(ctx.role, Unattached) and ctx.epoch == 6
    assert ctx.assert_response(VoteResponse).vote_granted
