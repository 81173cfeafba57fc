"""The order a ``java.util.HashMap`` with string keys iterates in.

Kafka's controller walks several requests through a ``HashMap`` (the
UpdateFeatures updates, keyed by feature name), so when two entries would
each fail, the one Java meets first decides the answer. Iterating in Java's
order keeps kraft's refusal the one Kafka gives.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import TypeVar

__all__ = ["string_hash", "map_hash", "hash_map_order"]

K = TypeVar("K", bound=Hashable)

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


def _int32(h: int) -> int:
    h &= 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def map_hash(entries: Mapping[str, str | None]) -> int:
    """``AbstractMap.hashCode`` of a string map (the sum of each entry's
    ``key.hashCode() ^ value.hashCode()``, null as 0)."""
    return _int32(sum(string_hash(k) ^ (string_hash(v) if v is not None else 0) for k, v in entries.items()))


def _spread(h: int) -> int:
    """``HashMap.hash``: the high half folded into the low."""
    u = h & 0xFFFFFFFF
    return u ^ (u >> 16)


def _table_size_for(n: int) -> int:
    """``HashMap.tableSizeFor``: the power of two at least ``n`` (1 for 0)."""
    size = 1
    while size < n:
        size *= 2
    return size


def hash_map_order(keys: Iterable[K], hash_code: Callable[[K], int] = string_hash,  # type: ignore[assignment]
                   initial_capacity: int = _DEFAULT_CAPACITY) -> list[K]:
    """``keys`` (distinct, in insertion order) as a ``HashMap``'s
    ``entrySet`` returns them: by bucket, then by insertion within a bucket
    (resizes keep that relative order). ``hash_code``: the keys' Java
    ``hashCode`` (``String.hashCode`` by default); ``initial_capacity``: the
    ``new HashMap<>(n)`` the map was made with."""
    items = list(dict.fromkeys(keys))
    capacity = _table_size_for(initial_capacity)
    while len(items) > capacity * _LOAD_FACTOR:
        capacity *= 2
    position = {k: i for i, k in enumerate(items)}
    return sorted(items, key=lambda k: (_spread(hash_code(k)) & (capacity - 1), position[k]))
