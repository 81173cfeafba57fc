"""Candidate: epoch + 1 per candidacy, majority to win, timeout back to Prospective."""

from __future__ import annotations

from kraft.raft.rpcs import BeginQuorumEpochRequest, VoteRequest, VoteResponse
from kraft.raft.logops import AppendAsLeader, Flush, LeaderChangeMessage
from kraft.raft.roles import Candidate, ElectionState, Follower, Leader, Prospective, Unattached
from kraft.raft.voters import ReplicaKey
from tests.harness.raft_context import RaftTestContext


def candidate(voters: list[int] = [1, 2, 3]) -> RaftTestContext:  # noqa: B006
    ctx = RaftTestContext(local_id=1, voters=voters).with_log((3, 4)).start()
    ctx.advance(2 * ctx.config.election_timeout_ms)
    assert isinstance(ctx.role, Prospective)
    for req in ctx.find_sent(VoteRequest, pre_vote=True):
        ctx.respond(req, ctx.vote_response(granted=True, epoch=3))
        if isinstance(ctx.role, Candidate):
            break
    assert isinstance(ctx.role, Candidate) and ctx.epoch == 4
    return ctx


def test_asks_every_other_voter_with_its_log_end() -> None:
    ctx = candidate()
    for voter in (2, 3):
        ctx.assert_sent(
            VoteRequest, destination=voter, epoch=4, pre_vote=False, last_offset=4, last_offset_epoch=3
        )
    ctx.assert_not_sent(VoteRequest, destination=1)


def test_a_majority_of_votes_makes_it_leader_and_writes_a_leader_change_message() -> None:
    """KIP-595 Vote response handling, rule 3: the new leader first writes a
    LeaderChangeMessage so the high watermark can advance in its epoch."""
    ctx = candidate()
    [req] = ctx.assert_sent(VoteRequest, destination=2, epoch=4)
    ready = ctx.respond(req, ctx.vote_response(granted=True, epoch=4))
    assert isinstance(ctx.role, Leader) and ctx.epoch == 4
    assert ready.persist == ElectionState(4, leader_id=1)
    ops = [op for r in ctx.readies for op in r.log]
    first = next(i for i, op in enumerate(ops) if isinstance(op, AppendAsLeader))
    assert any(isinstance(op, Flush) for op in ops[first + 1:])  # written, then flushed
    batch = ops[first].batch
    assert batch.base_offset == 4 and batch.epoch == 4
    assert batch.control == LeaderChangeMessage(1, (1, 2, 3), (1, 2))


def test_one_vote_short_of_a_majority_is_not_enough() -> None:
    ctx = candidate([1, 2, 3, 4, 5])
    [req] = ctx.assert_sent(VoteRequest, destination=2, epoch=4)
    ctx.respond(req, ctx.vote_response(granted=True, epoch=4))
    assert isinstance(ctx.role, Candidate)


def test_a_rejected_candidate_waits_for_its_timeout_then_canvasses_again() -> None:
    """Kafka 4.x: no immediate retry; after the election timeout it is
    Prospective again, and the next candidacy is one epoch higher."""
    ctx = candidate()
    for voter in (2, 3):
        [req] = ctx.assert_sent(VoteRequest, destination=voter, epoch=4)
        ctx.respond(req, ctx.vote_response(granted=False, epoch=4))
    assert isinstance(ctx.role, Candidate)
    ctx.clear_sent()
    ctx.advance(ctx.role.election_deadline_ms - ctx.now_ms - 1)
    assert isinstance(ctx.role, Candidate)
    ctx.assert_not_sent(VoteRequest)  # it stopped asking once it had lost
    ctx.advance(1)
    assert isinstance(ctx.role, Prospective) and ctx.epoch == 4
    [pre] = ctx.assert_sent(VoteRequest, destination=2, pre_vote=True, epoch=4)
    ctx.respond(pre, ctx.vote_response(granted=True, epoch=4))
    assert isinstance(ctx.role, Candidate) and ctx.epoch == 5
    assert ctx.role.retries == 2


def test_grants_an_up_to_date_pre_vote_but_never_a_real_vote() -> None:
    ctx = candidate()
    ctx.deliver(ctx.vote_request(candidate=2, epoch=4, pre_vote=True), source=2)
    assert ctx.assert_response(VoteResponse).vote_granted
    ctx.clear_sent()
    ctx.deliver(ctx.vote_request(candidate=2, epoch=4, last_epoch=3, last_offset=9), source=2)
    assert not ctx.assert_response(VoteResponse).vote_granted
    assert ctx.persisted == ElectionState(4, voted_key=ReplicaKey(1))


def test_a_vote_of_a_higher_epoch_ends_the_candidacy() -> None:
    ctx = candidate()
    ctx.deliver(ctx.vote_request(candidate=3, epoch=6), source=3)
    assert ctx.epoch == 6 and ctx.assert_response(VoteResponse).vote_granted
    assert isinstance(ctx.role, Unattached) and ctx.role.voted_key == ReplicaKey(3)


def test_a_leader_of_its_epoch_turns_it_into_a_follower() -> None:
    ctx = candidate()
    ctx.deliver(ctx.begin_quorum_epoch(leader=2, epoch=4), source=2)
    assert isinstance(ctx.role, Follower) and ctx.role.leader_id == 2
    # Same epoch: the self-vote stays on record.
    assert ctx.persisted == ElectionState(4, leader_id=2, voted_key=ReplicaKey(1))


def test_a_restarted_candidate_asks_again_in_the_same_epoch() -> None:
    ctx = RaftTestContext(local_id=1).with_election_state(ElectionState(7, voted_key=ReplicaKey(1))).start()
    assert isinstance(ctx.role, Candidate) and ctx.epoch == 7
    ctx.assert_sent(VoteRequest, destination=2, epoch=7, pre_vote=False)


def test_a_sole_voter_elects_itself_at_start() -> None:
    ctx = RaftTestContext(local_id=1, voters=[1]).start()
    assert isinstance(ctx.role, Leader) and ctx.epoch == 1
    ctx.assert_not_sent(BeginQuorumEpochRequest)
    assert ctx.committed == 1  # the LeaderChangeMessage is committed by itself
