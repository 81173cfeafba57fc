"""What every handler family shares: the views a handler gets, and the
leader-only check.

As Kafka's ``AddVoterHandler``, ``RemoveVoterHandler`` and
``UpdateVoterHandler`` get the leader state and a request sender, and
``KafkaRaftClient.handleFetchRequest``/``handleVoteRequest`` act on
``QuorumState`` and its ``LeaderState``, each family gets its own context:
:class:`ElectionContext`, :class:`ReplicationContext`,
:class:`MembershipContext`. Each is a :class:`HandlerView` (the read-only
log, the voter set, who this replica is), :class:`Effects` (answers,
requests, log operations, protocol violations, the committed offset the
``Ready`` exposes) and a ``quorum`` typed with that family's narrow view
(:class:`QuorumReader` plus the few changes the family makes); only the
election family may ask for role changes (:class:`Transitions`), which the
core carries out. A handler's own bookkeeping -- replica progress, parked
fetches, the pending voter change -- is on the role state
(``Leader.progress``, ``Leader.state``). The epoch gate
(:mod:`kraft.raft.epoch_gate`) runs before any handler;
:func:`validate_leader_only` is its leader-only check, which a parked
Fetch's completion and the voter changes call again.
:class:`~kraft.raft.core.RaftCore` implements every context
(:class:`HandlerContext`); so do the tests
(``tests/raft/test_handler_context.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kraft.raft.errors import Errors
from kraft.raft.events import LeaderFields, RaftRequest, RaftResponse
from kraft.raft.roles import Leader

if TYPE_CHECKING:
    from kraft.raft.events import InboundRequest, TopicPartition
    from kraft.raft.logops import LogOp
    from kraft.raft.quorum_config import QuorumConfig
    from kraft.raft.quorum_state import QuorumState
    from kraft.raft.roles import Role, SnapshotDownload
    from kraft.raft.voters import Endpoints, ReplicaKey, VoterSet
    from kraft.records.view import LogView, OffsetAndEpoch


def validate_leader_only(quorum: QuorumReader, epoch: int, shutting_down: bool) -> Errors | None:
    """Fetch, FetchSnapshot and the voter changes: only the leader of exactly
    this epoch serves them, and not while it shuts down (Kafka's
    ``KafkaRaftClient.validateLeaderOnlyRequest``)."""
    if epoch < quorum.epoch:
        return Errors.FENCED_LEADER_EPOCH
    if epoch > quorum.epoch:
        return Errors.UNKNOWN_LEADER_EPOCH
    if not isinstance(quorum.role, Leader):
        return Errors.NOT_LEADER_OR_FOLLOWER
    if shutting_down:
        return Errors.BROKER_NOT_AVAILABLE
    return None


class QuorumReader(Protocol):
    """What every handler may read of the quorum state. It declares no
    method that changes it: each family's view below adds the few changes
    that family makes (as Kafka's handlers call ``QuorumState``), and the
    transitions stay with the core."""

    @property
    def epoch(self) -> int: ...
    @property
    def role(self) -> Role: ...
    @property
    def leader_fields(self) -> LeaderFields: ...
    @property
    def leader_endpoints(self) -> Endpoints: ...
    @property
    def high_watermark(self) -> int | None: ...
    @property
    def is_voter(self) -> bool: ...
    @property
    def local_id(self) -> int | None: ...
    @property
    def leader_id(self) -> int | None: ...
    @property
    def has_leader(self) -> bool: ...


class ElectionQuorum(QuorumReader, Protocol):
    """The quorum state as the election handlers change it: a vote granted
    or counted, an earlier election after EndQuorumEpoch, a resignation
    acknowledged."""

    def grant_vote(self, candidate: ReplicaKey, candidate_end: OffsetAndEpoch, local_end: OffsetAndEpoch,
                   pre_vote: bool, now_ms: int) -> bool: ...
    def record_vote(self, voter_id: int, granted: bool) -> None: ...
    def override_fetch_timeout(self, now_ms: int, timeout_ms: int, cause: str) -> None: ...
    def acknowledge_resignation(self, voter_id: int) -> None: ...


class MembershipQuorum(QuorumReader, Protocol):
    """The quorum state as the voter-change handlers change it: when this
    replica next asks to join or to update its voter entry (KIP-853)."""

    def set_membership_state(self, *, retry_ms: int | None = None, updated_voter: bool | None = None) -> None: ...


class ReplicationQuorum(MembershipQuorum, Protocol):
    """The quorum state as the replication handlers change it: a follower's
    fetch timer, its snapshot download and install, its high watermark (and,
    through the leader's commit, a voter change's completion)."""

    def reset_fetch_timeout(self, now_ms: int) -> None: ...
    def set_fetching_snapshot(self, download: SnapshotDownload | None) -> None: ...
    def set_installing_snapshot(self, snapshot_id: OffsetAndEpoch | None) -> None: ...
    def set_leader_high_watermark(self, leader_high_watermark: int) -> None: ...
    def update_follower_high_watermark(self, high_watermark: int) -> bool: ...


class ReplicaIdentity(Protocol):
    """Who this replica is and what it serves: what the epoch gate reads
    besides the quorum state (:class:`kraft.raft.epoch_gate.GateView`), and
    every handler too."""

    @property
    def local_key(self) -> ReplicaKey | None: ...
    @property
    def cluster_id(self) -> str | None: ...
    @property
    def topic_partition(self) -> TopicPartition: ...
    @property
    def voters(self) -> VoterSet: ...
    @property
    def shutting_down(self) -> bool: ...


class HandlerView(ReplicaIdentity, Protocol):
    """What every handler reads besides the quorum state: the log
    (read-only), the voter set, and who and what this replica is."""

    @property
    def config(self) -> QuorumConfig: ...
    @property
    def log(self) -> LogView: ...
    @property
    def log_end(self) -> OffsetAndEpoch:
        """The log end offset and the epoch of the last record (what votes compare)."""
        ...
    @property
    def voters_offset(self) -> int | None: ...
    @property
    def kraft_version(self) -> int: ...
    @property
    def default_listener(self) -> str: ...
    @property
    def committed_offset(self) -> int | None: ...
    @property
    def followers_always_flush(self) -> bool: ...


class Effects(Protocol):
    """What a handler may produce: each adds to the ``Ready`` being built
    (``expose_committed``: the new committed offset, never a lower one)."""

    def respond(self, env: InboundRequest, response: RaftResponse) -> None: ...
    def send_request_now(self, now_ms: int, destination: int, request: RaftRequest) -> int | None: ...
    def emit_log(self, op: LogOp) -> None: ...
    def has_pending_log(self) -> bool: ...
    def violation(self, source: int, description: str) -> None: ...
    def expose_committed(self, high_watermark: int) -> None: ...


class Transitions(Protocol):
    """The role changes an election handler may request (Kafka's handlers
    ask ``QuorumState``); the core carries them out, with what a transition
    implies beyond the role (the requests in flight, the leader's parked
    fetches, the first records of a new epoch)."""

    def maybe_transition_forward(self, now_ms: int) -> None: ...
    def prospective_lost(self, now_ms: int, why: str) -> None: ...


class ElectionContext(HandlerView, Effects, Transitions, Protocol):
    """What the election handlers (Vote, BeginQuorumEpoch, EndQuorumEpoch) get."""

    @property
    def quorum(self) -> ElectionQuorum: ...


class MembershipContext(HandlerView, Effects, Protocol):
    """What the voter-change handlers (AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter) get."""

    @property
    def quorum(self) -> MembershipQuorum: ...


class ReplicationContext(HandlerView, Effects, Protocol):
    """What the replication handlers (Fetch, FetchSnapshot) get."""

    @property
    def quorum(self) -> ReplicationQuorum: ...


class HandlerContext(ElectionContext, ReplicationContext, MembershipContext, Protocol):
    """Every family's view at once: what the core (and the poll that builds
    each family's requests) provides. A handler is typed with its own
    family's context and cannot reach the rest."""

    @property
    def quorum(self) -> QuorumState: ...
