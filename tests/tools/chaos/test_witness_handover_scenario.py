"""``kraft bench chaos --scenario witness-handover`` end to end (issue 24):
voters 1 and 2 answer ApiVersions as Kafka 4.0 controllers do, voter 3 is a
kraft witness by auto-detection. The Kafka-played follower is paused while
records commit, the leader is killed -9, the follower resumes behind the
witness: a hand-over epoch elects it. The chaos checker judges the files as
in any run. No timing is asserted (the figures are printed with ``-s``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness import cli


@pytest.mark.slow
def test_the_witness_hands_a_behind_kafka_follower_the_log(tmp_path: Path) -> None:
    done = cli.run("bench", "chaos", "--scenario", "witness-handover", "--duration", "5", "--observers", "0", "--json",
                   timeout=600, cwd=tmp_path)
    print(done.stderr)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    report = result["scenario_report"]
    print(report)
    assert result["witness"] and result["lost"] == 0 and result["acknowledged"] > 20, result
    # The paused (behind) Kafka-played follower leads, and still does after the killed one returned.
    assert report["resumed"] in (1, 2) and report["killed"] in (1, 2) and report["resumed"] != report["killed"]
    assert report["final_leader"] == report["resumed"], report
    # The witness led at most once (one hand-over epoch) and appended nothing.
    assert report["witness_led"] <= 1 and len(report["witness_epochs"]) <= 1, report
    assert report["witness_appended"] == 0, report
