"""Kafka-format JSON message specs, parsed into a typed model.

The input is the format of Apache Kafka's ``clients/src/main/resources/common/
message/*.json``: JSON with ``//`` comments, a message with ``validVersions``,
``flexibleVersions`` and ``fields``; fields with ``versions``,
``nullableVersions``, ``taggedVersions``/``tag``, ``default``, ``ignorable``,
nested ``fields`` (which declare a struct type) and ``commonStructs``.

Version ranges are normalised to ``Versions`` (inclusive bounds, open-ended
ranges capped at ``MAX_VERSION``) and every field's ranges are clipped to the
message's valid versions, so the emitter can ask plain questions such as
"is this field tagged in version 3?".
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

MAX_VERSION = 0x7FFF

PRIMITIVES = {
    "bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64",
    "uuid", "string", "bytes", "records",
}
#: Types whose values can be null (given nullableVersions).
NULLABLE_CAPABLE = {"string", "bytes", "records"}


class SpecError(ValueError):
    """A spec file that is not valid Kafka message-spec JSON."""


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive version range; ``lo > hi`` is the empty range."""

    lo: int
    hi: int

    @staticmethod
    def parse(text: str | None, default: "Versions | None" = None) -> "Versions":
        if text is None:
            if default is None:
                raise SpecError("missing version range")
            return default
        text = text.strip()
        if text == "none":
            return NONE
        if text.endswith("+"):
            return Versions(int(text[:-1]), MAX_VERSION)
        if "-" in text:
            lo, hi = text.split("-", 1)
            return Versions(int(lo), int(hi))
        return Versions(int(text), int(text))

    @property
    def empty(self) -> bool:
        return self.lo > self.hi

    def __contains__(self, version: int) -> bool:
        return self.lo <= version <= self.hi

    def intersect(self, other: "Versions") -> "Versions":
        lo, hi = max(self.lo, other.lo), min(self.hi, other.hi)
        return Versions(lo, hi) if lo <= hi else NONE

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.hi == MAX_VERSION:
            return f"{self.lo}+"
        return f"{self.lo}" if self.lo == self.hi else f"{self.lo}-{self.hi}"


NONE = Versions(1, 0)


def snake_case(name: str) -> str:
    """Kafka field name to a Python attribute: ``ReplicaDirectoryId`` ->
    ``replica_directory_id``, ``ISR`` -> ``isr``, ``KRaftVersion`` ->
    ``k_raft_version``."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    return s.lower()


def camel_case(name: str) -> str:
    """Kafka's ``FieldSpec.camelCaseName``: the name with its first letter in
    lower case. This is the key Kafka's JsonConverter classes use."""
    return name[:1].lower() + name[1:]


@dataclass(slots=True)
class FieldSpec:
    name: str
    type: str  # as written: "int32", "[]int32", "[]TopicData", "ReplicaState"
    versions: Versions
    nullable: Versions
    tagged: Versions
    tag: int | None
    ignorable: bool
    default: str | None  # the spec's default string, uninterpreted
    flexible_override: Versions | None
    map_key: bool
    about: str
    entity_type: str | None
    fields: list["FieldSpec"] | None  # nested struct definition

    @property
    def attr(self) -> str:
        return snake_case(self.name)

    @property
    def json_name(self) -> str:
        return camel_case(self.name)

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        """A struct field or an array of structs."""
        return self.element_type not in PRIMITIVES


@dataclass(slots=True)
class StructSpec:
    name: str
    fields: list[FieldSpec]
    versions: Versions  # versions of the message in which the struct can occur


@dataclass(slots=True)
class MessageSpec:
    name: str
    type: str  # request, response, header, metadata, data, ...
    api_key: int | None
    valid: Versions
    flexible: Versions
    fields: list[FieldSpec]
    structs: dict[str, StructSpec] = field(default_factory=dict)  # nested + common
    listeners: list[str] = field(default_factory=list)
    latest_version_unstable: bool = False
    source: str = ""

    @property
    def root(self) -> StructSpec:
        return StructSpec(self.name, self.fields, self.valid)


def strip_comments(text: str) -> str:
    """Remove ``//`` line comments that are not inside JSON strings."""
    out: list[str] = []
    in_string = False
    escaped = False
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if in_string:
            out.append(c)
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
            i += 1
        elif c == '"':
            in_string = True
            out.append(c)
            i += 1
        elif c == "/" and i + 1 < n and text[i + 1] == "/":
            while i < n and text[i] != "\n":
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _default_string(value: object) -> str | None:
    # Kafka writes defaults as strings; tolerate JSON booleans and numbers.
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _parse_field(raw: dict, valid: Versions, where: str) -> FieldSpec:
    try:
        name = raw["name"]
        ftype = raw["type"]
    except KeyError as e:
        raise SpecError(f"{where}: field without {e.args[0]!r}") from None
    versions = Versions.parse(raw.get("versions"), None).intersect(valid)
    nullable = Versions.parse(raw.get("nullableVersions", "none")).intersect(versions)
    tagged = Versions.parse(raw.get("taggedVersions", "none")).intersect(versions)
    tag = raw.get("tag")
    if not tagged.empty and tag is None:
        raise SpecError(f"{where}.{name}: taggedVersions without tag")
    flex = raw.get("flexibleVersions")
    nested = raw.get("fields")
    return FieldSpec(
        name=name,
        type=ftype,
        versions=versions,
        nullable=nullable,
        tagged=tagged,
        tag=int(tag) if tag is not None and not tagged.empty else None,
        ignorable=bool(raw.get("ignorable", False)),
        default=_default_string(raw.get("default")),
        flexible_override=Versions.parse(flex) if flex is not None else None,
        map_key=bool(raw.get("mapKey", False)),
        about=raw.get("about", ""),
        entity_type=raw.get("entityType"),
        fields=[_parse_field(f, versions, f"{where}.{name}") for f in nested] if nested is not None else None,
    )


def _collect_structs(fields: list[FieldSpec], structs: dict[str, StructSpec], where: str) -> None:
    for f in fields:
        if f.fields is not None:
            sname = f.element_type
            if sname in PRIMITIVES:
                raise SpecError(f"{where}.{f.name}: nested fields on primitive type {f.type}")
            if sname in structs:
                raise SpecError(f"{where}: struct {sname} defined twice")
            structs[sname] = StructSpec(sname, f.fields, f.versions)
            _collect_structs(f.fields, structs, f"{where}.{f.name}")


def parse_spec(text: str, source: str = "<spec>") -> MessageSpec:
    try:
        raw = json.loads(strip_comments(text))
    except json.JSONDecodeError as e:
        raise SpecError(f"{source}: not JSON: {e}") from None
    try:
        name = raw["name"]
        mtype = raw["type"]
    except KeyError as e:
        raise SpecError(f"{source}: missing {e.args[0]!r}") from None
    valid = Versions.parse(raw.get("validVersions"), None)
    flexible = Versions.parse(raw.get("flexibleVersions", "none"))
    fields = [_parse_field(f, valid, name) for f in raw.get("fields", [])]
    spec = MessageSpec(
        name=name,
        type=mtype,
        api_key=raw.get("apiKey"),
        valid=valid,
        flexible=flexible,
        fields=fields,
        listeners=list(raw.get("listeners", [])),
        latest_version_unstable=bool(raw.get("latestVersionUnstable", False)),
        source=source,
    )
    structs: dict[str, StructSpec] = {}
    for common in raw.get("commonStructs", []):
        cfields = [_parse_field(f, valid, f"{name}.{common['name']}") for f in common.get("fields", [])]
        cver = Versions.parse(common.get("versions"), valid).intersect(valid)
        structs[common["name"]] = StructSpec(common["name"], cfields, cver)
        _collect_structs(cfields, structs, f"{name}.{common['name']}")
    _collect_structs(fields, structs, name)
    for s in list(structs.values()) + [spec.root]:
        for f in s.fields:
            if f.is_struct and f.element_type not in structs:
                raise SpecError(f"{source}: {s.name}.{f.name}: unknown type {f.type}")
    spec.structs = structs
    return spec


def load_spec(path: Path) -> MessageSpec:
    return parse_spec(path.read_text(encoding="utf-8"), source=str(path))


def load_dirs(dirs: list[Path]) -> list[MessageSpec]:
    """Every ``*.json`` spec in the given directories, sorted by name."""
    specs: list[MessageSpec] = []
    for d in dirs:
        for p in sorted(Path(d).glob("*.json")):
            specs.append(load_spec(p))
    return sorted(specs, key=lambda s: s.name)
