"""Codecs generated, at test time, from Apache Kafka's own specs in
fixtures/kafka-spec, imported as a throw-away package. They are the
reference our own definitions in messages/specs must match byte for byte."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from kraft.messages.codegen import generate
from kraft.messages.schema import MessageInfo, StructInfo

PACKAGE = "kafka_reference_codecs"


def build(shared_spec: Path, out_root: Path) -> ModuleType:
    dirs = [d for d in (shared_spec / "message", shared_spec / "metadata", shared_spec / "raft") if d.is_dir()]
    generate(dirs, out_root / PACKAGE)
    if str(out_root) not in sys.path:
        sys.path.insert(0, str(out_root))
    return importlib.import_module(PACKAGE)


def message_class(package: ModuleType, name: str) -> type | None:
    module = package.MODULES.get(name)
    if module is None:
        return None
    return getattr(importlib.import_module(f"{package.__name__}.{module}"), name)


def convert(obj: Any, src: MessageInfo, dst: MessageInfo, version: int) -> Any:
    """Copy ``obj`` (a ``src`` message) into a new ``dst`` message, pairing
    fields by wire position (regular fields in order, tagged fields by tag),
    not by name: Kafka renames fields between releases (Vote's Candidate* ->
    Replica*), the bytes stay the same. Raises AssertionError when the two
    layouts differ in shape or type."""
    return _convert(obj, src, src.root, dst, dst.root, version, src.name)


def _layout(s: StructInfo, v: int) -> tuple[list, dict]:
    regular = [f for f in s.fields if f.present(v) and not f.is_tagged(v)]
    tagged = {f.tag: f for f in s.fields if f.present(v) and f.is_tagged(v)}
    return regular, tagged


def _convert(obj: Any, src: MessageInfo, ss: StructInfo, dst: MessageInfo, ds: StructInfo, v: int, path: str) -> Any:
    sreg, stag = _layout(ss, v)
    dreg, dtag = _layout(ds, v)
    assert len(sreg) == len(dreg), f"{path}: {len(sreg)} regular fields vs Kafka's {len(dreg)} in v{v}"
    assert sorted(stag) == sorted(dtag), f"{path}: tags {sorted(stag)} vs Kafka's {sorted(dtag)} in v{v}"
    assert ds.cls is not None
    out = ds.cls()
    pairs = list(zip(sreg, dreg)) + [(stag[t], dtag[t]) for t in stag]
    for sf, df in pairs:
        fpath = f"{path}.{sf.attr}"
        assert (sf.type if sf.struct is None else "struct") == (df.type if df.struct is None else "struct"), \
            f"{fpath}: type {sf.type} vs Kafka's {df.type} in v{v}"
        assert sf.array == df.array, f"{fpath}: array-ness differs from Kafka's in v{v}"
        assert sf.is_nullable(v) == df.is_nullable(v), f"{fpath}: nullability differs from Kafka's in v{v}"
        assert src.field_flexible(sf, v) == dst.field_flexible(df, v), f"{fpath}: flexibility differs in v{v}"
        if sf.is_tagged(v):
            assert sf.default == df.default, f"{fpath}: tagged default {sf.default!r} vs Kafka's {df.default!r}"
        value = getattr(obj, sf.attr)
        if sf.struct is not None and value is not None:
            sub_s, sub_d = src.structs[sf.struct], dst.structs[df.struct]
            if sf.array:
                value = [_convert(x, src, sub_s, dst, sub_d, v, f"{fpath}[]") for x in value]
            else:
                value = _convert(value, src, sub_s, dst, sub_d, v, fpath)
        elif isinstance(value, list):
            value = list(value)
        setattr(out, df.attr, value)
    out.unknown_tagged_fields = list(obj.unknown_tagged_fields)
    return out
