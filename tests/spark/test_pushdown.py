"""Filter pushdown of the kraft data source: what a filter keeps is read,
the rest is not decoded, and the rows kept are exactly those the filter
would keep from an unfiltered read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kraft.tools.spark import plan as P
from kraft.tools.spark.pushdown import Pushed, push
from kraft.tools.spark.rows import COLUMN_NAMES, iter_rows
from tests.conftest import fixture_path


@dataclass
class EqualTo:  # the shape of pyspark.sql.datasource's filters (matched by class name)
    attribute: tuple[str, ...]
    value: Any


@dataclass
class In:
    attribute: tuple[str, ...]
    value: tuple[Any, ...]


@dataclass
class GreaterThanOrEqual:
    attribute: tuple[str, ...]
    value: Any


@dataclass
class LessThan:
    attribute: tuple[str, ...]
    value: Any


@dataclass
class StringContains:
    attribute: tuple[str, ...]
    value: Any


def test_filters_fold_into_what_a_read_keeps() -> None:
    p = push([EqualTo(("record_type",), "TOPIC_RECORD"), GreaterThanOrEqual(("offset",), 10), LessThan(("offset",), 20),
              StringContains(("payload",), "x")])
    assert p.record_types == {"TOPIC_RECORD"}
    assert (p.offset_min, p.offset_max) == (10, 19)
    assert p.keeps_batch(5, 10, False) and not p.keeps_batch(20, 30, False) and not p.keeps_batch(0, 9, False)
    assert not p.keeps_batch(10, 12, True)  # no control type asked for: control batches are skipped
    both = push([In(("cluster_id",), ("a", "b")), EqualTo(("cluster_id",), "b")])
    assert both.cluster_ids == {"b"} and both.keeps_file("b", 1, "/x", "segment") and not both.keeps_file("a", 1, "/x", "segment")
    assert push([EqualTo(("cluster_id",), "a"), EqualTo(("cluster_id",), "b")]).unsatisfiable
    assert push([StringContains(("payload",), "x")]) == Pushed()


def _rows(paths: list[str], pushed: Pushed | None) -> list[dict[str, Any]]:
    planned = P.plan(paths)
    return [dict(zip(COLUMN_NAMES, r, strict=True)) for part in planned.partitions for r in iter_rows(part, pushed=pushed)]


CASES = [
    pytest.param([EqualTo(("record_type",), "TOPIC_RECORD")], lambda r: r["record_type"] == "TOPIC_RECORD", id="record_type"),
    pytest.param([In(("record_type",), ("LEADER_CHANGE", "PARTITION_CHANGE_RECORD"))],
                 lambda r: r["record_type"] in ("LEADER_CHANGE", "PARTITION_CHANGE_RECORD"), id="record_type-in-control"),
    pytest.param([GreaterThanOrEqual(("offset",), 100), LessThan(("offset",), 400)],
                 lambda r: r["offset"] is not None and 100 <= r["offset"] < 400, id="offset-range"),
    pytest.param([EqualTo(("file_kind",), "snapshot")], lambda r: r["file_kind"] == "snapshot", id="file_kind"),
    pytest.param([EqualTo(("cluster_id",), "brgVtKD0R96cRtz7KMV87g")],
                 lambda r: r["cluster_id"] == "brgVtKD0R96cRtz7KMV87g", id="cluster_id"),
]


@pytest.mark.parametrize(("filters", "keep"), CASES)
def test_pushed_read_equals_filtered_full_read(filters: list[Any], keep: Any) -> None:
    root = fixture_path("kafka-4.0-real")
    everything = _rows([str(root)], None)
    expected = [r for r in everything if keep(r)]
    assert expected, "the case must keep some rows to mean anything"
    assert len(expected) < len(everything)
    assert _rows([str(root)], push(filters)) == expected


def test_a_file_filter_does_not_open_other_files(tmp_path: Path) -> None:
    root = fixture_path("kafka-4.0-real", "controller1")
    files = [f.path for f in P.discover([str(root)])]
    wanted = files[0]
    pushed = push([EqualTo(("file",), wanted)])
    rows = _rows([str(root)], pushed)
    assert rows and {r["file"] for r in rows} == {wanted}


def test_spark_query_with_pushed_filters_matches_the_unfiltered_answer(spark: Any) -> None:
    from kraft.tools.spark.source import read

    root = str(fixture_path("kafka-4.0-real"))
    df = read(spark, [root])
    pushed_df = read(spark, [root], pushdown="true")
    full = {(r["file"], r["offset"]) for r in df.select("file", "offset", "record_type").collect()
            if r["record_type"] == "TOPIC_RECORD"}
    filtered = pushed_df.where("record_type = 'TOPIC_RECORD' AND offset >= 0")
    got = {(r["file"], r["offset"]) for r in filtered.select("file", "offset").collect()}
    assert got == full and got


def test_without_the_option_two_scans_of_one_dataframe_keep_their_own_rows(spark: Any) -> None:
    """PySpark 4.3 shares pushed filters between scans of one DataFrame; by
    default nothing is pushed, so a union of two differently filtered scans
    (what the report's snapshot coverage does) keeps both sides."""
    from pyspark.sql import functions as F

    from kraft.tools.spark.source import read

    df = read(spark, [str(fixture_path("kafka-4.0-real", "controller1"))])
    kinds = (df.where(F.col("file_kind") == "segment").select("file_kind")
             .unionByName(df.where(F.col("file_kind") == "snapshot").select("file_kind")).distinct().collect())
    assert sorted(r["file_kind"] for r in kinds) == ["segment", "snapshot"]


def test_a_type_filter_plans_larger_partitions_unless_max_partition_bytes_is_given(tmp_path: Path) -> None:
    """Under a pushed ``record_type`` filter most batches are hopped over
    undecoded, and a 16 MiB task is mostly a Spark task's fixed cost: the
    default becomes ``FILTERED_MAX_PARTITION_BYTES``. A ``maxPartitionBytes``
    the caller gave is kept, filter or not; so is the default without a
    type filter (an offset range still decodes what it keeps)."""
    from kraft.tools.spark.bench import synthesize_controller_log
    from kraft.tools.spark.source import SCHEMA, KraftPushdownReader

    segment = tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"
    segment.parent.mkdir()
    synthesize_controller_log(segment, 40 * 1024 * 1024)

    def reader(filters: list[Any], **options: str) -> KraftPushdownReader:
        r = KraftPushdownReader({"path": str(segment), "pushdown": "true", **options}, SCHEMA)
        list(r.pushFilters(filters))
        return r

    by_type = [EqualTo(("record_type",), "TOPIC_RECORD")]
    by_offset = [GreaterThanOrEqual(("offset",), 100)]
    assert reader(by_type).planned_partition_bytes() == P.FILTERED_MAX_PARTITION_BYTES
    assert len(reader(by_type).partitions()) == 1
    assert len(reader([]).partitions()) == 3 == len(reader(by_offset).partitions())
    assert reader(by_offset).planned_partition_bytes() == P.DEFAULT_MAX_PARTITION_BYTES
    given = reader(by_type, maxPartitionBytes="8m")
    assert given.planned_partition_bytes() == 8 * 1024 * 1024 and len(given.partitions()) == 5
