"""Fault injection for real node processes: the LD_PRELOAD fsync shim
(``fixtures/faults/fsync_fault.c``), built with the system C compiler.

A process started with :func:`fsync_fault_env` runs normally until
:func:`arm_fsync_fault` writes the trigger file: from then on every fsync
and fdatasync under the given path prefix fails with EIO (a dying disk);
:func:`disarm_fsync_fault` removes the trigger.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["SHIM_SOURCE", "FsyncShim", "build_fsync_shim"]

#: The shim's C source, shipped in the repository's fixtures.
SHIM_SOURCE = Path(__file__).resolve().parents[2] / "fixtures" / "faults" / "fsync_fault.c"

#: The environment variable naming the trigger file (read by the shim).
TRIGGER_ENV = "KRAFT_FSYNC_FAULT_FILE"


class FsyncShim:
    """A built shim and its trigger file (one per process group you arm)."""

    def __init__(self, library: Path, trigger: Path) -> None:
        self.library = library
        self.trigger = trigger

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The environment of a process the shim can fail (disarmed at first)."""
        env = dict(os.environ if base is None else base)
        preload = env.get("LD_PRELOAD")
        env["LD_PRELOAD"] = str(self.library) if not preload else f"{self.library}:{preload}"
        env[TRIGGER_ENV] = str(self.trigger)
        return env

    def arm(self, prefix: str | os.PathLike[str]) -> None:
        """From now on, fsync of any file under ``prefix`` fails with EIO."""
        tmp = self.trigger.with_name(self.trigger.name + ".tmp")
        tmp.write_text(os.fspath(prefix) + "\n")
        os.replace(tmp, self.trigger)

    def disarm(self) -> None:
        self.trigger.unlink(missing_ok=True)


def build_fsync_shim(directory: Path) -> FsyncShim | str:
    """Compile the shim into ``directory``; a reason string when it cannot
    be (no C compiler, no source)."""
    if not SHIM_SOURCE.is_file():
        return f"the shim's source {SHIM_SOURCE} is not here (run from a source checkout)"
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        return "no C compiler (cc, gcc or clang) to build the fsync fault shim (Debian: apt-get install gcc)"
    directory.mkdir(parents=True, exist_ok=True)
    library = directory / "fsync_fault.so"
    done = subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", str(library), str(SHIM_SOURCE), "-ldl"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        return f"{compiler} could not build the fsync fault shim: {done.stderr.strip()[:300]}"
    return FsyncShim(library, directory / "fsync-fault.trigger")
