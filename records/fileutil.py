"""Durable file primitives: fsync of files and directories, and the
write-temp + fsync + atomic-rename pattern Kafka uses for every small state
file (``quorum-state``, ``leader-epoch-checkpoint``, ``meta.properties``)."""

from __future__ import annotations

import os
from pathlib import Path


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    """Make a rename or create inside ``directory`` durable."""
    fd = os.open(os.fspath(directory), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str | os.PathLike[str], data: bytes, *, tmp_suffix: str = ".tmp") -> None:
    """Replace ``path`` with ``data`` so that a crash leaves either the old or
    the new content, never a mix: write ``path + tmp_suffix``, fsync it, rename
    over ``path``, fsync the directory."""
    target = Path(path)
    tmp = target.with_name(target.name + tmp_suffix)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, target)
    fsync_dir(target.parent)


def atomic_rename(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """Rename and make the rename durable (Kafka's ``Utils.atomicMoveWithFallback``)."""
    os.replace(src, dst)
    fsync_dir(Path(dst).parent)


def pread_exact(fd: int, size: int, offset: int) -> bytes:
    """Read up to ``size`` bytes at ``offset``, looping over short reads; fewer
    bytes only at end of file."""
    chunks = []
    remaining = size
    while remaining > 0:
        chunk = os.pread(fd, remaining, offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
        remaining -= len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def pwrite_all(fd: int, data: bytes | memoryview, offset: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        offset += written
        view = view[written:]
