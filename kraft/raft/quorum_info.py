"""The one model of a DescribeQuorum answer: :class:`QuorumInfo` and
:class:`ReplicaInfo`.

Kafka has two shapes of it -- the server side (``LeaderState.describeQuorum``
filling ``DescribeQuorumResponseData.ReplicaState``) and the admin side
(``org.apache.kafka.clients.admin.QuorumInfo`` and
``QuorumInfo.ReplicaState``, decoded by ``KafkaAdminClient``). kraft has
one: the raft core's leader builds it (:meth:`LeaderProgress.describe
<kraft.raft.leader_progress.LeaderProgress.describe>`), the node encodes it
onto the wire (:mod:`kraft.node.admin_apis`), the admin client decodes the wire
back into it (:func:`kraft.client.admin.quorum_info`), and the tools, the
observer, the reassignment planner and the doctor read it.

It lives at the raft layer so the core can build it; it depends on nothing
but the standard library. Values are as the admin side sees them: a
timestamp of -1 on the wire (never fetched, never caught up) is None; the
directory id is as on the wire, ``Uuid.ZERO_UUID`` for none (a static
quorum, or a replica that sent none).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

__all__ = ["ReplicaInfo", "QuorumInfo", "ZERO_UUID", "Listener"]

#: Kafka's ``Uuid.ZERO_UUID``: "no directory id" on the wire.
ZERO_UUID = uuid.UUID(int=0)

#: One listener of a voter as DescribeQuorum v2 lists it: (name, host, port).
Listener = tuple[str, str, int]


@dataclass(frozen=True, slots=True)
class ReplicaInfo:
    """Kafka's admin ``QuorumInfo.ReplicaState`` (the server side's
    ``DescribeQuorumResponseData.ReplicaState``): one replica as the leader
    sees it. ``log_end_offset`` is -1 while unknown; a timestamp of -1 on the
    wire is None."""

    replica_id: int
    #: As on the wire: ``Uuid.ZERO_UUID`` when the replica has none (a static quorum).
    directory_id: uuid.UUID
    log_end_offset: int
    last_fetch_ms: int | None
    last_caught_up_ms: int | None

    @property
    def node_id(self) -> int:
        return self.replica_id

    @property
    def directory(self) -> uuid.UUID | None:
        """The directory id, None for none (the zero uuid)."""
        return self.directory_id if self.directory_id.int else None

    @property
    def key(self) -> tuple[int, uuid.UUID | None]:
        """Kafka's ``ReplicaKey``: the id and the directory id (or None)."""
        return (self.replica_id, self.directory)


@dataclass(frozen=True, slots=True)
class QuorumInfo:
    """Kafka's admin ``QuorumInfo`` (what the server side's
    ``LeaderState.describeQuorum`` answers): the leader, its epoch, the high
    watermark (-1 until the new leader has committed a record of its epoch),
    every voter and the observers the leader still tracks."""

    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[ReplicaInfo, ...]
    observers: tuple[ReplicaInfo, ...]
    #: node id -> its listeners; the voters', DescribeQuorum v2 only
    #: (Kafka learns no observer endpoints).
    nodes: dict[int, tuple[Listener, ...]] = field(default_factory=dict)
    #: The wall-clock ms the fetch timestamps are compared with: when the
    #: leader described the quorum, or when a client received the answer
    #: (0: unknown). Not on the wire.
    now_ms: int = 0

    def voter(self, node_id: int) -> ReplicaInfo | None:
        return next((v for v in self.voters if v.replica_id == node_id), None)
