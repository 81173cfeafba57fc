"""The v2 record batch (magic 2), Kafka's ``DefaultRecordBatch``.

Layout (big-endian, 61-byte header)::

    baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8
    crc uint32 (CRC32C of attributes..end) | attributes int16 | lastOffsetDelta int32
    baseTimestamp int64 | maxTimestamp int64 | producerId int64 | producerEpoch int16
    baseSequence int32 | recordsCount int32 | records...

Attributes: bits 0-2 compression, bit 3 timestamp type (LogAppendTime),
bit 4 transactional, bit 5 control, bit 6 delete horizon (then baseTimestamp is
the delete horizon).

Each record::

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint
    keyLength varint | key | valueLength varint | value
    headerCount varint | [keyLength varint | key | valueLength varint | value]

Decoding is split in two so tools that only need headers never touch records:
:func:`iter_batches` parses 61-byte headers without copying; :meth:`RecordBatch.records`
decompresses and decodes records on demand; :func:`decode_batches` does both in
one loop for readers that want everything. The record loop is hand-written
with the one- and two-byte varint cases inlined: it is the hot path of every
log read. A declarative layout was measured and lost: construct's compiled
parser takes ~5.3 us for the 61-byte header alone, ``struct.unpack_from``
~0.16 us, so construct is not used here.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterable, Iterator, Sequence
from operator import itemgetter
from typing import Any

from crc32c import crc32c

from kraft.records.compression import Compression, compress, decompress
from kraft.records.errors import CorruptRecordError, CrcMismatchError, TruncatedBatchError
from kraft.records.varint import read_uvarint, size_of_varint, uvarint, varint

MAGIC_V2 = 2

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: the bytes not counted by batchLength
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD  # 49

BATCH_LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
RECORDS_OFFSET = HEADER_SIZE

_PREFIX = struct.Struct(">qi")  # baseOffset, batchLength
_EPOCH_AND_MAGIC = struct.Struct(">ib")
_CRC = struct.Struct(">I")
_ATTR_TO_END = struct.Struct(">hiqqqhii")  # attributes .. recordsCount, for encoding

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40

NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

_MIN_RECORD_SIZE = 7  # one byte each: length, attributes, ts delta, offset delta, key len, value len, header count


class TimestampType(enum.IntEnum):
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1

    def __str__(self) -> str:  # Kafka's TimestampType.toString
        return "CreateTime" if self is TimestampType.CREATE_TIME else "LogAppendTime"


class Record(tuple):
    """One record of a v2 batch; an immutable tuple, cheap to create in bulk.

    ``offset`` and ``timestamp`` are absolute, with Kafka's semantics (in a
    LogAppendTime batch every record's timestamp is the batch's
    maxTimestamp). ``timestamp_delta`` keeps the stored delta so that a decoded
    batch re-encodes to its exact original bytes; ``None`` for records built by
    hand, whose delta is computed from ``timestamp``.
    """

    __slots__ = ()

    offset: int = property(itemgetter(0))  # type: ignore[assignment]
    timestamp: int = property(itemgetter(1))  # type: ignore[assignment]
    key: bytes | None = property(itemgetter(2))  # type: ignore[assignment]
    value: bytes | None = property(itemgetter(3))  # type: ignore[assignment]
    headers: tuple[tuple[str, bytes | None], ...] = property(itemgetter(4))  # type: ignore[assignment]
    attributes: int = property(itemgetter(5))  # type: ignore[assignment]
    timestamp_delta: int | None = property(itemgetter(6))  # type: ignore[assignment]

    def __new__(
        cls,
        offset: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Iterable[tuple[str, bytes | None]] = (),
        attributes: int = 0,
        timestamp_delta: int | None = None,
    ) -> Record:
        return tuple.__new__(cls, (offset, timestamp, key, value, tuple(headers), attributes, timestamp_delta))

    @property
    def key_size(self) -> int:
        return -1 if self[2] is None else len(self[2])

    @property
    def value_size(self) -> int:
        return -1 if self[3] is None else len(self[3])

    def __repr__(self) -> str:
        return (
            f"Record(offset={self[0]}, timestamp={self[1]}, key={self[2]!r}, value={self[3]!r}, "
            f"headers={self[4]!r})"
        )


_new_record = tuple.__new__


def _slow_varint(buf: bytes, pos: int) -> tuple[int, int]:
    raw, pos = read_uvarint(buf, pos, 10)
    return (raw >> 1) ^ -(raw & 1), pos


def _decode_headers(buf: bytes, pos: int, count: int) -> tuple[tuple[tuple[str, bytes | None], ...], int]:
    if count < 0:
        raise CorruptRecordError(f"invalid negative header count {count}", position=pos)
    headers = []
    for _ in range(count):
        klen, pos = _slow_varint(buf, pos)
        if klen < 0:
            raise CorruptRecordError(f"invalid negative header key size {klen}", position=pos)
        if pos + klen > len(buf):
            raise CorruptRecordError("header key runs past the end of the record", position=pos)
        # surrogateescape: keys that are not UTF-8 still round-trip byte for byte
        key = buf[pos : pos + klen].decode("utf-8", "surrogateescape")
        pos += klen
        vlen, pos = _slow_varint(buf, pos)
        if vlen >= 0:
            if pos + vlen > len(buf):
                raise CorruptRecordError("header value runs past the end of the record", position=pos)
            value: bytes | None = buf[pos : pos + vlen]
            pos += vlen
        elif vlen == -1:
            value = None
        else:
            raise CorruptRecordError(f"invalid header value size {vlen}", position=pos)
        headers.append((key, value))
    return tuple(headers), pos


#: zigzag value of every one-byte varint
_ZIGZAG = tuple((b >> 1) ^ -(b & 1) for b in range(128))


def _record_count_error(count: int, start: int, end: int) -> CorruptRecordError:
    """A batch's record count that cannot fit in its records' bytes (every
    record takes at least :data:`_MIN_RECORD_SIZE` bytes)."""
    return CorruptRecordError(f"record count {count} does not fit in {end - start} bytes of records", position=start)


def _record_size_error(length: int, rec_start: int, pos: int, end: int) -> CorruptRecordError:
    """A record whose fields did not add up to its length prefix, or ran past
    the batch."""
    if pos > end:
        return CorruptRecordError("record runs past the end of the batch", position=rec_start)
    return CorruptRecordError(f"invalid record size: expected {length} bytes, read {pos - rec_start}", position=rec_start)


def _records_end_error(count: int, pos: int, end: int) -> CorruptRecordError:
    """The batch's records did not end where its bytes do."""
    return CorruptRecordError(
        f"{end - pos} unconsumed bytes after all {count} records" if pos < end else "record runs past the end of the batch",
        position=min(pos, end),
    )


def decode_records(buf: bytes, count: int, base_offset: int, base_timestamp: int, log_append_time: int | None = None,
                   start: int = 0, end: int | None = None) -> list[Record]:
    """Decode ``count`` records that fill ``buf[start:end]`` exactly.

    ``log_append_time`` is the batch's maxTimestamp for LogAppendTime batches
    (every record then reports it), else ``None``. Positions in errors are
    positions in ``buf``. The loop is flat on purpose (varints of one or two
    bytes read inline, no call but on errors): it is dump-log's inner loop.
    """
    if end is None:
        end = len(buf)
    if count < 0 or count * _MIN_RECORD_SIZE > end - start:
        raise _record_count_error(count, start, end)
    out: list[Record] = []
    append = out.append
    pos = start
    rec = Record
    new = _new_record
    slow = _slow_varint
    zz = _ZIGZAG
    no_headers: tuple[tuple[str, bytes | None], ...] = ()
    try:
        for _ in range(count):
            b = buf[pos]
            if b < 0x80:
                length = zz[b]
                pos += 1
            elif buf[pos + 1] < 0x80:  # two-byte varint: records of 64..8191 bytes
                raw = (b & 0x7F) | (buf[pos + 1] << 7)
                length = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                length, pos = slow(buf, pos)
            rec_start = pos
            attributes = buf[pos]
            t = buf[pos + 1]
            o = buf[pos + 2]
            k = buf[pos + 3]
            if t < 0x80 and o < 0x80 and k < 0x80:
                # The common shape: timestamp delta, offset delta and key length
                # each fit in one byte.
                ts_delta = zz[t]
                offset_delta = zz[o]
                klen = zz[k]
                pos += 4
            else:
                ts_delta, pos = slow(buf, pos + 1)
                offset_delta, pos = slow(buf, pos)
                klen, pos = slow(buf, pos)
            if klen >= 0:
                key = buf[pos : pos + klen]
                pos += klen
            elif klen == -1:
                key = None
            else:
                raise CorruptRecordError(f"invalid key size {klen}", position=pos)
            b = buf[pos]
            if b < 0x80:
                vlen = zz[b]
                pos += 1
            elif buf[pos + 1] < 0x80:
                raw = (b & 0x7F) | (buf[pos + 1] << 7)
                vlen = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                vlen, pos = slow(buf, pos)
            if vlen >= 0:
                value = buf[pos : pos + vlen]
                pos += vlen
            elif vlen == -1:
                value = None
            else:
                raise CorruptRecordError(f"invalid value size {vlen}", position=pos)
            if buf[pos] == 0:
                headers = no_headers
                pos += 1
            else:
                hcount, pos = slow(buf, pos)
                headers, pos = _decode_headers(buf, pos, hcount)
            if pos - rec_start != length or pos > end:
                raise _record_size_error(length, rec_start, pos, end)
            append(new(rec, (base_offset + offset_delta,
                             base_timestamp + ts_delta if log_append_time is None else log_append_time,
                             key, value, headers, attributes, ts_delta)))
    except IndexError:
        raise CorruptRecordError("record runs past the end of the batch", position=pos) from None
    if pos != end:
        raise _records_end_error(count, pos, end)
    return out


def record_value_spans(buf: bytes, count: int, start: int, end: int) -> list[int] | None:
    """Where the values of ``count`` header-less records that fill
    ``buf[start:end]`` lie: ``[start of value 0, end of value 0, start of
    value 1, ...]`` (a null value is an empty span), with nothing decoded or
    copied -- what a reader of KRaft metadata records needs, which have no
    key or headers worth reading.

    ``None`` unless :func:`decode_records` would accept the same bytes and
    no record has headers: the caller then decodes the records that way,
    which says what is wrong. The checks are the same (lengths, sizes,
    exact fill)."""
    if count < 0 or count * _MIN_RECORD_SIZE > end - start:
        return None
    out: list[int] = []
    append = out.append
    pos = start
    slow = _slow_varint
    zz = _ZIGZAG
    try:
        for _ in range(count):
            b = buf[pos]
            if b < 0x80:
                length = zz[b]
                pos += 1
            elif buf[pos + 1] < 0x80:
                raw = (b & 0x7F) | (buf[pos + 1] << 7)
                length = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                length, pos = slow(buf, pos)
            rec_start = pos
            t = buf[pos + 1]
            o = buf[pos + 2]
            k = buf[pos + 3]
            if t < 0x80 and o < 0x80 and k < 0x80:
                klen = zz[k]
                pos += 4
            else:
                _, pos = slow(buf, pos + 1)
                _, pos = slow(buf, pos)
                klen, pos = slow(buf, pos)
            if klen >= 0:
                pos += klen
            elif klen != -1:
                return None
            b = buf[pos]
            if b < 0x80:
                vlen = zz[b]
                pos += 1
            elif buf[pos + 1] < 0x80:
                raw = (b & 0x7F) | (buf[pos + 1] << 7)
                vlen = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                vlen, pos = slow(buf, pos)
            append(pos)
            if vlen >= 0:
                pos += vlen
            elif vlen != -1:
                return None
            append(pos)
            if buf[pos] != 0:  # headers: decode_records reads them
                return None
            pos += 1
            if pos - rec_start != length or pos > end:
                return None
    except (IndexError, CorruptRecordError):
        return None
    return out if pos == end else None


class RecordBatch(tuple):
    """A v2 batch: its 13 header fields, the buffer it lives in and its
    position there. Records are decoded only when asked for.

    A tuple subclass so that iterating thousands of batch headers costs one
    ``struct.unpack_from`` and one tuple each, nothing more.
    """

    __slots__ = ()

    base_offset: int = property(itemgetter(0))  # type: ignore[assignment]
    batch_length: int = property(itemgetter(1))  # type: ignore[assignment]
    partition_leader_epoch: int = property(itemgetter(2))  # type: ignore[assignment]
    magic: int = property(itemgetter(3))  # type: ignore[assignment]
    crc: int = property(itemgetter(4))  # type: ignore[assignment]
    attributes: int = property(itemgetter(5))  # type: ignore[assignment]
    last_offset_delta: int = property(itemgetter(6))  # type: ignore[assignment]
    base_timestamp: int = property(itemgetter(7))  # type: ignore[assignment]
    max_timestamp: int = property(itemgetter(8))  # type: ignore[assignment]
    producer_id: int = property(itemgetter(9))  # type: ignore[assignment]
    producer_epoch: int = property(itemgetter(10))  # type: ignore[assignment]
    base_sequence: int = property(itemgetter(11))  # type: ignore[assignment]
    records_count: int = property(itemgetter(12))  # type: ignore[assignment]
    buffer: bytes | memoryview = property(itemgetter(13))  # type: ignore[assignment]
    #: where the batch starts in :attr:`buffer` (its file position when the
    #: buffer is a whole file)
    position: int = property(itemgetter(14))  # type: ignore[assignment]

    def __new__(cls, fields: tuple, buffer: bytes | memoryview, position: int = 0) -> RecordBatch:
        return tuple.__new__(cls, tuple(fields) + (buffer, position))

    @classmethod
    def parse(cls, buf: bytes | memoryview, pos: int = 0) -> RecordBatch:
        """Parse the batch that starts at ``pos`` (structure only, no CRC check)."""
        _check_structure(buf, pos, len(buf))
        return tuple.__new__(cls, HEADER.unpack_from(buf, pos) + (buf, pos))

    # --- header-derived properties -----------------------------------------

    @property
    def size_in_bytes(self) -> int:
        return self[1] + LOG_OVERHEAD

    @property
    def end_position(self) -> int:
        return self[14] + self[1] + LOG_OVERHEAD

    @property
    def data(self) -> bytes | memoryview:
        """The batch's bytes (a slice of :attr:`buffer`)."""
        return self[13][self[14] : self[14] + self[1] + LOG_OVERHEAD]

    @property
    def last_offset(self) -> int:
        return self[0] + self[6]

    @property
    def next_offset(self) -> int:
        return self[0] + self[6] + 1

    @property
    def compression(self) -> Compression:
        return Compression.from_id(self[5] & COMPRESSION_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType.LOG_APPEND_TIME if self[5] & TIMESTAMP_TYPE_MASK else TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self[5] & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self[5] & CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self[5] & DELETE_HORIZON_MASK)

    @property
    def delete_horizon_ms(self) -> int | None:
        return self[7] if self[5] & DELETE_HORIZON_MASK else None

    @property
    def last_sequence(self) -> int:
        if self[11] == NO_SEQUENCE:
            return NO_SEQUENCE
        return _increment_sequence(self[11], self[6])

    def record_sequence(self, record: Record) -> int:
        """Kafka's ``Record.sequence()``: baseSequence + offsetDelta, wrapping at int32."""
        if self[11] == NO_SEQUENCE:
            return NO_SEQUENCE
        return _increment_sequence(self[11], record.offset - self[0])

    # --- integrity -----------------------------------------------------------

    def compute_crc(self) -> int:
        pos = self[14]
        return crc32c(memoryview(self[13])[pos + ATTRIBUTES_OFFSET : pos + self[1] + LOG_OVERHEAD])

    def is_valid(self) -> bool:
        """Kafka's ``isValid()``: size sane and the CRC32C matches."""
        pos = self[14]
        return crc32c(memoryview(self[13])[pos + ATTRIBUTES_OFFSET : pos + self[1] + LOG_OVERHEAD]) == self[4]

    def ensure_valid(self) -> None:
        if not self.is_valid():
            raise CrcMismatchError(f"CRC mismatch: stored {self[4]}, computed {self.compute_crc()}", position=self[14])

    # --- records ---------------------------------------------------------------

    def records_bytes(self) -> bytes:
        """The records section, decompressed."""
        pos = self[14]
        section = memoryview(self[13])[pos + RECORDS_OFFSET : pos + self[1] + LOG_OVERHEAD]
        codec = self[5] & COMPRESSION_MASK
        if codec == 0:
            return bytes(section)
        return decompress(Compression.from_id(codec), section)

    def records(self) -> list[Record]:
        """Decompress and decode every record. Raises :class:`CorruptRecordError`
        (with the batch's position) on malformed records."""
        buf = self[13]
        pos = self[14]
        start = pos + RECORDS_OFFSET
        end = pos + self[1] + LOG_OVERHEAD
        attributes = self[5]
        try:
            if attributes & COMPRESSION_MASK or type(buf) is not bytes:
                buf = self.records_bytes()
                start, end = 0, len(buf)
            return decode_records(
                buf,
                self[12],
                self[0],
                self[7],
                self[8] if attributes & TIMESTAMP_TYPE_MASK else None,
                start,
                end,
            )
        except CorruptRecordError as exc:
            raise CorruptRecordError(
                f"malformed records in batch at offset {self[0]}: {exc.reason}", position=pos
            ) from None

    def header_fields(self) -> dict[str, Any]:
        """The keyword arguments that make :func:`build_batch` rebuild this batch."""
        return {
            "base_offset": self[0],
            "partition_leader_epoch": self[2],
            "attributes": self[5],
            "last_offset_delta": self[6],
            "base_timestamp": self[7],
            "max_timestamp": self[8],
            "producer_id": self[9],
            "producer_epoch": self[10],
            "base_sequence": self[11],
        }

    def with_base_offset(self, base_offset: int) -> bytes:
        """These batch bytes moved to ``base_offset`` (the CRC does not cover it)."""
        out = bytearray(self.data)
        struct.pack_into(">q", out, 0, base_offset)
        return bytes(out)

    def with_partition_leader_epoch(self, epoch: int) -> bytes:
        """These batch bytes stamped with ``epoch`` (the CRC does not cover it)."""
        out = bytearray(self.data)
        struct.pack_into(">i", out, PARTITION_LEADER_EPOCH_OFFSET, epoch)
        return bytes(out)

    def __repr__(self) -> str:
        return (
            f"RecordBatch(base_offset={self[0]}, last_offset={self.last_offset}, "
            f"count={self[12]}, epoch={self[2]}, control={self.is_control}, "
            f"compression={self.compression.kafka_name}, size={self.size_in_bytes}, position={self[14]})"
        )

    def __eq__(self, other: object) -> bool:  # compare bytes, not buffers
        return isinstance(other, RecordBatch) and tuple(self[:13]) == tuple(other[:13]) and bytes(self.data) == bytes(other.data)

    def __hash__(self) -> int:
        return hash(tuple(self[:13]))


def _increment_sequence(sequence: int, increment: int) -> int:
    if sequence > 0x7FFFFFFF - increment:
        return increment - (0x7FFFFFFF - sequence) - 1
    return sequence + increment


def _check_structure(buf: bytes | memoryview, pos: int, end: int) -> None:
    """Raise the precise error for a batch at ``pos`` that is not well formed."""
    available = end - pos
    if available < LOG_OVERHEAD:
        raise TruncatedBatchError(f"{available} bytes left, fewer than the {LOG_OVERHEAD}-byte batch prefix", position=pos)
    _, length = _PREFIX.unpack_from(buf, pos)
    if length < MIN_BATCH_LENGTH:
        raise CorruptRecordError(f"batch length {length} is below the minimum {MIN_BATCH_LENGTH}", position=pos)
    size = length + LOG_OVERHEAD
    if size > available:
        raise TruncatedBatchError(f"batch of {size} bytes runs past the end of the data ({available} bytes left)", position=pos)
    magic = buf[pos + MAGIC_OFFSET]
    if magic != MAGIC_V2:
        raise CorruptRecordError(f"unsupported magic {magic} (only v2 batches are read)", position=pos)


def iter_batches(buf: bytes | memoryview, start: int = 0, end: int | None = None) -> Iterator[RecordBatch]:
    """Header-only iteration over the batches in ``buf[start:end]``.

    Stops cleanly at the end; raises :class:`CorruptRecordError` (with the
    absolute position) at the first structurally bad batch. No CRC check: call
    :meth:`RecordBatch.is_valid` / :meth:`RecordBatch.ensure_valid` where that
    matters. Batches keep a reference to ``buf`` (no copy).
    """
    if end is None:
        end = len(buf)
    pos = start
    unpack = HEADER.unpack_from
    new = tuple.__new__
    cls = RecordBatch
    while pos < end:
        if end - pos < HEADER_SIZE:
            _check_structure(buf, pos, end)
        fields = unpack(buf, pos)
        size = fields[1] + LOG_OVERHEAD
        if fields[1] < MIN_BATCH_LENGTH or pos + size > end or fields[3] != MAGIC_V2:
            _check_structure(buf, pos, end)
        yield new(cls, fields + (buf, pos))
        pos += size


def batch_size_at(buf: bytes | memoryview, pos: int) -> int:
    """Size of the batch at ``pos`` from its prefix alone (no validation)."""
    _, length = _PREFIX.unpack_from(buf, pos)
    return length + LOG_OVERHEAD


def decode_batches(
    buf: bytes, start: int = 0, end: int | None = None, *, verify_crc: bool = True
) -> Iterator[tuple[RecordBatch, list[Record]]]:
    """Walk ``buf`` and decode everything: ``(batch, records)`` per batch.

    The fast path for readers that want every record (log replay, dump-log,
    the benchmark): header parse, CRC check and record decoding in one loop,
    without per-batch method calls. Raises :class:`CrcMismatchError` /
    :class:`CorruptRecordError` with the batch position.
    """
    if end is None:
        end = len(buf)
    if type(buf) is not bytes:
        buf = bytes(buf)
    view = memoryview(buf)
    pos = start
    unpack = HEADER.unpack_from
    new = tuple.__new__
    cls = RecordBatch
    decode = decode_records
    while pos < end:
        if end - pos < HEADER_SIZE:
            _check_structure(buf, pos, end)
        fields = unpack(buf, pos)
        size = fields[1] + LOG_OVERHEAD
        if fields[1] < MIN_BATCH_LENGTH or pos + size > end or fields[3] != MAGIC_V2:
            _check_structure(buf, pos, end)
        batch = new(cls, fields + (buf, pos))
        batch_end = pos + size
        if verify_crc and crc32c(view[pos + ATTRIBUTES_OFFSET : batch_end]) != fields[4]:
            batch.ensure_valid()
        attributes = fields[5]
        if attributes & (COMPRESSION_MASK | TIMESTAMP_TYPE_MASK):
            records = batch.records()
        else:
            try:
                records = decode(buf, fields[12], fields[0], fields[7], None, pos + RECORDS_OFFSET, batch_end)
            except CorruptRecordError as exc:
                raise CorruptRecordError(
                    f"malformed records in batch at offset {fields[0]}: {exc.reason}", position=pos
                ) from None
        yield batch, records
        pos = batch_end


# --- encoding -------------------------------------------------------------------


def _encode_record(out: bytearray, record: Record, base_offset: int, base_timestamp: int) -> None:
    offset, timestamp, key, value, headers, attributes, ts_delta = record
    if ts_delta is None:
        ts_delta = timestamp - base_timestamp
    body = bytearray()
    body.append(attributes & 0xFF)
    body += varint(ts_delta)
    body += varint(offset - base_offset)
    if key is None:
        body += b"\x01"  # varint(-1)
    else:
        body += varint(len(key))
        body += key
    if value is None:
        body += b"\x01"
    else:
        body += varint(len(value))
        body += value
    body += varint(len(headers))
    for hkey, hvalue in headers:
        encoded_key = hkey.encode("utf-8", "surrogateescape")
        body += varint(len(encoded_key))
        body += encoded_key
        if hvalue is None:
            body += b"\x01"
        else:
            body += varint(len(hvalue))
            body += hvalue
    out += varint(len(body))
    out += body


def encode_records(records: Sequence[Record], base_offset: int, base_timestamp: int) -> bytes:
    """The records section (uncompressed) for a batch with these bases."""
    out = bytearray()
    for record in records:
        _encode_record(out, record, base_offset, base_timestamp)
    return bytes(out)


def build_batch(
    records: Sequence[Record],
    *,
    base_offset: int,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    compression: Compression = Compression.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    is_transactional: bool = False,
    is_control: bool = False,
    delete_horizon_ms: int | None = None,
    attributes: int | None = None,
    last_offset_delta: int | None = None,
    base_timestamp: int | None = None,
    max_timestamp: int | None = None,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
) -> bytes:
    """Encode a v2 batch. Defaults follow Kafka's ``MemoryRecordsBuilder``:
    baseTimestamp is the first record's timestamp, maxTimestamp the largest,
    lastOffsetDelta the last record's offset minus ``base_offset``.

    ``attributes``, when given, overrides the flag arguments (it is what
    :meth:`RecordBatch.header_fields` returns, for exact re-encoding).
    """
    if attributes is None:
        attributes = int(compression) & COMPRESSION_MASK
        if timestamp_type == TimestampType.LOG_APPEND_TIME:
            attributes |= TIMESTAMP_TYPE_MASK
        if is_transactional:
            attributes |= TRANSACTIONAL_MASK
        if is_control:
            attributes |= CONTROL_MASK
        if delete_horizon_ms is not None:
            attributes |= DELETE_HORIZON_MASK
    if base_timestamp is None:
        if attributes & DELETE_HORIZON_MASK:
            if delete_horizon_ms is None:
                raise ValueError("a delete-horizon batch needs delete_horizon_ms or base_timestamp")
            base_timestamp = delete_horizon_ms
        else:
            base_timestamp = records[0].timestamp if records else NO_TIMESTAMP
    if max_timestamp is None:
        max_timestamp = max((r.timestamp for r in records), default=NO_TIMESTAMP)
    if last_offset_delta is None:
        last_offset_delta = records[-1].offset - base_offset if records else 0
    section = encode_records(records, base_offset, base_timestamp)
    return _frame_batch(
        section, base_offset, partition_leader_epoch, attributes, last_offset_delta, base_timestamp,
        max_timestamp, producer_id, producer_epoch, base_sequence, len(records),
    )


def _frame_batch(
    section: bytes,
    base_offset: int,
    partition_leader_epoch: int,
    attributes: int,
    last_offset_delta: int,
    base_timestamp: int,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    records_count: int,
) -> bytes:
    """The batch header around an (uncompressed) records section."""
    codec = attributes & COMPRESSION_MASK
    if codec:
        section = compress(Compression.from_id(codec), section)
    tail = (
        _ATTR_TO_END.pack(
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            records_count,
        )
        + section
    )
    crc = crc32c(tail)
    batch_length = len(tail) + 4 + 1 + 4  # crc + magic + partitionLeaderEpoch
    return (
        _PREFIX.pack(base_offset, batch_length)
        + _EPOCH_AND_MAGIC.pack(partition_leader_epoch, MAGIC_V2)
        + _CRC.pack(crc)
        + tail
    )


def build_data_batch(
    values: Sequence[bytes],
    *,
    base_offset: int,
    epoch: int,
    timestamp: int,
    compression: Compression = Compression.NONE,
) -> bytes:
    """A KRaft data batch as Kafka's raft ``BatchBuilder`` writes it: one
    record per value, no key, no headers, the append time as timestamp."""
    if not values:
        raise ValueError("a data batch needs at least one record")
    # The same bytes as build_batch() with these Records, without building
    # them: this is the leader's per-record hot path.
    return _frame_batch(
        _encode_data_records(values), base_offset, epoch, int(compression) & COMPRESSION_MASK, len(values) - 1,
        timestamp, timestamp, NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_SEQUENCE, len(values),
    )


#: ``attributes, timestampDelta 0, offsetDelta i, key null`` of data record i
#: (read-only: shared by every thread that encodes).
_DATA_RECORD_HEADS: tuple[bytes, ...] = tuple(b"\x00\x00" + varint(i) + b"\x01" for i in range(4096))


def _encode_data_records(values: Sequence[bytes]) -> bytes:
    """The records section of a data batch: one key-less, header-less record
    per value, all with the batch's timestamp."""
    heads = _DATA_RECORD_HEADS
    if len(values) > len(heads):
        heads = heads + tuple(b"\x00\x00" + varint(i) + b"\x01" for i in range(len(heads), len(values)))
    parts: list[bytes] = []
    append = parts.append
    # Values mostly share a few sizes: encode each length varint once.
    sizes: dict[int, bytes] = {}
    prefixes: dict[int, bytes] = {}
    for i, value in enumerate(values):
        head = heads[i]
        n = len(value)
        size = sizes.get(n)
        if size is None:
            size = sizes[n] = varint(n)
        # body = head + varint(len) + value + varint(0 headers)
        body = len(head) + len(size) + n + 1
        prefix = prefixes.get(body)
        if prefix is None:
            prefix = prefixes[body] = varint(body)
        append(prefix)
        append(head)
        append(size)
        append(value)
        append(b"\x00")
    return b"".join(parts)


def reencode(batch: RecordBatch) -> bytes:
    """Rebuild ``batch`` from its decoded records (byte-identical for
    uncompressed batches written by Kafka)."""
    return build_batch(batch.records(), **batch.header_fields())


def estimate_record_size(key: bytes | None, value: bytes | None, offset_delta: int = 0, ts_delta: int = 0) -> int:
    """Encoded size of a header-less record, length prefix included."""
    body = 1 + size_of_varint(ts_delta) + size_of_varint(offset_delta)
    body += 1 if key is None else size_of_varint(len(key)) + len(key)
    body += 1 if value is None else size_of_varint(len(value)) + len(value)
    body += 1
    return body + size_of_varint(body)


__all__ = [
    "HEADER_SIZE",
    "LOG_OVERHEAD",
    "MAGIC_V2",
    "Record",
    "RecordBatch",
    "TimestampType",
    "build_batch",
    "build_data_batch",
    "decode_batches",
    "decode_records",
    "encode_records",
    "record_value_spans",
    "iter_batches",
    "reencode",
    "uvarint",
]
