"""Control records: the records of a batch whose control attribute is set.

Key: int16 version (0) + int16 type. Value, by type:

- ABORT (0) / COMMIT (1): Kafka's ``EndTransactionMarker``, int16 version +
  int32 coordinator epoch;
- LEADER_CHANGE (2), SNAPSHOT_HEADER (3), SNAPSHOT_FOOTER (4),
  KRAFT_VERSION (5), KRAFT_VOTERS (6): the generated message
  (``LeaderChangeMessage``, ``SnapshotHeaderRecord``, ...) serialized at
  version 0, as Kafka's ``ControlRecordUtils`` reads and writes them; each
  carries its own data version in its ``Version`` field.

Message classes come from ``kraft.messages.registry.CONTROL_RECORD_CLASSES``.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kraft.records.batch import Record, build_batch
from kraft.records.compression import Compression
from kraft.records.errors import RecordsError

CONTROL_KEY = struct.Struct(">hh")
CURRENT_CONTROL_RECORD_KEY_VERSION = 0
#: Version of the serialized control messages (Kafka's *_CURRENT_VERSION constants).
CONTROL_MESSAGE_VERSION = 0
_END_TXN_MARKER = struct.Struct(">hi")


class ControlRecordError(RecordsError, ValueError):
    """A control record whose key or value cannot be read."""


class ControlRecordType(enum.IntEnum):
    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6

    @classmethod
    def from_type_id(cls, type_id: int) -> ControlRecordType:
        """Kafka's ``ControlRecordType.fromTypeId``: unknown ids map to UNKNOWN."""
        try:
            member = cls(type_id)
        except ValueError:
            return cls.UNKNOWN
        return cls.UNKNOWN if member is cls.UNKNOWN else member

    def __str__(self) -> str:
        return self.name


def control_key(control_type: int) -> bytes:
    return CONTROL_KEY.pack(CURRENT_CONTROL_RECORD_KEY_VERSION, int(control_type))


def parse_control_type_id(key: bytes | None) -> int:
    """Kafka's ``ControlRecordType.parseTypeId``: the int16 type of a control key."""
    if key is None or len(key) < CONTROL_KEY.size:
        size = -1 if key is None else len(key)
        raise ControlRecordError(
            f"invalid control record key size {size}; must have at least {CONTROL_KEY.size} bytes"
        )
    version, type_id = CONTROL_KEY.unpack_from(key)
    if version < 0:
        raise ControlRecordError(f"invalid version found for control record: {version}. May indicate data corruption")
    return type_id


@dataclass(frozen=True, slots=True)
class EndTransactionMarker:
    """The value of an ABORT or COMMIT control record."""

    control_type: ControlRecordType
    coordinator_epoch: int
    version: int = 0

    def encode_value(self) -> bytes:
        return _END_TXN_MARKER.pack(self.version, self.coordinator_epoch)

    @classmethod
    def decode(cls, control_type: ControlRecordType, value: bytes | None) -> EndTransactionMarker:
        if value is None or len(value) < _END_TXN_MARKER.size:
            raise ControlRecordError(
                f"invalid end transaction marker value size {-1 if value is None else len(value)}"
            )
        version, coordinator_epoch = _END_TXN_MARKER.unpack_from(value)
        if version < 0:
            raise ControlRecordError(f"invalid version found for end transaction marker: {version}")
        return cls(control_type, coordinator_epoch, version)


def control_message_class(control_type: int) -> type[Any]:
    """The generated class for a control type id (2 -> LeaderChangeMessage, ...)."""
    from kraft.messages.registry import CONTROL_RECORD_CLASSES

    try:
        return CONTROL_RECORD_CLASSES[int(control_type)]
    except KeyError:
        raise ControlRecordError(f"no message class for control record type {control_type}") from None


@dataclass(frozen=True, slots=True)
class ControlRecord:
    """A decoded control record: the raw type id, its enum, and the message
    (``EndTransactionMarker`` or a generated class; ``None`` for UNKNOWN)."""

    type_id: int
    type: ControlRecordType
    message: Any

    @property
    def data_version(self) -> int:
        """The version the message itself declares (its ``Version`` field)."""
        return getattr(self.message, "version", 0)


def decode_control_value(control_type: int, value: bytes | None) -> Any:
    ctype = ControlRecordType.from_type_id(control_type)
    if ctype in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        return EndTransactionMarker.decode(ctype, value)
    if ctype is ControlRecordType.UNKNOWN:
        return None
    if value is None:
        raise ControlRecordError(f"{ctype.name} control record has a null value")
    cls = control_message_class(ctype)
    try:
        return cls.decode(value, CONTROL_MESSAGE_VERSION)
    except Exception as exc:
        raise ControlRecordError(f"cannot decode {ctype.name} control record: {exc}") from exc


def decode_control_record(record: Record) -> ControlRecord:
    type_id = parse_control_type_id(record.key)
    return ControlRecord(type_id, ControlRecordType.from_type_id(type_id), decode_control_value(type_id, record.value))


def encode_control_value(message: Any) -> bytes:
    if isinstance(message, EndTransactionMarker):
        return message.encode_value()
    return message.encode(CONTROL_MESSAGE_VERSION)


def control_type_of(message: Any) -> ControlRecordType:
    """The control type a message is written under."""
    if isinstance(message, EndTransactionMarker):
        return message.control_type
    from kraft.messages.registry import CONTROL_RECORD_CLASSES

    for type_id in (2, 3, 4, 5, 6):
        if isinstance(message, CONTROL_RECORD_CLASSES[type_id]):
            return ControlRecordType(type_id)
    raise ControlRecordError(f"{type(message).__name__} is not a control record message")


def control_record(message: Any, offset: int, timestamp: int) -> Record:
    return Record(offset, timestamp, control_key(control_type_of(message)), encode_control_value(message))


def build_control_batch(
    messages: Sequence[Any],
    *,
    base_offset: int,
    partition_leader_epoch: int,
    timestamp: int,
    compression: Compression = Compression.NONE,
) -> bytes:
    """One control batch holding ``messages`` in order, at consecutive offsets
    (as ``MemoryRecords.withLeaderChangeMessage`` and the snapshot writer do)."""
    if not messages:
        raise ValueError("a control batch needs at least one record")
    records = [control_record(m, base_offset + i, timestamp) for i, m in enumerate(messages)]
    return build_batch(
        records,
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        is_control=True,
        compression=compression,
    )


def leader_change_batch(
    *,
    base_offset: int,
    epoch: int,
    leader_id: int,
    voters: Sequence[int],
    granting_voters: Sequence[int],
    timestamp: int,
) -> bytes:
    """The LeaderChange control batch a new KRaft leader appends first in its
    epoch (``MemoryRecords.withLeaderChangeMessage``)."""
    from kraft.messages.generated import leader_change_message as lcm

    message = lcm.LeaderChangeMessage(
        version=0,
        leader_id=leader_id,
        voters=[lcm.Voter(voter_id=v) for v in voters],
        granting_voters=[lcm.Voter(voter_id=v) for v in granting_voters],
    )
    return build_control_batch([message], base_offset=base_offset, partition_leader_epoch=epoch, timestamp=timestamp)
