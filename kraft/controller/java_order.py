"""The order a ``java.util.HashMap`` with string keys iterates in.

Kafka's controller walks several requests through a ``HashMap`` (the
UpdateFeatures updates, keyed by feature name), so when two entries would
each fail, the one Java meets first decides the answer. Iterating in Java's
order keeps kraft's refusal the one Kafka gives.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["string_hash", "hash_map_order"]

#: ``HashMap``'s default capacity and load factor.
_DEFAULT_CAPACITY = 16
_LOAD_FACTOR = 0.75


def string_hash(s: str) -> int:
    """``String.hashCode``: over UTF-16 code units, as a signed 32-bit int."""
    units = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _spread(h: int) -> int:
    """``HashMap.hash``: the high half folded into the low."""
    u = h & 0xFFFFFFFF
    return u ^ (u >> 16)


def hash_map_order(keys: Iterable[str]) -> list[str]:
    """``keys`` (distinct, in insertion order) as a default-sized
    ``HashMap``'s ``entrySet`` returns them: by bucket, then by insertion
    within a bucket (resizes keep that relative order)."""
    items = list(dict.fromkeys(keys))
    capacity = _DEFAULT_CAPACITY
    while len(items) > capacity * _LOAD_FACTOR:
        capacity *= 2
    position = {k: i for i, k in enumerate(items)}
    return sorted(items, key=lambda k: (_spread(string_hash(k)) & (capacity - 1), position[k]))
