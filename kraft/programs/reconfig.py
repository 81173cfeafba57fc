"""KIP-642 quorum reassignment on top of KIP-853's one-voter-at-a-time changes.

``kraft quorum reassign --voters 4,5,6`` moves any voter set to any other
through single-voter AddRaftVoter / RemoveRaftVoter steps, each committed
before the next, so a majority of the old set and one of the new always
overlap (KIP-642's algorithm, on Kafka's KIP-853 RPCs):

1. a target voter whose id is a voter under another directory id (a
   replaced disk) first has that stale entry removed (AddRaftVoter would
   answer DUPLICATE_VOTER);
2. while there are at least as many voters to add as to remove, add one --
   only one that has caught up with the leader (the leader refuses others);
3. otherwise remove an old voter that is not the leader -- never one that
   would leave fewer live voters than a majority of the set;
4. the leader goes last: RemoveRaftVoter of the leader commits under the
   new set, then the leader hands over with EndQuorumEpoch (Kafka's
   RemoveVoterHandler) and the new voters elect one of themselves.

:func:`plan_step` is pure: it decides the next step from what the leader's
DescribeQuorum says. :func:`drive` repeats describe / plan / send until the
target is reached, so a reassignment resumes wherever it stopped -- after a
crash of any node or of the tool itself, running the same command again
continues it (each step is either committed, visible in the voter set, or
not, and is then sent again). A cancelled reassignment is a reassignment
back to the voters it started from.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

# The planner reads the one model of a DescribeQuorum answer (no directory
# id is ``directory`` None; ``now_ms`` is when the answer came).
from kraft.raft.rpcs.describe_quorum_rpc import QuorumInfo, ReplicaInfo

__all__ = [
    "QuorumInfo",
    "ReplicaInfo",
    "TargetVoter",
    "Step",
    "Plan",
    "ReassignError",
    "parse_target",
    "resolve_target",
    "plan_step",
    "drive",
]

#: A replica counts as live (for the availability check) if it fetched
#: within this many milliseconds of the leader's view.
LIVE_WITHIN_MS = 10_000


class ReassignError(Exception):
    """A reassignment that cannot go on (bad target, refused step); one line."""


@dataclass(frozen=True, slots=True)
class TargetVoter:
    """One entry of ``--voters``: an id, optionally its directory id and
    listeners (``id``, ``id:directory-id``, ``id@host:port[:directory-id]``)."""

    node_id: int
    directory_id: uuid.UUID | None = None
    endpoints: tuple[tuple[str, str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Step:
    """One voter change to send to the leader."""

    kind: Literal["add", "remove"]
    node_id: int
    directory_id: uuid.UUID
    endpoints: tuple[tuple[str, str, int], ...] = ()

    def __str__(self) -> str:
        what = "Adding" if self.kind == "add" else "Removing"
        return f"{what} controller {self.node_id} with directory id {_kafka_uuid(self.directory_id)}"


@dataclass(frozen=True, slots=True)
class Plan:
    """The next step, or why there is none yet (``waiting``), or done."""

    step: Step | None = None
    waiting: str | None = None
    done: bool = False
    adding: tuple[tuple[int, uuid.UUID], ...] = ()
    removing: tuple[tuple[int, uuid.UUID | None], ...] = ()


def _kafka_uuid(u: uuid.UUID | None) -> str:
    from kraft.messages.json_form import uuid_to_kafka

    return "none" if u is None else uuid_to_kafka(u)


_WITH_ENDPOINT = re.compile(r"(\d+)@(\[[^\]]+\]|[^:@\[\]]+):(\d+)(?::([A-Za-z0-9_-]+))?")
_PLAIN = re.compile(r"(\d+)(?::([A-Za-z0-9_-]+))?")


def parse_target(text: str) -> list[TargetVoter]:
    """``--voters``: comma-separated ``id``, ``id:directory-id`` or
    ``id@host:port[:directory-id]``. Raises :class:`ReassignError`."""
    from kraft.messages.json_form import uuid_from_kafka

    out: list[TargetVoter] = []
    for item in (s.strip() for s in text.split(",")):
        if not item:
            continue
        endpoints: tuple[tuple[str, str, int], ...] = ()
        m = _WITH_ENDPOINT.fullmatch(item)
        if m is not None:
            id_text, host, port_text, dir_text = m.group(1), m.group(2).strip("[]"), m.group(3), m.group(4)
            if not 0 < int(port_text) < 65536:
                raise ReassignError(f"invalid voter {item!r}: bad port {port_text}")
            endpoints = (("CONTROLLER", host, int(port_text)),)
        else:
            m = _PLAIN.fullmatch(item)
            if m is None:
                raise ReassignError(
                    f"invalid voter {item!r}: expected id, id:directory-id or id@host:port[:directory-id]"
                )
            id_text, dir_text = m.group(1), m.group(2)
        directory: uuid.UUID | None = None
        if dir_text:
            try:
                directory = uuid_from_kafka(dir_text)
            except ValueError as e:
                raise ReassignError(f"invalid directory id in {item!r}: {e}") from None
            if directory.int == 0:
                raise ReassignError(f"invalid directory id in {item!r}: the zero uuid names no directory")
        node_id = int(id_text)
        if any(t.node_id == node_id for t in out):
            raise ReassignError(f"voter {node_id} is listed twice")
        out.append(TargetVoter(node_id, directory, endpoints))
    if not out:
        raise ReassignError("--voters names no voter: a quorum needs at least one")
    return out


def resolve_target(
    target: Sequence[TargetVoter], view: QuorumInfo, known: dict[int, TargetVoter] | None = None
) -> list[TargetVoter]:
    """Fill in each target's directory id: the voter's with that id (unless
    another directory id was given), else the one observer with that id (the
    replica running there now). ``known`` adds what the controllers' own
    configurations say (``--controller-config``). Raises
    :class:`ReassignError` for a replica nobody has seen."""
    out = []
    for t in target:
        hint = (known or {}).get(t.node_id)
        directory = t.directory_id or (hint.directory_id if hint is not None else None)
        endpoints = t.endpoints or (hint.endpoints if hint is not None else ())
        if directory is None:
            voter = view.voter(t.node_id)
            observers = [o for o in view.observers if o.node_id == t.node_id and o.directory is not None]
            if voter is not None and voter.directory is not None and not observers:
                directory = voter.directory
            elif len(observers) == 1 and (voter is None or voter.directory == observers[0].directory):
                directory = observers[0].directory
            elif voter is not None and voter.directory is not None and observers:
                # A voter and an observer share the id: a replaced disk. The
                # running replica is the one fetching now.
                live = max(observers, key=lambda o: o.last_fetch_ms or -1)
                directory = live.directory
            elif len(observers) > 1:
                raise ReassignError(
                    f"replica {t.node_id} runs with several directory ids "
                    f"({', '.join(_kafka_uuid(o.directory_id) for o in observers)}): name one as "
                    f"{t.node_id}:<directory-id>"
                )
            else:
                raise ReassignError(
                    f"unknown replica {t.node_id}: it is neither a voter nor an observer of the quorum. Start it "
                    "(formatted without --standalone/--initial-controllers) so it fetches from the leader, "
                    "then run the command again"
                )
        out.append(TargetVoter(t.node_id, directory, endpoints))
    return out


def _is_live(r: ReplicaInfo, view: QuorumInfo, leader_id: int) -> bool:
    if r.node_id == leader_id:
        return True
    return r.last_fetch_ms is not None and view.now_ms - r.last_fetch_ms <= LIVE_WITHIN_MS


def _caught_up(r: ReplicaInfo, view: QuorumInfo) -> bool:
    return (
        r.last_caught_up_ms is not None
        and r.last_fetch_ms is not None
        and view.now_ms - r.last_fetch_ms <= LIVE_WITHIN_MS
        and r.log_end_offset >= view.high_watermark
    )


def plan_step(view: QuorumInfo, target: Sequence[TargetVoter]) -> Plan:
    """The next single-voter change towards ``target`` (resolved: every
    entry has a directory id). Pure: the same view always gives the same
    plan."""
    current = {v.key for v in view.voters}
    wanted = {(t.node_id, t.directory_id) for t in target}
    endpoints = {t.node_id: t.endpoints for t in target}
    to_add = sorted(k for k in wanted if k not in current)
    to_remove = sorted((k for k in current if k not in wanted), key=lambda k: (k[0] == view.leader_id, k[0]))
    adding = tuple((i, d) for i, d in to_add if d is not None)
    removing = tuple(to_remove)
    if not to_add and not to_remove:
        return Plan(done=True)

    def add(key: tuple[int, uuid.UUID | None]) -> Plan:
        node_id, directory = key
        assert directory is not None
        observer = next((o for o in view.observers if o.key == key), None)
        if observer is None or not _caught_up(observer, view):
            return Plan(waiting=f"waiting for controller {node_id} to catch up with the leader", adding=adding,
                        removing=removing)
        listeners = endpoints.get(node_id) or ()
        if not listeners:
            return Plan(
                waiting=f"the listeners of controller {node_id} are unknown: pass its configuration with "
                "--controller-config (or name it as id@host:port)",
                adding=adding,
                removing=removing,
            )
        return Plan(Step("add", node_id, directory, listeners), adding=adding, removing=removing)

    def remove(key: tuple[int, uuid.UUID | None]) -> Plan:
        node_id, directory = key
        if directory is None:
            raise ReassignError(f"voter {node_id} has no directory id: the quorum is static (kraft.version 0)")
        return Plan(Step("remove", node_id, directory), adding=adding, removing=removing)

    # 1. A stale entry under a target id blocks the add of that id.
    for key in to_add:
        stale = view.voter(key[0])
        if stale is not None and stale.key != key and stale.key in to_remove and stale.node_id != view.leader_id:
            return remove(stale.key)
    addable = [k for k in to_add if view.voter(k[0]) is None]
    non_leader = [k for k in to_remove if k[0] != view.leader_id]
    # 2. Grow first while there is at least as much to add as to remove.
    if addable and len(to_add) >= len(to_remove):
        ready = [k for k in addable if add(k).step is not None]
        return add(ready[0] if ready else addable[0])
    # 3. Shrink, never below a live majority.
    voters_after = [v for v in view.voters]
    for key in non_leader:
        remaining = [v for v in voters_after if v.key != key]
        live = sum(1 for v in remaining if _is_live(v, view, view.leader_id))
        if live >= len(remaining) // 2 + 1:
            return remove(key)
    if addable:
        return add(addable[0])
    if non_leader:
        return Plan(waiting="waiting for voters to fetch again before removing another one "
                            "(a removal must leave a live majority)", adding=adding, removing=removing)
    # 4. The leader last: it commits its removal under the new set, then resigns.
    leader_keys = [k for k in to_remove if k[0] == view.leader_id]
    if leader_keys:
        remaining = [v for v in view.voters if v.node_id != view.leader_id]
        live = sum(1 for v in remaining if _is_live(v, view, -1))
        if live < len(remaining) // 2 + 1:
            return Plan(waiting="waiting for the new voters to fetch before the leader leaves",
                        adding=adding, removing=removing)
        return remove(leader_keys[0])
    # Only an add whose id is taken by the leader is left: the leader must go first.
    stale_leader = view.voter(view.leader_id)
    if stale_leader is not None:
        return remove(stale_leader.key)
    return Plan(waiting="nothing can be changed yet", adding=adding, removing=removing)


class ReassignClient(Protocol):
    """What :func:`drive` needs from an admin client."""

    async def describe(self) -> QuorumInfo: ...

    async def apply(self, step: Step) -> tuple[str, str | None]:
        """Send the step to the leader: (Kafka error name, message)."""
        ...


#: Errors after which the step is tried again (from a fresh describe).
RETRIABLE = frozenset({
    "REQUEST_TIMED_OUT", "NOT_LEADER_OR_FOLLOWER", "DUPLICATE_VOTER", "VOTER_NOT_FOUND", "BROKER_NOT_AVAILABLE",
    "UNKNOWN_LEADER_EPOCH", "FENCED_LEADER_EPOCH", "NOT_CONTROLLER",
})


async def drive(
    client: ReassignClient,
    target: Sequence[TargetVoter],
    *,
    known: dict[int, TargetVoter] | None = None,
    report: Callable[[str], None] = lambda line: None,
    pause: Callable[[float], Awaitable[None]],
    backoff_s: float = 0.2,
) -> QuorumInfo:
    """Run the reassignment to ``target`` until the voter set is exactly
    that; returns the final view. ``report`` gets one line per step taken.
    The caller bounds the time (a deadline around it). Raises
    :class:`ReassignError` for a target that cannot be reached or a step the
    leader refuses for good."""
    last_wait = None
    while True:
        view = await client.describe()
        resolved = resolve_target(target, view, known)
        plan = plan_step(view, resolved)
        if plan.done:
            return view
        if plan.step is None:
            if plan.waiting != last_wait:
                report(plan.waiting or "waiting")
                last_wait = plan.waiting
            await pause(backoff_s)
            continue
        last_wait = None
        error, message = await client.apply(plan.step)
        if error == "NONE":
            report(f"{plan.step}: done")
            continue
        if error in RETRIABLE:
            await pause(backoff_s)
            continue
        detail = f": {message}" if message else ""
        raise ReassignError(f"{plan.step} failed with {error}{detail}")
