"""Durable file primitives: fsync of files and directories, and the
write-temp + fsync + atomic-rename pattern Kafka uses for every small state
file (``quorum-state``, ``leader-epoch-checkpoint``, ``meta.properties``)."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kraft.records.errors import DiskIOError

#: A write refused for want of space changes nothing that counts once undone.
NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


@contextmanager
def disk_operation(operation: str, path: str | os.PathLike[str], *, undone: bool = False) -> Iterator[None]:
    """Turn an ``OSError`` raised inside into a :class:`DiskIOError` naming
    ``operation`` and the file (``os.fsync`` errors carry no file name).
    ``undone``: the caller guarantees nothing of the operation remains on
    failure (a temporary file never renamed), so a full disk is a known
    outcome. An inner, more precise ``DiskIOError`` passes through."""
    try:
        yield
    except DiskIOError:
        raise
    except OSError as e:
        code = e.errno if e.errno is not None else errno.EIO
        raise DiskIOError(code, e.strerror or os.strerror(code), os.fspath(e.filename or path), operation,
                          rolled_back=undone and code in NO_SPACE_ERRNOS) from e


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    """Make a rename or create inside ``directory`` durable."""
    with disk_operation("fsync", directory):
        fd = os.open(os.fspath(directory), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(path: str | os.PathLike[str], data: bytes, *, tmp_suffix: str = ".tmp",
                 standalone: bool = False) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves either the old or
    the new content, never a mix: write ``path + tmp_suffix``, fsync it, rename
    over ``path``, fsync the directory.

    ``standalone``: nothing else changed with this file (``quorum-state``), so
    a full disk refusing the temporary file is a known outcome -- the old
    content stands. A file written as part of a larger change (the epoch
    checkpoint after an append) leaves that change half done: not known."""
    target = Path(path)
    tmp = target.with_name(target.name + tmp_suffix)
    with disk_operation("write", tmp, undone=standalone):
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
        except BaseException:
            os.close(fd)
            raise
    try:
        with disk_operation("fsync", tmp):
            os.fsync(fd)
    finally:
        os.close(fd)
    with disk_operation("rename", target):
        os.replace(tmp, target)
    fsync_dir(target.parent)


def atomic_rename(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """Rename and make the rename durable (Kafka's ``Utils.atomicMoveWithFallback``)."""
    with disk_operation("rename", dst):
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
