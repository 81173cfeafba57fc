"""Filter pushdown of the ``kraft`` data source (PySpark 4.1+ ``pushFilters``).

Spark hands the reader the conjuncts of a query's ``WHERE`` it can express
(``EqualTo``, ``In``, ``GreaterThan``...). Those on ``record_type``,
``offset``, ``cluster_id``, ``node_id``, ``file`` and ``file_kind`` are kept
here and used to read less:

- files of another cluster/node/kind, or not named, are not opened;
- batches whose offsets lie outside the range are not decoded;
- records of other types are skipped after reading two bytes of their value
  (control batches are skipped whole when no control type is asked for, and
  metadata batches when only control types are).

Pushdown here only ever drops rows the filter would drop: every filter is
still handed back to Spark, which evaluates it on what is left, so a query's
answer is the same with and without pushdown. Rows that describe a problem
(``error_kind``) have a null ``record_type`` and ``offset``, so a filter on
those columns drops them too, and records skipped unread are not checked.

Pure Python on plain values: the filter objects are recognised by class name
and attributes, so this module is tested without Spark.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

#: ``ControlRecordType`` names (record_type of control records)
CONTROL_TYPES = frozenset(
    {"ABORT", "COMMIT", "QUORUM_REASSIGNMENT", "LEADER_CHANGE", "SNAPSHOT_HEADER", "SNAPSHOT_FOOTER",
     "KRAFT_VERSION", "KRAFT_VOTERS", "UNKNOWN"}
)

_SET_COLUMNS = ("record_type", "cluster_id", "node_id", "file", "file_kind")


@dataclass(frozen=True)
class Pushed:
    """What a read keeps: ``None`` means no constraint on that column."""

    record_types: frozenset[str] | None = None
    cluster_ids: frozenset[Any] | None = None
    node_ids: frozenset[Any] | None = None
    files: frozenset[Any] | None = None
    file_kinds: frozenset[Any] | None = None
    offset_min: int | None = None  # inclusive
    offset_max: int | None = None  # inclusive
    unsatisfiable: bool = field(default=False)

    @property
    def any(self) -> bool:
        return self != Pushed()

    @property
    def row_level(self) -> bool:
        """Records are filtered one by one (problem rows are then dropped)."""
        return self.record_types is not None or self.offset_min is not None or self.offset_max is not None

    def keeps_file(self, cluster_id: Any, node_id: Any, path: str, kind: str) -> bool:
        if self.unsatisfiable:
            return False
        return all(
            allowed is None or value in allowed
            for allowed, value in (
                (self.cluster_ids, cluster_id), (self.node_ids, node_id), (self.files, path), (self.file_kinds, kind)
            )
        )

    def keeps_batch(self, base_offset: int, last_offset: int, is_control: bool) -> bool:
        if self.unsatisfiable:
            return False
        if self.offset_min is not None and last_offset < self.offset_min:
            return False
        if self.offset_max is not None and base_offset > self.offset_max:
            return False
        types = self.record_types
        if types is not None:
            wants_control = not types.isdisjoint(CONTROL_TYPES)
            wants_metadata = not types <= CONTROL_TYPES
            return wants_control if is_control else wants_metadata
        return True

    def keeps_offset(self, offset: int) -> bool:
        return (self.offset_min is None or offset >= self.offset_min) and (
            self.offset_max is None or offset <= self.offset_max
        )


def _column(f: Any) -> str | None:
    attribute = getattr(f, "attribute", None)
    if isinstance(attribute, tuple) and len(attribute) == 1 and isinstance(attribute[0], str):
        return attribute[0].lower()
    return None


def _intersect(current: frozenset[Any] | None, values: Iterable[Any]) -> frozenset[Any]:
    new = frozenset(v for v in values if v is not None)
    return new if current is None else current & new


def push(filters: Iterable[Any], pushed: Pushed | None = None) -> Pushed:
    """Fold the filters (an AND) into what a read keeps."""
    p = pushed or Pushed()
    for f in filters:
        kind = type(f).__name__
        column = _column(f)
        if column is None:
            continue
        if column in _SET_COLUMNS and kind in ("EqualTo", "In"):
            values = f.value if kind == "In" else (f.value,)
            name = {"record_type": "record_types", "cluster_id": "cluster_ids", "node_id": "node_ids",
                    "file": "files", "file_kind": "file_kinds"}[column]
            changes: dict[str, Any] = {name: _intersect(getattr(p, name), values)}
            p = replace(p, **changes)
        elif column == "offset" and kind in ("EqualTo", "In", "GreaterThan", "GreaterThanOrEqual",
                                              "LessThan", "LessThanOrEqual"):
            values = list(f.value) if kind == "In" else [f.value]
            if not values or any(not isinstance(v, int) or isinstance(v, bool) for v in values):
                continue
            lo, hi = p.offset_min, p.offset_max
            if kind in ("EqualTo", "In"):
                lo = max(lo, min(values)) if lo is not None else min(values)
                hi = min(hi, max(values)) if hi is not None else max(values)
            elif kind == "GreaterThan":
                lo = max(lo, values[0] + 1) if lo is not None else values[0] + 1
            elif kind == "GreaterThanOrEqual":
                lo = max(lo, values[0]) if lo is not None else values[0]
            elif kind == "LessThan":
                hi = min(hi, values[0] - 1) if hi is not None else values[0] - 1
            else:
                hi = min(hi, values[0]) if hi is not None else values[0]
            p = replace(p, offset_min=lo, offset_max=hi)
    empty_set = any(s is not None and not s for s in (p.record_types, p.cluster_ids, p.node_ids, p.files, p.file_kinds))
    empty_range = p.offset_min is not None and p.offset_max is not None and p.offset_min > p.offset_max
    if empty_set or empty_range:
        p = replace(p, unsatisfiable=True)
    return p
