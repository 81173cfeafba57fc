"""A FUSE file system that loses what was never fsynced, as Jepsen's LazyFS.

``python -m kraft.tools.bench.chaos.lazyfs BACKING MOUNTPOINT [--lie]``
mounts ``BACKING`` at ``MOUNTPOINT``. Directory operations (create, mkdir,
rename, unlink) go straight to ``BACKING``; file *data* stays in this
process's memory, page by page, until the file is fsynced, when its dirty
pages and size are written to ``BACKING`` and fsynced there. SIGUSR1 is a
power cut: the process prints what it drops (a ``lazyfs: power cut`` line:
each file's bytes that differ from ``BACKING``) and exits, every unsynced
write gone. SIGTERM also tears first: the first part (a random, not
page-aligned length) of the most recently written dirty range reaches
``BACKING`` before the process exits, as a disk that lost power half-way
through a page. (SIGKILL drops the same, without a word.) SIGUSR2 makes
the next fsync hang until the cut (a power loss in the middle of a sync:
what it was syncing, never acknowledged to the writer, is dropped). With ``--lie`` fsync
returns success and writes nothing (a disk that lies); the tool restores
the directory operations too, so after a power cut the node sees its disk
as it was at the mount.

One process per mount: pyfuse3 serves a single mount per process. It needs
pyfuse3 (the ``chaos`` extra) and Debian's fuse3 (``fusermount3``).
"""

from __future__ import annotations

import errno
import json
import os
import random
import signal
import stat
import sys
from dataclasses import dataclass, field
from typing import Any

PAGE = 4096
#: The line a power cut prints (then a JSON object: ``dropped``, file -> bytes lost; ``torn``).
POWER_CUT = "lazyfs: power cut "
#: The line SIGUSR2's held fsync prints (then the file's name).
HOLDING = "lazyfs: holding an fsync of "

__all__ = ["OPERATIONS", "PAGE", "DirtyFile", "LazyState", "main"]


@dataclass
class DirtyFile:
    """The unsynced state of one file: its size and its dirty pages."""

    size: int
    pages: dict[int, bytearray] = field(default_factory=dict)
    #: (offset, length) of the last write, for a torn write at power loss.
    last_write: tuple[int, int] = (0, 0)

    def page(self, fd: int, index: int) -> bytearray:
        """The page at ``index`` as this file sees it (dirty, or read from the backing file)."""
        got = self.pages.get(index)
        if got is None:
            got = bytearray(os.pread(fd, PAGE, index * PAGE)) if index * PAGE < self.size else bytearray()
            got.extend(b"\0" * (PAGE - len(got)))
            self.pages[index] = got
        return got

    def write(self, fd: int, offset: int, data: bytes) -> None:
        pos = 0
        while pos < len(data):
            index, start = divmod(offset + pos, PAGE)
            n = min(PAGE - start, len(data) - pos)
            self.page(fd, index)[start:start + n] = data[pos:pos + n]
            pos += n
        self.size = max(self.size, offset + len(data))
        self.last_write = (offset, len(data))

    def truncate(self, size: int) -> None:
        for index in [i for i in self.pages if i * PAGE >= size]:
            del self.pages[index]
        index, start = divmod(size, PAGE)
        if start and index in self.pages:
            self.pages[index][start:] = b"\0" * (PAGE - start)
        self.size = size

    def read(self, fd: int, offset: int, length: int) -> bytes:
        end = min(offset + length, self.size)
        out = bytearray()
        pos = offset
        while pos < end:
            index, start = divmod(pos, PAGE)
            n = min(PAGE - start, end - pos)
            page = self.pages.get(index)
            if page is not None:
                out += page[start:start + n]
            else:
                chunk = os.pread(fd, n, pos)
                out += chunk + b"\0" * (n - len(chunk))
            pos += n
        return bytes(out)

    def differs_from(self, path: str) -> int:
        """Bytes of this file as written that the backing file at ``path`` does not hold."""
        with open(path, "rb") as f:
            on_disk = f.read()
        lost = max(0, len(on_disk) - self.size)  # a shrink that never reached the disk
        for index, page in self.pages.items():
            valid = min(PAGE, self.size - index * PAGE)
            if valid > 0:
                stored = on_disk[index * PAGE:index * PAGE + valid]
                lost += sum(1 for a, b in zip(page[:valid], stored) if a != b) + valid - len(stored)
        return lost

    def flush_to(self, fd: int) -> None:
        """Write the dirty pages and the size to the backing file, then fsync it."""
        for index in sorted(self.pages):
            valid = min(PAGE, self.size - index * PAGE)
            if valid > 0:
                os.pwrite(fd, bytes(self.pages[index][:valid]), index * PAGE)
        os.ftruncate(fd, self.size)
        os.fsync(fd)


class LazyState:
    """What the file system serves, one method per FUSE operation it
    implements (:data:`OPERATIONS`); each raises OSError, which the table's
    wrapper turns into the FUSE error. ``fuse`` is the pyfuse3 module (its
    reply types), passed in so that this class imports no FUSE binding."""

    def __init__(self, fuse: Any, backing: str, lie: bool) -> None:
        self.fuse = fuse
        self.backing = backing
        self.lie = lie
        self.paths: dict[int, str] = {fuse.ROOT_INODE: backing}
        self.dirty: dict[int, DirtyFile] = {}
        self.fds: dict[int, int] = {}  # fh (the backing fd) -> inode
        self.last_written: int | None = None
        #: Set by SIGUSR2: the next fsync never returns (the power is about to go).
        self.hold_next = False

    def take_hold(self) -> bool:
        held, self.hold_next = self.hold_next and not self.lie, False
        return held

    async def hold(self, fh: int) -> None:
        """Block this fsync until the power cut: what it would have synced is dropped."""
        import trio

        inode = self.fds.get(fh)
        path = self.paths.get(inode, "?") if inode is not None else "?"
        print(f"{HOLDING}{os.path.relpath(path, self.backing)}", flush=True)
        await trio.sleep_forever()

    # --- names and attributes --------------------------------------------------------

    def _path(self, inode: int) -> str:
        try:
            return self.paths[inode]
        except KeyError:
            raise OSError(errno.ENOENT, "no such inode") from None

    def _child(self, parent: int, name: bytes) -> str:
        return os.path.join(self._path(parent), os.fsdecode(name))

    def attrs(self, path: str) -> Any:
        st = os.lstat(path)
        inode = self.fuse.ROOT_INODE if path == self.backing else st.st_ino
        if inode != self.fuse.ROOT_INODE:
            self.paths[inode] = path
        entry = self.fuse.EntryAttributes()
        for name in ("st_mode", "st_nlink", "st_uid", "st_gid", "st_rdev", "st_size", "st_atime_ns",
                     "st_mtime_ns", "st_ctime_ns"):
            setattr(entry, name, getattr(st, name))
        entry.st_ino = inode
        dirty = self.dirty.get(inode)
        if dirty is not None:
            entry.st_size = dirty.size
        entry.st_blksize = 512
        entry.st_blocks = (entry.st_size + 511) // 512
        # No caching of names or attributes: sizes live here, not on the backing file.
        entry.attr_timeout = 0
        entry.entry_timeout = 0
        return entry

    def lookup(self, parent_inode: int, name: bytes, ctx: Any = None) -> Any:
        if name == b".":
            return self.attrs(self._path(parent_inode))
        if name == b"..":
            return self.attrs(os.path.dirname(self._path(parent_inode)))
        return self.attrs(self._child(parent_inode, name))

    def getattr(self, inode: int, ctx: Any = None) -> Any:
        return self.attrs(self._path(inode))

    def setattr(self, inode: int, attr: Any, fields: Any, fh: int | None, ctx: Any) -> Any:
        path = self._path(inode)
        if fields.update_size:
            self._dirty(inode, path).truncate(attr.st_size)
        if fields.update_mode:
            os.chmod(path, stat.S_IMODE(attr.st_mode))
        if fields.update_atime or fields.update_mtime:
            st = os.lstat(path)
            os.utime(path, ns=(attr.st_atime_ns if fields.update_atime else st.st_atime_ns,
                               attr.st_mtime_ns if fields.update_mtime else st.st_mtime_ns))
        return self.attrs(path)

    def statfs(self, ctx: Any) -> Any:
        sv = os.statvfs(self.backing)
        data = self.fuse.StatvfsData()
        for name in ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files", "f_ffree",
                     "f_favail", "f_namemax"):
            setattr(data, name, getattr(sv, name))
        return data

    # --- directories (straight to the backing directory) ---------------------------

    def opendir(self, inode: int, ctx: Any) -> int:
        self._path(inode)
        return inode

    def readdir(self, fh: int, start_id: int, token: Any) -> None:
        path = self._path(fh)
        names = sorted(os.listdir(path))
        for i, name in enumerate(names[start_id:], start_id):
            try:
                attrs = self.attrs(os.path.join(path, name))
            except OSError:
                continue
            if not self.fuse.readdir_reply(token, os.fsencode(name), attrs, i + 1):
                break

    def nothing(self, *args: Any) -> None:
        """releasedir, fsyncdir (directory operations reach the backing directory at once), forget, flush."""
        return None

    def mkdir(self, parent_inode: int, name: bytes, mode: int, ctx: Any) -> Any:
        path = self._child(parent_inode, name)
        os.mkdir(path, mode)
        return self.attrs(path)

    def rmdir(self, parent_inode: int, name: bytes, ctx: Any) -> None:
        os.rmdir(self._child(parent_inode, name))

    def unlink(self, parent_inode: int, name: bytes, ctx: Any) -> None:
        path = self._child(parent_inode, name)
        inode = os.lstat(path).st_ino
        os.unlink(path)
        if inode not in self.fds.values():
            self.dirty.pop(inode, None)
            self.paths.pop(inode, None)

    def rename(self, parent_inode_old: int, name_old: bytes, parent_inode_new: int, name_new: bytes,
               flags: int, ctx: Any) -> None:
        old, new = self._child(parent_inode_old, name_old), self._child(parent_inode_new, name_new)
        os.rename(old, new)
        self.paths[os.lstat(new).st_ino] = new
        if os.path.isdir(new):  # paths below a renamed directory move with it
            for ino, path in list(self.paths.items()):
                if path.startswith(old + os.sep):
                    self.paths[ino] = new + path[len(old):]

    # --- files ------------------------------------------------------------------------

    def _dirty(self, inode: int, path: str) -> DirtyFile:
        dirty = self.dirty.get(inode)
        if dirty is None:
            dirty = self.dirty[inode] = DirtyFile(os.lstat(path).st_size)
        return dirty

    def open(self, inode: int, flags: int, ctx: Any) -> Any:
        path = self._path(inode)
        fd = os.open(path, os.O_RDWR)
        self.fds[fd] = inode
        if flags & os.O_TRUNC:
            self._dirty(inode, path).truncate(0)
        return self.fuse.FileInfo(fh=fd)

    def create(self, parent_inode: int, name: bytes, mode: int, flags: int, ctx: Any) -> Any:
        path = self._child(parent_inode, name)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | (flags & os.O_EXCL), mode)
        attrs = self.attrs(path)
        self.fds[fd] = attrs.st_ino
        if flags & os.O_TRUNC:
            self._dirty(attrs.st_ino, path).truncate(0)
            attrs = self.attrs(path)
        return self.fuse.FileInfo(fh=fd), attrs

    def read(self, fh: int, off: int, size: int) -> bytes:
        dirty = self.dirty.get(self.fds[fh])
        if dirty is None:
            return os.pread(fh, size, off)
        return dirty.read(fh, off, size)

    def write(self, fh: int, off: int, buf: bytes) -> int:
        inode = self.fds[fh]
        self._dirty(inode, self._path(inode)).write(fh, off, buf)
        self.last_written = inode
        return len(buf)

    def fsync(self, fh: int, datasync: bool) -> None:
        if self.lie:
            return None
        dirty = self.dirty.pop(self.fds[fh], None)
        if dirty is not None:
            dirty.flush_to(fh)

    def release(self, fh: int) -> None:
        self.fds.pop(fh, None)
        os.close(fh)

    # --- the power cut ----------------------------------------------------------------

    def tear(self, rng: random.Random) -> str:
        """Write part of the last write's first dirty page to the backing file."""
        inode = self.last_written
        dirty = self.dirty.get(inode) if inode is not None else None
        if inode is None or dirty is None or not dirty.last_write[1]:
            return "nothing unsynced to tear"
        offset, length = dirty.last_write
        cut = rng.randrange(1, min(length, PAGE - offset % PAGE) + 1)
        data = dirty.read(-1, offset, cut) if all(
            i in dirty.pages for i in range(offset // PAGE, (offset + cut - 1) // PAGE + 1)) else b""
        if not data:
            return "nothing unsynced to tear"
        path = self.paths[inode]
        fd = os.open(path, os.O_WRONLY)
        try:
            os.pwrite(fd, data, offset)
        finally:
            os.close(fd)
        return f"tore {os.path.basename(path)}: {len(data)} of {length} bytes at {offset}"

    def dropped(self) -> dict[str, int]:
        """File name -> bytes a power cut now loses: those of the file as
        the system sees it that differ from the backing file, plus what a
        truncation not yet synced would have removed."""
        out: dict[str, int] = {}
        for inode, dirty in self.dirty.items():
            path = self.paths.get(inode)
            if path is None or not os.path.exists(path):
                continue  # unlinked: nothing of it is anyone's any more
            lost = dirty.differs_from(path)
            if lost:
                out[os.path.relpath(path, self.backing)] = lost
        return out


#: FUSE operation -> the :class:`LazyState` method that serves it.
OPERATIONS = {
    "lookup": "lookup", "getattr": "getattr", "setattr": "setattr", "statfs": "statfs",
    "opendir": "opendir", "readdir": "readdir", "releasedir": "nothing", "fsyncdir": "nothing",
    "mkdir": "mkdir", "rmdir": "rmdir", "unlink": "unlink", "rename": "rename", "forget": "nothing",
    "open": "open", "create": "create", "read": "read", "write": "write", "flush": "nothing",
    "fsync": "fsync", "release": "release",
}


def _operations(backing: str, lie: bool) -> tuple[Any, LazyState]:
    """pyfuse3's Operations built from :data:`OPERATIONS`, and the state they serve."""
    import pyfuse3

    state = LazyState(pyfuse3, backing, lie)

    def serve(method: Any) -> Any:
        async def operation(self: Any, *args: Any) -> Any:
            if method == state.fsync and state.take_hold():
                await state.hold(args[0])
            try:
                return method(*args)
            except OSError as e:
                raise pyfuse3.FUSEError(e.errno or errno.EIO) from None
        return operation

    methods = {name: serve(getattr(state, attribute)) for name, attribute in OPERATIONS.items()}
    return type("LazyOperations", (pyfuse3.Operations,), methods)(), state


def main(argv: list[str] | None = None) -> int:
    import argparse

    import pyfuse3
    import trio

    parser = argparse.ArgumentParser(prog="lazyfs", description=__doc__.splitlines()[0])
    parser.add_argument("backing")
    parser.add_argument("mountpoint")
    parser.add_argument("--lie", action="store_true", help="fsync returns success and persists nothing")
    parser.add_argument("--seed", type=int, default=0, help="seed of the torn write's length")
    args = parser.parse_args(argv)
    ops, state = _operations(os.path.abspath(args.backing), args.lie)
    options = set(pyfuse3.default_options)
    options.add("fsname=kraft-lazyfs")
    options.discard("default_permissions")
    pyfuse3.init(ops, args.mountpoint, options)

    async def serve() -> None:
        async with trio.open_nursery() as nursery:
            async def on_term() -> None:
                with trio.open_signal_receiver(signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2,
                                               signal.SIGINT) as signals:
                    async for signum in signals:
                        if signum == signal.SIGUSR2:
                            state.hold_next = True
                            continue
                        if signum in (signal.SIGTERM, signal.SIGUSR1):
                            torn = state.tear(random.Random(args.seed)) if signum == signal.SIGTERM else ""
                            print(POWER_CUT + json.dumps({"dropped": state.dropped(), "torn": torn}), flush=True)
                        # The power is gone: no unsynced write reaches the backing directory.
                        os._exit(0)

            nursery.start_soon(on_term)
            await pyfuse3.main()

    try:
        trio.run(serve)
    finally:
        pyfuse3.close(unmount=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
