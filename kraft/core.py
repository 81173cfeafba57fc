"""RaftCore: the sans-IO KRaft replica.

The core does no I/O, reads no clock and draws all randomness from the
``random.Random`` it is given. The shell (trio node, simulation, test
harness) drives it:

* :meth:`RaftCore.initialize` once, after building it from the stored election
  state and the log;
* :meth:`RaftCore.step` for every inbound message (a request from a peer, the
  answer to one of our requests, or a failed request);
* :meth:`RaftCore.poll` whenever ``now_ms`` reaches ``Ready.next_deadline_ms``;
* :meth:`RaftCore.append` to write records as leader (then ``poll``),
  :meth:`RaftCore.resign`, :meth:`RaftCore.begin_shutdown`,
  :meth:`RaftCore.validate_snapshot_id` before writing a snapshot.

Each of ``initialize``/``step``/``poll``/``begin_shutdown`` returns a
:class:`Ready`, which the shell executes **completely and in this order**
before calling the core again:

1. ``persist`` — write the election state to ``quorum-state`` (fsync the
   temporary file, atomic rename). A vote or candidacy is durable before any
   message that depends on it leaves the node.
2. ``log`` — the log operations in list order (appends, truncation, snapshot
   download and install, ``Flush`` = fsync). The core reads the log only
   through :class:`~kraft.records.view.LogView`; it sees the effect of these
   operations on its next call, and counts the leader's own appended records
   towards the high watermark only then — i.e. after the ``Flush`` covering
   them has completed.
3. ``send`` — the outbound requests and responses.
4. ``committed`` — if set, the new high watermark: records below it are
   committed; hand them to listeners (read them from the log).
5. ``leader_change`` — if set, tell listeners the new leader and epoch.
6. ``next_deadline_ms`` — call :meth:`RaftCore.poll` no later than this
   (``None``: only a message can make the core act). It may equal ``now_ms``:
   then poll right after executing this Ready (for example so a follower sends
   its next Fetch from the log end it just wrote).

``violations`` lists things a peer sent that a correct replica never sends;
the core refused them. ``shutdown`` reports the end of a graceful shutdown.

Epochs are checked once, at the top of ``step``, for every inbound message
(:meth:`RaftCore._validate_request` and :meth:`RaftCore._gate_response`): a
stale epoch is fenced (FENCED_LEADER_EPOCH), a newer one moves this replica
to it first — except for Fetch/FetchSnapshot, which only a leader of the
same epoch serves (UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER), and for a
pre-vote, which never disrupts (KIP-996). The RPC handlers below the gate
work in the receiver's current epoch.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TypedDict

from kraft.accumulator import BatchAccumulator
from kraft.errors import (
    Errors,
    InvalidSnapshotIdError,
    LocalRaftError,
    NotLeaderError,
    RemoteProtocolViolation,
)
from kraft.events import (
    METADATA_PARTITION,
    NO_LEADER,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    Inbound,
    InboundRequest,
    InboundResponse,
    Outbound,
    OutboundRequest,
    OutboundResponse,
    RaftRequest,
    RaftResponse,
    RequestFailed,
    TopicPartition,
    VoteRequest,
    VoteResponse,
)
from kraft.logops import (
    AppendAsFollower,
    AppendAsLeader,
    Flush,
    InstallSnapshot,
    LeaderChangeMessage,
    LogOp,
    SnapshotChunk,
    TruncateTo,
)
from kraft.quorum import QuorumState
from kraft.quorum_config import QuorumConfig
from kraft.records.view import LogView, OffsetAndEpoch
from kraft.replication import (
    BOOTSTRAP_SNAPSHOT_ID,
    FetchValidity,
    log_end,
    truncation_offset,
    validate_offset_and_epoch,
)
from kraft.request_manager import RequestManager
from kraft.roles import (
    Candidate,
    ElectionState,
    Follower,
    Leader,
    LeaderAndEpoch,
    Prospective,
    Resigned,
    Role,
    SnapshotDownload,
    Unattached,
    log_up_to_date,
)
from kraft.voters import Endpoints, ReplicaKey, VoterSet

#: A poll loop iteration that keeps asking to run again immediately is cut
#: after this many rounds (each round changes the role, so this is generous).
_MAX_POLL_ROUNDS = 16


@dataclass(frozen=True, slots=True)
class ShutdownOutcome:
    """How a graceful shutdown ended: ``completed`` (a leader was handed over,
    or none is needed) or timed out."""

    completed: bool


@dataclass(slots=True)
class Ready:
    """What the shell must do, in field order (see the module docstring)."""

    persist: ElectionState | None = None
    log: list[LogOp] = field(default_factory=list)
    send: list[Outbound] = field(default_factory=list)
    committed: int | None = None
    leader_change: LeaderAndEpoch | None = None
    next_deadline_ms: int | None = None
    violations: list[RemoteProtocolViolation] = field(default_factory=list)
    shutdown: ShutdownOutcome | None = None


@dataclass(slots=True)
class _ParkedFetch:
    """A Fetch the leader holds until new data, a higher high watermark, or
    ``max_wait_ms`` (Kafka's fetch purgatory)."""

    deadline_ms: int
    request: InboundRequest
    fetch: FetchRequest


class _LeaderFields(TypedDict):
    """The current-leader fields every KRaft response carries."""

    leader_id: int
    leader_epoch: int
    leader_endpoints: Endpoints


@dataclass(slots=True)
class _Shutdown:
    deadline_ms: int
    outcome: ShutdownOutcome | None = None


def _min_opt(*values: int | None) -> int | None:
    present = [v for v in values if v is not None]
    return min(present) if present else None


class RaftCore:
    """One KRaft replica (voter or observer) of ``__cluster_metadata-0``."""

    def __init__(
        self,
        *,
        node_id: int | None,
        voters: VoterSet,
        log: LogView,
        rng: random.Random,
        config: QuorumConfig | None = None,
        directory_id: uuid.UUID | None = None,
        cluster_id: str | None = None,
        topic_partition: TopicPartition = METADATA_PARTITION,
        election_state: ElectionState | None = None,
    ) -> None:
        """``node_id`` ``None`` makes a pure observer. ``election_state`` is
        what ``quorum-state`` held at start-up (``None`` if absent)."""
        self.config = config or QuorumConfig()
        self.voters = voters
        self.cluster_id = cluster_id
        self.topic_partition = topic_partition
        self.local_key = None if node_id is None else ReplicaKey(node_id, directory_id)
        self._log = log
        self.quorum = QuorumState(local_key=self.local_key, voters=voters, config=self.config, rng=rng)
        self._requests = RequestManager(self.config.retry_backoff_ms, self.config.request_timeout_ms, rng)
        self._election_state = election_state
        # Peers a replica without a known leader fetches from to discover one.
        self._bootstrap = tuple(v for v in voters.voter_ids if v != node_id)
        self._accumulator: BatchAccumulator | None = None
        self._parked: list[_ParkedFetch] = []
        self._out: Ready | None = None
        self._poll_timeout: int | None = None
        self._committed: int | None = None
        self._last_leader: LeaderAndEpoch | None = None
        self._resign_epoch: int | None = None
        self._shutdown: _Shutdown | None = None
        self._now_ms: int | None = None
        self._initialized = False

    # --- public API -------------------------------------------------------------

    @property
    def role(self) -> Role:
        return self.quorum.role

    @property
    def epoch(self) -> int:
        return self.quorum.epoch

    @property
    def leader_id(self) -> int | None:
        return self.quorum.leader_id

    @property
    def high_watermark(self) -> int | None:
        """The high watermark of the current role (Kafka's; unknown right after
        an election until the new leader commits in its epoch)."""
        return self.quorum.high_watermark

    @property
    def committed_offset(self) -> int | None:
        """The largest high watermark this replica has exposed; never decreases."""
        return self._committed

    @property
    def is_leader(self) -> bool:
        return isinstance(self.quorum.role, Leader)

    def initialize(self, now_ms: int) -> Ready:
        """Choose the start-up role (Kafka's ``KafkaRaftClient.initialize``): a
        sole voter elects itself at once."""
        if self._initialized:
            raise LocalRaftError("RaftCore is already initialized")
        self._begin(now_ms, sync=False)
        self.quorum.initialize(self._election_state, log_end(self._log), now_ms)
        self._initialized = True
        role = self.quorum.role
        if self.quorum.is_only_voter and isinstance(role, (Unattached, Follower, Resigned)):
            self._become_prospective(now_ms)
        elif isinstance(role, Candidate):
            self._after_transition(now_ms, left_leader=False)
            self._maybe_transition_forward(now_ms)
        else:
            self._after_transition(now_ms, left_leader=False)
        self._run_poll(now_ms)
        return self._finish(now_ms)

    def step(self, now_ms: int, inbound: Inbound) -> Ready:
        """Handle one inbound message, then do whatever the timers require."""
        self._begin(now_ms)
        if self._shutdown is None or self._shutdown.outcome is None:
            match inbound:
                case InboundRequest():
                    self._handle_request(now_ms, inbound)
                case InboundResponse():
                    self._handle_response(now_ms, inbound)
                case RequestFailed(destination=dest, correlation_id=cid):
                    self._requests.on_response(dest, cid, False, now_ms)
                case _:
                    raise TypeError(f"not an inbound message: {inbound!r}")
            self._run_poll(now_ms)
        return self._finish(now_ms)

    def poll(self, now_ms: int) -> Ready:
        """Run the timers: elections, fetches, resends, linger, timeouts."""
        self._begin(now_ms)
        self._run_poll(now_ms)
        return self._finish(now_ms)

    def append(self, now_ms: int, records: Sequence[bytes], *, epoch: int | None = None) -> int:
        """Queue records for the log as leader; returns the offset of the last
        one. They are written after ``append.linger.ms``: call :meth:`poll`
        afterwards (at the latest by its ``next_deadline_ms``). An offset is
        committed once the high watermark passes it *in this epoch*; if the
        leadership ends first the records may never be written."""
        self._check_initialized()
        role = self.quorum.role
        if not isinstance(role, Leader) or self._accumulator is None:
            raise NotLeaderError("append failed: this replica is not the leader")
        if epoch is not None and epoch != role.epoch:
            raise NotLeaderError(f"append for epoch {epoch} but the leader epoch is {role.epoch}")
        if self._resign_epoch == role.epoch or self._shutdown is not None:
            raise NotLeaderError("append failed: the leader is resigning")
        return self._accumulator.append(now_ms, records)

    def resign(self, epoch: int) -> None:
        """Ask the leader of ``epoch`` to step down on the next poll (Kafka's
        ``RaftClient.resign``); ignored if that epoch is already over."""
        self._check_initialized()
        if epoch < 0:
            raise ValueError(f"invalid epoch {epoch}")
        if epoch > self.quorum.epoch:
            raise ValueError(f"cannot resign from future epoch {epoch} (current {self.quorum.epoch})")
        if epoch < self.quorum.epoch:
            return
        if self.quorum.leader_id != self.quorum.local_id:
            raise NotLeaderError(f"cannot resign from epoch {epoch}: not its leader")
        if isinstance(self.quorum.role, Leader):
            self._resign_epoch = epoch

    def begin_shutdown(self, now_ms: int, timeout_ms: int) -> Ready:
        """Start a graceful shutdown: a leader resigns (EndQuorumEpoch) and the
        shutdown completes once another leader is known, or at once for a
        follower, observer or sole voter; ``Ready.shutdown`` reports the end."""
        self._begin(now_ms)
        if self._shutdown is None:
            self._shutdown = _Shutdown(now_ms + timeout_ms)
        self._run_poll(now_ms)
        return self._finish(now_ms)

    def validate_snapshot_id(self, snapshot_id: OffsetAndEpoch) -> None:
        """Check that a snapshot may be written for ``snapshot_id``: its end
        offset is committed and (offset, epoch) names a real point of the log
        (the epoch of the record just before the offset). Raises
        :class:`~kraft.errors.InvalidSnapshotIdError` otherwise."""
        self._check_initialized()
        hwm = self._committed
        if snapshot_id.offset <= 0 or snapshot_id.epoch < 0:
            raise InvalidSnapshotIdError(f"invalid snapshot id {snapshot_id}")
        if hwm is None or snapshot_id.offset > hwm:
            raise InvalidSnapshotIdError(
                f"snapshot end offset {snapshot_id.offset} is not committed (high watermark {hwm})"
            )
        if snapshot_id.offset < self._log.start_offset:
            raise InvalidSnapshotIdError(
                f"snapshot end offset {snapshot_id.offset} is below the log start {self._log.start_offset}"
            )
        check = validate_offset_and_epoch(self._log, snapshot_id.offset, snapshot_id.epoch)
        # Stricter than Kafka's check: the epoch must be that of the record just
        # before the offset, i.e. the epoch must also have started before it.
        previous = self._log.end_offset_for_epoch(snapshot_id.epoch - 1) if snapshot_id.epoch > 0 else None
        starts_before = previous is None or previous.offset < snapshot_id.offset
        if check.kind is not FetchValidity.VALID or not starts_before:
            raise InvalidSnapshotIdError(
                f"snapshot id {snapshot_id} does not match the log "
                f"({check.kind.value} {check.offset_and_epoch})"
            )

    # --- call framing -----------------------------------------------------------

    def _check_initialized(self) -> None:
        if not self._initialized:
            raise LocalRaftError("call RaftCore.initialize first")

    def _begin(self, now_ms: int, *, sync: bool = True) -> None:
        if sync:
            self._check_initialized()
        if self._out is not None:
            raise LocalRaftError("RaftCore is not re-entrant")
        if self._now_ms is not None and now_ms < self._now_ms:
            raise LocalRaftError(f"time went backwards: {now_ms} < {self._now_ms}")
        self._now_ms = now_ms
        self._out = Ready()
        if sync:
            self._sync_with_log(now_ms)

    def _finish(self, now_ms: int) -> Ready:
        out = self._ready
        self._out = None
        out.persist = self.quorum.take_pending_persist()
        if self._shutdown is not None and self._shutdown.outcome is not None:
            out.next_deadline_ms = None
        elif out.log:
            # The log changes when the shell executes this Ready; come back
            # right after to see it (count the flushed end, send the next Fetch).
            out.next_deadline_ms = now_ms
        else:
            out.next_deadline_ms = None if self._poll_timeout is None else now_ms + self._poll_timeout
        return out

    @property
    def _ready(self) -> Ready:
        out = self._out
        if out is None:
            raise LocalRaftError("no call in progress")
        return out

    def _violation(self, source: int, description: str) -> None:
        self._ready.violations.append(RemoteProtocolViolation(source, description))

    def _sync_with_log(self, now_ms: int) -> None:
        """Pick up what the shell wrote while executing the previous Ready."""
        role = self.quorum.role
        if isinstance(role, Leader):
            end = self._log.end_offset
            if role.progress.update_local_end_offset(end):
                self._on_leader_high_watermark(now_ms)
            self._complete_parked(now_ms, lambda p: p.fetch.fetch_offset < end)
        elif isinstance(role, Follower):
            self._maybe_update_follower_high_watermark()

    def _note_committed(self, high_watermark: int) -> None:
        if self._committed is None or high_watermark > self._committed:
            self._committed = high_watermark
            self._ready.committed = high_watermark

    # --- transitions (QuorumState does the checking and persisting) -----------

    def _after_transition(self, now_ms: int, *, left_leader: bool) -> None:
        # Answers to requests sent in the old role are meaningless now.
        self._requests.reset_all()
        if left_leader:
            self._accumulator = None
            self._resign_epoch = None
            self._complete_parked(now_ms, lambda p: True, error=Errors.NOT_LEADER_OR_FOLLOWER)
        lae = self.quorum.leader_and_epoch
        if lae != self._last_leader:
            self._last_leader = lae
            self._ready.leader_change = lae

    def _become_unattached(self, now_ms: int, epoch: int, leader_id: int | None = None) -> None:
        was_leader = isinstance(self.quorum.role, Leader)
        self.quorum.transition_to_unattached(epoch, now_ms, leader_id)
        self._after_transition(now_ms, left_leader=was_leader)

    def _become_follower(self, now_ms: int, epoch: int, leader_id: int, endpoints: Endpoints) -> None:
        was_leader = isinstance(self.quorum.role, Leader)
        self.quorum.transition_to_follower(epoch, leader_id, endpoints, now_ms)
        self._after_transition(now_ms, left_leader=was_leader)

    def _become_prospective(self, now_ms: int) -> None:
        self.quorum.transition_to_prospective(now_ms)
        self._after_transition(now_ms, left_leader=False)
        self._maybe_transition_forward(now_ms)

    def _become_candidate(self, now_ms: int) -> None:
        self.quorum.transition_to_candidate(now_ms)
        self._after_transition(now_ms, left_leader=False)
        self._maybe_transition_forward(now_ms)

    def _become_leader(self, now_ms: int) -> None:
        if self._ready.log:
            raise LocalRaftError("cannot become leader with log writes pending")
        epoch_start = self._log.end_offset
        leader = self.quorum.transition_to_leader(epoch_start, now_ms)
        self._after_transition(now_ms, left_leader=False)
        self._accumulator = BatchAccumulator(
            leader.epoch, epoch_start, self.config.append_linger_ms, self.config.max_batch_size_bytes
        )
        # The high watermark only moves once a record of this epoch is
        # committed; write one right away (KIP-595's LeaderChangeMessage).
        self._accumulator.append_control(
            now_ms,
            LeaderChangeMessage(
                leader.leader_id, self.voters.voter_ids, tuple(sorted(leader.granting_voters))
            ),
        )
        leader.progress.update_local_end_offset(epoch_start)

    def _become_resigned(self, now_ms: int, successors: tuple[ReplicaKey, ...]) -> None:
        self.quorum.transition_to_resigned(successors, now_ms)
        self._after_transition(now_ms, left_leader=True)

    def _maybe_transition_forward(self, now_ms: int) -> None:
        """Prospective -> Candidate, or Candidate -> Leader, once a majority granted."""
        role = self.quorum.role
        if isinstance(role, Prospective) and role.votes.is_vote_granted():
            self._become_candidate(now_ms)
        elif isinstance(role, Candidate) and role.votes.is_vote_granted():
            self._become_leader(now_ms)

    def _prospective_lost(self, now_ms: int) -> None:
        """Pre-vote lost or timed out: back to following the last known leader,
        or Unattached in the same epoch."""
        role = self.quorum.role
        assert isinstance(role, Prospective)
        if role.leader_id is not None and role.leader_endpoints:
            self._become_follower(now_ms, role.epoch, role.leader_id, role.leader_endpoints)
        else:
            self._become_unattached(now_ms, role.epoch, role.leader_id)

    def _has_consistent_leader(self, epoch: int, leader_id: int | None) -> bool:
        """False if ``leader_id`` contradicts what we know about ``epoch``: two
        leaders in one epoch, which no correct cluster produces."""
        if leader_id is not None and leader_id == self.quorum.local_id:
            return epoch == self.quorum.epoch and isinstance(self.quorum.role, (Leader, Resigned))
        return (
            epoch != self.quorum.epoch
            or leader_id is None
            or not self.quorum.has_leader
            or leader_id == self.quorum.leader_id
        )

    def _maybe_transition(
        self, now_ms: int, source: int, leader_id: int | None, epoch: int, endpoints: Endpoints
    ) -> bool:
        """Adopt what a peer told us about ``epoch`` (Kafka's ``maybeTransition``).
        Returns False (and records a violation) on a contradiction."""
        if not self._has_consistent_leader(epoch, leader_id):
            self._violation(
                source,
                f"leader {leader_id} for epoch {epoch} contradicts local leader "
                f"{self.quorum.leader_id} in epoch {self.quorum.epoch} ({self.quorum.role.name})",
            )
            return False
        if leader_id is not None and not endpoints:
            endpoints = self.voters.endpoints(leader_id)
        if epoch > self.quorum.epoch:
            if leader_id is not None and endpoints:
                self._become_follower(now_ms, epoch, leader_id, endpoints)
            else:
                self._become_unattached(now_ms, epoch, leader_id)
        elif (
            leader_id is not None
            and leader_id != self.quorum.local_id
            and endpoints
            and (not self.quorum.has_leader or len(endpoints) > len(self.quorum.leader_endpoints))
        ):
            self._become_follower(now_ms, epoch, leader_id, endpoints)
        return True

    # --- the epoch gate for requests --------------------------------------------

    def _response_common(self) -> _LeaderFields:
        leader = self.quorum.leader_id
        return {
            "leader_id": NO_LEADER if leader is None else leader,
            "leader_epoch": self.quorum.epoch,
            "leader_endpoints": self.quorum.leader_endpoints if leader is not None else (),
        }

    def _error_response(self, request: RaftRequest, error: Errors) -> RaftResponse:
        """A partition-level error answer carrying our epoch and leader."""
        common = self._response_common()
        match request:
            case VoteRequest():
                return VoteResponse(partition_error=error, **common)
            case BeginQuorumEpochRequest():
                return BeginQuorumEpochResponse(partition_error=error, **common)
            case EndQuorumEpochRequest():
                return EndQuorumEpochResponse(partition_error=error, **common)
            case FetchRequest():
                return self._fetch_error(error)
            case FetchSnapshotRequest():
                return FetchSnapshotResponse(partition_error=error, **common)
        raise TypeError(f"not a request: {request!r}")

    def _fetch_error(self, error: Errors) -> FetchResponse:
        return FetchResponse(
            partition_error=error, log_start_offset=self._log.start_offset, **self._response_common()
        )

    @staticmethod
    def _top_level_error(request: RaftRequest, error: Errors) -> RaftResponse:
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

    def _validate_voter_only(self, remote: ReplicaKey, epoch: int) -> Errors | None:
        """Vote, BeginQuorumEpoch, EndQuorumEpoch: only voters take part."""
        if epoch < self.quorum.epoch:
            return Errors.FENCED_LEADER_EPOCH
        if remote.id < 0 or remote.id == self.quorum.local_id:
            return Errors.INVALID_REQUEST
        if not self.quorum.is_voter or not self.voters.is_voter(remote):
            # Static quorum (kraft.version 0): both ends must be voters.
            return Errors.INCONSISTENT_VOTER_SET
        return None

    def _validate_leader_only(self, epoch: int) -> Errors | None:
        """Fetch, FetchSnapshot: only the leader of exactly this epoch serves them."""
        if epoch < self.quorum.epoch:
            return Errors.FENCED_LEADER_EPOCH
        if epoch > self.quorum.epoch:
            return Errors.UNKNOWN_LEADER_EPOCH
        if not isinstance(self.quorum.role, Leader):
            return Errors.NOT_LEADER_OR_FOLLOWER
        if self._shutdown is not None:
            return Errors.BROKER_NOT_AVAILABLE
        return None

    def _is_valid_voter_key(self, key: ReplicaKey | None) -> bool:
        if key is None:
            return True
        if self.local_key is None or key.id != self.local_key.id:
            return False
        return key.directory_id is None or key.directory_id == self.local_key.directory_id

    def _validate_request(self, now_ms: int, source: int, msg: RaftRequest) -> RaftResponse | None:
        """The gate every request passes once: cluster id, partition, field
        sanity, epoch (fence, or move to a newer one), membership. Returns the
        error answer, or ``None`` to let the RPC handler run."""
        if msg.cluster_id is not None and self.cluster_id is not None and msg.cluster_id != self.cluster_id:
            return self._top_level_error(msg, Errors.INCONSISTENT_CLUSTER_ID)
        if msg.topic_partition != self.topic_partition:
            if isinstance(msg, FetchSnapshotRequest):
                return FetchSnapshotResponse(partition_error=Errors.UNKNOWN_TOPIC_OR_PARTITION)
            # Until multi-raft, a partition mismatch is an invalid request.
            return self._top_level_error(msg, Errors.INVALID_REQUEST)
        match msg:
            case VoteRequest():
                illegal_epoch = (
                    msg.last_offset_epoch > msg.candidate_epoch
                    if msg.pre_vote
                    else msg.last_offset_epoch >= msg.candidate_epoch
                )
                if msg.last_offset < 0 or msg.last_offset_epoch < 0 or illegal_epoch:
                    return self._error_response(msg, Errors.INVALID_REQUEST)
                error = self._validate_voter_only(msg.candidate_key, msg.candidate_epoch)
                if error is not None:
                    return self._error_response(msg, error)
                if msg.candidate_epoch > self.quorum.epoch and not msg.pre_vote:
                    self._become_unattached(now_ms, msg.candidate_epoch)
                if not self._is_valid_voter_key(msg.voter_key):
                    return self._error_response(msg, Errors.INVALID_VOTER_KEY)
            case BeginQuorumEpochRequest() | EndQuorumEpochRequest():
                error = self._validate_voter_only(ReplicaKey(msg.leader_id), msg.leader_epoch)
                if error is not None:
                    return self._error_response(msg, error)
                endpoints = msg.leader_endpoints or self.voters.endpoints(msg.leader_id)
                if not self._maybe_transition(now_ms, source, msg.leader_id, msg.leader_epoch, endpoints):
                    return self._error_response(msg, Errors.INVALID_REQUEST)
                if isinstance(msg, BeginQuorumEpochRequest) and not self._is_valid_voter_key(msg.voter_key):
                    return self._error_response(msg, Errors.INVALID_VOTER_KEY)
            case FetchRequest():
                if (
                    msg.max_wait_ms < 0
                    or msg.fetch_offset < 0
                    or msg.last_fetched_epoch < 0
                    or msg.last_fetched_epoch > msg.current_leader_epoch
                    or (msg.replica_key.id >= 0 and msg.replica_key.id == self.quorum.local_id)
                ):
                    return self._error_response(msg, Errors.INVALID_REQUEST)
                error = self._validate_leader_only(msg.current_leader_epoch)
                if error is not None:
                    return self._error_response(msg, error)
            case FetchSnapshotRequest():
                error = self._validate_leader_only(msg.current_leader_epoch)
                if error is not None:
                    return self._error_response(msg, error)
        return None

    # --- requests ---------------------------------------------------------------

    def _handle_request(self, now_ms: int, env: InboundRequest) -> None:
        msg = env.message
        response = self._validate_request(now_ms, env.source, msg)
        if response is None:
            match msg:
                case VoteRequest():
                    response = self._handle_vote_request(now_ms, msg)
                case BeginQuorumEpochRequest():
                    response = self._handle_begin_quorum_epoch_request(msg)
                case EndQuorumEpochRequest():
                    response = self._handle_end_quorum_epoch_request(now_ms, msg)
                case FetchRequest():
                    response = self._handle_fetch_request(now_ms, env)
                case FetchSnapshotRequest():
                    response = self._handle_fetch_snapshot_request(now_ms, msg)
                case _:
                    raise TypeError(f"not a request: {msg!r}")
        if response is not None:
            self._respond(env, response)

    def _respond(self, env: InboundRequest, response: RaftResponse) -> None:
        self._ready.send.append(OutboundResponse(env.source, env.correlation_id, response))

    def _handle_vote_request(self, now_ms: int, msg: VoteRequest) -> VoteResponse:
        """KIP-595 Vote handling: grant only an up-to-date log, once per epoch."""
        role = self.quorum.role
        candidate_end = OffsetAndEpoch(msg.last_offset, msg.last_offset_epoch)
        up_to_date = log_up_to_date(candidate_end, log_end(self._log))
        granted = role.can_grant_vote(msg.candidate_key, up_to_date, msg.pre_vote)
        if granted and not msg.pre_vote:
            # The vote binds only once it is durable: the Ready carrying this
            # response persists the new election state first.
            if isinstance(role, Unattached) and role.voted_key is None:
                self.quorum.unattached_add_voted(role.epoch, msg.candidate_key, now_ms)
            elif isinstance(role, Prospective) and role.voted_key is None:
                self.quorum.prospective_add_voted(role.epoch, msg.candidate_key, now_ms)
        return VoteResponse(vote_granted=granted, **self._response_common())

    def _handle_begin_quorum_epoch_request(self, msg: BeginQuorumEpochRequest) -> BeginQuorumEpochResponse:
        # The gate already made us follow the announced leader.
        return BeginQuorumEpochResponse(**self._response_common())

    def _handle_end_quorum_epoch_request(
        self, now_ms: int, msg: EndQuorumEpochRequest
    ) -> EndQuorumEpochResponse:
        role = self.quorum.role
        if isinstance(role, Follower) and role.leader_id == msg.leader_id:
            self.quorum.override_fetch_timeout(
                now_ms, self._end_epoch_election_backoff(msg.preferred_candidates)
            )
        return EndQuorumEpochResponse(**self._response_common())

    def _end_epoch_election_backoff(self, preferred: tuple[ReplicaKey, ...]) -> int:
        """The most caught-up successor starts at once, the others after a strict
        exponential backoff by their position (Kafka's
        ``strictExponentialElectionBackoffMs``)."""
        position = len(preferred)
        if self.local_key is not None:
            for i, key in enumerate(preferred):
                if key.id == self.local_key.id and (
                    key.directory_id is None or key.directory_id == self.local_key.directory_id
                ):
                    position = i
                    break
        return strict_exponential_election_backoff_ms(
            position, len(preferred), self.config.election_backoff_max_ms
        )

    def _handle_fetch_request(self, now_ms: int, env: InboundRequest) -> FetchResponse | None:
        """Answer now, or park the fetch (long poll) until there is news."""
        msg = env.message
        assert isinstance(msg, FetchRequest)
        response = self._try_complete_fetch(now_ms, msg)
        if (
            response.partition_error is not Errors.NONE
            or response.records
            or msg.max_wait_ms == 0
            or response.diverging_epoch is not None
            or response.snapshot_id is not None
            or msg.high_watermark < response.high_watermark
        ):
            return response
        self._parked.append(_ParkedFetch(now_ms + msg.max_wait_ms, env, msg))
        return None

    def _try_complete_fetch(self, now_ms: int, msg: FetchRequest) -> FetchResponse:
        """Validate the fetch position against the leader's log and read."""
        error = self._validate_leader_only(msg.current_leader_epoch)
        if error is not None:
            return self._fetch_error(error)
        leader = self.quorum.role
        assert isinstance(leader, Leader)
        latest = self._log.latest_snapshot_id()
        if msg.fetch_offset == 0 and latest is not None and latest != BOOTSTRAP_SNAPSHOT_ID:
            # An empty follower is better served by the snapshot than the log.
            kind, position = FetchValidity.SNAPSHOT, latest
        else:
            check = validate_offset_and_epoch(self._log, msg.fetch_offset, msg.last_fetched_epoch)
            kind, position = check.kind, check.offset_and_epoch
        records = b""
        if kind is FetchValidity.VALID:
            records = self._log.read(msg.fetch_offset, msg.max_bytes)
            if leader.progress.update_replica(msg.replica_key, now_ms, msg.fetch_offset):
                self._on_leader_high_watermark(now_ms)
        hwm = leader.progress.high_watermark
        return FetchResponse(
            high_watermark=-1 if hwm is None else hwm,
            log_start_offset=self._log.start_offset,
            records=records,
            diverging_epoch=position if kind is FetchValidity.DIVERGING else None,
            snapshot_id=position if kind is FetchValidity.SNAPSHOT else None,
            **self._response_common(),
        )

    def _on_leader_high_watermark(self, now_ms: int) -> None:
        leader = self.quorum.role
        assert isinstance(leader, Leader)
        if leader.progress.high_watermark is not None:
            self._note_committed(leader.progress.high_watermark)
        # Parked fetches learn the new high watermark now.
        self._complete_parked(now_ms, lambda p: True)

    def _complete_parked(
        self,
        now_ms: int,
        which: Callable[[_ParkedFetch], bool],
        *,
        error: Errors | None = None,
        expired: bool = False,
    ) -> None:
        done = [p for p in self._parked if which(p)]
        if not done:
            return
        self._parked = [p for p in self._parked if not which(p)]
        for parked in done:
            msg = parked.fetch
            if error is not None:
                response = self._fetch_error(error)
            elif expired:
                # Nothing new arrived while it waited: the empty answer.
                hwm = self.quorum.high_watermark
                response = FetchResponse(
                    high_watermark=-1 if hwm is None else hwm,
                    log_start_offset=self._log.start_offset,
                    **self._response_common(),
                )
            else:
                response = self._try_complete_fetch(now_ms, msg)
            self._respond(parked.request, response)

    def _handle_fetch_snapshot_request(self, now_ms: int, msg: FetchSnapshotRequest) -> FetchSnapshotResponse:
        leader = self.quorum.role
        assert isinstance(leader, Leader)
        common = self._response_common()
        sid = msg.snapshot_id
        found = None
        if sid.offset >= 0 and sid.epoch >= 0 and sid != BOOTSTRAP_SNAPSHOT_ID:
            # The bootstrap checkpoint is never replicated.
            found = self._log.read_snapshot(sid, max(msg.position, 0), 0)
        if found is None:
            return FetchSnapshotResponse(partition_error=Errors.SNAPSHOT_NOT_FOUND, **common)
        if msg.position < 0 or msg.position >= found.size:
            return FetchSnapshotResponse(partition_error=Errors.POSITION_OUT_OF_RANGE, **common)
        chunk = self._log.read_snapshot(sid, msg.position, max(1, min(msg.max_bytes, found.size)))
        if chunk is None:
            return FetchSnapshotResponse(partition_error=Errors.SNAPSHOT_NOT_FOUND, **common)
        leader.progress.update_check_quorum(msg.replica_key, now_ms)
        return FetchSnapshotResponse(
            snapshot_id=sid,
            size=chunk.size,
            position=msg.position,
            unaligned_records=chunk.data,
            **common,
        )

    # --- responses --------------------------------------------------------------

    def _handle_response(self, now_ms: int, env: InboundResponse) -> None:
        if not self._requests.is_response_expected(env.source, env.correlation_id):
            return  # timed out, or sent before a role change
        sent = self._requests.request_kind(env.source)
        answer = type(env.message).__name__
        if sent is not None and answer != sent.replace("Request", "Response"):
            self._violation(env.source, f"answered a {sent} with a {answer}")
            self._requests.on_response(env.source, env.correlation_id, False, now_ms)
            return
        handled = self._handle_response_message(now_ms, env.source, env.message)
        self._requests.on_response(env.source, env.correlation_id, handled, now_ms)

    def _handle_response_message(self, now_ms: int, source: int, msg: RaftResponse) -> bool:
        """Returns whether the response was handled (False: back off from ``source``)."""
        if msg.error is not Errors.NONE:
            if (
                msg.error is Errors.UNSUPPORTED_VERSION
                and isinstance(msg, VoteResponse)
                and isinstance(self.quorum.role, Prospective)
            ):
                # A voter that does not know PreVote (Vote v0/v1): skip the
                # pre-vote and run a real election (KIP-996 compatibility).
                self._become_candidate(now_ms)
                return True
            return False
        leader_id = None if msg.leader_id < 0 else msg.leader_id
        gate = self._gate_response(
            now_ms, source, msg.partition_error, leader_id, msg.leader_epoch, msg.leader_endpoints
        )
        if gate is not None:
            return gate
        match msg:
            case VoteResponse():
                return self._handle_vote_response(now_ms, source, msg)
            case BeginQuorumEpochResponse():
                return self._handle_begin_quorum_epoch_response(source, msg)
            case EndQuorumEpochResponse():
                return self._handle_end_quorum_epoch_response(source, msg)
            case FetchResponse():
                return self._handle_fetch_response(now_ms, source, msg)
            case FetchSnapshotResponse():
                return self._handle_fetch_snapshot_response(now_ms, source, msg)
        raise TypeError(f"not a response: {msg!r}")

    def _gate_response(
        self,
        now_ms: int,
        source: int,
        error: Errors,
        leader_id: int | None,
        epoch: int,
        endpoints: Endpoints,
    ) -> bool | None:
        """The epoch gate for responses (Kafka's ``maybeHandleCommonResponse``).
        Returns the outcome if the response is dealt with here, ``None`` to
        pass it to its handler (then its epoch equals ours)."""
        if leader_id is not None and not endpoints:
            endpoints = self.voters.endpoints(leader_id)
        if epoch < self.quorum.epoch or error is Errors.UNKNOWN_LEADER_EPOCH:
            return True  # we already know a larger epoch: old news
        if epoch > self.quorum.epoch or error in (Errors.FENCED_LEADER_EPOCH, Errors.NOT_LEADER_OR_FOLLOWER):
            return self._maybe_transition(now_ms, source, leader_id, epoch, endpoints)
        if not self._has_consistent_leader(epoch, leader_id):
            self._violation(
                source,
                f"response names leader {leader_id} for epoch {epoch}, we know {self.quorum.leader_id}",
            )
            return False
        if leader_id is not None and not self.quorum.has_leader:
            if not endpoints:
                return True
            # Learned the leader of our epoch; handle the answer as its follower
            # (an observer discovers the leader and appends in one Fetch).
            self._become_follower(now_ms, epoch, leader_id, endpoints)
            return None if error is Errors.NONE else True
        if error is Errors.BROKER_NOT_AVAILABLE:
            return False
        if error is Errors.INVALID_VOTER_KEY:
            return True
        if error is Errors.INVALID_REQUEST:
            self._violation(source, "peer rejected our request as invalid")
            return False
        return None

    def _handle_vote_response(self, now_ms: int, source: int, msg: VoteResponse) -> bool:
        role = self.quorum.role
        if msg.partition_error is not Errors.NONE:
            return False
        if isinstance(role, (Prospective, Candidate)):
            self.quorum.record_vote(source, msg.vote_granted)
            if msg.vote_granted:
                self._maybe_transition_forward(now_ms)
            else:
                role = self.quorum.role
                if isinstance(role, Prospective) and role.votes.is_vote_rejected():
                    self._prospective_lost(now_ms)
                # A rejected Candidate waits out its election timeout, then
                # becomes Prospective again (Kafka 4.x).
        return True

    def _handle_begin_quorum_epoch_response(self, source: int, msg: BeginQuorumEpochResponse) -> bool:
        if msg.partition_error is not Errors.NONE:
            return False
        role = self.quorum.role
        if isinstance(role, Leader):
            role.progress.add_acknowledgement(source)
        return True

    def _handle_end_quorum_epoch_response(self, source: int, msg: EndQuorumEpochResponse) -> bool:
        if msg.partition_error is not Errors.NONE:
            return False
        self.quorum.acknowledge_resignation(source)
        return True

    def _handle_fetch_response(self, now_ms: int, source: int, msg: FetchResponse) -> bool:
        role = self.quorum.role
        if not isinstance(role, Follower):
            return True
        if msg.partition_error is not Errors.NONE:
            return False
        out = self._ready
        if msg.diverging_epoch is not None:
            if msg.diverging_epoch.offset < 0 or msg.diverging_epoch.epoch < 0:
                self._violation(source, f"invalid diverging epoch {msg.diverging_epoch}")
                return False
            # Log reconciliation: drop our records past the common point.
            target = truncation_offset(self._log, msg.diverging_epoch)
            if self._committed is not None and target < self._committed:
                # Committed records are never removed: refuse, whoever asks.
                self._violation(
                    source,
                    f"leader asked to truncate to {target} ({msg.diverging_epoch}), "
                    f"below the high watermark {self._committed}",
                )
                return False
            if target < self._log.end_offset:
                out.log.append(TruncateTo(target))
        elif msg.snapshot_id is not None:
            sid = msg.snapshot_id
            if sid.offset < 0 or sid.epoch < 0:
                self._violation(source, f"invalid snapshot id {sid}")
                return False
            if self._log.latest_snapshot_id() == sid:
                # Already stored (downloaded before a crash): just adopt it.
                out.log.append(InstallSnapshot(sid))
                self._snapshot_installed(sid)
            else:
                self.quorum.set_fetching_snapshot(SnapshotDownload(sid))
        else:
            if msg.records:
                out.log.append(AppendAsFollower(msg.records))
                if self.quorum.is_voter:
                    # Voters fsync before their next Fetch tells the leader they
                    # have these offsets; observers are never counted.
                    out.log.append(Flush())
            if msg.high_watermark >= 0:
                self.quorum.set_leader_high_watermark(msg.high_watermark)
            self._maybe_update_follower_high_watermark()
        self.quorum.reset_fetch_timeout(now_ms)
        return True

    def _maybe_update_follower_high_watermark(self) -> None:
        """high watermark = min(leader's, log end); only once pending writes are
        visible in the log."""
        role = self.quorum.role
        if not isinstance(role, Follower) or role.leader_high_watermark is None or self._ready.log:
            return
        new = min(role.leader_high_watermark, self._log.end_offset)
        if self.quorum.update_follower_high_watermark(new):
            self._note_committed(new)

    def _snapshot_installed(self, sid: OffsetAndEpoch) -> None:
        # A snapshot holds only committed records.
        if self.quorum.update_follower_high_watermark(sid.offset):
            self._note_committed(sid.offset)

    def _handle_fetch_snapshot_response(self, now_ms: int, source: int, msg: FetchSnapshotResponse) -> bool:
        role = self.quorum.role
        if not isinstance(role, Follower):
            return True
        sid = msg.snapshot_id
        if msg.partition_error is Errors.SNAPSHOT_NOT_FOUND or sid.offset < 0 or sid.epoch < 0:
            # The leader dropped the snapshot before we got it: start over with a Fetch.
            self.quorum.set_fetching_snapshot(None)
            self.quorum.reset_fetch_timeout(now_ms)
            return True
        if msg.partition_error is not Errors.NONE:
            return False
        download = role.fetching_snapshot
        if (
            download is None
            or download.snapshot_id != sid
            or msg.position != download.size
            or msg.size < 0
            or download.size + len(msg.unaligned_records) > msg.size
            or (not msg.unaligned_records and download.size < msg.size)
        ):
            self._violation(
                source, f"unexpected FetchSnapshot answer {sid}@{msg.position}/{msg.size} for {download}"
            )
            self.quorum.set_fetching_snapshot(None)
            return False
        self._ready.log.append(SnapshotChunk(sid, download.size, msg.unaligned_records))
        size = download.size + len(msg.unaligned_records)
        if size == msg.size:
            self._ready.log.append(InstallSnapshot(sid))
            self.quorum.set_fetching_snapshot(None)
            self._snapshot_installed(sid)
        else:
            self.quorum.set_fetching_snapshot(SnapshotDownload(sid, size))
        self.quorum.reset_fetch_timeout(now_ms)
        return True

    # --- polling ----------------------------------------------------------------

    def _run_poll(self, now_ms: int) -> None:
        timeout: int | None = 0
        for _ in range(_MAX_POLL_ROUNDS):
            if self._maybe_complete_shutdown(now_ms):
                timeout = None
                break
            timeout = self._poll_current_state(now_ms)
            if timeout is None or timeout > 0 or self._ready.log:
                break
        self._poll_timeout = None if timeout is None else max(0, timeout)

    def _maybe_complete_shutdown(self, now_ms: int) -> bool:
        shutdown = self._shutdown
        if shutdown is None:
            return False
        if shutdown.outcome is None:
            if now_ms >= shutdown.deadline_ms:
                shutdown.outcome = ShutdownOutcome(completed=False)
            elif self.quorum.is_observer or self.quorum.is_only_voter or self.quorum.has_remote_leader:
                shutdown.outcome = ShutdownOutcome(completed=True)
            if shutdown.outcome is not None:
                self._ready.shutdown = shutdown.outcome
        return shutdown.outcome is not None

    def _poll_current_state(self, now_ms: int) -> int | None:
        match self.quorum.role:
            case Leader():
                return self._poll_leader(now_ms)
            case Candidate():
                return self._poll_candidate(now_ms)
            case Prospective():
                return self._poll_prospective(now_ms)
            case Follower():
                return self._poll_follower(now_ms)
            case Unattached():
                return self._poll_unattached(now_ms)
            case Resigned():
                return self._poll_resigned(now_ms)
        raise AssertionError(f"unknown role {self.quorum.role!r}")

    def _shutdown_remaining(self, now_ms: int) -> int | None:
        return None if self._shutdown is None else max(0, self._shutdown.deadline_ms - now_ms)

    def _maybe_send_request(self, now_ms: int, destination: int, build: Callable[[], RaftRequest]) -> int:
        """Send if the connection to ``destination`` is free; returns how long
        until it may be tried again."""
        requests = self._requests
        if requests.is_ready(destination, now_ms):
            correlation_id = requests.next_correlation_id()
            request = build()
            requests.on_request_sent(destination, correlation_id, now_ms, type(request).__name__)
            self._ready.send.append(OutboundRequest(destination, correlation_id, request))
        return requests.time_until_ready(destination, now_ms)

    def _poll_leader(self, now_ms: int) -> int | None:
        leader = self.quorum.role
        assert isinstance(leader, Leader)
        progress = leader.progress
        if (
            self._shutdown is not None
            or self._resign_epoch == leader.epoch
            or progress.check_quorum_expired(now_ms)
        ):
            self._become_resigned(now_ms, progress.non_leader_voters_by_descending_fetch_offset())
            return 0
        self._complete_parked(now_ms, lambda p: p.deadline_ms <= now_ms, expired=True)
        flush_timeout = self._maybe_append_batches(now_ms)
        begin_timeout = self._maybe_send_begin_quorum_epoch(now_ms, leader)
        check_quorum = progress.check_quorum_deadline()
        parked = min((p.deadline_ms for p in self._parked), default=None)
        return _min_opt(
            flush_timeout,
            begin_timeout,
            None if check_quorum is None else check_quorum - now_ms,
            None if parked is None else parked - now_ms,
        )

    def _maybe_append_batches(self, now_ms: int) -> int | None:
        accumulator = self._accumulator
        if accumulator is None:
            return None
        if accumulator.time_until_drain(now_ms) == 0:
            batches = accumulator.drain(now_ms)
            for batch in batches:
                self._ready.log.append(AppendAsLeader(batch))
            if batches:
                self._ready.log.append(Flush())
        return accumulator.time_until_drain(now_ms)

    def _maybe_send_begin_quorum_epoch(self, now_ms: int, leader: Leader) -> int:
        progress = leader.progress
        if now_ms >= progress.begin_quorum_epoch_deadline_ms:
            for key in progress.voters_needing_begin_quorum_epoch(now_ms):
                self._maybe_send_request(
                    now_ms, key.id, partial(self._begin_quorum_epoch_request, leader, key)
                )
            progress.reset_begin_quorum_epoch_timer(now_ms)
        return progress.begin_quorum_epoch_deadline_ms - now_ms

    def _begin_quorum_epoch_request(self, leader: Leader, voter: ReplicaKey) -> BeginQuorumEpochRequest:
        return BeginQuorumEpochRequest(
            cluster_id=self.cluster_id,
            topic_partition=self.topic_partition,
            voter_key=voter,
            leader_id=leader.leader_id,
            leader_epoch=leader.epoch,
            leader_endpoints=self.voters.endpoints(leader.leader_id),
        )

    def _vote_request(self, role: Prospective | Candidate, voter: int) -> VoteRequest:
        assert self.local_key is not None
        end = log_end(self._log)
        return VoteRequest(
            cluster_id=self.cluster_id,
            topic_partition=self.topic_partition,
            voter_key=self.voters.key(voter),
            candidate_epoch=role.epoch,
            candidate_key=self.local_key,
            last_offset_epoch=end.epoch,
            last_offset=end.offset,
            pre_vote=isinstance(role, Prospective),
        )

    def _maybe_send_vote_requests(self, now_ms: int) -> int | None:
        role = self.quorum.role
        assert isinstance(role, (Prospective, Candidate)) and self.local_key is not None
        if role.votes.is_vote_rejected():
            return None
        timeout: int | None = None
        for voter in role.votes.unrecorded_voters():
            t = self._maybe_send_request(now_ms, voter, partial(self._vote_request, role, voter))
            timeout = _min_opt(timeout, t)
        return timeout

    def _poll_candidate(self, now_ms: int) -> int | None:
        role = self.quorum.role
        assert isinstance(role, Candidate)
        if self._shutdown is not None:
            # Keep campaigning until elected (then resign), a leader appears,
            # or the shutdown times out.
            return _min_opt(self._shutdown_remaining(now_ms), self._maybe_send_vote_requests(now_ms))
        if now_ms >= role.election_deadline_ms:
            self._become_prospective(now_ms)
            return 0
        return _min_opt(self._maybe_send_vote_requests(now_ms), role.election_deadline_ms - now_ms)

    def _poll_prospective(self, now_ms: int) -> int | None:
        role = self.quorum.role
        assert isinstance(role, Prospective)
        if self._shutdown is not None:
            return _min_opt(self._shutdown_remaining(now_ms), self._maybe_send_vote_requests(now_ms))
        if now_ms >= role.election_deadline_ms:
            self._prospective_lost(now_ms)
            return 0
        return _min_opt(self._maybe_send_vote_requests(now_ms), role.election_deadline_ms - now_ms)

    def _poll_follower(self, now_ms: int) -> int | None:
        role = self.quorum.role
        assert isinstance(role, Follower)
        if self._shutdown is not None:
            return 0
        if self.quorum.is_voter:
            assert role.fetch_deadline_ms is not None
            if now_ms >= role.fetch_deadline_ms:
                self._become_prospective(now_ms)
                return 0
            return _min_opt(
                self._maybe_send_fetch_to_best_node(now_ms, role), role.fetch_deadline_ms - now_ms
            )
        # Observers never start elections; they keep looking for the leader.
        return self._maybe_send_fetch_to_best_node(now_ms, role)

    def _maybe_send_fetch_to_best_node(self, now_ms: int, role: Follower) -> int | None:
        if self._ready.log:
            # The next Fetch must carry the log end after these writes.
            return 0
        requests = self._requests
        leader = role.leader_id
        if requests.has_request_timed_out(leader, now_ms):
            # The leader did not answer: ask the other voters who leads now.
            requests.reset(leader)
            return self._maybe_send_fetch_to_any_bootstrap(now_ms)
        if requests.is_backing_off(leader, now_ms):
            return self._maybe_send_fetch_to_any_bootstrap(now_ms)
        if not requests.has_any_inflight(now_ms):
            # One fetch in flight at a time: two could append the same offsets.
            download = role.fetching_snapshot
            if download is not None:
                build: Callable[[], RaftRequest] = lambda: FetchSnapshotRequest(  # noqa: E731
                    cluster_id=self.cluster_id,
                    topic_partition=self.topic_partition,
                    replica_key=self.local_key or ReplicaKey(-1),
                    current_leader_epoch=role.epoch,
                    snapshot_id=download.snapshot_id,
                    position=download.size,
                    max_bytes=self.config.fetch_snapshot_max_bytes,
                )
            else:
                build = self._build_fetch_request
            return self._maybe_send_request(now_ms, leader, build)
        return requests.backoff_before_available(now_ms, self._bootstrap)

    def _maybe_send_fetch_to_any_bootstrap(self, now_ms: int) -> int | None:
        if self._ready.log:
            return 0
        node = self._requests.find_ready_bootstrap(now_ms, self._bootstrap)
        if node is not None:
            return self._maybe_send_request(now_ms, node, self._build_fetch_request)
        return self._requests.backoff_before_available(now_ms, self._bootstrap)

    def _build_fetch_request(self) -> FetchRequest:
        hwm = self.quorum.high_watermark
        return FetchRequest(
            cluster_id=self.cluster_id,
            topic_partition=self.topic_partition,
            replica_key=self.local_key or ReplicaKey(-1),
            current_leader_epoch=self.quorum.epoch,
            fetch_offset=self._log.end_offset,
            last_fetched_epoch=self._log.last_epoch,
            max_wait_ms=self.config.fetch_max_wait_ms,
            max_bytes=self.config.fetch_max_bytes,
            high_watermark=-1 if hwm is None else hwm,
        )

    def _poll_unattached(self, now_ms: int) -> int | None:
        role = self.quorum.role
        assert isinstance(role, Unattached)
        deadline = role.election_deadline_ms
        if self.quorum.is_voter:
            if self._shutdown is not None:
                return self._shutdown_remaining(now_ms)
            if deadline is not None and now_ms >= deadline:
                self._become_prospective(now_ms)
                return 0
        fetch_timeout = self._maybe_send_fetch_to_any_bootstrap(now_ms)
        return _min_opt(fetch_timeout, None if deadline is None else deadline - now_ms)

    def _poll_resigned(self, now_ms: int) -> int | None:
        role = self.quorum.role
        assert isinstance(role, Resigned)
        timeout: int | None = None
        request = EndQuorumEpochRequest(
            cluster_id=self.cluster_id,
            topic_partition=self.topic_partition,
            leader_id=role.local_id,
            leader_epoch=role.epoch,
            preferred_candidates=role.preferred_successors,
            leader_endpoints=self.voters.endpoints(role.local_id),
        )
        for voter in sorted(role.unacked_voters):
            timeout = _min_opt(timeout, self._maybe_send_request(now_ms, voter, lambda: request))
        if self._shutdown is not None:
            # Stay resigned until another leader is known or the shutdown expires.
            return _min_opt(timeout, self._shutdown_remaining(now_ms))
        if now_ms >= role.election_deadline_ms:
            # A bumped epoch: never fetch from ourselves as the old leader.
            self._become_unattached(now_ms, role.epoch + 1)
            return 0
        return _min_opt(timeout, role.election_deadline_ms - now_ms)


def strict_exponential_election_backoff_ms(position: int, total: int, backoff_max_ms: int) -> int:
    """Kafka's ``strictExponentialElectionBackoffMs``: 0 for the first preferred
    successor, ``max >> (total - 1) << (position - 1)`` (capped at ``max``) for
    the others, ``max`` for a replica not in the list."""
    if position == 0:
        return 0
    if position < 0 or position >= total:
        return backoff_max_ms
    base = backoff_max_ms >> (total - 1)
    return min(backoff_max_ms, base << (position - 1))
