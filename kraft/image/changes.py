"""The committed log as a stream of items, and the change stream people read.

Whatever the source -- a live observer, a metadata log directory, a
``.checkpoint`` file -- committed data reaches the image as two kinds of
items, in offset order:

* :class:`LogSnapshot`: the whole state as of a snapshot (Kafka's
  ``handleLoadSnapshot``); it replaces everything before it;
* :class:`LogBatch`: one committed batch (Kafka's ``handleCommit``).

:func:`apply_item` feeds one to an :class:`~kraft.image.builder.ImageBuilder`.
:func:`changes_of` turns one into what ``kraft observe --follow`` prints:
one :class:`Change` per committed record (offset, epoch, timestamp, type,
Kafka JSON payload), or a :class:`SnapshotChange` for a snapshot load.
Records a newer Kafka wrote are shown raw (base64) with their type id.
"""

from __future__ import annotations

import base64
import datetime as _dt
import json
from dataclasses import dataclass
from typing import Any

from kraft.image.builder import ImageBuilder
from kraft.image.decode import UnknownRecord, decode_control_value_safe, decode_metadata_value, record_type_name
from kraft.messages.json_form import to_json
from kraft.records.control import ControlRecordType, EndTransactionMarker
from kraft.records.view import OffsetAndEpoch

__all__ = ["LogBatch", "LogSnapshot", "LogItem", "Change", "SnapshotChange", "apply_item", "changes_of",
           "format_jsonl", "format_table", "TABLE_HEADER"]


@dataclass(frozen=True, slots=True)
class LogBatch:
    """A committed batch: record values in offset order. For a control batch,
    ``control_types`` gives each record's control type id when known."""

    base_offset: int
    last_offset: int
    epoch: int
    append_time_ms: int
    is_control: bool
    values: tuple[bytes, ...]
    control_types: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class LogSnapshot:
    """A snapshot's data records; the image is at ``snapshot_id.offset - 1`` after it."""

    snapshot_id: OffsetAndEpoch
    values: tuple[bytes, ...]
    timestamp_ms: int


LogItem = LogBatch | LogSnapshot


def apply_item(builder: ImageBuilder, item: LogItem) -> None:
    if isinstance(item, LogSnapshot):
        builder.load_snapshot(item.snapshot_id, item.values, item.timestamp_ms)
    else:
        builder.apply_batch(item.base_offset, item.epoch, item.append_time_ms, item.values,
                            is_control=item.is_control, last_offset=item.last_offset)


@dataclass(frozen=True, slots=True)
class Change:
    """One committed record as the change stream shows it. ``data`` is the
    message in Kafka's JSON form; ``None`` with ``raw`` set when we cannot
    decode it (``error`` says why)."""

    offset: int
    epoch: int
    timestamp_ms: int
    type: str
    type_id: int | None
    version: int | None
    data: dict[str, Any] | None
    control: bool = False
    raw: bytes | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"offset": self.offset, "epoch": self.epoch, "timestamp": self.timestamp_ms}
        if self.control:
            out["control"] = True
        out["type"] = self.type
        if self.data is None:
            out["typeId"] = self.type_id
        if self.version is not None:
            out["version"] = self.version
        if self.data is not None:
            out["data"] = self.data
        else:
            out["raw"] = base64.b64encode(self.raw or b"").decode("ascii")
            if self.error:
                out["error"] = self.error
        return out


@dataclass(frozen=True, slots=True)
class SnapshotChange:
    """The state was (re)loaded from a snapshot: what came before is replaced."""

    snapshot_id: OffsetAndEpoch
    records: int
    timestamp_ms: int

    def to_json(self) -> dict[str, Any]:
        return {"snapshot": {"endOffset": self.snapshot_id.offset, "epoch": self.snapshot_id.epoch},
                "records": self.records, "timestamp": self.timestamp_ms, "type": "SNAPSHOT"}


def _metadata_change(offset: int, epoch: int, ts: int, value: bytes) -> Change:
    record = decode_metadata_value(value)
    if isinstance(record, UnknownRecord):
        return Change(offset, epoch, ts, record.type_name, record.api_key, record.version, None,
                      raw=record.raw, error=record.reason)
    return Change(offset, epoch, ts, record_type_name(record), record.api_key, record.version,
                  to_json(record.message, record.version))


def _control_change(offset: int, epoch: int, ts: int, value: bytes, type_id: int | None) -> Change:
    if type_id is None:
        return Change(offset, epoch, ts, "CONTROL", None, None, None, control=True, raw=value,
                      error="control record type not known (the source gave values only)")
    message = decode_control_value_safe(type_id, value)
    ctype = ControlRecordType.from_type_id(type_id)
    if isinstance(message, UnknownRecord):
        return Change(offset, epoch, ts, ctype.name if ctype is not ControlRecordType.UNKNOWN else
                      f"UNKNOWN_CONTROL_RECORD_TYPE_{type_id}", type_id, None, None, control=True, raw=value,
                      error=message.reason)
    if isinstance(message, EndTransactionMarker):
        data = {"version": message.version, "coordinatorEpoch": message.coordinator_epoch}
        return Change(offset, epoch, ts, ctype.name, type_id, message.version, data, control=True)
    cls = type(message)
    version = min(max(getattr(message, "version", 0), cls.LOWEST_VERSION), cls.HIGHEST_VERSION)
    return Change(offset, epoch, ts, ctype.name, type_id, version, to_json(message, version), control=True)


def changes_of(item: LogItem) -> list[Change | SnapshotChange]:
    if isinstance(item, LogSnapshot):
        return [SnapshotChange(item.snapshot_id, len(item.values), item.timestamp_ms)]
    out: list[Change | SnapshotChange] = []
    for i, value in enumerate(item.values):
        offset = item.base_offset + i
        if item.is_control:
            type_id = item.control_types[i] if item.control_types is not None and i < len(item.control_types) else None
            out.append(_control_change(offset, item.epoch, item.append_time_ms, value, type_id))
        else:
            out.append(_metadata_change(offset, item.epoch, item.append_time_ms, value))
    return out


def format_jsonl(change: Change | SnapshotChange) -> str:
    """One compact JSON line (no ASCII escaping, as Jackson writes)."""
    return json.dumps(change.to_json(), separators=(",", ":"), ensure_ascii=False)


TABLE_HEADER = f"{'OFFSET':>10}  {'EPOCH':>5}  {'TIMESTAMP':<23}  {'TYPE':<36}  DATA"


def _time(ms: int) -> str:
    if ms < 0:
        return "-"
    try:
        return _dt.datetime.fromtimestamp(ms / 1000, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
    except (OverflowError, OSError, ValueError):
        return str(ms)


def format_table(change: Change | SnapshotChange, width: int = 200) -> str:
    """One readable line under :data:`TABLE_HEADER`."""
    if isinstance(change, SnapshotChange):
        sid = change.snapshot_id
        text = f"{'-':>10}  {sid.epoch:>5}  {_time(change.timestamp_ms):<23}  {'SNAPSHOT':<36}  " \
               f"loaded snapshot {sid.offset:020d}-{sid.epoch:010d} ({change.records} records)"
    else:
        if change.data is not None:
            detail = json.dumps(change.data, separators=(",", ":"), ensure_ascii=False)
        else:
            detail = f"type id {change.type_id}, {len(change.raw or b'')} bytes: {change.error or 'unknown'}"
        text = f"{change.offset:>10}  {change.epoch:>5}  {_time(change.timestamp_ms):<23}  {change.type:<36}  {detail}"
    return text if len(text) <= width else text[: max(width - 3, 0)] + "..."
