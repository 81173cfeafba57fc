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

import gc
import logging
import mmap
import os
from collections.abc import Generator, Iterator
from typing import Any, cast
from pathlib import Path

from kraft.image.builder import ImageBuilder
from kraft.image.changes import LogBatch, LogItem, LogSnapshot, apply_item
from kraft.image.model import MetadataImage
from kraft.records.batch import LOG_OVERHEAD, iter_batches
from kraft.records.control import parse_control_type_id
from kraft.records.errors import CorruptSnapshotError, RecordsError
from kraft.records.segment import parse_segment_base
from kraft.records.snapshot import BOOTSTRAP_SNAPSHOT_ID, list_snapshot_paths, parse_snapshot_path, validate_snapshot_bytes
from kraft.records.state_files import CLUSTER_METADATA_DIR
from kraft.records.view import OffsetAndEpoch

log = logging.getLogger("kraft.image")

__all__ = ["MetadataSourceError", "partition_dir", "read_checkpoint", "read_segments", "scan_segments", "read_directory",
           "image_from_directory", "image_from_checkpoint", "image_from_items", "read_snapshot_file",
           "image_from_snapshot_file"]


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


def read_checkpoint(path: str | os.PathLike[str]) -> LogSnapshot:
    """A whole snapshot file (``<offset>-<epoch>.checkpoint`` or
    ``bootstrap.checkpoint``), validated: header, CRCs, footer."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise MetadataSourceError(f"cannot read {p}: {e.strerror}") from None
    try:
        contents = validate_snapshot_bytes(data, str(p))
    except CorruptSnapshotError as e:
        raise MetadataSourceError(str(e)) from None
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
    try:
        data = p.read_bytes()
    except OSError as e:
        raise MetadataSourceError(f"cannot read {p}: {e.strerror}") from None
    try:
        contents = validate_snapshot_bytes(data, str(p))
    except CorruptSnapshotError as e:
        raise MetadataSourceError(f"{p} is not a metadata snapshot: {e}") from None
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


def scan_segments(pdir: Path) -> Iterator[tuple[int, int, int]]:
    """``(base offset, last offset, append time)`` of every readable batch,
    headers and CRCs only, up to the first damage (as :func:`read_segments`)."""
    expected: int | None = None
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
            os.close(fd)


def read_segments(pdir: Path, start_offset: int = 0, up_to: int | None = None) -> Iterator[LogBatch]:
    """Every batch holding an offset in ``[start_offset, up_to]``, in order,
    up to the first damage."""
    expected: int | None = None
    for base, path in _segments(pdir):
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
                damaged = False
                for batch in _batches(mm, path):
                    if batch is None:
                        damaged = True
                        break
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
                if damaged:
                    return
        finally:
            os.close(fd)


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
    segments = _segments(pdir)
    log_start = segments[0][0] if segments else None
    limit = None if up_to is None else up_to + 1
    snapshots = [sp for sp in list_snapshot_paths(pdir) if not sp.partial and not sp.deleted
                 and (limit is None or sp.snapshot_id.offset <= limit)]
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
        yield from read_segments(pdir, start, up_to)


def image_from_items(items: Iterator[LogItem] | list[LogItem], builder: ImageBuilder | None = None) -> MetadataImage:
    builder = builder or ImageBuilder()
    # Replaying a log allocates an object or more per record and frees few,
    # so the cyclic collector would walk the growing image again and again
    # (about a tenth of the load) and find nothing: the image holds no
    # reference cycles. Paused for the load, as it was if it was off.
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        for item in items:
            apply_item(builder, item)
    finally:
        if paused:
            gc.enable()
    return builder.image


def image_from_directory(path: str | os.PathLike[str], *, up_to: int | None = None,
                         builder: ImageBuilder | None = None) -> MetadataImage:
    """The image of a metadata log directory, at its end or at ``up_to``."""
    return image_from_items(read_directory(path, up_to=up_to), builder)


def image_from_checkpoint(path: str | os.PathLike[str], builder: ImageBuilder | None = None) -> MetadataImage:
    return image_from_items([read_checkpoint(path)], builder)


def snapshot_id_of(path: str | os.PathLike[str]) -> OffsetAndEpoch | None:
    parsed = parse_snapshot_path(path)
    return None if parsed is None else parsed.snapshot_id
