"""``spark.read.format("kraft")`` with no call first: PySpark's lookup of
installed ``pyspark_*`` modules (``pyspark.sql.worker.lookup_data_sources``)
finds ``pyspark_kraft.DefaultSource``.

An installed wheel puts ``pyspark_kraft`` in site-packages; the editable
install of a checkout hides it from ``pkgutil.iter_modules``, so the test puts
the package on ``PYTHONPATH`` as a wheel would, and runs a fresh Spark in a
subprocess (a session of its own: the lookup runs once per session)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kraft.tools.spark import plan as P
from kraft.tools.spark.rows import iter_rows
from tests.conftest import REPO, fixture_path

SCRIPT = """
import sys
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[1]").appName("kraft-discovery")
         .config("spark.ui.enabled", "false").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
print("ROWS", spark.read.format("kraft").load(sys.argv[1]).count())
spark.stop()
"""


@pytest.mark.slow
def test_format_kraft_is_found_without_register(tmp_path: Path, spark_installed: None) -> None:
    root = fixture_path("kafka-4.0-real", "controller1")
    site = tmp_path / "site"
    site.mkdir()
    (site / "pyspark_kraft").symlink_to(REPO / "tools" / "spark" / "pyspark_kraft")
    env = dict(os.environ, PYTHONPATH=str(site), PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(root)], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    expected = sum(1 for part in P.plan([str(root)]).partitions for _ in iter_rows(part))
    assert f"ROWS {expected}\n" in done.stdout
