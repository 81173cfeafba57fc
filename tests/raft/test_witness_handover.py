"""Hand-over leadership (kraft/raft/handover.py): a witness whose log is ahead
of every reachable voter that may lead campaigns, leads an epoch that appends
only the LeaderChange control record, and resigns as soon as such a voter has
fetched its log, naming the caught-up voters as preferred successors.

What settles the details is Kafka's code:

* the new leader's only record: ``KafkaRaftClient.onBecomeLeader`` ->
  ``LeaderState.appendStartOfEpochControlRecords`` (LeaderChangeMessage);
* resignation: ``KafkaRaftClient.pollLeader`` -> ``transitionToResigned(
  state.nonLeaderVotersByDescendingFetchOffset())`` -> ``ResignedState``,
  whose ``preferredSuccessors`` go into every EndQuorumEpoch
  (``buildEndQuorumEpochRequest``), most caught up first; the first named
  starts its election at once (``handleEndQuorumEpochRequest`` ->
  ``endEpochElectionBackoff`` -> ``strictExponentialElectionBackoffMs(0, n) == 0``);
* ``ResignedState.canGrantVote``: a pre-vote for an up-to-date log, no vote
  in its own epoch; the successor's real vote (epoch + 1) moves it to
  Unattached, which grants an up-to-date log (``UnattachedState.canGrantVote``).
"""

from __future__ import annotations

import pytest

from kraft.node.raft_metrics import current_state
from kraft.raft.errors import Errors, NotLeaderError
from kraft.raft.rpcs import EndQuorumEpochRequest, FetchResponse, VoteRequest, VoteResponse
from kraft.raft.handover import HandoverStats, decide
from kraft.raft.roles import Candidate, Follower, Leader, Prospective, Resigned, Unattached
from kraft.raft.voters import ReplicaKey
from kraft.raft.witness_policy import WitnessPolicy
from kraft.records.view import OffsetAndEpoch
from tests.harness.raft_context import RaftTestContext
from tests.raft.elections import campaign_won_by_one_vote
from tests.raft.test_witness import KAFKA_APIS

# --- the rule ----------------------------------------------------------------------


def test_the_rule_needs_a_reachable_voter_strictly_behind() -> None:
    ours = OffsetAndEpoch(10, 1)
    nobody = decide(3, ours, (1, 2, 3), {1, 2}, {})
    assert not nobody.allowed and "nobody to hand the log to" in nobody.reason
    assert nobody.reason.startswith("no leader and none of the voters 1, 2 that may lead is reachable: ")
    one = decide(3, ours, (1, 2, 3), {1}, {})
    assert one.reason.startswith("no leader and voter 1, the only voter that may lead, is not reachable: "), one.reason
    behind = decide(3, ours, (1, 2, 3), {1, 2}, {2: OffsetAndEpoch(5, 1)})
    assert behind.allowed and "2 at offset 5 epoch 1" in behind.reason
    # An equal log can win with our vote: Raft's own election, no hand-over.
    level = decide(3, ours, (1, 2, 3), {1, 2}, {2: OffsetAndEpoch(10, 1)})
    assert not level.allowed and "voter 2 has a log as long as ours" in level.reason
    # A later epoch beats a longer log (Raft's comparison: epoch first).
    assert not decide(3, ours, (1, 2, 3), {1, 2}, {2: OffsetAndEpoch(3, 2)}).allowed
    # Any voter that may lead and has a log as long as ours blocks it.
    assert not decide(3, ours, (1, 2, 3), {1, 2}, {1: OffsetAndEpoch(11, 1), 2: OffsetAndEpoch(5, 1)}).allowed
    # A voter that may not lead (another witness) is nobody to hand to.
    assert not decide(3, ours, (1, 2, 3), {1}, {2: OffsetAndEpoch(5, 1)}).allowed
    # Five voters: ourselves and one behind voter are no majority.
    few = decide(5, ours, (1, 2, 3, 4, 5), {1, 2, 3, 4}, {2: OffsetAndEpoch(5, 1)})
    assert not few.allowed and "cannot elect" in few.reason


# --- the core ------------------------------------------------------------------------


def kafka_witness() -> tuple[RaftTestContext, WitnessPolicy]:
    """Node 3, a kraft witness beside Kafka controllers 1 and 2 (auto-detected),
    with ten records of epoch 1 that leader 1 committed with it; leader 1 is
    gone, controller 2 has only the first five."""
    policy = WitnessPolicy()
    policy.heard(1, KAFKA_APIS)
    policy.heard(2, KAFKA_APIS)
    ctx = RaftTestContext(local_id=3, campaign_policy=policy).with_log((1, 10)).start().follow(leader=1, epoch=1)
    return ctx, policy


def notices(ctx: RaftTestContext) -> list[str]:
    return [n for ready in ctx.readies for n in ready.notices]


def take_handover_epoch(ctx: RaftTestContext) -> None:
    """Controller 2 (log end 5) canvasses, is refused, and the witness then
    campaigns itself and wins with 2's votes."""
    ctx.advance(ctx.config.fetch_timeout_ms + 1)
    ctx.deliver(ctx.vote_request(candidate=2, epoch=2, last_offset=5, last_epoch=1, pre_vote=True), source=2)
    assert not ctx.assert_response(VoteResponse).vote_granted  # Raft: 2's log is shorter
    campaign_won_by_one_vote(ctx, 2)
    assert ctx.epoch == 2


def test_a_witness_without_a_reachable_kafka_voter_never_leads_and_says_so_once() -> None:
    ctx, _ = kafka_witness()
    for _ in range(5):
        ctx.advance(2 * ctx.config.fetch_timeout_ms)
    assert not isinstance(ctx.role, (Prospective, Candidate, Leader))
    ctx.assert_not_sent(VoteRequest)
    said = [n for n in notices(ctx) if "nobody to hand the log to" in n]
    assert len(said) == 1 and said[0].startswith("kraft.witness: no leader and none of the voters 1, 2")


def test_a_witness_ahead_of_the_kafka_survivor_leads_only_to_hand_the_log_over() -> None:
    ctx, _ = kafka_witness()
    take_handover_epoch(ctx)
    leader = ctx.role
    assert isinstance(leader, Leader) and leader.state.handover is not None
    change = [rc for r in ctx.readies for rc in r.role_changes if rc.role == "Leader"][-1]
    assert "hand-over epoch" in change.reason
    # Its only record: LeaderChange (LeaderState.appendStartOfEpochControlRecords).
    new = [b for b in ctx.log.batches if b.epoch == 2]
    assert len(new) == 1 and new[0].control and len(new[0].records) == 1
    assert ctx.log.end_offset == 11
    # The current-state metric says so (kraft/node/raft_metrics.py).
    assert current_state(leader, True, True, ctx.raft.handover_leadership is not None) == "witness-handover"
    # It refuses the embedder's appends.
    with pytest.raises(NotLeaderError, match="hand the log over"):
        ctx.raft.append(ctx.now_ms, [b"controller record"])
    # Controller 2 fetches from its log end: the records it lacks, then the end.
    ctx.deliver(ctx.fetch_request(replica=2, fetch_offset=5, last_fetched_epoch=1), source=2)
    first = ctx.assert_response(FetchResponse)
    assert first.partition_error is Errors.NONE and first.records
    assert isinstance(ctx.role, Leader)  # 2 is not at the log end yet
    ctx.deliver(ctx.fetch_request(replica=2, fetch_offset=11, last_fetched_epoch=2), source=2)
    ctx.advance(1)
    # Caught up: it resigns at once, naming 2 (pollLeader -> transitionToResigned).
    assert isinstance(ctx.role, Resigned) and ctx.epoch == 2
    assert ctx.role.preferred_successors == (ReplicaKey(2),)
    for destination in (1, 2):
        [end] = ctx.assert_sent(EndQuorumEpochRequest, destination=destination)
        assert end.message.preferred_candidates == (ReplicaKey(2),)
    resigned = [rc for r in ctx.readies for rc in r.role_changes if rc.role == "Resigned"][-1]
    assert resigned.reason.startswith("hand-over complete: voter 2 fetched up to the log end (offset 11) after ")
    stats = ctx.raft.handover_stats
    assert stats.epochs == 1 and stats.total_ms >= 0
    # Then it votes for its successor: the pre-vote (ResignedState.canGrantVote)
    # and the vote of epoch 3 (Unattached in epoch 3 grants an up-to-date log).
    ctx.clear_sent().deliver(
        ctx.vote_request(candidate=2, epoch=3, last_offset=11, last_epoch=2, pre_vote=True), source=2)
    assert ctx.assert_response(VoteResponse).vote_granted
    ctx.clear_sent().deliver(ctx.vote_request(candidate=2, epoch=3, last_offset=11, last_epoch=2), source=2)
    assert ctx.assert_response(VoteResponse).vote_granted
    ctx.follow(leader=2, epoch=3)
    assert isinstance(ctx.role, Follower)
    # It never takes another hand-over epoch while 2's log is as long as its own.
    ctx.advance(3 * ctx.config.fetch_timeout_ms)
    ctx.deliver(ctx.vote_request(candidate=2, epoch=4, last_offset=11, last_epoch=2, pre_vote=True), source=2)
    ctx.advance(3 * ctx.config.election_timeout_ms)
    assert ctx.raft.handover_stats.epochs == 1
    assert not isinstance(ctx.role, Leader)


def test_a_resigned_leader_grants_pre_votes_only_for_an_up_to_date_log() -> None:
    """Kafka 4.x ``ResignedState.canGrantVote``: ``isPreVote && isLogUpToDate``."""
    ctx = RaftTestContext(local_id=1).start().elect_local()
    ctx.raft.resign(ctx.epoch)
    ctx.poll()
    assert isinstance(ctx.role, Resigned)
    ctx.deliver(ctx.vote_request(candidate=2, epoch=ctx.epoch + 1, pre_vote=True), source=2)
    assert ctx.assert_response(VoteResponse).vote_granted
    ctx.clear_sent().deliver(
        ctx.vote_request(candidate=2, epoch=ctx.epoch + 1, last_offset=0, last_epoch=0, pre_vote=True), source=2)
    assert not ctx.assert_response(VoteResponse).vote_granted


def test_a_handover_leader_keeps_serving_until_a_voter_that_may_lead_caught_up() -> None:
    """Four voters, Kafka controllers 1, 2 and 4 and the witness 3: 2 and 4
    are behind. Fetching part of the log is not enough; the witness keeps
    serving Fetch (and appends nothing) until its LeaderChange is committed
    and a voter that may lead reached the end, then names the caught-up ones."""
    policy = WitnessPolicy()
    for kafka in (1, 2, 4):
        policy.heard(kafka, KAFKA_APIS)
    ctx = RaftTestContext(local_id=3, voters=(1, 2, 3, 4), campaign_policy=policy).with_log((1, 10)).start()
    ctx.follow(leader=1, epoch=1).advance(ctx.config.fetch_timeout_ms + 1)
    for candidate, end in ((2, 5), (4, 7)):
        ctx.deliver(ctx.vote_request(candidate=candidate, epoch=2, last_offset=end, last_epoch=1, pre_vote=True),
                    source=candidate)
    ctx.advance(2 * ctx.config.election_timeout_ms)
    assert isinstance(ctx.role, Prospective)
    for voter in (2, 4):
        [pre] = ctx.assert_sent(VoteRequest, destination=voter, pre_vote=True)
        ctx.respond(pre, ctx.vote_response(granted=True, epoch=1))
    for voter in (2, 4):
        [vote] = ctx.assert_sent(VoteRequest, destination=voter, pre_vote=False)
        ctx.respond(vote, ctx.vote_response(granted=True, epoch=2))
    assert isinstance(ctx.role, Leader) and ctx.role.state.handover is not None
    ctx.deliver(ctx.fetch_request(replica=4, fetch_offset=7, last_fetched_epoch=1), source=4)
    ctx.deliver(ctx.fetch_request(replica=2, fetch_offset=10, last_fetched_epoch=1), source=2)
    ctx.advance(1)
    assert isinstance(ctx.role, Leader)
    with pytest.raises(NotLeaderError):  # a kraft.version upgrade appends records too
        ctx.raft.upgrade_kraft_version(ctx.now_ms, 1)
    ctx.deliver(ctx.fetch_request(replica=4, fetch_offset=11, last_fetched_epoch=2), source=4)
    ctx.advance(1)
    # 4 has the whole log, but the LeaderChange needs 3 of 4 voters: not
    # committed yet, so nothing is handed over yet (Raft's rule for a new leader).
    assert isinstance(ctx.role, Leader) and ctx.raft.high_watermark is None
    ctx.deliver(ctx.fetch_request(replica=2, fetch_offset=11, last_fetched_epoch=2), source=2)
    ctx.advance(1)
    assert isinstance(ctx.role, Resigned) and ctx.role.preferred_successors == (ReplicaKey(2), ReplicaKey(4))


def test_describe_quorum_of_a_handover_leader_names_it_a_witness() -> None:
    """``kraft quorum describe --status`` lists a witness leading a hand-over
    epoch: its leader's answer (error NONE, which Kafka's tools read no
    message from) carries the witness note."""
    from kraft.messages.generated import describe_quorum_request as dq_req
    from kraft.raft.rpcs.describe_quorum_rpc import note_handover, response_to_wire
    from kraft.tools.quorum_witness import parse_witness_note

    ctx, _ = kafka_witness()
    take_handover_epoch(ctx)
    request = dq_req.DescribeQuorumRequest(topics=[dq_req.TopicData(
        topic_name="__cluster_metadata", partitions=[dq_req.PartitionData(partition_index=0)])])
    info = ctx.raft.describe_quorum(ctx.now_ms)
    assert info is not None
    body = response_to_wire(2, request, info, ctx.raft.quorum.leader_and_epoch, ctx.raft.voters)
    note_handover(body, "leading hand-over epoch 2 until voter 1 or 2 has fetched the log")
    partition = body.topics[0].partitions[0]
    assert partition.error_code == 0 and partition.leader_id == 3
    assert parse_witness_note(partition.error_message) == \
        "leading hand-over epoch 2 until voter 1 or 2 has fetched the log"


def test_log_ends_heard_before_a_leader_was_elected_are_stale() -> None:
    """Voter 2 canvassed with a short log, then won and led (appending
    since); when it resigns (a graceful shutdown), what its old Vote request
    said is no reason to take a hand-over epoch: the witness forgot it when it
    learned of the leader."""
    ctx, _ = kafka_witness()
    ctx.advance(ctx.config.fetch_timeout_ms + 1)
    ctx.deliver(ctx.vote_request(candidate=2, epoch=2, last_offset=5, last_epoch=1, pre_vote=True), source=2)
    ctx.follow(leader=2, epoch=2)
    ctx.deliver(ctx.end_quorum_epoch(leader=2, epoch=2, preferred=[3, 1]), source=2)
    ctx.advance(2 * ctx.config.election_timeout_ms)
    assert not isinstance(ctx.role, (Prospective, Candidate, Leader))
    assert ctx.raft.handover_stats.epochs == 0


def test_kraft_peers_do_not_take_a_handover_leader_for_a_kafka_controller() -> None:
    """While the witness leads a hand-over epoch its ApiVersions adds the
    Kafka controller RPCs it answers with NOT_CONTROLLER, for Kafka brokers
    and admin clients (the Java client names itself ``apache-kafka-java``).
    A kraft voter's witness detection classifies peers by exactly those
    RPCs, so a kraft asker (client software ``kraft``: every kraft probe and
    tool) must hear the witness's own APIs, or it misclassifies it:

    * a kraft-only quorum with a forced witness (``kraft.witness=true``):
      voter 2, the behind voter the witness hands the log to, would decide
      it is a witness itself ("voter 3 advertises Kafka controller APIs")
      and never campaign when the witness resigns in its favour;
    * a second kraft witness (4) beside Kafka controllers 1 and 2 would list
      witness 3 among the voters it hands the log to and prefers as
      successors, though 3 never campaigns."""
    from kraft.node.controller_apis import SUPPORTED_APIS, advertised_apis
    from kraft.raft.witness_policy import kafka_controller_apis
    from kraft.wire.network_client import CLIENT_SOFTWARE_NAME

    ctx, _ = kafka_witness()
    take_handover_epoch(ctx)
    leading = ctx.raft.handover_leadership is not None
    assert leading
    to_kraft = advertised_apis(SUPPORTED_APIS, leading_handover=leading, client_software_name=CLIENT_SOFTWARE_NAME)
    to_kafka = advertised_apis(SUPPORTED_APIS, leading_handover=leading, client_software_name="apache-kafka-java")
    # Kafka's clients are offered what they are redirected on (v0-v2 name no software: the same).
    assert {"BrokerRegistration", "BrokerHeartbeat", "CreateTopics"} <= set(kafka_controller_apis(to_kafka))
    assert to_kafka == advertised_apis(SUPPORTED_APIS, leading_handover=True, client_software_name=None)
    assert kafka_controller_apis(to_kraft) == ()

    kraft_only = WitnessPolicy()
    kraft_only.heard(1, SUPPORTED_APIS)
    kraft_only.heard(3, to_kraft)
    decision = kraft_only.decide(2, (1, 2, 3))
    assert not decision.witness and decision.may_campaign, decision.reason
    # What it would decide had it been offered what Kafka's clients are (the node before this fix).
    misled = WitnessPolicy()
    misled.heard(1, SUPPORTED_APIS)
    misled.heard(3, to_kafka)
    assert misled.decide(2, (1, 2, 3)).reason.startswith("voter 3 advertises Kafka controller APIs")

    second_witness = WitnessPolicy()
    second_witness.heard(1, KAFKA_APIS)
    second_witness.heard(2, KAFKA_APIS)
    second_witness.heard(3, to_kraft)
    assert second_witness.handover_leaders(4, (1, 2, 3, 4)) == {1, 2}
    assert second_witness.preferred_successors((ReplicaKey(3), ReplicaKey(1))) == (ReplicaKey(1),)
