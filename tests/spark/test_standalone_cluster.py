"""The kraft data source on a real standalone Spark cluster: the README's
cluster section, run as written. It starts a master and two workers on
127.0.0.1 from the pyspark installation (``spark-class
org.apache.spark.deploy.master.Master`` / ``...worker.Worker``), runs ``kraft
spark export --master spark://127.0.0.1:PORT`` and ``kraft spark report``
against them on a metadata log, and stops what it started. This test then
checks that the exported rows equal the rows the decoder makes in this
process, and that the report names the log's topics. (Real Kafka files go
through Spark in tests/spark/test_source.py; one cluster here, not a second
one beside the README's: each costs a minute of two cores.)"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from kraft.tools.spark import plan as P
from kraft.tools.spark.rows import COLUMN_NAMES, iter_rows
from tests.test_readme import delegated_blocks, readme_block, run_example

HERE = "tests/spark/test_standalone_cluster.py"
COMPARED = ("file", "position", "offset", "record_type", "payload")


def _cluster_block(workdir: Path) -> str:
    """The README's block, its files kept in ``workdir`` instead of a
    temporary directory it removes (so the export can be read back)."""
    [line] = [line for line, test in delegated_blocks().items() if test == HERE]
    code = readme_block(line)
    assert code.startswith("d=$(mktemp -d)\n") and code.rstrip().endswith('rm -rf "$d"'), code
    return f"d={workdir}\n" + code.removeprefix("d=$(mktemp -d)\n").rstrip().removesuffix('rm -rf "$d"')


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["file"], row["position"] or 0, row["offset"] if row["offset"] is not None else -1)


@pytest.mark.slow
def test_the_readme_cluster_section_exports_the_local_rows(tmp_path: Path, spark_installed: None) -> None:
    import pyarrow as pa
    import pyarrow.dataset as ds

    workdir = tmp_path / "d"
    workdir.mkdir()
    report = run_example("sh", _cluster_block(workdir), tmp_path)

    # The export ran on the cluster: the workers' executors wrote it.
    logs = "".join(p.read_text(errors="replace") for p in workdir.glob("worker*.log"))
    assert re.search(r"Asked to launch executor app-\S+ for ", logs), logs[-3000:]

    # Partitioned by cluster and record type; a log without meta.properties
    # has a null cluster id (Hive's default partition).
    partitioning = ds.partitioning(pa.schema([("cluster_id", pa.string()), ("record_type", pa.string())]),
                                   flavor="hive")
    table = ds.dataset(workdir / "meta.parquet", format="parquet", partitioning=partitioning).to_table()
    exported = sorted(table.select(list(COMPARED)).to_pylist(), key=_key)
    planned = P.plan([str(workdir / "meta")])
    local = [dict(zip(COLUMN_NAMES, r, strict=True)) for part in planned.partitions for r in iter_rows(part)]
    expected = sorted(({k: r[k] for k in COMPARED} for r in local), key=_key)
    assert len(exported) == len(expected) > 1000
    assert exported == expected

    topics = {r["topic_name"] for r in local if r["record_type"] == "TOPIC_RECORD"}
    shown = [name for name in topics if name in report]  # the section prints its first rows
    assert len(shown) >= min(len(topics), 10), report[-3000:]
    shutil.rmtree(workdir)
