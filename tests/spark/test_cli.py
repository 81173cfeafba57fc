"""``kraft spark export`` / ``kraft spark report`` / ``kraft bench spark``.

In-process runs reuse the test session's Spark (the commands use an active
session and leave it running); the slow tests run the real CLI in a
subprocess with its own JVM."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import fixture_path
from tests.harness import cli
from tests.spark.agree import dump_log_records
from tests.spark.conftest import copy_scenario
from tests.spark.synth import Scenario


def run(*args: str) -> Any:
    result = cli.invoke(list(args), catch_exceptions=False)
    return result


@pytest.fixture(scope="module")
def damaged(scenario: Scenario, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scenario with a torn tail on its last segment."""
    log_dir = copy_scenario(scenario, tmp_path_factory.mktemp("cli") / "node1")
    seg = log_dir / "__cluster_metadata-0" / "00000000000000000946.log"
    os.truncate(seg, seg.stat().st_size - 5)
    return log_dir


def test_export_parquet_partitioned_with_problem_summary(spark: Any, damaged: Path, scenario: Scenario, tmp_path: Path) -> None:
    out = tmp_path / "export"
    result = run("spark", "export", "--input", str(damaged), "--output", str(out))
    assert result.exit_code == 0, result.output
    records = len(dump_log_records([damaged / f.relative_to(scenario.log_dir) for f in scenario.files]))
    assert f"wrote {records + 1:,} rows ({records:,} records, 1 clusters" in result.output
    assert "problems: torn_tail: 1" in result.output
    assert (out / f"cluster_id={scenario.cluster_id}" / "record_type=TOPIC_RECORD").is_dir()
    back = spark.read.parquet(str(out))
    assert back.where("record_type = 'PARTITION_CHANGE_RECORD' and file_kind = 'segment'").count() == 3
    again = run("spark", "export", "--input", str(damaged), "--output", str(out))
    assert again.exit_code == 1 and "already exists" in again.output


@pytest.mark.slow
def test_export_json_and_report_from_it(spark: Any, scenario: Scenario, tmp_path: Path) -> None:
    out = tmp_path / "json"
    assert run("spark", "export", "--input", str(scenario.log_dir), "--output", str(out), "--format", "json").exit_code == 0
    assert list(out.rglob("part-*.json"))
    result = run("spark", "report", "--from-export", str(out), "--export-format", "json", "--section", "topic_events")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any("orders" in line and "partitions_added" in line and "[3,4]" in line for line in lines)
    assert any("payments" in line and "deleted" in line for line in lines)


@pytest.mark.slow
def test_report_prints_every_section_and_writes_csv(spark: Any, scenario: Scenario, tmp_path: Path) -> None:
    csv = tmp_path / "csv"
    result = run("spark", "report", "--input", str(scenario.log_dir), "--csv-dir", str(csv), "--limit", "5")
    assert result.exit_code == 0, result.output
    out = result.output
    for title in ("topic lifecycle", "topic events", "leadership over time", "partition churn", "broker events",
                  "config changes", "feature changes", "snapshot coverage", "problems"):
        assert f"== {title}" in out
    assert "leader changes per 1 hour" in out and "#" in out
    assert "retention.ms" in out and "deleted" in out
    assert "(none)" in out  # no problems in an undamaged log
    assert "first 5" in out  # broker events are more than the limit
    assert sorted(p.name for p in csv.iterdir()) == sorted(
        ["topic_lifecycle", "topic_events", "leadership_over_time", "partition_churn", "broker_events",
         "config_changes", "feature_changes", "snapshot_coverage", "problems"]
    )
    topic_csv = next((csv / "topic_events").glob("part-*.csv")).read_text()
    assert topic_csv.splitlines()[0].startswith("cluster,topic_name,topic_id,event")


def test_report_usage_errors(spark: Any, scenario: Scenario) -> None:
    result = run("spark", "report")
    assert result.exit_code == 2 and "either --input" in result.output
    result = run("spark", "report", "--input", str(scenario.log_dir), "--section", "weather")
    assert result.exit_code == 2 and "unknown section(s) weather" in result.output


def test_mixed_clusters_are_named_and_can_be_flagged(spark: Any, scenario: Scenario, tmp_path: Path) -> None:
    a = copy_scenario(scenario, tmp_path / "a")
    b = copy_scenario(scenario, tmp_path / "b")
    (b / "meta.properties").write_text("version=1\nnode.id=2\ncluster.id=clusterB\n")
    n = len(scenario.files)
    result = run("spark", "report", "--input", str(a), "--input", str(b), "--section", "problems")
    assert result.exit_code == 0, result.output
    assert f"input holds files of 2 clusters ({scenario.cluster_id}: {n} files, clusterB: {n} files)" in result.output
    flagged = run("spark", "report", "--input", str(a), "--input", str(b), "--section", "problems",
                  "--cluster-id", scenario.cluster_id)
    assert flagged.exit_code == 0, flagged.output
    assert "input holds files" not in flagged.output
    assert f"belongs to cluster clusterB, not the expected {scenario.cluster_id}" in flagged.output
    assert f"== problems ({n} rows)" in flagged.output


def test_failfast_export_fails_cleanly(spark: Any, damaged: Path, tmp_path: Path) -> None:
    result = run("spark", "export", "--input", str(damaged), "--output", str(tmp_path / "x"), "--failfast")
    assert result.exit_code == 1
    assert "KraftReadError: torn_tail" in result.output


def test_the_summary_of_a_driver_decode_is_the_summary_spark_computes(spark: Any, damaged: Path) -> None:
    """``export`` sums up rows decoded in the driver from their Arrow table,
    without a Spark job: the same figures as Spark's aggregation."""
    from kraft.tools.spark.spark_command import frame_summary, table_summary
    from kraft.tools.spark.source import dataframe_of, decode_in_driver

    table = decode_in_driver([str(fixture_path()), str(damaged)])
    summary, problems = table_summary(table)
    assert (summary, problems) == frame_summary(dataframe_of(spark, table))
    assert summary["clusters"] >= 2 and problems == [("torn_tail", 1)]


@pytest.mark.slow
def test_real_cli_export_small_input_is_decoded_in_the_driver(scenario: Scenario, tmp_path: Path,
                                                             spark_installed: None) -> None:
    """An input that fits one partition skips the data source's processes,
    on a JVM tuned for a short session."""
    done = cli.run("spark", "export", "--input", str(scenario.log_dir), "--output", str(tmp_path / "out"),
                   "--master", "local[2]", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]  # no worker traceback on a normal run
    assert "started (local[2], " in done.stderr and "; driver JVM tuned for a short session)" in done.stderr
    assert "[export] " in done.stderr and " kB decoded in the driver (" in done.stderr
    assert f"rows ({len(dump_log_records(scenario.files)):,} records" in done.stdout


@pytest.mark.slow
def test_real_cli_export_through_the_data_source(tmp_path: Path, spark_installed: None) -> None:
    """An input larger than --max-partition-bytes is read by the data
    source's tasks, on Spark's default JVM; the rows are dump-log's."""
    from kraft.tools.spark.plan import discover

    fixtures = fixture_path()
    done = cli.run("spark", "export", "--input", str(fixtures), "--output", str(tmp_path / "out"),
                   "--master", "local[2]", "--max-partition-bytes", "1m", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]  # no worker traceback on a normal run
    assert "started (local[2], " in done.stderr and "tuned" not in done.stderr
    assert "[export] " in done.stderr and " input partitions" in done.stderr
    files = [Path(f.path) for f in discover([str(fixtures)])]
    clusters = len({f.cluster_id for f in discover([str(fixtures)])} - {None})
    assert f"rows ({len(dump_log_records(files)):,} records, {clusters} clusters, {len(files)} files)" in done.stdout


@pytest.mark.slow
def test_bench_spark_smoke(tmp_path: Path, spark_installed: None) -> None:
    done = cli.run("bench", "spark", "--size-gb", "0.004", "--segment-mb", "1", "--dir", str(tmp_path), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]  # no worker traceback on a normal run
    out = done.stdout
    assert "segments, 1 snapshots" in out  # one copy of the template, one snapshot after it
    assert "single process :" in out and "spark local[2]" in out and "ratio (local[2] / single process)" in out and "per CPU second" in out
    assert out.count("cores busy") == 2  # CPU seconds of both sides, read from /proc
    per_cpu = [line for line in out.splitlines() if line.startswith("per CPU second: local[2] ")]
    # Spark's rows per CPU second of every process it ran (driver, JVM, workers) against the raw decoder's.
    assert len(per_cpu) == 1 and "driver " in per_cpu[0] and re.search(r": \d+\.\d\dx$", per_cpu[0]), out
    # The headline is the steady state (a warm session, that query's CPU only), split JVM / JIT / Python ...
    assert re.search(r"steady state: .* JVM \d+\.\d s \(JIT compiler \d+\.\d s, GC \d+\.\d s\) \+ Python workers "
                     r"\d+\.\d s", per_cpu[0]), per_cpu[0]
    # ... and what the whole run cost is printed too: the rounds with the JVM's warm-up, the session in all.
    whole = [line for line in out.splitlines() if line.startswith("whole run: local[2] ")]
    assert len(whole) == 1, out
    assert re.search(r"\d+\.\d\dx the raw decoder; the Spark session used \d+\.\d s of CPU in all", whole[0]), whole[0]
    assert "raw decoder    :" in out and "ratio (single process rows/s / raw decoder records/s)" in out
    assert "filtered query (record_type = 'TOPIC_RECORD', pushed down)" in out
    # local[2]'s wall-clock speed-up is printed with the core count, and judged
    # against 1.8x only where the JVM has cores beside the two workers.
    cores = os.cpu_count() or 1
    assert "ratio (local[2] / single process): " in out and f"x on {cores} cores, 2 Spark workers" in out, out
    targets = [line for line in out.splitlines() if line.startswith("targets held: ")]
    assert len(targets) == 1 and ("spark/single" in targets[0]) == (cores > 2), targets
    assert not list(tmp_path.iterdir())  # the data set is removed


def _unwritable_mount(tmp_path: Path) -> Path:
    """A tmpfs mounted read-only (root's write bits do not help there)."""
    import shutil

    mnt = tmp_path / "ro"
    mnt.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a read-only tmpfs needs root and mount(8)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(mnt)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    return mnt


@pytest.mark.parametrize("case", ["exists", "under a file", "read-only"])
def test_export_refuses_an_output_spark_would_refuse_before_spark_starts(case: str, tmp_path: Path) -> None:
    """Issue 44: into an unwritable path, 35 s of Spark start-up then 222
    lines ending ``An error occurred while calling o60.save.``; into an
    existing output, Spark's words after Spark started. One line now, and no
    JVM: a Spark that started would print its banner or a py4j line."""
    fixtures = fixture_path("kafka-3.9-single-node")
    mnt = None
    if case == "exists":
        out = tmp_path / "out"
        out.mkdir()
        code, words = 1, f"Error: --output {out} already exists: pass --overwrite to replace it"
    elif case == "under a file":
        (tmp_path / "file").write_text("x")
        out = tmp_path / "file" / "out"
        code, words = 4, f"Error: cannot write --output {out}: {tmp_path / 'file'} is a file, not a directory"
    else:
        mnt = _unwritable_mount(tmp_path)
        out = mnt / "out"
        code, words = 4, f"Error: cannot write --output {out}: {mnt}: Read-only file system"
    try:
        done = cli.run("spark", "export", "--input", str(fixtures), "--output", str(out), timeout=600)
    finally:
        if mnt is not None:
            subprocess.run(["umount", "-l", str(mnt)], check=False)
    assert done.returncode == code, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(words), done.stderr
    assert "py4j" not in done.stderr and "Spark" not in done.stderr
