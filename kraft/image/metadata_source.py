"""Committed metadata from files, read-only: a metadata log directory (its
latest usable snapshot, then the segments after it) or one ``.checkpoint``
file. What ``kafka-metadata-shell.sh --directory`` / ``--snapshot`` read.

Nothing is written, renamed or deleted (a real Kafka directory, or one a
running node owns, can be read as it is): this is not
:class:`~kraft.records.log.MetadataLog`, which recovers a directory it opens.
Damage ends the readable prefix: a torn tail or a batch with a bad CRC stops
the segment there, with a warning, as Kafka's log recovery would cut it.

An offline directory has no high watermark: everything in it is read,
including a tail a leader may not have committed (Kafka's shell does the
same). Pass ``up_to`` to stop at an offset.
"""

from __future__ import annotations

import logging
import mmap
import os
from collections.abc import Generator, Iterator
from dataclasses import replace
from typing import Any, cast
from pathlib import Path

from crc32c import crc32c

from kraft.image.builder import ImageBuilder
from kraft.image.changes import LogBatch, LogItem, LogSnapshot, apply_item
from kraft.image.model import MetadataImage
from kraft.records.batch import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_MASK,
    CONTROL_MASK,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    MIN_BATCH_LENGTH,
    RecordBatch,
    iter_batches,
)
from kraft.records.collector import collector_paused
from kraft.records.control import parse_control_type_id
from kraft.records.errors import CorruptRecordError, CorruptSnapshotError, RecordsError
from kraft.records.segment import parse_segment_base
from kraft.records.snapshot import (
    BOOTSTRAP_SNAPSHOT_ID,
    SnapshotContents,
    list_snapshot_paths,
    parse_snapshot_path,
    validate_snapshot_bytes,
)
from kraft.records.state_files import CLUSTER_METADATA_DIR
from kraft.records.view import OffsetAndEpoch

log = logging.getLogger("kraft.image")

__all__ = ["MetadataSourceError", "partition_dir", "read_checkpoint", "read_segments", "scan_segments", "read_directory",
           "image_from_directory", "image_from_checkpoint", "image_from_items", "read_snapshot_file",
           "image_from_snapshot_file", "replay_segments", "replay_directory", "cut_batch"]


class MetadataSourceError(Exception):
    """The path holds no readable metadata (the message says what was expected)."""


def partition_dir(path: str | os.PathLike[str]) -> Path:
    """The ``__cluster_metadata-0`` directory for ``path``: that directory
    itself, or a ``metadata.log.dir`` that contains it."""
    p = Path(path)
    if not p.is_dir():
        raise MetadataSourceError(f"{p} is not a directory")
    inner = p / CLUSTER_METADATA_DIR
    if inner.is_dir():
        return inner
    if any(parse_segment_base(c.name) is not None or parse_snapshot_path(c) is not None for c in p.iterdir()):
        return p
    raise MetadataSourceError(f"{p} holds neither {CLUSTER_METADATA_DIR} nor metadata log segments or snapshots")


def _validated_snapshot(p: Path, *, corrupt: str) -> SnapshotContents:
    """The snapshot file ``p``, read whole and validated (header, CRCs,
    footer). A file that cannot be read, or is corrupt (``corrupt`` words it,
    with ``{path}`` and ``{error}``), is a :class:`MetadataSourceError`."""
    try:
        data = p.read_bytes()
    except OSError as e:
        raise MetadataSourceError(f"cannot read {p}: {e.strerror}") from None
    try:
        return validate_snapshot_bytes(data, str(p))
    except CorruptSnapshotError as e:
        raise MetadataSourceError(corrupt.format(path=p, error=e)) from None


def read_checkpoint(path: str | os.PathLike[str]) -> LogSnapshot:
    """A whole snapshot file (``<offset>-<epoch>.checkpoint`` or
    ``bootstrap.checkpoint``), validated: header, CRCs, footer."""
    p = Path(path)
    contents = _validated_snapshot(p, corrupt="{error}")
    parsed = parse_snapshot_path(p)
    sid = parsed.snapshot_id if parsed is not None else BOOTSTRAP_SNAPSHOT_ID
    values = tuple(bytes(r.value or b"") for r in contents.data_records())
    return LogSnapshot(sid, values, contents.header.last_contained_log_timestamp)


def read_snapshot_file(path: str | os.PathLike[str]) -> list[LogBatch]:
    """A ``.checkpoint`` file as Kafka's shell reads it (``SnapshotFileReader``):
    its metadata batches as committed batches at the file's own offsets, the
    control batches (header, KRaftVersion, Voters, footer) left out. The image
    they make is at the offset of the file's last metadata record, with that
    batch's epoch and time -- what ``cat /image/provenance`` shows in Kafka's
    shell. The file is validated first (header, CRCs, footer)."""
    p = Path(path)
    contents = _validated_snapshot(p, corrupt="{path} is not a metadata snapshot: {error}")
    return [_log_batch(b) for b in contents.batches if not b.is_control]


def image_from_snapshot_file(path: str | os.PathLike[str], builder: ImageBuilder | None = None) -> MetadataImage:
    """The image Kafka's ``kafka-metadata-shell.sh --snapshot`` shows for a file."""
    return image_from_items(iter(read_snapshot_file(path)), builder)


def _segments(pdir: Path) -> list[tuple[int, Path]]:
    out = []
    for child in pdir.iterdir():
        base = parse_segment_base(child.name)
        if base is not None and child.name.endswith(".log"):
            out.append((base, child))
    return sorted(out)


def _mapped_segments(pdir: Path) -> Generator[tuple[Path, mmap.mmap], None, None]:
    """Each non-empty segment of ``pdir``, in offset order, mapped read-only
    for the time of one step; a segment that cannot be opened is warned
    about and ends the walk (what lies beyond it cannot be said to follow).
    Callers release every view of a mapping before asking for the next."""
    for _, path in _segments(pdir):
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as e:
            log.warning("cannot read %s: %s; stopping there", path, e.strerror)
            return
        try:
            size = os.fstat(fd).st_size
            if size == 0:
                continue
            with mmap.mmap(fd, size, access=mmap.ACCESS_READ) as mm:
                yield path, mm
        finally:
            os.close(fd)


def scan_segments(pdir: Path) -> Iterator[tuple[int, int, int]]:
    """``(base offset, last offset, append time)`` of every readable batch,
    headers and CRCs only, up to the first damage (as :func:`read_segments`)."""
    expected: int | None = None
    segments = _mapped_segments(pdir)
    try:
        for path, mm in segments:
            found: list[tuple[int, int, int]] = []
            damaged = False
            batch = None
            batches = _batches(mm, path)
            try:
                for batch in batches:
                    if batch is None or (expected is not None and batch.base_offset != expected):
                        damaged = True
                        break
                    expected = batch.base_offset + batch.last_offset_delta + 1
                    found.append((batch.base_offset, expected - 1, batch.max_timestamp))
            finally:
                batches.close()  # releases its view of the mapping before it closes
                del batch
            yield from found
            if damaged:
                return
    finally:
        segments.close()


def read_segments(pdir: Path, start_offset: int = 0, up_to: int | None = None) -> Iterator[LogBatch]:
    """Every batch holding an offset in ``[start_offset, up_to]``, in order,
    up to the first damage."""
    expected: int | None = None
    segments = _mapped_segments(pdir)
    try:
        for path, mm in segments:
            for batch in _batches(mm, path):
                if batch is None:
                    return
                last = batch.base_offset + batch.last_offset_delta
                if expected is not None and batch.base_offset != expected:
                    log.warning("%s: batch at offset %d does not follow offset %d; stopping there",
                                path, batch.base_offset, expected - 1)
                    return
                expected = last + 1
                if last < start_offset:
                    continue
                if up_to is not None and batch.base_offset > up_to:
                    return
                yield _log_batch(batch)
    finally:
        segments.close()


def replay_segments(builder: ImageBuilder, pdir: Path, start_offset: int = 0, up_to: int | None = None) -> None:
    """Apply every batch :func:`read_segments` yields to ``builder`` (cut
    at ``up_to`` as :func:`cut_batch` cuts), with the same checks, warnings
    and stops -- the path that opens a directory. A plain data batch goes
    from its records section straight into the image
    (:meth:`ImageBuilder.apply_record_section`); a control or compressed
    batch, or records that do not frame, become a :class:`LogBatch` as in
    :func:`read_segments` (which raises what it raises there)."""
    expected: int | None = None
    segments = _mapped_segments(pdir)
    try:
        for path, mm in segments:
            view = memoryview(mm)
            try:
                expected = _replay_segment(builder, mm, view, path, expected, start_offset, up_to)
            finally:
                view.release()
            if expected is None:
                return
    finally:
        segments.close()


def _replay_segment(builder: ImageBuilder, mm: mmap.mmap, view: memoryview, path: Path, expected: int | None,
                    start_offset: int, up_to: int | None) -> int | None:
    """One segment of :func:`replay_segments`: the offset the next segment
    must start at, or ``None`` where reading stops. The header walk, checks
    and warnings are :func:`_batches`' and :func:`read_segments`', inlined:
    this loop runs once per batch of the log."""
    pos = 0
    end = len(mm)
    unpack = HEADER.unpack_from
    apply_section = builder.apply_record_section
    while pos < end:
        if end - pos < LOG_OVERHEAD + 5:
            log.warning("%s: %d stray bytes at the end; ignored", path, end - pos)
            return expected
        fields = unpack(mm, pos) if end - pos >= HEADER_SIZE else None
        if fields is None or fields[1] < MIN_BATCH_LENGTH or pos + fields[1] + LOG_OVERHEAD > end \
                or fields[3] != MAGIC_V2:
            try:  # the precise error, worded as _batches words it
                RecordBatch.parse(view, pos)
                problem = "a malformed batch header"  # pragma: no cover - parse() raises for each case above
            except RecordsError as e:
                problem = str(e)
            log.warning("%s: %s at byte %d; the readable log ends there", path, problem, pos)
            return None
        base = fields[0]
        batch_end = pos + fields[1] + LOG_OVERHEAD
        if crc32c(view[pos + ATTRIBUTES_OFFSET:batch_end]) != fields[4]:
            log.warning("%s: CRC mismatch in the batch at byte %d (offset %d); the readable log ends there",
                        path, pos, base)
            return None
        last = base + fields[6]
        if expected is not None and base != expected:
            log.warning("%s: batch at offset %d does not follow offset %d; stopping there", path, base, expected - 1)
            return None
        expected = last + 1
        if last < start_offset:
            pos = batch_end
            continue
        if up_to is not None and base > up_to:
            return None
        limit = None if up_to is None or last <= up_to else up_to - base + 1
        if fields[5] & (CONTROL_MASK | COMPRESSION_MASK) or not apply_section(
                mm[pos + HEADER_SIZE:batch_end], fields[12], base, fields[2], fields[8], limit):
            # A copy of the batch: an error raised here must not hold a
            # view of the mapping (it could not close), so its position is
            # put back to the file's.
            try:
                item = _log_batch(RecordBatch(fields, mm[pos:batch_end], 0))
            except CorruptRecordError as e:
                raise e.located(position=pos) from None
            apply_item(builder, item if limit is None else cut_batch(item, up_to))
        pos = batch_end
    return expected


def cut_batch(item: LogBatch, up_to: int | None) -> LogBatch:
    """``item`` without its records after ``up_to`` (it straddles it)."""
    if up_to is None or item.last_offset <= up_to:
        return item
    keep = up_to - item.base_offset + 1
    types = item.control_types[:keep] if item.control_types is not None else None
    return replace(item, last_offset=up_to, values=item.values[:keep], control_types=types)


def _batches(buf: mmap.mmap, path: Path) -> Generator[Any, None, None]:
    pos = 0
    end = len(buf)
    view = memoryview(buf)
    # One header walk over the whole segment; a generator, closed below so it
    # lets go of the view before the view is released.
    batches = cast(Generator[Any, None, None], iter_batches(view, 0, end))
    try:
        while pos < end:
            if end - pos < LOG_OVERHEAD + 5:
                log.warning("%s: %d stray bytes at the end; ignored", path, end - pos)
                return
            try:
                batch = next(batches)
            except RecordsError as e:
                log.warning("%s: %s at byte %d; the readable log ends there", path, e, pos)
                yield None
                return
            if not batch.is_valid():
                log.warning("%s: CRC mismatch in the batch at byte %d (offset %d); the readable log ends there",
                            path, pos, batch.base_offset)
                yield None
                return
            yield batch
            pos += batch.size_in_bytes
    finally:
        batches.close()
        view.release()


def _log_batch(batch: object) -> LogBatch:
    b = batch  # a RecordBatch; copied out of the mapping before it closes
    records = b.records()  # type: ignore[attr-defined]
    control_types = None
    if b.is_control:  # type: ignore[attr-defined]
        types = []
        for r in records:
            try:
                types.append(parse_control_type_id(r.key))
            except RecordsError:
                types.append(-1)
        control_types = tuple(types)
    return LogBatch(
        base_offset=b.base_offset,  # type: ignore[attr-defined]
        last_offset=b.base_offset + b.last_offset_delta,  # type: ignore[attr-defined]
        epoch=b.partition_leader_epoch,  # type: ignore[attr-defined]
        append_time_ms=b.max_timestamp,  # type: ignore[attr-defined]
        is_control=b.is_control,  # type: ignore[attr-defined]
        # Uncompressed or not, records() decodes from a bytes copy of the
        # batch, so the values are bytes already (no copy per record).
        values=tuple([b"" if r[3] is None else r[3] if type(r[3]) is bytes else bytes(r[3]) for r in records]),
        control_types=control_types,
    )


def read_directory(path: str | os.PathLike[str], *, up_to: int | None = None,
                   use_snapshot: bool = True) -> Iterator[LogItem]:
    """The directory's committed history as log items: the latest snapshot
    at or before ``up_to + 1`` that the segments continue from (if any), then
    the batches after it. Without a usable snapshot, the segments from the
    log start (which must then be 0 for a complete image)."""
    pdir = partition_dir(path)
    for item in _directory_history(pdir, up_to, use_snapshot):
        if isinstance(item, LogSnapshot):
            yield item
        else:
            yield from read_segments(pdir, item, up_to)


def replay_directory(path: str | os.PathLike[str], builder: ImageBuilder, *, up_to: int | None = None) -> MetadataImage:
    """:func:`read_directory` applied to ``builder``, the segments read by
    :func:`replay_segments`: the image at the directory's end or at ``up_to``
    (a batch that straddles it applied up to it)."""
    pdir = partition_dir(path)
    with collector_paused(freeze=True):
        for item in _directory_history(pdir, up_to, True):
            if isinstance(item, LogSnapshot):
                apply_item(builder, item)
            else:
                replay_segments(builder, pdir, item, up_to)
    return builder.image


def _directory_history(pdir: Path, up_to: int | None, use_snapshot: bool) -> Iterator[LogSnapshot | int]:
    """The snapshot to start from (if any), then the offset to read the
    segments from (if there are segments)."""
    segments = _segments(pdir)
    log_start = segments[0][0] if segments else None
    limit = None if up_to is None else up_to + 1
    snapshots = [sp for sp in list_snapshot_paths(pdir) if not sp.partial and not sp.deleted
                 and (limit is None or sp.snapshot_id.offset <= limit)
                 # The format's bootstrap snapshot is not committed state
                 # (Kafka's MetadataLoader.handleLoadBootstrap ignores it; the
                 # controller writes its records into the log): the image
                 # of a log is the log's. A directory with no log yet shows
                 # what the format wrote.
                 and not (segments and sp.snapshot_id == BOOTSTRAP_SNAPSHOT_ID)]
    # The latest snapshot in range; without snapshots (or when asked not to
    # use one and the log starts at 0) the segments alone.
    chosen = snapshots[-1] if snapshots and (use_snapshot or not log_start == 0) else None
    start = 0
    if chosen is not None:
        snap = read_checkpoint(chosen.path)
        yield snap
        start = snap.snapshot_id.offset
        if log_start is not None and start < log_start:
            log.warning("snapshot %s ends at %d but the log starts at %d: offsets %d..%d are missing",
                        chosen.path.name, start, log_start, start, log_start - 1)
    elif log_start is not None and log_start > 0:
        log.warning("%s starts at offset %d and has no snapshot: the image misses everything before it",
                    pdir, log_start)
    if segments:
        yield start


def image_from_items(items: Iterator[LogItem] | list[LogItem], builder: ImageBuilder | None = None) -> MetadataImage:
    builder = builder or ImageBuilder()
    with collector_paused():
        for item in items:
            apply_item(builder, item)
    return builder.image


def image_from_directory(path: str | os.PathLike[str], *, up_to: int | None = None,
                         builder: ImageBuilder | None = None) -> MetadataImage:
    """The image of a metadata log directory, at its end or at ``up_to``."""
    return replay_directory(path, builder or ImageBuilder(), up_to=up_to)


def image_from_checkpoint(path: str | os.PathLike[str], builder: ImageBuilder | None = None) -> MetadataImage:
    return image_from_items([read_checkpoint(path)], builder)


def snapshot_id_of(path: str | os.PathLike[str]) -> OffsetAndEpoch | None:
    parsed = parse_snapshot_path(path)
    return None if parsed is None else parsed.snapshot_id
