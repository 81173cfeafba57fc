"""The witness voter (kraft/raft/witness_policy.py): the pure policy, and the raft
core's two hooks -- an election timeout starts no candidacy, and a leader that
learns it is a witness resigns at once naming the Kafka voters first.

Kafka has no witness role; what a witness still does is Kafka's
(``KafkaRaftClient.handleVoteRequest``, ``handleBeginQuorumEpochRequest``,
``FollowerState``), and the resignation is Kafka's ``LeaderState`` ->
``ResignedState`` path with ``EndQuorumEpoch`` preferred successors
(``KafkaRaftClient.maybeSendEndQuorumEpoch``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kraft.raft.rpcs import EndQuorumEpochRequest, FetchRequest, VoteRequest, VoteResponse
from kraft.raft.roles import Follower, Leader, Prospective, Resigned, Unattached
from kraft.raft.voters import ReplicaKey
from kraft.raft.witness_policy import (
    KAFKA_CONTROLLER_APIS,
    WitnessMode,
    WitnessPolicy,
    kafka_controller_apis,
    votes_needed_from_others,
)
from tests.harness.raft_context import RaftTestContext

#: What a kraft node advertises on its controller listener (kraft/node/node.py).
KRAFT_APIS = (1, 17, 18, 36, 52, 53, 54, 55, 57, 59, 60, 3, 80, 81, 82)
#: Some of what a Kafka 4.0 controller advertises (see the fixture test below).
KAFKA_APIS = KRAFT_APIS + (19, 62, 63, 67, 70)

from tests.conftest import FIXTURES
FRAMES = FIXTURES / "wire" / "kafka-4.0-controller-frames.jsonl"


# --- the policy -----------------------------------------------------------------


def test_votes_needed_from_others_is_a_majority_less_the_own_vote() -> None:
    assert [votes_needed_from_others(n) for n in (1, 2, 3, 4, 5)] == [0, 1, 1, 2, 2]


def test_auto_waits_for_enough_apiversions_before_campaigning() -> None:
    policy = WitnessPolicy()
    decision = policy.decide(3, {1, 2, 3})
    assert (decision.witness, decision.may_campaign, decision.state) == (False, False, "undecided")
    assert "heard ApiVersions from 0 of the 1 other voter a candidacy needs" in decision.reason
    assert "0 of the 2 other voters" in policy.decide(5, {1, 2, 3, 4, 5}).reason
    policy.heard(1, KRAFT_APIS)
    decision = policy.decide(3, {1, 2, 3})
    assert decision.state == "voter" and "voter 1 answered ApiVersions as a kraft node (" in decision.reason
    policy.heard(2, KRAFT_APIS)
    assert "voters 1, 2 answered ApiVersions as kraft nodes (" in policy.decide(3, {1, 2, 3}).reason


def test_one_kafka_voter_makes_a_witness_whatever_else_was_heard() -> None:
    policy = WitnessPolicy()
    policy.heard(1, KRAFT_APIS)
    policy.heard(2, KAFKA_APIS)
    decision = policy.decide(3, {1, 2, 3})
    assert decision.state == "witness"
    assert decision.reason.startswith("voter 2 advertises Kafka controller APIs kraft lacks (CreateTopics")
    assert policy.resign_reason(3, {1, 2, 3}) == f"witness: {decision.reason}"
    # Only current voters count: voter 2 removed, a kraft quorum again.
    assert policy.decide(3, {1, 3}).state == "voter"


def test_log_evidence_is_sticky_and_forced_modes_ignore_evidence() -> None:
    policy = WitnessPolicy()
    assert policy.found_in_log("metadata.version FeatureLevelRecord at offset 2")
    assert not policy.found_in_log("RegisterBrokerRecord at offset 9")
    policy.heard(1, KRAFT_APIS)
    decision = policy.decide(3, {1, 2, 3})
    assert decision.witness and "metadata.version FeatureLevelRecord at offset 2" in decision.reason
    # Every other voter a kraft node: no Kafka controller to leave it to.
    policy.heard(2, KRAFT_APIS)
    assert policy.decide(3, {1, 2, 3}).state == "voter"
    never = WitnessPolicy(WitnessMode.NEVER)
    never.heard(1, KAFKA_APIS)
    assert never.decide(3, {1, 2, 3}).describe() == "voter: kraft.witness=false"
    assert WitnessPolicy.forced().decide(3, {3}).describe() == "witness: kraft.witness=true"


def test_the_only_voter_campaigns_in_auto_mode() -> None:
    assert WitnessPolicy().decide(1, {1}).state == "voter"


def test_mode_parse() -> None:
    assert WitnessMode.parse(" TRUE ") is WitnessMode.ALWAYS
    with pytest.raises(ValueError, match="auto, true or false"):
        WitnessMode.parse("maybe")


def test_preferred_successors_put_kafka_voters_first() -> None:
    policy = WitnessPolicy()
    policy.heard(2, KRAFT_APIS)
    policy.heard(3, KAFKA_APIS)
    keys = (ReplicaKey(2), ReplicaKey(3))
    assert policy.preferred_successors(keys) == (ReplicaKey(3),)
    assert WitnessPolicy().preferred_successors(keys) == keys


def test_a_real_kafka_4_0_controller_is_recognised() -> None:
    """Every ApiVersions answer a real Kafka 4.0 controller gave advertises
    BrokerRegistration, BrokerHeartbeat and CreateTopics; kraft's own answer
    none of the Kafka controller APIs."""
    from kraft.messages.generated.api_versions_response import ApiVersionsResponse
    from kraft.node.node import SUPPORTED_APIS

    answers = [json.loads(line) for line in FRAMES.read_text().splitlines()]
    answers = [a for a in answers if a["api"] == "ApiVersions" and a["direction"] == "response"]
    assert answers
    for answer in answers:
        frame = bytes.fromhex(answer["frameHex"])
        # ApiVersions responses always have header v0 (the correlation id alone).
        body = ApiVersionsResponse.decode(frame[4 + 4:], version=answer["apiVersion"])
        keys = {k.api_key for k in body.api_keys}
        assert {"BrokerRegistration", "BrokerHeartbeat", "CreateTopics"} <= set(kafka_controller_apis(keys))
    assert not set(int(k) for k in SUPPORTED_APIS) & set(KAFKA_CONTROLLER_APIS)


# --- the core's hooks -------------------------------------------------------------


def witness(**kwargs: object) -> RaftTestContext:
    return RaftTestContext(local_id=3, campaign_policy=WitnessPolicy.forced(), **kwargs).start()  # type: ignore[arg-type]


def test_a_witness_never_becomes_prospective_on_its_election_timeout() -> None:
    ctx = witness()
    for _ in range(5):
        ctx.advance(2 * ctx.config.election_timeout_ms)
        assert isinstance(ctx.role, Unattached) and ctx.epoch == 0
    ctx.assert_not_sent(VoteRequest)
    # It keeps looking for a leader meanwhile.
    ctx.assert_sent(FetchRequest)
    assert ctx.next_deadline_ms is not None


def test_a_witness_grants_votes_and_follows() -> None:
    ctx = witness()
    ctx.deliver(ctx.vote_request(candidate=1, epoch=1), source=1)
    assert ctx.assert_response(VoteResponse).vote_granted
    ctx.follow(leader=1, epoch=1)
    assert isinstance(ctx.role, Follower)
    ctx.advance(3 * ctx.config.fetch_timeout_ms)
    # The leader went silent: no candidacy, still a follower fetching.
    assert isinstance(ctx.role, Follower) and ctx.epoch == 1
    ctx.assert_not_sent(VoteRequest)
    ctx.assert_sent(FetchRequest)
    # And it supports another voter's pre-vote, as the Prospective it would
    # have become does (else a dead leader's witness blocks every election).
    ctx.deliver(ctx.vote_request(candidate=2, epoch=1, pre_vote=True), source=2)
    assert ctx.assert_response(VoteResponse).vote_granted


def test_a_witness_that_fetched_recently_protects_its_leader_from_pre_votes() -> None:
    ctx = witness().follow(leader=1, epoch=1)
    ctx.respond(ctx.last_sent(FetchRequest), ctx.fetch_response(epoch=1, leader=1, high_watermark=0))
    ctx.deliver(ctx.vote_request(candidate=2, epoch=1, pre_vote=True), source=2)
    assert not ctx.assert_response(VoteResponse).vote_granted


def test_the_only_voter_as_witness_never_elects_itself() -> None:
    ctx = RaftTestContext(local_id=1, voters=[1], campaign_policy=WitnessPolicy.forced()).start()
    ctx.advance(5 * ctx.config.election_timeout_ms)
    assert not isinstance(ctx.role, (Prospective, Leader))


def test_a_pre_vote_in_flight_does_not_become_a_candidacy_once_a_witness() -> None:
    policy = WitnessPolicy()
    policy.heard(1, KRAFT_APIS)
    ctx = RaftTestContext(local_id=3, campaign_policy=policy).start()
    ctx.advance(2 * ctx.config.election_timeout_ms)
    assert isinstance(ctx.role, Prospective)
    [pre_vote] = ctx.assert_sent(VoteRequest, destination=1, pre_vote=True)
    policy.heard(2, KAFKA_APIS)  # detection arrives while canvassing
    ctx.respond(pre_vote, ctx.vote_response(granted=True, epoch=0))
    assert not isinstance(ctx.role, Leader) and ctx.epoch == 0
    ctx.assert_not_sent(VoteRequest, pre_vote=False)


def test_a_leader_that_learns_it_is_a_witness_resigns_naming_kafka_voters() -> None:
    policy = WitnessPolicy()
    policy.heard(1, KRAFT_APIS)
    ctx = RaftTestContext(local_id=3, campaign_policy=policy).start().elect_local()
    assert isinstance(ctx.role, Leader)
    policy.heard(2, KAFKA_APIS)
    ctx.poll()
    assert isinstance(ctx.role, Resigned)
    for destination in (1, 2):
        [end] = ctx.assert_sent(EndQuorumEpochRequest, destination=destination)
        assert end.message.preferred_candidates == (ReplicaKey(2),)
    ctx.advance(3 * ctx.config.election_timeout_ms)
    assert not isinstance(ctx.role, (Leader, Prospective))


def test_without_a_policy_nothing_changes() -> None:
    ctx = RaftTestContext(local_id=3).start()
    ctx.advance(2 * ctx.config.election_timeout_ms)
    assert isinstance(ctx.role, Prospective)


def test_a_witness_takes_part_in_kip_853_it_tells_the_leader_its_listeners() -> None:
    """A witness follower sends UpdateRaftVoter as any voter does (what the
    leader of a static quorum waits for before a kraft.version upgrade, and
    what keeps a dynamic voter set's listeners current)."""
    from kraft.raft.rpcs import UpdateRaftVoterRequest, UpdateRaftVoterResponse
    from kraft.raft.voters import VoterNode

    ctx = RaftTestContext(local_id=2, voters=[1, 2, 3], dynamic=True, campaign_policy=WitnessPolicy.forced())
    stale = ctx.voters.update_voter(VoterNode(ctx.key(2), ctx.endpoints(2, 1111), (0, 1)))
    assert stale is not None
    ctx.log.bootstrap(stale.to_entries())
    ctx.start().clear_sent().deliver(ctx.begin_quorum_epoch(leader=1, epoch=1), source=1)
    [update] = ctx.assert_sent(UpdateRaftVoterRequest, destination=1)
    assert update.message.listeners == ctx.endpoints(2)
    ctx.respond(update, UpdateRaftVoterResponse(leader_id=1, leader_epoch=1, leader_endpoints=ctx.endpoints(1)))
    assert isinstance(ctx.role, Follower)
