"""QuorumState: the transition table of Kafka's QuorumState, durability ordering,
and start-up rules. Every illegal move raises and changes nothing."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from kraft.raft.errors import IllegalTransitionError
from kraft.raft.quorum_state import QuorumState
from kraft.raft.quorum_config import QuorumConfig
from kraft.records.view import OffsetAndEpoch
from kraft.raft.roles import Candidate, ElectionState, Follower, Leader, Prospective, Resigned, Unattached
from kraft.raft.voters import ReplicaKey, VoterSet

VOTERS = VoterSet.from_ids([1, 2, 3])
EP2 = VOTERS.endpoints(2)


def quorum(local_id: int | None = 1, voters: VoterSet = VOTERS) -> QuorumState:
    return QuorumState(
        local_key=None if local_id is None else ReplicaKey(local_id),
        voters=voters,
        config=QuorumConfig(),
        rng=random.Random(7),
    )


EMPTY_LOG = OffsetAndEpoch(0, 0)


def started(persisted: ElectionState | None = None, log_end: OffsetAndEpoch = EMPTY_LOG, **kw) -> QuorumState:
    q = quorum(**kw)
    q.initialize(persisted, log_end, now_ms=0)
    q.take_pending_persist()
    return q


# --- start-up (Kafka's QuorumState.initialize) ------------------------------------


def test_starts_unattached_in_epoch_zero_without_quorum_state() -> None:
    q = quorum()
    q.initialize(None, OffsetAndEpoch(0, 0), now_ms=0)
    assert q.role == Unattached(0, election_deadline_ms=q.role.election_deadline_ms)
    assert q.take_pending_persist() == ElectionState(0)


def test_a_stale_quorum_state_is_overridden_by_the_log_epoch() -> None:
    q = started(ElectionState(3, leader_id=2), log_end=OffsetAndEpoch(40, 5))
    assert isinstance(q.role, Unattached) and q.epoch == 5 and q.leader_id is None


def test_a_restarted_leader_starts_resigned_in_its_epoch() -> None:
    """QuorumState.initialize: it must not vote again in that epoch, nor reuse
    an (offset, epoch) whose unflushed record was lost."""
    q = started(ElectionState(4, leader_id=1))
    assert isinstance(q.role, Resigned) and q.epoch == 4
    assert q.role.unacked_voters == {2, 3}
    assert not q.role.can_grant_vote(ReplicaKey(2), True, False)


def test_a_restarted_candidate_resumes_its_candidacy() -> None:
    q = started(ElectionState(4, voted_key=ReplicaKey(1)))
    assert isinstance(q.role, Candidate) and q.epoch == 4


def test_a_restarted_voter_keeps_its_vote() -> None:
    q = started(ElectionState(4, voted_key=ReplicaKey(2)))
    assert isinstance(q.role, Unattached) and q.voted_key == ReplicaKey(2)
    assert not q.role.can_grant_vote(ReplicaKey(3), True, False)


def test_a_restarted_follower_follows_the_stored_leader() -> None:
    q = started(ElectionState(4, leader_id=2))
    assert isinstance(q.role, Follower) and q.role.leader_id == 2


def test_an_observer_never_has_an_election_timer() -> None:
    q = started(local_id=9)
    assert q.is_observer and isinstance(q.role, Unattached)
    assert q.role.election_deadline_ms is None


def test_a_vote_in_quorum_state_without_a_node_id_is_refused() -> None:
    with pytest.raises(IllegalTransitionError):
        quorum(local_id=None).initialize(ElectionState(2, voted_key=ReplicaKey(1)), OffsetAndEpoch(0, 0), 0)


@pytest.mark.parametrize("args, reason", [
    ((-1,), "negative epoch -1"),
    ((3, -1), "negative leader id -1"),  # "no leader" is None; -1 is only the file's sentinel
    ((3, None, ReplicaKey(-2)), "negative voted id -2"),
])
def test_an_election_state_no_replica_can_be_in_is_refused(args: tuple, reason: str) -> None:
    """Kafka's ``ElectionState.withElectedLeader`` / ``withVotedCandidate``
    refuse negative ids; a negative epoch is no epoch at all."""
    with pytest.raises(ValueError, match=reason):
        ElectionState(*args)


def test_an_election_state_may_hold_a_leader_and_the_vote_cast_in_its_epoch() -> None:
    """Kafka's ``withElectedLeader(epoch, leaderId, votedKey)``: a voter keeps
    its vote once it learns the winner; equality stays a tuple's."""
    state = ElectionState(3, 2, ReplicaKey(1))
    assert (state.epoch, state.leader_id, state.voted_key) == (3, 2, ReplicaKey(1))
    assert state == ElectionState(3, leader_id=2, voted_key=ReplicaKey(1)) != ElectionState(3, 2)


# --- legal transitions (one per line of the QuorumState docstring) ----------------------


def _unattached(q: QuorumState) -> None:
    pass


def _prospective(q: QuorumState) -> None:
    q.transition_to_prospective(0)


def _candidate(q: QuorumState) -> None:
    q.transition_to_prospective(0)
    q.transition_to_candidate(0)


def _leader(q: QuorumState) -> None:
    _candidate(q)
    q.record_vote(2, True)
    q.transition_to_leader(0, 0)


def _follower(q: QuorumState) -> None:
    q.transition_to_follower(1, 2, EP2, 0)


def _resigned(q: QuorumState) -> None:
    _leader(q)
    q.transition_to_resigned((), 0)


LEGAL: list[tuple[str, Callable[[QuorumState], None], Callable[[QuorumState], None], type]] = [
    (
        "Unattached -> Unattached (higher epoch)",
        _unattached,
        lambda q: q.transition_to_unattached(5, 0),
        Unattached,
    ),
    (
        "Unattached -> Unattached (vote)",
        _unattached,
        lambda q: q.unattached_add_voted(0, ReplicaKey(2), 0),
        Unattached,
    ),
    ("Unattached -> Prospective", _unattached, lambda q: q.transition_to_prospective(0), Prospective),
    ("Unattached -> Follower", _unattached, lambda q: q.transition_to_follower(0, 2, EP2, 0), Follower),
    (
        "Prospective -> Unattached (higher epoch)",
        _prospective,
        lambda q: q.transition_to_unattached(3, 0),
        Unattached,
    ),
    (
        "Prospective -> Unattached (lost)",
        _prospective,
        lambda q: q.transition_to_unattached(0, 0),
        Unattached,
    ),
    (
        "Prospective -> Prospective (vote)",
        _prospective,
        lambda q: q.prospective_add_voted(0, ReplicaKey(2), 0),
        Prospective,
    ),
    ("Prospective -> Candidate", _prospective, lambda q: q.transition_to_candidate(0), Candidate),
    ("Prospective -> Follower", _prospective, lambda q: q.transition_to_follower(0, 2, EP2, 0), Follower),
    ("Candidate -> Unattached", _candidate, lambda q: q.transition_to_unattached(2, 0), Unattached),
    ("Candidate -> Prospective", _candidate, lambda q: q.transition_to_prospective(0), Prospective),
    ("Candidate -> Follower", _candidate, lambda q: q.transition_to_follower(1, 2, EP2, 0), Follower),
    ("Leader -> Unattached", _leader, lambda q: q.transition_to_unattached(2, 0), Unattached),
    ("Leader -> Resigned", _leader, lambda q: q.transition_to_resigned((), 0), Resigned),
    ("Leader -> Follower", _leader, lambda q: q.transition_to_follower(2, 2, EP2, 0), Follower),
    ("Follower -> Unattached", _follower, lambda q: q.transition_to_unattached(2, 0), Unattached),
    ("Follower -> Prospective", _follower, lambda q: q.transition_to_prospective(0), Prospective),
    (
        "Follower -> Follower",
        _follower,
        lambda q: q.transition_to_follower(2, 3, VOTERS.endpoints(3), 0),
        Follower,
    ),
    ("Resigned -> Unattached", _resigned, lambda q: q.transition_to_unattached(2, 0), Unattached),
    ("Resigned -> Follower", _resigned, lambda q: q.transition_to_follower(2, 2, EP2, 0), Follower),
]


@pytest.mark.parametrize(("name", "setup", "move", "expected"), LEGAL, ids=[t[0] for t in LEGAL])
def test_legal_transition(name: str, setup, move, expected: type) -> None:
    q = started()
    setup(q)
    move(q)
    assert type(q.role) is expected


ILLEGAL: list[tuple[str, Callable[[QuorumState], None], Callable[[QuorumState], None]]] = [
    ("Unattached -> Candidate (no pre-vote)", _unattached, lambda q: q.transition_to_candidate(0)),
    ("Unattached -> Leader", _unattached, lambda q: q.transition_to_leader(0, 0)),
    ("Unattached -> Resigned", _unattached, lambda q: q.transition_to_resigned((), 0)),
    ("Unattached -> Unattached (same epoch)", _unattached, lambda q: q.transition_to_unattached(0, 0)),
    ("Follower -> Candidate", _follower, lambda q: q.transition_to_candidate(0)),
    ("Follower -> Unattached (same epoch)", _follower, lambda q: q.transition_to_unattached(1, 0)),
    (
        "Follower -> Follower (same leader, same epoch)",
        _follower,
        lambda q: q.transition_to_follower(1, 2, EP2, 0),
    ),
    (
        "Follower -> Follower (second leader in the epoch)",
        _follower,
        lambda q: q.transition_to_follower(1, 3, VOTERS.endpoints(3), 0),
    ),
    (
        "Follower -> Follower (lower epoch)",
        _follower,
        lambda q: q.transition_to_follower(0, 3, VOTERS.endpoints(3), 0),
    ),
    ("follow ourselves", _unattached, lambda q: q.transition_to_follower(0, 1, VOTERS.endpoints(1), 0)),
    ("follow without endpoints", _unattached, lambda q: q.transition_to_follower(0, 2, (), 0)),
    ("Candidate -> Candidate", _candidate, lambda q: q.transition_to_candidate(0)),
    ("Candidate -> Leader without a majority", _candidate, lambda q: q.transition_to_leader(0, 0)),
    ("Leader -> Prospective", _leader, lambda q: q.transition_to_prospective(0)),
    ("Leader -> Follower (same epoch)", _leader, lambda q: q.transition_to_follower(1, 2, EP2, 0)),
    ("Prospective -> Prospective", _prospective, lambda q: q.transition_to_prospective(0)),
    (
        "second vote in an epoch",
        lambda q: q.unattached_add_voted(0, ReplicaKey(2), 0),
        lambda q: q.unattached_add_voted(0, ReplicaKey(3), 0),
    ),
    ("vote for ourselves", _unattached, lambda q: q.unattached_add_voted(0, ReplicaKey(1), 0)),
    ("vote in another epoch", _unattached, lambda q: q.unattached_add_voted(3, ReplicaKey(2), 0)),
]


@pytest.mark.parametrize(("name", "setup", "move"), ILLEGAL, ids=[t[0] for t in ILLEGAL])
def test_illegal_transition_raises_and_changes_nothing(name: str, setup, move) -> None:
    q = started()
    setup(q)
    q.take_pending_persist()
    before = q.role
    with pytest.raises(IllegalTransitionError):
        move(q)
    assert q.role is before
    assert q.take_pending_persist() is None


@pytest.mark.parametrize("move", ["prospective", "candidate", "leader", "resigned"])
def test_an_observer_only_moves_between_unattached_and_follower(move: str) -> None:
    q = started(local_id=9)
    with pytest.raises(IllegalTransitionError):
        match move:
            case "prospective":
                q.transition_to_prospective(0)
            case "candidate":
                q.transition_to_candidate(0)
            case "leader":
                q.transition_to_leader(0, 0)
            case "resigned":
                q.transition_to_resigned((), 0)
    q.transition_to_follower(1, 2, EP2, 0)
    q.transition_to_unattached(2, 0)


# --- durability ----------------------------------------------------------------------


def test_durable_transitions_queue_the_election_state() -> None:
    """KIP-595: a voter records its vote (and a candidate its candidacy) before acting on it."""
    q = started()
    q.unattached_add_voted(0, ReplicaKey(2), 0)
    assert q.take_pending_persist() == ElectionState(0, voted_key=ReplicaKey(2))
    q.transition_to_follower(0, 2, EP2, 0)
    # Same epoch: the vote is kept, so the replica can never vote twice in it.
    assert q.take_pending_persist() == ElectionState(0, leader_id=2, voted_key=ReplicaKey(2))


def test_candidacy_bumps_the_epoch_by_one_and_persists_the_self_vote() -> None:
    q = started(ElectionState(6, leader_id=2))
    q.transition_to_prospective(0)
    assert q.take_pending_persist() is None  # pre-vote changes nothing durable
    q.transition_to_candidate(0)
    assert q.epoch == 7
    assert q.take_pending_persist() == ElectionState(7, voted_key=ReplicaKey(1))


def test_resigning_is_not_persisted() -> None:
    q = started()
    _leader(q)
    q.take_pending_persist()
    q.transition_to_resigned((ReplicaKey(2),), 0)
    assert q.take_pending_persist() is None
    assert q.election == ElectionState(1, leader_id=1)


def test_in_role_updates_cannot_change_the_election_state() -> None:
    q = started()
    _follower(q)
    q.reset_fetch_timeout(100)
    assert isinstance(q.role, Follower) and q.role.has_fetched_from_leader
    with pytest.raises(IllegalTransitionError):
        q.record_vote(2, True)  # a follower collects no votes


def test_the_election_timeout_is_randomized_between_t_and_2t() -> None:
    """Kafka's randomElectionTimeoutMs: t + rand(t)."""
    q = started()
    values = {q.random_election_timeout_ms() for _ in range(200)}
    assert min(values) >= 1000 and max(values) < 2000 and len(values) > 50


def test_a_new_leader_does_not_inherit_the_high_watermark() -> None:
    q = started()
    _follower(q)
    q.set_leader_high_watermark(5)
    q.update_follower_high_watermark(5)
    q.transition_to_prospective(0)
    assert q.high_watermark == 5
    q.transition_to_candidate(0)
    q.record_vote(2, True)
    leader = q.transition_to_leader(9, 0)
    assert isinstance(leader, Leader) and leader.high_watermark is None
