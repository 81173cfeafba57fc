"""Election steps the raft tests share (a test helper, not a test module)."""

from __future__ import annotations

from kraft.raft.rpcs import VoteRequest
from kraft.raft.roles import Candidate, Leader, Prospective
from tests.harness.raft_context import RaftTestContext


def campaign_won_by_one_vote(ctx: RaftTestContext, voter: int) -> None:
    """The election timeout starts a candidacy that ``voter`` alone carries to
    a majority of three: Kafka's ``KafkaRaftClient`` pre-vote as Prospective
    (KIP-996) into the next epoch as Candidate, then the vote, into Leader.
    Every step is asserted, so a replica that does not campaign fails here."""
    epoch = ctx.epoch + 1
    ctx.advance(2 * ctx.config.election_timeout_ms)
    assert isinstance(ctx.role, Prospective), ctx.role
    [pre_vote] = ctx.assert_sent(VoteRequest, destination=voter, pre_vote=True)
    ctx.respond(pre_vote, ctx.vote_response(granted=True, epoch=epoch - 1))
    assert isinstance(ctx.role, Candidate) and ctx.epoch == epoch, ctx.role
    [vote] = ctx.assert_sent(VoteRequest, destination=voter, pre_vote=False)
    ctx.respond(vote, ctx.vote_response(granted=True, epoch=epoch))
    assert isinstance(ctx.role, Leader) and ctx.epoch == epoch, ctx.role
