"""Safety invariants the simulation checks after every event.

Each checker keeps the little history it needs and raises
:class:`InvariantViolation` the moment the cluster breaks a rule:

* :class:`SingleLeaderPerEpoch` — at most one leader per epoch, and every
  replica that names a leader for an epoch names that one;
* :class:`OneVotePerEpoch` — a replica's durable state never records two
  different votes in one epoch, and a granted vote is durable before it is sent;
* :class:`CommittedRecordsStable` — once any replica exposes offset ``o`` as
  committed, every replica that ever exposes ``o`` as committed holds the
  same (epoch, record) there: a committed record never changes, and every
  replica's log matches the leader's up to its high watermark;
* :class:`CommittedRecordsDurable` — a majority of voters durably (flushed,
  or in a snapshot) hold the last committed record: it can never be lost,
  whatever crashes next;
* :class:`MonotonicHighWatermark` — a replica's high watermark never moves
  back (per incarnation: it is in memory only), and its durable epoch never
  decreases;
* :class:`VoterChangesOneAtATime` — (dynamic quorums, KIP-853) consecutive
  voter sets in any log differ by one voter at most, and a leader never has
  more than one membership change above its high watermark.

With dynamic quorums a replica is identified by its id *and* directory id
(a wiped disk is a new replica): the per-replica checkers key their history
by both, and "a majority of voters" is a majority of the voter set the
leader committed the record under.

The checkers read the simulation's nodes through the small
:class:`CheckedCluster` protocol, so tests can plant violations in fakes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from kraft.raft.roles import ElectionState, Follower, Leader, Role
from kraft.sim.simlog import SimLog
from kraft.raft.voters import ReplicaKey, VoterSet


def _replica(node: object) -> tuple[int, int]:
    """(node id, disk generation): a reformatted disk is another replica."""
    return (node.node_id, getattr(node, "disk", 0))  # type: ignore[attr-defined]


def _key(node: object) -> ReplicaKey:
    return getattr(node, "replica_key", None) or ReplicaKey(node.node_id)  # type: ignore[attr-defined]


class InvariantViolation(AssertionError):
    """A safety property of the cluster does not hold."""

    def __init__(self, invariant: str, detail: str) -> None:
        super().__init__(f"{invariant}: {detail}")
        self.invariant = invariant
        self.detail = detail


class NodeView(Protocol):
    """What the checkers read from one simulated replica."""

    @property
    def node_id(self) -> int: ...
    @property
    def is_voter(self) -> bool: ...
    @property
    def is_up(self) -> bool: ...
    @property
    def incarnation(self) -> int: ...
    @property
    def role(self) -> Role | None: ...
    @property
    def durable_election(self) -> ElectionState | None: ...
    @property
    def log(self) -> SimLog: ...
    @property
    def committed_offset(self) -> int | None: ...
    @property
    def high_watermark(self) -> int | None: ...


class CheckedCluster(Protocol):
    """What the checkers read of the simulated cluster (not a client's view
    of a real one: that is :class:`kraft.admin_client.admin.ClusterView`)."""

    @property
    def nodes(self) -> Iterable[NodeView]: ...
    @property
    def voter_count(self) -> int: ...


class SingleLeaderPerEpoch:
    name = "at most one leader per epoch"

    def __init__(self) -> None:
        self.leaders: dict[int, int] = {}

    def _claim(self, epoch: int, leader: int, who: str) -> None:
        known = self.leaders.setdefault(epoch, leader)
        if known != leader:
            raise InvariantViolation(self.name, f"epoch {epoch} has leaders {known} and {leader} ({who})")

    def check(self, cluster: CheckedCluster) -> None:
        for node in cluster.nodes:
            role = node.role
            if node.is_up and isinstance(role, Leader):
                self._claim(role.epoch, node.node_id, f"node {node.node_id} is Leader")
        for node in cluster.nodes:
            role = node.role
            if node.is_up and isinstance(role, Follower):
                self._claim(role.epoch, role.leader_id, f"node {node.node_id} follows it")
            durable = node.durable_election
            if durable is not None and durable.leader_id is not None:
                self._claim(durable.epoch, durable.leader_id, f"node {node.node_id}'s quorum-state")


class OneVotePerEpoch:
    name = "one vote per epoch"

    def __init__(self) -> None:
        self.votes: dict[tuple[tuple[int, int], int], ReplicaKey] = {}

    def check(self, cluster: CheckedCluster) -> None:
        for node in cluster.nodes:
            durable = node.durable_election
            if durable is None or durable.voted_key is None:
                continue
            key = (_replica(node), durable.epoch)
            known = self.votes.setdefault(key, durable.voted_key)
            if known != durable.voted_key:
                raise InvariantViolation(
                    self.name,
                    f"node {node.node_id} voted for {known} and {durable.voted_key} in epoch {durable.epoch}",
                )

    def check_vote_sent(self, node: NodeView, epoch: int, candidate: int) -> None:
        """A granted (real) vote may only leave the node once it is durable."""
        durable = node.durable_election
        if durable is not None and durable.epoch > epoch:
            return
        if (
            durable is None
            or durable.epoch != epoch
            or durable.voted_key is None
            or durable.voted_key.id != candidate
        ):
            raise InvariantViolation(
                self.name,
                f"node {node.node_id} sent a vote for {candidate} in epoch {epoch} "
                f"that its quorum-state does not record ({durable})",
            )


class CommittedRecordsStable:
    name = "committed records never change"

    def __init__(self) -> None:
        #: offset -> (epoch, record) of every committed offset seen so far.
        self.committed: dict[int, tuple[int, bytes]] = {}
        self._verified: dict[int, tuple[int, int, int]] = {}

    @property
    def committed_end(self) -> int:
        return len(self.committed)

    def check(self, cluster: CheckedCluster) -> None:
        for node in cluster.nodes:
            self.check_node(node)

    def check_node(self, node: NodeView) -> None:
        upto = node.committed_offset
        if upto is None:
            return
        log = node.log
        token = (node.incarnation, log.generation)
        cached = self._verified.get(node.node_id)
        start = cached[2] if cached is not None and cached[:2] == token else 0
        for offset in range(start, upto):
            entry = log.entry_at(offset)
            if entry is None:
                raise InvariantViolation(
                    self.name,
                    f"node {node.node_id} exposes offset {offset} as committed (high watermark {upto}) "
                    f"but its log ends at {log.end_offset}",
                )
            known = self.committed.setdefault(offset, entry)
            if known != entry:
                raise InvariantViolation(
                    self.name,
                    f"offset {offset} was committed as {known} but node {node.node_id} commits {entry}",
                )
        if upto > start:
            self._verified[node.node_id] = (*token, upto)


class CommittedRecordsDurable:
    name = "committed records are never lost"

    @staticmethod
    def holders(
        cluster: CheckedCluster, committed: dict[int, tuple[int, bytes]], voters: VoterSet | None = None
    ) -> list[int]:
        """The voters (of ``voters``, or the static ones) that durably hold the
        last committed record: flushed, or in a snapshot."""
        end = len(committed)
        if end == 0:
            return []
        last = end - 1
        epoch = committed[last][0]
        holders = []
        for node in cluster.nodes:
            if voters is None and not node.is_voter:
                continue
            if voters is not None and not voters.is_voter(_key(node)):
                continue
            log = node.log
            if last < log.start_offset:
                holders.append(node.node_id)  # in its snapshot
            elif last < log.flushed_end_offset:
                entry = log.entry_at(last)
                if entry is not None and entry[0] == epoch:
                    holders.append(node.node_id)
        return holders

    def check(
        self, cluster: CheckedCluster, committed: dict[int, tuple[int, bytes]], voters: VoterSet | None = None
    ) -> None:
        """``voters``: the voter set the last record was committed under
        (default: the static voters)."""
        end = len(committed)
        if end == 0:
            return
        last = end - 1
        epoch = committed[last][0]
        holders = self.holders(cluster, committed, voters)
        majority = (cluster.voter_count if voters is None else len(voters)) // 2 + 1
        if len(holders) < majority:
            raise InvariantViolation(
                self.name,
                f"committed offset {last} (epoch {epoch}) is durable on voters {holders} only; "
                f"a majority is {majority}",
            )


@dataclass(slots=True)
class _Seen:
    incarnation: int
    high_watermark: int | None
    durable_epoch: int


class MonotonicHighWatermark:
    name = "high watermark never decreases"

    def __init__(self) -> None:
        self.seen: dict[tuple[int, int], _Seen] = {}

    def check(self, cluster: CheckedCluster) -> None:
        for node in cluster.nodes:
            hwm = node.high_watermark if node.is_up else None
            durable = node.durable_election
            epoch = durable.epoch if durable is not None else 0
            prev = self.seen.get(_replica(node))
            if prev is not None:
                if epoch < prev.durable_epoch:
                    raise InvariantViolation(
                        self.name,
                        f"node {node.node_id}'s durable epoch went from {prev.durable_epoch} to {epoch}",
                    )
                if (
                    prev.incarnation == node.incarnation
                    and hwm is not None
                    and prev.high_watermark is not None
                    and hwm < prev.high_watermark
                ):
                    raise InvariantViolation(
                        self.name,
                        f"node {node.node_id}'s high watermark went from {prev.high_watermark} to {hwm}",
                    )
                if prev.incarnation == node.incarnation and hwm is None:
                    hwm = prev.high_watermark  # unknown for a while after an election
            self.seen[_replica(node)] = _Seen(node.incarnation, hwm, epoch)


class VoterChangesOneAtATime:
    """KIP-853's safety rule for dynamic quorums: the voter set changes one
    voter at a time, so a majority of the old set and a majority of the new
    one always share a voter; and a leader admits a change only once the
    previous one is committed."""

    name = "voter changes are one voter at a time"

    def __init__(self) -> None:
        self._checked: dict[tuple[int, int], tuple[int, int]] = {}

    @staticmethod
    def _members(entries: Iterable[object]) -> frozenset[tuple[int, object]]:
        return frozenset((e.voter_id, e.directory_id) for e in entries)  # type: ignore[attr-defined]

    def check(self, cluster: CheckedCluster) -> None:
        for node in cluster.nodes:
            history = node.log.kraft_control.voter_history()
            token = (node.log.generation, len(history))
            if self._checked.get(_replica(node)) == token:
                continue
            self._checked[_replica(node)] = token
            for before, after in zip(history, history[1:]):
                old, new = self._members(before.voters), self._members(after.voters)
                if len(old ^ new) > 1:
                    raise InvariantViolation(
                        self.name,
                        f"node {node.node_id}'s log changes the voters from {sorted(old)} to {sorted(new)} "
                        f"at offset {after.offset}",
                    )
            role = node.role
            hwm = node.high_watermark
            if node.is_up and isinstance(role, Leader) and hwm is not None:
                above = [h for h in history if h.offset >= hwm]
                changes = sum(
                    1
                    for before, after in zip(history, history[1:])
                    if after.offset >= hwm and self._members(before.voters) != self._members(after.voters)
                )
                if changes > 1:
                    raise InvariantViolation(
                        self.name,
                        f"leader {node.node_id} has {changes} uncommitted voter changes above its high "
                        f"watermark {hwm}: {above}",
                    )


class Invariants:
    """All checkers, run together after every event. ``dynamic``: a KIP-853
    quorum; the cluster then names the voter set each commit was made under
    (``commit_voter_set``)."""

    def __init__(self, dynamic: bool = False) -> None:
        self.single_leader = SingleLeaderPerEpoch()
        self.one_vote = OneVotePerEpoch()
        self.stable = CommittedRecordsStable()
        self.durable = CommittedRecordsDurable()
        self.monotonic = MonotonicHighWatermark()
        self.voter_changes = VoterChangesOneAtATime() if dynamic else None
        #: The voter set the last committed record was committed under.
        self.commit_voters: VoterSet | None = None

    def check(self, cluster: CheckedCluster) -> None:
        self.single_leader.check(cluster)
        self.one_vote.check(cluster)
        end = self.stable.committed_end
        self.stable.check(cluster)
        if self.voter_changes is not None:
            if self.stable.committed_end > end or self.commit_voters is None:
                voters = cluster.commit_voter_set()  # type: ignore[attr-defined]
                if voters is not None:
                    self.commit_voters = voters
            self.voter_changes.check(cluster)
        self.durable.check(cluster, self.stable.committed, self.commit_voters)
        self.monotonic.check(cluster)
