"""``kraft dump-log``: Kafka's ``kafka-dump-log.sh`` (``DumpLogSegments``) for
metadata-log files.

Prints the same lines as Kafka, field order and spelling included: per batch
``baseOffset: .. lastOffset: .. count: .. ... crc: .. isvalid: ..``, per record
``| offset: .. CreateTime: .. keySize: .. valueSize: ..`` with control records
decoded (``LeaderChange: {...}``, ``SnapshotHeader {...}``) and, with
``--cluster-metadata-decoder``, ``payload: {"type":"TOPIC_RECORD",...}``.
``--json`` prints one JSON object per record instead.

Damaged files are reported, never fatal: a batch with a bad CRC is printed
with ``isvalid: false``; records that cannot be decoded get an error line on
stderr naming the file and position; a torn tail ends the file with Kafka's
``Found N invalid bytes at the end of ...``.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path
from typing import IO, Any

import click

from kraft.records.batch import Record, RecordBatch
from kraft.records.control import ControlRecordType, decode_control_record
from kraft.records.describe import codec_name as _codec_name
from kraft.records.describe import java_json
from kraft.records.describe import message_json as _message_json
from kraft.records.describe import read_file_batches as _read_batches
from kraft.records.describe import record_json as _record_json
from kraft.records.errors import RecordsError
from kraft.records.snapshot import BOOTSTRAP_FILE_NAME, parse_snapshot_path

RECORD_INDENT = "|"

_CONTROL_LABELS = {
    ControlRecordType.LEADER_CHANGE: " LeaderChange: ",
    ControlRecordType.SNAPSHOT_HEADER: " SnapshotHeader ",
    ControlRecordType.SNAPSHOT_FOOTER: " SnapshotFooter ",
    ControlRecordType.KRAFT_VERSION: " KRaftVersion ",
    ControlRecordType.KRAFT_VOTERS: " KRaftVoters ",
}


def _bool(value: bool) -> str:
    return "true" if value else "false"


class _Dumper:
    def __init__(
        self,
        *,
        print_data: bool,
        deep: bool,
        metadata_decoder: bool,
        skip_record_metadata: bool,
        as_json: bool,
        max_bytes: int,
        out: IO[str],
        err: IO[str],
    ) -> None:
        self.print_data = print_data
        self.deep = deep
        self.metadata_decoder = metadata_decoder
        self.skip_record_metadata = skip_record_metadata
        self.as_json = as_json
        self.max_bytes = max_bytes
        self.out = out
        self.err = err
        self.non_consecutive: dict[str, list[tuple[int, int]]] = {}
        self.failed = False

    def emit(self, line: str) -> None:
        self.out.write(line + "\n")

    # --- one file --------------------------------------------------------------

    def dump(self, arg: str) -> None:
        path = Path(arg)
        if not self.as_json:
            self.emit(f"Dumping {arg}")
        name = path.name
        suffix = name[name.rfind(".") :] if "." in name else ""
        if suffix in (".log", ".checkpoint"):
            self.dump_log(path, arg)
        elif suffix in (".index", ".timeindex"):
            self.dump_index(path, suffix)
        else:
            self.err.write(f"Ignoring unknown file {arg}\n")

    def dump_log(self, path: Path, arg: str) -> None:
        name = path.name
        if not self.as_json:
            if name.endswith(".log"):
                stem = name.split(".")[0]
                self.emit(f"Log starting offset: {int(stem) if stem.isdigit() else stem}")
            elif name == BOOTSTRAP_FILE_NAME:
                self.emit("KRaft bootstrap snapshot")
            else:
                sp = parse_snapshot_path(path)
                if sp is not None:
                    self.emit(f"Snapshot end offset: {sp.snapshot_id.offset}, epoch: {sp.snapshot_id.epoch}")
        try:
            data = path.read_bytes()
        except OSError as exc:
            self.err.write(f"Cannot read {arg}: {exc.strerror or exc}\n")
            self.failed = True
            return
        size = len(data)
        if self.max_bytes < size:
            data = data[: self.max_bytes]
        batches, valid_bytes, corruption = _read_batches(data)
        last_offset = -1
        abs_path = str(path.resolve())
        for batch in batches:
            if not self.as_json:
                self.print_batch(batch)
            if self.deep or self.as_json:
                last_offset = self.dump_records(batch, abs_path, arg, last_offset)
        if corruption is not None:
            self.err.write(f"Corrupt batch in {arg} at position {valid_bytes}: {corruption}\n")
            self.failed = True
        trailing = len(data) - valid_bytes
        if trailing > 0 and self.max_bytes >= size and not self.as_json:
            self.emit(f"Found {trailing} invalid bytes at the end of {name}")
        elif trailing > 0 and self.as_json:
            self.err.write(f"Found {trailing} invalid bytes at the end of {arg} (position {valid_bytes})\n")

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

    def dump_records(self, batch: RecordBatch, abs_path: str, arg: str, last_offset: int) -> int:
        try:
            records = batch.records()
        except RecordsError as exc:
            self.err.write(f"Cannot decode records of the batch at position {batch.position} of {arg}: {exc}\n")
            self.failed = True
            return last_offset
        for record in records:
            if record.offset != last_offset + 1:
                self.non_consecutive.setdefault(abs_path, []).append((last_offset, record.offset))
            last_offset = record.offset
            if self.as_json:
                self.emit(java_json(self.record_json(batch, record, arg)))
            else:
                self.emit(self.record_line(batch, record))
        return last_offset

    def record_line(self, batch: RecordBatch, record: Record) -> str:
        parts: list[str] = []
        if not self.skip_record_metadata:
            header_keys = ",".join(k for k, _ in record.headers)
            parts.append(
                f"{RECORD_INDENT} offset: {record.offset} {batch.timestamp_type}: {record.timestamp}"
                f" keySize: {record.key_size} valueSize: {record.value_size}"
                f" sequence: {batch.record_sequence(record)} headerKeys: [{header_keys}]"
            )
            if batch.is_control:
                parts.append(self.control_text(record))
        if self.print_data and not batch.is_control:
            prefix = RECORD_INDENT + " " if self.skip_record_metadata else " "
            key, payload = self.parse(record)
            if key is not None:
                parts.append(f"{prefix}key: {key}")
                prefix = " "
            if payload is not None:
                parts.append(f"{prefix}payload: {payload}")
        return "".join(parts)

    def control_text(self, record: Record) -> str:
        try:
            control = decode_control_record(record)
        except Exception as exc:  # noqa: BLE001 - a damaged record is reported, not fatal
            return f" controlType: invalid ({exc})"
        ctype = control.type
        if ctype in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            return f" endTxnMarker: {ctype.name} coordinatorEpoch: {control.message.coordinator_epoch}"
        label = _CONTROL_LABELS.get(ctype)
        if label is None:
            return f" controlType: {ctype.name}({control.type_id})"
        return label + java_json(_message_json(control.message))

    def parse(self, record: Record) -> tuple[str | None, str | None]:
        """Kafka's message parsers: the cluster-metadata decoder, or the
        default ``StringDecoder`` for key and value."""
        if self.metadata_decoder:
            from kraft.records.metadata import metadata_payload_json

            try:
                return None, java_json(metadata_payload_json(record.value))
            except Exception as exc:  # noqa: BLE001 - Kafka prints the error and goes on
                return None, f"Error at {record.offset}, skipping. {exc}"
        key = None if record.key is None else bytes(record.key).decode("utf-8", "replace")
        value = None if record.value is None else bytes(record.value).decode("utf-8", "replace")
        return key, value

    def record_json(self, batch: RecordBatch, record: Record, arg: str) -> dict[str, Any]:
        return _record_json(batch, record, arg, metadata_decoder=self.metadata_decoder)

    # --- indexes ------------------------------------------------------------------

    def dump_index(self, path: Path, suffix: str) -> None:
        try:
            data = path.read_bytes()
        except OSError as exc:
            self.err.write(f"Cannot read {path}: {exc.strerror or exc}\n")
            self.failed = True
            return
        stem = path.name.split(".")[0]
        base = int(stem) if stem.isdigit() else 0
        if suffix == ".index":
            entries = list(struct.iter_unpack(">ii", data[: len(data) - len(data) % 8]))
            if not entries:
                self.emit(f"{path} is empty.")
                return
            for i, (rel, position) in enumerate(entries):
                if i > 0 and rel == 0:
                    return  # a zero-filled (preallocated) tail
                self.emit(f"offset: {base + rel} position: {position}")
        else:
            entries_t = list(struct.iter_unpack(">qi", data[: len(data) - len(data) % 12]))
            for i, (ts, rel) in enumerate(entries_t):
                if i > 0 and rel == 0:
                    return
                self.emit(f"timestamp: {ts} offset: {base + rel}")

    def finish(self) -> None:
        for name, pairs in self.non_consecutive.items():
            self.err.write(f"Non-consecutive offsets in {name}\n")
            for first, second in pairs:
                self.err.write(f"  {first} is followed by {second}\n")


def run_dump(
    files: list[str],
    *,
    print_data: bool = False,
    deep: bool = False,
    metadata_decoder: bool = False,
    skip_record_metadata: bool = False,
    as_json: bool = False,
    max_bytes: int = 2**31 - 1,
    out: IO[str] | None = None,
    err: IO[str] | None = None,
) -> int:
    """Dump ``files``; returns the exit status (1 if a file was unreadable or corrupt)."""
    dumper = _Dumper(
        print_data=print_data or metadata_decoder,
        deep=deep or print_data or metadata_decoder,
        metadata_decoder=metadata_decoder,
        skip_record_metadata=skip_record_metadata,
        as_json=as_json,
        max_bytes=max_bytes,
        out=out or sys.stdout,
        err=err or sys.stderr,
    )
    for arg in files:
        dumper.dump(arg)
    dumper.finish()
    return 1 if dumper.failed else 0


def _split_files(values: tuple[str, ...]) -> list[str]:
    # Kafka takes one comma-separated --files value; accept that and repeats.
    return [f for v in values for f in v.split(",") if f]


@click.command("dump-log", short_help="Print the batches and records of log segments and snapshots.")
@click.option("--files", "files", multiple=True, required=True, help="REQUIRED: The comma separated list of data and index log files to be dumped.")
@click.option("--print-data-log", is_flag=True, help="Print the messages content. Automatically set if a decoder option is given.")
@click.option("--deep-iteration", is_flag=True, help="Iterate records, not just batches. Automatically set by --print-data-log.")
@click.option("--cluster-metadata-decoder", is_flag=True, help="Parse log data as cluster metadata records.")
@click.option("--skip-record-metadata", is_flag=True, help="Skip metadata when printing records. This flag also skips control records.")
@click.option("--max-bytes", type=int, default=2**31 - 1, show_default=True, help="Limit the bytes read from each .log file.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per record instead of Kafka's text lines.")
@click.argument("extra_files", nargs=-1)
def dump_log_command(
    files: tuple[str, ...],
    print_data_log: bool,
    deep_iteration: bool,
    cluster_metadata_decoder: bool,
    skip_record_metadata: bool,
    max_bytes: int,
    as_json: bool,
    extra_files: tuple[str, ...],
) -> None:
    """Dump .log, .checkpoint, .index and .timeindex files as kafka-dump-log.sh does."""
    status = run_dump(
        _split_files(files + extra_files),
        print_data=print_data_log,
        deep=deep_iteration,
        metadata_decoder=cluster_metadata_decoder,
        skip_record_metadata=skip_record_metadata,
        as_json=as_json,
        max_bytes=max_bytes,
    )
    sys.exit(status)

