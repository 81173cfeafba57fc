"""The reference codec: schema-driven decoding and validation, the slow,
careful twin of the generated codecs, walking the schema field by field.
It was ``walk.py`` until issue 45.

The generated code is fast and checks only what it must. When it fails, the
failure is replayed here, where every read is bounds-checked and the current
field path is tracked, so the error names the field and the byte offset
(``topics[0].partitions[2].last_offset at byte 57``). The same walker is a
reference decoder that tests compare the generated code against.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

from kraft.messages.errors import DecodeError, EncodeError
from kraft.messages.schema import FIXED, FieldInfo, MessageInfo, StructInfo, default_value

_INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "uint32": (0, (1 << 32) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
}


class _Fault(Exception):
    def __init__(self, reason: str, offset: int) -> None:
        self.reason = reason
        self.offset = offset


class _Reader:
    def __init__(self, info: MessageInfo, buf: Any, pos: int, version: int) -> None:
        self.info = info
        self.buf = bytes(buf)
        self.pos = pos
        self.version = version

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise _Fault(f"{what}: needs {n} bytes, {len(self.buf) - self.pos} left", self.pos)
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return b

    def fixed(self, t: str) -> Any:
        fmt, size = FIXED[t]
        raw = self.take(size, t)
        if t == "uuid":
            return uuid.UUID(bytes=raw)
        return struct.unpack(">" + fmt, raw)[0]

    def uvarint(self, what: str) -> int:
        start = self.pos
        result = 0
        shift = 0
        while True:
            if self.pos >= len(self.buf):
                raise _Fault(f"{what}: unsigned varint runs past end of buffer", start)
            b = self.buf[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result
            shift += 7
            if shift > 28:
                raise _Fault(f"{what}: unsigned varint longer than 5 bytes", start)

    def length(self, f: FieldInfo, kind: str) -> int:
        """A length or count prefix; -1 means null."""
        if self.info.field_flexible(f, self.version):
            return self.uvarint(f"{kind} length") - 1
        if kind == "string":
            return struct.unpack(">h", self.take(2, "string length"))[0]
        return struct.unpack(">i", self.take(4, f"{kind} length"))[0]


def _struct(r: _Reader, s: StructInfo, path: str) -> Any:
    assert s.cls is not None
    obj: Any = object.__new__(s.cls)
    v = r.version
    for f in s.fields:
        setattr(obj, f.attr, default_value(r.info, f))
    for f in s.fields:
        if f.present(v) and not f.is_tagged(v):
            setattr(obj, f.attr, _field(r, f, _join(path, f.attr)))
    obj.unknown_tagged_fields = ()
    if r.info.is_flexible(v):
        start = r.pos
        count = r.uvarint("tagged field count")
        if count > len(r.buf) - r.pos:
            raise _Fault(f"tagged field count {count} past end of buffer", start)
        known = {f.tag: f for f in s.fields if f.present(v) and f.is_tagged(v)}
        unknown: list[tuple[int, bytes]] = []
        for _ in range(count):
            tag = r.uvarint("tag")
            size = r.uvarint(f"size of tagged field {tag}")
            end = r.pos + size
            if end > len(r.buf):
                raise _Fault(f"tagged field {tag} of {size} bytes past end of buffer", r.pos)
            known_field = known.get(tag)
            if known_field is None:
                unknown.append((tag, r.take(size, f"tagged field {tag}")))
                continue
            value_path = _join(path, known_field.attr)
            field_start = r.pos
            setattr(obj, known_field.attr, _field(r, known_field, value_path))
            if r.pos != end:
                raise _Fault(f"tagged field {tag} ({known_field.name}) declared {size} bytes but its value is "
                             f"{r.pos - field_start}", field_start)
        if unknown:
            unknown.sort(key=lambda t: t[0])
            obj.unknown_tagged_fields = unknown
    return obj


def _join(path: str, attr: str) -> str:
    return f"{path}.{attr}" if path else attr


class _PathFault(Exception):
    def __init__(self, fault: _Fault, path: str) -> None:
        self.fault = fault
        self.path = path


def _field(r: _Reader, f: FieldInfo, path: str) -> Any:
    try:
        return _field_value(r, f, path)
    except _Fault as fault:
        raise _PathFault(fault, path) from None


def _field_value(r: _Reader, f: FieldInfo, path: str) -> Any:
    v = r.version
    if f.array:
        start = r.pos
        n = r.length(f, "array")
        if n < 0:
            if f.is_nullable(v):
                return None
            raise _Fault("null array in a non-nullable field", start)
        if n > len(r.buf) - r.pos:
            raise _Fault(f"array of {n} elements past end of buffer", start)
        items = []
        for i in range(n):
            items.append(_element(r, f, f"{path}[{i}]"))
        return items
    return _element(r, f, path)


def _element(r: _Reader, f: FieldInfo, path: str) -> Any:
    v = r.version
    t = f.type
    if f.struct is not None:
        if not f.array and f.is_nullable(v):
            marker = struct.unpack(">b", r.take(1, "null marker"))[0]
            if marker < 0:
                return None
        try:
            return _struct(r, r.info.structs[f.struct], path)
        except _Fault as fault:
            raise _PathFault(fault, path) from None
    if t in FIXED:
        return r.fixed(t)
    start = r.pos
    kind = "string" if t == "string" else "bytes"
    n = r.length(f, kind) if not f.array else _element_length(r, f, kind)
    if n < 0:
        if not f.array and f.is_nullable(v):
            return None
        raise _Fault(f"null (length {n}) in a non-nullable field", start)
    raw = r.take(n, t)
    if t == "string":
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise _Fault(f"invalid UTF-8: {e.reason}", start) from None
    return raw


def _element_length(r: _Reader, f: FieldInfo, kind: str) -> int:
    if r.info.field_flexible(f, r.version):
        return r.uvarint(f"{kind} length") - 1
    if kind == "string":
        return struct.unpack(">h", r.take(2, "string length"))[0]
    return struct.unpack(">i", r.take(4, "bytes length"))[0]


def walk_decode(info: MessageInfo, buf: Any, pos: int, version: int) -> tuple[Any, int]:
    """Reference decoder: decode ``buf`` at ``pos``; DecodeError on any fault."""
    r = _Reader(info, buf, pos, version)
    message = f"{info.name} v{version}"
    try:
        obj = _struct(r, info.root, "")
    except _PathFault as pf:
        if pf.path == "":
            raise DecodeError(message, pf.fault.reason, "<tagged fields>", pf.fault.offset) from None
        raise DecodeError(message, pf.fault.reason, pf.path, pf.fault.offset) from None
    except _Fault as fault:
        raise DecodeError(message, fault.reason, "<tagged fields>", fault.offset) from None
    return obj, r.pos


def locate_decode_error(info: MessageInfo, buf: Any, pos: int, version: int,
                        exc: BaseException) -> DecodeError:
    try:
        walk_decode(info, buf, pos, version)
    except DecodeError as e:
        return e
    # The walker accepted what the fast path rejected: report the fast path's
    # reason rather than hide it.
    return DecodeError(f"{info.name} v{version}", f"{type(exc).__name__}: {exc}", "", pos)


# --------------------------------------------------------------- encoding


def _check_value(info: MessageInfo, f: FieldInfo, value: Any, version: int, path: str) -> str | None:
    """Why ``value`` cannot be written for ``f`` in ``version``, or None."""
    if f.array:
        if value is None:
            return None if f.is_nullable(version) else "null array in a non-nullable field"
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            return f"expected a list, got {type(value).__name__}"
        for i, item in enumerate(value):
            problem = _check_element(info, f, item, version, f"{path}[{i}]")
            if problem:
                return problem
        return None
    return _check_element(info, f, value, version, path)


class _Located(Exception):
    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason


def _check_element(info: MessageInfo, f: FieldInfo, value: Any, version: int, path: str) -> str | None:
    t = f.type
    if f.struct is not None:
        if value is None:
            if not f.array and f.is_nullable(version):
                return None
            return "null struct in a non-nullable field"
        s = info.structs[f.struct]
        if not isinstance(value, s.cls):  # type: ignore[arg-type]
            return f"expected {f.struct}, got {type(value).__name__}"
        _check_struct(info, s, value, version, path)
        return None
    if t in _INT_RANGES:
        if not isinstance(value, int):
            return f"expected an int, got {type(value).__name__}"
        lo, hi = _INT_RANGES[t]
        if not lo <= value <= hi:
            return f"{value} out of range for {t}"
        return None
    if t == "bool":
        return None if isinstance(value, (bool, int)) else f"expected a bool, got {type(value).__name__}"
    if t == "float64":
        return None if isinstance(value, (int, float)) else f"expected a float, got {type(value).__name__}"
    if t == "uuid":
        return None if isinstance(value, uuid.UUID) else f"expected a uuid.UUID, got {type(value).__name__}"
    if value is None:
        if not f.array and f.is_nullable(version):
            return None
        return "null in a non-nullable field"
    if t == "string":
        if not isinstance(value, str):
            return f"expected a str, got {type(value).__name__}"
        try:
            n = len(value.encode("utf-8"))
        except UnicodeEncodeError as e:
            return f"not encodable as UTF-8: {e.reason}"
        if not info.field_flexible(f, version) and n > 0x7FFF:
            return f"string of {n} bytes is longer than 32767"
        return None
    if not isinstance(value, (bytes, bytearray, memoryview)):
        return f"expected bytes, got {type(value).__name__}"
    return None


def _check_struct(info: MessageInfo, s: StructInfo, obj: Any, version: int, path: str) -> None:
    for f in s.fields:
        fpath = _join(path, f.attr)
        try:
            value = getattr(obj, f.attr)
        except AttributeError:
            raise _Located(fpath, "attribute not set") from None
        if not f.present(version):
            continue
        problem = _check_value(info, f, value, version, fpath)
        if problem:
            raise _Located(fpath, problem)
    tags = getattr(obj, "unknown_tagged_fields", ())
    try:
        for tag, data in tags:
            if not isinstance(tag, int) or tag < 0 or not isinstance(data, (bytes, bytearray, memoryview)):
                raise ValueError
    except (TypeError, ValueError):
        raise _Located(_join(path, "unknown_tagged_fields"), "expected (tag, bytes) pairs") from None


def locate_encode_error(info: MessageInfo, obj: Any, version: int, exc: BaseException) -> EncodeError:
    message = f"{info.name} v{version}"
    try:
        _check_struct(info, info.root, obj, version, "")
    except _Located as loc:
        return EncodeError(message, loc.reason, loc.path)
    return EncodeError(message, f"{type(exc).__name__}: {exc}")
