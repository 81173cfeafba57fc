"""The leader's fast data-batch encoder writes exactly what the general
encoder writes for the same records (Kafka's raft ``BatchBuilder`` layout:
no key, no headers, one timestamp), and Kafka's reader agrees."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraft.records.batch import Compression, Record, build_batch, build_data_batch, decode_batches

values_strategy = st.lists(st.binary(max_size=300), min_size=1, max_size=60)


@given(
    values=values_strategy,
    base_offset=st.integers(0, 2**62),
    epoch=st.integers(0, 2**31 - 1),
    timestamp=st.integers(0, 2**50),
    compression=st.sampled_from([Compression.NONE, Compression.ZSTD, Compression.GZIP]),
)
def test_same_bytes_as_the_general_encoder(
    values: list[bytes], base_offset: int, epoch: int, timestamp: int, compression: Compression
) -> None:
    records = [Record(base_offset + i, timestamp, None, v) for i, v in enumerate(values)]
    expected = build_batch(records, base_offset=base_offset, partition_leader_epoch=epoch, compression=compression)
    assert build_data_batch(values, base_offset=base_offset, epoch=epoch, timestamp=timestamp,
                            compression=compression) == expected


@pytest.mark.parametrize("count", [1, 63, 64, 4095, 4096, 4097, 9000])
def test_offset_deltas_past_the_precomputed_heads(count: int) -> None:
    """Record i's offset delta is a varint that grows a byte at 64 and 8192."""
    values = [bytes([i % 256]) * (i % 7) for i in range(count)]
    data = build_data_batch(values, base_offset=10, epoch=2, timestamp=5)
    [(batch, records)] = decode_batches(data)
    assert batch.records_count == count and batch.last_offset_delta == count - 1
    assert [r.offset for r in records] == list(range(10, 10 + count))
    assert [r.value for r in records] == values
    assert {r.timestamp for r in records} == {5} and all(r.key is None and not r.headers for r in records)


def test_kafka_python_reads_it() -> None:
    from kafka.record.default_records import DefaultRecordBatch

    values = [b"v" * 100, b"", b"x" * 200]
    data = build_data_batch(values, base_offset=7, epoch=3, timestamp=1234)
    batch = DefaultRecordBatch(bytearray(data))
    assert batch.validate_crc()
    assert [(r.offset, r.timestamp, r.key, r.value) for r in batch] == [
        (7, 1234, None, b"v" * 100), (8, 1234, None, b""), (9, 1234, None, b"x" * 200)]
