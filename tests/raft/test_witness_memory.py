"""The witness decision across restarts (kraft/raft/witness_policy.py with kraft's
``voter-api-versions`` file, records/voter_api_versions.py).

The defect this rebuilds: a kraft-only quorum of three (``kraft.witness=auto``)
whose log holds Kafka-shaped records (a RegisterBrokerRecord, a
``metadata.version`` FeatureLevelRecord written by an embedding program).
Log evidence makes a voter a witness until every other voter has answered
ApiVersions as a kraft node; one voter dies for good, the two survivors
restart -- and what they heard before was only in memory, so the dead voter
stays unheard and both are witnesses forever: no leader, although 2 of 3
voters are up. Remembered answers fix that, while what the witness exists
for still holds: a voter heard as a Kafka controller stays decisive, and a
voter never heard keeps a node with log evidence a witness.

Kafka has no witness role (and no such file); the elections here are Kafka's
(``KafkaRaftClient`` pre-vote then vote, KIP-996), and the resignation is
Kafka's ``LeaderState`` -> ``ResignedState`` with ``EndQuorumEpoch``
preferred successors."""

from __future__ import annotations

import uuid
from pathlib import Path

from kraft.raft.rpcs import EndQuorumEpochRequest, VoteRequest
from kraft.raft.roles import Candidate, Leader, Prospective, Resigned
from kraft.raft.voters import ReplicaKey
from kraft.raft.witness_policy import WitnessPolicy
from kraft.records.voter_api_versions import RememberedAnswer, read_voter_api_versions, write_voter_api_versions
from tests.harness.raft_context import RaftTestContext
from tests.raft.elections import campaign_won_by_one_vote
from tests.raft.test_witness import KAFKA_APIS, KRAFT_APIS

#: What the scan of a kraft-only log with Kafka-shaped records finds.
LOG_EVIDENCE = "RegisterBrokerRecord at offset 7"
VOTERS = {1, 2, 3}


def first_run(partition_dir: Path, answers: dict[int, tuple[int, ...]]) -> WitnessPolicy:
    """Node 3 before the restart: log evidence, ``answers`` heard live and
    written to the file as the node does."""
    policy = WitnessPolicy()
    policy.found_in_log(LOG_EVIDENCE)
    for node_id, keys in answers.items():
        policy.heard(node_id, keys)
    write_voter_api_versions(partition_dir, policy.answers())
    return policy


def restarted(partition_dir: Path | None) -> WitnessPolicy:
    """Node 3 after the restart: log evidence, seeded from the file (None: no file, as before the fix)."""
    policy = WitnessPolicy()
    policy.found_in_log(LOG_EVIDENCE)
    if partition_dir is not None:
        policy.remember(read_voter_api_versions(partition_dir))
    return policy


def test_before_the_restart_both_survivors_are_voters(tmp_path: Path) -> None:
    policy = first_run(tmp_path, {1: KRAFT_APIS, 2: KRAFT_APIS})
    assert policy.decide(3, VOTERS).describe() == (
        "voter: voters 1, 2 answered ApiVersions as kraft nodes (no Kafka controller APIs): a kraft quorum")


def test_the_defect_without_memory_a_survivor_stays_a_witness_for_ever() -> None:
    """What the survivors did before the fix: voter 2 is dead for good, so
    the log evidence keeps node 3 a witness however long voter 1 answers."""
    policy = restarted(None)
    policy.heard(1, KRAFT_APIS)
    decision = policy.decide(3, VOTERS)
    assert decision.state == "witness" and decision.reason.startswith("the metadata log holds Kafka controller")


def test_a_survivor_remembers_the_dead_voter_as_a_kraft_node(tmp_path: Path) -> None:
    first_run(tmp_path, {1: KRAFT_APIS, 2: KRAFT_APIS})
    policy = restarted(tmp_path)
    # Remembered answers never replace a live one for the wait before a candidacy.
    assert policy.decide(3, VOTERS).describe() == (
        "undecided: heard ApiVersions from 0 of the 1 other voter a candidacy needs; not campaigning until then")
    policy.heard(1, KRAFT_APIS)  # voter 2 never answers again
    assert policy.decide(3, VOTERS).describe() == (
        "voter: voters 1, 2 answered ApiVersions as kraft nodes (no Kafka controller APIs) (voter 2 before this "
        "start, as remembered in voter-api-versions; not heard since): a kraft quorum")
    assert policy.handover_leaders(3, VOTERS) is None


def test_the_restarted_survivor_is_elected_with_the_other_survivors_vote(tmp_path: Path) -> None:
    """Core level: the election timeout starts a candidacy (KIP-996 pre-vote,
    then the vote) that voter 1 alone carries to a majority."""
    first_run(tmp_path, {1: KRAFT_APIS, 2: KRAFT_APIS})
    policy = restarted(tmp_path)
    policy.heard(1, KRAFT_APIS)
    ctx = RaftTestContext(local_id=3, campaign_policy=policy).with_log((1, 10)).start()
    campaign_won_by_one_vote(ctx, 1)
    assert ctx.epoch == 2


def test_the_defect_at_core_level_no_candidacy_without_memory() -> None:
    policy = restarted(None)
    policy.heard(1, KRAFT_APIS)
    ctx = RaftTestContext(local_id=3, campaign_policy=policy).with_log((1, 10)).start()
    for _ in range(5):
        ctx.advance(2 * ctx.config.election_timeout_ms)
    assert not isinstance(ctx.role, (Prospective, Candidate, Leader))
    ctx.assert_not_sent(VoteRequest)


def test_two_witnesses_and_a_kafka_controller_that_is_down_elect_no_kraft_leader(tmp_path: Path) -> None:
    """Kafka controller 1 heard before the restart, down now; kraft witnesses
    2 and 3 hear each other. Remembered as a Kafka controller, voter 1 stays
    decisive -- with log evidence or without."""
    first_run(tmp_path, {1: KAFKA_APIS, 2: KRAFT_APIS})
    policy = restarted(tmp_path)
    policy.heard(2, KRAFT_APIS)
    decision = policy.decide(3, VOTERS)
    assert decision.state == "witness"
    assert decision.reason == (
        "voter 1 advertises Kafka controller APIs kraft lacks (CreateTopics, BrokerRegistration, "
        "BrokerHeartbeat, ...) on the controller listener (voter 1 before this start, as remembered in "
        "voter-api-versions; not heard since)")
    assert policy.handover_leaders(3, VOTERS) == frozenset({1})
    no_log = WitnessPolicy()
    no_log.remember(read_voter_api_versions(tmp_path))
    no_log.heard(2, KRAFT_APIS)
    assert no_log.decide(3, VOTERS).state == "witness"
    # Never heard at all (a new witness): log evidence keeps it one, as before.
    fresh = restarted(None)
    fresh.heard(2, KRAFT_APIS)
    assert fresh.decide(3, VOTERS).state == "witness"
    # In the core: its election timeouts start nothing.
    ctx = RaftTestContext(local_id=3, campaign_policy=policy).with_log((1, 10)).start()
    for _ in range(5):
        ctx.advance(2 * ctx.config.election_timeout_ms)
    assert not isinstance(ctx.role, (Prospective, Candidate, Leader))


def test_a_live_answer_replaces_the_remembered_one_and_a_reused_id_makes_the_leader_resign(tmp_path: Path) -> None:
    """Voter 2's id is reused by a Kafka controller: node 3, leading the
    kraft quorum on the strength of what it remembered, resigns at once on
    hearing it, naming it as the preferred successor; the file then says so."""
    first_run(tmp_path, {1: KRAFT_APIS, 2: KRAFT_APIS})
    policy = restarted(tmp_path)
    policy.heard(1, KRAFT_APIS)
    ctx = RaftTestContext(local_id=3, campaign_policy=policy).start().elect_local()
    assert isinstance(ctx.role, Leader)
    assert policy.heard(2, KAFKA_APIS)
    ctx.poll()
    assert isinstance(ctx.role, Resigned)
    for destination in (1, 2):
        [end] = ctx.assert_sent(EndQuorumEpochRequest, destination=destination)
        assert end.message.preferred_candidates == (ReplicaKey(2),)
    assert [a.answered_as for a in policy.answers()] == ["kraft", "kafka-controller"]
    # And a Kafka controller remembered, then heard as a kraft node: the live answer wins too.
    back = WitnessPolicy()
    back.remember([RememberedAnswer(1, None, ("CreateTopics",)), RememberedAnswer(2, None, ())])
    assert back.decide(3, VOTERS).state == "witness"
    back.heard(1, KRAFT_APIS)
    back.heard(2, KRAFT_APIS)
    assert back.decide(3, VOTERS).state == "voter"
    assert all(a.answered_as == "kraft" for a in back.answers())


def test_a_remembered_answer_counts_only_for_the_same_directory() -> None:
    """KIP-853: voter 2 re-added with another directory (a new disk, or a
    Kafka controller under a reused id) is not the voter remembered."""
    old_disk, new_disk = uuid.UUID(int=1), uuid.UUID(int=2)
    policy = restarted(None)
    policy.remember([RememberedAnswer(2, old_disk, ())])
    policy.heard(1, KRAFT_APIS, uuid.UUID(int=11))
    assert policy.note_voter_directories({1: uuid.UUID(int=11), 2: old_disk, 3: uuid.UUID(int=13)})
    assert policy.decide(3, VOTERS).state == "voter"
    assert policy.note_voter_directories({1: uuid.UUID(int=11), 2: new_disk, 3: uuid.UUID(int=13)})
    assert policy.decide(3, VOTERS).state == "witness"
    assert not policy.note_voter_directories({1: uuid.UUID(int=11), 2: new_disk, 3: uuid.UUID(int=13)})
    # A live answer from the new directory is recorded with it.
    policy.heard(2, KRAFT_APIS, new_disk)
    assert policy.decide(3, VOTERS).state == "voter"
    assert [(a.voter_id, a.directory_id) for a in policy.answers()] == [(1, uuid.UUID(int=11)), (2, new_disk)]
