"""Observers: never campaign; Unattached <-> Follower only."""

from __future__ import annotations

from kraft.raft.errors import Errors
from kraft.raft.events import FetchRequest, VoteResponse
from kraft.raft.logops import Flush
from kraft.raft.roles import Follower, Unattached
from kraft.sim.context import RaftTestContext


def observer(local_id: int | None = 9) -> RaftTestContext:
    return RaftTestContext(local_id=local_id, voters=[1, 2, 3]).start()


def test_an_observer_looks_for_the_leader_among_the_voters() -> None:
    ctx = observer()
    [fetch] = ctx.assert_sent(FetchRequest)
    assert fetch.destination in (1, 2, 3) and fetch.message.replica_key.id == 9


def test_an_observer_without_a_node_id_fetches_as_replica_minus_one() -> None:
    ctx = observer(local_id=None)
    [fetch] = ctx.assert_sent(FetchRequest)
    assert fetch.message.replica_key.id == -1


def test_an_observer_follows_the_leader_and_does_not_fsync() -> None:
    """Only voters are counted for the high watermark, so only they fsync."""
    ctx = observer()
    [fetch] = ctx.assert_sent(FetchRequest, epoch=0)
    ctx.clear_sent()
    # The voter asked is not the leader of a newer epoch; it names the leader.
    ctx.respond(fetch, ctx.fetch_response(leader=2, epoch=3, error=Errors.FENCED_LEADER_EPOCH))
    assert isinstance(ctx.role, Follower) and ctx.role.leader_id == 2
    [fetch] = ctx.assert_sent(FetchRequest, destination=2, epoch=3)
    ctx.clear_sent()
    ready = ctx.respond(fetch, ctx.fetch_response(leader=2, epoch=3, records=[(0, 3, 2)], high_watermark=2))
    assert not any(isinstance(op, Flush) for op in ready.log)
    assert ctx.committed == 2


def test_an_observer_never_starts_an_election() -> None:
    ctx = observer()
    [fetch] = ctx.assert_sent(FetchRequest)
    ctx.respond(fetch, ctx.fetch_response(leader=2, epoch=3))
    ctx.advance(10 * ctx.config.fetch_timeout_ms)
    assert isinstance(ctx.role, (Follower, Unattached))


def test_an_observer_with_an_id_answers_votes_like_any_replica() -> None:
    """Kafka 4.x ``KafkaRaftClient.handleVoteRequest``: no membership check
    (``validateVoterOnlyRequest`` looks at the epoch and the id only), so an
    observer with a node id adopts the epoch and grants an up-to-date
    candidate, as Kafka's ``UnattachedState.canGrantVote`` does -- it may be
    a voter whose VotersRecord has not reached it yet (KIP-853)."""
    ctx = observer()
    ctx.deliver(ctx.vote_request(candidate=2, epoch=3), source=2)
    response = ctx.assert_response(VoteResponse)
    assert response.partition_error is Errors.NONE and response.vote_granted
    assert ctx.epoch == 3 and ctx.persisted is not None and ctx.persisted.voted_key == ctx.key(2)
