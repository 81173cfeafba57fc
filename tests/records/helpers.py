"""Helpers shared by the records tests: building batches and logs."""

from __future__ import annotations

import shutil
from pathlib import Path

from kraft.records.batch import Record, build_batch
from kraft.records.compression import Compression

BASE_TS = 1_700_000_000_000


def value_for(offset: int) -> bytes:
    """A deterministic record value, so any log can be checked against what was written."""
    return f"record-{offset:08d}".encode() * (1 + offset % 3)


def make_batch(
    base_offset: int,
    count: int = 1,
    *,
    epoch: int = 1,
    timestamp: int | None = None,
    compression: Compression = Compression.NONE,
    key: bytes | None = None,
) -> bytes:
    ts = BASE_TS + base_offset if timestamp is None else timestamp
    records = [Record(base_offset + i, ts + i, key, value_for(base_offset + i)) for i in range(count)]
    return build_batch(records, base_offset=base_offset, partition_leader_epoch=epoch, compression=compression)


def copy_tree(src: Path, dst: Path) -> Path:
    """Copy a read-only fixture directory into a writable place."""
    shutil.copytree(src, dst)
    for path in [dst, *dst.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return dst
