"""One process per log directory: ``<dir>/.lock`` under ``flock``, as
Kafka's ``LogManager.lockLogDirs`` / ``FileLock`` hold it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kraft.dirlock import LOCK_FILE_NAME, DirectoryLock, DirectoryLockedError, directory_locked, lock_directory
from kraft.errors import EXIT_STORAGE


def _holder(directory: Path, write_pid: bool, kind: str = "flock") -> subprocess.Popen[str]:
    """Another process holding the lock: kraft's (PID in the file) or a
    Kafka's (empty file; Java's FileChannel.tryLock is a POSIX lock: lockf)."""
    code = ("import fcntl, os, sys, time\n"
            f"fd = os.open({str(directory / LOCK_FILE_NAME)!r}, os.O_RDWR | os.O_CREAT)\n"
            f"fcntl.{kind}(fd, fcntl.LOCK_EX)\n"
            + ("os.write(fd, str(os.getpid()).encode())\n" if write_pid else "")
            + "print('locked', flush=True)\ntime.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


@pytest.mark.parametrize("write_pid", [True, False])
def test_a_second_holder_is_refused_with_the_directory_and_the_pid(tmp_path: Path, write_pid: bool) -> None:
    holder = _holder(tmp_path, write_pid)
    try:
        with pytest.raises(DirectoryLockedError) as info:
            DirectoryLock(tmp_path).acquire()
        assert info.value.pid == holder.pid  # from the file, else from /proc/locks
        assert info.value.exit_code == EXIT_STORAGE
        assert str(tmp_path) in str(info.value) and f"process {holder.pid}" in str(info.value)
    finally:
        holder.send_signal(signal.SIGKILL)  # kill -9: the kernel drops the lock ...
        holder.wait()
    with DirectoryLock(tmp_path) as lock:  # ... so the file left behind blocks nothing
        assert lock.held
        assert (tmp_path / LOCK_FILE_NAME).read_text().strip() == str(os.getpid())
    assert (tmp_path / LOCK_FILE_NAME).read_text() == ""  # released: no PID claims it


def test_a_kafka_process_holding_a_posix_lock_is_seen(tmp_path: Path) -> None:
    """Kafka's LogManager.lockLogDirs -> FileLock.tryLock -> FileChannel.tryLock
    (fcntl F_SETLK on Linux), which flock alone would not see."""
    holder = _holder(tmp_path, False, kind="lockf")
    try:
        assert directory_locked(tmp_path)
        with pytest.raises(DirectoryLockedError):
            DirectoryLock(tmp_path).acquire()
    finally:
        holder.kill()
        holder.wait()
    assert not directory_locked(tmp_path)
    with DirectoryLock(tmp_path):
        assert directory_locked(tmp_path)


def test_two_holders_in_one_process_exclude_each_other(tmp_path: Path) -> None:
    first = lock_directory(tmp_path)
    try:
        with pytest.raises(DirectoryLockedError):
            DirectoryLock(tmp_path).acquire()
    finally:
        first.release()
    lock_directory(tmp_path).release()
