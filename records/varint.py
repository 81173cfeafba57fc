"""Varints as Kafka writes them: unsigned LEB128 (``ByteUtils.writeUnsignedVarint``)
and the zigzag-encoded signed forms used inside v2 records.

These are the general-purpose helpers; the record decoder in ``batch.py``
inlines the one-byte fast path for speed and falls back to these.
"""

from __future__ import annotations

from kraft.records.errors import CorruptRecordError

_MAX_VARINT_BYTES = 5  # int32
_MAX_VARLONG_BYTES = 10  # int64


def read_uvarint(buf: bytes | memoryview, pos: int, max_bytes: int = _MAX_VARINT_BYTES) -> tuple[int, int]:
    """Read an unsigned varint at ``pos``; returns ``(value, new_pos)``."""
    result = 0
    shift = 0
    end = len(buf)
    for _ in range(max_bytes):
        if pos >= end:
            raise CorruptRecordError("varint runs past the end of the data", position=pos)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
    raise CorruptRecordError(f"varint longer than {max_bytes} bytes", position=pos)


def read_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Read a zigzag int32 varint."""
    raw, pos = read_uvarint(buf, pos, _MAX_VARINT_BYTES)
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Read a zigzag int64 varlong."""
    raw, pos = read_uvarint(buf, pos, _MAX_VARLONG_BYTES)
    return (raw >> 1) ^ -(raw & 1), pos


# One-byte encodings are by far the most common; precompute them.
_UVARINT_1 = [bytes([i]) for i in range(128)]


def uvarint(value: int) -> bytes:
    """Encode a non-negative int as an unsigned varint."""
    if value < 0:
        raise ValueError(f"unsigned varint cannot encode {value}")
    if value < 128:
        return _UVARINT_1[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def varint(value: int) -> bytes:
    """Encode a signed int (int32 or int64 range) with zigzag encoding."""
    return uvarint((value << 1) ^ (value >> 63))


def size_of_uvarint(value: int) -> int:
    size = 1
    while value >= 0x80:
        value >>= 7
        size += 1
    return size


def size_of_varint(value: int) -> int:
    return size_of_uvarint((value << 1) ^ (value >> 63))
