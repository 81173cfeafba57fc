"""``kraft bench shell`` runs end to end on a small synthesized log: both
sides measured on the same files, the image at the log's last offset (no
timing is asserted)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.harness import cli


def test_bench_shell_reports_both_sides_and_the_ratio(tmp_path: Path) -> None:
    result = cli.invoke(["bench", "shell", "--size-mb", "0.1", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert re.match(r"synthesized .*__cluster_metadata-0/00000000000000000000\.log: [\d,]+ bytes", lines[0])
    assert re.match(r"kraft shell --directory +: +[\d,]+ records/s \(.* metadata records applied\)", lines[1])
    assert re.match(r"kraft dump-log --json +: +[\d,]+ records/s", lines[2])
    # CPU seconds of both sides, dump-log's forked workers included (getrusage).
    assert re.match(r"per CPU second: shell [\d,]+ records, dump-log --json [\d,]+ records .*: \d+\.\d\dx$", lines[3])
    assert re.match(r"ratio \(shell / dump-log --json\): \d+\.\d\dx \(load average [\d.]+ on \d+ CPUs", lines[4])
    assert (tmp_path / "__cluster_metadata-0" / "00000000000000000000.log").stat().st_size >= 100_000


def test_bench_shell_takes_turns_over_rounds(tmp_path: Path) -> None:
    result = cli.invoke(["bench", "shell", "--size-mb", "0.05", "--rounds", "3", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "median of 3 rounds" in lines[1] and "median of 3 rounds" in lines[2]
    assert re.fullmatch(r"ratio per round: \d+\.\d\dx, \d+\.\d\dx, \d+\.\d\dx", lines[-1])
