"""``__cluster_metadata`` record values: Kafka's ``MetadataRecordSerde`` frame.

A metadata record's value is::

    frameVersion uvarint (1) | apiKey uvarint (record type) | version uvarint | message

The message is decoded with the generated class that
``kraft.messages.registry.metadata_record_class`` returns for the type.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from kraft.records.errors import RecordsError
from kraft.records.varint import read_uvarint, uvarint

FRAME_VERSION = 1


class MetadataRecordError(RecordsError, ValueError):
    """A metadata record value that cannot be decoded (Kafka's ``MetadataParseException``)."""


@dataclass(frozen=True, slots=True)
class MetadataRecord:
    """A decoded metadata record: type id, version, and the generated message."""

    api_key: int
    version: int
    message: Any

    @property
    def type_name(self) -> str:
        return metadata_type_name(self.api_key)


def kafka_snake_upper(name: str) -> str:
    """Kafka's ``MessageGenerator.toSnakeCase(name).toUpperCase()``: the enum
    constant names of ``MetadataRecordType`` (``TopicRecord`` -> ``TOPIC_RECORD``,
    ``KRaftVersionRecord`` -> ``KRAFT_VERSION_RECORD``)."""
    out = []
    prev_was_capital = True
    for c in name:
        if c.isupper():
            if not prev_was_capital:
                out.append("_")
            out.append(c.lower())
            prev_was_capital = True
        else:
            out.append(c)
            prev_was_capital = False
    return "".join(out).upper()


def _registry() -> Any:
    from kraft.messages import registry

    return registry


@cache
def metadata_type_name(api_key: int) -> str:
    """``MetadataRecordType.fromId(apiKey).toString()``; raises for an unknown type."""
    try:
        cls = _registry().metadata_record_class(api_key)
    except KeyError:
        raise MetadataRecordError(f"Unknown metadata id {api_key}") from None
    return kafka_snake_upper(cls.__name__)


def _read_small_uvarint(buf: bytes | memoryview, pos: int, what: str) -> tuple[int, int]:
    try:
        value, pos = read_uvarint(buf, pos)
    except RecordsError:
        raise MetadataRecordError(f"Error while reading unsigned varint for {what}") from None
    if value > 0x7FFF:
        raise MetadataRecordError(f"Value for {what} was too large, expected a short value but got {value}")
    return value, pos


def read_frame_header(value: bytes | memoryview | None) -> tuple[int, int, int]:
    """``(api_key, version, message_position)`` of a metadata record value."""
    if value is None:
        raise MetadataRecordError("metadata record has a null value")
    frame_version, pos = _read_small_uvarint(value, 0, "frame version")
    if frame_version == 0:  # AbstractApiMessageSerde.read names KRaft's 2.8 preview
        raise MetadataRecordError(
            "Could not deserialize metadata record with frame version 0. "
            "Note that upgrades from the preview release of KRaft in 2.8 to newer versions are not supported."
        )
    if frame_version != FRAME_VERSION:
        raise MetadataRecordError(
            f"Could not deserialize metadata record due to unknown frame version {frame_version}"
            f"(only frame version {FRAME_VERSION} is supported)"
        )
    api_key, pos = _read_small_uvarint(value, pos, "type")
    version, pos = _read_small_uvarint(value, pos, "version")
    return api_key, version, pos


def decode_metadata_record(value: bytes | memoryview | None) -> MetadataRecord:
    """Decode a metadata record value into its generated class."""
    if value is None:
        raise MetadataRecordError("metadata record has a null value")
    api_key, version, pos = read_frame_header(value)
    try:
        cls = _registry().metadata_record_class(api_key)
    except KeyError:
        raise MetadataRecordError(f"Unknown metadata id {api_key}") from None
    try:
        message = cls.decode(memoryview(value)[pos:], version)
    except Exception as exc:
        raise MetadataRecordError(f"Failed to deserialize record with type {api_key}: {exc}") from exc
    return MetadataRecord(api_key, version, message)


def encode_metadata_record(message: Any, version: int | None = None) -> bytes:
    """Frame a generated metadata message (at ``version``, default its highest)."""
    cls = type(message)
    api_key = getattr(cls, "API_KEY", None)
    if api_key is None or getattr(cls, "MESSAGE_TYPE", None) != "metadata":
        raise MetadataRecordError(f"{cls.__name__} is not a metadata record")
    if version is None:
        version = cls.HIGHEST_VERSION
    return uvarint(FRAME_VERSION) + uvarint(api_key) + uvarint(version) + message.encode(version)


def metadata_payload_json(value: bytes | memoryview | None) -> dict[str, Any]:
    """What ``kafka-dump-log.sh --cluster-metadata-decoder`` prints as the
    payload: ``{"type": "TOPIC_RECORD", "version": 0, "data": {...}}``."""
    from kraft.messages.json_form import to_json

    record = decode_metadata_record(value)
    return {
        "type": metadata_type_name(record.api_key),
        "version": record.version,
        "data": to_json(record.message, record.version),
    }
