"""Everything that changes while this replica leads one epoch.

Kafka's ``LeaderState`` owns the ``BatchAccumulator``, the voters' and
observers' ``ReplicaState``, the pending AddVoter/RemoveVoter handler state
and the resign request; leaving leadership drops the object, so nothing has
to be cleared by hand. :class:`LeaderState` is that object here: the frozen
:class:`~kraft.raft.roles.Leader` role holds one, built by
``QuorumState.transition_to_leader`` and dropped with the role.

What it owns:

* ``progress`` -- replica progress, the high watermark, check-quorum and the
  BeginQuorumEpoch timer (:class:`~kraft.raft.leader_progress.LeaderProgress`);
* ``accumulator`` -- client appends waiting for ``append.linger.ms``;
* ``parked`` -- Fetch requests held until there is news (Kafka's fetch
  purgatory);
* ``write`` -- where the latest drained batches are on their way to disk
  (see :class:`LeaderWrite`);
* ``voter_change`` -- the AddRaftVoter/RemoveRaftVoter in flight and its
  deadline (Kafka's ``AddVoterHandlerState``/``RemoveVoterHandlerState``);
* ``resign_requested`` -- ``RaftClient.resign`` was called for this epoch;
* ``upgrade_voters`` / ``pending_upgrade`` -- the kraft.version upgrade
  bookkeeping of a kraft.version 0 leader (Kafka's ``KRaftVersionUpgrade``);
* ``handover`` -- set when a witness leads only to hand the log over
  (:mod:`kraft.raft.handover`): it accepts no appends.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from kraft.raft.accumulator import BatchAccumulator
from kraft.raft.events import InboundRequest
from kraft.raft.leader_progress import LeaderProgress
from kraft.raft.voter_changes import PendingVoterChange
from kraft.raft.voters import VoterSet
from kraft.records.view import OffsetAndEpoch


class LeaderWrite(enum.Enum):
    """Where the leader's latest batches are (see ``kraft.raft.core``)."""

    #: AppendAsLeader in the Ready being executed.
    WRITTEN = "written"
    #: In the log, being sent to the parked fetches; the Flush comes next.
    SERVED = "served"
    #: The Flush is in the Ready being executed.
    FLUSHING = "flushing"


@dataclass(frozen=True, slots=True)
class HandoverLeadership:
    """A witness's hand-over epoch (:mod:`kraft.raft.handover`): when it
    began and which voters may take over. It accepts no appends."""

    started_ms: int
    leaders: frozenset[int]


@dataclass(slots=True)
class ParkedFetch:
    """A Fetch the leader holds until new data, a higher high watermark, or
    ``max_wait_ms`` (Kafka's fetch purgatory)."""

    deadline_ms: int
    #: The Fetch (``kraft/raft/rpcs/fetch_rpc.py``), answered when it completes.
    request: InboundRequest
    #: Its ``fetch_offset``: new data below it means news.
    fetch_offset: int


ParkedPredicate = Callable[[ParkedFetch], bool]


class LeaderState:
    """The mutable state of one leadership (one epoch)."""

    __slots__ = (
        "progress",
        "accumulator",
        "parked",
        "write",
        "voter_change",
        "resign_requested",
        "upgrade_voters",
        "pending_upgrade",
        "handover",
    )

    def __init__(self, progress: LeaderProgress, accumulator: BatchAccumulator) -> None:
        self.progress = progress
        self.accumulator = accumulator
        self.parked: list[ParkedFetch] = []
        self.write: LeaderWrite | None = None
        self.voter_change: PendingVoterChange | None = None
        self.resign_requested = False
        #: kraft.version 0: the static voters with the directory ids and
        #: listeners learned from UpdateRaftVoter (Kafka's KRaftVersionUpgrade.Voters).
        self.upgrade_voters: VoterSet | None = None
        #: The kraft.version level this leader appended and where (the last
        #: control record), until the log makes it the finalized level.
        self.pending_upgrade: tuple[int, OffsetAndEpoch] | None = None
        #: A witness's hand-over epoch (kraft/raft/handover.py): no appends.
        self.handover: HandoverLeadership | None = None

    @property
    def high_watermark(self) -> int | None:
        """The one high watermark of a leader (Kafka's ``LeaderState.highWatermark``)."""
        return self.progress.high_watermark

    def accepts_appends(self) -> bool:
        """Appends go into the accumulator until a resignation is requested
        (never in a witness's hand-over epoch)."""
        return not self.resign_requested and self.handover is None

    def take_parked(self, which: ParkedPredicate) -> list[ParkedFetch]:
        """Remove and return the parked fetches ``which`` selects."""
        done = [p for p in self.parked if which(p)]
        if done:
            self.parked = [p for p in self.parked if not which(p)]
        return done

    def take_parked_below(self, end_offset: int) -> list[ParkedFetch]:
        """Remove and return the parked fetches from below ``end_offset`` (new data for them)."""
        done = [p for p in self.parked if p.fetch_offset < end_offset]
        if done:
            self.parked = [p for p in self.parked if p.fetch_offset >= end_offset]
        return done

    def take_expired(self, now_ms: int) -> list[ParkedFetch]:
        """Remove and return the parked fetches whose ``max_wait_ms`` is over."""
        done = [p for p in self.parked if p.deadline_ms <= now_ms]
        if done:
            self.parked = [p for p in self.parked if p.deadline_ms > now_ms]
        return done

    def take_all_parked(self) -> list[ParkedFetch]:
        done, self.parked = self.parked, []
        return done

    def next_parked_deadline(self) -> int | None:
        return min((p.deadline_ms for p in self.parked), default=None)
