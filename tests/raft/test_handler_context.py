"""The handlers run on what Kafka's handlers get, not on RaftCore.

Kafka's ``KafkaRaftClient.handleVoteRequest`` and ``handleFetchRequest`` act
on ``QuorumState`` (and a leader's ``LeaderState``) and produce answers;
``AddVoterHandler`` gets the leader state and a request sender. Ours get
their family's context (:mod:`kraft.raft.families.common`): what they read,
the effects they may produce, and a narrow view of the quorum state.
Here :class:`Replica` -- a QuorumState, an in-memory log and lists of what
the handlers produced, no RaftCore -- is that context, for each handler
family: elections (requests and responses, the role changes requested
through :class:`~kraft.raft.families.common.Transitions`), fetches (parking,
the epoch check, the high watermark kept on the leader's state) and voter
changes (Kafka's ``RemoveVoterHandler``/``AddVoterHandler``).
"""

from __future__ import annotations

import random
import uuid

from kraft.raft.errors import Errors
from kraft.raft.events import METADATA_PARTITION, InboundRequest, RaftRequest, RaftResponse, TopicPartition
from kraft.raft.rpcs import (
    AddRaftVoterRequest, AddRaftVoterResponse, FetchRequest, RemoveRaftVoterRequest, RemoveRaftVoterResponse,
    VoteRequest, VoteResponse, add_raft_voter_rpc, fetch_rpc, remove_raft_voter_rpc, vote_rpc,
)
from kraft.raft.families.common import HandlerContext
from kraft.raft.logops import LogOp
from kraft.raft.quorum_config import QuorumConfig
from kraft.raft.quorum_state import QuorumState
from kraft.raft.roles import Candidate, Leader, Prospective
from kraft.raft.voters import Endpoint, ReplicaKey, VoterNode, VoterSet
from kraft.records.view import LogView, OffsetAndEpoch
from kraft.sim.memlog import MemLog

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"


class Replica:
    """A :class:`HandlerContext` without a RaftCore."""

    def __init__(self, local_id: int, voters: VoterSet, directory_id: uuid.UUID | None = None) -> None:
        self.config = QuorumConfig()
        self.local_key: ReplicaKey | None = ReplicaKey(local_id, directory_id)
        self.quorum = QuorumState(local_key=self.local_key, voters=voters, config=self.config, rng=random.Random(7))
        self.quorum.initialize(None, OffsetAndEpoch(0, 0), now_ms=0)
        self.log: LogView = MemLog()
        self.cluster_id: str | None = CLUSTER
        self.topic_partition: TopicPartition = METADATA_PARTITION
        self.voters = voters
        self.voters_offset: int | None = None
        self.kraft_version = 0
        self.default_listener = "CONTROLLER"
        self.committed_offset: int | None = None
        self.followers_always_flush = True
        self.shutting_down = False
        # What the handlers produced.
        self.responses: list[tuple[InboundRequest, RaftResponse]] = []
        self.requests: list[tuple[int, RaftRequest]] = []
        self.log_ops: list[LogOp] = []
        self.violations: list[str] = []
        self.committed: list[int] = []
        self.transitions: list[str] = []

    @property
    def log_end(self) -> OffsetAndEpoch:
        return OffsetAndEpoch(self.log.end_offset, self.log.last_epoch)

    def respond(self, env: InboundRequest, response: RaftResponse) -> None:
        self.responses.append((env, response))

    def send_request_now(self, now_ms: int, destination: int, request: RaftRequest) -> int | None:
        self.requests.append((destination, request))
        return len(self.requests)

    def emit_log(self, op: LogOp) -> None:
        self.log_ops.append(op)

    def has_pending_log(self) -> bool:
        return bool(self.log_ops)

    def violation(self, source: int, description: str) -> None:
        self.violations.append(description)

    def expose_committed(self, high_watermark: int) -> None:
        self.committed.append(high_watermark)

    def maybe_transition_forward(self, now_ms: int) -> None:
        self.transitions.append("forward")

    def prospective_lost(self, now_ms: int, why: str) -> None:
        self.transitions.append(why)


def _context(replica: Replica) -> HandlerContext:
    return replica  # type-checked: Replica implements the handlers' interface


def vote(candidate: int, epoch: int, last_offset: int = 0, pre_vote: bool = False) -> VoteRequest:
    return VoteRequest(cluster_id=CLUSTER, candidate_epoch=epoch, candidate_key=ReplicaKey(candidate),
                       last_offset_epoch=0, last_offset=last_offset, pre_vote=pre_vote)


def test_a_vote_is_granted_once_per_epoch_on_the_role_state() -> None:
    """KIP-595 Vote handling (Kafka's handleVoteRequest): an unattached voter
    grants the first up-to-date candidate of the epoch, records the vote for
    persistence, and refuses a second candidate of the same epoch."""
    replica = Replica(1, VoterSet.from_ids([1, 2, 3]))
    replica.quorum.transition_to_unattached(1, now_ms=0)
    replica.quorum.take_pending_persist()
    granted = vote_rpc.handle_request(_context(replica), 0, InboundRequest(2, 1, vote(2, 1)))
    assert granted.vote_granted and granted.leader_epoch == 1
    assert replica.quorum.voted_key == ReplicaKey(2)
    persisted = replica.quorum.take_pending_persist()
    assert persisted is not None and persisted.voted_key == ReplicaKey(2)
    refused = vote_rpc.handle_request(_context(replica), 1, InboundRequest(3, 2, vote(3, 1)))
    assert not refused.vote_granted and replica.quorum.voted_key == ReplicaKey(2)
    # A Vote is answered by its return value: no other effect.
    assert (replica.responses, replica.requests, replica.log_ops, replica.transitions) == ([], [], [], [])


def test_a_pre_vote_binds_nothing() -> None:
    """KIP-996: a pre-vote is granted without recording a vote."""
    replica = Replica(1, VoterSet.from_ids([1, 2, 3]))
    replica.quorum.transition_to_unattached(1, now_ms=0)
    replica.quorum.take_pending_persist()
    assert vote_rpc.handle_request(_context(replica), 0, InboundRequest(2, 1, vote(2, 1, pre_vote=True))).vote_granted
    assert replica.quorum.voted_key is None and replica.quorum.take_pending_persist() is None


def _sole_leader() -> Replica:
    replica = Replica(1, VoterSet.from_ids([1]))
    replica.quorum.transition_to_prospective(now_ms=0)
    replica.quorum.transition_to_candidate(now_ms=0)
    replica.quorum.transition_to_leader(epoch_start_offset=0, now_ms=0)
    return replica


def fetch_from(replica_id: int, epoch: int, max_wait_ms: int) -> InboundRequest:
    return InboundRequest(replica_id, 7, FetchRequest(
        cluster_id=CLUSTER, replica_key=ReplicaKey(replica_id), current_leader_epoch=epoch, fetch_offset=0,
        last_fetched_epoch=0, max_wait_ms=max_wait_ms, max_bytes=1 << 20))


def test_a_fetch_with_nothing_new_is_parked_on_the_leader_state() -> None:
    """Kafka's fetch purgatory: a Fetch with nothing to return waits on the
    leader's state (up to max_wait_ms) instead of being answered."""
    replica = _sole_leader()
    leader = replica.quorum.role
    assert isinstance(leader, Leader)
    assert fetch_rpc.handle_request(_context(replica), 10, fetch_from(5, leader.epoch, 500)) is None
    assert [p.deadline_ms for p in leader.state.parked] == [510]
    assert replica.responses == [] and replica.log_ops == []


def test_a_parked_fetch_that_outlived_its_epoch_is_answered_with_the_error() -> None:
    """The core's gate checks a new Fetch's epoch; a parked one is checked
    again when it completes (``try_complete_fetch``)."""
    replica = _sole_leader()
    leader = replica.quorum.role
    assert isinstance(leader, Leader)
    parked = fetch_from(5, leader.epoch + 1, 500).message
    assert isinstance(parked, FetchRequest)
    response = fetch_rpc.try_complete_fetch(_context(replica), 10, parked)
    assert response.partition_error is Errors.UNKNOWN_LEADER_EPOCH
    assert leader.state.parked == []


def test_a_vote_response_requests_the_transition_and_does_not_make_it() -> None:
    """Kafka's ``handleVoteResponse``: the vote is recorded on the role state;
    the move forward once a majority granted is requested through the
    transitions interface, which the core carries out."""
    replica = Replica(1, VoterSet.from_ids([1, 2, 3]))
    replica.quorum.transition_to_prospective(now_ms=0)
    assert vote_rpc.handle_response(_context(replica), 5, 2, VoteResponse(
        vote_granted=True, leader_id=-1, leader_epoch=0, leader_endpoints=()))
    role = replica.quorum.role
    assert isinstance(role, Prospective) and role.votes.is_vote_granted()
    assert replica.transitions == ["forward"]
    assert vote_rpc.handle_response(_context(replica), 6, 3, VoteResponse(
        vote_granted=False, leader_id=-1, leader_epoch=0, leader_endpoints=()))
    assert isinstance(replica.quorum.role, Prospective) and replica.transitions == ["forward"]


DIRS = {i: uuid.UUID(int=i) for i in (1, 2, 3, 4)}


def _dynamic_leader() -> tuple[Replica, Leader]:
    """The leader of three voters with directory ids (kraft.version 1), its
    VotersRecord at offset 0, its epoch starting at 5 and the high watermark at 6."""
    voters = VoterSet.of(VoterNode(ReplicaKey(i, DIRS[i]), (Endpoint("CONTROLLER", f"node-{i}", 9093),))
                         for i in (1, 2, 3))
    replica = Replica(1, voters, DIRS[1])
    replica.kraft_version, replica.voters_offset = 1, 0
    quorum = replica.quorum
    quorum.transition_to_prospective(now_ms=0)
    quorum.record_vote(2, True)
    quorum.transition_to_candidate(now_ms=0)
    assert isinstance(quorum.role, Candidate)
    quorum.record_vote(2, True)
    leader = quorum.transition_to_leader(epoch_start_offset=5, now_ms=0)
    leader.progress.update_local_end_offset(6)
    assert leader.progress.update_replica(ReplicaKey(2, DIRS[2]), 0, 6)
    assert leader.high_watermark == 6
    return replica, leader


def test_a_voter_change_at_a_replica_that_is_not_the_leader_is_refused() -> None:
    """Kafka's ``KafkaRaftClient.handleAddVoterRequest``: only the leader
    (checked on the role state) takes a voter change."""
    replica = Replica(1, VoterSet.from_ids([1, 2, 3]))
    replica.quorum.transition_to_unattached(1, now_ms=0)
    env = InboundRequest(-1, 3, AddRaftVoterRequest(
        cluster_id=CLUSTER, voter_key=ReplicaKey(4, DIRS[4]), listeners=(Endpoint("CONTROLLER", "node-4", 9093),)))
    response = add_raft_voter_rpc.handle_request(_context(replica), 0, env)
    # The refusal is the handler's return value, which the core sends.
    assert replica.responses == []
    assert response is not None and (type(response), response.error) == (
        AddRaftVoterResponse, Errors.NOT_LEADER_OR_FOLLOWER)


def test_a_voter_removal_is_answered_once_the_high_watermark_commits_it() -> None:
    """Kafka's ``RemoveVoterHandler``: the smaller voter set is appended on
    the leader's state, and the answer waits until the high watermark --
    kept on the leader's replica progress -- passes it."""
    replica, leader = _dynamic_leader()
    env = InboundRequest(-1, 9, RemoveRaftVoterRequest(cluster_id=CLUSTER, voter_key=ReplicaKey(3, DIRS[3])))
    assert remove_raft_voter_rpc.handle_request(_context(replica), 10, env) is None
    pending = leader.state.voter_change
    assert pending is not None and pending.kind == "remove" and pending.last_offset is not None
    assert replica.responses == []
    assert leader.high_watermark is not None
    end = max(pending.last_offset, leader.high_watermark) + 1
    leader.progress.update_local_end_offset(end)
    assert leader.progress.update_replica(ReplicaKey(2, DIRS[2]), 20, end)
    fetch_rpc.leader_high_watermark_advanced(_context(replica), 20, leader)
    assert replica.committed == [end]
    assert [(e, type(r), r.error) for e, r in replica.responses] == [(env, RemoveRaftVoterResponse, Errors.NONE)]
    assert leader.state.voter_change is None


def test_a_higher_high_watermark_answers_the_parked_fetches() -> None:
    """Kafka's ``onUpdateLeaderHighWatermark``: the parked fetches are
    completed from the leader's state, each answered through ``respond``."""
    replica, leader = _dynamic_leader()
    # Nothing to read (the leader's log is empty) and the fetcher knows the high watermark: parked.
    parked = InboundRequest(3, 7, FetchRequest(
        cluster_id=CLUSTER, replica_key=ReplicaKey(3, DIRS[3]), current_leader_epoch=leader.epoch, fetch_offset=0,
        last_fetched_epoch=0, max_wait_ms=500, max_bytes=1 << 20, high_watermark=6))
    assert fetch_rpc.handle_request(_context(replica), 10, parked) is None
    leader.progress.update_local_end_offset(7)
    assert leader.progress.update_replica(ReplicaKey(2, DIRS[2]), 11, 7)
    fetch_rpc.leader_high_watermark_advanced(_context(replica), 11, leader)
    assert leader.state.parked == [] and replica.committed == [7]
    assert [(e, r.high_watermark) for e, r in replica.responses] == [(parked, 7)]


def test_each_handler_family_sees_only_its_own_narrow_view() -> None:
    """A handler is typed with its family's context, whose ``quorum`` offers
    reads and that family's few changes: no transition, no other family's
    changes (mypy holds every handler to it; this pins the shape)."""
    import inspect

    from kraft.raft.families import common
    from kraft.raft.quorum_state import QuorumState

    from kraft.raft.rpcs import (
        api_versions_rpc, begin_quorum_epoch_rpc, end_quorum_epoch_rpc, fetch_snapshot_rpc, update_raft_voter_rpc,
    )

    families = {vote_rpc: "ElectionContext", begin_quorum_epoch_rpc: "ElectionContext",
                end_quorum_epoch_rpc: "ElectionContext", fetch_rpc: "ReplicationContext",
                fetch_snapshot_rpc: "ReplicationContext", add_raft_voter_rpc: "MembershipContext",
                remove_raft_voter_rpc: "MembershipContext", update_raft_voter_rpc: "MembershipContext",
                api_versions_rpc: "MembershipContext"}
    for module, context in families.items():
        for name, value in vars(module).items():
            if inspect.isfunction(value) and value.__module__ == module.__name__:
                ctx = inspect.signature(value).parameters.get("ctx")
                if ctx is not None and name.startswith("handle_"):
                    assert ctx.annotation == context, (module.__name__, name, ctx.annotation)

    def members(view: type) -> set[str]:
        return {n for n in dir(view) if not n.startswith("_")}

    reads = members(common.QuorumReader)
    views = {view: members(view) - reads for view in (common.ElectionQuorum, common.ReplicationQuorum,
                                                       common.MembershipQuorum)}
    for view, changes in views.items():
        assert changes and changes <= members(QuorumState), view
        assert not any(n.startswith(("transition_to", "initialize", "update_voters")) for n in changes), view
    assert views[common.ElectionQuorum].isdisjoint(views[common.ReplicationQuorum])
    assert not any(callable(getattr(QuorumState, n, None)) and not isinstance(getattr(QuorumState, n), property)
                   for n in reads)
