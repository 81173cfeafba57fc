"""One process per log directory: the ``.lock`` file Kafka takes.

Kafka's ``LogManager.lockLogDirs`` holds a ``FileLock`` (an OS lock on
``<log dir>/.lock``) for the life of the broker or controller, and
``kafka-storage.sh`` refuses a directory another process holds. kraft does
the same on the same file with both kinds of Linux lock: ``flock`` (what other
kraft processes test) and a POSIX record lock (``lockf``: what Java's
``FileChannel.tryLock`` takes), so a kraft node and a Kafka process exclude
each other too; the two kinds do not see each other on Linux. The kernel drops the lock when its holder
dies, so a ``.lock`` file left by a ``kill -9``'d process never blocks a
restart.

    with DirectoryLock(log_dir):        # raises DirectoryLockedError
        ...                             # write the directory

The holder writes its PID into the file so the refusal can name it (Kafka
leaves the file empty; then the PID comes from ``/proc/locks``).
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path
from types import TracebackType

from kraft.errors import StorageError

__all__ = ["LOCK_FILE_NAME", "DirectoryLock", "DirectoryLockedError", "directory_locked", "lock_directory",
           "lock_holder"]

#: Kafka's ``LogManager.LockFileName``.
LOCK_FILE_NAME = ".lock"


class DirectoryLockedError(StorageError):
    """Another process holds the directory's ``.lock``."""

    def __init__(self, directory: Path, pid: int | None) -> None:
        self.directory = directory
        self.pid = pid
        holder = f"process {pid}" if pid is not None else "another process"
        super().__init__(
            f"log directory {directory} is in use by {holder} (it holds {directory / LOCK_FILE_NAME}): "
            "one process per log directory -- stop that process first, or give this one another directory")


def _holder_from_proc_locks(path: Path, kinds: tuple[str, ...] = ("FLOCK",)) -> int | None:
    """The PID ``/proc/locks`` names for the file's inode (Linux), among locks of ``kinds``."""
    try:
        st = os.stat(path)
        text = Path("/proc/locks").read_text()
    except OSError:
        return None
    want = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in text.splitlines():
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF" / "2: POSIX  ADVISORY  WRITE ..."
        if len(fields) >= 6 and fields[1] in kinds and fields[5].lower() == want and fields[4].isdigit():
            return int(fields[4])
    return None


def lock_holder(directory: Path | str) -> int | None:
    """The PID of the process holding ``directory/.lock`` (either kind of
    lock), read from ``/proc/locks`` without opening the file: for readers
    that must neither take the lock nor drop a lock this process holds
    (``kraft shell --directory`` on a running node). None when nobody holds
    it, or where ``/proc/locks`` cannot be read."""
    return _holder_from_proc_locks(Path(directory) / LOCK_FILE_NAME, ("FLOCK", "POSIX"))


#: Lock files this process holds, by inode. Closing any descriptor of a file
#: drops the process's POSIX locks on it, so a second attempt from within this
#: process must be refused before it opens the file.
_HELD: set[tuple[int, int]] = set()


def _held_here(path: Path) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) in _HELD


def _take_both(fd: int) -> None:
    """``flock`` then ``lockf``, without waiting; on failure neither is held."""
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fcntl.flock(fd, fcntl.LOCK_UN)
        raise


def directory_locked(directory: Path | str) -> bool:
    """True when a running process (kraft or Kafka) holds ``directory/.lock``.

    A probe for tools that only look (``kraft doctor``, a recovery plan): it
    takes and at once drops the locks. Not for a process that holds the lock
    itself: closing any descriptor of the file drops that process's POSIX lock.
    """
    path = Path(directory) / LOCK_FILE_NAME
    if _held_here(path):
        return True
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return False  # every locker creates the file first
    try:
        _take_both(fd)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


class DirectoryLock:
    """An exclusive ``flock`` on ``<directory>/.lock``, held until :meth:`release`."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)
        self.path = self.directory / LOCK_FILE_NAME
        self._fd: int | None = None
        self._inode = (-1, -1)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock now or raise :class:`DirectoryLockedError` (never waits)."""
        if self._fd is not None:
            return
        if _held_here(self.path):
            raise DirectoryLockedError(self.directory, os.getpid())
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            _take_both(fd)
        except OSError as e:
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                os.close(fd)
                raise
            try:
                text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            finally:
                os.close(fd)
            pid = int(text) if text.isdigit() else _holder_from_proc_locks(self.path)
            raise DirectoryLockedError(self.directory, pid) from None
        # Ours now: record who holds it (a stale PID from a dead holder is
        # simply overwritten).
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        st = os.fstat(fd)
        self._inode = (st.st_dev, st.st_ino)
        _HELD.add(self._inode)
        self._fd = fd

    def release(self) -> None:
        """Drop the lock (the file stays, as Kafka leaves it)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            _HELD.discard(self._inode)
            try:
                os.ftruncate(fd, 0)
            except OSError:
                pass  # the lock goes with the descriptor either way
            os.close(fd)

    def __enter__(self) -> DirectoryLock:
        self.acquire()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


def lock_directory(directory: Path | str) -> DirectoryLock:
    """Lock ``directory`` (creating nothing but ``.lock``) and return the held lock."""
    lock = DirectoryLock(directory)
    lock.acquire()
    return lock
