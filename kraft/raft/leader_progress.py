"""The leader's view of its replicas: fetch offsets, high watermark, check-quorum.

Kafka's ``LeaderState`` bookkeeping, kept out of the immutable ``Leader`` role
because it changes on every fetch:

* each voter's (and observer's) last fetch offset and time;
* the high watermark — the offset a majority of voters (the leader counts,
  with its flushed log end offset) has reached, advanced only past the epoch
  start offset (a leader must commit a record of its own epoch before it may
  expose earlier ones, KIP-595) and never decreased;
* check-quorum: the leader resigns if it goes 1.5 x ``fetch.timeout.ms``
  without fetches from a majority of voters;
* BeginQuorumEpoch: re-sent every ``fetch.timeout.ms / 2`` to voters that
  have not fetched in that time (which covers "until each voter
  acknowledges": a voter acknowledges by fetching);
* voter-set changes (KIP-853, :meth:`LeaderProgress.update_voters`):
  replicas move between voters and observers keeping what is known of
  them; a leader removed from the set tracks itself as an observer and is
  not counted; and whether an observer is caught up enough to be added
  (Kafka's one-hour window);
* what DescribeQuorum's answer is filled from (the filling is
  :func:`kraft.raft.rpcs.describe_quorum_rpc.describe`, with the model).
"""

from __future__ import annotations

from dataclasses import dataclass

from kraft.raft.errors import LocalRaftError
from kraft.raft.voters import ReplicaKey, VoterSet

#: Kafka's ``LeaderState.OBSERVER_SESSION_TIMEOUT_MS``: an observer that has
#: not fetched for this long is left out of the leader's description.
OBSERVER_SESSION_TIMEOUT_MS = 300_000


@dataclass(slots=True)
class ReplicaProgress:
    """What the leader tracks of one replica (Kafka's ``LeaderState.ReplicaState``);
    :func:`kraft.raft.rpcs.describe_quorum_rpc.describe` reports it as a
    :class:`~kraft.raft.rpcs.describe_quorum_rpc.ReplicaInfo`."""

    key: ReplicaKey
    #: Fetch offset of the last validated fetch (the replica's log end offset).
    end_offset: int | None = None
    last_fetch_ms: int = -1
    last_caught_up_ms: int = -1
    last_fetch_leader_end_offset: int = -1
    #: Answered BeginQuorumEpoch or fetched in this epoch.
    acknowledged: bool = False


def _sort_key(p: ReplicaProgress) -> tuple[int, int, int, str]:
    # Kafka's ReplicaState.compareTo: descending end offset, unknown last, then key.
    if p.end_offset is None:
        return (1, 0, p.key.id, str(p.key.directory_id))
    return (0, -p.end_offset, p.key.id, str(p.key.directory_id))


class LeaderProgress:
    """Mutable replica progress of one leader epoch."""

    __slots__ = (
        "local_key",
        "epoch_start_offset",
        "voters",
        "observers",
        "high_watermark",
        "_check_quorum_timeout_ms",
        "check_quorum_deadline_ms",
        "_fetched_voters",
        "_begin_quorum_epoch_timeout_ms",
        "begin_quorum_epoch_deadline_ms",
        "_me",
    )

    def __init__(
        self,
        local_key: ReplicaKey,
        epoch_start_offset: int,
        voter_set: VoterSet,
        now_ms: int,
        check_quorum_timeout_ms: int,
        begin_quorum_epoch_timeout_ms: int,
    ) -> None:
        self.local_key = local_key
        self.epoch_start_offset = epoch_start_offset
        self.voters: dict[int, ReplicaProgress] = {
            key.id: ReplicaProgress(key, acknowledged=key.id == local_key.id) for key in voter_set.voter_keys
        }
        self.observers: dict[ReplicaKey, ReplicaProgress] = {}
        # A fresh leader does not inherit the high watermark: it learns it once
        # a majority reaches an offset past the epoch start.
        self.high_watermark: int | None = None
        self._check_quorum_timeout_ms = check_quorum_timeout_ms
        self.check_quorum_deadline_ms = now_ms + check_quorum_timeout_ms
        self._fetched_voters: set[int] = set()
        self._begin_quorum_epoch_timeout_ms = begin_quorum_epoch_timeout_ms
        # Zero: announce the new epoch right away.
        self.begin_quorum_epoch_deadline_ms = now_ms
        # The leader's own entry, found once per voter set (see _local).
        self._me: ReplicaProgress | None = None

    # --- replica state ---------------------------------------------------

    def _voter(self, key: ReplicaKey) -> ReplicaProgress | None:
        """The voter entry that is ``key`` (``ReplicaKey.matches``, looked up
        by id once instead of scanning)."""
        p = self.voters.get(key.id)
        if p is None:
            return None
        directory_id = p.key.directory_id
        return p if directory_id is None or directory_id == key.directory_id else None

    def is_voter(self, key: ReplicaKey) -> bool:
        return self._voter(key) is not None

    def progress_of(self, key: ReplicaKey) -> ReplicaProgress:
        p = self._voter(key)
        if p is not None:
            return p
        obs = self.observers.get(key)
        if obs is None:
            obs = self.observers[key] = ReplicaProgress(key)
        return obs

    def _local(self) -> ReplicaProgress:
        """The leader's own progress: a voter's, or an observer's once the
        leader removed itself (KIP-853; it is then not counted). Found once
        per voter set."""
        me = self._me
        if me is None:
            me = self._me = self.progress_of(self.local_key)
        return me

    def update_voters(self, voter_set: VoterSet) -> bool:
        """The voter set changed (a VotersRecord in the leader's log, KIP-853):
        move replicas between voters and observers, keeping what is known of
        them (Kafka's ``updateVoterAndObserverStates``). Returns True if the
        high watermark advanced under the new majority."""
        old_voters = dict(self.voters)
        new_voters: dict[int, ReplicaProgress] = {}
        for key in voter_set.voter_keys:
            p = old_voters.get(key.id)
            if p is not None and p.key.matches(key):
                del old_voters[key.id]
            else:
                p = self.observers.pop(key, None) or ReplicaProgress(key)
            p.key = key
            new_voters[key.id] = p
        self.voters = new_voters
        self._me = None
        for p in old_voters.values():
            self.observers.setdefault(p.key, p)
        self._fetched_voters &= set(new_voters)
        return self._maybe_update_high_watermark()

    def is_replica_caught_up(self, key: ReplicaKey, now_ms: int, window_ms: int) -> bool:
        """An observer that may be added as a voter (Kafka's
        ``LeaderState.isReplicaCaughtUp``): it has caught up with the
        leader's log end at least once and fetched within ``window_ms``
        (Kafka: one hour)."""
        p = self.observers.get(key)
        return (
            p is not None
            and p.last_caught_up_ms > 0
            and p.last_fetch_ms > 0
            and p.last_fetch_ms > now_ms - window_ms
        )

    def update_local_end_offset(self, end_offset: int) -> bool:
        """The leader's own flushed log end offset. Returns True if the high
        watermark advanced."""
        me = self._local()
        if me.end_offset is not None and end_offset < me.end_offset:
            # The shell rewound the leader's log under it.
            raise LocalRaftError(f"non-monotonic leader end offset {me.end_offset} -> {end_offset}")
        me.end_offset = end_offset
        return self._maybe_update_high_watermark()

    def update_replica(self, key: ReplicaKey, now_ms: int, fetch_offset: int) -> bool:
        """A validated fetch from ``key`` at ``fetch_offset``. Returns True if the
        high watermark advanced. Fetches from replica ids < 0 (not a replica)
        are ignored, as Kafka does."""
        if key.id < 0:
            return False
        # One lookup per fetch: the voter entry, else the observer's.
        voter = self._voter(key)
        p = voter if voter is not None else self.progress_of(key)
        leader_end = self._local().end_offset
        if leader_end is not None:
            if fetch_offset >= leader_end:
                p.last_caught_up_ms = max(p.last_caught_up_ms, now_ms)
            elif p.last_fetch_leader_end_offset > 0 and fetch_offset >= p.last_fetch_leader_end_offset:
                p.last_caught_up_ms = max(p.last_caught_up_ms, p.last_fetch_ms)
            p.last_fetch_leader_end_offset = leader_end
        p.last_fetch_ms = max(p.last_fetch_ms, now_ms)
        p.end_offset = fetch_offset
        p.acknowledged = True
        self._fetched(voter is not None and key.id != self.local_key.id, key.id, now_ms)
        return voter is not None and self._maybe_update_high_watermark()

    def _maybe_update_high_watermark(self) -> bool:
        ordered = sorted(self.voters.values(), key=_sort_key)
        candidate = ordered[len(self.voters) // 2].end_offset
        if candidate is None or candidate <= self.epoch_start_offset:
            return False
        if self.high_watermark is not None and candidate <= self.high_watermark:
            # Never move backwards (only a voter-set change could make the
            # majority offset drop; then the old value stays).
            return False
        self.high_watermark = candidate
        return True

    def add_acknowledgement(self, voter_id: int) -> None:
        p = self.voters.get(voter_id)
        if p is not None:
            p.acknowledged = True

    def non_leader_voters_by_descending_fetch_offset(self) -> tuple[ReplicaKey, ...]:
        return tuple(
            p.key for p in sorted(self.voters.values(), key=_sort_key) if p.key.id != self.local_key.id
        )

    # --- check quorum ------------------------------------------------------

    def update_check_quorum(self, key: ReplicaKey, now_ms: int) -> None:
        """A Fetch or FetchSnapshot from ``key``: once a majority of voters
        (the leader counting itself) has fetched, restart the timer."""
        self._fetched(self._voter(key) is not None and key.id != self.local_key.id, key.id, now_ms)

    def _fetched(self, counted: bool, voter_id: int, now_ms: int) -> None:
        if counted:
            self._fetched_voters.add(voter_id)
        majority = len(self.voters) // 2 + 1
        if self.local_key.id in self.voters:
            majority -= 1
        if len(self._fetched_voters) >= majority:
            self._fetched_voters.clear()
            self.check_quorum_deadline_ms = now_ms + self._check_quorum_timeout_ms

    def check_quorum_expired(self, now_ms: int) -> bool:
        if len(self.voters) == 1:
            return False  # a lone voter is always its own majority
        return now_ms >= self.check_quorum_deadline_ms

    def check_quorum_deadline(self) -> int | None:
        return None if len(self.voters) == 1 else self.check_quorum_deadline_ms

    # --- BeginQuorumEpoch --------------------------------------------------

    def voters_needing_begin_quorum_epoch(self, now_ms: int) -> tuple[ReplicaKey, ...]:
        return tuple(
            p.key
            for p in self.voters.values()
            if p.key.id != self.local_key.id
            and (p.last_fetch_ms < 0 or now_ms - p.last_fetch_ms >= self._begin_quorum_epoch_timeout_ms)
        )

    def reset_begin_quorum_epoch_timer(self, now_ms: int) -> None:
        self.begin_quorum_epoch_deadline_ms = now_ms + self._begin_quorum_epoch_timeout_ms
