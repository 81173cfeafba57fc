"""The timers half of the raft core (etcd's ``Tick``): what each role does
when the driver polls -- elections and pre-votes that time out, fetches and
their resends, the leader's linger, BeginQuorumEpoch resends and
check-quorum, a resigned leader's EndQuorumEpoch, the graceful shutdown.

Kafka's ``KafkaRaftClient.pollLeader``/``pollCandidate``/``pollProspective``/
``pollFollower``/``pollUnattached``/``pollResigned``. A step never polls:
:meth:`kraft.raft.core.RaftCore.poll` runs :func:`run_poll` when the driver
asks (after a step, or at ``Ready.next_deadline_ms``). These functions see
the core through :class:`PollContext`; a role change goes through the core's
transitions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Protocol

from kraft.raft import handover
from kraft.raft.events import OutboundRequest, RaftRequest
from kraft.raft.families import election, membership
from kraft.raft.own_membership import OwnMembership
from kraft.raft.rpcs import (
    FetchRequest, begin_quorum_epoch_rpc, end_quorum_epoch_rpc, fetch_rpc, fetch_snapshot_rpc, vote_rpc,
)
from kraft.raft.families.common import HandlerContext
from kraft.raft.leader_state import LeaderWrite
from kraft.raft.logops import AppendAsLeader
from kraft.raft.ready import Ready, ShutdownOutcome
from kraft.raft.request_manager import RequestManager
from kraft.raft.roles import Candidate, Follower, Leader, Prospective, Resigned, Unattached
from kraft.raft.voters import ReplicaKey, VoterSet
from kraft.raft.witness_policy import CampaignPolicy, preferred_successors, resign_reason
from kraft.records.view import KRaftControlState

__all__ = ["PollContext", "Shutdown", "run_poll"]

#: A poll loop iteration that keeps asking to run again immediately is cut
#: after this many rounds (each round changes the role, so this is generous).
_MAX_POLL_ROUNDS = 16


@dataclass(slots=True)
class Shutdown:
    """A graceful shutdown in progress: its deadline, and once known its outcome."""

    deadline_ms: int
    outcome: ShutdownOutcome | None = None


class PollContext(HandlerContext, Protocol):
    """What polling needs of the core beyond a handler's view: the Ready
    being filled, the request manager, the shutdown, the witness policy and
    the transitions it may ask for."""

    poll_timeout: int | None

    @property
    def pending(self) -> Ready: ...
    @property
    def requests(self) -> RequestManager: ...
    @property
    def shutdown(self) -> Shutdown | None: ...
    @property
    def control_state(self) -> KRaftControlState | None: ...
    @property
    def campaign_policy(self) -> CampaignPolicy | None: ...
    @property
    def own_membership(self) -> OwnMembership: ...
    def bootstrap_nodes(self) -> tuple[int, ...]: ...
    def become_prospective(self, now_ms: int, reason: str) -> None: ...
    def become_unattached(self, now_ms: int, epoch: int, leader_id: int | None = None, reason: str = "") -> None: ...
    def become_resigned(self, now_ms: int, successors: tuple[ReplicaKey, ...], reason: str) -> None: ...


def _min_opt(*values: int | None) -> int | None:
    present = [v for v in values if v is not None]
    return min(present) if present else None



def run_poll(core: PollContext, now_ms: int) -> None:
    """One poll: the current role's timers, then again while a transition asks
    for it; records when the next one is due (``core.poll_timeout``)."""
    previous = core.control_state.previous_voters if core.control_state is not None else None
    quorum = core.quorum
    if (previous is not None and core.voters_offset is not None) or quorum.removal_pending \
            or quorum.refused_behind_candidate:
        # Otherwise there is nothing for it to change.
        quorum.update_removal_pending(
            None if previous is None else VoterSet.from_entries(previous.voters), core.voters_offset, now_ms)
    timeout: int | None = 0
    for _ in range(_MAX_POLL_ROUNDS):
        if maybe_complete_shutdown(core, now_ms):
            timeout = None
            break
        timeout = poll_current_state(core, now_ms)
        if timeout is None or timeout > 0 or core.pending.log:
            break
    core.poll_timeout = None if timeout is None else max(0, timeout)

def maybe_complete_shutdown(core: PollContext, now_ms: int) -> bool:
    shutdown = core.shutdown
    if shutdown is None:
        return False
    if shutdown.outcome is None:
        if now_ms >= shutdown.deadline_ms:
            shutdown.outcome = ShutdownOutcome(completed=False)
        elif core.quorum.is_observer or core.quorum.is_only_voter or core.quorum.has_remote_leader \
                or not isinstance(core.quorum.role, (Leader, Resigned)):
            # Only a leader has something to hand over (Resigned: its
            # EndQuorumEpoch is out); any other voter exits at once.
            shutdown.outcome = ShutdownOutcome(completed=True)
        if shutdown.outcome is not None:
            core.pending.shutdown = shutdown.outcome
    return shutdown.outcome is not None

def poll_current_state(core: PollContext, now_ms: int) -> int | None:
    match core.quorum.role:
        case Leader():
            return poll_leader(core, now_ms)
        case Candidate():
            return poll_candidate(core, now_ms)
        case Prospective():
            return poll_prospective(core, now_ms)
        case Follower():
            return poll_follower(core, now_ms)
        case Unattached():
            return poll_unattached(core, now_ms)
        case Resigned():
            return poll_resigned(core, now_ms)
    raise AssertionError(f"unknown role {core.quorum.role!r}")

def shutdown_remaining(core: PollContext, now_ms: int) -> int | None:
    return None if core.shutdown is None else max(0, core.shutdown.deadline_ms - now_ms)

def maybe_send_request(core: PollContext, now_ms: int, destination: int, build: Callable[[], RaftRequest]) -> int:
    """Send if the connection to ``destination`` is free; returns how long
    until it may be tried again."""
    requests = core.requests
    correlation_id = requests.reserve(destination, now_ms)
    if correlation_id is None:
        return requests.time_until_ready(destination, now_ms)
    request = build()
    core.pending.send.append(OutboundRequest(destination, correlation_id, request))
    return requests.sent(destination, correlation_id, now_ms, type(request).__name__)

def poll_leader(core: PollContext, now_ms: int) -> int | None:
    leader = core.quorum.role
    assert isinstance(leader, Leader)
    progress = leader.progress
    reason = None
    if core.shutdown is not None:
        reason = "graceful shutdown"
    elif leader.state.resign_requested:
        reason = "asked to resign"
    elif progress.check_quorum_expired(now_ms):
        reason = (f"check-quorum: no fetch from a majority of voters in "
                  f"{core.config.check_quorum_timeout_ms} ms")
    elif membership.removed_leader_must_resign(core, leader):
        reason = "its removal from the voter set committed"
    successors: tuple[ReplicaKey, ...] | None = None
    if reason is None and leader.state.handover is not None:
        # --- kraft witness hand-over hook (kraft/raft/handover.py)
        successors, reason = handover.completed(leader, now_ms)
    elif reason is None:  # --- kraft witness hook (kraft/raft/witness_policy.py)
        reason = resign_reason(core.campaign_policy, leader.local_key.id, core.voters.voter_ids)
    if reason is not None:
        core.become_resigned(now_ms, successors or preferred_successors(
            core.campaign_policy, progress.non_leader_voters_by_descending_fetch_offset()), reason)
        return 0
    state = leader.state
    parked = state.next_parked_deadline() if state.parked else None
    if parked is not None and parked <= now_ms:
        fetch_rpc.complete_expired(core, now_ms, leader)
        parked = state.next_parked_deadline()
    voter_change_timeout = (
        None if state.voter_change is None else membership.expire_voter_change(core, now_ms, state))
    flush_timeout = maybe_append_batches(core, now_ms, leader)
    begin_timeout = maybe_send_begin_quorum_epoch(core, now_ms, leader)
    check_quorum = progress.check_quorum_deadline()
    return _min_opt(
        flush_timeout,
        begin_timeout,
        None if check_quorum is None else check_quorum - now_ms,
        None if parked is None else parked - now_ms,
        voter_change_timeout,
    )

def maybe_append_batches(core: PollContext, now_ms: int, leader: Leader) -> int | None:
    state = leader.state
    accumulator = state.accumulator
    if state.write is not None:
        # The previous batches are still being served and flushed; what
        # accumulates meanwhile goes out in one batch after that.
        return None
    until = accumulator.time_until_drain(now_ms)
    if until != 0:
        return until
    batches = accumulator.drain(now_ms)
    for batch in batches:
        core.pending.log.append(AppendAsLeader(batch))
    if batches:
        state.write = LeaderWrite.WRITTEN
    return accumulator.time_until_drain(now_ms)

def maybe_send_begin_quorum_epoch(core: PollContext, now_ms: int, leader: Leader) -> int:
    progress = leader.progress
    if now_ms >= progress.begin_quorum_epoch_deadline_ms:
        for key in progress.voters_needing_begin_quorum_epoch(now_ms):
            maybe_send_request(core, 
                now_ms, key.id, partial(begin_quorum_epoch_rpc.request, core, leader, key)
            )
        progress.reset_begin_quorum_epoch_timer(now_ms)
    return progress.begin_quorum_epoch_deadline_ms - now_ms

def maybe_send_vote_requests(core: PollContext, now_ms: int) -> int | None:
    role = core.quorum.role
    assert isinstance(role, (Prospective, Candidate)) and core.local_key is not None
    if role.votes.is_vote_rejected():
        return None
    timeout: int | None = None
    for voter in role.votes.unrecorded_voters():
        t = maybe_send_request(core, now_ms, voter, partial(vote_rpc.request, core, role, voter))
        timeout = _min_opt(timeout, t)
    return timeout

def poll_candidate(core: PollContext, now_ms: int) -> int | None:
    role = core.quorum.role
    assert isinstance(role, Candidate)
    if core.shutdown is not None:
        # Keep campaigning until elected (then resign), a leader appears,
        # or the shutdown times out.
        return _min_opt(shutdown_remaining(core, now_ms), maybe_send_vote_requests(core, now_ms))
    if now_ms >= role.election_deadline_ms:
        core.become_prospective(now_ms, f"election in epoch {role.epoch} timed out: {election.tally(role.votes)}")
        return 0
    return _min_opt(maybe_send_vote_requests(core, now_ms), role.election_deadline_ms - now_ms)

def poll_prospective(core: PollContext, now_ms: int) -> int | None:
    role = core.quorum.role
    assert isinstance(role, Prospective)
    if core.shutdown is not None:
        return _min_opt(shutdown_remaining(core, now_ms), maybe_send_vote_requests(core, now_ms))
    if now_ms >= role.election_deadline_ms:
        core.prospective_lost(now_ms, "pre-vote timed out")
        return 0
    return _min_opt(maybe_send_vote_requests(core, now_ms), role.election_deadline_ms - now_ms)

def poll_follower(core: PollContext, now_ms: int) -> int | None:
    role = core.quorum.role
    assert isinstance(role, Follower)
    if core.shutdown is not None:
        return 0
    # Only a voter of the latest voter set in the log campaigns (Kafka's
    # QuorumState.isVoter check in pollFollowerAsVoter).
    if core.quorum.may_campaign:
        assert role.fetch_deadline_ms is not None
        if now_ms >= role.fetch_deadline_ms:
            core.become_prospective(
                now_ms, role.fetch_timeout_cause or f"fetch timeout after {core.config.fetch_timeout_ms} ms")
            return 0
        return _min_opt(
            maybe_send_fetch_to_best_node(core, now_ms, role), role.fetch_deadline_ms - now_ms
        )
    # Observers never start elections; they keep looking for the leader.
    return maybe_send_fetch_to_best_node(core, now_ms, role)

def maybe_send_fetch_to_best_node(core: PollContext, now_ms: int, role: Follower) -> int | None:
    if core.pending.log:
        # The next Fetch must carry the log end after these writes.
        return 0
    requests = core.requests
    leader = role.leader_id
    if requests.has_request_timed_out(leader, now_ms):
        # The leader did not answer: ask the other voters who leads now.
        requests.reset(leader)
        return maybe_send_fetch_to_any_bootstrap(core, now_ms)
    if requests.is_backing_off(leader, now_ms):
        return maybe_send_fetch_to_any_bootstrap(core, now_ms)
    if not requests.has_any_inflight(now_ms):
        join = core.own_membership.request(core, now_ms, role)
        if join is not None:
            # KIP-853: between two fetches (one request in flight at a time);
            # the next one no sooner than fetch.timeout.ms from now.
            return _min_opt(maybe_send_request(core, now_ms, leader, lambda: join), core.config.fetch_timeout_ms)
        # One fetch in flight at a time: two could append the same offsets.
        download = role.fetching_snapshot
        build: Callable[[], RaftRequest]
        if download is not None:
            build = partial(fetch_snapshot_rpc.request, core, role, download)
        else:
            build = partial(fetch_rpc.request, core)
        return maybe_send_request(core, now_ms, leader, build)
    return requests.backoff_before_available(now_ms, core.bootstrap_nodes())

def maybe_send_fetch_to_any_bootstrap(core: PollContext, now_ms: int) -> int | None:
    if core.pending.log:
        return 0
    requests = core.requests
    candidates = core.bootstrap_nodes()
    picked = requests.send_to_bootstrap(now_ms, candidates, FetchRequest.__name__)
    if picked is None:
        return requests.backoff_before_available(now_ms, candidates)
    node, correlation_id, timeout = picked
    core.pending.send.append(OutboundRequest(node, correlation_id, fetch_rpc.request(core)))
    return timeout

def poll_unattached(core: PollContext, now_ms: int) -> int | None:
    role = core.quorum.role
    assert isinstance(role, Unattached)
    deadline = role.election_deadline_ms
    if core.quorum.may_campaign:
        if core.shutdown is not None:
            return shutdown_remaining(core, now_ms)
        if deadline is not None and now_ms >= deadline:
            core.become_prospective(now_ms, f"election timeout with no leader in epoch {role.epoch}")
            return 0
    else:
        deadline = None  # an observer never campaigns
    fetch_timeout = maybe_send_fetch_to_any_bootstrap(core, now_ms)
    return _min_opt(fetch_timeout, None if deadline is None else deadline - now_ms)

def poll_resigned(core: PollContext, now_ms: int) -> int | None:
    role = core.quorum.role
    assert isinstance(role, Resigned)
    timeout: int | None = None
    request = end_quorum_epoch_rpc.request(core, role)
    for voter in sorted(role.unacked_voters):
        timeout = _min_opt(timeout, maybe_send_request(core, now_ms, voter, lambda: request))
    if core.shutdown is not None:
        # Stay resigned until another leader is known or the shutdown expires.
        return _min_opt(timeout, shutdown_remaining(core, now_ms))
    if now_ms >= role.election_deadline_ms:
        # A bumped epoch: never fetch from ourselves as the old leader.
        core.become_unattached(now_ms, role.epoch + 1, reason="no new leader after resigning")
        return 0
    return _min_opt(timeout, role.election_deadline_ms - now_ms)
