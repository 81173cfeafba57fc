"""The shape of one request's path through the raft side cannot silently
regress: upper bounds on the medians ``tests/dev/trace_rpc.py`` measures.

The bounds are today's figures (a step that handles its message and does
not poll; the epoch gate in its own module; each RPC's handlers in its own
module, beside its message classes). When the tool was committed, with a
step that also polled, they were Fetch 33 stays / 22 re-entries, Vote
41/31, pre-vote 21/13. A change that makes a request bounce more between
modules fails here; one that makes it bounce less should lower the bounds
with it.
"""

from __future__ import annotations

import pytest

from tests.dev import trace_rpc
from tests.dev.trace_rpc import Trace

#: (stays, re-entries) medians of 5 runs, at most.
BOUNDS = {
    "fetch": (19, 11),
    "vote": (27, 18),
    "pre-vote": (11, 5),
}


@pytest.mark.parametrize("kind", trace_rpc.KINDS)
def test_medians_within_bounds(kind: str) -> None:
    stays, reentries = trace_rpc.measure(kind, runs=5)
    max_stays, max_reentries = BOUNDS[kind]
    assert stays <= max_stays, f"{kind}: {stays} module stays, the bound is {max_stays}"
    assert reentries <= max_reentries, f"{kind}: {reentries} re-entries, the bound is {max_reentries}"


@pytest.mark.parametrize("kind", trace_rpc.KINDS)
def test_a_trace_starts_and_ends_in_the_core(kind: str) -> None:
    # The traced call is RaftCore.step: a trace that lost its frames (a
    # profiler that saw nothing) would pass the bounds above trivially.
    trace = trace_rpc.trace_run(kind, seed=1)
    assert trace.stays[0] == "kraft.raft.core"
    assert trace.stays[-1] == "kraft.raft.core"
    assert trace.stay_count >= 5
    assert all(m.startswith("kraft.raft") for m in trace.stays)


def test_stays_and_reentries_are_counted_as_documented() -> None:
    trace = Trace("fetch", ("a", "b", "a", "c", "b", "a"))
    assert trace.stay_count == 6
    assert trace.reentries == 3


def test_dataclass_constructors_are_left_out_only_when_asked() -> None:
    counted = trace_rpc.trace_run("pre-vote", seed=1)
    plain = trace_rpc.trace_run("pre-vote", seed=1, count_generated=False)
    assert "kraft.raft.events" in counted.stays and "kraft.raft.events" not in plain.stays
    assert counted.stay_count > plain.stay_count


def test_the_same_seed_traces_the_same_path() -> None:
    assert trace_rpc.trace_run("vote", seed=2) == trace_rpc.trace_run("vote", seed=2)


def test_command_prints_one_row_per_request(capsys: pytest.CaptureFixture[str]) -> None:
    assert trace_rpc.main(["--runs", "1", "--kind", "pre-vote", "--kind", "fetch"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["request", "stays", "re-entries"]
    assert [line.split()[0] for line in lines[1:]] == ["pre-vote", "fetch"]


def test_bad_runs_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        trace_rpc.main(["--runs", "0"])
    assert exit_info.value.code == 2
    assert "--runs must be at least 1" in capsys.readouterr().err
