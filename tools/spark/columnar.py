"""Rows of the ``kraft`` data source built column by column, as Arrow batches.

The same rows as :func:`kraft.tools.spark.rows.iter_rows` (that tuple path
stays: the tests use it as the oracle), without a 45-wide tuple per row:

- the file's and the batch's columns (16 of them) come from one "head" per
  Kafka batch (its split, position, header fields, CRC check); each row
  keeps the index of its head, and the columns are built once per head
  (the attribute-derived ones with Arrow compute) and repeated with ``take``;
- ``offset`` and ``timestamp`` are per-row lists;
- what a record *is* (key, value, type name, id, version, payload JSON, the
  19 typed columns) is one "row description" per distinct record; each Arrow
  batch builds its distinct descriptions' columns once and take them
  per row (typed columns nobody in the batch has are null arrays);
- ``error_kind``/``error`` are null columns unless a row of the batch has a
  problem.

A controller's log repeats itself (a NoOpRecord every 500 ms, the same
PartitionChange, Fence and Unfence records again and again), and only the
batch header (offset, timestamp, epoch, CRC) of such a batch differs. So a
small uncompressed metadata batch's records section (records count, then
the records with their offset and timestamp *deltas*) is the key of a memo
holding its row descriptions, and descriptions are memoised by value bytes
too; both memos are bounded by entries and by bytes (emptied when full), so
memory stays flat on any input. A repeated batch costs a slice, a dict
lookup and its CRC check.

With a pushed ``record_type`` filter, a batch that cannot hold a wanted
record (its records section lacks the frame prefix ``0x01``, api key of
every wanted type) is neither decoded nor CRC-checked: it contributes no
row, so there is no ``crc_valid`` to report (:meth:`_ColumnarSplitReader.scan`).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from crc32c import crc32c

from kraft.records.batch import HEADER, HEADER_SIZE, LOG_OVERHEAD, MAGIC_V2, MIN_BATCH_LENGTH, RecordBatch
from kraft.records.collector import collector_paused
from kraft.tools.record_format.describe_record import HEADER_SIZE_UP_TO_MAGIC, read_file_batches
from kraft.tools.spark.plan import FileSplit
from kraft.tools.spark.pushdown import CONTROL_TYPES, Pushed
from kraft.tools.spark.rows import (
    COLUMN_NAMES,
    CORRUPT_BATCH,
    CRC_MISMATCH,
    DEFAULT_BATCH_ROWS,
    NO_BATCH,
    NO_TYPED,
    KraftReadError,
    row_description,
    SplitReader,
    known_type_name,
    arrow_schema,
)

if TYPE_CHECKING:
    import pyarrow as pa

#: Column positions: the head (file + batch columns), the record columns, the
#: description columns (their order in :data:`COLUMNS`).
_HEAD = COLUMN_NAMES.index("offset")  # cluster_id .. crc_valid
_OFFSET = COLUMN_NAMES.index("offset")
_TIMESTAMP = COLUMN_NAMES.index("timestamp")
#: The columns of a record's "row description" ``(key, value, type_name,
#: type_id, version, payload, error_kind, error, typed)``, in that order.
_DESCRIBED = (COLUMN_NAMES.index("key"), COLUMN_NAMES.index("value"), COLUMN_NAMES.index("record_type"),
              COLUMN_NAMES.index("record_type_id"), COLUMN_NAMES.index("record_version"), COLUMN_NAMES.index("payload"))
_ERROR_KIND = COLUMN_NAMES.index("error_kind")
_ERROR = COLUMN_NAMES.index("error")
_TYPED_START = COLUMN_NAMES.index("topic_id")
_R_TYPE, _R_ERROR_KIND, _R_ERROR, _R_TYPED = 2, 6, 7, 8

#: A problem row's description.
_NO_DESCRIPTION: tuple[Any, ...] = (None, None, None, None, None, None, None, None, NO_TYPED)


# --- the description memo ---------------------------------------------------------------------

#: Values up to this size are memoised (real metadata values are mostly far
#: smaller; a larger one is rarely repeated).
MEMO_MAX_VALUE = 1024
#: The memo is emptied when it would pass either bound, so memory stays flat
#: on any input (a log of all-distinct values just never hits).
MEMO_MAX_ENTRIES = 65_536
MEMO_MAX_BYTES = 32 * 1024 * 1024
_memo: dict[bytes, tuple[Any, ...]] = {}
_memo_bytes = 0


def _metadata_row(batch: RecordBatch, record: Any) -> tuple[Any, ...]:
    """A metadata record's row description ``(key, value, *row_description)``
    (:func:`kraft.tools.spark.rows.row_description`), memoised by value for
    records without a key (every metadata record): records of equal value
    share one tuple, so each Arrow batch builds their columns once."""
    global _memo_bytes
    value = record[3]
    key = record[2]
    if key is not None:
        return (key, value, *row_description(batch, record, False))
    d = _memo.get(value)  # None is never a key: a miss
    if d is not None:
        return d
    d = (None, value, *row_description(batch, record, False))
    if value is not None and len(value) <= MEMO_MAX_VALUE and d[_R_ERROR] is None:
        cost = 2 * len(value) + (len(d[5]) if d[5] is not None else 0) + 200
        if len(_memo) >= MEMO_MAX_ENTRIES or _memo_bytes + cost > MEMO_MAX_BYTES:
            _memo.clear()
            _memo_bytes = 0
        value = bytes(value)
        d = (None, value, *d[2:])
        _memo[value] = d
        _memo_bytes += cost
    return d


# --- one Arrow batch's worth of rows ---------------------------------------------------------

_NULL_BATCH: tuple[Any, ...] = (None,) * 15  # a problem row's RecordBatch fields


def _codec_names() -> list[str]:
    from kraft.records.compression import Compression
    from kraft.records.errors import RecordsError

    names = []
    for codec in range(8):
        try:
            names.append(Compression.from_id(codec).kafka_name)
        except RecordsError:
            names.append(f"unknown({codec})")  # describe.codec_name's wording
    return names


class _Columns:
    """The rows of one Arrow batch, kept column-wise until :meth:`build`.

    A "head" is one Kafka batch (or one problem): its split (the file
    columns), position, header fields and CRC check; rows point at theirs."""

    def __init__(self) -> None:
        self.file_parts: list[tuple[Any, ...]] = []
        self.head_split: list[int] = []
        self.head_position: list[int | None] = []
        self.head_batch: list[tuple[Any, ...]] = []  # RecordBatch tuples (or _NULL_BATCH)
        self.head_crc: list[bool | None] = []
        self.head_of_row: list[int] = []
        self.offsets: list[int | None] = []
        self.timestamps: list[int | None] = []
        self.descriptions: list[tuple[Any, ...]] = []  # distinct in this Arrow batch
        self.description_index: dict[int, int] = {}  # id(description) -> its index
        self.description_of_row: list[int] = []
        self.errors: dict[int, tuple[str | None, str | None]] = {}  # row -> (error_kind, error)

    def __len__(self) -> int:
        return len(self.head_of_row)

    def split_index(self, file_part: tuple[Any, ...]) -> int:
        if not self.file_parts or self.file_parts[-1] is not file_part:
            self.file_parts.append(file_part)
        return len(self.file_parts) - 1

    def add_head(self, split: int, position: int | None, batch: tuple[Any, ...], crc_valid: bool | None) -> int:
        self.head_split.append(split)
        self.head_position.append(position)
        self.head_batch.append(batch)
        self.head_crc.append(crc_valid)
        return len(self.head_split) - 1

    def add_problem(self, head: int, kind: str, message: str) -> None:
        self.errors[len(self.head_of_row)] = (kind, message)
        self.head_of_row.append(head)
        self.offsets.append(None)
        self.timestamps.append(None)
        self.description_of_row.append(self.index(_NO_DESCRIPTION))

    def index(self, d: tuple[Any, ...]) -> int:
        i = self.description_index.get(id(d))
        if i is None:
            i = self.description_index[id(d)] = len(self.descriptions)
            self.descriptions.append(d)
        return i

    def build(self, schema: pa.Schema, pa: Any) -> pa.RecordBatch:
        import pyarrow.compute as pc

        n = len(self.head_of_row)
        types = [f.type for f in schema]
        arrays: list[Any] = [None] * len(types)
        # the 16 head columns, one value per head, then one per row
        heads = self.head_batch
        attributes = pa.array([b[5] for b in heads], type=pa.int32())
        base = pa.array([b[0] for b in heads], type=pa.int64())
        split_at = pa.array(self.head_split, type=pa.int32())
        head_columns: list[Any] = [
            pa.array(column, type=types[c]).take(split_at) for c, column in enumerate(zip(*self.file_parts, strict=True))
        ]
        head_columns += [
            pa.array(self.head_position, type=pa.int64()),
            base,
            pc.add(base, pa.array([b[6] for b in heads], type=pa.int64())),
            pa.array([b[2] for b in heads], type=pa.int32()),
            pa.array([b[8] for b in heads], type=pa.int64()),
            pc.if_else(pc.not_equal(pc.bit_wise_and(attributes, 0x08), 0), "LogAppendTime", "CreateTime"),
            pa.array(_CODEC_NAMES, type=pa.string()).take(pc.bit_wise_and(attributes, 0x07)),
            pc.not_equal(pc.bit_wise_and(attributes, 0x20), 0),
            pc.not_equal(pc.bit_wise_and(attributes, 0x10), 0),
            pa.array(self.head_crc, type=pa.bool_()),
        ]
        assert len(head_columns) == _HEAD
        single_head = len(heads) == 1
        at = None if single_head else pa.array(self.head_of_row, type=pa.int32())
        for c, column in enumerate(head_columns):
            arrays[c] = pa.repeat(column[0], n) if single_head else column.take(at)
        arrays[_OFFSET] = pa.array(self.offsets, type=types[_OFFSET])
        arrays[_TIMESTAMP] = pa.array(self.timestamps, type=types[_TIMESTAMP])
        _describe_rows(arrays, self.descriptions, self.description_of_row, n, types, pa)
        errors = self.errors
        if errors:
            kinds: list[str | None] = [None] * n
            messages: list[str | None] = [None] * n
            for row, (kind, message) in errors.items():
                kinds[row] = kind
                messages[row] = message
            arrays[_ERROR_KIND] = pa.array(kinds, type=types[_ERROR_KIND])
            arrays[_ERROR] = pa.array(messages, type=types[_ERROR])
        else:
            arrays[_ERROR_KIND] = pa.nulls(n, types[_ERROR_KIND])
            arrays[_ERROR] = pa.nulls(n, types[_ERROR])
        for c, array in enumerate(arrays):
            if not array.type.equals(types[c]):
                arrays[c] = array.cast(types[c])
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _describe_rows(arrays: list[Any], descriptions: list[tuple[Any, ...]], description_of_row: Any, n: int,
                   types: list[Any], pa: Any) -> None:
    """Fill ``arrays``' described and typed columns: each distinct
    description's values once, taken per row (``description_of_row``: a list
    or an integer array of indexes into ``descriptions``)."""
    if len(descriptions) == 1:
        d = descriptions[0]
        for c, value in zip(_DESCRIBED, d, strict=False):
            arrays[c] = pa.repeat(pa.scalar(value, type=types[c]), n)
        for k, value in enumerate(d[_R_TYPED]):
            c = _TYPED_START + k
            arrays[c] = pa.repeat(pa.scalar(value, type=types[c]), n) if value is not None else pa.nulls(n, types[c])
    else:
        at = pa.array(description_of_row, type=pa.int32())
        for c, column in zip(_DESCRIBED, zip(*descriptions), strict=False):
            arrays[c] = pa.array(column, type=types[c]).take(at)
        if all(d[_R_TYPED] is NO_TYPED for d in descriptions):
            for c in range(_TYPED_START, len(types)):
                arrays[c] = pa.nulls(n, types[c])
        else:
            for k, column in enumerate(zip(*(d[_R_TYPED] for d in descriptions), strict=True)):
                c = _TYPED_START + k
                if column.count(None) == len(column):
                    arrays[c] = pa.nulls(n, types[c])
                else:
                    arrays[c] = pa.array(column, type=types[c]).take(at)


_CODEC_NAMES = _codec_names()


# --- reading one split into columns -----------------------------------------------------------

#: Records sections up to this size (uncompressed metadata batches) are
#: memoised whole: a controller writes the same one-record batch (a NoOp, a
#: Fence, a PartitionChange) over and over, and only the batch header (offset,
#: timestamp, epoch, CRC) differs. The records count and the section bytes
#: (offset and timestamp *deltas*, key, value) are the key.
SECTION_MEMO_MAX = 1024
_sections: dict[bytes, tuple[tuple[Any, ...], ...]] = {}
_sections_bytes = 0

#: where the records count starts in a v2 batch (the records follow it)
_RECORDS_COUNT_OFFSET = 57


def _metadata_needles(types: frozenset[str]) -> tuple[bytes, ...]:
    """The frame prefixes (frame version 1, api key) of the wanted metadata types."""
    return tuple(bytes([1, k]) for k in range(128) if known_type_name(k) in types)


_BATCH_LENGTH = struct.Struct(">i")  # batchLength, at byte 8 of a batch


def _positions(data: bytes, needles: tuple[bytes, ...]) -> list[int]:
    """Every position where one of ``needles`` starts in ``data``, ascending."""
    out: list[int] = []
    find = data.find
    for needle in needles:
        i = find(needle)
        while i >= 0:
            out.append(i)
            i = find(needle, i + 1)
    out.sort()
    return out


def _kept_by_type(data: bytes, needles: tuple[bytes, ...]) -> list[int] | None:
    """The positions of the batches of a sound split (see :func:`_walk`)
    that may hold a record of a wanted metadata type: every compressed or
    control batch, and every batch whose records section holds a wanted frame
    prefix; None when the split is not sound (the batch-by-batch scan then
    finds and words its problem). The same batches as that scan keeps, with
    the per-batch work after the walk done as array operations."""
    import numpy as np

    walked = _walk(data)
    if walked is None:
        return None
    _positions_list, raw, at = walked
    # (raw[at + 22]: the low byte of the int16 attributes: codec and control bits)
    keep = (raw[at + 22] & 0x27) != 0
    hits = np.array(_positions(data, needles), dtype=np.int64)
    if len(hits):
        # The batch each hit lies in (the walk is contiguous: a batch ends
        # where the next begins), kept when the hit is in its records section.
        batch = np.searchsorted(at, hits, side="right") - 1
        inside = (batch >= 0) & (hits >= at[np.maximum(batch, 0)] + HEADER_SIZE)
        keep[batch[inside]] = True
    kept: list[int] = at[keep].tolist()
    return kept


def _decode_entry(batch: RecordBatch, key: bytes | None) -> tuple[tuple[Any, ...], ...]:
    """``(offset delta, timestamp delta, row description)`` of every record
    of ``batch`` (the description: key, value, then
    :func:`kraft.tools.spark.rows.row_description`'s tuple); memoised by ``key``
    (its records section) when no record has a problem. Raises what the
    records' decoding raises."""
    global _sections_bytes
    records = batch.records()
    base, base_ts = batch[0], batch[7]
    if batch[5] & 0x20:
        return tuple((r[0] - base, r[1] - base_ts, (r[2], r[3], *row_description(batch, r, True))) for r in records)
    describe = _metadata_row
    entry = tuple((r[0] - base, r[1] - base_ts, describe(batch, r)) for r in records)
    if key is not None and all(e[2][_R_ERROR] is None for e in entry):
        cost = 2 * len(key) + sum(len(e[2][5] or "") for e in entry) + 200
        if len(_sections) >= MEMO_MAX_ENTRIES or _sections_bytes + cost > MEMO_MAX_BYTES:
            _sections.clear()
            _sections_bytes = 0
        _sections[key] = entry
        _sections_bytes += cost
    return entry


class _ColumnarSplitReader(SplitReader):
    """The split logic of the tuple reader (files, torn tails, corrupt
    batches), with rows appended to :class:`_Columns` instead of yielded."""

    def __init__(self, split: FileSplit, failfast: bool, pushed: Pushed | None, out: _Columns) -> None:
        super().__init__(split, failfast, pushed)
        self.out = out
        self.batch_rows_limit = DEFAULT_BATCH_ROWS
        types = None if self.pushed is None else self.pushed.record_types
        self.needles = None if types is None else _metadata_needles(types)

    def problem(self, kind: str, message: str, position: int | None,
                batch_part: tuple[Any, ...] = NO_BATCH) -> None:
        self._problem(kind, message, position, _NULL_BATCH, None)

    def _problem(self, kind: str, message: str, position: int | None, batch: tuple[Any, ...], crc_valid: bool | None) -> None:
        if self.failfast:
            raise KraftReadError(f"{kind}: {message}")
        if self.pushed is not None and self.pushed.row_level:
            return  # a problem row has no record_type or offset: the filter drops it
        out = self.out
        out.add_problem(out.add_head(out.split_index(self.file_part), position, batch, crc_valid), kind, message)

    def _skip_by_type(self, batch: RecordBatch) -> bool:
        """No record of ``batch`` can be of a wanted metadata type: its
        records section does not hold one's frame prefix (a wanted record's
        value, which starts with it, lies in that section verbatim)."""
        needles = self.needles
        if needles is None or batch[5] & 0x20:
            return False
        if batch[5] & 0x07:
            try:
                data: Any = batch.records_bytes()
            except Exception:  # noqa: BLE001 - decoded below, where the problem is worded
                return False
            start, end = 0, len(data)
        else:
            data = batch[13]
            start, end = batch[14] + 61, batch.end_position
        return not any(data.find(needle, start, end) >= 0 for needle in needles)

    def scan(self, data: bytes) -> tuple[list[RecordBatch], int, str | None]:
        """:func:`read_file_batches` (the same structure checks, so torn
        tails and corruption are found alike), a little leaner; with a pushed
        ``record_type`` filter only the batches that may hold a wanted record: an
        uncompressed metadata batch whose records section holds no wanted
        frame prefix is dropped here, before a batch object is even built
        (it contributes no row, so it needs no decoding and no CRC check)."""
        needles = self.needles
        new = tuple.__new__  # RecordBatch(header, data, pos) without its Python-level __new__
        if needles is not None:
            kept = _kept_by_type(data, needles)
            if kept is not None:
                header_at = HEADER.unpack_from
                return [new(RecordBatch, header_at(data, p) + (data, p)) for p in kept], len(data), None
        batches: list[RecordBatch] = []
        pos = 0
        end = len(data)
        header = HEADER.unpack_from
        # Where a wanted frame prefix occurs in the data, found once at C
        # speed: a batch is kept when one lies in its records section (a
        # search per batch cost more than the rest of the scan).
        hits = _positions(data, needles) if needles is not None else []
        h, n_hits = 0, len(hits)
        keep_all = needles is None
        length_at = _BATCH_LENGTH.unpack_from
        while end - pos >= HEADER_SIZE_UP_TO_MAGIC:
            length = length_at(data, pos + 8)[0]
            size = length + LOG_OVERHEAD
            # (MIN_BATCH_LENGTH: a whole header, past the least record overhead)
            if length < MIN_BATCH_LENGTH or pos + size > end or data[pos + 16] != MAGIC_V2:
                # the rare case (a torn tail, a damaged batch): worded by read_file_batches
                rest, valid, corruption = read_file_batches(data[pos:])
                batches += [new(RecordBatch, header(data, pos + b[14]) + (data, pos + b[14])) for b in rest]
                return batches, pos + valid, corruption
            if keep_all or data[pos + 22] & 0x27:
                # (data[pos + 22]: the low byte of the int16 attributes)
                batches.append(new(RecordBatch, header(data, pos) + (data, pos)))
            elif h < n_hits:
                records_start = pos + HEADER_SIZE
                while h < n_hits and hits[h] < records_start:
                    h += 1
                if h < n_hits and hits[h] < pos + size:
                    batches.append(new(RecordBatch, header(data, pos) + (data, pos)))
            pos += size
        return batches, pos, None

    def _decode(self, batch: RecordBatch, position: int, key: bytes | None) -> tuple[tuple[Any, ...], ...] | None:
        """``(offset delta, timestamp delta, row description)`` of every
        record of ``batch`` (see :func:`_decode_entry`); a batch whose records
        do not decode becomes a problem row and None."""
        try:
            return _decode_entry(batch, key)
        except Exception as exc:  # noqa: BLE001 - any decoding failure is this batch's problem
            self._problem(CORRUPT_BATCH, f"cannot decode the records of the batch at position {position} of "
                          f"{self.split.file.path}: {exc}", position, batch, batch.is_valid())
            return None

    def batches_rows(self, batches: list[RecordBatch]) -> Iterator[None]:
        """Append the rows of ``batches``; yield when an Arrow batch is full
        (the caller then cuts it and hands this reader a fresh :class:`_Columns`)."""
        pushed = self.pushed
        types = None if pushed is None else pushed.record_types
        start = self.split.start
        failfast = self.failfast
        path = self.split.file.path
        full = self.batch_rows_limit
        by_offset = pushed is not None and (pushed.offset_min is not None or pushed.offset_max is not None)
        sections_get = _sections.get
        out: _Columns | None = None
        for batch in batches:
            if self.out is not out:  # the caller swapped it: it cut an Arrow batch
                out = self.out
                split_index = out.split_index(self.file_part)
                head_split, head_position, head_batch, head_crc = (
                    out.head_split, out.head_position, out.head_batch, out.head_crc)
                offsets, timestamps = out.offsets, out.timestamps
                index_get = out.description_index.get
                index = out.index
                description_of_row = out.description_of_row
                head_of_row = out.head_of_row
            attributes = batch[5]
            buf = batch[13]
            p = batch[14]
            end = p + batch[1] + 12
            position = start + p
            if pushed is not None and not pushed.keeps_batch(batch[0], batch[0] + batch[6], bool(attributes & 0x20)):
                continue  # not decoded at all
            key = None
            entry = None
            if not attributes & 0x2F and end - p <= SECTION_MEMO_MAX + 61:  # uncompressed metadata, CreateTime
                key = bytes(buf[p + _RECORDS_COUNT_OFFSET : end])
                entry = sections_get(key)
            if entry is None:
                if self.needles is not None and self._skip_by_type(batch):
                    # No wanted row can come from this batch: it is neither
                    # decoded nor CRC-checked (a batch that contributes no
                    # row has no crc_valid to report).
                    continue
                entry = self._decode(batch, position, key)
                if entry is None:
                    if len(head_of_row) >= full:
                        yield None
                    continue
            base = batch[0]
            if pushed is not None:
                if by_offset:
                    entry = tuple(e for e in entry if pushed.keeps_offset(base + e[0]))
                if types is not None:
                    entry = tuple(e for e in entry if e[2][_R_TYPE] in types)
                if not entry:
                    continue  # no row from this batch: its CRC is not needed
            crc_valid = crc32c(buf[p + 21 : end]) == batch[4]
            crc_error = None
            if not crc_valid:
                crc_error = f"CRC mismatch in the batch at position {position}: stored {batch[4]}, computed {batch.compute_crc()}"
                if failfast:
                    raise KraftReadError(f"{CRC_MISMATCH}: {crc_error} of {path}")
            head = len(head_split)
            head_split.append(split_index)
            head_position.append(position)
            head_batch.append(batch)
            head_crc.append(crc_valid)
            row = len(head_of_row)
            if attributes & 0x08:  # LogAppendTime: every record carries maxTimestamp
                base_ts, log_append_ts = 0, batch[8]
            else:
                base_ts, log_append_ts = batch[7], None
            for od, td, d in entry:
                offsets.append(base + od)
                timestamps.append(base_ts + td if log_append_ts is None else log_append_ts)
                i = index_get(id(d))
                description_of_row.append(index(d) if i is None else i)
                error = d[_R_ERROR]
                if error is not None or crc_error is not None:
                    error_kind = d[_R_ERROR_KIND]
                    if error is not None and failfast:
                        raise KraftReadError(f"{error_kind}: {error} (offset {base + od} of {path})")
                    if crc_error is not None:
                        error_kind = CRC_MISMATCH
                        error = crc_error if error is None else f"{crc_error}; {error}"
                    out.errors[row] = (error_kind, error)
                row += 1
            head_of_row.extend([head] * len(entry))
            if row >= full:
                yield None


def read_splits(
    splits: Iterable[FileSplit],
    *,
    failfast: bool = False,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    schema: pa.Schema | None = None,
    pushed: Pushed | None = None,
) -> Iterator[pa.RecordBatch]:
    """The rows of ``splits`` as Arrow record batches of up to ``batch_rows``
    rows (the rows of :func:`kraft.tools.spark.rows.iter_rows`, in order).

    A split with nothing wrong in it and no pushed filter is read in bulk
    (:func:`_read_in_bulk`); any other, or one where the bulk read meets a
    problem, batch by batch (:class:`_ColumnarSplitReader`), which words
    every problem as a row."""
    import pyarrow as pa

    schema = schema or arrow_schema()
    bulk = pushed is None or not pushed.any
    out = _Columns()
    for split in splits:
        if bulk:
            batches = _read_in_bulk(split, batch_rows, schema, pa)
            if batches is not None:
                if len(out):  # the rows before this split come first
                    yield from _cut(out.build(schema, pa), batch_rows)
                    out = _Columns()
                yield from batches
                continue
        reader = _ColumnarSplitReader(split, failfast, pushed, out)
        reader.batch_rows_limit = batch_rows
        for _ in reader._rows():
            if len(out) >= batch_rows:
                yield from _cut(out.build(schema, pa), batch_rows)
                out = reader.out = _Columns()
    if len(out):
        yield from _cut(out.build(schema, pa), batch_rows)


# --- reading a sound split in bulk ------------------------------------------------------------

#: The v2 batch header fields read for every batch at once:
#: (byte offset in the batch, width, big-endian numpy type).
_BASE_OFFSET, _LENGTH, _EPOCH, _CRC, _ATTRIBUTES, _LAST_OFFSET_DELTA, _BASE_TIMESTAMP, _MAX_TIMESTAMP = (
    (0, 8, ">i8"), (8, 4, ">i4"), (12, 4, ">i4"), (17, 4, ">u4"), (21, 2, ">i2"), (23, 4, ">i4"), (27, 8, ">i8"),
    (35, 8, ">i8"))
_CRC_START = 21  # the CRC32C covers the batch from its attributes to its end
_TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


def _walk(data: bytes) -> tuple[list[int], Any, Any] | None:
    """Where every batch of a sound split starts: the positions (a list and
    an int64 array) and the bytes as a uint8 array; None when the walk meets
    anything else (a length too small, a torn tail, a batch past the end, a
    magic other than 2), which the batch-by-batch reader then words.

    Only this walk runs per batch in Python (each batchLength gives the next
    position); everything after it is array operations."""
    import numpy as np

    end = len(data)
    positions: list[int] = []
    append = positions.append
    length_at = _BATCH_LENGTH.unpack_from
    pos = 0
    while end - pos >= HEADER_SIZE_UP_TO_MAGIC:
        length = length_at(data, pos + 8)[0]
        if length < MIN_BATCH_LENGTH:
            return None
        append(pos)
        pos += length + LOG_OVERHEAD
    if pos != end or not positions:
        return None  # a torn tail or a batch past the split's end
    raw = np.frombuffer(data, dtype=np.uint8)
    at = np.array(positions, dtype=np.int64)
    if (raw[at + 16] != MAGIC_V2).any() or int(at[-1]) + HEADER_SIZE > end:
        return None
    return positions, raw, at


def _read_in_bulk(split: FileSplit, batch_rows: int, schema: pa.Schema, pa: Any) -> list[pa.RecordBatch] | None:
    """:func:`_read_split_in_bulk` with the cyclic collector paused: each
    distinct record adds a few tuples to the memos and nothing here forms a
    cycle, so its passes (over the memos' hundreds of thousands of tuples)
    found nothing and cost half the CPU of a stress log's split."""
    with collector_paused():
        return _read_split_in_bulk(split, batch_rows, schema, pa)


def _read_split_in_bulk(split: FileSplit, batch_rows: int, schema: pa.Schema, pa: Any) -> list[pa.RecordBatch] | None:
    """The rows of a sound ``split`` (readable, whole batches only, every CRC
    right, every record described without a problem) as Arrow batches, or
    None for any other split: the batch-by-batch reader then reads it and
    words its problems. The same rows as that reader's, built with array
    operations instead of a Python loop per Kafka batch: only the walk from
    batch to batch (each length gives the next position), the memo lookup of
    each records section and its CRC check run per batch; the header fields,
    offsets, timestamps and the columns are read and built for all batches
    at once."""
    import numpy as np

    file = split.file
    data = _split_bytes(split)
    if data is None:
        return None
    walked = _walk(data)
    if walked is None:
        return None
    positions, raw, at = walked

    # Every batch's header bytes in one gather (a row of HEADER_SIZE bytes per batch).
    headers = np.lib.stride_tricks.sliding_window_view(raw, HEADER_SIZE)[at]

    def field(spec: tuple[int, int, str]) -> Any:
        offset, width, kind = spec
        return np.ascontiguousarray(headers[:, offset : offset + width]).view(kind).ravel().astype(kind[1:])

    ends = at + field(_LENGTH) + LOG_OVERHEAD
    attributes = field(_ATTRIBUTES)
    # Each records section's memo entry (small uncompressed metadata batches,
    # CreateTime, as the batch-by-batch reader memoises them).
    section_starts = (at + _RECORDS_COUNT_OFFSET).tolist()
    ends_list = ends.tolist()
    memoised = (((attributes & 0x2F) == 0) & (ends - at <= SECTION_MEMO_MAX + HEADER_SIZE)).tolist()
    get = _sections.get
    entries: list[tuple[tuple[Any, ...], ...] | None] = [
        get(data[s:e]) if m else None for s, e, m in zip(section_starts, ends_list, memoised, strict=True)]
    header = HEADER.unpack_from
    new = tuple.__new__
    for i in [i for i, e in enumerate(entries) if e is None]:
        key = data[section_starts[i] : ends_list[i]] if memoised[i] else None
        entry = None if key is None else get(key)  # decoded earlier in this split
        if entry is None:
            p = positions[i]
            try:
                entry = _decode_entry(new(RecordBatch, header(data, p) + (data, p)), key)
            except Exception:  # noqa: BLE001 - the batch-by-batch reader words it
                return None
        entries[i] = entry
    crcs = [crc32c(data[s:e]) for s, e in zip((at + _CRC_START).tolist(), ends_list, strict=True)]
    if (np.array(crcs, dtype=np.uint32) != field(_CRC)).any():
        return None
    flat = _flatten_entries(entries)
    if flat is None:
        return None  # an error row: the batch-by-batch reader words it
    ids, entry_index, counts, starts, flat_offset, flat_time, flat_description, descriptions = flat
    entry_of_batch = np.array(list(map(entry_index.__getitem__, ids)), dtype=np.int64)
    rows_of_batch = np.array(counts, dtype=np.int64)[entry_of_batch]
    first_of_entry = np.array(starts, dtype=np.int64)[entry_of_batch]
    n = int(rows_of_batch.sum())
    if n == len(positions) and (rows_of_batch == 1).all():
        head = np.arange(n)
        source = first_of_entry
    else:
        head = np.repeat(np.arange(len(positions)), rows_of_batch)
        first_row = np.cumsum(rows_of_batch) - rows_of_batch
        source = np.repeat(first_of_entry - first_row, rows_of_batch) + np.arange(n)
    base = field(_BASE_OFFSET)
    max_timestamp = field(_MAX_TIMESTAMP)
    row_attributes = attributes[head].astype(np.int32)
    log_append = (row_attributes & 0x08) != 0
    offsets = base[head] + np.array(flat_offset, dtype=np.int64)[source]
    timestamps = np.where(log_append, max_timestamp[head],
                          field(_BASE_TIMESTAMP)[head] + np.array(flat_time, dtype=np.int64)[source])
    description_of_row = np.array(flat_description, dtype=np.int64)[source]
    per_row = (
        split.start + at[head],
        base[head],
        (base + field(_LAST_OFFSET_DELTA))[head],
        field(_EPOCH)[head],
        max_timestamp[head],
    )
    types = [f.type for f in schema]
    # The described and typed columns of the split's distinct descriptions,
    # built once and taken per row (a typed column no row has stays None).
    distinct: list[Any] = [None] * len(types)
    for c, column in zip(_DESCRIBED, zip(*descriptions), strict=False):
        distinct[c] = pa.array(column, type=types[c])
    for k, column in enumerate(zip(*(d[_R_TYPED] for d in descriptions), strict=True)):
        if column.count(None) != len(column):
            distinct[_TYPED_START + k] = pa.array(column, type=types[_TYPED_START + k])
    file_part = (file.cluster_id, file.node_id, file.path, file.kind, file.snapshot_end_offset, file.snapshot_epoch)
    return _arrow_batches(pa, schema, batch_rows, n, file_part, per_row, row_attributes, log_append, offsets,
                          timestamps, description_of_row, distinct)


def _split_bytes(split: FileSplit) -> bytes | None:
    """The bytes of a sound split's range; None for a split the batch-by-batch
    reader must read (a problem in its file, unreadable, short)."""
    file = split.file
    if (split.first and file.problems) or not file.readable:
        return None
    try:
        with open(file.path, "rb") as f:
            f.seek(split.start)
            data = f.read(split.length)
    except OSError:
        return None
    return None if len(data) < split.length else data


def _flatten_entries(entries: list[Any]) -> tuple[Any, ...] | None:
    """The distinct memo entries of a split's batches, their rows flattened,
    and the distinct descriptions; None if a row is an error."""
    ids = list(map(id, entries))
    entry_index = dict.fromkeys(ids, 0)
    by_id: dict[int, tuple[tuple[Any, ...], ...]] = dict(zip(ids, entries, strict=True))
    counts: list[int] = []
    starts: list[int] = []
    flat_offset: list[int] = []
    flat_time: list[int] = []
    flat_description: list[int] = []
    description_index: dict[int, int] = {}
    descriptions: list[tuple[Any, ...]] = []
    for k, key_id in enumerate(entry_index):
        entry_index[key_id] = k
        entry = by_id[key_id]
        starts.append(len(flat_offset))
        counts.append(len(entry))
        for od, td, d in entry:
            if d[_R_ERROR] is not None:
                return None
            flat_offset.append(od)
            flat_time.append(td)
            j = description_index.get(id(d))
            if j is None:
                j = description_index[id(d)] = len(descriptions)
                descriptions.append(d)
            flat_description.append(j)
    return ids, entry_index, counts, starts, flat_offset, flat_time, flat_description, descriptions


def _arrow_batches(pa: Any, schema: pa.Schema, batch_rows: int, n: int, file_part: tuple[Any, ...],
                   per_row: tuple[Any, ...], row_attributes: Any, log_append: Any, offsets: Any, timestamps: Any,
                   description_of_row: Any, distinct: list[Any]) -> list[pa.RecordBatch]:
    """The split's ``n`` rows as Arrow batches of ``batch_rows``: the file's
    and the batches' columns per row, the described columns taken from the
    split's distinct descriptions."""
    import numpy as np

    types = [f.type for f in schema]
    out = []
    for r0 in range(0, n, batch_rows):
        r1 = min(n, r0 + batch_rows)
        m = r1 - r0
        arrays: list[Any] = [pa.repeat(pa.scalar(v, type=types[c]), m) for c, v in enumerate(file_part)]
        arrays += [pa.array(column[r0:r1], type=types[len(arrays) + c]) for c, column in enumerate(per_row)]
        attrs = row_attributes[r0:r1]
        arrays += [
            pa.array(_TIMESTAMP_TYPES, type=pa.string()).take(pa.array(log_append[r0:r1].astype(np.int8))),
            pa.array(_CODEC_NAMES, type=pa.string()).take(pa.array(attrs & 0x07)),
            pa.array((attrs & 0x20) != 0),
            pa.array((attrs & 0x10) != 0),
            pa.repeat(pa.scalar(True), m),  # every CRC was checked above
        ]
        assert len(arrays) == _HEAD
        arrays += [pa.array(offsets[r0:r1], type=types[_OFFSET]), pa.array(timestamps[r0:r1], type=types[_TIMESTAMP])]
        arrays += [None] * (len(types) - len(arrays))
        at_row = pa.array(description_of_row[r0:r1], type=pa.int32())
        for c in range(_TIMESTAMP + 1, len(types)):
            column = distinct[c]
            if column is not None:
                arrays[c] = column.take(at_row)
            elif c >= _TYPED_START:
                arrays[c] = pa.nulls(m, types[c])
        arrays[_ERROR_KIND] = pa.nulls(m, types[_ERROR_KIND])
        arrays[_ERROR] = pa.nulls(m, types[_ERROR])
        for c, array in enumerate(arrays):
            if not array.type.equals(types[c]):
                arrays[c] = array.cast(types[c])
        out.append(pa.RecordBatch.from_arrays(arrays, schema=schema))
    return out


def _cut(batch: pa.RecordBatch, batch_rows: int) -> Iterator[pa.RecordBatch]:
    """A batch that passed ``batch_rows`` (a Kafka batch is added whole) in slices."""
    for start in range(0, batch.num_rows, batch_rows):
        yield batch.slice(start, batch_rows)
