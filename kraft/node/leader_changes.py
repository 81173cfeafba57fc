"""Leader changes for one listener of the embedding API, as Kafka fires them.

Kafka's ``KafkaRaftClient.ListenerContext.maybeFireLeaderChange`` tells each
listener of a new leader or epoch at once -- except this replica's own
leadership, which a listener learns only once *it* has read past the epoch's
start offset (``nextOffset() > epochStartOffset``): a state machine must have
replayed every record the previous leaders committed before it acts as
leader. What the raft driver knows (``RaftDriver.leader``) is per node; the listener
that reads slowly is told later than the node is. A Resigned replica fires
nothing of its own (Kafka's ``pollListeners``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kraft.raft.roles import Leader, LeaderAndEpoch

if TYPE_CHECKING:
    from kraft.node.raft_view import RaftView

__all__ = ["LeaderChanged", "due"]


@dataclass(frozen=True, slots=True)
class LeaderChanged:
    """A listener item (Kafka's ``handleLeaderChange``): the leader and epoch
    now; ``leader.leader_id`` is this node's id once this listener may act
    as leader."""

    leader: LeaderAndEpoch


def _should_fire(new: LeaderAndEpoch, last: LeaderAndEpoch | None) -> bool:
    """Kafka's ``shouldFireLeaderChange``: a later epoch, or the leader of the
    same epoch becoming known."""
    if last is None:
        return True
    if new == last:
        return False
    if new.epoch > last.epoch:
        return True
    return new.leader_id is not None and last.leader_id is None


def due(raft_driver: RaftView, last: LeaderAndEpoch | None, next_offset: int) -> LeaderAndEpoch | None:
    """The leader change to give a listener whose next offset to read is
    ``next_offset`` and that was last told ``last``; None: nothing yet."""
    new = raft_driver.leader
    if not _should_fire(new, last):
        return None
    if raft_driver.initialized and new.leader_id is not None and new.leader_id == raft_driver.core.local_id:
        role = raft_driver.core.role
        if not isinstance(role, Leader) or role.epoch != new.epoch or next_offset <= role.epoch_start_offset:
            return None
    return new
