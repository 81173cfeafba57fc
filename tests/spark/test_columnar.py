"""The columnar reader (what the data source hands Spark) against the tuple
reader it replaced, kept as the oracle: the same Arrow batches, cell for
cell, on every shared fixture, on damaged input, with failfast and with
pushed filters."""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

import pytest

from kraft.records.batch import Record, build_batch, iter_batches
from kraft.records.compression import Compression
from kraft.records.varint import uvarint
from kraft.tools.spark import columnar
from kraft.tools.spark import plan as P
from kraft.tools.spark.pushdown import Pushed, push
from kraft.tools.spark.rows import KraftReadError, arrow_schema, iter_rows
from tests.conftest import fixture_path
from tests.spark.conftest import copy_scenario
from tests.spark.synth import Scenario, value
from tests.spark.test_pushdown import CASES, EqualTo, In


@pytest.fixture(autouse=True)
def _arrow(pyarrow_needed: None) -> None:
    """Every test here builds Arrow batches."""


def oracle(splits: list[P.FileSplit], **kwargs: Any) -> Any:
    """The tuple path: rows as tuples, one ``pa.array`` per column."""
    import pyarrow as pa

    schema = arrow_schema()
    rows = list(iter_rows(splits, **kwargs))
    columns = list(zip(*rows, strict=True)) or [[] for _ in schema]
    return pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, schema, strict=True)], schema=schema)


def columnar_table(splits: list[P.FileSplit], **kwargs: Any) -> Any:
    import pyarrow as pa

    batches = list(columnar.read_splits(splits, **kwargs))
    assert all(b.schema.equals(arrow_schema()) for b in batches)
    return pa.Table.from_batches(batches, schema=arrow_schema())


def assert_same(paths: list[Path | str], *, pushed: Pushed | None = None, batch_rows: int = 8192, **plan: Any) -> int:
    planned = P.plan([str(p) for p in paths], **plan)
    splits = [s for part in planned.partitions for s in part]
    expected = oracle(splits, pushed=pushed)
    got = columnar_table(splits, pushed=pushed, batch_rows=batch_rows)
    assert got.num_rows == expected.num_rows
    for name in expected.column_names:
        assert got.column(name).to_pylist() == expected.column(name).to_pylist(), name
    return got.num_rows


def _cold_memo() -> None:
    columnar._memo.clear()
    columnar._sections.clear()


@pytest.mark.parametrize("memo", ["cold", "warm"])
def test_every_shared_fixture(memo: str) -> None:
    root = fixture_path()
    if memo == "cold":
        _cold_memo()
    files = P.discover([str(root)])
    total = sum(assert_same([f.path]) for f in files)
    assert total > 80_000 and len(files) > 30


def test_small_arrow_batches_and_split_files(scenario: Scenario) -> None:
    assert assert_same([scenario.log_dir], batch_rows=7) > 0
    planned = P.plan([str(scenario.log_dir)])
    splits = [s for f in planned.files for s in P.split_file(f, 4096)]
    assert len(splits) > len(planned.files)
    import pyarrow as pa

    got = pa.Table.from_batches(list(columnar.read_splits(splits, batch_rows=100)), schema=arrow_schema())
    assert got.equals(oracle(splits))
    assert max(b.num_rows for b in columnar.read_splits(splits, batch_rows=100)) <= 100


def test_every_codec_and_kind(scenario: Scenario) -> None:
    assert assert_same([scenario.log_dir]) > 0


@pytest.mark.parametrize("types", [("TOPIC_RECORD",), ("PARTITION_CHANGE_RECORD", "LEADER_CHANGE"), ("NO_OP_RECORD",)])
def test_a_type_filter_on_every_codec_kind_and_split(scenario: Scenario, types: tuple[str, ...]) -> None:
    """The type-filtered scan of a sound split (the walk, then the batches
    that may hold a wanted record picked with array operations) keeps what
    the batch-by-batch scan keeps: compressed and control batches always, an
    uncompressed one when a wanted frame prefix lies in its records section,
    on whole files and on files cut into small splits."""
    pushed = push([In(("record_type",), types)])
    _cold_memo()
    assert assert_same([scenario.log_dir], pushed=pushed) > 0
    planned = P.plan([str(scenario.log_dir)])
    splits = [s for f in planned.files for s in P.split_file(f, 4096)]
    assert len(splits) > len(planned.files)
    import pyarrow as pa

    got = pa.Table.from_batches(list(columnar.read_splits(splits, pushed=pushed)), schema=arrow_schema())
    assert got.equals(oracle(splits, pushed=pushed))
    assert got.num_rows > 0 and set(got.column("record_type").to_pylist()) <= set(types)


def _segment(log_dir: Path, name: str = "00000000000000000481.log") -> Path:
    return log_dir / "__cluster_metadata-0" / name


def test_torn_tail(tmp_path: Path, scenario: Scenario) -> None:
    seg = _segment(copy_scenario(scenario, tmp_path / "n"))
    os.truncate(seg, seg.stat().st_size - 10)
    assert assert_same([seg]) > 1
    with pytest.raises(KraftReadError, match="torn_tail"):
        list(columnar.read_splits(P.plan([str(seg)]).partitions[0], failfast=True))


def test_crc_mismatch(tmp_path: Path, scenario: Scenario) -> None:
    seg = _segment(copy_scenario(scenario, tmp_path / "n"))
    data = bytearray(seg.read_bytes())
    victim = list(iter_batches(bytes(data)))[5]
    data[victim.position + 34] ^= 0x01
    seg.write_bytes(bytes(data))
    _cold_memo()
    assert assert_same([seg]) > 0
    assert assert_same([seg]) > 0  # with the sections memoised: the CRC is still checked
    with pytest.raises(KraftReadError, match="crc_mismatch"):
        list(columnar.read_splits(P.plan([str(seg)]).partitions[0], failfast=True))


def test_structural_corruption(tmp_path: Path, scenario: Scenario) -> None:
    seg = _segment(copy_scenario(scenario, tmp_path / "n"))
    data = bytearray(seg.read_bytes())
    victim = list(iter_batches(bytes(data)))[10]
    data[victim.position + 16] = 7  # magic
    seg.write_bytes(bytes(data))
    assert assert_same([seg]) > 1
    with pytest.raises(KraftReadError, match="corrupt_batch"):
        list(columnar.read_splits(P.plan([str(seg)]).partitions[0], failfast=True))


def _raw_log(path: Path, values: list[bytes], **kwargs: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    records = [Record(i, 1_700_000_000_000 + i, None, v) for i, v in enumerate(values)]
    path.write_bytes(build_batch(records, base_offset=0, partition_leader_epoch=1, **kwargs))
    return path


@pytest.mark.parametrize("compression", [Compression.NONE, Compression.ZSTD])
def test_unknown_types_newer_versions_and_bad_records(tmp_path: Path, compression: Compression) -> None:
    unknown = uvarint(1) + uvarint(999) + uvarint(0) + b"\x01\x02"
    newer = uvarint(1) + uvarint(2) + uvarint(99) + b"\x00"
    garbled = uvarint(1) + uvarint(2) + uvarint(0) + b"\xff"
    seg = _raw_log(tmp_path / "__cluster_metadata-0" / "00000000000000000000.log",
                   [unknown, newer, garbled, value("NoOpRecord", 0)], compression=compression)
    assert assert_same([seg]) == 4
    assert assert_same([seg]) == 4
    with pytest.raises(KraftReadError, match="unknown_record_type"):
        list(columnar.read_splits(P.plan([str(seg)]).partitions[0], failfast=True))


def test_records_that_do_not_decode(tmp_path: Path) -> None:
    from crc32c import crc32c

    seg = _raw_log(tmp_path / "__cluster_metadata-0" / "00000000000000000000.log", [value("NoOpRecord", 0)] * 3)
    data = bytearray(seg.read_bytes())
    struct.pack_into(">i", data, 57, 5)  # recordsCount says 5, the batch holds 3
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    seg.write_bytes(bytes(data))
    assert assert_same([seg]) == 1


def test_log_append_time_batches(tmp_path: Path) -> None:
    """A LogAppendTime batch's records all carry its maxTimestamp (the
    section memo must not mix such a batch up with a CreateTime one)."""
    from kraft.records.batch import TimestampType

    d = tmp_path / "__cluster_metadata-0"
    d.mkdir(parents=True)
    records = [Record(0, 1_700_000_000_000, None, value("NoOpRecord", 0))]
    data = build_batch(records, base_offset=0, partition_leader_epoch=1)
    data += build_batch([Record(1, 1_700_000_000_000, None, value("NoOpRecord", 0))], base_offset=1,
                        partition_leader_epoch=1, timestamp_type=TimestampType.LOG_APPEND_TIME,
                        max_timestamp=1_800_000_000_000)
    (d / "00000000000000000000.log").write_bytes(data)
    assert assert_same([d]) == 2


def test_unreadable_files_and_mixed_clusters(tmp_path: Path, scenario: Scenario) -> None:
    copy_scenario(scenario, tmp_path / "a")
    b = copy_scenario(scenario, tmp_path / "b")
    (b / "meta.properties").write_text("version=1\nnode.id=7\ncluster.id=clusterB\n")
    os.symlink(tmp_path / "gone", _segment(b, "00000000000000099999.log"))
    assert assert_same([tmp_path, tmp_path / "missing-dir"], expected_cluster_id=scenario.cluster_id) > 0


def test_unknown_control_types(tmp_path: Path) -> None:
    seg = tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"
    seg.parent.mkdir(parents=True)
    record = Record(0, 1_700_000_000_000, struct.pack(">hh", 0, 42), b"future")
    seg.write_bytes(build_batch([record], base_offset=0, partition_leader_epoch=3, is_control=True))
    assert assert_same([seg]) == 1


@pytest.mark.parametrize(("filters", "keep"), CASES)
def test_pushed_filters(filters: list[Any], keep: Any) -> None:
    root = fixture_path("kafka-4.0-real")
    _cold_memo()
    assert assert_same([root], pushed=push(filters)) > 0
    assert assert_same([root], pushed=push(filters)) > 0


def test_a_type_filter_neither_decodes_nor_checks_batches_it_drops(tmp_path: Path, scenario: Scenario) -> None:
    """A batch with no record of a wanted type contributes no row, so it is
    not decoded and its CRC is not checked: a damaged NoOp batch is not
    reported when only TOPIC_RECORDs are asked for (and is without a filter)."""
    seg = tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"
    seg.parent.mkdir(parents=True)
    noop = bytearray(build_batch([Record(0, 1, None, value("NoOpRecord", 0))], base_offset=0, partition_leader_epoch=1))
    noop[-1] ^= 0xFF  # inside the records: the CRC no longer matches
    seg.write_bytes(bytes(noop))
    _cold_memo()
    pushed = push([EqualTo(("record_type",), "TOPIC_RECORD")])
    assert pushed.record_types == {"TOPIC_RECORD"}
    assert list(columnar.read_splits(P.plan([str(seg)]).partitions[0], pushed=pushed, failfast=True)) == []
    with pytest.raises(KraftReadError, match="crc_mismatch|bad_record|corrupt_batch"):
        list(columnar.read_splits(P.plan([str(seg)]).partitions[0], failfast=True))


def test_the_memo_stays_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(columnar, "MEMO_MAX_ENTRIES", 5)
    seg = _raw_log(tmp_path / "__cluster_metadata-0" / "00000000000000000000.log",
                   [value("FeatureLevelRecord", 0, name=f"f{i}", feature_level=i) for i in range(40)])
    _cold_memo()
    assert assert_same([seg]) == 40
    assert len(columnar._memo) <= 5 and len(columnar._sections) <= 5


@pytest.mark.parametrize("damage", ["torn_tail", "magic", "crc"])
def test_a_type_filter_on_damaged_files(tmp_path: Path, scenario: Scenario, damage: str) -> None:
    """The filtered scan finds the same structure as the full one: rows past
    the damage are not read, and failfast still fails on it."""
    seg = _segment(copy_scenario(scenario, tmp_path / "n"))
    data = bytearray(seg.read_bytes())
    victim = list(iter_batches(bytes(data)))[4]
    if damage == "torn_tail":
        data = data[:-10]
    elif damage == "magic":
        data[victim.position + 16] = 7
    else:
        data[victim.position + 34] ^= 0x01
    seg.write_bytes(bytes(data))
    for types in (("TOPIC_RECORD",), ("PARTITION_CHANGE_RECORD", "LEADER_CHANGE")):
        _cold_memo()
        pushed = push([In(("record_type",), types)])
        assert_same([seg], pushed=pushed)
    full = oracle(P.plan([str(seg)]).partitions[0])
    assert full.column("error_kind").null_count < full.num_rows  # the damage is there to be found
    if damage != "crc":  # a CRC is checked only on batches that contribute rows
        with pytest.raises(KraftReadError):
            list(columnar.read_splits(P.plan([str(seg)]).partitions[0], failfast=True,
                                      pushed=push([EqualTo(("record_type",), "PARTITION_CHANGE_RECORD")])))


def test_the_bulk_read_pauses_the_cyclic_collector_and_restores_it(scenario: Scenario,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A sound split is read with the cyclic collector paused (its passes
    over the memos found nothing), and it is back on afterwards, also when
    the read fails; a collector the caller turned off stays off."""
    import gc

    seen: list[bool] = []
    inner = columnar._read_split_in_bulk

    def spy(*args: Any) -> Any:
        seen.append(gc.isenabled())
        return inner(*args)

    monkeypatch.setattr(columnar, "_read_split_in_bulk", spy)
    _cold_memo()
    assert gc.isenabled()
    assert assert_same([scenario.log_dir]) > 0
    assert seen and not any(seen) and gc.isenabled()

    def broken(*args: Any) -> Any:
        raise OSError("disk gone")

    monkeypatch.setattr(columnar, "_read_split_in_bulk", broken)
    with pytest.raises(OSError):
        list(columnar.read_splits(P.plan([str(scenario.log_dir)]).partitions[0]))
    assert gc.isenabled()
    gc.disable()
    try:
        monkeypatch.setattr(columnar, "_read_split_in_bulk", inner)
        assert list(columnar.read_splits(P.plan([str(scenario.log_dir)]).partitions[0]))
        assert not gc.isenabled()
    finally:
        gc.enable()
