"""What a power loss leaves of real files: the simulation's crash model for
disk-backed replicas (:mod:`kraft.sim.disklog`).

While a :class:`DiskModel` is installed it watches every ``os.fsync`` of the
process (the records layer makes everything durable through it: segments,
indexes, snapshots, and the temp-file + rename of ``quorum-state`` and
``leader-epoch-checkpoint``). For each directory it tracks it keeps, as a
real disk would:

* the *durable namespace*: the names and inodes the directory held at its
  last fsync (a create, rename or unlink is durable only after one);
* the *durable bytes* of each inode: its content at its last fsync.

:meth:`DiskModel.crash` then turns the directory into one state a crash may
leave, chosen with the simulation's ``random.Random``: each file keeps its
durable bytes plus a random part of what was written after them (a torn
tail, usually mid-batch); when a file was rewritten in place since its fsync,
either its durable bytes or part of the new ones; a name created since the
last directory fsync may be gone; a name removed since may be back, with its
durable bytes. The replica then restarts on that directory through the real
recovery (``MetadataLog.open``).

A directory can also be made to fail (:meth:`DiskModel.fail_fsync`): every
fsync of it or of a file in it then raises ``EIO`` and makes nothing durable,
as a dying disk does -- the fault the node must answer with fail-stop.

The model does not call the real ``fsync`` for the directories it tracks:
durability is what it simulates (no real power is lost), and the sweeps run
a thousand seeds. Inodes it may still need are kept open, so the filesystem
cannot reuse their numbers for other files meanwhile.
"""

from __future__ import annotations

import errno
import os
import random
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from kraft.records.fileutil import pread_exact

__all__ = ["CrashImage", "DiskModel"]


@dataclass(slots=True)
class _Directory:
    path: Path
    device: int
    inode: int
    #: name -> inode at the directory's last fsync.
    namespace: dict[str, int] = field(default_factory=dict)
    #: inode -> bytes at the file's last fsync.
    durable: dict[int, bytes] = field(default_factory=dict)
    #: inode -> read-only descriptor keeping the inode (and its number) alive.
    pins: dict[int, int] = field(default_factory=dict)

    def listing(self) -> dict[str, int]:
        out = {}
        with os.scandir(self.path) as entries:
            for entry in entries:
                if entry.is_file(follow_symlinks=False):
                    out[entry.name] = entry.inode()
        return out

    def pin(self, name: str, inode: int) -> int | None:
        fd = self.pins.get(inode)
        if fd is not None:
            return fd
        try:
            fd = os.open(self.path / name, os.O_RDONLY)
        except FileNotFoundError:
            return None
        if os.fstat(fd).st_ino != inode:
            os.close(fd)
            return None
        self.pins[inode] = fd
        return fd

    def prune(self, keep: set[int]) -> None:
        for inode in [i for i in self.pins if i not in keep]:
            os.close(self.pins.pop(inode))
        for inode in [i for i in self.durable if i not in keep]:
            del self.durable[inode]

    def release(self) -> None:
        self.prune(set())


@dataclass(frozen=True, slots=True)
class CrashImage:
    """A directory as the crash left it, and what it lost."""

    files: dict[str, bytes]
    #: Human-readable changes against the directory before the crash.
    changes: tuple[str, ...]


def _read(fd: int) -> bytes:
    return pread_exact(fd, os.fstat(fd).st_size, 0)


def _torn(durable: bytes, current: bytes, rng: random.Random | None) -> bytes:
    """What survives of a file whose last fsync saw ``durable`` and which now
    holds ``current``."""
    if rng is None:
        return durable
    if current.startswith(durable):
        # Appended since: any prefix of the new bytes may have reached the
        # disk. Both ends are likely outcomes, so pick them often.
        low, high = len(durable), len(current)
        return current[: rng.choice((low, high, rng.randint(low, high)))]
    # Truncated or rewritten in place since: nothing of it reached the disk,
    # or the change and part of what followed.
    if rng.random() < 0.5:
        return durable
    common = len(os.path.commonprefix([durable, current]))
    return current[: rng.randint(common, len(current))]


class DiskModel:
    """Tracks what is durable in some directories and crashes them."""

    def __init__(self) -> None:
        self._dirs: dict[Path, _Directory] = {}
        self._real_fsync = os.fsync
        self.fsyncs = 0
        #: Directories whose fsyncs fail (EIO) until healed.
        self._failing: set[Path] = set()
        self.failed_fsyncs = 0

    # --- observing fsync ----------------------------------------------------------

    @contextmanager
    def installed(self) -> Iterator[DiskModel]:
        """Watch ``os.fsync`` for the duration; releases every pinned inode at
        the end. Single-threaded use only (the simulation is)."""
        real = os.fsync
        self._real_fsync = real
        os.fsync = self._fsync  # type: ignore[assignment]
        try:
            yield self
        finally:
            os.fsync = real
            for directory in self._dirs.values():
                directory.release()
            self._dirs.clear()

    def fail_fsync(self, path: Path) -> None:
        """From now on every fsync of ``path`` or a file in it fails with EIO."""
        self._failing.add(Path(path))

    def heal_fsync(self, path: Path | None = None) -> None:
        """fsync works again in ``path`` (every directory when None)."""
        if path is None:
            self._failing.clear()
        else:
            self._failing.discard(Path(path))

    def _check_failing(self, directory: _Directory) -> None:
        if directory.path in self._failing:
            self.failed_fsyncs += 1
            raise OSError(errno.EIO, os.strerror(errno.EIO))

    def _fsync(self, fd: int) -> None:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            for directory in self._dirs.values():
                if (directory.device, directory.inode) == (st.st_dev, st.st_ino):
                    self._check_failing(directory)
                    self.fsyncs += 1
                    self._sync_namespace(directory)
                    return
        elif stat.S_ISREG(st.st_mode):
            for directory in self._dirs.values():
                if directory.device != st.st_dev:
                    continue
                listing = directory.listing()
                for name, inode in listing.items():
                    if inode == st.st_ino:
                        self._check_failing(directory)
                        self.fsyncs += 1
                        self._sync_file(directory, name, inode)
                        return
        self._real_fsync(fd)

    @staticmethod
    def _sync_namespace(directory: _Directory) -> None:
        listing = directory.listing()
        directory.namespace = listing
        for name, inode in listing.items():
            directory.pin(name, inode)
        directory.prune(set(listing.values()))

    @staticmethod
    def _sync_file(directory: _Directory, name: str, inode: int) -> None:
        fd = directory.pin(name, inode)
        if fd is not None:
            directory.durable[inode] = _read(fd)

    # --- directories -------------------------------------------------------------------

    def track(self, path: Path) -> None:
        """Start tracking ``path`` (it must exist); what it holds now counts
        as durable."""
        path = Path(path)
        st = os.stat(path)
        directory = _Directory(path, st.st_dev, st.st_ino)
        self._dirs[path] = directory
        self._baseline(directory)

    def untrack(self, path: Path) -> None:
        directory = self._dirs.pop(Path(path), None)
        if directory is not None:
            directory.release()

    @staticmethod
    def _baseline(directory: _Directory) -> None:
        directory.release()
        listing = directory.listing()
        directory.namespace = listing
        for name, inode in listing.items():
            fd = directory.pin(name, inode)
            if fd is not None:
                directory.durable[inode] = _read(fd)

    def crash_image(self, path: Path, rng: random.Random | None) -> CrashImage:
        """The directory as a crash right now may leave it (one random choice
        among the possible outcomes; the durable state alone without ``rng``).
        Nothing changes on disk until :meth:`restore`."""
        directory = self._dirs[Path(path)]
        current = directory.listing()
        files: dict[str, bytes] = {}
        changes: list[str] = []
        for name in sorted(set(current) | set(directory.namespace)):
            old, new = directory.namespace.get(name), current.get(name)
            durable_old = directory.durable.get(old, b"") if old is not None else b""
            if new is not None:
                content = _read_path(directory.path / name)
                durable_new = directory.durable.get(new, b"")
                if old == new:
                    kept = _torn(durable_new, content, rng)
                    files[name] = kept
                    if kept != content:
                        changes.append(f"{name}: {len(content)} -> {len(kept)} bytes")
                    continue
                if old is None:
                    # Created since the directory's last fsync.
                    if rng is not None and rng.random() < 0.5:
                        files[name] = kept = _torn(durable_new, content, rng)
                        if kept != content:
                            changes.append(f"{name}: {len(content)} -> {len(kept)} bytes")
                    else:
                        changes.append(f"{name}: creation lost")
                    continue
                # Replaced since the directory's last fsync.
                if rng is not None and rng.random() < 0.5:
                    files[name] = _torn(durable_new, content, rng)
                else:
                    files[name] = durable_old
                    changes.append(f"{name}: replacement lost")
                continue
            # Removed since the directory's last fsync: it may be back.
            if rng is None or rng.random() < 0.5:
                files[name] = durable_old
                changes.append(f"{name}: removal lost ({len(durable_old)} bytes back)")
        return CrashImage(files, tuple(changes))

    def restore(self, path: Path, image: CrashImage) -> None:
        """Make the directory hold exactly ``image`` (the caller closed every
        file of it); all of it is durable then, as after a reboot."""
        directory = self._dirs[Path(path)]
        directory.release()
        for name in directory.listing():
            os.unlink(directory.path / name)
        for name, content in image.files.items():
            fd = os.open(directory.path / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                view = memoryview(content)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
        self._baseline(directory)


def _read_path(path: Path) -> bytes:
    return path.read_bytes()
