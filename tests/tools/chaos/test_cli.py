"""``kraft bench chaos`` refuses what it cannot honour in one line, before
anything starts; named scenarios register in a line; the header and the
summary say what the run does (a duration's schedule, or a scenario)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kraft.tools.bench.chaos import ChaosOptions, register_scenario
from kraft.tools.bench.chaos.scenarios import SCENARIOS, load_scenario, scenario_summary
from tests.harness import cli


@pytest.mark.parametrize("args, says", [
    (["--nemesis", "partition,flood"], "unknown nemesis flood"),
    (["--max-concurrent-faults", "5"], "--max-concurrent-faults 5 is more than the 4 nodes"),
    (["--duration", "3"], "--duration 3 is shorter than one fault"),
    (["--scenario", "no-such"], "no scenario 'no-such'"),
    # Jepsen's majorities ring needs 5 voters: with 3 every ring is whole.
    (["--nemesis", "ring"], "nemesis ring needs --voters 5 or more"),
    # Kafka's brokers and clients run on the host, outside the nodes' network namespaces.
    (["--load", "kafka", "--nemesis", "kill,partition"], "--load kafka cannot run nemesis partition"),
    (["--load", "client", "--scenario", "isolated-leader"], "runs the demo load; drop --load client"),
    (["--load", "bogus"], "Invalid value for '--load'"),
])
def test_options_that_cannot_be_honoured_are_refused_in_one_line(args: list[str], says: str) -> None:
    done = cli.invoke(["bench", "chaos", *args])
    assert done.exit_code == 2, done.output
    assert says in done.output and "Traceback" not in done.output


def test_a_nemesis_the_machine_cannot_run_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from kraft.tools.bench.chaos import run

    monkeypatch.setattr(run, "network_unavailable_reason", lambda: "creating network namespaces needs root")
    done = cli.invoke(["bench", "chaos", "--nemesis", "partition"])
    assert done.exit_code == 1
    assert done.output.strip().splitlines()[-1] == (
        "Error: nemesis partition cannot run on this machine: creating network namespaces needs root")


def test_a_scenario_registers_in_a_line_by_callable_or_by_name() -> None:
    async def mine(chaos: object) -> None:
        return None

    try:
        register_scenario("test-mine", mine)
        register_scenario("test-by-name", "kraft.tools.bench.chaos.scenarios:isolated_leader")
        assert load_scenario("test-mine") is mine
        assert load_scenario("test-by-name").__name__ == "isolated_leader"
        with pytest.raises(KeyError, match="no scenario 'nope'"):
            load_scenario("nope")
    finally:
        SCENARIOS.pop("test-mine", None)
        SCENARIOS.pop("test-by-name", None)


def test_the_header_of_a_duration_run_says_how_long_and_which_faults() -> None:
    from kraft.tools.bench.chaos.run import fault_phase_header

    options = ChaosOptions(duration_s=30, seed=7, max_concurrent=1, nemesis=("kill", "pause", "fsync"))
    assert fault_phase_header(options, Path("/tmp/run"), namespaces=False, kinds=["kill", "pause"]) == (
        "3 voters and 1 observer on 127.0.0.1, in /tmp/run; faults for 30 s (seed 7, up to 1 at once: kill, pause):")


def test_the_header_of_a_scenario_run_names_it_and_no_duration() -> None:
    """A scenario ends when it does: --duration (60 s by default) and the
    overlap limit do not apply, so the header must not promise them."""
    from kraft.tools.bench.chaos.run import fault_phase_header

    options = ChaosOptions(duration_s=60, seed=3, voters=3, observers=0, witness=True,
                           scenario="partition-during-restart", nemesis=("kill", "partition"))
    header = fault_phase_header(options, Path("/tmp/run"), namespaces=False, kinds=["kill", "partition"])
    assert header == (
        "3 voters (the last a witness) and 0 observers on 127.0.0.1, in /tmp/run; scenario partition-during-restart "
        "(seed 3), until it ends: Overlapping faults: a voter is killed, and while it is down the leader is cut off.")
    assert "60" not in header and "at once" not in header


def test_a_scenario_without_a_docstring_is_named_by_its_name() -> None:
    async def bare(chaos: object) -> None:
        return None

    try:
        register_scenario("test-bare", bare)
        assert scenario_summary("test-bare") == "test-bare"
        assert scenario_summary("isolated-leader") == (
            "Cut the leader off while it has clients, twice; the rest must elect and commit.")
    finally:
        SCENARIOS.pop("test-bare", None)


def test_the_report_of_a_failed_scenario_run_replays_the_scenario() -> None:
    from kraft.tools.bench.chaos import format_chaos_report

    result = {"seed": 3, "voters": 3, "observers": 0, "witness": True, "fault_phase_s": 41.0,
              "max_concurrent_faults": 2, "append_rate": 50.0, "cpus": 2, "load_average_before": 1.0,
              "load_average_after": 1.0, "fault_counts": {"kill": 1, "pause": 1}, "acknowledged": 10,
              "present": 9, "lost": 1, "lost_records": [(4, "x")], "leader_changes": 1,
              "time_without_leader_s": 1.0, "high_watermark": 12, "committed_records": 9,
              "nemesis": ["kill", "pause"], "duration_s": 60.0, "scenario": "isolated-leader"}
    report = format_chaos_report(result)
    assert "41 s of faults (scenario isolated-leader)" in report and "at once" not in report
    assert report.splitlines()[-1] == ("  replay: kraft bench chaos --seed 3 --voters 3 --nemesis kill,pause "
                                       "--scenario isolated-leader")
