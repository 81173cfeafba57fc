"""``kraft quorum reassign`` prints its plan and warns before leaving an even
number of voters; ``--dry-run`` prints only (issue 26). The plan's text on
views as DescribeQuorum gives them, then the real CLI on a real quorum."""

from __future__ import annotations

from pathlib import Path

from kraft.programs import reconfig
from kraft.tools.quorum import reassignment_plan_lines
from tests.doctor.helpers import DynamicQuorum, leader_of, quorum, voters_of
from tests.harness.poll import until
from tests.tools.test_quorum_reassign_status import view


def lines(voters: list[int], target: str, observers: list[int] = (), leader: int = 1) -> list[str]:  # type: ignore[assignment]
    v = view(voters, observers, leader)
    resolved = reconfig.resolve_target(reconfig.parse_target(target), v, {})
    return reassignment_plan_lines(v, resolved, reconfig.plan_step(v, resolved))


def test_shrinking_to_two_voters_warns() -> None:
    out = lines([1, 2, 3], "1,2")
    assert out[1] == "  remove 3"
    assert out[-1].startswith("Warning: the quorum would end with 2 voters, an even number: 2 must agree"), out


def test_growing_to_five_adds_each_once_caught_up_and_warns_of_nothing() -> None:
    out = lines([1, 2, 3], "1,2,3,4,5", observers=[4, 5])
    assert out[1] == "  add 4, 5 (each once it has caught up with the leader)"
    assert not any(line.startswith("Warning") for line in out), out


def test_the_leader_is_named_last_among_the_removed() -> None:
    out = lines([1, 2, 3], "2,3,4", observers=[4], leader=1)
    assert "  remove 1 (the leader, 1, last)" in out and not any(line.startswith("Warning") for line in out)


def test_dry_run_changes_nothing_and_a_real_run_warns_first(tmp_path: Path) -> None:
    q = DynamicQuorum(tmp_path, voters=[1, 2, 3], append_rate=0)
    state = tmp_path / "reassign-state.json"
    try:
        q.start(1, 2, 3)
        leader = leader_of(q.ports, [1, 2, 3])
        keep = sorted(i for i in (1, 2, 3) if i != leader)[:1] + [leader]
        dropped = next(i for i in (1, 2, 3) if i not in keep)
        target = ",".join(map(str, sorted(keep)))
        out = quorum(q.ports, "reassign", "--voters", target, "--dry-run", "--state-file", str(state))
        assert out.returncode == 0, out.stdout + out.stderr
        assert f"  remove {dropped}" in out.stdout and "Dry run: nothing was changed." in out.stdout, out.stdout + out.stderr
        assert "Warning: the quorum would end with 2 voters" in out.stderr, out.stderr
        assert not state.exists() and voters_of(q.ports, [1, 2, 3]) == [1, 2, 3]
        out = quorum(q.ports, "reassign", "--voters", target, "--state-file", str(state))
        assert out.returncode == 0, out.stdout + out.stderr
        assert "Warning: the quorum would end with 2 voters" in out.stderr, out.stderr
        assert out.stdout.index("Plan:") < out.stdout.index("Reassigning voters"), out.stdout
        until("two voters", lambda: voters_of(q.ports, keep) == sorted(keep), timeout_s=90)
    finally:
        q.stop()
