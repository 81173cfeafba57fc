"""``kraft bench chaos`` refuses what it cannot honour in one line, before
anything starts; named scenarios register in a line."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from kraft.cli import main
from kraft.tools.bench.chaos import register_scenario
from kraft.tools.bench.chaos.scenarios import SCENARIOS, load_scenario


@pytest.mark.parametrize("args, says", [
    (["--nemesis", "partition,flood"], "unknown nemesis flood"),
    (["--max-concurrent-faults", "5"], "--max-concurrent-faults 5 is more than the 4 nodes"),
    (["--duration", "3"], "--duration 3 is shorter than one fault"),
    (["--scenario", "no-such"], "no scenario 'no-such'"),
    (["--scenario", "witness-handover", "--voters", "5"], "--scenario witness-handover runs 3 voters"),
])
def test_options_that_cannot_be_honoured_are_refused_in_one_line(args: list[str], says: str) -> None:
    done = CliRunner().invoke(main, ["bench", "chaos", *args])
    assert done.exit_code == 2, done.output
    assert says in done.output and "Traceback" not in done.output


def test_a_nemesis_the_machine_cannot_run_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from kraft.tools.bench.chaos import run

    monkeypatch.setattr(run, "network_unavailable_reason", lambda: "creating network namespaces needs root")
    done = CliRunner().invoke(main, ["bench", "chaos", "--nemesis", "partition"])
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
