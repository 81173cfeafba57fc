"""Kafka's JSON form of messages, as written by the ``*JsonConverter`` classes
Kafka generates: camelCase keys (the spec name with a lower-case first
letter), uuids in Kafka's url-safe base64 without padding, bytes as standard
base64, tagged fields only when they differ from their default, and fields a
version lacks left out (a non-default, non-ignorable one is an error).

Records fields are written as base64 of their bytes (``serialize_records``)
or, as Kafka does when logging requests (KIP-673), as ``<name>SizeInBytes``.
"""

from __future__ import annotations

import base64
import uuid
from typing import Any

from kraft.messages.errors import DecodeError, UnsupportedVersionError
from kraft.messages.schema import FieldInfo, MessageInfo, StructInfo, default_value, is_default

__all__ = ["to_json", "from_json", "uuid_to_kafka", "uuid_from_kafka"]


def uuid_to_kafka(u: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString()``: url-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(u.bytes).rstrip(b"=").decode("ascii")


def uuid_from_kafka(text: str) -> uuid.UUID:
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(f"not a Kafka uuid: {text!r}")
    return uuid.UUID(bytes=raw)


def _info(obj_or_cls: Any) -> MessageInfo:
    info = getattr(obj_or_cls, "SCHEMA", None)
    if not isinstance(info, MessageInfo):
        raise TypeError(f"{obj_or_cls!r} is not a generated message")
    return info


def to_json(obj: Any, version: int, serialize_records: bool = True) -> dict[str, Any]:
    info = _info(obj)
    lo, hi = info.valid
    if not lo <= version <= hi:
        raise UnsupportedVersionError(f"{info.name} version {version} is not supported (valid: {lo}-{hi})")
    return _struct_to_json(info, info.root, obj, version, serialize_records)


def _struct_to_json(info: MessageInfo, s: StructInfo, obj: Any, version: int,
                    serialize_records: bool) -> dict[str, Any]:
    node: dict[str, Any] = {}
    for f in s.fields:
        value = getattr(obj, f.attr)
        if not f.present(version):
            if not f.ignorable and not is_default(info, f, value):
                raise UnsupportedVersionError(
                    f"Attempted to write a non-default {f.attr} at version {version} of {s.name}")
            continue
        if f.is_tagged(version) and is_default(info, f, value):
            continue
        if f.type == "records" and not f.array:
            if serialize_records:
                node[f.json] = None if value is None else base64.b64encode(bytes(value)).decode("ascii")
            else:
                node[f.json + "SizeInBytes"] = 0 if value is None else len(value)
            continue
        node[f.json] = _value_to_json(info, f, value, version, serialize_records)
    return node


def _value_to_json(info: MessageInfo, f: FieldInfo, value: Any, version: int, sr: bool) -> Any:
    if value is None:
        return None
    if f.array:
        return [_element_to_json(info, f, v, version, sr) for v in value]
    return _element_to_json(info, f, value, version, sr)


def _element_to_json(info: MessageInfo, f: FieldInfo, value: Any, version: int, sr: bool) -> Any:
    if value is None:
        return None
    if f.struct is not None:
        return _struct_to_json(info, info.structs[f.struct], value, version, sr)
    t = f.type
    if t == "uuid":
        return uuid_to_kafka(value)
    if t in ("bytes", "records"):
        return base64.b64encode(bytes(value)).decode("ascii")
    if t == "float64":
        return float(value)
    if t == "bool":
        return bool(value)
    return value


def from_json(cls: type, data: dict[str, Any], version: int) -> Any:
    """Build a message from Kafka's JSON form (the reverse of :func:`to_json`)."""
    info = _info(cls)
    lo, hi = info.valid
    if not lo <= version <= hi:
        raise UnsupportedVersionError(f"{info.name} version {version} is not supported (valid: {lo}-{hi})")
    return _struct_from_json(info, info.root, data, version, info.name)


def _fail(path: str, reason: str) -> DecodeError:
    return DecodeError("JSON", reason, path)


def _struct_from_json(info: MessageInfo, s: StructInfo, data: Any, version: int, path: str) -> Any:
    if not isinstance(data, dict):
        raise _fail(path, f"expected an object, got {type(data).__name__}")
    assert s.cls is not None
    obj = s.cls()
    for f in s.fields:
        if not f.present(version):
            continue
        fpath = f"{path}.{f.json}"
        if f.type == "records" and f.json not in data and f.json + "SizeInBytes" in data:
            raise _fail(fpath, "records were logged by size only; their bytes are not in the JSON")
        if f.json not in data:
            if f.is_tagged(version):
                setattr(obj, f.attr, default_value(info, f))
                continue
            raise _fail(fpath, "missing required field")
        setattr(obj, f.attr, _value_from_json(info, f, data[f.json], version, fpath))
    return obj


def _value_from_json(info: MessageInfo, f: FieldInfo, value: Any, version: int, path: str) -> Any:
    if value is None:
        if f.is_nullable(version) or (f.type == "records" and not f.array):
            return None
        raise _fail(path, "null in a non-nullable field")
    if f.array:
        if not isinstance(value, list):
            raise _fail(path, f"expected an array, got {type(value).__name__}")
        return [_element_from_json(info, f, v, version, f"{path}[{i}]") for i, v in enumerate(value)]
    return _element_from_json(info, f, value, version, path)


def _element_from_json(info: MessageInfo, f: FieldInfo, value: Any, version: int, path: str) -> Any:
    if f.struct is not None:
        return _struct_from_json(info, info.structs[f.struct], value, version, path)
    t = f.type
    try:
        if t == "bool":
            if not isinstance(value, bool):
                raise ValueError(f"expected a boolean, got {value!r}")
            return value
        if t == "float64":
            return float(value)
        if t in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
            if isinstance(value, bool) or not isinstance(value, (int, str)):
                raise ValueError(f"expected an integer, got {value!r}")
            return int(value)
        if t == "uuid":
            return uuid_from_kafka(value)
        if t in ("bytes", "records"):
            return base64.b64decode(value, validate=True)
        if t == "string":
            if not isinstance(value, str):
                raise ValueError(f"expected a string, got {value!r}")
            return value
    except (ValueError, TypeError) as e:
        raise _fail(path, str(e)) from None
    raise _fail(path, f"unknown type {t}")
