"""``lock_holder``: who holds a directory's ``.lock``, seen without taking
it: kraft's ``flock`` and Kafka's POSIX lock (``FileChannel.tryLock``)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kraft.dirlock import LOCK_FILE_NAME, lock_holder

HOLD = textwrap.dedent("""
    import fcntl, os, sys
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
    (fcntl.flock if sys.argv[2] == "flock" else fcntl.lockf)(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("held", flush=True)
    sys.stdin.read()
""")


@pytest.mark.parametrize("kind", ["flock", "posix"])
def test_the_holder_of_either_kind_of_lock_is_named(tmp_path: Path, kind: str) -> None:
    assert lock_holder(tmp_path) is None  # no .lock file
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path / LOCK_FILE_NAME), kind],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "held\n"
        assert lock_holder(tmp_path) == proc.pid
        assert lock_holder(tmp_path) == proc.pid  # looking twice took nothing
    finally:
        proc.communicate("", timeout=30)
    assert lock_holder(tmp_path) is None  # the holder is gone: nobody
