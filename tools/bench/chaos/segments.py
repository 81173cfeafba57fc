"""The nodes' files read without kraft: the chaos checker's own reader.

A bug in kraft's decoder or in its recovery must not hide itself, so this
module imports nothing of kraft (the import-linter contract
``chaos-reader-independent`` in pyproject.toml holds it to that). It walks every segment of ``__cluster_metadata-0`` and
every snapshot with kafka-python's v2 record-batch reader
(``kafka.record.default_records.DefaultRecordBatch``), each batch's CRC
checked, and reports every defect it meets instead of repairing it, as
kraft's recovery would (a torn tail is truncated there, a corrupt batch
ends the log there, a snapshot that does not read is skipped for an older
one):

* a torn tail (a batch cut short at the end of the last segment);
* a batch whose CRC does not match its bytes (a bit flip);
* a batch cut short, or bytes that are no batch, before a segment's end;
* offsets that do not follow on (a missing segment, a segment whose name
  is not its first offset), a log that starts after the latest snapshot;
* a snapshot with a bad CRC, or without its header or footer;
* a LeaderChange record that names two leaders for one epoch.

The batch layout is Kafka's ``DefaultRecordBatch``: base offset (int64),
length (int32), partition leader epoch (int32), magic (int8), CRC-32C
(uint32) of everything after it. LeaderChange is control type 2 and its
value is ``LeaderChangeMessage`` prefixed with its version
(``ControlRecordUtils``), so the leader id is the int32 after an int16.

A metadata record's value is ``MetadataRecordSerde``'s: frame version, api
key and record version as unsigned varints, then the record. Of the
records only ``ClientQuotaRecord`` (api key 14, flexible from version 0)
is read, for the chaos client's load (:func:`client_quota`).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["CLIENT_QUOTA_RECORD", "PARTITION_DIR", "client_quota", "NodeFiles", "SegmentBatch", "read_batches", "read_node_files", "read_quorum_state",
           "segment_crcs"]

#: The metadata partition's directory under ``metadata.log.dir`` (Kafka's ``__cluster_metadata-0``).
PARTITION_DIR = "__cluster_metadata-0"
#: ``ControlRecordType``: LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER.
LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER = 2, 3, 4
#: ``MetadataRecordType.CLIENT_QUOTA_RECORD``.
CLIENT_QUOTA_RECORD = 14
#: Base offset and length: what precedes a batch's ``length`` bytes.
LOG_OVERHEAD = 12
#: The v2 batch header (``DefaultRecordBatch.RECORD_BATCH_OVERHEAD``).
BATCH_OVERHEAD = 61


@dataclass(frozen=True)
class SegmentBatch:
    """One whole batch whose CRC matched: where it is and what it holds."""

    base_offset: int
    last_offset: int
    epoch: int
    crc: int
    is_control: bool
    #: (offset, control type or -1, value) of each record.
    records: tuple[tuple[int, int, bytes], ...]


@dataclass
class NodeFiles:
    """A node's metadata log and latest snapshot, as this reader sees them."""

    #: offset -> value of every data record in the segments.
    records: dict[int, bytes] = field(default_factory=dict)
    #: epoch -> the leaders LeaderChange records name for it (more than one is a defect).
    leaders: dict[int, set[int]] = field(default_factory=dict)
    #: base offset -> (last offset, CRC) of every whole batch.
    batches: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: The latest snapshot's end offset (0 without one) and its data records.
    snapshot_offset: int = 0
    snapshot_records: list[bytes] = field(default_factory=list)
    #: The latest snapshot's file and its whole batches: (base offset, last offset, CRC).
    snapshot_path: Path | None = None
    snapshot_batches: set[tuple[int, int, int]] = field(default_factory=set)
    #: One past the last offset of the segments (the snapshot's end offset when they are empty).
    end_offset: int = 0
    #: Every defect found, one line each, naming the file and the position.
    problems: list[str] = field(default_factory=list)
    #: A torn tail of the last segment (normal while a node writes, a defect once it recovered).
    torn_tail: str | None = None
    #: ``quorum-state``: (leader epoch, leader id), None when absent or unreadable.
    quorum_state: tuple[int, int] | None = None


def _control_type(key: bytes | None) -> int:
    # A control record's key: version (int16), type (int16).
    if key is None or len(key) < 4:
        return -1
    return int(struct.unpack_from(">hh", key)[1])


def _decode(view: memoryview, where: str, with_records: bool) -> SegmentBatch | str:
    """One batch from its exact bytes, or what is wrong with it (its records
    decoded only ``with_records``: a sample while the run goes on wants the
    CRCs alone)."""
    from kafka.record.default_records import DefaultRecordBatch

    if len(view) < BATCH_OVERHEAD:
        return f"{where}: {len(view)} bytes are too few for a batch header"
    magic = view[16]
    if magic != 2:
        return f"{where}: magic {magic} is not 2 (bytes that are no v2 batch)"
    batch = DefaultRecordBatch(view)
    if not batch.validate_crc():
        return f"{where}: CRC mismatch in the batch at offset {batch.base_offset} (stored {batch.crc:#010x})"
    control = batch.is_control_batch
    if not with_records:
        return SegmentBatch(batch.base_offset, batch.last_offset, batch.leader_epoch, batch.crc, control, ())
    try:
        records = tuple((r.offset, _control_type(r.key) if control else -1, bytes(r.value or b""))
                        for r in batch)
    except Exception as e:  # kafka-python's CorruptRecordError and struct errors alike
        return f"{where}: the records of the batch at offset {batch.base_offset} do not decode ({e})"
    return SegmentBatch(batch.base_offset, batch.last_offset, batch.leader_epoch, batch.crc, control, records)


def read_batches(data: bytes, name: str, last: bool,
                 with_records: bool = True) -> tuple[list[SegmentBatch], list[str], str | None]:
    """The whole batches of one file's bytes, the defects, and a torn tail
    (``last``: the file is the one being appended to, where a tail cut
    short is a torn write; anywhere else it is a truncated batch)."""
    view = memoryview(data)
    batches: list[SegmentBatch] = []
    pos = 0
    while pos < len(data):
        where = f"{name} position {pos}"
        if len(data) - pos < LOG_OVERHEAD:
            tail = f"{where}: {len(data) - pos} bytes, less than a batch's length field"
            return batches, [] if last else [f"truncated batch: {tail}"], tail if last else None
        length = struct.unpack_from(">i", data, pos + 8)[0]
        end = pos + LOG_OVERHEAD + length
        if length <= 0 or end > len(data):
            tail = f"{where}: a batch of {length} bytes, {len(data) - pos - LOG_OVERHEAD} there"
            if last and length > 0:
                return batches, [], tail
            return batches, [f"truncated batch: {tail}"], None
        got = _decode(view[pos:end], where, with_records)
        if isinstance(got, str):
            return batches, [got], None
        batches.append(got)
        pos = end
    return batches, [], None


def _segment_files(part: Path) -> list[tuple[int, Path]]:
    out = []
    for path in part.glob("*.log"):
        if path.stem.isdigit():
            out.append((int(path.stem), path))
    return sorted(out)


def _snapshot_files(part: Path) -> list[tuple[int, Path]]:
    out = []
    for path in part.glob("*.checkpoint"):
        offset, _, epoch = path.stem.partition("-")
        if offset.isdigit() and epoch.isdigit():
            out.append((int(offset), path))
    return sorted(out)


def _read_snapshot(files: NodeFiles, offset: int, path: Path) -> None:
    batches, problems, torn = read_batches(path.read_bytes(), f"snapshot {path.name}", last=False)
    files.problems += problems
    types = [t for b in batches if b.is_control for _, t, _ in b.records]
    if not problems and (not types or types[0] != SNAPSHOT_HEADER or types[-1] != SNAPSHOT_FOOTER):
        files.problems.append(f"snapshot {path.name}: no SnapshotHeader first and SnapshotFooter last")
    files.snapshot_offset, files.snapshot_path = offset, path
    files.snapshot_batches = {(b.base_offset, b.last_offset, b.crc) for b in batches}
    files.snapshot_records = [v for b in batches if not b.is_control for _, _, v in b.records]


def _add_batch(files: NodeFiles, batch: SegmentBatch, name: str) -> None:
    files.batches[batch.base_offset] = (batch.last_offset, batch.crc)
    for offset, control_type, value in batch.records:
        if not batch.is_control:
            files.records[offset] = value
        elif control_type == LEADER_CHANGE and len(value) >= 6:
            leader = struct.unpack_from(">hi", value)[1]
            named = files.leaders.setdefault(batch.epoch, set())
            named.add(leader)
            if len(named) > 1:
                files.problems.append(f"{name}: LeaderChange records name leaders {sorted(named)} "
                                      f"for epoch {batch.epoch}")


def _read_segments(files: NodeFiles, part: Path) -> None:
    segments = _segment_files(part)
    expected: int | None = None
    end = files.snapshot_offset
    if segments and files.snapshot_offset and segments[0][0] > files.snapshot_offset:
        files.problems.append(f"the log starts at offset {segments[0][0]}, after the latest snapshot's end "
                              f"offset {files.snapshot_offset}: offsets {files.snapshot_offset}.."
                              f"{segments[0][0] - 1} are nowhere")
    for i, (base, path) in enumerate(segments):
        if expected is not None and base != expected:
            what = "a missing segment" if base > expected else "overlapping segments"
            files.problems.append(f"segment {path.name} starts at offset {base}, the segment before it ends at "
                                  f"offset {expected - 1}: {what}")
        batches, problems, torn = read_batches(path.read_bytes(), f"segment {path.name}", last=i == len(segments) - 1)
        files.problems += problems
        files.torn_tail = torn
        next_offset = base
        for batch in batches:
            if batch.base_offset != next_offset:
                files.problems.append(f"segment {path.name}: the batch at offset {batch.base_offset} follows "
                                      f"offset {next_offset - 1}")
            _add_batch(files, batch, f"segment {path.name}")
            next_offset = batch.last_offset + 1
        # Past a defect the segment's end is unknown: the next one's start is not judged by it.
        expected = None if problems else next_offset
        end = next_offset
    files.end_offset = end


def _uvarint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _compact_string(data: bytes, pos: int) -> tuple[str | None, int]:
    length, pos = _uvarint(data, pos)  # length + 1; 0 is null
    if length == 0:
        return None, pos
    return data[pos:pos + length - 1].decode(), pos + length - 1


def _skip_tags(data: bytes, pos: int) -> int:
    count, pos = _uvarint(data, pos)
    for _ in range(count):
        _, pos = _uvarint(data, pos)
        size, pos = _uvarint(data, pos)
        pos += size
    return pos


def client_quota(value: bytes) -> tuple[dict[str, str | None], str, bool] | None:
    """(entity type -> name, key, remove) of a ClientQuotaRecord's value;
    None for any other record, or bytes that do not read as one."""
    try:
        _, pos = _uvarint(value, 0)
        api_key, pos = _uvarint(value, pos)
        if api_key != CLIENT_QUOTA_RECORD:
            return None
        _, pos = _uvarint(value, pos)
        count, pos = _uvarint(value, pos)
        entity: dict[str, str | None] = {}
        for _ in range(count - 1):
            entity_type, pos = _compact_string(value, pos)
            entity[entity_type or ""], pos = _compact_string(value, pos)
            pos = _skip_tags(value, pos)
        key, pos = _compact_string(value, pos)
        remove = value[pos + 8] != 0  # after the float64 value
        return entity, key or "", remove
    except (IndexError, UnicodeDecodeError):
        return None


def read_quorum_state(metadata_log_dir: Path) -> tuple[int, int] | None:
    """(leaderEpoch, leaderId) of the node's ``quorum-state`` (Kafka's ``QuorumStateData`` JSON)."""
    try:
        data = json.loads((metadata_log_dir / PARTITION_DIR / "quorum-state").read_text())
        return int(data["leaderEpoch"]), int(data["leaderId"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def read_node_files(metadata_log_dir: Path) -> NodeFiles:
    """Everything this reader makes of one node's ``metadata.log.dir``."""
    part = metadata_log_dir / PARTITION_DIR
    files = NodeFiles(quorum_state=read_quorum_state(metadata_log_dir))
    try:
        snapshots = _snapshot_files(part)
        if snapshots:
            _read_snapshot(files, *snapshots[-1])
        _read_segments(files, part)
    except OSError as e:
        files.problems.append(f"{part}: {e.strerror or e}")
    return files


def segment_crcs(metadata_log_dir: Path) -> dict[int, tuple[int, int]]:
    """base offset -> (last offset, CRC) of every whole batch whose CRC
    matches, read while the node keeps writing (a tail being written, or a
    file deleted under us, just ends the read)."""
    out: dict[int, tuple[int, int]] = {}
    try:
        segments = _segment_files(metadata_log_dir / PARTITION_DIR)
    except OSError:
        return out
    for _, path in segments:
        try:
            data = path.read_bytes()
        except OSError:
            continue
        batches, _, _ = read_batches(data, path.name, last=True, with_records=False)
        out.update((b.base_offset, (b.last_offset, b.crc)) for b in batches)
    return out
