"""The kraft data source on a real local Spark (local[2])."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import fixture_path
from tests.spark.agree import dump_log_records, row_records, sort_key
from tests.spark.conftest import copy_scenario
from tests.spark.synth import Scenario


def load(spark: Any, paths: list[Path | str], **options: Any) -> Any:
    from kraft.tools.spark.source import read

    return read(spark, [str(p) for p in paths], **options)


def collected(df: Any) -> list[dict[str, Any]]:
    """The columns dump-log can be compared on (sizes instead of the bytes)."""
    from pyspark.sql import functions as F

    from tests.spark.agree import SAME

    def size(c: str) -> Any:
        return F.when(F.col(c).isNull(), -1).otherwise(F.length(c)).alias(f"{c}_size")

    columns = [*SAME.values(), "file", "file_kind", "record_type", "payload", "error_kind", size("key"), size("value")]
    return [r.asDict() for r in df.select(*columns).collect()]


def test_the_declared_schema_is_the_arrow_schema_of_the_rows(spark: Any) -> None:
    from pyspark.sql.pandas.types import to_arrow_schema

    from kraft.tools.spark.rows import COLUMN_NAMES, arrow_schema
    from kraft.tools.spark.source import SCHEMA

    assert to_arrow_schema(SCHEMA, timezone="UTC").equals(arrow_schema())
    assert tuple(load(spark, ["/nonexistent"]).columns) == COLUMN_NAMES


def test_real_kafka_files_through_spark_agree_with_dump_log(spark: Any) -> None:
    from kraft.tools.spark.plan import discover

    root = fixture_path()
    df = load(spark, [root], maxPartitionBytes="1m", minPartitions=4)
    assert df.rdd.getNumPartitions() >= 4  # the 2 MB segments are split, the small files packed
    rows = collected(df)
    expected = sorted(dump_log_records(Path(f.path) for f in discover([str(root)])), key=sort_key)
    got = sorted(row_records(rows), key=sort_key)
    assert len(got) == len(expected) and got == expected
    assert all(r["error_kind"] is None for r in rows)


def test_multi_segment_log_with_snapshots_and_every_codec(spark: Any, scenario: Scenario) -> None:
    df = load(spark, [scenario.log_dir])
    rows = collected(df)
    assert {r["compression"] for r in rows} == {"none", "gzip", "snappy", "lz4", "zstd"}
    got = sorted(row_records(rows), key=sort_key)
    assert got == sorted(dump_log_records(scenario.files), key=sort_key)
    assert {r["file_kind"] for r in rows} == {"segment", "snapshot", "bootstrap"}


def test_damaged_input_is_reported_and_the_job_finishes(spark: Any, scenario: Scenario, tmp_path: Path) -> None:
    log_dir = copy_scenario(scenario, tmp_path / "n")
    seg = log_dir / "__cluster_metadata-0" / "00000000000000000946.log"
    os.truncate(seg, seg.stat().st_size - 7)
    os.symlink(tmp_path / "gone", log_dir / "__cluster_metadata-0" / "00000000000000099999.log")
    df = load(spark, [log_dir])
    kinds = sorted(r["error_kind"] for r in df.where("error_kind is not null").collect())
    assert kinds == ["torn_tail", "unreadable_file"]
    damaged = [log_dir / f.relative_to(scenario.log_dir) for f in scenario.files]
    assert df.where("offset is not null").count() == len(dump_log_records(damaged))


def test_failfast_fails_the_job_with_the_reason(spark: Any, scenario: Scenario, tmp_path: Path) -> None:
    log_dir = copy_scenario(scenario, tmp_path / "n")
    seg = log_dir / "__cluster_metadata-0" / "00000000000000000946.log"
    os.truncate(seg, seg.stat().st_size - 7)
    with pytest.raises(Exception, match="KraftReadError: torn_tail"):
        load(spark, [log_dir], mode="FAILFAST").count()


def test_bad_options_are_clear(spark: Any, scenario: Scenario) -> None:
    with pytest.raises(Exception, match="mode must be PERMISSIVE or FAILFAST"):
        load(spark, [scenario.log_dir], mode="LENIENT").count()
    with pytest.raises(Exception, match="not a byte size"):
        load(spark, [scenario.log_dir], maxPartitionBytes="big").count()


def test_cluster_option_and_many_paths(spark: Any, scenario: Scenario, tmp_path: Path) -> None:
    copy_scenario(scenario, tmp_path / "a")
    b = copy_scenario(scenario, tmp_path / "b")
    (b / "meta.properties").write_text("version=1\nnode.id=2\ncluster.id=clusterB\n")
    df = load(spark, [tmp_path / "a", str(b / "__cluster_metadata-0" / "*.log")], clusterId=scenario.cluster_id)
    problems = df.where("error_kind = 'cluster_mismatch'").count()
    assert problems == 3  # b's three segments, one row each
    assert df.where(f"cluster_id = '{scenario.cluster_id}' and offset is not null").count() == len(
        dump_log_records(scenario.files)
    )


@pytest.mark.parametrize("failfast", [False, True])
def test_decoding_in_the_driver_gives_the_rows_of_the_data_source(spark: Any, scenario: Scenario, tmp_path: Path,
                                                                   failfast: bool) -> None:
    """``read_in_driver`` (the CLI's path for an input that fits one
    partition) and the data source give the same rows, cell for cell, on
    every shared fixture and on a damaged log; with FAILFAST both refuse the
    damage with the same reason."""
    from kraft.tools.spark.rows import KraftReadError
    from kraft.tools.spark.source import read_in_driver

    damaged = copy_scenario(scenario, tmp_path / "node1")
    seg = damaged / "__cluster_metadata-0" / "00000000000000000946.log"
    os.truncate(seg, seg.stat().st_size - 5)
    inputs = [str(fixture_path()), str(damaged)]
    if failfast:
        with pytest.raises(KraftReadError, match="torn_tail") as refused:
            read_in_driver(spark, [str(damaged)], failfast=True)
        with pytest.raises(Exception, match="KraftReadError: torn_tail") as failed:
            load(spark, [damaged], mode="FAILFAST").count()
        assert str(refused.value).splitlines()[0] in str(failed.value)
        return
    via_tasks = load(spark, inputs, minPartitions=4)
    in_driver = read_in_driver(spark, inputs)
    assert in_driver.schema == via_tasks.schema
    order = ["file", "position", "offset"]
    expected = [r.asDict() for r in via_tasks.orderBy(*order).collect()]
    got = [r.asDict() for r in in_driver.orderBy(*order).collect()]
    assert len(got) == len(expected) > 80_000
    assert got == expected
    assert any(r["error_kind"] == "torn_tail" for r in got)
