"""``kraft bench codec`` runs end to end and reports every figure (no
timing is asserted: only that each implementation was measured, on the
same bytes, or marked n/a with a reason)."""

from __future__ import annotations

import json

import pytest

from kraft.tools.bench.codec_bench import CASES, format_report, run_codec_bench
from tests.harness import cli

# kafka-python 3.0.12 loads its schemas with importlib.resources' legacy API.
pytestmark = pytest.mark.filterwarnings(r"ignore:.*is deprecated. Use files\(\) instead:DeprecationWarning")


def test_every_case_is_measured_or_explained() -> None:
    results = run_codec_bench(repeat=1, min_time=0.001)
    assert [r.label for r in results] == [c.label for c in CASES]
    for r in results:
        assert r.encode["ours"].us is not None and r.encode["ours"].us > 0
        assert r.decode["ours"].us is not None and r.decode["ours (cold)"].us is not None
        assert r.encode["kio"].us is not None, r.encode["kio"].reason
        assert r.decode["kio"].us is not None, r.decode["kio"].reason
    vote = next(r for r in results if r.label.startswith("VoteRequest"))
    assert vote.encode["kafka-python"].us is None
    assert "no Vote api" in vote.encode["kafka-python"].reason
    fetch = next(r for r in results if r.label.startswith("FetchResponse"))
    assert fetch.size > 1 << 20
    assert fetch.decode["kafka-python"].us is not None

    report = format_report(results, 1)
    assert "kio/ours" in report and "kp/ours" in report
    assert "n/a" in report and "no Vote api" in report
    assert report.count("targets:") == len(CASES) + 1


def test_cli_json_output() -> None:
    result = cli.invoke(["bench", "codec", "--repeat", "1", "--min-time", "0.001", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert {row["case"] for row in data} == {c.label for c in CASES}
    for row in data:
        assert set(row["decode"]) == {"ours", "ours (cold)", "kio", "kafka-python"}
