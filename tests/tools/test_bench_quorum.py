"""Smoke test of ``kraft bench quorum`` with tiny phases: it runs three real
voter processes, prints every figure, and cleans up. The figures themselves
are not asserted (no timing assertions in tests); only that they exist and
are consistent."""

from __future__ import annotations

import json

import pytest

from kraft.tools.bench.load import percentile
from kraft.tools.bench.quorum_commits import TARGETS, format_report, percentile_of
from tests.harness import cli


@pytest.mark.slow
def test_bench_quorum_runs_all_three_phases() -> None:
    proc = cli.run("bench", "quorum", "--duration", "0.5", "--warmup", "0.2", "--failovers", "1", "--json", timeout=240)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["voters"] == 3 and result["record_size"] == 100 and result["targets"] == TARGETS
    throughput = result["throughput"]
    assert throughput["records_per_s"] > 0
    latency = result["latency"]
    assert latency["rate"] == pytest.approx(throughput["records_per_s"] / 2)
    assert result["latency_at_target"]["rate"] == TARGETS["records_per_s"] / 2
    for phase in (latency, result["latency_at_target"]):
        assert 0 < phase["p50_ms"] <= phase["p99_ms"] <= phase["max_ms"]
    [run] = result["failover"]["runs"]
    assert run["new_epoch"] > run["old_epoch"]
    # The new leader is elected before it commits, and both after the kill.
    assert 0 < run["election_s"] <= run["failover_s"] == result["failover"]["median_s"]
    # Split votes are counted: every epoch between the old and the new leader's.
    assert run["failed_elections"] == run["new_epoch"] - run["old_epoch"] - 1
    assert result["failover"]["split_votes"] == (1 if run["failed_elections"] else 0)
    # Every failover needs a pre-vote round won and a vote round per epoch it took (issue 28).
    assert run["pre_vote_rounds"] >= 1 and run["vote_rounds"] >= run["failed_elections"] + 1
    assert result["failover"]["p90_s"] == run["failover_s"]
    assert (TARGETS["failover_median_s"], TARGETS["failover_p90_s"]) == (2.0, 2.5)
    report = format_report(result)
    for label in ("max committed throughput", "p99", "failover", "ratio", "split vote", "p90", "pre-vote rounds"):
        assert label in report
    assert "kill -9" in proc.stderr  # the progress lines go to stderr with --json


def test_the_voters_reject_a_bench_load_of_zero_bytes(tmp_path) -> None:
    """The bench's voter entry (``kraft bench voter``, hidden; ``kraft node
    start`` has no bench option) refuses a record size of 0 as usage."""
    proc = cli.run("bench", "voter", "--config", str(tmp_path / "none.properties"), "--record-size", "0", timeout=60)
    assert proc.returncode == 2 and "--record-size" in proc.stderr and "Traceback" not in proc.stderr


def test_weighted_percentiles() -> None:
    samples = [(5.0, 98), (50.0, 1), (100.0, 1)]
    assert percentile(samples, 0.5) == 5.0
    assert percentile(samples, 0.99) == 50.0
    assert percentile(samples, 1.0) == 100.0
    assert percentile([], 0.5) is None


def test_failover_p90_is_the_nearest_rank() -> None:
    times = [float(i) for i in range(20, 0, -1)]
    assert percentile_of(times, 0.9) == 18.0 and percentile_of(times, 0.5) == 10.0
    assert percentile_of(times[10:], 0.9) == 9.0 and percentile_of([3.0], 0.9) == 3.0
