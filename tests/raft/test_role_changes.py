"""``Ready.role_changes``: every role transition, with the reason an
operator reads in the node's log (KIP-595 / KIP-996 triggers)."""

from __future__ import annotations

from kraft.raft.core import RoleChange
from kraft.raft.rpcs import VoteRequest
from tests.harness.raft_context import RaftTestContext


def changes(ctx: RaftTestContext, since: int = 0) -> list[RoleChange]:
    return [c for r in ctx.readies[since:] for c in r.role_changes]


def follower_of_2(epoch: int = 5) -> RaftTestContext:
    ctx = RaftTestContext(local_id=1, voters=[1, 2, 3]).with_log((epoch, 4)).start()
    ctx.follow(leader=2, epoch=epoch)
    return ctx


def test_start_up_is_reported_with_no_previous_role() -> None:
    ctx = RaftTestContext(local_id=1, voters=[1, 2, 3]).start()
    [first, *_] = changes(ctx)
    assert (first.previous, first.role, first.reason) == (None, "Unattached", "start-up")


def test_a_lost_pre_vote_names_the_tally() -> None:
    ctx = follower_of_2()
    ctx.advance(ctx.config.fetch_timeout_ms)
    seen = len(ctx.readies)
    for voter in (2, 3):
        [pre_vote] = ctx.assert_sent(VoteRequest, destination=voter, pre_vote=True)
        ctx.respond(pre_vote, ctx.vote_response(granted=False, epoch=5, leader=2))
    [lost] = changes(ctx, seen)
    assert (lost.previous, lost.role, lost.reason) == ("Prospective", "Follower", "lost pre-vote: 1 of 3 votes")


def test_a_higher_epoch_names_the_peer() -> None:
    ctx = follower_of_2()
    seen = len(ctx.readies)
    ctx.deliver(ctx.begin_quorum_epoch(leader=3, epoch=7), source=3)
    [moved] = changes(ctx, seen)
    assert (moved.role, moved.epoch, moved.leader_id, moved.reason) == (
        "Follower", 7, 3, "node 3 named leader 3 of epoch 7")
