"""The runtime description of a message, embedded in every generated module.

Generated encoders and decoders are straight-line code and never look at this.
It serves the slow, generic paths: Kafka's JSON form, locating the exact field
of a decode failure, validating a value that failed to encode, and building
random instances in tests.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

ZERO_UUID = uuid.UUID(int=0)

Range = tuple[int, int]  # inclusive; (1, 0) is empty

#: Element types with a fixed width: (struct format, size).
FIXED = {
    "bool": ("?", 1),
    "int8": ("b", 1),
    "int16": ("h", 2),
    "uint16": ("H", 2),
    "int32": ("i", 4),
    "uint32": ("I", 4),
    "int64": ("q", 8),
    "float64": ("d", 8),
    "uuid": ("16s", 16),
}


def in_range(r: Range | None, version: int) -> bool:
    return r is not None and r[0] <= version <= r[1]


@dataclass(frozen=True, slots=True)
class FieldInfo:
    name: str  # Kafka's name, e.g. "ReplicaDirectoryId"
    attr: str  # Python attribute, e.g. "replica_directory_id"
    json: str  # Kafka's JSON key, e.g. "replicaDirectoryId"
    type: str  # element type: "int32", "string", "TopicData", ...
    array: bool
    versions: Range
    nullable: Range
    tagged: Range
    tag: int | None
    ignorable: bool
    flexible: Range | None  # per-field flexibleVersions override
    default: Any  # literal for scalars; "[]"/"null" for arrays; "{}"/"null" for structs
    struct: str | None = None
    about: str = ""

    def present(self, version: int) -> bool:
        return self.versions[0] <= version <= self.versions[1]

    def is_nullable(self, version: int) -> bool:
        return self.nullable[0] <= version <= self.nullable[1]

    def is_tagged(self, version: int) -> bool:
        return self.tagged[0] <= version <= self.tagged[1]


@dataclass(slots=True)
class StructInfo:
    name: str
    fields: tuple[FieldInfo, ...]
    cls: type | None = None


@dataclass(slots=True)
class MessageInfo:
    name: str
    type: str
    api_key: int | None
    valid: Range
    flexible: Range
    root: StructInfo
    structs: dict[str, StructInfo] = field(default_factory=dict)

    def is_flexible(self, version: int) -> bool:
        return in_range(self.flexible, version)

    def field_flexible(self, f: FieldInfo, version: int) -> bool:
        return in_range(f.flexible if f.flexible is not None else self.flexible, version)

    def struct_for(self, f: FieldInfo) -> StructInfo:
        assert f.struct is not None
        return self.structs[f.struct]


def default_value(info: MessageInfo, f: FieldInfo) -> Any:
    """A fresh default value for ``f`` (new list / new struct where mutable)."""
    if f.array:
        return None if f.default == "null" else []
    if f.struct is not None:
        if f.default == "null":
            return None
        cls = info.struct_for(f).cls
        assert cls is not None
        return cls()
    return f.default


def is_default(info: MessageInfo, f: FieldInfo, value: Any) -> bool:
    if f.array:
        return value is None if f.default == "null" else (value is not None and len(value) == 0)
    if f.struct is not None:
        return value is None if f.default == "null" else value == default_value(info, f)
    if f.type in ("bytes", "records") and value is not None and f.default is not None:
        return bytes(value) == f.default
    return value == f.default and type(value) is type(f.default) or (value is None and f.default is None)
