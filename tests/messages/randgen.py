"""Random valid instances of generated messages, for property tests.

Driven by the schema embedded in each generated module, so it covers every
message and version without hand-written fixtures. Values respect what the
version can carry: absent fields keep their defaults, nullable fields are
sometimes None, tagged fields are sometimes left at their default (so both
paths of the tagged-field writer run).
"""

from __future__ import annotations

import random
import uuid
from typing import Any

from kraft.messages.schema import FieldInfo, MessageInfo, StructInfo, default_value

_INT_BOUNDS = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "uint32": (0, (1 << 32) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
}
_ALPHABET = "abcXYZ_.-09 é漢🙂"


def random_instance(cls: type, version: int, rng: random.Random, max_items: int = 3) -> Any:
    info: MessageInfo = cls.SCHEMA  # type: ignore[attr-defined]
    return _struct(info, info.root, version, rng, max_items, depth=0)


def _struct(info: MessageInfo, s: StructInfo, v: int, rng: random.Random, max_items: int, depth: int) -> Any:
    assert s.cls is not None
    obj = s.cls()
    for f in s.fields:
        if not f.present(v):
            continue
        if f.is_tagged(v) and rng.random() < 0.3:
            setattr(obj, f.attr, default_value(info, f))
            continue
        setattr(obj, f.attr, _value(info, f, v, rng, max_items, depth))
    return obj


def _value(info: MessageInfo, f: FieldInfo, v: int, rng: random.Random, max_items: int, depth: int) -> Any:
    if f.is_nullable(v) and rng.random() < 0.15:
        return None
    if f.array:
        n = rng.randint(0, max_items if depth < 3 else 1)
        return [_element(info, f, v, rng, max_items, depth + 1) for _ in range(n)]
    return _element(info, f, v, rng, max_items, depth)


def _element(info: MessageInfo, f: FieldInfo, v: int, rng: random.Random, max_items: int, depth: int) -> Any:
    t = f.type
    if f.struct is not None:
        return _struct(info, info.structs[f.struct], v, rng, max_items, depth + 1)
    if t in _INT_BOUNDS:
        lo, hi = _INT_BOUNDS[t]
        return rng.choice([lo, hi, 0, -1 if lo < 0 else 1, rng.randint(lo, hi)])
    if t == "bool":
        return rng.random() < 0.5
    if t == "float64":
        return rng.choice([0.0, -1.5, 1e300, rng.random()])
    if t == "uuid":
        return uuid.UUID(int=0) if rng.random() < 0.2 else uuid.UUID(int=rng.getrandbits(128))
    if t == "string":
        return "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 12)))
    if t in ("bytes", "records"):
        return rng.randbytes(rng.randint(0, 40))
    raise AssertionError(f"unknown type {t}")
