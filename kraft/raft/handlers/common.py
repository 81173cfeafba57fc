"""What every handler family shares: the interfaces a handler gets (defined
once, for elections, replication and voter changes alike), the
current-leader fields of a response, and error answers for any request of
the core's RPCs.

As Kafka's ``AddVoterHandler``, ``RemoveVoterHandler`` and
``UpdateVoterHandler`` get the leader state and a request sender, and
``KafkaRaftClient.handleFetchRequest``/``handleVoteRequest`` act on
``QuorumState`` and its ``LeaderState``, a handler gets a
:class:`RoleView` (the role state it acts on, the read-only log, who this
replica is) and :class:`Effects` (what it may produce: answers, requests,
log operations, protocol violations, and the role changes and committed
offsets the core then carries out). :class:`~kraft.raft.core.RaftCore`
implements both; so do the tests (``tests/raft/test_handler_context.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypedDict

from kraft.raft.errors import Errors
from kraft.raft.events import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    RaftRequest,
    RaftResponse,
    VoteRequest,
    VoteResponse,
)
from kraft.raft.voters import Endpoints

if TYPE_CHECKING:
    from kraft.raft.events import InboundRequest, TopicPartition
    from kraft.raft.logops import LogOp
    from kraft.raft.quorum_config import QuorumConfig
    from kraft.raft.quorum_state import QuorumState
    from kraft.raft.voters import ReplicaKey, VoterSet
    from kraft.records.view import LogView


class LeaderFields(TypedDict):
    """The current-leader fields every KRaft response carries."""

    leader_id: int
    leader_epoch: int
    leader_endpoints: Endpoints


def partition_error_response(request: RaftRequest, error: Errors, common: LeaderFields) -> RaftResponse:
    """A partition-level error answer to a Vote, BeginQuorumEpoch,
    EndQuorumEpoch or FetchSnapshot request, carrying our epoch and leader."""
    match request:
        case VoteRequest():
            return VoteResponse(partition_error=error, **common)
        case BeginQuorumEpochRequest():
            return BeginQuorumEpochResponse(partition_error=error, **common)
        case EndQuorumEpochRequest():
            return EndQuorumEpochResponse(partition_error=error, **common)
        case FetchSnapshotRequest():
            return FetchSnapshotResponse(partition_error=error, **common)
    raise TypeError(f"not a request with a partition-level error: {request!r}")


def top_level_error_response(request: RaftRequest, error: Errors) -> RaftResponse:
    """A top-level error answer (cluster id or partition mismatch)."""
    match request:
        case VoteRequest():
            return VoteResponse(error=error)
        case BeginQuorumEpochRequest():
            return BeginQuorumEpochResponse(error=error)
        case EndQuorumEpochRequest():
            return EndQuorumEpochResponse(error=error)
        case FetchRequest():
            return FetchResponse(error=error)
        case FetchSnapshotRequest():
            return FetchSnapshotResponse(error=error)
    raise TypeError(f"not a request: {request!r}")


class RoleView(Protocol):
    """What a handler acts on and reads: the role state (``quorum``: the
    current role object, with a leader's :class:`~kraft.raft.leader_state.LeaderState`
    or a follower's fetch state), the log (read-only), the voter set, and
    who and what this replica is."""

    @property
    def quorum(self) -> QuorumState: ...
    @property
    def config(self) -> QuorumConfig: ...
    @property
    def log(self) -> LogView: ...
    @property
    def local_key(self) -> ReplicaKey | None: ...
    @property
    def cluster_id(self) -> str | None: ...
    @property
    def topic_partition(self) -> TopicPartition: ...
    @property
    def voters(self) -> VoterSet: ...
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

    def response_common(self) -> LeaderFields: ...
    def validate_leader_only(self, epoch: int) -> Errors | None: ...


class Effects(Protocol):
    """What a handler may produce. The first five only add to the ``Ready``
    being built; the last four are the core's to carry out, since they touch
    more than the handler's role (a role change, a high watermark that other
    parked fetches and the pending voter change wait for)."""

    def respond(self, env: InboundRequest, response: RaftResponse) -> None: ...
    def send_request_now(self, now_ms: int, destination: int, request: RaftRequest) -> int | None: ...
    def emit_log(self, op: LogOp) -> None: ...
    def has_pending_log(self) -> bool: ...
    def violation(self, source: int, description: str) -> None: ...
    def note_committed(self, high_watermark: int) -> None: ...
    def on_leader_high_watermark(self, now_ms: int) -> None: ...
    def maybe_transition_forward(self, now_ms: int) -> None: ...
    def prospective_lost(self, now_ms: int, why: str) -> None: ...


class HandlerContext(RoleView, Effects, Protocol):
    """All a handler gets."""
