"""Acceptance on real Kafka files (fixtures/): every batch decodes
with a valid CRC, every record to a known type and version, and re-encoding
reproduces the original bytes exactly; ``kraft dump-log`` runs on all of them."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from kraft.records.batch import decode_batches, iter_batches, reencode
from kraft.records.control import ControlRecordType, decode_control_record, encode_control_value
from kraft.records.metadata import decode_metadata_record, encode_metadata_record, metadata_payload_json
from kraft.records.snapshot import validate_snapshot_bytes
from kraft.tools.dump_log import run_dump
from tests.conftest import fixture_path


def _fixture_files() -> list[Path]:
    root = fixture_path()
    # Only metadata-log files: a broker's directory also holds topic partitions
    # (alpha-0/, __consumer_offsets-11/) whose records are not metadata records.
    files = sorted(p for p in [*root.rglob("*.log"), *root.rglob("*.checkpoint")]
                   if p.parent.name == "__cluster_metadata-0" or p.name == "bootstrap.checkpoint")
    assert files, "no .log or .checkpoint files under fixtures/"
    return files


@pytest.fixture(scope="module")
def fixture_files() -> list[Path]:
    return _fixture_files()


def test_every_batch_decodes_with_valid_crc_and_reencodes_exactly(fixture_files: list[Path]) -> None:
    total_batches = total_records = 0
    for path in fixture_files:
        data = path.read_bytes()
        end = 0
        for batch, records in decode_batches(data):  # raises on any CRC mismatch
            assert batch.is_valid(), f"{path} batch at {batch.position}"
            assert len(records) == batch.records_count
            assert reencode(batch) == bytes(batch.data), f"{path}: batch at position {batch.position} re-encodes differently"
            total_batches += 1
            total_records += len(records)
            end = batch.end_position
        assert end == len(data), f"{path}: {len(data) - end} trailing bytes"
    assert total_batches > 50_000 and total_records > 80_000


def test_every_record_has_a_known_type_and_version(fixture_files: list[Path]) -> None:
    seen_metadata: set[tuple[str, int]] = set()
    seen_control: set[ControlRecordType] = set()
    for path in fixture_files:
        for batch, records in decode_batches(path.read_bytes()):
            for record in records:
                where = f"{path} offset {record.offset}"
                if batch.is_control:
                    control = decode_control_record(record)
                    assert control.type is not ControlRecordType.UNKNOWN, where
                    assert encode_control_value(control.message) == record.value, where
                    seen_control.add(control.type)
                else:
                    decoded = decode_metadata_record(record.value)
                    cls = type(decoded.message)
                    assert cls.LOWEST_VERSION <= decoded.version <= cls.HIGHEST_VERSION, where
                    assert encode_metadata_record(decoded.message, decoded.version) == record.value, where
                    payload = metadata_payload_json(record.value)
                    assert payload["type"].endswith("_RECORD") and payload["version"] == decoded.version
                    seen_metadata.add((decoded.type_name, decoded.version))
    assert {ControlRecordType.LEADER_CHANGE, ControlRecordType.SNAPSHOT_HEADER, ControlRecordType.SNAPSHOT_FOOTER,
            ControlRecordType.KRAFT_VERSION, ControlRecordType.KRAFT_VOTERS} <= seen_control
    assert {name for name, _ in seen_metadata} >= {"TOPIC_RECORD", "PARTITION_RECORD", "NO_OP_RECORD", "FEATURE_LEVEL_RECORD"}


def test_every_snapshot_is_header_records_footer(fixture_files: list[Path]) -> None:
    for path in fixture_files:
        if path.suffix == ".checkpoint":
            contents = validate_snapshot_bytes(path.read_bytes(), str(path))
            assert contents.header.version == 0
            assert contents.footer.version == 0


def test_dynamic_quorum_bootstrap_snapshot_carries_the_voter() -> None:
    path = fixture_path("kafka-4.1-standalone-dynamic", "__cluster_metadata-0",
                       "00000000000000000000-0000000000.checkpoint")
    contents = validate_snapshot_bytes(path.read_bytes(), str(path))
    assert contents.kraft_version.k_raft_version == 1
    [voter] = contents.voters.voters
    assert voter.voter_id == 1
    assert [(e.name, e.host, e.port) for e in voter.endpoints] == [("CONTROLLER", "localhost", 9093)]


def test_dump_log_runs_on_every_fixture_file(fixture_files: list[Path]) -> None:
    out, err = io.StringIO(), io.StringIO()
    status = run_dump([str(p) for p in fixture_files], metadata_decoder=True, out=out, err=err)
    assert status == 0, err.getvalue()
    text = out.getvalue()
    batches = sum(1 for p in fixture_files for _ in iter_batches(p.read_bytes()))
    assert text.count("\nbaseOffset: ") + text.startswith("baseOffset: ") == batches
    assert "isvalid: false" not in text
    assert "Error at" not in text
    assert "invalid bytes" not in text
