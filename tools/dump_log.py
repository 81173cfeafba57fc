"""``kraft dump-log``: Kafka's ``kafka-dump-log.sh`` (``kafka.tools.DumpLogSegments``)
for the files of a Kafka log directory.

Prints the same bytes as Kafka 4.1.0's tool (``--kafka-version 4.0``: as
4.0.0's), field order and spelling included: per batch ``baseOffset: ..
lastOffset: .. count: .. ... crc: .. isvalid: ..``, per record ``| offset: ..
CreateTime: .. keySize: .. valueSize: ..`` with control records described as
Kafka does (``SnapshotHeader {...}``, ``KRaftVoters {...}``, ``LeaderChange:
{...}``; 4.0.0: ``controlType: LEADER_CHANGE(2)``) and, with
``--cluster-metadata-decoder``, ``payload:
{"type":"TOPIC_RECORD",...}``. ``.index`` and ``.timeindex`` files are dumped
and checked against their ``.log`` (``--verify-index-only``,
``--index-sanity-check``), producer-state ``.snapshot`` files and
``.txnindex`` files are decoded. ``--json`` prints one JSON object per record
instead (ours; Kafka has no such option).

Two paths print ``.log``/``.checkpoint`` records: the fast one (a batch's
records decoded in one loop, payload JSON compiled per record type and
written by orjson, output in large chunks) and the record-by-record one kept
as its oracle: tests check both print the same bytes on every fixture.

Where we differ from Kafka, deliberately: a failure that Kafka's tool ends
with a Java stack trace (an index without its ``.log``, a corrupt index under
``--index-sanity-check``, a corrupt batch header) is one line on stderr and
exit status 1; a batch with a bad CRC is printed with ``isvalid: false``; a
torn tail ends the file with Kafka's ``Found N invalid bytes at the end of ...``.
"""

from __future__ import annotations

import re
import struct
import sys
from pathlib import Path
from typing import IO, Any

import click

from kraft.kafka_release import LATEST, KafkaRelease
from kraft.records.bootstrap import feature_level, release_for_level
from kraft.records.batch import Record, RecordBatch
from kraft.records.control import ControlRecordType, decode_control_record
from kraft.tools.record_format.describe_record import codec_name as _codec_name
from kraft.tools.record_format.describe_record import java_json
from kraft.tools.record_format.describe_record import message_json as _message_json
from kraft.tools.record_format.describe_record import read_file_batches as _read_batches
from kraft.tools.record_format.describe_record import record_json as _record_json
from kraft.records.errors import RecordsError
from kraft.records.snapshot import BOOTSTRAP_FILE_NAME, parse_snapshot_path
from kraft.records.snapshot import SUFFIX as SNAPSHOT_SUFFIX
from kraft.tools.kafka_version import current_release, kafka_version_option

RECORD_INDENT = "|"
INT_MAX = 2**31 - 1
#: ``--max-message-size`` default: 5 MiB
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024

#: Control records Kafka's DumpLogSegments decodes; others print as
#: ``controlType: NAME(id)``. LEADER_CHANGE is decoded from Kafka 4.1 on
#: (``LeaderChange: {...}``, see :attr:`KafkaRelease.decodes_leader_change`).
_CONTROL_LABELS = {
    ControlRecordType.SNAPSHOT_HEADER: " SnapshotHeader ",
    ControlRecordType.SNAPSHOT_FOOTER: " SnapshotFooter ",
    ControlRecordType.KRAFT_VERSION: " KRaftVersion ",
    ControlRecordType.KRAFT_VOTERS: " KRaftVoters ",
}

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_PREFIX = struct.Struct(">qi")
_LAST_OFFSET_DELTA = struct.Struct(">i")
#: lines gathered before one write: output goes out in large chunks
_CHUNK_LINES = 4096


class DumpAborted(Exception):
    """A failure Kafka's tool dies of (it prints a stack trace and stops):
    we print one line and stop with status 1."""


#: ``MetadataRecordSerde``'s exception for a record id its release does not know.
_UNSUPPORTED = "org.apache.kafka.common.errors.UnsupportedVersionException: "


def _bool(value: bool) -> str:
    return "true" if value else "false"


class _Dumper:
    """The record-by-record printer: simple, and the oracle of the fast path."""

    def __init__(
        self,
        *,
        print_data: bool,
        deep: bool,
        metadata_decoder: bool,
        skip_record_metadata: bool,
        as_json: bool,
        max_bytes: int,
        verify_index_only: bool = False,
        index_sanity_check: bool = False,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        release: KafkaRelease = LATEST,
        out: IO[str],
        err: IO[str],
    ) -> None:
        self.print_data = print_data
        self.deep = deep
        self.metadata_decoder = metadata_decoder
        self.skip_record_metadata = skip_record_metadata
        self.as_json = as_json
        self.max_bytes = max_bytes
        self.verify_index_only = verify_index_only
        self.index_sanity_check = index_sanity_check
        self.max_message_size = max_message_size
        self.control_labels = dict(_CONTROL_LABELS)
        if release.decodes_leader_change:
            self.control_labels[ControlRecordType.LEADER_CHANGE] = " LeaderChange: "
        self.gap_from_minus_one = release.reports_gap_from_minus_one
        self.gaps_in_file_order = release.lists_gaps_in_file_order
        self.unknown_types = frozenset(release.unknown_metadata_records)
        self.release = release
        #: The release's newest metadata.version level, and the newest level
        #: a decoded log finalized when above it (a log a newer Kafka wrote).
        self.release_level = feature_level(release.latest_testing)
        self.newer_level: int | None = None
        self.bar_first_field = release.bars_first_field_without_metadata
        self.out = out
        self.err = err
        self.non_consecutive: dict[str, list[tuple[int, int]]] = {}
        self.index_mismatches: dict[str, list[tuple[int, int]]] = {}
        self.time_mismatches: dict[str, list[tuple[int, int]]] = {}
        self.time_out_of_order: dict[str, list[tuple[int, int]]] = {}
        self.time_not_found: dict[str, list[tuple[int, int]]] = {}
        self.failed = False

    def emit(self, line: str) -> None:
        self.out.write(line + "\n")

    def flush(self) -> None:
        """Write out what is buffered (before anything goes to stderr)."""

    def warn(self, line: str) -> None:
        self.flush()
        self.err.write(line + "\n")

    # --- one file --------------------------------------------------------------

    def dump(self, arg: str) -> None:
        path = Path(arg)
        if not self.as_json:
            self.emit(f"Dumping {arg}")
        name = path.name
        suffix = name[name.rfind(".") :] if "." in name else ""
        if suffix in (".log", SNAPSHOT_SUFFIX):
            self.dump_log(path, arg)
        elif suffix == ".index":
            self.dump_index(path, arg)
        elif suffix == ".timeindex":
            self.dump_time_index(path, arg)
        elif suffix == ".snapshot":
            self.dump_producer_snapshot(path, arg)
        elif suffix == ".txnindex":
            self.dump_txn_index(path, arg)
        else:
            self.warn(f"Ignoring unknown file {arg}")

    def read(self, path: Path, arg: str) -> bytes | None:
        try:
            return path.read_bytes()
        except OSError as exc:
            self.warn(f"Cannot read {arg}: {exc.strerror or exc}")
            self.failed = True
            return None

    def dump_log(self, path: Path, arg: str) -> None:
        name = path.name
        if not self.as_json:
            # DumpLogSegments.dumpLog parses the name before reading the file
            # and dies when it cannot (NumberFormatException, or
            # StringIndexOutOfBounds in Snapshots.parse): we stop there too,
            # with one line instead of the stack trace.
            if name.endswith(".log"):
                stem = name.split(".")[0]
                start = _java_long(stem)
                if start is None:
                    raise DumpAborted(
                        f'Cannot dump {arg}: For input string: "{stem}" (a segment is named after its base '
                        "offset, e.g. 00000000000000000000.log)"
                    )
                self.emit(f"Log starting offset: {start}")
            elif name == BOOTSTRAP_FILE_NAME:
                self.emit("KRaft bootstrap snapshot")
            else:
                sp = parse_snapshot_path(path)
                if sp is None:
                    raise DumpAborted(
                        f"Cannot dump {arg}: a snapshot is named <end offset, 20 digits>-<epoch, 10 digits>"
                        ".checkpoint, e.g. 00000000000000000100-0000000001.checkpoint"
                    )
                self.emit(f"Snapshot end offset: {sp.snapshot_id.offset}, epoch: {sp.snapshot_id.epoch}")
        data = self.read(path, arg)
        if data is None:
            return
        if self.max_bytes < len(data):
            data = data[: self.max_bytes]  # FileRecords.slice(0, maxBytes)
        batches, valid_bytes, corruption = _read_batches(data)
        abs_path = str(path.absolute())
        self.dump_batches(batches, abs_path, arg)
        if corruption is not None:
            self.warn(f"Corrupt batch in {arg} at position {valid_bytes}: {corruption}")
            self.failed = True
        trailing = len(data) - valid_bytes
        if trailing > 0 and self.max_bytes == INT_MAX and not self.as_json:
            self.emit(f"Found {trailing} invalid bytes at the end of {name}")
        elif trailing > 0 and self.as_json:
            self.warn(f"Found {trailing} invalid bytes at the end of {arg} (position {valid_bytes})")

    def dump_batches(self, batches: list[RecordBatch], abs_path: str, arg: str) -> None:
        last_offset = -1
        for batch in batches:
            if not self.as_json:
                self.print_batch(batch)
            if self.deep or self.as_json:
                last_offset = self.dump_records(batch, abs_path, arg, last_offset)

    def print_batch(self, batch: RecordBatch) -> None:
        horizon = batch.delete_horizon_ms
        horizon_text = "OptionalLong.empty" if horizon is None else f"OptionalLong[{horizon}]"
        self.emit(
            f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} count: {batch.records_count}"
            f" baseSequence: {batch.base_sequence} lastSequence: {batch.last_sequence}"
            f" producerId: {batch.producer_id} producerEpoch: {batch.producer_epoch}"
            f" partitionLeaderEpoch: {batch.partition_leader_epoch} isTransactional: {_bool(batch.is_transactional)}"
            f" isControl: {_bool(batch.is_control)} deleteHorizonMs: {horizon_text}"
            f" position: {batch.position} {batch.timestamp_type}: {batch.max_timestamp}"
            f" size: {batch.size_in_bytes} magic: {batch.magic}"
            f" compresscodec: {_codec_name(batch)} crc: {batch.crc} isvalid: {_bool(batch.is_valid())}"
        )

    def records_of(self, batch: RecordBatch, arg: str) -> list[Record] | None:
        try:
            return batch.records()
        except RecordsError as exc:
            self.warn(f"Cannot decode records of the batch at position {batch.position} of {arg}: {exc}")
            self.failed = True
            return None

    def note_offset(self, abs_path: str, last_offset: int, offset: int) -> int:
        """DumpLogSegments.dumpLog's check: the first record of a file starts
        the sequence (whatever its offset); a gap after that is reported.
        From 4.3 the sequence starts at -1: a first record other than 0 is
        a gap too (:attr:`KafkaRelease.reports_gap_from_minus_one`)."""
        if (last_offset != -1 or self.gap_from_minus_one) and offset != last_offset + 1:
            self.non_consecutive.setdefault(abs_path, []).insert(0, (last_offset, offset))
        return offset

    def dump_records(self, batch: RecordBatch, abs_path: str, arg: str, last_offset: int) -> int:
        records = self.records_of(batch, arg)
        if records is None:
            return last_offset
        for record in records:
            last_offset = self.note_offset(abs_path, last_offset, record.offset)
            if self.as_json:
                self.emit(java_json(self.record_json(batch, record, arg)))
            else:
                self.emit(self.record_line(batch, record))
        return last_offset

    def record_line(self, batch: RecordBatch, record: Record) -> str:
        parts: list[str] = []
        prefix = RECORD_INDENT + " "
        if not self.skip_record_metadata:
            header_keys = ",".join(k for k, _ in record.headers)
            parts.append(
                f"{prefix}offset: {record.offset} {batch.timestamp_type}: {record.timestamp}"
                f" keySize: {record.key_size} valueSize: {record.value_size}"
                f" sequence: {batch.record_sequence(record)} headerKeys: [{header_keys}]"
            )
            prefix = " "
            if batch.is_control:
                parts.append(self.control_text(record))
        if self.print_data and not batch.is_control:
            key, payload = self.parse(record)
            if key is not None:
                parts.append(f"{prefix}key: {key}")
            if payload is not None:
                first = not parts and self.bar_first_field
                parts.append(f"{prefix if first else ' '}payload: {payload}")
        return "".join(parts)

    def control_text(self, record: Record) -> str:
        try:
            control = decode_control_record(record)
        except Exception as exc:  # noqa: BLE001 - a damaged record is reported, not fatal
            return f" controlType: invalid ({exc})"
        ctype = control.type
        if ctype in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            return f" endTxnMarker: {ctype.name} coordinatorEpoch: {control.message.coordinator_epoch}"
        label = self.control_labels.get(ctype)
        if label is None:
            return f" controlType: {ctype.name}({control.type_id})"
        return label + java_json(_message_json(control.message))

    def note_value(self, value: bytes | memoryview | None) -> None:
        """Remember a metadata.version above the release's (a
        FeatureLevelRecord, type 12): :meth:`finish` then says, once, that
        the log is newer than the release named."""
        if value is None or len(value) < 2 or value[1] != 12:
            return
        from kraft.records.metadata import decode_metadata_record

        try:
            message = decode_metadata_record(value).message
        except Exception:  # noqa: BLE001 - the record's own line reports it
            return
        if message.name == "metadata.version" and message.feature_level > self.release_level:
            self.newer_level = max(self.newer_level or 0, message.feature_level)

    def parse(self, record: Record) -> tuple[str | None, str | None]:
        """Kafka's message parsers: the cluster-metadata decoder, or the
        default ``StringDecoder`` for key and value."""
        if self.metadata_decoder:
            from kraft.records.metadata import metadata_payload_json

            raw = record.value
            self.note_value(raw)
            if raw is not None and len(raw) > 1 and raw[1] in self.unknown_types:
                return None, f"Error at {record.offset}, skipping. {_UNSUPPORTED}Unknown metadata id {raw[1]}"
            try:
                return None, java_json(metadata_payload_json(raw))
            except Exception as exc:  # noqa: BLE001 - Kafka prints the error and goes on
                unsupported = _UNSUPPORTED if str(exc).startswith("Unknown metadata id") else ""
                return None, f"Error at {record.offset}, skipping. {unsupported}{exc}"
        key = None if record.key is None else bytes(record.key).decode("utf-8", "replace")
        value = None if record.value is None else bytes(record.value).decode("utf-8", "replace")
        return key, value

    def record_json(self, batch: RecordBatch, record: Record, arg: str) -> dict[str, Any]:
        return _record_json(batch, record, arg, metadata_decoder=self.metadata_decoder)

    # --- indexes ------------------------------------------------------------------

    def segment_log(self, path: Path) -> bytes:
        """The ``.log`` an index belongs to; Kafka's tool dies without it."""
        log = path.absolute().parent / (path.name.split(".")[0] + ".log")
        try:
            return log.read_bytes()
        except OSError as exc:
            raise DumpAborted(
                f"Cannot check {path}: its segment {log} cannot be read ({exc.strerror or exc}); "
                "an index is dumped against the .log beside it"
            ) from None

    def first_batch_last_offset(self, log: bytes, position: int, limit: int) -> int | None:
        """``fileRecords.slice(position, limit).batches.iterator.next().lastOffset``."""
        end = min(len(log), position + limit)
        if position < 0 or end - position < 17:  # HEADER_SIZE_UP_TO_MAGIC
            return None
        base, length = _PREFIX.unpack_from(log, position)
        if position + length + 12 > end or length < 49:
            return None
        return base + _LAST_OFFSET_DELTA.unpack_from(log, position + 23)[0]

    def dump_index(self, path: Path, arg: str) -> None:
        """DumpLogSegments.dumpIndex."""
        base = _base_offset(path)
        log = self.segment_log(path)
        data = self.read(path, arg)
        if data is None:
            return
        count = len(data) // 8
        if count == 0:
            self.emit(f"{arg} is empty.")
            return
        entries = list(_OFFSET_ENTRY.iter_unpack(data[: count * 8]))
        if self.index_sanity_check:
            # OffsetIndex.sanityCheck: the check that decides a rebuild at start-up
            last_offset = base + entries[-1][0]
            if last_offset < base:
                raise DumpAborted(
                    f"Corrupt index found, index file {path.absolute()} has non-zero size but the last offset "
                    f"is {last_offset} which is less than the base offset {base}"
                )
            if len(data) % 8:
                raise DumpAborted(
                    f"Index file {path.absolute()} is corrupt, found {len(data)} bytes which is neither "
                    "positive nor a multiple of 8"
                )
            self.emit(f"{arg} passed sanity check.")
            return
        for i, (rel, position) in enumerate(entries):
            offset = base + rel
            if offset == base and i > 0:
                return  # a zero-filled (preallocated) tail
            found = self.first_batch_last_offset(log, position, self.max_message_size)
            if found is None:
                raise DumpAborted(f"{arg}: no batch at position {position} of the segment for indexed offset {offset}")
            if found != offset:
                self.index_mismatches.setdefault(str(path.absolute()), []).insert(0, (offset, found))
            if not self.verify_index_only:
                self.emit(f"offset: {offset} position: {position}")

    def dump_time_index(self, path: Path, arg: str) -> None:
        """DumpLogSegments.dumpTimeIndex."""
        base = _base_offset(path)
        log = self.segment_log(path)
        index_path = path.absolute().parent / (path.name.split(".")[0] + ".index")
        try:
            index_data = index_path.read_bytes()
        except OSError:
            index_data = b""
        offsets = [(base + r, p) for r, p in _OFFSET_ENTRY.iter_unpack(index_data[: len(index_data) // 8 * 8])]
        data = self.read(path, arg)
        if data is None:
            return
        entries = list(_TIME_ENTRY.iter_unpack(data[: len(data) // 12 * 12]))
        abs_path = str(path.absolute())
        if self.index_sanity_check:
            _time_index_sanity_check(abs_path, base, entries, len(data))
            self.emit(f"{arg} passed sanity check.")
            return
        previous = -1
        for i, (timestamp, rel) in enumerate(entries):
            offset = base + rel
            if offset == base and i > 0:
                return
            position = _lookup(offsets, offset, base)
            batch = _find_batch(log, position, offset)
            if batch is None:
                self.time_not_found.setdefault(abs_path, []).append((offset, -1))
            elif batch.last_offset != offset:
                self.time_not_found.setdefault(abs_path, []).append((offset, batch.last_offset))
            else:
                max_timestamp = -1
                for record in self.records_of(batch, arg) or ():
                    max_timestamp = max(max_timestamp, record.timestamp)
                if max_timestamp != timestamp:
                    self.time_mismatches.setdefault(abs_path, []).append((timestamp, max_timestamp))
                if previous >= timestamp:
                    self.time_out_of_order.setdefault(abs_path, []).append((timestamp, previous))
            if not self.verify_index_only:
                self.emit(f"timestamp: {timestamp} offset: {offset}")
            previous = timestamp

    def dump_producer_snapshot(self, path: Path, arg: str) -> None:
        """DumpLogSegments.dumpProducerIdSnapshot: one line per producer."""
        from kraft.records.layouts import CorruptProducerSnapshotError, read_producer_snapshot

        data = self.read(path, arg)
        if data is None:
            return
        try:
            entries = read_producer_snapshot(data)
        except CorruptProducerSnapshotError as exc:
            self.warn(str(exc))  # Kafka prints the message and goes on (status 0)
            return
        for e in entries:
            txn = "OptionalLong.empty" if e.current_txn_first_offset < 0 else f"OptionalLong[{e.current_txn_first_offset}]"
            line = (
                f"producerId: {e.producer_id} producerEpoch: {e.epoch} coordinatorEpoch: {e.coordinator_epoch}"
                f" currentTxnFirstOffset: {txn} lastTimestamp: {e.timestamp} "
            )
            if e.last_offset >= 0:  # the entry has batch metadata
                line += (
                    f"firstSequence: {e.first_sequence} lastSequence: {e.last_sequence} lastOffset: {e.last_offset}"
                    f" offsetDelta: {e.offset_delta} timestamp: {e.timestamp}"
                )
            self.emit(line)

    def dump_txn_index(self, path: Path, arg: str) -> None:
        """DumpLogSegments.dumpTxnIndex: the aborted transactions of a segment."""
        from kraft.records.layouts import aborted_txns

        data = self.read(path, arg)
        if data is None:
            return
        for version, producer_id, first, last, lso in aborted_txns(data):
            self.emit(
                f"version: {version} producerId: {producer_id} firstOffset: {first} "
                f"lastOffset: {last} lastStableOffset: {lso}"
            )

    def finish(self) -> None:
        self.flush()
        # Only where a person reads it: piped, kraft's output stays the named
        # release's byte for byte (its tool says nothing of the kind).
        if self.newer_level is not None and self.err.isatty():
            written = release_for_level(self.newer_level) or f"level {self.newer_level}"
            self.err.write(f"Note: this log was written at metadata.version {self.newer_level} ({written}), newer than "
                           f"Kafka {self.release.version}, which knows up to {self.release_level} "
                           f"({self.release.latest_testing}): records it lacks print as its tool prints them; to "
                           f"decode them, name a newer release with --kafka-version\n")
        for name, pairs in self.index_mismatches.items():
            self.err.write(f"Mismatches in :{name}\n")
            for index_offset, log_offset in pairs:
                self.err.write(f"  Index offset: {index_offset}, log offset: {log_offset}\n")
        for name, pairs in self.time_mismatches.items():
            self.err.write(f"Found timestamp mismatch in :{name}\n")
            for index_ts, log_ts in pairs:
                self.err.write(f"  Index timestamp: {index_ts}, log timestamp: {log_ts}\n")
        for name, pairs in self.time_out_of_order.items():
            self.err.write(f"Found out of order timestamp in :{name}\n")
            for index_ts, previous in pairs:
                self.err.write(f"  Index timestamp: {index_ts}, Previously indexed timestamp: {previous}\n")
        for pairs in self.time_not_found.values():
            self.err.write("The following indexed offsets are not found in the log.\n")
            for indexed, found in pairs:
                self.err.write(f"Indexed offset: {indexed}, found log offset: {found}\n")
        for name, pairs in self.non_consecutive.items():
            self.err.write(f"Non-consecutive offsets in {name}\n")
            # Kept last gap first (Scala's list prepend, 4.0 and 4.1).
            for first, second in reversed(pairs) if self.gaps_in_file_order else pairs:
                self.err.write(f"  {first} is followed by {second}\n")


_JAVA_LONG = re.compile(r"[+-]?[0-9]+")


def _java_long(text: str) -> int | None:
    """``Long.parseLong(text)``, or None where Java throws NumberFormatException."""
    if _JAVA_LONG.fullmatch(text) is None:
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def _base_offset(path: Path) -> int:
    stem = path.name.split(".")[0]
    try:
        return int(stem)
    except ValueError:
        raise DumpAborted(f"{path}: the file name must start with the segment's base offset (e.g. 00000000000000000000)") from None


def _time_index_sanity_check(abs_path: str, base: int, entries: list[tuple[int, int]], length: int) -> None:
    """TimeIndex.sanityCheck."""
    if entries:
        last_ts, last_rel = entries[-1]
        first_ts = entries[0][0]
        if last_ts < first_ts:
            raise DumpAborted(
                f"Corrupt time index found, time index file ({abs_path}) has non-zero size but the last timestamp "
                f"is {last_ts} which is less than the first timestamp {first_ts}"
            )
        if base + last_rel < base:
            raise DumpAborted(
                f"Corrupt time index found, time index file ({abs_path}) has non-zero size but the last offset "
                f"is {base + last_rel} which is less than the first offset {base}"
            )
    if length % 12:
        raise DumpAborted(
            f"Time index file {abs_path} is corrupt, found {length} bytes which is neither positive nor a multiple of 12"
        )


def _lookup(entries: list[tuple[int, int]], target: int, base: int) -> int:
    """OffsetIndex.lookup's position: AbstractIndex's warm/cold binary search
    for the largest entry <= ``target`` (``base``, position 0 when none)."""
    n = len(entries)
    if n == 0:
        return 0

    def search(lo: int, hi: int) -> int:
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            found = entries[mid][0]
            if found > target:
                hi = mid - 1
            elif found < target:
                lo = mid
            else:
                return mid
        return lo

    first_hot = max(0, n - 1 - 1024)  # warmEntries = 8192 / 8
    if entries[first_hot][0] < target:
        return entries[search(first_hot, n - 1)][1]
    if entries[0][0] > target:
        return 0
    return entries[search(0, first_hot)][1]


def _find_batch(log: bytes, position: int, offset: int) -> RecordBatch | None:
    """The first batch from ``position`` whose last offset is >= ``offset``."""
    if not 0 <= position <= len(log):
        return None
    batches, _, _ = _read_batches(log, position, until_last_offset=offset)
    return batches[-1] if batches and batches[-1].last_offset >= offset else None


# --- the fast path ------------------------------------------------------------------------

_CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd", "unknown(5)", "unknown(6)", "unknown(7)")


def _batch_line(batch: RecordBatch, tst: str, valid: bool) -> str:
    """A batch's line of ``kafka-dump-log.sh`` output (``DumpLogSegments``)."""
    (base_offset, length, epoch, magic, crc, attributes, last_delta, base_ts, max_ts,
     producer_id, producer_epoch, base_seq, count, _buf, position) = batch
    last_seq = -1 if base_seq == -1 else (base_seq + last_delta if base_seq <= INT_MAX - last_delta
                                           else base_seq + last_delta - INT_MAX - 1)
    horizon = f"OptionalLong[{base_ts}]" if attributes & 0x40 else "OptionalLong.empty"
    return (
        f"baseOffset: {base_offset} lastOffset: {base_offset + last_delta} count: {count}"
        f" baseSequence: {base_seq} lastSequence: {last_seq}"
        f" producerId: {producer_id} producerEpoch: {producer_epoch}"
        f" partitionLeaderEpoch: {epoch} isTransactional: {'true' if attributes & 0x10 else 'false'}"
        f" isControl: {'true' if attributes & 0x20 else 'false'} deleteHorizonMs: {horizon}"
        f" position: {position} {tst}: {max_ts} size: {length + 12} magic: {magic}"
        f" compresscodec: {_CODEC_NAMES[attributes & 0x07]} crc: {crc} isvalid: {'true' if valid else 'false'}"
    )


class _FastDumper(_Dumper):
    """Prints ``.log``/``.checkpoint`` records in one loop per batch, without
    per-field objects, and writes in large chunks. Anything it does not
    specialise (control records, key/value string decoding, records the
    compiled payload writer declines) goes through the oracle's methods, so
    the output is the same bytes."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        from kraft.tools.record_format.fastjson import MetadataPayloads

        self.lines: list[str] = []
        self.payloads = MetadataPayloads(unknown=self.unknown_types)
        #: offset of the first record rendered (for joining parallel runs)
        self.first_offset: int | None = None

    def emit(self, line: str) -> None:
        lines = self.lines
        lines.append(line)
        if len(lines) >= _CHUNK_LINES:
            self.flush()

    def flush(self) -> None:
        if self.lines:
            self.lines.append("")
            self.out.write("\n".join(self.lines))
            self.lines = []

    def dump_batches(self, batches: list[RecordBatch], abs_path: str, arg: str) -> None:
        workers = _worker_count()
        size = sum(b[1] for b in batches) if batches else 0
        if workers > 1 and size >= PARALLEL_MIN_BYTES and (self.deep or self.as_json):
            self.dump_batches_parallel(batches, abs_path, arg, workers)
        else:
            self.render(batches, abs_path, arg)

    def dump_batches_parallel(self, batches: list[RecordBatch], abs_path: str, arg: str, workers: int) -> None:
        """Render contiguous runs of batches in forked processes (the file's
        bytes are shared copy-on-write), then write their text in file order.
        Offset gaps inside a run come back from its worker; gaps between runs
        are found here, so the report is the serial one."""
        import multiprocessing

        global _PARALLEL_JOB
        self.flush()
        total = sum(b[1] for b in batches)
        # Runs of about RUN_BYTES (at least two per worker), written out as
        # they come back in order: memory holds a few runs' text, not the file's.
        count = max(workers * 2, -(-total // RUN_BYTES))
        bounds = [0]
        acc = 0
        for i, b in enumerate(batches):
            acc += b[1]
            if acc >= total * len(bounds) / count and len(bounds) < count:
                bounds.append(i + 1)
        if bounds[-1] != len(batches):
            bounds.append(len(batches))
        runs = [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]
        raw = getattr(self.out, "buffer", None)
        if raw is not None:
            self.out.flush()
        chronological: list[tuple[int, int]] = []
        last_offset = -1
        _PARALLEL_JOB = (self, batches, abs_path, arg)
        try:
            with multiprocessing.get_context("fork").Pool(workers) as pool:
                for text, gaps, first, last, failed in pool.imap(_render_run, runs, chunksize=1):
                    if text:
                        if raw is not None:
                            raw.write(text)  # encoded by the worker, in parallel
                        else:
                            self.out.write(text.decode("utf-8", "surrogateescape"))
                    if first is not None:
                        if (last_offset != -1 or self.gap_from_minus_one) and first != last_offset + 1:
                            chronological.append((last_offset, first))
                        last_offset = last
                    chronological.extend(reversed(gaps))
                    self.failed = self.failed or failed
        finally:
            _PARALLEL_JOB = None
        if chronological:
            self.non_consecutive[abs_path] = list(reversed(chronological)) + self.non_consecutive.get(abs_path, [])

    def render(self, batches: list[RecordBatch], abs_path: str, arg: str) -> int:
        """Render ``batches`` serially; returns the last record offset seen (-1: none)."""
        from crc32c import crc32c

        as_json = self.as_json
        deep = self.deep or as_json
        decoder = self.metadata_decoder and self.print_data
        plain = not self.print_data and not self.skip_record_metadata
        specialised = (decoder or plain) and not self.skip_record_metadata
        lines = self.lines
        last_offset = -1
        for batch in batches:
            base_offset, length, crc, attributes, buf, position = (
                batch[0], batch[1], batch[4], batch[5], batch[13], batch[14])
            tst = "LogAppendTime" if attributes & 0x08 else "CreateTime"
            valid = crc32c(memoryview(buf)[position + 21 : position + length + 12]) == crc
            if not as_json:
                lines.append(_batch_line(batch, tst, valid))
            if not deep:
                if len(lines) >= _CHUNK_LINES:
                    self.flush()
                    lines = self.lines
                continue
            records = self.records_of(batch, arg)
            lines = self.lines
            if records is None:
                continue
            if self.first_offset is None and records:
                self.first_offset = records[0][0]
            if attributes & 0x20 or not specialised:
                for record in records:
                    last_offset = self.note_offset(abs_path, last_offset, record[0])
                    lines.append(java_json(self.record_json(batch, record, arg)) if as_json
                                 else self.record_line(batch, record))
            elif as_json:
                last_offset = self._json_lines(batch, records, arg, abs_path, last_offset, tst, valid, decoder)
            else:
                last_offset = self._text_lines(batch, records, abs_path, last_offset, tst, decoder)
            if len(lines) >= _CHUNK_LINES:
                self.flush()
                lines = self.lines
        return last_offset

    def _json_lines(self, batch: RecordBatch, records: list[Any], arg: str, abs_path: str, last_offset: int,
                    tst: str, valid: bool, decoder: bool) -> int:
        """The ``--json`` lines of a data batch's records, written straight
        from the batch fields; the last offset seen."""
        import orjson

        base_offset, epoch, attributes, last_delta, position = batch[0], batch[2], batch[5], batch[6], batch[14]
        payload_text = self.payloads.text
        lines = self.lines
        prefix = (
            f'{{"file":{java_json(arg)},"position":{position},"baseOffset":{base_offset},'
            f'"lastOffset":{base_offset + last_delta},"partitionLeaderEpoch":{epoch},"isControl":false,'
            f'"isTransactional":{"true" if attributes & 0x10 else "false"},'
            f'"compresscodec":"{_CODEC_NAMES[attributes & 0x07]}","crcValid":{"true" if valid else "false"},'
        )
        for record in records:
            offset, timestamp, key, value, headers = record[0], record[1], record[2], record[3], record[4]
            if offset != last_offset + 1:
                self.note_offset(abs_path, last_offset, offset)
            last_offset = offset
            if decoder:
                self.note_value(value)
            payload = payload_text(value) if decoder else None
            if (decoder and payload is None) or headers:
                lines.append(java_json(self.record_json(batch, record, arg)))
                continue
            head = (
                f'{prefix}"offset":{offset},"timestampType":"{tst}","timestamp":{timestamp},'
                f'"keySize":{-1 if key is None else len(key)},"valueSize":{-1 if value is None else len(value)},'
                f'"headerKeys":[],'
            )
            if decoder:
                lines.append(f'{head}"payload":{payload}}}')
            else:
                k = "null" if key is None else orjson.dumps(_b64(key)).decode()
                v = "null" if value is None else orjson.dumps(_b64(value)).decode()
                lines.append(f'{head}"key":{k},"value":{v}}}')
        return last_offset

    def _text_lines(self, batch: RecordBatch, records: list[Any], abs_path: str, last_offset: int, tst: str,
                    decoder: bool) -> int:
        """The ``| offset: ...`` lines of a data batch's records; the last offset seen."""
        base_offset, base_seq = batch[0], batch[11]
        payload_text = self.payloads.text
        lines = self.lines
        for record in records:
            offset, timestamp, key, value, headers = record[0], record[1], record[2], record[3], record[4]
            if offset != last_offset + 1:
                self.note_offset(abs_path, last_offset, offset)
            last_offset = offset
            if base_seq == -1:
                seq = -1
            else:
                delta = offset - base_offset
                seq = base_seq + delta if base_seq <= INT_MAX - delta else base_seq + delta - INT_MAX - 1
            line = (
                f"| offset: {offset} {tst}: {timestamp} keySize: {-1 if key is None else len(key)}"
                f" valueSize: {-1 if value is None else len(value)} sequence: {seq}"
                f" headerKeys: [{','.join([h[0] for h in headers]) if headers else ''}]"
            )
            if decoder:
                self.note_value(value)
                payload = payload_text(value)
                if payload is None:
                    payload = self.parse(record)[1]
                line = f"{line} payload: {payload}"
            lines.append(line)
        return last_offset


#: files smaller than this are rendered in one process (forking costs more)
PARALLEL_MIN_BYTES = 4 * 1024 * 1024
#: input bytes per run of batches a worker renders at a time
RUN_BYTES = 4 * 1024 * 1024
_PARALLEL_JOB: tuple[_FastDumper, list[RecordBatch], str, str] | None = None


def _worker_count() -> int:
    """One worker per CPU this process may run on; ``KRAFT_DUMP_LOG_WORKERS``
    overrides it (1: render in this process only)."""
    import os

    forced = os.environ.get("KRAFT_DUMP_LOG_WORKERS", "")
    if forced.isdigit() and int(forced) > 0:
        return int(forced)
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class _Collected:
    """A text sink for a worker: what it renders goes back to the parent."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return len(text)


def _render_run(run: tuple[int, int]) -> tuple[bytes, list[tuple[int, int]], int | None, int, bool]:
    """In a forked worker: render batches ``run[0]:run[1]`` of the job."""
    assert _PARALLEL_JOB is not None
    dumper, batches, abs_path, arg = _PARALLEL_JOB
    sink = _Collected()
    dumper.out = sink  # type: ignore[assignment]
    dumper.lines = []
    dumper.first_offset = None
    dumper.failed = False
    dumper.non_consecutive = {}
    # A run starts mid-file: the gap before its first record is judged by the parent.
    dumper.gap_from_minus_one = False
    last = dumper.render(batches[run[0] : run[1]], abs_path, arg)
    dumper.flush()
    text = "".join(sink.parts).encode("utf-8", "surrogateescape")
    return text, dumper.non_consecutive.get(abs_path, []), dumper.first_offset, last, dumper.failed


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(bytes(data)).decode("ascii")


def run_dump(
    files: list[str],
    *,
    print_data: bool = False,
    deep: bool = False,
    metadata_decoder: bool = False,
    skip_record_metadata: bool = False,
    as_json: bool = False,
    max_bytes: int = INT_MAX,
    verify_index_only: bool = False,
    index_sanity_check: bool = False,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    out: IO[str] | None = None,
    err: IO[str] | None = None,
    fast: bool = True,
    progress: bool = False,
    release: KafkaRelease = LATEST,
) -> int:
    """Dump ``files``; returns the exit status (1 if a file was unreadable or
    corrupt, or the dump stopped where Kafka's tool dies). ``fast=False``
    takes the record-by-record oracle path; ``progress`` shows a bar (tqdm,
    on stderr) over the files; ``release`` is the Kafka release whose
    output is printed."""
    dumper_cls = _FastDumper if fast else _Dumper
    out = out or sys.stdout
    err = err or sys.stderr
    dumper = dumper_cls(
        print_data=print_data or metadata_decoder,
        deep=deep or print_data or metadata_decoder,
        metadata_decoder=metadata_decoder,
        skip_record_metadata=skip_record_metadata,
        as_json=as_json,
        max_bytes=max_bytes,
        verify_index_only=verify_index_only,
        index_sanity_check=index_sanity_check,
        max_message_size=max_message_size,
        release=release,
        out=out,
        err=err,
    )
    bar = None
    if progress:
        from tqdm import tqdm

        sizes = []
        for arg in files:
            try:
                sizes.append(Path(arg).stat().st_size)
            except OSError:
                sizes.append(0)
        bar = tqdm(total=sum(sizes), unit="B", unit_scale=True, desc="dump-log", file=err, leave=False)
    else:
        sizes = [0] * len(files)
    try:
        for arg, size in zip(files, sizes):
            dumper.dump(arg)
            if bar is not None:
                dumper.flush()
                bar.update(size)
    except DumpAborted as exc:
        dumper.flush()
        err.write(f"{exc}\n")
        dumper.failed = True
    finally:
        if bar is not None:
            bar.close()
    dumper.finish()
    return 1 if dumper.failed else 0


def _split_files(values: tuple[str, ...]) -> list[str]:
    # Kafka takes one comma-separated --files value; accept that and repeats.
    return [f for v in values for f in v.split(",") if f]


def _stdout() -> IO[str]:
    """stdout with a large buffer: the output is written in big chunks."""
    import io

    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return sys.stdout  # not a real file (tests, click's runner)
    sys.stdout.flush()
    return io.TextIOWrapper(
        io.open(fd, "wb", buffering=1 << 20, closefd=False), encoding="utf-8", errors="surrogateescape",
        newline="\n", write_through=False,
    )


@click.command("dump-log", short_help="Print the batches and records of log segments and snapshots.")
@click.option("--files", "files", multiple=True, required=True, help="REQUIRED: The comma separated list of data and index log files to be dumped.")
@click.option("--print-data-log", is_flag=True, help="If set, printing the messages content when dumping data logs. Automatically set if any decoder option is specified.")
@click.option("--deep-iteration", is_flag=True, help="If set, uses deep instead of shallow iteration. Automatically set if print-data-log is enabled.")
@click.option("--cluster-metadata-decoder", is_flag=True, help="If set, log data will be parsed as cluster metadata records.")
@click.option("--skip-record-metadata", is_flag=True, help="Whether to skip printing metadata for each record.")
@click.option("--verify-index-only", is_flag=True, help="If set, just verify the index log without printing its content.")
@click.option("--index-sanity-check", is_flag=True, help="If set, just checks the index sanity without printing its content. This is the same check that is executed on broker startup to determine if an index needs rebuilding or not.")
@click.option("--max-message-size", type=int, default=DEFAULT_MAX_MESSAGE_SIZE, show_default=True, help="Size of largest message.")
@click.option("--max-bytes", type=int, default=INT_MAX, show_default=True, help="Limit the amount of total batches read in bytes avoiding reading the whole .log file(s).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per record instead of Kafka's text lines.")
@kafka_version_option
@click.argument("extra_files", nargs=-1)
def dump_log_command(
    files: tuple[str, ...],
    print_data_log: bool,
    deep_iteration: bool,
    cluster_metadata_decoder: bool,
    skip_record_metadata: bool,
    verify_index_only: bool,
    index_sanity_check: bool,
    max_message_size: int,
    max_bytes: int,
    as_json: bool,
    extra_files: tuple[str, ...],
) -> None:
    """Dump .log, .checkpoint, .index, .timeindex, .snapshot and .txnindex files as kafka-dump-log.sh does."""
    names = _split_files(files + extra_files)
    release = current_release()
    out = _stdout()
    try:
        status = run_dump(
            names,
            print_data=print_data_log,
            deep=deep_iteration,
            metadata_decoder=cluster_metadata_decoder,
            skip_record_metadata=skip_record_metadata,
            as_json=as_json,
            max_bytes=max_bytes,
            verify_index_only=verify_index_only,
            index_sanity_check=index_sanity_check,
            max_message_size=max_message_size,
            out=out,
            progress=len(names) > 1 and sys.stderr.isatty(),
            release=release,
        )
        out.flush()
    except BrokenPipeError:  # `kraft dump-log ... | head`: the reader left, not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = 0
    sys.exit(status)
