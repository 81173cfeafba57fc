"""The chaos checker's own reader (:mod:`kraft.tools.bench.chaos.segments`)
on a metadata log written by kraft's real log, with one defect planted at a
time. Each defect is one kraft's recovery repairs or skips without a word
that matters to a run (``MetadataLog.open`` truncates a torn tail, ends the
log at a bad CRC, skips a snapshot that does not read), so a checker that
read the files through kraft would miss it; ours must name it. Where
Kafka's jars are installed, ``DumpLogSegments`` must see the same batches
as our reader on the healthy log (``kafka.tools.DumpLogSegments``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kraft.records.batch import build_data_batch
from kraft.records.control import leader_change_batch
from kraft.records.log import MetadataLog, metadata_partition_dir
from kraft.records.log_config import LogConfig
from kraft.records.view import OffsetAndEpoch
from kraft.tools.bench.chaos.checker import Sampler, chaos_ok, check, leaders_per_epoch
from kraft.tools.bench.chaos.kafka_dump import cross_check, locate_kafka_libs
from kraft.tools.bench.chaos.operations import Operations
from kraft.tools.bench.chaos.segments import NodeFiles, read_node_files
from tests.kafka.releases import unavailable

VALUES = [f"quickstart node=1 epoch=1 seq={i}".encode() for i in range(1, 13)]


def _write_log(root: Path) -> Path:
    """A node's metadata.log.dir: LeaderChange for epoch 1 (leader 1), twelve
    records in two segments, a snapshot at offset 4, and its quorum-state."""
    part = metadata_partition_dir(root)
    with MetadataLog.open(part, LogConfig(segment_bytes=600)) as log:
        log.initialize_leader_epoch(1)
        log.append_as_leader(leader_change_batch(base_offset=0, epoch=1, leader_id=1, voters=[1, 2, 3],
                                                 granting_voters=[1, 2], timestamp=0), epoch=1)
        for value in VALUES:
            log.append_as_leader(build_data_batch([value], base_offset=0, epoch=1, timestamp=0), epoch=1)
        log.flush()
        with log.create_snapshot(OffsetAndEpoch(4, 1), last_contained_log_timestamp=0) as writer:
            writer.append(VALUES[:3])
            writer.freeze()
    (part / "quorum-state").write_text(json.dumps({"leaderId": 1, "leaderEpoch": 1, "votedId": -1,
                                                   "appliedOffset": 0, "currentVoters": None,
                                                   "data_version": 0}))
    return root


@pytest.fixture
def node_dir(tmp_path: Path) -> Path:
    return _write_log(tmp_path / "node")


def _segments(root: Path) -> list[Path]:
    return sorted(metadata_partition_dir(root).glob("*.log"))


def _kraft_opens(root: Path) -> int:
    """kraft's own reader: the log end after its recovery (it does not refuse these files)."""
    with MetadataLog.open(metadata_partition_dir(root)) as log:
        return log.end_offset


def _only_problem(root: Path, *words: str) -> str:
    files = read_node_files(root)
    found = files.problems + ([f"torn tail: {files.torn_tail}"] if files.torn_tail else [])
    assert len(found) == 1 and all(w in found[0] for w in words), found
    return found[0]


def test_the_healthy_log_reads_whole_and_clean(node_dir: Path) -> None:
    files = read_node_files(node_dir)
    assert files.problems == [] and files.torn_tail is None
    assert [files.records[o] for o in range(1, 13)] == VALUES
    assert files.leaders == {1: {1}} and files.quorum_state == (1, 1)
    assert files.snapshot_offset == 4 and files.snapshot_records == VALUES[:3]
    assert files.end_offset == 13 and len(_segments(node_dir)) >= 2


def test_a_torn_tail_is_named(node_dir: Path) -> None:
    last = _segments(node_dir)[-1]
    last.write_bytes(last.read_bytes()[:-7])
    _only_problem(node_dir, "torn tail", last.name)
    assert _kraft_opens(node_dir) == 12  # kraft truncates the torn batch away


def test_a_bit_flip_in_a_committed_batch_is_named(node_dir: Path) -> None:
    first = _segments(node_dir)[0]
    data = bytearray(first.read_bytes())
    data[len(data) - 3] ^= 0x10  # inside the last record of the first segment
    first.write_bytes(bytes(data))
    _only_problem(node_dir, "CRC mismatch", first.name)


def test_a_batch_truncated_in_the_middle_of_the_log_is_named(node_dir: Path) -> None:
    first = _segments(node_dir)[0]
    first.write_bytes(first.read_bytes()[:-5])
    problems = read_node_files(node_dir).problems
    assert any("truncated batch" in p and first.name in p for p in problems), problems


def test_a_missing_segment_is_named(tmp_path: Path) -> None:
    root = tmp_path / "node"
    part = metadata_partition_dir(root)
    with MetadataLog.open(part, LogConfig(segment_bytes=300)) as log:
        log.initialize_leader_epoch(1)
        for value in VALUES:
            log.append_as_leader(build_data_batch([value], base_offset=0, epoch=1, timestamp=0), epoch=1)
        log.flush()
    segments = _segments(root)
    assert len(segments) >= 3
    segments[1].unlink()
    _only_problem(root, "a missing segment", segments[2].name)


def test_a_snapshot_with_a_bad_crc_is_named(node_dir: Path) -> None:
    snapshot = next(metadata_partition_dir(node_dir).glob("*.checkpoint"))
    data = bytearray(snapshot.read_bytes())
    data[-10] ^= 0x01
    snapshot.write_bytes(bytes(data))
    _only_problem(node_dir, "CRC mismatch", snapshot.name)


def test_two_leaders_for_one_epoch_in_quorum_state_or_leader_change_fail(tmp_path: Path) -> None:
    a, b = _write_log(tmp_path / "a"), _write_log(tmp_path / "b")
    # Node b's quorum-state says node 2 led epoch 1, which node a's LeaderChange gives to node 1.
    state = metadata_partition_dir(b) / "quorum-state"
    state.write_text(state.read_text().replace('"leaderId": 1', '"leaderId": 2'))
    files = {1: read_node_files(a), 2: read_node_files(b), 3: read_node_files(a)}
    assert leaders_per_epoch(files, Sampler()) == {1: {1, 2}}
    result = check(Operations.acknowledged([]), files, {1, 2, 3}, Sampler())
    assert result["two_leaders_in_an_epoch"] == {1: [1, 2]} and not chaos_ok(result)
    # A second LeaderChange for epoch 1 naming node 3, inside one log.
    part = metadata_partition_dir(tmp_path / "c")
    shutil.copytree(metadata_partition_dir(a), part)
    with MetadataLog.open(part) as log:
        log.append_as_leader(leader_change_batch(base_offset=0, epoch=1, leader_id=3, voters=[1, 2, 3],
                                                 granting_voters=[3, 2], timestamp=0), epoch=1)
        log.flush()
    _only_problem(tmp_path / "c", "LeaderChange records name leaders [1, 3] for epoch 1")


def test_a_corrupt_file_fails_the_run(node_dir: Path) -> None:
    last = _segments(node_dir)[-1]
    last.write_bytes(last.read_bytes()[:-7])
    files = {n: read_node_files(node_dir) for n in (1, 2, 3)}
    result = check(Operations.acknowledged([]), files, {1, 2, 3}, Sampler())
    assert set(result["files_corrupt"]) == {1, 2, 3} and not chaos_ok(result)


def test_dump_log_segments_reads_the_batches_ours_reads(node_dir: Path, tmp_path: Path) -> None:
    if locate_kafka_libs() is None or shutil.which("java") is None:
        unavailable("no Kafka jars or no java: DumpLogSegments cannot run here")  # CI=true: a failure
    files: dict[int, NodeFiles] = {1: read_node_files(node_dir)}
    said, disagree = cross_check({1: node_dir}, files)
    assert said.startswith("DumpLogSegments") and disagree == {}, (said, disagree)
    assert said.endswith("1 snapshots")
    # A batch only ours reads (a planted one) is a disagreement, in the segments or the snapshot.
    files[1].batches[99] = (99, 0)
    assert cross_check({1: node_dir}, files)[1][1][0].startswith("segments: DumpLogSegments reads 0 batches")
    del files[1].batches[99]
    files[1].snapshot_batches.add((9, 9, 0))
    assert cross_check({1: node_dir}, files)[1][1][0].startswith("snapshot 00000000000000000004-")


def test_the_reader_imports_nothing_of_kraft() -> None:
    """The checker's reader shares no code with kraft: not one import of a kraft module."""
    import ast

    import kraft.tools.bench.chaos.segments as segments

    tree = ast.parse(Path(segments.__file__).read_text())
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert "kafka.record.default_records" in names
    assert not [n for n in names if n.split(".")[0] in ("kraft", "records", "wire", "messages")], names
