"""The .index and .timeindex files, as Kafka lays them out."""

from __future__ import annotations

import struct
from pathlib import Path

from kraft.records.index import OffsetIndex, TimeIndex
from kraft.records.batch import iter_batches
from tests.conftest import fixture_path


def test_kafka_index_maps_batch_last_offsets_to_positions() -> None:
    d = fixture_path("kafka-3.5-three-node", "node1", "__cluster_metadata-0")
    index = OffsetIndex(d / "00000000000000000000.index", 0)
    index.load()
    batches = {b.position: b for b in iter_batches((d / "00000000000000000000.log").read_bytes())}
    assert len(index) == 500
    assert index.sanity_check(2098481) is None
    for offset, position in index.entries:
        assert batches[position].last_offset == offset
    assert index.lookup(57) == (56, 4145)
    assert index.lookup(10) == (0, 0)
    time_index = TimeIndex(d / "00000000000000000000.timeindex", 0)
    time_index.load()
    assert len(time_index) == 501 and time_index.sanity_check(30638) is None
    assert time_index.last_entry == (1737560191478, 30637)


def test_append_truncate_reload(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "00000000000000000100.index", 100)
    index.open_for_append()
    for i in range(10):
        index.append(100 + i * 10, i * 1000)
    index.truncate_to(150)
    assert index.entries[-1] == (140, 4000)
    index.close()
    assert (tmp_path / "00000000000000000100.index").stat().st_size == 5 * 8
    again = OffsetIndex(tmp_path / "00000000000000000100.index", 100)
    again.load()
    assert again.entries == [(100 + i * 10, i * 1000) for i in range(5)]


def test_zero_filled_and_partial_tails_are_dropped(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(struct.pack(">iiii", 5, 4200, 9, 8400) + bytes(8 * 20) + b"\x01\x02\x03")
    index = OffsetIndex(path, 0)
    index.load()
    assert index.entries == [(5, 4200), (9, 8400)]
    assert index.dropped_tail_bytes == 3 and index.dropped_zero_entries == 20


def test_time_index_only_grows_in_timestamp(tmp_path: Path) -> None:
    index = TimeIndex(tmp_path / "00000000000000000000.timeindex", 0)
    index.open_for_append()
    index.maybe_append(100, 5)
    index.maybe_append(100, 9)  # not larger: skipped, as Kafka does
    index.maybe_append(150, 12)
    assert index.entries == [(100, 5), (150, 12)]
    assert index.lookup(120) == (100, 5)
    index.truncate_to(12)
    assert index.entries == [(100, 5)]
