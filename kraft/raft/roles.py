"""One small immutable class per KRaft role, holding only that role's fields.

Kafka's roles (``EpochState`` implementations), including KIP-996's
Prospective. There is no separate "Voted" role: a binding vote is an
Unattached (or Prospective) with a ``voted_key``, as in Kafka 4.x.

Roles are frozen: ``kraft.raft.quorum_state.QuorumState`` is the only code that builds
or replaces them, both for role changes (``transition_to_*``) and for updates
inside a role (a vote tallied, a fetch timer reset), which it makes with
:func:`dataclasses.replace` and checks never alter the role's
:class:`ElectionState`. The one mutable part is the leader's replica-progress
state, :class:`kraft.raft.leader_state.LeaderState` (replica progress, the
accumulator, parked fetches, the voter change in flight, the resign request),
which changes with every fetch and append and is dropped with the role.

Timers are absolute deadlines in the core's clock (``now_ms`` passed to
``step``/``poll``); ``None`` means "never" (an observer never starts an
election).

Vote granting (``can_grant_vote``) follows each role's ``canGrantVote`` in
Kafka: a standard vote needs an up-to-date log and no earlier vote or known
leader in the epoch; a pre-vote needs only an up-to-date log, and a follower
grants one only until it has fetched from its leader (KIP-996).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from kraft.raft.leader_progress import LeaderProgress
from kraft.raft.leader_state import LeaderState
from kraft.records.state_files import NOT_VOTED, UNKNOWN_LEADER_ID, QuorumStateFileData
from kraft.records.view import OffsetAndEpoch
from kraft.raft.voters import Endpoints, ReplicaKey


class _ElectionFields(NamedTuple):
    epoch: int
    leader_id: int | None
    voted_key: ReplicaKey | None


class ElectionState(_ElectionFields):
    """What ``quorum-state`` stores (``QuorumStateData``): the epoch, the leader
    if one is known, and the replica voted for in this epoch. A plain value,
    as cheap as a tuple: every role has one (``Role.election``), transitions
    compare them with the stored one, and one is queued for the shell
    whenever it changes.

    Construction refuses what no replica can have been in (``ValueError``):
    a negative epoch, and a negative leader or voted id (Kafka's
    ``ElectionState.withElectedLeader`` / ``withVotedCandidate``; "none" is
    ``None``, never Kafka's -1 sentinel, which only the file uses). A leader
    and a vote together is legal: a voter that voted, then learned the winner.
    (Only the constructor checks: ``_replace``/``_make`` would not; nothing uses them.)"""

    __slots__ = ()

    def __new__(cls, epoch: int, leader_id: int | None = None, voted_key: ReplicaKey | None = None) -> ElectionState:
        # Short-circuiting comparisons only, the message built apart: this runs
        # on every role transition and in-role update.
        if epoch < 0 or (leader_id is not None and leader_id < 0) or (voted_key is not None and voted_key.id < 0):
            raise ValueError(_invalid_election(epoch, leader_id, voted_key))
        return tuple.__new__(cls, (epoch, leader_id, voted_key))


def election_state_of(data: QuorumStateFileData) -> ElectionState:
    """The election state a ``quorum-state`` file stores (Kafka's -1 "none"
    sentinels become ``None``); ``ValueError`` for a file no replica writes
    (a negative epoch, an id below -1). The node's start and ``kraft
    doctor`` read the file through this one conversion."""
    voted = None
    if data.voted_id != NOT_VOTED:
        directory = None if data.voted_directory_id.int == 0 else data.voted_directory_id
        voted = ReplicaKey(data.voted_id, directory)
    leader = None if data.leader_id == UNKNOWN_LEADER_ID else data.leader_id
    return ElectionState(data.leader_epoch, leader, voted)


def _invalid_election(epoch: int, leader_id: int | None, voted_key: ReplicaKey | None) -> str:
    if epoch < 0:
        return f"invalid election state: negative epoch {epoch}"
    if leader_id is not None and leader_id < 0:
        return f"invalid election state in epoch {epoch}: negative leader id {leader_id}"
    return f"invalid election state in epoch {epoch}: negative voted id {voted_key.id if voted_key else None}"


class LeaderAndEpoch(NamedTuple):
    """What listeners are told on a leader change (a value, as ElectionState)."""

    leader_id: int | None
    epoch: int


@dataclass(frozen=True, slots=True)
class EpochElection:
    """The vote tally of a Prospective or Candidate (Kafka's ``EpochElection``).

    ``granted`` contains the nominee itself when it is one of ``voter_ids``."""

    voter_ids: tuple[int, ...]
    granted: frozenset[int]
    rejected: frozenset[int] = frozenset()

    @classmethod
    def start(cls, voter_ids: tuple[int, ...], local_id: int) -> EpochElection:
        # A replica outside its latest voter set (a leader that removed
        # itself, a removal_pending campaign) never counts its own vote.
        return cls(voter_ids, frozenset({local_id}) if local_id in voter_ids else frozenset())

    @property
    def majority_size(self) -> int:
        return len(self.voter_ids) // 2 + 1

    def is_vote_granted(self) -> bool:
        return len(self.granted) >= self.majority_size

    def is_vote_rejected(self) -> bool:
        """Winning is impossible: even every unrecorded voter granting would
        not reach a majority."""
        return len(self.granted) + len(self.unrecorded_voters()) < self.majority_size

    def unrecorded_voters(self) -> tuple[int, ...]:
        return tuple(v for v in self.voter_ids if v not in self.granted and v not in self.rejected)

    def record(self, voter_id: int, granted: bool) -> EpochElection:
        """Tally ``voter_id``'s answer. A voter's first answer counts; a later
        contradicting answer (a retried request answered after a state change
        on the voter) is ignored, as Kafka refuses to flip a recorded vote."""
        if voter_id not in self.voter_ids or voter_id in self.granted or voter_id in self.rejected:
            return self
        if granted:
            return EpochElection(self.voter_ids, self.granted | {voter_id}, self.rejected)
        return EpochElection(self.voter_ids, self.granted, self.rejected | {voter_id})


def _unattached_or_prospective_can_grant(
    leader_id: int | None,
    voted_key: ReplicaKey | None,
    candidate: ReplicaKey,
    log_up_to_date: bool,
    pre_vote: bool,
) -> bool:
    """``QuorumState.unattachedOrProspectiveCanGrantVote``."""
    if pre_vote:
        return log_up_to_date
    if voted_key is not None:
        # Re-grant to the replica we already voted for (a retried request),
        # never to anyone else: one vote per epoch.
        return voted_key.id == candidate.id and (
            voted_key.directory_id is None or voted_key.directory_id == candidate.directory_id
        )
    if leader_id is not None:
        return False
    return log_up_to_date


@dataclass(frozen=True, slots=True)
class Unattached:
    """No leader known to fetch from: after learning a new epoch, after a
    binding vote (``voted_key``), or at start-up."""

    epoch: int
    leader_id: int | None = None
    voted_key: ReplicaKey | None = None
    election_deadline_ms: int | None = None
    high_watermark: int | None = None

    name = "Unattached"

    @property
    def election(self) -> ElectionState:
        return ElectionState(self.epoch, self.leader_id, self.voted_key)

    def can_grant_vote(self, candidate: ReplicaKey, log_up_to_date: bool, pre_vote: bool) -> bool:
        return _unattached_or_prospective_can_grant(
            self.leader_id, self.voted_key, candidate, log_up_to_date, pre_vote
        )


@dataclass(frozen=True, slots=True)
class Prospective:
    """KIP-996 pre-vote: canvassing at the current epoch before bumping it."""

    epoch: int
    local_id: int
    votes: EpochElection
    leader_id: int | None = None
    leader_endpoints: Endpoints = ()
    voted_key: ReplicaKey | None = None
    retries: int = 1
    election_deadline_ms: int = 0
    high_watermark: int | None = None
    #: A witness's hand-over candidacy (kraft/raft/handover.py), carried to
    #: the Candidate; it ends with the role.
    handover: bool = False

    name = "Prospective"

    @property
    def election(self) -> ElectionState:
        return ElectionState(self.epoch, self.leader_id, self.voted_key)

    def can_grant_vote(self, candidate: ReplicaKey, log_up_to_date: bool, pre_vote: bool) -> bool:
        return _unattached_or_prospective_can_grant(
            self.leader_id, self.voted_key, candidate, log_up_to_date, pre_vote
        )


@dataclass(frozen=True, slots=True)
class Candidate:
    """Voted for itself in a bumped epoch; collecting votes."""

    epoch: int
    local_key: ReplicaKey
    votes: EpochElection
    retries: int = 1
    election_deadline_ms: int = 0
    high_watermark: int | None = None
    #: A witness's hand-over candidacy, from its Prospective.
    handover: bool = False

    name = "Candidate"

    @property
    def election(self) -> ElectionState:
        return ElectionState(self.epoch, None, self.local_key)

    @property
    def leader_id(self) -> None:
        return None

    def can_grant_vote(self, candidate: ReplicaKey, log_up_to_date: bool, pre_vote: bool) -> bool:
        # The candidate's own vote is implicit; it never grants a standard vote.
        return pre_vote and log_up_to_date


@dataclass(frozen=True, slots=True)
class Leader:
    """Elected for ``epoch``; ``state`` holds everything that changes while
    leading (Kafka's ``LeaderState``)."""

    epoch: int
    local_key: ReplicaKey
    epoch_start_offset: int
    granting_voters: frozenset[int]
    state: LeaderState

    name = "Leader"

    @property
    def election(self) -> ElectionState:
        return ElectionState(self.epoch, self.local_key.id, None)

    @property
    def leader_id(self) -> int:
        return self.local_key.id

    @property
    def progress(self) -> LeaderProgress:
        return self.state.progress

    @property
    def high_watermark(self) -> int | None:
        return self.state.progress.high_watermark

    def can_grant_vote(self, candidate: ReplicaKey, log_up_to_date: bool, pre_vote: bool) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class SnapshotDownload:
    """A snapshot being fetched from the leader and how much is written."""

    snapshot_id: OffsetAndEpoch
    size: int = 0


@dataclass(frozen=True, slots=True)
class Follower:
    """Fetching from a known leader (voters and observers)."""

    epoch: int
    leader_id: int
    leader_endpoints: Endpoints
    voted_key: ReplicaKey | None = None
    fetch_deadline_ms: int | None = None
    has_fetched_from_leader: bool = False
    high_watermark: int | None = None
    #: The leader's high watermark from the last fetch whose offset the
    #: leader validated; the local high watermark is min(this, log end).
    leader_high_watermark: int | None = None
    fetching_snapshot: SnapshotDownload | None = None
    #: A downloaded snapshot the last Ready asked the shell to install: the
    #: high watermark moves to its end only once the log shows it installed
    #: (a failed install must not expose an old, possibly divergent tail).
    installing_snapshot: OffsetAndEpoch | None = None
    #: Why the fetch timer runs short (EndQuorumEpoch), for the role-change reason.
    fetch_timeout_cause: str | None = None
    #: KIP-853, as Kafka's ``FollowerState`` keeps them: this leader has our
    #: current listeners (UpdateRaftVoter answered), and no UpdateRaftVoter /
    #: AddRaftVoter / RemoveRaftVoter of ours before this time.
    updated_voter: bool = False
    membership_retry_ms: int = 0

    name = "Follower"

    @property
    def election(self) -> ElectionState:
        return ElectionState(self.epoch, self.leader_id, self.voted_key)

    def can_grant_vote(self, candidate: ReplicaKey, log_up_to_date: bool, pre_vote: bool) -> bool:
        # A follower that has not heard from its leader yet may be cut off from
        # it, so it supports a pre-vote; once it has fetched it protects the
        # leader (KIP-996).
        return pre_vote and not self.has_fetched_from_leader and log_up_to_date


@dataclass(frozen=True, slots=True)
class Resigned:
    """A former leader stepping down: telling the voters (EndQuorumEpoch) until
    each acknowledges or the election timeout passes. A leader always restarts
    in this role."""

    epoch: int
    local_id: int
    election_deadline_ms: int
    unacked_voters: frozenset[int]
    preferred_successors: tuple[ReplicaKey, ...] = ()

    name = "Resigned"

    @property
    def election(self) -> ElectionState:
        return ElectionState(self.epoch, self.local_id, None)

    @property
    def leader_id(self) -> int:
        return self.local_id

    @property
    def high_watermark(self) -> None:
        return None

    def can_grant_vote(self, candidate: ReplicaKey, log_up_to_date: bool, pre_vote: bool) -> bool:
        # Kafka 4.x's ResignedState.canGrantVote: a pre-vote for an
        # up-to-date log (the successors it named must be able to win), no
        # vote in its own epoch.
        return pre_vote and log_up_to_date


Role = Unattached | Prospective | Candidate | Leader | Follower | Resigned


def log_up_to_date(candidate: OffsetAndEpoch, local: OffsetAndEpoch) -> bool:
    """Raft's "at least as up-to-date": compare the last epoch, then the end
    offset (Kafka's ``OffsetAndEpoch.compareTo``). Both are (offset, epoch)."""
    return (candidate.epoch, candidate.offset) >= (local.epoch, local.offset)


def vote_decision(
    role: Role, candidate: ReplicaKey, candidate_end: OffsetAndEpoch, local_end: OffsetAndEpoch, pre_vote: bool
) -> tuple[bool, bool]:
    """``(granted, up_to_date)`` for a (pre-)vote request in one pass: the
    candidate's log compared with ours, then the role's ``canGrantVote``
    (Kafka's ``handleVoteRequest``)."""
    up_to_date = log_up_to_date(candidate_end, local_end)
    return role.can_grant_vote(candidate, up_to_date, pre_vote), up_to_date
