"""Record values to messages, without ever raising on what a newer Kafka
may write.

A committed metadata record is ``frameVersion | type | version | message``
(Kafka's ``MetadataRecordSerde``). Three outcomes:

* a type and version we know: a :class:`~kraft.records.metadata.MetadataRecord`;
* a type we do not know, or a version newer than ours: an
  :class:`UnknownRecord` with ``newer=True`` -- a newer Kafka wrote it; the
  image leaves it alone and it is shown raw, with its type id;
* bytes that do not decode at all: an :class:`UnknownRecord` with
  ``newer=False`` and the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kraft.messages import registry
from kraft.records.control import ControlRecordType, decode_control_value
from kraft.records.metadata import MetadataRecord, MetadataRecordError, metadata_type_name, read_frame_header

__all__ = ["UnknownRecord", "decode_metadata_value", "decode_control_value_safe", "record_type_name"]


@dataclass(frozen=True, slots=True)
class UnknownRecord:
    """A record the image cannot apply. ``api_key``/``version`` are ``None``
    when even the frame header is unreadable."""

    api_key: int | None
    version: int | None
    raw: bytes
    reason: str
    newer: bool

    @property
    def type_name(self) -> str:
        if self.api_key is None:
            return "UNREADABLE_RECORD"
        return f"UNKNOWN_METADATA_RECORD_TYPE_{self.api_key}"


def decode_metadata_value(value: bytes | memoryview | None) -> MetadataRecord | UnknownRecord:
    raw = b"" if value is None else bytes(value)
    try:
        api_key, version, pos = read_frame_header(raw)
    except MetadataRecordError as e:
        return UnknownRecord(None, None, raw, str(e), newer=False)
    try:
        cls = registry.metadata_record_class(api_key)
    except KeyError:
        return UnknownRecord(api_key, version, raw, f"unknown metadata record type {api_key}", newer=True)
    if version > cls.HIGHEST_VERSION:
        return UnknownRecord(api_key, version, raw,
                             f"{cls.__name__} version {version} is newer than ours ({cls.HIGHEST_VERSION})",
                             newer=True)
    try:
        message = cls.decode(memoryview(raw)[pos:], version)
    except Exception as e:  # any decode failure of a known type is corruption
        return UnknownRecord(api_key, version, raw, f"cannot decode {cls.__name__} v{version}: {e}", newer=False)
    return MetadataRecord(api_key, version, message)


def decode_control_value_safe(type_id: int, value: bytes | None) -> Any | UnknownRecord:
    """A control record's message (``LeaderChangeMessage``, ``VotersRecord``, ...)
    or an :class:`UnknownRecord` for an unknown type or bad bytes."""
    raw = b"" if value is None else bytes(value)
    if ControlRecordType.from_type_id(type_id) is ControlRecordType.UNKNOWN:
        return UnknownRecord(type_id, None, raw, f"unknown control record type {type_id}", newer=True)
    try:
        return decode_control_value(type_id, value)
    except Exception as e:
        return UnknownRecord(type_id, None, raw, str(e), newer=False)


def record_type_name(record: MetadataRecord | UnknownRecord) -> str:
    """``TOPIC_RECORD`` etc. (Kafka's ``MetadataRecordType`` constant names)."""
    if isinstance(record, UnknownRecord):
        return record.type_name
    return metadata_type_name(record.api_key)
