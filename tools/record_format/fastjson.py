"""Kafka's JSON form of metadata records, fast: the payloads that
``kafka-dump-log.sh --cluster-metadata-decoder`` prints, for the hot loops of
``kraft dump-log``, the Spark data source and anything else that describes
many records.

The generic writer (:func:`kraft.messages.json_form.to_json`) walks the
message schema field by field for every record; here that walk is done once
per (message, version) and compiled into straight-line Python (a dict display
per struct), and the JSON text is produced by orjson. Short record values
(``NoOpRecord``, broker heartbeats' registration changes, fence/unfence)
repeat byte for byte in real logs, so their payload text is remembered.

The generic path stays the oracle: anything unusual here (an unknown type, a
decode error, a value orjson refuses) returns ``None`` and the caller takes
the generic path, which also words the error exactly as Kafka does. Tests
check both paths print the same bytes on every fixture.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable
from typing import Any

import orjson

from kraft.messages.schema import FieldInfo, MessageInfo, StructInfo, is_default

ToJson = Callable[[Any], dict[str, Any]]

#: values up to this many bytes have their payload text remembered
MEMO_MAX_VALUE = 48
#: at most this many remembered payloads (a bound on memory, not a tuning knob)
MEMO_MAX_ENTRIES = 1 << 16

_UUID_TEXT: dict[int, str] = {}


def uuid_text(u: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString()``, remembered: topic ids repeat in every
    partition record (keyed by the uuid's int: ``UUID.__hash__`` is Python code)."""
    key = u.int
    text = _UUID_TEXT.get(key)
    if text is None:
        text = base64.urlsafe_b64encode(key.to_bytes(16, "big")).rstrip(b"=").decode("ascii")
        if len(_UUID_TEXT) < MEMO_MAX_ENTRIES:
            _UUID_TEXT[key] = text
    return text


def _b64(value: Any) -> str:
    return base64.b64encode(bytes(value)).decode("ascii")


class _Compiler:
    """Writes one Python function per struct of a message at one version."""

    def __init__(self, info: MessageInfo, version: int) -> None:
        self.info = info
        self.version = version
        self.lines: list[str] = []
        self.env: dict[str, Any] = {"_uuid": uuid_text, "_b64": _b64, "_isdef": is_default, "_info": info}
        self.names: dict[str, str] = {}
        self.fields: list[FieldInfo] = []

    def function_for(self, s: StructInfo) -> str:
        name = self.names.get(s.name)
        if name is not None:
            return name
        name = f"_tj_{len(self.names)}"
        self.names[s.name] = name
        body: list[str] = [f"def {name}(o):", "    d = {}"]
        for f in s.fields:
            if not f.present(self.version):
                continue  # decoded messages hold the default there
            if not f.array:
                expr = self.element_expr(f, f"o.{f.attr}")
            else:
                expr = f"[{self.element_expr(f, 'x')} for x in o.{f.attr}]"
                if f.is_nullable(self.version):
                    expr = f"(None if o.{f.attr} is None else {expr})"
            if f.is_tagged(self.version):
                body.append(f"    if {self.not_default(f, f'o.{f.attr}')}:")
                body.append(f"        d[{f.json!r}] = {expr}")
            else:
                body.append(f"    d[{f.json!r}] = {expr}")
        body.append("    return d")
        self.lines.extend(body)
        self.lines.append("")
        return name

    def not_default(self, f: FieldInfo, ref: str) -> str:
        """A condition true when a tagged field differs from its default (Kafka writes it then)."""
        if f.array and f.default == "null":
            return f"{ref} is not None"
        if f.array and f.default == "[]":
            return f"{ref} is None or len({ref}) != 0"
        if f.struct is None and f.type in ("int8", "int16", "int32", "int64", "uint16", "uint32") and type(f.default) is int:
            return f"{ref} != {f.default!r}"
        if f.struct is None and f.type == "string" and f.default is None:
            return f"{ref} is not None"
        self.fields.append(f)
        return f"not _isdef(_info, _f{len(self.fields) - 1}, {ref})"

    def element_expr(self, f: FieldInfo, ref: str) -> str:
        t = f.type
        if f.struct is not None:
            inner = self.function_for(self.info.structs[f.struct])
            return f"(None if {ref} is None else {inner}({ref}))"
        if t == "uuid":
            return f"_uuid({ref})"
        if t in ("bytes", "records"):
            return f"(None if {ref} is None else _b64({ref}))"
        if t == "float64":
            return f"float({ref})"
        if t == "bool":
            return f"bool({ref})"
        return ref

    def compile(self) -> ToJson:
        root = self.function_for(self.info.root)
        for i, f in enumerate(self.fields):
            self.env[f"_f{i}"] = f
        exec("\n".join(self.lines), self.env)  # noqa: S102 - code built from our own schema
        return self.env[root]


_COMPILED: dict[tuple[type, int], ToJson] = {}


def compiled_to_json(cls: type, version: int) -> ToJson:
    """A function ``message -> dict`` equal to ``to_json(message, version)``
    for messages of ``cls`` (decoded ones: fields a version lacks hold their
    defaults), compiled on first use."""
    key = (cls, version)
    fn = _COMPILED.get(key)
    if fn is None:
        info: MessageInfo = cls.SCHEMA  # type: ignore[attr-defined]
        fn = _COMPILED[key] = _Compiler(info, version).compile()
    return fn


class MetadataPayloads:
    """``value bytes -> payload JSON text`` of ``__cluster_metadata`` records,
    Kafka's ``{"type":..,"version":..,"data":{..}}``; ``None`` when the fast
    path cannot say (the caller then asks the generic path)."""

    def __init__(self, unknown: frozenset[int] = frozenset()) -> None:
        """``unknown``: record ids to leave to the generic path (ids the
        printed-as Kafka release does not know)."""
        from kraft.messages import registry
        from kraft.records.metadata import metadata_type_name

        self._registry = registry
        self._type_name = metadata_type_name
        self._kinds: dict[tuple[int, int], tuple[Any, str, ToJson] | None] = {}
        self._memo: dict[bytes, str] = {}
        self._unknown = unknown

    def _kind(self, api_key: int, version: int) -> tuple[Any, str, ToJson] | None:
        key = (api_key, version)
        try:
            return self._kinds[key]
        except KeyError:
            pass
        kind: tuple[Any, str, ToJson] | None = None
        if api_key in self._unknown:
            self._kinds[key] = None
            return None
        try:
            cls = self._registry.metadata_record_class(api_key)
            if cls.LOWEST_VERSION <= version <= cls.HIGHEST_VERSION:
                kind = (cls, self._type_name(api_key), compiled_to_json(cls, version))
        except Exception:  # noqa: BLE001 - unknown type: the generic path words the error
            kind = None
        self._kinds[key] = kind
        return kind

    def describe(self, value: bytes | None) -> tuple[str, int, int, Any, str] | None:
        """``(type name, api key, version, decoded message, payload text)`` of
        a record value, or ``None`` where the generic path must say."""
        if value is None or len(value) < 3 or value[0] != 1 or value[1] > 0x7F or value[2] > 0x7F:
            return None
        kind = self._kind(value[1], value[2])
        if kind is None:
            return None
        cls, name, to_json = kind
        try:
            message, end = cls.read(value, 3, value[2])
            if end != len(value):
                return None
            data = orjson.dumps(to_json(message)).decode("utf-8")
        except Exception:  # noqa: BLE001 - the generic path reports it
            return None
        return name, value[1], value[2], message, f'{{"type":"{name}","version":{value[2]},"data":{data}}}'

    def text(self, value: bytes | None) -> str | None:
        if value is None:
            return None
        memo = self._memo
        text = memo.get(value)
        if text is not None:
            return text
        described = self.describe(value)  # None: multi-byte ids or a bad frame, the generic path says
        if described is None:
            return None
        text = described[4]
        if len(value) <= MEMO_MAX_VALUE and len(memo) < MEMO_MAX_ENTRIES:
            memo[bytes(value)] = text
        return text

