"""The v2 record batch codec: layout, attributes, records, headers, and bad bytes."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from kraft.records.batch import (
    HEADER_SIZE,
    Record,
    RecordBatch,
    TimestampType,
    build_batch,
    decode_batches,
    decode_records,
    iter_batches,
    reencode,
)
from kraft.records.compression import Compression
from kraft.records.errors import CorruptRecordError, CrcMismatchError, TruncatedBatchError
from kraft.records.varint import read_varint, read_varlong, uvarint, varint
from tests.records.helpers import BASE_TS, make_batch


def test_header_layout_matches_kafka_default_record_batch() -> None:
    records = [Record(10, BASE_TS, b"k", b"value"), Record(11, BASE_TS + 5, None, b"v2")]
    data = build_batch(records, base_offset=10, partition_leader_epoch=7)
    base_offset, length, epoch, magic, crc, attributes = struct.unpack_from(">qiibIh", data)
    assert (base_offset, length, epoch, magic, attributes) == (10, len(data) - 12, 7, 2, 0)
    # CRC32C covers attributes to the end of the batch.
    assert crc == crc32c(data[21:])
    last_offset_delta, base_ts, max_ts, pid, pepoch, bseq, count = struct.unpack_from(">iqqqhii", data, 23)
    assert (last_offset_delta, base_ts, max_ts, pid, pepoch, bseq, count) == (1, BASE_TS, BASE_TS + 5, -1, -1, -1, 2)
    assert len(data) > HEADER_SIZE


def test_record_layout_zigzag_varints() -> None:
    data = build_batch([Record(0, BASE_TS, None, b"ab")], base_offset=0)
    record = data[HEADER_SIZE:]
    # length 8 | attributes 0 | ts delta 0 | offset delta 0 | key -1 | value len 2 | "ab" | 0 headers
    assert record == bytes([16, 0, 0, 0, 1, 4]) + b"ab" + b"\x00"


def test_attributes_decode() -> None:
    data = build_batch(
        [Record(5, BASE_TS, b"k", b"v")],
        base_offset=5,
        compression=Compression.ZSTD,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        is_transactional=True,
        is_control=True,
        max_timestamp=BASE_TS + 99,
    )
    batch = RecordBatch.parse(data)
    assert batch.compression is Compression.ZSTD
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert batch.is_transactional and batch.is_control
    assert batch.delete_horizon_ms is None
    # LogAppendTime: every record reports the batch's max timestamp (Kafka semantics).
    assert [r.timestamp for r in batch.records()] == [BASE_TS + 99]


def test_delete_horizon_uses_base_timestamp() -> None:
    data = build_batch([Record(0, BASE_TS, b"k", None)], base_offset=0, delete_horizon_ms=BASE_TS - 1000)
    batch = RecordBatch.parse(data)
    assert batch.has_delete_horizon and batch.delete_horizon_ms == BASE_TS - 1000
    assert batch.records()[0].timestamp == BASE_TS
    assert reencode(batch) == data


def test_headers_and_null_values_round_trip() -> None:
    records = [
        Record(0, BASE_TS, None, None, [("a", b"1"), ("b", None), ("ü", b"")]),
        Record(1, BASE_TS - 3, b"", b"x" * 300, []),
    ]
    data = build_batch(records, base_offset=0)
    decoded = RecordBatch.parse(data).records()
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in decoded] == [
        (0, BASE_TS, None, None, (("a", b"1"), ("b", None), ("ü", b""))),
        (1, BASE_TS - 3, b"", b"x" * 300, ()),
    ]
    assert reencode(RecordBatch.parse(data)) == data


@pytest.mark.parametrize("codec", list(Compression))
def test_every_codec_round_trips(codec: Compression) -> None:
    data = make_batch(100, 50, compression=codec)
    batch = RecordBatch.parse(data)
    assert batch.compression is codec
    assert batch.is_valid()
    assert [r.offset for r in batch.records()] == list(range(100, 150))
    [(batch2, records)] = list(decode_batches(data))
    assert records == batch.records()


def test_sequence_numbers_wrap_like_kafka() -> None:
    data = build_batch([Record(i, BASE_TS, None, b"v") for i in range(3)], base_offset=0, base_sequence=2**31 - 2)
    batch = RecordBatch.parse(data)
    assert batch.last_sequence == 0
    assert [batch.record_sequence(r) for r in batch.records()] == [2**31 - 2, 2**31 - 1, 0]


def test_iter_batches_is_header_only_and_positions_are_absolute() -> None:
    data = make_batch(0, 2) + make_batch(2, 3) + make_batch(5, 1)
    batches = list(iter_batches(data))
    assert [(b.base_offset, b.last_offset) for b in batches] == [(0, 1), (2, 4), (5, 5)]
    assert batches[1].position == batches[0].size_in_bytes
    assert bytes(batches[2].data) == make_batch(5, 1)


def test_crc_mismatch_detected() -> None:
    data = bytearray(make_batch(0, 2))
    data[-3] ^= 0x10
    batch = RecordBatch.parse(bytes(data))
    assert not batch.is_valid()
    with pytest.raises(CrcMismatchError) as info:
        list(decode_batches(bytes(data)))
    assert info.value.position == 0


def test_truncated_batch_reports_position() -> None:
    data = make_batch(0) + make_batch(1)[:-5]
    with pytest.raises(TruncatedBatchError) as info:
        list(iter_batches(data))
    assert info.value.position == len(make_batch(0))


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d[:8] + struct.pack(">i", 3) + d[12:], "below the minimum"),
        (lambda d: d[:16] + b"\x01" + d[17:], "magic"),
        (lambda d: d[:8], "fewer than"),
    ],
)
def test_structural_damage_is_a_typed_error(mutate, message: str) -> None:
    data = mutate(make_batch(0))
    with pytest.raises(CorruptRecordError, match=message):
        list(iter_batches(data))


def test_record_count_larger_than_data_is_rejected_without_looping() -> None:
    data = bytearray(make_batch(0, 1))
    struct.pack_into(">i", data, 57, 2**31 - 1)
    with pytest.raises(CorruptRecordError, match="does not fit"):
        RecordBatch.parse(bytes(data)).records()


def test_record_length_mismatch_is_rejected() -> None:
    records = build_batch([Record(0, BASE_TS, None, b"abc")], base_offset=0)
    section = bytearray(records[HEADER_SIZE:])
    section[0] = 16  # claims 8 bytes, holds 9 (length 9 is zigzag 18)
    with pytest.raises(CorruptRecordError, match="record size"):
        decode_records(bytes(section), 1, 0, BASE_TS)


def test_trailing_bytes_after_records_are_rejected() -> None:
    section = build_batch([Record(0, BASE_TS, None, b"abc")], base_offset=0)[HEADER_SIZE:] + b"\x00"
    with pytest.raises(CorruptRecordError, match="unconsumed"):
        decode_records(section, 1, 0, BASE_TS)


def test_negative_key_length_other_than_minus_one_is_rejected() -> None:
    section = bytes([14, 0, 0, 0, 3, 4]) + b"ab" + b"\x00"  # key length -2
    with pytest.raises(CorruptRecordError, match="key size"):
        decode_records(section, 1, 0, BASE_TS)


def test_varints() -> None:
    for value in (0, 1, -1, 63, -64, 64, 300, -300, 2**31 - 1, -(2**31)):
        assert read_varint(varint(value), 0) == (value, len(varint(value)))
    assert read_varlong(varint(-(2**63)), 0)[0] == -(2**63)
    assert uvarint(300) == b"\xac\x02"
    with pytest.raises(CorruptRecordError):
        read_varint(b"\xff\xff\xff\xff\xff\xff", 0)


_record = st.builds(
    lambda k, v, h, dt: (k, v, h, dt),
    st.one_of(st.none(), st.binary(max_size=40)),
    st.one_of(st.none(), st.binary(max_size=300)),
    st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=8))), max_size=3),
    st.integers(-(2**40), 2**40),
)


@settings(max_examples=150, deadline=None)
@given(
    base_offset=st.integers(0, 2**50),
    epoch=st.integers(-1, 2**31 - 1),
    specs=st.lists(_record, min_size=1, max_size=20),
    codec=st.sampled_from(list(Compression)),
)
def test_round_trip_property(base_offset: int, epoch: int, specs: list, codec: Compression) -> None:
    records = [Record(base_offset + i, BASE_TS + dt, k, v, h) for i, (k, v, h, dt) in enumerate(specs)]
    data = build_batch(records, base_offset=base_offset, partition_leader_epoch=epoch, compression=codec)
    batch = RecordBatch.parse(data)
    assert batch.is_valid()
    decoded = batch.records()
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in decoded] == [
        (r.offset, r.timestamp, r.key, r.value, r.headers) for r in records
    ]
    assert reencode(batch) == data


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=400))
def test_garbage_never_crashes_the_reader(data: bytes) -> None:
    try:
        for batch, records in decode_batches(data):
            assert len(records) == batch.records_count
    except CorruptRecordError:
        pass
    except Exception as exc:  # the codec errors are typed too
        from kraft.records.errors import RecordsError

        assert isinstance(exc, RecordsError), repr(exc)
