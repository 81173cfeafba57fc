"""Planning for the ``kraft`` Spark data source: which files, and how they are
cut into input partitions. Pure Python (no pyspark), so it runs and is tested
anywhere.

Discovery takes paths (files, directories, globs). A directory is walked:
``.log`` segments and ``<offset>-<epoch>.checkpoint`` snapshots are taken from
``__cluster_metadata-*`` directories (and from the directory given itself),
``bootstrap.checkpoint`` from anywhere; ``.checkpoint.part`` /
``.checkpoint.deleted`` leftovers and other topics' logs are not metadata. Each
file is tagged with the cluster id and node id of the ``meta.properties`` of
its log directory, when there is one.

Splitting: a file larger than the target split size is cut at batch starts,
taken from its ``.index`` (each entry maps a batch's last offset to the
position where the batch starts) and checked against the bytes there; when the
index is absent, stale or does not match, a header scan hops over the batches
instead (and over the part of the file past the index's last entry). Splits
are then packed into partitions the way Spark packs file splits
(``maxPartitionBytes``, plus an open cost per file), in input order.

Problems found while planning (a path that does not exist, an unreadable file,
a bad ``meta.properties``, a file of another cluster than the expected one)
are carried on the file as :class:`FileProblem` and become error rows when the
file is read: the job always finishes.
"""

from __future__ import annotations

import bisect
import glob
import math
import mmap
import os
import re
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kraft.records.batch import ATTRIBUTES_OFFSET, LOG_OVERHEAD, MAGIC_OFFSET, MAGIC_V2, MIN_BATCH_LENGTH
from kraft.records.segment import parse_segment_base
from kraft.records.snapshot import BOOTSTRAP_FILE_NAME, parse_snapshot_path
from kraft.records.snapshot import SUFFIX as SNAPSHOT_SUFFIX
from kraft.records.state_files import META_PROPERTIES_FILE, parse_java_properties

SEGMENT = "segment"
SNAPSHOT = "snapshot"
BOOTSTRAP = "bootstrap"

# File-level error kinds (record-level ones live in kraft.tools.record_format.describe_record and
# kraft.tools.spark.rows).
UNREADABLE_FILE = "unreadable_file"
UNSUPPORTED_FILE = "unsupported_file"
META_PROPERTIES = "meta_properties"
CLUSTER_MISMATCH = "cluster_mismatch"

#: Smaller than Spark's 128m for Parquet: decoding a metadata log in Python
#: runs at a few MB/s per core, so 16 MiB is already seconds of work per
#: task, and many short tasks keep every core busy to the end of a job.
DEFAULT_MAX_PARTITION_BYTES = 16 * 1024 * 1024
#: The default under a pushed-down ``record_type`` filter: the scan then
#: hops over most batches undecoded (one walk over the batch lengths, a
#: search for the wanted frame prefixes), so a 16 MiB task was mostly a
#: task's fixed cost in Spark (about 70 ms of JVM and Python worker set-up,
#: measured on 2 cores with PySpark 4.3). On 1 GB of the controller mix a
#: filter on one type took 4.1 s with 16 MiB tasks, 2.4 s with 64 MiB and
#: 2.1 s with 128 MiB; 64 MiB keeps several tasks per core on a large input,
#: and the batch headers of an unselective filter in memory modest.
FILTERED_MAX_PARTITION_BYTES = 64 * 1024 * 1024
#: What opening a file is worth in bytes when packing small files together
#: (Spark's ``spark.sql.files.openCostInBytes``, 4 MiB for Parquet). Here a
#: file is opened and read whole in Python, which costs less than decoding
#: 256 KiB of it; with Spark's 4 MiB a directory of small snapshots became one
#: task per file, and task start-up dominated small inputs.
DEFAULT_OPEN_COST_BYTES = 256 * 1024
#: Never cut finer than this: a split costs a task.
MIN_SPLIT_BYTES = 1024 * 1024

_PREFIX = struct.Struct(">qi")
_INDEX_ENTRY = struct.Struct(">ii")
_LAST_OFFSET_DELTA = struct.Struct(">i")
_LAST_OFFSET_DELTA_AT = ATTRIBUTES_OFFSET + 2
_GLOB_CHARS = re.compile(r"[*?\[]")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


class PlanError(ValueError):
    """A data source option that cannot be used."""


def parse_size(text: str | int) -> int:
    """``"64m"``, ``"512k"``, ``"1g"``, ``"1048576"`` -> bytes (Spark's byte-string style)."""
    if isinstance(text, int):
        return text
    m = _SIZE.match(text)
    if m is None:
        raise PlanError(f"not a byte size: {text!r} (examples: 1048576, 512k, 64m, 1g)")
    return int(float(m.group(1)) * 1024 ** " kmgt".index(m.group(2).lower() or " "))


@dataclass(frozen=True, slots=True)
class FileProblem:
    """Something wrong with a whole file: becomes one error row."""

    kind: str
    message: str
    #: when True the file's records are still read (a bad meta.properties
    #: costs the cluster id, not the records)
    readable: bool = False


@dataclass(frozen=True, slots=True)
class SourceFile:
    path: str
    kind: str
    size: int
    cluster_id: str | None = None
    node_id: int | None = None
    snapshot_end_offset: int | None = None
    snapshot_epoch: int | None = None
    #: base offset from a segment's name (checks index entries); None otherwise
    base_offset: int | None = None
    problems: tuple[FileProblem, ...] = ()

    @property
    def readable(self) -> bool:
        return all(p.readable for p in self.problems)


@dataclass(frozen=True, slots=True)
class FileSplit:
    """Bytes ``[start, end)`` of one file; ``first`` carries the file's
    problems, ``last`` reports what is left at the end (a torn tail)."""

    file: SourceFile
    start: int
    end: int
    first: bool = True
    last: bool = True

    @property
    def length(self) -> int:
        return self.end - self.start


# --- discovery -----------------------------------------------------------------------


def _is_metadata_dir(name: str) -> bool:
    return name.startswith("__cluster_metadata-")


def _classify(path: Path) -> tuple[str, int | None, int | None] | None:
    """``(kind, snapshot end offset, snapshot epoch)`` of a metadata file, else None."""
    name = path.name
    if name == BOOTSTRAP_FILE_NAME:
        return BOOTSTRAP, 0, 0
    if name.endswith(".log"):
        return SEGMENT, None, None
    sp = parse_snapshot_path(path)
    if sp is not None and not sp.partial and not sp.deleted:
        return SNAPSHOT, sp.snapshot_id.offset, sp.snapshot_id.epoch
    if name.endswith(SNAPSHOT_SUFFIX) and not name.endswith("-checkpoint"):
        return SNAPSHOT, None, None  # a snapshot under a name that is not Kafka's
    return None


@dataclass
class _MetaCache:
    """meta.properties per directory, read once."""

    found: dict[Path, tuple[str | None, int | None, FileProblem | None] | None] = field(default_factory=dict)

    def lookup(self, directory: Path) -> tuple[str | None, int | None, FileProblem | None]:
        # The file's own directory (bootstrap.checkpoint sits in the log dir),
        # then its parent (segments sit in <log dir>/__cluster_metadata-0).
        for d in (directory, directory.parent):
            hit = self._read(d)
            if hit is not None:
                return hit
        return None, None, None

    def _read(self, d: Path) -> tuple[str | None, int | None, FileProblem | None] | None:
        if d in self.found:
            return self.found[d]
        path = d / META_PROPERTIES_FILE
        result: tuple[str | None, int | None, FileProblem | None] | None
        try:
            text = path.read_text(encoding="latin-1")  # Properties.load reads ISO-8859-1
        except FileNotFoundError:
            result = None
        except OSError as exc:
            result = None, None, FileProblem(META_PROPERTIES, f"cannot read {path}: {exc.strerror or exc}", readable=True)
        else:
            props = parse_java_properties(text)
            node_text = props.get("node.id", props.get("broker.id"))
            try:
                node_id = None if node_text is None else int(node_text)
            except ValueError:
                node_id = None
            cluster_id = props.get("cluster.id")
            problem = None
            if cluster_id is None:
                problem = FileProblem(META_PROPERTIES, f"{path} has no cluster.id", readable=True)
            elif node_text is not None and node_id is None:
                problem = FileProblem(META_PROPERTIES, f"{path} has an invalid node.id {node_text!r}", readable=True)
            result = cluster_id, node_id, problem
        self.found[d] = result
        return result


def _walk(root: Path) -> Iterable[Path]:
    """Metadata files under a directory, in a stable order."""
    for dirpath, dirnames, filenames in os.walk(root, onerror=None):
        dirnames.sort()
        here = Path(dirpath)
        in_partition = _is_metadata_dir(here.name)
        for name in sorted(filenames):
            path = here / name
            kind = _classify(path)
            if kind is None:
                continue
            # Outside a __cluster_metadata-N directory only Kafka's segment
            # names (the base offset in 20 digits) are segments: a kept
            # quickstart holds each node's text log as node-N.log.
            if kind[0] == BOOTSTRAP or in_partition \
                    or here == root and (kind[0] != SEGMENT or parse_segment_base(name) is not None):
                yield path


def _expand(arg: str) -> tuple[list[Path], FileProblem | None]:
    """Files named by one path argument (a file, a directory or a glob)."""
    if _GLOB_CHARS.search(arg):
        matches = sorted(glob.glob(arg, recursive=True))
        if not matches:
            return [], FileProblem(UNREADABLE_FILE, f"no file matches {arg}")
        out: list[Path] = []
        for m in matches:
            p = Path(m)
            if p.is_dir():
                out.extend(_walk(p))
            elif _classify(p) is not None:
                out.append(p)
        return out, None
    p = Path(arg)
    if p.is_dir():
        return list(_walk(p)), None
    if not p.exists():
        return [], FileProblem(UNREADABLE_FILE, f"no such file or directory: {arg}")
    return [p], None


def discover(paths: Sequence[str], *, expected_cluster_id: str | None = None) -> list[SourceFile]:
    """The metadata files under ``paths``, each tagged with its cluster and
    what is wrong with it. A path that names nothing becomes a file entry
    carrying the problem."""
    if not paths:
        raise PlanError("no input path given: load(path) or load([path, ...])")
    meta = _MetaCache()
    out: list[SourceFile] = []
    seen: set[str] = set()
    for arg in paths:
        files, problem = _expand(arg)
        if problem is not None:
            out.append(SourceFile(os.path.abspath(arg), SEGMENT, 0, problems=(problem,)))
            continue
        for path in files:
            absolute = os.path.abspath(path)
            if absolute in seen:
                continue
            seen.add(absolute)
            out.append(_source_file(Path(absolute), meta, expected_cluster_id))
    return out


def cluster_counts(files: Sequence[SourceFile]) -> dict[str | None, int]:
    """Files per cluster id (None: no usable meta.properties), in input order."""
    counts: dict[str | None, int] = {}
    for f in files:
        if f.cluster_id is not None or f.readable:  # a path that names nothing has no cluster
            counts[f.cluster_id] = counts.get(f.cluster_id, 0) + 1
    return counts


def _source_file(path: Path, meta: _MetaCache, expected_cluster_id: str | None) -> SourceFile:
    problems: list[FileProblem] = []
    classified = _classify(path)
    if classified is None:
        kind, end_offset, epoch = SEGMENT, None, None
        problems.append(FileProblem(UNSUPPORTED_FILE, f"{path} is not a .log segment or a .checkpoint snapshot"))
    else:
        kind, end_offset, epoch = classified
    try:
        size = path.stat().st_size
        if not os.access(path, os.R_OK):
            raise PermissionError(13, "Permission denied")
    except OSError as exc:
        size = 0
        problems.append(FileProblem(UNREADABLE_FILE, f"cannot read {path}: {exc.strerror or exc}"))
    cluster_id, node_id, meta_problem = meta.lookup(path.parent)
    if meta_problem is not None:
        problems.append(meta_problem)
    if expected_cluster_id is not None and cluster_id is not None and cluster_id != expected_cluster_id:
        problems.append(
            FileProblem(CLUSTER_MISMATCH, f"{path} belongs to cluster {cluster_id}, not the expected {expected_cluster_id}")
        )
    return SourceFile(
        str(path),
        kind,
        size,
        cluster_id,
        node_id,
        end_offset,
        epoch,
        parse_segment_base(path.name) if kind == SEGMENT else None,
        tuple(problems),
    )


# --- splitting -------------------------------------------------------------------------


def target_split_bytes(total_bytes: int, *, max_partition_bytes: int, min_partitions: int) -> int:
    """Spark's ``maxSplitBytes``: no more than ``max_partition_bytes``, small
    enough that ``min_partitions`` tasks get work, never tiny."""
    spread = math.ceil(total_bytes / max(1, min_partitions))
    return max(MIN_SPLIT_BYTES, min(max_partition_bytes, spread))


def _read_index(path: Path) -> list[tuple[int, int]]:
    try:
        data = path.read_bytes()
    except OSError:
        return []
    entries = []
    for i, (rel, position) in enumerate(_INDEX_ENTRY.iter_unpack(memoryview(data)[: len(data) - len(data) % 8])):
        if i > 0 and rel == 0:
            break  # Kafka's preallocated, zero-filled tail
        entries.append((rel, position))
    return entries


def _batch_start_ok(fd: int, size: int, position: int, base: int | None, indexed_offset: int | None) -> bool:
    """Does a v2 batch start at ``position`` (and hold ``indexed_offset``)?"""
    head = os.pread(fd, _LAST_OFFSET_DELTA.size + _LAST_OFFSET_DELTA_AT, position)
    if len(head) < _LAST_OFFSET_DELTA_AT + _LAST_OFFSET_DELTA.size or head[MAGIC_OFFSET] != MAGIC_V2:
        return False
    base_offset, length = _PREFIX.unpack_from(head)
    if length < MIN_BATCH_LENGTH or position + length + LOG_OVERHEAD > size:
        return False
    if indexed_offset is not None:
        (last_delta,) = _LAST_OFFSET_DELTA.unpack_from(head, _LAST_OFFSET_DELTA_AT)
        if not base_offset <= indexed_offset <= base_offset + last_delta:
            return False
    return base is None or base_offset >= base


def _cuts_from_index(file: SourceFile, target: int) -> list[int] | None:
    """Split positions from the segment's offset index, or None if it cannot be trusted."""
    if file.base_offset is None:
        return None
    entries = _read_index(Path(file.path).with_suffix(".index"))
    if not entries:
        return None
    positions = [p for _, p in entries]
    if any(b < a for a, b in zip(positions, positions[1:])) or positions[-1] >= file.size:
        return None
    cuts: list[tuple[int, int]] = []
    for k in range(1, (file.size - 1) // target + 1):
        i = bisect.bisect_right(positions, k * target) - 1
        if i >= 0 and positions[i] > 0 and (not cuts or positions[i] > cuts[-1][1]):
            cuts.append((file.base_offset + entries[i][0], positions[i]))
    try:
        fd = os.open(file.path, os.O_RDONLY)
    except OSError:
        return None
    try:
        for indexed_offset, position in cuts:
            if not _batch_start_ok(fd, file.size, position, file.base_offset, indexed_offset):
                return None
    finally:
        os.close(fd)
    return [p for _, p in cuts]


def _cuts_from_scan(file: SourceFile, target: int, start: int = 0) -> list[int]:
    """Split positions after ``start`` (a batch start) found by hopping over
    batch headers. Stops at the first batch that does not parse: the rest
    stays in the last split, whose reader reports it."""
    cuts: list[int] = []
    try:
        with open(file.path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            size = len(mm)
            pos = start
            next_cut = start + target
            unpack = _PREFIX.unpack_from
            while size - pos >= LOG_OVERHEAD + 5:
                _, length = unpack(mm, pos)
                if length < MIN_BATCH_LENGTH or mm[pos + MAGIC_OFFSET] != MAGIC_V2:
                    break
                end = pos + length + LOG_OVERHEAD
                if end > size:
                    break
                if end >= next_cut and end < size:
                    cuts.append(end)
                    next_cut = end + target
                pos = end
    except (OSError, ValueError):
        return []
    return cuts


def split_file(file: SourceFile, target: int) -> list[FileSplit]:
    """One file as splits of about ``target`` bytes, cut at batch starts."""
    if file.size <= target or not file.readable:
        return [FileSplit(file, 0, file.size)]
    cuts = _cuts_from_index(file, target) or []
    # An index can cover only the start of its segment (Kafka indexes every
    # index.interval.bytes, and a copy taken while the broker ran may hold an
    # index behind its log): scan the rest from the last cut it gave.
    scanned_from = cuts[-1] if cuts else 0
    if file.size - scanned_from > target:
        cuts += _cuts_from_scan(file, target, scanned_from)
    bounds = [0, *cuts, file.size]
    last = len(bounds) - 2
    return [FileSplit(file, bounds[i], bounds[i + 1], first=i == 0, last=i == last) for i in range(len(bounds) - 1)]


def pack(splits: Sequence[FileSplit], max_bytes: int, open_cost: int = DEFAULT_OPEN_COST_BYTES) -> list[list[FileSplit]]:
    """Splits packed into partitions of at most ``max_bytes`` (each split
    also costs ``open_cost``), keeping input order."""
    partitions: list[list[FileSplit]] = []
    current: list[FileSplit] = []
    current_bytes = 0
    for split in splits:
        cost = split.length + open_cost
        if current and current_bytes + cost > max_bytes:
            partitions.append(current)
            current, current_bytes = [], 0
        current.append(split)
        current_bytes += cost
    if current:
        partitions.append(current)
    return partitions


@dataclass(frozen=True, slots=True)
class Plan:
    files: list[SourceFile]
    partitions: list[list[FileSplit]]
    split_bytes: int

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)


def plan(
    paths: Sequence[str],
    *,
    max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES,
    min_partitions: int = 1,
    expected_cluster_id: str | None = None,
) -> Plan:
    """Discover, split and pack: the input partitions of one read."""
    if max_partition_bytes < MIN_SPLIT_BYTES:
        raise PlanError(f"maxPartitionBytes must be at least {MIN_SPLIT_BYTES}, got {max_partition_bytes}")
    files = discover(paths, expected_cluster_id=expected_cluster_id)
    target = target_split_bytes(
        sum(f.size for f in files), max_partition_bytes=max_partition_bytes, min_partitions=min_partitions
    )
    splits = [s for f in files for s in split_file(f, target)]
    return Plan(files, pack(splits, target), target)
