"""Hand-over leadership: a witness leads one epoch only to hand the log to a
voter that may lead.

A two-site quorum (two Kafka controllers and a kraft witness) loses its
leader while the surviving Kafka controller is behind (it paused, restarted,
its disk stalled): every record the dead leader committed is on the witness,
not on the survivor. Raft forbids the witness to vote for the shorter log,
and the witness rule forbids it to lead -- so no leader at all until the dead
controller returns. The way out keeps Raft's rules: the witness, whose log is
the longest a majority can see, campaigns by Kafka's rules (pre-vote, then
vote) and leads one epoch that does nothing but what Raft requires of a new
leader -- the LeaderChange control record (Kafka's
``LeaderState.appendStartOfEpochControlRecords``), committed -- while it serves
Fetch and FetchSnapshot. As soon as a voter that may lead has fetched up to
its log end it resigns (Kafka's ``ResignedState``) with EndQuorumEpoch naming
the caught-up voters, most caught-up first (Kafka's
``LeaderState.nonLeaderVotersByDescendingFetchOffset``; the first starts its
election at once, ``KafkaRaftClient.endEpochElectionBackoff``), and grants them
its vote: their logs now equal its own.

When a witness may take a hand-over epoch (:func:`decide`), checked where its
election timeout would start a candidacy:

* a non-witness voter was heard recently (a Vote or pre-vote request within
  :func:`reachable_window_ms`: a voter without a leader canvasses every
  election timeout) -- with nobody to hand the log to, never;
* every non-witness voter heard has a strictly shorter log than ours (Raft's
  comparison: last epoch, then end offset): one with an equal or longer log
  can win itself, with our vote;
* those voters and we are a majority (else the candidacy cannot win).

This module is pure (no I/O, no clock): :class:`HandoverWatch` holds what the
core learned and counts the hand-over epochs; :class:`HandoverLeadership`
lives on the leader's state (``LeaderState.handover``) for one epoch.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from kraft.raft.leader_state import HandoverLeadership
from kraft.raft.quorum_config import QuorumConfig
from kraft.raft.roles import Leader, log_up_to_date
from kraft.raft.voters import ReplicaKey, voter_ids_text
from kraft.records.view import OffsetAndEpoch

__all__ = [
    "HandoverDecision",
    "HandoverLeadership",
    "HandoverStats",
    "HandoverWatch",
    "caught_up_successors",
    "completed",
    "decide",
    "reachable_window_ms",
]


def reachable_window_ms(config: QuorumConfig) -> int:
    """How recent a voter's Vote request must be for the voter to count as
    reachable: a Kafka voter without a leader becomes Prospective after its
    fetch timeout and, having lost, again after each election timeout (plus
    up to one more of jitter)."""
    return config.fetch_timeout_ms + 2 * config.election_timeout_ms


@dataclass(frozen=True, slots=True)
class HandoverDecision:
    """Whether a witness may campaign for a hand-over epoch, and why (an
    operator's phrase)."""

    allowed: bool
    reason: str


def decide(
    local_id: int,
    local_end: OffsetAndEpoch,
    voter_ids: Collection[int],
    leaders: Collection[int],
    heard: dict[int, OffsetAndEpoch],
) -> HandoverDecision:
    """The hand-over rule (see the module docstring). ``leaders`` are the
    voters that may lead (the non-witnesses); ``heard`` the log ends the
    reachable ones reported in their Vote requests."""
    candidates = [v for v in voter_ids if v != local_id and v in leaders]
    if not candidates:
        return HandoverDecision(False, "no voter that may lead: nobody to hand the log to")
    reachable = {v: heard[v] for v in candidates if v in heard}
    if not reachable:
        unreachable = (f"{voter_ids_text(candidates)}, the only voter that may lead, is not reachable" if len(candidates) == 1
                       else f"none of the {voter_ids_text(candidates)} that may lead is reachable")
        return HandoverDecision(
            False, f"no leader and {unreachable}: not taking a hand-over epoch (nobody to hand the log to)")
    level = sorted(v for v, end in reachable.items() if log_up_to_date(end, local_end))
    if level:
        return HandoverDecision(False, f"{voter_ids_text(level)} ha{'s' if len(level) == 1 else 've'} a log as long as ours "
                                       f"and can win an election: no hand-over epoch")
    votes = 1 + len(reachable)
    if votes <= len(voter_ids) // 2:
        return HandoverDecision(False, f"only {voter_ids_text(reachable)} reachable: {votes} of {len(voter_ids)} votes "
                                       f"cannot elect a hand-over leader")
    behind = ", ".join(f"{v} at offset {reachable[v].offset} epoch {reachable[v].epoch}" for v in sorted(reachable))
    return HandoverDecision(
        True, f"no leader and the log is ahead of every reachable voter that may lead (ours ends at offset "
              f"{local_end.offset} epoch {local_end.epoch}; {behind}): campaigning to lead a hand-over epoch")


def caught_up_successors(
    by_fetch_offset: tuple[ReplicaKey, ...], end_offsets: dict[int, int | None], leaders: Collection[int],
    log_end_offset: int,
) -> tuple[ReplicaKey, ...]:
    """The voters that may lead and fetched up to ``log_end_offset``, in the
    leader's descending-fetch-offset order (most caught up first)."""
    return tuple(
        k for k in by_fetch_offset
        if k.id in leaders and (end := end_offsets.get(k.id)) is not None and end >= log_end_offset
    )


@dataclass(frozen=True, slots=True)
class HandoverStats:
    """Hand-over epochs this replica led and their total time as leader."""

    epochs: int = 0
    total_ms: int = 0


class HandoverWatch:
    """What a witness's core learns for the hand-over rule: the log ends other
    voters reported in their Vote requests (and when), the last decision
    (logged once per change) and the hand-over statistics. Whether a
    candidacy is a hand-over one is the Prospective's or Candidate's
    (``handover``), and ends with it."""

    def __init__(self, window_ms: int) -> None:
        self.window_ms = window_ms
        self._heard: dict[int, tuple[int, OffsetAndEpoch]] = {}
        self._last_reason: str | None = None
        self.stats = HandoverStats()

    def note_vote_request(self, now_ms: int, candidate_id: int, end: OffsetAndEpoch) -> None:
        """A Vote (or pre-vote) request told us ``candidate_id``'s log end."""
        self._heard[candidate_id] = (now_ms, end)

    def heard(self, now_ms: int) -> dict[int, OffsetAndEpoch]:
        """The log ends of the voters heard within the window."""
        return {v: end for v, (at, end) in self._heard.items() if now_ms - at <= self.window_ms}

    def consider(self, local_id: int, local_end: OffsetAndEpoch, voter_ids: Collection[int],
                 leaders: Collection[int], now_ms: int) -> tuple[bool, str | None]:
        """The hand-over rule (:func:`decide`) for a witness whose election
        timeout passed, on what it heard: whether it may lead a hand-over
        epoch, and the decision's reason if it changed (:meth:`changed`)."""
        decision = decide(local_id, local_end, voter_ids, leaders, self.heard(now_ms))
        return decision.allowed, self.changed(decision)

    def changed(self, decision: HandoverDecision) -> str | None:
        """The decision's reason if it differs from the last one (one log line
        per change, not one per election timeout)."""
        # Offsets in the reason change while the others campaign; compare the
        # verdict and its first clause only.
        key = decision.reason.split(":")[0]
        if key == self._last_reason:
            return None
        self._last_reason = key
        return decision.reason

    def leader_found(self) -> None:
        """A leader was elected since those Vote requests: the logs they
        reported are stale (the leader appended since), and so is the
        verdict (the next "no hand-over" one is news again)."""
        self._last_reason = None
        self._heard.clear()

    def began(self) -> None:
        self.stats = HandoverStats(self.stats.epochs + 1, self.stats.total_ms)

    def ended(self, duration_ms: int) -> None:
        self.stats = HandoverStats(self.stats.epochs, self.stats.total_ms + max(0, duration_ms))


def completed(leader: Leader, now_ms: int) -> tuple[tuple[ReplicaKey, ...] | None, str | None]:
    """A hand-over leader's poll: once its records (the LeaderChange) are
    committed and a voter that may lead fetched up to the log end, the
    successors (caught up, most caught up first) and the resignation's
    reason; else ``(None, None)``: keep serving Fetch."""
    state = leader.state
    lead = state.handover
    assert lead is not None
    progress = leader.progress
    end = progress.progress_of(leader.local_key).end_offset
    hw = progress.high_watermark
    if end is None or hw is None or hw < end or state.write is not None or state.accumulator.time_until_drain(now_ms) is not None:
        return None, None
    order = progress.non_leader_voters_by_descending_fetch_offset()
    successors = caught_up_successors(order, {k.id: progress.progress_of(k).end_offset for k in order},
                                      lead.leaders, end)
    if not successors:
        return None, None
    return successors, (f"hand-over complete: {voter_ids_text(k.id for k in successors)} fetched up to the log end (offset "
                        f"{end}) after {now_ms - lead.started_ms} ms as leader; resigning with preferred "
                        f"successors {', '.join(str(k.id) for k in successors)}")
