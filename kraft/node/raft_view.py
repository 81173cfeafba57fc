"""What the node's parts (admin answers, features, snapshots, metrics and
the metrics endpoint, listeners) see of its raft: a read-only view, defined
once, that :class:`~kraft.node.raft_driver.RaftDriver` implements, as
Kafka's listeners and controller see only the ``RaftClient`` interface.

:class:`QuorumFacts` is what may be read of the core between two of its
calls (the client steps it only in its own task, and every other task runs
between two whole calls); :class:`RaftView` adds the client's own state and
the log lock; :class:`RaftWriter` the few actions that go through the
client's task (a kraft.version upgrade, work on the log);
:class:`InboundRaft` the answering of raft requests.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import trio

    from kraft.raft.events import RaftRequest, RaftResponse, TopicPartition
    from kraft.raft.handover import HandoverStats
    from kraft.raft.leader_state import HandoverLeadership
    from kraft.raft.rpcs.describe_quorum_rpc import QuorumInfo
    from kraft.raft.roles import LeaderAndEpoch, Role
    from kraft.raft.voters import VoterSet
    from kraft.records.log import MetadataLog
    from kraft.records.view import OffsetAndEpoch

__all__ = ["InboundRaft", "QuorumFacts", "RaftView", "RaftWriter"]


class QuorumFacts(Protocol):
    """The facts of the raft core the node reports (kraft version, voter set,
    role, epoch, ...) and its snapshot-id check."""

    @property
    def role(self) -> Role: ...
    @property
    def epoch(self) -> int: ...
    @property
    def leader_id(self) -> int | None: ...
    @property
    def high_watermark(self) -> int | None: ...
    @property
    def is_leader(self) -> bool: ...
    @property
    def is_voter(self) -> bool: ...
    @property
    def local_id(self) -> int | None: ...
    @property
    def kraft_version(self) -> int: ...
    @property
    def voters(self) -> VoterSet: ...
    @property
    def voters_offset(self) -> int | None: ...
    @property
    def upgrade_voters(self) -> VoterSet | None: ...
    @property
    def pending_voter_change(self) -> str | None: ...
    @property
    def topic_partition(self) -> TopicPartition: ...
    @property
    def handover_leadership(self) -> HandoverLeadership | None:
        """Set while this witness leads a hand-over epoch (kraft/raft/handover.py)."""
    @property
    def handover_stats(self) -> HandoverStats: ...

    def describe_quorum(self, now_ms: int) -> QuorumInfo | None: ...
    def validate_snapshot_id(self, snapshot_id: OffsetAndEpoch) -> None: ...


class RaftView(Protocol):
    """A node's raft, read-only."""

    @property
    def core(self) -> QuorumFacts: ...
    @property
    def initialized(self) -> bool: ...
    @property
    def stopped(self) -> trio.Event: ...
    @property
    def storage_error(self) -> OSError | None: ...
    @property
    def leader(self) -> LeaderAndEpoch: ...
    @property
    def high_watermark(self) -> int: ...
    @property
    def committed(self) -> trio.Condition: ...
    @property
    def log_lock(self) -> trio.Lock: ...
    @property
    def log(self) -> MetadataLog:
        """Read it holding :attr:`log_lock`."""

    def clock_ms(self) -> int: ...


class RaftWriter(RaftView, Protocol):
    """A node's raft with the actions that run through its task."""

    def upgrade_kraft_version(self, level: int, *, validate_only: bool = False) -> OffsetAndEpoch | None: ...
    async def wait_committed(self, position: OffsetAndEpoch) -> None: ...
    async def run_on_log(self, fn: Callable[[MetadataLog], Any], *, in_thread: bool = True) -> Any: ...


class InboundRaft(RaftWriter, Protocol):
    """What the inbound side (:mod:`kraft.node.controller_apis`) needs: the
    view, and a way to have the core answer a raft request."""

    async def handle_request(self, source: int, request: RaftRequest, timeout_ms: int) -> RaftResponse | None: ...
