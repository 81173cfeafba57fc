"""The epoch gate: what every quorum RPC's request and answer pass once,
before its handler.

Kafka spreads it over ``KafkaRaftClient``: ``validateVoterOnlyRequest``
(Vote, BeginQuorumEpoch, EndQuorumEpoch), ``validateLeaderOnlyRequest``
(Fetch, FetchSnapshot; :func:`~kraft.raft.families.common.validate_leader_only`,
which the voter changes' handler and a parked Fetch's completion call too),
``maybeTransition`` and ``maybeHandleCommonResponse``. Here it is one
place, and pure: it reads the
quorum state through :class:`GateView` and returns a :class:`Verdict`. The
core records the violation, carries out the :class:`Move` (a newer epoch, or
the leader of ours), and then answers with the error, or lets the RPC's
handler run in the receiver's current epoch.

A stale epoch is fenced (FENCED_LEADER_EPOCH); a newer one moves this
replica to it first, except for Fetch and FetchSnapshot, which only the
leader of exactly that epoch serves (UNKNOWN_LEADER_EPOCH,
NOT_LEADER_OR_FOLLOWER), and for a pre-vote, which never disrupts (KIP-996).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from kraft.raft.errors import Errors
from kraft.raft.rpcs import (
    BeginQuorumEpochRequest, EndQuorumEpochRequest, FetchRequest, FetchSnapshotRequest, VoteRequest,
)
from kraft.raft.families.common import QuorumReader, ReplicaIdentity, validate_leader_only
from kraft.raft.roles import Leader, Resigned, Unattached
from kraft.raft.voters import Endpoints, ReplicaKey

__all__ = ["GateView", "Move", "PASS", "QuorumRequest", "Verdict", "check_request", "check_response", "epoch_move"]

#: The requests of the quorum RPCs (Vote, BeginQuorumEpoch, EndQuorumEpoch,
#: Fetch, FetchSnapshot), which pass the gate. The voter changes check their
#: leader epoch in their handler, as Kafka's AddVoterHandler does.
QuorumRequest = VoteRequest | BeginQuorumEpochRequest | EndQuorumEpochRequest | FetchRequest | FetchSnapshotRequest


class GateView(ReplicaIdentity, Protocol):
    """What the gate reads: the quorum state, and who this replica is."""

    @property
    def quorum(self) -> QuorumReader: ...


@dataclass(frozen=True, slots=True)
class Move:
    """A role change a peer's message calls for: follow ``leader_id`` in
    ``epoch`` when its endpoints are known, else Unattached in ``epoch``
    (knowing the leader's id, or not)."""

    epoch: int
    leader_id: int | None
    endpoints: Endpoints
    reason: str

    @property
    def follows(self) -> bool:
        return self.leader_id is not None and bool(self.endpoints)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the gate decided. For a request, ``error`` is answered: on the
    partition with the leader fields after the move, or (``bare``) with the
    RPC's bare error answer, which carries no leader (a cluster id or
    partition mismatch; top-level unless ``partition_level``). For an
    answer, ``outcome`` is the result when the gate dealt with it (True:
    handled, False: back off from the peer), None to run its handler."""

    move: Move | None = None
    violation: str | None = None
    error: Errors | None = None
    bare: bool = False
    partition_level: bool = False
    outcome: bool | None = None


#: Let the handler run.
PASS = Verdict()


def peer_name(node_id: int) -> str:
    """A peer as a role-change reason names it: bootstrap servers have
    negative ids (-1, -2, ... in controller.quorum.bootstrap.servers order)."""
    return f"node {node_id}" if node_id >= 0 else f"bootstrap server {-node_id}"


def _validate_voter_only(quorum: QuorumReader, remote: ReplicaKey, epoch: int) -> Errors | None:
    """Vote, BeginQuorumEpoch, EndQuorumEpoch (Kafka 3.9+/4.x
    ``KafkaRaftClient.validateVoterOnlyRequest``): only the epoch and a
    non-negative id are checked, under kraft.version 0 as under 1 --
    membership is not: the two ends may disagree for a while (a voter
    just added may lack its VotersRecord), and a candidate only counts
    the votes of its own voters. Stricter than Kafka: a request naming
    this replica's own id is INVALID_REQUEST (a replica never votes for,
    or follows, itself through the wire)."""
    if epoch < quorum.epoch:
        return Errors.FENCED_LEADER_EPOCH
    if remote.id < 0 or remote.id == quorum.local_id:
        return Errors.INVALID_REQUEST
    return None


def _is_valid_voter_key(view: GateView, key: ReplicaKey | None) -> bool:
    local = view.local_key
    if key is None:
        return True
    if local is None or key.id != local.id:
        return False
    return key.directory_id is None or key.directory_id == local.directory_id


def _is_former_self(view: GateView, leader_id: int | None, epoch: int) -> bool:
    """A peer names our id as the leader of an epoch we did not lead. With
    directory ids (KIP-853) that is another replica with our id -- the one
    whose disk we replaced -- not us: treat its epoch as leaderless."""
    local = view.local_key
    quorum = view.quorum
    return (
        leader_id is not None
        and local is not None
        and leader_id == local.id
        and local.directory_id is not None
        and not (epoch == quorum.epoch and isinstance(quorum.role, (Leader, Resigned)))
    )


def _has_consistent_leader(quorum: QuorumReader, epoch: int, leader_id: int | None) -> bool:
    """False if ``leader_id`` contradicts what we know about ``epoch``: two
    leaders in one epoch, which no correct cluster produces."""
    if leader_id is not None and leader_id == quorum.local_id:
        return epoch == quorum.epoch and isinstance(quorum.role, (Leader, Resigned))
    return epoch != quorum.epoch or leader_id is None or not quorum.has_leader or leader_id == quorum.leader_id


def _named_leader(
    view: GateView, leader_id: int | None, epoch: int, endpoints: Endpoints
) -> tuple[int | None, Endpoints]:
    """The leader a peer named for ``epoch``, as we take it: none if it is a
    former self, else with the voter set's endpoints when it gave none."""
    if _is_former_self(view, leader_id, epoch):
        return None, ()
    if leader_id is not None and not endpoints:
        endpoints = view.voters.endpoints(leader_id)
    return leader_id, endpoints


def epoch_move(view: GateView, source: int, leader_id: int | None, epoch: int, endpoints: Endpoints) -> Verdict:
    """What a peer told us about ``epoch`` (Kafka's ``maybeTransition``): a
    move to adopt, nothing, or a violation on a contradiction. The leader is
    as :func:`_named_leader` gives it."""
    quorum = view.quorum
    if not _has_consistent_leader(quorum, epoch, leader_id):
        return Verdict(violation=f"leader {leader_id} for epoch {epoch} contradicts local leader "
                                 f"{quorum.leader_id} in epoch {quorum.epoch} ({quorum.role.name})")
    if epoch > quorum.epoch:
        if leader_id is not None and endpoints:
            return Verdict(Move(epoch, leader_id, endpoints,
                                f"{peer_name(source)} named leader {leader_id} of epoch {epoch}"))
        return Verdict(Move(epoch, leader_id, (), f"{peer_name(source)} is in epoch {epoch}"))
    if (
        leader_id is not None
        and leader_id != quorum.local_id
        and endpoints
        and (not quorum.has_leader or len(endpoints) > len(quorum.leader_endpoints))
    ):
        return Verdict(Move(epoch, leader_id, endpoints, f"{peer_name(source)} named leader {leader_id} of epoch {epoch}"))
    return PASS


def check_request(view: GateView, source: int, msg: QuorumRequest) -> Verdict:
    """The gate every quorum request passes once: cluster id, partition,
    field sanity, epoch (fence, or move to a newer one), voter key."""
    if msg.cluster_id is not None and view.cluster_id is not None and msg.cluster_id != view.cluster_id:
        return Verdict(error=Errors.INCONSISTENT_CLUSTER_ID, bare=True)
    if msg.topic_partition != view.topic_partition:
        if isinstance(msg, FetchSnapshotRequest):
            return Verdict(error=Errors.UNKNOWN_TOPIC_OR_PARTITION, bare=True, partition_level=True)
        # Until multi-raft, a partition mismatch is an invalid request.
        return Verdict(error=Errors.INVALID_REQUEST, bare=True)
    quorum = view.quorum
    match msg:
        case VoteRequest():
            illegal_epoch = (
                msg.last_offset_epoch > msg.candidate_epoch if msg.pre_vote
                else msg.last_offset_epoch >= msg.candidate_epoch
            )
            if msg.last_offset < 0 or msg.last_offset_epoch < 0 or illegal_epoch:
                return Verdict(error=Errors.INVALID_REQUEST)
            error = _validate_voter_only(quorum, msg.candidate_key, msg.candidate_epoch)
            if error is not None:
                return Verdict(error=error)
            move = None
            if msg.candidate_epoch > quorum.epoch and not msg.pre_vote:
                move = Move(msg.candidate_epoch, None, (),
                            f"vote request from candidate {msg.candidate_key.id} in epoch {msg.candidate_epoch}")
            if not _is_valid_voter_key(view, msg.voter_key):
                return Verdict(move, error=Errors.INVALID_VOTER_KEY)
            return PASS if move is None else Verdict(move)
        case BeginQuorumEpochRequest() | EndQuorumEpochRequest():
            error = _validate_voter_only(quorum, ReplicaKey(msg.leader_id), msg.leader_epoch)
            if error is not None:
                return Verdict(error=error)
            leader_id, endpoints = _named_leader(view, msg.leader_id, msg.leader_epoch, msg.leader_endpoints)
            verdict = epoch_move(view, source, leader_id, msg.leader_epoch, endpoints)
            if verdict.violation is not None:
                return Verdict(violation=verdict.violation, error=Errors.INVALID_REQUEST)
            if isinstance(msg, BeginQuorumEpochRequest) and not _is_valid_voter_key(view, msg.voter_key):
                return Verdict(verdict.move, error=Errors.INVALID_VOTER_KEY)
            return verdict
        case FetchRequest():
            if (
                msg.max_wait_ms < 0
                or msg.fetch_offset < 0
                or msg.last_fetched_epoch < 0
                or msg.last_fetched_epoch > msg.current_leader_epoch
                or (msg.replica_key.id >= 0 and msg.replica_key.id == quorum.local_id)
            ):
                return Verdict(error=Errors.INVALID_REQUEST)
    error = validate_leader_only(quorum, msg.current_leader_epoch, view.shutting_down)
    return PASS if error is None else Verdict(error=error)


def check_response(
    view: GateView, source: int, error: Errors, leader_id: int | None, epoch: int, endpoints: Endpoints
) -> Verdict:
    """The gate for answers (Kafka's ``maybeHandleCommonResponse``): old
    news, a newer epoch or leader to adopt, a contradiction, or an error
    its handler need not see. ``outcome`` None passes the answer to its
    handler (then its epoch equals ours)."""
    quorum = view.quorum
    leader_id, endpoints = _named_leader(view, leader_id, epoch, endpoints)
    if epoch < quorum.epoch or error is Errors.UNKNOWN_LEADER_EPOCH:
        return Verdict(outcome=True)  # we already know a larger epoch: old news
    if epoch > quorum.epoch or error in (Errors.FENCED_LEADER_EPOCH, Errors.NOT_LEADER_OR_FOLLOWER):
        verdict = epoch_move(view, source, leader_id, epoch, endpoints)
        return Verdict(verdict.move, verdict.violation, outcome=verdict.violation is None)
    if not _has_consistent_leader(quorum, epoch, leader_id):
        return Verdict(violation=f"response names leader {leader_id} for epoch {epoch}, we know {quorum.leader_id}",
                       outcome=False)
    if leader_id is not None and (not quorum.has_leader or (
            leader_id == quorum.leader_id and not quorum.leader_endpoints and isinstance(quorum.role, Unattached))):
        if not endpoints:
            return Verdict(outcome=True)
        # Learned the leader of our epoch, or where the leader we knew by id
        # only listens (Kafka's maybeTransition adopts "more endpoints";
        # else a replica restarted without them asks the bootstrap servers
        # forever): handle the answer as its follower (an observer
        # discovers the leader and appends in one Fetch).
        move = Move(epoch, leader_id, endpoints, f"{peer_name(source)} named leader {leader_id} of epoch {epoch}")
        return Verdict(move, outcome=None if error is Errors.NONE else True)
    if error is Errors.BROKER_NOT_AVAILABLE:
        return Verdict(outcome=False)
    if error is Errors.INVALID_VOTER_KEY:
        return Verdict(outcome=True)
    if error is Errors.INVALID_REQUEST:
        # A bootstrap server (negative id) may turn out to be ourselves.
        return Verdict(violation="peer rejected our request as invalid" if source >= 0 else None, outcome=False)
    return PASS
