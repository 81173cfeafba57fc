"""Misbehaving or confused peers get Kafka's error codes, never an exception.

Each request passes one gate (cluster id, partition, field sanity, epoch,
membership) before its handler runs; this module covers that gate."""

from __future__ import annotations

import dataclasses

import pytest

from kraft.raft.errors import Errors
from kraft.raft.events import OutboundRequest, TopicPartition
from kraft.raft.rpcs import BeginQuorumEpochResponse, EndQuorumEpochResponse, FetchRequest, FetchResponse, FetchSnapshotResponse, VoteResponse
from kraft.records.view import OffsetAndEpoch
from kraft.raft.roles import Follower, Leader, Unattached
from kraft.raft.voters import ReplicaKey
from tests.harness.raft_context import RaftTestContext

OTHER_PARTITION = TopicPartition("__cluster_metadata", 1)


def test_error_codes_are_kafkas() -> None:
    """org.apache.kafka.common.protocol.Errors: the codes the KRaft RPCs use."""
    used = {
        "UNKNOWN_SERVER_ERROR": -1,
        "NONE": 0,
        "OFFSET_OUT_OF_RANGE": 1,
        "UNKNOWN_TOPIC_OR_PARTITION": 3,
        "NOT_LEADER_OR_FOLLOWER": 6,
        "REQUEST_TIMED_OUT": 7,
        "BROKER_NOT_AVAILABLE": 8,
        "CLUSTER_AUTHORIZATION_FAILED": 31,
        "UNSUPPORTED_VERSION": 35,
        "INVALID_REQUEST": 42,
        "FENCED_LEADER_EPOCH": 74,
        "UNKNOWN_LEADER_EPOCH": 75,
        "INCONSISTENT_VOTER_SET": 94,
        "SNAPSHOT_NOT_FOUND": 98,
        "POSITION_OUT_OF_RANGE": 99,
        "INCONSISTENT_CLUSTER_ID": 104,
        "INVALID_VOTER_KEY": 125,
        "DUPLICATE_VOTER": 126,
        "VOTER_NOT_FOUND": 127,
    }
    assert {name: Errors[name].value for name in used} == used


def at_epoch(epoch: int = 5) -> RaftTestContext:
    return RaftTestContext(local_id=1).with_log((epoch, 2)).start()


def leader() -> RaftTestContext:
    return RaftTestContext(local_id=1).with_log((1, 2)).start().elect_local()


# --- stale and future epochs ---------------------------------------------------------


def test_a_stale_vote_is_fenced() -> None:
    ctx = at_epoch(5)
    ctx.deliver(ctx.vote_request(candidate=2, epoch=4, last_epoch=1, last_offset=0), source=2)
    response = ctx.assert_response(VoteResponse)
    assert response.partition_error is Errors.FENCED_LEADER_EPOCH and response.leader_epoch == 5
    assert not response.vote_granted and ctx.epoch == 5


@pytest.mark.parametrize("kind", ["begin", "end"])
def test_a_stale_leader_announcement_is_fenced(kind: str) -> None:
    ctx = at_epoch(5)
    msg = (
        ctx.begin_quorum_epoch(leader=2, epoch=3)
        if kind == "begin"
        else ctx.end_quorum_epoch(leader=2, epoch=3, preferred=[1])
    )
    ctx.deliver(msg, source=2)
    response = ctx.assert_response(BeginQuorumEpochResponse if kind == "begin" else EndQuorumEpochResponse)
    assert response.partition_error is Errors.FENCED_LEADER_EPOCH and response.leader_epoch == 5
    assert isinstance(ctx.role, Unattached)


def test_a_fetch_from_a_stale_epoch_is_fenced_and_told_the_leader() -> None:
    ctx = leader()
    ctx.deliver(
        ctx.fetch_request(replica=2, fetch_offset=0, last_fetched_epoch=0, epoch=ctx.epoch - 1), source=2
    )
    response = ctx.assert_response(FetchResponse)
    assert response.partition_error is Errors.FENCED_LEADER_EPOCH
    assert (response.leader_id, response.leader_epoch) == (1, ctx.epoch)


def test_a_fetch_from_a_future_epoch_is_unknown_leader_epoch_and_changes_nothing() -> None:
    """Only a leader of exactly that epoch serves Fetch: no transition."""
    ctx = leader()
    epoch = ctx.epoch
    ctx.deliver(ctx.fetch_request(replica=2, fetch_offset=0, last_fetched_epoch=0, epoch=epoch + 3), source=2)
    assert ctx.assert_response(FetchResponse).partition_error is Errors.UNKNOWN_LEADER_EPOCH
    assert isinstance(ctx.role, Leader) and ctx.epoch == epoch


def test_a_fetch_to_a_non_leader_is_not_leader_or_follower() -> None:
    ctx = at_epoch(5)
    ctx.follow(leader=2, epoch=5)
    ctx.deliver(ctx.fetch_request(replica=3, fetch_offset=0, last_fetched_epoch=0, epoch=5), source=3)
    response = ctx.assert_response(FetchResponse)
    assert response.partition_error is Errors.NOT_LEADER_OR_FOLLOWER and response.leader_id == 2


def test_a_higher_epoch_in_a_real_vote_is_adopted_first() -> None:
    ctx = at_epoch(5)
    ctx.follow(leader=2, epoch=5)
    ctx.deliver(ctx.vote_request(candidate=3, epoch=6), source=3)
    assert ctx.epoch == 6 and not isinstance(ctx.role, Follower)


# --- membership ----------------------------------------------------------------------------


def test_a_vote_from_outside_the_static_voters_is_checked_for_epoch_and_id_only() -> None:
    """kraft.version 0, Kafka 3.9+/4.x ``KafkaRaftClient.validateVoterOnlyRequest``:
    only the epoch and a non-negative id are checked, not membership -- no
    INCONSISTENT_VOTER_SET. The higher epoch is adopted first
    (``handleVoteRequest``: ``transitionToUnattached``) and the vote follows
    ``UnattachedState.canGrantVote``."""
    ctx = at_epoch(5)
    ctx.deliver(ctx.vote_request(candidate=7, epoch=6), source=7)
    response = ctx.assert_response(VoteResponse)
    assert response.partition_error is Errors.NONE and response.vote_granted
    assert ctx.epoch == 6 and ctx.persisted is not None and ctx.persisted.voted_key == ctx.key(7)
    # A stale epoch is still fenced, a negative id still invalid.
    ctx.clear_sent()
    ctx.deliver(ctx.vote_request(candidate=8, epoch=5, last_epoch=4), source=8)
    assert ctx.assert_response(VoteResponse).partition_error is Errors.FENCED_LEADER_EPOCH
    ctx.clear_sent()
    ctx.deliver(ctx.vote_request(candidate=-3, epoch=7), source=3)
    assert ctx.assert_response(VoteResponse).partition_error is Errors.INVALID_REQUEST
    assert ctx.epoch == 6


def test_a_begin_quorum_epoch_from_outside_the_static_voters_is_followed() -> None:
    """kraft.version 0, ``validateVoterOnlyRequest`` then ``maybeTransition``
    (Kafka 4.x ``handleBeginQuorumEpochRequest``): the announced leader of a
    newer epoch is adopted whether or not it is a configured voter."""
    ctx = at_epoch(5)
    ctx.deliver(ctx.begin_quorum_epoch(leader=7, epoch=6), source=7)
    assert ctx.assert_response(BeginQuorumEpochResponse).partition_error is Errors.NONE
    assert ctx.epoch == 6 and ctx.raft.leader_id == 7


def test_a_vote_meant_for_another_replica_is_invalid_voter_key() -> None:
    """KIP-853: VoterId names the intended receiver."""
    ctx = at_epoch(5)
    ctx.deliver(ctx.vote_request(candidate=2, epoch=6, voter=3), source=2)
    response = ctx.assert_response(VoteResponse)
    assert response.partition_error is Errors.INVALID_VOTER_KEY and not response.vote_granted


def test_a_vote_claiming_to_come_from_ourselves_is_invalid() -> None:
    ctx = at_epoch(5)
    ctx.deliver(ctx.vote_request(candidate=1, epoch=6), source=2)
    assert ctx.assert_response(VoteResponse).partition_error is Errors.INVALID_REQUEST


def test_a_second_leader_for_our_epoch_is_refused() -> None:
    """Two leaders in one epoch cannot happen in a correct cluster: refuse it,
    report it, change nothing."""
    ctx = at_epoch(5)
    ctx.follow(leader=2, epoch=5)
    ready = ctx.deliver(ctx.begin_quorum_epoch(leader=3, epoch=5), source=3)
    assert ctx.assert_response(BeginQuorumEpochResponse).partition_error is Errors.INVALID_REQUEST
    assert isinstance(ctx.role, Follower) and ctx.role.leader_id == 2
    assert ready.violations and ready.persist is None


# --- malformed requests ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        {"fetch_offset": -1},
        {"last_fetched_epoch": -1},
        {"max_wait_ms": -5},
        {"last_fetched_epoch": 99},  # beyond the current leader epoch
    ],
)
def test_a_fetch_at_a_bogus_position_is_invalid_request(change: dict) -> None:
    ctx = leader()
    request = dataclasses.replace(
        ctx.fetch_request(replica=2, fetch_offset=0, last_fetched_epoch=0), **change
    )
    ctx.deliver(request, source=2)
    assert ctx.assert_response(FetchResponse).partition_error is Errors.INVALID_REQUEST


def test_a_fetch_claiming_to_come_from_the_leader_itself_is_invalid() -> None:
    ctx = leader()
    ctx.deliver(ctx.fetch_request(replica=1, fetch_offset=0, last_fetched_epoch=0), source=1)
    assert ctx.assert_response(FetchResponse).partition_error is Errors.INVALID_REQUEST


@pytest.mark.parametrize(("last_epoch", "pre_vote"), [(6, False), (7, True), (-1, False)])
def test_a_vote_with_an_impossible_log_end_is_invalid_request(last_epoch: int, pre_vote: bool) -> None:
    """A candidate's last epoch is below its bumped epoch (a pre-vote's at most equal)."""
    ctx = at_epoch(5)
    ctx.deliver(
        ctx.vote_request(candidate=2, epoch=6, last_epoch=last_epoch, last_offset=1, pre_vote=pre_vote),
        source=2,
    )
    assert ctx.assert_response(VoteResponse).partition_error is Errors.INVALID_REQUEST
    assert ctx.epoch == 5


def test_requests_for_another_partition() -> None:
    """Until multi-raft Kafka treats a partition mismatch as INVALID_REQUEST;
    FetchSnapshot answers UNKNOWN_TOPIC_OR_PARTITION."""
    ctx = leader()
    ctx.deliver(
        dataclasses.replace(ctx.vote_request(candidate=2, epoch=9), topic_partition=OTHER_PARTITION), source=2
    )
    assert ctx.assert_response(VoteResponse).error is Errors.INVALID_REQUEST
    ctx.clear_sent()
    ctx.deliver(
        dataclasses.replace(
            ctx.fetch_request(replica=2, fetch_offset=0, last_fetched_epoch=0),
            topic_partition=OTHER_PARTITION,
        ),
        source=2,
    )
    assert ctx.assert_response(FetchResponse).error is Errors.INVALID_REQUEST
    ctx.clear_sent()
    ctx.deliver(
        dataclasses.replace(
            ctx.fetch_snapshot_request(replica=2, snapshot_id=OffsetAndEpoch(1, 1), position=0),
            topic_partition=OTHER_PARTITION,
        ),
        source=2,
    )
    assert ctx.assert_response(FetchSnapshotResponse).partition_error is Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert isinstance(ctx.role, Leader)


def test_requests_from_another_cluster_are_inconsistent_cluster_id() -> None:
    ctx = leader()
    ctx.deliver(dataclasses.replace(ctx.vote_request(candidate=2, epoch=9), cluster_id="other"), source=2)
    assert ctx.assert_response(VoteResponse).error is Errors.INCONSISTENT_CLUSTER_ID
    ctx.clear_sent()
    ctx.deliver(
        dataclasses.replace(
            ctx.fetch_request(replica=2, fetch_offset=0, last_fetched_epoch=0), cluster_id="other"
        ),
        source=2,
    )
    assert ctx.assert_response(FetchResponse).error is Errors.INCONSISTENT_CLUSTER_ID
    assert isinstance(ctx.role, Leader)


def test_a_request_without_a_cluster_id_is_accepted() -> None:
    """Kafka does not enforce the cluster id when the request has none."""
    ctx = at_epoch(5)
    ctx.deliver(dataclasses.replace(ctx.vote_request(candidate=2, epoch=6), cluster_id=None), source=2)
    assert ctx.assert_response(VoteResponse).vote_granted


# --- responses we cannot accept ----------------------------------------------------------


def test_a_stale_response_is_ignored() -> None:
    ctx = at_epoch(5)
    ctx.follow(leader=2, epoch=5)
    fetch = ctx.last_sent(FetchRequest, destination=2)
    ctx.deliver(ctx.begin_quorum_epoch(leader=3, epoch=6), source=3)
    ctx.clear_sent()
    # The answer to the epoch-5 fetch arrives after we moved on: dropped.
    ready = ctx.respond(fetch, ctx.fetch_response(leader=2, epoch=5, records=[(2, 5, 3)]))
    assert not ready.log and ctx.log.end_offset == 2


def test_a_response_from_a_peer_we_never_asked_is_ignored() -> None:
    ctx = at_epoch(5)
    bogus = OutboundRequest(3, 424242, ctx.vote_request(candidate=1, epoch=6))
    ready = ctx.respond(bogus, ctx.vote_response(granted=True, epoch=6))
    assert ctx.epoch == 5 and not ready.send and isinstance(ctx.role, Unattached)


def test_the_voter_key_is_checked_after_the_epoch_is_adopted() -> None:
    ctx = at_epoch(5)
    ctx.deliver(ctx.begin_quorum_epoch(leader=2, epoch=7), source=2)
    assert ctx.epoch == 7
    assert ctx.raft.quorum.local_key == ReplicaKey(1)


def test_an_answer_of_the_wrong_type_is_refused() -> None:
    """A peer answering our Fetch with a VoteResponse breaks the protocol."""
    ctx = at_epoch(5)
    ctx.follow(leader=2, epoch=5)
    fetch = ctx.last_sent(FetchRequest, destination=2)
    ready = ctx.respond(fetch, ctx.vote_response(granted=True, epoch=5, leader=2))
    assert (
        ready.violations and "answered a FetchRequest with a VoteResponse" in ready.violations[0].description
    )
    assert isinstance(ctx.role, Follower)


def test_a_negative_diverging_epoch_is_refused() -> None:
    ctx = at_epoch(5)
    ctx.follow(leader=2, epoch=5)
    fetch = ctx.last_sent(FetchRequest, destination=2)
    ready = ctx.respond(fetch, ctx.fetch_response(leader=2, epoch=5, diverging_epoch=OffsetAndEpoch(-3, 2)))
    assert ready.violations and not ready.log and ctx.log.end_offset == 2
