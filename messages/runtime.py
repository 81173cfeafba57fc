"""Small helpers the generated codecs call. Hot-path code lives in the
generated modules themselves; what is here is either shared and tiny
(varints, uuids) or on the failure path (error construction)."""

from __future__ import annotations

import struct
import uuid
from typing import Any

from kraft.messages.errors import DecodeError, KraftProtocolError, UnsupportedVersionError
from kraft.messages.schema import ZERO_UUID, MessageInfo

__all__ = [
    "Bad", "DEFAULT", "ZERO_UUID", "UUID_CACHE", "UVARINT_1", "read_uvarint", "uvarint", "uuid_from_bytes",
    "struct_eq", "struct_repr", "decode_failure", "encode_failure", "unsupported_version",
    "non_default", "trailing_bytes", "write_tagged_fields", "tag_of", "read_unknown_tagged_fields",
]


class Bad(Exception):
    """Raised by generated decoders for a semantic fault (negative length,
    length past the end). Never escapes: the caller turns it into a
    :class:`DecodeError` with the field path."""


class _Default:
    __slots__ = ()

    def __repr__(self) -> str:
        return "DEFAULT"


#: Sentinel for constructor arguments whose default is a fresh mutable value.
DEFAULT: Any = _Default()

_UUID = uuid.UUID
_new = object.__new__
_setattr = object.__setattr__
_SAFE = uuid.SafeUUID.unknown
_ZERO16 = bytes(16)


#: Decoded uuids by their 16 bytes. Kafka traffic repeats a handful of ids
#: (the metadata topic id, each replica's directory id, each topic's id) in
#: every message, and building a ``uuid.UUID`` costs far more than a lookup.
#: Bounded: cleared when full.
UUID_CACHE: dict[bytes, uuid.UUID] = {_ZERO16: ZERO_UUID}
_UUID_CACHE_MAX = 1 << 16


def uuid_from_bytes(b: bytes) -> uuid.UUID:
    """``uuid.UUID(bytes=b)`` without its argument checking (b is 16 bytes),
    remembered in :data:`UUID_CACHE`."""
    u = _new(_UUID)
    _setattr(u, "int", int.from_bytes(b, "big"))
    _setattr(u, "is_safe", _SAFE)
    if len(UUID_CACHE) >= _UUID_CACHE_MAX:
        UUID_CACHE.clear()
        UUID_CACHE[_ZERO16] = ZERO_UUID
    UUID_CACHE[b] = u
    return u


def read_uvarint(buf: Any, pos: int) -> tuple[int, int]:
    """Unsigned varint (Kafka's ``readUnsignedVarint``): at most 5 bytes."""
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result = b & 0x7F
    shift = 7
    pos += 1
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 28:
            raise Bad("unsigned varint longer than 5 bytes")


_UV1 = [bytes([i]) for i in range(128)]
#: One-byte encodings of 0..127 (a compact length that fits in one byte).
UVARINT_1 = tuple(_UV1)


def uvarint(n: int) -> bytes:
    if n < 0x80:
        return _UV1[n]
    if n >> 32:
        raise struct.error(f"unsigned varint out of range: {n}")
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def struct_eq(self: Any, other: Any) -> bool:
    if type(self) is not type(other):
        return NotImplemented
    for name in self.__slots__:
        a = getattr(self, name)
        b = getattr(other, name)
        if name == "unknown_tagged_fields":
            if list(a) != list(b):
                return False
        elif a != b:
            if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
                continue  # NaN equals NaN here, as Java's Double.equals has it
            if isinstance(a, memoryview) or isinstance(b, memoryview):
                if a is None or b is None or bytes(a) != bytes(b):
                    return False
            else:
                return False
    return True


def struct_repr(self: Any) -> str:
    parts = []
    for name in self.__slots__:
        value = getattr(self, name)
        if name == "unknown_tagged_fields" and not value:
            continue
        if isinstance(value, memoryview):
            value = f"<{len(value)} bytes>"
            parts.append(f"{name}={value}")
        else:
            parts.append(f"{name}={value!r}")
    return f"{type(self).__name__}({', '.join(parts)})"


def unsupported_version(name: str, version: int, lo: int, hi: int) -> UnsupportedVersionError:
    return UnsupportedVersionError(f"{name} version {version} is not supported (valid versions: {lo}-{hi})")


def non_default(struct_name: str, field: str, version: int) -> UnsupportedVersionError:
    # Same wording as Kafka's generated write() methods.
    return UnsupportedVersionError(
        f"Attempted to write a non-default {field} at version {version} of {struct_name}")


def trailing_bytes(info: MessageInfo, version: int, pos: int, size: int) -> DecodeError:
    return DecodeError(f"{info.name} v{version}", f"{size - pos} trailing bytes after the message", "", pos)


def decode_failure(info: MessageInfo, buf: Any, pos: int, version: int, exc: BaseException) -> DecodeError:
    """Turn a fast-path failure into a DecodeError naming the field: replay
    the buffer through the schema-driven walker, which checks every step."""
    from kraft.messages.reference_codec import locate_decode_error

    if isinstance(exc, DecodeError):
        return exc
    return locate_decode_error(info, buf, pos, version, exc)


def encode_failure(info: MessageInfo, obj: Any, version: int, exc: BaseException) -> KraftProtocolError:
    if isinstance(exc, KraftProtocolError):
        return exc
    from kraft.messages.reference_codec import locate_encode_error

    return locate_encode_error(info, obj, version, exc)




def write_tagged_fields(out: list[bytes], tags: list[tuple[int, bytes]], unknown: Any) -> None:
    """The tagged-field section: count, then (tag, size, bytes) by ascending tag.
    Unknown fields kept from a decode are merged back in tag order."""
    if unknown:
        tags = sorted([*tags, *unknown], key=tag_of)
    out.append(uvarint(len(tags)))
    for tag, data in tags:
        out.append(uvarint(tag))
        out.append(uvarint(len(data)))
        out.append(data)


def read_unknown_tagged_fields(o: Any, buf: Any, pos: int) -> int:
    """The tagged-field section of a struct with no known tags in this
    version: every field is kept, as raw bytes, for re-encoding."""
    count, pos = read_uvarint(buf, pos)
    if count > len(buf) - pos:
        raise Bad(f"tagged field count {count} past end of buffer")
    unknown = []
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        end = pos + size
        if end > len(buf):
            raise Bad(f"tagged field {tag} of {size} bytes past end of buffer")
        unknown.append((tag, bytes(buf[pos:end])))
        pos = end
    # Kafka reads tags in any order but writes them ascending: keep them in
    # that order so a re-encoded message decodes to an equal one.
    unknown.sort(key=tag_of)
    o.unknown_tagged_fields = unknown
    return pos


def tag_of(item: tuple[int, bytes]) -> int:
    return item[0]
