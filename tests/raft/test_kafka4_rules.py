"""Kafka 4.x rules the core follows where it used to differ (issue 14, Why 3).

Each test names the Kafka class and method whose behaviour it pins. The
Vote/BeginQuorumEpoch membership rule (``KafkaRaftClient.validateVoterOnlyRequest``)
is pinned in ``test_request_validation.py``.
"""

from __future__ import annotations

import dataclasses

import pytest

from kraft.node.raft_metrics import CURRENT_STATES, current_state
from kraft.raft.errors import AccumulatorFullError, Errors, RecordBatchTooLargeError
from kraft.raft.rpcs import AddRaftVoterResponse, ApiVersionsRequest, BeginQuorumEpochRequest, FetchRequest, VoteRequest, VoteResponse
from kraft.raft.families.membership import ADD_VOTER_CAUGHT_UP_WINDOW_MS
from kraft.raft.logops import AppendAsLeader
from kraft.raft.roles import (
    Candidate,
    EpochElection,
    Follower,
    Leader,
    LeaderAndEpoch,
    Prospective,
    Resigned,
    Unattached,
)
from kraft.raft.voters import Endpoint, ReplicaKey
from tests.harness.raft_context import CLUSTER_ID, RaftTestContext


def follow(ctx: RaftTestContext, *, leader: int, epoch: int) -> None:
    ctx.clear_sent()
    ctx.deliver(ctx.begin_quorum_epoch(leader=leader, epoch=epoch), source=leader)


# --- QuorumState.isVoter: the latest voter set in the log ------------------------------


def test_a_voter_removed_by_an_uncommitted_voters_record_does_not_campaign() -> None:
    """Kafka 4.x ``QuorumState.isVoter`` reads ``partitionState.lastVoterSet()``
    -- the latest VotersRecord in the log, committed or not -- and
    ``KafkaRaftClient.pollFollower`` only lets a voter's fetch timeout start
    an election (``pollFollowerAsVoter``); an observer keeps fetching."""
    ctx = RaftTestContext(local_id=3, voters=[1, 2, 3], dynamic=True).start()
    follow(ctx, leader=1, epoch=1)
    smaller = ctx.voters.remove_voter(ctx.key(3))
    assert smaller is not None
    [fetch] = ctx.assert_sent(FetchRequest, destination=1)
    ctx.clear_sent()
    # The removal arrives, not committed (the leader's high watermark is 0).
    ctx.respond(fetch, ctx.fetch_response_with(leader=1, epoch=1, batches=[ctx.voters_batch(0, 1, smaller)],
                                               high_watermark=0))
    assert ctx.raft.voters == smaller and ctx.raft.quorum.is_observer
    ctx.advance(5 * ctx.config.fetch_timeout_ms)
    assert not ctx.find_sent(VoteRequest), "a replica outside its latest voter set never campaigns"
    assert isinstance(ctx.role, (Follower, Unattached)) and ctx.epoch == 1


# --- LeaderState.isReplicaCaughtUp: the add-voter window -------------------------------


def _leader_with_observer_4() -> RaftTestContext:
    ctx = RaftTestContext(local_id=1, voters=[1, 2, 3], dynamic=True).start()
    ctx.elect_local()
    ctx.catch_up(2)
    ctx.catch_up(3)
    ctx.catch_up(4)  # the observer reaches the log end once
    ctx.clear_sent()
    return ctx


def _keep_leading(ctx: RaftTestContext, ms: int) -> None:
    """Let ``ms`` pass with voter 2 fetching often enough for check-quorum."""
    step = ctx.config.fetch_timeout_ms // 2
    for _ in range(ms // step):
        ctx.advance(step)
        ctx.catch_up(2)
        ctx.clear_sent()


def _add_voter_4(ctx: RaftTestContext) -> AddRaftVoterResponse | None:
    ctx.deliver(ctx.add_voter_request(4), source=-1)
    [api_versions] = ctx.assert_sent(ApiVersionsRequest, destination=4)
    ctx.respond(api_versions, ctx.api_versions_response())
    found = ctx.find_sent(AddRaftVoterResponse)
    return found[0].message if found else None


def test_add_voter_accepts_an_observer_that_caught_up_once_and_fetched_within_the_hour() -> None:
    """Kafka 4.x ``LeaderState.isReplicaCaughtUp`` (used by
    ``AddVoterHandler.handleApiVersionsResponse``): caught up once and fetched
    within the last hour -- not within ``fetch.timeout.ms`` -- so a busy
    cluster, where an observer is rarely at the very log end, accepts it."""
    ctx = _leader_with_observer_4()
    where_4_is = ctx.log.end_offset
    ctx.append(b"more")
    ctx.advance(ctx.config.append_linger_ms)
    # 4 fetches again, behind the log end, long after it last caught up.
    _keep_leading(ctx, 10 * ctx.config.fetch_timeout_ms)
    behind = dataclasses.replace(ctx.fetch_request(replica=4, fetch_offset=where_4_is, last_fetched_epoch=ctx.epoch),
                                 replica_key=ctx.key(4))
    ctx.deliver(behind, source=4)
    assert ctx.log.end_offset > where_4_is
    ctx.clear_sent()
    answer = _add_voter_4(ctx)
    assert answer is None or answer.error is Errors.NONE, answer
    assert 4 in ctx.raft.voters


def test_add_voter_refuses_an_observer_that_has_not_fetched_for_an_hour() -> None:
    """``LeaderState.isReplicaCaughtUp``: the last fetch must be within the hour."""
    ctx = _leader_with_observer_4()
    _keep_leading(ctx, ADD_VOTER_CAUGHT_UP_WINDOW_MS + ctx.config.fetch_timeout_ms)
    answer = _add_voter_4(ctx)
    assert answer is not None and answer.error is Errors.REQUEST_TIMED_OUT
    assert answer.error_message == f"Aborted add voter operation for {ctx.key(4)} since it is lagging behind"
    assert 4 not in ctx.raft.voters


# --- QuorumState.transitionToProspective: the leader's endpoints ----------------------


def test_a_prospective_replica_keeps_the_leader_endpoints_it_knew() -> None:
    """Kafka 4.x ``QuorumState.transitionToProspective`` builds the
    ``ProspectiveState`` with the previous state's ``leaderEndpoints()``; a
    lost pre-vote returns to following that leader at those endpoints
    (``KafkaRaftClient.maybeTransitionFromProspective``)."""
    ctx = RaftTestContext(local_id=2, voters=[1, 2, 3]).start()
    moved = (Endpoint("CONTROLLER", "127.0.0.9", 29093),)  # not what the voter set says
    ctx.clear_sent()
    ctx.deliver(
        BeginQuorumEpochRequest(cluster_id=CLUSTER_ID, voter_key=ReplicaKey(2), leader_id=1, leader_epoch=4,
                                leader_endpoints=moved),
        source=1,
    )
    assert isinstance(ctx.role, Follower) and ctx.role.leader_endpoints == moved
    ctx.advance(ctx.config.fetch_timeout_ms + 1)
    role = ctx.role
    assert isinstance(role, Prospective) and role.leader_id == 1 and role.leader_endpoints == moved
    assert ctx.raft.quorum.leader_endpoints == moved
    for request in ctx.find_sent(VoteRequest, pre_vote=True):
        ctx.respond(request, ctx.vote_response(granted=False, epoch=4, leader=1))
    role = ctx.role
    assert isinstance(role, Follower) and role.leader_id == 1 and role.leader_endpoints == moved


# --- KafkaRaftMetrics: current-state ---------------------------------------------------


def test_current_state_reports_kafka_4_values() -> None:
    """Kafka 4.x ``KafkaRaftMetrics.initialize``: leader, prospective,
    prospective-voted, candidate, unattached-voted, follower, observer,
    unattached -- no ``resigned`` (a resigned leader is ``unattached``)."""
    # ... and kraft's own "witness" (a voter that never leads; kraft/raft/witness_policy.py).
    assert set(CURRENT_STATES) == {"leader", "prospective", "prospective-voted", "candidate", "unattached-voted",
                                   "follower", "observer", "unattached", "witness",
                                   "witness-handover"}
    key = ReplicaKey(1)
    votes = EpochElection.start((1, 2, 3), 1)
    ep = (Endpoint("CONTROLLER", "h", 1),)
    assert current_state(Prospective(3, 1, votes), True) == "prospective"
    assert current_state(Prospective(3, 1, votes, voted_key=ReplicaKey(2)), True) == "prospective-voted"
    assert current_state(Candidate(3, key, votes), True) == "candidate"
    assert current_state(Unattached(3, voted_key=ReplicaKey(2)), True) == "unattached-voted"
    assert current_state(Unattached(3), True) == "unattached"
    assert current_state(Follower(3, 2, ep), True) == "follower"
    assert current_state(Follower(3, 2, ep), False) == "observer"
    assert current_state(Resigned(3, 1, 0, frozenset()), True) == "unattached"
    ctx = RaftTestContext(local_id=1).start().elect_local()
    assert current_state(ctx.role, True) == "leader"


# --- KafkaRaftClient: handleLeaderChange after the epoch start ------------------------


def test_the_new_leader_is_announced_once_the_listeners_reached_the_epoch_start() -> None:
    """Kafka 4.x ``KafkaRaftClient.pollListeners`` /
    ``ListenerContext.maybeFireLeaderChange(leaderAndEpoch, epochStartOffset)``:
    on the leader, ``handleLeaderChange`` fires only once the listener's next
    offset reached the epoch start offset -- after every earlier record was
    handed over as committed -- so a state machine never acts as leader
    before it replayed the previous leaders' commits."""
    ctx = RaftTestContext(local_id=1).with_log((1, 5)).start()
    ctx.elect_local()
    leader = ctx.role
    assert isinstance(leader, Leader) and leader.epoch_start_offset == 5
    announced = [r.leader_change for r in ctx.readies if r.leader_change is not None]
    assert LeaderAndEpoch(1, leader.epoch) not in announced, "announced before anything committed"
    ctx.readies.clear()
    ctx.catch_up(2)  # a majority has the LeaderChange record: the epoch start is committed
    [ready] = [r for r in ctx.readies if r.leader_change is not None]
    assert ready.leader_change == LeaderAndEpoch(1, leader.epoch)
    # In the same Ready the listeners get everything up to past the epoch start first.
    assert ready.committed is not None and ready.committed > leader.epoch_start_offset


def test_a_follower_is_told_of_the_new_leader_at_once() -> None:
    """``KafkaRaftClient.pollListeners``: off the leader,
    ``maybeFireLeaderChange(leaderAndEpoch)`` has no offset condition."""
    ctx = RaftTestContext(local_id=2).with_log((1, 5)).start()
    ctx.readies.clear()
    follow(ctx, leader=1, epoch=2)
    assert [r.leader_change for r in ctx.readies if r.leader_change is not None] == [LeaderAndEpoch(1, 2)]
    assert ctx.committed is None


# --- BatchAccumulator: bounded appends -------------------------------------------------


def test_one_append_larger_than_a_batch_is_refused() -> None:
    """Kafka 4.x ``BatchAccumulator.append``: the records of one append go into
    one batch; more than ``maxBatchSize`` bytes is ``RecordBatchTooLargeException``."""
    ctx = RaftTestContext(local_id=1, voters=[1]).start()
    assert isinstance(ctx.role, Leader)
    too_big = b"x" * (ctx.config.max_batch_size_bytes // 2 + 1)
    with pytest.raises(RecordBatchTooLargeError, match="exceeds the maximum allowed batch size"):
        ctx.raft.append(ctx.now_ms, [too_big, too_big])
    offset = ctx.append(b"fits")
    ctx.advance(ctx.config.append_linger_ms)
    written = [op.batch for r in ctx.readies for op in r.log if isinstance(op, AppendAsLeader)]
    assert written[-1].records == (b"fits",) and written[-1].base_offset == offset


def test_appends_stop_at_kafkas_number_of_waiting_batches() -> None:
    """``BatchAccumulator.append`` refuses once ``MAX_NUMBER_OF_BATCHES`` (10,
    ``KafkaRaftClient``) completed batches wait to be written (Kafka: an
    ``IllegalStateException``), changing nothing; after the leader drained
    them appends go on."""
    ctx = RaftTestContext(local_id=1, voters=[1]).start()
    half = b"y" * (ctx.config.max_batch_size_bytes // 2 + 1)
    leader = ctx.role
    assert isinstance(leader, Leader)
    # Nothing drains between these calls (the shell is not polled): each
    # append completes the previous batch.
    last = 0
    for _ in range(11):
        last = ctx.raft.append(ctx.now_ms, [half])
    with pytest.raises(AccumulatorFullError, match="reached 10"):
        ctx.raft.append(ctx.now_ms, [b"one more"])
    assert leader.state.accumulator.next_offset == last + 1
    ctx.poll()  # the leader writes the waiting batches
    assert ctx.raft.append(ctx.now_ms, [b"one more"]) == last + 1


# --- QuorumState.durableTransitionTo / FileQuorumStateStore: the data version ----------


def test_the_election_state_is_persisted_in_the_form_of_the_latest_kraft_version() -> None:
    """Kafka 4.x ``QuorumState.durableTransitionTo`` writes with
    ``partitionState.lastKraftVersion()``; ``FileQuorumStateStore`` picks
    ``kraftVersion.quorumStateVersion()``: after an in-place 0 -> 1 upgrade
    reaches the log, the next election state is written as data_version 1."""
    ctx = RaftTestContext(local_id=2, voters=[1, 2, 3]).start()
    follow(ctx, leader=1, epoch=1)
    persisted = [r for r in ctx.readies if r.persist is not None]
    assert persisted and all(r.kraft_version == 0 for r in persisted)
    [fetch] = ctx.assert_sent(FetchRequest, destination=1)
    ctx.clear_sent()
    upgraded = ctx.voters  # the static voters, now written as a VotersRecord with kraft.version 1
    ctx.respond(fetch, ctx.fetch_response_with(leader=1, epoch=1, batches=[ctx.voters_batch(0, 1, upgraded, 1)],
                                               high_watermark=1))
    assert ctx.raft.kraft_version == 1
    ctx.readies.clear()
    follow(ctx, leader=3, epoch=2)
    [ready] = [r for r in ctx.readies if r.persist is not None]
    assert ready.persist is not None and ready.persist.epoch == 2 and ready.kraft_version == 1


def test_a_removed_replica_whose_log_alone_can_win_still_campaigns() -> None:
    """Deliberately not Kafka 4.x: Kafka's removed replica never campaigns,
    which leaves a two-voter quorum leaderless forever when the leader
    removed itself and the other voter lacks the record (its log is behind,
    so the removed replica refuses its votes). Here a replica whose own
    removal is uncommitted and that refused a (pre-)vote for a log behind its
    own campaigns, counting only its latest voter set (found by the
    reconfiguration sweep, seeds 5025 and 5275)."""
    ctx = RaftTestContext(local_id=1, voters=[1, 2], dynamic=True).start()
    follow(ctx, leader=2, epoch=1)
    alone = ctx.voters.remove_voter(ctx.key(1))
    assert alone is not None
    [fetch] = ctx.assert_sent(FetchRequest, destination=2)
    ctx.clear_sent()
    ctx.respond(fetch, ctx.fetch_response_with(leader=2, epoch=1, batches=[ctx.voters_batch(0, 1, alone)],
                                               high_watermark=0))
    assert ctx.raft.quorum.is_observer
    ctx.advance(3 * ctx.config.fetch_timeout_ms)
    assert not ctx.find_sent(VoteRequest), "Kafka's rule: an observer does not campaign"
    # Voter 2 (the leader restarted without the record) asks; its log is behind.
    ctx.clear_sent()
    ctx.deliver(ctx.vote_request(candidate=2, epoch=ctx.epoch, last_offset=0, last_epoch=0, pre_vote=True), source=2)
    assert ctx.assert_response(VoteResponse).vote_granted is False
    ctx.advance(3 * ctx.config.election_timeout_ms)
    [ask] = [m for m in ctx.find_sent(VoteRequest, pre_vote=True) if m.destination == 2][:1]
    assert ask.message.candidate_key == ctx.key(1), "only this replica can break the tie"
