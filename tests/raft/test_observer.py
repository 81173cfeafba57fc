"""Observers: never campaign; Unattached <-> Follower only."""

from __future__ import annotations

from dataclasses import replace

from kraft.raft.errors import Errors
from kraft.raft.rpcs import FetchRequest, VoteResponse
from kraft.raft.logops import Flush
from kraft.raft.roles import Follower, Unattached
from tests.harness.raft_context import RaftTestContext


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


def _observer_following_2_found_via_bootstrap_servers() -> RaftTestContext:
    """An observer formatted with ``--no-initial-controllers`` and two
    ``controller.quorum.bootstrap.servers`` (ids -2, -3, as the node numbers them): it knows no voter,
    so the bootstrap servers are all it can ask besides the leader. A
    bootstrap server names leader 2 of epoch 5 (and where it listens)."""
    ctx = RaftTestContext(local_id=9, voters=[], dynamic=True, bootstrap_ids=(-2, -3)).start()
    [discovery] = ctx.assert_sent(FetchRequest, epoch=0)
    assert discovery.destination in (-2, -3)
    ctx.clear_sent()
    ctx.respond(discovery, replace(ctx.fetch_response(leader=2, epoch=5, error=Errors.FENCED_LEADER_EPOCH),
                                   leader_endpoints=ctx.endpoints(2)))
    assert isinstance(ctx.role, Follower) and ctx.role.leader_id == 2 and ctx.epoch == 5
    return ctx


def test_an_observer_whose_leader_stops_answering_asks_a_bootstrap_server_then_the_leader_again() -> None:
    """Kafka 4.2+ ``KafkaRaftClient.pollFollowerAsObserver`` is
    ``maybeSendFetchToBestNode`` (KAFKA-19354, Kafka's
    ``KafkaRaftClientTest.testObserverFollowerSendFetchToBestNode``): a Fetch
    to the leader that times out is retried at a bootstrap server, and once
    that one is answered the observer fetches from the leader again -- also
    after ``fetch.timeout.ms`` passed without a successful Fetch. Kafka 4.1's
    observer switched to bootstrap servers for good when its fetch timer
    expired (``pollFollowerAsObserver``: ``hasFetchTimeoutExpired`` ->
    ``maybeSendFetchToAnyBootstrap``), and stayed there even when a
    bootstrap server named the leader it knew: the bug KAFKA-19354 fixed."""
    ctx = _observer_following_2_found_via_bootstrap_servers()
    [to_leader] = ctx.assert_sent(FetchRequest, destination=2, epoch=5)
    ctx.clear_sent()
    assert ctx.config.request_timeout_ms >= ctx.config.fetch_timeout_ms  # both timers run out below
    ctx.advance(ctx.config.request_timeout_ms)
    [retry] = ctx.assert_sent(FetchRequest, epoch=5)
    assert retry.destination in (-2, -3)  # the leader is not asked again while it is silent
    ctx.clear_sent()
    # The bootstrap server is not the leader, and names the same one.
    ctx.respond(retry, ctx.fetch_response(leader=2, epoch=5, error=Errors.NOT_LEADER_OR_FOLLOWER))
    assert isinstance(ctx.role, Follower) and ctx.role.leader_id == 2
    [back] = ctx.assert_sent(FetchRequest, epoch=5)
    assert back.destination == 2
    ctx.clear_sent()
    ctx.respond(back, ctx.fetch_response(leader=2, epoch=5, records=[(0, 5, 2)], high_watermark=2))
    assert ctx.committed == 2
    [following] = ctx.assert_sent(FetchRequest, epoch=5)
    assert following.destination == 2


def test_an_observer_retries_at_the_leader_when_the_bootstrap_retry_times_out_too() -> None:
    """``testObserverFollowerSendFetchToBestNode``'s second half: the retry at
    a bootstrap server times out as well; the next Fetch goes to the leader."""
    ctx = _observer_following_2_found_via_bootstrap_servers()
    ctx.clear_sent()
    ctx.advance(ctx.config.request_timeout_ms)
    [retry] = ctx.assert_sent(FetchRequest, epoch=5)
    assert retry.destination in (-2, -3)
    ctx.clear_sent()
    ctx.advance(ctx.config.request_timeout_ms)
    [again] = ctx.assert_sent(FetchRequest, epoch=5)
    assert again.destination == 2


def test_an_observer_asks_the_voters_its_log_names_when_the_bootstrap_server_is_silent() -> None:
    """Where kraft differs from Kafka 4.1 on purpose (README, 'Where the core
    deliberately differs'): Kafka's ``RequestManager`` is built from
    ``controller.quorum.bootstrap.servers`` alone (``KafkaRaftClient``'s
    constructor), so its observer asks nobody else. Ours also asks the voters
    its log names (``RaftCore.bootstrap_nodes``): with the one configured
    bootstrap server gone, the observer of a dynamic quorum still finds the
    leader through a voter it learned of."""
    ctx = RaftTestContext(local_id=9, voters=[1, 2, 3], dynamic=True, bootstrap_ids=(-2,)).start()
    asked: list[int] = []
    for _ in range(10):
        [fetch] = ctx.assert_sent(FetchRequest, epoch=0)
        ctx.clear_sent()
        asked.append(fetch.destination)
        if fetch.destination in (1, 2, 3):
            break
        ctx.advance(ctx.config.request_timeout_ms)  # -2 never answers
    assert asked[-1] in (1, 2, 3), asked
    ctx.respond(fetch, replace(ctx.fetch_response(leader=2, epoch=5, error=Errors.FENCED_LEADER_EPOCH),
                               leader_endpoints=ctx.endpoints(2)))
    assert isinstance(ctx.role, Follower) and ctx.role.leader_id == 2
