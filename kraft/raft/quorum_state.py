"""QuorumState: the only place a replica's role changes.

Legal transitions and their triggers (Kafka 4.x ``QuorumState``, with
KIP-996's Prospective role). "Same epoch" moves keep the vote already cast in
the epoch, so a replica can never vote twice in one epoch.

Voters::

    Unattached  -> Unattached   a higher epoch is learned
                -> Unattached   a binding vote is granted (same epoch, voted_key set)
                -> Prospective  the election timeout expires
                -> Follower     a leader of this or a higher epoch is discovered
    Prospective -> Unattached   a higher epoch is learned; or the pre-vote is lost
                                or times out and no leader is known (same epoch)
                -> Prospective  a binding vote is granted (same epoch, voted_key set)
                -> Candidate    a majority grants the pre-vote (epoch + 1)
                -> Follower     a leader is discovered; or the pre-vote is lost or
                                times out and the last leader is known (same epoch)
    Candidate   -> Unattached   a higher epoch is learned
                -> Prospective  the election timeout expires
                -> Leader       a majority grants the vote
                -> Follower     a leader of this or a higher epoch is discovered
    Leader      -> Unattached   a higher epoch is learned
                -> Resigned     graceful shutdown, a resign request, or
                                check-quorum (no fetches from a majority in
                                1.5 x fetch.timeout.ms)
                -> Follower     a leader of a higher epoch is discovered
    Follower    -> Unattached   a higher epoch is learned
                -> Prospective  the fetch timeout expires
                -> Follower     a leader of a higher epoch is discovered (or, same
                                epoch, more of the leader's endpoints)
    Resigned    -> Unattached   a higher epoch is learned, or the election timeout
                                expires (epoch + 1: a resigned leader must never
                                fetch from itself)
                -> Follower     a leader of a higher epoch is discovered
                -> Prospective  start-up of a sole voter (it re-elects itself)

Observers (no id, or an id outside the voter set) only move between
Unattached and Follower, on the same triggers.

The voter set is the latest one in the log (KIP-853: a ``VotersRecord``,
committed or not; the static ``controller.quorum.voters`` without one), so
a replica becomes a voter or an observer as records arrive or are truncated
(:meth:`QuorumState.update_voters`), as Kafka's ``QuorumState.isVoter``
reads ``lastVoterSet()``. Two rules of dynamic quorums: a replica with an id
grants votes whether or not its own log lists it yet (a voter just added may
lack the record); and a replica removed by a VotersRecord -- committed or
not -- is an observer at once and does not campaign. One exception keeps a
quorum live where Kafka 4.x would stay leaderless forever: while its own
removal is uncommitted, a removed replica that refused a (pre-)vote because
the candidate's log was behind its own -- so only it can still win --
campaigns (``removal_pending``), counting the votes of its latest voter set
only, not its own (a two-voter quorum whose leader removed itself and
restarted before the record reached the other voter).

Every transition checks its preconditions first and raises
:class:`~kraft.raft.errors.IllegalTransitionError` without changing anything when
they do not hold. Durable transitions (all but ``transition_to_prospective``
and ``transition_to_resigned``, which do not change the stored election state)
queue the new :class:`~kraft.raft.roles.ElectionState` for persistence *before*
swapping the role; the core hands it to the shell as ``Ready.persist``, which
the shell fsyncs and atomically renames into ``quorum-state`` before it
executes or sends anything else from that ``Ready``. Nothing decided under the
new role can therefore leave the node before the role is durable (Kafka's
``durableTransitionTo``).

In-role updates (a vote tallied, a fetch timer reset, a snapshot download
advanced) also go through this class, which checks they never alter the
role's election state.
"""

from __future__ import annotations

import random
from dataclasses import replace

from kraft.raft.errors import IllegalTransitionError
from kraft.raft.events import NO_LEADER, LeaderFields
from kraft.raft.accumulator import BatchAccumulator
from kraft.raft.leader_progress import LeaderProgress
from kraft.raft.leader_state import LeaderState
from kraft.raft.quorum_config import QuorumConfig
from kraft.records.view import OffsetAndEpoch
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
    vote_decision,
)
from kraft.raft.voters import Endpoints, ReplicaKey, VoterSet


class QuorumState:
    """The current role of the local replica, and the rules for changing it."""

    def __init__(
        self,
        *,
        local_key: ReplicaKey | None,
        voters: VoterSet,
        config: QuorumConfig,
        rng: random.Random,
        local_endpoints: Endpoints = (),
    ) -> None:
        self.local_key = local_key
        self._voters = voters
        self._is_voter = local_key is not None and voters.is_voter(local_key)
        #: Our own listeners: what a Leader or Resigned role advertises (the
        #: leader may not be in the voter set it works from, KIP-853).
        self.local_endpoints = local_endpoints
        #: Removed by an uncommitted record and the only replica whose log can
        #: win (see the module docstring): may campaign.
        self.removal_pending = False
        #: A (pre-)vote was refused because the candidate's log is behind ours.
        self.refused_behind_candidate = False
        self._config = config
        self._rng = rng
        self._role: Role | None = None
        #: The stored election state and the one queued for the shell to store.
        self._durable: ElectionState | None = None
        self._pending_persist: ElectionState | None = None

    # --- queries -------------------------------------------------------------

    @property
    def role(self) -> Role:
        if self._role is None:
            raise IllegalTransitionError("QuorumState is not initialized")
        return self._role

    @property
    def initialized(self) -> bool:
        return self._role is not None

    @property
    def local_id(self) -> int | None:
        return None if self.local_key is None else self.local_key.id

    @property
    def epoch(self) -> int:
        return self.role.epoch

    @property
    def election(self) -> ElectionState:
        return self.role.election

    @property
    def leader_id(self) -> int | None:
        # Every role has it (its election state's leader id), without building the ElectionState.
        return self.role.leader_id

    @property
    def voted_key(self) -> ReplicaKey | None:
        return self.role.election.voted_key

    @property
    def has_leader(self) -> bool:
        return self.leader_id is not None

    @property
    def has_remote_leader(self) -> bool:
        return self.has_leader and self.leader_id != self.local_id

    @property
    def high_watermark(self) -> int | None:
        return self.role.high_watermark

    @property
    def leader_and_epoch(self) -> LeaderAndEpoch:
        return LeaderAndEpoch(self.leader_id, self.epoch)

    @property
    def leader_endpoints(self) -> Endpoints:
        match self.role:
            case Follower(leader_endpoints=e) | Prospective(leader_endpoints=e):
                return e
            case Leader() | Resigned():
                return self.local_endpoints or self.voters.endpoints(self.role.leader_id)
            case _:
                return ()

    @property
    def leader_fields(self) -> LeaderFields:
        """The current-leader fields of an answer: the leader (or
        ``NO_LEADER``), the epoch and the leader's endpoints."""
        leader = self.leader_id
        return {
            "leader_id": NO_LEADER if leader is None else leader,
            "leader_epoch": self.epoch,
            "leader_endpoints": self.leader_endpoints if leader is not None else (),
        }

    @property
    def voters(self) -> VoterSet:
        return self._voters

    @voters.setter
    def voters(self, voters: VoterSet) -> None:
        # Membership is a fact of the voter set: decided once per set, read
        # by every transition and poll.
        self._voters = voters
        self._is_voter = self.local_key is not None and voters.is_voter(self.local_key)

    @property
    def is_voter(self) -> bool:
        return self._is_voter

    @property
    def is_observer(self) -> bool:
        return not self.is_voter

    @property
    def may_campaign(self) -> bool:
        """A voter of the latest voter set in the log (Kafka 4.x: a replica
        removed by an uncommitted VotersRecord is an observer and does not
        campaign) -- or ``removal_pending``, the liveness exception."""
        return self.local_key is not None and (self.is_voter or self.removal_pending)

    def update_removal_pending(self, previous: VoterSet | None, voters_offset: int | None, now_ms: int) -> None:
        """The liveness exception to Kafka's rule (see the module docstring):
        removed by the uncommitted record at ``voters_offset`` from the
        ``previous`` set, and a candidate of that set could not win against
        our log."""
        key = self.local_key
        hwm = self.high_watermark
        eligible = (
            key is not None
            and voters_offset is not None
            and previous is not None
            and not self.is_voter
            and previous.is_voter(key)
            and (hwm is None or voters_offset >= hwm)
        )
        if not eligible:
            self.refused_behind_candidate = False
        pending = eligible and self.refused_behind_candidate
        if pending == self.removal_pending:
            return
        self.removal_pending = pending
        current = self._role
        if pending and isinstance(current, Unattached) and current.election_deadline_ms is None:
            self._update(replace(current, election_deadline_ms=now_ms + self.random_election_timeout_ms()))

    @property
    def is_only_voter(self) -> bool:
        return self.local_key is not None and self.voters.is_only_voter(self.local_key)

    def take_pending_persist(self) -> ElectionState | None:
        """The election state queued by durable transitions since the last call
        (only the latest matters: nothing is sent in between)."""
        pending, self._pending_persist = self._pending_persist, None
        return pending

    def random_election_timeout_ms(self) -> int:
        """``t + rand(t)`` with ``t = election.timeout.ms`` (Kafka's
        ``randomElectionTimeoutMs``)."""
        t = self._config.election_timeout_ms
        return 0 if t == 0 else t + self._rng.randrange(t)

    def random_fetch_timeout_ms(self) -> int:
        """The fetch timer after a successful fetch: ``fetch.timeout.ms`` minus
        up to a fifth of it, drawn anew each time. Kafka's ``FollowerState``
        restarts a fixed ``fetchTimeoutMs`` timer; under load both followers
        of a dead leader fetched within a millisecond of each other, time out
        together, grant each other's pre-vote and split the vote (then wait
        1-2 s more), unless their timers differ by more than a pre-vote round
        trip -- sub-millisecond in Kafka's JVM, several ms in this Python
        node. The timer never runs longer than ``fetch.timeout.ms``, and a
        follower that times out early while the other still fetches loses the
        pre-vote (KIP-996) and goes back to following."""
        t = self._config.fetch_timeout_ms
        return t - self._rng.randrange(t // 5 + 1) if t >= 5 else t

    # --- transitions ---------------------------------------------------------

    def initialize(self, persisted: ElectionState | None, log_end: OffsetAndEpoch, now_ms: int) -> None:
        """Pick the start-up role from the stored election state and the log
        (Kafka's ``QuorumState.initialize``)."""
        if self._role is not None:
            raise IllegalTransitionError("QuorumState is already initialized")
        election = persisted if persisted is not None else ElectionState(0)
        if election.voted_key is not None and self.local_key is None:
            raise IllegalTransitionError(
                f"quorum-state {election} records a vote but this replica has no node id"
            )
        deadline = self._election_deadline(now_ms)
        role: Role
        if election.epoch < log_end.epoch:
            # The state file is older than the log (e.g. lost): start at the
            # log's epoch with no leader and no vote.
            role = Unattached(log_end.epoch, election_deadline_ms=deadline)
        elif self.local_id is not None and election.leader_id == self.local_id:
            # A restarted leader starts Resigned in its epoch: it can neither
            # vote for someone else in that epoch nor reuse an (offset, epoch)
            # that unflushed data lost in the crash once had. (Also when the
            # log no longer lists it as a voter: it may have been removed.)
            role = Resigned(
                election.epoch,
                self.local_id,
                now_ms + self.random_election_timeout_ms(),
                frozenset(v for v in self.voters.voter_ids if v != self.local_id),
            )
        elif (
            self.local_key is not None
            and self.is_voter
            and election.voted_key is not None
            and election.voted_key.matches(self.local_key)
        ):
            role = Candidate(
                election.epoch,
                self.local_key,
                EpochElection.start(self.voters.voter_ids, self.local_key.id),
                retries=1,
                election_deadline_ms=now_ms + self.random_election_timeout_ms(),
            )
        elif election.leader_id is not None and election.leader_id != self.local_id:
            endpoints = self.voters.endpoints(election.leader_id)
            if endpoints:
                role = Follower(
                    election.epoch,
                    election.leader_id,
                    endpoints,
                    voted_key=election.voted_key,
                    fetch_deadline_ms=now_ms + self._config.fetch_timeout_ms,
                )
            else:
                # Cannot fetch from a leader we cannot reach; discover it from
                # a BeginQuorumEpoch or a bootstrap Fetch instead.
                role = Unattached(election.epoch, election.leader_id, election.voted_key, deadline)
        else:
            role = Unattached(election.epoch, None, election.voted_key, deadline)
        self._durable = persisted
        self._durable_transition(role)

    def transition_to_unattached(self, epoch: int, now_ms: int, leader_id: int | None = None) -> None:
        """A higher epoch was learned, or (same epoch) a Prospective lost."""
        current = self.role
        if epoch < current.epoch or (epoch == current.epoch and not isinstance(current, Prospective)):
            raise IllegalTransitionError(
                f"cannot become Unattached in epoch {epoch} from {current.name} in epoch {current.epoch}"
            )
        deadline: int | None
        if not self.may_campaign:
            deadline = None
        elif isinstance(current, (Candidate, Resigned)) or (
            isinstance(current, Unattached) and current.election_deadline_ms is not None
        ):
            # Keep the running timer: learning an epoch is no reason to wait longer.
            deadline = current.election_deadline_ms
        elif isinstance(current, Prospective) and not current.votes.is_vote_rejected():
            deadline = current.election_deadline_ms
        else:
            deadline = now_ms + self.random_election_timeout_ms()
        voted = current.election.voted_key if epoch == current.epoch else None
        self._durable_transition(Unattached(epoch, leader_id, voted, deadline, current.high_watermark))

    def grant_vote(
        self,
        candidate: ReplicaKey,
        candidate_end: OffsetAndEpoch,
        local_end: OffsetAndEpoch,
        pre_vote: bool,
        now_ms: int,
    ) -> bool:
        """Decide a (pre-)vote request in one pass and record a binding vote
        (Kafka's ``handleVoteRequest`` with each state's ``canGrantVote``):
        grant only an up-to-date log, once per epoch. ``local_end`` is our
        log end. The vote binds only once durable: the Ready carrying the
        answer persists the new election state first."""
        role = self.role
        granted, up_to_date = vote_decision(role, candidate, candidate_end, local_end, pre_vote)
        # KIP-853: a replica votes whether or not its own log lists it as a
        # voter yet (a voter just added may not have the record), but only a
        # replica with an id can record a vote.
        granted = granted and self.local_key is not None
        if not up_to_date and not self.is_voter:
            # We may be the removed replica whose log alone can win (see the
            # module docstring).
            self.refused_behind_candidate = True
        if granted and not pre_vote and isinstance(role, (Unattached, Prospective)) and role.voted_key is None:
            self._add_voted(role, candidate, role.epoch, now_ms)
        return granted

    def unattached_add_voted(self, epoch: int, candidate: ReplicaKey, now_ms: int) -> None:
        """Grant a binding vote as Unattached; the election timer restarts
        because the candidate is at least as likely to win as we are."""
        current = self.role
        if not isinstance(current, Unattached):
            self._check_can_vote_for(candidate, epoch)
            raise IllegalTransitionError(f"cannot vote for {candidate} from {current}")
        self._add_voted(current, candidate, epoch, now_ms)

    def prospective_add_voted(self, epoch: int, candidate: ReplicaKey, now_ms: int) -> None:
        """Grant a binding vote while canvassing a pre-vote."""
        current = self.role
        if not isinstance(current, Prospective):
            self._check_can_vote_for(candidate, epoch)
            raise IllegalTransitionError(f"cannot vote for {candidate} from {current}")
        self._add_voted(current, candidate, epoch, now_ms)

    def transition_to_follower(self, epoch: int, leader_id: int, endpoints: Endpoints, now_ms: int) -> None:
        """Follow ``leader_id``, the leader of ``epoch``."""
        current = self.role
        if not endpoints:
            raise IllegalTransitionError(f"cannot follow leader {leader_id} without its endpoints")
        if leader_id == self.local_id:
            raise IllegalTransitionError(f"cannot follow ourselves ({leader_id}) in epoch {epoch}")
        if epoch < current.epoch:
            raise IllegalTransitionError(
                f"cannot follow {leader_id} in epoch {epoch}: current epoch {current.epoch} is larger"
            )
        if epoch == current.epoch:
            known = current.election.leader_id
            if known is not None and known != leader_id:
                raise IllegalTransitionError(
                    f"epoch {epoch} already has leader {known}; refusing a second leader {leader_id}"
                )
            if isinstance(current, Leader) or (
                isinstance(current, Follower) and len(current.leader_endpoints) >= len(endpoints)
            ):
                raise IllegalTransitionError(
                    f"cannot follow {leader_id} in epoch {epoch} from {current.name}"
                )
        voted = current.election.voted_key if epoch == current.epoch else None
        self._durable_transition(
            Follower(
                epoch,
                leader_id,
                endpoints,
                voted_key=voted,
                fetch_deadline_ms=now_ms + self._config.fetch_timeout_ms,
                high_watermark=current.high_watermark,
            )
        )

    def transition_to_prospective(self, now_ms: int, *, handover: bool = False) -> None:
        """Start a pre-vote (KIP-996) in the current epoch. Memory only: the
        stored election state does not change. ``handover``: a witness's
        hand-over candidacy (:mod:`kraft.raft.handover`)."""
        current = self.role
        if not self.may_campaign or self.local_key is None:
            raise IllegalTransitionError("an observer cannot become Prospective")
        if isinstance(current, (Leader, Prospective)):
            raise IllegalTransitionError(f"cannot become Prospective from {current.name}")
        retries = current.retries + 1 if isinstance(current, Candidate) else 1
        leader_id = current.election.leader_id
        # Kafka's transitionToProspective keeps the endpoints the previous
        # state knew (a follower learned them from BeginQuorumEpoch or a
        # response; they may not be those of the voter set).
        endpoints = current.leader_endpoints if isinstance(current, Follower) else ()
        if leader_id is not None and not endpoints:
            endpoints = self.voters.endpoints(leader_id)
        self._memory_transition(
            Prospective(
                current.epoch,
                self.local_key.id,
                EpochElection.start(self.voters.voter_ids, self.local_key.id),
                leader_id=leader_id,
                leader_endpoints=endpoints,
                voted_key=current.election.voted_key,
                retries=retries,
                election_deadline_ms=now_ms + self.random_election_timeout_ms(),
                high_watermark=current.high_watermark,
                handover=handover,
            )
        )

    def transition_to_candidate(self, now_ms: int) -> None:
        """Bump the epoch by exactly one and vote for ourselves."""
        current = self.role
        if not self.may_campaign or self.local_key is None:
            raise IllegalTransitionError("an observer cannot become Candidate")
        if not isinstance(current, Prospective):
            raise IllegalTransitionError(f"only a Prospective becomes Candidate, not {current.name}")
        self._durable_transition(
            Candidate(
                current.epoch + 1,
                self.local_key,
                EpochElection.start(self.voters.voter_ids, self.local_key.id),
                retries=current.retries,
                election_deadline_ms=now_ms + self.random_election_timeout_ms(),
                high_watermark=current.high_watermark,
                handover=current.handover,
            )
        )

    def transition_to_leader(self, epoch_start_offset: int, now_ms: int) -> Leader:
        """Won the election. The new leader does not keep the old high
        watermark: it must see a majority past ``epoch_start_offset`` first,
        which keeps the exposed high watermark monotonic."""
        current = self.role
        if not self.may_campaign or self.local_key is None:
            raise IllegalTransitionError("an observer cannot become Leader")
        if not isinstance(current, Candidate):
            raise IllegalTransitionError(f"only a Candidate becomes Leader, not {current.name}")
        if not current.votes.is_vote_granted():
            raise IllegalTransitionError("cannot become Leader without a majority of votes")
        leader = Leader(
            current.epoch,
            self.local_key,
            epoch_start_offset,
            current.votes.granted,
            LeaderState(
                LeaderProgress(
                    self.local_key,
                    epoch_start_offset,
                    self.voters,
                    now_ms,
                    self._config.check_quorum_timeout_ms,
                    self._config.begin_quorum_epoch_timeout_ms,
                ),
                BatchAccumulator(
                    current.epoch,
                    epoch_start_offset,
                    self._config.append_linger_ms,
                    self._config.max_batch_size_bytes,
                ),
            ),
        )
        self._durable_transition(leader)
        return leader

    def transition_to_resigned(self, preferred_successors: tuple[ReplicaKey, ...], now_ms: int) -> None:
        """Step down, keeping the epoch. Memory only: a leader always restarts
        as Resigned anyway."""
        current = self.role
        if not isinstance(current, Leader):
            raise IllegalTransitionError(f"only a Leader resigns, not {current.name}")
        self._memory_transition(
            Resigned(
                current.epoch,
                current.local_key.id,
                now_ms + self.random_election_timeout_ms(),
                frozenset(v for v in self.voters.voter_ids if v != current.local_key.id),
                preferred_successors,
            )
        )

    # --- in-role updates -----------------------------------------------------

    def update_voters(self, voters: VoterSet, now_ms: int) -> None:
        """The log's voter set changed (KIP-853: a VotersRecord appended or
        truncated, a snapshot installed). Roles stay; what depends on
        membership follows: a replica that became a voter while Unattached
        starts its election timer; a vote being canvassed counts the new
        voters."""
        self.voters = voters
        current = self._role
        if current is None:
            return
        if isinstance(current, Unattached) and current.election_deadline_ms is None and self.is_voter:
            self._update(replace(current, election_deadline_ms=now_ms + self.random_election_timeout_ms()))
        elif isinstance(current, (Prospective, Candidate)):
            ids = voters.voter_ids
            votes = current.votes
            granted = frozenset(v for v in votes.granted if v in ids)
            rejected = frozenset(v for v in votes.rejected if v in ids)
            self._update(replace(current, votes=EpochElection(ids, granted, rejected)))

    def record_vote(self, voter_id: int, granted: bool) -> None:
        current = self.role
        if not isinstance(current, (Prospective, Candidate)):
            raise IllegalTransitionError(f"{current.name} is not collecting votes")
        self._update(replace(current, votes=current.votes.record(voter_id, granted)))

    def reset_fetch_timeout(self, now_ms: int) -> None:
        """A successful Fetch/FetchSnapshot response from the leader."""
        current = self._follower()
        self._update(
            replace(
                current,
                fetch_deadline_ms=now_ms + self.random_fetch_timeout_ms(),
                has_fetched_from_leader=True,
                fetch_timeout_cause=None,
            )
        )

    def override_fetch_timeout(self, now_ms: int, timeout_ms: int, cause: str) -> None:
        """EndQuorumEpoch: start the election sooner (strict exponential backoff)."""
        current = self._follower()
        self._update(replace(current, fetch_deadline_ms=now_ms + timeout_ms, fetch_timeout_cause=cause))

    def set_membership_state(self, *, retry_ms: int | None = None, updated_voter: bool | None = None) -> None:
        """The follower's own KIP-853 requests: when to try again, and whether
        this leader has our listeners."""
        current = self._follower()
        self._update(replace(
            current,
            membership_retry_ms=current.membership_retry_ms if retry_ms is None else retry_ms,
            updated_voter=current.updated_voter if updated_voter is None else updated_voter,
        ))

    def set_installing_snapshot(self, snapshot_id: OffsetAndEpoch | None) -> None:
        self._update(replace(self._follower(), installing_snapshot=snapshot_id))

    def set_fetching_snapshot(self, download: SnapshotDownload | None) -> None:
        self._update(replace(self._follower(), fetching_snapshot=download))

    def set_leader_high_watermark(self, leader_high_watermark: int) -> None:
        current = self._follower()
        if current.leader_high_watermark is None or leader_high_watermark > current.leader_high_watermark:
            self._update(replace(current, leader_high_watermark=leader_high_watermark))

    def update_follower_high_watermark(self, high_watermark: int) -> bool:
        """Raise the follower's high watermark; returns True if it moved. It
        never decreases."""
        current = self._follower()
        if current.high_watermark is not None and high_watermark <= current.high_watermark:
            return False
        self._update(replace(current, high_watermark=high_watermark))
        return True

    def acknowledge_resignation(self, voter_id: int) -> None:
        current = self.role
        if isinstance(current, Resigned):
            self._update(replace(current, unacked_voters=current.unacked_voters - {voter_id}))

    # --- kraft witness hook (kraft/raft/witness_policy.py) ---------------------------

    def restart_election_timer(self, now_ms: int) -> None:
        """A voter its campaign policy holds back (a witness) lets an election
        timeout pass without a candidacy: the timer starts again, nothing else
        changes (the vote cast in the epoch stays). A follower whose fetch
        timeout passed supports pre-votes again, as the Prospective it would
        have become does: otherwise a dead leader's follower that never
        campaigns would block every other candidate's pre-vote; its next
        successful fetch protects the leader again."""
        current = self.role
        if isinstance(current, Follower):
            self._update(replace(current, fetch_deadline_ms=now_ms + self._config.fetch_timeout_ms,
                                 has_fetched_from_leader=False))
        elif isinstance(current, (Unattached, Candidate, Resigned)):
            self._update(replace(current, election_deadline_ms=now_ms + self.random_election_timeout_ms()))

    # --- internals -----------------------------------------------------------

    def _election_deadline(self, now_ms: int) -> int | None:
        return None if not self.may_campaign else now_ms + self.random_election_timeout_ms()

    def _check_can_vote_for(self, candidate: ReplicaKey, epoch: int) -> None:
        # KIP-853: a replica whose log does not (yet) list it as a voter still
        # votes -- it may have been added and not have the record -- but it
        # needs an id to record the vote under.
        if self.local_key is None:
            raise IllegalTransitionError("a replica without an id grants no votes")
        if candidate.id == self.local_key.id:
            raise IllegalTransitionError("a replica does not grant a vote to itself")
        if epoch != self.role.epoch:
            raise IllegalTransitionError(f"cannot vote in epoch {epoch} from epoch {self.role.epoch}")

    def _add_voted(self, current: Unattached | Prospective, candidate: ReplicaKey, epoch: int, now_ms: int) -> None:
        self._check_can_vote_for(candidate, epoch)
        if current.voted_key is not None:
            raise IllegalTransitionError(f"cannot vote for {candidate} from {current}")
        self._durable_transition(
            replace(
                current,
                voted_key=candidate,
                election_deadline_ms=now_ms + self.random_election_timeout_ms(),
            )
        )

    def _follower(self) -> Follower:
        current = self.role
        if not isinstance(current, Follower):
            raise IllegalTransitionError(f"expected Follower, not {current.name}")
        return current

    def _durable_transition(self, new: Role) -> None:
        election = new.election
        if election != self._durable:
            # Queued before the swap: the shell persists it before anything
            # decided in the new role is executed or sent.
            self._pending_persist = election
            self._durable = election
        self._role = new

    def _memory_transition(self, new: Role) -> None:
        if self._role is not None and new.election != self._role.election:
            raise IllegalTransitionError(f"memory transition would change the election state: {new}")
        self._role = new

    def _update(self, new: Role) -> None:
        old = self.role
        if type(new) is not type(old) or new.election != old.election:
            raise IllegalTransitionError(f"in-role update changed the role: {old} -> {new}")
        self._role = new
