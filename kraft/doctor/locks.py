"""Is a log directory in use? Kafka's ``LogManager`` locks ``<dir>/.lock``
(Java ``FileChannel.tryLock``: a POSIX ``fcntl`` record lock) for as long as
the process runs; kraft takes ``flock`` on the same file. A tool that
rewrites a directory must find neither lock held, and holds both itself
while it writes so that no node starts under it."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_FILE = ".lock"

__all__ = ["LOCK_FILE", "directory_locked", "DirectoryLock", "DirectoryLocked"]


class DirectoryLocked(Exception):
    """Another process holds the directory's lock."""


def _try_locks(fd: int) -> bool:
    """Take both locks without waiting; False when either is held elsewhere."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    return True


def directory_locked(directory: Path) -> bool:
    """True when a running process holds ``directory/.lock``."""
    path = Path(directory) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False  # every locker creates the file first
    try:
        return not _try_locks(fd)
    finally:
        os.close(fd)  # releases what we took


class DirectoryLock:
    """Hold ``directory/.lock`` (both kinds) for a ``with`` block; raises
    :class:`DirectoryLocked` when another process has it."""

    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / LOCK_FILE
        self._fd = -1

    def __enter__(self) -> DirectoryLock:
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        if not _try_locks(self._fd):
            os.close(self._fd)
            self._fd = -1
            raise DirectoryLocked(f"{self.path.parent} is locked by a running process ({self.path})")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
