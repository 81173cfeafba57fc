"""The report transformations on the scenario of tests/spark/synth.py, whose
events are known: each function must find exactly them."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.spark.synth import BASE_TS, HOUR_MS, Scenario


@pytest.fixture(scope="module")
def df(spark: Any, scenario: Scenario, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The scenario as two voters of one cluster (node1 and an identical node2)
    plus one directory without meta.properties (a copy taken off a node)."""
    from kraft.tools.spark.source import read

    root = tmp_path_factory.mktemp("report")
    shutil.copytree(scenario.log_dir, root / "node1")
    shutil.copytree(scenario.log_dir, root / "node2")
    (root / "node2" / "meta.properties").write_text(f"version=1\nnode.id=2\ncluster.id={scenario.cluster_id}\n")
    loose = root / "loose" / "__cluster_metadata-0"
    loose.parent.mkdir()
    shutil.copytree(scenario.partition_dir, loose)
    return read(spark, [str(root)]).cache()


def rows(result: Any, *order: str) -> list[dict[str, Any]]:
    return [r.asDict() for r in result.orderBy(*order).collect()]


def bucket_of_hour(hour: int) -> int:
    """Start of the (epoch-aligned) one-hour window holding the story's hour ``hour``."""
    t = BASE_TS + hour * HOUR_MS
    return t - t % HOUR_MS


def test_topic_events_once_per_cluster(df: Any, scenario: Scenario) -> None:
    from kraft.tools.spark.report import topic_events

    events = rows(topic_events(df).where(f"cluster = '{scenario.cluster_id}'"), "offset")
    assert [(e["topic_name"], e["event"], e["partitions"], e["partition_ids"], e["controller_id"]) for e in events] == [
        ("orders", "created", 3, [0, 1, 2], 1),
        ("orders", "partitions_added", 2, [3, 4], 2),
        ("payments", "created", 1, [0], 2),
        ("payments", "deleted", None, None, 2),
    ]
    # The directory without meta.properties is its own "cluster", named by its path.
    loose = topic_events(df).where("cluster like '%/loose/__cluster_metadata-0'").count()
    assert loose == 4


def test_topic_lifecycle(df: Any, scenario: Scenario) -> None:
    from kraft.tools.spark.report import topic_lifecycle

    topics = {r["topic_name"]: r for r in rows(topic_lifecycle(df).where(f"cluster = '{scenario.cluster_id}'"), "topic_name")}
    assert set(topics) == {"orders", "payments"}
    assert (topics["orders"]["partitions_at_creation"], topics["orders"]["partitions_added"], topics["orders"]["deleted"]) == (3, 2, None)
    assert topics["payments"]["deleted"] is not None and topics["payments"]["deleted"] > topics["payments"]["created"]


def test_partition_leadership(df: Any, scenario: Scenario) -> None:
    from kraft.tools.spark.report import leadership_over_time, partition_churn, partition_history

    mine = f"cluster = '{scenario.cluster_id}'"
    changes = rows(partition_history(df).where(mine).where("event = 'changed'"), "offset")
    assert [(c["partition_id"], c["leader"], c["leader_changed"], c["isr"]) for c in changes] == [
        (0, 2, True, [2, 3]),
        (1, None, False, [1, 2]),
        (2, 1, True, [1, 2]),
    ]
    assert {c["controller_id"] for c in changes} == {2}
    buckets = rows(leadership_over_time(df, "1 hour").where(mine), "start")
    assert [(int(b["start"].timestamp() * 1000), b["leader_changes"], b["isr_changes"]) for b in buckets] == [
        (bucket_of_hour(3), 1, 2),
        (bucket_of_hour(4), 1, 1),
    ]
    churn = {r["partition_id"]: (r["leader_changes"], r["isr_changes"]) for r in rows(partition_churn(df).where(mine), "partition_id")}
    assert churn == {0: (1, 1), 1: (0, 1), 2: (1, 1)}


def test_brokers_configs_features(df: Any, scenario: Scenario) -> None:
    from kraft.tools.spark.report import broker_events, config_changes, feature_changes

    mine = f"cluster = '{scenario.cluster_id}'"
    brokers = rows(broker_events(df).where(mine), "offset")
    assert [(b["broker_id"], b["event"], b["fenced"]) for b in brokers] == [
        (1, "registered", True), (2, "registered", True), (3, "registered", True),
        (1, "unfenced", False), (2, "unfenced", False), (3, "unfenced", False),
        (3, "fenced", True),
    ]
    assert brokers[0]["rack"] == "r1"
    configs = rows(config_changes(df).where(mine), "offset")
    assert [(c["resource_type"], c["resource_name"], c["config_name"], c["event"], c["config_value"], c["controller_id"])
            for c in configs] == [
        ("topic", "orders", "retention.ms", "set", "3600000", 1),
        ("topic", "orders", "retention.ms", "deleted", None, 2),
    ]
    features = rows(feature_changes(df).where(mine), "source", "offset")
    assert [(f["source"], f["feature_name"], f["feature_level"]) for f in features] == [
        ("bootstrap", "metadata.version", 21),
        ("log", "metadata.version", 21),
        ("log", "metadata.version", 22),
    ]


def test_snapshot_coverage(df: Any, scenario: Scenario) -> None:
    from kraft.tools.spark.report import problems, snapshot_coverage, snapshots

    coverage = rows(snapshot_coverage(df), "log_dir")
    assert len(coverage) == 3  # node1, node2, loose
    for c in coverage:
        assert (c["segments"], c["log_start_offset"], c["snapshots"], c["rebuildable"]) == (3, 0, 2, True)
        assert c["latest_snapshot"] == c["log_end_offset"] == c["latest_complete_snapshot"]
    snaps = rows(snapshots(df).where("log_dir like '%node1%'"), "snapshot_end_offset")
    assert [(s["has_header"], s["has_footer"], s["problems"]) for s in snaps] == [(True, True, 0), (True, True, 0)]
    assert snaps[-1]["last_contained_log_timestamp"] == BASE_TS + snaps[-1]["snapshot_end_offset"]
    assert problems(df).count() == 0


def test_a_log_that_starts_after_its_snapshots_is_not_rebuildable(spark: Any, scenario: Scenario, tmp_path: Path) -> None:
    from kraft.tools.spark.report import snapshot_coverage
    from kraft.tools.spark.source import read

    node = tmp_path / "node"
    shutil.copytree(scenario.log_dir, node)
    part = node / "__cluster_metadata-0"
    for snap in part.glob("*.checkpoint"):
        snap.unlink()
    (part / "00000000000000000000.log").unlink()
    (c,) = rows(snapshot_coverage(read(spark, [str(node)])), "log_dir")
    assert (c["segments"], c["log_start_offset"], c["snapshots"], c["rebuildable"]) == (2, 481, 0, False)


def test_leadership_chart_is_per_cluster_and_in_time_order() -> None:
    """The chart never mixes clusters and shows each one's buckets oldest first,
    whatever order the rows come in (pure: no Spark)."""
    from datetime import datetime, timedelta

    from kraft.tools.spark.spark_command import leadership_chart

    t0 = datetime(2026, 1, 1, 0, 0)
    rows = [
        {"cluster": c, "start": t0 + timedelta(hours=h), "leader_changes": h + 1, "isr_changes": 1}
        for c, hours in (("b", (2, 0, 1)), ("a", (5, 3, 4, 1)))
        for h in hours
    ]
    lines = leadership_chart(rows, "1 hour", limit=3)
    assert [line for line in lines if line.startswith("  cluster")] == [
        "  cluster a (last 3 of 4 buckets)", "  cluster b"]
    a = lines[: lines.index("  cluster b")]
    b = lines[lines.index("  cluster b"):]
    stamps_a = [line.split()[0] + " " + line.split()[1] for line in a if line.startswith("  2026")]
    stamps_b = [line.split()[0] + " " + line.split()[1] for line in b if line.startswith("  2026")]
    # leader chart then ISR chart, each oldest first; cluster a's oldest bucket (01:00) is cut by the limit
    assert stamps_a == ["2026-01-01 03:00", "2026-01-01 04:00", "2026-01-01 05:00"] * 2
    assert stamps_b == ["2026-01-01 00:00", "2026-01-01 01:00", "2026-01-01 02:00"] * 2


def test_kip1170_zero_checkpoint_levels_are_the_bootstrap_ones(spark: Any, tmp_path: Path) -> None:
    """KIP-1170 (Kafka 4.4): the initial feature levels are in the zero
    checkpoint, not in bootstrap.checkpoint (the directory is written by
    tests/tools/test_kip1170_layout.py's writer)."""
    from kraft.tools.spark.report import feature_changes
    from tests.tools.test_kip1170_layout import write_kip1170_directory

    log_dir = write_kip1170_directory(tmp_path / "meta", topic=None)
    df = spark.read.format("kraft").load(str(log_dir))
    got = sorted((r["source"], r["feature_name"], r["feature_level"]) for r in feature_changes(df).collect())
    assert got == [("bootstrap", "eligible.leader.replicas.version", 1), ("bootstrap", "group.version", 1),
                   ("bootstrap", "metadata.version", 27), ("bootstrap", "transaction.version", 2)]
