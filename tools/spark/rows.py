"""Rows of the ``kraft`` Spark data source: one per record, as Arrow batches.

Reads the splits that :mod:`kraft.tools.spark.plan` planned and turns every
record into one row of :data:`COLUMNS`. Needs pyarrow, not pyspark: the
executors call it through the data source, and ``kraft bench spark`` calls it
in one process to measure the decoder alone.

Records are found and described by :mod:`kraft.tools.record_format.describe_record`, the code
``kraft dump-log --json`` uses, so both agree record for record; the typed
columns (``topic_name``, ``leader``, ``isr``, ``config_name``, ...) come from
the same decoded message.

Nothing bad is skipped silently. What cannot be read becomes a row whose
``error_kind`` says what happened and ``error`` says where:

- ``unreadable_file``, ``unsupported_file``, ``meta_properties``,
  ``cluster_mismatch``: the whole file (see :mod:`kraft.tools.spark.plan`);
- ``torn_tail``: bytes at the end of a file that do not hold a whole batch;
- ``corrupt_batch``: a batch that does not parse (bad length or magic; the
  rest of the split is not read) or whose records do not decode;
- ``crc_mismatch``: the batch's CRC32C does not match; its records are still
  decoded, as ``kafka-dump-log.sh`` prints them, and every one is flagged;
- ``unknown_record_type``, ``unsupported_version``, ``bad_record``: a record
  kept as raw key/value bytes with the type id and version that could be read.

With ``failfast`` the first such problem raises :class:`KraftReadError` instead.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from kraft.records.batch import RecordBatch
from kraft.tools.record_format.describe_record import UNKNOWN_RECORD_TYPE, codec_name, describe_record, java_json, read_file_batches
from kraft.tools.record_format.fastjson import MetadataPayloads
from kraft.tools.record_format.fastjson import uuid_text
from kraft.records.metadata import metadata_type_name
from kraft.tools.spark.plan import FileSplit, SourceFile
from kraft.tools.spark.pushdown import Pushed

if TYPE_CHECKING:
    import pyarrow as pa

TORN_TAIL = "torn_tail"
CORRUPT_BATCH = "corrupt_batch"
CRC_MISMATCH = "crc_mismatch"
UNREADABLE_FILE = "unreadable_file"

DEFAULT_BATCH_ROWS = 8192


class KraftReadError(ValueError):
    """A problem in the input when the data source runs with ``mode=FAILFAST``."""


#: (column, Arrow type name, what it holds). Every column is nullable.
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("cluster_id", "string", "cluster.id of the meta.properties of the file's log directory"),
    ("node_id", "int32", "node.id of that meta.properties"),
    ("file", "string", "absolute path of the file"),
    ("file_kind", "string", "segment, snapshot or bootstrap"),
    ("snapshot_end_offset", "int64", "a snapshot's end offset (from its name)"),
    ("snapshot_epoch", "int32", "a snapshot's epoch (from its name)"),
    ("position", "int64", "file position of the batch (or of the problem)"),
    ("batch_base_offset", "int64", "baseOffset"),
    ("batch_last_offset", "int64", "baseOffset + lastOffsetDelta"),
    ("partition_leader_epoch", "int32", "partitionLeaderEpoch"),
    ("batch_timestamp", "int64", "the batch's maxTimestamp (ms)"),
    ("timestamp_type", "string", "CreateTime or LogAppendTime"),
    ("compression", "string", "none, gzip, snappy, lz4, zstd"),
    ("is_control", "bool", "control batch"),
    ("is_transactional", "bool", "transactional batch"),
    ("crc_valid", "bool", "the batch's CRC32C matches"),
    ("offset", "int64", "the record's offset (null for problem rows)"),
    ("timestamp", "int64", "the record's timestamp (ms)"),
    ("record_type", "string", "LEADER_CHANGE, SNAPSHOT_HEADER, ... or TOPIC_RECORD, PARTITION_CHANGE_RECORD, ..."),
    ("record_type_id", "int16", "control type id or metadata api key"),
    ("record_version", "int16", "control message data version or metadata record version"),
    ("key", "binary", "record key bytes"),
    ("value", "binary", "record value bytes"),
    ("payload", "string", "Kafka's JSON of the record (dump-log's payload / control object)"),
    ("error_kind", "string", "what went wrong (null when nothing did)"),
    ("error", "string", "what went wrong, and where"),
    # The typed, flattened view of the common record types.
    ("topic_id", "string", "TopicRecord, PartitionRecord, PartitionChangeRecord, RemoveTopicRecord (Kafka's base64)"),
    ("topic_name", "string", "TopicRecord"),
    ("partition_id", "int32", "PartitionRecord, PartitionChangeRecord"),
    ("leader", "int32", "PartitionRecord; PartitionChangeRecord (-2: unchanged, -1: none)"),
    ("leader_epoch", "int32", "PartitionRecord"),
    ("partition_epoch", "int32", "PartitionRecord"),
    ("replicas", "list<int32>", "PartitionRecord; PartitionChangeRecord (null: unchanged)"),
    ("isr", "list<int32>", "PartitionRecord; PartitionChangeRecord (null: unchanged)"),
    ("broker_id", "int32", "RegisterBroker, UnregisterBroker, Fence/UnfenceBroker, BrokerRegistrationChange records"),
    ("broker_epoch", "int64", "those records' broker epoch"),
    ("fenced", "bool", "true fenced, false unfenced, null unchanged"),
    ("in_controlled_shutdown", "bool", "RegisterBrokerRecord; BrokerRegistrationChangeRecord (null: unchanged)"),
    ("rack", "string", "RegisterBrokerRecord"),
    ("resource_type", "int8", "ConfigRecord (2 topic, 4 broker, 8 broker logger, 16 client metrics, 32 group)"),
    ("resource_name", "string", "ConfigRecord"),
    ("config_name", "string", "ConfigRecord"),
    ("config_value", "string", "ConfigRecord (null: the config was deleted)"),
    ("feature_name", "string", "FeatureLevelRecord"),
    ("feature_level", "int16", "FeatureLevelRecord"),
)
COLUMN_NAMES = tuple(c[0] for c in COLUMNS)
_TYPED = COLUMN_NAMES[COLUMN_NAMES.index("topic_id") :]
NO_TYPED = (None,) * len(_TYPED)
_NO_RECORD = (None,) * (COLUMN_NAMES.index("topic_id") - COLUMN_NAMES.index("offset"))
NO_BATCH = (None,) * (COLUMN_NAMES.index("offset") - COLUMN_NAMES.index("position") - 1)


def arrow_schema() -> pa.Schema:
    """The Arrow schema of the rows (what Spark derives from the data source schema)."""
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "binary": pa.binary(),
        "bool": pa.bool_(),
        "int8": pa.int8(),
        "int16": pa.int16(),
        "int32": pa.int32(),
        "int64": pa.int64(),
        "list<int32>": pa.list_(pa.field("element", pa.int32())),
    }
    return pa.schema([pa.field(name, types[kind]) for name, kind, _ in COLUMNS])


# --- the typed view ----------------------------------------------------------------------


def _uuid(u: Any) -> str | None:
    return None if u is None else uuid_text(u)


def _change_flag(value: int, *, on: int, off: int | None) -> bool | None:
    """BrokerRegistrationChangeRecord's int8 flags: on -> True, off -> False, 0 -> unchanged."""
    if value == on:
        return True
    if off is not None and value == off:
        return False
    return None


def _n(k: int) -> tuple[None, ...]:
    return (None,) * k


# Each view returns the whole typed tuple at once (a tuple display and a
# concatenation, in _TYPED order: topic_id, topic_name, partition_id, leader,
# leader_epoch, partition_epoch, replicas, isr, broker_id, broker_epoch,
# fenced, in_controlled_shutdown, rack, resource_type, resource_name,
# config_name, config_value, feature_name, feature_level): it runs for most rows.
_N2, _N6, _N7, _N8, _N9, _N11, _N13, _N17, _N18 = (_n(k) for k in (2, 6, 7, 8, 9, 11, 13, 17, 18))
_TYPED_VIEWS: dict[str, Any] = {
    "TOPIC_RECORD": lambda m: (_uuid(m.topic_id), m.name, *_N17),
    "REMOVE_TOPIC_RECORD": lambda m: (_uuid(m.topic_id), *_N18),
    "PARTITION_RECORD": lambda m: (
        _uuid(m.topic_id), None, m.partition_id, m.leader, m.leader_epoch, m.partition_epoch,
        list(m.replicas), list(m.isr), *_N11,
    ),
    "PARTITION_CHANGE_RECORD": lambda m: (
        _uuid(m.topic_id), None, m.partition_id, m.leader, None, None,
        None if m.replicas is None else list(m.replicas), None if m.isr is None else list(m.isr), *_N11,
    ),
    "REGISTER_BROKER_RECORD": lambda m: (
        *_N8, m.broker_id, m.broker_epoch, m.fenced, m.in_controlled_shutdown, m.rack, *_N6,
    ),
    "UNREGISTER_BROKER_RECORD": lambda m: (*_N8, m.broker_id, m.broker_epoch, *_N9),
    "FENCE_BROKER_RECORD": lambda m: (*_N8, m.id, m.epoch, True, *_N8),
    "UNFENCE_BROKER_RECORD": lambda m: (*_N8, m.id, m.epoch, False, *_N8),
    "BROKER_REGISTRATION_CHANGE_RECORD": lambda m: (
        *_N8, m.broker_id, m.broker_epoch, _change_flag(m.fenced, on=1, off=-1),
        _change_flag(m.in_controlled_shutdown, on=1, off=None), *_N7,
    ),
    "CONFIG_RECORD": lambda m: (*_N13, m.resource_type, m.resource_name, m.name, m.value, *_N2),
    "FEATURE_LEVEL_RECORD": lambda m: (*_N17, m.name, m.feature_level),
}
assert len(_TYPED) == 19, "the typed views are written for these 19 typed columns"


# --- reading one split ----------------------------------------------------------------------


class SplitReader:
    """Rows of one split. Problems become rows (or raise, with ``failfast``)."""

    def __init__(self, split: FileSplit, failfast: bool, pushed: Pushed | None = None) -> None:
        self.split = split
        self.failfast = failfast
        self.pushed = pushed if pushed is not None and pushed.any else None
        f: SourceFile = split.file
        self.file_part = (f.cluster_id, f.node_id, f.path, f.kind, f.snapshot_end_offset, f.snapshot_epoch)

    def problem(self, kind: str, message: str, position: int | None,
                batch_part: tuple[Any, ...] = NO_BATCH) -> tuple[Any, ...] | None:
        if self.failfast:
            raise KraftReadError(f"{kind}: {message}")
        if self.pushed is not None and self.pushed.row_level:
            return None  # a problem row has no record_type or offset: the filter drops it
        return (*self.file_part, position, *batch_part, *_NO_RECORD[:-2], kind, message, *NO_TYPED)

    def rows(self) -> Iterator[tuple[Any, ...]]:
        for row in self._rows():
            if row is not None:
                yield row

    def _rows(self) -> Iterator[tuple[Any, ...] | None]:
        split = self.split
        file = split.file
        if self.pushed is not None and not self.pushed.keeps_file(file.cluster_id, file.node_id, file.path, file.kind):
            return
        if split.first:
            for p in file.problems:
                yield self.problem(p.kind, p.message, None)
        if not file.readable:
            return
        try:
            with open(file.path, "rb") as f:
                f.seek(split.start)
                data = f.read(split.length)
        except OSError as exc:
            yield self.problem(UNREADABLE_FILE, f"cannot read {file.path}: {exc.strerror or exc}", split.start)
            return
        batches, valid, corruption = self.scan(data)
        yield from self.batches_rows(batches)
        end = split.start + len(data)
        at = split.start + valid
        if corruption is not None:
            yield self.problem(
                CORRUPT_BATCH,
                f"{corruption} in {file.path} at position {at}; {end - at} bytes to position {end} not read",
                at,
            )
        elif valid < len(data):
            if split.last:
                yield self.problem(
                    TORN_TAIL, f"Found {len(data) - valid} invalid bytes at the end of {file.path} (position {at})", at
                )
            else:
                yield self.problem(
                    CORRUPT_BATCH,
                    f"the batch at position {at} of {file.path} runs past the split end {end} "
                    "(did the file change while it was read?)",
                    at,
                )
        if len(data) < split.length:
            yield self.problem(
                TORN_TAIL, f"{file.path} shrank while it was read: {split.length - len(data)} bytes missing", end
            )

    def scan(self, data: bytes) -> tuple[list[RecordBatch], int, str | None]:
        """The batches of the split's bytes, the valid byte count and the corruption found."""
        return read_file_batches(data)

    def batches_rows(self, batches: list[RecordBatch]) -> Iterator[tuple[Any, ...] | None]:
        for batch in batches:
            yield from self.batch_rows(batch)

    def batch_rows(self, batch: RecordBatch) -> Iterator[tuple[Any, ...] | None]:
        position = self.split.start + batch.position
        is_control = batch.is_control
        pushed = self.pushed
        if pushed is not None and not pushed.keeps_batch(batch.base_offset, batch.last_offset, is_control):
            return  # not decoded at all
        crc_valid = batch.is_valid()
        batch_part = (
            batch.base_offset,
            batch.last_offset,
            batch.partition_leader_epoch,
            batch.max_timestamp,
            str(batch.timestamp_type),
            codec_name(batch),
            is_control,
            batch.is_transactional,
            crc_valid,
        )
        try:
            records = batch.records()
        except Exception as exc:  # noqa: BLE001 - any decoding failure is this batch's problem
            yield self.problem(CORRUPT_BATCH, f"cannot decode the records of the batch at position {position} of "
                               f"{self.split.file.path}: {exc}", position, batch_part)
            return
        crc_error = None
        if not crc_valid:
            crc_error = f"CRC mismatch in the batch at position {position}: stored {batch.crc}, computed {batch.compute_crc()}"
            if self.failfast:
                raise KraftReadError(f"{CRC_MISMATCH}: {crc_error} of {self.split.file.path}")
        head = (*self.file_part, position, *batch_part)
        types = None if pushed is None else pushed.record_types
        for record in records:
            if pushed is not None:
                if not pushed.keeps_offset(record[0]):
                    continue
                if types is not None and not is_control:
                    value = record[3]
                    # the type id is the second byte of a metadata frame: skip
                    # other types without decoding them
                    if value is not None and len(value) > 2 and value[0] == 1 and value[1] < 0x80:
                        if known_type_name(value[1]) not in types:
                            continue
            type_name, type_id, version, payload, error_kind, error, typed = row_description(batch, record, is_control)
            if types is not None and type_name not in types:
                continue
            if error is not None and self.failfast:
                raise KraftReadError(f"{error_kind}: {error} (offset {record.offset} of {self.split.file.path})")
            if crc_error is not None:
                error_kind = CRC_MISMATCH
                error = crc_error if error is None else f"{crc_error}; {error}"
            yield (
                *head,
                record.offset,
                record.timestamp,
                type_name,
                type_id,
                version,
                record.key,
                record.value,
                payload,
                error_kind,
                error,
                *typed,
            )


#: Small metadata values repeat (NoOpRecord is the same 3 bytes every 500 ms
#: of a controller's life): their description is kept, keyed by the bytes.
_MEMO_MAX_VALUE = 32
_MEMO_MAX_ENTRIES = 4096
_memo: dict[bytes, tuple[Any, ...]] = {}


_payloads: MetadataPayloads | None = None


def row_description(batch: RecordBatch, record: Any, is_control: bool) -> tuple[Any, ...]:
    """``(type_name, type_id, version, payload, error_kind, error, typed)`` of a record."""
    global _payloads
    value = record[3]
    small = not is_control and value is not None and len(value) <= _MEMO_MAX_VALUE
    if small:
        hit = _memo.get(value)
        if hit is not None:
            return hit
    if not is_control:
        # The fast path of kraft dump-log: compiled payload JSON (the generic
        # path below stays for what it declines: errors, unknown types).
        if _payloads is None:
            _payloads = MetadataPayloads()
        fast = _payloads.describe(value)
        if fast is not None:
            name, api_key, version, message, text = fast
            view = _TYPED_VIEWS.get(name)
            out: tuple[Any, ...] = (name, api_key, version, text, None, None, NO_TYPED if view is None else view(message))
            if small:
                if len(_memo) >= _MEMO_MAX_ENTRIES:
                    _memo.clear()
                _memo[bytes(value)] = out
            return out
    d = describe_record(batch, record)
    typed = NO_TYPED
    if d.message is not None and not is_control:
        view = _TYPED_VIEWS.get(d.type_name or "")
        if view is not None:
            typed = view(d.message)
    error_kind, error = d.error_kind, d.error
    if is_control and d.type_name == "UNKNOWN":
        # Kafka reads past control types it does not know; a row says so.
        error_kind, error = UNKNOWN_RECORD_TYPE, f"unknown control record type {d.type_id} (kept as raw key and value)"
    out = (d.type_name, d.type_id, d.version, None if d.json is None else java_json(d.json), error_kind, error, typed)
    if small and d.error is None:
        if len(_memo) >= _MEMO_MAX_ENTRIES:
            _memo.clear()
        _memo[bytes(value)] = out
    return out


@functools.cache
def known_type_name(api_key: int) -> str | None:
    try:
        return metadata_type_name(api_key)
    except Exception:  # noqa: BLE001 - an unknown type has no name (record_type null)
        return None


def iter_rows(
    splits: Iterable[FileSplit], *, failfast: bool = False, pushed: Pushed | None = None
) -> Iterator[tuple[Any, ...]]:
    """Every row of ``splits`` as a tuple in :data:`COLUMN_NAMES` order
    (only those ``pushed`` keeps, when given)."""
    for split in splits:
        yield from SplitReader(split, failfast, pushed).rows()


def read_splits(
    splits: Iterable[FileSplit],
    *,
    failfast: bool = False,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    schema: pa.Schema | None = None,
    pushed: Pushed | None = None,
) -> Iterator[pa.RecordBatch]:
    """The rows of ``splits`` as Arrow record batches of up to ``batch_rows`` rows."""
    import pyarrow as pa

    schema = schema or arrow_schema()
    types = [f.type for f in schema]
    pending: list[tuple[Any, ...]] = []
    for row in iter_rows(splits, failfast=failfast, pushed=pushed):
        pending.append(row)
        if len(pending) >= batch_rows:
            yield _to_arrow(pending, schema, types, pa)
            pending = []
    if pending:
        yield _to_arrow(pending, schema, types, pa)


def _to_arrow(rows: list[tuple[Any, ...]], schema: pa.Schema, types: list[Any], pa: Any) -> pa.RecordBatch:
    columns = zip(*rows, strict=True)
    return pa.RecordBatch.from_arrays([pa.array(col, type=t) for col, t in zip(columns, types, strict=True)], schema=schema)
