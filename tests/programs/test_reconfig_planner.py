"""KIP-642 reassignment planning (kraft/programs/reconfig.py): single-voter
steps, adds before removes, the leader last, never below a live majority,
resumable from any voter set."""

from __future__ import annotations

import uuid

import pytest

from kraft.admin_client.admin import QuorumInfo, ReplicaInfo
from kraft.programs.reconfig import (
    Plan,
    ReassignError,
    Step,
    TargetVoter,
    parse_target,
    plan_step,
    resolve_target,
)

NOW = 1_000_000


def d(i: int, disk: int = 0) -> uuid.UUID:
    return uuid.UUID(int=(disk << 32) + i + 1)


def voter(i: int, disk: int = 0, fetched: bool = True) -> ReplicaInfo:
    return ReplicaInfo(i, d(i, disk), 100, NOW - 10 if fetched else NOW - 60_000, NOW - 10 if fetched else None)


def observer(i: int, disk: int = 0, caught_up: bool = True) -> ReplicaInfo:
    return ReplicaInfo(i, d(i, disk), 100 if caught_up else 3, NOW - 10, NOW - 10 if caught_up else None)


def view(voters: list[ReplicaInfo], observers: list[ReplicaInfo], leader: int) -> QuorumInfo:
    return QuorumInfo(leader, 7, 100, tuple(voters), tuple(observers), {}, NOW)


def target(*ids: int) -> list[TargetVoter]:
    return [TargetVoter(i, d(i), (("CONTROLLER", "127.0.0.1", 9000 + i),)) for i in ids]


def run(v: QuorumInfo, goal: list[TargetVoter], steps: int = 20) -> list[Step]:
    """Apply the plan's steps to a model of the quorum until done."""
    taken: list[Step] = []
    for _ in range(steps):
        plan = plan_step(v, goal)
        if plan.done:
            return taken
        assert plan.step is not None, plan.waiting
        step = plan.step
        taken.append(step)
        if step.kind == "add":
            obs = next(o for o in v.observers if o.key == (step.node_id, step.directory_id))
            v = QuorumInfo(v.leader_id, 7, v.high_watermark, v.voters + (obs,),
                           tuple(o for o in v.observers if o is not obs), {}, NOW)
        else:
            gone = next(x for x in v.voters if x.key == (step.node_id, step.directory_id))
            leader = v.leader_id
            rest = tuple(x for x in v.voters if x is not gone)
            if gone.node_id == leader:
                leader = rest[0].node_id  # the removed leader hands over
            v = QuorumInfo(leader, 7, v.high_watermark, rest, v.observers + (gone,), {}, NOW)
        before = {x.key for x in v.voters}
        assert len(before) >= 1
    raise AssertionError(f"no end after {steps} steps: {taken}")


def test_one_two_three_to_four_five_six_adds_first_and_removes_the_leader_last() -> None:
    v = view([voter(1), voter(2), voter(3)], [observer(4), observer(5), observer(6)], leader=2)
    steps = run(v, target(4, 5, 6))
    assert len(steps) == 6
    assert steps[0].kind == "add"
    assert steps[-1] == Step("remove", 2, d(2))
    # The set never changes by more than one voter per step (KIP-853).
    assert [s.kind for s in steps] == ["add", "remove", "add", "remove", "add", "remove"]


def test_growing_one_to_five_only_adds() -> None:
    v = view([voter(1)], [observer(i) for i in (2, 3, 4, 5)], leader=1)
    assert [s.kind for s in run(v, target(1, 2, 3, 4, 5))] == ["add"] * 4


def test_a_replaced_disk_is_removed_before_its_new_key_is_added() -> None:
    v = view([voter(1), voter(2), voter(3)], [observer(3, disk=1)], leader=1)
    goal = [TargetVoter(1, d(1)), TargetVoter(2, d(2)), TargetVoter(3, d(3, 1), (("CONTROLLER", "h", 1),))]
    steps = run(v, goal)
    assert steps == [Step("remove", 3, d(3)), Step("add", 3, d(3, 1), (("CONTROLLER", "h", 1),))]


def test_a_replica_that_is_not_caught_up_is_waited_for() -> None:
    v = view([voter(1)], [observer(2, caught_up=False)], leader=1)
    plan = plan_step(v, target(1, 2))
    assert plan.step is None and "catch up" in (plan.waiting or "")


def test_no_removal_leaves_fewer_live_voters_than_a_majority() -> None:
    # 4 and 5 are down: removing 2 from (1, 2, 3, 4, 5) leaves 2 live of 4.
    v = view([voter(1), voter(2), voter(3), voter(4, fetched=False), voter(5, fetched=False)], [], leader=1)
    plan = plan_step(v, target(1, 3, 4, 5))
    assert plan.step is None and "live majority" in (plan.waiting or "")
    # Removing a dead voter is fine.
    assert plan_step(v, target(1, 2, 3, 4)).step == Step("remove", 5, d(5))


def test_done_when_the_voters_are_the_target() -> None:
    assert plan_step(view([voter(1), voter(2)], [], leader=1), target(2, 1)) == Plan(done=True)


def test_ids_resolve_to_the_running_replica() -> None:
    v = view([voter(1), voter(3)], [observer(2), observer(3, disk=1)], leader=1)
    resolved = resolve_target([TargetVoter(1), TargetVoter(2), TargetVoter(3)], v)
    assert [t.directory_id for t in resolved] == [d(1), d(2), d(3, 1)]
    with pytest.raises(ReassignError, match="unknown replica 7"):
        resolve_target([TargetVoter(7)], v)


def test_parse_target() -> None:
    assert parse_target("4, 5") == [TargetVoter(4), TargetVoter(5)]
    [t] = parse_target("4@127.0.0.1:9093:AAAAAAAAAAAAAAAAAAAAAg")
    assert t == TargetVoter(4, uuid.UUID(int=2), (("CONTROLLER", "127.0.0.1", 9093),))
    for bad in ("", "x", "4,4", "4:AAAAAAAAAAAAAAAAAAAAAA", "4@h:0", "-1"):
        with pytest.raises(ReassignError):
            parse_target(bad)
