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
   towards the high watermark only after the ``Flush`` covering them has
   completed. A leader spreads a write over three Readys, as Kafka's
   ``flushLeaderLog`` moves the end offset before it flushes "so that parked
   fetches can return sooner": the batches (no fsync); the parked fetches
   answered with them; then the ``Flush``, while the followers write the
   same records -- the two fsyncs overlap instead of adding up.
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
``role_changes`` lists the role transitions the call made, each with the
reason it happened (for the operator's log and the metrics; nothing to
execute).

The voter set comes from the log (KIP-853): every call first picks up the
latest ``VotersRecord`` and ``KRaftVersionRecord`` of the log
(``LogView.kraft_control_state``, uncommitted records included, reverted
by truncation); without one the static ``voters`` apply (kraft.version 0).
The leader handles AddRaftVoter / RemoveRaftVoter / UpdateRaftVoter as
Kafka's handlers do (:mod:`kraft.raft.voter_changes`): one change at a time,
only once its epoch is committed, a new voter checked with ApiVersions and
its fetch position, the answer once the new set committed the change; a
leader removed from the set keeps serving fetches without counting itself
and resigns once the removal commits. Followers send UpdateRaftVoter when
their listeners changed, observers with ``auto_join`` AddRaftVoter.

Epochs are checked once, at the top of ``step``, for every inbound message
(:meth:`RaftCore._validate_request` and :meth:`RaftCore._gate_response`): a
stale epoch is fenced (FENCED_LEADER_EPOCH), a newer one moves this replica
to it first — except for Fetch/FetchSnapshot, which only a leader of the
same epoch serves (UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER), and for a
pre-vote, which never disrupts (KIP-996). The RPC handlers below the gate
work in the receiver's current epoch.
"""

from __future__ import annotations

import enum
import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TypedDict

from kraft.raft.accumulator import BatchAccumulator
from kraft.raft.errors import (
    Errors,
    InvalidSnapshotIdError,
    LocalRaftError,
    NotLeaderError,
    RemoteProtocolViolation,
)
from kraft.raft.events import (
    METADATA_PARTITION,
    NO_LEADER,
    AddRaftVoterRequest,
    AddRaftVoterResponse,
    ApiVersionsRequest,
    ApiVersionsResponse,
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
    RemoveRaftVoterRequest,
    RemoveRaftVoterResponse,
    RequestFailed,
    TopicPartition,
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
    VoteRequest,
    VoteResponse,
)
from kraft.raft.leader_progress import QuorumDescription
from kraft.raft.logops import (
    AppendAsFollower,
    AppendAsLeader,
    Flush,
    InstallSnapshot,
    KRaftVersionControl,
    LeaderChangeMessage,
    LogOp,
    SnapshotChunk,
    TruncateTo,
    VotersControl,
)
from kraft.raft.quorum import QuorumState
from kraft.raft.quorum_config import QuorumConfig
from kraft.records.view import KRaftControlState, LogView, OffsetAndEpoch
from kraft.raft.replication import (
    BOOTSTRAP_SNAPSHOT_ID,
    FetchValidity,
    log_end,
    truncation_offset,
    validate_offset_and_epoch,
)
from kraft.raft.request_manager import RequestManager
from kraft.raft.roles import (
    Candidate,
    ElectionState,
    EpochElection,
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
from kraft.raft import kraft_version as kraft_version_feature
from kraft.raft.voter_changes import PendingVoterChange, Refusal, admission_refusal
from kraft.raft.witness import CampaignPolicy
from kraft.raft.voters import (
    DEFAULT_CONTROLLER_LISTENER,
    Endpoints,
    KRaftVersionRange,
    ReplicaKey,
    VoterNode,
    VoterSet,
)

#: A poll loop iteration that keeps asking to run again immediately is cut
#: after this many rounds (each round changes the role, so this is generous).
_MAX_POLL_ROUNDS = 16

#: The requests and responses that pass the common gate (ApiVersions and the
#: KIP-853 voter changes have their own paths).
_QuorumRequest = VoteRequest | BeginQuorumEpochRequest | EndQuorumEpochRequest | FetchRequest | FetchSnapshotRequest
_QuorumOrVoterChangeResponse = (
    VoteResponse | BeginQuorumEpochResponse | EndQuorumEpochResponse | FetchResponse | FetchSnapshotResponse
    | AddRaftVoterResponse | RemoveRaftVoterResponse | UpdateRaftVoterResponse
)


class _LeaderWrite(enum.Enum):
    """Where the leader's latest batches are (see the module docstring)."""

    #: AppendAsLeader in the Ready being executed.
    WRITTEN = "written"
    #: In the log, being sent to the parked fetches; the Flush comes next.
    SERVED = "served"
    #: The Flush is in the Ready being executed.
    FLUSHING = "flushing"


@dataclass(frozen=True, slots=True)
class ShutdownOutcome:
    """How a graceful shutdown ended: ``completed`` (a leader was handed over,
    or none is needed) or timed out."""

    completed: bool


@dataclass(frozen=True, slots=True)
class RoleChange:
    """One role transition: the roles' names (``previous`` None at start-up),
    the epoch and leader after it, and why, as a short phrase for an operator
    ("fetch timeout after 2000 ms", "lost pre-vote: 1 of 3 votes")."""

    previous: str | None
    role: str
    epoch: int
    leader_id: int | None
    reason: str


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
    role_changes: list[RoleChange] = field(default_factory=list)


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


def _peer(node_id: int) -> str:
    """A peer as a role-change reason names it: bootstrap servers have
    negative ids (-1, -2, ... in controller.quorum.bootstrap.servers order)."""
    return f"node {node_id}" if node_id >= 0 else f"bootstrap server {-node_id}"


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
        local_endpoints: Endpoints = (),
        supported_kraft_versions: KRaftVersionRange = (0, 1),
        bootstrap_ids: Sequence[int] | None = None,
        auto_join: bool = False,
        followers_always_flush: bool = False,
        campaign_policy: CampaignPolicy | None = None,
    ) -> None:
        """``node_id`` ``None`` makes a pure observer. ``election_state`` is
        what ``quorum-state`` held at start-up (``None`` if absent).

        ``voters`` is the static voter set (``controller.quorum.voters``,
        kraft.version 0; empty for a dynamic quorum): a ``VotersRecord`` in
        the log's snapshot or records replaces it (KIP-853). KIP-853 settings:
        ``local_endpoints`` are this replica's controller listeners (the first
        one's name is the default listener a voter must have);
        ``supported_kraft_versions`` what it reports in voter records;
        ``bootstrap_ids`` the peers (``controller.quorum.bootstrap.servers``,
        ids -1, -2, ...) asked to find the leader besides the known voters;
        ``auto_join`` makes an observer add itself as a voter
        (``controller.quorum.auto.join.enable``); ``followers_always_flush``
        makes an observer fsync like a voter before its next Fetch, so it
        can be counted the moment it is added (Kafka flushes on every
        controller). ``campaign_policy`` (:mod:`kraft.raft.witness`) may hold
        a voter back from campaigning and make a leader resign (a witness
        beside Kafka controllers); None: Raft's rules alone."""
        self.config = config or QuorumConfig()
        self.voters = voters
        self.cluster_id = cluster_id
        self.topic_partition = topic_partition
        self.local_key = None if node_id is None else ReplicaKey(node_id, directory_id)
        self._log = log
        self.quorum = QuorumState(
            local_key=self.local_key, voters=voters, config=self.config, rng=rng, local_endpoints=local_endpoints
        )
        self._requests = RequestManager(self.config.retry_backoff_ms, self.config.request_timeout_ms, rng)
        self._election_state = election_state
        self._static_voters = voters
        self._local_endpoints = tuple(local_endpoints)
        self._supported_kraft_versions = supported_kraft_versions
        self._listener = local_endpoints[0].listener if local_endpoints else DEFAULT_CONTROLLER_LISTENER
        self._bootstrap_ids = tuple(bootstrap_ids) if bootstrap_ids is not None else ()
        self._auto_join = auto_join
        self._followers_always_flush = followers_always_flush
        self._campaign_policy = campaign_policy
        #: The finalized kraft.version and the offset of the VotersRecord of
        #: the current voter set (None: the static set), from the log.
        self.kraft_version = 0
        self.voters_offset: int | None = None
        self._control_state: KRaftControlState | None = None
        #: The leader's add or remove in flight (KIP-853: one at a time).
        self._voter_change: PendingVoterChange | None = None
        #: kraft.version 0 leader: the static voters with the directory ids and
        #: listeners learned from UpdateRaftVoter (Kafka's KRaftVersionUpgrade.Voters).
        self._upgrade_voters: VoterSet | None = None
        #: Leader: the kraft.version level it appended and where (the last
        #: control record); pending until the log makes it the finalized
        #: level (Kafka's KRaftVersionUpgrade.Version), kept for this epoch.
        self._pending_upgrade: tuple[int, OffsetAndEpoch] | None = None
        #: Follower: the leader epoch whose leader has our current listeners
        #: (UpdateRaftVoter answered), and when to try again otherwise.
        self._updated_voter_epoch = -1
        self._membership_retry_ms = 0
        self._accumulator: BatchAccumulator | None = None
        self._parked: list[_ParkedFetch] = []
        self._leader_write: _LeaderWrite | None = None
        self._out: Ready | None = None
        self._poll_timeout: int | None = None
        self._committed: int | None = None
        #: A snapshot the shell was asked to install by the last Ready: the
        #: high watermark moves to its end only once the log shows it
        #: installed (a failed install -- full disk, corrupt download -- must
        #: not expose an old, possibly divergent tail as committed).
        self._installing_snapshot: OffsetAndEpoch | None = None
        self._last_leader: LeaderAndEpoch | None = None
        self._resign_epoch: int | None = None
        self._shutdown: _Shutdown | None = None
        self._now_ms: int | None = None
        self._initialized = False
        #: Why a follower's fetch timer runs short (for its role-change reason).
        self._fetch_timeout_cause: str | None = None

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

    @property
    def pending_voter_change(self) -> str | None:
        """The leader's AddRaftVoter/RemoveRaftVoter in flight, described
        ("add voter ..."); None when there is none."""
        return None if self._voter_change is None else self._voter_change.describe()

    def describe_quorum(self, now_ms: int) -> QuorumDescription | None:
        """The leader's view of its voters and observers for DescribeQuorum
        (Kafka's ``LeaderState.describeQuorum``); None unless this replica is
        the leader. Read-only: it changes no state and may be called between
        any two calls of the core. ``now_ms`` is in the clock the core is
        driven with (the node's is wall-clock ms, as DescribeQuorum reports)."""
        role = self.quorum.role
        if not self._initialized or not isinstance(role, Leader):
            return None
        return role.progress.describe(now_ms, role.epoch, self.quorum.voters)

    def initialize(self, now_ms: int) -> Ready:
        """Choose the start-up role (Kafka's ``KafkaRaftClient.initialize``): a
        sole voter elects itself at once."""
        if self._initialized:
            raise LocalRaftError("RaftCore is already initialized")
        self._begin(now_ms, sync=False)
        # The voter set of the log (KIP-853) decides whether we are a voter.
        self._refresh_voters(now_ms)
        self.quorum.initialize(self._election_state, log_end(self._log), now_ms)
        self._initialized = True
        role = self.quorum.role
        self._note_role_change(None, "start-up")
        if self.quorum.is_only_voter and isinstance(role, (Unattached, Follower, Resigned)):
            self._become_prospective(now_ms, "start-up as the only voter")
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
                    self._on_request_failed(dest, cid)
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
        accumulator = self._accumulator
        if (
            accumulator is not None
            and epoch is None
            and self._shutdown is None
            and self._resign_epoch != accumulator.epoch
        ):
            # A busy leader's every append (only a leader has an accumulator,
            # of its own epoch): the checks below, in short.
            return accumulator.append(now_ms, records)
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
        :class:`~kraft.raft.errors.InvalidSnapshotIdError` otherwise."""
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
        elif out.log or self._leader_write is _LeaderWrite.SERVED:
            # The log changes when the shell executes this Ready; come back
            # right after to see it (count the flushed end, send the next Fetch;
            # a leader flushes what it just served).
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
        self._refresh_voters(now_ms)
        role = self.quorum.role
        if isinstance(role, Leader):
            end = self._log.end_offset
            stage = self._leader_write
            if stage is _LeaderWrite.WRITTEN:
                # Written, not durable: served now, counted once flushed.
                self._leader_write = _LeaderWrite.SERVED
            elif stage is _LeaderWrite.SERVED:
                self._ready.log.append(Flush())
                self._leader_write = _LeaderWrite.FLUSHING
            else:
                self._leader_write = None
                if role.progress.update_local_end_offset(end):
                    self._on_leader_high_watermark(now_ms)
            self._complete_parked(now_ms, lambda p: p.fetch.fetch_offset < end)
        elif isinstance(role, Follower):
            installing, self._installing_snapshot = self._installing_snapshot, None
            if installing is not None and self._log.start_offset >= installing.offset:
                # A snapshot holds only committed records.
                if self.quorum.update_follower_high_watermark(installing.offset):
                    self._note_committed(installing.offset)
            self._maybe_update_follower_high_watermark()

    def _note_committed(self, high_watermark: int) -> None:
        if self._committed is None or high_watermark > self._committed:
            self._committed = high_watermark
            self._ready.committed = high_watermark

    # --- the voter set (KIP-853) -----------------------------------------------

    def _refresh_voters(self, now_ms: int) -> None:
        """Adopt the latest voter set and kraft.version of the log (snapshot and
        records, uncommitted ones too; reverted by truncation), as Kafka's
        ``KRaftControlRecordStateMachine`` feeds ``QuorumState``. Without any
        VotersRecord the static voters apply."""
        state = self._log.kraft_control_state()
        if state is self._control_state:
            return
        self._control_state = state
        self.kraft_version = state.kraft_version
        if state.voters is None:
            voters, offset = self._static_voters, None
        else:
            voters, offset = VoterSet.from_entries(state.voters.voters), state.voters.offset
        self.voters_offset = offset
        if voters != self.voters:
            self._set_voters(now_ms, voters)

    def _set_voters(self, now_ms: int, voters: VoterSet) -> None:
        self.voters = voters
        self.quorum.update_voters(voters, now_ms)
        if not self._initialized:
            return
        role = self.quorum.role
        if isinstance(role, Leader) and self._out is not None:
            # The new majority may commit more (a lagging voter removed).
            if role.progress.update_voters(voters):
                self._on_leader_high_watermark(now_ms)

    def _update_removal_pending(self, now_ms: int) -> None:
        """Raft's rule for a replica its latest voter set removed: until that
        record is committed it still campaigns (not counting its own vote),
        since a majority of the new set may need it to elect a leader."""
        key = self.local_key
        pending = False
        if key is not None and not self.quorum.is_voter and self.voters_offset is not None:
            previous = self._control_state.previous_voters if self._control_state is not None else None
            hwm = self.quorum.high_watermark
            pending = (
                previous is not None
                and VoterSet.from_entries(previous.voters).is_voter(key)
                and (hwm is None or self.voters_offset >= hwm)
            )
        self.quorum.set_removal_pending(pending, now_ms)

    def _bootstrap_nodes(self) -> tuple[int, ...]:
        """Who a replica without a known leader asks: the known voters and the
        ``controller.quorum.bootstrap.servers`` (negative ids)."""
        local = self.quorum.local_id
        known = tuple(v for v in self.voters.voter_ids if v != local)
        return known + tuple(b for b in self._bootstrap_ids if b not in known)

    def _local_voter_node(self) -> VoterNode:
        assert self.local_key is not None
        return VoterNode(self.local_key, self._local_endpoints, self._supported_kraft_versions)

    def _start_of_epoch_voters(self) -> list[KRaftVersionControl | VotersControl]:
        """KRaftVersion and Voters records a new leader writes with its
        LeaderChange (Kafka's ``appendStartOfEpochControlRecords``): the voter
        set read from the bootstrap checkpoint is not replicated, so the first
        leader writes it to the log; a leader whose listeners changed records
        the new ones."""
        if self.kraft_version < 1 or self.voters_offset is None or not self._local_endpoints:
            return []
        local = self._local_voter_node()
        if self.voters_offset != -1 and not self.voters.voter_node_needs_update(local):
            return []
        updated = self.voters.update_voter(local) or self.voters
        return [KRaftVersionControl(self.kraft_version), VotersControl(updated.to_entries())]

    def _finish_voter_change(self, error: Errors, message: str | None = None) -> None:
        """Answer the pending AddRaftVoter/RemoveRaftVoter and forget it."""
        pending, self._voter_change = self._voter_change, None
        if pending is None:
            return
        if message is None and error is not Errors.NONE:
            message = f"{pending.describe()} failed: {error.name}"
        if pending.kind == "add":
            self._respond(pending.request, AddRaftVoterResponse(error=error, error_message=message))
        else:
            self._respond(pending.request, RemoveRaftVoterResponse(error=error, error_message=message))

    # --- transitions (QuorumState does the checking and persisting) -----------

    def _after_transition(self, now_ms: int, *, left_leader: bool) -> None:
        # Answers to requests sent in the old role are meaningless now.
        self._requests.reset_all()
        if left_leader:
            if self._leader_write in (_LeaderWrite.WRITTEN, _LeaderWrite.SERVED):
                # Its next Fetch will tell the new leader these offsets are
                # here: they must be durable by then.
                self._ready.log.append(Flush())
            self._leader_write = None
            self._accumulator = None
            self._resign_epoch = None
            self._upgrade_voters = None
            self._pending_upgrade = None
            self._complete_parked(now_ms, lambda p: True, error=Errors.NOT_LEADER_OR_FOLLOWER)
            self._finish_voter_change(Errors.NOT_LEADER_OR_FOLLOWER, "The leader changed before the voter change completed")
        lae = self.quorum.leader_and_epoch
        if lae != self._last_leader:
            self._last_leader = lae
            self._ready.leader_change = lae

    def _reset_fetch_timeout(self, now_ms: int) -> None:
        self.quorum.reset_fetch_timeout(now_ms)
        self._fetch_timeout_cause = None

    def _note_role_change(self, previous: Role | None, reason: str) -> None:
        self._fetch_timeout_cause = None
        role = self.quorum.role
        self._ready.role_changes.append(RoleChange(
            None if previous is None else previous.name, role.name, role.epoch, role.election.leader_id, reason))

    @staticmethod
    def _tally(votes: EpochElection) -> str:
        return f"{len(votes.granted)} of {len(votes.voter_ids)} votes"

    def _become_unattached(self, now_ms: int, epoch: int, leader_id: int | None = None, reason: str = "") -> None:
        previous = self.quorum.role
        self.quorum.transition_to_unattached(epoch, now_ms, leader_id)
        self._note_role_change(previous, reason or f"learned epoch {epoch}")
        self._after_transition(now_ms, left_leader=isinstance(previous, Leader))

    def _become_follower(
        self, now_ms: int, epoch: int, leader_id: int, endpoints: Endpoints, reason: str = ""
    ) -> None:
        previous = self.quorum.role
        self.quorum.transition_to_follower(epoch, leader_id, endpoints, now_ms)
        self._note_role_change(previous, reason or f"learned leader {leader_id} of epoch {epoch}")
        self._after_transition(now_ms, left_leader=isinstance(previous, Leader))

    def _become_prospective(self, now_ms: int, reason: str) -> None:
        # --- kraft witness hook (kraft/raft/witness.py): every election
        # timeout that would start a candidacy comes here. A witness lets it
        # pass and waits another timeout; it still votes and fetches.
        if not self._may_campaign():
            self.quorum.restart_election_timer(now_ms)
            return
        previous = self.quorum.role
        self.quorum.transition_to_prospective(now_ms)
        self._note_role_change(previous, reason)
        self._after_transition(now_ms, left_leader=False)
        self._maybe_transition_forward(now_ms)

    def _become_candidate(self, now_ms: int, reason: str) -> None:
        previous = self.quorum.role
        self.quorum.transition_to_candidate(now_ms)
        self._note_role_change(previous, reason)
        self._after_transition(now_ms, left_leader=False)
        self._maybe_transition_forward(now_ms)

    def _become_leader(self, now_ms: int, reason: str) -> None:
        if self._ready.log:
            raise LocalRaftError("cannot become leader with log writes pending")
        epoch_start = self._log.end_offset
        previous = self.quorum.role
        leader = self.quorum.transition_to_leader(epoch_start, now_ms)
        self._note_role_change(previous, reason)
        self._after_transition(now_ms, left_leader=False)
        self._accumulator = BatchAccumulator(
            leader.epoch, epoch_start, self.config.append_linger_ms, self.config.max_batch_size_bytes
        )
        # The high watermark only moves once a record of this epoch is
        # committed; write one right away (KIP-595's LeaderChangeMessage).
        controls: list[LeaderChangeMessage | KRaftVersionControl | VotersControl] = [
            LeaderChangeMessage(leader.leader_id, self.voters.voter_ids, tuple(sorted(leader.granting_voters)))
        ]
        controls += self._start_of_epoch_voters()
        self._accumulator.append_control(now_ms, *controls)
        leader.progress.update_local_end_offset(epoch_start)
        if self.kraft_version == 0 and self.local_key is not None:
            # Learned from UpdateRaftVoter, for a later kraft.version upgrade.
            local = self._local_voter_node()
            self._upgrade_voters = self.voters.update_voter_ignoring_directory_id(local) or self.voters

    def _become_resigned(self, now_ms: int, successors: tuple[ReplicaKey, ...], reason: str) -> None:
        previous = self.quorum.role
        self.quorum.transition_to_resigned(successors, now_ms)
        self._note_role_change(previous, reason)
        self._after_transition(now_ms, left_leader=True)

    def _maybe_transition_forward(self, now_ms: int) -> None:
        """Prospective -> Candidate, or Candidate -> Leader, once a majority granted."""
        role = self.quorum.role
        if isinstance(role, Prospective) and role.votes.is_vote_granted() and self._may_campaign():
            self._become_candidate(now_ms, f"won pre-vote: {self._tally(role.votes)}")
        elif isinstance(role, Candidate) and role.votes.is_vote_granted():
            self._become_leader(now_ms, f"won election: {self._tally(role.votes)}")

    def _may_campaign(self) -> bool:
        """The kraft witness hook: what the campaign policy says (Raft's
        rules alone without one)."""
        policy, key = self._campaign_policy, self.local_key
        return policy is None or key is None or policy.may_campaign(key.id, self.voters.voter_ids)

    def _prospective_lost(self, now_ms: int, why: str) -> None:
        """Pre-vote lost or timed out: back to following the last known leader,
        or Unattached in the same epoch."""
        role = self.quorum.role
        assert isinstance(role, Prospective)
        reason = f"{why}: {self._tally(role.votes)}"
        if role.leader_id is not None and role.leader_endpoints:
            self._become_follower(now_ms, role.epoch, role.leader_id, role.leader_endpoints, reason)
        else:
            self._become_unattached(now_ms, role.epoch, role.leader_id, reason)

    def _is_former_self(self, leader_id: int | None, epoch: int) -> bool:
        """A peer names our id as the leader of an epoch we did not lead. With
        directory ids (KIP-853) that is another replica with our id -- the one
        whose disk we replaced -- not us: treat its epoch as leaderless."""
        return (
            leader_id is not None
            and self.local_key is not None
            and leader_id == self.local_key.id
            and self.local_key.directory_id is not None
            and not (epoch == self.quorum.epoch and isinstance(self.quorum.role, (Leader, Resigned)))
        )

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
        if self._is_former_self(leader_id, epoch):
            leader_id, endpoints = None, ()
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
                self._become_follower(now_ms, epoch, leader_id, endpoints,
                                      f"{_peer(source)} named leader {leader_id} of epoch {epoch}")
            else:
                self._become_unattached(now_ms, epoch, leader_id, f"{_peer(source)} is in epoch {epoch}")
        elif (
            leader_id is not None
            and leader_id != self.quorum.local_id
            and endpoints
            and (not self.quorum.has_leader or len(endpoints) > len(self.quorum.leader_endpoints))
        ):
            self._become_follower(now_ms, epoch, leader_id, endpoints,
                                  f"{_peer(source)} named leader {leader_id} of epoch {epoch}")
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
        """Vote, BeginQuorumEpoch, EndQuorumEpoch (Kafka's
        ``validateVoterOnlyRequest``).

        A static quorum (kraft.version 0) has one fixed voter set, so both
        ends must be in it (INCONSISTENT_VOTER_SET): an outsider cannot
        disrupt the quorum with a high epoch. A dynamic quorum (kraft.version
        1) does not check membership, as Kafka 4.x does not: the two ends may
        disagree for a while -- a voter just added may not have its
        VotersRecord yet and must still vote and follow -- and a candidate
        only counts the votes of its own voters."""
        if epoch < self.quorum.epoch:
            return Errors.FENCED_LEADER_EPOCH
        if remote.id < 0 or remote.id == self.quorum.local_id:
            return Errors.INVALID_REQUEST
        if self.kraft_version < 1 and (not self.quorum.is_voter or not self.voters.is_voter(remote)):
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

    def _validate_request(self, now_ms: int, source: int, msg: _QuorumRequest) -> RaftResponse | None:
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
                    self._become_unattached(
                        now_ms, msg.candidate_epoch,
                        reason=f"vote request from candidate {msg.candidate_key.id} in epoch {msg.candidate_epoch}")
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
        if isinstance(msg, (AddRaftVoterRequest, RemoveRaftVoterRequest, UpdateRaftVoterRequest)):
            self._handle_voter_change_request(now_ms, env)
            return
        if isinstance(msg, ApiVersionsRequest):
            raise TypeError("ApiVersions requests are answered by the shell, not the raft core")
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
        # KIP-853: a replica votes whether or not its own log lists it as a
        # voter yet (a voter just added may not have the record), but only a
        # replica with an id can record a vote.
        granted = self.local_key is not None and role.can_grant_vote(msg.candidate_key, up_to_date, msg.pre_vote)
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
            self._fetch_timeout_cause = f"leader {msg.leader_id} resigned (EndQuorumEpoch)"
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
        self._maybe_complete_voter_change(leader)
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

    # --- KIP-853 voter changes at the leader ------------------------------------

    def _voter_change_answer(self, msg: RaftRequest, error: Errors, message: str | None) -> RaftResponse:
        match msg:
            case AddRaftVoterRequest():
                return AddRaftVoterResponse(error=error, error_message=message)
            case RemoveRaftVoterRequest():
                return RemoveRaftVoterResponse(error=error, error_message=message)
            case UpdateRaftVoterRequest():
                return UpdateRaftVoterResponse(error=error, **self._response_common())
        raise TypeError(f"not a voter change request: {msg!r}")

    def _handle_voter_change_request(self, now_ms: int, env: InboundRequest) -> None:
        """AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter: the checks Kafka's
        ``KafkaRaftClient`` makes before handing them to the handlers
        (cluster id, leader of the epoch, a voter key with a directory id, an
        endpoint on the default listener)."""
        msg = env.message
        assert isinstance(msg, (AddRaftVoterRequest, RemoveRaftVoterRequest, UpdateRaftVoterRequest))

        def refuse(error: Errors, message: str | None = None) -> None:
            self._respond(env, self._voter_change_answer(msg, error, message))

        if msg.cluster_id is not None and self.cluster_id is not None and msg.cluster_id != self.cluster_id:
            return refuse(
                Errors.INCONSISTENT_CLUSTER_ID,
                f'The given id "{msg.cluster_id}" doesn\'t match the cluster id "{self.cluster_id}"',
            )
        epoch = msg.current_leader_epoch if isinstance(msg, UpdateRaftVoterRequest) else self.quorum.epoch
        error = self._validate_leader_only(epoch)
        if error is not None:
            return refuse(error)
        key = msg.voter_key
        if key.id < 0 or key.directory_id is None:
            return refuse(Errors.INVALID_REQUEST, f"The request didn't include a valid voter: {key}")
        if not isinstance(msg, RemoveRaftVoterRequest) and not any(e.listener == self._listener for e in msg.listeners):
            return refuse(
                Errors.INVALID_REQUEST,
                f"The request didn't include the endpoint ({', '.join(f'{e.listener}://{e.host}:{e.port}' for e in msg.listeners)}) "
                f"for the default listener {self._listener}",
            )
        leader = self.quorum.role
        assert isinstance(leader, Leader) and self._accumulator is not None
        match msg:
            case AddRaftVoterRequest():
                self._handle_add_raft_voter_request(now_ms, env, msg, leader)
            case RemoveRaftVoterRequest():
                self._handle_remove_raft_voter_request(now_ms, env, msg, leader)
            case UpdateRaftVoterRequest():
                self._handle_update_raft_voter_request(now_ms, env, msg, leader)

    def _admission_refusal(self, leader: Leader, action: str) -> Refusal | None:
        return admission_refusal(
            pending=self._voter_change,
            high_watermark=leader.progress.high_watermark,
            kraft_version=self.kraft_version,
            voters_offset=self.voters_offset,
            action=action,
        )

    def _handle_add_raft_voter_request(
        self, now_ms: int, env: InboundRequest, msg: AddRaftVoterRequest, leader: Leader
    ) -> None:
        """Kafka's ``AddVoterHandler``: admission, then ApiVersions to the new
        voter; the rest happens when it answers."""
        key = msg.voter_key
        refusal = self._admission_refusal(leader, "adding voter")
        if refusal is None and key.id in self.voters:
            refusal = Refusal(
                Errors.DUPLICATE_VOTER, f"The voter id for {key} is already part of the set of voters {self.voters}."
            )
        if refusal is None:
            correlation = self._send_request_now(now_ms, key.id, ApiVersionsRequest(endpoints=msg.listeners))
            if correlation is None:
                refusal = Refusal(Errors.REQUEST_TIMED_OUT, f"New voter {key} is not ready to receive requests")
            else:
                self._voter_change = PendingVoterChange(
                    "add",
                    env,
                    VoterNode(key, msg.listeners),
                    now_ms + self.config.request_timeout_ms,
                    ack_when_committed=msg.ack_when_committed,
                    api_versions_correlation=correlation,
                )
                return
        self._respond(env, AddRaftVoterResponse(error=refusal.error, error_message=refusal.message))

    def _handle_api_versions_response(self, now_ms: int, correlation_id: int, msg: ApiVersionsResponse) -> bool:
        """The would-be voter answered: it must support the finalized
        kraft.version and have caught up with our log end recently; then the
        new voter set is appended (it takes effect once in our log)."""
        pending = self._voter_change
        leader = self.quorum.role
        if (
            not isinstance(leader, Leader)
            or pending is None
            or pending.kind != "add"
            or pending.api_versions_correlation != correlation_id
            or self._accumulator is None
        ):
            return True  # nothing is waiting for it any more
        pending.api_versions_correlation = None
        key = pending.voter.key
        if msg.error is not Errors.NONE:
            self._finish_voter_change(
                Errors.REQUEST_TIMED_OUT,
                f"Aborted add voter operation for {key} since API_VERSIONS returned an error {msg.error.name}",
            )
            return False
        versions = msg.supported_kraft_versions
        if versions is None or not versions[0] <= self.kraft_version <= versions[1]:
            shown = "(min: 0, max: 0)" if versions is None else f"(min: {versions[0]}, max: {versions[1]})"
            self._finish_voter_change(
                Errors.INVALID_REQUEST,
                f"Aborted add voter operation for {key} since the kraft.version range {shown} doesn't "
                f"support the finalized version {self.kraft_version}",
            )
            return True
        if not leader.progress.is_replica_caught_up(key, now_ms, self.config.fetch_timeout_ms):
            self._finish_voter_change(
                Errors.REQUEST_TIMED_OUT,
                f"Aborted add voter operation for {key} since it is lagging behind: it has not fetched "
                f"up to the leader's log end offset in the last {self.config.fetch_timeout_ms} ms",
            )
            return True
        node = VoterNode(key, pending.voter.endpoints, versions)
        new_voters = self.voters.add_voter(node)
        if new_voters is None:
            self._finish_voter_change(
                Errors.DUPLICATE_VOTER, f"The voter id for {key} is already part of the set of voters {self.voters}."
            )
            return True
        pending.voter = node
        pending.last_offset = self._accumulator.append_control(now_ms, VotersControl(new_voters.to_entries()))
        if not pending.ack_when_committed:
            self._finish_voter_change(Errors.NONE)
        return True

    def _handle_remove_raft_voter_request(
        self, now_ms: int, env: InboundRequest, msg: RemoveRaftVoterRequest, leader: Leader
    ) -> None:
        """Kafka's ``RemoveVoterHandler``: append the smaller set; answer once
        it is committed (the leader, if removed, then resigns)."""
        assert self._accumulator is not None
        key = msg.voter_key
        refusal = self._admission_refusal(leader, "removing voter")
        node = self.voters.node(key.id)
        if refusal is None and (node is None or node.key != key):
            refusal = Refusal(Errors.VOTER_NOT_FOUND, f"Cannot remove voter {key} from the set of voters {self.voters}")
        if refusal is None and len(self.voters) == 1:
            refusal = Refusal(
                Errors.INVALID_REQUEST, f"Cannot remove voter {key}: it is the only voter of the set {self.voters}"
            )
        new_voters = self.voters.remove_voter(key) if refusal is None else None
        if refusal is not None or new_voters is None or node is None:
            refusal = refusal or Refusal(Errors.VOTER_NOT_FOUND, f"Cannot remove voter {key}")
            self._respond(env, RemoveRaftVoterResponse(error=refusal.error, error_message=refusal.message))
            return
        offset = self._accumulator.append_control(now_ms, VotersControl(new_voters.to_entries()))
        self._voter_change = PendingVoterChange(
            "remove", env, node, now_ms + self.config.request_timeout_ms, last_offset=offset
        )

    def _handle_update_raft_voter_request(
        self, now_ms: int, env: InboundRequest, msg: UpdateRaftVoterRequest, leader: Leader
    ) -> None:
        """Kafka's ``UpdateVoterHandler``: a voter's new listeners or supported
        versions. Under kraft.version 0 the leader only remembers them for an
        upgrade; under 1 it appends the updated set and answers at once."""
        assert self._accumulator is not None
        low, high = msg.supported_kraft_versions
        node = VoterNode(msg.voter_key, msg.listeners, (low, high))

        def answer(error: Errors) -> None:
            self._respond(env, UpdateRaftVoterResponse(error=error, **self._response_common()))

        if low < 0 or high < 0 or high < low:
            return answer(Errors.INVALID_REQUEST)
        if self._voter_change is not None or leader.progress.high_watermark is None:
            return answer(Errors.REQUEST_TIMED_OUT)
        if self.kraft_version < 1:
            upgrade = self._upgrade_voters
            if upgrade is None or msg.voter_key.id not in upgrade:
                return answer(Errors.VOTER_NOT_FOUND)
            self._upgrade_voters = upgrade.update_voter_ignoring_directory_id(node) or upgrade
            return answer(Errors.NONE)
        if self.voters_offset is None or self.voters_offset >= leader.progress.high_watermark:
            return answer(Errors.REQUEST_TIMED_OUT)
        if not node.supports(self.kraft_version):
            return answer(Errors.INVALID_REQUEST)
        updated = self.voters.update_voter(node)
        if updated is None:
            return answer(Errors.VOTER_NOT_FOUND)
        if updated != self.voters:
            self._accumulator.append_control(now_ms, VotersControl(updated.to_entries()))
        answer(Errors.NONE)

    def upgrade_kraft_version(self, now_ms: int, kraft_version: int, *, validate_only: bool = False) -> bool:
        """Finalize ``kraft_version`` (Kafka's ``upgradeKRaftVersion`` /
        ``LeaderState.maybeAppendUpgradedKRaftVersion``; the checks are
        :func:`kraft.raft.kraft_version.check_upgrade`): only 0 -> 1, on the
        leader, once every static voter told it its directory id and that it
        supports version 1 (UpdateRaftVoter). Appends one control batch with
        the KRaftVersion record and the voter set (see
        :attr:`pending_kraft_version_upgrade`); call :meth:`poll` afterwards.
        ``validate_only`` runs the checks and appends nothing. Returns False
        when there is nothing to do (already finalized, or already appended).
        Raises :class:`~kraft.raft.errors.NotLeaderError` off the leader,
        :class:`~kraft.raft.kraft_version.InvalidUpdateVersionError` when the
        upgrade is refused (Kafka's ``InvalidUpdateVersionException``) and
        :class:`~kraft.raft.errors.LocalRaftError` for the states Kafka treats as
        impossible."""
        self._check_initialized()
        leader = self.quorum.role
        if not isinstance(leader, Leader) or self._accumulator is None or self._resign_epoch is not None:
            raise NotLeaderError("Upgrade kraft version failed since the replica is not the leader")
        pending = self._pending_upgrade
        if not kraft_version_feature.check_upgrade(
            new_level=kraft_version,
            finalized_level=self.kraft_version,
            pending_level=pending[0] if pending is not None and pending[0] > self.kraft_version else None,
            upgrade_voters=self._upgrade_voters,
            voters=self.voters,
        ):
            return False
        voters = self._upgrade_voters
        assert voters is not None  # check_upgrade refuses an upgrade without them
        if self._voter_change is not None:
            # Unreachable in Kafka (no voter change under kraft.version 0); kept as a guard.
            raise LocalRaftError(
                f"Invalid upgrade of kraft.version while a voter change is pending ({self._voter_change.describe()})"
            )
        if not validate_only:
            last = self._accumulator.append_control(
                now_ms, KRaftVersionControl(kraft_version), VotersControl(voters.to_entries())
            )
            self._pending_upgrade = (kraft_version, OffsetAndEpoch(last, leader.epoch))
        return True

    @property
    def pending_kraft_version_upgrade(self) -> OffsetAndEpoch | None:
        """Where this leader appended its kraft.version upgrade (offset of the
        last control record and the leader epoch; None if it appended none):
        an UpdateFeatures request is answered once that offset is committed,
        as Kafka's controller answers once the upgrade's records are."""
        return None if self._pending_upgrade is None else self._pending_upgrade[1]

    @property
    def upgrade_voters(self) -> VoterSet | None:
        """kraft.version 0 leader: the static voters as their UpdateRaftVoter
        requests described them (directory ids, supported versions)."""
        return self._upgrade_voters

    def _maybe_complete_voter_change(self, leader: Leader) -> None:
        """Kafka's ``highWatermarkUpdated``: the pending change's VotersRecord
        is committed under the new voter set."""
        pending = self._voter_change
        hwm = leader.progress.high_watermark
        if pending is not None and pending.last_offset is not None and hwm is not None and hwm > pending.last_offset:
            self._finish_voter_change(Errors.NONE)

    def _removed_leader_must_resign(self, leader: Leader) -> bool:
        """A leader not in the committed voter set hands over (KIP-853: it
        kept serving fetches until the removal committed)."""
        hwm = leader.progress.high_watermark
        return (
            self.voters_offset is not None
            and hwm is not None
            and hwm > self.voters_offset
            and self.local_key is not None
            and not self.voters.is_voter(self.local_key)
        )

    def _on_request_failed(self, destination: int, correlation_id: int) -> None:
        pending = self._voter_change
        if pending is not None and pending.api_versions_correlation == correlation_id:
            self._finish_voter_change(
                Errors.REQUEST_TIMED_OUT, f"Aborted add voter operation for {pending.voter.key}: it could not be reached"
            )

    def _send_request_now(self, now_ms: int, destination: int, request: RaftRequest) -> int | None:
        """Send ``request`` if the connection is free; its correlation id, or
        ``None`` if it could not go now."""
        if not self._requests.is_ready(destination, now_ms):
            return None
        correlation_id = self._requests.next_correlation_id()
        self._requests.on_request_sent(destination, correlation_id, now_ms, type(request).__name__)
        self._ready.send.append(OutboundRequest(destination, correlation_id, request))
        return correlation_id

    # --- KIP-853 membership requests of followers and observers ---------------------

    def _membership_request(self, now_ms: int, role: Follower) -> RaftRequest | None:
        """UpdateRaftVoter from a voter whose recorded listeners or supported
        versions are stale (under kraft.version 0: once per leader epoch, so a
        leader learns the directory ids an upgrade needs); AddRaftVoter from an
        observer with ``controller.quorum.auto.join.enable`` that has caught up
        -- after RemoveRaftVoter of a stale voter with its id."""
        key = self.local_key
        if key is None or key.directory_id is None or not self._local_endpoints or now_ms < self._membership_retry_ms:
            return None
        local = self._local_voter_node()
        if self.quorum.is_voter:
            if role.epoch == self._updated_voter_epoch:
                return None
            if self.kraft_version >= 1 and not self.voters.voter_node_needs_update(local):
                return None
            self._membership_retry_ms = now_ms + self.config.fetch_timeout_ms
            return UpdateRaftVoterRequest(
                cluster_id=self.cluster_id,
                current_leader_epoch=role.epoch,
                voter_key=key,
                listeners=self._local_endpoints,
                supported_kraft_versions=self._supported_kraft_versions,
            )
        hwm = role.high_watermark
        if (
            not self._auto_join
            or self.kraft_version < 1
            or not role.has_fetched_from_leader
            or hwm is None
            or self._log.end_offset < hwm
        ):
            return None
        self._membership_retry_ms = now_ms + self.config.fetch_timeout_ms
        stale = self.voters.key(key.id)
        if stale is not None:
            # Our id is a voter with another directory id: a disk we replaced.
            return RemoveRaftVoterRequest(cluster_id=self.cluster_id, voter_key=stale)
        return AddRaftVoterRequest(
            cluster_id=self.cluster_id,
            timeout_ms=self.config.request_timeout_ms,
            voter_key=key,
            listeners=self._local_endpoints,
            ack_when_committed=False,
        )

    def _handle_join_response(self, now_ms: int, msg: AddRaftVoterResponse | RemoveRaftVoterResponse) -> bool:
        if isinstance(msg, RemoveRaftVoterResponse) and msg.error is Errors.NONE:
            # The stale entry is gone: join as soon as the removal commits.
            self._membership_retry_ms = now_ms + self.config.retry_backoff_ms
        return True

    def _handle_update_raft_voter_response(self, now_ms: int, source: int, msg: UpdateRaftVoterResponse) -> bool:
        if msg.error in (Errors.NONE, Errors.INVALID_REQUEST, Errors.VOTER_NOT_FOUND, Errors.UNSUPPORTED_VERSION):
            # Done for this leader: told it, or it will not take it.
            self._updated_voter_epoch = self.quorum.epoch
        leader_id = None if msg.leader_id < 0 else msg.leader_id
        if msg.leader_epoch >= 0:
            error = msg.error if msg.error in (Errors.FENCED_LEADER_EPOCH, Errors.NOT_LEADER_OR_FOLLOWER) else Errors.NONE
            gate = self._gate_response(now_ms, source, error, leader_id, msg.leader_epoch, msg.leader_endpoints)
            if gate is not None:
                return gate
        return True

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
        message = env.message
        if isinstance(message, ApiVersionsResponse):
            handled = self._handle_api_versions_response(now_ms, env.correlation_id, message)
        else:
            handled = self._handle_response_message(now_ms, env.source, message)
        self._requests.on_response(env.source, env.correlation_id, handled, now_ms)

    def _handle_response_message(self, now_ms: int, source: int, msg: _QuorumOrVoterChangeResponse) -> bool:
        """Returns whether the response was handled (False: back off from ``source``)."""
        match msg:
            case AddRaftVoterResponse() | RemoveRaftVoterResponse():
                return self._handle_join_response(now_ms, msg)
            case UpdateRaftVoterResponse():
                return self._handle_update_raft_voter_response(now_ms, source, msg)
        if msg.error is not Errors.NONE:
            if (
                msg.error is Errors.UNSUPPORTED_VERSION
                and isinstance(msg, VoteResponse)
                and isinstance(self.quorum.role, Prospective)
            ):
                # A voter that does not know PreVote (Vote v0/v1): skip the
                # pre-vote and run a real election (KIP-996 compatibility).
                self._become_candidate(now_ms, f"node {source} does not support pre-vote")
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
        if self._is_former_self(leader_id, epoch):
            leader_id, endpoints = None, ()
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
            self._become_follower(now_ms, epoch, leader_id, endpoints,
                                  f"{_peer(source)} named leader {leader_id} of epoch {epoch}")
            return None if error is Errors.NONE else True
        if (leader_id is not None and leader_id == self.quorum.leader_id and endpoints
                and not self.quorum.leader_endpoints and isinstance(self.quorum.role, Unattached)):
            # We knew the leader's id but not where it listens (restarted with
            # a voter set that lacks it), and asked the bootstrap servers: the
            # answer names its endpoints, as Kafka's maybeTransition adopts
            # "more endpoints" of the known leader. Without this the replica
            # would ask them forever.
            self._become_follower(now_ms, epoch, leader_id, endpoints,
                                  f"{_peer(source)} gave the endpoints of leader {leader_id} of epoch {epoch}")
            return None if error is Errors.NONE else True
        if error is Errors.BROKER_NOT_AVAILABLE:
            return False
        if error is Errors.INVALID_VOTER_KEY:
            return True
        if error is Errors.INVALID_REQUEST:
            if source >= 0:
                # A bootstrap server (negative id) may turn out to be ourselves.
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
                    self._prospective_lost(now_ms, "lost pre-vote")
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
                if self.quorum.is_voter or self._followers_always_flush:
                    # Voters fsync before their next Fetch tells the leader they
                    # have these offsets. Observers are not counted -- unless
                    # added meanwhile (KIP-853), so controllers flush anyway.
                    out.log.append(Flush())
            if msg.high_watermark >= 0:
                self.quorum.set_leader_high_watermark(msg.high_watermark)
            self._maybe_update_follower_high_watermark()
        self._reset_fetch_timeout(now_ms)
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
        # Checked against the log at the next call (_sync_with_log), once
        # the shell has executed the InstallSnapshot.
        self._installing_snapshot = sid

    def _handle_fetch_snapshot_response(self, now_ms: int, source: int, msg: FetchSnapshotResponse) -> bool:
        role = self.quorum.role
        if not isinstance(role, Follower):
            return True
        sid = msg.snapshot_id
        if msg.partition_error is Errors.SNAPSHOT_NOT_FOUND or sid.offset < 0 or sid.epoch < 0:
            # The leader dropped the snapshot before we got it: start over with a Fetch.
            self.quorum.set_fetching_snapshot(None)
            self._reset_fetch_timeout(now_ms)
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
        self._reset_fetch_timeout(now_ms)
        return True

    # --- polling ----------------------------------------------------------------

    def _run_poll(self, now_ms: int) -> None:
        self._update_removal_pending(now_ms)
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
        reason = None
        if self._shutdown is not None:
            reason = "graceful shutdown"
        elif self._resign_epoch == leader.epoch:
            reason = "asked to resign"
        elif progress.check_quorum_expired(now_ms):
            reason = (f"check-quorum: no fetch from a majority of voters in "
                      f"{self.config.check_quorum_timeout_ms} ms")
        elif self._removed_leader_must_resign(leader):
            reason = "its removal from the voter set committed"
        policy = self._campaign_policy
        witness = None
        if reason is None and policy is not None:
            # --- kraft witness hook (kraft/raft/witness.py): a witness that
            # finds itself leading (detection arrived late) hands over at once,
            # naming the voters that can lead (Kafka's controllers) first.
            reason = witness = policy.resign_reason(leader.local_key.id, self.voters.voter_ids)
        if reason is not None:
            successors = progress.non_leader_voters_by_descending_fetch_offset()
            if witness is not None and policy is not None:
                successors = policy.preferred_successors(successors)
            self._become_resigned(now_ms, successors, reason)
            return 0
        self._complete_parked(now_ms, lambda p: p.deadline_ms <= now_ms, expired=True)
        pending = self._voter_change
        if pending is not None and now_ms >= pending.deadline_ms:
            stage = "commit" if pending.last_offset is not None else "be admitted"
            self._finish_voter_change(
                Errors.REQUEST_TIMED_OUT, f"Request timed out waiting for {pending.describe()} to {stage}"
            )
            pending = None
        flush_timeout = self._maybe_append_batches(now_ms)
        begin_timeout = self._maybe_send_begin_quorum_epoch(now_ms, leader)
        check_quorum = progress.check_quorum_deadline()
        parked = min((p.deadline_ms for p in self._parked), default=None)
        return _min_opt(
            flush_timeout,
            begin_timeout,
            None if check_quorum is None else check_quorum - now_ms,
            None if parked is None else parked - now_ms,
            None if pending is None else pending.deadline_ms - now_ms,
        )

    def _maybe_append_batches(self, now_ms: int) -> int | None:
        accumulator = self._accumulator
        if accumulator is None:
            return None
        if self._leader_write is not None:
            # The previous batches are still being served and flushed; what
            # accumulates meanwhile goes out in one batch after that.
            return None
        if accumulator.time_until_drain(now_ms) == 0:
            batches = accumulator.drain(now_ms)
            for batch in batches:
                self._ready.log.append(AppendAsLeader(batch))
            if batches:
                self._leader_write = _LeaderWrite.WRITTEN
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
            leader_endpoints=self.quorum.leader_endpoints,
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
            self._become_prospective(now_ms, f"election in epoch {role.epoch} timed out: {self._tally(role.votes)}")
            return 0
        return _min_opt(self._maybe_send_vote_requests(now_ms), role.election_deadline_ms - now_ms)

    def _poll_prospective(self, now_ms: int) -> int | None:
        role = self.quorum.role
        assert isinstance(role, Prospective)
        if self._shutdown is not None:
            return _min_opt(self._shutdown_remaining(now_ms), self._maybe_send_vote_requests(now_ms))
        if now_ms >= role.election_deadline_ms:
            self._prospective_lost(now_ms, "pre-vote timed out")
            return 0
        return _min_opt(self._maybe_send_vote_requests(now_ms), role.election_deadline_ms - now_ms)

    def _poll_follower(self, now_ms: int) -> int | None:
        role = self.quorum.role
        assert isinstance(role, Follower)
        if self._shutdown is not None:
            return 0
        if self.quorum.may_campaign:
            assert role.fetch_deadline_ms is not None
            if now_ms >= role.fetch_deadline_ms:
                self._become_prospective(
                    now_ms, self._fetch_timeout_cause or f"fetch timeout after {self.config.fetch_timeout_ms} ms")
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
            membership = self._membership_request(now_ms, role)
            if membership is not None:
                # KIP-853: between two fetches (one request in flight at a time).
                return _min_opt(
                    self._maybe_send_request(now_ms, leader, lambda: membership),
                    self._membership_retry_ms - now_ms,
                )
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
        return requests.backoff_before_available(now_ms, self._bootstrap_nodes())

    def _maybe_send_fetch_to_any_bootstrap(self, now_ms: int) -> int | None:
        if self._ready.log:
            return 0
        node = self._requests.find_ready_bootstrap(now_ms, self._bootstrap_nodes())
        if node is not None:
            return self._maybe_send_request(now_ms, node, self._build_fetch_request)
        return self._requests.backoff_before_available(now_ms, self._bootstrap_nodes())

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
        if self.quorum.may_campaign:
            if self._shutdown is not None:
                return self._shutdown_remaining(now_ms)
            if deadline is not None and now_ms >= deadline:
                self._become_prospective(now_ms, f"election timeout with no leader in epoch {role.epoch}")
                return 0
        else:
            deadline = None  # an observer (or a removed voter) never campaigns
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
            leader_endpoints=self.quorum.leader_endpoints,
        )
        for voter in sorted(role.unacked_voters):
            timeout = _min_opt(timeout, self._maybe_send_request(now_ms, voter, lambda: request))
        if self._shutdown is not None:
            # Stay resigned until another leader is known or the shutdown expires.
            return _min_opt(timeout, self._shutdown_remaining(now_ms))
        if now_ms >= role.election_deadline_ms:
            # A bumped epoch: never fetch from ourselves as the old leader.
            self._become_unattached(now_ms, role.epoch + 1, reason="no new leader after resigning")
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
