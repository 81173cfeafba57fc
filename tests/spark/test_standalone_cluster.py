"""The kraft data source on a real standalone Spark cluster: a master and two
workers started on 127.0.0.1 from the pyspark installation
(``spark-class org.apache.spark.deploy.master.Master`` / ``...worker.Worker``),
``kraft spark export --master spark://127.0.0.1:PORT`` and ``kraft spark
report`` run against it on the shared fixtures, and the exported rows equal
the rows the decoder makes in this process. Everything started is stopped,
also when the test fails. The README's Spark cluster section shows the same
commands."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kraft.tools.spark import plan as P
from kraft.tools.spark.rows import COLUMN_NAMES, iter_rows
from tests.conftest import shared_path

MASTER_URL = re.compile(r"Starting Spark master at (spark://127\.0\.0\.1:\d+)")
WORKER_REGISTERED = "Successfully registered with master"
POLL_LIMIT_S = 180.0  # generous: the machine may be fully loaded


def _spark_class() -> Path:
    import pyspark

    path = Path(pyspark.__file__).parent / "bin" / "spark-class"
    if not path.exists():
        pytest.skip(f"no spark-class in the pyspark installation ({path})")
    return path


def _wait_for(log: Path, pattern: re.Pattern[str] | str, proc: subprocess.Popen[bytes]) -> str:
    """Poll ``log`` until ``pattern`` appears (bounded); returns the match."""
    deadline = time.monotonic() + POLL_LIMIT_S
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace") if log.exists() else ""
        if isinstance(pattern, str):
            if pattern in text:
                return pattern
        else:
            m = pattern.search(text)
            if m:
                return m.group(1)
        if proc.poll() is not None:
            raise AssertionError(f"{proc.args[1:3]} exited with {proc.returncode}:\n{text[-3000:]}")
        time.sleep(0.5)
    raise AssertionError(f"{pattern!r} not seen in {log} within {POLL_LIMIT_S:.0f} s:\n{log.read_text(errors='replace')[-3000:]}")


@pytest.fixture
def standalone(tmp_path: Path, spark_installed: None) -> Iterator[str]:
    """A master and two 1-core workers on 127.0.0.1; yields the master URL."""
    spark_class = _spark_class()
    env = dict(
        os.environ,
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_WORKER_DIR=str(tmp_path / "work"),
        SPARK_LOG_DIR=str(tmp_path / "logs"),
        PYSPARK_PYTHON=sys.executable,
        SPARK_NO_DAEMONIZE="1",
    )
    env.pop("SPARK_HOME", None)
    procs: list[subprocess.Popen[bytes]] = []

    def start(name: str, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
        log = tmp_path / f"{name}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen([str(spark_class), *args], stdout=out, stderr=subprocess.STDOUT, env=env,
                                    start_new_session=True)
        procs.append(proc)
        return proc, log

    try:
        master, master_log = start("master", "org.apache.spark.deploy.master.Master",
                                   "--host", "127.0.0.1", "--port", "0", "--webui-port", "0")
        url = _wait_for(master_log, MASTER_URL, master)
        for i in (1, 2):
            worker, worker_log = start(f"worker{i}", "org.apache.spark.deploy.worker.Worker",
                                       "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
                                       "--cores", "1", "--memory", "1g", url)
            _wait_for(worker_log, WORKER_REGISTERED, worker)
        yield url
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(procs):
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=60)


def _kraft(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    return subprocess.run([sys.executable, "-m", "kraft.cli", *args], capture_output=True, text=True, env=env,
                          timeout=1200)


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["file"], row["position"] or 0, row["offset"] if row["offset"] is not None else -1)


@pytest.mark.slow
def test_export_and_report_on_a_standalone_cluster(standalone: str, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    inputs = [shared_path("fixtures", "kafka-4.0-real", name) for name in ("controller1", "broker4")]
    out = tmp_path / "meta.parquet"
    cluster_conf = ["--conf", f"spark.pyspark.python={sys.executable}", "--conf", "spark.driver.host=127.0.0.1",
                    "--conf", "spark.executor.memory=512m", "--conf", "spark.cores.max=2"]
    args = [a for p in inputs for a in ("--input", str(p))]
    done = _kraft("spark", "export", *args, "--output", str(out), "--master", standalone, *cluster_conf)
    assert done.returncode == 0, done.stderr[-4000:]
    assert f"({standalone}" in done.stderr  # the session ran on the cluster, not locally

    table = pq.read_table(out)
    exported = sorted(table.select(["file", "position", "offset", "record_type", "payload"]).to_pylist(), key=_key)
    planned = P.plan([str(p) for p in inputs])
    local = [dict(zip(COLUMN_NAMES, r, strict=True)) for part in planned.partitions for r in iter_rows(part)]
    expected = sorted(({k: r[k] for k in ("file", "position", "offset", "record_type", "payload")} for r in local),
                      key=_key)
    assert len(exported) == len(expected) > 1000
    assert exported == expected

    report = _kraft("spark", "report", *args, "--master", standalone, *cluster_conf,
                    "--section", "topic_lifecycle", "--section", "leadership_over_time")
    assert report.returncode == 0, report.stderr[-4000:]
    for topic in ("alpha", "beta", "gamma", "delta.with.dots_and-dash", "doomed"):
        assert topic in report.stdout
    assert "cluster brgVtKD0R96cRtz7KMV87g" in report.stdout
    shutil.rmtree(out)
