"""The power-loss nemesis's disks: one LazyFS mount (:mod:`.lazyfs`) per voter.

The voter's ``metadata.log.dir`` is the mount point; its data lives in a
backing directory beside it. :meth:`LazyDisk.power_cut` stops the file
system process (its unsynced writes die with it; with ``tear`` a partial
page reaches the backing directory first), returns what it said it
dropped (file -> bytes), unmounts, and for a lying disk
puts back the backing directory as it was at the first mount (the disk
persisted nothing). :meth:`LazyDisk.mount` serves it again.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LazyDisk", "PowerCut", "fuse_unavailable_reason"]


@dataclass(frozen=True)
class PowerCut:
    """What one power cut dropped: file (relative to the disk) -> bytes, and the torn write if any."""

    dropped: dict[str, int]
    torn: str = ""
    #: False when the file system died before it could say (then nothing is known).
    reported: bool = True

    @property
    def bytes(self) -> int:
        return sum(self.dropped.values())

    def describe(self) -> str:
        if not self.reported:
            return "the disk died before it said what it dropped"
        if not self.dropped:
            return "dropped nothing (every write was synced)"
        files = ", ".join(f"{name} {n} B" for name, n in sorted(self.dropped.items()))
        return f"dropped {self.bytes} bytes in {len(self.dropped)} files ({files})" + (
            f"; {self.torn}" if self.torn else "")


def _read_power_cut(out: Path, start: int) -> PowerCut:
    from kraft.tools.bench.chaos.lazyfs import POWER_CUT

    try:
        with open(out, "rb") as f:
            f.seek(start)
            lines = f.read().decode(errors="replace").splitlines()
    except OSError:
        lines = []
    for line in reversed(lines):
        if line.startswith(POWER_CUT):
            try:
                said = json.loads(line[len(POWER_CUT):])
                return PowerCut({str(k): int(v) for k, v in said["dropped"].items()}, str(said.get("torn", "")))
            except (ValueError, KeyError, TypeError, AttributeError):
                break
    return PowerCut({}, reported=False)


def fuse_unavailable_reason(package: bool = True) -> str | None:
    """Why the FUSE disks cannot run here, or None when they can (with
    ``package`` False: but for pyfuse3, which the command asks for itself)."""
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is missing (no FUSE in this kernel or container)"
    if shutil.which("fusermount3") is None:
        return "fusermount3 is missing (Debian: apt-get install fuse3)"
    if not package:
        return None
    try:
        import pyfuse3  # noqa: F401
    except ImportError as e:
        return f"pyfuse3 is not installed ({e}; pip install 'kraft[chaos]', which needs libfuse3-dev)"
    return None


class LazyDisk:
    def __init__(self, mountpoint: Path, backing: Path, out: Path, *, lie: bool = False, seed: int = 0) -> None:
        self.mountpoint = mountpoint
        self.backing = backing
        self.out = out
        self.lie = lie
        self.seed = seed
        self.proc: subprocess.Popen[bytes] | None = None
        self.pristine = backing.with_name(backing.name + ".at-mount") if lie else None

    def mount(self, timeout_s: float = 60.0) -> None:
        if self.pristine is not None and not self.pristine.exists():
            shutil.copytree(self.backing, self.pristine, symlinks=True)
        self.mountpoint.mkdir(exist_ok=True)
        self.seed += 1
        args = [sys.executable, "-m", "kraft.tools.bench.chaos.lazyfs", str(self.backing), str(self.mountpoint),
                "--seed", str(self.seed)] + (["--lie"] if self.lie else [])
        with open(self.out, "ab") as out:
            self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while not os.path.ismount(self.mountpoint):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.unmount()
                raise RuntimeError(f"the FUSE disk did not mount at {self.mountpoint} (see {self.out})")
            time.sleep(0.05)

    def hold_next_fsync(self) -> int:
        """Make the disk's next fsync hang until the cut (SIGUSR2; a lying
        disk's fsync does nothing to hold); where in its log to look for it."""
        start = self.out.stat().st_size if self.out.exists() else 0
        if self.proc is not None and self.proc.poll() is None and not self.lie:
            self.proc.send_signal(signal.SIGUSR2)
        return start

    def held(self, since: int) -> str | None:
        """The file whose fsync the disk holds (said after ``since`` in its log), or None yet."""
        from kraft.tools.bench.chaos.lazyfs import HOLDING

        try:
            with open(self.out, "rb") as f:
                f.seek(since)
                lines = f.read().decode(errors="replace").splitlines()
        except OSError:
            return None
        return next((line[len(HOLDING):] for line in lines if line.startswith(HOLDING)), None)

    def power_cut(self, tear: bool = False) -> PowerCut:
        """The node must be dead already: lose every unsynced write, and say what that was."""
        said = self.out.stat().st_size if self.out.exists() else 0
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM if tear else signal.SIGUSR1)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.unmount()
        cut = _read_power_cut(self.out, said)
        if self.pristine is not None:
            shutil.rmtree(self.backing)
            shutil.copytree(self.pristine, self.backing, symlinks=True)
        return cut

    def unmount(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        # Not os.path.ismount: a mount whose server died fails every stat (ENOTCONN).
        if self.mounted():
            subprocess.run(["fusermount3", "-u", "-z", str(self.mountpoint)], capture_output=True)
        if self.mounted():
            subprocess.run(["umount", "-l", str(self.mountpoint)], capture_output=True)

    def mounted(self) -> bool:
        with open("/proc/self/mounts") as mounts:
            return any(line.split()[1] == str(self.mountpoint) for line in mounts)

    def close(self) -> None:
        """Stop serving (what was never fsynced is gone, as at a power cut)."""
        self.unmount()
