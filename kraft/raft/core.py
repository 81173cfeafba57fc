"""RaftCore: the sans-IO KRaft replica -- the step loop and the role transitions.

The core does no I/O, reads no clock and draws all randomness from the
``random.Random`` it is given. The shell (trio node, simulation, test
harness) drives it, as etcd's ``Step``/``Ready``:

* :meth:`RaftCore.initialize` once, after building it from the stored election
  state and the log;
* :meth:`RaftCore.step` for every inbound message (a request, the answer to
  one of ours, a failed request): it handles the message and nothing else;
* :meth:`RaftCore.poll` after a step (or a batch of them) and whenever
  ``now_ms`` reaches ``Ready.next_deadline_ms``: it runs the timers
  (:mod:`kraft.raft.polling`) and returns the :class:`~kraft.raft.ready.Ready`
  holding everything since the last one, which the shell executes completely
  and in the order :mod:`kraft.raft.ready` documents before calling again;
* :meth:`RaftCore.append` (then ``poll``), :meth:`RaftCore.resign`,
  :meth:`RaftCore.begin_shutdown`, :meth:`RaftCore.validate_snapshot_id`.

The voter set comes from the log (KIP-853): the first call after a Ready that
wrote the log picks up its latest ``VotersRecord`` and ``KRaftVersionRecord``,
uncommitted ones included; without one the static ``voters`` apply.

Every inbound message passes the epoch gate once (:mod:`kraft.raft.epoch_gate`
decides, the core carries out its verdict), then its RPC's handler from the
registry (:mod:`kraft.raft.rpcs`; answers: :mod:`kraft.raft.responses`). The
handlers (:mod:`kraft.raft.families`) see their family's narrow view and work
in the receiver's current epoch; each role's changing state lives on its
role object, so leaving a role drops it.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence

from kraft.raft import epoch_gate, handover, polling, responses
from kraft.raft.epoch_gate import PASS, QuorumRequest, Verdict
from kraft.raft.errors import Errors, LocalRaftError, NotLeaderError, RemoteProtocolViolation
from kraft.raft.events import (
    METADATA_PARTITION, Inbound, InboundRequest, InboundResponse, OutboundRequest, OutboundResponse,
    RaftRequest, RaftResponse, RequestFailed, TopicPartition,
)
from kraft.raft.families import election, membership, replication
from kraft.raft.own_membership import OwnMembership, start_of_epoch_control_records
from kraft.raft.leader_state import HandoverLeadership, LeaderWrite
from kraft.raft.logops import Flush, KRaftVersionControl, LeaderChangeMessage, LogOp, VotersControl
from kraft.raft.polling import Shutdown
from kraft.raft.quorum_config import QuorumConfig
from kraft.raft.quorum_state import QuorumState
from kraft.raft.ready import Ready, RoleChange
from kraft.raft.request_manager import RequestManager
from kraft.raft.roles import (
    Candidate, ElectionState, Follower, Leader, LeaderAndEpoch, Prospective, Resigned, Role, Unattached,
)
from kraft.raft.rpcs import BY_REQUEST, VoteRequest, fetch_rpc
from kraft.raft.rpcs.describe_quorum_rpc import QuorumInfo, describe
from kraft.raft.voters import (
    DEFAULT_CONTROLLER_LISTENER, Endpoints, KRaftVersionRange, ReplicaKey, VoterSet, voter_ids_text,
)
from kraft.raft.witness_policy import CampaignPolicy, handover_leaders, may_campaign
from kraft.records.view import KRaftControlState, LogView, OffsetAndEpoch


class RaftCore:
    """One KRaft replica (voter or observer) of ``__cluster_metadata-0``."""

    def __init__(
        self, *, node_id: int | None, voters: VoterSet, log: LogView, rng: random.Random,
        config: QuorumConfig | None = None, directory_id: uuid.UUID | None = None,
        cluster_id: str | None = None, topic_partition: TopicPartition = METADATA_PARTITION,
        election_state: ElectionState | None = None, local_endpoints: Endpoints = (),
        supported_kraft_versions: KRaftVersionRange = (0, 1), bootstrap_ids: Sequence[int] | None = None,
        auto_join: bool = False, followers_always_flush: bool = False, campaign_policy: CampaignPolicy | None = None,
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
        controller). ``campaign_policy`` (:mod:`kraft.raft.witness_policy`) may hold
        a voter back from campaigning and make a leader resign (a witness
        beside Kafka controllers); None: Raft's rules alone."""
        self.config = config or QuorumConfig()
        self.voters = voters
        self.cluster_id = cluster_id
        self.topic_partition = topic_partition
        self.local_key = None if node_id is None else ReplicaKey(node_id, directory_id)
        self._log = log
        self.quorum = QuorumState(local_key=self.local_key, voters=voters, config=self.config, rng=rng,
                                  local_endpoints=local_endpoints)
        self.requests = RequestManager(self.config.retry_backoff_ms, self.config.request_timeout_ms, rng)
        self._election_state = election_state
        self._static_voters = voters
        self._local_endpoints = tuple(local_endpoints)
        self._bootstrap_ids = tuple(bootstrap_ids) if bootstrap_ids is not None else ()
        #: The name of the default controller listener a voter must have.
        self.default_listener = local_endpoints[0].listener if local_endpoints else DEFAULT_CONTROLLER_LISTENER
        self.followers_always_flush = followers_always_flush
        self.campaign_policy = campaign_policy
        #: A witness's hand-over bookkeeping (kraft/raft/handover.py).
        self._handover = handover.HandoverWatch(handover.reachable_window_ms(self.config))
        self.own_membership = OwnMembership(local_endpoints, supported_kraft_versions, auto_join)
        #: The finalized kraft.version and the offset of the VotersRecord of
        #: the current voter set (None: the static set), from the log.
        self.kraft_version = 0
        self.voters_offset: int | None = None
        self.control_state: KRaftControlState | None = None
        #: The Ready being filled: what the next poll returns (:attr:`pending`).
        self._pending = Ready()
        #: A call (initialize, step, poll, begin_shutdown) is running.
        self._in_call = False
        #: Whether this Ready's first call read what the shell wrote.
        self._synced = False
        #: The last Ready asked the shell to write the log: the next call
        #: reads what it wrote (:meth:`_sync_with_log`).
        self._wrote_log = False
        self.poll_timeout: int | None = None
        #: The largest high watermark exposed to the shell (Ready.committed):
        #: what the listeners were told, never decreasing. The high watermark
        #: itself is the current role's (``quorum.high_watermark``).
        self._committed: int | None = None
        self._last_leader: LeaderAndEpoch | None = None
        self.shutdown: Shutdown | None = None
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

    @property
    def is_voter(self) -> bool:
        """Whether this replica is in the current voter set."""
        return self.quorum.is_voter

    @property
    def local_id(self) -> int | None:
        return self.quorum.local_id

    @property
    def pending_voter_change(self) -> str | None:
        """The leader's AddRaftVoter/RemoveRaftVoter in flight, described
        ("add voter ..."); None when there is none."""
        change = None if (leader := self._leader()) is None else leader.state.voter_change
        return None if change is None else change.describe()

    @property
    def handover_stats(self) -> handover.HandoverStats:
        """The hand-over epochs this witness led and their total time."""
        return self._handover.stats

    @property
    def handover_leadership(self) -> handover.HandoverLeadership | None:
        """Set while this witness leads a hand-over epoch (kraft/raft/handover.py)."""
        return None if (leader := self._leader()) is None else leader.state.handover

    def describe_quorum(self, now_ms: int) -> QuorumInfo | None:
        """The leader's view of its voters and observers for DescribeQuorum
        (Kafka's ``LeaderState.describeQuorum``); None unless this replica is
        the leader. Read-only: it changes no state and may be called between
        any two calls of the core. ``now_ms`` is in the clock the core is
        driven with (the node's is wall-clock ms, as DescribeQuorum reports)."""
        leader = self._leader()
        return None if leader is None else describe(leader.progress, now_ms, leader.epoch, self.quorum.voters)

    def _leader(self) -> Leader | None:
        role = self.quorum.role if self._initialized else None
        return role if isinstance(role, Leader) else None

    def initialize(self, now_ms: int) -> Ready:
        """Choose the start-up role (Kafka's ``KafkaRaftClient.initialize``): a
        sole voter elects itself at once."""
        if self._initialized:
            raise LocalRaftError("RaftCore is already initialized")
        self._begin(now_ms, sync=False)
        # The voter set of the log (KIP-853) decides whether we are a voter.
        self.refresh_voters(now_ms)
        self.quorum.initialize(self._election_state, self.log_end, now_ms)
        self._initialized = True
        role = self.quorum.role
        self._note_role_change(None, "start-up")
        if self.quorum.is_only_voter and isinstance(role, (Unattached, Follower, Resigned)):
            self.become_prospective(now_ms, "start-up as the only voter")
        elif isinstance(role, Candidate):
            self._after_transition(now_ms, None)
            self.maybe_transition_forward(now_ms)
        else:
            self._after_transition(now_ms, None)
        polling.run_poll(self, now_ms)
        return self._finish(now_ms)

    def step(self, now_ms: int, inbound: Inbound) -> None:
        """Handle one inbound message. What it produces waits in the Ready
        that the next :meth:`poll` returns (etcd's ``Step``, then ``Ready``):
        the driver calls ``poll`` after a step, or after a batch of them."""
        self._begin(now_ms)
        if self.shutdown is None or self.shutdown.outcome is None:
            match inbound:
                case InboundRequest():
                    self._handle_request(now_ms, inbound)
                case InboundResponse():
                    responses.handle_response(self, now_ms, inbound)
                case RequestFailed(destination=dest, correlation_id=cid):
                    self.requests.on_response(dest, cid, False, now_ms)
                    membership.on_request_failed(self, cid)
                case _:
                    raise TypeError(f"not an inbound message: {inbound!r}")
        self._in_call = False

    def poll(self, now_ms: int) -> Ready:
        """Run the timers (elections, fetches, resends, linger, timeouts) and
        take the Ready: everything produced since the last one."""
        self._begin(now_ms)
        polling.run_poll(self, now_ms)
        return self._finish(now_ms)

    def append(self, now_ms: int, records: Sequence[bytes], *, epoch: int | None = None) -> int:
        """Queue records for the log as leader; returns the offset of the last
        one. They are written after ``append.linger.ms``: call :meth:`poll`
        afterwards (at the latest by its ``next_deadline_ms``). An offset is
        committed once the high watermark passes it *in this epoch*; if the
        leadership ends first the records may never be written."""
        if self._initialized:
            role = self.quorum.role
            if type(role) is Leader and epoch is None and self.shutdown is None and not role.state.resign_requested \
                    and role.state.handover is None:
                # A busy leader's every append: the checks below, in short.
                return role.state.accumulator.append(now_ms, records)
        self._check_initialized()
        role = self.quorum.role
        if not isinstance(role, Leader):
            raise NotLeaderError("append failed: this replica is not the leader")
        if epoch is not None and epoch != role.epoch:
            raise NotLeaderError(f"append for epoch {epoch} but the leader epoch is {role.epoch}")
        if role.state.handover is not None:
            raise NotLeaderError("append failed: this replica is a kraft witness leading only to hand the log over "
                                 "(kraft/raft/handover.py); it appends no records")
        if not role.state.accepts_appends() or self.shutdown is not None:
            raise NotLeaderError("append failed: the leader is resigning")
        return role.state.accumulator.append(now_ms, records)

    def next_append_offset(self) -> int:
        """The offset the next :meth:`append` of this leader gets (control
        records it queued count): a state machine that names offsets in its
        records (Kafka's broker epoch is the offset of the registration)
        asks just before it appends. Raises :class:`NotLeaderError` on a
        non-leader."""
        self._check_initialized()
        role = self.quorum.role
        if not isinstance(role, Leader):
            raise NotLeaderError("this replica is not the leader")
        return role.state.accumulator.next_offset

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
        role = self.quorum.role
        if isinstance(role, Leader):
            role.state.resign_requested = True

    def begin_shutdown(self, now_ms: int, timeout_ms: int) -> Ready:
        """Start a graceful shutdown: a leader resigns (EndQuorumEpoch) and the
        shutdown completes once another leader is known, or at once for a
        follower, observer or sole voter; ``Ready.shutdown`` reports the end."""
        self._begin(now_ms)
        if self.shutdown is None:
            self.shutdown = Shutdown(now_ms + timeout_ms)
        polling.run_poll(self, now_ms)
        return self._finish(now_ms)

    def validate_snapshot_id(self, snapshot_id: OffsetAndEpoch) -> None:
        """Check that a snapshot may be written for ``snapshot_id``: its end
        offset is committed and (offset, epoch) names a real point of the log
        (the epoch of the record just before the offset). Raises
        :class:`~kraft.raft.errors.InvalidSnapshotIdError` otherwise."""
        self._check_initialized()
        replication.validate_snapshot_id(self._log, self._committed, snapshot_id)

    # --- call framing -----------------------------------------------------------

    def _check_initialized(self) -> None:
        if not self._initialized:
            raise LocalRaftError("call RaftCore.initialize first")

    def _begin(self, now_ms: int, *, sync: bool = True) -> None:
        if sync:
            self._check_initialized()
        if self._in_call:
            raise LocalRaftError("RaftCore is not re-entrant")
        self._in_call = True
        if self._now_ms is not None and now_ms < self._now_ms:
            raise LocalRaftError(f"time went backwards: {now_ms} < {self._now_ms}")
        self._now_ms = now_ms
        if sync and not self._synced:
            # The first call since the shell executed the last Ready.
            self._synced = True
            self._sync_with_log(now_ms)

    def _finish(self, now_ms: int) -> Ready:
        out = self._pending
        # The next Ready is made now, so a step only adds to one.
        self._pending = Ready()
        self._in_call = False
        self._synced = False
        self._wrote_log = bool(out.log)
        out.persist = self.quorum.take_pending_persist()
        out.kraft_version = self.kraft_version
        if self.shutdown is not None and self.shutdown.outcome is not None:
            out.next_deadline_ms = None
        elif out.log or ((leader := self._leader()) is not None and leader.state.write is LeaderWrite.SERVED):
            # The log changes when the shell executes this Ready; come back
            # right after to see it (count the flushed end, send the next Fetch;
            # a leader flushes what it just served).
            out.next_deadline_ms = now_ms
        else:
            out.next_deadline_ms = None if self.poll_timeout is None else now_ms + self.poll_timeout
        return out

    @property
    def pending(self) -> Ready:
        """The Ready being filled, during a call only."""
        if not self._in_call:
            raise LocalRaftError("no call in progress")
        return self._pending

    # --- services for the handlers (kraft.raft.families' Protocols) -------------

    @property
    def log(self) -> LogView:
        """The log as the core reads it (read-only)."""
        return self._log

    @property
    def log_end(self) -> OffsetAndEpoch:
        """The log end offset and the epoch of the last record: what votes
        compare (Kafka's ``KafkaRaftClient.endOffset``)."""
        return OffsetAndEpoch(self._log.end_offset, self._log.last_epoch)

    def violation(self, source: int, description: str) -> None:
        self.pending.violations.append(RemoteProtocolViolation(source, description))
        self.requests.on_violation(source)  # its next failure backs off longer

    def respond(self, env: InboundRequest, response: RaftResponse) -> None:
        self.pending.send.append(OutboundResponse(env.source, env.correlation_id, response))

    def emit_log(self, op: LogOp) -> None:
        self.pending.log.append(op)

    def has_pending_log(self) -> bool:
        return bool(self.pending.log)

    def _sync_with_log(self, now_ms: int) -> None:
        """Pick up what the shell wrote while executing the previous Ready.
        Only a Ready's log operations (appends, truncations, snapshot
        installs) move the log end and change its control records: after a
        Ready without any there is nothing new to read, except a leader's
        write moving through its stages."""
        wrote = self._wrote_log
        if wrote:
            self.refresh_voters(now_ms)
        role = self.quorum.role
        if isinstance(role, Leader):
            end = self._log.end_offset
            state = role.state
            if state.write is LeaderWrite.WRITTEN:
                # Written, not durable: served now, counted once flushed.
                state.write = LeaderWrite.SERVED
            elif state.write is LeaderWrite.SERVED:
                self.pending.log.append(Flush())
                state.write = LeaderWrite.FLUSHING
            else:
                state.write = None
                if role.progress.update_local_end_offset(end):
                    fetch_rpc.leader_high_watermark_advanced(self, now_ms, role)
            if state.parked:
                fetch_rpc.complete_parked_below(self, now_ms, role, end)
        elif isinstance(role, Follower) and wrote:
            replication.sync_follower_with_log(self, log_pending=bool(self.pending.log))

    def expose_committed(self, high_watermark: int) -> None:
        """Expose a new high watermark to the shell (never a lower one)."""
        if self._committed is None or high_watermark > self._committed:
            self._committed = high_watermark
            self.pending.committed = high_watermark
            self._maybe_fire_leader_change()

    # --- the voter set (KIP-853) -----------------------------------------------

    def refresh_voters(self, now_ms: int) -> None:
        """Adopt the latest voter set and kraft.version of the log (snapshot and
        records, uncommitted ones too; reverted by truncation), as Kafka's
        ``KRaftControlRecordStateMachine`` feeds ``QuorumState``. Without any
        VotersRecord the static voters apply."""
        state = self._log.kraft_control_state()
        if state is self.control_state:
            return
        self.control_state = state
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
        if isinstance(role, Leader):
            # The new majority may commit more (a lagging voter removed).
            if role.progress.update_voters(voters):
                fetch_rpc.leader_high_watermark_advanced(self, now_ms, role)

    def bootstrap_nodes(self) -> tuple[int, ...]:
        """Who a replica without a known leader asks: the known voters and the
        ``controller.quorum.bootstrap.servers`` (negative ids)."""
        local = self.quorum.local_id
        known = tuple(v for v in self.voters.voter_ids if v != local)
        return known + tuple(b for b in self._bootstrap_ids if b not in known)

    # --- transitions (QuorumState does the checking and persisting) -----------

    def _after_transition(self, now_ms: int, previous: Role | None) -> None:
        # Answers to requests sent in the old role are meaningless now.
        self.requests.reset_all()
        if isinstance(previous, Leader):
            # The leadership's state went with the role; answer what waited on it.
            state = previous.state
            if state.handover is not None:  # --- kraft witness hand-over hook (kraft/raft/handover.py)
                self._handover.ended(now_ms - state.handover.started_ms)
            if state.write in (LeaderWrite.WRITTEN, LeaderWrite.SERVED):
                # Its next Fetch will tell the new leader these offsets are
                # here: they must be durable by then.
                self.pending.log.append(Flush())
            fetch_rpc.complete_parked(
                self, now_ms, state.take_all_parked(), error=Errors.NOT_LEADER_OR_FOLLOWER)
            membership.finish_voter_change(
                self, state, Errors.NOT_LEADER_OR_FOLLOWER, "The leader changed before the voter change completed")
        self._maybe_fire_leader_change()

    def _maybe_fire_leader_change(self) -> None:
        """Kafka's ``ListenerContext.maybeFireLeaderChange``: a new leader or
        epoch is announced at once, except our own leadership, announced only
        once the committed offsets reached the epoch start -- a state machine
        acting as leader must first have replayed the previous leaders'
        commits."""
        quorum = self.quorum
        last = self._last_leader
        if last is not None and last.leader_id == quorum.leader_id and last.epoch == quorum.epoch:
            return
        role = quorum.role
        if isinstance(role, Leader) and (self._committed is None or self._committed < role.epoch_start_offset):
            return
        lae = quorum.leader_and_epoch
        self._last_leader = lae
        self.pending.leader_change = lae

    def _note_role_change(self, previous: Role | None, reason: str) -> None:
        role = self.quorum.role
        self.pending.role_changes.append(RoleChange(
            None if previous is None else previous.name, role.name, role.epoch, self.quorum.leader_id, reason))

    def become_unattached(self, now_ms: int, epoch: int, leader_id: int | None = None, reason: str = "") -> None:
        previous = self.quorum.role
        self.quorum.transition_to_unattached(epoch, now_ms, leader_id)
        self._note_role_change(previous, reason or f"learned epoch {epoch}")
        self._after_transition(now_ms, previous)

    def become_follower(
        self, now_ms: int, epoch: int, leader_id: int, endpoints: Endpoints, reason: str = ""
    ) -> None:
        previous = self.quorum.role
        self.quorum.transition_to_follower(epoch, leader_id, endpoints, now_ms)
        self._note_role_change(previous, reason or f"learned leader {leader_id} of epoch {epoch}")
        self._after_transition(now_ms, previous)
        self._handover.leader_found()  # --- kraft witness hand-over hook

    def become_prospective(self, now_ms: int, reason: str) -> None:
        # --- kraft witness hook (kraft/raft/witness_policy.py): every election
        # timeout that would start a candidacy comes here. A witness lets it
        # pass and waits another timeout; it still votes and fetches.
        for_handover = False
        if not may_campaign(self.campaign_policy, self.local_key, self.voters.voter_ids):
            # ... unless it may lead a hand-over epoch (kraft/raft/handover.py).
            if not self._may_take_handover(now_ms):
                self.quorum.restart_election_timer(now_ms)
                return
            for_handover = True
            reason = f"{reason}; hand-over candidacy"
        previous = self.quorum.role
        self.quorum.transition_to_prospective(now_ms, handover=for_handover)
        self._note_role_change(previous, reason)
        self._after_transition(now_ms, previous)
        self.maybe_transition_forward(now_ms)

    def _may_take_handover(self, now_ms: int) -> bool:
        """The hand-over rule (:func:`kraft.raft.handover.decide`) for a
        witness whose election timeout passed; its verdict is an INFO line
        once per change."""
        leaders = handover_leaders(self.campaign_policy, self.local_key, self.voters.voter_ids)
        if leaders is None or self.local_key is None:
            return False
        voter_ids = self.voters.voter_ids
        allowed, notice = self._handover.consider(self.local_key.id, self.log_end, voter_ids, leaders, now_ms)
        if notice is not None:
            self.pending.notices.append(f"kraft.witness: {notice}")
        return allowed

    def become_candidate(self, now_ms: int, reason: str) -> None:
        previous = self.quorum.role
        self.quorum.transition_to_candidate(now_ms)
        self._note_role_change(previous, reason)
        self._after_transition(now_ms, previous)
        self.maybe_transition_forward(now_ms)

    def become_leader(self, now_ms: int, reason: str) -> None:
        if self.pending.log:
            raise LocalRaftError("cannot become leader with log writes pending")
        epoch_start = self._log.end_offset
        previous = self.quorum.role
        leaders = handover_leaders(self.campaign_policy, self.local_key, self.voters.voter_ids)
        for_handover = isinstance(previous, Candidate) and previous.handover and leaders is not None
        leader = self.quorum.transition_to_leader(epoch_start, now_ms)
        if for_handover:
            assert leaders is not None
            leader.state.handover = HandoverLeadership(now_ms, leaders)
            self._handover.began()
            reason = (f"{reason}; hand-over epoch: a kraft witness leads only until one of "
                      f"{voter_ids_text(leaders)} has fetched its log (up to offset {epoch_start} and this "
                      f"epoch's LeaderChange), then resigns in its favour")
        self._note_role_change(previous, reason)
        self._after_transition(now_ms, previous)
        # The high watermark only moves once a record of this epoch is
        # committed; write one right away (KIP-595's LeaderChangeMessage).
        controls: list[LeaderChangeMessage | KRaftVersionControl | VotersControl] = [
            LeaderChangeMessage(leader.leader_id, self.voters.voter_ids, tuple(sorted(leader.granting_voters)))
        ]
        controls += start_of_epoch_control_records(self, self.own_membership)
        leader.state.accumulator.append_control(now_ms, *controls)
        leader.progress.update_local_end_offset(epoch_start)
        if self.kraft_version == 0 and self.local_key is not None:
            # Learned from UpdateRaftVoter, for a later kraft.version upgrade.
            local = self.own_membership.local_voter_node(self.local_key)
            leader.state.upgrade_voters = self.voters.update_voter_ignoring_directory_id(local) or self.voters

    def become_resigned(self, now_ms: int, successors: tuple[ReplicaKey, ...], reason: str) -> None:
        previous = self.quorum.role
        self.quorum.transition_to_resigned(successors, now_ms)
        self._note_role_change(previous, reason)
        self._after_transition(now_ms, previous)

    def maybe_transition_forward(self, now_ms: int) -> None:
        """Prospective -> Candidate, or Candidate -> Leader, once a majority granted."""
        role = self.quorum.role
        if isinstance(role, Prospective) and role.votes.is_vote_granted() \
                and (may_campaign(self.campaign_policy, self.local_key, self.voters.voter_ids)
                     or (role.handover and self._may_take_handover(now_ms))):
            self.become_candidate(now_ms, f"won pre-vote: {election.tally(role.votes)}")
        elif isinstance(role, Candidate) and role.votes.is_vote_granted():
            self.become_leader(now_ms, f"won election: {election.tally(role.votes)}")

    def prospective_lost(self, now_ms: int, why: str) -> None:
        """Pre-vote lost or timed out: back to following the last known leader,
        or Unattached in the same epoch."""
        role = self.quorum.role
        assert isinstance(role, Prospective)
        reason = f"{why}: {election.tally(role.votes)}"
        if role.leader_id is not None and role.leader_endpoints:
            self.become_follower(now_ms, role.epoch, role.leader_id, role.leader_endpoints, reason)
        else:
            self.become_unattached(now_ms, role.epoch, role.leader_id, reason)

    # --- the epoch gate (kraft.raft.epoch_gate decides, the core carries out) --

    @property
    def shutting_down(self) -> bool:
        """A graceful shutdown began (a leader serves no more fetches)."""
        return self.shutdown is not None

    def _carry_out(self, now_ms: int, source: int, verdict: Verdict) -> None:
        """Record the gate's violation and make the move it names."""
        if verdict.violation is not None:
            self.violation(source, verdict.violation)
        move = verdict.move
        if move is not None:
            if move.follows:
                assert move.leader_id is not None
                self.become_follower(now_ms, move.epoch, move.leader_id, move.endpoints, move.reason)
            else:
                self.become_unattached(now_ms, move.epoch, move.leader_id, move.reason)

    # --- requests ---------------------------------------------------------------

    def _handle_request(self, now_ms: int, env: InboundRequest) -> None:
        msg = env.message
        rpc = BY_REQUEST[type(msg)]
        handle = rpc.handle_request
        if handle is None:
            raise TypeError(f"{type(msg).__name__} is answered by the shell, not the raft core")
        # The voter changes check their leader epoch in their handler, as
        # Kafka's AddVoterHandler (they carry no epoch of their own).
        response = None
        if isinstance(msg, QuorumRequest):
            verdict = epoch_gate.check_request(self, env.source, msg)
            if verdict is not PASS:
                self._carry_out(now_ms, env.source, verdict)
                if verdict.bare:
                    assert verdict.error is not None
                    response = rpc.error_response(verdict.error, verdict.partition_level)
                elif verdict.error is not None:
                    response = rpc.refusal(self, verdict.error)
        if response is None:
            if isinstance(msg, VoteRequest) and self.campaign_policy is not None:
                # What a witness's hand-over rule knows of the others' logs.
                self._handover.note_vote_request(
                    now_ms, msg.candidate_key.id, OffsetAndEpoch(msg.last_offset, msg.last_offset_epoch))
            response = handle(self, now_ms, env)
        if response is not None:
            self.respond(env, response)

    def upgrade_kraft_version(self, now_ms: int, kraft_version: int, *, validate_only: bool = False) -> bool:
        """Finalize ``kraft_version`` as leader (Kafka's ``upgradeKRaftVersion``);
        see :func:`kraft.raft.families.membership.upgrade_kraft_version`."""
        self._check_initialized()
        return membership.upgrade_kraft_version(self, now_ms, kraft_version, validate_only=validate_only)

    @property
    def pending_kraft_version_upgrade(self) -> OffsetAndEpoch | None:
        """Where this leader appended its kraft.version upgrade (offset of the
        last control record and the leader epoch; None if it appended none):
        an UpdateFeatures request is answered once that offset is committed,
        as Kafka's controller answers once the upgrade's records are."""
        pending = None if (leader := self._leader()) is None else leader.state.pending_upgrade
        return None if pending is None else pending[1]

    @property
    def upgrade_voters(self) -> VoterSet | None:
        """kraft.version 0 leader: the static voters as their UpdateRaftVoter
        requests described them (directory ids, supported versions)."""
        return None if (leader := self._leader()) is None else leader.state.upgrade_voters

    def send_request_now(self, now_ms: int, destination: int, request: RaftRequest) -> int | None:
        """Send ``request`` if the connection is free; its correlation id, or
        ``None`` if it could not go now."""
        if not self.requests.is_ready(destination, now_ms):
            return None
        correlation_id = self.requests.next_correlation_id()
        self.requests.on_request_sent(destination, correlation_id, now_ms, type(request).__name__)
        self.pending.send.append(OutboundRequest(destination, correlation_id, request))
        return correlation_id

    def gate_response(
        self, now_ms: int, source: int, error: Errors, leader_id: int | None, epoch: int, endpoints: Endpoints
    ) -> bool | None:
        """The epoch gate for answers (:func:`kraft.raft.epoch_gate.check_response`),
        carried out: its outcome, or None to pass the answer to its handler."""
        verdict = epoch_gate.check_response(self, source, error, leader_id, epoch, endpoints)
        if verdict is not PASS:
            self._carry_out(now_ms, source, verdict)
        return verdict.outcome
