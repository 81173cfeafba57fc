"""No worker traceback on a normal run (issue 26). A ``show``/``limit`` over
the data source ends its task with rows still unread; the JVM hangs up on
the Python worker, whose final flush then fails, and PySpark's daemon
printed ``BrokenPipeError: [Errno 32] Broken pipe`` with a traceback
(kraft.tools.spark.daemon ends such a worker quietly). Run in a process of
its own, whose whole stderr is checked."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.conftest import fixture_path

SCRIPT = textwrap.dedent("""
    import sys
    from kraft.tools.spark.source import session
    spark = session("local[2]", conf={"spark.ui.showConsoleProgress": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    df = spark.read.format("kraft").option("maxPartitionBytes", "1m").load(sys.argv[1])
    df.select("offset", "record_type").show(3)
    print("limit", len(df.limit(5).collect()))
    print("daemon", spark.conf.get("spark.python.daemon.module"))
    spark.stop()
""")


@pytest.mark.slow
def test_show_and_limit_print_no_worker_traceback(spark_installed: None) -> None:
    fixtures = fixture_path()
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(fixtures)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "only showing top 3 rows" in done.stdout and "limit 5" in done.stdout, done.stdout
    assert "daemon kraft.tools.spark.daemon" in done.stdout
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr[-3000:]
