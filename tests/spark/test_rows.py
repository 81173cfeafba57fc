"""Rows of the kraft data source, built in this process (no Spark): they must
agree with ``kraft dump-log --json`` record for record, and damaged input
must become error rows, never a silent skip."""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

import pytest

from kraft.records.batch import Record, build_batch, iter_batches
from kraft.records.compression import Compression
from kraft.records.varint import uvarint
from kraft.tools.spark import plan as P
from kraft.tools.spark.rows import COLUMN_NAMES, KraftReadError, iter_rows
from tests.conftest import fixture_path
from tests.spark.agree import dump_log_records, row_records, sort_key
from tests.spark.conftest import copy_scenario
from tests.spark.synth import ORDERS, Scenario, value


def rows_of(paths: list[Path | str], **kwargs: Any) -> list[dict[str, Any]]:
    planned = P.plan([str(p) for p in paths], **kwargs)
    return [dict(zip(COLUMN_NAMES, r, strict=True)) for part in planned.partitions for r in iter_rows(part)]


def metadata_files(root: Path) -> list[Path]:
    return [Path(f.path) for f in P.discover([str(root)])]


def assert_agree(paths: list[Path], rows: list[dict[str, Any]]) -> int:
    expected = sorted(dump_log_records(paths), key=sort_key)
    got = sorted(row_records(rows), key=sort_key)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g == e, (g, e)
    return len(got)


def test_real_kafka_files_agree_with_dump_log() -> None:
    root = fixture_path()
    files = metadata_files(root)
    rows = rows_of([root])
    assert all(r["error_kind"] is None for r in rows)
    n = assert_agree(files, rows)
    assert n > 80_000  # every real segment and snapshot, not a sample


def test_synthesized_log_with_every_codec_agrees_with_dump_log(scenario: Scenario) -> None:
    rows = rows_of([scenario.log_dir])
    assert {r["compression"] for r in rows} == {"none", "gzip", "snappy", "lz4", "zstd"}
    assert {r["file_kind"] for r in rows} == {"segment", "snapshot", "bootstrap"}
    assert len({r["file"] for r in rows if r["file_kind"] == "segment"}) == 3
    assert assert_agree(scenario.files, rows) == len(rows)


def test_splitting_changes_nothing(scenario: Scenario) -> None:
    whole = rows_of([scenario.log_dir])
    planned = P.plan([str(scenario.log_dir)])
    splits = [s for f in planned.files for s in P.split_file(f, 4096)]
    assert len(splits) > len(planned.files)
    split_rows = [dict(zip(COLUMN_NAMES, r)) for r in iter_rows(splits)]
    assert split_rows == whole


def test_columns_of_a_record(scenario: Scenario) -> None:
    rows = rows_of([scenario.log_dir])
    topic = next(r for r in rows if r["record_type"] == "TOPIC_RECORD" and r["file_kind"] == "segment")
    assert topic["cluster_id"] == scenario.cluster_id and topic["node_id"] == 1
    assert topic["record_type_id"] == 2 and topic["record_version"] == 0 and not topic["is_control"]
    assert topic["topic_name"] == "orders" and topic["topic_id"] == "XyscPgAAQACAAAAAAACgAQ"
    assert topic["payload"] == '{"type":"TOPIC_RECORD","version":0,"data":{"name":"orders","topicId":"XyscPgAAQACAAAAAAACgAQ"}}'
    assert topic["value"] == value("TopicRecord", 0, name="orders", topic_id=ORDERS)
    leader = next(r for r in rows if r["record_type"] == "LEADER_CHANGE")
    assert leader["is_control"] and leader["record_type_id"] == 2 and leader["partition_leader_epoch"] == 1
    assert leader["payload"].startswith('{"version":0,"leaderId":1,')
    changes = [r for r in rows if r["record_type"] == "PARTITION_CHANGE_RECORD" and r["file_kind"] == "segment"]
    assert [(c["partition_id"], c["leader"], c["isr"]) for c in changes] == [(0, 2, [2, 3]), (1, -2, [1, 2]), (2, 1, [1, 2])]
    fenced = next(r for r in rows if r["record_type"] == "BROKER_REGISTRATION_CHANGE_RECORD")
    assert (fenced["broker_id"], fenced["fenced"], fenced["in_controlled_shutdown"]) == (3, True, None)
    configs = [(r["resource_type"], r["resource_name"], r["config_name"], r["config_value"])
               for r in rows if r["record_type"] == "CONFIG_RECORD" and r["file_kind"] == "segment"]
    assert configs == [(2, "orders", "retention.ms", "3600000"), (2, "orders", "retention.ms", None)]
    features = [r["feature_level"] for r in rows if r["record_type"] == "FEATURE_LEVEL_RECORD" and r["file_kind"] == "segment"]
    assert features == [21, 22]
    snap = next(r for r in rows if r["file_kind"] == "snapshot")
    assert snap["record_type"] == "SNAPSHOT_HEADER" and snap["snapshot_epoch"] in (1, 2)


def test_arrow_batches_carry_the_declared_schema(scenario: Scenario, pyarrow_needed: None) -> None:
    from kraft.tools.spark.rows import arrow_schema, read_splits

    planned = P.plan([str(scenario.log_dir)])
    batches = [b for part in planned.partitions for b in read_splits(part, batch_rows=100)]
    assert all(b.schema.equals(arrow_schema()) for b in batches)
    assert max(b.num_rows for b in batches) == 100
    assert sum(b.num_rows for b in batches) == len(rows_of([scenario.log_dir]))


# --- damaged input ---------------------------------------------------------------------------


def _segment(log_dir: Path, name: str = "00000000000000000481.log") -> Path:
    return log_dir / "__cluster_metadata-0" / name


def test_torn_tail(tmp_path: Path, scenario: Scenario) -> None:
    log_dir = copy_scenario(scenario, tmp_path / "n")
    seg = _segment(log_dir)
    os.truncate(seg, seg.stat().st_size - 10)
    rows = rows_of([seg])
    problem = rows[-1]
    assert problem["error_kind"] == "torn_tail" and problem["offset"] is None
    last_start = max(b.position for b in iter_batches(_segment(scenario.log_dir).read_bytes()))
    assert problem["position"] == last_start
    assert f"invalid bytes at the end of {seg}" in problem["error"]
    assert_agree([seg], rows)
    with pytest.raises(KraftReadError, match="torn_tail"):
        list(iter_rows(P.plan([str(seg)]).partitions[0], failfast=True))


def test_crc_mismatch_rows_are_flagged(tmp_path: Path, scenario: Scenario) -> None:
    log_dir = copy_scenario(scenario, tmp_path / "n")
    seg = _segment(log_dir)
    data = bytearray(seg.read_bytes())
    victim = list(iter_batches(bytes(data)))[5]
    data[victim.position + 34] ^= 0x01  # the low byte of baseTimestamp: covered by the CRC
    seg.write_bytes(bytes(data))
    rows = rows_of([seg])
    bad = [r for r in rows if r["position"] == victim.position]
    assert len(bad) == victim.records_count
    assert all(r["error_kind"] == "crc_mismatch" and r["crc_valid"] is False for r in bad)
    assert all(f"stored {victim.crc}" in r["error"] for r in bad)
    assert all(r["error_kind"] is None for r in rows if r["position"] != victim.position)
    assert_agree([seg], rows)


def test_structural_corruption_stops_the_file_with_a_row(tmp_path: Path, scenario: Scenario) -> None:
    log_dir = copy_scenario(scenario, tmp_path / "n")
    seg = _segment(log_dir)
    data = bytearray(seg.read_bytes())
    victim = list(iter_batches(bytes(data)))[10]
    data[victim.position + 16] = 7  # magic
    seg.write_bytes(bytes(data))
    rows = rows_of([seg])
    assert rows[-1]["error_kind"] == "corrupt_batch" and rows[-1]["position"] == victim.position
    assert "unsupported magic 7" in rows[-1]["error"] and f"{len(data) - victim.position} bytes" in rows[-1]["error"]
    assert max(r["offset"] for r in rows if r["offset"] is not None) == victim.base_offset - 1
    assert_agree([seg], rows)


def _raw_log(path: Path, values: list[bytes], **kwargs: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    records = [Record(i, 1_700_000_000_000, None, v) for i, v in enumerate(values)]
    path.write_bytes(build_batch(records, base_offset=0, partition_leader_epoch=1, **kwargs))
    return path


def test_unknown_types_and_newer_versions_are_kept_raw(tmp_path: Path) -> None:
    unknown = uvarint(1) + uvarint(999) + uvarint(0) + b"\x01\x02"
    newer = uvarint(1) + uvarint(2) + uvarint(99) + b"\x00"
    garbled = uvarint(1) + uvarint(2) + uvarint(0) + b"\xff"
    seg = _raw_log(tmp_path / "__cluster_metadata-0" / "00000000000000000000.log",
                   [unknown, newer, garbled, value("NoOpRecord", 0)], compression=Compression.ZSTD)
    rows = rows_of([seg])
    assert [r["offset"] for r in rows] == [0, 1, 2, 3]
    assert (rows[0]["record_type"], rows[0]["record_type_id"], rows[0]["error_kind"]) == (None, 999, "unknown_record_type")
    assert rows[0]["value"] == unknown and "Unknown metadata id 999" in rows[0]["error"]
    assert (rows[1]["record_type"], rows[1]["record_version"], rows[1]["error_kind"]) == ("TOPIC_RECORD", 99, "unsupported_version")
    assert rows[1]["value"] == newer and rows[1]["payload"] is None
    assert (rows[2]["record_type"], rows[2]["error_kind"]) == ("TOPIC_RECORD", "bad_record")
    assert rows[3]["error_kind"] is None and rows[3]["record_type"] == "NO_OP_RECORD"
    assert_agree([seg], rows)
    with pytest.raises(KraftReadError, match="unknown_record_type"):
        list(iter_rows(P.plan([str(seg)]).partitions[0], failfast=True))


def test_records_that_do_not_decode_make_one_batch_row(tmp_path: Path) -> None:
    from crc32c import crc32c

    seg = _raw_log(tmp_path / "__cluster_metadata-0" / "00000000000000000000.log", [value("NoOpRecord", 0)] * 3)
    data = bytearray(seg.read_bytes())
    struct.pack_into(">i", data, 57, 5)  # recordsCount says 5, the batch holds 3
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))  # and the CRC agrees
    seg.write_bytes(bytes(data))
    (row,) = rows_of([seg])
    assert row["error_kind"] == "corrupt_batch" and row["offset"] is None
    assert (row["batch_base_offset"], row["batch_last_offset"], row["crc_valid"]) == (0, 2, True)
    assert "cannot decode the records" in row["error"]
    assert_agree([seg], [row])


def test_unreadable_files_are_rows_and_the_rest_is_read(tmp_path: Path, scenario: Scenario) -> None:
    log_dir = copy_scenario(scenario, tmp_path / "n")
    os.symlink(tmp_path / "gone", _segment(log_dir, "00000000000000099999.log"))
    rows = rows_of([log_dir, tmp_path / "missing-dir"])
    problems = [r for r in rows if r["error_kind"] is not None]
    assert sorted(r["error_kind"] for r in problems) == ["unreadable_file", "unreadable_file"]
    assert any(r["file"].endswith("99999.log") for r in problems)
    assert len(rows) - len(problems) == len(rows_of([scenario.log_dir]))


def test_mixed_clusters(tmp_path: Path, scenario: Scenario) -> None:
    copy_scenario(scenario, tmp_path / "a")
    b = copy_scenario(scenario, tmp_path / "b")
    (b / "meta.properties").write_text("version=1\nnode.id=7\ncluster.id=clusterB\n")
    rows = rows_of([tmp_path])
    assert {(r["cluster_id"], r["node_id"]) for r in rows} == {(scenario.cluster_id, 1), ("clusterB", 7)}
    expected = rows_of([tmp_path], expected_cluster_id=scenario.cluster_id)
    mismatched = [r for r in expected if r["cluster_id"] == "clusterB"]
    assert {r["error_kind"] for r in mismatched} == {"cluster_mismatch"}
    assert len(mismatched) == len(scenario.files)  # one row per file, no records


def test_unknown_control_types_are_flagged_and_kept(tmp_path: Path) -> None:
    seg = tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"
    seg.parent.mkdir(parents=True)
    record = Record(0, 1_700_000_000_000, struct.pack(">hh", 0, 42), b"future")
    seg.write_bytes(build_batch([record], base_offset=0, partition_leader_epoch=3, is_control=True))
    (row,) = rows_of([seg])
    assert (row["record_type"], row["record_type_id"], row["error_kind"]) == ("UNKNOWN", 42, "unknown_record_type")
    assert row["value"] == b"future" and row["key"] == struct.pack(">hh", 0, 42) and row["is_control"]
    assert_agree([seg], [row])  # dump-log prints it as controlType UNKNOWN too
