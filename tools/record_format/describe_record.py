"""How one record of a metadata-log file is described: its type, version,
decoded message and Kafka's JSON form.

``kraft dump-log --json`` and the Spark data source (``kraft.tools.spark.rows``)
both describe records through this module, so a Spark row and a dump-log line
agree record for record: same batches found in a file, same type names, same
payload JSON, same errors.

Control records are described by their control type (``LEADER_CHANGE``,
``SNAPSHOT_HEADER``, ...) and the message's JSON; metadata records by
``MetadataRecordType`` (``TOPIC_RECORD``, ...) and the payload that
``kafka-dump-log.sh --cluster-metadata-decoder`` prints:
``{"type": ..., "version": ..., "data": {...}}``.

A record that cannot be decoded is described all the same, with what could be
read (the type id of an unknown type, the version of a too-new record) and an
error kind: ``unknown_record_type``, ``unsupported_version`` or ``bad_record``.
"""

from __future__ import annotations

import base64
import json
import struct
from dataclasses import dataclass
from typing import Any

from kraft.records.batch import HEADER, HEADER_SIZE, LOG_OVERHEAD, MAGIC_V2, MIN_BATCH_LENGTH, Record, RecordBatch
from kraft.records.control import ControlRecordType, decode_control_value, parse_control_type_id
from kraft.records.errors import RecordsError
from kraft.records.metadata import decode_metadata_record, metadata_type_name, read_frame_header

#: Kafka's ``Records.HEADER_SIZE_UP_TO_MAGIC``: fewer bytes than this at the
#: end of a file are a torn tail, not a batch.
HEADER_SIZE_UP_TO_MAGIC = LOG_OVERHEAD + 5
#: ``LegacyRecord.RECORD_OVERHEAD_V0``: a smaller batch length is corruption.
MIN_RECORD_OVERHEAD = 14

_PREFIX = struct.Struct(">qi")

# Error kinds of a described record.
UNKNOWN_RECORD_TYPE = "unknown_record_type"
UNSUPPORTED_VERSION = "unsupported_version"
BAD_RECORD = "bad_record"


def java_json(value: Any) -> str:
    """JSON as Jackson's ``JsonNode.toString`` writes it: compact, no ASCII escaping."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def codec_name(batch: RecordBatch) -> str:
    """Kafka's ``CompressionType.name`` of a batch (``unknown(N)`` for a bad id)."""
    try:
        return batch.compression.kafka_name
    except RecordsError:
        return f"unknown({batch.attributes & 0x07})"


def message_json(message: Any) -> dict[str, Any]:
    """A control message in Kafka's JSON form, at the version it declares."""
    from kraft.messages.json_form import to_json

    cls = type(message)
    version = min(max(getattr(message, "version", 0), cls.LOWEST_VERSION), cls.HIGHEST_VERSION)
    return to_json(message, version)


def read_file_batches(
    data: bytes | memoryview, start: int = 0, *, until_last_offset: int | None = None
) -> tuple[list[RecordBatch], int, str | None]:
    """Batches as Kafka's ``FileLogInputStream`` finds them in ``data`` from
    ``start``: stop at a batch that does not fit (torn tail); a batch too
    short or of an unknown magic is corruption. Returns the batches
    (positions in ``data``), the valid byte count, and the corruption found
    (if any). With ``until_last_offset`` the scan stops after the first batch
    whose last offset reaches it (an index lookup reads no further, as
    Kafka's lazy batch iterator does not)."""
    batches: list[RecordBatch] = []
    pos = start
    end = len(data)
    while end - pos >= HEADER_SIZE_UP_TO_MAGIC:
        _, length = _PREFIX.unpack_from(data, pos)
        size = length + LOG_OVERHEAD
        if length < MIN_RECORD_OVERHEAD:
            return batches, pos, f"Found record size {length} smaller than minimum record overhead ({MIN_RECORD_OVERHEAD})"
        if pos + size > end:
            break
        magic = data[pos + 16]
        if magic != MAGIC_V2:
            return batches, pos, f"unsupported magic {magic} (only v2 batches are dumped)"
        if length < MIN_BATCH_LENGTH or size < HEADER_SIZE:
            return batches, pos, f"batch length {length} is below the v2 minimum {MIN_BATCH_LENGTH}"
        batch = RecordBatch(HEADER.unpack_from(data, pos), data, pos)
        batches.append(batch)
        pos += size
        if until_last_offset is not None and batch.last_offset >= until_last_offset:
            break
    return batches, pos, None


@dataclass(slots=True)
class RecordPayload:
    """What one record is: ``type_name`` (``LEADER_CHANGE``, ``TOPIC_RECORD``;
    ``None`` when unknown), ``type_id`` (control type or metadata api key),
    ``version`` (the control message's data version or the metadata record
    version), the decoded ``message`` and its Kafka ``json`` (``None`` when it
    could not be decoded: then ``error`` and ``error_kind`` say why)."""

    is_control: bool
    type_name: str | None
    type_id: int | None
    version: int | None
    message: Any
    json: dict[str, Any] | None
    error: str | None = None
    error_kind: str | None = None


def describe_control(record: Record) -> RecordPayload:
    """A control record: ``ControlRecordType`` name and the message's JSON.
    ABORT/COMMIT markers are ``{"version", "coordinatorEpoch"}``; an UNKNOWN
    type has no JSON and no error (Kafka reads past it too)."""
    try:
        type_id = parse_control_type_id(record.key)
    except Exception as exc:  # noqa: BLE001 - a damaged record is described, not fatal
        return RecordPayload(True, None, None, None, None, None, str(exc), BAD_RECORD)
    ctype = ControlRecordType.from_type_id(type_id)
    try:
        message = decode_control_value(type_id, record.value)
    except Exception as exc:  # noqa: BLE001
        return RecordPayload(True, ctype.name, type_id, None, None, None, str(exc), BAD_RECORD)
    if ctype in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        node = {"version": message.version, "coordinatorEpoch": message.coordinator_epoch}
        return RecordPayload(True, ctype.name, type_id, message.version, message, node)
    if message is None:
        return RecordPayload(True, ctype.name, type_id, None, None, None)
    version = getattr(message, "version", 0)
    try:
        node = message_json(message)
    except Exception as exc:  # noqa: BLE001
        return RecordPayload(True, ctype.name, type_id, version, message, None, str(exc), BAD_RECORD)
    return RecordPayload(True, ctype.name, type_id, version, message, node)


def describe_metadata(record: Record) -> RecordPayload:
    """A ``__cluster_metadata`` record: ``MetadataRecordType`` name and the
    ``{"type", "version", "data"}`` payload of ``--cluster-metadata-decoder``."""
    from kraft.messages.json_form import to_json

    try:
        decoded = decode_metadata_record(record.value)
        name = metadata_type_name(decoded.api_key)
        node = {"type": name, "version": decoded.version, "data": to_json(decoded.message, decoded.version)}
    except Exception as exc:  # noqa: BLE001 - described with what could be read
        return _undecodable_metadata(record, exc)
    return RecordPayload(False, name, decoded.api_key, decoded.version, decoded.message, node)


def _undecodable_metadata(record: Record, exc: Exception) -> RecordPayload:
    """Keep the type id and version of a record we cannot decode, and say why."""
    try:
        api_key, version, _ = read_frame_header(record.value)
    except Exception:  # noqa: BLE001 - not even a frame
        return RecordPayload(False, None, None, None, None, None, str(exc), BAD_RECORD)
    from kraft.messages import registry

    try:
        cls = registry.metadata_record_class(api_key)
    except KeyError:
        return RecordPayload(False, None, api_key, version, None, None, str(exc), UNKNOWN_RECORD_TYPE)
    name = metadata_type_name(api_key)
    kind = UNSUPPORTED_VERSION if version > cls.HIGHEST_VERSION else BAD_RECORD
    return RecordPayload(False, name, api_key, version, None, None, str(exc), kind)


def describe_record(batch: RecordBatch, record: Record) -> RecordPayload:
    """A record of ``batch``, as a control record or a metadata record."""
    return describe_control(record) if batch.is_control else describe_metadata(record)


def record_json(batch: RecordBatch, record: Record, file: str, *, metadata_decoder: bool) -> dict[str, Any]:
    """The object ``kraft dump-log --json`` prints for one record."""
    node: dict[str, Any] = {
        "file": file,
        "position": batch.position,
        "baseOffset": batch.base_offset,
        "lastOffset": batch.last_offset,
        "partitionLeaderEpoch": batch.partition_leader_epoch,
        "isControl": batch.is_control,
        "isTransactional": batch.is_transactional,
        "compresscodec": codec_name(batch),
        "crcValid": batch.is_valid(),
        "offset": record.offset,
        "timestampType": str(batch.timestamp_type),
        "timestamp": record.timestamp,
        "keySize": record.key_size,
        "valueSize": record.value_size,
        "headerKeys": [k for k, _ in record.headers],
    }
    if batch.is_control:
        described = describe_control(record)
        # Kafka names the type only once the value decoded (a JSON failure
        # after that still names it).
        if described.type_name is not None and (described.error is None or described.message is not None):
            node["controlType"] = described.type_name
        if described.json is not None:
            node["control"] = described.json
        if described.error is not None:
            node["error"] = described.error
    elif metadata_decoder:
        described = describe_metadata(record)
        if described.json is not None:
            node["payload"] = described.json
        else:
            node["error"] = f"Error at {record.offset}, skipping. {described.error}"
    else:
        node["key"] = None if record.key is None else base64.b64encode(bytes(record.key)).decode("ascii")
        node["value"] = None if record.value is None else base64.b64encode(bytes(record.value)).decode("ascii")
    return node
