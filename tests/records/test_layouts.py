"""The construct declarations of ``kraft.records.layouts`` agree with the
hand-written decoders on every fixture: batch headers (``batch.HEADER``),
``.index``/``.timeindex`` entries (``records.index``), and producer-state
``.snapshot`` files read as Kafka's ``ProducerStateManager.readSnapshot`` reads them."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest
from crc32c import crc32c

from kraft.records.batch import HEADER, iter_batches
from kraft.records.index import OffsetIndex, TimeIndex
from kraft.records.layouts import (
    PRODUCER_SNAPSHOT,
    CorruptProducerSnapshotError,
    batch_attributes,
    batch_header,
    offset_index_entries,
    read_producer_snapshot,
    time_index_entries,
)
from kraft.tools.dump_log import run_dump
from tests.conftest import fixture_path


def _files(*patterns: str) -> list[Path]:
    root = fixture_path()
    files = sorted(p for pattern in patterns for p in root.rglob(pattern))
    assert files, f"no {patterns} under {root}"
    return files


def test_batch_header_declaration_matches_the_hot_path_parser() -> None:
    checked = 0
    for path in _files("*.log", "*.checkpoint"):
        data = path.read_bytes()
        for batch in iter_batches(data):
            fields = HEADER.unpack_from(data, batch.position)
            assert batch_header(data, batch.position) == fields
            bits = batch_attributes(batch.attributes)
            assert bits["is_control"] == batch.is_control
            assert bits["is_transactional"] == batch.is_transactional
            assert bits["compression"] == batch.attributes & 0x07
            assert bits["has_delete_horizon"] == batch.has_delete_horizon
            checked += 1
    assert checked > 50_000


def test_index_entry_declarations_match_the_index_readers() -> None:
    for path in _files("*.index"):
        data = path.read_bytes()
        index = OffsetIndex(path, base_offset=int(path.name.split(".")[0]))
        index.load()
        declared = offset_index_entries(data)
        assert declared == list(struct.iter_unpack(">ii", data[: len(data) // 8 * 8]))
        # the reader drops a zero-filled tail; the declared entries hold it
        assert [(index.base_offset + r, p) for r, p in declared[: len(index)]] == index.entries
    for path in _files("*.timeindex"):
        data = path.read_bytes()
        declared_t = time_index_entries(data)
        assert declared_t == list(struct.iter_unpack(">qi", data[: len(data) // 12 * 12]))
        tindex = TimeIndex(path, base_offset=int(path.name.split(".")[0]))
        tindex.load()
        base = tindex.base_offset
        assert [(ts, base + r) for ts, r in declared_t[: len(tindex)]] == tindex.entries


def test_producer_snapshots_of_every_fixture() -> None:
    files = _files("*.snapshot")
    producers = {}
    for path in files:
        data = path.read_bytes()
        parsed = PRODUCER_SNAPSHOT.parse(data)
        entries = read_producer_snapshot(data)
        assert parsed.version == 1 and parsed.count == len(entries)
        assert parsed.crc == crc32c(data[6:])
        for entry in entries:
            producers[path.parent.name] = entry
    # kafka-4.0-real broker4: the idempotent producer wrote 20 records to alpha-0, 30 to beta-1
    assert producers["alpha-0"].last_offset == 19 and producers["alpha-0"].first_sequence == 0
    assert producers["beta-1"].last_sequence == 29 and producers["beta-1"].producer_id == 1


def test_producer_snapshot_dump_is_kafkas_line(tmp_path: Path) -> None:
    src = fixture_path("kafka-4.0-real", "broker4", "beta-1", "00000000000000000030.snapshot")
    out, err = io.StringIO(), io.StringIO()
    assert run_dump([str(src)], out=out, err=err) == 0
    # DumpLogSegments.dumpProducerIdSnapshot
    assert out.getvalue() == (
        f"Dumping {src}\n"
        "producerId: 1 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty "
        "lastTimestamp: 1795572445099 firstSequence: 0 lastSequence: 29 lastOffset: 29 offsetDelta: 29 "
        "timestamp: 1795572445099\n"
    )
    empty = fixture_path("kafka-4.0-real", "controller1", "__cluster_metadata-0", "00000000000000000514.snapshot")
    out = io.StringIO()
    assert run_dump([str(empty)], out=out, err=err) == 0
    assert out.getvalue() == f"Dumping {empty}\n"
    # A corrupt one: Kafka prints CorruptSnapshotException's message and goes on.
    bad = tmp_path / "00000000000000000030.snapshot"
    data = bytearray(src.read_bytes())
    data[20] ^= 0xFF
    bad.write_bytes(bytes(data))
    out, err = io.StringIO(), io.StringIO()
    assert run_dump([str(bad)], out=out, err=err) == 0
    assert err.getvalue().startswith("Snapshot is corrupt (CRC is no longer valid). Stored crc: ")
    with pytest.raises(CorruptProducerSnapshotError, match="unknown file version 7"):
        read_producer_snapshot(b"\x00\x07" + bytes(data[2:]))
