"""The fixed binary layouts of a Kafka log directory, declared once with construct.

These declarations are the reference for layouts that are *not* on a hot path
(and documentation for the one that is):

- :data:`OFFSET_INDEX_ENTRY` / :data:`TIME_INDEX_ENTRY`: one entry of ``NNN.index``
  (Kafka's ``OffsetIndex``) and ``NNN.timeindex`` (``TimeIndex``);
- :data:`PRODUCER_SNAPSHOT`: ``NNN.snapshot``, the producer-state file
  ``ProducerStateManager.writeSnapshot`` leaves beside every segment
  (``ProducerSnapshot.json`` v1: version int16, CRC32C uint32 of everything
  after it, then an int32-counted array of 46-byte producer entries);
- :data:`ABORTED_TXN`: one entry of ``NNN.txnindex`` (``AbortedTxn``);
- :data:`RECORD_BATCH_HEADER`: the 61-byte v2 batch header. The batch reader
  (:mod:`kraft.records.batch`) keeps its hand-written ``struct`` parser, which
  is ~30x faster per header; this declaration documents the format and a test
  checks on every fixture that both read the same fields.

Parsers used in a loop are compiled (``.compile()``); the readers here return
plain tuples/ints so callers do not depend on construct's containers.
"""

from __future__ import annotations

from dataclasses import dataclass

from construct import (
    Array,
    BitsInteger,
    BitStruct,
    Flag,
    GreedyRange,
    Int8sb,
    Int16sb,
    Int32sb,
    Int32ub,
    Int64sb,
    Padding,
    Struct,
    this,
)
from crc32c import crc32c

OFFSET_INDEX_ENTRY = Struct(
    "relative_offset" / Int32sb,  # offset - segment base offset
    "position" / Int32sb,  # byte position of the batch in the .log
)
TIME_INDEX_ENTRY = Struct(
    "timestamp" / Int64sb,  # largest timestamp so far in the segment
    "relative_offset" / Int32sb,  # offset of the batch that carried it, minus the base
)
ABORTED_TXN = Struct(
    "version" / Int16sb,
    "producer_id" / Int64sb,
    "first_offset" / Int64sb,
    "last_offset" / Int64sb,
    "last_stable_offset" / Int64sb,
)

#: attributes int16 of a v2 batch, bit by bit (Kafka's ``DefaultRecordBatch``)
BATCH_ATTRIBUTES = BitStruct(
    Padding(9),
    "has_delete_horizon" / Flag,  # bit 6: baseTimestamp is the delete horizon
    "is_control" / Flag,  # bit 5
    "is_transactional" / Flag,  # bit 4
    "log_append_time" / Flag,  # bit 3: timestamp type
    "compression" / BitsInteger(3),  # bits 0-2: none, gzip, snappy, lz4, zstd
)

RECORD_BATCH_HEADER = Struct(
    "base_offset" / Int64sb,
    "batch_length" / Int32sb,  # bytes after this field
    "partition_leader_epoch" / Int32sb,
    "magic" / Int8sb,  # 2
    "crc" / Int32ub,  # CRC32C of attributes .. end of batch
    "attributes" / Int16sb,
    "last_offset_delta" / Int32sb,
    "base_timestamp" / Int64sb,
    "max_timestamp" / Int64sb,
    "producer_id" / Int64sb,
    "producer_epoch" / Int16sb,
    "base_sequence" / Int32sb,
    "records_count" / Int32sb,
)

PRODUCER_ENTRY = Struct(
    "producer_id" / Int64sb,
    "epoch" / Int16sb,
    "last_sequence" / Int32sb,
    "last_offset" / Int64sb,
    "offset_delta" / Int32sb,
    "timestamp" / Int64sb,
    "coordinator_epoch" / Int32sb,
    "current_txn_first_offset" / Int64sb,
)
PRODUCER_ENTRY_SIZE = PRODUCER_ENTRY.sizeof()  # 46

PRODUCER_SNAPSHOT_HEADER = Struct(
    "version" / Int16sb,
    "crc" / Int32ub,  # CRC32C of the bytes after this field
    "count" / Int32sb,  # producer entries that follow
)
PRODUCER_SNAPSHOT = Struct(
    "version" / Int16sb,
    "crc" / Int32ub,
    "count" / Int32sb,
    "entries" / Array(this.count, PRODUCER_ENTRY),
)
#: ``ProducerStateManager.PRODUCER_ENTRIES_OFFSET``: the CRC covers the file from here
PRODUCER_ENTRIES_OFFSET = 6
PRODUCER_SNAPSHOT_VERSION = 1

# Compiled parsers for the loops (whole files of entries at once).
OFFSET_INDEX_ENTRIES = GreedyRange(OFFSET_INDEX_ENTRY).compile()
TIME_INDEX_ENTRIES = GreedyRange(TIME_INDEX_ENTRY).compile()
ABORTED_TXNS = GreedyRange(ABORTED_TXN).compile()
_RECORD_BATCH_HEADER_C = RECORD_BATCH_HEADER.compile()
_PRODUCER_SNAPSHOT_HEADER_C = PRODUCER_SNAPSHOT_HEADER.compile()
_PRODUCER_ENTRIES_C = GreedyRange(PRODUCER_ENTRY).compile()


def offset_index_entries(data: bytes) -> list[tuple[int, int]]:
    """``(relative offset, position)`` of every whole entry of a ``.index`` file."""
    usable = len(data) - len(data) % OFFSET_INDEX_ENTRY.sizeof()
    return [(e.relative_offset, e.position) for e in OFFSET_INDEX_ENTRIES.parse(data[:usable])]


def time_index_entries(data: bytes) -> list[tuple[int, int]]:
    """``(timestamp, relative offset)`` of every whole entry of a ``.timeindex`` file."""
    usable = len(data) - len(data) % TIME_INDEX_ENTRY.sizeof()
    return [(e.timestamp, e.relative_offset) for e in TIME_INDEX_ENTRIES.parse(data[:usable])]


def aborted_txns(data: bytes) -> list[tuple[int, int, int, int, int]]:
    """``(version, producerId, firstOffset, lastOffset, lastStableOffset)`` of a ``.txnindex``."""
    usable = len(data) - len(data) % ABORTED_TXN.sizeof()
    return [
        (e.version, e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset)
        for e in ABORTED_TXNS.parse(data[:usable])
    ]


def batch_header(data: bytes, position: int = 0) -> tuple[int, ...]:
    """The 13 header fields of the v2 batch at ``position``, in layout order."""
    h = _RECORD_BATCH_HEADER_C.parse(data[position : position + RECORD_BATCH_HEADER.sizeof()])
    return (
        h.base_offset, h.batch_length, h.partition_leader_epoch, h.magic, h.crc, h.attributes,
        h.last_offset_delta, h.base_timestamp, h.max_timestamp, h.producer_id, h.producer_epoch,
        h.base_sequence, h.records_count,
    )


class CorruptProducerSnapshotError(ValueError):
    """Kafka's ``CorruptSnapshotException`` for a producer-state file; the
    message is Kafka's wording."""


@dataclass(frozen=True, slots=True)
class ProducerEntry:
    """One producer of a producer-state snapshot (``ProducerSnapshot.ProducerEntry``)."""

    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int

    @property
    def first_sequence(self) -> int:
        """``BatchMetadata.firstSeq``: ``DefaultRecordBatch.decrementSequence``."""
        if self.last_sequence < self.offset_delta:
            return 0x7FFFFFFF - (self.offset_delta - self.last_sequence) + 1
        return self.last_sequence - self.offset_delta


def read_producer_snapshot(data: bytes) -> list[ProducerEntry]:
    """The entries of a producer-state ``.snapshot`` file, checked as Kafka's
    ``ProducerStateManager.readSnapshot`` checks them (version, schema, CRC32C);
    raises :class:`CorruptProducerSnapshotError` with Kafka's message."""
    header_size = PRODUCER_SNAPSHOT_HEADER.sizeof()
    prefix = "Snapshot failed schema validation: "
    if len(data) < 2:
        # Java's BufferUnderflowException has no message
        raise CorruptProducerSnapshotError(prefix + "null")
    version = int.from_bytes(data[:2], "big", signed=True)
    if version != PRODUCER_SNAPSHOT_VERSION:
        raise CorruptProducerSnapshotError(prefix + f"Snapshot contained an unknown file version {version}")
    if len(data) < header_size:
        raise CorruptProducerSnapshotError(prefix + "null")
    header = _PRODUCER_SNAPSHOT_HEADER_C.parse(data[:header_size])
    count = header.count
    remaining = len(data) - header_size
    if count < 0:
        raise CorruptProducerSnapshotError(prefix + "non-nullable field producerEntries was serialized as null")
    if count > remaining:
        raise CorruptProducerSnapshotError(
            prefix + f"Tried to allocate a collection of size {count}, but there are only {remaining} bytes remaining."
        )
    if count * PRODUCER_ENTRY_SIZE > remaining:
        raise CorruptProducerSnapshotError(prefix + "null")
    computed = crc32c(data[PRODUCER_ENTRIES_OFFSET:])
    if header.crc != computed:
        raise CorruptProducerSnapshotError(
            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {header.crc}. Computed crc: {computed}"
        )
    body = data[header_size : header_size + count * PRODUCER_ENTRY_SIZE]
    return [
        ProducerEntry(
            e.producer_id, e.epoch, e.last_sequence, e.last_offset, e.offset_delta, e.timestamp,
            e.coordinator_epoch, e.current_txn_first_offset,
        )
        for e in _PRODUCER_ENTRIES_C.parse(body)
    ]


def batch_attributes(attributes: int) -> dict[str, int | bool]:
    """The attribute bits of a batch by name (documentation and tests)."""
    bits = BATCH_ATTRIBUTES.parse(int(attributes & 0xFFFF).to_bytes(2, "big"))
    return {k: v for k, v in bits.items() if not k.startswith("_")}


__all__ = [
    "ABORTED_TXN",
    "BATCH_ATTRIBUTES",
    "OFFSET_INDEX_ENTRY",
    "PRODUCER_ENTRY",
    "PRODUCER_SNAPSHOT",
    "RECORD_BATCH_HEADER",
    "TIME_INDEX_ENTRY",
    "CorruptProducerSnapshotError",
    "ProducerEntry",
    "aborted_txns",
    "batch_attributes",
    "batch_header",
    "offset_index_entries",
    "read_producer_snapshot",
    "time_index_entries",
]
