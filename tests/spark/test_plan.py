"""Planning the kraft data source: discovery, cluster ids, splits at batch
boundaries (from the index or a header scan), packing. No Spark needed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kraft.records.batch import iter_batches
from kraft.tools.spark import plan as P
from tests.conftest import fixture_path
from tests.spark.conftest import copy_scenario
from tests.spark.synth import Scenario


def test_importing_kraft_never_imports_pyspark() -> None:
    code = (
        "import sys, kraft.cli, kraft.tools.spark.spark_command, kraft.tools.spark.plan, kraft.tools.spark.bench;"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'pyarrow')];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_discovers_segments_snapshots_and_bootstrap_of_real_kafka_dirs() -> None:
    root = fixture_path("kafka-3.9-single-node")
    files = P.discover([str(root)])
    names = [Path(f.path).name for f in files]
    # Kafka's leftovers are not metadata: the renamed .deleted snapshot, the
    # producer-state .snapshot files, the *-offset-checkpoint files.
    assert not any(n.endswith((".deleted", ".snapshot", "-checkpoint")) for n in names)
    kinds = {f.kind for f in files}
    assert kinds == {P.SEGMENT, P.SNAPSHOT, P.BOOTSTRAP}
    assert names.count("bootstrap.checkpoint") == 2
    assert {f.cluster_id for f in files} == {"5L6g3nShT-eMCtK--X86sw"}
    assert {f.node_id for f in files} == {1}
    snap = next(f for f in files if Path(f.path).name == "00000000000000048752-0000000002.checkpoint")
    assert (snap.snapshot_end_offset, snap.snapshot_epoch) == (48752, 2)
    assert all(not f.problems for f in files)


def test_other_topics_logs_are_not_metadata(tmp_path: Path, scenario: Scenario) -> None:
    log_dir = copy_scenario(scenario, tmp_path / "node")
    other = log_dir / "orders-0"
    other.mkdir()
    (other / "00000000000000000000.log").write_bytes(b"\0" * 100)
    paths = {Path(f.path).name for f in P.discover([str(tmp_path)])}
    assert "orders-0" not in {Path(f.path).parent.name for f in P.discover([str(tmp_path)])}
    assert "00000000000000000481.log" in paths


def test_a_kept_quickstart_s_text_logs_are_not_segments(tmp_path: Path, scenario: Scenario) -> None:
    """``kraft quickstart --keep`` leaves node-N.log (each node's text output)
    beside metadata-N/: read as segments they gave torn-tail rows and, having
    no meta.properties, a second "cluster" (issue 33)."""
    copy_scenario(scenario, tmp_path / "metadata-1")
    (tmp_path / "node-1.log").write_text("[2026-11-27 13:00:00,000] INFO started (kraft.node)\n")
    (tmp_path / "00000000000000000000.log").write_bytes(
        (scenario.partition_dir / "00000000000000000000.log").read_bytes())  # a segment's own name still counts
    files = P.discover([str(tmp_path)])
    names = [Path(f.path).name for f in files]
    assert "node-1.log" not in names and names.count("00000000000000000000.log") == 2, names
    assert set(P.cluster_counts([f for f in files if Path(f.path).parent != tmp_path])) == {scenario.cluster_id}
    (named,) = P.discover([str(tmp_path / "node-1.log")])  # named on the command line: read as asked
    assert Path(named.path).name == "node-1.log"


def test_globs_files_and_missing_paths(scenario: Scenario, tmp_path: Path) -> None:
    pattern = str(scenario.partition_dir / "*.log")
    files = P.discover([pattern, str(tmp_path / "nope")])
    assert [Path(f.path).suffix for f in files[:-1]] == [".log"] * 3
    missing = files[-1]
    assert missing.problems[0].kind == P.UNREADABLE_FILE and "no such file" in missing.problems[0].message
    index = scenario.partition_dir / "00000000000000000000.index"
    (bad,) = P.discover([str(index)])
    assert bad.problems[0].kind == P.UNSUPPORTED_FILE and not bad.readable


def test_meta_properties_problems_and_expected_cluster(tmp_path: Path, scenario: Scenario) -> None:
    a = copy_scenario(scenario, tmp_path / "a")
    b = copy_scenario(scenario, tmp_path / "b")
    (b / "meta.properties").write_text("version=1\nnode.id=2\ncluster.id=otherCluster\n")
    files = P.discover([str(tmp_path)], expected_cluster_id=scenario.cluster_id)
    of_a = [f for f in files if f.path.startswith(str(a))]
    of_b = [f for f in files if f.path.startswith(str(b))]
    assert all(f.readable and f.cluster_id == scenario.cluster_id for f in of_a)
    assert all(f.problems[0].kind == P.CLUSTER_MISMATCH and not f.readable for f in of_b)
    assert "otherCluster" in of_b[0].problems[0].message
    (b / "meta.properties").write_text("version=1\nnode.id=x\n")
    files = P.discover([str(b)])
    assert all(f.cluster_id is None and f.problems[0].kind == P.META_PROPERTIES and f.readable for f in files)


def test_cluster_counts(tmp_path: Path, scenario: Scenario) -> None:
    copy_scenario(scenario, tmp_path / "a")
    b = copy_scenario(scenario, tmp_path / "b")
    (b / "meta.properties").write_text("version=1\nnode.id=2\ncluster.id=otherCluster\n")
    loose = copy_scenario(scenario, tmp_path / "c")
    (loose / "meta.properties").unlink()
    files = P.discover([str(tmp_path), str(tmp_path / "missing")])
    n = len(scenario.files)
    assert P.cluster_counts(files) == {scenario.cluster_id: n, "otherCluster": n, None: n}
    assert P.cluster_counts(P.discover([str(tmp_path / "a")])) == {scenario.cluster_id: n}


def test_a_dangling_file_is_unreadable_not_fatal(tmp_path: Path, scenario: Scenario) -> None:
    log_dir = copy_scenario(scenario, tmp_path / "n")
    os.symlink(tmp_path / "gone", log_dir / "__cluster_metadata-0" / "00000000000000099999.log")
    files = P.discover([str(log_dir)])
    (gone,) = [f for f in files if f.path.endswith("99999.log")]
    assert gone.problems[0].kind == P.UNREADABLE_FILE and not gone.readable


def _batch_starts(path: Path) -> set[int]:
    return {b.position for b in iter_batches(path.read_bytes())}


@pytest.mark.parametrize("index", ["kept", "deleted", "garbage", "short"])
def test_large_segments_split_at_batch_starts(tmp_path: Path, scenario: Scenario, index: str) -> None:
    log_dir = copy_scenario(scenario, tmp_path / "n")
    segment = log_dir / "__cluster_metadata-0" / "00000000000000000000.log"
    index_path = segment.with_suffix(".index")
    if index == "deleted":
        index_path.unlink()
    elif index == "short":
        # An index behind its log (a copy taken while the broker appended):
        # its entries cut the start, a header scan cuts the rest.
        os.truncate(index_path, 16)
    elif index == "garbage":
        # Entries that point into the middle of batches: the plan must notice.
        index_path.write_bytes(b"".join((i * 3).to_bytes(4, "big") + (i * 977 + 5).to_bytes(4, "big") for i in range(1, 20)))
    (file,) = P.discover([str(segment)])
    splits = P.split_file(file, 4096)
    assert len(splits) >= 3
    assert splits[0].start == 0 and splits[-1].end == file.size
    assert all(a.end == b.start for a, b in zip(splits, splits[1:]))
    assert {s.start for s in splits} <= _batch_starts(segment)
    largest_batch = max(b.size_in_bytes for b in iter_batches(segment.read_bytes()))
    assert max(s.length for s in splits) < 4096 + largest_batch  # even splits, not one big tail
    assert [s.first for s in splits] == [True] + [False] * (len(splits) - 1)
    assert [s.last for s in splits] == [False] * (len(splits) - 1) + [True]


def test_index_cuts_are_used_when_they_match(scenario: Scenario) -> None:
    segment = scenario.partition_dir / "00000000000000000000.log"
    (file,) = P.discover([str(segment)])
    cuts = P._cuts_from_index(file, 4096)
    assert cuts and set(cuts) <= _batch_starts(segment)


def test_packing_keeps_order_and_size() -> None:
    f = P.SourceFile("/x", P.SEGMENT, 100)
    splits = [P.FileSplit(f, i * 10, i * 10 + 10) for i in range(10)]
    parts = P.pack(splits, max_bytes=35, open_cost=5)
    assert [s for p in parts for s in p] == splits
    assert all(sum(s.length + 5 for s in p) <= 35 for p in parts)
    assert P.pack([P.FileSplit(f, 0, 100)], max_bytes=35) == [[P.FileSplit(f, 0, 100)]]


def test_plan_spreads_small_inputs_over_min_partitions(scenario: Scenario) -> None:
    planned = P.plan([str(scenario.log_dir)], min_partitions=4)
    assert planned.split_bytes == P.MIN_SPLIT_BYTES  # the scenario is small: never cut below 1 MiB
    assert [s.file.path for p in planned.partitions for s in p] == [f.path for f in planned.files]
    assert P.target_split_bytes(10 * 2**30, max_partition_bytes=64 * 2**20, min_partitions=2) == 64 * 2**20
    assert P.target_split_bytes(100 * 2**20, max_partition_bytes=64 * 2**20, min_partitions=4) == 25 * 2**20


def test_sizes() -> None:
    assert P.parse_size("64m") == 64 * 2**20
    assert P.parse_size("512k") == 512 * 1024
    assert P.parse_size("1g") == 2**30
    assert P.parse_size("2MiB") == 2 * 2**20
    assert P.parse_size("4096") == 4096
    with pytest.raises(P.PlanError, match="not a byte size"):
        P.parse_size("lots")
    with pytest.raises(P.PlanError, match="no input path"):
        P.plan([])
